"""hopsim's gravity against Basilisk's (the `bsk` wheel, in its own environment because it pins
another protobuf): point mass, J2 alone and the GGM03S field to degree 8 and 20, from the same
coefficients, at points from low orbit to beyond geostationary, to 1e-12 relative."""

import json
import subprocess

import numpy as np
from basilisk_peer import bsk_python

from hopsim.dynamics.spherical_harmonics import ggm03s, spherical_harmonic_acceleration

BSK_SCRIPT = r"""
import json, sys
from Basilisk.simulation import sphericalHarmonicsGravityModel as shg
job = json.load(sys.stdin)
out = []
for case in job["cases"]:
    model = shg.SphericalHarmonicsGravityModel()
    model.muBody, model.radEquator, model.maxDeg = job["mu"], job["radius"], case["degree"]
    model.cBar, model.sBar = case["C"], case["S"]
    model.initializeParameters()
    out.append([[v[0] for v in model.computeField(r)] for r in job["points"]])
json.dump(out, sys.stdout)
"""


def test_gravity_equals_basilisks():
    python = bsk_python()
    field = ggm03s()
    rng = np.random.default_rng(8)
    u = rng.normal(size=(12, 3))
    points = u / np.linalg.norm(u, axis=1)[:, None] * rng.uniform(6.7e6, 4.5e7, size=(12, 1))
    cases = []
    for degree, keep in ((0, "all"), (2, "zonal"), (8, "all"), (20, "all")):
        C, S = field.C[: degree + 1, : degree + 1].copy(), field.S[: degree + 1, : degree + 1].copy()
        if keep == "zonal":
            C[:, 1:], S[:] = 0.0, 0.0
        cases.append((degree, C, S))
    job = {
        "mu": field.mu,
        "radius": field.radius,
        "points": points.tolist(),
        "cases": [
            {
                "degree": d,
                "C": [list(C[n, : n + 1]) for n in range(d + 1)],
                "S": [list(S[n, : n + 1]) for n in range(d + 1)],
            }
            for d, C, S in cases
        ],
    }
    reply = subprocess.run(
        [python, "-c", BSK_SCRIPT], input=json.dumps(job), capture_output=True, text=True, check=True, timeout=300
    )
    theirs = json.loads(reply.stdout)
    for (degree, C, S), accelerations in zip(cases, theirs):
        field_n = type(field)(field.name, field.mu, field.radius, C, S)
        Cu, Su = field_n.unnormalized()
        for r, a_bsk in zip(points, accelerations):
            a = spherical_harmonic_acceleration(r, field.mu, field.radius, Cu, Su, degree)
            assert np.linalg.norm(a - np.array(a_bsk)) <= 1e-12 * np.linalg.norm(a_bsk), (degree, r)
