"""Integer-nanosecond time: periodic schedules never drift."""

from fractions import Fraction

from hypothesis import given
from hypothesis import strategies as st

from hopsim.kernel.simtime import PeriodicSchedule, seconds


def test_three_hz_lands_on_whole_seconds_forever():
    s = PeriodicSchedule(3.0)
    for k in (3, 3_000, 3_000_000_000):
        assert s.instant(k) == (k // 3) * 1_000_000_000


def test_two_and_a_half_hz_is_every_400_ms():
    s = PeriodicSchedule(2.5)
    assert [s.instant(k) for k in range(4)] == [0, 400_000_000, 800_000_000, 1_200_000_000]
    assert s.instant(10**9) == 10**9 * 400_000_000


@given(st.sampled_from([1.0, 2.5, 3.0, 7.0, 50.0, 100.0, 1000.0, 0.1]), st.integers(0, 10**12))
def test_instant_is_rounded_exact_multiple(rate, k):
    s = PeriodicSchedule(rate)
    exact = Fraction(k) * Fraction(10**9) / Fraction(str(rate))  # the decimal rate the user wrote
    assert abs(s.instant(k) - exact) <= Fraction(1, 2)


@given(st.sampled_from([2.5, 3.0, 7.0, 100.0]), st.integers(-10, 10**11))
def test_next_after_is_the_first_later_instant(rate, t):
    s = PeriodicSchedule(rate)
    n = s.next_after(t)
    assert n > t
    k = s.index_at_or_after(n)
    assert s.instant(k) == n and (k == 0 or s.instant(k - 1) <= t)


def test_seconds_round_to_nearest_ns():
    assert seconds(0.7) == 700_000_000
    assert seconds(1e-9) == 1
