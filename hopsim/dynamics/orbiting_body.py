"""The equations of motion of a rigid spacecraft in Earth orbit, with reaction wheels, compiled:
the derivative of one spacecraft's state (:func:`orbiting_derivative`) and RK4 hops of many
spacecraft (:func:`rk4_hops`). :class:`hopsim.actors.orbiting_spacecraft.OrbitingSpacecraft`
documents the model; its derivative and its compiled hop are these functions, so one spacecraft
alone, many in one call, and an adaptive integrator's samples all evaluate the same arithmetic.

Many spacecraft in one call share work without changing any spacecraft's arithmetic: the Earth's
rotation and the Sun at each stage time (:func:`instant`) are computed once for all spacecraft of
one epoch, and up to :data:`LANES` spacecraft of one field go through each RK4 stage together
(:func:`rk4_lanes`), their spherical-harmonic gravity evaluated side by side in SIMD registers
(:func:`hopsim.dynamics.spherical_harmonics.spherical_harmonic_acceleration_lanes`, each lane the
one-point arithmetic), the rest of the derivative spacecraft by spacecraft
(:func:`orbiting_derivative_from_gravity`). The hot functions are compiled without numba's
reference counting (:func:`hopsim.dynamics._jit.compiled_borrowing`).

State (m, m/s, rad/s; N the Earth-centred inertial frame, B the body frame): ``r_BN_N`` (0:3),
``v_BN_N`` (3:6), ``q_BN`` (6:10, scalar last, v_N = R(q_BN) v_B), ``omega_BN_B`` (10:13), then
with k wheels each wheel's spin rate relative to the body ``Omega_i`` (13:13+k, rad/s) and, with
LuGre friction, each wheel's bristle deflection ``z_i`` (13+k:13+2k, rad).

    r' = v
    v' = g(r, t) + a_drag + a_srp + (R(q) (F_B + F_plates_B) + F_dist_N) / m
    q' = 1/2 q (x) (omega, 0)
    omega', Omega' = hopsim.dynamics.wheels.wheel_accelerations (without wheels:
                     omega' = I^-1 (tau - omega x I omega)), tau = tau_B + tau_dist + tau_gg + tau_plates

a_srp is a cannonball's (C_R A) in the Earth's cylindrical shadow, or its conical shadow with the
penumbra's partial sunlight; a_drag is the cannonball's (C_D A), F_plates and tau_plates the flat plates' drag and
its torque
about the centre of mass (:func:`hopsim.dynamics.environment.plate_drag_xyz`), both in the same
exponential atmosphere turning with the Earth.

Parameters of one spacecraft travel as a float vector indexed by the ``P_*`` constants, the loads
held over a hop as a vector indexed by the ``L_*`` constants, and the wheels' friction parameters
as a k x ``FRICTION_PARAMS`` matrix (columns ``F_*``); :func:`parameters` builds the vector.
"""

from __future__ import annotations

import math

import numpy as np

from hopsim.dynamics import detmath
from hopsim.dynamics._jit import compiled, compiled_borrowing
from hopsim.dynamics.environment import (
    PLATE_PARAMS,
    SUN_RADIUS,
    air_relative_velocity_xyz,
    conical_shadow_fraction_xyz,
    drag_acceleration_xyz,
    exponential_density,
    gmst_rad,
    plate_drag_xyz,
    srp_acceleration_xyz,
    sun_position_xyz,
    sunlit_srp_acceleration_xyz,
)
from hopsim.dynamics.gravity import EARTH_RADIUS, gravity_gradient_xyz, point_mass_xyz
from hopsim.dynamics.spatial import quat_dcm_entries, quat_normalize_into
from hopsim.dynamics.spherical_harmonics import (
    spherical_harmonic_acceleration_lanes,
    spherical_harmonic_acceleration_xyz,
)
from hopsim.dynamics.wheels import lugre_friction_into, wheel_accelerations_into, wheel_friction_into

# parameters (one float vector per spacecraft)
P_MU = 0  # gravitational parameter (m^3/s^2)
P_RADIUS = 1  # the field's reference radius (m)
P_DEGREE = 2  # spherical-harmonic degree and order; -1: a point mass
P_EPOCH_JD = 3  # UT1 Julian date of t = 0 (the Earth's rotation, the Sun)
P_CD_AREA = 4  # C_D A (m^2); 0: no drag
P_RHO0 = 5  # exponential atmosphere: density at the base altitude (kg/m^3)
P_H0 = 6  # its base altitude (m)
P_SCALE = 7  # its scale height (m)
P_CR_AREA = 8  # C_R A (m^2); 0: no solar pressure
P_MASS = 9  # mass (kg)
P_GRAVITY_GRADIENT = 10  # 1: the gravity-gradient torque on, 0: off
P_LUGRE = 11  # 1: LuGre bearing friction (bristle states), 0: viscous and Coulomb
P_N_PLATES = 12  # flat drag plates: their records (PLATE_PARAMS floats each) follow the N_PARAMS
P_CONICAL_SHADOW = 13  # 1: the Earth's shadow a cone with penumbra, 0: a cylinder
N_PARAMS = 14

# loads held over a hop
L_FORCE_B = 0  # the thrusters' force (N, B): 0:3
L_TORQUE_B = 3  # their torque about the centre of mass (N m, B): 3:6
L_DIST_FORCE_N = 6  # a disturbance force (N, N): 6:9
L_DIST_TORQUE_B = 9  # a disturbance torque (N m, B): 9:12
N_LOADS = 12

# bearing friction, one row per wheel (see hopsim.dynamics.wheels.BearingFriction)
F_VISCOUS, F_COULOMB, F_COULOMB_SPEED, F_STATIC, F_STRIBECK_SPEED, F_STIFFNESS, F_DAMPING = range(7)
FRICTION_PARAMS = 7


def parameters(
    mu: float,
    radius_m: float,
    degree: int,
    epoch_jd: float,
    cd_area_m2: float,
    rho0: float,
    h0_m: float,
    scale_height_m: float,
    cr_area_m2: float,
    mass_kg: float,
    gravity_gradient: bool,
    lugre: bool,
    plates=(),
    conical_shadow: bool = False,
) -> np.ndarray:
    """The parameter vector of one spacecraft (units as the ``P_*`` constants say), then its flat
    drag plates' records (``plates``: :func:`hopsim.dynamics.environment.plate_records`)."""
    plates = np.asarray(plates, dtype=float).ravel()
    p = np.empty(N_PARAMS + plates.size)
    p[P_N_PLATES] = plates.size // PLATE_PARAMS
    p[N_PARAMS:] = plates
    p[P_MU], p[P_RADIUS], p[P_DEGREE], p[P_EPOCH_JD] = mu, radius_m, degree, epoch_jd
    p[P_CD_AREA], p[P_RHO0], p[P_H0], p[P_SCALE] = cd_area_m2, rho0, h0_m, scale_height_m
    p[P_CR_AREA], p[P_MASS] = cr_area_m2, mass_kg
    p[P_GRAVITY_GRADIENT], p[P_LUGRE] = float(gravity_gradient), float(lugre)
    p[P_CONICAL_SHADOW] = float(conical_shadow)
    return p


def scratch(degree: int, n_wheels: int, size: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The work arrays :func:`orbiting_derivative` and :func:`rk4_hop` fill and read, so that they
    allocate nothing: ``VW`` (2 x (degree + 3) x (degree + 3), Cunningham's V and W), ``f`` (one
    per wheel, friction torques) and ``K`` (5 x ``size``, RK4's stages)."""
    d = max(int(degree), 0) + 3
    return np.zeros((2, d, d)), np.zeros(max(int(n_wheels), 0)), np.zeros((5, int(size)))


@compiled_borrowing
def instant(epoch_jd, t_s, earth, sun):
    """What every spacecraft of one epoch shares at ``t_s`` (s): the cosine and sine of the
    Earth's rotation angle (GMST) and the Sun's position (m, frame N), as a 5-tuple; with
    ``earth`` or ``sun`` false, that part left out (1, 0 and zeros)."""
    jd = epoch_jd + t_s / 86400.0
    c, s, sx, sy, sz = 1.0, 0.0, 0.0, 0.0, 0.0
    if earth:
        g = gmst_rad(jd)
        c, s = detmath.cos(g), detmath.sin(g)
    if sun:
        sx, sy, sz = sun_position_xyz(jd)
    return c, s, sx, sy, sz


@compiled_borrowing
def instant_of(p, t_s):
    """:func:`instant` at ``t_s`` (s) for the spacecraft of parameters ``p``: the Earth's rotation
    if its field has harmonics, the Sun if it feels solar pressure."""
    return instant(p[P_EPOCH_JD], t_s, int(p[P_DEGREE]) >= 0, p[P_CR_AREA] > 0.0)


@compiled_borrowing
def gravity_xyz_at(x, y, z, now, p, C, S, VW):
    """Gravitational acceleration (m/s^2, frame N) as a tuple at ``(x, y, z)`` (m, frame N) at the
    instant ``now`` (:func:`instant`): a point mass, or the spherical-harmonic field ``C``, ``S``
    (unnormalized) to ``p[P_DEGREE]`` evaluated in the Earth-fixed frame, turned by GMST."""
    mu = p[P_MU]
    degree = int(p[P_DEGREE])
    if degree < 0:
        return point_mass_xyz(x, y, z, mu)
    c, s = now[0], now[1]
    fx, fy, fz = spherical_harmonic_acceleration_xyz(
        c * x + s * y, -s * x + c * y, z, mu, p[P_RADIUS], C, S, degree, VW[0], VW[1]
    )
    return c * fx - s * fy, s * fx + c * fy, fz


@compiled_borrowing
def gravity_xyz(x, y, z, t_s, p, C, S, VW):
    """:func:`gravity_xyz_at` at ``t_s`` (s): the Earth turned by GMST from ``p[P_EPOCH_JD]``."""
    return gravity_xyz_at(x, y, z, instant_of(p, t_s), p, C, S, VW)


@compiled
def gravity_acceleration(r, t_s, p, C, S):
    """:func:`gravity_xyz` at ``r`` (m, frame N) as an array (m/s^2, frame N)."""
    d = max(int(p[P_DEGREE]), 0) + 3
    ax, ay, az = gravity_xyz(r[0], r[1], r[2], t_s, p, C, S, np.zeros((2, d, d)))
    return np.array([ax, ay, az])


@compiled_borrowing
def orbiting_derivative(
    t_s, x, xdot, p, loads, inertia_B, inertia_inv, inertia_total_B, C, S, G, J, motor_Nm, friction, VW, f
):
    """The state derivative at ``t_s`` (s) into ``xdot``; returns v' (m/s^2, frame N).

    ``inertia_B`` (kg m^2, about the centre of mass, B): with wheels Schaub and Junkins' [I_RW]
    (everything but the wheels' axial inertia), ``inertia_inv`` its inverse, ``inertia_total_B``
    the whole spacecraft's (for the gravity gradient); ``G`` (k x 3) the wheels' unit spin axes
    (B), ``J`` (k) their axial inertias (kg m^2), ``motor_Nm`` (k) their motor torques (N m),
    ``friction`` (k x FRICTION_PARAMS) their bearings; ``VW`` and ``f`` the work arrays of
    :func:`scratch`. Written in scalars: it allocates nothing (four calls per RK4 step)."""
    return orbiting_derivative_at(
        instant_of(p, t_s),
        x,
        xdot,
        p,
        loads,
        inertia_B,
        inertia_inv,
        inertia_total_B,
        C,
        S,
        G,
        J,
        motor_Nm,
        friction,
        VW,
        f,
    )


@compiled_borrowing
def orbiting_derivative_at(
    now, x, xdot, p, loads, inertia_B, inertia_inv, inertia_total_B, C, S, G, J, motor_Nm, friction, VW, f
):
    """:func:`orbiting_derivative` at the instant ``now`` (:func:`instant`: the Earth's rotation
    and the Sun there)."""
    gx, gy, gz = gravity_xyz_at(x[0], x[1], x[2], now, p, C, S, VW)
    return orbiting_derivative_from_gravity(
        gx, gy, gz, now, x, xdot, p, loads, inertia_B, inertia_inv, inertia_total_B, G, J, motor_Nm, friction, f
    )


@compiled_borrowing
def orbiting_derivative_from_gravity(
    gx, gy, gz, now, x, xdot, p, loads, inertia_B, inertia_inv, inertia_total_B, G, J, motor_Nm, friction, f
):
    """:func:`orbiting_derivative_at` given the gravitational acceleration ``(gx, gy, gz)`` (m/s^2,
    frame N) at ``x``'s position (:func:`gravity_xyz_at`)."""
    rx, ry, rz, vx, vy, vz = x[0], x[1], x[2], x[3], x[4], x[5]
    qx, qy, qz, qw = x[6], x[7], x[8], x[9]
    wx, wy, wz = x[10], x[11], x[12]
    R00, R01, R02, R10, R11, R12, R20, R21, R22 = quat_dcm_entries(qx, qy, qz, qw)  # R(q_BN): B -> N
    m = p[P_MASS]
    ax, ay, az = gx, gy, gz
    Fx, Fy, Fz = loads[L_FORCE_B], loads[L_FORCE_B + 1], loads[L_FORCE_B + 2]
    ax += (R00 * Fx + R01 * Fy + R02 * Fz) / m
    ay += (R10 * Fx + R11 * Fy + R12 * Fz) / m
    az += (R20 * Fx + R21 * Fy + R22 * Fz) / m
    n_plates = int(p[P_N_PLATES])
    rho = ptx = pty = ptz = 0.0
    if (p[P_CD_AREA] > 0.0 or n_plates) and p[P_RHO0] > 0.0:
        altitude = math.sqrt(rx * rx + ry * ry + rz * rz) - EARTH_RADIUS
        rho = exponential_density(altitude, p[P_RHO0], p[P_H0], p[P_SCALE])
        if p[P_CD_AREA] > 0.0:
            dx, dy, dz = drag_acceleration_xyz(rx, ry, rz, vx, vy, vz, rho, p[P_CD_AREA] / m)
            ax, ay, az = ax + dx, ay + dy, az + dz
    else:
        n_plates = 0
    if n_plates:
        ux, uy, uz = air_relative_velocity_xyz(rx, ry, rz, vx, vy, vz)
        # into B (R^T u) for the plates, their force back into N
        pfx, pfy, pfz, ptx, pty, ptz = plate_drag_xyz(
            R00 * ux + R10 * uy + R20 * uz,
            R01 * ux + R11 * uy + R21 * uz,
            R02 * ux + R12 * uy + R22 * uz,
            rho,
            p,
            N_PARAMS,
            n_plates,
        )
        ax += (R00 * pfx + R01 * pfy + R02 * pfz) / m
        ay += (R10 * pfx + R11 * pfy + R12 * pfz) / m
        az += (R20 * pfx + R21 * pfy + R22 * pfz) / m
    if p[P_CR_AREA] > 0.0:
        sx, sy, sz = now[2], now[3], now[4]
        if p[P_CONICAL_SHADOW] == 0.0:
            px, py, pz = srp_acceleration_xyz(rx, ry, rz, sx, sy, sz, p[P_CR_AREA] / m)
            ax, ay, az = ax + px, ay + py, az + pz
        else:
            lit = conical_shadow_fraction_xyz(rx, ry, rz, sx, sy, sz, SUN_RADIUS, EARTH_RADIUS)
            if lit > 0.0:
                px, py, pz = sunlit_srp_acceleration_xyz(rx, ry, rz, sx, sy, sz, lit * p[P_CR_AREA] / m)
                ax, ay, az = ax + px, ay + py, az + pz
    ax += loads[L_DIST_FORCE_N] / m
    ay += loads[L_DIST_FORCE_N + 1] / m
    az += loads[L_DIST_FORCE_N + 2] / m
    tx = loads[L_TORQUE_B] + loads[L_DIST_TORQUE_B]
    ty = loads[L_TORQUE_B + 1] + loads[L_DIST_TORQUE_B + 1]
    tz = loads[L_TORQUE_B + 2] + loads[L_DIST_TORQUE_B + 2]
    if n_plates:
        tx, ty, tz = tx + ptx, ty + pty, tz + ptz
    if p[P_GRAVITY_GRADIENT] != 0.0:
        # at r_B = R^T r
        gx, gy, gz = gravity_gradient_xyz(
            R00 * rx + R10 * ry + R20 * rz,
            R01 * rx + R11 * ry + R21 * rz,
            R02 * rx + R12 * ry + R22 * rz,
            inertia_total_B,
            p[P_MU],
        )
        tx, ty, tz = tx + gx, ty + gy, tz + gz
    xdot[0], xdot[1], xdot[2] = vx, vy, vz
    xdot[3], xdot[4], xdot[5] = ax, ay, az
    # q' = 1/2 q (x) (omega, 0) (hopsim.dynamics.spatial.quat_rate)
    xdot[6] = 0.5 * (qw * wx + qy * wz - qz * wy)
    xdot[7] = 0.5 * (qw * wy + qz * wx - qx * wz)
    xdot[8] = 0.5 * (qw * wz + qx * wy - qy * wx)
    xdot[9] = -0.5 * (qx * wx + qy * wy + qz * wz)
    k = len(J)
    if k:
        Omega = x[13 : 13 + k]
        if p[P_LUGRE] != 0.0:
            lugre_friction_into(
                Omega,
                x[13 + k : 13 + 2 * k],
                friction[:, F_STIFFNESS],
                friction[:, F_DAMPING],
                friction[:, F_VISCOUS],
                friction[:, F_COULOMB],
                friction[:, F_STATIC],
                friction[:, F_STRIBECK_SPEED],
                f,
                xdot[13 + k : 13 + 2 * k],
            )
        else:
            wheel_friction_into(Omega, friction[:, F_VISCOUS], friction[:, F_COULOMB], friction[:, F_COULOMB_SPEED], f)
        wheel_accelerations_into(
            inertia_B, inertia_inv, G, J, x[10:13], Omega, motor_Nm, f, tx, ty, tz, xdot[10:13], xdot[13 : 13 + k]
        )
    else:
        # I^-1 (tau - omega x I omega)
        hx = inertia_B[0, 0] * wx + inertia_B[0, 1] * wy + inertia_B[0, 2] * wz
        hy = inertia_B[1, 0] * wx + inertia_B[1, 1] * wy + inertia_B[1, 2] * wz
        hz = inertia_B[2, 0] * wx + inertia_B[2, 1] * wy + inertia_B[2, 2] * wz
        bx, by, bz = tx - (wy * hz - wz * hy), ty - (wz * hx - wx * hz), tz - (wx * hy - wy * hx)
        xdot[10] = inertia_inv[0, 0] * bx + inertia_inv[0, 1] * by + inertia_inv[0, 2] * bz
        xdot[11] = inertia_inv[1, 0] * bx + inertia_inv[1, 1] * by + inertia_inv[1, 2] * bz
        xdot[12] = inertia_inv[2, 0] * bx + inertia_inv[2, 1] * by + inertia_inv[2, 2] * bz
    return ax, ay, az


@compiled_borrowing
def rk4_step(
    h, x, p, loads, inertia_B, inertia_inv, inertia_total_B, C, S, G, J, motor_Nm, friction, VW, f, K, now, mid, end
):
    """One classical RK4 step of ``h`` (s) of ``x`` from the instant ``now`` over ``mid`` to ``end``
    (:func:`instant` at t, t + h/2 and t + h); work arrays as :func:`rk4_hop`'s."""
    size = len(x)
    k1, k2, k3, k4, xs = K[0], K[1], K[2], K[3], K[4]
    half = 0.5 * h
    orbiting_derivative_at(
        now, x, k1, p, loads, inertia_B, inertia_inv, inertia_total_B, C, S, G, J, motor_Nm, friction, VW, f
    )
    for j in range(size):
        xs[j] = x[j] + half * k1[j]
    orbiting_derivative_at(
        mid, xs, k2, p, loads, inertia_B, inertia_inv, inertia_total_B, C, S, G, J, motor_Nm, friction, VW, f
    )
    for j in range(size):
        xs[j] = x[j] + half * k2[j]
    orbiting_derivative_at(
        mid, xs, k3, p, loads, inertia_B, inertia_inv, inertia_total_B, C, S, G, J, motor_Nm, friction, VW, f
    )
    for j in range(size):
        xs[j] = x[j] + h * k3[j]
    orbiting_derivative_at(
        end, xs, k4, p, loads, inertia_B, inertia_inv, inertia_total_B, C, S, G, J, motor_Nm, friction, VW, f
    )
    sixth = h / 6.0
    for j in range(size):
        x[j] = x[j] + sixth * (k1[j] + 2.0 * k2[j] + 2.0 * k3[j] + k4[j])


@compiled_borrowing
def rk4_hop(
    t0_s, steps_s, x, xdot, p, loads, inertia_B, inertia_inv, inertia_total_B, C, S, G, J, motor_Nm, friction, VW, f, K
):
    """Classical RK4 over the sub-steps ``steps_s`` (s) from ``t0_s`` (s) for one spacecraft: ``x``
    becomes the state at the hop's end and ``xdot`` the derivative there (the model's end_hop puts
    the attitude back on the unit sphere, as after any integrator). ``VW``, ``f`` and ``K`` (5 x
    state size: k1..k4 and the stage state) are work arrays (:func:`scratch`). The arithmetic of
    each step is :class:`hopsim.dynamics.integrators.RK4`'s, element by element."""
    t = t0_s
    now = instant_of(p, t)
    for h in steps_s:
        mid, end = instant_of(p, t + 0.5 * h), instant_of(p, t + h)
        rk4_step(
            h,
            x,
            p,
            loads,
            inertia_B,
            inertia_inv,
            inertia_total_B,
            C,
            S,
            G,
            J,
            motor_Nm,
            friction,
            VW,
            f,
            K,
            now,
            mid,
            end,
        )
        t += h
        now = end
    orbiting_derivative_at(
        now, x, xdot, p, loads, inertia_B, inertia_inv, inertia_total_B, C, S, G, J, motor_Nm, friction, VW, f
    )


LANES = 64  # spacecraft whose gravity is evaluated together (spherical_harmonic_acceleration_lanes)
MIN_LANES = 4  # the fewest that go that way (fewer: one by one, faster then)


@compiled
def _lane_work(lanes, d, size):
    """The work arrays of :func:`rk4_lanes` for ``lanes`` spacecraft, Cunningham's V and W of
    d x d (degree + 3) and state size ``size``: the RK4 stages (lanes x 6 x size: k1..k4, the stage
    state, the state), V and W (2 x d x d x lanes), the positions and accelerations (6 x lanes)
    and the recursion's (4 x lanes). Each is written before it is read."""
    return np.empty((lanes, 6, size)), np.empty((2, d, d, lanes)), np.empty((6, lanes)), np.empty((4, lanes))


@compiled
def rk4_hops(t0_s, steps_s, X, Xdot, P, loads, inertia_B, inertia_inv, inertia_total_B, C, S, G, J, motor_Nm, friction):
    """:func:`rk4_hop` for every row of ``X`` (n x state size) and ``Xdot``; the other arrays hold
    one row per spacecraft (``C``, ``S``: one field for all; ``G``, ``J``, ``motor_Nm``,
    ``friction``: the same number of wheels for all)."""
    n, size = X.shape
    degree = 0
    for i in range(n):
        degree = max(degree, int(P[i, P_DEGREE]))
    VW, f, K = np.zeros((2, degree + 3, degree + 3)), np.zeros(J.shape[1]), np.zeros((5, size))
    _rk4_each(
        np.arange(n),
        False,
        t0_s,
        steps_s,
        X,
        Xdot,
        P,
        loads,
        inertia_B,
        inertia_inv,
        inertia_total_B,
        C,
        S,
        G,
        J,
        motor_Nm,
        friction,
        VW,
        f,
        K,
        *_lane_work(min(n, LANES), degree + 3, size),
    )


@compiled
def rk4_rows(
    rows,
    t0_s,
    steps_s,
    X,
    Xdot,
    P,
    loads,
    inertia_B,
    inertia_inv,
    inertia_total_B,
    C,
    S,
    G,
    J,
    motor_Nm,
    friction,
    VW,
    f,
    K,
):
    """:func:`rk4_hop` for the rows ``rows`` of a fleet's arrays (one row per spacecraft, as in
    :func:`rk4_hops`; work arrays as :func:`scratch` makes them for the fleet's degree and state
    size), each followed by the model's end_hop: the attitude back on the unit sphere
    (:func:`hopsim.dynamics.spatial.quat_normalize`)."""
    _rk4_each(
        rows,
        True,
        t0_s,
        steps_s,
        X,
        Xdot,
        P,
        loads,
        inertia_B,
        inertia_inv,
        inertia_total_B,
        C,
        S,
        G,
        J,
        motor_Nm,
        friction,
        VW,
        f,
        K,
        *_lane_work(min(len(rows), LANES), VW.shape[1], X.shape[1]),
    )


@compiled_borrowing
def _same_bits(a, b):
    return a == b and math.copysign(1.0, a) == math.copysign(1.0, b)


@compiled_borrowing
def _rk4_each(
    rows,
    normalize,
    t0_s,
    steps_s,
    X,
    Xdot,
    P,
    loads,
    inertia_B,
    inertia_inv,
    inertia_total_B,
    C,
    S,
    G,
    J,
    motor_Nm,
    friction,
    VW,
    f,
    K,
    KL,
    VWL,
    RA,
    work,
):
    """:func:`rk4_hop` for the rows ``rows``, then (``normalize``) each one's attitude back on the
    unit sphere. Rows of one epoch share each instant (:func:`instant`), computed once for all;
    rows of one epoch and one spherical-harmonic field (mu, radius, degree) go :data:`LANES` at a
    time through :func:`rk4_lanes`, the others one by one, all with the same arithmetic."""
    n = len(rows)
    if n == 0:
        return
    p0 = P[rows[0]]
    epoch, degree = p0[P_EPOCH_JD], p0[P_DEGREE]
    shared = lanes = True
    for i in range(n):
        p = P[rows[i]]
        shared = shared and _same_bits(p[P_EPOCH_JD], epoch)
        lanes = (
            lanes and p[P_DEGREE] == degree and _same_bits(p[P_MU], p0[P_MU]) and _same_bits(p[P_RADIUS], p0[P_RADIUS])
        )
    if not shared:
        for i in range(n):
            r = rows[i]
            rk4_hop(
                t0_s,
                steps_s,
                X[r],
                Xdot[r],
                P[r],
                loads[r],
                inertia_B[r],
                inertia_inv[r],
                inertia_total_B[r],
                C,
                S,
                G[r],
                J[r],
                motor_Nm[r],
                friction[r],
                VW,
                f,
                K,
            )
            if normalize:
                quat_normalize_into(X[r, 6:10], X[r, 6:10])
        return
    if lanes and degree >= 0 and n >= MIN_LANES:
        for b in range(0, n, LANES):
            rk4_lanes(
                rows[b : b + LANES],
                normalize,
                t0_s,
                steps_s,
                X,
                Xdot,
                P,
                loads,
                inertia_B,
                inertia_inv,
                inertia_total_B,
                C,
                S,
                G,
                J,
                motor_Nm,
                friction,
                f,
                KL,
                VWL,
                RA,
                work,
            )
        return
    t = t0_s
    now = instant(epoch, t, True, True)
    for h in steps_s:
        mid, end = instant(epoch, t + 0.5 * h, True, True), instant(epoch, t + h, True, True)
        for i in range(n):
            r = rows[i]
            rk4_step(
                h,
                X[r],
                P[r],
                loads[r],
                inertia_B[r],
                inertia_inv[r],
                inertia_total_B[r],
                C,
                S,
                G[r],
                J[r],
                motor_Nm[r],
                friction[r],
                VW,
                f,
                K,
                now,
                mid,
                end,
            )
        t += h
        now = end
    for i in range(n):
        r = rows[i]
        orbiting_derivative_at(
            now,
            X[r],
            Xdot[r],
            P[r],
            loads[r],
            inertia_B[r],
            inertia_inv[r],
            inertia_total_B[r],
            C,
            S,
            G[r],
            J[r],
            motor_Nm[r],
            friction[r],
            VW,
            f,
        )
        if normalize:
            quat_normalize_into(X[r, 6:10], X[r, 6:10])


@compiled_borrowing
def _lane_derivatives(
    now,
    source,
    target,
    rows,
    P,
    loads,
    inertia_B,
    inertia_inv,
    inertia_total_B,
    C,
    S,
    G,
    J,
    motor_Nm,
    friction,
    f,
    KL,
    VWL,
    RA,
    work,
):
    """The derivative of each lane's state ``KL[l, source]`` into ``KL[l, target]`` at the instant
    ``now``: the lanes' gravity together (:func:`gravity_xyz_at`'s arithmetic, lane by lane), then
    the rest spacecraft by spacecraft (:func:`orbiting_derivative_from_gravity`)."""
    count = len(rows)
    c, s = now[0], now[1]
    for lane in range(count):  # into the Earth-fixed frame
        x, y = KL[lane, source, 0], KL[lane, source, 1]
        RA[0, lane], RA[1, lane], RA[2, lane] = c * x + s * y, -s * x + c * y, KL[lane, source, 2]
    p0 = P[rows[0]]
    spherical_harmonic_acceleration_lanes(
        RA[0],
        RA[1],
        RA[2],
        p0[P_MU],
        p0[P_RADIUS],
        C,
        S,
        int(p0[P_DEGREE]),
        VWL[0],
        VWL[1],
        work,
        count,
        RA[3],
        RA[4],
        RA[5],
    )
    for lane in range(count):
        r = rows[lane]
        fx, fy, fz = RA[3, lane], RA[4, lane], RA[5, lane]
        orbiting_derivative_from_gravity(
            c * fx - s * fy,
            s * fx + c * fy,
            fz,
            now,
            KL[lane, source],
            KL[lane, target],
            P[r],
            loads[r],
            inertia_B[r],
            inertia_inv[r],
            inertia_total_B[r],
            G[r],
            J[r],
            motor_Nm[r],
            friction[r],
            f,
        )


# rk4_lanes' work rows of each lane, KL[lane, ...]: the four stages, the stage state, the state
_LANE_K1, _LANE_K2, _LANE_K3, _LANE_K4, _LANE_XS, _LANE_XL = range(6)


@compiled_borrowing
def _lanes_stage_state(KL, count, size, k, h):
    """Each lane's stage state from its state and stage ``k``: ``x + h * k`` (rk4_lanes' rows)."""
    for lane in range(count):
        kk, x, xs = KL[lane, k], KL[lane, _LANE_XL], KL[lane, _LANE_XS]
        for j in range(size):
            xs[j] = x[j] + h * kk[j]


@compiled_borrowing
def rk4_lanes(
    rows,
    normalize,
    t0_s,
    steps_s,
    X,
    Xdot,
    P,
    loads,
    inertia_B,
    inertia_inv,
    inertia_total_B,
    C,
    S,
    G,
    J,
    motor_Nm,
    friction,
    f,
    KL,
    VWL,
    RA,
    work,
):
    """:func:`rk4_hop` (then, with ``normalize``, the attitude back on the unit sphere) for up to
    :data:`LANES` rows ``rows`` of one epoch and one spherical-harmonic field, stage by stage:
    at each stage the rows' gravity is evaluated together (SIMD), the rest of the derivative row
    by row; each row's arithmetic is :func:`rk4_hop`'s. Work arrays: :func:`_lane_work`."""
    count, size = len(rows), X.shape[1]
    K1, K2, K3, K4, XS, XL = _LANE_K1, _LANE_K2, _LANE_K3, _LANE_K4, _LANE_XS, _LANE_XL
    for lane in range(count):
        for j in range(size):
            KL[lane, XL, j] = X[rows[lane], j]
    epoch = P[rows[0], P_EPOCH_JD]
    t = t0_s
    now = instant(epoch, t, True, True)
    for h in steps_s:
        half = 0.5 * h
        mid, end = instant(epoch, t + half, True, True), instant(epoch, t + h, True, True)
        _lane_derivatives(
            now,
            XL,
            K1,
            rows,
            P,
            loads,
            inertia_B,
            inertia_inv,
            inertia_total_B,
            C,
            S,
            G,
            J,
            motor_Nm,
            friction,
            f,
            KL,
            VWL,
            RA,
            work,
        )
        _lanes_stage_state(KL, count, size, K1, half)
        _lane_derivatives(
            mid,
            XS,
            K2,
            rows,
            P,
            loads,
            inertia_B,
            inertia_inv,
            inertia_total_B,
            C,
            S,
            G,
            J,
            motor_Nm,
            friction,
            f,
            KL,
            VWL,
            RA,
            work,
        )
        _lanes_stage_state(KL, count, size, K2, half)
        _lane_derivatives(
            mid,
            XS,
            K3,
            rows,
            P,
            loads,
            inertia_B,
            inertia_inv,
            inertia_total_B,
            C,
            S,
            G,
            J,
            motor_Nm,
            friction,
            f,
            KL,
            VWL,
            RA,
            work,
        )
        _lanes_stage_state(KL, count, size, K3, h)
        _lane_derivatives(
            end,
            XS,
            K4,
            rows,
            P,
            loads,
            inertia_B,
            inertia_inv,
            inertia_total_B,
            C,
            S,
            G,
            J,
            motor_Nm,
            friction,
            f,
            KL,
            VWL,
            RA,
            work,
        )
        sixth = h / 6.0
        for lane in range(count):
            k1, k2, k3, k4, x = KL[lane, K1], KL[lane, K2], KL[lane, K3], KL[lane, K4], KL[lane, XL]
            for j in range(size):
                x[j] = x[j] + sixth * (k1[j] + 2.0 * k2[j] + 2.0 * k3[j] + k4[j])
        t += h
        now = end
    _lane_derivatives(
        now,
        XL,
        K1,
        rows,
        P,
        loads,
        inertia_B,
        inertia_inv,
        inertia_total_B,
        C,
        S,
        G,
        J,
        motor_Nm,
        friction,
        f,
        KL,
        VWL,
        RA,
        work,
    )
    for lane in range(count):
        r = rows[lane]
        for j in range(size):
            X[r, j], Xdot[r, j] = KL[lane, XL, j], KL[lane, K1, j]
        if normalize:
            quat_normalize_into(X[r, 6:10], X[r, 6:10])


__all__ = [
    "FRICTION_PARAMS",
    "LANES",
    "N_LOADS",
    "N_PARAMS",
    "gravity_acceleration",
    "gravity_xyz",
    "gravity_xyz_at",
    "instant",
    "instant_of",
    "orbiting_derivative",
    "orbiting_derivative_at",
    "orbiting_derivative_from_gravity",
    "parameters",
    "rk4_hop",
    "rk4_hops",
    "rk4_lanes",
    "rk4_rows",
    "rk4_step",
    "scratch",
]
