"""What reading a recording for the viewer and the plots costs is bounded whatever the file holds:
a crafted file of millions of small truth states (tests/hostile_recordings.py) is read in a pass
per field group that holds a chunk at a time, a few bytes per message and at most the poses the
page is sent; `hopsim view`'s loading, `hopsim inspect` and `hopsim plot` (with its CSV) of a
100 MB such file stay under 1 GiB and a minute."""

from __future__ import annotations

import subprocess
import sys
import tracemalloc
from pathlib import Path

import numpy as np
import pytest

from hopsim.view import columns
from hopsim.view.columns import ColumnReader
from hopsim.view.plots import decimate
from hopsim.view.run_data import STATE_TYPE, read_events, read_poses

sys.path.insert(0, str(Path(__file__).parent))
import hostile_recordings as hostile

VEHICLES = 50


@pytest.fixture(scope="module")
def crafted(tmp_path_factory) -> Path:
    """About 4 MB: 50 vehicles' states, 160,000 messages, in chunks of 5,000 (0.5 MB each)."""
    where = tmp_path_factory.mktemp("bounds")
    base = hostile.pose_base(where / "base.mcap", VEHICLES)
    path = where / "poses.mcap"
    path.write_bytes(hostile.many_poses(base, 4 << 20, per_chunk=5_000))
    return path


def test_poses_of_a_crafted_file_hold_a_chunk_at_a_time(crafted, monkeypatch):
    """Every chunk decompressed again when scanned (no cache): the poses' reading holds a chunk,
    its rows, 17 bytes per message (the instants, sorted and told apart) and the poses kept, not the file's columns
    (seven fields at 40 bytes per message, 45 MB here)."""
    monkeypatch.setattr(columns, "CACHE_BYTES", 0)
    reader = ColumnReader(crafted)
    messages = reader.messages_of(reader.channels_of(STATE_TYPE))
    assert messages > 150_000
    tracemalloc.start()
    try:
        poses = read_poses(reader, max_samples=20_000)
        events = read_events(reader)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 2 * (1 << 20) + 24 * messages, peak  # a chunk (0.5 MB) and its rows, and the instants
    assert len(poses.vehicles) == VEHICLES and poses.every == -(-messages * VEHICLES // 20_000)
    assert events == []
    # every instant of its own: vehicle k's n-th state is message n * VEHICLES + k, at 1 s + 1 us times that
    t = poses.t_s[1]
    n = round((t - 1.0) * 1e6)
    k = n % VEHICLES
    x = poses.r_N[1, k, 0] + poses.origin_N[0]
    assert x == pytest.approx(7.0e6 + 1e-3 * n, abs=1e-4)  # float32 offsets from the origin


def test_decimation_keeps_extremes_and_holes():
    t = np.arange(1_000_001, dtype=np.int64)
    v = np.sin(t / 3e4)
    v[123_457], v[500_000:520_000] = -9.0, np.nan
    td, vd = decimate(t, v, 2_000)
    assert len(td) <= 2_000 and np.all(np.diff(td) > 0)
    assert -9.0 in vd and np.nanmax(vd) == pytest.approx(v[np.isfinite(v)].max())
    assert np.isnan(vd).any()  # a run of NaN only is kept as one point: the plot shows the hole


def _measured(*args: str) -> tuple[float, float, str]:
    """Peak resident memory (MiB) and processor time (user and system, s) of ``args`` in a process
    of its own (GNU time): on a machine shared with other work the wall time says little."""
    done = subprocess.run(["/usr/bin/time", "-v", *args], capture_output=True, text=True, timeout=600)
    assert done.returncode in (0, 1), done.stderr[-2000:]  # inspect: 1 for an incomplete file
    said = {k.strip(): v.strip() for k, _, v in (line.partition(": ") for line in done.stderr.splitlines())}
    peak = int(said["Maximum resident set size (kbytes)"]) / 1024
    return peak, float(said["User time (seconds)"]) + float(said["System time (seconds)"]), done.stdout


@pytest.mark.long
@pytest.mark.skipif(not Path("/usr/bin/time").exists(), reason="GNU time (apt install time) is missing")
def test_a_100_mb_file_of_small_states_is_read_in_bounded_memory_and_time(tmp_path):
    """100 MB of 200 vehicles' states (3.9 million messages, inflating to 380 MB), and of one
    vehicle's (4.1 million): the viewer's loading (what `hopsim view` does before it serves, and
    with `--hill`), `hopsim inspect`, `hopsim plot` to a PNG with its CSV (8 million rows) and to
    an HTML page each stay under 1 GiB and a minute of processor time."""
    hopsim = str(Path(sys.executable).parent / "hopsim")
    load = (
        "import sys; from hopsim.view.server import RunView; "
        "v = RunView(sys.argv[1], hill_of=sys.argv[2] if sys.argv[2:] else None); print(len(v.poses.t_s))"
    )
    for vehicles in (200, 1):
        base = hostile.pose_base(tmp_path / f"base{vehicles}.mcap", vehicles)
        path = tmp_path / f"poses{vehicles}.mcap"
        path.write_bytes(hostile.many_poses(base, 100_000_000 - base.stat().st_size))
        signals = ["v0/state.r_BN_N.x", f"v{vehicles - 1}/state.q_BN.w"]
        runs = {
            "view": [sys.executable, "-c", load, str(path)],
            "view --hill": [sys.executable, "-c", load, str(path), "v0"],
            "inspect": [hopsim, "inspect", str(path)],
            "plot png+csv": [
                hopsim,
                "plot",
                str(path),
                *signals,
                "--out",
                str(tmp_path / "p.png"),
                "--csv",
                str(tmp_path / "p.csv"),
                "--force",
            ],
            "plot html": [hopsim, "plot", str(path), *signals, "--out", str(tmp_path / "p.html"), "--force"],
        }
        for name, args in runs.items():
            peak, cpu, said = _measured(*args)
            assert peak < 1024 and cpu < 60, (vehicles, name, peak, cpu, said[-500:])
        path.unlink()


def test_every_reader_takes_a_regular_file_only_and_says_what_the_path_is(tmp_path):
    """A directory, a character device (size 0, endless) and a FIFO (blocks its reader) are
    refused by every command that reads a recording, unopened: one line, exit code 2."""
    import os
    import signal

    from typer.testing import CliRunner

    from hopsim.cli import app

    (tmp_path / "dir").mkdir()
    os.mkfifo(tmp_path / "fifo")
    paths = {str(tmp_path / "dir"): "a directory", "/dev/zero": "a character device", str(tmp_path / "fifo"): "a FIFO"}
    runner = CliRunner()
    previous = signal.alarm(30)  # a reader that opens the FIFO would block: fail instead of hanging
    try:
        for path, kind in paths.items():
            for args in (
                ["inspect", path],
                ["replay", path],
                ["plot", path, "v0/state.r_BN_N.x", "--out", str(tmp_path / "p.png")],
                ["export", path, "--to", str(tmp_path / "ex")],
                ["layout", path, "--out", str(tmp_path / "l.json")],
                ["view", path, "--no-browser"],
            ):
                if args[0] == "view" and kind == "a directory":
                    continue  # a campaign directory: `view` asks for --run
                res = runner.invoke(app, args)
                text = " ".join(res.output.split())
                assert res.exit_code == 2 and f"error: {path} is {kind}, not a recording file" in text, (args, text)
                assert "Traceback" not in text
        with pytest.raises(columns.SignalError, match="is a FIFO, not a recording file"):
            ColumnReader(tmp_path / "fifo")
    finally:
        signal.alarm(previous)
