"""The near-Earth environment beyond gravity: the Earth's rotation, the Sun's direction and the
Earth's shadow, the air density (one exponential band, or Vallado's table of them), atmospheric
drag and solar radiation pressure on a cannonball.

Times are Julian dates (days; UT1 for the Earth's rotation, TT ~ UTC for the Sun at this model's
accuracy). Vectors are in an Earth-centred inertial frame (ECI: the mean equator and equinox of
date, which the low-precision Sun model gives) or the Earth-fixed frame (ECEF), in m, m/s, m/s^2;
they are float64 arrays of 3 (the functions are compiled, for the orbiting spacecraft's compiled
equations of motion, :mod:`hopsim.dynamics.orbiting_body`).
"""

from __future__ import annotations

import bisect
import math

import numpy as np

from hopsim.dynamics import detlinalg, detmath
from hopsim.dynamics._jit import compiled, compiled_borrowing
from hopsim.dynamics.gravity import EARTH_RADIUS, EARTH_ROTATION_RATE

JD_J2000 = 2451545.0
AU_M = 149_597_870_700.0
SOLAR_PRESSURE_1AU = 4.56e-6  # N/m^2: the solar flux (1361 W/m^2) over c, at 1 AU


@compiled
def gmst_rad(jd_ut1):
    """Greenwich mean sidereal time (rad, in [0, 2 pi)) at a UT1 Julian date (IAU 1982, as in
    Vallado's Algorithm 15)."""
    t = (jd_ut1 - JD_J2000) / 36525.0
    seconds = 67310.54841 + (876600.0 * 3600.0 + 8640184.812866) * t + 0.093104 * t * t - 6.2e-6 * t * t * t
    return math.radians((seconds % 86400.0) / 240.0) % (2.0 * math.pi)


def eci_to_ecef(r_eci, jd_ut1: float) -> np.ndarray:
    """A position from ECI to ECEF: a rotation about z by GMST (polar motion and the equation
    of the equinoxes neglected)."""
    g = gmst_rad(jd_ut1)
    c, s = detmath.cos(g), detmath.sin(g)
    r = np.asarray(r_eci, dtype=float)
    return np.array([c * r[0] + s * r[1], -s * r[0] + c * r[1], r[2]])


@compiled
def sun_position_xyz(jd):
    """The Sun's position from the Earth's centre (m, ECI of date) as a tuple, by the Astronomical
    Almanac's low-precision formulae (about 0.01 deg from 1950 to 2050)."""
    n = jd - JD_J2000
    mean_longitude = math.radians((280.460 + 0.9856474 * n) % 360.0)
    anomaly = math.radians((357.528 + 0.9856003 * n) % 360.0)
    longitude = mean_longitude + math.radians(1.915 * detmath.sin(anomaly) + 0.020 * detmath.sin(2.0 * anomaly))
    obliquity = math.radians(23.439 - 4.0e-7 * n)
    distance = (1.00014 - 0.01671 * detmath.cos(anomaly) - 0.00014 * detmath.cos(2.0 * anomaly)) * AU_M
    return (
        distance * detmath.cos(longitude),
        distance * (detmath.cos(obliquity) * detmath.sin(longitude)),
        distance * (detmath.sin(obliquity) * detmath.sin(longitude)),
    )


@compiled
def sun_position(jd):
    """The Sun's position from the Earth's centre (m, ECI of date), :func:`sun_position_xyz` as an array."""
    x, y, z = sun_position_xyz(jd)
    return np.array([x, y, z])


@compiled
def in_cylindrical_shadow_xyz(x, y, z, sx, sy, sz):
    """Whether a spacecraft at ``(x, y, z)`` is in the Earth's cylindrical shadow (the Sun at
    ``(sx, sy, sz)``; m, ECI)."""
    d = math.sqrt(sx * sx + sy * sy + sz * sz)
    s0, s1, s2 = sx / d, sy / d, sz / d
    along = x * s0 + y * s1 + z * s2
    p0, p1, p2 = x - along * s0, y - along * s1, z - along * s2
    return along < 0.0 and math.sqrt(p0 * p0 + p1 * p1 + p2 * p2) < EARTH_RADIUS


SUN_RADIUS = 6.957e8  # m, the IAU 2015 nominal solar radius


@compiled
def conical_shadow_fraction_xyz(x, y, z, sx, sy, sz, sun_radius_m, earth_radius_m):
    """The fraction of the Sun's disk that a spacecraft at ``(x, y, z)`` sees past a spherical
    Earth (the Sun at ``(sx, sy, sz)``; m, ECI): 1 in sunlight, 0 in the umbra, the uncovered
    part of the disk in the penumbra (and 1 - b^2/a^2 where the Earth's disk lies inside the
    Sun's). Montenbruck and Gill, Satellite Orbits, 3.4.2: the apparent radii a of the Sun and
    b of the Earth and their centres' separation c; two overlapping disks cover
    A = a^2 acos(x / a) + b^2 acos((c - x) / b) - c y, x = (c^2 + a^2 - b^2) / (2 c),
    y = sqrt(a^2 - x^2), and the fraction is 1 - A / (pi a^2)."""
    r = math.sqrt(x * x + y * y + z * z)
    d0, d1, d2 = sx - x, sy - y, sz - z
    d = math.sqrt(d0 * d0 + d1 * d1 + d2 * d2)
    a = detmath.asin(min(sun_radius_m / d, 1.0))
    b = detmath.asin(min(earth_radius_m / r, 1.0))
    cos_c = -(x * d0 + y * d1 + z * d2) / (r * d)  # the Earth's centre seen at -r
    c = detmath.acos(max(-1.0, min(1.0, cos_c)))
    if c >= a + b:
        return 1.0
    if c <= b - a:
        return 0.0
    if c <= a - b:
        return 1.0 - (b * b) / (a * a)
    u = (c * c + a * a - b * b) / (2.0 * c)
    v = math.sqrt(max(a * a - u * u, 0.0))
    covered = (
        a * a * detmath.acos(max(-1.0, min(1.0, u / a)))
        + b * b * detmath.acos(max(-1.0, min(1.0, (c - u) / b)))
        - c * v
    )
    return 1.0 - covered / (math.pi * a * a)


@compiled
def in_cylindrical_shadow(r, r_sun):
    """Whether a spacecraft at ``r`` is in the Earth's cylindrical shadow (the Sun at ``r_sun``)."""
    return in_cylindrical_shadow_xyz(r[0], r[1], r[2], r_sun[0], r_sun[1], r_sun[2])


@compiled
def exponential_density(altitude_m, rho0, h0_m, scale_height_m):
    """Air density (kg/m^3) of an exponential atmosphere: rho0 exp(-(h - h0) / H) (the base
    density rho0 at the base altitude h0 and the scale height H are the user's, e.g. a row of
    Vallado's Table 8-4 for the altitude band flown)."""
    return rho0 * detmath.exp(-(altitude_m - h0_m) / scale_height_m)


VALLADO_EXPONENTIAL_ATMOSPHERE = (
    # base altitude h0 (km), nominal density rho0 (kg/m^3), scale height H (km)
    (0.0, 1.225, 7.249),
    (25.0, 3.899e-2, 6.349),
    (30.0, 1.774e-2, 6.682),
    (40.0, 3.972e-3, 7.554),
    (50.0, 1.057e-3, 8.382),
    (60.0, 3.206e-4, 7.714),
    (70.0, 8.770e-5, 6.549),
    (80.0, 1.905e-5, 5.799),
    (90.0, 3.396e-6, 5.382),
    (100.0, 5.297e-7, 5.877),
    (110.0, 9.661e-8, 7.263),
    (120.0, 2.438e-8, 9.473),
    (130.0, 8.484e-9, 12.636),
    (140.0, 3.845e-9, 16.149),
    (150.0, 2.070e-9, 22.523),
    (180.0, 5.464e-10, 29.740),
    (200.0, 2.789e-10, 37.105),
    (250.0, 7.248e-11, 45.546),
    (300.0, 2.418e-11, 53.628),
    (350.0, 9.518e-12, 53.298),
    (400.0, 3.725e-12, 58.515),
    (450.0, 1.585e-12, 60.828),
    (500.0, 6.967e-13, 63.822),
    (600.0, 1.454e-13, 71.835),
    (700.0, 3.614e-14, 88.667),
    (800.0, 1.170e-14, 124.64),
    (900.0, 5.245e-15, 181.05),
    (1000.0, 3.019e-15, 268.00),
)
"""Vallado's Table 8-4, "Exponential Atmospheric Model" (D. A. Vallado, Fundamentals of
Astrodynamics and Applications, 4th ed., Microcosm Press, 2013): one row per altitude band,
h0 <= h < the next row's h0 (the last row from 1000 km up). Built from the U.S. Standard Atmosphere
1976 at 0 km and CIRA-72 above 25 km (exospheric temperature 1000 K above 500 km), so that the bands
join almost continuously (the largest jump, 0.14 %, at 25 km)."""

_BAND_BASE_M = tuple(1e3 * h0 for h0, _, _ in VALLADO_EXPONENTIAL_ATMOSPHERE)
_BAND_RHO0 = tuple(rho0 for _, rho0, _ in VALLADO_EXPONENTIAL_ATMOSPHERE)
_BAND_SCALE_M = tuple(1e3 * h for _, _, h in VALLADO_EXPONENTIAL_ATMOSPHERE)


def tabulated_density(altitude_m: float) -> float:
    """Air density (kg/m^3) at ``altitude_m`` (m above the Earth's surface) from
    :data:`VALLADO_EXPONENTIAL_ATMOSPHERE`: rho0 exp(-(h - h0) / H) of the band h0 <= h < next h0;
    below 0 m the first band's law, from the last band's base (1000 km) up the last band's."""
    if not math.isfinite(altitude_m):
        raise ValueError(f"altitude_m must be a finite altitude in metres, got {altitude_m}")
    h0, rho0, scale = density_band(altitude_m)
    return rho0 * detmath.exp(-(altitude_m - h0) / scale)


def density_band(altitude_m: float) -> tuple[float, float, float]:
    """(h0 m, rho0 kg/m^3, H m): the band of :data:`VALLADO_EXPONENTIAL_ATMOSPHERE` that holds
    ``altitude_m`` (h0 <= h < next h0; below 0 m the first band, from 1000 km the last), for a model
    that takes one exponential law (e.g. :class:`~hopsim.actors.orbiting_spacecraft.OrbitingSpacecraft`)."""
    i = max(bisect.bisect_right(_BAND_BASE_M, altitude_m) - 1, 0)
    return _BAND_BASE_M[i], _BAND_RHO0[i], _BAND_SCALE_M[i]


@compiled
def air_relative_velocity_xyz(x, y, z, vx, vy, vz):
    """v_rel = v - w_E x r (m/s, frame N): the velocity at ``r = (x, y, z)`` (m) through an
    atmosphere that turns with the Earth, for ``v = (vx, vy, vz)`` (m/s, frame N)."""
    return vx + EARTH_ROTATION_RATE * y, vy - EARTH_ROTATION_RATE * x, vz


@compiled
def drag_acceleration_xyz(x, y, z, vx, vy, vz, density, cd_area_over_mass):
    """:func:`drag_acceleration` at ``r = (x, y, z)``, ``v = (vx, vy, vz)`` as a tuple (m/s^2)."""
    u0, u1, u2 = air_relative_velocity_xyz(x, y, z, vx, vy, vz)
    k = -0.5 * density * cd_area_over_mass * math.sqrt(u0 * u0 + u1 * u1 + u2 * u2)
    return k * u0, k * u1, k * u2


# a flat plate's record in a float vector (see plate_drag_xyz)
PLATE_NORMAL = 0  # its unit outward normal (B): 0:3
PLATE_AREA = 3  # its area (m^2)
PLATE_CD = 4  # its drag coefficient
PLATE_CENTRE = 5  # its centre of pressure from the centre of mass (m, B): 5:8
PLATE_PARAMS = 8


@compiled_borrowing
def plate_drag_xyz(ux, uy, uz, density, plates, first, count):
    """Force (N) and torque about the centre of mass (N m), both in body axes B, on ``count``
    one-sided flat plates in a free-molecular flow, as a 6-tuple: the spacecraft moves through
    the air at ``u = (ux, uy, uz)`` (m/s, B: v_rel of :func:`air_relative_velocity_xyz` turned
    into B) in air of ``density`` (kg/m^3). The plates are ``count`` records of
    :data:`PLATE_PARAMS` floats in ``plates`` from index ``first``.

    A plate of unit outward normal n, area A and drag coefficient C_D whose front faces the
    flow (cos theta = n . u / |u| > 0) sees its area projected on the flow, A cos theta, and the
    drag -1/2 rho C_D A cos theta |u| u, along -u, applied at its centre of pressure r: torque
    r x F. A plate seen edge-on or from behind: none (Montenbruck and Gill, Satellite Orbits,
    3.5.2; Vallado, Fundamentals of Astrodynamics, 8.6.2; Basilisk's facetDragDynamicEffector).
    Sum over the plates; self-shadowing is not modelled (a convex body's plates do not shade
    one another)."""
    speed = math.sqrt(ux * ux + uy * uy + uz * uz)
    fx = fy = fz = tx = ty = tz = 0.0
    if speed == 0.0 or density == 0.0:
        return fx, fy, fz, tx, ty, tz
    for i in range(count):
        j = first + i * PLATE_PARAMS
        cos_theta = (
            plates[j + PLATE_NORMAL] * ux + plates[j + PLATE_NORMAL + 1] * uy + plates[j + PLATE_NORMAL + 2] * uz
        ) / speed
        if cos_theta <= 0.0:
            continue
        k = -0.5 * density * plates[j + PLATE_CD] * plates[j + PLATE_AREA] * cos_theta * speed
        px, py, pz = k * ux, k * uy, k * uz
        rx, ry, rz = plates[j + PLATE_CENTRE], plates[j + PLATE_CENTRE + 1], plates[j + PLATE_CENTRE + 2]
        fx, fy, fz = fx + px, fy + py, fz + pz
        tx, ty, tz = tx + (ry * pz - rz * py), ty + (rz * px - rx * pz), tz + (rx * py - ry * px)
    return fx, fy, fz, tx, ty, tz


def plate_records(name: str, plates) -> np.ndarray:
    """The flat plates ``plates`` -- each ``(normal_B, area_m2, drag_coefficient, centre_B)``:
    outward normal (B, any length but zero), area (m^2), C_D, centre of pressure from the centre
    of mass (m, B) -- as :func:`plate_drag_xyz` reads them (normals made unit); a clear error
    naming ``name`` for a plate that is not."""
    out = []
    for i, plate in enumerate(plates):
        try:
            normal, area, cd, centre = plate
            n = np.asarray(normal, dtype=float)
            r = np.asarray(centre, dtype=float)
            area, cd = float(area), float(cd)
        except (TypeError, ValueError):
            raise ValueError(
                f"{name}: drag plate {i} must be (normal_B, area_m2, drag_coefficient, centre_B), got {plate!r}"
            ) from None
        if n.shape != (3,) or r.shape != (3,) or not (np.all(np.isfinite(n)) and np.all(np.isfinite(r))):
            raise ValueError(f"{name}: drag plate {i}'s normal and centre must be finite 3-vectors (B; m)")
        if not detlinalg.norm(n) > 0:
            raise ValueError(f"{name}: drag plate {i}'s normal must not be zero")
        if not (math.isfinite(area) and area >= 0 and math.isfinite(cd) and cd >= 0):
            raise ValueError(
                f"{name}: drag plate {i}'s area (m^2) and drag coefficient must be finite and >= 0, got {area}, {cd}"
            )
        out.extend([*(n / detlinalg.norm(n)), area, cd, *r])
    return np.array(out, dtype=float)


@compiled
def drag_acceleration(r, v, density, cd_area_over_mass):
    """-1/2 rho (C_D A / m) |v_rel| v_rel (m/s^2) with v_rel = v - w_E x r, the velocity through
    an atmosphere that turns with the Earth (``cd_area_over_mass`` in m^2/kg)."""
    ax, ay, az = drag_acceleration_xyz(r[0], r[1], r[2], v[0], v[1], v[2], density, cd_area_over_mass)
    return np.array([ax, ay, az])


@compiled
def srp_acceleration_xyz(x, y, z, sx, sy, sz, cr_area_over_mass):
    """:func:`srp_acceleration` at ``r = (x, y, z)``, the Sun at ``(sx, sy, sz)``, as a tuple (m/s^2)."""
    if in_cylindrical_shadow_xyz(x, y, z, sx, sy, sz):
        return 0.0, 0.0, 0.0
    return sunlit_srp_acceleration_xyz(x, y, z, sx, sy, sz, cr_area_over_mass)


@compiled
def sunlit_srp_acceleration_xyz(x, y, z, sx, sy, sz, cr_area_over_mass):
    """Solar radiation pressure on a cannonball in full sunlight, as a tuple (m/s^2): P (1 AU /
    d)^2 C_R A / m along the Sun -> spacecraft line (``cr_area_over_mass`` in m^2/kg)."""
    a0, a1, a2 = x - sx, y - sy, z - sz
    d = math.sqrt(a0 * a0 + a1 * a1 + a2 * a2)
    au_over_d = AU_M / d
    k = SOLAR_PRESSURE_1AU * (au_over_d * au_over_d) * cr_area_over_mass / d
    return k * a0, k * a1, k * a2


@compiled
def srp_acceleration(r, r_sun, cr_area_over_mass):
    """Solar radiation pressure on a cannonball (m/s^2): P (1 AU / d)^2 C_R A / m along the Sun
    -> spacecraft line, zero in the Earth's cylindrical shadow (``cr_area_over_mass`` in m^2/kg)."""
    ax, ay, az = srp_acceleration_xyz(r[0], r[1], r[2], r_sun[0], r_sun[1], r_sun[2], cr_area_over_mass)
    return np.array([ax, ay, az])
