"""An island: a set of models (and their continuous states) with one hop timeline.

The island's timeline is the union of its models' I/O instants, its timed events, the deliveries
of bus messages to its models, the stops requested by the user and the implicit barriers found by
its zero-crossing conditions. At each barrier it follows Dshell's order:

1. the zero-crossing callbacks of a condition met at this instant;
2. ``end_io_step`` of the models whose I/O step ends now, then their next I/O instants;
3. deliveries and timed events due now, in (time, priority, sequence) order;
4. ``update_flow_outs`` in feed-through order, for the models that are due, received input, or
   sit downstream of a fresh feed-through signal;
5. ``start_io_step`` of the due models;

then the next hop: ``start_hop`` of every model, the integrator over ``n_integration_steps``
sub-steps (``pre_deriv``/``post_deriv`` at every derivative sample), ``end_hop``.

Hops are propagated *lazily* (when the simpy clock reaches the hop's end) while the island has
no zero-crossing conditions, and *eagerly* (at the hop's start, so that a crossing is found before
anything else happens after it) while it has some; an eager hop that a later-arriving message cuts
short is rolled back and re-propagated, as Dshell rejects a hop when a barrier appears inside it.
"""

from __future__ import annotations

import copy
import heapq
import math
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

import numpy as np

from hopsim.bus.envelope import Envelope
from hopsim.bus.topics import kernel_topic
from hopsim.kernel.errors import ActorKilled, CausalityError, CheckpointError
from hopsim.kernel.events import TimedEvent
from hopsim.kernel.faults import FAULT_PORT, KILL
from hopsim.kernel.integrate import default_integrator
from hopsim.kernel.model import BARRIER_REQUEST, DefaultRate, FixedRate, NoIo, VariableRate
from hopsim.kernel.ordering import Node, feed_through_order
from hopsim.kernel.simtime import NS_PER_S, PeriodicSchedule, seconds
from hopsim.kernel.slot import Slot, _timed
from hopsim.kernel.unpickling import set_attributes
from hopsim.kernel.zero_crossing import ZeroCrossing
from hopsim.schemas import KernelEvent

if TYPE_CHECKING:
    from hopsim.kernel.owner import IslandOwner

NEVER = 1 << 63  # later than any instant (ns)
NO_HIT: tuple = ()  # no zero-crossing met at the planned hop end
# up to this many islands at one barrier take its steps island by island (the lists that carry
# each step across islands cost more than they save for so few)
FEW_ISLANDS = 4


def propagate_together(islands: list[Island], t1: int, fleets=None, batch: bool = True) -> None:
    """Propagate the lazy hops of ``islands`` that end at ``t1`` with one compiled call per kind
    of body and sub-steps (DESIGN.md: islands whose hops coincide, as one batch; the arithmetic is
    the single-island path's, so the result does not change by a bit). Hops with the same end and
    the same sub-steps start at the same instant too. With ``fleets`` (:class:`~hopsim.kernel.fleet.Fleets`),
    the islands whose body has a fleet form hand their whole hops to it, one call per fleet; with
    ``batch`` False only those (the others propagate alone, at their own wakes)."""
    if not batch:
        if fleets is None:
            return
        islands = [isl for isl in islands if isl._fleet_body is not None]  # the others propagate alone
        if not islands:
            return
    groups: dict[tuple, list[Island]] = {}
    for isl in dict.fromkeys(islands):  # an island re-planned to the same instant is listed twice
        if isl._pending_end != t1 or isl._propagated or isl._batched == t1 or isl.t >= t1:
            continue
        plan = isl.hop_plan(isl.t, t1)
        if plan is None:
            continue
        body = isl._fleet_body if fleets is not None else None
        fleet = fleets.fleet_of(body) if body is not None else None
        groups.setdefault((plan[0], plan[1], fleet), []).append(isl)
    for (cls, steps, fleet), members in groups.items():
        t0 = members[0].t
        if fleet is not None:
            for isl in members:
                isl.gather_fleet_loads(t0, t1)
            fleet.hop([isl._fleet_body for isl in members], [isl._hop_body.received for isl in members], t0, t1, steps)
            fleets.counted()
            for isl in members:
                isl.finish_hop(t0, t1, steps, end_hops=False)
                isl.stats["fleet_hops"] += 1
            continue
        if len(members) < 2 or not batch:
            continue  # alone: its own wake propagates it
        for isl in members:
            isl.gather_loads(t0, t1)
        cls.propagate_hop([isl._hop_body.model for isl in members], steps, t0 / NS_PER_S)
        for isl in members:
            isl.finish_hop(t0, t1, steps)


def run_barrier(islands: list[Island], t: int) -> None:
    """The barrier at the kernel's time ``t`` (ns) of ``islands``: one island alone, or the
    members of a rate group due at ``t`` (one barrier for the group). Each step of Dshell's order
    (the module docstring's 1 to 5) is taken by every island before the next step. Islands
    exchange messages at least 1 ns apart, so that no island's step sees another's at this
    instant: the order across islands changes nothing, and each island's own steps keep theirs.
    While it runs, the islands plan nothing: a barrier asked for meanwhile (a message for later,
    a model's request) is found by the plan each makes after it. One island alone takes the steps
    in turn (:meth:`Island._barrier`), and so do a few islands, one after the other
    (:meth:`Island._barrier_steps`), without the lists that carry the steps across islands."""
    if len(islands) == 1:
        islands[0]._barrier(t)
        return
    for isl in islands:
        isl._in_barrier = True
    try:
        if len(islands) <= FEW_ISLANDS:
            for isl in islands:
                isl._barrier_steps(t)
            return
        dues = [isl._open_barrier(t) for isl in islands]  # 1., 2.
        for isl in islands:
            isl._take_timeline(t)  # 3.
        asked = [isl._update_flow_outs(t, due) for isl, due in zip(islands, dues)]  # 4.
        for isl, due, asked_again in zip(islands, dues, asked):
            if due:
                isl._start_io_steps(t, due)  # 5.
            if asked_again:
                isl._reask_next_io(t, asked_again)
    finally:
        for isl in islands:
            isl._in_barrier = False


class Island:
    """One hop timeline. Created by :meth:`Simulation.add_island`.

    Its attributes are ``__slots__``: there are more than CPython keeps inline in an object (see
    :mod:`hopsim.kernel.unpickling`), and a barrier reads and sets many of them."""

    __slots__ = (
        "_batched",
        "_continuous",
        "_deferred",
        "_end_hop",
        "_events",
        "_fleet_body",
        "_fleet_pre",
        "_fleet_starts",
        "_gen",
        "_hit",
        "_home_monitors",
        "_hop_body",
        "_hop_start_state",
        "_hop_steps",
        "_in_barrier",
        "_inbox",
        "_initial",
        "_io_heap",
        "_io_heap_stale",
        "_io_slots",
        "_kernel_seq",
        "_monitors",
        "_pending_end",
        "_post",
        "_pre",
        "_propagated",
        "_rate_slots",
        "_requested",
        "_rollback_slots",
        "_start_hop",
        "_stops",
        "_x",
        "_xdot",
        "absorbed_into",
        "block",
        "by_name",
        "end_of_step_derivative",
        "group",
        "home_slots",
        "hop_log",
        "integrator",
        "members",
        "n_integration_steps",
        "name",
        "rate_key",
        "sim",
        "slots",
        "stats",
        "step_log",
        "t",
        "trace_steps",
        "zero_crossings",
    )

    def __init__(
        self,
        sim: IslandOwner,
        name: str,
        integrator=None,
        n_integration_steps: int = 1,
        end_of_step_derivative: bool = False,
    ):
        if n_integration_steps < 1:
            raise ValueError(f"island {name!r}: n_integration_steps must be >= 1")
        self.sim = sim
        self.name = name
        self.integrator = integrator if integrator is not None else default_integrator()
        self.n_integration_steps = n_integration_steps
        self.end_of_step_derivative = end_of_step_derivative
        self.slots: list[Slot] = []
        self.by_name: dict[str, Slot] = {}
        self.t = 0
        self.zero_crossings: list[ZeroCrossing] = []
        self.trace_steps = False
        self.step_log: list[tuple[int, int]] = []
        self.hop_log: list[tuple[int, int]] | None = None
        self.stats = {"barriers": 0, "hops": 0, "propagations": 0, "rollbacks": 0, "deliveries": 0, "fleet_hops": 0}
        self._hop_steps: list[tuple[int, int]] = []
        self._io_heap: list = []
        self._events: list = []
        self._inbox: list = []
        self._stops: list[int] = []  # the user's stops (dropped when a run returns)
        self._requested: list[tuple[int, str]] = []  # (t, home island) barriers models asked for
        self._hit: list[ZeroCrossing] | tuple = NO_HIT
        self._pending_end: int | None = None
        self._propagated = False
        self._hop_start_state = None
        self._gen = 0
        self._in_barrier = False
        self._initial = True
        self._kernel_seq = 0
        self._x = np.zeros(0)
        self._xdot = np.zeros(0)
        self._continuous: list[Slot] = []
        self._pre: list[Callable[[float], None]] = []
        self._post: list[Callable[[float], None]] = []
        self._start_hop: list[Slot] = []
        self._end_hop: list[Slot] = []
        self._rollback_slots: list[Slot] = []
        # merging (contact): the island this one is merged into, the home islands this one
        # integrates, and the periodic monitors whose checks are barriers of this island
        self.home_slots: list[Slot] = []
        self.absorbed_into: Island | None = None
        self.members: list[Island] = [self]
        self._hop_body: Slot | None = None
        self._fleet_body = None  # the hop body's model when a fleet form may take its hops
        self._batched: int | None = None  # the hop end a batch already propagated this island to
        self._monitors: list = []  # monitors of every member
        self._home_monitors: list = []  # monitors of this home island
        self._deferred = False
        # rate groups (hopsim.kernel.rate_group): the key of the island's fastest periodic schedule,
        # which names its group (None: never grouped), and the group this island is a member of
        # (the I/O heap is not kept meanwhile: it is rebuilt when needed again)
        self._io_slots: list[Slot] = []  # periodic and variable-rate models, in call order
        self.rate_key: tuple | None = None
        self.group = None
        self.block = None  # the row block that runs this island now (hopsim.kernel.blocks)
        self._io_heap_stale = False

    # ------------------------------------------------------------------ assembly
    def add_slot(self, slot: Slot) -> None:
        if slot.name in self.by_name:
            raise ValueError(f"island {self.name!r} already has a model named {slot.name!r}")
        self.slots.append(slot)
        self.by_name[slot.name] = slot

    def finalize(self, t0: int, breaks: set[str]) -> None:
        """Order the models, assemble the continuous state vector and the first I/O instants."""
        # message-driven models run when their inputs arrive, so they too follow their producers
        nodes = [
            Node(
                s.name,
                s.feed_through or s.message_driven,
                tuple(s.in_topics.values()),
                tuple(t for t, lat, _, _ in s.out_topics.values() if lat == 0),
            )
            for s in self.slots
        ]
        order = feed_through_order(nodes, breaks)
        self.slots = [self.by_name[n] for n in order]
        self.home_slots = list(self.slots)
        states = []
        for s in self.slots:
            if not s.is_continuous:
                continue
            m, n = s.model, len(s.model.state_names)
            x0 = np.asarray(m.initial_state(), dtype=float)
            if x0.shape != (n,):
                raise ValueError(
                    f"{m.name}.initial_state() must have {n} entries ({', '.join(m.state_names)}), got shape {x0.shape}"
                )
            states.append(x0)
        self.assemble(np.concatenate(states) if states else np.zeros(0))
        self.t = t0
        for s in self.slots:
            s.io_next = self._first_io(s, t0)
            if s.io_next is not None:
                heapq.heappush(self._io_heap, (s.io_next, s.order, s))
        self._find_rate_key()

    def _find_rate_key(self) -> None:
        """The key of the island's fastest periodic schedule, which names its rate group, or None
        when the island cannot be a member (no periodic model, or a model not called directly).
        ``_io_slots``: the models with an I/O schedule (periodic or variable-rate), whose next
        instants a member's next barrier is found among (:meth:`_next_member_barrier`)."""
        self._io_slots = [s for s in self.slots if s.periodic is not None or s.variable_rate]
        periodic = [s for s in self._io_slots if s.periodic is not None]
        self.rate_key = None
        called_directly = all(
            s.local and not s.accounting and not s.method_events and not s.io_events["begin"] and not s.io_events["end"]
            for s in self.slots
        )
        if periodic and called_directly:
            fast = min(periodic, key=lambda s: s.periodic.key[1] / s.periodic.key[2])
            self.rate_key = fast.periodic.key

    def assemble(self, x: np.ndarray) -> None:
        """Number ``self.slots`` in their call order, take ``x`` as the continuous state (the
        continuous models' states in that order) and index the per-hop call lists."""
        for i, s in enumerate(self.slots):
            s.order = i
            s.island = self
        self.by_name = {s.name: s for s in self.slots}
        self._continuous = [s for s in self.slots if s.is_continuous]
        self._x = np.array(x, dtype=float)
        self._xdot = np.zeros(self._x.size)
        self.link_states()
        self._pre = [self._with_events(s, "pre_deriv") for s in self._continuous if s.overrides("pre_deriv")]
        self._post = [self._with_events(s, "post_deriv") for s in self._continuous if s.overrides("post_deriv")]
        for s in self.slots:
            s.does_end_io = s.overrides("end_io_step")
            s.does_start_io = s.overrides("start_io_step")
            s.does_update = s.overrides("update_flow_outs")
            s.direct = s.local and not s.accounting and not s.method_events
        self._start_hop = [s for s in self.slots if s.overrides("start_hop")]
        self._end_hop = [s for s in self.slots if s.overrides("end_hop")]
        self._rollback_slots = [
            s for s in self.slots if s.is_continuous or s.overrides("start_hop") or s.overrides("end_hop")
        ]
        self._hop_body = self._find_hop_body()
        self._fleet_body = self._find_fleet_body()
        self._io_heap = [(s.io_next, s.order, s) for s in self.slots if s.io_next is not None]
        heapq.heapify(self._io_heap)

    def _find_hop_body(self) -> Slot | None:
        """The model that propagates this island's states with its own compiled RK4 hop step, if
        the island qualifies: the integrator is RK4, one model defines ``propagate_hop``, every
        other model with states has a derivative constant over a hop (the island advances those
        itself, :meth:`_advance_rate_states`), and every other continuous model holds its loads
        constant over a hop."""
        self._rate_slots: list[Slot] = []
        if getattr(self.integrator, "name", None) != "rk4" or self.end_of_step_derivative:
            return None
        owners = [s for s in self._continuous if s.model.state_names]
        bodies = [s for s in owners if s.model.propagate_hop is not None]
        if len(bodies) != 1 or bodies[0].method_events:
            return None
        body = bodies[0]
        rates = [s for s in owners if s is not body]
        if any(not (s.model.state_rate_constant_over_hop and s.direct) or s.overrides("end_hop") for s in rates):
            return None
        for s in self._continuous:
            if s.overrides("pre_deriv") and not s.model.loads_constant_over_hop:
                return None
            if s is not body and s not in rates and s.overrides("post_deriv"):
                return None
        self._rate_slots = rates
        return body

    def _find_fleet_body(self):
        """The hop body's model if a fleet form may take over this island's hop: the body is
        called directly and no other model has end_hop. A fleet form that latches the body's
        loads itself (``latches_loads``) also needs that nothing else loads the body: no
        pre_deriv, and no start_hop but those of the models whose states the island advances
        itself; for one that does not, the island gathers every load first, as for its compiled
        hop (:meth:`gather_fleet_loads`, :mod:`hopsim.kernel.fleet`)."""
        body = self._hop_body
        self._fleet_starts, self._fleet_pre = [], []
        if body is None or not body.direct or any(s is not body for s in self._end_hop):
            return None
        form = getattr(type(body.model), "fleet_form", None)
        if form is None or getattr(form, "latches_loads", True):
            if any(s is not body and s not in self._rate_slots for s in self._start_hop) or any(
                s.overrides("pre_deriv") for s in self._continuous
            ):
                return None
            self._fleet_starts = list(self._rate_slots)
        else:
            self._fleet_starts, self._fleet_pre = list(self._start_hop), list(self._pre)
        return body.model

    @property
    def fleet_body(self):
        """The model whose fleet form may propagate this island's hops (None: the scalar path)."""
        return self._fleet_body

    @property
    def has_compiled_hop(self) -> bool:
        """Whether one model propagates this island's states with its own compiled hop step
        (islands whose hops coincide can then be propagated as one batch)."""
        return self._hop_body is not None

    def hop_plan(self, t0: int, t1: int) -> tuple | None:
        """(model class, sub-steps in s) if this hop can take the compiled path, else None."""
        body = self._hop_body
        if body is None or not body.model.hop_ready():
            return None
        n, span = self.n_integration_steps, t1 - t0
        if n == 1:
            return type(body.model), ((span / NS_PER_S,) if span else ())
        a, steps = t0, []
        for j in range(1, n + 1):
            b = t0 + span * j // n
            if b != a:
                steps.append((b - a) / NS_PER_S)
            a = b
        return type(body.model), tuple(steps)

    def gather_loads(self, t0: int, t1: int) -> None:
        """start_hop, then the hop's (constant) loads into the body: every pre_deriv once."""
        self._gather(self._start_hop, self._pre, t0, t1)

    def gather_fleet_loads(self, t0: int, t1: int) -> None:
        """Before a fleet form's hop, what it does not do itself: start_hop of the models whose
        states the island advances itself, or, for a fleet form that latches nothing, all that
        :meth:`gather_loads` does."""
        self._gather(self._fleet_starts, self._fleet_pre, t0, t1)

    @staticmethod
    def _gather(starts: list[Slot], pres: list, t0: int, t1: int) -> None:
        for s in starts:
            s.call_start_hop(t0, t1)
        t_s = t0 / NS_PER_S
        for f in pres:
            f(t_s)

    def _advance_rate_states(self, t0: int, steps_s) -> None:
        """Beside the hop body's compiled step: the states whose derivative is constant over the
        hop (loads latched), by the RK4 step's own sums, x + h/6 (k + 2k + 2k + k) per sub-step
        of ``steps_s`` (s), so that this path gives what the kernel's RK4 over post_deriv gives."""
        t_s = t0 / NS_PER_S
        for s in self._rate_slots:
            m = s.model
            m.post_deriv(t_s)
            x = m.x.tolist()
            moved = False
            for i, k in enumerate(m.xdot.tolist()):
                xi = x[i]
                if k == 0.0 and xi != 0.0 and math.isfinite(xi):
                    continue  # x + (h / 6) (+-0) is x, bit for bit: a tank not drawn
                sum_k = k + 2.0 * k + 2.0 * k + k  # k1 + 2 k2 + 2 k3 + k4, the four samples alike
                for h in steps_s:
                    xi = xi + (h / 6.0) * sum_k
                x[i] = xi
                moved = True
            if moved:
                m.x[:] = x

    def finish_hop(self, t0: int, t1: int, steps_s, end_hops: bool = True) -> None:
        """The hop body's compiled step to t1 over ``steps_s`` (s) is done: the island's other
        states (:meth:`_advance_rate_states`), end_hop (unless a fleet form ran it), count it."""
        if self._rate_slots:
            self._advance_rate_states(t0, steps_s)
        if end_hops:
            for s in self._end_hop:
                s.call_end_hop(t0, t1)
        self.stats["propagations"] += 1
        self._batched = t1
        self._hop_steps = [(t0, t1)] if self.trace_steps else []

    @property
    def current(self) -> Island:
        """The island that integrates this one's models now (itself unless merged)."""
        isl = self
        while isl.absorbed_into is not None:
            isl = isl.absorbed_into
        return isl

    def _first_io(self, s: Slot, t0: int) -> int | None:
        sched = s.io_schedule
        if isinstance(sched, NoIo):
            return None
        if isinstance(sched, VariableRate):
            return t0
        if isinstance(sched, FixedRate):
            s.periodic = PeriodicSchedule(sched.rate_hz, t0 + seconds(sched.phase_s))
        elif isinstance(sched, DefaultRate):
            s.periodic = PeriodicSchedule(self.sim.default_rate_hz, t0)
        else:
            raise TypeError(f"{s.name}: unknown io_schedule {sched!r}")
        return s.periodic.instant(0)

    def link_states(self) -> None:
        """Point every continuous model's ``x``/``xdot`` at its slice of the island's vectors
        (after assembly, and again after the island was unpickled in another process, since
        pickling copies views)."""
        offset = 0
        for s in self._continuous:
            n = len(s.model.state_names)
            s.model.x = self._x[offset : offset + n]
            s.model.xdot = self._xdot[offset : offset + n]
            offset += n

    def __setstate__(self, state: dict | tuple) -> None:
        set_attributes(self, state)
        self.link_states()
        if self.group is not None:  # a group is its process's: plan alone until rejoining
            self.group = None
            self._rebuild_io_heap()

    @staticmethod
    def _with_events(slot: Slot, method: str) -> Callable[[float], None]:
        bound = getattr(slot.model, method)
        if slot.accounting:
            bound = _timed(slot, bound)
        events = slot.method_events.get(method)
        if not events:
            return bound
        before = [e for e in events if e.before]
        after = [e for e in events if not e.before]

        def wrapped(t_s: float) -> None:
            for e in before:
                e.callback(e, t_s)
            bound(t_s)
            for e in after:
                e.callback(e, t_s)

        return wrapped

    # ------------------------------------------------------------------ timeline
    def add_event(self, ev: TimedEvent) -> None:
        self.unblock()
        if self.absorbed_into is not None:
            return self.current.add_event(ev)
        heapq.heappush(self._events, (ev.t_ns, ev.priority, ev.seq, ev))
        self.request_barrier(ev.t_ns)

    def add_stop(self, t_ns: int) -> None:
        if self.block is not None and self.block.takes_stop(t_ns):
            heapq.heappush(self._stops, t_ns)  # reached when the block hands the island back
            return
        self.unblock()
        if self.absorbed_into is not None:
            return
        if t_ns > self.t:
            heapq.heappush(self._stops, t_ns)
            self.request_barrier(t_ns)

    def settle(self, t_ns: int) -> None:
        """The run returns at t_ns: forget later stops and undo a hop propagated ahead of time,
        so that the island's state is the state at its last barrier. :meth:`resume` re-plans.
        A row block whose instant is complete keeps the island (the next run goes on with it)."""
        if self.block is not None and self.block.intact:
            self._stops = [s for s in self._stops if s <= t_ns]
            heapq.heapify(self._stops)
            return
        self.unblock()
        if self.absorbed_into is not None:
            return
        self._stops = [s for s in self._stops if s <= t_ns]
        heapq.heapify(self._stops)
        self._leave_group()
        if self._initial:
            return
        if self._propagated:
            self._restore(self._hop_start_state)
        self._propagated = False
        self._pending_end = None
        self._hit = NO_HIT
        self._gen += 1  # the scheduled wake-up is void; resume() schedules a new one

    def resume(self) -> None:
        if self.absorbed_into is not None or self._deferred:
            return
        if not self._initial and self._pending_end is None:
            self._plan()

    def add_zero_crossing(self, zc: ZeroCrossing) -> None:
        self.unblock()
        if zc.island is None:
            zc.island = self.name
        if self.absorbed_into is not None:
            return self.current.add_zero_crossing(zc)
        self.zero_crossings.append(zc)
        if self._pending_end is not None and not self._in_barrier:
            self._replan()

    def enqueue(self, deliver_ns: int, env: Envelope, slot: Slot, port: str, rank: int) -> None:
        """A message for one of this island's models, seen at its barrier at ``deliver_ns`` (a row
        block running the island takes it if it can, else hands the island back first)."""
        if self.block is not None and self.block.takes_message(deliver_ns, env, slot, port, rank):
            return
        self.unblock()
        if self.absorbed_into is not None:
            return self.current.enqueue(deliver_ns, env, slot, port, rank)
        heapq.heappush(self._inbox, (deliver_ns, env.priority, env.source, env.seq, rank, env, slot, port))
        self.request_barrier(deliver_ns)

    def request_barrier(self, t_ns: int) -> None:
        if t_ns <= self.t and not (self._initial and t_ns == self.t):
            raise CausalityError(f"island {self.name!r} is at {self.t} ns; a barrier at {t_ns} ns would be in its past")
        if self._in_barrier or self._initial or self._deferred:
            return  # the plan made at the end of the barrier (or at the start) accounts for it
        if self._pending_end is None or t_ns < self._pending_end:
            if self.group is not None:
                # a rate group's member stays one: its next barrier is the group's instant t_ns
                # (nothing is propagated ahead; the group passes over its entry at the later one)
                self._pending_end = t_ns
                self._gen += 1
                self.group.admit(self, t_ns)
            else:
                self._replan()

    def next_explicit_barrier(self) -> int | None:
        """The earliest instant (ns) of the I/O schedule, timed events, deliveries, requested
        barriers, stops and monitor checks; None when nothing is ahead."""
        if self._io_heap_stale:
            self._rebuild_io_heap()
        io = self._io_heap
        while io and io[0][0] != io[0][2].io_next:
            heapq.heappop(io)  # superseded by a re-asked next_io_time
        t1 = min(io[0][0] if io else NEVER, self._next_other_barrier())
        return None if t1 == NEVER else t1

    def _next_other_barrier(self) -> int:
        """The earliest instant (ns) of the timed events, deliveries, requested barriers, stops
        and monitor checks (the timeline but the I/O schedule); NEVER when none."""
        events = self._events
        while events and events[0][3].cancelled:
            heapq.heappop(events)
        t1 = self._stops[0] if self._stops else NEVER
        for queue in (events, self._inbox, self._requested):
            if queue and queue[0][0] < t1:
                t1 = queue[0][0]
        for m in self._monitors:
            if m.next_ns < t1:
                t1 = m.next_ns
        return t1

    # ------------------------------------------------------------------ hops
    def _plan(self) -> None:
        """Plan the hop from ``self.t`` to the next barrier and schedule the wake-up in simpy."""
        t1 = self.next_explicit_barrier()
        self._hit = NO_HIT
        if t1 is None:
            self._pending_end = None
            self._propagated = False
            return
        if self.zero_crossings and self._x.size:
            # zero-crossings watch continuous states; an island without any cannot overstep one
            self._hop_start_state = self._capture()
            t_end, self._hit = self._propagate_checked(self.t, t1)
            self._propagated = True
            now = self.sim.now
            if t_end < now:
                raise CausalityError(
                    f"island {self.name!r}: after a rollback the zero-crossing "
                    f"{[z.name for z in self._hit]} lies at {t_end} ns, before the kernel's time "
                    f"{now} ns; use more integration steps per hop or a smaller eps"
                )
        else:
            t_end = t1
            self._propagated = False
        self._pending_end = t_end
        self._gen += 1
        if self.rate_key is not None and self._groupable():
            group = self.sim.rate_group(self.rate_key)
            if group is not None:
                self.group = group
                group.join(self, t_end)
                return
        self.sim.schedule_wake(self, t_end, self._gen)

    def _groupable(self) -> bool:
        """Whether the island may be a rate group's member now: no zero-crossing armed, no monitor
        watching it, not merged, no step or hop log kept."""
        return not (
            self.zero_crossings
            or self._monitors
            or self.absorbed_into is not None
            or len(self.members) != 1
            or self.trace_steps
            or self.hop_log is not None
        )

    def _next_member_barrier(self) -> int:
        """A member's next barrier (ns): its I/O schedule's next instant (periodic and
        variable-rate models; a member keeps no heap of them) or the rest of its timeline's."""
        t1 = self._next_other_barrier()
        for s in self._io_slots:
            nxt = s.io_next
            if nxt is not None and nxt < t1:
                t1 = nxt
        return t1

    def _leave_group(self) -> None:
        """Stop being a rate group's member (the group passes over this island's entries)."""
        group = self.group
        if group is not None:
            self.group = None
            group.left(self)
            if self._io_heap_stale:
                self._rebuild_io_heap()

    def _rebuild_io_heap(self) -> None:
        self._io_heap = [(s.io_next, s.order, s) for s in self.slots if s.io_next is not None]
        heapq.heapify(self._io_heap)
        self._io_heap_stale = False

    @property
    def planned_end(self) -> int | None:
        """The instant (ns) of the barrier this island has planned next (None: none planned)."""
        return self._pending_end

    def end_hop_at(self, t: int) -> None:
        """A rate group's member reaches its barrier at the kernel's time ``t`` (ns): the hop up
        to ``t`` (the group may have propagated it already); :func:`run_barrier` follows."""
        if t > self.t:
            self._end_hop_at(t)
        self._pending_end = None

    def plan_as_member(self) -> None:
        """After a rate group's barrier: the member's next barrier in the group or, if it may no
        longer be a member, a plan of its own (:mod:`hopsim.kernel.rate_group`)."""
        nxt = self._next_member_barrier()
        if nxt != NEVER and self._groupable():
            self._pending_end = nxt
            self._gen += 1
            self.group.admit(self, nxt)
        else:
            self._leave_group()
            self._plan()

    def _replan(self) -> None:
        self._leave_group()
        if self._propagated:
            self._restore(self._hop_start_state)
            self.stats["rollbacks"] += 1
        self._plan()

    def wake(self, gen: int) -> None:
        """The barrier at the kernel's time, if ``gen`` is still the generation of the plan that
        asked for it: the hop up to now, the barrier, the plan of the next hop."""
        sim = self.sim
        if sim.batching:
            batch = sim.take_batch(sim.now)
            if batch:
                propagate_together(batch, sim.now)
        if gen != self._gen:
            return  # superseded by an earlier barrier
        t = self._pending_end  # the instant the plan of this generation woke the island at (now)
        if t > self.t:
            self._end_hop_at(t)
        self._pending_end = None
        self._propagated = False
        try:
            run_barrier([self], t)
        finally:
            self._initial = False
        if self._monitors and any(m.next_ns == t for m in self._monitors):
            self._deferred = True  # the monitor's check at t plans the next hop
        else:
            self._plan()
        sim.after_barrier(self, t)

    def _end_hop_at(self, t: int) -> None:
        """Complete the hop that ends at t (ns): propagate it unless done ahead, count it."""
        if not self._propagated and self._batched != t:
            self._propagate(self.t, t)
        self.stats["hops"] += 1
        if self.hop_log is not None:
            self.hop_log.append((self.t, t))
        if self.trace_steps:
            self.step_log.extend(self._hop_steps)

    def start(self) -> None:
        """Schedule the initial barrier at the island's start time."""
        self._gen += 1
        self._pending_end = self.t
        self.sim.schedule_wake(self, self.t, self._gen)

    def _propagate(self, t0: int, t1: int) -> None:
        """Propagate every state of the island from t0 to t1 (ns): start_hop, integrate, end_hop."""
        self._hop_steps = []
        plan = self.hop_plan(t0, t1)
        for s in self._start_hop:
            s.call_start_hop(t0, t1)
        if plan is not None:
            # the hop's constant loads into the body, every pre_deriv once (as gather_loads), then its compiled step
            t0_s = t0 / NS_PER_S
            for f in self._pre:
                f(t0_s)
            plan[0].propagate_hop([self._hop_body.model], plan[1], t0_s)
            self.finish_hop(t0, t1, plan[1])
            return
        if self._x.size:
            n = self.n_integration_steps
            span = t1 - t0
            x = self._x.copy()
            advance = self.integrator.advance
            deriv = self._derivative
            a = t0
            for j in range(1, n + 1):
                b = t0 + span * j // n
                if b == a:
                    continue
                x = advance(deriv, a / NS_PER_S, x, b / NS_PER_S)
                if self.end_of_step_derivative:
                    deriv(b / NS_PER_S, x)
                if self.trace_steps:
                    self._hop_steps.append((a, b))
                a = b
            self._x[:] = x
        for s in self._end_hop:
            s.call_end_hop(t0, t1)
        self.stats["propagations"] += 1

    def _derivative(self, t_s: float, x: np.ndarray) -> np.ndarray:
        self._x[:] = x
        for f in self._pre:
            f(t_s)
        for f in self._post:
            f(t_s)
        return self._xdot.copy()

    def _propagate_checked(self, t0: int, t1: int) -> tuple[int, list[ZeroCrossing]]:
        """Propagate to t1 unless a zero-crossing is overstepped; then bisect to the crossing."""
        conds = list(self.zero_crossings)
        g0 = [c.fn(t0) for c in conds]
        start = self._hop_start_state

        def crossed_at(t: int) -> list[ZeroCrossing]:
            return [c for c, g in zip(conds, g0, strict=True) if c.crossed(g, c.fn(t))]

        self._propagate(t0, t1)
        hit = crossed_at(t1)
        if not hit:
            return t1, []
        eps = min(c.eps_ns for c in hit)
        lo, hi, lo_state = t0, t1, None
        while hi - lo > eps:
            mid = (lo + hi) // 2
            self._restore(start)
            self._propagate(t0, mid)
            at_mid = crossed_at(mid)
            if at_mid:
                hi, hit = mid, at_mid
            else:
                lo, lo_state = mid, self._capture()
        if lo_state is None:
            # the crossing lies within eps of the hop's start: end the hop just after it
            self._restore(start)
            self._propagate(t0, hi)
            return hi, hit
        self._restore(lo_state)
        return lo, hit

    def _capture(self):
        return (self._x.copy(), [(s, s.call("snapshot")) for s in self._rollback_slots], self._hop_steps)

    def _restore(self, state) -> None:
        x, snaps, self._hop_steps = state
        self._x[:] = x
        for s, snap in snaps:
            s.call("restore", snap)
        self.integrator.reset()

    # ------------------------------------------------------------------ barrier
    def _barrier(self, t: int) -> None:
        """The barrier at t (ns) of this island alone: :func:`run_barrier`'s steps in turn."""
        self._in_barrier = True
        try:
            self._barrier_steps(t)
        finally:
            self._in_barrier = False

    def _barrier_steps(self, t: int) -> None:
        """:func:`run_barrier`'s steps at t (ns), in turn, for this island (in a barrier)."""
        due = self._open_barrier(t)  # 1., 2.
        self._take_timeline(t)  # 3.
        asked_again = self._update_flow_outs(t, due)  # 4.
        if due:
            self._start_io_steps(t, due)  # 5.
        if asked_again:
            self._reask_next_io(t, asked_again)

    def _open_barrier(self, t: int) -> list[Slot]:
        """Steps 1 and 2 of the barrier at t (ns) (see :func:`run_barrier`): returns the models
        whose I/O step ended (marked ``due``)."""
        self.stats["barriers"] += 1
        self.t = t
        if self.sim.barrier_events_wanted:
            self.kernel_event(KernelEvent.BARRIER, "")
        if self._hit:
            self._zero_crossings_met(t)  # 1.
        return self._end_io_steps(t)  # 2.

    def _take_timeline(self, t: int) -> None:
        """Step 3 of the barrier at t (ns): the deliveries and timed events due now; the stops
        and requested barriers reached are done."""
        inbox = self._inbox
        if inbox and inbox[0][0] == t:
            self._deliver(t)
        events = self._events
        if events and events[0][0] == t:
            self._fire_events(t)
        while self._stops and self._stops[0] <= t:
            heapq.heappop(self._stops)
        while self._requested and self._requested[0][0] <= t:
            heapq.heappop(self._requested)

    def _zero_crossings_met(self, t: int) -> None:
        """1. The callbacks of the zero-crossings met at t, in registration order (removed)."""
        for zc in sorted(self._hit, key=lambda z: z.seq):
            self.zero_crossings.remove(zc)
            self.kernel_event(KernelEvent.ZERO_CROSSING, zc.name)
            zc.callback(t)
        self._hit = NO_HIT

    def _end_io_steps(self, t: int) -> list[Slot]:
        """2. ``end_io_step`` of the models whose I/O step ends at t, then their next I/O
        instants; returns them (marked ``due``) in call order."""
        due: list[Slot] = []
        grouped = self.group is not None
        if grouped:
            # a rate group's member: no heap (it is rebuilt on leaving), the models due now
            self._io_heap_stale = True
            for slot in self._io_slots:
                if slot.io_next == t and not slot.due:
                    slot.due = True
                    due.append(slot)
        else:
            if self._io_heap_stale:
                self._rebuild_io_heap()
            io = self._io_heap
            if not io or io[0][0] > t:
                return due
            while io and io[0][0] <= t:
                _, _, slot = heapq.heappop(io)
                if slot.io_next == t and not slot.due:
                    slot.due = True
                    due.append(slot)
        for s in due:
            if s.io_prev is not None:
                for ev in s.io_events["end"]:
                    ev.callback(t)
                if s.does_end_io:
                    s.call_end_io_step(s.io_prev, t)
        for s in due:
            periodic = s.periodic
            if periodic is not None:
                s.io_k += 1
                s.io_next = nxt = periodic.instant(s.io_k)
            else:
                s.io_next = nxt = self._asked_next_io(s, t)
                if nxt is None:
                    continue
            if not grouped:
                heapq.heappush(io, (nxt, s.order, s))
        return due

    def _deliver(self, t: int) -> None:
        """3. The messages due at t, in (time, priority, source, sequence, subscriber) order."""
        inbox = self._inbox
        while inbox and inbox[0][0] == t:
            _, _, _, _, _, env, slot, port = heapq.heappop(inbox)
            self.stats["deliveries"] += 1
            slot.received += 1
            if port == FAULT_PORT:
                if env.payload.kind == KILL:
                    self._kill(slot, env, t)
                    continue
                self.kernel_event(KernelEvent.FAULT, slot.name, f"{env.payload.kind}", fault=env.payload)
                slot.call("on_fault", env.payload, t)
                slot.force_ufo = True
                continue
            self._hand_over(slot, port, env.payload, env.t_ns)
            slot.fresh = True
            if port in slot.trigger_ports:
                slot.triggered = True

    def _fire_events(self, t: int) -> None:
        """3. The timed events due at t, in (time, priority, sequence) order."""
        events = self._events
        while events and events[0][0] == t:
            ev = heapq.heappop(events)[3]
            if ev.cancelled:
                continue
            self.kernel_event(KernelEvent.TIMED_EVENT, ev.name)
            if ev.fire():
                heapq.heappush(events, (ev.t_ns, ev.priority, ev.seq, ev))
            else:
                self.sim.forget_event(ev)

    def _update_flow_outs(self, t: int, due: list[Slot]) -> list[Slot] | None:
        """4. ``update_flow_outs`` in feed-through order of the models that are due, received
        input (a triggering message also starts an I/O step here: appended to ``due``), or sit
        downstream of a fresh feed-through signal. Returns the variable-rate models a message
        reached (their next I/O instant is asked again), or None."""
        initial = self._initial
        asked_again = None
        for s in self.slots:
            fresh = s.fresh
            if fresh:
                s.fresh = False  # a later model's write (across a break) stays fresh for next time
                if s.triggered:
                    s.triggered = False
                    if s.variable_rate:
                        if asked_again is None:
                            asked_again = []
                        asked_again.append(s)
                    if not s.due:
                        # a triggering message starts an I/O step of the model here
                        s.due = True
                        due.append(s)
                        if s.does_end_io:
                            s.call_end_io_step(t if s.io_prev is None else s.io_prev, t)
            if initial or s.due or s.force_ufo or (fresh and s.feed_through):
                s.force_ufo = False
                if s.does_update:
                    s.call_update_flow_outs(t)
        return asked_again

    def _start_io_steps(self, t: int, due: list[Slot]) -> None:
        """5. ``start_io_step`` of the due models (their step runs from t to their next instant)."""
        for s in due:
            s.due = False
            s.io_prev = t
            if s.does_start_io:
                s.call_start_io_step(t, s.io_next)
            for ev in s.io_events["begin"]:
                ev.callback(t)

    def _reask_next_io(self, t: int, slots: list[Slot]) -> None:
        """A message reached these variable-rate models: each may need its next step at another time."""
        grouped = self.group is not None
        if not grouped and self._io_heap_stale:
            self._rebuild_io_heap()
        io = self._io_heap
        for s in slots:
            nxt = self._asked_next_io(s, t)
            if nxt != s.io_next:
                s.io_next = nxt
                if nxt is not None and not grouped:
                    heapq.heappush(io, (nxt, s.order, s))

    def _kill(self, slot: Slot, env: Envelope, t: int) -> None:
        """The ``kill`` fault: the actor's process dies (a Ray actor is really killed).

        The run cannot go on past this instant without the actor; the runner recovers it from
        the last checkpoint. A kill already recovered from is recorded and passed over.
        """
        key = (slot.name, t, env.seq)
        if key in self.sim.handled_kills:
            return
        self.sim.handled_kills.add(key)
        slot.handle.kill()
        raise ActorKilled(slot.name, t, key)

    def _asked_next_io(self, s: Slot, t: int) -> int | None:
        """The next I/O instant a model without a periodic schedule gives (its ``next_io_time``);
        periodic models' instants are counted in :meth:`_end_io_steps`."""
        nxt = s.call_next_io_time(t)
        if nxt is None:
            return None
        nxt = int(nxt)
        if nxt <= t:
            raise CausalityError(f"{s.name}.next_io_time({t}) returned {nxt} ns, not after {t} ns")
        return nxt

    # ------------------------------------------------------------------ row blocks
    def unblock(self) -> None:
        """Bring this island back from its row block, if it is in one (the block stores every
        member's state: :meth:`hopsim.kernel.blocks.Block.exit`)."""
        if self.block is not None:
            self.block.exit()

    def regular_member(self) -> bool:
        """Whether a row block may take this rate group member: a member at rest between its
        barriers (nothing propagated ahead, no zero-crossing met, no monitor or log, not merged);
        its timed events and requested barriers are instants the block hands it back before."""
        return (
            self.group is not None
            and self._groupable()
            and self._hit is NO_HIT
            and not self._deferred
            and not self._initial
            and not self._propagated
        )

    def next_timeline_ns(self) -> int:
        """The earliest timed event or requested barrier (ns; NEVER if none): a row block hands the
        island back before it."""
        return min(self._events[0][0] if self._events else NEVER, self._requested[0][0] if self._requested else NEVER)

    def next_stop_ns(self) -> int:
        """Where the run returns (ns; NEVER if nowhere)."""
        return self._stops[0] if self._stops else NEVER

    def takes_row_hop(self, t0: int, t1: int, latched: bool = False) -> bool:
        """Whether this island's hop from t0 to t1 (ns) is its body's compiled hop with loads
        gathered by the kernel (a fleet form that latches nothing; with ``latched``, also one whose
        body latches its own loads in start_hop, the caller latching them), and nothing else to
        advance."""
        body = self._fleet_body
        return (
            body is not None
            and not self._rate_slots
            and self.hop_plan(t0, t1) is not None
            and (latched or not getattr(type(body).fleet_form, "latches_loads", True))
        )

    def hop_steps(self, t0: int, t1: int) -> tuple:
        """The sub-steps (s) of the compiled hop from t0 to t1 (ns)."""
        return self.hop_plan(t0, t1)[1]

    def inbox_entries(self) -> list[tuple]:
        """The messages on their way to this island's models: (delivery ns, envelope, slot, port,
        rank), in no particular order."""
        return [(entry[0], *entry[5:], entry[4]) for entry in self._inbox]

    def take_from_inbox(self, taken) -> None:
        """Remove the entries for which ``taken(delivery ns, envelope, slot, port, rank)`` is true
        (a row block carries them now)."""
        self._inbox = [entry for entry in self._inbox if not taken(entry[0], *entry[5:], entry[4])]
        heapq.heapify(self._inbox)

    def join_block(self, block) -> None:
        """From now on ``block`` runs this island (its entry at the group's next instant is the
        block's)."""
        self.block = block

    def leave_block(self, instants: int, t: int, deliveries: int) -> None:
        """The row block ran ``instants`` barriers of this island, the last at ``t`` (ns), and
        handed its models ``deliveries`` messages: the counters and the schedule as those
        barriers would have left them; the island is a member again, planned at its next instant."""
        self.block = None
        if instants:
            stats = self.stats
            stats["barriers"] += instants
            stats["hops"] += instants
            stats["propagations"] += instants
            if self.sim.fleets:
                stats["fleet_hops"] += instants  # as the members' own hops through the fleet form
            stats["deliveries"] += deliveries
            self.t = t
            self._batched = t
            self._gen += instants - 1  # plan_as_member counts the last one
            while self._stops and self._stops[0] <= t:
                heapq.heappop(self._stops)
            for s in self._io_slots:
                if s.periodic is not None:
                    s.io_k += instants
                    s.io_next = s.periodic.instant(s.io_k)
                    s.io_prev = t
            self.plan_as_member()
        else:
            self.group.admit(self, self._pending_end)

    # ------------------------------------------------------------------ bus
    def route(self, slot: Slot, outputs: list) -> None:
        """Wrap a model's outputs in envelopes and hand them to the bus; a message that needs no
        envelope (see :meth:`IslandOwner.served_at_once`) goes to its subscribers at once."""
        t = self.t
        sim = self.sim
        out_topics = slot.out_topics
        unread = slot.unread
        at_once_count = 0
        for port, msg in outputs:
            if port in unread:
                continue
            if port == BARRIER_REQUEST:
                if msg <= t:
                    raise CausalityError(f"{slot.name} requested a barrier at {msg} ns, not after {t} ns")
                heapq.heappush(self._requested, (msg, slot.home.name))
                self.request_barrier(msg)
                continue
            topic, latency, priority, queue = out_topics[port]
            seq = slot.seq
            slot.seq = seq + 1
            if latency == 0:
                at_once = sim.served_at_once(topic, slot.home)
                if at_once is not None:  # no envelope: nothing records it, nobody elsewhere reads it
                    at_once_count += 1
                    for inbox, sub, sub_port in at_once:
                        inbox.deliver_now(sub, sub_port, msg, t)
                    continue
            sim.publish(Envelope(t, t + latency, slot.name, topic, seq, priority, msg), slot.home, queue)
        if at_once_count:
            sim.count_published(at_once_count)

    def deliver_now(self, slot: Slot, port: str, msg: Any, t_ns: int) -> None:
        """A message published at t (ns) that a model of this island sees at once."""
        if slot.local:
            slot.model.ports[port].deliver(msg, t_ns)
        else:
            slot.handle.deliver(port, msg, t_ns)
        slot.fresh = True
        if port in slot.trigger_ports:
            slot.triggered = True
        self.stats["deliveries"] += 1
        slot.received += 1

    @staticmethod
    def _hand_over(slot: Slot, port: str, msg: Any, t_ns: int) -> None:
        """Put ``msg`` (published at t, ns) on the model's input ``port``."""
        if slot.local:
            slot.model.ports[port].deliver(msg, t_ns)
        else:
            slot.handle.deliver(port, msg, t_ns)

    def kernel_event(self, kind: int, name: str, detail: str = "", **fields) -> None:
        """Record a kernel event (``fields``: more of ``hopsim.KernelEvent``'s fields, e.g. ``contact``)."""
        self.sim.record_kernel_event(self, kind, name, detail, **fields)

    def kernel_event_envelope(self, kind: int, name: str, detail: str = "", **fields) -> Envelope:
        """A kernel event of this island at its current time, from ``kernel.<island>`` (numbered in
        the island's own sequence) on its kind's topic ``kernel/<kind>``."""
        msg = KernelEvent(t_ns=self.t, kind=kind, island=self.name, name=name, detail=detail, **fields)
        env = Envelope(self.t, self.t, f"kernel.{self.name}", kernel_topic(kind), self._kernel_seq, -1, msg)
        self._kernel_seq += 1
        return env

    # ------------------------------------------------------------------ checkpoints
    def capture_state(self, copied: bool = True) -> dict[str, Any]:
        """This island's part of a checkpoint, at its owner's current barrier: its timeline and
        continuous state (``island``) and its models' snapshots (``models``, by name). With
        ``copied`` False the snapshots may be the models' own objects (:meth:`Slot.snapshot_to_read`):
        for a state that is read at once and let go."""
        self.unblock()
        now = self.sim.now
        if self.t != now or self._propagated:
            raise CheckpointError(f"island {self.name!r} is not settled at {now} ns (at {self.t} ns)")
        island = {
            "t": self.t,
            "x": self._x.copy(),
            "io": sorted((s.io_next, s.name) for s in self.slots if s.io_next is not None),
            "inbox": [
                (d, p, src, seq, rank, env, slot.name, port) for d, p, src, seq, rank, env, slot, port in self._inbox
            ],
            "stops": list(self._stops),
            "requested": list(self._requested),
            "zero_crossings": [zc.name for zc in self.zero_crossings],
            "integrator": copy.deepcopy(self.integrator),
            "stats": dict(self.stats),
            "kernel_seq": self._kernel_seq,
            "slots": {
                s.name: (s.seq, s.io_k, s.io_prev, s.io_next, s.fresh, s.force_ufo, s.triggered) for s in self.slots
            },
        }
        return {
            "island": island,
            "models": {s.name: s.call("snapshot") if copied else s.snapshot_to_read() for s in self.slots},
        }

    def restore_state(self, st: dict[str, Any], events: list[TimedEvent]) -> None:
        """Take the timeline and state that :meth:`capture_state` gave (``st``, its ``island``
        part), with ``events`` as its timed events; the models are restored by their owner.
        Zero-crossings are matched by name with those registered by the scenario build."""
        self.t = st["t"]
        self._x[:] = st["x"]
        self._initial = False
        self._pending_end = None
        self._propagated = False
        self.integrator = st["integrator"]
        self.stats = {**self.stats, **st["stats"]}  # a counter newer than the checkpoint starts at 0
        self._kernel_seq = st["kernel_seq"]
        self._stops = list(st["stops"])
        heapq.heapify(self._stops)
        self._requested = list(st["requested"])
        heapq.heapify(self._requested)
        by_name = self.by_name
        self._io_heap = [(t, by_name[n].order, by_name[n]) for t, n in st["io"]]
        heapq.heapify(self._io_heap)
        self._inbox = [
            (d, p, src, seq, rank, env, by_name[n], port) for d, p, src, seq, rank, env, n, port in st["inbox"]
        ]
        heapq.heapify(self._inbox)
        zcs = {zc.name: zc for zc in self.zero_crossings}
        lost = set(st["zero_crossings"]) - set(zcs)
        if lost:
            raise CheckpointError(
                f"island {self.name!r}: zero-crossing(s) {sorted(lost)} were registered "
                f"during the run and cannot be restored"
            )
        self.zero_crossings = [zcs[n] for n in st["zero_crossings"]]
        for sname, (seq, io_k, io_prev, io_next, fresh, force, triggered) in st["slots"].items():
            s = by_name[sname]
            s.seq, s.io_k, s.io_prev, s.io_next, s.fresh, s.force_ufo = seq, io_k, io_prev, io_next, fresh, force
            s.triggered = triggered
        self._events = [(ev.t_ns, ev.priority, ev.seq, ev) for ev in events]
        heapq.heapify(self._events)

    @property
    def resolving_contact(self) -> bool:
        """Merged with other islands, or watching a contact condition made during the run."""
        return (
            self.absorbed_into is not None
            or len(self.members) > 1
            or any(not zc.restorable for zc in self.zero_crossings)
        )

    # ------------------------------------------------------------------ merging (contact)
    def release_timeline(self) -> dict[str, Any]:
        """Give up what this island integrates, for a regrouping (:mod:`hopsim.kernel.merge`):
        its continuous models' states (by model name), pending deliveries, timed events,
        requested barriers, stops and zero-crossings. Any wake-up it planned is void."""
        self._leave_group()
        self._gen += 1
        return {
            "states": {s.name: s.model.x.copy() for s in self._continuous},
            "inbox": self._inbox,
            "events": self._events,
            "requested": self._requested,
            "stops": self._stops,
            "zero_crossings": self.zero_crossings,
        }

    def absorbed_by(self, primary: Island) -> None:
        """This home island's models are integrated by ``primary`` from now on (dormant until a split)."""
        self.absorbed_into, self.members, self._deferred = primary, [self], False
        self._inbox, self._events, self._requested, self._stops, self.zero_crossings = [], [], [], [], []

    def integrate_group(self, group: list[Island], t: int, pooled: list[dict[str, Any]]) -> None:
        """Integrate the home islands ``group`` (this one first) from ``t`` (ns), taking their
        part of the ``pooled`` timelines that :meth:`release_timeline` gave; waits for the
        monitor's check to plan the next hop."""
        names = {h.name for h in group}
        states = {name: x for part in pooled for name, x in part["states"].items()}
        self.absorbed_into, self.members = None, group
        self.t, self._deferred = t, True
        self.slots = [s for h in group for s in h.home_slots]
        x = [states[s.name] for s in self.slots if s.is_continuous]
        self.assemble(np.concatenate(x) if x else np.zeros(0))
        self._inbox = [e for part in pooled for e in part["inbox"] if e[6].home.name in names]
        heapq.heapify(self._inbox)
        self._events = [e for part in pooled for e in part["events"] if e[3].island in names]
        heapq.heapify(self._events)
        self._requested = [r for part in pooled for r in part["requested"] if r[1] in names]
        heapq.heapify(self._requested)
        self._stops = sorted({t_ns for part in pooled for t_ns in part["stops"]})
        self.zero_crossings = [z for part in pooled for z in part["zero_crossings"] if z.island in names]
        self._monitors = list({id(m): m for h in group for m in h._home_monitors}.values())
        self.integrator.reset()

    @property
    def regroupable_at(self) -> int | None:
        """The instant (ns) at which this island waits for a monitor check, in this process;
        None when it cannot be regrouped now (a hop planned or propagated)."""
        if self._propagated or self._pending_end is not None:
            return None
        return self.t

    # ------------------------------------------------------------------ monitors
    def watched_by(self, monitor) -> None:
        """``monitor``'s checks are barriers of this (home) island."""
        self._monitors.append(monitor)
        self._home_monitors.append(monitor)

    def plan_after_check(self) -> None:
        """A monitor's check at this instant is done: plan the next hop, if it waited for it."""
        if self._deferred:
            self._deferred = False
            self._plan()

    @property
    def watched(self) -> bool:
        """Whether a monitor watches this island (contact islands stay in the driver's process)."""
        return bool(self._monitors)

    # ------------------------------------------------------------------ analysis
    def state_slice(self, model_name: str) -> slice:
        """Where model ``model_name``'s continuous states lie in :attr:`state` (in its
        ``state_names`` order)."""
        offset = 0
        for s in self._continuous:
            n = len(s.model.state_names)
            if s.name == model_name:
                return slice(offset, offset + n)
            offset += n
        raise KeyError(f"island {self.name!r} integrates no continuous model {model_name!r}")

    @contextmanager
    def sampled_at(self, x: np.ndarray) -> Iterator[np.ndarray]:
        """Within the block, the island's continuous state is ``x`` and the models hold the
        derivative sample the integrator's first sample of the next hop would take there (the
        models' ``start_hop`` for the hop from the island's time to its next barrier, then loads
        and derivatives); yields the derivative. For analysis (linearization): afterwards the
        island's state is back, the models' own state (loads, hop flags) is not, and the caller
        restores it."""
        t0 = self.t
        t1 = self.next_explicit_barrier()
        t1 = t0 + NS_PER_S if t1 is None or t1 <= t0 else t1
        kept_x, kept_xdot = self._x.copy(), self._xdot.copy()
        try:
            for s in self._start_hop:
                s.call_start_hop(t0, t1)
            yield self._derivative(t0 / NS_PER_S, np.array(x, dtype=float))
        finally:
            self._x[:], self._xdot[:] = kept_x, kept_xdot

    # ------------------------------------------------------------------ inspection
    @property
    def state(self) -> np.ndarray:
        """The island's continuous state vector at its last barrier (a copy)."""
        return self._x.copy()
