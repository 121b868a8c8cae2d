"""Damaged and crafted recordings are read with bounded time and memory, whatever their content:
the reader returns what is intact, or hopsim's own error, never another exception.

The fuzz tests (hypothesis) damage a small real recording, made once per test session: bytes
flipped, zeroed or cut, runs of chunk opcodes and crafted chunk records put in. ``make test``
runs 50 examples of each; ``make fuzz`` many more (``HOPSIM_FUZZ_EXAMPLES``). The known failures
each have a test of their own: a 65 KB chunk that inflates to 2 GiB, a file of chunk-record heads
that made resynchronizing quadratic, a flipped byte in the run's description, the headline of a
run interrupted in its first second.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from hopsim.bus.chunks import MAX_CHUNK_BYTES
from hopsim.bus.reading import read_recording, survey_recording
from hopsim.bus.recorder import RESULT_METADATA, RUN_METADATA
from hopsim.cli import app
from hopsim.scenarios.catalog import get_scenario
from hopsim.scenarios.lander import LanderParams
from hopsim.scenarios.registry import scenario
from hopsim.scenarios.replay import ReplayError, replay_recording
from hopsim.scenarios.runner import run_scenario
from hopsim.view.columns import ColumnReader, SignalError, read_signals

sys.path.insert(0, str(Path(__file__).parent))
import hostile_recordings as hostile

FUZZ_EXAMPLES = int(os.environ.get("HOPSIM_FUZZ_EXAMPLES", "50"))
FUZZ = settings(
    max_examples=FUZZ_EXAMPLES,
    deadline=10_000,  # ms per example: a few ms each on an idle machine; shared machines are slower
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow, HealthCheck.data_too_large],
    derandomize=FUZZ_EXAMPLES <= 50,  # make test: the same examples every run; make fuzz: new ones
)
SIGNAL = "lander/state.r_BN_N.z"
runner = CliRunner()


@pytest.fixture(scope="session")
def small(tmp_path_factory) -> Path:
    """A lander's 5 s, with its stream as read from the intact file."""
    path = tmp_path_factory.mktemp("hostile") / "small.mcap"
    run_scenario("lander", {}, seed=1, duration_s=5.0, out=path)
    return path


@pytest.fixture(scope="session")
def intact(small) -> list[bytes]:
    envelopes, report = read_recording(small)
    assert report.complete and len(envelopes) > 300
    return [e.SerializeToString() for e in envelopes]


def is_subsequence(got: list[bytes], full: list[bytes]) -> bool:
    it = iter(full)
    return all(any(g == f for f in it) for g in got)


def read_every_way(path: Path) -> list[bytes]:
    """Read ``path`` as every command does (inspect, replay's reader, the viewer's and plot's
    columns); only hopsim's own errors may come out. The stream read, serialized."""
    envelopes, report = read_recording(path)
    assert isinstance(report.summary(), str)
    counts, surveyed = survey_recording(path)
    assert sum(counts.values()) == len(envelopes) and surveyed.summary() == report.summary()
    try:
        reader = ColumnReader(path)
        read_signals(reader, [SIGNAL])
    except SignalError:
        pass
    res = runner.invoke(app, ["inspect", str(path)])
    assert res.exit_code in (0, 1) and (res.exception is None or isinstance(res.exception, SystemExit)), res.output
    return [e.SerializeToString() for e in envelopes]


# ---------------------------------------------------------------------------------------- fuzz

_DAMAGE = st.one_of(
    st.tuples(st.just("flip"), st.floats(0, 1), st.integers(0, 7)),
    st.tuples(st.just("zero"), st.floats(0, 1), st.integers(1, 512)),
    st.tuples(st.just("cut"), st.floats(0, 1), st.just(0)),
)
_CRAFTED = st.one_of(
    st.tuples(st.just("opcodes"), st.floats(0, 1), st.integers(1, 4096)),
    st.tuples(st.just("heads"), st.floats(0, 1), st.integers(1, 64)),
    st.tuples(
        st.just("chunk"),
        st.floats(0, 1),
        st.tuples(
            st.sampled_from(["zstd", "lz4", "", "br"]),
            st.sampled_from([0, 1, 1000, MAX_CHUNK_BYTES, MAX_CHUNK_BYTES + 1, 2 << 30, 2**64 - 1]),
            st.integers(0, 2**32 - 1),
            st.booleans(),
        ),
    ),
)


def apply(data: bytes, kind: str, where: float, arg) -> bytes:
    at = min(int(where * len(data)), len(data) - 1)
    if kind == "flip":
        return data[:at] + bytes([data[at] ^ (1 << arg)]) + data[at + 1 :]
    if kind == "zero":
        return data[:at] + bytes(min(arg, len(data) - at)) + data[at + arg :]
    if kind == "cut":
        return data[:at]
    if kind == "opcodes":
        return data[:at] + bytes([hostile.CHUNK]) * arg + data[at:]
    if kind == "heads":  # chunk-record heads whose records run to the end of the file
        return _heads(data, at, arg)
    compression, declared, crc, bomb = arg
    if bomb and compression == "zstd":
        records = hostile.zstd_zeros(1 << 20, content_size=declared == 0)
    elif bomb and compression == "lz4":
        records = hostile.lz4_zeros(1 << 20)
    else:
        records = data[at : at + 200]
    return data[:at] + hostile.chunk_record(compression, records, declared, crc) + data[at:]


def _heads(data: bytes, at: int, n: int) -> bytes:
    """``data`` with ``n`` chunk-record heads put in at ``at``, each claiming the rest of the file."""
    import struct

    out = bytearray(data[:at])
    total = len(data) + 64 * n
    for k in range(n):
        p = at + 64 * k
        length = total - (p + 9 + 40)
        head = struct.pack("<BQQQQIIQ", hostile.CHUNK, 40 + length, 0, 0, length, 0xDEADBEEF, 0, length)
        out += head + bytes(64 - len(head))
    return bytes(out) + data[at:]


@FUZZ
@given(damage=st.lists(_DAMAGE, min_size=1, max_size=3))
def test_fuzz_damaged_files_give_back_only_what_is_intact(small, intact, tmp_path_factory, damage):
    """Flipped, zeroed and cut bytes: nothing but hopsim's errors, and the messages read are the
    recorded ones, in order (a damaged chunk costs its own messages only)."""
    data = small.read_bytes()
    for kind, where, arg in damage:
        data = apply(data, kind, where, arg) if data else data
    path = tmp_path_factory.mktemp("fuzz") / "damaged.mcap"
    path.write_bytes(data)
    t0 = time.perf_counter()
    got = read_every_way(path)
    assert time.perf_counter() - t0 < 10
    assert is_subsequence(got, intact)


@FUZZ
@given(crafted=st.lists(_CRAFTED, min_size=1, max_size=3), damage=st.lists(_DAMAGE, max_size=1))
def test_fuzz_crafted_records_are_read_in_bounded_time(small, tmp_path_factory, crafted, damage):
    """Runs of chunk opcodes, chunk-record heads, chunks declaring 0 bytes to 2^64 - 1, of every
    compression and none, bombs of zeros: nothing but hopsim's errors, each file read in seconds."""
    data = small.read_bytes()
    for kind, where, arg in crafted + damage:
        data = apply(data, kind, where, arg) if data else data
    path = tmp_path_factory.mktemp("fuzz") / "crafted.mcap"
    path.write_bytes(data)
    t0 = time.perf_counter()
    read_every_way(path)
    assert time.perf_counter() - t0 < 10


# ------------------------------------------------------------------------------ known failures


def peak_rss_mib(code: str) -> tuple[float, str]:
    """Run ``code`` in a new Python process: its peak resident memory (MiB) and its output. The
    peak is the process's own (VmHWM, kB): getrusage's ru_maxrss keeps, across the exec, the peak
    of the test process it was forked from."""
    probe = (
        f"{code}\nimport re\nprint('peak', re.search(r'VmHWM:\\s+(\\d+)', open('/proc/self/status').read()).group(1))"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return int(done.stdout.split("peak ")[-1]) / 1024, done.stdout


@pytest.mark.parametrize(
    "compression, size, declared",
    [("zstd", 2 << 30, None), ("zstd", 2 << 30, 200_000), ("lz4", 256 << 20, None), ("lz4", 256 << 20, 1 << 20)],
    ids=["zstd-2GiB", "zstd-2GiB-declared-small", "lz4-256MiB", "lz4-256MiB-declared-small"],
)
def test_a_chunk_that_inflates_to_gigabytes_is_damage_not_read(small, intact, tmp_path, compression, size, declared):
    """65 KB of zstd that inflate to 2 GiB (lz4: 1 MB to 256 MiB), declared as they are or as
    less, before the file's first chunk: reported as a damaged chunk and passed over, in about a
    second, never decompressed past 64 MiB (a reader in a process of its own stays under 600 MiB)."""
    path = tmp_path / "bomb.mcap"
    path.write_bytes(hostile.bomb(small.read_bytes(), compression, size, declared))
    assert path.stat().st_size < (100_000 if compression == "zstd" else 1_200_000)
    t0 = time.perf_counter()
    got = read_every_way(path)
    assert time.perf_counter() - t0 < 20
    assert got == intact  # the bomb is the only damage: every recorded message is read
    _, report = read_recording(path)
    first = next(offset for offset, opcode, _ in hostile.records(small.read_bytes()) if opcode == hostile.CHUNK)
    assert not report.complete and report.damage[0][0] == first and "chunk" in report.problem
    if declared is None:
        assert "over the 64 MiB a chunk may hold" in report.problem
    peak, said = peak_rss_mib(
        f"from hopsim.bus.reading import read_recording\nfrom hopsim.view.columns import ColumnReader\n"
        f"print(read_recording({str(path)!r})[1].summary()); ColumnReader({str(path)!r})"
    )
    assert peak < 600, said


def test_a_run_of_chunk_heads_is_passed_over_in_linear_time(small, tmp_path):
    """4 MiB of chunk-record heads, one every 64 bytes, each claiming the rest of the file as
    uncompressed records with a wrong CRC: each would cost a checksum over the rest of the file
    (quadratic in all); what resynchronizing checksums is bounded by the file's size, and it gives
    up there, saying so."""
    path = tmp_path / "heads.mcap"
    path.write_bytes(hostile.opcode_run(small.read_bytes(), size=4 << 20, step=64))
    t0 = time.perf_counter()
    read_every_way(path)
    assert time.perf_counter() - t0 < 20
    envelopes, report = read_recording(path)
    assert envelopes == [] and not report.complete
    assert "gave up resynchronizing" in report.summary() and "16 times the file's size" in report.summary()


def test_a_run_of_opcodes_costs_a_find_per_byte(small, tmp_path):
    """1 MiB of chunk opcodes between two chunks: each is a candidate whose length does not fit,
    passed over without parsing; the chunks after them are read."""
    data = small.read_bytes()
    second = [offset for offset, opcode, _ in hostile.records(data) if opcode == hostile.CHUNK][1]
    path = tmp_path / "opcodes.mcap"
    path.write_bytes(data[:second] + bytes([hostile.CHUNK]) * (1 << 20) + data[second:])
    t0 = time.perf_counter()
    envelopes, report = read_recording(path)
    assert time.perf_counter() - t0 < 10
    assert len(envelopes) == len(read_recording(small)[0]) and report.damage and not report.complete


def test_a_flipped_byte_in_the_run_description_is_damage_not_a_divergence(small, tmp_path):
    """The run's description carries its SHA-256: a flipped byte in it (a parameter's name
    here) is named as damage, and the replay is refused before anything runs."""
    path = tmp_path / "flipped.mcap"
    path.write_bytes(hostile.flip_in_metadata(small.read_bytes(), RUN_METADATA.encode(), b'"control_gain":'))
    envelopes, report = read_recording(path)
    assert RUN_METADATA not in report.metadata and report.damaged_metadata == [RUN_METADATA]
    assert "the run description is damaged" in report.summary() and not report.complete
    assert len(envelopes) == len(read_recording(small)[0])  # the stream itself is intact
    with pytest.raises(ReplayError, match="the run description is damaged"):
        replay_recording(path)
    res = runner.invoke(app, ["replay", str(path)])
    assert res.exit_code == 2 and "the run description is damaged" in " ".join(res.output.split())


def test_a_flipped_byte_in_the_result_record_is_damage_and_the_stream_still_replays(small, tmp_path):
    path = tmp_path / "flipped.mcap"
    path.write_bytes(hostile.flip_in_metadata(small.read_bytes(), RESULT_METADATA.encode(), b"stop_reason"))
    _, report = read_recording(path)
    assert RESULT_METADATA not in report.metadata and "the result record is damaged" in report.summary()
    result = replay_recording(path)
    assert result.identical and result.compared > 300  # compared up to the last recorded instant


def test_older_recordings_without_record_checksums_are_read_as_they_are():
    """tests/data/golden holds recordings from before metadata records carried a SHA-256."""
    golden = Path(__file__).parent / "data" / "golden" / "lander.mcap"
    envelopes, report = read_recording(golden)
    assert report.complete and report.metadata[RUN_METADATA]["scenario"] == "lander" and len(envelopes) > 100


@scenario(
    "lander_interrupted",
    LanderParams,
    "test: the lander, its run interrupted (Ctrl-C) half a second in",
    default_duration_s=60.0,
)
def _lander_interrupted(sim, p):
    get_scenario("lander").build(sim, p)

    def interrupt(ev) -> None:
        raise KeyboardInterrupt

    sim.at(0.5, interrupt, name="ctrl-c")


def test_a_run_interrupted_in_its_first_second_is_headlined_incomplete(tmp_path):
    """Ctrl-C half a second in: the file is closed with the reason (footer, result record), and
    inspect headlines it as an interrupted run, not 'complete'; its replay compares what lies
    before its last instant."""
    out = tmp_path / "ctrl-c.mcap"
    with pytest.raises(KeyboardInterrupt):
        run_scenario("lander_interrupted", {}, seed=1, duration_s=60.0, out=out)
    (path,) = tmp_path.glob("ctrl-c*.mcap")  # the run's file, under its partial name when the run failed
    envelopes, report = read_recording(path)
    assert report.footer and report.stop_reason.startswith("crashed: KeyboardInterrupt")
    assert not report.complete and report.interrupted and envelopes
    res = runner.invoke(app, ["inspect", str(path)])
    headline = " ".join(res.output.split())
    assert res.exit_code == 1 and ": incomplete (the run was interrupted: crashed: KeyboardInterrupt)" in headline
    assert "complete," not in headline.split(";")[0]
    result = replay_recording(path)
    assert result.identical and 0 < result.compared < len(envelopes)


def test_a_file_without_its_result_record_is_incomplete(small, tmp_path):
    """A hopsim recording whose footer is there but whose result record is not (the run did not
    finish) is not complete."""
    data = small.read_bytes()
    offset, _, _length = next(
        r
        for r in hostile.records(data)
        if r[1] == hostile.METADATA and RESULT_METADATA.encode() in data[r[0] : r[0] + 40]
    )
    # the record's opcode made a private one's (0x80 and up: passed over by readers)
    path = tmp_path / "no-result.mcap"
    path.write_bytes(data[:offset] + bytes([0x80]) + data[offset + 1 :])
    _, report = read_recording(path)
    assert report.footer and not report.complete and "no result record" in report.summary()


def test_damage_in_the_first_chunk_costs_only_that_chunk_in_a_replay(small, tmp_path):
    """A damaged first chunk: the replay compares every intact part after it (each without its
    instants next to the damage), not nothing."""
    data = small.read_bytes()
    first = next(r for r in hostile.records(data) if r[1] == hostile.CHUNK)
    damaged = bytearray(data)
    damaged[first[0] + 9 + 60 + first[2] // 2] ^= 0x20
    path = tmp_path / "first-chunk.mcap"
    path.write_bytes(bytes(damaged))
    envelopes, report = read_recording(path)
    assert report.intact_messages == 0 and envelopes
    result = replay_recording(path)
    assert result.identical and result.compared > 0.5 * len(envelopes)
    assert result.skipped_ns and result.skipped_ns[0][0] == -1
    res = runner.invoke(app, ["replay", str(path)])
    assert res.exit_code == 0 and "not compared (damaged parts of the recording): the start to" in res.output
