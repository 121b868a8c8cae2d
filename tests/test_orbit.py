"""Orbital gravity and the Hill frame: the zonal acceleration is the potential's gradient, J2
turns the node at the rate of theory, the Hill-frame conversions invert each other, and the
linearized relative motion about a circular orbit is the Clohessy-Wiltshire system."""

import math

import numpy as np
import pytest
from scipy.integrate import solve_ivp

from hopsim.actors.orbit import HillRelativeMotion
from hopsim.dynamics.gravity import (
    EARTH_J2,
    EARTH_J3,
    EARTH_MU,
    EARTH_RADIUS,
    gravity_gradient_torque,
    point_mass_acceleration,
    zonal_acceleration,
    zonal_potential,
)
from hopsim.dynamics.orbit_frames import (
    clohessy_wiltshire_matrix,
    clohessy_wiltshire_transition,
    hill_dcm,
    hill_rate,
    hill_state_carried,
    hill_to_inertial,
    inertial_to_hill,
    slot_error_carried,
)
from hopsim.dynamics.orbital_elements import argument_of_latitude, mean_to_eccentric, state_from_elements
from hopsim.kernel import Simulation
from hopsim.scenarios.linearize import linearize_simulation

A_LEO = EARTH_RADIUS + 500e3


def test_earth_coefficients_are_egm96s():
    assert pytest.approx(1.0826267e-3, rel=1e-7) == EARTH_J2
    assert pytest.approx(-2.5326564e-6, rel=1e-6) == EARTH_J3


@pytest.mark.parametrize("r", [[7.0e6, 0.0, 0.0], [3.1e6, -4.2e6, 4.4e6], [1.0e6, 2.0e6, -6.6e6]])
def test_the_zonal_acceleration_is_the_gradient_of_the_potential(r):
    r = np.array(r)
    args = (EARTH_MU, EARTH_RADIUS, EARTH_J2, EARTH_J3)
    h = 1.0
    grad = np.array(
        [(zonal_potential(r + h * e, *args) - zonal_potential(r - h * e, *args)) / (2 * h) for e in np.eye(3)]
    )
    a = zonal_acceleration(r, *args)
    np.testing.assert_allclose(a, grad, rtol=1e-8, atol=1e-7)  # the differences' rounding: ~1e-8
    # the J2 and J3 parts alone, to a tighter measure than the point mass they ride on
    alone = zonal_acceleration(r, *args) - point_mass_acceleration(r, EARTH_MU)
    pm = np.array(
        [
            (
                zonal_potential(r + h * e, EARTH_MU, EARTH_RADIUS, 0.0, 0.0)
                - zonal_potential(r - h * e, EARTH_MU, EARTH_RADIUS, 0.0, 0.0)
            )
            / (2 * h)
            for e in np.eye(3)
        ]
    )
    np.testing.assert_allclose(alone, grad - pm, rtol=1e-5, atol=1e-7)


def test_j3_pulls_along_the_axis_at_the_equator():
    """At the equator J2 pulls radially only and J3 along z: 3/2 J3 mu R^3 / r^5 (P3'(0) = -3/2)."""
    r = np.array([A_LEO, 0.0, 0.0])
    a = zonal_acceleration(r, EARTH_MU, EARTH_RADIUS, EARTH_J2, EARTH_J3)
    assert a[2] == pytest.approx(1.5 * EARTH_J3 * EARTH_MU * EARTH_RADIUS**3 / A_LEO**5, rel=1e-12)
    j2_radial = -1.5 * EARTH_J2 * EARTH_MU * EARTH_RADIUS**2 / A_LEO**4
    assert a[0] == pytest.approx(-EARTH_MU / A_LEO**2 + j2_radial, rel=1e-13)


def test_j2_turns_the_node_at_the_secular_rate():
    """RAAN rate -3/2 n J2 (R/p)^2 cos i (Vallado, eq. 9-41) over 20 orbits of a 500 km, 51.6 deg orbit."""
    inc, a = math.radians(51.6), A_LEO
    n = math.sqrt(EARTH_MU / a**3)
    r0 = np.array([a, 0.0, 0.0])
    v0 = a * n * np.array([0.0, math.cos(inc), math.sin(inc)])

    def f(t, s):
        return np.concatenate([s[3:], zonal_acceleration(s[:3], EARTH_MU, EARTH_RADIUS, EARTH_J2, 0.0)])

    period = 2 * math.pi / n
    sol = solve_ivp(
        f, (0, 20 * period), np.concatenate([r0, v0]), method="DOP853", rtol=1e-11, atol=1e-6, dense_output=True
    )

    def raan(t):
        s = sol.sol(t)
        h = np.cross(s[:3], s[3:])
        return math.atan2(h[0], -h[1])

    # the node at the same argument of latitude, one and twenty orbits on (short-period terms cancel)
    measured = (np.unwrap([raan(period), raan(20 * period)])[1] - np.unwrap([raan(period), raan(20 * period)])[0]) / (
        19 * period
    )
    theory = -1.5 * n * EARTH_J2 * (EARTH_RADIUS / a) ** 2 * math.cos(inc)
    assert measured == pytest.approx(theory, rel=0.02)


def test_gravity_gradient_torque_vanishes_along_principal_axes_and_matches_its_formula():
    inertia = np.diag([10.0, 20.0, 30.0])
    assert np.allclose(gravity_gradient_torque(np.array([A_LEO, 0.0, 0.0]), inertia, EARTH_MU), 0.0)
    r = np.array([A_LEO, A_LEO, 0.0]) / math.sqrt(2.0)
    # about z, for a body at 45 deg in its xy plane: 3 mu / r^3 (Iyy - Ixx) sin(45) cos(45)
    expected = 3 * EARTH_MU / A_LEO**3 * (20.0 - 10.0) * 0.5
    np.testing.assert_allclose(gravity_gradient_torque(r, inertia, EARTH_MU), [0.0, 0.0, expected], rtol=1e-12)


def test_hill_conversions_invert_each_other_and_the_frame_rotates_with_the_orbit():
    rng = np.random.default_rng(3)
    r_c, v_c = np.array([6.9e6, 1.0e5, -2.0e5]), np.array([-100.0, 7.4e3, 1.2e3])
    C = hill_dcm(r_c, v_c)
    np.testing.assert_allclose(C @ C.T, np.eye(3), atol=1e-15)
    assert np.linalg.det(C) == pytest.approx(1.0)
    for _ in range(10):
        rho, rho_dot = rng.normal(size=3) * 1e3, rng.normal(size=3)
        r_d, v_d = hill_to_inertial(r_c, v_c, rho, rho_dot)
        back = inertial_to_hill(r_c, v_c, r_d, v_d)
        np.testing.assert_allclose(back[0], rho, atol=1e-6)
        np.testing.assert_allclose(back[1], rho_dot, atol=1e-9)
    w, _ = hill_rate(r_c, v_c)
    assert w == pytest.approx(np.linalg.norm(np.cross(r_c, v_c)) / (r_c @ r_c))


def test_the_carried_hill_state_is_the_frame_then_the_transition():
    """hill_state_carried (one compiled call) against its definition in the Python functions."""
    rng = np.random.default_rng(11)
    for _ in range(50):
        r_c = rng.normal(size=3) * 7e6
        v_c = np.cross(r_c, rng.normal(size=3))
        v_c *= 7.5e3 / np.linalg.norm(v_c)
        r_d, v_d = r_c + rng.normal(size=3) * 1e3, v_c + rng.normal(size=3)
        n, dt = math.sqrt(EARTH_MU / np.linalg.norm(r_c) ** 3), rng.uniform(0.0, 60.0)
        x, C_NH = hill_state_carried(r_c, v_c, r_d, v_d, n, dt)
        rho, rho_dot = inertial_to_hill(r_c, v_c, r_d, v_d)
        expected = clohessy_wiltshire_transition(n, dt) @ np.concatenate([rho, rho_dot])
        np.testing.assert_allclose(x[:3], expected[:3], rtol=0, atol=1e-9)
        np.testing.assert_allclose(x[3:], expected[3:], rtol=0, atol=1e-12)
        c, s = math.cos(n * dt), math.sin(n * dt)
        turned = hill_dcm(r_c, v_c).T @ np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]])
        np.testing.assert_allclose(C_NH, turned, rtol=0, atol=1e-15)


def test_the_carried_slot_error_is_the_python_functions_float_for_float():
    """slot_error_carried (one compiled call) against what it stands for, bit for bit: the carried
    Hill state (hill_state_carried) less the slot's reference (slot_reference) at the chief's
    argument of latitude (argument_of_latitude) plus n dt; orbits of every inclination, an
    equatorial one (its node: x_N) among them."""
    from hopsim.actors.orbit_formation import passively_safe_roe, slot_reference

    rng = np.random.default_rng(5)
    for k in range(200):
        incl = 0.0 if k % 10 == 0 else rng.uniform(0.0, math.pi)
        r_c, v_c = state_from_elements(
            A_LEO * rng.uniform(0.99, 1.01),
            rng.uniform(0.0, 0.01),
            incl,
            rng.uniform(-3, 3),
            rng.uniform(-3, 3),
            rng.uniform(-3, 3),
            EARTH_MU,
        )
        r_d, v_d = r_c + rng.normal(size=3) * 300.0, v_c + rng.normal(size=3) * 0.3
        n, dt, a_c = math.sqrt(EARTH_MU / A_LEO**3), rng.uniform(0.0, 30.0), A_LEO
        roe = passively_safe_roe(a_c, k, 200, rng.uniform(10, 500), rng.uniform(10, 500))
        e, C_NH = slot_error_carried(r_c, v_c, r_d, v_d, n, dt, a_c, roe)
        x, C_expected = hill_state_carried(r_c, v_c, r_d, v_d, n, dt)
        ref, ref_dot = slot_reference(a_c, n, argument_of_latitude(r_c, v_c) + n * dt, roe)
        expected = np.concatenate([x[:3] - ref, x[3:] - ref_dot])
        assert e.tobytes() == expected.tobytes() and C_NH.tobytes() == C_expected.tobytes()


def test_the_carried_hill_state_is_where_two_body_motion_takes_the_pair():
    """Chief on a circular orbit, deputy 500 m away: both propagated 30 s by two-body motion
    (SciPy), then seen in the chief's Hill frame of that instant, against the state carried by CW
    from the first instant; the frame carried is the chief's Hill frame of the later instant."""
    r_c, v_c = state_from_elements(A_LEO, 0.0, 0.9, 0.2, 0.0, 0.5, EARTH_MU)
    r_d, v_d = hill_to_inertial(r_c, v_c, [200.0, -400.0, 150.0], [0.05, 0.1, -0.08])
    n, dt = math.sqrt(EARTH_MU / A_LEO**3), 30.0

    def two_body(_, y):
        return np.concatenate([y[3:], -EARTH_MU * y[:3] / np.linalg.norm(y[:3]) ** 3])

    later = [
        solve_ivp(two_body, (0.0, dt), np.concatenate(s), method="DOP853", rtol=1e-13, atol=1e-9).y[:, -1]
        for s in ((r_c, v_c), (r_d, v_d))
    ]
    rho, rho_dot = inertial_to_hill(later[0][:3], later[0][3:], later[1][:3], later[1][3:])
    x, C_NH = hill_state_carried(r_c, v_c, r_d, v_d, n, dt)
    np.testing.assert_allclose(x[:3], rho, atol=1e-3)  # CW's error: O(n^2 rho^2 / r dt^2) ~ 1e-4 m
    np.testing.assert_allclose(x[3:], rho_dot, atol=1e-5)
    np.testing.assert_allclose(C_NH, hill_dcm(later[0][:3], later[0][3:]).T, atol=1e-12)


def test_the_argument_of_latitude_is_the_perigee_argument_plus_the_true_anomaly():
    rng = np.random.default_rng(5)
    for _ in range(30):
        e, i, raan, argp, M = rng.uniform(0, 0.3), rng.uniform(0.05, 3.0), *rng.uniform(-math.pi, math.pi, 3)
        r, v = state_from_elements(A_LEO / (1 - e), e, i, raan, argp, M, EARTH_MU)
        E = mean_to_eccentric(M, e)
        nu = 2.0 * math.atan2(math.sqrt(1 + e) * math.sin(E / 2), math.sqrt(1 - e) * math.cos(E / 2))
        assert math.remainder(argument_of_latitude(r, v) - (argp + nu), 2 * math.pi) == pytest.approx(0.0, abs=1e-12)
    # equatorial: measured from x_N
    assert argument_of_latitude([0.0, 7e6, 0.0], [-7.5e3, 0.0, 0.0]) == pytest.approx(math.pi / 2)


def relative_motion(t_s: float, **kw) -> tuple[Simulation, HillRelativeMotion]:
    """The deputy after ``t_s``: hops of 100 s, RK4 steps of 10 s (n h = 0.011 rad)."""
    sim = Simulation(seed=1)
    sim.add_island("deputy", n_integration_steps=10)
    model = sim.add_model(HillRelativeMotion("deputy", A_LEO, rate_hz=0.01, **kw), "deputy")
    sim.advance_to(t_s)
    return sim, model


def test_relative_motion_linearizes_to_clohessy_wiltshire():
    sim, model = relative_motion(300.0)
    states = [f"deputy.{s}" for s in model.state_names]
    inputs = [f"deputy.thrust_accel_H[{i}]" for i in range(3)]
    A, B, *_ = linearize_simulation(sim, states, inputs, scheme="central4", eps=1e-2)
    n = math.sqrt(EARTH_MU / A_LEO**3)
    np.testing.assert_allclose(A, clohessy_wiltshire_matrix(n), atol=1e-12 * n * n * 1e6)
    np.testing.assert_allclose(B, np.vstack([np.zeros((3, 3)), np.eye(3)]), atol=1e-9)


def test_the_nonlinear_relative_motion_keeps_exact_orbits():
    """A deputy on the chief's orbit 2 km behind stays where it is in the Hill frame (the nonlinear
    model: its exact position is a chord, not the CW's straight line); a CW 2:1 ellipse closes
    after one orbit to within the linearization's error."""
    n = math.sqrt(EARTH_MU / A_LEO**3)
    theta = -2000.0 / A_LEO
    behind = [A_LEO * (math.cos(theta) - 1.0), A_LEO * math.sin(theta), 0.0]
    period = 2 * math.pi / n
    _, model = relative_motion(period, rho_H=behind)
    np.testing.assert_allclose(model.x[:3], behind, atol=1e-3)
    np.testing.assert_allclose(model.x[3:], 0.0, atol=1e-6)
    # CW: x = 100 m, y' = -2 n x gives a closed ellipse in the linear system
    _, model = relative_motion(period, rho_H=[100.0, 0.0, 0.0], rho_dot_H=[0.0, -2 * n * 100.0, 0.0])
    np.testing.assert_allclose(model.x[:3], [100.0, 0.0, 0.0], atol=0.5)
