"""``shiftlearn adapt``: domain adaptation on your own files, with a report.

Labeled source file(s) and one unlabeled target file in; the target's predicted labels and a
report out: the data, how far the domains are apart before and after adaptation (MMD
permutation tests, Holm-corrected), which method was chosen and why (``--method auto``, the
default: no adaptation and every adapter compared by a target-label-free criterion,
``--select``), its hyper-parameters (``--tune``: searched on the default grids), the predicted
class mix against the source's, and, if the target file happens to carry labels, the accuracy
of the adapted and of the raw model (for evaluation only: nothing is chosen with them).
``--report x.html`` is one self-contained page with figures (heat-maps and 2-D pictures of the
domains before and after, the candidates' validation estimates, the class mix).

Contract: every output path is checked before any file is read; ``--method auto`` compares no
adaptation (which wins ties) with the adapters sized to the data by the ``--select`` criterion
(default :data:`DEFAULT_SELECT`); target labels, when the file carries them, are only used to
print an accuracy. Exit status 0 on success, 2 on a usage or input error, with a message that
names the problem. Options: ``docs/cli.md``; design notes: ``docs/dev/cli.md``.
"""

from __future__ import annotations

import argparse
import csv
import json
import shlex
import sys
import time
import warnings

import numpy as np

from ..workflow import (
    DEFAULT_REGRESSION_SELECT,
    DEFAULT_SELECT,
    ESTIMATORS,
    FEW_ONLY,
    MAX_ROWS,
    METHODS,
    REGRESSION_SELECT,
    SCORERS,
    SELECT,
    candidate_methods,
    check_options,
    default_select,
    make_estimator,
)
from ._common import check_outputs, count, emit_report, info, match_columns

__all__ = ["CLASSIFIERS", "DEFAULT_SELECT", "ESTIMATORS", "METHODS", "SCORERS", "SELECT",
           "add_parser", "default_select", "make_estimator", "parse_params", "run"]

#: the former name of ``--estimator``'s choices, kept as an alias
CLASSIFIERS = ESTIMATORS
_candidates = candidate_methods


def add_parser(subparsers, parents) -> argparse.ArgumentParser:
    p = subparsers.add_parser(
        "adapt", parents=parents,
        help="adapt your labeled source file(s) to an unlabeled target file; predictions "
             "and a report",
        description="Fit a domain adapter on your labeled source file(s) and unlabeled target "
                    "file, predict the target's labels, and report how far the domains are "
                    "apart before and after adaptation. Files: CSV/TSV/semicolon/whitespace "
                    "text with an optional header (also .gz/.bz2/.xz/.zip compressed; UTF-8, "
                    "UTF-16 or Windows encodings), Parquet, or .npy/.npz (arrays X, y).",
        epilog="Example: shiftlearn adapt a.csv b.csv --target c.csv --label-column label "
               "--tune --out predictions.csv --report report.html")
    p.add_argument("sources", nargs="+", metavar="SOURCE", help="labeled source file(s), one "
                   "domain each")
    p.add_argument("--target", required=True, help="the unlabeled target file")
    p.add_argument("--label-column", default="-1", metavar="COLUMN",
                   help="label column: a header name or an index (default -1, the last)")
    p.add_argument("--task", choices=("auto", "classification", "regression"), default="auto",
                   help="auto (default): a label column of numbers that are not all whole is "
                        "a regression target (errors in its units), anything else classes; "
                        "regression reads whole numbers as values too")
    p.add_argument("--header", choices=tuple(_HEADER), default="auto",
                   help="is the first line of each text file a header? auto (default) decides "
                        "from its cells; a note says when it had to guess")
    p.add_argument("--target-has-labels", action="store_true",
                   help="the target file has the label column too (only used to print the "
                        "accuracy, never to choose anything)")
    p.add_argument("--method", choices=(*METHODS, *FEW_ONLY), default="auto",
                   help="auto (default): choose among no adaptation and every adapter by "
                        "--select; or one adapter; or raw for none. When the target file's "
                        "label column is filled for a few rows, those rows choose (auto) "
                        "among the few-label methods by cross-validation, or train the one "
                        "named: " + ", ".join(FEW_ONLY) + ", or an adapter (then a classifier "
                        "on the source and labeled target rows)")
    p.add_argument("--select", choices=(*SELECT, *REGRESSION_SELECT), default=None,
                   help="criterion of --method auto: source-cv (5-fold CV on the source "
                        "labels), cluster (the most shifted validation split), lodo "
                        "(leave one source file out), or a target-label-free scorer: "
                        + ", ".join(SCORERS) + "; default: "
                        + ", ".join(f"{s} with --estimator {c}"
                                    for c, s in DEFAULT_SELECT.items())
                        + " (the selection study's best); mmd with the other estimators that "
                          "give graded probabilities (hgb, rf), circular with those that do "
                          "not (svm, ridge); for a regression target: source-cv, lodo, "
                        + ", ".join(REGRESSION_SELECT) + " (default "
                        + DEFAULT_REGRESSION_SELECT + ")")
    p.add_argument("--margin", type=_margin, default=None, metavar="se|NUMBER",
                   help="--method auto adapts only when the best adapter's validation estimate "
                        "beats no adaptation's by more than this: se (the adapter's standard "
                        "error over the folds; the default for class labels without labeled "
                        "target rows) or a number (0: the best estimate wins; the default for "
                        "a regression target and with labeled target rows)")
    p.add_argument("--estimator", "--classifier", dest="estimator", default=None,
                   metavar="NAME|FILE",
                   help="the classifier trained on the adapted source rows: 1nn (default, the "
                        "papers' choice), logreg (standardised logistic regression), svm "
                        "(standardised RBF SVM), hgb (histogram gradient boosting), rf (random "
                        "forest, seeded by --seed), ridge (standardised ridge classifier), or "
                        "the path of an unfitted scikit-learn classifier saved with skops; "
                        "--classifier is an alias. For a regression target: ridge (default, "
                        "standardised ridge regression), svm (SVR), hgb, rf, 1nn, or a saved "
                        "regressor")
    p.add_argument("--candidates", default="sized", metavar="LIST",
                   help="adapters --method auto compares with no adaptation: a comma-separated "
                        "list (e.g. TCA,SCA), all, or sized (default: TCA, JDA, SCA, uSCA up "
                        "to 2000 rows, RF-TCA, RF-SCA above; CORAL always: "
                        "shiftlearn.model_selection.default_methods; for a regression "
                        "target TCA, uSCA, CORAL, uLSIF, GaussianRW, RF-TCA above 2000 rows: "
                        "default_regression_methods)")
    p.add_argument("--tune", action="store_true",
                   help="search the hyper-parameters (grids: shiftlearn.model_selection."
                        "DEFAULT_GRIDS) by --select with auto, by 5-fold source CV with a named "
                        "method")
    p.add_argument("--search", choices=("grid", "halving"), default="grid",
                   help="how --method auto searches: every candidate on every row (grid, "
                        "default), or successive halving (the best third of the candidates "
                        "go on to three times the rows; the winner and no adaptation are then "
                        "scored on every row)")
    p.add_argument("--n-jobs", type=_n_jobs, default=-1, metavar="N",
                   help="threads for the candidates' fits and scorings of --method auto and "
                        "--tune (default -1: every core); the choice does not depend on it")
    p.add_argument("--param", action="append", default=[], metavar="NAME=VALUE",
                   help="set an adapter hyper-parameter (repeatable), e.g. n_components=20")
    p.add_argument("--permutations", type=count(0), default=200, metavar="N",
                   help="permutations of each MMD test in the report (default 200; 0 skips "
                        "the tests)")
    p.add_argument("--out", metavar="FILE",
                   help="write the target predictions here (CSV: row,prediction, and "
                        "confidence with an --estimator that gives graded probabilities: logreg, "
                        "hgb, rf)")
    p.add_argument("--report", metavar="FILE",
                   help="write the report here: .html (one page with figures) or .md "
                        "(Markdown), each with the JSON beside it, or .json (JSON only); "
                        "default: Markdown on stdout")
    p.add_argument("--save", metavar="FILE",
                   help="save the fitted model here (skops format, e.g. model.skops) for "
                        "shiftlearn predict; needs shiftlearn[persist]")
    return p


# ------------------------------------------------------------------------------ reading ------
_HEADER = {"auto": None, "yes": True, "no": False}


def _cli_note(note: str) -> str:
    """A reader's note in the command line's words (``header=False`` -> ``--header no``)."""
    return note.replace("header=False", "--header no").replace("header=True", "--header yes")


def _load(args):
    """Read and check every file; return the sources, the target, the classes, the source
    codes, the target codes (None without labels; -1 where a target label is missing) and the
    packed ``X``, ``y``, ``sample_domain``."""
    from ..io import encode_labels, read_table

    header = _HEADER[args.header]
    srcs = [read_table(p, label_column=args.label_column, header=header) for p in args.sources]
    tgt = _read_target(args, srcs, header)
    for t in [*srcs, tgt]:
        for note in t.notes:
            info(args, f"note: {_cli_note(note)}")
    # without names, one column more than the sources is most likely the labels (with names,
    # _read_target has recognised the sources' label column already)
    flag = (" If the target file has a label column, add --target-has-labels."
            if not args.target_has_labels and not (tgt.feature_names and srcs[0].feature_names)
            else "")
    notes = match_columns(srcs[0], srcs[1:]) + match_columns(srcs[0], [tgt], hint=flag)
    for note in notes:
        info(args, f"note: {note}")
        tgt.notes.append(note)
    Xs = np.vstack([t.X for t in srcs])
    if len(Xs) > 1 and not np.ptp(Xs, axis=0).any():
        raise ValueError(f"every feature column is constant over the {len(Xs)} source rows "
                         "(they are all the same point), so no classifier can tell the "
                         "classes apart; check the files and --label-column.")
    classes, codes_list = encode_labels([*srcs, tgt] if tgt.y is not None else srcs)
    codes = np.concatenate(codes_list[:len(srcs)]).astype(np.int64)
    tgt_codes = codes_list[-1].astype(np.int64) if tgt.y is not None else None
    if np.unique(codes).size < 2:
        one = _plain_value(classes[codes[0]])
        raise ValueError(f"The source rows have a single class ({one!r}); adaptation for "
                         "classification needs at least two.")
    K = len(srcs)
    X = np.vstack([t.X for t in srcs] + [tgt.X])
    y = np.r_[codes, -np.ones(len(tgt.X), dtype=np.int64)]
    sd = np.r_[np.concatenate([np.full(len(t.X), i + 1) for i, t in enumerate(srcs)]),
               np.full(len(tgt.X), -(K + 1))]
    return srcs, tgt, np.asarray(classes), codes, tgt_codes, X, y, sd


def _read_target(args, srcs, header):
    """The target file. Without ``--target-has-labels`` a label column the sources have
    (by name, or one extra last column in headerless files) is recognised rather than read as
    a feature: an empty one is ignored with a note, a filled one is an error naming the flag."""
    from ..io import TableError, read_table

    if args.target_has_labels:
        return read_table(args.target, label_column=args.label_column, with_labels=True,
                          header=header, allow_missing_labels=True)
    try:
        tgt, err = read_table(args.target, with_labels=False, header=header), None
    except TableError as exc:
        tgt, err = None, exc
    d, name = srcs[0].X.shape[1], srcs[0].label_name
    if err is None and tgt.X.shape[1] != d + 1 and not (
            name is not None and tgt.feature_names and name in tgt.feature_names):
        return tgt
    try:
        lab = read_table(args.target, label_column=name if name is not None
                         else args.label_column, header=header, allow_missing_labels=True)
    except TableError:
        lab = None
    if lab is None or lab.X.shape[1] != d:
        if err is not None:
            raise err
        return tgt
    given = sum(v is not None for v in lab.y.tolist())
    col = repr(lab.label_name) if lab.label_name else "the last column"
    if given == 0:
        lab.notes.append(f"{lab.path}: the label column {col} is empty on every row; "
                         "ignored.")
        lab.y = None
        return lab
    if given == len(lab.y):
        raise ValueError(f"{lab.path}: the target file has the label column {col}, filled on "
                         "every row; add --target-has-labels (its labels are then only used "
                         "to print the accuracy) or remove that column.")
    return _few_labels_target(lab, given, col)


def _few_labels_target(lab, given: int, col: str):
    """A target file whose label column is filled on some rows: those are labeled target
    rows, used to choose and train (the few-label run)."""
    lab.few_labels = True
    lab.notes.append(f"{lab.path}: the label column {col} is filled on {given} of "
                     f"{len(lab.y)} rows: those are labeled target rows, used to choose and "
                     "train the method; the other rows are predicted (add --target-has-labels "
                     "to use them only to print an accuracy instead).")
    return lab


def _check_sizes(args, srcs, tgt) -> None:
    if len(tgt.X) == 0:
        raise ValueError(f"{tgt.path}: the target file has no data rows; nothing to predict.")
    if len(tgt.X) < 2 and args.method != "raw":
        who = ("--method auto compares adapters, which learn" if args.method == "auto" else
               f"{args.method} learns")
        raise ValueError(f"{tgt.path}: the target file has 1 row, and {who} the target's "
                         "distribution from at least 2; give more target rows or use --method "
                         "raw --permutations 0.")
    if args.permutations:
        small = [t.path for t in [*srcs, tgt] if len(t.X) < 2]
        if small:
            raise ValueError(f"{', '.join(small)}: 1 row, and the MMD test of the report needs "
                             "at least 2 per domain; give more rows or --permutations 0.")


# ------------------------------------------------------------------------------ fitting ------
def parse_params(items: list[str]) -> dict:
    """``["n_components=20", "kernel=linear"]`` -> ``{"n_components": 20, "kernel": "linear"}``
    (values read as JSON, Python's ``None``/``True``/``False`` as such, else kept as text:
    ``shrinkage=None`` is ``None``, as the parameter errors write it)."""
    # exactly Python's spellings: lower-case "none" is a real option value
    # (SCA(class_scatter_normalization="none"))
    python = {"None": None, "True": True, "False": False}
    out = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise ValueError(f"--param {item!r}: write name=value, e.g. n_components=20.")
        try:
            out[key] = json.loads(value)
        except json.JSONDecodeError:
            # a Python constant, or a bare string, e.g. kernel=linear
            out[key] = python.get(value, value)
    return out


def _margin(text: str):
    """``--margin``: ``se`` or a number >= 0."""
    if text == "se":
        return text
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not value >= 0:
        raise argparse.ArgumentTypeError(f"expected se or a number >= 0, got {text!r}")
    return value


def _n_jobs(text: str) -> int:
    """``--n-jobs``: a number of workers >= 1, or -1 for every core (joblib's convention)."""
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1 and value != -1:
        raise argparse.ArgumentTypeError(f"expected a number >= 1 or -1 (every core), got "
                                         f"{text!r}")
    return value


def _check_options(args) -> None:
    """Refuse inconsistent options before any file is read."""
    args.params = parse_params(args.param)
    few = {c.strip() for c in str(args.candidates).split(",")} & set(FEW_ONLY)
    if args.method in FEW_ONLY or few:      # checked once the target's labels are read
        return
    check_options(args, len(args.sources))


def _names(srcs, tgt) -> list[str]:
    """Display names of the domains: file names without extensions, made unique."""
    from pathlib import Path

    stems = [Path(t.path).name.split(".")[0] for t in [*srcs, tgt]]
    if len(set(stems)) < len(stems):
        stems = [f"{i + 1}: {s}" for i, s in enumerate(stems)]
    last = stems[-1] if "target" in stems[-1].lower() else f"{stems[-1]} (target)"
    return [*stems[:-1], last]




# ---------------------------------------------------------------------------------- run ------
def _outputs(args):
    return check_outputs((*args.sources, args.target), args.out, args.save, args.report)


def _save_model(args, save, model, srcs, tgt, classes, command, method, conf) -> None:
    """``--save``: the fitted model, its columns, classes and command, and a seeded sample of
    at most :data:`MAX_ROWS` target rows (the reference of ``predict``'s shift check)."""
    from .. import __version__
    from ..workflow import save_model
    from ._common import subsample

    rng = np.random.default_rng(args.seed)
    reference = subsample(np.asarray(tgt.X, dtype=float), MAX_ROWS, rng)
    header = {"version": __version__, "command": command,
              "created_utc": time.strftime("%Y-%m-%d %H:%M", time.gmtime()),
              "feature_names": list(srcs[0].feature_names) if srcs[0].feature_names else None,
              "n_features": int(tgt.X.shape[1]), "classes": [_plain_value(c) for c in classes],
              "label_name": srcs[0].label_name, "estimator": args._estimator_name,
              "method": method, "confidence": conf is not None, "seed": args.seed,
              "reference_rows": int(len(reference)), "target_file": str(tgt.path)}
    save_model(save, header, {"model": model, "reference": reference})
    info(args, f"saved the model to {save} (shiftlearn predict {save} FILE)")


def _write_predictions(out, classes, pred_codes, conf) -> None:
    with open(out, "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(["row", "prediction"] + (["confidence"] if conf is not None else []))
        for i, c in enumerate(pred_codes):
            w.writerow([i + 1, _plain_value(classes[c])] + ([f"{conf[i]:.4f}"] if conf is not None
                                                     else []))


def _selection_lines(sel: dict) -> list[str]:
    """What a person must know about the choice, one line each (stderr)."""
    def label(m):
        return "no adaptation" if m == "none" else m

    rows, crit = sel["candidates"], sel["criterion"]
    failed = [r for r in rows if r.get("failed")]
    if not sel["validated"]:
        return [f"no candidate could be validated by {crit} ({failed[0]['failed']}); "
                "the predictions are without adaptation, a default, not a measurement; the "
                "report lists every candidate's reason."]
    chosen = label(sel["choice"])
    coarse = (f"; folds of {max(sel['fold_rows'], 1)} labeled row(s): coarse estimates"
              if sel["fold_rows"] < 5 else "")
    if sel["ranked"]:
        out = [f"chose {chosen} ({crit}{coarse})"]
    elif sel["validated"] == 1:
        out = [f"chose {chosen}: the only candidate {crit} could validate, so nothing was "
               "compared"]
    else:
        score = next(r["score"] for r in rows if r["score"] is not None)
        out = [f"{crit} gives every candidate the same estimate ({score:.4f}), so it cannot "
               f"rank them; kept {chosen}"
               + (" (1-NN's probabilities are 0 or 1: try --select circular or --estimator "
                  "logreg)" if crit in ("entropy", "snd", "mano") and sel.get("classifier") == "1nn"
                  else "")]
    if failed:
        out.append(f"note: {len(failed)} of {len(rows)} candidates could not be validated ("
                   + ", ".join(label(r["method"]) for r in failed)
                   + f"; e.g. {failed[0]['failed'][:120]}); the report lists the reasons.")
    return out


def run(args: argparse.Namespace) -> int:
    # every warning (scikit-learn's, numpy's, an adapter's) goes to the report, not stderr
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        return _run(args, caught)


def _plain_value(c):
    """A class as JSON/CSV writes it (numpy scalars as Python ones)."""
    return c.item() if isinstance(c, np.generic) else c


def _regression_run(args) -> bool:
    """A regression target (``--task``, or auto: numbers with fractions)? For classes, the
    estimator's default is set and a regression criterion is refused here."""
    from ._adapt_regression import is_regression

    if is_regression(args):
        return True
    if args.estimator is None:
        args.estimator = "1nn"
    if args.select in REGRESSION_SELECT:
        raise ValueError(f"--select {args.select} scores regressors, and the label column "
                         "holds classes; choose one of " + ", ".join(SELECT) + " (or add "
                         "--task regression if the labels are values to predict).")
    return False


def _run(args: argparse.Namespace, caught: list) -> int:
    from ..workflow import run_adaptation

    command = "shiftlearn " + shlex.join(sys.argv[1:] if args._argv is None else args._argv)
    out, paths, note, save = _outputs(args)
    if _regression_run(args):
        from ._adapt_regression import run_regression_command

        return run_regression_command(args, caught, command, out, paths, note, save,
                                      parse_params=parse_params, domain_names=_names,
                                      cli_note=_cli_note)
    if save is not None:
        from ..workflow import skops_io

        skops_io()                         # a missing extra is said before any work
    _check_options(args)
    args._estimator = make_estimator(args.estimator, args.seed)
    args._estimator_name = (args.estimator if args.estimator in ESTIMATORS else
                            f"{type(args._estimator).__name__} ({args.estimator})")
    args._select_given = args.select is not None
    if args.select is None:
        args.select = (default_select(args.estimator, args._estimator) if args.method == "auto"
                       else "source-cv")
    t_start = time.perf_counter()
    srcs, tgt, classes, codes, tgt_codes, X, y, sd = _load(args)
    if getattr(tgt, "few_labels", False) or args.method in FEW_ONLY:
        return _run_few_labels(args, caught, command, (out, paths, note, save), srcs, tgt,
                               classes, codes, tgt_codes, X, y, sd, t_start)
    _check_sizes(args, srcs, tgt)
    K, d, n_src = len(srcs), X.shape[1], len(codes)
    how = {"auto": f" (chosen among no adaptation and every adapter by {args.select}"
                   + (", grids searched" if args.tune else "") + ")",
           "raw": ""}.get(args.method, " (tuned by 5-fold source CV)" if args.tune else "")
    info(args, f"shiftlearn adapt: {K} source file(s), {n_src} labeled rows, {len(tgt.X)} "
               f"target rows, {d} features, {np.unique(codes).size} classes; method "
               f"{args.method}{how}")

    def selected(selection):
        for line in _selection_lines(selection):
            info(args, line)

    def predicted(model, pred_codes, conf, method):
        if out is not None:
            _write_predictions(out, classes, pred_codes, conf)
            info(args, f"wrote {len(pred_codes)} predictions to {out}")
        if save is not None:
            _save_model(args, save, model, srcs, tgt, classes, command, method, conf)

    res = run_adaptation(args, X, y, sd, codes, classes, tgt_codes, names=_names(srcs, tgt),
                         files=[str(t.path) for t in [*srcs, tgt]],
                         label_column=args.label_column, label_name=srcs[0].label_name,
                         notes=[_cli_note(n) for t in [*srcs, tgt] for n in t.notes],
                         command=command, html="html" in paths, t_start=t_start,
                         on_selection=selected, on_predictions=predicted)
    return emit_report(args, res.report, caught, paths, note)


# ------------------------------------------------------------- few labeled target rows -----
def _given(args, *flags: str) -> bool:
    """Did the command line name one of ``flags`` (``--x`` or ``--x=value``)?"""
    tokens = sys.argv[1:] if args._argv is None else args._argv
    return any(t == f or t.startswith(f + "=") for t in tokens for f in flags)


def _check_few_labels(args, tgt, tgt_codes, codes, classes) -> None:
    """Refuse, in the command's words, what the few-label run cannot do."""
    if tgt_codes is None or not np.any(tgt_codes >= 0):
        raise ValueError(f"--method {args.method} learns from labeled target rows, and the "
                         f"target file {tgt.path} has none: fill its label column "
                         f"({args.label_column}) for the target rows you know (leave the others "
                         "empty), or choose a method for an unlabeled target (e.g. --method "
                         "auto or CORAL).")
    if getattr(args, "target_has_labels", False):
        raise ValueError("--target-has-labels reads the target labels only to print an "
                         f"accuracy, and --method {args.method} trains on them; drop one of "
                         "the two.")
    unseen = sorted(set(tgt_codes[tgt_codes >= 0].tolist()) - set(codes.tolist()))
    if unseen:
        names = ", ".join(repr(_plain_value(classes[c])) for c in unseen)
        raise ValueError(f"{tgt.path}: labeled target rows of class(es) {names}, which no "
                         "source row has: the methods that learn from the source could never "
                         "predict them. Add source rows of those classes, or leave those "
                         "target labels empty.")
    bad = [f for f, on in (("--select", args._select_given), ("--tune", args.tune),
                           ("--param", bool(args.param)),
                           ("--search halving", args.search == "halving")) if on]
    if bad:
        raise ValueError(f"{', '.join(bad)}: options of the choice without target labels; "
                         "with labeled target rows the methods are compared by "
                         "cross-validation over those rows, with their defaults. Drop "
                         f"{', '.join(bad)}, or leave the target labels empty.")
    if len(tgt.X) < 2:
        raise ValueError(f"{tgt.path}: 1 target row; give more target rows.")


def _write_few_predictions(out, classes, pred_codes, conf, rows) -> None:
    """The unlabeled target rows' predictions; ``row`` is the row's number in the target
    file (1 = its first data row), so the labeled rows are absent."""
    with open(out, "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(["row", "prediction"] + (["confidence"] if conf is not None else []))
        for i, c, r in zip(range(len(rows)), pred_codes, rows, strict=True):
            w.writerow([int(r) + 1, _plain_value(classes[c])]
                       + ([f"{conf[i]:.4f}"] if conf is not None else []))


def _few_label_lines(few: dict) -> list[str]:
    """What a person must know about the choice on the labeled target rows (stderr)."""
    def pct(e):
        se = f" ± {100 * e['se']:.1f}" if e.get("se") is not None else ""
        return f"{100 * e['accuracy']:.1f}%{se}"

    what = "chose" if few["chose"] else "fitted"
    choice = few["choice"]
    if few.get("one_label_default"):
        what, choice = "fitted the one-label default,", f"{choice},"
    out = [f"{what} {choice} on {few['labeled_target_rows']} labeled target rows "
           f"({few['split']}): estimated accuracy {pct(few['estimate'])}"
           + (f", nested {pct(few['nested'])}" if few.get("nested") else "")]
    failed = [r for r in few["candidates"] if r.get("failed")]
    if failed:
        out.append(f"note: {len(failed)} of {len(few['candidates'])} candidates could not be "
                   "validated (" + ", ".join(r["method"] for r in failed)
                   + f"; e.g. {failed[0]['failed'][:120]}); the report lists the reasons.")
    out.append("note: " + few["caveat"])
    return out


def _run_few_labels(args, caught, command, outputs, srcs, tgt, classes, codes, tgt_codes, X,
                    y, sd, t_start) -> int:
    """The run with labeled target rows: choose on them, predict the other target rows."""
    from ..workflow import run_few_labels

    out, paths, note, save = outputs
    _check_few_labels(args, tgt, tgt_codes, codes, classes)
    _check_sizes(args, srcs, tgt)
    if not _given(args, "--estimator", "--classifier"):
        # the few-label methods are regularised linear models by design (the study's setting)
        args._estimator, args._estimator_name = make_estimator("logreg", args.seed), "logreg"
    m = int(np.sum(tgt_codes >= 0))
    info(args, f"shiftlearn adapt: {len(srcs)} source file(s), {len(codes)} labeled rows, "
               f"{len(tgt.X)} target rows of which {m} labeled, {X.shape[1]} features; "
               f"method {args.method} on the labeled target rows, estimator "
               f"{args._estimator_name}")

    def chosen(few):
        for line in _few_label_lines(few):
            info(args, line)

    def predicted(model, pred_codes, conf, method, rows):
        if out is not None:
            _write_few_predictions(out, classes, pred_codes, conf, rows)
            info(args, f"wrote {len(pred_codes)} predictions (the unlabeled target rows) to "
                       f"{out}")
        if save is not None:
            _save_model(args, save, model, srcs, tgt, classes, command, method, conf)

    res = run_few_labels(args, X, y, sd, codes, classes, tgt_codes, names=_names(srcs, tgt),
                         files=[str(t.path) for t in [*srcs, tgt]],
                         label_column=args.label_column, label_name=srcs[0].label_name,
                         notes=[_cli_note(n) for t in [*srcs, tgt] for n in t.notes],
                         command=command, html="html" in paths, t_start=t_start,
                         on_choice=chosen, on_predictions=predicted)
    return emit_report(args, res.report, caught, paths, note)
