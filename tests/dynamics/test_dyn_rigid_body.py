"""Rigid vehicles: batched == single bit for bit, analytic solutions, conservation laws."""

import math

import numpy as np
import pytest
from dyn_helpers import random_inertia
from hypothesis import given
from hypothesis import strategies as st
from scipy.spatial.transform import Rotation

from hopsim.dynamics.integrators import DOP853
from hopsim.dynamics.rigid_body import (
    STATE_SIZE,
    pack_state,
    rigid_body_derivative,
    rigid_body_derivatives_batch,
    rigid_body_kinetic_energy,
    rigid_body_momentum,
    rigid_body_rk4_step,
    rigid_body_rk4_step_batch,
)
from hopsim.dynamics.spatial import quat_multiply, quat_rate, quat_to_dcm


def _random_fleet(rng, n):
    X = np.empty((n, STATE_SIZE))
    for i in range(n):
        X[i] = pack_state(
            rng.normal(size=3) * 7e6 if i % 2 else rng.normal(size=3),
            rng.normal(size=3),
            Rotation.random(random_state=rng).as_quat(),
            rng.normal(size=3),
        )
    mass = rng.uniform(1.0, 10.0, n)
    inertia = np.array([random_inertia(rng) for _ in range(n)])
    inputs = {k: rng.normal(size=(n, 3)) for k in ("r_CB_B", "force_N", "force_B", "torque_B", "point_B")}
    return X, mass, inertia, inputs


@pytest.mark.parametrize("mu", [0.0, 3.986004418e14])
def test_batched_step_equals_single_step_bit_for_bit(mu):
    rng = np.random.default_rng(7)
    X, mass, inertia, inp = _random_fleet(rng, 64)
    batch = rigid_body_rk4_step_batch(X, 0.25, mass, inertia, mu=mu, **inp)
    dbatch = rigid_body_derivatives_batch(X, mass, inertia, mu=mu, **inp)
    for i in range(X.shape[0]):
        one = {k: v[i] for k, v in inp.items()}
        single = rigid_body_rk4_step(X[i], 0.25, mass[i], inertia[i], mu=mu, **one)
        dsingle = rigid_body_derivative(X[i], mass[i], inertia[i], mu=mu, **one)
        assert np.array_equal(batch[i], single)
        assert np.array_equal(dbatch[i], dsingle)
    # a vehicle's result does not depend on its neighbours or the batch size
    part = rigid_body_rk4_step_batch(
        X[5:9], 0.25, mass[5:9], inertia[5:9], mu=mu, **{k: v[5:9] for k, v in inp.items()}
    )
    assert np.array_equal(part, batch[5:9])


def test_quaternion_kinematics_matches_scipy_composition():
    """Constant body rate: q(t) = q0 (x) exp(omega t / 2), and R(q) equals SciPy's matrix."""
    rng = np.random.default_rng(3)
    q0 = Rotation.random(random_state=rng).as_quat()
    omega = np.array([0.3, -0.2, 0.5])
    assert np.allclose(quat_to_dcm(q0), Rotation.from_quat(q0).as_matrix(), atol=1e-15)
    inertia = np.eye(3)  # isotropic: omega stays constant
    x = pack_state(np.zeros(3), np.zeros(3), q0, omega)
    integ = DOP853(rtol=1e-12, atol=1e-14)
    t1 = 7.0
    x1 = integ.advance(lambda t, y: rigid_body_derivative(y, 1.0, inertia), 0.0, x, t1)
    expected = (Rotation.from_quat(q0) * Rotation.from_rotvec(omega * t1)).as_matrix()
    assert np.allclose(quat_to_dcm(x1[6:10] / np.linalg.norm(x1[6:10])), expected, atol=1e-10)
    # qdot = 1/2 q (x) (omega, 0)
    assert np.allclose(quat_rate(q0, omega), 0.5 * quat_multiply(q0, np.append(omega, 0.0)))


def test_axisymmetric_torque_free_precession_analytic():
    """Body rates of a torque-free axisymmetric body: omega_3 constant, (omega_1, omega_2)
    rotates at lambda = (I3 - I1) / I1 * omega_3."""
    I1, I3 = 2.0, 3.5
    inertia = np.diag([I1, I1, I3])
    w0 = np.array([0.4, 0.1, 1.3])
    x = pack_state(np.zeros(3), np.zeros(3), [0, 0, 0, 1], w0)
    integ = DOP853(rtol=1e-12, atol=1e-14)
    t1 = 25.0
    x1 = integ.advance(lambda t, y: rigid_body_derivative(y, 4.0, inertia), 0.0, x, t1)
    lam = (I3 - I1) / I1 * w0[2]
    c, s = math.cos(lam * t1), math.sin(lam * t1)
    expected = np.array([c * w0[0] - s * w0[1], s * w0[0] + c * w0[1], w0[2]])
    assert np.allclose(x1[10:13], expected, atol=1e-9)


def test_centre_of_mass_moves_as_a_particle_while_tumbling():
    """Inertial force through the offset centre of mass: r_C(t) = r_C0 + v_C0 t + F t^2/(2m)
    whatever the rotation; r_B follows from the attitude."""
    rng = np.random.default_rng(11)
    m = 3.0
    inertia = random_inertia(rng)
    c = np.array([0.12, -0.05, 0.2])
    F = np.array([0.5, -0.1, 0.3])
    x = pack_state(
        rng.normal(size=3), rng.normal(size=3), Rotation.random(random_state=rng).as_quat(), rng.normal(size=3)
    )
    R0 = quat_to_dcm(x[6:10])
    rC0 = x[0:3] + R0 @ c
    vC0 = x[3:6] + R0 @ np.cross(x[10:13], c)
    f = lambda t, y: rigid_body_derivative(y, m, inertia, r_CB_B=c, force_N=F)  # noqa: E731
    t1 = 10.0
    x1 = DOP853(rtol=1e-12, atol=1e-14).advance(f, 0.0, x, t1)
    R1 = quat_to_dcm(x1[6:10])
    assert np.allclose(x1[0:3] + R1 @ c, rC0 + vC0 * t1 + 0.5 * F / m * t1**2, atol=1e-8)


def test_point_force_gives_torque_about_centre_of_mass():
    rng = np.random.default_rng(5)
    inertia = random_inertia(rng)
    c = np.array([0.1, 0.0, -0.05])
    p = np.array([0.5, 0.3, 0.2])
    F_B = np.array([0.0, 1.0, 0.5])
    q = Rotation.random(random_state=rng).as_quat()
    x = pack_state(np.zeros(3), np.zeros(3), q, np.zeros(3))
    d = rigid_body_derivative(x, 2.0, inertia, r_CB_B=c, force_B=F_B, point_B=p)
    assert np.allclose(d[10:13], np.linalg.solve(inertia, np.cross(p - c, F_B)))
    # the same force given in N at the same point gives the same result
    d2 = rigid_body_derivative(x, 2.0, inertia, r_CB_B=c, force_N=quat_to_dcm(q) @ F_B, point_B=p)
    assert np.allclose(d, d2, atol=1e-14)
    # and the body-origin acceleration includes the rotation about the centre of mass
    wdot = d[10:13]
    assert np.allclose(d[3:6], quat_to_dcm(q) @ (F_B / 2.0 - np.cross(wdot, c)), atol=1e-14)


def test_free_tumbling_body_conserves_momentum_and_energy_over_1000_s():
    rng = np.random.default_rng(2)
    m = 5.0
    inertia = np.array([[2.0, 0.1, -0.2], [0.1, 3.0, 0.05], [-0.2, 0.05, 4.0]])
    c = np.array([0.05, -0.1, 0.08])
    x = pack_state(
        rng.normal(size=3),
        rng.normal(size=3) * 0.1,
        Rotation.random(random_state=rng).as_quat(),
        np.array([0.3, 0.5, -0.4]),
    )
    p0, h0 = rigid_body_momentum(x, m, inertia, c)
    T0 = rigid_body_kinetic_energy(x, m, inertia, c)
    integ = DOP853(rtol=1e-11, atol=1e-13)
    f = lambda t, y: rigid_body_derivative(y, m, inertia, r_CB_B=c)  # noqa: E731
    t = 0.0
    for t1 in np.linspace(100.0, 1000.0, 10):
        x = integ.advance(f, t, x, t1)
        x[6:10] /= np.linalg.norm(x[6:10])
        t = t1
    p1, h1 = rigid_body_momentum(x, m, inertia, c)
    T1 = rigid_body_kinetic_energy(x, m, inertia, c)
    assert np.allclose(p1, p0, atol=1e-11)
    assert np.linalg.norm(h1 - h0) < 1e-7 * np.linalg.norm(h0)
    assert abs(T1 - T0) < 1e-8 * T0


def test_rk4_batch_converges_at_fourth_order():
    """Step halving on a tumbling, pushed vehicle: error ratios approach 2^4."""
    rng = np.random.default_rng(9)
    X, mass, inertia, inp = _random_fleet(rng, 3)
    X[:, 0:3] = rng.normal(size=(3, 3))

    def run(n):
        Y = X.copy()
        for _ in range(n):
            Y = rigid_body_rk4_step_batch(Y, 2.0 / n, mass, inertia, **inp)
        return Y

    ref = run(1024)
    e = [np.abs(run(n) - ref).max() for n in (16, 32, 64)]
    slope = math.log2(e[0] / e[1]), math.log2(e[1] / e[2])
    assert min(slope) > 3.6, (e, slope)


def test_quaternion_stays_normalized_with_positive_scalar():
    rng = np.random.default_rng(4)
    X, mass, inertia, inp = _random_fleet(rng, 10)
    inp = {k: 0.05 * v for k, v in inp.items()}
    for _ in range(50):
        X = rigid_body_rk4_step_batch(X, 0.05, mass, inertia, **inp)
    assert np.all(np.isfinite(X))
    assert np.allclose(np.linalg.norm(X[:, 6:10], axis=1), 1.0, atol=1e-15)
    assert np.all(X[:, 9] >= 0.0)


_component = st.one_of(
    st.floats(allow_nan=False, allow_infinity=False, width=64, min_value=-1e6, max_value=1e6),
    st.sampled_from([0.0, -0.0, 1.0, -1.0]),
)


@given(st.tuples(_component, _component, _component), st.tuples(_component, _component, _component))
def test_the_tuple_cross_product_is_numpys_to_the_bit(a, b):
    """``spatial.cross_xyz`` (for Python callers) gives numpy's cross product float for float,
    signed zeros included (a thruster's wrench is recorded from it)."""
    from hopsim.dynamics.spatial import cross_xyz

    mine = np.array(cross_xyz(a, b))
    ref = np.cross(np.array(a), np.array(b))
    assert mine.tobytes() == ref.tobytes()
