"""The API reference and the docs pages build without a warning (``make docs``, issue #16).

The build is the one ``make docs`` runs (Sphinx + numpydoc + MyST, ``docs/conf.py``): every
page re-read, warnings as errors, into a temporary folder, in a subprocess so that importing
every module for autodoc leaves this test process as it was. A docstring numpydoc cannot parse,
a broken reST literal, a link to a page or section that does not exist or a public module that
no longer imports fails here with Sphinx's message. It needs the ``docs`` extra (installed by
``make test``); without sphinx it is skipped with the install command. One full build: about
12 s of CPU. Its wall time is the machine's load: on the shared 2-core machine (2026-11-24)
35 s at normal priority at load 12, 25-59 s under ``nice -n 10`` at load 7-10. Restricting it to
the API pages would save only a quarter of the CPU (9 s), so the Markdown pages stay in.

The layout checks (every public subpackage has its API page, every top-level name is listed on
the API index) run without sphinx.
"""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import shiftlearn

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
#: subpackages that are tools, not library API (the command line has docs/cli.md)
NOT_API = {"cli"}


def _public_subpackages():
    return sorted(p.parent.name for p in (ROOT / "shiftlearn").glob("*/__init__.py")
                  if not p.parent.name.startswith("_") and p.parent.name not in NOT_API)


def test_every_subpackage_has_an_api_page():
    index = (DOCS / "api" / "index.rst").read_text()
    for name in _public_subpackages():
        page = DOCS / "api" / f"{name}.rst"
        assert page.is_file(), f"docs/api/{name}.rst is missing: add it, list it in api/index.rst"
        assert f".. automodule:: shiftlearn.{name}\n" in page.read_text(), page.name
        assert re.search(rf"^   {name}$", index, re.M), f"{name} is not in api/index.rst's toctree"


def test_top_level_names_are_listed_on_the_api_index():
    index = (DOCS / "api" / "index.rst").read_text()
    for name in shiftlearn.__all__:
        if name == "__version__":
            continue
        module = shiftlearn._LAZY[name]
        assert f"{module}.{name}`" in index, (
            f"shiftlearn.{name} is missing from docs/api/index.rst (documented in {module})")


@pytest.mark.skipif(importlib.util.find_spec("sphinx") is None,
                    reason="sphinx is not installed: pip install -e '.[docs]' (make test does)")
def test_docs_build_without_warnings(tmp_path):
    for extension in ("numpydoc", "myst_parser", "furo"):
        if importlib.util.find_spec(extension) is None:
            pytest.fail(f"sphinx is installed but {extension} is not: pip install -e '.[docs]'")
    out = tmp_path / "html"
    env = {**os.environ, "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1",
           "MKL_NUM_THREADS": "1"}
    proc = subprocess.run(
        [sys.executable, "-m", "sphinx", "-E", "-W", "--keep-going", "-q", "-b", "html",
         "-d", str(tmp_path / "doctrees"), str(DOCS), str(out)],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, f"make docs fails:\n{proc.stderr[-6000:]}"
    # the reference holds the estimators (autodoc imported the modules) and the guide pages
    adaptation = (out / "api" / "adaptation.html").read_text()
    assert 'id="shiftlearn.adaptation.TCA"' in adaptation
    assert 'id="shiftlearn.kernels.mmd2"' in (out / "api" / "kernels.html").read_text()
    assert (out / "conventions.html").is_file() and (out / "index.html").is_file()
