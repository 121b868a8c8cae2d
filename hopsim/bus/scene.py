"""What Foxglove's 3-D panel shows of a recording: the vehicles' poses and bodies, derived from the
recorded vehicle states.

For every instant at which vehicles publish their state (``hopsim.VehicleState`` published by the
vehicle itself, i.e. its dynamics: the envelope's source is the state's ``vehicle``; estimates,
measurements and radio copies of a state, published by other models, are not drawn), the recorder
writes one ``foxglove.FrameTransforms`` on ``viz/transforms``: a transform per vehicle from the
``world`` frame (the inertial frame N) to a frame named after the vehicle (its body frame B,
translation ``r_BN_N`` in m, rotation ``q_BN``). On ``viz/scene`` a ``foxglove.SceneUpdate`` holds
every vehicle's body (a cube locked to its frame, labelled with its name) and the test volume,
sent again whole when a vehicle first appears: its latest message is the whole scene.

Trails, for formations up to ``TRAIL_VEHICLES`` vehicles: each vehicle's positions in the world
frame, at least half of ``TRAIL_EVERY_NS`` apart, sent as three lines each on its own topic
(``TRAIL_LINES``): its history, the last ``TRAIL_POINTS`` of them (entity ``trail/<vehicle>``), on
``viz/trails`` every ``TRAIL_HISTORY_EVERY_NS``; its recent part, the points since that history
(``trail_recent/<vehicle>``, from the history's last point), on ``viz/trails_recent`` every
``TRAIL_RECENT_EVERY_NS``; its tip, the points since that (``trail_tip/<vehicle>``, from the
recent part's last point), on ``viz/trail_tips`` every ``TRAIL_EVERY_NS``. When a line is sent, those
after it are sent too, each starting again at that line's last point. A trail so costs a few
points per simulated second whatever its length, and a player that shows each topic's latest
message before the time it seeks to (Foxglove's) still shows every trail whole: those three lines.

For a formation in orbit whose scenario names a chief (``sim.scene["hill_chief"]``), the
transforms also hold the chief's Hill frame ``hill/<chief>`` (LVLH: x radial, y along-track, z
orbit normal, from the chief's recorded position and velocity), and the other vehicles' trails
in it, likewise (``hill_trail/<vehicle>``, ``hill_trail_recent/<vehicle>``,
``hill_trail_tip/<vehicle>``: positions relative to the chief, in H, the last
``HILL_TRAIL_POINTS`` and those since): choose
``hill/<chief>`` as the 3-D panel's display frame to see the relative orbits as they are flown.

These channels are derived from the stream: they carry the channel metadata ``derived=foxglove``,
take no part in the stream's hash or message count, and readers of the stream skip them.
"""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np
from foxglove_schemas_protobuf.Color_pb2 import Color
from foxglove_schemas_protobuf.FrameTransforms_pb2 import FrameTransforms
from foxglove_schemas_protobuf.LinePrimitive_pb2 import LinePrimitive
from foxglove_schemas_protobuf.Point3_pb2 import Point3
from foxglove_schemas_protobuf.SceneEntity_pb2 import SceneEntity
from foxglove_schemas_protobuf.SceneUpdate_pb2 import SceneUpdate

from hopsim.bus import scene_wire
from hopsim.schemas.wire import varint

DERIVED = "derived"  # channel metadata key of channels that are not the stream
TRANSFORMS_TOPIC, SCENE_TOPIC = "viz/transforms", "viz/scene"
TRAILS_TOPIC, RECENT_TRAILS_TOPIC, TRAIL_TIPS_TOPIC = "viz/trails", "viz/trails_recent", "viz/trail_tips"
WORLD = "world"
BODY_SIZE_M = 0.2  # the drawn body: a cube of this edge (m)
TRAIL_EVERY_NS = 1_000_000_000  # the tips are sent this often
TRAIL_RECENT_EVERY_NS = 10_000_000_000  # the recent parts this often
TRAIL_HISTORY_EVERY_NS = 60_000_000_000  # the histories this often
# a trail's lines: (topic, entity id suffix, how often sent), each holding the points since the one before
TRAIL_LINES = (
    (TRAILS_TOPIC, "", TRAIL_HISTORY_EVERY_NS),
    (RECENT_TRAILS_TOPIC, "_recent", TRAIL_RECENT_EVERY_NS),
    (TRAIL_TIPS_TOPIC, "_tip", TRAIL_EVERY_NS),
)
TRAIL_POINTS = 300
TRAIL_VEHICLES = 100
HILL_TRAIL_POINTS = 1000


def hill_frame_name(chief: str) -> str:
    """The name of a chief's Hill frame in the scene."""
    return f"hill/{chief}"


def hill_rotation(r, v) -> list[list[float]]:
    """C_HN (rows: the Hill frame's axes in N) of a chief at position ``r`` and velocity ``v``
    (3 floats each, frame N): x along r, z along r x v, y = z x x (NaN where r or r x v is 0)."""

    def unit(a):
        n = math.sqrt(a[0] * a[0] + a[1] * a[1] + a[2] * a[2])
        return [a[0] / n, a[1] / n, a[2] / n] if n > 0.0 else [math.nan] * 3  # no frame: NaN

    def cross(a, b):
        return [a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]]

    x = unit(r)
    z = unit(cross(r, v))
    return [x, cross(z, x), z]


def _quaternion_of(m) -> tuple[float, float, float, float]:
    """The unit quaternion (x, y, z, w) of the rotation matrix ``m`` (v' = m v), Shepperd's method."""
    tr = m[0][0] + m[1][1] + m[2][2]
    if tr > 0.0:
        s = 2.0 * math.sqrt(tr + 1.0)
        return ((m[2][1] - m[1][2]) / s, (m[0][2] - m[2][0]) / s, (m[1][0] - m[0][1]) / s, 0.25 * s)
    if m[0][0] > m[1][1] and m[0][0] > m[2][2]:
        s = 2.0 * math.sqrt(1.0 + m[0][0] - m[1][1] - m[2][2])
        return (0.25 * s, (m[0][1] + m[1][0]) / s, (m[0][2] + m[2][0]) / s, (m[2][1] - m[1][2]) / s)
    if m[1][1] > m[2][2]:
        s = 2.0 * math.sqrt(1.0 + m[1][1] - m[0][0] - m[2][2])
        return ((m[0][1] + m[1][0]) / s, 0.25 * s, (m[1][2] + m[2][1]) / s, (m[0][2] - m[2][0]) / s)
    s = 2.0 * math.sqrt(1.0 + m[2][2] - m[0][0] - m[1][1])
    return ((m[0][2] + m[2][0]) / s, (m[1][2] + m[2][1]) / s, 0.25 * s, (m[1][0] - m[0][1]) / s)


def is_derived(channel_metadata: dict) -> bool:
    """Whether a channel holds messages derived from the stream (not part of it)."""
    return DERIVED in channel_metadata


def _port_arrow(arrow, port_B, radius_m: float) -> None:
    """An arrow from the body's surface along its port direction ``port_B`` (unit, body frame)."""
    ux, uy, uz = port_B
    arrow.pose.position.x, arrow.pose.position.y, arrow.pose.position.z = (radius_m * c for c in port_B)
    w = 1.0 + ux  # the rotation taking +x onto u: axis x cross u
    if w < 1e-9:
        q = (0.0, 0.0, 1.0, 0.0)
    else:
        n = math.sqrt(uz * uz + uy * uy + w * w)
        q = (0.0, -uz / n, uy / n, w / n)
    o = arrow.pose.orientation
    o.x, o.y, o.z, o.w = q
    arrow.shaft_length, arrow.shaft_diameter = 0.6 * radius_m, 0.12 * radius_m
    arrow.head_length, arrow.head_diameter = 0.3 * radius_m, 0.3 * radius_m
    arrow.color.CopyFrom(Color(r=0.9, g=0.2, b=0.2, a=1.0))


def _stamp(msg, t_ns: int) -> None:
    """Foxglove's timestamp of ``t_ns`` (ns since 1970)."""
    msg.timestamp.seconds, msg.timestamp.nanos = divmod(t_ns, 1_000_000_000)


# Protobuf's encoding of what is written at every instant, built from the states' own bytes
# (hopsim.bus.scene_wire): foxglove.Vector3 and foxglove.Quaternion have the fields (numbers,
# types) of hopsim.Vector3 and hopsim.Quaternion, so a state's position and attitude serialize
# to the transform's translation and rotation. tests/test_foxglove_scene.py checks the bytes
# against protobuf's serialization of the same messages.
def _string_field(tag: int, text: str) -> bytes:
    """A string field (``tag``: its number and wire type 2) holding ``text`` (nothing for "")."""
    data = text.encode()
    return bytes((tag,)) + varint(len(data)) + data if data else b""


_PARENT_WORLD = _string_field(0x12, WORLD)  # FrameTransform.parent_frame_id (field 2)
_CHILD, _FRAME_ID, _ENTITY_ID = 0x1A, 0x12, 0x1A  # FrameTransform.child_frame_id; SceneEntity.frame_id, id


def _timestamp_field(t_ns: int) -> bytes:
    """The ``timestamp`` field (field 1) of a FrameTransform or SceneEntity at ``t_ns`` (ns since 1970, >= 0)."""
    seconds, nanos = divmod(t_ns, 1_000_000_000)
    body = _seconds_field(seconds) + _nanos_field(nanos)
    return b"\x0a" + varint(len(body)) + body  # at most 1 + 10 + 1 + 5 bytes


@lru_cache(maxsize=64)
def _seconds_field(seconds: int) -> bytes:
    """Timestamp.seconds (field 1; nothing for 0)."""
    return b"\x08" + varint(seconds) if seconds else b""


@lru_cache(maxsize=4096)
def _nanos_field(nanos: int) -> bytes:
    """Timestamp.nanos (field 2; nothing for 0); the instants of periodic models repeat a few values."""
    return b"\x10" + varint(nanos) if nanos else b""


def _as_array(data: bytes) -> np.ndarray:
    return np.frombuffer(data, np.uint8)


class FoxgloveScene:
    """Turns the vehicle states of each instant into Foxglove messages (see the module)."""

    def __init__(self, epoch_ns: int = 0):
        """``epoch_ns``: the calendar time of t = 0 (ns since 1970), added to every timestamp."""
        self._epoch_ns = epoch_ns
        self._t_ns: int | None = None
        self._held: list[tuple] = []  # the pending instant's states: take_packed's arguments
        self._names = _Names()
        self._known: set[str] = set()  # vehicles drawn so far
        self._trails = _Trails(TRAIL_POINTS, "trail")  # each vehicle's trail (frame N)
        self._lines_sent_ns = [-every for _, _, every in TRAIL_LINES]  # when each line was last sent
        self._volume: tuple | None = None  # the test volume's corners (m, frame N), drawn once
        self._bodies: dict[str, dict] = {}  # vehicles with a known shape (radius, port)
        self._chief: str | None = None  # the vehicle whose Hill frame is drawn
        self._hill_trails = _Trails(HILL_TRAIL_POINTS, "hill_trail")  # relative to the chief, in its Hill frame

    def set_bodies(self, bodies: dict) -> None:
        """Draw these vehicles as spheres of their contact radius with their docking port:
        ``{vehicle: {"radius_m": r, "port_B": unit vector in the body frame (optional)}}``."""
        self._bodies = {name: dict(b) for name, b in bodies.items()}

    def set_hill_chief(self, chief: str | None) -> None:
        """Add ``chief``'s Hill frame and the others' trails in it (None: none)."""
        self._chief = chief

    def set_volume(self, lo, hi) -> None:
        """Draw the test volume's walls: an axis-aligned box from ``lo`` to ``hi`` (m, frame N)."""
        self._volume = (tuple(map(float, lo)), tuple(map(float, hi)))

    def observe(self, t_ns: int, type_name: str, payload, source: str) -> list[tuple[str, int, object]]:
        """Take one envelope of the stream (in stream order; ``source``: its publisher; ``payload``
        a message or its bytes); the (topic, t_ns, message) to write for the instants it completes."""
        out = self.flush() if self._t_ns is not None and t_ns != self._t_ns else []
        if type_name == "hopsim.VehicleState":
            data = payload if isinstance(payload, bytes) else payload.SerializeToString(deterministic=True)
            self.take(t_ns, [source], [data])
        return out

    @property
    def pending_ns(self) -> int | None:
        """The instant (simulation time, ns) whose states are held, not yet drawn (None: none)."""
        return self._t_ns

    def take(self, t_ns: int, sources: list[str], datas: list[bytes]) -> None:
        """Hold vehicle states published at ``t_ns``: ``datas[i]`` a serialized
        ``hopsim.VehicleState`` published by ``sources[i]`` (drawn if that is the vehicle it
        names; of a vehicle's states at one instant, the last). Another instant pending must be
        flushed before (:meth:`flush_encoded`)."""
        if datas:
            data, at = _packed(datas)
            self.take_packed(t_ns, sources, data, at[:-1], at[1:])

    def take_packed(
        self, t_ns: int, sources: list[str], data: np.ndarray, starts: np.ndarray, ends: np.ndarray
    ) -> None:
        """:meth:`take` for states at ``data[starts[i]:ends[i]]`` (uint8; int64 arrays)."""
        if len(starts):
            self._t_ns = t_ns
            self._held.append((sources, data, starts, ends))

    def flush(self) -> list[tuple[str, int, object]]:
        """The messages of the pending instant, if any."""
        return [
            (topic, t_ns, message_type.FromString(data)) for topic, t_ns, message_type, data in self.flush_encoded()
        ]

    def flush_encoded(self) -> list[tuple[str, int, type, bytes]]:
        """The messages of the pending instant, if any, as (topic, t_ns, message type, the
        message's deterministic serialization)."""
        t_ns, held = self._t_ns, self._held
        self._t_ns, self._held = None, []
        poses = _Poses.read(self._names, held) if held else None
        if poses is None:
            return []
        stamp = self._epoch_ns + t_ns
        transforms = poses.transforms(_as_array(_timestamp_field(stamp) + _PARENT_WORLD))
        chief = self._names.index.get(self._chief) if self._chief is not None else None
        chief_at = poses.where(chief)
        if chief_at is not None:
            hill = FrameTransforms()
            C_HN = self._hill_transform(hill.transforms.add(), poses.rv[chief_at], stamp)
            transforms += hill.SerializeToString(deterministic=True)  # one more entry of the repeated field
        out = [(TRANSFORMS_TOPIC, t_ns, FrameTransforms, transforms)]
        names = [self._names.names[i] for i in poses.new_to(self._known)]
        if names:
            out.append((SCENE_TOPIC, t_ns, SceneUpdate, self._new_bodies(names, stamp)))
        if len(self._known) <= TRAIL_VEHICLES:
            if chief_at is not None:
                self._extend_hill_trails(poses, chief, chief_at, C_HN, t_ns)
            due = self._trails.due(poses.vehicles, t_ns)
            self._trails.append(poses.vehicles[due], poses.rv[poses.states[due], 0], t_ns, self._names.names)
            out += self._send_trails(t_ns)
        return out

    def _new_bodies(self, new: list[str], stamp: int) -> bytes:
        """The SceneUpdate (serialized) of every vehicle's body, ``new`` (seen for the first time)
        among them, and the test volume; ``stamp``: ns since 1970."""
        self._known.update(new)
        update = SceneUpdate()
        for name in sorted(self._known):
            self._body(update.entities.add(), name, stamp, self._bodies.get(name))
        if self._volume is not None:
            self._walls(update.entities.add(), stamp)
        return update.SerializeToString(deterministic=True)

    def _send_trails(self, t_ns: int) -> list[tuple[str, int, type, bytes]]:
        """The trails' lines due at ``t_ns`` (see the module): the first line due and those after it."""
        due = [k for k, (_, _, every) in enumerate(TRAIL_LINES) if t_ns - self._lines_sent_ns[k] >= every]
        if not due:
            return []
        stamp = _timestamp_field(self._epoch_ns + t_ns)
        out = []
        for k in range(due[0], len(TRAIL_LINES)):
            self._lines_sent_ns[k] = t_ns
            update = b"".join(
                trails.entities(stamp + _string_field(_FRAME_ID, frame), k) for trails, frame in self._trail_kinds()
            )
            for trails, _ in self._trail_kinds():
                trails.sent(k)
            out.append((TRAIL_LINES[k][0], t_ns, SceneUpdate, update))
        return out

    def _trail_kinds(self):
        """(trails, their frame): the world frame's, then the Hill frame's."""
        kinds = [(self._trails, WORLD)]
        if self._chief is not None:
            kinds.append((self._hill_trails, hill_frame_name(self._chief)))
        return kinds

    def _hill_transform(self, tf, rv, t_ns: int) -> list[list[float]]:
        """The chief's Hill frame H in the world frame (translation: the chief's position; rotation
        C_NH), from its position and velocity ``rv`` (m, m/s, frame N); returns C_HN."""
        r, v = rv.tolist()
        C_HN = hill_rotation(r, v)
        _stamp(tf, t_ns)
        tf.parent_frame_id, tf.child_frame_id = WORLD, hill_frame_name(self._chief)
        tf.translation.x, tf.translation.y, tf.translation.z = r
        C_NH = [[C_HN[j][i] for j in range(3)] for i in range(3)]
        tf.rotation.x, tf.rotation.y, tf.rotation.z, tf.rotation.w = _quaternion_of(C_NH)
        return C_HN

    def _extend_hill_trails(self, poses: _Poses, chief: int, chief_at: int, C_HN, t_ns: int) -> None:
        """Each other vehicle's position relative to the chief, in H (m)."""
        others = poses.vehicles != chief
        others[others] = self._hill_trails.due(poses.vehicles[others], t_ns)
        d = poses.rv[poses.states[others], 0] - poses.rv[chief_at, 0]
        x, y, z = (row[0] * d[:, 0] + row[1] * d[:, 1] + row[2] * d[:, 2] for row in C_HN)
        self._hill_trails.append(poses.vehicles[others], np.stack((x, y, z), axis=1), t_ns, self._names.names)

    @staticmethod
    def _body(entity: SceneEntity, name: str, t_ns: int, shape: dict | None = None) -> None:
        """A vehicle locked to its frame: a sphere of its contact radius with an arrow out of its
        docking port where they are known, else a cube of BODY_SIZE_M; its name above it."""
        _stamp(entity, t_ns)
        entity.frame_id, entity.id, entity.frame_locked = name, f"body/{name}", True
        orange = Color(r=0.85, g=0.55, b=0.15, a=0.9)
        size = BODY_SIZE_M
        if shape and "radius_m" in shape:
            size = 2.0 * shape["radius_m"]
            sphere = entity.spheres.add()
            sphere.pose.orientation.w = 1.0
            sphere.size.x = sphere.size.y = sphere.size.z = size
            sphere.color.CopyFrom(orange)
            if "port_B" in shape:
                _port_arrow(entity.arrows.add(), shape["port_B"], shape["radius_m"])
        else:
            cube = entity.cubes.add()
            cube.pose.orientation.w = 1.0
            cube.size.x = cube.size.y = cube.size.z = size
            cube.color.CopyFrom(orange)
        label = entity.texts.add()
        label.pose.position.z = size
        label.pose.orientation.w = 1.0
        label.billboard, label.font_size, label.scale_invariant, label.text = True, 14.0, True, name
        label.color.CopyFrom(Color(r=1.0, g=1.0, b=1.0, a=1.0))

    def _walls(self, entity: SceneEntity, t_ns: int) -> None:
        """The test volume's twelve edges, in the world frame."""
        _stamp(entity, t_ns)
        entity.frame_id, entity.id = WORLD, "volume"
        (x0, y0, z0), (x1, y1, z1) = self._volume
        corners = [(x, y, z) for x in (x0, x1) for y in (y0, y1) for z in (z0, z1)]
        line = entity.lines.add()
        line.type = LinePrimitive.LINE_LIST
        line.pose.orientation.w = 1.0
        line.thickness, line.scale_invariant = 1.5, True
        line.color.CopyFrom(Color(r=0.45, g=0.5, b=0.6, a=1.0))
        for i, a in enumerate(corners):
            for b in corners[i + 1 :]:
                if sum(p != q for p, q in zip(a, b)) == 1:  # corners one edge apart
                    line.points.extend([Point3(x=a[0], y=a[1], z=a[2]), Point3(x=b[0], y=b[1], z=b[2])])


class _Names:
    """Every publisher of a state the scene was given, numbered in the order first seen, with its
    name's bytes and its child-frame field (serialized), kept as buffers for the compiled writers."""

    def __init__(self):
        self.index: dict[str, int] = {}
        self.names: list[str] = []
        self.rank = np.zeros(0, np.int64)  # by index: its place in name order
        self._encoded: list[bytes] = []
        self._fields: list[bytes] = []
        self._buffers = None

    def indices(self, names: list[str]) -> np.ndarray:
        """The indices of ``names`` (int64), numbering those not seen before."""
        found = list(map(self.index.get, names))
        if None in found:
            for name in names:
                if name not in self.index:
                    self.index[name] = len(self.names)
                    self.names.append(name)
                    self._encoded.append(name.encode())
                    self._fields.append(_string_field(_CHILD, name))
            order = sorted(range(len(self.names)), key=self.names.__getitem__)
            self.rank = np.empty(len(order), np.int64)
            self.rank[order] = np.arange(len(order))
            self._buffers = None
            found = list(map(self.index.get, names))
        return np.array(found, np.int64)

    def buffers(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """The names' bytes one after the other, where each starts (and the end), then their
        child-frame fields likewise."""
        if self._buffers is None:
            self._buffers = (*_packed(self._encoded), *_packed(self._fields))
        return self._buffers


def _packed(parts: list[bytes]) -> tuple[np.ndarray, np.ndarray]:
    """``parts`` one after the other (uint8) and where each starts, with the end (int64)."""
    at = np.zeros(len(parts) + 1, np.int64)
    np.cumsum([len(p) for p in parts], out=at[1:])
    return np.frombuffer(b"".join(parts), np.uint8), at


class _Poses:
    """The vehicle states of one instant that the scene draws (each published by the vehicle it
    names; of a vehicle's states, the last): ``vehicles`` their names' indices (ascending),
    ``states`` where each state is among those given, ``rv`` the given states' positions and
    velocities (m, m/s, frame N; shape (n, 2, 3)), ``data`` and ``spans`` their bytes."""

    def __init__(self, names: _Names, vehicles, states, rv, data, spans):
        self._names = names
        self.vehicles, self.states, self.rv, self.data, self.spans = vehicles, states, rv, data, spans

    @classmethod
    def read(cls, names: _Names, held: list[tuple]) -> _Poses | None:
        """The poses among the states held (:meth:`FoxgloveScene.take_packed`'s arguments; None:
        none)."""
        if len(held) == 1:
            sources, data, starts, ends = held[0]
        else:  # one buffer for all
            sources = [name for part in held for name in part[0]]
            data, at = _packed([d[a:b].tobytes() for _, d, s, e in held for a, b in zip(s.tolist(), e.tolist())])
            starts, ends = at[:-1], at[1:]
        source = names.indices(sources)
        spans, rv = scene_wire.read_states(data, starts, ends)
        name_bytes, name_at = names.buffers()[:2]
        drawn = np.flatnonzero(scene_wire.named_by(data, spans, source, name_bytes, name_at))
        if not len(drawn):
            return None
        vehicles, last = np.unique(source[drawn[::-1]], return_index=True)  # each vehicle's last state
        return cls(names, vehicles, drawn[::-1][last], rv, data, spans)

    def where(self, vehicle: int | None) -> int | None:
        """Which given state is ``vehicle``'s pose (None: it has none)."""
        if vehicle is None:
            return None
        k = np.searchsorted(self.vehicles, vehicle)
        return int(self.states[k]) if k < len(self.vehicles) and self.vehicles[k] == vehicle else None

    def new_to(self, known: set[str]) -> list[int]:
        """The vehicles (names' indices) not in ``known`` (names)."""
        if len(known) >= len(self.vehicles) and known.issuperset(
            map(self._names.names.__getitem__, self.vehicles.tolist())
        ):
            return []
        return [i for i in self.vehicles.tolist() if self._names.names[i] not in known]

    def transforms(self, head: np.ndarray) -> bytes:
        """The serialized FrameTransforms of the poses in name order (``head``: each transform's
        timestamp and parent frame fields, serialized)."""
        order = np.argsort(self._names.rank[self.vehicles], kind="stable")
        _, _, children, children_at = self._names.buffers()
        return scene_wire.frame_transforms(
            head, children, children_at, self.vehicles[order], self.states[order], self.data, self.spans
        )


class _Trails:
    """Vehicles' trails (m), each kept as one array of its points whose spans are the lines the
    scene sends (``TRAIL_LINES``): line 0, the history, the last ``keep`` points; line ``k``
    > 0, the points since line ``k - 1`` was last sent, from that line's last point. A point so
    costs its own bytes and no more, however long the trail. A trail is a row; trails are found by
    their vehicle's name index."""

    def __init__(self, keep: int, kind: str):
        self._keep = keep
        self._kind = kind  # the entities' id prefix
        self._row_of = np.full(0, -1, np.int64)  # by name index: its trail's row (-1: none)
        self._names: list[str] = []  # by row
        self._points = np.zeros((0, 2 * keep, 3))  # by row: points 0 .. end
        self._end = np.zeros(0, np.int64)
        self._first = np.zeros((len(TRAIL_LINES), 0), np.int64)  # by line (from 1) and row: its first point
        self._last_ns = np.zeros(0, np.int64)  # by row: when its last point was taken
        self._ids = None  # (each line's ids, rows in name order)

    def due(self, vehicles: np.ndarray, t_ns: int) -> np.ndarray:
        """Which of ``vehicles`` (name indices) take a point at ``t_ns``: those without a trail, and
        those whose last point is at least half of TRAIL_EVERY_NS old."""
        rows = self._rows(vehicles)
        due = rows < 0
        has = ~due
        due[has] = t_ns - self._last_ns[rows[has]] >= TRAIL_EVERY_NS // 2
        return due

    def append(self, vehicles: np.ndarray, xyz: np.ndarray, t_ns: int, names: list[str]) -> None:
        """Add the point ``xyz[i]`` (m) to the trail of vehicle ``vehicles[i]`` (name indices;
        ``names``: the names by index); a vehicle without one starts it."""
        rows = self._rows(vehicles)
        for i in np.flatnonzero(rows < 0).tolist():
            rows[i] = self._add_row(int(vehicles[i]), names[vehicles[i]])
        for row in rows[self._end[rows] == self._points.shape[1]].tolist():
            self._make_room(row)
        end = self._end[rows]
        self._points[rows, end] = xyz
        self._end[rows] = end + 1
        self._last_ns[rows] = t_ns

    def sent(self, line: int) -> None:
        """Line ``line`` went out: the lines after it start again at its last point."""
        self._first[line + 1 :] = np.maximum(self._end - 1, 0)

    def entities(self, head: bytes, line: int) -> bytes:
        """Every trail's line ``line`` as SceneUpdate entities ``<kind><suffix>/<vehicle>`` (the
        line's suffix in TRAIL_LINES), in name order; ``head``: their timestamp and frame fields."""
        if self._ids is None:
            order = np.array(sorted(range(len(self._names)), key=self._names.__getitem__), np.int64)
            self._ids = (
                [
                    _packed([_string_field(_ENTITY_ID, f"{self._kind}{suffix}/{name}") for name in self._names])
                    for _, suffix, _ in TRAIL_LINES
                ],
                order,
            )
        ids, order = self._ids
        ends = self._end[order]
        starts = self._first[line, order] if line else np.maximum(ends - self._keep, 0)
        return scene_wire.line_entities(
            _as_array(head), *ids[line], order, starts, ends, self._points, _LINE_HEAD, _LINE_TAIL
        )

    def _rows(self, vehicles: np.ndarray) -> np.ndarray:
        top = int(vehicles.max(initial=-1)) + 1
        if top > len(self._row_of):
            self._row_of = np.concatenate((self._row_of, np.full(top - len(self._row_of), -1, np.int64)))
        return self._row_of[vehicles]

    def _add_row(self, vehicle: int, name: str) -> int:
        row = len(self._names)
        if row == len(self._points):  # room for as many rows again
            more = max(row, 8)
            self._points = np.concatenate((self._points, np.zeros((more, *self._points.shape[1:]))))
            self._end, self._last_ns = (
                np.concatenate((a, np.zeros(more, np.int64))) for a in (self._end, self._last_ns)
            )
            self._first = np.concatenate((self._first, np.zeros((len(TRAIL_LINES), more), np.int64)), axis=1)
        self._row_of[vehicle] = row
        self._names.append(name)
        self._ids = None
        return row

    def _make_room(self, row: int) -> None:
        """Room for one more point in a full row: the points no line holds dropped, else every row
        made longer."""
        end = self._end[row]
        first = min(end - self._keep, *self._first[1:, row].tolist())
        if first > 0:
            self._points[row, : end - first] = self._points[row, first:end].copy()
            self._end[row] -= first
            self._first[1:, row] -= first
        else:
            self._points = np.concatenate((self._points, np.zeros_like(self._points)), axis=1)


def _line_fields() -> tuple[np.ndarray, np.ndarray]:
    """A trail line's fields (a line strip in the trail's colour) before its points and after them,
    serialized (fields in number order: type, pose, thickness, scale_invariant, then points, then colour)."""
    line = LinePrimitive(type=LinePrimitive.LINE_STRIP, thickness=2.0, scale_invariant=True)
    line.pose.orientation.w = 1.0
    tail = LinePrimitive(color=Color(r=0.3, g=0.7, b=1.0, a=0.8))
    return tuple(_as_array(m.SerializeToString(deterministic=True)) for m in (line, tail))


_LINE_HEAD, _LINE_TAIL = _line_fields()


__all__ = [
    "DERIVED",
    "RECENT_TRAILS_TOPIC",
    "SCENE_TOPIC",
    "TRAILS_TOPIC",
    "TRAIL_LINES",
    "TRAIL_TIPS_TOPIC",
    "TRANSFORMS_TOPIC",
    "FoxgloveScene",
    "hill_frame_name",
    "hill_rotation",
    "is_derived",
]
