"""Orbit benchmark: N spacecraft, each with degree-8 gravity, drag, solar pressure and four reaction
wheels, stepped with fixed-step RK4 at 1 s, in hopsim and in Basilisk in the same run; prints markdown.

    .venv/bin/python bench/bench_orbit.py

hopsim: one :class:`~hopsim.actors.orbiting_spacecraft.OrbitingSpacecraft` per island (``RK4``,
one step per 1 Hz hop; the islands form one rate group, run as a row block once the wheel command
is latched (:mod:`hopsim.kernel.blocks`: one compiled RK4 call over all spacecraft per instant),
and, in a second column, each through its own scalar path: no fleet form, no row block): GGM03S to degree 8 in
the Earth-fixed frame, a cannonball in an exponential atmosphere, cannonball solar pressure (analytic Sun,
cylindrical shadow), four wheels
in a pyramid with viscous and Coulomb friction under a constant command, no gravity gradient.

Basilisk (an interpreter with the ``bsk`` wheel from ``HOPSIM_BSK_PYTHON``, else ``.venv-bsk``):
``Spacecraft`` (its RK4) at a 1 s task rate with ``gravityEffector`` (spherical harmonics, the same
GGM03S coefficients to degree 8, Earth at rest at the origin: no SPICE), ``exponentialAtmosphere``
with ``dragDynamicEffector``, ``radiationPressure`` (cannonball; the Sun's position a stand-alone
message, written once: no SPICE, no eclipse) and ``reactionWheelStateEffector`` with four wheels
(``Honeywell_HR16``, friction on) under a constant stand-alone motor-torque message.

Per spacecraft-step times are medians of 3 interleaved repeats, set-up excluded (and hopsim's first
WARM_STEPS steps, Basilisk's first); ratios are what we report.
"""

from __future__ import annotations

import cProfile
import json
import math
import os
import pstats
import re
import shutil
import statistics
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from timing import bsk_python  # noqa: E402  (this folder)

from hopsim.actors.orbiting_spacecraft import OrbitingSpacecraft  # noqa: E402
from hopsim.dynamics.gravity import EARTH_RADIUS  # noqa: E402
from hopsim.dynamics.integrators import RK4  # noqa: E402
from hopsim.dynamics.orbital_elements import state_from_elements  # noqa: E402
from hopsim.dynamics.orbiting_body import rk4_hops  # noqa: E402
from hopsim.dynamics.spherical_harmonics import ggm03s  # noqa: E402
from hopsim.kernel import Simulation  # noqa: E402
from hopsim.schemas import ReactionWheelCommand  # noqa: E402

DEGREE = 8
SIZES = [1, 10, 100, 1000, 10000]
REPEATS = 3
WARM_STEPS = 5  # hopsim's steps before the timed ones (Basilisk's: one)
MASS_KG, INERTIA_B = 500.0, [[400.0, 0.0, 0.0], [0.0, 300.0, 0.0], [0.0, 0.0, 200.0]]
CD, AREA_M2, CR = 2.2, 2.0, 1.3
RHO0, H0_M, SCALE_M = 4.0e-13, 500e3, 60e3  # exponential atmosphere: rho0 at h0, scale height
BETA = math.radians(35.26)
AXES_B = [
    [math.cos(BETA) * math.cos(az), math.cos(BETA) * math.sin(az), math.sin(BETA)]
    for az in np.radians([0.0, 90.0, 180.0, 270.0])
]
WHEEL_J = 50.0 / (6000.0 * 2.0 * math.pi / 60.0)  # HR16 at 50 N m s: maxMomentum / Omega_max (kg m^2)
OMEGA0, MOTOR_NM = [100.0, -50.0, 20.0, 0.0], [0.01, -0.01, 0.005, 0.0]
VISCOUS, COULOMB = 1e-5, 5e-4
SUN_N = [1.4959787e11, 0.0, 0.0]  # Basilisk's fixed Sun (m, frame N)


def steps_for(n: int) -> int:
    return max(5, min(600, 3000 // n))


def initial_states(n: int, mu: float):
    out = []
    for i in range(n):
        el = (6.9e6 + 2e3 * i, 0.001 + 1e-5 * i, math.radians(30.0 + 0.5 * (i % 100)), 0.1 * i, 0.2, 0.3 + 0.01 * i)
        r, v = state_from_elements(*el, mu)
        out.append((r.tolist(), v.tolist()))
    return out


# --------------------------------------------------------------------------- hopsim


def hopsim_sim(n: int, fleets: bool = True):
    field = ggm03s()
    sim = Simulation(seed=1, fleets=fleets, row_blocks=fleets)  # fleets False: the scalar path
    for i, (r, v) in enumerate(initial_states(n, field.mu)):
        name = f"sc{i}"
        sim.add_island(name, integrator=RK4(), n_integration_steps=1)
        sim.add_model(
            OrbitingSpacecraft(
                name,
                r,
                v,
                MASS_KG,
                INERTIA_B,
                omega_BN_B=(0.001, -0.002, 0.001),
                field=field,
                degree=DEGREE,
                cd_area_m2=CD * AREA_M2,
                rho0_kgpm3=RHO0,
                h0_m=H0_M,
                scale_height_m=SCALE_M,
                cr_area_m2=CR * AREA_M2,
                gravity_gradient=False,
                rate_hz=1.0,
                axes_B=AXES_B,
                J_kgm2=WHEEL_J,
                Omega_radps=OMEGA0,
                max_torque_Nm=0.2,
                viscous_Nms=VISCOUS,
                coulomb_Nm=COULOMB,
            ),
            name,
            ties={"torque_cmd": "fleet/rw_cmd"},
        )
    sim.inject("fleet/rw_cmd", ReactionWheelCommand(torque_Nm=MOTOR_NM), 0.0)
    return sim


def hopsim_step_time(n: int, fleets: bool = True) -> float:
    """Seconds per spacecraft-step (set-up and the first WARM_STEPS steps excluded: the wheel
    command latched, the group's row block formed)."""
    steps = steps_for(n)
    sim = hopsim_sim(n, fleets)
    sim.advance_to(1.0 + WARM_STEPS)
    t0 = time.perf_counter()
    sim.advance_to(1.0 + WARM_STEPS + steps)
    return (time.perf_counter() - t0) / (steps * n)


def numerics_step_time(n: int, repeat: int = 7) -> float:
    """Seconds per spacecraft-step of the compiled numerics alone: the same spacecraft's RK4 step
    (:func:`hopsim.dynamics.orbiting_body.rk4_hops`, the arithmetic of the fleet's and the scalar
    hop) over arrays stacked once, no kernel, no ports. What no design of the kernel goes below."""
    sim = hopsim_sim(n)
    sim.advance_to(1.0)  # the wheel command latched
    models = [sim.model(f"sc{i}") for i in range(n)]
    stack = [
        np.array([getattr(m, a) for m in models])
        for a in ("x", "xdot", "params", "loads", "inertia_B", "inertia_inv", "inertia_total_B")
    ]
    wheels = [np.array([getattr(m, a) for m in models]) for a in ("G", "J", "u", "friction_table")]
    args = (np.array([1.0]), *stack, models[0].C, models[0].S, *wheels)
    rk4_hops(1.0, *args)
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        for k in range(20):
            rk4_hops(2.0 + k, *args)
        best = min(best, (time.perf_counter() - t0) / (20 * n))
    return best


# --------------------------------------------------------------------------- Basilisk

BSK_SCRIPT = r"""
import json, sys, time
from Basilisk.architecture import messaging
from Basilisk.simulation import (dragDynamicEffector, exponentialAtmosphere, gravityEffector, radiationPressure,
                                 reactionWheelStateEffector, spacecraft)
from Basilisk.utilities import SimulationBaseClass, macros, simIncludeGravBody, simIncludeRW
job = json.load(sys.stdin)
n, steps = job["n"], job["steps"]
sim = SimulationBaseClass.SimBaseClass()
proc = sim.CreateNewProcess("p")
dt = macros.sec2nano(1.0)
proc.addTask(sim.CreateNewTask("t", dt))
grav = simIncludeGravBody.gravBodyFactory()
earth = grav.createEarth()
earth.isCentralBody = True
sh = gravityEffector.SphericalHarmonicsGravityModel()
sh.muBody, sh.radEquator, sh.maxDeg = job["mu"], job["radius"], job["degree"]
sh.cBar, sh.sBar = job["C"], job["S"]
earth.gravityModel = sh
earth.mu = job["mu"]
earth.radEquator = job["radius"]
atmo = exponentialAtmosphere.ExponentialAtmosphere()
atmo.ModelTag = "atmo"
atmo.planetRadius, atmo.baseDensity, atmo.scaleHeight = job["radius_atmo"], job["rho_surface"], job["scale"]
sun = messaging.SpicePlanetStateMsgPayload()
sun.PositionVector = job["sun"]
sun_msg = messaging.SpicePlanetStateMsg().write(sun)
cmd = messaging.ArrayMotorTorqueMsgPayload()
cmd.motorTorque = job["motor"]
cmd_msg = messaging.ArrayMotorTorqueMsg().write(cmd)
keep = []
for i, (r, v) in enumerate(job["states"]):
    sc = spacecraft.Spacecraft()
    sc.ModelTag = f"sc{i}"
    sc.hub.mHub = job["mass"]
    sc.hub.IHubPntBc_B = job["inertia"]
    sc.hub.r_CN_NInit = [[x] for x in r]
    sc.hub.v_CN_NInit = [[x] for x in v]
    sc.hub.omega_BN_BInit = [[0.001], [-0.002], [0.001]]
    grav.addBodiesTo(sc)
    rwf = simIncludeRW.rwFactory()
    for axis, Omega in zip(job["axes"], job["Omega_rpm"]):
        rwf.create("Honeywell_HR16", axis, maxMomentum=50.0, Omega=Omega, useRWfriction=True,
                   cViscous=job["viscous"], fCoulomb=job["coulomb"])
    rws = reactionWheelStateEffector.ReactionWheelStateEffector()
    rws.ModelTag = f"rw{i}"
    rwf.addToSpacecraft(sc.ModelTag, rws, sc)
    rws.rwMotorCmdInMsg.subscribeTo(cmd_msg)
    atmo.addSpacecraftToModel(sc.scStateOutMsg)
    drag = dragDynamicEffector.DragDynamicEffector()
    drag.ModelTag = f"drag{i}"
    drag.coreParams.projectedArea, drag.coreParams.dragCoeff = job["area"], job["cd"]
    drag.atmoDensInMsg.subscribeTo(atmo.envOutMsgs[i])
    sc.addDynamicEffector(drag)
    srp = radiationPressure.RadiationPressure()
    srp.ModelTag = f"srp{i}"
    srp.setUseCannonballModel()
    srp.area, srp.coefficientReflection = job["area"], job["cr"]
    srp.sunEphmInMsg.subscribeTo(sun_msg)
    sc.addDynamicEffector(srp)
    sim.AddModelToTask("t", rws, 2)
    sim.AddModelToTask("t", sc, 1)
    sim.AddModelToTask("t", drag)
    sim.AddModelToTask("t", srp)
    keep += [sc, rwf, rws, drag, srp]
sim.AddModelToTask("t", atmo, 3)
sim.InitializeSimulation()
sim.ConfigureStopTime(dt)
sim.ExecuteSimulation()
t0 = time.perf_counter()
sim.ConfigureStopTime(dt * (steps + 1))
sim.ExecuteSimulation()
print((time.perf_counter() - t0) / (steps * n))
"""


def basilisk_job(n: int, steps: int) -> dict:
    """The Basilisk script's input: ``n`` spacecraft as hopsim's, ``steps`` timed steps."""
    field = ggm03s()
    C, S = field.C[: DEGREE + 1, : DEGREE + 1], field.S[: DEGREE + 1, : DEGREE + 1]
    return {
        "n": n,
        "steps": steps,
        "mu": field.mu,
        "radius": field.radius,
        "degree": DEGREE,
        "C": [list(C[k, : k + 1]) for k in range(DEGREE + 1)],
        "S": [list(S[k, : k + 1]) for k in range(DEGREE + 1)],
        # the same density as hopsim's: rho(h) = rho0 exp(-(h - h0) / H) = rho_surface exp(-h / H)
        "radius_atmo": EARTH_RADIUS,
        "rho_surface": RHO0 * math.exp(H0_M / SCALE_M),
        "scale": SCALE_M,
        "sun": SUN_N,
        "motor": MOTOR_NM,
        "mass": MASS_KG,
        "inertia": INERTIA_B,
        "axes": AXES_B,
        "Omega_rpm": [w * 60.0 / (2.0 * math.pi) for w in OMEGA0],
        "viscous": VISCOUS,
        "coulomb": COULOMB,
        "area": AREA_M2,
        "cd": CD,
        "cr": CR,
        "states": initial_states(n, field.mu),
    }


def basilisk_step_time(n: int, python: str) -> float | None:
    """Seconds per spacecraft-step in Basilisk (set-up and the first step excluded)."""
    job = basilisk_job(n, steps_for(n))
    try:
        out = subprocess.run(
            [python, "-c", BSK_SCRIPT], input=json.dumps(job), check=True, capture_output=True, text=True, timeout=900
        )
        return float(out.stdout.strip().splitlines()[-1])
    except (subprocess.SubprocessError, ValueError, OSError, IndexError) as err:
        tail = (getattr(err, "stderr", "") or "")[-500:]
        print(f"<!-- basilisk run failed (N={n}): {type(err).__name__} {tail} -->")
        return None


# --------------------------------------------------------------------------- instructions (callgrind)

CALLGRIND_ENV = {"NUMBA_CPU_NAME": "generic", "PYTHONHASHSEED": "0"}
COLLECTED = re.compile(r"Collected\s*:\s*([\d,]+)")
COUNTED_N, COUNTED_STEPS = 100, (5, 25)  # spacecraft; a short and a long run (timed steps)


def hopsim_steps(n: int, steps: int, fleets: bool) -> None:
    """Build, step once untimed, then ``steps`` more (the program callgrind counts)."""
    sim = hopsim_sim(n, fleets)
    sim.advance_to(1.0)
    sim.advance_to(1.0 + steps)


def counted(cmd: list[str], stdin: str | None = None) -> int:
    """Instructions of one whole program under callgrind."""
    proc = subprocess.run(
        ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", *cmd],
        input=stdin,
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**os.environ, **CALLGRIND_ENV},
        check=False,
    )
    found = COLLECTED.search(proc.stderr)
    if proc.returncode != 0 or found is None:
        raise RuntimeError(f"callgrind of {cmd[:3]} failed:\n{proc.stderr[-2000:]}")
    return int(found.group(1).replace(",", ""))


def instructions_per_step(python: str | None) -> dict[str, float]:
    """Instructions per spacecraft-step at N = COUNTED_N: hopsim with and without fleet forms and
    Basilisk, each the difference of a long and a short run over the extra spacecraft-steps (set-up
    and start-up cancelled); the runs go two at a time (their counts do not depend on the load)."""
    short, long = COUNTED_STEPS
    me = [sys.executable, str(Path(__file__).resolve()), "--steps"]
    for fleets in ("fleets", "scalar"):  # numba's cache for the generic CPU warm
        subprocess.run(
            [*me, str(COUNTED_N), "1", fleets],
            cwd=ROOT,
            env={**os.environ, **CALLGRIND_ENV},
            check=True,
            capture_output=True,
        )
    runs = {
        (kind, steps): ([*me, str(COUNTED_N), str(steps), kind], None)
        for kind in ("fleets", "scalar")
        for steps in COUNTED_STEPS
    }
    if python is not None:
        runs.update(
            {
                ("basilisk", steps): ([python, "-c", BSK_SCRIPT], json.dumps(basilisk_job(COUNTED_N, steps)))
                for steps in COUNTED_STEPS
            }
        )
    with ThreadPoolExecutor(max_workers=2) as pool:
        found = dict(zip(runs, pool.map(lambda r: counted(*r), runs.values())))
    kinds = sorted({kind for kind, _ in runs})
    return {kind: (found[kind, long] - found[kind, short]) / ((long - short) * COUNTED_N) for kind in kinds}


# --------------------------------------------------------------------------- report


def profile_one() -> list[str]:
    sim = hopsim_sim(1)
    sim.advance_to(1.0)
    prof = cProfile.Profile()
    prof.enable()
    sim.advance_to(301.0)
    prof.disable()
    stats = pstats.Stats(prof)
    total = stats.total_tt
    rows = sorted(stats.stats.items(), key=lambda kv: kv[1][2], reverse=True)[:10]
    lines = []
    for (path, line, func), (_cc, ncalls, tottime, _ct, _callers) in rows:
        where = f"{Path(path).name}:{line}" if line else path
        lines.append(f"- `{func}` ({where}): {tottime / total * 100:.1f}% of {total:.2f} s, {ncalls} calls")
    return lines


def main():
    if len(sys.argv) == 5 and sys.argv[1] == "--steps":  # one counted program (see counted)
        hopsim_steps(int(sys.argv[2]), int(sys.argv[3]), sys.argv[4] == "fleets")
        return
    python = bsk_python()
    sizes = list(SIZES)
    hop, scalar, bsk = {n: [] for n in sizes}, {n: [] for n in sizes}, {n: [] for n in sizes}
    for _ in range(REPEATS):
        for n in sizes:
            hop[n].append(hopsim_step_time(n))
            scalar[n].append(hopsim_step_time(n, fleets=False))
            if python is not None:
                t = basilisk_step_time(n, python)
                if t is not None:
                    bsk[n].append(t)
    print("# Orbit benchmark: degree-8 gravity, drag, SRP and four reaction wheels, RK4 at 1 s\n")
    print(
        f"numpy {np.__version__}, {os.cpu_count()} CPUs; medians of {REPEATS} interleaved repeats, "
        f"set-up excluded, and hopsim's first {WARM_STEPS} steps (the wheel command latched, the row block "
        "formed), Basilisk's first.\n"
    )
    floors = {n: numerics_step_time(n) for n in sizes}
    print(
        "| N | steps | hopsim [us / spacecraft-step] | hopsim, scalar path | Basilisk [us / spacecraft-step] "
        "| hopsim / Basilisk | numerics alone [us] | Basilisk / numerics alone |"
    )
    print("|---:|---:|---:|---:|---:|---:|---:|---:|")
    for n in sizes:
        th, ts = statistics.median(hop[n]), statistics.median(scalar[n])
        tb = statistics.median(bsk[n]) if bsk[n] else None
        b = "not measured" if tb is None else f"{tb * 1e6:.1f}"
        ratio = "not measured" if tb is None else f"{th / tb:.2f}"
        ceiling = "not measured" if tb is None else f"{tb / floors[n]:.1f}"
        print(
            f"| {n} | {steps_for(n)} | {th * 1e6:.1f} | {ts * 1e6:.1f} | {b} | {ratio} | {floors[n] * 1e6:.2f} "
            f"| {ceiling} |"
        )
    if python is None:
        print("\nBasilisk: not measured (no `.venv-bsk`; point `HOPSIM_BSK_PYTHON` at an interpreter with `bsk`).")
    print(
        "\nNumerics alone: the compiled RK4 of the same spacecraft over arrays stacked once, no kernel (best of 7; "
        "from four spacecraft their gravity side by side, lane by lane). Basilisk / numerics alone bounds what "
        "any kernel could make of hopsim / Basilisk at that size: below 10, 10x faster than Basilisk needs "
        "cheaper numerics, whatever the kernel does."
    )
    if shutil.which("valgrind"):
        instr = instructions_per_step(python)
        row = " | ".join(f"{instr[k]:,.0f}" if k in instr else "not measured" for k in ("fleets", "scalar", "basilisk"))
        ratio = f"{instr['fleets'] / instr['basilisk']:.2f}" if "basilisk" in instr else "not measured"
        print(
            f"\nInstructions per spacecraft-step (callgrind, N = {COUNTED_N}, the difference of "
            f"{COUNTED_STEPS[1]} and {COUNTED_STEPS[0]} steps; numba's generic CPU):\n"
        )
        print("| hopsim | hopsim, scalar path | Basilisk | hopsim / Basilisk |")
        print("|---:|---:|---:|---:|")
        print(f"| {row} | {ratio} |")
    print("\nhopsim, N = 1, 300 steps: cProfile top 10 by own time\n")
    print("\n".join(profile_one()))
    print()


if __name__ == "__main__":
    main()
