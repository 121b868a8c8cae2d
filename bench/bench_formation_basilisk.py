"""The formation of 100, recorded, as a user runs it, against Basilisk's comparable 100-hub run; prints markdown.

    .venv/bin/python bench/bench_formation_basilisk.py [--quick] [--repeat R]

hopsim: the command a user types, ``hopsim run formation --set n_vehicles=100 --duration D --out F
--force`` (default settings: 1 Hz control, one RK4 step per hop, sensor noise, the radio's one-period
latency; :mod:`hopsim.scenarios.formation`), each in a fresh process, recorded to an MCAP file and,
for reference, bare (no ``--out``). Each vehicle is a rigid body, a thruster, a state sensor, a
receiving radio and a consensus flight software over its two ring neighbours.

Basilisk (an interpreter with the ``bsk`` wheel from ``HOPSIM_BSK_PYTHON``, else ``.venv-bsk``), the
same script in a fresh process: 100 ``Spacecraft`` hubs (RK4, the task at 1 s) of the formation's mass
and inertia from hopsim's initial states, no gravity; each with ``simpleNav`` (Gauss-Markov position
and velocity errors of the sensor's 1-sigma), an ``extForceTorque`` effector taking an inertial force
command, and recorders on its ``SCStatesMsg``, ``NavTransMsg`` and ``CmdForceInertialMsg``, the
recorded arrays read into numpy at the end. The force command comes either from the consensus law as
a Basilisk Python module per craft (``sysModel.SysModel``: its own and its two ring neighbours'
``NavTransMsg``, the formation's gains and offsets, the force clipped per axis to the thruster's
limit) or, for reference, from a stand-alone message per craft written once (a fixed command).

Both sides are timed alike: the wall time (and the CPU time, user + system) of the whole process for
D = LONG_S and D = SHORT_S simulated seconds, and the short run's time subtracted from the long one's
(start-up, imports, set-up, the first SHORT_S seconds and the end of the run cancel), repeats
interleaved, medians of the per-repeat differences. Beside it, each program's own time of the run loop
(hopsim's "simulated in" line, Basilisk's ``ExecuteSimulation``), long minus short the same way. One
untimed short run of each program goes first (compiled-code caches and the files' pages warm). The
Basilisk script's input (hopsim's initial states, gains and offsets, as JSON) is made before its
process starts, outside the time.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from timing import bsk_python  # noqa: E402  (this folder)

N = 100
LONG_S, SHORT_S = 305.0, 5.0
QUICK_LONG_S = 65.0
REPEATS, QUICK_REPEATS = 5, 2
TARGET = 7.0  # hopsim recorded / Basilisk consensus, in real-time factor
SIMULATED_IN = re.compile(r"simulated in ([0-9.]+) s wall")


# --------------------------------------------------------------------------- hopsim


def hopsim_command() -> str:
    here = Path(sys.executable).parent / "hopsim"
    return str(here if here.exists() else ROOT / ".venv" / "bin" / "hopsim")


def timed(cmd: list[str], **kw) -> tuple[float, float, subprocess.CompletedProcess]:
    """(wall time, CPU time: user + system) of one program run to its end, and its result."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False, **kw)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, proc


def hopsim_run(duration_s: float, out: Path | None, cwd: Path) -> tuple[float, float, float | None]:
    """(whole command's wall time, its CPU time, the run loop's time it prints) of one ``hopsim run
    formation``."""
    cmd = [hopsim_command(), "run", "formation", "--set", f"n_vehicles={N}", "--duration", f"{duration_s:g}"]
    if out is not None:
        cmd += ["--out", str(out), "--force"]
    wall, cpu, proc = timed(cmd, cwd=cwd)
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed:\n{proc.stderr[-2000:]}")
    found = SIMULATED_IN.search(proc.stdout + proc.stderr)
    return wall, cpu, float(found.group(1)) if found else None


# --------------------------------------------------------------------------- Basilisk

BSK_SCRIPT = r"""
import json, sys, time
from Basilisk.architecture import messaging, sysModel
from Basilisk.simulation import extForceTorque, simpleNav, spacecraft
from Basilisk.utilities import SimulationBaseClass, macros
job = json.load(sys.stdin)
n, fmax, mass = job["n"], job["max_thrust_N"], job["mass"]


class Consensus(sysModel.SysModel):
    # The formation's consensus law: a = sum_j -kp (r_i - r_j - (p_i - p_j)) - kd (v_i - v_j), F = m a,
    # clipped per axis to the thruster's limit.
    def __init__(self, offsets):
        super().__init__()
        self.navInMsg = messaging.NavTransMsgReader()
        self.nbrInMsgs = [messaging.NavTransMsgReader() for _ in offsets]
        self.forceOutMsg = messaging.CmdForceInertialMsg()
        self.payload = messaging.CmdForceInertialMsgPayload()
        self.offsets = offsets
        self.kp, self.kd = job["kp"], job["kd"]

    def Reset(self, t_ns):
        self.forceOutMsg.write(messaging.CmdForceInertialMsgPayload(), t_ns, self.moduleID)

    def UpdateState(self, t_ns):
        own = self.navInMsg()
        r, v = own.r_BN_N, own.v_BN_N
        kp, kd = self.kp, self.kd
        f = [0.0, 0.0, 0.0]
        for reader, off in zip(self.nbrInMsgs, self.offsets):
            other = reader()
            ro, vo = other.r_BN_N, other.v_BN_N
            for c in range(3):
                f[c] -= kp * ((r[c] - ro[c]) - off[c]) + kd * (v[c] - vo[c])
        self.payload.forceRequestInertial = [max(-fmax, min(fmax, mass * a)) for a in f]
        self.forceOutMsg.write(self.payload, t_ns, self.moduleID)


t_start = time.perf_counter()
sim = SimulationBaseClass.SimBaseClass()
proc = sim.CreateNewProcess("p")
dt = macros.sec2nano(1.0)
proc.addTask(sim.CreateNewTask("t", dt))
sigma = job["sigma"]  # position (m) and velocity (m/s), per axis
P = [[0.0] * 18 for _ in range(18)]
for k in range(6):
    P[k][k] = sigma[k]
walk = [3.0 * s for s in sigma] + [0.0] * 12
keep, navs, recorders = [], [], []
for i in range(n):
    sc = spacecraft.Spacecraft()
    sc.ModelTag = f"sc{i}"
    sc.hub.mHub = mass
    sc.hub.IHubPntBc_B = job["inertia"]
    sc.hub.r_CN_NInit = [[x] for x in job["r0"][i]]
    sc.hub.v_CN_NInit = [[x] for x in job["v0"][i]]
    nav = simpleNav.SimpleNav()
    nav.ModelTag = f"nav{i}"
    nav.PMatrix = P
    nav.walkBounds = walk
    nav.scStateInMsg.subscribeTo(sc.scStateOutMsg)
    ext = extForceTorque.ExtForceTorque()
    ext.ModelTag = f"ext{i}"
    sc.addDynamicEffector(ext)
    if job["controller"] == "consensus":
        ctrl = Consensus(job["offsets"][i])
        ctrl.ModelTag = f"ctrl{i}"
        ctrl.navInMsg.subscribeTo(nav.transOutMsg)
        cmd_msg = ctrl.forceOutMsg
        sim.AddModelToTask("t", ctrl, 80)
        keep.append(ctrl)
    else:
        fixed = messaging.CmdForceInertialMsgPayload()
        fixed.forceRequestInertial = job["fixed_N"]
        cmd_msg = messaging.CmdForceInertialMsg().write(fixed)
        keep.append(cmd_msg)
    ext.cmdForceInertialInMsg.subscribeTo(cmd_msg)
    sim.AddModelToTask("t", sc, 100)
    sim.AddModelToTask("t", nav, 90)
    recs = (sc.scStateOutMsg.recorder(), nav.transOutMsg.recorder(), cmd_msg.recorder())
    for rec in recs:
        sim.AddModelToTask("t", rec)
    keep += [sc, ext]
    navs.append(nav)
    recorders.append(recs)
if job["controller"] == "consensus":
    ctrls = [m for m in keep if isinstance(m, Consensus)]
    for ctrl, nbrs in zip(ctrls, job["neighbours"]):
        for reader, j in zip(ctrl.nbrInMsgs, nbrs):
            reader.subscribeTo(navs[j].transOutMsg)
sim.InitializeSimulation()
t_built = time.perf_counter()
sim.ConfigureStopTime(macros.sec2nano(job["duration"]))
sim.ExecuteSimulation()
t_run = time.perf_counter()
rows = 0
for sc_rec, nav_rec, cmd_rec in recorders:  # the recorded arrays, as a user reads them
    arrays = (sc_rec.times(), sc_rec.r_BN_N, sc_rec.v_BN_N, sc_rec.sigma_BN, sc_rec.omega_BN_B,
              nav_rec.r_BN_N, nav_rec.v_BN_N, cmd_rec.forceRequestInertial)
    rows += sum(len(a) for a in arrays)
print(json.dumps({"build_s": t_built - t_start, "run_s": t_run - t_built, "read_s": time.perf_counter() - t_run,
                  "rows": rows}))
"""


def basilisk_job(duration_s: float, controller: str) -> dict:
    """The Basilisk script's input: the formation's vehicles as hopsim builds them (default parameters,
    seed 0), ``controller`` "consensus" or "fixed"."""
    import numpy as np

    from hopsim.actors.formation import consensus_gains, neighbours
    from hopsim.scenarios.formation import FormationParams, initial_states

    p = FormationParams(n_vehicles=N)
    slots, r0, v0 = initial_states(p, 0)
    nbrs = neighbours(N, p.layout)
    kp, kd = consensus_gains(p.bandwidth_rad_s, p.damping_ratio, max(len(x) for x in nbrs))
    inertia = np.eye(3) * (p.mass_kg * p.size_m * p.size_m / 6.0)
    return {
        "n": N,
        "duration": duration_s,
        "controller": controller,
        "mass": p.mass_kg,
        "inertia": inertia.tolist(),
        "r0": r0.tolist(),
        "v0": v0.tolist(),
        "neighbours": nbrs,
        "offsets": [[(slots[i] - slots[j]).tolist() for j in nbrs[i]] for i in range(N)],
        "kp": kp,
        "kd": kd,
        "max_thrust_N": p.max_thrust_N,
        "sigma": [p.position_noise_m] * 3 + [p.velocity_noise_mps] * 3,
        "fixed_N": [0.01, -0.01, 0.005],
    }


def basilisk_run(python: str, duration_s: float, controller: str) -> tuple[float, float, float]:
    """(whole process's wall time, its CPU time, ExecuteSimulation's time) of one Basilisk run."""
    job = json.dumps(basilisk_job(duration_s, controller))
    wall, cpu, proc = timed([python, "-c", BSK_SCRIPT], input=job)
    if proc.returncode != 0:
        raise RuntimeError(f"Basilisk run ({controller}, {duration_s:g} s) failed:\n{proc.stderr[-2000:]}")
    return wall, cpu, json.loads(proc.stdout.strip().splitlines()[-1])["run_s"]


# --------------------------------------------------------------------------- report


def load() -> str:
    try:
        return " ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return "unknown"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help=f"{QUICK_REPEATS} repeats, {QUICK_LONG_S:g} s long runs")
    ap.add_argument("--repeat", type=int, default=None, help=f"interleaved repeats (default {REPEATS})")
    opts = ap.parse_args()
    repeats = opts.repeat or (QUICK_REPEATS if opts.quick else REPEATS)
    long_s = QUICK_LONG_S if opts.quick else LONG_S
    timed_s = long_s - SHORT_S
    python = bsk_python()
    kinds = ["hopsim recorded", "hopsim bare"]
    if python is not None:
        kinds += ["Basilisk consensus", "Basilisk fixed"]
    runs: dict[tuple[str, float], list[tuple[float, float, float | None]]] = {
        (k, d): [] for k in kinds for d in (long_s, SHORT_S)
    }
    load_before = load()
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "formation.mcap"

        def one(kind: str, d: float) -> tuple[float, float, float | None]:
            if kind.startswith("hopsim"):
                return hopsim_run(d, out if kind == "hopsim recorded" else None, Path(tmp))
            return basilisk_run(python, d, kind.split()[1])

        for kind in kinds:  # untimed: compiled-code caches and the files' pages warm
            one(kind, SHORT_S)
        for _ in range(repeats):
            for kind in kinds:
                for d in (long_s, SHORT_S):
                    runs[kind, d].append(one(kind, d))
    load_after = load()

    def diffs(kind: str, m: int) -> list[float]:
        """Long minus short of each repeat, of measure m (0 wall, 1 CPU, 2 run loop)."""
        pairs = [(a[m], b[m]) for a, b in zip(runs[kind, long_s], runs[kind, SHORT_S], strict=True)]
        return [a - b for a, b in pairs if a is not None and b is not None]

    def diff(kind: str, m: int) -> float | None:
        found = diffs(kind, m)
        return statistics.median(found) if found else None

    def spread(kind: str) -> str:
        found = diffs(kind, 0)
        return f"{min(found):.2f} to {max(found):.2f}"

    def fastest(kind: str) -> float:
        """The least long run's wall time minus the least short run's (noise on a loaded machine only adds)."""
        return min(r[0] for r in runs[kind, long_s]) - min(r[0] for r in runs[kind, SHORT_S])

    def factor(dt: float | None) -> float | None:
        return None if dt is None or dt <= 0 else timed_s / dt

    def fmt(x: float | None, spec: str) -> str:
        return "n/a" if x is None else format(x, spec)

    def ratio(a: float | None, b: float | None) -> str:
        return "n/a" if a is None or b is None else f"{a / b:.1f}x"

    labels = {
        "hopsim recorded": "`hopsim run formation --out` (MCAP)",
        "hopsim bare": "`hopsim run formation`, no recording",
        "Basilisk consensus": "Basilisk, consensus Python module, recorders",
        "Basilisk fixed": "Basilisk, fixed command, recorders",
    }
    print(f"# Formation of {N}, recorded, against Basilisk's {N} hubs: whole runs, {timed_s:g} simulated s\n")
    print(
        f"| program | {long_s:g} s run, wall (s) | {SHORT_S:g} s run, wall (s) | difference, wall (s) (range) "
        "| real-time factor | fastest runs' difference, wall (s) | real-time factor, fastest runs "
        "| difference, CPU (s) | real-time factor, CPU | run loop alone (s) | real-time factor, run loop alone |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    rates = {}
    for kind in kinds:
        d = [diff(kind, m) for m in range(3)] + [fastest(kind)]  # wall, CPU, run loop, fastest wall
        rates[kind] = [factor(x) for x in d]
        long_wall = statistics.median(r[0] for r in runs[kind, long_s])
        short_wall = statistics.median(r[0] for r in runs[kind, SHORT_S])
        print(
            f"| {labels[kind]} | {long_wall:.2f} | {short_wall:.2f} | {fmt(d[0], '.2f')} ({spread(kind)}) "
            f"| {fmt(rates[kind][0], ',.0f')} | {d[3]:.2f} | {fmt(rates[kind][3], ',.0f')} "
            f"| {fmt(d[1], '.2f')} | {fmt(rates[kind][1], ',.0f')} "
            f"| {fmt(d[2], '.3f')} | {fmt(rates[kind][2], ',.0f')} |"
        )
    if python is None:
        print("\nBasilisk: not measured (no `.venv-bsk`; point `HOPSIM_BSK_PYTHON` at an interpreter with `bsk`).")
    else:
        hop, bsk, fixed = rates["hopsim recorded"], rates["Basilisk consensus"], rates["Basilisk fixed"]
        print(
            f"\nhopsim recorded / Basilisk with the consensus Python module, real-time factors of the whole runs: "
            f"**{ratio(hop[0], bsk[0])}** in wall time (target {TARGET:g}x), {ratio(hop[3], bsk[3])} between the "
            f"fastest runs, {ratio(hop[1], bsk[1])} in CPU time, {ratio(hop[2], bsk[2])} for the run loops alone; "
            f"against Basilisk with a fixed command: {ratio(hop[0], fixed[0])} wall, {ratio(hop[3], fixed[3])} "
            f"fastest runs, {ratio(hop[1], fixed[1])} CPU, {ratio(hop[2], fixed[2])} run loops."
        )
    print(
        f"\nEach program in a fresh process, one untimed {SHORT_S:g} s run of each first, then {repeats} "
        f"interleaved repeats; each difference is the median over the repeats (range: the least and the greatest) "
        f"of the {long_s:g} s run's time minus the {SHORT_S:g} s run's (start-up, imports, set-up, the first "
        f"{SHORT_S:g} s and the end of a run cancel), wall time and CPU time (user + system) of the whole process "
        "(the fastest runs' difference: the least long run's wall time minus the least short run's), and the run "
        "loop as the program times it (hopsim's \"simulated in\", Basilisk's `ExecuteSimulation`). hopsim: the "
        "command as a user types it, default settings (each vehicle a rigid body integrated with RK4 at the 1 Hz "
        "control step, a noisy state sensor, a radio with a one-period latency, the consensus flight software over "
        "its two ring neighbours, a thruster), recorded to MCAP. Basilisk: "
        f"{N} `Spacecraft` hubs (RK4 at a 1 s task rate, the formation's mass, inertia and initial states, no "
        "gravity), each with `simpleNav` (position and velocity errors of the sensor's sigma), `extForceTorque` and "
        "in-memory recorders on its `SCStatesMsg`, `NavTransMsg` and `CmdForceInertialMsg` (read into numpy at "
        "the end), the force command from the consensus law as one `sysModel.SysModel` Python module per craft "
        "(its own and its two neighbours' `NavTransMsg`, no radio latency, the thrust limit) or from a fixed "
        f"stand-alone message per craft. Load average {load_before} before, {load_after} after, on "
        f"{os.cpu_count()} CPUs."
    )


if __name__ == "__main__":
    main()
