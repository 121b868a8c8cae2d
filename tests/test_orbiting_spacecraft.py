"""A spacecraft in Earth orbit: a point-mass orbit against Kepler's solution after 10 orbits
(position, energy, angular momentum), J2's secular drift of the node and of the perigee against
the analytic rates (within 1%), a thruster's push as the velocity it adds, and a fuel tank's mass
properties taken up."""

import math

import numpy as np
import pytest

from hopsim.actors.orbiting_spacecraft import OrbitingSpacecraft
from hopsim.dynamics.gravity import EARTH_MU
from hopsim.dynamics.integrators import DOP853
from hopsim.dynamics.orbital_elements import elements_from_state, state_from_elements
from hopsim.dynamics.spherical_harmonics import GravityField, ggm03s
from hopsim.kernel import Simulation
from hopsim.schemas import Fault, MassProperties, Vector3, Wrench

INERTIA = np.diag([40.0, 50.0, 30.0])


def orbit(elements, duration_s, samples=1, mu=EARTH_MU, **kw):
    """The spacecraft's states at ``samples`` equally spaced instants up to ``duration_s``."""
    sim = Simulation(seed=1)
    sim.add_island("sc", integrator=DOP853(rtol=1e-12, atol=1e-6, max_step=60.0))
    r, v = state_from_elements(*elements, mu)
    model = sim.add_model(OrbitingSpacecraft("sc", r, v, 100.0, INERTIA, mu=mu, rate_hz=1 / 600, **kw), "sc")
    out = []
    for t in np.linspace(0, duration_s, samples + 1)[1:]:
        sim.advance_to(float(t))
        out.append((float(t), model.x.copy()))
    return out, r, v, sim, model


def test_point_mass_orbit_is_keplers_after_ten_orbits():
    el = (7.0e6, 0.05, math.radians(51.6), 0.4, 1.0, 0.3)
    period = 2 * math.pi * math.sqrt(el[0] ** 3 / EARTH_MU)
    [(_t, x)], r0, v0, _, _ = orbit(el, 10 * period)
    r_kepler, _v_kepler = state_from_elements(*el[:5], el[5] + 2 * math.pi * 10, EARTH_MU)
    assert np.linalg.norm(x[0:3] - r_kepler) < 0.05
    energy = lambda r, v: v @ v / 2 - EARTH_MU / np.linalg.norm(r)  # noqa: E731
    assert energy(x[0:3], x[3:6]) == pytest.approx(energy(r0, v0), rel=1e-11)
    assert np.allclose(np.cross(x[0:3], x[3:6]), np.cross(r0, v0), rtol=1e-11, atol=0)


def test_j2_turns_the_node_and_the_perigee_at_the_secular_rates():
    """Vallado (2013) eq. 9-41: node' = -3/2 n J2 (R/p)^2 cos i, perigee' = 3/4 n J2 (R/p)^2
    (4 - 5 sin^2 i); fitted over 40 orbits sampled 16 times each (the short-period terms average)."""
    base = ggm03s()
    C, S = np.zeros((3, 3)), np.zeros((3, 3))
    C[0, 0], C[2, 0] = 1.0, base.C[2, 0]
    j2_only = GravityField("J2", base.mu, base.radius, C, S)
    j2 = -C[2, 0] * math.sqrt(5.0)
    el = (7.2e6, 0.05, math.radians(40.0), 0.4, 1.0, 0.3)
    period = 2 * math.pi * math.sqrt(el[0] ** 3 / base.mu)
    states, *_ = orbit(el, 40 * period, samples=640, mu=base.mu, field=j2_only, degree=2, gravity_gradient=False)
    t = np.array([s[0] for s in states])
    elements = np.array([elements_from_state(s[1][0:3], s[1][3:6], base.mu) for s in states])
    node, perigee = np.unwrap(elements[:, 3]), np.unwrap(elements[:, 4])
    a_mean, e, i = elements[:, 0].mean(), elements[:, 1].mean(), el[2]
    n = math.sqrt(base.mu / a_mean**3)
    p = a_mean * (1 - e * e)
    k = n * j2 * (base.radius / p) ** 2
    assert np.polyfit(t, node, 1)[0] == pytest.approx(-1.5 * k * math.cos(i), rel=0.01)
    assert np.polyfit(t, perigee, 1)[0] == pytest.approx(0.75 * k * (4 - 5 * math.sin(i) ** 2), rel=0.01)


def test_a_thruster_adds_its_impulse_and_a_tank_sets_the_mass():
    el = (7.0e6, 0.001, 0.9, 0.1, 0.2, 0.3)
    runs = []
    for push in (False, True):
        sim = Simulation(seed=1)
        sim.add_island("sc", integrator=DOP853(rtol=1e-12, atol=1e-6, max_step=10.0))
        r, v = state_from_elements(*el, EARTH_MU)
        model = sim.add_model(
            OrbitingSpacecraft("sc", r, v, 100.0, INERTIA, n_thrusters=1, q_BN=(0, 0, 0.6, 0.8)),
            "sc",
            ties={"wrench0": "sc/w", "mass": "sc/mass"},
        )
        sim.inject("sc/mass", MassProperties(mass_kg=80.0, inertia_B=list(np.diag([30.0, 40.0, 20.0]).ravel())), 0.5)
        if push:
            sim.inject("sc/w", Wrench(body="sc", force=Vector3(x=2.0)), 10.0)
            sim.inject("sc/w", Wrench(body="sc"), 20.0)
        sim.advance_to(20.0)
        runs.append(model.x.copy())
        assert model.mass_kg == 80.0 and model.inertia_B[0, 0] == 30.0
    dv = runs[1][3:6] - runs[0][3:6]
    # 2 N along x_B for 10 s on 80 kg; x_B in N: the rotation by q (0.6, 0.8 about z) of (1, 0, 0).
    # The pushed orbit is up to 1.25 m off the other, where gravity differs by n^2 |dr|: 2e-5 m/s.
    assert np.allclose(dv, 0.25 * np.array([1 - 2 * 0.36, 2 * 0.6 * 0.8, 0.0]), rtol=0, atol=5e-5)


def test_reaction_wheels_conserve_angular_momentum_and_leave_the_orbit_alone():
    """Four wheels in a pyramid, commanded to trade momentum with the body (with friction), no
    gravity gradient: H_N = R(q) ([I_RW] omega + sum_i J_i (g_i . omega + Omega_i) g_i) stays
    constant to 1e-9 relative, and the orbit (under drag) is the same spacecraft's without wheels."""
    from hopsim.dynamics.integrators import RK4
    from hopsim.dynamics.spatial import quat_to_dcm
    from hopsim.schemas import ReactionWheelCommand

    beta = math.radians(30.0)
    axes = [
        (math.cos(beta) * math.cos(az), math.cos(beta) * math.sin(az), math.sin(beta))
        for az in np.radians([0.0, 90.0, 180.0, 270.0])
    ]
    el = (6.9e6, 0.01, 0.9, 0.1, 0.2, 0.3)
    common = dict(
        omega_BN_B=(0.02, -0.01, 0.03),
        q_BN=(0.1, 0.2, 0.3, 0.9),
        gravity_gradient=False,
        rate_hz=1.0,
        cd_area_m2=2.2,
        rho0_kgpm3=3e-12,
        h0_m=500e3,
        scale_height_m=60e3,
    )
    wheels = dict(
        axes_B=axes,
        J_kgm2=0.05,
        Omega_radps=(100.0, -50.0, 20.0, 0.0),
        max_torque_Nm=0.1,
        viscous_Nms=1e-4,
        coulomb_Nm=2e-3,
        coulomb_speed_radps=0.5,
    )
    runs = []
    for kw in ({}, wheels):
        sim = Simulation(seed=1)
        sim.add_island("sc", integrator=RK4(), n_integration_steps=10)
        r, v = state_from_elements(*el, EARTH_MU)
        model = sim.add_model(
            OrbitingSpacecraft("sc", r, v, 100.0, INERTIA, **common, **kw),
            "sc",
            ties={"torque_cmd": "sc/rw_cmd"} if kw else None,
        )
        rng = np.random.default_rng(5)
        if kw:  # on the 1 Hz barriers, so both runs take the same hops
            for k in range(8):
                sim.inject("sc/rw_cmd", ReactionWheelCommand(torque_Nm=rng.uniform(-0.05, 0.05, 4).tolist()), 20.0 * k)
        H = []
        for t in np.arange(20.0, 161.0, 20.0):
            sim.advance_to(float(t))
            H.append(quat_to_dcm(model.x[6:10]) @ model.angular_momentum_B())
        runs.append((model.x.copy(), np.array(H)))
    (x_plain, _), (x_wheels, H) = runs
    assert x_wheels.shape == (17,) and x_plain.shape == (13,)
    sc = OrbitingSpacecraft("h", *state_from_elements(*el, EARTH_MU), 100.0, INERTIA, **common, **wheels)
    H0 = quat_to_dcm(sc.x0[6:10]) @ sc.angular_momentum_B(sc.x0)
    assert np.linalg.norm(H - H0, axis=1).max() / np.linalg.norm(H0) < 1e-9
    assert np.abs(x_wheels[13:] - wheels["Omega_radps"]).max() > 10.0  # momentum did move
    np.testing.assert_array_equal(x_wheels[0:6], x_plain[0:6])


def wheeled(duration_s, faults=(), commands=(), steps=10, **kw):
    """A spacecraft with reaction wheels and no external torque (no gravity gradient, no drag), RK4
    with ``steps`` steps a second; ``faults`` and ``commands`` (t_s, torques) sent. Returns the
    model and its ``wheels`` messages (1 Hz)."""
    from hopsim.bus.recorder import MemoryRecorder
    from hopsim.dynamics.integrators import RK4
    from hopsim.schemas import ReactionWheelCommand

    recorder = MemoryRecorder()
    sim = Simulation(seed=1, recorder=recorder)
    sim.add_island("sc", integrator=RK4(), n_integration_steps=steps)
    r, v = state_from_elements(6.9e6, 0.01, 0.9, 0.1, 0.2, 0.3, EARTH_MU)
    model = sim.add_model(
        OrbitingSpacecraft("sc", r, v, 100.0, INERTIA, gravity_gradient=False, rate_hz=1.0, **kw),
        "sc",
        ties={"torque_cmd": "sc/rw_cmd", "wheels": "sc/wheels"},
    )
    for fault, t in faults:
        sim.schedule_fault(fault, t)
    for t, torques in commands:
        sim.inject("sc/rw_cmd", ReactionWheelCommand(torque_Nm=torques), t)
    sim.advance_to(duration_s)
    recorder.flush()
    return model, [e.payload for e in recorder.envelopes if e.topic == "sc/wheels"]


def H_N(model, x=None):
    from hopsim.dynamics.spatial import quat_to_dcm

    x = model.x if x is None else x
    return quat_to_dcm(x[6:10]) @ model.angular_momentum_B(x)


def test_a_failed_wheel_gives_no_motor_torque_and_spins_down_by_friction_only():
    """Wheel 0 on z fails at t = 0 while commanded: no motor torque, so with H = 0 (the body
    counter-rotates about z) its spin momentum h = J (omega_z + Omega) obeys h' = -f(Omega) with
    Omega = h (1/J + 1/I_zz) = h k, and f = c Omega + F_c min(Omega / v_c, 1):
    Omega = (Omega_0 + F_c/c) exp(-k c t) - F_c/c down to v_c at t_1, then
    v_c exp(-k (c + F_c/v_c) (t - t_1)). Wheel 1 (on x, at rest, commanded 0) stays still."""
    J, c, Fc, vc, Omega0, Izz = 0.05, 1e-3, 1e-2, 0.5, 15.0, INERTIA[2, 2]
    _model, wheels = wheeled(
        60.0,
        faults=[(Fault(target="sc", kind="wheel_failed", index=0), 0.0)],
        commands=[(0.0, [0.05, 0.0])],
        axes_B=[(0, 0, 1), (1, 0, 0)],
        J_kgm2=J,
        Omega_radps=[Omega0, 0.0],
        omega_BN_B=(0, 0, -J * Omega0 / (Izz + J)),
        viscous_Nms=c,
        coulomb_Nm=Fc,
        coulomb_speed_radps=vc,
    )
    k = 1 / J + 1 / Izz
    t1 = math.log((Omega0 + Fc / c) / (vc + Fc / c)) / (k * c)
    assert 20.0 < t1 < 50.0  # both pieces are sampled

    def spin(t):
        if t <= t1:
            return (Omega0 + Fc / c) * math.exp(-k * c * t) - Fc / c
        return vc * math.exp(-k * (c + Fc / vc) * (t - t1))

    t = np.array([w.t_ns for w in wheels]) * 1e-9
    speed = np.array([w.speed_radps for w in wheels])
    assert np.all(np.array([w.motor_torque_Nm for w in wheels]) == 0.0)
    expected = np.array([spin(s) for s in t])
    # RK4 (h = 0.1 s) is exact to rounding on each smooth piece; the step across the ramp's
    # corner at t_1 is first order there: 3e-6 rad/s
    assert np.abs(speed[:, 0] - expected).max() < 1e-5
    assert np.abs(speed[t < t1 - 0.1, 0] - expected[t < t1 - 0.1]).max() < 1e-9
    assert np.all(speed[:, 1] == 0.0)


def test_total_angular_momentum_is_conserved_with_a_failed_wheel():
    """Four wheels in a pyramid under random commands; wheel 2 fails at 20 s and is repaired at
    50 s: H_N stays constant to 1e-9 relative, and wheel 2's motor torque is zero while failed."""
    beta = math.radians(30.0)
    axes = [
        (math.cos(beta) * math.cos(az), math.cos(beta) * math.sin(az), math.sin(beta))
        for az in np.radians([0.0, 90.0, 180.0, 270.0])
    ]
    rng = np.random.default_rng(5)
    commands = [(10.0 * k, rng.uniform(-0.05, 0.05, 4).tolist()) for k in range(8)]
    faults = [
        (Fault(target="sc", kind="wheel_failed", index=2), 20.0),
        (Fault(target="sc", kind="wheel_failed", index=2, clear=True), 50.0),
    ]
    kw = dict(
        axes_B=axes,
        J_kgm2=0.05,
        Omega_radps=(100.0, -50.0, 20.0, 0.0),
        omega_BN_B=(0.02, -0.01, 0.03),
        q_BN=(0.1, 0.2, 0.3, 0.9),
        viscous_Nms=1e-4,
        coulomb_Nm=2e-3,
        coulomb_speed_radps=0.5,
    )
    model, wheels = wheeled(80.0, faults, commands, **kw)
    H0 = H_N(model, model.x0)
    u = {round(w.t_ns * 1e-9): np.array(w.motor_torque_Nm) for w in wheels}
    assert all(u[t][2] == 0.0 for t in range(21, 51)) and u[19][2] != 0.0 and u[51][2] != 0.0
    assert np.linalg.norm(H_N(model) - H0) / np.linalg.norm(H0) < 1e-9


def test_torque_scale_scales_the_applied_motor_torque_and_clear_restores_it():
    """Commands (0.3, -0.03) N m, limit 0.1 N m, no friction: the applied torques are the limited
    commands times the scale; each wheel's spin momentum h = J (g . omega + Omega) grows by the
    integral of its applied torque (h' = u exactly)."""
    faults = [
        (Fault(target="sc", kind="torque_scale", index=1, value=0.5), 5.0),
        (Fault(target="sc", kind="torque_scale", index=-1, value=0.25), 10.0),
        (Fault(target="sc", kind="torque_scale", index=0, clear=True), 15.0),
        (Fault(target="sc", kind="torque_scale", index=1, clear=True), 18.0),
    ]
    model, wheels = wheeled(
        20.0, faults, commands=[(0.0, [0.3, -0.03])], axes_B=[(0, 0, 1), (1, 0, 0)], J_kgm2=0.05, max_torque_Nm=0.1
    )
    u = {round(w.t_ns * 1e-9): w.motor_torque_Nm for w in wheels}
    assert u[3] == [0.1, -0.03] and u[7] == [0.1, -0.015] and u[12] == [0.025, -0.0075]
    assert u[16] == [0.1, -0.0075] and u[19] == [0.1, -0.03]
    h = model.J * (model.G @ model.x[10:13] + model.x[13:15])
    expected = [0.1 * 10 + 0.025 * 5 + 0.1 * 5, -0.03 * 5 - 0.015 * 5 - 0.0075 * 8 - 0.03 * 2]
    assert np.allclose(h, expected, rtol=1e-12, atol=0)


@pytest.mark.parametrize(
    "fault, message",
    [
        (Fault(target="sc", kind="wheel_failed", index=2), "no wheel 2; it has 2"),
        (Fault(target="sc", kind="torque_scale", index=-2, value=0.5), "no wheel -2"),
        (
            Fault(target="sc", kind="torque_scale", index=0, value=float("nan")),
            r"value must lie in \[-1e\+09, 1e\+09\]",
        ),  # the bounds every fault value shares
    ],
    ids=["index out of range", "index below -1", "NaN scale"],
)
def test_a_bad_wheel_fault_is_an_error(fault, message):
    with pytest.raises(ValueError, match=message):
        wheeled(2.0, [(fault, 1.0)], axes_B=[(0, 0, 1), (1, 0, 0)])
    sim = Simulation(seed=1)
    sim.add_island("sc")
    sim.add_model(
        OrbitingSpacecraft("sc", *state_from_elements(7e6, 0.0, 0.0, 0.0, 0.0, 0.0, EARTH_MU), 100.0, INERTIA), "sc"
    )
    with pytest.raises(
        ValueError, match=r"sc does not accept fault 'wheel_failed'; it accepts .'disturbance', 'kill'."
    ):
        sim.schedule_fault(Fault(target="sc", kind="wheel_failed", index=0), 1.0)


def full_environment_runs(
    batching: bool, compiled_hops: bool, n: int = 3, duration_s: float = 300.0, fleets: bool = False
):
    """``n`` spacecraft, each in its own RK4 island (5 steps a 10 s hop): degree-8 gravity, drag,
    solar pressure, the gravity gradient, four wheels under a command, a thruster wrench and a
    disturbance; returns their final states and the recorded stream."""
    from hopsim.bus.recorder import MemoryRecorder
    from hopsim.dynamics.integrators import RK4
    from hopsim.schemas import ReactionWheelCommand

    beta = math.radians(35.0)
    axes = [
        (math.cos(beta) * math.cos(az), math.cos(beta) * math.sin(az), math.sin(beta))
        for az in np.radians([0.0, 90.0, 180.0, 270.0])
    ]
    recorder = MemoryRecorder()
    sim = Simulation(seed=2, recorder=recorder, batching=batching, fleets=fleets)
    field = ggm03s()
    models = []
    for i in range(n):
        name = f"sc{i}"
        sim.add_island(name, integrator=RK4(), n_integration_steps=5)
        r, v = state_from_elements(6.9e6 + 1e3 * i, 0.01, 0.9, 0.1 * i, 0.2, 0.3, field.mu)
        models.append(
            sim.add_model(
                OrbitingSpacecraft(
                    name,
                    r,
                    v,
                    100.0,
                    INERTIA,
                    q_BN=(0.1, 0.2, 0.3, 0.9),
                    omega_BN_B=(0.01, -0.02, 0.005),
                    field=field,
                    degree=8,
                    epoch_jd=2460000.5,
                    cd_area_m2=2.2,
                    rho0_kgpm3=3e-12,
                    h0_m=500e3,
                    scale_height_m=60e3,
                    cr_area_m2=1.3,
                    n_thrusters=1,
                    rate_hz=0.1,
                    axes_B=axes,
                    J_kgm2=0.05,
                    Omega_radps=(100.0, -50.0, 20.0, 0.0),
                    viscous_Nms=1e-4,
                    coulomb_Nm=2e-3,
                ),
                name,
                ties={"wrench0": f"{name}/thrust", "torque_cmd": f"{name}/rw_cmd", "wheels": f"{name}/wheels"},
            )
        )
        sim.inject(f"{name}/thrust", Wrench(body=name, force=Vector3(x=0.1, y=-0.05 * i), torque=Vector3(z=1e-3)), 50.0)
        sim.inject(f"{name}/rw_cmd", ReactionWheelCommand(torque_Nm=[0.01, -0.01, 0.005, 0.0]), 20.0)
        sim.schedule_fault(
            Fault(target=name, kind="disturbance", force_N=Vector3(x=0.02), torque_B=Vector3(y=1e-4), duration_s=60.0),
            100.0,
        )
    if not compiled_hops:
        for m in models:
            m.propagate_hop = None  # the kernel's RK4 over post_deriv
    sim.advance_to(duration_s)
    recorder.flush()
    assert all(isl.has_compiled_hop == compiled_hops for isl in sim.islands.values())
    return np.array([m.x for m in models]), recorder.stream_bytes()


def test_compiled_hops_follow_the_kernels_rk4_and_batches_change_no_bit(monkeypatch):
    """The compiled RK4 hop (one spacecraft per call, or three in one) against the kernel's RK4
    over the same derivative (post_deriv): with sub-steps of whole seconds, whose lengths and
    times the two form alike from integer nanoseconds, the same states bit for bit after 300 s;
    one spacecraft alone, three in one compiled call, or the three through the fleet form
    (``hopsim.actors.orbiting_fleet``): the same stream, bit for bit."""
    from hopsim.actors import orbiting_spacecraft

    rows = []
    hops, hop = orbiting_spacecraft.rk4_hops, orbiting_spacecraft.rk4_hop

    def counted(t0_s, steps_s, X, *rest):
        rows.append(len(X))
        return hops(t0_s, steps_s, X, *rest)

    def one(*args):
        rows.append(1)
        return hop(*args)

    monkeypatch.setattr(orbiting_spacecraft, "rk4_hops", counted)
    monkeypatch.setattr(orbiting_spacecraft, "rk4_hop", one)
    single, stream_single = full_environment_runs(batching=False, compiled_hops=True)
    assert set(rows) == {1}
    rows.clear()
    batched, stream_batched = full_environment_runs(batching=True, compiled_hops=True)
    assert 3 in rows  # the three spacecraft in one call
    kernel, _ = full_environment_runs(batching=False, compiled_hops=False)
    fleet, stream_fleet = full_environment_runs(batching=False, compiled_hops=True, fleets=True)
    assert stream_batched == stream_single == stream_fleet
    np.testing.assert_array_equal(fleet, single)
    np.testing.assert_array_equal(batched, single)
    np.testing.assert_array_equal(single, kernel)
