"""``constellation``: a Walker delta constellation i:T/P/F keeps its slots against drag by
along-track station keeping; one island per satellite (made for Ray placement ``shards:K``).

Geometry (J. G. Walker, "Satellite constellations", J. British Interplanetary Society 37, 559-572,
1984; Vallado, Fundamentals of Astrodynamics and Applications, 4th ed., 2013, sec. 11.5): T
satellites in P equally spaced planes of inclination i, S = T / P per plane, phasing F in 0..P-1.
Satellite j of plane k (j = 0..S-1, k = 0..P-1) has

    RAAN = k 360 / P deg,    u = j 360 P / T + k F 360 / T deg    (argument of latitude at t = 0)

on a circular orbit of altitude ``altitude_m`` above the GGM03S reference radius R. The orbit is
circular in mean elements: its osculating semi-major axis carries the first-order J2
short-period term of a circular orbit, a_osc = a + (3/2) J2 (R^2 / a) sin^2 i cos 2u (Brouwer 1959;
Schaub and Junkins, Analytical Mechanics of Space Systems, app. F), without which a satellite's
mean motion would depend on its u by up to 0.5 deg per orbit at 550 km (point mass: a_osc = a).

Each satellite (island and spacecraft ``pKKsJJ``, names sorted by plane then slot) has:
an :class:`~hopsim.actors.orbiting_spacecraft.OrbitingSpacecraft` (gravity: GGM03S to
``gravity_degree``; drag: ``cd_area_m2`` times a per-satellite factor 1 + ``ballistic_spread``
U(-1, 1) drawn from the run seed, in the exponential atmosphere of Vallado's Table 8-4 row for the
altitude, times ``density_scale``); the attitude is the local vertical-local horizontal frame
(body x along the velocity, z to nadir, y against the orbit normal) kept by a torque-free spin at
the slot's rate about the orbit normal (no attitude control is modelled; J2's nodal regression,
-4.5 deg/day at the default orbit, turns the orbit normal away from the inertially fixed spin axis,
so runs of a few days stay within a few degrees); a :class:`~hopsim.actors.sensors.GnssReceiver`
``pKKsJJ_gnss``; a :class:`~hopsim.actors.propulsion.FuelTank` ``pKKsJJ_tank`` feeding two
:class:`~hopsim.actors.propulsion.PulsedThruster`: ``pKKsJJ_thr0`` along +x (prograde) and
``pKKsJJ_thr1`` along -x (retrograde); and the flight software
:class:`~hopsim.actors.station_keeping.StationKeeping` ``pKKsJJ_sk`` (the slot rate, the phase
error and the control law are in that module). Every model runs every ``control_period_s``.

Faults by bus message: ``thruster_stuck_off`` on ``pKKsJJ_thr0`` (the prograde thruster that makes
up drag: the satellite drifts ahead out of its box), ``dropout`` on ``pKKsJJ_gnss`` (its flight
software stops manoeuvring, never on stale data, and drifts), ``disturbance`` on ``pKKsJJ``.

Topics of satellite ``s``: ``s/state``, ``s/fix``, ``s/mass``, ``s/fuel``, ``s/thr{0,1}/on_time``,
``s/thr{0,1}/wrench``, ``s/thr{0,1}/flow``.
"""

from __future__ import annotations

import math

import numpy as np
from pydantic import Field, model_validator

from hopsim.actors.orbiting_spacecraft import OrbitingSpacecraft
from hopsim.actors.propulsion import G0, FuelTank, PulsedThruster
from hopsim.actors.sensors import GnssReceiver
from hopsim.actors.station_keeping import StationKeeping, phase_error, slot_rate
from hopsim.dynamics import detlinalg, detmath
from hopsim.dynamics.environment import density_band
from hopsim.dynamics.orbital_elements import state_from_elements
from hopsim.dynamics.spatial import dcm_to_quat
from hopsim.dynamics.spherical_harmonics import ggm03s
from hopsim.kernel import Simulation
from hopsim.kernel.bounds import PeriodS
from hopsim.kernel.model import model_rng
from hopsim.scenarios.orbit_integration import INTEGRATORS, orbit_island
from hopsim.scenarios.registry import ScenarioParams, scenario

BALLISTIC_STREAM = "constellation.ballistic"  # generator name of the per-satellite drag factors


class ConstellationParams(ScenarioParams):
    n_satellites: int = Field(24, ge=1, le=10_000, description="T: satellites in all (one island each)")
    n_planes: int = Field(3, ge=1, le=10_000, description="P: orbital planes; T must be a multiple of P")
    phasing: int = Field(
        1,
        ge=0,
        le=9_999,
        description="F: Walker phasing factor, 0..P-1 (the shift between adjacent planes is F 360 / T deg)",
    )
    altitude_m: float = Field(550e3, ge=200e3, le=2000e3, description="circular orbit altitude above R (m)")
    inclination_deg: float = Field(53.0, ge=0, le=180, description="orbit inclination (deg)")
    gravity_degree: int = Field(2, ge=0, le=20, description="GGM03S degree and order (0: point mass)")
    drag: bool = Field(True, description="atmospheric drag on (exponential atmosphere, Vallado Table 8-4)")
    density_scale: float = Field(
        1.0, gt=0, le=1e6, description="multiplies the air density (e.g. solar activity; large values make tests fast)"
    )
    cd_area_m2: float = Field(2.2, ge=0, le=1e3, description="mean drag coefficient times area C_D A (m^2)")
    ballistic_spread: float = Field(
        0.3,
        ge=0,
        le=0.9,
        description="each satellite's C_D A is the mean times 1 + spread U(-1, 1), drawn from the seed",
    )
    mass_kg: float = Field(250.0, gt=0, le=1e5, description="each satellite's dry mass (kg)")
    fuel_kg: float = Field(5.0, gt=0, le=1e4, description="each satellite's propellant (kg)")
    thrust_N: float = Field(1.0, gt=0, le=1e3, description="each thruster's thrust (N)")
    isp_s: float = Field(220.0, ge=1, le=1e4, description="thruster specific impulse (s)")
    station_keeping: bool = Field(True, description="the flight software fires (off: it only monitors)")
    box_deg: float = Field(
        0.5, gt=0, le=45, description="half-width of the along-track box about the slot (deg of argument of latitude)"
    )
    return_orbits: float = Field(
        3.0, gt=0, le=1e3, description="a correction aims the drift at the far edge of the box in this many orbits"
    )
    control_period_s: PeriodS = Field(
        60.0,
        ge=1,
        le=3600,
        description="the period of every model: spacecraft output, GNSS, flight software, thrusters (s)",
    )
    gnss_sigma_m: float = Field(5.0, ge=0, le=1e3, description="GNSS position noise, 1 sigma per axis (m)")
    gnss_sigma_mps: float = Field(0.05, ge=0, le=10, description="GNSS velocity noise, 1 sigma per axis (m/s)")
    integrator: str = Field(
        "rk4",
        pattern=INTEGRATORS,
        description=(
            "rk4: sub-steps of at most 10 s, the compiled hop; dop853: adaptive, rtol 1e-10 (see "
            "hopsim.scenarios.orbit_integration)"
        ),
    )

    @model_validator(mode="after")
    def _walker(self):
        if self.n_satellites % self.n_planes:
            raise ValueError(
                f"n_satellites (T = {self.n_satellites}) must be a multiple of n_planes "
                f"(P = {self.n_planes}): a Walker constellation has T / P satellites in every plane"
            )
        if self.phasing >= self.n_planes:
            raise ValueError(f"phasing (F = {self.phasing}) must lie in 0..n_planes - 1 = {self.n_planes - 1}")
        if self.control_period_s * 1e9 != round(self.control_period_s * 1e9):
            raise ValueError(f"control_period_s must be a whole number of ns, got {self.control_period_s}")
        return self


def satellite_names(p: ConstellationParams) -> list[str]:
    """``pKKsJJ`` for plane k and slot j, plane-major (sorted names keep planes together)."""
    s = p.n_satellites // p.n_planes
    wk, wj = max(2, len(str(p.n_planes - 1))), max(2, len(str(s - 1)))
    return [f"p{k:0{wk}d}s{j:0{wj}d}" for k in range(p.n_planes) for j in range(s)]


def walker_slots(p: ConstellationParams) -> list[tuple[float, float]]:
    """(RAAN rad, u at t = 0 rad) of every satellite, in the order of :func:`satellite_names`."""
    s = p.n_satellites // p.n_planes
    t, n_p, f = p.n_satellites, p.n_planes, p.phasing
    return [
        (math.radians(k * 360.0 / n_p), math.radians((j * 360.0 * n_p / t + k * f * 360.0 / t) % 360.0))
        for k in range(n_p)
        for j in range(s)
    ]


def reference_orbit(p: ConstellationParams) -> tuple[float, float, float, float, float]:
    """(a m, inclination rad, mu m^3/s^2, J2 (0 for a point mass), R m) of the reference orbit."""
    field = ggm03s()
    j2 = -float(field.unnormalized(2)[0][2][0]) if p.gravity_degree >= 2 else 0.0
    return field.radius + p.altitude_m, math.radians(p.inclination_deg), field.mu, j2, field.radius


def initial_state(p: ConstellationParams, raan: float, u: float) -> tuple[np.ndarray, np.ndarray]:
    """(r_N m, v_N m/s) of the slot at (RAAN, u), mean-circular (see the module)."""
    a, inc, mu, j2, radius = reference_orbit(p)
    si = detmath.sin(inc)
    a_osc = a + 1.5 * j2 * (radius * radius) / a * (si * si) * detmath.cos(2.0 * u)
    return state_from_elements(a_osc, 0.0, inc, raan, 0.0, u, mu)


def ballistic_factors(p: ConstellationParams, seed: int) -> np.ndarray:
    """Each satellite's C_D A over the mean: 1 + spread U(-1, 1) from the run seed's generator
    :data:`BALLISTIC_STREAM`."""
    rng = model_rng(seed, BALLISTIC_STREAM)
    return 1.0 + p.ballistic_spread * rng.uniform(-1.0, 1.0, p.n_satellites)


def lvlh_attitude(r_N: np.ndarray, v_N: np.ndarray, rate_radps: float) -> tuple[np.ndarray, np.ndarray]:
    """(q_BN scalar last, omega_BN_B rad/s): body x along v, z to nadir, y = z x x (against the
    orbit normal), spinning at ``rate_radps`` about the orbit normal."""
    x = v_N / detlinalg.norm(v_N)
    z = -r_N / detlinalg.norm(r_N)
    y = np.cross(z, x)
    x = np.cross(y, z)
    return dcm_to_quat(np.column_stack([x, y, z])), np.array([0.0, -rate_radps, 0.0])


def phase_errors(sim: Simulation) -> np.ndarray:
    """Each satellite's phase error from truth (rad, osculating, positive ahead)."""
    p: ConstellationParams = sim.scenario_params
    out = []
    for name in satellite_names(p):
        sk, body = sim.model(f"{name}_sk"), sim.model(name)
        out.append(phase_error(body.x[0:3], body.x[3:6], sim.time, sk.u0_rad, sk.u_dot_radps))
    return np.array(out)


def constellation_outcome(sim: Simulation) -> dict:
    """Phase errors at the end from truth (largest and rms over satellites, deg and km along-track,
    osculating: they include about 0.1 deg of J2 short-period motion), the velocity change spent
    (Tsiolkovsky on each tank's propellant: total and largest, m/s), the corrections decided and
    the satellites out of their box at the end."""
    p: ConstellationParams = sim.scenario_params
    a = reference_orbit(p)[0]
    err = np.abs(phase_errors(sim))
    dv = []
    for name in satellite_names(p):
        tank = sim.model(f"{name}_tank")
        used = tank.fuel0_kg - max(float(tank.x[0]), 0.0)
        m0 = tank.dry_mass_kg + tank.fuel0_kg
        dv.append(p.isp_s * G0 * detmath.log(m0 / (m0 - used)))
    rms = float(np.sqrt(np.mean(err * err)))
    return {
        "phase_error_max_deg": math.degrees(float(err.max())),
        "phase_error_rms_deg": math.degrees(rms),
        "phase_error_max_km": float(err.max()) * a / 1e3,
        "phase_error_rms_km": rms * a / 1e3,
        "dv_total_mps": float(sum(dv)),
        "dv_max_mps": float(max(dv)),
        "manoeuvres": int(sum(sim.model(f"{n}_sk").manoeuvres for n in satellite_names(p))),
        "out_of_box": int(np.sum(err > math.radians(p.box_deg))),
    }


@scenario(
    "constellation",
    ConstellationParams,
    "a Walker delta constellation i:T/P/F (default 53 deg: 24/3/1 at "
    "550 km, one island per satellite) keeps its slots against drag by along-track station keeping",
    default_duration_s=6000.0,
    outcome=constellation_outcome,
)
def build_constellation(sim: Simulation, p: ConstellationParams) -> None:
    a, inc, mu, j2, radius = reference_orbit(p)
    u_dot = slot_rate(a, inc, mu, j2, radius)
    window = 2.0 * math.pi / u_dot
    field = ggm03s()
    h0, rho0, scale = density_band(p.altitude_m)  # one band of Vallado's table for the whole orbit
    factors = ballistic_factors(p, sim.seed)
    inertia = np.diag([100.0, 120.0, 80.0])  # kg m^2; y (the spin axis) a principal axis
    rate = 1.0 / p.control_period_s
    for name, (raan, u0), factor in zip(satellite_names(p), walker_slots(p), factors):
        r, v = initial_state(p, raan, u0)
        q, omega = lvlh_attitude(r, v, u_dot)
        sim.add_island(
            name, **orbit_island(p.integrator, p.control_period_s, rtol=1e-10, atol=1e-3, max_step_s=p.control_period_s)
        )
        sim.add_model(
            OrbitingSpacecraft(
                name,
                r,
                v,
                p.mass_kg + p.fuel_kg,
                inertia,
                q_BN=q,
                omega_BN_B=omega,
                field=field if p.gravity_degree > 0 else None,
                degree=p.gravity_degree,
                mu=mu,
                cd_area_m2=p.cd_area_m2 * factor if p.drag else 0.0,
                rho0_kgpm3=rho0 * p.density_scale,
                h0_m=h0,
                scale_height_m=scale,
                gravity_gradient=False,
                n_thrusters=2,
                rate_hz=rate,
            ),
            name,
            ties={
                "state": f"{name}/state",
                "mass": f"{name}/mass",
                "wrench0": f"{name}/thr0/wrench",
                "wrench1": f"{name}/thr1/wrench",
            },
        )
        sim.add_model(
            GnssReceiver(f"{name}_gnss", name, p.gnss_sigma_m, p.gnss_sigma_mps, rate_hz=rate),
            name,
            ties={"state": f"{name}/state", "fix": f"{name}/fix"},
        )
        sim.add_model(
            FuelTank(
                f"{name}_tank",
                2,
                p.fuel_kg,
                p.fuel_kg,
                p.mass_kg,
                inertia_empty_B=inertia,
                inertia_full_B=inertia,
                rate_hz=rate,
            ),
            name,
            ties={
                "flow0": f"{name}/thr0/flow",
                "flow1": f"{name}/thr1/flow",
                "fuel_remaining": f"{name}/fuel",
                "mass": f"{name}/mass",
            },
        )
        for i, axis in enumerate([(1.0, 0.0, 0.0), (-1.0, 0.0, 0.0)]):
            sim.add_model(
                PulsedThruster(
                    f"{name}_thr{i}", name, p.thrust_N, p.isp_s, axis, period_s=p.control_period_s, min_on_time_s=0.01
                ),
                name,
                ties={
                    "on_time": f"{name}/thr{i}/on_time",
                    "fuel_remaining": f"{name}/fuel",
                    "wrench": f"{name}/thr{i}/wrench",
                    "flow": f"{name}/thr{i}/flow",
                },
            )
        sim.add_model(
            StationKeeping(
                f"{name}_sk",
                u0,
                u_dot,
                a,
                math.radians(p.box_deg),
                p.thrust_N,
                p.mass_kg + p.fuel_kg,
                window,
                p.return_orbits * window,
                rate_hz=rate,
                enabled=p.station_keeping,
            ),
            name,
            ties={
                "fix": f"{name}/fix",
                "mass": f"{name}/mass",
                "on_time0": f"{name}/thr0/on_time",
                "on_time1": f"{name}/thr1/on_time",
            },
        )
