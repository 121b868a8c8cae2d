"""A Ray cluster of two nodes on this machine (a head and a worker node, one CPU each, on the
loopback interface): a sharded formation run on it has its hosts on both nodes and records the
local stream byte for byte; when the worker node is lost partway through, the run goes back to
its last checkpoint, places its hosts on the node left, and still records the local stream."""

import re
from pathlib import Path

import pytest

from hopsim.scenarios.catalog import get_scenario
from hopsim.scenarios.formation import FormationParams
from hopsim.scenarios.registry import scenario
from hopsim.scenarios.runner import run_scenario

pytestmark = pytest.mark.ray

VEHICLES = {"n_vehicles": 40}
SECONDS = 5.0
SEED = 3

_noted: list[tuple[float, list[str]]] = []  # (instant, the node of each island host)
_to_lose: list = []  # the node the run's driver event removes from the cluster (once)
_lose_at: list = [2.5]  # when it does (s)
_cluster: list = []  # the cluster of the module (its driver event removes a node of it)


def node_of(pid: int) -> str:
    """The id of the Ray node that runs process ``pid``: its parent is the node's raylet, whose
    command line names the node."""
    status = Path(f"/proc/{pid}/status").read_text()
    raylet = int(re.search(r"^PPid:\s*(\d+)", status, re.M).group(1))
    for arg in Path(f"/proc/{raylet}/cmdline").read_bytes().split(b"\0"):
        if arg.startswith(b"--node_id="):
            return arg.split(b"=", 1)[1].decode()
    raise AssertionError(f"process {pid} was not started by a raylet")


@scenario(
    "formation_across_nodes",
    FormationParams,
    "test: the formation, its island hosts' nodes noted at 1.5 s and 3.5 s, a node lost when asked",
    default_duration_s=SECONDS,
)
def _formation_across_nodes(sim, p):
    """The formation, plus driver events that publish nothing: the nodes of the island hosts are
    noted at 1.5 s and 3.5 s, and at ``_lose_at`` (2.5 s, or 3 s: the instant of a checkpoint) the
    node in ``_to_lose`` (if any) is removed from the cluster, gracefully, as when a machine is
    taken out of it (the first time only)."""
    get_scenario("formation").build(sim, p)

    def note(ev) -> None:
        if sim.runtime.name != "ray":
            return
        import ray

        hosts = {id(isl.host): isl.host for isl in sim.islands.values() if getattr(isl, "remote", False)}
        pids = ray.get([host.pid.remote() for host in hosts.values()])
        _noted.append((sim.time, [node_of(pid) for pid in pids]))

    def lose_a_node(ev) -> None:
        if sim.runtime.name == "ray" and _to_lose:
            _cluster[0].remove_node(_to_lose.pop())

    sim.at(1.5, note, name="note_nodes_early")
    sim.at(_lose_at[0], lose_a_node, name="lose_a_node")
    sim.at(3.5, note, name="note_nodes_late")


@pytest.fixture(scope="module")
def cluster(ray_processes_left):
    """A head node and a worker node on 127.0.0.1, one CPU each; none of their processes may
    outlive the module."""
    import ray
    from ray.cluster_utils import Cluster

    from hopsim.kernel.distributed.ray_runtime import _loopback_node

    assert not ray.is_initialized() and not ray_processes_left()
    with _loopback_node():  # every process on the loopback interface, as a local Ray of hopsim's
        made = Cluster(
            initialize_head=True,
            head_node_args=dict(num_cpus=1, node_ip_address="127.0.0.1", include_dashboard=False),
        )
    _cluster[:] = [made]
    try:
        yield made
    finally:
        _cluster.clear()
        made.shutdown()
        left = ray_processes_left(15.0)
        assert not left, left


def with_worker(cluster):
    """The cluster's worker node (one is started if it has none)."""
    from hopsim.kernel.distributed.ray_runtime import _loopback_node

    if not cluster.worker_nodes:
        with _loopback_node():
            cluster.add_node(num_cpus=1, node_ip_address="127.0.0.1")
    (worker,) = cluster.worker_nodes
    return worker


@pytest.fixture(scope="module")
def local_stream():
    """The local backend's stream of the formation (no checkpoints, no extra events)."""
    return run_scenario("formation", VEHICLES, seed=SEED, duration_s=SECONDS, keep_stream=True).recorder.stream_bytes()


def run_on(cluster, tmp_path):
    import ray

    _noted.clear()
    result = run_scenario(
        "formation_across_nodes",
        VEHICLES,
        seed=SEED,
        duration_s=SECONDS,
        keep_stream=True,
        backend="ray",
        ray_address=cluster.address,
        placement="shards:2",
        checkpoint_every_s=1.0,
        checkpoint_dir=tmp_path,
    )
    assert not ray.is_initialized()  # the driver left the cluster; the cluster runs on
    return result


def test_a_sharded_formation_on_two_nodes_records_the_local_stream(cluster, local_stream, tmp_path):
    head, worker = cluster.head_node.node_id, with_worker(cluster).node_id
    remote = run_on(cluster, tmp_path)
    assert _noted == [(1.5, [head, worker]), (3.5, [head, worker])]  # one host on each node
    assert remote.stats["recoveries"] == []
    assert remote.recorder.stream_bytes() == local_stream


@pytest.mark.long  # about 20 s each, most of it starting the cluster and the hosts
@pytest.mark.parametrize("lose_at", [2.5, 3.0])  # between checkpoints, and at one (its state being taken)
def test_a_lost_node_sends_the_run_back_to_its_last_checkpoint_with_the_local_stream(
    cluster, local_stream, tmp_path, lose_at
):
    head, worker = cluster.head_node.node_id, with_worker(cluster)
    _to_lose[:], _lose_at[:] = [worker], [lose_at]
    try:
        remote = run_on(cluster, tmp_path)
    finally:
        _lose_at[:] = [2.5]
    assert not _to_lose and not cluster.worker_nodes
    (recovery,) = remote.stats["recoveries"]
    assert recovery["resumed_from_s"] == 2.0 and lose_at <= recovery["t_s"] <= 3.0
    # before the loss a host on each node; after it, both on the node left
    assert _noted == [(1.5, [head, worker.node_id]), (3.5, [head, head])]
    assert remote.recorder.stream_bytes() == local_stream
