"""Recording and replay costs, measured against the same run without them.

    .venv/bin/python bench/bench_recording.py

- recording: the lander run with an MCAP recorder vs no recorder; the difference per message.
- replay: playback-only replay (every output republished from the file) vs the original run.
- faults: the kernel hop benchmark with models that accept faults vs models that do not.
"""
from __future__ import annotations

import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_kernel import Stage, hop_cost, print_table  # noqa: E402
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


def main() -> list[tuple[str, str, str, str]]:
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "lander.mcap"
        pairs = [(lander_wall()[0], lander_wall(path)[0]) for _ in range(3)]
        bare, recorded = min(a for a, _ in pairs), min(b for _, b in pairs)
        _, count = lander_wall(path)
        per_msg_us = (recorded - bare) / count * 1e6
        rows.append((f"lander {DURATION_S:g} s, {count} messages: run with MCAP recording (s)",
                     f"{recorded:.3f}", f"{bare:.3f}", f"{per_msg_us:.2f} us/message"))
        playback = best(lambda: replay_recording(path, live=[]).wall_s)
        rows.append(("playback-only replay of that recording (s)", f"{playback:.3f}", f"{bare:.3f}",
                     f"{bare / playback:.2f}x faster"))
    # interleaved, so that a busy machine slows both alike
    pairs = [(hop_cost(20_000, FaultyStage), hop_cost(20_000, Stage)) for _ in range(7)]
    with_faults, without = min(a for a, _ in pairs), min(b for _, b in pairs)
    rows.append(("hop of 5 models that accept faults, none sent (us)", f"{with_faults * 1e6:.1f}",
                 f"{without * 1e6:.1f}", f"{(with_faults / without - 1) * 100:+.1f} %"))
    return rows


if __name__ == "__main__":
    print_table(main(), ("recording, replay, faults", "with", "without (same run)", "cost"))
