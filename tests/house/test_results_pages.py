"""The results pages of the docs (``docs/results/``) are what the results files give.

``tools/results_pages.py`` generates every page from ``benchmarks/*/results/<name>.json`` and
``.md``; a results file rerun (or edited) without regenerating the pages fails here. Reading
files only: well under a second.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _tool():
    spec = importlib.util.spec_from_file_location("results_pages",
                                                  ROOT / "tools" / "results_pages.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("results_pages", module)
    spec.loader.exec_module(module)
    return module


def test_results_pages_match_the_results_files(capsys):
    rc = _tool().main(["--check"])
    assert rc == 0, capsys.readouterr().err


def test_check_fails_on_a_page_that_differs(tmp_path, monkeypatch, capsys):
    tool = _tool()
    pages = tool.expected()
    out = tmp_path / "results"
    out.mkdir()
    for path, text in pages.items():
        (out / path.name).write_text(text)
    monkeypatch.setattr(tool, "OUT", out)
    monkeypatch.setattr(tool, "expected", lambda: {out / p.name: t for p, t in pages.items()})
    assert tool.main(["--check"]) == 0
    page = out / "fewlabels_study.md"
    page.write_text(page.read_text().replace("| 26.3 |", "| 26.4 |"))
    assert tool.main(["--check"]) == 1
    assert "fewlabels_study.md differs" in capsys.readouterr().err


def test_every_page_is_listed_and_states_command_and_machine():
    tool = _tool()
    pages = tool.expected()
    index = pages[tool.OUT / "index.md"]
    for path, text in pages.items():
        if path.name == "index.md":
            continue
        assert f"]({path.name})" in index and f"\n{path.stem}\n" in index, path.name
        assert "\nCommand: `" in text and "\nMachine: " in text, path.name
