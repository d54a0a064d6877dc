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

#: the Sphinx configuration and the built site (``make docs`` -> ``docs/_build``) are not test
#: modules (kept here: a second ``conftest.py`` in ``docs/`` clashes with ``tests/conftest.py``
#: under pytest's default import mode, both being the module ``conftest``)
collect_ignore = ["docs/conf.py"]
collect_ignore_glob = ["docs/_build/*"]

#: documentation pages and modules whose examples load the real data sets
NEEDS_DATA = ("README.md", "datasets.md", "adaptation.md", "_loaders.py", "_base.py", "_fetch.py")


def pytest_collection_modifyitems(config, items):
    if Path(os.environ["SHIFTLEARN_DATA"]).is_dir():
        return
    skip = pytest.mark.skip(reason=f"the data home {os.environ['SHIFTLEARN_DATA']} is missing")
    for item in items:
        if item.path.name in NEEDS_DATA and "doctest" in type(item).__name__.lower():
            item.add_marker(skip)


@pytest.fixture(autouse=True)
def _sklearn_config_isolated():
    """Each test item (doctests included) starts from scikit-learn's default configuration and
    cannot leak a change: importing skada switches metadata routing on for the whole process
    (``set_config(enable_metadata_routing=True)``), which would silently change how later tests
    in the same worker pass ``groups`` and ``sample_domain``."""
    import sklearn

    with sklearn.config_context(enable_metadata_routing=False):
        yield
