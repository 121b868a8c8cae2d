"""Dispersions of scenario parameters: the knobs of a Monte Carlo campaign.

A dispersion gives a parameter its value in run ``k`` of a campaign. The kinds are Dshell's
knobs (seed 000, model library section 5) and Basilisk's dispersions:

==============  =====================================================================
``constant``    ``value``, the same in every run
``sequence``    ``start + k * step``
``list``        ``values[k % len(values)]`` (a fault list is a list of fault lists)
``grid``        every combination of several lists, run ``k`` taking combination ``k``
                (the first axis varies slowest); a campaign over a grid has
                ``product(len(values))`` runs
``uniform``     uniform in ``[low, high)``
``normal``      Gaussian ``mean`` and ``std``, optionally cut to ``[low, high]`` by redrawing
``choice``      one of ``values`` at random, with optional ``weights``
``mvnormal``    a vector from a multivariate normal with ``mean`` and ``covariance``
==============  =====================================================================

A dispersion names the parameter it sets by a *path*: ``altitude_m``, a nested field
``contact.restitution``, an element of a vector ``boom_offset_m[1]``, or a field of a fault
``faults[0].t_s``; a path into a mapping parameter (a SPHERES scenario's ``vehicle_overrides``)
names one of its dotted keys, ``vehicle_overrides.thrusters.pressure_psig``, as ``--set`` does
(:func:`set_parameter`). Random draws of run ``k`` come from a generator seeded by (campaign seed,
``k``, the dispersion's name) alone, so a run's parameters never depend on the other runs or on
the order in which dispersions are listed.
"""

from __future__ import annotations

import hashlib
import itertools
import math
import re
from typing import Annotated, Any, Literal, get_origin

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from hopsim.dynamics import detlinalg, detrandom

_PATH_PART = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)((?:\[\d+\])*)")


class _Knob(BaseModel):
    model_config = ConfigDict(extra="forbid")

    def value(self, k: int, rng: np.random.Generator) -> Any:  # pragma: no cover - every kind overrides it
        raise NotImplementedError


def _finite(x: float, what: str) -> float:
    if not math.isfinite(x):
        raise ValueError(f"{what} must be a finite number, got {x}")
    return x


class Constant(_Knob):
    kind: Literal["constant"]
    value_: Any = Field(alias="value")

    def value(self, k, rng):
        return self.value_


class SequenceKnob(_Knob):
    kind: Literal["sequence"]
    start: float
    step: float

    def value(self, k, rng):
        return self.start + k * self.step


class ListKnob(_Knob):
    kind: Literal["list"]
    values: list[Any] = Field(min_length=1)

    def value(self, k, rng):
        return self.values[k % len(self.values)]


class Uniform(_Knob):
    kind: Literal["uniform"]
    low: float
    high: float

    @model_validator(mode="after")
    def _ordered(self):
        _finite(self.low, "low")
        _finite(self.high, "high")
        if not self.low < self.high:
            raise ValueError(f"uniform needs low < high, got [{self.low}, {self.high})")
        if not math.isfinite(self.high - self.low):
            raise ValueError(
                f"uniform's width high - low overflows ([{self.low:g}, {self.high:g})): "
                f"give bounds within the parameter's own"
            )
        return self

    def value(self, k, rng):
        return float(rng.uniform(self.low, self.high))


class Normal(_Knob):
    kind: Literal["normal"]
    mean: float
    std: float = Field(ge=0)
    low: float | None = None
    high: float | None = None

    @model_validator(mode="after")
    def _sane(self):
        _finite(self.mean, "mean")
        _finite(self.std, "std")
        if self.low is not None and self.high is not None and not self.low < self.high:
            raise ValueError(f"normal's cut needs low < high, got [{self.low}, {self.high}]")
        return self

    def value(self, k, rng):
        for _ in range(10_000):
            x = detrandom.normal(rng, self.mean, self.std)
            if (self.low is None or x >= self.low) and (self.high is None or x <= self.high):
                return x
        raise ValueError(
            f"normal(mean={self.mean}, std={self.std}) almost never falls in [{self.low}, {self.high}]: widen the cut"
        )


class Choice(_Knob):
    kind: Literal["choice"]
    values: list[Any] = Field(min_length=1)
    weights: list[float] | None = None

    @model_validator(mode="after")
    def _weights(self):
        if self.weights is not None:
            if len(self.weights) != len(self.values):
                raise ValueError(f"choice has {len(self.values)} values but {len(self.weights)} weights")
            if any(not math.isfinite(w) or w < 0 for w in self.weights) or sum(self.weights) <= 0:
                raise ValueError("choice weights must be finite, non-negative and not all zero")
        return self

    def value(self, k, rng):
        p = None if self.weights is None else np.asarray(self.weights) / sum(self.weights)
        return self.values[int(rng.choice(len(self.values), p=p))]


class MvNormal(_Knob):
    kind: Literal["mvnormal"]
    mean: list[float] = Field(min_length=1)
    covariance: list[list[float]]

    @field_validator("covariance")
    @classmethod
    def _square(cls, cov):
        n = len(cov)
        if any(len(row) != n for row in cov):
            raise ValueError("covariance must be a square matrix")
        c = np.asarray(cov, dtype=float)
        if not np.all(np.isfinite(c)) or not np.allclose(c, c.T):
            raise ValueError("covariance must be finite and symmetric")
        if detlinalg.eigvalsh(c).min() < -1e-12 * max(1.0, np.abs(c).max()):
            raise ValueError("covariance must be positive semi-definite")
        return cov

    @model_validator(mode="after")
    def _sizes(self):
        if len(self.covariance) != len(self.mean):
            raise ValueError(
                f"mvnormal's mean has {len(self.mean)} entries, its covariance {len(self.covariance)} rows"
            )
        return self

    def value(self, k, rng):
        return [float(x) for x in detrandom.multivariate_normal(rng, self.mean, self.covariance)]


class Grid(_Knob):
    """Several parameters varied together over every combination of their lists."""

    kind: Literal["grid"]
    axes: dict[str, list[Any]] = Field(min_length=1)

    @field_validator("axes")
    @classmethod
    def _nonempty(cls, axes):
        for path, values in axes.items():
            parse_path(path)
            if not values:
                raise ValueError(f"grid axis {path!r} has no values")
        return axes

    @property
    def size(self) -> int:
        return math.prod(len(v) for v in self.axes.values())

    def value(self, k, rng):
        """{path: value} of combination ``k`` (modulo the grid's size)."""
        out, k = {}, k % self.size
        for path, values in reversed(list(self.axes.items())):
            k, i = divmod(k, len(values))
            out[path] = values[i]
        return dict(reversed(list(out.items())))


Knob = Annotated[
    Constant | SequenceKnob | ListKnob | Uniform | Normal | Choice | MvNormal | Grid, Field(discriminator="kind")
]


class Dispersion(BaseModel):
    """One knob: which parameter (``path``; a grid names its own paths) and how it varies."""

    model_config = ConfigDict(extra="forbid")
    path: str
    knob: Knob

    @field_validator("path")
    @classmethod
    def _path(cls, path):
        parse_path(path)
        return path


def parse_path(path: str) -> list[str | int]:
    """``faults[0].t_s`` -> ["faults", 0, "t_s"]; an error naming the path otherwise."""
    parts: list[str | int] = []
    for piece in path.split("."):
        m = _PATH_PART.fullmatch(piece)
        if not m:
            raise ValueError(
                f"parameter path {path!r}: {piece!r} is not a name with optional [index]es "
                f"(write e.g. boom_offset_m[1] or faults[0].t_s)"
            )
        parts.append(m.group(1))
        parts += [int(i) for i in re.findall(r"\[(\d+)\]", m.group(2))]
    return parts


def set_path(params: dict[str, Any], path: str, value: Any) -> None:
    """Set ``path`` in the parameter tree ``params`` (dicts and lists, as pydantic dumps them)."""
    parts = parse_path(path)
    node: Any = params
    for here, nxt in itertools.pairwise(parts):
        try:
            child = node[here]
        except (KeyError, IndexError, TypeError):
            raise ValueError(f"parameter path {path!r}: no {here!r} in the scenario's parameters") from None
        if isinstance(child, tuple):
            child = node[here] = list(child)
        if isinstance(nxt, int) and not isinstance(child, list):
            raise ValueError(f"parameter path {path!r}: {here!r} is not a list or vector")
        node = child
    last = parts[-1]
    try:
        if isinstance(last, int):
            node[last] = value
        elif isinstance(node, dict):
            if last not in node:
                raise KeyError(last)
            node[last] = value
        else:
            raise TypeError
    except (KeyError, IndexError, TypeError):
        raise ValueError(f"parameter path {path!r}: the scenario's parameters have no {last!r} there") from None


def set_parameter(params_type: type[BaseModel], params: dict[str, Any], path: str, value: Any) -> None:
    """Set ``path`` in ``params``, the dumped parameters of ``params_type``, as ``--set`` sets it:
    where the path enters a mapping parameter (``vehicle_overrides``, whose keys are dotted paths
    of the vehicle's parameter set) the rest of the path is one key of it, replacing that key if
    it is there; elsewhere :func:`set_path`. The value is validated afterwards with the rest of
    the parameters, by the same validators as ``--set``'s."""
    parts = parse_path(path)
    annotation: Any = params_type
    for i, part in enumerate(parts[:-1]):
        field = None if isinstance(part, int) else getattr(annotation, "model_fields", {}).get(part)
        if field is None:
            break
        annotation = field.annotation
        if get_origin(annotation) is dict:
            rest = parts[i + 1 :]
            if any(isinstance(p, int) for p in rest):
                raise ValueError(f"parameter path {path!r}: {part!r} takes dotted keys, without [index]es")
            node: Any = params
            for p in parts[: i + 1]:
                node = node[p]
            node[".".join(map(str, rest))] = value
            return
    set_path(params, path, value)


def run_rng(campaign_seed: int, run: int, name: str) -> np.random.Generator:
    """The generator of one dispersion in one run: a function of (campaign seed, run, name) alone."""
    digest = hashlib.sha256(name.encode()).digest()
    salt = int.from_bytes(digest[:8], "little")
    return np.random.default_rng(np.random.SeedSequence([campaign_seed, run, salt]))


def run_seed(campaign_seed: int, run: int) -> int:
    """The scenario seed of run ``run`` (a 63-bit integer from (campaign seed, run) alone)."""
    return int(np.random.SeedSequence([campaign_seed, run, 0]).generate_state(2, np.uint64)[0] >> np.uint64(1))


def dispersed_values(dispersions: list[Dispersion], campaign_seed: int, run: int) -> dict[str, Any]:
    """{path: value} of run ``run``, in the order the dispersions are listed."""
    out: dict[str, Any] = {}
    for d in dispersions:
        value = d.knob.value(run, run_rng(campaign_seed, run, d.path))
        if isinstance(d.knob, Grid):
            out.update(value)
        else:
            out[d.path] = value
    return out
