"""Timed events, model-method events and I/O-step events.

A timed event is a callback at an instant (ns), ordered with every other event of the same
instant by (time, priority, registration sequence). Its callback receives the event, and may
call :meth:`TimedEvent.reschedule` to fire again later (self-rescheduling).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

_sequence = itertools.count()


@dataclass(eq=False)
class TimedEvent:
    name: str
    t_ns: int
    callback: Callable[[TimedEvent], Any]
    priority: int = 0
    island: str | None = None
    seq: int = field(default_factory=lambda: next(_sequence))
    cancelled: bool = False
    sim: Any = None
    transient: bool = False  # display only (progress): not part of the simulation's state
    from_build: bool = True  # registered while the scenario was built (restorable by name)
    _next_ns: int | None = None

    def key(self) -> tuple:
        return (self.t_ns, self.priority, self.seq)

    def reschedule(self, t_ns: int) -> None:
        """From inside the callback: fire again at ``t_ns`` (must be later than now)."""
        if t_ns <= self.t_ns:
            raise ValueError(
                f"event {self.name!r} can only be rescheduled into the future ({t_ns} ns is not after {self.t_ns} ns)"
            )
        self._next_ns = t_ns

    def fire(self) -> bool:
        """Run the callback; True if it rescheduled the event (``t_ns`` is then the next instant)."""
        self._next_ns = None
        self.callback(self)
        if self._next_ns is None:
            return False
        self.t_ns = self._next_ns
        return True


@dataclass(eq=False)
class MethodEvent:
    """A callback run before or after a model's lifecycle method (Dshell model-method event)."""

    name: str
    model: str
    method: str
    callback: Callable[..., Any]
    before: bool = True


@dataclass(eq=False)
class IoStepEvent:
    """A callback at the beginning or end of a model's own I/O steps."""

    name: str
    model: str
    when: str  # "begin" or "end"
    callback: Callable[[int], Any]
