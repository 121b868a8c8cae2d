"""Sensors measure the truth with the stated errors: the sample mean and standard deviation of
each error match the bias and sigma (fixed seed, thousands of samples, bounds of a few standard
errors), a dropout marks measurements invalid until cleared, and the same seed gives the same
measurements."""
import math

import numpy as np
import pytest

from hopsim.actors.sensors import GnssReceiver, Imu, StarTracker
from hopsim.bus.recorder import MemoryRecorder
from hopsim.dynamics.spatial import quat_conjugate, quat_multiply, quat_to_dcm
from hopsim.kernel import FixedRate, Model, Out, Simulation
from hopsim.schemas import Fault, Quaternion, Vector3, VehicleState

W = 0.02            # truth spin about z (rad/s)


def truth_at(t):
    """Spinning about z, moving on a line, accelerating along x: the state at t (s)."""
    q = np.array([0.0, 0.0, math.sin(0.5 * W * t), math.cos(0.5 * W * t)])
    return q, np.array([7e6 + 10 * t, 5.0, -3.0]), np.array([10.0, 0.0, 0.0]), np.array([0.0, 0.0, W]), \
        np.array([0.3, 0.0, -9.0])


class Truth(Model):
    outputs = {"state": Out(VehicleState)}
    io_schedule = FixedRate(10.0)
    feed_through = False

    def update_flow_outs(self, t_ns):
        q, r, v, w, a = truth_at(t_ns / 1e9)
        self.write("state", VehicleState(vehicle="sc", t_ns=t_ns, q_BN=Quaternion(x=q[0], y=q[1], z=q[2], w=q[3]),
                                         r_BN_N=Vector3(x=r[0], y=r[1], z=r[2]), v_BN_N=Vector3(x=v[0], y=v[1], z=v[2]),
                                         omega_BN_B=Vector3(x=w[0], y=w[1], z=w[2]), a_BN_N=Vector3(x=a[0], y=a[1], z=a[2])))


def run(sensor, port, duration_s=400.0, faults=(), seed=3):
    recorder = MemoryRecorder()
    sim = Simulation(seed=seed, recorder=recorder)
    sim.add_island("sc")
    sim.add_model(Truth("truth"), "sc", ties={"state": "sc/state"})
    sim.add_model(sensor, "sc", ties={"state": "sc/state", port: f"sc/{port}"})
    for fault, t in faults:
        sim.schedule_fault(fault, t)
    sim.advance_to(duration_s)
    recorder.flush()
    return [e.payload for e in recorder.envelopes if e.topic == f"sc/{port}"]


def check(errors, bias, sigma):
    n = len(errors)
    mean, std = errors.mean(axis=0), errors.std(axis=0, ddof=1)
    assert np.all(np.abs(mean - bias) < 4 * np.asarray(sigma) / math.sqrt(n))
    assert np.allclose(std, sigma, rtol=4 / math.sqrt(2 * n) * 1.5)


def test_star_tracker_error_has_its_bias_and_sigma():
    bias, sigma = np.array([2e-4, -1e-4, 5e-5]), np.array([1e-4, 1e-4, 3e-4])
    out = run(StarTracker("st", "sc", sigma_rad=sigma, bias_rad=bias, rate_hz=10.0), "attitude")
    errors = []
    for m in out[1:]:
        q_true = truth_at(m.t_ns / 1e9)[0]
        dq = quat_multiply(quat_conjugate(q_true), np.array([m.q_BN.x, m.q_BN.y, m.q_BN.z, m.q_BN.w]))
        errors.append(2 * dq[:3] * np.sign(dq[3]))
    check(np.array(errors), bias, sigma)


def test_gnss_and_imu_errors_have_their_bias_and_sigma():
    out = run(GnssReceiver("gnss", "sc", sigma_pos_m=(3, 3, 6), sigma_vel_mps=0.1, bias_pos_m=(1, 0, -2), rate_hz=10.0),
              "fix")
    errors = np.array([[m.r_BN_N.x, m.r_BN_N.y, m.r_BN_N.z] - truth_at(m.t_ns / 1e9)[1] for m in out[1:]])
    check(errors, [1, 0, -2], [3, 3, 6])
    gravity = np.array([0.0, 0.0, -9.0])
    out = run(Imu("imu", "sc", gyro_sigma_radps=2e-5, gyro_bias_radps=(1e-5, 0, -1e-5), scale_factor=0.01,
                  accel_sigma_mps2=1e-3, accel_bias_mps2=(0, 2e-3, 0), gravity_N=gravity, rate_hz=10.0), "imu")
    gyro, accel = [], []
    for m in out[1:]:
        q, _, _, w, a = truth_at(m.t_ns / 1e9)
        gyro.append([m.omega_BN_B.x, m.omega_BN_B.y, m.omega_BN_B.z] - 1.01 * w)
        accel.append([m.accel_B.x, m.accel_B.y, m.accel_B.z] - quat_to_dcm(q).T @ (a - gravity))
    check(np.array(gyro), [1e-5, 0, -1e-5], [2e-5] * 3)
    check(np.array(accel), [0, 2e-3, 0], [1e-3] * 3)


def test_dropout_and_seed():
    faults = [(Fault(target="gnss", kind="dropout"), 10.05), (Fault(target="gnss", kind="dropout", clear=True), 20.05)]
    out = run(GnssReceiver("gnss", "sc", rate_hz=10.0), "fix", duration_s=30.0, faults=faults)
    invalid = [m.t_ns / 1e9 for m in out if not m.valid]
    # the fault itself is an update of the outputs (10.05 s), then every 0.1 s step to the clearing
    assert invalid[0] == pytest.approx(10.05) and invalid[-1] == pytest.approx(20.0) and len(invalid) == 101
    again = run(GnssReceiver("gnss", "sc", rate_hz=10.0), "fix", duration_s=30.0, faults=faults)
    assert [m.SerializeToString() for m in again] == [m.SerializeToString() for m in out]
    other = run(GnssReceiver("gnss", "sc", rate_hz=10.0), "fix", duration_s=30.0, faults=faults, seed=4)
    assert [m.r_BN_N.x for m in other] != [m.r_BN_N.x for m in out]
