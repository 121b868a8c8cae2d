"""Fault campaigns: run a scenario once without faults and once per fault, tabulate the outcomes.

Each run is a separate seeded run of the same scenario, so a row differs from the baseline only
by its fault. The outcome columns come from the scenario's ``outcome(sim)`` function.
"""
from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hopsim.scenarios.registry import FaultSpec, ScenarioError
from hopsim.scenarios.catalog import get_scenario
from hopsim.scenarios.runner import run_scenario


@dataclass
class CampaignRow:
    label: str
    fault: FaultSpec | None
    outcome: dict[str, Any]
    stream_sha256: str


def fault_label(f: FaultSpec) -> str:
    unit = f"[{f.index}]" if f.index >= 0 else ""
    value = f" {f.value:g}" if f.value else ""
    return f"{f.target}{unit} {f.kind}{value} @ {f.t_s:g} s"


def run_campaign(scenario: str, faults: list[FaultSpec], seed: int = 0, duration_s: float | None = None,
                 overrides: dict | None = None) -> list[CampaignRow]:
    spec = get_scenario(scenario)
    if spec.outcome is None:
        raise ScenarioError(f"scenario {scenario!r} defines no outcome metrics; campaigns need one")
    rows = []
    for fault in [None, *faults]:
        params = dict(overrides or {})
        params["faults"] = list(params.get("faults", [])) + ([fault.model_dump()] if fault else [])
        result = run_scenario(scenario, params, seed=seed, duration_s=duration_s, keep_stream=True)
        rows.append(CampaignRow("baseline" if fault is None else fault_label(fault), fault,
                                spec.outcome(result.sim), result.stream_sha256))
    return rows


def write_table(rows: list[CampaignRow], path: Path) -> None:
    """CSV (``.csv``) or markdown (anything else)."""
    columns = ["run"] + list(rows[0].outcome)
    cells = [[r.label] + [_fmt(r.outcome[c]) for c in columns[1:]] for r in rows]
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.suffix == ".csv":
        with open(path, "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(columns)
            w.writerows(cells)
        return
    lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    lines += ["| " + " | ".join(row) + " |" for row in cells]
    path.write_text("\n".join(lines) + "\n")


def _fmt(v: Any) -> str:
    if isinstance(v, float):
        return f"{v:.4g}"
    return "-" if v is None else str(v)
