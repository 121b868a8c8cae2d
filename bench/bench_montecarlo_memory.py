"""The driver's memory over a campaign of many runs: 10,000 short dispersed ``lander`` runs on a
local Ray, the driver's peak resident set size sampled as rows arrive.

    .venv/bin/python bench/bench_montecarlo_memory.py [--runs 10000] [--duration 2]

Each row (parameters, outcome, stream hash) goes to ``runs.jsonl`` as it arrives; the driver keeps
the rows for the table and the summary. The figure to watch is the growth per run after the first
thousand (a leak would grow with the runs; the rows themselves are a few hundred bytes each).
"""

from __future__ import annotations

import argparse
import resource
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from hopsim.scenarios.montecarlo import make_campaign, run_campaign


def rss_mib() -> float:
    """The resident set size now (MiB), from /proc."""
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=10_000)
    ap.add_argument("--duration", type=float, default=2.0, help="simulated seconds of each run")
    ap.add_argument("--backend", default="ray")
    opts = ap.parse_args()
    campaign = make_campaign(
        {
            "scenario": "lander",
            "runs": opts.runs,
            "seed": 11,
            "duration_s": opts.duration,
            "dispersions": [{"path": "altitude_m", "knob": {"kind": "uniform", "low": 60, "high": 140}}],
        }
    )
    samples: list[tuple[int, float]] = []
    t0 = time.perf_counter()

    def on_row(row, done, total):
        if done in (1, 100, 1000) or done % 2000 == 0 or done == total:
            samples.append((done, rss_mib()))

    with tempfile.TemporaryDirectory() as d:
        rows = run_campaign(campaign, d, backend=opts.backend, on_row=on_row)
        jsonl = (Path(d) / "runs.jsonl").stat().st_size
    wall = time.perf_counter() - t0
    print("| runs done | driver RSS (MiB) |")
    print("|---:|---:|")
    for done, mib in samples:
        print(f"| {done} | {mib:.0f} |")
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    failed = sum(r["status"] != "ok" for r in rows)
    grow = (samples[-1][1] - samples[2][1]) / max(1, samples[-1][0] - samples[2][0]) * 1024 if len(samples) > 3 else 0
    print()
    print(
        f"{len(rows)} runs ({failed} failed) of {opts.duration:g} simulated s on {opts.backend} in {wall:.0f} s; "
        f"driver peak RSS {peak:.0f} MiB; growth after run 1,000: {grow:.1f} KiB per run; "
        f"runs.jsonl {jsonl / 1e6:.1f} MB."
    )


if __name__ == "__main__":
    main()
