"""The ``formation`` scenario at scale on the local backend: simulated seconds per wall second,
hops and bus messages per second, and peak memory, for N = 100, 1000 and 10000 vehicles.

    .venv/bin/python bench/bench_formation.py [--quick] [--layout ring|lattice] [--sizes 100,1000]

Each size runs in its own subprocess (so that its peak resident memory is its own), with the
scenario's defaults (1 Hz control, every model of a vehicle at that rate, no recorder), with the
rate group's row blocks (:mod:`hopsim.kernel.blocks`, the default) and without them (every
member's models one by one). The first five simulated seconds (initial barriers, compiled-code
loading, the block formed) are timed apart from the run, which goes on from there. Prints a markdown section: a
heading and a
table, one row per size.

Beside it, the kernel's floor for the same wiring: 100 islands of the formation's four flow models
(sensor, radio, flight software, thruster) at 1 Hz with the same topics and latencies, whose
methods only read their inputs and write prebuilt messages, and no dynamics. It is what a
vehicle-step costs when the models cost nothing. And the protobuf traffic of one vehicle-step by
itself (:func:`protobuf_floor_us`): the messages the formation's models must build and read; and
the least Python any kernel must run per vehicle-step for this wiring (:func:`dispatch_floor_us`).
Together they bound what the design can reach: 1,000x real time at N = 100 is 10 us per step.
Then the issue's four settings at N = 100 (:func:`settings_table`): the dynamics at 1 Hz (one
RK4 step per hop) and at 10 Hz (``dynamics_steps=10``: ten per hop), bare and recorded (MCAP with
its Foxglove scene), each in its own subprocess, 300 simulated seconds after the first five,
wall-clock medians of five interleaved repeats. Last, where a 100-vehicle step's time goes, with
and without recording, without row blocks (:func:`time_breakdown_us`) and with them
(:func:`block_breakdown_us`).
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys
import time
import timeit

FULL = {100: 300.0, 1000: 30.0, 10000: 5.0}  # N -> simulated seconds after the first
QUICK = {100: 50.0, 1000: 5.0}
REAL_TIME_TARGET = 1000.0  # N = 100 should run >= 1000x real time


WARM_S = 5.0  # simulated seconds run before the timed part


def one(n: int, duration_s: float, layout: str, blocks: bool = True, steps: int = 1, recorded: bool = False) -> dict:
    """Build and run one formation in this process (``steps`` RK4 steps per hop; ``recorded``: to
    an MCAP file with its Foxglove scene); returns the measurements."""
    import tempfile
    from pathlib import Path

    from hopsim.bus.recorder import McapRecorder
    from hopsim.kernel import Simulation
    from hopsim.scenarios.catalog import get_scenario

    spec = get_scenario("formation")
    params = spec.make_params({"n_vehicles": n, "layout": layout, "dynamics_steps": steps})
    tmp = tempfile.TemporaryDirectory()
    recorder = McapRecorder(Path(tmp.name) / "run.mcap") if recorded else None
    t0 = time.perf_counter()
    sim = Simulation(seed=0, row_blocks=blocks, recorder=recorder)
    sim.scenario_params = params
    spec.build(sim, params)
    sim.advance_to(WARM_S)
    before = sim.stats()  # (a row block keeps running: its counters are added)
    t1 = time.perf_counter()
    sim.advance_to(WARM_S + duration_s)
    if recorder is not None:
        recorder.flush()  # the last instant written, as a run's end does
    t2 = time.perf_counter()
    if recorder is not None:
        recorder.close()
    tmp.cleanup()
    after = sim.stats()
    hops = sum(i["hops"] for i in after["islands"].values()) - sum(i["hops"] for i in before["islands"].values())
    barriers = sum(i["barriers"] for i in after["islands"].values())
    msgs = after["published"] - before["published"]
    wall = t2 - t1
    out = spec.outcome(sim)
    return {
        "n": n,
        "layout": layout,
        "sim_s": duration_s,
        "build_s": t1 - t0,
        "wall_s": wall,
        "speed": duration_s / wall,
        "hops_per_s": hops / wall,
        "msgs_per_s": msgs / wall,
        "us_per_vehicle_step": wall / hops * 1e6,
        "barriers_per_vehicle_s": (barriers - n) / n / (WARM_S + duration_s),  # after t = 0
        "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0,
        "formation_error_rms_m": out["formation_error_rms_m"],
    }


def kernel_floor_us(n: int = 100, duration_s: float = 30.0, repeat: int = 3) -> float:
    """Wall time per vehicle-step (us) of the formation's wiring with models that do no work."""
    from hopsim.kernel import FixedRate, In, Model, Out, Simulation, Tie
    from hopsim.schemas import VehicleState, Wrench

    state, wrench = VehicleState(vehicle="v"), Wrench()

    class Sensor(Model):
        io_schedule = FixedRate(1.0)
        outputs = {"meas": Out(VehicleState)}

        def update_flow_outs(self, t_ns):
            self.write("meas", state)

    class Radio(Model):
        io_schedule = FixedRate(1.0)
        inputs = {"n0": In(VehicleState, queue=True), "n1": In(VehicleState, queue=True)}
        outputs = {"rx": Out(VehicleState, queue=True)}

        def update_flow_outs(self, t_ns):
            for port in ("n0", "n1"):
                for msg in self.drain(port):
                    self.write("rx", msg)

    class FlightSoftware(Model):
        io_schedule = FixedRate(1.0)
        inputs = {"meas": In(VehicleState), "rx": In(VehicleState, queue=True)}
        outputs = {"thrust": Out(Wrench), "air": Out(VehicleState, queue=True)}

        def update_flow_outs(self, t_ns):
            self.read("meas")
            self.drain("rx")
            self.write("thrust", wrench)
            self.write("air", state)

    class Thruster(Model):
        io_schedule = FixedRate(1.0)
        inputs = {"cmd": In(Wrench)}

        def update_flow_outs(self, t_ns):
            self.read("cmd")

    best = float("inf")
    for _ in range(repeat):
        sim = Simulation(seed=0)
        names = [f"v{i:03d}" for i in range(n)]
        for i, v in enumerate(names):
            sim.add_island(v)
            sim.add_model(Sensor(f"{v}_nav"), v, ties={"meas": f"{v}/meas"})
            sim.add_model(
                Radio(f"{v}_radio"),
                v,
                ties={"n0": f"{names[i - 1]}/air", "n1": f"{names[(i + 1) % n]}/air", "rx": f"{v}/rx"},
            )
            sim.add_model(
                FlightSoftware(f"{v}_fsw"),
                v,
                ties={
                    "meas": f"{v}/meas",
                    "rx": f"{v}/rx",
                    "thrust": f"{v}/thrust",
                    "air": Tie(f"{v}/air", latency_s=1.0),
                },
            )
            sim.add_model(Thruster(f"{v}_thr"), v, ties={"cmd": f"{v}/thrust"})
        sim.advance_to(1.0)
        t0 = time.perf_counter()
        sim.advance_to(1.0 + duration_s)
        best = min(best, time.perf_counter() - t0)
    return best / (n * duration_s) * 1e6


def protobuf_floor_us(repeat: int = 5, number: int = 20000) -> float:
    """CPU time (us) of the protobuf traffic one formation vehicle-step carries by its models'
    contracts, with nothing else around it: the sensor builds its VehicleState; the flight
    software reads it and the two neighbours' broadcasts (sender, instant and six floats each)
    and builds its Wrench; the thruster reads the Wrench's force. Built and read the way the
    formation's models do it (:mod:`hopsim.actors.formation`)."""
    from hopsim.actors.messages import inertial_force, position_velocity_state

    return _payload_traffic_us(position_velocity_state, inertial_force, repeat, number)


def _payload_traffic_us(state, force, repeat: int, number: int) -> float:
    """CPU time (us) of one vehicle-step's payload traffic with the builders ``state(vehicle, t_ns,
    rx, ry, rz, vx, vy, vz, mass_kg)`` and ``force(vehicle, fx, fy, fz)``: a state built, it and
    two neighbours' read (sender, instant, six floats), a force built and read."""
    neighbours = [state(f"v00{k}", 1_000_000_000, 1.0, 2.0, 3.0, 4e-3, 5e-3, 6e-3, 50.0) for k in (0, 2)]

    def vehicle_step() -> None:
        meas = state("v001", 1_000_000_000, 1.0, 2.0, 3.0, 4e-3, 5e-3, 6e-3, 50.0)
        for msg in (meas, *neighbours):
            msg.vehicle, msg.t_ns  # noqa: B018  (the reads are what is measured)
            r, v = msg.r_BN_N, msg.v_BN_N
            r.x, r.y, r.z, v.x, v.y, v.z  # noqa: B018
        f = force("v001", 0.1, 0.2, 0.3).force
        f.x, f.y, f.z  # noqa: B018

    return min(timeit.repeat(vehicle_step, repeat=repeat, number=number)) / number * 1e6


def plain_objects_floor_us(repeat: int = 5, number: int = 20000) -> float:
    """:func:`protobuf_floor_us`'s builds and reads on plain Python objects (``__slots__``) with the
    schemas' field names instead of protobuf messages: what the models' payload traffic would cost
    if in-process payloads were such objects."""

    class Vector3:
        __slots__ = ("x", "y", "z")

        def __init__(self, x: float, y: float, z: float):
            self.x, self.y, self.z = x, y, z

    class VehicleState:
        __slots__ = ("mass_kg", "r_BN_N", "t_ns", "v_BN_N", "vehicle")

        def __init__(self, vehicle, t_ns, r_BN_N, v_BN_N, mass_kg):
            self.vehicle, self.t_ns, self.r_BN_N, self.v_BN_N, self.mass_kg = vehicle, t_ns, r_BN_N, v_BN_N, mass_kg

    class Wrench:
        __slots__ = ("force", "vehicle")

        def __init__(self, vehicle, force):
            self.vehicle, self.force = vehicle, force

    def state(vehicle, t_ns, rx, ry, rz, vx, vy, vz, mass_kg):
        return VehicleState(vehicle, t_ns, Vector3(rx, ry, rz), Vector3(vx, vy, vz), mass_kg)

    def force(vehicle, fx, fy, fz):
        return Wrench(vehicle, Vector3(fx, fy, fz))

    return _payload_traffic_us(state, force, repeat, number)


def dispatch_floor_us(n: int = 100, steps: int = 300, repeat: int = 5) -> float:
    """CPU time (us) per vehicle-step of the least Python that any kernel keeping this design must
    run for the formation's wiring, and nothing else: per vehicle and control step, one model
    call per flow model and one for the hop (empty methods), one :class:`Envelope` per published
    message (sensor, flight software twice, radio, truth), the three messages inside the vehicle
    put on their ports, and the broadcast put on the two neighbours' inboxes (a heap each) and
    taken off at the next step. No routing tables, no schedules, no checks: a lower bound."""
    import heapq
    import itertools

    from hopsim.bus.envelope import Envelope

    class Stub:
        def start_hop(self, t0_ns, t1_ns):
            pass

        def update_flow_outs(self, t_ns):
            pass

    class Port:
        __slots__ = ("t_ns", "value")

        def deliver(self, msg, t_ns):
            self.value, self.t_ns = msg, t_ns

    models = [[Stub() for _ in range(5)] for _ in range(n)]
    ports = [[Port() for _ in range(4)] for _ in range(n)]
    inboxes: list[list] = [[] for _ in range(n)]
    order = itertools.count()
    payload = object()

    def control_step(t: int) -> None:
        for i in range(n):
            box, own = inboxes[i], ports[i]
            while box and box[0][0] == t:
                env = heapq.heappop(box)[3]
                own[3].deliver(env.payload, env.t_ns)
            hop, *flow = models[i]
            hop.start_hop(t - 1_000_000_000, t)
            for m in flow:
                m.update_flow_outs(t)
            for k in range(5):
                env = Envelope(t, t, "v_x", "v/x", k, 0, payload)
                if k < 3:
                    own[k].deliver(payload, t)
            for j in (i - 1, (i + 1) % n):
                heapq.heappush(inboxes[j], (t + 1_000_000_000, i, next(order), env))

    def run() -> None:
        for box in inboxes:
            box.clear()
        for k in range(1, steps + 1):
            control_step(k * 1_000_000_000)

    return min(timeit.repeat(run, repeat=repeat, number=1)) / (n * steps) * 1e6


def models_alone_us(n: int = 100, steps: int = 60, repeat: int = 5) -> float:
    """CPU time (us) per vehicle-step of the formation's own models, as written (the scalar forms,
    protobuf payloads), called directly with no kernel around them: per vehicle and 1-s step the
    thruster's and the body's ``start_hop`` and ``pre_deriv``, the body's compiled hop,
    ``end_hop``, then ``update_flow_outs`` of the sensor, radio, flight software and body, each
    message put straight on the port it feeds (a broadcast on the neighbours' radios a step
    later). What any kernel running these models costs at least, whatever it does itself."""
    from hopsim.actors.formation import FormationFlightSoftware, FormationThruster, NeighbourRadio, StateSensor
    from hopsim.actors.vehicle_dynamics import RigidVehicleDynamics
    from hopsim.kernel import Simulation
    from hopsim.scenarios.catalog import get_scenario

    spec = get_scenario("formation")
    params = spec.make_params({"n_vehicles": n})
    sim = Simulation(seed=0, fleets=False, row_blocks=False)
    sim.scenario_params = params
    spec.build(sim, params)
    sim.advance_to(WARM_S)  # inputs filled, compiled code loaded
    kinds = (RigidVehicleDynamics, FormationThruster, StateSensor, NeighbourRadio, FormationFlightSoftware)
    vehicles, feeds = [], []
    for name in sorted(sim.islands):
        models = tuple(sim.model(m) for m in (name, f"{name}_thr", f"{name}_nav", f"{name}_radio", f"{name}_fsw"))
        assert all(isinstance(m, k) for m, k in zip(models, kinds, strict=True)), "the formation's models changed"
        vehicles.append(models)
    index = {v[0].name: i for i, v in enumerate(vehicles)}
    for v in vehicles:
        topics = sim.slot(v[3].name).in_topics  # neighbour k's broadcast: "<vehicle>/air"
        feeds.append([(port, index[topics[port].split("/")[0]]) for port in v[3].inputs])
    for v in vehicles:
        for m in v:
            m._may_write = True  # as inside update_flow_outs
    hop = RigidVehicleDynamics.propagate_hop
    second = 1_000_000_000
    air = [None] * n

    def run(k0: int) -> None:
        nonlocal air
        for k in range(k0, k0 + steps):
            t = k * second
            sent = [None] * n
            for i, (body, thruster, sensor, radio, fsw) in enumerate(vehicles):
                thruster.start_hop(t - second, t)
                body.start_hop(t - second, t)
                thruster.pre_deriv(0.0)
                body.pre_deriv(0.0)
                hop([body], (1.0,), 0.0)
                body.end_hop(t - second, t)
                for port, j in feeds[i]:
                    if air[j] is not None:
                        radio.ports[port].deliver(air[j], t - second)
                sensor.update_flow_outs(t)
                for _, msg in sensor._outbox:
                    fsw.ports["meas"].deliver(msg, t)
                radio.update_flow_outs(t)
                for _, msg in radio._outbox:
                    fsw.ports["rx"].deliver(msg, t)
                fsw.update_flow_outs(t)
                for port, msg in fsw._outbox:
                    if port == "thrust":
                        thruster.ports["cmd"].deliver(msg, t)
                    else:
                        sent[i] = msg
                body.update_flow_outs(t)
                sensor._outbox, radio._outbox, fsw._outbox, body._outbox = [], [], [], []
            air = sent

    best, k0 = float("inf"), int(WARM_S) + 1
    for _ in range(repeat):
        c0 = time.process_time()
        run(k0)
        best = min(best, time.process_time() - c0)
        k0 += steps
    return best / (n * steps) * 1e6


FILING_COMMIT = "3a3a8fd"  # the tree on which kernel v2 was asked for (the "today" of its targets)
_PLAIN_RUN = """
import inspect, sys, time
from hopsim.kernel import Simulation
try:
    from hopsim.scenarios.catalog import get_scenario
except ImportError:                           # (the filing's tree)
    from hopsim.scenarios.registry import get_scenario
n, duration = int(sys.argv[1]), float(sys.argv[2])
spec = get_scenario("formation")
params = spec.make_params({"n_vehicles": n})
accepted = inspect.signature(Simulation.__init__).parameters
sim = Simulation(seed=0, **{k: False for k in ("fleets", "row_blocks") if k in accepted})
spec.build(sim, params)
sim.advance_to(5.0)
c0 = time.process_time()
sim.advance_to(5.0 + duration)
print((time.process_time() - c0) / (n * duration) * 1e6)
"""


def plain_python_against_filing(n: int = 100, duration_s: float = 60.0, repeat: int = 3) -> dict | str:
    """The formation as plain Python models (no fleet forms, no row blocks) in this tree and in the
    filing's (``FILING_COMMIT``, checked out beside it with git): CPU us per vehicle-step, medians
    of ``repeat`` interleaved runs, each a fresh process. A string says why it was not measured."""
    import os
    import shutil
    import tempfile
    from pathlib import Path

    here = Path(__file__).resolve().parents[1]
    if shutil.which("git") is None:
        return "git is not installed"
    tmp = tempfile.mkdtemp(prefix="hopsim-filing-")
    filing = Path(tmp) / "tree"
    made = subprocess.run(
        ["git", "-C", str(here), "worktree", "add", "--detach", "-f", str(filing), FILING_COMMIT],
        capture_output=True,
        text=True,
    )
    if made.returncode != 0:
        shutil.rmtree(tmp, ignore_errors=True)
        why = (made.stderr.strip().splitlines() or ["git gave no reason"])[-1]
        return f"the filing's commit {FILING_COMMIT} is not in this clone ({why})"
    try:
        times: dict[str, list[float]] = {"filing": [], "now": []}
        for _ in range(repeat):
            for label, tree in (("filing", filing), ("now", here)):
                env = {**os.environ, "PYTHONPATH": str(tree)}
                out = subprocess.run(
                    [sys.executable, "-c", _PLAIN_RUN, str(n), str(duration_s)],
                    env=env,
                    capture_output=True,
                    text=True,
                    check=True,
                    cwd=tmp,
                )
                times[label].append(float(out.stdout.split()[-1]))
    finally:
        subprocess.run(["git", "-C", str(here), "worktree", "remove", "--force", str(filing)], capture_output=True)
        shutil.rmtree(tmp, ignore_errors=True)
    return {label: statistics.median(v) for label, v in times.items()}


def time_breakdown_us(n: int = 100, duration_s: float = 60.0, repeat: int = 3) -> dict[str, float]:
    """Where a vehicle-step's time goes, in us per vehicle-step (wall, best of ``repeat``; N = ``n``,
    ``duration_s`` simulated seconds after the first): the run without and with an MCAP recorder
    (both without row blocks, which run no recorded instant; and the bare run with them),
    the kernel's floor for the same wiring, and the recorder fed the recorded run's envelopes with
    and without its Foxglove scene; inside the recorder, what serializing the payloads, hashing
    the stream's bytes and compressing the records cost by themselves. The rest of each is by
    difference: the models (the run minus the floor), the recording's cost to the simulation
    besides the recorder (envelopes for every message, the messages built only because a
    recorder reads them), the recorder's own framing, ordering and indexing."""
    import hashlib
    import tempfile
    from pathlib import Path

    import zstandard
    from bench_recording import record_alone  # this folder: the recorder fed a stream, timed

    from hopsim.bus.envelope import deterministic_serializer
    from hopsim.bus.recorder import McapRecorder, MemoryRecorder
    from hopsim.kernel import Simulation
    from hopsim.scenarios.catalog import get_scenario

    spec = get_scenario("formation")
    params = spec.make_params({"n_vehicles": n})
    steps = n * duration_s

    def run(recorder, blocks: bool = False) -> float:
        sim = Simulation(seed=0, recorder=recorder, row_blocks=blocks)
        sim.scenario_params = params
        spec.build(sim, params)
        sim.advance_to(1.0)
        t0 = time.perf_counter()
        sim.advance_to(1.0 + duration_s)
        if recorder is not None:
            recorder.flush()
        return time.perf_counter() - t0

    memory = MemoryRecorder()
    run(memory)
    envelopes = [env for env in memory.envelopes if env.t_ns >= 1_000_000_000]
    payloads = [(deterministic_serializer(type(env.payload)), env.payload) for env in envelopes]
    data = [serialize(p) for serialize, p in payloads]
    framed = b"".join(env.source.encode() + env.topic.encode() + d for env, d in zip(envelopes, data, strict=True))
    chunks = [b"".join(data[i : i + 4 * n * 6]) for i in range(0, len(data), 4 * n * 6)]  # about 2 s each

    def serialize_all() -> float:
        t0 = time.perf_counter()
        for serialize, p in payloads:
            serialize(p)
        return time.perf_counter() - t0

    def hash_all() -> float:
        t0 = time.perf_counter()
        hashlib.sha256(framed).hexdigest()
        return time.perf_counter() - t0

    def compress_all() -> float:
        t0 = time.perf_counter()
        for chunk in chunks:
            zstandard.compress(chunk)
        return time.perf_counter() - t0

    best: dict[str, float] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for _ in range(repeat):  # interleaved, best of each
            for name, fn in (
                ("bare", lambda: run(None)),
                ("row blocks", lambda: run(None, True)),
                ("recorded", lambda: run(McapRecorder(Path(tmp) / "run.mcap"))),
                ("recorder", lambda: record_alone(envelopes, Path(tmp) / "a.mcap", True)),
                ("recorder without scene", lambda: record_alone(envelopes, Path(tmp) / "b.mcap", False)),
                ("floor", lambda: kernel_floor_us(n, 30.0, 1) * 1e-6 * steps),
                ("serialization", serialize_all),
                ("hashing", hash_all),
                ("compression", compress_all),
            ):
                best[name] = min(best.get(name, float("inf")), fn())
    us = {name: t / steps * 1e6 for name, t in best.items()}
    return {
        "bare": us["bare"],
        "recorded": us["recorded"],
        "messages per vehicle-step": len(envelopes) / steps,
        "row blocks": us["row blocks"],
        "kernel (the floor)": us["floor"],
        "models": us["bare"] - us["floor"],
        "recording, the simulation's side": us["recorded"] - us["bare"] - us["recorder"],
        "recorder: framing, ordering, indexing": (
            us["recorder without scene"] - us["serialization"] - us["hashing"] - us["compression"]
        ),
        "recorder: serialization": us["serialization"],
        "recorder: compression": us["compression"],
        "recorder: SHA-256": us["hashing"],
        "recorder: Foxglove scene": us["recorder"] - us["recorder without scene"],
    }


def block_breakdown_us(n: int = 100, duration_s: float = 120.0, repeat: int = 3) -> dict[str, dict[str, float]]:
    """Where a vehicle-step's time goes with row blocks (us per vehicle-step, CPU time, best of
    ``repeat``; N = ``n``, ``duration_s`` simulated seconds after five untimed), bare and recorded
    (MCAP, with and without its Foxglove scene): each stage's own time, measured by wrapping the
    functions that do it (a few hundred nanoseconds per call of overhead), the rest by difference."""
    import tempfile
    from collections import defaultdict
    from pathlib import Path

    import hopsim.actors.formation_rows as rows
    import hopsim.kernel.blocks as blocks
    from hopsim.actors.rigid_fleet import RigidVehicleRows
    from hopsim.bus import framing
    from hopsim.bus import recorder as rec
    from hopsim.bus.recorder import McapRecorder
    from hopsim.kernel import Simulation
    from hopsim.scenarios.catalog import get_scenario

    spent: dict[str, float] = defaultdict(float)

    def timed(owner, name: str, label: str) -> None:
        fn = getattr(owner, name)

        def wrapper(*args, **kwargs):
            t0 = time.process_time()
            try:
                return fn(*args, **kwargs)
            finally:
                spent[label] += time.process_time() - t0

        setattr(owner, name, wrapper)

    stages = [
        (RigidVehicleRows, "hop", "dynamics (RK4 of every row, thrust loads)"),
        (rows.SensorRows, "update_flow_outs", "sensor rows"),
        (rows.RadioRows, "update_flow_outs", "radio rows"),
        (rows.FlightSoftwareRows, "update_flow_outs", "flight software rows"),
        (blocks, "_deliver", "messages between rows (ties, delay lines)"),
        (blocks.Encoder, "encode", "recording: payload rows encoded"),
        (framing, "digest_frames", "recording: digest framing"),
        (rec.McapRecorder, "_flush_scene", "recording: Foxglove scene"),
        (rec._Writer, "_Writer__finalize_chunk", "recording: chunks closed (framing, zstd, index)"),
    ]
    for owner, name, label in stages:
        timed(owner, name, label)
    spec = get_scenario("formation")
    params = spec.make_params({"n_vehicles": n})
    steps = n * duration_s
    out: dict[str, dict[str, float]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for setting in ("bare", "recorded without scene", "recorded"):
            best: dict[str, float] | None = None
            for _ in range(repeat):
                recorder = (
                    None if setting == "bare" else McapRecorder(Path(tmp) / "r.mcap", scene=setting == "recorded")
                )
                sim = Simulation(seed=0, recorder=recorder)
                sim.scenario_params = params
                spec.build(sim, params)
                sim.advance_to(WARM_S)
                spent.clear()
                t0 = time.process_time()
                sim.advance_to(WARM_S + duration_s)
                if recorder is not None:
                    recorder.flush()
                total = time.process_time() - t0
                if recorder is not None:
                    recorder.close()
                parts = {label: v / steps * 1e6 for label, v in spent.items()}
                parts["total"] = total / steps * 1e6
                if best is None or parts["total"] < best["total"]:
                    best = parts
            best["the rest (Python of the block's instant, the recorder's own)"] = best["total"] - sum(
                v for k, v in best.items() if k != "total"
            )
            out[setting] = best
    return out


def print_block_breakdown(parts: dict[str, dict[str, float]]) -> None:
    settings = list(parts)
    print(
        "\nWhere a vehicle-step goes with row blocks (N = 100, 120 s after 5; us per vehicle-step, CPU time, "
        "best of 3):\n"
    )
    print("| part | " + " | ".join(settings) + " |")
    print("|---|" + "---:|" * len(settings))
    labels = dict.fromkeys(k for p in parts.values() for k in p if k != "total")
    for label in [*labels, "total"]:
        print(f"| {label} | " + " | ".join(f"{parts[s].get(label, 0.0):.2f}" for s in settings) + " |")


def print_breakdown(parts: dict[str, float]) -> None:
    per_msg = parts["messages per vehicle-step"]
    print(
        f"\nWhere a vehicle-step goes (N = 100, 60 s; us per vehicle-step, best of 3 interleaved; "
        f"{per_msg:.0f} messages per vehicle-step recorded): {parts['bare']:.1f} without a recorder and "
        f"without row blocks, {parts['row blocks']:.1f} with them (a block formed after the timed part's "
        f"first instant), {parts['recorded']:.1f} with a recorder and without row "
        f"blocks (with them: the last table).\n"
    )
    print("| part | us per vehicle-step | us per recorded message |")
    print("|---|---:|---:|")
    for name, value in parts.items():
        if name in ("bare", "recorded", "messages per vehicle-step", "row blocks"):
            continue
        share = f"{value / per_msg:.2f}" if name.startswith("record") else ""
        print(f"| {name} | {value:.2f} | {share} |")


def run_sizes(sizes: dict[int, float], layout: str) -> list[dict]:
    rows = []
    for n, duration in sizes.items():
        measured = {}
        for blocks in (True, False):
            proc = subprocess.run(
                [sys.executable, __file__, "--one", str(n), "--duration", str(duration), "--layout", layout]
                + ([] if blocks else ["--no-blocks"]),
                check=False,
                capture_output=True,
                text=True,
            )
            if proc.returncode != 0:
                raise RuntimeError(f"N = {n} failed:\n{proc.stderr[-3000:]}")
            measured[blocks] = json.loads(proc.stdout.strip().splitlines()[-1])
        row = measured[True]
        row["us_without_blocks"] = measured[False]["us_per_vehicle_step"]
        row["speed_without_blocks"] = measured[False]["speed"]
        rows.append(row)
    return rows


def settings_table(n: int = 100, duration_s: float = 300.0, repeat: int = 5) -> dict[tuple[int, bool], float]:
    """Simulated seconds per wall second of the formation (row blocks on) with the dynamics at
    1 and 10 RK4 steps per hop, bare and recorded: medians of ``repeat`` interleaved subprocess runs."""
    runs: dict[tuple[int, bool], list[float]] = {}
    for _ in range(repeat):
        for steps in (1, 10):
            for recorded in (False, True):
                proc = subprocess.run(
                    [sys.executable, __file__, "--one", str(n), "--duration", str(duration_s), "--steps", str(steps)]
                    + (["--recorded"] if recorded else []),
                    check=False,
                    capture_output=True,
                    text=True,
                )
                if proc.returncode != 0:
                    raise RuntimeError(f"steps = {steps}, recorded = {recorded} failed:\n{proc.stderr[-3000:]}")
                runs.setdefault((steps, recorded), []).append(json.loads(proc.stdout.strip().splitlines()[-1])["speed"])
    return {key: statistics.median(v) for key, v in runs.items()}


def print_settings(speeds: dict[tuple[int, bool], float], n: int = 100) -> None:
    print(f"\n### N = {n}: the dynamics at 1 and 10 Hz, bare and recorded\n")
    print(
        "Simulated seconds per wall second (row blocks on; 300 s after 5; medians of 5 interleaved runs; "
        "recorded: MCAP with the Foxglove scene):\n"
    )
    print("| dynamics | bare | recorded | targets (bare / recorded) |")
    print("|---|---:|---:|---|")
    for steps, target in ((1, "5,000x / 1,000x"), (10, "1,000x / 500x")):
        print(
            f"| {steps} RK4 step{'s' if steps > 1 else ''} per 1 s hop ({steps} Hz) | "
            f"{speeds[steps, False]:,.0f}x | {speeds[steps, True]:,.0f}x | {target} |"
        )


def print_section(
    rows: list[dict],
    floor_us: float | None = None,
    protobuf_us: float | None = None,
    dispatch_us: float | None = None,
    models_us: float | None = None,
    plain: dict | str | None = None,
    objects_us: float | None = None,
) -> None:
    print("### Large formations (local backend, 1 Hz control, one island per vehicle)\n")
    header = (
        "vehicles",
        "simulated s",
        "build (s)",
        "sim s / wall s",
        "hops / s",
        "messages / s",
        "us per vehicle-step",
        "without row blocks: us (sim s / wall s)",
        "barriers / vehicle / sim s",
        "peak RSS (MiB)",
    )
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    for r in rows:
        print(
            f"| {r['n']:,} ({r['layout']}) | {r['sim_s']:g} | {r['build_s']:.1f} | {r['speed']:,.1f} | "
            f"{r['hops_per_s']:,.0f} | {r['msgs_per_s']:,.0f} | {r['us_per_vehicle_step']:.1f} | "
            f"{r['us_without_blocks']:.0f} ({r['speed_without_blocks']:,.1f}) | "
            f"{r['barriers_per_vehicle_s']:.2f} | {r['peak_rss_mib']:,.0f} |"
        )
    small = [r for r in rows if r["n"] == 100]
    if small:
        print(
            f"\nN = 100 runs at {small[0]['speed']:,.0f}x real time with row blocks, "
            f"{small[0]['speed_without_blocks']:,.0f}x without (target {REAL_TIME_TARGET:,.0f}x)."
        )
    if floor_us is not None:
        print(
            f"\nKernel floor for the same wiring (four flow models per vehicle that only pass prebuilt "
            f"messages, no dynamics): {floor_us:.1f} us per vehicle-step, i.e. at most "
            f"{1e6 / floor_us / 100:,.0f}x real time for N = 100 with models that cost nothing; "
            f"{REAL_TIME_TARGET:,.0f}x needs the whole vehicle-step under {1e6 / REAL_TIME_TARGET / 100:.0f} us."
        )
    if protobuf_us is not None:
        print(
            f"\nThe protobuf traffic of one vehicle-step alone (one VehicleState and one Wrench built, three "
            f"states and one force read, as the formation's models do): {protobuf_us:.1f} us"
            + (
                f"; the same on plain Python objects with the schemas' field names: {objects_us:.1f} us."
                if objects_us is not None
                else "."
            )
        )
    if dispatch_us is not None:
        print(
            f"\nThe least Python any kernel must run per vehicle-step for this wiring (a call per model, an "
            f"envelope per message, the broadcast through the neighbours' inboxes; no routing, no "
            f"schedules, no checks): {dispatch_us:.1f} us."
        )
    if models_us is not None:
        print(
            f"\nThe formation's models alone, as written (scalar forms, protobuf payloads), called directly "
            f"with no kernel (each message put straight on the port it feeds): {models_us:.1f} us per "
            f"vehicle-step."
        )
    if isinstance(plain, dict):
        print(
            f"\nThe formation as plain Python models (no fleet forms, no row blocks), N = 100, CPU us per "
            f"vehicle-step, medians of 3 interleaved runs: {plain['now']:.1f} in this tree, "
            f"{plain['filing']:.1f} in the tree on which kernel v2 was asked for ({FILING_COMMIT}): "
            f"{plain['filing'] / plain['now']:.2f}x faster (target 3x: {plain['filing'] / 3:.1f} us)."
        )
        if models_us is not None and models_us >= plain["filing"] / 3:
            print(f"The models alone ({models_us:.1f} us) leave nothing of that for a kernel.")
    elif plain is not None:
        print(f"\nThe plain-Python formation against the filing's tree: not measured ({plain}).")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="N = 100 and 1000, short runs")
    ap.add_argument("--layout", default="ring", choices=("ring", "lattice"))
    ap.add_argument("--sizes", help="comma-separated N (durations from the full table, else 10 s)")
    ap.add_argument("--one", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--duration", type=float, help=argparse.SUPPRESS)
    ap.add_argument("--no-blocks", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--steps", type=int, default=1, help=argparse.SUPPRESS)
    ap.add_argument("--recorded", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--settings", action="store_true", help="only the table of the four N = 100 settings")
    opts = ap.parse_args()
    if opts.one is not None:
        print(json.dumps(one(opts.one, opts.duration, opts.layout, not opts.no_blocks, opts.steps, opts.recorded)))
        return
    if opts.settings:
        print_settings(settings_table())
        return
    sizes = QUICK if opts.quick else FULL
    if opts.sizes:
        sizes = {int(s): FULL.get(int(s), 10.0) for s in opts.sizes.split(",")}
    rows = run_sizes(sizes, opts.layout)
    print_section(
        rows,
        kernel_floor_us(),
        protobuf_floor_us(),
        dispatch_floor_us(),
        models_alone_us(),
        plain_python_against_filing(),
        plain_objects_floor_us(),
    )
    if not opts.quick:
        print_settings(settings_table())
        print_breakdown(time_breakdown_us())
        print_block_breakdown(block_breakdown_us())


if __name__ == "__main__":
    main()
