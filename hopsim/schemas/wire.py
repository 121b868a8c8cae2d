"""Protobuf wire encoding of typed rows: one compiled interpreter over a field table.

A message type's rows (see :mod:`hopsim.schemas.rows`) are encoded by following its *program*:
an int64 table with one line per field of the row, in the order protobuf writes them (field
number order, a sub-message's fields inside it), that says where the value sits in the row (a
byte offset from the row's start), how it is written (tag and kind) and when (presence). The
message tree is unrolled: a sub-message is a MESSAGE line, the lines of its fields, and an END
line; a Vector3 held by six fields appears six times, and a repeated sub-message once per element
of its capacity. :meth:`RowLayout.describe` prints a program.

The encoder writes back to front, as protobuf's own upb encoder does: it follows the program from
its last line to its first, each value ending where the one after it starts. A sub-message's END
line comes first that way: if the sub-message is not set, its lines are skipped; if it is, its
end is remembered, and at its MESSAGE line its bytes are written, so its length is known and goes
in front of them, then its tag. One pass per message, no recursion (numba cannot cache recursive
functions reliably).

Values are written from their stored bit pattern: a double or float goes out as its 8 or 4
little-endian bytes, and a proto3 scalar without explicit presence is left out exactly when all
its bytes are zero (+0.0 is left out, -0.0 is written, as protobuf does). Integers are carried as
int64 bit patterns; a varint is written with logical shifts, so a negative int32 or int64 takes
10 bytes.

What compiles, and when: :func:`encode_rows` and the four helpers it calls, once per process at
the first encode of any message type (3-5 s), or loaded from numba's disk cache
(``cache=True``) when the sources have not changed. Their argument types do not depend on the
message type, so no later message type compiles anything: a new type costs only building its
program in Python (about a millisecond).

Byte order: the row's bytes are copied as they are, so the host must be little-endian (every
platform hopsim runs on is).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
from numba import njit

if TYPE_CHECKING:
    from hopsim.schemas.rows import MessageLayout

# compiled with hopsim's policy (disk cache, no fast-math, NumPy's error model). The encoder is one
# loop that never rebinds an array: numba counts references (atomic updates) whenever an array
# variable is rebound in a loop, or handed down through layers of compiled calls, which costs more
# than writing a field. So a full output buffer is grown by the caller, and the helpers of its
# commonest steps are ``inlined`` (pasted into it by numba, which makes them cheaper to run but the
# first compilation slower).
compiled = njit(cache=True, fastmath=False, error_model="numpy")
inlined = njit(cache=True, fastmath=False, error_model="numpy", inline="always")

# -- the program: one int64 line per field occurrence, these columns ---------------------------
KIND = 0  # one of the kinds below
TAG = 1  # (field number << 3) | wire type, as written before each value (or the packed run)
OFFSET = 2  # byte offset in the row of the value (of element 0 when repeated; a sub-message's start)
WIDTH = 3  # bytes per value: 1, 4 or 8; a string's index: 4; a sub-message: its row size
PRESENCE = 4  # byte offset of the field's presence flag, or -1: written when not zero
COUNT = 5  # byte offset of a repeated field's count (uint32), or -1: a singular field
CAPACITY = 6  # a repeated field's capacity (elements the row holds)
PACKED = 7  # 1: a repeated number written as one length-delimited run
ALWAYS = 8  # 1: written even when zero or unset (a map entry's key and value)
ELEMENT = 9  # END of a repeated sub-message's element: its index (set when COUNT says so); else -1
MATCH = 10  # MESSAGE: the line of its END; END: the line of its MESSAGE
SORT = 11  # END of a map entry: how the map's keys are ordered (below); 0 otherwise
COLUMNS = 12

# -- kinds ---------------------------------------------------------------------------------------
VARINT = 0  # int64, uint64, uint32, bool: varint of the stored bits
VARINT_I32 = 1  # int32, enum: sign-extended to 64 bits, then varint
ZIGZAG = 2  # sint32, sint64: zigzag, then varint
FIXED = 3  # double, float, fixed32/64, sfixed32/64: the stored little-endian bytes
BYTES = 4  # string, bytes: an int32 index into the string table; length, then the bytes
MESSAGE = 5  # a sub-message starts: its tag and length go here
END = 6  # a sub-message ends (the columns say when it is set, as for a field)

# -- map key orders. A row holds a map's entries in the order deterministic serialization writes
# them, and the encoder checks it. That order is the upb encoder's (protobuf's Python backend, which
# hopsim pins): integer and bool keys by decreasing unsigned value (an int32 -1 first), string keys
# by increasing bytes with a key before its own prefixes ("ab" before "a" before "").
UNSORTED, BYTES_KEY, INTEGER_KEY = 0, 1, 2

# -- errors reported by encode_rows in its ``error`` array: [code, line, row, value] --------------
NO_ERROR, OVER_CAPACITY, BAD_STRING, UNORDERED_KEYS, NEED_ROOM = 0, 1, 2, 3, 4

_SHORT = [bytes((n,)) for n in range(0x80)]  # the varints of one byte


def varint(n: int) -> bytes:
    """Protobuf's base-128 varint of ``n`` (0 <= n < 2^64), for Python code writing wire bytes."""
    if n < 0x80:
        return _SHORT[n]
    out = bytearray()
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


_LOW57 = (1 << 57) - 1  # a logical shift right by 7 of an int64 keeps these bits
_SIGN_BIT = np.int64(-(1 << 63))
_PREFIX = 15  # the most bytes a tag (5) and a length or varint value (10) take
_INT32 = np.int64(4)  # bytes of a count or string index (a numpy int: a literal 4 would compile _load again)


def _load(data, p, width):
    """The ``width`` (1, 4 or 8) bytes at ``data[p:]``, little-endian, as int64 bits (not sign-extended)."""
    if width == 8:
        return (
            np.int64(data[p])
            | np.int64(data[p + 1]) << 8
            | np.int64(data[p + 2]) << 16
            | np.int64(data[p + 3]) << 24
            | np.int64(data[p + 4]) << 32
            | np.int64(data[p + 5]) << 40
            | np.int64(data[p + 6]) << 48
            | np.int64(data[p + 7]) << 56
        )
    if width == 4:
        return (
            np.int64(data[p]) | np.int64(data[p + 1]) << 8 | np.int64(data[p + 2]) << 16 | np.int64(data[p + 3]) << 24
        )
    return np.int64(data[p])


@inlined
def _store(out, q, v, width):
    """Write the ``width`` (4 or 8) low bytes of ``v`` at ``out[q:]``, little-endian."""
    out[q] = v & 0xFF
    out[q + 1] = (v >> 8) & 0xFF
    out[q + 2] = (v >> 16) & 0xFF
    out[q + 3] = (v >> 24) & 0xFF
    if width == 8:
        out[q + 4] = (v >> 32) & 0xFF
        out[q + 5] = (v >> 40) & 0xFF
        out[q + 6] = (v >> 48) & 0xFF
        out[q + 7] = (v >> 56) & 0xFF


def _put_varint(out, q, v):
    """Write the varint of the 64-bit pattern ``v`` so that it ends at ``out[q]``; return where it starts."""
    if 0 <= v < 0x80:  # one byte: most tags and short lengths
        out[q - 1] = v
        return q - 1
    n = 1
    rest = (v >> 7) & _LOW57
    while rest != 0:
        n += 1
        rest = (rest >> 7) & _LOW57
    q -= n
    for i in range(q, q + n - 1):
        out[i] = (v & 0x7F) | 0x80
        v = (v >> 7) & _LOW57
    out[q + n - 1] = v
    return q


# each twice: pasted into the encoder's commonest steps (a double; a sub-message's length and tag),
# called from the others
_load_inline, _load = inlined(_load), compiled(_load)
_put_varint_inline, _put_varint = inlined(_put_varint), compiled(_put_varint)


@compiled
def _key_order(kind, data, a, b, width, strings, starts):
    """-1, 0 or 1 as the map key at ``data[a:]`` goes on the wire before, with or after the key at
    ``data[b:]`` (``kind``: SORT's value; ``width``: an integer key's bytes)."""
    if kind == BYTES_KEY:
        i, j = _load(data, a, _INT32), _load(data, b, _INT32)
        x0, x1, y0, y1 = starts[i], starts[i + 1], starts[j], starts[j + 1]
        for m in range(min(x1 - x0, y1 - y0)):
            if strings[x0 + m] != strings[y0 + m]:
                return -1 if strings[x0 + m] < strings[y0 + m] else 1
        x, y = y1 - y0, x1 - x0  # one is the other's prefix: the longer first
    else:  # the larger unsigned value first
        x, y = _load(data, b, width) ^ _SIGN_BIT, _load(data, a, width) ^ _SIGN_BIT
    return -1 if x < y else (1 if x > y else 0)


@compiled
def _misplaced_key(kind, data, first_key, stride, count, width, strings, starts):
    """The first of ``count`` map entries (keys at ``data[first_key + i * stride:]``) whose key does
    not come after the previous entry's, or 0."""
    for i in range(1, count):
        a = first_key + (i - 1) * stride
        if _key_order(kind, data, a, a + stride, width, strings, starts) >= 0:
            return i
    return 0


@compiled
def encode_rows(program, data, row_size, strings, starts, ends, error, offsets, out, rows_left, q):
    """Encode the first ``rows_left`` rows in ``data`` (uint8: the rows' bytes, ``row_size`` each) by
    ``program``, the last row first, each message ending where the next row's starts (the last
    row's at ``out[q]``). ``strings``/``starts`` are the string table (entry ``j`` is
    ``strings[starts[j]:starts[j + 1]]``); ``ends`` holds one position per level of sub-messages.

    Returns where the first message starts; ``offsets[r]`` is then where row ``r``'s message starts,
    counted from the end of ``out`` (``offsets[n]`` must be 0). When ``out`` is full, returns with
    ``error`` = ``[NEED_ROOM, -, row, bytes]``: rows after ``row`` are written, the caller moves them
    to the end of a larger buffer and calls again for ``row + 1`` rows. Other errors: ``error`` is
    ``[code, line, row, value]``.
    """
    n_strings = len(starts) - 1
    for r in range(rows_left - 1, -1, -1):  # the last row first: the output is written back to front
        row = r * row_size
        depth = 0  # open sub-messages; ends[i]: where one's bytes end, from the end
        k = len(program) - 1
        while k >= 0:
            kind, tag, width = program[k, KIND], program[k, TAG], program[k, WIDTH]
            p = row + program[k, OFFSET]
            count_at, presence = program[k, COUNT], program[k, PRESENCE]
            if kind == FIXED and count_at < 0 and presence < 0:  # the commonest field, a double, in short
                v = _load_inline(data, p, width)
                if v != 0 or program[k, ALWAYS]:  # by bit pattern: -0.0 is written
                    if q < _PREFIX:
                        error[0], error[2], error[3] = NEED_ROOM, r, _PREFIX
                        return len(out) - offsets[r + 1]
                    q -= width
                    _store(out, q, v, width)
                    q = _put_varint_inline(out, q, tag)
                k -= 1
                continue
            count = _load(data, row + count_at, _INT32) if count_at >= 0 else 1
            if count > program[k, CAPACITY] and count_at >= 0:
                error[0], error[1], error[2], error[3] = OVER_CAPACITY, k, r, count
                return q
            if kind == END:  # a sub-message's end: is it set?
                if program[k, ALWAYS]:
                    present = True
                elif program[k, ELEMENT] >= 0:
                    present = program[k, ELEMENT] < count
                else:
                    present = data[row + presence] != 0
                if not present:
                    k = program[k, MATCH] - 1
                    continue
                if program[k, SORT] != UNSORTED and program[k, ELEMENT] == count - 1:
                    key = program[k, MATCH] + 1  # an entry's first line is its key
                    first_key = row + program[key, OFFSET] - program[k, ELEMENT] * width
                    i = _misplaced_key(
                        program[k, SORT], data, first_key, width, count, program[key, WIDTH], strings, starts
                    )
                    if i > 0:
                        error[0], error[1], error[2], error[3] = UNORDERED_KEYS, k, r, i
                        return q
                ends[depth] = len(out) - q
                depth += 1
                k -= 1
                continue
            if kind == MESSAGE:  # a sub-message's start: its bytes are written, its length is known
                depth -= 1
                length = len(out) - q - ends[depth]
                if q < 2 * _PREFIX:
                    error[0], error[2], error[3] = NEED_ROOM, r, 2 * _PREFIX
                    return len(out) - offsets[r + 1]
                q = _put_varint_inline(out, q, length)
                q = _put_varint_inline(out, q, tag)
                k -= 1
                continue
            # a number, string or bytes field: which values go on the wire, and room for them
            room = _PREFIX * (count + 1)
            if kind == BYTES:
                for i in range(count):
                    s = _load(data, p + 4 * i, _INT32)
                    if s >= n_strings:
                        error[0], error[1], error[2], error[3] = BAD_STRING, k, r, s
                        return q
                    room += starts[s + 1] - starts[s]
            if count_at < 0 and not program[k, ALWAYS]:
                if presence >= 0:
                    count = 1 if data[row + presence] != 0 else 0
                elif kind == BYTES:
                    s = _load(data, p, _INT32)
                    count = 1 if starts[s + 1] != starts[s] else 0  # an empty string is left out
                else:
                    count = 1 if _load(data, p, width) != 0 else 0  # by bit pattern: -0.0 is written
            if q < room:  # out is full: the caller makes room, then this row again
                error[0], error[2], error[3] = NEED_ROOM, r, room
                return len(out) - offsets[r + 1]
            packed = program[k, PACKED]
            end = q
            for i in range(count - 1, -1, -1):
                e = p + i * width
                if kind == FIXED:
                    q -= width
                    for j in range(width):
                        out[q + j] = data[e + j]
                else:
                    if kind == BYTES:
                        s = _load(data, e, _INT32)
                        v = starts[s + 1] - starts[s]
                        q -= v
                        for j in range(v):
                            out[q + j] = strings[starts[s] + j]
                    else:
                        v = _load(data, e, width)
                        if width == 4 and kind != VARINT and v >= 0x80000000:
                            v -= 0x100000000  # an int32's sign
                        if kind == ZIGZAG:
                            v = ((v << 1) ^ (v >> 31)) & 0xFFFFFFFF if width == 4 else (v << 1) ^ (v >> 63)
                    q = _put_varint(out, q, v)
                if not packed:
                    q = _put_varint(out, q, tag)
            if packed and count > 0:
                q = _put_varint(out, q, end - q)
                q = _put_varint(out, q, tag)
            k -= 1
        offsets[r] = len(out) - q  # where the row's message starts, counted from the end
    return q


# -- building a program ---------------------------------------------------------------------------
_WIRE_TYPE = {VARINT: 0, VARINT_I32: 0, ZIGZAG: 0, BYTES: 2, MESSAGE: 2}  # FIXED: 1 (8 bytes) or 5 (4)


def build_program(root: MessageLayout) -> tuple[np.ndarray, list[str]]:
    """The program of ``root``'s rows, and a name per line (the field's path)."""
    lines: list[list[int]] = []
    names: list[str] = []

    def add(layout: MessageLayout, base: int, path: str) -> None:
        at = layout.dtype.fields
        for f in sorted(layout.fields, key=lambda f: f.descriptor.number):
            line = [0] * COLUMNS
            packed = f.repeated and f.sub is None and f.kind != BYTES and f.descriptor.is_packed
            wire_type = 2 if packed else _WIRE_TYPE.get(f.kind, 1 if f.dtype.itemsize == 8 else 5)
            line[KIND] = f.kind
            line[TAG] = (f.descriptor.number << 3) | wire_type
            line[OFFSET] = base + at[f.name][1]
            line[WIDTH] = f.dtype.itemsize
            line[PRESENCE] = base + at["has_" + f.name][1] if f.presence else -1
            line[COUNT] = base + at[f.name + "_count"][1] if f.repeated else -1
            line[CAPACITY] = f.capacity
            line[PACKED] = int(packed)
            line[ALWAYS] = int(f.always)
            line[ELEMENT] = -1
            name = f"{path}.{f.name}"
            if f.sub is None:
                lines.append(line)
                names.append(name)
                continue
            for e in range(f.capacity if f.repeated else 1):  # a sub-message: MESSAGE, its fields, END
                start = list(line)
                start[OFFSET] += e * f.dtype.itemsize
                element = f"{name}[{e}]" if f.repeated else name
                first = len(lines)
                lines.append(start)
                names.append(element)
                add(f.sub, start[OFFSET], element)
                end = list(start)
                end[KIND], end[MATCH] = END, first
                end[ELEMENT] = e if f.repeated else -1
                if f.is_map:
                    end[SORT] = BYTES_KEY if f.sub.fields[0].kind == BYTES else INTEGER_KEY
                start[MATCH] = len(lines)
                lines.append(end)
                names.append(element)

    add(root, 0, root.descriptor.full_name)
    return np.array(lines, np.int64).reshape(-1, COLUMNS), names


def nesting(layout: MessageLayout) -> int:
    """Levels of sub-messages in ``layout`` (0: none)."""
    return max((1 + nesting(f.sub) for f in layout.fields if f.sub is not None), default=0)


def describe(program: np.ndarray, names: list[str]) -> str:
    """``program`` as a table: line, field, then the columns."""
    kinds = ["VARINT", "VARINT_I32", "ZIGZAG", "FIXED", "BYTES", "MESSAGE", "END"]
    columns = [
        "TAG",
        "OFFSET",
        "WIDTH",
        "PRESENCE",
        "COUNT",
        "CAPACITY",
        "PACKED",
        "ALWAYS",
        "ELEMENT",
        "MATCH",
        "SORT",
    ]
    width = max(len(name) for name in names) + 2
    head = f"{'line':>4}  {'field':<{width}}{'KIND':<11}" + "".join(f"{c:>9}" for c in columns)
    return "\n".join(
        [head]
        + [
            f"{k:>4}  {names[k]:<{width}}{kinds[line[KIND]]:<11}" + "".join(f"{v:>9}" for v in line[1:])
            for k, line in enumerate(program.tolist())
        ]
    )
