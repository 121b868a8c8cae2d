"""Fleet forms (``hopsim.kernel.fleet``): a rate group's hops handed to a model kind's fleet form
in one compiled call must give the scalar form's result bit for bit. The reference is the same
run with fleet forms off (each spacecraft's start_hop, compiled hop and end_hop on its own), and
with rate groups off (no group, no fleet): recorded streams, states and derivatives equal."""

from __future__ import annotations

import math

import numpy as np

from hopsim.actors.orbiting_spacecraft import OrbitingSpacecraft
from hopsim.bus.recorder import MemoryRecorder
from hopsim.dynamics.integrators import RK4
from hopsim.dynamics.orbital_elements import state_from_elements
from hopsim.dynamics.spherical_harmonics import ggm03s
from hopsim.kernel import Simulation
from hopsim.schemas import Fault, MassProperties, ReactionWheelCommand, Vector3

FIELD = ggm03s()
AXES_B = [[0.577, 0.577, 0.577], [-0.577, 0.577, 0.577], [0.577, -0.577, 0.577], [0.577, 0.577, -0.577]]


def build(fleets: bool, rate_groups: bool = True, n_wheeled: int = 11, n_plain: int = 5) -> Simulation:
    """Wheeled spacecraft on a degree-4 field (one fleet), plain ones on a point mass (another),
    three of them with drag plates (fleets of their own), one with LuGre bearings (no fleet form),
    all in RK4 islands at 1 Hz (two sub-steps); wheel commands, a mass change and faults arrive on
    and between the 1 Hz instants."""
    sim = Simulation(seed=4, recorder=MemoryRecorder(), fleets=fleets, rate_groups=rate_groups)
    common = dict(cd_area_m2=4.0, rho0_kgpm3=4e-13, h0_m=500e3, scale_height_m=60e3, cr_area_m2=2.6, rate_hz=1.0)
    names = []
    for i in range(n_wheeled + n_plain + 1):
        name = f"sc{i}"
        r, v = state_from_elements(
            6.9e6 + 3e3 * i, 0.001 + 1e-4 * i, math.radians(40.0 + i), 0.1 * i, 0.2, 0.3 * i, FIELD.mu
        )
        extra = {}
        if i < n_wheeled or i == n_wheeled + n_plain:
            extra = dict(
                field=FIELD,
                degree=4,
                axes_B=AXES_B,
                J_kgm2=0.08,
                Omega_radps=[50.0, -20.0, 10.0, 0.0],
                viscous_Nms=1e-5,
                coulomb_Nm=4e-4,
            )
        if i in (1, 2, n_wheeled + 1):  # attitude-dependent drag: their own fleets (longer params)
            extra["drag_plates"] = [
                ((1.0, 0.0, 0.0), 1.5, 2.2, (0.3, 0.0, 0.1)),
                ((0.0, 1.0, 0.2), 0.8, 2.0, (0.0, -0.5, 0.0)),
            ]
        if i == n_wheeled + n_plain:
            extra.update(
                friction="lugre",
                static_Nm=6e-4,
                stribeck_speed_radps=0.5,
                bristle_stiffness_Nmprad=1e-3,
                bristle_damping_Nmsprad=1e-4,
                Omega_radps=[0.0] * 4,
            )
        sim.add_island(name, integrator=RK4(), n_integration_steps=2)
        ties = {"state": f"{name}/state", "mass": f"{name}/mass"}
        if "axes_B" in extra:
            ties.update(torque_cmd="fleet/rw_cmd", wheels=f"{name}/wheels")
        sim.add_model(
            OrbitingSpacecraft(
                name,
                r,
                v,
                500.0,
                [[400.0, 2.0, 0.0], [2.0, 300.0, 0.0], [0.0, 0.0, 200.0]],
                omega_BN_B=(0.001, -0.002, 0.003),
                gravity_gradient=i % 2 == 0,
                **common,
                **extra,
            ),
            name,
            ties=ties,
        )
        names.append(name)
    sim.inject("fleet/rw_cmd", ReactionWheelCommand(torque_Nm=[0.01, -0.01, 0.005, 0.0]), 0.0)
    sim.inject("fleet/rw_cmd", ReactionWheelCommand(torque_Nm=[0.0, 0.02, -0.01, 0.003]), 7.0)  # on an instant
    sim.inject("sc5/mass", MassProperties(mass_kg=480.0, inertia_B=[390, 2, 0, 2, 290, 0, 0, 0, 195]), 4.4)
    sim.schedule_fault(
        Fault(
            target="sc3",
            kind="disturbance",
            force_N=Vector3(x=0.2, y=-0.1, z=0.05),
            torque_B=Vector3(x=0.001),
            duration_s=2.5,
        ),
        3.0,
    )
    sim.schedule_fault(Fault(target="sc4", kind="wheel_failed", index=1), 6.5)
    sim.schedule_fault(Fault(target="sc12", kind="disturbance", force_N=Vector3(z=0.3), duration_s=2.0), 9.0)
    return sim


def outcome(sim: Simulation):
    states = [(sim.model(n).x.copy(), sim.model(n).xdot.copy()) for n in sorted(sim.islands)]
    return sim.recorder.stream_bytes(), states


def test_fleet_forms_change_no_bit_of_the_stream():
    runs = {}
    for fleets, groups in ((True, True), (False, True), (False, False)):
        sim = build(fleets, groups)
        sim.advance_to(12.0)
        runs[fleets, groups] = (outcome(sim), sim.stats())
    (stream, states), stats = runs[True, True]
    assert len(stream) > 300
    for key in ((False, True), (False, False)):
        other_stream, other_states = runs[key][0]
        assert other_stream == stream
        for (x, xdot), (y, ydot) in zip(states, other_states, strict=True):
            assert np.array_equal(x, y) and np.array_equal(xdot, ydot)
    # the fleets took every hop of the 16 spacecraft with a fleet form: those that end at a 1 Hz
    # instant, and the three that end off the schedule (members stay in their group for such
    # barriers): sc5's mass at 4.4 s, the end of sc3's disturbance at 5.5 s, sc4's wheel failure
    # at 6.5 s (a shorter hop has other sub-steps: a call of its own)
    assert stats["fleets"]["hops"] == 12 * 16 + 3 and stats["fleets"]["calls"] > 2 * 12
    assert sum(s["fleet_hops"] for s in stats["islands"].values()) == 12 * 16 + 3
    assert runs[False, True][1]["fleets"]["hops"] == 0


def test_a_fleet_grows_and_takes_a_restored_spacecraft_back():
    """More spacecraft than a fleet's first rows; a checkpoint restored into a fresh simulation
    continues with the uninterrupted stream (the restored models' arrays become rows again)."""
    full = build(True, n_wheeled=20, n_plain=1)
    full.advance_to(6.0)
    state = full.capture_state()
    full.advance_to(12.0)
    resumed = build(True, n_wheeled=20, n_plain=1)
    resumed.restore_state(state)
    resumed.advance_to(12.0)
    after = [b for b in full.recorder.stream_bytes()][-len(resumed.recorder.stream_bytes()) :]
    assert len(after) > 100 and resumed.recorder.stream_bytes() == after
    for name in full.islands:
        assert np.array_equal(full.model(name).x, resumed.model(name).x)
    assert resumed.stats()["fleets"]["hops"] > 0


def test_a_restored_spacecraft_is_taken_back_with_its_restored_arrays():
    """A model's restore replaces its arrays (here: back to its mass before a mass message): the
    fleet takes the restored values as its row and latches again, as the scalar form would."""
    runs = []
    for fleets in (True, False):
        sim = build(fleets)
        sim.advance_to(4.0)
        snapshot = sim.model("sc5").snapshot()
        sim.advance_to(6.0)
        sim.model("sc5").restore(snapshot)
        sim.advance_to(10.0)
        runs.append(outcome(sim))
        assert sim.model("sc5").mass_kg == 500.0
    assert runs[0][0] == runs[1][0]
    for (x, xdot), (y, ydot) in zip(runs[0][1], runs[1][1], strict=True):
        assert np.array_equal(x, y) and np.array_equal(xdot, ydot)


def build_with_tanks(fleets: bool, rate_groups: bool = True, compiled_hops: bool = True, n: int = 6) -> Simulation:
    """Spacecraft each with a fuel tank and a pulsed thruster in its island (RK4, 1 Hz, two
    sub-steps of 0.5 s); every other thruster is commanded at t = 3 s to fire 0.5 s of every 1 s
    step (sub-steps of 0.25 s then)."""
    from hopsim.actors.propulsion import FuelTank, PulsedThruster
    from hopsim.schemas import Scalar

    sim = Simulation(seed=5, recorder=MemoryRecorder(), fleets=fleets, rate_groups=rate_groups)
    inertia = [[400.0, 0.0, 0.0], [0.0, 300.0, 0.0], [0.0, 0.0, 200.0]]
    for i in range(n):
        name = f"sc{i}"
        r, v = state_from_elements(6.9e6 + 3e3 * i, 0.001, math.radians(50.0 + i), 0.1 * i, 0.2, 0.3 * i, FIELD.mu)
        sim.add_island(name, integrator=RK4(), n_integration_steps=2)
        body = sim.add_model(
            OrbitingSpacecraft(name, r, v, 510.0, inertia, field=FIELD, degree=2, n_thrusters=1, rate_hz=1.0),
            name,
            ties={"state": f"{name}/state", "mass": f"{name}/mass", "wrench0": f"{name}/wrench"},
        )
        sim.add_model(
            FuelTank(f"{name}_tank", 1, 10.0, 10.0, 500.0, inertia_empty_B=inertia, inertia_full_B=inertia),
            name,
            ties={"flow0": f"{name}/flow", "fuel_remaining": f"{name}/fuel", "mass": f"{name}/mass"},
        )
        sim.add_model(
            PulsedThruster(f"{name}_thr", name, 2.0, 200.0, (1.0, 0.0, 0.0), min_on_time_s=0.01),
            name,
            ties={
                "on_time": f"{name}/on_time",
                "fuel_remaining": f"{name}/fuel",
                "wrench": f"{name}/wrench",
                "flow": f"{name}/flow",
            },
        )
        if not compiled_hops:
            body.propagate_hop = None  # the kernel's RK4 over every model's post_deriv
        if i % 2 == 0:
            sim.inject(f"{name}/on_time", Scalar(value=0.5), 3.0)
    return sim


def test_a_tank_beside_the_spacecraft_is_advanced_by_the_same_rk4_sums():
    """A tank's draw is constant over a hop (FuelTank.state_rate_constant_over_hop): the island
    advances it beside the spacecraft's compiled hop (alone or through the fleet form), the same
    stream and states either way, and the same states as the kernel's RK4 over post_deriv (whose
    published derivative is its last stage's, not the end state's: states only); the tank ends
    with its load less the thrust's flow times the firing (F / (Isp g0) for 0.5 s at each of the
    steps 3 s ... 9 s), and only the fired spacecraft lose mass."""
    from hopsim.actors.propulsion import G0

    runs = {}
    for key in ((True, True, True), (False, True, True), (False, False, True), (False, False, False)):
        sim = build_with_tanks(*key)
        sim.advance_to(10.0)
        assert all(isl.has_compiled_hop == key[2] for isl in sim.islands.values())
        tanks = [sim.model(f"sc{i}_tank").x.copy() for i in range(6)]
        runs[key] = (outcome(sim), tanks, sim.stats())
    (stream, states), tanks, stats = runs[True, True, True]
    assert stats["fleets"]["hops"] > 30  # the fleet took the quiet hops
    for key, ((other_stream, other_states), other_tanks, _) in runs.items():
        compiled = key[2]
        assert other_stream == stream or not compiled, key
        for (x, xdot), (y, ydot) in zip(states, other_states, strict=True):
            assert np.array_equal(x, y) and (np.array_equal(xdot, ydot) or not compiled), key
        assert all(np.array_equal(a, b) for a, b in zip(tanks, other_tanks, strict=True)), key
    burned = 2.0 / (200.0 * G0) * 0.5 * 7
    for i, fuel in enumerate(tanks):
        np.testing.assert_allclose(fuel[0], 10.0 - (burned if i % 2 == 0 else 0.0), rtol=0, atol=1e-14)


def test_the_rigid_fleet_takes_back_a_restored_vehicle_and_gathers_a_disturbance():
    """The formation's vehicles through their fleet form (``hopsim.actors.rigid_fleet``) against
    the scalar form: a disturbance fault (a pre_deriv load the kernel gathers into the fleet's
    row) and a vehicle restored to an earlier snapshot (its arrays replaced: adopted again) give
    the same stream and states bit for bit."""
    from hopsim.scenarios.catalog import get_scenario

    runs = []
    for fleets in (True, False):
        spec = get_scenario("formation")
        params = spec.make_params({"n_vehicles": 6})
        sim = Simulation(seed=2, recorder=MemoryRecorder(), fleets=fleets)
        sim.scenario_params = params
        spec.build(sim, params)
        sim.schedule_fault(
            Fault(
                target="v2",
                kind="disturbance",
                force_N=Vector3(x=0.05, y=-0.02),
                torque_B=Vector3(z=0.01),
                duration_s=3.0,
            ),
            4.0,
        )
        sim.advance_to(3.0)
        snapshot = sim.model("v4").snapshot()
        sim.advance_to(5.0)
        sim.model("v4").restore(snapshot)
        sim.advance_to(12.0)
        stats = sim.stats()["fleets"]
        assert (stats["hops"] > 6 * 10) == fleets
        runs.append(
            (
                sim.recorder.stream_bytes(),
                [sim.model(f"v{i}").x.copy() for i in range(6)],
                [sim.model(f"v{i}").xdot_last.copy() for i in range(6)],
            )
        )
    assert len(runs[0][0]) > 300 and runs[0][0] == runs[1][0]
    for a, b in zip(runs[0][1] + runs[0][2], runs[1][1] + runs[1][2], strict=True):
        assert np.array_equal(a, b)
