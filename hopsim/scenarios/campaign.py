"""Fault campaigns: a scenario once without faults and once per fault, the outcomes side by side.

A fault campaign is a Monte Carlo campaign (:mod:`hopsim.scenarios.montecarlo`) whose one
dispersion is the fault list (run 0: none; run k: the k-th fault) and whose runs share the
campaign seed, so that a row differs from the baseline by its fault only. It has that campaign's
directory, table, summary, resumption and Ray backend.
"""

from __future__ import annotations

import csv
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hopsim.bus.atomic import replacing
from hopsim.scenarios.catalog import get_scenario
from hopsim.scenarios.montecarlo import make_campaign
from hopsim.scenarios.montecarlo import run_campaign as run_montecarlo
from hopsim.scenarios.registry import FaultSpec, ScenarioError


@dataclass
class CampaignRow:
    label: str
    fault: FaultSpec | None
    outcome: dict[str, Any]
    stream_sha256: str
    error: str = ""


def fault_label(f: FaultSpec) -> str:
    unit = f"[{f.index}]" if f.index >= 0 else ""
    value = f" {f.value:g}" if f.value else ""
    return f"{f.target}{unit} {f.kind}{value} @ {f.t_s:g} s"


def fault_campaign(
    scenario: str,
    faults: list[FaultSpec],
    seed: int = 0,
    duration_s: float | None = None,
    overrides: dict | None = None,
):
    """The Monte Carlo campaign of a fault campaign: len(faults) + 1 runs with the same seed, the
    fault list dispersed (the scenario's own ``faults`` parameter stays in every run)."""
    if get_scenario(scenario).outcome is None:
        raise ScenarioError(f"scenario {scenario!r} defines no outcome metrics; campaigns need one")
    fixed = dict(overrides or {})
    always = [f if isinstance(f, dict) else f.model_dump() for f in fixed.pop("faults", [])]
    lists = [always] + [[*always, f.model_dump()] for f in faults]
    return make_campaign(
        {
            "scenario": scenario,
            "runs": len(lists),
            "seed": seed,
            "duration_s": duration_s,
            "parameters": fixed,
            "same_seed": True,
            "dispersions": [{"path": "faults", "knob": {"kind": "list", "values": lists}}],
        },
        f"campaign of {scenario}",
    )


def run_campaign(
    scenario: str,
    faults: list[FaultSpec],
    seed: int = 0,
    duration_s: float | None = None,
    overrides: dict | None = None,
    directory: str | Path | None = None,
    backend: str = "local",
    ray_address: str | None = None,
    force: bool = False,
) -> list[CampaignRow]:
    """Run the baseline and one run per fault (in ``directory``, a temporary one if None); one row
    each, in that order. A run that raises is a row with its error. A ``directory`` that holds
    another campaign is refused unless ``force`` (see :meth:`CampaignDirectory.start`)."""
    campaign = fault_campaign(scenario, faults, seed, duration_s, overrides)
    with tempfile.TemporaryDirectory(prefix="hopsim-campaign-") as scratch:
        rows = run_montecarlo(campaign, directory or scratch, backend=backend, ray_address=ray_address, force=force)
    return [
        CampaignRow(
            "baseline" if k == 0 else fault_label(faults[k - 1]),
            None if k == 0 else faults[k - 1],
            row["outcome"],
            row["stream_sha256"],
            row["error"],
        )
        for k, row in enumerate(rows)
    ]


def write_table(rows: list[CampaignRow], path: Path) -> None:
    """CSV (``.csv``) or markdown (anything else), written under its partial name and renamed
    over ``path`` when complete (:func:`hopsim.bus.atomic.replacing`)."""
    metrics = list(dict.fromkeys(k for r in rows for k in r.outcome))
    columns = ["run", *metrics, "error"]
    cells = [[r.label] + [format_cell(r.outcome.get(c)) for c in metrics] + [r.error or "-"] for r in rows]
    with replacing(path) as tmp:
        if path.suffix == ".csv":
            with open(tmp, "w", newline="") as f:
                w = csv.writer(f)
                w.writerow(columns)
                w.writerows(cells)
        else:
            lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
            lines += ["| " + " | ".join(row) + " |" for row in cells]
            tmp.write_text("\n".join(lines) + "\n")


def format_cell(v: Any) -> str:
    """An outcome value in a table: floats to 4 significant digits, None as '-'."""
    if isinstance(v, float):
        return f"{v:.4g}"
    return "-" if v is None else str(v)
