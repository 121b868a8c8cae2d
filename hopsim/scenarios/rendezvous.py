"""A chaser approaches a target in low Earth orbit along V-bar and docks with it.

One island ``orbit`` with two rigid spacecraft (:class:`hopsim.actors.orbiting_spacecraft`) under
the GGM03S field to ``gravity_degree`` (J2 and the sectoral C22 at the default 2): the ``target``
on a circular orbit with a GNSS receiver whose fixes reach the chaser over a radio
(``radio_latency_s``); the ``chaser``, ``start_m`` behind it on V-bar, with its own GNSS, a fuel
tank, six pulsed thrusters (one pair per body axis) and Clohessy-Wiltshire waypoint guidance
(:class:`hopsim.actors.rendezvous.CwGuidance`) through hold points at ``waypoints_m`` behind the
target, each reached in its ``leg_times_s`` (the last one is held). Both spacecraft fly
LVLH-aligned (body x radial, y along-track, z along the orbit normal, turning at the mean motion
about z; torque-free about a principal axis, so they stay aligned); the chaser's guidance takes
its body frame from a star tracker (``chaser_st``).

Docking (``docking``, the default): each spacecraft is a sphere for contact
(:class:`hopsim.actors.contact.ContactWorld`) of radius ``target_port_m`` and ``chaser_port_m``
(its centre of mass to its docking port, which faces the other on V-bar), so the ports touch when
the centres are the two radii apart; put the last hold point inside that (the default 2 m against
2.5 m) and the chaser closes on it slowly. At contact the latch captures when the ports face each
other within ``dock_angle_deg``, lie within ``dock_gap_m`` and close no faster than
``dock_speed_mps``; the two then fly as one rigid composite (momentum conserved; the target its
primary: :class:`hopsim.actors.orbiting_spacecraft.OrbitingSpacecraft`) and the run ends
``after_dock_s`` later. Faster or misaligned, the contact is an impact (restitution
``restitution``) and the chaser bounces. The dock, its closing speed and port angle are kernel
events (``kernel/dock``, ``kernel/contact``).

Without docking the run ends at capture: the chaser (truth) within ``capture_range_m`` of the
target's capture point (``capture_offset_m`` behind it on V-bar) and moving slower than
``capture_speed_mps`` relative to it.

Within ``relnav_range_m`` the guidance uses a relative-navigation sensor (``chaser_relnav``, the
target-to-chaser state in the target's Hill frame with ``relnav_sigma_m`` and
``relnav_sigma_mps`` of noise, as a docking lidar gives it) instead of the GNSS fixes' difference;
its deadband is 0.3 mm/s (about the thrusters' minimum impulse bit, 2 N for 20 ms on 155 kg) and
its final hold's natural frequency 4 mHz.

Faults by bus message: ``thruster_stuck_off`` on a chaser thruster (``chaser_thr0`` ...
``chaser_thr5``: +x, -x, +y, -y, +z, -z of the body), ``dropout`` of a GNSS receiver
(``chaser_gnss``, ``target_gnss``), of the star tracker (``chaser_st``) or of the relative
navigation (``chaser_relnav``), ``disturbance`` on either spacecraft.
"""

from __future__ import annotations

import math

import numpy as np
from pydantic import Field, model_validator

from hopsim.actors.contact import ContactParams, ContactWorld
from hopsim.actors.orbiting_spacecraft import OrbitingSpacecraft
from hopsim.actors.propulsion import FuelTank, PulsedThruster
from hopsim.actors.rendezvous import CwGuidance
from hopsim.actors.sensors import CmFrameStateSensor, GnssReceiver, StarTracker
from hopsim.dynamics import detlinalg, detmath
from hopsim.dynamics.integrators import DOP853
from hopsim.dynamics.orbit_frames import hill_dcm, hill_to_inertial, inertial_to_hill
from hopsim.dynamics.orbital_elements import state_from_elements
from hopsim.dynamics.spatial import dcm_to_quat
from hopsim.dynamics.spherical_harmonics import ggm03s
from hopsim.kernel import Simulation, Tie
from hopsim.kernel.bounds import RateHz, TimeS
from hopsim.scenarios.registry import ScenarioParams, scenario

AXES_B = [(1, 0, 0), (-1, 0, 0), (0, 1, 0), (0, -1, 0), (0, 0, 1), (0, 0, -1)]


class RendezvousParams(ScenarioParams):
    altitude_m: float = Field(500e3, ge=150e3, le=40e6, description="the target's circular orbit altitude (m)")
    inclination_deg: float = Field(51.6, ge=0, le=180, description="the target's orbit inclination (deg)")
    gravity_degree: int = Field(2, ge=0, le=20, description="GGM03S degree and order (0: point mass)")
    start_m: float = Field(2000.0, gt=0, le=1e5, description="the chaser's start behind the target on V-bar (m)")
    waypoints_m: list[float] = Field(
        [500.0, 100.0, 20.0, 2.0], min_length=1, description="hold points behind the target on V-bar (m), in order"
    )
    leg_times_s: list[TimeS] = Field(
        [1500.0, 900.0, 600.0, 400.0], min_length=1, description="time to reach each hold point (s)"
    )
    docking: bool = Field(True, description="dock with the contact world's latch (False: stop at capture range)")
    target_port_m: float = Field(1.5, gt=0, le=100, description="the target's centre of mass to its docking port (m)")
    chaser_port_m: float = Field(1.0, gt=0, le=100, description="the chaser's centre of mass to its docking port (m)")
    dock_speed_mps: float = Field(0.1, gt=0, le=10, description="the latch captures at this closing speed or slower")
    dock_angle_deg: float = Field(10.0, gt=0, le=180, description="largest angle between the facing ports (deg)")
    dock_gap_m: float = Field(0.1, gt=0, le=10, description="largest distance between the port points at contact")
    restitution: float = Field(0.3, ge=0, le=1, description="coefficient of restitution of an impact")
    after_dock_s: TimeS = Field(30.0, ge=0, le=1e5, description="the composite flies this long after the dock (s)")
    capture_offset_m: float = Field(
        2.0, ge=0, le=100, description="without docking: the capture point behind the target (m)"
    )
    capture_range_m: float = Field(0.5, gt=0, le=100, description="capture: distance to the capture point (m)")
    capture_speed_mps: float = Field(0.05, gt=0, le=10, description="capture: closing speed at most (m/s)")
    chaser_mass_kg: float = Field(150.0, gt=0, le=1e5, description="chaser dry mass (kg)")
    fuel_kg: float = Field(5.0, gt=0, le=1e5, description="chaser propellant (kg)")
    thrust_N: float = Field(2.0, gt=0, le=1e4, description="each thruster's thrust (N)")
    isp_s: float = Field(220.0, ge=1, le=1e4, description="thruster specific impulse (s)")
    guidance_rate_hz: RateHz = Field(0.1, le=10, description="guidance and thruster command rate")
    gnss_sigma_m: float = Field(0.2, ge=0, le=1e3, description="GNSS position noise, 1 sigma per axis (m)")
    gnss_sigma_mps: float = Field(0.002, ge=0, le=10, description="GNSS velocity noise, 1 sigma per axis (m/s)")
    relnav_sigma_m: float = Field(
        0.01, ge=0, le=10, description="relative navigation (docking sensor) position noise, 1 sigma per Hill axis (m)"
    )
    relnav_sigma_mps: float = Field(1e-4, ge=0, le=1, description="its velocity noise, 1 sigma per axis (m/s)")
    relnav_range_m: float = Field(
        100.0, gt=0, le=1e5, description="the guidance uses the docking sensor within this range (m)"
    )
    radio_latency_s: TimeS = Field(0.1, ge=0, le=4, description="the target's fixes reach the chaser after this (s)")

    @model_validator(mode="after")
    def _legs(self):
        if len(self.leg_times_s) != len(self.waypoints_m):
            raise ValueError(
                f"leg_times_s has {len(self.leg_times_s)} entries for {len(self.waypoints_m)} "
                f"waypoints_m: give one time per waypoint"
            )
        if any(not 0 <= d <= 1e5 for d in self.waypoints_m) or any(not 0 < t <= 1e6 for t in self.leg_times_s):
            raise ValueError("waypoints_m must lie in [0, 1e5] m and leg_times_s in (0, 1e6] s")
        return self


def rendezvous_outcome(sim: Simulation) -> dict:
    """Docking (or, without it, capture) and its time; at a dock its closing speed and port angle;
    the impacts; the final range and relative speed (truth, Hill frame, between the centres of
    mass); the propellant used and the velocity change it gave (Tsiolkovsky: Isp g0 ln(m0 / m))."""
    from hopsim.actors.propulsion import G0

    chaser, target, tank = sim.model("chaser"), sim.model("target"), sim.model("chaser_tank")
    rho, rho_dot = inertial_to_hill(target.x[0:3], target.x[3:6], chaser.x[0:3], chaser.x[3:6])
    world = getattr(sim, "contact_world", None)
    contacts = world.contacts if world is not None else []
    dock = next((c for c in contacts if c["kind"] == "DOCK"), None)
    captured = dock is not None if world is not None else sim.stop_reason == "stop_callback"
    used = tank.fuel0_kg - float(tank.x[0])
    m0 = tank.dry_mass_kg + tank.fuel0_kg
    isp = sim.model("chaser_thr0").isp_s
    return {
        "captured": captured,
        "capture_s": (dock["t_ns"] / 1e9 if dock else None) if world is not None else (sim.time if captured else None),
        "docked": dock is not None,
        "dock_closing_speed_mps": -dock["normal_speed_before"] if dock else None,
        "dock_port_angle_deg": dock["port_angle_deg"] if dock else None,
        "impacts": sum(c["kind"] == "CONTACT" for c in contacts),
        "final_range_m": detlinalg.norm(rho),
        "relative_speed_mps": detlinalg.norm(rho_dot),
        "fuel_used_kg": used,
        "dv_used_mps": isp * G0 * detmath.log(m0 / (m0 - used)),
    }


@scenario(
    "rendezvous",
    RendezvousParams,
    "a chaser closes on a target in LEO along V-bar by Clohessy-Wiltshire guidance and docks",
    default_duration_s=4000.0,
    outcome=rendezvous_outcome,
)
def build_rendezvous(sim: Simulation, p: RendezvousParams) -> None:
    field = ggm03s()
    a = field.radius + p.altitude_m
    n = math.sqrt(field.mu / (a * a * a))
    r_t, v_t = state_from_elements(a, 0.0, math.radians(p.inclination_deg), 0.0, 0.0, 0.0, field.mu)
    r_c, v_c = hill_to_inertial(r_t, v_t, np.array([0.0, -p.start_m, 0.0]), np.zeros(3))
    inertia = np.diag([60.0, 70.0, 50.0])
    # LVLH-aligned (body axes = the target's Hill axes), turning with the Hill frame about z
    q_BN = dcm_to_quat(hill_dcm(r_t, v_t).T)
    common = dict(
        field=field if p.gravity_degree > 0 else None,
        degree=p.gravity_degree,
        mu=field.mu,
        gravity_gradient=False,
        rate_hz=1.0,
        q_BN=q_BN,
        omega_BN_B=(0.0, 0.0, n),
    )
    sim.scene["hill_chief"] = "target"  # the viewers show the chaser in the target's Hill frame
    sim.add_island("orbit", integrator=DOP853(rtol=1e-11, atol=1e-4, max_step=20.0))
    sim.add_model(
        OrbitingSpacecraft("target", r_t, v_t, 500.0, inertia * 5, **common), "orbit", ties={"state": "target/state"}
    )
    sim.add_model(
        GnssReceiver("target_gnss", "target", p.gnss_sigma_m, p.gnss_sigma_mps, rate_hz=p.guidance_rate_hz),
        "orbit",
        ties={"state": "target/state", "fix": Tie("target/fix", latency_s=p.radio_latency_s)},
    )
    ties = {f"wrench{i}": f"chaser/thr{i}/wrench" for i in range(6)}
    sim.add_model(
        OrbitingSpacecraft("chaser", r_c, v_c, p.chaser_mass_kg + p.fuel_kg, inertia, n_thrusters=6, **common),
        "orbit",
        ties={"state": "chaser/state", "mass": "chaser/mass", **ties},
    )
    sim.add_model(
        FuelTank(
            "chaser_tank",
            6,
            p.fuel_kg,
            p.fuel_kg,
            p.chaser_mass_kg,
            inertia_empty_B=inertia,
            inertia_full_B=inertia,
            rate_hz=p.guidance_rate_hz,
        ),
        "orbit",
        ties={
            **{f"flow{i}": f"chaser/thr{i}/flow" for i in range(6)},
            "fuel_remaining": "chaser/fuel",
            "mass": "chaser/mass",
        },
    )
    period = 1.0 / p.guidance_rate_hz
    phase = min(p.radio_latency_s + 0.01, 0.5 * period)  # guidance after the step's fixes are in
    for i, axis in enumerate(AXES_B):
        sim.add_model(
            PulsedThruster(
                f"chaser_thr{i}",
                "chaser",
                p.thrust_N,
                p.isp_s,
                axis,
                period_s=period,
                min_on_time_s=0.02,
                phase_s=phase,
            ),
            "orbit",
            ties={
                "on_time": f"chaser/thr{i}/on_time",
                "fuel_remaining": "chaser/fuel",
                "wrench": f"chaser/thr{i}/wrench",
                "flow": f"chaser/thr{i}/flow",
            },
        )
    sim.add_model(
        GnssReceiver("chaser_gnss", "chaser", p.gnss_sigma_m, p.gnss_sigma_mps, rate_hz=p.guidance_rate_hz),
        "orbit",
        ties={"state": "chaser/state", "fix": "chaser/fix"},
    )
    sim.add_model(
        StarTracker("chaser_st", "chaser", rate_hz=p.guidance_rate_hz),
        "orbit",
        ties={"state": "chaser/state", "attitude": "chaser/attitude"},
    )
    sim.add_model(
        CmFrameStateSensor(
            "chaser_relnav",
            "target",
            "chaser",
            "hill",
            p.relnav_sigma_m,
            p.relnav_sigma_mps,
            rate_hz=p.guidance_rate_hz,
        ),
        "orbit",
        ties={"chief": "target/state", "deputy": "chaser/state", "relative": "chaser/relative"},
    )
    waypoints = [(0.0, -d, 0.0) for d in p.waypoints_m]
    sim.add_model(
        CwGuidance(
            "chaser_gnc",
            waypoints,
            p.leg_times_s,
            n,
            p.thrust_N,
            p.chaser_mass_kg + p.fuel_kg,
            field.mu,
            rate_hz=p.guidance_rate_hz,
            phase_s=phase,
            relnav_range_m=p.relnav_range_m,
            deadband_mps=3e-4,
            hold_gain=4e-3,
        ),
        "orbit",
        ties={
            "own": "chaser/fix",
            "target": "target/fix",
            "mass": "chaser/mass",
            "attitude": "chaser/attitude",
            "relative": "chaser/relative",
            **{f"on_time{i}": f"chaser/thr{i}/on_time" for i in range(6)},
        },
    )
    target, chaser = sim.model("target"), sim.model("chaser")
    if p.docking:
        world = ContactWorld(
            sim,
            ContactParams(
                restitution=p.restitution,
                check_rate_hz=1.0,
                dock_angle_deg=p.dock_angle_deg,
                dock_gap_m=p.dock_gap_m,
                dock_speed_mps=p.dock_speed_mps,
            ),
            name="docking",
        )
        world.add_body(target, "orbit", p.target_port_m, port_B=(0.0, -1.0, 0.0))
        world.add_body(
            chaser, "orbit", p.chaser_port_m, port_B=(0.0, 1.0, 0.0), max_accel_mps2=p.thrust_N / p.chaser_mass_kg
        )
        world.attach()
        sim.contact_world = world

        def docked_long_enough(sim: Simulation) -> bool:
            dock = next((c for c in world.contacts if c["kind"] == "DOCK"), None)
            return dock is not None and sim.time >= dock["t_ns"] / 1e9 + p.after_dock_s

        sim.add_stop_callback(docked_long_enough)
        return

    def captured(sim: Simulation) -> bool:
        rho, rho_dot = inertial_to_hill(target.x[0:3], target.x[3:6], chaser.x[0:3], chaser.x[3:6])
        near = detlinalg.norm(rho - np.array([0.0, -p.capture_offset_m, 0.0])) <= p.capture_range_m
        return bool(near and detlinalg.norm(rho_dot) <= p.capture_speed_mps)

    sim.add_stop_callback(captured)
