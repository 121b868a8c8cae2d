"""The Hill (LVLH) frame of a chief spacecraft and relative states in it.

The Hill frame H of a chief at position ``r_c`` and velocity ``v_c`` (inertial frame N, m and m/s)
has x along r_c (radial, away from the planet), z along the orbital angular momentum
h = r_c x v_c (orbit normal) and y = z x x (along-track, in the direction of motion for a
circular orbit). It rotates with the angular velocity omega_HN = h / |r_c|^2 along z, which
changes at the rate -2 (r_c . v_c) / |r_c|^2 omega_HN.

A deputy's relative state in H is rho = C (r_d - r_c) and rho' = C (v_d - v_c) - omega x rho
(the derivative seen in the rotating frame), with C the rotation from N to H.
"""
from __future__ import annotations

import numpy as np

from hopsim.dynamics.spatial import cross_array


def hill_dcm(r_c, v_c) -> np.ndarray:
    """The rotation from N to the chief's Hill frame H: rows are H's axes in N."""
    r_c, v_c = np.asarray(r_c, dtype=float), np.asarray(v_c, dtype=float)
    x = r_c / np.linalg.norm(r_c)
    h = cross_array(r_c, v_c)
    z = h / np.linalg.norm(h)
    return np.array([x, cross_array(z, x), z])


def hill_rate(r_c, v_c) -> tuple[float, float]:
    """(|omega_HN| rad/s, its rate rad/s^2) of the Hill frame; both along H's z axis."""
    r_c, v_c = np.asarray(r_c, dtype=float), np.asarray(v_c, dtype=float)
    r2 = float(r_c @ r_c)
    w = float(np.linalg.norm(cross_array(r_c, v_c))) / r2
    return w, -2.0 * float(r_c @ v_c) / r2 * w


def inertial_to_hill(r_c, v_c, r_d, v_d) -> tuple[np.ndarray, np.ndarray]:
    """(rho, rho') of the deputy in the chief's Hill frame (m, m/s)."""
    C = hill_dcm(r_c, v_c)
    w, _ = hill_rate(r_c, v_c)
    rho = C @ (np.asarray(r_d, dtype=float) - r_c)
    rho_dot = C @ (np.asarray(v_d, dtype=float) - v_c) - cross_array([0.0, 0.0, w], rho)
    return rho, rho_dot


def hill_to_inertial(r_c, v_c, rho, rho_dot) -> tuple[np.ndarray, np.ndarray]:
    """The deputy's (r_d, v_d) in N from its relative state in the chief's Hill frame."""
    C = hill_dcm(r_c, v_c)
    w, _ = hill_rate(r_c, v_c)
    rho = np.asarray(rho, dtype=float)
    r_d = np.asarray(r_c, dtype=float) + C.T @ rho
    v_d = np.asarray(v_c, dtype=float) + C.T @ (np.asarray(rho_dot, dtype=float) + cross_array([0.0, 0.0, w], rho))
    return r_d, v_d


def clohessy_wiltshire_matrix(n: float) -> np.ndarray:
    """A of the Clohessy-Wiltshire (Hill) equations about a circular orbit of mean motion n
    (rad/s), state (rho, rho') in the Hill frame:
    x'' = 3 n^2 x + 2 n y',  y'' = -2 n x',  z'' = -n^2 z."""
    A = np.zeros((6, 6))
    A[0:3, 3:6] = np.eye(3)
    A[3, 0], A[5, 2] = 3.0 * n * n, -n * n
    A[3, 4], A[4, 3] = 2.0 * n, -2.0 * n
    return A


def clohessy_wiltshire_transition(n: float, t: float) -> np.ndarray:
    """The state-transition matrix exp(A t) of the Clohessy-Wiltshire equations (state (rho,
    rho') in the Hill frame, x radial, y along-track, z normal), in closed form (Vallado 2013,
    eq. 6-66, in this module's axes)."""
    s, c = np.sin(n * t), np.cos(n * t)
    Phi = np.zeros((6, 6))
    Phi[0, 0], Phi[0, 3], Phi[0, 4] = 4 - 3 * c, s / n, 2 * (1 - c) / n
    Phi[1, 0], Phi[1, 1], Phi[1, 3], Phi[1, 4] = 6 * (s - n * t), 1.0, -2 * (1 - c) / n, (4 * s - 3 * n * t) / n
    Phi[2, 2], Phi[2, 5] = c, s / n
    Phi[3, 0], Phi[3, 3], Phi[3, 4] = 3 * n * s, c, 2 * s
    Phi[4, 0], Phi[4, 3], Phi[4, 4] = -6 * n * (1 - c), -2 * s, 4 * c - 3
    Phi[5, 2], Phi[5, 5] = -n * s, c
    return Phi
