"""The scenarios by name: the built-in ones are loaded (and so registered) on first use.

Scenario modules register themselves with :func:`hopsim.scenarios.registry.scenario`; this module
is the one place that knows which modules hold the built-in scenarios, so that the registry never
imports them (the scenario modules import the registry).
"""

from __future__ import annotations

from hopsim.scenarios.registry import ScenarioError, ScenarioSpec, registered


def _load_builtin() -> None:
    # the built-in scenario modules register themselves on import
    from hopsim.scenarios import (  # noqa: F401
        constellation,
        contact,
        deploy_boom,
        flexible_boom,
        formation,
        lander,
        orbit_formation,
        rendezvous,
        spheres,
    )


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
