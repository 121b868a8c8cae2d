"""Read a recording back, tolerating damage.

A run that crashed or was killed leaves an MCAP file without its summary and footer, possibly
with a half-written chunk at the end; a file may also have damaged bytes. :func:`read_recording`
reads record by record from the start, validating every chunk's CRC, and stops at the first
damage: it returns every envelope of the complete chunks before it and a report saying where the
readable part ends and why. It never raises on a damaged file.
"""
from __future__ import annotations

import struct
from dataclasses import dataclass, field
from pathlib import Path

from mcap.records import Channel, Chunk, Footer, Message, Metadata, Schema
from mcap.stream_reader import StreamReader, breakup_chunk

from hopsim.schemas import Envelope as EnvelopeProto


@dataclass
class RecordingReport:
    path: Path
    size_bytes: int
    complete: bool = False            # footer reached: the writer finished the file
    messages: int = 0
    last_t_ns: int | None = None
    readable_bytes: int = 0           # the file is readable up to this offset
    problem: str | None = None        # why reading stopped early, if it did
    metadata: dict[str, dict[str, str]] = field(default_factory=dict)

    def summary(self) -> str:
        if self.problem == "empty file":
            return f"{self.path}: empty (0 bytes): not a recording, and nothing to recover"
        last = "no message" if self.last_t_ns is None else f"last at t = {self.last_t_ns / 1e9:.9g} s"
        if self.complete:
            return f"{self.path}: complete, {self.messages} messages, {last}"
        return (f"{self.path}: incomplete ({self.problem}); recovered {self.messages} messages, {last}, "
                f"from the first {self.readable_bytes} of {self.size_bytes} bytes")


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
            channel = channels[record.channel_id]
            schema = schemas.get(channel.schema_id)
            latency = int(channel.metadata.get("latency_ns", "0"))
            envelopes.append(EnvelopeProto(
                t_ns=record.log_time, deliver_ns=record.log_time + latency,
                source=channel.metadata.get("source", ""), topic=channel.topic, seq=record.sequence,
                priority=int(channel.metadata.get("priority", "0")),
                type_name=schema.name if schema else "", payload=record.data))
            report.last_t_ns = record.log_time
        elif isinstance(record, Metadata):
            report.metadata[record.name] = dict(record.metadata)

    with open(path, "rb") as f:
        reader = StreamReader(f, emit_chunks=True, validate_crcs=True, record_size_limit=1 << 30)
        try:
            for record in reader.records:
                if isinstance(record, Chunk):
                    for inner in breakup_chunk(record, validate_crc=True):
                        take(inner)
                else:
                    take(record)
                if isinstance(record, Footer):
                    report.complete = True
                report.readable_bytes = reader._stream.count
        except Exception as err:     # any damage ends the readable part; nothing is lost before it
            report.problem = _describe(err)
    report.messages = len(envelopes)
    if report.complete:
        report.readable_bytes = report.size_bytes
    return envelopes, report


def _describe(err: Exception) -> str:
    name = type(err).__name__
    if name == "EndOfFile" or isinstance(err, (EOFError, struct.error)):
        return "the file ends in the middle of a record (the run was interrupted)"
    if name == "CRCValidationError":
        return f"a chunk's checksum does not match (damaged bytes): {err}"
    if name == "InvalidMagic":
        return "not an MCAP file, or its first bytes are damaged"
    return f"unreadable record ({name}: {err})"
