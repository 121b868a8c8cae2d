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

    from hopsim.kernel.distributed.ray_runtime import start_ray

    start_ray(num_cpus=2)              # as the command starts it: its own local Ray, token authentication on
    yield ray
    ray.shutdown()
    assert ray_processes() == []
