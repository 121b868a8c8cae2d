"""The README is executable: every `hopsim` command in its code blocks and its Python program run
as written, in order, in one fresh directory; a README change that breaks one fails here.

What runs, read from README.md:

- each line of an indented or fenced shell block that starts with ``hopsim`` or
  ``.venv/bin/hopsim`` (a trailing ``\\`` joins the next line; ``# ...`` is a comment). It must
  exit 0, or 1 when its comment says it ``diverges`` (a replay that is meant to differ). Commands
  that name a cluster of their own (``--ray-address``) are left out: they need ``ray start``;
- each ```` ```toml ```` block whose first line is ``# NAME`` is written to ``NAME`` first;
- each ```` ```python ```` block runs as a script.

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

README = Path(__file__).resolve().parent.parent / "README.md"


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
            words = shlex.split(command, comments=True)
            if not words or words[0] not in ("hopsim", ".venv/bin/hopsim"):
                continue
            if "--ray-address" in words:
                continue
            found.append((words[1:], 1 if "diverges" in comment else 0))
    return found


TEXT = README.read_text()
COMMANDS = commands(TEXT)


def test_the_readme_shows_commands_and_a_program():
    assert len(COMMANDS) >= 20
    assert any(lang == "python" for lang, _ in blocks(TEXT))


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
# Ray tests share one pytest-xdist worker; the rest of the README runs on the other)
_RAY_OUTPUTS = {a for args, _ in COMMANDS if _uses_ray(args) for a in args if "/" in a}
RAY_COMMANDS = [(a, e) for a, e in COMMANDS if _uses_ray(a) or _RAY_OUTPUTS & set(a)]
LOCAL_COMMANDS = [(a, e) for a, e in COMMANDS if (a, e) not in RAY_COMMANDS]


def _run_commands(commands, tmp_path) -> list[str]:
    for lang, body in blocks(TEXT):
        if lang == "toml" and body and re.fullmatch(r"# [\w.-]+", body[0].strip()):
            (tmp_path / body[0].strip()[2:]).write_text("\n".join(body) + "\n")
    failures = []
    for args, expected in commands:
        done = _serve_and_fetch(args, tmp_path) if args[0] == "view" else _hopsim(args, tmp_path)
        noisy = [line for line in done.stderr.splitlines() if any(w in line for w in NOISE)]
        if done.returncode != expected or noisy:
            failures.append(
                f"hopsim {' '.join(args)} -> exit {done.returncode} (expected {expected})\n"
                f"{done.stdout[-800:]}\n{done.stderr[-1500:]}"
            )
    return failures


def test_every_readme_command_and_program_runs_as_written(tmp_path):
    failures = _run_commands(LOCAL_COMMANDS, tmp_path)
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
def test_every_readme_command_on_ray_runs_as_written(tmp_path):
    assert RAY_COMMANDS, "the README shows a Ray run"
    failures = _run_commands(RAY_COMMANDS, tmp_path)
    assert not failures, "\n\n".join(failures)
