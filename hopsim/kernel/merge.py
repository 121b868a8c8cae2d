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

from collections.abc import Iterable
from typing import TYPE_CHECKING

from hopsim.kernel.errors import MergeError
from hopsim.schemas import KernelEvent

if TYPE_CHECKING:
    from hopsim.kernel.executive import Simulation
    from hopsim.kernel.island import Island


def grouping(homes: Iterable[Island]) -> list[list[Island]]:
    """The current groups of ``homes``: home islands integrated together, sorted by name."""
    groups: dict[int, list] = {}
    for h in homes:
        groups.setdefault(id(h.current), []).append(h)
    return sorted((sorted(g, key=lambda i: i.name) for g in groups.values()), key=lambda g: g[0].name)


def regroup(sim: Simulation, groups: list[list[Island]]) -> None:
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
        if getattr(isl, "remote", False) or isl.regroupable_at != t:
            raise MergeError(
                f"island {isl.name!r} can be regrouped only at a monitor check of an "
                f"in-process island (it is at {isl.t} ns, the kernel at {t} ns)"
            )
    before = {isl.name: [m.name for m in isl.members] for isl in current}
    pooled = [isl.release_timeline() for isl in current]
    for group in groups:
        group = sorted(group, key=lambda h: h.name)
        primary = group[0]
        for h in group[1:]:
            h.absorbed_by(primary)
        primary.integrate_group(group, t, pooled)
        members = [h.name for h in group]
        if before.get(primary.name) != members:
            kind = KernelEvent.ISLAND_MERGE if len(group) > 1 else KernelEvent.ISLAND_SPLIT
            primary.kernel_event(kind, primary.name, "+".join(members), members=members)
    sim.rebuild_routes()
