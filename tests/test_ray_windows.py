"""The Ray backend with islands in hosts: windows of conservative synchronization give the local
stream byte for byte, for every scenario and placement; a killed host is recovered."""

import os
import signal
import time
from contextlib import nullcontext

import pytest
from pydantic import Field

from hopsim.bus.recorder import MemoryRecorder, envelope_stream_bytes, read_envelopes
from hopsim.kernel import FixedRate, In, Model, Out, Simulation, Tie
from hopsim.kernel.distributed import make_runtime
from hopsim.scenarios.catalog import get_scenario
from hopsim.scenarios.formation import FormationParams
from hopsim.scenarios.registry import FaultSpec, ScenarioParams, scenario
from hopsim.scenarios.runner import run_scenario
from hopsim.schemas import Scalar

pytestmark = pytest.mark.ray

PLACEMENTS = ["per-model", "per-island", "shards:2"]


def run(name, overrides, seconds, **kw):
    return run_scenario(name, overrides, seed=7, duration_s=seconds, keep_stream=True, **kw)


def _one_placement_each_in_make_test(name, seconds, first):
    """Every placement of a SPHERES scenario: one in make test (each scenario another, so that each
    placement runs there once), the other two in make test-long."""
    rest = [p for p in PLACEMENTS if p != first]
    return [
        pytest.param(name, {}, seconds, [first], id=f"{name}-{first}"),
        pytest.param(name, {}, seconds, rest, id=f"{name}-others", marks=pytest.mark.long),
    ]


@pytest.mark.parametrize(
    "name, overrides, seconds, placements",
    [
        *_one_placement_each_in_make_test("leader_follower", 6.0, "per-model"),
        *_one_placement_each_in_make_test("cooperative_docking", 12.0, "per-island"),
        *_one_placement_each_in_make_test("passive_docking", 20.0, "shards:2"),
        # 50 vehicles: per-model would start ~150 Ray actors on two cores; 6 vehicles cover it
        ("formation", {"n_vehicles": 12, "radio_loss": 0.1}, 4.0, ["per-island", "shards:2", "shards:3"]),
        ("formation", {"n_vehicles": 6, "radio_loss": 0.1}, 4.0, ["per-model"]),
    ],
)
def test_every_placement_records_the_local_stream(shared_ray, name, overrides, seconds, placements):
    local = run(name, overrides, seconds)
    assert local.message_count > 100
    for placement in placements:
        many_actors = placement == "per-island" and overrides.get("n_vehicles", 0) > 8  # > 4 x 2 CPUs
        with (
            pytest.warns(UserWarning, match="shards:2 runs the islands in fewer processes")
            if many_actors
            else nullcontext()
        ):
            remote = run(name, overrides, seconds, backend="ray", placement=placement)
        assert remote.recorder.stream_bytes() == local.recorder.stream_bytes(), placement
        assert remote.stream_sha256 == local.stream_sha256


def test_one_round_trip_per_host_and_window(shared_ray):
    """The radio latency is the lookahead: a 12-vehicle formation in 2 shards over 10 s of
    1 s radio latency takes about 10 windows of 2 host calls, where lockstep would make at least
    one call per barrier (12 vehicles x 11 control instants). The windows are dense (every host
    has a barrier in each), so all but the first few are submitted ahead of the previous one's
    replies, their messages between hosts handed from host to host."""
    p = {"n_vehicles": 12, "control_rate_hz": 1.0, "radio_latency_s": 1.0}
    remote = run("formation", p, 10.0, backend="ray", placement="shards:2")
    sync = remote.stats["sync"]
    assert sync["lookahead_s"] == pytest.approx(1.0)
    assert 10 <= sync["windows"] <= 13
    assert sync["host_calls"] <= 2 * sync["windows"]
    assert sync["pipelined_windows"] >= sync["windows"] - 4  # the first ones follow replies
    barriers = sum(isl["barriers"] for isl in remote.stats["islands"].values())
    assert barriers >= 12 * 11 > 5 * sync["host_calls"]
    assert sync["crossing_messages"] > 0
    assert remote.recorder.stream_bytes() == run("formation", p, 10.0).recorder.stream_bytes()


def test_hosts_run_their_islands_as_row_blocks_and_record_the_local_stream(shared_ray, tmp_path):
    """Each host's islands form a row block of their own (the vehicles at a shard's edges hear
    and are heard by the other shard's: messages into and out of the rows between windows); the
    recording (the stream, and the MCAP file's messages with the Foxglove scene) is the local
    one, and the local one without blocks."""
    from mcap.reader import make_reader

    def messages(path):
        with open(path, "rb") as f:
            return [(c.topic, m.log_time, m.sequence, m.data) for _, c, m in make_reader(f).iter_messages()]

    p = {"n_vehicles": 16, "radio_loss": 0.1}
    local = run_scenario("formation", p, seed=7, duration_s=30.0, out=tmp_path / "local.mcap", row_blocks=False)
    for placement in ("shards:2", "shards:3"):
        path = tmp_path / f"{placement}.mcap"
        remote = run_scenario("formation", p, seed=7, duration_s=30.0, out=path, backend="ray", placement=placement)
        (group,) = remote.stats["rate_groups"].values()
        assert group["block_instants"] > 20 * int(placement[-1]), placement  # every host, most instants
        assert remote.stream_sha256 == local.stream_sha256
        assert messages(path) == messages(tmp_path / "local.mcap")
    # to a recorder that takes no columns (in memory): the blocks' envelopes one by one
    in_memory = run("formation", p, 30.0, backend="ray", placement="shards:2")
    assert in_memory.recorder.stream_bytes() == run("formation", p, 30.0, row_blocks=False).recorder.stream_bytes()
    assert next(iter(in_memory.stats["rate_groups"].values()))["block_instants"] > 40


def test_islands_under_a_monitor_stay_in_the_driver_and_the_rest_in_hosts(shared_ray):
    """Mixed: the monitored island runs in the driver, the other in a host, same stream."""
    spec = get_scenario("lander")
    checks = []

    def build(runtime):
        sim = Simulation(seed=2, runtime=runtime, recorder=MemoryRecorder())
        spec.build(sim, spec.make_params({}))
        sim.add_monitor("watch", 4.0, ["lander"], lambda t: checks.append(t))
        return sim

    local = build(None)
    local.advance_to(3.0)
    remote = build(make_runtime("ray", placement="per-island"))
    try:
        remote.advance_to(3.0)
        assert remote.stats()["sync"]["islands_in_driver"] == ["lander"]
        assert type(remote.islands["ground"]).__name__ == "RemoteIsland"
        assert remote.recorder.stream_bytes() == local.recorder.stream_bytes()
        assert len(checks) == 2 * 13  # 0, 0.25, ..., 3.0 s in each run
    finally:
        remote.runtime.release_hosts(list(remote.runtime._island_hosts))


def test_a_stop_inside_a_host_ends_the_stream_at_that_instant(shared_ray, tmp_path):
    """Touchdown (a zero-crossing that sets e_stop) in the lander's host while the ground station's
    host, with telemetry every 20 ms, has already run past it: the runner runs again from its last
    checkpoint with windows ending at the stop, and the stream is the local one."""
    p = {
        "altitude_m": 3.0,
        "vertical_speed_mps": -2.0,
        "max_thrust_N": 10.0,
        "stop_on_touchdown": True,
        "telemetry_rate_hz": 50.0,
    }
    local = run("lander", p, 10.0)
    assert local.stop_reason == "e_stop" and local.end_time_s < 3.0
    for placement in ("per-island", "shards:2"):
        remote = run("lander", p, 10.0, backend="ray", placement=placement)
        assert remote.stop_reason == "e_stop" and remote.end_time_s == local.end_time_s
        assert remote.stats["stop_replays"] == [{"t_s": local.end_time_s, "resumed_from_s": 0.0}]
        assert remote.recorder.stream_bytes() == local.recorder.stream_bytes(), placement
    # to a file, written as the run goes: what the first pass wrote before the stop's instant is
    # given again by the run from the checkpoint, and the file is the local stream once
    path = tmp_path / "remote.mcap"
    remote = run_scenario("lander", p, seed=7, duration_s=10.0, out=path, backend="ray", placement="shards:2")
    assert remote.stats["stop_replays"] and envelope_stream_bytes(read_envelopes(path)) == local.recorder.stream_bytes()


@scenario(
    "formation_with_stop", FormationParams, "test: a formation that one vehicle stops at 3.5 s", default_duration_s=8.0
)
def _formation_with_stop(sim, p):
    """The formation, plus an event of vehicle v0's island (so, in v0's host) that sets e_stop."""
    get_scenario("formation").build(sim, p)

    def stop(ev) -> None:
        sim.e_stop = True

    sim.at(3.5, stop, name="stop", island="v0")


@pytest.mark.parametrize(
    "overrides, placement, replays",
    [
        ({"n_vehicles": 6}, "shards:2", 0),
        # a 3 x 3 lattice in 3 shards, one row each: the first row's host cannot send to the last's
        ({"n_vehicles": 9, "layout": "lattice"}, "shards:3", 1),
    ],
)
def test_a_stop_inside_a_host_ends_pipelined_windows_at_that_instant(shared_ray, overrides, placement, replays):
    """The formation's windows are dense, so the one after the stop's window was submitted before
    the stop was known. A host handed the stopping host's reply runs nothing in it; a host that
    cannot hear from the stopping host runs on past the stop, and the runner runs again from its
    last checkpoint with windows that end at the stop. Either way the stream is the local one."""
    local = run("formation_with_stop", overrides, 8.0)
    assert local.stop_reason == "e_stop" and local.end_time_s == 3.5
    remote = run("formation_with_stop", overrides, 8.0, backend="ray", placement=placement)
    assert remote.stop_reason == "e_stop" and remote.end_time_s == 3.5
    # no host has a barrier in (3.5 s, 4 s): only a window submitted ahead can run past the stop
    assert [r["t_s"] for r in remote.stats["stop_replays"]] == [3.5] * replays
    if not replays:  # (after a replay the stats are the replay's, which ends at the stop)
        assert remote.stats["sync"]["pipelined_windows"] > 0
    assert remote.recorder.stream_bytes() == local.recorder.stream_bytes()


class OneWayParams(ScenarioParams):
    stop_in: str = Field("a", description="the island whose event stops the run")


@scenario(
    "one_way_link",
    OneWayParams,
    "test: island a talks to island b at 1 Hz (1 s latency), b never "
    "answers; an event of island ``stop_in`` stops the run at 3.5 s",
    default_duration_s=8.0,
)
def _one_way_link(sim, p):
    class Talker(Model):  # classes made here travel to the hosts by value
        io_schedule = FixedRate(1.0)
        outputs = {"count": Out(Scalar)}

        def update_flow_outs(self, t_ns):
            self.write("count", Scalar(value=t_ns / 1e9))

    class Listener(Model):
        io_schedule = FixedRate(1.0)
        inputs = {"count": In(Scalar)}

        def update_flow_outs(self, t_ns):
            self.take("count")

    def stop(ev) -> None:
        sim.e_stop = True

    sim.add_island("a")
    sim.add_island("b")
    sim.add_model(Talker("talker"), "a", ties={"count": Tie("a/count", latency_s=1.0)})
    sim.add_model(Listener("listener"), "b", ties={"count": "a/count"})
    sim.at(3.5, stop, name="stop", island=p.stop_in)


@pytest.mark.parametrize(
    "stop_in, replays",
    [
        ("a", 0),  # a's host hears from nobody: it stops its pipelined window itself
        ("b", 1),  # a's host cannot hear b's stop: it runs the window after it, past the stop
    ],
)
def test_a_stop_in_a_host_with_one_way_links_is_exact(shared_ray, stop_in, replays):
    local = run("one_way_link", {"stop_in": stop_in}, 8.0)
    assert local.stop_reason == "e_stop" and local.end_time_s == 3.5
    remote = run("one_way_link", {"stop_in": stop_in}, 8.0, backend="ray", placement="shards:2")
    assert remote.stop_reason == "e_stop" and remote.end_time_s == 3.5
    assert [r["t_s"] for r in remote.stats["stop_replays"]] == [3.5] * replays
    if not replays:
        assert remote.stats["sync"]["pipelined_windows"] > 0
    assert remote.stats["islands"] == local.stats["islands"]
    assert remote.recorder.stream_bytes() == local.recorder.stream_bytes()


@pytest.mark.parametrize("placement", ["per-island", "shards:2"])
def test_a_kill_fault_in_a_host_is_recovered_from_the_last_checkpoint(shared_ray, tmp_path, placement):
    kill = [FaultSpec(t_s=2.05, target="controller", kind="kill").model_dump()]
    kw = dict(checkpoint_every_s=1.0, checkpoint_dir=tmp_path)
    local = run("lander", {"faults": kill}, 4.0, **kw)
    remote = run("lander", {"faults": kill}, 4.0, backend="ray", placement=placement, **kw)
    assert remote.stats["recoveries"] == [{"actor": "controller", "t_s": 2.05, "resumed_from_s": 2.0}]
    assert remote.recorder.stream_bytes() == local.recorder.stream_bytes()


_killed_pids: list[int] = []


@scenario(
    "formation_with_host_kill", FormationParams, "test: a formation whose host is killed at 3 s", default_duration_s=8.0
)
def _formation_with_host_kill(sim, p):
    """The formation, plus a driver event at 3 s that SIGKILLs the process of one island host
    (the first time only), as an operator or the OOM killer would."""
    get_scenario("formation").build(sim, p)

    def kill_a_host(ev) -> None:
        if sim.runtime.name != "ray" or _killed_pids:
            return
        import ray

        host = next(isl.host for isl in sim.islands.values() if getattr(isl, "remote", False))
        pid = ray.get(host.pid.remote())
        os.kill(pid, signal.SIGKILL)
        _killed_pids.append(pid)
        deadline = time.monotonic() + 30
        while os.path.exists(f"/proc/{pid}") and time.monotonic() < deadline:
            time.sleep(0.01)

    sim.at(3.0, kill_a_host, name="kill_a_host")


def test_a_host_process_killed_from_outside_is_recovered(shared_ray, tmp_path):
    p = {"n_vehicles": 6}
    kw = dict(checkpoint_every_s=2.0, checkpoint_dir=tmp_path)
    local = run("formation_with_host_kill", p, 8.0, **kw)
    remote = run("formation_with_host_kill", p, 8.0, backend="ray", placement="shards:2", **kw)
    assert len(_killed_pids) == 1 and not os.path.exists(f"/proc/{_killed_pids[0]}")
    (recovery,) = remote.stats["recoveries"]
    assert recovery["resumed_from_s"] == 2.0
    assert remote.recorder.stream_bytes() == local.recorder.stream_bytes()


@scenario(
    "formation_with_host_crash",
    FormationParams,
    "test: a formation whose host process dies inside a window at 3.5 s",
    default_duration_s=8.0,
)
def _formation_with_host_crash(sim, p):
    """The formation, plus an event of vehicle v0's island that SIGKILLs the process it runs in,
    when that is a Ray host (not the driver), the first time only (``HOPSIM_TEST_CRASH_MARK``
    names the file that says it happened)."""
    get_scenario("formation").build(sim, p)
    driver_pid, mark = os.getpid(), os.environ["HOPSIM_TEST_CRASH_MARK"]

    def crash(ev) -> None:
        if os.getpid() != driver_pid and not os.path.exists(mark):
            open(mark, "w").close()
            os.kill(os.getpid(), signal.SIGKILL)

    sim.at(3.5, crash, name="crash", island="v0")


def test_a_host_process_dying_inside_a_pipelined_window_is_recovered(shared_ray, tmp_path, monkeypatch):
    """The host dies while the next window, submitted ahead, waits for its reply: the driver
    gives both up and the runner recovers from the last checkpoint."""
    monkeypatch.setenv("HOPSIM_TEST_CRASH_MARK", str(tmp_path / "crashed"))
    p = {"n_vehicles": 6}
    kw = dict(checkpoint_every_s=2.0, checkpoint_dir=tmp_path)
    local = run("formation_with_host_crash", p, 8.0, **kw)
    path = tmp_path / "remote.mcap"  # written as the run goes, through the recovery
    remote = run_scenario(
        "formation_with_host_crash", p, seed=7, duration_s=8.0, out=path, backend="ray", placement="shards:2", **kw
    )
    assert (tmp_path / "crashed").exists()
    (recovery,) = remote.stats["recoveries"]
    assert recovery["resumed_from_s"] == 2.0
    assert remote.stats["sync"]["pipelined_windows"] > 0
    assert envelope_stream_bytes(read_envelopes(path)) == local.recorder.stream_bytes()


def test_stop_callbacks_keep_hosts_in_lockstep(shared_ray):
    spec = get_scenario("lander")
    sim = Simulation(seed=1, runtime=make_runtime("ray", placement="shards:2"), recorder=MemoryRecorder())
    spec.build(sim, spec.make_params({}))
    sim.add_stop_callback(lambda s: s.time >= 1.0)
    try:
        assert sim.advance_to(3.0) == "stop_callback" and sim.time == pytest.approx(1.0, abs=0.05)
        assert sim.windows is None
    finally:
        sim.runtime.release_hosts(list(sim.runtime._island_hosts))


class OrbitFleetParams(ScenarioParams):
    n_spacecraft: int = Field(6, ge=1, le=100, description="spacecraft, each in its own RK4 island")


@scenario(
    "orbit_fleet",
    OrbitFleetParams,
    "test: spacecraft in RK4 islands at 1 Hz (one rate group, a fleet "
    "form), wheel commands on and between the instants",
    default_duration_s=8.0,
)
def _orbit_fleet(sim, p):
    import math

    from hopsim.actors.orbiting_spacecraft import OrbitingSpacecraft
    from hopsim.dynamics.integrators import RK4
    from hopsim.dynamics.orbital_elements import state_from_elements
    from hopsim.dynamics.spherical_harmonics import ggm03s
    from hopsim.schemas import ReactionWheelCommand

    field = ggm03s()
    for i in range(p.n_spacecraft):
        name = f"sc{i}"
        r, v = state_from_elements(6.9e6 + 2e3 * i, 0.001, math.radians(30.0 + i), 0.1 * i, 0.2, 0.3 * i, field.mu)
        sim.add_island(name, integrator=RK4(), n_integration_steps=2)
        sim.add_model(
            OrbitingSpacecraft(
                name,
                r,
                v,
                500.0,
                [[400.0, 0, 0], [0, 300.0, 0], [0, 0, 200.0]],
                field=field,
                degree=4,
                cd_area_m2=4.0,
                rho0_kgpm3=4e-13,
                h0_m=500e3,
                scale_height_m=60e3,
                axes_B=[(1, 0, 0), (0, 1, 0), (0, 0, 1)],
                rate_hz=1.0,
            ),
            name,
            ties={"state": f"{name}/state", "wheels": f"{name}/wheels", "torque_cmd": "fleet/rw_cmd"},
        )
    sim.inject("fleet/rw_cmd", ReactionWheelCommand(torque_Nm=[0.01, -0.01, 0.005]), 0.0)
    sim.inject("fleet/rw_cmd", ReactionWheelCommand(torque_Nm=[0.0, 0.02, -0.01]), 3.5)


def test_fleet_forms_in_hosts_record_the_local_stream(shared_ray):
    """A shard's rate group hands its hops to the fleet form as the local run does."""
    local = run("orbit_fleet", {}, 8.0, keep_sim=True)
    scalar = run("orbit_fleet", {}, 8.0, fleets=False)
    assert local.recorder.stream_bytes() == scalar.recorder.stream_bytes()
    remote = run("orbit_fleet", {}, 8.0, backend="ray", placement="shards:2")
    assert remote.recorder.stream_bytes() == local.recorder.stream_bytes()
    fleet_hops = [s["fleet_hops"] for s in remote.stats["islands"].values()]
    assert min(fleet_hops) > 0 and sum(fleet_hops) == sum(s["fleet_hops"] for s in local.stats["islands"].values())
    # the hosts' rate groups and fleet forms count what the local run's do (summed over hosts)
    ((schedule, counts),) = local.stats["rate_groups"].items()
    assert remote.stats["rate_groups"][schedule]["member_barriers"] == counts["member_barriers"] > 0
    assert remote.stats["fleets"]["hops"] == local.stats["fleets"]["hops"] == sum(fleet_hops)


def test_a_sharded_run_that_records_nothing_ends_where_the_local_run_ends(shared_ray):
    """Without a recorder the local run hands a zero-latency message that only its publisher's
    island reads over without an envelope, and the hosts route every message: the formation on 2
    shards ends with the local run's outcome, states and message count all the same."""
    overrides = {
        "n_vehicles": 8,
        "layout": "lattice",
        "radio_loss": 0.2,
        "faults": [{"t_s": 2.5, "target": "v3_thr", "kind": "thrust_scale", "value": 0.5}],
    }
    local = run_scenario("formation", overrides, seed=7, duration_s=6.0, keep_sim=True)
    remote = run_scenario(
        "formation", overrides, seed=7, duration_s=6.0, keep_sim=True, backend="ray", placement="shards:2"
    )
    assert remote.outcome == local.outcome
    assert remote.stats["published"] == local.stats["published"] > 0
    for name in local.sim.model_names():
        model = local.sim.model(name)
        if getattr(model, "x", None) is not None:
            assert remote.sim.model(name).x.tobytes() == model.x.tobytes(), name
