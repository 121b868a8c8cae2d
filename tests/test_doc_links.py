"""Every relative link of README.md, CONTRIBUTING.md and the pages of ``docs/`` leads somewhere: to
a file that exists and, with ``#anchor``, to a heading of that page; the pages link only within
``docs/`` (what the documentation site publishes), and ``mkdocs.yml``'s navigation names every page
and only pages that exist. ``make docs`` builds the site with ``mkdocs build --strict``, which
fails on the same faults; this test needs no mkdocs, so the suite checks them everywhere.

Anchors are the heading slugs of mkdocs' ``toc`` extension (GitHub's are the same for headings of
words, digits, spaces, hyphens and code spans)."""

from __future__ import annotations

import re
import sys
import unicodedata
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
PAGES = sorted(DOCS.glob("*.md"))
FILES = [ROOT / "README.md", ROOT / "CONTRIBUTING.md", *PAGES]

_FENCE = re.compile(r"^(```|~~~)")
_LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^()\s]+)(?:\s+\"[^\"]*\")?\)")
_CODE_SPAN = re.compile(r"(`+)(?:(?!\1).)+?\1")


def prose(text: str, code_spans: bool = False) -> list[str]:
    """The lines of ``text`` outside fenced code blocks, their code spans taken out unless asked."""
    out, fenced = [], False
    for line in text.splitlines():
        if _FENCE.match(line.lstrip()):
            fenced = not fenced
        elif not fenced:
            out.append(line if code_spans else _CODE_SPAN.sub("", line))
    return out


def slug(heading: str) -> str:
    """The anchor of a heading, as Python-Markdown's ``toc`` makes it."""
    text = re.sub(r"[`*]", "", heading)  # code spans and emphasis keep their words
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)  # a link keeps its text
    text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode()
    text = re.sub(r"[^\w\s-]", "", text).strip().lower()
    return re.sub(r"[-\s]+", "-", text)


def anchors(page: Path) -> set[str]:
    headings = (re.match(r"#{1,6}\s+(.*?)\s*#*\s*$", line) for line in prose(page.read_text(), code_spans=True))
    return {slug(h.group(1)) for h in headings if h}


def links(path: Path) -> list[str]:
    return [m.group(1) for line in prose(path.read_text()) for m in _LINK.finditer(line)]


def broken(path: Path) -> list[str]:
    """What is wrong with each relative link of ``path``."""
    problems = []
    for target in links(path):
        if re.match(r"[a-z][a-z0-9+.-]*:", target):  # https:, mailto: ...
            continue
        file, _, anchor = target.partition("#")
        dest = (path.parent / file).resolve() if file else path
        where = f"{path.relative_to(ROOT)}: ({target})"
        if not dest.exists():
            problems.append(f"{where}: no {file}")
            continue
        if path.parent == DOCS and DOCS not in (dest, *dest.parents):
            problems.append(f"{where}: outside docs/, which the site does not publish")
        if anchor and dest.suffix == ".md" and anchor not in anchors(dest):
            problems.append(f"{where}: no heading #{anchor} in {dest.name}")
    return problems


def test_every_relative_link_leads_to_a_file_and_heading():
    assert (ROOT / "CONTRIBUTING.md").exists() and PAGES
    problems = [p for path in FILES for p in broken(path)]
    assert not problems, "\n".join(problems)


def test_the_readme_links_every_page():
    linked = {(ROOT / t.partition("#")[0]).resolve() for t in links(ROOT / "README.md")}
    assert not [p.name for p in PAGES if p.resolve() not in linked]


def test_the_site_navigation_names_every_page():
    config = (ROOT / "mkdocs.yml").read_text()
    named = re.findall(r"^\s*-\s+(?:[^:\n]+:\s+)?([\w./-]+\.md)\s*$", config, re.M)
    assert sorted(named) == sorted(set(named)), "a page named twice"
    assert not [n for n in named if not (DOCS / n).exists()], "a page the navigation names is missing"
    assert sorted(named) == sorted(p.name for p in PAGES), "a page the navigation does not name"


def test_the_checker_finds_a_broken_link_and_a_broken_anchor(tmp_path, monkeypatch):
    bad = tmp_path / "docs" / "bad.md"
    bad.parent.mkdir()
    bad.write_text(
        "# Bad\n\n## The `orbit_formation` run\n\n[a](nowhere.md) [b](#no-such) [c](#bad)\n"
        "[d](#the-orbit_formation-run) `[e](nowhere.md)` [f](../x.md)\n"
    )
    (tmp_path / "x.md").write_text("# X\n")
    monkeypatch.setattr(sys.modules[__name__], "ROOT", tmp_path)
    monkeypatch.setattr(sys.modules[__name__], "DOCS", tmp_path / "docs")
    problems = broken(bad)
    assert len(problems) == 3, problems
    assert "no nowhere.md" in problems[0] and "#no-such" in problems[1] and "outside docs/" in problems[2]
    assert slug("The `hopsim view` command, in 3-D") == "the-hopsim-view-command-in-3-d"
