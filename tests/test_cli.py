"""The hopsim command: list, run, record; errors name the problem and the valid choices."""
from typer.testing import CliRunner

from hopsim.bus import read_metadata
from hopsim.cli import app

runner = CliRunner()


def test_scenarios_lists_the_lander():
    res = runner.invoke(app, ["scenarios"])
    assert res.exit_code == 0 and "lander" in res.output and "altitude_m" in res.output


def test_run_records_and_says_where(tmp_path):
    out = tmp_path / "x.mcap"
    res = runner.invoke(app, ["run", "lander", "--duration", "3", "--seed", "2", "--set", "altitude_m=40",
                              "--out", str(out), "--no-progress"])
    assert res.exit_code == 0, res.output
    assert str(out.resolve()) in res.output.replace("\n", "")
    meta = read_metadata(out)["hopsim.run"]
    assert meta["seed"] == "2" and '"altitude_m":40.0' in meta["parameters_json"]


def test_a_run_of_many_islands_is_summed_up_in_one_line():
    """20 vehicles at 1 Hz for 3 s: every island has barriers at 0, 1, 2 and 3 s and 3 hops."""
    res = runner.invoke(app, ["run", "formation", "--duration", "3", "--set", "n_vehicles=20", "--no-progress"])
    assert res.exit_code == 0, res.output
    text = " ".join(res.output.split())
    assert "island v00:" not in text
    assert "20 islands: 4 barriers each, 60 hops" in text


def test_unknown_scenario_and_bad_parameter_are_clear_errors():
    res = runner.invoke(app, ["run", "landr", "--no-progress"])
    assert res.exit_code == 2 and "unknown scenario 'landr'" in res.output and "lander" in res.output
    res = runner.invoke(app, ["run", "lander", "--set", "mass=3", "--no-progress"])
    assert res.exit_code == 2 and "no parameter 'mass'" in res.output and "mass_kg" in res.output
    res = runner.invoke(app, ["run", "lander", "--set", "mass_kg=-1", "--no-progress"])
    assert res.exit_code == 2 and "mass_kg" in res.output and "greater than 0" in res.output
    res = runner.invoke(app, ["run", "lander", "--set", "oops", "--no-progress"])
    assert res.exit_code != 0 and "key=value" in res.output
