"""`hopsim view`: what the server reads of a recording (poses, events, the test volume, signals)
equals what was recorded, checked against the messages themselves, the scenario's own outcome and
its layout; the page, in a real browser, draws each vehicle where and as the recording has it,
plays, jumps to events and plots a signal with its cursor on the time slider."""

import http.client
import json
import os
import re
import threading
import urllib.error
import urllib.request

import numpy as np
import pytest
from scipy.spatial.transform import Rotation
from typer.testing import CliRunner

from hopsim.bus.envelope import Envelope
from hopsim.bus.recorder import McapRecorder
from hopsim.cli import app
from hopsim.scenarios import run_scenario
from hopsim.scenarios.contact import PileupParams, pileup_layout
from hopsim.schemas import Quaternion, Vector3, VehicleState
from hopsim.view.browser import chromium_args, chromium_path
from hopsim.view.columns import ColumnReader
from hopsim.view.run_data import read_events, read_poses
from hopsim.view.server import RunView, decimate, serve


def state(name, t_ns, r, q=(0.0, 0.0, 0.0, 1.0)):
    return Envelope(
        t_ns=t_ns,
        deliver_ns=t_ns,
        source=name,
        topic=f"{name}/state",
        seq=0,
        priority=0,
        payload=VehicleState(
            vehicle=name,
            t_ns=t_ns,
            r_BN_N=Vector3(x=r[0], y=r[1], z=r[2]),
            q_BN=Quaternion(x=q[0], y=q[1], z=q[2], w=q[3]),
        ),
    )


@pytest.fixture(scope="module")
def two_rates(tmp_path_factory):
    """'a' at 10 Hz from t = 0, 'b' at 2 Hz from t = 1 s, far from N's origin (an orbit's radius)."""
    path = tmp_path_factory.mktemp("view") / "rates.mcap"
    recorder = McapRecorder(path, {"scenario": "test"})
    for k in range(31):
        t_ns = k * 100_000_000
        recorder.record(state("a", t_ns, (7.0e6 + 0.01 * k, -2.0, 3.0 + 1e-3 * k)))
        if t_ns >= 1_000_000_000 and t_ns % 500_000_000 == 0:
            recorder.record(
                state("b", t_ns, (7.0e6 + 5.0, 1.0, 0.25 * k), (0.0, 0.0, np.sin(0.1 * k), np.cos(0.1 * k)))
            )
        recorder.flush()
    recorder.close()
    return path


def test_poses_are_the_recorded_states(two_rates):
    poses = read_poses(ColumnReader(two_rates))
    assert poses.vehicles == ["a", "b"]
    assert np.allclose(poses.t_s, np.arange(31) * 0.1)
    a = poses.r_N[:, 0].astype(float) + poses.origin_N
    # float32 offsets from a float64 origin keep millimetres 7,000 km from N's origin
    assert np.max(np.abs(a[:, 0] - (7.0e6 + 0.01 * np.arange(31)))) < 1e-6
    assert np.max(np.abs(a[:, 2] - (3.0 + 1e-3 * np.arange(31)))) < 1e-6
    b = poses.r_N[:, 1]
    assert np.isnan(b[:10]).all()  # not yet recorded
    for k in range(10, 31):  # held between its 2 Hz states
        last = k - k % 5
        assert b[k, 2] + poses.origin_N[2] == pytest.approx(0.25 * last, abs=1e-6)
        assert poses.q_BN[k, 1, 2] == pytest.approx(np.sin(0.1 * last), abs=1e-7)


def test_poses_in_a_chiefs_hill_frame(tmp_path):
    """A chief on an inclined circular orbit and two vehicles placed around it in its Hill frame
    (one 100 m radially out, one moving along a known path with a known attitude relative to H):
    ``--hill chief`` gives back those relative positions and attitudes; the frame is built from
    the recorded states by the orbit-frame functions of hopsim.dynamics."""
    from hopsim.dynamics.orbit_frames import hill_dcm, inertial_to_hill

    mu, a, inc = 3.986004418e14, 6.9e6, 0.9
    n = np.sqrt(mu / a**3)
    path = tmp_path / "hill.mcap"
    recorder = McapRecorder(path, {"scenario": "test"})
    expected = []
    for k in range(11):
        t_ns = k * 60_000_000_000
        th = n * t_ns / 1e9
        r_c = a * np.array([np.cos(th), np.sin(th) * np.cos(inc), np.sin(th) * np.sin(inc)])
        v_c = a * n * np.array([-np.sin(th), np.cos(th) * np.cos(inc), np.cos(th) * np.sin(inc)])
        C_HN = hill_dcm(r_c, v_c)
        rho = np.array([20.0 * np.sin(0.3 * k), 150.0 - 10.0 * k, -5.0 + k])
        R_HB = Rotation.from_rotvec([0.1 * k, -0.2, 0.05 * k])  # the attitude relative to H
        placed = {
            "chief": (r_c, v_c, Rotation.identity()),
            "up": (r_c + 100.0 * C_HN[0], v_c, Rotation.identity()),
            "mover": (r_c + C_HN.T @ rho, v_c, Rotation.from_matrix(C_HN.T) * R_HB),
        }
        for name, (r, v, R_NB) in placed.items():
            q = R_NB.as_quat()
            msg = VehicleState(
                vehicle=name,
                t_ns=t_ns,
                r_BN_N=Vector3(x=r[0], y=r[1], z=r[2]),
                v_BN_N=Vector3(x=v[0], y=v[1], z=v[2]),
                q_BN=Quaternion(x=q[0], y=q[1], z=q[2], w=q[3]),
            )
            recorder.record(Envelope(t_ns, t_ns, name, f"{name}/state", k, 0, msg))
        recorder.flush()
        expected.append((inertial_to_hill(r_c, v_c, r_c + C_HN.T @ rho, v_c)[0], R_HB))
    recorder.close()

    poses = read_poses(ColumnReader(path), hill_of="chief")
    assert poses.frame == "hill:chief" and poses.vehicles == ["chief", "mover", "up"]
    assert np.all(poses.origin_N == 0.0)
    assert np.max(np.abs(poses.r_N[:, 0])) == 0.0  # the chief at H's origin
    assert np.max(np.abs(poses.r_N[:, 2] - [100.0, 0.0, 0.0])) < 1e-4  # radially out
    for k, (rho, R_HB) in enumerate(expected):
        assert np.max(np.abs(poses.r_N[k, 1] - rho)) < 1e-4  # float32 of ~150 m
        got = Rotation.from_quat(poses.q_BN[k, 1].astype(float))
        assert (got.inv() * R_HB).magnitude() < 1e-6  # rad
    view = RunView(path, hill_of="chief")
    assert view.run()["frame"] == "hill:chief" and view.scene() == {"kind": "hill", "chief": "chief"}
    with pytest.raises(ValueError, match=r"no vehicle 'nobody'.*chief, mover, up"):
        read_poses(ColumnReader(path), hill_of="nobody")
    result = CliRunner().invoke(app, ["view", str(path), "--hill", "nobody", "--no-browser"])
    assert result.exit_code == 2 and "no vehicle 'nobody'" in result.output


def test_many_vehicles_keep_every_kth_instant(two_rates):
    poses = read_poses(ColumnReader(two_rates), max_samples=20)
    assert poses.every == 4  # ceil(31 * 2 / 20)
    assert np.allclose(poses.t_s, np.arange(0, 31, 4) * 0.1)
    assert poses.r_N.shape == (8, 2, 3)


def test_pose_bytes_round_trip(two_rates):
    poses = read_poses(ColumnReader(two_rates))
    blob = poses.to_bytes()
    n = int(np.frombuffer(blob[:4], "<u4")[0])
    header = json.loads(blob[4 : 4 + n])
    assert (4 + n) % 8 == 0 and header["vehicles"] == ["a", "b"] and header["instants"] == 31
    at = 4 + n
    t = np.frombuffer(blob, "<f8", 31, at)
    r = np.frombuffer(blob, "<f4", 31 * 2 * 3, at + 8 * 31).reshape(31, 2, 3)
    q = np.frombuffer(blob, "<f4", 31 * 2 * 4, at + 8 * 31 + 4 * r.size).reshape(31, 2, 4)
    assert np.array_equal(t, poses.t_s)
    assert np.array_equal(r, poses.r_N, equal_nan=True) and np.array_equal(q, poses.q_BN, equal_nan=True)


def test_decimation_keeps_each_buckets_extremes():
    t = np.arange(100_000, dtype=float)
    v = np.sin(t / 5000)
    v[73_123] = 50.0  # a spike
    td, vd = decimate(t, v, 1000)
    assert len(td) <= 1000 and np.all(np.diff(td) > 0)
    assert 50.0 in vd and vd.min() == pytest.approx(v.min())


@pytest.fixture(scope="module")
def docking(tmp_path_factory):
    path = tmp_path_factory.mktemp("view") / "pd.mcap"
    result = run_scenario("passive_docking", out=path)
    return path, result


def test_dock_event_at_the_scenarios_first_contact(docking):
    path, result = docking
    events = read_events(ColumnReader(path))
    docks = [e for e in events if e["kind"] == "dock"]
    assert len(docks) == result.outcome["docks"] == 1
    assert docks[0]["t_s"] == pytest.approx(result.outcome["first_contact_s"], abs=1e-9)
    assert docks[0]["detail"].startswith("sph1 latched sph2 (gap 0.0504 m")


def test_faults_and_walls(tmp_path):
    path = tmp_path / "pile.mcap"
    fault = {"t_s": 0.5, "target": "v3", "kind": "disturbance", "force_N": [0.01, 0, 0], "duration_s": 0.2}
    run_scenario("pileup", {"n_vehicles": 8, "faults": [fault]}, duration_s=1.0, out=path)
    view = RunView(path)
    faults = [e for e in view.events if e["kind"] == "fault"]
    assert [(f["t_s"], f["name"]) for f in faults] == [(0.5, "v3")] and "disturbance" in faults[0]["detail"]
    box, _, _ = pileup_layout(PileupParams(n_vehicles=8), np.random.default_rng(0))
    assert view.scene() == {"kind": "volume", "min_N": [0.0] * 3, "max_N": [box] * 3}
    assert view.run()["info"]["run"]["scenario"] == "pileup"


def get(url):
    try:
        with urllib.request.urlopen(url, timeout=30) as reply:
            return reply.status, reply.read()
    except urllib.error.HTTPError as err:
        return err.code, err.read()


@pytest.fixture(scope="module")
def served(docking):
    view = RunView(docking[0])
    server = serve(view)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield view, f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def test_server_answers_and_refuses(served):
    view, url = served
    assert view.path and url.startswith("http://127.0.0.1:")
    status, body = get(url + "/api/run")
    run = json.loads(body)
    assert status == 200 and run["vehicles"] == 2 and run["t1_s"] == pytest.approx(6.0)
    status, body = get(url + "/api/signal?name=sph1/state.r_BN_N.x")
    sig = json.loads(body)
    assert status == 200 and sig["points"] == len(sig["t_s"]) == 61
    status, body = get(url + "/api/signal?name=sph1/state.nothing")
    assert status == 400 and "has no field 'nothing'" in json.loads(body)["error"]
    for path in ("/static/../server.py", "/static/%2e%2e/server.py", "/nowhere"):
        assert get(url + path)[0] == 404
    for path in ("/", "/static/viewer.js", "/static/vendor/plotly.min.js", "/static/vendor/three/three.core.min.js"):
        assert get(url + path)[0] == 200


def get_with_host(port, path, hosts, bind="127.0.0.1"):
    """(status, body) of GET ``path`` with exactly the Host headers ``hosts`` (none: no header)."""
    conn = http.client.HTTPConnection(bind, port, timeout=30)
    try:
        conn.putrequest("GET", path, skip_host=True)
        for host in hosts:
            conn.putheader("Host", host)
        conn.endheaders()
        reply = conn.getresponse()
        return reply.status, reply.read()
    finally:
        conn.close()


def test_server_answers_only_requests_addressed_to_it(served):
    """DNS rebinding: a page of evil.example whose name now resolves to 127.0.0.1 sends
    ``Host: evil.example[:port]``; the server refuses it (403, saying why) and answers requests
    that name a loopback address, with or without a port (any port: an SSH tunnel's)."""
    _view, url = served
    port = int(url.rsplit(":", 1)[1])
    for host in ("127.0.0.1", f"127.0.0.1:{port}", "localhost", f"LocalHost:{port}", "[::1]", f"[::1]:{port}"):
        for path in ("/", "/api/run", "/static/viewer.js"):
            status, body = get_with_host(port, path, [host])
            assert status == 200, (host, path, body[:200])
    assert b"<html" in get_with_host(port, "/", ["localhost"])[1].lower()
    refused = [
        ["evil.example"],
        [f"evil.example:{port}"],
        [f"127.0.0.1.evil.example:{port}"],
        ["localhost.evil.example"],
        [f"evil.example:{port}@127.0.0.1"],
        [f"127.0.0.1:{port}x"],
        ["[::1]evil.example"],
        ["::1"],
        [""],
        [],  # no Host header
        ["127.0.0.1", "evil.example"],  # two
    ]
    for hosts in refused:
        for path in ("/", "/api/run", "/api/poses", "/api/signal?name=sph1/state.r_BN_N.x"):
            status, body = get_with_host(port, path, hosts)
            assert status == 403, (hosts, path, status)
            text = body.decode()
            assert text.startswith("403 Forbidden: this hopsim viewer answers only requests addressed to")
            assert "127.0.0.1, [::1], localhost" in text and text.count("\n") == 1
            assert "sph1" not in text and "lander" not in text  # nothing of the recording


def test_an_explicit_host_is_answered_by_its_name(docking):
    """``--host`` given: requests naming that address are answered too, others still refused."""
    from hopsim.view.server import allowed_hosts, host_allowed

    server = serve(RunView(docking[0]), "127.0.0.2")
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        port = server.server_address[1]
        for host in ("127.0.0.2", f"127.0.0.2:{port}", f"localhost:{port}"):
            assert get_with_host(port, "/api/run", [host], bind="127.0.0.2")[0] == 200, host
        for host in (f"127.0.0.3:{port}", f"evil.example:{port}"):
            assert get_with_host(port, "/api/run", [host], bind="127.0.0.2")[0] == 403, host
    finally:
        server.shutdown()
        server.server_close()
    named = allowed_hosts("Viewer.LAN")
    assert host_allowed("viewer.lan:8080", named) and host_allowed("viewer.lan", named)
    assert not host_allowed("viewer.lan.evil.example", named) and not host_allowed("evil.example", named)
    assert host_allowed("[::1]:80", allowed_hosts("::1")) and host_allowed("[0::1]", allowed_hosts("[::1]"))


def test_view_command_refuses_clearly(tmp_path):
    runner = CliRunner()
    result = runner.invoke(app, ["view", str(tmp_path / "none.mcap"), "--no-browser"])
    assert result.exit_code == 2 and "no such file or directory" in result.output
    (tmp_path / "campaign").mkdir()
    result = runner.invoke(app, ["view", str(tmp_path / "campaign"), "--no-browser"])
    assert result.exit_code == 2 and "--run" in result.output
    result = runner.invoke(app, ["view", str(tmp_path / "campaign"), "--run", "3", "--no-browser"])
    assert result.exit_code == 2 and "not a campaign directory" in result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)


# ------------------------------------------------------------------------------------ the page


def browser_or_skip():
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        sync_playwright = None
    executable = chromium_path()
    missing = (
        "playwright" if sync_playwright is None else ("chromium (apt install chromium)" if executable is None else None)
    )
    if missing:
        if os.environ.get("CI") == "true":
            pytest.fail(f"{missing} is missing: `make test` installs it")
        pytest.skip(f"{missing} is missing")
    return sync_playwright, executable


def test_page_draws_plays_jumps_and_plots(served, docking):
    sync_playwright, executable = browser_or_skip()
    view, url = served
    poses = view.poses
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=executable, args=chromium_args())
        page = browser.new_page(viewport={"width": 1200, "height": 800})
        errors = []
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.goto(url + "/")
        page.wait_for_function(
            "window.hopsimViewer && (window.hopsimViewer.ready || window.hopsimViewer.error)", timeout=60_000
        )
        assert page.evaluate("window.hopsimViewer.error") is None and not errors
        assert page.evaluate("window.hopsimViewer.webgl") is True and not page.locator("#no-webgl").is_visible()
        # each body where the recording has it, its +x axis along R(q_BN) x_B, at a recorded instant
        k = 25
        page.evaluate(f"window.hopsimViewer.setTime({poses.t_s[k]})")
        page.wait_for_timeout(300)
        for n in range(2):
            drawn = np.array(page.evaluate(f"window.hopsimViewer.instancePosition({n})"))
            assert np.allclose(drawn, poses.r_N[k, n], atol=1e-6)
            x_axis = Rotation.from_quat(poses.q_BN[k, n].astype(float)).apply([1.0, 0.0, 0.0])
            assert np.allclose(page.evaluate(f"window.hopsimViewer.instanceXAxis({n})"), x_axis, atol=1e-5)
        # playing advances time; pausing holds it
        page.evaluate("window.hopsimViewer.setTime(0); window.hopsimViewer.play()")
        page.wait_for_timeout(1500)
        page.evaluate("window.hopsimViewer.pause()")
        t = page.evaluate("window.hopsimViewer.state().t")
        assert 0.3 < t < 3.0
        page.wait_for_timeout(400)
        assert page.evaluate("window.hopsimViewer.state().t") == t
        # the dock's mark on the timeline jumps to the dock's instant
        dock = next(e for e in view.events if e["kind"] == "dock")
        page.click("#marks i.kind-dock")
        assert page.evaluate("window.hopsimViewer.state().t") == pytest.approx(dock["t_s"], abs=1e-9)
        # a plot picked by topic and field, its cursor at the slider's time
        page.fill("#topic", "sph2/state")
        page.dispatch_event("#topic", "change")
        page.select_option("#field", "v_BN_N.x")
        page.click("#add-plot")
        page.wait_for_function("window.hopsimViewer.state().plots.length === 1", timeout=30_000)
        page.evaluate("window.hopsimViewer.setTime(4.5)")
        page.wait_for_timeout(500)
        st = page.evaluate("window.hopsimViewer.state()")
        assert st["plots"] == ["sph2/state.v_BN_N.x"] and st["cursor"] == [pytest.approx(4.5)]
        shot = page.locator("#scene canvas").screenshot()
        browser.close()
    import io

    from PIL import Image

    pixels = np.asarray(Image.open(io.BytesIO(shot)).convert("RGB")).reshape(-1, 3).astype(int)
    orange = (pixels[:, 0] > 150) & (pixels[:, 1] > 90) & (pixels[:, 1] < 170) & (pixels[:, 2] < 90)
    assert orange.sum() > 50  # the bodies are on screen


def layout_topics(layout) -> set[str]:
    """The topics a layout's message paths (``"topic".field``) and topic paths name."""
    paths = []

    def walk(node):
        if isinstance(node, dict):
            paths.extend(v for k, v in node.items() if k in ("value", "topicPath") and isinstance(v, str))
            for v in node.values():
                walk(v)
        elif isinstance(node, list):
            for v in node:
                walk(v)

    walk(layout)
    return {re.match(r'^"([^"]+)"', p).group(1) for p in paths}


def test_foxglove_layout_names_only_the_recordings_topics(docking, tmp_path):
    """The layout written for a recording plots and shows topics that the recording has, with
    Foxglove's quoted-topic message paths, and its 3-D panel shows the scene."""

    from hopsim.view.columns import topics
    from hopsim.view.layout import write_layout

    path = write_layout(docking[0], tmp_path / "pd.layout.json", live=True)
    layout = json.loads(path.read_text())
    text = json.dumps(layout)
    named = layout_topics(layout)
    assert named and named <= set(topics(docking[0]))
    assert {"sph1/state", "sph2/state", "kernel/dock"} <= named
    assert '"panelType": "ThreeDee"' in text and '"viz/scene"' in text
    assert '"panelType": "Parameters"' in text and '"serviceName": "fault"' in text


def test_walls_are_in_foxgloves_scene(tmp_path):
    from mcap.reader import make_reader
    from mcap_protobuf.decoder import DecoderFactory

    path = tmp_path / "pile.mcap"
    run_scenario("pileup", {"n_vehicles": 4}, duration_s=0.2, out=path)
    box, _, _ = pileup_layout(PileupParams(n_vehicles=4), np.random.default_rng(0))
    with open(path, "rb") as f:
        walls = [
            e
            for _, c, _, m in make_reader(f, decoder_factories=[DecoderFactory()]).iter_decoded_messages()
            if c.topic == "viz/scene"
            for e in m.entities
            if e.id == "volume"
        ]
    assert len(walls) == 1
    points = [(p.x, p.y, p.z) for p in walls[0].lines[0].points]
    assert len(points) == 24  # 12 edges
    assert {c for p in points for c in p} == {0.0, box}


def test_following_a_recording_as_it_is_written(tmp_path):
    """--follow: the server reads a recording that is still being written up to its last closed
    chunk, and again when it has grown; the origin of the poses stays put."""
    path = tmp_path / "growing.mcap"
    recorder = McapRecorder(path, {"scenario": "test"})
    for k in range(10):
        recorder.record(state("a", k * 100_000_000, (1.0 + k, 2.0, 3.0)))
        recorder.flush()
    recorder.flush_chunk()
    view = RunView(path, follow=True)
    assert len(view.poses.t_s) == 10 and view.poses.r_N[-1, 0, 0] == pytest.approx(9.0 - 0.0, abs=1e-6)
    origin = view.poses.origin_N.copy()
    assert not view.refresh()  # nothing new
    for k in range(10, 25):
        recorder.record(state("a", k * 100_000_000, (1.0 + k, 2.0, 3.0)))
        recorder.flush()
    recorder.flush_chunk()
    assert view.refresh()
    assert len(view.poses.t_s) == 25 and np.array_equal(view.poses.origin_N, origin)
    assert view.run()["follow"] and view.run()["t1_s"] == pytest.approx(2.4)
    recorder.close()


def test_bodies_and_ports_in_foxgloves_scene(docking):
    """Each contact body is drawn as a sphere of its contact radius, with an arrow out of its
    docking port; the arrow's rotation takes +x onto the port direction (checked with SciPy)."""
    from foxglove_schemas_protobuf.ArrowPrimitive_pb2 import ArrowPrimitive
    from mcap.reader import make_reader
    from mcap_protobuf.decoder import DecoderFactory

    from hopsim.bus.scene import _port_arrow

    with open(docking[0], "rb") as f:
        bodies = {
            e.frame_id: e
            for _, c, _, m in make_reader(f, decoder_factories=[DecoderFactory()]).iter_decoded_messages()
            if c.topic == "viz/scene"
            for e in m.entities
            if e.id.startswith("body/")
        }
    assert sorted(bodies) == ["sph1", "sph2"]
    for e in bodies.values():
        assert e.spheres[0].size.x == pytest.approx(0.2) and e.frame_locked
        assert (e.arrows[0].pose.position.x, e.arrows[0].pose.position.y) == (pytest.approx(0.1), 0.0)
    rng = np.random.default_rng(3)
    for u in [*rng.normal(size=(20, 3)), (-1.0, 0.0, 0.0), (1.0, 0.0, 0.0)]:
        u = np.asarray(u) / np.linalg.norm(u)
        arrow = ArrowPrimitive()
        _port_arrow(arrow, tuple(u), 0.1)
        o = arrow.pose.orientation
        assert np.allclose(Rotation.from_quat([o.x, o.y, o.z, o.w]).apply([1.0, 0.0, 0.0]), u, atol=1e-12)
        assert np.allclose([arrow.pose.position.x, arrow.pose.position.y, arrow.pose.position.z], 0.1 * u)


def test_shipped_layouts_are_current_and_name_a_runs_topics(docking, tmp_path):
    """The layouts shipped for the built-in scenarios equal those built from the scenarios' topics
    now (regenerate with hopsim.cli.write_builtin_layouts), and passive_docking's names only
    topics that its recording has (kernel events only when they happen)."""
    from hopsim.cli import builtin_layouts
    from hopsim.view.columns import topics
    from hopsim.view.layout import builtin_layout

    for name, text in builtin_layouts().items():
        assert builtin_layout(name).read_text() == text + "\n", f"{name}: run hopsim.cli.write_builtin_layouts()"
    shipped = builtin_layout("passive_docking").read_text()
    named = layout_topics(json.loads(shipped))

    assert {"sph1/state", "sph2/state", "kernel/contact"} <= named
    assert {t for t in named if not t.startswith("kernel/")} <= set(topics(docking[0]))
    res = CliRunner().invoke(app, ["layout", "passive_docking", "--out", str(tmp_path / "pd.json")])
    assert res.exit_code == 0 and (tmp_path / "pd.json").read_text() == shipped
    res = CliRunner().invoke(app, ["layout", "no_such_thing"])
    assert res.exit_code == 2 and "neither a recording nor a built-in scenario" in res.output


def test_without_webgl_the_viewer_and_a_plot_page_say_so(served, docking, tmp_path):
    """A browser without WebGL (turned off, or its GPU blocked): the viewer says, where the 3-D
    view would be, that it needs WebGL and how to turn it on, and its timeline and plots still
    work; an HTML plot says so too and draws its traces without WebGL."""
    from hopsim.view.columns import read_signals
    from hopsim.view.plots import plot_signals

    sync_playwright, executable = browser_or_skip()
    _, url = served
    html = plot_signals(list(read_signals(docking[0], ["sph2/state.v_BN_N.x"]).values()), tmp_path / "p.html")
    with sync_playwright() as p:
        browser = p.chromium.launch(
            executable_path=executable, args=[*chromium_args(), "--disable-webgl", "--disable-3d-apis"]
        )
        page = browser.new_page(viewport={"width": 1200, "height": 800})
        errors = []
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.goto(url + "/")
        page.wait_for_function(
            "window.hopsimViewer && (window.hopsimViewer.ready || window.hopsimViewer.error)", timeout=60_000
        )
        assert page.evaluate("window.hopsimViewer.error") is None and not errors
        assert page.evaluate("window.hopsimViewer.webgl") is False
        notice = page.locator("#no-webgl")
        assert notice.is_visible() and "needs WebGL" in notice.inner_text() and "acceleration" in notice.inner_text()
        page.evaluate("window.hopsimViewer.addPlot('sph2/state.v_BN_N.x')")
        page.wait_for_function("window.hopsimViewer.state().plots.length === 1", timeout=30_000)
        page.evaluate("window.hopsimViewer.setTime(4.5)")
        page.wait_for_timeout(300)
        assert page.evaluate("window.hopsimViewer.state().cursor") == [pytest.approx(4.5)] and not errors
        page.goto(html.as_uri())
        page.wait_for_selector(".scatterlayer .trace path.js-line", state="attached", timeout=30_000)
        notice = page.locator("#no-webgl")
        assert notice.is_visible() and "needs WebGL" in notice.inner_text() and not errors
        browser.close()
