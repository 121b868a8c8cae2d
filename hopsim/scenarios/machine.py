"""The machine a run is made on, as its recording names it.

A recording's stream is meant to be the same on every machine; when a replay diverges all the
same, knowing where each run was made (the CPU, its vector extensions, the numerics' target)
is the first thing to look at.
"""

from __future__ import annotations

import functools
import platform
from pathlib import Path

# the CPU features that choose among code paths in the C library, numpy and OpenBLAS
_FEATURES = ("sse4_2", "avx", "avx2", "fma", "avx512f", "asimd", "sve")


@functools.lru_cache(maxsize=1)
def machine_description() -> dict[str, str]:
    """``cpu`` (the model name), ``machine`` (the architecture), ``cpu_features`` (those of
    :data:`_FEATURES` the CPU has) and ``numba_cpu`` (the target numba compiles for)."""
    from numba.core import config

    model, flags = "", set()
    try:
        for line in Path("/proc/cpuinfo").read_text(errors="replace").splitlines():
            key, _, value = line.partition(":")
            key = key.strip()
            if key in ("model name", "Model") and not model:
                model = value.strip()
            elif key in ("flags", "Features") and not flags:
                flags = set(value.split())
    except OSError:
        pass
    return {
        "cpu": model or platform.processor() or "unknown",
        "machine": platform.machine(),
        "cpu_features": " ".join(f for f in _FEATURES if f in flags),
        "numba_cpu": str(config.CPU_NAME or "host"),
    }


def describe(machine: dict) -> str:
    """One line naming a machine described by :func:`machine_description`."""
    features = machine.get("cpu_features") or "no listed features"
    cpu, arch = machine.get("cpu", "unknown CPU"), machine.get("machine", "?")
    numba_cpu = machine.get("numba_cpu", "?")
    return f"{cpu} ({arch}; {features}; numba target {numba_cpu})"
