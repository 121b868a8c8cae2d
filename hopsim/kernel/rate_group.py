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

import gc
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from hopsim.kernel.blocks import Block
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

    def __init__(
        self,
        key: tuple,
        schedule_wake: Callable[[Any, int, int], None],
        propagate: Callable[[list, int], None] | None,
        after_barrier: Callable[[Any, int], None],
        owner=None,
    ):
        self.key = key
        self._owner = owner  # for row blocks (None: none are formed)
        self._row_members = 0  # members whose every model has a row form
        self.block: Block | None = None  # the members run as rows now (hopsim.kernel.blocks)
        self._schedule_wake = schedule_wake  # the owner's one simpy event per instant
        self._propagate = propagate  # the owner's batch of compiled hops (if it batches), or None
        self._after_barrier = after_barrier
        self._at: dict[int, list[Island]] = {}  # instant (ns) -> the members due then, in joining order
        self.stats = {
            "instants": 0,
            "member_barriers": 0,
            "joins": 0,
            "leaves": 0,
            "block_instants": 0,
            "instants_at_once": 0,
        }

    @property
    def period_ns(self) -> int | None:
        """The schedule's period (ns), if a whole number of ns."""
        _t0, num, den = self.key
        return num if den == 1 else None

    def join(self, island: Island, t_ns: int) -> None:
        """``island`` becomes a member, its next barrier at ``t_ns``."""
        self.stats["joins"] += 1
        if self._owner is not None and Block.composable(island):
            self._row_members += 1
        self.admit(island, t_ns)

    def left(self, island: Island) -> None:
        """``island`` is no longer a member (its entries are passed over)."""
        self.stats["leaves"] += 1
        if self._owner is not None and Block.composable(island):
            self._row_members -= 1

    def admit(self, island: Island, t_ns: int) -> None:
        """A member has its next barrier at ``t_ns``."""
        due = self._at.get(t_ns)
        if due is None:
            due = self._at[t_ns] = []
            self._schedule_wake(self, t_ns, t_ns)
        due.append(island)

    def wake(self, t_ns: int) -> None:
        """The instant ``t_ns`` of every member due then (the owner's clock is there): the row
        block's, if one runs (and its next instants at once while nothing else happens before
        them), then block by block, the other members' hops to it, their barrier,
        their next plans; a row block formed of them if they qualify."""
        block = self.block
        if block is not None and block.next_ns == t_ns and t_ns >= block.until_ns:
            block.exit()  # something irregular now: the members take it alone
        elif block is not None and block.next_ns == t_ns:
            self._block_instant(block, t_ns)
            ahead = 0
            alone = not self._at.get(t_ns)  # no other member due now (its barrier comes after)
            while alone and block.next_ns < block.until_ns and self._owner.alone_through(block.next_ns):
                self._block_instant(block, block.next_ns)  # nothing else happens before it
                ahead += 1
            if ahead:
                self.stats["instants_at_once"] += ahead
                self._owner.clock_through(block.t_ns)
            if block.next_ns > block.until_ns:
                block.exit()  # the members take the irregular instant alone
            else:
                self._schedule_wake(self, block.next_ns, block.next_ns)
        due = self._at.pop(t_ns, ())
        if len(due) > 1:
            due = dict.fromkeys(due)  # an island that left and joined again for this instant is listed twice
        members = []  # (a loop: a comprehension costs a call)
        for isl in due:
            if isl.group is self and isl.planned_end == t_ns:
                members.append(isl)
        if not members:
            return
        stats = self.stats
        stats["instants"] += 1
        stats["member_barriers"] += len(members)
        after = self._after_barrier
        propagate = self._propagate
        blocks = (
            (members,)
            if len(members) <= BARRIER_BLOCK
            else [members[i : i + BARRIER_BLOCK] for i in range(0, len(members), BARRIER_BLOCK)]
        )
        for block in blocks:
            if propagate is not None:
                propagate(block, t_ns)
            for isl in block:
                isl.end_hop_at(t_ns)
            run_barrier(block, t_ns)
            for isl in block:
                isl.plan_as_member()
                after(isl, t_ns)
        if (
            len(members) > 1
            and self._row_members > 1
            and self._owner is not None
            and self.block is None
            and self.period_ns is not None
        ):
            self._form_block(members, t_ns)  # (a block has two members at least)

    def _block_instant(self, block: Block, t_ns: int) -> None:
        """The row block's instant ``t_ns``, counted as the members' barriers."""
        block.instant(t_ns)
        stats = self.stats
        stats["instants"] += 1
        stats["member_barriers"] += len(block.islands)
        stats["block_instants"] += 1
        self._after_barrier(block.islands[0], t_ns)

    def _form_block(self, members: list, t_ns: int) -> None:
        """A row block of the members that ran ``t_ns`` and are all planned at the next instant."""
        t_next = t_ns + self.period_ns
        members = [isl for isl in members if isl.group is self and isl.planned_end == t_next]
        collecting = gc.isenabled()
        gc.disable()  # forming allocates an object or more per member: no collection meanwhile
        try:
            block = Block.form(self, members, t_ns, self._owner)
        finally:
            if collecting:
                gc.enable()
        if block is None:
            return
        self.block = block
        taken = set(map(id, block.islands))
        self._at[t_next] = [isl for isl in self._at.get(t_next, ()) if id(isl) not in taken]

    def block_left(self, block: Block) -> None:
        """The row block stored its members back (they are admitted at their next instants)."""
        if self.block is block:
            self.block = None


class RateGroups:
    """An owner's rate groups, one per periodic schedule, made when an island first joins."""

    def __init__(
        self,
        schedule_wake: Callable[[Any, int, int], None],
        propagate: Callable[[list, int], None] | None,
        after_barrier: Callable[[Any, int], None],
        owner=None,
    ):
        self._make = (schedule_wake, propagate, after_barrier, owner)
        self._groups: dict[tuple, RateGroup] = {}

    def group(self, key: tuple) -> RateGroup:
        """The rate group of the periodic schedule ``key``."""
        group = self._groups.get(key)
        if group is None:
            group = self._groups[key] = RateGroup(key, *self._make)
        return group

    def unblock(self) -> None:
        """Every group's row block stores its members back."""
        for group in self._groups.values():
            if group.block is not None:
                group.block.exit()

    def pending_island_stats(self) -> dict[str, dict[str, int]]:
        """What the islands' counters gain when their row blocks hand them back."""
        out: dict[str, dict[str, int]] = {}
        for group in self._groups.values():
            if group.block is not None:
                out.update(group.block.pending_stats())
        return out

    def stats(self) -> dict[str, dict[str, int]]:
        """Each group's counters, by its schedule ("1 s period, phase 0 s")."""
        return {
            f"{key[1] / key[2] / 1e9:g} s period, phase {key[0] / 1e9:g} s": dict(g.stats)
            for key, g in self._groups.items()
        }


__all__ = ["RateGroup", "RateGroups"]
