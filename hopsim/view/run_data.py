"""What the viewer shows of a recording, read from the file as columns.

- :func:`read_poses`: every vehicle's position and attitude at the recorded instants, from the
  ``hopsim.VehicleState`` messages on ``<vehicle>/state`` (the truth states the dynamics publish):
  ``r_BN_N`` (m, inertial frame N) and ``q_BN`` (scalar last), or, asked for, relative to a chief
  in its Hill frame (:func:`hill_frame`). At most ``max_samples`` vehicle-instants are kept: with
  many vehicles, every k-th instant (``every``) is kept.
- :func:`read_events`: what happened at an instant, for the timeline: contacts, docks, undocks,
  island merges and splits, the run's stop (kernel events), and the faults sent on the bus.
- :func:`signal_catalog`: the topics whose numeric fields can be plotted.
- :func:`read_run_info`: the run's description (scenario, parameters, seed, result).
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import numpy as np
from scipy.spatial.transform import Rotation

from hopsim.schemas import Fault, KernelEvent
from hopsim.view.columns import ColumnReader, numeric_fields

STATE_TYPE = "hopsim.VehicleState"
STATE_SUFFIX = "/state"
MAX_POSE_SAMPLES = 3_000_000  # vehicle-instants sent to a page (28 bytes each)
MAX_EVENTS = 5_000
HILL_BLOCK = 100_000  # vehicle-instants turned into a Hill frame at once
TIMELINE_KINDS = {
    KernelEvent.CONTACT: "contact",
    KernelEvent.DOCK: "dock",
    KernelEvent.UNDOCK: "undock",
    KernelEvent.ISLAND_MERGE: "merge",
    KernelEvent.ISLAND_SPLIT: "split",
    KernelEvent.STOP: "stop",
}


@dataclass
class Poses:
    """Vehicle poses on a grid of instants.

    ``t_s`` (T,) simulation time (s); ``vehicles`` (N names); ``r_N`` (T, N, 3) float32 position
    of each vehicle's centre of mass relative to ``origin_N`` (m, frame N; float64 (3,), the mean
    position at the first instant, so that float32 keeps mm over an orbit's radius); ``q_BN``
    (T, N, 4) float32, scalar last. A vehicle not yet recorded at an instant has NaN there; later
    gaps hold its last recorded pose. ``every``: recorded instants per kept instant.

    ``frame``: ``"N"``, or ``"hill:<chief>"`` when the poses are in a chief's Hill frame H
    (:func:`hill_frame`): then ``r_N`` holds rho, the position relative to the chief in H, and
    ``q_BN`` the attitude relative to H (``q_BH``), and ``origin_N`` is zero.
    """

    t_s: np.ndarray
    vehicles: list[str]
    r_N: np.ndarray
    q_BN: np.ndarray
    origin_N: np.ndarray
    every: int
    frame: str = "N"

    def to_bytes(self) -> bytes:
        """The page's binary form: a little-endian u32 header length, the JSON header padded with
        spaces to a multiple of 8 bytes, then t_s (float64), r_N and q_BN (float32), C order."""
        header = json.dumps(
            {
                "instants": len(self.t_s),
                "vehicles": self.vehicles,
                "frame": self.frame,
                "origin_N": [float(x) for x in self.origin_N],
                "every": self.every,
            }
        ).encode()
        header += b" " * (-(4 + len(header)) % 8)
        return b"".join(
            [
                np.uint32(len(header)).tobytes(),
                header,
                self.t_s.astype("<f8").tobytes(),
                np.ascontiguousarray(self.r_N, dtype="<f4").tobytes(),
                np.ascontiguousarray(self.q_BN, dtype="<f4").tobytes(),
            ]
        )


def _state_channels(reader: ColumnReader) -> dict[int, str]:
    """{channel id: vehicle name} of the truth-state channels."""
    out = {}
    for cid in reader.channels_of(STATE_TYPE):
        topic, _, _, _ = reader.channels[cid]
        if topic.endswith(STATE_SUFFIX):
            out[cid] = topic[: -len(STATE_SUFFIX)]
    return out


def read_poses(
    reader: ColumnReader, max_samples: int = MAX_POSE_SAMPLES, origin_N=None, hill_of: str | None = None
) -> Poses:
    """The vehicles' poses (see :class:`Poses`); no vehicles gives T = N = 0. ``origin_N``: the
    origin to take (m, frame N), instead of the mean position at the first instant. ``hill_of``:
    a vehicle's name: the poses relative to it, in its Hill frame (a ValueError names the
    vehicles when it is not one of them)."""
    owners = _state_channels(reader)
    names = sorted(set(owners.values()))
    if hill_of is not None and hill_of not in names:
        shown = ", ".join(names[:20]) + (" ..." if len(names) > 20 else "")
        raise ValueError(
            f"no vehicle {hill_of!r} in the recording to take the Hill frame of; its vehicles: {shown or 'none'}"
        )
    if not names:
        return Poses(np.zeros(0), [], np.zeros((0, 0, 3), np.float32), np.zeros((0, 0, 4), np.float32), np.zeros(3), 1)
    ids = sorted(owners)
    vehicle_of = np.full(max(ids) + 1, -1, dtype=np.int64)
    index = {name: k for k, name in enumerate(names)}
    for cid in ids:
        vehicle_of[cid] = index[owners[cid]]
    fields = ["r_BN_N.x", "r_BN_N.y", "r_BN_N.z", "q_BN.x", "q_BN.y", "q_BN.z", "q_BN.w"]
    if hill_of is not None:
        fields += ["v_BN_N.x", "v_BN_N.y", "v_BN_N.z"]
    # first pass: the recorded instants (8 bytes a message), then which of them are kept
    t_ns = np.empty(reader.messages_of(ids), np.int64)
    n = 0
    for _, t, _, _, _ in reader.scan(ids, STATE_TYPE, fields[:1]):
        t_ns[n : n + len(t)] = t
        n += len(t)
    t_ns = t_ns[:n]
    t_ns.sort()  # in place (np.unique would hash, then sort a copy)
    first = np.ones(n, dtype=np.bool_)  # the first message at its instant
    np.not_equal(t_ns[1:], t_ns[:-1], out=first[1:])
    instants = t_ns[first]
    del t_ns, first
    every = max(1, -(-len(instants) * len(names) // max_samples))
    kept = instants[::every]
    # second pass: each kept instant's fields, straight into their place (at most max_samples
    # vehicle-instants, whatever the file holds)
    data = np.full((len(kept), len(names), len(fields)), np.nan)
    for _, t, channel, _, values in reader.scan(ids, STATE_TYPE, fields):
        row = np.searchsorted(instants, t)
        take = row % every == 0
        data[row[take] // every, vehicle_of[channel[take]]] = values[:, take].T
    del instants
    _hold_last(data)
    if hill_of is not None:
        r_H = np.empty((len(kept), len(names), 3), np.float32)
        q_BH = np.empty((len(kept), len(names), 4), np.float32)
        rows = max(1, HILL_BLOCK // len(names))
        for a in range(0, len(kept), rows):  # blocks of instants: the work arrays stay small
            block = data[a : a + rows]
            chief = block[:, index[hill_of]]
            r_H[a : a + rows], q_BH[a : a + rows] = hill_frame(
                chief[:, :3], chief[:, 7:10], block[:, :, :3], block[:, :, 3:7]
            )
        return Poses(kept / 1e9, names, r_H, q_BH, np.zeros(3), every, frame=f"hill:{hill_of}")
    first = data[0, :, :3]
    if origin_N is not None:
        origin = np.asarray(origin_N, dtype=float)
    else:
        origin = np.nanmean(first, axis=0) if np.isfinite(first).any() else np.zeros(3)
    data[:, :, :3] -= origin
    return Poses(
        kept / 1e9, names, data[:, :, :3].astype(np.float32), data[:, :, 3:7].astype(np.float32), origin, every
    )


def hill_frame(r_c: np.ndarray, v_c: np.ndarray, r_N: np.ndarray, q_BN: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Poses relative to a chief, in its Hill (LVLH) frame H: x along the chief's position
    (radial), z along its orbital angular momentum r_c x v_c (orbit normal), y = z x x
    (along-track). ``r_c``, ``v_c`` (T, 3): the chief's position and velocity (m, m/s, frame N);
    ``r_N`` (T, N, 3) and ``q_BN`` (T, N, 4, scalar last): every vehicle's. Returns rho (T, N, 3),
    the position relative to the chief in H (m), and q_BH (T, N, 4, scalar last), the attitude
    relative to H (v_H = R(q_BH) v_B). NaN where a vehicle or the chief is not recorded yet."""
    C_HN = _hill_rotations(np.asarray(r_c, dtype=float), np.asarray(v_c, dtype=float))
    rho = np.einsum("tij,tnj->tni", C_HN, r_N - r_c[:, None, :])
    q_BH = np.full(q_BN.shape, np.nan)
    known = np.isfinite(q_BN).all(axis=2) & np.isfinite(C_HN).all(axis=(1, 2))[:, None]
    if known.any():
        t_of = np.broadcast_to(np.arange(len(q_BN))[:, None], known.shape)[known]
        C_NB = Rotation.from_quat(q_BN[known]).as_matrix()
        q_BH[known] = Rotation.from_matrix(C_HN[t_of] @ C_NB).as_quat()
    return rho, q_BH


def _hill_rotations(r: np.ndarray, v: np.ndarray) -> np.ndarray:
    """C_HN (T, 3, 3) of a chief at positions ``r`` and velocities ``v`` (T, 3, frame N), as
    :func:`hopsim.bus.scene.hill_rotation` computes each: rows x along r, z along r x v, y = z x x
    (NaN where r or r x v is 0)."""

    def unit(a):
        norm = np.linalg.norm(a, axis=1, keepdims=True)
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(norm > 0.0, a / norm, np.nan)

    x = unit(r)
    z = unit(np.cross(r, v))
    return np.stack([x, np.cross(z, x), z], axis=1)


def _hold_last(data: np.ndarray) -> None:
    """Fill each vehicle's missing instants of ``data`` (T, N, K; NaN rows) with its last row, in
    place (one vehicle at a time: the work arrays are of T rows)."""
    rows = np.arange(len(data))
    for j in range(data.shape[1]):
        valid = np.isfinite(data[:, j, 0])
        if valid.all() or not valid.any():
            continue
        last = np.maximum.accumulate(np.where(valid, rows, -1))
        known = last >= 0
        data[known, j] = data[last[known], j]


def read_events(reader: ColumnReader, limit: int = MAX_EVENTS) -> list[dict]:
    """The timeline's events in time order, at most ``limit``: each ``{t_s, kind, name, detail}``
    (of each of kernel events and faults, the first ``limit`` in the file's order, which is the
    stream's: only those are decoded)."""
    events = []
    kinds = np.array(list(TIMELINE_KINDS))
    kernel, found = reader.channels_of("hopsim.KernelEvent"), 0
    for chunk, t_ns, _, at, values in reader.scan(kernel, "hopsim.KernelEvent", ["kind"]) if kernel else ():
        for k in np.flatnonzero(np.isin(values[0], kinds))[: limit - found]:
            msg = KernelEvent.FromString(reader.payload(chunk, int(at[k])))
            events.append(
                {"t_s": t_ns[k] / 1e9, "kind": TIMELINE_KINDS[msg.kind], "name": msg.name, "detail": _describe(msg)}
            )
            found += 1
        if found >= limit:
            break
    faults, found = reader.channels_of("hopsim.Fault"), 0
    for chunk, t_ns, _, at, _ in reader.scan(faults, "hopsim.Fault", ["value"]) if faults else ():
        for k in range(min(len(t_ns), limit - found)):
            msg = Fault.FromString(reader.payload(chunk, int(at[k])))
            what = (
                f"{msg.kind}"
                + (f" index {msg.index}" if msg.index >= 0 else "")
                + (f" value {msg.value:g}" if msg.value else "")
                + (" (clear)" if msg.clear else "")
            )
            events.append({"t_s": t_ns[k] / 1e9, "kind": "fault", "name": msg.target, "detail": what})
            found += 1
        if found >= limit:
            break
    events.sort(key=lambda e: e["t_s"])
    return events[:limit]


def _describe(event: KernelEvent) -> str:
    """A line for the timeline: from the event's fields where it has them, else its text."""
    if event.HasField("contact"):
        c = event.contact
        if event.kind == KernelEvent.CONTACT:
            j = (c.impulse_Ns.x**2 + c.impulse_Ns.y**2 + c.impulse_Ns.z**2) ** 0.5
            return (
                f"{c.a} and {c.b}: impulse {j:.4g} N s, normal speed {c.normal_speed_before_mps:.4g} -> "
                f"{c.normal_speed_after_mps:.4g} m/s"
            )
        if event.kind == KernelEvent.DOCK:
            return f"{c.a} latched {c.b} (gap {c.port_gap_m:.3g} m, angle {c.port_angle_deg:.3g} deg)"
        if event.kind == KernelEvent.UNDOCK:
            return f"{c.a} left {c.b} at {c.separation_speed_mps:.3g} m/s"
    if event.members:
        return " + ".join(event.members)
    return event.detail


def signal_catalog(reader: ColumnReader) -> dict:
    """``{"types": {type: [field paths]}, "topics": [[topic, type], ...]}``: the recording's
    topics that carry hopsim messages with numeric fields (derived and kernel channels left out)."""
    topics, types = {}, {}
    for topic, type_name, _, _ in reader.channels.values():
        if topic.startswith("kernel/") or not type_name.startswith("hopsim."):
            continue
        if type_name not in types:
            types[type_name] = numeric_fields(type_name)
        if types[type_name]:
            topics[topic] = type_name
    return {"types": {t: f for t, f in types.items() if f}, "topics": sorted([t, n] for t, n in topics.items())}


def read_run_info(reader: ColumnReader) -> dict:
    """The run's description and result (the recording's ``hopsim.run``/``hopsim.result``
    metadata), as ``{"run": {...}, "result": {...}}``, each {} where absent."""
    from hopsim.bus.recorder import RESULT_METADATA, RUN_METADATA

    return {"run": reader.metadata.get(RUN_METADATA, {}), "result": reader.metadata.get(RESULT_METADATA, {})}


__all__ = ["Poses", "hill_frame", "read_events", "read_poses", "read_run_info", "signal_catalog"]
