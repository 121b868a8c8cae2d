"""What the thruster simulator would otherwise compute again: kept while its inputs stay.

Each memo hands back exactly what the computation it skips would give, bit for bit, so a run is
the same with or without it; ``tests/spheres/test_sph_fast_paths.py`` checks every one against
recomputation in runs with thrust noise and faults. Each is a :class:`hopsim.kernel.Memo`: not
part of the simulator's snapshot, forgotten when it is restored.

- :class:`WrenchMemo`: the thrust, firing flag and wrench of each set of open valves (while every
  thruster's thrust level, scale and noise factor stay), and the wrench of each thrust vector
  (while the torque arms stay).
- :class:`CommandLookahead`: the valve plan with the commands that wait for their tick applied to
  a copy of the timeline, and that copy, which becomes the timeline when the tick comes.
- :class:`PlanMemo`: one value derived from a valve plan (its switch instants, its message
  entries). Plans are lists never changed in place, so a list's identity stands for its content.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from hopsim.actors.spheres.valves import ValveTimeline
from hopsim.kernel import Memo

MAX_THRUST_VECTORS = 256  # noisy thrust rarely repeats a vector: start again past this many


class WrenchMemo(Memo):
    """Thrust and wrench by open-valve mask, and wrench (force N, torque N m, body frame, about
    the centre of mass) by per-thruster thrust (N). The kept arrays are never changed in place."""

    def __init__(self):
        self._by_mask: dict[int, tuple] = {}
        self._by_thrust: dict[tuple, tuple[Any, Any]] = {}

    def of_mask(self, open_mask: int) -> tuple | None:
        """(thrust list, firing, thrust array, force_B, torque_B) kept for ``open_mask``, or None."""
        return self._by_mask.get(open_mask)

    def keep_mask(self, open_mask: int, entry: tuple) -> None:
        self._by_mask[open_mask] = entry

    def wrench(self, thrust: list[float], compute: Callable[[], tuple[Any, Any]]) -> tuple[Any, Any]:
        """The wrench of per-thruster ``thrust``: kept, or ``compute()`` for it and kept."""
        key = tuple(thrust)
        found = self._by_thrust.get(key)
        if found is None:
            if len(self._by_thrust) >= MAX_THRUST_VECTORS:
                self._by_thrust.clear()
            found = self._by_thrust[key] = compute()
        return found

    def thrust_changed(self) -> None:
        """A thruster's thrust for the same open valves changed (a firing noise draw, a scale
        fault or its end): what each mask gave no longer holds."""
        self._by_mask.clear()

    def arms_changed(self) -> None:
        """The torque arms changed (the centre of mass moved): nothing kept holds."""
        self._by_mask.clear()
        self._by_thrust.clear()

    forget = arms_changed


class CommandLookahead(Memo):
    """The plan of a timeline with the waiting commands applied, from a look-ahead copy.

    With exactly one command waiting, the copy is kept with the timeline it was cloned from and
    that timeline's count of changes; when the command's tick comes and the timeline has not
    changed since (nothing happened to it but the passing of time), the copy, which applied the
    same command at the same instant, is what applying it now would make: it becomes the
    timeline, and its transitions are the command's (a pure function of state and command).
    """

    def __init__(self):
        self.forget()

    def forget(self) -> None:
        """No look-ahead kept: the next :meth:`planned` looks ahead anew, :meth:`apply` applies."""
        self.plan: list | None = None
        self._copy: ValveTimeline | None = None
        self._cmd: tuple | None = None
        self._cloned_from: tuple[ValveTimeline, int] | None = None
        self._applied: list | None = None

    def planned(self, timeline: ValveTimeline, waiting: list[tuple]) -> list:
        """Transitions (t_ns, thruster index, opens) once ``waiting`` [(t_ns, mask, on-times)]
        are applied to ``timeline``, in time order (a new list whenever made anew)."""
        if self.plan is None:
            ahead = timeline.clone()
            if len(waiting) == 1:
                self._cmd, self._cloned_from = waiting[0], (timeline, timeline.changes)
            else:
                self._cmd = self._cloned_from = None
            applied = []
            for t_cmd, mask, on_times in waiting:
                applied += ahead.command(t_cmd, mask, on_times)
            self._applied = applied
            # a command's plan is a list made anew, so it can stand for the whole plan when the
            # commands applied no transition (and, adopted, keeps what was derived from it)
            plan = ahead.planned_view()
            self.plan = sorted(applied + plan) if applied else plan
            self._copy = ahead
        return self.plan

    def forget_plan(self) -> None:
        """The waiting commands changed: the next :meth:`planned` looks ahead again."""
        self.plan = None

    def apply(self, timeline: ValveTimeline, cmd: tuple) -> tuple[ValveTimeline, list]:
        """Apply ``cmd`` (t_ns, mask, on-times), the earliest waiting command, to ``timeline``:
        (the timeline after it, the transitions it applied)."""
        t_cmd, mask, on_times = cmd
        if self._cmd is cmd and self._unchanged_since_cloned(timeline, t_cmd):
            timeline, applied = self._copy, self._applied
            self._copy = None
        else:
            applied = timeline.command(t_cmd, mask, on_times)
        self._cmd = self._cloned_from = self._applied = None
        self.plan = None
        return timeline, applied

    def _unchanged_since_cloned(self, timeline: ValveTimeline, t_cmd: int) -> bool:
        ahead, before = self._copy, self._cloned_from
        return (
            ahead is not None
            and before is not None
            and timeline.t_ns <= t_cmd
            and ahead.t_ns == t_cmd
            and before[0] is timeline
            and before[1] == timeline.changes
        )

    def hand_plan_to(self, timeline: ValveTimeline) -> None:
        """Every waiting command is applied: the copy's plan is the timeline's when their states
        agree (see :meth:`ValveTimeline.take_plan_of`)."""
        ahead, self._copy = self._copy, None
        if ahead is not None:
            timeline.take_plan_of(ahead)


class PlanMemo(Memo):
    """One value derived from a valve plan, kept for that plan (a list never changed in place)."""

    def __init__(self):
        self._plan: list | None = None
        self._value: Any = None

    def get(self, plan: list, derive: Callable[[list], Any]) -> Any:
        """``derive(plan)``, made once per plan."""
        if plan is not self._plan:
            self._value, self._plan = derive(plan), plan
        return self._value

    def forget(self) -> None:
        """What the value is derived from besides the plan changed."""
        self._plan = self._value = None


__all__ = ["CommandLookahead", "PlanMemo", "WrenchMemo"]
