"""Explicit Runge-Kutta integrators for ``xdot = f(t, x)``.

Every integrator has the interface the hop kernel relies on:

* ``advance(f, t0, x0, t1) -> x1``: ``t`` in seconds, ``x`` a 1-D float64 array. Fixed-step
  integrators take exactly one step of size ``t1 - t0`` and call ``f`` exactly
  ``samples_per_step`` times. Adaptive integrators take as many internal steps as their
  tolerances need and land exactly on ``t1``.
* ``reset()``: forget the step-size estimate (after a discontinuity or a rollback).
* ``stats``: cumulative :class:`IntegratorStats` (``steps``, ``rejected``, ``derivative_calls``).
* ``name`` and ``order``.

``f`` may be any Python callable. For compiled callers, :func:`euler_step_compiled` and
:func:`rk4_step_compiled` take a numba-compiled ``f`` and do the same arithmetic as the
corresponding classes.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import numpy as np

from hopsim.dynamics import detlinalg, detmath
from hopsim.dynamics._jit import compiled


class StepSizeError(RuntimeError):
    """An adaptive integrator could not meet its tolerances with a step above ``min_step``."""


@dataclass
class IntegratorStats:
    """Cumulative counters of an integrator (also readable as ``stats["steps"]``)."""

    steps: int = 0
    rejected: int = 0
    derivative_calls: int = 0

    def __getitem__(self, key):
        return getattr(self, key)

    def as_dict(self) -> dict:
        return asdict(self)

    def clear(self) -> None:
        self.steps = self.rejected = self.derivative_calls = 0


class _CountingRhs:
    """Wraps ``f`` to count derivative calls and give back float64 arrays."""

    __slots__ = ("f", "stats")

    def __init__(self, f, stats):
        self.f = f
        self.stats = stats

    def __call__(self, t, x):
        self.stats.derivative_calls += 1
        return np.asarray(self.f(t, x), dtype=np.float64)


def _as_state(x0) -> np.ndarray:
    x = np.array(x0, dtype=np.float64)
    if x.ndim != 1:
        raise ValueError(f"state must be a 1-D array, got shape {x.shape}")
    return x


# --------------------------------------------------------------------------- fixed step


class FixedStepIntegrator:
    """Base of the single-step integrators: one ``advance`` is one step."""

    name = "fixed"
    order = 0
    samples_per_step = 0

    def __init__(self):
        self.stats = IntegratorStats()

    def reset(self) -> None:
        """Nothing to forget: a fixed-step method keeps no step-size estimate."""

    def advance(self, f, t0: float, x0, t1: float) -> np.ndarray:
        """One step of size ``t1 - t0`` [s] from state ``x0``; returns the new state."""
        x = _as_state(x0)
        h = float(t1) - float(t0)
        if h == 0.0:
            return x
        x1 = self.step(_CountingRhs(f, self.stats), float(t0), x, h)
        self.stats.steps += 1
        return x1

    def step(self, f, t, x, h):  # pragma: no cover - abstract
        raise NotImplementedError


class Euler(FixedStepIntegrator):
    """Forward Euler, order 1, one derivative sample per step."""

    name = "euler"
    order = 1
    samples_per_step = 1

    def step(self, f, t, x, h):
        return x + h * f(t, x)


class RK4(FixedStepIntegrator):
    """The classical fourth-order Runge-Kutta method, four derivative samples per step."""

    name = "rk4"
    order = 4
    samples_per_step = 4

    def step(self, f, t, x, h):
        half = 0.5 * h
        k1 = f(t, x)
        k2 = f(t + half, x + half * k1)
        k3 = f(t + half, x + half * k2)
        k4 = f(t + h, x + h * k3)
        return x + (h / 6.0) * (k1 + 2.0 * k2 + 2.0 * k3 + k4)


@compiled
def euler_step_compiled(f, t, x, h):
    """Forward Euler step with a numba-compiled ``f(t, x)``."""
    return x + h * f(t, x)


@compiled
def rk4_step_compiled(f, t, x, h):
    """Classical RK4 step with a numba-compiled ``f(t, x)``; same arithmetic as :class:`RK4`."""
    half = 0.5 * h
    k1 = f(t, x)
    k2 = f(t + half, x + half * k1)
    k3 = f(t + half, x + half * k2)
    k4 = f(t + h, x + h * k3)
    return x + (h / 6.0) * (k1 + 2.0 * k2 + 2.0 * k3 + k4)


# --------------------------------------------------------------------------- adaptive


class EmbeddedRungeKutta:
    """Adaptive explicit Runge-Kutta pair with first-same-as-last stages.

    Parameters
    ----------
    rtol, atol:
        Relative and absolute tolerances; a step is accepted when the RMS over components of
        ``err_i / (atol + rtol * max(|x_i|, |x_new_i|))`` is at most 1.
    min_step:
        Smallest step [s] the method may take to meet the tolerances (the final step that lands
        on ``t1`` may be shorter). Failing at it raises :class:`StepSizeError`.
    max_step:
        Largest step [s].
    first_step:
        Initial step [s]; by default chosen from the derivative at the start.
    """

    name = "embedded"
    order = 0
    error_order = 0  # order of the lower member, which sets the step-size exponent
    safety = 0.9
    min_factor = 0.2
    max_factor = 10.0

    def __init__(
        self,
        rtol: float = 1e-6,
        atol: float = 1e-9,
        min_step: float = 1e-12,
        max_step: float = math.inf,
        first_step: float | None = None,
    ):
        if rtol < 0 or atol < 0 or (rtol == 0 and atol == 0):
            raise ValueError("rtol and atol must be non-negative and not both zero")
        if min_step < 0 or max_step <= 0 or min_step > max_step:
            raise ValueError("need 0 <= min_step <= max_step and max_step > 0")
        self.rtol = float(rtol)
        self.atol = float(atol)
        self.min_step = float(min_step)
        self.max_step = float(max_step)
        self.first_step = first_step
        self.stats = IntegratorStats()
        self._h = None

    def reset(self) -> None:
        """Forget the step-size estimate; the next step size is chosen afresh."""
        self._h = None

    @property
    def step_size_estimate(self) -> float | None:
        """The step [s] the next ``advance`` will try first (None after a reset)."""
        return self._h

    # -- subclass hooks -----------------------------------------------------------------
    def _stages(self, f, t, x, h, k1):
        """Return ``(x_new, k_last, error_norm)`` for a step of size ``h`` from ``(t, x)``,
        where ``k_last = f(t + h, x_new)`` and ``k1 = f(t, x)``."""
        raise NotImplementedError

    # -- helpers -----------------------------------------------------------------------
    def _scale(self, x, x_new):
        return self.atol + self.rtol * np.maximum(np.abs(x), np.abs(x_new))

    def _initial_step(self, f, t0, x0, k1, span):
        if self.first_step is not None:
            return min(float(self.first_step), span)
        scale = self.atol + self.rtol * np.abs(x0)
        q0, q1 = x0 / scale, k1 / scale
        d0 = math.sqrt(np.mean(q0 * q0)) if x0.size else 0.0
        d1 = math.sqrt(np.mean(q1 * q1)) if x0.size else 0.0
        h0 = 1e-6 if (d0 < 1e-5 or d1 < 1e-5) else 0.01 * d0 / d1
        h0 = min(h0, span)
        k2 = f(t0 + h0, x0 + h0 * k1)
        q2 = (k2 - k1) / scale
        d2 = math.sqrt(np.mean(q2 * q2)) / h0 if x0.size else 0.0
        h1 = max(1e-06, 0.001 * h0) if max(d1, d2) <= 1e-15 else detmath.pow(0.01 / max(d1, d2), 1.0 / (self.order + 1))
        return min(100.0 * h0, h1, span, self.max_step)

    # -- public ------------------------------------------------------------------------
    def advance(self, f, t0: float, x0, t1: float) -> np.ndarray:
        """Integrate from ``t0`` to exactly ``t1`` [s]; returns the state at ``t1``."""
        t0 = float(t0)
        t1 = float(t1)
        x = _as_state(x0)
        if t1 < t0:
            raise ValueError(f"t1={t1} s is before t0={t0} s; integration runs forward only")
        if t1 == t0:
            return x
        rhs = _CountingRhs(f, self.stats)
        t = t0
        k1 = rhs(t, x)
        h = self._h if self._h is not None else self._initial_step(rhs, t0, x, k1, t1 - t0)
        h = min(max(h, self.min_step), self.max_step)
        while t < t1:
            remaining = t1 - t
            landing = h >= remaining or t + 1.01 * h >= t1
            h_try = remaining if landing else h
            rejected_here = False
            while True:
                x_new, k_new, err = self._stages(rhs, t, x, h_try, k1)
                if err <= 1.0:
                    break
                self.stats.rejected += 1
                rejected_here = True
                factor = max(self.min_factor, self.safety * detmath.pow(err, -1.0 / (self.error_order + 1)))
                if not np.isfinite(err):
                    factor = self.min_factor
                h_next = h_try * factor
                if h_try <= self.min_step:
                    raise StepSizeError(
                        f"{self.name}: cannot meet rtol={self.rtol:g}, atol={self.atol:g} at "
                        f"t={t:.9g} s with a step of at least min_step={self.min_step:g} s "
                        f"(error ratio {err:.3g} at step {h_try:.3g} s); loosen the tolerances, "
                        f"lower min_step, or check f for a discontinuity inside the step"
                    )
                h_try = max(h_next, self.min_step)
                landing = h_try >= t1 - t
                if landing:
                    h_try = t1 - t
            # accepted
            self.stats.steps += 1
            if err == 0.0:
                factor = self.max_factor
            else:
                factor = min(
                    self.max_factor, max(self.min_factor, self.safety * detmath.pow(err, -1.0 / (self.error_order + 1)))
                )
            if rejected_here:
                factor = min(1.0, factor)
            h_proposed = min(h_try * factor, self.max_step)
            if landing and h_try < h:
                # a step shortened to land on t1 says little about the natural step size
                h_proposed = max(h_proposed, h)
            h = max(h_proposed, self.min_step)
            x = x_new
            k1 = k_new
            t = t1 if landing else t + h_try
        self._h = h
        return x


class DormandPrince54(EmbeddedRungeKutta):
    """Dormand-Prince 5(4): seven-stage FSAL pair, fifth-order solution, fourth-order error
    estimate (Dormand & Prince 1980)."""

    name = "dopri54"
    order = 5
    error_order = 4
    min_factor = 0.2
    max_factor = 10.0

    C = np.array([0.0, 1 / 5, 3 / 10, 4 / 5, 8 / 9, 1.0, 1.0])
    A = [
        [],
        [1 / 5],
        [3 / 40, 9 / 40],
        [44 / 45, -56 / 15, 32 / 9],
        [19372 / 6561, -25360 / 2187, 64448 / 6561, -212 / 729],
        [9017 / 3168, -355 / 33, 46732 / 5247, 49 / 176, -5103 / 18656],
        [35 / 384, 0.0, 500 / 1113, 125 / 192, -2187 / 6784, 11 / 84],
    ]
    B = np.array([35 / 384, 0.0, 500 / 1113, 125 / 192, -2187 / 6784, 11 / 84, 0.0])
    B_LOW = np.array([5179 / 57600, 0.0, 7571 / 16695, 393 / 640, -92097 / 339200, 187 / 2100, 1 / 40])
    E = B - B_LOW

    def _stages(self, f, t, x, h, k1):
        K = np.empty((7, x.size))
        K[0] = k1
        for i in range(1, 6):
            dx = np.zeros_like(x)
            for j, a in enumerate(self.A[i]):
                if a != 0.0:
                    dx += a * K[j]
            K[i] = f(t + self.C[i] * h, x + h * dx)
        x_new = x + h * detlinalg.matmul(self.B[:6], K[:6])
        K[6] = f(t + h, x_new)
        err_vec = h * detlinalg.matmul(self.E, K)
        q = err_vec / self._scale(x, x_new)
        err = math.sqrt(np.mean(q * q)) if x.size else 0.0
        return x_new, K[6], err


def _dop853_tableau():
    # The published Dormand-Prince 8(5,3) coefficients, as tabulated in SciPy (imported when the
    # first DOP853 is made: scipy.integrate takes about half a second to import)
    from scipy.integrate._ivp import dop853_coefficients as tab

    n = tab.N_STAGES
    return (
        np.array(tab.C[:n], dtype=float),
        np.array(tab.A[:n, :n], dtype=float),
        np.array(tab.B, dtype=float),
        np.array(tab.E3, dtype=float),
        np.array(tab.E5, dtype=float),
    )


class DOP853(EmbeddedRungeKutta):
    """Dormand-Prince 8(5,3): twelve-stage eighth-order method with a combined fifth- and
    third-order error estimate (Hairer, Norsett & Wanner, Solving ODEs I), for tight
    tolerances."""

    name = "dop853"
    order = 8
    error_order = 7
    min_factor = 0.333
    max_factor = 6.0

    def __init__(self, *args, **kwargs):
        if "C" not in vars(DOP853):
            DOP853.C, DOP853.A, DOP853.B, DOP853.E3, DOP853.E5 = _dop853_tableau()
        super().__init__(*args, **kwargs)

    def _stages(self, f, t, x, h, k1):
        n_stages = self.B.size
        K = np.empty((n_stages + 1, x.size))
        K[0] = k1
        for i in range(1, n_stages):
            dx = detlinalg.matmul(self.A[i, :i], K[:i])
            K[i] = f(t + self.C[i] * h, x + h * dx)
        x_new = x + h * detlinalg.matmul(self.B, K[:n_stages])
        K[n_stages] = f(t + h, x_new)
        if x.size == 0:
            return x_new, K[n_stages], 0.0
        scale = self._scale(x, x_new)
        e5 = detlinalg.matmul(self.E5, K) / scale
        e3 = detlinalg.matmul(self.E3, K) / scale
        s5 = detlinalg.dot(e5, e5)
        s3 = detlinalg.dot(e3, e3)
        err = 0.0 if s5 == 0.0 and s3 == 0.0 else abs(h) * s5 / math.sqrt((s5 + 0.01 * s3) * x.size)
        return x_new, K[n_stages], err


INTEGRATORS = {
    Euler.name: Euler,
    RK4.name: RK4,
    DormandPrince54.name: DormandPrince54,
    DOP853.name: DOP853,
}


def make_integrator(name: str, **options):
    """Integrator by name: ``euler``, ``rk4``, ``dopri54`` or ``dop853``."""
    try:
        cls = INTEGRATORS[name]
    except KeyError:
        raise ValueError(f"unknown integrator {name!r}; choose one of {sorted(INTEGRATORS)}") from None
    return cls(**options)
