"""Integrators: kernel interface, convergence order, tolerances, min step, reset, statistics."""

import math

import numpy as np
import pytest
from numba import njit

from hopsim.dynamics.integrators import (
    DOP853,
    RK4,
    DormandPrince54,
    Euler,
    IntegratorStats,
    StepSizeError,
    make_integrator,
    rk4_step_compiled,
)

FIXED = [Euler, RK4]
ADAPTIVE = [DormandPrince54, DOP853]


def oscillator(t, x):
    return np.array([x[1], -x[0]])


def oscillator_exact(t):
    return np.array([math.cos(t), -math.sin(t)])


@pytest.mark.parametrize("cls", FIXED + ADAPTIVE)
def test_interface(cls):
    integ = cls()
    assert isinstance(integ.name, str) and integ.name
    assert integ.order == {"euler": 1, "rk4": 4, "dopri54": 5, "dop853": 8}[integ.name]
    assert isinstance(integ.stats, IntegratorStats)
    for key in ("steps", "rejected", "derivative_calls"):
        assert integ.stats[key] == 0 == getattr(integ.stats, key)
    x1 = integ.advance(oscillator, 0.0, np.array([1.0, 0.0]), 0.01)
    assert x1.dtype == np.float64 and x1.shape == (2,)
    integ.reset()
    assert make_integrator(integ.name).name == integ.name


@pytest.mark.parametrize("cls,samples", [(Euler, 1), (RK4, 4)])
def test_fixed_step_calls_f_exactly_samples_per_step_times(cls, samples):
    integ = cls()
    assert integ.samples_per_step == samples
    calls = []

    def f(t, x):
        calls.append(t)
        return -x

    x = np.array([1.0])
    for k in range(5):
        x = integ.advance(f, 0.1 * k, x, 0.1 * (k + 1))
    assert len(calls) == 5 * samples
    assert integ.stats.steps == 5 and integ.stats.derivative_calls == 5 * samples
    assert integ.stats.rejected == 0


def _slope(hs, errors):
    return np.polyfit(np.log(hs), np.log(errors), 1)[0]


@pytest.mark.parametrize(
    "cls,ns",
    [
        (Euler, [200, 400, 800, 1600]),
        (RK4, [10, 20, 40, 80]),
        (DormandPrince54, [8, 16, 32, 64]),
        (DOP853, [4, 6, 8, 12]),
    ],
)
def test_error_shrinks_at_theoretical_order(cls, ns):
    """Global error on the harmonic oscillator over 2 s with a constant step."""
    T = 2.0
    errors, hs = [], []
    for n in ns:
        h = T / n
        if cls in ADAPTIVE:
            # tolerances so loose that every step is accepted: the pure method at step h
            integ = cls(rtol=1e6, atol=1e6, first_step=h, max_step=h)
            x = integ.advance(oscillator, 0.0, np.array([1.0, 0.0]), T)
            assert integ.stats.steps == n and integ.stats.rejected == 0
        else:
            integ = cls()
            x = np.array([1.0, 0.0])
            for k in range(n):
                x = integ.advance(oscillator, k * h, x, (k + 1) * h)
        errors.append(np.linalg.norm(x - oscillator_exact(T)))
        hs.append(h)
    slope = _slope(hs, errors)
    assert abs(slope - cls.order) < 0.3, (slope, errors)


@pytest.mark.parametrize("cls", ADAPTIVE)
def test_adaptive_meets_tolerance_and_lands_on_t1(cls):
    times = []

    def f(t, x):
        times.append(t)
        return -x

    for tol in (1e-6, 1e-9):
        times.clear()
        integ = cls(rtol=tol, atol=tol * 1e-3)
        x1 = integ.advance(f, 0.0, np.array([1.0, 2.0]), 3.7)
        assert max(times) == 3.7
        err = np.abs(x1 - np.array([1.0, 2.0]) * math.exp(-3.7)).max()
        assert err < 50 * tol * math.exp(-3.7) * 2.0
        assert integ.stats.steps > 1


@pytest.mark.parametrize("cls", ADAPTIVE)
def test_tighter_tolerance_takes_more_steps_and_is_more_accurate(cls):
    results = []
    for tol in (1e-4, 1e-7, 1e-10):
        integ = cls(rtol=tol, atol=tol)
        x = integ.advance(oscillator, 0.0, np.array([1.0, 0.0]), 20.0)
        results.append((integ.stats.steps, np.linalg.norm(x - oscillator_exact(20.0))))
    steps, errs = zip(*results)
    assert steps[0] < steps[1] < steps[2]
    assert errs[0] > errs[1] > errs[2]


@pytest.mark.parametrize("cls", ADAPTIVE)
def test_min_step_error(cls):
    """A jump in f cannot be resolved above min_step at a tolerance near round-off."""

    def f(t, x):
        return np.array([0.0 if t < 0.5 else 1e6])

    integ = cls(rtol=1e-14, atol=1e-14, min_step=1e-3)
    with pytest.raises(StepSizeError, match="min_step"):
        integ.advance(f, 0.0, np.array([0.0]), 1.0)
    assert integ.stats.rejected > 0


@pytest.mark.parametrize("cls", ADAPTIVE)
def test_reset_forgets_step_estimate_and_statistics_add_up(cls):
    integ = cls(rtol=1e-8, atol=1e-10)
    x = integ.advance(oscillator, 0.0, np.array([1.0, 0.0]), 1.0)
    h = integ.step_size_estimate
    assert h is not None and h > 0
    integ.advance(oscillator, 1.0, x, 2.0)
    integ.reset()
    assert integ.step_size_estimate is None
    calls = []

    def counted(t, y):
        calls.append(t)
        return oscillator(t, y)

    before = integ.stats.as_dict()
    integ.advance(counted, 2.0, x, 3.0)
    after = integ.stats.as_dict()
    assert after["derivative_calls"] - before["derivative_calls"] == len(calls)
    assert after["steps"] > before["steps"]


def test_reset_after_discontinuity_recovers():
    """After a jump in f the kernel resets; the next advance starts with a fresh step."""
    integ = DormandPrince54(rtol=1e-9, atol=1e-12)
    x = integ.advance(lambda t, y: -y, 0.0, np.array([1.0]), 1.0)
    integ.reset()
    x = integ.advance(lambda t, y: -10.0 * y, 1.0, x, 2.0)
    assert abs(x[0] - math.exp(-1.0) * math.exp(-10.0)) < 1e-9


def test_compiled_rk4_matches_python_rk4_bit_for_bit():
    @njit
    def f(t, x):
        return np.array([x[1], -x[0] + 0.1 * t])

    def fp(t, x):
        return np.array([x[1], -x[0] + 0.1 * t])

    x = np.array([0.3, -0.7])
    a = rk4_step_compiled(f, 0.0, x, 0.05)
    b = RK4().advance(fp, 0.0, x, 0.05)
    assert np.array_equal(a, b)


def test_backward_time_is_refused():
    with pytest.raises(ValueError):
        DormandPrince54().advance(oscillator, 1.0, np.array([1.0, 0.0]), 0.5)
