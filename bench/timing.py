"""The timing helper every benchmark uses: best per-call time over repeated batches."""

from __future__ import annotations

import time


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
