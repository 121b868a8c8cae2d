"""Compiling ahead: the kernel manifest names real kernels, and on a new machine the flagship's first
run compiles everything ahead (nothing left for a first call) while a later run compiles nothing."""

import os
import subprocess
import sys

import pytest

from hopsim.scenarios.compile_ahead import (
    Kernel,
    _dispatcher,
    _next_kernel,
    _parse_signature,
    _signature_text,
    load_manifest,
)


def test_every_kernel_of_the_manifest_exists_and_its_signature_reads_back():
    """... and takes as many arguments as the kernel has parameters (a manifest recorded before a
    kernel's parameters changed is stale: run ``python -m hopsim.scenarios.compile_ahead --record``)."""
    import inspect

    manifest = load_manifest()
    assert manifest["leader_follower"], "the flagship's kernels are listed"
    for kernels in manifest.values():
        for module, name, signature, seconds, calls in kernels:
            dispatcher = _dispatcher(module, name)
            assert hasattr(dispatcher, "compile"), f"{module}.{name}"
            assert _signature_text(_parse_signature(signature)) == signature
            assert len(_parse_signature(signature)) == len(inspect.signature(dispatcher.py_func).parameters), (
                f"{module}.{name}: the manifest is stale"
            )
            assert seconds >= 0
            assert all(call.startswith("hopsim.") for call in calls)
    assert any(kernel.calls for kernel in manifest["leader_follower"]), "the flagship's kernels say what they call"


def test_a_free_process_takes_the_longest_kernel_that_calls_nothing_another_is_compiling():
    big = Kernel("m", "big", "()", 9.0, ("m.shared", "m.a"))
    other = Kernel("m", "other", "()", 8.0, ("m.shared",))
    apart = Kernel("m", "apart", "()", 2.0, ("m.b",))
    pending = [big, other, apart]
    assert _next_kernel(pending, []) is big
    assert _next_kernel([other, apart], [big]) is apart  # other would compile m.shared a second time
    assert _next_kernel([other], [big]) is other  # nothing else left: the longest all the same
    assert _next_kernel([other, apart], [Kernel("m", "x", "()", 1.0, ("m.c",))]) is other


def _run(cache, scenario, *args):
    out = cache / f"{scenario}.mcap"  # recorded, as `make run` does
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "hopsim.cli",
            "run",
            scenario,
            "--no-progress",
            "--out",
            str(out),
            "--force",
            *args,
        ],
        env={**os.environ, "NUMBA_CACHE_DIR": str(cache)},
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return " ".join(done.stderr.split())


# the flagship (make run's scenario, 33 kernels: about 20 s of compiling on 2 cores) in make test-long; the
# lander's 14 in make test
@pytest.mark.parametrize("scenario", ["lander", pytest.param("leader_follower", marks=pytest.mark.long)])
def test_a_new_machine_compiles_a_scenario_ahead_and_later_runs_load_it(tmp_path, scenario):
    first = _run(tmp_path, scenario)  # the whole run, as `make run` flies it
    kernels = len(load_manifest()[scenario])
    assert f"compiling {kernels} numerical kernels of {scenario} ahead" in first
    assert f"compiled {kernels} kernels ahead in" in first
    assert "compiled numerical kernels in" not in first  # nothing was left to a first call
    later = _run(tmp_path, scenario, "--duration", "5")
    assert "compil" not in later
