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
from hopsim.kernel import Simulation, checkpoint, make_runtime
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
    cpu: dict[str, Any] = field(default_factory=dict)


def state_hash(sim: Simulation) -> str:
    """SHA-256 over every model's final snapshot and every island's continuous state."""
    import hashlib
    import pickle

    h = hashlib.sha256()
    for name, slot in sorted(sim._slots.items()):
        h.update(name.encode())
        h.update(pickle.dumps(slot.call("snapshot"), protocol=5))
    for name, isl in sorted(sim.islands.items()):
        h.update(name.encode())
        h.update(isl.state.tobytes())
    return h.hexdigest()


def run_scenario(name: str, overrides: dict[str, Any] | None = None, seed: int = 0,
                 duration_s: float | None = None, out: str | Path | None = None, backend: str = "local",
                 progress: bool = False, keep_stream: bool = False, ray_address: str | None = None,
                 playback=None, checkpoint_every_s: float | None = None,
                 checkpoint_dir: str | Path | None = None, resume_from: dict | None = None,
                 cpu_accounting: bool = False) -> RunResult:
    """Run scenario ``name``; record to ``out`` (MCAP) or, with keep_stream, to memory.

    With ``checkpoint_every_s`` a checkpoint is written to ``checkpoint_dir`` at every multiple
    of that period (each one a barrier of every island). ``resume_from`` is a checkpoint's state
    to continue from (see :func:`resume_run`).
    """
    spec = get_scenario(name)
    params = spec.make_params(overrides)
    duration_s = spec.default_duration_s if duration_s is None else duration_s
    if not duration_s > 0:
        raise ScenarioError(f"duration must be positive, got {duration_s} s")
    if checkpoint_every_s is not None and not checkpoint_every_s > 0:
        raise ScenarioError(f"--checkpoint-every must be positive, got {checkpoint_every_s} s")
    runtime = make_runtime(backend, **({"address": ray_address} if ray_address else {}))
    metadata = {"scenario": name, "parameters_json": dumps_params(params.model_dump()), "seed": seed,
                "duration_s": duration_s, "checkpoint_every_s": checkpoint_every_s or "",
                "resumed_at_s": (resume_from["t_ns"] / 1e9) if resume_from else "",
                "versions": json.dumps(package_versions(), sort_keys=True),
                "platform": platform.platform(), "python": platform.python_version(),
                "backend": runtime.name, "placement": runtime.placement}
    recorder = McapRecorder(out, metadata) if out else (MemoryRecorder() if keep_stream else None)
    sim = Simulation(seed=seed, runtime=runtime, recorder=recorder, cpu_accounting=cpu_accounting)
    sim.playback = playback
    wall0 = time.perf_counter()
    try:
        spec.build(sim, params)
        for fault in params.faults:
            try:
                sim.schedule_fault(fault.message(), fault.t_s)
            except ValueError as err:
                raise ScenarioError(str(err)) from None
        if resume_from is not None:
            checkpoint.restore(sim, resume_from)
        description = {"scenario": name, "overrides": params.model_dump(), "seed": seed,
                       "duration_s": duration_s, "checkpoint_every_s": checkpoint_every_s,
                       "versions": package_versions()}
        reason = _advance(sim, duration_s, progress, checkpoint_every_s,
                          Path(checkpoint_dir or "checkpoints"), description)
    except BaseException as err:
        # keep everything recorded so far, and say in the file why it ends there
        if recorder is not None:
            recorder.close({"end_time_s": sim.time, "stop_reason": f"crashed: {type(err).__name__}: {err}"})
        sim.runtime.shutdown()
        raise
    wall = time.perf_counter() - wall0
    stats = sim.stats()
    cpu = sim.cpu_report() if cpu_accounting else {}
    if recorder is not None:
        recorder.close({"end_time_s": sim.time, "stop_reason": reason, "final_state_sha256": state_hash(sim),
                        "cpu_json": json.dumps(cpu, sort_keys=True)})
        count, digest = recorder.digest.count, recorder.digest.hexdigest()
    else:
        count, digest = stats["published"], ""
    sim.runtime.shutdown()
    return RunResult(name, seed, duration_s, sim.time, reason, wall, count, digest,
                     Path(out) if out else None, stats, sim if keep_stream else None,
                     recorder if keep_stream else None, cpu)


def checkpoint_times(now_ns: int, duration_s: float, every_s: float | None) -> list[int]:
    """Instants (ns) after ``now_ns`` at which checkpoints fall, ending with the run's end."""
    end = seconds(duration_s)
    if not every_s:
        return [end]
    step = seconds(every_s)
    first = (now_ns // step + 1) * step
    return list(range(first, end, step)) + [end]


def checkpoint_path(directory: Path, scenario: str, t_ns: int) -> Path:
    return directory / f"{scenario}_t{t_ns / 1e9:012.3f}.ckpt"


def _advance(sim: Simulation, duration_s: float, progress: bool, every_s: float | None = None,
             directory: Path = Path("checkpoints"), description: dict | None = None) -> str:
    def run_to_end() -> str:
        reason = "time"
        for t in checkpoint_times(sim.now, duration_s, every_s):
            reason = sim.advance_to(t / 1e9)
            if reason != "time":
                return reason
            if every_s and t < seconds(duration_s):
                directory.mkdir(parents=True, exist_ok=True)
                checkpoint.save(checkpoint.capture(sim), checkpoint_path(directory, description["scenario"], t),
                                description)
                if sim.recorder is not None:
                    sim.recorder.flush_chunk()
        return reason

    if not progress:
        return run_to_end()
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

        sim.at(sim.time, show, name="progress", transient=True)
        reason = run_to_end()
        bar.update(task, completed=sim.time)
    return reason


def resume_run(checkpoint_file: str | Path, out: str | Path | None = None, duration_s: float | None = None,
               progress: bool = False, keep_stream: bool = False,
               checkpoint_dir: str | Path | None = None) -> RunResult:
    """Continue the run saved in ``checkpoint_file`` to its end (or ``duration_s``)."""
    description, state = checkpoint.load(checkpoint_file)
    return run_scenario(description["scenario"], description["overrides"], seed=description["seed"],
                        duration_s=duration_s or description["duration_s"], out=out, progress=progress,
                        keep_stream=keep_stream, checkpoint_every_s=description["checkpoint_every_s"],
                        checkpoint_dir=checkpoint_dir or Path(checkpoint_file).parent, resume_from=state)
