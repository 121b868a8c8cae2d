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

WARM_UP_S = 6.0  # long enough for the first metrology cycles (their compiled code loads then)
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


_PROFILED_RUNS = """
from hopsim.kernel import Simulation
from hopsim.scenarios.catalog import get_scenario
spec = get_scenario("leader_follower")
for _ in range({runs}):
    sim = Simulation(seed=0)
    spec.build(sim, spec.make_params({{}}))
    sim.advance_to({duration})
"""
KERNEL_FILES = ("hopsim/kernel/", "hopsim/bus/", "simpy/")
MODEL_FILES = ("hopsim/actors/", "hopsim/dynamics/")


def _samples(native: bool, runs: int, duration_s: float, rate_hz: int) -> list[tuple[list[str], int]] | str:
    """py-spy's samples of ``runs`` leader_follower runs in one process ([(frames, count)], the
    innermost frame last), those inside ``advance_to`` only and without the loading of compiled
    code on a function's first call; ``native``: with the frames of compiled libraries. A string
    says why there are none."""
    import shutil
    import subprocess
    import sys
    import tempfile
    from pathlib import Path

    spy = shutil.which("py-spy") or str(Path(sys.executable).with_name("py-spy"))
    if not Path(spy).exists():
        return "py-spy is not installed (pip install -e '.[bench]')"
    with tempfile.TemporaryDirectory() as tmp:
        raw = Path(tmp) / "samples.txt"
        done = subprocess.run(
            [
                spy,
                "record",
                *(["--native"] if native else []),
                "-r",
                str(rate_hz),
                "-f",
                "raw",
                "-o",
                str(raw),
                "--",
                sys.executable,
                "-c",
                _PROFILED_RUNS.format(runs=runs, duration=duration_s),
            ],
            capture_output=True,
            text=True,
        )
        if done.returncode != 0 or not raw.exists():
            return f"py-spy could not sample ({(done.stderr.strip().splitlines() or ['?'])[-1]})"
        text = raw.read_text()
    out = []
    for line in text.splitlines():
        stack, _, count = line.rpartition(" ")
        if "advance_to" in stack and "_compile_for_args" not in stack:
            out.append((stack.split(";"), int(count)))
    return out


def time_split(runs: int = 12, duration_s: float = 85.0, rate_hz: int = 2000) -> dict | str:
    """Where leader_follower's time goes, by sampling (py-spy, ``rate_hz`` samples per second).
    By Python function: each one's share of the samples where it is the innermost Python frame
    (what it runs itself, numpy and compiled calls included), summed over the kernel's files
    (:data:`KERNEL_FILES`) and the models' (:data:`MODEL_FILES`). By what runs (``--native``, a
    quarter of the runs, three at least): the interpreter running Python code, numpy, protobuf
    (upb), numba's compiled code, its dispatch, BLAS, the C library. A string says why it was
    not measured."""
    import collections
    import re

    samples = _samples(False, runs, duration_s, rate_hz)
    if isinstance(samples, str):
        return samples
    functions: collections.Counter = collections.Counter()  # (file, function) -> samples
    for frames, count in samples:
        m = re.match(r"(.*) \((.*?):\d+\)$", frames[-1])
        if m:
            name, path = m.groups()
            at = path.rfind("hopsim/")
            functions[path[at:] if at >= 0 else path.split("site-packages/")[-1], name] += count
    total = sum(functions.values())
    kernel = [n for (f, _), n in functions.items() if f.startswith(KERNEL_FILES)]
    models = [n for (f, _), n in functions.items() if f.startswith(MODEL_FILES)]
    split = {
        "samples": total,
        "kernel": sum(kernel) / total,
        "models": sum(models) / total,
        "kernel_top": max(kernel) / total,
        "models_top": max(models) / total,
        "kernel_functions": len(kernel),
    }
    native = _samples(True, max(3, runs // 4), duration_s, rate_hz)
    if isinstance(native, str):
        return split
    kinds: collections.Counter = collections.Counter()
    for frames, count in native:
        leaf = frames[-1]
        kinds[
            next(
                (kind for kind, marks in NATIVE_KINDS if any(m in leaf for m in marks)),
                "Python (the interpreter)" if re.search(r"\.py:\d+\)$", leaf) else "other native code",
            )
        ] += count
    every = sum(kinds.values())
    split["native"] = {kind: n / every for kind, n in kinds.most_common()}
    return split


# what a native sample's innermost frame belongs to (the first kind whose mark it holds)
NATIVE_KINDS = (
    ("numba's compiled code", ("(?)",)),
    ("BLAS", ("openblas", "gemv", "gemm")),
    ("numba's dispatch and runtime", ("typeconv", "_dispatcher", "_typeof", "nrt", "_helperlib")),
    ("numpy", ("numpy/",)),
    ("protobuf (upb)", ("_message.abi3",)),
    ("the C library", ("libc.so", "libm.so")),
)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--duration", type=float, default=85.0, help="simulated seconds")
    ap.add_argument("--repeat", type=int, default=5)
    opts = ap.parse_args()
    run_leader_follower({}, WARM_UP_S)  # load compiled code and caches once
    floor = min(kernel_floor_us() for _ in range(opts.repeat))
    print(
        "| leader_follower, local backend | batching | simulated s | wall s | x real time | barriers "
        "| wall per barrier (us) | / kernel floor |"
    )
    print("|---|---|---|---|---|---|---|---|")
    speeds = {}
    for label, overrides in CONFIGS:
        for batching in (True, False):
            wall, barriers = min(run_leader_follower(overrides, opts.duration, batching) for _ in range(opts.repeat))
            per = wall / barriers * 1e6
            speeds[label, batching] = opts.duration / wall
            print(
                f"| {label} | {'on' if batching else 'off'} | {opts.duration:g} | {wall:.2f} "
                f"| {opts.duration / wall:.0f}x | {barriers} | {per:.0f} | {per / floor:.1f}x |"
            )
    print(f"| kernel floor: dynamics-only island | | | | | | {floor:.0f} | 1.0x |")
    default = CONFIGS[0][0]
    print(
        f"\nThe default configuration runs at {speeds[default, False]:.0f}x real time with batching off "
        f"(the kernel's default) and {speeds[default, True]:.0f}x with it on; target "
        f"{REAL_TIME_TARGET:.0f}x. Best of {opts.repeat} runs each."
    )
    split = time_split()
    if isinstance(split, str):
        print(f"\nWhere its time goes: not measured ({split}).")
    else:
        print(
            f"\nWhere its time goes (default configuration, py-spy sampling at 2 kHz of twelve 85-s runs, "
            f"{split['samples']:,} samples; the loading of compiled code left out): the models "
            f"{split['models']:.0%} (no function above {split['models_top']:.1%}), the kernel and bus "
            f"{split['kernel']:.0%} ({split['kernel_functions']} functions, none above "
            f"{split['kernel_top']:.1%})."
        )
        if "native" in split:
            print(
                "By what runs (py-spy --native, three runs): "
                + ", ".join(f"{kind} {share:.1%}" for kind, share in split["native"].items())
                + "."
            )


if __name__ == "__main__":
    main()
