"""Execution order inside an island, from feed-through edges only (Dshell's ordering rule).

A model with feed-through reads its inputs in ``update_flow_outs``, so every model that feeds it
must be called first: there is an edge producer -> consumer exactly when the consumer has
feed-through. A cycle in that graph has feed-through in every model, so it is an algebraic loop;
it is an error unless a break is declared on one of its signals, and a broken signal is read one
update late.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass

from hopsim.kernel.errors import AlgebraicLoopError


@dataclass(frozen=True)
class Node:
    name: str
    feed_through: bool
    reads: tuple[str, ...]  # topics read with zero latency inside the island
    writes: tuple[str, ...]  # topics written


def feed_through_order(nodes: list[Node], breaks: set[str] = frozenset()) -> list[str]:
    """Topological order of ``nodes`` (ties broken by registration order)."""
    writers: dict[str, list[int]] = {}
    for i, n in enumerate(nodes):
        for topic in n.writes:
            writers.setdefault(topic, []).append(i)
    succ: dict[int, list[tuple[int, str]]] = {i: [] for i in range(len(nodes))}
    indegree = [0] * len(nodes)
    for j, consumer in enumerate(nodes):
        if not consumer.feed_through:
            continue
        for topic in consumer.reads:
            if topic in breaks:
                continue
            for i in writers.get(topic, ()):
                if i != j:
                    succ[i].append((j, topic))
                    indegree[j] += 1
    ready = [i for i in range(len(nodes)) if indegree[i] == 0]
    heapq.heapify(ready)
    order = []
    while ready:
        i = heapq.heappop(ready)
        order.append(i)
        for j, _ in succ[i]:
            indegree[j] -= 1
            if indegree[j] == 0:
                heapq.heappush(ready, j)
    if len(order) < len(nodes):
        remaining = {i for i in range(len(nodes)) if indegree[i] > 0}
        loop, signals = _find_cycle(remaining, succ)
        raise AlgebraicLoopError([nodes[i].name for i in loop], signals)
    return [nodes[i].name for i in order]


def _find_cycle(remaining: set[int], succ) -> tuple[list[int], list[str]]:
    """One cycle among the nodes Kahn's algorithm could not order.

    Every such node still has a predecessor among them, so walking predecessors must close a loop.
    """
    pred: dict[int, tuple[int, str]] = {}
    for i in sorted(remaining):
        for j, topic in succ[i]:
            if j in remaining and j not in pred:
                pred[j] = (i, topic)
    node = min(remaining)
    seen: dict[int, int] = {}
    walk: list[tuple[int, str]] = []
    while node not in seen:
        seen[node] = len(walk)
        i, topic = pred[node]
        walk.append((node, topic))
        node = i
    cycle = walk[seen[node] :]
    cycle.reverse()  # producer before consumer
    return [n for n, _ in cycle], [t for _, t in cycle]
