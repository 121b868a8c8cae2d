"""Encoding payloads: protobuf message objects one by one against typed rows encoded in one call.

    .venv/bin/python bench/bench_encoding.py [--repeat 9]

For VehicleState (every vector set) and Wrench, batches of 100 and 10,000 messages are encoded
three ways, in turns within each repeat (medians reported): ``SerializeToString(deterministic=True)``
on each message object; ``RowLayout.encode`` of the same messages held as rows (one call, one
buffer and offsets); ``RowLayout.encode_each`` (one call, then a ``bytes`` per message). The bytes
are checked equal first. The second table times the first encode in a fresh process: the one
compilation of the encoder (empty numba cache, and loaded from the cache), then a second message
type in the same process.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from hopsim.schemas import Quaternion, Vector3, VehicleState, Wrench
from hopsim.schemas.rows import StringTable, row_layout

SIZES = (100, 10_000)


def vehicle_states(n: int, rng) -> list:
    def vec(scale):
        x, y, z = rng.normal(size=3) * scale
        return Vector3(x=x, y=y, z=z)

    out = []
    for i in range(n):
        q = rng.normal(size=4)
        q /= np.linalg.norm(q)
        out.append(
            VehicleState(
                vehicle=f"sph{i % 10}",
                t_ns=i * 100_000_000,
                r_BN_N=vec(7e6),
                v_BN_N=vec(7e3),
                q_BN=Quaternion(x=q[0], y=q[1], z=q[2], w=abs(q[3])),
                omega_BN_B=vec(0.01),
                a_BN_N=vec(9.0),
                omega_dot_BN_B=vec(1e-4),
                mass=4.1 + i * 1e-6,
            )
        )
    return out


def wrenches(n: int, rng) -> list:
    out = []
    for i in range(n):
        f, t = rng.normal(size=3), rng.normal(size=3) * 0.1
        out.append(
            Wrench(
                body=f"sph{i % 10}",
                force=Vector3(x=f[0], y=f[1], z=f[2]),
                torque=Vector3(x=t[0], y=t[1], z=t[2]),
                frame=i % 2,
            )
        )
    return out


def per_call(fn, calls: int) -> float:
    t0 = time.perf_counter()
    for _ in range(calls):
        fn()
    return (time.perf_counter() - t0) / calls


def encode_costs(messages: list, repeat: int) -> dict[str, float]:
    """Median cost per message (us) of each way of encoding ``messages``."""
    layout, strings = row_layout(type(messages[0])), StringTable()
    rows = layout.rows_from_messages(messages, strings)
    ways = {
        "protobuf": lambda: [m.SerializeToString(deterministic=True) for m in messages],
        "rows": lambda: layout.encode(rows, strings),
        "rows_each": lambda: layout.encode_each(rows, strings),
    }
    assert ways["rows_each"]() == ways["protobuf"](), "the row encoder's bytes differ from protobuf's"
    calls = max(1, 200_000 // len(messages))  # about 0.05-0.2 s per timing
    times = {name: [] for name in ways}
    for _ in range(repeat):  # interleaved, so that a busy machine slows all alike
        for name, fn in ways.items():
            times[name].append(per_call(fn, calls) / len(messages) * 1e6)
    return {name: statistics.median(t) for name, t in times.items()}


_FIRST_USE = """
import time
from hopsim.schemas import VehicleState, Vector3, Wrench
from hopsim.schemas.rows import StringTable, row_layout
import numba  # noqa: F401  (imported before the clock starts, as in any hopsim process)
for cls in (VehicleState, Wrench):
    t0 = time.perf_counter()
    layout, strings = row_layout(cls), StringTable()
    layout.encode(layout.rows_from_messages([cls()], strings), strings)
    print(time.perf_counter() - t0)
"""


def first_use() -> list[tuple[str, float, float]]:
    """Seconds of the first encode of VehicleState, then of Wrench, in fresh processes: an empty
    numba cache, then the cache that run wrote."""
    out = []
    with tempfile.TemporaryDirectory() as cache:
        for label in ("empty numba cache (compiles)", "numba cache written by the run above"):
            proc = subprocess.run(
                [sys.executable, "-c", _FIRST_USE],
                capture_output=True,
                text=True,
                check=True,
                env={**os.environ, "NUMBA_CACHE_DIR": cache},
            )
            vehicle, wrench = (float(v) for v in proc.stdout.split())
            out.append((label, vehicle, wrench))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=9)
    opts = ap.parse_args()
    rng = np.random.default_rng(1)
    print(
        "| payload, messages per call | protobuf `SerializeToString` (us/message) | rows, one buffer (us/message) "
        "| rows, a `bytes` each (us/message) | protobuf / rows |"
    )
    print("|---|---:|---:|---:|---:|")
    for name, make in (("VehicleState", vehicle_states), ("Wrench", wrenches)):
        for n in SIZES:
            c = encode_costs(make(n, rng), opts.repeat)
            print(
                f"| {name}, {n:,} | {c['protobuf']:.3f} | {c['rows']:.3f} | {c['rows_each']:.3f} "
                f"| {c['protobuf'] / c['rows']:.1f}x |"
            )
    print()
    print("| first encode in a fresh process | VehicleState (s) | then Wrench (s) |")
    print("|---|---:|---:|")
    for label, vehicle, wrench in first_use():
        print(f"| {label} | {vehicle:.2f} | {wrench:.4f} |")


if __name__ == "__main__":
    main()
