"""Prescribed-motion profiles: rest-to-rest moves limited by a maximum acceleration.

A move takes a scalar coordinate (a translation ``rho`` [m] along an axis, or a rotation angle
``theta`` [rad] about an axis) from an initial value at rest to a reference value at rest. Four
acceleration shapes are offered, selected by two durations:

============================  ======================  ==========================================
``coast_bang_duration``       ``smoothing_duration``  profile
============================  ======================  ==========================================
0                             0                       bang-bang (minimum time)
> 0                           0                       bang-coast-bang
0                             > 0                     smoothed bang-bang
> 0                           > 0                     smoothed bang-coast-bang
============================  ======================  ==========================================

Definitions (``A = accel_max``, ``s = sign(ref - init)``, ``D = |ref - init|``,
``tb`` = bang duration, ``ts`` = smoothing duration, ``tc`` = coast duration):

* A *bang* holds the acceleration at ``+-A``; a *coast* holds it at 0.
* A *smoothing* segment of duration T moves the acceleration from ``a0`` to ``a1`` along the
  cubic smoothstep ``a = a0 + (a1 - a0) (3u^2 - 2u^3)``, ``u = x/T``; the acceleration and its
  rate are continuous. Ramps between 0 and ``+-A`` take ``ts``; the reversal from ``+A`` to
  ``-A`` in the smoothed bang-bang profile takes ``2 ts`` (same peak jerk, ``1.5 A / ts``).
* Bang-bang: ``+sA`` for ``tb``, then ``-sA`` for ``tb``, with ``tb = sqrt(D/A)``.
* Bang-coast-bang: bang ``tb`` (given), coast ``tc = (D - A tb^2) / (A tb)``, bang ``tb``.
  Exists when ``D >= A tb^2``.
* Smoothed bang-bang: ramp up ``ts``, bang ``tb``, reversal ``2 ts``, bang ``tb``, ramp down
  ``ts``. The distance is ``D = A (tb^2 + 3 ts tb + 2.1 ts^2)``, solved for ``tb >= 0``.
  Exists when ``D >= 2.1 A ts^2``.
* Smoothed bang-coast-bang: ramp up ``ts``, bang ``tb`` (given), ramp down ``ts``, coast
  ``tc``, ramp ``ts``, bang ``tb``, ramp ``ts``. The accelerating half covers
  ``A (tb + ts)(tb + 2 ts) / 2`` at the cruise rate ``A (tb + ts)``, so
  ``tc = (D - A (tb + ts)(tb + 2 ts)) / (A (tb + ts))``. Exists when
  ``D >= A (tb + ts)(tb + 2 ts)``.

Every profile is stored as a table of segments (start time, duration, start and end
acceleration, start rate, start value) built by chaining the exact integrals of each segment, so
position, rate and (for the smoothed profiles) acceleration are continuous at every breakpoint
by construction. ``t`` is the time since the move began [s]; before 0 the profile holds the
initial value, after the end it holds the reference, both at rest.

:class:`MoveProfile` holds a move's parameters, so that a producer can publish parameters and a
consumer evaluate the exact profile at every derivative sample; :func:`evaluate_segments` is
the compiled evaluator used inside integrators.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from hopsim.dynamics import detlinalg
from hopsim.dynamics._jit import compiled

# columns of the segment table
SEG_T0, SEG_DURATION, SEG_A0, SEG_A1, SEG_V0, SEG_P0 = range(6)
SEGMENT_COLUMNS = 6
# a move exactly at the limit of existence (zero coast or zero bang) must not fail on round-off
_FEASIBILITY_RTOL = 1e-12


@dataclass(frozen=True)
class ProfileTiming:
    """Durations [s] of a move's phases and its breakpoints (times since the move began)."""

    bang_duration: float
    coast_duration: float
    smoothing_duration: float
    duration: float
    breakpoints: tuple


def _check_inputs(init, ref, accel_max, coast, smoothing):
    for name, value in (
        ("initial value", init),
        ("reference", ref),
        ("accel_max", accel_max),
        ("coast_bang_duration", coast),
        ("smoothing_duration", smoothing),
    ):
        if not math.isfinite(value):
            raise ValueError(f"{name} must be finite, got {value}")
    if accel_max <= 0.0:
        raise ValueError(f"accel_max must be positive, got {accel_max}")
    if coast < 0.0:
        raise ValueError(f"coast_bang_duration must be >= 0 s (0 selects no coast), got {coast}")
    if smoothing < 0.0:
        raise ValueError(f"smoothing_duration must be >= 0 s (0 selects no smoothing), got {smoothing}")


def _phases(init, ref, accel_max, coast, smoothing, unit="m"):
    """List of (duration, a_start, a_end) describing the move, and its timing."""
    _check_inputs(init, ref, accel_max, coast, smoothing)
    A = float(accel_max)
    D = abs(ref - init)
    s = 1.0 if ref >= init else -1.0
    ts = float(smoothing)
    tb_given = float(coast)
    acc = f"{unit}/s^2"
    if D == 0.0:
        return [], ProfileTiming(0.0, 0.0, ts, 0.0, (0.0,))
    if tb_given == 0.0 and ts == 0.0:
        tb = math.sqrt(D / A)
        phases = [(tb, s * A, s * A), (tb, -s * A, -s * A)]
        timing = (tb, 0.0)
    elif ts == 0.0:
        tb = tb_given
        if A * tb * tb * (1.0 - _FEASIBILITY_RTOL) > D:
            raise ValueError(
                f"coast_bang_duration {tb:g} s is too long: with accel_max {A:g} {acc} the move "
                f"of {D:g} {unit} can have bang segments of at most {math.sqrt(D / A):.6g} s; "
                f"lower coast_bang_duration, or lower accel_max to at most {D / (tb * tb):.6g} "
                f"{acc}"
            )
        tc = max(0.0, (D - A * tb * tb) / (A * tb))
        phases = [(tb, s * A, s * A), (tc, 0.0, 0.0), (tb, -s * A, -s * A)]
        timing = (tb, tc)
    elif tb_given == 0.0:
        if 2.1 * A * ts * ts * (1.0 - _FEASIBILITY_RTOL) > D:
            raise ValueError(
                f"smoothing_duration {ts:g} s is too long: with accel_max {A:g} {acc} the move of "
                f"{D:g} {unit} allows smoothing of at most {math.sqrt(D / (2.1 * A)):.6g} s "
                f"(a smoothed bang-bang move covers at least 2.1 accel_max smoothing^2); lower "
                f"smoothing_duration, or lower accel_max to at most {D / (2.1 * ts * ts):.6g} "
                f"{acc}"
            )
        tb = 0.5 * (-3.0 * ts + math.sqrt(0.6 * ts * ts + 4.0 * D / A))
        tb = max(tb, 0.0)
        phases = [
            (ts, 0.0, s * A),
            (tb, s * A, s * A),
            (2.0 * ts, s * A, -s * A),
            (tb, -s * A, -s * A),
            (ts, -s * A, 0.0),
        ]
        timing = (tb, 0.0)
    else:
        tb = tb_given
        needed = A * (tb + ts) * (tb + 2.0 * ts)
        if needed * (1.0 - _FEASIBILITY_RTOL) > D:
            tb_max = 0.5 * (-3.0 * ts + math.sqrt(ts * ts + 4.0 * D / A))
            if tb_max > 0.0:
                hint = (
                    f"the move of {D:g} {unit} with smoothing {ts:g} s allows bang segments "
                    f"of at most {tb_max:.6g} s; lower coast_bang_duration or "
                    f"smoothing_duration, or lower accel_max to at most "
                    f"{D / ((tb + ts) * (tb + 2.0 * ts)):.6g} {acc}"
                )
            else:
                hint = (
                    f"the move of {D:g} {unit} is too short even for smoothing {ts:g} s with "
                    f"no bang (it needs {2.0 * A * ts * ts:.6g} {unit}); lower "
                    f"smoothing_duration to at most {math.sqrt(D / (2.0 * A)):.6g} s, or "
                    f"lower accel_max to at most {D / ((tb + ts) * (tb + 2.0 * ts)):.6g} {acc}"
                )
            raise ValueError(
                f"coast_bang_duration {tb:g} s with smoothing_duration {ts:g} s is too long: "
                f"with accel_max {A:g} {acc} {hint}"
            )
        tc = max(0.0, (D - needed) / (A * (tb + ts)))
        phases = [
            (ts, 0.0, s * A),
            (tb, s * A, s * A),
            (ts, s * A, 0.0),
            (tc, 0.0, 0.0),
            (ts, 0.0, -s * A),
            (tb, -s * A, -s * A),
            (ts, -s * A, 0.0),
        ]
        timing = (tb, tc)
    breakpoints = [0.0]
    for duration, _, _ in phases:
        breakpoints.append(breakpoints[-1] + duration)
    return phases, ProfileTiming(timing[0], timing[1], ts, breakpoints[-1], tuple(breakpoints))


def _segment_table(init, phases):
    """Chain the segments' exact integrals into the segment table."""
    table = np.zeros((max(len(phases), 1), SEGMENT_COLUMNS))
    t = 0.0
    v = 0.0
    p = float(init)
    for i, (T, a0, a1) in enumerate(phases):
        table[i] = (t, T, a0, a1, v, p)
        # end of a smoothstep segment: mean acceleration (a0+a1)/2, position term per its integral
        v_end = v + 0.5 * (a0 + a1) * T
        p_end = p + v * T + T * T * (0.35 * a0 + 0.15 * a1)
        t, v, p = t + T, v_end, p_end
    if not phases:
        table[0] = (0.0, 0.0, 0.0, 0.0, 0.0, float(init))
    return table


@compiled
def _evaluate_one(t, table, final_value):
    n = table.shape[0]
    if t <= 0.0 or n == 0:
        return table[0, SEG_P0], 0.0, 0.0
    end = table[n - 1, SEG_T0] + table[n - 1, SEG_DURATION]
    if t >= end:
        return final_value, 0.0, 0.0
    k = 0
    while k < n - 1 and t >= table[k + 1, SEG_T0]:
        k += 1
    x = t - table[k, SEG_T0]
    T = table[k, SEG_DURATION]
    a0 = table[k, SEG_A0]
    da = table[k, SEG_A1] - a0
    v0 = table[k, SEG_V0]
    p0 = table[k, SEG_P0]
    if da == 0.0:
        return p0 + v0 * x + 0.5 * a0 * x * x, v0 + a0 * x, a0
    u = x / T
    u2 = u * u
    u3 = u2 * u
    smooth = 3.0 * u2 - 2.0 * u3  # smoothstep
    smooth_int1 = u3 - 0.5 * u2 * u2  # integral of smoothstep over u
    smooth_int2 = 0.25 * u2 * u2 - 0.1 * u3 * u2  # double integral
    acc = a0 + da * smooth
    rate = v0 + a0 * x + da * T * smooth_int1
    value = p0 + v0 * x + 0.5 * a0 * x * x + da * T * T * smooth_int2
    return value, rate, acc


@compiled
def evaluate_segments(t, table, final_value):
    """Value, rate and acceleration of a profile at times ``t`` [s] (1-D array)."""
    n = t.shape[0]
    value = np.empty(n)
    rate = np.empty(n)
    acc = np.empty(n)
    for i in range(n):
        value[i], rate[i], acc[i] = _evaluate_one(t[i], table, final_value)
    return value, rate, acc


@dataclass(frozen=True)
class MoveProfile:
    """Parameters of one rest-to-rest move; evaluating them gives the exact profile.

    ``initial`` and ``reference`` are in m (translation) or rad (rotation), ``accel_max`` in
    m/s^2 or rad/s^2, durations in s. ``axis`` is the unit translation or rotation axis in the
    mount frame (optional; the scalar profile does not need it). ``start_time_ns`` is the
    simulation time [ns] at which the move begins (used by :meth:`evaluate_at_ns`).
    """

    initial: float
    reference: float
    accel_max: float
    coast_bang_duration: float = 0.0
    smoothing_duration: float = 0.0
    kind: str = "translation"
    axis: tuple = (1.0, 0.0, 0.0)
    start_time_ns: int = 0
    _table: np.ndarray = field(init=False, repr=False, compare=False)
    _timing: ProfileTiming = field(init=False, repr=False, compare=False)

    def __post_init__(self):
        if self.kind not in ("translation", "rotation"):
            raise ValueError(f"kind must be 'translation' or 'rotation', got {self.kind!r}")
        axis = np.asarray(self.axis, dtype=float)
        if axis.shape != (3,) or not abs(detlinalg.norm(axis) - 1.0) < 1e-9:
            raise ValueError(f"axis must be a unit 3-vector, got {self.axis}")
        unit = "m" if self.kind == "translation" else "rad"
        phases, timing = _phases(
            float(self.initial),
            float(self.reference),
            float(self.accel_max),
            float(self.coast_bang_duration),
            float(self.smoothing_duration),
            unit,
        )
        object.__setattr__(self, "_table", _segment_table(float(self.initial), phases))
        object.__setattr__(self, "_timing", timing)

    @property
    def timing(self) -> ProfileTiming:
        return self._timing

    @property
    def duration(self) -> float:
        """Total duration of the move [s]."""
        return self._timing.duration

    @property
    def breakpoints(self) -> tuple:
        """Times since the move began [s] at which the acceleration law changes."""
        return self._timing.breakpoints

    @property
    def segment_table(self) -> np.ndarray:
        """(n, 6) table: start time, duration, start/end acceleration, start rate, start value."""
        return self._table.copy()

    def evaluate(self, t):
        """``(value, rate, acceleration)`` at ``t`` [s] since the move began (scalar or array)."""
        t_arr = np.asarray(t, dtype=np.float64)
        flat = np.ascontiguousarray(t_arr.reshape(-1))
        value, rate, acc = evaluate_segments(flat, self._table, float(self.reference))
        if t_arr.ndim == 0:
            return float(value[0]), float(rate[0]), float(acc[0])
        return value.reshape(t_arr.shape), rate.reshape(t_arr.shape), acc.reshape(t_arr.shape)

    def evaluate_at_ns(self, t_ns):
        """Like :meth:`evaluate`, at simulation time ``t_ns`` [ns]."""
        t = (np.asarray(t_ns, dtype=np.int64) - self.start_time_ns) * 1e-9
        return self.evaluate(t)

    def evaluate_vector(self, t):
        """Profile mapped on the axis: value, rate and acceleration as 3-vectors (last axis)."""
        value, rate, acc = self.evaluate(t)
        axis = np.asarray(self.axis, dtype=float)
        return (np.multiply.outer(value, axis), np.multiply.outer(rate, axis), np.multiply.outer(acc, axis))


def profile_timing(initial, reference, accel_max, coast_bang_duration=0.0, smoothing_duration=0.0) -> ProfileTiming:
    """Durations and breakpoints [s] of a move, or ValueError if it cannot exist."""
    return _phases(
        float(initial), float(reference), float(accel_max), float(coast_bang_duration), float(smoothing_duration)
    )[1]


def translation_profile(t, rho_init, rho_ref, accel_max, coast_bang_duration=0.0, smoothing_duration=0.0):
    """Position ``rho`` [m], rate [m/s] and acceleration [m/s^2] of a translation move at
    ``t`` [s] since the move began (scalar or array)."""
    return MoveProfile(
        rho_init, rho_ref, accel_max, coast_bang_duration, smoothing_duration, kind="translation"
    ).evaluate(t)


def rotation_profile(t, theta_init, theta_ref, accel_max, coast_bang_duration=0.0, smoothing_duration=0.0):
    """Angle ``theta`` [rad], rate [rad/s] and acceleration [rad/s^2] of a rotation about a
    fixed axis at ``t`` [s] since the move began (scalar or array)."""
    return MoveProfile(
        theta_init, theta_ref, accel_max, coast_bang_duration, smoothing_duration, kind="rotation"
    ).evaluate(t)
