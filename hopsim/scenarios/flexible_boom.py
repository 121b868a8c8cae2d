"""A spacecraft with a flexible boom slews about its yaw axis; the boom's vibration is in the loop.

One island: a rigid hub with a uniform cantilevered boom along its +x axis, bending in the slew
plane (x-y of the hub frame B), its lowest ``modes`` clamped modes from Euler-Bernoulli beam
elements (:mod:`hopsim.dynamics.flexible_beam`), the whole vehicle in hybrid coordinates
(:mod:`hopsim.dynamics.flexible`, :class:`~hopsim.actors.flexible_spacecraft.FlexibleSpacecraftDynamics`);
a star tracker and an IMU measure it, and a PD controller with a feed-forward of the reference
acceleration (:class:`~hopsim.actors.flexible_spacecraft.SlewController`) turns it by ``slew_deg``
about z in ``slew_s`` (a rest-to-rest quintic profile) by a torque on the hub. The slew's
acceleration bends the boom; the boom's reaction on the hub is in the measured attitude and rate,
so the controller sees it and the attitude rings at the hub + boom's free-free frequency after
the slew. ``rigid_boom`` flies the same vehicle with the boom rigid (its mass properties lumped
into the hub), for comparison.

The integration step follows the vehicle: each control period is cut into RK4 steps of at most
``STEP_RAD / w_max`` (``w_max`` the highest free-free frequency of the vehicle linearized at
rest), so that the retained modes are integrated accurately.
"""

from __future__ import annotations

import math
from typing import Annotated

import numpy as np
from pydantic import Field, model_validator

from hopsim.actors.flexible_spacecraft import (
    FlexibleSpacecraftDynamics,
    RestToRestSlew,
    SlewController,
    SlewMonitor,
)
from hopsim.actors.sensors import Imu, StarTracker
from hopsim.dynamics import detlinalg
from hopsim.dynamics.flexible import FlexibleSpacecraft, mass_matrix, unpack_vehicle
from hopsim.dynamics.flexible_beam import beam, cantilever_modes
from hopsim.dynamics.integrators import make_integrator
from hopsim.kernel import Simulation
from hopsim.kernel.bounds import RateHz, TimeS
from hopsim.scenarios.registry import ScenarioParams, scenario

Inertia = Annotated[float, Field(gt=0, le=1e9)]  # a principal moment of inertia (kg m^2)
Rate = Annotated[float, Field(ge=-1.0, le=1.0)]  # an initial body rate (rad/s)

STEP_RAD = 0.25  # the largest RK4 step times the highest free-free frequency
E_PA, RHO_KGPM3 = 70e9, 2700.0  # the boom's modulus and density (its mass and E I are what count)


class FlexibleBoomParams(ScenarioParams):
    hub_mass_kg: float = Field(100.0, gt=0, le=1e6, description="mass of the rigid hub")
    hub_inertia_kgm2: tuple[Inertia, Inertia, Inertia] = Field(
        (40.0, 50.0, 60.0), description="hub's principal inertia about its centre of mass (the origin of B)"
    )
    boom_length_m: float = Field(5.0, gt=0, le=100, description="length of the boom, along +x of B")
    boom_mass_kg: float = Field(10.0, gt=0, le=1e5, description="mass of the boom (uniform)")
    boom_EI_Nm2: float = Field(
        1000.0, gt=0, le=1e10, description="bending stiffness E I of the boom in the slew plane (N m^2)"
    )
    boom_root_m: float = Field(0.5, ge=0, le=100, description="the boom's root on the hub's +x axis")
    boom_elements: int = Field(10, ge=1, le=40, description="beam elements of the boom's finite-element model")
    modes: int = Field(
        3, ge=1, le=12, description="clamped bending modes kept (at most 2 per element: the model's freedoms)"
    )
    damping_ratio: float = Field(0.005, ge=0, lt=1, description="modal damping ratio of every mode")
    rigid_boom: bool = Field(False, description="fly the boom rigid (its mass properties lumped into the hub)")
    slew_deg: float = Field(30.0, ge=-180, le=180, description="slew angle about the z axis of B")
    slew_start_s: TimeS = Field(1.0, description="start of the slew")
    slew_s: float = Field(10.0, ge=0.1, le=1e5, description="duration of the rest-to-rest slew")
    kp: float = Field(40.0, ge=0, le=1e7, description="attitude gain (N m/rad)")
    kd: float = Field(160.0, ge=0, le=1e7, description="rate gain (N m s/rad)")
    feedforward: bool = Field(
        True, description="add the rigid vehicle's inertia about z times the reference acceleration"
    )
    max_torque_Nm: float = Field(20.0, gt=0, le=1e6, description="torque limit per axis (N m)")
    control: bool = Field(True, description="false: no torque at all (the vehicle tumbles freely)")
    control_rate_hz: RateHz = Field(
        20.0, ge=0.1, le=1000, description="rate of the state, the sensors and the controller"
    )
    star_tracker_sigma_rad: float = Field(1e-5, ge=0, le=0.1, description="star tracker noise per axis")
    gyro_sigma_rad_s: float = Field(1e-6, ge=0, le=1, description="gyro noise per axis")
    initial_rate_rad_s: tuple[Rate, Rate, Rate] = Field((0.0, 0.0, 0.0), description="hub's initial body rates")
    settle_tolerance_deg: float = Field(
        0.005, gt=0, le=180, description="attitude error within which the slew has settled"
    )

    @model_validator(mode="after")
    def _modes_fit_the_beam(self):
        if self.modes > 2 * self.boom_elements:
            raise ValueError(
                f"modes {self.modes} is more than the {2 * self.boom_elements} freedoms of a boom of "
                f"boom_elements {self.boom_elements} (2 per element): give fewer modes or more elements"
            )
        return self


def boom_modes(p: FlexibleBoomParams):
    """The boom's clamped modes (an appendage in its frame A: x along the boom, root at 0)."""
    rho_a = p.boom_mass_kg / p.boom_length_m
    inertia = p.boom_EI_Nm2 / E_PA
    bm = beam(p.boom_length_m, p.boom_elements, E=E_PA, rho=RHO_KGPM3, A=rho_a / RHO_KGPM3, Iy=inertia, bending="y")
    return cantilever_modes(bm, p.modes, damping=p.damping_ratio)


def boom_spacecraft(p: FlexibleBoomParams) -> FlexibleSpacecraft:
    """The hub with the boom (``rigid_boom``: one rigid body of the same mass properties)."""
    sc = FlexibleSpacecraft(p.hub_mass_kg, np.zeros(3), np.diag(p.hub_inertia_kgm2))
    sc.attach("boom", boom_modes(p), np.eye(3), (p.boom_root_m, 0.0, 0.0))
    if not p.rigid_boom:
        return sc
    a = sc.arrays
    m = float(a.mass[0])
    c = a.S0 / m
    J_C = a.J0 - m * (float(detlinalg.dot(c, c)) * np.eye(3) - np.outer(c, c))
    return FlexibleSpacecraft(m, c, 0.5 * (J_C + J_C.T))


def free_free_frequencies(vehicle: np.ndarray) -> np.ndarray:
    """The flexible vehicle's free-free frequencies at rest [rad/s], ascending (the six rigid
    motions left out): ``K v = w^2 M(0) v``, ``K = diag(0, W^2)``, by Cholesky and Jacobi."""
    a = unpack_vehicle(vehicle)
    n = a.omega.shape[0]
    if n == 0:
        return np.zeros(0)
    M = mass_matrix(vehicle, np.zeros(n))
    Linv = detlinalg.inv(detlinalg.cholesky(M))
    K = np.zeros_like(M)
    for i in range(n):
        K[6 + i, 6 + i] = a.omega[i] * a.omega[i]
    A = detlinalg.matmul(detlinalg.matmul(Linv, K), np.ascontiguousarray(Linv.T))
    w2 = np.sort(detlinalg.eigvalsh(0.5 * (A + A.T)))[6:]
    return np.sqrt(np.maximum(w2, 0.0))


def integration_steps(p: FlexibleBoomParams, vehicle: np.ndarray) -> int:
    """RK4 steps per control period: each at most ``STEP_RAD`` over the highest frequency."""
    w = free_free_frequencies(vehicle)
    if w.size == 0:
        return 1
    return max(1, math.ceil(float(w[-1]) / (STEP_RAD * p.control_rate_hz)))


def slew_of(p: FlexibleBoomParams) -> RestToRestSlew:
    return RestToRestSlew((0.0, 0.0, 1.0), p.slew_deg * (math.pi / 180.0), p.slew_start_s, p.slew_s)


def flexible_boom_outcome(sim: Simulation) -> dict:
    body, monitor = sim.model("spacecraft"), sim.model("slew_monitor")
    p_slew = monitor.slew
    if monitor.last_error_rad > monitor.tolerance_rad or monitor.seen_ns < round(p_slew.end_s * 1e9):
        settle = None  # not settled (or the slew not over) by the end
    else:
        last = monitor.last_outside_s
        settle = 0.0 if last is None else last - p_slew.end_s
    w = free_free_frequencies(body.vehicle)
    return {
        "peak_tip_deflection_m": body.peak_tip_m,
        "residual_attitude_rad": monitor.max_residual_rad,
        "settle_time_s": settle,
        "final_attitude_error_rad": monitor.last_error_rad,
        "first_mode_hz": float(w[0]) / (2.0 * math.pi) if w.size else None,
    }


@scenario(
    "flexible_boom",
    FlexibleBoomParams,
    "a spacecraft with a flexible boom slewing about yaw under PD "
    "attitude control: the boom's vibration in the attitude loop",
    default_duration_s=30.0,
    outcome=flexible_boom_outcome,
)
def build_flexible_boom(sim: Simulation, p: FlexibleBoomParams) -> None:
    sc = boom_spacecraft(p)
    slew = slew_of(p)
    rate = p.control_rate_hz
    sim.add_island("spacecraft", integrator=make_integrator("rk4"), n_integration_steps=integration_steps(p, sc.packed))
    x0 = sc.pack_state(omega_BN_B=p.initial_rate_rad_s)
    tip = None if p.rigid_boom else ("boom", "tip")
    sim.add_model(
        FlexibleSpacecraftDynamics("spacecraft", sc, x0, tip=tip, rate_hz=rate),
        "spacecraft",
        ties={"state": "spacecraft/state", "tip": "spacecraft/tip_deflection", "wrench": "spacecraft/wrench"},
    )
    sim.add_model(
        StarTracker("star_tracker", "spacecraft", sigma_rad=p.star_tracker_sigma_rad, rate_hz=rate),
        "spacecraft",
        ties={"state": "spacecraft/state", "attitude": "spacecraft/attitude"},
    )
    sim.add_model(
        Imu("imu", "spacecraft", gyro_sigma_radps=p.gyro_sigma_rad_s, rate_hz=rate),
        "spacecraft",
        ties={"state": "spacecraft/state", "imu": "spacecraft/imu"},
    )
    if p.control:
        a = sc.arrays
        m = float(a.mass[0])
        c = a.S0 / m
        J_zz = float(a.J0[2, 2]) - m * (c[0] * c[0] + c[1] * c[1])  # about the centre of mass, at rest
        sim.add_model(
            SlewController(
                "controller",
                "spacecraft",
                slew,
                p.kp,
                p.kd,
                inertia_ff_kgm2=J_zz if p.feedforward else 0.0,
                max_torque_Nm=p.max_torque_Nm,
                rate_hz=rate,
            ),
            "spacecraft",
            ties={"attitude": "spacecraft/attitude", "rates": "spacecraft/imu", "wrench": "spacecraft/wrench"},
        )
    sim.add_model(
        SlewMonitor("slew_monitor", slew, p.settle_tolerance_deg * (math.pi / 180.0), rate_hz=rate),
        "spacecraft",
        ties={"state": "spacecraft/state", "error": "spacecraft/attitude_error"},
    )
