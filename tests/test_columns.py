"""Reading a recording column by column gives exactly what protobuf's own decoder gives, message by
message; damage costs only the damaged chunk; a killed run's file (no summary) reads too."""

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mcap.reader import make_reader
from mcap_protobuf.decoder import DecoderFactory
from typer.testing import CliRunner

from hopsim.bus.envelope import Envelope
from hopsim.bus.recorder import McapRecorder
from hopsim.cli import app
from hopsim.scenarios import run_scenario
from hopsim.schemas import Quaternion, Vector3, VehicleState, message_class
from hopsim.view.columns import SignalError, read_signals

J2000_NS = 946_728_000 * 10**9  # 2000-01-01T12:00:00Z, the default epoch: log time = epoch + t


def decoded(path, topic, getter):
    """(simulation times, values) of ``topic`` through mcap-protobuf-support's decoder."""
    t, v = [], []
    with open(path, "rb") as f:
        for _, channel, message, msg in make_reader(f, decoder_factories=[DecoderFactory()]).iter_decoded_messages():
            if channel.topic == topic:
                t.append(message.log_time - J2000_NS)
                v.append(getter(msg))
    return np.array(t, dtype=np.int64), np.array(v, dtype=float)


@pytest.fixture(scope="module")
def spheres_recording(tmp_path_factory):
    path = tmp_path_factory.mktemp("columns") / "lf.mcap"
    run_scenario("leader_follower", duration_s=40.0, out=path)
    return path


SIGNALS = {
    "sph1/state.r_BN_N.x": ("sph1/state", lambda m: m.r_BN_N.x),
    "sph2/state.v_BN_N.y": ("sph2/state", lambda m: m.v_BN_N.y),
    "sph2/state.t_ns": ("sph2/state", lambda m: m.t_ns),
    "sph1/imu.accel_B[7]": ("sph1/imu", lambda m: m.accel_B[7] if len(m.accel_B) > 7 else 0.0),
    "sph2/thrust_cmd.on_time_ns[3]": ("sph2/thrust_cmd", lambda m: m.on_time_ns[3] if len(m.on_time_ns) > 3 else 0),
    "sph2/thrust_cmd.mask": ("sph2/thrust_cmd", lambda m: m.mask),
}


@pytest.mark.parametrize("signal", sorted(SIGNALS))
def test_columns_equal_protobufs_decoding(spheres_recording, signal):
    topic, getter = SIGNALS[signal]
    t, v = decoded(spheres_recording, topic, getter)
    got = read_signals(spheres_recording, [signal])[signal]
    assert len(t) > 10 and np.array_equal(got.t_ns, t) and np.array_equal(got.values, v)
    assert np.any(v != 0)


def test_bad_signals_are_explained(spheres_recording):
    for signal, message in [
        ("sph1/state", "write TOPIC.FIELD"),
        ("sph9/state.mass", "no topic 'sph9/state'"),
        ("sph1/state.r_BN_N", "name one of its fields"),
        ("sph1/imu.accel_B", "pick an element"),
        ("sph1/state.vehicle", "not a number"),
        ("sph1/state.nothing", "has no field 'nothing'"),
    ]:
        with pytest.raises(SignalError, match=message):
            read_signals(spheres_recording, [signal])


def test_a_damaged_chunk_costs_its_own_messages_only_and_a_killed_runs_file_reads(spheres_recording, tmp_path):
    data = bytearray(spheres_recording.read_bytes())
    t, v = decoded(spheres_recording, "sph1/state", lambda m: m.r_BN_N.x)
    # a killed run: the file ends inside its records, without summary or footer
    cut = tmp_path / "cut.mcap"
    cut.write_bytes(bytes(data[: len(data) // 2]))
    part = read_signals(cut, ["sph1/state.r_BN_N.x"])["sph1/state.r_BN_N.x"]
    assert 0 < len(part.values) < len(v)
    assert np.array_equal(part.values, v[: len(part.values)]) and np.array_equal(part.t_ns, t[: len(part.t_ns)])
    # one flipped byte inside a chunk: that chunk's messages are lost, the others are exact
    damaged = tmp_path / "damaged.mcap"
    data[len(data) // 3] ^= 0x40
    damaged.write_bytes(bytes(data))
    got = read_signals(damaged, ["sph1/state.r_BN_N.x"])["sph1/state.r_BN_N.x"]
    assert 0 < len(got.values) < len(v)
    kept = np.isin(t, got.t_ns)
    assert np.array_equal(got.values, v[kept])


finite = st.floats(allow_nan=False, width=64)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.tuples(finite, finite, st.integers(-(2**63), 2**63 - 1), st.booleans()), min_size=1, max_size=30))
def test_any_values_read_back_exactly(tmp_path, rows):
    """Negative zeros, subnormals, extreme floats, negative 64-bit integers (10-byte varints) and
    absent fields (proto3 leaves zeros out) read back as protobuf decodes them."""
    path = tmp_path / f"h{abs(hash(tuple(rows))) % 10**9}.mcap"
    recorder = McapRecorder(path, {"scenario": "hypothesis"})
    for k, (x, z, t_ns, has_mass) in enumerate(rows):
        msg = VehicleState(
            vehicle="a",
            t_ns=t_ns,
            r_BN_N=Vector3(x=x),
            omega_BN_B=Vector3(z=z),
            q_BN=Quaternion(w=1.0),
            mass=1.5 if has_mass else 0.0,
        )
        recorder.record(Envelope(t_ns=k, deliver_ns=k, source="a", topic="a/state", seq=k, priority=0, payload=msg))
        recorder.flush()
    recorder.close()
    got = read_signals(path, ["a/state.r_BN_N.x", "a/state.omega_BN_B.z", "a/state.t_ns", "a/state.mass"])
    assert [math.copysign(1, v) for v in got["a/state.r_BN_N.x"].values] == [math.copysign(1, r[0]) for r in rows]
    assert got["a/state.r_BN_N.x"].values.tolist() == [r[0] for r in rows]
    assert got["a/state.omega_BN_B.z"].values.tolist() == [r[1] for r in rows]
    assert got["a/state.t_ns"].values.tolist() == [float(r[2]) for r in rows]
    assert got["a/state.mass"].values.tolist() == [1.5 if r[3] else 0.0 for r in rows]


def test_the_plot_command_writes_a_png_an_offline_page_and_columns(spheres_recording, tmp_path):
    import matplotlib

    before = matplotlib.get_backend()
    matplotlib.use("svg")  # a caller's own backend (a notebook's, say) stays the caller's
    runner = CliRunner()
    res = runner.invoke(
        app,
        [
            "plot",
            str(spheres_recording),
            "sph1/state.r_BN_N.x",
            "sph2/state.v_BN_N.y",
            "--out",
            str(tmp_path / "p.png"),
            "--csv",
            str(tmp_path / "p.csv"),
        ],
    )
    assert res.exit_code == 0, res.output
    assert (tmp_path / "p.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert matplotlib.get_backend() == "svg"
    matplotlib.use(before)
    rows = (tmp_path / "p.csv").read_text().splitlines()
    assert rows[0] == "signal,t_s,value" and rows[1].startswith("sph1/state.r_BN_N.x,0.0,")
    res = runner.invoke(app, ["plot", str(spheres_recording), "sph1/state.r_BN_N.x", "--out", str(tmp_path / "p.html")])
    page = (tmp_path / "p.html").read_text()
    assert res.exit_code == 0 and "Plotly" in page and 'src="http' not in page
    bad = runner.invoke(app, ["plot", str(spheres_recording), "sph1/state.nothing", "--out", str(tmp_path / "x.png")])
    assert bad.exit_code == 2 and "has no field 'nothing'" in bad.output
    assert message_class("hopsim.VehicleState") is VehicleState
