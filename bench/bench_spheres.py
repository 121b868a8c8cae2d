"""SPHERES leader-follower (seed 001, section 4.1): simulated seconds per wall second.

    .venv/bin/python bench/bench_spheres.py [--duration 85] [--repeat 5]

Runs ``leader_follower`` on the local backend (no recording) with the estimated state (the
seed's configuration, the scenario's default) and with perfect state, each with the kernel's
batching on (islands whose hops coincide propagate in one compiled call) and off, and beside
them the kernel's floor measured in the same run: the wall time per barrier of an island holding only
the rigid-body dynamics actor (integration and state publication, no SPHERES actor). Prints a
markdown table; the best of ``--repeat`` runs is kept.
"""
from __future__ import annotations

import argparse
import time

import numpy as np

from hopsim.actors.vehicle_dynamics import RigidVehicleDynamics
from hopsim.kernel import Simulation
from hopsim.scenarios.catalog import get_scenario

WARM_UP_S = 6.0          # long enough for the first metrology cycles (their compiled code loads then)
REAL_TIME_TARGET = 300.0  # the default configuration should run >= 300x real time (kernel v2)
CONFIGS = [
    ("estimated state (default)", {}),
    ("perfect state", {"perfect_state": True}),
]


def run_leader_follower(overrides: dict, duration_s: float, batching: bool = True) -> tuple[float, int]:
    spec = get_scenario("leader_follower")
    sim = Simulation(seed=0, batching=batching)
    spec.build(sim, spec.make_params(overrides))
    t0 = time.perf_counter()
    sim.advance_to(duration_s)
    wall = time.perf_counter() - t0
    return wall, sum(isl["barriers"] for isl in sim.stats()["islands"].values())


def kernel_floor_us(n_barriers: int = 4000) -> float:
    """Wall time per barrier of a dynamics-only island publishing its state at every barrier."""
    sim = Simulation(seed=0)
    sim.add_island("v")
    sim.add_model(RigidVehicleDynamics("v", 3.4447, np.diag([0.0204, 0.0170, 0.0190]), rate_hz=100.0), "v")
    t0 = time.perf_counter()
    sim.advance_to(n_barriers / 100.0)
    return (time.perf_counter() - t0) / n_barriers * 1e6


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--duration", type=float, default=85.0, help="simulated seconds")
    ap.add_argument("--repeat", type=int, default=5)
    opts = ap.parse_args()
    run_leader_follower({}, WARM_UP_S)         # load compiled code and caches once
    floor = min(kernel_floor_us() for _ in range(opts.repeat))
    print("| leader_follower, local backend | batching | simulated s | wall s | x real time | barriers "
          "| wall per barrier (us) | / kernel floor |")
    print("|---|---|---|---|---|---|---|---|")
    speeds = {}
    for label, overrides in CONFIGS:
        for batching in (True, False):
            wall, barriers = min(run_leader_follower(overrides, opts.duration, batching)
                                 for _ in range(opts.repeat))
            per = wall / barriers * 1e6
            speeds[label, batching] = opts.duration / wall
            print(f"| {label} | {'on' if batching else 'off'} | {opts.duration:g} | {wall:.2f} "
                  f"| {opts.duration / wall:.0f}x | {barriers} | {per:.0f} | {per / floor:.1f}x |")
    print(f"| kernel floor: dynamics-only island | | | | | | {floor:.0f} | 1.0x |")
    default = CONFIGS[0][0]
    print(f"\nThe default configuration runs at {speeds[default, False]:.0f}x real time with batching off "
          f"(the kernel's default) and {speeds[default, True]:.0f}x with it on; target "
          f"{REAL_TIME_TARGET:.0f}x. Best of {opts.repeat} runs each.")


if __name__ == "__main__":
    main()
