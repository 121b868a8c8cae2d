"""Named scenarios with validated parameters.

A scenario is a function that assembles models into a :class:`~hopsim.kernel.Simulation`, and a
pydantic model of its parameters (units in the field names, defaults documented). Scenarios
register themselves with :func:`scenario`; ``hopsim scenarios`` lists them.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from pydantic import BaseModel, ConfigDict, Field, ValidationError


class ScenarioError(ValueError):
    """An unknown scenario or a bad parameter; the message lists the valid choices."""


class FaultSpec(BaseModel):
    """A fault to send at ``t_s`` (a :class:`hopsim.schemas.Fault` on ``faults/<target>``)."""

    model_config = ConfigDict(extra="forbid")
    t_s: float = Field(ge=0)
    target: str
    kind: str
    index: int = -1
    value: float = 0.0
    duration_s: float = Field(0.0, ge=0)
    vehicles: list[str] = []
    force_N: tuple[float, float, float] = (0.0, 0.0, 0.0)
    torque_B: tuple[float, float, float] = (0.0, 0.0, 0.0)
    clear: bool = False

    def message(self):
        from hopsim.schemas import Fault, Vector3
        return Fault(target=self.target, kind=self.kind, index=self.index, value=self.value,
                     duration_s=self.duration_s, vehicles=list(self.vehicles),
                     force_N=Vector3(x=self.force_N[0], y=self.force_N[1], z=self.force_N[2]),
                     torque_B=Vector3(x=self.torque_B[0], y=self.torque_B[1], z=self.torque_B[2]),
                     clear=self.clear)

    @classmethod
    def parse(cls, text: str) -> "FaultSpec":
        """From the command line: ``t=12.5,target=sph2.thrusters,kind=thruster_stuck_off,index=3``."""
        fields: dict = {}
        for item in text.split(","):
            key, sep, value = item.partition("=")
            if not sep:
                raise ValueError(f"--fault takes key=value pairs separated by commas, got {item!r} in {text!r}")
            key = {"t": "t_s", "duration": "duration_s"}.get(key.strip(), key.strip())
            fields[key] = value.strip().split("+") if key == "vehicles" else value.strip()
        try:
            return cls(**fields)
        except ValidationError as err:
            raise ValueError(f"--fault {text!r}: " + "; ".join(
                f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in err.errors())) from None


class ScenarioParams(BaseModel):
    """Base of every scenario's parameters: unknown keys are errors, values are validated.

    Every scenario takes ``faults``, a list of :class:`FaultSpec` sent at their instants.
    """

    model_config = ConfigDict(extra="forbid", validate_assignment=True)
    faults: list[FaultSpec] = []


@dataclass(frozen=True)
class ScenarioSpec:
    name: str
    summary: str
    params: type[ScenarioParams]
    build: Callable[[Any, ScenarioParams], Any]
    default_duration_s: float
    outcome: Callable[[Any], dict[str, Any]] | None = None   # sim -> metrics, for campaigns

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


def scenario(name: str, params: type[ScenarioParams], summary: str, default_duration_s: float,
             outcome: Callable[[Any], dict[str, Any]] | None = None):
    """Decorator registering ``build(sim, params)`` as scenario ``name``.

    ``outcome(sim)`` returns the metrics a fault campaign tabulates after each run.
    """
    def register(build):
        if name in _REGISTRY:
            raise ValueError(f"scenario {name!r} is registered twice")
        _REGISTRY[name] = ScenarioSpec(name, summary, params, build, default_duration_s, outcome)
        return build
    return register


def registered() -> dict[str, ScenarioSpec]:
    """The scenarios registered so far, by name (the built-in ones once :mod:`hopsim.scenarios.catalog`
    has loaded them)."""
    return dict(_REGISTRY)
