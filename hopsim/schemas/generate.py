"""Generate the Python protobuf modules from the .proto files in this folder.

Run from anywhere::

    python hopsim/schemas/generate.py          # rewrite hopsim/schemas/*_pb2.py
    python hopsim/schemas/generate.py --check  # exit 1 if a committed module is stale

The generated modules are committed; ``tests/test_schemas.py`` runs the check, so a .proto edited
without regenerating fails the suite. The generator is ``grpcio-tools`` (pinned in pyproject.toml)
so that the output does not depend on whichever ``protoc`` happens to be installed.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

SCHEMA_DIR = Path(__file__).resolve().parent
REPO_ROOT = SCHEMA_DIR.parent.parent


def proto_files() -> list[Path]:
    return sorted(SCHEMA_DIR.glob("*.proto"))


def generate_into(out_dir: Path) -> list[Path]:
    """Run protoc over every .proto file; return the generated module paths."""
    from grpc_tools import protoc

    args = ["protoc", f"-I{REPO_ROOT}", f"--python_out={out_dir}"]
    args += [str(p.relative_to(REPO_ROOT)) for p in proto_files()]
    if protoc.main(args) != 0:
        raise RuntimeError("protoc failed on " + ", ".join(a for a in args[3:]))
    return sorted((out_dir / "hopsim" / "schemas").glob("*_pb2.py"))


def stale_modules() -> list[str]:
    """Names of generated modules that differ from what the .proto files produce now."""
    with tempfile.TemporaryDirectory() as tmp:
        fresh = {p.name: p.read_bytes() for p in generate_into(Path(tmp))}
    committed = {p.name: p.read_bytes() for p in SCHEMA_DIR.glob("*_pb2.py")}
    names = set(fresh) | set(committed)
    return sorted(n for n in names if fresh.get(n) != committed.get(n))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="only report stale modules")
    opts = parser.parse_args(argv)
    if opts.check:
        stale = stale_modules()
        if stale:
            print(
                "stale generated modules: " + ", ".join(stale) + "\nregenerate with: python hopsim/schemas/generate.py",
                file=sys.stderr,
            )
            return 1
        print("generated modules are up to date")
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        for old in SCHEMA_DIR.glob("*_pb2.py"):
            old.unlink()
        for path in generate_into(Path(tmp)):
            (SCHEMA_DIR / path.name).write_bytes(path.read_bytes())
            print(f"wrote hopsim/schemas/{path.name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
