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

from hopsim.dynamics import detlinalg
from hopsim.dynamics._jit import compiled, compiled_borrowing
from hopsim.dynamics.spatial import inverse3, inverse3_into, quat_dcm_entries, quat_normalize, quat_to_dcm

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


@compiled_borrowing
def _derivative_into(out, x, mass, I, Iinv, c, force_N, force_B, torque_B, point_B, mu):
    """Write the state derivative of one vehicle into ``out`` (scalar code: no allocation)."""
    qx, qy, qz, qw = x[6], x[7], x[8], x[9]
    wx, wy, wz = x[10], x[11], x[12]
    r00, r01, r02, r10, r11, r12, r20, r21, r22 = quat_dcm_entries(qx, qy, qz, qw)  # R = R(q): body -> inertial
    # applied force in N and in B
    fx = force_N[0] + r00 * force_B[0] + r01 * force_B[1] + r02 * force_B[2]
    fy = force_N[1] + r10 * force_B[0] + r11 * force_B[1] + r12 * force_B[2]
    fz = force_N[2] + r20 * force_B[0] + r21 * force_B[1] + r22 * force_B[2]
    bx = r00 * fx + r10 * fy + r20 * fz
    by = r01 * fx + r11 * fy + r21 * fz
    bz = r02 * fx + r12 * fy + r22 * fz
    lx = point_B[0] - c[0]
    ly = point_B[1] - c[1]
    lz = point_B[2] - c[2]
    hx = I[0, 0] * wx + I[0, 1] * wy + I[0, 2] * wz
    hy = I[1, 0] * wx + I[1, 1] * wy + I[1, 2] * wz
    hz = I[2, 0] * wx + I[2, 1] * wy + I[2, 2] * wz
    tx = torque_B[0] + (ly * bz - lz * by) - (wy * hz - wz * hy)
    ty = torque_B[1] + (lz * bx - lx * bz) - (wz * hx - wx * hz)
    tz = torque_B[2] + (lx * by - ly * bx) - (wx * hy - wy * hx)
    dwx = Iinv[0, 0] * tx + Iinv[0, 1] * ty + Iinv[0, 2] * tz
    dwy = Iinv[1, 0] * tx + Iinv[1, 1] * ty + Iinv[1, 2] * tz
    dwz = Iinv[2, 0] * tx + Iinv[2, 1] * ty + Iinv[2, 2] * tz
    ax = fx / mass
    ay = fy / mass
    az = fz / mass
    if mu != 0.0:
        cx = x[0] + r00 * c[0] + r01 * c[1] + r02 * c[2]
        cy = x[1] + r10 * c[0] + r11 * c[1] + r12 * c[2]
        cz = x[2] + r20 * c[0] + r21 * c[1] + r22 * c[2]
        rn = np.sqrt(cx * cx + cy * cy + cz * cz)
        k = mu / (rn * rn * rn)
        ax = ax - k * cx
        ay = ay - k * cy
        az = az - k * cz
    # a_B = a_C - R (omegadot x c + omega x (omega x c))
    ux = wy * c[2] - wz * c[1]
    uy = wz * c[0] - wx * c[2]
    uz = wx * c[1] - wy * c[0]
    ex = (dwy * c[2] - dwz * c[1]) + (wy * uz - wz * uy)
    ey = (dwz * c[0] - dwx * c[2]) + (wz * ux - wx * uz)
    ez = (dwx * c[1] - dwy * c[0]) + (wx * uy - wy * ux)
    out[0] = x[3]
    out[1] = x[4]
    out[2] = x[5]
    out[3] = ax - (r00 * ex + r01 * ey + r02 * ez)
    out[4] = ay - (r10 * ex + r11 * ey + r12 * ez)
    out[5] = az - (r20 * ex + r21 * ey + r22 * ez)
    out[6] = 0.5 * (qw * wx + qy * wz - qz * wy)
    out[7] = 0.5 * (qw * wy + qz * wx - qx * wz)
    out[8] = 0.5 * (qw * wz + qx * wy - qy * wx)
    out[9] = -0.5 * (qx * wx + qy * wy + qz * wz)
    out[10] = dwx
    out[11] = dwy
    out[12] = dwz


@compiled_borrowing
def _rk4_step_into(out, work, inertia_inv, x, h, mass, inertia_C_B, r_CB_B, force_N, force_B, torque_B, point_B, mu):
    """One RK4 step of one vehicle into ``out``; ``work`` is a (5, 13) scratch array and
    ``inertia_inv`` a 3 x 3 one (the inverse inertia goes there)."""
    inverse3_into(inertia_inv, inertia_C_B)
    n = STATE_SIZE
    k1 = work[0]
    k2 = work[1]
    k3 = work[2]
    k4 = work[3]
    xs = work[4]
    half = 0.5 * h
    _derivative_into(k1, x, mass, inertia_C_B, inertia_inv, r_CB_B, force_N, force_B, torque_B, point_B, mu)
    for k in range(n):
        xs[k] = x[k] + half * k1[k]
    _derivative_into(k2, xs, mass, inertia_C_B, inertia_inv, r_CB_B, force_N, force_B, torque_B, point_B, mu)
    for k in range(n):
        xs[k] = x[k] + half * k2[k]
    _derivative_into(k3, xs, mass, inertia_C_B, inertia_inv, r_CB_B, force_N, force_B, torque_B, point_B, mu)
    for k in range(n):
        xs[k] = x[k] + h * k3[k]
    _derivative_into(k4, xs, mass, inertia_C_B, inertia_inv, r_CB_B, force_N, force_B, torque_B, point_B, mu)
    sixth = h / 6.0
    for k in range(n):
        out[k] = x[k] + sixth * (k1[k] + 2.0 * k2[k] + 2.0 * k3[k] + k4[k])
    norm = np.sqrt(out[6] * out[6] + out[7] * out[7] + out[8] * out[8] + out[9] * out[9])
    if out[9] < 0.0:
        norm = -norm
    for k in range(6, 10):
        out[k] = out[k] / norm


@compiled
def derivative_single(x, mass, inertia_C_B, r_CB_B, force_N, force_B, torque_B, point_B, mu):
    """State derivative of one vehicle (compiled; all inputs as float arrays)."""
    out = np.empty(STATE_SIZE)
    _derivative_into(out, x, mass, inertia_C_B, inverse3(inertia_C_B), r_CB_B, force_N, force_B, torque_B, point_B, mu)
    return out


@compiled
def rk4_step_single(x, h, mass, inertia_C_B, r_CB_B, force_N, force_B, torque_B, point_B, mu):
    """One RK4 step of size ``h`` [s] of one vehicle, quaternion renormalized (compiled)."""
    out = np.empty(STATE_SIZE)
    _rk4_step_into(
        out,
        np.empty((5, STATE_SIZE)),
        np.empty((3, 3)),
        x,
        h,
        mass,
        inertia_C_B,
        r_CB_B,
        force_N,
        force_B,
        torque_B,
        point_B,
        mu,
    )
    return out


@compiled
def derivatives_batch(X, mass, inertia_C_B, r_CB_B, force_N, force_B, torque_B, point_B, mu):
    """State derivatives of N vehicles; ``X`` is (N, 13), the inputs (N,), (N,3,3), (N,3)."""
    n = X.shape[0]
    out = np.empty((n, STATE_SIZE))
    for i in range(n):
        _derivative_into(
            out[i],
            X[i],
            mass[i],
            inertia_C_B[i],
            inverse3(inertia_C_B[i]),
            r_CB_B[i],
            force_N[i],
            force_B[i],
            torque_B[i],
            point_B[i],
            mu,
        )
    return out


@compiled
def rk4_step_batch(X, h, mass, inertia_C_B, r_CB_B, force_N, force_B, torque_B, point_B, mu):
    """One RK4 step of size ``h`` [s] for N vehicles in one call; ``X`` is (N, 13)."""
    n = X.shape[0]
    out = np.empty((n, STATE_SIZE))
    work, inertia_inv = np.empty((5, STATE_SIZE)), np.empty((3, 3))
    for i in range(n):
        _rk4_step_into(
            out[i],
            work,
            inertia_inv,
            X[i],
            h,
            mass[i],
            inertia_C_B[i],
            r_CB_B[i],
            force_N[i],
            force_B[i],
            torque_B[i],
            point_B[i],
            mu,
        )
    return out


# --------------------------------------------------------------------------- Python entry points


@compiled
def rk4_hop(x, xdot, steps_s, mass, inertia_C_B, r_CB_B, force_N, force_B, torque_B):
    """RK4 over the sub-steps ``steps_s`` (s) of one free vehicle, loads at its centre of mass
    held: ``x`` (13) becomes the state at the hop's end and ``xdot`` (13) the derivative there;
    the load accumulators are emptied. Per vehicle, the arithmetic of ``rk4_step_batch`` and
    ``derivatives_batch``, so that one vehicle alone or in a batch gives the same bits.

    Last, ``x`` gets the vehicle's end_hop quaternion fix
    (:meth:`~hopsim.actors.vehicle_dynamics.RigidVehicleDynamics.end_hop`: the same
    ``quat_normalize``, after the derivative, as in the kernel's order), which saves end_hop a
    compiled call of its own per hop."""
    _rk4_hop_into(
        x,
        xdot,
        steps_s,
        mass,
        inertia_C_B,
        r_CB_B,
        force_N,
        force_B,
        torque_B,
        np.empty(STATE_SIZE),
        np.empty((5, STATE_SIZE)),
        np.empty((3, 3)),
    )


@compiled
def rk4_hop_rows(rows, steps_s, X, Xdot, mass, inertia_C_B, r_CB_B, force_N, force_B, torque_B):
    """:func:`rk4_hop` for the vehicles in rows ``rows`` of the arrays (a fleet's: one row per
    vehicle of its state, derivative, mass, inertia, CM offset and load accumulators), the same
    arithmetic row by row (its scratch arrays made once for all rows)."""
    out = np.empty(STATE_SIZE)
    work, inertia_inv = np.empty((5, STATE_SIZE)), np.empty((3, 3))
    for row in rows:
        _rk4_hop_row(
            row, steps_s, X, Xdot, mass, inertia_C_B, r_CB_B, force_N, force_B, torque_B, out, work, inertia_inv
        )


@compiled_borrowing
def _rk4_hop_row(row, steps_s, X, Xdot, mass, inertia_C_B, r_CB_B, force_N, force_B, torque_B, out, work, inertia_inv):
    """:func:`rk4_hop` of row ``row`` (see :func:`rk4_hop_rows`)."""
    _rk4_hop_into(
        X[row],
        Xdot[row],
        steps_s,
        mass[row],
        inertia_C_B[row],
        r_CB_B[row],
        force_N[row],
        force_B[row],
        torque_B[row],
        out,
        work,
        inertia_inv,
    )


@compiled_borrowing
def _rk4_hop_into(x, xdot, steps_s, mass, inertia, c, f_N, f_B, tau_B, out, work, inertia_inv):
    """:func:`rk4_hop`'s arithmetic (``out``, ``work``, ``inertia_inv``: scratch arrays of 13,
    5 x 13 and 3 x 3)."""
    for h in steps_s:
        _rk4_step_into(out, work, inertia_inv, x, h, mass, inertia, c, f_N, f_B, tau_B, c, 0.0)
        for k in range(STATE_SIZE):
            x[k] = out[k]
    inverse3_into(inertia_inv, inertia)
    _derivative_into(xdot, x, mass, inertia, inertia_inv, c, f_N, f_B, tau_B, c, 0.0)
    f_N[:] = 0.0
    f_B[:] = 0.0
    tau_B[:] = 0.0
    norm = np.sqrt(x[6] * x[6] + x[7] * x[7] + x[8] * x[8] + x[9] * x[9])  # quat_normalize, in place
    if x[9] < 0.0:
        norm = -norm
    for k in range(6, 10):
        x[k] = x[k] / norm


def _vec3(v, default):
    return np.ascontiguousarray(default if v is None else v, dtype=np.float64)


def rigid_body_derivative(
    x, mass, inertia_C_B, r_CB_B=None, force_N=None, force_B=None, torque_B=None, point_B=None, mu=0.0
) -> np.ndarray:
    """State derivative of one vehicle (see the module docstring for the inputs).

    Omitted forces and torques are zero; omitted ``point_B`` is the centre of mass.
    """
    c = _vec3(r_CB_B, np.zeros(3))
    return derivative_single(
        np.ascontiguousarray(x, dtype=np.float64),
        float(mass),
        np.ascontiguousarray(inertia_C_B, dtype=np.float64),
        c,
        _vec3(force_N, np.zeros(3)),
        _vec3(force_B, np.zeros(3)),
        _vec3(torque_B, np.zeros(3)),
        _vec3(point_B, c),
        float(mu),
    )


def rigid_body_rk4_step(
    x, h, mass, inertia_C_B, r_CB_B=None, force_N=None, force_B=None, torque_B=None, point_B=None, mu=0.0
) -> np.ndarray:
    """One RK4 step of size ``h`` [s] for one vehicle; returns the new 13-element state."""
    c = _vec3(r_CB_B, np.zeros(3))
    return rk4_step_single(
        np.ascontiguousarray(x, dtype=np.float64),
        float(h),
        float(mass),
        np.ascontiguousarray(inertia_C_B, dtype=np.float64),
        c,
        _vec3(force_N, np.zeros(3)),
        _vec3(force_B, np.zeros(3)),
        _vec3(torque_B, np.zeros(3)),
        _vec3(point_B, c),
        float(mu),
    )


def _batch_inputs(n, r_CB_B, force_N, force_B, torque_B, point_B):
    zeros = np.zeros((n, 3))
    c = _vec3(r_CB_B, zeros)
    return (c, _vec3(force_N, zeros), _vec3(force_B, zeros), _vec3(torque_B, zeros), _vec3(point_B, c))


def rigid_body_derivatives_batch(
    X, mass, inertia_C_B, r_CB_B=None, force_N=None, force_B=None, torque_B=None, point_B=None, mu=0.0
) -> np.ndarray:
    """State derivatives (N, 13) of N vehicles with states ``X`` (N, 13)."""
    X = np.ascontiguousarray(X, dtype=np.float64)
    c, fN, fB, tB, pB = _batch_inputs(X.shape[0], r_CB_B, force_N, force_B, torque_B, point_B)
    return derivatives_batch(
        X,
        np.ascontiguousarray(mass, dtype=np.float64),
        np.ascontiguousarray(inertia_C_B, dtype=np.float64),
        c,
        fN,
        fB,
        tB,
        pB,
        float(mu),
    )


def rigid_body_rk4_step_batch(
    X, h, mass, inertia_C_B, r_CB_B=None, force_N=None, force_B=None, torque_B=None, point_B=None, mu=0.0
) -> np.ndarray:
    """One RK4 step of size ``h`` [s] for N vehicles with states ``X`` (N, 13) in one call."""
    X = np.ascontiguousarray(X, dtype=np.float64)
    c, fN, fB, tB, pB = _batch_inputs(X.shape[0], r_CB_B, force_N, force_B, torque_B, point_B)
    return rk4_step_batch(
        X,
        float(h),
        np.ascontiguousarray(mass, dtype=np.float64),
        np.ascontiguousarray(inertia_C_B, dtype=np.float64),
        c,
        fN,
        fB,
        tB,
        pB,
        float(mu),
    )


def rigid_body_momentum(x, mass, inertia_C_B, r_CB_B=None):
    """Linear momentum [kg m/s] and angular momentum about N's origin [kg m^2/s], both in N."""
    x = np.asarray(x, dtype=np.float64)
    c = _vec3(r_CB_B, np.zeros(3))
    R = quat_to_dcm(x[Q_SLICE])
    omega_N = detlinalg.matmul(R, x[OMEGA_SLICE])
    r_C = x[R_SLICE] + detlinalg.matmul(R, c)
    v_C = x[V_SLICE] + np.cross(omega_N, detlinalg.matmul(R, c))
    p = mass * v_C
    inertia = np.asarray(inertia_C_B, dtype=np.float64)
    h = detlinalg.matmul(R, detlinalg.matmul(inertia, x[OMEGA_SLICE])) + np.cross(r_C, p)
    return p, h


def rigid_body_kinetic_energy(x, mass, inertia_C_B, r_CB_B=None) -> float:
    """Kinetic energy [J] of one vehicle."""
    x = np.asarray(x, dtype=np.float64)
    c = _vec3(r_CB_B, np.zeros(3))
    R = quat_to_dcm(x[Q_SLICE])
    w = x[OMEGA_SLICE]
    v_C = x[V_SLICE] + detlinalg.matmul(R, np.cross(w, c))
    inertia = np.asarray(inertia_C_B, dtype=np.float64)
    return 0.5 * mass * detlinalg.dot(v_C, v_C) + 0.5 * detlinalg.dot(detlinalg.matmul(w, inertia), w)
