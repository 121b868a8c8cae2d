"""hopsim: formations of small spacecraft as a discrete-event actor simulation on a message bus."""
from hopsim.dynamics.integrators import RK4 as _RK4
from hopsim.kernel.integrate import set_default_integrator as _set_default_integrator

# islands created without an integrator use classical RK4 (the kernel itself imports no numerics)
_set_default_integrator(_RK4)
