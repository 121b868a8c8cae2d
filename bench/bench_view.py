"""`hopsim view` with many vehicles: how long a recording takes to read and to load in the page, and
the page's frame rate while playing.

A recording of N vehicles (default 10,000) at 10 Hz for 10 s (1,000,000 states) is written with
hopsim's recorder (scene channels included, as `hopsim run` writes them): each vehicle circles a
point of a lattice while it spins about z. The server reads it (`RunView`: poses, events, signal
catalog); headless Chromium (Debian's `chromium`, software WebGL through SwiftShader: no GPU here)
opens the page, plays it for 5 s and reports its frame rate and the JavaScript time per frame of
the pose update (the instanced bodies' matrices). The same is measured for 100 vehicles, the
peer in the same run. Frame rates on a machine with a GPU are higher: SwiftShader rasterizes on
the CPU, so the figures here bound them from below.

    .venv/bin/python bench/bench_view.py [--vehicles 10000] [--seconds 10] [--repeat 3]
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from hopsim.bus.envelope import Envelope
from hopsim.bus.recorder import McapRecorder
from hopsim.schemas import Quaternion, Vector3, VehicleState
from hopsim.view.browser import chromium_args, chromium_path
from hopsim.view.server import RunView, serve


def write_recording(path: Path, n: int, seconds: float, rate_hz: float = 10.0) -> int:
    """A recording of ``n`` vehicles circling lattice points (radius 0.5 m, 0.1 rad/s spin)."""
    side = math.ceil(math.sqrt(n))
    recorder = McapRecorder(path, {"scenario": "synthetic", "parameters_json": "{}"})
    steps = int(seconds * rate_hz) + 1
    count = 0
    for k in range(steps):
        t_ns = round(k * 1e9 / rate_hz)
        t = t_ns / 1e9
        c, s = math.cos(0.2 * t), math.sin(0.2 * t)
        half = 0.05 * t
        q = Quaternion(x=0.0, y=0.0, z=math.sin(half), w=math.cos(half))
        for v in range(n):
            name = f"v{v:05d}"
            x0, y0 = 3.0 * (v % side), 3.0 * (v // side)
            msg = VehicleState(
                vehicle=name, t_ns=t_ns, r_BN_N=Vector3(x=x0 + 0.5 * c, y=y0 + 0.5 * s, z=0.0), q_BN=q, mass=4.3
            )
            recorder.record(
                Envelope(t_ns=t_ns, deliver_ns=t_ns, source=name, topic=f"{name}/state", seq=k, priority=0, payload=msg)
            )
            count += 1
        recorder.flush()
    recorder.close()
    return count


def measure_page(path: Path, play_s: float = 5.0) -> dict:
    from playwright.sync_api import sync_playwright

    t0 = time.perf_counter()
    view = RunView(path)
    read_s = time.perf_counter() - t0
    server = serve(view)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=chromium_path(), args=chromium_args())
            page = browser.new_page(viewport={"width": 1400, "height": 850})
            page.goto(f"http://127.0.0.1:{server.server_address[1]}/")
            page.wait_for_function("window.hopsimViewer && window.hopsimViewer.ready", timeout=300_000)
            load_ms = page.evaluate("window.hopsimViewer.loadMs")
            page.evaluate("window.hopsimViewer.play()")
            page.wait_for_timeout(play_s * 1000)
            fps = page.evaluate("window.hopsimViewer.fps()")
            pose_ms = page.evaluate("window.hopsimViewer.poseMs()")
            browser.close()
    finally:
        server.shutdown()
        server.server_close()
    return {
        "read_s": read_s,
        "load_s": load_ms / 1000,
        "fps": fps,
        "pose_ms": pose_ms,
        "vehicles": len(view.poses.vehicles),
        "instants": len(view.poses.t_s),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--vehicles", type=int, default=10_000)
    ap.add_argument("--seconds", type=float, default=10.0)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        files = {}
        for n in (100, args.vehicles):
            path = Path(tmp) / f"v{n}.mcap"
            t0 = time.perf_counter()
            count = write_recording(path, n, args.seconds)
            files[n] = path
            print(
                f"# {n} vehicles: {count:,} states, {path.stat().st_size / 2**20:.1f} MiB, written in "
                f"{time.perf_counter() - t0:.1f} s",
                file=sys.stderr,
            )
        results = {n: [] for n in files}
        for _ in range(args.repeat):  # interleaved repeats
            for n, path in files.items():
                results[n].append(measure_page(path))
    print("### Viewer (`hopsim view`)\n")
    print(
        f"{args.seconds:g} s at 10 Hz per vehicle; headless Chromium with software WebGL (SwiftShader, "
        f"no GPU); medians of {args.repeat} interleaved repeats.\n"
    )
    print("| vehicles | instants | server read (s) | page load (s) | frames/s playing | pose update (ms/frame) |")
    print("|---|---|---|---|---|---|")
    for n, rows in results.items():
        med = {k: statistics.median(r[k] for r in rows) for k in ("read_s", "load_s", "fps", "pose_ms")}
        print(
            f"| {n:,} | {rows[0]['instants']} | {med['read_s']:.2f} | {med['load_s']:.2f} | {med['fps']:.1f} | "
            f"{med['pose_ms']:.2f} |"
        )


if __name__ == "__main__":
    main()
