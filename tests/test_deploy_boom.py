"""deploy_boom: a prescribed boom on a free hub, against analytic momentum balance."""

import numpy as np
import pytest

from hopsim.dynamics import center_of_mass, spatial_momentum
from hopsim.scenarios import ScenarioError
from hopsim.scenarios.deploy_boom import DeployBoomParams, boom_moves
from hopsim.scenarios.runner import run_scenario

S = 1_000_000_000


def run(seconds=None, **overrides):
    p = DeployBoomParams(**overrides)
    duration = seconds or sum(m.duration + p.gap_s for _, m in boom_moves(p)) + 1.0
    r = run_scenario("deploy_boom", overrides, duration_s=duration, keep_stream=True)
    joints = [e.payload for e in r.recorder.envelopes if e.topic == "spacecraft/joints"]
    hub = [e.payload for e in r.recorder.envelopes if e.topic == "spacecraft/hub_state"]
    return p, r, joints, hub


@pytest.fixture(scope="module")
def on_axis():
    return run()


def test_boom_follows_each_of_the_four_profiles(on_axis):
    p, _r, joints, _ = on_axis
    moves = boom_moves(p)
    checked = 0
    for js in joints:
        t = js.t_ns / S
        for start, move in moves:
            if start <= t <= start + move.duration:
                value, rate, _ = move.evaluate(t - start)
                assert js.q[-1] == pytest.approx(value, abs=1e-9)
                assert js.u[-1] == pytest.approx(rate, abs=1e-9)
                checked += 1
    assert checked > 400
    assert joints[-1].q[-1] == pytest.approx(0.0, abs=1e-9) and joints[-1].u[-1] == pytest.approx(0.0, abs=1e-12)


def test_hub_recoils_by_the_mass_ratio_and_needs_the_reduced_mass_force(on_axis):
    p, _r, joints, hub = on_axis
    m_h, m_b = p.hub_mass_kg, p.boom_mass_kg
    for js, h in zip(joints, hub):
        ext = js.q[-1]
        assert h.r_BN_N.x == pytest.approx(-m_b / (m_h + m_b) * ext, abs=1e-9)
        assert h.omega_BN_B.x == h.omega_BN_B.y == h.omega_BN_B.z == 0.0
    # during the first (bang-bang) move the boom joint carries F = m_h m_b / (m_h + m_b) * a
    start, first = boom_moves(p)[0]
    mid_accel = [js for js in joints if start + 0.5 < js.t_ns / S < start + first.duration / 2 - 0.5]
    expected = m_h * m_b / (m_h + m_b) * p.accel_max_mps2
    assert mid_accel and all(js.tau[-1] == pytest.approx(expected, rel=1e-9) for js in mid_accel)


def test_off_axis_boom_turns_the_hub_and_conserves_momentum():
    p, r, joints, hub = run(seconds=40.0, boom_offset_m=(0.0, 0.3, 0.1))
    d = r.sim.model("spacecraft")
    h = spatial_momentum(d.arrays, d.Q, d.U)
    peak = p.boom_mass_kg * max(abs(js.u[-1]) for js in joints)  # the boom's largest momentum
    assert np.linalg.norm(h) < 1e-9 * peak  # zero to RK4's truncation error
    c0, _ = center_of_mass(d.arrays, d.x0[: d.nq])
    c1, v1 = center_of_mass(d.arrays, d.Q, d.U)
    assert np.allclose(c0, c1, atol=1e-9) and np.linalg.norm(v1) < 1e-9 * peak
    assert max(abs(x.omega_BN_B.z) for x in hub) > 1e-4  # the hub did turn


def test_an_impossible_move_says_why():
    with pytest.raises(ScenarioError, match="coast"):
        run_scenario("deploy_boom", {"coast_s": 100.0}, duration_s=1.0)
