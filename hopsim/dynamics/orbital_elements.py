"""Keplerian orbital elements and the quasi-nonsingular relative orbital elements of a formation.

Elements ``(a, e, i, raan, argp, M)``: semi-major axis (m), eccentricity, inclination, right
ascension of the ascending node, argument of perigee and mean anomaly (rad), of an elliptic orbit
about a body of gravitational parameter ``mu`` (m^3/s^2); states are position and velocity in an
inertial frame N whose z axis is the body's pole (m, m/s). Conversions follow Vallado,
Fundamentals of Astrodynamics and Applications (4th ed., 2013), algorithms 9 (RV2COE) and 10
(COE2RV), with Kepler's equation solved by Newton's method.

Relative orbital elements of a deputy with respect to a chief (D'Amico, "Autonomous Formation
Flying in Low Earth Orbit", PhD thesis, TU Delft, 2010, eq. 2.2), dimensionless:

    da  = (a_d - a_c) / a_c
    dl  = (u_d - u_c) + (raan_d - raan_c) cos i_c          (u = argp + M, mean argument of latitude)
    dex = e_d cos argp_d - e_c cos argp_c
    dey = e_d sin argp_d - e_c sin argp_c
    dix = i_d - i_c
    diy = (raan_d - raan_c) sin i_c

For a near-circular chief and small separations, the deputy's position in the chief's Hill frame
(x radial, y along-track, z normal; :mod:`hopsim.dynamics.orbit_frames`) is to first order
(D'Amico 2010, eq. 2.18, at the chief's mean argument of latitude u):

    x = a (da - dex cos u - dey sin u)
    y = a (dl + 2 dex sin u - 2 dey cos u)
    z = a (dix sin u - diy cos u)

so dix, diy and dex, dey set the cross-track and radial oscillations: parallel (or anti-parallel)
relative eccentricity and inclination vectors give a passively safe formation.
"""

from __future__ import annotations

import math

import numpy as np

from hopsim.dynamics import detlinalg, detmath
from hopsim.dynamics.spatial import cross_array, cross_xyz

TWO_PI = 2.0 * math.pi


def _wrap(angle: float) -> float:
    """``angle`` in [0, 2 pi)."""
    return angle % TWO_PI


def _wrap_pi(angle: float) -> float:
    """``angle`` in [-pi, pi)."""
    return (angle + math.pi) % TWO_PI - math.pi


def mean_to_eccentric(M: float, e: float, tol: float = 1e-15) -> float:
    """The eccentric anomaly E (rad) with E - e sin E = M, by Newton's method (e < 1)."""
    if not 0.0 <= e < 1.0:
        raise ValueError(f"mean_to_eccentric needs an elliptic orbit, 0 <= e < 1; got e = {e}")
    M = _wrap_pi(M)
    E = M if e < 0.8 else math.pi * (1.0 if M >= 0 else -1.0)
    for _ in range(50):
        step = (E - e * detmath.sin(E) - M) / (1.0 - e * detmath.cos(E))
        E -= step
        if abs(step) < tol:
            break
    return E


def elements_from_state(r_N, v_N, mu: float) -> tuple[float, float, float, float, float, float]:
    """(a, e, i, raan, argp, M) of the elliptic orbit through ``r_N``, ``v_N``. For a circular
    orbit argp = 0 (perigee at the node); for an equatorial one raan = 0."""
    r, v = np.asarray(r_N, dtype=float), np.asarray(v_N, dtype=float)
    rn, vn = float(detlinalg.norm(r)), float(detlinalg.norm(v))
    h = cross_array(r, v)
    hn = float(detlinalg.norm(h))
    energy = 0.5 * vn * vn - mu / rn
    if energy >= 0.0:
        raise ValueError(f"the state is not on an elliptic orbit (specific energy {energy:.6g} J/kg >= 0)")
    a = -mu / (2.0 * energy)
    e_vec = ((vn * vn - mu / rn) * r - detlinalg.dot(r, v) * v) / mu
    e = float(detlinalg.norm(e_vec))
    i = detmath.acos(max(-1.0, min(1.0, h[2] / hn)))
    node = np.array([-h[1], h[0], 0.0])
    nn = float(detlinalg.norm(node))
    tiny = 1e-11
    raan = _wrap(detmath.atan2(node[1], node[0])) if nn > tiny * hn else 0.0
    node_dir = node / nn if nn > tiny * hn else np.array([1.0, 0.0, 0.0])
    q_dir = cross_array(h / hn, node_dir)  # 90 deg ahead of the node, in the orbit plane
    if e > tiny:
        argp = _wrap(detmath.atan2(detlinalg.dot(e_vec, q_dir), detlinalg.dot(e_vec, node_dir)))
        p_dir = e_vec / e
        nu = detmath.atan2(detlinalg.dot(r, cross_array(h / hn, p_dir)), detlinalg.dot(r, p_dir))
    else:
        argp = 0.0
        nu = detmath.atan2(detlinalg.dot(r, q_dir), detlinalg.dot(r, node_dir))
    E = 2.0 * detmath.atan2(math.sqrt(1.0 - e) * detmath.sin(nu / 2.0), math.sqrt(1.0 + e) * detmath.cos(nu / 2.0))
    M = _wrap(E - e * detmath.sin(E))
    return a, e, i, raan, argp, M


def argument_of_latitude(r_N, v_N) -> float:
    """The osculating argument of latitude (rad, [-pi, pi)) of position ``r_N`` (m) and velocity
    ``v_N`` (m/s) in N: the angle from the ascending node of the orbit through them to r."""
    r0, r1, r2 = map(float, r_N)
    hx, hy, hz = cross_xyz((r0, r1, r2), tuple(map(float, v_N)))  # plain floats: 3-vectors
    hn = math.sqrt(hx * hx + hy * hy + hz * hz)
    hx, hy, hz = hx / hn, hy / hn, hz / hn
    nn = math.sqrt(hy * hy + hx * hx)
    nx, ny = (-hy / nn, hx / nn) if nn > 1e-12 else (1.0, 0.0)  # the node; equatorial: x_N
    qx, qy, qz = cross_xyz((hx, hy, hz), (nx, ny, 0.0))  # 90 deg ahead of it
    return detmath.atan2(qx * r0 + qy * r1 + qz * r2, nx * r0 + ny * r1)


def state_from_elements(
    a: float, e: float, i: float, raan: float, argp: float, M: float, mu: float
) -> tuple[np.ndarray, np.ndarray]:
    """(r_N, v_N) (m, m/s) on the orbit with these elements."""
    if not (a > 0.0 and 0.0 <= e < 1.0):
        raise ValueError(f"an elliptic orbit needs a > 0 and 0 <= e < 1; got a = {a}, e = {e}")
    E = mean_to_eccentric(M, e)
    cos_e, sin_e = detmath.cos(E), detmath.sin(E)
    b = a * math.sqrt(1.0 - e * e)
    r_pf = np.array([a * (cos_e - e), b * sin_e, 0.0])  # perifocal frame
    edot = math.sqrt(mu / (a * a * a)) / (1.0 - e * cos_e)
    v_pf = np.array([-a * sin_e * edot, b * cos_e * edot, 0.0])
    R = _rotation(raan, i, argp)
    return detlinalg.matmul(R, r_pf), detlinalg.matmul(R, v_pf)


def _rotation(raan: float, i: float, argp: float) -> np.ndarray:
    """The perifocal-to-inertial rotation R3(-raan) R1(-i) R3(-argp)."""
    cO, sO, ci, si, cw, sw = (
        detmath.cos(raan),
        detmath.sin(raan),
        detmath.cos(i),
        detmath.sin(i),
        detmath.cos(argp),
        detmath.sin(argp),
    )
    return np.array(
        [
            [cO * cw - sO * sw * ci, -cO * sw - sO * cw * ci, sO * si],
            [sO * cw + cO * sw * ci, -sO * sw + cO * cw * ci, -cO * si],
            [sw * si, cw * si, ci],
        ]
    )


def relative_elements(chief, deputy) -> np.ndarray:
    """(da, dl, dex, dey, dix, diy) of ``deputy`` relative to ``chief`` (both element tuples)."""
    a_c, e_c, i_c, raan_c, argp_c, M_c = chief
    a_d, e_d, i_d, raan_d, argp_d, M_d = deputy
    d_raan = _wrap_pi(raan_d - raan_c)
    return np.array(
        [
            (a_d - a_c) / a_c,
            _wrap_pi((argp_d + M_d) - (argp_c + M_c)) + d_raan * detmath.cos(i_c),
            e_d * detmath.cos(argp_d) - e_c * detmath.cos(argp_c),
            e_d * detmath.sin(argp_d) - e_c * detmath.sin(argp_c),
            i_d - i_c,
            d_raan * detmath.sin(i_c),
        ]
    )


def deputy_elements(chief, roe) -> tuple[float, float, float, float, float, float]:
    """The deputy's elements that have relative elements ``roe`` with respect to ``chief``
    (the inverse of :func:`relative_elements`; the chief not equatorial)."""
    a_c, e_c, i_c, raan_c, argp_c, M_c = chief
    da, dl, dex, dey, dix, diy = roe
    if abs(detmath.sin(i_c)) < 1e-12:
        raise ValueError("relative inclination elements need a chief that is not equatorial")
    ex, ey = e_c * detmath.cos(argp_c) + dex, e_c * detmath.sin(argp_c) + dey
    e_d = math.hypot(ex, ey)
    argp_d = detmath.atan2(ey, ex) if e_d > 0 else 0.0
    raan_d = raan_c + diy / detmath.sin(i_c)
    u_d = argp_c + M_c + dl - (raan_d - raan_c) * detmath.cos(i_c)
    return a_c * (1.0 + da), e_d, i_c + dix, _wrap(raan_d), _wrap(argp_d), _wrap(u_d - argp_d)


def hill_position_from_roe(a_c: float, u_c: float, roe) -> np.ndarray:
    """The first-order Hill-frame position (m; x radial, y along-track, z normal) of a deputy with
    relative elements ``roe`` about a near-circular chief of semi-major axis ``a_c`` at mean
    argument of latitude ``u_c`` (D'Amico 2010, eq. 2.18)."""
    da, dl, dex, dey, dix, diy = roe
    c, s = detmath.cos(u_c), detmath.sin(u_c)
    return a_c * np.array([da - dex * c - dey * s, dl + 2.0 * dex * s - 2.0 * dey * c, dix * s - diy * c])


__all__ = [
    "argument_of_latitude",
    "deputy_elements",
    "elements_from_state",
    "hill_position_from_roe",
    "mean_to_eccentric",
    "relative_elements",
    "state_from_elements",
]
