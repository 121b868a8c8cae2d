"""Dynamics benchmark: hopsim against peers measured in the same run; prints markdown.

    .venv/bin/python bench/bench_dynamics.py [--quick]

1. Forward dynamics of free-floating trees (a free hub with pin, ball and slider appendages,
   nv from 6 to 66) per call through each library's Python entry point: ``hopsim.dynamics.aba``
   against ``pinocchio.aba``; plus hopsim's batched call over many states of one tree.
2. One RK4 step of N rigid vehicles (N = 1, 100, 10000) in hopsim's batched call, against the
   same RK4 written with vectorized NumPy, and against Basilisk's ``Spacecraft`` module (RK4)
   when an interpreter with the ``bsk`` wheel is given by ``HOPSIM_BSK_PYTHON`` (the wheel
   cannot share hopsim's environment: it pins an older protobuf).

Ratios are what we report; absolute times depend on the machine.
"""

from __future__ import annotations

import os
import subprocess
import sys
from functools import partial
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

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
    bench_forward_dynamics()
    bench_rigid_vehicles()


if __name__ == "__main__":
    main()
