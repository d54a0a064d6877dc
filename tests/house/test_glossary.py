"""The glossary of ``docs/conventions.md`` holds for the public API (issue #16 item 2).

* every ``__init__`` parameter of a public estimator, splitter or federated configuration has a
  line in the glossary, and that line names the estimator under *where* (so a new estimator
  that reuses a name has to be checked against the name's one meaning);
* the glossary lists only names the library has, and only classes it exports;
* the renamed names are gone from the objects they were renamed in, and the new ones are there;
  those read for one release are there with the default ``"deprecated"``, beside the new ones;
* every estimator or function the README documents is importable from ``shiftlearn``.
"""

from __future__ import annotations

import dataclasses
import fnmatch
import importlib
import inspect
import re
from pathlib import Path

import pytest
from sklearn.base import BaseEstimator
from sklearn.model_selection import BaseCrossValidator

import shiftlearn

ROOT = Path(__file__).resolve().parents[2]
CONVENTIONS = ROOT / "docs" / "conventions.md"
#: modules whose ``__all__`` is the public API
PUBLIC_MODULES = ("shiftlearn", "shiftlearn.adaptation", "shiftlearn.compose",
                  "shiftlearn.boosting", "shiftlearn.generalization", "shiftlearn.mapping",
                  "shiftlearn.reweighting", "shiftlearn.selflabeling", "shiftlearn.labelshift",
                  "shiftlearn.fewlabels", "shiftlearn.linear_model",
                  "shiftlearn.model_selection", "shiftlearn.kernels", "shiftlearn.federated",
                  "shiftlearn.datasets", "shiftlearn.domains", "shiftlearn.report",
                  "shiftlearn.io")
#: modules whose classes are estimators: those with hyper-parameters in ``__init__``
ESTIMATOR_MODULES = PUBLIC_MODULES[:14]
_BACKTICKED = re.compile(r"`([^`]+)`")
_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z_0-9]*$")


def _public_objects() -> dict[str, object]:
    out = {}
    for name in PUBLIC_MODULES:
        module = importlib.import_module(name)
        for attr in getattr(module, "__all__", []):
            if not attr.startswith("__"):
                out.setdefault(attr, getattr(module, attr))
    return out


def _estimators() -> dict[str, type]:
    """Public classes configured by ``__init__`` hyper-parameters: scikit-learn estimators,
    splitters and the federated configurations."""
    out = {}
    for name in ESTIMATOR_MODULES:
        module = importlib.import_module(name)
        for attr in getattr(module, "__all__", []):
            obj = getattr(module, attr)
            if inspect.isclass(obj) and (issubclass(obj, (BaseEstimator, BaseCrossValidator))
                                         or attr.endswith("Config")):
                out[attr] = obj
    return out


def _parameters(obj, properties: bool = False) -> set[str]:
    """``__init__`` (or call) parameters and dataclass fields of a public object (and its
    properties, e.g. ``ProtocolSpec.dim``, with ``properties=True``)."""
    names = set()
    if dataclasses.is_dataclass(obj):
        names |= {f.name for f in dataclasses.fields(obj)}
    target = obj.__init__ if inspect.isclass(obj) else obj
    if callable(target):
        try:
            params = inspect.signature(target).parameters
        except (TypeError, ValueError):
            params = {}
        names |= {p for p, v in params.items() if p != "self" and v.kind not in
                  (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD)}
    if properties and inspect.isclass(obj):
        names |= {n for n, v in vars(obj).items() if isinstance(v, property)}
    return names


def _section(text: str, title: str) -> str:
    start = text.index(f"\n## {title}\n")
    end = text.find("\n## ", start + 1)
    return text[start:] if end < 0 else text[start:end]


def _rows(text: str):
    """``(cells, subsection)`` of every markdown table row (header and rule lines skipped)."""
    sub = ""
    for line in text.splitlines():
        if line.startswith("### "):
            sub = line[4:].strip()
        elif line.startswith("| `"):
            yield [c.strip() for c in line.strip().strip("|").split("|")], sub


#: the subsection of the names renamed but still read (with a FutureWarning) for one release
DEPRECATED = "Renamed, read for one release"
#: the subsection of the classes that keep a scikit-learn estimator's ``__init__``
INHERITED = "scikit-learn's own parameters"


def _glossary() -> tuple[dict[str, str], list[tuple[str, str, str]]]:
    """``{name: where cell}`` of the glossary and the ``(old, new, where)`` renames."""
    text = _section(CONVENTIONS.read_text(encoding="utf-8"), "Glossary")
    names, renamed = {}, []
    for cells, sub in _rows(text):
        assert len(cells) == 3, f"a glossary row needs three cells: {cells}"
        if sub in (DEPRECATED, INHERITED):
            continue
        if sub.startswith("Renamed"):
            renamed.append(tuple(cells))
            continue
        for name in _BACKTICKED.findall(cells[0]):
            assert name not in names, f"{name!r} has two lines in the glossary"
            names[name] = cells[2]
    return names, renamed


def _deprecated_rows() -> list[tuple[str, str, str]]:
    """The ``(old, new, where)`` rows of the names read for one release."""
    text = _section(CONVENTIONS.read_text(encoding="utf-8"), "Glossary")
    return [tuple(cells) for cells, sub in _rows(text) if sub == DEPRECATED]


def _idents(cell: str) -> list[str]:
    """The parameter names of a cell, in order (``name=...`` and flags left out)."""
    toks = (re.sub(r"=.*", "", t).strip() for t in _BACKTICKED.findall(cell.split(" (")[0]))
    return [t for t in toks if _IDENTIFIER.match(t) and t[0].islower()]


def _deprecated_parameter(est, name: str) -> bool:
    """``name`` is an ``__init__`` parameter of ``est`` read for one release (its default is
    ``"deprecated"``) and listed as such in the glossary."""
    params = inspect.signature(est.__init__).parameters
    if name not in params or params[name].default != "deprecated":
        return False
    return any(name in _idents(old) and _where_matches(where, est.__name__)
               for old, _, where in _deprecated_rows())


def _where_matches(where: str, cls_name: str) -> bool:
    if where.strip() == "any":
        return True
    return any(fnmatch.fnmatchcase(cls_name, tok) for tok in _BACKTICKED.findall(where))


def test_the_glossary_parses():
    names, renamed = _glossary()
    assert len(names) > 80 and len(renamed) >= 9
    assert {"n_components", "n_features", "n_landmarks", "gamma", "sampling", "mu"} <= set(names)


def _sklearn_init(est) -> bool:
    """``est`` keeps a scikit-learn estimator's ``__init__`` (its parameters are that
    estimator's)."""
    return (getattr(est.__init__, "__module__", None) or "").startswith("sklearn.")


def _inherited_rows() -> set[str]:
    text = _section(CONVENTIONS.read_text(encoding="utf-8"), "Glossary")
    return {_BACKTICKED.findall(cells[0])[0] for cells, sub in _rows(text) if sub == INHERITED}


def _own_estimators() -> dict[str, type]:
    """The public estimators whose parameters are the glossary's (all but those listed as
    keeping a scikit-learn estimator's parameters)."""
    listed = _inherited_rows()
    return {c: e for c, e in _estimators().items() if c not in listed}


def test_classes_listed_with_sklearns_parameters_keep_its_init():
    estimators = _estimators()
    for name in _inherited_rows():
        assert name in estimators, f"{name}: no public estimator"
        assert _sklearn_init(estimators[name]), (
            f"{name} has an __init__ of its own: its parameters belong in the glossary")


def test_every_estimator_parameter_is_in_the_glossary():
    names, _ = _glossary()
    missing = sorted(f"{cls}.{p}" for cls, est in _own_estimators().items()
                     for p in _parameters(est) - set(names)
                     if not p.endswith("_") and not _deprecated_parameter(est, p))
    assert not missing, (
        f"parameters without a line in the glossary of docs/conventions.md: {missing}; use a "
        "name the glossary already has (with its meaning) or add a line for the new name")


def test_each_glossary_line_names_every_estimator_that_uses_it():
    names, _ = _glossary()
    unlisted = sorted(f"{p} ({cls})" for cls, est in _own_estimators().items()
                      for p in _parameters(est) if p in names
                      and not _where_matches(names[p], cls)
                      and not _deprecated_parameter(est, p))
    assert not unlisted, (
        f"glossary lines that do not name an estimator using the parameter: {unlisted}; check "
        "that the parameter means what the line says, then add the estimator under 'where' "
        "(or rename the parameter)")


def test_the_glossary_lists_only_names_and_classes_the_library_has():
    names, _ = _glossary()
    objects = _public_objects()
    known = set().union(*(_parameters(o, properties=True) for o in objects.values()))
    assert not sorted(set(names) - known), "glossary names no public object has"
    classes = {n for n, o in objects.items() if inspect.isclass(o)}
    for name, where in names.items():
        for tok in _BACKTICKED.findall(where):
            if re.fullmatch(r"[A-Z][A-Za-z]+\*?", tok):
                assert fnmatch.filter(classes, tok), f"{name}: {tok!r} is no public class"


@pytest.mark.parametrize("row", _glossary()[1], ids=lambda r: r[0])
def test_renamed_parameters_are_gone(row):
    old_cell, new_cell, where = row
    objects = _public_objects()

    def idents(cell):
        toks = (re.sub(r"=.*", "", t).strip() for t in _BACKTICKED.findall(cell))
        return {t for t in toks if _IDENTIFIER.match(t) and t[0].islower()}

    old, new = idents(old_cell), idents(new_cell)
    assert old and new
    # a name renamed away and reused for another meaning in the same object (FedRFTCAConfig's
    # ``sampling``) is checked by the reusing row
    reused = {n for o, nw, w in _glossary()[1] for n in idents(nw)} & old
    targets = [n for tok in _BACKTICKED.findall(where) for n in fnmatch.filter(objects, tok)
               if _IDENTIFIER.match(tok.rstrip("*"))]
    assert targets, f"no public object matches {where!r}"
    for name in targets:
        params = _parameters(objects[name])
        assert not (old - reused) & params, f"{name} still takes {sorted(old & params)}"
        assert new & params, f"{name} lacks {sorted(new)}"


@pytest.mark.parametrize("row", _deprecated_rows(), ids=lambda r: r[0])
def test_renamed_names_read_for_one_release_are_there_beside_the_new_ones(row):
    """Each object takes the new name and the former one, whose default is ``"deprecated"``
    (``fit`` maps it with a FutureWarning: the estimators' own tests); the job key and the
    command-line flag: the new one is the job's and the parser's, the former one is mapped."""
    old_cell, new_cell, where = row
    old, new = _idents(old_cell), _idents(new_cell)
    if where.startswith("job key"):
        from shiftlearn.federated.jobs import DEFAULTS, FORMER_KEYS

        assert old == ["sigma"] and new == ["bandwidth"]
        assert FORMER_KEYS == {"sigma": "bandwidth"}
        assert "bandwidth" in DEFAULTS and "sigma" not in DEFAULTS
        return
    if where.startswith("`shiftlearn demo"):
        from shiftlearn.cli import build_parser

        flags = _BACKTICKED.findall(old_cell) + _BACKTICKED.findall(new_cell)
        assert flags == ["--sigma-x", "--bandwidth-x"]
        demo = build_parser()._subparsers._group_actions[0].choices["demo"]
        marginal = demo._subparsers._group_actions[0].choices["marginal"]
        actions = {s: a for a in marginal._actions for s in a.option_strings}
        assert actions["--sigma-x"].help == "==SUPPRESS==" and actions["--bandwidth-x"].help
        return
    objects = _public_objects()
    targets = [n for tok in _BACKTICKED.findall(where.split(" (")[0])
               for n in fnmatch.filter(objects, tok)]
    assert old and len(old) == len(new) and targets, row
    for name in targets:
        params = inspect.signature(objects[name].__init__).parameters
        pairs = [(o, n) for o, n in zip(old, new, strict=True) if o in params]
        assert pairs, f"{name} takes none of {old}"
        for o, n in pairs:
            assert params[o].default == "deprecated", f"{name}.{o} is not deprecated"
            assert n in params, f"{name} lacks {n}"


def test_what_the_readme_documents_is_exported_from_shiftlearn():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    defined = {n for n, o in _public_objects().items() if inspect.isclass(o) or callable(o)}
    methods = _section(readme, "Methods")
    first_column = [_BACKTICKED.findall(line.split("|")[1]) for line in methods.splitlines()
                    if line.startswith("| `")]
    documented = {t for toks in first_column for t in toks}
    documented |= {t for t in _BACKTICKED.findall(readme)
                   if re.fullmatch(r"[A-Z][A-Za-z]+", t) and t in defined}
    missing = []
    for name in sorted(documented):
        if "." in name:
            path = name if name.startswith("shiftlearn.") else f"shiftlearn.{name}"
            module, _, attr = path.rpartition(".")
            if not hasattr(importlib.import_module(module), attr):
                importlib.import_module(f"{module}.{attr}")
        elif not hasattr(shiftlearn, name):
            missing.append(name)
    assert not missing, f"the README documents {missing}: export them in shiftlearn/__init__.py"
