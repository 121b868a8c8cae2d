"""The bounds a value meets before it enters a run, declared once.

Every entry point checks what it takes against these: a scenario's parameters and faults (their
pydantic models use the types below), the command line's ``--duration``, ``--seed`` and
``--checkpoint-every``, campaign files, faults sent live (as a scenario's faults), the run
description of a checkpoint or a recording. A value outside its bounds is refused before the run
with a one-line error naming it and its bound; none reaches the kernel to overflow there.

Time. The kernel counts time in signed 64-bit nanoseconds (up to about 292 years). An instant, a
duration or a delay a user gives (a run's duration, a fault's instant and duration, a latency, a
phase) lies in [0, :data:`MAX_TIME_S`] s, about 32 years: any instant plus any such duration, in
ns, stays far inside the kernel's times. A period is a whole number of ns, at least 1: it lies in
[:data:`MIN_PERIOD_S`, :data:`MAX_TIME_S`] s, and a rate in [:data:`MIN_RATE_HZ`,
:data:`MAX_RATE_HZ`] Hz.

Seeds. A run seed is an integer in [0, :data:`MAX_SEED`]: numpy's seed sequences take any
non-negative integer and fold it into a pool of 128 bits, so larger seeds would only repeat
smaller ones' streams.

Probabilities. A probability (a radio's loss, a bit error rate), as a parameter or as a fault's
``value``, lies in [0, 1] (:func:`check_probability`); none is clamped into it.

Fault payloads. A fault's ``value`` (a scale, a bias, a probability or a delay, by kind; its
target narrows it: a radio's loss to [0, 1] by :func:`check_probability`) lies within +-:data:`MAX_FAULT_VALUE`, a
disturbance force within
+-:data:`MAX_FORCE_N` N and a torque within +-:data:`MAX_TORQUE_NM` N m per axis: beyond any
vehicle hopsim flies, and far from the floats' overflow.

What values enter with, the integrated state may still leave: every island's continuous state is
checked to be finite at each of its barriers (:func:`check_state_finite`; the members of a row
block, all of them in one pass at each of the block's instants: :func:`check_rows_finite`), and a
run whose state is not ends there, naming the island, the model and its states, and the instant.
"""

from __future__ import annotations

import math
from typing import Annotated

import numpy as np
from pydantic import AfterValidator

from hopsim.kernel.errors import StateNotFinite

MAX_TIME_S = 1e9  # the longest instant, duration or delay a user may give (s): about 32 years
MIN_PERIOD_S = 1e-9  # the shortest period: 1 ns
MIN_RATE_HZ = 1e-9  # one step in MAX_TIME_S
MAX_RATE_HZ = 1e9  # one step per ns
MAX_SEED = 2**128 - 1  # numpy's seed sequences keep 128 bits of a seed
MAX_FAULT_VALUE = 1e9  # a fault's value, whatever its kind (a delay: MAX_TIME_S)
MAX_FORCE_N = 1e7  # a disturbance force per axis (N): a large launcher's thrust
MAX_TORQUE_NM = 1e7  # a disturbance torque per axis (N m)


def _named(name: str | None) -> str:
    return f"{name} " if name else ""


def _in_range(value: float, low: float, high: float, unit: str, why: str, name: str | None) -> float:
    """``value`` if it lies in [low, high] (NaN does not); a ValueError naming it and why otherwise."""
    if not low <= value <= high:
        span = f"[{low:g}, {high:g}]" + (f" {unit}" if unit else "")
        raise ValueError(f"{_named(name)}must lie in {span} ({why}), got {value!r}")
    return value


def check_time_s(value: float, name: str | None = None) -> float:
    """An instant, a duration or a delay (s): finite, in [0, MAX_TIME_S]."""
    why = "about 32 years: the kernel counts time in 64-bit nanoseconds"
    return _in_range(value, 0, MAX_TIME_S, "s", why, name)


def check_duration_s(value: float, name: str | None = None) -> float:
    """A run's duration (s): positive, at most MAX_TIME_S, and at least 1 ns."""
    why = "at least 1 ns; at most about 32 years: the kernel counts time in 64-bit nanoseconds"
    return _in_range(value, MIN_PERIOD_S, MAX_TIME_S, "s", why, name)


def check_period_s(value: float, name: str | None = None) -> float:
    """A period (s): a whole number of ns, at least 1 ns and at most MAX_TIME_S."""
    return _in_range(
        value, MIN_PERIOD_S, MAX_TIME_S, "s", "a period is a whole number of nanoseconds, at least 1", name
    )


def check_rate_hz(value: float, name: str | None = None) -> float:
    """A rate (Hz) whose period is at least 1 ns and at most MAX_TIME_S."""
    why = f"its period is a whole number of nanoseconds, at least 1, and at most {MAX_TIME_S:g} s"
    return _in_range(value, MIN_RATE_HZ, MAX_RATE_HZ, "Hz", why, name)


def check_probability(value: float, name: str | None = None) -> float:
    """A probability (a packet's loss, a bit's error): in [0, 1]."""
    return _in_range(value, 0, 1, "", "a probability", name)


def check_seed(value: int, name: str | None = None) -> int:
    """A run or campaign seed: an integer in [0, MAX_SEED]."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or not 0 <= value <= MAX_SEED:
        raise ValueError(
            f"{_named(name)}must be an integer in [0, 2**128 - 1] (numpy's seed sequences keep 128 bits), got {value!r}"
        )
    return int(value)


def check_magnitude(value: float, bound: float, unit: str, name: str | None = None) -> float:
    """A finite number within +-``bound``."""
    if not -bound <= value <= bound:
        raise ValueError(f"{_named(name)}must lie in [-{bound:g}, {bound:g}]{unit}, got {value!r}")
    return value


# the types of pydantic fields: ``altimeter_rate_hz: RateHz = Field(20.0, le=10_000)`` (a field's
# own constraints narrow these)
TimeS = Annotated[float, AfterValidator(check_time_s)]
DurationS = Annotated[float, AfterValidator(check_duration_s)]
PeriodS = Annotated[float, AfterValidator(check_period_s)]
RateHz = Annotated[float, AfterValidator(check_rate_hz)]
Seed = Annotated[int, AfterValidator(check_seed)]
Probability = Annotated[float, AfterValidator(check_probability)]


def check_state_finite(island, t_ns: int) -> None:
    """Raise :class:`StateNotFinite` if ``island``'s continuous state is not finite at its barrier
    ``t_ns``: one pass over its state vector (the models that hold the bad elements are looked
    for only then)."""
    x = island.state
    if not x.size or np.isfinite(x).all():
        return
    where = []
    for slot in island.slots:
        own = getattr(slot.model, "x", None)
        if isinstance(own, np.ndarray) and own.size and not np.isfinite(own).all():
            where.append(_not_finite(slot.name, own, getattr(slot.model, "state_names", None) or ()))
    raise StateNotFinite(island.name, t_ns, where or ["its state vector"])


def check_rows_finite(states: np.ndarray, t_ns: int, islands: list, slots: list) -> None:
    """Raise :class:`StateNotFinite` unless every row of ``states`` is finite at ``t_ns``: a row
    block's continuous states after its instant, row ``i`` those of the model of ``slots[i]``, the
    body of island ``islands[i]``. One vectorised pass; the first row that is not finite is named
    as :func:`check_state_finite` names an island (its island, its model and the bad states)."""
    if np.isfinite(states).all():
        return
    i = int(np.flatnonzero(~np.isfinite(states).all(axis=1))[0])
    names = getattr(slots[i].model, "state_names", None) or ()
    raise StateNotFinite(islands[i].name, t_ns, [_not_finite(slots[i].name, states[i], names)])


def _not_finite(model: str, x: np.ndarray, names) -> str:
    """``model: name, name`` of the elements of ``x`` that are not finite."""
    bad = [i for i in range(x.size) if not math.isfinite(x[i])]
    return f"{model}: " + ", ".join(names[i] if i < len(names) else f"x[{i}]" for i in bad)
