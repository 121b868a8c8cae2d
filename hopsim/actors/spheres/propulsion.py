"""The propulsion task: the flight software's 1 kHz thruster interrupt, as events.

Every millisecond the interrupt decrements each thruster's remaining pulse time, turns a
thruster off when its time runs out, and forces every thruster off while global metrology is
being received. Here the same on/off sequence is computed from the pulse widths and blanking
windows, so that the task only acts at the ticks where its output changes: a pulse group set by
the control law at ``t`` starts at the next tick ``t + 1 ms`` (the interrupt pre-empts the
controller, so it runs first at the law's own tick) and is sent when the law sets it, stamped
with that tick; a blanking window cuts pulses and resumes them at its end if time remains. The
commands carry each thruster's remaining on-time, so the thruster simulator ends the pulses
without further commands.
"""

from __future__ import annotations

NUM_THRUSTERS = 12
BITS = tuple(1 << i for i in range(NUM_THRUSTERS))  # thruster i's bit in a mask


class PropulsionTask:
    """Pulse countdowns and metrology blanking of 12 thrusters (integer ns on a tick grid)."""

    def __init__(self, tick_ns: int, blank_enabled: bool = True):
        self.tick_ns = int(tick_ns)
        self.blank_enabled = blank_enabled
        self.start_ns = 0
        self.end_ns = [0] * NUM_THRUSTERS  # countdown of thruster i reaches 0 at end_ns[i]
        self.prev_end_ns = [0] * NUM_THRUSTERS  # the group still counting down until start_ns
        self.blanks: list[tuple[int, int]] = []  # [t0, t1) windows with every thruster forced off
        self.sent_mask = 0  # the last command's mask (0 after its pulses end)
        self.sent_until = [0] * NUM_THRUSTERS
        # max(end_ns), max(prev_end_ns) and max(sent_until), kept with them (command_at's shortcut)
        self.end_max_ns = self.prev_end_max_ns = self.sent_until_max_ns = 0

    def next_tick(self, t_ns: int) -> int:
        """The first propulsion tick strictly after t_ns."""
        return (t_ns // self.tick_ns + 1) * self.tick_ns

    def set_pulses(self, t_ns: int, widths_ns) -> int:
        """New pulse widths from the control law at t_ns; returns the tick at which they start."""
        start = self.next_tick(t_ns)
        if self.start_ns < start:  # (e if e < start else start: min(e, start) of ints, without the call)
            self.prev_end_ns = [e if e < start else start for e in self.end_ns]
            # max(prev_end_ns): the cut at start commutes with the max (integers)
            self.prev_end_max_ns = self.end_max_ns if self.end_max_ns < start else start
        else:
            self.prev_end_ns = [0] * NUM_THRUSTERS
            self.prev_end_max_ns = 0
        self.start_ns = start
        self.end_ns = [start + int(w) for w in widths_ns]
        self.end_max_ns = max(self.end_ns)
        return start

    def blank(self, t0_ns: int, t1_ns: int) -> None:
        """Force every thruster off over [t0, t1) (ultrasound reception)."""
        if self.blank_enabled and t1_ns > t0_ns:
            self.blanks.append((t0_ns, t1_ns))

    def forget_before(self, t_ns: int) -> None:
        self.blanks = [(a, b) for a, b in self.blanks if b > t_ns]

    def _blank_at(self, t_ns: int) -> tuple[int, int] | None:
        for a, b in self.blanks:
            if a <= t_ns < b:
                return a, b
        return None

    def _next_blank_start(self, t_ns: int) -> int | None:
        starts = [a for a, _ in self.blanks if a > t_ns]
        return min(starts) if starts else None

    def mask_at(self, t_ns: int) -> int:
        """Commanded on/off mask at instant t_ns (the 1 kHz interrupt's output)."""
        if self._blank_at(t_ns) is not None:
            return 0
        m = 0
        ends = self.end_ns if t_ns >= self.start_ns else self.prev_end_ns
        for i in range(NUM_THRUSTERS):
            if t_ns < ends[i]:
                m |= 1 << i
        return m

    def command_at(self, t_ns: int) -> tuple[int, list[int]] | None:
        """(mask, on-times in ns) to send at t_ns, or None when the valves already do the right thing.

        The on-time of each commanded thruster runs to its pulse end or the next blanking start.
        """
        if t_ns >= self.start_ns:
            ends, ends_max = self.end_ns, self.end_max_ns
        else:
            ends, ends_max = self.prev_end_ns, self.prev_end_max_ns
        if t_ns >= ends_max and t_ns >= self.sent_until_max_ns:
            # shortcut of the loops below: every countdown has run out (mask 0) and so has every
            # on-time last sent (sent_until is 0 off the sent mask, so live 0): nothing to send
            return None
        sent_mask, sent_until = self.sent_mask, self.sent_until
        mask = 0  # the interrupt's output at t_ns (:meth:`mask_at`); 0 once every countdown ran out
        if t_ns < ends_max and self._blank_at(t_ns) is None:
            for bit, end in zip(BITS, ends):
                if t_ns < end:
                    mask |= bit
        live = 0  # what the last command still asks for at t_ns; 0 once every on-time ran out
        if t_ns < self.sent_until_max_ns:
            for bit, end in zip(BITS, sent_until):
                if t_ns < end:
                    live |= bit
            live &= sent_mask
        if mask == 0 and live == 0:
            return None  # every thruster off and none asked for: nothing to send
        cut = self._next_blank_start(t_ns)
        if cut is None:
            until = [end if mask & bit else 0 for bit, end in zip(BITS, ends)]
        else:
            until = [min(end, cut) if mask & bit else 0 for bit, end in zip(BITS, ends)]
        if mask == live and all(u == s for bit, u, s in zip(BITS, until, sent_until) if mask & bit):
            return None
        self.sent_mask = mask
        self.sent_until = until
        self.sent_until_max_ns = max(until)
        return mask, [(u - t_ns) if u else 0 for u in until]

    def next_command_time(self, t_ns: int) -> int | None:
        """The next instant after t_ns at which the task must act on its own: the end of a
        blanking window (pulses may resume). Pulse starts are sent ahead, with their tick."""
        ends = [b for _, b in self.blanks if b > t_ns]
        return min(ends) if ends else None
