"""The SPHERES radio packet: frame layout, checksum, and the payloads the actors exchange.

Frame (bytes, sent one at a time)::

    start | to | from | type | time (2, big-endian) | size | data[size] | checksum high | checksum low

The checksum is the sum of the data bytes, modulo 2^16 (section 2.5: "equal to the sum of all
data in the message"), so a corrupted header byte goes unnoticed, as on the real links. Node 0
is the laptop, vehicles are 1..254, 255 addresses everyone. ``time`` is the sender's clock in
milliseconds modulo 2^16. The seed names the command, telemetry and token types; ACK, GO and the
inter-vehicle state message are the types its listings use, with codes chosen here.
"""

from __future__ import annotations

import struct
from typing import NamedTuple

import numpy as np

HEADER_SIZE = 7
TRAILER_SIZE = 2
OVERHEAD = HEADER_SIZE + TRAILER_SIZE
MAX_DATA = 255
LAPTOP = 0
BROADCAST = 255

TOKEN, COMMAND, TELEMETRY, ACK, GO, STATE = 0, 1, 2, 3, 4, 5
TYPE_NAMES = {TOKEN: "token", COMMAND: "command", TELEMETRY: "telemetry", ACK: "ack", GO: "go", STATE: "state"}

# commands the laptop sends (first data byte after the sequence number)
CMD_START_TEST, CMD_STOP_TEST = 1, 2


class Packet(NamedTuple):
    """A decoded frame's fields (a named tuple: built for every frame received)."""

    to: int
    source: int
    type: int
    time_ms: int
    data: bytes


def checksum(data: bytes) -> int:
    """Sum of the data bytes, modulo 2^16."""
    return sum(data) & 0xFFFF


_HEADER = struct.Struct(">BBBBHB")  # start, to, from, type, time, size
_TRAILER = struct.Struct(">H")  # checksum


def encode(pkt: Packet, start_byte: int = 0xA5) -> bytes:
    """The frame of a packet, byte for byte."""
    return encode_fields(pkt.to, pkt.source, pkt.type, pkt.time_ms, pkt.data, start_byte)


def encode_fields(to: int, source: int, ptype: int, time_ms: int, data: bytes, start_byte: int = 0xA5) -> bytes:
    """:func:`encode` of ``Packet(to, source, ptype, time_ms, data)``, without building the Packet."""
    if len(data) > MAX_DATA:
        raise ValueError(f"a packet carries at most {MAX_DATA} data bytes, got {len(data)}")
    return (
        _HEADER.pack(start_byte, to & 0xFF, source & 0xFF, ptype & 0xFF, time_ms & 0xFFFF, len(data))
        + data
        + _TRAILER.pack(checksum(data))
    )


def decode(frame: bytes, start_byte: int = 0xA5) -> Packet | None:
    """The packet in a received frame, or None if the frame is malformed or its checksum fails."""
    if len(frame) < OVERHEAD or frame[0] != start_byte:
        return None
    size = frame[6]
    if len(frame) != OVERHEAD + size:
        return None
    data = bytes(frame[HEADER_SIZE : HEADER_SIZE + size])
    if checksum(data) != (frame[-2] << 8 | frame[-1]):
        return None
    return Packet(frame[1], frame[2], frame[3], frame[4] << 8 | frame[5], data)


def token_frame(source: int, to: int, start_byte: int = 0xA5) -> bytes:
    return encode(Packet(to, source, TOKEN, 0, b""), start_byte)


def serialization_s(n_bytes: int, bitrate_bps: float) -> float:
    """Time to send n bytes at the channel's bit rate (8 bits per byte)."""
    return n_bytes * 8.0 / bitrate_bps


# --------------------------------------------------------------------------- payloads
_STATE = struct.Struct(">B13f")


def pack_state(flag: int, r_N, v_N, q_BN, omega_B) -> bytes:
    """A vehicle state (m, m/s, quaternion x y z w, rad/s) as 13 big-endian float32 and a flag."""
    # the components as floats, as np.concatenate([...]).tolist() gives them (without the array)
    return _STATE.pack(flag & 0xFF, *_floats(r_N), *_floats(v_N), *_floats(q_BN), *_floats(omega_B))


def _floats(v) -> list:
    """A vector's components as Python floats (ndarray.tolist of a float array, else float())."""
    if isinstance(v, np.ndarray) and v.dtype == np.float64:
        return v.tolist()
    return [float(x) for x in np.asarray(v, dtype=float).tolist()]


def unpack_state(data: bytes):
    """(flag, r_N, v_N, q_BN, omega_B) from :func:`pack_state`'s bytes."""
    vals = _STATE.unpack(data)
    x = np.array(vals[1:], dtype=float)
    return vals[0], x[0:3], x[3:6], x[6:10], x[10:13]


STATE_SIZE = _STATE.size
