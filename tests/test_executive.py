"""The hop executive against the reproducible cases of Dshell's documentation (seed 000, digest 8.2)."""

import math

import pytest
from models_for_tests import FallingBody, Gain, IoRecorder, VariableStepper

from hopsim.dynamics import RK4, Euler
from hopsim.kernel import FSM, AlgebraicLoopError, FixedRate, Simulation
from hopsim.kernel.model import OutputOutsideUpdateFlowOuts
from hopsim.kernel.simtime import PeriodicSchedule, seconds

S = 1_000_000_000


@pytest.mark.parametrize("default_rate_hz", [1.0, 3.0, 7.0])
def test_100_hz_model_fires_at_exactly_100_hz_whatever_the_default(default_rate_hz):
    sim = Simulation(default_rate_hz=default_rate_hz)
    sim.add_island("a")
    imu = sim.add_model(IoRecorder("imu", FixedRate(100.0)), "a")
    sim.add_model(IoRecorder("slow"), "a")  # default rate
    sim.advance_to(2.0)
    assert [t1 for _, t1 in imu.ends] == [k * 10_000_000 for k in range(1, 201)]


def test_hops_are_the_union_of_all_barriers_with_two_steps_per_hop():
    """Default-rate model, 2.5 Hz model, variable-rate model, timed event at 3.0 s, zero-crossing."""
    sim = Simulation(default_rate_hz=1.0)
    island = sim.add_island("a", integrator=RK4(), n_integration_steps=2)
    island.hop_log, island.trace_steps = [], True
    sim.add_model(IoRecorder("default"), "a")
    sim.add_model(IoRecorder("slow", FixedRate(2.5)), "a")
    variable = [330_000_000, 1_700_000_000, 2_050_000_000, 4_900_000_000]
    sim.add_model(VariableStepper("variable", variable), "a")
    body = sim.add_model(FallingBody("body", h0=20.0, g=9.81), "a")
    fired = []
    sim.at(3.0, lambda ev: fired.append(ev.t_ns), name="ev3", island="a")
    crossing = []
    sim.add_zero_crossing("ground", "a", lambda t: float(body.x[0]), crossing.append, eps_s=1e-6)
    sim.advance_to(5.0)

    t_star = math.sqrt(2 * 20.0 / 9.81)
    assert len(crossing) == 1 and t_star - 1e-6 <= crossing[0] / S <= t_star
    expected = sorted(
        {k * S for k in range(6)}
        | {PeriodicSchedule(2.5).instant(k) for k in range(13)}
        | set(variable)
        | {3 * S, crossing[0]}
    )
    boundaries = [island.hop_log[0][0]] + [t1 for _, t1 in island.hop_log]
    assert boundaries == expected
    assert fired == [3 * S]
    assert len(island.step_log) == 2 * len(island.hop_log)
    for (h0, h1), s0, s1 in zip(island.hop_log, island.step_log[::2], island.step_log[1::2]):
        assert s0[0] == h0 and s1[1] == h1 and s0[1] == s1[0] == h0 + (h1 - h0) // 2


def test_advance_by_off_boundary_fires_no_io_events():
    sim = Simulation(default_rate_hz=1.0)
    sim.add_island("a")
    m = sim.add_model(IoRecorder("m"), "a")
    begins, ends = [], []
    sim.add_io_event("b", "m", "begin", begins.append)
    sim.add_io_event("e", "m", "end", ends.append)
    for _ in range(5):
        sim.advance_by(0.7)
    assert sim.now == seconds(3.5)
    assert [t1 for _, t1 in m.ends] == [1 * S, 2 * S, 3 * S]
    assert ends == [1 * S, 2 * S, 3 * S]
    assert begins == [0, 1 * S, 2 * S, 3 * S]
    assert all(t % S == 0 for t in m.ufos)


def test_timed_event_list_self_rescheduling_and_find_delete():
    sim = Simulation()
    sim.add_island("a")
    fired = []
    names = sim.at([1.0, 2.0, 3.0], lambda ev: fired.append((ev.name, ev.t_ns)), name="ev", island="a")
    assert names == ["ev@1", "ev@2", "ev@3"]

    ticks = []

    def every_half_second(ev):
        ticks.append(ev.t_ns)
        if ev.t_ns < 2 * S:
            ev.reschedule(ev.t_ns + S // 2)

    sim.at(0.5, every_half_second, name="tick", island="a")
    sim.at(2.5, lambda ev: fired.append(("never", ev.t_ns)), name="doomed", island="a")
    assert sim.find_event("doomed") is not None
    sim.delete_event("doomed")
    assert sim.find_event("doomed") is None
    sim.advance_to(4.0)
    assert fired == [("ev@1", S), ("ev@2", 2 * S), ("ev@3", 3 * S)]
    assert ticks == [S // 2, S, 3 * S // 2, 2 * S]
    assert sim.list_events() == []


def test_same_instant_events_run_by_priority_then_registration():
    sim = Simulation()
    sim.add_island("a")
    order = []
    sim.at(1.0, lambda ev: order.append("late"), name="late", island="a", priority=5)
    sim.at(1.0, lambda ev: order.append("first"), name="first", island="a", priority=-1)
    sim.at(1.0, lambda ev: order.append("second"), name="second", island="a", priority=-1)
    sim.advance_to(1.0)
    assert order == ["first", "second", "late"]


@pytest.mark.parametrize("eps_s", [1e-6, 1e-3])
def test_zero_crossing_ends_the_hop_within_eps_of_the_analytic_time(eps_s):
    sim = Simulation()
    sim.add_island("a", n_integration_steps=3)
    sim.add_model(IoRecorder("clock", FixedRate(10.0)), "a")
    body = sim.add_model(FallingBody("body", h0=950.0, v0=3.0, g=3.71), "a")
    hit = []

    def bounce(t):
        hit.append(t)
        body.x[1] = -0.5 * body.x[1]

    sim.add_zero_crossing("zcev", "a", lambda t: float(body.x[0]), bounce, eps_s=eps_s)
    sim.advance_to(40.0)
    g, v0, h0 = 3.71, 3.0, 950.0
    t_star = (v0 + math.sqrt(v0 * v0 + 2 * g * h0)) / g
    assert len(hit) == 1
    assert t_star - eps_s <= hit[0] / S <= t_star + 1e-9
    # the callback's change took effect and the run went on (no e_stop): the body flew up again
    assert sim.time == 40.0 and sim.stop_reason is None
    assert body.x[0] > 0 and sim.islands["a"].zero_crossings == []


def test_e_stop_from_a_zero_crossing_ends_the_run_there():
    sim = Simulation()
    sim.add_island("a")
    sim.add_island("b")
    sim.add_model(IoRecorder("other", FixedRate(3.0)), "b")
    body = sim.add_model(FallingBody("body", h0=10.0), "a")

    def stop(t):
        sim.e_stop = True

    sim.add_zero_crossing("ground", "a", lambda t: float(body.x[0]), stop)
    assert sim.advance_to(100.0) == "e_stop"
    t_star = math.sqrt(2 * 10.0 / 9.81)
    assert t_star - 1e-6 <= sim.time <= t_star
    assert all(isl.t == sim.now for isl in sim.islands.values())
    assert sim.advance_to(200.0) == "e_stop" and sim.time < 2


def test_stop_callback_ends_the_run_and_is_unregistered():
    sim = Simulation(default_rate_hz=10.0)
    sim.add_island("a")
    m = sim.add_model(IoRecorder("m"), "a")
    sim.add_stop_callback(lambda s: len(m.ends) >= 7)
    assert sim.advance_to(10.0) == "stop_callback"
    assert sim.now == seconds(0.7)
    assert sim.advance_to(1.0) == "time" and sim.now == S


@pytest.mark.parametrize("integrator, samples", [(RK4, 4), (Euler, 1)])
@pytest.mark.parametrize("bonus", [False, True])
def test_pre_and_post_deriv_are_called_once_per_derivative_sample(integrator, samples, bonus):
    sim = Simulation(default_rate_hz=1.0)
    island = sim.add_island("a", integrator=integrator(), n_integration_steps=4, end_of_step_derivative=bonus)
    island.trace_steps = True
    sim.add_model(IoRecorder("clock", FixedRate(2.5)), "a")
    body = sim.add_model(FallingBody("body", h0=1e6), "a")
    sim.step(3)
    steps = len(island.step_log)
    assert steps == 4 * island.stats["hops"]
    expected = steps * (samples + (1 if bonus else 0))
    assert body.pre_calls == body.post_calls == expected
    assert island.integrator.stats.derivative_calls == steps * samples


def test_step_advances_by_default_periods():
    sim = Simulation(default_rate_hz=0.5)
    sim.add_island("a")
    sim.add_model(IoRecorder("m"), "a")
    sim.step(10)
    assert sim.time == 20.0


def test_model_method_event_runs_before_pre_deriv():
    sim = Simulation()
    sim.add_island("a", integrator=RK4())
    body = sim.add_model(FallingBody("body"), "a")
    sim.add_model(IoRecorder("clock", FixedRate(4.0)), "a")
    seen = []
    sim.add_model_event("pdev", "body", "pre_deriv", lambda ev, t: seen.append(body.pre_calls), before=True)
    sim.advance_to(1.0)
    assert seen == list(range(len(seen))) and len(seen) == 16


def test_feed_through_ordering_y1_y2():
    """y1 = C1 x1 + D1 y2 (feed-through) and y2 = C2 x2: model 2 must run first, whatever the
    registration order, so y1 uses the y2 of the same instant."""
    sim = Simulation()
    sim.add_island("a")
    m1 = sim.add_model(Gain("m1", c=2.0, d=10.0, x0=1.0), "a", ties={"u": "a/y2", "y": "a/y1"})
    m2 = sim.add_model(Gain("m2", c=3.0, d=0.0, x0=5.0, feed_through=False), "a", ties={"u": "a/none", "y": "a/y2"})
    sim.advance_to(3.0)
    assert [s.name for s in sim.islands["a"].slots] == ["m2", "m1"]
    y2 = dict(m2.outputs_seen)
    for t, y1 in m1.outputs_seen:
        x1 = 1.0 + t // S
        assert y1 == 2.0 * x1 + 10.0 * y2[t]


def test_algebraic_loop_is_an_error_naming_the_models_unless_broken():
    def build(with_break):
        sim = Simulation()
        sim.add_island("a")
        m1 = sim.add_model(Gain("m1", c=1.0, d=0.5), "a", ties={"u": "a/y2", "y": "a/y1"})
        m2 = sim.add_model(Gain("m2", c=1.0, d=0.25), "a", ties={"u": "a/y1", "y": "a/y2"})
        if with_break:
            sim.add_break("a/y2")
        return sim, m1, m2

    sim, _, _ = build(False)
    with pytest.raises(AlgebraicLoopError) as err:
        sim.advance_to(1.0)
    assert set(err.value.loop) == {"m1", "m2"} and "a/y1" in str(err.value) and "break" in str(err.value)

    sim, m1, m2 = build(True)
    sim.advance_to(2.0)
    # the break on y2 puts m1 first; m1 reads y2 one update late
    assert [s.name for s in sim.islands["a"].slots] == ["m1", "m2"]
    y1, y2 = dict(m1.outputs_seen), dict(m2.outputs_seen)
    assert y1[0] == 1.0 + 0.5 * 0.0  # nothing published on y2 before t = 0
    assert y2[0] == 1.0 + 0.25 * y1[0]
    assert y1[S] == 2.0 + 0.5 * y2[0]  # y2 of the previous update


def test_outputs_are_written_only_in_update_flow_outs():
    class Bad(Gain):
        def end_io_step(self, t0, t1):
            self.write("y", self.read("u"))

    sim = Simulation()
    sim.add_island("a")
    sim.add_model(Bad("bad", 1.0, 1.0), "a")
    with pytest.raises(OutputOutsideUpdateFlowOuts, match="update_flow_outs"):
        sim.advance_to(2.0)


def test_fsm_takes_guarded_transition():
    entered = []
    fsm = FSM("init")
    fsm.add_state("s1", on_entry=lambda: entered.append("s1"))
    fsm.add_transition("init", "s1", guard=True)
    fsm.add_transition("s1", "s2", guard=lambda: False)
    assert fsm.step() and fsm.current == "s1" and entered == ["s1"]
    assert not fsm.step() and fsm.history == ["init", "s1"]


def test_fsm_drives_a_model_from_its_io_steps():
    class Sequencer(IoRecorder):
        def __init__(self):
            super().__init__("seq")
            self.count = 0
            self.fsm = FSM("idle")
            self.fsm.add_transition("idle", "armed", guard=lambda: self.count >= 2)
            self.fsm.add_transition("armed", "done", guard=lambda: self.count >= 4)

        def end_io_step(self, t0, t1):
            self.count += 1
            self.fsm.step()

    sim = Simulation()
    sim.add_island("a")
    seq = sim.add_model(Sequencer(), "a")
    sim.add_stop_callback(lambda s: seq.fsm.in_state("done"))
    assert sim.advance_to(100.0) == "stop_callback" and sim.time == 4.0


def test_cpu_accounting_attributes_time_to_the_busy_model():
    import time as _time

    class Busy(IoRecorder):
        def end_io_step(self, t0, t1):
            end = _time.thread_time_ns() + 2_000_000  # 2 ms of CPU per I/O step
            while _time.thread_time_ns() < end:
                pass

    sim = Simulation(cpu_accounting=True, default_rate_hz=10.0)
    sim.add_island("a")
    sim.add_model(Busy("busy"), "a")
    sim.add_model(IoRecorder("idle"), "a")
    sim.advance_to(2.0)
    report = sim.cpu_report()
    assert report["busy"]["cpu_s"] >= 0.04 and report["busy"]["share"] > 0.5
    assert report["idle"]["cpu_s"] < report["busy"]["cpu_s"] / 20


def test_variable_rate_model_is_asked_again_when_a_triggering_message_arrives():
    """A model learns from a message when it next needs an I/O step (a valve's switch time)."""
    from models_for_tests import QueueSource

    from hopsim.kernel import In, VariableRate
    from hopsim.kernel.model import Model as _Model
    from hopsim.schemas import Scalar

    class Alarm(_Model):
        inputs = {"at": In(Scalar, queue=True, trigger=True)}
        io_schedule = VariableRate()

        def __init__(self):
            super().__init__("alarm")
            self.wake_at, self.rang = None, []

        def next_io_time(self, t):
            return self.wake_at if self.wake_at is not None and self.wake_at > t else None

        def end_io_step(self, t0, t1):
            if self.wake_at == t1:
                self.rang.append(t1)

        def start_io_step(self, t0, t1):
            # inputs that arrived at this barrier are taken up here (after every output of it)
            for m in self.drain("at"):
                self.wake_at = int(m.value * S)

    sim = Simulation()
    sim.add_island("a")
    sim.add_model(QueueSource("clock", lambda t: t / S + 0.37, rate_hz=1.0), "a", ties={"y": "a/at"})
    alarm = sim.add_model(Alarm(), "a", ties={"at": "a/at"})
    sim.advance_to(3.0)
    assert alarm.rang == [370_000_000, 1_370_000_000, 2_370_000_000]


def test_a_memo_is_no_part_of_a_snapshot_and_is_forgotten_on_restore():
    """hopsim.kernel.Memo: what a model keeps so as not to compute it again is not its state."""
    from hopsim.kernel import Memo, Model

    class Squares(Memo):
        def __init__(self):
            self.kept: dict[int, int] = {}

        def forget(self) -> None:
            self.kept.clear()

    class Counter(Model):
        def __init__(self, name):
            super().__init__(name)
            self.n = 0
            self.squares = Squares()

    m = Counter("m")
    m.squares.kept[3] = 9
    snap = m.snapshot()
    assert snap[0] == {"n": 0}  # the state, without the memo
    m.n, m.squares.kept[4] = 5, 16
    m.restore(snap)
    assert m.n == 0 and m.squares.kept == {}  # back, and the memo holds nothing from later


def test_the_kernels_busiest_records_keep_their_attributes_compact_and_survive_a_copy():
    """Slot and Island have more attributes than CPython keeps inline in an object; they hold them
    in __slots__ (no per-object dict), and a copy (as a pickle: the state comes as a (dict, slots)
    pair) gives them all back."""
    import copy

    sim = Simulation(default_rate_hz=1.0)
    sim.add_island("a")
    sim.add_model(IoRecorder("m", FixedRate(2.0)), "a")
    sim.advance_to(1.5)
    island = sim.islands["a"]
    slot = island.slots[0]
    for record in (slot, island):
        assert not hasattr(record, "__dict__"), type(record).__name__
    twin = copy.copy(slot)
    assert [getattr(twin, name) for name in type(slot).__slots__] == [
        getattr(slot, name) for name in type(slot).__slots__
    ]
    # the 2 Hz model has ended three I/O steps and begun the one from 1.5 s to 2 s
    assert (twin.io_prev, twin.io_next) == (1_500_000_000, 2_000_000_000) and len(sim.model("m").ends) == 3
