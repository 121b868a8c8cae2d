"""The flight software's state estimator: inertial propagation blended with ultrasound fixes.

Propagation, at every IMU sample: the attitude integrates the gyro rates less the estimated
bias; the translation integrates either the accelerometer (rotated to N) or, by default, the
force the flight software itself commanded (:class:`ThrustPredictor`), as in the seed's
leader-follower run.

Correction, at every global-metrology cycle: the ranges are solved for the pose at the first
beacon's firing (:func:`solve_pose`), with the vehicle's motion between firings taken from the
propagated history. The fix's innovation (fix minus the estimate at that instant) is blended into
the current estimate with fixed gains: a share of the position and attitude innovations, a
velocity correction of the position innovation per fix interval, and a gyro-bias correction of
the attitude innovation per fix interval (an alpha-beta filter per axis). The first fix is
taken whole.
"""

from __future__ import annotations

import math
from collections import deque

import numpy as np
from numba import njit

from hopsim.actors.spheres.frames import (
    dcm_c,
    from_rotvec,
    normalized,
    normalized_c,
    quat_mul,
    quat_mul_c,
    rotate_body_c,
)
from hopsim.actors.spheres.params import SpheresParams, TestbedParams
from hopsim.actors.spheres.pose_solver import PoseFix, solve_pose, solve_pose_moving
from hopsim.actors.spheres.thrust_prediction import ThrustPredictor, impulse_moment_rows
from hopsim.dynamics import detlinalg, detmath
from hopsim.kernel.simtime import NS_PER_S

_ZERO3 = np.zeros(3)

# The kernels copy arrays element by element, not by slice assignment: see hopsim.dynamics._jit.
# columns of the rows :func:`_propagate_samples` returns: r_N (m), v_N (m/s), q_BN (scalar-last),
# omega_B (rad/s, bias-corrected), accel_B (m/s^2) and the interval before the sample (s); the
# first three are also those of :func:`_coast_state`'s array
_R, _V, _Q, _W, _A, _DT = slice(0, 3), slice(3, 6), slice(6, 10), slice(10, 13), slice(13, 16), 16


@njit(cache=True, fastmath=False, error_model="numpy")
def _coast(r, v, q, omega_B, impulse_B, moment_B, accel_B, mass, dt, use_accel, planar):
    """State after dt (s) at body rate omega_B and the given body-frame impulse and moment (or the
    accelerometer's specific force), the attitude held for the translation."""
    R = dcm_c(q)
    if use_accel:
        a = detlinalg.matmul(R, accel_B)
        r_new = r + v * dt + 0.5 * a * dt * dt
        v_new = v + a * dt
    else:
        r_new = r + v * dt + detlinalg.matmul(R, moment_B) / mass
        v_new = v + detlinalg.matmul(R, impulse_B) / mass
    if planar:
        v_new[2] = 0.0
    return r_new, v_new, rotate_body_c(q, omega_B, dt)


@njit(cache=True, fastmath=False, error_model="numpy")
def _coast_state(r, v, q, omega_B, impulse_B, moment_B, accel_B, mass, dt, use_accel, planar):
    """:func:`_coast`'s state as one array: r_N (m), v_N (m/s), q_BN (scalar-last), in columns
    ``_R``, ``_V``, ``_Q`` (one array to hand back instead of three)."""
    r_new, v_new, q_new = _coast(r, v, q, omega_B, impulse_B, moment_B, accel_B, mass, dt, use_accel, planar)
    out = np.empty(10)
    for j in range(3):
        out[j] = r_new[j]
        out[3 + j] = v_new[j]
    for j in range(4):
        out[6 + j] = q_new[j]
    return out


@njit(cache=True, fastmath=False, error_model="numpy")
def _coast_many(r, v, q, omega_B, impulse_B, moment_B, accel_B, mass, dt, use_accel, planar):
    """:func:`_coast` over successive intervals; returns the states at their ends (rows)."""
    n = dt.shape[0]
    rs = np.empty((n, 3))
    vs = np.empty((n, 3))
    qs = np.empty((n, 4))
    for k in range(n):
        if dt[k] > 0.0:
            r, v, q = _coast(r, v, q, omega_B[k], impulse_B[k], moment_B[k], accel_B[k], mass, dt[k], use_accel, planar)
        for j in range(3):
            rs[k, j] = r[j]
            vs[k, j] = v[j]
        for j in range(4):
            qs[k, j] = q[j]
    return rs, vs, qs


@njit(cache=True, fastmath=False, error_model="numpy")
def _propagate_samples(r, v, q, bias, t_ns, times, samples, spans, mass, use_accel, planar):
    """:meth:`Estimator.imu_samples` in one compiled call: the intervals between the estimate's
    time ``t_ns`` and the sample instants ``times`` (ns; a sample older than the estimate makes
    an empty interval), the commanded impulse and moment over each (:func:`impulse_moment_rows`,
    from the firings ``spans``), the bias-corrected rates and the coasts. ``samples`` holds the
    n gyro rows (rad/s, B) then the n accelerometer rows (m/s^2, B), flat. Returns one row per
    sample: the state at the interval's end, the rates, the specific force and the interval
    (columns ``_R``, ``_V``, ``_Q``, ``_W``, ``_A``, ``_DT``)."""
    n = times.shape[0]
    a_s = np.empty(n)
    b_s = np.empty(n)
    dt = np.empty(n)
    t_prev = t_ns
    for k in range(n):
        if k > 0:
            t_prev = max(times[k - 1], t_ns)
        t_end = max(times[k], t_prev)
        a_s[k] = t_prev / 1_000_000_000
        b_s[k] = t_end / 1_000_000_000
        dt[k] = (t_end - t_prev) / 1_000_000_000
    impulse, moment = impulse_moment_rows(a_s, b_s, spans)
    omega = np.empty((n, 3))
    accel_B = np.empty((n, 3))
    for k in range(n):
        for j in range(3):
            omega[k, j] = samples[3 * k + j] - bias[j]
            accel_B[k, j] = samples[3 * (n + k) + j]
    rs, vs, qs = _coast_many(r, v, q, omega, impulse, moment, accel_B, mass, dt, use_accel, planar)
    out = np.empty((n, 17))
    for k in range(n):
        for j in range(3):
            out[k, j] = rs[k, j]
            out[k, 3 + j] = vs[k, j]
            out[k, 10 + j] = omega[k, j]
            out[k, 13 + j] = accel_B[k, j]
        for j in range(4):
            out[k, 6 + j] = qs[k, j]
        out[k, 16] = dt[k]
    return out


@njit(cache=True, fastmath=False, error_model="numpy")
def _from_rotvec(rv):
    """:func:`frames.from_rotvec` compiled, with its operations (the angle from
    ``detlinalg.dot(rv, rv)``)."""
    angle = math.sqrt(detlinalg.dot(rv, rv))
    if angle < 1e-12:
        return normalized_c(np.array([0.5 * rv[0], 0.5 * rv[1], 0.5 * rv[2], 1.0]))
    s = detmath.sin(0.5 * angle) / angle
    return np.array([rv[0] * s, rv[1] * s, rv[2] * s, detmath.cos(0.5 * angle)])


@njit(cache=True, fastmath=False, error_model="numpy")
def _coasted_pose(r, v, q, w, dt):
    """(r + v dt, q (x) exp(w dt)): :meth:`Estimator.state_at`'s position and attitude, with the
    operations of :func:`frames.from_rotvec`, :func:`frames.quat_mul` and
    :func:`frames.normalized` (``detlinalg.dot(v, v)`` products included)."""
    r_t = r + v * dt
    return r_t, normalized_c(quat_mul_c(q, _from_rotvec(w * dt)))


@njit(cache=True, fastmath=False, error_model="numpy")
def _relative_motion(r, v, q, w, dt):
    """Poses coasted from records (rows of r, v, q, w, each by its dt in s): the first pose
    (r_ref, q_ref), then for each other one its displacement from it (N) and its rotation
    relative to it, ``dcm(q_k) @ dcm(q_ref).T``."""
    m = r.shape[0]
    r_ref, q_ref = _coasted_pose(r[0], v[0], q[0], w[0], dt[0])
    R_ref_T = dcm_c(q_ref).T
    dr = np.empty((m - 1, 3))
    dR = np.empty((m - 1, 3, 3))
    for k in range(1, m):
        r_k, q_k = _coasted_pose(r[k], v[k], q[k], w[k], dt[k])
        rotation = detlinalg.matmul(dcm_c(q_k), R_ref_T)
        for i in range(3):
            dr[k - 1, i] = r_k[i] - r_ref[i]
            for j in range(3):
                dR[k - 1, i, j] = rotation[i, j]
    return r_ref, q_ref, dr, dR


@njit(cache=True, fastmath=False, error_model="numpy")
def _blend_fix(r, v, q, bias, fix_r, fix_q, r_ref, q_ref, kp, kv, kq, kb, dt_fix):
    """:meth:`Estimator.gm_update`'s correction in one compiled call, operation for operation
    the interpreted form it replaces (tests/spheres/test_sph_fast_paths.py checks them equal)::

        e_r = fix_r - r_ref
        e_theta = to_rotvec(quat_mul(fix_q, quat_conj(q_ref)))          (rad, N)
        r += kp e_r;  v += kv e_r / dt_fix
        q = normalized(quat_mul(from_rotvec(kq e_theta), q))
        bias -= kb (dcm(q).T @ e_theta) / dt_fix

    Returns the new (r, v, q, bias)."""
    e_r = fix_r - r_ref
    conj = np.array([-q_ref[0], -q_ref[1], -q_ref[2], q_ref[3]])
    d = normalized_c(quat_mul_c(fix_q, conj))  # to_rotvec(...)
    s = math.sqrt(d[0] * d[0] + d[1] * d[1] + d[2] * d[2])
    e_theta = 2.0 * d[:3] if s < 1e-12 else d[:3] * (2.0 * detmath.atan2(s, d[3]) / s)
    r_new = r + kp * e_r
    v_new = v + kv * e_r / dt_fix
    q_new = normalized_c(quat_mul_c(_from_rotvec(kq * e_theta), q))
    bias_new = bias - kb * detlinalg.matmul(dcm_c(q_new).T, e_theta) / dt_fix
    return r_new, v_new, q_new, bias_new


class Estimator:
    """Estimated r_N (m), v_N (m/s), q_BN, omega_B (rad/s) and gyro bias (rad/s) of one vehicle."""

    def __init__(
        self, params: SpheresParams, testbed: TestbedParams, t_ns: int, r_N, v_N, q_BN, omega_B=(0.0, 0.0, 0.0)
    ):
        fsw = params.flight_software
        self.params = params
        self.beacons_N = np.array(testbed.beacon_positions_N, dtype=float)
        self.receivers_B = np.array(params.receivers.positions_B, dtype=float)
        self.mass0 = params.mass.mass_kg
        self.planar = params.thrusters.planar
        self.use_accel = fsw.est_use_accelerometer
        self.gains = (fsw.est_pos_gain, fsw.est_vel_gain, fsw.est_att_gain, fsw.est_bias_gain)
        self.max_residual = fsw.gm_max_residual_m
        self.thrust = ThrustPredictor(params)
        self.t_ns = t_ns
        self.r = np.array(r_N, dtype=float)
        self.v = np.array(v_N, dtype=float)
        self.q = normalized(q_BN)
        self.omega = np.array(omega_B, dtype=float)
        self.bias = np.zeros(3)
        self.accel_B = np.zeros(3)
        # records (t_ns, k, state): the state at t_ns is row k of the rows _propagate_samples
        # returned, or the vectors (r, v, q, omega) themselves when k is -1 (rows are taken only
        # when a record is read)
        self.history: deque = deque(maxlen=64)
        self.initialized = False
        self.t_last_fix: int | None = None
        self.last_fix: PoseFix | None = None
        self.fixes_used = 0
        self.fixes_rejected = 0
        self._remember()

    @property
    def mass(self) -> float:
        return self.mass0 - self.thrust.burnt_kg

    def _remember(self) -> None:
        """Record the state (arrays are replaced, never changed in place, so no copies)."""
        self.history.append((self.t_ns, -1, (self.r, self.v, self.q, self.omega)))

    # ------------------------------------------------------------------ propagation
    def propagate_to(self, t_ns: int) -> None:
        """Advance the estimate to t_ns with the latest rates and the commanded thrust."""
        if t_ns <= self.t_ns:
            return
        dt = (t_ns - self.t_ns) / NS_PER_S
        if self.use_accel:
            impulse, moment = _ZERO3, _ZERO3
        else:
            impulse, moment = self.thrust.impulse_moment(self.t_ns, t_ns)
        x = _coast_state(
            self.r,
            self.v,
            self.q,
            self.omega,
            impulse,
            moment,
            self.accel_B,
            self.mass,
            dt,
            self.use_accel,
            self.planar,
        )
        self.r, self.v, self.q = x[_R], x[_V], x[_Q]
        self.t_ns = t_ns
        self._remember()

    def imu_sample(self, t_ns: int, omega_B: np.ndarray, accel_B: np.ndarray) -> None:
        """One IMU sample (rad/s and m/s^2 arrays): propagate to its instant, then hold its rates
        for what follows."""
        self.omega = omega_B - self.bias
        self.accel_B = accel_B
        self.propagate_to(t_ns)

    def imu_samples(self, times: list[int], samples: np.ndarray) -> None:
        """Samples in time order (instants in ns; ``samples`` flat: the gyro rows in rad/s, then
        the accelerometer rows in m/s^2, as in an ImuSamples message), as :meth:`imu_sample` one
        by one."""
        if not times:
            return
        # samples older than the estimate (it was carried ahead to a fix or a law tick) only set rates
        t_start = self.t_ns
        spans = np.zeros((0, 5)) if self.use_accel else self.thrust.firing_spans(t_start, max(t_start, max(times)))
        rows = _propagate_samples(
            self.r,
            self.v,
            self.q,
            self.bias,
            t_start,
            np.array(times, dtype=np.int64),
            samples,
            spans,
            self.mass,
            self.use_accel,
            self.planar,
        )
        dt = rows[:, _DT].tolist()
        self.history.extend([(t, k, rows) for k, t in enumerate(times) if dt[k] > 0])
        self.t_ns = max(self.t_ns, times[-1])
        last = rows[-1]
        self.r, self.v, self.q, self.omega, self.accel_B = last[_R], last[_V], last[_Q], last[_W], last[_A]

    def command(self, t_ns: int, mask: int, on_time_ns) -> None:
        """A valve command the flight software sent (for the thrust prediction)."""
        self.thrust.command(t_ns, mask, on_time_ns)

    def state_at(self, t_ns: int):
        """(r, v, q, omega) at a past instant, from the history, coasting from the last record."""
        t0, r, v, q, w = self._record_at(t_ns)
        dt = (t_ns - t0) / NS_PER_S
        return r + v * dt, v.copy(), normalized(quat_mul(q, from_rotvec(w * dt))), w.copy()

    def _record_at(self, t_ns: int):
        """(t, r, v, q, omega) of the last record at or before t_ns (else the oldest)."""
        rec = None
        for h in reversed(self.history):
            if h[0] <= t_ns:
                rec = h
                break
        if rec is None:
            rec = self.history[0]
        t0, k, state = rec
        if k >= 0:
            row = state[k]
            return t0, row[_R], row[_V], row[_Q], row[_W]
        return (t0, *state)

    # ------------------------------------------------------------------ correction
    def gm_update(self, ranges, fire_ns: list[int], t_now_ns: int) -> PoseFix | None:
        """Blend the fix of one metrology cycle into the estimate at t_now (the delivery)."""
        self.propagate_to(t_now_ns)
        # the poses (state_at) at the first firing and at each firing, and each firing's rigid
        # motion from the first one: (r_k - r_ref, dcm(q_k) @ dcm(q_ref).T), in one compiled call
        times = [fire_ns[0], *fire_ns]
        t_rec, r, v, q, w = zip(*[self._record_at(t) for t in times])
        r_ref, q_ref, dr, dR = _relative_motion(
            np.array(r),
            np.array(v),
            np.array(q),
            np.array(w),
            np.array([(t - t0) / NS_PER_S for t, t0 in zip(times, t_rec)]),
        )
        if self.initialized:
            # solve_pose(..., r_ref, q_ref, list(zip(dr, dR))) with the motion as arrays
            fix = solve_pose_moving(ranges, self.beacons_N, self.receivers_B, r_ref, q_ref, dr, dR)
        else:
            fix = solve_pose(ranges, self.beacons_N, self.receivers_B, None, None, list(zip(dr, dR)))
        self.last_fix = fix
        if not fix.converged or fix.rms_m > self.max_residual:
            self.fixes_rejected += 1
            return None
        kp, kv, kq, kb = self.gains
        if not self.initialized:
            kp = kq = 1.0
            kv = kb = 0.0
            self.initialized = True
        dt_fix = 0.5 if self.t_last_fix is None else max((t_now_ns - self.t_last_fix) / NS_PER_S, 1e-3)
        self.r, self.v, self.q, self.bias = _blend_fix(
            self.r,
            self.v,
            self.q,
            self.bias,
            fix.r_N,
            fix.q_BN,
            r_ref,
            q_ref,
            float(kp),
            float(kv),
            float(kq),
            float(kb),
            float(dt_fix),
        )
        self.t_last_fix = t_now_ns
        self.fixes_used += 1
        self.history.clear()
        self._remember()
        return fix
