"""Named, parameterised scenarios; nothing imports this package but the CLI and tests."""

from hopsim.scenarios.catalog import all_scenarios, get_scenario
from hopsim.scenarios.registry import ScenarioError, scenario
from hopsim.scenarios.runner import RunResult, run_scenario

__all__ = ["RunResult", "ScenarioError", "all_scenarios", "get_scenario", "run_scenario", "scenario"]
