"""The equations of motion of a rigid spacecraft in Earth orbit, with reaction wheels, compiled:
the derivative of one spacecraft's state (:func:`orbiting_derivative`) and RK4 hops of many
spacecraft (:func:`rk4_hops`). :class:`hopsim.actors.orbiting_spacecraft.OrbitingSpacecraft`
documents the model; its derivative and its compiled hop are these functions, so one spacecraft
alone, many in one call, and an adaptive integrator's samples all evaluate the same arithmetic.

State (m, m/s, rad/s; N the Earth-centred inertial frame, B the body frame): ``r_BN_N`` (0:3),
``v_BN_N`` (3:6), ``q_BN`` (6:10, scalar last, v_N = R(q_BN) v_B), ``omega_BN_B`` (10:13), then
with k wheels each wheel's spin rate relative to the body ``Omega_i`` (13:13+k, rad/s) and, with
LuGre friction, each wheel's bristle deflection ``z_i`` (13+k:13+2k, rad).

    r' = v
    v' = g(r, t) + a_drag + a_srp + (R(q) F_B + F_dist_N) / m
    q' = 1/2 q (x) (omega, 0)
    omega', Omega' = hopsim.dynamics.wheels.wheel_accelerations (without wheels:
                     omega' = I^-1 (tau - omega x I omega)), tau = tau_B + tau_dist + tau_gg

Parameters of one spacecraft travel as a float vector indexed by the ``P_*`` constants, the loads
held over a hop as a vector indexed by the ``L_*`` constants, and the wheels' friction parameters
as a k x ``FRICTION_PARAMS`` matrix (columns ``F_*``); :func:`parameters` builds the vector.
"""
from __future__ import annotations

import math

import numpy as np

from hopsim.dynamics._jit import compiled
from hopsim.dynamics.environment import (drag_acceleration, exponential_density, gmst_rad, srp_acceleration,
                                         sun_position)
from hopsim.dynamics.gravity import EARTH_RADIUS, gravity_gradient_torque, point_mass_acceleration
from hopsim.dynamics.spatial import quat_rate, quat_to_dcm
from hopsim.dynamics.spherical_harmonics import spherical_harmonic_acceleration
from hopsim.dynamics.wheels import lugre_friction, wheel_accelerations, wheel_friction

# parameters (one float vector per spacecraft)
P_MU = 0                # gravitational parameter (m^3/s^2)
P_RADIUS = 1            # the field's reference radius (m)
P_DEGREE = 2            # spherical-harmonic degree and order; -1: a point mass
P_EPOCH_JD = 3          # UT1 Julian date of t = 0 (the Earth's rotation, the Sun)
P_CD_AREA = 4           # C_D A (m^2); 0: no drag
P_RHO0 = 5              # exponential atmosphere: density at the base altitude (kg/m^3)
P_H0 = 6                # its base altitude (m)
P_SCALE = 7             # its scale height (m)
P_CR_AREA = 8           # C_R A (m^2); 0: no solar pressure
P_MASS = 9              # mass (kg)
P_GRAVITY_GRADIENT = 10  # 1: the gravity-gradient torque on, 0: off
P_LUGRE = 11            # 1: LuGre bearing friction (bristle states), 0: viscous and Coulomb
N_PARAMS = 12

# loads held over a hop
L_FORCE_B = 0           # the thrusters' force (N, B): 0:3
L_TORQUE_B = 3          # their torque about the centre of mass (N m, B): 3:6
L_DIST_FORCE_N = 6      # a disturbance force (N, N): 6:9
L_DIST_TORQUE_B = 9     # a disturbance torque (N m, B): 9:12
N_LOADS = 12

# bearing friction, one row per wheel (see hopsim.dynamics.wheels.BearingFriction)
F_VISCOUS, F_COULOMB, F_COULOMB_SPEED, F_STATIC, F_STRIBECK_SPEED, F_STIFFNESS, F_DAMPING = range(7)
FRICTION_PARAMS = 7


def parameters(mu: float, radius_m: float, degree: int, epoch_jd: float, cd_area_m2: float, rho0: float,
               h0_m: float, scale_height_m: float, cr_area_m2: float, mass_kg: float, gravity_gradient: bool,
               lugre: bool) -> np.ndarray:
    """The parameter vector of one spacecraft (units as the ``P_*`` constants say)."""
    p = np.empty(N_PARAMS)
    p[P_MU], p[P_RADIUS], p[P_DEGREE], p[P_EPOCH_JD] = mu, radius_m, degree, epoch_jd
    p[P_CD_AREA], p[P_RHO0], p[P_H0], p[P_SCALE] = cd_area_m2, rho0, h0_m, scale_height_m
    p[P_CR_AREA], p[P_MASS] = cr_area_m2, mass_kg
    p[P_GRAVITY_GRADIENT], p[P_LUGRE] = float(gravity_gradient), float(lugre)
    return p


@compiled
def gravity_acceleration(r, t_s, p, C, S):
    """Gravitational acceleration (m/s^2, frame N) at ``r`` (m, frame N) at ``t_s`` (s): a point
    mass, or the spherical-harmonic field ``C``, ``S`` (unnormalized) to ``p[P_DEGREE]`` evaluated
    in the Earth-fixed frame, which turns by GMST from ``p[P_EPOCH_JD]``."""
    mu = p[P_MU]
    degree = int(p[P_DEGREE])
    if degree < 0:
        return point_mass_acceleration(r, mu)
    g = gmst_rad(p[P_EPOCH_JD] + t_s / 86400.0)
    c, s = math.cos(g), math.sin(g)
    r_F = np.array([c * r[0] + s * r[1], -s * r[0] + c * r[1], r[2]])
    a_F = spherical_harmonic_acceleration(r_F, mu, p[P_RADIUS], C, S, degree)
    return np.array([c * a_F[0] - s * a_F[1], s * a_F[0] + c * a_F[1], a_F[2]])


@compiled
def orbiting_derivative(t_s, x, xdot, p, loads, inertia_B, inertia_inv, inertia_total_B, C, S, G, J, motor_Nm,
                        friction):
    """The state derivative at ``t_s`` (s) into ``xdot``; returns v' (m/s^2, frame N).

    ``inertia_B`` (kg m^2, about the centre of mass, B): with wheels Schaub and Junkins' [I_RW]
    (everything but the wheels' axial inertia), ``inertia_inv`` its inverse, ``inertia_total_B``
    the whole spacecraft's (for the gravity gradient); ``G`` (k x 3) the wheels' unit spin axes
    (B), ``J`` (k) their axial inertias (kg m^2), ``motor_Nm`` (k) their motor torques (N m),
    ``friction`` (k x FRICTION_PARAMS) their bearings."""
    r, v, q, omega = x[0:3], x[3:6], x[6:10], x[10:13]
    R = quat_to_dcm(q)
    m = p[P_MASS]
    a = gravity_acceleration(r, t_s, p, C, S)
    a += R @ loads[L_FORCE_B:L_FORCE_B + 3] / m
    if p[P_CD_AREA] > 0.0 and p[P_RHO0] > 0.0:
        altitude = math.sqrt(r[0] * r[0] + r[1] * r[1] + r[2] * r[2]) - EARTH_RADIUS
        rho = exponential_density(altitude, p[P_RHO0], p[P_H0], p[P_SCALE])
        a += drag_acceleration(r, v, rho, p[P_CD_AREA] / m)
    if p[P_CR_AREA] > 0.0:
        a += srp_acceleration(r, sun_position(p[P_EPOCH_JD] + t_s / 86400.0), p[P_CR_AREA] / m)
    a += loads[L_DIST_FORCE_N:L_DIST_FORCE_N + 3] / m
    torque = loads[L_TORQUE_B:L_TORQUE_B + 3] + loads[L_DIST_TORQUE_B:L_DIST_TORQUE_B + 3]
    if p[P_GRAVITY_GRADIENT] != 0.0:
        torque += gravity_gradient_torque(R.T @ r, inertia_total_B, p[P_MU])
    xdot[0:3] = v
    xdot[3:6] = a
    xdot[6:10] = quat_rate(q, omega)
    k = len(J)
    if k:
        Omega = x[13:13 + k]
        if p[P_LUGRE] != 0.0:
            f, z_dot = lugre_friction(Omega, x[13 + k:13 + 2 * k], friction[:, F_STIFFNESS], friction[:, F_DAMPING],
                                      friction[:, F_VISCOUS], friction[:, F_COULOMB], friction[:, F_STATIC],
                                      friction[:, F_STRIBECK_SPEED])
            xdot[13 + k:13 + 2 * k] = z_dot
        else:
            f = wheel_friction(Omega, friction[:, F_VISCOUS], friction[:, F_COULOMB], friction[:, F_COULOMB_SPEED])
        omega_dot, Omega_dot = wheel_accelerations(inertia_B, inertia_inv, G, J, omega, Omega, motor_Nm, f, torque)
        xdot[10:13] = omega_dot
        xdot[13:13 + k] = Omega_dot
    else:
        Iw = inertia_B @ omega
        xdot[10:13] = inertia_inv @ (torque - np.cross(omega, Iw))
    return a


@compiled
def rk4_hops(t0_s, steps_s, X, Xdot, P, loads, inertia_B, inertia_inv, inertia_total_B, C, S, G, J, motor_Nm,
             friction):
    """Classical RK4 over the sub-steps ``steps_s`` (s) from ``t0_s`` (s) for every row of ``X``
    (n x state size): the rows become the states at the hop's end and ``Xdot`` the derivatives
    there (the model's end_hop puts the attitudes back on the unit sphere, as after any
    integrator). The other arrays hold one row per spacecraft (``C``, ``S``: one field for all; ``G``, ``J``,
    ``motor_Nm``, ``friction``: the same number of wheels for all)."""
    n, size = X.shape
    k1 = np.empty(size)
    k2 = np.empty(size)
    k3 = np.empty(size)
    k4 = np.empty(size)
    for i in range(n):
        x = X[i]
        t = t0_s
        for h in steps_s:
            half = 0.5 * h
            orbiting_derivative(t, x, k1, P[i], loads[i], inertia_B[i], inertia_inv[i], inertia_total_B[i], C, S,
                                G[i], J[i], motor_Nm[i], friction[i])
            orbiting_derivative(t + half, x + half * k1, k2, P[i], loads[i], inertia_B[i], inertia_inv[i],
                                inertia_total_B[i], C, S, G[i], J[i], motor_Nm[i], friction[i])
            orbiting_derivative(t + half, x + half * k2, k3, P[i], loads[i], inertia_B[i], inertia_inv[i],
                                inertia_total_B[i], C, S, G[i], J[i], motor_Nm[i], friction[i])
            orbiting_derivative(t + h, x + h * k3, k4, P[i], loads[i], inertia_B[i], inertia_inv[i],
                                inertia_total_B[i], C, S, G[i], J[i], motor_Nm[i], friction[i])
            x[:] = x + (h / 6.0) * (k1 + 2.0 * k2 + 2.0 * k3 + k4)
            t += h
        orbiting_derivative(t, x, Xdot[i], P[i], loads[i], inertia_B[i], inertia_inv[i], inertia_total_B[i], C, S,
                            G[i], J[i], motor_Nm[i], friction[i])


__all__ = ["orbiting_derivative", "gravity_acceleration", "rk4_hops", "parameters", "N_PARAMS", "N_LOADS",
           "FRICTION_PARAMS"]
