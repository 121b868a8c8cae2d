"""The single compilation policy of hopsim.dynamics.

Every compiled function goes through :func:`compiled`: cached on disk (so test and benchmark
runs pay the compile time once), no fast-math (results must not depend on how a call was
batched or inlined), and NumPy's error model (division by zero gives inf/nan instead of
raising, which also removes the zero checks from inner loops).

Hot entry points called from Python can be compiled for one fixed signature with
:func:`compiled_for`: the dispatcher then only matches argument types (it never compiles a new
specialization at call time) and raises ``TypeError`` for anything else, which the Python
wrapper answers by converting its inputs.
"""
from numba import njit, types

COMPILE_OPTIONS = {"cache": True, "fastmath": False, "error_model": "numpy"}

F64_VECTOR = types.Array(types.float64, 1, "C")
"""A writable C-contiguous float64 vector, the type of Q, U, tau."""
I64_VECTOR = types.Array(types.int64, 1, "C")


def compiled(fn):
    """Compile ``fn`` with hopsim's numba options."""
    return njit(**COMPILE_OPTIONS)(fn)


def compiled_for(signature):
    """Compile the decorated function eagerly for ``signature`` only, with hopsim's options."""
    return njit(signature, **COMPILE_OPTIONS)
