"""Run a docs page's Dask example: its lines are ``+SKIP`` for installs without dask, so the
doctests of ``make test`` skip them; the Dask tests run them here, printed results checked."""

from __future__ import annotations

import doctest
import re
from pathlib import Path

DOCS = Path(__file__).resolve().parents[1] / "docs"


def run_skipped_example(page: str, heading: str) -> int:
    """Run the first ``python`` block under ``heading`` of ``docs/<page>`` with its ``+SKIP``
    markers removed; returns the number of examples run (failures raise)."""
    text = (DOCS / page).read_text()
    section = text.split(heading, 1)[1].split("\n## ", 1)[0]
    code = section.split("```python", 1)[1].split("```", 1)[0]
    code = re.sub(r"\s*# doctest: \+SKIP", "", code)
    test = doctest.DocTestParser().get_doctest(code, {}, f"{page}#{heading}", None, 0)
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    runner.run(test)
    assert runner.failures == 0, f"{runner.failures} example(s) of {page} failed"
    return runner.tries
