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
from functools import lru_cache
from itertools import chain
from pathlib import Path
from typing import Callable, Iterable, Iterator, NamedTuple

from mcap.opcode import Opcode
from mcap.reader import make_reader
from mcap.records import MessageIndex
from mcap.well_known import MessageEncoding
from mcap.writer import CompressionType, Writer as McapWriter
from mcap_protobuf.schema import register_schema

from hopsim.bus.envelope import ORDER_KEY, Envelope, deterministic_serializer
from hopsim.bus.packed import EncodedEnvelope
from hopsim.bus.scene import DERIVED, FoxgloveScene, is_derived
from hopsim.bus.topics import KERNEL_SOURCE, is_kernel_source
from hopsim.schemas import Envelope as EnvelopeProto, VehicleState

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
    """SHA-256 over every envelope (header fields and payload bytes), in stream order.

    An envelope is hashed as its header (t_ns, deliver_ns: int64; priority: int32; seq: uint64),
    its names (``source\\0topic\\0type name\\0``, UTF-8) and its payload, the names and the payload
    each after their length (uint32), all little-endian."""

    def __init__(self):
        self._h = hashlib.sha256()
        self.count = 0

    def add(self, env, payload: bytes | None = None) -> None:
        """Hash one envelope: an :class:`Envelope`, or a recorded ``EnvelopeProto`` with its payload bytes."""
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

    def add_framed(self, data: bytes, count: int) -> None:
        """Hash ``count`` envelopes given as the bytes :meth:`add` hashes for each, one after the other."""
        self._h.update(data)
        self.count += count

    def hexdigest(self) -> str:
        return self._h.hexdigest()

    def copy(self) -> "StreamDigest":
        twin = StreamDigest()
        twin._h, twin.count = self._h.copy(), self.count
        return twin


def _digest_head(source: str, topic: str, type_name: str) -> tuple[struct.Struct, bytes]:
    """What :meth:`StreamDigest.add` hashes before the payload of an envelope of this source, topic
    and type, as one pack: ``head.pack(t_ns, deliver_ns, priority, seq, names, len(payload))``."""
    names = f"{source}\0{topic}\0{type_name}\0".encode()
    names = len(names).to_bytes(4, "little") + names
    return struct.Struct(f"<qqiQ{len(names)}sI"), names


class _Route(NamedTuple):
    """What writing an envelope of one (topic, source, payload type) takes, worked out once."""
    channel_id: int
    digest_head: struct.Struct          # see _digest_head
    digest_names: bytes
    is_state: bool                      # a vehicle state: the scene reads it
    serialize: Callable[[object], bytes]   # the payload's bytes (an EncodedEnvelope's are its payload)
    message_type: type                  # the payload's generated class


def _as_is(data: bytes) -> bytes:
    """The bytes of a payload that travelled serialized (:class:`EncodedEnvelope`)."""
    return data


class _MessageIndex(MessageIndex):
    """An MCAP message index written as one record in one pack (the same bytes as mcap's)."""

    def write(self, stream):
        n = len(self.records)
        stream.write(_message_index_record(n).pack(_MESSAGE_INDEX_OPCODE, 6 + 16 * n, self.channel_id, 16 * n,
                                                   *chain.from_iterable(self.records)))


_MESSAGE_INDEX_OPCODE = int(Opcode.MESSAGE_INDEX)


@lru_cache(maxsize=64)
def _message_index_record(n: int) -> struct.Struct:
    """A message index record of ``n`` entries: opcode, length of what follows, channel id, the
    entries' length in bytes, then (log time, offset) per entry."""
    return struct.Struct(f"<BQHI{2 * n}Q")


# an MCAP message record: opcode, length of what follows, channel id, sequence, log time, publish
# time, then the data
_MESSAGE = struct.Struct("<BQHIQQ")
_MESSAGE_OPCODE = int(Opcode.MESSAGE)
_MESSAGE_FIELDS = _MESSAGE.size - 9       # the record's length counts what follows opcode and length


class _Writer(McapWriter):
    """mcap's Writer, with :meth:`add_messages` for the messages of one log time.

    ``add_messages`` writes what :meth:`add_message` called for each message in turn writes (the
    same records, chunks, indexes and statistics; tests/test_recording.py compares the two) with
    one call: it frames the records itself into the Writer's chunk builder and statistics, which
    are private to the mcap version pinned in pyproject.toml.
    """

    def __init__(self, output, chunk_size: int, compression: CompressionType):
        super().__init__(output, chunk_size=chunk_size, compression=compression)
        self._chunk_bytes = chunk_size

    def add_messages(self, log_time: int, messages: list[tuple[int, int, bytes]]) -> None:
        """Add ``messages``, (channel id, sequence, data) in order, each logged and published at ``log_time``."""
        if not messages:
            return
        stats, chunk = self._Writer__statistics, self._Writer__chunk_builder
        if stats.message_count == 0 or log_time < stats.message_start_time:
            stats.message_start_time = log_time
        if log_time > stats.message_end_time:
            stats.message_end_time = log_time
        stats.message_count += len(messages)
        if chunk.num_messages == 0:
            chunk.message_start_time = chunk.message_end_time = log_time
        if log_time < chunk.message_start_time:
            chunk.message_start_time = log_time
        if log_time > chunk.message_end_time:
            chunk.message_end_time = log_time
        counts, indexes, pack = stats.channel_message_counts, chunk.message_indices, _MESSAGE.pack
        size, records, closed = chunk.count, [], 0
        for n, (channel_id, sequence, data) in enumerate(messages, 1):
            index = indexes.get(channel_id)
            if index is None:
                index = indexes[channel_id] = _MessageIndex(channel_id, [])
            index.records.append((log_time, size))
            counts[channel_id] += 1
            records += pack(_MESSAGE_OPCODE, _MESSAGE_FIELDS + len(data), channel_id, sequence, log_time, log_time), data
            size += _MESSAGE.size + len(data)
            if size > self._chunk_bytes:        # as add_message: close the chunk this message fills
                chunk.record_writer.write(b"".join(records))
                chunk.num_messages += n - closed
                self.flush()
                records, closed, size = [], n, 0
                chunk.message_start_time = chunk.message_end_time = log_time     # the chunk that follows
        chunk.record_writer.write(b"".join(records))
        chunk.num_messages += len(messages) - closed


class RecordingMismatch(RuntimeError):
    """A run recovered from a kept state did not give again what it had recorded before."""


class StreamBuffer:
    """Holds the envelopes of the current instant and releases them in total order, together:
    ``sink`` receives the list of one instant's envelopes."""

    def __init__(self, sink: Callable[[list[Envelope]], None]):
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
            pending, self._pending = self._pending, []
            pending.sort(key=ORDER_KEY)
            self._sink(pending)


_STATE_TYPE = VehicleState.DESCRIPTOR.full_name      # what the scene draws from


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
        self._routes: dict[tuple[str, str, type], _Route] = {}     # by (topic, source, payload type)
        self.digest = StreamDigest()
        self._buffer = StreamBuffer(self._write_instant)
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
            self._scene.set_hill_chief(described.get("hill_chief"))

    @property
    def _writer(self) -> _Writer:
        """The MCAP writer, its file opened (and the run's description written) on first use."""
        if self._writer_ is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._file = open(self.path, "wb")
            self._writer_ = _Writer(self._file, chunk_size=self._chunk_size, compression=CompressionType.ZSTD)
            self._writer_.start(profile=PROFILE, library="hopsim")
            if self._metadata:
                self._writer_.add_metadata(RUN_METADATA, self._metadata)
        return self._writer_

    def record(self, env: Envelope, latency_ns: int = 0, queue: bool = False) -> None:
        if (env.topic, env.source, type(env.payload)) not in self._routes:
            self._add_route(env, queue)
        self._buffer.add(env)

    def _add_route(self, env: Envelope | EncodedEnvelope, queue: bool) -> None:
        """The route of ``env``'s (topic, source, payload type: ``bytes`` for an
        :class:`EncodedEnvelope`); its channel is registered (written to the file) when it is the
        first of its channel."""
        encoded = isinstance(env, EncodedEnvelope)
        message_type = env.message_type if encoded else type(env.payload)
        key = _channel_key(env)
        if key not in self._channels:
            metadata = {"source": key[1], "latency_ns": str(env.deliver_ns - env.t_ns), "priority": str(env.priority),
                        "kind": "queue" if queue else "signal"}
            if key[1] == KERNEL_SOURCE:          # one channel per kind of kernel event, for every island
                metadata[SOURCE_FROM] = SOURCE_FROM_ISLAND
            self._channels[key] = self._register_channel(env.topic, message_type, metadata)
        type_name = message_type.DESCRIPTOR.full_name
        self._routes[env.topic, env.source, type(env.payload)] = _Route(
            self._channels[key], *_digest_head(env.source, env.topic, type_name), type_name == _STATE_TYPE,
            _as_is if encoded else deterministic_serializer(message_type), message_type)

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
        self._buffer = StreamBuffer(self._write_instant)

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

    def _past_rerun(self, envelopes: list[Envelope]) -> list[Envelope]:
        """The envelopes after those the re-run gives again (see :meth:`_rerun`)."""
        for i, env in enumerate(envelopes):
            if self._rerun_until is None or not self._rerun(env):
                return envelopes[i:]
        return []

    def _write_instant(self, envelopes: list[Envelope]) -> None:
        """Write one instant's envelopes (in stream order): hash them, write the scene's messages of
        the instant before, then the envelopes as MCAP messages, each payload serialized once."""
        if self._rerun_until is not None:
            envelopes = self._past_rerun(envelopes)
            if not envelopes:
                return
        t_ns = envelopes[0].t_ns
        if self._chunk_start_ns is None:
            self._chunk_start_ns = t_ns
        elif t_ns - self._chunk_start_ns >= self._chunk_span_ns:
            self._writer.flush()        # the chunk spans CHUNK_SPAN_NS: close it and push it to disk
            self._chunk_start_ns = t_ns
        routes = self._routes
        hashed, messages, states = [], [], []
        for env in envelopes:
            payload = env.payload
            channel_id, digest_head, digest_names, is_state, serialize, _ = routes[env.topic, env.source, type(payload)]
            data = serialize(payload)
            hashed += (digest_head.pack(t_ns, env.deliver_ns, env.priority, env.seq, digest_names, len(data)), data)
            messages.append((channel_id, env.seq, data))
            if is_state:
                states.append(env)
        self.digest.add_framed(b"".join(hashed), len(envelopes))
        if self._scene is not None:
            self._observe_scene(envelopes[0], states)
        t = t_ns + self._offset
        self._writer.add_messages(t, messages)
        if self.tap is not None:
            for env, (_, _, data) in zip(envelopes, messages):
                self.tap(env.topic, routes[env.topic, env.source, type(env.payload)].message_type, t, data)

    def _observe_scene(self, first: Envelope, states: list[Envelope]) -> None:
        """Show the scene an instant: its vehicle states (the scene skips the others). The
        instant's first envelope completes the scene's instant before, whose messages are written then."""
        observe = self._scene.observe
        if not states or states[0] is not first:
            self._write_derived(observe(first.t_ns, "", None, first.source))
        for env in states:
            state = env.payload
            if isinstance(state, bytes):            # it travelled serialized (EncodedEnvelope)
                state = VehicleState.FromString(state)
            self._write_derived(observe(env.t_ns, _STATE_TYPE, state, env.source))

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
            self._writer.add_messages(t, [(self._channels[key], 0, data)])
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

    def record(self, env: Envelope | EncodedEnvelope, latency_ns: int = 0, queue: bool = False) -> None:
        self._buffer.add(env.decoded() if isinstance(env, EncodedEnvelope) else env)

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

    def _keep(self, envelopes: list[Envelope]) -> None:
        self.envelopes += envelopes
        for env in envelopes:
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
