"""The documentation's programs run as written: every ```` ```python ```` block of a page in
``docs/`` runs as a script in a fresh directory and exits 0 (what it asserts holds); a fragment
that cannot run alone is fenced ```` ```py ````. The pages' ``hopsim`` commands and the README's
program run in ``tests/test_readme.py``."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from test_readme import blocks

DOCS = Path(__file__).resolve().parent.parent / "docs"
PROGRAMS = [
    (page, k, "\n".join(body))
    for page in sorted(DOCS.glob("*.md"))
    for k, (lang, body) in enumerate(blocks(page.read_text()))
    if lang == "python"
]


@pytest.mark.parametrize("page, k, program", PROGRAMS, ids=[f"{p.name}-{k}" for p, k, _ in PROGRAMS])
def test_every_documented_program_runs(tmp_path, page, k, program):
    script = tmp_path / "program.py"  # a file, as a user saves it (numba caches beside it)
    script.write_text(program)
    done = subprocess.run([sys.executable, str(script)], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, f"{page.name}, program {k}:\n{done.stderr[-3000:]}"


def test_the_model_page_shows_a_kind():
    assert any(page.name == "models.md" and "Kind(" in program for page, _, program in PROGRAMS)
