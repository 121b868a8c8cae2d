"""Every error the kernel raises, in one leaf module (it imports nothing of hopsim).

Each message names the problem and the fix; the classes only carry the facts a caller may need
(which actor, which loop) beside the message.
"""

from __future__ import annotations


class CausalityError(RuntimeError):
    """Something asked for an instant in an island's past (a barrier, a next I/O time)."""


class ActorKilled(RuntimeError):
    """An actor's process died during the run (the ``kill`` fault, or a Ray worker lost)."""

    def __init__(self, actor: str, t_ns: int, key=None):
        self.actor, self.t_ns, self.key = actor, t_ns, key
        super().__init__(
            f"actor {actor!r} was killed at t = {t_ns / 1e9:.9g} s; recover it from a "
            f"checkpoint (the runner does this for `hopsim run`)"
        )


class AlgebraicLoopError(ValueError):
    """Models whose feed-through forms a loop with no declared break."""

    def __init__(self, loop: list[str], signals: list[str]):
        self.loop = loop
        self.signals = signals
        chain = " -> ".join(loop + loop[:1])
        super().__init__(
            f"algebraic loop: {chain} (every model in it has feed-through, via signals "
            f"{', '.join(signals)}); declare a break on one of these signals "
            f"(sim.add_break(topic)) or give one model no feed-through"
        )


class OutputOutsideUpdateFlowOuts(RuntimeError):
    """A model wrote an output outside ``update_flow_outs`` (Dshell: the only method allowed to)."""


class MergeError(RuntimeError):
    """Islands regrouped where they cannot be (not all at one monitor check, or a member missing)."""


class CheckpointError(RuntimeError):
    """A checkpoint that cannot be taken, read or restored into this simulation."""


class ContactInProgress(CheckpointError):
    """No checkpoint now: islands are merged or watching a contact; try at a later barrier."""


class StateNotFinite(ValueError):
    """An island's continuous state left the finite numbers (checked at each of its barriers)."""

    def __init__(self, island: str, t_ns: int, where: list[str]):
        self.island, self.t_ns, self.where = island, t_ns, where
        super().__init__(
            f"island {island!r}: the continuous state is not finite at t = {t_ns / 1e9:.9g} s "
            f"({', '.join(where)}); the run stops here: a parameter or a fault drove it out of range, "
            f"give smaller values"
        )
