"""Closed loops: closure constraints against Pinocchio's constrained dynamics, against trees that
hinge the same bodies by the joint of the same type, and integrated with projection.

``make test-long`` runs them: compiling the constrained dynamics takes over a minute on a clean
clone, and no scenario uses closures yet (``make test`` stays within its ten minutes)."""

import numpy as np
import pytest
from dyn_helpers import PinocchioTwin, random_inertia, random_rotation, random_state, random_tree

from hopsim.dynamics.algorithms import (
    aba,
    configuration_rate,
    crba,
    forward_kinematics,
    joint_reaction_forces,
    kinetic_energy,
    mass_properties,
    minv,
    normalize_configuration,
    rnea,
)
from hopsim.dynamics.constraints import (
    Closures,
    _minv_rows,
    closure_jacobian,
    closure_residual,
    closure_terms,
    closure_wrenches,
    constrained_rk4,
    constrained_state_derivative,
    constraint_dynamics,
    project_configuration,
    project_velocity,
)
from hopsim.dynamics.integrators import RK4
from hopsim.dynamics.joints import PIN, UNIVERSAL, joint_motion
from hopsim.dynamics.spatial import dcm_to_quat, force_to_parent
from hopsim.dynamics.tree import MultibodyTree, pose

pytestmark = pytest.mark.long


def _rel_err(a, b):
    return float(np.abs(np.asarray(a) - np.asarray(b)).max() / max(np.abs(b).max(), 1e-300))


# --------------------------------------------------------------------------- models

L1, L2, L3, D = 0.3, 0.8, 0.6, 0.7  # crank, coupler, rocker, ground [m]: a Grashof crank-rocker
GRAVITY = (0.0, 0.0, -9.81)


def _rod(mass, length):
    return {
        "mass": mass,
        "r_CB_B": (length / 2, 0.0, 0.0),
        "inertia_C_B": np.diag([1e-3, mass * length**2 / 12, mass * length**2 / 12 + 1e-3]),
    }


def four_bar():
    """A planar four-bar in N's x-z plane, every pin about y: crank, coupler and rocker as a
    chain from the ground pivot at N's origin, the rocker's tip pinned to the ground at
    (D, 0, 0) by a closure."""
    tree = MultibodyTree(gravity_N=GRAVITY)
    tree.add_body("crank", joint="pin", axis=(0, 1, 0), **_rod(1.0, L1))
    tree.add_body("coupler", "crank", "pin", axis=(0, 1, 0), inb_to_joint=pose(translation=(L1, 0, 0)), **_rod(2.0, L2))
    tree.add_body(
        "rocker", "coupler", "pin", axis=(0, 1, 0), inb_to_joint=pose(translation=(L2, 0, 0)), **_rod(1.5, L3)
    )
    loops = Closures(tree)
    loops.add(
        "ground", "pin", "rocker", pose(translation=(L3, 0, 0)), None, pose(translation=(D, 0, 0)), axis=(0, 1, 0)
    )
    return tree, loops


def four_bar_assembled(crank_angle):
    """Joint angles of the assembled four-bar (elbow up) for a crank angle [rad], by the circle
    intersection (a rotation by t about y takes x to (cos t, 0, -sin t))."""
    B = np.array([L1 * np.cos(crank_angle), -L1 * np.sin(crank_angle)])  # (x, z)
    Dp = np.array([D, 0.0])
    d = np.linalg.norm(Dp - B)
    a = (L2**2 - L3**2 + d**2) / (2 * d)
    e = (Dp - B) / d
    C = B + a * e + np.sqrt(L2**2 - a**2) * np.array([-e[1], e[0]])
    t2 = np.arctan2(-(C - B)[1], (C - B)[0])
    t3 = np.arctan2(-(Dp - C)[1], (Dp - C)[0])
    return np.array([crank_angle, t2 - crank_angle, t3 - t2])


def two_arms(kind, shoulder):
    """A free-floating hub with two 2-link arms whose tips meet at (0.6, 0, 0) in the zero
    configuration, joined there by a closure of type ``kind``; shoulders of type ``shoulder``,
    elbows pins on skew axes."""
    rng = np.random.default_rng(7)
    tree = MultibodyTree(gravity_N=(0.3, -1.2, -9.0))
    tree.add_body("hub", joint="free", mass=12.0, r_CB_B=(0.02, -0.01, 0.03), inertia_C_B=random_inertia(rng, 2.0))
    tip = np.array([0.6, 0.0, 0.0])
    for side, sign in (("a", 1.0), ("b", -1.0)):
        P = np.array([0.0, 0.3 * sign, 0.02])
        E = np.array([0.3, 0.35 * sign, 0.1 * sign])
        tree.add_body(
            f"{side}1",
            "hub",
            shoulder,
            axis=(0.2, 0.1 * sign, 1.0),
            mass=1.5,
            r_CB_B=(E - P) / 2,
            inertia_C_B=random_inertia(rng, 0.1),
            inb_to_joint=pose(translation=P),
        )
        tree.add_body(
            f"{side}2",
            f"{side}1",
            "pin",
            axis=(1.0, sign, 0.3),
            mass=1.0,
            r_CB_B=(tip - E) / 2,
            inertia_C_B=random_inertia(rng, 0.05),
            inb_to_joint=pose(translation=E - P),
        )
    loops = Closures(tree)
    R_node = random_rotation(rng)
    loops.add(
        "tips",
        kind,
        "a2",
        pose(R_node, tip - np.array([0.3, 0.35, 0.1])),
        "b2",
        pose(R_node, tip - np.array([0.3, -0.35, -0.1])),
    )
    return tree, loops


def closed_state(rng, tree, loops, Q0, spread=0.15):
    """A state that satisfies the closures: ``Q0`` (on the manifold) with its non-quaternion
    coordinates perturbed, projected; random velocities, projected."""
    Q = Q0.copy()
    for i, b in enumerate(tree.bodies):
        s = tree.q_slice(i)
        if b.joint_type in (PIN, UNIVERSAL):
            Q[s] += rng.normal(scale=spread, size=s.stop - s.start)
    Q, err = project_configuration(tree, loops, Q)
    assert err <= 1e-12
    U = project_velocity(tree, loops, Q, rng.normal(size=tree.nv))
    assert np.abs(closure_jacobian(tree, loops, Q) @ U).max() < 1e-12
    return Q, U


def hub_zero_state(rng, tree):
    """Zero configuration with the hub at a random pose."""
    Q = tree.zero_configuration()
    Q[0:4] = dcm_to_quat(random_rotation(rng))
    Q[4:7] = rng.normal(size=3)
    return Q


# --------------------------------------------------------------------------- Pinocchio


def pinocchio_closures(twin, loops, contact_type):
    """The closures as Pinocchio rigid constraint models of the tree's twin (node 1 on joint 1,
    node 2 on joint 2, forces in node 1's frame), their datas, and the proximal settings: they
    converge to the minimum-norm multipliers when the constraints are redundant (mu > 0), to the
    exact ones in a few iterations otherwise."""
    import pinocchio as pin

    models = pin.StdVec_RigidConstraintModel()
    for c in loops.closures:
        placements = []
        for body, node in ((c.body1, c.node1), (c.body2, c.node2)):
            T = pin.SE3(node.rotation.copy(), node.translation.copy())
            if body < 0:
                placements.append((0, T))
            else:
                placements.append((int(twin.joint_of_body[body]), twin.body_in_joint[body] * T))
        (j1, T1), (j2, T2) = placements
        models.append(pin.RigidConstraintModel(contact_type, twin.model, j1, T1, j2, T2, pin.ReferenceFrame.LOCAL))
    datas = pin.StdVec_RigidConstraintData()
    for cm in models:
        datas.append(cm.createData())
    pin.initConstraintDynamics(twin.model, twin.data, models, datas)
    return models, datas, pin.ProximalSettings(1e-14, 1e-10, 200)


def _pinocchio_closed(tree, loops, contact_type):
    """The Pinocchio twin of a tree and its closures (:func:`pinocchio_closures`): a solver of
    the constrained accelerations and multipliers."""
    pin = pytest.importorskip("pinocchio")
    twin = PinocchioTwin(tree)
    models, datas, prox = pinocchio_closures(twin, loops, contact_type)

    def solve(Q, U, tau):
        a = pin.constraintDynamics(twin.model, twin.data, twin.q(Q), twin.v(U), twin.v(tau), models, datas, prox)
        return twin.v_back(a), twin.data.lambda_c.copy()

    return solve


def test_four_bar_against_pinocchio():
    """The four-bar's closing pin (5 rows, rank 2 in 3-D: the out-of-plane rows vanish) against
    Pinocchio's CONTACT_3D closure: accelerations and the in-plane force (the only unique
    components) at random projected states."""
    pin = pytest.importorskip("pinocchio")
    tree, loops = four_bar()
    solve = _pinocchio_closed(tree, loops, pin.ContactType.CONTACT_3D)
    rng = np.random.default_rng(3)
    worst_a = worst_f = 0.0
    for _ in range(8):
        Q, U = closed_state(rng, tree, loops, four_bar_assembled(rng.uniform(-np.pi, np.pi)))
        tau = rng.normal(size=3)
        udot, lam = constraint_dynamics(tree, loops, Q, U, tau)
        a_pin, f_pin = solve(Q, U, tau)
        assert np.linalg.matrix_rank(closure_jacobian(tree, loops, Q), 1e-9) == 2
        worst_a = max(worst_a, _rel_err(udot, a_pin))
        wrench = closure_wrenches(tree, loops, Q, lam)[0]
        worst_f = max(worst_f, _rel_err(wrench[[3, 5]], f_pin[[0, 2]]))
        # the redundant rows carry the minimum-norm multipliers: nothing
        assert np.abs(wrench[[0, 1, 2, 4]]).max() <= 1e-9 * np.abs(wrench).max()
    assert worst_a <= 1e-8, worst_a
    assert worst_f <= 1e-8, worst_f


@pytest.mark.parametrize(("kind", "shoulder"), [("ball", "pin"), ("locked", "ball")])
def test_free_floating_closed_chain_against_pinocchio(kind, shoulder):
    """A free-floating hub whose two arms' tips are joined by a ball (Pinocchio CONTACT_3D) or
    welded (CONTACT_6D), with random joint forces and gravity: accelerations and constraint
    forces (unique here: G has full row rank)."""
    pin = pytest.importorskip("pinocchio")
    tree, loops = two_arms(kind, shoulder)
    contact = pin.ContactType.CONTACT_3D if kind == "ball" else pin.ContactType.CONTACT_6D
    solve = _pinocchio_closed(tree, loops, contact)
    rng = np.random.default_rng(5)
    m = loops.n_rows
    worst_a = worst_f = 0.0
    for _ in range(6):
        Q, U = closed_state(rng, tree, loops, hub_zero_state(rng, tree))
        tau = rng.normal(size=tree.nv)
        udot, lam = constraint_dynamics(tree, loops, Q, U, tau)
        a_pin, f_pin = solve(Q, U, tau)
        s = np.linalg.svd(closure_jacobian(tree, loops, Q), compute_uv=False)
        assert s[m - 1] > 1e-3 * s[0]
        wrench = closure_wrenches(tree, loops, Q, lam)[0]
        f_ours = wrench[3:6] if kind == "ball" else np.concatenate([wrench[3:6], wrench[0:3]])
        worst_a = max(worst_a, _rel_err(udot, a_pin))
        worst_f = max(worst_f, _rel_err(f_ours, f_pin))
    assert worst_a <= 1e-8, worst_a
    assert worst_f <= 1e-8, worst_f


# --------------------------------------------------------------------------- against trees


def _hinged_pair(kind, closed, seed):
    """A free hub and an arm: hinged by a joint of type ``kind``, or (``closed``) by a free
    joint plus a closure of type ``kind`` between the same two frames."""
    rng = np.random.default_rng(seed)
    tree = MultibodyTree(gravity_N=rng.normal(size=3))
    tree.add_body("hub", joint="free", mass=8.0, r_CB_B=rng.normal(scale=0.1, size=3), inertia_C_B=random_inertia(rng))
    O = pose(random_rotation(rng), rng.normal(scale=0.5, size=3))
    J = pose(random_rotation(rng), rng.normal(scale=0.3, size=3))
    axis = rng.normal(size=3)
    tree.add_body(
        "arm",
        "hub",
        "free" if closed else kind,
        axis=axis,
        mass=2.0,
        r_CB_B=rng.normal(scale=0.2, size=3),
        inertia_C_B=random_inertia(rng, 0.5),
        inb_to_joint=O,
        body_to_joint=J,
    )
    loops = Closures(tree)
    if closed:
        loops.add("hinge", kind, "arm", J, "hub", O, axis=axis)
    return tree, loops, rng


@pytest.mark.parametrize("kind", ["locked", "ball", "pin", "universal"])
def test_closure_equals_joint_of_same_type(kind):
    """An arm hinged to a free hub by a joint, against the arm on a free joint held by a closure
    of the same type between the same frames (gravity, external forces and hub forces random):
    the same motion, and the closure's force equals the joint's reaction force."""
    tree_j, _, rng = _hinged_pair(kind, False, 11)
    tree_c, loops, _ = _hinged_pair(kind, True, 11)
    for _ in range(5):
        Qj = hub_zero_state(rng, tree_j)
        Qj[7:] = rng.normal(size=Qj.size - 7)
        if kind == "ball":
            Qj[7:11] = dcm_to_quat(random_rotation(rng))
        Uj = rng.normal(size=tree_j.nv)
        tau_j = np.concatenate([rng.normal(size=6), np.zeros(tree_j.nv - 6)])
        f_ext = rng.normal(size=(2, 6))
        udot_j = aba(tree_j, Qj, Uj, tau_j, f_ext=f_ext)
        reaction = joint_reaction_forces(tree_j, Qj, Uj, tau_j, f_ext=f_ext)[1]
        # the same state with the arm on a free joint: J's attitude in O, no offset
        b = tree_j.bodies[1]
        nv_j = tree_j.nv - 6
        S = np.zeros((6, 6))
        cJ = np.zeros(6)
        R_OJ = np.eye(3)
        joint_motion(b.joint_type, b.axis, Qj[7:], Uj[6:], S, cJ, R_OJ, np.zeros(3))
        Qc = np.concatenate([Qj[0:7], dcm_to_quat(R_OJ), np.zeros(3)])
        Uc = np.concatenate([Uj[0:6], S[:, :nv_j] @ Uj[6:]])
        tau_c = np.concatenate([tau_j[0:6], np.zeros(6)])
        assert np.abs(closure_residual(tree_c, loops, Qc)).max() < 1e-12
        assert np.abs(closure_jacobian(tree_c, loops, Qc) @ Uc).max() < 1e-12
        udot_c, lam = constraint_dynamics(tree_c, loops, Qc, Uc, tau_c, f_ext=f_ext)
        assert _rel_err(udot_c[0:6], udot_j[0:6]) <= 1e-10
        expected_arm = S[:, :nv_j] @ udot_j[6:] + cJ  # J's acceleration relative to O, in J
        assert np.abs(udot_c[6:12] - expected_arm).max() <= 1e-10 * max(1.0, np.abs(udot_j).max())
        wrench_J = closure_wrenches(tree_c, loops, Qc, lam)[0]
        wrench_B = force_to_parent(b.body_to_joint.rotation, b.body_to_joint.translation, wrench_J)
        assert _rel_err(wrench_B, reaction) <= 1e-10


# --------------------------------------------------------------------------- the solver's algebra


def test_dynamics_satisfy_the_dense_equations():
    """``M Udot + C = tau + J^T f_ext + G^T lambda`` with hopsim's CRBA and RNEA, and
    ``G Udot + Gdot U = 0`` on the manifold."""
    tree, loops = two_arms("ball", "pin")
    rng = np.random.default_rng(2)
    Q, U = closed_state(rng, tree, loops, hub_zero_state(rng, tree))
    tau = rng.normal(size=tree.nv)
    f_ext = rng.normal(size=(tree.n_bodies, 6))
    udot, lam = constraint_dynamics(tree, loops, Q, U, tau, f_ext=f_ext)
    G, _phi, gdu = closure_terms(tree, loops, Q, U)
    lhs = crba(tree, Q) @ udot + rnea(tree, Q, U, np.zeros(tree.nv), f_ext=f_ext)
    assert _rel_err(lhs, tau + G.T @ lam) <= 1e-10
    assert np.abs(G @ udot + gdu).max() <= 1e-10 * np.abs(udot).max()


def test_duplicated_closure_is_redundant_not_fatal():
    """The four-bar closed twice by the same pin (dependent, non-zero rows): the same
    accelerations, and the minimum-norm multipliers share the force equally."""
    tree, loops = four_bar()
    rng = np.random.default_rng(6)
    Q, U = closed_state(rng, tree, loops, four_bar_assembled(1.1))
    tau = rng.normal(size=3)
    udot, lam = constraint_dynamics(tree, loops, Q, U, tau)
    c = loops.closures[0]
    twice = Closures(tree)
    twice.add("first", "pin", c.body1, c.node1, None, c.node2, axis=c.axis)
    twice.add("second", "pin", c.body1, c.node1, None, c.node2, axis=c.axis)
    udot2, lam2 = constraint_dynamics(tree, twice, Q, U, tau)
    assert _rel_err(udot2, udot) <= 1e-12
    assert _rel_err(lam2[0:5] + lam2[5:10], lam) <= 1e-12
    assert _rel_err(lam2[0:5], lam2[5:10]) <= 1e-12


def test_no_closures_is_the_tree_and_bad_closures_are_refused():
    tree, _ = four_bar()
    none = Closures(tree)
    rng = np.random.default_rng(9)
    Q, U, tau = rng.normal(size=3), rng.normal(size=3), rng.normal(size=3)
    udot, lam = constraint_dynamics(tree, none, Q, U, tau)
    assert lam.shape == (0,)
    assert _rel_err(udot, aba(tree, Q, U, tau)) <= 1e-14
    with pytest.raises(ValueError, match="choose one of"):
        none.add("x", "hinge", "crank")
    with pytest.raises(ValueError, match="to itself"):
        none.add("x", "ball", "crank", None, "crank")
    with pytest.raises(ValueError, match="non-zero"):
        none.add("x", "pin", "crank", axis=(0, 0, 0))


def test_delassus_columns_are_minv_bit_for_bit():
    """``M^-1 G^T`` with the articulated inertias factored once equals one ``minv`` per row,
    bit for bit (a tree with every joint type, locked bodies included)."""
    rng = np.random.default_rng(12)
    tree = random_tree(rng, 9)
    Q, _ = random_state(rng, tree)
    G = rng.normal(size=(7, tree.nv))
    a = tree.arrays
    Kt, A = _minv_rows(a.ints, a.reals, Q, G)
    for r in range(G.shape[0]):
        assert np.array_equal(Kt[r], minv(tree, Q, G[r]))
    assert np.array_equal(A, A.T)
    assert _rel_err(A, G @ np.linalg.solve(crba(tree, Q), G.T)) <= 1e-10


def test_closure_jacobian_is_the_residual_derivative():
    """On the manifold, ``G`` is the derivative of ``phi`` along every velocity, for every
    closure type (finite differences along the configuration rate)."""
    for kind in ("locked", "ball", "pin", "universal"):
        tree, loops, rng = _hinged_pair(kind, True, 23)
        Q = tree.zero_configuration()
        Q[0:4] = dcm_to_quat(random_rotation(rng))
        Q[4:7] = rng.normal(size=3)
        Q, _ = project_configuration(tree, loops, Q)
        U = rng.normal(size=tree.nv)
        h = 1e-6
        Qd = configuration_rate(tree, Q, U)
        fd = (
            closure_residual(tree, loops, normalize_configuration(tree, Q + h * Qd))
            - closure_residual(tree, loops, normalize_configuration(tree, Q - h * Qd))
        ) / (2 * h)
        assert np.abs(fd - closure_jacobian(tree, loops, Q) @ U).max() < 1e-7, kind


def test_projections():
    """Gauss-Newton brings a perturbed four-bar back to 1e-12 within a few iterations; the
    velocity projection leaves consistent velocities alone and is the kinetic-energy-nearest
    consistent velocity (its correction is M-orthogonal to every consistent velocity)."""
    tree, loops = four_bar()
    rng = np.random.default_rng(4)
    Q0 = four_bar_assembled(0.4)
    Q, err = project_configuration(tree, loops, Q0 + rng.normal(scale=0.2, size=3))
    assert err <= 1e-12
    assert np.abs(closure_residual(tree, loops, Q)).max() <= 1e-12
    U = rng.normal(size=3)
    Up = project_velocity(tree, loops, Q, U)
    assert np.abs(project_velocity(tree, loops, Q, Up) - Up).max() <= 1e-14
    G = closure_jacobian(tree, loops, Q)
    null = np.linalg.svd(G)[2][2:]  # the consistent velocities
    assert np.abs(null @ crba(tree, Q) @ (U - Up)).max() <= 1e-12


def test_baumgarte_drives_the_separation_critically():
    """From an assembled four-bar at rest with the rocker turned 1 mrad (its tip 0.5 mm off its
    pivot), the separation of the closure's origins obeys e'' + kd e' + kp e = 0: with
    kp = w^2 and kd = 2 w it follows e0 (1 + w t) exp(-w t)."""
    tree, loops = four_bar()
    Q = four_bar_assembled(0.9)
    Q[2] += 1e-3
    e0 = _separation(tree, loops, Q)
    w = 10.0
    x = np.concatenate([Q, np.zeros(3)])
    rk4 = RK4()

    def f(t, x):
        return constrained_state_derivative(tree, loops, x, kp=w * w, kd=2 * w)

    h = 1e-3
    for k in range(1, 301):
        x = rk4.step(f, 0.0, x, h)
        t = k * h
        expected = e0 * (1 + w * t) * np.exp(-w * t)  # RK4's own error: 4e-8 of e0 at 1 ms
        assert np.abs(_separation(tree, loops, x[:3]) - expected).max() <= 1e-7 * np.abs(e0).max(), t


def _separation(tree, loops, Q):
    """r_1 - r_2 of the four-bar's closure, in N [m]."""
    R_w, p_w, _ = forward_kinematics(tree, Q)
    c = loops.closures[0]
    return p_w[c.body1] + R_w[c.body1] @ c.node1.translation - c.node2.translation


# --------------------------------------------------------------------------- integration


def _energy(tree, Q, U):
    m, com, _ = mass_properties(tree, Q)
    return kinetic_energy(tree, Q, U) - m * tree.gravity_N @ com


def _integrate_four_bar(duration):
    tree, loops = four_bar()
    rng = np.random.default_rng(8)
    Q, U = closed_state(rng, tree, loops, four_bar_assembled(0.2), spread=0.0)
    E0 = _energy(tree, Q, U)
    h = 1e-3
    n = round(duration / h)
    drift = 0.0
    energy = 0.0
    chunk = 1000
    for _ in range(n // chunk):
        Q, U, worst = constrained_rk4(tree, loops, Q, U, h, chunk)
        drift = max(drift, worst, np.abs(closure_residual(tree, loops, Q)).max())
        energy = max(energy, abs(_energy(tree, Q, U) - E0) / abs(E0))
    return drift, energy, Q


def test_four_bar_integrated_10s():
    """RK4 at 1 ms with projection after every step, under gravity, no damping: the closure
    stays below 1e-10 m and the energy within 1e-8."""
    drift, energy, _ = _integrate_four_bar(10.0)
    assert drift <= 1e-10
    assert energy <= 1e-8


@pytest.mark.long
def test_four_bar_integrated_100s():
    """The same over 100 s (100,000 steps)."""
    drift, energy, _ = _integrate_four_bar(100.0)
    assert drift <= 1e-10
    assert energy <= 1e-8
