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

NUM_THRUSTERS = 12
NEVER = 1 << 62          # an instant after every simulated one (ns)
CHANGE, SWITCH = 0, 1    # event kinds: commanded state changes, valve opens or closes


class ValveTimeline:
    """Commanded states, pending changes and valve states of 12 thrusters (times in ns).

    :meth:`command` and :meth:`advance` return the valve transitions they applied, as
    ``(t_ns, thruster_index, is_open)`` with thruster_index 0..11.
    """

    def __init__(self, on_delay_ns: int, off_delay_ns: int):
        if on_delay_ns < 0 or off_delay_ns < 0:
            raise ValueError("valve delays must be >= 0")
        self.on_delay_ns = int(on_delay_ns)
        self.off_delay_ns = int(off_delay_ns)
        self.t_ns = 0
        self.cmd_on = [False] * NUM_THRUSTERS
        self.cmd_since = [0] * NUM_THRUSTERS
        self.cmd_off_at = [NEVER] * NUM_THRUSTERS
        self.valve_open = [False] * NUM_THRUSTERS
        self.open_mask = 0                       # bit i: valve_open[i] (kept up to date)
        self.ev_t = [NEVER] * NUM_THRUSTERS      # each thruster's next event (time, kind)
        self.ev_kind = [CHANGE] * NUM_THRUSTERS
        self.next_event_ns = NEVER
        self.changes = 0     # commands and applied events so far: an equal count, an unchanged state
        self._planned: list | None = None

    def clone(self) -> "ValveTimeline":
        """An independent copy (to look ahead without changing this timeline)."""
        c = ValveTimeline.__new__(ValveTimeline)
        c.__dict__.update(self.__dict__)
        c.cmd_on = self.cmd_on[:]
        c.cmd_since = self.cmd_since[:]
        c.cmd_off_at = self.cmd_off_at[:]
        c.valve_open = self.valve_open[:]
        c.ev_t = self.ev_t[:]
        c.ev_kind = self.ev_kind[:]
        return c

    def same_state(self, other: "ValveTimeline") -> bool:
        """Whether the two timelines hold the same delays, commanded states, pending changes and
        valve states (so a command from either gives the same transitions and the same state);
        their times may differ."""
        return (self.cmd_on == other.cmd_on and self.cmd_since == other.cmd_since
                and self.cmd_off_at == other.cmd_off_at and self.valve_open == other.valve_open
                and self.ev_t == other.ev_t and self.ev_kind == other.ev_kind
                and self.on_delay_ns == other.on_delay_ns and self.off_delay_ns == other.off_delay_ns)

    def _update(self, i: int) -> None:
        """Recompute thruster i's next event: a command change (its pulse ends) or a valve switch."""
        t_ev, kind = NEVER, CHANGE
        if self.cmd_on[i]:
            t_ev = self.cmd_off_at[i]
            if not self.valve_open[i]:
                tv = self.cmd_since[i] + self.on_delay_ns
                if tv < t_ev:
                    t_ev, kind = tv, SWITCH
        elif self.valve_open[i]:
            t_ev, kind = self.cmd_since[i] + self.off_delay_ns, SWITCH
        self.ev_t[i] = t_ev
        self.ev_kind[i] = kind

    # ------------------------------------------------------------------ commands
    def command(self, t_ns: int, mask: int, on_time_ns=None) -> list[tuple[int, int, bool]]:
        """A command at ``t_ns``: bit i of ``mask`` commands thruster i+1 on, for ``on_time_ns[i]``
        (or until the next command when ``on_time_ns`` is empty or None)."""
        if on_time_ns and len(on_time_ns) != NUM_THRUSTERS:
            raise ValueError(f"a thruster command carries 12 on-times or none, got {len(on_time_ns)}")
        applied = self.advance(t_ns, before_activations=True)
        self.changes += 1
        cmd_on, cmd_off_at = self.cmd_on, self.cmd_off_at
        timed = bool(on_time_ns)
        for i in range(NUM_THRUSTERS):
            want = bool(mask >> i & 1)
            if not want and not cmd_on[i]:
                continue                # off and staying off (its off_at is already NEVER)
            if timed:
                d = int(on_time_ns[i])
                if want and d <= 0:
                    want = False
                off_at = t_ns + d if want else NEVER
            else:
                off_at = NEVER
            if want == cmd_on[i] and off_at == cmd_off_at[i]:
                continue                # the thruster's next event stays as it was
            if want != cmd_on[i]:
                cmd_on[i] = want
                self.cmd_since[i] = t_ns
            cmd_off_at[i] = off_at
            self._update(i)
        self.next_event_ns = min(self.ev_t)
        self._planned = None
        if self.next_event_ns > t_ns:   # nothing due now (advance would return no transition)
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
        applied = []
        ev_t, ev_kind = self.ev_t, self.ev_kind
        cmd_on, cmd_since, cmd_off_at, valve_open = self.cmd_on, self.cmd_since, self.cmd_off_at, self.valve_open
        on_delay, off_delay = self.on_delay_ns, self.off_delay_ns
        for i in range(NUM_THRUSTERS):      # thrusters are independent: each in time order
            te = ev_t[i]
            if te > t_ns:
                continue
            kind = ev_kind[i]
            while te <= t_ns:
                if kind == SWITCH:
                    if te == t_ns and before_activations:
                        break
                    valve_open[i] = is_open = not valve_open[i]
                    self.open_mask ^= 1 << i
                    applied.append((te, i, is_open))
                else:
                    cmd_on[i] = False
                    cmd_since[i] = te
                    cmd_off_at[i] = NEVER
                # the next event, as _update(i) finds it (inlined: this loop is hot)
                if cmd_on[i]:
                    te, kind = cmd_off_at[i], CHANGE
                    if not valve_open[i]:
                        tv = cmd_since[i] + on_delay
                        if tv < te:
                            te, kind = tv, SWITCH
                elif valve_open[i]:
                    te, kind = cmd_since[i] + off_delay, SWITCH
                else:
                    te, kind = NEVER, CHANGE
            ev_t[i] = te
            ev_kind[i] = kind
        self.next_event_ns = min(ev_t)
        applied.sort()
        # Fast path: the plan after the step is the plan before it without the transitions just
        # applied. The plan is every transition advance(end of time) would apply, sorted; this
        # step applied those before t_ns (and at t_ns, unless before_activations held every
        # switch at t_ns back), so they are its first len(applied) entries and the rest is the
        # new state's plan: the same list _future would build, taken by a slice (a new object,
        # so caches keyed by the plan's identity are refreshed). test_sph_fast_paths.py checks.
        old = self._planned
        k = len(applied)
        if old is not None and old[:k] == applied:
            self._planned = old[k:]
        else:
            self._planned = None
        return applied

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
        thruster in closed form instead of by stepping a copy: without new commands a thruster
        commanded on opens ``on_delay`` after its command changed (unless its pulse ends first)
        and closes ``off_delay`` after its pulse ends; one commanded off closes ``off_delay``
        after that change. Same list, same order (sorted)."""
        out = []
        on_delay, off_delay = self.on_delay_ns, self.off_delay_ns
        for i in range(NUM_THRUSTERS):
            off_at = self.cmd_off_at[i]
            if self.cmd_on[i]:
                if not self.valve_open[i]:
                    t_open = self.cmd_since[i] + on_delay
                    if t_open >= off_at:
                        continue            # the pulse ends before the valve opens
                    out.append((t_open, i, True))
                if off_at < NEVER:
                    out.append((off_at + off_delay, i, False))
            elif self.valve_open[i]:
                out.append((self.cmd_since[i] + off_delay, i, False))
        out.sort()
        return out

    def next_switch_ns(self) -> int | None:
        """The next valve transition after the timeline's time, or None when quiet."""
        p = self.planned_view()
        return p[0][0] if p else None
