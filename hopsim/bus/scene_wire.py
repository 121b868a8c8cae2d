"""Compiled wire work of the Foxglove scene (:mod:`hopsim.bus.scene`), many vehicles per call.

- :func:`read_states`: from serialized ``hopsim.VehicleState`` messages, where each one's
  ``vehicle``, ``r_BN_N``, ``v_BN_N`` and ``q_BN`` fields lie, and the two vectors' coordinates.
- :func:`frame_transforms`: a ``foxglove.FrameTransforms`` with a transform per vehicle whose
  translation and rotation are the states' own ``r_BN_N`` and ``q_BN`` bytes (foxglove.Vector3 and
  foxglove.Quaternion have the fields, numbers and types of hopsim.Vector3 and hopsim.Quaternion).
- :func:`line_entities`: ``foxglove.SceneUpdate`` entities of one line each (the trails).

What these write is protobuf's deterministic serialization of the same messages: fields in
number order, proto3's implicit presence (a coordinate is left out when its bits are zero: +0.0
is, -0.0 is not). tests/test_foxglove_scene.py compares them with protobuf's own bytes.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from hopsim.schemas import VehicleState

_FIELDS = VehicleState.DESCRIPTOR.fields_by_name
VEHICLE, R, V, Q = (_FIELDS[name].number for name in ("vehicle", "r_BN_N", "v_BN_N", "q_BN"))
SPANS = 4  # the fields read_states locates, in this order: vehicle, r, v, q
TRANSLATION_TAG, ROTATION_TAG, TRANSFORM_TAG = 0x22, 0x2A, 0x0A  # FrameTransform fields 4, 5; FrameTransforms 1
ENTITY_TAG, LINES_TAG, POINTS_TAG = (
    0x12,
    0x5A,
    0x2A,
)  # SceneUpdate.entities 2, SceneEntity.lines 11, LinePrimitive.points 5
COORDINATE_TAGS = (0x09, 0x11, 0x19)  # Point3 / Vector3 x, y, z: fields 1-3, 64-bit


@njit(cache=True)
def _read_varint(data, pos, end):
    """The varint at ``data[pos:end]`` and the position after it (-1: it runs past ``end``)."""
    value = np.int64(0)
    shift = 0
    while pos < end and shift < 64:
        b = np.int64(data[pos])
        pos += 1
        value |= (b & 0x7F) << shift
        if b < 0x80:
            return value, pos
        shift += 7
    return value, -1


@njit(cache=True)
def _varint_size(n):
    size = 1
    while n >= 0x80:
        n >>= 7
        size += 1
    return size


@njit(cache=True)
def _put_varint(out, pos, n):
    """Write the varint of ``n`` (>= 0) at ``out[pos]``; return the position after it."""
    while n >= 0x80:
        out[pos] = (n & 0x7F) | 0x80
        n >>= 7
        pos += 1
    out[pos] = n
    return pos + 1


@njit(cache=True)
def _put_bits(out, pos, bits):
    for b in range(8):
        out[pos + b] = (bits >> (8 * b)) & 0xFF
    return pos + 8


@njit(cache=True)
def _copy(out, pos, src, a, b):
    for k in range(a, b):
        out[pos] = src[k]
        pos += 1
    return pos


@njit(cache=True)
def _coordinates(data, a, b, bits, i, j):
    """The x, y, z of the Vector3 at ``data[a:b]`` into ``bits[i, j]`` (their 64-bit patterns;
    a field left out is 0.0). False if the bytes are not such a message."""
    pos = a
    while pos < b:
        tag, pos = _read_varint(data, pos, b)
        if pos < 0:
            return False
        field, wire = tag >> 3, tag & 7
        if wire == 1:
            if pos + 8 > b:
                return False
            if 1 <= field <= 3:
                value = np.int64(0)
                for k in range(8):
                    value |= np.int64(data[pos + k]) << (8 * k)
                bits[i, j, field - 1] = value
            pos += 8
        elif wire == 0:
            _, pos = _read_varint(data, pos, b)
            if pos < 0:
                return False
        elif wire == 5:
            pos += 4
        elif wire == 2:
            size, pos = _read_varint(data, pos, b)
            if pos < 0:
                return False
            pos += size
        else:
            return False
    return pos == b


@njit(cache=True)
def _read_states(data, starts, ends, spans, bits):
    """See :func:`read_states`; returns the index of the first message that does not parse, or -1."""
    for i in range(len(starts)):
        pos, end = starts[i], ends[i]
        while pos < end:
            tag, pos = _read_varint(data, pos, end)
            if pos < 0:
                return i
            field, wire = tag >> 3, tag & 7
            if wire == 2:
                size, pos = _read_varint(data, pos, end)
                if pos < 0 or pos + size > end:
                    return i
                slot = -1
                if field == VEHICLE:
                    slot = 0
                elif field == R:
                    slot = 1
                elif field == V:
                    slot = 2
                elif field == Q:
                    slot = 3
                if slot >= 0:
                    spans[i, slot, 0], spans[i, slot, 1] = pos, pos + size
                pos += size
            elif wire == 0:
                _, pos = _read_varint(data, pos, end)
                if pos < 0:
                    return i
            elif wire == 1:
                pos += 8
            elif wire == 5:
                pos += 4
            else:
                return i
        if pos != end:
            return i
        for j in range(2):  # r_BN_N, v_BN_N
            a, b = spans[i, 1 + j, 0], spans[i, 1 + j, 1]
            if a >= 0 and not _coordinates(data, a, b, bits, i, j):
                return i
    return -1


def read_states(data: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Read ``len(starts)`` serialized vehicle states, message ``i`` at ``data[starts[i]:ends[i]]``
    (uint8, int64, int64): each one's byte spans (int64, shape (n, 4, 2): ``vehicle``, ``r_BN_N``,
    ``v_BN_N``, ``q_BN``, start and end in ``data``; -1 where the field is not there) and its
    position and velocity (float64, shape (n, 2, 3): m, m/s, frame N; 0.0 where not there). A
    message that does not parse raises ValueError naming it."""
    n = len(starts)
    spans = np.full((n, SPANS, 2), -1, np.int64)
    bits = np.zeros((n, 2, 3), np.int64)
    bad = _read_states(data, starts, ends, spans, bits)
    if bad >= 0:
        raise ValueError(f"vehicle state {bad} of the instant is not a serialized hopsim.VehicleState")
    return spans, bits.view(np.float64)


@njit(cache=True)
def named_by(data, spans, sources, names, names_at):
    """Which states name their publisher: state ``i``'s ``vehicle`` field (``spans[i, 0]``, from
    :func:`read_states`) is not empty and holds the bytes of name ``sources[i]``
    (``names[names_at[n]:names_at[n + 1]]``). Boolean, one per state."""
    out = np.zeros(len(sources), np.bool_)
    for i in range(len(sources)):
        a, b = spans[i, 0, 0], spans[i, 0, 1]
        n = sources[i]
        c, d = names_at[n], names_at[n + 1]
        if a < 0 or b - a != d - c or b == a:
            continue
        same = True
        for k in range(b - a):
            if data[a + k] != names[c + k]:
                same = False
                break
        out[i] = same
    return out


@njit(cache=True)
def _frame_transforms(head, children, children_at, names, states, data, spans, out):
    """See :func:`frame_transforms`. With ``out`` empty: the size of the bytes; else writes them."""
    pos = 0
    for k in range(len(names)):
        name, i = names[k], states[k]
        child = children_at[name + 1] - children_at[name]
        r_a, r_b = max(spans[i, 1, 0], 0), max(spans[i, 1, 1], 0)
        q_a, q_b = max(spans[i, 3, 0], 0), max(spans[i, 3, 1], 0)
        body = len(head) + child + 1 + _varint_size(r_b - r_a) + r_b - r_a + 1 + _varint_size(q_b - q_a) + q_b - q_a
        if len(out) == 0:
            pos += 1 + _varint_size(body) + body
            continue
        out[pos] = TRANSFORM_TAG
        pos = _put_varint(out, pos + 1, body)
        pos = _copy(out, pos, head, 0, len(head))
        pos = _copy(out, pos, children, children_at[name], children_at[name + 1])
        out[pos] = TRANSLATION_TAG
        pos = _put_varint(out, pos + 1, r_b - r_a)
        pos = _copy(out, pos, data, r_a, r_b)
        out[pos] = ROTATION_TAG
        pos = _put_varint(out, pos + 1, q_b - q_a)
        pos = _copy(out, pos, data, q_a, q_b)
    return pos


def frame_transforms(
    head: np.ndarray,
    children: np.ndarray,
    children_at: np.ndarray,
    names: np.ndarray,
    states: np.ndarray,
    data: np.ndarray,
    spans: np.ndarray,
) -> bytes:
    """The serialized FrameTransforms of one transform per vehicle, in the order of ``names``.

    Transform ``k`` is ``head`` (its timestamp and parent frame fields, serialized), then the
    child frame field of name ``names[k]`` (``children[children_at[n]:children_at[n + 1]]``), then
    the translation and rotation: the ``r_BN_N`` and ``q_BN`` bytes of state ``states[k]`` in
    ``data`` (``spans`` from :func:`read_states`; a field not there is an empty message)."""
    size = _frame_transforms(head, children, children_at, names, states, data, spans, np.empty(0, np.uint8))
    out = np.empty(size, np.uint8)
    _frame_transforms(head, children, children_at, names, states, data, spans, out)
    return out.tobytes()


@njit(cache=True)
def _point_size(bits, r, p):
    size = 0
    for c in range(3):
        if bits[r, p, c] != 0:
            size += 9
    return size


@njit(cache=True)
def _line_entities(head, ids, ids_at, rows, starts, ends, bits, line_head, line_tail, out):
    """See :func:`line_entities`. With ``out`` empty: the size of the bytes; else writes them."""
    pos = 0
    for k in range(len(rows)):
        r = rows[k]
        points = 0
        for p in range(starts[k], ends[k]):
            size = _point_size(bits, r, p)
            points += 1 + _varint_size(size) + size
        line = len(line_head) + points + len(line_tail)
        entity = len(head) + ids_at[r + 1] - ids_at[r] + 1 + _varint_size(line) + line
        if len(out) == 0:
            pos += 1 + _varint_size(entity) + entity
            continue
        out[pos] = ENTITY_TAG
        pos = _put_varint(out, pos + 1, entity)
        pos = _copy(out, pos, head, 0, len(head))
        pos = _copy(out, pos, ids, ids_at[r], ids_at[r + 1])
        out[pos] = LINES_TAG
        pos = _put_varint(out, pos + 1, line)
        pos = _copy(out, pos, line_head, 0, len(line_head))
        for p in range(starts[k], ends[k]):
            out[pos] = POINTS_TAG
            pos = _put_varint(out, pos + 1, _point_size(bits, r, p))
            for c in range(3):
                if bits[r, p, c] != 0:
                    out[pos] = 0x09 + 8 * c
                    pos = _put_bits(out, pos + 1, bits[r, p, c])
        pos = _copy(out, pos, line_tail, 0, len(line_tail))
    return pos


def line_entities(
    head: np.ndarray,
    ids: np.ndarray,
    ids_at: np.ndarray,
    rows: np.ndarray,
    starts: np.ndarray,
    ends: np.ndarray,
    points: np.ndarray,
    line_head: np.ndarray,
    line_tail: np.ndarray,
) -> bytes:
    """SceneUpdate entities (field 2 of foxglove.SceneUpdate, serialized one after the other) of
    one line each: entity ``k`` is ``head`` (its timestamp and frame fields, serialized), the id
    field of row ``rows[k]`` (``ids[ids_at[r]:ids_at[r + 1]]``), then a LinePrimitive whose
    points are ``points[r, starts[k]:ends[k]]`` (float64, shape (rows, capacity, 3); m),
    between ``line_head`` (the line's fields before its points, serialized) and ``line_tail``
    (those after)."""
    bits = points.view(np.int64)
    args = (head, ids, ids_at, rows, starts, ends, bits, line_head, line_tail)
    out = np.empty(_line_entities(*args, np.empty(0, np.uint8)), np.uint8)
    _line_entities(*args, out)
    return out.tobytes()
