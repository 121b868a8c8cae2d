"""6-DOF rigid vehicles whose centre of mass is offset from the body-frame origin.

State of one vehicle (13 floats)::

    x[0:3]   r_BN_N      position of the body origin B relative to inertial N, in N  [m]
    x[3:6]   v_BN_N      inertial velocity of B, in N                                [m/s]
    x[6:10]  q_BN        attitude, scalar-last, v_N = R(q_BN) v_B                     [-]
    x[10:13] omega_BN_B  angular velocity of B relative to N, in B                   [rad/s]

Body origin B is the geometric reference point (e.g. the geometric centre); the centre of mass
C sits at ``r_CB_B`` from it. Inputs per vehicle, all held constant over a step:

    force_N     force [N] fixed in inertial directions
    force_B     force [N] fixed in body directions
    point_B     where force_N and force_B are applied, relative to B, in B [m]
                (``point_B = r_CB_B`` applies them at the centre of mass)
    torque_B    pure torque [N m] in body components (about the centre of mass)
    mu          gravitational parameter [m^3/s^2] of a point mass at N's origin, acting on C
                (0 for none)

Equations (with ``R = R(q_BN)``, ``c = r_CB_B``, ``F = force_N + R force_B + m g(r_CN_N)``)::

    I_C omegadot = torque_B + (point_B - c) x (R^T (force_N + R force_B)) - omega x I_C omega
    a_C = F / m
    a_B = a_C - R (omegadot x c + omega x (omega x c))
    qdot = 1/2 q (x) (omega, 0)

The batched functions take one array per quantity with the vehicle along the first axis
(structure of arrays) and do, vehicle by vehicle, exactly the arithmetic of the single-vehicle
functions, so batched and single results are identical bit for bit.
"""
import numpy as np

from hopsim.dynamics._jit import compiled
from hopsim.dynamics.spatial import (cross3, inverse3, mat3_vec, mat3T_vec, quat_normalize,
                                     quat_rate, quat_to_dcm)

STATE_SIZE = 13
R_SLICE = slice(0, 3)
V_SLICE = slice(3, 6)
Q_SLICE = slice(6, 10)
OMEGA_SLICE = slice(10, 13)


def pack_state(r_BN_N, v_BN_N, q_BN, omega_BN_B) -> np.ndarray:
    """13-element state of one vehicle; the quaternion is normalized with w >= 0."""
    x = np.empty(STATE_SIZE)
    x[R_SLICE] = r_BN_N
    x[V_SLICE] = v_BN_N
    x[Q_SLICE] = quat_normalize(np.asarray(q_BN, dtype=np.float64))
    x[OMEGA_SLICE] = omega_BN_B
    return x


@compiled
def _derivative_into(out, x, mass, inertia_C_B, inertia_inv, r_CB_B, force_N, force_B,
                     torque_B, point_B, mu):
    q = x[6:10]
    omega = x[10:13]
    R = quat_to_dcm(q)
    applied_N = force_N + mat3_vec(R, force_B)
    applied_B = mat3T_vec(R, applied_N)
    lever = point_B - r_CB_B
    Iw = mat3_vec(inertia_C_B, omega)
    torque = torque_B + cross3(lever, applied_B) - cross3(omega, Iw)
    omega_dot = mat3_vec(inertia_inv, torque)
    a_C = applied_N / mass
    if mu != 0.0:
        r_C = x[0:3] + mat3_vec(R, r_CB_B)
        rn = np.sqrt(r_C[0] * r_C[0] + r_C[1] * r_C[1] + r_C[2] * r_C[2])
        a_C = a_C - (mu / (rn * rn * rn)) * r_C
    w_c = cross3(omega, r_CB_B)
    rel_B = cross3(omega_dot, r_CB_B) + cross3(omega, w_c)
    a_B = a_C - mat3_vec(R, rel_B)
    qdot = quat_rate(q, omega)
    for k in range(3):
        out[k] = x[3 + k]
        out[3 + k] = a_B[k]
        out[10 + k] = omega_dot[k]
    for k in range(4):
        out[6 + k] = qdot[k]


@compiled
def _rk4_step_into(out, x, h, mass, inertia_C_B, r_CB_B, force_N, force_B, torque_B, point_B,
                   mu):
    inertia_inv = inverse3(inertia_C_B)
    n = x.shape[0]
    k1 = np.empty(n)
    k2 = np.empty(n)
    k3 = np.empty(n)
    k4 = np.empty(n)
    xs = np.empty(n)
    half = 0.5 * h
    _derivative_into(k1, x, mass, inertia_C_B, inertia_inv, r_CB_B, force_N, force_B, torque_B,
                     point_B, mu)
    for k in range(n):
        xs[k] = x[k] + half * k1[k]
    _derivative_into(k2, xs, mass, inertia_C_B, inertia_inv, r_CB_B, force_N, force_B, torque_B,
                     point_B, mu)
    for k in range(n):
        xs[k] = x[k] + half * k2[k]
    _derivative_into(k3, xs, mass, inertia_C_B, inertia_inv, r_CB_B, force_N, force_B, torque_B,
                     point_B, mu)
    for k in range(n):
        xs[k] = x[k] + h * k3[k]
    _derivative_into(k4, xs, mass, inertia_C_B, inertia_inv, r_CB_B, force_N, force_B, torque_B,
                     point_B, mu)
    sixth = h / 6.0
    for k in range(n):
        out[k] = x[k] + sixth * (k1[k] + 2.0 * k2[k] + 2.0 * k3[k] + k4[k])
    qn = quat_normalize(out[6:10])
    for k in range(4):
        out[6 + k] = qn[k]


@compiled
def derivative_single(x, mass, inertia_C_B, r_CB_B, force_N, force_B, torque_B, point_B, mu):
    """State derivative of one vehicle (compiled; all inputs as float arrays)."""
    out = np.empty(STATE_SIZE)
    _derivative_into(out, x, mass, inertia_C_B, inverse3(inertia_C_B), r_CB_B, force_N, force_B,
                     torque_B, point_B, mu)
    return out


@compiled
def rk4_step_single(x, h, mass, inertia_C_B, r_CB_B, force_N, force_B, torque_B, point_B, mu):
    """One RK4 step of size ``h`` [s] of one vehicle, quaternion renormalized (compiled)."""
    out = np.empty(STATE_SIZE)
    _rk4_step_into(out, x, h, mass, inertia_C_B, r_CB_B, force_N, force_B, torque_B, point_B, mu)
    return out


@compiled
def derivatives_batch(X, mass, inertia_C_B, r_CB_B, force_N, force_B, torque_B, point_B, mu):
    """State derivatives of N vehicles; ``X`` is (N, 13), the inputs (N,), (N,3,3), (N,3)."""
    n = X.shape[0]
    out = np.empty((n, STATE_SIZE))
    for i in range(n):
        _derivative_into(out[i], X[i], mass[i], inertia_C_B[i], inverse3(inertia_C_B[i]),
                         r_CB_B[i], force_N[i], force_B[i], torque_B[i], point_B[i], mu)
    return out


@compiled
def rk4_step_batch(X, h, mass, inertia_C_B, r_CB_B, force_N, force_B, torque_B, point_B, mu):
    """One RK4 step of size ``h`` [s] for N vehicles in one call; ``X`` is (N, 13)."""
    n = X.shape[0]
    out = np.empty((n, STATE_SIZE))
    for i in range(n):
        _rk4_step_into(out[i], X[i], h, mass[i], inertia_C_B[i], r_CB_B[i], force_N[i],
                       force_B[i], torque_B[i], point_B[i], mu)
    return out


# --------------------------------------------------------------------------- Python entry points


def _vec3(v, default):
    return np.ascontiguousarray(default if v is None else v, dtype=np.float64)


def rigid_body_derivative(x, mass, inertia_C_B, r_CB_B=None, force_N=None, force_B=None,
                          torque_B=None, point_B=None, mu=0.0) -> np.ndarray:
    """State derivative of one vehicle (see the module docstring for the inputs).

    Omitted forces and torques are zero; omitted ``point_B`` is the centre of mass.
    """
    c = _vec3(r_CB_B, np.zeros(3))
    return derivative_single(np.ascontiguousarray(x, dtype=np.float64), float(mass),
                             np.ascontiguousarray(inertia_C_B, dtype=np.float64), c,
                             _vec3(force_N, np.zeros(3)), _vec3(force_B, np.zeros(3)),
                             _vec3(torque_B, np.zeros(3)), _vec3(point_B, c), float(mu))


def rigid_body_rk4_step(x, h, mass, inertia_C_B, r_CB_B=None, force_N=None, force_B=None,
                        torque_B=None, point_B=None, mu=0.0) -> np.ndarray:
    """One RK4 step of size ``h`` [s] for one vehicle; returns the new 13-element state."""
    c = _vec3(r_CB_B, np.zeros(3))
    return rk4_step_single(np.ascontiguousarray(x, dtype=np.float64), float(h), float(mass),
                           np.ascontiguousarray(inertia_C_B, dtype=np.float64), c,
                           _vec3(force_N, np.zeros(3)), _vec3(force_B, np.zeros(3)),
                           _vec3(torque_B, np.zeros(3)), _vec3(point_B, c), float(mu))


def _batch_inputs(n, r_CB_B, force_N, force_B, torque_B, point_B):
    zeros = np.zeros((n, 3))
    c = _vec3(r_CB_B, zeros)
    return (c, _vec3(force_N, zeros), _vec3(force_B, zeros), _vec3(torque_B, zeros),
            _vec3(point_B, c))


def rigid_body_derivatives_batch(X, mass, inertia_C_B, r_CB_B=None, force_N=None, force_B=None,
                                 torque_B=None, point_B=None, mu=0.0) -> np.ndarray:
    """State derivatives (N, 13) of N vehicles with states ``X`` (N, 13)."""
    X = np.ascontiguousarray(X, dtype=np.float64)
    c, fN, fB, tB, pB = _batch_inputs(X.shape[0], r_CB_B, force_N, force_B, torque_B, point_B)
    return derivatives_batch(X, np.ascontiguousarray(mass, dtype=np.float64),
                             np.ascontiguousarray(inertia_C_B, dtype=np.float64), c, fN, fB, tB,
                             pB, float(mu))


def rigid_body_rk4_step_batch(X, h, mass, inertia_C_B, r_CB_B=None, force_N=None, force_B=None,
                              torque_B=None, point_B=None, mu=0.0) -> np.ndarray:
    """One RK4 step of size ``h`` [s] for N vehicles with states ``X`` (N, 13) in one call."""
    X = np.ascontiguousarray(X, dtype=np.float64)
    c, fN, fB, tB, pB = _batch_inputs(X.shape[0], r_CB_B, force_N, force_B, torque_B, point_B)
    return rk4_step_batch(X, float(h), np.ascontiguousarray(mass, dtype=np.float64),
                          np.ascontiguousarray(inertia_C_B, dtype=np.float64), c, fN, fB, tB, pB,
                          float(mu))


def rigid_body_momentum(x, mass, inertia_C_B, r_CB_B=None):
    """Linear momentum [kg m/s] and angular momentum about N's origin [kg m^2/s], both in N."""
    x = np.asarray(x, dtype=np.float64)
    c = _vec3(r_CB_B, np.zeros(3))
    R = quat_to_dcm(x[Q_SLICE])
    omega_N = R @ x[OMEGA_SLICE]
    r_C = x[R_SLICE] + R @ c
    v_C = x[V_SLICE] + np.cross(omega_N, R @ c)
    p = mass * v_C
    h = R @ (np.asarray(inertia_C_B) @ x[OMEGA_SLICE]) + np.cross(r_C, p)
    return p, h


def rigid_body_kinetic_energy(x, mass, inertia_C_B, r_CB_B=None) -> float:
    """Kinetic energy [J] of one vehicle."""
    x = np.asarray(x, dtype=np.float64)
    c = _vec3(r_CB_B, np.zeros(3))
    R = quat_to_dcm(x[Q_SLICE])
    w = x[OMEGA_SLICE]
    v_C = x[V_SLICE] + R @ np.cross(w, c)
    return 0.5 * mass * float(v_C @ v_C) + 0.5 * float(w @ np.asarray(inertia_C_B) @ w)
