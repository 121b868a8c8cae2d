"""Monte Carlo campaigns: many dispersed runs of a scenario, locally or as Ray tasks.

A campaign (:class:`Campaign`, also a TOML file) names a scenario, a number of runs, a campaign
seed, fixed parameters and dispersions (:mod:`hopsim.scenarios.dispersions`). Run ``k`` takes its
scenario seed and its parameters from (campaign seed, ``k``) alone, so any run can be run again
on its own, on any machine and backend, and gives the same stream (:func:`rerun`).

A campaign directory holds:

- ``campaign.json``: the campaign as it was run;
- ``runs.jsonl``: one line per finished run, appended and flushed as each finishes (a killed
  campaign resumes from it and runs only what is missing);
- ``results.csv``: one row per run: run, seed, status, error, the dispersed parameters, the
  scenario's outcome metrics and the stream's SHA-256;
- ``results.parquet``: the same table with typed columns (integers, floats, booleans, strings; a
  metric a failed run lacks is null; a list or a table is its JSON), and the campaign as
  ``hopsim.campaign`` in its key-value metadata; :func:`load` reads it as a pandas DataFrame;
- ``summary.json`` and ``summary.md``: per numeric metric the count, mean, standard deviation,
  extremes and percentiles, per boolean metric the rate of true with its 95% Wilson interval,
  and the failure rate with its 95% Wilson interval;
- ``plots/``: histograms of the outcomes and outcomes against each dispersed parameter (PNG);
- ``recordings/run_NNNNNN.mcap``: the retained runs, recorded (failed runs, runs with a metric
  outside its bounds, and runs chosen by number; a failed run's recording ends with its error).

A run fails when it raises (status ``failed``, with its error) or when its outcome misses the
scenario's success criterion (status ``unsuccessful``, with the reason: a lander that touched
down too fast); either way the campaign goes on.

Every file is written under its partial name and renamed when complete
(:mod:`hopsim.bus.atomic`), ``runs.jsonl`` apart (appended line by line). A directory that holds
another campaign, or a campaign's files without its ``campaign.json``, is not written to unless
asked (``force``: that campaign's files are removed first, and the new campaign starts there).
"""

from __future__ import annotations

import csv
import json
import math
import tempfile
import time
import tomllib
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from hopsim.bus.atomic import partial_path, replacing
from hopsim.kernel.bounds import DurationS, Seed
from hopsim.scenarios.catalog import get_scenario
from hopsim.scenarios.dispersions import Dispersion, dispersed_values, run_seed, set_parameter
from hopsim.scenarios.registry import ScenarioError

MAX_RUNS = 10_000_000
# a run's status: ok, failed (it raised; ``error`` says what) or unsuccessful (it ended, and its
# outcome misses the scenario's success criterion; ``error`` says why)
UNSUCCESSFUL = "unsuccessful"


class Retention(BaseModel):
    """Which runs keep a full recording: failed ones, those with a metric outside its
    ``[low, high]`` bounds (either may be null), and those chosen by number."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)
    failed: bool = True
    outside: dict[str, tuple[float | None, float | None]] = {}
    runs: list[int] = []

    def keeps(self, row: dict[str, Any]) -> bool:
        if row["run"] in self.runs or (self.failed and row["status"] != "ok"):
            return True
        for metric, (low, high) in self.outside.items():
            value = row["outcome"].get(metric)
            if isinstance(value, (int, float)) and (
                (low is not None and value < low) or (high is not None and value > high)
            ):
                return True
        return False


class Campaign(BaseModel):
    """A Monte Carlo campaign: ``runs`` runs of ``scenario`` with ``parameters`` fixed and
    ``dispersions`` varied, seeded by ``seed``; ``duration_s`` (None: the scenario's default)."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)
    scenario: str
    runs: int = Field(ge=1, le=MAX_RUNS)
    seed: Seed = 0
    duration_s: DurationS | None = None
    parameters: dict[str, Any] = {}
    dispersions: list[Dispersion] = []
    retain: Retention = Retention()
    same_seed: bool = Field(
        False,
        description="every run takes the campaign seed as its scenario seed, so "
        "runs differ by their dispersions only (a fault campaign)",
    )

    def scenario_seed(self, run: int) -> int:
        """The scenario seed of run ``run``: derived from (campaign seed, run), or the campaign
        seed itself with ``same_seed``."""
        return self.seed if self.same_seed else run_seed(self.seed, run)

    def dispersed(self, run: int) -> dict[str, Any]:
        """The dispersed values of run ``run``, by parameter path."""
        return dispersed_values(self.dispersions, self.seed, run)

    def run_parameters(self, run: int) -> tuple[int, dict[str, Any]]:
        """(scenario seed, validated parameters) of run ``run``; a ScenarioError or ValueError
        naming the parameter when a dispersed value is not valid for the scenario."""
        spec = get_scenario(self.scenario)
        params = spec.make_params(self.parameters).model_dump()
        for path, value in self.dispersed(run).items():
            set_parameter(spec.params, params, path, value)  # as --set sets it
        return self.scenario_seed(run), spec.make_params(params).model_dump()


def load_campaign(path: str | Path) -> Campaign:
    """A campaign from a TOML file (see docs/montecarlo.md); a clear error otherwise."""
    path = Path(path)
    try:
        data = tomllib.loads(path.read_text())
    except FileNotFoundError:
        raise ScenarioError(f"no campaign file {path}") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as err:
        raise ScenarioError(f"{path} is not valid TOML: {err}") from None
    except RecursionError:
        raise ScenarioError(f"{path} nests arrays or tables too deep to be a campaign file") from None
    dispersions = data.pop("dispersions", {})
    if isinstance(dispersions, dict):  # [dispersions.altitude_m] kind = "normal" ...
        data["dispersions"] = [{"path": p, "knob": k} for p, k in dispersions.items()]
    else:
        data["dispersions"] = dispersions
    return make_campaign(data, str(path))


def make_campaign(data: dict[str, Any], where: str = "campaign") -> Campaign:
    try:
        campaign = Campaign(**data)
        campaign.run_parameters(0)  # the scenario exists and its parameters validate
    except ValidationError as err:
        problems = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in err.errors())
        raise ScenarioError(f"{where}: {problems}") from None
    except ValueError as err:
        raise ScenarioError(f"{where}: {err}") from None
    return campaign


def run_one(campaign_json: str, run: int, out: str | None = None) -> dict[str, Any]:
    """Run ``run`` of the campaign (JSON, as :meth:`Campaign.model_dump_json` gives it): its row.
    Runs anywhere (a Ray task, another machine): it needs nothing but its arguments."""
    from hopsim.scenarios.runner import run_scenario

    campaign = Campaign.model_validate_json(campaign_json)
    row: dict[str, Any] = {
        "run": run,
        "seed": campaign.scenario_seed(run),
        "status": "ok",
        "error": "",
        "parameters": campaign.dispersed(run),
        "outcome": {},
        "stream_sha256": "",
        "wall_s": 0.0,
    }
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="hopsim-run-") as scratch:
        # recorded to a file (kept only when asked for): the stream's SHA-256 in bounded memory
        path = out or str(Path(scratch) / "run.mcap")
        try:
            seed, params = campaign.run_parameters(run)
            result = run_scenario(
                campaign.scenario,
                params,
                seed=seed,
                duration_s=campaign.duration_s,
                out=path,
                keep_stream=True,
                replace_on_failure=True,  # a failed run's recording (its error at the end) is kept too
            )
            spec = get_scenario(campaign.scenario)
            row["outcome"] = _plain(result.outcome) if spec.outcome is not None else {}
            row["stream_sha256"] = result.stream_sha256
            why = spec.success.check(row["outcome"]) if spec.success is not None else None
            if why:
                row["status"] = UNSUCCESSFUL
                row["error"] = why
        except Exception as err:
            row["status"] = "failed"
            row["error"] = f"{type(err).__name__}: {err}"
    row["wall_s"] = time.perf_counter() - t0
    return row


def _plain(outcome: dict[str, Any]) -> dict[str, Any]:
    """Outcome metrics as JSON values (numpy scalars become Python numbers)."""
    out = {}
    for k, v in outcome.items():
        if hasattr(v, "item") and not isinstance(v, (list, dict)):
            v = v.item()
        out[str(k)] = v
    return out


CAMPAIGN_FILES = ("campaign.json", "runs.jsonl", "results.csv", "results.parquet", "summary.json", "summary.md")
CAMPAIGN_FOLDERS = (("plots", "*.png"), ("recordings", "run_*.mcap"))  # (folder, the files a campaign writes)


class CampaignDirectory:
    """The files of one campaign (see the module docstring)."""

    def __init__(self, path: str | Path):
        self.path = Path(path)

    @property
    def runs_file(self) -> Path:
        return self.path / "runs.jsonl"

    def campaign_files(self) -> list[Path]:
        """The files of a campaign there are in the directory (this one's or another's)."""
        found = [self.path / name for name in CAMPAIGN_FILES if (self.path / name).is_file()]
        for folder, pattern in CAMPAIGN_FOLDERS:
            if (self.path / folder).is_dir():
                found += sorted(p for p in (self.path / folder).glob(pattern) if p.is_file())
        return found

    def check(self, campaign: Campaign, force: bool = False) -> str:
        """What starting ``campaign`` here does: ``new`` (nothing of a campaign is there),
        ``resume`` (this very campaign is, finished or not) or, with ``force``, ``replace``
        (another campaign's files are, or a campaign's files without its campaign.json); a
        ScenarioError naming the way out when it is refused (also when the directory cannot be
        made or written in: it is made here, empty, if missing)."""
        self._check_place()
        saved = self.path / "campaign.json"
        if saved.is_file():
            try:
                same = Campaign.model_validate_json(saved.read_text()) == campaign
            except (ValidationError, ValueError, OSError):
                same = False  # damaged: not this campaign
            if same:
                return "resume"
            if not force:
                raise ScenarioError(
                    f"{self.path} holds another campaign (campaign.json differs): resume it with the same "
                    f"campaign, give --force to replace it, or choose another directory"
                )
            return "replace"
        found = self.campaign_files()
        if not found:
            return "new"
        if not force:
            raise ScenarioError(
                f"{self.path} holds a campaign's files ({found[0].relative_to(self.path)}) but no campaign.json: "
                f"give --force to replace them, or choose another directory"
            )
        return "replace"

    def _check_place(self) -> None:
        """That the directory is one (made if missing) this process can write in; a ScenarioError
        naming it and the reason otherwise."""
        if self.path.exists() and not self.path.is_dir():
            raise ScenarioError(f"the campaign directory {self.path} is a file: choose a directory")
        try:
            self.path.mkdir(parents=True, exist_ok=True)
            probe = partial_path(self.path / "probe")
            probe.open("xb").close()
            probe.unlink()
        except OSError as err:
            raise ScenarioError(
                f"cannot make or write in the campaign directory {self.path} ({err.strerror or err}): "
                f"choose another directory"
            ) from None

    def start(self, campaign: Campaign, force: bool = False) -> None:
        """Create the directory, or check that it holds this very campaign (to resume it); with
        ``force``, another campaign's files there are removed first (see :meth:`check`)."""
        if self.check(campaign, force) == "replace":
            for path in self.campaign_files():
                path.unlink()
        self.path.mkdir(parents=True, exist_ok=True)
        saved = self.path / "campaign.json"
        if not saved.exists():
            with replacing(saved) as tmp:
                tmp.write_text(campaign.model_dump_json(indent=1))

    def campaign(self) -> Campaign:
        saved = self.path / "campaign.json"
        if not saved.exists():
            raise ScenarioError(f"{self.path} is not a campaign directory (no campaign.json)")
        try:
            return Campaign.model_validate_json(saved.read_text())
        except ValidationError as err:
            raise ScenarioError(f"{saved} is damaged: {err.errors()[0]['msg']}") from None

    def finished(self) -> dict[int, dict]:
        """The rows of the runs already finished (a torn last line, from a kill, is ignored)."""
        rows: dict[int, dict] = {}
        if not self.runs_file.exists():
            return rows
        for line in self.runs_file.read_text().splitlines():
            try:
                row = json.loads(line)
                rows[int(row["run"])] = row
            except (ValueError, KeyError, TypeError):
                continue
        return rows

    def append(self, row: dict) -> None:
        with open(self.runs_file, "a") as f:
            f.write(json.dumps(row) + "\n")
            f.flush()

    def recording(self, run: int) -> Path:
        return self.path / "recordings" / f"run_{run:06d}.mcap"


def run_campaign(
    campaign: Campaign,
    directory: str | Path,
    backend: str = "local",
    ray_address: str | None = None,
    on_row: Callable[[dict, int, int], None] | None = None,
    max_new_runs: int | None = None,
    ray_cpus: int | None = None,
    force: bool = False,
) -> list[dict]:
    """Run every run of ``campaign`` not finished yet in ``directory``; write the results, the
    summary and the plots; record the retained runs. Returns the rows, sorted by run.
    ``on_row(row, done, total)`` is told of each finished run (progress); ``ray_cpus`` sizes a local
    Ray (default: every CPU). A directory holding another campaign is refused, unless ``force``
    (:meth:`CampaignDirectory.start`)."""
    folder = CampaignDirectory(directory)
    folder.start(campaign, force)
    rows = folder.finished()
    todo = [k for k in range(campaign.runs) if k not in rows]
    if max_new_runs is not None:
        todo = todo[:max_new_runs]
    text = campaign.model_dump_json()

    def finished(row: dict) -> None:
        folder.append(row)
        rows[row["run"]] = row
        if on_row is not None:
            on_row(row, len(rows), campaign.runs)

    if backend == "local":
        for k in todo:
            finished(run_one(text, k))
    elif backend == "ray":
        from hopsim.kernel.distributed.ray_runtime import RayUnavailable

        try:
            _run_on_ray(text, todo, finished, ray_address, ray_cpus)
        except RayUnavailable as err:
            raise ScenarioError(str(err)) from None
    else:
        raise ScenarioError(f"unknown backend {backend!r}; choose 'local' or 'ray'")
    ordered = [rows[k] for k in sorted(rows)]
    for row in ordered:
        if row["run"] in todo and campaign.retain.keeps(row):
            run_one(text, row["run"], out=str(_ensure_parent(folder.recording(row["run"]))))
    write_results(ordered, campaign, folder.path)
    return ordered


def _ensure_parent(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    return path


def _run_on_ray(
    campaign_json: str,
    todo: list[int],
    finished: Callable[[dict], None],
    ray_address: str | None,
    ray_cpus: int | None = None,
) -> None:
    """One Ray task per run, at most twice the cluster's CPUs in flight, rows taken as they come."""
    from hopsim.kernel.distributed.ray_runtime import ray_session

    with ray_session(ray_address, ray_cpus) as ray:
        task = ray.remote(num_cpus=1)(run_one)
        window = max(2, 2 * int(ray.cluster_resources().get("CPU", 1)))
        pending = list(todo)
        in_flight: list = []
        while pending or in_flight:
            while pending and len(in_flight) < window:
                in_flight.append(task.remote(campaign_json, pending.pop(0)))
            done, in_flight = ray.wait(in_flight, num_returns=1)
            for ref in done:
                finished(ray.get(ref))


# ----------------------------------------------------------------------------- results
def table_columns(rows: list[dict]) -> tuple[list[str], list[str]]:
    """The dispersed parameters' paths and the outcome metrics' names, in first-seen order."""
    params, metrics = {}, {}
    for row in rows:
        params.update(dict.fromkeys(row["parameters"]))
        metrics.update(dict.fromkeys(row["outcome"]))
    return list(params), list(metrics)


def write_results(rows: list[dict], campaign: Campaign, directory: Path) -> None:
    params, metrics = table_columns(rows)
    with replacing(directory / "results.csv") as tmp, open(tmp, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["run", "seed", "status", "error", *params, *metrics, "stream_sha256"])
        for row in rows:
            w.writerow(
                [
                    row["run"],
                    row["seed"],
                    row["status"],
                    row["error"],
                    *[_cell(row["parameters"].get(p)) for p in params],
                    *[_cell(row["outcome"].get(m)) for m in metrics],
                    row["stream_sha256"],
                ]
            )
    write_results_parquet(rows, campaign, directory / "results.parquet")
    success = get_scenario(campaign.scenario).success
    summary = summarize(rows, success.description if success is not None else None)
    with replacing(directory / "summary.json") as tmp:
        tmp.write_text(json.dumps(summary, indent=1, sort_keys=True))
    with replacing(directory / "summary.md") as tmp:
        tmp.write_text(summary_markdown(summary, campaign))
    write_plots(rows, directory / "plots")


def write_results_parquet(rows: list[dict], campaign: Campaign, path: Path) -> None:
    """The table of results.csv with typed columns (see the module docstring)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    params, metrics = table_columns(rows)
    columns = {
        "run": pa.array([row["run"] for row in rows], pa.int64()),
        "seed": _seed_column([row["seed"] for row in rows]),
        "status": pa.array([row["status"] for row in rows], pa.string()),
        "error": pa.array([row["error"] for row in rows], pa.string()),
    }
    for name, where in [*((p, "parameters") for p in params), *((m, "outcome") for m in metrics)]:
        if name not in columns:
            columns[name] = _typed_column([row[where].get(name) for row in rows])
    columns["stream_sha256"] = pa.array([row["stream_sha256"] for row in rows], pa.string())
    table = pa.table(columns).replace_schema_metadata({"hopsim.campaign": campaign.model_dump_json()})
    with replacing(path) as tmp:
        pq.write_table(table, tmp, compression="zstd")


def _seed_column(seeds: list[int]):
    """The runs' seeds: uint64, or their decimal text when one needs more bits (seeds go to 2**128)."""
    import pyarrow as pa

    if all(0 <= s < 2**64 for s in seeds):
        return pa.array(seeds, pa.uint64())
    return pa.array([str(s) for s in seeds], pa.string())


def _typed_column(values: list[Any]):
    """One column of the results: booleans, integers (int64), numbers (float64) or strings, with
    null where a run has no value; anything else (lists, tables, a mix) as its JSON text."""
    import pyarrow as pa

    present = [v for v in values if v is not None]
    if all(isinstance(v, bool) for v in present):
        kind = pa.bool_()
    elif all(isinstance(v, int) and not isinstance(v, bool) and -(2**63) <= v < 2**63 for v in present):
        kind = pa.int64()
    elif all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in present):
        kind, values = pa.float64(), [None if v is None else float(v) for v in values]
    elif all(isinstance(v, str) for v in present):
        kind = pa.string()
    else:
        kind, values = pa.string(), [None if v is None else json.dumps(v) for v in values]
    return pa.array(values, kind)


def load(directory: str | Path):
    """A campaign's results (``results.parquet``) as a pandas DataFrame, one row per run; the
    campaign is in ``attrs["campaign"]`` (a dict)."""
    import pandas as pd
    import pyarrow.parquet as pq

    path = Path(directory) / "results.parquet"
    if not path.is_file():
        there = "a campaign's results" if (Path(directory) / "campaign.json").is_file() else "a campaign directory"
        raise ScenarioError(
            f"{path} does not exist: {directory} is not {there} written by this version of hopsim "
            f"(`hopsim montecarlo run` writes it when the campaign ends)"
        )
    try:
        table = pq.read_table(path)
    except Exception as err:
        raise ScenarioError(f"{path} cannot be read ({err})") from None
    frame = table.to_pandas()
    assert isinstance(frame, pd.DataFrame)
    text = (table.schema.metadata or {}).get(b"hopsim.campaign")
    if text:
        frame.attrs["campaign"] = json.loads(text)
    return frame


def _cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, (list, tuple, dict)):
        return json.dumps(value)
    return str(value)


def wilson_interval(failures: int, n: int, z: float = 1.959963984540054) -> tuple[float, float]:
    """The 95% Wilson score interval of a proportion ``failures / n``."""
    if n == 0:
        return 0.0, 1.0
    p = failures / n
    denominator = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denominator
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denominator
    return max(0.0, centre - half), min(1.0, centre + half)


def summarize(rows: list[dict], success: str | None = None) -> dict[str, Any]:
    """The failure rate with its 95% Wilson interval: a run fails when it raises (``errors``) or
    when its outcome misses the scenario's success criterion (``unsuccessful``; ``success``
    describes it). Over the runs that ended (failed by the criterion or not): per numeric metric
    the count, mean, std (n - 1), min, p5, p50, p95 and max; per boolean metric (``rates``) the
    count, how many are true and that rate with its 95% Wilson interval."""
    import numpy as np

    n = len(rows)
    failures = sum(1 for r in rows if r["status"] != "ok")
    low, high = wilson_interval(failures, n)
    out: dict[str, Any] = {
        "runs": n,
        "failed": failures,
        "errors": sum(1 for r in rows if r["status"] == "failed"),
        "unsuccessful": sum(1 for r in rows if r["status"] == UNSUCCESSFUL),
        "success": success,
        "failure_rate": failures / n if n else 0.0,
        "failure_rate_95ci": [low, high],
        "metrics": {},
        "rates": {},
    }
    ended = [r for r in rows if r["status"] in ("ok", UNSUCCESSFUL)]
    _, metrics = table_columns(rows)
    for m in metrics:
        flags = [r["outcome"][m] for r in ended if isinstance(r["outcome"].get(m), bool)]
        if flags:
            true = sum(flags)
            out["rates"][m] = {
                "n": len(flags),
                "true": true,
                "rate": true / len(flags),
                "rate_95ci": list(wilson_interval(true, len(flags))),
            }
        values = np.array(
            [
                r["outcome"][m]
                for r in ended
                if isinstance(r["outcome"].get(m), (int, float)) and not isinstance(r["outcome"][m], bool)
            ],
            dtype=float,
        )
        values = values[np.isfinite(values)]
        if values.size == 0:
            continue
        p5, p50, p95 = np.percentile(values, [5, 50, 95])
        out["metrics"][m] = {
            "n": int(values.size),
            "mean": float(values.mean()),
            "std": float(values.std(ddof=1)) if values.size > 1 else 0.0,
            "min": float(values.min()),
            "p5": float(p5),
            "p50": float(p50),
            "p95": float(p95),
            "max": float(values.max()),
        }
    return out


def summary_markdown(summary: dict[str, Any], campaign: Campaign) -> str:
    low, high = summary["failure_rate_95ci"]
    lines = [
        f"# {campaign.scenario}: {summary['runs']} runs (campaign seed {campaign.seed})",
        "",
        f"Failed: {summary['failed']} ({summary['failure_rate']:.1%}; 95% interval {low:.1%} to {high:.1%}): "
        f"{summary.get('unsuccessful', 0)} by the success criterion, {summary.get('errors', summary['failed'])} "
        f"raised an error",
        "",
        f"Success: {summary.get('success') or 'every run that ends (the scenario declares no criterion)'}",
        "",
        "| metric | n | mean | std | min | p5 | p50 | p95 | max |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for name, s in summary["metrics"].items():
        lines.append(
            f"| {name} | {s['n']} | "
            + " | ".join(f"{s[k]:.6g}" for k in ("mean", "std", "min", "p5", "p50", "p95", "max"))
            + " |"
        )
    if summary.get("rates"):
        lines += ["", "| outcome | n | true | rate | 95% interval |", "|---|---|---|---|---|"]
        for name, r in summary["rates"].items():
            lo, hi = r["rate_95ci"]
            lines.append(f"| {name} | {r['n']} | {r['true']} | {r['rate']:.1%} | {lo:.1%} to {hi:.1%} |")
    return "\n".join(lines) + "\n"


def write_plots(rows: list[dict], directory: Path) -> list[Path]:
    """Histograms of each numeric outcome, and each outcome against each scalar dispersed
    parameter (PNG files); the paths written."""
    # figures of their own (no pyplot): the backend of the caller (a notebook's) is left as it is
    from matplotlib.figure import Figure

    directory.mkdir(parents=True, exist_ok=True)
    ok = [r for r in rows if r["status"] in ("ok", UNSUCCESSFUL)]  # every run that ended
    params, metrics = table_columns(ok)
    written = []
    for m in metrics:
        ys = [r["outcome"].get(m) for r in ok]
        if not ys or not all(isinstance(y, (int, float)) and not isinstance(y, bool) for y in ys):
            continue
        fig = Figure(figsize=(5, 3.5))
        ax = fig.subplots()
        ax.hist(ys, bins=min(50, max(5, len(ys) // 5)))
        ax.set_xlabel(m)
        ax.set_ylabel("runs")
        fig.tight_layout()
        written.append(_save(fig, directory / f"hist_{_safe(m)}.png"))
        for p in params:
            xs = [r["parameters"].get(p) for r in ok]
            if not all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in xs):
                continue
            fig = Figure(figsize=(5, 3.5))
            ax = fig.subplots()
            ax.plot(xs, ys, ".", alpha=0.6)
            ax.set_xlabel(p)
            ax.set_ylabel(m)
            fig.tight_layout()
            written.append(_save(fig, directory / f"{_safe(m)}_vs_{_safe(p)}.png"))
    return written


def _save(fig, path: Path) -> Path:
    with replacing(path) as tmp:
        fig.savefig(tmp, dpi=80)
    return path


def _safe(name: str) -> str:
    return "".join(c if c.isalnum() or c in "-_" else "_" for c in name)


def rerun(directory: str | Path, run: int, out: str | Path | None = None) -> dict[str, Any]:
    """Run ``run`` of the campaign in ``directory`` again on its own (recorded to ``out``): its row,
    which equals the one in the campaign's table."""
    campaign = CampaignDirectory(directory).campaign()
    if not 0 <= run < campaign.runs:
        raise ScenarioError(f"the campaign has runs 0 to {campaign.runs - 1}; there is no run {run}")
    return run_one(campaign.model_dump_json(), run, out=None if out is None else str(out))
