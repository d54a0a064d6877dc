"""Issue #16 item 1, kept: each kernel / eigen / random-number primitive has one home.

Read from the source text (``ast``), so a second copy fails here with the place to look:

* ``scipy.sparse.linalg.eigsh`` is called in ``shiftlearn/_linalg.py`` only (``leading_eigh``);
* no module imports a private name of ``shiftlearn.kernels`` (the former ``_rng``), and no
  module defines its own seed wrapper: a ``random_state`` goes to ``numpy.random.default_rng``;
* the primitives that moved into ``shiftlearn.kernels`` are defined there and nowhere else
  (as module-level functions; ``RFStats.mmd_vector`` is the feature-space method).
"""

import ast
from functools import cache
from pathlib import Path

import pytest

PKG = Path(__file__).resolve().parents[2] / "shiftlearn"
MODULES = sorted(p for p in PKG.rglob("*.py") if "__pycache__" not in p.parts)
#: defined in shiftlearn/kernels.py and nowhere else in the package
KERNEL_PRIMITIVES = ("bandwidth_rows", "domain_mean_matrix", "median_heuristic", "mmd_matrix",
                     "mmd_vector", "rff_map", "sigma_from_sq_distances")


@cache
def _tree(path: Path) -> ast.Module:
    return ast.parse(path.read_text(encoding="utf-8"), filename=str(path))


def _rel(path: Path) -> str:
    return str(path.relative_to(PKG.parent))


def test_the_package_has_modules_to_check():
    assert any(p.name == "kernels.py" for p in MODULES) and len(MODULES) > 20


def test_eigsh_is_called_in_linalg_only():
    calls = []
    for path in MODULES:
        for node in ast.walk(_tree(path)):
            if isinstance(node, ast.Call):
                f = node.func
                name = f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", None)
                if name == "eigsh":
                    calls.append(f"{_rel(path)}:{node.lineno}")
    assert calls and all(c.startswith("shiftlearn/_linalg.py:") for c in calls), (
        f"eigsh outside shiftlearn/_linalg.py: {calls}; use _linalg.leading_eigh")


def test_no_private_kernels_import_and_no_seed_wrapper():
    bad = []
    for path in MODULES:
        for node in ast.walk(_tree(path)):
            if isinstance(node, ast.ImportFrom) and (node.module or "").endswith("kernels"):
                bad += [f"{_rel(path)}:{node.lineno} imports {a.name}" for a in node.names
                        if a.name.startswith("_")]
            if isinstance(node, ast.FunctionDef) and node.name in ("_rng", "_check_rng"):
                bad.append(f"{_rel(path)}:{node.lineno} defines {node.name}")
    assert not bad, bad


@pytest.mark.parametrize("name", KERNEL_PRIMITIVES)
def test_kernel_primitive_is_defined_once_in_kernels(name):
    homes = [_rel(p) for p in MODULES for node in _tree(p).body      # module-level functions
             if isinstance(node, ast.FunctionDef) and node.name == name]
    assert homes == ["shiftlearn/kernels.py"], f"{name} defined in {homes}"
