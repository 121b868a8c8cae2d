"""``orbit_formation``: N deputies keep passively safe slots about a chief in low Earth orbit.

The chief flies a circular orbit (``altitude_m``, ``inclination_deg``) under the GGM03S field to
``gravity_degree`` (J2 and C22 at the default 2) and, with ``drag``, an exponential atmosphere
(``density_kgpm3`` at the chief's altitude, ``scale_height_m``) acting on each spacecraft's
C_D A (``cd_area_m2``, the deputies' spread linearly by +-``cd_area_spread`` so that differential
drag acts). Deputy k of ``n_vehicles`` (``d0`` ...) starts on its slot, a relative orbit of parallel
e/i vectors of sizes ``de_m`` and ``di_m`` at phase 2 pi k / N (D'Amico's e/i-vector separation;
see :mod:`hopsim.actors.orbit_formation`, which also holds the flight software), placed by
:func:`hopsim.dynamics.orbital_elements.deputy_elements`, plus a seeded Hill-frame position error
of ``injection_error_m`` per axis (1 sigma, from the run seed's generator named
:data:`INJECTION_STREAM`).

Every spacecraft is its own island. The chief's island: the spacecraft, its GNSS receiver and its
transmitter ``chief_radio`` (packet loss ``radio_loss``, latency ``radio_latency_s``), which
broadcasts the chief's fixes on ``chief/air``. A deputy ``d`` island: the spacecraft, its GNSS
(``d_gnss``), a tank (``d_tank``), six pulsed thrusters (``d_thr0`` ... ``d_thr5``: +x, -x, +y, -y,
+z, -z of the body, held aligned with N) and its flight software ``d_fsw``
(:class:`~hopsim.actors.orbit_formation.SlotKeeper`): relative state from the two fixes of one
instant, slot error, CW-feedforward PD with a deadband, acting (and commanding its thrusters)
``radio_latency_s`` after each GNSS step, the instant the chief's fix of the step arrives (at most
half a period after the step). Topics of ``d``: ``d/state``, ``d/fix``,
``d/error`` (the estimated slot error, Hill frame), ``d/mass``, ``d/fuel``, ``d/thr<i>/...``.

Faults by bus message: ``thruster_stuck_on`` (and ``thruster_stuck_off``, ``thrust_scale``) on a
deputy's thruster (``d0_thr0`` ...), ``dropout`` on a GNSS receiver (``d0_gnss``, ``chief_gnss``),
``partition`` (every broadcast lost until cleared) and ``radio_loss`` on ``chief_radio``,
``disturbance`` on a spacecraft.
"""

from __future__ import annotations

import math

import numpy as np
from pydantic import Field, field_validator

from hopsim.actors.formation import period_ns
from hopsim.actors.orbit_formation import BroadcastRadio, SlotKeeper, passively_safe_roe, slot_reference
from hopsim.actors.orbiting_spacecraft import OrbitingSpacecraft
from hopsim.actors.propulsion import G0, FuelTank, PulsedThruster
from hopsim.actors.sensors import GnssReceiver
from hopsim.dynamics import detmath, detrandom
from hopsim.dynamics.orbit_frames import hill_to_inertial, inertial_to_hill
from hopsim.dynamics.orbital_elements import argument_of_latitude, deputy_elements, state_from_elements
from hopsim.dynamics.spherical_harmonics import ggm03s
from hopsim.kernel import Simulation, Tie
from hopsim.kernel.bounds import Probability, RateHz, TimeS
from hopsim.kernel.model import model_rng
from hopsim.scenarios.orbit_integration import INTEGRATORS, orbit_island
from hopsim.scenarios.registry import ScenarioParams, scenario

AXES_B = [(1, 0, 0), (-1, 0, 0), (0, 1, 0), (0, -1, 0), (0, 0, 1), (0, 0, -1)]
INJECTION_STREAM = "orbit_formation.injection_error"  # generator name of the initial slot errors
INERTIA_B = np.diag([12.0, 14.0, 10.0])  # kg m^2, a 100 kg microsatellite


class OrbitFormationParams(ScenarioParams):
    n_vehicles: int = Field(10, ge=1, le=10_000, description="number of deputies (each its own island)")
    altitude_m: float = Field(500e3, ge=200e3, le=2000e3, description="the chief's circular orbit altitude (m)")
    inclination_deg: float = Field(51.6, ge=1, le=179, description="the chief's inclination (deg; not equatorial)")
    gravity_degree: int = Field(2, ge=0, le=20, description="GGM03S degree and order (0: point mass)")
    drag: bool = Field(True, description="atmospheric drag on every spacecraft (exponential atmosphere)")
    density_kgpm3: float = Field(
        6.967e-13, ge=0, le=1e-6, description="air density at the chief's altitude (kg/m^3; Vallado's 500 km value)"
    )
    scale_height_m: float = Field(63_822.0, gt=1e3, le=1e6, description="density scale height (m)")
    cd_area_m2: float = Field(0.6, ge=0, le=100, description="C_D A of the chief and the mean deputy (m^2)")
    cd_area_spread: float = Field(
        0.2,
        ge=0,
        lt=1,
        description=("the deputies' C_D A spread linearly over [1 - s, 1 + s] times cd_area_m2 (differential drag)"),
    )
    de_m: float = Field(200.0, gt=0, le=10e3, description="a_c |delta e|: radial amplitude of each slot (m)")
    di_m: float = Field(150.0, gt=0, le=10e3, description="a_c |delta i|: cross-track amplitude of each slot (m)")
    injection_error_m: float = Field(1.0, ge=0, le=1e3, description="initial Hill position error, 1 sigma per axis (m)")
    control: bool = Field(True, description="slot keeping on (off: the flight software estimates but never fires)")
    deadband_m: float = Field(2.0, gt=0, le=1e4, description="fire when the estimated slot error exceeds this (m)")
    bandwidth_rad_s: float = Field(0.01, gt=0, le=0.5, description="natural frequency of the slot error loop (rad/s)")
    control_rate_hz: RateHz = Field(0.1, le=10, description="GNSS, radio and flight-software rate (Hz)")
    deputy_mass_kg: float = Field(100.0, gt=0, le=1e4, description="each deputy's dry mass (kg)")
    fuel_kg: float = Field(2.0, gt=0, le=1e3, description="each deputy's propellant (kg)")
    thrust_N: float = Field(0.1, gt=0, le=100, description="each thruster's thrust (N)")
    isp_s: float = Field(220.0, ge=1, le=1e4, description="thruster specific impulse (s)")
    gnss_sigma_m: float = Field(0.1, ge=0, le=100, description="GNSS position noise, 1 sigma per axis (m)")
    gnss_sigma_mps: float = Field(0.001, ge=0, le=1, description="GNSS velocity noise, 1 sigma per axis (m/s)")
    radio_latency_s: TimeS = Field(0.1, ge=0, le=4, description="the chief's fixes reach the deputies after this (s)")
    radio_loss: Probability = Field(0.0, description="probability that a broadcast is lost")
    integrator: str = Field(
        "rk4",
        pattern=INTEGRATORS,
        description=(
            "rk4: sub-steps of at most 10 s, the compiled hop; dop853: adaptive, rtol 1e-11 (see "
            "hopsim.scenarios.orbit_integration)"
        ),
    )

    @field_validator("control_rate_hz")
    @classmethod
    def _whole_ns_period(cls, v: float) -> float:
        period_ns(v)  # the thrusters' command period must be the flight software's, to the ns
        return v


def deputy_names(n: int) -> list[str]:
    """``d0 .. d{n-1}`` zero-padded to one width, so that names sort like indices."""
    width = len(str(max(n - 1, 0)))
    return [f"d{i:0{width}d}" for i in range(n)]


def chief_orbit(p: OrbitFormationParams) -> tuple[tuple, float, float]:
    """(the chief's elements, a_c m, mean motion n rad/s): circular, at the node at t = 0."""
    mu = ggm03s().mu
    a = ggm03s().radius + p.altitude_m
    return (a, 0.0, math.radians(p.inclination_deg), 0.0, 0.0, 0.0), a, math.sqrt(mu / (a * a * a))


def slots(p: OrbitFormationParams) -> np.ndarray:
    """Every deputy's slot relative elements (n x 6)."""
    _, a, _ = chief_orbit(p)
    return np.array([passively_safe_roe(a, k, p.n_vehicles, p.de_m, p.di_m) for k in range(p.n_vehicles)])


def slot_errors(sim: Simulation) -> np.ndarray:
    """Each deputy's true slot error (n x 3, m, chief's Hill frame): truth minus the slot's
    first-order reference at the chief's true argument of latitude."""
    p: OrbitFormationParams = sim.scenario_params
    _, a, n = chief_orbit(p)
    chief = sim.model("chief").x
    u = argument_of_latitude(chief[0:3], chief[3:6])
    out = []
    for name, roe in zip(deputy_names(p.n_vehicles), slots(p)):
        d = sim.model(name).x
        rho, _ = inertial_to_hill(chief[0:3], chief[3:6], d[0:3], d[3:6])
        out.append(rho - slot_reference(a, n, u, roe)[0])
    return np.array(out).reshape(-1, 3)


def smallest_separation_m(sim: Simulation) -> float:
    """The smallest distance between any two spacecraft now (truth, m)."""
    from scipy.spatial import cKDTree

    p: OrbitFormationParams = sim.scenario_params
    r = np.array([sim.model(v).x[0:3] for v in ["chief", *deputy_names(p.n_vehicles)]])
    d, _ = cKDTree(r).query(r, k=2)
    return float(d[:, 1].min())


def orbit_formation_outcome(sim: Simulation) -> dict:
    """Slot errors at the end (truth, largest and rms, m), deputies outside their deadband,
    delta-v (Tsiolkovsky from each tank: Isp g0 ln(m0 / m), total and largest, m/s), the smallest
    distance between any two spacecraft at the end (m; over the run it is read from the recorded
    states), the broadcasts lost and the flight-software steps spent blind."""
    p: OrbitFormationParams = sim.scenario_params
    e = slot_errors(sim)
    err = np.sqrt(np.sum(e * e, axis=1))
    names = deputy_names(p.n_vehicles)
    dv = []
    for v in names:
        tank = sim.model(f"{v}_tank")
        used = tank.fuel0_kg - max(float(tank.x[0]), 0.0)
        m0 = tank.dry_mass_kg + tank.fuel0_kg
        dv.append(p.isp_s * G0 * detmath.log(m0 / (m0 - used)))
    return {
        "slot_error_max_m": float(err.max()),
        "slot_error_rms_m": float(np.sqrt(np.mean(err * err))),
        "outside_deadband": int(np.sum(err > p.deadband_m)),
        "dv_total_mps": float(sum(dv)),
        "dv_max_mps": float(max(dv)),
        "separation_end_min_m": smallest_separation_m(sim),
        "broadcasts_lost": int(sim.model("chief_radio").lost),
        "blind_steps": int(sum(sim.model(f"{v}_fsw").steps["blind"] for v in names)),
    }


@scenario(
    "orbit_formation",
    OrbitFormationParams,
    "N deputies (default 10, one island each) keep passively safe e/i-separated slots about a chief "
    "in LEO, by GNSS and a lossy radio",
    default_duration_s=600.0,
    outcome=orbit_formation_outcome,
)
def build_orbit_formation(sim: Simulation, p: OrbitFormationParams) -> None:
    field = ggm03s()
    chief_el, a, n = chief_orbit(p)
    r_c, v_c = state_from_elements(*chief_el, field.mu)
    rate = p.control_rate_hz
    period = 1.0 / rate
    # the flight software acts as the chief's fix of the step arrives: a barrier delivers before it
    # calls update_flow_outs (with no latency the fix arrives 1 ns after the step, as any message
    # between islands does)
    phase = min(max(p.radio_latency_s, 1e-9), 0.5 * period)
    atmosphere = dict(rho0_kgpm3=p.density_kgpm3 if p.drag else 0.0, h0_m=p.altitude_m, scale_height_m=p.scale_height_m)
    common = dict(
        field=field if p.gravity_degree > 0 else None,
        degree=p.gravity_degree,
        mu=field.mu,
        gravity_gradient=False,
        rate_hz=rate,
        **atmosphere,
    )
    integration = dict(integrator=p.integrator, longest_hop_s=period, rtol=1e-11, atol=1e-4, max_step_s=20.0)
    mass0 = p.deputy_mass_kg + p.fuel_kg

    sim.scene["hill_chief"] = "chief"  # the viewers show the deputies in the chief's Hill frame
    sim.add_island("chief", **orbit_island(**integration))
    sim.add_model(
        OrbitingSpacecraft("chief", r_c, v_c, mass0, INERTIA_B, cd_area_m2=p.cd_area_m2, **common),
        "chief",
        ties={"state": "chief/state"},
    )
    sim.add_model(
        GnssReceiver("chief_gnss", "chief", p.gnss_sigma_m, p.gnss_sigma_mps, rate_hz=rate),
        "chief",
        ties={"state": "chief/state", "fix": "chief/fix"},
    )
    sim.add_model(
        BroadcastRadio("chief_radio", p.radio_loss),
        "chief",
        ties={"fix": "chief/fix", "air": Tie("chief/air", latency_s=p.radio_latency_s)},
    )

    names = deputy_names(p.n_vehicles)
    rng = model_rng(sim.seed, INJECTION_STREAM)
    injection = p.injection_error_m * detrandom.standard_normal(rng, (p.n_vehicles, 3))
    spread = np.linspace(-1.0, 1.0, p.n_vehicles) if p.n_vehicles > 1 else np.zeros(1)
    for k, (v, roe) in enumerate(zip(names, slots(p))):
        r_d, v_d = state_from_elements(*deputy_elements(chief_el, roe), field.mu)
        rho, rho_dot = inertial_to_hill(r_c, v_c, r_d, v_d)
        r_d, v_d = hill_to_inertial(r_c, v_c, rho + injection[k], rho_dot)
        sim.add_island(v, **orbit_island(**integration))
        sim.add_model(
            OrbitingSpacecraft(
                v,
                r_d,
                v_d,
                mass0,
                INERTIA_B,
                n_thrusters=6,
                cd_area_m2=p.cd_area_m2 * (1.0 + p.cd_area_spread * spread[k]),
                **common,
            ),
            v,
            ties={"state": f"{v}/state", "mass": f"{v}/mass", **{f"wrench{i}": f"{v}/thr{i}/wrench" for i in range(6)}},
        )
        sim.add_model(
            GnssReceiver(f"{v}_gnss", v, p.gnss_sigma_m, p.gnss_sigma_mps, rate_hz=rate),
            v,
            ties={"state": f"{v}/state", "fix": f"{v}/fix"},
        )
        sim.add_model(
            FuelTank(
                f"{v}_tank",
                6,
                p.fuel_kg,
                p.fuel_kg,
                p.deputy_mass_kg,
                inertia_empty_B=INERTIA_B,
                inertia_full_B=INERTIA_B,
                rate_hz=rate,
            ),
            v,
            ties={
                **{f"flow{i}": f"{v}/thr{i}/flow" for i in range(6)},
                "fuel_remaining": f"{v}/fuel",
                "mass": f"{v}/mass",
            },
        )
        for i, axis in enumerate(AXES_B):
            sim.add_model(
                PulsedThruster(
                    f"{v}_thr{i}", v, p.thrust_N, p.isp_s, axis, period_s=period, min_on_time_s=0.02, phase_s=phase
                ),
                v,
                ties={
                    "on_time": f"{v}/thr{i}/on_time",
                    "fuel_remaining": f"{v}/fuel",
                    "wrench": f"{v}/thr{i}/wrench",
                    "flow": f"{v}/thr{i}/flow",
                },
            )
        sim.add_model(
            SlotKeeper(
                f"{v}_fsw",
                v,
                roe,
                a,
                n,
                p.thrust_N,
                mass0,
                rate_hz=rate,
                phase_s=phase,
                deadband_m=p.deadband_m,
                bandwidth_rad_s=p.bandwidth_rad_s,
                control=p.control,
                stale_after_s=max(3.0 * period, p.radio_latency_s + period),
            ),
            v,
            ties={
                "own": f"{v}/fix",
                "chief": "chief/air",
                "mass": f"{v}/mass",
                "error": f"{v}/error",
                **{f"on_time{i}": f"{v}/thr{i}/on_time" for i in range(6)},
            },
        )
