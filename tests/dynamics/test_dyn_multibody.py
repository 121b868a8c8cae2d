"""Multibody operators against Pinocchio and against each other."""

import numpy as np
import pytest
from dyn_helpers import PinocchioTwin, random_state, random_tree

from hopsim.dynamics.algorithms import (
    aba,
    aba_batch,
    center_of_mass,
    composite_body_inertias,
    configuration_rate,
    crba,
    forward_kinematics,
    frame_jacobian,
    hybrid_dynamics,
    jacobian_transpose_times,
    joint_reaction_forces,
    kinetic_energy,
    mass_properties,
    minv,
    normalize_configuration,
    rnea,
    spatial_momentum,
    station_jacobian,
)
from hopsim.dynamics.joints import FREE, LOCKED
from hopsim.dynamics.tree import MultibodyTree, pose

pin = pytest.importorskip("pinocchio")

SEEDS = list(range(24))


def _rel_close(a, b, rel=1e-9):
    scale = max(np.abs(b).max(), 1.0)
    assert np.abs(a - b).max() <= rel * scale, np.abs(a - b).max() / scale


def _case(seed, joint_types=None):
    rng = np.random.default_rng(seed)
    n = 1 + (seed * 29) // 23 if seed < 24 else int(rng.integers(1, 31))  # 1 ... 30 bodies
    kwargs = {} if joint_types is None else {"joint_types": joint_types}
    tree = random_tree(rng, n, **kwargs)
    Q, U = random_state(rng, tree)
    return rng, tree, Q, U


@pytest.mark.parametrize("seed", SEEDS)
def test_against_pinocchio(seed):
    """ABA, RNEA and CRBA on random trees of 1 to 30 bodies with every joint type
    (universal and planar as Pinocchio composites, locked bodies merged)."""
    rng, tree, Q, U = _case(seed)
    nb, nv = tree.n_bodies, tree.nv
    twin = PinocchioTwin(tree)
    model, data = twin.model, twin.data
    q, v = twin.q(Q), twin.v(U)
    tau = rng.normal(size=nv)
    f_ext = rng.normal(size=(nb, 6))
    fx = twin.fext(f_ext)

    udot = aba(tree, Q, U, tau, f_ext=f_ext)
    _rel_close(udot, twin.v_back(pin.aba(model, data, q, v, twin.v(tau), fx)))

    a = rng.normal(size=nv)
    _rel_close(rnea(tree, Q, U, a, f_ext=f_ext), twin.v_back(pin.rnea(model, data, q, v, twin.v(a), fx)))
    # joint forces of the same inverse-dynamics pass
    ours = joint_reaction_forces(tree, Q, U, rnea(tree, Q, U, a, f_ext=f_ext), f_ext=f_ext)
    pin.rnea(model, data, q, v, twin.v(a), fx)
    for i, b in enumerate(tree.bodies):
        if b.joint_type != LOCKED:
            expected = twin.joint_force_in_body(i, data.f[int(twin.joint_of_body[i])])
            _rel_close(ours[i], expected)

    M_pin = pin.crba(model, data, q).copy()
    M_pin = np.triu(M_pin) + np.triu(M_pin, 1).T
    _rel_close(crba(tree, Q), twin.matrix_back(M_pin))


@pytest.mark.parametrize("seed", SEEDS[:12])
def test_mass_matrix_properties(seed):
    rng, tree, Q, _U = _case(seed + 100)
    M = crba(tree, Q)
    assert np.array_equal(M, M.T)
    assert np.linalg.eigvalsh(M).min() > 0
    v = rng.normal(size=tree.nv)
    _rel_close(M @ minv(tree, Q, v), v, 1e-10)
    _rel_close(minv(tree, Q, M @ v), v, 1e-9)
    # columns of M are inverse dynamics with no velocity and no gravity
    tree.gravity_N[:] = 0.0
    tree._arrays = None
    Mr = np.column_stack([rnea(tree, Q, np.zeros(tree.nv), e) for e in np.eye(tree.nv)])
    _rel_close(M, Mr, 1e-12)


@pytest.mark.parametrize("seed", SEEDS[:12])
def test_forward_then_inverse_returns_applied_forces(seed):
    rng, tree, Q, U = _case(seed + 200)
    tau = rng.normal(size=tree.nv)
    f_ext = rng.normal(size=(tree.n_bodies, 6))
    udot = aba(tree, Q, U, tau, f_ext=f_ext)
    _rel_close(rnea(tree, Q, U, udot, f_ext=f_ext), tau, 1e-10)
    # and M udot + bias = tau
    bias = rnea(tree, Q, U, np.zeros(tree.nv), f_ext=f_ext)
    _rel_close(crba(tree, Q) @ udot + bias, tau, 1e-10)


@pytest.mark.parametrize("seed", SEEDS[:12])
def test_hybrid_dynamics_prescribed_joints(seed):
    """Prescribed joints get their given accelerations, the others the accelerations of the
    forces given; the returned forces are the inverse dynamics of the combined motion."""
    rng, tree, Q, U = _case(seed + 300)
    movable = [i for i, b in enumerate(tree.bodies) if b.joint_type != LOCKED]
    chosen = rng.choice(movable, size=max(1, len(movable) // 3), replace=False)
    for i in chosen:
        tree.set_prescribed(int(i))
    nv = tree.nv
    tau = rng.normal(size=nv)
    udot_p = rng.normal(size=nv)
    f_ext = rng.normal(size=(tree.n_bodies, 6))
    udot, tau_out = hybrid_dynamics(tree, Q, U, tau, udot_p, f_ext)
    mask = np.zeros(nv, dtype=bool)
    for i in chosen:
        mask[tree.v_slice(int(i))] = True
    assert np.array_equal(udot[mask], udot_p[mask])
    assert np.array_equal(tau_out[~mask], tau[~mask])
    _rel_close(rnea(tree, Q, U, udot, f_ext=f_ext), tau_out, 1e-10)
    # feeding the prescribed forces back as inputs with all joints free reproduces udot
    for i in chosen:
        tree.set_prescribed(int(i), False)
    _rel_close(aba(tree, Q, U, tau_out, f_ext=f_ext), udot, 1e-9)


def test_batched_aba_equals_single_bit_for_bit():
    rng, tree, _Q, _U = _case(17)
    states = [random_state(rng, tree) for _ in range(6)]
    Qs = np.array([s[0] for s in states])
    Us = np.array([s[1] for s in states])
    taus = rng.normal(size=Us.shape)
    udots, _ = aba_batch(tree, Qs, Us, taus)
    for k in range(len(states)):
        assert np.array_equal(udots[k], aba(tree, Qs[k], Us[k], taus[k]))


@pytest.mark.parametrize("seed", SEEDS[:8])
def test_system_properties(seed):
    _rng, tree, Q, U = _case(seed + 400)
    a = tree.arrays
    R_w, p_w, v = forward_kinematics(tree, Q, U)
    m, c, I_C = mass_properties(tree, Q)
    # direct sums over the bodies
    assert m == pytest.approx(a.mass.sum(), rel=1e-14)
    com_bodies = np.array([p_w[i] + R_w[i] @ a.com[i] for i in range(tree.n_bodies)])
    _rel_close(c, (a.mass[:, None] * com_bodies).sum(0) / m, 1e-12)
    I_direct = np.zeros((3, 3))
    for i in range(tree.n_bodies):
        d = com_bodies[i] - c
        I_direct += R_w[i] @ a.inertia_C[i] @ R_w[i].T + a.mass[i] * (d @ d * np.eye(3) - np.outer(d, d))
    _rel_close(I_C, I_direct, 1e-12)
    # momentum and energy from the body velocities
    v_com_bodies = np.array([R_w[i] @ (v[i, 3:6] + np.cross(v[i, 0:3], a.com[i])) for i in range(tree.n_bodies)])
    p_lin = (a.mass[:, None] * v_com_bodies).sum(0)
    h = spatial_momentum(tree, Q, U)
    _rel_close(h[3:6], p_lin, 1e-12)
    L = sum(
        R_w[i] @ a.inertia_C[i] @ v[i, 0:3] + a.mass[i] * np.cross(com_bodies[i], v_com_bodies[i])
        for i in range(tree.n_bodies)
    )
    _rel_close(h[0:3], L, 1e-12)
    T = 0.5 * sum(
        a.mass[i] * v_com_bodies[i] @ v_com_bodies[i] + v[i, 0:3] @ a.inertia_C[i] @ v[i, 0:3]
        for i in range(tree.n_bodies)
    )
    assert kinetic_energy(tree, Q, U) == pytest.approx(T, rel=1e-12)
    assert kinetic_energy(tree, Q, U) == pytest.approx(0.5 * U @ crba(tree, Q) @ U, rel=1e-11)
    _rel_close(center_of_mass(tree, Q, U)[1], p_lin / m, 1e-12)
    # the root's composite inertia is the mass of everything hinged below it
    Ic = composite_body_inertias(tree, Q)
    sub = tree.subtree(0)
    assert Ic[0][3, 3] == pytest.approx(a.mass[sub].sum(), rel=1e-14)


@pytest.mark.parametrize("seed", SEEDS[:8])
def test_jacobians(seed):
    rng, tree, Q, U = _case(seed + 500)
    R_w, _p_w, v = forward_kinematics(tree, Q, U)
    body = int(rng.integers(0, tree.n_bodies))
    station = rng.normal(size=3)
    J = frame_jacobian(tree, Q, body, "body")
    _rel_close(J @ U, v[body], 1e-12)
    Js, _r = station_jacobian(tree, Q, body, station)
    # finite difference of the station position along Qdot (independent of the Jacobian code)
    h = 1e-6
    Qd = configuration_rate(tree, Q, U)

    def station_pos(Qx):
        Rw, pw, _ = forward_kinematics(tree, normalize_configuration(tree, Qx))
        return pw[body] + Rw[body] @ station

    fd = (station_pos(Q + h * Qd) - station_pos(Q - h * Qd)) / (2 * h)
    assert np.allclose(Js @ U, fd, atol=1e-6 * max(1.0, np.abs(fd).max()))
    # world and world-aligned variants are the same motion
    Jw = frame_jacobian(tree, Q, body, "world_aligned")
    _rel_close(Jw[0:3] @ U, R_w[body] @ v[body, 0:3], 1e-12)
    _rel_close(Jw[3:6] @ U, R_w[body] @ v[body, 3:6], 1e-12)
    # J^T F of a single body force matches the station Jacobian transpose
    F = rng.normal(size=3)
    f_body = np.zeros((tree.n_bodies, 6))
    f_body[body, 3:6] = R_w[body].T @ F
    f_body[body, 0:3] = np.cross(station, R_w[body].T @ F)
    _rel_close(jacobian_transpose_times(tree, Q, f_body), Js.T @ F, 1e-12)


def test_universal_and_planar_match_pinocchio_native_joints_where_they_agree():
    """Planar against Pinocchio's native JointModelPlanar (q = [x, y, cos, sin])."""
    tree = MultibodyTree()
    rng = np.random.default_rng(0)
    tree.add_body("table", joint="planar", mass=2.0, r_CB_B=[0.1, 0.2, 0.0], inertia_C_B=np.diag([0.3, 0.4, 0.5]))
    model = pin.Model()
    model.gravity = pin.Motion.Zero()
    jid = model.addJoint(0, pin.JointModelPlanar(), pin.SE3.Identity(), "p")
    model.appendBodyToJoint(
        jid, pin.Inertia(2.0, np.array([0.1, 0.2, 0.0]), np.diag([0.3, 0.4, 0.5])), pin.SE3.Identity()
    )
    data = model.createData()
    Q = rng.normal(size=3)
    U = rng.normal(size=3)
    tau = rng.normal(size=3)
    q = np.array([Q[0], Q[1], np.cos(Q[2]), np.sin(Q[2])])
    # pinocchio's planar velocity is in the moving frame; ours is the coordinate rate
    c, s = np.cos(Q[2]), np.sin(Q[2])
    Rz = np.array([[c, -s], [s, c]])
    v = np.concatenate([Rz.T @ U[0:2], U[2:3]])
    vdot_pin = pin.aba(model, data, q, v, np.concatenate([Rz.T @ tau[0:2], tau[2:3]]))
    udot = aba(tree, Q, U, tau)
    # d/dt (Rz v) = Rz (vdot + thetadot * skew(z) v)
    lin = Rz @ (vdot_pin[0:2] + U[2] * np.array([-v[1], v[0]]))
    assert np.allclose(udot, np.concatenate([lin, vdot_pin[2:3]]), atol=1e-12)


def test_free_joint_rates_and_normalization():
    tree = MultibodyTree()
    tree.add_body("hub", joint="free", mass=3.0)
    Q = np.array([0.0, 0.0, 0.0, -2.0, 1.0, 2.0, 3.0])
    Qn = normalize_configuration(tree, Q)
    assert np.array_equal(Qn[0:4], [0, 0, 0, 1.0]) and np.array_equal(Qn[4:7], Q[4:7])
    U = np.array([0.1, 0.2, 0.3, 1.0, 0.0, 0.0])
    Qd = configuration_rate(tree, Qn, U)
    assert np.allclose(Qd[4:7], [1.0, 0.0, 0.0]) and np.allclose(Qd[0:4], [0.05, 0.1, 0.15, 0])
    assert tree.bodies[0].joint_type == FREE


def test_offset_placements_and_gravity_on_a_pendulum():
    """A pin pendulum with offset placements: analytic angular acceleration under gravity."""
    g = 9.81
    tree = MultibodyTree(gravity_N=(0.0, 0.0, -g))
    L, m = 0.7, 2.0
    Ic = np.diag([0.01, 0.02, 0.03])
    # pivot at (0, 0, 1); the body frame sits 0.2 m from the joint, the CM 0.5 m further
    tree.add_body(
        "bob",
        joint="pin",
        axis=(0, 1, 0),
        mass=m,
        r_CB_B=[0.0, 0.0, -0.5],
        inertia_C_B=Ic,
        inb_to_joint=pose(translation=(0.0, 0.0, 1.0)),
        body_to_joint=pose(translation=(0.0, 0.0, 0.2)),
    )
    theta = 0.3
    udot = aba(tree, [theta], [0.0], [0.0])
    # rotation +theta about y swings -z towards -x; gravity torque about y = -m g L sin(theta)
    expected = -m * g * L * np.sin(theta) / (Ic[1, 1] + m * L * L)
    assert udot[0] == pytest.approx(expected, rel=1e-13)


def test_aba_out_argument_and_converted_inputs():
    """``out`` receives the result, also on the general path (external forces); list inputs
    take the converting path and give the same accelerations as the fast path."""
    rng, tree, Q, U = _case(5)
    tau = rng.normal(size=tree.nv)
    udot = aba(tree, Q, U, tau)
    out = np.empty(tree.nv)
    assert aba(tree, Q, U, tau, out=out) is out
    assert np.array_equal(out, udot)
    assert np.array_equal(aba(tree, list(Q), list(U), list(tau)), udot)
    out[:] = 0.0
    assert aba(tree, Q, U, tau, f_ext=np.zeros((tree.n_bodies, 6)), out=out) is out
    assert np.array_equal(out, udot)
