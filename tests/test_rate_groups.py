"""Rate groups (``hopsim.kernel.rate_group``): islands on one periodic schedule advanced with one
barrier per instant. An optimization that must not change a single bit of the recorded stream
(DESIGN.md, "Islands, hops and the kernel"): every built-in scenario is run with grouping on and
off, and the two streams compared; islands must really be grouped, stay members for barriers of
their own, leave while they must plan alone (a zero-crossing armed) and join again."""

from __future__ import annotations

import math

import pytest

from hopsim.kernel import Simulation
from hopsim.scenarios.runner import resume_run, run_scenario, state_hash

S = 1_000_000_000

# scenario, overrides, duration (s), whether its islands are grouped at all: the lander and the
# docking scenarios' islands watch zero-crossings or are watched by a contact monitor, and the
# rendezvous' island has its capture condition armed throughout
CASES = [
    ("lander", {}, 10.0, False),
    ("formation", {"n_vehicles": 12}, 20.0, True),
    (
        "formation",
        {
            "n_vehicles": 9,
            "layout": "lattice",
            "radio_loss": 0.3,
            "radio_latency_s": 1.5,
            "faults": [
                {"t_s": 5.5, "target": "v3_thr", "kind": "thrust_scale", "value": 0.5},
                {"t_s": 8.0, "target": "v5_radio", "kind": "radio_loss", "value": 1.0},
            ],
        },
        12.0,
        True,
    ),
    # more members than a barrier takes in one block (rate_group.BARRIER_BLOCK), a fault in the second block
    (
        "formation",
        {
            "n_vehicles": 300,
            "radio_loss": 0.2,
            "faults": [{"t_s": 2.5, "target": "v130_thr", "kind": "thrust_scale", "value": 0.5}],
        },
        5.0,
        True,
    ),
    ("leader_follower", {}, 12.0, True),
    ("cooperative_docking", {}, 10.0, True),
    ("pileup", {"n_vehicles": 12}, 3.0, False),
    ("collision", {}, 3.0, False),
    ("passive_docking", {}, 6.0, False),
    ("deploy_boom", {}, 10.0, True),
    ("orbit_formation", {"n_vehicles": 4}, 300.0, True),
    ("constellation", {}, 180.0, True),
    ("rendezvous", {}, 200.0, False),
]


def member_barriers(result) -> int:
    return sum(g["member_barriers"] for g in result.sim.stats()["rate_groups"].values())


@pytest.mark.parametrize("name, overrides, duration, grouped", CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
def test_rate_groups_change_no_bit_of_the_stream(name, overrides, duration, grouped):
    on = run_scenario(name, overrides, duration_s=duration, keep_stream=True, keep_sim=True)
    off = run_scenario(name, overrides, duration_s=duration, keep_stream=True, keep_sim=True, rate_groups=False)
    assert on.message_count == off.message_count > 0
    assert on.stream_sha256 == off.stream_sha256
    assert state_hash(on.sim) == state_hash(off.sim)
    assert member_barriers(off) == 0
    assert (member_barriers(on) > 0) == grouped


# the scenarios whose grouped hops go through fleet forms: the formation's rigid vehicles, the
# orbiting spacecraft of the orbit formation's chief and of the constellation
FLEETED = {"formation", "orbit_formation", "constellation"}


@pytest.mark.parametrize("name, overrides, duration, grouped", CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
def test_fleet_forms_change_no_bit_of_the_stream(name, overrides, duration, grouped):
    """Every built-in scenario with its rate groups' hops through fleet forms and without (each
    island's scalar hop): the same stream and final state (row blocks off: they would take the
    formation's hops through their own rows)."""
    on = run_scenario(name, overrides, duration_s=duration, keep_stream=True, keep_sim=True, row_blocks=False)
    off = run_scenario(
        name, overrides, duration_s=duration, keep_stream=True, keep_sim=True, fleets=False, row_blocks=False
    )
    assert on.message_count == off.message_count > 0
    assert on.stream_sha256 == off.stream_sha256
    assert state_hash(on.sim) == state_hash(off.sim)
    assert off.sim.stats()["fleets"]["hops"] == 0
    assert (on.sim.stats()["fleets"]["hops"] > 0) == (name in FLEETED)


def test_the_formation_is_one_group_with_one_barrier_per_vehicle_and_instant():
    result = run_scenario(
        "formation", {"n_vehicles": 20}, duration_s=30.0, keep_stream=True, keep_sim=True, row_blocks=False
    )  # (a row block keeps its members when the run returns)
    (stats,) = result.sim.stats()["rate_groups"].values()
    # every vehicle joins at its first barrier and leaves when the run returns; t = 1 .. 30 s
    assert stats["instants"] == 30 and stats["member_barriers"] == 20 * 30
    assert stats["joins"] == stats["leaves"] == 20


def test_an_island_stays_a_member_for_a_barrier_of_its_own():
    """A fault delivered between two control instants is a barrier of the target's island alone:
    the island stays a member of the group for it (the group wakes at 4.5 s for v2 only), and the
    stream is the ungrouped run's."""

    def run(faults):
        return run_scenario(
            "formation", {"n_vehicles": 6, "faults": faults}, duration_s=10.0, keep_stream=True, keep_sim=True
        )

    plain = run([])
    faulted = run([{"t_s": 4.5, "target": "v2_thr", "kind": "thrust_scale", "value": 0.5}])
    (quiet,) = plain.sim.stats()["rate_groups"].values()
    (stats,) = faulted.sim.stats()["rate_groups"].values()
    assert stats["joins"] == quiet["joins"] and stats["leaves"] == quiet["leaves"]
    assert stats["member_barriers"] == quiet["member_barriers"] + 1 and stats["instants"] == quiet["instants"] + 1
    assert faulted.sim.stats()["islands"]["v2"]["barriers"] == plain.sim.stats()["islands"]["v2"]["barriers"] + 1
    off = run_scenario(
        "formation",
        {"n_vehicles": 6, "faults": [{"t_s": 4.5, "target": "v2_thr", "kind": "thrust_scale", "value": 0.5}]},
        duration_s=10.0,
        keep_stream=True,
        rate_groups=False,
    )
    assert faulted.stream_sha256 == off.stream_sha256 != plain.stream_sha256


def test_an_island_leaves_while_a_zero_crossing_is_armed_and_joins_again_after_it():
    """Islands a and b at 1 Hz; a's event at 2.5 s (a member barrier of a alone) arms a
    zero-crossing on a falling body of a: a leaves for the hops the crossing bisects, plans alone
    up to the crossing (4.515 s) and joins again after it. The I/O steps and the crossing's
    instant are those of the run without groups."""
    from models_for_tests import FallingBody

    from hopsim.kernel import FixedRate

    def run(groups: bool):
        sim = Simulation(seed=0, rate_groups=groups)
        recorders = multirate_island(sim, "a", FixedRate(1.0)) + multirate_island(sim, "b", FixedRate(1.0))
        body = sim.add_model(FallingBody("a_body", h0=100.0), "a")
        met = []

        def arm(_event):
            sim.add_zero_crossing("ground", "a", lambda _t: float(body.x[0]), met.append, eps_s=1e-6)

        sim.at(2.5, arm, island="a")
        sim.advance_to(8.0)
        return sim, met, [m.ufos for m in recorders]

    on, met_on, calls_on = run(True)
    off, met_off, calls_off = run(False)
    assert calls_on == calls_off and met_on == met_off
    assert met_on[0] == pytest.approx(math.sqrt(200.0 / 9.81) * S, abs=1e-6 * S)
    (stats,) = on.stats()["rate_groups"].values()
    # a: members at 1, 2, 2.5 s, alone at 3, 4 s and the crossing, members again at 5 .. 8 s
    assert stats["joins"] == stats["leaves"] == 3
    assert stats["member_barriers"] == 8 + 7
    assert on.stats()["islands"]["a"]["barriers"] == off.stats()["islands"]["a"]["barriers"]


def test_a_checkpoint_taken_in_a_group_resumes_to_the_uninterrupted_stream(tmp_path):
    full = run_scenario(
        "formation",
        {"n_vehicles": 8, "radio_loss": 0.2},
        seed=3,
        duration_s=20.0,
        keep_stream=True,
        checkpoint_every_s=10.0,
        checkpoint_dir=tmp_path,
        progress=False,
    )
    (path,) = sorted(tmp_path.glob("formation_*.ckpt"))
    resumed = resume_run(path, keep_stream=True, progress=False)
    after = [e.to_bytes() for e in full.recorder.envelopes if e.t_ns > 10 * S]
    assert len(after) > 100 and resumed.recorder.stream_bytes() == after


def test_advancing_in_pieces_off_the_schedule_gives_the_stream_without_groups():
    """Stops that fall between the group's instants (advance_to(2.5)) are barriers of every island
    (they split a hop): the members leave and plan alone up to them, and join again after."""
    from hopsim.bus.recorder import MemoryRecorder
    from hopsim.scenarios.catalog import get_scenario

    def run(groups: bool) -> Simulation:
        spec = get_scenario("formation")
        params = spec.make_params({"n_vehicles": 5})
        sim = Simulation(seed=1, recorder=MemoryRecorder(), rate_groups=groups, row_blocks=False)
        sim.scenario_params = params
        spec.build(sim, params)
        for t in (0.5, 2.5, 2.75, 6.0, 9.3, 12.0):
            sim.advance_to(t)
        return sim

    on, off = run(True), run(False)
    assert on.recorder.stream_bytes() == off.recorder.stream_bytes()
    (stats,) = on.stats()["rate_groups"].values()
    assert stats["joins"] == stats["leaves"] >= 5 * 6 and stats["member_barriers"] >= 5 * 8


def multirate_island(sim: Simulation, name: str, *schedules) -> list:
    from models_for_tests import IoRecorder

    sim.add_island(name)
    return [sim.add_model(IoRecorder(f"{name}_m{k}", schedule), name) for k, schedule in enumerate(schedules)]


@pytest.mark.parametrize(
    "schedules, key, grouped, own",
    [
        # 10 Hz with 2 Hz and 1 Hz (phase 0.3 s: on the 10 Hz instants): the 30 instants of 10 Hz in
        # (0, 3] s, and the variable-rate model's step at 0.25 s, off the schedule: the island stays a
        # member for it (``own``)
        (
            (("fixed", 10.0, 0.0), ("fixed", 2.0, 0.0), ("fixed", 1.0, 0.3), ("noio",), ("variable", [250_000_000])),
            (0, 100_000_000, 1),
            30,
            1,
        ),
        # schedules whose instants do not fall on one another's: every periodic instant is a group
        # barrier. 10 Hz and 3 Hz (not a whole number of ns per period): 30 + 9 instants, 3 shared
        ((("fixed", 10.0, 0.0), ("fixed", 3.0, 0.0)), (0, 100_000_000, 1), 36, 0),
        # 1 Hz and 0.4 Hz (2.5 s, not a multiple of 1 s): 3 + 1
        ((("fixed", 1.0, 0.0), ("fixed", 0.4, 0.0)), (0, 1_000_000_000, 1), 4, 0),
        # 10 Hz and 1 Hz 0.05 s later (off the 10 Hz instants): 30 + 3
        ((("fixed", 10.0, 0.0), ("fixed", 1.0, 0.05)), (0, 100_000_000, 1), 33, 0),
    ],
)
def test_an_island_is_grouped_on_its_periodic_instants(schedules, key, grouped, own):
    """Every model's I/O steps (the instants of its end_io_step, update_flow_outs and
    start_io_step calls) are the same grouped or not; the island's rate key is its fastest
    schedule, and every instant of its periodic models in (0, 3] s is a group barrier, and so is
    a variable-rate step between them (``own``): the island joins once and leaves when the run
    returns."""
    from hopsim.kernel import FixedRate, NoIo, VariableRate

    def schedule(spec):
        if spec[0] == "fixed":
            return FixedRate(spec[1], phase_s=spec[2])
        return NoIo() if spec[0] == "noio" else VariableRate()

    def run(groups: bool):
        from models_for_tests import VariableStepper

        sim = Simulation(seed=0, rate_groups=groups)
        models = multirate_island(sim, "a", *[schedule(s) for s in schedules if s[0] != "variable"])
        for s in schedules:
            if s[0] == "variable":
                models.append(sim.add_model(VariableStepper("a_var", s[1]), "a"))
        sim.advance_to(3.0)
        return sim, [(m.ends, m.starts, m.ufos) for m in models]

    on, calls_on = run(True)
    off, calls_off = run(False)
    assert calls_on == calls_off and any(ufos for _, _, ufos in calls_on)
    assert on.islands["a"].rate_key == key
    (stats,) = on.stats()["rate_groups"].values()
    assert stats["member_barriers"] == grouped + own and stats["joins"] == stats["leaves"] == 1
    assert on.stats()["islands"]["a"]["barriers"] == off.stats()["islands"]["a"]["barriers"] == 1 + grouped + own
