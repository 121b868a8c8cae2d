"""Spherical-harmonic gravity (Cunningham's recursion) against independent references: the closed-form
J2 acceleration, a potential summed directly from SciPy's associated Legendre functions, and that
potential's gradient by finite differences; the shipped GGM03S field against its published values."""

import math

import numpy as np
import pytest
from scipy.special import lpmv

from hopsim.dynamics.gravity import zonal_acceleration
from hopsim.dynamics.spherical_harmonics import ggm03s, spherical_harmonic_acceleration, spherical_harmonic_potential

RNG = np.random.default_rng(2026)


def points(k, r_min=6.7e6, r_max=4.3e7):
    u = RNG.normal(size=(k, 3))
    u /= np.linalg.norm(u, axis=1)[:, None]
    return u * RNG.uniform(r_min, r_max, size=(k, 1))


def direct_potential(r, mu, radius, C, S):
    """U = mu/r sum (R/r)^n P_nm(sin phi) (C cos m lambda + S sin m lambda), unnormalized C, S;
    SciPy's P_nm carries the Condon-Shortley phase (-1)^m, which geodesy's does not."""
    x, y, z = r
    d = math.sqrt(x * x + y * y + z * z)
    sin_phi, lam = z / d, math.atan2(y, x)
    u = 0.0
    for n in range(C.shape[0]):
        for m in range(n + 1):
            p = (-1) ** m * lpmv(m, n, sin_phi)
            u += (radius / d) ** n * p * (C[n, m] * math.cos(m * lam) + S[n, m] * math.sin(m * lam))
    return mu / d * u


def test_the_shipped_field_is_ggm03s():
    field = ggm03s()
    assert field.degree == 20 and field.mu == 3.986004415e14 and field.radius == 6378136.3
    assert field.C[2, 0] == -4.841692638330e-04 and field.S[2, 2] == -1.400296540441e-06
    assert field.C[20, 20] == 3.732639233911e-09 and field.S[20, 20] == -1.269653878289e-08
    assert field.C[0, 0] == 1.0 and not field.C[1].any() and not field.S[:, 0].any()
    C, _ = field.unnormalized()
    assert -C[2, 0] == pytest.approx(1.0826e-3, rel=1e-4)  # the Earth's J2


def test_degree_two_zonal_equals_the_closed_form_j2():
    field = ggm03s()
    C, S = field.unnormalized(2)
    C, S = C.copy(), np.zeros_like(S)
    C[2, 1:] = 0.0
    j2 = -C[2, 0]
    for r in points(50):
        a = spherical_harmonic_acceleration(r, field.mu, field.radius, C, S, 2)
        b = zonal_acceleration(r, field.mu, field.radius, j2, 0.0)
        assert np.allclose(a, b, rtol=1e-13, atol=1e-16 * np.linalg.norm(b))


def test_potential_equals_the_direct_legendre_sum_to_degree_20():
    field = ggm03s()
    C, S = field.unnormalized()
    for r in points(20):
        u = spherical_harmonic_potential(r, field.mu, field.radius, C, S, 20)
        assert u == pytest.approx(direct_potential(r, field.mu, field.radius, C, S), rel=1e-12)


def test_acceleration_is_the_gradient_of_the_direct_potential():
    """Fourth-order central differences of the independently summed potential (h = 20 m): their
    error, about 1e-9 m/s^2, is a thousand times below the degree 10-20 terms' part."""
    field = ggm03s()
    C, S = field.unnormalized()
    C_low, S_low = C.copy(), S.copy()
    C_low[10:], S_low[10:] = 0.0, 0.0
    h = 20.0
    for r in points(8, 6.7e6, 8.0e6):
        grad = np.zeros(3)
        for k in range(3):
            e = np.zeros(3)
            e[k] = h
            u = [direct_potential(r + j * e, field.mu, field.radius, C, S) for j in (-2, -1, 1, 2)]
            grad[k] = (u[0] - 8 * u[1] + 8 * u[2] - u[3]) / (12 * h)
        a = spherical_harmonic_acceleration(r, field.mu, field.radius, C, S, 20)
        a_low = spherical_harmonic_acceleration(r, field.mu, field.radius, C_low, S_low, 20)
        assert np.max(np.abs(a - grad)) < 1e-8
        assert np.max(np.abs(a - a_low)) > 1e-7  # the high degrees are resolved
