"""Prescribed-motion profiles checked against their definitions."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hopsim.dynamics.profiles import (
    MoveProfile,
    evaluate_segments,
    profile_timing,
    rotation_profile,
    translation_profile,
)

# the upstream module test grid, plus both directions of travel
GRID = [
    (coast, smooth, init, ref, accel)
    for coast in (0.0, 2.0)
    for smooth in (0.0, 2.0)
    for init in (0.0, -0.5)
    for ref in (0.0, -1.0, 0.5)
    for accel in (0.01, 0.005)
]


def _check_profile(p: MoveProfile, smoothed: bool):
    A = p.accel_max
    tf = p.duration
    t = np.linspace(-1.0, tf + 1.0, 40001)
    value, rate, acc = p.evaluate(t)
    scale = max(abs(p.reference - p.initial), 1e-12)
    # at rest at both ends, exact arrival
    assert p.evaluate(0.0) == (p.initial, 0.0, 0.0) or tf == 0.0
    end = p.evaluate(tf)
    assert end[0] == p.reference and end[1] == 0.0 and end[2] == 0.0
    assert abs(p.evaluate(tf * (1 - 1e-12))[0] - p.reference) < 1e-12 * max(1.0, scale)
    assert abs(p.evaluate(tf * (1 - 1e-12))[1]) < 1e-9
    assert np.all(value[t <= 0] == p.initial) and np.all(value[t >= tf] == p.reference)
    # bounded acceleration, monotone travel towards the reference
    assert np.all(np.abs(acc) <= A * (1 + 1e-12))
    direction = np.sign(p.reference - p.initial)
    assert np.all(direction * rate >= -1e-15)
    # continuity at every breakpoint
    for tb in p.breakpoints:
        left = np.array(p.evaluate(tb - 1e-9))
        right = np.array(p.evaluate(tb + 1e-9))
        vmax = A * tf
        assert abs(left[0] - right[0]) <= 2e-9 * vmax + 1e-15
        assert abs(left[1] - right[1]) <= 2e-9 * A * (1 + 1e-9) + 1e-15
        if smoothed:
            assert abs(left[2] - right[2]) <= 1e-8 * A
    # derivatives: central differences of value and rate, away from acceleration jumps;
    # tolerances from the truncation error (smoothed: snap <= 6 A / ts^2) and round-off
    ts_ = p.smoothing_duration
    h = 1e-3 * (ts_ if smoothed else tf)
    ts = np.linspace(0.0, tf, 2001)
    v_p, r_p, _a_p = p.evaluate(ts + h)
    v_m, r_m, _a_m = p.evaluate(ts - h)
    _, r0, a0 = p.evaluate(ts)
    near_jump = np.zeros_like(ts, dtype=bool)
    if not smoothed:
        for tb in p.breakpoints:
            near_jump |= np.abs(ts - tb) <= 2 * h
    fd_rate = (v_p - v_m) / (2 * h)
    fd_acc = (r_p - r_m) / (2 * h)
    ok = ~near_jump
    size = abs(p.initial) + abs(p.reference) + 1.0
    rate_tol = 1e-15 * size / h + (2 * A * h * h / ts_ if smoothed else 0.0)
    acc_tol = 1e-15 * A * tf / h + (4 * A * (h / ts_) ** 2 if smoothed else 0.0)
    assert np.allclose(fd_rate[ok], r0[ok], rtol=0, atol=rate_tol)
    assert np.allclose(fd_acc[ok], a0[ok], rtol=0, atol=acc_tol)


@pytest.mark.parametrize("coast,smooth,init,ref,accel", GRID)
def test_upstream_grid(coast, smooth, init, ref, accel):
    if ref == init:
        p = MoveProfile(init, ref, accel, coast, smooth)
        assert p.duration == 0.0
        assert p.evaluate(3.0) == (ref, 0.0, 0.0)
        return
    p = MoveProfile(init, ref, accel, coast, smooth)
    _check_profile(p, smooth > 0)


def test_two_successive_moves_and_both_directions():
    """Second move starts where the first ended; rho(t) is continuous across the hand-over."""
    first = MoveProfile(-0.5, -1.0, 0.01, 2.0, 2.0)
    second = MoveProfile(first.evaluate(first.duration + 5.0)[0], 0.5, 0.01, 2.0, 2.0)
    assert second.initial == -1.0
    assert first.evaluate(first.duration)[0] == -1.0
    assert second.evaluate(second.duration)[0] == 0.5
    assert first.evaluate(1.0)[1] < 0.0 < second.evaluate(1.0)[1]
    # mirror symmetry between the two directions of the same distance
    up = MoveProfile(0.0, 0.7, 0.02, 1.0, 1.5)
    down = MoveProfile(0.0, -0.7, 0.02, 1.0, 1.5)
    t = np.linspace(0, up.duration, 101)
    assert np.allclose(np.array(up.evaluate(t)), -np.array(down.evaluate(t)), atol=1e-15)


def test_closed_form_durations():
    A, D = 0.01, 1.0
    assert profile_timing(0, D, A).duration == pytest.approx(2 * math.sqrt(D / A), rel=1e-14)
    tb = 2.0
    bcb = profile_timing(0, D, A, coast_bang_duration=tb)
    assert bcb.duration == pytest.approx(2 * tb + (D - A * tb * tb) / (A * tb), rel=1e-14)
    ts = 2.0
    sbb = profile_timing(0, D, A, smoothing_duration=ts)
    # smoothed bang-bang: D = A (tb^2 + 3 ts tb + 2.1 ts^2), T = 4 ts + 2 tb
    assert A * (sbb.bang_duration**2 + 3 * ts * sbb.bang_duration + 2.1 * ts * ts) == pytest.approx(D, rel=1e-13)
    assert sbb.duration == pytest.approx(4 * ts + 2 * sbb.bang_duration, rel=1e-14)
    sbcb = profile_timing(0, D, A, coast_bang_duration=tb, smoothing_duration=ts)
    tc = (D - A * (tb + ts) * (tb + 2 * ts)) / (A * (tb + ts))
    assert sbcb.coast_duration == pytest.approx(tc, rel=1e-13)
    assert sbcb.duration == pytest.approx(4 * ts + 2 * tb + tc, rel=1e-14)
    assert len(sbcb.breakpoints) == 8 and len(sbb.breakpoints) == 6


def test_distance_by_quadrature_matches_for_every_profile():
    """Integrating the acceleration (independently of the closed forms) gives the move:
    v(tf) = int a dt = 0 and rho(tf) - rho(0) = int (tf - t) a(t) dt."""
    from scipy.integrate import quad

    for coast, smooth in ((0, 0), (3, 0), (0, 3), (3, 3)):
        p = MoveProfile(0.2, -1.3, 0.01, coast, smooth)
        tf = p.duration
        acc = lambda t, p=p: p.evaluate(t)[2]  # noqa: E731
        dv = quad(acc, 0.0, tf, points=p.breakpoints[1:-1], epsabs=1e-14, limit=200)[0]
        dp = quad(
            lambda t, tf=tf, acc=acc: (tf - t) * acc(t), 0.0, tf, points=p.breakpoints[1:-1], epsabs=1e-14, limit=200
        )[0]
        assert abs(dv) < 1e-12
        assert dp == pytest.approx(-1.5, abs=1e-10)


@settings(max_examples=150, deadline=None)
@given(
    init=st.floats(-2, 2),
    distance=st.floats(1e-3, 3),
    up=st.booleans(),
    accel=st.floats(1e-3, 1.0),
    coast_frac=st.sampled_from([0.0, 0.2, 0.6, 1.0]),
    smooth_frac=st.sampled_from([0.0, 0.3, 0.9]),
)
def test_property_grid(init, distance, up, accel, coast_frac, smooth_frac):
    ref = init + distance if up else init - distance
    # choose durations inside the existence region
    ts = smooth_frac * math.sqrt(distance / (2.1 * accel)) if smooth_frac else 0.0
    if coast_frac and ts:
        tb_max = 0.5 * (-3 * ts + math.sqrt(ts * ts + 4 * distance / accel))
        if tb_max <= 0:
            return
        tb = coast_frac * tb_max
    elif coast_frac:
        tb = coast_frac * math.sqrt(distance / accel)
    else:
        tb = 0.0
    p = MoveProfile(init, ref, accel, tb, ts)
    _check_profile(p, ts > 0)


@pytest.mark.parametrize(
    "kwargs,match",
    [
        (dict(coast_bang_duration=11.0), "coast_bang_duration 11 s is too long.*at most 10 s"),
        (dict(smoothing_duration=7.0), "smoothing_duration 7 s is too long.*at most 6.9"),
        (dict(coast_bang_duration=5.0, smoothing_duration=4.0), "too long.*at most"),
        (dict(coast_bang_duration=0.5, smoothing_duration=8.0), "too short even for smoothing"),
    ],
)
def test_impossible_moves_say_why_and_how_to_fix(kwargs, match):
    with pytest.raises(ValueError, match=match) as err:
        MoveProfile(0.0, 1.0, 0.01, **kwargs)
    assert "lower" in str(err.value) and "accel_max" in str(err.value)
    # the suggested accel_max works
    import re

    suggested = float(re.search(r"accel_max to at most ([0-9.e-]+)", str(err.value)).group(1))
    MoveProfile(0.0, 1.0, suggested * (1 - 1e-6), **kwargs)


def test_invalid_inputs():
    for args in ((0, 1, 0.0), (0, 1, -1.0), (0, 1, 0.1, -1.0), (0, 1, 0.1, 0.0, -1.0), (0, math.nan, 0.1)):
        with pytest.raises(ValueError):
            MoveProfile(*args)
    with pytest.raises(ValueError):
        MoveProfile(0, 1, 0.1, axis=(1.0, 1.0, 0.0))


def test_functional_forms_vectorize_and_rotation_uses_same_law():
    t = np.array([[0.0, 1.0], [5.0, 100.0]])
    rho, rdot, _rddot = translation_profile(t, 0.0, 1.0, 0.01, 2.0, 1.0)
    assert rho.shape == (2, 2)
    th, thdot, _thddot = rotation_profile(t, 0.0, 1.0, 0.01, 2.0, 1.0)
    assert np.array_equal(th, rho) and np.array_equal(thdot, rdot)
    assert isinstance(translation_profile(3.0, 0.0, 1.0, 0.01)[0], float)
    with pytest.raises(ValueError, match="rad"):
        rotation_profile(0.0, 0.0, 0.1, 0.01, 0.0, 3.0)


def test_parameters_drive_compiled_evaluator_and_axis_and_ns_time():
    p = MoveProfile(0.0, 0.3, 0.02, 0.0, 1.0, kind="rotation", axis=(0.0, 0.6, 0.8), start_time_ns=2_000_000_000)
    t = np.array([0.5, 1.7, 3.0])
    direct = evaluate_segments(t, p.segment_table, p.reference)
    assert np.array_equal(np.array(direct), np.array(p.evaluate(t)))
    at_ns = p.evaluate_at_ns(np.array([2_500_000_000, 3_700_000_000, 5_000_000_000]))
    assert np.allclose(np.array(at_ns), np.array(direct), atol=1e-15)
    vec, _, _ = p.evaluate_vector(t)
    assert vec.shape == (3, 3) and np.allclose(vec[:, 1] / 0.6, direct[0])
