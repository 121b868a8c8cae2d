"""Named scenarios with validated parameters.

A scenario is a function that assembles models into a :class:`~hopsim.kernel.Simulation`, and a
pydantic model of its parameters (units in the field names, defaults documented). Scenarios
register themselves with :func:`scenario`; ``hopsim scenarios`` lists them.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC
from typing import Any, get_origin

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from hopsim.kernel.bounds import TimeS
from hopsim.kernel.faults import check_payload, fault_kinds


class ScenarioError(ValueError):
    """An unknown scenario or a bad parameter; the message lists the valid choices."""


class FaultSpec(BaseModel):
    """A fault to send at ``t_s`` (a :class:`hopsim.schemas.Fault` on ``faults/<target>``)."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)
    t_s: TimeS
    target: str
    kind: str
    index: int = Field(-1, ge=-1, le=2**31 - 1)
    value: float = 0.0
    duration_s: float = 0.0
    vehicles: list[str] = []
    force_N: tuple[float, float, float] = (0.0, 0.0, 0.0)
    torque_B: tuple[float, float, float] = (0.0, 0.0, 0.0)
    clear: bool = False

    @model_validator(mode="after")
    def _payload_bounded(self):
        check_payload(self)  # the kernel's own check of every fault (hopsim.kernel.bounds)
        return self

    def message(self):
        from hopsim.schemas import Fault, Vector3

        return Fault(
            target=self.target,
            kind=self.kind,
            index=self.index,
            value=self.value,
            duration_s=self.duration_s,
            vehicles=list(self.vehicles),
            force_N=Vector3(x=self.force_N[0], y=self.force_N[1], z=self.force_N[2]),
            torque_B=Vector3(x=self.torque_B[0], y=self.torque_B[1], z=self.torque_B[2]),
            clear=self.clear,
        )

    @classmethod
    def parse(cls, text: str) -> FaultSpec:
        """From the command line: ``t=12.5,target=sph2.thrusters,kind=thruster_stuck_off,index=3``;
        vectors as ``force_N=[1,0,0]`` or ``force=1;0;0``; ``vehicles=sph1+sph2``."""
        fields: dict = {}
        for item in split_outside_brackets(text):
            key, sep, value = item.partition("=")
            if not sep:
                raise ValueError(f"--fault takes key=value pairs separated by commas, got {item!r} in {text!r}")
            key = FAULT_ALIASES.get(key.strip(), key.strip())
            if key not in cls.model_fields:
                raise ValueError(
                    f"--fault {text!r}: no field {key!r}; fields: t, target, kind, "
                    f"{', '.join(f for f in cls.model_fields if f not in ('t_s', 'target', 'kind'))}"
                )
            if key in fields:  # value=0.5,value=0.6 (or t= and t_s=): which one was meant?
                raise ValueError(f"--fault {text!r}: {key} is given twice: give it once")
            value = value.strip()
            if key == "vehicles":
                fields[key] = [v for v in value.split("+") if v]
            elif key in ("force_N", "torque_B"):
                fields[key] = parse_vector(value)
            else:
                fields[key] = value
        return cls.from_fields(fields, f"--fault {text!r}")

    @classmethod
    def from_fields(cls, fields: dict, where: str = "fault") -> FaultSpec:
        """From its fields (a live client's request, a recording's); a ValueError naming every
        bad field, on one line, otherwise."""
        try:
            return cls.model_validate(fields)
        except ValidationError as err:
            raise ValueError(f"{where}: {problems(err)}") from None

    def schedule(self, sim) -> None:
        """Send this fault to ``sim`` at ``t_s`` once it has passed every check: the same checks for
        a scenario's faults and ``--fault`` (before the run) and a fault sent live (before the
        pacer takes it). Its target exists and accepts its kind, it sets only fields the target
        reads (:meth:`check_fields`), and the target can apply it (:meth:`Model.check_fault`: a
        unit it has, a value it can take). Otherwise a ValueError naming the problem, and nothing
        is sent."""
        message = self.message()
        sim.check_fault(message)
        self.check_fields(fault_kinds(sim.slot(self.target).cls)[self.kind])
        sim.schedule_fault(message, self.t_s)

    def fields_set(self) -> list[str]:
        """The optional fields that differ from their defaults (what this fault asks of its target)."""
        return [
            name
            for name, f in type(self).model_fields.items()
            if name not in ("t_s", "target", "kind") and getattr(self, name) != f.default
        ]

    def check_fields(self, reads: tuple[str, ...]) -> None:
        """A field its target would ignore for this kind is an error naming it (``reads``: the
        fields the target reads, :func:`hopsim.kernel.faults.fault_kinds`)."""
        ignored = [f for f in self.fields_set() if f not in reads]
        if ignored:
            raise ValueError(
                f"fault {self.kind!r} on {self.target!r} ignores {', '.join(ignored)}; it reads "
                f"{', '.join(reads) or 'no field'} (see `hopsim faults SCENARIO`)"
            )


def problems(err: ValidationError) -> str:
    """A pydantic error as one line: each problem as ``path: what is wrong (got value)``."""
    out = []
    for e in err.errors():
        where = "".join(f"[{part}]" if isinstance(part, int) else f".{part}" for part in e["loc"]).lstrip(".")
        msg = e["msg"].removeprefix("Value error, ")
        if e["type"] != "value_error" and "input" in e and not isinstance(e["input"], dict):
            msg += f" (got {e['input']!r})"
        # (a message that names its own path, e.g. vehicle_overrides.thrusters.pressure_psig, is whole)
        out.append(f"{where}: {msg}" if where and not msg.startswith(f"{where}.") else msg)
    return "; ".join(out)


FAULT_ALIASES = {"t": "t_s", "duration": "duration_s", "force": "force_N", "torque": "torque_B"}


def split_outside_brackets(text: str, sep: str = ",") -> list[str]:
    """``a=1,b=[1,2],c=3`` -> ["a=1", "b=[1,2]", "c=3"]."""
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        if ch in "[(":
            depth += 1
        elif ch in "])":
            depth -= 1
        elif ch == sep and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    parts.append(text[start:])
    return [p for p in parts if p.strip()]


def parse_vector(text: str) -> list[str]:
    """``[1,0,0]``, ``(1,0,0)``, ``1,0,0`` or ``1;0;0`` -> ["1", "0", "0"] (pydantic converts)."""
    inner = text.strip()
    if inner[:1] in "[(" and inner[-1:] in "])":
        inner = inner[1:-1]
    return [v.strip() for v in inner.replace(";", ",").split(",") if v.strip()]


def nest_dotted(overrides: dict[str, Any]) -> dict[str, Any]:
    """``{"contact.restitution": "0.9"}`` -> ``{"contact": {"restitution": "0.9"}}`` (from --set)."""
    out: dict[str, Any] = {}
    for key, value in overrides.items():
        if "." not in key:
            out[key] = value
            continue
        head, rest = key.split(".", 1)
        node = out.setdefault(head, {})
        if not isinstance(node, dict):
            raise ScenarioError(f"parameter {head!r} is given both as a whole and as {key!r}")
        node.update(nest_dotted({rest: value}))
    return out


def from_command_line(annotation: Any, text: str, name: str) -> Any:
    """A --set value as the parameter's type wants it: vectors and lists from ``0,0.3,0.1`` or
    ``[0,0.3,0.1]``, lists and objects from JSON; everything else stays text, for pydantic."""
    origin = get_origin(annotation) or annotation
    stripped = text.strip()
    if origin in (tuple, list):
        if stripped.startswith("["):
            try:
                return json.loads(stripped)
            except ValueError:
                return parse_vector(stripped)
        return parse_vector(stripped)
    if stripped[:1] in "[{" and origin is not str:
        try:
            return json.loads(stripped)
        except ValueError as err:
            raise ScenarioError(f"--set {name}={text}: not valid JSON ({err})") from None
    return text


DEFAULT_EPOCH = "2000-01-01T12:00:00Z"


def epoch_ns(text: str) -> int:
    """An ISO 8601 date and time (UTC when no offset is given) in ns since 1970-01-01T00:00:00Z;
    a ValueError naming the problem otherwise (1970 to 2200: log times are unsigned 64-bit ns)."""
    from datetime import datetime

    try:
        when = datetime.fromisoformat(text)
    except (TypeError, ValueError):
        raise ValueError(f"epoch {text!r} is not an ISO 8601 date and time, e.g. 2026-03-01T12:00:00Z") from None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    if not datetime(1970, 1, 1, tzinfo=UTC) <= when <= datetime(2200, 1, 1, tzinfo=UTC):
        raise ValueError(f"epoch {text!r} lies outside 1970-2200")
    delta = when - datetime(1970, 1, 1, tzinfo=UTC)
    return (delta.days * 86_400 + delta.seconds) * 1_000_000_000 + delta.microseconds * 1_000


class ScenarioParams(BaseModel):
    """Base of every scenario's parameters: unknown keys are errors, values are validated.

    Every scenario takes ``faults``, a list of :class:`FaultSpec` sent at their instants.
    """

    model_config = ConfigDict(extra="forbid", validate_assignment=True, allow_inf_nan=False)
    faults: list[FaultSpec] = Field([], description="faults sent at their instants (--fault; see hopsim faults)")
    epoch_utc: str = Field(
        DEFAULT_EPOCH,
        description="the calendar time (UTC, ISO 8601) of t = 0: a recording's "
        "log times are this epoch plus the simulation time",
    )

    @field_validator("epoch_utc")
    @classmethod
    def _epoch(cls, v: str) -> str:
        epoch_ns(v)
        return v

    @property
    def epoch_ns(self) -> int:
        """``epoch_utc`` in ns since 1970-01-01T00:00:00Z."""
        return epoch_ns(self.epoch_utc)


@dataclass(frozen=True)
class Success:
    """What makes a run of a scenario a success, read from its outcome metrics: ``check(outcome)``
    is None for a success, else why the run failed (a Monte Carlo campaign counts such a run
    as failed, :mod:`hopsim.scenarios.montecarlo`); ``description`` says it in the summary."""

    description: str
    check: Callable[[dict[str, Any]], str | None]


@dataclass(frozen=True)
class ScenarioSpec:
    name: str
    summary: str
    params: type[ScenarioParams]
    build: Callable[[Any, ScenarioParams], Any]
    default_duration_s: float
    outcome: Callable[[Any], dict[str, Any]] | None = None  # sim -> metrics, for campaigns
    success: Success | None = None  # which outcomes are a success (None: every run that ends)

    def make_params(self, overrides: dict[str, Any] | None = None) -> ScenarioParams:
        """Validate ``overrides`` (strings from the command line are converted) into parameters."""
        overrides = nest_dotted(dict(overrides or {}))
        fields = self.params.model_fields
        for key, value in list(overrides.items()):
            if isinstance(value, str) and key in fields:
                overrides[key] = from_command_line(fields[key].annotation, value, key)
        unknown = sorted(set(overrides) - set(fields))
        if unknown:
            raise ScenarioError(
                f"scenario {self.name!r} has no parameter {', '.join(map(repr, unknown))}; "
                f"valid parameters: {', '.join(sorted(fields))}"
            )
        try:
            return self.params(**overrides)
        except ValidationError as err:
            raise ScenarioError(f"scenario {self.name!r}: {problems(err)}") from None


_REGISTRY: dict[str, ScenarioSpec] = {}


def scenario(
    name: str,
    params: type[ScenarioParams],
    summary: str,
    default_duration_s: float,
    outcome: Callable[[Any], dict[str, Any]] | None = None,
    success: Success | None = None,
):
    """Decorator registering ``build(sim, params)`` as scenario ``name``.

    ``outcome(sim)`` returns the metrics a fault campaign tabulates after each run; ``success``
    says which of those outcomes are a success (a campaign counts the others as failed runs).
    """

    def register(build):
        if name in _REGISTRY:
            raise ValueError(f"scenario {name!r} is registered twice")
        if success is not None and outcome is None:
            raise ValueError(f"scenario {name!r}: a success criterion reads the outcome; give outcome too")
        _REGISTRY[name] = ScenarioSpec(name, summary, params, build, default_duration_s, outcome, success)
        return build

    return register


def registered() -> dict[str, ScenarioSpec]:
    """The scenarios registered so far, by name (the built-in ones once :mod:`hopsim.scenarios.catalog`
    has loaded them)."""
    return dict(_REGISTRY)
