"""The near-Earth environment beyond gravity: the Earth's rotation, the Sun's direction and the
Earth's shadow, atmospheric drag and solar radiation pressure on a cannonball.

Times are Julian dates (days; UT1 for the Earth's rotation, TT ~ UTC for the Sun at this model's
accuracy). Vectors are in an Earth-centred inertial frame (ECI: the mean equator and equinox of
date, which the low-precision Sun model gives) or the Earth-fixed frame (ECEF), in m, m/s, m/s^2.
"""
from __future__ import annotations

import math

import numpy as np

from hopsim.dynamics.gravity import EARTH_RADIUS, EARTH_ROTATION_RATE

JD_J2000 = 2451545.0
AU_M = 149_597_870_700.0
SOLAR_PRESSURE_1AU = 4.56e-6          # N/m^2: the solar flux (1361 W/m^2) over c, at 1 AU


def gmst_rad(jd_ut1: float) -> float:
    """Greenwich mean sidereal time (rad, in [0, 2 pi)) at a UT1 Julian date (IAU 1982, as in
    Vallado's Algorithm 15)."""
    t = (jd_ut1 - JD_J2000) / 36525.0
    seconds = 67310.54841 + (876600.0 * 3600.0 + 8640184.812866) * t + 0.093104 * t * t - 6.2e-6 * t ** 3
    return math.radians((seconds % 86400.0) / 240.0) % (2.0 * math.pi)


def eci_to_ecef(r_eci, jd_ut1: float) -> np.ndarray:
    """A position from ECI to ECEF: a rotation about z by GMST (polar motion and the equation
    of the equinoxes neglected)."""
    g = gmst_rad(jd_ut1)
    c, s = math.cos(g), math.sin(g)
    r = np.asarray(r_eci, dtype=float)
    return np.array([c * r[0] + s * r[1], -s * r[0] + c * r[1], r[2]])


def sun_position(jd: float) -> np.ndarray:
    """The Sun's position from the Earth's centre (m, ECI of date), by the Astronomical Almanac's
    low-precision formulae (about 0.01 deg from 1950 to 2050)."""
    n = jd - JD_J2000
    mean_longitude = math.radians((280.460 + 0.9856474 * n) % 360.0)
    anomaly = math.radians((357.528 + 0.9856003 * n) % 360.0)
    longitude = mean_longitude + math.radians(1.915 * math.sin(anomaly) + 0.020 * math.sin(2.0 * anomaly))
    obliquity = math.radians(23.439 - 4.0e-7 * n)
    distance = (1.00014 - 0.01671 * math.cos(anomaly) - 0.00014 * math.cos(2.0 * anomaly)) * AU_M
    return distance * np.array([math.cos(longitude), math.cos(obliquity) * math.sin(longitude),
                                math.sin(obliquity) * math.sin(longitude)])


def in_cylindrical_shadow(r, r_sun) -> bool:
    """Whether a spacecraft at ``r`` is in the Earth's cylindrical shadow (the Sun at ``r_sun``)."""
    r, r_sun = np.asarray(r, dtype=float), np.asarray(r_sun, dtype=float)
    s = r_sun / np.linalg.norm(r_sun)
    along = float(r @ s)
    return along < 0.0 and float(np.linalg.norm(r - along * s)) < EARTH_RADIUS


def exponential_density(altitude_m: float, rho0: float, h0_m: float, scale_height_m: float) -> float:
    """Air density (kg/m^3) of an exponential atmosphere: rho0 exp(-(h - h0) / H) (the base
    density rho0 at the base altitude h0 and the scale height H are the user's, e.g. a row of
    Vallado's Table 8-4 for the altitude band flown)."""
    return rho0 * math.exp(-(altitude_m - h0_m) / scale_height_m)


def drag_acceleration(r, v, density: float, cd_area_over_mass: float) -> np.ndarray:
    """-1/2 rho (C_D A / m) |v_rel| v_rel (m/s^2) with v_rel = v - w_E x r, the velocity through
    an atmosphere that turns with the Earth (``cd_area_over_mass`` in m^2/kg)."""
    r, v = np.asarray(r, dtype=float), np.asarray(v, dtype=float)
    v_rel = v - np.cross([0.0, 0.0, EARTH_ROTATION_RATE], r)
    return -0.5 * density * cd_area_over_mass * float(np.linalg.norm(v_rel)) * v_rel


def srp_acceleration(r, r_sun, cr_area_over_mass: float) -> np.ndarray:
    """Solar radiation pressure on a cannonball (m/s^2): P (1 AU / d)^2 C_R A / m along the Sun
    -> spacecraft line, zero in the Earth's cylindrical shadow (``cr_area_over_mass`` in m^2/kg)."""
    r, r_sun = np.asarray(r, dtype=float), np.asarray(r_sun, dtype=float)
    if in_cylindrical_shadow(r, r_sun):
        return np.zeros(3)
    away = r - r_sun
    d = float(np.linalg.norm(away))
    return SOLAR_PRESSURE_1AU * (AU_M / d) ** 2 * cr_area_over_mass * away / d
