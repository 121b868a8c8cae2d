"""Contact between vehicles (issue: collisions, walls, docking, island merge and split).

References are independent of the contact code: ballistic motion solved analytically for the
instant the spheres touch, Newton's restitution on the line of centres, conservation of linear
and angular momentum, and the seed's numbers (contact and latch at 2R = 20 cm, e = 0.5).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from hopsim.dynamics.spatial import quat_to_dcm
from hopsim.kernel import Simulation
from hopsim.scenarios.catalog import get_scenario
from hopsim.scenarios.registry import ScenarioError
from hopsim.schemas import Fault, KernelEvent, Vector3

R = 0.1


def build(name: str, **overrides) -> Simulation:
    spec = get_scenario(name)
    sim = Simulation(seed=0)
    spec.build(sim, spec.make_params(overrides))
    sim.advance_to(0.0)
    return sim


def momenta(sim: Simulation, names) -> tuple[np.ndarray, np.ndarray, float]:
    """Total linear momentum, angular momentum about N's origin (both in N) and kinetic energy."""
    p, h, ke = np.zeros(3), np.zeros(3), 0.0
    for n in names:
        m = sim.model(n)
        x = m.x
        Rm = quat_to_dcm(x[6:10])
        c_N = Rm @ m.r_CB_B
        w_N = Rm @ x[10:13]
        v_C = x[3:6] + np.cross(w_N, c_N)
        p += m.mass_kg * v_C
        h += np.cross(x[0:3] + c_N, m.mass_kg * v_C) + Rm @ (m.inertia_C_B @ x[10:13])
        ke += 0.5 * m.mass_kg * v_C @ v_C + 0.5 * x[10:13] @ m.inertia_C_B @ x[10:13]
    return p, h, ke


def momenta_around(make, t_s: float, names, dt: float = 1e-4):
    """Momenta and energy ``dt`` before and after ``t_s`` in a fresh run from ``make()``, so that
    only what happens at ``t_s`` (not the integrator's error over a long run) can change them."""
    sim = make()
    sim.advance_to(t_s - dt)
    before = momenta(sim, names)
    sim.advance_to(t_s + dt)
    return before, momenta(sim, names), sim


def contact_time(r1, v1, r2, v2, distance) -> float:
    """First t >= 0 with |(r2 - r1) + (v2 - v1) t| = distance (ballistic)."""
    d, u = np.subtract(r2, r1), np.subtract(v2, v1)
    a, b, c = u @ u, 2 * d @ u, d @ d - distance**2
    return (-b - math.sqrt(b * b - 4 * a * c)) / (2 * a)


COLLISION = {}


def test_collision_touches_at_2R_and_separates_at_e_times_the_approach_speed():
    sim = build("collision", **COLLISION)
    spec = get_scenario("collision").make_params(COLLISION)
    t_star = contact_time(spec.a_start_m, spec.a_velocity_mps, spec.b_start_m, spec.b_velocity_mps, 2 * R)
    sim.advance_to(t_star - 0.05)
    a, b = sim.model("sph1"), sim.model("sph2")
    p0, h0, _ = momenta(sim, ["sph1", "sph2"])
    n = b.x[0:3] + b.x[3:6] * 0.05 - (a.x[0:3] + a.x[3:6] * 0.05)
    n /= np.linalg.norm(n)
    u0 = b.x[3:6] - a.x[3:6]
    sim.advance_to(t_star + 0.5)
    contact = sim.contact_world.contacts
    assert [c["kind"] for c in contact] == ["CONTACT"]
    t_c = contact[0]["t_ns"] / 1e9
    speed = abs(u0 @ n)
    assert abs(t_c - t_star) * speed < 1e-6  # touched at 2R within 1 um
    u1 = b.x[3:6] - a.x[3:6]
    assert u1 @ n == pytest.approx(-0.5 * (u0 @ n), rel=1e-9)  # e = 0.5 along the line of centres
    np.testing.assert_allclose(u1 - (u1 @ n) * n, u0 - (u0 @ n) * n, atol=1e-12)  # frictionless
    p1, h1, _ = momenta(sim, ["sph1", "sph2"])
    np.testing.assert_allclose(p1, p0, atol=1e-12)
    np.testing.assert_allclose(h1, h0, atol=1e-12)
    gap = np.linalg.norm(b.x[0:3] - a.x[0:3]) - 2 * R
    assert gap > 0  # they separated


def test_collision_with_friction_and_offset_cm_conserves_momentum_and_loses_energy():
    params = dict(contact={"friction": 0.3, "restitution": 0.8}, cm_offset_m=(0.01, 0.02, -0.01))
    sim = build("collision", **params)
    sim.advance_to(6.0)
    assert [c["kind"] for c in sim.contact_world.contacts] == ["CONTACT"]
    t_c = sim.contact_world.contacts[0]["t_ns"] / 1e9
    # momentum just before and just after the impact (the integrator's own error stays out)
    sim = build("collision", **params)
    sim.advance_to(t_c - 1e-4)
    p0, h0, ke0 = momenta(sim, ["sph1", "sph2"])
    sim.advance_to(t_c + 1e-4)
    p1, h1, ke1 = momenta(sim, ["sph1", "sph2"])
    np.testing.assert_allclose(p1, p0, atol=1e-12)
    np.testing.assert_allclose(h1, h0, atol=1e-11)
    assert ke1 < ke0
    spin = np.linalg.norm(sim.model("sph1").x[10:13])
    assert spin > 1e-3  # friction on a glancing impact spins the vehicles up


def test_contact_does_not_depend_on_the_proximity_check_period():
    runs = []
    for rate in (10.0, 3.7):
        sim = build("collision", contact={"check_rate_hz": rate})
        sim.advance_to(5.0)
        runs.append(
            (
                [c["t_ns"] for c in sim.contact_world.contacts],
                np.concatenate([sim.model(n).x for n in ("sph1", "sph2")]),
            )
        )
    assert runs[0][0] == runs[1][0]
    np.testing.assert_allclose(
        runs[0][1][[0, 1, 2, 3, 4, 5, 13, 14, 15, 16, 17, 18]],
        runs[1][1][[0, 1, 2, 3, 4, 5, 13, 14, 15, 16, 17, 18]],
        atol=1e-9,
    )


def test_islands_merge_only_while_the_vehicles_can_touch():
    sim = build("collision")
    sph1, sph2 = sim.islands["sph1"], sim.islands["sph2"]
    sim.advance_to(0.5)
    assert sph2.absorbed_into is None and sph1.members == [sph1]
    sim.advance_to(2.1)  # 5 ms before contact: merged
    assert sph2.absorbed_into is sph1
    sim.advance_to(6.0)  # long after: apart again
    assert sph2.absorbed_into is None and sph1.members == [sph1]


def test_wall_bounce_reverses_the_normal_velocity_times_e_wall_at_the_sphere_surface():
    sim = build("pileup", n_vehicles=1, box_m=1.0, speed_mps=0.0, spin_rad_s=0.0, contact={"wall_restitution": 0.7})
    body = sim.model("v0")
    body.x[3:6] = (0.3, -0.1, 0.05)
    r0 = body.x[0:3].copy()
    sim.advance_to(10.0)
    walls = [c for c in sim.contact_world.contacts if c["b"].startswith("wall")]
    first = walls[0]
    assert first["b"] == "wall1"  # +X wall (x = 1 m)
    t_star = (1.0 - R - r0[0]) / 0.3  # the sphere's surface reaches the wall
    assert abs(first["t_ns"] / 1e9 - t_star) * 0.3 < 1e-6
    assert first["normal_speed_after"] == pytest.approx(-0.7 * first["normal_speed_before"], rel=1e-12)
    assert first["normal_speed_before"] == pytest.approx(-0.3, rel=1e-12)
    lo, hi = r0 - 10, r0 + 10
    assert np.all(body.x[0:3] > R - 1e-6) and np.all(body.x[0:3] < 1 - R + 1e-6)
    assert lo[0] < body.x[0] < hi[0]


def test_passive_docking_latches_at_20cm_and_conserves_momentum():
    def make():
        return build("passive_docking", cm_offset_m=(0.01, -0.005, 0.003))

    names = ["sph1", "sph2"]
    sim = make()
    sim.advance_to(6.0)
    docks = [c for c in sim.contact_world.contacts if c["kind"] == "DOCK"]
    assert len(docks) == 1
    a, b = sim.model("sph1"), sim.model("sph2")
    assert b.primary is a
    assert np.linalg.norm(b.x[0:3] - a.x[0:3]) == pytest.approx(2 * R, abs=1e-6)  # rigidly 20 cm apart
    (p0, h0, ke0), (p1, h1, ke1), _ = momenta_around(make, docks[0]["t_ns"] / 1e9, names)
    np.testing.assert_allclose(p1, p0, atol=1e-12)
    np.testing.assert_allclose(h1, h0, atol=1e-12)
    assert ke1 < ke0
    # the seed: then the pair spins about Z (the 5 cm offset); equal masses: the composite's CM
    # moves at the mean of the two initial velocities
    assert abs(a.x[12]) > 0.1 and np.linalg.norm(a.x[10:12]) < 1e-3 * abs(a.x[12])
    assert p1[0] / (a.mass_kg + b.mass_kg) == pytest.approx((0.05 - 0.50) / 2, rel=1e-12)


def test_docking_is_rejected_when_the_ports_are_misaligned():
    sim = build("passive_docking", cm_offset_m=(0.01, -0.005, 0.003))
    sim.model("sph2").x[6:10] = (0.0, 0.0, math.sin(math.radians(160) / 2), math.cos(math.radians(160) / 2))
    sim.advance_to(6.0)
    assert [c["kind"] for c in sim.contact_world.contacts] == ["CONTACT"]
    assert sim.model("sph2").primary is None


def test_undock_by_command_splits_the_composite_and_the_islands():
    def make():
        return build("passive_docking", undock_at_s=3.0, separation_speed_mps=0.05)

    names = ["sph1", "sph2"]
    (p0, h0, _), (p1, h1, _), sim = momenta_around(make, 3.0, names)
    np.testing.assert_allclose(p1, p0, atol=1e-12)
    np.testing.assert_allclose(h1, h0, atol=1e-12)
    a, b = sim.model("sph1"), sim.model("sph2")
    assert b.primary is None and a.followers == []
    # the port point of sph2 moves away from the same point carried by sph1 at the separation speed
    axis = quat_to_dcm(b.x[6:10]) @ [1.0, 0.0, 0.0]
    point = b.x[0:3] + R * axis

    def velocity_of(m, p):
        return m.x[3:6] + np.cross(quat_to_dcm(m.x[6:10]) @ m.x[10:13], p - m.x[0:3])

    assert (velocity_of(b, point) - velocity_of(a, point)) @ (-axis) == pytest.approx(0.05, rel=1e-3)
    sim.advance_to(8.0)
    assert [c["kind"] for c in sim.contact_world.contacts] == ["DOCK", "UNDOCK"]
    assert sim.islands["sph2"].absorbed_into is None and sim.islands["sph1"].members == [sim.islands["sph1"]]


def three_vehicles() -> Simulation:
    """passive_docking plus a third vehicle without a port that hits the pair after it docked."""
    from hopsim.actors.contact import ContactParams, ContactWorld
    from hopsim.scenarios.contact import PassiveDockingParams, _add_vehicle

    sim = Simulation(seed=0)
    p = PassiveDockingParams()
    world = ContactWorld(sim, ContactParams())
    _add_vehicle(sim, world, p, "sph1", p.a_start_m, p.a_velocity_mps, 0.0)
    _add_vehicle(sim, world, p, "sph2", p.b_start_m, p.b_velocity_mps, 180.0)
    _add_vehicle(sim, world, p, "sph3", (0.40, 0.60, 1.15), (0.0, 0.25, 0.0), 90.0, port=False)
    world.attach()
    sim.contact_world = world
    sim.advance_to(0.0)
    return sim


def test_a_third_vehicle_hits_a_docked_pair_and_momentum_is_conserved():
    names = ["sph1", "sph2", "sph3"]
    sim = three_vehicles()
    sim.advance_to(8.0)
    events = [(c["kind"], c["a"], c["b"], c["t_ns"]) for c in sim.contact_world.contacts]
    assert events[0][:3] == ("DOCK", "sph1", "sph2")
    hits = [e for e in events if e[0] == "CONTACT" and "sph3" in e[1:3]]
    assert hits and hits[0][3] > events[0][3]
    assert sim.model("sph2").primary is sim.model("sph1")  # still docked
    (p0, h0, ke0), (p1, h1, ke1), after = momenta_around(three_vehicles, hits[0][3] / 1e9, names)
    np.testing.assert_allclose(p1, p0, atol=1e-12)
    np.testing.assert_allclose(h1, h0, atol=1e-12)
    assert ke1 < ke0
    assert not np.allclose(after.model("sph1").x[10:13], 0.0)


def test_disturbance_message_gives_the_impulse_F_times_duration():
    sim = build("collision")
    f = Fault(target="sph1", kind="disturbance", force_N=Vector3(x=0.0, y=0.0, z=0.02), duration_s=0.25)
    sim.schedule_fault(f, 0.333)
    m = sim.model("sph1")
    sim.advance_to(1.0)
    assert m.x[5] == pytest.approx(0.02 * 0.25 / m.mass_kg, rel=1e-12)


def test_elastic_pileup_keeps_its_energy_and_records_merges_and_splits():
    sim = build("pileup", n_vehicles=20, contact={"restitution": 1.0, "wall_restitution": 1.0})
    names = [f"v{i:02d}" for i in range(20)]
    from hopsim.bus.recorder import MemoryRecorder

    sim.recorder = MemoryRecorder()
    _, _, ke0 = momenta(sim, names)
    sim.advance_to(5.0)
    _, _, ke1 = momenta(sim, names)
    contacts = [c for c in sim.contact_world.contacts if c["kind"] == "CONTACT"]
    assert len(contacts) > 5
    assert ke1 == pytest.approx(ke0, rel=1e-6)  # elastic and frictionless: energy stays
    kinds = {env.payload.kind for env in sim.recorder.envelopes if env.topic.startswith("kernel/")}
    assert KernelEvent.ISLAND_MERGE in kinds and KernelEvent.ISLAND_SPLIT in kinds and KernelEvent.CONTACT in kinds


def test_bad_contact_parameters_are_named():
    with pytest.raises(ScenarioError, match="restitution"):
        get_scenario("collision").make_params({"contact": {"restitution": 1.5}})
    with pytest.raises(ScenarioError, match="box_m"):
        get_scenario("pileup").make_params({"box_m": 0.2})


def test_contacts_are_recorded_as_fields_that_obey_restitution(tmp_path):
    """Each impact is a kernel event on kernel/contact whose fields (ContactDetail) read back as
    columns: the normal speed after is -e times the speed before (Newton's law of restitution,
    e = 0.5 between frictionless bodies and at the walls), and there are as many as impacts."""
    from hopsim.scenarios import run_scenario
    from hopsim.view.columns import read_signals

    path = tmp_path / "pileup.mcap"
    r = run_scenario("pileup", {"n_vehicles": 8}, duration_s=3.0, out=path, keep_sim=True)
    cols = read_signals(
        path, ["kernel/contact.contact.normal_speed_before_mps", "kernel/contact.contact.normal_speed_after_mps"]
    )
    before = cols["kernel/contact.contact.normal_speed_before_mps"].values
    after = cols["kernel/contact.contact.normal_speed_after_mps"].values
    assert len(before) == r.outcome["contacts"] > 5
    assert np.all(before < 0) and np.allclose(after, -0.5 * before, rtol=1e-9, atol=1e-12)
