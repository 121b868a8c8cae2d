"""Replay: a recording re-runs identically; a changed seed or parameter is reported at the first
affected envelope; partial replay feeds the live actor its recorded inputs; damaged files are
read up to the damage with a clear report."""

import pytest

from hopsim.bus.reading import read_recording
from hopsim.bus.recorder import McapRecorder
from hopsim.scenarios.replay import ReplayError, replay_recording
from hopsim.scenarios.runner import run_scenario


@pytest.fixture(scope="module")
def recording(tmp_path_factory):
    path = tmp_path_factory.mktemp("rec") / "lander.mcap"
    run_scenario("lander", {}, seed=4, duration_s=20.0, out=path)
    return path


def test_full_replay_is_identical(recording):
    r = replay_recording(recording)
    assert r.identical and r.compared > 1000 and r.mode == "full"


def test_changed_parameter_diverges_at_the_first_affected_envelope(recording):
    r = replay_recording(recording, overrides={"control_gain": 0.9})
    d = r.difference
    assert d is not None and d.topic == "lander/throttle" and d.field == "payload.throttle"
    # every envelope before it was identical, and the controller had commanded before then
    recorded, _ = read_recording(recording)
    assert d.index > 0 and any(e.source == "controller" for e in recorded[: d.index])


def test_partial_replay_reproduces_the_live_actor_and_reports_a_changed_gain(recording):
    same = replay_recording(recording, live=["controller"])
    assert same.identical and same.mode == "partial" and same.compared == 201  # 10 Hz for 20 s
    changed = replay_recording(recording, live=["controller"], overrides={"control_gain": 1.2})
    assert changed.difference is not None and changed.difference.source == "controller"


def test_partial_replay_of_the_sensor_keeps_its_noise(recording):
    assert replay_recording(recording, live=["altimeter", "battery"]).identical


def test_playback_only_republishes_every_model_output(recording):
    r = replay_recording(recording, live=[])
    recorded, _ = read_recording(recording)
    models = [e for e in recorded if not e.source.startswith("kernel")]
    assert r.identical and r.compared == len(models)


def test_unknown_live_actor_is_named(recording):
    with pytest.raises(ReplayError, match=r"unknown actor\(s\) \['pilot'\].*controller"):
        replay_recording(recording, live=["pilot"])


def test_another_seed_is_detected(recording, tmp_path):
    other = tmp_path / "other.mcap"
    run_scenario("lander", {}, seed=5, duration_s=20.0, out=other)
    a, _ = read_recording(recording)
    b, _ = read_recording(other)
    from hopsim.bus.compare import first_difference

    d = first_difference(a, b)
    assert d is not None and d.source == "altimeter" and d.field == "payload.value"


def long_recording(path, chunk_size):
    rec = McapRecorder(path, {"scenario": "lander"}, chunk_size=chunk_size)
    from hopsim.kernel import Simulation
    from hopsim.scenarios.catalog import get_scenario

    spec = get_scenario("lander")
    sim = Simulation(seed=1, recorder=rec)
    spec.build(sim, spec.make_params({}))
    sim.advance_to(30.0)
    rec.close()
    return rec.digest.count


@pytest.mark.parametrize("fraction", [0.0005, 0.3, 0.61, 0.9, 0.999])
def test_truncated_file_is_read_up_to_the_last_complete_chunk(tmp_path, fraction):
    path = tmp_path / "full.mcap"
    total = long_recording(path, chunk_size=16 * 1024)
    full, report = read_recording(path)
    assert report.complete and len(full) == total
    data = path.read_bytes()
    cut = tmp_path / "cut.mcap"
    cut.write_bytes(data[: int(len(data) * fraction)])
    got, rep = read_recording(cut)
    assert not rep.complete and "interrupted" in rep.problem
    assert [e.SerializeToString() for e in got] == [e.SerializeToString() for e in full[: len(got)]]
    if fraction > 0.2:
        assert len(got) > 0.5 * fraction * total  # most of what lies before the cut comes back
    assert f"recovered {len(got)} messages" in rep.summary()


def chunk_message_counts(data: bytes) -> list[int]:
    """The stream's messages per chunk of an undamaged file (Foxglove's derived channels left
    out), read independently of hopsim's reader."""
    import io

    from mcap.records import Channel, Chunk
    from mcap.stream_reader import StreamReader, breakup_chunk

    counts, derived = [], set()
    for record in StreamReader(io.BytesIO(data), emit_chunks=True).records:
        if isinstance(record, Chunk):
            n = 0
            for r in breakup_chunk(record):
                if isinstance(r, Channel) and "derived" in r.metadata:
                    derived.add(r.id)
                elif type(r).__name__ == "Message" and r.channel_id not in derived:
                    n += 1
            counts.append(n)
    return counts


def is_subsequence(got: list[bytes], full: list[bytes]) -> bool:
    it = iter(full)
    return all(any(g == f for f in it) for g in got)


def test_a_damage_campaign_at_the_commands_chunk_size_costs_at_most_a_chunk(tmp_path):
    """The recorder as the command uses it (its default chunks); seeded flips, zeroed ranges and
    truncations: never an exception, nothing but whole chunks lost, the damage named."""
    import random

    from hopsim.scenarios.runner import run_scenario

    path = tmp_path / "full.mcap"
    run_scenario("lander", {"stop_on_touchdown": False}, seed=1, duration_s=60.0, out=path)
    data = path.read_bytes()
    full, report = read_recording(path)
    assert report.complete
    full_bytes = [e.SerializeToString() for e in full]
    per_chunk = chunk_message_counts(data)
    assert len(per_chunk) >= 10 and sum(per_chunk) == len(full)  # chunks of ~2 simulated seconds
    most = max(per_chunk)
    rnd = random.Random(7)
    bad = tmp_path / "bad.mcap"
    cases = [("flip", rnd.randrange(len(data))) for _ in range(30)]
    cases += [("zero", rnd.randrange(len(data) - 64)) for _ in range(10)]
    cases += [("cut", rnd.randrange(len(data))) for _ in range(15)]
    for kind, offset in cases:
        damaged = bytearray(data)
        if kind == "flip":
            damaged[offset] ^= 1 << rnd.randrange(8)
        elif kind == "zero":
            damaged[offset : offset + 64] = bytes(64)
        else:
            damaged = damaged[:offset]
        bad.write_bytes(bytes(damaged))
        got, rep = read_recording(bad)
        got_bytes = [e.SerializeToString() for e in got]
        assert is_subsequence(got_bytes, full_bytes), (kind, offset)
        if kind == "cut":
            assert got_bytes == full_bytes[: len(got_bytes)]
            whole_before = 0
            for n, end in zip(per_chunk, chunk_ends(data), strict=True):
                if end <= offset:
                    whole_before += n
            assert len(got) >= whole_before, (offset, len(got), whole_before)
        else:
            assert len(full) - len(got) <= (most if kind == "flip" else 2 * most), (kind, offset, len(got))
        if got_bytes != full_bytes:
            assert not rep.complete and ("damaged" in rep.summary() or "incomplete" in rep.summary())


def chunk_ends(data: bytes) -> list[int]:
    """The end offset of each chunk record of an undamaged file."""
    import struct

    ends, position = [], 8  # after the magic
    while position + 9 <= len(data):
        opcode = data[position]
        (length,) = struct.unpack_from("<Q", data, position + 1)
        position += 9 + length
        if opcode == 0x06:
            ends.append(position)
        if opcode == 0x02:  # the footer
            break
    return ends


@pytest.mark.parametrize("sealed", [True, False], ids=["today", "before-record-checksums"])
def test_a_zeroed_stream_hash_or_count_reads_as_damage(tmp_path, monkeypatch, sealed):
    """Today's result record carries its own SHA-256, which names the damage; an older one
    (without it) is caught by the stream's count and SHA-256 no longer matching the messages."""
    from mcap.writer import Writer

    from hopsim.bus import recorder

    if not sealed:  # metadata records as hopsim wrote them before they carried their SHA-256
        monkeypatch.setattr(recorder._Writer, "add_metadata", Writer.add_metadata)
    path = tmp_path / "x.mcap"
    total = long_recording(path, chunk_size=16 * 1024)
    full, report = read_recording(path)
    assert report.complete and len(full) == total
    data = path.read_bytes()
    stored = report.metadata["hopsim.result"]["stream_sha256"].encode()
    assert data.count(stored) >= 1
    bad = tmp_path / "zeroed.mcap"
    bad.write_bytes(data.replace(stored, b"0" * len(stored)))
    got, rep = read_recording(bad)
    said = "the result record is damaged" if sealed else "stream SHA-256 does not match"
    assert len(got) == total and not rep.complete and said in rep.summary()


def test_not_a_recording_is_reported_not_raised(tmp_path):
    junk = tmp_path / "junk.mcap"
    junk.write_bytes(b"hello, not an mcap file at all")
    got, rep = read_recording(junk)
    assert got == [] and "not an MCAP file" in rep.problem


@pytest.mark.parametrize(
    "field, value, words",
    [
        ("parameters_json", "{not json", "not valid JSON"),
        ("seed", "-4", "seed"),
        ("duration_s", "1e300", "duration_s"),
        ("duration_s", "nan", "duration_s"),
        ("scenario", "", "scenario"),
    ],
)
def test_damaged_or_foreign_run_descriptions_are_refused_before_anything_runs(tmp_path, field, value, words):
    from hopsim.bus.recorder import McapRecorder
    from hopsim.scenarios.replay import ReplayError, replay_recording

    path = tmp_path / "x.mcap"
    meta = {"scenario": "lander", "parameters_json": "{}", "seed": "1", "duration_s": "5", field: value}
    McapRecorder(path, meta).close({"end_time_s": "5"})
    with pytest.raises(ReplayError, match=words):
        replay_recording(path)


def test_a_crafted_duration_replays_only_to_the_recorded_end(tmp_path):
    import time

    from hopsim.bus.recorder import RUN_METADATA, metadata_sha256
    from hopsim.scenarios.replay import replay_recording
    from hopsim.scenarios.runner import run_scenario

    path = tmp_path / "short.mcap"
    run_scenario("lander", {}, seed=2, duration_s=3.0, out=path)
    data = path.read_bytes()
    crafted = tmp_path / "crafted.mcap"
    edited = data.replace(b"duration_s\x03\x00\x00\x003.0", b"duration_s\x03\x00\x00\x001e9", 1)
    assert edited != data
    crafted.write_bytes(edited)
    with pytest.raises(ReplayError, match="the run description is damaged"):  # an edit without its checksum
        replay_recording(crafted)
    # crafted with its checksum made again: consistent, yet the replay stops at the recorded end
    run = read_recording(path)[1].metadata[RUN_METADATA]
    sealed = edited.replace(
        metadata_sha256(RUN_METADATA, run).encode(),
        metadata_sha256(RUN_METADATA, {**run, "duration_s": "1e9"}).encode(),
    )
    assert sealed != edited
    crafted.write_bytes(sealed)
    t0 = time.perf_counter()
    result = replay_recording(crafted)
    assert time.perf_counter() - t0 < 60 and result.identical


@pytest.mark.parametrize(
    "format_field, words",
    [({}, "made before stream formats were numbered"), ({"stream_format": "1"}, "of stream format 1;")],
)
def test_a_recording_of_another_stream_format_is_refused_as_such(tmp_path, format_field, words):
    path = tmp_path / "old.mcap"
    meta = {"scenario": "lander", "parameters_json": "{}", "seed": "1", "duration_s": "5", **format_field}
    McapRecorder(path, meta).close({"end_time_s": "5"})
    with pytest.raises(ReplayError, match=words) as err:
        replay_recording(path)
    assert "cannot be compared" in str(err.value) and "run the scenario again" in str(err.value)


def test_a_recording_names_its_machine_and_a_replay_reads_it(recording):
    from hopsim.bus.recorder import RUN_METADATA, STREAM_FORMAT, read_metadata
    from hopsim.scenarios.machine import machine_description

    run = read_metadata(recording)[RUN_METADATA]
    here = machine_description()
    assert run["stream_format"] == str(STREAM_FORMAT) and run["numba_cpu"] == "generic"
    assert {k: run[k] for k in here} == here and here["cpu"] and here["machine"]
    result = replay_recording(recording, overrides={"control_gain": 0.9})
    assert result.recorded_on == here and "same kind of machine" in result.machines()


def test_a_divergence_says_where_the_recording_was_made(recording):
    from dataclasses import replace

    result = replay_recording(recording, overrides={"control_gain": 0.9})
    elsewhere = replace(result, recorded_on={**result.recorded_on, "cpu": "AMD EPYC 7B12", "cpu_features": "avx fma"})
    said = elsewhere.machines()
    assert said.startswith("recorded on AMD EPYC 7B12 (") and "avx fma" in said and "; replayed on " in said
    assert "does not say" in replace(result, recorded_on=None).machines()


def test_a_resumed_recording_replays_only_from_the_checkpoint_the_user_names(tmp_path):
    """``checkpoint=`` (``hopsim replay --checkpoint``) is the file a resumed run's replay starts
    from, wherever it now is and whatever its name, checked by the recorded SHA-256; without it
    the replay is refused, naming the option and the recorded file's base name (not its place)."""
    import shutil

    from hopsim.scenarios.runner import resume_run

    (tmp_path / "ckpts").mkdir()
    (tmp_path / "recs").mkdir()
    full, rest = tmp_path / "recs" / "full.mcap", tmp_path / "recs" / "rest.mcap"
    run_scenario(
        "lander", {}, seed=3, duration_s=7.0, out=full, checkpoint_every_s=3.0, checkpoint_dir=tmp_path / "ckpts"
    )
    ckpt = tmp_path / "ckpts" / "lander_t00000003.000000000.ckpt"
    resume_run(ckpt, out=rest)
    assert replay_recording(rest, checkpoint=ckpt).identical
    moved = tmp_path / "elsewhere.bin"
    shutil.move(ckpt, moved)  # the user's file, wherever it is: the recorded path is not looked at
    assert replay_recording(rest, checkpoint=moved).identical
    with pytest.raises(ReplayError) as refused:
        replay_recording(rest)
    said = str(refused.value)
    assert said == (
        f"{rest} is a resumed run: replay it with --checkpoint naming the checkpoint file it was resumed "
        f"from (recorded as '{ckpt.name}'), or replay the original run's recording"
    )
    assert str(tmp_path / "ckpts") not in said
    with pytest.raises(ReplayError, match="a partial replay starts from the run's start"):
        replay_recording(rest, live=["controller"], checkpoint=moved)
    other = tmp_path / "ckpts" / "lander_t00000006.000000000.ckpt"  # a checkpoint, but not that one
    with pytest.raises(ReplayError, match=r"is not the checkpoint .* SHA-256 differs from the recorded one"):
        replay_recording(rest, checkpoint=other)
    with pytest.raises(ReplayError, match="no such file"):
        replay_recording(rest, checkpoint=tmp_path / "none.ckpt")
    with pytest.raises(ReplayError, match="cannot read it"):
        replay_recording(rest, checkpoint=tmp_path / "ckpts")
    with pytest.raises(ReplayError, match="is not a resumed run"):
        replay_recording(full, checkpoint=moved)


def test_a_crafted_resumed_from_is_neither_opened_nor_looked_at(tmp_path, monkeypatch):
    """A recording whose ``resumed_from`` names an existing file (its true SHA-256 recorded too)
    is refused exactly as one naming a file that is not there: the replay's answer says nothing
    of the file, which is never opened nor stat-ed."""
    import builtins
    import hashlib
    import io
    import os
    import sys
    from pathlib import Path

    from hopsim.bus.recorder import STREAM_FORMAT

    secret = tmp_path / "secret" / "passwd"
    secret.parent.mkdir()
    secret.write_text("root:x:0:0:root:/root:/bin/bash\n")
    absent = tmp_path / "absent" / "passwd"
    targets = [secret, absent] + ([Path("/etc/passwd")] if Path("/etc/passwd").exists() else [])
    forbidden = [str(t) for t in targets]
    touched = []

    def check(path):
        if isinstance(path, (str, bytes, os.PathLike)) and any(f in os.fsdecode(path) for f in forbidden):
            touched.append(os.fsdecode(path))

    def guard(real):
        def guarded(path, *args, **kwargs):
            check(path)
            return real(path, *args, **kwargs)

        return guarded

    for module, name in [
        (os, "stat"),
        (os, "lstat"),
        (os, "open"),
        (os, "access"),
        (os.path, "exists"),
        (os.path, "isfile"),
        (os.path, "realpath"),
        (io, "open"),
        (builtins, "open"),
    ]:
        monkeypatch.setattr(module, name, guard(getattr(module, name)))
    watching = [True]
    sys.addaudithook(lambda event, args: watching[0] and event == "open" and args and check(args[0]))

    recording = tmp_path / "crafted.mcap"
    answers = []
    try:
        for target in targets:
            sha = hashlib.sha256(target.read_bytes()).hexdigest() if target.exists() else "0" * 64
            meta = {
                "scenario": "lander",
                "parameters_json": "{}",
                "seed": "1",
                "duration_s": "5",
                "stream_format": str(STREAM_FORMAT),
                "resumed_at_s": "2.0",
                "resumed_from": str(target),
                "resumed_from_sha256": sha,
            }
            touched.clear()  # the test's own reading of the target above does not count
            McapRecorder(recording, meta).close({"end_time_s": "5"})
            with pytest.raises(ReplayError) as refused:
                replay_recording(recording)
            assert touched == [], f"the replay looked at {touched}"
            answers.append(str(refused.value))
    finally:
        watching[0] = False
    assert len(set(answers)) == 1, answers  # no oracle: the same answer whether the file is there or not
    assert "replay it with --checkpoint" in answers[0] and "(recorded as 'passwd')" in answers[0]
    assert str(tmp_path / "secret") not in answers[0] and "/etc" not in answers[0]
