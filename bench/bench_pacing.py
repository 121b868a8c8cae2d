"""Real-time pacing at 100 Hz (`hopsim run --pace 1`): how late each tick wakes against its wall-clock
deadline (p50, p99) and how many ticks overran, beside the peer in the same run: a bare Python
loop that sleeps to the same 100 Hz deadlines and does nothing else (what the operating system
gives any pacing loop on this machine).

    .venv/bin/python bench/bench_pacing.py [--seconds 20]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from hopsim.scenarios import run_scenario
from hopsim.scenarios.pacing import Pacer


def bare_loop(seconds: float, period_s: float = 0.01) -> np.ndarray:
    """Lateness (s) of a loop sleeping to 100 Hz deadlines."""
    late = []
    t0 = time.perf_counter()
    for k in range(int(seconds / period_s) + 1):
        deadline = t0 + k * period_s
        now = time.perf_counter()
        if now < deadline:
            time.sleep(deadline - now)
        late.append(time.perf_counter() - deadline)
    return np.array(late)


def paced(scenario: str, overrides: dict, seconds: float) -> tuple[np.ndarray, int, int]:
    pacer = Pacer(1.0)
    run_scenario(scenario, overrides, duration_s=seconds, pacer=pacer)
    return np.array(pacer.report.lateness_s), pacer.report.overruns, pacer.report.ticks


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=20.0)
    args = ap.parse_args()
    run_scenario("formation", {"n_vehicles": 10}, duration_s=1.0)  # compile before timing
    rows = [("bare sleep loop (peer)", bare_loop(args.seconds), 0, int(args.seconds * 100) + 1)]
    rows.append(("lander", *paced("lander", {"stop_on_touchdown": False}, args.seconds)))
    rows.append(("formation, 10 vehicles", *paced("formation", {"n_vehicles": 10}, args.seconds)))
    print("### Real-time pacing (`--pace 1`, 100 Hz ticks)\n")
    print(
        f"{args.seconds:g} s of simulated time at real time; lateness of each tick that slept against its "
        f"wall-clock deadline.\n"
    )
    print("| run | ticks | overruns | lateness p50 (ms) | lateness p99 (ms) |")
    print("|---|---|---|---|---|")
    for name, late, overruns, ticks in rows:
        p50, p99 = np.percentile(late * 1e3, [50, 99])
        print(f"| {name} | {ticks} | {overruns} | {p50:.3f} | {p99:.3f} |")


if __name__ == "__main__":
    main()
