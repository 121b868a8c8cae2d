"""Detaching and attaching subtrees at run time."""

import numpy as np
import pytest
from dyn_helpers import random_state, random_tree

from hopsim.dynamics.algorithms import (
    aba,
    configuration_rate,
    forward_kinematics,
    kinetic_energy,
    normalize_configuration,
    spatial_momentum,
)
from hopsim.dynamics.integrators import DOP853
from hopsim.dynamics.topology import attach_subtree, detach_subtree


def _by_name(tree, Q, U):
    R, p, v = forward_kinematics(tree, Q, U)
    return {b.name: (R[i], p[i], v[i]) for i, b in enumerate(tree.bodies)}


def _propagate(tree, Q, U, t1):
    nq = tree.nq

    def f(t, x):
        return np.concatenate([configuration_rate(tree, x[:nq], x[nq:]), aba(tree, x[:nq], x[nq:], np.zeros(tree.nv))])

    x = DOP853(rtol=1e-11, atol=1e-12).advance(f, 0.0, np.concatenate([Q, U]), t1)
    return normalize_configuration(tree, x[:nq]), x[nq:]


def _free_tree(seed, n=8):
    rng = np.random.default_rng(seed)
    tree = random_tree(
        rng, n, joint_types=("pin", "slider", "ball", "universal", "planar", "locked"), gravity=np.zeros(3)
    )
    Q, U = random_state(rng, tree, scale=0.2)
    return rng, tree, Q, U


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_detach_keeps_every_pose_and_velocity(seed):
    rng, tree, Q, U = _free_tree(seed)
    body = int(rng.integers(1, tree.n_bodies))
    new, Qn, Un = detach_subtree(tree, body, Q, U)
    assert new.bodies[new.body_index(tree.bodies[body].name)].parent == -1
    before, after = _by_name(tree, Q, U), _by_name(new, Qn, Un)
    for name in before:
        for a, b in zip(before[name], after[name]):
            assert np.allclose(a, b, atol=1e-12)
    assert np.allclose(spatial_momentum(new, Qn, Un), spatial_momentum(tree, Q, U), atol=1e-11)
    assert kinetic_energy(new, Qn, Un) == pytest.approx(kinetic_energy(tree, Q, U), rel=1e-12)
    assert new.nq == tree.nq + 7 - len(Q[tree.q_slice(body)])


@pytest.mark.parametrize("seed", [4, 5, 6])
def test_separate_drift_then_dock_conserves_momentum_and_welds(seed):
    rng, tree, Q, U = _free_tree(seed)
    body = int(rng.integers(1, tree.n_bodies))
    name = tree.bodies[body].name
    free, Qf, Uf = detach_subtree(tree, body, Q, U)
    Qf, Uf = _propagate(free, Qf, Uf, 3.0)
    h_before = spatial_momentum(free, Qf, Uf)
    T_before = kinetic_energy(free, Qf, Uf)
    docked, Qd, Ud = attach_subtree(free, name, "b0", Qf, Uf, joint="locked")
    # poses are unchanged, momentum is conserved, energy is lost in the plastic impact
    before, after = _by_name(free, Qf, Uf), _by_name(docked, Qd, Ud)
    for n in before:
        assert np.allclose(before[n][0], after[n][0], atol=1e-12)
        assert np.allclose(before[n][1], after[n][1], atol=1e-12)
    assert np.allclose(spatial_momentum(docked, Qd, Ud), h_before, atol=1e-10)
    assert kinetic_energy(docked, Qd, Ud) <= T_before * (1 + 1e-12)
    # welded: the docked body moves rigidly with b0
    R, p, v = forward_kinematics(docked, Qd, Ud)
    i, j = docked.body_index(name), docked.body_index("b0")
    w_i, w_j = R[i] @ v[i, 0:3], R[j] @ v[j, 0:3]
    assert np.allclose(w_i, w_j, atol=1e-10)
    vel_i = R[i] @ v[i, 3:6]
    vel_j_at_i = R[j] @ v[j, 3:6] + np.cross(w_j, p[i] - p[j])
    assert np.allclose(vel_i, vel_j_at_i, atol=1e-10)


def test_attach_with_free_joint_changes_nothing_and_refuses_cycles():
    _rng, tree, Q, U = _free_tree(9)
    body = 3
    name = tree.bodies[body].name
    free, Qf, Uf = detach_subtree(tree, body, Q, U)
    again, Qa, Ua = attach_subtree(free, name, "b0", Qf, Uf, joint="free")
    before, after = _by_name(free, Qf, Uf), _by_name(again, Qa, Ua)
    for n in before:
        for a, b in zip(before[n], after[n]):
            assert np.allclose(a, b, atol=1e-10)
    child = next((b.name for b in tree.bodies if b.parent == body), None)
    if child is not None:
        with pytest.raises(ValueError, match="descendant"):
            attach_subtree(tree, body, child, Q, U)
