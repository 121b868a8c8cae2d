"""A new user's first run of each scenario: compile time with numba's cache empty, then a warm start.

    .venv/bin/python bench/bench_first_run.py [--scenarios lander,leader_follower] [--duration 1]

Each scenario runs as the command runs it (``python -m hopsim.cli run NAME --duration D``), in a
fresh process: first with ``NUMBA_CACHE_DIR`` pointing at an empty directory (a fresh machine; the
command reports what it compiled and how long it took), then again with that cache filled. The
peer is the same command warm: the table gives the cold and warm wall times and their ratio.
"""
from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time

SCENARIOS = ["lander", "leader_follower", "cooperative_docking", "deploy_boom", "collision", "passive_docking",
             "pileup", "formation"]
COMPILED = re.compile(r"compiled numerical kernels in ([0-9.]+) s \((\d+) functions")


def run(name: str, duration: float, cache: str) -> tuple[float, float, int]:
    """(wall s of the whole command, compile s it reported, functions compiled)."""
    env = {**os.environ, "NUMBA_CACHE_DIR": cache}
    t0 = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "hopsim.cli", "run", name, "--duration", str(duration),
                           "--no-progress"], env=env, capture_output=True, text=True, timeout=1800)
    wall = time.perf_counter() - t0
    if done.returncode != 0:
        raise SystemExit(f"{name} failed: {done.stderr[-2000:]}")
    found = COMPILED.search(" ".join(done.stderr.split()))
    return wall, float(found.group(1)) if found else 0.0, int(found.group(2)) if found else 0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scenarios", default=",".join(SCENARIOS))
    ap.add_argument("--duration", type=float, default=1.0, help="simulated seconds of each run")
    opts = ap.parse_args()
    print("| scenario | first run, empty cache (s) | of which compiling (s) | functions compiled "
          "| warm start (s) | first / warm |")
    print("|---|---:|---:|---:|---:|---:|")
    for name in opts.scenarios.split(","):
        with tempfile.TemporaryDirectory(prefix="hopsim-numba-") as cache:
            cold, compiling, functions = run(name, opts.duration, cache)
            warm, _, _ = run(name, opts.duration, cache)
        print(f"| {name} | {cold:.1f} | {compiling:.1f} | {functions} | {warm:.2f} | {cold / warm:.0f}x |")
    print()
    print(f"Each run simulates {opts.duration:g} s with `hopsim run`, in a new process; 'warm' reuses the "
          f"cache the first run filled. Target: the flagship's first run under 20 s of compilation, later "
          f"runs start in under 2 s.")


if __name__ == "__main__":
    main()
