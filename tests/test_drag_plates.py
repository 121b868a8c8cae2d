"""Flat-plate drag (``hopsim.dynamics.environment.plate_drag_xyz``, ``OrbitingSpacecraft(drag_plates=...)``):
against Basilisk's facetDragDynamicEffector on the same plates, state and atmosphere; against
the closed forms (a plate facing the flow is a cannonball of its area, a tilted one drags with
cos theta, a plate seen from behind not at all, a cube with its projected area, the torque is
r x F); and a welded pair's plates against the equivalent single spacecraft's."""

import json
import math
import subprocess

import numpy as np
import pytest
from basilisk_peer import bsk_python

from hopsim.actors.orbiting_spacecraft import OrbitingSpacecraft
from hopsim.dynamics.contact import composite_mass_properties, relative_pose, weld_state
from hopsim.dynamics.environment import air_relative_velocity_xyz, exponential_density, plate_records
from hopsim.dynamics.gravity import EARTH_RADIUS
from hopsim.dynamics.spatial import quat_to_dcm

RHO0, SCALE = 1e-9, 60e3  # kg/m^3 at the surface of a sphere of the Earth's radius, m
ATMOSPHERE = dict(rho0_kgpm3=RHO0, h0_m=0.0, scale_height_m=SCALE)

BSK_SCRIPT = r"""
import json, sys
import numpy as np
from Basilisk.simulation import spacecraft, exponentialAtmosphere, facetDragDynamicEffector
from Basilisk.utilities import SimulationBaseClass, macros
job = json.load(sys.stdin)
out = []
for case in job["cases"]:
    sim = SimulationBaseClass.SimBaseClass()
    sim.CreateNewProcess("p").addTask(sim.CreateNewTask("t", macros.sec2nano(1.0)))
    sc = spacecraft.Spacecraft()
    sc.hub.mHub = 100.0
    sc.hub.r_CN_NInit, sc.hub.v_CN_NInit, sc.hub.sigma_BNInit = case["r"], case["v"], case["sigma"]
    atmo = exponentialAtmosphere.ExponentialAtmosphere()
    atmo.planetRadius, atmo.scaleHeight, atmo.baseDensity = job["radius"], job["scale"], job["rho0"]
    atmo.addSpacecraftToModel(sc.scStateOutMsg)
    drag = facetDragDynamicEffector.FacetDragDynamicEffector()
    for normal, area, cd, centre in case["plates"]:
        drag.addFacet(area, cd, normal, centre)
    drag.atmoDensInMsg.subscribeTo(atmo.envOutMsgs[0])
    sc.addDynamicEffector(drag)
    for model in (sc, atmo, drag):
        sim.AddModelToTask("t", model)
    sim.InitializeSimulation()
    sim.ConfigureStopTime(0)
    sim.ExecuteSimulation()
    drag.computeForceTorque(0.0, 0.0)
    out.append({"force_B": np.array(drag.forceExternal_B).ravel().tolist(),
                "torque_B": np.array(drag.torqueExternalPntB_B).ravel().tolist()})
json.dump(out, sys.stdout)
"""


def quat_from_mrp(sigma) -> np.ndarray:
    """q_BN (scalar last, v_N = R(q) v_B) of Basilisk's sigma_BN (v_B = [BN] v_N)."""
    s = np.asarray(sigma, dtype=float)
    s2 = s @ s
    return np.array([*(2.0 * s / (1.0 + s2)), (1.0 - s2) / (1.0 + s2)])


def spacecraft(r, v, q, plates, mass=100.0, inertia=None, **extra) -> OrbitingSpacecraft:
    """A spacecraft with a negligible gravity (mu = 1 m^3/s^2, taken off again where it matters)
    and, unless given, a unit inertia (omega' is then the torque)."""
    inertia = np.eye(3) if inertia is None else inertia
    sc = OrbitingSpacecraft(
        "sc", r, v, mass, inertia, q_BN=q, mu=1.0, gravity_gradient=False, drag_plates=plates, **{**ATMOSPHERE, **extra}
    )
    sc.x, sc.xdot = sc.initial_state(), np.zeros(len(sc.x0))
    return sc


def plate_drag_of(sc: OrbitingSpacecraft) -> tuple[np.ndarray, np.ndarray]:
    """(force N, torque N m), both in B, from the spacecraft's derivative (unit inertia, at rest
    in attitude: omega' is the torque)."""
    sc.post_deriv(0.0)
    R = quat_to_dcm(sc.x[6:10])
    return R.T @ (sc.xdot[3:6] - sc.gravity_N(sc.x[0:3], 0.0)) * sc.mass_kg, sc.xdot[10:13].copy()


def random_plates(rng, n) -> list:
    return [
        (rng.normal(size=3), rng.uniform(0.2, 3.0), rng.uniform(1.8, 2.6), rng.normal(scale=0.8, size=3))
        for _ in range(n)
    ]


def test_plate_drag_equals_basilisks_facet_drag():
    """Force and torque of random plates at random attitudes against Basilisk's facet drag, to
    1e-12 relative. Basilisk's flow is the inertial velocity (no wind message), hopsim's the
    velocity through an atmosphere turning with the Earth: Basilisk's hub is given hopsim's
    air-relative velocity."""
    python = bsk_python()
    rng = np.random.default_rng(11)
    cases = []
    for n_plates in (1, 3, 6):
        r = rng.normal(size=3)
        r *= (EARTH_RADIUS + rng.uniform(300e3, 600e3)) / np.linalg.norm(r)
        v = np.cross(r, rng.normal(size=3))
        v *= 7600.0 / np.linalg.norm(v)
        sigma = rng.uniform(-0.6, 0.6, size=3)
        plates = random_plates(rng, n_plates)
        u_B = quat_to_dcm(quat_from_mrp(sigma)).T @ air_relative_velocity_xyz(*r, *v)
        plates[0] = (u_B / np.linalg.norm(u_B) + rng.normal(scale=0.4, size=3), *plates[0][1:])  # one faces it
        cases.append((r, v, sigma, plates))
    job = {
        "radius": EARTH_RADIUS,
        "scale": SCALE,
        "rho0": RHO0,
        "cases": [
            {
                "r": r.tolist(),
                "v": list(air_relative_velocity_xyz(*r, *v)),
                "sigma": sigma.tolist(),
                "plates": [[list(n / np.linalg.norm(n)), a, cd, list(c)] for n, a, cd, c in plates],
            }
            for r, v, sigma, plates in cases
        ],
    }
    reply = subprocess.run(
        [python, "-c", BSK_SCRIPT], input=json.dumps(job), capture_output=True, text=True, check=True, timeout=300
    )
    theirs = json.loads(reply.stdout)
    for (r, v, sigma, plates), bsk in zip(cases, theirs, strict=True):
        force, torque = plate_drag_of(spacecraft(r, v, quat_from_mrp(sigma), plates))
        f_bsk, t_bsk = np.array(bsk["force_B"]), np.array(bsk["torque_B"])
        assert np.linalg.norm(f_bsk) > 0
        assert np.linalg.norm(force - f_bsk) <= 1e-12 * np.linalg.norm(f_bsk)
        assert np.linalg.norm(torque - t_bsk) <= 1e-12 * np.linalg.norm(t_bsk)


def test_plates_against_the_closed_forms():
    r = np.array([EARTH_RADIUS + 400e3, 0.0, 0.0])
    v = np.array([0.0, 7670.0, 10.0])
    q = np.array([0.1, -0.3, 0.2, 0.9]) / np.linalg.norm([0.1, -0.3, 0.2, 0.9])
    R = quat_to_dcm(q)
    u_N = np.array(air_relative_velocity_xyz(*r, *v))
    u_B = R.T @ u_N
    u_hat = u_B / np.linalg.norm(u_B)
    rho = exponential_density(400e3, RHO0, 0.0, SCALE)
    q_dyn = 0.5 * rho * (u_B @ u_B)  # dynamic pressure (Pa)
    area, cd, centre = 1.7, 2.3, np.array([0.4, -0.2, 1.1])

    # facing the flow: the cannonball of C_D A, the same acceleration (to rounding)
    plate_force, plate_torque = plate_drag_of(spacecraft(r, v, q, [(u_hat, area, cd, centre)]))
    ball = spacecraft(r, v, q, [], cd_area_m2=cd * area)
    ball.post_deriv(0.0)
    a_ball = ball.xdot[3:6] - ball.gravity_N(r, 0.0)
    assert np.linalg.norm(R @ plate_force / 100.0 - a_ball) <= 1e-14 * np.linalg.norm(a_ball)
    np.testing.assert_allclose(plate_force, -q_dyn * cd * area * u_hat, rtol=1e-13)
    np.testing.assert_allclose(plate_torque, np.cross(centre, plate_force), rtol=1e-13)

    # tilted by theta: cos theta of it; seen edge-on or from behind: nothing
    side = np.cross(u_hat, [0.0, 0.0, 1.0])
    side /= np.linalg.norm(side)
    for theta in (0.3, 1.2):
        normal = math.cos(theta) * u_hat + math.sin(theta) * side
        force, _ = plate_drag_of(spacecraft(r, v, q, [(normal, area, cd, centre)]))
        np.testing.assert_allclose(force, math.cos(theta) * plate_force, rtol=1e-12)
    for normal in (-u_hat, side):
        force, torque = plate_drag_of(spacecraft(r, v, q, [(normal, area, cd, centre)]))
        assert not force.any() and not torque.any()

    # a cube's six faces about its centre: projected area A (|u_x| + |u_y| + |u_z|) / |u|, no torque
    half = 0.5
    cube = [(s * e, area, cd, s * half * e) for e in np.eye(3) for s in (1.0, -1.0)]
    force, torque = plate_drag_of(spacecraft(r, v, q, cube))
    np.testing.assert_allclose(force, -q_dyn * cd * area * np.abs(u_hat).sum() * u_hat, rtol=1e-13)
    assert np.linalg.norm(torque) <= 1e-12 * np.linalg.norm(force)


def test_a_welded_pair_drags_as_the_equivalent_single_spacecraft():
    """The composite of two spacecraft with plates: the follower's plates turned into the
    primary's frame and about the composite's centre of mass; the same angular acceleration
    and centre-of-mass acceleration as one spacecraft carrying all the plates."""
    rng = np.random.default_rng(5)
    r = np.array([EARTH_RADIUS + 400e3, 1e3, -2e3])
    v = np.array([5.0, 7600.0, 500.0])
    q1 = np.array([0.1, -0.2, 0.3, 0.9]) / np.linalg.norm([0.1, -0.2, 0.3, 0.9])
    q2 = np.array([-0.3, 0.1, 0.2, 0.9]) / np.linalg.norm([-0.3, 0.1, 0.2, 0.9])
    I1 = np.array([[300.0, 5.0, 0.0], [5.0, 250.0, -3.0], [0.0, -3.0, 200.0]])
    I2 = np.diag([40.0, 50.0, 60.0])
    plates1, plates2 = random_plates(rng, 4), random_plates(rng, 3)
    p = spacecraft(r, v, q1, plates1, mass=500.0, inertia=I1)
    p.x[10:13] = [0.002, -0.001, 0.003]
    f = spacecraft(r + quat_to_dcm(q1) @ [0.0, -2.5, 0.3], v, q2, plates2, mass=150.0, inertia=I2)
    x_new, _, _ = weld_state(p.x.copy(), 500.0, I1, np.zeros(3), f.x.copy(), 150.0, I2, np.zeros(3))
    p.x[:] = x_new
    r_FP_P, q_FP = relative_pose(p.x, f.x)
    p.weld(f, r_FP_P, q_FP)
    p.post_deriv(0.0)

    R_PF = quat_to_dcm(q_FP)
    M, I_C, c = composite_mass_properties(500.0, I1, np.zeros(3), 150.0, I2, np.zeros(3), r_FP_P, R_PF)
    moved = [(n, a, cd, centre - c) for n, a, cd, centre in plates1] + [
        (R_PF @ n, a, cd, r_FP_P - c + R_PF @ centre) for n, a, cd, centre in plates2
    ]
    R = quat_to_dcm(p.x[6:10])
    w = p.x[10:13]
    one = spacecraft(p.x[0:3] + R @ c, p.x[3:6] + R @ np.cross(w, c), p.x[6:10], moved, mass=M, inertia=I_C)
    one.x[10:13] = w
    one.post_deriv(0.0)
    assert np.linalg.norm(one.xdot[10:13]) > 1e-9  # the plates turn it
    np.testing.assert_allclose(p.xdot[10:13], one.xdot[10:13], rtol=1e-10, atol=1e-18)
    a_C = p.xdot[3:6] + R @ (np.cross(p.xdot[10:13], c) + np.cross(w, np.cross(w, c)))
    np.testing.assert_allclose(a_C, one.xdot[3:6], rtol=1e-10)


@pytest.mark.parametrize(
    "plate, problem",
    [
        (((0.0, 0.0, 0.0), 1.0, 2.2, (0.0, 0.0, 0.0)), "normal must not be zero"),
        (((1.0, 0.0, 0.0), -1.0, 2.2, (0.0, 0.0, 0.0)), "area"),
        (((1.0, 0.0, 0.0), 1.0, float("nan"), (0.0, 0.0, 0.0)), "drag coefficient"),
        (((1.0, 0.0), 1.0, 2.2, (0.0, 0.0, 0.0)), "finite 3-vectors"),
        ((1.0, 2.0), "must be \\(normal_B"),
    ],
)
def test_a_bad_plate_is_refused_by_name(plate, problem):
    with pytest.raises(ValueError, match=problem):
        plate_records("sc", [plate])
