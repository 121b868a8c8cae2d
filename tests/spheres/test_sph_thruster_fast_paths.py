"""The compiled fast paths of the SPHERES thruster simulator and valve timeline give exactly (bit
for bit) what the plain numpy and Python forms they replace give."""

import random

import numpy as np

from hopsim.actors.spheres.params import G0
from hopsim.actors.spheres.thrusters import _burn
from hopsim.actors.spheres.valves import (
    CHANGE,
    CMD_OFF_AT,
    CMD_ON,
    CMD_SINCE,
    EV_KIND,
    EV_T,
    NEVER,
    SWITCH,
    ValveTimeline,
)

MS = 1_000_000


def _bits(a) -> np.ndarray:
    return np.asarray(a, dtype=float).view(np.int64)


def test_compiled_propellant_account_matches_numpy():
    rng = np.random.default_rng(4)
    isp_g0 = 37.0 * G0
    for _ in range(2000):
        thrust = rng.random(12) * 10.0 ** rng.integers(-3, 2, 12) * (rng.random(12) < 0.7)
        impulse = rng.random(12) * 10.0 ** rng.integers(-6, 3, 12)
        dt = float(rng.choice([1e-3, 6e-3, rng.random() * 0.05]))
        ref_impulse = impulse.copy()
        ref_impulse += thrust * dt
        ref_used = ref_impulse / isp_g0
        used = np.zeros(12)
        total = _burn(impulse, used, thrust, dt, isp_g0)
        assert np.array_equal(_bits(impulse), _bits(ref_impulse))
        assert np.array_equal(_bits(used), _bits(ref_used))
        assert _bits(total) == _bits(float(ref_used.sum()))


class _PlainValveTimeline:
    """The interpreted valve stepping the compiled ValveTimeline replaced (lists, one thruster at
    a time, the transitions collected and sorted)."""

    def __init__(self, on_delay_ns, off_delay_ns):
        self.on_delay, self.off_delay, self.t_ns = on_delay_ns, off_delay_ns, 0
        self.cmd_on, self.cmd_since, self.cmd_off_at = [False] * 12, [0] * 12, [NEVER] * 12
        self.valve_open, self.ev_t, self.ev_kind = [False] * 12, [NEVER] * 12, [CHANGE] * 12

    def clone(self):
        c = _PlainValveTimeline(self.on_delay, self.off_delay)
        c.t_ns = self.t_ns
        for name in ("cmd_on", "cmd_since", "cmd_off_at", "valve_open", "ev_t", "ev_kind"):
            setattr(c, name, getattr(self, name)[:])
        return c

    def _update(self, i):
        t_ev, kind = NEVER, CHANGE
        if self.cmd_on[i]:
            t_ev = self.cmd_off_at[i]
            if not self.valve_open[i] and self.cmd_since[i] + self.on_delay < t_ev:
                t_ev, kind = self.cmd_since[i] + self.on_delay, SWITCH
        elif self.valve_open[i]:
            t_ev, kind = self.cmd_since[i] + self.off_delay, SWITCH
        self.ev_t[i], self.ev_kind[i] = t_ev, kind

    def command(self, t_ns, mask, on_time_ns=None):
        applied = self.advance(t_ns, before_activations=True)
        for i in range(12):
            want = bool(mask >> i & 1)
            off_at = NEVER
            if on_time_ns:
                if want and on_time_ns[i] <= 0:
                    want = False
                if want:
                    off_at = t_ns + on_time_ns[i]
            if want != self.cmd_on[i]:
                self.cmd_on[i], self.cmd_since[i] = want, t_ns
            self.cmd_off_at[i] = off_at
            self._update(i)
        return applied + self.advance(t_ns)

    def advance(self, t_ns, before_activations=False):
        self.t_ns = t_ns
        applied = []
        for i in range(12):
            while self.ev_t[i] <= t_ns:
                te = self.ev_t[i]
                if self.ev_kind[i] == SWITCH:
                    if te == t_ns and before_activations:
                        break
                    self.valve_open[i] = not self.valve_open[i]
                    applied.append((te, i, self.valve_open[i]))
                else:
                    self.cmd_on[i], self.cmd_since[i], self.cmd_off_at[i] = False, te, NEVER
                self._update(i)
        return sorted(applied)


def test_compiled_valve_timeline_matches_the_interpreted_stepping():
    """Random commands and steps (with and without the plan in hand, which the compiled
    timeline steps by): the same transitions, the same state and the same plan as the plain
    stepping, whose plan is what stepping a copy to the end of time applies."""
    rng = random.Random(7)
    by_plan = 0
    for _ in range(400):
        on, off = rng.choice([(6 * MS, 0), (6 * MS, 2 * MS), (0, 0), (3 * MS, 5 * MS)])
        tl, ref = ValveTimeline(on, off), _PlainValveTimeline(on, off)
        t = 0
        for _ in range(25):
            if rng.random() < 0.5:
                plan = tl.planned()
                assert plan == ref.clone().advance(NEVER - 1)
                by_plan += bool(plan)
            t += rng.choice([0, 1, 2, 3, 5, 6, 7, 11, 100]) * MS
            if rng.random() < 0.5:
                on_times = (
                    None
                    if rng.random() < 0.2
                    else [rng.choice([0, -1, 1 * MS, 3 * MS, 6 * MS, 7 * MS, 50 * MS]) for _ in range(12)]
                )
                mask = rng.getrandbits(12)
                assert tl.command(t, mask, on_times) == ref.command(t, mask, on_times)
            else:
                before = rng.random() < 0.5
                assert tl.advance(t, before) == ref.advance(t, before)
            st = tl.state.tolist()
            assert [bool(x) for x in st[CMD_ON]] == ref.cmd_on and st[CMD_SINCE] == ref.cmd_since
            assert st[CMD_OFF_AT] == ref.cmd_off_at and tl.valve_open == ref.valve_open
            assert st[EV_T] == ref.ev_t and st[EV_KIND] == ref.ev_kind
            assert tl.open_mask == sum(1 << i for i in range(12) if ref.valve_open[i])
            assert tl.next_event_ns == min(ref.ev_t) and tl.t_ns == ref.t_ns
    assert by_plan > 1000


def test_a_cloned_valve_timeline_has_every_attribute_and_its_own_state():
    """clone() copies attribute by attribute; a new attribute of the timeline must be copied too."""
    tl = ValveTimeline(on_delay_ns=3_000_000, off_delay_ns=2_000_000)
    tl.command(10_000_000, 0b101, [5_000_000] * 12)
    tl.advance(12_000_000)
    c = tl.clone()
    assert vars(c).keys() == vars(tl).keys()
    for name, value in vars(tl).items():
        assert np.array_equal(getattr(c, name), value) if name == "state" else getattr(c, name) == value, name
    assert c.state is not tl.state
    c.advance(NEVER - 1)
    assert not np.array_equal(c.state, tl.state) and tl.same_state(tl.clone())
