"""A recording's chunks, read with bounded work whatever the file holds.

An MCAP chunk record declares how many bytes its records take once decompressed. A damaged or
crafted one may declare gigabytes, or inflate to far more than it declares (a zstd frame of
zeros takes 4 bytes per 128 KiB: 65 KB on disk make 2 GiB). :func:`inflate` checks the declared
size against :data:`MAX_CHUNK_BYTES` before decompressing anything, decompresses into at most
that many bytes, and checks the CRC: a chunk that fails any of these is damaged
(:class:`DamagedChunk`) and is not read.

A :class:`ReadingBudget` caps what one reading of a file decompresses and checksums in all
(:data:`MAX_INFLATION` times the file's size), and how many messages it takes (one per
:data:`MIN_BYTES_PER_MESSAGE` bytes of the file), so that a file of many such chunks, or of
chunk-like bytes tried one after the other while resynchronizing after damage, costs time and
memory in proportion to its size. hopsim's own recordings stay far inside both: their chunks
hold at most :data:`hopsim.bus.recorder.CHUNK_BYTES` (256 KiB) plus one message, they inflate to
2 to 4 times the file's size, and every message has a 16-byte index entry outside its chunk.

Every integer is little-endian; the readers (:mod:`hopsim.bus.reading`,
:mod:`hopsim.view.columns`, :func:`metadata_records`) walk records by opcode and length, never
past the file's end.
"""

from __future__ import annotations

import struct
import zlib
from dataclasses import dataclass

MAGIC = b"\x89MCAP0\r\n"
HEADER, FOOTER, SCHEMA, CHANNEL, MESSAGE, CHUNK, METADATA = 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x0C
KNOWN_OPCODES = frozenset(range(0x01, 0x10))  # MCAP's records, Header (0x01) to DataEnd (0x0F)

MAX_CHUNK_BYTES = 64 << 20
"""The most a chunk's records may take decompressed (bytes): 256 times the recorder's chunks. A
chunk declaring more is damaged, and is not decompressed."""

MAX_INFLATION = 16
"""What one reading of a file may decompress and checksum in all, per byte of the file (plus one
:data:`MAX_CHUNK_BYTES`). hopsim's recordings inflate to 2 to 4 times their size."""

MIN_BYTES_PER_MESSAGE = 16
"""A hopsim recording holds at least this many bytes per message (each message's entry in its
chunk's message index, outside the chunk): a reading takes at most one message per this many
bytes of the file."""

COMPRESSIONS = ("", "zstd", "lz4")
RECORD_HEAD = struct.Struct("<BQ")  # opcode, length of what follows
_CHUNK_FIXED = struct.Struct("<QQQII")  # message start and end time, uncompressed size, CRC, compression's length
_U32, _U64 = struct.Struct("<I"), struct.Struct("<Q")


class DamagedChunk(ValueError):
    """A chunk that cannot be read: malformed, over the size limit, or failing its CRC."""


class Malformed(ValueError):
    """A record whose fields do not fit in it."""


class BudgetSpent(Exception):
    """A reading has decompressed, checksummed or taken as much as its file's size allows."""


@dataclass(frozen=True)
class ChunkHead:
    """A chunk record's fixed fields, and where its (compressed) records lie in the file."""

    start_ns: int  # its messages' earliest log time
    end_ns: int  # and latest
    uncompressed_size: int
    crc: int  # CRC-32 of the decompressed records; 0: none
    compression: str
    records_at: int  # the compressed records are data[records_at:records_end]
    records_end: int


def chunk_head(data, body: int, end: int, exact: bool = False) -> ChunkHead:
    """The chunk record whose body is ``data[body:end]``; :class:`DamagedChunk` if its fields do
    not fit in it (``exact``: fill it, as every writer's do) or name an unknown compression."""
    if body + _CHUNK_FIXED.size > end:
        raise DamagedChunk("a chunk record too short for its fields")
    start_ns, end_ns, size, crc, name_length = _CHUNK_FIXED.unpack_from(data, body)
    at = body + _CHUNK_FIXED.size
    if name_length > 8 or at + name_length + 8 > end:
        raise DamagedChunk("a chunk record whose compression name does not fit")
    try:
        compression = bytes(data[at : at + name_length]).decode()
    except UnicodeDecodeError:
        raise DamagedChunk("a chunk record whose compression name is not text") from None
    if compression not in COMPRESSIONS:
        raise DamagedChunk(f"a chunk compressed with {compression!r}, which is not one of MCAP's")
    (records_length,) = _U64.unpack_from(data, at + name_length)
    records_at = at + name_length + 8
    records_end = records_at + records_length
    if records_end > end or (exact and records_end != end):
        raise DamagedChunk("a chunk record whose records do not fit in it")
    return ChunkHead(start_ns, end_ns, size, crc, compression, records_at, records_end)


class ReadingBudget:
    """What one reading of a file of ``file_size`` bytes may still do (see the module's text)."""

    def __init__(self, file_size: int):
        self.bytes_left = MAX_CHUNK_BYTES + MAX_INFLATION * file_size
        self.messages_left = max(file_size // MIN_BYTES_PER_MESSAGE, 1 << 16)

    def spend_bytes(self, n: int) -> None:
        self._spend("bytes_left", n, f"its chunks inflate to more than {MAX_INFLATION} times the file's size")

    def spend_messages(self, n: int) -> None:
        self._spend("messages_left", n, f"it holds more than one message per {MIN_BYTES_PER_MESSAGE} bytes of the file")

    def _spend(self, budget: str, n: int, what: str) -> None:
        """``n`` more of ``budget``; all of it gone, and BudgetSpent (``what`` happened), if too few."""
        left = getattr(self, budget)
        if n > left:
            setattr(self, budget, 0)
            raise BudgetSpent(f"{what}, which hopsim's recordings never do (a crafted or damaged file)")
        setattr(self, budget, left - n)


def inflate(data, head: ChunkHead, budget: ReadingBudget | None = None):
    """The decompressed records of the chunk ``head`` of the file ``data`` (bytes, or a view of
    ``data`` for an uncompressed chunk), checked against its declared size and its CRC;
    :class:`DamagedChunk` if it cannot be read. The declared size is checked (and spent from
    ``budget``) before anything is decompressed, and decompression never goes past it."""
    size = head.uncompressed_size
    if size > MAX_CHUNK_BYTES:
        raise DamagedChunk(
            f"a chunk declares {size} bytes of records, over the {MAX_CHUNK_BYTES >> 20} MiB a chunk may hold"
        )
    if budget is not None:
        budget.spend_bytes(size)
    records = memoryview(data)[head.records_at : head.records_end]
    try:
        if head.compression == "zstd":
            out = _unzstd(records, size)
        elif head.compression == "lz4":
            out = _unlz4(records, size)
        else:
            out = records
    except DamagedChunk:
        raise
    except Exception as err:
        raise DamagedChunk(f"a chunk's compressed records are damaged ({type(err).__name__}: {err})") from None
    if len(out) != size:
        holds = f"more than {size}" if len(out) > size else len(out)
        raise DamagedChunk(f"a chunk declares {size} bytes of records and holds {holds}")
    if head.crc and zlib.crc32(out) != head.crc:
        raise DamagedChunk(
            f"a chunk's checksum does not match (damaged bytes): CRC-32 {zlib.crc32(out):#010x}, "
            f"recorded {head.crc:#010x}"
        )
    return out


def _unzstd(records, size: int) -> bytes:
    import zstandard

    # the frame's own content size, when it has one, is what zstandard allocates: it must be the
    # declared one (checked first); without one, max_output_size bounds the output
    content = zstandard.frame_content_size(records)
    if content not in (-1, size):
        raise DamagedChunk(f"a chunk declares {size} bytes of records and its zstd frame {content}")
    return zstandard.ZstdDecompressor().decompress(records, max_output_size=max(size, 1))


def _unlz4(records, size: int) -> bytes:
    import lz4.frame

    content = lz4.frame.get_frame_info(records).get("content_size", 0)
    if content not in (0, size):
        raise DamagedChunk(f"a chunk declares {size} bytes of records and its lz4 frame {content}")
    return lz4.frame.LZ4FrameDecompressor().decompress(records, max_length=size + 1)


def string_at(buf, p: int, end: int) -> tuple[str, int]:
    """The MCAP string (its length, uint32, then UTF-8) at ``buf[p]``, within ``end``, and where
    it ends; :class:`Malformed` if it does not fit or is not UTF-8."""
    if p + 4 > end:
        raise Malformed("a string's length runs past its record")
    (n,) = _U32.unpack_from(buf, p)
    if p + 4 + n > end:
        raise Malformed("a string runs past its record")
    try:
        return str(buf[p + 4 : p + 4 + n], "utf-8"), p + 4 + n
    except UnicodeDecodeError:
        raise Malformed("a string that is not UTF-8") from None


def string_map_at(buf, p: int, end: int) -> tuple[dict[str, str], int]:
    """The MCAP map of strings to strings at ``buf[p]``, within ``end``, and where it ends."""
    if p + 4 > end:
        raise Malformed("a map's length runs past its record")
    (size,) = _U32.unpack_from(buf, p)
    p, stop = p + 4, p + 4 + size
    if stop > end:
        raise Malformed("a map runs past its record")
    out = {}
    while p < stop:
        key, p = string_at(buf, p, stop)
        out[key], p = string_at(buf, p, stop)
    return out, stop


def metadata_records(data) -> list[tuple[str, dict[str, str]]]:
    """(name, content) of the metadata records of the MCAP file ``data``, in file order: its
    top-level records walked from the start (chunks passed over, never decompressed) up to its
    footer, or to the first record that does not fit."""
    out = []
    if bytes(data[: len(MAGIC)]) != MAGIC:
        return out
    p, size = len(MAGIC), len(data)
    while p + 9 <= size:
        opcode, length = RECORD_HEAD.unpack_from(data, p)
        end = p + 9 + length
        if end > size or opcode == FOOTER:
            break
        if opcode == METADATA:
            try:
                name, q = string_at(data, p + 9, end)
                out.append((name, string_map_at(data, q, end)[0]))
            except Malformed:
                break
        p = end
    return out
