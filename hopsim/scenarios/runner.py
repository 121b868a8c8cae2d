"""Run a named scenario: build it, record it, show progress, report."""
from __future__ import annotations

import json
import platform
import time
from dataclasses import dataclass, field
from importlib import metadata as importlib_metadata
from pathlib import Path
from typing import Any

from hopsim.bus.recorder import McapRecorder, MemoryRecorder, dumps_params
from hopsim.kernel import Simulation, make_runtime
from hopsim.kernel.simtime import seconds
from hopsim.scenarios.registry import ScenarioError, get_scenario

VERSIONED = ("hopsim", "simpy", "ray", "numpy", "numba", "protobuf", "mcap", "mcap-protobuf-support", "scipy")


def package_versions() -> dict[str, str]:
    out = {}
    for name in VERSIONED:
        try:
            out[name] = importlib_metadata.version(name)
        except importlib_metadata.PackageNotFoundError:
            out[name] = "not installed"
    return out


@dataclass
class RunResult:
    scenario: str
    seed: int
    duration_s: float
    end_time_s: float
    stop_reason: str
    wall_s: float
    message_count: int
    stream_sha256: str
    out: Path | None
    stats: dict[str, Any] = field(default_factory=dict)
    sim: Simulation | None = None
    recorder: Any = None


def run_scenario(name: str, overrides: dict[str, Any] | None = None, seed: int = 0,
                 duration_s: float | None = None, out: str | Path | None = None, backend: str = "local",
                 progress: bool = False, keep_stream: bool = False, ray_address: str | None = None,
                 playback=None) -> RunResult:
    """Run scenario ``name``; record to ``out`` (MCAP) or, with keep_stream, to memory."""
    spec = get_scenario(name)
    params = spec.make_params(overrides)
    duration_s = spec.default_duration_s if duration_s is None else duration_s
    if not duration_s > 0:
        raise ScenarioError(f"duration must be positive, got {duration_s} s")
    runtime = make_runtime(backend, **({"address": ray_address} if ray_address else {}))
    metadata = {"scenario": name, "parameters_json": dumps_params(params.model_dump()), "seed": seed,
                "duration_s": duration_s, "versions": json.dumps(package_versions(), sort_keys=True),
                "platform": platform.platform(), "python": platform.python_version(),
                "backend": runtime.name, "placement": runtime.placement}
    recorder = McapRecorder(out, metadata) if out else (MemoryRecorder() if keep_stream else None)
    sim = Simulation(seed=seed, runtime=runtime, recorder=recorder)
    sim.playback = playback
    wall0 = time.perf_counter()
    try:
        spec.build(sim, params)
        reason = _advance(sim, duration_s, progress)
    except BaseException as err:
        # keep everything recorded so far, and say in the file why it ends there
        if recorder is not None:
            recorder.close({"end_time_s": sim.time, "stop_reason": f"crashed: {type(err).__name__}: {err}"})
        sim.runtime.shutdown()
        raise
    wall = time.perf_counter() - wall0
    stats = sim.stats()
    if recorder is not None:
        recorder.close({"end_time_s": sim.time, "stop_reason": reason})
        count, digest = recorder.digest.count, recorder.digest.hexdigest()
    else:
        count, digest = stats["published"], ""
    sim.runtime.shutdown()
    return RunResult(name, seed, duration_s, sim.time, reason, wall, count, digest,
                     Path(out) if out else None, stats, sim if keep_stream else None,
                     recorder if keep_stream else None)


def _advance(sim: Simulation, duration_s: float, progress: bool) -> str:
    if not progress:
        return sim.advance_to(duration_s)
    from rich.progress import BarColumn, Progress, TextColumn, TimeRemainingColumn

    columns = (TextColumn("[bold]sim"), BarColumn(), TextColumn("{task.completed:.1f}/{task.total:.1f} s"),
               TimeRemainingColumn())
    with Progress(*columns, transient=False) as bar:
        task = bar.add_task("run", total=duration_s)
        tick = max(seconds(duration_s / 100), 1)

        def show(ev) -> None:
            bar.update(task, completed=sim.time)
            if ev.t_ns + tick < seconds(duration_s):
                ev.reschedule(ev.t_ns + tick)

        sim.at(0.0, show, name="progress")
        reason = sim.advance_to(duration_s)
        bar.update(task, completed=sim.time)
    return reason
