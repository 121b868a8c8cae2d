"""A small finite-state machine, for use from start_io_step / end_io_step (never in deriv calls,
where time moves back and forth between samples).

    fsm = FSM("init")
    fsm.add_transition("init", "s1", guard=lambda: True)
    fsm.step()
    fsm.current == "s1"
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass


@dataclass
class Transition:
    source: str
    target: str
    guard: Callable[[], bool]
    action: Callable[[], None] | None = None


class FSM:
    def __init__(self, initial: str):
        self.states: dict[str, Callable[[], None] | None] = {initial: None}
        self.current = initial
        self.transitions: list[Transition] = []
        self.history: list[str] = [initial]

    def add_state(self, name: str, on_entry: Callable[[], None] | None = None) -> None:
        """Declare a state; ``on_entry`` runs each time a transition enters it."""
        self.states[name] = on_entry

    def add_transition(
        self,
        source: str,
        target: str,
        guard: Callable[[], bool] | bool = True,
        action: Callable[[], None] | None = None,
    ) -> None:
        """Leave ``source`` for ``target`` when ``guard()`` is true; ``action`` runs on the way."""
        for s in (source, target):
            self.states.setdefault(s, None)
        g = guard if callable(guard) else (lambda value=bool(guard): value)
        self.transitions.append(Transition(source, target, g, action))

    def step(self) -> bool:
        """Take the first enabled transition out of the current state; True if one was taken."""
        for tr in self.transitions:
            if tr.source == self.current and tr.guard():
                if tr.action:
                    tr.action()
                self.current = tr.target
                self.history.append(tr.target)
                entry = self.states.get(tr.target)
                if entry:
                    entry()
                return True
        return False

    def in_state(self, name: str) -> bool:
        return self.current == name
