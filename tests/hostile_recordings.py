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
