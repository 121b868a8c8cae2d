"""The router: hands a published envelope to the subscribers of its topic, in bus order.

One function does it for every runtime: the local simulation, an island host in a Ray process
(for its own islands, with stand-ins that collect what goes to other hosts) and the windows
between hosts. A subscriber is reached through its *inbox*, the island that integrates the
subscribing model now; the router needs only the two operations of :class:`Inbox`.

Timing rule (DESIGN.md, "Islands, hops and the kernel"): a subscriber of the publisher's own home
island sees a zero-latency message at once and a delayed one at its delivery time; a subscriber
of another home island sees it no earlier than 1 ns after it was published, merged (contact) or
not, so that how islands are grouped or placed never changes when a message is seen.
"""

from __future__ import annotations

from typing import Any, Protocol

from hopsim.bus.envelope import Envelope


class Inbox(Protocol):
    """What the router asks of the island that receives a message for one of its models."""

    def deliver_now(self, slot: Any, port: str, msg: Any, t_ns: int) -> None:
        """Put ``msg`` on the model's input at once (same island, same instant)."""

    def enqueue(self, deliver_ns: int, env: Envelope, slot: Any, port: str, rank: int) -> None:
        """Deliver ``env`` at the island's barrier at ``deliver_ns``; ``rank`` orders the
        subscribers of one envelope."""


Route = tuple  # (inbox: Inbox, subscriber's home island name, subscriber's slot, port)


def served_at_once(routes: list[Route], source: str) -> list[tuple] | None:
    """The subscribers ``(inbox, slot, port)`` that a zero-latency message published by a model of
    home island ``source`` reaches at once, when it reaches no other (every subscriber is of
    ``source``): such a message needs no envelope unless it is recorded. None otherwise."""
    if any(home != source for _, home, _, _ in routes):
        return None
    return [(inbox, slot, port) for inbox, _, slot, port in routes]


def deliver_to_subscribers(
    env: Envelope, source: str, routes: list[Route], served_in_island: bool = False, ranks: list[int] | None = None
) -> None:
    """Hand ``env``, published by a model of home island ``source``, to its subscribers ``routes``
    [(inbox, subscriber's home island name, slot, port)], in bus order.

    ``served_in_island``: the publisher's island already handed it to its own zero-latency
    subscribers (an island in a host process, in lockstep). ``ranks``: ``routes`` are some of
    the topic's subscribers, these their places among all (a row block's messages, part of
    whose subscribers are rows).
    """
    t, deliver = env.t_ns, env.deliver_ns
    for rank, (inbox, home, slot, port) in enumerate(routes) if ranks is None else zip(ranks, routes, strict=True):
        if home == source:
            if deliver == t:
                if not served_in_island:
                    inbox.deliver_now(slot, port, env.payload, t)
            else:
                inbox.enqueue(deliver, env, slot, port, rank)
        else:
            inbox.enqueue(deliver if deliver > t else t + 1, env, slot, port, rank)
