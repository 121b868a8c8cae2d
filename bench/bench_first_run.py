"""A new user's first run of each scenario: compile time with numba's cache empty, then a warm start.

    .venv/bin/python bench/bench_first_run.py [--scenarios lander,leader_follower] [--duration S]

Each scenario runs as the command runs it (``python -m hopsim.cli run NAME``, for the scenario's own
duration unless ``--duration`` is given), in a fresh process: first with ``NUMBA_CACHE_DIR``
pointing at an empty directory (a fresh machine: the command compiles the kernels of its manifest
ahead on every core, then anything left at its first call, and reports both), then again with that
cache filled. The peer is the same command warm: the table gives the cold and warm wall times.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time

SCENARIOS = [
    "lander",
    "leader_follower",
    "cooperative_docking",
    "deploy_boom",
    "collision",
    "passive_docking",
    "pileup",
    "formation",
]
AHEAD = re.compile(r"compiled (\d+) kernels ahead in ([0-9.]+) s")
AT_FIRST_CALL = re.compile(r"compiled numerical kernels in ([0-9.]+) s \((\d+) functions")


def run(name: str, duration: float | None, cache: str) -> tuple[float, float, float, int]:
    """(wall s of the whole command, s compiling ahead, s compiling at first calls, functions
    compiled at first calls)."""
    env = {**os.environ, "NUMBA_CACHE_DIR": cache}
    t0 = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "hopsim.cli", "run", name, "--no-progress"]
        + ([] if duration is None else ["--duration", str(duration)]),
        env=env,
        capture_output=True,
        text=True,
        timeout=1800,
    )
    wall = time.perf_counter() - t0
    if done.returncode != 0:
        raise SystemExit(f"{name} failed: {done.stderr[-2000:]}")
    text = " ".join(done.stderr.split())
    ahead, late = AHEAD.search(text), AT_FIRST_CALL.search(text)
    return (
        wall,
        float(ahead.group(2)) if ahead else 0.0,
        float(late.group(1)) if late else 0.0,
        int(late.group(2)) if late else 0,
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scenarios", default=",".join(SCENARIOS))
    ap.add_argument(
        "--duration", type=float, default=None, help="simulated seconds of each run (default: each scenario's own)"
    )
    opts = ap.parse_args()
    print(
        "| scenario | first run, empty cache (s) | compiling ahead (s) | compiling at first call (s) "
        "| functions compiled at first call | warm run (s) |"
    )
    print("|---|---:|---:|---:|---:|---:|")
    for name in opts.scenarios.split(","):
        with tempfile.TemporaryDirectory(prefix="hopsim-numba-") as cache:
            cold, ahead, late, functions = run(name, opts.duration, cache)
            warm, *_ = run(name, opts.duration, cache)
        print(f"| {name} | {cold:.1f} | {ahead:.1f} | {late:.1f} | {functions} | {warm:.2f} |")
    print()
    simulates = "simulates the scenario default duration" if opts.duration is None else f"simulates {opts.duration:g} s"
    print(
        f"Each run {simulates} "
        f"with `hopsim run`, in a new process; 'warm' reuses the cache the first run filled. Target: the "
        f"flagship's first run under 20 s of compilation, later runs start in under 2 s."
    )


if __name__ == "__main__":
    main()
