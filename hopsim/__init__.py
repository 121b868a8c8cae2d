"""hopsim: formations of small spacecraft as a discrete-event actor simulation on a message bus."""

import os as _os
import sys as _sys

NUMBA_CPU = "generic"
"""The CPU numba compiles hopsim's kernels for: one fixed target, so that the instructions, and
so the stream, do not depend on the machine (``NUMBA_CPU_NAME`` set by the user wins, and the
recording says which was used)."""


def _fix_numba_target() -> None:
    _os.environ.setdefault("NUMBA_CPU_NAME", NUMBA_CPU)  # read when numba is imported
    numba = _sys.modules.get("numba")
    if numba is not None:  # imported before hopsim: its settings apply from its first compilation on
        config = numba.core.config
        if config.CPU_NAME is None:
            config.CPU_NAME = NUMBA_CPU
            config.CPU_FEATURES = ""


_fix_numba_target()

from hopsim.kernel.integrate import set_default_integrator as _set_default_integrator  # noqa: E402 (numba target first)


def _rk4():
    """Classical RK4, imported on first use: importing hopsim compiles no numerical kernel."""
    from hopsim.dynamics.integrators import RK4

    return RK4()


# islands created without an integrator use classical RK4 (the kernel itself imports no numerics)
_set_default_integrator(_rk4)


def read_frame(path, topic=None, library="pandas", fields=None):
    """One topic of a recording (or of its export, ``hopsim export``) as a DataFrame: see
    :func:`hopsim.bus.frames.read_frame`."""
    from hopsim.bus.frames import read_frame as read

    return read(path, topic, library, fields)
