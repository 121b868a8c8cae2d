"""Monte Carlo campaigns on Ray: runs per second with 1 and 2 Ray workers, beside one process.

    .venv/bin/python bench/bench_montecarlo.py [--runs 40] [--repeat 3]

A campaign of short dispersed ``lander`` runs (30 simulated seconds each) runs locally in one
process and on a local Ray sized to 1 and to 2 CPUs; the three take turns over ``--repeat``
repeats (this machine's speed drifts) and the medians are compared. Ray's start and shutdown are
timed apart from the runs. Cost model for a cluster: T = T_start + N * t_run / (W * e), with
e the per-worker efficiency measured here.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from hopsim.scenarios.montecarlo import make_campaign, run_campaign


def campaign(runs: int):
    return make_campaign(
        {
            "scenario": "lander",
            "runs": runs,
            "seed": 3,
            "duration_s": 30.0,
            "parameters": {"stop_on_touchdown": True},
            "dispersions": [{"path": "altitude_m", "knob": {"kind": "uniform", "low": 60, "high": 140}}],
        }
    )


def timed(runs: int, backend: str, cpus: int | None) -> float:
    """Seconds from the first run's start to the last run's end (Ray's start-up excluded)."""
    marks: list[float] = []
    with tempfile.TemporaryDirectory() as d:
        run_campaign(
            campaign(runs),
            d,
            backend=backend,
            ray_cpus=cpus,
            on_row=lambda row, done, total: marks.append(time.perf_counter()),
        )
        return marks[-1] - marks[0] if len(marks) > 1 else float("nan")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=40)
    ap.add_argument("--repeat", type=int, default=3)
    opts = ap.parse_args()
    timed(4, "local", None)  # compile and warm up
    configs = [("local, one process", "local", None), ("Ray, 1 worker", "ray", 1), ("Ray, 2 workers", "ray", 2)]
    results: dict[str, list[float]] = {name: [] for name, _, _ in configs}
    for _ in range(opts.repeat):
        for name, backend, cpus in configs:
            results[name].append((opts.runs - 1) / timed(opts.runs, backend, cpus))
    print("| campaign of lander runs | runs / s (median) | each repeat |")
    print("|---|---:|---|")
    for name, rates in results.items():
        print(f"| {name} | {statistics.median(rates):.2f} | {', '.join(f'{r:.2f}' for r in rates)} |")
    one, two = statistics.median(results["Ray, 1 worker"]), statistics.median(results["Ray, 2 workers"])
    print()
    print(
        f"2 Ray workers run {two / one:.2f}x the runs per second of 1 (target 1.8x); per-worker efficiency "
        f"{two / (2 * one):.0%}. {opts.runs} runs of 30 simulated seconds each, medians of {opts.repeat} "
        f"interleaved repeats; Ray's start-up is outside the timed span."
    )


if __name__ == "__main__":
    main()
