"""The integrator protocol of an island, and the default an island gets.

An island's integrator is pluggable: any object with ``advance(f, t0, x0, t1) -> x1``,
``reset()``, ``stats`` (``steps``, ``rejected``, ``derivative_calls``), ``name`` and ``order``.
Fixed-step methods take exactly one step of size ``t1 - t0`` and call ``f`` exactly
``samples_per_step`` times. Times are seconds, states 1-D float64 arrays. The methods themselves
(Euler, RK4, Dormand-Prince 5(4), DOP853) live in :mod:`hopsim.dynamics.integrators`; the kernel
does not import them: the package root installs RK4 as the default with
:func:`set_default_integrator`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

import numpy as np

Derivative = Callable[[float, np.ndarray], np.ndarray]


class Integrator(Protocol):
    name: str
    order: int
    stats: Any

    def advance(self, f: Derivative, t0: float, x0: np.ndarray, t1: float) -> np.ndarray: ...

    def reset(self) -> None: ...


_default_factory: Callable[[], Integrator] | None = None


def set_default_integrator(factory: Callable[[], Integrator]) -> None:
    """Make ``factory()`` the integrator of islands created without one."""
    global _default_factory
    _default_factory = factory


def default_integrator() -> Integrator:
    if _default_factory is None:
        raise RuntimeError(
            "no default integrator: give the island one, e.g. add_island(name, integrator=hopsim.dynamics.RK4())"
        )
    return _default_factory()
