"""A running simulation served over Foxglove's WebSocket protocol (the Foxglove SDK's server).

:class:`LiveServer` receives every message the recorder writes (its ``tap``): the stream's bus
topics, Foxglove's 3-D channels (``viz/transforms``, ``viz/scene``, ``viz/trails``,
``viz/trails_recent``, ``viz/trail_tips``) and the pacing channels, and
logs each on a Foxglove channel of the same topic (protobuf, the message's schema as a
FileDescriptorSet), so that the Foxglove app, or any client of the protocol, sees the run as it
happens. Log times are the recording's (the scenario's calendar epoch plus simulation time); the
server also broadcasts the current time.

Commands come back from clients as

- parameters (the Parameters panel): ``pace`` (times real time; 0 runs as fast as it can) and
  ``paused`` (true or false);
- services, JSON request and response: ``pause``, ``resume``, ``pace`` (``{"factor": X}``) and
  ``fault`` (``{"target": ..., "kind": ..., "value": ..., ...}``: the fields of ``--fault`` but
  its time, which is the next pacing tick).

Each command goes to a commander (:class:`hopsim.scenarios.pacing.Pacer` has the method), which
applies it inside the simulation at its next tick. A fault so sent is an ordinary bus message
on ``faults/<target>``, recorded like any other.

The server binds to 127.0.0.1 by default. The SDK's server has no authentication: to serve on
another address, the SDK's server stays on 127.0.0.1 and a relay (:class:`TokenRelay`) listens on
that address and admits only clients whose URL carries the token (``ws://HOST:PORT/?token=T``).
"""

from __future__ import annotations

import asyncio
import hmac
import ipaddress
import json
import secrets
import threading
from http import HTTPStatus
from typing import Callable
from urllib.parse import parse_qs, urlparse

from foxglove.websocket import ServerListener

LOOPBACK_HOSTS = {"localhost"}
COMMAND_TIMEOUT_S = 30.0


def is_loopback(host: str) -> bool:
    if host in LOOPBACK_HOSTS:
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


class LiveError(ValueError):
    """A live server that cannot start as asked."""


class LiveServer:
    """Forwards recorded messages to WebSocket clients and their commands to ``commander``
    (an object with ``command(kind, value) -> Future``)."""

    def __init__(
        self, commander, host: str = "127.0.0.1", port: int = 8765, token: str | None = None, name: str = "hopsim"
    ):
        """On a loopback ``host`` the SDK's server listens there; on another, behind a relay that
        asks for ``token`` (one is drawn when None: :attr:`url` carries it)."""
        import foxglove
        from foxglove.websocket import Capability

        self._foxglove = foxglove
        self._commander = commander
        self._channels: dict[str, object] = {}
        self._schemas: dict[type, object] = {}
        self._lock = threading.Lock()
        self._last_time = None
        self._relay = None
        remote = not is_loopback(host)
        try:
            self._server = foxglove.start_server(
                name=name,
                host="127.0.0.1" if remote else host,
                port=0 if remote else port,
                capabilities=[Capability.Parameters, Capability.Services, Capability.Time],
                server_listener=_Listener(self),
                supported_encodings=["json"],
                services=self._services(),
            )
        except Exception as err:  # noqa: BLE001  (the SDK raises its own errors for a taken port)
            raise LiveError(f"cannot serve on {host}:{port}: {err}; pick another --live-port") from None
        self.url = f"ws://{host}:{self._server.port}"
        if remote:
            self.token = token or secrets.token_urlsafe(18)
            self._relay = TokenRelay(host, port, self._server.port, self.token)
            self.url = f"ws://{host}:{self._relay.port}/?token={self.token}"

    @property
    def commander(self):
        return self._commander

    @property
    def port(self) -> int:
        """The port clients connect to (the relay's, on another address than loopback)."""
        return self._relay.port if self._relay is not None else self._server.port

    # ------------------------------------------------------------------ messages out
    def tap(self, topic: str, message_type, log_time_ns: int, data: bytes) -> None:
        """The recorder's tap: log one message on its topic's channel."""
        channel = self._channels.get(topic)
        if channel is None:
            channel = self._channels[topic] = self._foxglove.Channel(
                topic, message_encoding="protobuf", schema=self._schema(message_type)
            )
        channel.log(data, log_time=log_time_ns)
        if log_time_ns != self._last_time:
            self._last_time = log_time_ns
            self._server.broadcast_time(log_time_ns)

    def _schema(self, message_type):
        schema = self._schemas.get(message_type)
        if schema is None:
            from mcap_protobuf.schema import build_file_descriptor_set

            fds = build_file_descriptor_set(message_type).SerializeToString()
            schema = self._schemas[message_type] = self._foxglove.Schema(
                name=message_type.DESCRIPTOR.full_name, encoding="protobuf", data=fds
            )
        return schema

    def publish_parameters(self, pace: float | None, paused: bool) -> None:
        from foxglove.websocket import Parameter

        self._server.publish_parameter_values(
            [Parameter("pace", value=float(pace or 0.0)), Parameter("paused", value=bool(paused))]
        )

    def stop(self) -> None:
        if self._relay is not None:
            self._relay.stop()
        self._server.stop()

    # ------------------------------------------------------------------ commands in
    def command(self, kind: str, value=None):
        """Send a command to the simulation and wait for its result (raises ValueError)."""
        future = self._commander.command(kind, value)
        try:
            return future.result(timeout=COMMAND_TIMEOUT_S)
        except TimeoutError:
            raise ValueError(
                f"the simulation did not take the {kind} command within {COMMAND_TIMEOUT_S:g} s (has the run ended?)"
            ) from None

    def _services(self) -> list:
        from foxglove.websocket import MessageSchema, Service, ServiceSchema

        def json_schema(name: str, properties: dict):
            return MessageSchema(
                encoding="json",
                schema=self._foxglove.Schema(
                    name=name,
                    encoding="jsonschema",
                    data=json.dumps({"type": "object", "properties": properties}).encode(),
                ),
            )

        def handler(kind: str, parse: Callable[[dict], object]):
            def handle(request) -> bytes:
                try:
                    body = json.loads(bytes(request.payload) or b"{}")
                except ValueError:
                    raise ValueError("the request is not JSON") from None
                if not isinstance(body, dict):
                    raise ValueError("the request must be a JSON object")
                return json.dumps({"result": self.command(kind, parse(body))}).encode()

            return handle

        reply = json_schema("hopsim.CommandReply", {"result": {}})
        fault_fields = {
            "target": {"type": "string"},
            "kind": {"type": "string"},
            "index": {"type": "integer"},
            "value": {"type": "number"},
            "duration_s": {"type": "number"},
            "vehicles": {"type": "array", "items": {"type": "string"}},
            "force_N": {"type": "array", "items": {"type": "number"}},
            "torque_B": {"type": "array", "items": {"type": "number"}},
            "clear": {"type": "boolean"},
        }
        specs = [
            ("pause", json_schema("hopsim.Pause", {}), lambda body: None),
            ("resume", json_schema("hopsim.Resume", {}), lambda body: None),
            (
                "pace",
                json_schema("hopsim.Pace", {"factor": {"type": "number"}}),
                lambda body: _factor(body.get("factor")),
            ),
            ("fault", json_schema("hopsim.FaultRequest", fault_fields), lambda body: body),
        ]
        return [
            Service(
                name=name,
                schema=ServiceSchema(name=f"hopsim.{name}", request=request, response=reply),
                handler=handler(name, parse),
            )
            for name, request, parse in specs
        ]


class TokenRelay:
    """A WebSocket relay on ``host:port`` to the live server on 127.0.0.1:``target_port`` that admits
    a client only if its URL's query has ``token`` (compared in constant time); others get HTTP 401.
    Frames pass through unchanged in both directions, with the subprotocol the client asked for."""

    SUBPROTOCOLS = ["foxglove.sdk.v1", "foxglove.websocket.v1"]

    def __init__(self, host: str, port: int, target_port: int, token: str):
        self._target = f"ws://127.0.0.1:{target_port}"
        self._token = token
        self._loop = asyncio.new_event_loop()
        self._started = threading.Event()
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, args=(host, port), daemon=True, name="hopsim-live-relay")
        self._thread.start()
        self._started.wait(10)
        if self._error is not None:
            raise LiveError(f"cannot serve on {host}:{port}: {self._error}; pick another --live-port")

    def _run(self, host: str, port: int) -> None:
        from websockets.asyncio.server import serve

        async def main():
            try:
                self._server = await serve(
                    self._relay,
                    host,
                    port,
                    subprotocols=self.SUBPROTOCOLS,
                    process_request=self._check,
                    compression=None,
                    max_size=None,
                )
            except OSError as err:
                self._error = err
                self._started.set()
                return
            self.port = self._server.sockets[0].getsockname()[1]
            self._started.set()
            await self._server.wait_closed()

        self._loop.run_until_complete(main())

    def _check(self, connection, request):
        given = parse_qs(urlparse(request.path).query).get("token", [""])[0]
        if not hmac.compare_digest(given.encode(), self._token.encode()):
            return connection.respond(HTTPStatus.UNAUTHORIZED, "a live hopsim run: add ?token=... to the URL\n")
        return None

    async def _relay(self, client) -> None:
        from websockets.asyncio.client import connect
        from websockets.exceptions import ConnectionClosed

        async with connect(
            self._target, subprotocols=[client.subprotocol], compression=None, max_size=None
        ) as upstream:

            async def pipe(a, b):
                try:
                    async for frame in a:
                        await b.send(frame)
                except ConnectionClosed:
                    pass
                finally:
                    await b.close()

            await asyncio.gather(pipe(client, upstream), pipe(upstream, client))

    def stop(self) -> None:
        if self._loop.is_running():
            self._loop.call_soon_threadsafe(self._server.close)
        self._thread.join(5)


def _factor(value) -> float | None:
    """A pacing factor from a client: 0 (or none) runs as fast as it can."""
    if value is None:
        return None
    value = float(value)
    return None if value == 0 else value


class _Listener(ServerListener):
    """The SDK's callbacks: parameters get and set."""

    def __init__(self, server: LiveServer):
        self._server = server

    def on_get_parameters(self, client, param_names, request_id=None):
        from foxglove.websocket import Parameter

        pacer = self._server.commander
        return [
            Parameter("pace", value=float(getattr(pacer, "factor", None) or 0.0)),
            Parameter("paused", value=bool(getattr(pacer, "paused", False))),
        ]

    def on_set_parameters(self, client, parameters, request_id=None):
        for p in parameters:
            value = p.get_value()
            try:
                if p.name == "pace":
                    self._server.command("pace", _factor(value))
                elif p.name == "paused":
                    self._server.command("pause" if value else "resume")
            except ValueError:
                pass  # the values sent back say what holds
        return self.on_get_parameters(client, [p.name for p in parameters], request_id)


__all__ = ["LiveServer", "LiveError", "TokenRelay", "is_loopback"]
