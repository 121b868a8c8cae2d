"""The kernel's integrator protocol and two fixed-step methods (Euler, RK4) over numpy state.

An island's integrator is pluggable: any object with ``advance(f, t0, x0, t1) -> x1``,
``reset()``, ``stats``, ``name`` and ``order`` works (``hopsim.dynamics`` provides adaptive ones).
Fixed-step methods take exactly one step of size ``t1 - t0`` and call ``f`` exactly
``samples_per_step`` times, which is how the kernel counts derivative evaluations.
Times are seconds, states 1-D float64 arrays.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Protocol

import numpy as np

Derivative = Callable[[float, np.ndarray], np.ndarray]


@dataclass
class IntegratorStats:
    steps: int = 0
    rejected: int = 0
    derivative_calls: int = 0


class Integrator(Protocol):
    name: str
    order: int
    stats: IntegratorStats

    def advance(self, f: Derivative, t0: float, x0: np.ndarray, t1: float) -> np.ndarray: ...

    def reset(self) -> None: ...


class Euler:
    """Forward Euler, first order, one derivative sample per step."""

    name = "euler"
    order = 1
    samples_per_step = 1

    def __init__(self):
        self.stats = IntegratorStats()

    def advance(self, f: Derivative, t0: float, x0: np.ndarray, t1: float) -> np.ndarray:
        h = t1 - t0
        self.stats.steps += 1
        self.stats.derivative_calls += 1
        return x0 + h * f(t0, x0)

    def reset(self) -> None:
        """Fixed-step methods keep no history."""


class RK4:
    """Classical fourth-order Runge-Kutta: samples at the start, twice at the middle, at the end."""

    name = "rk4"
    order = 4
    samples_per_step = 4

    def __init__(self):
        self.stats = IntegratorStats()

    def advance(self, f: Derivative, t0: float, x0: np.ndarray, t1: float) -> np.ndarray:
        h = t1 - t0
        half = 0.5 * h
        k1 = f(t0, x0)
        k2 = f(t0 + half, x0 + half * k1)
        k3 = f(t0 + half, x0 + half * k2)
        k4 = f(t1, x0 + h * k3)
        self.stats.steps += 1
        self.stats.derivative_calls += 4
        return x0 + (h / 6.0) * (k1 + 2.0 * k2 + 2.0 * k3 + k4)

    def reset(self) -> None:
        """Fixed-step methods keep no history."""


INTEGRATORS = {"euler": Euler, "rk4": RK4}
