"""Islands have independent hop timelines; messages between them take at least 1 ns."""

import numpy as np
from models_for_tests import FallingBody, IoRecorder, QueueSource

from hopsim.kernel import FixedRate, In, Model, NoIo, Simulation, Tie
from hopsim.schemas import Scalar

S = 1_000_000_000


def build(with_b: bool):
    sim = Simulation()
    a = sim.add_island("A", n_integration_steps=2)
    a.trace_steps = True
    sim.add_model(IoRecorder("ctl_a", FixedRate(3.0)), "A")
    body_a = sim.add_model(FallingBody("body_a", h0=1e4, v0=5.0), "A")
    if with_b:
        b = sim.add_island("B", n_integration_steps=2)
        b.trace_steps = True
        sim.add_model(IoRecorder("ctl_b", FixedRate(7.0)), "B")
        sim.add_model(FallingBody("body_b", h0=1e4, v0=-1.0), "B")
    return sim, body_a


def test_integration_steps_are_not_split_by_another_islands_barriers():
    sim, _body_a = build(with_b=True)
    sim.advance_to(3.0)
    a_steps = sim.islands["A"].step_log
    b_steps = sim.islands["B"].step_log
    a_barriers = {round(k * S / 3) for k in range(10)}
    b_barriers = {round(k * S / 7) for k in range(22)}
    a_hop_ends = {t1 for _, t1 in sim.islands["A"].hop_log or []} or {b for _, b in a_steps[1::2]}
    assert a_hop_ends <= a_barriers
    assert {b for _, b in b_steps[1::2]} <= b_barriers
    # every A step is exactly half a 1/3 s hop: none was cut at a 1/7 s barrier of B
    assert all(b - a in (S // 6, S // 6 + 1) for a, b in a_steps)
    assert len(a_steps) == 2 * 9


def test_an_islands_result_does_not_depend_on_other_islands():
    sim1, body1 = build(with_b=False)
    sim2, body2 = build(with_b=True)
    sim1.advance_to(3.0)
    sim2.advance_to(3.0)
    assert sim1.islands["A"].step_log == sim2.islands["A"].step_log
    assert np.array_equal(body1.x, body2.x)  # bit for bit


class Listener(Model):
    inputs = {"y": In(Scalar, queue=True)}
    io_schedule = NoIo()

    def __init__(self, name):
        super().__init__(name)
        self.arrivals = []

    def end_io_step(self, t0, t1):
        self.arrivals += [(t1, m.value) for m in self.drain("y")]


def test_messages_cross_islands_after_their_latency_and_at_least_one_ns():
    sim = Simulation()
    sim.add_island("src")
    sim.add_island("near")
    sim.add_island("far")
    sim.add_model(QueueSource("tick", lambda t: t / S, rate_hz=2.0), "src", ties={"y": "src/ticks"})
    sim.add_model(
        QueueSource("radio", lambda t: t / S, rate_hz=2.0), "src", ties={"y": Tie("src/radio", latency_s=0.125)}
    )

    near = sim.add_model(Listener("near_l"), "near", ties={"y": "src/ticks"})
    far = sim.add_model(Listener("far_l"), "far", ties={"y": "src/radio"})
    sim.advance_to(1.0)
    assert near.arrivals == [(0 + 1, 0.0), (S // 2 + 1, 0.5)]
    assert far.arrivals == [(S // 8, 0.0), (S // 2 + S // 8, 0.5)]
