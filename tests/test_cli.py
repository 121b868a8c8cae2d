"""The hopsim command: list, run, record; errors name the problem and the valid choices."""

import pytest
from typer.testing import CliRunner

from hopsim.bus import read_metadata
from hopsim.cli import app

runner = CliRunner()


def test_scenarios_lists_the_lander():
    res = runner.invoke(app, ["scenarios"])
    assert res.exit_code == 0 and "lander" in res.output
    assert "altitude_m" in runner.invoke(app, ["scenarios", "lander"]).output


def test_run_records_and_says_where(tmp_path):
    out = tmp_path / "x.mcap"
    res = runner.invoke(
        app,
        [
            "run",
            "lander",
            "--duration",
            "3",
            "--seed",
            "2",
            "--set",
            "altitude_m=40",
            "--out",
            str(out),
            "--no-progress",
        ],
    )
    assert res.exit_code == 0, res.output
    assert str(out.resolve()) in res.output.replace("\n", "")
    meta = read_metadata(out)["hopsim.run"]
    assert meta["seed"] == "2" and '"altitude_m":40.0' in meta["parameters_json"]


def test_a_run_of_many_islands_is_summed_up_in_one_line():
    """20 vehicles at 1 Hz for 3 s: every island has barriers at 0, 1, 2 and 3 s and 3 hops, the
    last three as members of the 1 Hz rate group (the first is each island's own start)."""
    res = runner.invoke(
        app, ["run", "formation", "--duration", "3", "--set", "n_vehicles=20", "--no-progress", "--stats"]
    )
    assert res.exit_code == 0, res.output
    text = " ".join(res.output.split())
    assert "island v00:" not in text
    assert "20 islands: 4 barriers each, 60 hops" in text
    assert "rate group (1 s period, phase 0 s): 3 instants, 60 member barriers, 20 joins, 20 leaves" in text
    res = runner.invoke(
        app,
        [
            "run",
            "formation",
            "--duration",
            "3",
            "--set",
            "n_vehicles=20",
            "--no-progress",
            "--stats",
            "--no-rate-groups",
        ],
    )
    text = " ".join(res.output.split())
    assert res.exit_code == 0 and "20 islands: 4 barriers each, 60 hops" in text and "rate group" not in text


def test_unknown_scenario_and_bad_parameter_are_clear_errors():
    res = runner.invoke(app, ["run", "landr", "--no-progress"])
    assert res.exit_code == 2 and "unknown scenario 'landr'" in res.output and "lander" in res.output
    res = runner.invoke(app, ["run", "lander", "--set", "mass=3", "--no-progress"])
    assert res.exit_code == 2 and "no parameter 'mass'" in res.output and "mass_kg" in res.output
    res = runner.invoke(app, ["run", "lander", "--set", "mass_kg=-1", "--no-progress"])
    assert res.exit_code == 2 and "mass_kg" in res.output and "greater than or equal to 0.01" in res.output
    res = runner.invoke(app, ["run", "lander", "--set", "oops", "--no-progress"])
    assert res.exit_code != 0 and "key=value" in res.output


def test_version_is_the_installed_packages():
    from importlib.metadata import version

    res = runner.invoke(app, ["--version"])
    assert res.exit_code == 0 and res.output.strip() == f"hopsim {version('hopsim')}"


def test_scenarios_fit_a_terminal_and_one_scenario_shows_every_parameter():
    res = runner.invoke(app, ["scenarios"], env={"COLUMNS": "80"})  # an 80-column terminal's
    assert res.exit_code == 0 and max(len(line) for line in res.output.splitlines()) <= 80
    res = runner.invoke(app, ["scenarios", "lander"], env={"COLUMNS": "200"})
    text = res.output
    assert res.exit_code == 0 and "PydanticUndefined" not in text
    row = next(line for line in text.splitlines() if "altitude_m" in line)
    assert "float" in row and " m " in row and "100.0" in row and "initial height above ground" in row
    res = runner.invoke(app, ["scenarios", "landr"])
    assert res.exit_code == 2 and "lander" in res.output


def test_faults_lists_targets_kinds_and_the_fields_they_read():
    res = runner.invoke(app, ["faults", "lander"], env={"COLUMNS": "200"})
    rows = [line for line in res.output.splitlines() if "disturbance" in line and "body" in line]
    assert res.exit_code == 0 and rows and "force_N" in rows[0] and "duration_s" in rows[0]


def test_vector_parameters_from_the_command_line(tmp_path):
    import json

    for i, text in enumerate(("0,0.3,0.1", "[0,0.3,0.1]")):
        out = tmp_path / f"boom{i}.mcap"
        res = runner.invoke(
            app,
            [
                "run",
                "deploy_boom",
                "--duration",
                "1",
                "--set",
                f"boom_offset_m={text}",
                "--out",
                str(out),
                "--no-progress",
            ],
        )
        assert res.exit_code == 0, res.output
        params = json.loads(read_metadata(out)["hopsim.run"]["parameters_json"])
        assert params["boom_offset_m"] == [0.0, 0.3, 0.1]


def test_every_fault_field_reaches_the_model_and_an_ignored_one_is_an_error(tmp_path):
    from hopsim.bus.compare import decode_payload
    from hopsim.bus.reading import read_recording

    out = tmp_path / "f.mcap"
    res = runner.invoke(
        app,
        [
            "run",
            "lander",
            "--duration",
            "4",
            "--out",
            str(out),
            "--no-progress",
            "--fault",
            "t=1,target=body,kind=disturbance,force=[0,0,5.5],duration=2",
        ],
    )
    assert res.exit_code == 0, res.output
    envs, _ = read_recording(out)
    fault = next(decode_payload(e) for e in envs if e.topic == "faults/body")
    assert (fault.force_N.z, fault.duration_s, fault.kind) == (5.5, 2.0, "disturbance")
    for extra, word in (
        ("value=3", "ignores value"),
        ("torque=[1,0,0]", "ignores torque_B"),
        ("colour=red", "no field 'colour'"),
    ):
        res = runner.invoke(
            app,
            [
                "run",
                "lander",
                "--duration",
                "4",
                "--no-progress",
                "--fault",
                f"t=1,target=body,kind=disturbance,force=[0,0,1],{extra}",
            ],
        )
        assert res.exit_code == 2 and word in " ".join(res.output.split()), res.output
    res = runner.invoke(
        app,
        ["run", "lander", "--duration", "4", "--no-progress", "--fault", "t=9,target=body,kind=thrust_scale,value=0"],
    )
    assert res.exit_code == 2 and "after the run's end" in res.output


def test_the_run_ends_with_its_outcome_a_dead_engine_falls_as_kepler_would_have_it(tmp_path):
    """thrust_scale 0 from t = 0: free fall from 100 m at 1.62 m/s^2 lands after sqrt(2h/g) at sqrt(2gh)."""
    import json
    import math

    out = tmp_path / "fall.mcap"
    res = runner.invoke(
        app,
        [
            "run",
            "lander",
            "--set",
            "altitude_m=100",
            "--set",
            "stop_on_touchdown=true",
            "--fault",
            "t=0,target=body,kind=thrust_scale,value=0",
            "--out",
            str(out),
            "--no-progress",
        ],
        env={"COLUMNS": "200"},
    )
    assert res.exit_code == 0, res.output
    outcome = json.loads(read_metadata(out)["hopsim.result"]["outcome_json"])
    assert outcome["touchdown_s"] == pytest.approx(math.sqrt(2 * 100 / 1.62), abs=2e-6)
    assert outcome["touchdown_speed_mps"] == pytest.approx(math.sqrt(2 * 1.62 * 100), rel=1e-6)
    assert "touchdown_speed_mps" in res.output and f"{outcome['touchdown_speed_mps']:.6g}" in res.output
    assert "island lander:" not in res.output  # kernel statistics only with --stats


def test_replay_out_records_the_replayed_run(tmp_path):
    src, again = tmp_path / "a.mcap", tmp_path / "b.mcap"
    assert runner.invoke(app, ["run", "lander", "--duration", "5", "--out", str(src), "--no-progress"]).exit_code == 0
    res = runner.invoke(app, ["replay", str(src), "--out", str(again)])
    assert res.exit_code == 0 and "identical" in res.output and again.exists()
    res = runner.invoke(app, ["replay", str(src), "--set", "control_gain=0.5", "--out", str(again), "--force"])
    assert res.exit_code == 1 and "diverged" in res.output
    assert read_metadata(again)["hopsim.run"]["parameters_json"].count('"control_gain":0.5') == 1


def test_resume_reports_the_part_it_ran_and_every_kind_of_recording_replays_identical(tmp_path):
    full, rest = tmp_path / "full.mcap", tmp_path / "rest.mcap"
    res = runner.invoke(
        app,
        [
            "run",
            "lander",
            "--duration",
            "20",
            "--checkpoint-every",
            "15",
            "--out",
            str(full),
            "--checkpoint-dir",
            str(tmp_path),
            "--no-progress",
        ],
    )
    assert res.exit_code == 0
    ckpt = next(tmp_path.glob("lander_t00000015.000000000.ckpt"))
    res = runner.invoke(app, ["resume", str(ckpt), "--out", str(rest), "--no-progress"])
    assert res.exit_code == 0 and "5 s simulated (from the checkpoint at 15 s)" in " ".join(res.output.split())
    res = runner.invoke(app, ["replay", str(full)])  # checkpointed
    assert res.exit_code == 0 and "identical" in res.output, res.output
    res = runner.invoke(app, ["replay", str(rest), "--checkpoint", str(ckpt)])  # resumed, from the user's file
    assert res.exit_code == 0 and "identical" in res.output, res.output
    # without --checkpoint: refused, naming the option and the recorded file's base name only
    res = runner.invoke(app, ["replay", str(rest)])
    text = " ".join(res.output.split())
    assert res.exit_code == 2 and "is a resumed run: replay it with --checkpoint" in text, text
    assert f"(recorded as '{ckpt.name}')" in text and "Traceback" not in res.output
    assert res.exception is None or isinstance(res.exception, SystemExit)
    res = runner.invoke(app, ["replay", str(full), "--checkpoint", str(ckpt)])
    assert res.exit_code == 2 and "is not a resumed run" in " ".join(res.output.split())
    res = runner.invoke(app, ["replay", str(rest), "--checkpoint", str(tmp_path / "none.ckpt")])
    assert res.exit_code == 2 and "none.ckpt: no such file" in " ".join(res.output.split())
    ckpt.write_bytes(ckpt.read_bytes() + b"x")
    res = runner.invoke(app, ["replay", str(rest), "--checkpoint", str(ckpt)])
    text = " ".join(res.output.split())
    assert res.exit_code == 2 and "is not the checkpoint" in text and "SHA-256 differs" in text, text


def test_an_empty_file_is_reported_as_empty(tmp_path):
    empty = tmp_path / "empty.mcap"
    empty.write_bytes(b"")
    res = runner.invoke(app, ["inspect", str(empty)])
    text = " ".join(res.output.split())
    assert res.exit_code == 1 and "empty (0 bytes)" in text and "interrupted" not in text


def test_out_is_left_alone_when_the_run_is_refused(tmp_path):
    out = tmp_path / "keep.mcap"
    out.write_bytes(b"an earlier recording")
    for extra in (
        ["--set", "mass_kg=-1"],
        ["--fault", "t=1,target=nobody,kind=dropout"],
        ["--fault", "t=1,target=altimeter,kind=dropout,value=3"],
    ):
        res = runner.invoke(
            app, ["run", "lander", "--duration", "2", "--out", str(out), "--force", "--no-progress", *extra]
        )
        assert res.exit_code == 2, res.output
        assert out.read_bytes() == b"an earlier recording"


def test_an_existing_recording_is_replaced_only_with_force(tmp_path):
    out = tmp_path / "keep.mcap"
    out.write_bytes(b"an earlier recording")
    for command in (
        ["run", "lander", "--duration", "1"],
        ["replay", str(tmp_path / "other.mcap")],
        ["resume", str(tmp_path / "x.ckpt")],
        ["montecarlo", "rerun", str(tmp_path), "--run", "0"],
    ):
        res = runner.invoke(app, [*command, "--out", str(out)])
        assert res.exit_code == 2 and "exists: give --force to replace it" in " ".join(res.output.split()), res.output
        assert out.read_bytes() == b"an earlier recording"
    res = runner.invoke(app, ["run", "lander", "--duration", "1", "--out", str(out), "--force", "--no-progress"])
    assert res.exit_code == 0, res.output
    assert read_metadata(out)["hopsim.run"]["scenario"] == "lander"
    res = runner.invoke(app, ["replay", str(out), "--out", str(out), "--force"])
    assert res.exit_code == 2 and "is the recording being replayed" in " ".join(res.output.split())
    assert read_metadata(out)["hopsim.run"]["scenario"] == "lander"


@pytest.mark.ray
@pytest.mark.long  # make test-long; make test runs every documented command on Ray for the same (test_readme)
def test_a_ray_run_prints_no_banner_warning_or_traceback(tmp_path):
    """As a user sees it: a subprocess, Ray's token authentication left as Ray sets it."""
    import os
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if not k.startswith("RAY_")}
    done = subprocess.run(
        [sys.executable, "-m", "hopsim.cli", "run", "lander", "--duration", "2", "--backend", "ray", "--no-progress"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    lines = (done.stdout + done.stderr).splitlines()
    noisy = [
        line
        for line in lines
        if any(
            w in line
            for w in ("Traceback", "Warning", "WARNING", "warnings.warn", "Token authentication", ".py:", "(raylet)")
        )
    ]
    assert not noisy and lines[0].startswith("lander: 2 s simulated"), lines


def test_every_parameter_of_every_scenario_says_what_it_is():
    from hopsim.scenarios import all_scenarios

    builtin = [spec for spec in all_scenarios() if spec.build.__module__.startswith("hopsim.")]
    assert {"lander", "formation", "leader_follower"} <= {spec.name for spec in builtin}
    missing = [
        f"{spec.name}.{key}"
        for spec in builtin
        for key, field in spec.params.model_fields.items()
        if not field.description
    ]
    assert not missing, missing


def test_linearize_prints_the_matrices_and_writes_them(tmp_path):
    import numpy as np

    res = runner.invoke(
        app,
        [
            "linearize",
            "leader_follower",
            "--at",
            "20",
            "--states",
            "sph1.v_x,sph1.omega_z",
            "--inputs",
            "sph1.disturbance_torque_B[2],sph1.disturbance_force_N[0]",
            "--outputs",
            "sph1.state.omega_BN_B.z",
            "--fault",
            "t=1,target=sph1,kind=disturbance",
            "--out",
            str(tmp_path / "lin.npz"),
        ],
    )
    assert res.exit_code == 0, res.output
    saved = np.load(tmp_path / "lin.npz")
    assert saved["states"].tolist() == ["sph1.v_x", "sph1.omega_z"] and str(saved["scheme"]) == "central2"
    assert saved["B"][1, 0] == pytest.approx(1 / 0.0190, rel=1e-7)  # 1 / Izz, the seed's Table 2.1
    assert saved["C"].tolist() == [[0.0, 1.0]]
    assert "no effect" not in res.output
    quiet = runner.invoke(
        app,
        [
            "linearize",
            "leader_follower",
            "--at",
            "5",
            "--states",
            "sph1.v_x",
            "--inputs",
            "sph1.disturbance_force_N[0]",
        ],
    )
    assert quiet.exit_code == 0 and "sph1.disturbance_force_N[0] has no effect" in " ".join(quiet.output.split())
    bad = runner.invoke(app, ["linearize", "leader_follower", "--at", "5", "--states", "sph1.vx"])
    assert bad.exit_code == 2 and "continuous states r_x" in bad.output


def test_campaign_is_a_monte_carlo_campaign_over_the_fault_list(tmp_path):
    import csv

    res = runner.invoke(
        app,
        [
            "campaign",
            "lander",
            "--fault",
            "t=5,target=body,kind=thrust_scale,value=0.5",
            "--duration",
            "20",
            "--seed",
            "4",
            "--dir",
            str(tmp_path / "c"),
            "--table",
            str(tmp_path / "t.csv"),
        ],
    )
    assert res.exit_code == 0, res.output
    with open(tmp_path / "c" / "results.csv") as f:
        rows = list(csv.DictReader(f))
    # half the thrust: the lander crashes, which its success criterion counts as a failed run
    assert [r["seed"] for r in rows] == ["4", "4"] and [r["status"] for r in rows] == ["ok", "unsuccessful"]
    assert rows[1]["error"].startswith("crashed: touchdown at")
    assert rows[0]["stream_sha256"] != rows[1]["stream_sha256"]
    table = (tmp_path / "t.csv").read_text().splitlines()
    assert table[1].startswith("baseline,") and table[2].startswith("body thrust_scale 0.5 @ 5 s,")


def _command_paths(group, prefix=()):
    """Every command of the hopsim command, as the words that name it (groups included)."""
    yield prefix
    for name, command in getattr(group, "commands", {}).items():
        yield from _command_paths(command, (*prefix, name))


def test_every_help_shows_flags_as_flags_and_takes_dash_h():
    import typer.main

    paths = list(_command_paths(typer.main.get_command(app)))
    assert ("run",) in paths and ("montecarlo", "run") in paths
    for path in paths:
        short, long = runner.invoke(app, [*path, "-h"]), runner.invoke(app, [*path, "--help"])
        assert short.exit_code == 0 and short.output == long.output, path
        assert "<bool>" not in short.output, path
    run_help = runner.invoke(app, ["run", "-h"]).output
    assert "--force " in run_help and "--no-rate-groups" in run_help


def test_piped_help_and_tables_keep_names_whole():
    """Written to a pipe, help and tables are laid out wide: no option or parameter name is cut
    (rich lays out 80 columns by default where there is no terminal)."""
    import os
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "TERMINAL_WIDTH", "LINES")}

    def piped(*args):
        done = subprocess.run(
            [sys.executable, "-c", "from hopsim.cli import main; main()", *args],
            capture_output=True,
            text=True,
            env=env,
            timeout=60,
        )
        assert done.returncode == 0, done.stderr
        return done.stdout

    run_help = piped("run", "--help")
    for name in ("--checkpoint-every", "--checkpoint-dir", "--no-rate-groups", "--kernel-events", "--live-token"):
        assert name in run_help
    assert "t=S,target=MODEL,kind=KIND[,index=I,value=V,duration=S]" in run_help
    assert "<bool>" not in run_help and "…" not in run_help
    lander = piped("scenarios", "lander")
    for name in ("stop_on_touchdown", "vertical_speed_mps", "altimeter_noise_m", "telemetry_rate_hz"):
        assert name in lander


@pytest.mark.parametrize(
    "name, unit",
    [
        ("bandwidth_rad_s", "rad/s"),
        ("spin_rad_s", "rad/s"),
        ("brake_gain_per_s", "1/s"),
        ("cd_area_m2", "m^2"),
        ("density_kgpm3", "kg/m^3"),
        ("accel_max_mps2", "m/s^2"),
        ("hub_inertia_kgm2", "kg m^2"),
        ("radius_m", "m"),
        ("isp_s", "s"),
        ("n_vehicles", ""),
    ],
)
def test_a_parameters_unit_is_read_whole_from_its_name(name, unit):
    """The longest unit suffix wins: a rate in rad/s is not a time in s, an area not a length."""
    from hopsim.cli import unit_of

    assert unit_of(name) == unit
