"""The rigid-vehicle dynamics actor inside the kernel, against analytic solutions and SciPy."""

import numpy as np
import pytest
from scipy.integrate import solve_ivp
from scipy.spatial.transform import Rotation

from hopsim.actors.vehicle_dynamics import RigidVehicleDynamics
from hopsim.bus import MemoryRecorder
from hopsim.kernel import ContinuousModel, NoIo, Simulation

INERTIA = np.diag([0.0229, 0.0242, 0.0214])  # SPHERES-like (kg m^2)


class Push(ContinuousModel):
    """A constant body-frame force at a point (a stuck thruster)."""

    io_schedule = NoIo()

    def __init__(self, name, body, force_B, point_B=None, force_N=None):
        super().__init__(name)
        self.body, self.force_B, self.point_B, self.force_N = body, force_B, point_B, force_N

    def pre_deriv(self, t):
        if self.force_B is not None:
            self.body.add_force_B(self.force_B, self.point_B)
        if self.force_N is not None:
            self.body.add_force_N(self.force_N)


def test_constant_inertial_force_gives_the_parabola():
    sim = Simulation()
    sim.add_island("v", n_integration_steps=4)
    body = sim.add_model(RigidVehicleDynamics("sph", 4.3, INERTIA, r_BN_N=(1, 2, 3), v_BN_N=(0.1, 0, -0.2)), "v")
    sim.add_model(Push("push", body, None, force_N=np.array([0.13, -0.26, 0.0])), "v")
    sim.advance_to(20.0)
    t = 20.0
    a = np.array([0.13, -0.26, 0.0]) / 4.3
    expected = np.array([1, 2, 3]) + np.array([0.1, 0, -0.2]) * t + 0.5 * a * t * t
    assert np.allclose(body.r_BN_N, expected, rtol=0, atol=1e-12)


def euler_rhs(t, y, inertia):
    """Torque-free rigid body, independent of hopsim: quaternion (x,y,z,w) and body rates."""
    q, w = y[:4], y[4:]
    qx, qy, qz, qw = q
    omega_mat = 0.5 * np.array([[qw, -qz, qy], [qz, qw, -qx], [-qy, qx, qw], [-qx, -qy, -qz]])
    wdot = np.linalg.solve(inertia, -np.cross(w, inertia @ w))
    return np.concatenate([omega_mat @ w, wdot])


def test_tumbling_body_matches_scipy_and_conserves_momentum_and_energy():
    w0 = np.array([0.3, -1.1, 0.7])
    q0 = Rotation.from_euler("xyz", [0.2, -0.4, 1.0]).as_quat()
    sim = Simulation()
    sim.add_island("v", n_integration_steps=20)
    body = sim.add_model(RigidVehicleDynamics("sph", 4.3, INERTIA, q_BN=q0, omega_BN_B=w0, rate_hz=10.0), "v")
    sim.advance_to(30.0)
    ref = solve_ivp(
        euler_rhs, (0, 30.0), np.concatenate([q0, w0]), args=(INERTIA,), method="DOP853", rtol=1e-12, atol=1e-12
    )
    q_ref = ref.y[:4, -1] / np.linalg.norm(ref.y[:4, -1])
    q_ref *= np.sign(q_ref[3])
    assert np.allclose(body.omega_BN_B, ref.y[4:, -1], atol=1e-7)
    assert np.allclose(body.q_BN, q_ref, atol=1e-7)
    # angular momentum in N and kinetic energy
    R0, R1 = Rotation.from_quat(q0).as_matrix(), Rotation.from_quat(body.q_BN).as_matrix()
    h0, h1 = R0 @ INERTIA @ w0, R1 @ INERTIA @ body.omega_BN_B
    assert np.allclose(h0, h1, atol=1e-9)
    w1 = body.omega_BN_B
    assert w0 @ INERTIA @ w0 == pytest.approx(w1 @ INERTIA @ w1, rel=1e-9)


def test_off_centre_force_spins_the_body_about_its_centre_of_mass():
    """A force F at p (from B) with the CM at c: I_C wdot = (p - c) x F at rest."""
    c = np.array([0.001, -0.002, 0.0015])
    sim = Simulation()
    rec = MemoryRecorder()
    sim.recorder = rec
    sim.add_island("v", n_integration_steps=1, end_of_step_derivative=True)
    body = sim.add_model(RigidVehicleDynamics("sph", 4.3, INERTIA, r_CB_B=c, rate_hz=100.0), "v")
    F, p = np.array([0.0, 0.13, 0.0]), np.array([0.0965, 0.0, 0.0])
    sim.add_model(Push("thruster", body, F, point_B=p), "v")
    sim.advance_to(0.01)
    state = [e.payload for e in rec.envelopes if e.topic == "v/state"][-1]
    wdot = np.array([state.omega_dot_BN_B.x, state.omega_dot_BN_B.y, state.omega_dot_BN_B.z])
    expected = np.linalg.solve(INERTIA, np.cross(p - c, F))
    assert np.allclose(wdot, expected, rtol=1e-3, atol=1e-6)  # after 10 ms of spin-up
    a = np.array([state.a_BN_N.x, state.a_BN_N.y, state.a_BN_N.z])
    # the published acceleration is the body origin's: a_B = F/m - wdot x c (at rest, R ~ I)
    assert np.allclose(a, F / 4.3 - np.cross(expected, c), rtol=1e-3, atol=1e-7)


def test_bad_inertia_is_rejected_with_the_reason():
    with pytest.raises(ValueError, match="positive-definite"):
        RigidVehicleDynamics("x", 1.0, np.diag([1.0, -1.0, 1.0]))
