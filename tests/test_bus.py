"""Signals (latest value, freshness: a command is seen once), queues (every message, in order),
the total order of a recorded instant, and wiring errors that name the fix."""

import pytest
from models_for_tests import QueueSource, Source

from hopsim.bus import MemoryRecorder, WiringError
from hopsim.kernel import FixedRate, In, Model, Out, Simulation, Tie
from hopsim.schemas import Scalar, ThrottleCommand

S = 1_000_000_000


class CommandCounter(Model):
    """Counts commands with take() (seen once) at 4 Hz; keeps every read() too."""

    inputs = {"cmd": In(Scalar)}
    io_schedule = FixedRate(4.0)

    def __init__(self, name):
        super().__init__(name)
        self.taken, self.read_values = [], []

    def end_io_step(self, t0, t1):
        cmd = self.take("cmd")
        if cmd is not None:
            self.taken.append((t1, cmd.value))
        latest = self.read("cmd")
        self.read_values.append(latest.value if latest else None)


def test_signal_command_is_taken_once_while_read_keeps_the_latest():
    sim = Simulation()
    sim.add_island("a")
    sim.add_model(Source("commander", lambda t: t / S, rate_hz=1.0), "a", ties={"y": "a/cmd"})
    counter = sim.add_model(CommandCounter("counter"), "a", ties={"cmd": "a/cmd"})
    sim.advance_to(3.0)
    assert counter.taken == [(S // 4, 0.0), (S + S // 4, 1.0), (2 * S + S // 4, 2.0)]
    assert counter.read_values[:6] == [0.0, 0.0, 0.0, 0.0, 1.0, 1.0]


class Collector(Model):
    inputs = {"q": In(Scalar, queue=True)}
    io_schedule = FixedRate(1.0)

    def __init__(self, name):
        super().__init__(name)
        self.got = []

    def end_io_step(self, t0, t1):
        self.got.append([m.value for m in self.drain("q")])


def test_queue_delivers_every_message_once_in_order():
    sim = Simulation()
    sim.add_island("a")
    sim.add_model(QueueSource("fast", lambda t: t / S, rate_hz=4.0), "a", ties={"y": "a/q"})
    c = sim.add_model(Collector("collector"), "a", ties={"q": "a/q"})
    sim.advance_to(2.0)
    assert c.got == [[0.0, 0.25, 0.5, 0.75], [1.0, 1.25, 1.5, 1.75]]


def test_recorded_instant_is_in_time_priority_source_sequence_order():
    rec = MemoryRecorder()
    sim = Simulation(recorder=rec, record_kernel_events=False)
    for island, name, prio in (("i1", "zeta", 0), ("i2", "alpha", 0), ("i3", "mid", -2)):
        sim.add_island(island)
        sim.add_model(QueueSource(name, 1.0, rate_hz=1.0), island, ties={"y": Tie(f"{island}/y", priority=prio)})
    sim.advance_to(1.0)
    order = [(e.t_ns, e.source) for e in rec.envelopes]
    assert order == [(0, "mid"), (0, "alpha"), (0, "zeta"), (S, "mid"), (S, "alpha"), (S, "zeta")]


def test_type_and_kind_mismatches_name_the_topic_and_the_fix():
    sim = Simulation()
    sim.add_island("a")
    sim.add_model(Source("src", 1.0), "a", ties={"y": "a/sig"})

    class Wrong(Model):
        inputs = {"cmd": In(ThrottleCommand)}

    with pytest.raises(WiringError, match=r"a/sig.*hopsim.Scalar.*another topic"):
        sim.add_model(Wrong("w"), "a", ties={"cmd": "a/sig"})
    with pytest.raises(WiringError, match="already has publisher 'src'"):
        sim.add_model(Source("src2", 2.0), "a", ties={"y": "a/sig"})
    with pytest.raises(WiringError, match="no port"):
        sim.add_model(Source("src3", 2.0), "a", ties={"nope": "a/x"})
    with pytest.raises(WiringError, match="<island-or-vehicle>/<signal>"):
        sim.add_model(Source("src4", 2.0), "a", ties={"y": "flat"})


def test_injected_message_reaches_subscribers_and_the_recording():
    rec = MemoryRecorder()
    sim = Simulation(recorder=rec)
    sim.add_island("a")
    c = sim.add_model(Collector("collector"), "a", ties={"q": "a/q"})
    sim.add_model(QueueSource("fast", 9.0, rate_hz=0.25), "a", ties={"y": "a/q"})
    sim.inject("a/q", Scalar(value=42.0), 1.5)
    sim.advance_to(3.0)
    assert c.got == [
        [9.0],
        [42.0],
        [],
    ]
    injected = [e for e in rec.envelopes if e.source == "scenario"]
    assert [(e.t_ns, e.payload.value) for e in injected] == [(S + S // 2, 42.0)]
    with pytest.raises(ValueError, match="the run is at"):
        sim.inject("a/q", Scalar(value=1.0), 2.0)


class Valve(Model):
    """Accepts 'stuck_off': its output goes to zero until cleared."""

    outputs = {"flow": Out(Scalar)}
    accepts_faults = ("stuck_off",)
    io_schedule = FixedRate(1.0)

    def __init__(self, name):
        super().__init__(name)
        self.stuck = False

    def on_fault(self, fault, t_ns):
        self.stuck = not fault.clear

    def update_flow_outs(self, t):
        self.write("flow", Scalar(value=0.0 if self.stuck else 1.0))


def test_faults_are_bus_messages_checked_when_scheduled():
    from hopsim.schemas import Fault

    rec = MemoryRecorder()
    sim = Simulation(recorder=rec)
    sim.add_island("a")
    sim.add_model(Valve("valve"), "a", ties={"flow": "a/flow"})
    sim.schedule_fault(Fault(target="valve", kind="stuck_off"), 1.5)
    sim.schedule_fault(Fault(target="valve", kind="stuck_off", clear=True), 3.0)
    with pytest.raises(ValueError, match=r"unknown target 'pump'.*valve"):
        sim.schedule_fault(Fault(target="pump", kind="stuck_off"), 2.0)
    with pytest.raises(ValueError, match=r"does not accept fault 'stuck_on'.*stuck_off"):
        sim.schedule_fault(Fault(target="valve", kind="stuck_on"), 2.0)
    sim.advance_to(4.0)
    flows = [(e.t_ns, e.payload.value) for e in rec.envelopes if e.topic == "a/flow"]
    # the fault is applied at its instant and the output refreshed there
    assert flows == [(0, 1.0), (S, 1.0), (S + S // 2, 0.0), (2 * S, 0.0), (3 * S, 1.0), (4 * S, 1.0)]
    faults = [e for e in rec.envelopes if e.topic == "faults/valve"]
    assert [(e.t_ns, e.payload.clear) for e in faults] == [(S + S // 2, False), (3 * S, True)]


class TwoOutputs(Model):
    """Writes both outputs every second and notes, each time, which ones it was told are read."""

    io_schedule = FixedRate(1.0)
    outputs = {"read": Out(Scalar, queue=True), "ignored": Out(Scalar)}

    def __init__(self, name):
        super().__init__(name)
        self.wanted_seen = []

    def update_flow_outs(self, t):
        self.wanted_seen.append((self.wanted("read"), self.wanted("ignored")))
        self.write("read", Scalar(value=1.0))
        self.write("ignored", Scalar(value=2.0))


def _two_outputs(recorder=None):
    sim = Simulation(recorder=recorder, record_kernel_events=False)
    sim.add_island("a")
    src = sim.add_model(TwoOutputs("src"), "a", ties={"read": "a/read", "ignored": "a/ignored"})
    sink = sim.add_model(Collector("sink"), "a", ties={"q": "a/read"})
    return sim, src, sink


def test_an_output_nobody_reads_is_not_published_unless_recorded():
    sim, src, sink = _two_outputs()
    assert src.wanted("ignored")  # unknown before the start: assume read
    sim.advance_to(2.0)
    assert src.wanted_seen == [(True, False)] * 3
    assert sim.stats()["published"] == 3  # only the read output's three messages
    assert sink.got == [[1.0], [1.0]]  # what it reads still arrives

    rec = MemoryRecorder()
    sim, src, _ = _two_outputs(rec)
    sim.advance_to(2.0)
    assert src.wanted_seen == [(True, True)] * 3
    assert [e.topic for e in rec.envelopes].count("a/ignored") == 3


def test_a_recorder_attached_during_the_run_gets_every_output_from_then_on():
    sim, src, _ = _two_outputs()
    sim.advance_to(1.0)
    sim.recorder = rec = MemoryRecorder()
    sim.advance_to(2.0)
    assert src.wanted_seen == [(True, False), (True, False), (True, True)]
    assert [e.topic for e in rec.envelopes if e.topic.startswith("a/")] == ["a/read", "a/ignored"]


class Level(Model):
    """Writes a held level at 4 Hz, ``levels[k]`` at its k-th step, on a signal published on change
    (``on_change``) or at every write."""

    io_schedule = FixedRate(4.0)

    def __init__(self, name, levels, on_change):
        self.outputs = {"y": Out(Scalar, on_change=on_change)}
        super().__init__(name)
        self.levels, self.k = list(levels), 0

    def update_flow_outs(self, t):
        self.write("y", Scalar(value=self.levels[min(self.k, len(self.levels) - 1)], unit="N"))
        self.k += 1


class Holder(Model):
    """Reads its input at 4 Hz, a quarter period after the level: the value held, the news taken."""

    inputs = {"u": In(Scalar)}
    io_schedule = FixedRate(4.0, phase_s=0.125)

    def __init__(self, name):
        super().__init__(name)
        self.held, self.news = [], []

    def end_io_step(self, t0, t1):
        self.held.append(self.read("u").value)
        taken = self.take("u")
        self.news.append(None if taken is None else taken.value)


def test_an_on_change_signal_publishes_what_changes_and_its_subscribers_hold_the_same_values():
    """A repeat (the same bytes: 0.0 after -0.0 is news, the same NaN again is not) publishes
    nothing; the subscriber reads the same held values as with every write published, and takes
    only the changes as news."""
    nan = float("nan")
    levels = [0.0, 0.0, 2.0, 2.0, 2.0, -0.0, 0.0, nan, nan, 1.0, 1.0]
    runs = {}
    for on_change in (True, False):
        recorder = MemoryRecorder()
        sim = Simulation(recorder=recorder)
        sim.add_island("a")
        source = sim.add_model(Level("level", levels, on_change), "a", ties={"y": "a/y"})
        holder = sim.add_model(Holder("holder"), "a", ties={"u": "a/y"})
        sim.advance_to(2.9)
        recorder.flush()
        runs[on_change] = ([(e.t_ns, e.payload.value) for e in recorder.envelopes], holder, source)
    published, holder, source = runs[True]
    everything, every_holder, _ = runs[False]
    assert len(everything) == 12  # 0 to 2.75 s
    assert [t for t, _ in published] == [0, S // 2, 5 * S // 4, 3 * S // 2, 7 * S // 4, 9 * S // 4]
    assert repr([v for _, v in published]) == repr([0.0, 2.0, -0.0, 0.0, nan, 1.0])
    assert repr(holder.held) == repr(every_holder.held)  # the same held values at every read
    assert repr([n for n in holder.news if n is not None]) == repr([v for _, v in published])
    assert source.outputs_at(3 * S)["y"].value == 1.0  # analysis sees every output, repeat or not
    with pytest.raises(ValueError, match="on_change is for signals"):
        Out(Scalar, queue=True, on_change=True)


def test_an_on_change_port_takes_the_message_last_written_again_as_a_repeat():
    """The message object last written on an on_change port, written again while the port's
    published bytes are still its own, is a repeat without being serialized again
    (:class:`hopsim.kernel.model.LastWritten`); an equal message of another object is compared
    by its bytes; after a restore (other published bytes, the memo forgotten) the bytes decide
    again. The memo is no part of the snapshot."""
    from hopsim.kernel.model import ModelContext

    model = Level("level", [], on_change=True)
    model.bind(ModelContext("level", "a", 0, {}))
    a, b = Scalar(value=1.0, unit="N"), Scalar(value=2.0, unit="N")

    def published(*messages):
        model._outbox, model._may_write = [], True
        for msg in messages:
            model.write("y", msg)
        model._may_write = False
        return [msg for _, msg in model._outbox]

    assert published(a, a, b, b, a, Scalar(value=1.0, unit="N"), b, b) == [a, b, a, b]
    snap = model.snapshot()  # b's bytes published
    assert "_last_written" not in model.snapshot_view()[0]
    assert published(a, a) == [a]
    model.restore(snap)  # b's bytes published again
    assert published(b, a, a, b) == [a, b]


def test_an_on_change_port_serializes_deterministically_only_a_message_type_with_maps():
    """Only map fields make the deterministic serialization (entries sorted by key) differ from the
    default one, which the on_change comparison may then use: RunMetadata holds a map
    (``versions``), a Scalar, a Wrench or a KernelEvent none."""
    from hopsim.schemas import KernelEvent, RunMetadata, Wrench

    assert Out(RunMetadata).has_maps
    assert not Out(Scalar).has_maps and not Out(Wrench).has_maps and not Out(KernelEvent).has_maps
    keys = [f"k{i}" for i in range(40)]
    one = RunMetadata(versions={k: "1" for k in keys})
    other = RunMetadata(versions={k: "1" for k in reversed(keys)})
    assert one.SerializeToString(deterministic=True) == other.SerializeToString(deterministic=True)
    w = Wrench(body="b", frame=Wrench.BODY)
    w.force.x, w.torque.z = -0.0, 2.5
    assert w.SerializeToString() == w.SerializeToString(deterministic=True)


def test_an_on_change_value_that_nobody_read_is_published_to_a_recorder_attached_later():
    """What counts as published is what reached the bus: a held value written while nothing read
    the port is published again once a recorder reads it."""
    sim = Simulation()
    sim.add_island("a")
    sim.add_model(Level("level", [3.0], on_change=True), "a", ties={"y": "a/y"})
    sim.advance_to(1.0)
    sim.recorder = recorder = MemoryRecorder()
    sim.advance_to(2.0)
    recorder.flush()
    published = [(e.t_ns, e.payload.value) for e in recorder.envelopes if e.topic == "a/y"]
    assert len(published) == 1 and published[0][0] >= S and published[0][1] == 3.0


@pytest.mark.parametrize(
    "name, overrides, duration",
    [
        (
            "formation",
            {
                "n_vehicles": 8,
                "layout": "lattice",
                "radio_loss": 0.3,
                "faults": [{"t_s": 4.5, "target": "v3_thr", "kind": "thrust_scale", "value": 0.5}],
            },
            12.0,
        ),
        ("orbit_formation", {"n_vehicles": 3}, 200.0),
        # the SPHERES thrusters' memos (hopsim.kernel.Memo) fill less when nothing reads their valve
        # states: they are not part of the snapshots
        ("leader_follower", {}, 10.0),
    ],
)
def test_a_run_that_records_nothing_ends_where_the_recorded_run_ends(name, overrides, duration):
    """Without a recorder, a zero-latency message that only its publisher's home island reads is
    handed over without an envelope, and outputs nobody reads are not built: the run ends where
    the recorded run ends all the same, bit for bit, the models' snapshots included."""
    from hopsim.scenarios.runner import run_scenario, state_hash

    bare = run_scenario(name, overrides, duration_s=duration, keep_sim=True)
    recorded = run_scenario(name, overrides, duration_s=duration, keep_stream=True)
    assert bare.outcome == recorded.outcome
    for island in bare.sim.islands:
        assert bare.sim.islands[island].state.tobytes() == recorded.sim.islands[island].state.tobytes()
    assert state_hash(bare.sim) == state_hash(recorded.sim)
    assert 0 < bare.sim.stats()["published"] < recorded.message_count  # the unread outputs went unbuilt
