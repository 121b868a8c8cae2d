"""A spacecraft with flexible appendages, its attitude controller and a monitor of its slews.

:class:`FlexibleSpacecraftDynamics` integrates a :class:`hopsim.dynamics.flexible.FlexibleSpacecraft`
(a rigid hub B carrying modal appendages, in hybrid coordinates): its continuous state is the
module's ``x = [r_BN_N (3), q_BN (4), eta (N), v_BN_B (3), omega_BN_B (3), etadot (N)]``
(m, scalar-last quaternion with ``v_N = R(q_BN) v_B``, sqrt(kg) m, m/s, rad/s, sqrt(kg) m/s),
its derivative :func:`hopsim.dynamics.flexible.state_derivative` and, when the island integrates
by RK4, its hops :func:`hopsim.dynamics.flexible.rk4_step` (the compiled laws: every sum an
explicit loop and ``Udot`` by :func:`hopsim.dynamics.detlinalg.solve`, the same bits on every
CPU). The quaternion is put back on the unit sphere (w >= 0) after every step.

Input ``wrench`` (:class:`hopsim.schemas.Wrench`): a force [N] at B and a torque [N m] on the
hub, latched at the start of every hop and held over it; a BODY wrench is taken in B, an
INERTIAL one is turned into B with the attitude at the hop's start. Outputs at ``rate_hz``:
``state`` (:class:`hopsim.schemas.VehicleState` of the hub origin B: ``r_BN_N``, ``v_BN_N``,
``q_BN``, ``omega_BN_B``, the accelerations ``a_BN_N`` and ``omega_dot_BN_B`` of the derivative
with the loads of the hop that ends there, and the vehicle's total mass) and ``tip``
(:class:`hopsim.schemas.Vector3`: the elastic deflection ``Phi_tip eta`` [m] of the tip node
relative to the hub, B components; zero on a vehicle without that node).

:class:`SlewController` commands a rest-to-rest slew (:class:`RestToRestSlew`: a quintic
angle profile about a fixed axis) with a PD law on the measured attitude error (a star
tracker's :class:`hopsim.schemas.AttitudeMeasurement`) and rate error (an IMU's
:class:`hopsim.schemas.ImuMeasurement`), plus a feed-forward of the reference acceleration::

    q_RN = (sin(theta/2) a, cos(theta/2)),  q_BR = q_RN* (x) q_BN,  e = 2 sign(q_BR.w) vec(q_BR)
    omega_err = omega_meas - R(q_BR)^T (thetadot a)
    torque_B = clip(-kp e - kd omega_err + J_ff thetaddot R(q_BR)^T a, -max_torque_Nm, max_torque_Nm)

``theta(t)`` the reference angle [rad], ``a`` the slew axis (the same in N and in the
reference frame R, which starts at ``q0``), ``kp`` [N m/rad], ``kd`` [N m s/rad], ``J_ff``
[kg m^2] the feed-forward inertia about ``a`` (0: none). It has feed-through: the torque
published at an instant uses the measurements of that instant and is held until the next.

:class:`SlewMonitor` reads the true state, publishes the true attitude error to the reference
(``error``, a rotation vector in B [rad]) and keeps the slew's residual: the largest error
after the slew's end and the last instant the error lay outside a tolerance.
"""

from __future__ import annotations

import numpy as np

from hopsim.dynamics import detlinalg, detmath
from hopsim.dynamics.flexible import FlexibleSpacecraft, rk4_step, state_derivative
from hopsim.dynamics.spatial import quat_dcm_entries, quat_multiply, quat_normalize
from hopsim.kernel import FixedRate, In, Model, Out
from hopsim.kernel.model import ContinuousModel
from hopsim.kernel.simtime import NS_PER_S
from hopsim.schemas import (
    AttitudeMeasurement,
    ImuMeasurement,
    Quaternion,
    Vector3,
    VehicleState,
    Wrench,
)


def _vector3(a, b, c) -> Vector3:
    return Vector3(x=float(a), y=float(b), z=float(c))


def _norm3(v) -> float:
    return float(np.sqrt(v[0] * v[0] + v[1] * v[1] + v[2] * v[2]))


class FlexibleSpacecraftDynamics(ContinuousModel):
    """The hub and appendages of ``spacecraft`` (see the module); ``x0`` its initial state
    (:meth:`FlexibleSpacecraft.pack_state`, default at rest at the origin), ``tip``: the
    ``(appendage, node)`` whose deflection is published."""

    inputs = {"wrench": In(Wrench)}
    outputs = {"state": Out(VehicleState), "tip": Out(Vector3)}
    feed_through = False
    # _quat_fixed lives within one hop (propagate_hop to end_hop): always False between hops
    _FRAMEWORK_ATTRS = ContinuousModel._FRAMEWORK_ATTRS | {"_quat_fixed"}

    def __init__(self, name: str, spacecraft: FlexibleSpacecraft, x0=None, tip=None, rate_hz: float = 10.0):
        n = spacecraft.n_modes
        self.state_names = (
            *("r_x", "r_y", "r_z", "q_x", "q_y", "q_z", "q_w"),
            *(f"eta{i}" for i in range(n)),
            *("v_x", "v_y", "v_z", "omega_x", "omega_y", "omega_z"),
            *(f"etadot{i}" for i in range(n)),
        )
        super().__init__(name)
        self.n_modes = n
        self.vehicle = np.ascontiguousarray(spacecraft.packed, dtype=np.float64).copy()
        self.mass_kg = float(spacecraft.arrays.mass[0])
        x0 = spacecraft.pack_state() if x0 is None else np.asarray(x0, dtype=np.float64)
        if x0.shape != (len(self.state_names),) or not np.all(np.isfinite(x0)):
            raise ValueError(f"{name}: x0 must hold {len(self.state_names)} finite numbers, got shape {x0.shape}")
        self.x0 = x0.copy()
        self.x0[3:7] = quat_normalize(self.x0[3:7].copy())
        self.tip_T = np.zeros((3, n))  # Phi at the tip node (3, N)
        if tip is not None:
            self.tip_T = np.ascontiguousarray(spacecraft.arrays.node_T[spacecraft.node_index(*tip)]).copy()
        self.loads = spacecraft.loads()  # packed: force_B, torque_B, node forces, node moments
        self.io_schedule = FixedRate(rate_hz)
        self.peak_tip_m = 0.0  # the largest tip deflection at the I/O steps so far (m)
        self._quat_fixed = False

    def initial_state(self) -> np.ndarray:
        return self.x0.copy()

    # ------------------------------------------------------------------ loads
    def start_hop(self, t0_ns: int, t1_ns: int) -> None:
        """Latch the wrench (force at B, torque on the hub, in B) for the hop (sets loads)."""
        w = self.read("wrench")
        loads = self.loads
        if w is None:
            loads[0:6] = 0.0
            return
        f = (w.force.x, w.force.y, w.force.z)
        t = (w.torque.x, w.torque.y, w.torque.z)
        if w.frame == Wrench.INERTIAL:  # into B: R(q_BN)^T
            x = self.x
            r = quat_dcm_entries(x[3], x[4], x[5], x[6])
            f = tuple(r[c] * f[0] + r[3 + c] * f[1] + r[6 + c] * f[2] for c in range(3))
            t = tuple(r[c] * t[0] + r[3 + c] * t[1] + r[6 + c] * t[2] for c in range(3))
        loads[0:3] = f
        loads[3:6] = t

    # ------------------------------------------------------------------ dynamics
    def post_deriv(self, t_s: float) -> None:
        self.xdot[:] = state_derivative(np.ascontiguousarray(self.x), self.vehicle, self.loads)

    def hop_ready(self) -> bool:
        return True

    @staticmethod
    def propagate_hop(bodies: list[FlexibleSpacecraftDynamics], steps_s, t0_s: float = 0.0) -> None:
        """RK4 over the sub-steps ``steps_s`` (s), loads held: :func:`rk4_step` (the quaternion
        normalized after each step); nothing depends on the time ``t0_s``."""
        for b in bodies:
            x = b.x.copy()
            for h in steps_s:
                x = rk4_step(x, float(h), b.vehicle, b.loads)
            b.x[:] = x
            b._quat_fixed = True  # end_hop, which always follows, skips its fix

    def end_hop(self, t0_ns: int, t1_ns: int) -> None:
        """Keep the quaternion on the unit sphere with w >= 0 (a state fix between hops)."""
        if self._quat_fixed:
            self._quat_fixed = False
        else:
            self.x[3:7] = quat_normalize(self.x[3:7].copy())

    # ------------------------------------------------------------------ outputs
    def tip_deflection(self) -> np.ndarray:
        """The tip's elastic deflection relative to the hub, B components (m)."""
        n = self.n_modes
        return detlinalg.matmul(self.tip_T, np.ascontiguousarray(self.x[7 : 7 + n]))

    def end_io_step(self, t0_ns: int, t1_ns: int) -> None:
        """Keep the largest tip deflection (sets peak_tip_m)."""
        self.peak_tip_m = max(self.peak_tip_m, _norm3(self.tip_deflection()))

    def update_flow_outs(self, t_ns: int) -> None:
        x = np.ascontiguousarray(self.x)
        n = self.n_modes
        xd = state_derivative(x, self.vehicle, self.loads)
        r00, r01, r02, r10, r11, r12, r20, r21, r22 = quat_dcm_entries(x[3], x[4], x[5], x[6])
        nv = 7 + n  # where v_BN_B starts
        v = x[nv : nv + 3]
        w = x[nv + 3 : nv + 6]
        vd = xd[nv : nv + 3]
        wd = xd[nv + 3 : nv + 6]
        # inertial acceleration of B: R (vdot_B + omega x v_B)
        ab = (
            vd[0] + w[1] * v[2] - w[2] * v[1],
            vd[1] + w[2] * v[0] - w[0] * v[2],
            vd[2] + w[0] * v[1] - w[1] * v[0],
        )
        self.write(
            "state",
            VehicleState(
                vehicle=self.name,
                t_ns=t_ns,
                r_BN_N=_vector3(x[0], x[1], x[2]),
                v_BN_N=_vector3(
                    r00 * v[0] + r01 * v[1] + r02 * v[2],
                    r10 * v[0] + r11 * v[1] + r12 * v[2],
                    r20 * v[0] + r21 * v[1] + r22 * v[2],
                ),
                q_BN=Quaternion(x=float(x[3]), y=float(x[4]), z=float(x[5]), w=float(x[6])),
                omega_BN_B=_vector3(w[0], w[1], w[2]),
                a_BN_N=_vector3(
                    r00 * ab[0] + r01 * ab[1] + r02 * ab[2],
                    r10 * ab[0] + r11 * ab[1] + r12 * ab[2],
                    r20 * ab[0] + r21 * ab[1] + r22 * ab[2],
                ),
                omega_dot_BN_B=_vector3(wd[0], wd[1], wd[2]),
                mass=self.mass_kg,
            ),
        )
        tip = self.tip_deflection()
        self.write("tip", _vector3(tip[0], tip[1], tip[2]))


# --------------------------------------------------------------------------- the slew


class RestToRestSlew:
    """A rest-to-rest rotation by ``angle_rad`` about the unit ``axis`` (the same in N and in
    the reference frame), from ``start_s`` for ``duration_s`` (s), starting at attitude ``q0``:
    ``theta = angle (10 s^3 - 15 s^4 + 6 s^5)``, ``s = (t - start) / duration`` in [0, 1] (rate
    and acceleration zero at both ends)."""

    def __init__(self, axis, angle_rad: float, start_s: float, duration_s: float, q0=(0.0, 0.0, 0.0, 1.0)):
        a = np.asarray(axis, dtype=np.float64)
        norm = _norm3(a)
        if a.shape != (3,) or not np.isfinite(norm) or norm == 0.0:
            raise ValueError(f"the slew axis must be a finite non-zero 3-vector, got {axis}")
        if not (np.isfinite(angle_rad) and np.isfinite(start_s) and np.isfinite(duration_s) and duration_s > 0):
            raise ValueError("the slew's angle, start and (positive) duration must be finite")
        self.axis = a / norm
        self.angle_rad = float(angle_rad)
        self.start_s = float(start_s)
        self.duration_s = float(duration_s)
        self.q0 = quat_normalize(np.asarray(q0, dtype=np.float64))

    @property
    def end_s(self) -> float:
        return self.start_s + self.duration_s

    def at(self, t_s: float) -> tuple[float, float, float]:
        """(angle [rad], rate [rad/s], acceleration [rad/s^2]) at ``t_s``."""
        T = self.duration_s
        s = min(max((t_s - self.start_s) / T, 0.0), 1.0)
        s2 = s * s
        s3 = s2 * s
        A = self.angle_rad
        theta = A * s3 * (10.0 - 15.0 * s + 6.0 * s2)
        rate = A / T * 30.0 * s2 * (1.0 - 2.0 * s + s2)
        accel = A / (T * T) * 60.0 * s * (1.0 - 3.0 * s + 2.0 * s2)
        return theta, rate, accel

    def reference(self, t_s: float) -> tuple[np.ndarray, float, float]:
        """(``q_RN`` at ``t_s``, rate, acceleration about the axis)."""
        theta, rate, accel = self.at(t_s)
        half = 0.5 * theta
        sn = detmath.sin(half)
        turn = np.array([sn * self.axis[0], sn * self.axis[1], sn * self.axis[2], detmath.cos(half)])
        return quat_multiply(turn, self.q0), rate, accel

    def error(self, q_BN, t_s: float) -> tuple[np.ndarray, np.ndarray, float, float]:
        """(attitude error ``e`` [rad, B], the axis in B, rate, acceleration) of attitude ``q_BN``
        at ``t_s``: ``q_BR = q_RN* (x) q_BN``, ``e = 2 sign(w) vec(q_BR)``."""
        q_RN, rate, accel = self.reference(t_s)
        conj = np.array([-q_RN[0], -q_RN[1], -q_RN[2], q_RN[3]])
        q_BR = quat_multiply(conj, np.asarray(q_BN, dtype=np.float64))
        sign = 2.0 if q_BR[3] >= 0.0 else -2.0
        e = np.array([sign * q_BR[0], sign * q_BR[1], sign * q_BR[2]])
        r = quat_dcm_entries(q_BR[0], q_BR[1], q_BR[2], q_BR[3])  # maps B to R; its transpose R to B
        a = self.axis
        a_B = np.array([r[c] * a[0] + r[3 + c] * a[1] + r[6 + c] * a[2] for c in range(3)])
        return e, a_B, rate, accel


class SlewController(Model):
    """PD attitude control along a :class:`RestToRestSlew` (see the module): ``kp`` [N m/rad],
    ``kd`` [N m s/rad], feed-forward inertia ``inertia_ff_kgm2`` about the axis, torque limited
    to ``max_torque_Nm`` per axis; ``body`` names the vehicle the wrench is for. Without a valid
    attitude and rate measurement the torque is zero."""

    inputs = {"attitude": In(AttitudeMeasurement), "rates": In(ImuMeasurement)}
    outputs = {"wrench": Out(Wrench)}
    feed_through = True

    def __init__(
        self,
        name: str,
        body: str,
        slew: RestToRestSlew,
        kp: float,
        kd: float,
        inertia_ff_kgm2: float = 0.0,
        max_torque_Nm: float = 1.0,
        rate_hz: float = 10.0,
    ):
        super().__init__(name)
        for what, value in (("kp", kp), ("kd", kd), ("inertia_ff_kgm2", inertia_ff_kgm2)):
            if not (np.isfinite(value) and value >= 0):
                raise ValueError(f"{name}: {what} must be finite and non-negative, got {value}")
        if not (np.isfinite(max_torque_Nm) and max_torque_Nm > 0):
            raise ValueError(f"{name}: max_torque_Nm must be finite and positive, got {max_torque_Nm}")
        self.body = body
        self.slew = slew
        self.kp, self.kd, self.inertia_ff = float(kp), float(kd), float(inertia_ff_kgm2)
        self.max_torque_Nm = float(max_torque_Nm)
        self.io_schedule = FixedRate(rate_hz)

    def torque(self, q_BN, omega_B, t_s: float) -> np.ndarray:
        """The law's torque [N m, B] for the measured ``q_BN`` and ``omega_B`` at ``t_s``."""
        e, a_B, rate, accel = self.slew.error(q_BN, t_s)
        lim = self.max_torque_Nm
        out = np.empty(3)
        for c in range(3):
            tau = -self.kp * e[c] - self.kd * (omega_B[c] - rate * a_B[c]) + self.inertia_ff * accel * a_B[c]
            out[c] = min(max(tau, -lim), lim)
        return out

    def update_flow_outs(self, t_ns: int) -> None:
        att, imu = self.read("attitude"), self.read("rates")
        wrench = Wrench(body=self.body, frame=Wrench.BODY)
        if att is not None and imu is not None and att.valid and imu.valid:
            q = att.q_BN
            w = imu.omega_BN_B
            tau = self.torque((q.x, q.y, q.z, q.w), (w.x, w.y, w.z), t_ns / NS_PER_S)
            wrench.torque.x, wrench.torque.y, wrench.torque.z = float(tau[0]), float(tau[1]), float(tau[2])
        self.write("wrench", wrench)


class SlewMonitor(Model):
    """The true attitude error along a :class:`RestToRestSlew` (output ``error``, rad, B) and the
    slew's residual, from the vehicle's ``state`` at its I/O steps: ``max_residual_rad`` (the
    largest error from the slew's end on), ``last_outside_s`` (the last instant from the slew's
    end on at which the error exceeded ``tolerance_rad``; None: never), ``last_error_rad``."""

    inputs = {"state": In(VehicleState)}
    outputs = {"error": Out(Vector3)}
    feed_through = False

    def __init__(self, name: str, slew: RestToRestSlew, tolerance_rad: float, rate_hz: float = 10.0):
        super().__init__(name)
        if not (np.isfinite(tolerance_rad) and tolerance_rad > 0):
            raise ValueError(f"{name}: tolerance_rad must be finite and positive, got {tolerance_rad}")
        self.slew = slew
        self.tolerance_rad = float(tolerance_rad)
        self.io_schedule = FixedRate(rate_hz)
        self.max_residual_rad = 0.0
        self.last_outside_s = None
        self.last_error_rad = 0.0
        self.seen_ns = -1  # the instant of the last state taken into account

    def _error(self, state) -> np.ndarray:
        q = state.q_BN
        return self.slew.error((q.x, q.y, q.z, q.w), state.t_ns / NS_PER_S)[0]

    def end_io_step(self, t0_ns: int, t1_ns: int) -> None:
        """Take the latest state into the residual (sets max_residual_rad, last_outside_s,
        last_error_rad, seen_ns)."""
        state = self.read("state")
        if state is None or state.t_ns <= self.seen_ns:
            return
        self.seen_ns = state.t_ns
        t_s = state.t_ns / NS_PER_S
        err = _norm3(self._error(state))
        self.last_error_rad = err
        if t_s >= self.slew.end_s:
            self.max_residual_rad = max(self.max_residual_rad, err)
            if err > self.tolerance_rad:
                self.last_outside_s = t_s

    def update_flow_outs(self, t_ns: int) -> None:
        state = self.read("state")
        if state is not None:
            e = self._error(state)
            self.write("error", _vector3(e[0], e[1], e[2]))


__all__ = ["FlexibleSpacecraftDynamics", "RestToRestSlew", "SlewController", "SlewMonitor"]
