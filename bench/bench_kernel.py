"""Kernel overhead per hop and per bus delivery, beside a bare simpy loop doing the same number of
events in the same run.

    .venv/bin/python bench/bench_kernel.py [--hops N]

Prints a markdown table (rows: measurement, hopsim, bare simpy, ratio).
"""

from __future__ import annotations

import argparse
import time

import simpy

from hopsim.kernel import FixedRate, In, Model, NoIo, Out, Simulation, Tie
from hopsim.schemas import Scalar

RATE_HZ = 100.0


class Stage(Model):
    """A flow model doing the minimum: a discrete update per I/O step and one output."""

    inputs = {"u": In(Scalar)}
    outputs = {"y": Out(Scalar)}
    io_schedule = FixedRate(RATE_HZ)
    feed_through = False

    def __init__(self, name):
        super().__init__(name)
        self.k = 0

    def end_io_step(self, t0, t1):
        self.k += 1

    def update_flow_outs(self, t):
        self.write("y", Scalar(value=self.k))


class Burst(Model):
    """Publishes ``n`` messages on a queue at each I/O step."""

    outputs = {"q": Out(Scalar, queue=True)}
    io_schedule = FixedRate(RATE_HZ)

    def __init__(self, name, n):
        super().__init__(name)
        self.n = n
        self.msgs = [Scalar(value=i) for i in range(n)]

    def update_flow_outs(self, t):
        for m in self.msgs:
            self.write("q", m)


class Sink(Model):
    inputs = {"q": In(Scalar, queue=True)}
    io_schedule = NoIo()

    def __init__(self, name):
        super().__init__(name)
        self.count = 0

    def end_io_step(self, t0, t1):
        self.count += len(self.drain("q"))


def bare_simpy(n_events: int, calls_per_event: int) -> float:
    """simpy alone: n timeouts, each running ``calls_per_event`` trivial Python calls."""
    env = simpy.Environment()
    state = [0]

    def work():
        state[0] += 1

    def proc():
        for _ in range(n_events):
            yield env.timeout(10_000_000)
            for _ in range(calls_per_event):
                work()

    env.process(proc())
    t0 = time.perf_counter()
    env.run()
    return time.perf_counter() - t0


def hop_cost(n_hops: int, stage_cls: type = Stage) -> float:
    """Wall seconds per hop of one island with 5 ``stage_cls`` models in a ring."""
    sim = Simulation()
    sim.add_island("a")
    names = [f"m{i}" for i in range(5)]
    for i, name in enumerate(names):
        sim.add_model(stage_cls(name), "a", ties={"u": f"a/{names[i - 1]}", "y": f"a/{name}"})
    sim.start()
    t0 = time.perf_counter()
    sim.advance_to(n_hops / RATE_HZ)
    wall = time.perf_counter() - t0
    assert sim.islands["a"].stats["hops"] == n_hops
    return wall / n_hops


def delivery_rate(n_barriers: int, burst: int, cross_island: bool) -> tuple[float, int]:
    sim = Simulation()
    sim.add_island("a")
    sim.add_model(Burst("burst", burst), "a", ties={"q": Tie("a/q")})
    sink_island = "b" if cross_island else "a"
    if cross_island:
        sim.add_island("b")
    sink = sim.add_model(Sink("sink"), sink_island, ties={"q": "a/q"})
    sim.start()
    t0 = time.perf_counter()
    sim.advance_to(n_barriers / RATE_HZ)
    wall = time.perf_counter() - t0
    return sink.count / wall, sink.count


def main() -> list[tuple[str, str, str, str]]:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--hops", type=int, default=20_000)
    opts = ap.parse_args([] if __name__ != "__main__" else None)
    rows = []
    hop = min(hop_cost(opts.hops) for _ in range(3))
    # per hop the kernel makes 5 end_io_step, 5 update_flow_outs and 5 start_io_step calls
    bare = min(bare_simpy(opts.hops, 15) for _ in range(3)) / opts.hops
    rows.append(
        ("hop of an island with 5 flow models (us)", f"{hop * 1e6:.1f}", f"{bare * 1e6:.1f}", f"{hop / bare:.1f}x")
    )
    for cross in (False, True):
        rate, n = max((delivery_rate(2_000, 100, cross) for _ in range(3)), key=lambda x: x[0])
        bare_msgs = n / bare_simpy(n, 0)
        where = "to another island" if cross else "inside the island"
        rows.append(
            (
                f"bus deliveries per second, {where}",
                f"{rate:,.0f}",
                f"{bare_msgs:,.0f} (events)",
                f"{bare_msgs / rate:.1f}x",
            )
        )
    return rows


def print_table(rows, header=("kernel measurement", "hopsim", "bare simpy, same count", "hopsim / simpy")) -> None:
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    for r in rows:
        print("| " + " | ".join(r) + " |")


if __name__ == "__main__":
    print_table(main())
