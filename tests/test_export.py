"""A recording's topics as Parquet files: every column equals what the column reader
(``read_signals``) and protobuf's own decoder give, message by message; outputs are replaced only
when asked and only by complete files; bad input is one line of error."""

import json
import struct

import numpy as np
import pyarrow.parquet as pq
import pytest
from mcap.reader import make_reader
from mcap_protobuf.decoder import DecoderFactory
from typer.testing import CliRunner

import hopsim
from hopsim.bus import frames
from hopsim.bus.atomic import PARTIAL
from hopsim.bus.frames import FrameError, export, read_frame, topic_path
from hopsim.cli import app
from hopsim.scenarios import run_scenario
from hopsim.view.columns import ColumnReader, read_signals

J2000_NS = 946_728_000 * 10**9  # the default epoch: log time = epoch + simulation time


@pytest.fixture(scope="module")
def formation(tmp_path_factory):
    path = tmp_path_factory.mktemp("export") / "formation.mcap"
    run_scenario("formation", {"n_vehicles": 3}, duration_s=3.0, out=path)
    return path


@pytest.fixture(scope="module")
def spheres(tmp_path_factory):
    """Lists (thrust_N, range_m, IMU batches), a repeated message (planned), strings and bytes."""
    path = tmp_path_factory.mktemp("export") / "lf.mcap"
    run_scenario("leader_follower", duration_s=5.0, out=path)
    return path


@pytest.fixture(scope="module")
def exported(formation, tmp_path_factory):
    out = tmp_path_factory.mktemp("export") / "formation"
    return out, export(formation, out)


def decoded_messages(path):
    """{topic: [(simulation time, message)]} through mcap-protobuf-support's decoder."""
    found = {}
    with open(path, "rb") as f:
        for _, channel, message, msg in make_reader(f, decoder_factories=[DecoderFactory()]).iter_decoded_messages():
            if not channel.topic.startswith("viz/"):
                found.setdefault(channel.topic, []).append((message.log_time - J2000_NS, msg))
    return found


def value_of(msg, name):
    """The column ``name`` of one message, as protobuf gives it (a list for a repeated field, or
    for a leaf of a repeated message)."""
    name = name.removeprefix("payload.")
    head, _, rest = name.partition(".")
    value = getattr(msg, head)
    if hasattr(value, "extend") and not isinstance(value, (str, bytes)):  # repeated
        return [value_of(v, rest) for v in value] if rest else list(value)
    return value_of(value, rest) if rest else value


def test_every_column_of_the_formation_equals_read_signals(formation, exported):
    out, report = exported
    reader = ColumnReader(formation)
    assert report.damaged_chunks == 0 and len(report.files) == 15  # 3 vehicles, 5 topics each
    for topic, rows in report.topics.items():
        frame = read_frame(out, topic)
        assert len(frame) == rows > 0
        numbers = [c for c in frame.columns if c not in ("t_s", "vehicle") and frame[c].dtype.kind in "fiub"]
        signals = read_signals(reader, [f"{topic}.{c.removeprefix('payload.')}" for c in numbers[1:]])
        for column, signal in zip(numbers[1:], signals.values()):
            assert np.array_equal(frame["t_ns"].to_numpy(), signal.t_ns)
            assert np.array_equal(frame[column].to_numpy(np.float64), signal.values), (topic, column)
        assert np.array_equal(frame["t_s"].to_numpy(), frame["t_ns"].to_numpy() / 1e9)


def test_every_column_equals_protobufs_decoding(spheres, tmp_path):
    out = tmp_path / "lf"
    report = export(spheres, out)
    messages = decoded_messages(spheres)
    assert set(report.topics) == set(messages)
    seen_kinds = set()
    for topic, rows in messages.items():
        table = pq.read_table(out / topic_path(topic))
        assert table.num_rows == len(rows)
        assert table["t_ns"].to_pylist() == [t for t, _ in rows]
        for name in table.column_names[2:]:
            got = table[name].to_pylist()
            want = [value_of(m, name) for _, m in rows]
            if str(table.schema.field(name).type) == "float":  # float32: compare as float32
                want = np.float32(want).tolist()
            assert got == want, (topic, name)
            seen_kinds.add(str(table.schema.field(name).type))
    assert {"double", "int64", "uint32", "string", "binary"} <= seen_kinds
    assert {"list<element: double>", "list<element: int64>", "list<element: bool>"} <= seen_kinds, seen_kinds
    valves = read_frame(out, "sph1/valves")
    assert len(valves["thrust_N"].iloc[0]) == 12 and "planned.thruster" in valves.columns


def test_a_recording_reads_as_a_frame_directly_with_its_description(formation, exported):
    out, _ = exported
    direct = hopsim.read_frame(formation, "v1/state")
    saved = hopsim.read_frame(out, "v1/state")
    assert direct.equals(saved)
    assert saved.attrs["hopsim.run"]["scenario"] == "formation"
    assert json.loads(saved.attrs["hopsim.run"]["parameters_json"])["n_vehicles"] == 3
    assert saved.attrs["hopsim.topic"] == "v1/state" and "stream_sha256" in saved.attrs["hopsim.result"]
    meta = pq.read_schema(out / "v1/state.parquet").metadata
    assert json.loads(meta[b"hopsim.run"])["scenario"] == "formation"
    picked = hopsim.read_frame(out, "v1/state", fields=["r_BN_N", "mass"])
    assert list(picked.columns) == ["t_ns", "t_s", "r_BN_N.x", "r_BN_N.y", "r_BN_N.z", "mass"]
    with pytest.raises(FrameError, match="no field 'nothing'"):
        hopsim.read_frame(out, "v1/state", fields=["nothing"])
    with pytest.raises(FrameError, match=r"no topic 'v9/state'.*v0/air"):
        hopsim.read_frame(out, "v9/state")
    with pytest.raises(FrameError, match="no topic 'v9/state'"):
        hopsim.read_frame(formation, "v9/state")


def test_polars_is_optional(exported, monkeypatch):
    out, _ = exported
    try:
        import polars  # noqa: F401
    except ImportError:
        with pytest.raises(FrameError, match="polars is not installed"):
            read_frame(out, "v0/state", library="polars")
    else:
        assert len(read_frame(out, "v0/state", library="polars")) > 0
    with pytest.raises(FrameError, match="use 'pandas' or 'polars'"):
        read_frame(out, "v0/state", library="spark")


def test_topics_and_fields_are_picked(formation, tmp_path):
    report = export(formation, tmp_path / "o", topics=["v*/state"], fields=["r_BN_N.x", "t_ns"])
    assert sorted(report.topics) == ["v0/state", "v1/state", "v2/state"]
    assert pq.read_schema(tmp_path / "o/v0/state.parquet").names == ["t_ns", "t_s", "payload.t_ns", "r_BN_N.x"]
    with pytest.raises(FrameError, match="no topic 'v7/\\*'; its topics are v0/air"):
        export(formation, tmp_path / "p", topics=["v7/*"])
    with pytest.raises(FrameError, match=r"VehicleState has no field 'r_BN_N.w'; its fields are vehicle"):
        export(formation, tmp_path / "p", topics=["v0/state"], fields=["r_BN_N.w"])


def test_files_are_replaced_only_when_asked_and_complete(formation, tmp_path, monkeypatch):
    out = tmp_path / "o"
    export(formation, out, topics=["v0/state"])
    before = (out / "v0/state.parquet").read_bytes()
    with pytest.raises(FrameError, match="exists: give --force"):
        export(formation, out, topics=["v0/state"])

    def failing(*args):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(frames, "_decode", failing)
    with pytest.raises(OSError):
        export(formation, out, topics=["v0/state"], force=True)
    monkeypatch.undo()
    assert (out / "v0/state.parquet").read_bytes() == before
    assert not [p for p in out.rglob("*") if PARTIAL in p.name]
    export(formation, out, topics=["v0/state"], force=True)
    assert pq.read_table(out / "v0/state.parquet").num_rows > 0


def test_topic_names_make_safe_file_names():
    assert topic_path("v1/state").as_posix() == "v1/state.parquet"
    assert topic_path("../a/./b").as_posix() == "%2E%2E/a/%2E/b.parquet"
    assert topic_path("/x").as_posix() == "%00/x.parquet"


def test_the_export_command_and_bad_input(formation, tmp_path):
    runner = CliRunner()
    res = runner.invoke(app, ["export", str(formation), "--to", str(tmp_path / "o"), "--topics", "v0/*"])
    assert res.exit_code == 0, res.output
    assert "5 topics" in res.output and (tmp_path / "o/v0/thrust.parquet").exists()
    again = runner.invoke(app, ["export", str(formation), "--to", str(tmp_path / "o"), "--topics", "v0/*"])
    assert again.exit_code == 2 and "exists: give --force" in again.output
    res = runner.invoke(app, ["export", str(formation), "--to", str(tmp_path / "o"), "--topics", "v0/*", "--force"])
    assert res.exit_code == 0, res.output
    text = tmp_path / "notes.txt"
    text.write_text("not a recording\n")
    data = bytearray(formation.read_bytes())
    data[len(data) // 3] ^= 0x40
    damaged = tmp_path / "damaged.mcap"
    damaged.write_bytes(bytes(data))
    cut = tmp_path / "cut.mcap"
    cut.write_bytes(bytes(formation.read_bytes()[: len(data) // 2]))
    for args, message in [
        ([str(text)], "is not a recording"),
        ([str(tmp_path / "none.mcap")], "no such file"),
        ([str(formation), "--topics", "nope"], "no topic 'nope'"),
        ([str(formation), "--fields", "nothing"], "has no field 'nothing'"),
    ]:
        res = runner.invoke(app, ["export", *args, "--to", str(tmp_path / "bad")])
        assert res.exit_code == 2 and message in res.output and "Traceback" not in res.output, res.output
    res = runner.invoke(app, ["export", str(damaged), "--to", str(tmp_path / "d")])
    assert res.exit_code == 0 and "damaged chunk(s)" in res.output, res.output
    res = runner.invoke(app, ["export", str(cut), "--to", str(tmp_path / "c")])  # a killed run's file
    assert res.exit_code == 0, res.output
    whole = read_frame(tmp_path / "o", "v0/state")
    part = read_frame(tmp_path / "c", "v0/state")
    assert 0 < len(part) <= len(whole) and part.equals(whole.iloc[: len(part)])


def test_malformed_messages_cost_their_chunk_only():
    """A message whose field has the wrong wire type makes its chunk malformed (as read_signals)."""
    from hopsim.schemas import VehicleState

    plan = frames.Plan("hopsim.VehicleState", VehicleState.DESCRIPTOR)
    good = VehicleState(vehicle="a", mass=2.0).SerializeToString()
    bad = good + bytes([(9 << 3) | 0, 1])  # mass (a double) as a varint

    def chunk(payload):
        body = struct.pack("<HIQQ", 1, 0, 5, 5) + payload
        return np.frombuffer(struct.pack("<BQ", 0x05, len(body)) + body, np.uint8)

    wanted = np.array([False, True])
    bufs = frames._Buffers(plan)
    assert bufs.scan(chunk(good), wanted)[3] is True
    assert bufs.scan(chunk(bad), wanted)[3] is False


def test_repeated_messages_strings_and_negative_numbers_read_as_protobuf_decodes_them(tmp_path):
    """Elements of a repeated message whose fields are absent (defaults), nested singular messages,
    repeated strings, negative 32- and 64-bit integers, an enum: column by column as protobuf."""
    from hopsim.bus.envelope import Envelope
    from hopsim.bus.recorder import McapRecorder
    from hopsim.schemas import Fault, KernelEvent, Vector3, message_class

    ValveState, ValveSwitch = message_class("hopsim.ValveState"), message_class("hopsim.ValveSwitch")

    path = tmp_path / "made.mcap"
    recorder = McapRecorder(path, {"scenario": "made"})
    payloads = [
        (
            "a/valves",
            ValveState(
                vehicle="a",
                t_ns=-5,
                thrust_N=[0.5, -0.0],
                planned=[ValveSwitch(t_ns=7, thruster=3, open=True), ValveSwitch()],
            ),
        ),
        ("a/valves", ValveState(vehicle="a", mass_kg=1.5, force_B=Vector3(y=2.0))),
        ("a/valves", ValveState(planned=[ValveSwitch(open=True)] * 3, propellant_used_kg=[1e-300, 5e300])),
        (
            "a/events",
            KernelEvent(
                kind=KernelEvent.FAULT,
                members=["x", "é"],
                fault=Fault(index=-1, vehicles=["p", ""], torque_B=Vector3(z=-1)),
            ),
        ),
        ("a/events", KernelEvent(t_ns=-(2**62), name="n")),
    ]
    for k, (topic, msg) in enumerate(payloads):
        recorder.record(Envelope(t_ns=k, deliver_ns=k, source="a", topic=topic, seq=k, priority=0, payload=msg))
        recorder.flush()
    recorder.close()
    export(path, tmp_path / "o")
    messages = decoded_messages(path)
    for topic, rows in messages.items():
        table = pq.read_table(tmp_path / "o" / topic_path(topic))
        for name in table.column_names[2:]:
            assert table[name].to_pylist() == [value_of(m, name) for _, m in rows], (topic, name)
    valves = read_frame(tmp_path / "o", "a/valves")
    assert (
        valves["planned.thruster"].iloc[0].tolist() == [3, 0] and valves["planned.open"].iloc[2].tolist() == [True] * 3
    )
    events = read_frame(tmp_path / "o", "a/events")
    assert events["fault.vehicles"].iloc[0].tolist() == ["p", ""] and events["fault.index"].tolist() == [-1, 0]
