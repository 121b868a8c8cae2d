"""``hopsim view``: a recording served to a page in the user's browser, on 127.0.0.1.

The server reads the recording once (:class:`~hopsim.view.columns.ColumnReader`) and answers:

- ``/``: the page (``static/index.html``) and its scripts: the viewer (``static/viewer.js``),
  three.js (``static/vendor/three``) and plotly.js (from the installed ``plotly`` package). Nothing
  is fetched from elsewhere: the page works offline.
- ``/api/run``: JSON; the run's description, time span, vehicles, timeline events, the scene's
  kind (``volume`` with its bounds, ``orbit`` with the Earth's radius, or ``space``) and the
  signal catalog.
- ``/api/poses``: the vehicles' poses, binary (:meth:`hopsim.view.run_data.Poses.to_bytes`).
- ``/api/signal?name=TOPIC.FIELD``: JSON ``{t_s, values}`` of one signal, at most
  ``MAX_PLOT_POINTS`` points (min and max of each bucket kept when there are more).

Requests are served on threads; reads of the recording are serialized by a lock.

Only requests addressed to the server by name are answered: their ``Host`` header must name a
loopback address (``127.0.0.1``, ``localhost``, ``[::1]``) or the address the server was asked
to bind to (``--host``), with any port (an SSH tunnel's forwarded port too). Anything else gets
403: a web page whose DNS name was rebound to 127.0.0.1 sends its own name and cannot read the
recording.
"""

from __future__ import annotations

import ipaddress
import json
import mimetypes
import threading
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from importlib import resources
from pathlib import Path
from urllib.parse import parse_qs, urlparse

import numpy as np

from hopsim.view.columns import ColumnReader, ColumnsReport, SignalError, read_signals
from hopsim.view.plots import decimate
from hopsim.view.run_data import read_events, read_poses, read_run_info, signal_catalog

STATIC = Path(__file__).parent / "static"
MAX_PLOT_POINTS = 20_000
EARTH_RADIUS_M = 6_378_137.0
ORBIT_RADIUS_M = 6.0e6  # vehicles farther than this from N's origin fly in orbit about the Earth
LOOPBACK_NAMES = ("127.0.0.1", "localhost", "[::1]")


def _host_name(name: str) -> str:
    """``name`` as a Host header writes it: lower case, an IPv6 address in brackets, compressed."""
    name = name.strip().lower()
    bare = name[1:-1] if name.startswith("[") and name.endswith("]") else name
    try:
        address = ipaddress.ip_address(bare)
    except ValueError:
        return name
    return f"[{address.compressed}]" if address.version == 6 else address.compressed


def allowed_hosts(host: str) -> frozenset[str]:
    """The names a request's Host header may give to a server bound to ``host``."""
    return frozenset(_host_name(n) for n in (*LOOPBACK_NAMES, host))


def host_allowed(header: str | None, allowed: frozenset[str]) -> bool:
    """Whether a Host header (``name`` or ``name:port``) names one of ``allowed``."""
    if not header:
        return False
    name, port = header, None
    if header.startswith("["):  # [IPv6] or [IPv6]:port
        end = header.find("]")
        if end < 0:
            return False
        name, rest = header[: end + 1], header[end + 1 :]
        if rest:
            if not rest.startswith(":"):
                return False
            port = rest[1:]
    elif ":" in header:
        name, port = header.rsplit(":", 1)
    if port is not None and not (port.isascii() and port.isdigit() and len(port) <= 5):
        return False
    return _host_name(name) in allowed


def _plotly_js() -> Path:
    return Path(str(resources.files("plotly") / "package_data" / "plotly.min.js"))


class RunView:
    """A recording prepared for the page: what ``/api/run`` and ``/api/poses`` answer, computed
    once; signals read on request. With ``follow``, a recording still being written (a live run's
    ``--out``): each ``/api/run`` reads it again if it has grown (up to its last closed chunk).
    ``then``: the file ``path`` becomes when its run ends (``path`` is its partial name, see
    :mod:`hopsim.bus.atomic`), read from then on."""

    def __init__(self, path: str | Path, follow: bool = False, hill_of: str | None = None, then: Path | None = None):
        self.path = Path(path)
        self.then = then
        self.follow = follow
        self.hill_of = hill_of  # a vehicle: the poses in its Hill frame (see read_poses)
        self._lock = threading.Lock()
        self._size = -1
        self._read()

    def _read(self) -> None:
        size = self.path.stat().st_size
        report = ColumnsReport()
        reader = ColumnReader(self.path, report)
        origin = self.poses.origin_N if self._size >= 0 and self.poses.vehicles else None
        poses = read_poses(reader, origin_N=origin, hill_of=self.hill_of)
        events, catalog, info = read_events(reader), signal_catalog(reader), read_run_info(reader)
        self.report, self._reader, self.poses, self.events, self.catalog, self.info = (
            report,
            reader,
            poses,
            events,
            catalog,
            info,
        )
        self._size = size

    def refresh(self) -> bool:
        """Read the recording again if it has grown; whether it had."""
        with self._lock:
            try:
                size = self.path.stat().st_size
            except FileNotFoundError:
                if self.then is None:
                    raise
                self.path, self.then = Path(self.then), None  # the run ended: its file has its own name
                size = self.path.stat().st_size
            if size == self._size:
                return False
            self._read()
            return True

    def scene(self) -> dict:
        """What surrounds the vehicles: the test volume (the run's ``scene_json`` metadata), the
        Earth (vehicles farther than ORBIT_RADIUS_M from N's origin), or nothing (a grid; also in
        a chief's Hill frame)."""
        if self.hill_of is not None:
            return {"kind": "hill", "chief": self.hill_of}
        try:
            described = json.loads(self.info.get("run", {}).get("scene_json", "{}"))
            lo, hi = described["volume_N"]
            return {"kind": "volume", "min_N": [float(x) for x in lo], "max_N": [float(x) for x in hi]}
        except (TypeError, ValueError, KeyError):
            pass
        if float(np.linalg.norm(self.poses.origin_N)) > ORBIT_RADIUS_M:
            return {"kind": "orbit", "earth_radius_m": EARTH_RADIUS_M}
        return {"kind": "space"}

    def run(self) -> dict:
        p = self.poses
        t = p.t_s
        return {
            "file": self.path.name,
            "info": self.info,
            "scene": self.scene(),
            "follow": self.follow,
            "frame": p.frame,
            "t0_s": float(t[0]) if len(t) else 0.0,
            "t1_s": float(t[-1]) if len(t) else 0.0,
            "vehicles": len(p.vehicles),
            "instants": len(t),
            "every": p.every,
            "events": self.events,
            "catalog": self.catalog,
            "chunks": self.report.chunks,
            "damaged_chunks": self.report.damaged_chunks,
        }

    def signal(self, name: str) -> dict:
        with self._lock:
            found = read_signals(self._reader, [name])[name]
        t, v = decimate(found.t_s, found.values, MAX_PLOT_POINTS)
        return {
            "name": name,
            "t_s": t.tolist(),
            "values": [None if not np.isfinite(x) else float(x) for x in v],
            "points": len(found.values),
            "shown": len(v),
        }


class _Handler(BaseHTTPRequestHandler):
    server_version = "hopsim-view"
    view: RunView
    allowed: frozenset[str] = allowed_hosts("127.0.0.1")

    def log_message(self, fmt, *args):  # quiet: the command prints the address once
        pass

    def do_GET(self):
        url = urlparse(self.path)
        route = url.path
        try:
            hosts = self.headers.get_all("Host") or []
            if len(hosts) != 1 or not host_allowed(hosts[0], self.allowed):
                return self._refuse_host(hosts)
            if route in ("/", "/index.html"):
                return self._file(STATIC / "index.html")
            if route == "/favicon.ico":
                return self._bytes(b"", "image/x-icon", HTTPStatus.NO_CONTENT)
            if route == "/api/run":
                if self.view.follow:
                    self.view.refresh()
                return self._json(self.view.run())
            if route == "/api/poses":
                return self._bytes(self.view.poses.to_bytes(), "application/octet-stream")
            if route == "/api/signal":
                name = parse_qs(url.query).get("name", [""])[0]
                try:
                    return self._json(self.view.signal(name))
                except SignalError as err:
                    return self._json({"error": str(err)}, HTTPStatus.BAD_REQUEST)
            if route == "/static/vendor/plotly.min.js":
                return self._file(_plotly_js())
            if route.startswith("/static/"):
                target = (STATIC / route[len("/static/") :]).resolve()
                if STATIC.resolve() in target.parents and target.is_file():
                    return self._file(target)
            self.send_error(HTTPStatus.NOT_FOUND)
        except (BrokenPipeError, ConnectionResetError):
            pass

    def _refuse_host(self, hosts: list[str]):
        given = "no Host header" if not hosts else f"Host {hosts[0][:100]!r}"
        if len(hosts) > 1:
            given = f"{len(hosts)} Host headers"
        names = ", ".join(sorted(self.allowed))
        text = (
            f"403 Forbidden: this hopsim viewer answers only requests addressed to {names} "
            f"(the Host header, with any port); this request has {given}\n"
        )
        self._bytes(text.encode(), "text/plain; charset=utf-8", HTTPStatus.FORBIDDEN)

    def _file(self, path: Path):
        kind = mimetypes.guess_type(path.name)[0] or "application/octet-stream"
        if path.suffix == ".js":
            kind = "text/javascript"
        self._bytes(path.read_bytes(), kind)

    def _json(self, obj, status=HTTPStatus.OK):
        self._bytes(json.dumps(obj).encode(), "application/json", status)

    def _bytes(self, body: bytes, kind: str, status=HTTPStatus.OK):
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-store")
        self.send_header("X-Content-Type-Options", "nosniff")
        self.end_headers()
        self.wfile.write(body)


def serve(view: RunView, host: str = "127.0.0.1", port: int = 0) -> ThreadingHTTPServer:
    """A server for ``view`` bound to ``host:port`` (port 0: a free one), not yet serving; call
    ``serve_forever()`` (or run it on a thread) and ``shutdown()``. It answers requests whose Host
    header names ``host`` or a loopback address (see :func:`host_allowed`), 403 to others."""
    handler = type("Handler", (_Handler,), {"view": view, "allowed": allowed_hosts(host)})
    server = ThreadingHTTPServer((host, port), handler)
    server.daemon_threads = True
    return server


__all__ = ["MAX_PLOT_POINTS", "RunView", "allowed_hosts", "decimate", "host_allowed", "serve"]
