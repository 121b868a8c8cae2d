import os

import pytest

os.environ.setdefault("RAY_DEDUP_LOGS", "0")


def ray_processes() -> list[str]:
    """Command lines of the Ray processes on this machine (raylet, GCS, workers)."""
    found = []
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            try:
                cmd = open(f"/proc/{pid}/cmdline", "rb").read().replace(b"\0", b" ").decode(errors="replace")
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


@pytest.hookimpl(tryfirst=True)  # before xdist reads the groups
def pytest_collection_modifyitems(config, items):
    """``make test`` runs the suite on two pytest-xdist workers (``--dist loadgroup``): every test
    that starts Ray is put in one group, so that one worker runs them one after another (two Ray
    sessions at once would see, and count, each other's processes)."""
    for item in items:
        if item.get_closest_marker("ray") or item.module.__name__.startswith("test_ray_"):
            item.add_marker(pytest.mark.xdist_group("ray"))
