"""Dynamics benchmark: hopsim against peers measured in the same run; prints markdown.

    .venv/bin/python bench/bench_dynamics.py [--quick]

1. Forward dynamics of free-floating trees (a free hub with pin, ball and slider appendages,
   nv from 6 to 66) per call through each library's Python entry point: ``hopsim.dynamics.aba``
   against ``pinocchio.aba``; plus hopsim's batched call over many states of one tree.
2. One RK4 step of N rigid vehicles (N = 1, 100, 10000) in hopsim's batched call, against the
   same RK4 written with vectorized NumPy, and against Basilisk's ``Spacecraft`` module (RK4)
   when an interpreter with the ``bsk`` wheel is given by ``HOPSIM_BSK_PYTHON`` (the wheel
   cannot share hopsim's environment: it pins an older protobuf).
3. Constrained forward dynamics of closed loops (the four-bar linkage and the free-floating
   dual-arm closed chain that ``tests/dynamics/test_dyn_closed_loops.py`` builds) per call:
   ``hopsim.dynamics.constraint_dynamics`` against ``pinocchio.constraintDynamics`` with
   ``RigidConstraintModel`` closures, on the same projected states; plus hopsim's compiled
   kernel called in one compiled loop.
4. The convex narrow phase per pair (box-box, box-plane, capsule-box, hull-hull) on the same
   penetrating poses: ``hopsim.dynamics.convex.collide`` against ``mujoco.mj_collision`` on a
   model of the two geoms and against ``coal.collide``.

Sections 3 and 4 are medians of interleaved repeats (every implementation timed in turn in each
repeat), so that a change in the machine's speed during the run moves all of them alike.
Ratios are what we report; absolute times depend on the machine.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import time
from functools import partial
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))
# the closed-loop models are the tests' own builders
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "dynamics"))

from timing import best_time

from hopsim.dynamics import algorithms as alg
from hopsim.dynamics.rigid_body import STATE_SIZE, pack_state, rigid_body_rk4_step_batch
from hopsim.dynamics.tree import MultibodyTree, pose

QUICK = "--quick" in sys.argv


def fmt_us(seconds):
    return f"{seconds * 1e6:.2f}"


# --------------------------------------------------------------------------- trees


def spacecraft_tree(n_appendages, rng):
    """Free hub plus appendages; the joint mix cycles pin, pin, ball, slider."""
    tree = MultibodyTree()
    tree.add_body("hub", joint="free", mass=50.0, inertia_C_B=np.diag([5.0, 6.0, 7.0]))
    kinds = ["pin", "pin", "ball", "slider"]
    nv = 6
    k = 0
    while nv < 6 + n_appendages:
        kind = kinds[k % 4]
        dof = {"pin": 1, "slider": 1, "ball": 3}[kind]
        if nv + dof > 6 + n_appendages:
            kind, dof = "pin", 1
        parent = 0 if k < 4 else int(rng.integers(0, k + 1))
        tree.add_body(
            f"a{k}",
            parent=parent,
            joint=kind,
            axis=rng.normal(size=3),
            mass=rng.uniform(0.5, 3.0),
            r_CB_B=rng.normal(scale=0.1, size=3),
            inertia_C_B=np.diag(rng.uniform(0.05, 0.2, 3)),
            inb_to_joint=pose(translation=rng.normal(scale=0.5, size=3)),
            body_to_joint=pose(translation=rng.normal(scale=0.2, size=3)),
        )
        nv += dof
        k += 1
    return tree


def depth_first(tree):
    """Same tree renumbered depth first (Pinocchio's mass-matrix code assumes that order)."""
    children = {i: [j for j, b in enumerate(tree.bodies) if b.parent == i] for i in range(-1, tree.n_bodies)}
    order, stack = [], list(reversed(children[-1]))
    while stack:
        node = stack.pop()
        order.append(node)
        stack.extend(reversed(children[node]))
    new_index = {old: k for k, old in enumerate(order)}
    out = MultibodyTree(tree.gravity_N)
    for old in order:
        b = tree.bodies[old]
        out.add_body(
            b.name,
            parent=None if b.parent < 0 else new_index[b.parent],
            joint=b.joint_type,
            mass=b.mass,
            r_CB_B=b.r_CB_B,
            inertia_C_B=b.inertia_C_B,
            axis=b.axis,
            inb_to_joint=b.inb_to_joint,
            body_to_joint=b.body_to_joint,
        )
    return out


def pinocchio_model(tree):
    import pinocchio as pin

    model = pin.Model()
    model.gravity = pin.Motion.Zero()
    joint_ids, body_in_joint = [], []
    for b in tree.bodies:
        if b.parent >= 0:
            parent_joint, T_parent = joint_ids[b.parent], body_in_joint[b.parent]
        else:
            parent_joint, T_parent = 0, pin.SE3.Identity()
        T_O = T_parent * pin.SE3(b.inb_to_joint.rotation, b.inb_to_joint.translation)
        T_JB = pin.SE3(b.body_to_joint.rotation, b.body_to_joint.translation).inverse()
        jm = {
            0: None,
            1: lambda b=b: pin.JointModelRevoluteUnaligned(*b.axis),
            2: lambda b=b: pin.JointModelPrismaticUnaligned(*b.axis),
            5: pin.JointModelSpherical,
            6: pin.JointModelFreeFlyer,
        }[b.joint_type]()
        jid = model.addJoint(int(parent_joint), jm, T_O, b.name)
        model.appendBodyToJoint(jid, pin.Inertia(b.mass, b.r_CB_B, b.inertia_C_B), T_JB)
        joint_ids.append(jid)
        body_in_joint.append(T_JB)
    return model


def bench_forward_dynamics():
    try:
        import pinocchio as pin
    except ImportError:
        pin = None
    rng = np.random.default_rng(0)
    sizes = [0, 6, 18, 30, 42, 60] if not QUICK else [0, 30, 60]
    batch = 1000
    rows = []
    for n_app in sizes:
        tree = depth_first(spacecraft_tree(n_app, rng))
        nv = tree.nv
        Q = tree.zero_configuration()
        Q[3] = 0.0
        Q[0:4] = np.array([0.1, 0.2, 0.3, 0.9]) / np.linalg.norm([0.1, 0.2, 0.3, 0.9])
        U = rng.normal(scale=0.1, size=nv)
        tau = rng.normal(size=nv)
        t_hop = best_time(partial(alg.aba, tree, Q, U, tau))
        arrays = tree.arrays
        no_udot, no_fext = np.zeros(0), np.zeros((0, 6))
        t_kernel = best_time(partial(alg._aba, arrays.ints, arrays.reals, Q, U, tau, no_udot, no_fext))
        Qs = np.tile(Q, (batch, 1))
        Us = rng.normal(scale=0.1, size=(batch, nv))
        taus = rng.normal(size=(batch, nv))
        t_batch = best_time(partial(alg.aba_batch, tree, Qs, Us, taus), repeat=3) / batch
        if pin is not None:
            model = pinocchio_model(tree)
            data = model.createData()
            q = np.concatenate([Q[4:7], Q[0:4], Q[7:]])
            v = np.concatenate([U[3:6], U[0:3], U[6:]])
            tau_pin = np.concatenate([tau[3:6], tau[0:3], tau[6:]])
            t_pin = best_time(partial(pin.aba, model, data, q, v, tau_pin))
            check = pin.aba(model, data, q, v, tau_pin)
            ours = alg.aba(tree, Q, U, tau)
            err = np.abs(np.concatenate([ours[3:6], ours[0:3], ours[6:]]) - check).max()
            assert err < 1e-8 * max(1.0, np.abs(check).max()), err
        else:
            t_pin = float("nan")
        rows.append((nv, tree.n_bodies, t_hop, t_kernel, t_batch, t_pin))
    print("## Forward dynamics (ABA), one tree state per call\n")
    print(
        "| nv | bodies | hopsim aba [us] | hopsim kernel [us] | hopsim batched, per tree "
        f"(x{batch}) [us] | pinocchio aba [us] | hopsim / pin | kernel / pin "
        "| batched / pin |"
    )
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for nv, nb, th, tk, tb, tp in rows:
        print(
            f"| {nv} | {nb} | {fmt_us(th)} | {fmt_us(tk)} | {fmt_us(tb)} | {fmt_us(tp)} | "
            f"{th / tp:.2f} | {tk / tp:.2f} | {tb / tp:.2f} |"
        )
    print()


# --------------------------------------------------------------------------- rigid vehicles


def numpy_rk4_step(X, h, mass, inertia, inertia_inv, force_N):
    """Reference: the same vehicle model (CM at the body origin) in vectorized NumPy."""

    def deriv(Y):
        q = Y[:, 6:10]
        w = Y[:, 10:13]
        x, y, z, s = q.T
        qdot = 0.5 * np.stack(
            [
                s * w[:, 0] + y * w[:, 2] - z * w[:, 1],
                s * w[:, 1] + z * w[:, 0] - x * w[:, 2],
                s * w[:, 2] + x * w[:, 1] - y * w[:, 0],
                -(x * w[:, 0] + y * w[:, 1] + z * w[:, 2]),
            ],
            axis=1,
        )
        Iw = np.einsum("nij,nj->ni", inertia, w)
        wdot = np.einsum("nij,nj->ni", inertia_inv, -np.cross(w, Iw))
        return np.concatenate([Y[:, 3:6], force_N / mass[:, None], qdot, wdot], axis=1)

    k1 = deriv(X)
    k2 = deriv(X + 0.5 * h * k1)
    k3 = deriv(X + 0.5 * h * k2)
    k4 = deriv(X + h * k3)
    out = X + h / 6.0 * (k1 + 2 * k2 + 2 * k3 + k4)
    norm = np.linalg.norm(out[:, 6:10], axis=1) * np.where(out[:, 9] < 0.0, -1.0, 1.0)
    out[:, 6:10] /= norm[:, None]
    return out


BSK_SCRIPT = r"""
import sys, time
import numpy as np
from Basilisk.simulation import spacecraft
from Basilisk.utilities import SimulationBaseClass, macros
n, steps = int(sys.argv[1]), int(sys.argv[2])
sim = SimulationBaseClass.SimBaseClass()
proc = sim.CreateNewProcess("p")
dt = macros.sec2nano(0.1)
proc.addTask(sim.CreateNewTask("t", dt))
craft = []
for i in range(n):
    sc = spacecraft.Spacecraft()
    sc.ModelTag = f"sc{i}"
    sc.hub.mHub = 10.0
    sc.hub.IHubPntBc_B = [[1.0, 0.0, 0.0], [0.0, 2.0, 0.0], [0.0, 0.0, 3.0]]
    sc.hub.r_CN_NInit = [[float(i)], [0.0], [0.0]]
    sc.hub.v_CN_NInit = [[0.0], [0.1], [0.0]]
    sc.hub.omega_BN_BInit = [[0.1], [0.2], [0.3]]
    sim.AddModelToTask("t", sc)
    craft.append(sc)
sim.InitializeSimulation()
sim.ConfigureStopTime(dt)
sim.ExecuteSimulation()
t0 = time.perf_counter()
sim.ConfigureStopTime(dt * (steps + 1))
sim.ExecuteSimulation()
print((time.perf_counter() - t0) / steps)
"""


def basilisk_step_time(n):
    python = os.environ.get("HOPSIM_BSK_PYTHON")
    if not python:
        try:
            import Basilisk  # noqa: F401

            python = sys.executable
        except ImportError:
            return None
    steps = max(20, min(2000, 20000 // n))
    try:
        out = subprocess.run(
            [python, "-c", BSK_SCRIPT, str(n), str(steps)], check=True, capture_output=True, text=True, timeout=900
        )
        return float(out.stdout.strip().splitlines()[-1])
    except (subprocess.SubprocessError, ValueError, OSError) as err:
        print(f"<!-- basilisk run failed: {err} -->")
        return None


def bench_rigid_vehicles():
    rng = np.random.default_rng(1)
    rows = []
    for n in [1, 100, 10000] if not QUICK else [1, 100]:
        X = np.array(
            [
                pack_state(rng.normal(size=3), rng.normal(size=3), rng.normal(size=4), rng.normal(size=3))
                for _ in range(n)
            ]
        )
        assert X.shape == (n, STATE_SIZE)
        mass = rng.uniform(1.0, 10.0, n)
        inertia = np.array([np.diag(rng.uniform(1.0, 3.0, 3)) for _ in range(n)])
        inertia_inv = np.linalg.inv(inertia)
        force = rng.normal(size=(n, 3))
        zeros = np.zeros((n, 3))
        t_hop = best_time(partial(rigid_body_rk4_step_batch, X, 0.1, mass, inertia, zeros, force, zeros, zeros, zeros))
        t_np = best_time(partial(numpy_rk4_step, X, 0.1, mass, inertia, inertia_inv, force))
        ours = rigid_body_rk4_step_batch(X, 0.1, mass, inertia, zeros, force, zeros, zeros, zeros)
        assert np.allclose(ours, numpy_rk4_step(X, 0.1, mass, inertia, inertia_inv, force), atol=1e-12)
        t_bsk = basilisk_step_time(n)
        rows.append((n, t_hop, t_np, t_bsk))
    print("## One RK4 step of N rigid vehicles (13 states each)\n")
    print(
        "| N | hopsim batched [us/call] | per vehicle [us] | NumPy vectorized [us/call] "
        "| hopsim / NumPy | bsk Spacecraft RK4 [us/step] | hopsim / bsk |"
    )
    print("|---:|---:|---:|---:|---:|---:|---:|")
    for n, th, tn, tb in rows:
        bsk = "not measured" if tb is None else fmt_us(tb)
        ratio = "not measured" if tb is None else f"{th / tb:.4f}"
        print(f"| {n} | {fmt_us(th)} | {th / n * 1e6:.3f} | {fmt_us(tn)} | {th / tn:.3f} | {bsk} | {ratio} |")
    if all(r[3] is None for r in rows):
        print(
            "\nbsk: not measured. The `bsk` wheel pins protobuf<=7.35.0, which conflicts with "
            "hopsim's protobuf pin; install it in a separate environment and point "
            "`HOPSIM_BSK_PYTHON` at that interpreter to fill the column."
        )
    print()


# --------------------------------------------------------------------------- interleaved timing


def interleaved_medians(fns, repeat=9, min_time=0.02):
    """Median per-call time [s] of each callable in ``fns`` (name -> fn): each is calibrated to a
    batch of calls lasting ``min_time``, then every repeat times one batch of each in turn."""
    counts = {}
    for name, fn in fns.items():
        fn()
        n = 1
        while True:
            t0 = time.perf_counter()
            for _ in range(n):
                fn()
            if time.perf_counter() - t0 >= min_time or n >= 1 << 20:
                break
            n *= 2
        counts[name] = n
    samples = {name: [] for name in fns}
    for _ in range(repeat):
        for name, fn in fns.items():
            n = counts[name]
            t0 = time.perf_counter()
            for _ in range(n):
                fn()
            samples[name].append((time.perf_counter() - t0) / n)
    return {name: statistics.median(v) for name, v in samples.items()}


def load_line():
    """The machine's load averages (1, 5, 15 min), as a sentence fragment."""
    try:
        return "Load average " + ", ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:
        return "Load average unknown"


# --------------------------------------------------------------------------- closed loops

N_STATES = 8


def closed_loop_models():
    import pinocchio as pin
    from test_dyn_closed_loops import four_bar, four_bar_assembled, hub_zero_state, two_arms

    return [
        ("four-bar (pin closure)", four_bar, lambda rng, tree: four_bar_assembled(rng.uniform(-np.pi, np.pi)),
         pin.ContactType.CONTACT_3D),
        ("dual arm, ball closure", partial(two_arms, "ball", "pin"), hub_zero_state, pin.ContactType.CONTACT_3D),
        ("dual arm, weld closure", partial(two_arms, "locked", "ball"), hub_zero_state, pin.ContactType.CONTACT_6D),
    ]  # fmt: skip


def _constraint_batch_kernel():
    import numba

    from hopsim.dynamics.constraints import _constraint_dynamics

    @numba.njit(cache=False)
    def batch(ints, reals, Qs, Us, taus, f_ext, kind, bodies, frames, axes, rtol, out):
        for i in range(Qs.shape[0]):
            udot, _ = _constraint_dynamics(
                ints, reals, Qs[i], Us[i], taus[i], f_ext, kind, bodies, frames, axes, 0.0, 0.0, rtol
            )
            out[i] = udot

    return batch


def _time_closed_loop(batch_kernel, build, start, contact_type):
    """Timings (per call) of one closed-loop model at ``N_STATES`` states, and the largest
    relative difference of the accelerations from Pinocchio's."""
    import pinocchio as pin
    from dyn_helpers import PinocchioTwin
    from test_dyn_closed_loops import closed_state, pinocchio_closures

    from hopsim.dynamics import constraints as cs

    tree, loops = build()
    rng = np.random.default_rng(5)
    states = [closed_state(rng, tree, loops, start(rng, tree)) for _ in range(N_STATES)]
    taus = [rng.normal(size=tree.nv) for _ in range(N_STATES)]
    twin = PinocchioTwin(tree)
    models, datas, prox = pinocchio_closures(twin, loops, contact_type)
    pin_args = [(twin.q(Q), twin.v(U), twin.v(tau)) for (Q, U), tau in zip(states, taus, strict=True)]
    a, c = tree.arrays, loops.arrays
    fx = np.zeros((0, 6))
    Qs = np.array([s[0] for s in states])
    Us = np.array([s[1] for s in states])
    Ts = np.array(taus)
    out = np.empty((N_STATES, tree.nv))
    worst = 0.0
    for k in range(N_STATES):
        udot, _ = cs.constraint_dynamics(tree, loops, Qs[k], Us[k], Ts[k])
        ref = twin.v_back(pin.constraintDynamics(twin.model, twin.data, *pin_args[k], models, datas, prox))
        worst = max(worst, float(np.abs(udot - ref).max() / np.abs(ref).max()))
    assert worst <= 1e-8, worst
    batch_kernel(a.ints, a.reals, Qs, Us, Ts, fx, c.kind, c.bodies, c.frames, c.axes, cs.RANK_RTOL, out)
    assert np.array_equal(out[0], cs.constraint_dynamics(tree, loops, Qs[0], Us[0], Ts[0])[0])

    def hop():
        for k in range(N_STATES):
            cs.constraint_dynamics(tree, loops, Qs[k], Us[k], Ts[k])

    def kernel():
        for k in range(N_STATES):
            cs._constraint_dynamics(
                a.ints, a.reals, Qs[k], Us[k], Ts[k], fx, c.kind, c.bodies, c.frames, c.axes, 0.0, 0.0,
                cs.RANK_RTOL,
            )  # fmt: skip

    def batched():
        batch_kernel(a.ints, a.reals, Qs, Us, Ts, fx, c.kind, c.bodies, c.frames, c.axes, cs.RANK_RTOL, out)

    def pinocchio():
        for q, v, tau in pin_args:
            pin.constraintDynamics(twin.model, twin.data, q, v, tau, models, datas, prox)

    t = interleaved_medians({"hop": hop, "kernel": kernel, "batched": batched, "pin": pinocchio})
    return tree.nv, loops.n_rows, {k: v / N_STATES for k, v in t.items()}, worst


def _closed_loop_parts(build, start, contact_type):
    """Per-call times [s] of the parts of the constrained kernel at one state, each called alone
    from Python (so each includes one dispatch), and of Pinocchio's ``aba`` and
    ``constraintDynamics`` at that state."""
    import pinocchio as pin
    from dyn_helpers import PinocchioTwin
    from test_dyn_closed_loops import closed_state, pinocchio_closures

    from hopsim.dynamics import algorithms as alg
    from hopsim.dynamics import constraints as cs

    tree, loops = build()
    rng = np.random.default_rng(5)
    Q, U = closed_state(rng, tree, loops, start(rng, tree))
    tau = rng.normal(size=tree.nv)
    twin = PinocchioTwin(tree)
    models, datas, prox = pinocchio_closures(twin, loops, contact_type)
    q, v, tp = twin.q(Q), twin.v(U), twin.v(tau)
    a, c = tree.arrays, loops.arrays
    G, _phi, _gdu = cs._closure_terms(a.ints, a.reals, Q, U, c.kind, c.bodies, c.frames, c.axes)
    _Kt, A = cs._minv_rows(a.ints, a.reals, Q, G)
    return interleaved_medians(
        {
            "terms": partial(cs._closure_terms, a.ints, a.reals, Q, U, c.kind, c.bodies, c.frames, c.axes),
            "kinematics": partial(alg._forward_kinematics, a.ints, a.reals, Q, U),
            "aba": partial(alg._aba, a.ints, a.reals, Q, U, tau, np.zeros(0), np.zeros((0, 6))),
            "minv_rows": partial(cs._minv_rows, a.ints, a.reals, Q, G),
            "solve": partial(cs._symmetric_pseudo_solve, A, np.ones(A.shape[0]), cs.RANK_RTOL),
            "pin_aba": partial(pin.aba, twin.model, twin.data, q, v, tp),
            "pin_cd": partial(pin.constraintDynamics, twin.model, twin.data, q, v, tp, models, datas, prox),
        }
    )


def bench_constrained_dynamics():
    try:
        import pinocchio  # noqa: F401
        import pytest  # noqa: F401  (the tests' builders import it)
    except ImportError as err:
        print(f"## Constrained forward dynamics: not measured ({err})\n")
        return
    batch_kernel = _constraint_batch_kernel()
    rows = [
        (label, *_time_closed_loop(batch_kernel, build, start, contact_type))
        for label, build, start, contact_type in closed_loop_models()
    ]
    print("## Constrained forward dynamics of closed loops, one state per call\n")
    print(
        f"Per call, mean over {N_STATES} projected states (random joint forces, gravity on), median of "
        "9 interleaved repeats. hopsim: `constraint_dynamics` (argument checks included); kernel: the "
        "compiled `_constraint_dynamics` called from Python; batched: the same kernel called "
        f"{N_STATES} times in one compiled loop. Pinocchio: `constraintDynamics` on the same states "
        "(proximal settings 1e-14, mu 1e-10, at most 200 iterations, as the tests; coordinates "
        f"reordered before timing). Accelerations agree to the relative difference shown. {load_line()} "
        "at the end of the run.\n"
    )
    print(
        "| model | nv | rows | hopsim [us] | kernel [us] | batched [us] | pinocchio [us] | hopsim / pin "
        "| kernel / pin | batched / pin | rel. diff |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for label, nv, m, t, worst in rows:
        p = t["pin"]
        print(
            f"| {label} | {nv} | {m} | {fmt_us(t['hop'])} | {fmt_us(t['kernel'])} | {fmt_us(t['batched'])} | "
            f"{fmt_us(p)} | {t['hop'] / p:.2f} | {t['kernel'] / p:.2f} | {t['batched'] / p:.2f} | {worst:.0e} |"
        )
    label, build, start, contact_type = closed_loop_models()[-1]
    parts = _closed_loop_parts(build, start, contact_type)
    pc = parts["pin_cd"]
    print(
        f"\nWhere the kernel's time goes ({label}, one state; each part called alone from Python, so "
        f"each includes one dispatch; in units of Pinocchio's `constraintDynamics`, {fmt_us(pc)} us): "
        f"the closure Jacobian and its terms {parts['terms'] / pc:.2f} (of which the tree's kinematics "
        f"{parts['kinematics'] / pc:.2f}), the unconstrained ABA {parts['aba'] / pc:.2f}, the rows of "
        f"M^-1 G^T and the Delassus matrix {parts['minv_rows'] / pc:.2f}, the eigen-decomposition solve "
        f"{parts['solve'] / pc:.2f}. Pinocchio's `aba` alone on the same state: {parts['pin_aba'] / pc:.2f}.\n"
    )


# --------------------------------------------------------------------------- convex narrow phase

N_POSES = 16


def _quat_wxyz(R):
    from scipy.spatial.transform import Rotation

    x, y, z, w = Rotation.from_matrix(R).as_quat()
    return [w, x, y, z]


def _xml_numbers(a):
    return " ".join(repr(float(t)) for t in np.ravel(a))


def _mujoco_geom(shape, name):
    from hopsim.dynamics import convex as cv

    if shape.kind == cv.BOX:
        return f'<geom name="{name}" type="box" size="{_xml_numbers(shape.half_extents)}"/>', ""
    if shape.kind == cv.CAPSULE:
        return (
            f'<geom name="{name}" type="capsule" size="{float(shape.margin)!r} {float(shape.vertices_B[1, 2])!r}"/>',
            "",
        )
    if shape.kind == cv.SPHERE:
        return f'<geom name="{name}" type="sphere" size="{float(shape.margin)!r}"/>', ""
    if shape.kind == cv.HULL:
        return (
            f'<geom name="{name}" type="mesh" mesh="{name}"/>',
            f'<mesh name="{name}" vertex="{_xml_numbers(shape.vertices_B)}"/>',
        )
    raise ValueError(shape.kind)


def mujoco_pair(shape_A, shape_B, poses, copies=1):
    """A MuJoCo model of ``copies`` pairs (shape A, shape B), each on a free body, each pair
    10 m from the next and declared as an explicit contact pair (no other geom pair is
    tested); and one data per pose (``copies`` 1) or one data with pair k at pose k, the
    kinematics done. A plane, which must sit on the world body, is placed at identity and the
    other shape at its pose relative to the plane."""
    import mujoco

    from hopsim.dynamics import convex as cv

    plane = shape_A.kind == cv.PLANE
    assets, bodies, pairs = [], [], []
    for k in range(copies):
        names = []
        for s, shape in (("a", shape_A), ("b", shape_B)):
            name = f"{s}{k}"
            names.append(name)
            if shape.kind == cv.PLANE:
                bodies.append(f'<geom name="{name}" type="plane" size="0 0 1" pos="{10.0 * k!r} 0 0"/>')
                continue
            geom, asset = _mujoco_geom(shape, name)
            assets.append(asset)
            bodies.append(f"<body><freejoint/>{geom}</body>")
        pairs.append(f'<pair geom1="{names[0]}" geom2="{names[1]}"/>')
    xml = (
        '<mujoco><default><geom contype="0" conaffinity="0"/></default>'
        f"<asset>{''.join(assets)}</asset><worldbody>{''.join(bodies)}</worldbody>"
        f"<contact>{''.join(pairs)}</contact></mujoco>"
    )
    model = mujoco.MjModel.from_xml_string(xml)

    def place(data, ks):
        qpos = []
        for j, k in enumerate(ks):
            RA, pA, RB, pB = poses[k]
            off = np.array([10.0 * j, 0.0, 0.0])
            if plane:
                qpos += [*(RA.T @ (pB - pA) + off), *_quat_wxyz(RA.T @ RB)]
            else:
                qpos += [*(pA + off), *_quat_wxyz(RA), *(pB + off), *_quat_wxyz(RB)]
        data.qpos[:] = qpos
        mujoco.mj_kinematics(model, data)

    if copies == 1:
        datas = []
        for k in range(len(poses)):
            datas.append(mujoco.MjData(model))
            place(datas[-1], [k])
        return model, datas
    data = mujoco.MjData(model)
    place(data, list(range(copies)))
    return model, [data]


def coal_geometry(shape):
    import coal
    from scipy.spatial import ConvexHull

    from hopsim.dynamics import convex as cv

    if shape.kind == cv.BOX:
        return coal.Box(*(2.0 * shape.half_extents))
    if shape.kind == cv.CAPSULE:
        return coal.Capsule(shape.margin, 2.0 * shape.vertices_B[1, 2])
    if shape.kind == cv.SPHERE:
        return coal.Sphere(shape.margin)
    if shape.kind == cv.PLANE:
        return coal.Halfspace(np.array([0.0, 0.0, 1.0]), 0.0)
    V = shape.vertices_B
    hull = ConvexHull(V)
    pts = coal.StdVec_Vec3s()
    for v in V:
        pts.append(np.asarray(v, float))
    tris = coal.StdVec_Triangle()
    for simplex in hull.simplices:
        i, j, k = (int(x) for x in simplex)
        if np.cross(V[j] - V[i], V[k] - V[i]) @ (V[i] - V.mean(axis=0)) < 0:
            j, k = k, j
        tris.append(coal.Triangle(i, j, k))
    return coal.Convex(pts, tris)


def convex_pairs():
    from scipy.spatial import ConvexHull

    from hopsim.dynamics import convex as cv

    rng = np.random.default_rng(4)
    VA = rng.normal(size=(12, 3)) * [0.3, 0.2, 0.15]
    VB = rng.normal(size=(10, 3)) * [0.2, 0.25, 0.1]
    VA, VB = VA[ConvexHull(VA).vertices], VB[ConvexHull(VB).vertices]
    return [
        ("box-box", cv.box([0.3, 0.2, 0.1]), cv.box([0.25, 0.15, 0.2]), 0.4),
        ("box-plane", cv.plane(), cv.box([0.3, 0.2, 0.1]), 0.25),
        ("capsule-box", cv.capsule(0.1, 0.25), cv.box([0.3, 0.2, 0.1]), 0.4),
        ("hull-hull", cv.convex_hull(VA), cv.convex_hull(VB), 0.4),
    ]


def penetrating_poses(shape_A, shape_B, spread, rng, n):
    from scipy.spatial.transform import Rotation

    from hopsim.dynamics import convex as cv

    poses = []
    while len(poses) < n:
        RA = Rotation.random(random_state=rng).as_matrix()
        pA = rng.uniform(-0.1, 0.1, 3)
        RB = Rotation.random(random_state=rng).as_matrix()
        pB = pA + rng.uniform(-spread, spread, 3)
        if cv.collide(shape_A, RA, pA, shape_B, RB, pB).distance < 0.0:
            poses.append((RA, pA, RB, pB))
    return poses


def _collide_batch_kernel():
    import numba

    from hopsim.dynamics.convex import collide_arrays

    @numba.njit(cache=False)
    def batch(kindA, VA, rA, hA, RAs, pAs, kindB, VB, rB, hB, RBs, pBs, out):
        for i in range(RAs.shape[0]):
            dist, _n, _pts, _gaps = collide_arrays(kindA, VA, rA, hA, RAs[i], pAs[i], kindB, VB, rB, hB, RBs[i], pBs[i])
            out[i] = dist

    return batch


def _time_pair(batch_kernel, A, B, poses):
    """Timings (per pair) of one pair of shapes at ``poses``, and the largest difference of the
    depths [m] between the libraries."""
    import coal
    import mujoco

    from hopsim.dynamics import convex as cv

    model, datas = mujoco_pair(A, B, poses)
    model_k, (data_k,) = mujoco_pair(A, B, poses, copies=N_POSES)
    gA, gB = coal_geometry(A), coal_geometry(B)
    transforms = [(coal.Transform3s(RA, pA), coal.Transform3s(RB, pB)) for RA, pA, RB, pB in poses]
    request = coal.CollisionRequest(coal.CollisionRequestFlag.CONTACT, 4)
    result = coal.CollisionResult()
    f = np.ascontiguousarray
    args = [
        (A.kind, f(A.vertices_B), A.margin, f(A.half_extents), f(RA), f(pA),
         B.kind, f(B.vertices_B), B.margin, f(B.half_extents), f(RB), f(pB))
        for RA, pA, RB, pB in poses
    ]  # fmt: skip
    stacked = [np.array([p[i] for p in poses]) for i in range(4)]
    out = np.empty(N_POSES)
    batch_args = (A.kind, f(A.vertices_B), A.margin, f(A.half_extents), stacked[0], stacked[1],
                  B.kind, f(B.vertices_B), B.margin, f(B.half_extents), stacked[2], stacked[3], out)  # fmt: skip
    # the same penetration as coal's; MuJoCo finds contacts at every pose (the same depth
    # against a plane; its box-box collider's is not always the least one off a face contact)
    plane = A.kind == cv.PLANE
    worst = 0.0
    for k, (RA, pA, RB, pB) in enumerate(poses):
        ours = cv.collide(A, RA, pA, B, RB, pB).distance
        mujoco.mj_collision(model, datas[k])
        assert datas[k].ncon >= 1
        worst = max(worst, abs(ours - min(datas[k].contact.dist[: datas[k].ncon])) if plane else 0.0)
        result.clear()
        assert coal.collide(gA, transforms[k][0], gB, transforms[k][1], request, result)
        worst = max(worst, abs(ours - result.getContact(0).penetration_depth))
    assert worst < 1e-5, worst
    batch_kernel(*batch_args)
    mujoco.mj_collision(model_k, data_k)
    assert data_k.ncon >= N_POSES

    def hop():
        for RA, pA, RB, pB in poses:
            cv.collide(A, RA, pA, B, RB, pB)

    def kernel():
        for a in args:
            cv.collide_arrays(*a)

    def batched():
        batch_kernel(*batch_args)

    def mj():
        for d in datas:
            mujoco.mj_collision(model, d)

    def mj_batched():
        mujoco.mj_collision(model_k, data_k)

    def coal_collide():
        for TA, TB in transforms:
            result.clear()
            coal.collide(gA, TA, gB, TB, request, result)

    t = interleaved_medians(
        {"hop": hop, "kernel": kernel, "batched": batched, "mj": mj, "mj_batched": mj_batched, "coal": coal_collide}
    )
    return {k: v / N_POSES for k, v in t.items()}, worst


def _call_floor():
    """Per-call time [s] of a compiled function that takes ``collide_arrays``'s twelve arguments
    and returns at once a tuple of the types it returns (a float, a 3-vector, 1 x 3 points, one
    gap): numba's dispatch and boxing alone."""
    import numba

    from hopsim.dynamics import convex as cv

    @numba.njit(cache=False)
    def floor(kindA, VA, rA, hA, RA, pA, kindB, VB, rB, hB, RB, pB):
        return rA, pA.copy(), VB[:1].copy(), hB[:1].copy()

    A, B = cv.box([0.3, 0.2, 0.1]), cv.box([0.25, 0.15, 0.2])
    args = (A.kind, A.vertices_B, 0.0, A.half_extents, np.eye(3), np.zeros(3),
            B.kind, B.vertices_B, 0.0, B.half_extents, np.eye(3), np.ones(3))  # fmt: skip
    return interleaved_medians({"floor": partial(floor, *args)})["floor"]


def bench_convex_narrow_phase():
    try:
        import coal  # noqa: F401
        import mujoco  # noqa: F401
    except ImportError as err:
        print(f"## Convex narrow phase: not measured ({err})\n")
        return
    batch_kernel = _collide_batch_kernel()
    rng = np.random.default_rng(11)
    rows = [
        (label, *_time_pair(batch_kernel, A, B, penetrating_poses(A, B, spread, rng, N_POSES)))
        for label, A, B, spread in convex_pairs()
    ]
    print("## Convex narrow phase, one pair per call\n")
    print(
        f"Per pair, mean over {N_POSES} random penetrating poses (the same for every library), median of 9 "
        "interleaved repeats. hopsim: `convex.collide` (up to 4 points; argument conversion "
        "included); kernel: the compiled `collide_arrays` called from Python; batched: that kernel "
        f"over the {N_POSES} poses in one compiled loop. MuJoCo: `mj_collision` on a model of the "
        "two geoms (free bodies, the pair declared explicitly; a plane on the world body), "
        "kinematics done before timing; MuJoCo batched: one `mj_collision` on a model of the "
        f"{N_POSES} pairs 10 m apart, per pair. coal: `collide` with a contact request (default "
        f"tolerances). Depths agree with coal's to the difference shown. {load_line()} at the end of "
        "the run.\n"
    )
    print(
        "| pair | hopsim [us] | kernel [us] | batched [us] | MuJoCo [us] | MuJoCo batched [us] | coal [us] "
        "| hopsim / MuJoCo | kernel / MuJoCo | batched / MuJoCo batched | hopsim / coal | kernel / coal "
        "| depth diff [m] |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for label, t, worst in rows:
        print(
            f"| {label} | {fmt_us(t['hop'])} | {fmt_us(t['kernel'])} | {fmt_us(t['batched'])} | {fmt_us(t['mj'])} | "
            f"{fmt_us(t['mj_batched'])} | {fmt_us(t['coal'])} | {t['hop'] / t['mj']:.2f} | "
            f"{t['kernel'] / t['mj']:.2f} | {t['batched'] / t['mj_batched']:.2f} | {t['hop'] / t['coal']:.2f} | "
            f"{t['kernel'] / t['coal']:.2f} | {worst:.0e} |"
        )
    print(
        f"\nA compiled function taking the kernel's twelve arguments and returning at once a tuple of "
        f"its result types costs {fmt_us(_call_floor())} us per call from Python (numba's dispatch and "
        "boxing); MuJoCo's and coal's calls cross into C through their bindings.\n"
    )


def main():
    import numba

    try:
        import pinocchio

        pin_version = pinocchio.__version__
    except ImportError:
        pin_version = "not installed"
    print("# hopsim dynamics benchmark\n")
    print(
        f"numpy {np.__version__}, numba {numba.__version__}, pinocchio {pin_version}, "
        f"{os.cpu_count()} CPUs; best of repeated runs, compile time excluded.\n"
    )
    only = [a for a in sys.argv[1:] if not a.startswith("--")]
    for name, fn in (
        ("aba", bench_forward_dynamics),
        ("rk4", bench_rigid_vehicles),
        ("constrained", bench_constrained_dynamics),
        ("convex", bench_convex_narrow_phase),
    ):
        if not only or name in only:
            fn()


if __name__ == "__main__":
    main()
