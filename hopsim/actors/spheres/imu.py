"""The IMU simulator of one SPHERES vehicle: three rate gyros and a three-axis accelerometer.

Each sample follows the metrology simulator's processing, in SI units: the true body rate and
specific force are clipped at the sensor ranges (50 deg/s, 20 g), white noise of the band RMS is
added (when enabled), the value is quantized (1 mV of gyro output, 5 micro-g), and scale-factor
errors and biases are applied. Samples are 18 ms apart; the noise bands (100 Hz, 500 Hz) are far
wider than the sampling rate, so successive samples' noise is independent.

The truth comes from the vehicle's dynamics actor at the end of every hop: within a hop every
force and torque is constant in body axes, so the specific force is constant and the body rate
varies at the hop's angular acceleration. A sample inside a hop is therefore taken from the
hop's end state, ``omega(t) = omega(t1) - omega_dot(t1) * (t1 - t)`` (exact up to the gyroscopic
term's change over the hop). Samples are delivered in batches at the delivery period, each with
its own time stamp.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from hopsim.actors.messages import imu_samples
from hopsim.actors.spheres.frames import dcm_c
from hopsim.actors.spheres.params import G0, ImuParams
from hopsim.actors.spheres.sensor_faults import SENSOR_FAULTS, SensorFaults
from hopsim.dynamics import detlinalg, detrandom
from hopsim.kernel import ContinuousModel, FixedRate, Out
from hopsim.kernel.simtime import seconds
from hopsim.schemas.spheres_pb2 import ImuSamples

_JIT = {"cache": True, "fastmath": False, "error_model": "numpy"}


@njit(**_JIT)
def _hop_truth(x, xd, support_N):
    """At the hop's end (state x, derivatives xd): the specific force (m/s^2, B), the body rate
    (rad/s) and the angular acceleration (rad/s^2), as one array of 9."""
    out = np.empty(9)
    f_B = detlinalg.matmul(dcm_c(x[6:10]).T, xd[3:6] + support_N)
    for j in range(3):
        out[j] = f_B[j]
        out[3 + j] = x[10 + j]
        out[6 + j] = xd[10 + j]
    return out


@njit(**_JIT)
def _hop_samples(x, xd, support_N, t1_ns, first_ns, spacing_ns, n, out, start):
    """True values at the n sample instants ``first_ns + k spacing_ns`` of the hop that ends at
    t1_ns (state x, derivatives xd), written to rows ``start + k`` of out: the body rate
    ``omega(t1) - omega_dot(t1) age`` (rad/s, B; age = t1 - t in s) and the hop's specific force
    (m/s^2, B)."""
    truth = _hop_truth(x, xd, support_N)
    for k in range(n):
        age_s = (t1_ns - (first_ns + k * spacing_ns)) / 1_000_000_000
        row = start + k
        out[row, 0] = truth[3] - truth[6] * age_s
        out[row, 1] = truth[4] - truth[7] * age_s
        out[row, 2] = truth[5] - truth[8] * age_s
        out[row, 3] = truth[0]
        out[row, 4] = truth[1]
        out[row, 5] = truth[2]


@njit(**_JIT)
def _measure_quiet(true, limit, step, scale_error, bias, fault_bias):
    """:meth:`ImuSimulator.measure` without noise, compiled: the same element-wise operations."""
    y = np.minimum(np.maximum(true, -limit), limit)
    y = np.rint(y / step) * step
    return y * (1.0 + scale_error) + bias + fault_bias


class ImuSimulator(ContinuousModel):
    """Gyro and accelerometer samples of one vehicle.

    Output ``imu`` (ImuSamples): the samples taken since the previous delivery, in time order;
    the noise of a batch is drawn at its delivery, in sample order.
    Axes 0-2 are the gyros (rad/s), 3-5 the accelerometer axes (m/s^2).

    Faults: ``sensor_bias`` (index = axis 0..5 or -1 for all, value added in SI units),
    ``noise_scale`` (value multiplies the noise RMS), ``dropout`` (value = probability that a
    sample is lost; 1 loses them all); each for ``duration_s`` (0: until cleared).
    """

    outputs = {"imu": Out(ImuSamples, queue=True)}
    accepts_faults = SENSOR_FAULTS

    def __init__(self, name: str, body, params: ImuParams, vehicle: str | None = None):
        super().__init__(name)
        self.body = body
        self.params = params
        self.vehicle = vehicle or body.name
        self.io_schedule = FixedRate(1.0 / params.delivery_period_s)
        self.spacing_ns = seconds(params.sample_spacing_s)
        self.next_sample_ns = self.spacing_ns
        self.limit = np.array([np.radians(params.gyro_range_deg_s)] * 3 + [params.accel_range_g * G0] * 3)
        self.step = np.array([params.gyro_step_rad_s] * 3 + [params.accel_step_mps2] * 3)
        self.noise_rms = np.array([params.gyro_noise_rms_rad_s] * 3 + [params.accel_noise_rms_mps2] * 3)
        self.bias = np.zeros(6)
        self.scale_error = np.zeros(6)
        self.faults = SensorFaults(6)
        self.support_N = np.array([0.0, 0.0, params.gravity_mps2])
        self.pending_t: list[int] = []
        # true values of the pending samples: the first len(pending_t) rows (grown when full)
        self.pending_true = np.zeros((16, 6))
        self.ready_t: list[int] = []
        self.ready: list[np.ndarray] = []
        self.samples_taken = 0

    def setup(self, ctx) -> None:
        p = self.params
        if p.randomize_errors:
            rng = self.rng
            self.bias = np.concatenate(
                [rng.uniform(-1, 1, 3) * np.radians(p.gyro_bias_deg_s), rng.uniform(-1, 1, 3) * p.accel_bias_g * G0]
            )
            self.scale_error = np.concatenate(
                [rng.uniform(-1, 1, 3) * p.gyro_scale_error, rng.uniform(-1, 1, 3) * p.accel_scale_error]
            )

    def measure(self, true: np.ndarray) -> np.ndarray:
        """Samples (rows: gyro x y z, accel x y z) from true values: clip, noise, quantize, then
        scale-factor errors and biases."""
        if not self.params.noise_on:
            return _measure_quiet(true, self.limit, self.step, self.scale_error, self.bias, self.faults.bias)
        # np.clip(true, -limit, limit) and np.round(...) (to even), by their ufuncs: the same
        # numbers without the wrappers' overhead
        y = np.minimum(np.maximum(true, -self.limit), self.limit)
        y = y + self.noise_rms * self.faults.noise_scale * detrandom.standard_normal(self.rng, y.shape)
        y = np.rint(y / self.step) * self.step
        return y * (1.0 + self.scale_error) + self.bias + self.faults.bias

    def end_hop(self, t0_ns: int, t1_ns: int) -> None:
        """Record the true values at the sample instants inside the hop (t0, t1]."""
        first = self.next_sample_ns
        if first > t1_ns:
            return
        spacing = self.spacing_ns
        n = (t1_ns - first) // spacing + 1
        self.next_sample_ns = first + n * spacing
        if first <= t0_ns:  # instants at or before the hop's start are not sampled
            skip = (t0_ns - first) // spacing + 1
            first += skip * spacing
            n -= skip
            if n <= 0:
                return
        start = len(self.pending_t)
        if start + n > self.pending_true.shape[0]:
            grown = np.zeros((2 * (start + n), 6))
            grown[:start] = self.pending_true[:start]
            self.pending_true = grown
        self.pending_t += range(first, first + n * spacing, spacing)
        _hop_samples(
            self.body.x, self.body.xdot_last, self.support_N, t1_ns, first, spacing, n, self.pending_true, start
        )

    def _measure_pending(self) -> None:
        """Turn the recorded true values into samples, with the faults active at their instants."""
        if not self.pending_t:
            return
        times = self.pending_t
        true = self.pending_true[: len(times)]  # read before the next hop writes over it
        self.pending_t = []
        if self.faults.active():
            rows = []
            for t, row in zip(times, true):
                self.faults.expire(t)
                rows.append(self.measure(row[None, :])[0])
            y = np.array(rows)
        else:
            y = self.measure(true)
        self.samples_taken += len(times)
        if self.faults.dropout > 0.0:
            keep = self.rng.random(len(times)) >= self.faults.dropout
            times = [t for t, k in zip(times, keep) if k]
            y = y[keep]
        self.ready_t += times
        self.ready.append(y)

    def update_flow_outs(self, t_ns: int) -> None:
        self._measure_pending()
        if not self.ready_t:
            return
        y = self.ready[0] if len(self.ready) == 1 else np.vstack(self.ready)
        self.write("imu", imu_samples(self.vehicle, self.ready_t, y[:, :3], y[:, 3:]))
        self.ready_t, self.ready = [], []

    def check_fault(self, fault) -> None:
        self.faults.check(fault)

    def on_fault(self, fault, t_ns: int) -> None:
        self._measure_pending()  # samples taken before the fault are not affected by it
        self.faults.apply(fault, t_ns)
