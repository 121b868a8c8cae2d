"""Reading one field of a large recording: column by column against message by message.

    .venv/bin/python bench/bench_columns.py [--messages 1000000] [--repeat 3]

A recording of ``--messages`` VehicleState messages (100 vehicles at 10 Hz, written with hopsim's
recorder: zstd chunks of 256 KiB) is read twice per repeat, in turns: with
:func:`hopsim.view.columns.read_signals` for one field of one vehicle, and the way a user would
without it, decoding every message of the topic with mcap-protobuf-support's decoder and taking
the field. The values are compared, the medians of the wall times reported.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from hopsim.bus.envelope import Envelope
from hopsim.bus.recorder import McapRecorder
from hopsim.schemas import Quaternion, Vector3, VehicleState
from hopsim.view.columns import read_signals

VEHICLES = 100


def write(path: Path, messages: int) -> None:
    rng = np.random.default_rng(1)
    recorder = McapRecorder(path, {"scenario": "bench_columns"})
    steps = messages // VEHICLES
    for k in range(steps):
        t_ns = k * 100_000_000
        for v in range(VEHICLES):
            r, w = rng.normal(size=3), rng.normal(size=3) * 0.1
            msg = VehicleState(
                vehicle=f"v{v:03d}",
                t_ns=t_ns,
                r_BN_N=Vector3(x=r[0], y=r[1], z=r[2]),
                omega_BN_B=Vector3(x=w[0], y=w[1], z=w[2]),
                q_BN=Quaternion(w=1.0),
                mass=4.0,
            )
            recorder.record(
                Envelope(
                    t_ns=t_ns,
                    deliver_ns=t_ns,
                    source=f"v{v:03d}",
                    topic=f"v{v:03d}/state",
                    seq=k,
                    priority=0,
                    payload=msg,
                )
            )
        recorder.flush()
    recorder.close()


def by_columns(path: Path) -> np.ndarray:
    return read_signals(path, ["v042/state.omega_BN_B.z"])["v042/state.omega_BN_B.z"].values


def by_messages(path: Path) -> np.ndarray:
    from mcap.reader import make_reader
    from mcap_protobuf.decoder import DecoderFactory

    out = []
    with open(path, "rb") as f:
        reader = make_reader(f, decoder_factories=[DecoderFactory()])
        for _, _, _, decoded in reader.iter_decoded_messages(topics=["v042/state"]):
            out.append(decoded.omega_BN_B.z)
    return np.array(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--messages", type=int, default=1_000_000)
    ap.add_argument("--repeat", type=int, default=3)
    opts = ap.parse_args()
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "big.mcap"
        t0 = time.perf_counter()
        write(path, opts.messages)
        written = time.perf_counter() - t0
        by_columns(path)  # compile the scan (cached afterwards)
        times = {"columns": [], "messages": []}
        for _ in range(opts.repeat):
            t0 = time.perf_counter()
            cols = by_columns(path)
            times["columns"].append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            msgs = by_messages(path)
            times["messages"].append(time.perf_counter() - t0)
            assert np.array_equal(cols, msgs), "the two readings differ"
        size = path.stat().st_size
    col, msg = statistics.median(times["columns"]), statistics.median(times["messages"])
    print("| one field of one topic | wall (s, median) | each repeat |")
    print("|---|---:|---|")
    print(f"| `read_signals` (columns) | {col:.2f} | {', '.join(f'{t:.2f}' for t in times['columns'])} |")
    print(f"| decoding message by message | {msg:.2f} | {', '.join(f'{t:.2f}' for t in times['messages'])} |")
    print()
    print(
        f"{opts.messages:,} messages ({size / 1e6:.0f} MB, written in {written:.0f} s), {len(cols):,} of them on the "
        f"topic read: columns are {msg / col:.1f}x faster (target 10x); values identical."
    )


if __name__ == "__main__":
    main()
