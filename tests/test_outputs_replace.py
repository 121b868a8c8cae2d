"""An existing output is replaced only by a complete new one, and only with --force: every output
is written under its partial name beside its target (``l.partial-<pid>.mcap``) and renamed over it
when complete. A run that fails leaves the old file byte for byte and its own recording under the
partial name (named in the error); a killed run leaves the old file and a readable partial one."""

import hashlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from hopsim.bus import read_metadata
from hopsim.bus.atomic import partial_path, partials_of, replacing
from hopsim.bus.reading import read_recording
from hopsim.cli import app
from hopsim.scenarios.catalog import get_scenario
from hopsim.scenarios.registry import scenario

ROOT = Path(__file__).resolve().parents[1]
runner = CliRunner()
OLD = b"an earlier output, not to be lost"

_lander = get_scenario("lander")


def _lander_stopped_at_1s(name: str, error: BaseException) -> None:
    """Scenario ``name``: the lander, stopped by ``error`` at 1 s, after it has recorded something
    (a model that fails, a value that passed every check and overflows, a Ctrl-C)."""

    @scenario(name, _lander.params, "the lander, stopped at 1 s", 3.0, _lander.outcome)
    def build(sim, params):
        _lander.build(sim, params)

        def fail(ev):
            raise error

        sim.at(1.0, fail, name="failure")


_lander_stopped_at_1s("lander_failing_at_1s", ValueError("a model failed at 1 s"))
_lander_stopped_at_1s("lander_interrupted_at_1s", KeyboardInterrupt())


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def invoke(*args: str):
    return runner.invoke(app, list(args), env={"COLUMNS": "300"})


def one_line(res) -> str:
    return " ".join(res.output.split())


def old_file(path: Path) -> str:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(OLD)
    return sha256(path)


@pytest.fixture(scope="module")
def recording(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("rec") / "l.mcap"
    res = invoke("run", "lander", "--duration", "2", "--out", str(path), "--no-progress")
    assert res.exit_code == 0, res.output
    return path


# ------------------------------------------------------------------------ the helper


def test_replacing_renames_a_complete_file_and_removes_a_failed_one(tmp_path):
    target = tmp_path / "sub" / "t.csv"
    with pytest.raises(RuntimeError), replacing(target) as tmp:
        assert tmp == partial_path(target) == tmp_path / "sub" / f"t.partial-{os.getpid()}.csv"
        tmp.write_text("half")
        raise RuntimeError("failed while writing")
    assert not target.exists() and list((tmp_path / "sub").iterdir()) == []
    before = old_file(target)
    with pytest.raises(RuntimeError), replacing(target) as tmp:
        tmp.write_text("half")
        raise RuntimeError("failed while writing")
    assert sha256(target) == before and partials_of(target) == []
    with replacing(target) as tmp:
        tmp.write_text("new")
    assert target.read_text() == "new" and partials_of(target) == []


# ------------------------------------------------------------------------ recordings


def test_a_run_that_fails_with_force_leaves_the_old_recording_and_says_where_its_own_is(tmp_path):
    out = tmp_path / "l.mcap"
    before = old_file(out)
    res = invoke("run", "lander_failing_at_1s", "--out", str(out), "--force", "--no-progress")
    text = one_line(res)
    assert res.exit_code == 2 and "a model failed at 1 s" in text and "Traceback" not in res.output, text
    assert sha256(out) == before
    (partial,) = partials_of(out)
    assert partial == partial_path(out) and f"the run's recording up to where it stopped: {partial}" in text
    assert "left as it was" in text
    envelopes, report = read_recording(partial)
    assert report.messages == len(envelopes) > 0
    assert read_metadata(partial)["hopsim.result"]["stop_reason"] == "crashed: ValueError: a model failed at 1 s"


def test_an_interrupted_run_leaves_the_old_recording_and_says_where_its_own_is(tmp_path):
    out = tmp_path / "l.mcap"
    before = old_file(out)
    res = invoke("run", "lander_interrupted_at_1s", "--out", str(out), "--force", "--no-progress")
    text = one_line(res)
    assert res.exit_code == 130 and text.startswith("interrupted; the run's recording up to where it stopped:"), text
    assert sha256(out) == before
    (partial,) = partials_of(out)
    assert str(partial) in text and read_recording(partial)[1].messages > 0
    assert read_metadata(partial)["hopsim.result"]["stop_reason"] == "crashed: KeyboardInterrupt: "


@pytest.mark.parametrize(
    "extra",
    [["--duration", "1e300"], ["--set", "altimeter_rate_hz=1e-300"]],
    ids=["duration", "rate"],
)
def test_a_run_that_fails_on_a_value_that_passed_its_checks_leaves_the_old_recording(tmp_path, extra):
    """Whether refused as a bad value or failing as the run starts, the old file stays, and a run
    that wrote nothing leaves nothing."""
    out = tmp_path / "l.mcap"
    before = old_file(out)
    res = invoke("run", "lander", "--out", str(out), "--force", "--no-progress", *extra)
    assert res.exit_code != 0
    assert sha256(out) == before and partials_of(out) == []


def test_a_run_that_ends_well_replaces_the_recording_with_force_only(tmp_path):
    out = tmp_path / "l.mcap"
    before = old_file(out)
    res = invoke("run", "lander", "--duration", "1", "--out", str(out), "--no-progress")
    assert res.exit_code == 2 and f"{out} exists: give --force to replace it, or another --out" in one_line(res)
    assert sha256(out) == before
    res = invoke("run", "lander", "--duration", "1", "--out", str(out), "--force", "--no-progress")
    assert res.exit_code == 0, res.output
    assert read_recording(out)[1].complete and partials_of(out) == []


def test_a_killed_run_leaves_the_old_recording_and_a_readable_partial_one(tmp_path):
    out = tmp_path / "f.mcap"
    before = old_file(out)
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "hopsim.cli",
            "run",
            "formation",
            "--set",
            "n_vehicles=2",
            "--duration",
            "100000",
            "--out",
            str(out),
            "--force",
            "--no-progress",
        ],
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    partial = partial_path(out, proc.pid)
    try:
        deadline = time.monotonic() + 90
        while not (partial.exists() and partial.stat().st_size >= 20_000):
            assert proc.poll() is None, proc.stderr.read().decode()
            assert time.monotonic() < deadline, "the run wrote nothing in 90 s"
            time.sleep(0.05)
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
    assert sha256(out) == before
    envelopes, report = read_recording(partial)
    assert not report.complete and report.messages == len(envelopes) > 0
    res = invoke("inspect", str(partial))  # hopsim reads it as it is
    assert res.exit_code == 1 and "formation" in res.output


# ------------------------------------------------------------------------ refusals


def test_every_output_is_refused_without_force_in_one_line(tmp_path, recording):
    """Each command's output: refused (exit 2, one line naming the file and the fix, no
    traceback) when it exists and --force is not given; the file is left as it was."""
    target = tmp_path / "old.out"
    cases = [
        (["run", "lander", "--out", "{}"], "--out"),
        (["resume", str(tmp_path / "x.ckpt"), "--out", "{}"], "--out"),
        (["replay", str(recording), "--out", "{}"], "--out"),
        (["montecarlo", "rerun", str(tmp_path), "--run", "0", "--out", "{}"], "--out"),
        (["plot", str(recording), "lander/altitude.value", "--out", "{}"], "--out"),
        (["plot", str(recording), "lander/altitude.value", "--out", str(tmp_path / "p.png"), "--csv", "{}"], "--csv"),
        (["campaign", "lander", "--fault", "t=1,target=altimeter,kind=dropout", "--table", "{}"], "--table"),
        (["linearize", "lander", "--at", "1", "--states", "body.*", "--out", "{}"], "--out"),
        (["layout", "lander", "--out", "{}"], "--out"),
        (["layout", str(recording), "--out", "{}"], "--out"),
    ]
    for command, option in cases:
        before = old_file(target)
        res = invoke(*[str(target) if a == "{}" else a for a in command])
        text = one_line(res)
        assert res.exit_code == 2, (command, text)
        assert f"error: {target} exists: give --force to replace it, or another {option}" in text, (command, text)
        assert "Traceback" not in res.output and len(res.output.strip().splitlines()) == 1, res.output
        assert sha256(target) == before and not (tmp_path / "p.png").exists()


def test_run_with_layout_refuses_an_existing_layout(tmp_path):
    out = tmp_path / "l.mcap"
    layout = tmp_path / "l.layout.json"
    before = old_file(layout)
    res = invoke("run", "lander", "--duration", "1", "--out", str(out), "--layout", "--no-progress")
    assert res.exit_code == 2 and f"{layout} exists: give --force" in one_line(res)
    assert sha256(layout) == before and not out.exists()


def test_plot_and_its_columns_replace_with_force_and_a_failed_plot_leaves_them(tmp_path, recording):
    png, csv = tmp_path / "p.png", tmp_path / "p.csv"
    before_png, before_csv = old_file(png), old_file(csv)
    res = invoke("plot", str(recording), "no/such.signal", "--out", str(png), "--csv", str(csv), "--force")
    assert res.exit_code == 2 and "Traceback" not in res.output
    assert (sha256(png), sha256(csv)) == (before_png, before_csv)
    res = invoke("plot", str(recording), "lander/altitude.value", "--out", str(png), "--csv", str(csv), "--force")
    assert res.exit_code == 0, res.output
    assert png.read_bytes().startswith(b"\x89PNG") and csv.read_text().startswith("signal,t_s,value")
    assert partials_of(png) == partials_of(csv) == []


def test_a_campaign_table_is_replaced_with_force(tmp_path):
    table = tmp_path / "c.csv"
    old_file(table)
    res = invoke(
        "campaign",
        "lander",
        "--fault",
        "t=0.5,target=altimeter,kind=dropout",
        "--duration",
        "1",
        "--table",
        str(table),
        "--force",
    )
    assert res.exit_code == 0, res.output
    assert table.read_text().startswith("run,") and partials_of(table) == []


# ------------------------------------------------------------------------ Monte Carlo directories


def montecarlo(directory: Path, *extra: str, scenario_name: str = "lander", runs: str = "1"):
    return invoke(
        "montecarlo", "run", scenario_name, "--runs", runs, "--duration", "1", "--dir", str(directory), *extra
    )


def test_a_campaign_directory_resumes_without_force_and_another_is_replaced_with_it_only(tmp_path):
    directory = tmp_path / "mc"
    assert montecarlo(directory).exit_code == 0
    table = (directory / "results.csv").read_bytes()
    res = montecarlo(directory)  # the same campaign: a resume (nothing left to run), no --force needed
    assert res.exit_code == 0 and (directory / "results.csv").read_bytes() == table
    files = {p: sha256(p) for p in directory.rglob("*") if p.is_file()}
    res = montecarlo(directory, "--seed", "5")  # another campaign
    text = one_line(res)
    assert res.exit_code == 2 and "Traceback" not in res.output, text
    assert f"{directory} holds another campaign (campaign.json differs)" in text and "give --force" in text
    assert {p: sha256(p) for p in directory.rglob("*") if p.is_file()} == files
    res = montecarlo(directory, "--seed", "5", "--force")
    assert res.exit_code == 0, res.output
    assert '"seed": 5' in (directory / "campaign.json").read_text()
    assert len((directory / "runs.jsonl").read_text().splitlines()) == 1  # the other campaign's rows are gone


def test_a_directory_with_a_campaigns_files_but_no_campaign_is_refused_without_force(tmp_path):
    directory = tmp_path / "mc"
    before = old_file(directory / "results.csv")
    res = montecarlo(directory)
    assert res.exit_code == 2 and "holds a campaign's files (results.csv) but no campaign.json" in one_line(res)
    assert sha256(directory / "results.csv") == before
    res = montecarlo(directory, "--force")
    assert res.exit_code == 0 and (directory / "results.csv").read_text().startswith("run,seed,status")


def test_a_failed_run_retained_by_a_campaign_keeps_its_recording(tmp_path):
    """A campaign keeps its failed runs' recordings (they end with the error): the complete record
    of the run asked for."""
    directory = tmp_path / "mc"
    res = montecarlo(directory, scenario_name="lander_failing_at_1s")
    assert res.exit_code == 0, res.output
    kept = directory / "recordings" / "run_000000.mcap"
    assert read_metadata(kept)["hopsim.result"]["stop_reason"].startswith("crashed: ValueError")
    assert sorted(p.name for p in (directory / "recordings").iterdir()) == ["run_000000.mcap"]


# ------------------------------------------------------------------------ following a run


def test_view_follow_reads_the_partial_file_then_the_file_it_becomes(tmp_path, recording):
    from hopsim.cli import _being_written
    from hopsim.view.server import RunView

    out = tmp_path / "l.mcap"
    partial = partial_path(out, 4242)
    partial.write_bytes(recording.read_bytes())
    assert _being_written(out) == partial
    view = RunView(partial, follow=True, then=out)
    os.replace(partial, out)  # the run ends well
    view.refresh()
    assert view.path == out and view.run()["file"] == "l.mcap"
    assert _being_written(out) is None


# ------------------------------------------------------------------------ help


def test_force_is_a_plain_flag_and_every_command_takes_dash_h():
    group = typer.main.get_command(app)

    def commands(cmd, path):
        yield path
        for name, sub in getattr(cmd, "commands", {}).items():
            yield from commands(sub, [*path, name])

    for path in commands(group, []):
        short, long = invoke(*path, "-h"), invoke(*path, "--help")
        assert short.exit_code == long.exit_code == 0 and short.output == long.output, path
        for line in short.output.splitlines():
            if "--force" in line:
                assert "<bool>" not in line, (path, line)


@pytest.mark.parametrize(
    "args, words",
    [
        (["run", "lander", "--duration", "1", "--out", "/proc/x.mcap"], "cannot write /proc/x.mcap"),
        (["run", "lander", "--duration", "1", "--checkpoint-every", "1", "--checkpoint-dir", "FILE"], "is a file"),
        (["montecarlo", "run", "deep.toml", "--dir", "mc"], "nests arrays or tables too deep"),
    ],
    ids=["unwritable --out", "--checkpoint-dir a file", "campaign file nested 5000 deep"],
)
def test_an_output_that_cannot_be_written_or_a_campaign_too_deep_is_an_error_before_the_run(tmp_path, args, words):
    (tmp_path / "FILE").write_text("not a directory")
    (tmp_path / "deep.toml").write_text('scenario = "lander"\na = ' + "[" * 5000 + "]" * 5000 + "\n")
    args = [str(tmp_path / a) if a in ("FILE", "deep.toml", "mc") else a for a in args]
    done = runner.invoke(app, args)
    assert done.exit_code == 2 and words in " ".join(done.output.split()), done.output
    assert "Traceback" not in done.output and not (tmp_path / "mc").exists()


def test_an_output_in_a_directory_not_made_yet_is_written_there(tmp_path):
    out = tmp_path / "new" / "dir" / "l.mcap"
    done = runner.invoke(app, ["run", "lander", "--duration", "1", "--out", str(out), "--no-progress"])
    assert done.exit_code == 0 and read_recording(out)[1].complete, done.output


@pytest.mark.parametrize(
    "args",
    [
        ["run", "lander", "--duration", "1", "--out", "DIR", "--force"],
        ["replay", "rec.mcap", "--out", "DIR", "--force"],
        ["plot", "rec.mcap", "x/y.z", "--out", "DIR.png", "--force"],
        ["plot", "rec.mcap", "x/y.z", "--csv", "DIR", "--force"],
        ["campaign", "lander", "--fault", "t=1,target=body,kind=thrust_scale,value=0", "--table", "DIR", "--force"],
    ],
    ids=["run --out", "replay --out", "plot --out", "plot --csv", "campaign --table"],
)
def test_an_output_named_like_a_directory_is_refused_before_anything_runs(tmp_path, args):
    (tmp_path / "DIR").mkdir()
    (tmp_path / "DIR.png").mkdir()
    (tmp_path / "rec.mcap").write_bytes(OLD)
    args = [str(tmp_path / a) if a in ("DIR", "DIR.png", "rec.mcap") else a for a in args]
    res = invoke(*args)
    assert res.exit_code == 2 and "is a directory: give" in one_line(res), one_line(res)
    assert "Traceback" not in res.output and (tmp_path / "DIR").is_dir() and not list((tmp_path / "DIR").iterdir())


def test_an_output_that_cannot_take_its_name_is_an_error_naming_it_and_the_file_kept(tmp_path):
    """The target became a directory while the run ran (a checkpoint's name, here): one line
    naming the file and the reason, and what was written kept under its partial name."""
    ck = tmp_path / "ck"
    (ck / "lander_t00000001.000000000.ckpt").mkdir(parents=True)  # the first checkpoint's name
    out = tmp_path / "l.mcap"
    res = invoke(
        *["run", "lander", "--duration", "2", "--checkpoint-every", "1", "--checkpoint-dir", str(ck)],
        *["--out", str(out), "--no-progress"],
    )
    text = one_line(res)
    assert res.exit_code == 2 and text.count("error:") == 1 and "Traceback" not in res.output, text
    assert "cannot write" in text and "lander_t00000001.000000000.ckpt (Is a directory)" in text, text
    kept = [p for p in ck.iterdir() if ".partial-" in p.name]
    assert len(kept) == 1 and str(kept[0]) in text and kept[0].stat().st_size > 0
    recorded = partials_of(out)
    assert len(recorded) == 1 and str(recorded[0]) in text  # the run's recording up to there


def test_a_complete_output_that_cannot_be_renamed_is_kept_and_named(tmp_path):
    from hopsim.bus.atomic import OutputError

    target = tmp_path / "t.csv"
    target.mkdir()
    refused = pytest.raises(OutputError, match=r"cannot write .*t\.csv \(Is a directory\); what was written is kept at")
    with refused, replacing(target) as tmp:
        tmp.write_text("a,b\n")
    assert partial_path(target).read_text() == "a,b\n"
