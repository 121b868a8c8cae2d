"""Run every benchmark and write its table into docs/performance.md between the markers.

    make bench        (or: .venv/bin/python bench/run_all.py [--print-only])

Each benchmark prints a markdown table of ratios against a peer measured in the same run.
"""

from __future__ import annotations

import argparse
import platform
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BENCHES = [
    "bench_first_run.py",
    "bench_montecarlo.py",
    "bench_view.py",
    "bench_pacing.py",
    "bench_kernel.py",
    "bench_recording.py",
    "bench_dynamics.py",
    "bench_spheres.py",
    "bench_formation.py",
    "bench_formation_basilisk.py",
    "bench_rate_groups.py",
    "bench_ray.py",
    "bench_broadphase.py",
    "bench_orbit.py",
    "bench_orbit_scenarios.py",
    "bench_encoding.py",
    "bench_portable_numerics.py",
]
BEGIN, END = "<!-- bench:begin -->", "<!-- bench:end -->"


def run(script: str) -> str:
    path = ROOT / "bench" / script
    if not path.exists():
        return f"_{script}: not present_\n"
    proc = subprocess.run([sys.executable, str(path)], capture_output=True, text=True, cwd=ROOT)
    if proc.returncode != 0:
        return f"_{script} failed:_\n\n```\n{proc.stderr[-2000:]}\n```\n"
    return proc.stdout


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--print-only", "--no-readme", action="store_true", help="print only")
    opts = ap.parse_args()
    machine = f"{platform.processor() or platform.machine()}, Python {platform.python_version()}"
    sections = [f"Measured by `make bench` on {machine}.\n"]
    for script in BENCHES:
        out = run(script)
        print(out)
        # a benchmark's own headings sit below the page's "The benchmarks"
        out = "\n".join("###" + line if line.startswith("#") else line for line in out.splitlines())
        sections.append(f"`bench/{script}`:\n\n{out}\n")
    if opts.print_only:
        return
    page = ROOT / "docs" / "performance.md"
    text = page.read_text()
    block = f"{BEGIN}\n" + "\n".join(sections) + f"\n{END}"
    pattern = re.compile(re.escape(BEGIN) + ".*?" + re.escape(END), re.S)
    if not pattern.search(text):
        raise SystemExit(f"docs/performance.md has no {BEGIN} ... {END} block to fill")
    page.write_text(pattern.sub(lambda m: block, text))
    print("docs/performance.md: the benchmark tables updated")


if __name__ == "__main__":
    main()
