"""hopsim: formations of small spacecraft as a discrete-event actor simulation on a message bus."""

from hopsim.kernel.integrate import set_default_integrator as _set_default_integrator


def _rk4():
    """Classical RK4, imported on first use: importing hopsim compiles no numerical kernel."""
    from hopsim.dynamics.integrators import RK4

    return RK4()


# islands created without an integrator use classical RK4 (the kernel itself imports no numerics)
_set_default_integrator(_rk4)
