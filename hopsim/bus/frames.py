"""A recording's topics as tables: one Parquet file per topic, one column per leaf field.

:func:`export` writes every topic of the stream (or those ``topics`` picks, by name or
shell-style pattern) to ``<out>/<topic>.parquet`` (``v1/state`` is ``v1/state.parquet``), and
:func:`read_frame` reads one back as a pandas (or polars) DataFrame. The columns are

- ``t_ns`` (int64): the message's simulation time (ns), and ``t_s`` (float64, seconds);
- one column per leaf field of the payload, named by its path: ``r_BN_N.x``, ``mass``,
  ``vehicle``. Numbers keep their protobuf type (double, float, int32, int64, uint32, uint64,
  bool; an enum is its number, int32), strings are strings and bytes binary. A payload field
  named ``t_ns`` or ``t_s`` (a command's own instant) is the column ``payload.t_ns``;
- a repeated number is one column of lists (``thrust_N``: a list<double> per message), and so
  is a repeated string. A list, not a column per element nor a fixed-size list: the count may
  change from message to message (a batch of IMU samples, the beacons of one cycle), and the
  columns are fixed before the file has been read to its end. ``np.stack(df["thrust_N"])``
  makes the matrix when every message has the same count;
- a repeated message (``planned`` of a valve state) is one list column per leaf of it
  (``planned.t_ns``, ``planned.open``), element k of each list being element k of the field.
  Lists inside those (a repeated field of a repeated message) are left out.

An absent field reads as its default (0, false, empty), as protobuf's own decoder gives it.
Every file carries the recording's metadata (the run's description ``hopsim.run`` and its result
``hopsim.result``, each as JSON) and the topic and its type (``hopsim.topic``, ``hopsim.type``)
as Parquet key-value metadata; :func:`read_frame` puts them in ``DataFrame.attrs``.

The file is read chunk by chunk, never whole: each chunk is read from the file, decompressed and
checked (:func:`hopsim.bus.chunks.inflate`), and its messages are decoded by a compiled function
that follows each type's fields through the protobuf wire format (one pass over every message,
no message object), into columns. Columns are written as row groups whenever what is held
reaches :data:`FLUSH_BYTES`, so memory is a few chunks plus the columns not yet written,
whatever the recording's length. A damaged chunk is skipped and counted (its messages are
lost); a killed run's file (no summary) is read through the channel records inside its chunks.
Foxglove's channels (a view derived from the stream, not part of it) are not exported.

Each file is written under its partial name beside its target and renamed over it only when
every file is complete (:mod:`hopsim.bus.atomic`).
"""

from __future__ import annotations

import contextlib
import fnmatch
import json
import struct
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import quote

import numpy as np

from hopsim.bus.atomic import PendingOutput, commit_all
from hopsim.bus.chunks import (
    CHANNEL,
    CHUNK,
    FOOTER,
    MAGIC,
    MAX_CHUNK_BYTES,
    METADATA,
    RECORD_HEAD,
    SCHEMA,
    BudgetSpent,
    DamagedChunk,
    Malformed,
    ReadingBudget,
    chunk_head,
    inflate,
    string_at,
    string_map_at,
)
from hopsim.bus.recorder import METADATA_SHA256, log_time_offset, metadata_intact
from hopsim.bus.recording_file import check_recording_file
from hopsim.bus.scene import is_derived
from hopsim.bus.wire import compiled, little_endian, skip, varint

FLUSH_BYTES = 64 << 20
"""Decoded columns held before they are written as row groups (bytes)."""

TIME_COLUMNS = ("t_ns", "t_s")
RENAMED = "payload."  # the prefix of a payload field whose name is a time column's
MAX_DEPTH = 8  # singular messages nested deeper than this are left out (a recursive type)
MAX_METADATA_BYTES = 16 << 20  # a metadata record longer than this is damage, not read
MAX_SUMMARY_BYTES = 1 << 30  # a summary longer than this is not read (the file is walked instead)
CHUNK_INDEX, METADATA_INDEX = 0x08, 0x0D

# what the decoder does with a field of a plan node
SKIP, SCALAR, REPEATED, STRING, REPEATED_STRING, MESSAGE_FIELD, GROUP = range(7)
# how a number is read: its wire type's bytes as raw 64 bits (a zigzag one decoded)
VARINT, ZIGZAG, BITS64, BITS32 = range(4)
_WIRE_OF = np.array([0, 0, 1, 5], dtype=np.int64)

# protobuf's FieldDescriptor types
_DOUBLE, _FLOAT, _INT64, _UINT64, _INT32, _FIXED64, _FIXED32, _BOOL, _STRING = 1, 2, 3, 4, 5, 6, 7, 8, 9
_MESSAGE, _BYTES, _UINT32, _ENUM, _SFIXED32, _SFIXED64, _SINT32, _SINT64 = 11, 12, 13, 14, 15, 16, 17, 18
_READ = {
    _DOUBLE: BITS64,
    _FLOAT: BITS32,
    _INT64: VARINT,
    _UINT64: VARINT,
    _INT32: VARINT,
    _FIXED64: BITS64,
    _FIXED32: BITS32,
    _BOOL: VARINT,
    _UINT32: VARINT,
    _ENUM: VARINT,
    _SFIXED32: BITS32,
    _SFIXED64: BITS64,
    _SINT32: ZIGZAG,
    _SINT64: ZIGZAG,
}


class FrameError(ValueError):
    """A file that is not a recording, or a topic or field the recording does not have."""


@dataclass
class ExportReport:
    topics: dict[str, int] = field(default_factory=dict)  # rows written per topic
    files: list[Path] = field(default_factory=list)
    chunks: int = 0
    damaged_chunks: int = 0  # skipped: damaged (their messages are lost)
    left_out: dict[str, str] = field(default_factory=dict)  # topic: why it was not exported
    stopped: str | None = None  # why reading stopped before the file's end, if it did


# ------------------------------------------------------------------------------ the compiled decoder


@compiled
def _raw(buf, p, end, how):
    """(raw 64 bits, next position) of a number read as ``how`` at p; next position -1 if
    malformed."""
    if how == BITS64:
        if p + 8 > end:
            return np.uint64(0), -1
        return little_endian(buf, p, 8), p + 8
    if how == BITS32:
        if p + 4 > end:
            return np.uint64(0), -1
        return little_endian(buf, p, 4), p + 4
    raw, q = varint(buf, p, end)
    if how == ZIGZAG:
        raw = (raw >> np.uint64(1)) ^ (np.uint64(0) - (raw & np.uint64(1)))
    return raw, q


@compiled
def _message(buf, start, stop, row, root, act, arg, how, group_of, scal, soff, slen, el, m, groups, k, counts, stack):
    """Decode the message in buf[start:stop] (plan node ``root``) as row ``row``: singular leaves
    of the top level into ``scal`` (raw bits) and ``soff``/``slen`` (strings: where they lie),
    every other leaf as an element of ``el`` (target, row, instance, raw bits or offset, length),
    every element of a repeated message into ``groups`` (group, row). (status, m, k): status 1
    done, 0 malformed, -1 an output is full."""
    p, end, node, inst, sp = start, stop, root, np.int64(-1), 0
    n_numbers = act.shape[1]
    while True:
        if p >= end:
            if sp == 0:
                return 1, m, k
            sp -= 1
            end, node, inst = stack[sp, 0], stack[sp, 1], stack[sp, 2]
            continue
        key, p = varint(buf, p, end)
        if p < 0:
            return 0, m, k
        number, wire = np.int64(key >> np.uint64(3)), np.int64(key & np.uint64(7))
        a = act[node, number] if number < n_numbers else SKIP
        if a == SKIP:
            p = skip(buf, p, end, wire)
            if p < 0:
                return 0, m, k
            continue
        target, h = arg[node, number], how[node, number]
        if a in (SCALAR, REPEATED):
            if wire == 2 and a == REPEATED:  # packed
                length, q = varint(buf, p, end)
                if q < 0 or length > np.uint64(end - q):
                    return 0, m, k
                packed_end = q + np.int64(length)
                while q < packed_end:
                    raw, q = _raw(buf, q, packed_end, h)
                    if q < 0:
                        return 0, m, k
                    if m == el.shape[0]:
                        return -1, m, k
                    el[m, 0], el[m, 1], el[m, 2], el[m, 3], el[m, 4] = target, row, inst, np.int64(raw), 0
                    m += 1
                p = packed_end
                continue
            if wire != _WIRE_OF[h]:
                return 0, m, k
            raw, p = _raw(buf, p, end, h)
            if p < 0:
                return 0, m, k
            if a == SCALAR and inst < 0:
                scal[row, target] = raw
            else:
                if m == el.shape[0]:
                    return -1, m, k
                el[m, 0], el[m, 1], el[m, 2], el[m, 3], el[m, 4] = target, row, inst, np.int64(raw), 0
                m += 1
            continue
        if wire != 2:
            return 0, m, k
        length, q = varint(buf, p, end)
        if q < 0 or length > np.uint64(end - q):
            return 0, m, k
        sub_end = q + np.int64(length)
        if a == STRING and inst < 0:
            soff[row, target], slen[row, target] = q, np.int64(length)
        elif a in (STRING, REPEATED_STRING):
            if m == el.shape[0]:
                return -1, m, k
            el[m, 0], el[m, 1], el[m, 2], el[m, 3], el[m, 4] = target, row, inst, q, np.int64(length)
            m += 1
        else:  # a message: descend into it
            if sp == stack.shape[0]:
                return 0, m, k
            stack[sp, 0], stack[sp, 1], stack[sp, 2] = end, node, inst
            sp += 1
            if a == GROUP:  # an element of a repeated message: a new instance of its group
                if k == groups.shape[0]:
                    return -1, m, k
                g = group_of[target]
                groups[k, 0], groups[k, 1] = g, row
                k += 1
                inst = counts[g]
                counts[g] += 1
            node, end, p = target, sub_end, q
            continue
        p = sub_end


@compiled
def _scan(buf, wanted, root, act, arg, how, group_of, rows, scal, soff, slen, el, groups, counts, stack):
    """Decode every message record of a wanted channel in the decompressed chunk ``buf`` (all of
    one type, plan node ``root``): rows[i] = (channel, log time); (rows, elements, group
    instances, status): status 1 done, 0 malformed, -1 an output is full (grow, scan again)."""
    p, size = 0, len(buf)
    n = m = k = 0
    counts[:] = 0
    while p + 9 <= size:
        opcode = buf[p]
        length = np.int64(little_endian(buf, p + 1, 8))
        body = p + 9
        if length < 0 or length > size - body:
            return n, m, k, 0
        if opcode == 0x05 and length >= 22:
            channel = np.int64(little_endian(buf, body, 2))
            if channel < len(wanted) and wanted[channel]:
                if n == rows.shape[0]:
                    return n, m, k, -1
                rows[n, 0], rows[n, 1] = channel, np.int64(little_endian(buf, body + 6, 8))
                scal[n, :] = 0
                soff[n, :] = 0
                slen[n, :] = 0
                status, m, k = _message(
                    buf, body + 22, body + length, n, root, act, arg, how, group_of, scal, soff, slen, el, m, groups,
                    k, counts, stack,
                )  # fmt: skip
                if status != 1:
                    return n, m, k, status
                n += 1
        p = body + length
    return n, m, k, 1 if p == size else 0


@compiled
def _gather(buf, off, length):
    """The byte strings buf[off[i]:off[i] + length[i]] end to end, and their offsets (int32)."""
    n = len(off)
    offsets = np.empty(n + 1, dtype=np.int32)
    offsets[0] = 0
    total = 0
    for i in range(n):
        total += length[i]
        offsets[i + 1] = total
    out = np.empty(total, dtype=np.uint8)
    at = 0
    for i in range(n):
        out[at : at + length[i]] = buf[off[i] : off[i] + length[i]]
        at += length[i]
    return offsets, out


# ------------------------------------------------------------------------------ plans: types as columns


@dataclass
class Leaf:
    """One column: its name, its protobuf type, where the decoder puts it (``place``: scalar,
    string, list, list_string, group_scalar, group_string) and at which index or target."""

    name: str
    ftype: int
    place: str
    index: int
    group: int = -1


class Plan:
    """What the decoder does with the fields of one message type (and of the messages in it)."""

    def __init__(self, type_name: str, descriptor, fields: list[str] | None = None):
        self.type_name = type_name
        self.leaves: list[Leaf] = []
        self.n_scalar = self.n_string = self.n_target = self.n_group = 0
        rows_act, rows_arg, rows_how, self.group_of = [], [], [], []
        wanted = None if fields is None else {f.removeprefix(RENAMED): False for f in fields}

        def selected(path: str) -> bool:
            if wanted is None:
                return True
            hit = False
            for f in wanted:
                if path == f or path.startswith(f + "."):
                    wanted[f] = hit = True
            return hit

        def under(path: str) -> bool:  # whether a selection lies at or below the message at path
            return wanted is None or any(
                f == path or f.startswith(path + ".") or path.startswith(f + ".") for f in wanted
            )

        def node(descriptor, prefix: str, group: int, depth: int) -> int:
            index = len(rows_act)
            rows_act.append(None)
            size = max((fd.number for fd in descriptor.fields), default=0) + 1
            act, arg, how = np.zeros(size, np.int8), np.zeros(size, np.int64), np.zeros(size, np.int8)
            rows_arg.append(arg)
            rows_how.append(how)
            self.group_of.append(-1)
            for fd in descriptor.fields:
                path = prefix + fd.name
                name = RENAMED + path if path in TIME_COLUMNS else path
                n = fd.number
                if fd.type == _MESSAGE:
                    if depth >= MAX_DEPTH or not under(path):
                        continue
                    if fd.is_repeated:
                        if group >= 0:
                            continue  # lists inside lists are left out
                        g = self.n_group
                        self.n_group += 1
                        child = node(fd.message_type, path + ".", g, depth + 1)
                        self.group_of[child] = g
                        act[n], arg[n] = GROUP, child
                    else:
                        act[n], arg[n] = MESSAGE_FIELD, node(fd.message_type, path + ".", group, depth + 1)
                    continue
                if not selected(path):
                    continue
                text = fd.type in (_STRING, _BYTES)
                if fd.type not in _READ and not text:
                    continue
                how[n] = _READ.get(fd.type, 0)
                if fd.is_repeated and group >= 0:
                    continue  # lists inside lists are left out
                if group >= 0 or fd.is_repeated:
                    if group >= 0:
                        place = "group_string" if text else "group_scalar"
                    else:
                        place = "list_string" if text else "list"
                    if text:
                        act[n] = REPEATED_STRING if fd.is_repeated else STRING
                    else:
                        act[n] = REPEATED if fd.is_repeated else SCALAR
                    arg[n] = self.n_target
                    self.leaves.append(Leaf(name, fd.type, place, self.n_target, group))
                    self.n_target += 1
                elif text:
                    act[n], arg[n] = STRING, self.n_string
                    self.leaves.append(Leaf(name, fd.type, "string", self.n_string))
                    self.n_string += 1
                else:
                    act[n], arg[n] = SCALAR, self.n_scalar
                    self.leaves.append(Leaf(name, fd.type, "scalar", self.n_scalar))
                    self.n_scalar += 1
            rows_act[index] = act
            return index

        node(descriptor, "", -1, 0)
        missing = [f for f, hit in (wanted or {}).items() if not hit and f not in TIME_COLUMNS]  # always there
        if missing:
            names = ", ".join(leaf.name for leaf in Plan(type_name, descriptor).leaves)
            raise FrameError(f"{type_name} has no field {', '.join(map(repr, missing))}; its fields are {names}")
        width = max(len(a) for a in rows_act)
        self.act = np.zeros((len(rows_act), width), np.int8)
        self.arg = np.zeros((len(rows_act), width), np.int64)
        self.how = np.zeros((len(rows_act), width), np.int8)
        for i, (a, b, c) in enumerate(zip(rows_act, rows_arg, rows_how)):
            self.act[i, : len(a)], self.arg[i, : len(b)], self.how[i, : len(c)] = a, b, c
        # group_of is indexed by a GROUP field's target (its child node)
        self.group_of = np.array(self.group_of, dtype=np.int64)
        self.schema = _schema(self)


def _arrow_type(ftype: int):
    import pyarrow as pa

    return {
        _DOUBLE: pa.float64(),
        _FLOAT: pa.float32(),
        _INT64: pa.int64(),
        _SINT64: pa.int64(),
        _SFIXED64: pa.int64(),
        _INT32: pa.int32(),
        _SINT32: pa.int32(),
        _SFIXED32: pa.int32(),
        _ENUM: pa.int32(),
        _UINT64: pa.uint64(),
        _FIXED64: pa.uint64(),
        _UINT32: pa.uint32(),
        _FIXED32: pa.uint32(),
        _BOOL: pa.bool_(),
        _STRING: pa.string(),
        _BYTES: pa.binary(),
    }[ftype]


def _schema(plan: Plan):
    import pyarrow as pa

    fields = [pa.field("t_ns", pa.int64()), pa.field("t_s", pa.float64())]
    for leaf in plan.leaves:
        t = _arrow_type(leaf.ftype)
        fields.append(pa.field(leaf.name, t if leaf.place in ("scalar", "string") else pa.list_(t)))
    return pa.schema(fields)


def _typed(raw: np.ndarray, ftype: int) -> np.ndarray:
    """Raw 64-bit values (uint64) as the numbers of protobuf type ``ftype``."""
    if ftype == _DOUBLE:
        return raw.view(np.float64)
    if ftype == _FLOAT:
        return raw.astype(np.uint32).view(np.float32)
    if ftype in (_INT64, _SINT64, _SFIXED64):
        return raw.view(np.int64)
    if ftype in (_INT32, _SINT32, _ENUM):
        return raw.view(np.int64).astype(np.int32)
    if ftype == _SFIXED32:
        return raw.astype(np.uint32).view(np.int32)
    if ftype in (_UINT32, _FIXED32):
        return raw.astype(np.uint32)
    if ftype == _BOOL:
        return raw != 0
    return raw


class _Buffers:
    """The decoder's outputs, reused from chunk to chunk and grown when one is full."""

    def __init__(self, plan: Plan):
        self.plan = plan
        self.rows = np.empty((1024, 2), np.int64)
        self.scal = np.empty((1024, max(plan.n_scalar, 1)), np.uint64)
        self.soff = np.empty((1024, max(plan.n_string, 1)), np.int64)
        self.slen = np.empty((1024, max(plan.n_string, 1)), np.int64)
        self.el = np.empty((4096, 5), np.int64)
        self.groups = np.empty((1024, 2), np.int64)
        self.counts = np.zeros(max(plan.n_group, 1), np.int64)
        self.stack = np.empty((MAX_DEPTH + 2, 3), np.int64)

    def scan(self, buf: np.ndarray, wanted: np.ndarray):
        plan = self.plan
        while True:
            n, m, k, status = _scan(
                buf, wanted, 0, plan.act, plan.arg, plan.how, plan.group_of, self.rows, self.scal, self.soff,
                self.slen, self.el, self.groups, self.counts, self.stack,
            )  # fmt: skip
            if status != -1:
                return n, m, k, status == 1
            if n == len(self.rows):
                grow = 2 * len(self.rows)
                self.rows = np.empty((grow, 2), np.int64)
                self.scal = np.empty((grow, self.scal.shape[1]), np.uint64)
                self.soff = np.empty((grow, self.soff.shape[1]), np.int64)
                self.slen = np.empty((grow, self.slen.shape[1]), np.int64)
            if m == len(self.el):
                self.el = np.empty((2 * len(self.el), 5), np.int64)
            if k == len(self.groups):
                self.groups = np.empty((2 * len(self.groups), 2), np.int64)


def _batch(plan: Plan, bufs: _Buffers, chunk, n: int, m: int, k: int, offsets: np.ndarray):
    """The rows decoded from one chunk as an Arrow record batch (plus the channel column)."""
    import pyarrow as pa

    rows = bufs.rows[:n]
    channel = rows[:, 0].copy()
    t_ns = rows[:, 1] - offsets[channel]
    arrays = [pa.array(t_ns), pa.array(t_ns / 1e9)]
    el = bufs.el[:m]
    order = np.argsort(el[:, 0], kind="stable")
    el = el[order]
    bounds = np.searchsorted(el[:, 0], np.arange(plan.n_target + 1))
    groups = bufs.groups[:k]
    group_offsets = {}
    for leaf, pa_field in zip(plan.leaves, list(plan.schema)[2:]):
        t = pa_field.type
        if leaf.place == "scalar":
            arrays.append(pa.array(_typed(bufs.scal[:n, leaf.index].copy(), leaf.ftype), type=t))
            continue
        if leaf.place == "string":
            arrays.append(_strings(chunk, bufs.soff[:n, leaf.index], bufs.slen[:n, leaf.index], t))
            continue
        mine = el[bounds[leaf.index] : bounds[leaf.index + 1]]
        if leaf.place in ("list", "list_string"):
            list_offsets = _offsets(mine[:, 1], n)
            if leaf.place == "list":
                values = pa.array(_typed(mine[:, 3].view(np.uint64), leaf.ftype), type=t.value_type)
            else:
                values = _strings(chunk, mine[:, 3], mine[:, 4], t.value_type)
        else:  # a leaf of a repeated message: one value per element (its default where absent)
            if leaf.group not in group_offsets:
                group_offsets[leaf.group] = _offsets(groups[groups[:, 0] == leaf.group, 1], n)
            list_offsets = group_offsets[leaf.group]
            count = int(list_offsets[-1])
            if leaf.place == "group_scalar":
                dense = np.zeros(count, np.uint64)
                dense[mine[:, 2]] = mine[:, 3].view(np.uint64)
                values = pa.array(_typed(dense, leaf.ftype), type=t.value_type)
            else:
                off, length = np.zeros(count, np.int64), np.zeros(count, np.int64)
                off[mine[:, 2]], length[mine[:, 2]] = mine[:, 3], mine[:, 4]
                values = _strings(chunk, off, length, t.value_type)
        arrays.append(pa.ListArray.from_arrays(pa.array(list_offsets), values, type=t))
    return pa.RecordBatch.from_arrays(arrays, schema=plan.schema), channel


def _offsets(rows_of: np.ndarray, n: int) -> np.ndarray:
    """List offsets (int32) of ``n`` rows from the row of each element (in row order)."""
    out = np.zeros(n + 1, np.int32)
    np.cumsum(np.bincount(rows_of, minlength=n), out=out[1:])
    return out


def _strings(chunk: np.ndarray, off: np.ndarray, length: np.ndarray, t):
    import pyarrow as pa

    offsets, data = _gather(chunk, np.ascontiguousarray(off), np.ascontiguousarray(length))
    array = pa.Array.from_buffers(t, len(off), [None, pa.py_buffer(offsets), pa.py_buffer(data)])
    if t == pa.string():
        array.validate(full=True)  # UTF-8, as protobuf requires of a string
    return array


# ------------------------------------------------------------------------------ the file, read by parts


@dataclass
class Channel:
    topic: str
    type_name: str
    source: str
    offset: int  # log time minus simulation time (ns)
    derived: bool


class Recording:
    """A recording's top-level records walked from its start by reading their heads (chunks are
    read one at a time, when asked): where its chunks lie, its metadata and its channels."""

    def __init__(self, path: str | Path):
        self.path = check_recording_file(path, FrameError)
        self.size = self.path.stat().st_size
        self.file = open(self.path, "rb", buffering=1 << 20)  # noqa: SIM115 (held open: close() closes it)
        if self.file.read(len(MAGIC)) != MAGIC:
            self.file.close()
            raise FrameError(f"{self.path} is not a recording (not an MCAP file, or its first bytes are damaged)")
        self.chunks: list[tuple[int, int]] = []  # (offset of the body, length) of each chunk record
        self.metadata: dict[str, dict[str, str]] = {}
        self.schemas: dict[int, str] = {}
        self.channels: dict[int, Channel] = {}
        self.budget = ReadingBudget(self.size)
        self.damaged = 0
        self.stopped: str | None = None
        if not self._from_summary():
            self._walk()
        if not self.channels:  # a killed run's file: its channels are in its chunks
            for buf in self.buffers():
                self._records_of(buf)

    def close(self) -> None:
        self.file.close()

    def _from_summary(self) -> bool:
        """Take the chunks (from their index), channels and metadata records of the file's
        summary; False (nothing taken) if it has none, or one that is damaged."""
        f, size = self.file, self.size
        footer = size - len(MAGIC) - 29
        if footer < len(MAGIC):
            return False
        f.seek(footer)
        tail = f.read(29 + len(MAGIC))
        if tail[0] != FOOTER or tail[29:] != MAGIC:
            return False
        summary_start, offsets_start, crc = struct.unpack_from("<QQI", tail, 9)
        end = offsets_start or footer
        if not len(MAGIC) < summary_start <= end <= footer or footer - summary_start > MAX_SUMMARY_BYTES:
            return False
        f.seek(summary_start)
        data = f.read(footer + 25 - summary_start)
        if crc and zlib.crc32(data) != crc:
            return False
        chunks, metadata = [], []
        schemas, channels = dict(self.schemas), dict(self.channels)
        p, stop = 0, end - summary_start
        try:
            while p + 9 <= stop:
                opcode, length = RECORD_HEAD.unpack_from(data, p)
                body, q = p + 9, p + 9 + length
                if q > stop:
                    return False
                if opcode == SCHEMA:
                    (sid,) = struct.unpack_from("<H", data, body)
                    self.schemas[sid], _ = string_at(data, body + 2, q)
                elif opcode == CHANNEL:
                    self._channel(data, body, q)
                elif opcode == CHUNK_INDEX:
                    at, record_length = struct.unpack_from("<QQ", data, body + 16)
                    if not len(MAGIC) <= at < at + record_length <= summary_start or record_length < 9:
                        raise Malformed("a chunk index that points outside the data")
                    chunks.append((at + 9, record_length - 9))
                elif opcode == METADATA_INDEX:
                    metadata.append(struct.unpack_from("<QQ", data, body))
                p = q
        except (Malformed, struct.error):
            self.schemas, self.channels = schemas, channels
            return False
        if not chunks:
            self.schemas, self.channels = schemas, channels
            return False
        self.chunks = sorted(chunks)
        for at, record_length in metadata:
            if record_length <= MAX_METADATA_BYTES + 9 and at + record_length <= summary_start:
                f.seek(at)
                record = f.read(record_length)
                if record[0] == METADATA:
                    with contextlib.suppress(Malformed, struct.error):  # a damaged record: left out
                        self._top_record(METADATA, record[9:])
        return True

    def _walk(self) -> None:
        f, p, size = self.file, len(MAGIC), self.size
        while p + 9 <= size:
            f.seek(p)
            opcode, length = RECORD_HEAD.unpack(f.read(9))
            body, end = p + 9, p + 9 + length
            if end > size:
                return  # a killed run's last, unfinished record
            if opcode == CHUNK:
                self.chunks.append((body, length))
            elif opcode == FOOTER:
                return
            elif opcode in (METADATA, SCHEMA, CHANNEL) and length <= MAX_METADATA_BYTES:
                with contextlib.suppress(Malformed, struct.error):  # a damaged record: left out
                    self._top_record(opcode, f.read(length))
            p = end

    def _top_record(self, opcode: int, data: bytes) -> None:
        if opcode == METADATA:
            name, q = string_at(data, 0, len(data))
            record, _ = string_map_at(data, q, len(data))
            if metadata_intact(name, record) is not False:
                record.pop(METADATA_SHA256, None)
                self.metadata[name] = record
        elif opcode == SCHEMA:
            (sid,) = struct.unpack_from("<H", data, 0)
            self.schemas[sid], _ = string_at(data, 2, len(data))
        else:
            self._channel(data, 0, len(data))

    def _channel(self, buf, body: int, end: int) -> None:
        cid, sid = struct.unpack_from("<HH", buf, body)
        topic, p = string_at(buf, body + 4, end)
        _, p = string_at(buf, p, end)
        meta, _ = string_map_at(buf, p, end)
        self.channels.setdefault(
            cid,
            Channel(topic, self.schemas.get(sid, ""), meta.get("source", ""), log_time_offset(meta), is_derived(meta)),
        )

    def _records_of(self, buf) -> None:
        """Take the schema and channel records of a decompressed chunk."""
        p, size = 0, len(buf)
        try:
            while p + 9 <= size:
                opcode, length = RECORD_HEAD.unpack_from(buf, p)
                body, end = p + 9, p + 9 + length
                if end > size:
                    return
                if opcode == SCHEMA:
                    (sid,) = struct.unpack_from("<H", buf, body)
                    self.schemas[sid], _ = string_at(buf, body + 2, end)
                elif opcode == CHANNEL:
                    self._channel(buf, body, end)
                p = end
        except (Malformed, struct.error):
            return

    def buffers(self):
        """The decompressed records of every readable chunk, in file order (a damaged one is
        counted and skipped)."""
        self.damaged = 0
        self.budget = ReadingBudget(self.size)
        for body, length in self.chunks:
            if self.stopped is not None:
                self.damaged += 1
                continue
            if length > 2 * MAX_CHUNK_BYTES:
                self.damaged += 1
                continue
            self.file.seek(body)
            record = self.file.read(length)
            try:
                head = chunk_head(record, 0, len(record))
                buf = inflate(record, head, self.budget)
            except DamagedChunk:
                self.damaged += 1
                continue
            except BudgetSpent as spent:
                self.stopped = str(spent)
                self.damaged += 1
                continue
            yield buf

    def topics(self) -> dict[str, str]:
        """The stream's topics and their types (Foxglove's derived channels left out)."""
        return {c.topic: c.type_name for c in sorted(self.channels.values(), key=lambda c: c.topic) if not c.derived}


# ------------------------------------------------------------------------------ export


def topic_path(topic: str) -> Path:
    """The file of ``topic`` in an export (relative): each part of the topic a directory, the
    last ``<part>.parquet``; characters that do not belong in a file name are %-escaped, and so is
    a part that is empty, ``.`` or ``..``."""
    parts = []
    for part in topic.split("/"):
        text = quote(part, safe="")
        if text in ("", ".", ".."):
            text = "%2E" * len(text) or "%00"
        parts.append(text)
    return Path(*parts[:-1], parts[-1] + ".parquet")


def _pick_topics(recording: Recording, topics: list[str] | None) -> dict[str, str]:
    """{topic: type} of the topics to export: every topic of the stream, or those ``topics``
    names (exactly, or as shell-style patterns)."""
    available = recording.topics()
    if not topics:
        return available
    picked = {}
    for pattern in topics:
        found = [t for t in available if fnmatch.fnmatchcase(t, pattern)]
        if not found:
            raise FrameError(
                f"the recording has no topic {pattern!r}; its topics are {_listed(available)}"
                if available
                else f"the recording has no topic {pattern!r}: it holds no messages of the stream"
            )
        picked.update({t: available[t] for t in found})
    return dict(sorted(picked.items()))


def _listed(names, most: int = 30) -> str:
    names = list(names)
    return ", ".join(names[:most]) + (f" ... ({len(names)} in all)" if len(names) > most else "")


def _plans(picked: dict[str, str], fields: list[str] | None, report: ExportReport) -> dict[str, Plan]:
    """A plan per message type of the picked topics (a topic of a type hopsim does not know is
    left out, and said)."""
    from hopsim.schemas import message_class

    plans = {}
    for topic, type_name in picked.items():
        if type_name in plans:
            continue
        cls = message_class(type_name)
        if cls is None:
            report.left_out[topic] = f"its messages are of type {type_name!r}, which hopsim does not know"
            continue
        try:
            plans[type_name] = Plan(type_name, cls.DESCRIPTOR, fields)
        except FrameError as e:
            raise FrameError(f"topic {topic}: {e}") from None
    return plans


def _file_metadata(recording: Recording, topic: str, type_name: str) -> dict[bytes, bytes]:
    meta = {name.encode(): json.dumps(record, sort_keys=True).encode() for name, record in recording.metadata.items()}
    meta.update({b"hopsim.topic": topic.encode(), b"hopsim.type": type_name.encode()})
    meta[b"hopsim.recording"] = recording.path.name.encode()
    return meta


def _decode(recording: Recording, picked: dict[str, str], plans: dict[str, Plan], sink, report: ExportReport):
    """Decode the picked topics chunk by chunk; ``sink(topic index, table)`` receives the rows held
    each time they reach :data:`FLUSH_BYTES`, and at the end (each topic's rows in file order)."""
    import pyarrow as pa

    topic_list = list(picked)
    index_of = {t: i for i, t in enumerate(topic_list)}
    size = max(recording.channels, default=0) + 1
    topic_of = np.full(size, -1, np.int64)
    offsets = np.zeros(size, np.int64)
    wanted = {name: np.zeros(size, np.bool_) for name in plans}
    for cid, c in recording.channels.items():
        if c.topic in index_of and c.type_name in plans and not c.derived:
            topic_of[cid], offsets[cid] = index_of[c.topic], c.offset
            wanted[c.type_name][cid] = True
    bufs = {name: _Buffers(plan) for name, plan in plans.items()}
    held: dict[str, list] = {name: [] for name in plans}
    held_bytes = 0

    def flush():
        for name, batches in held.items():
            if not batches:
                continue
            table = pa.Table.from_batches([b for b, _ in batches], schema=plans[name].schema)
            which = topic_of[np.concatenate([c for _, c in batches])]
            order = np.argsort(which, kind="stable")
            which = which[order]
            table = table.take(order)
            starts = np.flatnonzero(np.r_[True, which[1:] != which[:-1]])
            ends = np.r_[starts[1:], len(which)]
            for a, b in zip(starts.tolist(), ends.tolist()):
                sink(topic_list[which[a]], table.slice(a, b - a))
            batches.clear()

    chunks = 0
    for buf in recording.buffers():
        chunks += 1
        chunk = np.frombuffer(buf, np.uint8)
        decoded = []
        for name, plan in plans.items():
            n, m, k, whole = bufs[name].scan(chunk, wanted[name])
            if not whole:
                break
            if n:
                try:
                    decoded.append((name, _batch(plan, bufs[name], chunk, n, m, k, offsets)))
                except pa.ArrowInvalid:  # a string that is not UTF-8
                    break
        else:  # every type decoded: the chunk's rows are kept
            for name, batch in decoded:
                held[name].append(batch)
                held_bytes += batch[0].nbytes
            decoded = None
        if decoded is not None:  # a malformed chunk: none of its rows are kept
            recording.damaged += 1
        if held_bytes >= FLUSH_BYTES:
            flush()
            held_bytes = 0
    flush()
    report.chunks = chunks + recording.damaged
    report.damaged_chunks = recording.damaged
    report.stopped = recording.stopped


def export(
    path: str | Path,
    out: str | Path,
    topics: list[str] | None = None,
    fields: list[str] | None = None,
    force: bool = False,
) -> ExportReport:
    """Write each topic of the recording at ``path`` (or those ``topics`` picks) to
    ``<out>/<topic>.parquet``, with the leaf fields ``fields`` picks (every one by default; a
    message field names all the leaves below it). A file already there is replaced only with
    ``force``, and only when every new file is complete."""
    import pyarrow.parquet as pq

    out = Path(out)
    report = ExportReport()
    recording = Recording(path)
    try:
        picked = _pick_topics(recording, topics)
        plans = _plans(picked, fields, report)
        picked = {t: ty for t, ty in picked.items() if ty in plans}
        targets = {t: out / topic_path(t) for t in picked}
        if len(set(targets.values())) < len(targets):
            raise FrameError("two topics of the recording make the same file name")
        if out.exists() and not out.is_dir():
            raise FrameError(f"{out} is a file: name a directory")
        if not force:
            there = [p for p in targets.values() if p.exists()]
            if there:
                raise FrameError(f"{there[0]} exists: give --force to replace it, or another directory")
        _raise_open_files_limit(len(picked) + 64)
        pending: dict[str, PendingOutput] = {}
        writers: dict[str, pq.ParquetWriter] = {}

        def sink(topic, table):
            writer = writers.get(topic)
            if writer is None:
                writer = writers[topic] = _writer(recording, topic, picked[topic], plans, targets, pending)
            writer.write_table(table)
            report.topics[topic] = report.topics.get(topic, 0) + table.num_rows

        try:
            _decode(recording, picked, plans, sink, report)
            for topic in picked:  # a topic without a message still gets its (empty) file
                if topic not in writers:
                    writers[topic] = _writer(recording, topic, picked[topic], plans, targets, pending)
                    report.topics[topic] = 0
            for writer in writers.values():
                writer.close()
            report.files = commit_all([pending[topic] for topic in picked])
        except BaseException:
            for writer in writers.values():
                with contextlib.suppress(Exception):
                    writer.close()
            for p in pending.values():
                p.discard()
            raise
    finally:
        recording.close()
    return report


def _writer(recording, topic, type_name, plans, targets, pending):
    import pyarrow.parquet as pq

    target = targets[topic]
    target.parent.mkdir(parents=True, exist_ok=True)
    pending[topic] = PendingOutput(target)
    schema = plans[type_name].schema.with_metadata(_file_metadata(recording, topic, type_name))
    strings = [f.name for f in schema if str(f.type) in ("string", "binary")]
    # dictionaries for the text columns only: numbers rarely repeat, and encoding them twice costs
    return pq.ParquetWriter(pending[topic].path, schema, compression="zstd", use_dictionary=strings)


def _raise_open_files_limit(needed: int) -> None:
    """One Parquet file is open per topic while a recording is exported."""
    try:
        import resource
    except ImportError:  # not POSIX
        return
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != resource.RLIM_INFINITY and soft < needed:
        if hard != resource.RLIM_INFINITY and hard < needed:
            raise FrameError(
                f"{needed - 64} topics need as many open files, and this process may open {hard}: "
                "pick fewer with --topics"
            )
        resource.setrlimit(resource.RLIMIT_NOFILE, (needed, hard))


# ------------------------------------------------------------------------------ reading back


def table(path: str | Path, topic: str | None = None, fields: list[str] | None = None):
    """One topic as an Arrow table: from an export directory (``topic`` names it), one of its
    Parquet files, or a recording (decoded here, chunk by chunk, without writing a file)."""
    import pyarrow as pa

    path = Path(path)
    if not path.exists():
        raise FrameError(f"no such file or directory {path}")
    if path.is_dir():
        if topic is None:
            raise FrameError(f"{path} is a directory: name a topic ({_listed(_exported(path))})")
        file = path / topic_path(topic)
        if not file.exists():
            found = _exported(path)
            raise FrameError(
                f"{path} has no topic {topic!r}; "
                + (f"its topics are {_listed(found)}" if found else "it holds no export (hopsim export)")
            )
        return _read_parquet(file, fields)
    check_recording_file(path, FrameError)
    with open(path, "rb") as f:
        head = f.read(len(MAGIC))
    if head != MAGIC:
        if head[:4] == b"PAR1":
            return _read_parquet(path, fields)
        raise FrameError(f"{path} is neither a recording nor a Parquet file")
    recording = Recording(path)
    try:
        if topic is None:
            raise FrameError(f"name a topic of {path} ({_listed(recording.topics())})")
        report = ExportReport()
        picked = _pick_topics(recording, [topic])
        if len(picked) != 1:
            raise FrameError(f"{topic!r} names several topics ({_listed(picked)}): name one")
        plans = _plans(picked, fields, report)
        if not plans:
            raise FrameError(f"topic {topic}: {report.left_out[topic]}")
        (type_name,) = plans
        parts = []
        _decode(recording, picked, plans, lambda _, t: parts.append(t), report)
        schema = plans[type_name].schema.with_metadata(_file_metadata(recording, topic, type_name))
        return pa.concat_tables([t.replace_schema_metadata(schema.metadata) for t in parts] or [schema.empty_table()])
    finally:
        recording.close()


def _read_parquet(file: Path, fields: list[str] | None):
    import pyarrow.parquet as pq

    try:
        schema = pq.read_schema(file)
        columns = None
        if fields:
            columns = list(TIME_COLUMNS)
            for f in fields:
                found = [n for n in schema.names if n in (f, RENAMED + f) or n.startswith(f + ".")]
                if not found:
                    names = ", ".join(n for n in schema.names if n not in TIME_COLUMNS)
                    raise FrameError(f"{file} has no field {f!r}; its fields are {names}")
                columns += [n for n in found if n not in columns]
        return pq.read_table(file, columns=columns)
    except FrameError:
        raise
    except Exception as e:
        raise FrameError(f"{file} cannot be read as Parquet ({e})") from None


def _exported(directory: Path) -> list[str]:
    from urllib.parse import unquote

    found = []
    for file in sorted(directory.rglob("*.parquet")):
        rel = file.relative_to(directory).with_suffix("")
        found.append("/".join(unquote(p) for p in rel.parts))
    return found


def read_frame(path: str | Path, topic: str | None = None, library: str = "pandas", fields: list[str] | None = None):
    """One topic of a recording as a DataFrame: ``path`` is an export directory (written by
    ``hopsim export``), one of its Parquet files, or a recording itself. ``library``: "pandas"
    (the default) or "polars" (if installed). ``fields`` picks columns (``r_BN_N`` names its
    leaves); ``t_ns`` and ``t_s`` are always there. The recording's metadata (``hopsim.run``,
    ``hopsim.result``: dicts) and ``hopsim.topic`` are in the pandas frame's ``attrs``."""
    if library not in ("pandas", "polars"):
        raise FrameError(f"library {library!r}: use 'pandas' or 'polars'")
    if library == "polars":
        try:
            import polars
        except ImportError:
            raise FrameError("polars is not installed: `pip install polars`, or use library='pandas'") from None
    t = table(path, topic, fields)
    if library == "polars":
        return polars.from_arrow(t)
    frame = t.to_pandas()
    frame.attrs.update(frame_metadata(t.schema.metadata or {}))
    return frame


def frame_metadata(metadata: dict[bytes, bytes]) -> dict:
    """A file's key-value metadata as Python values (the JSON ones decoded)."""
    out = {}
    for key, value in metadata.items():
        name, text = key.decode(errors="replace"), value.decode(errors="replace")
        if name.startswith("hopsim.run") or name.startswith("hopsim.result"):
            try:
                out[name] = json.loads(text)
                continue
            except ValueError:
                pass
        if name.startswith("hopsim."):
            out[name] = text
    return out


def exported_topics(directory: str | Path) -> list[str]:
    """The topics of an export directory."""
    return _exported(Path(directory))


__all__ = [
    "ExportReport",
    "FrameError",
    "export",
    "exported_topics",
    "frame_metadata",
    "read_frame",
    "table",
    "topic_path",
]
