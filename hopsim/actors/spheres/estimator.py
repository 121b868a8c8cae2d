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

from collections import deque

import numpy as np

from numba import njit

from hopsim.actors.spheres.frames import (dcm, dcm_c, from_rotvec, normalized, quat_conj, quat_mul,
                                          rotate_body_c, to_rotvec)
from hopsim.actors.spheres.params import SpheresParams, TestbedParams
from hopsim.actors.spheres.pose_solver import PoseFix, solve_pose
from hopsim.actors.spheres.thrust_prediction import ThrustPredictor
from hopsim.kernel.simtime import NS_PER_S

_ZERO3 = np.zeros(3)


@njit(cache=True, fastmath=False, error_model="numpy")
def _coast(r, v, q, omega_B, impulse_B, moment_B, accel_B, mass, dt, use_accel, planar):
    """State after dt (s) at body rate omega_B and the given body-frame impulse and moment (or the
    accelerometer's specific force), the attitude held for the translation."""
    R = dcm_c(q)
    if use_accel:
        a = R @ accel_B
        r_new = r + v * dt + 0.5 * a * dt * dt
        v_new = v + a * dt
    else:
        r_new = r + v * dt + (R @ moment_B) / mass
        v_new = v + (R @ impulse_B) / mass
    if planar:
        v_new[2] = 0.0
    return r_new, v_new, rotate_body_c(q, omega_B, dt)


@njit(cache=True, fastmath=False, error_model="numpy")
def _coast_many(r, v, q, omega_B, impulse_B, moment_B, accel_B, mass, dt, use_accel, planar):
    """:func:`_coast` over successive intervals; returns the states at their ends (rows)."""
    n = dt.shape[0]
    rs = np.empty((n, 3))
    vs = np.empty((n, 3))
    qs = np.empty((n, 4))
    for k in range(n):
        if dt[k] > 0.0:
            r, v, q = _coast(r, v, q, omega_B[k], impulse_B[k], moment_B[k], accel_B[k], mass, dt[k],
                             use_accel, planar)
        rs[k] = r
        vs[k] = v
        qs[k] = q
    return rs, vs, qs


class Estimator:
    """Estimated r_N (m), v_N (m/s), q_BN, omega_B (rad/s) and gyro bias (rad/s) of one vehicle."""

    def __init__(self, params: SpheresParams, testbed: TestbedParams, t_ns: int, r_N, v_N, q_BN,
                 omega_B=(0.0, 0.0, 0.0)):
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
        self.history.append((self.t_ns, self.r, self.v, self.q, self.omega))

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
        self.r, self.v, self.q = _coast(self.r, self.v, self.q, self.omega, impulse, moment, self.accel_B,
                                        self.mass, dt, self.use_accel, self.planar)
        self.t_ns = t_ns
        self._remember()

    def imu_sample(self, t_ns: int, omega_B: np.ndarray, accel_B: np.ndarray) -> None:
        """One IMU sample (rad/s and m/s^2 arrays): propagate to its instant, then hold its rates
        for what follows."""
        self.omega = omega_B - self.bias
        self.accel_B = accel_B
        self.propagate_to(t_ns)

    def imu_samples(self, times, omega_B: np.ndarray, accel_B: np.ndarray) -> None:
        """Samples in time order (rows of rad/s and m/s^2), as :meth:`imu_sample` one by one."""
        n = len(times)
        if n == 0:
            return
        # samples older than the estimate (it was carried ahead to a fix or a law tick) only set rates
        times = [int(t) for t in times]
        t_prev = [max(t, self.t_ns) for t in [self.t_ns] + times[:-1]]
        t_end = [max(t, tp) for t, tp in zip(times, t_prev)]
        if self.use_accel:
            impulse = moment = np.zeros((n, 3))
        else:
            impulse, moment = self.thrust.impulse_moment_many(t_prev, t_end)
        omega = omega_B - self.bias
        dt = np.array([(te - tp) / NS_PER_S for te, tp in zip(t_end, t_prev)])
        r, v, q = _coast_many(self.r, self.v, self.q, omega, impulse, moment, accel_B, self.mass, dt,
                              self.use_accel, self.planar)
        self.history.extend((t, r[k], v[k], q[k], omega[k]) for k, t in enumerate(times) if dt[k] > 0)
        self.t_ns = max(self.t_ns, int(times[-1]))
        self.r, self.v, self.q = r[-1], v[-1], q[-1]
        self.omega, self.accel_B = omega[-1], accel_B[-1]

    def command(self, t_ns: int, mask: int, on_time_ns) -> None:
        """A valve command the flight software sent (for the thrust prediction)."""
        self.thrust.command(t_ns, mask, on_time_ns)

    def state_at(self, t_ns: int):
        """(r, v, q, omega) at a past instant, from the history, coasting from the last record."""
        rec = None
        for h in reversed(self.history):
            if h[0] <= t_ns:
                rec = h
                break
        if rec is None:
            rec = self.history[0]
        t0, r, v, q, w = rec
        dt = (t_ns - t0) / NS_PER_S
        return r + v * dt, v.copy(), normalized(quat_mul(q, from_rotvec(w * dt))), w.copy()

    # ------------------------------------------------------------------ correction
    def gm_update(self, ranges, fire_ns: list[int], t_now_ns: int) -> PoseFix | None:
        """Blend the fix of one metrology cycle into the estimate at t_now (the delivery)."""
        self.propagate_to(t_now_ns)
        t_ref = fire_ns[0]
        r_ref, _, q_ref, _ = self.state_at(t_ref)
        R_ref_T = dcm(q_ref).T
        motion = []
        for t_k in fire_ns:
            r_k, _, q_k, _ = self.state_at(t_k)
            motion.append((r_k - r_ref, dcm(q_k) @ R_ref_T))
        start_q = q_ref if self.initialized else None
        start_r = r_ref if self.initialized else None
        fix = solve_pose(ranges, self.beacons_N, self.receivers_B, start_r, start_q, motion)
        self.last_fix = fix
        if not fix.converged or fix.rms_m > self.max_residual:
            self.fixes_rejected += 1
            return None
        e_r = fix.r_N - r_ref
        e_theta_N = to_rotvec(quat_mul(fix.q_BN, quat_conj(q_ref)))
        kp, kv, kq, kb = self.gains
        if not self.initialized:
            kp = kq = 1.0
            kv = kb = 0.0
            self.initialized = True
        dt_fix = 0.5 if self.t_last_fix is None else max((t_now_ns - self.t_last_fix) / NS_PER_S, 1e-3)
        self.r = self.r + kp * e_r
        self.v = self.v + kv * e_r / dt_fix
        self.q = normalized(quat_mul(from_rotvec(kq * e_theta_N), self.q))
        self.bias = self.bias - kb * (dcm(self.q).T @ e_theta_N) / dt_fix
        self.t_last_fix = t_now_ns
        self.fixes_used += 1
        self.history.clear()
        self._remember()
        return fix
