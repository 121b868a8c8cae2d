"""What reaches a recorded stream is computed the same way on every CPU.

The C library's elementary functions (``math.sin``, numba's, numpy's ``sin``, and Python's
``float ** float``, which is C's ``pow``), BLAS and LAPACK (``@``, ``dot``, ``numpy.linalg``),
numpy's SIMD ``exp`` and ``log`` and its normal draws choose code by CPU feature and round
differently from one machine to the next. The packages whose code reaches the stream (the
kernel, the bus, the models, the dynamics, the scenarios) call hopsim's portable functions
(``hopsim.dynamics.detmath``, ``detlinalg``, ``detrandom``) instead; this test reads their
source and names every call that slipped back in. ``test_same_stream_everywhere.py`` runs the
scenarios under several CPU-dispatch settings and compares the streams."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).parents[1] / "hopsim"
STREAM_PACKAGES = ("kernel", "bus", "actors", "dynamics", "scenarios")

LIBM = {
    "sin", "cos", "tan", "asin", "acos", "atan", "atan2", "exp", "expm1", "exp2", "log", "log1p",
    "log10", "log2", "pow", "sinh", "cosh", "tanh", "asinh", "acosh", "atanh", "erf", "erfc",
    "gamma", "lgamma", "cbrt",
}  # fmt: skip
NUMPY = {
    "sin", "cos", "tan", "arcsin", "arccos", "arctan", "arctan2", "exp", "expm1", "exp2", "log",
    "log1p", "log10", "log2", "power", "float_power", "sinh", "cosh", "tanh", "hypot", "dot", "vdot",
    "inner", "matmul", "einsum", "tensordot", "cbrt",
}  # fmt: skip
DRAWS = {"normal", "standard_normal", "multivariate_normal", "exponential", "standard_exponential",
         "lognormal", "standard_gamma", "vonmises", "chisquare", "beta", "binomial", "poisson"}  # fmt: skip

# modules whose results never reach a stream, and why
EXEMPT = {
    "dynamics/detmath.py": "the portable functions themselves",
    "dynamics/detlinalg.py": "the portable functions themselves",
    "dynamics/detrandom.py": "the portable functions themselves",
    "scenarios/linearize.py": "a linear model for the user's analysis, not a run",
    "scenarios/montecarlo.py": "a campaign's summary statistics, printed, not recorded",
}


def _int(node) -> bool:
    return isinstance(node, ast.Constant) and type(node.value) is int


def portability_problems(source: str) -> list[tuple[int, str]]:
    """(line, what) for each CPU-dependent operation in ``source``."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Attribute):
            base = node.value
            name = base.id if isinstance(base, ast.Name) else None
            if name == "math" and node.attr in LIBM:
                found.append((node.lineno, f"math.{node.attr}"))
            elif name in ("np", "numpy") and node.attr in NUMPY:
                found.append((node.lineno, f"numpy.{node.attr}"))
            elif isinstance(base, ast.Attribute) and base.attr == "linalg":
                found.append((node.lineno, f"linalg.{node.attr}"))
            elif node.attr == "dot" and name not in ("np", "numpy", "detlinalg"):
                found.append((node.lineno, ".dot()"))
            elif node.attr in DRAWS and name not in ("np", "numpy", "detrandom"):
                found.append((node.lineno, f"generator.{node.attr}()"))
        elif isinstance(node, (ast.BinOp, ast.AugAssign)) and isinstance(node.op, ast.MatMult):
            found.append((node.lineno, "@"))
        elif isinstance(node, ast.BinOp) and isinstance(node.op, ast.Pow):
            if not (_int(node.left) and _int(node.right)):
                found.append((node.lineno, "** (C's pow on floats)"))
        elif isinstance(node, ast.ImportFrom) and node.module in ("math", "numpy", "numpy.linalg"):
            found += [
                (node.lineno, f"from {node.module} import {a.name}") for a in node.names if a.name in LIBM | NUMPY
            ]
    return sorted(found)


def _stream_modules():
    for package in STREAM_PACKAGES:
        for path in sorted((PACKAGE / package).rglob("*.py")):
            rel = path.relative_to(PACKAGE).as_posix()
            if not rel.endswith("_pb2.py") and rel not in EXEMPT:
                yield rel


@pytest.mark.parametrize("rel", list(_stream_modules()))
def test_stream_code_uses_the_portable_numerics(rel):
    problems = portability_problems((PACKAGE / rel).read_text())
    assert not problems, (
        f"hopsim/{rel}: CPU-dependent arithmetic: "
        + ", ".join(f"line {line}: {what}" for line, what in problems)
        + " (use hopsim.dynamics.detmath / detlinalg / detrandom)"
    )


def test_the_exemptions_name_existing_modules():
    assert all((PACKAGE / rel).exists() for rel in EXEMPT)


@pytest.mark.parametrize(
    "source, found",
    [
        ("import math\nx = math.sin(1.0)", ["math.sin"]),
        ("import numpy as np\ny = np.linalg.norm(v)", ["linalg.norm"]),
        ("y = a @ b", ["@"]),
        ("y = x ** 2", ["** (C's pow on floats)"]),
        ("y = 2 ** 31", []),
        ("z = rng.standard_normal(3)", ["generator.standard_normal()"]),
        ("z = detrandom.standard_normal(rng, 3)", []),
        ("y = R.dot(v)", [".dot()"]),
        ("from math import exp", ["from math import exp"]),
        ("import math\ny = math.sqrt(x) + math.hypot(a, b)", []),
    ],
)
def test_the_reader_finds_what_it_should(source, found):
    assert [what for _, what in portability_problems(source)] == found
