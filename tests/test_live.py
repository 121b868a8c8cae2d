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
from hopsim.view.columns import read_signals

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
