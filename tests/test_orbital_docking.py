"""Docking in orbit: welded spacecraft fly as one rigid body, and the rendezvous ends in a dock.

The composite's reference is a single spacecraft with the composite's mass, inertia about its
centre of mass, drag and radiation areas and equivalent wrench (rigid-body statics written out
here), started at the composite's centre-of-mass state: the two must fly the same orbit and turn
the same way, whatever the composite code does with centre-of-mass offsets and loads.
"""

import math

import numpy as np
import pytest

from hopsim.actors.orbiting_spacecraft import OrbitingSpacecraft
from hopsim.dynamics.contact import composite_mass_properties, relative_pose, weld_state
from hopsim.dynamics.integrators import DOP853
from hopsim.dynamics.orbit_frames import hill_to_inertial
from hopsim.dynamics.orbital_elements import state_from_elements
from hopsim.dynamics.spatial import quat_to_dcm
from hopsim.dynamics.spherical_harmonics import ggm03s
from hopsim.kernel import Simulation
from hopsim.scenarios import run_scenario
from hopsim.schemas import Vector3, Wrench

FIELD = ggm03s()
I1 = np.array([[300.0, 5.0, 0.0], [5.0, 250.0, -3.0], [0.0, -3.0, 200.0]])
I2 = np.diag([60.0, 70.0, 50.0])
M1, M2 = 500.0, 150.0
COMMON = dict(
    field=FIELD,
    degree=4,
    cd_area_m2=4.4,
    rho0_kgpm3=4e-13,
    h0_m=500e3,
    scale_height_m=60e3,
    gravity_gradient=True,
    rate_hz=1.0,
)
F2_B, TAU2_B = np.array([0.3, -0.2, 0.5]), np.array([0.01, 0.0, -0.02])  # the follower's wrench (N, N m)


def _orbit():
    return state_from_elements(FIELD.radius + 500e3, 0.001, math.radians(51.6), 0.3, 0.2, 0.1, FIELD.mu)


def _pair():
    """Primary and follower states: 2.5 m apart with a small relative velocity, both turning."""
    r1, v1 = _orbit()
    r2, v2 = hill_to_inertial(r1, v1, np.array([0.3, -2.5, 0.1]), np.array([0.0, 0.02, 0.001]))
    q1 = np.array([0.1, -0.2, 0.3, 0.9]) / np.linalg.norm([0.1, -0.2, 0.3, 0.9])
    q2 = np.array([-0.3, 0.1, 0.2, 0.9]) / np.linalg.norm([-0.3, 0.1, 0.2, 0.9])
    x1 = np.concatenate([r1, v1, q1, [0.002, -0.001, 0.003]])
    x2 = np.concatenate([r2, v2, q2, [-0.001, 0.004, 0.0]])
    return x1, x2


def _wrench(force, torque) -> Wrench:
    return Wrench(
        force=Vector3(x=force[0], y=force[1], z=force[2]),
        torque=Vector3(x=torque[0], y=torque[1], z=torque[2]),
        frame=Wrench.BODY,
    )


def test_a_welded_pair_flies_as_the_equivalent_single_spacecraft():
    x1, x2 = _pair()
    # the composite, welded by weld_state (momentum conserving) at t = 0
    sim = Simulation(seed=0)
    sim.add_island("orbit", integrator=DOP853(rtol=1e-12, atol=1e-6, max_step=10.0))
    sim.add_model(
        OrbitingSpacecraft("p", x1[0:3], x1[3:6], M1, I1, q_BN=x1[6:10], omega_BN_B=x1[10:13], **COMMON),
        "orbit",
        ties={"state": "p/state"},
    )
    sim.add_model(
        OrbitingSpacecraft(
            "f", x2[0:3], x2[3:6], M2, I2, q_BN=x2[6:10], omega_BN_B=x2[10:13], n_thrusters=1, cr_area_m2=1.3, **COMMON
        ),
        "orbit",
        ties={"wrench0": "f/push", "state": "f/state"},
    )
    sim.inject("f/push", _wrench(F2_B, TAU2_B), 0.0)
    sim.advance_to(0.0)
    p, f = sim.model("p"), sim.model("f")
    x_new, _, _ = weld_state(p.x.copy(), M1, I1, np.zeros(3), f.x.copy(), M2, I2, np.zeros(3))
    p.x[:] = x_new
    r_FP_P, q_FP = relative_pose(p.x, f.x)
    p.weld(f, r_FP_P, q_FP)
    sim.islands["orbit"].integrator.reset()

    # the equivalent single spacecraft: mass properties and wrench by rigid-body statics
    R_PF = quat_to_dcm(q_FP)
    M, I_C, c = composite_mass_properties(M1, I1, np.zeros(3), M2, I2, np.zeros(3), r_FP_P, R_PF)
    R = quat_to_dcm(p.x[6:10])
    w = p.x[10:13]
    r_C, v_C = p.x[0:3] + R @ c, p.x[3:6] + R @ np.cross(w, c)
    force_B = R_PF @ F2_B
    torque_B = R_PF @ TAU2_B + np.cross(r_FP_P - c, force_B)
    ref = Simulation(seed=0)
    ref.add_island("orbit", integrator=DOP853(rtol=1e-12, atol=1e-6, max_step=10.0))
    summed_areas = {**COMMON, "cd_area_m2": 2 * COMMON["cd_area_m2"], "cr_area_m2": 1.3}  # cannonballs
    ref.add_model(
        OrbitingSpacecraft("c", r_C, v_C, M, I_C, q_BN=p.x[6:10], omega_BN_B=w, n_thrusters=1, **summed_areas),
        "orbit",
        ties={"wrench0": "c/push"},
    )
    ref.inject("c/push", _wrench(force_B, torque_B), 0.0)

    sim.advance_to(600.0)
    ref.advance_to(600.0)
    cm = (M1 * p.x[0:3] + M2 * f.x[0:3]) / M
    cv = (M1 * p.x[3:6] + M2 * f.x[3:6]) / M
    c_ref = ref.model("c").x
    assert np.linalg.norm(cm - c_ref[0:3]) < 1e-5  # m, after 600 s and ~4 km of thrust-free drift
    assert np.linalg.norm(cv - c_ref[3:6]) < 1e-8
    assert np.allclose(p.x[6:10], c_ref[6:10], atol=1e-9)  # the same body axes, the same turn
    assert np.allclose(p.x[10:13], c_ref[10:13], atol=1e-11)
    # the follower stays where it was welded, and its published derivative is the rigid one
    assert np.linalg.norm(f.x[0:3] - p.x[0:3]) == pytest.approx(np.linalg.norm(r_FP_P), abs=1e-9)
    assert np.allclose(relative_pose(p.x, f.x)[1], q_FP, atol=1e-12)
    # and the follower's wrench did something: the composite's rates moved from the weld's
    assert np.linalg.norm(p.x[10:13] - x_new[10:13]) > 1e-3


def test_a_spacecraft_with_wheels_cannot_ride_as_a_follower():
    x1, x2 = _pair()
    wheels = OrbitingSpacecraft("w", x2[0:3], x2[3:6], M2, I2, axes_B=[(1, 0, 0)], **COMMON)
    plain = OrbitingSpacecraft("p", x1[0:3], x1[3:6], M1, I1, **COMMON)
    plain.x, wheels.x = plain.initial_state(), wheels.initial_state()
    with pytest.raises(ValueError, match=r"reaction wheels.*primary"):
        plain.weld(wheels, np.array([0.0, -2.5, 0.0]), np.array([0.0, 0.0, 0.0, 1.0]))


SHORT = {"start_m": 300.0, "waypoints_m": [60.0, 2.0], "leg_times_s": [500.0, 500.0]}


@pytest.fixture(scope="module")
def docked():
    return run_scenario("rendezvous", SHORT, seed=2, duration_s=1500.0, keep_stream=True)


def test_the_rendezvous_ends_docked(docked):
    out = docked.outcome
    assert out["docked"] and out["captured"] and out["impacts"] == 0
    assert 500.0 < out["capture_s"] < 1400.0
    assert 0.0 < out["dock_closing_speed_mps"] <= 0.1 and out["dock_port_angle_deg"] <= 10.0
    # the run ends after_dock_s (30 s) later, at the next barrier (the spacecraft's 1 Hz)
    assert out["capture_s"] + 30.0 <= docked.end_time_s <= out["capture_s"] + 31.0
    # riding on the target: the centres stay as far apart as at contact (the two radii, 1.5 + 1.0
    # m: the spheres touch), nearly at rest in the target's Hill frame (the composite turns with
    # it, give or take the rate the contact and the chaser's pushes after it gave)
    assert out["final_range_m"] == pytest.approx(2.5, abs=1e-6) and out["relative_speed_mps"] < 2e-3
    docks = [e for e in docked.recorder.envelopes if e.topic == "kernel/dock"]
    assert len(docks) == 1 and docks[0].payload.contact.primary == "target"
    assert docks[0].payload.contact.normal_speed_before_mps == pytest.approx(-out["dock_closing_speed_mps"])


def test_too_fast_a_contact_bounces_instead_of_latching():
    """The nominal approach closes at ~8.5 mm/s: a latch that captures at 2 mm/s at most lets it
    bounce; the hold law brings it back, and it latches only once it comes in slowly enough."""
    fast = run_scenario("rendezvous", {**SHORT, "dock_speed_mps": 0.002}, seed=2, duration_s=1500.0, keep_stream=True)
    out = fast.outcome
    assert out["impacts"] >= 1
    impact = next(e.payload.contact for e in fast.recorder.envelopes if e.topic == "kernel/contact")
    assert impact.normal_speed_before_mps < -0.002 < impact.normal_speed_after_mps
    assert impact.normal_speed_after_mps == pytest.approx(-0.3 * impact.normal_speed_before_mps, rel=0.05)
    assert not out["docked"] or out["dock_closing_speed_mps"] <= 0.002


def test_without_docking_the_run_stops_at_capture_range():
    out = run_scenario("rendezvous", {**SHORT, "docking": False}, seed=2, duration_s=1500.0).outcome
    assert out["captured"] and not out["docked"] and out["impacts"] == 0
    assert abs(out["final_range_m"] - 2.0) <= 0.5 and out["relative_speed_mps"] <= 0.05


def test_a_star_tracker_dropout_loses_the_body_frame_and_the_dock(docked):
    """Without attitude measurements the guidance falls back to a fixed attitude while the chaser
    turns with the Hill frame: its burns point the wrong way, it never docks and burns far more."""
    lost = run_scenario(
        "rendezvous",
        {**SHORT, "faults": [{"t_s": 1.0, "target": "chaser_st", "kind": "dropout"}]},
        seed=2,
        duration_s=1500.0,
    ).outcome
    assert not lost["docked"] and lost["final_range_m"] > 100.0
    assert lost["fuel_used_kg"] > 5 * docked.outcome["fuel_used_kg"]
