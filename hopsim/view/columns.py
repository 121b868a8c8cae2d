"""A recording's signals as columns: one numeric field of every message of a topic, as arrays.

``read_signals(path, ["sph1/state.omega_BN_B.z", ...])`` returns, per signal, the log times (ns,
the simulation time of each message) and the field's values (float64), in file order (the stream
order). A signal names a topic, then a path of fields in its messages; an element of a repeated
field takes an index (``imu.samples[2].accel_B.x`` is not supported: a repeated message field
takes no path below it, but ``values[3]`` of a repeated number does).

The file is read chunk by chunk: each chunk is decompressed (zstd, in C) with its declared size
checked first and its output bounded, checked against its CRC (:func:`hopsim.bus.chunks.inflate`),
and its message records are scanned by a compiled function that follows the field path through
the protobuf wire format of the chosen channels' messages, without building a message object. A
message that lacks the field gives the field's default, 0, as protobuf's own decoder does. A
damaged chunk is skipped and counted; a file without a summary (a killed run's) is read through
the channel records inside its chunks. What a reading decompresses and scans in all is bounded in
proportion to the file's size (:class:`hopsim.bus.chunks.ReadingBudget`), and at most
:data:`CACHE_BYTES` of decompressed chunks are held at once (the others are decompressed again
when scanned): memory stays bounded whatever the file holds. Opening a file counts its messages
per channel, so that a column's arrays are allocated once, at their size (16 to 40 bytes a
message); :meth:`ColumnReader.scan` gives several fields chunk by chunk, for readers that keep
less than every message (the viewer's poses).
"""

from __future__ import annotations

import re
import struct
import zlib
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from hopsim.bus.chunks import (
    BudgetSpent,
    ChunkHead,
    DamagedChunk,
    ReadingBudget,
    chunk_head,
    inflate,
    metadata_records,
)
from hopsim.bus.frames import export, read_frame  # every topic as a table: Parquet files, DataFrames
from hopsim.bus.recorder import METADATA_SHA256, log_time_offset, metadata_intact
from hopsim.bus.recording_file import check_recording_file
from hopsim.bus.wire import compiled, little_endian, skip, varint

# compiled with hopsim's policy (disk cache, no fast-math, NumPy's error model)


# how the final field is read: its wire type and its meaning
DOUBLE, FLOAT, VARINT, ZIGZAG, FIXED64, FIXED32, SFIXED64, SFIXED32, UNSIGNED = range(9)
_KINDS = {
    1: DOUBLE,
    2: FLOAT,
    3: VARINT,
    4: UNSIGNED,
    5: VARINT,
    6: FIXED64,
    7: FIXED32,
    8: VARINT,
    13: UNSIGNED,
    14: VARINT,
    15: SFIXED32,
    16: SFIXED64,
    17: ZIGZAG,
    18: ZIGZAG,
}
# (protobuf's FieldDescriptor types: double, float, int64, uint64, int32, fixed64, fixed32, bool,
#  uint32, enum, sfixed32, sfixed64, sint32, sint64)
_MESSAGE_TYPE = 11
MAGIC = b"\x89MCAP0\r\n"
CHUNK_OPCODE, FOOTER_OPCODE = 0x06, 0x02
_U64, _U32, _U16_PAIR = struct.Struct("<Q"), struct.Struct("<I"), struct.Struct("<HH")
_SIGNAL = re.compile(r"^([^.]+)\.(.+)$")
_PART = re.compile(r"^(\w+)(?:\[(\d+)\])?$")
CACHE_BYTES = 128 << 20  # decompressed chunks a ColumnReader holds at once (bytes)


class SignalError(ValueError):
    """A signal that names no topic, field or number of the recording."""


@dataclass
class Signal:
    """One field of one topic's messages over time: ``t_ns`` (int64, ns) and ``values`` (float64)."""

    name: str
    t_ns: np.ndarray
    values: np.ndarray
    sources: list[str] = field(default_factory=list)

    @property
    def t_s(self) -> np.ndarray:
        return self.t_ns / 1e9


@dataclass
class ColumnsReport:
    chunks: int = 0
    damaged_chunks: int = 0  # skipped: damaged, or past where reading stopped
    messages_scanned: int = 0
    stopped: str | None = None  # why reading stopped before the file's end, if it did


# ------------------------------------------------------------------------------ the compiled scan


@compiled
def _number(buf, p, end, wire, kind):
    """The field's value at p (after its key) as float64; (value, ok)."""
    if wire == 1 and p + 8 <= end:
        bits = little_endian(buf, p, 8)
        if kind == DOUBLE:
            return buf[p : p + 8].view(np.float64)[0], True
        if kind == SFIXED64:
            return float(np.int64(bits)), True
        return float(bits), True
    if wire == 5 and p + 4 <= end:
        bits = np.uint32(little_endian(buf, p, 4))
        if kind == FLOAT:
            return float(buf[p : p + 4].view(np.float32)[0]), True
        if kind == SFIXED32:
            return float(np.int32(bits)), True
        return float(bits), True
    if wire == 0:
        raw, q = varint(buf, p, end)
        if q < 0:
            return 0.0, False
        if kind == ZIGZAG:
            return float(np.int64(raw >> np.uint64(1)) ^ -np.int64(raw & np.uint64(1))), True
        if kind == UNSIGNED:
            return float(raw), True
        return float(np.int64(raw)), True
    return 0.0, False


@compiled
def _field_value(buf, start, end, tags, indexes, kind):
    """Follow the field path ``tags`` (field numbers; ``indexes[d]`` >= 0 picks an element of a
    repeated field at depth d) through the message in buf[start:end]; its value (the default 0 if
    absent) and whether the bytes were well formed."""
    depth, last = 0, len(tags) - 1
    p, stop = start, end
    value = 0.0
    seen = 0  # elements of a repeated field met so far
    while p < stop:
        key, p = varint(buf, p, stop)
        if p < 0:
            return 0.0, False
        number, wire = np.int64(key >> np.uint64(3)), np.int64(key & np.uint64(7))
        if number != tags[depth]:
            p = skip(buf, p, stop, wire)
            if p < 0:
                return 0.0, False
            continue
        if depth < last:  # a message field: descend (its last occurrence wins
            if wire != 2:  # for a singular one; the index-th for a repeated one)
                return 0.0, False
            length, q = varint(buf, p, stop)
            if q < 0 or q + np.int64(length) > stop:
                return 0.0, False
            if indexes[depth] < 0 or seen == indexes[depth]:
                depth += 1
                p, stop = q, q + np.int64(length)
                seen = 0
                continue
            seen += 1
            p = q + np.int64(length)
            continue
        want = indexes[depth]
        if wire == 2:  # a packed repeated number
            length, q = varint(buf, p, stop)
            if q < 0 or q + np.int64(length) > stop:
                return 0.0, False
            r, packed_end = q, q + np.int64(length)
            inner = 1 if kind in (DOUBLE, FIXED64, SFIXED64) else (5 if kind in (FLOAT, FIXED32, SFIXED32) else 0)
            while r < packed_end:
                v, ok = _number(buf, r, packed_end, inner, kind)
                if not ok:
                    return 0.0, False
                if seen == want or want < 0:
                    value = v
                    if want >= 0:
                        return value, True
                seen += 1
                r = skip(buf, r, packed_end, inner)
                if r < 0:
                    return 0.0, False
            p = packed_end
            continue
        v, ok = _number(buf, p, stop, wire, kind)
        if not ok:
            return 0.0, False
        if want < 0 or seen == want:
            value = v
            if want >= 0:
                return value, True
        seen += 1
        p = skip(buf, p, stop, wire)
        if p < 0:
            return 0.0, False
    return value, True


@compiled
def _scan_chunk(buf, wanted, tags, indexes, kind, t_out, v_out, ch_out, at_out, n):
    """Append (log time, value, channel, offset of the record) of every message record of a wanted
    channel in the decompressed chunk ``buf`` to the outputs from row n; (new n, channel record
    offsets found, count of those offsets, records scanned, well formed)."""
    p, size = 0, len(buf)
    channel_at = np.empty(size // 9 + 1, dtype=np.int64)  # at most one record per 9 bytes
    n_channels = 0
    scanned = 0
    while p + 9 <= size:
        opcode = buf[p]
        length = np.int64(little_endian(buf, p + 1, 8))
        body = p + 9
        if length < 0 or body + length > size:
            return n, channel_at, n_channels, scanned, False
        if opcode == 0x05 and length >= 22:  # Message
            channel = np.int64(little_endian(buf, body, 2))
            scanned += 1
            if channel < len(wanted) and wanted[channel]:
                value, ok = _field_value(buf, body + 22, body + length, tags, indexes, kind)
                if not ok:
                    return n, channel_at, n_channels, scanned, False
                if n == len(t_out):
                    return -1, channel_at, n_channels, scanned, True  # the caller grows the outputs
                t_out[n] = np.int64(little_endian(buf, body + 6, 8))
                v_out[n] = value
                ch_out[n] = channel
                at_out[n] = p
                n += 1
        elif opcode == 0x04:  # Channel
            channel_at[n_channels] = p
            n_channels += 1
        p = body + length
    return n, channel_at, n_channels, scanned, p == size


@compiled
def _count_messages(buf, counts):
    """Add the message records of each channel of the decompressed chunk ``buf`` to ``counts``
    (indexed by channel id); (messages, well formed: its records fill it)."""
    p, size = 0, len(buf)
    messages = 0
    while p + 9 <= size:
        length = np.int64(little_endian(buf, p + 1, 8))
        body = p + 9
        if length < 0 or body + length > size:
            return messages, False
        if buf[p] == 0x05 and length >= 22:
            counts[np.int64(little_endian(buf, body, 2))] += 1
            messages += 1
        p = body + length
    return messages, p == size


# ------------------------------------------------------------------------------ files and schemas


def _chunks(data: memoryview):
    """The head of every chunk record of the file ``data`` (None: a malformed one), in order.

    The file's top-level records are walked by their opcode and length; only chunks are read (the
    message indexes and the summary are skipped). Reading stops where a record's length runs past
    the end of the file (a killed run's last, unfinished record).
    """
    p, size = len(MAGIC), len(data)
    while p + 9 <= size:
        opcode = data[p]
        (length,) = _U64.unpack_from(data, p + 1)
        body, end = p + 9, p + 9 + length
        if end > size:
            return
        if opcode == CHUNK_OPCODE:
            try:
                yield chunk_head(data, body, end)
            except DamagedChunk:
                yield None
        elif opcode == FOOTER_OPCODE:
            return
        p = end


@compiled
def _record_offsets(buf, opcode):
    """The offsets of the records of ``opcode`` in the decompressed chunk ``buf``."""
    p, size = 0, len(buf)
    found = np.empty(size // 9 + 1, dtype=np.int64)
    n = 0
    while p + 9 <= size:
        length = np.int64(little_endian(buf, p + 1, 8))
        if length < 0 or p + 9 + length > size:
            break
        if buf[p] == opcode:
            found[n] = p
            n += 1
        p += 9 + length
    return found[:n].copy()


def _channel_record(buf: bytes, at: int):
    """(channel id, schema id, topic, metadata) of the Channel record at ``at``."""
    channel_id, schema_id = _U16_PAIR.unpack_from(buf, at + 9)
    topic, p = _string(buf, at + 13)
    _, p = _string(buf, p)  # message encoding
    return channel_id, schema_id, topic, _string_map(buf, p)


SCHEMA_OPCODE, CHANNEL_OPCODE, METADATA_OPCODE = 0x03, 0x04, 0x0C


def _string(buf, p: int) -> tuple[str, int]:
    (n,) = _U32.unpack_from(buf, p)
    return str(buf[p + 4 : p + 4 + n], "utf-8"), p + 4 + n


def _string_map(buf, p: int) -> dict[str, str]:
    (size,) = _U32.unpack_from(buf, p)
    p, end, out = p + 4, p + 4 + size, {}
    while p < end:
        key, p = _string(buf, p)
        out[key], p = _string(buf, p)
    return out


def _summary(data: memoryview) -> dict:
    """The channels ``{id: (topic, schema name, source, log time offset)}`` of the file's summary
    section (found through its footer); {} for a file without one (a killed run's) or with a
    damaged one."""
    size = len(data)
    footer = size - len(MAGIC) - 29
    try:
        if footer < len(MAGIC) or data[footer] != FOOTER_OPCODE or bytes(data[size - len(MAGIC) :]) != MAGIC:
            return {}
        summary_start, offsets_start, crc = struct.unpack_from("<QQI", data, footer + 9)
        end = offsets_start or footer
        if not 0 < summary_start <= end <= footer:
            return {}
        if crc and zlib.crc32(data[summary_start : footer + 25]) != crc:
            return {}  # a damaged summary: the channels come from the chunks
        schemas, channels = {}, {}
        data = bytes(data[summary_start:end])  # bytes: faster to slice than a view
        p, end = 0, end - summary_start
        while p + 9 <= end:
            opcode = data[p]
            (length,) = _U64.unpack_from(data, p + 1)
            if opcode == SCHEMA_OPCODE:
                (sid,) = struct.unpack_from("<H", data, p + 9)
                schemas[sid], _ = _string(data, p + 11)
            elif opcode == CHANNEL_OPCODE:
                cid, sid, topic, meta = _channel_record(data, p)
                channels[cid] = (topic, sid, meta.get("source", ""), log_time_offset(meta))
            p += 9 + length
    except (struct.error, UnicodeDecodeError, IndexError):
        return {}
    return {cid: (c[0], schemas.get(c[1], ""), c[2], c[3]) for cid, c in channels.items()}


def _metadata(data: memoryview) -> dict[str, dict[str, str]]:
    """The file's metadata records ``{name: {key: value}}`` (top-level records, read up to the
    first damaged one; a record whose SHA-256 does not match its content is left out)."""
    out = {}
    for name, record in metadata_records(data):
        if metadata_intact(name, record) is not False:
            record.pop(METADATA_SHA256, None)
            out[name] = record
    return out


def _schema_names(buf) -> dict[int, str]:
    """{id: type name} of the schema records in the decompressed chunk ``buf``."""
    names = {}
    for at in _record_offsets(np.frombuffer(buf, dtype=np.uint8), SCHEMA_OPCODE).tolist():
        try:
            (sid,) = struct.unpack_from("<H", buf, at + 9)
            names[sid], _ = _string(buf, at + 11)
        except (struct.error, UnicodeDecodeError):
            continue
    return names


def _path(type_name: str, fields: str, signal: str):
    """(field numbers, indexes, kind) of the path ``fields`` in messages of ``type_name``."""
    from hopsim.schemas import message_class

    cls = message_class(type_name)
    if cls is None:
        raise SignalError(f"{signal}: the messages are of type {type_name!r}, which hopsim does not know")
    descriptor = cls.DESCRIPTOR
    tags, indexes, kind = [], [], None
    parts = fields.split(".")
    for depth, part in enumerate(parts):
        found = _PART.match(part)
        fd = descriptor.fields_by_name.get(found.group(1)) if found else None
        if fd is None:
            raise SignalError(
                f"{signal}: {descriptor.full_name} has no field {part!r}; its fields are "
                f"{', '.join(descriptor.fields_by_name)}"
            )
        repeated = fd.is_repeated
        index = found.group(2)
        if repeated and index is None:
            raise SignalError(f"{signal}: {fd.name} is repeated: pick an element, e.g. {fd.name}[0]")
        if not repeated and index is not None:
            raise SignalError(f"{signal}: {fd.name} is not repeated (no index)")
        tags.append(fd.number)
        indexes.append(int(index) if index is not None else -1)
        last = depth == len(parts) - 1
        if fd.type == _MESSAGE_TYPE:
            if last:
                raise SignalError(
                    f"{signal}: {fd.name} is a {fd.message_type.name}; name one of its fields "
                    f"({', '.join(fd.message_type.fields_by_name)})"
                )
            descriptor = fd.message_type
        elif not last:
            raise SignalError(f"{signal}: {fd.name} is a number; nothing lies below it")
        else:
            kind = _KINDS.get(fd.type)
            if kind is None:
                raise SignalError(f"{signal}: {fd.name} is not a number (strings and bytes are not signals)")
    return np.array(tags, dtype=np.int64), np.array(indexes, dtype=np.int64), kind


# ------------------------------------------------------------------------------ the entry points


@dataclass
class Column:
    """One field of the messages of a set of channels, in file order: log time (ns, simulation
    time), value, channel id, and where each message lies (chunk index, record offset)."""

    t_ns: np.ndarray
    values: np.ndarray
    channel: np.ndarray
    chunk: np.ndarray
    at: np.ndarray


class ColumnReader:
    """A recording read once (its channels and decompressed chunks), then scanned field by field.

    ``channels``: {channel id: (topic, type name, source, log time offset ns)}. Channels derived
    from the stream (Foxglove's) are among them; :meth:`channels_of` picks by type. ``metadata``:
    the file's metadata records, {name: {key: value}} (the run's description and result).
    """

    def __init__(self, path: str | Path, report: ColumnsReport | None = None):
        self.path = check_recording_file(path, SignalError)
        self.report = report if report is not None else ColumnsReport()
        self._data = data = memoryview(self.path.read_bytes())
        self.channels = _summary(data)
        self.metadata = _metadata(data)
        # per chunk: its decompressed records (held), its head (decompressed again when
        # scanned: past CACHE_BYTES), or None (damaged, or past where reading stopped)
        self._chunks: list[bytes | memoryview | ChunkHead | None] = []
        self._messages: list[int] = []  # per chunk: its message records
        self._inflated: tuple[int, bytes | None] = (-1, None)  # the chunk last decompressed again
        self._counts = np.zeros(1 << 16, np.int64)  # per channel id: its messages (at most)
        budget, held = ReadingBudget(len(data)), 0
        for head in _chunks(data):
            buf, messages = None, 0
            if head is not None and self.report.stopped is None:
                try:
                    buf = inflate(data, head, budget)
                    # (a chunk found damaged here leaves its count: _counts is an upper bound)
                    messages, whole = _count_messages(np.frombuffer(buf, np.uint8), self._counts)
                    budget.spend_messages(messages)
                    if not whole:
                        raise DamagedChunk("a chunk whose records do not fit in it")
                except DamagedChunk:
                    buf, messages = None, 0
                except BudgetSpent as spent:
                    self.report.stopped, buf, messages = str(spent), None, 0
            if isinstance(buf, bytes):  # a decompressed chunk (an uncompressed one is a view of data)
                if held + len(buf) > CACHE_BYTES:
                    buf = head
                else:
                    held += len(buf)
            self._chunks.append(buf)
            self._messages.append(messages)
        self.report.chunks = len(self._chunks)
        self.report.damaged_chunks = sum(c is None for c in self._chunks)
        if not self.channels:  # a killed run's file: channels are in its chunks
            self._channels_from_chunks()

    def _buffers(self):
        """(index, decompressed records) of every chunk that is not damaged, in file order."""
        for index, chunk in enumerate(self._chunks):
            if isinstance(chunk, ChunkHead):
                buf = inflate(self._data, chunk)
                self._inflated = (index, buf)  # for payload(), while a scan is at this chunk
                yield index, buf
            elif chunk is not None:
                yield index, chunk

    def _channels_from_chunks(self) -> None:
        schema_names = {}
        for _, buf in self._buffers():
            schema_names.update(_schema_names(buf))
        empty_i, empty_f = np.empty(0, np.int64), np.empty(0)
        for _, buf in self._buffers():
            arr = np.frombuffer(buf, dtype=np.uint8)
            _, at, count, _, _ = _scan_chunk(
                arr,
                np.zeros(0, dtype=np.bool_),
                np.zeros(1, np.int64),
                np.zeros(1, np.int64),
                DOUBLE,
                empty_i,
                empty_f,
                empty_i,
                empty_i,
                0,
            )
            for k in range(count):
                try:
                    cid, sid, topic, metadata = _channel_record(buf, int(at[k]))
                except (struct.error, UnicodeDecodeError):
                    continue
                self.channels.setdefault(
                    cid, (topic, schema_names.get(sid, ""), metadata.get("source", ""), log_time_offset(metadata))
                )

    def topics(self) -> list[str]:
        return sorted({c[0] for c in self.channels.values()})

    def channels_of(self, type_name: str) -> list[int]:
        """The ids of the channels carrying ``type_name``, in id order."""
        return sorted(cid for cid, c in self.channels.items() if c[1] == type_name)

    def messages_of(self, ids: list[int]) -> int:
        """How many messages the channels ``ids`` have in the file's readable chunks (at most:
        a chunk found damaged as it is counted may add some)."""
        return int(self._counts[np.asarray(ids, dtype=np.int64)].sum()) if len(ids) else 0

    def scan(self, ids: list[int], type_name: str, fields: list[str], signal: str = ""):
        """The field paths ``fields`` of every message of the channels ``ids`` (all of type
        ``type_name``), chunk by chunk: for each chunk that holds some, (chunk index, log times
        (int64 ns, each channel's calendar offset taken off), channel ids, record offsets, values
        (float64, one row per field)). Each chunk is decompressed once for all the fields; what a
        chunk gives is at most its own messages. A chunk whose records do not follow the
        messages' type is counted damaged and gives nothing."""
        paths = [_path(type_name, f, signal or f"{type_name}.{f}") for f in fields]
        wanted = np.zeros(max(self.channels, default=0) + 1, dtype=np.bool_)
        wanted[ids] = True
        offsets = np.zeros(len(wanted), dtype=np.int64)
        for cid in ids:
            offsets[cid] = self.channels[cid][3]
        scanned = 0
        for index, buf in self._buffers():
            arr, size = np.frombuffer(buf, dtype=np.uint8), self._messages[index]
            t, ch, at = np.empty(size, np.int64), np.empty(size, np.int64), np.empty(size, np.int64)
            values = np.empty((len(paths), size))
            whole, n = True, 0
            for k, (tags, indexes, kind) in enumerate(paths):
                n, _, _, seen, ok = _scan_chunk(arr, wanted, tags, indexes, kind, t, values[k], ch, at, 0)
                whole = whole and ok and n >= 0
                if k == 0:
                    scanned += seen
                if not whole:
                    break
            self.report.messages_scanned = scanned
            if not whole:
                self.report.damaged_chunks += 1  # a malformed chunk's rows are not kept
            elif n:
                yield index, t[:n] - offsets[ch[:n]], ch[:n], at[:n], values[:, :n]

    def column(self, ids: list[int], type_name: str, fields: str, signal: str = "") -> Column:
        """The field path ``fields`` (e.g. ``r_BN_N.x``) of every message of the channels ``ids``
        (all of type ``type_name``), log times with each channel's calendar offset taken off."""
        size = self.messages_of(ids)
        t_out, v_out = np.empty(size, np.int64), np.empty(size)
        ch_out, at_out, chunk_of = np.empty(size, np.int64), np.empty(size, np.int64), np.empty(size, np.int64)
        n = 0
        for index, t, ch, at, values in self.scan(ids, type_name, [fields], signal):
            m = n + len(t)
            t_out[n:m], v_out[n:m], ch_out[n:m], at_out[n:m], chunk_of[n:m] = t, values[0], ch, at, index
            n = m
        return Column(t_out[:n], v_out[:n], ch_out[:n], chunk_of[:n], at_out[:n])

    def payload(self, chunk: int, at: int) -> bytes:
        """The payload bytes of the message record at offset ``at`` of chunk ``chunk``."""
        buf = self._chunks[chunk]
        if isinstance(buf, ChunkHead):
            index, inflated = self._inflated
            buf = inflated if index == chunk else inflate(self._data, buf)
        (length,) = _U64.unpack_from(buf, at + 1)
        return bytes(buf[at + 9 + 22 : at + 9 + length])


def read_signals(
    path: str | Path | ColumnReader, signals: list[str], report: ColumnsReport | None = None
) -> dict[str, Signal]:
    """Each signal (``TOPIC.FIELD[.FIELD...]``) of the recording at ``path`` (or of a recording
    already read), as columns."""
    reader = path if isinstance(path, ColumnReader) else ColumnReader(path, report)
    out = {}
    for signal in signals:
        found = _SIGNAL.match(signal)
        if not found:
            raise SignalError(f"{signal!r}: write TOPIC.FIELD, e.g. sph1/state.omega_BN_B.z")
        topic, fields = found.group(1), found.group(2)
        ids = [cid for cid, c in reader.channels.items() if c[0] == topic]
        if not ids:
            raise SignalError(
                f"{signal}: the recording has no topic {topic!r}; its topics are {', '.join(reader.topics())}"
            )
        types = {reader.channels[cid][1] for cid in ids}
        if len(types) != 1:
            raise SignalError(f"{signal}: topic {topic} carries several types ({', '.join(sorted(types))})")
        col = reader.column(ids, types.pop(), fields, signal)
        sources = sorted({reader.channels[int(c)][2] for c in np.unique(col.channel)})
        out[signal] = Signal(signal, col.t_ns, col.values, sources)
    return out


def numeric_fields(type_name: str, depth: int = 3) -> list[str]:
    """The paths of the singular numeric fields of ``type_name`` (messages descended up to
    ``depth`` levels; repeated fields take their first element), e.g. ``r_BN_N.x``."""
    from hopsim.schemas import message_class

    cls = message_class(type_name)
    if cls is None:
        return []

    def walk(descriptor, prefix, level):
        for fd in descriptor.fields:
            name = prefix + fd.name + ("[0]" if fd.is_repeated else "")
            if fd.type == _MESSAGE_TYPE:
                if level < depth and not fd.is_repeated:
                    yield from walk(fd.message_type, name + ".", level + 1)
            elif fd.type in _KINDS:
                yield name

    return list(walk(cls.DESCRIPTOR, "", 1))


def topics(path: str | Path) -> dict[str, str]:
    """The recording's topics and their message types: from its summary, or, for a file without
    one (a killed run's), from the channel records inside its chunks."""
    channels = _summary(memoryview(check_recording_file(path, SignalError).read_bytes())) or ColumnReader(path).channels
    return {c[0]: c[1] for c in sorted(channels.values())}


__all__ = [
    "Column",
    "ColumnReader",
    "ColumnsReport",
    "Signal",
    "SignalError",
    "export",
    "numeric_fields",
    "read_frame",
    "read_signals",
    "topics",
]
