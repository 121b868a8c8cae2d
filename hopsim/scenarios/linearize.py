"""Linearization of a scenario about its state at a time T, by finite differences (Dshell's scheme).

Run the scenario to T; about the state there, the continuous dynamics and the chosen outputs are

    dx/dt = A dx + B du,        dy = C dx + D du

with ``x`` chosen continuous states (``MODEL.STATE``, e.g. ``leader.omega_x``, or ``MODEL.*`` for all
of a model's), ``u`` chosen inputs (a model's public numeric attribute, scalar or an element of an
array: ``MODEL.ATTRIBUTE`` or ``MODEL.ATTRIBUTE[I]``, e.g. a vehicle's ``disturbance_force_N[0]``) and
``y`` chosen outputs (a numeric field of what a model's ``update_flow_outs`` writes at T:
``MODEL.PORT.FIELD[.FIELD...]``, e.g. ``leader.state.omega_BN_B.x``). Each column is a difference
quotient about the state at T; evaluations do not disturb each other (every model's snapshot is restored before
each one:
generators, sequence numbers, loads):

- ``central2``: (f(x+h) - f(x-h)) / 2h, error O(h^2);
- ``central4``: (f(x-2h) - 8 f(x-h) + 8 f(x+h) - f(x+2h)) / 12h, error O(h^4);
- ``richardson``: central2 extrapolated, (alpha^2 D(h/alpha) - D(h)) / (alpha^2 - 1), error O(h^4).

The step of an element with value v is ``h = eps + eps1 * eps * |v|`` (Dshell's ``eps`` and relative
``eps1``; ``eps1`` must be 0 with Richardson extrapolation, as in Dshell). States couple across
islands only through messages, which are held at T: A has no entries between islands.
"""

from __future__ import annotations

import math
import re
from contextlib import ExitStack
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from hopsim.bus.atomic import replacing
from hopsim.scenarios.registry import ScenarioError

SCHEMES = ("central2", "central4", "richardson")
_INPUT = re.compile(r"^([^.\[\]]+)\.([A-Za-z_]\w*)(?:\[(\d+)\])?$")


@dataclass
class Linearization:
    """A, B, C, D (units: those of the rows over those of the columns) with their names."""

    scenario: str
    at_s: float
    states: list[str]
    inputs: list[str]
    outputs: list[str]
    A: np.ndarray
    B: np.ndarray
    C: np.ndarray
    D: np.ndarray
    x0: np.ndarray
    u0: np.ndarray
    y0: np.ndarray
    scheme: str
    eps: float
    eps1: float
    meta: dict[str, Any] = field(default_factory=dict)

    def save(self, path) -> None:
        """Write the matrices and their names to a NumPy ``.npz`` file at ``path`` (as named; under
        its partial name until complete, :func:`hopsim.bus.atomic.replacing`)."""
        with replacing(path) as tmp, open(tmp, "wb") as f:
            self._write(f)

    def _write(self, f) -> None:
        np.savez(
            f,
            A=self.A,
            B=self.B,
            C=self.C,
            D=self.D,
            x0=self.x0,
            u0=self.u0,
            y0=self.y0,
            states=np.array(self.states),
            inputs=np.array(self.inputs),
            outputs=np.array(self.outputs),
            scenario=self.scenario,
            at_s=self.at_s,
            scheme=self.scheme,
            eps=self.eps,
            eps1=self.eps1,
        )


class _Point:
    """The simulation held at T: evaluates (xdot, y) for a state and inputs, restoring it first."""

    def __init__(self, sim, states: list[str], inputs: list[str], outputs: list[str]):
        self.sim = sim
        self.snapshots = [(slot, slot.call("snapshot")) for slot in sim.slots()]
        self.t_ns = sim.now
        self.states = [self._state(name) for name in states]
        self.inputs = [self._input(name) for name in inputs]
        self.outputs = [self._output(name) for name in outputs]
        self.islands = list(dict.fromkeys(island for island, _ in self.states))

    # -- names
    def _model(self, name: str, what: str):
        try:
            return self.sim.slot(name)
        except Exception:
            raise ScenarioError(
                f"{what}: no model {name!r}; the models are {', '.join(self.sim.model_names())}"
            ) from None

    def _state(self, name: str):
        model_name, _, state = name.rpartition(".")
        slot = self._model(model_name, f"state {name!r}")
        names = slot.model.state_names
        if state not in names:
            raise ScenarioError(f"state {name!r}: {model_name} has the continuous states {', '.join(names) or 'none'}")
        island = slot.island.current
        return island, island.state_slice(model_name).start + names.index(state)

    def _input(self, name: str):
        found = _INPUT.match(name)
        if not found:
            raise ScenarioError(f"input {name!r}: write MODEL.ATTRIBUTE or MODEL.ATTRIBUTE[I]")
        model_name, attr, index = found.group(1), found.group(2), found.group(3)
        model = self._model(model_name, f"input {name!r}").model
        value = getattr(model, attr, None)
        numeric = isinstance(value, float) or (isinstance(value, np.ndarray) and value.dtype == float)
        if attr.startswith("_") or not numeric:
            raise ScenarioError(f"input {name!r}: {model_name}.{attr} is not a public float or float array")
        if isinstance(value, np.ndarray) and (index is None or int(index) >= value.size):
            raise ScenarioError(f"input {name!r}: give an index below {value.size}, e.g. {model_name}.{attr}[0]")
        if isinstance(value, float) and index is not None:
            raise ScenarioError(f"input {name!r}: {model_name}.{attr} is a scalar (no index)")
        return model_name, attr, None if index is None else int(index)

    def _output(self, name: str):
        model_name, port, *path = name.split(".")
        slot = self._model(model_name, f"output {name!r}")
        if port not in slot.model.outputs or not path:
            raise ScenarioError(
                f"output {name!r}: write MODEL.PORT.FIELD; {model_name}'s output ports are "
                f"{', '.join(slot.model.outputs)}"
            )
        return model_name, port, path

    # -- evaluation
    def values(self) -> tuple[np.ndarray, np.ndarray]:
        """(x, u) at T."""
        x = np.array([island.state[i] for island, i in self.states])
        return x, np.array([self._get(u) for u in self.inputs])

    def _get(self, u) -> float:
        model_name, attr, index = u
        value = getattr(self.sim.slot(model_name).model, attr)
        return float(value if index is None else value[index])

    def _set(self, u, v: float) -> None:
        model_name, attr, index = u
        model = self.sim.slot(model_name).model
        if index is None:
            setattr(model, attr, float(v))
        else:
            value = np.array(getattr(model, attr), dtype=float)  # a copy: restored snapshots share nothing
            value[index] = v
            setattr(model, attr, value)

    def evaluate(self, x: np.ndarray, u: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(xdot of the chosen states, y) at T for state ``x`` and inputs ``u``."""
        self.restore()
        for spec, v in zip(self.inputs, u):
            self._set(spec, v)
        xdot = np.empty(len(self.states))
        with ExitStack() as held:  # every island at its perturbed state while outputs are read
            for island in self.islands:
                full = island.state
                mine = [k for k, (isl, _) in enumerate(self.states) if isl is island]
                for k in mine:
                    full[self.states[k][1]] = x[k]
                derivative = held.enter_context(island.sampled_at(full))
                for k in mine:
                    xdot[k] = derivative[self.states[k][1]]
            y = np.empty(len(self.outputs))
            written = {}
            for k, (model_name, port, path) in enumerate(self.outputs):
                if model_name not in written:
                    written[model_name] = self.sim.slot(model_name).model.outputs_at(self.t_ns)
                msg = written[model_name].get(port)
                if msg is None:
                    raise ScenarioError(
                        f"output {'.'.join([model_name, port, *path])}: {model_name} wrote "
                        f"nothing on {port} at {self.t_ns / 1e9:g} s"
                    )
                y[k] = _field(msg, path, model_name, port)
        return xdot, y

    def restore(self) -> None:
        """Every model as it was at T (the islands' states are never changed here)."""
        for slot, snapshot in self.snapshots:
            slot.call("restore", snapshot)


def _field(msg, path: list[str], model_name: str, port: str) -> float:
    value = msg
    for part in path:
        found = re.fullmatch(r"(\w+)(?:\[(\d+)\])?", part)
        try:
            value = getattr(value, found.group(1))
            if found.group(2) is not None:
                value = value[int(found.group(2))]
        except (AttributeError, IndexError, TypeError):
            raise ScenarioError(
                f"output {model_name}.{port}.{'.'.join(path)}: no field {part!r} in {type(value).__name__}"
            ) from None
    if not isinstance(value, (int, float)):
        raise ScenarioError(
            f"output {model_name}.{port}.{'.'.join(path)} is a {type(value).__name__}, not a number; "
            f"name one of its numeric fields"
        )
    return float(value)


def _column(evaluate, z0: np.ndarray, j: int, h: float, scheme: str, alpha: float) -> np.ndarray:
    """d f / d z_j at z0 by the scheme, f returning one vector."""

    def at(step: float) -> np.ndarray:
        z = z0.copy()
        z[j] += step
        return evaluate(z)

    def central2(step: float) -> np.ndarray:
        return (at(step) - at(-step)) / (2.0 * step)

    if scheme == "central2":
        return central2(h)
    if scheme == "central4":
        return (at(-2 * h) - 8.0 * at(-h) + 8.0 * at(h) - at(2 * h)) / (12.0 * h)
    a2 = alpha * alpha
    return (a2 * central2(h / alpha) - central2(h)) / (a2 - 1.0)


def linearize_simulation(
    sim,
    states: list[str],
    inputs: list[str] = (),
    outputs: list[str] = (),
    scheme: str = "central2",
    eps: float = 1e-6,
    eps1: float = 0.0,
    alpha: float = 2.0,
) -> tuple[np.ndarray, ...]:
    """(A, B, C, D, x0, u0, y0) of a simulation at its present time (see the module's description).
    The simulation is left as it was."""
    if scheme not in SCHEMES:
        raise ScenarioError(f"unknown scheme {scheme!r}; choose one of: {', '.join(SCHEMES)}")
    if not (math.isfinite(eps) and eps > 0) or not (math.isfinite(eps1) and eps1 >= 0):
        raise ScenarioError(f"eps must be positive and eps1 non-negative (finite), got eps={eps}, eps1={eps1}")
    if scheme == "richardson" and eps1 != 0:
        raise ScenarioError(
            "eps1 must be 0 with Richardson extrapolation (a relative step would change between the two step sizes)"
        )
    if not (math.isfinite(alpha) and alpha > 1):
        raise ScenarioError(f"alpha (Richardson's step ratio) must be above 1, got {alpha}")
    if not states:
        raise ScenarioError("name at least one state (MODEL.STATE or MODEL.*)")
    point = _Point(sim, list(states), list(inputs), list(outputs))
    try:
        x0, u0 = point.values()
        _xdot0, y0 = point.evaluate(x0, u0)
        n, m = len(x0), len(u0)
        A, B = np.empty((n, n)), np.empty((n, m))
        C, D = np.empty((len(y0), n)), np.empty((len(y0), m))
        z0 = np.concatenate([x0, u0])

        def evaluate(z):
            xdot, y = point.evaluate(z[:n], z[n:])
            return np.concatenate([xdot, y])

        for j in range(n + m):
            h = eps + eps1 * eps * abs(z0[j])
            col = _column(evaluate, z0, j, h, scheme, alpha)
            if j < n:
                A[:, j], C[:, j] = col[:n], col[n:]
            else:
                B[:, j - n], D[:, j - n] = col[:n], col[n:]
    finally:
        point.restore()
    return A, B, C, D, x0, u0, y0


def expand_states(sim, names: list[str]) -> list[str]:
    """``MODEL.*`` becomes every continuous state of MODEL, in order."""
    out = []
    for name in names:
        model_name, _, state = name.rpartition(".")
        if state == "*":
            out += [f"{model_name}.{s}" for s in sim.slot(model_name).model.state_names]
        else:
            out.append(name)
    return out


def linearize(
    scenario: str,
    at_s: float,
    states: list[str],
    inputs: list[str] = (),
    outputs: list[str] = (),
    overrides: dict | None = None,
    seed: int = 0,
    scheme: str = "central2",
    eps: float = 1e-6,
    eps1: float = 0.0,
    alpha: float = 2.0,
) -> Linearization:
    """Run ``scenario`` to ``at_s`` seconds (local backend) and linearize it there."""
    from hopsim.scenarios.runner import run_scenario

    if not (math.isfinite(at_s) and at_s >= 0):
        raise ScenarioError(f"--at must be a finite time in seconds >= 0, got {at_s}")
    result = run_scenario(scenario, overrides, seed=seed, duration_s=at_s, keep_sim=True)
    if result.end_time_s < at_s:
        raise ScenarioError(f"{scenario} stopped at {result.end_time_s:g} s ({result.stop_reason}), before {at_s:g} s")
    sim = result.sim
    try:
        state_names = expand_states(sim, list(states))
    except Exception as e:
        raise ScenarioError(f"states: {e}") from None
    A, B, C, D, x0, u0, y0 = linearize_simulation(sim, state_names, inputs, outputs, scheme, eps, eps1, alpha)
    return Linearization(
        scenario,
        at_s,
        state_names,
        list(inputs),
        list(outputs),
        A,
        B,
        C,
        D,
        x0,
        u0,
        y0,
        scheme,
        eps,
        eps1,
        meta={"seed": seed, "overrides": dict(overrides or {})},
    )
