"""Read a recording back, tolerating damage.

A run that crashed or was killed leaves an MCAP file without its summary and footer, possibly
with a half-written chunk at the end; a file may also have damaged bytes. :func:`read_recording`
reads record by record from the start, validating every chunk's CRC. At damage it
*resynchronizes*: it looks for the next whole chunk (an MCAP chunk record whose length fits the
file and whose contents pass their CRC) and reads on from there, so one damaged byte costs at
most the chunk it falls in. It returns every envelope it could read, in file order, and a report
of where the damage is and why. It never raises on a damaged file.
"""

from __future__ import annotations

import io
import struct
from dataclasses import dataclass, field
from pathlib import Path

from mcap.records import Channel, Chunk, Footer, Message, Metadata, Schema
from mcap.reader import make_reader
from mcap.stream_reader import StreamReader, breakup_chunk

from hopsim.bus.recorder import RESULT_METADATA, StreamDigest, envelope_source, log_time_offset
from hopsim.bus.scene import is_derived
from hopsim.schemas import Envelope as EnvelopeProto


@dataclass
class RecordingReport:
    path: Path
    size_bytes: int
    complete: bool = False  # footer reached: the writer finished the file
    messages: int = 0
    last_t_ns: int | None = None
    readable_bytes: int = 0  # the file is readable up to this offset
    problem: str | None = None  # the first damage, if any
    metadata: dict[str, dict[str, str]] = field(default_factory=dict)
    damage: list[tuple[int, str]] = field(default_factory=list)  # (offset, what) of each damaged place
    skipped_bytes: int = 0  # bytes passed over to resynchronize
    orphaned: int = 0  # messages read whose channel was lost with a damaged chunk
    intact_messages: int | None = None  # messages read before the first damage (None: no damage)

    def summary(self) -> str:
        if self.problem == "empty file":
            return f"{self.path}: empty (0 bytes): not a recording, and nothing to recover"
        last = "no message" if self.last_t_ns is None else f"last at t = {self.last_t_ns / 1e9:.9g} s"
        if self.complete:
            return f"{self.path}: complete, {self.messages} messages, {last}"
        where = ", ".join(f"byte {offset}" for offset, _ in self.damage[:5]) or "the end"
        lost = f"; {self.skipped_bytes} bytes skipped" if self.skipped_bytes else ""
        lost += f", {self.orphaned} messages of lost channels" if self.orphaned else ""
        return (
            f"{self.path}: {'damaged' if self.damage else 'incomplete'} at {where} ({self.problem}); "
            f"recovered {self.messages} messages, {last}; readable without a gap up to byte "
            f"{self.readable_bytes} of {self.size_bytes}{lost}"
        )


def read_recording(path: str | Path) -> tuple[list[EnvelopeProto], RecordingReport]:
    """Every envelope readable from ``path`` (in stream order) and a report on the file."""
    path = Path(path)
    report = RecordingReport(path, path.stat().st_size if path.exists() else 0)
    envelopes: list[EnvelopeProto] = []
    if not path.exists():
        report.problem = "no such file"
        return envelopes, report
    if report.size_bytes == 0:
        report.problem = "empty file"
        return envelopes, report
    schemas: dict[int, Schema] = {}
    channels: dict[int, Channel] = {}

    def take(record) -> None:
        if isinstance(record, Schema):
            schemas[record.id] = record
        elif isinstance(record, Channel):
            channels[record.id] = record
        elif isinstance(record, Message):
            channel = channels.get(record.channel_id)
            if channel is None:  # its channel was in a damaged chunk
                report.orphaned += 1
                return
            if is_derived(channel.metadata):  # Foxglove's view of the stream, not the stream
                return
            schema = schemas.get(channel.schema_id)
            latency = int(channel.metadata.get("latency_ns", "0"))
            t_ns = record.log_time - log_time_offset(channel.metadata)
            envelopes.append(
                EnvelopeProto(
                    t_ns=t_ns,
                    deliver_ns=t_ns + latency,
                    source=envelope_source(channel.metadata, record.data),
                    topic=channel.topic,
                    seq=record.sequence,
                    priority=int(channel.metadata.get("priority", "0")),
                    type_name=schema.name if schema else "",
                    payload=record.data,
                )
            )
            report.last_t_ns = t_ns
        elif isinstance(record, Metadata):
            report.metadata[record.name] = dict(record.metadata)

    data = path.read_bytes()
    _take_summary_channels(data, schemas, channels)
    position, first = 0, True
    while position < len(data):
        offset, failure = _read_from(data, position, first, take, report)
        first = False
        if failure is None:
            break
        report.damage.append((offset, _describe(failure)))
        if report.intact_messages is None:
            report.intact_messages = len(envelopes)
        resync = _next_chunk(data, offset + 1)
        if resync is None:
            break
        report.skipped_bytes += resync - offset
        position = resync
    if report.complete and not report.damage:
        _verify_summary(envelopes, report)
    if report.damage:
        report.complete = False
        report.problem = report.damage[0][1] + (
            f" (and {len(report.damage) - 1} more damaged places)" if len(report.damage) > 1 else ""
        )
    report.messages = len(envelopes)
    if report.complete:
        report.readable_bytes = report.size_bytes
    return envelopes, report


def _verify_summary(envelopes: list[EnvelopeProto], report: RecordingReport) -> None:
    """A finished file stores its message count and stream SHA-256: check them against what was read."""
    result = report.metadata.get(RESULT_METADATA)
    if result is None:
        return
    digest = StreamDigest()
    for env in envelopes:
        digest.add(env, env.payload)
    if result.get("message_count") != str(digest.count) or result.get("stream_sha256") != digest.hexdigest():
        report.intact_messages = 0  # nothing read can be vouched for
        report.damage.append(
            (
                report.size_bytes,
                "the stored message count or stream SHA-256 does not match the messages read: the file is damaged",
            )
        )


def _take_summary_channels(data: bytes, schemas: dict, channels: dict) -> None:
    """A finished file repeats every schema and channel in its summary: take them first, so that a
    damaged chunk that held a channel's first definition costs only its own messages."""
    try:
        summary = make_reader(io.BytesIO(data)).get_summary()
    except Exception:  # noqa: BLE001  (no readable summary: a killed run's file, or damage there)
        return
    if summary is not None:
        schemas.update(summary.schemas)
        channels.update(summary.channels)


CHUNK_OPCODE = 0x06
_LENGTH = struct.Struct("<Q")


def _read_from(data: bytes, position: int, first: bool, take, report: RecordingReport):
    """Read records from ``position`` (the file's start, with its magic, when ``first``) until the
    end or damage: (offset where reading stopped, the error or None)."""
    stream = io.BytesIO(data[position:] if not first else data)
    reader = StreamReader(stream, skip_magic=not first, emit_chunks=True, validate_crcs=True, record_size_limit=1 << 30)
    start = 0 if first else position
    done = start
    try:
        for record in reader.records:
            if isinstance(record, Chunk):
                for inner in breakup_chunk(record, validate_crc=True):
                    take(inner)
            else:
                take(record)
            if isinstance(record, Footer):
                report.complete = True
            done = start + stream.tell()
            report.readable_bytes = max(report.readable_bytes, done) if not report.damage else report.readable_bytes
        return done, None
    except Exception as err:  # damage: the caller resynchronizes after it
        return done, err


def _next_chunk(data: bytes, after: int) -> int | None:
    """The offset of the next whole chunk record at or after ``after``: its opcode, a length that
    fits the file, and contents that pass their CRC; None if there is none."""
    position = data.find(bytes([CHUNK_OPCODE]), after)
    while position != -1 and position + 9 <= len(data):
        (length,) = _LENGTH.unpack_from(data, position + 1)
        end = position + 9 + length
        if 0 < length <= len(data) - position - 9:
            try:
                reader = StreamReader(
                    io.BytesIO(data[position:end]),
                    skip_magic=True,
                    emit_chunks=True,
                    validate_crcs=True,
                    record_size_limit=1 << 30,
                )
                record = next(iter(reader.records))
                if isinstance(record, Chunk):
                    for _ in breakup_chunk(record, validate_crc=True):
                        pass
                    return position
            except Exception:  # noqa: BLE001  (not a chunk here: look further)
                pass
        position = data.find(bytes([CHUNK_OPCODE]), position + 1)
    return None


def _describe(err: Exception) -> str:
    name = type(err).__name__
    if name == "EndOfFile" or isinstance(err, (EOFError, struct.error)):
        return "the file ends in the middle of a record (the run was interrupted)"
    if name == "CRCValidationError":
        return f"a chunk's checksum does not match (damaged bytes): {err}"
    if name == "InvalidMagic":
        return "not an MCAP file, or its first bytes are damaged"
    return f"unreadable record ({name}: {err})"
