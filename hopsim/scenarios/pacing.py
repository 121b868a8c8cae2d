"""Running a simulation against the wall clock, and taking commands while it runs.

A :class:`Pacer` is a transient kernel event every ``period_s`` of simulated time (it splits no
island's hop and is no part of a checkpoint, so the recorded stream is the same with or without
it). At each tick it

1. applies the commands received since the last tick (from any thread, through :meth:`command`):
   a fault, checked as a scenario's faults are before the run (:meth:`FaultSpec.schedule
   <hopsim.scenarios.registry.FaultSpec.schedule>`: one its target cannot take is refused, and
   the run goes on), scheduled at the next tick's instant and kept in :attr:`injected` (a run's
   recording lists them, so that a replay sends them at the same instants); ``pause``/``resume``;
   a new pacing factor. A command refused answers its future with a one-line ValueError;
   a fault is never sent after the run's end (:attr:`Pacer.end_ns`): one taken at the last tick
   before the end is sent at the end itself, one taken at the end is refused ("the run has
   ended"), and so is every command once the run is over (:meth:`Pacer.close`);
2. waits while paused (commands are still taken);
3. with a pacing factor X, sleeps until the wall clock reaches ``wall_ref + (t - t_ref) / X``
   (``t_ref``, ``wall_ref``: the instant and wall time of the last change of factor or of the
   end of a pause), and measures how late it woke (``lateness_s``). A tick that finds the wall
   clock already past its deadline by more than a period is an overrun: the simulation cannot
   keep the pace.

Each tick reports ``(t_ns, lateness_s, overruns)`` to ``on_tick`` (the live server shows it; the
recorder writes it on a derived channel).
"""

from __future__ import annotations

import math
import queue
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass, field

import numpy as np

from hopsim.kernel import Simulation

DEFAULT_PERIOD_S = 0.01  # 100 Hz
MIN_FACTOR, MAX_FACTOR = 1e-3, 1e6  # a thousandth of real time (slow motion) to a million times
RUN_ENDED = "the run has ended"


@dataclass
class PaceReport:
    """What pacing measured: lateness of each tick that slept (s), overruns, ticks."""

    lateness_s: list[float] = field(default_factory=list)
    overruns: int = 0
    ticks: int = 0

    def percentiles_ms(self) -> tuple[float, float]:
        """(p50, p99) of the lateness of the ticks that slept, in ms."""
        if not self.lateness_s:
            return math.nan, math.nan
        p50, p99 = np.percentile(np.array(self.lateness_s) * 1e3, [50, 99])
        return float(p50), float(p99)


def check_factor(factor: float) -> float:
    """A pacing factor (times real time) in [MIN_FACTOR, MAX_FACTOR] (a smaller one would put the
    wall-clock deadlines beyond what a clock can count)."""
    factor = float(factor)
    if not (math.isfinite(factor) and MIN_FACTOR <= factor <= MAX_FACTOR):
        raise ValueError(
            f"the pacing factor must be a number of times real time in [{MIN_FACTOR:g}, {MAX_FACTOR:g}], got {factor}"
        )
    return factor


class Pacer:
    """Paces ``sim`` at ``factor`` times real time (None: as fast as it runs) and applies commands.

    ``end_ns``: the instant the run ends at (the runner sets it; None: no end known), after which
    no fault is sent."""

    def __init__(
        self,
        factor: float | None = None,
        period_s: float = DEFAULT_PERIOD_S,
        on_tick: Callable[[int, float, int], None] | None = None,
        clock: Callable[[], float] = time.perf_counter,
    ):
        if not (math.isfinite(period_s) and 1e-6 <= period_s <= 10):
            raise ValueError(f"the pacing period must lie in [1e-6, 10] s, got {period_s}")
        self.factor = None if factor is None else check_factor(factor)
        self.period_ns = round(period_s * 1e9)
        self.on_tick = on_tick
        self._clock = clock
        self._commands: queue.SimpleQueue = queue.SimpleQueue()
        self._lock = threading.Lock()  # between command() and close()
        self._closed = False
        self.end_ns: int | None = None
        self._wake = threading.Event()
        self.paused = False
        self.report = PaceReport()
        self.injected: list[dict] = []  # faults sent live: {"t_s", "target", "kind", ...}
        self._sim: Simulation | None = None
        self._t_ref_ns = 0
        self._wall_ref = 0.0

    # ------------------------------------------------------------------ from any thread
    def command(self, kind: str, value=None) -> Future:
        """Queue a command for the next tick: ``("pace", X)``, ``("pause",)``, ``("resume",)``,
        ``("fault", FaultSpec-like dict without t_s)``. The future gets the result (a fault's
        instant in s) or the error."""
        done: Future = Future()
        with self._lock:
            if self._closed:
                done.set_exception(ValueError(RUN_ENDED))
                return done
            self._commands.put((kind, value, done))
        self._wake.set()
        return done

    def close(self, t_ns: int) -> None:
        """The run has ended at ``t_ns``: the commands still waiting, and every later one, are
        answered that the run has ended; a fault sent for an instant after ``t_ns`` (the run
        stopped before it, e.g. by an ``e_stop``) never reached its target and leaves
        :attr:`injected`."""
        with self._lock:
            self._closed = True
        while True:
            try:
                _, _, done = self._commands.get_nowait()
            except queue.Empty:
                break
            done.set_exception(ValueError(RUN_ENDED))
        self.injected = [f for f in self.injected if round(f["t_s"] * 1e9) <= t_ns]

    # ------------------------------------------------------------------ in the simulation's thread
    def attach(self, sim: Simulation) -> None:
        """Start ticking at the simulation's current instant."""
        self._sim = sim
        self._t_ref_ns, self._wall_ref = sim.now, self._clock()
        sim.at(sim.time, self._tick, name="pacer", transient=True)

    def _tick(self, ev) -> None:
        t_ns = ev.t_ns
        self.report.ticks += 1
        self._apply_commands(t_ns)
        while self.paused:
            self._wake.wait(0.05)
            self._wake.clear()
            self._apply_commands(t_ns)
        lateness = 0.0
        if self.factor is not None:
            deadline = self._wall_ref + (t_ns - self._t_ref_ns) / 1e9 / self.factor
            now = self._clock()
            if now < deadline:
                time.sleep(deadline - now)
                lateness = self._clock() - deadline
                self.report.lateness_s.append(lateness)
            else:
                lateness = now - deadline
                if lateness > self.period_ns / 1e9 / self.factor:
                    self.report.overruns += 1
        if self.on_tick is not None:
            self.on_tick(t_ns, lateness, self.report.overruns)
        ev.reschedule(t_ns + self.period_ns)

    def _reanchor(self, t_ns: int) -> None:
        self._t_ref_ns, self._wall_ref = t_ns, self._clock()

    def _apply_commands(self, t_ns: int) -> None:
        while True:
            try:
                kind, value, done = self._commands.get_nowait()
            except queue.Empty:
                return
            try:
                done.set_result(self._apply(kind, value, t_ns))
            except Exception as err:
                reason = str(err) if isinstance(err, ValueError) else f"{type(err).__name__}: {err}"
                done.set_exception(ValueError(" ".join(reason.split())))

    def _apply(self, kind: str, value, t_ns: int):
        if kind == "pace":
            self.factor = None if value is None else check_factor(value)
            self._reanchor(t_ns)
            return self.factor
        if kind == "pause":
            self.paused = True
            return True
        if kind == "resume":
            self.paused = False
            self._reanchor(t_ns)
            return False
        if kind == "fault":
            return self._inject_fault(dict(value), self._fault_instant(t_ns))
        raise ValueError(f"unknown command {kind!r}: pace, pause, resume or fault")

    def _fault_instant(self, t_ns: int) -> int:
        """The instant a fault taken at the tick ``t_ns`` is sent at: the next tick's, or the run's
        end if that comes first; at the end itself, a ValueError: the run has ended."""
        end = self.end_ns
        if end is not None and t_ns >= end:
            raise ValueError(f"{RUN_ENDED} (at t = {end / 1e9:g} s): the fault was not sent")
        return t_ns + self.period_ns if end is None else min(t_ns + self.period_ns, end)

    def _inject_fault(self, fields: dict, t_ns: int) -> float:
        """Check a fault sent live as a scenario's are, and send it at ``t_ns`` (its instant in s)."""
        from hopsim.scenarios.registry import FaultSpec

        fields.pop("t_s", None)
        spec = FaultSpec.from_fields({**fields, "t_s": t_ns / 1e9})
        spec.schedule(self._sim)  # raises, sending nothing, if its target could not take it
        self.injected.append(spec.model_dump())
        return spec.t_s


__all__ = ["DEFAULT_PERIOD_S", "RUN_ENDED", "PaceReport", "Pacer", "check_factor"]
