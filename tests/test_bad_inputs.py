"""Bad input to any command is a clear message naming the problem, and exit code 2; never a
traceback, never a hang (each case runs in-process and must return at once)."""

import pytest
from typer.testing import CliRunner

from hopsim.cli import app

runner = CliRunner()

BAD = [
    (["run", "lander", "--set", "altitude_m=nan"], "altitude_m"),
    (["run", "lander", "--set", "altitude_m=inf"], "finite"),
    (["run", "lander", "--set", "mass_kg=-inf"], "mass_kg"),
    (["run", "lander", "--set", "altimeter_rate_hz=1e12"], "altimeter_rate_hz"),
    (["run", "lander", "--set", "n_integration_steps=1000000000"], "n_integration_steps"),
    (["run", "lander", "--set", "radio_latency_s=inf"], "radio_latency_s"),
    (["run", "lander", "--set", "touchdown_eps_s=inf"], "touchdown_eps_s"),
    (["run", "lander", "--duration", "inf"], "duration"),
    (["run", "lander", "--duration", "nan"], "duration"),
    (["run", "lander", "--duration", "-3"], "duration"),
    (["run", "lander", "--checkpoint-every", "1e-9"], "checkpoints"),
    (["run", "lander", "--checkpoint-every", "inf"], "checkpoint-every"),
    (["run", "lander", "--fault", "t=inf,target=body,kind=thrust_scale,value=0"], "t_s"),
    (["run", "lander", "--fault", "t=nan,target=body,kind=thrust_scale,value=0"], "t_s"),
    (["run", "lander", "--fault", "t=1,target=body,kind=thrust_scale,value=nan"], "value"),
    (["run", "lander", "--fault", "t=1,target=body,kind=disturbance,force=[0,0,inf]"], "force_N"),
    (["run", "lander", "--fault", "t=1,target=body,kind=disturbance,duration=inf"], "duration_s"),
    (["run", "lander", "--fault", "t=99,target=body,kind=thrust_scale,value=0"], "after the run's end"),
    (["run", "lander", "--fault", "t=1,target=nobody,kind=dropout"], "unknown target"),
    (["run", "lander", "--fault", "t=1,target=altimeter,kind=melt"], "does not accept"),
    # a duration the target turns into nanoseconds (1e309 ns: an overflow in the run, once)
    (["run", "lander", "--fault", "t=1,target=body,kind=disturbance,force=[0,0,1],duration=1e300"], "duration_s"),
    (["run", "lander", "--live", "--live-token", "", "--out", "x.mcap"], "--live-token is empty"),
    (["run", "formation", "--set", "n_vehicles=10000000"], "n_vehicles"),
    (["run", "formation", "--set", "control_rate_hz=1e9"], "control_rate_hz"),
    (["run", "deploy_boom", "--set", "boom_offset_m=1,2"], "boom_offset_m"),
    (["run", "deploy_boom", "--set", "boom_offset_m=[1,nan,0]"], "boom_offset_m"),
    (["run", "collision", "--set", "contact.restitution=2"], "restitution"),
    (["run", "lander", "--backend", "gpu"], "backend"),
    (["run", "lander", "--backend", "ray", "--placement", "shards:0"], "placement"),
    (["montecarlo", "run", "lander", "--runs", "0"], "runs"),
    (["montecarlo", "run", "lander", "--runs", "3", "--disperse", "altitude_m=normal:nan,1"], "finite"),
    (["montecarlo", "rerun", "nowhere", "--run", "1"], "not a campaign directory"),
    (["scenarios", "nope"], "unknown scenario"),
    (["faults", "nope"], "unknown scenario"),
    (["resume", "missing.ckpt"], "no checkpoint file"),
    (["replay", "missing.mcap"], "missing.mcap"),
]


@pytest.mark.parametrize("args, words", BAD, ids=[" ".join(a) for a, _ in BAD])
def test_bad_input_is_a_clear_error(args, words, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    res = runner.invoke(app, args)
    text = " ".join(res.output.split())
    assert res.exit_code == 2, (res.exit_code, text, res.exception)
    assert "Traceback" not in text and words in text, text
