"""The island's record of one model: its handle, wiring, I/O schedule and per-barrier flags,
and the one way the kernel calls the model's lifecycle methods (:meth:`Slot.call`)."""

from __future__ import annotations

from collections.abc import Callable
from time import thread_time_ns
from typing import TYPE_CHECKING

from hopsim.kernel.events import IoStepEvent, MethodEvent
from hopsim.kernel.model import ContinuousModel, Model, NoIo, VariableRate
from hopsim.kernel.simtime import PeriodicSchedule
from hopsim.kernel.unpickling import InlineAttributes

if TYPE_CHECKING:
    from hopsim.kernel.island import Island


def _timed(slot: Slot, fn: Callable[[float], None]) -> Callable[[float], None]:
    def timed(t_s: float) -> None:
        t0 = thread_time_ns()
        fn(t_s)
        slot.cpu_ns += thread_time_ns() - t0

    return timed


class Slot(InlineAttributes):
    """The island's record of one model: handle, wiring, schedule and per-barrier flags.

    Its attributes are ``__slots__``: there are more than CPython keeps inline in an object (see
    :mod:`hopsim.kernel.unpickling`), and every barrier reads and sets several of each model's."""

    __slots__ = (
        "accepts_faults",
        "accounting",
        "cls",
        "cpu_ns",
        "ctx",
        "direct",
        "does_end_io",
        "does_start_io",
        "does_update",
        "due",
        "feed_through",
        "force_ufo",
        "fresh",
        "handle",
        "home",
        "in_topics",
        "io_events",
        "io_k",
        "io_next",
        "io_prev",
        "io_schedule",
        "is_continuous",
        "island",
        "local",
        "message_driven",
        "method_events",
        "model",
        "name",
        "order",
        "out_topics",
        "periodic",
        "received",
        "seq",
        "trigger_ports",
        "triggered",
        "unread",
        "variable_rate",
    )

    def __init__(
        self,
        handle,
        model: Model,
        island: Island,
        ties_in: dict[str, str],
        ties_out: dict[str, tuple[str, int, int, bool]],
    ):
        self.handle = handle
        self.name = handle.name
        self.cls = type(model)
        self.island = island  # the island that integrates it now
        self.home = island  # the island it was placed in (they differ while merged)
        self.is_continuous = model.is_continuous
        self.feed_through = model.has_feed_through()
        self.io_schedule = model.io_schedule
        self.variable_rate = isinstance(model.io_schedule, VariableRate)
        self.accepts_faults = tuple(model.accepts_faults)  # the kinds (a dict gives its keys)
        self.in_topics = ties_in  # port -> topic
        self.out_topics = ties_out  # port -> (topic, latency_ns, priority, queue)
        self.seq = 0
        self.order = 0
        self.periodic: PeriodicSchedule | None = None
        self.io_k = 0
        self.io_prev: int | None = None
        self.io_next: int | None = None
        self.due = False
        self.fresh = False
        self.force_ufo = False
        self.method_events: dict[str, list[MethodEvent]] = {}
        self.io_events: dict[str, list[IoStepEvent]] = {"begin": [], "end": []}
        self.model: Model | None = handle.model if not handle.remote else None
        self.local = self.model is not None  # the model object lives in this process
        # inputs whose messages start an I/O step of the model at the barrier where they arrive:
        # every input of a model without periodic I/O, and inputs declared In(..., trigger=True)
        no_io = isinstance(model.io_schedule, NoIo)
        self.trigger_ports = frozenset(p for p, spec in model.inputs.items() if no_io or spec.trigger)
        self.message_driven = bool(self.trigger_ports)
        self.triggered = False
        self.ctx = None
        self.unread: frozenset = frozenset()  # output ports nobody reads (writes are dropped)
        self.does_end_io = self.does_start_io = self.does_update = True  # whether the methods can do anything
        self.accounting = False
        self.cpu_ns = 0  # CPU time spent in this model's methods (thread time, ns)
        self.direct = False  # local, no method events, no accounting: call the object itself
        self.received = 0  # messages and faults handed to the model so far (a fleet form's cue)

    def overrides(self, method: str) -> bool:
        """Whether calling ``method`` can do anything (skipping no-op calls changes no result)."""
        base = ContinuousModel if self.is_continuous else Model
        return getattr(self.cls, method) is not getattr(base, method, None) or method in self.method_events

    def call(self, method: str, *args):
        """Call one lifecycle method of the model: the kernel's only way to. What the model
        writes (only ``update_flow_outs`` may), and the barriers it asks for, go to the bus."""
        if not self.direct:
            return self._call_through_handle(method, args)
        model = self.model
        if method == "update_flow_outs":
            model._may_write = True
            try:
                result = model.update_flow_outs(*args)
            finally:
                model._may_write = False
        else:
            result = getattr(model, method)(*args)  # it may ask for barriers, never write
        if model._outbox:
            self._route_outbox(model)
        return result

    # the calls every barrier and hop makes, each :meth:`call` for one method without the tuple
    # of arguments and the test of the method's name (results are the same, call for call)
    def _route_outbox(self, model) -> None:
        """What ``model`` wrote during the call, to the island's router."""
        out = model._outbox
        model._outbox = []
        self.island.route(self, out)

    def call_update_flow_outs(self, t_ns: int) -> None:
        """``call("update_flow_outs", t_ns)``."""
        if not self.direct:
            self._call_through_handle("update_flow_outs", (t_ns,))
            return
        model = self.model
        model._may_write = True
        try:
            model.update_flow_outs(t_ns)
        finally:
            model._may_write = False
        if model._outbox:
            self._route_outbox(model)

    def call_start_hop(self, t0_ns: int, t1_ns: int) -> None:
        """``call("start_hop", t0_ns, t1_ns)``."""
        if not self.direct:
            self._call_through_handle("start_hop", (t0_ns, t1_ns))
            return
        model = self.model
        model.start_hop(t0_ns, t1_ns)
        if model._outbox:
            self._route_outbox(model)

    def call_end_hop(self, t0_ns: int, t1_ns: int) -> None:
        """``call("end_hop", t0_ns, t1_ns)``."""
        if not self.direct:
            self._call_through_handle("end_hop", (t0_ns, t1_ns))
            return
        model = self.model
        model.end_hop(t0_ns, t1_ns)
        if model._outbox:
            self._route_outbox(model)

    def call_end_io_step(self, t0_ns: int, t1_ns: int) -> None:
        """``call("end_io_step", t0_ns, t1_ns)``."""
        if not self.direct:
            self._call_through_handle("end_io_step", (t0_ns, t1_ns))
            return
        model = self.model
        model.end_io_step(t0_ns, t1_ns)
        if model._outbox:
            self._route_outbox(model)

    def call_start_io_step(self, t0_ns: int, t1_ns: int | None) -> None:
        """``call("start_io_step", t0_ns, t1_ns)``."""
        if not self.direct:
            self._call_through_handle("start_io_step", (t0_ns, t1_ns))
            return
        model = self.model
        model.start_io_step(t0_ns, t1_ns)
        if model._outbox:
            self._route_outbox(model)

    def call_next_io_time(self, t_ns: int):
        """``call("next_io_time", t_ns)``."""
        if not self.direct:
            return self._call_through_handle("next_io_time", (t_ns,))
        model = self.model
        result = model.next_io_time(t_ns)
        if model._outbox:
            self._route_outbox(model)
        return result

    def snapshot_to_read(self):
        """The model's snapshot, to be read at once and let go (a state hash): its state as it is,
        not copied, when the model lives here and keeps :meth:`Model.snapshot`; else a snapshot."""
        if self.direct and self.cls.snapshot is Model.snapshot:
            return self.call("snapshot_view")
        return self.call("snapshot")

    def _call_through_handle(self, method: str, args: tuple):
        """The call with what a direct one leaves out: the model's method events, its CPU
        accounting, and a model that lives in another process (its handle ships the call)."""
        t0 = thread_time_ns() if self.accounting else 0
        events = self.method_events.get(method, ())
        try:
            for ev in events:
                if ev.before:
                    ev.callback(ev, *args)
            result, out = self.handle.call(method, *args)
            if out:
                self.island.route(self, out)
            for ev in events:
                if not ev.before:
                    ev.callback(ev, *args)
        finally:
            if self.accounting:
                self.cpu_ns += thread_time_ns() - t0
        return result
