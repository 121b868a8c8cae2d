"""Spacecraft sensors that measure a vehicle's truth state (Dshell's NoisyAttitude, NoisyIMU and a
GNSS-like NodePosVelSensor with noise).

Each reads the vehicle's ``state`` (``hopsim.VehicleState``: r_BN_N, v_BN_N, q_BN, omega_BN_B,
a_BN_N) at its I/O steps (``rate_hz``) and publishes a measurement drawn with the model's own
seeded generator (same run seed, same noise):

- :class:`StarTracker`: q_meas = q_BN (x) dq(theta), theta the attitude error in B (rad): a bias
  ``bias_rad`` (per axis) plus white noise of standard deviation ``sigma_rad`` per axis;
- :class:`GnssReceiver`: r_BN_N + b_r + w_r (``sigma_pos_m``, ``bias_pos_m``) and v_BN_N + w_v
  (``sigma_vel_mps``);
- :class:`Imu`: omega_meas = (1 + scale_factor) omega_BN_B + gyro bias + white noise
  (``gyro_sigma_radps``), and the specific force in B, f_B = R(q_BN)^T (a_BN_N - g_N), with
  ``accel_sigma_mps2`` and ``accel_bias_mps2`` (``g_N``: the gravity the vehicle falls under,
  which an accelerometer does not sense; zero in free space).

- :class:`CmFrameStateSensor`: a deputy's centre-of-mass position and velocity relative to a chief's
  in a frame of the chief (Hill/LVLH, UVW or inertial), with ``sigma_pos_m``, ``bias_pos_m`` and
  ``sigma_vel_mps`` in that frame's axes; it reads both vehicles' ``state``.

Faults: ``sensor_bias`` (``value`` added to every axis's bias, in the sensor's unit), ``noise_scale``
(noise times ``value``), ``dropout`` (measurements marked invalid until cleared).
"""

from __future__ import annotations

import numpy as np

from hopsim.dynamics import detlinalg, detmath, detrandom
from hopsim.dynamics.orbit_frames import hill_dcm, hill_rate
from hopsim.dynamics.spatial import cross_array, quat_multiply, quat_normalize, quat_to_dcm
from hopsim.kernel import FixedRate, In, Model, Out
from hopsim.schemas import (
    AttitudeMeasurement,
    ImuMeasurement,
    PositionVelocityMeasurement,
    Quaternion,
    RelativeStateMeasurement,
    Vector3,
    VehicleState,
)


def _v(a) -> Vector3:
    return Vector3(x=float(a[0]), y=float(a[1]), z=float(a[2]))


def _xyz(v) -> np.ndarray:
    return np.array([v.x, v.y, v.z])


def _nonnegative(name, what, value) -> np.ndarray:
    v = np.broadcast_to(np.asarray(value, dtype=float), (3,)).copy()
    if not np.isfinite(v).all() or (v < 0).any():
        raise ValueError(f"{name}: {what} must be finite and non-negative (one value or one per axis), got {value}")
    return v


def _finite(name, what, value) -> np.ndarray:
    v = np.broadcast_to(np.asarray(value, dtype=float), (3,)).copy()
    if not np.isfinite(v).all():
        raise ValueError(f"{name}: {what} must be finite (one value or one per axis), got {value}")
    return v


def small_rotation(theta) -> np.ndarray:
    """The unit quaternion (scalar last) of the rotation vector ``theta`` (rad)."""
    theta = np.asarray(theta, dtype=float)
    angle = detlinalg.norm(theta)
    if angle < 1e-12:
        return quat_normalize(np.array([0.5 * theta[0], 0.5 * theta[1], 0.5 * theta[2], 1.0]))
    axis = theta / angle
    return np.concatenate([detmath.sin(0.5 * angle) * axis, [detmath.cos(0.5 * angle)]])


class NoisySensor(Model):
    """What the sensors share: the truth input, the rate, the faults (see the module)."""

    inputs = {"state": In(VehicleState)}
    feed_through = False
    accepts_faults = {"sensor_bias": ("value", "clear"), "noise_scale": ("value", "clear"), "dropout": ("clear",)}

    def __init__(self, name: str, vehicle: str, rate_hz: float):
        super().__init__(name)
        if not (np.isfinite(rate_hz) and 0 < rate_hz <= 1e4):
            raise ValueError(f"{name}: rate_hz must lie in (0, 1e4], got {rate_hz}")
        self.vehicle = vehicle
        self.io_schedule = FixedRate(rate_hz)
        self.fault_bias = 0.0
        self.noise_scale = 1.0
        self.dropped = False

    def on_fault(self, fault, t_ns: int) -> None:
        if fault.kind == "sensor_bias":
            self.fault_bias = 0.0 if fault.clear else fault.value
        elif fault.kind == "noise_scale":
            self.noise_scale = 1.0 if fault.clear else fault.value
        elif fault.kind == "dropout":
            self.dropped = not fault.clear

    def noise(self, sigma: np.ndarray) -> np.ndarray:
        """White noise of standard deviation ``sigma`` per axis (scaled by a noise_scale fault);
        drawn at every measurement, valid or not, so a dropout shifts no later draw."""
        return self.noise_scale * sigma * detrandom.standard_normal(self.rng, 3)


class StarTracker(NoisySensor):
    """The attitude q_BN with a bias and white noise (rad, body axes)."""

    outputs = {"attitude": Out(AttitudeMeasurement)}

    def __init__(self, name: str, vehicle: str, sigma_rad=1e-4, bias_rad=0.0, rate_hz: float = 4.0):
        super().__init__(name, vehicle, rate_hz)
        self.sigma_rad = _nonnegative(name, "sigma_rad", sigma_rad)
        self.bias_rad = _finite(name, "bias_rad", bias_rad)

    def update_flow_outs(self, t_ns: int) -> None:
        truth = self.read("state")
        theta = self.bias_rad + self.fault_bias + self.noise(self.sigma_rad)
        if truth is None or self.dropped:
            self.write("attitude", AttitudeMeasurement(vehicle=self.vehicle, t_ns=t_ns, q_BN=Quaternion(w=1.0)))
            return
        q = truth.q_BN
        measured = quat_normalize(quat_multiply(np.array([q.x, q.y, q.z, q.w]), small_rotation(theta)))
        self.write(
            "attitude",
            AttitudeMeasurement(
                vehicle=self.vehicle,
                t_ns=t_ns,
                valid=True,
                q_BN=Quaternion(x=measured[0], y=measured[1], z=measured[2], w=measured[3]),
            ),
        )


class GnssReceiver(NoisySensor):
    """Position and velocity in N with white noise and a position bias."""

    outputs = {"fix": Out(PositionVelocityMeasurement)}

    def __init__(
        self, name: str, vehicle: str, sigma_pos_m=5.0, sigma_vel_mps=0.05, bias_pos_m=0.0, rate_hz: float = 1.0
    ):
        super().__init__(name, vehicle, rate_hz)
        self.sigma_pos_m = _nonnegative(name, "sigma_pos_m", sigma_pos_m)
        self.sigma_vel_mps = _nonnegative(name, "sigma_vel_mps", sigma_vel_mps)
        self.bias_pos_m = _finite(name, "bias_pos_m", bias_pos_m)

    def update_flow_outs(self, t_ns: int) -> None:
        truth = self.read("state")
        w_r, w_v = self.noise(self.sigma_pos_m), self.noise(self.sigma_vel_mps)
        if truth is None or self.dropped:
            self.write("fix", PositionVelocityMeasurement(vehicle=self.vehicle, t_ns=t_ns))
            return
        r, v = truth.r_BN_N, truth.v_BN_N  # 3-vectors as plain floats
        fix = PositionVelocityMeasurement(vehicle=self.vehicle, t_ns=t_ns, valid=True)
        fix.r_BN_N.x, fix.r_BN_N.y, fix.r_BN_N.z = [
            r_i + bias_i + self.fault_bias + w_i
            for r_i, bias_i, w_i in zip((r.x, r.y, r.z), self.bias_pos_m.tolist(), w_r.tolist())
        ]
        fix.v_BN_N.x, fix.v_BN_N.y, fix.v_BN_N.z = [v_i + w_i for v_i, w_i in zip((v.x, v.y, v.z), w_v.tolist())]
        self.write("fix", fix)


class Imu(NoisySensor):
    """Body rates and specific force with scale factor, biases and white noise."""

    outputs = {"imu": Out(ImuMeasurement)}

    def __init__(
        self,
        name: str,
        vehicle: str,
        gyro_sigma_radps=1e-5,
        gyro_bias_radps=0.0,
        scale_factor=0.0,
        accel_sigma_mps2=1e-4,
        accel_bias_mps2=0.0,
        gravity_N=(0.0, 0.0, 0.0),
        rate_hz: float = 10.0,
    ):
        super().__init__(name, vehicle, rate_hz)
        self.gyro_sigma = _nonnegative(name, "gyro_sigma_radps", gyro_sigma_radps)
        self.gyro_bias = _finite(name, "gyro_bias_radps", gyro_bias_radps)
        self.scale_factor = _finite(name, "scale_factor", scale_factor)
        self.accel_sigma = _nonnegative(name, "accel_sigma_mps2", accel_sigma_mps2)
        self.accel_bias = _finite(name, "accel_bias_mps2", accel_bias_mps2)
        self.gravity_N = _finite(name, "gravity_N", gravity_N)

    def update_flow_outs(self, t_ns: int) -> None:
        truth = self.read("state")
        w_g, w_a = self.noise(self.gyro_sigma), self.noise(self.accel_sigma)
        if truth is None or self.dropped:
            self.write("imu", ImuMeasurement(vehicle=self.vehicle, t_ns=t_ns))
            return
        q = truth.q_BN
        R = quat_to_dcm(np.array([q.x, q.y, q.z, q.w]))
        omega = (1.0 + self.scale_factor) * _xyz(truth.omega_BN_B) + self.gyro_bias + self.fault_bias + w_g
        f_B = detlinalg.matmul(R.T, _xyz(truth.a_BN_N) - self.gravity_N) + self.accel_bias + w_a
        self.write(
            "imu", ImuMeasurement(vehicle=self.vehicle, t_ns=t_ns, omega_BN_B=_v(omega), accel_B=_v(f_B), valid=True)
        )


# the frames CmFrameStateSensor measures in: the name it is given -> the name it publishes
RELATIVE_FRAMES = {"hill": "hill", "lvlh": "hill", "uvw": "uvw", "inertial": "inertial"}


def relative_state(frame: str, r_c, v_c, r_d, v_d) -> tuple[np.ndarray, np.ndarray]:
    """(rho_F m, rho_dot_F m/s): the deputy's position relative to the chief in ``frame`` (a
    published name of :data:`RELATIVE_FRAMES`) and its time derivative seen in that frame."""
    rho_N, drho_N = np.asarray(r_d, float) - r_c, np.asarray(v_d, float) - v_c
    if frame == "inertial":
        return rho_N, drho_N
    C_HN = hill_dcm(r_c, v_c)  # "hill" and "uvw" share their axes
    omega, _ = hill_rate(r_c, v_c)
    rho_H = detlinalg.matmul(C_HN, rho_N)
    return rho_H, detlinalg.matmul(C_HN, drho_N) - cross_array([0.0, 0.0, omega], rho_H)


class CmFrameStateSensor(NoisySensor):
    """A deputy spacecraft's centre-of-mass position and velocity relative to a chief's, in a frame
    of the chief (a relative-navigation sensor; after Dshell's CmFrameStateSensor, which gives
    only the attitude relative to such a frame).

    Inputs ``chief`` and ``deputy``: each vehicle's ``hopsim.VehicleState`` (e.g. an
    :class:`~hopsim.actors.orbiting_spacecraft.OrbitingSpacecraft`'s ``state``), of which it
    uses r_BN_N (m) and v_BN_N (m/s), both in the inertial frame N. The two states must be of the
    same instant (in low orbit a state one second old is 7.6 km off along-track), and a state
    from another island arrives one of its I/O steps late: the sensor keeps the states it
    receives and measures at the latest instant at which it has both (``t_ns`` of the
    measurement: that instant, one step behind the sensor's own when a vehicle lives on another
    island; publish both states at common instants, e.g. at the same rate). Output ``relative``
    (``hopsim.RelativeStateMeasurement``) at ``rate_hz``: with rho_N = r_d - r_c and
    rho_dot_N = v_d - v_c,

    - ``frame="hill"`` (alias ``"lvlh"``): the chief's Hill frame H (Schaub & Junkins,
      *Analytical Mechanics of Space Systems*, ch. 14; Basilisk's Hill frame): x = r_c/|r_c|
      (radial, outward), z = h/|h| with h = r_c x v_c (orbit normal), y = z x x (along-track).
      C_HN has these axes as rows; H turns at omega_HN = |h|/|r_c|^2 about z, so

          rho_H = C_HN rho_N,   rho_dot_H = C_HN rho_dot_N - omega_HN x rho_H

      (the transport theorem: the derivative seen in H, not the inertial one rotated into H);
    - ``frame="uvw"``: Vallado's RSW satellite frame (*Fundamentals of Astrodynamics and
      Applications*, 4th ed., 2013, sec. 3.3; called UVW in CCSDS conjunction data messages):
      R (U) radial, S (V) perpendicular to R in the orbit plane toward the motion, W (W) along h.
      These are the same axes as Hill's, so the numbers are the same; the name is kept in the
      message for the reader. (Dshell's LVLH, z toward the planet and y along -h, is another
      frame and is not offered here.)
    - ``frame="inertial"``: rho_N and rho_dot_N.

    Errors, in the chosen frame's axes: r_meas = rho_F + ``bias_pos_m`` + w_r (``sigma_pos_m``)
    and v_meas = rho_dot_F + w_v (``sigma_vel_mps``). Faults as the module's: ``sensor_bias``
    (m, added to the position bias), ``noise_scale`` and ``dropout``; a measurement is invalid
    (zero vectors, the sensor's instant) during a dropout or while no instant has both states.
    """

    inputs = {"chief": In(VehicleState), "deputy": In(VehicleState)}
    outputs = {"relative": Out(RelativeStateMeasurement)}
    KEPT_STATES = 64  # per vehicle: instants kept while waiting for the other's state

    def __init__(
        self,
        name: str,
        chief: str,
        deputy: str,
        frame: str = "hill",
        sigma_pos_m=0.1,
        sigma_vel_mps=1e-3,
        bias_pos_m=0.0,
        rate_hz: float = 1.0,
    ):
        super().__init__(name, deputy, rate_hz)
        if frame not in RELATIVE_FRAMES:
            raise ValueError(f"{name}: frame must be one of {sorted(RELATIVE_FRAMES)}, got {frame!r}")
        self.chief, self.deputy, self.frame = chief, deputy, RELATIVE_FRAMES[frame]
        self.sigma_pos_m = _nonnegative(name, "sigma_pos_m", sigma_pos_m)
        self.sigma_vel_mps = _nonnegative(name, "sigma_vel_mps", sigma_vel_mps)
        self.bias_pos_m = _finite(name, "bias_pos_m", bias_pos_m)
        # (r_BN_N, v_BN_N) of each vehicle by instant (ns), from the latest common instant on
        self.states: dict[str, dict[int, tuple[np.ndarray, np.ndarray]]] = {"chief": {}, "deputy": {}}

    def keep_states(self) -> None:
        """Keep the latest state of each vehicle by its instant (the ports hold only the latest)."""
        for port, kept in self.states.items():
            msg = self.read(port)
            if msg is not None and msg.t_ns not in kept:
                kept[msg.t_ns] = (_xyz(msg.r_BN_N), _xyz(msg.v_BN_N))
                if len(kept) > self.KEPT_STATES:
                    del kept[min(kept)]

    def start_hop(self, t0_ns: int, t1_ns: int) -> None:
        """Keep the states that arrived at this barrier (another island's may arrive between the
        sensor's steps and be replaced before the next)."""
        self.keep_states()

    def latest_common_instant(self) -> int | None:
        """The latest instant (ns) at which both vehicles' states are known, or None. Forgets the
        states older than that instant."""
        self.keep_states()
        common = self.states["chief"].keys() & self.states["deputy"].keys()
        if not common:
            return None
        t_common = max(common)
        for kept in self.states.values():
            for t in [t for t in kept if t < t_common]:
                del kept[t]
        return t_common

    def update_flow_outs(self, t_ns: int) -> None:
        t_state = self.latest_common_instant()
        w_r, w_v = self.noise(self.sigma_pos_m), self.noise(self.sigma_vel_mps)
        header = dict(chief=self.chief, deputy=self.deputy, frame=self.frame)
        if t_state is None or self.dropped:
            self.write("relative", RelativeStateMeasurement(**header, t_ns=t_ns))
            return
        (r_c, v_c), (r_d, v_d) = self.states["chief"][t_state], self.states["deputy"][t_state]
        rho, rho_dot = relative_state(self.frame, r_c, v_c, r_d, v_d)
        r = rho + self.bias_pos_m + self.fault_bias + w_r
        v = rho_dot + w_v
        self.write("relative", RelativeStateMeasurement(**header, t_ns=t_state, r_DC_F=_v(r), v_DC_F=_v(v), valid=True))


__all__ = [
    "RELATIVE_FRAMES",
    "CmFrameStateSensor",
    "GnssReceiver",
    "Imu",
    "NoisySensor",
    "StarTracker",
    "relative_state",
    "small_rotation",
]
