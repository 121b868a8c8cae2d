"""Per-island placement: each island, with all its models, lives in a Ray actor of its own.

The driver keeps the simpy clock, the bus routing between islands and the recorder; a
:class:`RemoteIsland` stands in for each island there. An island's barrier is one remote call
(:meth:`IslandHost.call`), which returns everything the island published, the barrier it plans
next and whether it set ``e_stop``; deliveries into it are remote calls too. Inside the host the
very same :class:`~hopsim.kernel.island.Island` code runs, with :class:`HostServices` in the
place of the simulation, so every placement gives the same stream, byte for byte.

With windowed synchronization (:mod:`hopsim.kernel.distributed.windows`, used unless the run has stop
callbacks) a host keeps its islands' wake-ups on a simpy clock of its own and runs them up to the
end of each window in one call (:meth:`IslandHost.run_window`); messages between its own islands
stay inside it, and only messages for islands in other hosts (and, when recording, every
envelope) travel back to the driver.

Scenario code that captured the simulation in a closure (``sim.e_stop = True`` in a
zero-crossing callback) keeps working: when a host unpickles its islands, the simulation
becomes that host's services.
"""

from __future__ import annotations

import os
import time
from typing import Any

import cloudpickle
import simpy

from hopsim.bus.router import deliver_to_subscribers
from hopsim.bus.shipping import ColumnsSender
from hopsim.kernel.bounds import check_state_finite
from hopsim.kernel.errors import ActorKilled
from hopsim.kernel.fleet import Fleets
from hopsim.kernel.island import NEVER, Island, propagate_together
from hopsim.kernel.owner import owning_unpickled_islands
from hopsim.kernel.rate_group import RateGroup, RateGroups
from hopsim.kernel.wakes import InstantWakes

ALL_ISLANDS = "*"  # an operation's island name that stands for every island of the host
HOST = ""  # an operation's island name that stands for the host itself


def kernel_event_level(sim, recording: bool) -> int:
    """What a host forwards of its islands' kernel events: 0 none, 1 events, 2 also barriers."""
    if not (recording and sim.record_kernel_events):
        return 0
    return 2 if sim.record_barriers else 1


class HostServices:
    """What an island needs from its owner (:class:`~hopsim.kernel.owner.IslandOwner`), inside a
    host process.

    In lockstep the driver wakes each island (``wakes`` go back with every reply); windowed, the
    host keeps the wake-ups on its own simpy clock ``env`` and routes messages between its islands
    itself (``crossing`` holds those for islands in other hosts).
    """

    def __init__(
        self,
        default_rate_hz: float,
        record_kernel_events: int,
        routes: dict,
        handled_kills: set,
        now: int = 0,
        windowed: bool = False,
        batching: bool = False,
        recording: bool = True,
        rate_groups: bool = False,
        fleets: bool = False,
        row_blocks: bool = False,
    ):
        self.env = simpy.Environment(initial_time=now)
        self._instant_wakes = InstantWakes(self.env)
        self.recording = recording  # windowed: envelopes travel to the driver to be recorded
        self._now = now
        self.windowed = windowed
        self.batching = batching
        self.rate_groups = rate_groups and windowed  # in lockstep the driver wakes each island
        self.fleets = fleets
        self._fleets = Fleets() if fleets else None  # its rate groups' hops through fleet forms
        # windowed, a rate group's alike members run as rows (hopsim.kernel.blocks), their
        # envelopes to record encoded from the rows
        self.recorder = _Outbox(self) if recording else None
        self._window_end = -1
        self._rate_groups = RateGroups(
            self._instant_wakes.schedule,
            self._propagate_batch if batching or fleets else None,
            self.after_barrier,
            self if row_blocks and self.rate_groups else None,
        )
        self.default_rate_hz = default_rate_hz
        self.record_kernel_events = record_kernel_events
        self.routes = routes  # topic -> [(island name, model name, port)]
        self._routes_here: dict[str, list[tuple]] = {}
        self.handled_kills = set(handled_kills)
        self.islands: dict[str, Island] = {}
        self.e_stop = False
        self._wakes_at: dict[int, list[Island]] = {}
        self._reset()

    @property
    def now(self) -> int:
        return int(self.env.now) if self.windowed else self._now

    @property
    def kernel_events_wanted(self) -> bool:
        """The host has no recorder: it forwards kernel events to the driver's when asked to
        (``record_kernel_events``: 0 none, 1 events, 2 events and every barrier)."""
        return bool(self.record_kernel_events)

    @property
    def barrier_events_wanted(self) -> bool:
        return self.record_kernel_events >= 2

    def _reset(self) -> None:
        self.outbox: list[tuple[Any, bool, str]] = []  # (envelope, queue, source island)
        self.wakes: dict[str, tuple[int, int]] = {}  # island -> (t_ns, generation)
        self.forgotten: list[str] = []
        self.crossing: list[tuple] = []  # (island, deliver_ns, envelope, model, port, rank)
        self.published = 0

    def schedule_wake(self, island: Island, t_ns: int, gen: int) -> None:
        if not self.windowed:
            self.wakes[island.name] = (t_ns, gen)
            return
        self._instant_wakes.schedule(island, t_ns, gen)
        if self.batching and island.has_compiled_hop:
            self._wakes_at.setdefault(t_ns, []).append(island)

    def rate_group(self, key: tuple) -> RateGroup | None:
        """Windowed, the rate group of the periodic schedule ``key`` among this host's islands (in
        lockstep the driver wakes each island: none)."""
        return self._rate_groups.group(key) if self.rate_groups else None

    def group_stats(self) -> dict[str, dict]:
        """This host's rate groups' counters (:meth:`RateGroups.stats`) and its fleet forms' calls."""
        return {"rate_groups": self._rate_groups.stats(), "fleet_calls": self._fleets.calls if self._fleets else 0}

    # ------------------------------------------------------------------ row blocks' owner
    def blocks_allowed(self) -> bool:
        """Windowed (the host runs its islands' instants itself), no barrier recorded as a
        kernel event."""
        return self.windowed and not self.barrier_events_wanted

    @property
    def run_end_ns(self) -> int:
        """The host knows where the run returns from its islands' stops only."""
        return NEVER

    def alone_through(self, t_ns: int) -> bool:
        """As :meth:`Simulation.alone_through`, inside the current window."""
        return self._instant_wakes.sole and t_ns <= self._window_end and self.env.peek() > t_ns and not self.e_stop

    def clock_through(self, t_ns: int) -> None:
        self.env.timeout(t_ns - self.env.now)

    def island_names(self) -> list[str]:
        """Every island's name, this host's and the others' (the routes name them all)."""
        names = dict.fromkeys(self.islands)
        for subscribers in self.routes.values():
            names.update(dict.fromkeys(target for target, _, _ in subscribers))
        return list(names)

    def routes_of(self, topic: str) -> list[tuple]:
        """The subscribers of ``topic`` (those in other hosts through stand-ins, slot None)."""
        return self._resolved(topic)

    def count_fleet_call(self) -> None:
        self._fleets.counted()

    def island_stats(self, islands) -> dict[str, dict]:
        """The counters of ``islands`` (by name), with what their row blocks hold for them."""
        out = {island.name: dict(island.stats) for island in islands}
        for name, gains in self._rate_groups.pending_island_stats().items():
            if name in out:
                for key, n in gains.items():
                    out[name][key] += n
        return out

    def unblock(self) -> None:
        """Every row block stores its members back."""
        self._rate_groups.unblock()

    def _propagate_batch(self, islands: list[Island], t_ns: int) -> None:
        """A rate group's compiled hops ending at ``t_ns``: through fleet forms, the rest batched
        (as :meth:`Simulation._propagate_batch`)."""
        propagate_together(islands, t_ns, self._fleets, self.batching)

    def take_batch(self, t_ns: int) -> list[Island] | None:
        """Windowed, the islands of this host whose hops end at ``t_ns`` (once per instant)."""
        return self._wakes_at.pop(t_ns, None) if self._wakes_at else None

    def publish(self, env, island: Island, queue: bool) -> None:
        if not self.windowed:
            for target, model, port in self.routes.get(env.topic, ()):
                if target == island.name and env.deliver_ns == env.t_ns:
                    island.deliver_now(island.by_name[model], port, env.payload, env.t_ns)
            self.outbox.append((env, queue, island.name))
            return
        # Simulation.publish's routing: other hosts' islands are stand-ins collecting ``crossing``
        self.published += 1
        deliver_to_subscribers(env, island.name, self._resolved(env.topic))
        if self.recording:
            self.outbox.append((env, queue, island.name))

    def _resolved(self, topic: str) -> list[tuple]:
        """The subscribers of ``topic`` as :func:`deliver_to_subscribers` takes them (no host
        merges islands, so an island is its own home)."""
        subs = self._routes_here.get(topic)
        if subs is None:
            subs = self._routes_here[topic] = []
            for target, model, port in self.routes.get(topic, ()):
                here = self.islands.get(target)
                if here is None:
                    subs.append((_Elsewhere(self, target, model), target, None, port))
                else:
                    subs.append((here, target, here.by_name[model], port))
        return subs

    def served_at_once(self, topic: str, source_island: Island) -> None:
        """Every message goes through :meth:`publish` here (it reaches the driver's outbox)."""
        return None

    def count_published(self, n: int) -> None:
        self.published += n

    def record_kernel_event(self, island: Island, kind: int, name: str, detail: str = "", **fields) -> None:
        if self.record_kernel_events:
            self.outbox.append((island.kernel_event_envelope(kind, name, detail, **fields), True, island.name))

    def after_barrier(self, island: Island, t: int) -> None:
        """The island's state is checked here (:func:`check_state_finite`); stop callbacks run in
        the driver, after the call returns."""
        check_state_finite(island, t)

    def forget_event(self, ev) -> None:
        self.forgotten.append(ev.name)


class _Outbox:
    """A host's row blocks' recorder: their instants' columns go to the driver with the
    envelopes, in the order recorded (:mod:`hopsim.bus.shipping`)."""

    __slots__ = ("services",)

    def __init__(self, services: HostServices):
        self.services = services

    def record(self, env, latency_ns: int = 0, queue: bool = False) -> None:
        self.services.outbox.append((env, queue, env.source))

    def record_columns(self, columns) -> None:
        self.services.outbox.append((columns, None, ""))


class _Elsewhere:
    """An island in another host, as a subscriber: what reaches it waits in ``crossing``."""

    __slots__ = ("model", "name", "services")

    def __init__(self, services: HostServices, name: str, model: str):
        self.services, self.name, self.model = services, name, model

    def enqueue(self, deliver_ns: int, env, slot, port: str, rank: int) -> None:
        self.services.crossing.append((self.name, deliver_ns, env, self.model, port, rank))


class IslandHost:
    """The Ray actor hosting one or more islands (with their models)."""

    def __init__(
        self,
        blob: bytes,
        default_rate_hz: float,
        record_kernel_events: int,
        routes: dict,
        handled_kills: set,
        now: int = 0,
        windowed: bool = False,
        recording: bool = True,
        batching: bool = False,
        rate_groups: bool = False,
        fleets: bool = False,
        row_blocks: bool = False,
    ):
        self.services = HostServices(
            default_rate_hz,
            record_kernel_events,
            routes,
            handled_kills,
            now,
            windowed,
            batching,
            recording,
            rate_groups,
            fleets,
            row_blocks,
        )
        with owning_unpickled_islands(self.services):
            islands = cloudpickle.loads(blob)
        for island in islands:
            island.sim = self.services
            self.services.islands[island.name] = island
        self._stopped_at: int | None = None  # the e_stop that ended this host's last window
        self._shipping = ColumnsSender()  # what it recorded, to the driver

    def pid(self) -> int:
        """This host's process id (tests kill it from outside)."""
        return os.getpid()

    def call(self, now: int, ops: list[tuple[str, str, tuple]]):
        """Run ``ops`` [(island, operation, args)] in order at kernel time ``now`` (ns)."""
        svc = self.services
        svc._now = now
        results = []
        try:
            for name, op, args in ops:
                results.append(self._run_op(name, op, args))
        except ActorKilled as killed:
            return ("killed", killed.actor, killed.t_ns, killed.key)
        if svc.windowed:
            return ([], {}, False, [], results)  # what the ops published leaves with the next window
        out = (svc.outbox, svc.wakes, svc.e_stop, svc.forgotten, results)
        svc._reset()
        return out

    def run_window(self, end_ns: int, ops: list[tuple[str, str, tuple]], pipelined: bool = False, *upstream):
        """Apply ``ops``, then run every barrier of this host's islands up to ``end_ns`` (inclusive).

        ``pipelined``: the driver submitted this window before it had the previous one's replies
        (:mod:`hopsim.kernel.distributed.windows`); ``upstream`` then holds the previous window's crossing
        parts of the hosts that can send to this one. Their messages for this host's islands are
        enqueued first, as the driver would have sent them. A kill or a stop in any of them, or a
        stop here in the previous window, means the run ends there, so this window runs nothing
        (after a stop, the messages published after it are dropped, as the driver drops them).

        Returns two parts (a Ray call with ``num_returns=2``):

        - for the other hosts: ("ok", crossing messages, the instant an e_stop ended the window or
          None), or a ``killed`` tuple;
        - for the driver: (what to record, as :class:`ColumnsSender` packs it, crossing
          messages, forgotten events, the stop's instant or None, the next pending instant or
          None, envelopes published, CPU seconds this host spent, the last instant it
          processed), or the same ``killed`` tuple.

        After an e_stop the host finishes that instant and goes no further.
        """
        svc, env = self.services, self.services.env
        svc._window_end = end_ns
        stopped_at = None
        t0 = time.thread_time()
        try:
            for name, op, args in ops:
                self._run_op(name, op, args)
            if pipelined and not self._take_upstream(upstream):
                return ("ok", [], None), ([], [], [], None, self._next_pending(), 0, 0.0, int(env.now))
            while True:
                nxt = env.peek()
                if nxt > end_ns or (stopped_at is not None and nxt > stopped_at):
                    break
                env.step()
                if svc.e_stop and stopped_at is None:
                    stopped_at = int(env.now)
        except ActorKilled as killed:
            reply = ("killed", killed.actor, killed.t_ns, killed.key)
            return reply, reply
        self._stopped_at = stopped_at
        reply = (
            self._shipping.pack([o[:2] for o in svc.outbox]),
            svc.crossing,
            svc.forgotten,
            stopped_at,
            self._next_pending(),
            svc.published,
            time.thread_time() - t0,
            int(env.now),
        )
        crossing = ("ok", svc.crossing, stopped_at)
        svc._reset()
        return crossing, reply

    def _next_pending(self) -> int | None:
        """The instant (ns) of this host's next wake-up, or None when nothing is planned."""
        nxt = self.services.env.peek()
        return None if nxt == simpy.core.Infinity else int(nxt)

    def _take_upstream(self, upstream: tuple) -> bool:
        """Enqueue the messages of the feeding hosts' previous window for this host's islands;
        False when that window ended the run (a kill or a stop there, or a stop here)."""
        if any(part[0] == "killed" for part in upstream):
            return False
        stops = [part[2] for part in upstream if part[2] is not None]
        if self._stopped_at is not None:
            stops.append(self._stopped_at)
        cut = min(stops) if stops else None
        islands = self.services.islands
        for _, crossing, _ in upstream:
            for target, deliver_ns, env, model, port, rank in crossing:
                island = islands.get(target)
                if island is not None and (cut is None or env.t_ns <= cut):
                    island.enqueue(deliver_ns, env, island.by_name[model], port, rank)
        return cut is None

    def _run_op(self, name: str, op: str, args: tuple):
        """One operation on island ``name``, or on every island of this host (``ALL_ISLANDS``:
        the results by island name)."""
        if name == HOST:
            if op == "group_stats":
                return self.services.group_stats()
            raise ValueError(f"no host operation {op!r}")
        if name != ALL_ISLANDS:
            return self._apply(self.services.islands[name], op, args)
        if op == "stats":
            return self.services.island_stats(self.services.islands.values())
        return {island.name: self._apply(island, op, args) for island in self.services.islands.values()}

    def _apply(self, island: Island, op: str, args: tuple):
        if op == "wake":
            island.wake(args[0])
        elif op == "enqueue":
            deliver_ns, env, model, port, rank = args
            island.enqueue(deliver_ns, env, island.by_name[model], port, rank)
        elif op == "capture":
            return island.capture_state()
        elif op == "model":
            island.unblock()
            return island.by_name[args[0]].model
        elif op == "stats":
            return self.services.island_stats([island])[island.name]
        elif op == "t":
            return island.t
        elif op == "stop_and_resume":
            island.add_stop(args[0])
            island.resume()
        else:  # start, add_stop, resume, settle, add_event, add_zero_crossing
            getattr(island, op)(*args)
        return None


def host_lost_errors() -> tuple[type[Exception], ...]:
    """The Ray errors of a call to a host that is gone: its process or its node died, or the node
    it was placed on was gone before it started."""
    import ray

    return (ray.exceptions.RayActorError, ray.exceptions.ActorUnschedulableError)


class RemoteIsland:
    """The driver's stand-in for an island that lives in an :class:`IslandHost`.

    Under windowed synchronization (``sync`` set) operations that return nothing are queued and
    travel with the host's next window; operations that return a value take the queue along.
    """

    remote = True

    @property
    def current(self) -> RemoteIsland:
        return self  # islands in hosts are never merged

    def __init__(self, sim, island: Island, host):
        self.sim = sim
        self.name = island.name
        self.host = host
        self.slots = island.slots  # names and wiring only; the live ones are remote
        self.by_name = island.by_name
        self.t = island.t
        self._gen = 0
        self.sync = None  # the WindowedSync, when windowed

    def _call(self, *ops):
        import ray

        if self.sync is not None:
            ops = self.sync.take_pending(self.host) + list(ops)
        try:
            reply = ray.get(self.host.call.remote(self.sim.now, list(ops)))
        except host_lost_errors() as err:
            raise ActorKilled(f"island host of {self.name}", self.sim.now) from err
        if reply[0] == "killed":
            _, actor, t_ns, key = reply
            self.sim.handled_kills.add(key)
            raise ActorKilled(actor, t_ns, key)
        outbox, wakes, e_stop, forgotten, results = reply
        for env, queue, source in outbox:
            self.sim.publish(env, self.sim.islands[source], queue, served_in_island=True)
        for name, (t_ns, gen) in wakes.items():
            self.sim.islands[name]._schedule(t_ns, gen)
        for ev_name in forgotten:
            ev = self.sim.find_event(ev_name)
            if ev is not None:
                self.sim.forget_event(ev)
        if e_stop and not self.sim.e_stop:
            self.sim.e_stop = True
        return results

    def _send(self, op: str, *args) -> None:
        """An operation with no result: queued for the next window when windowed."""
        if self.sync is not None:
            self.sync.send(self.host, (self.name, op, args))
        else:
            self._call((self.name, op, args))

    def _ask(self, op: str, *args):
        return self._call((self.name, op, args))[-1]

    def _schedule(self, t_ns: int, gen: int) -> None:
        self._gen = gen
        self.sim.env.timeout(t_ns - self.sim.now, value=gen).callbacks.append(self._wake)

    def _wake(self, event) -> None:
        if event.value != self._gen:
            return  # superseded; the host would ignore it too
        self._call((self.name, "wake", (event.value,)))
        self.t = self.sim.now
        self.sim.after_barrier(self, self.t)

    # the operations the simulation performs on its islands
    def start(self) -> None:
        self._send("start")

    def add_stop(self, t_ns: int) -> None:
        self._send("add_stop", t_ns)

    def resume(self) -> None:
        self._send("resume")

    def settle(self, t_ns: int) -> None:
        self._send("settle", t_ns)
        self._gen = -1  # the host voided its plan

    def enqueue(self, deliver_ns: int, env, slot, port: str, rank: int) -> None:
        self._send("enqueue", deliver_ns, env, slot.name, port, rank)

    def add_event(self, ev) -> None:
        self._send("add_event", ev)

    def add_zero_crossing(self, zc) -> None:
        self._send("add_zero_crossing", zc)

    def capture_state(self, copied: bool = True) -> dict:
        """The island's part of a checkpoint, from its host (sent: a copy whatever ``copied`` says)."""
        return self._ask("capture")

    def model(self, name: str):
        return self._ask("model", name)

    @property
    def stats(self) -> dict:
        return self._ask("stats")


def place_islands(
    sim,
    islands: dict[str, Island],
    groups: list[list[str]],
    ray_remote_cls,
    windowed: bool = False,
    nodes: list[str | None] | None = None,
) -> dict[str, RemoteIsland]:
    """Ship ``islands`` to hosts, one host per group of island names; return their stand-ins.
    ``nodes``: the Ray node each group's host runs on (None: where Ray puts it)."""
    routes = {
        topic: [(sub.island, sub.model, sub.port) for sub in t.subscribers] for topic, t in sim.topics.topics.items()
    }
    recording = sim.recorder is not None
    proxies = {}
    for i, group in enumerate(groups):
        members = [islands[n] for n in group]
        blob = cloudpickle.dumps(members)
        node = nodes[i] if nodes else None
        cls = ray_remote_cls
        if node is not None:
            from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

            cls = ray_remote_cls.options(scheduling_strategy=NodeAffinitySchedulingStrategy(node, soft=False))
        host = cls.remote(
            blob,
            sim.default_rate_hz,
            kernel_event_level(sim, recording),
            routes,
            set(sim.handled_kills),
            sim.now,
            windowed,
            recording,
            sim.batching,
            sim.rate_groups,
            sim.fleets,
            sim.row_blocks,
        )
        for island in members:
            proxies[island.name] = RemoteIsland(sim, island, host)
    return proxies
