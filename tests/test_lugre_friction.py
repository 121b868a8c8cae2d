"""LuGre bearing friction on reaction wheels (Canudas de Wit, Olsson, Astrom and Lischinsky, IEEE
TAC 40(3), 1995) against independent references: at constant speed the friction follows the closed-
form solution of the bristle equation and settles on the Stribeck curve g(v) sign(v) + sigma_2 v;
near rest a wheel moves as a mass on a spring of stiffness sigma_0 (closed form); the total angular
momentum stays constant; the step rule of BearingFriction holds and an unstable integration raises.
The default friction ("coulomb_viscous") keeps its state layout."""

import math

import numpy as np
import pytest

from hopsim.actors.orbiting_spacecraft import OrbitingSpacecraft
from hopsim.actors.reaction_wheels import ReactionWheelSpacecraft
from hopsim.bus.recorder import MemoryRecorder
from hopsim.dynamics.gravity import EARTH_MU
from hopsim.dynamics.integrators import RK4
from hopsim.dynamics.orbital_elements import state_from_elements
from hopsim.dynamics.spatial import quat_to_dcm
from hopsim.dynamics.wheels import BearingFriction, wheel_friction
from hopsim.kernel import Simulation
from hopsim.schemas import ReactionWheelCommand

FC, FS, VS, S2 = 2e-3, 3e-3, 0.1, 1e-4  # N m, N m, rad/s, N m s/rad
LUGRE = dict(friction="lugre", coulomb_Nm=FC, static_Nm=FS, stribeck_speed_radps=VS, viscous_Nms=S2)
PYRAMID = [
    (math.cos(math.radians(30)) * math.cos(az), math.cos(math.radians(30)) * math.sin(az), math.sin(math.radians(30)))
    for az in np.radians([0.0, 90.0, 180.0, 270.0])
]


def g(v):
    """The Stribeck curve's magnitude (N m), written out from the paper."""
    return FC + (FS - FC) * np.exp(-((np.asarray(v) / VS) ** 2))


def spacecraft(inertia_B, duration_s, steps, rate_hz, commands=(), **kw):
    """A ReactionWheelSpacecraft on RK4 with ``steps`` steps per I/O step; returns it and its
    ``wheels`` messages."""
    recorder = MemoryRecorder()
    sim = Simulation(seed=1, recorder=recorder)
    sim.add_island("sc", integrator=RK4(), n_integration_steps=steps)
    model = sim.add_model(
        ReactionWheelSpacecraft("sc", inertia_B, rate_hz=rate_hz, **kw),
        "sc",
        ties={"torque_cmd": "sc/rw_cmd", "wheels": "sc/wheels"},
    )
    for t, torques in commands:
        sim.inject("sc/rw_cmd", ReactionWheelCommand(torque_Nm=torques), t)
    sim.advance_to(duration_s)
    recorder.flush()
    return model, [e.payload for e in recorder.envelopes if e.topic == "sc/wheels"]


def test_at_constant_speed_lugre_settles_on_the_stribeck_curve():
    """Wheels and body of 1e6 and 1e9 kg m^2 keep their speeds (they change by < 2e-8 rad/s in
    5 s): from z = 0 the friction follows F = sigma_0 z + sigma_1 z' + sigma_2 v with z the
    solution of z' = v - sigma_0 |v| z / g(v) at constant v,
    z = sign(v) g(v) / sigma_0 (1 - exp(-sigma_0 |v| t / g(v))) (within 1e-6 F_c; RK4's h = 2 ms
    against the fastest bristle rate, 250/s), and ends on g(v) sign(v) + sigma_2 v (within
    1e-7 F_c) at speeds across the Stribeck dip."""
    s0, s1, speeds, T = 0.5, 0.02, [0.03, 0.1, -0.25, 1.0], 5.0
    _model, wheels = spacecraft(
        np.eye(3) * 1e9,
        T,
        50,
        10.0,
        axes_B=[(1, 0, 0), (0, 1, 0), (0, 0, 1), (0, 0, -1)],
        J_kgm2=1e6,
        Omega_radps=speeds,
        bristle_stiffness_Nmprad=s0,
        bristle_damping_Nmsprad=s1,
        **LUGRE,
    )
    t = np.array([w.t_ns for w in wheels]) * 1e-9
    F = np.array([w.friction_torque_Nm for w in wheels])
    assert np.abs(np.array([w.speed_radps for w in wheels]) - speeds).max() < 2e-8
    for i, v in enumerate(speeds):
        z = np.sign(v) * g(v) / s0 * (1 - np.exp(-s0 * abs(v) * t / g(v)))
        assert np.abs(F[:, i] - (s0 * z + s1 * (v - s0 * abs(v) * z / g(v)) + S2 * v)).max() < 1e-6 * FC
    v = np.array(wheels[-1].speed_radps)
    assert np.abs(F[-1] - (g(v) * np.sign(v) + S2 * v)).max() < 1e-7 * FC
    assert np.ptp(g(np.array(speeds))) > 0.9 * (FS - FC)  # the speeds span the dip


@pytest.mark.parametrize("ratio", [1e-3, 1e-2])
def test_near_rest_lugre_is_a_spring_of_stiffness_sigma0(ratio):
    """One wheel on z from rest, H = 0, a motor torque u = ratio * F_c: the wheel's angle theta
    relative to the body obeys J_eff theta'' + (sigma_1 + sigma_2) theta' + sigma_0 theta = u
    (1/J_eff = 1/J + 1/I_zz) while its displacement u/sigma_0 is much smaller than
    F_c/sigma_0, the closed-form damped oscillation. Speed, friction sigma_0 theta +
    (sigma_1 + sigma_2) theta' and the bristle deflection z = theta agree with it to within the
    displacement's fraction of F_c/sigma_0 (the term sigma_0 |v| z / g left out)."""
    J, Izz, s0, s1, u = 0.05, 8.0, 1.0, 0.05, ratio * FC
    model, wheels = spacecraft(
        np.diag([10.0, 12.0, Izz]),
        3.0,
        10,
        20.0,
        commands=[(0.0, [u])],
        axes_B=[(0, 0, 1)],
        J_kgm2=J,
        bristle_stiffness_Nmprad=s0,
        bristle_damping_Nmsprad=s1,
        **LUGRE,
    )
    J_eff, c = 1 / (1 / J + 1 / Izz), s1 + S2
    wn, zeta = math.sqrt(s0 / J_eff), c / (2 * math.sqrt(s0 * J_eff))
    wd = wn * math.sqrt(1 - zeta**2)
    t = np.array([w.t_ns for w in wheels]) * 1e-9
    decay = np.exp(-zeta * wn * t)
    theta = u / s0 * (1 - decay * (np.cos(wd * t) + zeta / math.sqrt(1 - zeta**2) * np.sin(wd * t)))
    theta_dot = u / s0 * wn / math.sqrt(1 - zeta**2) * decay * np.sin(wd * t)
    speed = np.array([w.speed_radps[0] for w in wheels])
    F = np.array([w.friction_torque_Nm[0] for w in wheels])
    assert np.abs(speed - theta_dot).max() < ratio * np.abs(theta_dot).max()
    assert np.abs(F - (s0 * theta + c * theta_dot)).max() < ratio * u
    assert model.x[8] == pytest.approx(theta[-1], rel=ratio)
    assert t[-1] * wn > 2 * 2 * math.pi  # two periods sampled


def test_lugre_conserves_total_angular_momentum():
    """Four wheels under random commands that reverse them through zero speed (stiction), on RK4
    with the steps BearingFriction.max_step_s asks for (0.025 s < 0.046 s): the friction is
    internal, H_N stays constant to 1e-9 relative, and z stays within its bound."""
    rng = np.random.default_rng(5)
    commands = [(10.0 * k + 0.5, rng.uniform(-5e-3, 5e-3, 4).tolist()) for k in range(6)]
    model, wheels = spacecraft(
        np.diag([10.0, 12.0, 8.0]),
        60.0,
        20,
        2.0,
        commands,
        axes_B=PYRAMID,
        J_kgm2=0.04,
        omega_BN_B=(0.05, -0.03, 0.08),
        Omega_radps=(2, -1, 0.5, 0),
        bristle_stiffness_Nmprad=0.05,
        bristle_damping_Nmsprad=0.01,
        **LUGRE,
    )
    speeds = np.array([w.speed_radps for w in wheels])
    assert min(model.bearings.max_step_s(s, model.effective_inertia()) for s in speeds) > 0.5 / 20
    assert np.all(speeds.max(axis=0) > 0) and np.all(speeds.min(axis=0) < 0)  # every wheel reversed
    H0 = quat_to_dcm(model.x0[0:4]) @ model.angular_momentum_B(model.x0)
    H = quat_to_dcm(model.x[0:4]) @ model.angular_momentum_B()
    assert np.linalg.norm(H - H0) / np.linalg.norm(H0) < 1e-9
    assert np.all(np.abs(model.x[11:]) <= model.bearings.z_bound)


def test_lugre_on_an_orbiting_spacecraft_with_the_orbit_tests_integrator():
    """OrbitingSpacecraft with LuGre wheels on the integrator of its other wheel tests (RK4,
    10 steps a second), soft bristles (sigma_0 = 0.01 N m/rad) for which that step is stable:
    four more states z_i after the wheel speeds, H_N constant to 1e-9 relative."""
    sim = Simulation(seed=1)
    sim.add_island("sc", integrator=RK4(), n_integration_steps=10)
    r, v = state_from_elements(6.9e6, 0.01, 0.9, 0.1, 0.2, 0.3, EARTH_MU)
    model = sim.add_model(
        OrbitingSpacecraft(
            "sc",
            r,
            v,
            100.0,
            np.diag([40.0, 50.0, 30.0]),
            gravity_gradient=False,
            omega_BN_B=(0.02, -0.01, 0.03),
            axes_B=PYRAMID,
            J_kgm2=0.05,
            Omega_radps=(1.0, -0.5, 0.2, 0.0),
            bristle_stiffness_Nmprad=0.01,
            bristle_damping_Nmsprad=0.005,
            **LUGRE,
        ),
        "sc",
        ties={"torque_cmd": "sc/rw_cmd"},
    )
    assert model.state_names[13:] == ("Omega0", "Omega1", "Omega2", "Omega3", "z0", "z1", "z2", "z3")
    rng = np.random.default_rng(5)
    for k in range(4):
        sim.inject("sc/rw_cmd", ReactionWheelCommand(torque_Nm=rng.uniform(-5e-3, 5e-3, 4).tolist()), 10.0 * k)
    H_N = lambda x: quat_to_dcm(x[6:10]) @ model.angular_momentum_B(x)  # noqa: E731
    H0, worst = H_N(model.x0), 0.0
    for t in range(5, 41, 5):
        sim.advance_to(float(t))
        assert model.bearings.max_step_s(model.x[13:17], model.effective_inertia()) > 0.1
        worst = max(worst, np.linalg.norm(H_N(model.x) - H0) / np.linalg.norm(H0))
    assert worst < 1e-9
    assert np.abs(model.x[17:]).max() > 0.1 * model.bearings.z_bound.min()  # the bristles did deflect


@pytest.mark.filterwarnings("ignore:overflow:RuntimeWarning", "ignore:invalid value:RuntimeWarning")
def test_a_step_beyond_the_stability_limit_raises_instead_of_going_on():
    """Stiff bristles (sigma_0 = 100 N m/rad on J = 0.04 kg m^2: the pre-sliding spring at
    50 rad/s): RK4 steps of 0.9 max_step_s run, steps of 1.5 max_step_s (beyond RK4's limit
    2.83 / 50 s) raise at the end of the first hop, naming the step."""
    kw = dict(axes_B=[(0, 0, 1)], J_kgm2=0.04, bristle_stiffness_Nmprad=100.0, commands=[(0.0, [1e-3])], **LUGRE)
    probe = ReactionWheelSpacecraft(
        "p", np.diag([10.0, 12.0, 8.0]), axes_B=[(0, 0, 1)], J_kgm2=0.04, bristle_stiffness_Nmprad=100.0, **LUGRE
    )
    h_max = probe.bearings.max_step_s(np.zeros(1), probe.effective_inertia())
    assert h_max == pytest.approx(2.5 * math.sqrt(probe.effective_inertia()[0] / 100.0), rel=1e-12)
    model, _ = spacecraft(np.diag([10.0, 12.0, 8.0]), 5.0, math.ceil(1 / (0.9 * h_max)), 1.0, **kw)
    assert abs(model.x[8]) <= model.bearings.z_bound[0]
    with pytest.raises(RuntimeError, match=r"unstable.*RK4 needs steps under about 0\.0499 s.*hop was 1 s"):
        spacecraft(np.diag([10.0, 12.0, 8.0]), 5.0, math.floor(1 / (1.5 * h_max)), 1.0, **kw)


def test_the_friction_choice_is_checked_and_the_default_layout_kept():
    inertia = np.diag([10.0, 12.0, 8.0])
    with pytest.raises(ValueError, match=r"friction must be one of \['coulomb_viscous', 'lugre'\], got 'dahl'"):
        ReactionWheelSpacecraft("sc", inertia, axes_B=[(0, 0, 1)], J_kgm2=0.05, friction="dahl")
    with pytest.raises(ValueError, match="needs bristle_stiffness_Nmprad"):
        ReactionWheelSpacecraft("sc", inertia, axes_B=[(0, 0, 1)], J_kgm2=0.05, friction="lugre", coulomb_Nm=FC)
    with pytest.raises(ValueError, match="coulomb_Nm must be positive"):
        ReactionWheelSpacecraft(
            "sc", inertia, axes_B=[(0, 0, 1)], J_kgm2=0.05, friction="lugre", bristle_stiffness_Nmprad=1.0
        )
    with pytest.raises(ValueError, match="bristle_stiffness_Nmprad: parameters of friction 'lugre', not of"):
        ReactionWheelSpacecraft("sc", inertia, axes_B=[(0, 0, 1)], J_kgm2=0.05, bristle_stiffness_Nmprad=1.0)
    with pytest.raises(ValueError, match="friction must be one of"):
        OrbitingSpacecraft("sc", (7e6, 0, 0), (0, 7.5e3, 0), 100.0, inertia, axes_B=[(0, 0, 1)], friction="LuGre")
    plain = ReactionWheelSpacecraft("sc", inertia, axes_B=[(0, 0, 1), (1, 0, 0)], J_kgm2=0.05)
    assert plain.state_names == ("qx", "qy", "qz", "qw", "wx", "wy", "wz", "Omega0", "Omega1")
    lugre = ReactionWheelSpacecraft(
        "sc", inertia, axes_B=[(0, 0, 1), (1, 0, 0)], J_kgm2=0.05, bristle_stiffness_Nmprad=1.0, **LUGRE
    )
    assert lugre.state_names == (*plain.state_names, "z0", "z1") and len(lugre.x0) == 11
    assert len(OrbitingSpacecraft("sc", (7e6, 0, 0), (0, 7.5e3, 0), 100.0, inertia, axes_B=[(0, 0, 1)]).x0) == 14
    Omega = np.linspace(-1.0, 1.0, 9)
    bearings = BearingFriction("sc", 9, viscous_Nms=1e-4, coulomb_Nm=2e-3, coulomb_speed_radps=0.3)
    f, z_dot = bearings.torques(Omega, np.zeros(0))
    np.testing.assert_array_equal(f, wheel_friction(Omega, np.full(9, 1e-4), np.full(9, 2e-3), np.full(9, 0.3)))
    assert z_dot.shape == (0,)
