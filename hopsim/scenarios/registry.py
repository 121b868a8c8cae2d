"""Named scenarios with validated parameters.

A scenario is a function that assembles models into a :class:`~hopsim.kernel.Simulation`, and a
pydantic model of its parameters (units in the field names, defaults documented). Scenarios
register themselves with :func:`scenario`; ``hopsim scenarios`` lists them.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from pydantic import BaseModel, ConfigDict, ValidationError


class ScenarioError(ValueError):
    """An unknown scenario or a bad parameter; the message lists the valid choices."""


class ScenarioParams(BaseModel):
    """Base of every scenario's parameters: unknown keys are errors, values are validated."""

    model_config = ConfigDict(extra="forbid", validate_assignment=True)


@dataclass(frozen=True)
class ScenarioSpec:
    name: str
    summary: str
    params: type[ScenarioParams]
    build: Callable[[Any, ScenarioParams], Any]
    default_duration_s: float

    def make_params(self, overrides: dict[str, Any] | None = None) -> ScenarioParams:
        """Validate ``overrides`` (strings from the command line are converted) into parameters."""
        overrides = dict(overrides or {})
        fields = self.params.model_fields
        unknown = sorted(set(overrides) - set(fields))
        if unknown:
            raise ScenarioError(
                f"scenario {self.name!r} has no parameter {', '.join(map(repr, unknown))}; "
                f"valid parameters: {', '.join(sorted(fields))}")
        try:
            return self.params(**overrides)
        except ValidationError as err:
            problems = "; ".join(
                f"{'.'.join(map(str, e['loc']))}: {e['msg']} (got {e.get('input')!r})" for e in err.errors())
            raise ScenarioError(f"scenario {self.name!r}: {problems}") from None


_REGISTRY: dict[str, ScenarioSpec] = {}


def scenario(name: str, params: type[ScenarioParams], summary: str, default_duration_s: float):
    """Decorator registering ``build(sim, params)`` as scenario ``name``."""
    def register(build):
        if name in _REGISTRY:
            raise ValueError(f"scenario {name!r} is registered twice")
        _REGISTRY[name] = ScenarioSpec(name, summary, params, build, default_duration_s)
        return build
    return register


def get_scenario(name: str) -> ScenarioSpec:
    _load_builtin()
    try:
        return _REGISTRY[name]
    except KeyError:
        raise ScenarioError(f"unknown scenario {name!r}; choose one of: "
                            f"{', '.join(sorted(_REGISTRY))}") from None


def all_scenarios() -> list[ScenarioSpec]:
    _load_builtin()
    return [_REGISTRY[k] for k in sorted(_REGISTRY)]


def _load_builtin() -> None:
    from hopsim.scenarios import lander  # noqa: F401  (registers on import)
