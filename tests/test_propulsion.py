"""Thrusters and their tank: a pulse fires for exactly its on-time (the minimum impulse bit for a
shorter command), the tank loses exactly level * t / (Isp g0) per firing, a dry tank stops the
thrusters, the mass properties interpolate linearly with the fill, and faults stick a thruster on
or off."""
import numpy as np
import pytest

from hopsim.actors.propulsion import G0, FixedThruster, FuelTank, PulsedThruster, ThrottledThruster
from hopsim.bus.recorder import MemoryRecorder
from hopsim.kernel import Simulation
from hopsim.schemas import Fault, Scalar

LEVEL, ISP = 0.5, 70.0


def propulsion(thruster_cls, commands, fuel_kg=0.1, duration_s=6.0, **kw):
    """A tank and one thruster in one island; ``commands`` (t_s, value) sent to the thruster."""
    recorder = MemoryRecorder()
    sim = Simulation(seed=1, recorder=recorder)
    sim.add_island("sc")
    thr = thruster_cls("thr", "sc", LEVEL, ISP, (1, 0, 0), (0, 0.1, 0), **kw)
    port = thr.command_port
    sim.add_model(thr, "sc", ties={port: "sc/thr_cmd", "fuel_remaining": "sc/fuel", "wrench": "sc/thr_wrench",
                                   "flow": "sc/thr_flow"})
    tank = FuelTank("tank", 1, fuel_kg, 0.2, 4.0, cm_empty_B=(0, 0, 0), cm_full_B=(0.02, 0, 0),
                    inertia_empty_B=np.diag([0.02, 0.02, 0.02]), inertia_full_B=np.diag([0.03, 0.025, 0.02]))
    sim.add_model(tank, "sc", ties={"flow0": "sc/thr_flow", "fuel_remaining": "sc/fuel", "mass": "sc/mass"})
    for t, v in commands:
        sim.inject("sc/thr_cmd", Scalar(value=v), t)
    sim.advance_to(duration_s)
    recorder.flush()
    forces = [(e.t_ns, e.payload.force.x, e.payload.torque.z) for e in recorder.envelopes if e.topic == "sc/thr_wrench"]
    return sim, thr, tank, forces


def impulse(forces, t_end_ns):
    """Integral of the published force over time (N s): each value holds until the next."""
    total = 0.0
    for (t0, f, _), (t1, _, _) in zip(forces, forces[1:] + [(t_end_ns, 0.0, 0.0)]):
        total += f * (t1 - t0) / 1e9
    return total


def test_pulses_fire_for_their_on_time_and_the_tank_pays_for_them():
    cmds = [(1.0, 0.25), (2.0, 0.004), (3.0, 5.0), (4.0, 0.0)]       # a pulse, a short one, a long one, none
    sim, thr, tank, forces = propulsion(PulsedThruster, cmds, min_on_time_s=0.01)
    on_time = 0.25 + 0.01 + 1.0                                        # short: raised; long: one step
    assert impulse(forces, 6_000_000_000) == pytest.approx(LEVEL * on_time, rel=1e-12)
    firing = [(t, f) for t, f, _ in forces]
    assert (1_250_000_000, 0.0) in firing and (2_010_000_000, 0.0) in firing and (4_000_000_000, 0.0) in firing
    assert all(tz == pytest.approx(-0.1 * f) for _, f, tz in forces)   # r x F about the CM: (0, 0.1, 0) x (F, 0, 0)
    assert tank.x[0] == pytest.approx(0.1 - LEVEL * on_time / (ISP * G0), rel=1e-12)


def test_mass_properties_interpolate_with_the_fill_and_a_dry_tank_stops_thrust():
    tank = FuelTank("t", 1, 0.05, 0.2, 4.0, cm_empty_B=(0, 0, 0), cm_full_B=(0.02, 0, 0),
                    inertia_empty_B=np.diag([0.02, 0.02, 0.02]), inertia_full_B=np.diag([0.03, 0.025, 0.02]))
    mass, cm, inertia = tank.mass_properties(0.05)
    assert mass == 4.05 and np.allclose(cm, [0.005, 0, 0]) and np.allclose(np.diag(inertia), [0.0225, 0.02125, 0.02])
    # fuel for 0.5 s of firing; the command holds from t = 1 s: the tank says dry at its next output
    sim, thr, tank, forces = propulsion(FixedThruster, [(0.5, 1.0)], fuel_kg=LEVEL * 0.5 / (ISP * G0))
    assert tank.x[0] < 0                                              # it ran dry inside the step
    assert impulse(forces, 6_000_000_000) == pytest.approx(LEVEL * 1.0)   # the step it fired in, then none


def test_throttle_and_faults():
    sim, thr, tank, forces = propulsion(ThrottledThruster, [(1.0, 0.5)], duration_s=2.0, min_level_N=0.1)
    assert max(f for _, f, _ in forces) == pytest.approx(0.1 + 0.5 * (LEVEL - 0.1))
    recorder = MemoryRecorder()
    sim = Simulation(seed=1, recorder=recorder)
    sim.add_island("sc")
    sim.add_model(FixedThruster("thr", "sc", LEVEL, ISP, (0, 0, 1)), "sc",
                  ties={"on": "sc/on", "fuel_remaining": "sc/fuel", "wrench": "sc/w", "flow": "sc/flow"})
    sim.schedule_fault(Fault(target="thr", kind="thruster_stuck_on"), 2.0)
    sim.schedule_fault(Fault(target="thr", kind="thruster_stuck_on", clear=True), 3.0)
    sim.advance_to(5.0)
    recorder.flush()
    pushes = [(e.t_ns / 1e9, e.payload.force.z) for e in recorder.envelopes if e.topic == "sc/w"]
    assert impulse([(round(t * 1e9), f, 0.0) for t, f in pushes], 5_000_000_000) == pytest.approx(LEVEL * 1.0)
    with pytest.raises(ValueError, match="level_N must be a positive number"):
        FixedThruster("bad", "sc", float("inf"), ISP, (1, 0, 0))
