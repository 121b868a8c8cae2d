"""Run a named scenario: build it, record it, show progress, report."""

from __future__ import annotations

import functools
import gc
import json
import platform
import time
from contextlib import nullcontext
from dataclasses import dataclass, field
from importlib import metadata as importlib_metadata
from pathlib import Path
from typing import Any

from hopsim.bus.atomic import OutputError, PendingOutput
from hopsim.bus.recorder import STREAM_FORMAT, McapRecorder, MemoryRecorder, dumps_params
from hopsim.kernel import Simulation, checkpoint
from hopsim.kernel.bounds import check_duration_s, check_period_s, check_seed
from hopsim.kernel.distributed import make_runtime
from hopsim.kernel.distributed.ray_runtime import RayUnavailable
from hopsim.kernel.errors import ActorKilled
from hopsim.kernel.faults import KILL
from hopsim.kernel.simtime import seconds
from hopsim.scenarios.catalog import get_scenario
from hopsim.scenarios.machine import machine_description
from hopsim.scenarios.registry import ScenarioError

VERSIONED = ("hopsim", "simpy", "ray", "numpy", "numba", "protobuf", "mcap", "mcap-protobuf-support", "scipy")


def package_versions() -> dict[str, str]:
    """The installed version of each package a run's result depends on (read once per process)."""
    return dict(_installed_versions())


@functools.lru_cache(maxsize=1)
def _installed_versions() -> tuple[tuple[str, str], ...]:
    out = []
    for name in VERSIONED:
        try:
            out.append((name, importlib_metadata.version(name)))
        except importlib_metadata.PackageNotFoundError:
            out.append((name, "not installed"))
    return tuple(out)


def file_sha256(path: str | Path) -> str:
    import hashlib

    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


MAX_CHECKPOINTS = 100_000


def check_description(description: dict, path) -> None:
    """What a checkpoint says of its run, checked before anything is built from it. A checkpoint
    is resumed only by the package versions that wrote it (the same hopsim, numpy, numba and
    protobuf compute the same stream); another version is refused, naming the difference."""
    kinds = {"scenario": str, "overrides": dict, "seed": int, "duration_s": (int, float)}
    for key, kind in kinds.items():
        if not isinstance(description.get(key), kind) or isinstance(description.get(key), bool):
            raise checkpoint.CheckpointError(f"{path}: the run's description has no valid {key!r}")
    every = description.get("checkpoint_every_s")
    try:
        check_seed(description["seed"], "the run's seed")
        check_duration_s(description["duration_s"], "the run's duration")
        if every is not None:
            if not isinstance(every, (int, float)) or isinstance(every, bool):
                raise ValueError(f"the checkpoint period {every!r} is not a number")
            check_period_s(every, "the checkpoint period")
    except ValueError as err:
        raise checkpoint.CheckpointError(f"{path}: {err}") from None
    theirs = description.get("versions")
    if not isinstance(theirs, dict):
        raise checkpoint.CheckpointError(f"{path} names no package versions; it cannot be checked, and is not resumed")
    ours = package_versions()
    differ = {k: (theirs.get(k), v) for k, v in ours.items() if theirs.get(k) != v}
    if differ:
        raise checkpoint.CheckpointError(
            f"{path} was written by other package versions ("
            + ", ".join(f"{k} {a} there, {b} here" for k, (a, b) in sorted(differ.items()))
            + "); resume it with the versions that wrote it, or run the scenario again"
        )


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
    outcome: dict[str, Any] = field(default_factory=dict)  # the scenario's outcome metrics
    resumed_at_s: float | None = None  # where a resumed run started

    @property
    def simulated_s(self) -> float:
        """Simulated seconds this run covered (a resumed run: from its checkpoint on)."""
        return self.end_time_s - (self.resumed_at_s or 0.0)


def outcome_json(outcome: dict[str, Any]) -> str:
    """Outcome metrics as JSON (numpy scalars as Python numbers)."""
    return json.dumps({k: (v.item() if hasattr(v, "item") else v) for k, v in outcome.items()}, sort_keys=False)


def state_hash(sim: Simulation) -> str:
    """SHA-256 over every model's final snapshot and every island's continuous state, written as
    data (:mod:`hopsim.kernel.state_codec`: sets sorted, floats exact), so that it is the same in
    every process whatever PYTHONHASHSEED."""
    import hashlib

    from hopsim.kernel import state_codec

    state = checkpoint.capture(sim, allow_contact=True, copied=False)  # read here and let go
    h = hashlib.sha256()
    for name, snap in sorted(state["models"].items()):
        tree, blobs = state_codec.encode(snap, name)
        h.update(name.encode())
        h.update(state_codec.canonical_json(tree).encode())
        for blob in blobs:
            h.update(blob)
    for name, isl in sorted(state["islands"].items()):
        h.update(name.encode())
        h.update(isl["x"].tobytes())
    return h.hexdigest()


def _collector_sees_the_run_only(run):
    """``run`` with the objects that existed before it (the imports' modules, functions and
    types: numpy's, numba's, scipy's, about 150,000) kept out of the cyclic garbage collector's
    passes (:func:`gc.freeze`), and given back to it when the run returns (:func:`gc.unfreeze`).
    A full pass during the build or the run then walks the run's own objects only: without this,
    one such pass over everything (the build of 100 orbiting spacecraft triggers it) costs about a
    tenth of a 600 s ``orbit_formation`` run. Nothing is kept from the collector, only deferred:
    garbage from before the run is collected after it. A process that froze objects itself
    (:func:`gc.get_freeze_count` not 0) is left as it is."""

    @functools.wraps(run)
    def scoped(*args, **kwargs):
        if gc.get_freeze_count():
            return run(*args, **kwargs)
        gc.freeze()
        try:
            return run(*args, **kwargs)
        finally:
            gc.unfreeze()

    return scoped


@_collector_sees_the_run_only
def run_scenario(
    name: str,
    overrides: dict[str, Any] | None = None,
    seed: int = 0,
    duration_s: float | None = None,
    out: str | Path | None = None,
    backend: str = "local",
    progress: bool = False,
    keep_stream: bool = False,
    ray_address: str | None = None,
    playback=None,
    checkpoint_every_s: float | None = None,
    checkpoint_dir: str | Path | None = None,
    resume_from: dict | None = None,
    resume_file: str | Path | None = None,
    cpu_accounting: bool = False,
    placement: str | None = None,
    batching: bool = False,
    rate_groups: bool = True,
    fleets: bool = True,
    keep_sim: bool = False,
    pacer=None,
    tap=None,
    kernel_events: str = "events",
    row_blocks: bool = True,
    replace_on_failure: bool = False,
) -> RunResult:
    """Run scenario ``name``; record to ``out`` (MCAP) or, with keep_stream, to memory. The result
    holds the simulation (at its end, models pulled back from any other process) with keep_stream
    or ``keep_sim``.

    The recording is written as it goes under its partial name beside ``out``
    (:func:`hopsim.bus.atomic.partial_path`: ``l.partial-<pid>.mcap``; a killed run leaves it
    there, readable) and renamed over ``out`` when the run ends well: an existing ``out`` is left
    as it was until then. A run that fails closes its recording with the reason and leaves it
    under the partial name, which a note on the exception gives (nothing is left when the run
    failed before writing anything); with ``replace_on_failure`` that recording replaces ``out``
    all the same (a campaign's failed runs: their recording is the result asked for).

    With ``checkpoint_every_s`` a checkpoint is written to ``checkpoint_dir`` at every multiple
    of that period (each one a barrier of every island). ``resume_from`` is a checkpoint's state
    to continue from (see :func:`resume_run`). A run with a ``kill`` fault, or on Ray, keeps its
    last checkpoint in memory and recovers a killed actor from it (the recording is written as
    the run goes all the same; the run after a recovery is checked against it). ``batching``
    propagates islands whose hops coincide in one compiled call (the result is the same bit for bit; off by default:
    ``bench/bench_spheres.py`` and ``bench/bench_formation.py`` measure it slower today, because
    the per-island Python work, not the compiled step, dominates a hop).

    ``rate_groups``: islands on one periodic schedule share its barriers
    (:mod:`hopsim.kernel.rate_group`; the same result bit for bit, on by default). ``fleets``: a
    group's hops go through their models' fleet forms (:mod:`hopsim.kernel.fleet`; the same result
    bit for bit, on by default). ``row_blocks``: a group's alike members run as rows
    (:mod:`hopsim.kernel.blocks`; the same result bit for bit, on by default).

    ``pacer`` (:class:`hopsim.scenarios.pacing.Pacer`) paces the run against the wall clock and
    applies commands received while it runs (faults it sends are listed in the recording's result,
    ``live_faults_json``, for replay); its lateness goes on the derived channel ``pace/lateness``.
    ``tap`` receives every message the MCAP recorder writes (a live server).

    ``kernel_events``: ``events`` records the kernel's events (zero-crossings, faults, contacts,
    docks, merges, stops...), ``all`` also every barrier of every island (for debugging the
    kernel; a replay needs none of them).
    """
    if kernel_events not in KERNEL_EVENT_LEVELS:
        raise ScenarioError(f"kernel events: {kernel_events!r}; choose {' or '.join(KERNEL_EVENT_LEVELS)}")
    spec, params, duration_s = check_run(name, overrides, seed, duration_s, checkpoint_every_s)
    late = [f for f in params.faults if f.t_s > duration_s]
    if late and resume_from is None:
        raise ScenarioError(
            f"fault {late[0].kind!r} on {late[0].target!r} at {late[0].t_s:g} s comes after the "
            f"run's end ({duration_s:g} s): run longer (--duration) or move the fault"
        )
    options = {"address": ray_address} if ray_address else {}
    if placement is not None:
        options["placement"] = placement
    try:
        runtime = make_runtime(backend, **options)
    except (ValueError, RayUnavailable) as err:
        raise ScenarioError(str(err)) from None
    metadata = {
        "scenario": name,
        "parameters_json": dumps_params(params.model_dump()),
        "seed": seed,
        "duration_s": duration_s,
        "checkpoint_every_s": checkpoint_every_s or "",
        "resumed_at_s": (resume_from["t_ns"] / 1e9) if resume_from else "",
        # the checkpoint a resumed run started from, so that its recording can be replayed
        "resumed_from": str(Path(resume_file).resolve()) if resume_file else "",
        "resumed_from_sha256": file_sha256(resume_file) if resume_file else "",
        "versions": json.dumps(package_versions(), sort_keys=True),
        "stream_format": str(STREAM_FORMAT),
        "platform": platform.platform(),
        "python": platform.python_version(),
        **machine_description(),
        "backend": runtime.name,
        "placement": runtime.placement,
        "kernel_events": kernel_events,
    }
    # an MCAP recorder opens its file at its first write: a run its build refuses writes nothing;
    # it writes under the partial name, renamed over --out when the run ends well
    pending = PendingOutput(out) if out else None
    recorder = (
        McapRecorder(pending.path, metadata, log_time_offset_ns=params.epoch_ns)
        if pending is not None
        else (MemoryRecorder() if keep_stream else None)
    )
    if tap is not None and isinstance(recorder, McapRecorder):
        recorder.tap = tap
    if pacer is not None and runtime.name != "local":
        runtime.shutdown()
        raise ScenarioError("pacing and live commands run on the local backend (drop --backend ray)")
    if pacer is not None and isinstance(recorder, McapRecorder):
        pacer.on_tick = _pacing_recorder(recorder, pacer.on_tick)
    run = ScenarioRun(spec, params, seed, runtime, recorder, playback, cpu_accounting, duration_s if progress else None)
    run.batching = batching
    run.rate_groups = rate_groups
    run.fleets = fleets
    run.row_blocks = row_blocks
    run.record_barriers = kernel_events == "all"
    run.pacer = pacer
    if pacer is not None:
        pacer.end_ns = seconds(duration_s)  # no live fault is sent after it
    description = {
        "scenario": name,
        "overrides": params.model_dump(),
        "seed": seed,
        "duration_s": duration_s,
        "checkpoint_every_s": checkpoint_every_s,
        "versions": package_versions(),
        "kernel_events": kernel_events,
    }
    try:
        run.build(resume_from)  # the scenario and its faults are valid before --out is touched
    except BaseException:
        runtime.shutdown()
        raise
    if isinstance(recorder, McapRecorder) and run.sim.scene:
        recorder.describe({"scene_json": json.dumps(run.sim.scene, sort_keys=True)})
    wall0 = time.perf_counter()
    # a Ctrl-C lands between the instants the recording holds (its result record counts them all)
    holding = recorder.holding_interrupts() if isinstance(recorder, McapRecorder) else nullcontext()
    try:
        with holding:
            reason = run.advance(duration_s, checkpoint_every_s, Path(checkpoint_dir or "checkpoints"), description)
    except BaseException as err:
        # keep everything recorded so far, and say in the file why it ends there
        if pacer is not None:
            pacer.close(run.sim.now if run.sim else 0)
        crashed = {
            "end_time_s": run.sim.time if run.sim else 0.0,
            "stop_reason": f"crashed: {type(err).__name__}: {err}",
            **({"live_faults_json": json.dumps(pacer.injected)} if pacer is not None else {}),
        }
        if pending is not None:
            _end_failed_recording(recorder, pending, err, crashed, replace_on_failure)
        elif recorder is not None:
            recorder.close(crashed)
        runtime.shutdown()
        raise
    finally:
        run.close_progress()
    sim = run.sim
    if pacer is not None:
        pacer.close(sim.now)  # later commands are answered that the run has ended
    wall = time.perf_counter() - wall0
    stats = sim.stats()
    stats["recoveries"] = run.recoveries
    stats["skipped_checkpoints"] = run.skipped_checkpoints
    stats["stop_replays"] = run.stop_replays
    if pacer is not None:
        p50, p99 = pacer.report.percentiles_ms()
        stats["pacing"] = {
            "factor": pacer.factor,
            "ticks": pacer.report.ticks,
            "overruns": pacer.report.overruns,
            "lateness_p50_ms": p50,
            "lateness_p99_ms": p99,
            "live_faults": len(pacer.injected),
        }
    cpu = sim.cpu_report() if cpu_accounting else {}
    # a partial replay's stand-ins are not the models the metrics read: no outcome then
    outcome = spec.outcome(sim) if spec.outcome is not None and playback is None else {}
    if recorder is not None:
        recorder.close(
            {
                "end_time_s": sim.time,
                "stop_reason": reason,
                "final_state_sha256": state_hash(sim),
                "outcome_json": outcome_json(outcome),
                "cpu_json": json.dumps(cpu, sort_keys=True),
                "recoveries_json": json.dumps(run.recoveries),
                **({"live_faults_json": json.dumps(pacer.injected)} if pacer is not None else {}),
            }
        )
        if pending is not None:
            try:
                pending.commit()  # the run ended well: its recording replaces --out
            except OutputError:  # it names where the recording is kept
                runtime.shutdown()
                raise
        count, digest = recorder.digest.count, recorder.digest.hexdigest()
    else:
        count, digest = stats["published"], ""
    keep_sim = keep_sim or keep_stream
    if keep_sim:
        sim.pull_models()
    runtime.shutdown()
    return RunResult(
        name,
        seed,
        duration_s,
        sim.time,
        reason,
        wall,
        count,
        digest,
        Path(out) if out else None,
        stats,
        sim if keep_sim else None,
        recorder if keep_stream else None,
        cpu,
        outcome,
        resume_from["t_ns"] / 1e9 if resume_from else None,
    )


KERNEL_EVENT_LEVELS = ("events", "all")


def check_run(
    name: str,
    overrides: dict[str, Any] | None = None,
    seed: int = 0,
    duration_s: float | None = None,
    checkpoint_every_s: float | None = None,
):
    """What a run of scenario ``name`` is given, checked against the bounds of
    :mod:`hopsim.kernel.bounds` before anything is built or compiled: ``(spec, parameters,
    duration)``, or a ScenarioError naming the value, its bound and the option that gave it."""
    spec = get_scenario(name)
    params = spec.make_params(overrides)
    duration_s = spec.default_duration_s if duration_s is None else duration_s
    try:
        check_seed(seed, "--seed")
        check_duration_s(duration_s, "--duration")
        if checkpoint_every_s is not None:
            check_period_s(checkpoint_every_s, "--checkpoint-every")
    except ValueError as err:
        raise ScenarioError(str(err)) from None
    if checkpoint_every_s is not None and duration_s / checkpoint_every_s > MAX_CHECKPOINTS:
        raise ScenarioError(
            f"--checkpoint-every {checkpoint_every_s:g} s makes {duration_s / checkpoint_every_s:.3g} "
            f"checkpoints in {duration_s:g} s; at most {MAX_CHECKPOINTS:,} are written (each one "
            f"is a file): take them less often"
        )
    return spec, params, duration_s


def _end_failed_recording(
    recorder: McapRecorder, pending: PendingOutput, err: BaseException, crashed: dict, replace: bool
) -> None:
    """A failed run's recording: closed with the reason and left under its partial name, which a
    note on ``err`` gives (``out`` left as it was), or, with ``replace``, renamed over ``out``;
    nothing at all when the run failed before writing anything."""
    if not recorder.started:
        return
    recorder.close(crashed)
    if replace:
        pending.commit()
        return
    target = pending.target
    err.add_note(
        f"the run's recording up to where it stopped: {pending.path} "
        f"({target} {'left as it was' if target.exists() else 'not written'})"
    )


def scenario_topics(name: str, overrides: dict[str, Any] | None = None) -> dict[str, str]:
    """The topics a run of scenario ``name`` records, ``{topic: message type}`` (see
    :func:`describe_scenario`)."""
    return describe_scenario(name, overrides)[0]


def describe_scenario(name: str, overrides: dict[str, Any] | None = None) -> tuple[dict[str, str], dict]:
    """What a run of scenario ``name`` records and shows, found by building it (nothing runs): its
    topics ``{topic: message type}`` (its bus topics, Foxglove's 3-D channels when vehicles
    publish their state, and the kernel-event topics it can produce: contacts and docks with a
    contact world, faults, the stop) and its scene (``Simulation.scene``: a test volume, bodies,
    a chief)."""
    from hopsim.bus.scene import RECENT_TRAILS_TOPIC, SCENE_TOPIC, TRAIL_TIPS_TOPIC, TRAILS_TOPIC, TRANSFORMS_TOPIC
    from hopsim.bus.topics import kernel_topic
    from hopsim.schemas import KernelEvent

    spec = get_scenario(name)
    sim = Simulation(seed=0)
    spec.build(sim, spec.make_params(overrides or {}))
    topics = {t: topic.type_name for t, topic in sim.topics.topics.items()}
    if any(kind == "hopsim.VehicleState" for kind in topics.values()):
        topics.update(
            {
                TRANSFORMS_TOPIC: "foxglove.FrameTransforms",
                SCENE_TOPIC: "foxglove.SceneUpdate",
                TRAILS_TOPIC: "foxglove.SceneUpdate",
                RECENT_TRAILS_TOPIC: "foxglove.SceneUpdate",
                TRAIL_TIPS_TOPIC: "foxglove.SceneUpdate",
            }
        )
    kinds = [KernelEvent.FAULT, KernelEvent.STOP]
    if sim.scene.get("bodies"):
        kinds += [KernelEvent.CONTACT, KernelEvent.DOCK, KernelEvent.UNDOCK]
    topics.update({kernel_topic(k): "hopsim.KernelEvent" for k in kinds})
    return topics, dict(sim.scene)


def _pacing_recorder(recorder: McapRecorder, then):
    """A pacer's tick callback that writes its lateness (s) on the derived channel
    ``pace/lateness`` (and its overruns on ``pace/overruns``), then calls ``then``."""
    from hopsim.schemas import Scalar

    def on_tick(t_ns: int, lateness_s: float, overruns: int) -> None:
        recorder.record_derived("pace/lateness", t_ns, Scalar(value=lateness_s, unit="s"), "pacing")
        recorder.record_derived("pace/overruns", t_ns, Scalar(value=float(overruns), unit="1"), "pacing")
        if then is not None:
            then(t_ns, lateness_s, overruns)

    return on_tick


def checkpoint_times(now_ns: int, duration_s: float, every_s: float | None) -> list[int]:
    """Instants (ns) after ``now_ns`` at which checkpoints fall, ending with the run's end."""
    end = seconds(duration_s)
    if not every_s:
        return [end]
    step = seconds(every_s)
    first = (now_ns // step + 1) * step
    return [*list(range(first, end, step)), end]


def checkpoint_path(directory: Path, scenario: str, t_ns: int) -> Path:
    """``<scenario>_t<seconds>.<nanoseconds>.ckpt``: the instant to the nanosecond, so that two
    checkpoints of a run never share a name (``lander_t00000030.000000000.ckpt``)."""
    return directory / f"{scenario}_t{t_ns // 1_000_000_000:08d}.{t_ns % 1_000_000_000:09d}.ckpt"


class ScenarioRun:
    """One run: builds the simulation, advances it from checkpoint to checkpoint, and recovers
    from a killed actor by rebuilding the scenario from the last checkpoint (the run from there
    gives again, bit for bit, what the recording holds since: the stream is the one of a run where
    nothing died)."""

    def __init__(self, spec, params, seed, runtime, recorder, playback, cpu_accounting, progress_total_s: float | None):
        self.spec, self.params, self.seed = spec, params, seed
        self.runtime, self.recorder, self.playback = runtime, recorder, playback
        self.cpu_accounting = cpu_accounting
        self.recoverable = runtime.name == "ray" or any(f.kind == KILL for f in params.faults)
        self.sim: Simulation | None = None
        self.last_state: dict | None = None
        self.recoveries: list[dict] = []
        self.skipped_checkpoints: list[dict] = []  # checkpoint instants that fell inside a contact
        self.stop_replays: list[dict] = []  # e_stops in a Ray host run again exactly
        self.batching = False
        self.rate_groups = True
        self.fleets = True
        self.row_blocks = True
        self.pacer = None  # a Pacer ticks in every simulation built
        self.record_barriers = False
        self._bar = None
        self._progress_total_s = progress_total_s  # None: no progress bar

    def build(self, state: dict | None = None) -> Simulation:
        handled = self.sim.handled_kills if self.sim is not None else set()
        sim = Simulation(
            seed=self.seed,
            runtime=self.runtime,
            recorder=self.recorder,
            cpu_accounting=self.cpu_accounting,
            batching=self.batching,
            record_barriers=self.record_barriers,
            rate_groups=self.rate_groups,
            fleets=self.fleets,
            row_blocks=self.row_blocks,
        )
        sim.playback = self.playback
        sim.scenario_params = self.params
        self.spec.build(sim, self.params)
        for fault in self.params.faults:
            try:
                fault.schedule(sim)  # the checks a live fault passes too
            except ValueError as err:
                raise ScenarioError(str(err)) from None
        sim.handled_kills = handled  # before restore: hosts take a copy when they start
        if state is not None:
            checkpoint.restore(sim, state)
        self.sim = sim
        self._show_progress()
        if self.pacer is not None:
            self.pacer.attach(sim)
        return sim

    def advance(self, duration_s: float, every_s: float | None, directory: Path, description: dict) -> str:
        end = seconds(duration_s)
        if self.recoverable:
            self.sim.advance_to(self.sim.time)  # the initial barrier: a state to go back to
            self._keep_state()
        reason = "time"
        for t in checkpoint_times(self.sim.now, duration_s, every_s):
            reason = self._advance_recovering(t)
            if reason != "time":
                return reason
            if every_s and t < end:
                try:
                    state = self.last_state if self.recoverable else checkpoint.capture(self.sim)
                except checkpoint.ContactInProgress as busy:
                    self.skipped_checkpoints.append({"t_s": t / 1e9, "why": str(busy)})
                    continue
                if state["t_ns"] != t:
                    self.skipped_checkpoints.append({"t_s": t / 1e9, "why": "contact in progress"})
                    continue
                directory.mkdir(parents=True, exist_ok=True)
                checkpoint.save(state, checkpoint_path(directory, description["scenario"], t), description)
                if self.recorder is not None:
                    self.recorder.flush_chunk()
        return reason

    def _advance_recovering(self, t_ns: int) -> str:
        """Advance to ``t_ns`` and keep the state there (a recoverable run); an actor lost on the
        way, or while its state is taken, sends the run back to the last kept state."""
        while True:
            try:
                reason = self._stop_exactly(self.sim.advance_to(t_ns / 1e9), t_ns)
                if reason == "time" and self.recoverable:
                    self._keep_state()
                return reason
            except ActorKilled as killed:
                if not self.recoverable or self.last_state is None:
                    raise
                self.recoveries.append(
                    {"actor": killed.actor, "t_s": killed.t_ns / 1e9, "resumed_from_s": self.last_state["t_ns"] / 1e9}
                )
                self._back_to_last_state()

    def _stop_exactly(self, reason: str, t_ns: int) -> str:
        """An e_stop inside one Ray host while islands in other hosts ran past it: run again from
        the last checkpoint with windows that end at the stop's instant, so that the run ends as
        in one process."""
        windows = self.sim.windows
        if reason != "e_stop" or windows is None or windows.overshoot_at is None or self.last_state is None:
            return reason
        t_stop = windows.overshoot_at
        self.stop_replays.append({"t_s": t_stop / 1e9, "resumed_from_s": self.last_state["t_ns"] / 1e9})
        self._back_to_last_state()
        self.sim.windows.stop_cap = t_stop
        return self.sim.advance_to(t_ns / 1e9)

    def _back_to_last_state(self) -> None:
        """Back to the last kept state: the actors and the simulation are rebuilt from it; the
        recording keeps what it wrote and checks that the run gives it again."""
        if self.recorder is not None:
            self.recorder.rollback()
        self.sim.release_models()
        self.build(self.last_state)

    def _keep_state(self) -> None:
        """The state to recover from; while contact is in progress the previous one stays."""
        try:
            self.last_state = checkpoint.capture(self.sim)
        except checkpoint.ContactInProgress:
            return
        if self.recorder is not None:
            self.recorder.commit()

    # ------------------------------------------------------------------ progress display
    def _show_progress(self) -> None:
        if self._progress_total_s is None:
            return
        from rich.progress import BarColumn, Progress, TextColumn, TimeRemainingColumn

        if self._bar is None:
            columns = (
                TextColumn("[bold]sim"),
                BarColumn(),
                TextColumn("{task.completed:.1f}/{task.total:.1f} s"),
                TimeRemainingColumn(),
            )
            self._bar = Progress(*columns, transient=False)
            self._bar.start()
            self._task = self._bar.add_task("run", total=self._progress_total_s)
        sim, bar, task = self.sim, self._bar, self._task

        def show(ev) -> None:
            bar.update(task, completed=sim.time)
            ev.reschedule(ev.t_ns + 100_000_000)

        sim.at(sim.time, show, name="progress", transient=True)

    def close_progress(self) -> None:
        if self._bar is not None:
            self._bar.update(self._task, completed=self.sim.time if self.sim else 0.0)
            self._bar.stop()
            self._bar = None


def resume_run(
    checkpoint_file: str | Path,
    out: str | Path | None = None,
    duration_s: float | None = None,
    progress: bool = False,
    keep_stream: bool = False,
    checkpoint_dir: str | Path | None = None,
    checkpoint_every_s: float | None = None,
) -> RunResult:
    """Continue the run saved in ``checkpoint_file`` to its end (or ``duration_s``).

    It writes checkpoints only when asked, every ``checkpoint_every_s`` (to ``checkpoint_dir``,
    by default the checkpoint's directory), checked as ``hopsim run``'s: how many files a run
    writes is the user's choice, never the checkpoint file's (the period recorded in it is that
    of the run that wrote it, and is not used)."""
    description, state = checkpoint.load(checkpoint_file)
    check_description(description, checkpoint_file)
    return run_scenario(
        description["scenario"],
        description["overrides"],
        seed=description["seed"],
        duration_s=duration_s or description["duration_s"],
        out=out,
        progress=progress,
        keep_stream=keep_stream,
        checkpoint_every_s=checkpoint_every_s,
        checkpoint_dir=checkpoint_dir or Path(checkpoint_file).parent,
        resume_from=state,
        resume_file=checkpoint_file,
        kernel_events=description.get("kernel_events", "events"),
    )
