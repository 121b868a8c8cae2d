"""The hop executive: a simpy environment, the islands, the bus and the user's controls of time.

simpy's event queue is the single source of global time order: every island barrier is a simpy
event at the barrier's instant (integer ns). Islands interact only through bus messages, and a
message crossing islands is seen no earlier than one nanosecond after it was published, so the
order in which islands process the same instant never changes a result; the recorder writes the
envelopes of one instant in the bus's total order (time, priority, source, sequence).

Users drive time with :meth:`Simulation.advance_to`, :meth:`Simulation.advance_by`,
:meth:`Simulation.step` and stop callbacks; a model or event ends a run by setting ``sim.e_stop``.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import simpy

from hopsim.bus.envelope import Envelope
from hopsim.bus.router import deliver_to_subscribers, served_at_once
from hopsim.bus.topics import Subscription, TopicRegistry, WiringError, kernel_topic
from hopsim.kernel.bounds import check_state_finite
from hopsim.kernel.errors import CheckpointError, ContactInProgress
from hopsim.kernel.events import IoStepEvent, MethodEvent, TimedEvent
from hopsim.kernel.faults import FAULT_PORT, KILL, check_payload, fault_topic
from hopsim.kernel.fleet import Fleets
from hopsim.kernel.island import Island, propagate_together
from hopsim.kernel.model import Model, ModelContext
from hopsim.kernel.monitor import Monitor
from hopsim.kernel.owner import owner_in_this_process
from hopsim.kernel.rate_group import RateGroup, RateGroups
from hopsim.kernel.runtime import LocalRuntime
from hopsim.kernel.simtime import NS_PER_S, seconds, to_seconds
from hopsim.kernel.slot import Slot
from hopsim.kernel.wakes import InstantWakes
from hopsim.kernel.zero_crossing import ZeroCrossing
from hopsim.schemas import Fault, KernelEvent

SCENARIO_SOURCE = "scenario"


def _topic_of(tie) -> str:
    return tie.topic if isinstance(tie, Tie) else tie


@dataclass(frozen=True)
class Tie:
    """Where a port is connected: a topic, and for outputs a latency and a priority.

    ``latency_s`` delays delivery to subscribers (0: same instant inside the island; at least
    1 ns for another island). Lower ``priority`` is delivered first among simultaneous messages.
    """

    topic: str
    latency_s: float = 0.0
    priority: int = 0


class Simulation:
    """A hop executive over islands of models.

    Parameters are the run ``seed`` (every model's generator derives from it and the model's name),
    the default model rate for models with :class:`~hopsim.kernel.model.DefaultRate` I/O, the
    runtime (local by default) and an optional recorder that receives every envelope.
    ``rate_groups`` (:mod:`hopsim.kernel.rate_group`), ``fleets`` (:mod:`hopsim.kernel.fleet`) and
    ``batching`` and ``row_blocks`` (:mod:`hopsim.kernel.blocks`) change how fast a run goes,
    never its result.
    """

    # more attributes than CPython keeps inline (hopsim.kernel.unpickling), read for every message;
    # a scenario may keep its own (``sim.contact_world``) in the __dict__
    __slots__ = (
        "__dict__",
        "_at_once",
        "_cpu_start_ns",
        "_events",
        "_fleets",
        "_halt_at",
        "_injections",
        "_instant_wakes",
        "_models",
        "_monitors",
        "_publish_counts",
        "_pulled",
        "_rate_groups",
        "_recorder",
        "_routes",
        "_run_end",
        "_scenario_seq",
        "_slots",
        "_started",
        "_stop_callbacks",
        "_stop_ids",
        "_stop_seq",
        "_wakes_at",
        "batching",
        "breaks",
        "cpu_accounting",
        "default_rate_hz",
        "e_stop",
        "env",
        "fleets",
        "handled_kills",
        "islands",
        "playback",
        "rate_groups",
        "record_barriers",
        "record_kernel_events",
        "row_blocks",
        "runtime",
        "scenario_params",
        "scene",
        "seed",
        "stop_reason",
        "topics",
        "windows",
    )

    def __init__(
        self,
        seed: int = 0,
        default_rate_hz: float = 1.0,
        runtime=None,
        recorder=None,
        record_kernel_events: bool = True,
        cpu_accounting: bool = False,
        batching: bool = False,
        record_barriers: bool = False,
        rate_groups: bool = True,
        fleets: bool = True,
        row_blocks: bool = True,
    ):
        self.seed = int(seed)
        self.default_rate_hz = float(default_rate_hz)
        self.runtime = runtime or LocalRuntime()
        self._recorder = recorder
        self.record_kernel_events = record_kernel_events
        self.record_barriers = record_barriers  # a BARRIER kernel event per island per barrier (debugging)
        self.cpu_accounting = cpu_accounting
        self._cpu_start_ns: int | None = None
        self.env = simpy.Environment(initial_time=0)
        self._instant_wakes = InstantWakes(self.env)
        self.islands: dict[str, Island] = {}
        self.topics = TopicRegistry()
        self.breaks: set[str] = set()
        self.e_stop = False
        self.stop_reason: str | None = None
        self._slots: dict[str, Slot] = {}
        self._models: dict[str, Model] = {}
        self._events: dict[str, TimedEvent] = {}
        self._stop_callbacks: list[tuple[int, Callable[[Simulation], bool]]] = []
        self._stop_ids = 0
        self._halt_at: int | None = None
        self._started = False
        self._scenario_seq = 0
        self._publish_counts = 0
        self._routes: dict[str, list] = {}
        self._at_once: dict[tuple, list | None] = {}  # (topic, source home) -> served_at_once, while nothing records
        self._pulled: set[str] = set()  # models copied back from hosts at the end of a run
        self.playback = None  # a PlaybackPlan during partial replay
        self.scenario_params = None  # the validated parameters, when built by a scenario
        self._stop_seq = 0
        self._injections: list[tuple[Envelope, bool]] = []  # injected, not yet recorded
        self.handled_kills: set = set()  # kill faults already recovered from (kept across restores)
        self._monitors: list[Monitor] = []
        self.batching = batching  # propagate islands whose hops coincide as one batch
        self.rate_groups = rate_groups  # islands on one periodic schedule share its barriers
        self.fleets = fleets  # a rate group's hops through their models' fleet forms
        self.row_blocks = row_blocks  # a rate group's alike members run as rows (hopsim.kernel.blocks)
        self._fleets = Fleets()
        self._rate_groups = self._new_rate_groups()
        self._wakes_at: dict[int, list[Island]] = {}
        self._run_end = 0  # where the current run returns (ns)
        self.windows = None  # the WindowedSync of islands in hosts (Ray), set by the runtime
        # what surrounds the vehicles, for viewers (``volume_N``: the test volume's lower and upper
        # corners, m, frame N; ``bodies``: {vehicle: {"radius_m", "port_B" (unit, body frame)}});
        # written into a recording's run metadata; no model reads it
        self.scene: dict = {}

    @property
    def recorder(self):
        """What receives every envelope (None: nothing is recorded)."""
        return self._recorder

    @recorder.setter
    def recorder(self, recorder) -> None:
        self.unblock()  # a row block records as it was told when formed
        changes_what_is_read = self._started and (recorder is None) != (self._recorder is None)
        if changes_what_is_read and self.windows is not None:
            raise RuntimeError(
                "attach or remove the recorder before the run starts: islands in other "
                "processes learnt at the start which outputs nobody reads"
            )
        self._recorder = recorder
        self._at_once = {}
        if changes_what_is_read:
            self._mark_unread_outputs()

    # ------------------------------------------------------------------ assembly
    def add_island(
        self, name: str, integrator=None, n_integration_steps: int = 1, end_of_step_derivative: bool = False
    ) -> Island:
        """Create an island: bodies integrated together, with the models attached to them."""
        self._check_not_started("add an island")
        if not name or "/" in name:
            raise ValueError(f"island name {name!r} must be non-empty and contain no '/'")
        if name in self.islands:
            raise ValueError(f"island {name!r} exists already")
        island = Island(self, name, integrator, n_integration_steps, end_of_step_derivative)
        self.islands[name] = island
        return island

    def add_model(
        self, model: Model, island: str, ties: dict[str, str | Tie] | None = None, params: dict | None = None
    ) -> Model:
        """Place a model in an island and tie its ports to topics.

        An untied port uses the topic ``<island>/<port>``. Returns the model (for a local
        runtime, the object the kernel calls; under Ray, continuous models only).
        """
        self._check_not_started("add a model")
        if island not in self.islands:
            raise ValueError(f"no island {island!r}; create it with add_island first (islands: {sorted(self.islands)})")
        if model.name in self._slots:
            raise ValueError(f"a model named {model.name!r} exists already")
        ties = dict(ties or {})
        original = model
        if self.playback is not None:
            out_topics = {port: _topic_of(ties.get(port, f"{island}/{port}")) for port in model.outputs}
            model = self.playback.stand_in(model, out_topics)
            ties = {k: v for k, v in ties.items() if k in model.inputs or k in model.outputs}
        unknown = set(ties) - set(model.inputs) - set(model.outputs)
        if unknown:
            raise WiringError(
                f"{model.name} has no port(s) {sorted(unknown)}; inputs "
                f"{sorted(model.inputs)}, outputs {sorted(model.outputs)}"
            )
        ties_in: dict[str, str] = {}
        for port, spec in model.inputs.items():
            tie = ties.get(port, f"{island}/{port}")
            topic = tie.topic if isinstance(tie, Tie) else tie
            self.topics.add_subscriber(topic, spec.msg_type, spec.queue, Subscription(island, model.name, port))
            ties_in[port] = topic
        ties_out: dict[str, tuple[str, int, int, bool]] = {}
        for port, spec in model.outputs.items():
            tie = ties.get(port, f"{island}/{port}")
            tie = tie if isinstance(tie, Tie) else Tie(tie)
            if tie.latency_s < 0:
                raise WiringError(f"{model.name}.{port}: latency must be >= 0 s, got {tie.latency_s}")
            self.topics.add_publisher(tie.topic, spec.msg_type, spec.queue, model.name)
            ties_out[port] = (tie.topic, seconds(tie.latency_s), tie.priority, spec.queue)
        # every model takes faults: at least ``kill``, plus the kinds it lists in accepts_faults
        self.topics.add_subscriber(fault_topic(model.name), Fault, True, Subscription(island, model.name, FAULT_PORT))
        ctx = ModelContext(model.name, island, self.seed, dict(params or {}))
        handle = self.runtime.handle(model, ctx)
        slot = Slot(handle, model, self.islands[island], ties_in, ties_out)
        slot.ctx = ctx
        self.islands[island].add_slot(slot)
        self._slots[model.name] = slot
        self._models[model.name] = model
        return original  # during partial replay the scenario keeps its (detached) object

    def add_break(self, topic: str) -> None:
        """Break an algebraic loop on ``topic``: its readers see it one update late."""
        self.breaks.add(topic)

    def model(self, name: str) -> Model:
        """The model called ``name`` (for a model in another process, its island's or its own
        actor's, a copy of it now: the object built here stopped changing when it left)."""
        self.unblock()
        if name not in self._pulled:
            copy = self._copy_from_afar(name)
            if copy is not None:
                return copy
        return self._models[name]

    def _copy_from_afar(self, name: str) -> Model | None:
        """A copy of model ``name`` as it is now in the process that runs it, or None when it
        runs here."""
        slot = self._slots[name]
        island = self.islands[slot.island.name]
        if getattr(island, "remote", False):
            return island.model(name)
        if slot.handle.remote:  # per-model placement: the model is an actor of its own
            return slot.handle.model_now()
        return None

    def pull_models(self) -> None:
        """Copy every model that runs in another process here (before they stop)."""
        for name in self._slots:
            copy = None if name in self._pulled else self._copy_from_afar(name)
            if copy is not None:
                self._models[name] = copy
                self._pulled.add(name)

    # ------------------------------------------------------------------ events
    def at(
        self,
        times: float | Iterable[float],
        callback: Callable[[TimedEvent], Any],
        name: str | None = None,
        island: str | None = None,
        priority: int = 0,
        transient: bool = False,
    ) -> list[str]:
        """Timed event(s) at ``times`` (seconds). A list makes one-shot events named ``name@t``.

        With ``island`` the event is a barrier of that island (it may touch its models); without,
        the event belongs to the kernel (progress, e_stop) and splits no island's hop.
        A ``transient`` event (a progress display) is not part of the simulation's state: it is
        left out of checkpoints.
        """
        many = not isinstance(times, (int, float))
        time_list = list(times) if many else [times]
        base = name or getattr(callback, "__name__", "event")
        names = []
        for t_s in time_list:
            ev_name = f"{base}@{t_s:g}" if many else base
            if ev_name in self._events:
                raise ValueError(f"an event named {ev_name!r} exists already")
            ev = TimedEvent(ev_name, seconds(t_s), callback, priority, island, sim=self)
            ev.transient = transient
            ev.from_build = not self._started
            self._schedule_event(ev)
            names.append(ev_name)
        return names

    def _schedule_event(self, ev: TimedEvent) -> None:
        if ev.t_ns < self.env.now or (self._started and ev.t_ns == self.env.now and ev.island):
            raise ValueError(f"event {ev.name!r} at {to_seconds(ev.t_ns)} s is not in the future (now {self.time} s)")
        self._events[ev.name] = ev
        if ev.island is None:
            self.env.timeout(ev.t_ns - self.env.now, value=ev).callbacks.append(self._fire_global)
        else:
            if ev.island not in self.islands:
                raise ValueError(f"event {ev.name!r}: no island {ev.island!r}")
            self.islands[ev.island].add_event(ev)

    def _fire_global(self, sim_event) -> None:
        ev: TimedEvent = sim_event.value
        if ev.cancelled:
            return
        if ev.fire():
            self.env.timeout(ev.t_ns - self.env.now, value=ev).callbacks.append(self._fire_global)
        else:
            self.forget_event(ev)
        self.check_stop()

    def forget_event(self, ev: TimedEvent) -> None:
        if self._events.get(ev.name) is ev:
            del self._events[ev.name]

    def find_event(self, name: str) -> TimedEvent | None:
        return self._events.get(name)

    def delete_event(self, name: str) -> None:
        ev = self._events.pop(name, None)
        if ev is None:
            raise KeyError(f"no event {name!r}; events: {sorted(self._events)}")
        ev.cancelled = True

    def list_events(self) -> list[str]:
        return sorted(self._events, key=lambda n: self._events[n].key())

    def add_model_event(self, name: str, model: str, method: str, callback, before: bool = True) -> None:
        """Run ``callback(event, *args)`` before (or after) every call of ``model.method``."""
        self._check_not_started("add a model-method event")
        slot = self._slot(model)
        if not hasattr(slot.cls, method):
            raise ValueError(f"{model} has no method {method!r}")
        slot.method_events.setdefault(method, []).append(MethodEvent(name, model, method, callback, before))

    def add_io_event(self, name: str, model: str, when: str, callback: Callable[[int], Any]) -> None:
        """Run ``callback(t_ns)`` at the beginning or end of each of ``model``'s I/O steps."""
        if when not in ("begin", "end"):
            raise ValueError(f"when must be 'begin' or 'end', not {when!r}")
        self._slot(model).io_events[when].append(IoStepEvent(name, model, when, callback))

    def add_zero_crossing(
        self,
        name: str,
        island: str,
        fn: Callable[[int], float],
        callback: Callable[[int], Any],
        direction: str = "falling",
        eps_s: float = 1e-6,
    ) -> ZeroCrossing:
        """Watch ``fn(t_ns)`` for a sign change; the hop ends within ``eps_s`` before it.

        The callback runs at that barrier, then the condition is removed. The run goes on unless
        the callback sets ``sim.e_stop``.
        """
        zc = ZeroCrossing(name, fn, callback, direction, max(1, seconds(eps_s)), island=island)
        self.islands[island].add_zero_crossing(zc)
        return zc

    def add_monitor(self, name: str, rate_hz: float, islands: Iterable[str], check: Callable[[int], None]) -> Monitor:
        """Run ``check(t_ns)`` at ``rate_hz`` at a barrier shared by ``islands``, after each of them
        has processed the instant and before any plans its next hop (see :mod:`hopsim.kernel.monitor`).
        Only the check may merge or split islands (:func:`hopsim.kernel.merge.regroup`)."""
        self._check_not_started("add a monitor")
        if any(m.name == name for m in self._monitors):
            raise ValueError(f"a monitor named {name!r} exists already")
        unknown = [i for i in islands if i not in self.islands]
        if unknown:
            raise ValueError(f"monitor {name!r}: no island(s) {unknown}; islands: {sorted(self.islands)}")
        monitor = Monitor(self, name, rate_hz, [self.islands[i] for i in islands], check, self.now)
        self._monitors.append(monitor)
        return monitor

    def add_stop_callback(self, fn: Callable[[Simulation], bool]) -> int:
        """``fn(sim)`` is evaluated after every barrier; True ends the run at that instant.

        With islands in Ray hosts, add stop callbacks before the run starts: they make the hosts
        advance barrier by barrier instead of in windows."""
        if self.windows is not None:
            raise RuntimeError(
                "add stop callbacks before the run starts: islands in Ray hosts already "
                "advance in windows, and a stop callback needs them barrier by barrier"
            )
        self._stop_ids += 1
        self._stop_callbacks.append((self._stop_ids, fn))
        return self._stop_ids

    def inject(self, topic: str, msg: Any, t_s: float, priority: int = 0) -> None:
        """Publish ``msg`` on ``topic`` at ``t_s`` from outside the models (a command, a fault)."""
        t_ns = seconds(t_s)
        if t_ns < self.env.now or (self._started and t_ns <= self.env.now):
            raise ValueError(f"cannot inject on {topic!r} at {t_s} s: the run is at {self.time} s")
        topic_obj = self.topics.get(topic)
        if not isinstance(msg, topic_obj.msg_type):
            raise TypeError(f"topic {topic!r} carries {topic_obj.type_name}, not {type(msg).__name__}")
        env = Envelope(t_ns, t_ns, SCENARIO_SOURCE, topic, self._scenario_seq, priority, msg)
        self._scenario_seq += 1
        for rank, sub in enumerate(topic_obj.subscribers):
            island = self.islands[sub.island]
            island.enqueue(t_ns, env, self._slots[sub.model], sub.port, rank)
        self._schedule_injection_record(env, topic_obj.queue)

    def _schedule_injection_record(self, env: Envelope, queue: bool) -> None:
        """Record an injected envelope when the run reaches its instant."""
        entry = (env, queue)
        self._injections.append(entry)

        def record(_event) -> None:
            self._injections.remove(entry)
            if self.recorder is not None:
                self.recorder.record(env, queue=queue)

        self.env.timeout(env.t_ns - self.env.now).callbacks.append(record)

    def schedule_fault(self, fault: Fault, t_s: float) -> None:
        """Send ``fault`` to its target model at ``t_s`` (a message on ``faults/<target>``), once
        :meth:`check_fault` has passed it (otherwise its ValueError, and nothing is sent)."""
        self.check_fault(fault)
        self.inject(fault_topic(fault.target), fault, t_s)

    def check_fault(self, fault: Fault) -> None:
        """Raise ValueError naming the problem unless the target of ``fault`` exists, accepts its
        kind (naming the models or the kinds it accepts) and can apply it (the target's
        :meth:`Model.check_fault`: a unit it has, a value it can take)."""
        slot = self._slots.get(fault.target)
        if slot is None:
            raise ValueError(
                f"fault {fault.kind!r} for unknown target {fault.target!r}; the models are {sorted(self._slots)}"
            )
        if fault.kind not in slot.accepts_faults and fault.kind != KILL:
            raise ValueError(
                f"{fault.target} does not accept fault {fault.kind!r}; it accepts {[*list(slot.accepts_faults), KILL]}"
            )
        check_payload(fault)
        if fault.kind != KILL:  # the kernel carries out a kill itself
            self._models[fault.target].check_fault(fault)

    # ------------------------------------------------------------------ bus
    def publish(self, env: Envelope, source_island: Island, queue: bool, served_in_island: bool = False) -> None:
        """Record an envelope and deliver it to every subscriber of its topic.

        ``source_island`` is the publisher's home island: messages between different home islands
        arrive at least 1 ns later even while the islands are merged (contact), so that merging
        changes no message's timing. ``served_in_island``: the source island (in a host process)
        already delivered it to its own zero-latency subscribers.
        """
        self._publish_counts += 1
        recorder = self._recorder
        if recorder is not None:
            recorder.record(env, queue=queue)
        routes = self._routes.get(env.topic)
        if routes:
            deliver_to_subscribers(env, source_island.name, routes, served_in_island)

    def served_at_once(self, topic: str, source_island: Island) -> list[tuple] | None:
        """The subscribers ``(inbox, slot, port)`` a zero-latency message on ``topic`` from a model
        of home island ``source_island`` reaches, if it needs no envelope: nothing records and
        every subscriber is of that home island (:func:`hopsim.bus.router.served_at_once`). The
        island hands it to them itself (:meth:`Island.route`); None: :meth:`publish` it."""
        key = (topic, source_island.name)
        try:
            return self._at_once[key]
        except KeyError:
            pass
        here = None
        if self._recorder is None:
            here = served_at_once(self._routes.get(topic, ()), source_island.name)
        self._at_once[key] = here
        return here

    @property
    def kernel_events_wanted(self) -> bool:
        """Whether kernel events are recorded (islands skip building them otherwise)."""
        return self.record_kernel_events and self._recorder is not None

    @property
    def barrier_events_wanted(self) -> bool:
        """Whether each island's every barrier is recorded (off unless asked: replay needs none)."""
        return self.record_barriers and self.kernel_events_wanted

    def record_kernel_event(self, island: Island, kind: int, name: str, detail: str = "", **fields) -> None:
        if self._recorder is None or not self.record_kernel_events:
            return
        self._recorder.record(island.kernel_event_envelope(kind, name, detail, **fields), queue=True)

    # ------------------------------------------------------------------ time
    @property
    def now(self) -> int:
        """Current simulation time (ns)."""
        return int(self.env.now)

    def schedule_wake(self, island, t_ns: int, gen: int) -> None:
        """Wake ``island`` at ``t_ns`` for the barrier it planned there (one simpy event per
        instant for all the islands planned at it)."""
        self._instant_wakes.schedule(island, t_ns, gen)
        if self.batching and island.has_compiled_hop:
            self._wakes_at.setdefault(t_ns, []).append(island)

    def rate_group(self, key: tuple) -> RateGroup | None:
        """The rate group of the periodic schedule ``key`` (None when grouping is off)."""
        return self._rate_groups.group(key) if self.rate_groups else None

    def _new_rate_groups(self) -> RateGroups:
        return RateGroups(
            self._instant_wakes.schedule, self._propagate_batch, self.after_barrier, self if self.row_blocks else None
        )

    def blocks_allowed(self) -> bool:
        """Whether a rate group may run members as a row block now: no stop callback reads the
        models after each barrier, no barrier is recorded as a kernel event, no partial replay,
        the islands are all in this process."""
        return (
            not self._stop_callbacks
            and self.windows is None
            and self.playback is None
            and not self.barrier_events_wanted
        )

    @property
    def run_end_ns(self) -> int:
        """Where the current run returns (ns; it may return earlier: a stop callback, e_stop)."""
        return self._run_end

    def alone_through(self, t_ns: int) -> bool:
        """Whether the wake-up running now (a rate group's row block) is all that happens from now
        up to ``t_ns`` inclusive: the only one at this instant, no other event planned up to
        ``t_ns``, the run going on to it. The block may then take its instants up to ``t_ns``
        at once, as the clock would have woken it for each in turn."""
        return self._instant_wakes.sole and t_ns <= self._run_end and self.env.peek() > t_ns and self._halt_at is None

    def clock_through(self, t_ns: int) -> None:
        """The clock goes on to ``t_ns`` (an event there that does nothing): the instants a block
        took at once (:meth:`alone_through`) have passed when the run returns."""
        self.env.timeout(t_ns - self.env.now)

    def island_names(self) -> list[str]:
        """Every island's name (a row block's rows for vehicles outside it)."""
        return list(self.islands)

    def routes_of(self, topic: str) -> list:
        """The subscribers of ``topic``: [(inbox, subscriber's home island name, slot, port)]."""
        return self._routes.get(topic, [])

    def unblock(self) -> None:
        """Every row block stores its members back (their models are read or changed)."""
        self._rate_groups.unblock()

    def _propagate_batch(self, islands: list[Island], t_ns: int) -> None:
        """The compiled hops of ``islands`` (a rate group's members) ending at ``t_ns``: through
        their bodies' fleet forms (``fleets``), and the others as one batch (``batching``)."""
        if self.batching:
            propagate_together(islands, t_ns, self._fleets if self.fleets else None)
        elif self.fleets:
            for isl in islands:
                if isl._fleet_body is not None:  # else each propagates alone
                    propagate_together(islands, t_ns, self._fleets, batch=False)
                    return

    def take_batch(self, t_ns: int) -> list[Island] | None:
        """The islands planned to wake at ``t_ns`` (once: the first wake at an instant takes them)."""
        return self._wakes_at.pop(t_ns, None) if self._wakes_at else None

    @property
    def time(self) -> float:
        """Current simulation time (s), for display."""
        return self.env.now / NS_PER_S

    def advance_to(self, t_s: float) -> str:
        """Run until every island is at ``t_s`` (or a stop callback or e_stop ends it earlier).

        Returns why it returned: "time", "stop_callback" or "e_stop".
        """
        return self._run_until(seconds(t_s))

    def advance_by(self, dt_s: float) -> str:
        return self._run_until(self.now + seconds(dt_s))

    def step(self, n: int = 1) -> str:
        """Advance by ``n`` default model periods."""
        return self._run_until(self.now + round(n * NS_PER_S / self.default_rate_hz))

    def start(self) -> None:
        """Set up every model and run the initial barrier of every island (t = 0)."""
        if self._started:
            return
        self._prepare()
        self._place()
        for island in self.islands.values():
            island.start()
        for monitor in self._monitors:
            monitor.arm()

    def _place(self) -> None:
        """Let the runtime move islands to other processes (Ray per-island or shards)."""
        place = getattr(self.runtime, "place", None)
        if place is None or not place(self):
            return
        self.rebuild_routes()

    def rebuild_routes(self) -> None:
        """topic -> [(island integrating the subscriber now, its home island's name, slot, port)]."""
        self._at_once = {}
        self._routes = {
            name: [
                (self.islands[sub.island].current, self._slots[sub.model].home.name, self._slots[sub.model], sub.port)
                for sub in topic.subscribers
            ]
            for name, topic in self.topics.topics.items()
        }

    def __reduce__(self):
        # islands shipped to a host may hold the simulation in closures: there it is the host's
        return (owner_in_this_process, ())

    def _prepare(self) -> None:
        """Order the islands, set up the models and the routes; the run counts as started."""
        for island in self.islands.values():
            for slot in island.slots:
                slot.accounting = self.cpu_accounting
            island.finalize(self.now, self.breaks)
        self._cpu_start_ns = time.process_time_ns()
        self._mark_unread_outputs()
        for island in self.islands.values():
            for slot in island.slots:
                slot.call("setup", slot.ctx)
        self.rebuild_routes()
        self._started = True

    def _mark_unread_outputs(self) -> None:
        """Tell every model which of its outputs nobody reads (no subscriber and no recorder):
        the kernel drops those writes, and :meth:`Model.wanted` lets the model skip building them."""
        topics = self.topics.topics
        for slot in self._slots.values():
            unread = (
                frozenset()
                if self._recorder is not None
                else frozenset(port for port, (topic, *_) in slot.out_topics.items() if not topics[topic].subscribers)
            )
            slot.unread = unread
            if unread != slot.ctx.unread_outputs:
                slot.ctx.unread_outputs = unread
                if slot.handle.remote:
                    slot.call("bind", slot.ctx)  # the model's own copy of its context

    def _run_until(self, t_stop: int) -> str:
        if self.e_stop:
            return "e_stop"
        if t_stop < self.now:
            raise ValueError(f"cannot advance to {to_seconds(t_stop)} s: the run is at {self.time} s")
        self.start()
        self._halt_at = None
        self._run_end = t_stop
        if self.windows is not None:
            return self.windows.run_until(t_stop)
        for island in self.islands.values():
            island.add_stop(t_stop)
            island.resume()
        env = self.env
        try:
            while True:
                nxt = env.peek()
                if self._halt_at is not None:
                    if nxt != self._halt_at:
                        break
                elif nxt > t_stop:
                    break
                env.step()
        finally:
            for island in self.islands.values():
                island.settle(self.now)
        # every event of this instant is done: it is final (after an exception it is not: a run
        # that recovers runs it again, a crash's recording ends with what it has)
        if self.recorder is not None:
            self.recorder.flush()
        return self.stop_reason if self._halt_at is not None else "time"

    def after_barrier(self, island: Island, t: int) -> None:
        if type(island) is Island:  # (an island in another process checks its own state there)
            check_state_finite(island, t)
        if self.e_stop or self._stop_callbacks:
            self.check_stop()

    def check_stop(self) -> None:
        """End the run at this instant if ``e_stop`` is set or a stop callback says so."""
        if self._halt_at is not None:
            return
        reason = None
        if self.e_stop:
            reason = "e_stop"
        else:
            fired = [i for i, (_, fn) in enumerate(self._stop_callbacks) if fn(self)]
            if fired:
                reason = "stop_callback"
                for i in reversed(fired):
                    del self._stop_callbacks[i]
        if reason is None:
            return
        self.stop_reason = reason
        self._halt_at = self.now
        if self.recorder is not None and self.record_kernel_events:
            msg = KernelEvent(t_ns=self.now, kind=KernelEvent.STOP, name=reason)
            self.recorder.record(
                Envelope(self.now, self.now, "kernel", kernel_topic(KernelEvent.STOP), self._stop_seq, -1, msg),
                queue=True,
            )
            self._stop_seq += 1
        for island in self.islands.values():
            island.add_stop(self._halt_at)

    # ------------------------------------------------------------------ checkpoints
    @property
    def started(self) -> bool:
        """Whether the run has started (models set up, islands at their first barrier)."""
        return self._started

    def capture_state(self, allow_contact: bool = False, copied: bool = True) -> dict[str, Any]:
        """The dynamic state at the current barrier (the run has returned): the kernel's
        counters and pending events, every island's part and every model's snapshot
        (:mod:`hopsim.kernel.checkpoint` writes it).

        While contact is being resolved (islands merged, or contact conditions armed) it cannot
        be restored yet: :class:`ContactInProgress`, unless ``allow_contact`` (for a state
        hash), in which case merged islands are captured as one. ``copied`` False: the models'
        snapshots may be their own objects, for a state read at once and let go (a state hash)."""
        self.unblock()
        if not self._started:
            raise CheckpointError("a checkpoint needs a started run; advance it first")
        now = self.now
        busy = sorted(
            isl.name for isl in self.islands.values() if not getattr(isl, "remote", False) and isl.resolving_contact
        )
        if busy and not allow_contact:
            raise ContactInProgress(
                f"islands {busy} are resolving contact at {now / 1e9:.9g} s (merged, or "
                f"watching a contact); checkpoints of contact in progress are not supported yet"
            )
        events = {}
        for name, ev in self._events.items():
            if ev.transient or ev.cancelled:
                continue
            if not ev.from_build:
                raise CheckpointError(
                    f"timed event {name!r} was created during the run; only events the "
                    f"scenario registers can be restored from a checkpoint"
                )
            events[name] = ev.t_ns
        islands, models = {}, {}
        for name, isl in self.islands.items():
            if getattr(isl, "absorbed_into", None) is not None:
                continue  # its models and states are part of the island it merged into
            part = isl.capture_state(copied)
            islands[name] = part["island"]
            models.update(part["models"])
        return {
            "t_ns": now,
            "seed": self.seed,
            "e_stop": self.e_stop,
            "scenario_seq": self._scenario_seq,
            "published": self._publish_counts,
            "events": events,
            "stop_callbacks": [i for i, _ in self._stop_callbacks],
            "injections": [(env, queue) for env, queue in self._injections],
            "monitors": {m.name: m.k for m in self._monitors},  # the index of each one's next check
            "islands": islands,
            "models": models,
        }

    def restore_state(self, state: dict[str, Any]) -> None:
        """Take ``state`` (:meth:`capture_state`'s) into this simulation, freshly built by the same
        scenario, parameters and seed and not started. Timed events are matched by name."""
        if self._started:
            raise CheckpointError("restore into a freshly built simulation, before it is started")
        if state["seed"] != self.seed:
            raise CheckpointError(
                f"the checkpoint was taken with seed {state['seed']}, the simulation has seed {self.seed}"
            )
        missing = set(state["models"]) ^ set(self._slots)
        if missing:
            raise CheckpointError(f"the scenario's models differ from the checkpoint's: {sorted(missing)}")
        now = state["t_ns"]
        self._prepare()
        self.env = simpy.Environment(initial_time=now)
        self._instant_wakes = InstantWakes(self.env)
        self._rate_groups = self._new_rate_groups()
        self.e_stop = state["e_stop"]
        self._scenario_seq = state["scenario_seq"]
        self._publish_counts = state["published"]
        kept = set(state["stop_callbacks"])
        self._stop_callbacks = [(i, fn) for i, fn in self._stop_callbacks if i in kept]
        for name, slot in self._slots.items():
            slot.call("restore", state["models"][name])
        for name, ev in list(self._events.items()):
            if name not in state["events"]:
                ev.cancelled = True
                del self._events[name]
                continue
            ev.t_ns = state["events"][name]
        if set(state["monitors"]) != {m.name for m in self._monitors}:
            raise CheckpointError(
                f"the scenario's monitors {sorted(m.name for m in self._monitors)} differ from "
                f"the checkpoint's {sorted(state['monitors'])}"
            )
        unknown = set(state["events"]) - set(self._events)
        if unknown:
            raise CheckpointError(f"the scenario no longer registers timed event(s) {sorted(unknown)}")
        for name, isl in self.islands.items():
            isl.restore_state(state["islands"][name], [ev for ev in self._events.values() if ev.island == name])
        for ev in self._events.values():
            if ev.island is None:
                self.env.timeout(ev.t_ns - now, value=ev).callbacks.append(self._fire_global)
        self._injections = []
        for env, queue in state["injections"]:
            self._schedule_injection_record(env, queue)
        self._place()
        for monitor in self._monitors:
            monitor.set_index(state["monitors"][monitor.name])
            monitor.arm()
        for isl in self.islands.values():
            isl.resume()

    # ------------------------------------------------------------------ end
    def release_models(self) -> None:
        """Let go of this simulation's actors (it is being replaced by a restored one)."""
        self.runtime.release([slot.handle for slot in self._slots.values()])
        hosts = {id(isl.host): isl.host for isl in self.islands.values() if getattr(isl, "remote", False)}
        if hosts:
            self.runtime.release_hosts(list(hosts.values()))

    def close(self) -> None:
        """Flush the recorder and release the runtime (Ray actors, a local Ray)."""
        try:
            if self.recorder is not None:
                self.recorder.close()
        finally:
            self.runtime.shutdown()

    def _slot(self, name: str) -> Slot:
        try:
            return self._slots[name]
        except KeyError:
            raise KeyError(f"no model {name!r}; models: {sorted(self._slots)}") from None

    @property
    def halted_at(self) -> int | None:
        """The instant (ns) at which a stop ended the current advance, or None."""
        return self._halt_at

    @property
    def has_stop_callbacks(self) -> bool:
        return bool(self._stop_callbacks)

    def slots(self):
        """Every model's slot (its wiring and schedule in its island), in placement order."""
        return self._slots.values()

    def slot(self, name: str) -> Slot:
        """The slot of model ``name`` (a clear error naming the models otherwise)."""
        return self._slot(name)

    def model_names(self) -> list[str]:
        return list(self._slots)

    def count_fleet_call(self) -> None:
        """A row block propagated its members' hops in one call (counted with the fleet forms')."""
        self._fleets.counted()

    def count_published(self, n: int) -> None:
        """``n`` messages were published without :meth:`publish` (by islands in other processes,
        an island's at-once hand-over, a row block)."""
        self._publish_counts += n

    def next_global_event_ns(self) -> int | float:
        """The instant (ns) of the next global timed event that may act on islands (inf if none)."""
        events = [
            ev.t_ns for ev in self._events.values() if ev.island is None and not ev.transient and not ev.cancelled
        ]
        return min(events) if events else float("inf")

    def _check_not_started(self, what: str) -> None:
        if self._started:
            raise RuntimeError(f"cannot {what} after the run has started")

    def cpu_report(self) -> dict[str, dict[str, float]]:
        """CPU seconds each model used, and its share of this process's CPU time since the start
        (needs ``cpu_accounting=True``; on Ray, a remote model's figure is its call round trip)."""
        if not self.cpu_accounting or self._cpu_start_ns is None:
            raise RuntimeError("create the Simulation with cpu_accounting=True to measure CPU per model")
        total = max(time.process_time_ns() - self._cpu_start_ns, 1)
        return {
            name: {"cpu_s": slot.cpu_ns / 1e9, "share": slot.cpu_ns / total}
            for name, slot in sorted(self._slots.items())
        }

    def stats(self) -> dict[str, Any]:
        """The kernel's counters: each island's, the rate groups' and the fleet forms' (the driver's
        and every Ray host's, summed), and the Ray windows' (``sync``)."""
        groups, fleet_calls = self._rate_groups.stats(), self._fleets.calls
        if self.windows is not None:
            by_name, hosts = self.windows.island_stats()  # one call per host, not per island
            out = {name: by_name[name] for name in self.islands}
            for host in hosts:
                for schedule, counts in host["rate_groups"].items():
                    mine = groups.setdefault(schedule, dict.fromkeys(counts, 0))
                    for k, v in counts.items():
                        mine[k] += v
                fleet_calls += host["fleet_calls"]
        else:
            out = {name: dict(isl.stats) for name, isl in self.islands.items()}
            for name, gains in self._rate_groups.pending_island_stats().items():  # row blocks running
                for key, n in gains.items():
                    out[name][key] += n
        stats = {
            "islands": out,
            "published": self._publish_counts,
            "time_s": self.time,
            "rate_groups": groups,
            "fleets": {"hops": sum(s["fleet_hops"] for s in out.values()), "calls": fleet_calls},
        }
        if self.windows is not None:
            stats["sync"] = {k: list(v) if isinstance(v, list) else v for k, v in self.windows.stats.items()}
        return stats
