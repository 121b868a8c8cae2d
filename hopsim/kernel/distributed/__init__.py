"""The Ray layer: models and islands as Ray actors, and the windows that synchronize island hosts.

The kernel core never imports this package; it reaches the islands in hosts through the same
operations it performs on its own islands (:class:`~hopsim.kernel.distributed.host.RemoteIsland`
stands in for each), and a Ray host runs the very same island code with
:class:`~hopsim.kernel.distributed.host.HostServices` as the islands' owner.
"""

from hopsim.kernel.distributed.ray_runtime import RayRuntime, make_runtime, parse_placement

__all__ = ["RayRuntime", "make_runtime", "parse_placement"]
