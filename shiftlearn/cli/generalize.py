"""``shiftlearn generalize``: a model for domains not seen in training, chosen on your files.

Several labeled files, one domain each (hospitals, sites, subjects; or files with a
``--domain-column``), and no target at training time. The command compares the plain estimator,
pooling, SCA in its domain-generalization form and marginal transfer
(:class:`~shiftlearn.model_selection.GeneralizationSelector`) on held-out domains (``--select
lodo``: each file held out in turn; ``cluster``: the clustering-based validation split), prints
every held-out domain's score per candidate and the worst domain, refits the choice on every
file and predicts new domain files (``--predict``: each file is one new domain, its rows
embedded together) or saves it (``--save``, read by ``shiftlearn predict``). A label column with
non-integral numbers is a regression task (errors in the label's units), unless ``--task`` says
otherwise.

Contract: every output path is checked before any file is read; files are matched by their
header names (another order is reordered with a note, other names are an error naming the
file); results go to stdout (a table, or ``--json``), progress and notes to stderr; exit status
0 on success, 2 on a usage or input error with a one-line message naming the fix. Options:
``docs/cli.md``; design notes: ``docs/dev/cli.md``.
"""

from __future__ import annotations

import argparse
import csv
import json
import shlex
import sys
import time
import warnings
from pathlib import Path

import numpy as np

from ._common import check_outputs, info, match_columns, print_table, warning_lines
from ._generalize_report import _fmt, _metric_words, _table_rows, decision, figures, write_report

#: ``--estimator`` names for a regression target -> the scikit-learn regressor (classification
#: uses the shared names of :func:`shiftlearn.workflow.make_estimator`, as ``adapt`` does)
REGRESSORS = {"svm": "SVR", "ridge": "Ridge", "1nn": "KNeighborsRegressor",
              "rf": "RandomForestRegressor", "hgb": "HistGradientBoostingRegressor"}
#: ``--candidates`` words -> labels of the selector
CANDIDATE_WORDS = {"plain": "the estimator on every training row as it is",
                   "pooling": "the marginal-transfer paper's pooled kernel SVM (every domain "
                              "weighted equally, no domain information)",
                   "SCA": "SCA's domain-generalization components, then the estimator",
                   "marginal": "marginal transfer (a kernel SVM on the row and its domain's "
                               "distribution)"}
_HEADER = {"auto": None, "yes": True, "no": False}


def add_parser(subparsers, parents) -> argparse.ArgumentParser:
    p = subparsers.add_parser(
        "generalize", parents=parents,
        help="several labeled domain files in; a model for new, unseen domains (chosen by "
             "leaving domains out), per-domain scores and predictions",
        description="Choose among the plain estimator, pooling, SCA (domain generalization) and "
                    "marginal transfer for domains not seen in training, by holding out each "
                    "domain file in turn; print every held-out domain's score and the worst "
                    "domain; predict new domain files. Files: CSV/TSV/semicolon/whitespace "
                    "text with an optional header (also compressed), Parquet, or .npy/.npz; "
                    "one domain per file, every file with the same feature columns and the "
                    "label column.",
        epilog="Example: shiftlearn generalize site_a.csv site_b.csv site_c.csv "
               "--label-column outcome --predict site_d.csv --out predictions.csv "
               "--report report.html")
    p.add_argument("domains", nargs="+", metavar="DOMAIN",
                   help="labeled files, one domain each (at least 2; 3 or more give a "
                        "meaningful comparison)")
    p.add_argument("--label-column", default="-1", metavar="COLUMN",
                   help="label column: a header name or an index (default -1, the last)")
    p.add_argument("--domain-column", default=None, metavar="COLUMN",
                   help="a column naming each row's domain (one file may then hold several "
                        "domains; a --predict file with it gives one new domain per value)")
    p.add_argument("--header", choices=tuple(_HEADER), default="auto",
                   help="is the first line of each text file a header? auto (default) decides "
                        "from its cells")
    p.add_argument("--task", choices=("auto", "classification", "regression"), default="auto",
                   help="auto (default): regression when the label column holds numbers that "
                        "are not all whole, else classification")
    p.add_argument("--select", choices=("lodo", "cluster"), default="lodo",
                   help="lodo (default): hold out each domain file in turn as an unseen "
                        "domain; cluster: one clustering-based validation split (the 20%% of "
                        "each domain's rows most shifted from the rest)")
    p.add_argument("--by", choices=("mean", "worst"), default="mean",
                   help="rank the candidates by their mean over the held-out domains "
                        "(default) or by their worst domain")
    p.add_argument("--candidates", default="all", metavar="LIST",
                   help="comma-separated subset of plain, pooling, SCA, marginal (default all)")
    p.add_argument("--estimator", default="svm", metavar="NAME|FILE",
                   help="the model of the plain and SCA candidates: svm (default, an RBF SVM, "
                        "the marginal-transfer paper's family; SVR for regression), 1nn, "
                        "logreg (classification), ridge, rf, hgb, or the path of an unfitted "
                        "scikit-learn model saved with skops; pooling and marginal transfer "
                        "are kernel SVMs")
    p.add_argument("--predict", nargs="+", default=[], metavar="FILE",
                   help="new domain files to predict with the chosen model, each one new "
                        "domain (the label column, if present, is only used to print a score)")
    p.add_argument("--out", metavar="FILE",
                   help="write the predictions of --predict here (CSV: file,row,prediction)")
    p.add_argument("--report", metavar="FILE",
                   help="write the report here: .html (one page with figures) or .md, each with "
                        "the JSON beside it, or .json")
    p.add_argument("--json", action="store_true",
                   help="print the report as JSON on stdout instead of the table")
    p.add_argument("--save", metavar="FILE",
                   help="save the chosen model, refitted on every domain (skops; predict new "
                        "files later with: shiftlearn predict FILE new.csv, each file one new "
                        "domain)")
    return p


# ------------------------------------------------------------------------------ options ------
def _candidates(text: str) -> list[str]:
    from ..model_selection import GENERALIZATION_CANDIDATES

    if text == "all":
        return list(GENERALIZATION_CANDIDATES)
    lower = {c.lower(): c for c in GENERALIZATION_CANDIDATES}
    names = [t.strip() for t in text.split(",") if t.strip()]
    bad = [n for n in names if n.lower() not in lower]
    if bad or not names:
        raise ValueError(f"--candidates {text!r}: unknown {bad or '(none given)'}; give a "
                         f"comma-separated list of {', '.join(GENERALIZATION_CANDIDATES)}, or "
                         "all.")
    return list(dict.fromkeys(lower[n.lower()] for n in names))


def _estimator(name: str, task: str, seed: int):
    """The unfitted scikit-learn model of ``--estimator`` for ``task``."""
    from ..workflow import ESTIMATORS, make_estimator

    if task == "classification":
        return make_estimator(name, seed)
    if name in REGRESSORS:
        import sklearn.ensemble
        import sklearn.linear_model
        import sklearn.neighbors
        import sklearn.svm

        cls = next(getattr(m, REGRESSORS[name]) for m in (
            sklearn.svm, sklearn.linear_model, sklearn.neighbors, sklearn.ensemble)
            if hasattr(m, REGRESSORS[name]))
        kw = {"random_state": seed} if "random_state" in cls().get_params() else {}
        return cls(n_neighbors=1) if name == "1nn" else cls(**kw)
    if name in ESTIMATORS or not (Path(name).exists() or name.endswith(".skops")):
        raise ValueError(f"--estimator {name}: no model of that name for a regression target; "
                         f"choose one of {', '.join(REGRESSORS)}, or give the path of an "
                         "unfitted scikit-learn regressor saved with skops.")
    from sklearn.base import clone, is_regressor

    from ..workflow import load_estimator

    est = load_estimator(name)
    if not is_regressor(est):
        raise ValueError(f"--estimator {name}: holds a {type(est).__name__}, which is not a "
                         "regressor, and the label column is a regression target; save a "
                         "regressor, or add --task classification.")
    return clone(est)


def _outputs(args):
    inputs = (*args.domains, *args.predict)
    if args.out and not args.predict:
        raise ValueError("--out writes the predictions of --predict; name the new domain "
                         "file(s) to predict, e.g. --predict new_site.csv --out "
                         f"{args.out}.")
    if args.predict and not args.out:
        raise ValueError("--predict needs --out FILE, where the predictions go (CSV: "
                         "file,row,prediction).")
    return check_outputs(inputs, args.out, args.save, args.report)


def _check_files(args) -> None:
    if len(args.domains) < 2 and args.domain_column is None:
        raise ValueError(f"generalize learns from several domains and got 1 file "
                         f"({args.domains[0]}); give at least 2 labeled files, one domain each, "
                         "or name the column that tells the domains apart with --domain-column "
                         "(to adapt to one unlabeled target file instead, use shiftlearn "
                         "adapt).")
    seen: dict[Path, str] = {}
    for f in [*args.domains, *args.predict]:
        key = Path(f).resolve()
        if key in seen:
            raise ValueError(f"{f} is named twice (also as {seen[key]}); give each domain "
                             "once.")
        seen[key] = f


# ------------------------------------------------------------------------------ reading ------
def _label_index(t, spec: str) -> int | None:
    """The column of ``spec`` among the columns of a table read without labels."""
    names = t.feature_names or []
    if spec in names:
        return names.index(spec)
    try:
        i = int(spec)
    except ValueError:
        return None
    n = t.X.shape[1]
    return i % n if -n <= i < n else None


def _numeric(path, args, header, domain_column=None):
    """``path`` with the label column read as numbers (a regression target)."""
    from ..io import Table, TableError, read_table

    try:
        t = read_table(path, with_labels=False, header=header, domain_column=domain_column)
    except TableError:
        try:        # text labels: say so rather than call the label column a bad feature
            lab = read_table(path, label_column=args.label_column, header=header,
                             domain_column=domain_column)
        except TableError:
            lab = None
        if lab is not None and lab.y.dtype.kind in "USO":
            raise ValueError(f"{path}: the label column {lab.label_name or args.label_column!r}"
                             f" holds text ({_value(lab.y[0])!r}, ...), but --task regression "
                             "needs numbers; drop --task regression or give a numeric "
                             "column.") from None
        raise
    j = _label_index(t, args.label_column)
    if j is None:
        raise ValueError(f"{path}: no label column {args.label_column!r} among its "
                         f"{t.X.shape[1]} columns; name it with --label-column.")
    keep = [k for k in range(t.X.shape[1]) if k != j]
    names = t.feature_names
    return Table(t.path, t.X[:, keep], t.X[:, j].astype(np.float64),
                 [names[k] for k in keep] if names else None, names[j] if names else None,
                 t.domains, t.notes)


def _is_regression(path, args, header) -> bool:
    """Does the label column of ``path`` hold numbers that are not all whole?"""
    from ..io import TableError
    from ..model_selection import infer_task

    try:
        t = _numeric(path, args, header, args.domain_column)
    except (TableError, ValueError):     # text labels (or a bad file: read again below)
        return False
    return infer_task(t.y) == "regression"


def _load(args):
    """The domain tables (one per domain: a file, or a value of ``--domain-column``) and their
    names, the predict tables (labels kept where the file has the label column, for a score),
    the task, the classes (None for regression) and ``X``, ``y``, domain ids."""
    from ..io import encode_labels, read_table

    header = _HEADER[args.header]
    col = args.domain_column
    task = args.task
    if task == "auto":
        task = "regression" if any(_is_regression(p, args, header) for p in args.domains) \
            else "classification"
    if task == "regression":
        files = [_numeric(p, args, header, col) for p in args.domains]
    else:
        files = [read_table(p, label_column=args.label_column, header=header,
                            domain_column=col) for p in args.domains]
    news = [_read_new(p, args, header, files[0], task) for p in args.predict]
    for t in [*files, *news]:
        for note in t.notes:
            info(args, f"note: {note}")
    notes = match_columns(files[0], files[1:]) + match_columns(files[0], news)
    for note in notes:
        info(args, f"note: {note}")
    classes = None
    if task == "classification":
        classes, codes = encode_labels(files)
        classes = np.asarray(classes)
        for t, c in zip(files, codes, strict=True):
            t.y = c.astype(np.int64)
        if np.unique(np.concatenate([t.y for t in files])).size < 2:
            raise ValueError(f"The domain files have a single class ({_value(classes[0])!r}); "
                             "classification needs at least two (for a numeric target, add "
                             "--task regression).")
        for t in news:
            if t.y is not None:
                t.y = _codes(t.y, classes)
    tabs, names = _split_domains(files, args)
    X = np.vstack([t.X for t in tabs])
    y = np.concatenate([t.y for t in tabs])
    sd = np.concatenate([np.full(len(t.X), i + 1) for i, t in enumerate(tabs)])
    small = [n for n, t in zip(names, tabs, strict=True) if len(t.X) < 2]
    if small:
        raise ValueError(f"{', '.join(small)}: 1 row; every domain needs at least 2 rows "
                         "(marginal transfer describes a domain by its rows).")
    return tabs, names, news, task, classes, X, y, sd, notes


def _split_domains(files, args):
    """One table per domain, and its display name: each file (named after it), or each value
    of ``--domain-column`` (named by the value; by file and value when several files have
    it)."""
    from ..io import Table

    if args.domain_column is None:
        return files, _names(args.domains)
    tabs, names = [], []
    stems = _names(args.domains)
    for t, stem in zip(files, stems, strict=True):
        values = list(dict.fromkeys(t.domains.tolist()))
        for v in values:
            rows = t.domains == v
            tabs.append(Table(t.path, t.X[rows], t.y[rows], t.feature_names, t.label_name,
                              None, t.notes if v == values[0] else []))
            names.append(str(v) if len(files) == 1 else f"{stem}:{v}")
    if len(tabs) < 2:
        raise ValueError(f"--domain-column {args.domain_column}: one domain "
                         f"({names[0]!r}) in {', '.join(args.domains)}; generalize learns "
                         "from several domains: give files with two or more domains.")
    return tabs, names


def _read_new(path, args, header, ref, task):
    """A new domain file: features only, or features and the label column when the file has
    the training files' label column by name (its labels then only give a score). With
    ``--domain-column``, a file that has that column gives one new domain per value
    (``Table.domains``)."""
    from ..io import TableError, read_table

    name = ref.label_name
    for col in dict.fromkeys([args.domain_column, None]):
        if name:
            try:
                return (_numeric(path, argparse.Namespace(label_column=name), header, col)
                        if task == "regression" else
                        read_table(path, label_column=name, header=header,
                                   allow_missing_labels=True, domain_column=col))
            except (TableError, ValueError):     # no such column: features only
                pass
        try:
            t = read_table(path, with_labels=False, header=header, domain_column=col)
        except TableError:
            if col is None:
                raise
            continue
        t.y = None
        if name is None and t.X.shape[1] == ref.X.shape[1] + 1:
            # no header names: one column more than the training files is their label column
            try:
                lab = (_numeric(path, args, header, col) if task == "regression" else
                       read_table(path, label_column=args.label_column, header=header,
                                  allow_missing_labels=True, domain_column=col))
            except (TableError, ValueError):
                return t
            lab.notes.append(f"{path}: one column more than the training files, read as "
                             "their label column (only used for a score).")
            return lab
        return t
    raise AssertionError("unreachable")     # the last pass reads or raises


def _codes(y, classes) -> np.ndarray:
    """Labels of a new file as codes of ``classes`` (-1: missing or a class not trained)."""
    from ..io import encode_labels

    all_classes, (codes,) = encode_labels([y], what="labels of a --predict file")
    lookup = {_value(c): i for i, c in enumerate(classes)}
    out = np.array([-1 if c < 0 else lookup.get(_value(all_classes[c]), -1) for c in codes])
    return out


def _value(c):
    return c.item() if isinstance(c, np.generic) else c


def _names(paths) -> list[str]:
    stems = [Path(p).name.split(".")[0] for p in paths]
    if len(set(stems)) < len(stems):
        stems = [f"{i + 1}: {s}" for i, s in enumerate(stems)]
    return stems


# ---------------------------------------------------------------------------------- run ------
def run(args: argparse.Namespace) -> int:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        return _run(args, caught)


def _run(args: argparse.Namespace, caught: list) -> int:
    from .. import __version__
    from ..model_selection import GeneralizationSelector

    command = "shiftlearn " + shlex.join(sys.argv[1:] if args._argv is None else args._argv)
    out, paths, note, save = _outputs(args)
    if save is not None:
        from ..workflow import skops_io

        skops_io()          # the persist extra, before any work
    _check_files(args)
    methods = _candidates(args.candidates)
    t_start = time.perf_counter()
    tabs, names, news, task, classes, X, y, sd, match_notes = _load(args)
    K, d = len(tabs), X.shape[1]
    what = (f"{np.unique(y).size} classes" if task == "classification" else
            f"regression on {tabs[0].label_name or 'the label column'}")
    info(args, f"shiftlearn generalize: {K} domains, {len(y)} labeled rows, {d} features, "
               f"{what}; comparing {', '.join(methods)} by {args.select}")
    if args.task == "auto" and task == "regression":
        col = repr(tabs[0].label_name) if tabs[0].label_name else "the label column"
        info(args, f"note: {col} holds numbers that are not all whole, so this is a "
                   "regression task (errors in its units); if it is not the label, name the "
                   "right one with --label-column, or add --task classification.")
    if K == 2 and args.select == "lodo":
        info(args, "note: with 2 domains each fold trains on one domain, so the domain-aware "
                   "candidates see no variation between domains; 3 or more files make the "
                   "comparison meaningful.")
    est = _estimator(args.estimator, task, args.seed)
    sel = GeneralizationSelector(est, task=task, candidates=methods, select=args.select,
                                 aggregate=args.by, random_state=args.seed)
    t0 = time.perf_counter()
    sel.fit(X, y, sd)
    t_fit = time.perf_counter() - t0
    held = {int(i) for ids in sel.held_out_ for i in ids}
    domains = [{"name": names[i], "file": str(t.path), "rows": len(t.X),
                "held_out": (i + 1) in held}
               | ({"classes": int(np.unique(y[sd == i + 1]).size)}
                  if task == "classification" else
                  {"label_mean": float(np.mean(t.y)), "label_std": float(np.std(t.y))})
               for i, t in enumerate(tabs)]
    cands = [{"method": r["method"], "what": CANDIDATE_WORDS[r["method"]],
              "mean": _finite(r["mean"]), "worst": _finite(r["worst"]),
              "worst_domain": None if r["worst_domain"] is None
              else names[int(r["worst_domain"]) - 1],
              "per_domain": [_finite(v) for v in sel.scores_[r["method"]]],
              "seconds": r["seconds"], "chosen": r["chosen"], "failed": r["failed"]}
             for r in sel.summary_]
    rep = {"command": command, "date_utc": time.strftime("%Y-%m-%d %H:%M", time.gmtime()),
           "version": __version__, "task": task, "metric": sel.metric_,
           "estimator": args.estimator, "estimator_model": type(est).__name__,
           "select": args.select, "by": args.by, "seed": args.seed, "n_features": d,
           "label_column": args.label_column, "label_name": tabs[0].label_name,
           "domains": domains, "candidates": cands, "choice": sel.choice_,
           "classes": None if classes is None else [str(_value(c)) for c in classes],
           "notes": [n for t in [*tabs, *news] for n in t.notes] + match_notes}
    info(args, decision(rep | {"predictions": []}))
    t0 = time.perf_counter()
    rep["predictions"] = _predict(args, sel, news, classes, task, out)
    rep["seconds"] = {"fit": t_fit, "predict": time.perf_counter() - t0,
                      "total": time.perf_counter() - t_start}
    rep["warnings"] = warning_lines(caught)
    if save is not None:
        _save(args, save, sel, tabs, names, classes, task, command)
    for r in cands:
        if r["failed"]:
            info(args, f"note: {r['method']} could not be validated on every held-out domain: "
                       f"{r['failed'][:160]}")
    for p in rep["predictions"]:
        if p.get("score") is not None:
            info(args, f"{p['file']}: the file has labels (used for this line only): "
                       f"{'accuracy' if task == 'classification' else 'RMSE'} "
                       f"{_fmt(p['score'], rep['metric'])} over "
                       f"{p['scored_rows']} rows")
    if args.json:
        print(json.dumps(rep, indent=2, allow_nan=False))
    else:
        headers, body = _table_rows(rep)
        print_table(headers, body, title=f"{_metric_words(rep)} of each held-out domain; "
                                         "* the choice")
    if paths:
        pictures = figures(rep) if "html" in paths else {}
        written = write_report(rep, paths, pictures)
        info(args, "wrote " + " and ".join(str(p) for p in written))
    if note:
        info(args, f"note: {note}")
    return 0


def _save(args, save, sel, tabs, names, classes, task, command) -> None:
    """``--save``: the chosen model refitted on every domain, with the header ``shiftlearn
    predict`` checks (columns, classes or the regression task, version, command). There is no
    target domain, so no reference sample: predict's shift check is skipped for these files
    (every new domain is expected to differ)."""
    from .. import __version__
    from ..workflow import save_model

    d = tabs[0].X.shape[1]
    header = {"version": __version__, "command": command,
              "created_utc": time.strftime("%Y-%m-%d %H:%M", time.gmtime()),
              "feature_names": list(tabs[0].feature_names) if tabs[0].feature_names else None,
              "n_features": int(d), "task": task,
              "classes": None if classes is None else [_value(c) for c in classes],
              "label_name": tabs[0].label_name, "estimator": args.estimator,
              "method": f"generalize: {sel.choice_}", "confidence": False, "seed": args.seed,
              "reference_rows": 0, "target_file": None, "domains": names}
    save_model(save, header, {"model": sel.best_estimator_, "reference": np.empty((0, d))})
    info(args, f"saved the model to {save} (shiftlearn predict {save} FILE: each file one new "
               "domain)")


def _finite(v) -> float | None:
    return float(v) if v is not None and np.isfinite(v) else None


def _predict(args, sel, news, classes, task, out) -> list[dict]:
    """Predict each new file as one new domain; write ``--out``; a score where the file has
    labels."""
    if not news:
        return []
    res, rows = [], []
    for t, path in zip(news, args.predict, strict=True):
        if len(t.X) < 10 and sel.choice_ == "marginal":
            info(args, f"note: {path} has {len(t.X)} rows; marginal transfer describes a new "
                       "domain by its rows, so fewer than 10 give a rough description.")
        pred = np.asarray(sel.predict(t.X, t.domains))
        shown = [_value(classes[int(c)]) for c in pred] if task == "classification" else \
            [float(v) for v in pred]
        rows += [(path, i + 1, v) for i, v in enumerate(shown)]
        entry = {"file": path, "rows": len(t.X), "score": None, "scored_rows": 0}
        if t.y is not None:
            if task == "classification":
                known = np.asarray(t.y) >= 0
                if known.any():
                    entry["score"] = float(np.mean(pred[known] == np.asarray(t.y)[known]))
                    entry["scored_rows"] = int(known.sum())
            else:
                entry["score"] = float(np.sqrt(np.mean((np.asarray(t.y, float) - pred) ** 2)))
                entry["scored_rows"] = len(t.y)
        if task == "classification":
            counts = np.bincount(pred.astype(int), minlength=len(classes))
            entry["class_mix"] = {str(_value(c)): float(n / len(pred))
                                  for c, n in zip(classes, counts, strict=True)}
        else:
            entry["prediction_mean"] = float(np.mean(pred))
        res.append(entry)
    with open(out, "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(["file", "row", "prediction"])
        for path, i, v in rows:
            w.writerow([path, i, f"{v:.6g}" if isinstance(v, float) else v])
    info(args, f"wrote {len(rows)} predictions of {len(news)} file(s) to {out}")
    return res
