"""hopsim.dynamics.detmath: accurate to under one ulp against mpmath, C's special values, and the
same bits whatever CPU features glibc and numba may use."""

import json
import math
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import llvmlite.binding as llvm
import mpmath
import numpy as np
import pytest

from hopsim.dynamics import detmath as dm

REPO = Path(__file__).resolve().parents[2]
MAX_DOUBLE = 1.7976931348623157e308
HARD_TRIG = [
    1e22,
    1e300,
    -1e300,
    MAX_DOUBLE,
    6381956970095103 * 2.0**797,  # the double closest to a multiple of pi/2 (Kahan, McDonald)
    45.553093477052,  # the closest below 1.6e6 (the Cody-Waite range): 2^-60.5 from 29 pi/2
    5.319372648326541e255,
    1.5707963267948966,
    3.141592653589793,
    4.71238898038469,
    1.6e6,
    1.6e6 - 1e-9,
    1647095.0,
    2.0**20,
    0.7853981633974483,
    0.7853981633974484,
    *[float(mpmath.mpf(n) * mpmath.pi / 2) for n in (3, 7, 100, 355, 65536, 104348, 1000001)],
]


def ulp_error(computed, exact):
    """``|computed - exact|`` in units of the last place of ``exact`` (as a double; 2^-1074 for
    the subnormals)."""
    if exact == 0:
        return 0.0 if computed == 0 else math.inf
    if not math.isfinite(computed):
        return math.inf
    _, e = mpmath.frexp(exact)  # exact = m 2^e, 1/2 <= |m| < 1
    return float(abs(mpmath.mpf(computed) - exact) / mpmath.ldexp(1, max(e - 53, -1074)))


def _signed(rng, lo, hi, n):
    """``n`` values of random sign with log-uniform magnitudes in [10^lo, 10^hi]."""
    return 10.0 ** rng.uniform(lo, hi, n) * rng.choice([-1.0, 1.0], n)


def _arguments(name, rng, n=6000):
    """Seeded arguments over ``name``'s useful domain, with its hard cases."""
    q = n // 4
    if name in ("sin", "cos", "tan"):
        parts = [rng.uniform(-1e6, 1e6, 2 * q), rng.uniform(-8, 8, q), _signed(rng, -9, 300, q), HARD_TRIG]
    elif name == "exp":
        parts = [rng.uniform(-745.1, 709.78, 2 * q), rng.uniform(-1, 1, q // 2), _signed(rng, -17, 0, q // 2)]
        parts += [rng.uniform(-745.1, -708.3, q), [709.78, -708.3964185322641, -708.4, -744.44, -745.13]]
    elif name == "expm1":
        parts = [rng.uniform(-40, 40, 2 * q), rng.uniform(-1, 1, q), _signed(rng, -17, -1, q)]
    elif name == "log":
        bits = rng.integers(1, 0x7FF0000000000000, 2 * q, dtype=np.int64)  # every exponent, subnormals
        parts = [bits.view(np.float64), 1 + rng.uniform(-0.02, 0.02, q), 1 + _signed(rng, -16, -2, q)]
        parts += [rng.uniform(5e-324, 2.2e-308, 20), [5e-324, 2.2250738585072014e-308, MAX_DOUBLE]]
    elif name == "log1p":
        parts = [10.0 ** rng.uniform(-17, 300, q), -(10.0 ** rng.uniform(-17, -0.01, q)), rng.uniform(-1, 1, 2 * q)]
        parts += [-1 + 10.0 ** rng.uniform(-16, -1, 20), [-1 + 2.0**-53, 2.0**-54, -(2.0**-54)]]
    elif name in ("asin", "acos"):
        parts = [rng.uniform(-1, 1, 2 * q), (1 - 10.0 ** rng.uniform(-16, -0.3, q)) * rng.choice([-1, 1], q)]
        parts += [_signed(rng, -10, 0, q), [0.5, -0.5, 1 - 2.0**-53, -1 + 2.0**-53]]
    elif name == "atan":
        parts = [_signed(rng, -9, 9, 2 * q), rng.uniform(-2, 2, 2 * q), [1.0, -1.0, 2.0**64, 1e300, 64.0, 0.0078125]]
    else:
        raise ValueError(name)
    return np.concatenate([np.asarray(p, dtype=np.float64) for p in parts])


def _pow_arguments(rng, n=1500):
    """(x, y) pairs for pow, its results finite and nonzero."""
    parts = [
        (10.0 ** rng.uniform(-5, 5, n), rng.uniform(-60, 60, n)),
        (10.0 ** rng.uniform(-300, 300, n), rng.uniform(-1, 1, n)),
        (1 + rng.uniform(-1e-3, 1e-3, n), rng.uniform(-7e5, 7e5, n)),  # y log x large, x near 1
        (1 + _signed(rng, -15, -4, n), 10.0 ** rng.uniform(0, 17, n)),
        (-(10.0 ** rng.uniform(-3, 3, n)), rng.integers(-100, 100, n).astype(float)),  # x < 0, integer y
        (10.0 ** rng.uniform(-300, 300, n), rng.integers(-3, 4, n).astype(float)),  # y = -3..3
    ]
    x = 10.0 ** rng.uniform(-1, 1, n)
    parts.append((x, rng.uniform(-745, -700, n) / np.log(x)))  # subnormal results
    x = 10.0 ** rng.uniform(-1, 1, n)
    parts.append((x, rng.uniform(600, 709.7, n) / np.log(x)))  # near overflow
    parts.append(([2.0, 2.0, 10.0, 0.5, 7.0, 5e-324], [-1074.0, 1023.0, 22.0, 1074.0, 0.3333333333333333, 0.5]))
    xs = np.concatenate([np.asarray(p[0], dtype=np.float64) for p in parts])
    ys = np.concatenate([np.asarray(p[1], dtype=np.float64) for p in parts])
    return xs, ys


ONE_ARGUMENT = {
    "sin": mpmath.sin,
    "cos": mpmath.cos,
    "tan": mpmath.tan,
    "asin": mpmath.asin,
    "acos": mpmath.acos,
    "atan": mpmath.atan,
    "exp": mpmath.exp,
    "expm1": mpmath.expm1,
    "log": mpmath.log,
    "log1p": mpmath.log1p,
}


@pytest.mark.parametrize("name", sorted(ONE_ARGUMENT))
def test_one_argument_functions_are_within_one_ulp_of_mpmath(name):
    fn = getattr(dm, name)
    xs = _arguments(name, np.random.default_rng(sorted(ONE_ARGUMENT).index(name) + 1)).tolist()
    worst, at = 0.0, None
    with mpmath.workprec(100):
        for x in xs:
            err = ulp_error(fn(x), ONE_ARGUMENT[name](mpmath.mpf(x)))
            if err > worst:
                worst, at = err, x
    assert worst < 1.0, f"{name}({at!r}) is {worst:.3f} ulp away from mpmath"


def test_atan2_is_within_one_ulp_of_mpmath_in_every_quadrant():
    rng = np.random.default_rng(21)
    n = 1000
    ys = np.concatenate([_signed(rng, -300, 300, n), rng.uniform(-5, 5, n), _signed(rng, -3, 3, n)])
    xs = np.concatenate([_signed(rng, -300, 300, n), rng.uniform(-5, 5, n), _signed(rng, -3, 3, n)])
    worst, at = 0.0, None
    with mpmath.workprec(100):
        for y, x in zip(ys.tolist(), xs.tolist()):
            err = ulp_error(dm.atan2(y, x), mpmath.atan2(mpmath.mpf(y), mpmath.mpf(x)))
            if err > worst:
                worst, at = err, (y, x)
    assert {(y > 0, x > 0) for y, x in zip(ys, xs)} == {(True, True), (True, False), (False, True), (False, False)}
    assert worst < 1.0, f"atan2{at!r} is {worst:.3f} ulp away from mpmath"


def test_pow_is_within_one_ulp_of_mpmath():
    xs, ys = _pow_arguments(np.random.default_rng(22))
    worst, at, checked = 0.0, None, 0
    with mpmath.workprec(100):
        for x, y in zip(xs.tolist(), ys.tolist()):
            exact = mpmath.power(mpmath.mpf(x), mpmath.mpf(y))
            if not mpmath.ldexp(1, -1074) <= abs(exact) <= MAX_DOUBLE:
                continue
            checked += 1
            err = ulp_error(dm.pow(x, y), exact)
            if err > worst:
                worst, at = err, (x, y)
    assert checked > 10000
    assert worst < 1.0, f"pow{at!r} is {worst:.3f} ulp away from mpmath"


def test_pow_exact_cases():
    rng = np.random.default_rng(23)
    xs = np.concatenate([_signed(rng, -300, 300, 2000), rng.uniform(-3, 3, 500)]).tolist()
    for x in xs:
        assert dm.pow(x, 2.0) == x * x
        assert dm.pow(x, 1.0) == x
        assert dm.pow(x, -1.0) == 1.0 / x
        if x > 0:
            assert dm.pow(x, 0.5) == math.sqrt(x)
    assert dm.pow(2.0, 10.0) == 1024.0
    assert dm.pow(-2.0, 3.0) == -8.0
    assert dm.pow(10.0, 22.0) == 1e22
    assert dm.pow(2.0, -1074.0) == 5e-324
    assert dm.pow(9.0, 1.5) == 27.0


NAN = math.nan
INF = math.inf
SPECIAL = [
    ("sin", (0.0,), 0.0),
    ("sin", (-0.0,), -0.0),
    ("sin", (INF,), NAN),
    ("sin", (-INF,), NAN),
    ("sin", (NAN,), NAN),
    ("sin", (5e-324,), 5e-324),
    ("cos", (0.0,), 1.0),
    ("cos", (-0.0,), 1.0),
    ("cos", (INF,), NAN),
    ("cos", (NAN,), NAN),
    ("tan", (-0.0,), -0.0),
    ("tan", (-INF,), NAN),
    ("tan", (NAN,), NAN),
    ("asin", (-0.0,), -0.0),
    ("asin", (1.0,), math.pi / 2),
    ("asin", (-1.0,), -math.pi / 2),
    ("asin", (1.0000000000000002,), NAN),
    ("asin", (-INF,), NAN),
    ("asin", (NAN,), NAN),
    ("acos", (1.0,), 0.0),
    ("acos", (-1.0,), math.pi),
    ("acos", (0.0,), math.pi / 2),
    ("acos", (-0.0,), math.pi / 2),
    ("acos", (2.0,), NAN),
    ("acos", (NAN,), NAN),
    ("atan", (-0.0,), -0.0),
    ("atan", (INF,), math.pi / 2),
    ("atan", (-INF,), -math.pi / 2),
    ("atan", (NAN,), NAN),
    ("exp", (0.0,), 1.0),
    ("exp", (-0.0,), 1.0),
    ("exp", (INF,), INF),
    ("exp", (-INF,), 0.0),
    ("exp", (NAN,), NAN),
    ("exp", (709.79,), INF),
    ("exp", (1000.0,), INF),
    ("exp", (-745.2,), 0.0),
    ("exp", (-1000.0,), 0.0),
    ("exp", (-745.0,), 5e-324),
    ("expm1", (0.0,), 0.0),
    ("expm1", (-0.0,), -0.0),
    ("expm1", (5e-324,), 5e-324),
    ("expm1", (INF,), INF),
    ("expm1", (-INF,), -1.0),
    ("expm1", (-50.0,), -1.0),
    ("expm1", (710.0,), INF),
    ("expm1", (NAN,), NAN),
    ("log", (1.0,), 0.0),
    ("log", (0.0,), -INF),
    ("log", (-0.0,), -INF),
    ("log", (-1.0,), NAN),
    ("log", (-INF,), NAN),
    ("log", (INF,), INF),
    ("log", (NAN,), NAN),
    ("log1p", (0.0,), 0.0),
    ("log1p", (-0.0,), -0.0),
    ("log1p", (-1.0,), -INF),
    ("log1p", (-2.0,), NAN),
    ("log1p", (INF,), INF),
    ("log1p", (-INF,), NAN),
    ("log1p", (NAN,), NAN),
    ("log1p", (5e-324,), 5e-324),
    # atan2: C99 F.9.1.4
    ("atan2", (0.0, -0.0), math.pi),
    ("atan2", (-0.0, -0.0), -math.pi),
    ("atan2", (0.0, 0.0), 0.0),
    ("atan2", (-0.0, 0.0), -0.0),
    ("atan2", (0.0, -1.0), math.pi),
    ("atan2", (-0.0, -1.0), -math.pi),
    ("atan2", (0.0, 1.0), 0.0),
    ("atan2", (-0.0, 1.0), -0.0),
    ("atan2", (-1.0, 0.0), -math.pi / 2),
    ("atan2", (-1.0, -0.0), -math.pi / 2),
    ("atan2", (1.0, 0.0), math.pi / 2),
    ("atan2", (1.0, -0.0), math.pi / 2),
    ("atan2", (1.0, -INF), math.pi),
    ("atan2", (-1.0, -INF), -math.pi),
    ("atan2", (1.0, INF), 0.0),
    ("atan2", (-1.0, INF), -0.0),
    ("atan2", (INF, 1.0), math.pi / 2),
    ("atan2", (-INF, -1.0), -math.pi / 2),
    ("atan2", (INF, -INF), 3 * math.pi / 4),
    ("atan2", (-INF, -INF), -3 * math.pi / 4),
    ("atan2", (INF, INF), math.pi / 4),
    ("atan2", (-INF, INF), -math.pi / 4),
    ("atan2", (NAN, 1.0), NAN),
    ("atan2", (1.0, NAN), NAN),
    ("atan2", (1e-300, 1e300), 0.0),
    ("atan2", (5e-324, 1.0), 5e-324),
    ("atan2", (1e300, -1e-300), math.pi / 2),
    # pow: C99 F.9.4.4 (returning inf where Python's math.pow raises)
    ("pow", (NAN, 0.0), 1.0),
    ("pow", (NAN, -0.0), 1.0),
    ("pow", (1.0, NAN), 1.0),
    ("pow", (1.0, INF), 1.0),
    ("pow", (-1.0, INF), 1.0),
    ("pow", (-1.0, -INF), 1.0),
    ("pow", (NAN, 1.0), NAN),
    ("pow", (2.0, NAN), NAN),
    ("pow", (0.0, -3.0), INF),
    ("pow", (-0.0, -3.0), -INF),
    ("pow", (-0.0, -2.0), INF),
    ("pow", (-0.0, -0.5), INF),
    ("pow", (-0.0, -INF), INF),
    ("pow", (0.0, 3.0), 0.0),
    ("pow", (-0.0, 3.0), -0.0),
    ("pow", (-0.0, 2.0), 0.0),
    ("pow", (-0.0, 0.5), 0.0),
    ("pow", (-0.0, INF), 0.0),
    ("pow", (0.5, -INF), INF),
    ("pow", (-0.5, -INF), INF),
    ("pow", (2.0, -INF), 0.0),
    ("pow", (-2.0, -INF), 0.0),
    ("pow", (0.5, INF), 0.0),
    ("pow", (2.0, INF), INF),
    ("pow", (-2.0, INF), INF),
    ("pow", (-INF, -3.0), -0.0),
    ("pow", (-INF, -2.0), 0.0),
    ("pow", (-INF, -0.5), 0.0),
    ("pow", (-INF, 3.0), -INF),
    ("pow", (-INF, 2.0), INF),
    ("pow", (-INF, 0.5), INF),
    ("pow", (INF, -1.0), 0.0),
    ("pow", (INF, 0.5), INF),
    ("pow", (INF, 3.0), INF),
    ("pow", (-2.0, 0.5), NAN),
    ("pow", (-2.0, 1.5), NAN),
    ("pow", (-8.0, 1.0 / 3.0), NAN),
    ("pow", (-2.0, 3.0), -8.0),
    ("pow", (-2.0, -3.0), -0.125),
    ("pow", (-2.0, 2.0**60), INF),
    ("pow", (-0.5, 2.0**60), 0.0),
    ("pow", (10.0, 400.0), INF),
    ("pow", (-10.0, 401.0), -INF),
    ("pow", (10.0, -400.0), 0.0),
    ("pow", (-10.0, -401.0), -0.0),
    ("pow", (2.0, 1024.0), INF),
    ("pow", (1.0000000000000002, 2.0**70), INF),
    ("pow", (0.9999999999999999, 2.0**70), 0.0),
]


@pytest.mark.parametrize(("name", "args", "expected"), SPECIAL, ids=[f"{n}{a}" for n, a, _ in SPECIAL])
def test_special_values_are_c99s(name, args, expected):
    got = getattr(dm, name)(*args)
    if math.isnan(expected):
        assert math.isnan(got)
    else:
        assert got == expected and math.copysign(1.0, got) == math.copysign(1.0, expected), got


@pytest.mark.parametrize("name", ["sin", "cos", "exp", "log"])
def test_array_variants_equal_the_scalar_functions(name):
    rng = np.random.default_rng(31)
    if name == "log":
        xs = np.concatenate([10.0 ** rng.uniform(-310, 308, 3000), [0.0, -1.0, math.inf, math.nan]])
    else:
        xs = np.concatenate([rng.uniform(-700, 700, 2000), _signed(rng, -10, 10, 1000), [0.0, math.inf, math.nan]])
    with np.errstate(invalid="ignore"):  # sin(inf) is nan, as numpy's own says
        got = getattr(dm, f"{name}_array")(xs)
    want = np.array([getattr(dm, name)(x) for x in xs.tolist()])
    assert got.dtype == np.float64 and got.shape == xs.shape
    assert got.tobytes() == want.tobytes()


def test_atan2_array_equals_the_scalar_function():
    rng = np.random.default_rng(32)
    ys = np.concatenate([_signed(rng, -5, 5, 3000), [0.0, -0.0, math.inf, math.nan]])
    xs = np.concatenate([_signed(rng, -5, 5, 3000), [-0.0, -1.0, -math.inf, 1.0]])
    got = dm.atan2_array(ys, xs)
    want = np.array([dm.atan2(y, x) for y, x in zip(ys.tolist(), xs.tolist())])
    assert got.tobytes() == want.tobytes()


def test_array_variants_raise_no_spurious_floating_point_flags():
    """No overflow, invalid or division flag (numpy warns of them) for finite arguments whose
    results are finite: nothing is computed that overflows, even speculatively."""
    rng = np.random.default_rng(33)
    n = 20000
    magnitudes = 10.0 ** rng.uniform(-300, 300, n)
    signs = rng.choice([-1.0, 1.0], (2, n))
    tiny = np.array([0.0, -0.0, 5e-324, -5e-324, MAX_DOUBLE, -MAX_DOUBLE, 1.0, -1.0])
    ys = np.concatenate([magnitudes * signs[0], np.repeat(tiny, tiny.size)])
    xs = np.concatenate([magnitudes[::-1] * signs[1], np.tile(tiny, tiny.size)])
    with np.errstate(over="raise", invalid="raise", divide="raise", under="ignore"):
        dm.sin_array(magnitudes * signs[0])
        dm.cos_array(magnitudes * signs[1])
        dm.exp_array(rng.uniform(-745.2, 709.78, n))
        dm.log_array(np.concatenate([magnitudes, [5e-324, MAX_DOUBLE]]))
        dm.atan2_array(ys, xs)


# ---------------------------------------------------------------------------------------------
# The same bits on every CPU: glibc's and numba's choices by CPU feature, masked in subprocesses.

_HASH_SCRIPT = r"""
import hashlib, json, math
import numpy as np
from hopsim.dynamics import detmath as dm
from numba.core import config

N = 100_000
rng = np.random.default_rng(2024)

def signed(lo, hi, n):
    return 10.0 ** rng.uniform(lo, hi, n) * rng.choice([-1.0, 1.0], n)

trig = np.concatenate([rng.uniform(-8, 8, N // 2), rng.uniform(-1e6, 1e6, N // 4), signed(-8, 300, N // 4)])
one = {
    "sin": trig,
    "cos": trig,
    "tan": trig,
    "asin": rng.uniform(-1, 1, N),
    "acos": rng.uniform(-1, 1, N),
    "atan": signed(-8, 8, N),
    "exp": rng.uniform(-745, 709.7, N),
    "expm1": np.concatenate([rng.uniform(-40, 40, N // 2), signed(-12, 0, N // 2)]),
    "log": 10.0 ** rng.uniform(-320, 308, N),
    "log1p": np.concatenate([10.0 ** rng.uniform(-12, 300, N // 2), rng.uniform(-1, 0, N // 2)]),
}
ys, xs = signed(-5, 5, N), signed(-5, 5, N)
px, py = 10.0 ** rng.uniform(-3, 3, N), rng.uniform(-60, 60, N)

def digest(values):
    return hashlib.sha256(np.asarray(values, dtype=np.float64).tobytes()).hexdigest()

out = {}
for name, args in one.items():
    fn = getattr(dm, name)
    out[name] = digest([fn(x) for x in args.tolist()])
out["atan2"] = digest([dm.atan2(y, x) for y, x in zip(ys.tolist(), xs.tolist())])
out["pow"] = digest([dm.pow(x, y) for x, y in zip(px.tolist(), py.tolist())])
for name in ("sin", "cos", "exp", "log"):
    out[name + "_array"] = digest(getattr(dm, name + "_array")(one[name]))
out["atan2_array"] = digest(dm.atan2_array(ys, xs))
libm = {"math.sin": digest([math.sin(x) for x in trig.tolist()])}
print(json.dumps({"detmath": out, "libm": libm, "numba_cpu": config.CPU_NAME}))
"""

_NO_FMA = "glibc.cpu.hwcaps=-AVX2_Usable,-FMA_Usable,-AVX2,-FMA"
_NO_AVX = _NO_FMA + ",-AVX,-AVX_Usable"
_HOST_CPU = llvm.get_host_cpu_name()  # e.g. "skylake-avx512": every instruction set it has, FMA among them
# name: (extra environment, numba cache shared by the runs compiled for the same CPU target).
# Importing hopsim makes numba compile for the generic CPU unless NUMBA_CPU_NAME says otherwise.
SETTINGS = {
    "plain": ({}, "generic"),
    "no-fma": ({"GLIBC_TUNABLES": _NO_FMA}, "generic"),
    "no-avx": ({"GLIBC_TUNABLES": _NO_AVX}, "generic"),
    "numba-generic": ({"NUMBA_CPU_NAME": "generic"}, "generic"),
    "numba-host": ({"NUMBA_CPU_NAME": _HOST_CPU}, "host"),
    "numba-host-no-avx": ({"NUMBA_CPU_NAME": _HOST_CPU, "GLIBC_TUNABLES": _NO_AVX}, "host"),
}
_CPU_VARIABLES = ("GLIBC_TUNABLES", "NUMBA_CPU_NAME", "NUMBA_CPU_FEATURES")


def _run_settings(names, cache_root):
    procs = {}
    for name in names:
        extra, cache = SETTINGS[name]
        env = {k: v for k, v in os.environ.items() if k not in _CPU_VARIABLES}
        env.update(extra, NUMBA_CACHE_DIR=str(cache_root / cache))
        procs[name] = subprocess.Popen(
            [sys.executable, "-c", _HASH_SCRIPT], cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE
        )
    results = {}
    for name, proc in procs.items():
        out, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, f"{name}: {err.decode()[-2000:]}"
        results[name] = json.loads(out.decode().strip().splitlines()[-1])
    return results


@pytest.fixture(scope="module")
def hashes_by_setting():
    with tempfile.TemporaryDirectory(prefix="detmath-numba-cache-") as tmp:
        root = Path(tmp)
        # first one run per CPU target (each compiles into its own cache), then the others load it
        results = _run_settings(["plain", "numba-host"], root)
        results.update(_run_settings(["no-fma", "no-avx", "numba-generic", "numba-host-no-avx"], root))
    return results


def test_detmath_gives_the_same_bits_whatever_the_cpu_features(hashes_by_setting):
    assert hashes_by_setting["plain"]["numba_cpu"] == "generic"
    assert hashes_by_setting["numba-host"]["numba_cpu"] == _HOST_CPU
    reference = hashes_by_setting["plain"]["detmath"]
    assert len(reference) == 17
    for name, result in hashes_by_setting.items():
        differing = sorted(fn for fn, h in result["detmath"].items() if h != reference[fn])
        assert not differing, f"{name} differs from plain in {differing}"


def _cpu_flags():
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return set()
    for line in text.splitlines():
        if line.startswith("flags"):
            return set(line.split(":", 1)[1].split())
    return set()


def test_the_masks_change_glibcs_choices(hashes_by_setting):
    """The sanity check of the test above: on a CPU with AVX2 and FMA, masking them changes
    glibc's sin, so the settings did reach it."""
    if not {"avx2", "fma"} <= _cpu_flags():
        pytest.skip("the CPU has no AVX2 and FMA: glibc has no other variant to choose")
    plain = hashes_by_setting["plain"]["libm"]["math.sin"]
    assert hashes_by_setting["no-fma"]["libm"]["math.sin"] != plain
    assert hashes_by_setting["no-avx"]["libm"]["math.sin"] != plain
