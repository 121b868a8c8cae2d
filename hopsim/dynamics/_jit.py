"""The single compilation policy of hopsim.dynamics.

Every compiled function goes through :func:`compiled`: cached on disk (so test and benchmark
runs pay the compile time once), no fast-math (results must not depend on how a call was
batched or inlined), and NumPy's error model (division by zero gives inf/nan instead of
raising, which also removes the zero checks from inner loops).
"""
from numba import njit

COMPILE_OPTIONS = dict(cache=True, fastmath=False, error_model="numpy")


def compiled(fn):
    """Compile ``fn`` with hopsim's numba options."""
    return njit(**COMPILE_OPTIONS)(fn)
