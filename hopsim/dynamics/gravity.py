"""Gravity of a central body: point mass and the zonal harmonics J2 and J3 (Dshell's
PointMassGravity and AsphericalGravity), with the gravity-gradient torque on a rigid body.

Positions are the body's centre of mass relative to the planet's centre, in a planet-centred
frame whose z axis is the planet's rotation axis (m); accelerations in the same frame (m/s^2).
The zonal terms depend only on the distance and the latitude, so the frame may be inertial (ECI)
or rotating with the planet (ECEF) alike.

    a = -mu r / |r|^3                                           (point mass)
    a_J2 = -3/2 J2 mu R^2 / |r|^5 [x (1 - 5 z^2/r^2), y (1 - 5 z^2/r^2), z (3 - 5 z^2/r^2)]
    a_J3 = -1/2 J3 mu R^3 / |r|^7 [5 x z (3 - 7 z^2/r^2), 5 y z (3 - 7 z^2/r^2),
                                    3 r^2 (10 z^2/r^2 - 35/3 z^4/r^4 - 1)]

(the gradients of U = mu/r [1 - J2 (R/r)^2 P2(z/r) - J3 (R/r)^3 P3(z/r)]).
"""

from __future__ import annotations

import numpy as np

from hopsim.dynamics._jit import compiled

# Earth (WGS 84 / EGM96): gravitational parameter (m^3/s^2), equatorial radius (m), the
# unnormalized zonal coefficients J2 = -C20 and J3 = -C30 (EGM96: C20 = -4.84165371736e-4 and
# C30 = 9.57254173792e-7 normalized, times sqrt(5) and sqrt(7)).
EARTH_MU = 3.986004418e14
EARTH_RADIUS = 6378137.0
EARTH_J2 = 4.84165371736e-4 * np.sqrt(5.0)
EARTH_J3 = -9.57254173792e-7 * np.sqrt(7.0)
EARTH_ROTATION_RATE = 7.2921150e-5  # rad/s


@compiled
def point_mass_xyz(x, y, z, mu):
    """-mu r / |r|^3 (m/s^2) at ``r = (x, y, z)`` (m), as a tuple."""
    d = np.sqrt(x * x + y * y + z * z)
    k = -mu / (d * d * d)
    return k * x, k * y, k * z


@compiled
def point_mass_acceleration(r, mu):
    """-mu r / |r|^3 (m/s^2) at ``r`` (m)."""
    ax, ay, az = point_mass_xyz(r[0], r[1], r[2], mu)
    return np.array([ax, ay, az])


@compiled
def zonal_acceleration(r, mu, radius, j2, j3):
    """Point mass plus the J2 and J3 zonal terms (m/s^2) at ``r`` (m)."""
    x, y, z = r[0], r[1], r[2]
    d2 = x * x + y * y + z * z
    d = np.sqrt(d2)
    s2 = z * z / d2  # sin^2 of the latitude
    k0 = -mu / (d2 * d)
    k2 = -1.5 * j2 * mu * radius * radius / (d2 * d2 * d)
    k3 = -0.5 * j3 * mu * radius * radius * radius / (d2 * d2 * d2 * d)
    return np.array(
        [
            k0 * x + k2 * x * (1.0 - 5.0 * s2) + k3 * 5.0 * x * z * (3.0 - 7.0 * s2),
            k0 * y + k2 * y * (1.0 - 5.0 * s2) + k3 * 5.0 * y * z * (3.0 - 7.0 * s2),
            k0 * z + k2 * z * (3.0 - 5.0 * s2) + k3 * 3.0 * d2 * (10.0 * s2 - 35.0 / 3.0 * s2 * s2 - 1.0),
        ]
    )


@compiled
def zonal_potential(r, mu, radius, j2, j3):
    """The potential U (m^2/s^2; a = grad U) of the point mass with J2 and J3 at ``r`` (m)."""
    d = np.sqrt(r[0] * r[0] + r[1] * r[1] + r[2] * r[2])
    s = r[2] / d
    p2 = 0.5 * (3.0 * s * s - 1.0)
    p3 = 0.5 * (5.0 * s * s * s - 3.0 * s)
    q = radius / d
    return mu / d * (1.0 - j2 * q * q * p2 - j3 * q * q * q * p3)


@compiled
def gravity_gradient_xyz(bx, by, bz, inertia_B, mu):
    """:func:`gravity_gradient_torque` at ``r_B = (bx, by, bz)`` as a tuple (N m, B), in scalars."""
    ix = inertia_B[0, 0] * bx + inertia_B[0, 1] * by + inertia_B[0, 2] * bz
    iy = inertia_B[1, 0] * bx + inertia_B[1, 1] * by + inertia_B[1, 2] * bz
    iz = inertia_B[2, 0] * bx + inertia_B[2, 1] * by + inertia_B[2, 2] * bz
    d2 = bx * bx + by * by + bz * bz
    k = 3.0 * mu / (d2 * d2 * np.sqrt(d2))
    return k * (by * iz - bz * iy), k * (bz * ix - bx * iz), k * (bx * iy - by * ix)


@compiled
def gravity_gradient_torque(r_B, inertia_B, mu):
    """The point-mass gravity-gradient torque 3 mu / |r|^5 r x (I r) (N m) on a rigid body whose
    centre of mass lies at ``r_B`` (m, in the body frame B) from the planet's centre, inertia
    ``inertia_B`` (kg m^2, about the centre of mass, in B)."""
    tx, ty, tz = gravity_gradient_xyz(r_B[0], r_B[1], r_B[2], inertia_B, mu)
    return np.array([tx, ty, tz])
