"""Linearization by finite differences: the schemes' exact difference quotients on an analytic
system, and the SPHERES vehicle's rigid-body Jacobian against Euler's equations."""

import math

import numpy as np
import pytest

from hopsim.kernel import ContinuousModel, FixedRate, Out, Simulation
from hopsim.scenarios.linearize import linearize_simulation
from hopsim.scenarios.registry import ScenarioError
from hopsim.schemas import Scalar

G, L_M, M_KG, C_NMS = 9.81, 0.5, 2.0, 0.3


class Pendulum(ContinuousModel):
    """theta (rad), omega (rad/s); a torque ``torque_Nm`` (N m) at the pivot, viscous damping
    ``C_NMS`` (N m s); outputs sin(theta) and the angular acceleration (rad/s^2)."""

    state_names = ("theta", "omega")
    outputs = {"sin_theta": Out(Scalar), "alpha": Out(Scalar)}
    io_schedule = FixedRate(10.0)

    def __init__(self, name):
        super().__init__(name)
        self.torque_Nm = 0.0

    def initial_state(self):
        return np.array([1.0, 0.0])

    def post_deriv(self, t_s):
        theta, omega = self.x
        self.xdot[0] = omega
        self.xdot[1] = -G / L_M * math.sin(theta) + (self.torque_Nm - C_NMS * omega) / (M_KG * L_M**2)

    def update_flow_outs(self, t_ns):
        self.write("sin_theta", Scalar(value=math.sin(self.x[0])))
        self.write("alpha", Scalar(value=float(self.xdot[1])))


def pendulum_at(t_s: float) -> tuple[Simulation, Pendulum]:
    sim = Simulation(seed=1)
    sim.add_island("pivot", n_integration_steps=10)
    body = sim.add_model(Pendulum("pendulum"), "pivot")
    sim.advance_to(t_s)
    return sim, body


def test_the_jacobians_of_a_pendulum_are_the_analytic_ones():
    sim, body = pendulum_at(0.7)
    theta0, omega0 = body.x
    A, B, C, D, x0, u0, y0 = linearize_simulation(
        sim,
        ["pendulum.theta", "pendulum.omega"],
        ["pendulum.torque_Nm"],
        ["pendulum.sin_theta.value", "pendulum.alpha.value"],
        scheme="central4",
        eps=1e-4,
    )
    k = 1.0 / (M_KG * L_M**2)
    assert x0.tolist() == [theta0, omega0] and u0.tolist() == [0.0]
    np.testing.assert_allclose(A, [[0.0, 1.0], [-G / L_M * math.cos(theta0), -C_NMS * k]], rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(B, [[0.0], [k]], rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(C, [[math.cos(theta0), 0.0], A[1]], rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(D, [[0.0], [k]], rtol=1e-9, atol=1e-12)
    assert y0[0] == math.sin(theta0)
    # the simulation is left as it was: it runs on exactly as an untouched one
    sim.advance_to(1.5)
    _twin, twin_body = pendulum_at(1.5)
    assert body.x.tolist() == twin_body.x.tolist()


@pytest.mark.parametrize("scheme", ["central2", "central4", "richardson"])
def test_each_scheme_is_its_own_difference_quotient(scheme):
    """d sin(theta)/d theta by each scheme with a large step h has a closed form (cos theta times a
    function of h): the quotient computed is exactly the scheme's, with its order of accuracy."""
    sim, body = pendulum_at(0.7)
    theta0 = body.x[0]
    h = 0.05

    def quotient(h):
        C = linearize_simulation(sim, ["pendulum.theta"], [], ["pendulum.sin_theta.value"], scheme=scheme, eps=h)[2]
        return C[0, 0]

    d2 = lambda h: math.cos(theta0) * math.sin(h) / h  # noqa: E731
    expected = {
        "central2": d2(h),
        "central4": math.cos(theta0) * (8 * math.sin(h) - math.sin(2 * h)) / (6 * h),
        "richardson": (4 * d2(h / 2) - d2(h)) / 3,
    }[scheme]
    assert quotient(h) == pytest.approx(expected, rel=1e-12)
    order = {"central2": 2, "central4": 4, "richardson": 4}[scheme]
    ratio = (quotient(h) - math.cos(theta0)) / (quotient(h / 2) - math.cos(theta0))
    assert ratio == pytest.approx(2**order, rel=0.02)


def test_a_relative_step_follows_dshell():
    """eps1 scales the step with the value: h = eps + eps1 eps |v|."""
    sim, body = pendulum_at(0.7)
    theta0 = body.x[0]
    eps, eps1 = 0.01, 3.0
    h = eps + eps1 * eps * abs(theta0)
    C = linearize_simulation(sim, ["pendulum.theta"], [], ["pendulum.sin_theta.value"], eps=eps, eps1=eps1)[2]
    assert C[0, 0] == pytest.approx(math.cos(theta0) * math.sin(h) / h, rel=1e-12)
    with pytest.raises(ScenarioError, match="eps1 must be 0 with Richardson"):
        linearize_simulation(sim, ["pendulum.theta"], scheme="richardson", eps1=1.0)


@pytest.mark.parametrize(
    "bad, message",
    [
        ({"states": ["pendulum.phi"]}, "continuous states theta, omega"),
        ({"states": ["nobody.theta"]}, "no model 'nobody'"),
        ({"inputs": ["pendulum.torque"]}, "not a public float"),
        ({"outputs": ["pendulum.sin_theta"]}, "MODEL.PORT.FIELD"),
        ({"outputs": ["pendulum.sin_theta.nothing"]}, "no field 'nothing'"),
        ({"scheme": "forward"}, "unknown scheme"),
        ({"eps": float("nan")}, "eps must be positive"),
    ],
)
def test_bad_names_and_options_are_explained(bad, message):
    sim, _ = pendulum_at(0.2)
    args = {"states": ["pendulum.theta"], **bad}
    with pytest.raises(ScenarioError, match=message):
        linearize_simulation(sim, **args)


def _skew(w):
    return np.array([[0.0, -w[2], w[1]], [w[2], 0.0, -w[0]], [-w[1], w[0], 0.0]])


def _quat_times(p, q):
    """Hamilton product p q, scalar-last."""
    pv, pw, qv, qw = p[:3], p[3], q[:3], q[3]
    return np.concatenate([pw * qv + qw * pv + np.cross(pv, qv), [pw * qw - pv @ qv]])


def test_the_spheres_vehicle_linearizes_to_euler_equations():
    """sph1 (the leader) of the SPHERES leader-follower run, mid-manoeuvre (thrusters, estimator and control
    running), made to tumble: the rigid-body blocks of A and B against Euler's equations and quaternion kinematics
    with the seed's mass and inertia; the outputs (the published state) select the states."""
    from hopsim.scenarios.linearize import expand_states
    from hopsim.scenarios.runner import run_scenario

    # the disturbance input acts once switched on (a disturbance fault of zero force, until cleared)
    switched_on = {"faults": [{"t_s": 1.0, "target": "sph1", "kind": "disturbance"}]}
    sim = run_scenario("leader_follower", switched_on, duration_s=30.0, keep_sim=True).sim
    body = sim.slot("sph1").model
    assert np.abs(body.v_BN_N).max() > 0.01  # translating at T
    body.x[10:13] = [0.12, -0.2, 0.07]  # and tumbling (a state poke at a barrier)
    states = expand_states(sim, ["sph1.*"])
    A, B, C, D, x, _, _ = linearize_simulation(
        sim,
        states,
        ["sph1.disturbance_force_N[0]", "sph1.disturbance_force_N[2]", "sph1.disturbance_torque_B[1]"],
        ["sph1.state.omega_BN_B.y", "sph1.state.v_BN_N.x"],
        scheme="central2",
        eps=1e-6,
    )
    inertia, mass = body.inertia_C_B, body.mass_kg  # its configuration: the seed's numbers
    assert 3.40 < mass < 3.4447  # Table 2.1 less the propellant used
    q, w = x[6:10], x[10:13]
    assert w.tolist() == [0.12, -0.2, 0.07]
    np.testing.assert_allclose(A[0:3, 3:6], np.eye(3), atol=1e-9)
    np.testing.assert_allclose(A[0:3, :3], 0, atol=1e-9)
    # Euler: I wdot = -w x I w + tau  ->  d wdot / d w = I^-1 ([I w]x - [w]x I)
    inv = np.linalg.inv(inertia)
    np.testing.assert_allclose(A[10:13, 10:13], inv @ (_skew(inertia @ w) - _skew(w) @ inertia), atol=1e-7)
    # qdot = q (w, 0) / 2: linear in q and in w
    dq_dq = np.column_stack([0.5 * _quat_times(e, np.append(w, 0.0)) for e in np.eye(4)])
    dq_dw = np.column_stack([0.5 * _quat_times(q, np.append(e, 0.0)) for e in np.eye(3)])
    np.testing.assert_allclose(A[6:10, 6:10], dq_dq, atol=1e-8)
    np.testing.assert_allclose(A[6:10, 10:13], dq_dw, atol=1e-8)
    # a force at the CM in N accelerates by F/m; a body torque turns by I^-1
    np.testing.assert_allclose(B[3:6, 0], [1 / mass, 0, 0], atol=1e-8)
    np.testing.assert_allclose(B[3:6, 1], [0, 0, 1 / mass], atol=1e-8)
    np.testing.assert_allclose(B[10:13, 2], inv[:, 1], rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(B[0:3], 0, atol=1e-9)
    np.testing.assert_allclose(C[0], np.eye(13)[states.index("sph1.omega_y")], atol=1e-8)
    np.testing.assert_allclose(C[1], np.eye(13)[states.index("sph1.v_x")], atol=1e-8)
    np.testing.assert_allclose(D, 0, atol=1e-8)
