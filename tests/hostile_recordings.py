"""Crafted and damaged recordings, made from a real one: chunks that inflate to gigabytes, runs of
chunk-opcode candidates, flipped bytes in metadata records, a run's stop before its end.

    python tests/hostile_recordings.py DIR

writes each of them to DIR (with the small recording they are made from), for timing the
commands that read them by hand.
"""

from __future__ import annotations

import struct
import sys
from pathlib import Path

MAGIC = b"\x89MCAP0\r\n"
CHUNK, METADATA, FOOTER = 0x06, 0x0C, 0x02
_RECORD_HEAD = struct.Struct("<BQ")


def records(data: bytes) -> list[tuple[int, int, int]]:
    """(offset, opcode, length) of the top-level records of an undamaged file, up to its footer."""
    found, p = [], len(MAGIC)
    while p + 9 <= len(data):
        opcode, length = _RECORD_HEAD.unpack_from(data, p)
        found.append((p, opcode, length))
        if opcode == FOOTER:
            break
        p += 9 + length
    return found


def chunk_record(compression: str, compressed: bytes, uncompressed_size: int, crc: int = 0) -> bytes:
    """An MCAP chunk record holding ``compressed`` as its records, declaring ``uncompressed_size``
    and ``crc`` (0: none)."""
    name = compression.encode()
    body = struct.pack("<QQQI", 0, 0, uncompressed_size, crc)
    body += struct.pack("<I", len(name)) + name + struct.pack("<Q", len(compressed)) + compressed
    return _RECORD_HEAD.pack(CHUNK, len(body)) + body


def zstd_zeros(size: int, content_size: bool) -> bytes:
    """A zstd frame of ``size`` zero bytes (about 4 bytes per 128 KiB), with the content size in
    its header or not."""
    import zstandard

    compressor = zstandard.ZstdCompressor(level=1, write_content_size=content_size)
    stream = compressor.compressobj(size=size if content_size else -1)
    piece, out, left = bytes(1 << 24), [], size
    while left:
        out.append(stream.compress(piece[: min(left, len(piece))]))
        left -= min(left, len(piece))
    out.append(stream.flush())
    return b"".join(out)


def lz4_zeros(size: int) -> bytes:
    """An lz4 frame of ``size`` zero bytes (lz4 gives at most about 255 to 1)."""
    import lz4.frame

    compressor = lz4.frame.LZ4FrameCompressor()
    piece, out, left = bytes(1 << 24), [compressor.begin()], size
    while left:
        out.append(compressor.compress(piece[: min(left, len(piece))]))
        left -= min(left, len(piece))
    out.append(compressor.flush())
    return b"".join(out)


def before_first_chunk(data: bytes, record: bytes) -> bytes:
    """``data`` with ``record`` put in front of its first chunk (after the header and the run's
    description)."""
    first = next(offset for offset, opcode, _ in records(data) if opcode == CHUNK)
    return data[:first] + record + data[first:]


def bomb(data: bytes, compression: str = "zstd", size: int = 2 << 30, declared: int | None = None) -> bytes:
    """``data`` with a chunk of ``size`` zero bytes, compressed, put before its first chunk,
    declaring ``declared`` uncompressed bytes (default: ``size``, the truth)."""
    compressed = zstd_zeros(size, content_size=declared is None) if compression == "zstd" else lz4_zeros(size)
    return before_first_chunk(data, chunk_record(compression, compressed, size if declared is None else declared))


def opcode_run(data: bytes, size: int = 4 << 20, step: int = 64) -> bytes:
    """The header and run description of ``data``, then ``size`` bytes of chunk records' heads,
    one every ``step`` bytes, each well formed (uncompressed, its records running to the end of
    the file, a CRC that does not match): every one of them looks like a chunk until its CRC is
    computed over the rest of the file."""
    first = next(offset for offset, opcode, _ in records(data) if opcode == CHUNK)
    out = bytearray(data[:first])
    start, total = len(out), first + size
    for p in range(start, total - step, step):
        records_length = total - (p + 9 + 40)
        head = struct.pack("<BQQQQI", CHUNK, 40 + records_length, 0, 0, records_length, 0xDEADBEEF)
        head += struct.pack("<I", 0) + struct.pack("<Q", records_length)
        out += head + bytes(step - len(head))
    out += bytes(total - len(out))
    return bytes(out)


def flip_in_metadata(data: bytes, name: bytes, word: bytes) -> bytes:
    """``data`` with one bit of the first ``word`` inside the metadata record named ``name`` flipped."""
    for offset, opcode, length in records(data):
        if opcode == METADATA and data[offset + 13 : offset + 13 + len(name)] == name:
            at = data.index(word, offset, offset + 9 + length)
            return data[:at] + bytes([data[at] ^ 0x02]) + data[at + 1 :]
    raise ValueError(f"no metadata record {name!r} holding {word!r}")


MESSAGE, MESSAGE_INDEX, DATA_END = 0x05, 0x07, 0x0F


def pose_base(path: Path, vehicles: int) -> Path:
    """A recording of ``vehicles`` vehicles (``v0``, ``v1``, ...) with one truth state each, at t = 0:
    the channels :func:`many_poses` fills."""
    from hopsim.bus.envelope import Envelope
    from hopsim.bus.recorder import McapRecorder
    from hopsim.schemas import Quaternion, Vector3, VehicleState

    recorder = McapRecorder(path, {"scenario": "crafted"})
    for k in range(vehicles):
        name = f"v{k}"
        state = VehicleState(vehicle=name, r_BN_N=Vector3(x=7.0e6 + k, y=1.0, z=2.0), q_BN=Quaternion(w=1.0))
        recorder.record(
            Envelope(t_ns=0, deliver_ns=0, source=name, topic=f"{name}/state", seq=0, priority=0, payload=state)
        )
    recorder.close()
    return path


def many_poses(base: Path, size: int, per_chunk: int = 20_000) -> bytes:
    """``base`` (made by :func:`pose_base`) with about ``size`` bytes of zstd chunks of small truth
    states put before its first chunk, each followed by its message indexes as MCAP writes them:
    the vehicles in turn, every message at an instant of its own (1 us apart), each position a
    little further. A valid file that holds about one message per 25 bytes (the most a reading
    takes is one per 16)."""
    import zlib

    import numpy as np
    import zstandard

    from hopsim.schemas import Quaternion, Vector3, VehicleState
    from hopsim.view.columns import ColumnReader

    channels = ColumnReader(base).channels
    ids = np.array(sorted(cid for cid, c in channels.items() if c[0].endswith("/state")), dtype=np.uint16)
    payload = VehicleState(r_BN_N=Vector3(x=7.0e6, y=1.0, z=2.0), q_BN=Quaternion(x=0.5, y=0.5, z=0.5, w=0.5))
    body = np.frombuffer(payload.SerializeToString(), np.uint8)
    x_at = body.tobytes().index(np.float64(7.0e6).tobytes())  # the position's x: varied per message
    record = np.dtype(
        [("op", "u1"), ("length", "<u8"), ("channel", "<u2"), ("seq", "<u4"), ("log", "<u8"), ("pub", "<u8"),
         ("payload", "u1", len(body))]
    )  # fmt: skip
    compressor = zstandard.ZstdCompressor(level=3)
    out, written, n = [], 0, 0
    while written < size:
        k = np.arange(n, n + per_chunk, dtype=np.uint64)
        rec = np.zeros(per_chunk, record)
        rec["op"], rec["length"] = MESSAGE, record.itemsize - 9
        rec["channel"], rec["seq"] = ids[k % len(ids)], k
        rec["log"] = rec["pub"] = 1_000_000_000 + 1_000 * k
        rec["payload"] = body
        rec["payload"][:, x_at : x_at + 8] = (7.0e6 + 1e-3 * k.astype(float)).view(np.uint8).reshape(-1, 8)
        records = rec.tobytes()
        chunk = chunk_record("zstd", compressor.compress(records), len(records), zlib.crc32(records))
        offsets = np.arange(per_chunk, dtype=np.uint64) * np.uint64(record.itemsize)
        index = []
        for cid in ids.tolist():
            mine = rec["channel"] == cid
            pairs = np.empty((int(mine.sum()), 2), "<u8")
            pairs[:, 0], pairs[:, 1] = rec["log"][mine], offsets[mine]
            entries = pairs.tobytes()
            index.append(
                _RECORD_HEAD.pack(MESSAGE_INDEX, 6 + len(entries)) + struct.pack("<HI", cid, len(entries)) + entries
            )
        # the chunk's head takes its time span from its messages
        chunk = chunk[:9] + struct.pack("<QQ", int(rec["log"][0]), int(rec["log"][-1])) + chunk[25:]
        out.append(chunk + b"".join(index))
        written += len(out[-1])
        n += per_chunk
    return before_data_end(base.read_bytes(), b"".join(out))


def before_data_end(data: bytes, inserted: bytes) -> bytes:
    """``data`` with ``inserted`` (whole records) at the end of its data section, before its DataEnd
    record (whose CRC becomes 0: not computed), the footer and the summary offsets moved to match,
    and the summary's CRC computed again: a valid file."""
    import zlib

    found = records(data)
    end = next(offset for offset, opcode, _ in found if opcode == DATA_END)
    data = data[:end] + _RECORD_HEAD.pack(DATA_END, 4) + struct.pack("<I", 0) + data[end + 13 :]
    shift = len(inserted)
    out = bytearray(data[:end] + inserted + data[end:])
    footer = len(out) - len(MAGIC) - 29
    summary_start, offsets_start, _ = struct.unpack_from("<QQI", out, footer + 9)
    p = offsets_start + shift if offsets_start else footer
    while offsets_start and p < footer:  # SummaryOffset: opcode, group start, group length
        struct.pack_into("<Q", out, p + 10, struct.unpack_from("<Q", out, p + 10)[0] + shift)
        p += 9 + struct.unpack_from("<Q", out, p + 1)[0]
    struct.pack_into("<QQ", out, footer + 9, summary_start + shift, offsets_start + shift if offsets_start else 0)
    struct.pack_into("<I", out, footer + 25, zlib.crc32(out[summary_start + shift : footer + 25]))
    return bytes(out)


def make_all(directory: Path, source: Path) -> dict[str, Path]:
    """Write every hostile file made from ``source`` to ``directory``; their paths by name."""
    data = source.read_bytes()
    made = {
        "zstd_bomb": bomb(data, "zstd"),
        "zstd_bomb_small_declared": bomb(data, "zstd", declared=200_000),
        "lz4_bomb": bomb(data, "lz4", size=256 << 20),
        "opcode_run": opcode_run(data),
        "flipped_description": flip_in_metadata(data, b"hopsim.run", b'"control_gain":'),
    }
    paths = {}
    for name, content in made.items():
        paths[name] = directory / f"{name}.mcap"
        paths[name].write_bytes(content)
    return paths


if __name__ == "__main__":
    from hopsim.scenarios.runner import run_scenario

    where = Path(sys.argv[1])
    where.mkdir(parents=True, exist_ok=True)
    small = where / "small.mcap"
    run_scenario("lander", {}, seed=1, duration_s=5.0, out=small)
    for name, path in make_all(where, small).items():
        print(f"{name}: {path} ({path.stat().st_size} bytes)")
