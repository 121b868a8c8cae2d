"""Record the bus to an MCAP file with the protobuf schemas embedded.

One MCAP channel per (topic, source): the channel's topic is the bus topic, its schema the
payload's protobuf type, and its metadata the envelope fields that are fixed per publisher
(source, latency, priority, kind). Each message's log time is the simulation time in ns and its
sequence number the envelope's. Foxglove and PlotJuggler open the file as it is.

Envelopes published at the same instant are written in the bus's total order
(time, priority, source, sequence), so the stream does not depend on the order in which islands
or processes happened to reach that instant.
"""
from __future__ import annotations

import hashlib
import json
import struct
from pathlib import Path
from typing import Iterable, Iterator

from mcap.reader import make_reader
from mcap.well_known import MessageEncoding
from mcap.writer import CompressionType, Writer as McapWriter
from mcap_protobuf.schema import register_schema

from hopsim.bus.envelope import Envelope
from hopsim.bus.scene import DERIVED, FoxgloveScene, is_derived
from hopsim.bus.topics import KERNEL_SOURCE, is_kernel_source
from hopsim.schemas import Envelope as EnvelopeProto

PROFILE = "hopsim"
LOG_TIME_OFFSET = "log_time_offset_ns"     # channel metadata: log time = this + simulation time (ns)

RUN_METADATA = "hopsim.run"
RESULT_METADATA = "hopsim.result"


def log_time_offset(channel_metadata: dict) -> int:
    """The offset of a channel's log times from simulation time (ns; 0 for files that have none,
    or a value that is not a whole number of ns from 0 to 2^63)."""
    text = channel_metadata.get(LOG_TIME_OFFSET, "0")
    return int(text) if text.isascii() and text.isdigit() and len(text) <= 19 and int(text) < 2**63 else 0


_HEADER = struct.Struct("<qqiQ")

# A chunk is closed (compressed, checksummed and pushed to disk) when it holds this many bytes or
# spans this much simulated time, whichever comes first: a killed run loses at most that much, and
# one damaged byte costs at most one chunk (the reader resynchronizes at the next).
CHUNK_BYTES = 256 * 1024
CHUNK_SPAN_NS = 2_000_000_000


SOURCE_FROM, SOURCE_FROM_ISLAND = "source_from", "island"


def _channel_key(env: Envelope) -> tuple[str, str]:
    """(topic, source) of an envelope's channel: kernel events of every island share one channel
    per kind (their source, ``kernel.<island>``, is read back from the event's ``island`` field)."""
    return (env.topic, KERNEL_SOURCE) if is_kernel_source(env.source) else (env.topic, env.source)


def envelope_source(channel_metadata: dict, payload: bytes) -> str:
    """The source of a recorded message: its channel's, or, on a channel of kernel events, the
    island's kernel (``kernel.<island>``; ``kernel`` for the executive's own events)."""
    if channel_metadata.get(SOURCE_FROM) != SOURCE_FROM_ISLAND:
        return channel_metadata.get("source", "")
    from hopsim.schemas import KernelEvent

    island = KernelEvent.FromString(payload).island
    return f"{KERNEL_SOURCE}.{island}" if island else KERNEL_SOURCE


class StreamDigest:
    """SHA-256 over every envelope (header fields and payload bytes), in stream order."""

    def __init__(self):
        self._h = hashlib.sha256()
        self.count = 0

    def add(self, env: Envelope, payload: bytes | None = None) -> None:
        if payload is None:
            payload = env.payload_bytes()
        names = f"{env.source}\0{env.topic}\0{env.type_name}\0".encode()
        update = self._h.update
        update(_HEADER.pack(env.t_ns, env.deliver_ns, env.priority, env.seq))
        update(len(names).to_bytes(4, "little"))
        update(names)
        update(len(payload).to_bytes(4, "little"))
        update(payload)
        self.count += 1

    def hexdigest(self) -> str:
        return self._h.hexdigest()

    def copy(self) -> "StreamDigest":
        twin = StreamDigest()
        twin._h, twin.count = self._h.copy(), self.count
        return twin


class RecordingMismatch(RuntimeError):
    """A run recovered from a kept state did not give again what it had recorded before."""


class StreamBuffer:
    """Holds the envelopes of the current instant and releases them in total order."""

    def __init__(self, sink):
        self._sink = sink
        self._t = None
        self._pending: list[Envelope] = []

    def add(self, env: Envelope) -> None:
        if self._t is not None and env.t_ns != self._t:
            if env.t_ns < self._t:
                raise RuntimeError(f"{env!r} is earlier than the instant being recorded ({self._t} ns)")
            self.flush()
        self._t = env.t_ns
        self._pending.append(env)

    def flush(self) -> None:
        if self._pending:
            self._pending.sort(key=Envelope.order_key)
            for env in self._pending:
                self._sink(env)
            self._pending.clear()


class McapRecorder:
    """Writes envelopes to ``path``; call :meth:`close` (or use as a context manager) to finish."""

    def __init__(self, path: str | Path, metadata: dict[str, str] | None = None,
                 chunk_size: int = CHUNK_BYTES, chunk_span_ns: int = CHUNK_SPAN_NS, scene: bool = True,
                 log_time_offset_ns: int = 0):
        """``scene``: also write the Foxglove channels derived from the vehicles' states
        (:mod:`hopsim.bus.scene`). ``log_time_offset_ns``: the calendar time of t = 0 (ns since
        1970): every message's log time is that plus its simulation time, and every channel says
        so (``log_time_offset_ns`` in its metadata) for readers to take it back off."""
        self.path = Path(path)
        self._offset = int(log_time_offset_ns)
        self._scene = FoxgloveScene(self._offset) if scene else None
        self._chunk_size = chunk_size
        self._chunk_span_ns = chunk_span_ns
        self._chunk_start_ns: int | None = None
        self._metadata = {k: str(v) for k, v in (metadata or {}).items()}
        self._file = None                   # opened at the first write: a run refused before it starts
        self._writer_ = None                # leaves an existing file alone
        self._schemas: dict[str, int] = {}
        self._channels: dict[tuple[str, str], int] = {}
        self.digest = StreamDigest()
        self._buffer = StreamBuffer(self._write_final)
        # a run that can recover from a killed actor goes back to its last kept state (commit) and
        # runs again from there: what it wrote since stays in the file, and the re-run's envelopes
        # are checked against it (digest) until they pass its end (see rollback)
        self._kept = self.digest.copy()
        self._rerun_until: tuple[int, str] | None = None     # (count written, digest of them)
        self._closed = False
        # called with (topic, message type, log time ns, payload bytes) for every message written,
        # the stream's and the derived ones (a live server forwards them)
        self.tap = None

    def describe(self, metadata: dict[str, str]) -> None:
        """Add to the run's description (the ``hopsim.run`` metadata) before the first write."""
        if self._writer_ is not None:
            raise RuntimeError("the run's description is written with the file's first record: describe it before")
        self._metadata.update({k: str(v) for k, v in metadata.items()})
        if self._scene is not None and "scene_json" in metadata:
            described = json.loads(metadata["scene_json"])
            if described.get("volume_N") is not None:
                self._scene.set_volume(*described["volume_N"])
            self._scene.set_bodies(described.get("bodies", {}))

    @property
    def _writer(self) -> McapWriter:
        """The MCAP writer, its file opened (and the run's description written) on first use."""
        if self._writer_ is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._file = open(self.path, "wb")
            self._writer_ = McapWriter(self._file, chunk_size=self._chunk_size, compression=CompressionType.ZSTD)
            self._writer_.start(profile=PROFILE, library="hopsim")
            if self._metadata:
                self._writer_.add_metadata(RUN_METADATA, self._metadata)
        return self._writer_

    def record(self, env: Envelope, latency_ns: int = 0, queue: bool = False) -> None:
        key = _channel_key(env)
        if key not in self._channels:
            metadata = {"source": key[1], "latency_ns": str(env.deliver_ns - env.t_ns), "priority": str(env.priority),
                        "kind": "queue" if queue else "signal"}
            if key[1] == KERNEL_SOURCE:          # one channel per kind of kernel event, for every island
                metadata[SOURCE_FROM] = SOURCE_FROM_ISLAND
            self._channels[key] = self._register_channel(env.topic, type(env.payload), metadata)
        self._buffer.add(env)

    def _register_channel(self, topic: str, message_type, metadata: dict[str, str]) -> int:
        """A channel of ``message_type`` messages (its schema registered once), its metadata
        naming the log time offset."""
        type_name = message_type.DESCRIPTOR.full_name
        if type_name not in self._schemas:
            self._schemas[type_name] = register_schema(self._writer, message_type)
        return self._writer.register_channel(topic=topic, message_encoding=MessageEncoding.Protobuf,
                                             schema_id=self._schemas[type_name],
                                             metadata={**metadata, LOG_TIME_OFFSET: str(self._offset)})

    def flush(self) -> None:
        """Write out the envelopes of the current instant (call only when it is complete)."""
        self._buffer.flush()

    def flush_chunk(self) -> None:
        """Close the current chunk and push it to disk (at checkpoints: a crash loses nothing before)."""
        self.commit()
        self._writer.flush()
        self._file.flush()

    def commit(self) -> None:
        """The run may come back to this point (a kept state): remember the stream's position.
        Everything recorded so far is written already (a kill loses at most the open chunk)."""
        self._buffer.flush()
        if self._scene is not None:
            self._write_derived(self._scene.flush())
        self._kept = self.digest.copy()

    def rollback(self) -> None:
        """The run goes back to its last commit and runs again from there (recovery from a killed
        actor). The envelopes written since stay in the file: the re-run must give them again,
        the same bit for bit (its stream is that of a run where nothing died), and they are
        checked, not written twice; the instant being recorded (incomplete) is dropped."""
        if self._rerun_until is None or self.digest.count > self._rerun_until[0]:
            self._rerun_until = (self.digest.count, self.digest.hexdigest())
        self.digest = self._kept.copy()
        self._buffer = StreamBuffer(self._write_final)

    def _rerun(self, env: Envelope) -> bool:
        """True while ``env`` is one the re-run after a rollback gives again (already in the
        file): its digest is checked when the re-run reaches the file's last envelope."""
        written, hexdigest = self._rerun_until
        if self.digest.count >= written:
            self._rerun_until = None
            return False
        self.digest.add(env)
        if self.digest.count == written:
            self._rerun_until = None
            if self.digest.hexdigest() != hexdigest:
                raise RecordingMismatch(
                    f"{self.path}: the run recovered from its last kept state did not give again the "
                    f"{written} envelopes recorded before the recovery (a model that is not deterministic: "
                    f"its randomness must come from its model_rng)")
        return True

    def _write_final(self, env: Envelope) -> None:
        if self._rerun_until is not None and self._rerun(env):
            return
        if self._chunk_start_ns is None:
            self._chunk_start_ns = env.t_ns
        elif env.t_ns - self._chunk_start_ns >= self._chunk_span_ns:
            self._writer.flush()        # the chunk spans CHUNK_SPAN_NS: close it and push it to disk
            self._chunk_start_ns = env.t_ns
        if self._scene is not None:
            self._write_derived(self._scene.observe(env.t_ns, env.type_name, env.payload))
        payload = env.payload_bytes()
        self.digest.add(env, payload)
        t = env.t_ns + self._offset
        self._writer.add_message(self._channels[_channel_key(env)], log_time=t,
                                 data=payload, publish_time=t, sequence=env.seq)
        if self.tap is not None:
            self.tap(env.topic, type(env.payload), t, payload)

    def record_derived(self, topic: str, t_ns: int, msg, kind: str) -> None:
        """A message about the run that is not part of its stream (``kind`` names what derived it,
        e.g. ``pacing``): written at once on a channel marked ``derived``, not hashed, not replayed."""
        self._write_derived([(topic, t_ns, msg)], kind)

    def _write_derived(self, messages, kind: str = "foxglove") -> None:
        """Messages derived from the stream (Foxglove's by default), on channels marked as such
        (not hashed)."""
        for topic, t_ns, msg in messages:
            key = (topic, DERIVED)
            if key not in self._channels:
                self._channels[key] = self._register_channel(topic, type(msg), {DERIVED: kind})
            t = t_ns + self._offset
            data = msg.SerializeToString(deterministic=True)
            self._writer.add_message(self._channels[key], log_time=t, data=data, publish_time=t, sequence=0)
            if self.tap is not None:
                self.tap(topic, type(msg), t, data)

    def close(self, result: dict[str, str] | None = None) -> None:
        if self._closed:
            return
        self.commit()
        summary = {"message_count": str(self.digest.count), "stream_sha256": self.digest.hexdigest()}
        summary.update({k: str(v) for k, v in (result or {}).items()})
        if self._rerun_until is not None:     # the file holds more than the recovered run gave again
            written, hexdigest = self._rerun_until
            summary.update(message_count=str(written), stream_sha256=hexdigest,
                           stop_reason=f"{summary.get('stop_reason', '')}; the run recovered from its last kept "
                                       f"state ended after {self.digest.count} of the {written} envelopes "
                                       f"recorded before the recovery")
        self._writer.add_metadata(RESULT_METADATA, summary)
        self._writer.finish()
        self._file.close()
        self._closed = True

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


class MemoryRecorder:
    """Keeps the stream in memory (tests, replay comparisons); same ordering as McapRecorder."""

    def __init__(self):
        self.envelopes: list[Envelope] = []
        self.digest = StreamDigest()
        self._buffer = StreamBuffer(self._keep)
        self._committed = (0, self.digest.copy())

    def record(self, env: Envelope, latency_ns: int = 0, queue: bool = False) -> None:
        self._buffer.add(env)

    def flush(self) -> None:
        self._buffer.flush()

    def flush_chunk(self) -> None:
        self.commit()

    def commit(self) -> None:
        self._buffer.flush()
        self._committed = (len(self.envelopes), self.digest.copy())

    def rollback(self) -> None:
        n, digest = self._committed
        del self.envelopes[n:]
        self.digest = digest.copy()
        self._buffer = StreamBuffer(self._keep)

    def _keep(self, env: Envelope) -> None:
        self.envelopes.append(env)
        self.digest.add(env)

    def close(self, result=None) -> None:
        self._buffer.flush()

    def stream_bytes(self) -> list[bytes]:
        self._buffer.flush()
        return [e.to_bytes() for e in self.envelopes]


def read_envelopes(path: str | Path) -> Iterator[EnvelopeProto]:
    """Yield the recorded envelopes of an MCAP file in stream order (no payload decoding)."""
    with open(path, "rb") as f:
        reader = make_reader(f)
        for schema, channel, message in reader.iter_messages(log_time_order=False):
            if is_derived(channel.metadata):
                continue
            latency = int(channel.metadata.get("latency_ns", "0"))
            t_ns = message.log_time - log_time_offset(channel.metadata)
            yield EnvelopeProto(t_ns=t_ns, deliver_ns=t_ns + latency,
                                source=envelope_source(channel.metadata, message.data), topic=channel.topic,
                                seq=message.sequence, priority=int(channel.metadata.get("priority", "0")),
                                type_name=schema.name if schema else "", payload=message.data)


def read_metadata(path: str | Path) -> dict[str, dict[str, str]]:
    """The file's metadata records by name (run description and result summary)."""
    with open(path, "rb") as f:
        reader = make_reader(f)
        return {m.name: dict(m.metadata) for m in reader.iter_metadata()}


def envelope_stream_bytes(envelopes: Iterable[EnvelopeProto]) -> list[bytes]:
    return [e.SerializeToString(deterministic=True) for e in envelopes]


def dumps_params(params: dict) -> str:
    return json.dumps(params, sort_keys=True, separators=(",", ":"))
