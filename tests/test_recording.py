"""A run is a pure function of scenario and seed: same bytes twice, on the local and Ray runtimes;
the MCAP file decodes with the mcap library's own protobuf decoder (what Foxglove relies on)."""

import json

import numpy as np
import pytest
from mcap.reader import make_reader
from mcap_protobuf.decoder import DecoderFactory

from hopsim.bus import read_envelopes, read_metadata
from hopsim.bus.recorder import envelope_stream_bytes
from hopsim.scenarios import run_scenario


def lander_stream(seed=7, duration_s=12.0, backend="local", **overrides):
    r = run_scenario("lander", overrides, seed=seed, duration_s=duration_s, keep_stream=True, backend=backend)
    return r, r.recorder.stream_bytes()


def test_same_scenario_and_seed_give_identical_bytes():
    r1, s1 = lander_stream()
    r2, s2 = lander_stream()
    assert len(s1) > 500 and s1 == s2 and r1.stream_sha256 == r2.stream_sha256


def test_another_seed_changes_the_stream_first_at_the_noisy_sensor():
    r1, s1 = lander_stream(seed=7)
    _r2, s2 = lander_stream(seed=8)
    first = next(i for i, (a, b) in enumerate(zip(s1, s2)) if a != b)
    # the first sample (t = 0) is "no reading yet" on every seed; the first noisy one differs
    first_env = r1.recorder.envelopes[first]
    assert first_env.source == "altimeter" and first_env.t_ns == 50_000_000


def test_touchdown_is_recorded_as_a_kernel_event():
    r, _ = lander_stream(duration_s=60.0, stop_on_touchdown=True)
    from hopsim.schemas import KernelEvent

    kernel = [e for e in r.recorder.envelopes if e.source.startswith("kernel")]
    # the same instant: the stream orders by source, "kernel" before "kernel.lander"
    assert [(e.topic, e.source, e.payload.name) for e in kernel] == [
        ("kernel/stop", "kernel", "e_stop"),
        ("kernel/zero_crossing", "kernel.lander", "touchdown"),
    ]
    assert kernel[0].payload.kind == KernelEvent.STOP and kernel[1].t_ns == kernel[0].t_ns
    assert r.stop_reason == "e_stop" and r.end_time_s == kernel[0].t_ns / 1e9
    body = r.sim.model("body")
    assert body.touched_down and 0.0 <= body.x[0] < 1e-3


def test_barriers_are_recorded_when_asked_on_one_channel_per_kind(tmp_path):
    """--kernel-events all: one BARRIER event per island barrier; the islands' events share a
    channel per kind and read back with their island's source."""
    from hopsim.bus.recorder import read_envelopes
    from hopsim.schemas import KernelEvent

    path = tmp_path / "pd.mcap"
    r = run_scenario("passive_docking", duration_s=2.0, out=path, kernel_events="all")
    envelopes = list(read_envelopes(path))
    barriers = [e for e in envelopes if e.topic == "kernel/barrier"]
    per_island = {}
    for e in barriers:
        event = KernelEvent.FromString(e.payload)
        assert e.source == f"kernel.{event.island}" and event.kind == KernelEvent.BARRIER
        per_island[event.island] = per_island.get(event.island, 0) + 1
    assert per_island == {name: s["barriers"] for name, s in r.stats["islands"].items()}
    with open(path, "rb") as f:
        from mcap.reader import make_reader

        kernel_channels = [c for c in make_reader(f).get_summary().channels.values() if c.topic.startswith("kernel/")]
    assert sorted(c.topic for c in kernel_channels) == sorted(
        {e.topic for e in envelopes if e.topic.startswith("kernel/")}
    )
    plain = run_scenario("passive_docking", duration_s=2.0, keep_stream=True)
    assert plain.message_count == r.message_count - len(barriers)


def test_mcap_file_decodes_with_the_mcap_protobuf_decoder_alone(tmp_path):
    path = tmp_path / "lander.mcap"
    r = run_scenario("lander", {}, seed=3, duration_s=5.0, out=path)
    decoders = DecoderFactory()
    count = 0
    topics = set()
    with open(path, "rb") as f:
        reader = make_reader(f)
        for schema, channel, message in reader.iter_messages():
            decode = decoders.decoder_for(channel.message_encoding, schema)
            msg = decode(message.data)
            assert msg.DESCRIPTOR.full_name == schema.name
            topics.add(channel.topic)
            count += channel.metadata.get("derived") is None  # Foxglove's channels are not the stream
        summary = reader.get_summary()
    assert count == r.message_count > 0
    assert {"viz/transforms", "viz/scene"} <= topics
    assert {"lander/state", "lander/altitude", "lander/throttle", "lander/battery", "lander/telemetry"} <= topics
    derived = sum(
        n for cid, n in summary.statistics.channel_message_counts.items() if "derived" in summary.channels[cid].metadata
    )
    assert summary.statistics.message_count == count + derived > count
    meta = read_metadata(path)
    assert meta["hopsim.run"]["scenario"] == "lander" and meta["hopsim.run"]["seed"] == "3"
    assert json.loads(meta["hopsim.run"]["parameters_json"])["altitude_m"] == 100.0
    assert meta["hopsim.result"]["stream_sha256"] == r.stream_sha256


def test_file_stream_equals_the_in_memory_stream(tmp_path):
    path = tmp_path / "lander.mcap"
    run_scenario("lander", {}, seed=5, duration_s=4.0, out=path)
    _, memory = lander_stream(seed=5, duration_s=4.0)
    assert envelope_stream_bytes(read_envelopes(path)) == memory


@pytest.mark.ray
def test_local_and_ray_runtimes_give_identical_bytes():
    import ray

    _, local = lander_stream(seed=11, duration_s=3.0)
    _r, remote = lander_stream(seed=11, duration_s=3.0, backend="ray")
    assert remote == local
    assert not ray.is_initialized()  # the run started a local Ray and shut it down


# ------------------------------------------------------------------ the recorder's fast paths, bit for bit


@pytest.mark.parametrize("chunk_size", [700, 200_000])
def test_add_messages_writes_what_add_message_writes_one_by_one(chunk_size):
    """The recorder's writer adds an instant's messages in one call: the file is the one mcap's
    Writer.add_message writes called for each message in turn, with chunks that fill in the
    middle of a call (several in one call), channels (with and without metadata, names beyond ASCII) and schemas
    registered between calls, log times that go back, chunks closed on demand and metadata
    written between chunks. Large chunks are compressed on the writer's thread and written later
    (the chunk being compressed before anything else reaches the file)."""
    import io
    import random

    from mcap.writer import CompressionType, Writer

    from hopsim.bus.recorder import METADATA_SHA256, _Writer, metadata_sha256

    rng = random.Random(3)
    ops, channels, t = [("schema",), ("channel",)], 1, 1_000
    for _ in range(400):
        roll = rng.random()
        if roll < 0.03:
            ops.append(("schema",))
        elif roll < 0.08:
            ops.append(("channel",))
            channels += 1
        elif roll < 0.1:
            ops.append(("flush",))
        elif roll < 0.115:
            ops.append(("close",))
        elif roll < 0.12:
            ops.append(("metadata",))
        else:
            t = max(0, t + rng.choice([-7, 0, 0, 5, 1_000]))
            ops.append(
                (
                    "messages",
                    t,
                    [
                        (rng.randint(1, channels), rng.randrange(2**32), rng.randbytes(rng.randint(0, 90)))
                        for _ in range(rng.choice([0, 1, 1, 3, 12, 40, 400]))
                    ],
                )
            )
    files = {}
    for batched in (True, False):
        out = io.BytesIO()
        writer = (_Writer if batched else Writer)(out, chunk_size=chunk_size, compression=CompressionType.ZSTD)
        writer.start(profile="hopsim", library="test")
        schemas, data_ops = 0, []
        for op in ops:
            if op[0] == "schema":
                schemas += 1
                writer.register_schema(f"s{schemas}", "protobuf", b"x" * schemas)
            elif op[0] == "channel":
                writer.register_channel(
                    f"t/{schemas}é",
                    "protobuf",
                    schemas,
                    {"n": str(schemas), "source": "v0_nav", "ünï": "cödé"} if schemas % 2 else {},
                )
            elif op[0] == "flush":
                writer.flush()
            elif op[0] == "close":
                (writer.close_chunk if batched else writer.flush)()
            elif op[0] == "metadata":
                data = {"op": str(len(data_ops))}
                data_ops.append(op)
                if batched:
                    writer.add_metadata("m", data)
                else:
                    writer.add_metadata("m", {**data, METADATA_SHA256: metadata_sha256("m", data)})
            elif batched:
                writer.add_messages(op[1], op[2])
            else:
                for channel_id, sequence, data in op[2]:
                    writer.add_message(channel_id, log_time=op[1], data=data, publish_time=op[1], sequence=sequence)
        writer.finish()
        files[batched] = out.getvalue()
    assert files[True] == files[False] and len(files[True]) > 20_000


def test_the_recorder_writes_the_bytes_of_one_add_message_per_envelope(tmp_path, monkeypatch):
    """A recorded run, chunks filling in the middle of instants, against the same recorder
    writing each message with mcap's own Writer.add_message: the same file."""
    from mcap.writer import Writer

    from hopsim.bus import recorder
    from hopsim.bus.recorder import METADATA_SHA256, McapRecorder, metadata_sha256

    class OneByOne(Writer):  # mcap's own Writer
        def __init__(self, output, chunk_size, compression):
            super().__init__(output, chunk_size=chunk_size, compression=compression)

        def add_metadata(self, name, data):  # the record carrying its SHA-256, as hopsim's does
            super().add_metadata(name, {**data, METADATA_SHA256: metadata_sha256(name, data)})

        def close_chunk(self):  # hopsim's compresses on a thread and writes later: the same bytes
            self.flush()

        def add_columns(self, log_time, channel_ids, sequences, datas):
            for channel_id, sequence, data in zip(channel_ids, sequences, datas, strict=True):
                self.add_message(channel_id, log_time=log_time, data=data, publish_time=log_time, sequence=sequence)

        def add_block(self, log_time, channel_ids, sequences, lengths, payload):
            ends = np.cumsum(lengths).tolist()
            payload = bytes(payload)
            self.add_columns(
                log_time,
                channel_ids.tolist(),
                sequences.tolist(),
                [payload[a:b] for a, b in zip([0, *ends[:-1]], ends)],
            )

    run = run_scenario("lander", {}, seed=4, duration_s=30.0, keep_stream=True)
    for name in ("fast", "plain"):
        if name == "plain":
            monkeypatch.setattr(recorder, "_Writer", OneByOne)
        rec = McapRecorder(tmp_path / f"{name}.mcap", {"scenario": "lander"}, chunk_size=2_000, log_time_offset_ns=7)
        for env in run.recorder.envelopes:
            rec.record(env)
        rec.close({"end": "30"})
        # a formation's row blocks hand the recorder each instant as columns (add_block)
        run_scenario("formation", {"n_vehicles": 12}, seed=2, duration_s=30.0, out=tmp_path / f"{name}-f.mcap")
    fast, plain = (tmp_path / "fast.mcap").read_bytes(), (tmp_path / "plain.mcap").read_bytes()
    assert fast == plain and len(fast) > 50_000
    assert read_metadata(tmp_path / "fast.mcap")["hopsim.result"]["stream_sha256"] == run.stream_sha256
    fast, plain = (tmp_path / "fast-f.mcap").read_bytes(), (tmp_path / "plain-f.mcap").read_bytes()
    assert fast == plain and len(fast) > 100_000


def test_a_recordings_digest_is_the_stream_digest_of_its_envelopes(tmp_path):
    """The recorder hashes an instant at once (each envelope's header packed in one call): the
    digest is StreamDigest.add's, envelope by envelope, here with every island's kernel events
    on one channel per kind."""
    path = tmp_path / "pd.mcap"
    recorded = run_scenario("passive_docking", duration_s=2.0, out=path, kernel_events="all")
    in_memory = run_scenario("passive_docking", duration_s=2.0, keep_stream=True, kernel_events="all")
    assert recorded.stream_sha256 == in_memory.stream_sha256 == read_metadata(path)["hopsim.result"]["stream_sha256"]
    assert recorded.message_count == len(in_memory.recorder.envelopes) > 50


def test_payloads_serialize_as_with_deterministic_true():
    """Payloads of types without maps or extensions skip the keyword (same bytes); the others keep it."""
    from google.protobuf import struct_pb2

    from hopsim.bus.recorder import deterministic_serializer

    r = run_scenario("lander", {}, seed=1, duration_s=3.0, keep_stream=True, kernel_events="all")
    payloads = [e.payload for e in r.recorder.envelopes]
    assert len({type(p) for p in payloads}) >= 5
    for p in payloads:
        assert deterministic_serializer(type(p))(p) == p.SerializeToString(deterministic=True)
    keys = [f"k{i}" for i in (5, 1, 9, 3, 7, 0, 8, 2, 6, 4)]
    value = struct_pb2.Value(struct_value=struct_pb2.Struct(fields={k: struct_pb2.Value(number_value=1) for k in keys}))
    for message in (value.struct_value, value):  # a map, and a map inside a field
        assert deterministic_serializer(type(message))(message) == message.SerializeToString(deterministic=True)
        assert deterministic_serializer(type(message)) is not type(message).SerializeToString
