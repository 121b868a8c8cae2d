"""Row blocks: a rate group's regular instants run kind by kind over rows, in compiled code.

A rate group (:mod:`hopsim.kernel.rate_group`) takes one barrier per instant for all its members
due then, but each member still runs its own models one by one: every model's Python, every
message built, routed and delivered. When the members are alike (the same kinds of models in the
same order, wired alike) and nothing irregular happens to them, the group's instant is the same
few operations repeated per member. A *block* holds those members' models as rows, one row per
island and one row form per model kind (the protocol below), and runs an instant as:

1. the hop to the instant: the forms that load the body (``start_hop``) add into its rows, then
   the body's form propagates every row (the scalar form's compiled RK4, row by row);
2. the barrier: the messages that arrive now (a *delay line* per tie with a latency, a whole
   number of the group's periods) are put on their subscribers' input rows; then in the islands'
   feed-through order each form's ``update_flow_outs`` over all rows, its outputs handed to the
   input rows of the same island's subscribers at once (zero-latency ties) or to the delay line.

Every row function is the scalar model's code for one row (same IEEE operations, same draws
from the model's own generator), so a block changes no result. With a recorder, each output's
messages of the instant are encoded from their rows (:class:`Encoder`: the message type's
:func:`~hopsim.schemas.rows.row_layout`, protobuf's bytes) and handed over as columns in stream
order (:class:`hopsim.bus.recorder.EncodedColumns`; one encoded envelope each to a recorder
that takes no columns), their channels registered in the order the members' own barriers would
record them.

A block may hold part of a group: the most common kind of member (the same model classes in the
same order) forms it, the others stay members run one by one at the same instants. Messages
between the block and the islands outside it (the group's other members, other islands, in a
Ray host the islands of other hosts) cross as envelopes: what the rows publish for subscribers
outside goes to them when published (:meth:`Block._send_outward`, each subscriber's rank among
the topic's kept), and a message from outside for an input kept as rows that nothing in the
block feeds, arriving at one of the block's instants, waits in the block's inbox (in the order
of the island's inbox) and is put on the input rows at that instant (:meth:`Block.takes_message`).
A block that leaves members of its group outside forms only once all its outputs have channels
in the recording (it records an instant before the members outside it do).

While nothing else happens before its next instant (no other wake-up, timed event or return of
the run in between; in a Ray host, inside the window), the group runs the block's next instants
at once, without a clock event each (:meth:`Simulation.alone_through`).

While a block runs, its members' model objects, ports, slots and islands are stale. It *exits*
(every form stores its rows back into its models, the islands' and slots' counters and
schedules are brought up to date, the messages still on their way become envelopes in their
subscribers' inboxes) before anything else looks at or changes a member: a message or fault from
outside the block that it does not take, a timed event, a requested barrier, a zero-crossing, a
stop between its instants, a checkpoint, :meth:`Simulation.model`, a new recorder; the members
take that instant alone, and the group forms a block again at a later instant. A run that
returns at one of the block's instants keeps it (``stats`` adds what it holds); one whose
exception broke an instant stores it back.

A model class offers a row form with the class attribute ``row_form``, the dotted path of the
form class (``"package.module:Class"``, imported when first needed, so that a model module need
not import its row form's). A form class has:

    inputs: {port: PayloadLayout}    the input ports it keeps as rows
    outputs: {port: (PayloadLayout, capacity)}   in the order the model writes them
    takes_input(port) -> bool        (static) whether an input port is kept as rows
    Form(models, row_of)             one row per model; ``row_of`` maps a vehicle name to its row
    qualifies(t_ns) -> bool          optional: whether these models can run as rows now
    load() / store()                 the models' state into the rows / back, exactly
    in_rows(port) -> (InRows, column)   where an input port's messages go
    out_rows(port) -> OutRows        what an output port wrote at this instant
    update_flow_outs(t_ns, body)     optional: the instant's outputs (``body``: the body's form)
    start_hop(t0_ns, t1_ns, body)    optional: the loads on the body over the hop
    hop(t0_ns, t1_ns, steps_s, loaders)   the body's form only: propagate every row
    X                                the body's form only: the rows' continuous states (row i the
                                     i-th model's ``x``), checked to be finite after every instant
                                     as an island's state is at its barriers
                                     (:func:`hopsim.kernel.bounds.check_rows_finite`)
    latches_loads: bool              optional, the body's form: True if its first hop latches the
                                     loads as the body's own start_hop does (its inputs are quiet
                                     while the block runs)

Restrictions today (members that do not meet them stay out of the block): every model local,
without method or I/O-step events, accounting, ``end_io_step`` or ``start_io_step``; the
members' periodic models at the group's period, the others message-driven by all their inputs;
one body per island, propagated by its form, loaded only by forms with ``start_hop``; every tie
between models of the block at once within an island (publisher before subscriber) or a latency
of whole periods; an input fed from outside the block a signal port nothing in it feeds. No
block forms with a stop callback, a barrier recorded as a kernel event or a partial replay, nor
among the islands the driver keeps beside Ray hosts.
"""

from __future__ import annotations

import functools
import heapq
import importlib
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
from numba import njit

from hopsim.bus.envelope import Envelope
from hopsim.bus.packed import EncodedEnvelope
from hopsim.bus.recorder import EncodedColumns, RowChannels
from hopsim.bus.router import deliver_to_subscribers
from hopsim.kernel.bounds import check_rows_finite
from hopsim.schemas.rows import row_layout
from hopsim.schemas.string_table import StringTable

if TYPE_CHECKING:
    from hopsim.kernel.island import Island


# A block is formed only when the run goes on for at least this many of its instants: loading the
# rows and storing them back cost about as much as one instant of the members on their own each.
MIN_INSTANTS = 4


# ----------------------------------------------------------------------------- payload rows
@dataclass(frozen=True)
class PayloadLayout:
    """How one kind of message is held in rows: ``width`` float64 numbers, the message's own time
    (``t_ns`` field, -1 if it has none) and the vehicle it names (its block row).
    ``to_message(payload, msg_t_ns, vehicle)`` and ``from_message(msg) -> (payload, msg_t_ns,
    vehicle)`` convert, exactly. For recording, ``message_type`` and ``fill(rows, payload, msg_t,
    src, count, strings_of_rows)``: a compiled function writing the messages of an output's rows
    (row j's first ``count[j]``, in order) into rows of the message type's
    :func:`~hopsim.schemas.rows.row_layout`, returning how many; their wire bytes are
    :meth:`RowLayout.encode`'s, protobuf's own (``tests/test_blocks.py``)."""

    name: str
    width: int
    to_message: Callable[[np.ndarray, int, str], Any]
    from_message: Callable[[Any], tuple[list[float], int, str]]
    message_type: type | None = None
    fill: Callable | None = None


class OutRows:
    """What one output port of a form wrote at an instant: up to ``capacity`` messages per row
    (``count``), in the order written."""

    def __init__(self, layout: PayloadLayout, n: int, capacity: int):
        self.layout = layout
        self.payload = np.zeros((n, capacity, layout.width))
        self.msg_t = np.full((n, capacity), -1, np.int64)
        self.src = np.full((n, capacity), -1, np.int64)
        self.count = np.zeros(n, np.int64)


class InRows:
    """The run-time state of input ports (:class:`~hopsim.kernel.ports.InPort`) as rows: per row
    and column (one column per port kept here) the latest message, the time it was published
    (``t_ns``), ``freshness`` and ``seen``; for a queue port also the queued messages."""

    def __init__(self, layout: PayloadLayout, n: int, columns: int = 1, queue_capacity: int = 0):
        self.layout = layout
        self.value = np.zeros((n, columns, layout.width))
        self.msg_t = np.full((n, columns), -1, np.int64)
        self.src = np.full((n, columns), -1, np.int64)
        self.t_ns = np.full((n, columns), -1, np.int64)
        self.freshness = np.zeros((n, columns), np.int64)
        self.seen = np.zeros((n, columns), np.int64)
        self.is_queue = queue_capacity > 0
        q = max(queue_capacity, 1)
        self.queue = np.zeros((n, q, layout.width))
        self.queue_msg_t = np.full((n, q), -1, np.int64)
        self.queue_src = np.full((n, q), -1, np.int64)
        self.queued = np.zeros(n, np.int64)

    def load(self, i: int, port, column: int, row_of: dict[str, int]) -> None:
        """Row ``i``'s column from the model's port."""
        value, t_ns, freshness, seen, queued = port.state()
        self.t_ns[i, column], self.freshness[i, column], self.seen[i, column] = t_ns, freshness, seen
        if value is not None:
            payload, msg_t, vehicle = self.layout.from_message(value)
            self.value[i, column], self.msg_t[i, column], self.src[i, column] = payload, msg_t, row_of[vehicle]
        if len(queued) > self.queue.shape[1]:
            raise ValueError(
                f"port {port.name!r} holds {len(queued)} queued messages, more than the block's {self.queue.shape[1]}"
            )
        self.queued[i] = len(queued)
        for q, msg in enumerate(queued):
            payload, msg_t, vehicle = self.layout.from_message(msg)
            self.queue[i, q], self.queue_msg_t[i, q], self.queue_src[i, q] = payload, msg_t, row_of[vehicle]

    def store(self, i: int, port, column: int, names: list[str]) -> None:
        """The model's port from row ``i``'s column."""
        to = self.layout.to_message
        freshness = int(self.freshness[i, column])
        value = (
            None
            if freshness == 0
            else to(self.value[i, column], int(self.msg_t[i, column]), names[self.src[i, column]])
        )
        queued = [
            to(self.queue[i, q], int(self.queue_msg_t[i, q]), names[self.queue_src[i, q]])
            for q in range(int(self.queued[i]))
        ]
        port.set_state((value, int(self.t_ns[i, column]), freshness, int(self.seen[i, column]), queued))


@njit(cache=True)
def deliver_rows(
    t_ns,
    rows_from,
    out_payload,
    out_msg_t,
    out_src,
    out_count,
    column,
    value,
    msg_t,
    src,
    port_t,
    freshness,
    queue,
    queue_msg_t,
    queue_src,
    queued,
    is_queue,
    received,
):
    """Hand the messages of an output (row ``rows_from[i]``'s, published at ``t_ns``) to the input
    column of every row ``i`` (``rows_from[i] < 0``: none), as :meth:`InPort.deliver` does one by
    one; ``received[i]`` counts them."""
    width = value.shape[2]
    for i in range(rows_from.shape[0]):
        j = rows_from[i]
        if j < 0:
            continue
        for c in range(out_count[j]):
            freshness[i, column] += 1
            for w in range(width):
                value[i, column, w] = out_payload[j, c, w]
            msg_t[i, column] = out_msg_t[j, c]
            src[i, column] = out_src[j, c]
            port_t[i, column] = t_ns
            if is_queue:
                q = queued[i]
                for w in range(width):
                    queue[i, q, w] = out_payload[j, c, w]
                queue_msg_t[i, q] = out_msg_t[j, c]
                queue_src[i, q] = out_src[j, c]
                queued[i] = q + 1
            received[i] += 1


def _deliver(t_ns: int, rows_from: np.ndarray, out: OutRows, target: InRows, column: int, received: np.ndarray) -> None:
    """:func:`deliver_rows` of what ``out`` holds to ``target``'s ``column``."""
    deliver_rows(
        t_ns,
        rows_from,
        out.payload,
        out.msg_t,
        out.src,
        out.count,
        column,
        target.value,
        target.msg_t,
        target.src,
        target.t_ns,
        target.freshness,
        target.queue,
        target.queue_msg_t,
        target.queue_src,
        target.queued,
        target.is_queue,
        received,
    )


class Encoder:
    """The wire bytes of what an output wrote at an instant (see :class:`PayloadLayout`), the
    vehicles' names interned once in the block's string table."""

    def __init__(self, layout: PayloadLayout, strings: StringTable, string_of_row: np.ndarray, capacity: int):
        self.layout = layout
        self.rows_layout = row_layout(layout.message_type)
        self.rows = self.rows_layout.empty(capacity)
        self.strings = strings
        self.string_of_row = string_of_row

    def encode(self, out: OutRows) -> tuple[bytes, np.ndarray]:
        """(all the messages' bytes, their offsets, int64: message k is ``data[offsets[k]:offsets[k+1]]``)."""
        m = self.layout.fill(self.rows, out.payload, out.msg_t, out.src, out.count, self.string_of_row)
        data, offsets = self.rows_layout.encode(self.rows[:m], self.strings)
        return data.tobytes(), offsets


class UniformDraws:
    """Each row's next uniform draws on [0, 1) from its model's own generator (a PCG64), drawn
    ahead ``ahead`` at a time so that compiled code can take them: ``values[i, used[i]]`` is row
    ``i``'s next, the number its generator's ``random()`` would return (``random(k)`` gives the
    numbers of k calls, each one 64-bit step of the generator). :meth:`settle` puts every
    generator where the draws taken would have left it (its state before them, advanced by as
    many steps: ``bit_generator.advance``), as if drawn one by one."""

    def __init__(self, generators: list, ahead: int = 256):
        self.generators = generators
        self.ahead = ahead
        self.values = np.zeros((len(generators), ahead))
        self.used = np.full(len(generators), ahead, np.int64)  # nothing drawn yet
        self._before: list[dict | None] = [None] * len(generators)  # a row's state before its values

    @staticmethod
    def exact_for(generator) -> bool:
        """Whether a generator's draws can be taken ahead and given back (a PCG64's)."""
        return isinstance(generator.bit_generator, np.random.PCG64)

    def ensure(self, rows: np.ndarray, k: np.ndarray) -> None:
        """At least ``k[j]`` values ready for row ``rows[j]``."""
        for i, need in zip(rows.tolist(), k.tolist(), strict=True):
            if self.used[i] + need > self.ahead:
                bits = self.generators[i].bit_generator
                self._settle_row(i)
                self._before[i] = bits.state
                self.values[i] = self.generators[i].random(self.ahead)
                self.used[i] = 0

    def _settle_row(self, i: int) -> None:
        before = self._before[i]
        if before is not None:
            bits = self.generators[i].bit_generator
            bits.state = before
            bits.advance(int(self.used[i]))
            self._before[i] = None

    def settle(self) -> None:
        """Every generator as if its draws so far had been taken one by one (and nothing ahead)."""
        for i in range(len(self.generators)):
            self._settle_row(i)
        self.used[:] = self.ahead


def resolve_row_form(model_class) -> type | None:
    """The row form class a model class names (``row_form = "module:Class"``), or None."""
    path = getattr(model_class, "row_form", None)
    if path is None:
        return None
    if isinstance(path, str):
        module, _, name = path.partition(":")
        return getattr(importlib.import_module(module), name)
    return path


@functools.cache
def _row_forms(classes: tuple[type, ...]) -> list | None:
    """The row forms of an island's kinds of models, in order, if every one has one and exactly
    one is a body's; else None."""
    forms = [resolve_row_form(c) for c in classes]
    if any(f is None for f in forms) or sum(hasattr(f, "hop") for f in forms) != 1:
        return None
    return forms


# ----------------------------------------------------------------------------- wiring
@dataclass
class _Tie:
    """Output ``port`` of position ``pub`` to input ``sub_port`` of position ``sub``: within each
    island at once (``latency_ns`` 0), or through the delay line of (pub, port)."""

    pub: int
    port: str
    sub: int
    sub_port: str
    latency_ns: int
    rows_from: np.ndarray  # per subscriber row, the publisher's row (-1: none)


class _Position:
    """The models at one place of the islands' feed-through order: one form for all rows, and the
    kernel's counters of their slots."""

    def __init__(self, slots: list, form):
        self.slots = slots
        self.form = form
        self.unread = slots[0].unread
        self.ufo = getattr(form, "update_flow_outs", None)
        self.outputs_only = getattr(form, "outputs_only", False)  # its update only writes outputs
        self.outputs = [port for port in form.outputs if port not in self.unread]
        self.seq = np.array([s.seq for s in slots], np.int64)
        self.received = np.zeros(len(slots), np.int64)  # messages handed to the models meanwhile
        self.message_driven = slots[0].periodic is None
        self.last_io = np.full(len(slots), -1, np.int64)  # instant of the last I/O step a message started


class Block:
    """A rate group's members run as rows (see the module). Made by :meth:`form`."""

    def __init__(
        self,
        group,
        islands: list[Island],
        positions: list[_Position],
        body: int,
        ties: list[_Tie],
        period_ns: int,
        t_ns: int,
        owner,
        row_of: dict[str, int],
        outward: dict[tuple, list],
        position_of: dict[str, tuple[int, int]],
    ):
        self.group = group
        self.islands = islands
        self.positions = positions
        self.body = body
        self.period_ns = period_ns
        self.t_ns = t_ns  # the last instant run (the members' last barrier)
        self.owner = owner
        self.row_of = row_of  # a vehicle's row: the members', then other vehicles'
        self.names = list(row_of)
        self._position_of = position_of  # a model's (position, row)
        self._outward = outward  # (position, port) -> [(row, subscribers outside the block)]
        self._inward = self._inputs_open_to_outside(ties)
        self._inbound: list[tuple] = []  # a heap of the messages from outside, in inbox order
        self._taken = 0
        self.instants = 0
        self.until_ns = 1 << 63  # the members' first irregular instant: handed back before it
        self.active = True
        self.intact = True  # no instant is half done (an exception inside one)
        self._loaders = [p.form for i, p in enumerate(positions) if i != body and hasattr(p.form, "start_hop")]
        self._at_once = {(p, port): [] for p, pos in enumerate(positions) for port in pos.outputs}
        self._delayed: dict[tuple[int, str], int] = {}  # (position, port) -> latency (ns)
        for t in ties:
            if t.latency_ns:
                self._delayed[t.pub, t.port] = t.latency_ns
            else:
                self._at_once[t.pub, t.port].append(t)
        # (position, port) -> [(publish instant, what was written, first sequence number per row)]
        self.lines: dict[tuple[int, str], deque] = {key: deque() for key in self._delayed}
        self._arrivals = [t for t in ties if t.latency_ns]
        self.recorder = owner.recorder
        self._recorded: dict[tuple[int, str], tuple] = {}
        if self.recorder is not None:
            self._prepare_recording()

    def _inputs_open_to_outside(self, ties: list[_Tie]) -> dict[tuple[int, str], np.ndarray]:
        """(position, input port) -> the rows whose input nothing inside the block feeds, for the
        signal ports the forms keep as rows."""
        n = len(self.islands)
        open_rows = {}
        for q, pos in enumerate(self.positions):
            for port in pos.form.inputs:
                if pos.form.takes_input(port) and not pos.form.in_rows(port)[0].is_queue:
                    open_rows[q, port] = np.ones(n, np.bool_)
        for tie in ties:
            rows = open_rows.get((tie.sub, tie.sub_port))
            if rows is not None:
                rows[tie.rows_from >= 0] = False
        return open_rows

    def _prepare_recording(self) -> None:
        """For each output: its encoder and, per row, the envelope's source, topic, latency,
        priority and kind (queue or signal)."""
        strings = StringTable()
        string_of_row = np.array([strings.intern(name) for name in self.names], np.int32)
        for p, pos in enumerate(self.positions):
            for port in pos.outputs:
                out = pos.form.out_rows(port)
                encoder = Encoder(out.layout, strings, string_of_row, out.payload.shape[0] * out.payload.shape[1])
                routes = [(s.name, *s.out_topics[port]) for s in pos.slots]
                self._recorded[p, port] = (encoder, routes)
        self._channels = None
        if hasattr(self.recorder, "record_columns"):
            self._channels, self._pair_output, self._pair_row = self._row_channels()

    def _row_channels(self):
        """The recorder's routes of every (output, row) pair, in stream order (see
        :class:`hopsim.bus.recorder.RowChannels`), with each pair's output and row."""
        outputs = list(self._recorded)
        pairs = []
        for k, key in enumerate(outputs):
            encoder, routes = self._recorded[key]
            for j, (source, topic, latency, priority, queue) in enumerate(routes):
                pairs.append((priority, source, k, j, topic, latency, queue, encoder.layout.message_type))
        n_outputs = len(outputs)
        rank = {(k, j): j * n_outputs + k for _, _, k, j, *_ in pairs}  # island by island, then in output order
        pairs.sort(key=lambda q: (q[0], q[1], q[2]))
        prototypes = [
            EncodedEnvelope(0, latency, source, topic, 0, priority, b"", message_type)
            for priority, source, _k, _j, topic, latency, _queue, message_type in pairs
        ]
        channels = RowChannels(
            prototypes,
            [q[6] for q in pairs],
            [rank[q[2], q[3]] for q in pairs],
            frozenset(s.name for s in self.positions[self.body].slots),
        )
        return channels, np.array([q[2] for q in pairs], np.int64), np.array([q[3] for q in pairs], np.int64)

    def channels_in_file(self) -> bool:
        """Whether every output of the members has its channel in the recording already (or the
        recorder has none). A block leaving members of its group outside waits for it: it
        records an instant before they do, so a channel first written then would come before
        theirs, not in the members' order."""
        has_channel = getattr(self.recorder, "has_channel", None)
        return has_channel is None or all(
            has_channel(topic, source) for _encoder, routes in self._recorded.values() for source, topic, *_ in routes
        )

    def _record_columns(self, t_ns: int, written: list[tuple]) -> None:
        """The instant's envelopes to the recorder as columns in stream order."""
        counts = np.stack([w[1] for w in written])  # output x row
        seqs = np.stack([w[2] for w in written])
        per_output = counts.sum(axis=1)
        first_message = np.concatenate(([0], np.cumsum(per_output)[:-1]))
        starts = first_message[:, None] + (np.cumsum(counts, axis=1) - counts)
        data = b"".join(w[3] for w in written)
        sizes = np.array([len(w[3]) for w in written], np.int64)
        byte_base = np.concatenate(([0], np.cumsum(sizes)[:-1]))
        offsets = np.concatenate(
            [w[4][:-1] + byte_base[k] for k, w in enumerate(written)] + [np.array([len(data)], np.int64)]
        )
        k, j = self._pair_output, self._pair_row
        self.recorder.record_columns(
            EncodedColumns(t_ns, self._channels, counts[k, j], seqs[k, j], starts[k, j], offsets, data)
        )

    def _encoded(self, p: int, port: str, out: OutRows, first_seq: np.ndarray) -> tuple:
        """What output (p, port) wrote at this instant, encoded, for :meth:`_record`."""
        encoder, routes = self._recorded[p, port]
        data, offsets = encoder.encode(out)
        return routes, out.count.copy(), first_seq, data, offsets, encoder.layout.message_type

    def _record(self, t_ns: int, written: list[tuple]) -> None:
        """The instant's envelopes to the recorder, in the order the members' own barriers would
        hand them over (island by island, each island's models in order, each model's writes in
        order): the recorder registers a channel at its first message, in that order."""
        record = self.recorder.record
        written = [
            (
                routes,
                counts.tolist(),
                seqs.tolist(),
                data,
                offsets.tolist(),
                np.concatenate(([0], np.cumsum(counts))).tolist(),
                message_type,
            )
            for routes, counts, seqs, data, offsets, message_type in written
        ]
        for j in range(len(self.islands)):
            for routes, counts, seqs, data, offsets, starts, message_type in written:
                count = counts[j]
                if not count:
                    continue
                source, topic, latency, priority, queue = routes[j]
                k = starts[j]
                for c in range(count):
                    record(
                        EncodedEnvelope(
                            t_ns,
                            t_ns + latency,
                            source,
                            topic,
                            seqs[j] + c,
                            priority,
                            data[offsets[k + c] : offsets[k + c + 1]],
                            message_type,
                        ),
                        queue=queue,
                    )

    @property
    def next_ns(self) -> int:
        """The block's next instant."""
        return self.t_ns + self.period_ns

    # ------------------------------------------------------------------ forming
    @classmethod
    def form(cls, group, islands: list[Island], t_ns: int, owner) -> Block | None:
        """A block of the alike ones among ``islands`` (a rate group's members, all past their
        barrier ``t_ns`` and planned at the group's next instant), or None when fewer than two
        qualify. The others stay members of the group, run by it as before."""
        if len(islands) < 2 or not owner.blocks_allowed():
            return None
        period = group.period_ns
        alike = cls._alike(islands, group, t_ns, period)
        if len(alike) < 2:
            return None
        partial, islands = len(alike) < len(islands), alike
        forms = [resolve_row_form(s.cls) for s in islands[0].slots]
        columns = [[isl.slots[p] for isl in islands] for p in range(len(forms))]
        body = next(p for p, f in enumerate(forms) if hasattr(f, "hop"))
        position_of = {s.name: (p, i) for p, slots in enumerate(columns) for i, s in enumerate(slots)}
        wiring = cls._ties(owner, columns, forms, position_of, period)
        if wiring is None:
            return None
        ties, outward = wiring
        delayed = {(t.pub, t.sub, t.sub_port) for t in ties if t.latency_ns}

        def carried(env, slot, port) -> bool:
            """A message of the block's models that goes through a delay line."""
            source, target = position_of.get(env.source), position_of.get(slot.name)
            return source is not None and target is not None and (source[0], target[0], port) in delayed

        soon = t_ns + MIN_INSTANTS * period
        if owner.run_end_ns < soon or min(isl.next_stop_ns() for isl in islands) < soon:
            return None  # the run returns before loading the rows pays
        row_of = {s.name: i for i, s in enumerate(columns[body])}
        for name in owner.island_names():  # other vehicles a message may name
            row_of.setdefault(name, len(row_of))
        positions = [
            _Position(slots, form([s.model for s in slots], row_of)) for slots, form in zip(columns, forms, strict=True)
        ]
        if not all(p.form.qualifies(t_ns) for p in positions if hasattr(p.form, "qualifies")):
            return None
        block = cls(group, islands, positions, body, ties, period, t_ns, owner, row_of, outward, position_of)
        if partial and not block.channels_in_file():
            return None
        until = min(isl.next_timeline_ns() for isl in islands)
        for isl in islands:  # a return between its instants: handed back before
            stop = isl.next_stop_ns()
            if (stop - t_ns) % period:
                until = min(until, stop)
        for isl in islands:
            for deliver_ns, env, slot, port, rank in isl.inbox_entries():
                if not carried(env, slot, port) and not block.takes_message(deliver_ns, env, slot, port, rank):
                    until = min(until, deliver_ns)
        if until <= t_ns + period:
            return None
        try:
            for p in positions:
                p.form.load()
        except KeyError:  # a port holds a message naming a vehicle unknown here
            return None
        block.until_ns = until
        block._take_inboxes(carried)
        for isl in islands:
            isl.join_block(block)
        return block

    @staticmethod
    def composable(island: Island) -> bool:
        """Whether every model of ``island`` has a row form, one of them a body's (it may run in
        a block with others of the same kinds)."""
        return _row_forms(tuple(s.cls for s in island.slots)) is not None

    @staticmethod
    def _alike(islands: list[Island], group, t_ns: int, period: int) -> list[Island]:
        """The members that can run as rows together: the most common kinds of models (in order),
        every model local, without method or I/O-step events, accounting or a variable rate; the
        periodic ones at the group's period, the others message-driven by all their inputs; one
        body, propagated by its form; every load on it through a form."""
        kinds: dict[tuple, int] = {}
        for isl in islands:
            key = tuple(s.cls for s in isl.slots)
            if _row_forms(key) is not None:
                kinds[key] = kinds.get(key, 0) + 1
        if not kinds:
            return []
        classes = max(kinds, key=kinds.__getitem__)
        forms = _row_forms(classes)
        bodies = [p for p, f in enumerate(forms) if hasattr(f, "hop")]
        latched = getattr(forms[bodies[0]], "latches_loads", False)
        candidates = [isl for isl in islands if tuple(s.cls for s in isl.slots) == classes and isl.regular_member()]

        def fits(isl, unread) -> bool:
            for p, s in enumerate(isl.slots):
                if (
                    not (s.direct and s.local)
                    or s.method_events
                    or s.io_events["begin"]
                    or s.io_events["end"]
                    or s.does_end_io
                    or s.does_start_io
                    or s.variable_rate
                    or s.unread != unread[p]
                ):
                    return False
                if s.periodic is not None and (s.periodic.key != group.key or s.io_next != t_ns + period):
                    return False
                if s.periodic is None and s.trigger_ports != frozenset(s.model.inputs):
                    return False  # message-driven: every input starts an I/O step
                loads = s.is_continuous and (s.overrides("start_hop") or s.overrides("pre_deriv"))
                if p != bodies[0] and loads and not hasattr(forms[p], "start_hop"):
                    return False  # every load on the body comes through a form
            return isl.takes_row_hop(t_ns, t_ns + period, latched)

        if not candidates:
            return []
        unread = [s.unread for s in candidates[0].slots]
        return [isl for isl in candidates if fits(isl, unread)]

    @staticmethod
    def _ties(owner, columns, forms, position_of, period) -> tuple[list[_Tie], dict] | None:
        """Every tie from an output of the block's models to an input of the block's, the same in
        every island, and the subscribers outside the block per output and row (``outward``:
        {(position, port): [(row, routes, their ranks among the topic's subscribers)]}, routes as
        :func:`deliver_to_subscribers` takes them); None when a tie inside the block is neither at
        once within the island (publisher before subscriber) nor a whole number of periods later."""
        n = len(columns[0])
        ties: dict[tuple, _Tie] = {}
        outward: dict[tuple, list] = {}
        for p, slots in enumerate(columns):
            for i, s in enumerate(slots):
                for port, (topic, latency, _priority, _queue) in s.out_topics.items():
                    if port in s.unread:
                        continue
                    if port not in forms[p].outputs:
                        return None
                    outside = []
                    for rank, route in enumerate(owner.routes_of(topic)):
                        _inbox, home, sub, sub_port = route
                        where = position_of.get(sub.name) if sub is not None else None
                        if where is None:
                            outside.append((rank, route))
                            continue
                        if not forms[where[0]].takes_input(sub_port):
                            return None
                        q, j = where
                        if latency == 0 and (j != i or q <= p or home != s.home.name):
                            return None
                        if latency % period:
                            return None
                        tie = ties.get((p, port, q, sub_port))
                        if tie is None:
                            tie = ties[p, port, q, sub_port] = _Tie(
                                p, port, q, sub_port, latency, np.full(n, -1, np.int64)
                            )
                        if tie.latency_ns != latency or tie.rows_from[j] >= 0:
                            return None
                        tie.rows_from[j] = i
                    if outside:
                        ranks, routes = zip(*outside, strict=True)
                        outward.setdefault((p, port), []).append((i, list(routes), list(ranks)))
        for tie in ties.values():
            if tie.latency_ns == 0 and not np.array_equal(tie.rows_from, np.arange(n)):
                return None
        return sorted(ties.values(), key=lambda t: (t.pub, list(forms[t.pub].outputs).index(t.port), t.sub)), outward

    def _take_inboxes(self, carried) -> None:
        """The messages on their way to the members through a delay line move into it (one
        entry per publishing instant; an envelope with several subscribers once); those from
        outside the block that it takes (:meth:`takes_message`) are its already."""
        found: dict[tuple, dict[int, Envelope]] = {}
        inbound = {(id(e[6]), e[7], e[8], e[9], e[4]) for e in self._inbound}

        def taken(_deliver_ns, env, slot, port, rank) -> bool:
            return carried(env, slot, port) or (id(env), *self._position_of[slot.name], port, rank) in inbound

        for isl in self.islands:
            for _deliver_ns, env, slot, port, _rank in isl.inbox_entries():
                if not carried(env, slot, port):
                    continue
                p, j = self._position_of[env.source]
                port_out = next(
                    name for name, (topic, *_) in self.positions[p].slots[j].out_topics.items() if topic == env.topic
                )
                found.setdefault((p, port_out, env.t_ns), {})[j] = env
            isl.take_from_inbox(taken)
        for (p, port, t_pub), envs in sorted(found.items(), key=lambda kv: kv[0][2]):
            template = self.positions[p].form.out_rows(port)
            out = OutRows(template.layout, len(self.islands), template.payload.shape[1])
            seq = np.zeros(len(self.islands), np.int64)
            for j, env in envs.items():
                payload, msg_t, vehicle = out.layout.from_message(env.payload)
                out.payload[j, 0], out.msg_t[j, 0], out.src[j, 0] = payload, msg_t, self.row_of[vehicle]
                out.count[j], seq[j] = 1, env.seq
            self.lines[p, port].append((t_pub, out, seq))

    def takes_message(self, deliver_ns: int, env: Envelope, slot, port: str, rank: int) -> bool:
        """Whether the block takes a message from outside it for one of its models (to hand over
        at its instant ``deliver_ns``): an input kept as rows that nothing inside the block feeds
        (so the message's place among that input's others is its place in the island's inbox),
        a signal port, at one of the block's coming instants, naming a vehicle the block knows."""
        where = self._position_of.get(slot.name)
        if where is None:
            return False
        q, j = where
        open_rows = self._inward.get((q, port))
        if (
            open_rows is None
            or not open_rows[j]
            or deliver_ns <= self.t_ns
            or (deliver_ns - self.t_ns) % self.period_ns
            or not isinstance(env.payload, slot.model.inputs[port].msg_type)
        ):
            return False  # (a payload of another type: the port's own error)
        vehicle = self.positions[q].form.in_rows(port)[0].layout.from_message(env.payload)[2]
        if vehicle not in self.row_of:
            return False
        heapq.heappush(
            self._inbound, (deliver_ns, env.priority, env.source, env.seq, rank, self._taken, env, q, j, port)
        )
        self._taken += 1
        return True

    # ------------------------------------------------------------------ an instant
    def takes_stop(self, t_ns: int) -> bool:
        """Whether the block keeps its members for a run that returns at ``t_ns``: at one of its
        instants (the run returns after it), or later (the members take that instant alone:
        the block hands them back before it); not between its last instant and the next."""
        if t_ns <= self.t_ns or (t_ns - self.t_ns) % self.period_ns == 0:
            return True
        if t_ns < self.next_ns:
            return False
        self.until_ns = min(self.until_ns, t_ns)
        return True

    def pending_stats(self) -> dict[str, dict[str, int]]:
        """What the members' counters gain when the block hands them back (by island name)."""
        deliveries = sum(pos.received for pos in self.positions)
        fleet = self.instants if self.owner.fleets else 0
        return {
            isl.name: {
                "barriers": self.instants,
                "hops": self.instants,
                "propagations": self.instants,
                "fleet_hops": fleet,
                "deliveries": int(d),
            }
            for isl, d in zip(self.islands, deliveries.tolist(), strict=True)
        }

    def instant(self, t_ns: int) -> None:
        """The hop from the last instant to ``t_ns`` and the barrier at ``t_ns``, for every row."""
        self.intact = False
        self._instant(t_ns)
        self.intact = True
        body = self.positions[self.body]
        check_rows_finite(body.form.X, t_ns, self.islands, body.slots)  # as each island's, at its barrier

    def _instant(self, t_ns: int) -> None:
        t0 = self.t_ns
        positions = self.positions
        body = positions[self.body].form
        body.hop(t0, t_ns, self.islands[0].hop_steps(t0, t_ns), self._loaders)
        if self.owner.fleets:
            self.owner.count_fleet_call()
        self.t_ns = t_ns
        self.instants += 1
        driven = [(pos, pos.received.copy()) for pos in positions if pos.message_driven]
        for tie in self._arrivals:  # what arrives now
            self._arrive(tie, t_ns)
        inbound = self._inbound
        while inbound and inbound[0][0] == t_ns:  # ... from outside the block
            self._hand_over(*heapq.heappop(inbound)[6:])
        for key, line in self.lines.items():
            latency = self._delayed[key]
            while line and line[0][0] + latency <= t_ns:
                line.popleft()
        written = [] if self.recorder is not None else None
        for p, pos in enumerate(positions):
            if pos.ufo is None or (pos.outputs_only and not pos.outputs):
                continue
            pos.ufo(t_ns, body)
            form = pos.form
            for port in pos.outputs:
                out = form.out_rows(port)
                pos.seq += out.count
                self.owner.count_published(int(out.count.sum()))
                if written is not None:
                    written.append(self._encoded(p, port, out, pos.seq - out.count))
                for tie in self._at_once[p, port]:
                    target, column = positions[tie.sub].form.in_rows(tie.sub_port)
                    _deliver(t_ns, tie.rows_from, out, target, column, positions[tie.sub].received)
                if (p, port) in self._delayed:
                    self.lines[p, port].append((t_ns, _copy_out(out), pos.seq - out.count))
                if (p, port) in self._outward:
                    self._send_outward(p, port, out, t_ns, pos.seq - out.count)
        for pos, before in driven:  # a message started their I/O step
            pos.last_io[pos.received != before] = t_ns
        if written:
            if self._channels is not None:
                self._record_columns(t_ns, written)
            else:
                self._record(t_ns, written)

    def _hand_over(self, env: Envelope, q: int, j: int, port: str) -> None:
        """A message from outside the block to row ``j``'s input ``port`` of position ``q``, as
        :meth:`InPort.deliver` puts it there."""
        target, column = self.positions[q].form.in_rows(port)
        payload, msg_t, vehicle = target.layout.from_message(env.payload)
        target.freshness[j, column] += 1
        target.value[j, column] = payload
        target.msg_t[j, column] = msg_t
        target.src[j, column] = self.row_of[vehicle]
        target.t_ns[j, column] = env.t_ns
        self.positions[q].received[j] += 1

    def _send_outward(self, p: int, port: str, out: OutRows, t_ns: int, first_seq: np.ndarray) -> None:
        """What output (p, port) wrote now, as envelopes to its subscribers outside the block."""
        slots, names, to_message = self.positions[p].slots, self.names, out.layout.to_message
        for j, routes, ranks in self._outward[p, port]:
            slot = slots[j]
            topic, latency, priority, _queue = slot.out_topics[port]
            for c in range(int(out.count[j])):
                msg = to_message(out.payload[j, c], int(out.msg_t[j, c]), names[out.src[j, c]])
                deliver_to_subscribers(
                    Envelope(t_ns, t_ns + latency, slot.name, topic, int(first_seq[j]) + c, priority, msg),
                    slot.home.name,
                    routes,
                    ranks=ranks,
                )

    def _arrive(self, tie: _Tie, t_ns: int) -> None:
        """The delay line's messages published ``tie.latency_ns`` ago, to their subscribers."""
        for t_pub, out, _seq in self.lines[tie.pub, tie.port]:
            if t_pub + tie.latency_ns == t_ns:
                target, column = self.positions[tie.sub].form.in_rows(tie.sub_port)
                _deliver(t_pub, tie.rows_from, out, target, column, self.positions[tie.sub].received)
            elif t_pub + tie.latency_ns > t_ns:
                break

    # ------------------------------------------------------------------ leaving
    def exit(self) -> None:
        """Every model, port, slot and island as the scalar run would have them after the last
        instant, the messages on their way in their subscribers' inboxes; the group goes on
        without the block."""
        if not self.active:
            return
        self.active = False
        for pos in self.positions:
            pos.form.store()
        deliveries = np.zeros(len(self.islands), np.int64)
        for pos in self.positions:
            deliveries += pos.received
            for i, s in enumerate(pos.slots):
                s.seq = int(pos.seq[i])
                s.received += int(pos.received[i])
                if pos.last_io[i] >= 0:
                    s.io_prev = int(pos.last_io[i])
        for i, isl in enumerate(self.islands):
            isl.leave_block(self.instants, self.t_ns, int(deliveries[i]))
        self._send_what_is_on_its_way()
        for deliver_ns, _priority, _source, _seq, rank, _k, env, q, j, port in self._inbound:
            self.islands[j].enqueue(deliver_ns, env, self.positions[q].slots[j], port, rank)
        self._inbound = []
        self.group.block_left(self)

    def _send_what_is_on_its_way(self) -> None:
        """The delay lines' messages become envelopes in their subscribers' inboxes, as published."""
        names = self.names
        for (p, port), line in self.lines.items():
            slots = self.positions[p].slots
            for t_pub, out, seq in line:
                for j in np.flatnonzero(out.count).tolist():
                    slot = slots[j]
                    topic, latency, priority, _queue = slot.out_topics[port]
                    ranks, routes = self._inside_routes(topic)
                    for c in range(int(out.count[j])):
                        msg = out.layout.to_message(out.payload[j, c], int(out.msg_t[j, c]), names[out.src[j, c]])
                        deliver_to_subscribers(
                            Envelope(t_pub, t_pub + latency, slot.name, topic, int(seq[j]) + c, priority, msg),
                            slot.home.name,
                            routes,
                            ranks=ranks,
                        )
        self.lines.clear()

    def _inside_routes(self, topic: str) -> tuple[list[int], list]:
        """The subscribers of ``topic`` in the block (those outside had their envelopes when
        the messages were published), with their ranks among all."""
        inside = [
            (rank, route)
            for rank, route in enumerate(self.owner.routes_of(topic))
            if route[2] is not None and route[2].name in self._position_of
        ]
        return [rank for rank, _ in inside], [route for _, route in inside]


def _copy_out(out: OutRows) -> OutRows:
    copy = OutRows.__new__(OutRows)
    copy.layout = out.layout
    copy.payload, copy.msg_t, copy.src, copy.count = (
        out.payload.copy(),
        out.msg_t.copy(),
        out.src.copy(),
        out.count.copy(),
    )
    return copy


__all__ = ["Block", "InRows", "OutRows", "PayloadLayout", "UniformDraws", "deliver_rows", "resolve_row_form"]
