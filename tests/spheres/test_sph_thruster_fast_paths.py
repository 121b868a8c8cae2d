"""The compiled fast paths of the SPHERES thruster simulator and thrust prediction give exactly (bit
for bit) what the plain numpy and Python forms they replace give."""
import numpy as np

from hopsim.actors.spheres.params import G0
from hopsim.actors.spheres.thrusters import _burn


def _bits(a) -> np.ndarray:
    return np.asarray(a, dtype=float).view(np.int64)


def test_compiled_propellant_account_matches_numpy():
    rng = np.random.default_rng(4)
    isp_g0 = 37.0 * G0
    for _ in range(2000):
        thrust = rng.random(12) * 10.0 ** rng.integers(-3, 2, 12) * (rng.random(12) < 0.7)
        impulse = rng.random(12) * 10.0 ** rng.integers(-6, 3, 12)
        dt = float(rng.choice([1e-3, 6e-3, rng.random() * 0.05]))
        ref_impulse = impulse.copy()
        ref_impulse += thrust * dt
        ref_used = ref_impulse / isp_g0
        used = np.zeros(12)
        total = _burn(impulse, used, thrust, dt, isp_g0)
        assert np.array_equal(_bits(impulse), _bits(ref_impulse))
        assert np.array_equal(_bits(used), _bits(ref_used))
        assert _bits(total) == _bits(float(ref_used.sum()))
