"""A cluster that `ray start --head` made on this machine, running or stopped, never takes over a
run that names no cluster; a cluster named but not there is a one-line error."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

RAY = str(Path(sys.executable).with_name("ray"))


def hopsim(*args, cwd):
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAY_")}
    return subprocess.run(
        [sys.executable, "-m", "hopsim.cli", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=300
    )


@pytest.mark.ray
def test_a_cluster_of_ray_start_neither_takes_over_nor_hangs_a_run(tmp_path):
    port = "6391"
    started = subprocess.run(
        [
            RAY,
            "start",
            "--head",
            f"--port={port}",
            "--num-cpus=1",
            "--include-dashboard=false",
            "--node-ip-address=127.0.0.1",
        ],
        capture_output=True,
        text=True,
        timeout=180,
    )
    try:
        assert started.returncode == 0, started.stderr
        run = hopsim("run", "lander", "--duration", "2", "--backend", "ray", "--no-progress", cwd=tmp_path)
        assert run.returncode == 0 and "lander: 2 s simulated" in run.stdout, run.stderr
    finally:
        subprocess.run([RAY, "stop", "--force"], capture_output=True, timeout=120)
    gone = hopsim(
        "run",
        "lander",
        "--duration",
        "2",
        "--backend",
        "ray",
        "--ray-address",
        f"127.0.0.1:{port}",
        "--no-progress",
        cwd=tmp_path,
    )
    text = " ".join(gone.stderr.split())
    assert gone.returncode == 2 and f"no Ray cluster answers at 127.0.0.1:{port}" in text and "ray status" in text
    assert "Traceback" not in gone.stderr


def listening_addresses(pids: set[int]) -> list[tuple[int, str]]:
    """(pid, address) of every listening TCP socket the processes ``pids`` hold, read from /proc."""
    import ipaddress

    inode_pid = {}
    for pid in pids:
        try:
            for fd in Path(f"/proc/{pid}/fd").iterdir():
                target = os.readlink(fd)
                if target.startswith("socket:["):
                    inode_pid[target[8:-1]] = pid
        except OSError:
            continue
    found = []
    for table in ("tcp", "tcp6"):
        for line in Path(f"/proc/net/{table}").read_text().splitlines()[1:]:
            fields = line.split()
            local, state, inode = fields[1], fields[3], fields[9]
            if state != "0A" or inode not in inode_pid:  # 0A: LISTEN
                continue
            hexaddr = local.split(":")[0]
            raw = b"".join(bytes.fromhex(hexaddr[i : i + 8])[::-1] for i in range(0, len(hexaddr), 8))
            found.append((inode_pid[inode], str(ipaddress.ip_address(raw))))
    return found


@pytest.mark.ray
def test_a_local_ray_listens_on_the_loopback_interface_only(shared_ray):
    import ipaddress

    from hopsim.kernel.distributed.reaper import descendants, is_ray_process

    @shared_ray.remote
    def pid():
        return os.getpid()

    worker = shared_ray.get(pid.remote())
    ray_pids = {p for p in descendants(os.getpid()) if is_ray_process(p)}
    assert worker in ray_pids
    sockets = listening_addresses(ray_pids | {os.getpid()})
    assert len(sockets) >= 4  # GCS, raylet (2), the worker, the agents
    for owner, address in sockets:
        ip = ipaddress.ip_address(address)
        ip = ip.ipv4_mapped or ip if ip.version == 6 else ip
        assert ip.is_loopback, (owner, Path(f"/proc/{owner}/cmdline").read_bytes(), address)
