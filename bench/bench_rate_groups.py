"""Rate groups and fleet forms: CPU time and instructions per vehicle-step with them off and on, in the same run.

    .venv/bin/python bench/bench_rate_groups.py [--repeat N] [--no-callgrind]

A rate group (:mod:`hopsim.kernel.rate_group`) advances the islands that share one periodic
schedule with one wake-up per instant, and their barriers without a plan of their own; the stream
is the same with groups on or off (``Simulation(rate_groups=...)``). Each workload is run with
groups off and on, and the figures are ratios off / on (above 1: the groups save). A workload
whose models have a fleet form (:mod:`hopsim.kernel.fleet`: the orbiting spacecraft) runs a third
time, with the group's hops through the fleet form (``Simulation(fleets=True)``, the default);
"on" alone is groups without fleet forms. A workload whose models have row forms (the
formation's) runs a fourth time with row blocks (:mod:`hopsim.kernel.blocks`, the default); the
other settings run without them:

- ``formation`` scenario, N = 100 and N = 1000 vehicles, 1 Hz, one island per vehicle;
- N = 100 spacecraft of ``bench_orbit.py`` (degree-8 gravity, drag, solar pressure, four wheels,
  RK4), 1 Hz, one island per spacecraft.

A vehicle-step is one island's 1 s step (N per simulated second; the hops counted by the islands).

CPU time: every run is a fresh process (``--one``) that builds the workload, advances the first
five simulated seconds untimed, then measures ``time.process_time`` over the timed advance. Off and on
runs alternate, ``--repeat`` rounds (default 5); medians, in microseconds per vehicle-step. Each
workload runs once before, so that numba's on-disk cache is warm.

Instructions: callgrind (``valgrind --tool=callgrind``) counts every instruction of a run. Each
workload and setting runs twice, to a short and a longer simulated duration after the same first
five seconds; (instructions(long) - instructions(short)) / (extra vehicle-steps) is the instructions per
vehicle-step, with start-up, set-up and compilation cancelled out. These runs use numba's generic
CPU (``NUMBA_CPU_NAME=generic``: valgrind's CPU is not the host's, and a cache for the host would
miss and compile under valgrind) and a fixed ``PYTHONHASHSEED``; their cache is warmed by a plain
run first. Unlike CPU times they do not depend on the machine's load, so two run at a time. Start-up
alone is about a minute and a half of callgrind per run, so N = 1000 (whose set-up alone takes about
3 minutes there) is not counted; ``--no-callgrind`` skips the counts.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import NamedTuple

ROOT = Path(__file__).resolve().parents[1]
BENCH = Path(__file__).resolve().parent


class Workload(NamedTuple):
    kind: str  # "formation" or "orbit"
    n: int  # vehicles (islands)
    timed_s: float  # simulated seconds timed, after the first
    short_s: float | None  # callgrind's short and long runs, simulated seconds after the first
    long_s: float | None  # (None: not counted)
    fleet_form: bool = False  # its models have a fleet form: a third setting
    row_forms: bool = False  # its models have row forms: a fourth, row blocks

    @property
    def settings(self) -> tuple[str, ...]:
        return ("off", "on") + (("fleets",) if self.fleet_form else ()) + (("blocks",) if self.row_forms else ())


# N = 1000 is not counted: its set-up alone takes about 3 minutes under callgrind
WORKLOADS = {
    "formation, N = 100": Workload("formation", 100, 300.0, 2.0, 42.0, fleet_form=True, row_forms=True),
    "formation, N = 1000": Workload("formation", 1000, 20.0, None, None, fleet_form=True, row_forms=True),
    "orbit, N = 100": Workload("orbit", 100, 300.0, 2.0, 42.0, fleet_form=True),
}
CALLGRIND_ENV = {"NUMBA_CPU_NAME": "generic", "PYTHONHASHSEED": "0"}
CALLGRIND_JOBS = 2  # callgrind runs at a time: their counts do not depend on the load
COLLECTED = re.compile(r"Collected\s*:\s*([\d,]+)")
I_REFS = re.compile(r"I\s+refs:\s*([\d,]+)")


# --------------------------------------------------------------------------- one run (in its own process)


def formation_sim(n: int, setting: str):
    from hopsim.kernel import Simulation
    from hopsim.scenarios.catalog import get_scenario

    spec = get_scenario("formation")
    params = spec.make_params({"n_vehicles": n})
    sim = Simulation(
        seed=0, rate_groups=setting != "off", fleets=setting in ("fleets", "blocks"), row_blocks=setting == "blocks"
    )
    sim.scenario_params = params
    spec.build(sim, params)
    return sim


def orbit_sim(n: int, setting: str):
    """``bench_orbit.hopsim_sim(n)``, with rate groups and fleet forms as asked."""
    sys.path.insert(0, str(BENCH))
    import bench_orbit as bo

    from hopsim.kernel import Simulation

    field = bo.ggm03s()
    sim = Simulation(seed=1, rate_groups=setting != "off", fleets=setting == "fleets", row_blocks=False)
    for i, (r, v) in enumerate(bo.initial_states(n, field.mu)):
        name = f"sc{i}"
        sim.add_island(name, integrator=bo.RK4(), n_integration_steps=1)
        sim.add_model(
            bo.OrbitingSpacecraft(
                name,
                r,
                v,
                bo.MASS_KG,
                bo.INERTIA_B,
                omega_BN_B=(0.001, -0.002, 0.001),
                field=field,
                degree=bo.DEGREE,
                cd_area_m2=bo.CD * bo.AREA_M2,
                rho0_kgpm3=bo.RHO0,
                h0_m=bo.H0_M,
                scale_height_m=bo.SCALE_M,
                cr_area_m2=bo.CR * bo.AREA_M2,
                gravity_gradient=False,
                rate_hz=1.0,
                axes_B=bo.AXES_B,
                J_kgm2=bo.WHEEL_J,
                Omega_radps=bo.OMEGA0,
                max_torque_Nm=0.2,
                viscous_Nms=bo.VISCOUS,
                coulomb_Nm=bo.COULOMB,
            ),
            name,
            ties={"torque_cmd": "fleet/rw_cmd"},
        )
    sim.inject("fleet/rw_cmd", bo.ReactionWheelCommand(torque_Nm=bo.MOTOR_NM), 0.0)
    return sim


def hops(sim) -> int:
    return sum(isl["hops"] for isl in sim.stats()["islands"].values())  # (with what a row block holds)


WARM_S = 5.0  # simulated seconds before the timed part (compiled code loaded, a row block formed)


def one(kind: str, n: int, setting: str, duration_s: float) -> dict:
    """Build one workload, advance its first ``WARM_S`` seconds, then time ``duration_s`` more."""
    sim = formation_sim(n, setting) if kind == "formation" else orbit_sim(n, setting)
    sim.advance_to(WARM_S)
    hops0 = hops(sim)
    t0 = time.process_time()
    sim.advance_to(WARM_S + duration_s)
    cpu_s = time.process_time() - t0
    return {"cpu_s": cpu_s, "steps": hops(sim) - hops0}


# --------------------------------------------------------------------------- the runs (from the parent)


def one_args(w: Workload, setting: str, duration_s: float) -> list[str]:
    return [
        sys.executable,
        str(Path(__file__).resolve()),
        "--one",
        w.kind,
        "--n",
        str(w.n),
        "--setting",
        setting,
        "--duration",
        str(duration_s),
    ]


def run_one(w: Workload, setting: str, duration_s: float, env: dict | None = None) -> dict:
    """One run in a fresh process; its measurements."""
    proc = subprocess.run(
        one_args(w, setting, duration_s), capture_output=True, text=True, cwd=ROOT, env=env, check=False
    )
    if proc.returncode != 0:
        raise RuntimeError(f"{w.kind} N = {w.n} failed:\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def cpu_us_per_step(w: Workload, repeat: int) -> dict[str, float]:
    """Median CPU time per vehicle-step (us) per setting, over ``repeat`` interleaved rounds."""
    run_one(w, "on", 1.0)  # numba's cache warm, files in the page cache
    samples: dict[str, list[float]] = {setting: [] for setting in w.settings}
    for k in range(repeat):
        order = w.settings if k % 2 == 0 else w.settings[::-1]  # off first, then last first, ...
        for setting in order:
            r = run_one(w, setting, w.timed_s)
            samples[setting].append(r["cpu_s"] / r["steps"] * 1e6)
    return {setting: statistics.median(s) for setting, s in samples.items()}


def instructions(w: Workload, setting: str, duration_s: float) -> tuple[int, int]:
    """Instructions of one whole run under callgrind, and its timed vehicle-steps."""
    cmd = ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", *one_args(w, setting, duration_s)]
    proc = subprocess.run(
        cmd, capture_output=True, text=True, cwd=ROOT, env={**os.environ, **CALLGRIND_ENV}, check=False
    )
    if proc.returncode != 0:
        raise RuntimeError(f"callgrind, {w.kind} N = {w.n} failed:\n{proc.stderr[-3000:]}")
    found = COLLECTED.search(proc.stderr) or I_REFS.search(proc.stderr)
    if found is None:
        raise RuntimeError(f"no instruction count in valgrind's output:\n{proc.stderr[-2000:]}")
    steps = json.loads(proc.stdout.strip().splitlines()[-1])["steps"]
    return int(found.group(1).replace(",", "")), steps


def instructions_per_step() -> dict[str, dict[str, float]]:
    """Instructions per vehicle-step per setting and counted workload: the difference of a long
    and a short run, divided by the extra vehicle-steps."""
    counted = {name: w for name, w in WORKLOADS.items() if w.short_s is not None}
    for w in counted.values():
        for setting in w.settings:  # the generic CPU's cache warm
            run_one(w, setting, w.short_s, env={**os.environ, **CALLGRIND_ENV})
    runs = [
        (name, setting, duration_s)
        for name, w in counted.items()
        for setting in w.settings
        for duration_s in (w.short_s, w.long_s)
    ]

    def count(run: tuple[str, str, float]) -> tuple[int, int]:
        name, setting, duration_s = run
        return instructions(WORKLOADS[name], setting, duration_s)

    with ThreadPoolExecutor(max_workers=CALLGRIND_JOBS) as pool:
        result = dict(zip(runs, pool.map(count, runs)))
    out: dict[str, dict[str, float]] = {}
    for name, w in counted.items():
        out[name] = {}
        for setting in w.settings:
            i_short, steps_short = result[name, setting, w.short_s]
            i_long, steps_long = result[name, setting, w.long_s]
            out[name][setting] = (i_long - i_short) / (steps_long - steps_short)
    return out


# --------------------------------------------------------------------------- report


def print_section(cpu: dict, instr: dict, repeat: int) -> None:
    print("### Rate groups and fleet forms\n")
    print(
        "CPU time and instructions per vehicle-step (one island's 1 s step) with rate groups off and on "
        "(without fleet forms), and on with the group's hops through a fleet form where the models have "
        "one, and with row blocks where they have row forms; the same workload and stream; off / on above 1 "
        "is what they save.\n"
    )
    header = ("workload", "setting", "us / vehicle-step", "off / this", "instructions / vehicle-step", "off / this")
    print("| " + " | ".join(header) + " |")
    print("|---|---|" + "---:|" * (len(header) - 2))
    labels = {
        "off": "groups off",
        "on": "groups on",
        "fleets": "groups on, fleet forms",
        "blocks": "groups on, row blocks",
    }
    for name, w in WORKLOADS.items():
        for setting in w.settings:
            t, t_off = cpu[name][setting], cpu[name]["off"]
            row = [f"{name} ({w.timed_s:g} s)", labels[setting], f"{t:.1f}", f"{t_off / t:.2f}"]
            if name in instr:
                i, i_off = instr[name][setting], instr[name]["off"]
                row += [f"{i:,.0f}", f"{i_off / i:.2f}"]
            else:
                row += ["not measured"] * 2
            print("| " + " | ".join(row) + " |")
    print(
        f"\nCPU time (`time.process_time`): medians of {repeat} interleaved rounds of the settings, each run a fresh "
        "process, set-up and the first five simulated seconds excluded; the timed simulated seconds in brackets."
    )
    if instr:
        spans = "; ".join(f"{name}: {WORKLOADS[name].short_s:g} s and {WORKLOADS[name].long_s:g} s" for name in instr)
        print(
            f"\nInstructions: callgrind, the difference of two runs per setting ({spans} after the first five), "
            "divided by the extra vehicle-steps; numba's generic CPU. Not measured for N = 1000: its set-up "
            "alone takes about 3 minutes under callgrind."
        )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=5, help="interleaved rounds of the settings per workload (default 5)")
    ap.add_argument(
        "--callgrind",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="count instructions under callgrind (default on)",
    )
    ap.add_argument("--one", choices=("formation", "orbit"), help=argparse.SUPPRESS)
    ap.add_argument("--n", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--setting", choices=("off", "on", "fleets", "blocks"), help=argparse.SUPPRESS)
    ap.add_argument("--duration", type=float, help=argparse.SUPPRESS)
    opts = ap.parse_args()
    if opts.one is not None:
        print(json.dumps(one(opts.one, opts.n, opts.setting, opts.duration)))
        return
    cpu = {name: cpu_us_per_step(w, opts.repeat) for name, w in WORKLOADS.items()}
    instr = instructions_per_step() if opts.callgrind else {}
    print_section(cpu, instr, opts.repeat)


if __name__ == "__main__":
    main()
