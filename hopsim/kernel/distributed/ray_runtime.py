"""The Ray runtime: models and islands as Ray actors.

``per-model`` placement hosts each flow model in its own Ray actor (:class:`ModelHost`) and ships
pending deliveries with the next call, so a model sees exactly the same inputs at the same
lifecycle calls as in the local runtime. ``per-island`` and ``shards:K`` ship whole islands to
:class:`~hopsim.kernel.distributed.host.IslandHost` actors, which advance in windows
(:mod:`hopsim.kernel.distributed.windows`). Continuous models always stay in their island's
process (the integrator samples them many times per step).
"""

from __future__ import annotations

import contextlib
import logging
import os
import tempfile
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from hopsim.kernel.distributed.reaper import start_reaper, stop_reaper
from hopsim.kernel.errors import ActorKilled
from hopsim.kernel.model import Model, ModelContext
from hopsim.kernel.runtime import LocalHandle, LocalRuntime, invoke


class ModelHost:
    """The Ray actor that hosts one model (per-model placement).

    The model arrives pickled (``model_blob``, as islands reach their hosts): an object passed
    to Ray as it is would come back with its numpy arrays read-only (zero-copy views of Ray's
    object store), and models update their arrays in place."""

    def __init__(self, model_blob: bytes):
        import cloudpickle

        self.model = cloudpickle.loads(model_blob)

    def invoke(self, method: str, args: tuple, deliveries: list) -> tuple[Any, list]:
        return invoke(self.model, method, args, deliveries)

    def copy(self) -> bytes:
        """The model as it is now, pickled (the driver's copy of it: an outcome, the run's end)."""
        import cloudpickle

        return cloudpickle.dumps(self.model)


class RayHandle:
    """A model hosted by a :class:`ModelHost` Ray actor."""

    remote = True

    def __init__(self, model: Model, actor_cls):
        import ray

        self._ray = ray
        self.name = model.name
        import cloudpickle

        self.actor = actor_cls.options(name=None).remote(cloudpickle.dumps(model))
        self._pending: list = []

    def deliver(self, port: str, msg: Any, t_ns: int) -> None:
        self._pending.append((port, msg, t_ns))

    def call(self, method: str, *args) -> tuple[Any, list]:
        pending, self._pending = self._pending, []
        try:
            return self._ray.get(self.actor.invoke.remote(method, args, pending))
        except self._ray.exceptions.RayActorError as err:
            raise ActorKilled(self.name, -1) from err

    def model_now(self) -> Model:
        """A copy of the hosted model as it is now (the one this handle was built from stopped
        changing when it left for its actor)."""
        import cloudpickle

        try:
            return cloudpickle.loads(self._ray.get(self.actor.copy.remote()))
        except self._ray.exceptions.RayActorError as err:
            raise ActorKilled(self.name, -1) from err

    def kill(self) -> None:
        self._ray.kill(self.actor, no_restart=True)

    def close(self) -> None:
        self._ray.kill(self.actor)


class RayRuntime:
    """Models and islands as Ray actors.

    ``placement``: ``per-model`` (every flow model its own Ray actor; continuous models stay with
    their island in the driver), ``per-island`` (the default: each island with all its models in
    one Ray actor) or ``shards:K`` (the islands, sorted by name, in K contiguous blocks, one Ray
    actor each). Islands in hosts advance in windows of conservative synchronization
    (:mod:`hopsim.kernel.distributed.windows`), or barrier by barrier when the run has stop callbacks.
    ``address`` connects to an existing cluster (``ray start --head`` prints it); without it a
    local Ray is started for the run and shut down at the end.
    """

    name = "ray"

    def __init__(self, address: str | None = None, num_cpus: int | None = None, placement: str = "per-island"):
        self.placement = placement
        self.shards = parse_placement(placement)
        import ray

        self._ray = ray
        self._started_here = start_ray(address, num_cpus)
        self._host_cls = ray.remote(num_cpus=0)(ModelHost)
        self._handles: list[RayHandle] = []
        self._island_hosts: list = []

    def handle(self, model: Model, ctx: ModelContext):
        if model.is_continuous or self.shards is not None:
            h = LocalHandle(model)  # with its integrator, or shipped with its island
        else:
            h = RayHandle(model, self._host_cls)
            self._handles.append(h)
        h.call("bind", ctx)
        return h

    def release(self, handles) -> None:
        """Stop the actors of a simulation that is being replaced (recovery); Ray stays up."""
        for h in handles:
            if h in self._handles:
                self._handles.remove(h)
                with contextlib.suppress(Exception):  # already dead
                    h.close()

    def place(self, sim) -> bool:
        """Ship the islands to their hosts (per-island, shards); False when nothing moves."""
        if self.shards is None:
            return False
        from hopsim.kernel.distributed.host import IslandHost, place_islands

        # islands watched by a monitor (contact) stay in the driver, where the monitor runs
        names = sorted(n for n, isl in sim.islands.items() if not isl.watched)
        if not names:
            return False
        k = len(names) if self.shards == 0 else min(self.shards, len(names))
        cpus = int(self._ray.cluster_resources().get("CPU", 1))
        if k > 4 * cpus:
            warnings.warn(
                f"placement {self.placement} starts {k} Ray actors (one process each) on a cluster of "
                f"{cpus} CPUs; --placement shards:{cpus} runs the islands in fewer processes",
                stacklevel=2,
            )
        # contiguous blocks of the sorted names: islands named in sequence (a formation's
        # neighbours) share a host, and fewer messages cross between hosts
        groups = [names[len(names) * i // k : len(names) * (i + 1) // k] for i in range(k)]
        cls = self._ray.remote(num_cpus=0)(IslandHost)
        windowed = not sim.has_stop_callbacks
        proxies = place_islands(sim, sim.islands, groups, cls, windowed, host_nodes(self._ray, k))
        self._island_hosts += list({id(p.host): p.host for p in proxies.values()}.values())
        sim.islands = {name: proxies.get(name, isl) for name, isl in sim.islands.items()}
        if windowed:
            from hopsim.kernel.distributed.windows import WindowedSync

            sim.windows = WindowedSync(sim, proxies)
        return True

    def release_hosts(self, hosts) -> None:
        for host in hosts:
            with contextlib.suppress(Exception):  # already dead
                self._ray.kill(host)
            if host in self._island_hosts:
                self._island_hosts.remove(host)

    def shutdown(self) -> None:
        self.release_hosts(list(self._island_hosts))
        for h in self._handles:
            with contextlib.suppress(Exception):  # an actor already gone is fine at shutdown
                h.close()
        self._handles.clear()
        if self._started_here:
            stop_ray()


def host_nodes(ray, k: int) -> list[str | None]:
    """The node (its id) for each of ``k`` island hosts: the living nodes of the cluster that have
    CPUs (all living nodes if none has), each given hosts in proportion to its CPUs, the driver's
    node first; None for every host when the cluster has one node. A host asks for no CPU, and Ray
    puts such an actor on a node drawn at random (even with a soft node affinity): two hosts on a
    cluster of two nodes would as often as not share one. A host whose node is gone by the time
    it starts is lost as a host of a lost node is (the run goes back to its last checkpoint and
    places its hosts on the nodes living then). No living node is a :class:`RayUnavailable`."""
    alive = [n for n in ray.nodes() if n.get("Alive")]
    with_cpus = [n for n in alive if n.get("Resources", {}).get("CPU", 0) > 0]
    nodes = with_cpus or alive
    if not nodes:
        raise RayUnavailable("no node of the Ray cluster is alive to run the island hosts")
    if len(nodes) == 1:
        return [None] * k
    here = ray.get_runtime_context().get_node_id()
    nodes.sort(key=lambda n: n["NodeID"] != here)  # stable: the cluster's order otherwise
    weight = [max(n.get("Resources", {}).get("CPU", 0), 1) for n in nodes]
    given = [0] * len(nodes)
    out: list[str | None] = []
    for _ in range(k):
        i = min(range(len(nodes)), key=lambda j: (given[j] / weight[j], j))
        given[i] += 1
        out.append(nodes[i]["NodeID"])
    return out


_VERBOSE = False


def set_verbose(verbose: bool) -> None:
    """Whether Ray may speak: its banners (the token-authentication notice), its loggers and
    the workers' output in the driver's terminal. Quiet by default; a command's ``--verbose``."""
    global _VERBOSE
    _VERBOSE = verbose
    level = logging.INFO if verbose else logging.ERROR
    for name in ("ray", "ray._private.authentication.authentication_token_setup"):
        logging.getLogger(name).setLevel(level)


class RayUnavailable(RuntimeError):
    """Ray cannot be started here, or the cluster named cannot be reached."""


def start_ray(address: str | None = None, num_cpus: int | None = None) -> bool:
    """Start a Ray for this process, or connect to the cluster at ``address``; True if this call
    started or connected it (and so its owner shuts it down), False if Ray was up already.

    Without ``address`` a new local Ray is always started (``address="local"``), whatever cluster
    this machine runs or ran (``ray.init()`` alone would join the last one ``ray start`` made),
    listening on 127.0.0.1 only, with a reaper, started before it, that stops its processes if
    this one dies, while Ray starts or after (:mod:`hopsim.kernel.distributed.reaper`);
    :func:`stop_ray` shuts both down. With one, a cluster that cannot be reached is a
    :class:`RayUnavailable` naming the address.
    """
    import ray

    if ray.is_initialized():
        return False
    set_verbose(_VERBOSE)
    kwargs = dict(include_dashboard=False, log_to_driver=_VERBOSE, configure_logging=False)
    if address:
        where = _check_reachable(address)
        loopback = where is not None and _listens_on_loopback_only(where)
        try:
            with _loopback_node() if loopback else contextlib.nullcontext():
                if loopback:  # this driver is a process of the node at 127.0.0.1 on this machine
                    kwargs["_node_ip_address"] = "127.0.0.1"
                ray.init(address=address, **kwargs)
        except (ConnectionError, RuntimeError, ValueError) as err:
            raise RayUnavailable(
                f"cannot reach the Ray cluster at {address!r} ({str(err).splitlines()[0]}); "
                f"`ray status` on the head node prints the address to give"
            ) from None
    else:
        global _REAPER
        reaper = start_reaper()  # before Ray starts: a driver killed while it starts leaves no Ray process
        try:
            with _loopback_node():
                ray.init(address="local", _node_ip_address="127.0.0.1", num_cpus=num_cpus or os.cpu_count(), **kwargs)
        except BaseException:
            stop_reaper(reaper, reap=True)  # what Ray started of itself goes too
            raise
        _REAPER = reaper
    return True


_REAPER = None  # the reaper of the local Ray this process started (see reaper.py)


def stop_ray() -> None:
    """Shut down the Ray this process started or joined, and its reaper."""
    global _REAPER
    import ray

    if ray.is_initialized():
        ray.shutdown()
    stop_reaper(_REAPER)
    _REAPER = None


@contextmanager
def _loopback_node() -> Iterator[None]:
    """While a local Ray starts: its node address is 127.0.0.1, so that its GCS, raylet, workers
    and agents listen on the loopback interface only (Ray would take the machine's address, and
    its gRPC servers would listen on every interface). Ray does this on macOS and Windows, where
    clusters are off (``RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER``); the processes it starts inherit the
    setting, and the driver gets its own back afterwards."""
    from ray._private import ray_constants

    name = ray_constants.ENABLE_RAY_CLUSTERS_ENV_VAR
    before_env, before = os.environ.get(name), ray_constants.ENABLE_RAY_CLUSTER
    os.environ[name], ray_constants.ENABLE_RAY_CLUSTER = "0", False
    try:
        yield
    finally:
        ray_constants.ENABLE_RAY_CLUSTER = before
        if before_env is None:
            del os.environ[name]
        else:
            os.environ[name] = before_env


def _check_reachable(address: str) -> tuple[str, int] | None:
    """Fail at once, naming the address, when the head node at ``address`` (``host:port``, or
    ``auto``: the cluster ``ray start`` last recorded on this machine) does not answer; Ray itself
    would retry for minutes. Returns the head node's (host, port), None for a ``ray://`` address."""
    import socket

    where = address
    if address == "auto":
        recorded = Path(tempfile.gettempdir()) / "ray" / "ray_current_cluster"
        where = os.environ.get("RAY_ADDRESS") or (recorded.read_text().strip() if recorded.exists() else "")
        if not where:
            raise RayUnavailable("--ray-address auto: no Ray cluster was started on this machine (`ray start --head`)")
    if where.startswith(("ray://", "local")):
        return None
    host, sep, port = where.rpartition(":")
    if not sep or not port.isdigit():
        raise RayUnavailable(f"--ray-address {address!r} is not host:port (`ray status` on the head node prints it)")
    try:
        socket.create_connection((host, int(port)), timeout=3).close()
    except OSError as err:
        raise RayUnavailable(
            f"no Ray cluster answers at {where} ({err.strerror or err}); `ray status` on the head "
            f"node prints the address to give"
        ) from None
    return host, int(port)


def _listens_on_loopback_only(where: tuple[str, int]) -> bool:
    """Whether the head node at ``where`` answers at a loopback address and not at the machine's
    own: a cluster of this machine whose nodes listen on 127.0.0.1 only, as a local Ray of
    hopsim's does. Ray turns a loopback address into the machine's before it connects, and would
    retry there for minutes; the driver joins such a cluster as a node at 127.0.0.1."""
    import ipaddress
    import socket

    host, port = where
    try:
        loopback = ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        loopback = host == "localhost"
    if not loopback:
        return False
    from ray._private.services import resolve_ip_for_localhost

    machine = resolve_ip_for_localhost(host)  # where Ray would connect
    if ipaddress.ip_address(machine.strip("[]")).is_loopback:
        return True
    try:
        socket.create_connection((machine.strip("[]"), port), timeout=3).close()
    except OSError:
        return True
    return False


@contextmanager
def ray_session(address: str | None = None, num_cpus: int | None = None) -> Iterator[Any]:
    """``ray`` for the body of a ``with``: started (or connected) here and shut down after, unless
    it was up already."""
    import ray

    started = start_ray(address, num_cpus)
    try:
        yield ray
    finally:
        if started:
            stop_ray()


def parse_placement(placement: str) -> int | None:
    """None for per-model, 0 for per-island, K for shards:K; a clear error otherwise."""
    if placement == "per-model":
        return None
    if placement == "per-island":
        return 0
    if placement.startswith("shards:"):
        try:
            k = int(placement.split(":", 1)[1])
        except ValueError:
            k = 0
        if k >= 1:
            return k
    raise ValueError(
        f"unknown placement {placement!r}; choose one of per-model, per-island, shards:K "
        f"(K a positive number of Ray actors)"
    )


def make_runtime(backend: str = "local", **options):
    """The runtime for ``backend``: "local" (in-process) or "ray" (``options`` go to :class:`RayRuntime`)."""
    if backend == "local":
        if options.get("placement") not in (None, "in-process"):
            raise ValueError(f"placement {options['placement']!r} needs --backend ray")
        return LocalRuntime()
    if backend == "ray":
        return RayRuntime(**options)
    raise ValueError(f"unknown backend {backend!r}; choose 'local' or 'ray'")
