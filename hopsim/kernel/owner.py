"""What an island may ask of its owner.

An island (:class:`~hopsim.kernel.island.Island`) never runs alone: its owner keeps the clock,
wakes it at the barriers it plans, routes what its models publish and records its kernel events.
In one process the owner is the :class:`~hopsim.kernel.executive.Simulation`; in a Ray host it
is that host's :class:`~hopsim.kernel.distributed.host.HostServices`. Both implement
:class:`IslandOwner`, and nothing else of either is used by island code.

Scenario code may capture the simulation in a closure that travels with an island to a host
(``sim.e_stop = True`` in a zero-crossing callback). A pickled simulation therefore unpickles as
the owner of the islands being unpickled in that process: :func:`owning_unpickled_islands` names
it while a host loads its islands.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, Protocol


class IslandOwner(Protocol):
    """The services an island uses; the local simulation and a Ray host's services provide them."""

    default_rate_hz: float  # the rate of models with DefaultRate I/O (Hz)
    handled_kills: set  # kill faults already recovered from: passed over when met again
    e_stop: bool  # set by a model or callback to end the run at this instant
    batching: bool  # islands whose compiled hops coincide are propagated as one batch

    @property
    def now(self) -> int:
        """The owner's clock (ns)."""

    @property
    def kernel_events_wanted(self) -> bool:
        """Whether kernel events (zero-crossings, faults, contacts...) go anywhere."""

    @property
    def barrier_events_wanted(self) -> bool:
        """Whether every barrier is recorded too (a kernel event per island per barrier)."""

    def schedule_wake(self, island: Any, t_ns: int, gen: int) -> None:
        """Call ``island.wake(gen)`` at ``t_ns`` (ns)."""

    def rate_group(self, key: tuple) -> Any:
        """The rate group of the periodic schedule ``key`` (:mod:`hopsim.kernel.rate_group`), or
        None when this owner does not group islands."""

    def take_batch(self, t_ns: int) -> list | None:
        """With batching, the islands whose lazy hops end at ``t_ns`` (once per instant)."""

    def publish(self, env: Any, source_island: Any, queue: bool) -> None:
        """Record ``env`` (if recording) and route it to its subscribers."""

    def served_at_once(self, topic: str, source_island: Any) -> list | None:
        """The subscribers ``(inbox, slot, port)`` that a zero-latency message on ``topic`` from a
        model of home island ``source_island`` reaches, if the island may hand it to them itself
        with no envelope (nothing records it, nothing else subscribes); None: :meth:`publish`
        it. The island then counts it with :meth:`count_published`."""

    def count_published(self, n: int) -> None:
        """``n`` messages were published without an envelope (see :meth:`served_at_once`)."""

    def record_kernel_event(self, island: Any, kind: int, name: str, detail: str = "", **fields) -> None:
        """Record a kernel event of ``island`` at its current time."""

    def after_barrier(self, island: Any, t_ns: int) -> None:
        """``island`` finished its barrier at ``t_ns``: stop callbacks and e_stop are checked."""

    def forget_event(self, ev: Any) -> None:
        """A one-shot timed event fired and is gone."""


_owner_here: Any = None


@contextmanager
def owning_unpickled_islands(owner: IslandOwner) -> Iterator[None]:
    """While islands are unpickled in this process, a pickled simulation becomes ``owner``."""
    global _owner_here
    _owner_here = owner
    try:
        yield
    finally:
        _owner_here = None


def owner_in_this_process() -> IslandOwner:
    """Where a pickled Simulation lands: the owner of the islands being unpickled here."""
    if _owner_here is None:
        raise TypeError("a Simulation is not sent between processes; only its islands are")
    return _owner_here
