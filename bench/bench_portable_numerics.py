"""What the portable numerics cost: this tree against the tree before them, the way a user runs.

The tree before (``BEFORE``, the last commit computing with the C library's functions, BLAS and
numpy's draws) is checked out beside this one with ``git worktree``. Each scenario runs whole,
with its default settings, in a fresh process per run, both trees interleaved, ``repeat`` times;
the figure is the run's wall time as ``run_scenario`` measures it (build and start-up excluded,
numba's cache warm: every process runs the scenario once briefly first), medians of the repeats.
Recorded runs write an MCAP file as ``hopsim run --out`` does.

    .venv/bin/python bench/bench_portable_numerics.py [--repeat 5]

The same comparison against any other commit (what a change costs, the way a user runs it):

    .venv/bin/python bench/bench_portable_numerics.py --before COMMIT [--only formation]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

BEFORE = "5d21a32"

CASES = [
    # label, scenario, overrides, seconds simulated, recorded
    ("formation, N = 100, bare", "formation", {"n_vehicles": 100}, 3000.0, False),
    ("formation, N = 100, recorded", "formation", {"n_vehicles": 100}, 300.0, True),
    ("leader_follower, recorded", "leader_follower", {}, 85.0, True),
    ("leader_follower, bare", "leader_follower", {}, 85.0, False),
    ("orbit_formation, 100 deputies, bare", "orbit_formation", {"n_vehicles": 100}, 600.0, False),
    ("orbit_formation, 10 deputies, recorded", "orbit_formation", {}, 6000.0, True),
    ("lander, recorded", "lander", {}, 60.0, True),
]

_RUN = """
import json, sys, tempfile, os
from hopsim.scenarios.runner import run_scenario
name, overrides, duration, recorded = sys.argv[1], json.loads(sys.argv[2]), float(sys.argv[3]), sys.argv[4] == "1"
run_scenario(name, overrides, duration_s=min(duration, 2.0))  # numba's cache loaded, first-call costs paid
out = os.path.join(tempfile.mkdtemp(), "r.mcap") if recorded else None
print(run_scenario(name, overrides, duration_s=duration, out=out).wall_s)
"""


def measure(repeat: int, before_commit: str = BEFORE, only: str = "") -> list[tuple[str, float, float]]:
    import json

    here = Path(__file__).resolve().parent.parent
    tmp = Path(tempfile.mkdtemp(prefix="hopsim-before-"))
    before = tmp / "tree"
    made = subprocess.run(
        ["git", "-C", str(here), "worktree", "add", "--detach", "-f", str(before), before_commit],
        capture_output=True,
        text=True,
    )
    if made.returncode != 0:
        raise SystemExit(f"the commit to compare with ({before_commit}) is not in this clone: {made.stderr}")
    rows = []
    try:
        for label, name, overrides, duration, recorded in CASES:
            if only not in label:
                continue
            times: dict[str, list[float]] = {"before": [], "now": []}
            for _ in range(repeat):
                for which, tree in (("before", before), ("now", here)):
                    env = {**os.environ, "PYTHONPATH": str(tree)}
                    args = [name, json.dumps(overrides), str(duration), "1" if recorded else "0"]
                    done = subprocess.run(
                        [sys.executable, "-c", _RUN, *args], env=env, capture_output=True, text=True, cwd=tmp
                    )
                    if done.returncode != 0:
                        raise SystemExit(f"{which}: {label}: {done.stderr[-2000:]}")
                    times[which].append(float(done.stdout.split()[-1]))
            rows.append((label, statistics.median(times["before"]), statistics.median(times["now"])))
    finally:
        subprocess.run(["git", "-C", str(here), "worktree", "remove", "--force", str(before)], capture_output=True)
        shutil.rmtree(tmp, ignore_errors=True)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument(
        "--before", default=BEFORE, help="the commit to compare with (default: before the portable numerics)"
    )
    parser.add_argument("--only", default="", help="only the runs whose label holds this text")
    args = parser.parse_args()
    rows = measure(args.repeat, args.before, args.only)
    print("### The portable numerics' cost\n" if args.before == BEFORE else f"### This tree against {args.before}\n")
    print(
        f"Whole runs, wall s (medians of {args.repeat} interleaved fresh processes), this tree against {args.before}.\n"
    )
    print("| run | before (s) | now (s) | now / before |")
    print("|---|---:|---:|---:|")
    for label, b, n in rows:
        print(f"| {label} | {b:.2f} | {n:.2f} | {n / b:.3f} |")


if __name__ == "__main__":
    main()
