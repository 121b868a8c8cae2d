"""Monte Carlo campaigns: dispersions have their distributions, a run is a function of (campaign
seed, run index) alone, a killed campaign resumes to the same table, failures are tabulated."""

from __future__ import annotations

import json
import math
import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest
from scipy import stats

from hopsim.bus.recorder import read_metadata
from hopsim.scenarios import ScenarioError
from hopsim.scenarios.dispersions import Dispersion, dispersed_values, set_path
from hopsim.scenarios.montecarlo import (
    load_campaign,
    make_campaign,
    rerun,
    run_campaign,
    run_one,
    summarize,
    wilson_interval,
)
from hopsim.scenarios.runner import run_scenario

N = 3000


def draws(knob: dict, n: int = N, seed: int = 5) -> list:
    d = [Dispersion(path="x", knob=knob)]
    return [dispersed_values(d, seed, k)["x"] for k in range(n)]


def test_normal_and_uniform_draws_have_their_distributions():
    normal = draws({"kind": "normal", "mean": 3.0, "std": 2.0})
    assert stats.kstest(normal, "norm", args=(3.0, 2.0)).pvalue > 0.01
    uniform = draws({"kind": "uniform", "low": -1.0, "high": 4.0})
    assert stats.kstest(uniform, "uniform", args=(-1.0, 5.0)).pvalue > 0.01
    cut = draws({"kind": "normal", "mean": 0.0, "std": 1.0, "low": -0.5, "high": 1.0}, n=1000)
    assert min(cut) >= -0.5 and max(cut) <= 1.0
    assert stats.kstest(cut, stats.truncnorm(-0.5, 1.0).cdf).pvalue > 0.01


def test_choice_follows_its_weights_and_mvnormal_its_covariance():
    picks = draws({"kind": "choice", "values": ["a", "b", "c"], "weights": [1, 2, 7]})
    counts = [picks.count(v) for v in "abc"]
    assert stats.chisquare(counts, [N * 0.1, N * 0.2, N * 0.7]).pvalue > 0.01
    cov = [[4.0, 1.2], [1.2, 1.0]]
    xs = np.array(draws({"kind": "mvnormal", "mean": [1.0, -2.0], "covariance": cov}, n=4000))
    assert np.allclose(xs.mean(axis=0), [1.0, -2.0], atol=4 * 2.0 / math.sqrt(4000))
    assert np.allclose(np.cov(xs.T), cov, atol=0.25)


def test_lists_grids_sequences_and_constants_enumerate():
    assert draws({"kind": "list", "values": [1, 2, 3]}, n=7) == [1, 2, 3, 1, 2, 3, 1]
    assert draws({"kind": "sequence", "start": 10, "step": 0.5}, n=3) == [10, 10.5, 11]
    assert draws({"kind": "constant", "value": [0, 1]}, n=2) == [[0, 1], [0, 1]]
    grid = [Dispersion(path="g", knob={"kind": "grid", "axes": {"a": [1, 2], "b": ["x", "y", "z"]}})]
    combos = [tuple(dispersed_values(grid, 0, k).values()) for k in range(6)]
    assert combos == [(1, "x"), (1, "y"), (1, "z"), (2, "x"), (2, "y"), (2, "z")]


def test_a_runs_draws_depend_on_the_campaign_seed_and_run_alone():
    a = Dispersion(path="a", knob={"kind": "normal", "mean": 0, "std": 1})
    b = Dispersion(path="b", knob={"kind": "uniform", "low": 0, "high": 1})
    assert dispersed_values([a, b], 9, 17) == {**dispersed_values([b, a], 9, 17)}
    assert dispersed_values([a], 9, 17)["a"] == dispersed_values([a, b], 9, 17)["a"]
    assert dispersed_values([a], 9, 17) != dispersed_values([a], 10, 17)


def test_paths_reach_vectors_nested_fields_and_faults():
    params = {"v": [0.0, 0.3, 0.1], "contact": {"restitution": 0.5}, "faults": [{"t_s": 1.0}]}
    set_path(params, "v[1]", 7.0)
    set_path(params, "contact.restitution", 0.9)
    set_path(params, "faults[0].t_s", 2.5)
    assert params == {"v": [0.0, 7.0, 0.1], "contact": {"restitution": 0.9}, "faults": [{"t_s": 2.5}]}
    with pytest.raises(ValueError, match="no 'nope'"):
        set_path(params, "contact.nope", 1)
    with pytest.raises(ValueError, match="not a name"):
        Dispersion(path="v[x]", knob={"kind": "constant", "value": 1})


@pytest.mark.parametrize(
    "knob, message",
    [
        ({"kind": "uniform", "low": 2, "high": 1}, "low < high"),
        ({"kind": "uniform", "low": -1e308, "high": 1e308}, "width high - low overflows"),
        ({"kind": "normal", "mean": float("nan"), "std": 1}, "finite"),
        ({"kind": "mvnormal", "mean": [0, 0], "covariance": [[1, 2], [2, 1]]}, "semi-definite"),
        ({"kind": "choice", "values": [1, 2], "weights": [1]}, "weights"),
        ({"kind": "gauss", "mean": 1}, "kind"),
    ],
)
def test_bad_dispersions_are_refused_by_name(knob, message):
    with pytest.raises(ScenarioError, match=message):
        make_campaign({"scenario": "lander", "runs": 2, "dispersions": [{"path": "altitude_m", "knob": knob}]})


def test_a_nested_override_path_is_dispersed_as_set_sets_it(tmp_path):
    """``vehicle_overrides.thrusters.pressure_psig`` in a campaign: the same key and validation as
    ``--set``; the run flies with the dispersed value and its recording lists it."""
    path = "vehicle_overrides.thrusters.pressure_psig"
    data = {
        "scenario": "leader_follower",
        "runs": 2,
        "duration_s": 0.2,
        "parameters": {"vehicle_overrides": {"thrusters": {"pressure_psig": 40}, "mass.mass_kg": 4.0}},
        "dispersions": [{"path": path, "knob": {"kind": "list", "values": [10, 30]}}],
    }
    campaign = make_campaign(data)
    overrides = [campaign.run_parameters(k)[1]["vehicle_overrides"] for k in range(2)]
    assert overrides == [{"thrusters.pressure_psig": p, "mass.mass_kg": 4.0} for p in (10.0, 30.0)]
    row = run_one(campaign.model_dump_json(), 0, out=str(tmp_path / "run0.mcap"))
    assert row["status"] == "ok" and row["parameters"] == {path: 10}, row
    recorded = json.loads(read_metadata(tmp_path / "run0.mcap")["hopsim.run"]["parameters_json"])
    assert recorded["vehicle_overrides"]["thrusters.pressure_psig"] == 10.0
    # the vehicles fly with it: thrust = 0.0033 N/psi x pressure - 0.0049 N (as with --set)
    seed, params = campaign.run_parameters(1)
    r = run_scenario("leader_follower", params, seed=seed, duration_s=0.1, keep_sim=True)
    assert r.sim.model("sph1_thrusters").levels_N.tolist() == [0.0033 * 30 - 0.0049] * 12
    # refused as --set refuses it: by its path, with its bound
    for value, words in ((80, "less than or equal to 50"), ("x", "valid number")):
        bad = {**data, "dispersions": [{"path": path, "knob": {"kind": "list", "values": [value]}}]}
        with pytest.raises(ScenarioError, match=f"{path}: .*{words}"):
            make_campaign(bad)
    typo = {
        **data,
        "dispersions": [{"path": "vehicle_overrides.thrusters.presure_psig", "knob": bad["dispersions"][0]["knob"]}],
    }
    with pytest.raises(ScenarioError, match="no parameter 'presure_psig'"):
        make_campaign(typo)


def test_wilson_interval_and_summary_against_hand_values():
    low, high = wilson_interval(0, 6)
    z2 = 1.959963984540054**2
    assert low == pytest.approx(0.0, abs=1e-15) and high == pytest.approx(z2 / (6 + z2))
    rows = [{"run": i, "status": "ok", "outcome": {"m": float(i)}, "parameters": {}} for i in range(5)]
    rows.append({"run": 5, "status": "failed", "outcome": {}, "parameters": {}})
    s = summarize(rows)
    assert s["failed"] == 1 and s["metrics"]["m"]["mean"] == 2.0
    assert s["metrics"]["m"]["std"] == pytest.approx(math.sqrt(2.5)) and s["metrics"]["m"]["p50"] == 2.0


CAMPAIGN = """
scenario = "lander"
runs = 5
seed = 11
duration_s = 30

[parameters]
stop_on_touchdown = true

[dispersions.altitude_m]
kind = "list"
values = [110.0, -5.0, 130.0, 125.0, 100.0]

[dispersions."faults"]
kind = "choice"
values = [[], [{t_s = 5, target = "body", kind = "thrust_scale", value = 0.5}]]

[retain]
runs = [2]
"""


@pytest.fixture(scope="module")
def campaign_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("mc") / "campaign.toml"
    path.write_text(CAMPAIGN)
    return path


@pytest.fixture(scope="module")
def finished(campaign_file, tmp_path_factory):
    directory = tmp_path_factory.mktemp("mc_run")
    rows = run_campaign(load_campaign(campaign_file), directory)
    return directory, rows


def test_a_failing_run_is_tabulated_and_the_campaign_goes_on(finished):
    directory, rows = finished
    # the landers whose engine lost half its thrust crash: their outcome fails the lander's
    # success criterion; run 1 raises (a negative altitude)
    assert [r["status"] for r in rows] == ["unsuccessful", "failed", "unsuccessful", "unsuccessful", "ok"]
    assert "altitude_m" in rows[1]["error"] and rows[0]["error"].startswith("crashed: touchdown at")
    # failed runs are retained (run 1 failed before it could start: nothing to record); run 2 by number too
    assert sorted(p.name for p in (directory / "recordings").iterdir()) == [
        "run_000000.mcap",
        "run_000002.mcap",
        "run_000003.mcap",
    ]
    summary = json.loads((directory / "summary.json").read_text())
    assert summary["failed"] == 4 and summary["errors"] == 1 and summary["unsuccessful"] == 3
    assert summary["metrics"]["touchdown_speed_mps"]["n"] == 4  # every run that ended, crashed or not
    assert summary["rates"]["safe"]["true"] == 1 and summary["rates"]["landed"]["true"] == 4
    assert any(p.name.startswith("hist_") for p in (directory / "plots").iterdir())


def test_results_parquet_holds_the_table_with_typed_columns(finished):
    import csv

    from hopsim.scenarios.montecarlo import load

    directory, rows = finished
    frame = load(directory)
    assert frame["run"].tolist() == [0, 1, 2, 3, 4] and str(frame["run"].dtype) == "int64"
    assert frame["status"].tolist() == [r["status"] for r in rows]
    assert frame["stream_sha256"].tolist() == [r["stream_sha256"] for r in rows]
    assert frame["altitude_m"].tolist() == [110.0, -5.0, 130.0, 125.0, 100.0]
    assert str(frame["altitude_m"].dtype) == "float64" and str(frame["safe"].dtype) in ("bool", "object")
    assert json.loads(frame["faults"].iloc[0]) == rows[0]["parameters"]["faults"]  # a list parameter: its JSON
    # the failed run (1) has no outcome: null, not a guess
    assert frame["touchdown_speed_mps"].isna().tolist() == [False, True, False, False, False]
    assert frame.attrs["campaign"]["scenario"] == "lander"
    with open(directory / "results.csv") as f:
        table = list(csv.DictReader(f))
    assert list(frame.columns) == list(table[0])
    for got, want in zip(frame.to_dict("records"), table):
        for name, text in want.items():
            if text and name not in ("faults", "error", "status", "stream_sha256"):
                assert float(got[name]) == float(text == "True" if text in ("True", "False") else text), name


def test_a_run_rerun_alone_equals_its_row_and_its_recording(finished, tmp_path):
    directory, rows = finished
    again = rerun(directory, 3, out=tmp_path / "run3.mcap")
    assert again["stream_sha256"] == rows[3]["stream_sha256"] != ""
    assert again["outcome"] == rows[3]["outcome"] and again["parameters"] == rows[3]["parameters"]
    kept = read_metadata(directory / "recordings" / "run_000002.mcap")
    assert rows[2]["stream_sha256"] in json.dumps(kept)


def test_a_killed_campaign_resumes_to_the_uninterrupted_table(campaign_file, finished, tmp_path):
    directory, _ = finished
    partial = tmp_path / "partial"
    code = (
        "import sys, time; from hopsim.scenarios.montecarlo import load_campaign, run_campaign;"
        "run_campaign(load_campaign(sys.argv[1]), sys.argv[2], "
        "on_row=lambda r, d, t: time.sleep(30) if d == 2 else None)"
    )
    proc = subprocess.Popen([sys.executable, "-c", code, str(campaign_file), str(partial)])
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            runs = partial / "runs.jsonl"
            if runs.exists() and len(runs.read_text().splitlines()) >= 2:
                break
            time.sleep(0.2)
        else:
            pytest.fail("the campaign wrote no rows in 120 s")
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
    with open(partial / "runs.jsonl", "a") as f:
        f.write('{"run": 4, "seed"')  # a line torn by the kill
    assert not (partial / "results.csv").exists()
    run_campaign(load_campaign(campaign_file), partial)
    assert (partial / "results.csv").read_text() == (directory / "results.csv").read_text()


def test_a_directory_of_another_campaign_is_not_resumed(campaign_file, finished):
    directory, _ = finished
    other = load_campaign(campaign_file).model_copy(update={"seed": 12})
    with pytest.raises(ScenarioError, match="another campaign"):
        run_campaign(other, directory)


@pytest.mark.ray
def test_ray_and_local_campaigns_give_the_same_table(campaign_file, finished, tmp_path):
    directory, _ = finished
    run_campaign(load_campaign(campaign_file), tmp_path / "ray", backend="ray")
    assert (tmp_path / "ray" / "results.csv").read_text() == (directory / "results.csv").read_text()


def test_the_command_runs_a_campaign_and_reruns_one_of_its_runs(tmp_path):
    from typer.testing import CliRunner

    from hopsim.cli import app

    runner = CliRunner()
    directory = tmp_path / "mc"
    result = runner.invoke(
        app,
        [
            "montecarlo",
            "run",
            "lander",
            "--runs",
            "3",
            "--duration",
            "20",
            "--disperse",
            "altitude_m=uniform:80,120",
            "--dir",
            str(directory),
        ],
    )
    assert result.exit_code == 0, result.output
    lines = (directory / "results.csv").read_text().splitlines()
    assert len(lines) == 4 and lines[0].startswith("run,seed,status,error,altitude_m")
    again = runner.invoke(app, ["montecarlo", "rerun", str(directory), "--run", "1"])
    assert again.exit_code == 0 and lines[2].split(",")[-1] in again.output.replace("\n", "")
    bad = runner.invoke(
        app,
        [
            "montecarlo",
            "run",
            "lander",
            "--runs",
            "2",
            "--disperse",
            "altitude_m=gauss:1,2",
            "--dir",
            str(tmp_path / "bad"),
        ],
    )
    assert bad.exit_code == 2 and "unknown kind 'gauss'" in bad.output


def test_view_opens_a_retained_run_and_says_how_to_get_another(finished):
    """`hopsim view DIR --run K`: a retained run's recording; another run: how to record it."""
    import typer
    from typer.testing import CliRunner

    from hopsim.cli import _recording_to_view, app
    from hopsim.view.server import RunView

    directory, rows = finished
    path = _recording_to_view(directory, 2)
    assert path == directory / "recordings" / "run_000002.mcap"
    view = RunView(path)
    assert view.info["result"]["stream_sha256"] == rows[2]["stream_sha256"]
    assert dict(view.catalog["topics"])["lander/telemetry"] == "hopsim.LanderTelemetry"
    assert view.poses.vehicles == ["lander"] and len(view.poses.t_s) > 100
    result = CliRunner().invoke(app, ["view", str(directory), "--run", "4", "--no-browser"])
    assert result.exit_code == 2 and "run 4 was not retained" in result.output
    assert "retained runs: 0, 2, 3" in result.output and "montecarlo rerun" in result.output
    with pytest.raises(typer.Exit):
        _recording_to_view(directory, None)


@pytest.mark.parametrize("where", ["a file", "/proc/mc"])
def test_a_campaign_directory_that_is_a_file_or_cannot_be_made_is_refused_before_anything_runs(tmp_path, where):
    from typer.testing import CliRunner

    from hopsim.cli import app

    campaign = tmp_path / "c.toml"
    campaign.write_text('scenario = "lander"\nruns = 2\nduration_s = 1\n')
    directory = tmp_path / "taken" if where == "a file" else where
    (tmp_path / "taken").write_text("not a directory")
    res = CliRunner().invoke(app, ["montecarlo", "run", str(campaign), "--dir", str(directory)])
    text = " ".join(res.output.split())
    assert res.exit_code == 2 and text.count("error:") == 1 and "Traceback" not in text, text
    words = "is a file: choose a directory" if where == "a file" else "cannot make or write in the campaign directory"
    assert words in text and "compiling" not in text, text
    assert (tmp_path / "taken").read_text() == "not a directory"
