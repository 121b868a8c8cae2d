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
import signal
import struct
import threading
import zlib
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from operator import attrgetter
from pathlib import Path
from typing import NamedTuple

import numpy as np
import zstandard
from mcap.data_stream import RecordBuilder
from mcap.reader import make_reader
from mcap.records import Chunk
from mcap.well_known import MessageEncoding
from mcap.writer import CompressionType, IndexType
from mcap.writer import Writer as McapWriter
from mcap_protobuf.schema import register_schema

from hopsim.bus import framing
from hopsim.bus.envelope import ORDER_KEY, Envelope, deterministic_serializer
from hopsim.bus.packed import EncodedEnvelope
from hopsim.bus.scene import DERIVED, FoxgloveScene, is_derived
from hopsim.bus.topics import KERNEL_SOURCE, is_kernel_source
from hopsim.schemas import Envelope as EnvelopeProto
from hopsim.schemas import VehicleState

PROFILE = "hopsim"
LOG_TIME_OFFSET = "log_time_offset_ns"  # channel metadata: log time = this + simulation time (ns)

RUN_METADATA = "hopsim.run"
RESULT_METADATA = "hopsim.result"
METADATA_SHA256 = "record_sha256"  # in every metadata record hopsim writes: see metadata_sha256


def metadata_sha256(name: str, metadata: dict[str, str]) -> str:
    """The SHA-256 a metadata record carries as ``record_sha256``: of its name, then each of its
    other keys (in sorted order) and its value, each as its length (uint32, little-endian) and
    its UTF-8 bytes. MCAP checksums chunks, not metadata records: this one makes a damaged run
    description or result record tell itself from a real one."""
    h = hashlib.sha256()
    texts = [name]
    for key in sorted(k for k in metadata if k != METADATA_SHA256):
        texts += (key, metadata[key])
    for text in texts:
        data = text.encode()
        h.update(len(data).to_bytes(4, "little"))
        h.update(data)
    return h.hexdigest()


def metadata_intact(name: str, metadata: dict[str, str]) -> bool | None:
    """Whether a metadata record read from a file matches the SHA-256 it carries; None when it
    carries none (recordings made before records carried one)."""
    stored = metadata.get(METADATA_SHA256)
    return None if stored is None else stored == metadata_sha256(name, metadata)


STREAM_FORMAT = 2
"""The version of what a recording's stream holds, written as ``stream_format`` in its run
description. It goes up whenever the same scenario, parameters and seed give another stream (an
encoding, or a model's arithmetic, changed; CHANGELOG.md says which), so that a replay can tell
an older recording from a divergence. 1 is every recording made before the field existed; 2
computes every elementary function, product and random draw with hopsim's portable numerics
(the same bits on every CPU)."""


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

    def copy(self) -> StreamDigest:
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
    digest_head: struct.Struct  # see _digest_head
    digest_names: bytes
    is_state: bool  # a vehicle state: the scene reads it
    serialize: Callable[[object], bytes]  # the payload's bytes (an EncodedEnvelope's are its payload)
    message_type: type  # the payload's generated class


def _as_is(data: bytes) -> bytes:
    """The bytes of a payload that travelled serialized (:class:`EncodedEnvelope`)."""
    return data


class _Writer(McapWriter):
    """mcap's Writer, with :meth:`add_columns` and :meth:`add_block` for the messages of one log time.

    ``add_columns`` (and ``add_block``, the same messages as arrays and one payload buffer) writes
    what :meth:`add_message` called for each message in turn writes (the same records, chunks,
    indexes and statistics; tests/test_recording.py compares the two) with one call. The messages
    are held as blocks of arrays while their chunk is open and framed together
    (:mod:`hopsim.bus.framing`) when something else goes into the chunk (a schema, a channel) or
    when it closes: the chunk's records, its message indexes and the statistics are then those
    mcap writes, through its Writer's private state (that of the mcap version pinned in
    pyproject.toml; :meth:`_Writer__finalize_chunk` replaces the Writer's own).
    """

    def __init__(self, output, chunk_size: int, compression: CompressionType):
        super().__init__(output, chunk_size=chunk_size, compression=compression)
        self._chunk_bytes = chunk_size
        self._held: list[tuple] = []  # messages not framed yet: blocks of add_block's arguments
        self._held_bytes = 0  # the size of their records (bytes)
        self._framed: list[
            tuple[np.ndarray, np.ndarray, np.ndarray]
        ] = []  # the open chunk's (channels, log times, offsets)
        # zstandard.compress(data) makes a compressor (level 3) for each call; one, reused, writes
        # the same frames. A writer's chunks are compressed one at a time, on a thread of its own.
        self._zstd = zstandard.ZstdCompressor(level=3)
        self._compressing: ThreadPoolExecutor | None = None
        self._pending: tuple | None = None  # the chunk being compressed: (future, times, size, framed)

    def add_messages(self, log_time: int, messages: list[tuple[int, int, bytes]]) -> None:
        """Add ``messages``, (channel id, sequence, data) in order, each logged and published at ``log_time``."""
        self.add_columns(log_time, [m[0] for m in messages], [m[1] for m in messages], [m[2] for m in messages])

    def add_message(self, channel_id: int, log_time: int, data: bytes, publish_time: int, sequence: int = 0) -> None:
        """mcap's add_message, for a message published at its log time (ns)."""
        if publish_time != log_time:
            raise ValueError("the recorder's messages are published at their log time")
        self.add_columns(log_time, [channel_id], [sequence], [data])

    def add_columns(self, log_time: int, channel_ids: list[int], sequences: list[int], datas: list[bytes]) -> None:
        """Add messages given as columns (channel id, sequence, data: one of each per message, in
        order), each logged and published at ``log_time`` (ns)."""
        if datas:
            self.add_block(
                log_time,
                np.array(channel_ids, np.int64),
                np.array(sequences, np.int64),
                np.fromiter(map(len, datas), np.int64, len(datas)),
                b"".join(datas),
            )

    def add_block(
        self, log_time: int, channel_ids: np.ndarray, sequences: np.ndarray, lengths: np.ndarray, payload
    ) -> None:
        """Add messages given as arrays (int64: channel id, sequence, data length; one of each per
        message, in order) and their data one after the other (``payload``: bytes or uint8 array),
        each logged and published at ``log_time`` (ns)."""
        if not len(lengths):
            return
        size = _MESSAGE.size * len(lengths) + len(payload)
        chunk = self._Writer__chunk_builder
        if chunk.count + self._held_bytes + size > self._chunk_bytes:
            self._add_filling(log_time, channel_ids, sequences, lengths, payload)
            return
        self._times(log_time, len(lengths))
        self._held.append((log_time, channel_ids, sequences, lengths, payload))
        self._held_bytes += size

    def _add_filling(
        self, log_time: int, channel_ids: np.ndarray, sequences: np.ndarray, lengths: np.ndarray, payload
    ) -> None:
        """Add messages that fill the chunk: as add_message one by one, each chunk closed after
        the message that takes it past its size; the messages up to that one are added together."""
        ends = np.cumsum(lengths + _MESSAGE.size)  # records' ends
        data_ends = np.cumsum(lengths)
        i, n, done = 0, len(lengths), 0
        while i < n:
            room = self._chunk_bytes - (self._Writer__chunk_builder.count + self._held_bytes)
            j = int(np.searchsorted(ends, done + room, side="right"))  # ends[j] is past the room
            fills = j < n
            j = j + 1 if fills else n
            self._times(log_time, j - i)
            first = int(data_ends[i - 1]) if i else 0
            self._held.append(
                (log_time, channel_ids[i:j], sequences[i:j], lengths[i:j], payload[first : int(data_ends[j - 1])])
            )
            self._held_bytes += int(ends[j - 1]) - done
            done = int(ends[j - 1])
            if fills:
                self._Writer__finalize_chunk()
            i = j

    def _times(self, log_time: int, n: int) -> None:
        """Count ``n`` messages logged at ``log_time`` (ns) in the statistics and the open chunk."""
        stats, chunk = self._Writer__statistics, self._Writer__chunk_builder
        if stats.message_count == 0 or log_time < stats.message_start_time:
            stats.message_start_time = log_time
        if log_time > stats.message_end_time:
            stats.message_end_time = log_time
        stats.message_count += n
        if chunk.num_messages == 0:
            chunk.message_start_time = chunk.message_end_time = log_time
        elif log_time < chunk.message_start_time:
            chunk.message_start_time = log_time
        elif log_time > chunk.message_end_time:
            chunk.message_end_time = log_time
        chunk.num_messages += n

    def _frame_held(self) -> None:
        """Write the held messages' records into the open chunk and keep their index entries."""
        held = self._held
        if not held:
            return
        self._held, self._held_bytes = [], 0
        channel_ids = np.concatenate([h[1] for h in held])
        sequences = np.concatenate([h[2] for h in held])
        if sequences.min() < 0 or sequences.max() >= 2**32 or channel_ids.min() < 0 or channel_ids.max() >= 2**16:
            raise OverflowError("an MCAP sequence is a uint32 and a channel id a uint16")
        log_times = np.repeat(np.array([h[0] for h in held], np.int64), [len(h[3]) for h in held])
        lengths = np.concatenate([h[3] for h in held])
        payload = np.frombuffer(b"".join(h[4] for h in held), np.uint8)
        chunk = self._Writer__chunk_builder
        records, offsets = framing.message_records(channel_ids, sequences, log_times, lengths, payload, chunk.count)
        chunk.record_writer.write(records.data)
        self._framed.append((channel_ids, log_times, offsets))
        counts = self._Writer__statistics.channel_message_counts  # channels in the order they first come
        for channel_id, tally in zip(*(a.tolist() for a in framing.channel_tally(channel_ids))):
            counts[channel_id] += tally

    def add_metadata(self, name: str, data: dict[str, str]) -> None:
        """mcap's add_metadata, the record carrying its SHA-256 (:func:`metadata_sha256`)."""
        super().add_metadata(name, {**data, METADATA_SHA256: metadata_sha256(name, data)})

    def register_schema(self, name: str, encoding: str, data: bytes) -> int:
        self._frame_held()  # the records go into the chunk in the order they come
        return super().register_schema(name, encoding, data)

    def register_channel(self, topic: str, message_encoding: str, schema_id: int, metadata: dict = {}) -> int:  # noqa: B006 (mcap's signature)
        self._frame_held()
        return super().register_channel(topic, message_encoding, schema_id, metadata)

    def _Writer__finalize_chunk(self) -> None:
        """mcap's Writer.__finalize_chunk (mcap 1.6.0), its compression off the caller's thread:
        close the open chunk, if it holds messages, and hand its records to the compressing thread
        (the chunk before it, compressed meanwhile, is written first). The chunk is written, with
        its CRC, its message indexes in one piece and its chunk index, by the next write to the
        file (:meth:`_Writer__flush`), :meth:`flush` or :meth:`finish`."""
        self._frame_held()
        builder = self._Writer__chunk_builder
        if builder is None or builder.num_messages == 0:
            return
        self._Writer__statistics.chunk_count += 1
        chunk_data = builder.end()
        closed = (builder.message_start_time, builder.message_end_time, len(chunk_data), self._framed)
        self._framed = []
        builder.reset()
        self._Writer__flush()  # the previous chunk, then what was written before this one closed
        if len(chunk_data) < _COMPRESS_ON_THREAD_FROM:
            compressed: Future = Future()
            compressed.set_result(self._compress(chunk_data))
        else:
            if self._compressing is None:
                self._compressing = ThreadPoolExecutor(max_workers=1, thread_name_prefix="hopsim-chunks")
            compressed = self._compressing.submit(self._compress, chunk_data)
        self._pending = (compressed, *closed)

    def _Writer__flush(self) -> None:
        """mcap's Writer.__flush (the records built so far go to the file), the chunk being
        compressed written before them."""
        self._write_pending()
        McapWriter._Writer__flush(self)

    def close_chunk(self) -> None:
        """Close the open chunk and hand it to the compressing thread; push the one before it to
        the file (the file then lags by at most the chunk being compressed)."""
        self._Writer__finalize_chunk()
        self._Writer__stream.flush()

    def finish(self) -> None:
        """mcap's finish, every chunk written first; the compressing thread ends."""
        self._Writer__finalize_chunk()
        self._write_pending()
        super().finish()
        if self._compressing is not None:
            self._compressing.shutdown()
            self._compressing = None

    def _write_pending(self) -> None:
        """Write the chunk handed to the compressing thread, if any (waiting for it): the Chunk
        record, its message indexes, and keep its chunk index for the summary."""
        if self._pending is None:
            return
        compressing, start_ns, end_ns, size, framed = self._pending
        self._pending = None
        compression, compressed, crc = compressing.result()
        stream = self._Writer__stream
        records = RecordBuilder()
        chunk_start_offset = stream.tell()
        Chunk(
            compression=compression,
            data=compressed,
            message_start_time=start_ns,
            message_end_time=end_ns,
            uncompressed_crc=crc if self._Writer__enable_crcs else 0,
            uncompressed_size=size,
        ).write(records)
        chunk_length = records.count
        channels = offsets = np.zeros(0, np.int64)
        index_length = 0
        if self._Writer__index_types & IndexType.MESSAGE:
            indexes, channels, starts = framing.message_indexes(*map(np.concatenate, zip(*framed)))
            offsets = starts + chunk_start_offset + chunk_length
            records.write(indexes.data)
            index_length = len(indexes)
        data = records.end()
        if self._Writer__enable_data_crcs:
            self._Writer__data_section_crc = zlib.crc32(data, self._Writer__data_section_crc)
        stream.write(data)
        self._Writer__chunk_indices.append(
            _EncodedRecord(
                framing.chunk_index_record(
                    start_ns,
                    end_ns,
                    chunk_start_offset,
                    chunk_length,
                    channels,
                    offsets,
                    index_length,
                    compression,
                    len(compressed),
                    size,
                )
            )
        )

    def _compress(self, data: bytes) -> tuple[str, bytes, int]:
        """(compression name, compressed bytes, CRC-32) of a chunk's records (on the compressing
        thread: zstd and zlib release the GIL while they work)."""
        crc = zlib.crc32(data)
        if self._Writer__compression == CompressionType.ZSTD:
            return "zstd", self._zstd.compress(data), crc
        if self._Writer__compression == CompressionType.NONE:
            return "", data, crc
        raise ValueError(f"{self._Writer__compression}: the recorder compresses with zstd or not at all")


# a smaller chunk is compressed at once: handing it to the thread costs more (tens of us) than zstd
_COMPRESS_ON_THREAD_FROM = 64 << 10


class _EncodedRecord(NamedTuple):
    """A summary record already encoded (a chunk's ChunkIndex): mcap's Writer writes it as it is."""

    record: bytes

    def write(self, stream) -> None:
        stream.write(self.record)


# an MCAP message record: opcode, length of what follows, channel id, sequence, log time, publish
# time, then the data
_MESSAGE = struct.Struct("<BQHIQQ")


class RecordingMismatch(RuntimeError):
    """A run recovered from a kept state did not give again what it had recorded before."""


class StreamBuffer:
    """Holds the envelopes of the current instant and releases them in total order, together:
    ``sink`` receives the list of one instant's envelopes. An instant's envelopes may also come
    as columns (:class:`EncodedColumns`, a row block's, already in stream order): when they are
    all the instant has, ``columns_sink`` receives them as they are (several blocks' merged into
    one, as a Ray run's hosts give them); else they join the others as envelopes."""

    def __init__(
        self, sink: Callable[[list[Envelope]], None], columns_sink: Callable[[EncodedColumns], None] | None = None
    ):
        self._sink = sink
        self._columns_sink = columns_sink
        self._t = None
        self._pending: list[Envelope] = []
        self._columns: list[EncodedColumns] = []
        self._merged: tuple = ((), [], None, None)  # the last blocks' routes merged: (ids, them, merged, order)

    def add(self, env: Envelope) -> None:
        if self._t is not None and env.t_ns != self._t:
            if env.t_ns < self._t:
                raise RuntimeError(f"{env!r} is earlier than the instant being recorded ({self._t} ns)")
            self.flush()
        self._t = env.t_ns
        self._pending.append(env)

    def add_columns(self, columns: EncodedColumns) -> None:
        if self._t is not None and columns.t_ns != self._t:
            if columns.t_ns < self._t:
                raise RuntimeError(
                    f"envelopes at {columns.t_ns} ns are earlier than the instant being recorded ({self._t} ns)"
                )
            self.flush()
        self._t = columns.t_ns
        self._columns.append(columns)

    def flush(self) -> None:
        if self._columns:
            columns, self._columns = self._columns, []
            if not self._pending and self._columns_sink is not None:
                self._columns_sink(columns[0] if len(columns) == 1 else self._merge(columns))
                return
            for c in columns:
                self._pending += c.envelopes()
        if self._pending:
            pending, self._pending = self._pending, []
            pending.sort(key=ORDER_KEY)
            self._sink(pending)

    def _merge(self, columns: list[EncodedColumns]) -> EncodedColumns:
        """Several blocks' columns of one instant as one, in stream order (their routes merged
        once per set of blocks)."""
        key = tuple(id(c.channels) for c in columns)
        if self._merged[0] != key:  # other blocks than the instant before's
            parts = [c.channels for c in columns]
            self._merged = (key, parts, *RowChannels.merged(parts))
        _key, _parts, channels, order = self._merged
        return EncodedColumns.merged(columns, channels, order)


class RowChannels:
    """The routes of a row block's outputs in a recording (:mod:`hopsim.kernel.blocks`): one per
    (output, row) pair, given in stream order (priority, source, then the order the source writes
    its outputs in, which is its sequence numbers' order), each with a prototype envelope (its
    source, topic, latency, priority and message type; payload and sequence unused), whether it is
    a queue, and its rank in the order its channel is registered when first written (the order the
    members' own barriers would record in); ``vehicles``: the names the messages' ``vehicle`` fields
    may hold."""

    def __init__(
        self, prototypes: list[EncodedEnvelope], queues: list[bool], register_rank: list[int], vehicles: frozenset[str]
    ):
        self.prototypes, self.queues = prototypes, queues
        self.rank = np.asarray(register_rank, np.int64)
        self.latency = np.array([e.deliver_ns - e.t_ns for e in prototypes], np.int64)
        self.priority = np.array([e.priority for e in prototypes], np.int64)
        names = [_digest_head(e.source, e.topic, e.type_name)[1] for e in prototypes]
        self.names = np.frombuffer(b"".join(names), np.uint8) if names else np.zeros(0, np.uint8)
        self.names_at = np.concatenate(([0], np.cumsum([len(n) for n in names]))).astype(np.int64)
        self.channel = np.full(len(prototypes), -1, np.int64)  # registered: its channel id
        # what the scene may draw: a vehicle state published by the vehicle it names (the vehicles
        # the block's messages name are ``vehicles``; a route of another source never is one)
        self.is_state = np.array([e.type_name == _STATE_TYPE and e.source in vehicles for e in prototypes], np.bool_)
        self.sources = [e.source for e in prototypes]  # each route's publisher

    @classmethod
    def merged(cls, parts: list[RowChannels]) -> tuple[RowChannels, np.ndarray]:
        """The routes of several blocks as one, in stream order (by priority and source; a
        source's routes keep their order), and ``order``: the merged route k is route
        ``order[k]`` of the parts' routes one after the other. Its channel ids are the parts'
        (:meth:`EncodedColumns.merged` takes them at each instant)."""
        prototypes = [e for part in parts for e in part.prototypes]
        queues = [q for part in parts for q in part.queues]
        order = np.array(
            sorted(range(len(prototypes)), key=lambda k: (prototypes[k].priority, prototypes[k].source)), np.int64
        )
        merged = cls(
            [prototypes[k] for k in order.tolist()],
            [queues[k] for k in order.tolist()],
            [0] * len(prototypes),
            frozenset(),
        )
        merged.is_state = np.concatenate([part.is_state for part in parts])[order]
        return merged, order

    def received(self) -> RowChannels:
        """These routes as another process received them (a Ray object's arrays are read-only):
        the channel ids this process's recorder registers writable."""
        self.channel = self.channel.copy()
        return self


class EncodedColumns:
    """The envelopes a row block publishes at one instant, as columns in stream order: route ``p``
    of ``channels`` has ``counts[p]`` messages, sequence numbers from ``seqs[p]``, payloads
    ``data[offsets[m]:offsets[m + 1]]`` for ``m`` from ``starts[p]``."""

    __slots__ = ("channels", "counts", "data", "offsets", "seqs", "starts", "t_ns")

    def __init__(self, t_ns: int, channels: RowChannels, counts, seqs, starts, offsets, data: bytes):
        self.t_ns, self.channels = t_ns, channels
        self.counts, self.seqs, self.starts, self.offsets, self.data = counts, seqs, starts, offsets, data

    @classmethod
    def merged(cls, parts: list[EncodedColumns], channels: RowChannels, order: np.ndarray) -> EncodedColumns:
        """Several blocks' columns of one instant as one, over their merged routes ``channels``
        and ``order`` (:meth:`RowChannels.merged`); the payloads stay where they are, one part's
        after the other's."""
        n_messages = np.cumsum([0] + [len(c.offsets) - 1 for c in parts])
        n_bytes = np.cumsum([0] + [len(c.data) for c in parts])
        counts = np.concatenate([c.counts for c in parts])[order]
        seqs = np.concatenate([c.seqs for c in parts])[order]
        starts = np.concatenate([c.starts + n_messages[k] for k, c in enumerate(parts)])[order]
        offsets = np.concatenate([c.offsets[:-1] + n_bytes[k] for k, c in enumerate(parts)] + [n_bytes[-1:]])
        channels.channel[:] = np.concatenate([c.channels.channel for c in parts])[order]
        return cls(
            parts[0].t_ns, channels, counts, seqs, starts, offsets.astype(np.int64), b"".join(c.data for c in parts)
        )

    def messages(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Per message, in stream order: its route, its sequence number, its payload's index."""
        counts = self.counts
        route = np.repeat(np.arange(len(counts)), counts)
        within = np.arange(len(route)) - np.repeat(np.cumsum(counts) - counts, counts)
        return route, self.seqs[route] + within, self.starts[route] + within

    def envelopes_with_queues(self) -> list[tuple[EncodedEnvelope, bool]]:
        """:meth:`envelopes`, each with whether a queue port published it."""
        route, _, _ = self.messages()
        queues = self.channels.queues
        return list(zip(self.envelopes(), [queues[r] for r in route.tolist()], strict=True))

    def envelopes(self) -> list[EncodedEnvelope]:
        """The same envelopes, one object each."""
        route, seqs, index = self.messages()
        protos, data, offsets = self.channels.prototypes, self.data, self.offsets
        t = self.t_ns
        return [
            EncodedEnvelope(
                t,
                t + e.deliver_ns - e.t_ns,
                e.source,
                e.topic,
                seq,
                e.priority,
                data[offsets[m] : offsets[m + 1]],
                e.message_type,
            )
            for e, seq, m in zip(map(protos.__getitem__, route.tolist()), seqs.tolist(), index.tolist())
        ]


_STATE_TYPE = VehicleState.DESCRIPTOR.full_name  # what the scene draws from
_SEQ = attrgetter("seq")


class _HeldInterrupt:
    """A Ctrl-C (SIGINT) that arrives while an instant is being written, held until it is written
    and hashed (:meth:`McapRecorder.holding_interrupts`): the file then holds whole instants, and
    the result record's count and SHA-256 are those of its messages."""

    __slots__ = ("pending", "writing")

    def __init__(self):
        self.writing = self.pending = False

    def handler(self, signum, frame) -> None:
        if not self.writing:
            raise KeyboardInterrupt
        self.pending = True

    def whole(self, write: Callable) -> Callable:
        """``write`` (of one instant), a Ctrl-C held off until it returns."""

        def written(instant) -> None:
            self.writing = True
            try:
                write(instant)
            finally:
                self.writing = False
            if self.pending:
                self.pending = False
                raise KeyboardInterrupt

        return written


class McapRecorder:
    """Writes envelopes to ``path``; call :meth:`close` (or use as a context manager) to finish."""

    def __init__(
        self,
        path: str | Path,
        metadata: dict[str, str] | None = None,
        chunk_size: int = CHUNK_BYTES,
        chunk_span_ns: int = CHUNK_SPAN_NS,
        scene: bool = True,
        log_time_offset_ns: int = 0,
    ):
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
        self._file = None  # opened at the first write: a run refused before it starts
        self._writer_ = None  # leaves an existing file alone
        self._schemas: dict[str, int] = {}
        self._channels: dict[tuple[str, str], int] = {}
        self._routes: dict[tuple[str, str, type], _Route] = {}  # by (topic, source, payload type)
        self.digest = StreamDigest()
        self._interrupt = _HeldInterrupt()
        self._buffer = self._new_buffer()
        # a run that can recover from a killed actor goes back to its last kept state (commit) and
        # runs again from there: what it wrote since stays in the file, and the re-run's envelopes
        # are checked against it (digest) until they pass its end (see rollback)
        self._kept = self.digest.copy()
        self._rerun_until: tuple[int, str] | None = None  # (count written, digest of them)
        self._closed = False
        # called with (topic, message type, log time ns, payload bytes) for every message written,
        # the stream's and the derived ones (a live server forwards them)
        self.tap = None

    def _new_buffer(self) -> StreamBuffer:
        held = self._interrupt
        return StreamBuffer(held.whole(self._write_instant), held.whole(self._write_columns))

    @contextmanager
    def holding_interrupts(self):
        """Within: a Ctrl-C (SIGINT) that arrives while an instant is written and hashed takes
        effect once it is (a KeyboardInterrupt from the recorder), so that the file holds whole
        instants and :meth:`close` counts and hashes exactly the messages it holds. In the main
        thread, over Python's own handler of SIGINT; elsewhere it changes nothing."""
        if (
            threading.current_thread() is not threading.main_thread()
            or signal.getsignal(signal.SIGINT) is not signal.default_int_handler
        ):
            yield
            return
        previous = signal.signal(signal.SIGINT, self._interrupt.handler)
        try:
            yield
        finally:
            signal.signal(signal.SIGINT, previous)

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
    def started(self) -> bool:
        """Whether the file is open: something (the run's description, a message) is written."""
        return self._writer_ is not None

    @property
    def _writer(self) -> _Writer:
        """The MCAP writer, its file opened (and the run's description written) on first use."""
        if self._writer_ is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._file = open(self.path, "wb")  # noqa: SIM115 (open for the recorder's life: close() closes it)
            self._writer_ = _Writer(self._file, chunk_size=self._chunk_size, compression=CompressionType.ZSTD)
            self._writer_.start(profile=PROFILE, library="hopsim")
            if self._metadata:
                self._writer_.add_metadata(RUN_METADATA, self._metadata)
        return self._writer_

    def record(self, env: Envelope, latency_ns: int = 0, queue: bool = False) -> None:
        if (env.topic, env.source, type(env.payload)) not in self._routes:
            self._add_route(env, queue)
        self._buffer.add(env)

    def record_columns(self, columns: EncodedColumns) -> None:
        """A row block's envelopes of one instant (see :class:`EncodedColumns`). A route's channel
        is registered at its first message, as :meth:`record` does, in the order the envelopes
        would have been recorded one by one (the routes' ranks): the first of them before the
        instant before is written (when it is the instant's first record), the others after."""
        channels = columns.channels
        written = columns.counts > 0
        new = np.flatnonzero(written & (channels.channel < 0))
        new = new[np.argsort(channels.rank[new], kind="stable")].tolist()
        if new and channels.rank[new[0]] == channels.rank[written].min():
            self._register(channels, new.pop(0))
        self._buffer.add_columns(columns)
        for p in new:
            self._register(channels, p)

    def has_channel(self, topic: str, source: str) -> bool:
        """Whether ``source``'s messages on ``topic`` have their channel in the file already."""
        return (topic, source) in self._channels

    def _register(self, channels: RowChannels, p: int) -> None:
        env = channels.prototypes[p]
        if (env.topic, env.source, bytes) not in self._routes:
            self._add_route(env, channels.queues[p])
        channels.channel[p] = self._routes[env.topic, env.source, bytes].channel_id

    def _write_columns(self, columns: EncodedColumns) -> None:
        """Write one instant's envelopes given as columns (all the instant has): what
        :meth:`_write_instant` writes for the same envelopes, without an object per envelope."""
        channels = columns.channels
        counts = columns.counts
        if self._rerun_until is not None:
            self._write_instant(columns.envelopes())
            return
        t_ns = columns.t_ns
        if self._chunk_start_ns is None:
            self._chunk_start_ns = t_ns
        elif t_ns - self._chunk_start_ns >= self._chunk_span_ns:
            self._writer.close_chunk()
            self._chunk_start_ns = t_ns
        data, offsets = columns.data, columns.offsets
        route, seqs, index = columns.messages()
        buffer = np.frombuffer(data, np.uint8)
        frames = framing.digest_frames(
            t_ns,
            counts,
            columns.seqs,
            columns.starts,
            offsets,
            buffer,
            channels.latency,
            channels.priority,
            channels.names,
            channels.names_at,
        )
        if self._scene is not None:
            states = np.flatnonzero(channels.is_state[route])
            self._flush_scene(t_ns)
            at, sources = index[states], channels.sources
            self._scene.take_packed(
                t_ns, [sources[p] for p in route[states].tolist()], buffer, offsets[at], offsets[at + 1]
            )
        t = t_ns + self._offset
        payload, lengths = framing.gather(buffer, offsets, index)
        self._writer.add_block(t, channels.channel[route], seqs, lengths, payload)
        self.digest.add_framed(frames, len(route))  # hashed once written: the digest is the file's
        if self.tap is not None:
            protos, bounds = channels.prototypes, offsets.tolist()
            for p, m in zip(route.tolist(), index.tolist()):
                self.tap(protos[p].topic, protos[p].message_type, t, data[bounds[m] : bounds[m + 1]])

    def _add_route(self, env: Envelope | EncodedEnvelope, queue: bool) -> None:
        """The route of ``env``'s (topic, source, payload type: ``bytes`` for an
        :class:`EncodedEnvelope`); its channel is registered (written to the file) when it is the
        first of its channel."""
        encoded = isinstance(env, EncodedEnvelope)
        message_type = env.message_type if encoded else type(env.payload)
        key = _channel_key(env)
        if key not in self._channels:
            metadata = {
                "source": key[1],
                "latency_ns": str(env.deliver_ns - env.t_ns),
                "priority": str(env.priority),
                "kind": "queue" if queue else "signal",
            }
            if key[1] == KERNEL_SOURCE:  # one channel per kind of kernel event, for every island
                metadata[SOURCE_FROM] = SOURCE_FROM_ISLAND
            self._channels[key] = self._register_channel(env.topic, message_type, metadata)
        type_name = message_type.DESCRIPTOR.full_name
        self._routes[env.topic, env.source, type(env.payload)] = _Route(
            self._channels[key],
            *_digest_head(env.source, env.topic, type_name),
            type_name == _STATE_TYPE,
            _as_is if encoded else deterministic_serializer(message_type),
            message_type,
        )

    def _register_channel(self, topic: str, message_type, metadata: dict[str, str]) -> int:
        """A channel of ``message_type`` messages (its schema registered once), its metadata
        naming the log time offset."""
        type_name = message_type.DESCRIPTOR.full_name
        if type_name not in self._schemas:
            self._schemas[type_name] = register_schema(self._writer, message_type)
        return self._writer.register_channel(
            topic=topic,
            message_encoding=MessageEncoding.Protobuf,
            schema_id=self._schemas[type_name],
            metadata={**metadata, LOG_TIME_OFFSET: str(self._offset)},
        )

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
        Everything recorded so far is written already (a kill loses at most the open chunk and
        the one being compressed)."""
        self._buffer.flush()
        if self._scene is not None:
            self._write_encoded(self._scene.flush_encoded())
        self._kept = self.digest.copy()

    def rollback(self) -> None:
        """The run goes back to its last commit and runs again from there (recovery from a killed
        actor). The envelopes written since stay in the file: the re-run must give them again,
        the same bit for bit (its stream is that of a run where nothing died), and they are
        checked, not written twice; the instant being recorded (incomplete) is dropped."""
        if self._rerun_until is None or self.digest.count > self._rerun_until[0]:
            self._rerun_until = (self.digest.count, self.digest.hexdigest())
        self.digest = self._kept.copy()
        self._buffer = self._new_buffer()

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
                    f"its randomness must come from its model_rng)"
                )
        return True

    def _past_rerun(self, envelopes: list[Envelope]) -> list[Envelope]:
        """The envelopes after those the re-run gives again (see :meth:`_rerun`)."""
        for i, env in enumerate(envelopes):
            if self._rerun_until is None or not self._rerun(env):
                return envelopes[i:]
        return []

    def _write_instant(self, envelopes: list[Envelope]) -> None:
        """Write one instant's envelopes (in stream order): the scene's messages of the instant
        before, then the envelopes as MCAP messages, each payload serialized once, then hash them."""
        if self._rerun_until is not None:
            envelopes = self._past_rerun(envelopes)
            if not envelopes:
                return
        t_ns = envelopes[0].t_ns
        if self._chunk_start_ns is None:
            self._chunk_start_ns = t_ns
        elif t_ns - self._chunk_start_ns >= self._chunk_span_ns:
            self._writer.close_chunk()  # the chunk spans CHUNK_SPAN_NS: close it, push the one before to disk
            self._chunk_start_ns = t_ns
        routes = self._routes
        hashed, channel_ids, datas, states = [], [], [], []
        for env in envelopes:
            payload = env.payload
            channel_id, digest_head, digest_names, is_state, serialize, _ = routes[env.topic, env.source, type(payload)]
            data = serialize(payload)
            hashed += (digest_head.pack(t_ns, env.deliver_ns, env.priority, env.seq, digest_names, len(data)), data)
            channel_ids.append(channel_id)
            datas.append(data)
            if is_state:
                states.append((env.source, data))
        if self._scene is not None:
            self._observe_scene(t_ns, states)
        t = t_ns + self._offset
        self._writer.add_columns(t, channel_ids, list(map(_SEQ, envelopes)), datas)
        self.digest.add_framed(b"".join(hashed), len(envelopes))  # hashed once written: the digest is the file's
        if self.tap is not None:
            for env, data in zip(envelopes, datas):
                self.tap(env.topic, routes[env.topic, env.source, type(env.payload)].message_type, t, data)

    def _observe_scene(self, t_ns: int, states: list[tuple[str, bytes]]) -> None:
        """Show the scene an instant (``t_ns``, ns) and its vehicle states, (publisher, serialized
        state): the instant before, complete, is drawn first, its messages written."""
        self._flush_scene(t_ns)
        if states:
            self._scene.take(t_ns, [source for source, _ in states], [data for _, data in states])

    def _flush_scene(self, t_ns: int) -> None:
        """Draw the scene's pending instant, if it is not ``t_ns`` (ns), and write its messages."""
        scene = self._scene
        if scene.pending_ns is not None and scene.pending_ns != t_ns:
            self._write_encoded(scene.flush_encoded())

    def record_derived(self, topic: str, t_ns: int, msg, kind: str) -> None:
        """A message about the run that is not part of its stream (``kind`` names what derived it,
        e.g. ``pacing``): written at once on a channel marked ``derived``, not hashed, not replayed."""
        self._write_encoded([(topic, t_ns, type(msg), msg.SerializeToString(deterministic=True))], kind)

    def _write_encoded(self, messages, kind: str = "foxglove") -> None:
        """Messages derived from the stream (Foxglove's by default), (topic, t_ns, message type,
        serialized message), on channels marked as such (not hashed)."""
        for topic, t_ns, message_type, data in messages:
            key = (topic, DERIVED)
            if key not in self._channels:
                self._channels[key] = self._register_channel(topic, message_type, {DERIVED: kind})
            t = t_ns + self._offset
            self._writer.add_columns(t, [self._channels[key]], [0], [data])
            if self.tap is not None:
                self.tap(topic, message_type, t, data)

    def close(self, result: dict[str, str] | None = None) -> None:
        if self._closed:
            return
        self.commit()
        summary = {"message_count": str(self.digest.count), "stream_sha256": self.digest.hexdigest()}
        summary.update({k: str(v) for k, v in (result or {}).items()})
        if self._rerun_until is not None:  # the file holds more than the recovered run gave again
            written, hexdigest = self._rerun_until
            summary.update(
                message_count=str(written),
                stream_sha256=hexdigest,
                stop_reason=f"{summary.get('stop_reason', '')}; the run recovered from its last kept "
                f"state ended after {self.digest.count} of the {written} envelopes "
                f"recorded before the recovery",
            )
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
    from hopsim.bus.recording_file import check_recording_file

    with open(check_recording_file(path), "rb") as f:
        reader = make_reader(f)
        for schema, channel, message in reader.iter_messages(log_time_order=False):
            if is_derived(channel.metadata):
                continue
            latency = int(channel.metadata.get("latency_ns", "0"))
            t_ns = message.log_time - log_time_offset(channel.metadata)
            yield EnvelopeProto(
                t_ns=t_ns,
                deliver_ns=t_ns + latency,
                source=envelope_source(channel.metadata, message.data),
                topic=channel.topic,
                seq=message.sequence,
                priority=int(channel.metadata.get("priority", "0")),
                type_name=schema.name if schema else "",
                payload=message.data,
            )


def read_metadata(path: str | Path) -> dict[str, dict[str, str]]:
    """The file's metadata records by name (run description and result summary), read without
    decompressing anything (:func:`hopsim.bus.chunks.metadata_records`); a record whose SHA-256
    does not match its content (:func:`metadata_intact`) is left out."""
    from hopsim.bus.chunks import metadata_records
    from hopsim.bus.recording_file import check_recording_file

    out = {}
    for name, record in metadata_records(check_recording_file(path).read_bytes()):
        if metadata_intact(name, record) is not False:
            record.pop(METADATA_SHA256, None)
            out[name] = record
    return out


def envelope_stream_bytes(envelopes: Iterable[EnvelopeProto]) -> list[bytes]:
    return [e.SerializeToString(deterministic=True) for e in envelopes]


def dumps_params(params: dict) -> str:
    return json.dumps(params, sort_keys=True, separators=(",", ":"))
