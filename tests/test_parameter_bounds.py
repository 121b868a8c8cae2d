"""No silent acceptance: every parameter, fault and override either acts on the run or is refused
by name, with its bound, on one line, before the run (never a traceback, never an overflow deep in
the kernel); a state that leaves the finite numbers stops the run at a barrier, naming the island
and the instant; a campaign counts the runs its scenario's success criterion fails."""

from __future__ import annotations

import json
import math
from typing import Annotated, get_args, get_origin

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from models_for_tests import FallingBody, IoRecorder
from typer.testing import CliRunner

from hopsim.bus.recorder import read_metadata
from hopsim.cli import app
from hopsim.kernel import Simulation, checkpoint
from hopsim.kernel.bounds import MAX_SEED
from hopsim.kernel.errors import StateNotFinite
from hopsim.kernel.model import FixedRate
from hopsim.scenarios import ScenarioError, get_scenario
from hopsim.scenarios.montecarlo import make_campaign
from hopsim.scenarios.replay import RecordedRun, ReplayError
from hopsim.scenarios.runner import run_scenario

runner = CliRunner()


def cli(*args: str):
    """(exit code, the output as one line) of ``hopsim ARGS`` run in-process."""
    res = runner.invoke(app, list(args))
    text = " ".join(res.output.split())
    assert "Traceback" not in text, text
    if res.exit_code not in (0, 2):
        raise AssertionError((res.exit_code, text)) from res.exception
    return res.exit_code, text


def refused(words: list[str], *args: str) -> str:
    code, text = cli(*args)
    assert code == 2 and text.count("error:") == 1, text
    for w in words:
        assert w in text, (w, text)
    return text


# ----------------------------------------------------------------------------- overrides
def test_a_nested_vehicle_override_acts_and_is_recorded_as_applied(tmp_path):
    out = tmp_path / "lf.mcap"
    setting = "vehicle_overrides.thrusters.pressure_psig=10"
    code, text = cli(
        *["run", "leader_follower", "--duration", "1", "--no-progress", "--set"], setting, "--out", str(out)
    )
    assert code == 0, text
    params = json.loads(read_metadata(out)["hopsim.run"]["parameters_json"])
    assert params["vehicle_overrides"] == {"thrusters.pressure_psig": 10.0}
    # the nested form is the same override, and the vehicles fly with it
    r = run_scenario(
        "leader_follower", {"vehicle_overrides": {"thrusters": {"pressure_psig": "10"}}}, duration_s=0.5, keep_sim=True
    )
    assert r.sim.model("sph1_thrusters").levels_N.tolist() == [0.0033 * 10 - 0.0049] * 12


@pytest.mark.parametrize(
    "setting, words",
    [
        ("vehicle_overrides.thrusters.pressure_psig=-10", ["vehicle_overrides.thrusters.pressure_psig", "-10"]),
        ("vehicle_overrides.thrusters.pressure_psig=80", ["vehicle_overrides.thrusters.pressure_psig", "50"]),
        (
            "vehicle_overrides.thrusters.presure_psig=10",
            ["vehicle_overrides.thrusters.presure_psig: there is no parameter 'presure_psig'"],
        ),
        ("vehicle_overrides.thrusters=10", ["vehicle_overrides.thrusters is a group"]),
        ("vehicle_overrides.thrusters.noise_fraction=0.1", ["thrust_noise"]),
        ("vehicle_overrides.vehicle_type=spheres_air_table", ["vehicle_overrides.vehicle_type", "vehicle_type"]),
        ("testbed_overrides.range_noise_m=1", ["testbed_overrides.range_noise_m", "set range_noise_m"]),
        ("testbed_overrides.speed_of_sound_mps=-1", ["testbed_overrides.speed_of_sound_mps"]),
        ("leader_start_m=9,1,1", ["leader_start_m", "outside the test volume"]),
    ],
)
def test_an_override_the_run_would_not_use_as_given_is_refused_by_name(setting, words):
    refused(words, "run", "leader_follower", "--duration", "1", "--no-progress", "--set", setting)


# ----------------------------------------------------------------------------- probabilities
@pytest.mark.parametrize(
    "scenario_name, args, words",
    [
        ("formation", ["--set", "radio_loss=1.5"], ["radio_loss", "[0, 1] (a probability)", "1.5"]),
        ("formation", ["--set", "radio_loss=-0.1"], ["radio_loss", "[0, 1]"]),
        ("leader_follower", ["--set", "radio_loss=2"], ["radio_loss", "[0, 1]"]),
        (
            "leader_follower",
            ["--set", "vehicle_overrides.radio.bit_error_rate=1.5"],
            ["vehicle_overrides.radio.bit_error_rate", "[0, 1]"],
        ),
        (
            "formation",
            ["--set", "n_vehicles=2", "--fault", "t=1,target=v0_radio,kind=radio_loss,value=1.5"],
            ["v0_radio", "'radio_loss'", "[0, 1] (a probability)", "1.5"],
        ),
        (
            "formation",
            ["--set", "n_vehicles=2", "--fault", "t=1,target=v1_radio,kind=radio_loss,value=-0.5"],
            ["v1_radio", "[0, 1]"],
        ),
        (
            "leader_follower",
            ["--fault", "t=1,target=sts,kind=radio_loss,value=1.5"],
            ["sts", "'radio_loss'", "[0, 1] (a probability)"],
        ),
    ],
)
def test_a_probability_out_of_0_1_is_refused_never_clamped(scenario_name, args, words, tmp_path):
    refused(words, "run", scenario_name, "--duration", "1", "--no-progress", "--out", str(tmp_path / "r.mcap"), *args)
    assert not (tmp_path / "r.mcap").exists()


def test_a_radio_loss_fault_of_one_acts_as_given():
    """A radio_loss fault's value is the loss probability the radio uses, as given (1: every
    packet lost from then on)."""
    fault = {"t_s": 2.0, "target": "v0_radio", "kind": "radio_loss", "value": 1.0}
    r = run_scenario("formation", {"n_vehicles": 2, "faults": [fault]}, duration_s=4.0, keep_sim=True)
    radio = r.sim.model("v0_radio")
    assert radio.loss == 1.0 and radio.configured_loss == 0.0


# ----------------------------------------------------------------------------- times and rates
@pytest.mark.parametrize(
    "args, words",
    [
        (["--set", "altimeter_rate_hz=1e-300"], ["altimeter_rate_hz", "[1e-09, 1e+09] Hz"]),
        (["--set", "control_rate_hz=1e-10"], ["control_rate_hz", "1e-09"]),
        (["--set", "touchdown_eps_s=1e-300"], ["touchdown_eps_s", "1e-09"]),
        (["--set", "radio_latency_s=-1"], ["radio_latency_s"]),
        (["--duration", "1e300"], ["--duration", "1e+09] s"]),
        (["--duration", "1e-300"], ["--duration", "1e-09"]),
        (["--checkpoint-every", "1e-300"], ["--checkpoint-every", "1e-09"]),
        (["--fault", "t=1e300,target=body,kind=thrust_scale,value=0.5"], ["t_s", "1e+09] s"]),
        (["--fault", "t=1,target=body,kind=disturbance,force=[0,0,1],duration=1e300"], ["duration_s", "1e+09] s"]),
        (["--fault", "t=1,target=body,kind=thrust_scale,value=1e300"], ["'thrust_scale'", "value", "1e+09"]),
        (["--fault", "t=1,target=body,kind=disturbance,force=[1e308,0,0]"], ["force_N.x", "1e+07] N"]),
        (["--fault", "t=1,target=body,kind=disturbance,torque=[0,0,-1e308]"], ["torque_B.z", "1e+07] N m"]),
        (["--seed", str(MAX_SEED + 1)], ["--seed", "2**128 - 1"]),
        (["--seed", "-1"], ["seed"]),
    ],
)
def test_a_value_beyond_its_bound_is_refused_before_the_run(args, words, tmp_path):
    refused(words, "run", "lander", "--no-progress", "--out", str(tmp_path / "l.mcap"), *args)
    assert not (tmp_path / "l.mcap").exists()


def test_every_entry_point_refuses_the_same_bounds(tmp_path):
    """Campaign files, Monte Carlo options, fault campaigns and linearization use the same bounds."""
    for data, words in (
        ({"duration_s": 1e300}, "duration_s"),
        ({"seed": MAX_SEED + 1}, "seed"),
        ({"parameters": {"altimeter_rate_hz": 1e-300}}, "altimeter_rate_hz"),
    ):
        with pytest.raises(ScenarioError, match=words):
            make_campaign({"scenario": "lander", "runs": 2, **data})
    refused(["seed"], "montecarlo", "run", "lander", "--runs", "2", "--seed", str(MAX_SEED + 1), "--dir", str(tmp_path))
    refused(["duration_s"], "montecarlo", "run", "lander", "--runs", "2", "--duration", "1e300", "--dir", str(tmp_path))
    fault = "t=1,target=body,kind=disturbance,force=[1e308,0,0]"
    refused(["force_N.x"], "campaign", "lander", "--fault", fault, "--table", str(tmp_path / "t.md"))
    refused(["--at"], "linearize", "lander", "--at", "1e300", "--states", "body.*")


def test_run_and_replay_take_the_same_seeds(tmp_path):
    """Every seed numpy's seed sequences distinguish, 0 to 2**128 - 1, runs and replays; beyond, both refuse."""
    out = tmp_path / "big.mcap"
    code, text = cli("run", "lander", "--duration", "1", "--no-progress", "--seed", str(2**64), "--out", str(out))
    assert code == 0, text
    code, text = cli("replay", str(out))
    assert code == 0 and "identical" in text, text
    run = {"scenario": "lander", "parameters_json": "{}", "duration_s": "1.0"}
    assert RecordedRun.check({**run, "seed": str(MAX_SEED)}, "f").seed == MAX_SEED
    with pytest.raises(ReplayError, match="seed"):
        RecordedRun.check({**run, "seed": str(MAX_SEED + 1)}, "f")


# ----------------------------------------------------------------------------- checkpoints
def checkpoint_of_a_run(directory) -> str:
    """The first checkpoint of a 2 s lander run that writes one every second."""
    cli(
        *["run", "lander", "--duration", "2", "--no-progress", "--checkpoint-every", "1", "--checkpoint-dir"],
        str(directory),
    )
    return str(sorted(directory.glob("lander_t*.ckpt"))[0])


def tampered_checkpoint(tmp_path, change) -> str:
    """A checkpoint of a real lander run whose state ``change`` altered, written whole (its hash
    is the altered body's)."""
    written = checkpoint_of_a_run(tmp_path)
    description, _ = checkpoint.load(written)
    r = run_scenario("lander", description["overrides"], duration_s=1.0, keep_sim=True)
    state = checkpoint.capture(r.sim)
    change(state)
    path = tmp_path / "tampered.ckpt"
    checkpoint.save(state, path, description)
    return str(path)


def test_a_checkpoint_with_a_state_beyond_the_finite_numbers_is_refused(tmp_path):
    path = tampered_checkpoint(tmp_path, lambda s: s["islands"]["lander"]["x"].__setitem__(0, math.inf))
    refused(["island 'lander'", "finite"], "resume", path)


def test_a_checkpoint_at_an_instant_beyond_the_kernels_times_is_refused(tmp_path):
    path = tampered_checkpoint(tmp_path, lambda s: s.__setitem__("t_ns", 2**62))
    refused(["time"], "resume", path)


def test_resume_refuses_a_duration_beyond_its_bound(tmp_path):
    refused(["--duration"], "resume", checkpoint_of_a_run(tmp_path), "--duration", "1e300")


# ----------------------------------------------------------------------------- the state at barriers
@pytest.mark.filterwarnings("ignore:overflow:RuntimeWarning")  # the integrator's, on its way to inf
def test_a_state_that_leaves_the_finite_numbers_stops_the_run_at_a_barrier():
    sim = Simulation()
    sim.add_island("falling")
    sim.add_model(FallingBody("body", h0=0.0, g=1e308), "falling")
    sim.add_model(IoRecorder("clock", FixedRate(1.0)), "falling")
    with pytest.raises(StateNotFinite) as err:
        sim.advance_to(10.0)
    message = str(err.value)
    assert err.value.island == "falling" and err.value.t_ns == 1_000_000_000, message  # h'' = -1e308 m/s^2
    assert "island 'falling'" in message and "t = 1 s" in message and "body: h, v" in message
    assert "\n" not in message


def test_a_run_whose_state_leaves_the_finite_numbers_is_a_clear_error_not_inf():
    from hopsim.scenarios.registry import _REGISTRY, ScenarioParams, scenario

    @scenario("blow_up_for_tests", ScenarioParams, "a falling body under 1e308 m/s^2", 5.0)
    def build(sim, p):
        sim.add_island("falling")
        sim.add_model(FallingBody("body", h0=0.0, g=1e308), "falling")
        sim.add_model(IoRecorder("clock", FixedRate(1.0)), "falling")

    try:
        text = refused(["island 'falling'", "not finite", "t = 1 s"], "run", "blow_up_for_tests", "--no-progress")
        assert "inf" not in text.replace("finite", "")
    finally:
        del _REGISTRY["blow_up_for_tests"]


@pytest.mark.parametrize("row_blocks, check", [(False, "check_state_finite"), (True, "check_rows_finite")])
def test_a_formation_whose_state_leaves_the_finite_numbers_stops_alone_or_as_rows(row_blocks, check, monkeypatch):
    """Braking with a gain of 1e30 /s and a thrust limit of 1e308 N, both far past their bounds
    (the parameters made without validation: the check at barriers is the backstop behind the
    bounds): the speed grows 1e30-fold per period to inf. Each vehicle an island of its own or the
    group's members run as rows (one vectorised check per instant): the same error, naming the
    vehicle, its state and the instant."""
    p = {"n_vehicles": 3, "radio_loss": 1.0, "noise": False, "stale_after_s": 2.0}
    p |= {"brake_gain_per_s": 1e30, "max_thrust_N": 1e308, "mass_kg": 0.01}
    with pytest.raises(ScenarioError, match="max_thrust_N"):  # refused at the door
        run_scenario("formation", p, duration_s=60.0)
    spec = get_scenario("formation")
    monkeypatch.setattr(
        type(spec), "make_params", lambda self, overrides=None: self.params.model_construct(**overrides)
    )
    with pytest.raises(StateNotFinite) as err:
        run_scenario("formation", p, duration_s=60.0, row_blocks=row_blocks)
    text = "island 'v0': the continuous state is not finite at t = 13 s (v0: r_x, r_y, r_z, v_x, v_y, v_z)"
    assert str(err.value).startswith(text)
    assert any(entry.name == check for entry in err.traceback), [e.name for e in err.traceback]


# ----------------------------------------------------------------------------- campaigns
def test_a_campaign_counts_crashed_landers_as_failed_and_summarizes_booleans(tmp_path):
    args = "montecarlo run lander --runs 3 --duration 40 --set stop_on_touchdown=true"
    code, text = cli(*args.split(), "--disperse", "max_thrust_N=list:150;60;150", "--dir", str(tmp_path))
    assert code == 0, text
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["failed"] == summary["unsuccessful"] == 1 and summary["errors"] == 0
    assert summary["rates"]["safe"] == {
        "n": 3,
        "true": 2,
        "rate": 2 / 3,
        "rate_95ci": pytest.approx([0.2, 0.94], abs=0.01),
    }
    assert summary["metrics"]["touchdown_speed_mps"]["n"] == 3  # the crash's speed is in the spread
    assert summary["metrics"]["touchdown_speed_mps"]["max"] > 2.0
    rows = [json.loads(line) for line in (tmp_path / "runs.jsonl").read_text().splitlines()]
    crashed = next(r for r in rows if r["run"] == 1)
    assert crashed["status"] == "unsuccessful" and crashed["error"].startswith("crashed: touchdown at")
    md = (tmp_path / "summary.md").read_text()
    assert "Failed: 1 " in md and "1 by the success criterion" in md and "| safe | 3 | 2 |" in md
    assert "3 runs, 1 failed" in text
    assert (tmp_path / "recordings" / "run_000001.mcap").exists()  # a failed run is retained


def test_a_scenario_declares_its_success_criterion():
    lander = get_scenario("lander").success
    assert lander is not None and lander.check({"landed": True, "touchdown_speed_mps": 1.0}) is None
    assert "9.9 m/s" in lander.check({"landed": True, "touchdown_speed_mps": 9.9})
    assert lander.check({"landed": False, "touchdown_speed_mps": None}) is None  # still flying: no crash
    follower = get_scenario("leader_follower").success
    assert follower.check({"formation_held": False, "tracking_error_m": 0.5}).startswith("formation lost")


# ----------------------------------------------------------------------------- messages
@pytest.mark.parametrize(
    "args, literal",
    [
        (["run", "lander", "--fault", "t=1,target=body[0],kind=dropout"], "'body[0]'"),
        (["run", "lander", "--set", "altitude_m=[red]x"], "[red]x"),
        (["run", "[red]lander[/red]"], "'[red]lander[/red]'"),
    ],
)
def test_an_error_prints_the_users_text_literally(args, literal):
    refused([literal], *args)


# ----------------------------------------------------------------------------- every parameter
EXTREMES = st.sampled_from([math.nan, math.inf, -math.inf, 1e300, -1e300, 1e-300, -1e-300, 0.0, -1.0, 1e15])
NUMBERS = EXTREMES | st.floats(-3.0, 3.0) | st.floats(allow_nan=True, allow_infinity=True)


def numeric_parameters(name: str) -> list[tuple[str, int]]:
    """(parameter, how many numbers it takes: 0 for a scalar) of every numeric parameter."""
    out = []
    for key, field in get_scenario(name).params.model_fields.items():
        kinds = {get_args(a)[0] if get_origin(a) is Annotated else a for a in get_args(field.annotation)}
        if field.annotation in (float, int) or (float in kinds and type(None) in kinds):
            out.append((key, 0))
        elif isinstance(field.default, tuple) and all(isinstance(v, float) for v in field.default):
            out.append((key, len(field.default)))
    return out


@pytest.mark.parametrize("scenario_name", ["lander", "leader_follower"])
@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_every_declared_parameter_is_refused_by_name_or_runs(scenario_name, data):
    """A value anywhere in the floats (nan, inf, 1e300, negative, tiny) for any numeric parameter:
    the command refuses it naming the parameter, or runs to a finite outcome (or stops at a
    barrier naming the island whose state left the finite numbers)."""
    key, n = data.draw(st.sampled_from(numeric_parameters(scenario_name)))
    values = [data.draw(NUMBERS) for _ in range(max(n, 1))]
    text_value = ",".join(repr(v) for v in values)
    code, text = cli("run", scenario_name, "--duration", "0.5", "--no-progress", "--set", f"{key}={text_value}")
    if code == 2:
        assert key in text or "not finite" in text, text
        return
    outcome = [v for v in text.split("│") if v.strip()]
    assert not any(v.strip() in ("inf", "-inf", "nan") for v in outcome), text
    assert np.isfinite(values).all(), text


@pytest.mark.parametrize(
    "setting",
    [
        "max_thrust_N=1e300",
        "min_thrust_N=1e300",
        "spacing_m=1e300",
        "bandwidth_rad_s=1e300",
        "damping_ratio=1e300",
        "brake_gain_per_s=1e300",
        "position_noise_m=1e300",
        "velocity_noise_mps=1e300",
    ],
)
def test_the_formations_gains_and_limits_have_a_physical_ceiling(setting):
    refused([setting.split("=")[0], "less than or equal to"], "run", "formation", "--set", setting)


def test_a_spheres_beacon_far_beyond_any_test_bed_is_refused_by_name():
    refused(
        ["testbed_overrides.beacon_positions_N", "less than or equal to 10000"],
        *["run", "leader_follower", "--set", "testbed_overrides.beacon_positions_N=[[1e300,0,0]]"],
    )


def test_a_fault_field_given_twice_is_refused():
    fault = "t=1,target=body,kind=thrust_scale,value=0.5,value=0.6"
    refused(["value is given twice"], "run", "lander", "--fault", fault)
    refused(["t_s is given twice"], "run", "lander", "--fault", "t=1,t_s=2,target=body,kind=dropout")
