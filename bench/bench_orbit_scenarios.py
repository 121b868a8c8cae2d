"""The orbit scenarios with their full guidance, navigation and control: real-time factors, and the
default integration (RK4, compiled hops) against the adaptive one (DOP853, every derivative sample
a call through the kernel) in the same run.

    .venv/bin/python bench/bench_orbit_scenarios.py [--repeat N]

Workloads: ``orbit_formation`` with 10 and 100 deputies for 600 s (GNSS, radio, slot keeping,
six pulsed thrusters and a tank per deputy; the target of 1,000x real time is for 100) and
``constellation`` 24/3/1 and 240/12/1 for 6,000 s. Each is run with ``integrator=rk4`` (the
default) and ``integrator=dop853``, without recording and, for the default, with the MCAP
recorder (``--out``). Every run is a fresh process that builds the scenario and runs it to the
end once untimed (numba's cache warm, the build's imports done), then again timed: the CPU time
(``time.process_time``) of ``run_scenario`` with the build included. Settings alternate,
``--repeat`` rounds (default 3); medians.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

WORKLOADS = [
    ("orbit_formation", {"n_vehicles": 10}, 600.0, 10),
    ("orbit_formation", {"n_vehicles": 100}, 600.0, 100),
    ("constellation", {}, 6000.0, 24),
    ("constellation", {"n_satellites": 240, "n_planes": 12}, 6000.0, 240),
]
SETTINGS = [("rk4", False), ("dop853", False), ("rk4", True)]


def one(name: str, overrides: dict, duration_s: float, integrator: str, record: bool) -> float:
    """CPU seconds of one run (in this process: call it in a fresh one)."""
    from hopsim.scenarios import run_scenario

    params = {**overrides, "integrator": integrator}
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "run.mcap" if record else None
        run_scenario(name, params, duration_s=duration_s, out=out)
        t0 = time.process_time()
        run_scenario(name, params, duration_s=duration_s, out=out)
        return time.process_time() - t0


def measure(repeat: int) -> list[dict]:
    rows = []
    for name, overrides, duration_s, n in WORKLOADS:
        times: dict[tuple, list[float]] = {s: [] for s in SETTINGS}
        for _ in range(repeat):
            for integrator, record in SETTINGS:
                job = json.dumps([name, overrides, duration_s, integrator, record])
                proc = subprocess.run(
                    [sys.executable, __file__, "--one", job], capture_output=True, text=True, check=True, cwd=ROOT
                )
                times[(integrator, record)].append(float(proc.stdout.split()[-1]))
        med = {s: statistics.median(v) for s, v in times.items()}
        rows.append(
            {
                "scenario": name,
                "n": n,
                "duration_s": duration_s,
                "rk4": med[("rk4", False)],
                "dop853": med[("dop853", False)],
                "rk4_rec": med[("rk4", True)],
            }
        )
    return rows


def print_table(rows: list[dict], repeat: int) -> None:
    print(
        "### Orbit scenarios with full GNC (local backend; CPU s of a whole run, build included; "
        f"medians of {repeat})\n"
    )
    print(
        "| scenario | spacecraft | simulated s | RK4 (s) | real time | DOP853 (s) | RK4 vs DOP853 "
        "| RK4 recorded (s) | real time recorded |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(
            f"| {r['scenario']} | {r['n']:,} | {r['duration_s']:,.0f} | {r['rk4']:.2f} | "
            f"{r['duration_s'] / r['rk4']:,.0f}x | {r['dop853']:.2f} | {r['dop853'] / r['rk4']:.2f}x | "
            f"{r['rk4_rec']:.2f} | {r['duration_s'] / r['rk4_rec']:,.0f}x |"
        )
    of100 = next(r for r in rows if r["scenario"] == "orbit_formation" and r["n"] == 100)
    print(
        f"\n`orbit_formation` with 100 deputies runs at {of100['duration_s'] / of100['rk4']:,.0f}x real time "
        f"without recording (target 1,000x)."
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--one", help=argparse.SUPPRESS)
    opts = ap.parse_args()
    if opts.one:
        print(one(*json.loads(opts.one)))
        return
    print_table(measure(opts.repeat), opts.repeat)


if __name__ == "__main__":
    main()
