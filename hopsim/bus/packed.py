"""Envelopes shipped between processes as columns: an island host's envelopes of a window, sent
to the driver's recorder in one :class:`EnvelopeBlock`.

Pickling envelopes one by one costs about 17 us each (each payload pickled as a protobuf object,
parsed again on the other side, serialized again by the recorder). A block holds the header
fields as numpy columns, each (source, topic, type) once, and the payloads as the bytes the
recorder writes (protobuf's deterministic serialization, produced once, on the host). The driver
records them as :class:`EncodedEnvelope` s without parsing them; only a reader that wants the
message (the Foxglove scene, a test's in-memory stream) decodes it.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np

from hopsim.bus.envelope import Envelope, deterministic_serializer


class EncodedEnvelope:
    """An envelope whose payload is its serialized bytes (``payload``), a message of class
    ``message_type``. Ordered, hashed and recorded as an :class:`Envelope` with the message itself
    would be."""

    __slots__ = ("deliver_ns", "message_type", "payload", "priority", "seq", "source", "t_ns", "topic")

    def __init__(
        self,
        t_ns: int,
        deliver_ns: int,
        source: str,
        topic: str,
        seq: int,
        priority: int,
        payload: bytes,
        message_type: type,
    ):
        self.t_ns, self.deliver_ns, self.source, self.topic = t_ns, deliver_ns, source, topic
        self.seq, self.priority, self.payload, self.message_type = seq, priority, payload, message_type

    @property
    def type_name(self) -> str:
        return self.message_type.DESCRIPTOR.full_name

    def payload_bytes(self) -> bytes:
        return self.payload

    def decoded(self) -> Envelope:
        """The same envelope with its payload parsed."""
        return Envelope(
            self.t_ns,
            self.deliver_ns,
            self.source,
            self.topic,
            self.seq,
            self.priority,
            self.message_type.FromString(self.payload),
        )

    def __repr__(self) -> str:
        return f"EncodedEnvelope(t={self.t_ns} ns, {self.topic!r} from {self.source!r} #{self.seq}, {self.type_name})"


class EnvelopeBlock:
    """Envelopes, each with its ``queue`` flag (a queue or a signal port published it), as columns."""

    __slots__ = ("columns", "payloads", "routes")

    def __init__(self, routes: list[tuple[str, str, type]], columns: dict[str, np.ndarray], payloads: bytes):
        self.routes = routes  # (source, topic, payload class) of each route index: a
        # class pickles by name, so a user's message types travel too
        self.columns = columns  # one entry per envelope in each of _COLUMNS
        self.payloads = payloads  # the payloads' bytes, one after the other (``size``: each one's)

    @classmethod
    def pack(cls, envelopes: Iterable[tuple[Envelope | EncodedEnvelope, bool]]) -> EnvelopeBlock:
        """The block of ``envelopes`` [(envelope, queue)], in their order (an encoded envelope's
        payload as it is)."""
        index: dict[tuple[str, str, type, bool], tuple[int, Any]] = {}
        routes, payloads = [], []
        route, t_ns, deliver_ns, seq, priority, queue = [], [], [], [], [], []
        for env, q in envelopes:
            payload = env.payload
            encoded = isinstance(env, EncodedEnvelope)
            kind = env.message_type if encoded else type(payload)
            key = (env.source, env.topic, kind, encoded)
            found = index.get(key)
            if found is None:
                serialize = bytes if encoded else deterministic_serializer(kind)
                found = index[key] = (len(routes), serialize)
                routes.append((env.source, env.topic, kind))
            route.append(found[0])
            payloads.append(found[1](payload))
            t_ns.append(env.t_ns)
            deliver_ns.append(env.deliver_ns)
            seq.append(env.seq)
            priority.append(env.priority)
            queue.append(q)
        size = list(map(len, payloads))
        columns = {
            name: np.array(values, dtype=dtype)
            for (name, dtype), values in zip(
                _COLUMNS, (route, t_ns, deliver_ns, seq, priority, queue, size), strict=True
            )
        }
        return cls(routes, columns, b"".join(payloads))

    def __len__(self) -> int:
        return len(self.columns["t_ns"])

    def unpack(self) -> list[tuple[EncodedEnvelope, bool]]:
        """The envelopes [(envelope, queue)], in the order packed."""
        data, routes, c = self.payloads, self.routes, self.columns
        ends = np.cumsum(c["size"]).tolist()
        starts = [0, *ends[:-1]]
        return [
            (EncodedEnvelope(t, d, *routes[r][:2], seq, prio, data[a:b], routes[r][2]), q)
            for r, t, d, seq, prio, q, a, b in zip(*(c[name].tolist() for name, _ in _COLUMNS[:-1]), starts, ends)
        ]


_COLUMNS = [
    ("route", np.int32),
    ("t_ns", np.int64),
    ("deliver_ns", np.int64),
    ("seq", np.uint64),
    ("priority", np.int32),
    ("queue", np.bool_),
    ("size", np.int64),
]


__all__ = ["EncodedEnvelope", "EnvelopeBlock"]
