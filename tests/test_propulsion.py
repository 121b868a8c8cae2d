"""Thrusters and their tank: a pulse fires for exactly its on-time (the minimum impulse bit for a
shorter command), the tank loses exactly level * t / (Isp g0) per firing, a dry tank stops the
thrusters, the mass properties interpolate linearly with the fill, and faults stick a thruster on
or off; a blowdown thruster follows the closed-form blowdown law, and a manifold drains its tank at
the sum of its thrusters' flows."""

import itertools
import math

import numpy as np
import pytest
from scipy.integrate import quad

from hopsim.actors.propulsion import (
    G0,
    BlowdownThruster,
    FixedThruster,
    FuelManifold,
    FuelTank,
    PulsedThruster,
    ThrottledThruster,
)
from hopsim.bus.recorder import MemoryRecorder
from hopsim.kernel import Simulation
from hopsim.schemas import Fault, Scalar, Wrench

LEVEL, ISP = 0.5, 70.0


def propulsion(thruster_cls, commands, fuel_kg=0.1, duration_s=6.0, **kw):
    """A tank and one thruster in one island; ``commands`` (t_s, value) sent to the thruster."""
    recorder = MemoryRecorder()
    sim = Simulation(seed=1, recorder=recorder)
    sim.add_island("sc")
    thr = thruster_cls("thr", "sc", LEVEL, ISP, (1, 0, 0), (0, 0.1, 0), **kw)
    port = thr.command_port
    sim.add_model(
        thr,
        "sc",
        ties={port: "sc/thr_cmd", "fuel_remaining": "sc/fuel", "wrench": "sc/thr_wrench", "flow": "sc/thr_flow"},
    )
    tank = FuelTank(
        "tank",
        1,
        fuel_kg,
        0.2,
        4.0,
        cm_empty_B=(0, 0, 0),
        cm_full_B=(0.02, 0, 0),
        inertia_empty_B=np.diag([0.02, 0.02, 0.02]),
        inertia_full_B=np.diag([0.03, 0.025, 0.02]),
    )
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
    for (t0, f, _), (t1, _, _) in zip(forces, [*forces[1:], (t_end_ns, 0.0, 0.0)]):
        total += f * (t1 - t0) / 1e9
    return total


def test_pulses_fire_for_their_on_time_and_the_tank_pays_for_them():
    cmds = [(1.0, 0.25), (2.0, 0.004), (3.0, 5.0), (4.0, 0.0)]  # a pulse, a short one, a long one, none
    _sim, _thr, tank, forces = propulsion(PulsedThruster, cmds, min_on_time_s=0.01)
    on_time = 0.25 + 0.01 + 1.0  # short: raised; long: one step
    assert impulse(forces, 6_000_000_000) == pytest.approx(LEVEL * on_time, rel=1e-12)
    firing = [(t, f) for t, f, _ in forces]
    assert (1_250_000_000, 0.0) in firing and (2_010_000_000, 0.0) in firing and (4_000_000_000, 0.0) in firing
    assert all(tz == pytest.approx(-0.1 * f) for _, f, tz in forces)  # r x F about the CM: (0, 0.1, 0) x (F, 0, 0)
    assert tank.x[0] == pytest.approx(0.1 - LEVEL * on_time / (ISP * G0), rel=1e-12)


def test_a_held_pulse_command_fires_its_on_time_in_every_step():
    """A command holds until the next one: 0.25 s sent once at 1 s fires 0.25 s of each 1 s step
    from 1 s to 5 s (the firing's end is asked for at every command instant, not only when a
    command arrives), then 0.1 s per step from 5 s."""
    _sim, _thr, tank, forces = propulsion(PulsedThruster, [(1.0, 0.25), (5.0, 0.1)], duration_s=7.0)
    on_time = 4 * 0.25 + 2 * 0.1
    assert impulse(forces, 7_000_000_000) == pytest.approx(LEVEL * on_time, rel=1e-12)
    ends = [t for t, f, _ in forces if f == 0.0 and t % 1_000_000_000]
    assert ends == [1_250_000_000, 2_250_000_000, 3_250_000_000, 4_250_000_000, 5_100_000_000, 6_100_000_000]
    assert tank.x[0] == pytest.approx(0.1 - LEVEL * on_time / (ISP * G0), rel=1e-12)


class CountingPulsedThruster(PulsedThruster):
    """A pulsed thruster that notes the instants of its updates (ns)."""

    def __init__(self, *args, **kw):
        super().__init__(*args, **kw)
        self.updates = []

    def update_flow_outs(self, t_ns):
        self.updates.append(t_ns)
        super().update_flow_outs(t_ns)


def test_a_thruster_holding_a_zero_command_sleeps_until_the_next_command():
    """0.25 s pulses held from 1 s, off from 3 s, on again from 6 s: the thruster fires in the
    steps from 1 s, 2 s, 6 s and 7 s and is not updated at 4 s and 5 s, where its held command
    fires nothing (a command triggers a step when it comes)."""
    _sim, thr, _tank, forces = propulsion(
        CountingPulsedThruster, [(1.0, 0.25), (3.0, 0.0), (6.0, 0.25)], duration_s=8.0
    )
    assert impulse(forces, 8_000_000_000) == pytest.approx(LEVEL * 4 * 0.25, rel=1e-12)
    S = 1_000_000_000
    assert [t for t, f, _ in forces if f > 0.0] == [S, 2 * S, 6 * S, 7 * S, 8 * S]  # the run ends at 8 s
    assert 4 * S not in thr.updates and 5 * S not in thr.updates
    assert {S, 2 * S, 6 * S, 7 * S, 7 * S + S // 4} <= set(thr.updates)


def test_mass_properties_interpolate_with_the_fill_and_a_dry_tank_stops_thrust():
    tank = FuelTank(
        "t",
        1,
        0.05,
        0.2,
        4.0,
        cm_empty_B=(0, 0, 0),
        cm_full_B=(0.02, 0, 0),
        inertia_empty_B=np.diag([0.02, 0.02, 0.02]),
        inertia_full_B=np.diag([0.03, 0.025, 0.02]),
    )
    mass, cm, inertia = tank.mass_properties(0.05)
    assert mass == 4.05 and np.allclose(cm, [0.005, 0, 0]) and np.allclose(np.diag(inertia), [0.0225, 0.02125, 0.02])
    # fuel for 0.5 s of firing; the command holds from t = 1 s: the tank says dry at its next output
    _sim, _thr, tank, forces = propulsion(FixedThruster, [(0.5, 1.0)], fuel_kg=LEVEL * 0.5 / (ISP * G0))
    assert tank.x[0] < 0  # it ran dry inside the step
    assert impulse(forces, 6_000_000_000) == pytest.approx(LEVEL * 1.0)  # the step it fired in, then none


def test_throttle_and_faults():
    sim, _thr, _tank, forces = propulsion(ThrottledThruster, [(1.0, 0.5)], duration_s=2.0, min_level_N=0.1)
    assert max(f for _, f, _ in forces) == pytest.approx(0.1 + 0.5 * (LEVEL - 0.1))
    recorder = MemoryRecorder()
    sim = Simulation(seed=1, recorder=recorder)
    sim.add_island("sc")
    sim.add_model(
        FixedThruster("thr", "sc", LEVEL, ISP, (0, 0, 1)),
        "sc",
        ties={"on": "sc/on", "fuel_remaining": "sc/fuel", "wrench": "sc/w", "flow": "sc/flow"},
    )
    sim.schedule_fault(Fault(target="thr", kind="thruster_stuck_on"), 2.0)
    sim.schedule_fault(Fault(target="thr", kind="thruster_stuck_on", clear=True), 3.0)
    sim.advance_to(5.0)
    recorder.flush()
    pushes = [(e.t_ns / 1e9, e.payload.force.z) for e in recorder.envelopes if e.topic == "sc/w"]
    assert impulse([(round(t * 1e9), f, 0.0) for t, f in pushes], 5_000_000_000) == pytest.approx(LEVEL * 1.0)
    with pytest.raises(ValueError, match="level_N must be a positive number"):
        FixedThruster("bad", "sc", float("inf"), ISP, (1, 0, 0))


def blowdown_run(tank_fuel_kg, duration_s, commands=(), faults=(), period_s=1.0, level_N=LEVEL, isp_s=ISP, **kw):
    """A blowdown thruster and its tank (publishing at the thruster's rate); the forces by time (ns)."""
    recorder = MemoryRecorder()
    sim = Simulation(seed=1, recorder=recorder)
    sim.add_island("sc")
    thr = BlowdownThruster("thr", "sc", level_N, isp_s, (1, 0, 0), period_s=period_s, **kw)
    sim.add_model(thr, "sc", ties={"on": "sc/on", "fuel_remaining": "sc/fuel", "wrench": "sc/w", "flow": "sc/flow"})
    tank = FuelTank("tank", 1, tank_fuel_kg, kw["load_kg"], 4.0, rate_hz=1.0 / period_s)
    sim.add_model(tank, "sc", ties={"flow0": "sc/flow", "fuel_remaining": "sc/fuel", "mass": "sc/mass"})
    for t, v in commands:
        sim.inject("sc/on", Scalar(value=v), t)
    for t, fault in faults:
        sim.schedule_fault(fault, t)
    sim.advance_to(duration_s)
    recorder.flush()
    force = {e.t_ns: e.payload.force.x for e in recorder.envelopes if e.topic == "sc/w"}  # the last at each t
    return tank, force


@pytest.mark.parametrize("gamma, a, b", [(1.0, 1.0, 0.0), (1.4, 0.9, 0.05)])
def test_blowdown_thrust_after_a_known_propellant_use_is_the_closed_form(gamma, a, b):
    """Load 0.2 kg, 0.1 L of gas, rho = 1000 kg/m^3: with 0.1 kg used the gas fills 0.2 L, so
    p / p0 = (1/2)^gamma; F = F0 (p/p0)^a, Isp = Isp0 (p/p0)^b; a 1 s firing then uses F / (Isp g0)."""
    blowdown = dict(
        load_kg=0.2, gas_volume_m3=1e-4, propellant_density_kgpm3=1000.0, gamma=gamma, thrust_exponent=a, isp_exponent=b
    )

    def thrust_isp(used_kg):
        ratio = (1e-4 / (1e-4 + used_kg / 1000.0)) ** gamma
        return LEVEL * ratio**a, ISP * ratio**b

    tank, force = blowdown_run(0.1, 5.0, commands=[(1.0, 1.0), (2.0, 0.0), (3.0, 1.0), (4.0, 0.0)], **blowdown)
    f1, isp1 = thrust_isp(0.1)
    used_2 = 0.1 + f1 / (isp1 * G0) * 1.0
    f2, isp2 = thrust_isp(used_2)
    assert force[1_000_000_000] == pytest.approx(f1, rel=1e-12)
    assert force[3_000_000_000] == pytest.approx(f2, rel=1e-12)
    assert force[2_000_000_000] == force[4_000_000_000] == 0.0
    assert tank.x[0] == pytest.approx(0.2 - used_2 - f2 / (isp2 * G0) * 1.0, rel=1e-12)
    # stuck on (the thrusters' fault), it fires at the blowdown level, not level_N
    tank, force = blowdown_run(
        0.1,
        3.0,
        faults=[
            (1.0, Fault(target="thr", kind="thruster_stuck_on")),
            (2.0, Fault(target="thr", kind="thruster_stuck_on", clear=True)),
        ],
        **blowdown,
    )
    assert force[1_000_000_000] == pytest.approx(f1, rel=1e-12) and force[2_000_000_000] == 0.0


def test_a_blowdown_burn_to_depletion_gives_the_integral_of_the_closed_form():
    """F0 = 1 N, Isp0 = 200 s, 0.05 kg of hydrazine (1004 kg/m^3) with as much gas as liquid
    (blowdown ratio 2), isothermal, F ~ p, Isp ~ p^0.1. Per kilogram the impulse is Isp g0, so the
    total impulse is g0 int_0^m0 Isp(m) dm, and the burn lasts int_0^m0 Isp(m) g0 / F(m) dm. The
    thruster fires the step in which the tank runs dry whole (Dshell), so the impulse may exceed
    the integral by at most one step at the final thrust; the burn's end is within one step."""
    f0, isp0, load, rho, step = 1.0, 200.0, 0.05, 1004.0, 0.5
    v0 = load / rho

    def ratio(m_used):
        return v0 / (v0 + m_used / rho)

    impulse_closed = quad(lambda m: G0 * isp0 * ratio(m) ** 0.1, 0.0, load)[0]
    burn_closed = quad(lambda m: G0 * isp0 * ratio(m) ** 0.1 / (f0 * ratio(m)), 0.0, load)[0]
    _tank, force = blowdown_run(
        load,
        200.0,
        commands=[(1.0, 1.0)],
        period_s=step,
        level_N=f0,
        isp_s=isp0,
        load_kg=load,
        gas_volume_m3=v0,
        propellant_density_kgpm3=rho,
        isp_exponent=0.1,
    )
    times = sorted(force)
    total = sum(force[t0] * (t1 - t0) / 1e9 for t0, t1 in zip(times, [*times[1:], 200000000000]))
    assert 0.0 <= total - impulse_closed <= f0 * ratio(load) * step
    end = min(t for t in times if t > 1_000_000_000 and force[t] == 0.0) / 1e9
    assert abs((end - 1.0) - burn_closed) <= step


def manifold_run(levels, isps, fuel_kg, duration_s, commands=()):
    """Thrusters on one manifold, which feeds one tank; they read the tank's fuel; the tank and
    the first thruster's forces by time (ns)."""
    recorder = MemoryRecorder()
    sim = Simulation(seed=1, recorder=recorder)
    sim.add_island("sc")
    for i, (level, isp) in enumerate(zip(levels, isps)):
        sim.add_model(
            FixedThruster(f"thr{i}", "sc", level, isp, (1, 0, 0)),
            "sc",
            ties={"on": "sc/on", "fuel_remaining": "sc/fuel", "wrench": f"sc/w{i}", "flow": f"sc/flow{i}"},
        )
    sim.add_model(
        FuelManifold("manifold", len(levels)),
        "sc",
        ties={**{f"flow{i}": f"sc/flow{i}" for i in range(len(levels))}, "tank_flow0": "sc/flow"},
    )
    tank = FuelTank("tank", 1, fuel_kg, 0.2, 4.0)
    sim.add_model(tank, "sc", ties={"flow0": "sc/flow", "fuel_remaining": "sc/fuel", "mass": "sc/mass"})
    for t, v in commands:
        sim.inject("sc/on", Scalar(value=v), t)
    sim.advance_to(duration_s)
    recorder.flush()
    return tank, HeldSignal({e.t_ns: e.payload.force.x for e in recorder.envelopes if e.topic == "sc/w0"})


class HeldSignal(dict):
    """A signal's recorded values by publication time (ns), read at any time as the value held
    then (a thruster publishes its force when it changes)."""

    def __getitem__(self, t_ns: int):
        return super().__getitem__(max(t for t in self if t <= t_ns))


def test_a_manifold_drains_its_tank_at_the_sum_of_its_thrusters_flows():
    levels, isps = (0.5, 0.3), (70.0, 60.0)
    tank, _ = manifold_run(levels, isps, 0.1, 5.0, commands=[(1.0, 1.0)])  # both fire from 1 s to 5 s
    mdot = levels[0] / (isps[0] * G0) + levels[1] / (isps[1] * G0)
    assert tank.x[0] == pytest.approx(0.1 - mdot * 4.0, rel=1e-9)
    # fuel for 2.5 s of both: the tank says dry at its next publication, 4 s, where they stop
    _, force = manifold_run(levels, isps, mdot * 2.5, 6.0, commands=[(1.0, 1.0)])
    assert force[3_000_000_000] == levels[0] and force[4_000_000_000] == force[6_000_000_000] == 0.0


def two_tank_run(fuel_kg, weights, levels, isp_s, duration_s, fire_at_s=1.0):
    """Thrusters of ``levels`` (N, all ``isp_s``) on a manifold over tanks holding ``fuel_kg``
    (kg), drawn by ``weights``; the thrusters read the manifold's total (the loop broken). Returns
    the tanks and the recorded (t_ns, topic) -> value of the tanks' fuel and the manifold's total."""
    recorder = MemoryRecorder()
    sim = Simulation(seed=1, recorder=recorder)
    sim.add_island("sc")
    n, m = len(levels), len(fuel_kg)
    for i, level in enumerate(levels):
        sim.add_model(
            FixedThruster(f"thr{i}", "sc", level, isp_s, (1, 0, 0)),
            "sc",
            ties={"on": "sc/on", "fuel_remaining": "sc/fuel", "wrench": f"sc/w{i}", "flow": f"sc/flow{i}"},
        )
    sim.add_model(
        FuelManifold("manifold", n, weights),
        "sc",
        ties={
            **{f"flow{i}": f"sc/flow{i}" for i in range(n)},
            **{f"remaining{j}": f"sc/tank{j}/fuel" for j in range(m)},
            **{f"tank_flow{j}": f"sc/tank{j}/flow" for j in range(m)},
            "fuel_remaining": "sc/fuel",
        },
    )
    sim.add_break("sc/fuel")
    tanks = []
    for j, fuel in enumerate(fuel_kg):
        tanks.append(
            sim.add_model(
                FuelTank(f"tank{j}", 1, fuel, 1.0, 4.0),
                "sc",
                ties={"flow0": f"sc/tank{j}/flow", "fuel_remaining": f"sc/tank{j}/fuel", "mass": f"sc/tank{j}/mass"},
            )
        )
    sim.inject("sc/on", Scalar(value=1.0), fire_at_s)
    sim.advance_to(duration_s)
    recorder.flush()
    values = {
        (e.t_ns, e.topic): e.payload.value
        for e in recorder.envelopes
        if e.topic in ("sc/fuel",) or e.topic.endswith("/fuel")
    }
    return tanks, values


def test_a_manifold_over_two_tanks_draws_by_its_weights_and_sums_what_is_left():
    """Dshell's regression shape: 2 tanks and 4 thrusters. Each tank drains at the total flow
    times its weight's share; together they lose exactly the thrusters' propellant."""
    levels, isp = (0.5, 0.3, 0.2, 0.4), 65.0
    mdot = sum(level / (isp * G0) for level in levels)
    tanks, values = two_tank_run((0.5, 0.5), (1.0, 3.0), levels, isp, 6.0)
    burn_s = 5.0
    assert tanks[0].x[0] == pytest.approx(0.5 - 0.25 * mdot * burn_s, rel=1e-12)
    assert tanks[1].x[0] == pytest.approx(0.5 - 0.75 * mdot * burn_s, rel=1e-12)
    used = 1.0 - tanks[0].x[0] - tanks[1].x[0]
    assert used == pytest.approx(mdot * burn_s, rel=1e-12)
    t = 4_000_000_000
    assert values[(t, "sc/fuel")] == pytest.approx(
        values[(t, "sc/tank0/fuel")] + values[(t, "sc/tank1/fuel")], rel=1e-15
    )


def test_an_empty_tank_gives_its_share_to_the_others():
    """Tank 0 holds fuel for 1.5 s of its half share; once it says empty (its publication at 3 s:
    tanks publish once a second), tank 1 takes the whole flow."""
    levels, isp = (0.5, 0.5), 70.0
    mdot = sum(level / (isp * G0) for level in levels)
    small = 0.5 * mdot * 1.5
    tanks, values = two_tank_run((small, 0.5), (1.0, 1.0), levels, isp, 8.0)
    assert values[(2_000_000_000, "sc/tank0/fuel")] > 0.0 and values[(3_000_000_000, "sc/tank0/fuel")] == 0.0
    # tank 1: half the flow from 1 s until tank 0's empty publication at 3 s, then all of it to 8 s
    assert tanks[1].x[0] == pytest.approx(0.5 - 0.5 * mdot * 2.0 - mdot * 5.0, rel=1e-12)
    # tank 0 integrated its half share until 3 s, past empty (its outputs clamp at 0; see FuelTank)
    assert tanks[0].x[0] == pytest.approx(small - 0.5 * mdot * 2.0, rel=1e-12) and tanks[0].x[0] < 0.0
    # the thrusters stop only when both are empty: they fire still at 8 s
    assert values[(8_000_000_000, "sc/fuel")] > 0.0


def test_blowdown_and_manifold_parameters_are_checked():
    good = dict(load_kg=0.2, gas_volume_m3=1e-4, propellant_density_kgpm3=1000.0)
    for bad, message in [
        ({"gas_volume_m3": float("nan")}, "gas_volume_m3 must be a positive number"),
        ({"load_kg": 0.0}, "load_kg must be a positive number"),
        ({"propellant_density_kgpm3": float("inf")}, "propellant_density_kgpm3 must be a positive"),
        ({"thrust_exponent": -0.5}, "thrust_exponent must be a finite number >= 0"),
        ({"isp_exponent": float("nan")}, "isp_exponent must be a finite number >= 0"),
        ({"gamma": 0.9}, r"gamma must lie in \[1, 5/3\]"),
    ]:
        with pytest.raises(ValueError, match=message):
            BlowdownThruster("bad", "sc", LEVEL, ISP, (1, 0, 0), **{**good, **bad})
    for n in (0, 1.5, True):
        with pytest.raises(ValueError, match="n_thrusters must be an integer >= 1"):
            FuelManifold("bad", n)
    for weights in ((), (1.0, float("nan")), (1.0, -0.5), (0.0, 0.0), ((1.0, 2.0),)):
        with pytest.raises(ValueError, match="draw_weights must be one finite weight >= 0 per tank"):
            FuelManifold("bad", 2, weights)


def test_a_run_resumed_from_a_checkpoint_publishes_the_thrusters_changes_as_the_uninterrupted_run(tmp_path):
    """Thrusters and tanks publish on change: what each last published is part of its state, so
    a run resumed from a checkpoint publishes (and leaves out) exactly what the uninterrupted run
    does."""
    from hopsim.scenarios.runner import resume_run, run_scenario

    params = {"n_vehicles": 4, "deadband_m": 0.2}  # a tight deadband: firings all along
    # seed 9: two of the 24 thrusters stay silent after the checkpoint (with so tight a deadband
    # most seeds fire them all, and the silent ones are what this test needs)
    full = run_scenario(
        "orbit_formation",
        params,
        seed=9,
        duration_s=300.0,
        keep_stream=True,
        checkpoint_every_s=100.0,
        checkpoint_dir=tmp_path,
        progress=False,
    )
    resumed = resume_run(tmp_path / "orbit_formation_t00000200.000000000.ckpt", keep_stream=True, progress=False)
    after = [e.to_bytes() for e in full.recorder.envelopes if e.t_ns > 200 * 10**9]
    assert resumed.recorder.stream_bytes() == after
    thrusters = {e.topic for e in full.recorder.envelopes if e.topic.endswith("/wrench")}  # each says 0 at first
    firing = {e.topic for e in full.recorder.envelopes if e.t_ns > 200 * 10**9 and e.topic.endswith("/wrench")}
    assert 0 < len(firing) < len(thrusters)  # some fire after the checkpoint; the silent ones publish nothing


def test_the_thrusters_and_tanks_kept_messages_are_what_building_every_message_anew_gives(monkeypatch):
    """A thruster keeps the wrench and flow it built for one (level, Isp), a tank its fuel and mass
    messages for one fill (hopsim.actors.held_messages): the recorded stream and every model's
    final snapshot are those of a run that builds every message anew. Pulses, a held command, a
    thrust scale of -1 (a thruster at rest then pushes -0.0, which is news), a stuck thruster, a
    blowdown thruster whose Isp falls with its tank, and a tank run dry."""
    from hopsim.actors.held_messages import HeldMessages

    def run():
        recorder = MemoryRecorder()
        sim = Simulation(seed=1, recorder=recorder)
        sim.add_island("sc")
        sim.add_model(
            PulsedThruster("pulsed", "sc", LEVEL, ISP, (1, 0, 0), (0, 0.1, 0), min_on_time_s=0.01),
            "sc",
            ties={"on_time": "sc/cmd", "fuel_remaining": "sc/fuel", "wrench": "sc/w0", "flow": "sc/flow0"},
        )
        sim.add_model(
            BlowdownThruster(
                "blowdown",
                "sc",
                1.0,
                200.0,
                (0, 1, 0),
                load_kg=0.05,
                gas_volume_m3=5e-5,
                propellant_density_kgpm3=1004.0,
                isp_exponent=0.1,
            ),
            "sc",
            ties={"on": "sc/on", "fuel_remaining": "sc/fuel", "wrench": "sc/w1", "flow": "sc/flow1"},
        )
        sim.add_model(
            FuelTank("tank", 2, 0.005, 0.05, 4.0, cm_full_B=(0.02, 0, 0), inertia_full_B=np.diag([1.5, 1.25, 1.0])),
            "sc",
            ties={"flow0": "sc/flow0", "flow1": "sc/flow1", "fuel_remaining": "sc/fuel", "mass": "sc/mass"},
        )
        for t, v in [(1.0, 0.25), (2.0, 0.0), (3.0, 0.5), (9.0, 0.0)]:
            sim.inject("sc/cmd", Scalar(value=v), t)
        for t, v in [(1.0, 1.0), (4.0, 0.0), (6.0, 1.0)]:
            sim.inject("sc/on", Scalar(value=v), t)
        sim.schedule_fault(Fault(target="pulsed", kind="thrust_scale", value=-1.0), 2.5)
        sim.schedule_fault(Fault(target="pulsed", kind="thrust_scale", clear=True), 5.0)
        sim.schedule_fault(Fault(target="pulsed", kind="thruster_stuck_on"), 10.0)
        sim.advance_to(14.0)
        recorder.flush()
        stream = [(e.t_ns, e.topic, e.seq, e.payload.SerializeToString()) for e in recorder.envelopes]
        return stream, {name: repr(sim.model(name).snapshot()) for name in ("pulsed", "blowdown", "tank")}

    kept = run()
    monkeypatch.setattr(HeldMessages, "get", lambda self, numbers, build: build(*numbers))
    anew = run()
    assert kept == anew
    published = [p for _, topic, _, p in kept[0] if topic == "sc/w0"]
    assert all(a != b for a, b in itertools.pairwise(published))  # on_change: each one news
    forces = [Wrench.FromString(p).force for p in published]
    signs = {(f.x, math.copysign(1.0, f.x)) for f in forces}
    assert {(0.0, 1.0), (0.0, -1.0), (LEVEL, 1.0), (-LEVEL, -1.0)} <= signs  # 0.0, -0.0 (at rest, scale -1)
    fuel = [Scalar.FromString(p).value for _, topic, _, p in kept[0] if topic == "sc/fuel"]
    assert fuel[-1] == 0.0 and len(fuel) > 5  # ran dry
