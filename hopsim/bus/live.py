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
applies it inside the simulation at its next tick. A fault so sent is checked as a scenario's
faults are before the run (one its target cannot take is answered with the error, and the run
goes on) and is then an ordinary bus message on ``faults/<target>``, recorded like any other.

A pause is held by the clients that asked for it: when the last of them disconnects, the run
resumes (a ``resume``, from any client, releases every pause).

The SDK's server has no authentication, and tells nobody when a client leaves: it listens on
127.0.0.1 on a free port, and clients connect to a relay (:class:`TokenRelay`) on ``host:port``
(127.0.0.1:8765 by default). Given a token (one is drawn on an address other than loopback), the
relay admits only clients whose URL carries it (``ws://HOST:PORT/?token=T``), on every address,
loopback included. It introduces each connection to the server (a ``getParameters`` request
with a secret id), so that commands are known by client and a client's leaving ends its pause;
the server takes no command from a connection the relay did not introduce (a local program that
found the SDK's port reads the stream, but commands nothing).
"""

from __future__ import annotations

import asyncio
import hmac
import ipaddress
import itertools
import json
import secrets
import threading
from collections.abc import Callable
from http import HTTPStatus
from urllib.parse import parse_qs, quote, urlparse

from foxglove.websocket import ServerListener

LOOPBACK_HOSTS = {"localhost"}
COMMAND_TIMEOUT_S = 30.0
GREETING_TIMEOUT_S = 10.0  # for the SDK's server to answer the relay's introduction of a client


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
        """Clients connect to ``host:port`` (a relay to the SDK's server on 127.0.0.1). A ``token``
        is asked of every client, whatever the address; on an address other than loopback one is
        drawn when None (:attr:`url` carries it); on loopback without one, any client is admitted."""
        import foxglove
        from foxglove.websocket import Capability

        if token is not None and not token:
            raise LiveError("--live-token is empty: give the token clients must send, or leave the option out")
        self._foxglove = foxglove
        self._commander = commander
        self._channels: dict[str, object] = {}
        self._schemas: dict[type, object] = {}
        self._lock = threading.Lock()
        self._last_time = None
        self._relay = None
        # the relay's introduction of each connection: getParameters with the id GREETING + n
        self._greeting = f"hopsim-relay:{secrets.token_urlsafe(18)}:"
        self._clients: dict[int, int] = {}  # the relay's connection n -> the SDK's client id
        self._pausing: set[int] = set()  # the SDK's ids of the connected clients that hold a pause
        try:
            self._server = foxglove.start_server(
                name=name,
                host="127.0.0.1",
                port=0,
                capabilities=[Capability.Parameters, Capability.Services, Capability.Time],
                server_listener=_Listener(self),
                supported_encodings=["json"],
                services=self._services(),
            )
        except Exception as err:
            raise LiveError(f"cannot start the live server: {err}") from None
        self.token = token if token is not None or is_loopback(host) else secrets.token_urlsafe(18)
        try:
            self._relay = TokenRelay(
                host, port, self._server.port, self.token, greeting=self._greeting, on_close=self._client_left
            )
        except BaseException:
            self._server.stop()
            raise
        where = f"[{host}]" if ":" in host else host
        self.url = f"ws://{where}:{self._relay.port}"
        if self.token is not None:
            self.url += f"/?token={quote(self.token, safe='')}"

    @property
    def commander(self):
        return self._commander

    @property
    def port(self) -> int:
        """The port clients connect to (the relay's)."""
        return self._relay.port

    @property
    def upstream_port(self) -> int:
        """The SDK's server's own port, on 127.0.0.1 (behind the relay)."""
        return self._server.port

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

    # ------------------------------------------------------------------ clients
    def _introduced(self, client_id: int, request_id: str | None) -> bool:
        """Whether a getParameters request is the relay's introduction of connection n (its id is
        the secret greeting + n): the SDK's ``client_id`` is then that connection's."""
        if not request_id or not request_id.startswith("hopsim-relay:"):
            return False
        prefix, _, n = request_id.rpartition(":")
        if not (hmac.compare_digest((prefix + ":").encode(), self._greeting.encode()) and n.isdigit()):
            return False
        with self._lock:
            self._clients[int(n)] = client_id
        return True

    def _client_left(self, n: int) -> None:
        """The relay's connection n closed: the pause it held, if the last one, ends."""
        with self._lock:
            client_id = self._clients.pop(n, None)
            if client_id is None or client_id not in self._pausing:
                return
            self._pausing.discard(client_id)
            if self._pausing:
                return  # another client holds a pause
        self._commander.command("resume")  # not waited for: the run resumes at its next tick

    def _check_client(self, client_id: int) -> None:
        with self._lock:
            if client_id in self._clients.values():
                return
        raise ValueError(
            f"this connection did not come through the live server's address: connect to "
            f"{self.url.split('?')[0]} (commands are taken from there only)"
        )

    def _held(self, kind: str, client_id: int) -> None:
        """Who holds a pause, after ``client_id``'s ``kind`` took effect."""
        with self._lock:
            if kind == "resume":
                self._pausing.clear()
                return
            if kind != "pause":
                return
            if client_id in self._clients.values():
                self._pausing.add(client_id)
                return
            if self._pausing:
                return
        self._commander.command("resume")  # it left while its pause was on its way

    # ------------------------------------------------------------------ commands in
    def command(self, kind: str, value=None, client_id: int | None = None):
        """Send a command to the simulation and wait for its result (raises ValueError). With
        ``client_id`` (the SDK's), only from a client the relay introduced, and a pause it asks
        for is held until it resumes the run or disconnects."""
        if client_id is not None:
            self._check_client(client_id)
        future = self._commander.command(kind, value)
        try:
            result = future.result(timeout=COMMAND_TIMEOUT_S)
        except TimeoutError:
            raise ValueError(
                f"the simulation did not take the {kind} command within {COMMAND_TIMEOUT_S:g} s (has the run ended?)"
            ) from None
        if client_id is not None:
            self._held(kind, client_id)
        return result

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
                return json.dumps({"result": self.command(kind, parse(body), request.client_id)}).encode()

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


# the web pages that may connect (browsers send their origin; other clients send none): Foxglove's
# own app and pages served from this machine (hopsim's viewer)
FOXGLOVE_ORIGINS = ("https://app.foxglove.dev", "https://studio.foxglove.dev")


def allowed_origin(origin: str) -> bool:
    """Whether a browser page of ``origin`` may connect: Foxglove's app, or a page served from a
    loopback address (a page of any other site could otherwise command a run that has no token)."""
    if origin in FOXGLOVE_ORIGINS or origin == "file://":
        return True
    parsed = urlparse(origin)
    return parsed.scheme in ("http", "https") and parsed.hostname is not None and is_loopback(parsed.hostname)


class TokenRelay:
    """A WebSocket relay on ``host:port`` to the live server on 127.0.0.1:``target_port``. With a
    ``token``, it admits a client only if its URL's query has it (compared in constant time);
    others get HTTP 401. A browser's connection from a page other than Foxglove's app or one
    served from this machine (:func:`allowed_origin`) gets HTTP 403, token or not. Frames pass through unchanged in
    both directions, with the subprotocol the
    client asked for.

    With ``greeting``, each connection n is first introduced to the server (a getParameters
    request with the id ``greeting + n``, whose answer the client never sees) before any frame of
    the client's is passed on; ``on_close(n)`` is called when the connection ends."""

    SUBPROTOCOLS = ["foxglove.sdk.v1", "foxglove.websocket.v1"]

    def __init__(
        self,
        host: str,
        port: int,
        target_port: int,
        token: str | None,
        greeting: str | None = None,
        on_close: Callable[[int], None] | None = None,
    ):
        self._target = f"ws://127.0.0.1:{target_port}"
        self._token = token
        self._greeting = greeting
        self._on_close = on_close
        self._numbers = itertools.count(1)
        self._loop = asyncio.new_event_loop()
        self._started = threading.Event()
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, args=(host, port), daemon=True, name="hopsim-live-relay")
        self._thread.start()
        self._started.wait(10)
        if self._error is not None:
            raise LiveError(
                f"cannot serve on {host}:{port}: {self._error}; check --live-host, or pick another --live-port"
            )

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
        origin = request.headers.get("Origin")
        if origin is not None and not allowed_origin(origin):
            return connection.respond(
                HTTPStatus.FORBIDDEN,
                f"a live hopsim run takes no connection from a web page of {origin}: open Foxglove "
                "(app.foxglove.dev or the desktop app) or hopsim's own viewer\n",
            )
        if self._token is None:
            return None
        given = parse_qs(urlparse(request.path).query).get("token", [""])[0]
        if not hmac.compare_digest(given.encode(), self._token.encode()):
            return connection.respond(HTTPStatus.UNAUTHORIZED, "a live hopsim run: add ?token=... to the URL\n")
        return None

    async def _relay(self, client) -> None:
        from websockets.asyncio.client import connect
        from websockets.exceptions import ConnectionClosed

        if client.subprotocol is None:
            await client.close(1002, f"speak the Foxglove WebSocket protocol ({' or '.join(self.SUBPROTOCOLS)})")
            return
        n = next(self._numbers)
        try:
            async with connect(
                self._target, subprotocols=[client.subprotocol], compression=None, max_size=None
            ) as upstream:
                if self._greeting is not None:
                    try:
                        await asyncio.wait_for(self._introduce(n, client, upstream), GREETING_TIMEOUT_S)
                    except TimeoutError:
                        await client.close(1011, "the live server did not answer")
                        return

                async def pipe(a, b):
                    try:
                        async for frame in a:
                            await b.send(frame)
                    except ConnectionClosed:
                        pass
                    finally:
                        await b.close()

                await asyncio.gather(pipe(client, upstream), pipe(upstream, client))
        except ConnectionClosed:
            pass
        finally:
            if self._on_close is not None:
                self._on_close(n)

    async def _introduce(self, n: int, client, upstream) -> None:
        """Send connection n's introduction, and pass the server's frames on to the client until its
        answer (dropped); the client's own frames wait."""
        request_id = f"{self._greeting}{n}"
        await upstream.send(json.dumps({"op": "getParameters", "parameterNames": [], "id": request_id}))
        async for frame in upstream:
            if isinstance(frame, str) and request_id in frame:
                try:
                    answer = json.loads(frame)
                except ValueError:
                    answer = {}
                if answer.get("op") == "parameterValues" and answer.get("id") == request_id:
                    return
            await client.send(frame)

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

        if self._server._introduced(client.id, request_id):
            return []  # the relay's introduction of a client (it drops the answer)
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
                    self._server.command("pace", _factor(value), client.id)
                elif p.name == "paused":
                    self._server.command("pause" if value else "resume", client_id=client.id)
            except (ValueError, TypeError, OverflowError):
                pass  # the values sent back say what holds
        return self.on_get_parameters(client, [p.name for p in parameters], request_id)


__all__ = ["LiveError", "LiveServer", "TokenRelay", "is_loopback"]
