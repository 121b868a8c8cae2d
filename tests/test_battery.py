"""Dshell's Battery flow model: power integrated per I/O step, clamped to [0, total]."""

import pytest
from models_for_tests import Source

from hopsim.actors.battery import Battery
from hopsim.kernel import Simulation


def run_battery(source_W, load_W, initial_Wh, efficiency=1.0, seconds=10, alarm_Wh=0.0):
    sim = Simulation()
    sim.add_island("a")
    sim.add_model(Source("src", source_W), "a", ties={"y": "a/src"})
    sim.add_model(Source("load", load_W), "a", ties={"y": "a/load"})
    bat = sim.add_model(
        Battery("battery", 69.1, initial_Wh, efficiency, alarm_Wh),
        "a",
        ties={"source": "a/src", "load": "a/load", "state": "a/battery"},
    )
    levels = []
    sim.add_io_event("watch", "battery", "end", lambda t: None)
    sim.add_model_event(
        "after", "battery", "end_io_step", lambda ev, t0, t1: levels.append(bat.power_level_Wh), before=False
    )
    sim.advance_to(seconds)
    return bat, levels


def test_net_power_is_integrated_per_step():
    _bat, levels = run_battery(source_W=360.0, load_W=0.0, initial_Wh=60.0, efficiency=0.5, seconds=10)
    # 360 W * 0.5 for 1 s = 0.05 Wh per step
    assert levels == pytest.approx([60.0 + 0.05 * k for k in range(1, 11)], abs=1e-12)


def test_clamped_at_full_and_empty():
    _, levels = run_battery(source_W=3600.0, load_W=0.0, initial_Wh=68.0, seconds=5)
    assert levels == pytest.approx([69.0, 69.1, 69.1, 69.1, 69.1], abs=1e-12)
    _bat, levels = run_battery(source_W=0.0, load_W=7200.0, initial_Wh=5.0, seconds=5)
    assert levels == pytest.approx([3.0, 1.0, 0.0, 0.0, 0.0], abs=1e-12)


def test_alarm_below_threshold():
    sim = Simulation()
    sim.add_island("a")
    sim.add_model(Source("load", 3600.0), "a", ties={"y": "a/load"})
    sim.add_model(
        Battery("battery", 69.1, 3.5, alarm_threshold_Wh=2.0),
        "a",
        ties={"load": "a/load", "source": "a/src", "state": "a/battery"},
    )
    from hopsim.kernel import In, Model, NoIo
    from hopsim.schemas import BatteryState

    class Watch(Model):
        inputs = {"b": In(BatteryState)}
        io_schedule = NoIo()
        seen = []

        def end_io_step(self, t0, t1):
            b = self.read("b")
            self.seen.append((round(b.power_level_Wh, 9), b.alarm))

    w = sim.add_model(Watch("watch"), "a", ties={"b": "a/battery"})
    sim.advance_to(3.0)
    assert w.seen == [(3.5, False), (2.5, False), (1.5, True), (0.5, True)]


def test_efficiency_outside_a_fraction_is_rejected_with_the_reason():
    with pytest.raises(ValueError, match=r"1.0 means 100"):
        Battery("b", efficiency=100.0)
