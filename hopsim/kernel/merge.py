"""Merging and splitting islands (contact): regroup home islands into the islands that integrate them.

Every island created by :meth:`Simulation.add_island` is a *home* island. While vehicles can touch,
their home islands are integrated as one: the first home (by name) becomes the *primary* and takes
the models, continuous states, timelines and zero-crossings of the others, which stay dormant
(``absorbed_into`` the primary) until a split gives them their own models back.

Regrouping is allowed only where every island involved is at the same barrier and has not planned
its next hop: a :class:`~hopsim.kernel.monitor.Monitor` check. It changes no state, and messages
between models of different homes keep their at-least-one-nanosecond latency, so a merge changes
nothing but the hop boundaries the merged models share.
"""
from __future__ import annotations

import heapq
from typing import TYPE_CHECKING, Iterable

import numpy as np

from hopsim.kernel.errors import MergeError
from hopsim.schemas import KernelEvent

if TYPE_CHECKING:
    from hopsim.kernel.executive import Simulation
    from hopsim.kernel.island import Island


def grouping(homes: Iterable["Island"]) -> list[list["Island"]]:
    """The current groups of ``homes``: home islands integrated together, sorted by name."""
    groups: dict[int, list] = {}
    for h in homes:
        groups.setdefault(id(h.current), []).append(h)
    return sorted((sorted(g, key=lambda i: i.name) for g in groups.values()), key=lambda g: g[0].name)


def regroup(sim: "Simulation", groups: list[list["Island"]]) -> None:
    """Integrate each group of home islands as one island from now on.

    Every home of every island involved must appear in exactly one group (a home alone in its
    group is split out). All of them must be at the current instant, waiting for a monitor check.
    """
    t = sim.now
    homes = [h for g in groups for h in g]
    if len({id(h) for h in homes}) != len(homes):
        raise MergeError("an island appears in two groups")
    current = {id(h.current): h.current for h in homes}.values()
    for isl in current:
        missing = {m.name for m in isl.members} - {h.name for h in homes}
        if missing:
            raise MergeError(f"regrouping island {isl.name!r} needs all its members; missing {sorted(missing)}")
        if isl.t != t or isl._propagated or isl._pending_end is not None or getattr(isl, "remote", False):
            raise MergeError(f"island {isl.name!r} can be regrouped only at a monitor check of an "
                             f"in-process island (it is at {isl.t} ns, the kernel at {t} ns)")
    before = {isl.name: [m.name for m in isl.members] for isl in current}

    states = {}
    inbox, events, requested, stops, zcs = [], [], [], set(), []
    for isl in current:
        for s in isl._continuous:
            states[s.name] = s.model.x.copy()
        inbox += isl._inbox
        events += isl._events
        requested += isl._requested
        stops.update(isl._stops)
        zcs += isl.zero_crossings
        isl._gen += 1                     # any wake-up it scheduled is void

    for group in groups:
        group = sorted(group, key=lambda h: h.name)
        primary, names = group[0], {h.name for h in group}
        for h in group[1:]:
            h.absorbed_into, h.members, h._deferred = primary, [h], False
            h._inbox, h._events, h._requested, h._stops, h.zero_crossings = [], [], [], [], []
        primary.absorbed_into, primary.members = None, group
        primary.t, primary._deferred = t, True
        primary.slots = [s for h in group for s in h.home_slots]
        x = [states[s.name] for s in primary.slots if s.is_continuous]
        primary.assemble(np.concatenate(x) if x else np.zeros(0))
        primary._inbox = [e for e in inbox if e[6].home.name in names]
        heapq.heapify(primary._inbox)
        primary._events = [e for e in events if e[3].island in names]
        heapq.heapify(primary._events)
        primary._requested = [r for r in requested if r[1] in names]
        heapq.heapify(primary._requested)
        primary._stops = sorted(stops)
        primary.zero_crossings = [z for z in zcs if z.island in names]
        primary._monitors = list({id(m): m for h in group for m in h._home_monitors}.values())
        primary.integrator.reset()
        members = [h.name for h in group]
        if before.get(primary.name) != members:
            kind = KernelEvent.ISLAND_MERGE if len(group) > 1 else KernelEvent.ISLAND_SPLIT
            primary.kernel_event(kind, primary.name, "+".join(members))
    sim._rebuild_routes()
