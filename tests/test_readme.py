"""The documentation is executable: every `hopsim` command in the code blocks of README.md and of
each page of ``docs/`` runs as written, and so does the README's Python program; a change to the
README or a page that breaks one fails here.

What runs, read from README.md and then from the pages of ``docs/`` in name order:

- each line of an indented or fenced shell block that starts with ``hopsim`` or
  ``.venv/bin/hopsim`` (a trailing ``\\`` joins the next line; ``# ...`` is a comment). It must
  exit 0, or 1 when its comment says it ``diverges`` (a replay that is meant to differ). Commands
  that name a cluster of their own (``--ray-address``) are left out: they need ``ray start``;
- each ```` ```toml ```` block whose first line is ``# NAME`` is written to ``NAME`` first;
- each ```` ```python ```` block of README.md runs as a script (those of ``docs/`` run in
  ``tests/test_docs_programs.py``, and no program is in both).

Each page runs in a fresh directory of its own, its commands in the order it shows them: a page
that reads a file makes it first. What runs to the same effect elsewhere runs once: a page's
commands when they are all, in order, the first commands of another page (getting-started.md's
first run is the README's), and a command shown word for word by an earlier page that reads and
writes no file (``hopsim scenarios``, a ``run`` without ``--out``).

``hopsim view`` serves until it is stopped: it runs without opening a browser until it prints its
address, its page and ``/api/run`` must answer there, and then it is stopped with Ctrl-C (SIGINT).

``make`` lines are what CI itself runs; ``ray start`` lines start a cluster. Neither runs here.
"""

from __future__ import annotations

import os
import re
import shlex
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
# the README first, then the documentation's pages in a fixed order
PAGES = [README, *sorted((ROOT / "docs").glob("*.md"))]


def blocks(text: str) -> list[tuple[str, list[str]]]:
    """(language, lines) of every code block: fenced (```lang) or indented by four spaces."""
    out: list[tuple[str, list[str]]] = []
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.startswith("```"):
            lang = line[3:].strip()
            body = []
            i += 1
            while i < len(lines) and not lines[i].startswith("```"):
                body.append(lines[i])
                i += 1
            out.append((lang, body))
        elif line.startswith("    ") and (i == 0 or not lines[i - 1].strip()):
            body = []
            while i < len(lines) and (lines[i].startswith("    ") or not lines[i].strip()):
                body.append(lines[i][4:])
                i += 1
            out.append(("sh", body))
            continue
        i += 1
    return out


def commands(text: str) -> list[tuple[list[str], int]]:
    """(argv after ``hopsim``, expected exit code) of every command the README shows, in order."""
    found = []
    for lang, body in blocks(text):
        if lang not in ("sh", "", "bash", "console"):
            continue
        joined: list[str] = []
        for line in body:
            if joined and joined[-1].endswith("\\"):
                joined[-1] = joined[-1][:-1] + " " + line.strip()
            else:
                joined.append(line.strip())
        for line in joined:
            command, _, comment = line.partition("  #")
            if command.split()[:1] not in (["hopsim"], [".venv/bin/hopsim"]):
                continue  # output or another program's line: not read as shell words
            words = shlex.split(command, comments=True)
            if "--ray-address" in words:
                continue
            found.append((words[1:], 1 if "diverges" in comment else 0))
    return found


TEXT = README.read_text()
COMMANDS = commands(TEXT)
# files a command may write without naming them in a path
_WRITES = {"--out", "--dir", "--table", "--csv", "--layout", "--checkpoint-every", "--checkpoint-dir"}


def _touches_files(args: list[str]) -> bool:
    """Whether a command may read or write a file (only then does running it again differ)."""
    return args[0] not in ("--version", "scenarios", "faults", "run") or any(
        "/" in a or a in _WRITES or re.search(r"\.[A-Za-z]+$", a) for a in args
    )


def _page_commands() -> list[tuple[Path, list[tuple[list[str], int]]]]:
    """Each page's commands, in order, less those another page runs to the same effect: all of a
    page's commands when they are, in order, the first commands of another page (from a fresh
    directory they do the same; of two pages that show the same commands, the first runs them),
    and a command that touches no file when an earlier page ran it."""
    shown = [commands(page.read_text()) for page in PAGES]
    seen, out = set(), []
    for i, (page, cmds) in enumerate(zip(PAGES, shown)):
        if any(
            j != i and cmds == other[: len(cmds)] and (len(other) > len(cmds) or j < i) for j, other in enumerate(shown)
        ):
            cmds = []
        kept = []
        for args, expected in cmds:
            key = (tuple(args), expected)
            if not _touches_files(args):
                if key in seen:
                    continue
                seen.add(key)
            kept.append((args, expected))
        out.append((page, kept))
    return out


PAGE_COMMANDS = _page_commands()


def test_the_readme_and_the_pages_show_commands_and_a_program():
    assert len(COMMANDS) >= 8, "the README shows a handful of commands"
    assert sum(len(c) for _, c in PAGE_COMMANDS) >= 30, "the pages show the rest"
    programs = [body for lang, body in blocks(TEXT) if lang == "python"]
    assert programs, "the README shows a Python program"
    in_docs = [body for page in PAGES[1:] for lang, body in blocks(page.read_text()) if lang == "python"]
    assert not [p for p in programs if p in in_docs], "a program runs in one test only"


def _hopsim(args: list[str], cwd: Path) -> subprocess.CompletedProcess:
    """As a user runs it: Ray's own settings (token authentication included) as Ray sets them."""
    return subprocess.run(
        [sys.executable, "-m", "hopsim.cli", *args, *(["--no-progress"] if _has_progress(args) else [])],
        cwd=cwd,
        env={k: v for k, v in os.environ.items() if not k.startswith("RAY_")},
        capture_output=True,
        text=True,
        timeout=600,
    )


# what a run on Ray must not print: Ray's banners, warnings and worker logs, a traceback
NOISE = ("Traceback", "Warning", "WARNING", "warnings.warn", "Token authentication", ".py:", "(raylet)")


def _serve_and_fetch(args: list[str], cwd: Path) -> subprocess.CompletedProcess:
    """Start ``hopsim view``, fetch its page and /api/run from the address it prints, stop it."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "hopsim.cli", *args, "--no-browser"],
        cwd=cwd,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    out, deadline, url = [], time.monotonic() + 300, None
    while url is None and time.monotonic() < deadline and proc.poll() is None:
        line = proc.stdout.readline()
        out.append(line)
        found = re.search(r"viewer: (http://127\.0\.0\.1:\d+/)", line)
        url = found.group(1) if found else None
    code = proc.poll()
    if url is not None:
        for path in ("", "api/run"):
            with urllib.request.urlopen(url + path, timeout=60) as reply:
                code = 0 if reply.status == 200 else 3
        proc.send_signal(signal.SIGINT)
    try:
        rest, err = proc.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        proc.kill()
        rest, err = proc.communicate()
    if url is not None and proc.returncode != 0:
        code = proc.returncode
    return subprocess.CompletedProcess(args, 3 if code is None else code, "".join(out) + rest, err)


def _has_progress(args: list[str]) -> bool:
    return bool(args) and args[0] in ("run", "resume") and "--no-progress" not in args


def _uses_ray(args: list[str]) -> bool:
    return any("ray" in a for a in args)


# the commands that start Ray, and those that read what they wrote, run in a test of their own (the
# Ray tests share one pytest-xdist worker; the rest of the documentation runs on the other)
def _split(cmds: list[tuple[list[str], int]]) -> tuple[list, list]:
    ray_outputs = {a for args, _ in cmds if _uses_ray(args) for a in args if "/" in a}
    on_ray = [(a, e) for a, e in cmds if _uses_ray(a) or ray_outputs & set(a)]
    return on_ray, [(a, e) for a, e in cmds if (a, e) not in on_ray]


RAY_COMMANDS = [(page, _split(cmds)[0]) for page, cmds in PAGE_COMMANDS]
LOCAL_COMMANDS = [(page, _split(cmds)[1]) for page, cmds in PAGE_COMMANDS]


def _run_commands(page: Path, commands, tmp_path) -> list[str]:
    """Run one page's commands in a directory of its own, after writing its TOML files there."""
    cwd = tmp_path / page.stem
    cwd.mkdir()
    for lang, body in blocks(page.read_text()):
        if lang == "toml" and body and re.fullmatch(r"# [\w.-]+", body[0].strip()):
            (cwd / body[0].strip()[2:]).write_text("\n".join(body) + "\n")
    failures = []
    for args, expected in commands:
        done = _serve_and_fetch(args, cwd) if args[0] == "view" else _hopsim(args, cwd)
        noisy = [line for line in done.stderr.splitlines() if any(w in line for w in NOISE)]
        if done.returncode != expected or noisy:
            failures.append(
                f"{page.relative_to(ROOT)}: hopsim {' '.join(args)} -> exit {done.returncode} (expected {expected})\n"
                f"{done.stdout[-800:]}\n{done.stderr[-1500:]}"
            )
    return failures


def test_every_documented_command_and_the_readme_program_run_as_written(tmp_path):
    failures = [f for page, cmds in LOCAL_COMMANDS if cmds for f in _run_commands(page, cmds, tmp_path)]
    for lang, body in blocks(TEXT):
        if lang == "python":
            script = tmp_path / "readme_program.py"
            script.write_text("\n".join(body) + "\n")
            done = subprocess.run(
                [sys.executable, str(script)], cwd=tmp_path, capture_output=True, text=True, timeout=600
            )
            if done.returncode != 0:
                failures.append(f"the README's Python program -> exit {done.returncode}\n{done.stderr[-1500:]}")
    assert not failures, "\n\n".join(failures)


@pytest.mark.ray
def test_every_documented_command_on_ray_runs_as_written(tmp_path):
    assert any(cmds for page, cmds in RAY_COMMANDS if page == README), "the README shows a Ray run"
    failures = [f for page, cmds in RAY_COMMANDS if cmds for f in _run_commands(page, cmds, tmp_path)]
    assert not failures, "\n\n".join(failures)
