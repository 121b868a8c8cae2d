"""Typed input and output ports of a model.

A port carries one protobuf message type. An input port is either a *signal* (latest value wins,
with a freshness counter, as Dshell signals: a command is seen once through :meth:`InPort.take`)
or a *queue* (every message delivered once, in order, through :meth:`InPort.drain`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from hopsim.kernel.unpickling import InlineAttributes


@dataclass(frozen=True)
class In:
    """Declares an input port: ``inputs = {"cmd": In(ThrottleCommand)}``.

    ``trigger=True``: a message arriving on this port starts an I/O step of the model at the
    barrier where it arrives (end_io_step, update_flow_outs, start_io_step), besides its own
    schedule. Every input of a model with ``NoIo()`` triggers.
    """

    msg_type: type
    queue: bool = False
    doc: str = ""
    trigger: bool = False


@dataclass(frozen=True)
class Out:
    """Declares an output port: ``outputs = {"state": Out(BatteryState)}``.

    ``on_change=True`` (signals only): a write whose message serializes (deterministically) to the
    bytes of the last one published on the port publishes nothing: a repeat, bit for bit (0.0
    after -0.0 is news, NaN after the same NaN is not). For a held value
    that the model writes at every update whether it changed or not (a thruster's force and
    propellant flow): its subscribers hold the value they have and their freshness counters do
    not move, so a subscriber must not read a repeat as news (``take``) or silence as staleness.
    """

    msg_type: type
    queue: bool = False
    doc: str = ""
    on_change: bool = False
    # whether the message type holds a map field, at any depth: only then does the deterministic
    # serialization (map entries sorted) differ from the default one, which is cheaper to ask for
    has_maps: bool = field(init=False, repr=False, compare=False, default=True)

    def __post_init__(self):
        if self.on_change and self.queue:
            raise ValueError("on_change is for signals: every message of a queue counts")
        descriptor = getattr(self.msg_type, "DESCRIPTOR", None)
        object.__setattr__(self, "has_maps", descriptor is None or _has_maps(descriptor, set()))


def _has_maps(descriptor, seen: set) -> bool:
    """Whether a protobuf message descriptor has a map field, itself or in a field's message type."""
    if descriptor.full_name in seen:
        return False
    seen.add(descriptor.full_name)
    for f in descriptor.fields:
        sub = f.message_type
        if sub is not None and (sub.GetOptions().map_entry or _has_maps(sub, seen)):
            return True
    return False


@dataclass
class InPort(InlineAttributes):
    """Run-time state of one input port (lives with the model, so it is part of its snapshot)."""

    name: str
    spec: In
    value: Any = None  # latest message (signal) or None
    t_ns: int = -1  # publish time of the latest message
    freshness: int = 0  # incremented on every delivery
    seen: int = 0  # freshness value last returned by take()
    queued: list = field(default_factory=list)

    def deliver(self, msg: Any, t_ns: int) -> None:
        if not isinstance(msg, self.spec.msg_type):
            raise TypeError(
                f"port {self.name!r} takes {self.spec.msg_type.DESCRIPTOR.full_name}, "
                f"got {type(msg).__name__}; tie it to a topic of that type"
            )
        self.freshness += 1
        self.value = msg
        self.t_ns = t_ns
        if self.spec.queue:
            self.queued.append(msg)

    def read(self) -> Any:
        """The latest message, or None if nothing was ever delivered."""
        return self.value

    def take(self) -> Any:
        """The latest message if it is new since the last take(), else None."""
        if self.freshness == self.seen:
            return None
        self.seen = self.freshness
        return self.value

    def drain(self) -> list:
        """Every queued message since the last drain, oldest first."""
        items, self.queued = self.queued, []
        self.seen = self.freshness
        return items

    def state(self) -> tuple:
        return (self.value, self.t_ns, self.freshness, self.seen, list(self.queued))

    def set_state(self, s: tuple) -> None:
        self.value, self.t_ns, self.freshness, self.seen, queued = s
        self.queued = list(queued)
