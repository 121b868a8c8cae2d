"""The scenarios by name: the built-in ones are loaded (and so registered) on first use.

Scenario modules register themselves with :func:`hopsim.scenarios.registry.scenario`; this module
is the one place that knows which modules hold the built-in scenarios, so that the registry never
imports them (the scenario modules import the registry).
"""
from __future__ import annotations

from hopsim.scenarios.registry import ScenarioError, ScenarioSpec, registered


def _load_builtin() -> None:
    from hopsim.scenarios import (constellation, contact, deploy_boom, formation, lander,  # noqa: F401  (register
                                  orbit_formation, rendezvous, spheres)                # on import)


def get_scenario(name: str) -> ScenarioSpec:
    """The scenario called ``name``; an error listing the valid names otherwise."""
    _load_builtin()
    scenarios = registered()
    try:
        return scenarios[name]
    except KeyError:
        raise ScenarioError(f"unknown scenario {name!r}; choose one of: {', '.join(sorted(scenarios))}") from None


def all_scenarios() -> list[ScenarioSpec]:
    """Every scenario, sorted by name."""
    _load_builtin()
    scenarios = registered()
    return [scenarios[k] for k in sorted(scenarios)]
