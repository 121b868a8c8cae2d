"""Messages of a vehicle's signals, built fast and exactly: the published state, a force and
a SPHERES IMU batch.

upb (the protobuf runtime) charges a few hundred instructions per attribute access, so that
filling a VehicleState field by field costs more than the vehicle's RK4 hop. The builders below
instead write the doubles in protobuf's wire format (one struct.pack, or one compiled call) and
parse the bytes with one call. Every double is written, zeros too: proto3 keeps no trace of an
explicit zero, so the parsed message is the one that setting the same fields gives, and
serializes to the same bytes (tests/test_formation_fast_paths.py checks it, -0.0, inf and nan
included). Strings and integers (vehicle, t_ns) are set as attributes after the parse.

These builders are a speed trick that model files use instead of setting fields; they go once
payloads are typed rows encoded by generated encoders (kernel v2).
"""

from __future__ import annotations

import functools
import struct
import sys

import numpy as np

from hopsim.dynamics._jit import compiled
from hopsim.schemas import Vector3, VehicleState, Wrench
from hopsim.schemas.spheres_pb2 import GmRanges, ImuSamples
from hopsim.schemas.wire import varint


def vector3(v) -> Vector3:
    return Vector3(x=float(v[0]), y=float(v[1]), z=float(v[2]))


def set_vector3(msg: Vector3, v, i: int = 0) -> None:
    """Fill ``msg`` (a message's Vector3 field, which it makes present) with ``v[i:i+3]``."""
    msg.x = v[i]
    msg.y = v[i + 1]
    msg.z = v[i + 2]


# ----------------------------------------------------------------------------- wire format
# upb (the protobuf runtime) charges a few hundred instructions per attribute access, so that
# filling a VehicleState field by field costs more than the vehicle's RK4 hop. The builders below
# instead write the doubles in protobuf's wire format (one struct.pack, or one compiled call) and
# parse the bytes with one call. Every double is written, zeros too: proto3 keeps no trace of an
# explicit zero, so the parsed message is the one that setting the same fields gives, and
# serializes to the same bytes (tests/test_formation_fast_paths.py checks it, -0.0, inf and nan
# included). Strings and integers (vehicle, t_ns) are set as attributes after the parse.
D1, D2, D3, D4 = 0x09, 0x11, 0x19, 0x21  # keys of the double fields 1..4 (wire type 1)


def doubles_head(number: int, n: int) -> bytes:
    """Key and length of a sub-message field ``number`` whose fields 1..n are all written doubles."""
    return bytes((number << 3 | 2, 9 * n))


def doubles_format(n: int) -> str:
    """struct format of such a sub-message: its head (2 bytes), then per double a key byte and 8
    bytes (little-endian, as the wire format's fixed64)."""
    return "2s" + "Bd" * n


_R, _V, _Q, _W, _A, _WD = (
    doubles_head(3, 3),
    doubles_head(4, 3),
    doubles_head(5, 4),
    doubles_head(6, 3),
    doubles_head(7, 3),
    doubles_head(8, 3),
)
_STATE_WIRE = struct.Struct("<" + doubles_format(3) * 2 + doubles_format(4) + doubles_format(3) * 3 + "Bd")
_RV_WIRE = struct.Struct("<" + doubles_format(3) * 2 + "Bd")
_MASS_KEY = 0x49  # key of VehicleState.mass (field 9, double)
_parse_state = VehicleState.FromString


def vehicle_state(vehicle: str, t_ns: int, x: list[float], xdot: list[float], mass_kg: float) -> VehicleState:
    """The published state: ``x`` the 13 states, ``xdot`` their derivatives (lists of floats)."""
    msg = _parse_state(
        _STATE_WIRE.pack(
            _R,
            D1,
            x[0],
            D2,
            x[1],
            D3,
            x[2],
            _V,
            D1,
            x[3],
            D2,
            x[4],
            D3,
            x[5],
            _Q,
            D1,
            x[6],
            D2,
            x[7],
            D3,
            x[8],
            D4,
            x[9],
            _W,
            D1,
            x[10],
            D2,
            x[11],
            D3,
            x[12],
            _A,
            D1,
            xdot[3],
            D2,
            xdot[4],
            D3,
            xdot[5],
            _WD,
            D1,
            xdot[10],
            D2,
            xdot[11],
            D3,
            xdot[12],
            _MASS_KEY,
            mass_kg,
        )
    )
    msg.vehicle = vehicle
    msg.t_ns = t_ns
    return msg


NATIVE_LITTLE_ENDIAN = sys.byteorder == "little"  # _encode_state copies native doubles (else: struct path)
# the published state's sub-messages in field order: (field number, doubles), then the mass
_STATE_FIELDS = ((3, 3), (4, 3), (5, 4), (6, 3), (7, 3), (8, 3))
STATE_WIRE_SIZE = _STATE_WIRE.size  # 192 bytes


@compiled
def _encode_state(x, xdot, mass, out):
    """Write into ``out`` (uint8, STATE_WIRE_SIZE) what :func:`vehicle_state` packs: the wire
    format of r, v, q, omega (``x``), a, omega_dot (``xdot``) and the mass. The doubles' bytes are
    copied, not computed: the encoding is exact whatever the values (native byte order, which
    must be the wire format's little-endian: used only where it is, see NATIVE_LITTLE_ENDIAN)."""
    vals = np.empty(20)
    for i in range(13):
        vals[i] = x[i]
    for i in range(3):
        vals[13 + i] = xdot[3 + i]
        vals[16 + i] = xdot[10 + i]
    vals[19] = mass
    raw = vals.view(np.uint8)
    p = 0
    j = 0
    for number, n in _STATE_FIELDS:
        out[p] = number << 3 | 2  # key of a length-delimited field, and its length
        out[p + 1] = 9 * n
        p += 2
        for k in range(n):
            out[p] = (k + 1) << 3 | 1  # key of double field k + 1 (wire type 1)
            for i in range(8):
                out[p + 1 + i] = raw[8 * j + i]
            p += 9
            j += 1
    out[p] = _MASS_KEY
    for i in range(8):
        out[p + 1 + i] = raw[8 * j + i]


def position_velocity_state(
    vehicle: str, t_ns: int, rx: float, ry: float, rz: float, vx: float, vy: float, vz: float, mass_kg: float
) -> VehicleState:
    """A VehicleState with only ``r_BN_N`` (m), ``v_BN_N`` (m/s) and the mass (kg) filled in."""
    msg = _parse_state(_RV_WIRE.pack(_R, D1, rx, D2, ry, D3, rz, _V, D1, vx, D2, vy, D3, vz, _MASS_KEY, mass_kg))
    msg.vehicle = vehicle
    msg.t_ns = t_ns
    return msg


class StateMessageBuilder:
    """Builds a vehicle's published state from its arrays with one compiled call into scratch
    bytes it owns (cheaper than converting the arrays to lists and packing those)."""

    def __init__(self):
        self._wire = np.zeros(STATE_WIRE_SIZE, dtype=np.uint8)

    def build(self, vehicle: str, t_ns: int, x: np.ndarray, xdot: np.ndarray, mass_kg: float) -> VehicleState:
        """The message :func:`vehicle_state` builds: ``x`` the 13 states, ``xdot`` their derivatives."""
        if not NATIVE_LITTLE_ENDIAN:
            return vehicle_state(vehicle, t_ns, x.tolist(), xdot.tolist(), mass_kg)
        _encode_state(x, xdot, mass_kg, self._wire)
        msg = _parse_state(self._wire.tobytes())
        msg.vehicle = vehicle
        msg.t_ns = t_ns
        return msg


# a length in the wire format; kept for the lengths met (a handful per run)
_length = functools.lru_cache(maxsize=4096)(varint)


def imu_samples(vehicle: str, t_ns: list[int], omega_B: np.ndarray, accel_B: np.ndarray) -> ImuSamples:
    """``ImuSamples(vehicle=vehicle, t_ns=t_ns, omega_B=omega_B.ravel().tolist(), accel_B=...)``:
    the gyro rows (rad/s, B) and accelerometer rows (m/s^2, B) of the samples at ``t_ns`` (ns),
    the doubles parsed from their bytes (a packed repeated double is its values' little-endian
    bytes) rather than converted to a list and set one by one."""
    if not NATIVE_LITTLE_ENDIAN:
        return ImuSamples(
            vehicle=vehicle, t_ns=t_ns, omega_B=np.ravel(omega_B).tolist(), accel_B=np.ravel(accel_B).tolist()
        )
    gyro = np.asarray(omega_B, dtype=np.float64).tobytes()
    accel = np.asarray(accel_B, dtype=np.float64).tobytes()
    parts = []
    if gyro:
        parts += [_OMEGA_KEY, _length(len(gyro)), gyro]
    if accel:
        parts += [_ACCEL_KEY, _length(len(accel)), accel]
    msg = _parse_imu(b"".join(parts))
    msg.vehicle = vehicle
    msg.t_ns.extend(t_ns)
    return msg


_OMEGA_KEY, _ACCEL_KEY = bytes((3 << 3 | 2,)), bytes((4 << 3 | 2,))  # ImuSamples.omega_B, .accel_B (packed)
_parse_imu = ImuSamples.FromString


def gm_ranges(vehicle: str, cycle_start_ns: int, beacon_fire_ns: list[int], ranges_m: np.ndarray) -> GmRanges:
    """``GmRanges(vehicle=..., cycle_start_ns=..., beacon_fire_ns=..., n_beacons=..., n_faces=...,
    n_receivers=..., range_m=ranges_m.ravel().tolist())``: a cycle's ranges (m, -1 for no reading)
    ``ranges_m`` [beacon][face][receiver], its start and its firings (ns), the doubles parsed
    from their bytes (a packed repeated double is its values' little-endian bytes) rather than
    converted to a list and set one by one."""
    n_beacons, n_faces, n_receivers = ranges_m.shape
    if not NATIVE_LITTLE_ENDIAN:
        return GmRanges(
            vehicle=vehicle,
            cycle_start_ns=cycle_start_ns,
            beacon_fire_ns=beacon_fire_ns,
            n_beacons=n_beacons,
            n_faces=n_faces,
            n_receivers=n_receivers,
            range_m=ranges_m.ravel().tolist(),
        )
    values = np.asarray(ranges_m, dtype=np.float64).tobytes()
    msg = _parse_ranges(b"".join((_RANGES_KEY, _length(len(values)), values)) if values else b"")
    msg.vehicle = vehicle
    msg.cycle_start_ns = cycle_start_ns
    msg.beacon_fire_ns.extend(beacon_fire_ns)
    msg.n_beacons = n_beacons
    msg.n_faces = n_faces
    msg.n_receivers = n_receivers
    return msg


def gm_range_values(msg: GmRanges) -> np.ndarray:
    """``np.array(msg.range_m[:], dtype=float)``: the ranges (m) of a GmRanges message, flat,
    read from the message's wire format, where the packed ``range_m`` (its last field) ends it,
    rather than element by element (the list path is taken when the bytes are not laid out so)."""
    n = len(msg.range_m)
    if NATIVE_LITTLE_ENDIAN and n:
        data = msg.SerializeToString()
        size = 8 * n
        head = _RANGES_KEY + _length(size)
        start = len(data) - size
        if start >= len(head) and data[start - len(head) : start] == head:
            return np.frombuffer(data, dtype=np.float64, count=n, offset=start).copy()
    return np.array(msg.range_m[:], dtype=float)


_RANGES_KEY = bytes((7 << 3 | 2,))  # GmRanges.range_m (packed)
_parse_ranges = GmRanges.FromString


# Wrench(body=body, frame=INERTIAL, force=(fx, fy, fz)) in the wire format, parsed in one call
# (the same message, bit for bit, cheaper than setting the fields one by one)
_FORCE_WIRE = struct.Struct("<" + doubles_format(3) + "BB")
_FORCE, _FRAME = doubles_head(2, 3), 0x20  # Wrench.force (field 2), Wrench.frame (4, varint)
_parse_wrench = Wrench.FromString


def inertial_force(body: str, fx: float, fy: float, fz: float) -> Wrench:
    """The Wrench of an inertial force (N) on ``body``, at its centre of mass (no torque)."""
    msg = _parse_wrench(_FORCE_WIRE.pack(_FORCE, D1, fx, D2, fy, D3, fz, _FRAME, Wrench.INERTIAL))
    msg.body = body
    return msg
