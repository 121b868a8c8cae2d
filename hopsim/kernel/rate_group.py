"""Rate groups: the islands whose barriers coincide, advanced with one barrier per instant.

An island with periodic models (at any rates and phases; variable-rate and message-driven models
too) spends most of its barriers on those models' instants. It belongs to the rate group named by
its fastest schedule (DESIGN.md, "Islands, hops and the kernel") while nothing needs it to plan
alone. The group owns its members' wake-ups: one simpy event per instant for every member due
then, the members' compiled hops propagated together (one call per kind of body, when the owner
batches, or per fleet form), and one barrier for the members due
(:func:`~hopsim.kernel.island.run_barrier`: each of Dshell's steps taken by every member before
the next step, in blocks of ``BARRIER_BLOCK`` members), without the planning a lone island does
(no heap of I/O instants, no wake-up of its own). A member's barriers off the schedule (a message
with another latency, a timed event or fault, a pulse's end) are the group's instants too, for
the members due then: after each barrier a member is admitted at its next one, whatever made it.

A member leaves when it must plan alone: a zero-crossing condition is armed (its hops are
propagated ahead and bisected), a monitor watches it, it merges (contact), or the run returns
(:meth:`Island.settle`). It joins again at the end of a later barrier.

Grouping changes no result: a member's barrier is the lone island's, step for step; islands
exchange messages at least 1 ns apart, so the order in which islands process one instant is free;
the recorder writes each instant's envelopes in the bus's total order.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable

from hopsim.kernel.island import run_barrier

if TYPE_CHECKING:
    from hopsim.kernel.island import Island


# Members taken through an instant together (their hops, then their barrier step by step, then
# their plans): few enough that their objects stay in the processor's cache from one step to the
# next. Measured on the 1 Hz formation (bench_formation, us per vehicle-step; blocks of 32 / 64 /
# 128 / 256): 100 vehicles 23.6 / 21.7 / 21.5 / 21.7, 1,000 vehicles 45.9 / 46.2 / 46.4 / 48.5;
# 1,000 in one block (each step fetching every island's objects from memory again): 64.
BARRIER_BLOCK = 128


class RateGroup:
    """The islands that share the periodic schedule ``key`` (see :meth:`PeriodicSchedule.key`),
    listed per instant. Created by the owner (:meth:`Simulation.rate_group`)."""

    def __init__(self, key: tuple, schedule_wake: Callable[[Any, int, int], None],
                 propagate: Callable[[list, int], None] | None, after_barrier: Callable[[Any, int], None]):
        self.key = key
        self._schedule_wake = schedule_wake      # the owner's one simpy event per instant
        self._propagate = propagate              # the owner's batch of compiled hops (if it batches), or None
        self._after_barrier = after_barrier
        self._at: dict[int, list[Island]] = {}   # instant (ns) -> the members due then, in joining order
        self.stats = {"instants": 0, "member_barriers": 0, "joins": 0, "leaves": 0}

    def join(self, island: "Island", t_ns: int) -> None:
        """``island`` becomes a member, its next barrier at ``t_ns``."""
        self.stats["joins"] += 1
        self.admit(island, t_ns)

    def left(self, island: "Island") -> None:
        """``island`` is no longer a member (its entries are passed over)."""
        self.stats["leaves"] += 1

    def admit(self, island: "Island", t_ns: int) -> None:
        """A member has its next barrier at ``t_ns``."""
        due = self._at.get(t_ns)
        if due is None:
            due = self._at[t_ns] = []
            self._schedule_wake(self, t_ns, t_ns)
        due.append(island)

    def wake(self, t_ns: int) -> None:
        """The instant ``t_ns`` of every member due then (the owner's clock is there): block by
        block, the members' hops to it, their barrier, their next plans."""
        due = self._at.pop(t_ns, ())
        if len(due) > 1:
            due = dict.fromkeys(due)     # an island that left and joined again for this instant is listed twice
        members = []                     # (a loop: a comprehension costs a call)
        for isl in due:
            if isl.group is self and isl._pending_end == t_ns:
                members.append(isl)
        if not members:
            return
        stats = self.stats
        stats["instants"] += 1
        stats["member_barriers"] += len(members)
        after = self._after_barrier
        propagate = self._propagate
        blocks = (members,) if len(members) <= BARRIER_BLOCK else \
            [members[i:i + BARRIER_BLOCK] for i in range(0, len(members), BARRIER_BLOCK)]
        for block in blocks:
            if propagate is not None:
                propagate(block, t_ns)
            for isl in block:
                isl.end_hop_at(t_ns)
            run_barrier(block, t_ns)
            for isl in block:
                isl.plan_as_member()
                after(isl, t_ns)


class RateGroups:
    """An owner's rate groups, one per periodic schedule, made when an island first joins."""

    def __init__(self, schedule_wake: Callable[[Any, int, int], None], propagate: Callable[[list, int], None] | None,
                 after_barrier: Callable[[Any, int], None]):
        self._make = (schedule_wake, propagate, after_barrier)
        self._groups: dict[tuple, RateGroup] = {}

    def group(self, key: tuple) -> RateGroup:
        """The rate group of the periodic schedule ``key``."""
        group = self._groups.get(key)
        if group is None:
            group = self._groups[key] = RateGroup(key, *self._make)
        return group

    def stats(self) -> dict[str, dict[str, int]]:
        """Each group's counters, by its schedule ("1 s period, phase 0 s")."""
        return {f"{key[1] / key[2] / 1e9:g} s period, phase {key[0] / 1e9:g} s": dict(g.stats)
                for key, g in self._groups.items()}


__all__ = ["RateGroup", "RateGroups"]
