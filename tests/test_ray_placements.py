"""The Ray backend: every placement gives the local backend's stream, byte for byte; a killed
actor is recovered; no Ray process outlives the run."""

import pytest

from hopsim.scenarios import ScenarioError
from hopsim.scenarios.runner import run_scenario

pytestmark = pytest.mark.ray

PLACEMENTS = ["per-model", "per-island", "shards:2"]


def stream(result):
    return result.recorder.stream_bytes()


@pytest.mark.parametrize("scenario, seconds", [("lander", 4.0), ("deploy_boom", 15.0)])
def test_every_placement_gives_the_local_stream(shared_ray, scenario, seconds):
    local = run_scenario(scenario, {}, seed=5, duration_s=seconds, keep_stream=True)
    for placement in PLACEMENTS:
        remote = run_scenario(
            scenario, {}, seed=5, duration_s=seconds, keep_stream=True, backend="ray", placement=placement
        )
        assert stream(remote) == stream(local), placement
        assert remote.stream_sha256 == local.stream_sha256


def test_models_in_another_process_are_read_live(shared_ray):
    r = run_scenario("lander", {}, seed=1, duration_s=3.0, keep_stream=True, backend="ray", placement="per-island")
    local = run_scenario("lander", {}, seed=1, duration_s=3.0, keep_stream=True)
    assert r.sim.model("body").x.tolist() == local.sim.model("body").x.tolist() != [100.0, 0.0]


def test_the_outcome_reads_models_that_are_actors_of_their_own(shared_ray):
    """per-model: each model is a Ray actor; the outcome reads them there, not the objects the
    run started from (energy used was 0: the battery read was the one built in the driver)."""
    r = run_scenario("lander", {}, seed=1, duration_s=3.0, keep_stream=True, backend="ray", placement="per-model")
    local = run_scenario("lander", {}, seed=1, duration_s=3.0, keep_stream=True)
    assert r.outcome == local.outcome and r.outcome["energy_used_Wh"] > 0
    assert r.sim.model("battery").power_level_Wh == local.sim.model("battery").power_level_Wh


def test_unknown_placement_is_a_clear_error():
    with pytest.raises(ScenarioError, match="per-model, per-island, shards:K"):
        run_scenario("lander", {}, duration_s=1.0, backend="ray", placement="shards:zero")
    with pytest.raises(ScenarioError, match="needs --backend ray"):
        run_scenario("lander", {}, duration_s=1.0, placement="per-island")
