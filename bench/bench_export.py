"""A large recording as Parquet files: ``hopsim export`` against decoding message by message.

    .venv/bin/python bench/bench_export.py [--vehicles 100] [--duration 1650] [--repeat 3]

A formation of ``--vehicles`` vehicles is run for ``--duration`` simulated seconds and recorded
(100 vehicles for 1650 s: about 990,000 messages on 500 topics). Then, in turns, ``--repeat``
times each:

- the export: :func:`hopsim.bus.frames.export`, every topic to its Parquet file (decoded chunk by
  chunk, written as row groups, zstd);
- the way a user would without it: every message decoded with mcap-protobuf-support's decoder
  (``mcap_protobuf.decoder.DecoderFactory`` with mcap's reader) and each of its leaf fields
  appended to its topic's column, the columns made NumPy arrays at the end (nothing written).

The medians of the wall times and their ratio are reported, the columns of both are compared
value for value, and the export's peak memory is measured in a process of its own (Linux): its
resident size at its peak, over what it was once hopsim, pyarrow and the compiled decoder were
loaded (and Arrow's own peak allocation). A chunk of the recording is 256 KiB of records decompressed;
the export holds up to ``hopsim.bus.frames.FLUSH_BYTES`` of decoded columns before writing them.
"""

from __future__ import annotations

import argparse
import json
import operator
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from hopsim.bus.frames import FLUSH_BYTES, Plan, export, topic_path
from hopsim.schemas import message_class


def record(path: Path, vehicles: int, duration_s: float) -> None:
    from hopsim.scenarios import run_scenario

    run_scenario("formation", {"n_vehicles": vehicles}, duration_s=duration_s, out=path)


def getters(type_name: str):
    """(column, getter) of each leaf column of ``type_name``, as the export names them."""
    plan = Plan(type_name, message_class(type_name).DESCRIPTOR)
    out = []
    for leaf in plan.leaves:
        path = leaf.name.removeprefix("payload.")
        if leaf.place in ("scalar", "string"):
            out.append((leaf.name, operator.attrgetter(path)))
        elif leaf.place in ("list", "list_string"):
            get = operator.attrgetter(path)
            out.append((leaf.name, lambda m, get=get: list(get(m))))
        else:
            head, _, rest = path.partition(".")
            get_head, get_rest = operator.attrgetter(head), operator.attrgetter(rest)
            out.append((leaf.name, lambda m, h=get_head, r=get_rest: [r(e) for e in h(m)]))
    return out


def by_messages(path: Path, epoch_ns: int) -> dict[str, dict[str, np.ndarray]]:
    """{topic: {column: values}}, every message decoded by mcap-protobuf-support's decoder."""
    from mcap.reader import make_reader
    from mcap_protobuf.decoder import DecoderFactory

    columns: dict[str, dict[str, list]] = {}
    plans: dict[str, list] = {}
    with open(path, "rb") as f:
        reader = make_reader(f, decoder_factories=[DecoderFactory()])
        for schema, channel, message, decoded in reader.iter_decoded_messages():
            if channel.topic.startswith("viz/"):  # Foxglove's channels, derived from the stream
                continue
            table = columns.get(channel.topic)
            if table is None:
                if schema.name not in plans:
                    plans[schema.name] = getters(schema.name)
                table = columns[channel.topic] = {"t_ns": [], **{name: [] for name, _ in plans[schema.name]}}
                table["_getters"] = plans[schema.name]
            table["t_ns"].append(message.log_time - epoch_ns)
            for name, get in table["_getters"]:
                table[name].append(get(decoded))
    out = {}
    for topic, table in columns.items():
        table.pop("_getters")
        out[topic] = {name: np.array(values) for name, values in table.items()}
        out[topic]["t_s"] = out[topic]["t_ns"] / 1e9
    return out


def same(exported: Path, decoded: dict[str, dict[str, np.ndarray]]) -> int:
    """Compare every column of the export with the decoded ones; the values compared."""
    import pyarrow.parquet as pq

    compared = 0
    for topic, columns in decoded.items():
        table = pq.read_table(exported / topic_path(topic))
        assert sorted(table.column_names) == sorted(columns), topic
        for name, values in columns.items():
            got = table[name].to_numpy(zero_copy_only=False)
            assert got.dtype.kind == "O" or np.array_equal(got, values), (topic, name)
            assert got.dtype.kind != "O" or got.tolist() == values.tolist(), (topic, name)
            compared += len(values)
    return compared


def child_memory(small: Path, path: Path, out: Path) -> dict:
    """The export's peak memory, measured in a process of its own: hopsim, pyarrow and the
    decoder loaded by exporting the small recording ``small`` first, then the peak resident size
    (Linux's VmHWM, reset before the export) over the resident size before it."""
    code = f"""
import json, resource, sys, tempfile
sys.path.insert(0, {str(Path(__file__).resolve().parents[1])!r})
import pyarrow as pa
from hopsim.bus.frames import export

def status(key):
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) / 1024 for line in f if line.startswith(key))

with tempfile.TemporaryDirectory() as d:
    export({str(small)!r}, d + "/small")
pool = pa.default_memory_pool()
with open("/proc/self/clear_refs", "w") as f:
    f.write("5")  # the peak resident size starts again from the current one
base = status("VmRSS:")
export({str(path)!r}, {str(out)!r}, force=True)
print(json.dumps({{"base_mib": base, "peak_mib": status("VmHWM:"), "arrow_mib": pool.max_memory() / 2**20}}))
"""
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return json.loads(res.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--vehicles", type=int, default=100)
    ap.add_argument("--duration", type=float, default=1650.0)
    ap.add_argument("--repeat", type=int, default=3)
    opts = ap.parse_args()
    with tempfile.TemporaryDirectory() as d:
        path, out, small = Path(d) / "formation.mcap", Path(d) / "export", Path(d) / "small.mcap"
        record(small, 2, 2.0)
        t0 = time.perf_counter()
        record(path, opts.vehicles, opts.duration)
        recorded = time.perf_counter() - t0
        from hopsim.bus.frames import Recording

        recording = Recording(path)
        epoch_ns = next(iter(recording.channels.values())).offset
        recording.close()
        report = export(path, out, force=True)  # compile the decoder (cached afterwards)
        messages = sum(report.topics.values())
        times = {"export": [], "messages": []}
        for _ in range(opts.repeat):
            t0 = time.perf_counter()
            export(path, out, force=True)
            times["export"].append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            decoded = by_messages(path, epoch_ns)
            times["messages"].append(time.perf_counter() - t0)
        compared = same(out, decoded)
        del decoded
        memory = child_memory(small, path, Path(d) / "export_memory")
        size = path.stat().st_size
        written = sum(p.stat().st_size for p in out.rglob("*.parquet"))
    exp, msg = statistics.median(times["export"]), statistics.median(times["messages"])
    print("| every topic of a recording as columns | wall (s, median) | each repeat |")
    print("|---|---:|---|")
    print(f"| `hopsim export` (Parquet files written) | {exp:.2f} | {', '.join(f'{t:.2f}' for t in times['export'])} |")
    print(
        f"| decoding message by message (columns in memory) | {msg:.2f} | "
        f"{', '.join(f'{t:.2f}' for t in times['messages'])} |"
    )
    print()
    print(
        f"{messages:,} messages on {len(report.topics)} topics ({size / 1e6:.0f} MB, {report.chunks} chunks; "
        f"recorded in {recorded:.0f} s): the export is {msg / exp:.1f}x faster (target 5x); "
        f"{compared:,} values identical; {written / 1e6:.0f} MB of Parquet."
    )
    grown = memory["peak_mib"] - memory["base_mib"]
    print(
        f"the export's peak memory: {grown:.0f} MiB over the {memory['base_mib']:.0f} MiB of a process with hopsim, "
        f"pyarrow and the decoder loaded (Arrow's peak allocation {memory['arrow_mib']:.0f} MiB; columns held "
        f"before they are written: at most {FLUSH_BYTES >> 20} MiB; the recording: {size / 2**20:.0f} MiB)."
    )


if __name__ == "__main__":
    main()
