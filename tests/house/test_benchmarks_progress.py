"""Progress in the benchmarks (issue #17 item 4): ``_common.progress`` / ``_common.track``.

Every long benchmark (runtime ``min`` or ``h`` in ``benchmarks/README.md``) decorates its
``main`` with ``@progress()``, so the library's loops inside it draw bars on a terminal; off a
terminal the helpers change nothing (same items, nothing written).
"""

from __future__ import annotations

import ast
import importlib.util
import io
import re
import sys
from pathlib import Path

import pytest
from rich.console import Console

from shiftlearn import _progress

BENCH = Path(__file__).resolve().parents[2] / "benchmarks"
# not yet switched on (their owners add `@progress()` on main, then remove them here)
NOT_YET: set[str] = set()


@pytest.fixture
def common(monkeypatch):
    monkeypatch.syspath_prepend(str(BENCH))
    spec = importlib.util.spec_from_file_location("_common_progress_test", BENCH / "_common.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _long_scripts() -> list[str]:
    """Scripts whose runtime column in benchmarks/README.md starts with ``min`` or ``h``."""
    out = []
    for line in (BENCH / "README.md").read_text().splitlines():
        cells = [c.strip() for c in re.split(r"(?<!\\)\|", line)[1:-1]]
        if len(cells) == 5 and cells[0].startswith("`") and cells[0].endswith(".py`"):
            if re.match(r"(~[\d.]+\s*)?(min|h)\b", cells[3]):
                out.append(cells[0].strip("`"))
    return out


def test_off_a_terminal_nothing_changes(common, monkeypatch, capsys):
    monkeypatch.setattr(_progress, "_stderr_is_terminal", lambda: False)

    @common.progress()
    def main():
        assert not _progress.is_enabled()
        return list(common.track(range(4), "items")), list(common.track(iter("ab"), "gen"))

    assert main() == ([0, 1, 2, 3], ["a", "b"])
    with common.progress(), common.round_bar("rounds", 2) as on_round:
        assert on_round(1, 2) is None
    assert capsys.readouterr() == ("", "")


def test_on_a_terminal_the_library_loops_draw(common, monkeypatch):
    monkeypatch.setattr(_progress, "_stderr_is_terminal", lambda: True)
    buf = io.StringIO()
    console = Console(file=buf, force_terminal=True, width=100)
    with common.progress() as on:
        assert on and _progress.is_enabled()
        # draw into a buffer instead of the real stderr
        with _progress.progress_enabled(True, console=console):
            assert list(common.track(range(3), "benchmark tasks")) == [0, 1, 2]
        with _progress.progress_enabled(True, console=console):
            with common.round_bar("Flower rounds", 3) as on_round:
                for r in (1, 2, 3):
                    on_round(r, 3)
    assert not _progress.is_enabled()
    assert "benchmark tasks" in buf.getvalue() and "Flower rounds" in buf.getvalue()
    with common.progress(False) as on:
        assert not on and not _progress.is_enabled()


def test_an_old_tree_without_progress_runs_plain(common, monkeypatch):
    """A --baseline worker imports _common with an older shiftlearn that has no _progress."""
    monkeypatch.setitem(sys.modules, "shiftlearn._progress", None)   # import -> ImportError
    with common.progress() as on:
        assert on is False
        assert list(common.track([1, 2], "x")) == [1, 2]
        with common.round_bar("rounds") as on_round:
            on_round(1, None)


def test_every_long_benchmark_switches_progress_on():
    scripts = {p.name: p for p in BENCH.glob("*/*.py")}
    long = _long_scripts()
    assert len(long) >= 30, long          # the README table parsed
    missing = []
    for name in long:
        if name in NOT_YET or name not in scripts:
            continue
        tree = ast.parse(scripts[name].read_text())
        main = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "main")
        if not any(isinstance(d, ast.Call) and getattr(d.func, "id", "") == "progress"
                   for d in main.decorator_list):
            missing.append(name)
    assert not missing, (f"{missing}: decorate main with @progress() from benchmarks/_common.py "
                         "(and wrap the script's own long loops in track)")
