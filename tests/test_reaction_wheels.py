"""Reaction wheels: momentum moves between wheels and body and the total is conserved (motor and
friction torques are internal), a wheel spun up from rest turns the body as H = 0 says, viscous
friction spins a free wheel down at the analytic rate, and a failed wheel exerts no torque."""

import math

import numpy as np
import pytest

from hopsim.actors.reaction_wheels import ReactionWheelSpacecraft
from hopsim.dynamics.spatial import quat_to_dcm
from hopsim.kernel import Simulation
from hopsim.schemas import Fault, ReactionWheelCommand, Vector3

INERTIA = np.diag([10.0, 12.0, 8.0])


def spacecraft(steps=20, **kw):
    sim = Simulation(seed=1)
    sim.add_island("sc", n_integration_steps=steps)
    model = sim.add_model(ReactionWheelSpacecraft("sc", INERTIA, **kw), "sc", ties={"torque_cmd": "sc/rw_cmd"})
    return sim, model


def H_N(model, x=None):
    x = model.x if x is None else x
    return quat_to_dcm(x[0:4]) @ model.angular_momentum_B(x)


def test_spin_up_from_rest_turns_the_body_as_zero_momentum_says():
    """One wheel on z, torque u from rest: I_zz omega + u t = 0, so omega = -u t / I_zz, the wheel
    turns at u t (1/J + 1/I_zz) and the body through -u t^2 / (2 I_zz) about z."""
    u, J, T = 0.01, 0.05, 50.0
    sim, model = spacecraft(axes_B=[(0, 0, 1)], J_kgm2=J, rate_hz=1.0)
    sim.inject("sc/rw_cmd", ReactionWheelCommand(torque_Nm=[u]), 1e-9)
    sim.advance_to(T)
    t = T - 1e-9  # the command arrives with a barrier of its own at 1 ns
    assert model.x[6] == pytest.approx(-u * t / 8.0, rel=1e-9)
    assert model.x[7] == pytest.approx(u * t * (1 / J + 1 / 8.0), rel=1e-9)
    theta = -u * t * t / (2 * 8.0)
    assert np.allclose(model.x[0:4], [0, 0, math.sin(theta / 2), math.cos(theta / 2)], atol=1e-8)
    assert np.linalg.norm(H_N(model)) < 1e-12


def test_total_angular_momentum_is_conserved_while_wheels_and_friction_work():
    axes = [(1, 0, 0), (0, 1, 0), (0, 0, 1), (1 / math.sqrt(3),) * 3]
    sim, model = spacecraft(
        axes_B=axes,
        J_kgm2=0.04,
        omega_BN_B=(0.05, -0.03, 0.08),
        Omega_radps=(100, -50, 20, 0),
        viscous_Nms=1e-4,
        coulomb_Nm=2e-3,
        coulomb_speed_radps=0.5,
        rate_hz=2.0,
    )
    H0 = H_N(model, model.x0)
    rng = np.random.default_rng(5)
    for k in range(20):
        sim.inject("sc/rw_cmd", ReactionWheelCommand(torque_Nm=rng.uniform(-0.05, 0.05, 4).tolist()), 10.0 * k + 0.5)
    worst = 0.0
    for t in np.arange(10.0, 201.0, 10.0):
        sim.advance_to(t)
        worst = max(worst, np.linalg.norm(H_N(model) - H0) / np.linalg.norm(H0))
    assert worst < 1e-9
    assert np.abs(model.x[7:] - np.array([100, -50, 20, 0])).max() > 1.0  # momentum did move


def test_viscous_friction_spins_a_free_wheel_down_at_the_analytic_rate():
    """No motor torque, H = 0 about z: h' = -c Omega = -c (1/J + 1/I_zz) h."""
    J, c, Omega0, T = 0.05, 2e-3, 300.0, 60.0
    sim, model = spacecraft(
        axes_B=[(0, 0, 1)],
        J_kgm2=J,
        Omega_radps=[Omega0],
        omega_BN_B=(0, 0, -J * Omega0 / (8.0 + J)),
        viscous_Nms=c,
        rate_hz=1.0,
        steps=50,
    )
    h0 = J * (model.x0[6] + Omega0)
    sim.advance_to(T)
    h = J * (model.x[6] + model.x[7])
    assert h == pytest.approx(h0 * math.exp(-c * (1 / J + 1 / 8.0) * T), rel=1e-9)


def test_a_failed_wheel_exerts_no_torque():
    sim, model = spacecraft(axes_B=[(0, 0, 1), (1, 0, 0)], J_kgm2=0.05, rate_hz=1.0)
    sim.schedule_fault(Fault(target="sc", kind="wheel_failed", index=0), 0.5)
    sim.inject("sc/rw_cmd", ReactionWheelCommand(torque_Nm=[0.02, 0.0]), 0.5)
    sim.advance_to(20.0)
    assert np.allclose(model.x[4:9], 0.0, atol=1e-15)
    with pytest.raises(ValueError, match="must be positive"):
        ReactionWheelSpacecraft("bad", INERTIA, axes_B=[(0, 0, 1)], J_kgm2=float("nan"))


def test_a_disturbance_torque_adds_its_angular_impulse():
    """tau about z for 10 s on a body at rest: the total angular momentum grows by tau * 10 (z stays
    the body's and N's common axis), then stays."""
    sim, model = spacecraft(axes_B=[(1, 0, 0)], J_kgm2=0.05, rate_hz=1.0)
    sim.schedule_fault(Fault(target="sc", kind="disturbance", torque_B=Vector3(z=0.03), duration_s=10.0), 2.0)
    sim.advance_to(30.0)
    assert np.allclose(H_N(model), [0.0, 0.0, 0.3], rtol=0, atol=1e-12)


@pytest.mark.parametrize(
    "fault, message",
    [
        (Fault(target="sc", kind="wheel_failed", index=1), "no wheel 1; it has 1"),
        (Fault(target="sc", kind="torque_scale", index=-2, value=0.5), "no wheel -2"),
        (
            Fault(target="sc", kind="torque_scale", index=0, value=float("inf")),
            r"value must lie in \[-1e\+09, 1e\+09\]",
        ),  # the bounds every fault value shares
    ],
    ids=["index out of range", "index below -1", "infinite scale"],
)
def test_a_bad_wheel_fault_is_an_error(fault, message):
    """Refused when it is scheduled (the model's check_fault), before the run meets it."""
    sim, _ = spacecraft(axes_B=[(0, 0, 1)], J_kgm2=0.05, rate_hz=1.0)
    with pytest.raises(ValueError, match=message):
        sim.schedule_fault(fault, 0.5)
    sim.advance_to(2.0)  # nothing was sent
