"""DESIGN.md's dependency arrows, checked on the source: which package may import which, no
import circle anywhere in hopsim, and the kernel core never importing its Ray layer.

Imports are read with ``ast`` (module-level and inside functions alike; imports under
``if TYPE_CHECKING:`` are annotations only and are left out), so the check sees the tree as it
is written, whatever happens to be imported at test time.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent / "hopsim"

# package -> the hopsim packages it may import (besides itself); DESIGN.md, "Layout"
ALLOWED = {
    "dynamics": set(),
    "schemas": set(),
    "bus": {"schemas"},
    "kernel": {"bus", "schemas"},
    "kernel.distributed": {"kernel", "bus", "schemas"},
    "actors": {"kernel", "bus", "dynamics", "schemas"},
    "scenarios": {"actors", "kernel", "kernel.distributed", "bus", "dynamics", "schemas"},
    "view": {"bus", "kernel", "schemas"},
    "cli": {"scenarios", "view", "actors", "kernel", "kernel.distributed", "bus", "dynamics", "schemas"},
    "": {"kernel", "bus", "schemas", "dynamics"},  # hopsim/__init__.py
}


def module_name(path: Path) -> str:
    rel = path.relative_to(ROOT.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def package_of(module: str) -> str:
    """The DESIGN.md package a module belongs to ("kernel.distributed" apart from "kernel")."""
    parts = module.split(".")[1:]
    if not parts:
        return ""
    if parts[0] == "kernel" and len(parts) > 1 and parts[1] == "distributed":
        return "kernel.distributed"
    return parts[0].removesuffix(".py")


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def imports_of(path: Path) -> set[str]:
    """The hopsim modules ``path`` imports (``from a import b`` counts as ``a.b`` when that is a module)."""
    tree = ast.parse(path.read_text(), filename=str(path))
    found: set[str] = set()
    this = module_name(path)
    is_package = path.name == "__init__.py"

    def visit(node):
        if isinstance(node, ast.If) and _is_type_checking(node):
            for child in node.orelse:
                visit(child)
            return
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.startswith("hopsim"))
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = this.split(".") if is_package else this.split(".")[:-1]
                anchor = anchor[: len(anchor) - (node.level - 1)]
                base = ".".join(anchor + ([base] if base else []))
            if base.startswith("hopsim"):
                for alias in node.names:
                    sub = f"{base}.{alias.name}"
                    found.add(sub if sub in MODULES else base)
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(tree)
    found.discard(this)
    return found


MODULES = {module_name(p): p for p in ROOT.rglob("*.py")}
GRAPH = {name: imports_of(path) for name, path in MODULES.items()}


def test_every_import_follows_designs_arrows():
    wrong = []
    for module, targets in sorted(GRAPH.items()):
        own = package_of(module)
        for target in sorted(targets):
            other = package_of(target)
            if other != own and other not in ALLOWED[own]:
                wrong.append(f"{module} imports {target} ({own or 'hopsim'} -> {other})")
    assert not wrong, "imports against DESIGN.md's arrows:\n" + "\n".join(wrong)


def test_kernel_core_never_imports_the_ray_layer():
    core = [m for m in GRAPH if package_of(m) == "kernel"]
    assert core, "no kernel modules found"
    offenders = [f"{m} imports {t}" for m in core for t in GRAPH[m] if package_of(t) == "kernel.distributed"]
    assert not offenders, offenders
    ray_users = [m for m in core if "import ray" in MODULES[m].read_text()]
    assert not ray_users, f"the kernel core imports ray: {ray_users}"


def _strongly_connected(graph: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's algorithm: the components of more than one module (the import circles)."""
    index, low, stack, on_stack, out = {}, {}, [], set(), []
    counter = [0]

    def connect(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w in graph.get(v, ()):
            if w not in graph:
                continue
            if w not in index:
                connect(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            connect(v)
    return out


def test_no_import_circles():
    circles = _strongly_connected(GRAPH)
    assert not circles, "import circles: " + "; ".join(" <-> ".join(c) for c in circles)


@pytest.mark.parametrize(
    "graph, expected",
    [
        ({"a": {"b"}, "b": {"a"}, "c": set()}, [["a", "b"]]),
        ({"a": {"b"}, "b": {"c"}, "c": set()}, []),
    ],
)
def test_the_circle_finder_finds_circles(graph, expected):
    assert _strongly_connected(graph) == expected
