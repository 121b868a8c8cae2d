"""What Foxglove's 3-D panel shows of a recording: the vehicles' poses and bodies, derived from the
recorded vehicle states.

For every instant at which vehicles publish their state (``hopsim.VehicleState`` published by the
vehicle itself, i.e. its dynamics: the envelope's source is the state's ``vehicle``; estimates,
measurements and radio copies of a state, published by other models, are not drawn), the recorder
writes one ``foxglove.FrameTransforms`` on ``viz/transforms``: a transform per vehicle from the
``world`` frame (the inertial frame N) to a frame named after the vehicle (its body frame B,
translation ``r_BN_N`` in m, rotation ``q_BN``). On ``viz/scene`` a ``foxglove.SceneUpdate`` adds
each vehicle's body (a cube locked to its frame, labelled with its name) when it first appears.

Trails, for formations up to ``TRAIL_VEHICLES`` vehicles: each vehicle's positions in the world
frame, at least half of ``TRAIL_EVERY_NS`` apart. Its history, the last ``TRAIL_POINTS`` of
them (entity ``trail/<vehicle>``), goes on ``viz/trails`` every ``TRAIL_HISTORY_EVERY_NS``; its
tip, the points since (``trail_tip/<vehicle>``, starting at the history's last point), on
``viz/scene`` every ``TRAIL_EVERY_NS``. A trail so costs a few points per simulated second
whatever its length, and a player that shows each topic's latest message before the time it
seeks to (Foxglove's) still shows every trail whole: that history and that tip.

For a formation in orbit whose scenario names a chief (``sim.scene["hill_chief"]``), the
transforms also hold the chief's Hill frame ``hill/<chief>`` (LVLH: x radial, y along-track, z
orbit normal, from the chief's recorded position and velocity), and the other vehicles' trails
in it, as history and tip (``hill_trail/<vehicle>``, ``hill_trail_tip/<vehicle>``: positions
relative to the chief, in H, the last ``HILL_TRAIL_POINTS`` and those since): choose
``hill/<chief>`` as the 3-D panel's display frame to see the relative orbits as they are flown.

These channels are derived from the stream: they carry the channel metadata ``derived=foxglove``,
take no part in the stream's hash or message count, and readers of the stream skip them.
"""
from __future__ import annotations

import math
from functools import lru_cache

from foxglove_schemas_protobuf.Color_pb2 import Color
from foxglove_schemas_protobuf.FrameTransforms_pb2 import FrameTransforms
from foxglove_schemas_protobuf.LinePrimitive_pb2 import LinePrimitive
from foxglove_schemas_protobuf.Point3_pb2 import Point3
from foxglove_schemas_protobuf.SceneEntity_pb2 import SceneEntity
from foxglove_schemas_protobuf.SceneUpdate_pb2 import SceneUpdate

from hopsim.schemas import VehicleState

DERIVED = "derived"                   # channel metadata key of channels that are not the stream
TRANSFORMS_TOPIC, SCENE_TOPIC, TRAILS_TOPIC = "viz/transforms", "viz/scene", "viz/trails"
WORLD = "world"
BODY_SIZE_M = 0.2                     # the drawn body: a cube of this edge (m)
TRAIL_EVERY_NS = 1_000_000_000            # the tips are sent this often
TRAIL_HISTORY_EVERY_NS = 10_000_000_000   # the histories this often
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
        n = (a[0] * a[0] + a[1] * a[1] + a[2] * a[2]) ** 0.5
        return [a[0] / n, a[1] / n, a[2] / n] if n > 0.0 else [math.nan] * 3     # no frame: NaN

    def cross(a, b):
        return [a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]]

    x = unit(r)
    z = unit(cross(r, v))
    return [x, cross(z, x), z]


def _quaternion_of(m) -> tuple[float, float, float, float]:
    """The unit quaternion (x, y, z, w) of the rotation matrix ``m`` (v' = m v), Shepperd's method."""
    tr = m[0][0] + m[1][1] + m[2][2]
    if tr > 0.0:
        s = 2.0 * (tr + 1.0) ** 0.5
        return ((m[2][1] - m[1][2]) / s, (m[0][2] - m[2][0]) / s, (m[1][0] - m[0][1]) / s, 0.25 * s)
    if m[0][0] > m[1][1] and m[0][0] > m[2][2]:
        s = 2.0 * (1.0 + m[0][0] - m[1][1] - m[2][2]) ** 0.5
        return (0.25 * s, (m[0][1] + m[1][0]) / s, (m[0][2] + m[2][0]) / s, (m[2][1] - m[1][2]) / s)
    if m[1][1] > m[2][2]:
        s = 2.0 * (1.0 + m[1][1] - m[0][0] - m[2][2]) ** 0.5
        return ((m[0][1] + m[1][0]) / s, 0.25 * s, (m[1][2] + m[2][1]) / s, (m[0][2] - m[2][0]) / s)
    s = 2.0 * (1.0 + m[2][2] - m[0][0] - m[1][1]) ** 0.5
    return ((m[0][2] + m[2][0]) / s, (m[1][2] + m[2][1]) / s, 0.25 * s, (m[1][0] - m[0][1]) / s)


def is_derived(channel_metadata: dict) -> bool:
    """Whether a channel holds messages derived from the stream (not part of it)."""
    return DERIVED in channel_metadata


def _port_arrow(arrow, port_B, radius_m: float) -> None:
    """An arrow from the body's surface along its port direction ``port_B`` (unit, body frame)."""
    ux, uy, uz = port_B
    arrow.pose.position.x, arrow.pose.position.y, arrow.pose.position.z = (radius_m * c for c in port_B)
    w = 1.0 + ux                                   # the rotation taking +x onto u: axis x cross u
    if w < 1e-9:
        q = (0.0, 0.0, 1.0, 0.0)
    else:
        n = (uz * uz + uy * uy + w * w) ** 0.5
        q = (0.0, -uz / n, uy / n, w / n)
    o = arrow.pose.orientation
    o.x, o.y, o.z, o.w = q
    arrow.shaft_length, arrow.shaft_diameter = 0.6 * radius_m, 0.12 * radius_m
    arrow.head_length, arrow.head_diameter = 0.3 * radius_m, 0.3 * radius_m
    arrow.color.CopyFrom(Color(r=0.9, g=0.2, b=0.2, a=1.0))


def _stamp(msg, t_ns: int) -> None:
    """Foxglove's timestamp of ``t_ns`` (ns since 1970)."""
    msg.timestamp.seconds, msg.timestamp.nanos = divmod(t_ns, 1_000_000_000)


# Protobuf's encoding of the transforms written at every instant, built from the states' own
# bytes: foxglove.Vector3 and foxglove.Quaternion have the fields (numbers, types) of
# hopsim.Vector3 and hopsim.Quaternion, so a state's position and attitude serialize to the
# transform's translation and rotation. tests/test_foxglove_scene.py checks the bytes against
# protobuf's serialization of the same FrameTransforms.
_PARENT_WORLD = b"\x12" + bytes([len(WORLD)]) + WORLD.encode()       # FrameTransform.parent_frame_id
_TRANSLATION, _ROTATION, _ENTRY = b"\x22", b"\x2a", b"\x0a"            # field 4, 5 (and 1) tags


_SHORT = [bytes((n,)) for n in range(0x80)]       # the varints of one byte


def _varint(n: int) -> bytes:
    """Protobuf's base-128 varint of ``n`` (0 <= n < 2^64)."""
    if n < 0x80:
        return _SHORT[n]
    out = bytearray()
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def _timestamp_field(t_ns: int) -> bytes:
    """A FrameTransform's ``timestamp`` field (field 1) at ``t_ns`` (ns since 1970, >= 0)."""
    seconds, nanos = divmod(t_ns, 1_000_000_000)
    body = _seconds_field(seconds) + _nanos_field(nanos)
    return b"\x0a" + _SHORT[len(body)] + body         # at most 1 + 10 + 1 + 5 bytes


@lru_cache(maxsize=64)
def _seconds_field(seconds: int) -> bytes:
    """Timestamp.seconds (field 1; nothing for 0)."""
    return b"\x08" + _varint(seconds) if seconds else b""


@lru_cache(maxsize=4096)
def _nanos_field(nanos: int) -> bytes:
    """Timestamp.nanos (field 2; nothing for 0); the instants of periodic models repeat a few values."""
    return b"\x10" + _varint(nanos) if nanos else b""


@lru_cache(maxsize=4096)
def _child_field(name: str) -> bytes:
    """A FrameTransform's ``child_frame_id`` field (field 3)."""
    data = name.encode()
    return b"\x1a" + _varint(len(data)) + data


def _transforms_bytes(poses: dict[str, VehicleState], stamp: int) -> bytes:
    """The serialized FrameTransforms (deterministic) of a transform per vehicle, in name order,
    from ``world`` to the vehicle's frame at its state's position and attitude; ``stamp``: ns
    since 1970."""
    head = _timestamp_field(stamp) + _PARENT_WORLD
    parts = []
    for name in sorted(poses):
        s = poses[name]
        translation, rotation = s.r_BN_N.SerializeToString(), s.q_BN.SerializeToString()
        body = b"".join((head, _child_field(name), _TRANSLATION, _SHORT[len(translation)], translation,
                         _ROTATION, _SHORT[len(rotation)], rotation))     # both under 0x80 bytes
        parts += (_ENTRY, _varint(len(body)), body)
    return b"".join(parts)


class FoxgloveScene:
    """Turns the vehicle states of each instant into Foxglove messages (see the module)."""

    def __init__(self, epoch_ns: int = 0):
        """``epoch_ns``: the calendar time of t = 0 (ns since 1970), added to every timestamp."""
        self._epoch_ns = epoch_ns
        self._t_ns: int | None = None
        self._poses: dict[str, VehicleState] = {}
        self._known: set[str] = set()
        self._trails = _Trails(TRAIL_POINTS)              # each vehicle's trail (frame N)
        self._trail_t: dict[str, int] = {}
        self._tips_sent_ns = -TRAIL_EVERY_NS
        self._histories_sent_ns = -TRAIL_HISTORY_EVERY_NS
        self._volume: tuple | None = None      # the test volume's corners (m, frame N), drawn once
        self._bodies: dict[str, dict] = {}     # vehicles with a known shape (radius, port)
        self._chief: str | None = None          # the vehicle whose Hill frame is drawn
        self._hill_trails = _Trails(HILL_TRAIL_POINTS)    # relative to the chief, in its Hill frame
        self._hill_trail_t: dict[str, int] = {}

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
        """Take one envelope of the stream (in stream order; ``source``: its publisher); the
        (topic, t_ns, message) to write for the instants it completes."""
        out = self.flush() if self._t_ns is not None and t_ns != self._t_ns else []
        if type_name == "hopsim.VehicleState":
            self.take(t_ns, payload, source)
        return out

    @property
    def pending_ns(self) -> int | None:
        """The instant (simulation time, ns) whose states are held, not yet drawn (None: none)."""
        return self._t_ns

    def take(self, t_ns: int, state: VehicleState, source: str) -> None:
        """Hold a vehicle state published at ``t_ns`` by ``source`` (drawn if its publisher is the
        vehicle itself). Another instant pending is flushed before (:meth:`flush_encoded`)."""
        if state.vehicle and state.vehicle == source:
            self._t_ns = t_ns
            self._poses[state.vehicle] = state

    def flush(self) -> list[tuple[str, int, object]]:
        """The messages of the pending instant, if any."""
        return [(topic, t_ns, message_type.FromString(data)) for topic, t_ns, message_type, data in self.flush_encoded()]

    def flush_encoded(self) -> list[tuple[str, int, type, bytes]]:
        """The messages of the pending instant, if any, as (topic, t_ns, message type, the
        message's deterministic serialization)."""
        if not self._poses:
            self._t_ns = None
            return []
        t_ns, poses = self._t_ns, self._poses
        self._poses, self._t_ns = {}, None
        stamp = self._epoch_ns + t_ns
        transforms = _transforms_bytes(poses, stamp)
        chief = poses.get(self._chief) if self._chief is not None else None
        if chief is not None:
            hill = FrameTransforms()
            C_HN = self._hill_transform(hill.transforms.add(), chief, stamp)
            transforms += hill.SerializeToString(deterministic=True)      # one more entry of the repeated field
        out = [(TRANSFORMS_TOPIC, t_ns, FrameTransforms, transforms)]
        if len(poses) > len(self._known) or not self._known.issuperset(poses):
            out.append((SCENE_TOPIC, t_ns, SceneUpdate, self._new_bodies(poses, stamp)))
        if chief is not None and len(self._known) <= TRAIL_VEHICLES:
            self._extend_hill_trails(poses, chief, C_HN, t_ns)
        if len(self._known) <= TRAIL_VEHICLES:
            self._extend_trails(poses, t_ns)
            out += [(topic, t, type(msg), msg.SerializeToString(deterministic=True))
                    for topic, t, msg in self._send_trails(t_ns)]
        return out

    def _new_bodies(self, poses: dict[str, VehicleState], stamp: int) -> bytes:
        """The SceneUpdate (serialized) adding the bodies of the vehicles seen for the first time,
        and the test volume with the first of them; ``stamp``: ns since 1970."""
        new = sorted(set(poses) - self._known)
        first = not self._known
        self._known.update(new)
        update = SceneUpdate()
        for name in new:
            self._body(update.entities.add(), name, stamp, self._bodies.get(name))
        if first and self._volume is not None:
            self._walls(update.entities.add(), stamp)
        return update.SerializeToString(deterministic=True)

    def _send_trails(self, t_ns: int) -> list[tuple[str, int, object]]:
        """The trails' histories (every TRAIL_HISTORY_EVERY_NS) and tips (every TRAIL_EVERY_NS) due at t_ns."""
        out = []
        stamp = self._epoch_ns + t_ns
        if t_ns - self._histories_sent_ns >= TRAIL_HISTORY_EVERY_NS:
            self._histories_sent_ns = t_ns
            out.append((TRAILS_TOPIC, t_ns, self._trail_update("", _Trails.history, stamp)))
            for trails, _, _ in self._trail_kinds():
                trails.history_sent()
        if t_ns - self._tips_sent_ns >= TRAIL_EVERY_NS:
            self._tips_sent_ns = t_ns
            out.append((SCENE_TOPIC, t_ns, self._trail_update("_tip", _Trails.tip, stamp)))
        return out

    def _trail_update(self, suffix: str, line, stamp: int) -> SceneUpdate:
        """Every trail's ``line`` (history or tip), as entities ``<kind><suffix>/<vehicle>``."""
        update = SceneUpdate()
        for trails, frame, kind in self._trail_kinds():
            for name in trails.names():
                self._trail(update.entities.add(), frame, f"{kind}{suffix}/{name}", line(trails, name), stamp)
        return update

    def _trail_kinds(self):
        """(trails, their frame, their entities' id prefix): the world frame's, then the Hill frame's."""
        kinds = [(self._trails, WORLD, "trail")]
        if self._chief is not None:
            kinds.append((self._hill_trails, hill_frame_name(self._chief), "hill_trail"))
        return kinds

    def _hill_transform(self, tf, chief: VehicleState, t_ns: int) -> list[list[float]]:
        """The chief's Hill frame H in the world frame (translation: the chief's position; rotation
        C_NH); returns C_HN."""
        r = (chief.r_BN_N.x, chief.r_BN_N.y, chief.r_BN_N.z)
        C_HN = hill_rotation(r, (chief.v_BN_N.x, chief.v_BN_N.y, chief.v_BN_N.z))
        _stamp(tf, t_ns)
        tf.parent_frame_id, tf.child_frame_id = WORLD, hill_frame_name(self._chief)
        tf.translation.x, tf.translation.y, tf.translation.z = r
        C_NH = [[C_HN[j][i] for j in range(3)] for i in range(3)]
        tf.rotation.x, tf.rotation.y, tf.rotation.z, tf.rotation.w = _quaternion_of(C_NH)
        return C_HN

    def _extend_hill_trails(self, poses: dict[str, VehicleState], chief: VehicleState, C_HN, t_ns: int) -> None:
        """Each other vehicle's position relative to the chief, in H (m)."""
        c = chief.r_BN_N
        for name, s in poses.items():
            if name == self._chief or t_ns - self._hill_trail_t.get(name, -TRAIL_EVERY_NS) < TRAIL_EVERY_NS // 2:
                continue
            self._hill_trail_t[name] = t_ns
            d = (s.r_BN_N.x - c.x, s.r_BN_N.y - c.y, s.r_BN_N.z - c.z)
            x, y, z = (row[0] * d[0] + row[1] * d[1] + row[2] * d[2] for row in C_HN)
            self._hill_trails.append(name, x, y, z)

    def _extend_trails(self, poses: dict[str, VehicleState], t_ns: int) -> None:
        for name, s in poses.items():
            if t_ns - self._trail_t.get(name, -TRAIL_EVERY_NS) >= TRAIL_EVERY_NS // 2:
                self._trail_t[name] = t_ns
                self._trails.append(name, s.r_BN_N.x, s.r_BN_N.y, s.r_BN_N.z)

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
            for b in corners[i + 1:]:
                if sum(p != q for p, q in zip(a, b)) == 1:        # corners one edge apart
                    line.points.extend([Point3(x=a[0], y=a[1], z=a[2]), Point3(x=b[0], y=b[1], z=b[2])])

    @staticmethod
    def _trail(entity: SceneEntity, frame: str, entity_id: str, line: LinePrimitive, t_ns: int) -> None:
        """A trail's history or tip: ``line`` in ``frame``."""
        _stamp(entity, t_ns)
        entity.frame_id, entity.id = frame, entity_id
        entity.lines.add().CopyFrom(line)


class _Trails:
    """Vehicles' trails, each kept as the two lines the scene sends: its history (the last ``keep``
    points) and its tip (the points since the history was last sent, after that history's last
    point), so that a point costs its own bytes and no more, however long the trail."""

    def __init__(self, keep: int):
        self._keep = keep
        self._history: dict[str, LinePrimitive] = {}
        self._tip: dict[str, LinePrimitive] = {}

    def names(self) -> list[str]:
        return sorted(self._history)

    def append(self, name: str, x: float, y: float, z: float) -> None:
        """Add a point (m) to ``name``'s trail."""
        history = self._history.get(name)
        if history is None:
            history = self._history[name] = _line()
            self._tip[name] = _line()
        history.points.add(x=x, y=y, z=z)
        if len(history.points) > self._keep:
            del history.points[:len(history.points) - self._keep]
        self._tip[name].points.add(x=x, y=y, z=z)

    def history(self, name: str) -> LinePrimitive:
        return self._history[name]

    def tip(self, name: str) -> LinePrimitive:
        return self._tip[name]

    def history_sent(self) -> None:
        """The histories went out: each tip starts again at its history's last point."""
        for name, history in self._history.items():
            tip = self._tip[name] = _line()
            if history.points:
                tip.points.append(history.points[-1])


def _line() -> LinePrimitive:
    """An empty trail line (a line strip in the trail's colour)."""
    line = LinePrimitive(type=LinePrimitive.LINE_STRIP, thickness=2.0, scale_invariant=True,
                         color=Color(r=0.3, g=0.7, b=1.0, a=0.8))
    line.pose.orientation.w = 1.0
    return line


__all__ = ["FoxgloveScene", "is_derived", "hill_frame_name", "hill_rotation", "DERIVED", "TRANSFORMS_TOPIC",
           "SCENE_TOPIC", "TRAILS_TOPIC"]
