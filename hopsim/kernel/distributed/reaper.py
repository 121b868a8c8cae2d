"""Ray's processes go when the driver that started them goes, however it goes.

A local Ray started by hopsim runs a GCS, a raylet, workers and two agents (dashboard and
runtime-env) as the driver's descendants. ``ray.shutdown()`` stops them; a driver killed with
SIGKILL cannot, and while the GCS and raylet notice and exit, Ray's agents listen on for minutes.
The *reaper* is a small process the driver starts just before its Ray (so that a driver killed
while Ray starts, which takes seconds, is covered too): it notes the driver's Ray descendants
every second and holds the read end of a pipe whose write end only the driver holds. The driver
says ``done`` on the pipe after ``ray.shutdown()``; if instead the pipe closes without a word,
the driver died, and the reaper stops (SIGTERM, then SIGKILL after 3 s) every noted process
still running, and every Ray process of the driver's session that it had no time to note (one
started since its last look, such as the agents the raylet starts at the end of Ray's start-up,
which no longer descend from the driver once the raylet is gone): a local Ray's session is named
after the driver's pid, ``session_<date>_<time>_<us>_<pid>``, and its processes carry the name on
their command line. Processes are named by (pid, start time), and only processes started after
the driver are taken, so a reused pid is never touched. Linux only (``/proc``); elsewhere no
reaper is started.

Run as ``python -m hopsim.kernel.distributed.reaper DRIVER_PID``.
"""

from __future__ import annotations

import contextlib
import os
import re
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

PROC = Path("/proc")
NOTE_EVERY_S = 1.0
GRACE_S = 3.0


def _stat(pid: int) -> list[str] | None:
    """The fields of ``/proc/PID/stat`` after the command name (state first), or None."""
    try:
        return (PROC / str(pid) / "stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None


def start_time(pid: int) -> int | None:
    """The process's start time (clock ticks since boot), None if it is gone or a zombie."""
    fields = _stat(pid)
    if fields is None or fields[0] == "Z":
        return None
    return int(fields[19])


def descendants(pid: int) -> list[int]:
    """Every living descendant of process ``pid``."""
    children: dict[int, list[int]] = {}
    for entry in PROC.iterdir():
        if entry.name.isdigit():
            fields = _stat(int(entry.name))
            if fields is not None:
                children.setdefault(int(fields[1]), []).append(int(entry.name))
    found, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def is_ray_process(pid: int) -> bool:
    """A process of Ray's: its GCS, raylet, agents, log monitor or workers (``ray::...``)."""
    try:
        argv = (PROC / str(pid) / "cmdline").read_bytes().split(b"\0")
    except OSError:
        return False
    text = b" ".join(argv)
    return (
        argv[0].startswith(b"ray::")
        or os.path.basename(argv[0]) in (b"raylet", b"gcs_server")
        or b"site-packages/ray/" in text
    )


def session_processes(driver: int, since: int) -> dict[int, int]:
    """The Ray processes (pid -> start time) of the local Ray session that process ``driver``
    started (its name ends with the driver's pid) that started at or after ``since`` (the
    driver's start time, clock ticks since boot)."""
    session = re.compile(rb"session_\d{4}-\d\d-\d\d_\d\d-\d\d-\d\d_\d+_%d(?![0-9])" % driver)
    found = {}
    for entry in PROC.iterdir():
        if not entry.name.isdigit():
            continue
        pid = int(entry.name)
        try:
            cmdline = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        if session.search(cmdline) and is_ray_process(pid):
            t0 = start_time(pid)
            if t0 is not None and t0 >= since:
                found[pid] = t0
    return found


def start_reaper() -> subprocess.Popen | None:
    """Start the reaper of this process's Ray (call right before ``ray.init`` starts it)."""
    if not PROC.is_dir():
        return None
    return subprocess.Popen(
        [sys.executable, "-m", __name__, str(os.getpid())],
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )


def stop_reaper(reaper: subprocess.Popen | None, reap: bool = False) -> None:
    """Tell the reaper that Ray was shut down in order (call after ``ray.shutdown()``), or with
    ``reap`` that it did not start (``ray.init`` failed): the reaper stops what it started."""
    if reaper is None:
        return
    try:
        if not reap:
            reaper.stdin.write(b"done\n")
        reaper.stdin.close()
    except OSError:  # it is gone already
        pass
    reaper.wait(timeout=10 + 2 * GRACE_S)


def reap(noted: dict[int, int]) -> None:
    """Stop the noted processes (pid -> start time) that still run: SIGTERM, then SIGKILL."""

    def running() -> list[int]:
        return [pid for pid, t0 in noted.items() if start_time(pid) == t0]

    for sig, wait_s in ((signal.SIGTERM, GRACE_S), (signal.SIGKILL, 0.0)):
        for pid in running():
            with contextlib.suppress(OSError):
                os.kill(pid, sig)
        end = time.monotonic() + wait_s
        while running() and time.monotonic() < end:
            time.sleep(0.1)


def watch(driver: int, pipe_fd: int = 0) -> None:
    """Note ``driver``'s Ray processes until the pipe says ``done`` (return) or closes (reap)."""
    noted: dict[int, int] = {}
    said = b""
    since = start_time(driver)
    while True:
        for pid in descendants(driver):
            if pid not in noted and pid != os.getpid() and is_ray_process(pid):
                t0 = start_time(pid)
                if t0 is not None:
                    noted[pid] = t0
        readable, _, _ = select.select([pipe_fd], [], [], NOTE_EVERY_S)
        if readable:
            data = os.read(pipe_fd, 64)
            said += data
            if b"done" in said:
                return
            if not data:  # the driver is gone without a word
                if since is not None:  # (None: it was gone before the reaper looked)
                    noted.update(session_processes(driver, since))
                reap(noted)
                return


if __name__ == "__main__":
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # a Ctrl-C in the terminal is the driver's to handle
    watch(int(sys.argv[1]))
