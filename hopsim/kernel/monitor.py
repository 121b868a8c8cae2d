"""Periodic monitors: a check over several islands at a barrier they all share.

A monitor's check instants (a fixed rate) are barriers of every island it watches. At such an
instant each island runs its barrier and then waits: the monitor's check runs after every island
has processed the instant (a simpy event of lower priority than the islands' wake-ups) and before
any of them plans its next hop, so the check sees every island's state at the same instant and
may regroup the islands (merge, split) or change their zero-crossing conditions. The islands
then plan their next hops, in name order.

The proximity monitor of contact (:mod:`hopsim.actors.contact`) is the user of this hook.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import simpy

from hopsim.kernel.simtime import PeriodicSchedule

if TYPE_CHECKING:
    from hopsim.kernel.executive import Simulation
    from hopsim.kernel.island import Island

AFTER_BARRIERS = 2  # simpy priority: after every NORMAL (1) event of the same instant


class Monitor:
    """A check ``check(t_ns)`` at ``rate_hz`` over ``islands`` (their home islands)."""

    def __init__(
        self,
        sim: Simulation,
        name: str,
        rate_hz: float,
        islands: list[Island],
        check: Callable[[int], None],
        t0_ns: int = 0,
    ):
        if rate_hz <= 0:
            raise ValueError(f"monitor {name!r}: rate_hz must be positive, got {rate_hz}")
        self.sim = sim
        self.name = name
        self.schedule = PeriodicSchedule(rate_hz, t0_ns)
        self.islands = list(islands)
        self.check = check
        self.k = 0
        self.next_ns = self.schedule.instant(0)
        for isl in self.islands:
            isl.watched_by(self)

    def set_index(self, k: int) -> None:
        """Make the k-th check the next one (restoring a checkpoint)."""
        self.k = k
        self.next_ns = self.schedule.instant(k)

    def arm(self) -> None:
        """Schedule the simpy event of the next check."""
        env = self.sim.env
        _Check(env, self.next_ns - env.now, self.k).callbacks.append(self._fire)

    def _fire(self, event) -> None:
        if event.value != self.k:
            return
        t = self.sim.now
        self.check(t)
        self.k += 1
        self.next_ns = self.schedule.instant(self.k)
        for isl in sorted({id(i.current): i.current for i in self.islands}.values(), key=lambda i: i.name):
            isl.plan_after_check()
        self.arm()


class _Check(simpy.Event):
    """A timeout that fires after the islands' wake-ups of its instant (priority AFTER_BARRIERS),
    written as simpy's own :class:`simpy.Timeout` is (simpy has no priority argument for it)."""

    def __init__(self, env: simpy.Environment, delay: int, k: int):
        super().__init__(env)
        self._ok = True
        self._value = k
        env.schedule(self, AFTER_BARRIERS, delay)
