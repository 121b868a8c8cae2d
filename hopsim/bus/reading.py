"""Read a recording back, tolerating damage, with work bounded by the file's size.

A run that crashed or was killed leaves an MCAP file without its summary and footer, possibly
with a half-written chunk at the end; a file may also have damaged bytes, or be crafted.
:func:`read_recording` reads record by record from the start, walking the file by each record's
opcode and length (never past the file's end) and validating every chunk: its declared size
against :data:`hopsim.bus.chunks.MAX_CHUNK_BYTES` before anything is decompressed, its
decompressed size, its CRC, and its records. At damage it *resynchronizes*: it looks for the
next whole chunk (an MCAP chunk record whose fields fill its length exactly, which carries a
CRC, and whose contents pass it) and reads on from there, so one damaged byte costs at most the
chunk it falls in. Candidates are checked from their fixed fields first, and what one reading
decompresses, checksums and takes in all is bounded in proportion to the file's size
(:class:`hopsim.bus.chunks.ReadingBudget`): a crafted file costs time linear in its size.

hopsim's metadata records (the run's description, ``hopsim.run``, and its result,
``hopsim.result``) carry their SHA-256 (:func:`hopsim.bus.recorder.metadata_sha256`): one that
does not match is damage, left out of what is read (older recordings carry none and are taken as
they are). A file is complete when its footer is reached without damage and, for a hopsim
recording, its result record says the run ended (not ``crashed: ...``, as an interrupted run's).

It returns every envelope it could read, in file order, and a report of where the damage is and
why. It never raises on a damaged file. :func:`survey_recording` reads the same way and keeps
only each topic's count (``hopsim inspect``: memory bounded whatever the file's length).
"""

from __future__ import annotations

import re
import struct
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from hopsim.bus.chunks import (
    CHANNEL,
    CHUNK,
    FOOTER,
    HEADER,
    KNOWN_OPCODES,
    MAGIC,
    MESSAGE,
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
from hopsim.bus.recorder import (
    METADATA_SHA256,
    RESULT_METADATA,
    RUN_METADATA,
    SOURCE_FROM,
    SOURCE_FROM_ISLAND,
    StreamDigest,
    _digest_head,
    envelope_source,
    log_time_offset,
    metadata_intact,
)
from hopsim.bus.recording_file import recording_file_problem
from hopsim.bus.scene import is_derived
from hopsim.schemas import Envelope as EnvelopeProto

INTERRUPTED = "the file ends in the middle of a record (the run was interrupted)"
NO_FOOTER = "the file ends before its footer (the run was interrupted)"
_TRUNCATIONS = (INTERRUPTED, NO_FOOTER)
METADATA_NAMES = {RUN_METADATA: "the run description", RESULT_METADATA: "the result record"}


@dataclass
class RecordingReport:
    path: Path
    size_bytes: int
    complete: bool = False  # footer reached, nothing damaged, and (hopsim's) the run ended
    messages: int = 0
    last_t_ns: int | None = None
    readable_bytes: int = 0  # the file is readable up to this offset
    problem: str | None = None  # the first damage, or why the file is not complete
    metadata: dict[str, dict[str, str]] = field(default_factory=dict)  # intact records, by name
    damage: list[tuple[int, str]] = field(default_factory=list)  # (offset, what) of each damaged place
    skipped_bytes: int = 0  # bytes passed over to resynchronize
    orphaned: int = 0  # messages read whose channel was lost with a damaged chunk
    malformed: int = 0  # messages whose channel or fields make no envelope (left out)
    intact_messages: int | None = None  # messages read before the first damage (None: no damage)
    gaps: list[int] = field(default_factory=list)  # per damaged place: the messages read before it
    damaged_metadata: list[str] = field(default_factory=list)  # names of metadata records left out
    footer: bool = False  # the footer and the closing magic were reached
    stopped: str | None = None  # why reading stopped before the file's end (its budget was spent)
    not_a_file: bool = False  # the path is no regular file (missing, a directory, a FIFO): ``problem`` says

    @property
    def stop_reason(self) -> str | None:
        return self.metadata.get(RESULT_METADATA, {}).get("stop_reason")

    @property
    def interrupted(self) -> bool:
        """Whether the recorded run says it stopped before its end (a crash, Ctrl-C)."""
        return (self.stop_reason or "").startswith("crashed")

    def summary(self) -> str:
        if self.problem == "empty file":
            return f"{self.path}: empty (0 bytes): not a recording, and nothing to recover"
        if self.not_a_file:
            return str(self.problem)
        last = "no message" if self.last_t_ns is None else f"last at t = {self.last_t_ns / 1e9:.9g} s"
        if self.complete:
            return f"{self.path}: complete, {self.messages} messages, {last}"
        if not self.damage:
            return f"{self.path}: incomplete ({self.problem}); {self.messages} messages, {last}"
        where = ", ".join(f"byte {offset}" for offset, _ in self.damage[:5])
        lost = f"; {self.skipped_bytes} bytes skipped" if self.skipped_bytes else ""
        lost += f", {self.orphaned} messages of lost channels" if self.orphaned else ""
        lost += f", {self.malformed} malformed messages left out" if self.malformed else ""
        lost += f"; {self.stopped}" if self.stopped else ""
        damaged = any(what not in _TRUNCATIONS for _, what in self.damage)
        return (
            f"{self.path}: {'damaged' if damaged else 'incomplete'} at {where} ({self.problem}); "
            f"recovered {self.messages} messages, {last}; readable without a gap up to byte "
            f"{self.readable_bytes} of {self.size_bytes}{lost}"
        )


def read_recording(path: str | Path) -> tuple[list[EnvelopeProto], RecordingReport]:
    """Every envelope readable from ``path`` (in stream order) and a report on the file."""
    envelopes: list[EnvelopeProto] = []
    append = envelopes.append

    def keep(route: _Route, source: str, t_ns: int, seq: int, payload: bytes) -> None:
        append(
            EnvelopeProto(
                t_ns=t_ns,
                deliver_ns=t_ns + route.latency,
                source=source,
                topic=route.topic,
                seq=seq,
                priority=route.priority,
                type_name=route.type_name,
                payload=payload,
            )
        )

    report = _Reader(Path(path), keep).read()
    return envelopes, report


def survey_recording(path: str | Path) -> tuple[dict[str, int], RecordingReport]:
    """The messages of each topic readable from ``path`` and the report :func:`read_recording`
    gives, without keeping the messages."""
    counts: dict[str, int] = {}

    def count(route: _Route, source: str, t_ns: int, seq: int, payload: bytes) -> None:
        counts[route.topic] = counts.get(route.topic, 0) + 1

    report = _Reader(Path(path), count).read()
    return counts, report


@dataclass
class _Route:
    """What one channel's messages become: their envelope's fixed fields."""

    topic: str
    type_name: str
    source: str | None  # None: a channel of kernel events of every island (the source is in each)
    latency: int
    priority: int
    offset: int  # log time minus simulation time (ns)
    derived: bool  # Foxglove's view of the stream, not the stream
    digest: tuple[struct.Struct, bytes] | None  # what the stream digest hashes before the payload


_INT64 = 1 << 63
_WHOLE = re.compile(r"-?[0-9]{1,19}")
_MESSAGE_FIELDS = struct.Struct("<HIQ")  # channel id, sequence, log time (then publish time, data)
_U16, _U32, _U64 = struct.Struct("<H"), struct.Struct("<I"), struct.Struct("<Q")


def _message_index_fits(data, body: int, length: int) -> bool:
    return length >= 6 and _U32.unpack_from(data, body + 2)[0] == length - 6 and (length - 6) % 16 == 0


# the records of fixed layout hopsim's files hold outside chunks: whether the length fits them
# (a damaged chunk opcode read as one of them is damage, not a record to pass over)
_FIXED_LENGTHS = {
    0x07: _message_index_fits,  # MessageIndex: channel id, then (log time, offset) pairs
    0x0E: lambda data, body, length: length == 17,  # SummaryOffset
    0x0F: lambda data, body, length: length == 4,  # DataEnd
}


def _schema(buf, body: int, end: int) -> tuple[int, str]:
    """(id, name) of the Schema record whose body is ``buf[body:end]``."""
    if body + 2 > end:
        raise Malformed("a schema record too short")
    (schema_id,) = _U16.unpack_from(buf, body)
    name, p = string_at(buf, body + 2, end)
    _, p = string_at(buf, p, end)  # encoding
    if p + 4 > end or p + 4 + _U32.unpack_from(buf, p)[0] > end:
        raise Malformed("a schema's data runs past its record")
    return schema_id, name


def _channel(buf, body: int, end: int) -> tuple[int, int, str, dict[str, str]]:
    """(id, schema id, topic, metadata) of the Channel record whose body is ``buf[body:end]``."""
    if body + 4 > end:
        raise Malformed("a channel record too short")
    channel_id, schema_id = struct.unpack_from("<HH", buf, body)
    topic, p = string_at(buf, body + 4, end)
    _, p = string_at(buf, p, end)  # message encoding
    metadata, _ = string_map_at(buf, p, end)
    return channel_id, schema_id, topic, metadata


def _integer(text: str | None, low: int, high: int) -> int | None:
    """``text`` as a whole number in [low, high); None if it is not one (0 if absent)."""
    if text is None:
        return 0
    if not _WHOLE.fullmatch(text):
        return None
    value = int(text)
    return value if low <= value < high else None


class _Reader:
    """One reading of one file: its records walked, its chunks validated, its damage reported;
    ``sink(route, source, t_ns, seq, payload)`` receives each message of the stream."""

    def __init__(self, path: Path, sink: Callable):
        self.path, self.sink = path, sink
        self.report = RecordingReport(path, path.stat().st_size if path.is_file() else 0)
        self.schemas: dict[int, str] = {}  # id: type name
        self.channels: dict[int, _Route | None] = {}  # None: a channel that makes no envelope
        self.digest = StreamDigest()
        self.profile = ""
        self._checked: dict[int, tuple] = {}  # a chunk checked while resynchronizing, by offset
        self._spent = False  # the budget is spent: reading stops
        self._searched = 0  # where the last search for a chunk had come to

    def read(self) -> RecordingReport:
        report = self.report
        problem = recording_file_problem(self.path)  # nothing else is opened: a FIFO would block
        if problem is not None:
            report.problem, report.not_a_file = problem, True
            return report
        if report.size_bytes == 0:
            report.problem = "empty file"
            return report
        self.data = data = self.path.read_bytes()
        self.budget = ReadingBudget(len(data))
        self._take_summary_channels()
        position, first = 0, True
        while position < len(data):
            offset, failure = self._walk(position, first)
            first = False
            if failure is None:
                break
            self._damaged(offset, failure)
            if self._spent:
                break
            try:
                resync = self._next_chunk(offset + 1)
            except BudgetSpent as spent:
                report.stopped = f"gave up resynchronizing at byte {self._searched}: {spent}"
                self._damaged(self._searched, report.stopped)
                break
            if resync is None:
                break
            report.skipped_bytes += resync - offset
            position = resync
        self._conclude()
        return report

    def _damaged(self, offset: int, what: str) -> None:
        report = self.report
        report.damage.append((offset, what))
        report.gaps.append(report.messages)
        if report.intact_messages is None:
            report.intact_messages = report.messages

    def _conclude(self) -> None:
        report = self.report
        report.complete = report.footer and not report.damage
        hopsim = self.profile == "hopsim" or any(
            name in report.metadata or name in report.damaged_metadata for name in (RUN_METADATA, RESULT_METADATA)
        )
        if report.complete and hopsim:
            result = report.metadata.get(RESULT_METADATA)
            if result is None:
                report.complete = False
                report.problem = "no result record: the run did not finish"
            elif report.interrupted:
                # an interrupted run's file is closed with the reason, and its last instant may be
                # part written: it is incomplete (a replay compares it up to that instant)
                report.complete = False
                report.problem = f"the run was interrupted: {report.stop_reason.rstrip(': ')}"
            elif (
                result.get("message_count") != str(self.digest.count)
                or result.get("stream_sha256") != self.digest.hexdigest()
            ):
                report.intact_messages = 0  # nothing read can be vouched for
                report.damage.append(
                    (
                        report.size_bytes,
                        "the stored message count or stream SHA-256 does not match the messages read: "
                        "the file is damaged",
                    )
                )
                report.complete = False
        if report.damage:
            report.problem = report.damage[0][1] + (
                f" (and {len(report.damage) - 1} more damaged places)" if len(report.damage) > 1 else ""
            )
        if report.complete:
            report.readable_bytes = report.size_bytes

    # ------------------------------------------------------------------ the file's records

    def _walk(self, position: int, first: bool) -> tuple[int, str | None]:
        """Read records from ``position`` (the file's start, with its magic, when ``first``) until
        the footer or damage: (offset where reading stopped, what stopped it or None)."""
        data, report = self.data, self.report
        size = len(data)
        if first:
            if data[: len(MAGIC)] != MAGIC[: min(size, len(MAGIC))]:
                return 0, "not an MCAP file, or its first bytes are damaged"
            if size < len(MAGIC):
                return 0, INTERRUPTED
            position = len(MAGIC)
        while True:
            if not report.damage:
                report.readable_bytes = position
            if position == size:
                return position, NO_FOOTER
            if position + 9 > size:
                return position, INTERRUPTED
            opcode, length = RECORD_HEAD.unpack_from(data, position)
            body, end = position + 9, position + 9 + length
            if end > size:
                return position, INTERRUPTED
            try:
                if opcode == CHUNK:
                    self._take_chunk(position, body, end)
                elif opcode == MESSAGE:  # a message outside chunks (other writers than hopsim's)
                    if length < 22:
                        raise Malformed("a message record too short")
                    self.budget.spend_messages(1)
                    self._take_message(data, position, end)
                elif opcode == SCHEMA:
                    schema_id, name = _schema(data, body, end)
                    self.schemas[schema_id] = name
                elif opcode == CHANNEL:
                    self._take_channel(*_channel(data, body, end))
                elif opcode == METADATA:
                    self._take_metadata(position, body, end)
                elif opcode == HEADER:
                    self.profile, _ = string_at(data, body, end)
                elif opcode == FOOTER:
                    if length < 20:
                        raise Malformed("a footer too short")
                    if data[end : end + len(MAGIC)] != MAGIC:
                        return end, INTERRUPTED if size - end < len(MAGIC) else "the file's closing magic is damaged"
                    report.footer = True
                    if not report.damage:
                        report.readable_bytes = size
                    return end, None
                elif opcode in _FIXED_LENGTHS and not _FIXED_LENGTHS[opcode](data, body, length):
                    raise Malformed(f"a record of opcode {opcode:#04x} whose length does not fit its fields")
                elif opcode not in KNOWN_OPCODES and opcode < 0x80:  # 0x80 and up: private records
                    return position, f"unreadable record (opcode {opcode:#04x}, which MCAP does not have)"
            except (DamagedChunk, Malformed) as err:
                return position, str(err) if isinstance(err, DamagedChunk) else f"unreadable record ({err})"
            except BudgetSpent as spent:
                self._spent = True
                report.stopped = f"reading stopped at byte {position}: {spent}"
                return position, report.stopped
            position = end

    def _take_metadata(self, position: int, body: int, end: int) -> None:
        name, p = string_at(self.data, body, end)
        metadata, _ = string_map_at(self.data, p, end)
        intact = metadata_intact(name, metadata)
        if intact is False:
            what = METADATA_NAMES.get(name, f"the metadata record {name!r}")
            self.report.damaged_metadata.append(name)
            # damage, though no message is lost with it: no gap in the stream
            self.report.damage.append((position, f"{what} is damaged: its SHA-256 does not match its content"))
            return
        metadata.pop(METADATA_SHA256, None)
        self.report.metadata[name] = metadata

    def _take_summary_channels(self) -> None:
        """A finished file repeats every schema and channel in its summary: take them first, so that
        a damaged chunk that held a channel's first definition costs only its own messages."""
        data = self.data
        footer = len(data) - len(MAGIC) - 29
        if footer < len(MAGIC) or data[footer] != FOOTER or data[len(data) - len(MAGIC) :] != MAGIC:
            return
        summary_start, offsets_start, crc = struct.unpack_from("<QQI", data, footer + 9)
        end = offsets_start or footer
        if not len(MAGIC) < summary_start <= end <= footer:
            return
        if crc and zlib.crc32(data[summary_start : footer + 25]) != crc:
            return  # a damaged summary: the channels come from the chunks
        found_schemas, found_channels = {}, []
        p = summary_start
        try:
            while p + 9 <= end:
                opcode, length = RECORD_HEAD.unpack_from(data, p)
                body, stop = p + 9, p + 9 + length
                if stop > end:
                    return
                if opcode == SCHEMA:
                    schema_id, name = _schema(data, body, stop)
                    found_schemas[schema_id] = name
                elif opcode == CHANNEL:
                    found_channels.append(_channel(data, body, stop))
                p = stop
        except Malformed:  # a damaged summary: the channels come from the chunks
            return
        self.schemas.update(found_schemas)
        for channel in found_channels:
            self._take_channel(*channel)

    # ------------------------------------------------------------------ chunks and messages

    def _take_chunk(self, position: int, body: int, end: int) -> None:
        checked = self._checked.pop(position, None)
        buf, records = checked if checked is not None else self._open_chunk(body, end)
        for record in records:
            if record[0] == MESSAGE:
                self._take_message(buf, record[1], record[2])
            elif record[0] == CHANNEL:
                self._take_channel(*record[1])
            else:
                self.schemas[record[1]] = record[2]

    def _open_chunk(self, body: int, end: int, exact: bool = False) -> tuple:
        """(decompressed records, their list) of the chunk record ``data[body:end]``, every
        record checked to fit; :class:`DamagedChunk` if it is not whole."""
        head = chunk_head(self.data, body, end, exact)
        buf = inflate(self.data, head, self.budget)
        return buf, self._chunk_records(buf)

    def _chunk_records(self, buf) -> list[tuple]:
        """The records of a decompressed chunk: (MESSAGE, start, end), (CHANNEL, fields) and
        (SCHEMA, id, name), in order; :class:`DamagedChunk` if any does not fit. Every record is
        spent from the reading's budget of messages."""
        out = []
        p, size = 0, len(buf)
        left = self.budget.messages_left
        try:
            while p < size:
                if p + 9 > size:
                    raise Malformed("a record runs past its chunk's end")
                opcode, length = RECORD_HEAD.unpack_from(buf, p)
                body, end = p + 9, p + 9 + length
                if end > size:
                    raise Malformed("a record runs past its chunk's end")
                if len(out) >= left:
                    self.budget.spend_messages(len(out) + 1)  # more than is left: BudgetSpent
                if opcode == MESSAGE:
                    if length < 22:
                        raise Malformed("a message record too short")
                    out.append((MESSAGE, p, end))
                elif opcode == CHANNEL:
                    out.append((CHANNEL, _channel(buf, body, end)))
                elif opcode == SCHEMA:
                    out.append((SCHEMA, *_schema(buf, body, end)))
                elif opcode < 0x80:  # a chunk holds schemas, channels and messages (and private records)
                    raise Malformed(f"a record of opcode {opcode:#04x} inside a chunk")
                p = end
        except Malformed as err:
            raise DamagedChunk(f"a chunk whose records are damaged ({err})") from None
        self.budget.spend_messages(len(out))
        return out

    def _take_channel(self, channel_id: int, schema_id: int, topic: str, metadata: dict[str, str]) -> None:
        latency = _integer(metadata.get("latency_ns"), -_INT64, _INT64)
        priority = _integer(metadata.get("priority"), -(1 << 31), 1 << 31)
        if latency is None or priority is None:
            self.channels[channel_id] = None
            return
        kernel = metadata.get(SOURCE_FROM) == SOURCE_FROM_ISLAND
        source = None if kernel else metadata.get("source", "")
        type_name = self.schemas.get(schema_id, "")
        self.channels[channel_id] = _Route(
            topic,
            type_name,
            source,
            latency,
            priority,
            log_time_offset(metadata),
            is_derived(metadata),
            None if source is None else _digest_head(source, topic, type_name),
        )

    def _take_message(self, buf, start: int, end: int) -> None:
        report = self.report
        channel_id, seq, log_time = _MESSAGE_FIELDS.unpack_from(buf, start + 9)
        if channel_id not in self.channels:  # its channel was in a damaged chunk
            report.orphaned += 1
            return
        route = self.channels[channel_id]
        if route is not None and route.derived:  # Foxglove's view of the stream, not the stream
            return
        payload = bytes(buf[start + 31 : end])
        t_ns = log_time - (route.offset if route is not None else 0)
        if route is None or not (-_INT64 <= t_ns < _INT64 and -_INT64 <= t_ns + route.latency < _INT64):
            report.malformed += 1
            return
        source = route.source
        if source is None:
            try:
                source = envelope_source({SOURCE_FROM: SOURCE_FROM_ISLAND}, payload)
            except Exception:
                report.malformed += 1
                return
            head, names = _digest_head(source, route.topic, route.type_name)
        else:
            head, names = route.digest
        self.digest.add_framed(
            head.pack(t_ns, t_ns + route.latency, route.priority, seq, names, len(payload)) + payload, 1
        )
        self.sink(route, source, t_ns, seq, payload)
        report.messages += 1
        report.last_t_ns = t_ns

    # ------------------------------------------------------------------ resynchronizing

    def _next_chunk(self, after: int) -> int | None:
        """The offset of the next whole chunk record at or after ``after``: its opcode, fields
        that fill a length that fits the file, a CRC, and contents that pass it; None if there is
        none. Each candidate is checked from its fixed fields before anything is decompressed or
        checksummed, and that work is spent from the reading's budget (:class:`BudgetSpent` when
        it is gone)."""
        data = self.data
        size = len(data)
        opcode = bytes([CHUNK])
        position = data.find(opcode, after)
        while position != -1 and position + 49 <= size:
            self._searched = position
            (length,) = _U64.unpack_from(data, position + 1)
            end = position + 9 + length
            if end <= size:
                try:
                    head = chunk_head(data, position + 9, end, exact=True)
                    if head.crc and head.start_ns <= head.end_ns:
                        buf = inflate(data, head, self.budget)
                        self._checked = {position: (buf, self._chunk_records(buf))}
                        return position
                except DamagedChunk:
                    pass
            position = data.find(opcode, position + 1)
        return None
