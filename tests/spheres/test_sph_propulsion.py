"""Propulsion task and mixer: the event-driven task against a literal 1 kHz countdown, and the
mixer's wrench against the seed's thruster table."""

import numpy as np
import pytest
from test_sph_helpers import MS, SEED_THRUST_N, SEED_THRUSTERS

from hopsim.actors.spheres.mixer import ThrusterMixer
from hopsim.actors.spheres.params import vehicle_params
from hopsim.actors.spheres.propulsion import PropulsionTask
from hopsim.actors.spheres.valves import ValveTimeline


def countdown_reference(law_ticks, widths, blanks, t_end_ms):
    """The flight code's interrupt, literally: every ms decrement the counters set by the last
    law (starting the ms after it), force all off in a blanking window, send on change."""
    counters = [0] * 12
    pending = {}
    for t, w in zip(law_ticks, widths):
        pending[t + 1] = [x // MS for x in w]
    sent, last = [], 0
    for ms in range(t_end_ms):
        if ms in pending:
            counters = list(pending[ms])
        on = [c > 0 for c in counters]
        counters = [max(c - 1, 0) for c in counters]
        if any(a <= ms < b for a, b in blanks):
            on = [False] * 12
        mask = sum(1 << i for i, o in enumerate(on) if o)
        if mask != last:
            sent.append((ms, mask))
            last = mask
    return sent


def commanded_on_intervals(events):
    """(t, mask, on-times) commands -> per thruster list of [on, off) in ms."""
    out = {i: [] for i in range(12)}
    state = {}
    for t, mask, on in sorted(events):
        for i in range(12):
            if i in state:
                start, end = state.pop(i)
                out[i].append((start, min(end, t)))
            if mask >> i & 1:
                state[i] = (t, t + on[i])
    for i, (start, end) in state.items():
        out[i].append((start, end))
    merged = {}
    for i, spans in out.items():
        m = []
        for a, b in sorted((a // MS, b // MS) for a, b in spans if b > a):
            if m and a <= m[-1][1]:
                m[-1] = (m[-1][0], max(m[-1][1], b))
            else:
                m.append((a, b))
        merged[i] = m
    return merged


def intervals_from_reference(sent):
    out = {i: [] for i in range(12)}
    prev, since = 0, {}
    for ms, mask in sent:
        for i in range(12):
            was, now = prev >> i & 1, mask >> i & 1
            if now and not was:
                since[i] = ms
            if was and not now:
                out[i].append((since.pop(i), ms))
        prev = mask
    return out


@pytest.mark.parametrize("seed", range(6))
def test_event_driven_task_commands_what_the_1khz_countdown_does(seed):
    rng = np.random.default_rng(seed)
    law_ticks = [100 * k for k in range(1, 12)]
    widths = [[int(rng.choice([0, 0, 5, 7, 13, 40, 99, 100])) * MS for _ in range(12)] for _ in law_ticks]
    blanks = [(306, 411), (765, 870)] if seed % 2 else []
    task = PropulsionTask(MS)
    events = []
    timeline = sorted(
        [(t, "law") for t in law_ticks] + [(b, "blank_end") for _, b in blanks] + [(a, "sync") for a, _ in blanks]
    )
    for t_ms, kind in timeline:
        t = t_ms * MS
        if kind == "sync":
            task.blank(t, t + 105 * MS)
        cmd = task.command_at(t)
        if cmd:
            events.append((t, *cmd))
        if kind == "law":
            start = task.set_pulses(t, widths[law_ticks.index(t_ms)])
            cmd = task.command_at(start)
            if cmd:
                events.append((start, *cmd))
    ref = intervals_from_reference(countdown_reference(law_ticks, widths, blanks, 1400))
    assert commanded_on_intervals(events) == ref


def test_valves_follow_commands_with_the_opening_delay():
    tl = ValveTimeline(6 * MS, 0)
    switched = tl.command(0, 0b11, [5 * MS, 9 * MS] + [0] * 10) + tl.advance(100 * MS)
    assert switched == [(6 * MS, 1, True), (9 * MS, 1, False)]


def test_mixer_realizes_the_wrench_on_average():
    p = vehicle_params()
    mixer = ThrusterMixer(p, 0.1)
    pos = np.array([r for r, _ in SEED_THRUSTERS])
    dirs = np.array([d for _, d in SEED_THRUSTERS], float)
    for force, torque in [
        ((0.02, 0, 0), (0, 0, 0)),
        ((0, -0.03, 0.01), (0, 0, 0)),
        ((0.01, 0.01, 0), (0, 0, 1e-3)),
        ((0, 0, 0), (2e-4, -1e-3, 5e-4)),
    ]:
        u = mixer.thruster_forces(force, torque)
        assert (u >= 0).all()
        for a in range(0, 12, 2):  # opposing thrusters are cancelled
            assert u[a] == 0 or u[a + 1] == 0
        assert np.allclose(u @ dirs, force, atol=1e-12)
        assert np.allclose(u @ np.cross(pos, dirs), torque, atol=1e-12)
        widths = np.array(mixer.pulse_widths_ns(force, torque)) / 1e9
        fired = widths > 0
        thrust_time = np.where(fired, widths - 0.006, 0.0)
        # the delivered impulse over the period matches the wrench to within 1 ms of each pulse
        assert np.allclose(SEED_THRUST_N * thrust_time @ dirs, np.array(force) * 0.1, atol=SEED_THRUST_N * 1e-3 * 2)


def test_mixer_saturates_by_scaling_every_pulse():
    mixer = ThrusterMixer(vehicle_params(), 0.1)
    widths = np.array(mixer.pulse_widths_ns((1.0, 0.5, 0.0), (0, 0, 0))) / 1e6
    assert widths.max() == 100
    x = widths[[1, 11]].mean() - 6  # +X thrusters 2 and 12
    y = widths[[2, 7]].mean() - 6  # +Y thrusters 3 and 8
    assert y / x == pytest.approx(0.5, abs=0.02)


def test_minimum_pulse_and_deadband():
    mixer = ThrusterMixer(vehicle_params(), 0.1)
    assert max(mixer.pulse_widths_ns((1e-4, 0, 0), (0, 0, 0))) == 0
    tiny = mixer.pulse_widths_ns((2 * SEED_THRUST_N * 0.0012 / 0.1, 0, 0), (0, 0, 0))
    assert sorted(set(tiny)) == [0, 7 * MS]
