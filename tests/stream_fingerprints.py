"""Print, as JSON, the SHA-256 of the recorded stream of every built-in scenario (a short run of
each), for comparing processes started with different CPU-dispatch settings.

    python tests/stream_fingerprints.py [--ray]

``--ray`` adds the formation on Ray (two shards) beside the in-process runs.
"""

from __future__ import annotations

import json
import sys

# short runs that still reach every model of each scenario: sensors, estimators, controllers,
# thrusters, radios, contact, the orbit environment, random draws
RUNS = {
    "collision": ({}, 3.0),
    "constellation": ({"n_satellites": 6, "n_planes": 2}, 300.0),
    "cooperative_docking": ({}, 12.0),
    "deploy_boom": ({}, 20.0),
    "flexible_boom": ({}, 5.0),
    "formation": ({"n_vehicles": 12}, 20.0),
    "lander": ({}, 60.0),
    "leader_follower": ({}, 12.0),
    "orbit_formation": ({"n_vehicles": 3}, 120.0),
    "passive_docking": ({}, 3.0),
    "pileup": ({"n_vehicles": 12}, 3.0),
    "rendezvous": ({}, 300.0),
}


def fingerprints(ray: bool = False) -> dict[str, str]:
    from hopsim.scenarios.catalog import all_scenarios
    from hopsim.scenarios.runner import run_scenario

    missing = sorted({spec.name for spec in all_scenarios()} - set(RUNS))
    if missing:
        raise SystemExit(f"no short run for the built-in scenario(s) {missing}: add them to RUNS")
    out = {}
    for name, (overrides, duration_s) in RUNS.items():
        result = run_scenario(name, overrides, seed=3, duration_s=duration_s, keep_stream=True)
        out[name] = result.stream_sha256
    if ray:
        result = run_scenario(
            "formation",
            RUNS["formation"][0],
            seed=3,
            duration_s=RUNS["formation"][1],
            keep_stream=True,
            backend="ray",
            placement="shards:2",
        )
        out["formation@ray"] = result.stream_sha256
    return out


if __name__ == "__main__":
    print(json.dumps(fingerprints(ray="--ray" in sys.argv[1:]), sort_keys=True))
