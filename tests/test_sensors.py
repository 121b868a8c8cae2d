"""Sensors measure the truth with the stated errors: the sample mean and standard deviation of
each error match the bias and sigma (fixed seed, thousands of samples, bounds of a few standard
errors), a dropout marks measurements invalid until cleared, and the same seed gives the same
measurements. The relative-state sensor (CmFrameStateSensor) against the Hill-frame state formed
in the test from its definition, and against the exact offset of two spacecraft on one circle."""

import math

import numpy as np
import pytest

from hopsim.actors.orbiting_spacecraft import OrbitingSpacecraft
from hopsim.actors.sensors import CmFrameStateSensor, GnssReceiver, Imu, StarTracker
from hopsim.bus.recorder import MemoryRecorder
from hopsim.dynamics.gravity import EARTH_MU
from hopsim.dynamics.integrators import DOP853
from hopsim.dynamics.orbital_elements import state_from_elements
from hopsim.dynamics.spatial import quat_conjugate, quat_multiply, quat_to_dcm
from hopsim.kernel import FixedRate, Model, Out, Simulation
from hopsim.schemas import Fault, Quaternion, Vector3, VehicleState

W = 0.02  # truth spin about z (rad/s)


def truth_at(t):
    """Spinning about z, moving on a line, accelerating along x: the state at t (s)."""
    q = np.array([0.0, 0.0, math.sin(0.5 * W * t), math.cos(0.5 * W * t)])
    return (
        q,
        np.array([7e6 + 10 * t, 5.0, -3.0]),
        np.array([10.0, 0.0, 0.0]),
        np.array([0.0, 0.0, W]),
        np.array([0.3, 0.0, -9.0]),
    )


class Truth(Model):
    outputs = {"state": Out(VehicleState)}
    io_schedule = FixedRate(10.0)
    feed_through = False

    def update_flow_outs(self, t_ns):
        q, r, v, w, a = truth_at(t_ns / 1e9)
        self.write(
            "state",
            VehicleState(
                vehicle="sc",
                t_ns=t_ns,
                q_BN=Quaternion(x=q[0], y=q[1], z=q[2], w=q[3]),
                r_BN_N=Vector3(x=r[0], y=r[1], z=r[2]),
                v_BN_N=Vector3(x=v[0], y=v[1], z=v[2]),
                omega_BN_B=Vector3(x=w[0], y=w[1], z=w[2]),
                a_BN_N=Vector3(x=a[0], y=a[1], z=a[2]),
            ),
        )


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
    out = run(
        GnssReceiver("gnss", "sc", sigma_pos_m=(3, 3, 6), sigma_vel_mps=0.1, bias_pos_m=(1, 0, -2), rate_hz=10.0), "fix"
    )
    errors = np.array([[m.r_BN_N.x, m.r_BN_N.y, m.r_BN_N.z] - truth_at(m.t_ns / 1e9)[1] for m in out[1:]])
    check(errors, [1, 0, -2], [3, 3, 6])
    gravity = np.array([0.0, 0.0, -9.0])
    out = run(
        Imu(
            "imu",
            "sc",
            gyro_sigma_radps=2e-5,
            gyro_bias_radps=(1e-5, 0, -1e-5),
            scale_factor=0.01,
            accel_sigma_mps2=1e-3,
            accel_bias_mps2=(0, 2e-3, 0),
            gravity_N=gravity,
            rate_hz=10.0,
        ),
        "imu",
    )
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


# ----------------------------------------------------------------------------- relative state
def _xyz(v):
    return np.array([v.x, v.y, v.z])


def hill_by_hand(r_c, v_c, r_d, v_d):
    """The deputy's relative state in the chief's Hill frame, from the definitions: rows x = r/|r|,
    z = h/|h|, y = z x x; omega = |h|/|r|^2 about z; rho' = C (v_d - v_c) - omega x rho."""
    x = r_c / np.linalg.norm(r_c)
    h = np.cross(r_c, v_c)
    z = h / np.linalg.norm(h)
    C = np.vstack([x, np.cross(z, x), z])
    rho = C @ (r_d - r_c)
    omega = np.array([0.0, 0.0, np.linalg.norm(h) / (r_c @ r_c)])
    return rho, C @ (v_d - v_c) - np.cross(omega, rho)


def test_relative_state_of_two_orbiting_spacecraft_is_the_hill_state_by_hand():
    """Two OrbitingSpacecraft (eccentric, differently inclined) feed the sensor; each measurement
    equals the relative state formed in the test from the two recorded states of that instant:
    in Hill and UVW (the same axes) and in N (the plain differences)."""
    recorder = MemoryRecorder()
    sim = Simulation(seed=1, recorder=recorder)
    for name, el in (
        ("chief", (6.9e6, 0.01, math.radians(51.6), 0.3, 0.5, 0.1)),
        ("deputy", (6.95e6, 0.02, math.radians(51.0), 0.31, 0.6, 0.05)),
    ):
        sim.add_island(name, integrator=DOP853(rtol=1e-10, atol=1e-6, max_step=10.0))
        r, v = state_from_elements(*el, EARTH_MU)
        sim.add_model(OrbitingSpacecraft(name, r, v, 100.0, np.diag([40.0, 50.0, 30.0]), rate_hz=1.0), name)
    for frame in ("hill", "uvw", "inertial"):
        sim.add_model(
            CmFrameStateSensor(
                f"rel_{frame}", "chief", "deputy", frame=frame, sigma_pos_m=0.0, sigma_vel_mps=0.0, rate_hz=1.0
            ),
            "chief",
            ties={"chief": "chief/state", "deputy": "deputy/state", "relative": f"chief/rel_{frame}"},
        )
    sim.advance_to(120.0)
    recorder.flush()
    states = {
        (e.payload.vehicle, e.payload.t_ns): e.payload
        for e in recorder.envelopes
        if e.topic in ("chief/state", "deputy/state")
    }
    for frame in ("hill", "uvw", "inertial"):
        published = [e for e in recorder.envelopes if e.topic == f"chief/rel_{frame}"]
        out = [e.payload for e in published]
        # the deputy's states, from the other island, arrive one step late: none at t = 0, then
        # each measurement is of the instant one second before it is published
        assert len(out) == 121 and not out[0].valid and all(m.valid and m.frame == frame for m in out[1:])
        assert [m.t_ns for m in out[1:]] == [e.t_ns - 1_000_000_000 for e in published[1:]]
        for m in out[1:]:
            c, d = states["chief", m.t_ns], states["deputy", m.t_ns]
            r_c, v_c, r_d, v_d = (_xyz(c.r_BN_N), _xyz(c.v_BN_N), _xyz(d.r_BN_N), _xyz(d.v_BN_N))
            rho, rho_dot = (r_d - r_c, v_d - v_c) if frame == "inertial" else hill_by_hand(r_c, v_c, r_d, v_d)
            assert np.linalg.norm(_xyz(m.r_DC_F) - rho) <= 1e-9 * np.linalg.norm(rho)
            assert np.linalg.norm(_xyz(m.v_DC_F) - rho_dot) <= 1e-9 * np.linalg.norm(rho_dot)


R_ORBIT, INCLINATION, RAAN = 6.9e6, math.radians(51.6), 0.7
N_ORBIT = math.sqrt(EARTH_MU / R_ORBIT**3)


class CircularOrbit(Model):
    """A spacecraft on a circular orbit (radius R_ORBIT, inclined, node RAAN) at argument of
    latitude ``phase + n t``: Kepler's exact solution."""

    outputs = {"state": Out(VehicleState)}
    io_schedule = FixedRate(10.0)
    feed_through = False

    def __init__(self, name, phase):
        super().__init__(name)
        self.phase = phase

    def update_flow_outs(self, t_ns):
        u = self.phase + N_ORBIT * t_ns / 1e9
        p = np.array([math.cos(RAAN), math.sin(RAAN), 0.0])
        q = np.array(
            [-math.sin(RAAN) * math.cos(INCLINATION), math.cos(RAAN) * math.cos(INCLINATION), math.sin(INCLINATION)]
        )
        r = R_ORBIT * (math.cos(u) * p + math.sin(u) * q)
        v = R_ORBIT * N_ORBIT * (-math.sin(u) * p + math.cos(u) * q)
        self.write(
            "state",
            VehicleState(
                vehicle=self.name,
                t_ns=t_ns,
                r_BN_N=Vector3(x=r[0], y=r[1], z=r[2]),
                v_BN_N=Vector3(x=v[0], y=v[1], z=v[2]),
            ),
        )


def run_pair(sensor, dtheta, duration_s=30.0, faults=()):
    recorder = MemoryRecorder()
    sim = Simulation(seed=3, recorder=recorder)
    sim.add_island("sc")
    sim.add_model(CircularOrbit("chief", 0.2), "sc", ties={"state": "sc/chief"})
    sim.add_model(CircularOrbit("deputy", 0.2 + dtheta), "sc", ties={"state": "sc/deputy"})
    sim.add_model(sensor, "sc", ties={"chief": "sc/chief", "deputy": "sc/deputy", "relative": "sc/relative"})
    for fault, t in faults:
        sim.schedule_fault(fault, t)
    sim.advance_to(duration_s)
    recorder.flush()
    return [e for e in recorder.envelopes if e.topic == "sc/relative"]


def quiet(**kw):
    return CmFrameStateSensor("rel", "chief", "deputy", sigma_pos_m=0.0, sigma_vel_mps=0.0, rate_hz=10.0, **kw)


def test_a_spacecraft_ahead_on_the_same_circular_orbit_is_fixed_in_the_hill_frame():
    """Ahead by dtheta on the same circle: rho = (R cos dtheta - R, R sin dtheta, 0), rho' = 0."""
    for dtheta in (1e-4, 0.01, -0.3):
        out = [e.payload for e in run_pair(quiet(), dtheta)]
        expected = R_ORBIT * np.array([math.cos(dtheta) - 1.0, math.sin(dtheta), 0.0])
        assert len(out) == 301 and all(m.valid for m in out)
        for m in out:
            assert np.linalg.norm(_xyz(m.r_DC_F) - expected) <= 1e-9 * np.linalg.norm(expected)
            # zero, to the rounding of C (v_d - v_c) (|v_d - v_c| = 2 v sin(dtheta / 2))
            assert np.linalg.norm(_xyz(m.v_DC_F)) <= 1e-9 * R_ORBIT * N_ORBIT * abs(dtheta)


def test_a_deputy_on_another_island_is_measured_at_the_latest_common_instant():
    """States at 10 Hz, the deputy's from another island (a step late), the sensor at 1 Hz: each
    measurement is of the instant 0.1 s before its publication, with the states of that instant."""
    recorder = MemoryRecorder()
    sim = Simulation(seed=3, recorder=recorder)
    for island, name, phase in (("a", "chief", 0.2), ("b", "deputy", 0.21)):
        sim.add_island(island)
        sim.add_model(CircularOrbit(name, phase), island, ties={"state": f"{island}/{name}"})
    sim.add_model(
        CmFrameStateSensor("rel", "chief", "deputy", sigma_pos_m=0.0, sigma_vel_mps=0.0, rate_hz=1.0),
        "a",
        ties={"chief": "a/chief", "deputy": "b/deputy", "relative": "a/relative"},
    )
    sim.advance_to(5.0)
    recorder.flush()
    out = [e for e in recorder.envelopes if e.topic == "a/relative"]
    expected = R_ORBIT * np.array([math.cos(0.01) - 1.0, math.sin(0.01), 0.0])
    assert len(out) == 6 and not out[0].payload.valid
    for e in out[1:]:
        assert e.payload.valid and e.payload.t_ns == e.t_ns - 100_000_000
        assert np.linalg.norm(_xyz(e.payload.r_DC_F) - expected) <= 1e-9 * np.linalg.norm(expected)


def test_relative_sensor_faults_noise_and_bad_frame():
    dtheta = 0.01
    expected = R_ORBIT * np.array([math.cos(dtheta) - 1.0, math.sin(dtheta), 0.0])
    # dropout: invalid from the fault to its clearing, as the GNSS receiver's
    faults = [(Fault(target="rel", kind="dropout"), 10.05), (Fault(target="rel", kind="dropout", clear=True), 20.05)]
    out = [e.payload for e in run_pair(quiet(), dtheta, faults=faults)]
    invalid = [m.t_ns / 1e9 for m in out if not m.valid]
    assert invalid[0] == pytest.approx(10.05) and invalid[-1] == pytest.approx(20.0) and len(invalid) == 101
    assert all(_xyz(m.r_DC_F) @ _xyz(m.r_DC_F) == 0.0 for m in out if not m.valid)
    assert all(np.allclose(_xyz(m.r_DC_F), expected, rtol=1e-9) for m in out if m.valid)
    # sensor_bias: value (m) added to every position axis on top of bias_pos_m, until cleared
    faults = [
        (Fault(target="rel", kind="sensor_bias", value=3.0), 10.05),
        (Fault(target="rel", kind="sensor_bias", clear=True), 20.05),
    ]
    for e in run_pair(quiet(bias_pos_m=(1.0, 0.0, -2.0)), dtheta, faults=faults):
        m = e.payload
        bias = np.array([1.0, 0.0, -2.0]) + (3.0 if 10.05 <= e.t_ns / 1e9 < 20.05 else 0.0)
        assert np.allclose(_xyz(m.r_DC_F) - expected, bias, rtol=0, atol=1e-9 * R_ORBIT * dtheta)
    # noise: the errors have their sigma (per axis of the Hill frame); the bias as configured
    sensor = CmFrameStateSensor(
        "rel",
        "chief",
        "deputy",
        sigma_pos_m=(0.5, 0.5, 1.0),
        sigma_vel_mps=0.01,
        bias_pos_m=(0.2, 0.0, 0.0),
        rate_hz=10.0,
    )
    out = [e.payload for e in run_pair(sensor, dtheta, duration_s=400.0)]
    check(np.array([_xyz(m.r_DC_F) - expected for m in out[1:]]), [0.2, 0, 0], [0.5, 0.5, 1.0])
    check(np.array([_xyz(m.v_DC_F) for m in out[1:]]), [0, 0, 0], [0.01] * 3)
    with pytest.raises(ValueError, match="frame must be one of"):
        CmFrameStateSensor("rel", "chief", "deputy", frame="ric")
