"""Envelopes shipped as columns (hopsim.bus.packed): what an island host sends the driver's
recorder. Unpacked, they are the envelopes packed (header fields and protobuf's deterministic
bytes), and a recorder fed them writes the file it writes from the envelopes themselves."""

import pickle

from hopsim.bus.envelope import Envelope
from hopsim.bus.packed import EncodedEnvelope, EnvelopeBlock
from hopsim.bus.recorder import McapRecorder, MemoryRecorder
from hopsim.scenarios import run_scenario
from hopsim.schemas import RunMetadata, VehicleState


def _fields(env) -> tuple:
    return env.t_ns, env.deliver_ns, env.source, env.topic, env.seq, env.priority, env.type_name


def test_a_block_unpacks_to_the_envelopes_packed_with_their_deterministic_bytes():
    run = run_scenario("passive_docking", duration_s=4.0, keep_stream=True, kernel_events="all")
    envelopes = [(env, i % 3 == 0) for i, env in enumerate(run.recorder.envelopes)]
    # a payload with a map (whose order only deterministic=True fixes), a large sequence number, an empty payload
    meta = RunMetadata(scenario="x")
    for k in ("b", "a", "d", "c"):
        meta.versions[k] = k * 3
    # and a message type that is not hopsim's (a user's model may publish its own): its class travels by name
    from google.protobuf.timestamp_pb2 import Timestamp

    envelopes += [
        (Envelope(5, 9, "src", "src/meta", 2**64 - 1, -3, meta), True),
        (Envelope(5, 5, "src", "src/other", 1, 0, Timestamp(seconds=-7, nanos=5)), False),
        (Envelope(5, 5, "src", "src/empty", 0, 0, VehicleState()), False),
    ]
    block = pickle.loads(pickle.dumps(EnvelopeBlock.pack(envelopes), protocol=5))
    unpacked = block.unpack()
    assert len(block) == len(unpacked) == len(envelopes) > 100
    assert {env.type_name for env, _ in envelopes} >= {
        "hopsim.KernelEvent",
        "hopsim.VehicleState",
        "google.protobuf.Timestamp",
    }
    for (got, queue), (env, was_queue) in zip(unpacked, envelopes, strict=True):
        assert isinstance(got, EncodedEnvelope) and queue == was_queue
        assert _fields(got) == _fields(env)
        assert got.payload_bytes() == env.payload.SerializeToString(deterministic=True)
        assert got.decoded().payload == env.payload
    assert unpacked[-1][0].payload == b""
    assert EnvelopeBlock.pack([]).unpack() == []


def test_a_recorder_fed_encoded_envelopes_writes_the_same_file(tmp_path):
    """orbit_formation: the Foxglove scene (transforms, trails, the chief's Hill frame) is drawn
    from the encoded vehicle states as from the messages, and a live tap sees the same types."""
    run = run_scenario("orbit_formation", {"n_vehicles": 4}, duration_s=300.0, keep_stream=True, kernel_events="all")
    envelopes = run.recorder.envelopes
    encoded = [env for env, _ in EnvelopeBlock.pack((env, False) for env in envelopes).unpack()]
    taps = {}
    for name, stream in (("objects", envelopes), ("encoded", encoded)):
        rec = McapRecorder(tmp_path / f"{name}.mcap", {"scenario": "orbit_formation"}, chunk_size=4_000)
        rec.describe({"scene_json": '{"hill_chief": "chief"}'})
        taps[name] = []
        rec.tap = lambda topic, cls, t, data, out=taps[name]: out.append((topic, cls, t, data))
        for env in stream:
            rec.record(env)
        rec.close()
    objects, packed = (tmp_path / "objects.mcap").read_bytes(), (tmp_path / "encoded.mcap").read_bytes()
    assert objects == packed and len(objects) > 100_000
    assert taps["objects"] == taps["encoded"]
    assert any(topic == "viz/trails" for topic, *_ in taps["objects"])
    memory = MemoryRecorder()
    for env in encoded:
        memory.record(env)
    assert memory.stream_bytes() == [env.to_bytes() for env in envelopes]
    assert memory.digest.hexdigest() == run.stream_sha256
