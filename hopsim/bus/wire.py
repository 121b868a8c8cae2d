"""Protocol buffers' wire format, read in compiled code: the primitives every compiled reader of
a recording's messages shares (:mod:`hopsim.bus.frames`, :mod:`hopsim.view.columns`).

Each takes the bytes (``buf``, uint8), a position ``p`` and the end of the message or field it
may read up to (``end``); a malformed or truncated value gives the position -1, never a read past
``end``. Wire types: 0 varint, 1 64-bit, 2 length-delimited, 5 32-bit (3 and 4, groups, are
malformed here).
"""

from __future__ import annotations

import numpy as np
from numba import njit

compiled = njit(cache=True, fastmath=False, error_model="numpy")


@compiled
def varint(buf, p, end):
    """(value, next position) of the varint at p; (0, -1) if it runs past ``end`` or past ten
    bytes (a 64-bit value's most)."""
    result = np.uint64(0)
    shift = np.uint64(0)
    while p < end:
        b = np.uint64(buf[p])
        p += 1
        result |= (b & np.uint64(0x7F)) << shift
        if b < np.uint64(0x80):
            return result, p
        shift += np.uint64(7)
        if shift >= np.uint64(70):
            return np.uint64(0), -1
    return np.uint64(0), -1


@compiled
def little_endian(buf, p, nbytes):
    """The ``nbytes`` bytes at p as an unsigned little-endian number (the caller checked that they
    lie before the end)."""
    v = np.uint64(0)
    for i in range(nbytes):
        v |= np.uint64(buf[p + i]) << np.uint64(8 * i)
    return v


@compiled
def skip(buf, p, end, wire):
    """The position after a field's value of wire type ``wire`` at p; -1 if malformed."""
    if wire == 0:
        _, p = varint(buf, p, end)
        return p
    if wire == 1:
        return p + 8 if p + 8 <= end else -1
    if wire == 5:
        return p + 4 if p + 4 <= end else -1
    if wire == 2:
        length, p = varint(buf, p, end)
        if p < 0 or length > np.uint64(end - p):
            return -1
        return p + np.int64(length)
    return -1
