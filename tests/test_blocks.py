"""Row blocks (``hopsim.kernel.blocks``): a rate group's alike members run kind by kind over rows.

An optimization that must change nothing: the reference is the same run with blocks off (each
member's models run one by one, their messages as protobuf objects through the bus), and what is
compared is everything a later instant could depend on: every model's snapshot (attributes,
ports, generator), every island's continuous state, counters, schedule and the messages on their
way (envelopes with their sequence numbers), the bus's count, the scenario's outcome; and a
recorded run's file, byte for byte. Runs are cut where a block must hand its members back
(faults, the run returning off and on the schedule, a checkpoint, a model read) and continued."""

from __future__ import annotations

import numpy as np
import pytest

from hopsim.bus.recorder import McapRecorder, MemoryRecorder
from hopsim.kernel import ContinuousModel, Simulation
from hopsim.kernel.blocks import InRows
from hopsim.scenarios.catalog import get_scenario
from hopsim.scenarios.runner import resume_run, run_scenario, state_hash

S = 1_000_000_000

CASES = [
    ({"n_vehicles": 12}, 40.0),
    # loss, a latency of two periods, saturation and a minimum thrust, faults from outside
    (
        {
            "n_vehicles": 9,
            "layout": "lattice",
            "radio_loss": 0.3,
            "radio_latency_s": 1.5,
            "max_thrust_N": 0.05,
            "min_thrust_N": 0.004,
            "faults": [
                {"t_s": 5.5, "target": "v3_thr", "kind": "thrust_scale", "value": 0.5},
                {"t_s": 8.0, "target": "v5_radio", "kind": "radio_loss", "value": 1.0},
                {"t_s": 21.0, "target": "v5_radio", "kind": "radio_loss", "clear": True},
            ],
        },
        40.0,
    ),
    # more members than a barrier takes in one block of the scalar path, a fault in the second
    (
        {
            "n_vehicles": 300,
            "radio_loss": 0.2,
            "faults": [{"t_s": 12.5, "target": "v130_thr", "kind": "thrust_scale", "value": 0.5}],
        },
        20.0,
    ),
    # every packet lost: the vehicles brake; no noise
    ({"n_vehicles": 5, "radio_loss": 1.0, "noise": False, "stale_after_s": 3.0}, 30.0),
    # the dynamics at 10 Hz under 1 Hz control (ten RK4 steps per hop), at 2 Hz control with a
    # period that does not split into ten whole nanosecond steps of equal length
    ({"n_vehicles": 8, "dynamics_steps": 10}, 30.0),
    ({"n_vehicles": 6, "dynamics_steps": 7, "control_rate_hz": 2.0, "radio_latency_s": 0.0}, 20.0),
]


class Push(ContinuousModel):
    """A constant inertial force (N) on a body, from its pre_deriv: no row form."""

    loads_constant_over_hop = True

    def __init__(self, name, body, force_N):
        super().__init__(name)
        self.body, self.force_N = body, np.array(force_N, dtype=float)

    def pre_deriv(self, t_s):
        self.body.add_force_N(self.force_N)


def _simulation(overrides: dict, seed: int, blocks: bool, recorder=None) -> Simulation:
    spec = get_scenario("formation")
    params = spec.make_params(overrides)
    sim = Simulation(seed=seed, row_blocks=blocks, recorder=recorder)
    sim.scenario_params = params
    spec.build(sim, params)
    for fault in params.faults:
        sim.schedule_fault(fault.message(), fault.t_s)
    return sim


def _everything(sim: Simulation) -> dict:
    """What the comparison covers (see the module docstring), as exact values."""
    state = sim.capture_state(copied=False)
    islands = {}
    for name, part in state["islands"].items():
        isl = dict(part)
        isl["x"] = isl["x"].tobytes()
        isl["inbox"] = sorted(
            (d, p, src, seq, rank, env.to_bytes(), slot, port)  # (a heap's list)
            for d, p, src, seq, rank, env, slot, port in isl["inbox"]
        )
        isl.pop("integrator")
        islands[name] = isl
    stats = sim.stats()
    return {
        "hash": state_hash(sim),
        "islands": islands,
        "published": stats["published"],
        "outcome": get_scenario("formation").outcome(sim),
    }


def _block_instants(sim: Simulation) -> int:
    return sum(g["block_instants"] for g in sim.stats()["rate_groups"].values())


@pytest.mark.parametrize("overrides, duration", CASES, ids=[f"case{i}" for i in range(len(CASES))])
def test_row_blocks_change_nothing(overrides, duration):
    on, off = _simulation(overrides, 4, True), _simulation(overrides, 4, False)
    on.advance_to(duration)
    off.advance_to(duration)
    assert _block_instants(off) == 0
    assert _block_instants(on) >= 0.5 * duration  # most instants ran as rows
    assert _everything(on) == _everything(off)


def test_a_run_returning_off_and_on_the_schedule_then_recorded_gives_the_stream_without_blocks():
    """advance_to in pieces (a block hands the members back each time the run returns, with
    messages on their way for two periods), then a recorder attached and the run continued: the
    same stream as the run without blocks treated alike."""
    overrides = {"n_vehicles": 7, "radio_loss": 0.25, "radio_latency_s": 2.0}
    pieces = (0.5, 2.5, 9.0, 9.3, 17.0, 30.0)
    blocked, reference = _simulation(overrides, 2, True), _simulation(overrides, 2, False)
    for sim in (blocked, reference):
        for t in pieces:
            sim.advance_to(t)
    assert _block_instants(blocked) > 15
    assert _everything(blocked) == _everything(reference)
    for sim in (blocked, reference):
        sim.recorder = MemoryRecorder()
        sim.advance_to(45.0)
    after = reference.recorder.stream_bytes()
    assert len(after) > 500 and blocked.recorder.stream_bytes() == after


def test_a_run_returning_between_instants_after_a_block_formed_splits_the_hop_as_without_blocks():
    """The run's return at 7.5 s is known before the block forms (at 1 s): the block hands its
    members back before it, and they take the barrier there, splitting the hop from 7 to 8 s."""
    overrides = {"n_vehicles": 7, "radio_loss": 0.2}
    blocked, reference = _simulation(overrides, 6, True), _simulation(overrides, 6, False)
    for sim in (blocked, reference):
        sim.advance_to(7.5)
        sim.advance_to(30.0)
    assert _block_instants(blocked) > 20
    assert _everything(blocked) == _everything(reference)


def test_a_block_keeps_its_members_when_the_run_returns_at_one_of_its_instants():
    """A run returning at the block's instants (advance_to 10, 20, 30 s at 1 Hz) goes on with the
    same block; the counters read meanwhile (stats) include what it holds."""
    blocked, reference = _simulation({"n_vehicles": 6}, 7, True), _simulation({"n_vehicles": 6}, 7, False)
    for t in (10.0, 20.0, 30.0):
        blocked.advance_to(t)
        reference.advance_to(t)
        assert blocked.stats()["islands"] == reference.stats()["islands"]
    (group,) = blocked.stats()["rate_groups"].values()
    assert group["joins"] == 6 and group["leaves"] == 0 and group["block_instants"] == 29
    # nothing else happens meanwhile: after the first instant of each piece (2, 11, 21 s) the
    # block takes the piece's other instants at once
    assert group["instants_at_once"] == 29 - 3
    assert _everything(blocked) == _everything(reference)


def test_a_checkpoint_taken_from_a_block_resumes_to_the_stream_without_blocks(tmp_path):
    runs = {}
    for blocks in (True, False):
        folder = tmp_path / str(blocks)
        result = run_scenario(
            "formation",
            {"n_vehicles": 8, "radio_loss": 0.2},
            seed=3,
            duration_s=20.0,
            checkpoint_every_s=10.0,
            checkpoint_dir=folder,
            keep_sim=True,
            row_blocks=blocks,
        )
        assert (_block_instants(result.sim) > 5) == blocks
        (path,) = sorted(folder.glob("formation_*.ckpt"))
        runs[blocks] = resume_run(path, keep_stream=True).recorder.stream_bytes()
    assert len(runs[False]) > 100 and runs[True] == runs[False]


def test_reading_a_model_mid_run_sees_its_state_now():
    """A model read between barriers by the kernel's own event (a progress display, a viewer)
    is stored back first; an island's event is an irregular instant the block hands it back for."""
    on, off = _simulation({"n_vehicles": 6}, 1, True), _simulation({"n_vehicles": 6}, 1, False)
    seen = {True: [], False: []}
    for sim, blocks in ((on, True), (off, False)):
        sim.at(14.5, lambda ev, s=sim, b=blocks: seen[b].append(s.model("v2_fsw").accel.tolist()), name="look")
        sim.at(
            23.0, lambda ev, s=sim, b=blocks: seen[b].append(s.model("v4_fsw").accel.tolist()), name="act", island="v4"
        )
        sim.advance_to(40.0)
    assert seen[True] == seen[False] and len(seen[True]) == 2
    assert _block_instants(on) > 20
    assert _everything(on) == _everything(off)


@pytest.mark.parametrize(
    "overrides, duration",
    [
        *CASES[:2],
        # most packets lost: a radio's first forwarded packet (its channel's first message, which
        # registers the channel in the file) comes during a block
        ({"n_vehicles": 40, "radio_loss": 0.985}, 30.0),
    ],
    ids=["ring", "lattice-faults", "channels-registered-in-blocks"],
)
def test_a_recorded_run_writes_the_same_file_with_row_blocks(tmp_path, overrides, duration):
    """The recording (MCAP, with the Foxglove scene) byte for byte: the blocks' messages encoded
    from their rows, the faults' instants run by the members alone."""
    files = {}
    for blocks in (True, False):
        files[blocks] = tmp_path / f"{blocks}.mcap"
        result = run_scenario(
            "formation", overrides, seed=5, duration_s=duration, out=files[blocks], row_blocks=blocks, keep_sim=True
        )
        assert (_block_instants(result.sim) >= 0.5 * duration) == blocks
    assert files[True].read_bytes() == files[False].read_bytes()


def test_input_rows_give_each_port_back_exactly():
    """InRows.load then store: the port's state (latest message, its time, freshness, seen,
    queue) as it was, message by message (-0.0 and the mass included)."""
    from hopsim.actors.formation_rows import RV_MASS
    from hopsim.actors.messages import position_velocity_state
    from hopsim.kernel.ports import In, InPort
    from hopsim.schemas import VehicleState

    rng = np.random.default_rng(5)
    names = ["a", "b", "c"]
    for queue in (False, True):
        port = InPort("p", In(VehicleState, queue=queue))
        for k in range(4):
            v = [float(x) for x in rng.standard_normal(6)]
            v[2] = -0.0
            port.deliver(position_velocity_state(names[k % 3], 1000 * k, *v, 50.0 + k), 7 * k)
        port.take()
        rows = InRows(RV_MASS, 2, 1, queue_capacity=8 if queue else 0)
        rows.load(1, port, 0, {n: i for i, n in enumerate(names)})
        back = InPort("p", In(VehicleState, queue=queue))
        rows.store(1, back, 0, names)
        want, got = port.state(), back.state()
        assert got[1:4] == want[1:4]
        assert got[0].SerializeToString(deterministic=True) == want[0].SerializeToString(deterministic=True)
        assert [m.SerializeToString(deterministic=True) for m in got[4]] == [
            m.SerializeToString(deterministic=True) for m in want[4]
        ]


def test_the_digest_framing_of_columns_is_the_digests_own():
    """framing.digest_frames against StreamDigest.add, envelope by envelope: random routes
    (priorities negative and positive, names of any length, latencies), counts 0 to 3, payloads
    empty to long, sequence numbers up to 2^63 - 1."""
    from hopsim.bus.framing import digest_frames
    from hopsim.bus.packed import EncodedEnvelope
    from hopsim.bus.recorder import RowChannels, StreamDigest
    from hopsim.schemas import VehicleState, Wrench

    rng = np.random.default_rng(11)
    for _ in range(50):
        n_routes = int(rng.integers(1, 8))
        prototypes = [
            EncodedEnvelope(
                0,
                int(rng.integers(0, 10**10)),
                "s" * int(rng.integers(1, 40)) + str(p),
                f"topic/{p}",
                0,
                int(rng.integers(-3, 4)),
                b"",
                VehicleState if p % 2 else Wrench,
            )
            for p in range(n_routes)
        ]
        channels = RowChannels(prototypes, [False] * n_routes, list(range(n_routes)), frozenset())
        counts = rng.integers(0, 4, n_routes)
        seqs = rng.integers(0, 2**63 - 10, n_routes)
        starts = np.concatenate(([0], np.cumsum(counts)[:-1]))
        payloads = [rng.bytes(int(rng.integers(0, 300))) for _ in range(int(counts.sum()))]
        offsets = np.concatenate(([0], np.cumsum([len(p) for p in payloads]))).astype(np.int64)
        data = b"".join(payloads)
        t = int(rng.integers(0, 10**12))
        framed = digest_frames(
            t,
            counts,
            seqs,
            starts,
            offsets,
            np.frombuffer(data, np.uint8),
            channels.latency,
            channels.priority,
            channels.names,
            channels.names_at,
        )
        ours, reference = StreamDigest(), StreamDigest()
        ours.add_framed(framed, int(counts.sum()))
        for p, e in enumerate(prototypes):
            for c in range(int(counts[p])):
                payload = payloads[starts[p] + c]
                reference.add(
                    EncodedEnvelope(
                        t, t + e.deliver_ns, e.source, e.topic, int(seqs[p]) + c, e.priority, payload, e.message_type
                    ),
                    payload,
                )
        assert ours.hexdigest() == reference.hexdigest()


def test_no_block_forms_where_the_models_are_read_after_every_barrier_or_lack_a_row_form():
    """A stop callback (it reads the models after each barrier) keeps the scalar path; a model
    without a row form in an island (a force on one vehicle's body beside the formation's
    models) keeps that island out of the block the others form: the same state as without
    blocks."""
    calls = []
    watched = _simulation({"n_vehicles": 5}, 3, True)
    watched.add_stop_callback(lambda s: calls.append(s.time) and False)
    watched.advance_to(12.0)
    assert _block_instants(watched) == 0 and len(calls) > 10

    def with_disturbance(blocks: bool) -> Simulation:
        sim = _simulation({"n_vehicles": 5}, 3, blocks)
        sim.add_model(Push("v2_push", sim.model("v2"), (0.01, 0.0, 0.0)), "v2")
        sim.advance_to(12.0)
        return sim

    on, off = with_disturbance(True), with_disturbance(False)
    assert _block_instants(on) > 5 and _block_instants(off) == 0
    assert _everything(on) == _everything(off)


@pytest.mark.parametrize(
    "overrides",
    [
        {"n_vehicles": 12, "radio_loss": 0.2},
        {"n_vehicles": 12, "radio_loss": 0.1, "radio_latency_s": 2.0, "layout": "lattice"},
    ],
    ids=["ring", "lattice-2s"],
)
def test_a_block_of_part_of_a_group_exchanges_messages_with_the_members_outside_it(tmp_path, overrides):
    """Two vehicles with a model that has no row form (v03, v07) stay out of the block the other
    ten form: their neighbours' radios hear them (messages from outside taken into the rows at
    the block's instants) and they hear the block's vehicles (envelopes sent out of the rows).
    The recording (MCAP with the Foxglove scene) byte for byte, and every state, as without
    blocks."""
    sims, files = {}, {}
    for blocks in (True, False):
        files[blocks] = tmp_path / f"{blocks}.mcap"
        sim = _simulation(overrides, 6, blocks, recorder=McapRecorder(files[blocks], {"scenario": "formation"}))
        for v in ("v03", "v07"):
            sim.add_model(Push(f"{v}_push", sim.model(v), (0.002, -0.001, 0.0)), v)
        sim.advance_to(7.5)
        sim.advance_to(30.0)
        sim.recorder.close()
        sims[blocks] = sim
    group = next(iter(sims[True].stats()["rate_groups"].values()))
    assert group["block_instants"] > 20 and _block_instants(sims[False]) == 0
    assert files[True].read_bytes() == files[False].read_bytes()
    assert _everything(sims[True]) == _everything(sims[False])


def _odd_vehicles_cases(count: int) -> list[tuple]:
    """Random formations (ring or lattice, loss, latency of one to three periods, 1 or 2 Hz),
    some vehicles given a model without a row form, runs returning on and off the schedule."""
    rng = np.random.default_rng(2026)
    cases = []
    for _ in range(count):
        n = int(rng.integers(5, 13))
        rate = float(rng.choice([1.0, 2.0]))
        overrides = {
            "n_vehicles": n,
            "layout": str(rng.choice(["ring", "lattice"])),
            "radio_loss": float(rng.choice([0.0, 0.2, 0.6])),
            "control_rate_hz": rate,
            "radio_latency_s": int(rng.integers(1, 4)) / rate,
        }
        odd = sorted(rng.choice(n, size=int(rng.integers(1, 4)), replace=False).tolist())
        pieces = sorted({float(rng.choice([7.0, 9.25, 12.5])), 25.0})
        cases.append((overrides, odd, pieces))
    return cases


@pytest.mark.parametrize("overrides, odd, pieces", _odd_vehicles_cases(6), ids=[f"random{i}" for i in range(6)])
def test_blocks_of_part_of_a_group_change_nothing_in_random_formations(overrides, odd, pieces):
    runs = {}
    for blocks in (True, False):
        sim = _simulation(overrides, 9, blocks, recorder=MemoryRecorder())
        names = [s.name for s in sim.slots() if s.cls.__name__ == "RigidVehicleDynamics"]
        for k in odd:
            sim.add_model(Push(f"{names[k]}_push", sim.model(names[k]), (0.002, -0.001, 0.0005)), names[k])
        for t in pieces:
            sim.advance_to(t)
        runs[blocks] = sim
    assert _block_instants(runs[True]) > 5 and _block_instants(runs[False]) == 0
    assert runs[True].recorder.stream_bytes() == runs[False].recorder.stream_bytes()
    assert _everything(runs[True]) == _everything(runs[False])


def test_uniform_draws_taken_ahead_are_the_generators_own_and_give_its_state_back():
    """UniformDraws against the generator's random(), call by call: the same numbers across
    refills (ahead = 5), rows drawing at different paces, and each generator's state after settle
    the one the calls leave (then the next draws the same too)."""
    from hopsim.kernel.blocks import UniformDraws
    from hopsim.kernel.model import model_rng

    ours = [model_rng(3, f"r{i}") for i in range(3)]
    reference = [model_rng(3, f"r{i}") for i in range(3)]
    draws = UniformDraws(ours, ahead=5)
    rng = np.random.default_rng(0)
    for _ in range(40):
        k = rng.integers(0, 4, 3)
        draws.ensure(np.arange(3), k)
        for i in range(3):
            for _ in range(int(k[i])):
                assert draws.values[i, draws.used[i]] == reference[i].random()
                draws.used[i] += 1
        if rng.random() < 0.2:
            draws.settle()
            assert [g.bit_generator.state for g in ours] == [g.bit_generator.state for g in reference]
    draws.settle()
    assert [g.random() for g in ours] == [g.random() for g in reference]
