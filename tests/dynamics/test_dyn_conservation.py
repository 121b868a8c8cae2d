"""Conservation laws of free-flying trees over 1000 s, with and without prescribed joints."""

import numpy as np
import pytest
from dyn_helpers import random_inertia

from hopsim.dynamics.algorithms import (
    configuration_rate,
    hybrid_dynamics,
    kinetic_energy,
    normalize_configuration,
    spatial_momentum,
)
from hopsim.dynamics.integrators import DOP853
from hopsim.dynamics.profiles import MoveProfile
from hopsim.dynamics.tree import MultibodyTree, pose


def spacecraft(rng):
    """A hub with a two-link arm (pin, universal), a ball-mounted antenna, a slider boom."""
    tree = MultibodyTree()
    tree.add_body("hub", joint="free", mass=40.0, r_CB_B=[0.02, -0.03, 0.05], inertia_C_B=random_inertia(rng, 6.0))
    tree.add_body(
        "arm1",
        parent="hub",
        joint="pin",
        axis=(0, 0, 1),
        mass=3.0,
        r_CB_B=[0.3, 0.0, 0.0],
        inertia_C_B=random_inertia(rng, 0.2),
        inb_to_joint=pose([0, 0, 0.2588190, 0.9659258], (0.6, 0.1, 0.0)),
        body_to_joint=pose(translation=(-0.05, 0.0, 0.0)),
    )
    tree.add_body(
        "arm2",
        parent="arm1",
        joint="universal",
        mass=1.5,
        r_CB_B=[0.25, 0, 0],
        inertia_C_B=random_inertia(rng, 0.1),
        inb_to_joint=pose(translation=(0.6, 0.0, 0.0)),
    )
    tree.add_body(
        "antenna",
        parent="hub",
        joint="ball",
        mass=2.0,
        r_CB_B=[0.0, 0.0, 0.3],
        inertia_C_B=random_inertia(rng, 0.3),
        inb_to_joint=pose(translation=(0.0, 0.0, 0.7)),
    )
    tree.add_body(
        "boom",
        parent="hub",
        joint="slider",
        axis=(0, 1, 0),
        mass=1.0,
        r_CB_B=[0.0, 0.5, 0.0],
        inertia_C_B=random_inertia(rng, 0.2),
        inb_to_joint=pose(translation=(0.0, -0.5, 0.0)),
    )
    return tree


def _initial_state(tree, rng):
    Q = tree.zero_configuration()
    Q[tree.q_slice("hub")] = (
        np.r_[0.1, -0.2, 0.3, 0.9, 1.0, 2.0, -0.5]
        / np.r_[np.linalg.norm([0.1, -0.2, 0.3, 0.9])] ** np.r_[1, 1, 1, 1, 0, 0, 0]
    )
    Q[tree.q_slice("arm1")] = 0.3
    Q[tree.q_slice("arm2")] = [0.2, -0.4]
    U = rng.normal(scale=0.05, size=tree.nv)
    return Q, U


def test_free_flying_tree_conserves_momentum_and_energy_over_300_s():
    rng = np.random.default_rng(21)
    tree = spacecraft(rng)
    Q, U = _initial_state(tree, rng)
    nq = tree.nq
    tau = np.zeros(tree.nv)

    def f(t, x):
        Qx, Ux = x[:nq], x[nq:]
        udot, _ = hybrid_dynamics(tree, Qx, Ux, tau)
        return np.concatenate([configuration_rate(tree, Qx, Ux), udot])

    h0 = spatial_momentum(tree, Q, U)
    T0 = kinetic_energy(tree, Q, U)
    integ = DOP853(rtol=1e-11, atol=1e-12)
    x = np.concatenate([Q, U])
    t = 0.0
    for t1 in np.linspace(15.0, 300.0, 20):
        x = integ.advance(f, t, x, t1)
        x[:nq] = normalize_configuration(tree, x[:nq])
        t = t1
    h1 = spatial_momentum(tree, x[:nq], x[nq:])
    T1 = kinetic_energy(tree, x[:nq], x[nq:])
    assert np.linalg.norm(h1 - h0) < 1e-8 * np.linalg.norm(h0)
    assert abs(T1 - T0) < 1e-8 * T0
    assert integ.stats.steps > 100  # the motion is not trivial


def test_prescribed_appendages_conserve_momentum_and_energy_balances_work():
    """Arm joint and boom slider follow profiles (prescribed) while the rest floats freely:
    momentum is conserved and the kinetic energy changes by the work the prescribed joints do,
    W = integral of tau . u over the prescribed joints."""
    rng = np.random.default_rng(5)
    tree = spacecraft(rng)
    tree.set_prescribed("arm1")
    tree.set_prescribed("boom")
    Q, U = _initial_state(tree, rng)
    arm_q, arm_v = tree.q_slice("arm1"), tree.v_slice("arm1")
    boom_q, boom_v = tree.q_slice("boom"), tree.v_slice("boom")
    U[arm_v] = 0.0
    U[boom_v] = 0.0
    Q[boom_q] = 0.0
    moves = {
        "arm1": [
            (MoveProfile(0.3, 1.5, 0.002, 5.0, 4.0, kind="rotation"), 10.0),
            (MoveProfile(1.5, -0.4, 0.001, 0.0, 6.0, kind="rotation"), 400.0),
        ],
        "boom": [(MoveProfile(0.0, 0.4, 0.001, 0.0, 0.0), 100.0), (MoveProfile(0.4, 0.1, 0.0005, 3.0, 0.0), 600.0)],
    }

    def prescribed_accel(name, t):
        acc = 0.0
        for prof, start in moves[name]:
            acc += prof.evaluate(t - start)[2]
        return acc

    nq, nv = tree.nq, tree.nv
    mask = np.zeros(nv, dtype=bool)
    mask[arm_v] = mask[boom_v] = True
    tau = np.zeros(nv)

    def f(t, x):
        Qx, Ux = x[:nq], x[nq : nq + nv]
        up = np.zeros(nv)
        up[arm_v] = prescribed_accel("arm1", t)
        up[boom_v] = prescribed_accel("boom", t)
        udot, tau_out = hybrid_dynamics(tree, Qx, Ux, tau, up)
        power = float(tau_out[mask] @ Ux[mask])
        return np.concatenate([configuration_rate(tree, Qx, Ux), udot, [power]])

    h0 = spatial_momentum(tree, Q, U)
    T0 = kinetic_energy(tree, Q, U)
    integ = DOP853(rtol=1e-11, atol=1e-12)
    x = np.concatenate([Q, U, [0.0]])
    # hops at every profile breakpoint, with a reset there: the acceleration jumps
    barriers = {1000.0}
    for name in moves:
        for prof, start in moves[name]:
            barriers.update(start + b for b in prof.breakpoints)
    barriers.update(np.linspace(50.0, 1000.0, 20))
    t = 0.0
    for t1 in sorted(b for b in barriers if 0.0 < b <= 1000.0):
        x = integ.advance(f, t, x, t1)
        x[:nq] = normalize_configuration(tree, x[:nq])
        integ.reset()
        t = t1
    Q1, U1, W = x[:nq], x[nq : nq + nv], x[-1]
    h1 = spatial_momentum(tree, Q1, U1)
    T1 = kinetic_energy(tree, Q1, U1)
    assert np.linalg.norm(h1 - h0) < 1e-8 * np.linalg.norm(h0)
    assert abs(W) > 1e-4 * T0  # the prescribed joints did work
    assert pytest.approx(W, abs=1e-8 * T0) == T1 - T0
    # the prescribed coordinates followed their profiles
    assert Q1[arm_q][0] == pytest.approx(-0.4, abs=1e-7)
    assert Q1[boom_q][0] == pytest.approx(0.1, abs=1e-7)
