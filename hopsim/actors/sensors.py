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

Faults: ``sensor_bias`` (``value`` added to every axis's bias, in the sensor's unit), ``noise_scale``
(noise times ``value``), ``dropout`` (measurements marked invalid until cleared).
"""
from __future__ import annotations

import numpy as np

from hopsim.dynamics.spatial import quat_multiply, quat_normalize, quat_to_dcm
from hopsim.kernel import FixedRate, In, Model, Out
from hopsim.schemas import (AttitudeMeasurement, ImuMeasurement, PositionVelocityMeasurement, Quaternion, Vector3,
                            VehicleState)


def _v(a) -> Vector3:
    return Vector3(x=float(a[0]), y=float(a[1]), z=float(a[2]))


def _xyz(v) -> np.ndarray:
    return np.array([v.x, v.y, v.z])


def _nonnegative(name, what, value) -> np.ndarray:
    v = np.broadcast_to(np.asarray(value, dtype=float), (3,)).copy()
    if not np.all(np.isfinite(v)) or np.any(v < 0):
        raise ValueError(f"{name}: {what} must be finite and non-negative (one value or one per axis), got {value}")
    return v


def _finite(name, what, value) -> np.ndarray:
    v = np.broadcast_to(np.asarray(value, dtype=float), (3,)).copy()
    if not np.all(np.isfinite(v)):
        raise ValueError(f"{name}: {what} must be finite (one value or one per axis), got {value}")
    return v


def small_rotation(theta) -> np.ndarray:
    """The unit quaternion (scalar last) of the rotation vector ``theta`` (rad)."""
    angle = float(np.linalg.norm(theta))
    if angle < 1e-12:
        return quat_normalize(np.array([0.5 * theta[0], 0.5 * theta[1], 0.5 * theta[2], 1.0]))
    axis = np.asarray(theta) / angle
    return np.concatenate([np.sin(0.5 * angle) * axis, [np.cos(0.5 * angle)]])


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
        return self.noise_scale * sigma * self.rng.standard_normal(3)


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
        self.write("attitude", AttitudeMeasurement(
            vehicle=self.vehicle, t_ns=t_ns, valid=True,
            q_BN=Quaternion(x=measured[0], y=measured[1], z=measured[2], w=measured[3])))


class GnssReceiver(NoisySensor):
    """Position and velocity in N with white noise and a position bias."""

    outputs = {"fix": Out(PositionVelocityMeasurement)}

    def __init__(self, name: str, vehicle: str, sigma_pos_m=5.0, sigma_vel_mps=0.05, bias_pos_m=0.0,
                 rate_hz: float = 1.0):
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
        r = _xyz(truth.r_BN_N) + self.bias_pos_m + self.fault_bias + w_r
        v = _xyz(truth.v_BN_N) + w_v
        self.write("fix", PositionVelocityMeasurement(vehicle=self.vehicle, t_ns=t_ns, r_BN_N=_v(r), v_BN_N=_v(v),
                                                      valid=True))


class Imu(NoisySensor):
    """Body rates and specific force with scale factor, biases and white noise."""

    outputs = {"imu": Out(ImuMeasurement)}

    def __init__(self, name: str, vehicle: str, gyro_sigma_radps=1e-5, gyro_bias_radps=0.0, scale_factor=0.0,
                 accel_sigma_mps2=1e-4, accel_bias_mps2=0.0, gravity_N=(0.0, 0.0, 0.0), rate_hz: float = 10.0):
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
        f_B = R.T @ (_xyz(truth.a_BN_N) - self.gravity_N) + self.accel_bias + w_a
        self.write("imu", ImuMeasurement(vehicle=self.vehicle, t_ns=t_ns, omega_BN_B=_v(omega), accel_B=_v(f_B),
                                         valid=True))


__all__ = ["StarTracker", "GnssReceiver", "Imu", "NoisySensor", "small_rotation"]
