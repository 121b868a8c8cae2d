"""One simpy event per instant for all the island barriers planned at it."""

from __future__ import annotations

from typing import Any

from simpy import Timeout


class InstantWakes:
    """One simpy event per instant for every island barrier planned there.

    The barriers of one instant run in the order they were planned, as they would with one simpy
    event each; islands exchange messages at least 1 ns apart, so that order changes nothing.
    """

    def __init__(self, env):
        self.env = env
        self.at: dict[int, list[tuple[Any, int]]] = {}  # t_ns -> [(island, generation)]
        self.sole = False  # the instant being woken has one wake-up only

    def schedule(self, island: Any, t_ns: int, gen: int) -> None:
        """Wake ``island`` at ``t_ns`` for the plan of generation ``gen``."""
        group = self.at.get(t_ns)
        if group is None:
            group = self.at[t_ns] = []
            env = self.env
            Timeout(env, t_ns - env.now, t_ns).callbacks.append(self._fire)
        group.append((island, gen))

    def _fire(self, event) -> None:
        # popped first: a barrier planned for this very instant meanwhile gets an event of its own
        woken = self.at.pop(event.value)
        self.sole = len(woken) == 1
        for island, gen in woken:
            island.wake(gen)
