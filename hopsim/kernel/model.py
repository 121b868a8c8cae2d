"""Model base classes with the Dshell lifecycle, in Python names.

A model is a plain object; the kernel (or a Ray actor hosting it) calls its methods. Models never
call simpy or Ray. Each lifecycle method has one job and may set only what its docstring says.

Kinds:

- :class:`Model` is a flow model: called at barriers only (valves, electronics, sensors, controllers).
- :class:`ContinuousModel` also takes part in the integration of its island: it may own continuous
  states and is called at every derivative sample (``pre_deriv`` / ``post_deriv``). It always lives
  in its island's process.

Times given to lifecycle methods are integer nanoseconds, except the derivative-sample instants of
``pre_deriv``/``post_deriv``, which are float seconds (they are integrator samples, not barriers).
"""

from __future__ import annotations

import copy
import hashlib
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

from hopsim.kernel.errors import OutputOutsideUpdateFlowOuts
from hopsim.kernel.kind import Kind
from hopsim.kernel.ports import In, InPort, Out
from hopsim.kernel.unpickling import InlineAttributes, set_attributes


# ----------------------------------------------------------------------------- I/O schedules
@dataclass(frozen=True)
class FixedRate:
    """I/O steps at ``t0 + round(k * 1e9 / rate_hz)`` ns."""

    rate_hz: float
    phase_s: float = 0.0


@dataclass(frozen=True)
class VariableRate:
    """I/O steps at the instants returned by the model's :meth:`Model.next_io_time`."""


@dataclass(frozen=True)
class NoIo:
    """No periodic I/O: the model's I/O steps happen at the barriers where messages reach it."""


@dataclass(frozen=True)
class DefaultRate:
    """I/O steps at the simulation's default model period."""


IoSchedule = FixedRate | VariableRate | NoIo | DefaultRate


def model_rng(run_seed: int, model_name: str) -> np.random.Generator:
    """The seeded generator of one model: a pure function of (run seed, model name)."""
    digest = hashlib.sha256(model_name.encode()).digest()
    name_words = [int.from_bytes(digest[i : i + 4], "little") for i in range(0, 16, 4)]
    return np.random.Generator(np.random.PCG64(np.random.SeedSequence([int(run_seed), *name_words])))


@dataclass
class ModelContext:
    """What :meth:`Model.setup` receives: the model's name, island, generator and parameters."""

    name: str
    island: str
    seed: int
    params: dict
    # outputs nothing reads in this run (no subscriber, no recorder): set by the kernel at start
    unread_outputs: frozenset = frozenset()
    _rng: np.random.Generator | None = field(default=None, repr=False)

    @property
    def rng(self) -> np.random.Generator:
        """The model's generator, ``model_rng(seed, name)``, made at its first use (most models
        draw nothing: making one costs more than building the model)."""
        if self._rng is None:
            self._rng = model_rng(self.seed, self.name)
        return self._rng


BARRIER_REQUEST = "__barrier__"  # outbox marker: (BARRIER_REQUEST, t_ns)


class Memo:
    """What a model keeps so as not to compute again what its state determines (a cache): an
    attribute holding one is not part of the model's snapshot, and it is forgotten when the
    model is restored. So a snapshot holds the model's state only: a run that fills its memos
    less (one that reads fewer of the model's outputs) ends with the same snapshot. A memo must
    hand back exactly what the computation it skips would give, bit for bit."""

    def forget(self) -> None:
        """Hold nothing any more (the state it was derived from is gone)."""
        raise NotImplementedError


class LastWritten(dict, Memo):
    """A model's on_change ports (:class:`Out`): port -> (the message last written on it, the
    bytes it serialized to). A message is never changed once written (its subscribers hold it),
    so while the port's published bytes are still those very bytes (the same object: no later
    publication, no restore of other ones), writing that message again is a repeat without
    serializing it."""

    def forget(self) -> None:
        self.clear()


# ----------------------------------------------------------------------------- models
class Model(InlineAttributes):
    """A flow model (Dshell FlowModel).

    Subclasses declare their ports and schedule as class attributes::

        class Battery(Model):
            inputs = {"load": In(Scalar)}
            outputs = {"state": Out(BatteryState)}
            io_schedule = FixedRate(1.0)
            feed_through = False

    ``feed_through`` says whether outputs depend directly on inputs at the same instant; the default
    (None) means True when the model has both inputs and outputs, as in Dshell.
    """

    inputs: ClassVar[dict[str, In]] = {}
    outputs: ClassVar[dict[str, Out]] = {}
    io_schedule: ClassVar[IoSchedule] = DefaultRate()
    feed_through: ClassVar[bool | None] = None
    # the fault kinds on_fault handles: a tuple of kinds, or {kind: the Fault fields it reads}
    # (see hopsim.kernel.faults.FAULT_FIELDS); every model also accepts ``kill``
    accepts_faults: ClassVar[tuple[str, ...] | dict[str, tuple[str, ...]]] = ()
    is_continuous: ClassVar[bool] = False
    # the declaration of a model kind's state (hopsim.kernel.kind): each instance holds its state
    # as one row of it, ``self.row``, whose fields read and write as attributes
    kind: ClassVar[Kind | None] = None

    # Attributes owned by the framework, excluded from the default snapshot.
    _FRAMEWORK_ATTRS = frozenset({"name", "ctx", "ports", "_outbox", "_may_write", "_t_ns", "x", "xdot"})

    def __init__(self, name: str):
        if not name or "/" in name:
            raise ValueError(f"model name {name!r} must be non-empty and contain no '/'")
        self.name = name
        self.ctx: ModelContext | None = None
        self.ports: dict[str, InPort] = {p: InPort(p, spec) for p, spec in self.inputs.items()}
        self._outbox: list[tuple[str, Any]] = []
        self._may_write = False
        self._t_ns = 0
        if self.kind is not None:
            self.row = self.kind.rows(1)

    # ------------------------------------------------------------------ framework side
    def has_feed_through(self) -> bool:
        """Dshell's default: feed-through unless the model lacks inputs or outputs."""
        if self.feed_through is not None:
            return bool(self.feed_through)
        return bool(self.inputs) and bool(self.outputs)

    def bind(self, ctx: ModelContext) -> None:
        """Called by the runtime once, before :meth:`setup`."""
        self.ctx = ctx
        if any(spec.on_change for spec in self.outputs.values()):
            if not hasattr(self, "_published"):
                self._published: dict[str, bytes] = {}  # on_change ports: the last message published, serialized
            self._last_written = LastWritten()

    @property
    def rng(self) -> np.random.Generator:
        """This model's own seeded generator (the only source of randomness a model may use)."""
        return self.ctx.rng

    # ------------------------------------------------------------------ port helpers
    def read(self, port: str) -> Any:
        """Latest message on an input port (signal semantics), or None."""
        return self.ports[port].value  # InPort.read(), without its call (read at every barrier)

    def take(self, port: str) -> Any:
        """Latest message on an input port if new since the last take (a command is seen once)."""
        return self.ports[port].take()

    def drain(self, port: str) -> list:
        """Every message queued on an input port since the last drain, oldest first."""
        return self.ports[port].drain()

    def wanted(self, port: str) -> bool:
        """Whether anything reads output ``port`` in this run: a subscriber or the recorder.

        Known once the run starts (before :meth:`setup`); True before. A model may skip building
        a message nobody reads (the kernel drops writes to such ports anyway), which changes no
        recorded stream: with a recorder every output is wanted. Nothing the model computes for
        its own later use may be skipped with it.
        """
        ctx = self.ctx
        return ctx is None or port not in ctx.unread_outputs

    def write(self, port: str, msg: Any) -> None:
        """Publish a message on an output port. Only allowed inside :meth:`update_flow_outs`."""
        if not self._may_write:
            raise OutputOutsideUpdateFlowOuts(
                f"{self.name}: outputs are written only in update_flow_outs (Dshell rule); "
                f"move the write of {port!r} there"
            )
        spec = self.outputs.get(port)
        if spec is None:
            raise KeyError(f"{self.name} has no output port {port!r}; it has {sorted(self.outputs)}")
        if not isinstance(msg, spec.msg_type):
            raise TypeError(
                f"{self.name}.{port} carries {spec.msg_type.DESCRIPTOR.full_name}, got {type(msg).__name__}"
            )
        # (a port nothing reads publishes nothing anyway: :meth:`wanted`, inline)
        if spec.on_change and (self.ctx is None or port not in self.ctx.unread_outputs):
            published = self._published
            last = self._last_written.get(port)
            if last is not None and last[0] is msg and published.get(port) is last[1]:
                return  # the message last written, its bytes still the published ones
            data = msg.SerializeToString(deterministic=True) if spec.has_maps else msg.SerializeToString()
            held = published.get(port)
            if held == data:
                self._last_written[port] = (msg, held)
                return  # a repeat: nothing is published
            published[port] = data
            self._last_written[port] = (msg, data)
        self._outbox.append((port, msg))

    def outputs_at(self, t_ns: int) -> dict[str, Any]:
        """What :meth:`update_flow_outs` writes at ``t_ns``, by output port, published nowhere:
        for analysis (linearization) of the model's outputs at its present state. Every output
        counts as wanted; the caller restores the model's state afterwards (the method may advance
        a generator or a sequence number as a real I/O step would)."""
        ctx, unread = self.ctx, None
        if ctx is not None:
            unread, ctx.unread_outputs = ctx.unread_outputs, frozenset()
        outbox, self._outbox, self._may_write = self._outbox, [], True
        published = getattr(self, "_published", None)
        if published is not None:
            self._published = {}  # every output, repeat or not
        try:
            self.update_flow_outs(t_ns)
            written = {port: msg for port, msg in self._outbox if port != BARRIER_REQUEST}
        finally:
            self._outbox, self._may_write = outbox, False
            if published is not None:
                self._published = published
            if ctx is not None:
                ctx.unread_outputs = unread
        return written

    def request_barrier(self, t_ns: int) -> None:
        """Ask for a barrier of this model's island at ``t_ns`` (a discontinuity ahead, e.g. the
        end of a pulse). Call it at barriers (I/O steps, update_flow_outs, on_fault), not in a hop."""
        self._outbox.append((BARRIER_REQUEST, int(t_ns)))

    # ------------------------------------------------------------------ lifecycle (override)
    def setup(self, ctx: ModelContext) -> None:
        """After wiring: size buffers and derive parameters from ``ctx.params``. Sets parameters only."""

    def next_io_time(self, t_ns: int) -> int | None:
        """Variable-rate models: the next I/O instant after t_ns (ns), or None for no future trigger."""
        return None

    def start_io_step(self, t0_ns: int, t1_ns: int | None) -> None:
        """Start of this model's own I/O step [t0, t1]: reset counters, latch inputs."""

    def start_hop(self, t0_ns: int, t1_ns: int) -> None:
        """Discrete-state update across the hop [t0, t1]; every model of the island, in unison."""

    def update_flow_outs(self, t_ns: int) -> None:
        """Compute and :meth:`write` outputs from states and inputs. The only method that writes."""

    def end_hop(self, t0_ns: int, t1_ns: int) -> None:
        """After the island has propagated over [t0, t1]."""

    def end_io_step(self, t0_ns: int, t1_ns: int) -> None:
        """End of this model's own I/O step [t0, t1]: sensor measurements, control laws."""

    def on_fault(self, fault: Any, t_ns: int) -> None:
        """Apply a fault addressed to this model (only kinds listed in ``accepts_faults``, and only
        faults :meth:`check_fault` passed)."""
        raise NotImplementedError(f"{self.name} accepts no faults")

    def check_fault(self, fault: Any) -> None:
        """Raise ValueError naming the problem if this model could not apply ``fault`` (of a kind
        it accepts): a unit it does not have, a value it cannot take. The kernel calls it before
        it accepts a fault (a scenario's and ``--fault``'s before the run, a live one before the
        pacer takes it), so that ``on_fault`` never meets one it must refuse while the run goes.
        It reads the model's configuration only, and changes nothing."""

    # ------------------------------------------------------------------ rollback and checkpoints
    def snapshot(self) -> Any:
        """Everything needed to return to this instant: own attributes, port states, generator (a
        copy: what the model does later does not reach it)."""
        return copy.deepcopy(self.snapshot_view())

    def snapshot_view(self) -> tuple:
        """What :meth:`snapshot` copies, as it is now (the model's own objects): to be read at
        once and let go (a state hash), never kept. A model that overrides :meth:`snapshot` is
        read through it instead (:meth:`Slot.snapshot_to_read`)."""
        # references to other models (a force model's body) are links, restored by their owners;
        # memos are no state (see Memo)
        own = {
            k: v for k, v in vars(self).items() if k not in self._FRAMEWORK_ATTRS and not isinstance(v, (Model, Memo))
        }
        rng_state = self.ctx.rng.bit_generator.state if self.ctx else None
        ports = {k: p.state() for k, p in self.ports.items()}
        return (own, ports, rng_state)

    def restore(self, snapshot: Any) -> None:
        """Return to a state returned by :meth:`snapshot`."""
        own, ports, rng_state = copy.deepcopy(snapshot)
        set_attributes(self, own)  # not __dict__.update: see hopsim.kernel.unpickling
        for value in vars(self).values():
            if isinstance(value, Memo):
                value.forget()
        for k, s in ports.items():
            self.ports[k].set_state(s)
        if rng_state is not None:
            self.ctx.rng.bit_generator.state = rng_state

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name}>"


class ContinuousModel(Model):
    """A model that takes part in the integration of its island (Dshell ContinuousModel).

    ``state_names`` lists the continuous states ``x_c``; during a hop ``self.x`` is a view of them at
    the current derivative sample and ``post_deriv`` writes their time derivatives into ``self.xdot``.
    Between hops ``self.x`` holds the committed state, which events may change.
    """

    is_continuous: ClassVar[bool] = True
    state_names: ClassVar[tuple[str, ...]] = ()
    io_schedule: ClassVar[IoSchedule] = NoIo()
    # True when pre_deriv adds the same loads at every derivative sample of a hop (thrust held
    # between valve switches, which are barriers): the island may then gather them once per hop
    # and propagate with a model's own compiled hop step (see ``propagate_hop``)
    loads_constant_over_hop: ClassVar[bool] = False
    # True when post_deriv writes a derivative that neither the time nor any state changes within
    # a hop (a tank's draw, latched by start_hop from its flow messages): beside a model with its
    # own compiled hop step, the island then advances these states itself, by the same RK4 sums
    # (see ``Island.finish_hop``)
    state_rate_constant_over_hop: ClassVar[bool] = False
    # a continuous model that owns the island's states may define
    #   propagate_hop(models, steps_s, t0_s) (staticmethod): propagate many such models, loads
    #     gathered, over the sub-steps ``steps_s`` (s) from ``t0_s`` (s, the hop's start) in one
    #     compiled call (the same arithmetic for one or many)
    #   hop_ready() -> bool: whether it can do so now
    propagate_hop: ClassVar[Any] = None

    def __init__(self, name: str):
        super().__init__(name)
        self.x = np.zeros(len(self.state_names))
        self.xdot = np.zeros(len(self.state_names))

    def initial_state(self) -> np.ndarray:
        """Initial value of the continuous states (same order as ``state_names``)."""
        return np.zeros(len(self.state_names))

    def pre_deriv(self, t_s: float) -> None:
        """Forces and other inputs into the dynamics, at a derivative sample (t in seconds)."""

    def post_deriv(self, t_s: float) -> None:
        """Derivatives of own continuous states into ``self.xdot``, at a derivative sample."""

    def state(self, name: str) -> float:
        return float(self.x[self.state_names.index(name)])
