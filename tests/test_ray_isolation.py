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
    return subprocess.run([sys.executable, "-m", "hopsim.cli", *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=300)


@pytest.mark.ray
def test_a_cluster_of_ray_start_neither_takes_over_nor_hangs_a_run(tmp_path):
    port = "6391"
    started = subprocess.run([RAY, "start", "--head", f"--port={port}", "--num-cpus=1", "--include-dashboard=false",
                              "--node-ip-address=127.0.0.1"], capture_output=True, text=True, timeout=180)
    try:
        assert started.returncode == 0, started.stderr
        run = hopsim("run", "lander", "--duration", "2", "--backend", "ray", "--no-progress", cwd=tmp_path)
        assert run.returncode == 0 and "lander: 2 s simulated" in run.stdout, run.stderr
    finally:
        subprocess.run([RAY, "stop", "--force"], capture_output=True, timeout=120)
    run = hopsim("run", "lander", "--duration", "2", "--backend", "ray", "--no-progress", cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    gone = hopsim("run", "lander", "--duration", "2", "--backend", "ray", "--ray-address", f"127.0.0.1:{port}",
                  "--no-progress", cwd=tmp_path)
    text = " ".join(gone.stderr.split())
    assert gone.returncode == 2 and f"no Ray cluster answers at 127.0.0.1:{port}" in text and "ray status" in text
    assert "Traceback" not in gone.stderr
