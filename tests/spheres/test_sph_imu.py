"""IMU simulator: ranges and saturation, noise RMS (a chi-square test), sample spacing, faults."""

import math

import numpy as np
from scipy import stats
from test_sph_helpers import MS, sensor_island

from hopsim.bus import MemoryRecorder
from hopsim.kernel import ContinuousModel, NoIo
from hopsim.schemas import Fault

G0 = 9.80665


def samples(rec, topic="sph1/imu"):
    t, w, a = [], [], []
    for e in rec.envelopes:
        if e.topic == topic:
            t += list(e.payload.t_ns)
            w += list(e.payload.omega_B)
            a += list(e.payload.accel_B)
    return np.array(t), np.array(w).reshape(-1, 3), np.array(a).reshape(-1, 3)


class Push(ContinuousModel):
    """A constant body-frame force at the centre of mass (N)."""

    io_schedule = NoIo()

    def __init__(self, name, body, force_B):
        super().__init__(name)
        self.body, self.force_B = body, np.array(force_B, float)

    def pre_deriv(self, t_s):
        self.body.add_force_B(self.force_B)


def test_gyros_clip_at_50_deg_s():
    rec = MemoryRecorder()
    sim, _body, _imu, _ = sensor_island(omega0=(0, 0, math.radians(60)), recorder=rec)
    sim.advance_to(0.5)
    _, w, _ = samples(rec)
    assert len(w) == 27
    assert np.allclose(w[:, 2], math.radians(50), rtol=0, atol=1e-12)
    assert np.allclose(w[:, :2], 0, atol=1e-12)


def test_accelerometer_clips_at_20_g_and_reads_lower_values_to_its_resolution():
    for g_level, expected in ((30.0, 20.0), (0.5, 0.5)):
        rec = MemoryRecorder()

        def push(sim, body, g=g_level):
            sim.add_model(Push("push", body, (body.mass_kg * g * G0, 0, 0)), "sph1")

        sim, _body, _imu, _ = sensor_island(recorder=rec, extra=push)
        sim.advance_to(0.3)
        _, _, a = samples(rec)
        assert np.allclose(a[:, 0], expected * G0, rtol=0, atol=0.5 * 5e-6 * G0 + 1e-12)
        assert np.allclose(a[:, 1:], 0, atol=1e-12)


def test_samples_are_18_ms_apart_and_delivered_at_10_hz():
    rec = MemoryRecorder()
    sim, *_ = sensor_island(recorder=rec)
    sim.advance_to(1.0)
    t, _, _ = samples(rec)
    assert list(t) == [18 * MS * k for k in range(1, 56)]
    deliveries = [e.t_ns for e in rec.envelopes if e.topic == "sph1/imu"]
    assert deliveries == [100 * MS * k for k in range(1, 11)]


def test_noise_has_the_specified_rms():
    """Chi-square test of each axis' sample variance against the specified RMS.

    Gyro: 0.05 deg/s/sqrt(Hz) over 100 Hz = 0.5 deg/s; accelerometer: 20 and 200 micro-g RMS in
    its two bands = 201 micro-g. Quantization adds under 0.05 % to the variances. The six
    two-sided tests together fail falsely with probability 1e-6.
    """
    rec = MemoryRecorder()
    sim, *_ = sensor_island(imu={"imu.noise_on": True}, recorder=rec, seed=7)
    sim.advance_to(4000 * 0.018 + 0.05)
    _, w, a = samples(rec)
    n = len(w)
    assert n >= 4000
    sigma = [math.radians(0.5)] * 3 + [math.sqrt(20.0**2 + 200.0**2) * 1e-6 * G0] * 3
    alpha = 1e-6 / 6
    lo, hi = stats.chi2.ppf(alpha / 2, n), stats.chi2.ppf(1 - alpha / 2, n)
    for k, x in enumerate(np.hstack([w, a]).T):
        chi = float(np.sum(x**2)) / sigma[k] ** 2  # true mean is zero
        assert lo < chi < hi, f"axis {k}: RMS {np.sqrt(np.mean(x**2)):.3e}, specified {sigma[k]:.3e}"


def test_faults_bias_and_drop_samples():
    rec = MemoryRecorder()
    sim, *_ = sensor_island(recorder=rec)
    sim.schedule_fault(Fault(target="sph1_imu", kind="sensor_bias", index=3, value=0.01, duration_s=0.2), 0.3)
    sim.schedule_fault(Fault(target="sph1_imu", kind="dropout", index=-1, value=1.0), 0.7)
    sim.advance_to(1.0)
    t, _w, a = samples(rec)
    biased = (t > 300 * MS) & (t <= 500 * MS)
    assert np.allclose(a[biased, 0], 0.01) and np.allclose(a[~biased, 0], 0.0)
    assert t.max() < 700 * MS
