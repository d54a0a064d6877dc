"""The HTML reports as a person sees them: opened from disk in a real headless Chromium (Debian's
``chromium``), every figure loaded, not blank, nothing fetched from the network; and the
README's four-step tour run line by line in an empty folder.

Skipped, with the reason, where chromium is not installed (``make test`` installs it when the
machine allows; ``apt-get install -y chromium``).
"""

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from _chromium import find_chromium, inspect_report

from shiftlearn import cli

README = Path(__file__).resolve().parents[2] / "README.md"


@pytest.fixture(scope="module")
def chromium():
    path = find_chromium()
    if path is None:
        pytest.skip("chromium is not installed (apt-get install -y chromium), so the HTML "
                    "report cannot be opened in a real browser here")
    return path


def check_figures(page: Path, expected: int) -> dict:
    """Open ``page`` and assert what a person would see: ``expected`` figures, each loaded at
    its PNG size, drawn at that size, and with ink on it; no request beyond the file itself."""
    seen = inspect_report(page)
    figs = seen["figures"]
    assert len(figs) == expected, [f["id"] for f in figs]
    text = page.read_text()
    for f in figs:
        w, h = f["natural"]
        assert f["complete"] and w > 100 and h > 100, f
        declared = re.search(rf'id="{f["id"]}" width="(\d+)" height="(\d+)"', text)
        assert (int(declared[1]), int(declared[2])) == (w, h)
        assert f["box"][2] == pytest.approx(w, abs=2) and f["box"][3] == pytest.approx(h, abs=2)
        assert f["nonwhite"] > 0.02, f            # a blank (all-white) image has 0
    outside = [u for u in seen["requests"] if not u.startswith(("data:", "file:"))]
    assert outside == []
    assert seen["requests"][0] == page.resolve().as_uri()
    return seen


def _domains(tmp_path, n=40):
    rng = np.random.default_rng(0)
    files = []
    for k, shift in enumerate([0.0, 0.2, 2.0]):
        y = rng.integers(0, 3, n + 10 * k)
        X = np.c_[y * 2.0, np.zeros(len(y))] + rng.normal(size=(len(y), 2)) + shift
        pd.DataFrame(X, columns=["a", "b"]).assign(label=y).to_csv(tmp_path / f"d{k}.csv",
                                                                    index=False)
        files.append(str(tmp_path / f"d{k}.csv"))
    return files


def test_shift_report_opens_with_every_figure(tmp_path, chromium, capsys):
    files = _domains(tmp_path)
    page = tmp_path / "shift.html"
    assert cli.main(["shift", *files, "--label-column", "label", "--permutations", "20",
                     "--report", str(page)]) == 0
    # heat-map, map of the domains, PCA of the rows, class-conditional heat-map, class shares
    seen = check_figures(page, 5)
    assert seen["title"] == "shiftlearn shift: 3 domains"


def test_adapt_report_opens_with_every_figure(tmp_path, chromium, capsys):
    files = _domains(tmp_path)
    page = tmp_path / "report.html"
    assert cli.main(["adapt", *files[:2], "--target", files[2], "--target-has-labels",
                     "--label-column", "label", "--candidates", "TCA", "--permutations", "20",
                     "--report", str(page)]) == 0
    choice = json.loads((tmp_path / "report.json").read_text())["selection"]
    # candidates, heat-map(s), PCA picture(s), class mix; the 'after' pair only when adapting
    expected = 4 + (choice["choice"] != "none") * 2
    check_figures(page, expected)


# --------------------------------------------------------------------------- the tour ------
def tour_lines() -> list[str]:
    """The README tour's commands (comments dropped, continuation lines joined)."""
    text = README.read_text()
    block = text.split("<!-- tour:start -->", 1)[1].split("<!-- tour:end -->", 1)[0]
    code = block.split("```bash\n", 1)[1].split("```", 1)[0]
    commands, current = [], ""
    for line in code.splitlines():
        if line.startswith("#") and not current:
            continue
        current += line + "\n"
        if line.endswith("\\") or current.count('"') % 2:
            continue
        commands.append(current.strip())
        current = ""
    return commands


def test_readme_tour_runs_on_new_csv_files(tmp_path, chromium):
    exe = shutil.which("shiftlearn", path=str(Path(sys.executable).parent))
    if exe is None:
        pytest.skip("the shiftlearn entry point is not installed beside this Python")
    lines = tour_lines()
    assert [ln.split()[0] for ln in lines] == ["python", "shiftlearn", "shiftlearn", "python",
                                               "head"]
    env = {**os.environ, "PATH": f"{Path(exe).parent}{os.pathsep}{os.environ['PATH']}"}
    outputs = []
    for line in lines:
        if line.startswith("python -m webbrowser"):
            # step 3, "open the report": the headless browser stands in for the person
            choice = json.loads((tmp_path / "report.json").read_text())["selection"]["choice"]
            check_figures(tmp_path / line.split()[-1], 4 + 2 * (choice != "none"))
            continue
        run = subprocess.run(["bash", "-c", line.replace("python ", f"{sys.executable} ", 1)],
                             cwd=tmp_path, env=env, capture_output=True, text=True)
        assert run.returncode == 0, (line, run.stderr)
        outputs.append(run.stdout)
    assert "source and target differ (p <= 0.05)." in outputs[1]
    assert outputs[-1].splitlines()[0] == "row,prediction"
    assert len((tmp_path / "predictions.csv").read_text().splitlines()) == 151
    check_figures(tmp_path / "shift.html", 4)   # no class-conditional map: one labeled file


# ------------------------------------------------------------------ wide figures ------
def _many_classes(tmp_path, k=12):
    """Two domains of ``k`` classes: the class-mix chart of the source, the predictions and
    the given target labels is 1.5 + 0.5 * 3 * k inches wide (1,950 px for 12 classes)."""
    rng = np.random.default_rng(0)
    files = []
    for name, shift in (("source", 0.0), ("target", 0.5)):
        y = np.repeat(np.arange(k), 6)
        X = np.c_[y * 3.0, rng.normal(size=len(y))] + rng.normal(size=(len(y), 2)) + shift
        pd.DataFrame(X, columns=["a", "b"]).assign(label=[f"class {c}" for c in y]).to_csv(
            tmp_path / f"{name}.csv", index=False)
        files.append(str(tmp_path / f"{name}.csv"))
    return files


def check_fits(page: Path, width: int) -> dict:
    """Open ``page`` in a ``width``-pixel window: every figure inside the window, scaled with
    its aspect ratio kept, and nothing wider than the window (no horizontal scroll)."""
    seen = inspect_report(page, width=width)
    assert seen["page"][0] <= width, seen["page"]
    for f in seen["figures"]:
        x, _, w, h = f["box"]
        nw, nh = f["natural"]
        assert f["complete"] and x >= 0 and x + w <= width, (width, f)
        assert w <= nw + 2
        assert h == pytest.approx(w * nh / nw, abs=2)   # scaled, not squashed
        assert f["nonwhite"] > 0.02, f
    return seen


@pytest.mark.parametrize("width", [1280, 1024])
def test_wide_figures_fit_the_window(tmp_path, chromium, capsys, width):
    src, tgt = _many_classes(tmp_path)
    page = tmp_path / "report.html"
    assert cli.main(["adapt", src, "--target", tgt, "--target-has-labels", "--label-column",
                     "label", "--method", "raw", "--permutations", "0",
                     "--report", str(page)]) == 0
    seen = check_fits(page, width)
    assert max(f["natural"][0] for f in seen["figures"]) > 1280   # the class mix is wide
    shift = tmp_path / "shift.html"
    assert cli.main(["shift", src, tgt, "--label-column", "label", "--permutations", "0",
                     "--report", str(shift)]) == 0
    check_fits(shift, width)
