"""Contact scenarios: the SPHERES collision and passive-docking runs (seed 001, sections 4.2 and
4.3) and a pileup of many vehicles in a box for stress.

The vehicles are SPHERES-class rigid bodies (mass properties of the chosen vehicle type, radius
0.1 m, docking port along body +x as in the seed) with no control, each in its own island with a
:class:`~hopsim.actors.contact.DockingPort`; a :class:`~hopsim.actors.contact.ContactWorld` merges
the islands of vehicles that can touch. Every vehicle publishes its state on ``<name>/state``.
"""

from __future__ import annotations

import math
from typing import Annotated

import numpy as np
from pydantic import Field, model_validator

from hopsim.actors.contact import ContactParams, ContactWorld
from hopsim.actors.spheres.frames import from_yaw
from hopsim.actors.spheres.params import vehicle_params
from hopsim.actors.vehicle_dynamics import RigidVehicleDynamics
from hopsim.dynamics import detmath, detrandom
from hopsim.kernel import Simulation
from hopsim.kernel.bounds import RateHz, TimeS
from hopsim.scenarios.registry import ScenarioParams, scenario

Vec3 = tuple[float, float, float]
SPHERES_RADIUS_M = 0.1


# a SPHERES-class vehicle in a test volume: faster than this it crosses the volume several times a
# second and every contact check finds a contact
MAX_SPEED_MPS = 10.0
MAX_SPIN_RAD_S = 10.0
Velocity = tuple[
    Annotated[float, Field(ge=-MAX_SPEED_MPS, le=MAX_SPEED_MPS)],
    Annotated[float, Field(ge=-MAX_SPEED_MPS, le=MAX_SPEED_MPS)],
    Annotated[float, Field(ge=-MAX_SPEED_MPS, le=MAX_SPEED_MPS)],
]


class ContactScenario(ScenarioParams):
    vehicle_type: str = Field("spheres_6dof", description="mass properties of this SPHERES parameter set")
    radius_m: float = Field(SPHERES_RADIUS_M, gt=0, le=10, description="contact sphere radius (m)")
    contact: ContactParams = Field(
        default_factory=ContactParams,
        description=("contact laws: restitution, friction, latch, check rate (--set contact.restitution=0.8)"),
    )
    state_rate_hz: RateHz = Field(10.0, le=10_000, description="rate of each vehicle's published state")
    cm_offset_m: Vec3 | None = Field(
        None, description=("centre of mass from the geometric centre, body frame (m); None: the vehicle type's")
    )


def _add_vehicle(
    sim: Simulation,
    world: ContactWorld,
    p: ContactScenario,
    name: str,
    r_N,
    v_N,
    yaw_deg: float = 0.0,
    omega_B=(0.0, 0.0, 0.0),
    port=True,
) -> RigidVehicleDynamics:
    mass = vehicle_params(p.vehicle_type, {}).mass
    r_CB_B = mass.r_CB_B if p.cm_offset_m is None else p.cm_offset_m
    sim.add_island(name)
    body = sim.add_model(
        RigidVehicleDynamics(
            name,
            mass.mass_kg,
            np.diag(mass.inertia_diag_kgm2),
            r_CB_B,
            r_BN_N=r_N,
            v_BN_N=v_N,
            q_BN=tuple(from_yaw(math.radians(yaw_deg))),
            omega_BN_B=omega_B,
            rate_hz=p.state_rate_hz,
        ),
        name,
        ties={"state": f"{name}/state"},
    )
    world.add_body(body, name, p.radius_m, port_B=(1.0, 0.0, 0.0) if port else None)
    return body


def contact_outcome(sim: Simulation) -> dict:
    """Contacts and docks that happened, and the final momentum of all vehicles."""
    world: ContactWorld = sim.contact_world
    kinds = [c["kind"] for c in world.contacts]
    return {
        "contacts": kinds.count("CONTACT"),
        "docks": kinds.count("DOCK"),
        "undocks": kinds.count("UNDOCK"),
        "first_contact_s": next((c["t_ns"] / 1e9 for c in world.contacts), None),
    }


class CollisionParams(ContactScenario):
    a_start_m: Vec3 = Field((0.80, 1.00, 1.15), description="first vehicle's start in the test volume")
    b_start_m: Vec3 = Field((1.40, 1.30, 1.15), description="second vehicle's start")
    a_velocity_mps: Velocity = Field((0.10, 0.05, 0.0), description="the seed gives no velocities; these meet")
    b_velocity_mps: Velocity = Field((-0.10, -0.05, 0.0), description="second vehicle's velocity")
    a_yaw_deg: float = Field(90.0, ge=-360, le=360, description="ports (body +x) not facing: a's port points +Y")
    b_yaw_deg: float = Field(90.0, ge=-360, le=360, description="b's port points +Y too")


@scenario(
    "collision",
    CollisionParams,
    "two SPHERES approach at an angle, ports not facing, no control; e = 0.5 (seed 4.2)",
    default_duration_s=6.0,
    outcome=contact_outcome,
)
def build_collision(sim: Simulation, p: CollisionParams) -> None:
    world = ContactWorld(sim, p.contact)
    _add_vehicle(sim, world, p, "sph1", p.a_start_m, p.a_velocity_mps, p.a_yaw_deg)
    _add_vehicle(sim, world, p, "sph2", p.b_start_m, p.b_velocity_mps, p.b_yaw_deg)
    world.attach()
    sim.contact_world = world


class PassiveDockingParams(ContactScenario):
    a_start_m: Vec3 = Field((0.60, 1.15, 1.15), description="the slow vehicle, port facing +X")
    b_start_m: Vec3 = Field((1.40, 1.20, 1.15), description="5 cm Y offset; port facing -X")
    a_velocity_mps: Velocity = Field((0.05, 0.0, 0.0), description="seed: +5 cm/s")
    b_velocity_mps: Velocity = Field((-0.50, 0.0, 0.0), description="seed: -50 cm/s")
    undock_at_s: TimeS | None = Field(None, description="send sph2 an undock command at this time")
    separation_speed_mps: float = Field(0.05, ge=0, le=MAX_SPEED_MPS, description="speed apart after an undock")


@scenario(
    "passive_docking",
    PassiveDockingParams,
    "ports facing, 5 cm lateral offset, +5 and -50 cm/s, no control: latch at 20 cm (seed 4.3)",
    default_duration_s=6.0,
    outcome=contact_outcome,
)
def build_passive_docking(sim: Simulation, p: PassiveDockingParams) -> None:
    world = ContactWorld(sim, p.contact)
    _add_vehicle(sim, world, p, "sph1", p.a_start_m, p.a_velocity_mps, 0.0)
    _add_vehicle(sim, world, p, "sph2", p.b_start_m, p.b_velocity_mps, 180.0)
    world.attach()
    sim.contact_world = world
    if p.undock_at_s is not None:
        from hopsim.schemas import DockCommand

        sim.inject(
            "sph2/dock_cmd",
            DockCommand(vehicle="sph2", undock=True, separation_speed_mps=p.separation_speed_mps),
            p.undock_at_s,
        )


class PileupParams(ContactScenario):
    n_vehicles: int = Field(100, ge=1, le=100_000, description="number of vehicles in the box")
    box_m: float = Field(0.0, ge=0, description="edge of the cubic box (m); 0: sized for 10% volume fraction")
    speed_mps: float = Field(
        0.1, ge=0, le=MAX_SPEED_MPS, description="initial speed of each vehicle (random direction)"
    )
    spin_rad_s: float = Field(0.2, ge=0, le=MAX_SPIN_RAD_S, description="initial body rate magnitude (random axis)")
    docking: bool = Field(False, description="vehicles carry ports and may dock")

    @model_validator(mode="after")
    def _box_fits(self):
        if self.box_m and self.box_m < 4 * self.radius_m:
            raise ValueError(
                f"box_m = {self.box_m} m cannot hold a vehicle of radius {self.radius_m} m; "
                f"use at least {4 * self.radius_m} m or 0 for the default size"
            )
        return self


def pileup_layout(p: PileupParams, rng: np.random.Generator) -> tuple[float, np.ndarray, np.ndarray]:
    """(box edge m, start positions (N,3), velocities (N,3)): vehicles on a jittered lattice."""
    n, R = p.n_vehicles, p.radius_m
    per_side = math.ceil(detmath.pow(float(n), 1 / 3))
    box = p.box_m or max(detmath.pow(n * (4 / 3) * math.pi * (R * R * R) / 0.10, 1 / 3), 2 * R + per_side * 2.5 * R)
    pitch = (box - 2 * R) / per_side
    if pitch < 2 * R:
        raise ValueError(f"{n} vehicles of radius {R} m do not fit in a {box:.3g} m box; make box_m larger")
    cells = np.array([(i, j, k) for i in range(per_side) for j in range(per_side) for k in range(per_side)])[:n]
    jitter = (pitch - 2 * R) / 2 * rng.uniform(-1, 1, size=(n, 3))
    r = R + pitch * (cells + 0.5) + jitter
    d = detrandom.normal(rng, size=(n, 3))
    v = p.speed_mps * d / np.sqrt(np.sum(d * d, axis=1, keepdims=True))
    return box, r, v


@scenario(
    "pileup",
    PileupParams,
    "many SPHERES-class vehicles bouncing in a box (contact stress test)",
    default_duration_s=10.0,
    outcome=contact_outcome,
)
def build_pileup(sim: Simulation, p: PileupParams) -> None:
    rng = np.random.default_rng([sim.seed, 0x9113])
    box, r, v = pileup_layout(p, rng)
    contact = p.contact.model_copy(
        update={"volume_min_N": (0.0, 0.0, 0.0), "volume_max_N": (box, box, box), "docking": p.docking}
    )
    world = ContactWorld(sim, contact)
    axes = detrandom.normal(rng, size=(p.n_vehicles, 3))
    omegas = p.spin_rad_s * axes / np.sqrt(np.sum(axes * axes, axis=1, keepdims=True))
    width = len(str(p.n_vehicles - 1))
    for i in range(p.n_vehicles):
        _add_vehicle(
            sim,
            world,
            p,
            f"v{i:0{width}d}",
            tuple(r[i]),
            tuple(v[i]),
            float(rng.uniform(0, 360)),
            tuple(omegas[i]),
            port=p.docking,
        )
    world.attach()
    sim.contact_world = world
