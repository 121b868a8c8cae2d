"""Named, parameterised scenarios; nothing imports this package but the CLI and tests."""

from hopsim.scenarios.registry import ScenarioError, scenario
from hopsim.scenarios.catalog import all_scenarios, get_scenario
from hopsim.scenarios.runner import RunResult, run_scenario

__all__ = ["ScenarioError", "all_scenarios", "get_scenario", "scenario", "RunResult", "run_scenario"]
