"""Recording and replay costs, measured against the same run without them.

    .venv/bin/python bench/bench_recording.py

- recording: the lander run with an MCAP recorder vs no recorder; the difference per message
  (medians of interleaved runs).
- the recorder alone: the same run's envelopes fed to a recorder, with and without the Foxglove
  scene it derives from the vehicle states (per stream message).
- replay: playback-only replay (every output republished from the file) vs the original run.
- faults: the kernel hop benchmark with models that accept faults vs models that do not.
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_kernel import Stage, hop_cost, print_table

from hopsim.bus.recorder import McapRecorder
from hopsim.scenarios.replay import replay_recording
from hopsim.scenarios.runner import run_scenario

DURATION_S = 600.0
REPEAT = 5


def best(fn, repeat=3):
    return min(fn() for _ in range(repeat))


def lander_wall(out=None) -> tuple[float, int]:
    r = run_scenario("lander", {}, seed=1, duration_s=DURATION_S, out=out)
    return r.wall_s, r.message_count


def record_alone(envelopes, path: Path, scene: bool) -> float:
    """Seconds to record ``envelopes`` (in stream order) to ``path``."""
    t0 = time.perf_counter()
    with McapRecorder(path, scene=scene) as rec:
        for env in envelopes:
            rec.record(env)
    return time.perf_counter() - t0


class FaultyStage(Stage):
    accepts_faults = ("sensor_bias",)

    def on_fault(self, fault, t_ns):
        pass


def main() -> list[tuple[str, str, str, str]]:
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "lander.mcap"
        lander_wall()
        # interleaved, so that a busy machine slows both alike; medians
        pairs = [(lander_wall()[0], lander_wall(path)) for _ in range(REPEAT)]
        bare = statistics.median(a for a, _ in pairs)
        recorded = statistics.median(b for _, (b, _) in pairs)
        count = pairs[0][1][1]
        per_msg_us = (recorded - bare) / count * 1e6
        rows.append(
            (
                f"lander {DURATION_S:g} s, {count} messages: run with MCAP recording (s)",
                f"{recorded:.3f}",
                f"{bare:.3f}",
                f"{per_msg_us:.2f} us/message",
            )
        )
        envelopes = run_scenario("lander", {}, seed=1, duration_s=DURATION_S, keep_stream=True).recorder.envelopes
        alone = [
            (record_alone(envelopes, Path(tmp) / "s.mcap", True), record_alone(envelopes, Path(tmp) / "n.mcap", False))
            for _ in range(REPEAT)
        ]
        with_scene = statistics.median(a for a, _ in alone) / len(envelopes) * 1e6
        without = statistics.median(b for _, b in alone) / len(envelopes) * 1e6
        rows.append(
            (
                "the recorder alone, fed that run's envelopes, with / without its Foxglove scene (us/message)",
                f"{with_scene:.2f}",
                f"{without:.2f}",
                f"scene {with_scene - without:.2f} us/message",
            )
        )
        playback = best(lambda: replay_recording(path, live=[]).wall_s)
        rows.append(
            (
                "playback-only replay of that recording (s)",
                f"{playback:.3f}",
                f"{bare:.3f}",
                f"{bare / playback:.2f}x faster",
            )
        )
    pairs = [(hop_cost(20_000, FaultyStage), hop_cost(20_000, Stage)) for _ in range(7)]
    with_faults, without = min(a for a, _ in pairs), min(b for _, b in pairs)
    rows.append(
        (
            "hop of 5 models that accept faults, none sent (us)",
            f"{with_faults * 1e6:.1f}",
            f"{without * 1e6:.1f}",
            f"{(with_faults / without - 1) * 100:+.1f} %",
        )
    )
    return rows


if __name__ == "__main__":
    print_table(main(), ("recording, replay, faults", "with", "without (same run)", "cost"))
