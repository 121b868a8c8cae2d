"""Compare two envelope streams and say where, and in which field, they first differ."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from google.protobuf import descriptor_pool, message_factory

from hopsim.schemas import Envelope as EnvelopeProto

HEADER_FIELDS = ("t_ns", "deliver_ns", "source", "topic", "seq", "priority", "type_name")


@dataclass
class Difference:
    index: int
    t_ns: int
    topic: str
    source: str
    field: str
    recorded: str
    replayed: str

    def __str__(self) -> str:
        return (
            f"envelope #{self.index} at t = {self.t_ns / 1e9:.9g} s on {self.topic!r} from "
            f"{self.source!r}: {self.field} recorded {self.recorded}, replayed {self.replayed}"
        )


def payload_class(type_name: str):
    """The generated message class of a full protobuf type name (hopsim's schemas are loaded)."""
    import hopsim.schemas  # noqa: F401  (registers every hopsim message in the default pool)

    return message_factory.GetMessageClass(descriptor_pool.Default().FindMessageTypeByName(type_name))


def decode_payload(env: EnvelopeProto):
    return payload_class(env.type_name).FromString(env.payload)


def first_field_difference(a, b, prefix: str = "") -> tuple[str, str, str] | None:
    """The first field (in declaration order) whose values differ, as (path, a, b)."""
    for fd in a.DESCRIPTOR.fields:
        va, vb = getattr(a, fd.name), getattr(b, fd.name)
        path = prefix + fd.name
        if fd.message_type is not None and fd.label != fd.LABEL_REPEATED:
            if a.HasField(fd.name) != b.HasField(fd.name):
                return path, str(a.HasField(fd.name)), str(b.HasField(fd.name))
            inner = first_field_difference(va, vb, path + ".")
            if inner:
                return inner
        elif va != vb:
            return path, repr(va), repr(vb)
    return None


def first_difference(recorded: Sequence[EnvelopeProto], replayed: Sequence[EnvelopeProto]) -> Difference | None:
    """None if the streams are equal envelope for envelope, else the first difference."""
    for i, (a, b) in enumerate(zip(recorded, replayed)):
        if a.SerializeToString(deterministic=True) == b.SerializeToString(deterministic=True):
            continue
        for name in HEADER_FIELDS:
            if getattr(a, name) != getattr(b, name):
                return Difference(i, a.t_ns, a.topic, a.source, name, repr(getattr(a, name)), repr(getattr(b, name)))
        try:
            found = first_field_difference(decode_payload(a), decode_payload(b))
        except Exception:
            found = None
        field, ra, rb = found or ("payload", f"{len(a.payload)} bytes", f"{len(b.payload)} bytes")
        return Difference(i, a.t_ns, a.topic, a.source, "payload." + field, ra, rb)
    if len(recorded) != len(replayed):
        i = min(len(recorded), len(replayed))
        longer = recorded if len(recorded) > len(replayed) else replayed
        extra = longer[i]
        return Difference(
            i,
            extra.t_ns,
            extra.topic,
            extra.source,
            "stream length",
            f"{len(recorded)} envelopes",
            f"{len(replayed)} envelopes",
        )
    return None
