"""Every built-in scenario records the same stream whatever code the CPU's features select.

The C library, numpy and OpenBLAS each pick their code by CPU feature; on one machine the same
choices can be forced other ways: glibc's tunables hide AVX2 and FMA from its libm (as on a CPU
without them), ``NPY_DISABLE_CPU_FEATURES`` turns numpy's AVX-512 and AVX2 loops off,
``OPENBLAS_CORETYPE`` selects an older core's kernels, and ``NUMBA_CPU_NAME`` compiles for the
host instead of hopsim's fixed target. A short run of every built-in scenario (and the formation
on Ray in one of them) in a process for each setting gives the same SHA-256 of the stream.

The settings are checked to take effect: the same process reports the C library's ``sin`` and
numpy's ``exp`` over many arguments, and those must differ between settings where this CPU has
the features hidden."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).parent
FLAGS = set(
    next((line.split(":", 1)[1].split() for line in Path("/proc/cpuinfo").read_text().splitlines()
          if line.startswith(("flags", "Features"))), [])
) if Path("/proc/cpuinfo").exists() else set()  # fmt: skip


def _numpy_dispatch() -> list[str]:
    from numpy._core._multiarray_umath import __cpu_dispatch__

    return list(__cpu_dispatch__)


def _numba_for_this_cpu() -> dict:
    """numba's settings compiling for this CPU's model and features instead of hopsim's target."""
    import llvmlite.binding as llvm

    return {"NUMBA_CPU_NAME": llvm.get_host_cpu_name(), "NUMBA_CPU_FEATURES": llvm.get_host_cpu_features().flatten()}


GLIBC_NO_AVX2_FMA = "glibc.cpu.hwcaps=-AVX2_Usable,-FMA_Usable,-AVX2,-FMA"
GLIBC_NO_AVX = GLIBC_NO_AVX2_FMA + ",-AVX_Usable,-AVX"

MASKED = "libm without AVX2 and FMA, numpy without its dispatched loops, OpenBLAS Sandybridge"

# each setting differs from the machine's own choices in several layers at once
SETTINGS = {
    "as is": {},
    MASKED: {
        "GLIBC_TUNABLES": GLIBC_NO_AVX2_FMA,
        "NPY_DISABLE_CPU_FEATURES": " ".join(_numpy_dispatch()),
        "OPENBLAS_CORETYPE": "Sandybridge",
    },
    "libm without AVX, OpenBLAS Prescott": {"GLIBC_TUNABLES": GLIBC_NO_AVX, "OPENBLAS_CORETYPE": "Prescott"},
    "libm without FMA, numpy without AVX-512, OpenBLAS Nehalem": {
        "GLIBC_TUNABLES": "glibc.cpu.hwcaps=-FMA_Usable,-FMA",
        "NPY_DISABLE_CPU_FEATURES": " ".join(f for f in _numpy_dispatch() if "512" in f or f == "X86_V4"),
        "OPENBLAS_CORETYPE": "Nehalem",
    },
}

# numba compiling for this CPU compiles every kernel again (two to three minutes): make test-long
LONG_SETTINGS = {
    "numba compiling for this CPU, OpenBLAS Nehalem": {"OPENBLAS_CORETYPE": "Nehalem", **_numba_for_this_cpu()}
}

PROBE = """
import hashlib, json, math, numpy as np
x = np.random.default_rng(7).uniform(-10, 10, 100_000)
libm = hashlib.sha256(np.array([math.sin(v) for v in x]).tobytes()).hexdigest()
npexp = hashlib.sha256(np.exp(x).tobytes()).hexdigest()
a = x[:99_999].reshape(-1, 3)
blas = hashlib.sha256(np.array([np.linalg.norm(r) for r in a]).tobytes()).hexdigest()
print(json.dumps({"libm": libm, "numpy_exp": npexp, "blas": blas}))
"""


def _run(env_extra: dict, args: list[str]) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("OPENBLAS_CORETYPE", "NPY_DISABLE_CPU_FEATURES")}
    env.update(env_extra)
    done = subprocess.run([sys.executable, *args], env=env, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


pytestmark = pytest.mark.skipif(sys.platform != "linux" or os.uname().machine != "x86_64",
                                reason="the dispatch settings named here are x86-64 Linux's")  # fmt: skip


def test_the_settings_change_what_the_cpu_runs():
    probes = {name: _run(env, ["-c", PROBE]) for name, env in SETTINGS.items()}
    base = probes["as is"]
    masked = probes[MASKED]
    if {"avx2", "fma"} <= FLAGS:
        assert masked["libm"] != base["libm"], "glibc's tunables did not change libm's code path"
        assert masked["blas"] != base["blas"], "OPENBLAS_CORETYPE did not change OpenBLAS's kernels"
    if "avx512f" in FLAGS:
        assert masked["numpy_exp"] != base["numpy_exp"], "NPY_DISABLE_CPU_FEATURES did not change numpy's loops"


def _fingerprints(settings: dict) -> dict[str, dict]:
    script = str(HERE / "stream_fingerprints.py")
    return {name: _run(env, [script, *(["--ray"] if name == MASKED else [])]) for name, env in settings.items()}


@pytest.mark.ray
def test_every_scenario_records_the_same_stream_under_every_setting():
    runs = _fingerprints(SETTINGS)
    base = runs["as is"]
    for name, got in runs.items():
        differ = sorted(k for k in base if got[k] != base[k])
        assert not differ, f"{name}: the stream of {differ} differs from the run with the machine's own choices"
    assert runs[MASKED]["formation@ray"] == base["formation"], "the formation on Ray differs from the local run"


@pytest.mark.long
def test_numba_compiling_for_this_cpu_records_the_same_streams():
    runs = _fingerprints({"as is": {}, **LONG_SETTINGS})
    base = runs.pop("as is")
    for name, got in runs.items():
        assert got == base, f"{name}: the streams of {sorted(k for k in base if got[k] != base[k])} differ"
