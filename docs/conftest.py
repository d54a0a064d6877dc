"""pytest in ``docs/``: the pages' code runs as doctests (root ``conftest.py``); the Sphinx
configuration and the built site (``make docs`` -> ``docs/_build``) are not test modules."""

collect_ignore = ["conf.py"]
collect_ignore_glob = ["_build/*"]
