"""The rendezvous scenario: the chaser closes along V-bar by CW guidance and docks, spending
the propellant that the velocity change it delivered costs; a thruster stuck off (the pair that
closes along V-bar) changes the outcome; the same seed gives the same stream. The CW
state-transition matrix it relies on equals the matrix exponential of the CW system (SciPy)."""

import math

import numpy as np
import pytest
from scipy.linalg import expm

from hopsim.dynamics.orbit_frames import clohessy_wiltshire_matrix, clohessy_wiltshire_transition
from hopsim.scenarios import run_scenario

SHORT = {"start_m": 300.0, "waypoints_m": [60.0, 2.0], "leg_times_s": [500.0, 500.0]}


def test_cw_transition_is_the_exponential_of_the_cw_system():
    n = 1.1e-3
    for t in (10.0, 700.0, 5000.0):
        assert np.allclose(
            clohessy_wiltshire_transition(n, t),
            expm(clohessy_wiltshire_matrix(n) * t),
            rtol=1e-9,
            atol=1e-10 * max(1.0, t),
        )


@pytest.fixture(scope="module")
def nominal():
    return run_scenario("rendezvous", SHORT, seed=2, duration_s=1500.0, keep_stream=True)


def test_the_chaser_docks(nominal):
    out = nominal.outcome
    assert out["captured"] and out["docked"] and 500.0 < out["capture_s"] < 1500.0
    assert abs(out["final_range_m"] - 2.5) <= 1e-6 and out["relative_speed_mps"] <= 0.05
    # the tank's propellant against the impulse of every recorded firing: J / (Isp g0)
    envelopes = nominal.recorder.envelopes
    impulse = 0.0
    for i in range(6):
        pushes = [(e.t_ns, e.payload.force) for e in envelopes if e.topic == f"chaser/thr{i}/wrench"]
        for (t0, f), (t1, _) in zip(pushes, [*pushes[1:], (round(nominal.end_time_s * 1000000000.0), None)]):
            impulse += math.sqrt(f.x**2 + f.y**2 + f.z**2) * (t1 - t0) / 1e9
    assert 0 < out["fuel_used_kg"] < 1.0
    assert out["fuel_used_kg"] == pytest.approx(impulse / (220.0 * 9.80665), rel=1e-9)


def test_a_stuck_thruster_changes_the_outcome_and_runs_repeat(tmp_path):
    stuck = {**SHORT, "faults": [{"t_s": 1.0, "target": "chaser_thr2", "kind": "thruster_stuck_off"}]}
    failed = run_scenario("rendezvous", stuck, seed=2, duration_s=1500.0)
    assert not failed.outcome["captured"] and failed.outcome["final_range_m"] > 5.0
    runs = [run_scenario("rendezvous", SHORT, seed=2, duration_s=300.0, out=tmp_path / f"r{k}.mcap") for k in (1, 2)]
    assert runs[0].stream_sha256 == runs[1].stream_sha256 and runs[0].outcome == runs[1].outcome
