"""Pacing and live mode: a paced run records the same stream as an unpaced one and keeps the pace;
a live run is served over Foxglove's WebSocket protocol to a client written here from the
protocol's specification (not the SDK), which receives the bus topics, pauses and resumes the run,
changes its pace and sends a fault; the recording replays identical, fault included."""

import asyncio
import json
import struct
import threading
import time

import pytest

from hopsim.bus.live import LiveServer
from hopsim.scenarios import run_scenario
from hopsim.scenarios.pacing import Pacer
from hopsim.scenarios.replay import replay_recording
from hopsim.view.columns import SignalError, read_signals

websockets = pytest.importorskip("websockets")


def test_paced_run_records_the_same_stream_and_keeps_the_pace(tmp_path):
    plain = run_scenario("lander", duration_s=10.0, out=tmp_path / "plain.mcap")
    pacer = Pacer(8.0)
    t0 = time.perf_counter()
    paced = run_scenario("lander", duration_s=10.0, out=tmp_path / "paced.mcap", pacer=pacer)
    wall = time.perf_counter() - t0
    assert paced.stream_sha256 == plain.stream_sha256 and paced.message_count == plain.message_count
    assert wall >= 10.0 / 8.0 - 0.01  # never ahead of the wall clock
    assert pacer.report.ticks == 1001  # 100 Hz over 10 s, both ends
    lateness = read_signals(tmp_path / "paced.mcap", ["pace/lateness.value"])["pace/lateness.value"]
    assert len(lateness.values) == 1001 and lateness.t_ns[1] - lateness.t_ns[0] == 10_000_000
    assert replay_recording(tmp_path / "paced.mcap").identical


def test_another_address_asks_for_the_token():
    """Served on an address other than loopback, the run goes through a relay that answers 401
    to a client without the token and relays the protocol to one with it."""
    from hopsim.schemas import Scalar

    server = LiveServer(Pacer(None), host="0.0.0.0", port=0, token="s3cret-token")
    try:
        assert server.url.endswith(f":{server.port}/?token=s3cret-token")
        url = f"ws://127.0.0.1:{server.port}/"
        protocols = ["foxglove.sdk.v1", "foxglove.websocket.v1"]

        async def session():
            for bad in ("", "?token=wrong"):
                with pytest.raises(websockets.exceptions.InvalidStatus, match="401"):
                    async with websockets.connect(url + bad, subprotocols=protocols):
                        pass
            async with websockets.connect(url + "?token=s3cret-token", subprotocols=protocols) as ws:
                info = json.loads(await asyncio.wait_for(ws.recv(), 10))
                assert info["op"] == "serverInfo" and "services" in info["capabilities"]
                server.tap("probe/value", Scalar, 5, Scalar(value=1.5).SerializeToString())
                while True:
                    frame = await asyncio.wait_for(ws.recv(), 10)
                    if isinstance(frame, bytes):
                        continue  # a binary frame (the server's time) may come first
                    msg = json.loads(frame)
                    if msg["op"] == "advertise":
                        assert [c["topic"] for c in msg["channels"]] == ["probe/value"]
                        break

        asyncio.run(session())
    finally:
        server.stop()


async def client_session(port: int, out: dict) -> None:
    """Subscribe to the lander's telemetry, pause, resume, change the pace, send a fault."""
    async with websockets.connect(
        f"ws://127.0.0.1:{port}", subprotocols=["foxglove.sdk.v1", "foxglove.websocket.v1"]
    ) as ws:
        channels, services, received, times = {}, {}, [], []
        replies: dict[int, bytes] = {}

        async def pump(until, timeout=20.0):
            deadline = time.monotonic() + timeout
            while not until():
                if time.monotonic() > deadline:
                    raise AssertionError("timed out waiting for the server")
                frame = await asyncio.wait_for(ws.recv(), timeout)
                if isinstance(frame, str):
                    msg = json.loads(frame)
                    if msg["op"] == "advertise":
                        channels.update({c["topic"]: c for c in msg["channels"]})
                    elif msg["op"] == "advertiseServices":
                        services.update({s["name"]: s for s in msg["services"]})
                    elif msg["op"] == "serviceCallFailure":
                        raise AssertionError(msg["message"])
                    elif msg["op"] == "parameterValues":
                        out.setdefault("parameters", []).append(msg["parameters"])
                elif frame[0] == 0x01:  # message data
                    _, log_time = struct.unpack_from("<IQ", frame, 1)
                    received.append(log_time)
                elif frame[0] == 0x02:  # time
                    times.append(struct.unpack_from("<Q", frame, 1)[0])
                elif frame[0] == 0x03:  # service call response
                    _, call, n = struct.unpack_from("<III", frame, 1)
                    replies[call] = frame[13 + n :]

        async def call(name, body, call_id):
            service = services[name]
            encoding = b"json"
            await ws.send(
                struct.pack("<BIII", 0x02, service["id"], call_id, len(encoding)) + encoding + json.dumps(body).encode()
            )
            await pump(lambda: call_id in replies)
            return json.loads(replies[call_id])["result"]

        await pump(lambda: "lander/telemetry" in channels and "fault" in services)
        await ws.send(
            json.dumps(
                {"op": "subscribe", "subscriptions": [{"id": 7, "channelId": channels["lander/telemetry"]["id"]}]}
            )
        )
        await pump(lambda: len(received) >= 3)
        out["schema"] = channels["lander/telemetry"]["schemaName"]
        await call("pause", {}, 1)
        await asyncio.sleep(0.3)
        del received[:]
        await asyncio.sleep(0.8)
        out["while_paused"] = len(received)
        await call("resume", {}, 2)
        await ws.send(json.dumps({"op": "setParameters", "parameters": [{"name": "pace", "value": 10.0}], "id": "p"}))
        out["fault_t_s"] = await call("fault", {"target": "body", "kind": "thrust_scale", "value": 0.4}, 3)
        out["pace"] = await call("pace", {"factor": 6.0}, 4)
        await pump(lambda: len(received) >= 3)
        out["received_after"] = len(received)


def test_live_run_is_served_commanded_and_replays_identical(tmp_path):
    pacer = Pacer(5.0)
    server = LiveServer(pacer, port=0)
    out = {}
    try:
        done = {}

        def run():
            done["result"] = run_scenario(
                "lander",
                {"stop_on_touchdown": False},
                duration_s=30.0,
                out=tmp_path / "live.mcap",
                pacer=pacer,
                tap=server.tap,
            )

        sim_thread = threading.Thread(target=run)
        sim_thread.start()
        asyncio.run(client_session(server.port, out))
        sim_thread.join(120)
    finally:
        server.stop()
    result = done["result"]
    assert out["schema"] == "hopsim.LanderTelemetry"
    assert out["while_paused"] == 0  # paused: nothing published
    assert out["pace"] == 6.0 and pacer.factor == 6.0
    t_fault = out["fault_t_s"]
    assert 0 < t_fault < 30.0 and round(t_fault * 100) == pytest.approx(t_fault * 100, abs=1e-6)  # a tick
    assert pacer.injected == [{**pacer.injected[0], "t_s": t_fault, "target": "body", "kind": "thrust_scale"}]
    faults = read_signals(tmp_path / "live.mcap", ["faults/body.value"])["faults/body.value"]
    assert faults.values.tolist() == [0.4] and faults.t_ns.tolist() == [round(t_fault * 1e9)]
    # the fault changed the run, and the replay sends it again at the same instant
    unfaulted = run_scenario("lander", {"stop_on_touchdown": False}, duration_s=30.0, out=tmp_path / "u.mcap")
    assert unfaulted.stream_sha256 != result.stream_sha256
    assert replay_recording(tmp_path / "live.mcap").identical


# ---------------------------------------------------------------------- the defects of live mode
PROTOCOLS = ["foxglove.sdk.v1", "foxglove.websocket.v1"]


class Client:
    """A client of the protocol on one connection: the services advertised, service calls
    answered with ``("result", value)`` or ``("error", message)``, parameters set."""

    def __init__(self, ws):
        self.ws = ws
        self.services: dict[str, dict] = {}
        self.answers: dict[int, tuple] = {}
        self.parameters: list = []
        self.calls = 0

    async def pump(self, until, timeout=20.0):
        deadline = time.monotonic() + timeout
        while not until():
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError("timed out waiting for the server")
            frame = await asyncio.wait_for(self.ws.recv(), left)
            if isinstance(frame, str):
                msg = json.loads(frame)
                if msg["op"] == "advertiseServices":
                    self.services.update({s["name"]: s for s in msg["services"]})
                elif msg["op"] == "serviceCallFailure":
                    self.answers[msg["callId"]] = ("error", msg["message"])
                elif msg["op"] == "parameterValues":
                    self.parameters.append(msg)
            elif frame[0] == 0x03:  # service call response
                _, call, n = struct.unpack_from("<III", frame, 1)
                self.answers[call] = ("result", json.loads(frame[13 + n :])["result"])

    async def call(self, name, body):
        await self.pump(lambda: name in self.services)
        self.calls += 1
        call_id = self.calls
        payload = body if isinstance(body, bytes) else json.dumps(body).encode()
        await self.ws.send(struct.pack("<BIII", 0x02, self.services[name]["id"], call_id, 4) + b"json" + payload)
        await self.pump(lambda: call_id in self.answers)
        return self.answers[call_id]

    async def set_parameter(self, name, value):
        """Set one parameter, and wait for the values the server answers with."""
        self.calls += 1
        request = {"op": "setParameters", "parameters": [{"name": name, "value": value}], "id": f"set{self.calls}"}
        await self.ws.send(json.dumps(request))
        await self.pump(lambda: any(m.get("id") == request["id"] for m in self.parameters))


def connect(url, origin=None):
    """A protocol client; ``origin``: the page a browser would name (websockets sends it as given)."""
    return websockets.connect(url, subprotocols=PROTOCOLS, open_timeout=10, origin=origin)


def loopback_hosts():
    hosts = ["127.0.0.1", "127.0.0.2", "localhost"]
    try:
        import socket

        with socket.socket(socket.AF_INET6) as s:
            s.bind(("::1", 0))
        hosts.append("::1")
    except OSError:
        pass
    return hosts


@pytest.mark.parametrize("host", loopback_hosts())
def test_a_token_asked_for_is_asked_of_every_client_on_every_address(host):
    """`--live-token` on a loopback address (127.0.0.1, 127.0.0.2, localhost, ::1) is enforced as
    on any other: a client without it, or with another, gets HTTP 401 and can command nothing."""
    pacer = Pacer(None)
    server = LiveServer(pacer, host=host, port=0, token="s3cret token&+")
    try:
        where = f"[{host}]" if ":" in host else host
        assert server.url == f"ws://{where}:{server.port}/?token=s3cret%20token%26%2B"
        url = f"ws://{where}:{server.port}/"

        async def session():
            for bad in ("", "?token=", "?token=wrong", "?token=s3cret"):
                with pytest.raises(websockets.exceptions.InvalidStatus, match="401"):
                    async with connect(url + bad):
                        pass
            async with connect(server.url) as ws:
                client = Client(ws)
                await client.pump(lambda: "fault" in client.services)

        asyncio.run(session())
    finally:
        server.stop()


def test_a_client_that_bypasses_the_relay_commands_nothing():
    """The SDK's own server (127.0.0.1, a free port) is what the relay forwards to: a local client
    that finds and connects to it directly is refused every command."""
    pacer = Pacer(None)
    server = LiveServer(pacer, port=0, token="s3cret-token")
    try:

        async def session():
            async with connect(f"ws://127.0.0.1:{server.upstream_port}") as ws:
                client = Client(ws)
                kind, message = await client.call("pause", {})
                assert kind == "error" and "ws://127.0.0.1" in message, message
                await client.set_parameter("paused", True)
                assert not pacer.paused and pacer._commands.empty()

        asyncio.run(session())
    finally:
        server.stop()


def test_an_empty_token_is_refused():
    from hopsim.bus.live import LiveError

    with pytest.raises(LiveError, match="--live-token"):
        LiveServer(Pacer(None), port=0, token="")


def run_live(tmp_path, pacer, server, scenario="lander", duration_s=10.0):
    """Run ``scenario`` served by ``server`` in a thread; (thread, done: {"result" or "error"})."""
    done = {}

    def run():
        try:
            done["result"] = run_scenario(
                scenario,
                {"stop_on_touchdown": False} if scenario == "lander" else {},
                duration_s=duration_s,
                out=tmp_path / "live.mcap",
                pacer=pacer,
                tap=server.tap,
            )
        except BaseException as err:
            done["error"] = err

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread, done


BAD_LIVE_FAULTS = [
    # a duration the body turns into nanoseconds: 1e309 ns overflows
    ({"target": "body", "kind": "disturbance", "force_N": [0, 0, 1], "duration_s": 1e300}, "duration_s"),
    ({"target": "body", "kind": "thrust_scale", "value": 0.5, "index": 3}, "ignores index"),
    # a force that made the state inf (hopsim.kernel.bounds: 1e7 N per axis)
    ({"target": "body", "kind": "disturbance", "force_N": [0, 0, 1e308], "duration_s": 1}, "force_N.z"),
    (b'{"target": "body", "kind": "thrust_scale", "value": NaN}', "finite"),
    (b'{"target": "body", "kind": "thrust_scale", "value": 1e400}', "finite"),
    ({"target": "body", "kind": "thrust_scale", "value": 0.5, "colour": "red"}, "colour"),
    ({"target": "nobody", "kind": "dropout"}, "unknown target"),
    ({"target": "altimeter", "kind": "melt"}, "does not accept"),
    ({"target": "altimeter", "kind": "noise_scale", "value": "lots"}, "value"),
]


def test_a_live_fault_its_target_cannot_take_is_refused_and_the_run_goes_on(tmp_path):
    """Every bad fault is answered with a one-line error naming the problem, before it is taken;
    the run goes on to its end, takes a good fault, and replays identical."""
    pacer = Pacer(None)
    pacer.paused = True  # the run waits at its first tick for the client
    server = LiveServer(pacer, port=0)
    answers = {}
    try:
        thread, done = run_live(tmp_path, pacer, server)

        async def session():
            async with connect(server.url) as ws:
                client = Client(ws)
                for i, (body, _) in enumerate(BAD_LIVE_FAULTS):
                    answers[i] = await client.call("fault", body)
                answers["good"] = await client.call("fault", {"target": "body", "kind": "thrust_scale", "value": 0.4})
                answers["resume"] = await client.call("resume", {})

        asyncio.run(session())
        thread.join(120)
    finally:
        pacer.command("resume")
        server.stop()
    for i, (body, words) in enumerate(BAD_LIVE_FAULTS):
        kind, message = answers[i]
        assert kind == "error" and words in message and "\n" not in message, (body, answers[i])
    assert answers["good"][0] == "result" and answers["resume"] == ("result", False)
    assert "error" not in done, done["error"]
    result = done["result"]
    assert result.stop_reason == "time" and result.end_time_s == 10.0
    assert [f["kind"] for f in pacer.injected] == ["thrust_scale"]
    assert replay_recording(tmp_path / "live.mcap").identical


INVALID_FAULTS = [
    ("leader_follower", {"target": "sph1_thrusters", "kind": "thrust_scale", "index": 99, "value": 0.5}, "0..11"),
    ("leader_follower", {"target": "sph1_imu", "kind": "sensor_bias", "index": 9, "value": 0.1}, "channel"),
    ("leader_follower", {"target": "sts", "kind": "radio_delay", "value": 1e300}, "radio_delay"),
    ("lander", {"target": "body", "kind": "disturbance", "force_N": [0, 0, 1], "duration_s": 1e300}, "duration_s"),
]


@pytest.mark.parametrize("scenario, fault, words", INVALID_FAULTS, ids=[f["kind"] for _, f, _ in INVALID_FAULTS])
def test_a_fault_its_target_cannot_take_is_refused_before_the_run(tmp_path, scenario, fault, words):
    """The checks a live fault passes are the ones a scenario's faults (and --fault) pass before
    the run starts: nothing is recorded."""
    from hopsim.scenarios import ScenarioError

    with pytest.raises(ScenarioError, match=words) as err:
        run_scenario(scenario, {"faults": [{"t_s": 1.0, **fault}]}, duration_s=2.0, out=tmp_path / "x.mcap")
    assert "\n" not in str(err.value)
    assert not (tmp_path / "x.mcap").exists()


def test_a_recording_whose_live_fault_is_invalid_is_a_replay_error(tmp_path):
    """A recording listing a live fault its target cannot take (as a crafted or older file may)
    is refused by the replay with a clear error, never a traceback."""
    from typer.testing import CliRunner

    from hopsim.cli import app
    from hopsim.scenarios.replay import ReplayError

    pacer = Pacer(None)
    bad = {"t_s": 1.0, "target": "body", "kind": "disturbance", "force_N": [0.0, 0.0, 1.0], "duration_s": 1e300}
    pacer.injected.append(bad)  # written to the recording's live faults, never sent
    run_scenario("lander", duration_s=3.0, out=tmp_path / "live.mcap", pacer=pacer)
    with pytest.raises(ReplayError, match="duration_s"):
        replay_recording(tmp_path / "live.mcap")
    res = CliRunner().invoke(app, ["replay", str(tmp_path / "live.mcap")])
    text = " ".join(res.output.split())
    assert res.exit_code == 2 and "duration_s" in text and "Traceback" not in text, (text, res.exception)


def test_a_pause_ends_when_the_client_that_asked_for_it_disconnects(tmp_path):
    """Client A pauses (the service), client B pauses too (the parameter): the run stays paused
    while either is connected, and resumes when the last of them disconnects. A client that
    resumes releases every pause: then only a pause asked for after it holds the run."""
    pacer = Pacer(1.0)
    pacer.paused = True  # the run waits at its first tick for the clients
    server = LiveServer(pacer, port=0)
    seen = {}
    try:
        thread, done = run_live(tmp_path, pacer, server, duration_s=10.0)

        async def wait_for(condition, timeout=10.0):
            deadline = time.monotonic() + timeout
            while not condition():
                assert time.monotonic() < deadline, "timed out"
                await asyncio.sleep(0.02)

        async def session():
            async with connect(server.url) as b_ws:
                b = Client(b_ws)
                async with connect(server.url) as a_ws:
                    a = Client(a_ws)
                    assert await a.call("pause", {}) == ("result", True)
                    await b.set_parameter("paused", True)
                await asyncio.sleep(0.5)
                seen["paused_after_a_left"] = pacer.paused  # B holds a pause
            await wait_for(lambda: not pacer.paused)
            seen["resumed_when_b_left"] = True
            async with connect(server.url) as c_ws:
                c = Client(c_ws)
                async with connect(server.url) as a_ws:
                    a = Client(a_ws)
                    assert await a.call("pause", {}) == ("result", True)
                    assert await c.call("resume", {}) == ("result", False)
                    assert await c.call("pause", {}) == ("result", True)
                await asyncio.sleep(0.5)
                seen["paused_after_a_left_again"] = pacer.paused  # C's pause, not A's
            await wait_for(lambda: not pacer.paused)
            seen["resumed_when_c_left"] = True

        asyncio.run(session())
        pacer.command("pace", None)  # the rest as fast as it runs
        thread.join(60)
    finally:
        pacer.command("resume")
        server.stop()
    assert seen == dict.fromkeys(
        ["paused_after_a_left", "resumed_when_b_left", "paused_after_a_left_again", "resumed_when_c_left"], True
    )
    assert not thread.is_alive() and "error" not in done and done["result"].end_time_s == 10.0


def test_a_web_page_of_another_site_cannot_connect_even_without_a_token():
    """A browser sends its page's origin: a page of any site but Foxglove's app or this machine gets
    HTTP 403 (it could otherwise command a run that has no token); other clients send none."""
    pacer = Pacer(None)
    server = LiveServer(pacer, port=0)
    url = f"ws://127.0.0.1:{server.port}/"
    try:

        async def session():
            for page in (
                "http://evil.example",
                "https://app.foxglove.dev.evil.example",
                "null",
                "http://10.0.0.5:8000",
            ):
                with pytest.raises(websockets.exceptions.InvalidStatus, match="403"):
                    async with connect(url, origin=page):
                        pass
            for page in (None, "https://app.foxglove.dev", "http://127.0.0.1:8080", "http://localhost:5173"):
                async with connect(url, origin=page) as ws:
                    client = Client(ws)
                    await client.pump(lambda c=client: "fault" in c.services)

        asyncio.run(session())
    finally:
        server.stop()


def _fault_sent_at_tick(pacer: Pacer, t_tick_ns: int, answers: dict) -> None:
    """Send a live fault from the pacer's tick at ``t_tick_ns`` (taken at the next tick)."""

    def on_tick(t_ns, lateness, overruns):
        if t_ns == t_tick_ns:
            answers["fault"] = pacer.command("fault", {"target": "body", "kind": "thrust_scale", "value": 0.4})

    pacer.on_tick = on_tick


def test_a_live_fault_is_never_sent_after_the_runs_end(tmp_path):
    """A fault taken at the run's last tick is refused ("the run has ended"), and so is a command
    after the run; one taken at the last tick before an end that is not a tick is sent at the end
    itself, applied, recorded and replayed."""
    from hopsim.bus.recorder import read_metadata

    answers: dict = {}
    pacer = Pacer(None)
    _fault_sent_at_tick(pacer, 2_990_000_000, answers)  # taken at the tick at 3 s: the end
    run_scenario("lander", {"stop_on_touchdown": False}, duration_s=3.0, out=tmp_path / "end.mcap", pacer=pacer)
    with pytest.raises(ValueError, match="the run has ended"):
        answers["fault"].result(timeout=0)
    with pytest.raises(ValueError, match="the run has ended"):
        pacer.command("pause").result(timeout=0)  # answered at once, not after a time-out
    assert pacer.injected == []
    assert json.loads(read_metadata(tmp_path / "end.mcap")["hopsim.result"]["live_faults_json"]) == []
    with pytest.raises(SignalError, match="no topic 'faults/body'"):  # nothing sent, nothing recorded
        read_signals(tmp_path / "end.mcap", ["faults/body.value"])

    pacer = Pacer(None)
    _fault_sent_at_tick(pacer, 2_980_000_000, answers)  # taken at 2.99 s; the run ends at 2.995 s
    r = run_scenario(
        "lander", {"stop_on_touchdown": False}, duration_s=2.995, out=tmp_path / "f.mcap", pacer=pacer, keep_sim=True
    )
    assert answers["fault"].result(timeout=0) == 2.995 and r.sim.model("body").thrust_scale == 0.4
    assert [f["t_s"] for f in json.loads(read_metadata(tmp_path / "f.mcap")["hopsim.result"]["live_faults_json"])] == [
        2.995
    ]
    faults = read_signals(tmp_path / "f.mcap", ["faults/body.value"])["faults/body.value"]
    assert faults.t_ns.tolist() == [2_995_000_000]
    assert replay_recording(tmp_path / "f.mcap").identical
