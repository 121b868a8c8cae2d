"""What the benchmarks share: best per-call time over repeated batches, and where Basilisk's
interpreter is."""

from __future__ import annotations

import os
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def bsk_python() -> str | None:
    """The interpreter with Basilisk's ``bsk`` wheel: ``HOPSIM_BSK_PYTHON``, else ``.venv-bsk``
    (``make bench`` makes it), else None (Basilisk is not measured)."""
    named = os.environ.get("HOPSIM_BSK_PYTHON")
    if named:
        return named
    local = ROOT / ".venv-bsk" / "bin" / "python"
    return str(local) if local.exists() else None


def best_time(fn, repeat=5, min_time=0.05):
    """Best per-call time [s] over ``repeat`` runs of as many calls as fill ``min_time``."""
    fn()
    n = 1
    while True:
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        dt = time.perf_counter() - t0
        if dt >= min_time or n >= 1 << 20:
            break
        n *= 2
    best = dt / n
    for _ in range(repeat - 1):
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        best = min(best, (time.perf_counter() - t0) / n)
    return best
