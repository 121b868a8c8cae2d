"""The single compilation policy of hopsim.dynamics.

Every compiled function goes through :func:`compiled`: cached on disk (so test and benchmark
runs pay the compile time once), no fast-math (results must not depend on how a call was
batched or inlined), and NumPy's error model (division by zero gives inf/nan instead of
raising, which also removes the zero checks from inner loops).

Hot entry points called from Python can be compiled for one fixed signature with
:func:`compiled_for`: the dispatcher then only matches argument types (it never compiles a new
specialization at call time) and raises ``TypeError`` for anything else, which the Python
wrapper answers by converting its inputs. The compilation waits for the first call, so that
importing hopsim.dynamics costs no compile time to a scenario that never calls the function.

Compiled code copies an array into another element by element, not by slice assignment
(``out[0:3] = r``, ``rows[k] = r``): numba checks a slice assignment's shapes with an error
message it formats at run time, which compiles its string formatting (seconds, in each process)
and links it into every function that assigns so. ``np.cross`` and ``np.sort`` are as dear for
what they do (formatted messages, a quicksort): written out where they are needed.
"""

import functools

from numba import njit, types

COMPILE_OPTIONS = {"cache": True, "fastmath": False, "error_model": "numpy"}

F64_VECTOR = types.Array(types.float64, 1, "C")
"""A writable C-contiguous float64 vector, the type of Q, U, tau."""
I64_VECTOR = types.Array(types.int64, 1, "C")


def compiled(fn):
    """Compile ``fn`` with hopsim's numba options."""
    return njit(**COMPILE_OPTIONS)(fn)


def compiled_borrowing(fn):
    """Compile ``fn`` with hopsim's numba options and without numba's reference counting: for
    hot helpers that only read and write the arrays they are given (no allocation, no array
    kept or returned), where the counting's atomic increments cost more than the arithmetic.
    The arithmetic is the same as :func:`compiled`'s."""
    return njit(**COMPILE_OPTIONS, _nrt=False)(fn)


def compiled_for(signature):
    """Compile the decorated function for ``signature`` only, with hopsim's options, at its
    first call.

    Until then the module-level name is a stub; its first call compiles (or loads from the disk
    cache) the dispatcher and puts it in the stub's place in the defining module, so later calls
    through that name reach the dispatcher directly. A reference taken before the first call keeps
    working through the stub.
    """

    def decorate(fn):
        dispatcher = None

        @functools.wraps(fn)
        def first_call(*args):
            nonlocal dispatcher
            if dispatcher is None:
                dispatcher = njit(signature, **COMPILE_OPTIONS)(fn)
                if fn.__globals__.get(fn.__name__) is first_call:
                    fn.__globals__[fn.__name__] = dispatcher
            return dispatcher(*args)

        return first_call

    return decorate
