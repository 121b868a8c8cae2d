"""How faults reach models: the queue each model listens on, and the fault every model accepts.

A fault is an ordinary bus message (:class:`hopsim.schemas.Fault`) on ``faults/<model>``; the
kernel hands it to the model's ``on_fault`` at the barrier where it arrives, except ``kill``,
which the kernel carries out itself (the actor's process dies).
"""
from __future__ import annotations

FAULT_PORT = "__faults__"   # the hidden input on which a model receives its faults
KILL = "kill"               # the fault every model accepts: its process dies


def fault_topic(model_name: str) -> str:
    """The queue on which a model receives its faults."""
    return f"faults/{model_name}"
