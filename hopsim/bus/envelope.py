"""The bus envelope: sim time (ns), source, topic, sequence number, priority and payload.

Inside one process the payload travels as a protobuf object; across processes and into a
recording it is serialized (deterministically, so equal messages give equal bytes).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cache, partial
from operator import attrgetter
from typing import Any

from hopsim.schemas import Envelope as EnvelopeProto

# an envelope's place in the bus's total order: (time, priority, source, sequence)
ORDER_KEY = attrgetter("t_ns", "priority", "source", "seq")


def _has_maps_or_extensions(descriptor, seen: set | None = None) -> bool:
    """Whether messages of this type (or any message type within it) can hold map entries or
    extensions: the only fields whose serialized order ``deterministic=True`` fixes."""
    seen = set() if seen is None else seen
    if descriptor.full_name in seen:
        return False
    seen.add(descriptor.full_name)
    if descriptor.GetOptions().map_entry or descriptor.extension_ranges:
        return True
    return any(_has_maps_or_extensions(f.message_type, seen) for f in descriptor.fields if f.message_type is not None)


@cache
def deterministic_serializer(message_type) -> Callable[[object], bytes]:
    """``SerializeToString(deterministic=True)`` for messages of ``message_type``: the plain call
    where the keyword changes no byte (parsing it costs about as much as serializing a small message)."""
    if _has_maps_or_extensions(message_type.DESCRIPTOR):
        return partial(message_type.SerializeToString, deterministic=True)
    return message_type.SerializeToString


class Envelope:
    """One message on the bus.

    ``t_ns`` is the publish time, ``deliver_ns`` the earliest time a subscriber sees it
    (``t_ns`` plus the publishing port's latency). Envelopes are totally ordered by
    :meth:`order_key`: (time, priority, source, sequence).
    """

    __slots__ = ("deliver_ns", "payload", "priority", "seq", "source", "t_ns", "topic")

    def __init__(self, t_ns: int, deliver_ns: int, source: str, topic: str, seq: int, priority: int, payload: Any):
        self.t_ns = t_ns
        self.deliver_ns = deliver_ns
        self.source = source
        self.topic = topic
        self.seq = seq
        self.priority = priority
        self.payload = payload

    def order_key(self) -> tuple:
        return ORDER_KEY(self)

    @property
    def type_name(self) -> str:
        return self.payload.DESCRIPTOR.full_name

    def payload_bytes(self) -> bytes:
        return self.payload.SerializeToString(deterministic=True)

    def to_proto(self) -> EnvelopeProto:
        return EnvelopeProto(
            t_ns=self.t_ns,
            deliver_ns=self.deliver_ns,
            source=self.source,
            topic=self.topic,
            seq=self.seq,
            priority=self.priority,
            type_name=self.type_name,
            payload=self.payload_bytes(),
        )

    def to_bytes(self) -> bytes:
        """The canonical serialized form: what "byte-identical streams" compares."""
        return self.to_proto().SerializeToString(deterministic=True)

    def __repr__(self) -> str:
        return f"Envelope(t={self.t_ns} ns, {self.topic!r} from {self.source!r} #{self.seq}, {self.type_name})"
