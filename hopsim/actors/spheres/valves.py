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
        self.ev_t = [NEVER] * NUM_THRUSTERS      # each thruster's next event (time, kind)
        self.ev_kind = [CHANGE] * NUM_THRUSTERS
        self.next_event_ns = NEVER
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
        for i in range(NUM_THRUSTERS):
            want = bool(mask >> i & 1)
            d = int(on_time_ns[i]) if on_time_ns else 0
            if want and on_time_ns and d <= 0:
                want = False
            off_at = t_ns + d if (want and on_time_ns) else NEVER
            if want == self.cmd_on[i] and off_at == self.cmd_off_at[i]:
                continue                # the thruster's next event stays as it was
            if want != self.cmd_on[i]:
                self.cmd_on[i] = want
                self.cmd_since[i] = t_ns
            self.cmd_off_at[i] = off_at
            self._update(i)
        self.next_event_ns = min(self.ev_t)
        self._planned = None
        return applied + self.advance(t_ns)

    # ------------------------------------------------------------------ time
    def advance(self, t_ns: int, before_activations: bool = False) -> list[tuple[int, int, bool]]:
        """Apply every event up to ``t_ns`` (activations at ``t_ns`` too, unless told not to)."""
        if t_ns < self.t_ns:
            raise ValueError(f"valve timeline at {self.t_ns} ns cannot go back to {t_ns} ns")
        self.t_ns = t_ns
        if self.next_event_ns > t_ns:
            return []
        applied = []
        ev_t = self.ev_t
        for i in [i for i, te in enumerate(ev_t) if te <= t_ns]:
            while ev_t[i] <= t_ns:
                te, kind = ev_t[i], self.ev_kind[i]
                if kind == SWITCH and te == t_ns and before_activations:
                    break
                if kind == CHANGE:
                    self.cmd_on[i] = False
                    self.cmd_since[i] = te
                    self.cmd_off_at[i] = NEVER
                else:
                    self.valve_open[i] = not self.valve_open[i]
                    applied.append((te, i, self.valve_open[i]))
                self._update(i)
        self.next_event_ns = min(ev_t)
        self._planned = None
        applied.sort()
        return applied

    def planned(self) -> list[tuple[int, int, bool]]:
        """Valve transitions (t_ns, thruster index, opens) that follow from the commands so far,
        in time order, without changing the timeline."""
        if self._planned is None:
            ahead = self.clone()
            self._planned = ahead.advance(NEVER - 1) if self.next_event_ns < NEVER else []
        return list(self._planned)

    def next_switch_ns(self) -> int | None:
        """The next valve transition after the timeline's time, or None when quiet."""
        p = self.planned()
        return p[0][0] if p else None

    @property
    def open_mask(self) -> int:
        m = 0
        for i, o in enumerate(self.valve_open):
            if o:
                m |= 1 << i
        return m
