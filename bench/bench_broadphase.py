"""Broad-phase contact check: hopsim's spatial hash against the compiled all-pairs test, measured
in the same run; prints markdown.

    .venv/bin/python bench/bench_broadphase.py [--quick]

N spheres of radius 0.1 m spread uniformly in a cube sized for a "pileup" (20 % of the volume
filled by spheres), each with a reach of radius + 0.05 m (the motion bound of one check
window). Both methods are numba-compiled and return the same sorted pairs; the all-pairs test
is skipped where its estimated time exceeds a few seconds per check. Ratios are what we
report; absolute times depend on the machine.
"""

from __future__ import annotations

import sys
from functools import partial
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import timing

from hopsim.dynamics.contact import all_pairs_candidates, broadphase_pairs

QUICK = "--quick" in sys.argv
RADIUS = 0.1  # [m]
MOTION_BOUND = 0.05  # [m] travel allowed between two checks
VOLUME_FRACTION = 0.2
ALL_PAIRS_BUDGET = 3.0  # [s] per check; above it the all-pairs column is skipped
SIZES = (100, 1000, 10_000) if QUICK else (100, 1000, 10_000, 100_000)


def best_time(fn, repeat=3 if QUICK else 5, min_time=0.02 if QUICK else 0.1):
    return timing.best_time(fn, repeat, min_time)


def pileup(n, rng):
    """Centres (n, 3) [m] in a cube filled to VOLUME_FRACTION, reaches (n,) [m], cube side."""
    side = (n * 4.0 / 3.0 * np.pi * RADIUS**3 / VOLUME_FRACTION) ** (1.0 / 3.0)
    return rng.uniform(0.0, side, (n, 3)), np.full(n, RADIUS + MOTION_BOUND), side


def measure(sizes):
    """Rows (N, side, pairs, hash [s], all pairs [s] or None)."""
    rng = np.random.default_rng(0)
    rows = []
    all_pairs_estimate = 0.0
    for n in sizes:
        centres, reach, side = pileup(n, rng)
        pairs = broadphase_pairs(centres, reach)
        t_hash = best_time(partial(broadphase_pairs, centres, reach))
        t_all = None
        if all_pairs_estimate * n * n <= ALL_PAIRS_BUDGET:
            assert np.array_equal(all_pairs_candidates(centres, reach), pairs)
            t_all = best_time(partial(all_pairs_candidates, centres, reach), repeat=3)
            all_pairs_estimate = t_all / (n * n)
        rows.append((n, side, len(pairs), t_hash, t_all))
    return rows


def print_table(rows):
    print("## Broad phase: candidate pairs per check\n")
    print(f"Spheres of radius {RADIUS} m, reach {RADIUS + MOTION_BOUND:g} m, {VOLUME_FRACTION:.0%} volume fraction.\n")
    print("| N | cube side [m] | candidate pairs | spatial hash [ms] | all pairs [ms] | all pairs / hash |")
    print("|---:|---:|---:|---:|---:|---:|")
    for n, side, k, t_hash, t_all in rows:
        all_ms = "skipped" if t_all is None else f"{t_all * 1e3:.3f}"
        ratio = "-" if t_all is None else f"{t_all / t_hash:.1f}x"
        print(f"| {n:,} | {side:.2f} | {k:,} | {t_hash * 1e3:.3f} | {all_ms} | {ratio} |")
    print()


def main():
    import numba

    print("# hopsim broad-phase benchmark\n")
    print(f"numpy {np.__version__}, numba {numba.__version__}{', quick run' if QUICK else ''}.\n")
    print_table(measure(SIZES))


if __name__ == "__main__":
    main()
