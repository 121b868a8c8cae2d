"""The Earth's conical shadow (``hopsim.dynamics.environment.conical_shadow_fraction_xyz``,
``OrbitingSpacecraft(shadow="conical")``): the fraction of the Sun's disk in view against
Basilisk's eclipse module on points through the umbra and penumbra from low orbit to beyond
geostationary, the closed-form cases, and solar pressure scaled by it."""

import json
import math
import subprocess

import numpy as np
from basilisk_peer import bsk_python

from hopsim.actors.orbiting_spacecraft import OrbitingSpacecraft
from hopsim.dynamics.environment import SUN_RADIUS, conical_shadow_fraction_xyz, sun_position_xyz
from hopsim.dynamics.gravity import EARTH_RADIUS
from hopsim.dynamics.spatial import cross_xyz

EPOCH_JD = 2460000.5
BSK_SUN_RADIUS = 695000e3  # m, Basilisk's REQ_SUN

BSK_SCRIPT = r"""
import json, sys
from Basilisk.simulation import eclipse
from Basilisk.architecture import messaging
job = json.load(sys.stdin)
sun = messaging.SpicePlanetStateMsgPayload()
sun.PositionVector, sun.PlanetName = job["sun"], "sun"
earth = messaging.SpicePlanetStateMsgPayload()
earth.PositionVector, earth.PlanetName = [0.0, 0.0, 0.0], "custom"
sun_msg, earth_msg = messaging.SpicePlanetStateMsg().write(sun), messaging.SpicePlanetStateMsg().write(earth)
out = []
for r in job["points"]:
    sc = messaging.SCStatesMsgPayload()
    sc.r_BN_N = r
    sc_msg = messaging.SCStatesMsg().write(sc)
    model = eclipse.Eclipse()
    model.sunInMsg.subscribeTo(sun_msg)
    model.addPlanetToModel(earth_msg)
    model.addSpacecraftToModel(sc_msg)
    model.rEqCustom = job["radius"]
    model.Reset(0)
    model.UpdateState(0)
    out.append(model.eclipseOutMsgs[0].read().shadowFactor)
json.dump(out, sys.stdout)
"""


def sun_and_axes():
    """The Sun's position (m, ECI) at the epoch, its unit direction and a unit vector across it."""
    sun = np.array(sun_position_xyz(EPOCH_JD))
    s_hat = sun / np.linalg.norm(sun)
    across = np.array(cross_xyz(s_hat, (0.0, 0.0, 1.0)))
    return sun, s_hat, across / np.linalg.norm(across)


def behind(distance_m, offset_m, s_hat, across):
    """A point ``distance_m`` behind the Earth along the anti-Sun line, ``offset_m`` across it."""
    return -distance_m * s_hat + offset_m * across


def test_the_sunlit_fraction_equals_basilisks_eclipse():
    python = bsk_python()
    sun, s_hat, across = sun_and_axes()
    rng = np.random.default_rng(3)
    points = []
    for distance in (6.9e6, 7.5e6, 2.0e7, 4.2e7, 1.0e8):
        for offset in EARTH_RADIUS + rng.uniform(-4e5, 6e5, size=6):  # through the penumbra
            points.append(behind(distance, offset, s_hat, across) + rng.normal(scale=1e3, size=3))
        points.append(behind(distance, 0.0, s_hat, across))  # umbra (or annular far out)
        points.append(-behind(distance, 0.0, s_hat, across))  # day side
    job = {"sun": sun.tolist(), "radius": EARTH_RADIUS, "points": [p.tolist() for p in points]}
    reply = subprocess.run(
        [python, "-c", BSK_SCRIPT], input=json.dumps(job), capture_output=True, text=True, check=True, timeout=300
    )
    theirs = json.loads(reply.stdout)
    ours = [conical_shadow_fraction_xyz(*p, *sun, BSK_SUN_RADIUS, EARTH_RADIUS) for p in points]
    partial = [f for f in ours if 0.0 < f < 1.0]
    assert len(partial) >= 10 and min(ours) == 0.0 and max(ours) == 1.0
    np.testing.assert_allclose(ours, theirs, rtol=0, atol=1e-12)


def test_umbra_penumbra_and_sunlight_in_low_orbit():
    sun, s_hat, across = sun_and_axes()
    fraction = lambda p: conical_shadow_fraction_xyz(*p, *sun, SUN_RADIUS, EARTH_RADIUS)  # noqa: E731
    r = EARTH_RADIUS + 500e3
    assert fraction(-behind(r, 0.0, s_hat, across)) == 1.0  # day side
    assert fraction(behind(r, 0.0, s_hat, across)) == 0.0  # on the shadow's axis
    # where the cylindrical shadow's edge is, the Earth's limb cuts the Sun's disk in about half
    # (the limb, seen from low orbit, is nearly straight across the Sun's 0.53 deg)
    edge = behind(math.sqrt(r * r - EARTH_RADIUS**2), EARTH_RADIUS, s_hat, across)
    assert abs(fraction(edge) - 0.5) < 0.01
    # across the penumbra the fraction grows monotonically from 0 to 1; its width at this
    # distance behind the limb is about the Sun's apparent diameter times that distance
    offsets = np.linspace(EARTH_RADIUS - 5e4, EARTH_RADIUS + 5e4, 201)
    seen = [fraction(behind(math.sqrt(r * r - EARTH_RADIUS**2), o, s_hat, across)) for o in offsets]
    assert seen[0] == 0.0 and seen[-1] == 1.0 and np.all(np.diff(seen) >= 0.0)
    partial = offsets[(np.array(seen) > 0.0) & (np.array(seen) < 1.0)]
    sun_diameter = 2.0 * SUN_RADIUS / np.linalg.norm(sun)  # rad
    width = partial[-1] - partial[0]
    assert 0.7 < width / (sun_diameter * math.sqrt(r * r - EARTH_RADIUS**2)) < 1.3


def test_solar_pressure_is_scaled_by_the_sunlit_fraction():
    sun, s_hat, across = sun_and_axes()
    r = EARTH_RADIUS + 500e3
    along = math.sqrt(r * r - EARTH_RADIUS**2)
    cases = []
    for offset in (EARTH_RADIUS + 3e3, EARTH_RADIUS + 8e3, EARTH_RADIUS + 2e5):  # penumbra twice, sunlight
        p = behind(along, offset, s_hat, across)
        v = np.array(cross_xyz(p, (0.0, 0.0, 1.0)))
        v *= 7600.0 / np.linalg.norm(v)
        accel = {}
        for shadow in ("cylindrical", "conical"):
            sc = OrbitingSpacecraft(
                "sc",
                p,
                v,
                100.0,
                np.eye(3),
                mu=1.0,
                gravity_gradient=False,
                cr_area_m2=2.5,
                epoch_jd=EPOCH_JD,
                shadow=shadow,
            )
            sc.x, sc.xdot = sc.initial_state(), np.zeros(13)
            sc.post_deriv(0.0)
            accel[shadow] = sc.xdot[3:6] - sc.gravity_N(p, 0.0)
        nu = conical_shadow_fraction_xyz(*p, *sun, SUN_RADIUS, EARTH_RADIUS)
        cases.append(nu)
        assert np.linalg.norm(accel["cylindrical"]) > 0  # outside the cylinder: lit
        np.testing.assert_allclose(accel["conical"], nu * accel["cylindrical"], rtol=1e-13, atol=1e-25)
    assert 0.0 < cases[0] < cases[1] < 1.0 and cases[2] == 1.0
