"""The ``formation`` scenario distributed with Ray on this machine, beside the local backend, and a
cost model fitted from the measurements that predicts the speed on K machines.

    .venv/bin/python bench/bench_ray.py [--quick] [--sizes 100,1000] [--configs local,shards:1,shards:2]

Every configuration runs in its own subprocess (its own local Ray, its own peak memory), with the
scenario's defaults (1 Hz control, 1 s radio latency: the lookahead), no recorder, ``--repeat``
times (default 3), the configurations of a size taking turns; the fastest run is kept, as the
other benchmarks keep the best of their runs (this 2-core machine is shared, and a run can be
slowed by tens of percent, for a minute at a time). The first
five simulated seconds (placing the islands in their hosts, compiled-code loading, the rate groups'
row blocks formed) are timed apart.
Reported per run: simulated seconds per wall second, hops and bus messages per wall second,
windows (and how many were pipelined), the driver's time blocked at windows, the hosts' CPU time
(sum, and along the critical path: the busiest host of each window), messages between hosts, peak
memory (driver plus hosts).

The cost model (docs/distributed.md, "The cost model"): the wall time of a windowed run is

    T = W * c_window + C_crit + X * c_cross

with W windows, C_crit the critical-path CPU time of the hosts and X messages between hosts;
``c_window`` (per window: Ray handing each host the replies it waits for, and the driver's round
trip where windows are not pipelined) and ``c_cross`` (per crossing message) are
fitted by least squares over the Ray runs. On K machines with N islands dealt evenly,
C_crit ~ N / K * c_island * D (c_island: host CPU per island and simulated second, measured),
and X grows with the boundaries between the hosts' blocks of islands (about K / 2 times X at
K = 2), so the predicted speed is D / T(K). The model ignores the machines' network (here every
round trip is on one machine) and assumes one core per host.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
from scipy.optimize import nnls

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

FULL = {100: 60.0, 1000: 20.0, 10000: 20.0}  # N -> simulated seconds after the first WARM_S
WARM_S = 5.0  # timed apart: placing the islands in their hosts, compiled code loaded, row blocks formed
QUICK = {100: 20.0, 1000: 3.0}
CONFIGS = ("local", "shards:1", "shards:2")


def peak_rss_mib(pid: int | None = None) -> float:
    """Peak resident memory of a process (MiB): VmHWM from /proc."""
    if pid is None:
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
    try:
        with open(f"/proc/{pid}/status") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024.0
    except OSError:
        pass
    return 0.0


def one(n: int, duration_s: float, config: str) -> dict:
    """Build and run one formation in this process; returns the measurements."""
    from hopsim.kernel import Simulation
    from hopsim.kernel.distributed import make_runtime
    from hopsim.scenarios.catalog import get_scenario

    spec = get_scenario("formation")
    params = spec.make_params({"n_vehicles": n})
    runtime = None
    if config != "local":
        import ray

        ray.init(num_cpus=os.cpu_count(), include_dashboard=False, log_to_driver=False, configure_logging=False)
        runtime = make_runtime("ray", placement=config)
    sim = Simulation(seed=0, runtime=runtime)
    sim.scenario_params = params
    spec.build(sim, params)
    t0 = time.perf_counter()
    sim.advance_to(WARM_S)
    setup_s = time.perf_counter() - t0
    stats0 = sim.stats()  # for islands in hosts, one query per island: outside the timing
    t1 = time.perf_counter()
    sim.advance_to(WARM_S + duration_s)
    t2 = time.perf_counter()
    stats = sim.stats()
    hops = sum(s["hops"] for s in stats["islands"].values()) - sum(s["hops"] for s in stats0["islands"].values())
    msgs0, sync0 = stats0["published"], stats0.get("sync", {})
    wall = t2 - t1
    row = {
        "n": n,
        "config": config,
        "sim_s": duration_s,
        "setup_s": setup_s,
        "wall_s": wall,
        "speed": duration_s / wall,
        "hops_per_s": hops / wall,
        "msgs_per_s": (stats["published"] - msgs0) / wall,
    }
    rss = peak_rss_mib()
    if "sync" in stats:
        s = stats["sync"]
        row.update(
            windows=s["windows"] - sync0["windows"],
            wait_s=s["wait_s"] - sync0["wait_s"],
            pipelined=s["pipelined_windows"] - sync0["pipelined_windows"],
            host_cpu_s=sum(s["host_cpu_s"]) - sum(sync0["host_cpu_s"]),
            critical_cpu_s=s["critical_path_cpu_s"] - sync0["critical_path_cpu_s"],
            crossing=s["crossing_messages"] - sync0["crossing_messages"],
            hosts=len(s["host_cpu_s"]),
        )
        import ray

        hosts = {id(i.host): i.host for i in sim.islands.values() if getattr(i, "remote", False)}
        rss += sum(peak_rss_mib(p) for p in ray.get([h.pid.remote() for h in hosts.values()]))
    row["peak_rss_mib"] = rss
    sim.close()
    return row


def local_advance(n: int, duration_s: float, start_at: float) -> float:
    """Wall time (s) of ``duration_s`` simulated seconds of a local formation of ``n`` vehicles,
    after its first ``WARM_S`` seconds; the timed part starts at the clock time ``start_at`` (so that two
    processes started together also advance together)."""
    from hopsim.kernel import Simulation
    from hopsim.scenarios.catalog import get_scenario

    spec = get_scenario("formation")
    params = spec.make_params({"n_vehicles": n})
    sim = Simulation(seed=0)
    sim.scenario_params = params
    spec.build(sim, params)
    sim.advance_to(WARM_S)
    time.sleep(max(0.0, start_at - time.time()))
    t0 = time.perf_counter()
    sim.advance_to(WARM_S + duration_s)
    return time.perf_counter() - t0


def parallel_ceiling(n: int, duration: float, repeat: int = 2) -> dict:
    """The best 2-vs-1 speed-up this machine allows a formation of ``n`` vehicles, with no
    synchronization at all: the wall time of one process running all of it, over that of two
    independent processes running half of it each at the same time (the hosts' work without
    their windows). Two processes on the two CPUs of a shared machine each run slower than one
    alone (they share caches and, often, one physical core), which bounds what 2 shards can do."""

    def launch(k: int, start_at: float) -> subprocess.Popen:
        return subprocess.Popen(
            [
                sys.executable,
                __file__,
                "--local-advance",
                str(k),
                "--duration",
                str(duration),
                "--start-at",
                str(start_at),
            ],
            stdout=subprocess.PIPE,
            text=True,
        )

    def wall(proc: subprocess.Popen) -> float:
        out, _ = proc.communicate()
        if proc.returncode != 0:
            raise RuntimeError(f"the parallel-ceiling run of N = {n} failed")
        return float(out.strip().splitlines()[-1])

    lead_s = 5.0 + n / 500.0  # time to start Python and build before the timed part
    alone, together = [], []
    for _ in range(repeat):  # taking turns, as in run_all
        alone.append(wall(launch(n, time.time() + lead_s)))
        start_at = time.time() + lead_s
        pair = [launch(n // 2, start_at), launch(n - n // 2, start_at)]
        together.append(max(wall(p) for p in pair))
    return {"n": n, "alone_s": min(alone), "halves_together_s": min(together), "ceiling": min(alone) / min(together)}


def run_one(n: int, duration: float, config: str) -> dict:
    """One configuration in its own subprocess."""
    proc = subprocess.run(
        [sys.executable, __file__, "--one", str(n), "--duration", str(duration), "--config", config],
        check=False,
        capture_output=True,
        text=True,
        env={**os.environ, "RAY_AUTH_MODE": "disabled"},
    )
    if proc.returncode != 0:
        raise RuntimeError(f"N = {n}, {config} failed:\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def run_all(sizes: dict[int, float], configs, repeat: int = 3) -> list[dict]:
    """The fastest of ``repeat`` runs of every (size, configuration). The configurations of a size
    take turns (1, 2, 3, 1, 2, 3, ...), so that a slow spell of this shared machine does not fall
    on one configuration's runs only."""
    rows = []
    for n, duration in sizes.items():
        by_config: dict[str, list[dict]] = {c: [] for c in configs}
        for _ in range(repeat):
            for config in configs:
                by_config[config].append(run_one(n, duration, config))
        for config, runs in by_config.items():
            best = max(runs, key=lambda r: r["speed"])
            best["speeds_of_runs"] = [r["speed"] for r in runs]
            rows.append(best)
            print(
                f"  N = {n}, {config}: " + ", ".join(f"{r['speed']:.2f}x" for r in runs) + " real time",
                file=sys.stderr,
                flush=True,
            )
    return rows


def fit_cost_model(rows: list[dict]) -> dict:
    """Non-negative least squares for c_window and c_cross over the Ray runs; c_island from the
    hosts' CPU time per island and simulated second."""
    ray_rows = [r for r in rows if r["config"] != "local"]
    A = np.array([[r["windows"], r["crossing"]] for r in ray_rows], dtype=float)
    b = np.array([max(r["wall_s"] - r["critical_cpu_s"], 0.0) for r in ray_rows])
    (c_window, c_cross), _ = nnls(A, b)  # costs cannot be negative
    c_island = np.mean([r["host_cpu_s"] / (r["n"] * r["sim_s"]) for r in ray_rows])
    residual = [
        float(r["wall_s"] - (r["windows"] * c_window + r["critical_cpu_s"] + r["crossing"] * c_cross)) / r["wall_s"]
        for r in ray_rows
    ]
    return {
        "c_window_s": float(c_window),
        "c_cross_s": float(c_cross),
        "c_island_s": float(c_island),
        "max_rel_residual": float(np.max(np.abs(residual))),
    }


def predict_speed(model: dict, n: int, k: int, windows_per_s: float, crossing_per_s_at_2: float) -> float:
    """Simulated seconds per wall second on ``k`` machines: windows cost the same on any K, the
    hosts' compute divides by K, and messages between hosts grow with the number of block
    boundaries (K - 1 for a lattice or an open chain, K for a ring: about K / 2 times those at K = 2)."""
    wall = (
        windows_per_s * model["c_window_s"]
        + n / k * model["c_island_s"]
        + (crossing_per_s_at_2 * k / 2 if k > 1 else 0.0) * model["c_cross_s"]
    )
    return 1.0 / wall


def print_section(rows: list[dict], ceiling: dict | None = None) -> None:
    print("### Distributed formation (Ray on this machine, 2 cores; windows of 1 s lookahead)\n")
    header = (
        "vehicles",
        "backend",
        "sim s / wall s",
        "hops / s",
        "messages / s",
        "windows (pipelined)",
        "waiting at windows (s)",
        "host CPU (s)",
        "critical-path CPU (s)",
        "messages between hosts",
        "peak RSS (MiB)",
    )
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    for r in rows:
        extra = (
            ("-",) * 5
            if r["config"] == "local"
            else (
                f"{r['windows']} ({r['pipelined']})",
                f"{r['wait_s']:.2f}",
                f"{r['host_cpu_s']:.2f}",
                f"{r['critical_cpu_s']:.2f}",
                f"{r['crossing']:,}",
            )
        )
        print(
            f"| {r['n']:,} | {r['config']} | {r['speed']:,.2f} | {r['hops_per_s']:,.0f} | {r['msgs_per_s']:,.0f} | "
            + " | ".join(extra)
            + f" | {r['peak_rss_mib']:,.0f} |"
        )
    by = {(r["n"], r["config"]): r for r in rows}
    for n in sorted({r["n"] for r in rows}):
        one_, two = by.get((n, "shards:1")), by.get((n, "shards:2"))
        if one_ and two:
            runs = "; ".join(
                f"{label}: " + ", ".join(f"{v:,.2f}" for v in r.get("speeds_of_runs", [r["speed"]]))
                for label, r in (("1 shard", one_), ("2 shards", two))
            )
            print(
                f"\nN = {n:,}: 2 shards run {two['speed'] / one_['speed']:.2f}x the speed of 1 shard "
                f"(target 1.6x at N = 1,000; sim s / wall s of every run, {runs})."
            )
    if ceiling is not None:
        print(
            f"\nThis machine's ceiling for 2 shards at N = {ceiling['n']:,}: one local process runs it in "
            f"{ceiling['alone_s']:.2f} s, two independent processes running half of it each at the same time "
            f"take {ceiling['halves_together_s']:.2f} s, so no synchronization scheme can make 2 shards more than "
            f"{ceiling['ceiling']:.2f}x faster than 1 here."
        )
    ray_rows = [r for r in rows if r["config"] != "local"]
    if len(ray_rows) >= 2:
        model = fit_cost_model(rows)
        print(
            f"\nCost model: c_window = {model['c_window_s'] * 1e3:.2f} ms, c_cross = "
            f"{model['c_cross_s'] * 1e6:.1f} us, c_island = {model['c_island_s'] * 1e6:.0f} us per island "
            f"and simulated second (largest relative residual {model['max_rel_residual']:.0%}).\n"
        )
        print("| vehicles | predicted sim s / wall s on K = 1, 2, 4, 8, 16 machines |")
        print("|---|---|")
        for n in sorted({r["n"] for r in ray_rows}):
            r = by.get((n, "shards:2"))
            if r is None:
                continue
            speeds = [
                predict_speed(model, n, k, r["windows"] / r["sim_s"], r["crossing"] / r["sim_s"])
                for k in (1, 2, 4, 8, 16)
            ]
            print(f"| {n:,} | " + ", ".join(f"{s:,.1f}" for s in speeds) + " |")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--sizes", default=None, help="comma-separated N (default: 100,1000,10000; quick: 100,1000)")
    ap.add_argument("--configs", default=",".join(CONFIGS))
    ap.add_argument("--repeat", type=int, default=3, help="runs per configuration, taking turns; the fastest is kept")
    ap.add_argument("--one", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--duration", type=float, help=argparse.SUPPRESS)
    ap.add_argument("--config", help=argparse.SUPPRESS)
    ap.add_argument("--local-advance", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--start-at", type=float, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.one:
        print(json.dumps(one(args.one, args.duration, args.config)))
        return
    if args.local_advance:
        print(local_advance(args.local_advance, args.duration, args.start_at))
        return
    table = QUICK if args.quick else FULL
    sizes = {int(n): table.get(int(n), 2.0) for n in args.sizes.split(",")} if args.sizes else table
    rows = run_all(sizes, args.configs.split(","), max(1, args.repeat))
    ceiling = parallel_ceiling(1000, sizes[1000], max(1, args.repeat)) if 1000 in sizes else None
    print_section(rows, ceiling)


if __name__ == "__main__":
    main()
