"""Thruster simulator: valve delays, impulse, geometry, barriers, propellant and faults.

References are the seed's numbers typed independently in test_sph_helpers (thrust law, mass,
inertia, the 12-thruster table) and rigid-body mechanics worked by hand.
"""

import numpy as np
import pytest
from test_sph_helpers import MS, SEED_INERTIA, SEED_MASS_KG, SEED_THRUST_N, SEED_THRUSTERS, bits, pulse, thruster_island

from hopsim.actors.spheres.params import G0, vehicle_params
from hopsim.schemas import Fault
from hopsim.schemas.spheres_pb2 import ThrusterCommand

T0 = 1000 * MS


def test_thrust_law_gives_the_seeds_level():
    assert vehicle_params().thrusters.thrust_N == pytest.approx(0.1436, abs=1e-12)
    assert pytest.approx(0.1436, abs=1e-12) == SEED_THRUST_N


@pytest.mark.parametrize("width_ms", [5, 6, 7, 20, 55, 100])
def test_a_pulse_yields_thrust_times_width_less_the_valve_delay(width_ms):
    # thrusters 2 and 12 push along +X at opposite corners: a pure force of two thrusters
    sim, body, thr = thruster_island([pulse(T0, width_ms * MS, 2, 12)])
    sim.advance_to(1.5)
    impulse = 2 * SEED_THRUST_N * max(width_ms - 6, 0) * 1e-3
    # the mass falls by tens of micrograms meanwhile: dv = int F/m dt, m linear in t
    momentum = 0.5 * (body.mass_kg + SEED_MASS_KG) * body.v_BN_N
    assert momentum[0] == pytest.approx(impulse, rel=1e-5, abs=1e-15)
    assert np.allclose(momentum[1:], 0.0, atol=1e-15)
    assert np.allclose(body.omega_BN_B, 0.0, atol=1e-12)
    if width_ms <= 6:
        assert thr.switch_log == []
    else:
        assert {t for t, _, o in thr.switch_log if o} == {T0 + 6 * MS}
        assert {t for t, _, o in thr.switch_log if not o} == {T0 + width_ms * MS}


@pytest.mark.parametrize(
    "pair,axis,sign",
    [((1, 11), 0, -1), ((2, 12), 0, 1), ((3, 8), 1, 1), ((4, 7), 1, -1), ((5, 9), 2, -1), ((6, 10), 2, 1)],
)
def test_each_pure_force_pair_gives_a_force_and_no_torque(pair, axis, sign):
    sim, body, _ = thruster_island([pulse(T0, 206 * MS, *pair)])
    sim.advance_to(1.5)
    dv = 2 * SEED_THRUST_N * 0.2 / SEED_MASS_KG
    expected = np.zeros(3)
    expected[axis] = sign * dv
    assert np.allclose(body.v_BN_N, expected, rtol=1e-5, atol=1e-12)
    assert np.allclose(body.omega_BN_B, 0.0, atol=1e-12)


@pytest.mark.parametrize("n", range(1, 13))
def test_every_single_thruster_applies_r_cross_f_about_the_centre_of_mass(n):
    r, d = (np.array(v, dtype=float) for v in SEED_THRUSTERS[n - 1])
    F = SEED_THRUST_N * d
    on_s = 0.040
    sim, body, _thr = thruster_island([pulse(T0, 46 * MS, n)])
    sim.advance_to(1.046)
    # from rest the gyroscopic term is third order in time (below 1e-6 rad/s here):
    # omega = I^-1 (r x F) t, v = F t / m
    omega_expected = np.linalg.solve(SEED_INERTIA, np.cross(r, F)) * on_s
    assert np.allclose(body.omega_BN_B, omega_expected, rtol=1e-4, atol=2e-6)
    v = body.v_BN_N
    assert np.linalg.norm(v) == pytest.approx(SEED_THRUST_N * on_s / SEED_MASS_KG, rel=2e-3)


def test_the_island_only_stops_where_a_valve_switches_and_a_quiet_vehicle_costs_nothing():
    plan = [pulse(T0, 30 * MS, 2, 12), pulse(T0 + 5 * MS, 17 * MS, 3, 8), pulse(2000 * MS, 3 * MS, 1)]
    sim, _body, thr = thruster_island(plan, state_rate_hz=1.0)
    sim.advance_to(3.0)
    isl = sim.islands["sph1"]
    hop_ends = {b for _, b in isl.hop_log}
    switches = {t for t, _, _ in thr.switch_log}
    assert switches <= hop_ends and thr.hops_across_events == 0
    # the second command cancelled 2 and 12 before they opened; 3 and 8 open at +11 ms
    assert thr.switch_log == [
        (T0 + 11 * MS, 3, True),
        (T0 + 11 * MS, 8, True),
        (T0 + 22 * MS, 3, False),
        (T0 + 22 * MS, 8, False),
    ]
    # barriers: the 1 Hz state, the three commands and the two switch instants, nothing else
    assert isl.stats["barriers"] == 4 + 3 + 2


def test_propellant_is_burnt_per_thruster_and_the_mass_falls():
    p = vehicle_params()
    sim, body, thr = thruster_island([pulse(T0, 506 * MS, 3, 8)])
    sim.advance_to(2.0)
    burnt = SEED_THRUST_N * 0.5 / (p.thrusters.isp_s * G0)
    assert thr.propellant_used_kg[2] == pytest.approx(burnt, rel=1e-12)
    assert thr.propellant_used_kg[7] == pytest.approx(burnt, rel=1e-12)
    assert thr.propellant_used_kg.sum() == pytest.approx(2 * burnt, rel=1e-12)
    assert body.mass_kg == pytest.approx(SEED_MASS_KG - 2 * burnt, rel=1e-12)


def test_thrust_override_and_pressure_set_the_level():
    levels = [0.1] * 12
    levels[1] = 0.05
    sim, body, _ = thruster_island([pulse(T0, 106 * MS, 2)], overrides={"thrusters.thrust_override_N": levels})
    sim.advance_to(1.5)
    assert 0.5 * (body.mass_kg + SEED_MASS_KG) * body.v_BN_N[0] == pytest.approx(0.05 * 0.1, rel=1e-5)
    sim, body, _ = thruster_island([pulse(T0, 106 * MS, 2)], overrides={"thrusters.pressure_psig": 30.0})
    sim.advance_to(1.5)
    assert 0.5 * (body.mass_kg + SEED_MASS_KG) * body.v_BN_N[0] == pytest.approx((0.0033 * 30 - 0.0049) * 0.1, rel=1e-5)


def test_thrust_noise_is_seeded_per_firing():
    plan = [pulse(T0 + k * 100 * MS, 56 * MS, 2, 12) for k in range(20)]
    runs = []
    for seed in (1, 1, 2):
        sim, body, _ = thruster_island(plan, overrides={"thrusters.noise_fraction": 0.01}, seed=seed)
        sim.advance_to(3.5)
        runs.append(body.v_BN_N[0])
    assert runs[0] == runs[1] and runs[0] != runs[2]
    nominal = 20 * 2 * SEED_THRUST_N * 0.05 / SEED_MASS_KG
    # 40 firings of 1 % noise: the sum is off by 0.16 % (1 sigma) at most 6 sigma
    assert abs(runs[0] / nominal - 1) < 6 * 0.01 / np.sqrt(40) + 1e-4


def test_faults_stick_a_valve_off_or_on_and_scale_thrust():
    sim, body, thr = thruster_island([pulse(T0, 106 * MS, 2, 12)])
    sim.schedule_fault(Fault(target="sph1_thrusters", kind="thruster_stuck_off", index=1), 0.5)
    sim.advance_to(1.5)
    p = 0.5 * (body.mass_kg + SEED_MASS_KG) * body.v_BN_N
    assert p[0] == pytest.approx(SEED_THRUST_N * 0.1, rel=1e-5)  # only thruster 12 fired
    assert np.linalg.norm(body.omega_BN_B) > 0  # and it turned the vehicle

    sim, body, thr = thruster_island([])
    for index in (1, 11):  # thrusters 2 and 12 stuck open for 0.25 s: a pure +X force
        sim.schedule_fault(Fault(target="sph1_thrusters", kind="thruster_stuck_on", index=index, duration_s=0.25), 0.5)
    sim.advance_to(1.0)
    assert 0.5 * (body.mass_kg + SEED_MASS_KG) * body.v_BN_N[0] == pytest.approx(2 * SEED_THRUST_N * 0.25, rel=1e-5)
    assert thr.hops_across_events == 0

    sim, body, thr = thruster_island([pulse(T0, 106 * MS, 2, 12)])
    sim.schedule_fault(Fault(target="sph1_thrusters", kind="thrust_scale", index=-1, value=0.5), 0.5)
    sim.advance_to(1.5)
    assert 0.5 * (body.mass_kg + SEED_MASS_KG) * body.v_BN_N[0] == pytest.approx(
        0.5 * 2 * SEED_THRUST_N * 0.1, rel=1e-5
    )


def test_a_continued_command_does_not_pay_the_valve_delay_again():
    # 60 ms on, then re-commanded on (still open) for 40 ms more at +60 ms: one opening at +6 ms
    plan = [pulse(T0, 60 * MS, 2, 12), pulse(T0 + 60 * MS, 40 * MS, 2, 12)]
    sim, body, thr = thruster_island(plan)
    sim.advance_to(1.5)
    assert 0.5 * (body.mass_kg + SEED_MASS_KG) * body.v_BN_N[0] == pytest.approx(2 * SEED_THRUST_N * 0.094, rel=1e-5)
    assert [o for _, n, o in thr.switch_log if n == 2] == [True, False]


def test_a_command_stamped_with_a_later_tick_takes_effect_then():
    # sent at 1.000 s, stamped 1.001 s (the propulsion tick after the control law)
    sim, _body, thr = thruster_island([])
    msg = ThrusterCommand(vehicle="sph1", t_ns=T0 + MS, mask=bits(2, 12), on_time_ns=pulse(0, 20 * MS, 2, 12)[2])
    sim.inject("sph1/thrust_cmd", msg, 1.0)
    sim.advance_to(1.5)
    assert [t for t, n, _ in thr.switch_log if n == 2] == [T0 + 7 * MS, T0 + 21 * MS]
    assert thr.hops_across_events == 0


def test_a_run_split_in_two_gives_the_same_valve_switches():
    plan = [pulse(T0, 30 * MS, 2, 12)]
    whole, body_whole, _thr_whole = thruster_island(plan, state_rate_hz=1.0)
    whole.advance_to(1.5)
    split, body_split, thr_split = thruster_island(plan, state_rate_hz=1.0)
    split.advance_to(1.0)
    split.advance_to(1.5)
    assert thr_split.hops_across_events == 0
    assert np.array_equal(body_split.v_BN_N, body_whole.v_BN_N)
