"""The user docs read as a product: no tracker references, no run diaries, public names only.

The user docs are ``README.md`` and ``docs/*.md`` with the generated results pages
(``docs/results/``); the design notes (``docs/dev/``) keep the history, the measurements and
the references. Checked here, reading files only:

* no issue reference: ``#<digits>`` or a link into an issue tracker (``.../issues/<n>``,
  ``.../pull/<n>``), nor "issue 12";
* no dated diary: no ISO date (``2026-11-28``) in the prose. The generated results pages are
  exempt from this one check only: their machine line states when the run was made;
* no history phrase ("formerly", "was renamed", "before this change", "predates commit");
* code blocks import public names only: no ``from shiftlearn.<x>._private import``, no
  ``import shiftlearn._private``.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
RESULTS = DOCS / "results"


def _user_pages() -> list[Path]:
    pages = [ROOT / "README.md", *sorted(DOCS.glob("*.md")), *sorted(RESULTS.glob("*.md"))]
    assert len(pages) > 20, "the user docs were not found"
    return pages


PAGES = _user_pages()
ISSUE = re.compile(r"(?<![\w&/])#\d+\b|/(?:issues|pull)/\d+|\b[Ii]ssues? #?\d+\b")
DATE = re.compile(r"\b20\d\d-[01]\d-[0-3]\d\b")
HISTORY = re.compile(r"\b(?:formerly|was renamed|before this change|predates commit)\b", re.I)
PRIVATE = re.compile(r"\bfrom\s+shiftlearn(?:\.\w+)*\._\w+\s+import\b"
                     r"|\bimport\s+shiftlearn(?:\.\w+)*\._\w+")
FENCE = re.compile(r"^```[^\n]*\n(.*?)^```", re.M | re.S)


def _lines(text: str, pattern: re.Pattern) -> list[str]:
    return [f"line {i}: {line.strip()[:120]}" for i, line in enumerate(text.splitlines(), 1)
            if pattern.search(line)]


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_no_issue_reference(page):
    found = _lines(page.read_text(), ISSUE)
    assert not found, (f"{page.relative_to(ROOT)} refers to the issue tracker: {found}; state "
                       "the fact, and keep the reference in docs/dev/")


@pytest.mark.parametrize("page", [p for p in PAGES if p.parent != RESULTS],
                         ids=lambda p: str(p.relative_to(ROOT)))
def test_no_dated_diary(page):
    found = _lines(page.read_text(), DATE)
    assert not found, (f"{page.relative_to(ROOT)} carries a run date: {found}; link the "
                       "generated results page (docs/results/), whose machine line dates the run")


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_no_history(page):
    found = _lines(page.read_text(), HISTORY)
    assert not found, (f"{page.relative_to(ROOT)} tells history: {found}; move it to "
                       "docs/dev/<family>.md (renames go to the glossary's Renamed table)")


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_examples_use_public_names(page):
    code = "\n".join(FENCE.findall(page.read_text()))
    found = _lines(code, PRIVATE)
    assert not found, (f"{page.relative_to(ROOT)} imports a private module in an example: "
                       f"{found}; import the public name")


def test_the_patterns_catch_what_they_forbid():
    assert ISSUE.search("fixed in #12") and ISSUE.search("see issue 34")
    assert ISSUE.search("https://github.com/o/r/issues/7")
    assert not ISSUE.search("[Security](#secure-aggregation)") and not ISSUE.search("&#8212;")
    assert DATE.search("rerun on 2026-11-28") and not DATE.search("version 2026.1")
    assert HISTORY.search("TCA was renamed") and HISTORY.search("formerly `uSCA`")
    assert PRIVATE.search(">>> from shiftlearn.adaptation._tca import TCA")
    assert PRIVATE.search("import shiftlearn._linalg")
    assert not PRIVATE.search(">>> from shiftlearn.adaptation import TCA")
    assert FENCE.findall("text\n```python\n>>> x = 1\n```\nmore") == [">>> x = 1\n"]
