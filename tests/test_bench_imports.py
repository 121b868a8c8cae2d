"""Every hopsim name the benchmarks import exists (a benchmark runs only in ``make bench``, where a
moved function would otherwise be found an hour in)."""

import ast
import importlib
from pathlib import Path

BENCH = Path(__file__).resolve().parent.parent / "bench"


def test_every_hopsim_import_of_the_benchmarks_resolves():
    missing, checked = [], 0
    for path in sorted(BENCH.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "hopsim":
                module = importlib.import_module(node.module)
                for alias in node.names:
                    checked += 1
                    if not hasattr(module, alias.name):
                        try:
                            importlib.import_module(f"{node.module}.{alias.name}")
                        except ImportError:
                            missing.append(f"{path.name}: from {node.module} import {alias.name}")
    assert checked > 30 and not missing, missing
