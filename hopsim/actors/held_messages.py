"""The messages a model built from a few numbers, kept while those numbers stay.

A model that writes a held value at every update whether it changed or not (a thruster's wrench
and propellant flow, a tank's fuel and mass properties, a flight software's thruster on-times)
builds, while the value holds, a message
equal to the last one, bit for bit, which its on_change port then publishes nothing for; and many
such values come back (a thruster goes on and off, a flight software's command falls back to no
firing). :class:`HeldMessages` hands back the messages it built for the same numbers instead,
for the last few numbers (:data:`KEPT`). The numbers are compared by their bits: 0.0 and -0.0
differ, and a NaN is the same only as itself.

It is a :class:`hopsim.kernel.Memo`: not part of the model's snapshot, forgotten when the model is
restored. The messages it hands back are the ones it built (never changed once written, as every
message on the bus), so whatever reads them reads what a new build would give;
``tests/test_propulsion.py`` and ``tests/test_orbit_formation.py`` check thrusters, tanks and the
formation's flight software against building every message anew.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from functools import cache

from hopsim.kernel import Memo

KEPT = 4  # the numbers (and their messages) a HeldMessages keeps, the latest ones


@cache
def _packer(n: int) -> Callable[..., bytes]:
    """The bits of ``n`` floats, as bytes (a struct compiled once per count)."""
    return struct.Struct(f"{n}d").pack


class HeldMessages(Memo):
    """The messages ``build(*numbers)`` gave for the last :data:`KEPT` different ``numbers`` (floats)."""

    def __init__(self):
        self.forget()

    def forget(self) -> None:
        self._key: bytes | None = None
        self._messages: tuple = ()
        self._kept: dict[bytes, tuple] = {}  # the numbers' bits -> their messages, oldest first

    def get(self, numbers: tuple[float, ...], build: Callable[..., tuple]) -> tuple:
        """``build(*numbers)``, or the messages it gave for the same numbers (bit for bit) lately."""
        key = _packer(len(numbers))(*numbers)
        if key == self._key:
            return self._messages
        kept = self._kept
        messages = kept.get(key)
        if messages is None:
            messages = build(*numbers)
            if len(kept) >= KEPT:
                del kept[next(iter(kept))]
            kept[key] = messages
        self._key, self._messages = key, messages
        return messages


class ReadMessages(dict, Memo):
    """What ``read(msg)`` gave for the message last read on each input port, kept while the port
    holds that very message object (a message is never changed once written): a model that reads
    the same numbers out of a held input at every update (a spacecraft latching its thrusters'
    wrenches, of which one changes at a time) reads each message's fields once. Port -> (message,
    what ``read`` gave); ``tests/test_orbit_formation.py`` checks a run against reading anew."""

    def forget(self) -> None:
        self.clear()

    def get_read(self, port: str, msg, read: Callable) -> tuple:
        """``read(msg)``, or what it gave when ``msg`` (the same object) was last read on ``port``."""
        last = self.get(port)
        if last is not None and last[0] is msg:
            return last[1]
        numbers = read(msg)
        self[port] = (msg, numbers)
        return numbers


__all__ = ["HeldMessages", "ReadMessages"]
