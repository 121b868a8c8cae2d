"""One day of low Earth orbit under point-mass + J2 gravity, hopsim against Basilisk (the `bsk`
wheel, in its own environment as in tests/test_gravity_basilisk.py).

Both start from the same state (500 km altitude, e = 0.001, i = 51.6 deg) with the same Earth:
mu and the equatorial radius of Basilisk's ``createEarth()`` and its ``astroConstants.J2_EARTH``
(hopsim's GravityField is built from the same three numbers), so only the integration differs.

- hopsim: the OrbitingSpacecraft model in a Simulation whose island integrates with hopsim's
  DOP853 at rtol 1e-12 (the integrator of the rendezvous scenario and of
  tests/test_orbiting_spacecraft.py; an island made without one would get fixed-step RK4, one
  step per hop), the gravity a degree-2 zonal field;
- Basilisk: a spacecraft hub with gravityEffector's spherical-harmonics model to degree 2 (C20
  only), fixed-step RK4 at H = 5 s and at H/2.

Tolerance: RK4's global error is O(h^4), so Basilisk's own error at H is about 16/15 of the
difference between its runs at H and H/2 (Richardson); hopsim's final position must lie within
twice that difference of Basilisk's at H, and within a tenth of it of the Richardson-extrapolated
Basilisk position B(H/2) + (B(H/2) - B(H)) / 15 (whose error is of higher order). Measured: the
halving difference is about 2 cm, hopsim to B(H) about 2 cm, hopsim to the extrapolation about
0.2 mm.
"""

import json
import math
import subprocess
import time

import numpy as np
from basilisk_peer import bsk_python

from hopsim.actors.orbiting_spacecraft import OrbitingSpacecraft
from hopsim.dynamics.integrators import DOP853
from hopsim.dynamics.orbital_elements import state_from_elements
from hopsim.dynamics.spherical_harmonics import GravityField
from hopsim.kernel import Simulation

# Basilisk 2.12's Earth: gravBodyFactory().createEarth() mu (m^3/s^2) and radEquator (m), and
# astroConstants.J2_EARTH; the script reports them and the test checks they are still these.
MU, RADIUS, J2 = 3.98600436e14, 6378136.6, 0.001082616
DAY_S = 86400.0
STEP_S = 5.0

BSK_SCRIPT = r"""
import json, sys
from Basilisk.architecture import astroConstants
from Basilisk.simulation import spacecraft, svIntegrators, sphericalHarmonicsGravityModel as shg
from Basilisk.utilities import SimulationBaseClass, macros, simIncludeGravBody
job = json.loads(sys.argv[1])
runs = []
for step in job["steps_s"]:
    sim = SimulationBaseClass.SimBaseClass()
    sim.CreateNewProcess("dynamics").addTask(sim.CreateNewTask("step", macros.sec2nano(step)))
    sc = spacecraft.Spacecraft()
    sc.ModelTag = "sc"
    sc.setIntegrator(svIntegrators.svIntegratorRK4(sc))
    factory = simIncludeGravBody.gravBodyFactory()
    earth = factory.createEarth()
    earth.isCentralBody = True
    field = shg.SphericalHarmonicsGravityModel()
    field.muBody, field.radEquator, field.maxDeg = earth.mu, earth.radEquator, 2
    field.cBar = [[1.0], [0.0, 0.0], [-astroConstants.J2_EARTH / 5 ** 0.5, 0.0, 0.0]]
    field.sBar = [[0.0], [0.0, 0.0], [0.0, 0.0, 0.0]]
    earth.gravityModel = field
    factory.addBodiesTo(sc)
    sc.hub.r_CN_NInit, sc.hub.v_CN_NInit = job["r0"], job["v0"]
    sim.AddModelToTask("step", sc)
    sim.InitializeSimulation()
    sim.ConfigureStopTime(macros.sec2nano(job["duration_s"]))
    sim.ExecuteSimulation()
    runs.append(list(sc.scStateOutMsg.read().r_BN_N))
json.dump({"earth": [earth.mu, earth.radEquator, astroConstants.J2_EARTH], "r": runs}, sys.stdout)
"""


def hopsim_day(r0, v0) -> np.ndarray:
    """hopsim's OrbitingSpacecraft over a day under point mass + J2: the final r_BN_N (m)."""
    C, S = np.zeros((3, 3)), np.zeros((3, 3))
    C[0, 0], C[2, 0] = 1.0, -J2 / math.sqrt(5.0)  # normalized C20 = -J2 / sqrt(5)
    field = GravityField("basilisk-J2", MU, RADIUS, C, S)
    sim = Simulation(seed=1)
    sim.add_island("sc", integrator=DOP853(rtol=1e-12, atol=1e-6, max_step=60.0))
    model = sim.add_model(
        OrbitingSpacecraft(
            "sc", r0, v0, 100.0, np.eye(3), field=field, degree=2, gravity_gradient=False, rate_hz=1 / 3600
        ),
        "sc",
    )
    sim.advance_to(DAY_S)
    return model.x[0:3].copy()


def test_a_day_in_low_orbit_matches_basilisks_rk4_to_its_own_step_error():
    python = bsk_python()
    r0, v0 = state_from_elements(RADIUS + 500e3, 0.001, math.radians(51.6), 0.5, 0.3, 0.2, MU)
    job = {"r0": list(r0), "v0": list(v0), "duration_s": DAY_S, "steps_s": [STEP_S, STEP_S / 2]}
    start = time.perf_counter()
    # Basilisk in its own process while hopsim integrates here
    bsk = subprocess.Popen(
        [python, "-c", BSK_SCRIPT, json.dumps(job)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        r_hopsim = hopsim_day(r0, v0)
        stdout, stderr = bsk.communicate(timeout=300)
        assert bsk.returncode == 0, stderr
    finally:
        if bsk.poll() is None:
            bsk.kill()
            bsk.wait()
    reply = json.loads(stdout)
    assert reply["earth"] == [MU, RADIUS, J2], "Basilisk's Earth changed: update MU, RADIUS, J2"
    r_h, r_h2 = (np.array(r) for r in reply["r"])
    halving = np.linalg.norm(r_h - r_h2)
    extrapolated = r_h2 + (r_h2 - r_h) / 15.0
    to_bsk = np.linalg.norm(r_hopsim - r_h)
    to_extrapolated = np.linalg.norm(r_hopsim - extrapolated)
    print(
        f"after {DAY_S:.0f} s: |B({STEP_S:g} s) - B({STEP_S / 2:g} s)| = {halving:.3e} m, "
        f"|hopsim - B({STEP_S:g} s)| = {to_bsk:.3e} m, |hopsim - B extrapolated| = {to_extrapolated:.3e} m, "
        f"{time.perf_counter() - start:.1f} s"
    )
    assert 0 < halving < 1.0  # RK4 at 5 s in LEO: centimetres after a day
    assert to_bsk <= 2.0 * halving
    assert to_extrapolated <= 0.1 * halving
