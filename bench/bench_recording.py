"""Recording and replay costs, measured against the same run without them.

    .venv/bin/python bench/bench_recording.py

- recording: the lander run with an MCAP recorder vs no recorder; the difference per message.
- replay: playback-only replay (every output republished from the file) vs the original run.
- faults: the kernel hop benchmark with models that accept faults vs models that do not.
"""
from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_kernel import Stage  # noqa: E402
from hopsim.kernel import Simulation  # noqa: E402
from hopsim.scenarios.replay import replay_recording  # noqa: E402
from hopsim.scenarios.runner import run_scenario  # noqa: E402

DURATION_S = 600.0


def best(fn, repeat=3):
    return min(fn() for _ in range(repeat))


def lander_wall(out=None) -> tuple[float, int]:
    r = run_scenario("lander", {}, seed=1, duration_s=DURATION_S, out=out)
    return r.wall_s, r.message_count


class FaultyStage(Stage):
    accepts_faults = ("sensor_bias",)

    def on_fault(self, fault, t_ns):
        pass


def hops_wall(cls, n=20_000) -> float:
    sim = Simulation()
    sim.add_island("a")
    names = [f"m{i}" for i in range(5)]
    for i, name in enumerate(names):
        sim.add_model(cls(name), "a", ties={"u": f"a/{names[i - 1]}", "y": f"a/{name}"})
    sim.start()
    t0 = time.perf_counter()
    sim.advance_to(n / 100.0)
    return time.perf_counter() - t0


def main() -> list[tuple[str, str, str, str]]:
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "lander.mcap"
        bare = best(lambda: lander_wall()[0])
        recorded = best(lambda: lander_wall(path)[0])
        _, count = lander_wall(path)
        per_msg_us = (recorded - bare) / count * 1e6
        rows.append((f"lander {DURATION_S:g} s, {count} messages: run with MCAP recording (s)",
                     f"{recorded:.3f}", f"{bare:.3f}", f"{per_msg_us:.2f} us/message"))
        playback = best(lambda: replay_recording(path, live=[]).wall_s)
        rows.append(("playback-only replay of that recording (s)", f"{playback:.3f}", f"{bare:.3f}",
                     f"{bare / playback:.2f}x faster"))
    with_faults = best(lambda: hops_wall(FaultyStage))
    without = best(lambda: hops_wall(Stage))
    rows.append(("20,000 hops, 5 models accepting faults, none sent (s)", f"{with_faults:.3f}",
                 f"{without:.3f}", f"{(with_faults / without - 1) * 100:+.1f} %"))
    return rows


def print_table(rows) -> None:
    print("| recording, replay, faults | with | without (same run) | cost |")
    print("|---|---|---|---|")
    for r in rows:
        print("| " + " | ".join(r) + " |")


if __name__ == "__main__":
    print_table(main())
