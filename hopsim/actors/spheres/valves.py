"""Solenoid valve timing of the 12 SPHERES thrusters, as a function of the command history.

The rule is the thruster simulator's: every change of a thruster's commanded state is time
stamped, and it takes effect once it is ``on_delay`` old (opening) or ``off_delay`` old (closing).
A change that is superseded before it takes effect never does, so a pulse of T <= 6 ms yields no
thrust and a longer one yields thrust from +6 ms to its end. At one instant, command changes are
applied before activations (the simulator drains its queued commands before it ticks).

:class:`ValveTimeline` is pure bookkeeping on integer nanoseconds: the thruster simulator uses it
for the physical valves, the flight software for its prediction of the thrust it commanded.
"""

from __future__ import annotations

import numpy as np
from numba import njit

NUM_THRUSTERS = 12
NEVER = 1 << 62  # an instant after every simulated one (ns)
CHANGE, SWITCH = 0, 1  # event kinds: commanded state changes, valve opens or closes
# rows of a timeline's state (int64, 6 x 12): commanded on (0/1), since when its commanded state
# holds (ns), when its pulse ends (ns, NEVER if it does not), valve open (0/1), and its next
# event's time (ns) and kind
CMD_ON, CMD_SINCE, CMD_OFF_AT, VALVE_OPEN, EV_T, EV_KIND = range(6)
_NO_ON_TIMES = np.zeros(NUM_THRUSTERS, dtype=np.int64)
_NO_ON_TIMES.flags.writeable = False
_NO_ROWS = np.zeros((0, 3), dtype=np.int64)  # for a step whose transitions the plan already lists


class ValveTimeline:
    """Commanded states, pending changes and valve states of 12 thrusters (times in ns).

    :meth:`command` and :meth:`advance` return the valve transitions they applied, as
    ``(t_ns, thruster_index, is_open)`` with thruster_index 0..11. The state lives in one int64
    array (rows ``CMD_ON`` .. ``EV_KIND``) stepped by compiled kernels; test_sph_thruster_fast_paths.py
    checks them against the interpreted stepping they replace.
    """

    def __init__(self, on_delay_ns: int, off_delay_ns: int):
        if on_delay_ns < 0 or off_delay_ns < 0:
            raise ValueError("valve delays must be >= 0")
        self.on_delay_ns = int(on_delay_ns)
        self.off_delay_ns = int(off_delay_ns)
        self.t_ns = 0
        self.state = np.zeros((6, NUM_THRUSTERS), dtype=np.int64)
        self.state[CMD_OFF_AT] = NEVER
        self.state[EV_T] = NEVER
        self.state[EV_KIND] = CHANGE
        self.open_mask = 0  # bit i: valve i open (kept up to date)
        self.next_event_ns = NEVER
        self.changes = 0  # commands and applied events so far: an equal count, an unchanged state
        self._planned: list | None = None

    @property
    def valve_open(self) -> list[bool]:
        """Whether each valve is open."""
        return [bool(self.open_mask >> i & 1) for i in range(NUM_THRUSTERS)]

    def clone(self) -> ValveTimeline:
        """An independent copy (to look ahead without changing this timeline).

        Attribute by attribute: reading ``__dict__`` would turn this timeline's attributes from
        inline values into a dict for good, and make every later read of them slower
        (:mod:`hopsim.kernel.unpickling`)."""
        c = ValveTimeline.__new__(ValveTimeline)
        c.on_delay_ns, c.off_delay_ns, c.t_ns = self.on_delay_ns, self.off_delay_ns, self.t_ns
        c.state = self.state.copy()
        c.open_mask, c.next_event_ns = self.open_mask, self.next_event_ns
        c.changes, c._planned = self.changes, self._planned
        return c

    def same_state(self, other: ValveTimeline) -> bool:
        """Whether the two timelines hold the same delays, commanded states, pending changes and
        valve states (so a command from either gives the same transitions and the same state);
        their times may differ."""
        return (
            self.on_delay_ns == other.on_delay_ns
            and self.off_delay_ns == other.off_delay_ns
            and self.state.tobytes() == other.state.tobytes()
        )

    def take_plan_of(self, other: ValveTimeline) -> None:
        """Take ``other``'s plan as this timeline's own, if this one has none yet and both are in
        the same state (the plan is a pure function of the state): the list :meth:`_future`
        would make again."""
        if (
            self._planned is None
            and other._planned is not None
            and self.next_event_ns == other.next_event_ns
            and self.same_state(other)
        ):
            self._planned = other._planned

    # ------------------------------------------------------------------ commands
    def command(self, t_ns: int, mask: int, on_time_ns=None) -> list[tuple[int, int, bool]]:
        """A command at ``t_ns``: bit i of ``mask`` commands thruster i+1 on, for ``on_time_ns[i]``
        (or until the next command when ``on_time_ns`` is empty or None)."""
        if on_time_ns and len(on_time_ns) != NUM_THRUSTERS:
            raise ValueError(f"a thruster command carries 12 on-times or none, got {len(on_time_ns)}")
        applied = self.advance(t_ns, before_activations=True)
        self.changes += 1
        timed = bool(on_time_ns)
        on_times = np.array(on_time_ns, dtype=np.int64) if timed else _NO_ON_TIMES
        self.next_event_ns = _command(self.state, t_ns, mask, on_times, timed, self.on_delay_ns, self.off_delay_ns)
        self._planned = None
        if self.next_event_ns > t_ns:  # nothing due now (advance would return no transition)
            self.t_ns = t_ns
            return applied
        return applied + self.advance(t_ns)

    # ------------------------------------------------------------------ time
    def advance(self, t_ns: int, before_activations: bool = False) -> list[tuple[int, int, bool]]:
        """Apply every event up to ``t_ns`` (activations at ``t_ns`` too, unless told not to)."""
        if t_ns < self.t_ns:
            raise ValueError(f"valve timeline at {self.t_ns} ns cannot go back to {t_ns} ns")
        self.t_ns = t_ns
        if self.next_event_ns > t_ns:
            return []
        self.changes += 1
        plan = self._planned
        if plan is not None:
            # Fast path: the plan is every transition advance(end of time) would apply, sorted;
            # this step applies those before t_ns (and at t_ns, unless before_activations holds
            # every switch at t_ns back): the plan's first n entries, and the rest is the new
            # state's plan, the same list _future would build, taken by a slice (a new object,
            # so caches keyed by the plan's identity are refreshed). test_sph_fast_paths.py checks.
            n, self.next_event_ns, self.open_mask = _advance(
                self.state, t_ns, before_activations, self.on_delay_ns, self.off_delay_ns, self.open_mask, _NO_ROWS
            )
            self._planned = plan[n:]
            return plan[:n]
        rows = np.empty((2 * NUM_THRUSTERS, 3), dtype=np.int64)
        n, self.next_event_ns, self.open_mask = _advance(
            self.state, t_ns, before_activations, self.on_delay_ns, self.off_delay_ns, self.open_mask, rows
        )
        return [(t, i, o == 1) for t, i, o in rows[:n].tolist()]

    def planned(self) -> list[tuple[int, int, bool]]:
        """Valve transitions (t_ns, thruster index, opens) that follow from the commands so far,
        in time order, without changing the timeline."""
        return list(self.planned_view())

    def planned_view(self) -> list[tuple[int, int, bool]]:
        """:meth:`planned` without the copy: the cached list itself, which callers must not
        change. A new list object is made whenever the plan may have changed, so its identity
        can key caches derived from it."""
        if self._planned is None:
            self._planned = self._future() if self.next_event_ns < NEVER else []
        return self._planned

    def _future(self) -> list[tuple[int, int, bool]]:
        """The transitions :meth:`advance` would apply up to the end of time, computed per
        thruster in closed form (:func:`_future_rows`) instead of by stepping a copy. Same list,
        same order (sorted)."""
        rows = _future_rows(self.state, self.on_delay_ns, self.off_delay_ns)
        return [(t, i, o == 1) for t, i, o in rows.tolist()]

    def next_switch_ns(self) -> int | None:
        """The next valve transition after the timeline's time, or None when quiet."""
        p = self.planned_view()
        return p[0][0] if p else None


@njit(cache=True)
def _set_next_event(st, i, on_delay_ns, off_delay_ns):
    """Thruster i's next event in ``st[EV_T, i]`` and ``st[EV_KIND, i]``: a command change (its
    pulse ends) or a valve switch (it opens ``on_delay`` after it was commanded on, closes
    ``off_delay`` after it was commanded off)."""
    t_ev, kind = NEVER, CHANGE
    if st[CMD_ON, i]:
        t_ev = st[CMD_OFF_AT, i]
        if not st[VALVE_OPEN, i]:
            tv = st[CMD_SINCE, i] + on_delay_ns
            if tv < t_ev:
                t_ev, kind = tv, SWITCH
    elif st[VALVE_OPEN, i]:
        t_ev, kind = st[CMD_SINCE, i] + off_delay_ns, SWITCH
    st[EV_T, i] = t_ev
    st[EV_KIND, i] = kind


@njit(cache=True)
def _row_after(rows, k, t, i, o):
    """Whether row k comes after (t, i, o) in lexicographic order."""
    return rows[k, 0] > t or (rows[k, 0] == t and (rows[k, 1] > i or (rows[k, 1] == i and rows[k, 2] > o)))


@njit(cache=True)
def _sort_rows(rows, n):
    """Sort the first n rows (t_ns, thruster, is_open) in place, lexicographically (insertion
    sort: a handful of rows; the keys are distinct)."""
    for j in range(1, n):
        t, i, o = rows[j, 0], rows[j, 1], rows[j, 2]
        k = j - 1
        while k >= 0 and _row_after(rows, k, t, i, o):
            rows[k + 1, 0], rows[k + 1, 1], rows[k + 1, 2] = rows[k, 0], rows[k, 1], rows[k, 2]
            k -= 1
        rows[k + 1, 0], rows[k + 1, 1], rows[k + 1, 2] = t, i, o


@njit(cache=True)
def _advance(st, t_ns, before_activations, on_delay_ns, off_delay_ns, open_mask, rows):
    """Apply every event up to ``t_ns`` (ns) to the state ``st`` (valve switches at t_ns only
    without ``before_activations``). Returns the number n of transitions applied, the next
    event's time (ns) and the new open mask; the transitions go to ``rows[:n]`` as (t_ns,
    thruster, is_open), in order, unless ``rows`` has no row. Thrusters are independent: each
    is stepped in time order; without a command in between one opens and closes at most once,
    so 24 rows suffice."""
    n = 0
    record = rows.shape[0] > 0
    for i in range(NUM_THRUSTERS):
        te = st[EV_T, i]
        if te > t_ns:
            continue
        kind = st[EV_KIND, i]
        while te <= t_ns:
            if kind == SWITCH:
                if te == t_ns and before_activations:
                    break
                is_open = 1 - st[VALVE_OPEN, i]
                st[VALVE_OPEN, i] = is_open
                open_mask ^= 1 << i
                if record:
                    rows[n, 0], rows[n, 1], rows[n, 2] = te, i, is_open
                n += 1
            else:
                st[CMD_ON, i] = 0
                st[CMD_SINCE, i] = te
                st[CMD_OFF_AT, i] = NEVER
            _set_next_event(st, i, on_delay_ns, off_delay_ns)
            te, kind = st[EV_T, i], st[EV_KIND, i]
    if record:
        _sort_rows(rows, n)
    return n, st[EV_T].min(), open_mask


@njit(cache=True)
def _command(st, t_ns, mask, on_times_ns, timed, on_delay_ns, off_delay_ns):
    """Apply a command at ``t_ns`` to the state ``st`` (already advanced to t_ns, before its
    activations): bit i of ``mask`` commands thruster i on, for ``on_times_ns[i]`` when
    ``timed`` (a thruster with an on-time <= 0 is commanded off), else until the next command.
    A thruster whose commanded state changes restarts its delay. Returns the next event's time
    (ns)."""
    for i in range(NUM_THRUSTERS):
        want = (mask >> i) & 1 == 1
        on = st[CMD_ON, i] == 1
        if not want and not on:
            continue  # off and staying off (its off_at is already NEVER)
        off_at = NEVER
        if timed:
            d = on_times_ns[i]
            if want and d <= 0:
                want = False
            if want:
                off_at = t_ns + d
        if want == on and off_at == st[CMD_OFF_AT, i]:
            continue  # the thruster's next event stays as it was
        if want != on:
            st[CMD_ON, i] = 1 if want else 0
            st[CMD_SINCE, i] = t_ns
        st[CMD_OFF_AT, i] = off_at
        _set_next_event(st, i, on_delay_ns, off_delay_ns)
    return st[EV_T].min()


@njit(cache=True)
def _future_rows(st, on_delay_ns, off_delay_ns):
    """The transitions that follow from the state ``st`` without new commands, rows (t_ns,
    thruster, is_open) in order: a thruster commanded on opens ``on_delay`` after its command
    changed (unless its pulse ends first) and closes ``off_delay`` after its pulse ends; one
    commanded off closes ``off_delay`` after that change."""
    rows = np.empty((2 * NUM_THRUSTERS, 3), dtype=np.int64)
    n = 0
    for i in range(NUM_THRUSTERS):
        off_at = st[CMD_OFF_AT, i]
        if st[CMD_ON, i]:
            if not st[VALVE_OPEN, i]:
                t_open = st[CMD_SINCE, i] + on_delay_ns
                if t_open >= off_at:
                    continue  # the pulse ends before the valve opens
                rows[n, 0], rows[n, 1], rows[n, 2] = t_open, i, 1
                n += 1
            if off_at < NEVER:
                rows[n, 0], rows[n, 1], rows[n, 2] = off_at + off_delay_ns, i, 0
                n += 1
        elif st[VALVE_OPEN, i]:
            rows[n, 0], rows[n, 1], rows[n, 2] = st[CMD_SINCE, i] + off_delay_ns, i, 0
            n += 1
    _sort_rows(rows, n)
    return rows[:n]
