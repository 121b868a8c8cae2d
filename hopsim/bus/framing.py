"""Compiled framing of the recorder's byte streams, many messages per call.

- :func:`message_records`: MCAP Message records (what mcap's ``Message.write`` writes for each).
- :func:`message_indexes`: a chunk's MCAP MessageIndex records, one per channel in the order of
  the channel's first message in the chunk (what mcap's Writer writes when it closes a chunk).
- :func:`chunk_index_record`: a chunk's MCAP ChunkIndex record (what mcap's ``ChunkIndex.write``
  writes in the summary for each chunk, its map of message index offsets in one piece).
- :func:`gather`: payloads put in another order, one after the other.
- :func:`channel_tally`: how many messages each channel has, channels in the order of their first.
- :func:`digest_frames`: what the stream digest hashes for each of an instant's envelopes
  (:class:`hopsim.bus.recorder.StreamDigest`), for messages given as columns.

All integers are little-endian; the payloads arrive as one buffer with their lengths.
tests/test_recording.py checks the bytes against mcap's own Writer.
"""

from __future__ import annotations

import struct

import numpy as np
from mcap.opcode import Opcode
from numba import njit

MESSAGE_OPCODE, MESSAGE_INDEX_OPCODE = int(Opcode.MESSAGE), int(Opcode.MESSAGE_INDEX)
CHUNK_INDEX_OPCODE = int(Opcode.CHUNK_INDEX)
# a chunk index's map entry: channel id, then the offset of its message index in the file
_OFFSET_ENTRY = np.dtype([("channel", "<u2"), ("offset", "<u8")])
MESSAGE_HEAD = 31  # opcode, record length, channel id, sequence, log time, publish time


@njit(cache=True)
def _put(out, pos, value, size):
    """Write the ``size`` low bytes of ``value`` (two's complement) at ``out[pos]``."""
    for b in range(size):
        out[pos + b] = (value >> (8 * b)) & 0xFF


@njit(cache=True)
def _message_records(channel_ids, sequences, log_times, lengths, payload, first_offset, out, offsets):
    pos = 0
    src = 0
    for i in range(len(lengths)):
        size = lengths[i]
        offsets[i] = first_offset + pos
        out[pos] = MESSAGE_OPCODE
        _put(out, pos + 1, MESSAGE_HEAD - 9 + size, 8)
        _put(out, pos + 9, channel_ids[i], 2)
        _put(out, pos + 11, sequences[i], 4)
        _put(out, pos + 15, log_times[i], 8)
        _put(out, pos + 23, log_times[i], 8)
        out[pos + MESSAGE_HEAD : pos + MESSAGE_HEAD + size] = payload[src : src + size]
        pos += MESSAGE_HEAD + size
        src += size


def message_records(
    channel_ids: np.ndarray,
    sequences: np.ndarray,
    log_times: np.ndarray,
    lengths: np.ndarray,
    payload: np.ndarray,
    first_offset: int,
) -> tuple[np.ndarray, np.ndarray]:
    """The Message records of ``len(lengths)`` messages, one after the other (uint8), and the
    offset of each (int64: ``first_offset`` plus its place in the records, bytes).

    ``channel_ids`` (< 2^16), ``sequences`` (< 2^32), ``log_times`` (ns; the publish time is the
    log time) and ``lengths`` (bytes): int64 arrays; ``payload``: the payloads one after the other (uint8)."""
    out = np.empty(MESSAGE_HEAD * len(lengths) + len(payload), np.uint8)
    offsets = np.empty(len(lengths), np.int64)
    _message_records(channel_ids, sequences, log_times, lengths, payload, first_offset, out, offsets)
    return out, offsets


@njit(cache=True)
def _message_indexes(channel_ids, log_times, offsets):
    n = len(channel_ids)
    top = 0
    for i in range(n):
        top = max(top, channel_ids[i])
    count = np.zeros(top + 1, np.int64)
    order = np.empty(n, np.int64)  # channels by first message
    channels = 0
    for i in range(n):
        c = channel_ids[i]
        if count[c] == 0:
            order[channels] = c
            channels += 1
        count[c] += 1
    start = np.zeros(top + 1, np.int64)  # each channel's record, then its next entry
    record_starts = np.empty(channels, np.int64)
    pos = 0
    out = np.empty(15 * channels + 16 * n, np.uint8)
    for k in range(channels):
        c = order[k]
        record_starts[k] = pos
        out[pos] = MESSAGE_INDEX_OPCODE
        _put(out, pos + 1, 6 + 16 * count[c], 8)
        _put(out, pos + 9, c, 2)
        _put(out, pos + 11, 16 * count[c], 4)
        start[c] = pos + 15
        pos += 15 + 16 * count[c]
    for i in range(n):
        c = channel_ids[i]
        _put(out, start[c], log_times[i], 8)
        _put(out, start[c] + 8, offsets[i], 8)
        start[c] += 16
    return out, order[:channels].copy(), record_starts


def message_indexes(
    channel_ids: np.ndarray, log_times: np.ndarray, offsets: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A chunk's MessageIndex records (uint8), for messages given in chunk order by channel id,
    log time (ns) and offset in the chunk (bytes), int64 arrays: one record per
    channel, channels in the order of their first message; also those channels (int64) and the
    start of each one's record in the bytes returned (int64, bytes)."""
    return _message_indexes(channel_ids, log_times, offsets)


def chunk_index_record(
    message_start_time: int,
    message_end_time: int,
    chunk_start_offset: int,
    chunk_length: int,
    channels: np.ndarray,
    index_offsets: np.ndarray,
    message_index_length: int,
    compression: str,
    compressed_size: int,
    uncompressed_size: int,
) -> bytes:
    """A ChunkIndex record: times (ns), the chunk's place and length in the file (bytes), the
    offset in the file of each channel's message index (``channels`` and ``index_offsets``, int64,
    in that order), the message indexes' total length, the compression and the chunk's sizes."""
    entries = np.empty(len(channels), _OFFSET_ENTRY)
    entries["channel"] = channels
    entries["offset"] = index_offsets
    name = compression.encode()
    body = b"".join(
        (
            struct.pack(
                "<QQQQI", message_start_time, message_end_time, chunk_start_offset, chunk_length, entries.nbytes
            ),
            entries.tobytes(),
            struct.pack("<QI", message_index_length, len(name)),
            name,
            struct.pack("<QQ", compressed_size, uncompressed_size),
        )
    )
    return struct.pack("<BQ", CHUNK_INDEX_OPCODE, len(body)) + body


@njit(cache=True)
def _gather(data, offsets, index, out, lengths):
    pos = 0
    for k in range(len(index)):
        a, b = offsets[index[k]], offsets[index[k] + 1]
        lengths[k] = b - a
        out[pos : pos + b - a] = data[a:b]
        pos += b - a


def gather(data: np.ndarray, offsets: np.ndarray, index: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Payloads ``data[offsets[m]:offsets[m + 1]]`` for ``m`` in ``index``, one after the other
    (uint8), and their lengths (int64). ``data`` uint8, ``offsets`` and ``index`` int64."""
    lengths = np.empty(len(index), np.int64)
    out = np.empty(int((offsets[index + 1] - offsets[index]).sum()), np.uint8)
    _gather(data, offsets, index, out, lengths)
    return out, lengths


@njit(cache=True)
def channel_tally(channel_ids):
    """The channels of messages given by channel id (int64, >= 0) in the order of their first
    message, and each one's count (int64 arrays)."""
    count = np.zeros(channel_ids.max() + 1, np.int64)
    order = np.empty(len(channel_ids), np.int64)
    n = 0
    for c in channel_ids:
        if count[c] == 0:
            order[n] = c
            n += 1
        count[c] += 1
    channels = order[:n].copy()
    return channels, count[channels]


@njit(cache=True)
def _digest_frames(t_ns, counts, seqs, starts, offsets, data, latency, priority, names, names_at, out):
    """See :func:`digest_frames`; returns the bytes written."""
    pos = 0
    for p in range(len(counts)):
        for c in range(counts[p]):
            m = starts[p] + c
            a, b = offsets[m], offsets[m + 1]
            _put(out, pos, t_ns, 8)
            _put(out, pos + 8, t_ns + latency[p], 8)
            _put(out, pos + 16, priority[p], 4)
            _put(out, pos + 20, seqs[p] + c, 8)
            pos += 28
            for k in range(names_at[p], names_at[p + 1]):
                out[pos] = names[k]
                pos += 1
            _put(out, pos, b - a, 4)
            pos += 4
            for k in range(a, b):
                out[pos] = data[k]
                pos += 1
    return pos


def digest_frames(
    t_ns: int,
    counts: np.ndarray,
    seqs: np.ndarray,
    starts: np.ndarray,
    offsets: np.ndarray,
    data: np.ndarray,
    latency: np.ndarray,
    priority: np.ndarray,
    names: np.ndarray,
    names_at: np.ndarray,
) -> bytes:
    """The bytes the stream digest hashes for the envelopes of one instant published at ``t_ns``,
    in stream order: route ``p`` (in that order) has ``counts[p]`` of them, sequence numbers from
    ``seqs[p]``, payloads ``data[offsets[m]:offsets[m + 1]]`` for ``m`` from ``starts[p]``, its
    latency (ns), priority and names (``names[names_at[p]:names_at[p + 1]]``: their length,
    uint32, then ``source\0topic\0type\0``). Per envelope: t_ns, deliver_ns (int64), priority
    (int32), seq (uint64), the names, the payload's length (uint32), the payload."""
    n = int(np.sum(counts))
    size = 32 * n + int(np.sum(counts * np.diff(names_at))) + int(offsets[-1]) if n else 0
    out = np.empty(size, np.uint8)
    written = _digest_frames(t_ns, counts, seqs, starts, offsets, data, latency, priority, names, names_at, out)
    return out[:written].tobytes()
