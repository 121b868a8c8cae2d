"""Replay a recording: re-run its scenario with its parameters and seed and compare the streams.

Three modes:

- full (default): every actor live; every envelope is compared.
- partial (``live=[names]``): only the named actors run; every other actor is a playback of its
  recorded outputs, so the live ones get exactly their recorded inputs; their outputs are compared.
  A changed parameter of a live actor shows up as the first divergence.
- playback only (``live=[]``): nothing live; the recorded outputs are republished through the bus
  (faster than the original run) and compared.

Kernel events (``kernel/*`` topics) are compared in full mode only: in the other modes the
continuous models whose zero-crossings they report are not running.

A resumed run's recording replays from the checkpoint the user names (``checkpoint=``,
``hopsim replay --checkpoint``), checked against the SHA-256 the recording carries. The path the
recording names (``resumed_from``) is never opened nor looked at: a crafted recording could
otherwise learn whether a file exists, or read it, through the replay's answer.
"""

from __future__ import annotations

import itertools
import json
import math
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path, PurePath
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from hopsim.bus.compare import Difference, decode_payload, first_difference
from hopsim.bus.reading import RecordingReport, read_recording
from hopsim.bus.recorder import RESULT_METADATA, RUN_METADATA, STREAM_FORMAT
from hopsim.bus.recording_file import check_recording_file
from hopsim.bus.topics import is_kernel_source
from hopsim.kernel.bounds import DurationS, Seed
from hopsim.kernel.executive import SCENARIO_SOURCE
from hopsim.kernel.playback import PlaybackPlan
from hopsim.scenarios.machine import describe, machine_description
from hopsim.scenarios.registry import ScenarioError
from hopsim.scenarios.runner import KERNEL_EVENT_LEVELS, run_scenario


class ReplayError(ValueError):
    pass


@dataclass
class ReplayResult:
    mode: str
    compared: int
    difference: Difference | None
    wall_s: float
    report: RecordingReport
    live: list[str]
    recorded_on: dict[str, str] | None = None  # the machine the recording was made on, as it says
    # the times not compared (ns, both ends excluded): damaged parts of the recording
    skipped_ns: list[tuple[int, int]] | None = None

    @property
    def identical(self) -> bool:
        return self.difference is None

    def machines(self) -> str:
        """Where the recording was made and where it was replayed, in one sentence."""
        here = machine_description()
        if not self.recorded_on:
            return f"the recording does not say which machine made it; replayed on {describe(here)}"
        there = {k: self.recorded_on.get(k, "") for k in here}
        if there == here:
            return f"recorded and replayed on the same kind of machine: {describe(here)}"
        return f"recorded on {describe(there)}; replayed on {describe(here)}"


class RecordedRun(BaseModel):
    """The run description a recording carries, checked before anything is built from it."""

    model_config = ConfigDict(extra="ignore", allow_inf_nan=False)
    scenario: str = Field(min_length=1)
    parameters: dict[str, Any]
    seed: Seed
    duration_s: DurationS

    @classmethod
    def check(cls, run: dict[str, str], path) -> RecordedRun:
        try:
            parameters = json.loads(run.get("parameters_json", ""))
        except ValueError:
            raise ReplayError(
                f"{path}: the recorded parameters are not valid JSON: the run description is damaged or not hopsim's"
            ) from None
        try:
            return cls(
                scenario=run.get("scenario", ""),
                parameters=parameters,
                seed=run.get("seed"),
                duration_s=run.get("duration_s"),
            )
        except ValidationError as err:
            problems = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in err.errors())
            raise ReplayError(f"{path}: the run description is damaged or not hopsim's ({problems})") from None


def check_stream_format(run: dict, path) -> None:
    """Refuse to compare a recording whose stream format is not this hopsim's: its scenario, run
    again, gives another stream by design, which is not a divergence."""
    theirs = run.get("stream_format", "1")
    if theirs == str(STREAM_FORMAT):
        return
    if not (theirs.isascii() and theirs.isdigit() and len(theirs) < 6):
        raise ReplayError(f"{path}: the recorded stream format {theirs!r} is not a number: the file is damaged")
    made = "made before stream formats were numbered" if "stream_format" not in run else f"of stream format {theirs}"
    raise ReplayError(
        f"{path} is a recording {made}; this hopsim writes stream format {STREAM_FORMAT}, whose arithmetic "
        f"differs (CHANGELOG.md says how), so the two streams cannot be compared. Replay it with the hopsim "
        f"that made it, or run the scenario again to record it in this format"
    )


def _recorded_checkpoint_name(run: dict) -> str:
    """The base name of the checkpoint file a resumed recording names, quoted, for messages only:
    taken from the text alone, the file is never looked at."""
    name = PurePath(str(run.get("resumed_from", "")).replace("\\", "/")).name
    return repr(name[:200]) if name else "(the recording names none)"


def resumed_state(path, run: dict, checkpoint: str | Path | None) -> dict:
    """The state of the checkpoint the user gave for a resumed recording (``checkpoint``), checked
    to be the very file the run was resumed from (the SHA-256 the recording carries). The path
    written in the recording is never used."""
    from hopsim.kernel.checkpoint import CheckpointError, load
    from hopsim.scenarios.runner import check_description, file_sha256

    if checkpoint is None:
        raise ReplayError(
            f"{path} is a resumed run: replay it with --checkpoint naming the checkpoint file it was "
            f"resumed from (recorded as {_recorded_checkpoint_name(run)}), or replay the original run's recording"
        )
    ckpt = Path(checkpoint)
    try:
        digest = file_sha256(ckpt)
    except FileNotFoundError:
        raise ReplayError(f"--checkpoint {ckpt}: no such file") from None
    except OSError as err:
        raise ReplayError(f"--checkpoint {ckpt}: cannot read it: {err.strerror or err}") from None
    if digest != run.get("resumed_from_sha256"):
        raise ReplayError(
            f"--checkpoint {ckpt} is not the checkpoint {path} was resumed from (recorded as "
            f"{_recorded_checkpoint_name(run)}): its SHA-256 differs from the recorded one "
            f"(another file, or that one has changed since)"
        )
    try:
        description, state = load(ckpt)
        check_description(description, ckpt)
    except CheckpointError as err:
        raise ReplayError(str(err)) from None
    return state


def _live_faults(result: dict, path) -> list[dict]:
    """The faults a live run was sent while it ran (``live_faults_json``), sent again at their
    recorded instants by the replay."""
    text = result.get("live_faults_json")
    if not text:
        return []
    try:
        faults = json.loads(text)
    except ValueError:
        faults = None
    if not isinstance(faults, list) or not all(isinstance(f, dict) for f in faults):
        raise ReplayError(f"{path}: the recorded live faults are not a JSON list of faults: the file is damaged")
    return faults


def replay_recording(
    path: str | Path,
    live: list[str] | None = None,
    overrides: dict | None = None,
    out: str | Path | None = None,
    checkpoint: str | Path | None = None,
) -> ReplayResult:
    """Replay ``path``; ``live=None`` is a full replay, a list a partial one (empty: playback only).
    ``out`` records the replayed run (diverged or not) to a new MCAP file. A resumed run's
    recording needs ``checkpoint``: the checkpoint file it was resumed from (its SHA-256 is
    checked against the recorded one); the path the recording names is never opened."""
    if out is not None and Path(out).resolve() == Path(path).resolve():
        raise ReplayError(f"--out {out} is the recording being replayed; choose another file")
    check_recording_file(path, ReplayError)
    recorded, report = read_recording(path)
    run = report.metadata.get(RUN_METADATA)
    if run is None and RUN_METADATA in report.damaged_metadata:
        raise ReplayError(
            f"{path}: the run description is damaged: its SHA-256 does not match its content "
            f"({report.summary()}); the scenario, parameters and seed it names cannot be trusted"
        )
    if run is None:
        raise ReplayError(
            f"{path}: no run description in the file ({report.summary()}); "
            f"only recordings made by `hopsim run --out` can be replayed"
        )
    described = RecordedRun.check(run, path)
    check_stream_format(run, path)
    params = {**described.parameters, **(overrides or {})}
    live_faults = _live_faults(report.metadata.get(RESULT_METADATA, {}), path)
    if live_faults:
        params["faults"] = list(params.get("faults") or []) + live_faults
    duration_s = described.duration_s
    end = report.metadata.get(RESULT_METADATA, {}).get("end_time_s")
    if report.complete and end is not None:
        try:
            end_s = float(end)
        except ValueError:
            raise ReplayError(f"{path}: the recorded end time {end!r} is not a number: the file is damaged") from None
        if not (math.isfinite(end_s) and 0 <= end_s <= duration_s + 1e-9):
            raise ReplayError(
                f"{path}: the recorded end time {end!r} does not fit the run's duration "
                f"{duration_s:g} s: the file is damaged"
            )
        if recorded and recorded[-1].t_ns > round(end_s * 1e9):
            raise ReplayError(f"{path}: messages after the recorded end time {end_s:g} s: the file is damaged")
        if end_s > 0:
            duration_s = end_s  # where the recorded run ended (a stop inside the run ends a replay there too)
    parts = None
    if report.intact_messages is not None and live is None and report.gaps:
        # damaged, full replay: every intact part is compared, each without its instants next to
        # a damaged place (a chunk may end inside an instant)
        parts = _intact_parts(recorded, report.gaps)
        recorded = [e for part in parts for e in part]
        if not recorded:
            raise ReplayError(f"{report.summary()}; nothing intact to compare with")
    elif report.intact_messages is not None:
        # damaged, partial replay: the live actors' inputs come from the recording, whole up to
        # the first damage only: what lies before it is compared, nothing after it
        recorded = recorded[: report.intact_messages]
        if not recorded:
            raise ReplayError(f"{report.summary()}; nothing before the damage to compare with")
    cut_ns = None
    if not report.complete and recorded:
        # compare the readable part only, up to (not including) its last, possibly partial, instant
        cut_ns = recorded[-1].t_ns
        duration_s = cut_ns / 1e9
        recorded = [e for e in recorded if e.t_ns < cut_ns]
        if parts is not None:
            parts = [kept for kept in ([e for e in part if e.t_ns < cut_ns] for part in parts) if kept]
    if not report.complete and not recorded:
        raise ReplayError(f"{report.summary()}; nothing intact to compare with before its last instant")
    plan = None
    mode = "full"
    if live is not None:
        mode = "partial" if live else "playback"
        by_source: dict[str, list] = {}
        for env in recorded:
            if env.source == SCENARIO_SOURCE or is_kernel_source(env.source):
                continue
            by_source.setdefault(env.source, []).append((env.t_ns, env.topic, decode_payload(env)))
        plan = PlaybackPlan(set(live), by_source)
    # a run that took checkpoints had a barrier of every island at each: the replay takes them too
    # (in a scratch directory), so that its islands hop exactly as the recorded ones did
    every = run.get("checkpoint_every_s") or None
    level = run.get("kernel_events")
    if level is not None and level not in KERNEL_EVENT_LEVELS:
        raise ReplayError(
            f"{path}: the recorded kernel-event level {level!r} is not one hopsim writes "
            f"({', '.join(KERNEL_EVENT_LEVELS)}): the file is damaged"
        )
    if run.get("resumed_at_s"):
        if plan is not None:
            raise ReplayError(
                f"{path} is a resumed run: replay it whole (a partial replay starts from the run's start)"
            )
        resume_from = resumed_state(path, run, checkpoint)
    elif checkpoint is not None:
        raise ReplayError(f"{path} is not a resumed run: it replays from its start, without --checkpoint")
    else:
        resume_from = None
    t0 = time.perf_counter()
    try:
        with tempfile.TemporaryDirectory(prefix="hopsim-replay-") as scratch:
            result = run_scenario(
                described.scenario,
                params,
                seed=described.seed,
                duration_s=duration_s,
                keep_stream=True,
                playback=plan,
                out=out,
                resume_from=resume_from,
                checkpoint_every_s=float(every) if every else None,
                checkpoint_dir=scratch,
                kernel_events=level or "events",
            )
    except ScenarioError as err:
        raise ReplayError(f"{path}: cannot re-run the recorded scenario: {err}") from None
    wall = time.perf_counter() - t0
    replayed = read_recording(out)[0] if out is not None else [e.to_proto() for e in result.recorder.envelopes]
    if level is None:
        # a recording from before kernel events had a topic per kind: its kernel events (one
        # topic per island, every barrier) are not compared, the models' messages are
        recorded = [e for e in recorded if not is_kernel_source(e.source)]
        replayed = [e for e in replayed if not is_kernel_source(e.source)]
    if cut_ns is not None:
        replayed = [e for e in replayed if e.t_ns < cut_ns]
    windows = [(part[0].t_ns, part[-1].t_ns) for part in parts] if parts else None
    if windows is not None:
        replayed = _within(replayed, windows)
        if report.orphaned or report.malformed:
            # channels defined in a lost chunk: their messages were not read, nor are they compared
            read = {(e.topic, e.source) for e in recorded}
            replayed = [e for e in replayed if (e.topic, e.source) in read]
    if plan is not None:
        models = set(result.sim.model_names())
        unknown = sorted(set(live) - models)
        if unknown:
            raise ReplayError(f"--live names unknown actor(s) {unknown}; the scenario's actors are {sorted(models)}")
        keep = set(live) if live else models - set()
        recorded = [e for e in recorded if e.source in keep]
        replayed = [e for e in replayed if e.source in keep]
    diff = first_difference(recorded, replayed)
    recorded_on = {k: run[k] for k in machine_description() if k in run} or None
    skipped = [(a[1], b[0]) for a, b in itertools.pairwise(windows)] if windows else None
    if windows and 0 in report.gaps:  # damage before the first message read
        skipped.insert(0, (-1, windows[0][0]))
    return ReplayResult(mode, len(recorded), diff, wall, report, list(live or []), recorded_on, skipped)


def _intact_parts(recorded: list, gaps: list[int]) -> list[list]:
    """The recorded envelopes between damaged places (``gaps``: the envelopes read before each),
    each part without its first instant when a damaged place precedes it and without its last
    when one follows (the damaged chunk may have held the rest of that instant; the recording's
    last instant is left to the caller); empty parts left out."""
    cuts = sorted({g for g in gaps if 0 <= g < len(recorded)})
    edges = [0, *cuts, len(recorded)]
    parts = []
    for a, b in itertools.pairwise(edges):
        part = recorded[a:b]
        if part and a in cuts:
            part = [e for e in part if e.t_ns > part[0].t_ns]
        if part and b in cuts:
            part = [e for e in part if e.t_ns < part[-1].t_ns]
        if part:
            parts.append(part)
    return parts


def _within(envelopes: list, windows: list[tuple[int, int]]) -> list:
    """The envelopes (in time order) whose time lies in one of ``windows`` ((first, last) ns,
    both included, in time order)."""
    out, k = [], 0
    for e in envelopes:
        while k < len(windows) and e.t_ns > windows[k][1]:
            k += 1
        if k == len(windows):
            break
        if e.t_ns >= windows[k][0]:
            out.append(e)
    return out
