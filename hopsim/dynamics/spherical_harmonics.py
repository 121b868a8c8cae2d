"""Gravity of a planet's spherical-harmonic field to degree and order n (Dshell's
SphericalHarmonicGravity), by Cunningham's recursion.

The potential of a field with fully normalized coefficients Cbar_nm, Sbar_nm (geodesy's
normalization, no Condon-Shortley phase) is

    U(r) = mu/R sum_{n=0..N} sum_{m=0..n} (C_nm V_nm + S_nm W_nm)

with the unnormalized C_nm = N_nm Cbar_nm, N_nm = sqrt((2 - delta_m0) (2n + 1) (n - m)! / (n + m)!),
and V_nm + i W_nm = (R/r)^(n+1) P_nm(sin phi) e^(i m lambda), computed by Cunningham's recursion
(Montenbruck and Gill, Satellite Orbits, 2000, section 3.2.4):

    V_00 = R/r,  V_mm + i W_mm = (2m - 1) (x + i y) R/r^2 (V_m-1,m-1 + i W_m-1,m-1)
    V_nm = ((2n - 1) z R/r^2 V_n-1,m - (n + m - 1) R^2/r^2 V_n-2,m) / (n - m)     (W alike)

and the acceleration a = grad U from the V, W of degree n + 1 (their eq. 3.33). Positions and
accelerations are in the planet-fixed frame F (ECEF for the Earth: z along the rotation axis, x
through the prime meridian), m and m/s^2; an inertial acceleration is R_NF a_F at r_F = R_FN r_N
(:func:`hopsim.dynamics.environment.eci_to_ecef`). Unnormalized coefficients are fine to
degree 20 or so in double precision (their ratios stay within its range); beyond, normalized
recursions are needed.

The Earth's field shipped with hopsim is GGM03S to degree and order 20
(``hopsim/dynamics/data/ggm03s_20.txt``, its source in the file's header).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np

from hopsim.dynamics._jit import compiled, compiled_borrowing

GGM03S_FILE = Path(__file__).parent / "data" / "ggm03s_20.txt"
GGM03S_MU = 3.986004415e14  # m^3/s^2
GGM03S_RADIUS = 6378136.3  # m


@dataclass(frozen=True)
class GravityField:
    """A spherical-harmonic field: ``mu`` (m^3/s^2), reference ``radius`` (m), fully normalized
    coefficients ``C``, ``S`` ((N+1, N+1), [n, m], zero above the diagonal) to degree ``degree``."""

    name: str
    mu: float
    radius: float
    C: np.ndarray
    S: np.ndarray

    @property
    def degree(self) -> int:
        return self.C.shape[0] - 1

    def unnormalized(self, degree: int | None = None) -> tuple[np.ndarray, np.ndarray]:
        """(C, S) unnormalized, truncated to ``degree`` (default: all)."""
        n_max = self.degree if degree is None else degree
        if not 0 <= n_max <= self.degree:
            raise ValueError(f"{self.name} has degrees 0 to {self.degree}; asked for {degree}")
        factor = np.zeros((n_max + 1, n_max + 1))
        for n in range(n_max + 1):
            for m in range(n + 1):
                factor[n, m] = math.sqrt(
                    (1 if m == 0 else 2) * (2 * n + 1) * math.factorial(n - m) / math.factorial(n + m)
                )
        return self.C[: n_max + 1, : n_max + 1] * factor, self.S[: n_max + 1, : n_max + 1] * factor


def read_field(path: str | Path, name: str, mu: float, radius: float) -> GravityField:
    """A field from a text file of rows ``n m C_nm S_nm [sigmas]`` (normalized; '#' comments)."""
    rows = np.loadtxt(path, comments="#", usecols=(0, 1, 2, 3), ndmin=2)
    n_max = int(rows[:, 0].max())
    C, S = np.zeros((n_max + 1, n_max + 1)), np.zeros((n_max + 1, n_max + 1))
    for n, m, c, s in rows:
        C[int(n), int(m)], S[int(n), int(m)] = c, s
    return GravityField(name, mu, radius, C, S)


@lru_cache(maxsize=1)
def ggm03s() -> GravityField:
    """The Earth's GGM03S field to degree and order 20."""
    return read_field(GGM03S_FILE, "GGM03S", GGM03S_MU, GGM03S_RADIUS)


@compiled_borrowing
def cunningham_into(x, y, z, radius, n_max, V, W):
    """Fill the lower triangles (n >= m) of ``V``, ``W`` to degree ``n_max`` at ``(x, y, z)``
    (m, frame F); the upper triangles are left as they are (no formula reads them)."""
    r2 = x * x + y * y + z * z
    rho = radius * radius / r2
    x0, y0, z0 = x * radius / r2, y * radius / r2, z * radius / r2
    V[0, 0] = radius / np.sqrt(r2)
    W[0, 0] = 0.0
    for m in range(n_max + 1):
        if m > 0:
            V[m, m] = (2 * m - 1) * (x0 * V[m - 1, m - 1] - y0 * W[m - 1, m - 1])
            W[m, m] = (2 * m - 1) * (x0 * W[m - 1, m - 1] + y0 * V[m - 1, m - 1])
        if m + 1 <= n_max:
            V[m + 1, m] = (2 * m + 1) * z0 * V[m, m]
            W[m + 1, m] = (2 * m + 1) * z0 * W[m, m]
        for n in range(m + 2, n_max + 1):
            V[n, m] = ((2 * n - 1) * z0 * V[n - 1, m] - (n + m - 1) * rho * V[n - 2, m]) / (n - m)
            W[n, m] = ((2 * n - 1) * z0 * W[n - 1, m] - (n + m - 1) * rho * W[n - 2, m]) / (n - m)


@compiled
def _cunningham(r, radius, n_max):
    """V, W ((n_max + 1) x (n_max + 1)) at ``r`` (m, frame F)."""
    V = np.zeros((n_max + 1, n_max + 1))
    W = np.zeros((n_max + 1, n_max + 1))
    cunningham_into(r[0], r[1], r[2], radius, n_max, V, W)
    return V, W


@compiled_borrowing
def spherical_harmonic_acceleration_xyz(x, y, z, mu, radius, C, S, n_max, V, W):
    """grad U (m/s^2, frame F) as a tuple, at ``(x, y, z)`` (m, frame F); ``V``, ``W`` are
    scratch of at least (n_max + 2) x (n_max + 2) (no allocation: the orbiting spacecraft's
    derivative calls it four times per RK4 step)."""
    cunningham_into(x, y, z, radius, n_max + 1, V, W)
    ax, ay, az = 0.0, 0.0, 0.0
    for n in range(n_max + 1):
        for m in range(n + 1):
            c, s = C[n, m], S[n, m]
            if m == 0:
                ax -= c * V[n + 1, 1]
                ay -= c * W[n + 1, 1]
            else:
                f = (n - m + 2) * (n - m + 1)
                ax += 0.5 * (
                    (-c * V[n + 1, m + 1] - s * W[n + 1, m + 1]) + f * (c * V[n + 1, m - 1] + s * W[n + 1, m - 1])
                )
                ay += 0.5 * (
                    (-c * W[n + 1, m + 1] + s * V[n + 1, m + 1]) + f * (-c * W[n + 1, m - 1] + s * V[n + 1, m - 1])
                )
            az += (n - m + 1) * (-c * V[n + 1, m] - s * W[n + 1, m])
    k = mu / (radius * radius)
    return k * ax, k * ay, k * az


@compiled_borrowing
def cunningham_lanes_into(x, y, z, radius, n_max, V, W, work, count):
    """:func:`cunningham_into` for ``count`` points at once, lane ``l`` at ``(x[l], y[l], z[l])``,
    into ``V[n, m, l]``, ``W[n, m, l]``: each lane's arithmetic is :func:`cunningham_into`'s, operation
    for operation; the loops over the lanes are innermost, so that the compiler can run them in
    SIMD registers. ``work``: 4 x lanes."""
    x0, y0, z0, rho = work[0], work[1], work[2], work[3]
    for lane in range(count):
        r2 = x[lane] * x[lane] + y[lane] * y[lane] + z[lane] * z[lane]
        rho[lane] = radius * radius / r2
        x0[lane] = x[lane] * radius / r2
        y0[lane] = y[lane] * radius / r2
        z0[lane] = z[lane] * radius / r2
        V[0, 0, lane] = radius / np.sqrt(r2)
        W[0, 0, lane] = 0.0
    for m in range(n_max + 1):
        if m > 0:
            k = 2 * m - 1
            V1, W1, Vm, Wm = V[m - 1, m - 1], W[m - 1, m - 1], V[m, m], W[m, m]
            for lane in range(count):
                Vm[lane] = k * (x0[lane] * V1[lane] - y0[lane] * W1[lane])
                Wm[lane] = k * (x0[lane] * W1[lane] + y0[lane] * V1[lane])
        if m + 1 <= n_max:
            k = 2 * m + 1
            Vm, Wm, V1, W1 = V[m, m], W[m, m], V[m + 1, m], W[m + 1, m]
            for lane in range(count):
                V1[lane] = k * z0[lane] * Vm[lane]
                W1[lane] = k * z0[lane] * Wm[lane]
        for n in range(m + 2, n_max + 1):
            k1, k2, d = 2 * n - 1, n + m - 1, n - m
            V1, V2, W1, W2, Vn, Wn = V[n - 1, m], V[n - 2, m], W[n - 1, m], W[n - 2, m], V[n, m], W[n, m]
            for lane in range(count):
                Vn[lane] = (k1 * z0[lane] * V1[lane] - k2 * rho[lane] * V2[lane]) / d
                Wn[lane] = (k1 * z0[lane] * W1[lane] - k2 * rho[lane] * W2[lane]) / d


@compiled_borrowing
def spherical_harmonic_acceleration_lanes(x, y, z, mu, radius, C, S, n_max, V, W, work, count, ax, ay, az):
    """:func:`spherical_harmonic_acceleration_xyz` for ``count`` points at once (lane ``l`` at
    ``(x[l], y[l], z[l])``) into ``ax``, ``ay``, ``az``: each lane's arithmetic is the one-point
    function's, operation for operation and in its order (the sums run over n and m as there);
    the loops over the lanes are innermost (SIMD). ``V``, ``W``: (n_max + 2) x (n_max + 2) x
    lanes; ``work``: 4 x lanes."""
    cunningham_lanes_into(x, y, z, radius, n_max + 1, V, W, work, count)
    for lane in range(count):
        ax[lane], ay[lane], az[lane] = 0.0, 0.0, 0.0
    for n in range(n_max + 1):
        for m in range(n + 1):
            c, s = C[n, m], S[n, m]
            g = n - m + 1
            Vm, Wm = V[n + 1, m], W[n + 1, m]
            if m == 0:
                Vu, Wu = V[n + 1, 1], W[n + 1, 1]
                for lane in range(count):
                    ax[lane] -= c * Vu[lane]
                    ay[lane] -= c * Wu[lane]
                    az[lane] += g * (-c * Vm[lane] - s * Wm[lane])
            else:
                f = (n - m + 2) * (n - m + 1)
                Vu, Wu, Vd, Wd = V[n + 1, m + 1], W[n + 1, m + 1], V[n + 1, m - 1], W[n + 1, m - 1]
                for lane in range(count):
                    ax[lane] += 0.5 * ((-c * Vu[lane] - s * Wu[lane]) + f * (c * Vd[lane] + s * Wd[lane]))
                    ay[lane] += 0.5 * ((-c * Wu[lane] + s * Vu[lane]) + f * (-c * Wd[lane] + s * Vd[lane]))
                    az[lane] += g * (-c * Vm[lane] - s * Wm[lane])
    k = mu / (radius * radius)
    for lane in range(count):
        ax[lane], ay[lane], az[lane] = k * ax[lane], k * ay[lane], k * az[lane]


@compiled
def spherical_harmonic_acceleration(r, mu, radius, C, S, n_max):
    """grad U (m/s^2, frame F) at ``r`` (m, frame F) of the field with unnormalized ``C``, ``S``
    to degree ``n_max`` (C[0, 0] = 1 gives the point mass)."""
    V = np.zeros((n_max + 2, n_max + 2))
    W = np.zeros((n_max + 2, n_max + 2))
    ax, ay, az = spherical_harmonic_acceleration_xyz(r[0], r[1], r[2], mu, radius, C, S, n_max, V, W)
    return np.array([ax, ay, az])


@compiled
def spherical_harmonic_potential(r, mu, radius, C, S, n_max):
    """U (m^2/s^2; a = grad U) at ``r`` (m, frame F)."""
    V, W = _cunningham(r, radius, n_max)
    u = 0.0
    for n in range(n_max + 1):
        for m in range(n + 1):
            u += C[n, m] * V[n, m] + S[n, m] * W[n, m]
    return mu / radius * u


__all__ = [
    "GravityField",
    "cunningham_into",
    "cunningham_lanes_into",
    "ggm03s",
    "read_field",
    "spherical_harmonic_acceleration",
    "spherical_harmonic_acceleration_lanes",
    "spherical_harmonic_acceleration_xyz",
    "spherical_harmonic_potential",
]
