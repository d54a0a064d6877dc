"""Sphinx configuration: the docs pages (Markdown, MyST) and the API reference (numpydoc).

``make docs`` builds HTML into ``docs/_build/html`` with warnings as errors;
``tests/house/test_docs_build.py`` runs the same build in ``make test``. The build needs the
``docs`` extra (``pip install -e '.[docs]'``: sphinx, numpydoc, myst-parser, furo).

Design decisions
----------------
* **Root document** ``contents.rst``: its toctree lists the Markdown pages and the API
  reference, so ``docs/index.md`` stays plain Markdown that reads well on a code host.
* **API pages by hand** (``docs/api/*.rst``, one per subpackage, ``automodule`` with
  ``:members:``): each object is documented once, where it is defined for users (the
  subpackage that exports it, following its ``__all__``); the names re-exported by the
  top-level ``shiftlearn`` namespace link there (``docs/api/index.rst``, checked against
  ``shiftlearn.__all__`` by ``tests/house/test_docs_build.py``).
* **Links to repository files** outside ``docs/`` (``../README.md``, benchmark results) are
  not pages of the site; they are turned into plain links to the file in the working tree
  (relative to the built page), so they work when ``docs/_build/html`` is opened locally and
  do not hide real broken links between pages, which stay warnings.
* No ``intersphinx`` (the build must run offline) and no ``nitpicky`` mode (parameter types
  such as ``array-like of shape (n_samples,)`` are prose, not references).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

DOCS = Path(__file__).resolve().parent
ROOT = DOCS.parent
sys.path.insert(0, str(ROOT))
# examples and module imports read the data home only lazily; set a harmless default
os.environ.setdefault("SHIFTLEARN_DATA", str(ROOT.parent / "shared" / "data"))

import shiftlearn  # noqa: E402

project = "shiftlearn"
author = "shiftlearn developers"
copyright = "shiftlearn developers"  # noqa: A001 - Sphinx's name
version = release = shiftlearn.__version__

extensions = [
    "sphinx.ext.autodoc",
    "numpydoc",
    "myst_parser",
]
source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
root_doc = "contents"
# dev/: the design notes for developers, read in the repository
exclude_patterns = ["_build", "**/.ipynb_checkpoints", "dev"]

# autodoc + numpydoc
autodoc_default_options = {"members": True, "member-order": "groupwise", "show-inheritance": False}
autodoc_typehints = "none"  # the numpy sections give the types; signatures stay short
numpydoc_show_class_members = False  # autodoc's :members: lists the methods once
numpydoc_class_members_toctree = False
# numpydoc's validation (numpydoc_validation_checks) reads every object's source again: +15%
# build time for its structural checks. The one that matters here, an unknown section heading
# (a section numpydoc would silently drop), is numpydoc's own UserWarning while parsing, which
# _numpydoc_warnings_as_sphinx_warnings turns into a Sphinx warning, so -W fails on it.

# MyST: GitHub-style anchors for the pages' "page.md#section" links
myst_heading_anchors = 4
myst_enable_extensions = ["dollarmath"]

html_theme = "furo"
html_title = f"shiftlearn {release}"
html_static_path: list[str] = []


def _repository_links(app):
    """A post-transform, run before MyST's reference resolver, that turns each link to a
    Markdown file of the repository outside ``docs/`` (MyST reads it as a missing page) into a
    plain link to that file in the working tree, relative to the built page."""
    from docutils import nodes
    from sphinx import addnodes
    from sphinx.transforms.post_transforms import SphinxPostTransform

    class RepositoryLinks(SphinxPostTransform):
        default_priority = 8  # MyST's resolver is 9, Sphinx's ReferencesResolver 10

        def run(self, **kwargs) -> None:
            for node in list(self.document.findall(addnodes.pending_xref)):
                if node.get("reftype") != "myst" or node.get("refdomain") != "doc":
                    continue
                target = str(node["reftarget"])
                if target in self.env.all_docs:
                    continue
                path = Path(target + ".md")
                if not path.is_file() or ROOT not in path.parents or DOCS in path.parents:
                    continue
                page_dir = Path(self.app.outdir) / Path(node["refdoc"]).parent
                uri = os.path.relpath(path, page_dir)
                if node.get("reftargetid"):
                    uri += "#" + node["reftargetid"]
                ref = nodes.reference("", "", internal=False, refuri=uri)
                ref += node[0].deepcopy() if node.children else nodes.literal(uri, uri)
                node.replace_self(ref)

    app.add_post_transform(RepositoryLinks)


def _skip_member(app, what, name, obj, skip, options):
    """Leave out scikit-learn's generated ``set_{fit,transform,...}_request`` methods: their
    docstrings point into scikit-learn's own docs, which this build cannot link to."""
    if name.startswith("set_") and name.endswith("_request"):
        return True
    return None


def _numpydoc_warnings_as_sphinx_warnings():
    """Report numpydoc's parsing warnings (``UserWarning`` from ``numpydoc.docscrape``, e.g.
    "Unknown section") through Sphinx's logger, where ``-W`` makes them errors."""
    import warnings

    from sphinx.util import logging

    logger = logging.getLogger("numpydoc")
    previous = warnings.showwarning

    def show(message, category, filename, lineno, file=None, line=None):
        if "numpydoc" in str(filename):
            logger.warning(f"numpydoc: {message}")
        else:
            previous(message, category, filename, lineno, file, line)

    warnings.showwarning = show
    warnings.filterwarnings("always", category=UserWarning, module="numpydoc")


def setup(app):
    _repository_links(app)
    _numpydoc_warnings_as_sphinx_warnings()
    app.connect("autodoc-skip-member", _skip_member)
