"""Nothing is lost on a kill: a run that can recover writes its stream as it goes (the run after a
recovery is checked against what the file holds), and a process killed with SIGKILL at any
instant, local or on Ray, leaves a file readable up to its last closed chunk (under its partial
name: ``--out`` itself is written only by a run that ends well), whose messages are the
uninterrupted run's; a killed Ray driver takes its Ray processes with it."""

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from hopsim.bus.atomic import partial_path
from hopsim.bus.envelope import Envelope
from hopsim.bus.reading import read_recording
from hopsim.bus.recorder import McapRecorder, RecordingMismatch, read_envelopes, read_metadata
from hopsim.scenarios.registry import FaultSpec
from hopsim.scenarios.replay import replay_recording
from hopsim.scenarios.runner import run_scenario
from hopsim.schemas import Scalar

S = 1_000_000_000
ROOT = Path(__file__).resolve().parents[1]


def scalar(t_s: int, value: float, source: str = "m") -> Envelope:
    return Envelope(t_s * S, t_s * S, source, f"{source}/x", t_s, 0, Scalar(value=value, unit="1"))


def values(path) -> list[float]:
    return [Scalar.FromString(e.payload).value for e in read_envelopes(path)]


def test_a_rolled_back_run_is_written_once_and_checked_against_the_file(tmp_path):
    """Envelopes 0-2 kept, 3-5 written, the run goes back to 2 and gives 3-5 again, then 6-7:
    the file holds 0-7 once, as a run that never went back would have written it."""
    path = tmp_path / "r.mcap"
    rec = McapRecorder(path, chunk_size=64)  # chunks this small are on disk at once
    for t in range(3):
        rec.record(scalar(t, t))
    rec.flush()
    rec.commit()
    for t in range(3, 6):
        rec.record(scalar(t, t))
    rec.flush()
    assert path.stat().st_size > 0  # written as it goes, not held
    rec.record(scalar(6, 99.0))  # the instant being recorded when the run fails
    rec.rollback()
    for t in range(3, 8):
        rec.record(scalar(t, t))
    rec.close()
    straight = McapRecorder(tmp_path / "straight.mcap")
    for t in range(8):
        straight.record(scalar(t, t))
    straight.close()
    assert values(path) == [float(t) for t in range(8)]
    assert read_metadata(path)["hopsim.result"] == read_metadata(tmp_path / "straight.mcap")["hopsim.result"]


def test_a_run_that_does_not_give_again_what_it_wrote_is_stopped_by_name(tmp_path):
    rec = McapRecorder(tmp_path / "r.mcap")
    rec.record(scalar(0, 0.0))
    rec.flush()
    rec.commit()
    rec.record(scalar(1, 1.0))
    rec.record(scalar(2, 2.0))
    rec.flush()
    rec.rollback()
    rec.record(scalar(1, 1.0))
    with pytest.raises(RecordingMismatch, match="did not give again the 3 envelopes"):
        rec.record(scalar(2, 2.5))
        rec.flush()


def test_a_recovered_runs_file_equals_the_run_where_nothing_died(tmp_path):
    """lander with its controller killed at 12.3 s, no checkpoint: the run goes back to t = 0 and
    runs again; the file (written all along) is the kill-free run's plus the fault's message."""
    run_scenario("lander", {}, seed=2, duration_s=25.0, out=tmp_path / "plain.mcap")
    kill = [FaultSpec(t_s=12.3, target="controller", kind="kill").model_dump()]
    killed = run_scenario("lander", {"faults": kill}, seed=2, duration_s=25.0, out=tmp_path / "killed.mcap")
    assert killed.stats["recoveries"] == [{"actor": "controller", "t_s": 12.3, "resumed_from_s": 0.0}]
    models = [
        e.SerializeToString() for e in read_envelopes(tmp_path / "killed.mcap") if not e.topic.startswith("faults/")
    ]
    assert models == [e.SerializeToString() for e in read_envelopes(tmp_path / "plain.mcap")]
    _envelopes, report = read_recording(tmp_path / "killed.mcap")
    assert report.complete and report.problem is None and report.messages == killed.message_count == len(models) + 1
    assert replay_recording(tmp_path / "killed.mcap").identical


# ------------------------------------------------------------------ SIGKILL of a whole run


def hopsim(*args: str) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.Popen(
        [sys.executable, "-m", "hopsim.cli", *args],
        env=env,
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )


def wait_for_bytes(proc: subprocess.Popen, path: Path, n_bytes: int) -> None:
    """Until ``path`` holds ``n_bytes`` (the run writes as it goes); fails if it never does."""
    deadline = time.monotonic() + 90
    while not (path.exists() and path.stat().st_size >= n_bytes):
        assert proc.poll() is None, proc.stderr.read().decode()
        assert time.monotonic() < deadline, "the run wrote nothing in 90 s"
        time.sleep(0.05)


def sigkill(proc: subprocess.Popen) -> None:
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()


def assert_prefix_of_the_uninterrupted_run(path: Path, scenario: str, overrides: dict, seed: int) -> int:
    envelopes, report = read_recording(path)
    assert not report.complete and report.messages > 100, report.summary()
    last_s = report.last_t_ns / 1e9
    full = run_scenario(scenario, overrides, seed=seed, duration_s=last_s + 1.0, keep_stream=True)
    reference = full.recorder.stream_bytes()
    got = [e.SerializeToString(deterministic=True) for e in envelopes]
    assert got == reference[: len(got)]
    return len(got)


def test_sigkill_of_a_local_run_that_can_recover_leaves_a_readable_file(tmp_path):
    """A formation with a kill fault late in the run (a run that keeps a state to recover from,
    which once held its stream in memory to the end): SIGKILL at a random instant."""
    rng = random.Random(20)
    out = tmp_path / "f.mcap"
    proc = hopsim(
        "run",
        "formation",
        "--duration",
        "1000000",
        "--seed",
        "4",
        "--out",
        str(out),
        "--set",
        "n_vehicles=6",
        "--fault",
        "t=900000,target=v0_fsw,kind=kill",
    )
    written = partial_path(out, proc.pid)  # the run's file until it ends well
    try:
        wait_for_bytes(proc, written, 20_000)
        time.sleep(rng.uniform(0.2, 2.5))  # a random instant after the first chunks
        assert proc.poll() is None, "the run ended before the kill: make it longer"
    finally:
        sigkill(proc)
    assert not out.exists()
    # before its instant a fault adds nothing to the stream: the reference runs without it
    assert assert_prefix_of_the_uninterrupted_run(written, "formation", {"n_vehicles": 6}, 4)


def ray_pids_of(pid: int) -> set[int]:
    """The Ray processes (raylet, GCS, agents, workers) descended from process ``pid``."""
    from hopsim.kernel.distributed.reaper import descendants, is_ray_process

    return {p for p in descendants(pid) if is_ray_process(p)}


def alive(pids: set[int]) -> set[int]:
    out = set()
    for p in pids:
        try:
            state = Path(f"/proc/{p}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (FileNotFoundError, ProcessLookupError):
            continue
        if state != "Z":
            out.add(p)
    return out


@pytest.mark.ray
def test_sigkill_of_a_ray_driver_leaves_a_readable_file_and_no_ray_process(tmp_path):
    rng = random.Random(21)
    out = tmp_path / "f.mcap"
    proc = hopsim(
        "run",
        "formation",
        "--backend",
        "ray",
        "--placement",
        "shards:2",
        "--duration",
        "1000000",
        "--seed",
        "5",
        "--out",
        str(out),
        "--set",
        "n_vehicles=6",
    )
    written = partial_path(out, proc.pid)  # the run's file until it ends well
    try:
        wait_for_bytes(proc, written, 20_000)
        ray = ray_pids_of(proc.pid)
        assert any("raylet" in Path(f"/proc/{p}/cmdline").read_text() for p in ray), ray
        time.sleep(rng.uniform(0.2, 2.5))
    finally:
        sigkill(proc)
    end = time.monotonic() + 15.0  # "within seconds": Ray's agents linger minutes unaided
    while alive(ray) and time.monotonic() < end:
        time.sleep(0.2)
    assert not alive(ray), [Path(f"/proc/{p}/cmdline").read_text() for p in alive(ray)]
    assert assert_prefix_of_the_uninterrupted_run(written, "formation", {"n_vehicles": 6}, 5)


# ------------------------------------------------------------------ Ctrl-C (SIGINT)


def file_digest(path: Path) -> tuple[int, str]:
    """(count, SHA-256) over the stream messages ``path`` holds, as the result record gives them."""
    from hopsim.bus.recorder import StreamDigest

    digest = StreamDigest()
    for env in read_recording(path)[0]:
        digest.add(env, env.payload)
    return digest.count, digest.hexdigest()


def record_digest(path: Path) -> tuple[int, str]:
    result = read_metadata(path)["hopsim.result"]
    assert result["stop_reason"].startswith("crashed: KeyboardInterrupt"), result
    return int(result["message_count"]), result["stream_sha256"]


@pytest.mark.parametrize("where", ["_observe_scene", "add_framed"])
def test_a_ctrl_c_while_an_instant_is_written_leaves_a_result_record_of_the_file(tmp_path, monkeypatch, where):
    """SIGINT arriving while the recorder writes an instant, the 100th time it draws the scene of
    the instant before (before the instant's messages go to the file) or hashes an instant (after):
    the instant is written and hashed whole, then the run stops; the result record's message count
    and SHA-256 are those of the messages the file holds."""
    from hopsim.bus.recorder import StreamDigest

    owner = McapRecorder if where == "_observe_scene" else StreamDigest
    calls = iter(range(10**9))
    step = getattr(owner, where)

    def interrupted(self, *args):
        if next(calls) == 100:
            signal.raise_signal(signal.SIGINT)
        return step(self, *args)

    monkeypatch.setattr(owner, where, interrupted)
    out = tmp_path / "l.mcap"
    with pytest.raises(KeyboardInterrupt):
        run_scenario("lander", {}, seed=3, duration_s=60.0, out=out)
    monkeypatch.undo()
    written = partial_path(out, os.getpid())
    count, digest = file_digest(written)
    assert count > 100 and record_digest(written) == (count, digest)


@pytest.mark.long
def test_a_ctrl_c_at_a_random_instant_leaves_a_result_record_of_the_file(tmp_path):
    rng = random.Random(22)
    for k in range(3):
        out = tmp_path / f"l{k}.mcap"
        proc = hopsim("run", "lander", "--duration", "1000000", "--no-progress", "--out", str(out))
        written = partial_path(out, proc.pid)
        try:
            wait_for_bytes(proc, written, 20_000)
            time.sleep(rng.uniform(0.1, 1.0))
            assert proc.poll() is None, "the run ended before the interrupt: make it longer"
            os.kill(proc.pid, signal.SIGINT)
            assert proc.wait(timeout=60) == 130, proc.stderr.read().decode()
        finally:
            if proc.poll() is None:
                sigkill(proc)
        assert record_digest(written) == file_digest(written)


DRIVER_KILLED_WHILE_RAY_STARTS = """
import sys, time
import ray
from hopsim.kernel.distributed.ray_runtime import start_ray

init = ray.init


def init_still_starting(*args, **kwargs):
    out = init(*args, **kwargs)
    print("started", flush=True)  # Ray's processes are up; start_ray has not returned
    time.sleep(600)
    return out


ray.init = init_still_starting
start_ray(num_cpus=1)
"""


@pytest.mark.ray
@pytest.mark.long
def test_sigkill_of_a_ray_driver_while_ray_starts_leaves_no_ray_process():
    """The driver is killed inside ``ray.init`` (its processes, agents included, running): its
    reaper, started before Ray, stops every one of them within seconds."""
    proc = subprocess.Popen(
        [sys.executable, "-c", DRIVER_KILLED_WHILE_RAY_STARTS],
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        assert proc.stdout.readline() == b"started\n"
        deadline = time.monotonic() + 30.0
        while time.monotonic() < deadline:  # the raylet's agents, which linger unaided, up too
            ray = ray_pids_of(proc.pid)
            if sum(b"/agent" in Path(f"/proc/{p}/cmdline").read_bytes() for p in ray) == 2:
                break
            time.sleep(0.1)
    finally:
        sigkill(proc)
    end = time.monotonic() + 15.0  # Ray's agents linger a minute unaided
    while (alive(ray) or session_of(proc.pid)) and time.monotonic() < end:
        time.sleep(0.2)
    assert not alive(ray) and not session_of(proc.pid), [
        Path(f"/proc/{p}/cmdline").read_text() for p in alive(ray) | session_of(proc.pid)
    ]


def session_of(driver: int) -> set[int]:
    """The running processes whose command line names the Ray session of process ``driver``."""
    found = set()
    for entry in Path("/proc").iterdir():
        try:
            words = entry.joinpath("cmdline").read_bytes().decode(errors="replace").split("\0")
        except (OSError, NotADirectoryError):
            continue
        if any(
            "/ray/session_" in w and w.rstrip("/").split("/session_")[1].split("/")[0].endswith(f"_{driver}")
            for w in words
        ):
            found.add(int(entry.name))
    return alive(found)


@pytest.mark.long
def test_ctrl_c_while_compiling_ahead_ends_the_run_with_the_interrupted_message_and_no_traceback(tmp_path):
    """Ctrl-C (SIGINT to the whole process group, as a terminal sends it) while the kernels are
    compiled ahead in a pool of processes: the pool is stopped, the command says `interrupted`
    and exits non-zero; no process prints a traceback."""
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path / "cache")}  # empty: compiling happens
    run = subprocess.Popen(
        [str(Path(sys.executable).parent / "hopsim"), "run", "formation", "--duration", "1", "--no-progress"],
        env=env,
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        first = run.stderr.readline()
        assert "ahead of its first run" in first, first
        time.sleep(0.3)  # the pool's processes are starting (importing)
        os.killpg(run.pid, signal.SIGINT)
        _, err = run.communicate(timeout=60)
    finally:
        if run.poll() is None:
            os.killpg(run.pid, signal.SIGKILL)
            run.wait()
    assert run.returncode != 0 and "Traceback" not in err and "interrupted" in err, (run.returncode, err[-3000:])


@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")  # the callback's, as meant
def test_an_interrupt_swallowed_by_a_c_callback_is_raised_at_the_next_safe_point():
    """A Ctrl-C that lands in a ctypes callback (numba's and llvmlite's: Python reports it as
    "Exception ignored" and goes on) while compiling ahead is kept and raised afterwards."""
    import ctypes

    from hopsim.scenarios.compile_ahead import _interrupts_kept

    @ctypes.CFUNCTYPE(None)
    def callback():
        os.kill(os.getpid(), signal.SIGINT)
        for _ in range(1000):  # the handler runs here; its exception dies with the callback
            pass

    reached = False
    with pytest.raises(KeyboardInterrupt), _interrupts_kept() as interrupts:
        callback()
        reached = True
        interrupts.check()
    assert reached and interrupts.seen
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
