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

from hopsim.dynamics import detlinalg, detmath
from hopsim.dynamics._jit import compiled
from hopsim.dynamics.spatial import cross3, cross_array


def hill_dcm(r_c, v_c) -> np.ndarray:
    """The rotation from N to the chief's Hill frame H: rows are H's axes in N."""
    r_c, v_c = np.asarray(r_c, dtype=float), np.asarray(v_c, dtype=float)
    x = r_c / detlinalg.norm(r_c)
    h = cross_array(r_c, v_c)
    z = h / detlinalg.norm(h)
    return np.array([x, cross_array(z, x), z])


def hill_rate(r_c, v_c) -> tuple[float, float]:
    """(|omega_HN| rad/s, its rate rad/s^2) of the Hill frame; both along H's z axis."""
    r_c, v_c = np.asarray(r_c, dtype=float), np.asarray(v_c, dtype=float)
    r2 = detlinalg.dot(r_c, r_c)
    w = float(detlinalg.norm(cross_array(r_c, v_c))) / r2
    return w, -2.0 * detlinalg.dot(r_c, v_c) / r2 * w


def inertial_to_hill(r_c, v_c, r_d, v_d) -> tuple[np.ndarray, np.ndarray]:
    """(rho, rho') of the deputy in the chief's Hill frame (m, m/s)."""
    C = hill_dcm(r_c, v_c)
    w, _ = hill_rate(r_c, v_c)
    rho = detlinalg.matmul(C, np.asarray(r_d, dtype=float) - r_c)
    rho_dot = detlinalg.matmul(C, np.asarray(v_d, dtype=float) - v_c) - cross_array([0.0, 0.0, w], rho)
    return rho, rho_dot


def hill_to_inertial(r_c, v_c, rho, rho_dot) -> tuple[np.ndarray, np.ndarray]:
    """The deputy's (r_d, v_d) in N from its relative state in the chief's Hill frame."""
    C = hill_dcm(r_c, v_c)
    w, _ = hill_rate(r_c, v_c)
    rho = np.asarray(rho, dtype=float)
    r_d = np.asarray(r_c, dtype=float) + detlinalg.matmul(C.T, rho)
    v_d = np.asarray(v_c, dtype=float) + detlinalg.matmul(
        C.T, np.asarray(rho_dot, dtype=float) + cross_array([0.0, 0.0, w], rho)
    )
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
    s, c = detmath.sin(n * t), detmath.cos(n * t)
    Phi = np.zeros((6, 6))
    Phi[0, 0], Phi[0, 3], Phi[0, 4] = 4 - 3 * c, s / n, 2 * (1 - c) / n
    Phi[1, 0], Phi[1, 1], Phi[1, 3], Phi[1, 4] = 6 * (s - n * t), 1.0, -2 * (1 - c) / n, (4 * s - 3 * n * t) / n
    Phi[2, 2], Phi[2, 5] = c, s / n
    Phi[3, 0], Phi[3, 3], Phi[3, 4] = 3 * n * s, c, 2 * s
    Phi[4, 0], Phi[4, 3], Phi[4, 4] = -6 * n * (1 - c), -2 * s, 4 * c - 3
    Phi[5, 2], Phi[5, 5] = -n * s, c
    return Phi


@compiled
def hill_state_carried(r_c, v_c, r_d, v_d, n, dt):
    """A deputy's relative state from two fixes of one instant, carried ``dt`` seconds forward.

    ``r_c, v_c`` and ``r_d, v_d``: the chief's and the deputy's position and velocity in N at the
    same instant (m, m/s, 3-vectors); ``n``: the chief's mean motion (rad/s). Returns ``(x, C_NH)``:
    ``x`` = (rho m, rho' m/s) in the chief's Hill frame, as :func:`inertial_to_hill`, then advanced
    by the Clohessy-Wiltshire transition over ``dt`` (:func:`clohessy_wiltshire_transition`);
    ``C_NH`` (3x3) turns a vector from that Hill frame, rotated by ``n dt`` about its z axis (its
    axes ``dt`` later on a circular orbit), into N: ``hill_dcm(r_c, v_c).T @ R_z(n dt)``.
    One compiled call for what a flight software's relative navigation does at every step.
    """
    rn = np.sqrt(r_c[0] * r_c[0] + r_c[1] * r_c[1] + r_c[2] * r_c[2])
    ex = r_c / rn  # Hill x: radial
    h = cross3(r_c, v_c)
    hn = np.sqrt(h[0] * h[0] + h[1] * h[1] + h[2] * h[2])
    ez = h / hn  # Hill z: orbit normal
    ey = cross3(ez, ex)  # Hill y: along-track
    w = hn / (rn * rn)  # |omega_HN| (rad/s)
    dr = r_d - r_c
    dv = v_d - v_c
    x0 = ex[0] * dr[0] + ex[1] * dr[1] + ex[2] * dr[2]
    y0 = ey[0] * dr[0] + ey[1] * dr[1] + ey[2] * dr[2]
    z0 = ez[0] * dr[0] + ez[1] * dr[1] + ez[2] * dr[2]
    u0 = ex[0] * dv[0] + ex[1] * dv[1] + ex[2] * dv[2] + w * y0  # rho' = C dv - omega x rho
    v0 = ey[0] * dv[0] + ey[1] * dv[1] + ey[2] * dv[2] - w * x0
    w0 = ez[0] * dv[0] + ez[1] * dv[1] + ez[2] * dv[2]
    nt = n * dt
    s, c = detmath.sin(nt), detmath.cos(nt)
    x = np.empty(6)  # Vallado 2013, eq. 6-66 (module axes)
    x[0] = (4.0 - 3.0 * c) * x0 + s / n * u0 + 2.0 * (1.0 - c) / n * v0
    x[1] = 6.0 * (s - nt) * x0 + y0 - 2.0 * (1.0 - c) / n * u0 + (4.0 * s - 3.0 * nt) / n * v0
    x[2] = c * z0 + s / n * w0
    x[3] = 3.0 * n * s * x0 + c * u0 + 2.0 * s * v0
    x[4] = -6.0 * n * (1.0 - c) * x0 - 2.0 * s * u0 + (4.0 * c - 3.0) * v0
    x[5] = -n * s * z0 + c * w0
    C_NH = np.empty((3, 3))
    for i in range(3):
        C_NH[i, 0] = c * ex[i] + s * ey[i]
        C_NH[i, 1] = c * ey[i] - s * ex[i]
        C_NH[i, 2] = ez[i]
    return x, C_NH


@compiled
def slot_error_carried(r_c, v_c, r_d, v_d, n, dt, a_c, roe):
    """A deputy's error from its slot, from two fixes of one instant carried ``dt`` seconds forward.

    ``r_c, v_c, r_d, v_d, n, dt``: as :func:`hill_state_carried`; ``a_c`` (m): the chief's
    semi-major axis; ``roe``: the slot's relative orbital elements (da, dl, dex, dey, dix, diy; da
    = 0). Returns ``(e, C_NH)``: ``e`` = (rho - rho_ref m, rho' - rho_ref' m/s) in the chief's Hill
    frame, with (rho, rho') and ``C_NH`` those of :func:`hill_state_carried` and (rho_ref,
    rho_ref') the slot's first-order reference (D'Amico 2010, eq. 2.18, and its derivative at
    u_c' = n; :func:`hopsim.actors.orbit_formation.slot_reference`) at the chief's argument of
    latitude (:func:`hopsim.dynamics.orbital_elements.argument_of_latitude` of ``r_c, v_c``)
    plus ``n dt``. Those functions' floats, term for term (``tests/test_orbit.py``): one compiled
    call for what the orbit formation's flight software does at every step.
    """
    x, C_NH = hill_state_carried(r_c, v_c, r_d, v_d, n, dt)
    r0, r1, r2 = r_c[0], r_c[1], r_c[2]  # the chief's argument of latitude
    hx = r1 * v_c[2] - r2 * v_c[1]
    hy = r2 * v_c[0] - r0 * v_c[2]
    hz = r0 * v_c[1] - r1 * v_c[0]
    hn = np.sqrt(hx * hx + hy * hy + hz * hz)
    hx, hy, hz = hx / hn, hy / hn, hz / hn
    nn = np.sqrt(hy * hy + hx * hx)
    nx, ny = 1.0, 0.0  # the node; equatorial: x_N
    if nn > 1e-12:
        nx, ny = -hy / nn, hx / nn
    qx = hy * 0.0 - hz * ny  # 90 deg ahead of the node: h x node
    qy = hz * nx - hx * 0.0
    qz = hx * ny - hy * nx
    u_c = detmath.atan2(qx * r0 + qy * r1 + qz * r2, nx * r0 + ny * r1) + n * dt
    da, dl, dex, dey, dix, diy = roe[0], roe[1], roe[2], roe[3], roe[4], roe[5]
    c, s = detmath.cos(u_c), detmath.sin(u_c)
    k = a_c * n
    e = np.empty(6)
    e[0] = x[0] - a_c * (da - dex * c - dey * s)
    e[1] = x[1] - a_c * (dl + 2.0 * dex * s - 2.0 * dey * c)
    e[2] = x[2] - a_c * (dix * s - diy * c)
    e[3] = x[3] - k * (dex * s - dey * c)
    e[4] = x[4] - k * (2.0 * (dex * c + dey * s))
    e[5] = x[5] - k * (dix * c + diy * s)
    return e, C_NH
