"""``formation``: N free-flyers keep a ring or a square lattice by consensus over a lossy radio.

Each vehicle is its own island (dynamics, thruster, sensor, receiving radio, flight software; see
:mod:`hopsim.actors.formation` for the models and the control law). The vehicles start at their
nominal slots plus a random dispersion (seeded by the run seed) and converge to the nominal shape,
translated with the centroid, which the symmetric law leaves in uniform motion.

The vehicle class is a 50 kg, 0.5 m free-flyer with a cold-gas cluster of 0.5 N per axis, flying
10 m apart. Its default control rate is 1 Hz: the shape modes this law controls are no faster than
``bandwidth_rad_s`` = 0.05 rad/s (a period of about two minutes, the pace of formation-keeping at
tens of metres with sub-newton thrusters), so 1 Hz samples the fastest mode about 125 times per
period and the one-period radio latency costs 0.05 rad of phase; a faster controller would buy
nothing but barriers. Every model of a vehicle runs at that one rate and the radio latency is a
whole number of control periods (``radio_latency_s`` is rounded up to one, at least one period:
the first control step at or after the packet's arrival uses it), so that each vehicle has exactly
one barrier and one hop per control period. A vehicle subscribes to its neighbours' broadcasts
only (ring: 2, lattice: up to 4), never to all N.

Topics of vehicle ``v``: ``v/state`` (truth), ``v/meas``, ``v/thrust``, ``v/air`` (broadcast,
delayed by the radio latency), ``v/rx`` (the packets the radio let through).
"""

from __future__ import annotations

import math
from typing import Literal

import numpy as np
from pydantic import Field, field_validator, model_validator

from hopsim.actors.formation import (
    HISTORY,
    FormationFlightSoftware,
    FormationThruster,
    NeighbourRadio,
    StateSensor,
    consensus_gains,
    neighbours,
    period_ns,
    radio_delay_periods,
    slot_positions,
    vehicle_names,
)
from hopsim.actors.vehicle_dynamics import RigidVehicleDynamics
from hopsim.dynamics import detlinalg, detrandom
from hopsim.dynamics.integrators import make_integrator
from hopsim.kernel import Simulation, Tie
from hopsim.kernel.bounds import MAX_FORCE_N, Probability, RateHz, TimeS
from hopsim.kernel.model import model_rng
from hopsim.scenarios.registry import ScenarioParams, scenario

INITIAL_STATE_STREAM = "formation.initial_dispersion"  # generator name of the initial dispersion


class FormationParams(ScenarioParams):
    n_vehicles: int = Field(
        100, ge=1, le=100_000, description="number of vehicles (one island each; 10,000 take about 1 GiB)"
    )
    layout: Literal["ring", "lattice"] = Field(
        "ring",
        description="ring: regular polygon of side spacing_m, 2 neighbours; lattice: square "
        "grid of pitch spacing_m, 4-neighbour",
    )
    spacing_m: float = Field(10.0, gt=0, le=1e7, description="distance between neighbouring slots (m)")
    control_rate_hz: RateHz = Field(
        1.0,
        gt=0,
        le=1000,
        description=(
            "rate of every model of a vehicle (sensor, radio, flight software, thruster updates, "
            "truth output); 1/rate must be a whole number of ns"
        ),
    )
    dynamics_steps: int = Field(
        1,
        ge=1,
        le=1000,
        description=(
            "RK4 steps of the dynamics in each hop (one period of control_rate_hz): 10 integrates at "
            "10 Hz under 1 Hz control"
        ),
    )
    radio_latency_s: TimeS = Field(
        0.2,
        ge=0,
        description=(
            "link latency; a packet is used at the first control step at or after its arrival, at "
            "least one period after it was sent"
        ),
    )
    radio_loss: Probability = Field(0.0, description="probability that a receiver loses a packet")
    noise: bool = Field(True, description="sensor noise on")
    position_noise_m: float = Field(0.01, ge=0, le=1e6, description="1-sigma position noise per axis (m)")
    velocity_noise_mps: float = Field(0.0005, ge=0, le=1e3, description="1-sigma velocity noise per axis (m/s)")
    dispersion_m: float = Field(1.0, ge=0, le=1e6, description="1-sigma initial position error per axis (m)")
    dispersion_mps: float = Field(0.002, ge=0, le=1e3, description="1-sigma initial velocity per axis (m/s)")
    mass_kg: float = Field(50.0, ge=0.01, le=1e6, description="each vehicle's mass")
    size_m: float = Field(0.5, ge=0.01, le=100, description="edge of the cubic body (inertia of a uniform cube)")
    max_thrust_N: float = Field(0.5, gt=0, le=MAX_FORCE_N, description="saturation per inertial axis (N)")
    min_thrust_N: float = Field(0.0, ge=0, le=MAX_FORCE_N, description="smaller commands per axis give no thrust (N)")
    bandwidth_rad_s: float = Field(
        0.05, gt=0, le=1e4, description="natural frequency of the fastest shape mode (rad/s)"
    )
    damping_ratio: float = Field(1.0, gt=0, le=100, description="damping of the fastest shape mode")
    brake_gain_per_s: float = Field(0.05, gt=0, le=1e4, description="fallback: a = -gain * own velocity (1/s)")
    stale_after_s: TimeS = Field(
        5.0,
        gt=0,
        description=(
            "a neighbour unheard for this long is left out; with none left the vehicle brakes (raised "
            "to at least one period more than the radio delay)"
        ),
    )

    @field_validator("control_rate_hz")
    @classmethod
    def _whole_ns_period(cls, v: float) -> float:
        period_ns(v)  # raises ValueError with the explanation
        return v

    @field_validator("min_thrust_N")
    @classmethod
    def _min_below_max(cls, v: float, info) -> float:
        top = info.data.get("max_thrust_N")
        if top is not None and v > top:
            raise ValueError(f"min_thrust_N ({v}) must not exceed max_thrust_N ({top})")
        return v

    @model_validator(mode="after")
    def _history_fits(self):
        """The flight software keeps its own broadcasts of the last stale period (HISTORY at most)."""
        stale_s = max(self.stale_after_s, (self.delay_periods() + 1) / self.control_rate_hz)
        if math.ceil(stale_s * self.control_rate_hz) + 2 > HISTORY:
            raise ValueError(
                f"stale_after_s x control_rate_hz must be at most {HISTORY - 2} (the flight software keeps "
                f"{HISTORY} broadcasts), got {stale_s:g} s at {self.control_rate_hz:g} Hz: lower stale_after_s "
                f"(or radio_latency_s)"
            )
        return self

    def delay_periods(self) -> int:
        return radio_delay_periods(self.radio_latency_s, self.control_rate_hz)


def initial_states(p: FormationParams, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(slots, r0, v0), each n x 3: nominal slots and the dispersed initial positions and velocities,
    drawn from the run seed's generator named :data:`INITIAL_STATE_STREAM`."""
    slots = slot_positions(p.n_vehicles, p.layout, p.spacing_m)
    rng = model_rng(seed, INITIAL_STATE_STREAM)
    r0 = slots + p.dispersion_m * detrandom.standard_normal(rng, slots.shape)
    v0 = p.dispersion_mps * detrandom.standard_normal(rng, slots.shape)
    return slots, r0, v0


def _truth(sim: Simulation, names: list[str]) -> tuple[np.ndarray, np.ndarray]:
    x = np.array([sim.model(v).x[0:6] for v in names])
    return x[:, 0:3], x[:, 3:6]


def formation_error(r: np.ndarray, slots: np.ndarray) -> np.ndarray:
    """Each vehicle's distance from its slot of the nominal shape placed on the current centroid (m)."""
    e = (r - r.mean(axis=0)) - (slots - slots.mean(axis=0))
    return np.sqrt(np.sum(e * e, axis=1))


def formation_outcome(sim: Simulation) -> dict:
    """Shape error (RMS and max, m), centroid drift from uniform motion (m), propellant (impulse N s),
    radio statistics and the flight-software modes at the end."""
    p: FormationParams = sim.scenario_params
    names = vehicle_names(p.n_vehicles)
    slots, r0, v0 = initial_states(p, sim.seed)
    r, v = _truth(sim, names)
    err = formation_error(r, slots)
    err0 = formation_error(r0, slots)
    centroid_expected = r0.mean(axis=0) + v0.mean(axis=0) * sim.time
    fsw = [sim.model(f"{n}_fsw") for n in names]
    radios = [sim.model(f"{n}_radio") for n in names]
    thr = [sim.model(f"{n}_thr") for n in names]
    dv = v - v.mean(axis=0)
    return {
        "formation_error_rms_m": float(np.sqrt(np.mean(err * err))),
        "formation_error_max_m": float(err.max()),
        "initial_error_rms_m": float(np.sqrt(np.mean(err0 * err0))),
        "centroid_drift_m": detlinalg.norm(r.mean(axis=0) - centroid_expected),
        "relative_speed_rms_mps": float(np.sqrt(np.mean(np.sum(dv * dv, axis=1)))),
        "impulse_Ns": float(sum(t.impulse_Ns for t in thr)),
        "saturated_hops": int(sum(t.saturated_hops for t in thr)),
        "packets_received": int(sum(x.received for x in radios)),
        "packets_lost": int(sum(x.lost for x in radios)),
        "vehicles_braking": int(sum(f.mode_name == "brake" for f in fsw)),
    }


@scenario(
    "formation",
    FormationParams,
    "N free-flyers (default 100, one island each) keep a ring or lattice by consensus over a lossy radio",
    default_duration_s=600.0,
    outcome=formation_outcome,
)
def build_formation(sim: Simulation, p: FormationParams) -> None:
    n = p.n_vehicles
    names = vehicle_names(n)
    slots, r0, v0 = initial_states(p, sim.seed)
    nbrs = neighbours(n, p.layout)
    kp, kd = consensus_gains(p.bandwidth_rad_s, p.damping_ratio, max((len(x) for x in nbrs), default=0))
    rate = p.control_rate_hz
    delay_s = p.delay_periods() * period_ns(rate) / 1e9  # exact multiple of the period
    stale_s = max(p.stale_after_s, (p.delay_periods() + 1) / rate)
    inertia = np.eye(3) * (p.mass_kg * p.size_m * p.size_m / 6.0)
    sigma_r = p.position_noise_m if p.noise else 0.0
    sigma_v = p.velocity_noise_mps if p.noise else 0.0
    for i, v in enumerate(names):
        sim.add_island(v, integrator=make_integrator("rk4"), n_integration_steps=p.dynamics_steps)
        body = sim.add_model(
            RigidVehicleDynamics(v, p.mass_kg, inertia, r_BN_N=r0[i], v_BN_N=v0[i], rate_hz=rate),
            v,
            ties={"state": f"{v}/state"},
        )
        sim.add_model(
            FormationThruster(f"{v}_thr", body, p.max_thrust_N, p.min_thrust_N), v, ties={"cmd": f"{v}/thrust"}
        )
        sim.add_model(StateSensor(f"{v}_nav", body, rate, sigma_r, sigma_v), v, ties={"meas": f"{v}/meas"})
        sim.add_model(
            NeighbourRadio(f"{v}_radio", len(nbrs[i]), p.radio_loss),
            v,
            ties={**{f"n{k}": f"{names[j]}/air" for k, j in enumerate(nbrs[i])}, "rx": f"{v}/rx"},
        )
        offsets = {names[j]: tuple(slots[i] - slots[j]) for j in nbrs[i]}
        sim.add_model(
            FormationFlightSoftware(f"{v}_fsw", v, p.mass_kg, rate, offsets, kp, kd, p.brake_gain_per_s, stale_s),
            v,
            ties={
                "meas": f"{v}/meas",
                "rx": f"{v}/rx",
                "thrust": f"{v}/thrust",
                "air": Tie(f"{v}/air", latency_s=delay_s),
            },
        )
