"""What the README tells a new user before the commands: how to reach the virtual environment
that ``make demo`` made (the tour calls bare ``python`` and ``shiftlearn``), what ``make test``
installs besides the Python packages, and the lines for one's own NumPy arrays (run by
pytest's doctest-glob over README.md)."""

import os
import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text()


def _before_tour() -> str:
    return README.split("<!-- tour:start -->", 1)[0]


def test_activation_is_said_before_the_tour():
    text = _before_tour()
    assert ". .venv/bin/activate" in text and ".venv/bin/shiftlearn" in text


def test_the_activation_line_gives_the_tours_python_and_shiftlearn(tmp_path):
    """Run the README's own activation line in an empty folder with a PATH that has no
    virtual environment: ``python`` and ``shiftlearn`` then come from the clone's .venv."""
    activate = ROOT / ".venv" / "bin" / "activate"
    if not activate.exists():
        pytest.skip("no .venv in the clone (make demo or make test creates it)")
    line = re.search(r"`(\. \.venv/bin/activate)`", _before_tour())[1]
    env = {"PATH": "/usr/bin:/bin", "HOME": os.environ.get("HOME", "/tmp")}
    run = subprocess.run(["bash", "-c", f"cd {ROOT} && {line} && cd {tmp_path} && "
                          "command -v python && command -v shiftlearn"],
                         env=env, capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    python, shiftlearn = run.stdout.split()
    assert python == str(ROOT / ".venv" / "bin" / "python")
    assert shiftlearn == str(ROOT / ".venv" / "bin" / "shiftlearn")


def test_quick_start_says_what_make_test_installs():
    quick = README.split("## Quick start", 1)[1].split("### ", 1)[0]
    assert "Chromium with `apt-get`" in quick and "browser" in quick
    assert "make install-deep" in quick and "torch==2.13.0" in quick


def test_numpy_arrays_block_is_a_doctest():
    block = README.split("### Your own NumPy arrays", 1)[1].split("```python", 1)[1]
    block = block.split("```", 1)[0]
    for piece in ("np.full(len(Xt), -1)", ".fit(X, y, sd)", "clf.predict(Xt)"):
        assert ">>> " in block and piece in block
