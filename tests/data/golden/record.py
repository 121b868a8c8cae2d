"""Record the golden set again, each file with the scenario, parameters, seed and duration it
already holds (and the orbit scenarios as listed here): run from the repository's root,

    .venv/bin/python tests/data/golden/record.py

only when the stream format changes (see tests/test_golden_replays.py)."""

import json
from pathlib import Path

from hopsim.bus.recorder import RUN_METADATA, read_metadata
from hopsim.scenarios.runner import run_scenario

GOLDEN = Path(__file__).parent
ADDED = [
    ("orbit_formation", {"n_vehicles": 3}, 120.0),
    ("rendezvous", {}, 300.0),
    ("constellation", {"n_satellites": 6, "n_planes": 2}, 300.0),
]


def record(path: Path, scenario: str, params: dict, seed: int, duration_s: float) -> None:
    partial = path.with_suffix(".partial")
    run_scenario(scenario, params, seed=seed, duration_s=duration_s, out=partial)
    partial.replace(path)  # the old file stays until the new one is complete


if __name__ == "__main__":
    for path in sorted(GOLDEN.glob("*.mcap")):
        run = read_metadata(path)[RUN_METADATA]
        record(path, run["scenario"], json.loads(run["parameters_json"]), int(run["seed"]), float(run["duration_s"]))
    for name, params, duration_s in ADDED:
        if not (GOLDEN / f"{name}.mcap").exists():
            record(GOLDEN / f"{name}.mcap", name, params, 0, duration_s)
