"""Root pytest configuration: the data home for every test item, doctests included.

``make test`` collects the tests in ``tests/``, every docstring example in ``shiftlearn/``
(``--doctest-modules``) and the code of every documentation page (``--doctest-glob=*.md`` over
``docs/`` and the README). Pages and modules whose examples read the real data sets are
skipped, with the reason, when the data home is missing.
"""

import os
from pathlib import Path

import pytest

_DEFAULT = Path(__file__).resolve().parent.parent / "shared" / "data"
os.environ.setdefault("SHIFTLEARN_DATA", str(_DEFAULT))

#: documentation pages and modules whose examples load the real data sets
NEEDS_DATA = ("README.md", "datasets.md", "_loaders.py", "_base.py", "_fetch.py")


def pytest_collection_modifyitems(config, items):
    if Path(os.environ["SHIFTLEARN_DATA"]).is_dir():
        return
    skip = pytest.mark.skip(reason=f"the data home {os.environ['SHIFTLEARN_DATA']} is missing")
    for item in items:
        if item.path.name in NEEDS_DATA and "doctest" in type(item).__name__.lower():
            item.add_marker(skip)
