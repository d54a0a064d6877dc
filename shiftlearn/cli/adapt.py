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

from ._common import check_output, count, info, match_columns, report_paths, warning_lines

#: the reweighting adapters: their weights need an --estimator that takes sample_weight, so
#: ``--candidates all`` leaves them out (name them to compare them)
REWEIGHTING = ("KMM", "KLIEP", "uLSIF", "RuLSIF", "DiscriminatorRW", "NearestNeighborRW",
               "KDERW", "GaussianRW")
METHODS = ("auto", "raw", "TCA", "JDA", "SCA", "uSCA", "RF-TCA", "RF-SCA", "CORAL", "SA", "LinOT",
           "EMD", "Sinkhorn", "ClassRegOT", *REWEIGHTING)
#: ``--estimator`` names (anything else is the path of a classifier saved with skops)
ESTIMATORS = ("1nn", "logreg", "svm", "hgb", "rf", "ridge")
CLASSIFIERS = ESTIMATORS            # the former name of the option, kept as an alias
#: ``--select`` name -> scorer class of :mod:`shiftlearn.model_selection` (target-label
#: free criteria, validated on ``SourceKFold(5)``); ``source-cv``, ``cluster`` and ``lodo`` are
#: splitters scored by source accuracy
SCORERS = {"iw": "ImportanceWeightedScorer", "entropy": "PredictionEntropyScorer",
           "snd": "SoftNeighborhoodDensity", "dev": "DeepEmbeddedValidation",
           "circular": "CircularValidation", "mixval": "MixValScorer", "mmd": "MMDScorer"}
SELECT = ("source-cv", "cluster", "lodo", *SCORERS)
#: ``--estimator`` -> the default ``--select`` of ``--method auto``: the best target-free
#: criterion for ``auto`` with that classifier in the selection study (docs/model_selection.md);
#: the other estimators follow the rule of :func:`default_select`
DEFAULT_SELECT = {"1nn": "circular", "logreg": "mmd"}
# the size rule of --candidates sized lives with the selector:
# shiftlearn.model_selection.default_methods


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
    p.add_argument("--header", choices=tuple(_HEADER), default="auto",
                   help="is the first line of each text file a header? auto (default) decides "
                        "from its cells; a note says when it had to guess")
    p.add_argument("--target-has-labels", action="store_true",
                   help="the target file has the label column too (only used to print the "
                        "accuracy, never to choose anything)")
    p.add_argument("--method", choices=METHODS, default="auto",
                   help="auto (default): choose among no adaptation and every adapter by "
                        "--select; or one adapter; or raw for none")
    p.add_argument("--select", choices=SELECT, default=None,
                   help="criterion of --method auto: source-cv (5-fold CV on the source "
                        "labels), cluster (the most shifted validation split), lodo "
                        "(leave one source file out), or a target-label-free scorer: "
                        + ", ".join(SCORERS) + "; default: "
                        + ", ".join(f"{s} with --estimator {c}"
                                    for c, s in DEFAULT_SELECT.items())
                        + " (the selection study's best); mmd with the other estimators that "
                          "give graded probabilities (hgb, rf), circular with those that do "
                          "not (svm, ridge)")
    p.add_argument("--margin", type=_margin, default=0.0, metavar="se|NUMBER",
                   help="--method auto adapts only when the best adapter's validation estimate "
                        "beats no adaptation's by more than this: a number (default 0: the "
                        "best estimate wins) or se (the adapter's standard error over the "
                        "folds: more often no adaptation)")
    p.add_argument("--estimator", "--classifier", dest="estimator", default="1nn",
                   metavar="NAME|FILE",
                   help="the classifier trained on the adapted source rows: 1nn (default, the "
                        "papers' choice), logreg (standardised logistic regression), svm "
                        "(standardised RBF SVM), hgb (histogram gradient boosting), rf (random "
                        "forest, seeded by --seed), ridge (standardised ridge classifier), or "
                        "the path of an unfitted scikit-learn classifier saved with skops; "
                        "--classifier is an alias")
    p.add_argument("--candidates", default="sized", metavar="LIST",
                   help="adapters --method auto compares with no adaptation: a comma-separated "
                        "list (e.g. TCA,SCA), all, or sized (default: TCA, SCA, uSCA up to "
                        "5000 rows, RF-TCA, RF-SCA above; JDA up to 2000 rows; CORAL always: "
                        "shiftlearn.model_selection.default_methods)")
    p.add_argument("--tune", action="store_true",
                   help="search the hyper-parameters (grids: shiftlearn.model_selection."
                        "DEFAULT_GRIDS) by --select with auto, by 5-fold source CV with a named "
                        "method")
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
        raise ValueError(f"The source rows have a single class ({_value(classes[codes[0]])!r}); "
                         "adaptation for classification needs at least two.")
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
    raise ValueError(f"{lab.path}: the target file has the label column {col}, filled on "
                     f"{given} of {len(lab.y)} rows; a target with a few labels is not used "
                     "for training here: add --target-has-labels (the given labels are then "
                     "only used to print the accuracy) or remove that column.")


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
def make_estimator(name: str, seed: int = 0):
    """The unfitted classifier of ``--estimator NAME`` (:data:`ESTIMATORS`), or the one saved
    with skops at the path ``name`` (loaded safely; refused unless it is a classifier).
    Raises ``ValueError`` naming the known names for anything else."""
    from sklearn.base import clone, is_classifier
    from sklearn.ensemble import HistGradientBoostingClassifier, RandomForestClassifier
    from sklearn.linear_model import LogisticRegression, RidgeClassifier
    from sklearn.neighbors import KNeighborsClassifier
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler
    from sklearn.svm import SVC

    if name == "1nn":
        return KNeighborsClassifier(n_neighbors=1)
    if name == "logreg":
        return make_pipeline(StandardScaler(), LogisticRegression(max_iter=2000))
    if name == "svm":
        return make_pipeline(StandardScaler(), SVC(kernel="rbf"))
    if name == "hgb":
        return HistGradientBoostingClassifier(random_state=seed)
    if name == "rf":
        return RandomForestClassifier(random_state=seed)
    if name == "ridge":
        return make_pipeline(StandardScaler(), RidgeClassifier())
    from pathlib import Path

    if not Path(name).exists() and not name.endswith(".skops"):
        raise ValueError(f"--estimator {name!r}: unknown estimator; choose one of "
                         f"{', '.join(ESTIMATORS)}, or give the path of an unfitted "
                         "scikit-learn classifier saved with skops (skops.io.dump).")
    from ._model_file import load_estimator

    est = load_estimator(name)
    if not is_classifier(est):
        raise ValueError(f"--estimator {name}: holds a {type(est).__name__}, which is not a "
                         "classifier (scikit-learn's is_classifier); save a classifier or a "
                         "pipeline that ends in one.")
    return clone(est)


def default_select(name: str, estimator) -> str:
    """The default ``--select`` of ``--method auto`` with ``estimator`` (named ``name``):
    :data:`DEFAULT_SELECT` for 1nn and logreg (measured); for the others, logreg's (``mmd``)
    when the estimator gives graded probabilities, 1nn's (``circular``) when it does not."""
    if name in DEFAULT_SELECT:
        return DEFAULT_SELECT[name]
    return "mmd" if _graded(estimator) else "circular"


def _graded(estimator) -> bool:
    """Does ``estimator`` give graded class probabilities (``predict_proba``, not 1-NN's)?"""
    if not hasattr(estimator, "predict_proba"):
        return False
    final = estimator.steps[-1][1] if hasattr(estimator, "steps") else estimator
    return getattr(final, "n_neighbors", None) != 1


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
    params = parse_params(args.param)
    if args.method != "auto" and args.select not in (None, "source-cv"):
        raise ValueError(f"--select {args.select} chooses among methods and applies to --method "
                         f"auto; with --method {args.method}, --tune uses 5-fold source CV. "
                         "Drop --select or use --method auto.")
    if args.method == "raw" and (params or args.tune):
        raise ValueError("--param and --tune need an adapter; choose a --method other than "
                         "raw.")
    if args.method == "auto":
        if params:
            raise ValueError("--param sets the parameters of one method; with --method auto "
                             "every method keeps its defaults (or its grid with --tune). Name "
                             "the method, e.g. --method SCA --param n_components=20.")
        _candidates(args.candidates, 0)
        if args.select == "lodo" and len(args.sources) < 2:
            raise ValueError("--select lodo leaves one source file out at a time and needs at "
                             f"least two source files, got {len(args.sources)}; give more "
                             "source files or choose --select source-cv.")


def _criterion(args, n_sources: int):
    """``(cv, scoring, words)`` of ``--select`` for :class:`AdaptationSelector`."""
    from ..model_selection import ClusterSplit, DomainAwareSplit, LeaveOneDomainOut, SourceKFold

    if args.select == "source-cv":
        return (SourceKFold(5, random_state=args.seed), None,
                "5-fold CV on the source labels (accuracy on the held-out source rows)")
    if args.select == "cluster":
        return (DomainAwareSplit(ClusterSplit(random_state=args.seed)), None,
                "one clustering-based validation split (Napoli & White: the 20% of the source "
                "rows most shifted from the rest), accuracy on it")
    if args.select == "lodo":
        return (LeaveOneDomainOut(), None,
                "leave one source file out (accuracy on the held-out source)")
    from .. import model_selection

    scorer = getattr(model_selection, SCORERS[args.select])()
    return (SourceKFold(5, random_state=args.seed), scorer,
            f"{SCORERS[args.select]} (target-label free; greater is better) on 5 source folds "
            "with every target row")


def _candidates(text: str, n_rows: int) -> list[str]:
    """The adapters of ``--candidates`` (``sized``: ``default_methods``, exact up to 5000 rows,
    random-feature above; ``all``; or a comma-separated list)."""
    adapters = [m for m in METHODS if m not in ("auto", "raw")]
    if text == "sized":
        from ..model_selection import default_methods

        return default_methods(n_rows)
    if text == "all":
        return [m for m in adapters if m not in REWEIGHTING]
    names = [t.strip() for t in text.split(",") if t.strip()]
    bad = [n for n in names if n not in adapters]
    if bad or not names:
        raise ValueError(f"--candidates {text!r}: unknown method(s) {bad or '(none given)'}; "
                         f"give a comma-separated list of {', '.join(adapters)}, or all, or "
                         "sized. No adaptation is always a candidate.")
    return list(dict.fromkeys(names))


def _reason(exc: BaseException) -> str:
    """An exception as one short line for the report."""
    text = " ".join(str(exc).split()) or type(exc).__name__
    return text if len(text) <= 240 else text[:237] + "..."


def _counting(scoring, advance, failures: dict, label: str | None = None):
    """The scorer (``None``: accuracy on the held-out labeled source rows,
    :class:`~shiftlearn.model_selection.SourceAccuracyScorer`), advancing a bar (renamed
    ``"<label>: <method>"`` after each scoring when ``label`` is given, so that the bar names
    the candidate at work). A candidate that cannot be scored gets NaN and its reason in
    ``failures`` (method -> reason)."""
    from ..model_selection import SourceAccuracyScorer
    from ..model_selection._select import _method_of

    scoring = SourceAccuracyScorer() if scoring is None else scoring

    def score(estimator, X, y, **kw):
        method = _method_of(getattr(estimator, "adapter", None))
        try:
            yy = None if y is None else np.asarray(y)
            if not kw and yy is not None and (yy < 0).any() and \
                    np.unique(yy[yy >= 0]).size < 2:
                # a small held-out fold with one class: the command's classes are codes
                # >= 0 and its target rows -1, so it can say which rows are which
                kw = {"sample_domain": np.where(yy >= 0, 1, -2)}
            return scoring(estimator, X, y, **kw)
        except Exception as exc:  # noqa: BLE001 - listed in the report, scored NaN
            failures.setdefault(method, "cannot be scored: " + _reason(exc))
            return np.nan
        finally:
            if label is None:
                advance()
            else:
                advance(description=f"{label}: "
                                    + ("no adaptation" if method == "none" else method))
    return score


def _diagnose(method, args, X, y, sd, clf, cv, scoring) -> str:
    """Why ``method`` got no validation estimate: its first setting refitted fold by fold
    until one fails (only for candidates that failed, so the cost is at most one search's
    worth of that candidate)."""
    from sklearn.base import clone
    from sklearn.model_selection import ParameterGrid

    from ..adaptation import DomainAdaptationClassifier
    from ..model_selection import candidate_grid

    params = next(iter(ParameterGrid(candidate_grid([method], grids=None if args.tune else {},
                                                    random_state=args.seed))))
    failures: dict = {}
    scorer = _counting(scoring, lambda: None, failures)
    for train, test in cv.split(X, y, groups=sd):
        est = DomainAdaptationClassifier(None, clone(clf)).set_params(**params)
        try:
            est.fit(X[train], y[train], sd[train])
        except Exception as exc:  # noqa: BLE001 - the reason is what the report needs
            return "cannot be fitted: " + _reason(exc)
        value = scorer(est, X[test], y[test])
        if method in failures or not np.isfinite(value):
            break
    return failures.get(method, "no finite validation estimate on some fold")


def _auto(args, X, y, sd, clf, n_sources):
    """``--method auto``: :class:`AdaptationSelector` over no adaptation and every adapter.

    Candidates that cannot be fitted or scored get no estimate and a reason in the report;
    if none can, the raw features are used and the report says that nothing was measured.
    A criterion that gives every validated candidate the same estimate cannot rank them, and
    the report says so."""
    from joblib import effective_n_jobs
    from sklearn.model_selection import ParameterGrid

    from .._progress import task
    from ..adaptation import DomainAdaptationClassifier
    from ..model_selection import AdaptationSelector, candidate_grid

    cv, scoring, words = _criterion(args, n_sources)
    _check_split(cv, X, y, sd, f"--method auto by --select {args.select}")
    methods = _candidates(args.candidates, X.shape[0])
    grids = None if args.tune else {}
    n_splits = cv.get_n_splits(X, y, groups=sd)
    n_fits = len(ParameterGrid(candidate_grid(["none", *methods], grids=grids,
                                              random_state=args.seed))) * n_splits
    failures: dict = {}
    label = f"choosing by {args.select}"
    with task(label, n_fits) as advance:
        try:
            sel = AdaptationSelector(methods=methods, classifier=clf,
                                     scoring=_counting(scoring, advance, failures, label),
                                     cv=cv, grids=grids, random_state=args.seed,
                                     n_jobs=args.n_jobs, margin=args.margin).fit(X, y, sd)
        except ValueError as exc:
            words = str(exc).lower()
            if not ("candidate" in words and "fail" in words):   # not 'none could be fitted'
                raise
            sel = None
    if sel is None:
        rows = [{"method": m, "score": None, "std": None, "params": {}, "chosen": m == "none",
                 "seconds": None} for m in ["none", *methods]]
        model = DomainAdaptationClassifier(None, clf).fit(X, y, sd)
        choice, margin = "none", 0.0
    else:
        rows = [{"method": r["method"], "score": _finite(r["score"]),
                 "std": _finite(r["std"]), "params": _plain(r["params"]),
                 "chosen": bool(r["chosen"]),
                 # measured by the selector where it fits and scores each candidate
                 "seconds": {"fit": t["fit_time"], "validation": t["score_time"],
                             "fits": t["n_fits"]}}
                for r, t in zip(sel.summary_, sel.candidate_times_, strict=True)]
        model, choice, margin = sel.best_estimator_, sel.choice_, float(sel.margin_)
    for r in rows:
        if r["score"] is None:
            r["failed"] = failures.get(r["method"]) or _diagnose(
                r["method"], args, X, y, sd, clf, cv, scoring)
    scores = [r["score"] for r in rows if r["score"] is not None]
    ranked = len(scores) >= 2 and max(scores) - min(scores) > 1e-12 * max(1.0, *map(abs, scores))
    fold_rows = int(np.sum(y >= 0)) // max(n_splits, 1)
    return model, {"criterion": args.select, "how": words, "tuned": bool(args.tune),
                   "margin": args.margin, "margin_value": margin, "candidates": rows,
                   "choice": choice, "methods": methods, "validated": len(scores),
                   "ranked": ranked, "fold_rows": fold_rows,
                   "n_jobs": effective_n_jobs(args.n_jobs)}


def _fit(args, X, y, sd, codes, n_sources):
    """Fit the classifier (``raw``), adapter + classifier (tuned by source CV with --tune), or
    choose among them (``auto``). Returns the model, its ``transform(X, sample_domain)`` (None
    without adaptation), its parameters, where they came from, the validation estimate of the
    chosen setting and the selection summary (``auto``; else None)."""
    from sklearn.base import clone

    from ..adaptation import DomainAdaptationClassifier
    from ..model_selection import DEFAULT_GRIDS, make_adapter

    params = parse_params(args.param)
    clf = clone(args._estimator)
    if args.method == "raw":
        return clf.fit(X[:len(codes)], codes), None, {}, "no adapter", None, None
    if args.method == "auto":
        model, selection = _auto(args, X, y, sd, clf, n_sources)
        chosen = next(r for r in selection["candidates"] if r["chosen"])
        estimate = {"mean": chosen["score"], "std": chosen["std"], "criterion": args.select}
        if model.adapter_ is None:
            return model, None, {}, f"no adaptation, chosen by {args.select}", estimate, selection
        how = " over the default grids" if args.tune else " (library defaults)"
        return (model, model.transform, _plain(model.adapter_.get_params()),
                f"chosen by {args.select}{how}", estimate, selection)
    adapter = make_adapter(args.method, args.seed, **params)
    grid = {k: v for k, v in DEFAULT_GRIDS.get(args.method, {}).items()
            if k not in params and k in adapter.get_params()}
    params_from, cv_info = "library defaults" + (" + --param" if params else ""), None
    if not (args.tune and grid):
        model = DomainAdaptationClassifier(adapter, clf).fit(X, y, sd)
        return model, model.transform, _plain(model.adapter_.get_params()), params_from, \
            None, None
    search = _source_cv_search(args, adapter, grid, clf, X, y, sd)
    i = search.best_index_
    mean = np.asarray(search.cv_results_["mean_test_score"], dtype=float)
    cv_info = {"mean": _finite(mean[i]),
               "std": _finite(search.cv_results_["std_test_score"][i]),
               "n_settings": len(mean), "criterion": "source-cv",
               "validated": int(np.isfinite(mean).sum())}
    if np.isfinite(mean).any():
        params_from = "5-fold CV on the source labels"
        model = search.best_estimator_
    else:       # nothing measured: the defaults, and the report says why
        cv_info["failed"] = search.failures_.get(args.method, "no finite estimate")
        params_from += (" (no setting of the grid could be validated by 5-fold source CV: "
                        f"{cv_info['failed']})")
        model = DomainAdaptationClassifier(adapter, clf).fit(X, y, sd)
    return model, model.transform, _plain(model.adapter_.get_params()), params_from, \
        cv_info, None


def _source_cv_search(args, adapter, grid, clf, X, y, sd):
    """``--method NAME --tune``: the grid searched by 5-fold source CV (the search of
    :func:`~shiftlearn.model_selection.fit_source_cv`, with the command's scorer: settings
    that cannot be scored get NaN and a reason, ``failures_``, and a bar)."""
    from sklearn import config_context
    from sklearn.model_selection import GridSearchCV, ParameterGrid

    from .._progress import task
    from .._resources import parallel_workers
    from ..adaptation import DomainAdaptationClassifier, FitMemory
    from ..model_selection import SourceKFold

    cv = SourceKFold(5, random_state=args.seed)
    _check_split(cv, X, y, sd, "--tune (5-fold source CV)")
    param_grid = {f"adapter__{k}": list(v) for k, v in grid.items()}
    failures: dict = {}
    memory = FitMemory()
    n_fits = len(ParameterGrid(param_grid)) * cv.get_n_splits(X, y, groups=sd)
    with task("5-fold source CV", n_fits) as advance:
        search = GridSearchCV(DomainAdaptationClassifier(adapter, clf, memory=memory),
                              param_grid, scoring=_counting(None, advance, failures), cv=cv,
                              error_score=np.nan, n_jobs=args.n_jobs)
        try:
            with config_context(enable_metadata_routing=False), parallel_workers(args.n_jobs):
                search.fit(X, y, groups=sd, sample_domain=sd)
        finally:
            memory.clear()
    search.failures_ = failures
    return search


def _check_split(cv, X, y, sd, what: str) -> None:
    """Refuse, in the command's words, labeled rows too few for the validation splits."""
    from ..model_selection import SourceKFold

    try:
        n = sum(1 for _ in cv.split(X, y, groups=sd))
    except ValueError as exc:
        n, why = 0, _reason(exc)
    else:
        why = "it makes no split"
    if n == 0:
        if "puts no row in validation" in why:
            why = ("it holds out 20% of each group of labeled source rows, which rounds to no "
                   "row here")
        elif isinstance(cv, SourceKFold):
            why = (f"its {cv.n_splits} folds of the labeled source rows need at least "
                   f"{cv.n_splits} of them")
        raise ValueError(f"{int(np.sum(y >= 0))} labeled source rows are too few for the "
                         f"validation of {what}: {why.rstrip('.')}. Give more labeled rows, "
                         "or skip the search: --method raw (no adaptation) or a named "
                         "--method without --tune.")


def _plain(params: dict) -> dict:
    """Parameters as JSON values (numbers, text, booleans, None; anything else as text)."""
    return {k: (v.item() if isinstance(v, np.generic) else
                v if isinstance(v, int | float | str | bool) or v is None else str(v))
            for k, v in params.items()}


def _finite(v) -> float | None:
    return float(v) if v is not None and np.isfinite(v) else None


def _value(c):
    """A class as JSON/CSV writes it (numpy scalars as Python ones)."""
    return c.item() if isinstance(c, np.generic) else c


def _confidence(model, X) -> np.ndarray | None:
    """The predicted class's probability, for classifiers with graded probabilities (logreg,
    hgb, rf); None for 1-NN, whose probabilities are always 0 or 1, and for classifiers
    without ``predict_proba`` (svm, ridge)."""
    if not hasattr(model, "predict_proba"):
        return None
    if not _graded(getattr(model, "estimator_", model)):
        return None
    return np.asarray(model.predict_proba(X)).max(axis=1)


# ------------------------------------------------------------------------------ shift ------
def _names(srcs, tgt) -> list[str]:
    """Display names of the domains: file names without extensions, made unique."""
    from pathlib import Path

    stems = [Path(t.path).name.split(".")[0] for t in [*srcs, tgt]]
    if len(set(stems)) < len(stems):
        stems = [f"{i + 1}: {s}" for i, s in enumerate(stems)]
    last = stems[-1] if "target" in stems[-1].lower() else f"{stems[-1]} (target)"
    return [*stems[:-1], last]


def _analyses(args, names, spaces: dict, advance):
    """:func:`~shiftlearn.report.analyse_shift` of the raw and (if any) adapted features."""
    from ..report import analyse_shift

    out = {}
    for key, arrays in spaces.items():
        out[key] = analyse_shift(dict(zip(names, arrays, strict=True)),
                                 permutations=args.permutations, max_rows=MAX_ROWS,
                                 standardize=False, random_state=args.seed,
                                 on_test=lambda what, key=key: advance(
                                     description=f"MMD tests ({key}): {what}"))
    return out


#: rows per domain in the report's MMD tests and pictures (seeded sample)
MAX_ROWS = 500


def _source_vs_target(res) -> list[dict]:
    """Each source against the target, from the pairwise analysis (the JSON's ``shift_*``)."""
    t = res.names[-1]
    return [{"mmd2_unbiased": p["mmd2"], "p_value": p["p_value"], "p_holm": p["p_holm"]}
            for p in res.pairs if p["b"] == t]


# ---------------------------------------------------------------------------------- run ------
def _outputs(args):
    inputs = (*args.sources, args.target)
    out = check_output(args.out, "--out", inputs=inputs) if args.out else None
    save = check_output(args.save, "--save", inputs=inputs) if args.save else None
    if out is not None and save is not None and save.resolve() == out.resolve():
        raise ValueError(f"--out {args.out} and --save {args.save} are the same file; give "
                         "them different names.")
    paths, note = {}, None
    if args.report:
        paths, note = report_paths(args.report, named=(*inputs, *(
            [args.out] if args.out else []), *([args.save] if args.save else [])))
        for path in paths.values():
            for option, other in (("--out", out), ("--save", save)):
                if other is not None and path.resolve() == other.resolve():
                    raise ValueError(f"{option} {other} and the report {path} are the same "
                                     "file; give them different names.")
            check_output(path, "--report", inputs=inputs)
    return out, paths, note, save


def _save_model(args, save, model, srcs, tgt, classes, command, method, conf) -> None:
    """``--save``: the fitted model, its columns, classes and command, and a seeded sample of
    at most :data:`MAX_ROWS` target rows (the reference of ``predict``'s shift check)."""
    from .. import __version__
    from ._common import subsample
    from ._model_file import save_model

    rng = np.random.default_rng(args.seed)
    reference = subsample(np.asarray(tgt.X, dtype=float), MAX_ROWS, rng)
    header = {"version": __version__, "command": command,
              "created_utc": time.strftime("%Y-%m-%d %H:%M", time.gmtime()),
              "feature_names": list(srcs[0].feature_names) if srcs[0].feature_names else None,
              "n_features": int(tgt.X.shape[1]), "classes": [_value(c) for c in classes],
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
            w.writerow([i + 1, _value(classes[c])] + ([f"{conf[i]:.4f}"] if conf is not None
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
                  "logreg)" if crit in ("entropy", "snd") and sel.get("classifier") == "1nn"
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


def _run(args: argparse.Namespace, caught: list) -> int:
    from .. import __version__
    from .._progress import task
    from ._adapt_report import figures, markdown, write_report

    command = "shiftlearn " + shlex.join(sys.argv[1:] if args._argv is None else args._argv)
    out, paths, note, save = _outputs(args)
    if save is not None:
        from ._model_file import skops_io

        skops_io()                         # a missing extra is said before any work
    _check_options(args)
    args._estimator = make_estimator(args.estimator, args.seed)
    args._estimator_name = (args.estimator if args.estimator in ESTIMATORS else
                            f"{type(args._estimator).__name__} ({args.estimator})")
    if args.select is None:
        args.select = (default_select(args.estimator, args._estimator) if args.method == "auto"
                       else "source-cv")
    t_start = time.perf_counter()
    srcs, tgt, classes, codes, tgt_codes, X, y, sd = _load(args)
    _check_sizes(args, srcs, tgt)
    K, d, n_src = len(srcs), X.shape[1], len(codes)
    how = {"auto": f" (chosen among no adaptation and every adapter by {args.select}"
                   + (", grids searched" if args.tune else "") + ")",
           "raw": ""}.get(args.method, " (tuned by 5-fold source CV)" if args.tune else "")
    info(args, f"shiftlearn adapt: {K} source file(s), {n_src} labeled rows, {len(tgt.X)} "
               f"target rows, {d} features, {np.unique(codes).size} classes; method "
               f"{args.method}{how}")
    t0 = time.perf_counter()
    model, embed, final, params_from, cv_info, selection = _fit(args, X, y, sd, codes, K)
    t_fit = time.perf_counter() - t0
    if selection is not None:
        selection["classifier"] = args._estimator_name
        for line in _selection_lines(selection):
            info(args, line)
    t0 = time.perf_counter()
    pred_codes = np.asarray(model.predict(tgt.X), dtype=np.int64)
    conf = _confidence(model, tgt.X)
    if out is not None:
        _write_predictions(out, classes, pred_codes, conf)
        info(args, f"wrote {len(pred_codes)} predictions to {out}")
    method = args.method if selection is None else (
        "auto: " + ("no adaptation" if selection["choice"] == "none" else selection["choice"]))
    if save is not None:
        _save_model(args, save, model, srcs, tgt, classes, command, method, conf)
    names = _names(srcs, tgt)
    analyses, spaces = {}, {"raw": [t.X for t in srcs] + [tgt.X]}
    if embed is not None and (args.permutations or "html" in paths):
        # each file embedded as its domain (CORAL maps source rows and leaves target rows)
        spaces["adapted"] = [embed(t.X, np.full(len(t.X), i + 1)) for i, t in enumerate(srcs)] \
            + [embed(tgt.X, np.full(len(tgt.X), -(K + 1)))]
    if args.permutations:
        k = K + 1
        with task("MMD tests", len(spaces) * k * (k - 1) // 2) as advance:
            analyses = _analyses(args, names, spaces, advance)
    seen = np.unique(np.r_[codes, pred_codes])
    src_share = np.bincount(codes, minlength=classes.size)[seen] / n_src
    tgt_share = np.bincount(pred_codes, minlength=classes.size)[seen] / len(pred_codes)
    rep = {"command": command,
           "date_utc": time.strftime("%Y-%m-%d %H:%M", time.gmtime()), "version": __version__,
           "method": method, "classifier": args._estimator_name, "n_features": d,
           "label_column": args.label_column, "label_name": srcs[0].label_name,
           "permutations": args.permutations,
           "seed": args.seed,
           "notes": [_cli_note(n) for t in [*srcs, tgt] for n in t.notes],
           "domains": [{"role": "source", "id": i + 1, "name": names[i], "file": str(t.path),
                        "rows": len(t.X), "labeled": len(t.X),
                        "classes": int(np.unique(c).size)}
                       for i, (t, c) in enumerate(zip(srcs, np.split(
                           codes, np.cumsum([len(t.X) for t in srcs])[:-1]), strict=True))]
           + [{"role": "target", "id": -(K + 1), "name": names[-1], "file": str(tgt.path),
               "rows": len(tgt.X), "labeled": 0, "classes": "–"}],
           "shift_raw": _source_vs_target(analyses["raw"]) if analyses else [],
           "shift_adapted": (_source_vs_target(analyses["adapted"]) if "adapted" in analyses
                             else [None] * K if analyses else []),
           "shift_matrices": {k: v.to_dict() for k, v in analyses.items()},
           "params": final, "params_from": params_from, "source_cv": cv_info,
           "selection": selection,
           "class_mix": [[str(_value(classes[c])), float(s), float(p)]
                         for c, s, p in zip(seen, src_share, tgt_share, strict=True)],
           "confidence": None if conf is None else {
               "mean": float(conf.mean()), "below_0.5": int(np.sum(conf < 0.5))}}
    if tgt_codes is not None and np.any(tgt_codes >= 0):
        known = tgt_codes >= 0                    # rows whose label is given
        from sklearn.base import clone

        raw_clf = clone(args._estimator).fit(X[:n_src], codes)
        raw_pred = np.asarray(raw_clf.predict(tgt.X), dtype=np.int64)
        rep["target_accuracy"] = {
            "adapted": float(np.mean(pred_codes[known] == tgt_codes[known])),
            "raw": float(np.mean(raw_pred[known] == tgt_codes[known])),
            "rows": int(known.sum())}
        true_share = np.bincount(tgt_codes[known], minlength=classes.size)[seen] / known.sum()
        rep["class_mix_true"] = [float(v) for v in true_share]
    rep["seconds"] = {"fit": t_fit, "report": time.perf_counter() - t0,
                      "total": time.perf_counter() - t_start}
    rep["warnings"] = warning_lines(caught)
    if not paths:
        print(markdown(rep))
    else:
        pictures = {}
        if "html" in paths:
            pictures = figures(rep, names, spaces, analyses, seed=args.seed)
        written = write_report(rep, paths, pictures)
        info(args, "wrote " + " and ".join(str(p) for p in written))
    if note:
        info(args, f"note: {note}")
    return 0
