"""Global metrology: the seed's cycle timing, ranges against independent geometry (with time of
flight), visibility limits, and the pose solver."""

import math

import numpy as np
import pytest
from scipy.optimize import brentq
from scipy.spatial.transform import Rotation
from test_sph_helpers import MS, sensor_island

from hopsim.actors.spheres.global_metrology import ranges_array
from hopsim.actors.spheres.params import TestbedParams, vehicle_params
from hopsim.actors.spheres.pose_solver import solve_pose
from hopsim.bus import MemoryRecorder
from hopsim.schemas import Fault

C = math.sqrt(1.40 * 287 * (22.3 + 273.14))  # the seed's speed of sound (m/s)


def recorded(rec, topic):
    return [(e.t_ns, e.payload) for e in rec.envelopes if e.topic == topic]


def test_cycles_follow_the_ir_period_beacon_spacing_and_delivery_delay():
    rec = MemoryRecorder()
    # requests at 200 ms (served by the 306 ms cycle) and exactly at 612 ms (too late for it)
    sim, _body, _imu, _gm = sensor_island(requests=[200 * MS, 612 * MS], recorder=rec)
    sim.advance_to(1.2)
    syncs = recorded(rec, "sph1/gm_sync")
    data = recorded(rec, "sph1/gm_ranges")
    assert [t for t, _ in syncs] == [306 * MS, 765 * MS]
    assert [t for t, _ in data] == [411 * MS, 870 * MS]
    for (t_sync, s), (t_data, d) in zip(syncs, data):
        assert list(d.beacon_fire_ns) == [t_sync + (5 + 20 * k) * MS for k in range(5)]
        assert d.cycle_start_ns == t_sync and s.data_due_ns == t_data
    # latency from request to data: 211 ms and 258 ms, within the seed's 105..258 ms
    assert (411 - 200, 870 - 612) == (211, 258)


def independent_ranges(r, q, v=None, testbed=None):
    """Ranges by direct geometry: receivers from the default layout, beacon angles, time of flight."""
    v = np.zeros(3) if v is None else v
    tb = testbed or TestbedParams()
    rx = np.array(vehicle_params().receivers.positions_B)  # faces x receivers x 3
    R = Rotation.from_quat(q).as_matrix()
    centre = tb.volume_max_N[0] / 2
    out = np.full((5, 6, 3), -1.0)
    for k, p_b in enumerate(np.array(tb.beacon_positions_N)):
        axis = np.full(3, centre) - p_b
        axis /= np.linalg.norm(axis)
        for f in range(6):
            face_c = r + R @ rx[f].mean(axis=0)
            n_face = np.cross(rx[f][1] - rx[f][0], rx[f][2] - rx[f][0])  # the listing's rule
            n_face *= np.sign(n_face @ rx[f].mean(axis=0)) / np.linalg.norm(n_face)
            n_out = R @ n_face
            to_face = (face_c - p_b) / np.linalg.norm(face_c - p_b)
            tx_angle = math.degrees(math.acos(np.clip(to_face @ axis, -1, 1)))
            rx_angle = math.degrees(math.acos(np.clip(n_out @ -to_face, -1, 1)))
            if tx_angle > 90 or rx_angle > 100:
                continue
            for j in range(3):
                s = R @ rx[f][j]
                tau = brentq(
                    lambda t, p_b=p_b, s=s: np.linalg.norm(p_b - (r + v * t + s)) - C * t, 0.0, 0.1, xtol=1e-15
                )
                out[k, f, j] = C * tau
    return out


@pytest.mark.parametrize("seed", range(4))
def test_ranges_equal_the_true_distances_with_noise_off(seed):
    rng = np.random.default_rng(seed)
    r = rng.uniform(0.6, 1.7, 3)
    q = Rotation.random(random_state=seed).as_quat()
    rec = MemoryRecorder()
    sim, *_ = sensor_island(r0=r, q0=q, requests=[10 * MS], recorder=rec)
    sim.advance_to(0.3)
    ((_, msg),) = recorded(rec, "sph1/gm_ranges")
    got = ranges_array(msg)
    ref = independent_ranges(r, q)
    assert np.array_equal(got < 0, ref < 0)
    assert 30 <= (got >= 0).sum() <= 90
    assert np.allclose(got, ref, rtol=0, atol=1e-9)


def test_a_moving_receiver_is_met_by_the_pulse_where_it_has_moved_to():
    r0, v = np.array([1.0, 1.2, 1.1]), np.array([0.05, -0.08, 0.03])
    rec = MemoryRecorder()
    sim, *_ = sensor_island(r0=r0, v0=v, requests=[10 * MS], recorder=rec)
    sim.advance_to(0.3)
    ((_, msg),) = recorded(rec, "sph1/gm_ranges")
    got = ranges_array(msg)
    for k, t_fire in enumerate(msg.beacon_fire_ns):
        ref = independent_ranges(r0 + v * t_fire / 1e9, (0, 0, 0, 1), v)[k]
        assert np.allclose(got[k], ref, rtol=0, atol=1e-9)
        static = independent_ranges(r0 + v * t_fire / 1e9, (0, 0, 0, 1))[k]
        assert np.abs(got[k] - static).max() > 1e-5  # the motion during flight matters


def test_faces_turned_away_give_no_reading():
    rec = MemoryRecorder()
    # one beacon only, straight above; the -Z face (index 5) looks away from it
    tb = TestbedParams(beacon_positions_N=((1.0, 1.0, 2.3),), beacon_directions_N=((0.0, 0.0, -1.0),))
    sim, *_ = sensor_island(r0=(1.0, 1.0, 1.0), testbed=tb, requests=[10 * MS], recorder=rec)
    sim.advance_to(0.3)
    ((t, msg),) = recorded(rec, "sph1/gm_ranges")
    got = ranges_array(msg)
    assert got.shape == (1, 6, 3) and t == 153 * MS + 25 * MS
    assert (got[0, 2] > 0).all() and (got[0, 5] == -1).all()
    # side faces see the beacon at 90 deg, within the 100 deg receiver limit
    assert (got[0, [0, 1, 3, 4]] > 0).all()


@pytest.mark.parametrize("seed", range(5))
def test_ranges_from_a_known_pose_solve_back_to_it(seed):
    rng = np.random.default_rng(100 + seed)
    r = rng.uniform(0.6, 1.7, 3)
    q = Rotation.random(random_state=100 + seed).as_quat()
    q = q if q[3] >= 0 else -q
    ranges = independent_ranges(r, q)
    tb = TestbedParams()
    rx = vehicle_params().receivers.positions_B
    r0 = r + rng.normal(0, 0.05, 3)
    q0 = (Rotation.from_rotvec(rng.normal(0, 0.15, 3)) * Rotation.from_quat(q)).as_quat()
    for start in ((r0, q0), (None, None)):
        fix = solve_pose(ranges, tb.beacon_positions_N, rx, *start)
        assert fix.converged
        assert np.linalg.norm(fix.r_N - r) < 1e-3
        angle = (Rotation.from_quat(fix.q_BN) * Rotation.from_quat(q).inv()).magnitude()
        assert angle < math.radians(0.1)


def test_faults_bias_the_ranges_and_drop_them():
    rec = MemoryRecorder()
    sim, *_ = sensor_island(requests=[10 * MS, 400 * MS], recorder=rec)
    sim.schedule_fault(Fault(target="sph1_gm", kind="sensor_bias", value=0.01, duration_s=0.3), 0.01)
    sim.schedule_fault(Fault(target="sph1_gm", kind="dropout", value=1.0), 0.4)
    sim.advance_to(1.0)
    (_, biased), (_, dropped) = recorded(rec, "sph1/gm_ranges")
    ref = independent_ranges(np.array([1.2, 1.1, 1.0]), (0, 0, 0, 1))
    got = ranges_array(biased)
    assert np.allclose(got[ref >= 0], ref[ref >= 0] + 0.01, atol=1e-9)
    assert (ranges_array(dropped) == -1).all()
