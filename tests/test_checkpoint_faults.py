"""Checkpoints resume to the same stream; faults change a run as they should and replay with it."""

import pytest

from hopsim.kernel.checkpoint import CheckpointError, load
from hopsim.scenarios import ScenarioError
from hopsim.scenarios.registry import FaultSpec
from hopsim.scenarios.replay import replay_recording
from hopsim.scenarios.runner import resume_run, run_scenario

S = 1_000_000_000


@pytest.mark.parametrize("at_s", [8.0, 16.0, 24.0])
def test_resumed_stream_equals_the_uninterrupted_one(tmp_path, at_s):
    faults = [FaultSpec(t_s=20.0, target="altimeter", kind="sensor_bias", value=0.4).model_dump()]
    full = run_scenario(
        "lander",
        {"faults": faults, "stop_on_touchdown": False},
        seed=9,
        duration_s=40.0,
        keep_stream=True,
        checkpoint_every_s=8.0,
        checkpoint_dir=tmp_path,
    )
    ckpt = tmp_path / f"lander_t{int(at_s):08d}.000000000.ckpt"
    resumed = resume_run(ckpt, keep_stream=True)
    after = [e.to_bytes() for e in full.recorder.envelopes if e.t_ns > at_s * S]
    assert len(after) > 100 and resumed.recorder.stream_bytes() == after
    assert resumed.sim.model("body").x.tolist() == full.sim.model("body").x.tolist()


def test_checkpoint_errors_are_clear(tmp_path):
    with pytest.raises(CheckpointError, match="no checkpoint file"):
        load(tmp_path / "missing.ckpt")
    junk = tmp_path / "junk.ckpt"
    junk.write_bytes(b"not a checkpoint")
    with pytest.raises(CheckpointError, match="not a readable hopsim checkpoint"):
        load(junk)


def run_with(faults, seconds=30.0, **extra):
    specs = [FaultSpec(**f).model_dump() for f in faults]
    return run_scenario("lander", {"faults": specs, **extra}, seed=3, duration_s=seconds, keep_stream=True)


def outputs(result, topic):
    return [(e.t_ns, e.payload) for e in result.recorder.envelopes if e.topic == topic]


def test_dropout_yields_no_samples_until_cleared():
    r = run_with(
        [
            {"t_s": 5.0, "target": "altimeter", "kind": "dropout"},
            {"t_s": 8.0, "target": "altimeter", "kind": "dropout", "clear": True},
        ]
    )
    times = [t for t, _ in outputs(r, "lander/altitude")]
    assert not any(5 * S <= t < 8 * S for t in times)
    assert any(t < 5 * S for t in times) and any(t >= 8 * S for t in times)


def test_sensor_bias_shifts_the_measurement_by_its_value():
    clean = outputs(run_with([]), "lander/altitude")
    biased = outputs(
        run_with([{"t_s": 4.0, "target": "altimeter", "kind": "sensor_bias", "value": 2.5}], seconds=4.5),
        "lander/altitude",
    )
    # up to the first sample after the fault the runs are identical; that sample is +2.5 m
    first_after = next(i for i, (t, _) in enumerate(biased) if t > 4 * S)
    assert biased[:first_after] == clean[:first_after]
    assert biased[first_after][1].value - clean[first_after][1].value == pytest.approx(2.5, abs=1e-9)


def test_zero_thrust_scale_is_a_dead_engine_in_free_fall():
    r = run_with([{"t_s": 0.0, "target": "body", "kind": "thrust_scale", "value": 0.0}], seconds=6.0, altitude_m=1000.0)
    h = [p.r_BN_N.z for _, p in outputs(r, "lander/state")]
    assert h[-1] == pytest.approx(1000.0 - 0.5 * 1.62 * 36.0, abs=1e-9)


def test_disturbance_force_acts_for_its_duration_only():
    r = run_with(
        [
            {"t_s": 0.0, "target": "body", "kind": "thrust_scale", "value": 0.0},
            {"t_s": 1.0, "target": "body", "kind": "disturbance", "force_N": (0, 0, 50.0), "duration_s": 2.013},
        ],
        seconds=5.0,
        altitude_m=1000.0,
    )
    v = {t: p.v_BN_N.z for t, p in outputs(r, "lander/state")}
    # the end (3.013 s) is off the 20 Hz grid: it is a barrier of its own, so the impulse is exact
    assert v[5 * S] == pytest.approx(-1.62 * 5.0 + 50.0 / 50.0 * 2.013, abs=1e-9)


def test_faults_are_recorded_and_replay_reproduces_them(tmp_path):
    path = tmp_path / "f.mcap"
    faults = [FaultSpec(t_s=3.0, target="altimeter", kind="noise_scale", value=10.0).model_dump()]
    run_scenario("lander", {"faults": faults}, seed=1, duration_s=10.0, out=path)
    r = replay_recording(path)
    assert r.identical
    from hopsim.bus.reading import read_recording

    envs, _ = read_recording(path)
    assert [e.topic for e in envs if e.source == "scenario"] == ["faults/altimeter"]


def test_bad_faults_are_rejected_before_the_run():
    with pytest.raises(ScenarioError, match=r"does not accept fault 'stuck_on'.*sensor_bias"):
        run_with([{"t_s": 1.0, "target": "altimeter", "kind": "stuck_on"}])
    with pytest.raises(ScenarioError, match="unknown target 'pilot'"):
        run_with([{"t_s": 1.0, "target": "pilot", "kind": "dropout"}])
    with pytest.raises(ValueError, match="key=value"):
        FaultSpec.parse("t=1,target")


def test_campaign_rows_are_separate_seeded_runs_with_their_fault():
    from hopsim.scenarios.campaign import run_campaign

    faults = [
        FaultSpec(t_s=10.0, target="body", kind="thrust_scale", value=0.5),
        FaultSpec(t_s=60.0, target="altimeter", kind="dropout"),
    ]  # after touchdown
    rows = run_campaign("lander", faults, seed=2, duration_s=90.0)
    plain = run_scenario("lander", {}, seed=2, duration_s=90.0, keep_stream=True)
    base, weak, late = rows
    assert base.stream_sha256 == plain.stream_sha256 and base.outcome["safe"]
    assert not weak.outcome["safe"] and weak.outcome["touchdown_speed_mps"] > 2.0
    assert late.outcome == base.outcome and late.stream_sha256 != base.stream_sha256


def model_stream(result):
    """The envelopes of the models (the fault messages themselves left out)."""
    return [e.to_bytes() for e in result.recorder.envelopes if not e.topic.startswith("faults/")]


@pytest.mark.parametrize("every_s", [None, 5.0])
def test_killed_actor_is_recovered_and_the_run_equals_the_run_without_the_kill(tmp_path, every_s):
    # the same run (checkpoint barriers included) without the kill
    plain = run_scenario(
        "lander",
        {},
        seed=2,
        duration_s=25.0,
        keep_stream=True,
        checkpoint_every_s=every_s,
        checkpoint_dir=tmp_path / "plain",
    )
    kill = [FaultSpec(t_s=12.3, target="controller", kind="kill").model_dump()]
    killed = run_scenario(
        "lander",
        {"faults": kill},
        seed=2,
        duration_s=25.0,
        keep_stream=True,
        checkpoint_every_s=every_s,
        checkpoint_dir=tmp_path,
    )
    assert killed.stats["recoveries"] == [
        {"actor": "controller", "t_s": 12.3, "resumed_from_s": 10.0 if every_s else 0.0}
    ]
    assert model_stream(killed) == model_stream(plain)
    kills = [e for e in killed.recorder.envelopes if e.topic == "faults/controller"]
    assert len(kills) == 1 and kills[0].t_ns == 12_300_000_000


@pytest.mark.ray
def test_killed_ray_actor_is_recovered_with_the_same_stream(tmp_path):
    import ray

    plain = run_scenario(
        "lander",
        {},
        seed=6,
        duration_s=4.0,
        keep_stream=True,
        checkpoint_every_s=1.0,
        checkpoint_dir=tmp_path / "plain",
    )
    kill = [FaultSpec(t_s=2.05, target="altimeter", kind="kill").model_dump()]
    killed = run_scenario(
        "lander",
        {"faults": kill},
        seed=6,
        duration_s=4.0,
        keep_stream=True,
        backend="ray",
        checkpoint_every_s=1.0,
        checkpoint_dir=tmp_path,
    )
    assert killed.stats["recoveries"][0]["actor"] == "altimeter"
    assert model_stream(killed) == model_stream(plain)
    assert not ray.is_initialized()
