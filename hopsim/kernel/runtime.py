"""The local runtime: every model is an ordinary object in the kernel's own process.

The kernel talks to every model through a handle with two operations, ``deliver`` (an input
message) and ``call`` (a lifecycle method, returning its result and the outputs it wrote). The
local runtime calls the object directly. Other runtimes (Ray, :mod:`hopsim.kernel.distributed`)
implement the same two operations, so a model sees exactly the same inputs at the same lifecycle
calls wherever it runs.
"""

from __future__ import annotations

from typing import Any

from hopsim.kernel.model import Model, ModelContext


def invoke(model: Model, method: str, args: tuple, deliveries=()) -> tuple[Any, list]:
    """Apply pending deliveries, run one lifecycle method, return (result, outputs written)."""
    for port, msg, t_ns in deliveries:
        model.ports[port].deliver(msg, t_ns)
    writing = method == "update_flow_outs"
    model._may_write = writing
    try:
        result = getattr(model, method)(*args)
    finally:
        model._may_write = False
    out = model._outbox
    if out:
        model._outbox = []
    return result, out


class LocalHandle:
    """A model in the kernel's own process."""

    remote = False

    def __init__(self, model: Model):
        self.model = model
        self.name = model.name

    def deliver(self, port: str, msg: Any, t_ns: int) -> None:
        self.model.ports[port].deliver(msg, t_ns)

    def call(self, method: str, *args) -> tuple[Any, list]:
        return invoke(self.model, method, args)

    def kill(self) -> None:
        """An in-process actor dies with its state: nothing of it is used again."""
        self.model = None

    def close(self) -> None:
        pass


class LocalRuntime:
    """Every model is an ordinary object in this process (the default, embedded backend)."""

    name = "local"
    placement = "in-process"

    def handle(self, model: Model, ctx: ModelContext) -> LocalHandle:
        h = LocalHandle(model)
        h.call("bind", ctx)
        return h

    def release(self, handles) -> None:
        pass

    def shutdown(self) -> None:
        pass
