import os

import pytest

os.environ.setdefault("RAY_DEDUP_LOGS", "0")
# pytest-xdist's workers start with COLUMNS=80 and LINES=24 in their environment, which rich reads
# once, when the command's consoles are made: the tests set the width they check themselves
for _fixed in ("COLUMNS", "LINES"):
    os.environ.pop(_fixed, None)


def ray_processes() -> list[str]:
    """Command lines of the Ray processes on this machine (raylet, GCS, workers)."""
    found = []
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            try:
                with open(f"/proc/{pid}/cmdline", "rb") as f:
                    cmd = f.read().replace(b"\0", b" ").decode(errors="replace")
            except OSError:
                continue
            if "raylet" in cmd or "gcs_server" in cmd or "ray::" in cmd:
                found.append(cmd[:80])
    return found


@pytest.fixture(scope="module")
def shared_ray():
    """A local Ray for the tests of one module; none of its processes may outlive it."""
    import ray

    from hopsim.kernel.distributed.ray_runtime import start_ray, stop_ray

    start_ray(num_cpus=2)  # as the command starts it: its own local Ray, token authentication on
    yield ray
    stop_ray()
    assert no_ray_processes_within(15.0), ray_processes()


def no_ray_processes_within(seconds: float) -> bool:
    """Whether every Ray process has exited within ``seconds`` (they exit a moment after shutdown)."""
    import time

    deadline = time.monotonic() + seconds
    while ray_processes():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.2)
    return True


@pytest.fixture(scope="session")
def ray_processes_left():
    """``left(seconds)``: the Ray processes still running once ``seconds`` have passed or all have
    exited (for a module's own Ray, or cluster, to check what its shutdown left)."""

    def left(seconds: float = 0.0) -> list[str]:
        return [] if no_ray_processes_within(seconds) else ray_processes()

    return left


_exit_status: int | None = None


def pytest_sessionfinish(session, exitstatus):
    global _exit_status
    _exit_status = int(exitstatus)


@pytest.hookimpl(trylast=True)
def pytest_unconfigure(config):
    """End the test process as soon as pytest has reported, with pytest's own exit status.

    The suite starts and stops several local Ray sessions in one process; Ray's native background
    threads can outlive a session and crash the interpreter's final teardown (a segmentation fault
    after every test passed, seen on a cold machine). Nothing is left to run at that point: the
    reports are written and flushed, so the process leaves without the interpreter's teardown.
    """
    import sys

    if _exit_status is not None and "ray" in sys.modules:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(_exit_status)


def pytest_itemcollected(item):
    """Every test of a ``test_ray_*`` module starts Ray: marked so, like the others that do, for
    ``tests/run_suite.sh``, which runs them in a pytest process of their own."""
    if item.module.__name__.startswith("test_ray_"):
        item.add_marker(pytest.mark.ray)
