"""Simulation time: an integer number of nanoseconds everywhere inside hopsim.

Floats in seconds appear only at the user-facing edges (CLI, scenario parameters, plots).
A periodic schedule computes its k-th instant as ``t0 + round(k * 1e9 / f)`` so that rates such
as 3 Hz or 2.5 Hz never drift, however long the run.
"""

from __future__ import annotations

from fractions import Fraction
from functools import lru_cache

from hopsim.kernel.bounds import MAX_RATE_HZ, MIN_RATE_HZ

NS_PER_S = 1_000_000_000


# the kernel's times are signed 64-bit ns; a value a user gives is bounded far inside them
# (hopsim.kernel.bounds), and a time beyond them is refused here rather than overflowing later
MAX_NS = 2**63 - 1


def seconds(t_s: float) -> int:
    """Convert seconds (float) to integer nanoseconds, rounding to the nearest nanosecond; a
    ValueError for a time the kernel's 64-bit nanoseconds cannot hold (or not a number)."""
    t_ns = t_s * NS_PER_S
    if not -MAX_NS <= t_ns <= MAX_NS:
        raise ValueError(f"{t_s!r} s is not a time hopsim can count (64-bit nanoseconds: at most 9.2e9 s)")
    return round(t_ns)


def to_seconds(t_ns: int) -> float:
    """Convert integer nanoseconds to float seconds (for display and user-facing output only)."""
    return t_ns / NS_PER_S


@lru_cache(maxsize=256)
def _period_ns(rate_hz: float) -> tuple[int, int]:
    """The period of ``rate_hz`` (Hz) as an exact fraction (numerator, denominator) of ns: the
    decimal rate the user wrote (a scenario's many schedules share a few rates)."""
    period = Fraction(NS_PER_S) / Fraction(rate_hz).limit_denominator(10**9)
    return period.numerator, period.denominator


class PeriodicSchedule:
    """Instants ``t0 + round(k * 1e9 / rate_hz)`` for k = 0, 1, 2, ... (ns).

    The period is held as an exact fraction num/den of nanoseconds (the decimal rate the user
    wrote, e.g. 0.1 Hz is exactly 10 s), so the k-th instant carries no accumulated error.
    Rounding is half-to-even, in integer arithmetic.
    """

    __slots__ = ("_den", "_num", "rate_hz", "t0_ns")

    def __init__(self, rate_hz: float, t0_ns: int = 0):
        if not MIN_RATE_HZ <= rate_hz <= MAX_RATE_HZ:
            raise ValueError(
                f"a periodic schedule needs a rate in [{MIN_RATE_HZ:g}, {MAX_RATE_HZ:g}] Hz (a period of 1 ns to "
                f"{1 / MIN_RATE_HZ:g} s), got {rate_hz!r} Hz"
            )
        self.rate_hz = rate_hz
        self.t0_ns = int(t0_ns)
        self._num, self._den = _period_ns(rate_hz)

    @property
    def key(self) -> tuple[int, int, int]:
        """What identifies the schedule's instants: equal keys, equal instants."""
        return (self.t0_ns, self._num, self._den)

    def instant(self, k: int) -> int:
        """The k-th instant of the schedule (ns)."""
        if self._den == 1:  # a whole number of ns per period
            return self.t0_ns + k * self._num
        q, r = divmod(k * self._num, self._den)
        twice = 2 * r
        if twice > self._den or (twice == self._den and q & 1):
            q += 1
        return self.t0_ns + q

    def index_at_or_after(self, t_ns: int) -> int:
        """The smallest k whose instant is >= t_ns."""
        if t_ns <= self.t0_ns:
            return 0
        k = max((t_ns - self.t0_ns) * self._den // self._num - 1, 0)
        while self.instant(k) < t_ns:
            k += 1
        return k

    def next_after(self, t_ns: int) -> int:
        """The first instant strictly after t_ns (ns)."""
        k = self.index_at_or_after(t_ns)
        t = self.instant(k)
        return t if t > t_ns else self.instant(k + 1)
