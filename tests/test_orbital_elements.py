"""Keplerian elements and relative orbital elements: conversions checked against the two-body
invariants and a numerical integration (SciPy), and the relative elements' first-order Hill-frame
map against the exact relative position, with its second order error shrinking fourfold when the
separation halves."""

import math

import numpy as np
import pytest
from scipy.integrate import solve_ivp

from hopsim.dynamics.gravity import EARTH_MU
from hopsim.dynamics.orbit_frames import inertial_to_hill
from hopsim.dynamics.orbital_elements import (
    deputy_elements,
    elements_from_state,
    hill_position_from_roe,
    relative_elements,
    state_from_elements,
)

RNG = np.random.default_rng(17)


def random_elements(k):
    for _ in range(k):
        yield (
            RNG.uniform(6.8e6, 4.2e7),
            RNG.uniform(1e-3, 0.7),
            RNG.uniform(0.05, math.pi - 0.05),
            RNG.uniform(0, 2 * math.pi),
            RNG.uniform(0, 2 * math.pi),
            RNG.uniform(0, 2 * math.pi),
        )


def angle_diff(a, b):
    return abs((a - b + math.pi) % (2 * math.pi) - math.pi)


def test_states_have_the_two_body_invariants_and_convert_back():
    for a, e, i, raan, argp, M in random_elements(50):
        r, v = state_from_elements(a, e, i, raan, argp, M, EARTH_MU)
        energy = v @ v / 2 - EARTH_MU / np.linalg.norm(r)
        assert energy == pytest.approx(-EARTH_MU / (2 * a), rel=1e-12)
        h = np.cross(r, v)
        assert np.linalg.norm(h) == pytest.approx(math.sqrt(EARTH_MU * a * (1 - e * e)), rel=1e-12)
        assert np.allclose(
            h / np.linalg.norm(h),
            [math.sin(i) * math.sin(raan), -math.sin(i) * math.cos(raan), math.cos(i)],
            atol=1e-12,
        )
        back = elements_from_state(r, v, EARTH_MU)
        assert back[0] == pytest.approx(a, rel=1e-11) and back[1] == pytest.approx(e, rel=1e-9)
        for x, y in zip(back[2:], (i, raan, argp, M)):
            assert angle_diff(x, y) < 1e-9


def test_mean_anomaly_advances_as_a_numerical_integration_of_two_body_motion():
    for a, e, i, raan, argp, M in random_elements(5):
        r0, v0 = state_from_elements(a, e, i, raan, argp, M, EARTH_MU)
        period = 2 * math.pi * math.sqrt(a**3 / EARTH_MU)
        t = 1.37 * period

        def f(_, y):
            return np.concatenate([y[3:], -EARTH_MU * y[:3] / np.linalg.norm(y[:3]) ** 3])

        sol = solve_ivp(f, (0, t), np.concatenate([r0, v0]), method="DOP853", rtol=1e-13, atol=1e-6)
        r1, _ = state_from_elements(a, e, i, raan, argp, M + 2 * math.pi * t / period, EARTH_MU)
        assert np.linalg.norm(sol.y[:3, -1] - r1) < 1e-6 * a


def test_relative_elements_invert():
    for chief in random_elements(20):
        roe = RNG.normal(scale=1e-3, size=6)
        deputy = deputy_elements(chief, roe)
        assert np.allclose(relative_elements(chief, deputy), roe, rtol=0, atol=1e-12)


def test_first_order_hill_map_has_second_order_error():
    """A near-circular chief at 7,000 km; deputies at relative elements of size d: the map's error
    is O(a d^2), so it falls about fourfold as d halves."""
    chief = (7.0e6, 1e-5, math.radians(51.6), 0.3, 1.1, 0.4)
    r_c, v_c = state_from_elements(*chief, EARTH_MU)
    u_c = chief[4] + chief[5]
    direction = np.array([0.3, -1.0, 0.8, -0.5, 0.7, 0.4])
    errors = []
    for d in (4e-4, 2e-4, 1e-4):
        roe = d * direction
        r_d, v_d = state_from_elements(*deputy_elements(chief, roe), EARTH_MU)
        rho, _ = inertial_to_hill(r_c, v_c, r_d, v_d)
        approx = hill_position_from_roe(chief[0], u_c, roe)
        errors.append(np.linalg.norm(rho - approx))
        assert errors[-1] < 2e-3 * np.linalg.norm(rho)
    assert 3.0 < errors[0] / errors[1] < 5.0 and 3.0 < errors[1] / errors[2] < 5.0
