"""One adaptation run, from arrays to the chosen pipeline and its report: the work of
``shiftlearn adapt`` and of :func:`adapt`.

:func:`run_adaptation` fits (or chooses, ``method="auto"``), predicts the target rows, measures
the shift before and after (MMD permutation tests) and builds the report dict; the command
reads the files and writes the outputs around it, :func:`adapt` takes arrays or DataFrames.
Design notes: ``docs/dev/cli.md``.
"""

from __future__ import annotations

import time
import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ._model_file import load_estimator

#: the reweighting adapters: their weights need an estimator that takes sample_weight, so
#: ``candidates="all"`` leaves them out (name them to compare them)
REWEIGHTING = ("KMM", "KLIEP", "uLSIF", "RuLSIF", "DiscriminatorRW", "NearestNeighborRW",
               "KDERW", "GaussianRW")
#: the label-shift methods: they correct the classifier for the target's class proportions
LABEL_SHIFT = ("BBSE", "RLLS", "MLLS", "JCPOT")
#: the labelers: whole estimators that predict the labels and replace the classifier (JDOT
#: needs one that takes sample_weight), so ``candidates="all"`` leaves them out too
LABELERS = ("JDOT", "OTLabelProp", "DASVM")
#: ``method`` names: ``auto`` (choose), ``raw`` (no adaptation) or one adapter
METHODS = ("auto", "raw", "TCA", "JDA", "TJM", "SCA", "uSCA", "RF-TCA", "RF-SCA", "CORAL", "SA",
           "LinOT", "MultiLinOT", "MMD-LS", "EMD", "Sinkhorn", "ClassRegOT", *REWEIGHTING,
           *LABEL_SHIFT, *LABELERS)
#: estimator names (anything else is the path of a classifier saved with skops)
ESTIMATORS = ("1nn", "logreg", "svm", "hgb", "rf", "ridge")
#: ``select`` name -> scorer class of :mod:`shiftlearn.model_selection` (target-label
#: free criteria, validated on ``SourceKFold(5)``); ``source-cv``, ``cluster`` and ``lodo`` are
#: splitters scored by source accuracy
SCORERS = {"iw": "ImportanceWeightedScorer", "entropy": "PredictionEntropyScorer",
           "snd": "SoftNeighborhoodDensity", "dev": "DeepEmbeddedValidation",
           "circular": "CircularValidation", "mixval": "MixValScorer", "mmd": "MMDScorer",
           "mano": "MaNoScorer"}
#: ``select`` names
SELECT = ("source-cv", "cluster", "lodo", *SCORERS)
#: estimator -> the default ``select`` of ``method="auto"``: the best target-free criterion for
#: ``auto`` with that classifier in the selection study (docs/model_selection.md); the other
#: estimators follow the rule of :func:`default_select`
DEFAULT_SELECT = {"1nn": "circular", "logreg": "mmd"}
#: rows per domain in the report's MMD tests and pictures (seeded sample)
MAX_ROWS = 500


def make_estimator(name, seed: int = 0):
    """The unfitted classifier of an estimator name (:data:`ESTIMATORS`).

    Parameters
    ----------
    name : str or classifier
        One of :data:`ESTIMATORS`, the path of an unfitted classifier saved with
        ``skops.io.dump`` (loaded safely, see :func:`load_estimator`), or a scikit-learn
        classifier (cloned).
    seed : int, default 0
        ``random_state`` of ``hgb`` and ``rf``.

    Returns
    -------
    estimator : unfitted classifier

    Raises
    ------
    ValueError
        An unknown name (the message lists the known ones), or a file or object that is not a
        classifier.
    """
    from sklearn.base import clone, is_classifier

    if not isinstance(name, str):
        if not is_classifier(name):
            raise ValueError(f"estimator={type(name).__name__}: not a classifier "
                             "(scikit-learn's is_classifier); give a classifier or one of "
                             f"{', '.join(ESTIMATORS)}.")
        return clone(name)
    from sklearn.ensemble import HistGradientBoostingClassifier, RandomForestClassifier
    from sklearn.linear_model import RidgeClassifier
    from sklearn.neighbors import KNeighborsClassifier
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler
    from sklearn.svm import SVC

    if name == "1nn":
        return KNeighborsClassifier(n_neighbors=1)
    if name == "logreg":
        from ..linear_model import RowSpaceLogisticRegression

        return make_pipeline(StandardScaler(), RowSpaceLogisticRegression(max_iter=2000))
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
    est = load_estimator(name)
    if not is_classifier(est):
        raise ValueError(f"--estimator {name}: holds a {type(est).__name__}, which is not a "
                         "classifier (scikit-learn's is_classifier); save a classifier or a "
                         "pipeline that ends in one.")
    return clone(est)


#: the default ``margin`` of ``method="auto"`` without target labels: the one-standard-error
#: rule (docs/model_selection.md); a regression target and labeled target rows keep 0
DEFAULT_MARGIN = "se"


def resolve_margin(margin):
    """The margin of ``method="auto"`` on class labels without labeled target rows: ``margin``
    as given, :data:`DEFAULT_MARGIN` for ``None``."""
    return DEFAULT_MARGIN if margin is None else margin


def default_select(name: str, estimator) -> str:
    """The default selection criterion of ``method="auto"`` with ``estimator``.

    :data:`DEFAULT_SELECT` for ``1nn`` and ``logreg`` (measured by the selection study); for
    the others, logistic regression's (``"mmd"``) when the estimator gives graded
    probabilities, 1NN's (``"circular"``) when it does not.

    Parameters
    ----------
    name : str
        The estimator's name (:data:`ESTIMATORS`, or any other text for other estimators).
    estimator : classifier
        The estimator (read for ``predict_proba``).

    Returns
    -------
    str
        A name of :data:`SELECT`.
    """
    if name in DEFAULT_SELECT:
        return DEFAULT_SELECT[name]
    return "mmd" if _graded(estimator) else "circular"


def _graded(estimator) -> bool:
    """Does ``estimator`` give graded class probabilities (``predict_proba``, not 1-NN's)?"""
    if not hasattr(estimator, "predict_proba"):
        return False
    final = estimator.steps[-1][1] if hasattr(estimator, "steps") else estimator
    return getattr(final, "n_neighbors", None) != 1


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


def candidate_methods(text, n_rows: int) -> list[str]:
    """The adapters ``method="auto"`` compares with no adaptation.

    Parameters
    ----------
    text : str or sequence of str
        ``"sized"`` (:func:`~shiftlearn.model_selection.default_methods`: exact up to 2000
        rows, random-feature above), ``"all"`` (every adapter but the reweighting ones, the
        label-shift ones and the labelers), or
        method names (a comma-separated text or a list).
    n_rows : int
        Rows of the data (for ``"sized"``).

    Returns
    -------
    list of str

    Raises
    ------
    ValueError
        An unknown method name, or none given.
    """
    adapters = [m for m in METHODS if m not in ("auto", "raw")]
    if not isinstance(text, str):
        text = ",".join(text)
    if text == "sized":
        from ..model_selection import default_methods

        return default_methods(n_rows)
    if text == "all":
        return [m for m in adapters if m not in (*REWEIGHTING, *LABEL_SHIFT, *LABELERS)]
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
    from ..model_selection import SourceAccuracyScorer, method_label

    scoring = SourceAccuracyScorer() if scoring is None else scoring

    def score(estimator, X, y, **kw):
        method = method_label(getattr(estimator, "adapter", None))
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

    from ..compose import DomainAdaptationClassifier
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
    from ..compose import DomainAdaptationClassifier
    from ..model_selection import AdaptationSelector, candidate_grid

    cv, scoring, words = _criterion(args, n_sources)
    _check_split(cv, X, y, sd, f"--method auto by --select {args.select}")
    methods = candidate_methods(args.candidates, X.shape[0])
    grids = None if args.tune else {}
    n_splits = cv.get_n_splits(X, y, groups=sd)
    search = getattr(args, "search", "grid")
    # successive halving's rounds are known only as it goes: a bar without a total
    n_fits = None if search == "halving" else len(ParameterGrid(candidate_grid(
        ["none", *methods], grids=grids, random_state=args.seed))) * n_splits
    failures: dict = {}
    rule = resolve_margin(args.margin)
    label = f"choosing by {args.select}"
    with task(label, n_fits) as advance:
        try:
            sel = AdaptationSelector(methods=methods, classifier=clf,
                                     scoring=_counting(scoring, advance, failures, label),
                                     cv=cv, grids=grids, random_state=args.seed,
                                     n_jobs=args.n_jobs, margin=rule,
                                     search=search).fit(X, y, sd)
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
                 "chosen": bool(r["chosen"]), "rows": int(r["rows"]),
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
                   "margin": rule, "margin_value": margin,
                   "candidates": rows, "choice": choice, "methods": methods,
                   "validated": len(scores), "ranked": ranked, "fold_rows": fold_rows,
                   "search": search, "n_jobs": effective_n_jobs(args.n_jobs)}


def _fit(args, X, y, sd, codes, n_sources):
    """Fit the classifier (``raw``), adapter + classifier (tuned by source CV with --tune), or
    choose among them (``auto``). Returns the model, its ``transform(X, sample_domain)`` (None
    without adaptation), its parameters, where they came from, the validation estimate of the
    chosen setting and the selection summary (``auto``; else None)."""
    from sklearn.base import clone

    from ..compose import DomainAdaptationClassifier
    from ..model_selection import DEFAULT_GRIDS, make_adapter

    params = dict(args.params)
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
    from ..adaptation import FitMemory
    from ..compose import DomainAdaptationClassifier
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


def _source_vs_target(res) -> list[dict]:
    """Each source against the target, from the pairwise analysis (the JSON's ``shift_*``)."""
    t = res.names[-1]
    return [{"mmd2_unbiased": p["mmd2"], "p_value": p["p_value"], "p_holm": p["p_holm"]}
            for p in res.pairs if p["b"] == t]


def check_options(opts, n_sources: int) -> None:
    """Refuse inconsistent options (``opts``: ``method``, ``select``, ``params``, ``tune``,
    ``candidates``) before any work; ``ValueError`` in the command's words."""
    params = opts.params
    if opts.method not in METHODS:
        raise ValueError(f"method {opts.method!r}: unknown; choose one of {', '.join(METHODS)}.")
    if opts.select is not None and opts.select not in SELECT:
        raise ValueError(f"select {opts.select!r}: unknown; choose one of {', '.join(SELECT)}.")
    if opts.method != "auto" and opts.select not in (None, "source-cv"):
        raise ValueError(f"--select {opts.select} chooses among methods and applies to --method "
                         f"auto; with --method {opts.method}, --tune uses 5-fold source CV. "
                         "Drop --select or use --method auto.")
    if opts.method == "raw" and (params or opts.tune):
        raise ValueError("--param and --tune need an adapter; choose a --method other than "
                         "raw.")
    if opts.method == "auto":
        if params:
            raise ValueError("--param sets the parameters of one method; with --method auto "
                             "every method keeps its defaults (or its grid with --tune). Name "
                             "the method, e.g. --method SCA --param n_components=20.")
        candidate_methods(opts.candidates, 0)
        if opts.select == "lodo" and n_sources < 2:
            raise ValueError("--select lodo leaves one source file out at a time and needs at "
                             f"least two source files, got {n_sources}; give more "
                             "source files or choose --select source-cv.")


class AdaptationReport(dict):
    """The report of one adaptation run: the dict ``shiftlearn adapt --report x.json`` writes.

    A ``dict`` (``json.dumps(report)`` is the JSON report) with the renderers of the command's
    other formats. Keys: ``method``, ``classifier``, ``selection`` (the candidates' validation
    estimates and the choice, ``method="auto"``), ``params``, ``shift_raw`` /
    ``shift_adapted`` (each source against the target), ``shift_matrices``, ``class_mix``,
    ``confidence``, ``target_accuracy`` (only with target labels), ``warnings``, ``seconds``,
    ... (``docs/cli.md`` describes the report).
    """

    def __init__(self, data: dict, *, names=None, spaces=None, analyses=None, seed: int = 0):
        super().__init__(data)
        self._names, self._spaces = list(names or []), dict(spaces or {})
        self._analyses, self._seed = dict(analyses or {}), seed
        self._pictures: dict[str, bytes] | None = None

    def markdown(self) -> str:
        """The report as Markdown (what the command prints without ``--report``)."""
        from ._report import markdown

        return markdown(self)

    def figures(self) -> dict[str, bytes]:
        """The PNG figures of the HTML page (needs matplotlib): MMD² heat-maps and 2-D
        pictures of the domains before and after adaptation, the candidates' estimates, the
        class mix."""
        from ._report import figures

        if self._pictures is None:
            self._pictures = figures(self, self._names, self._spaces, self._analyses,
                                     seed=self._seed)
        return self._pictures

    def html(self) -> str:
        """The report as one self-contained HTML page with its figures (opens offline)."""
        from ._report import html

        return html(self, self.figures())

    def write(self, path: str | Path, kind: str | None = None) -> Path:
        """Write the report to ``path`` as ``kind`` (``"html"``, ``"md"`` or ``"json"``;
        default: from the extension, ``.html``/``.htm``, ``.md``, ``.json``). Returns the
        path. Raises ``ValueError`` for another extension."""
        from ._report import write_report

        path = Path(path)
        if kind is None:
            kind = {".html": "html", ".htm": "html", ".md": "md",
                    ".json": "json"}.get(path.suffix.lower())
        if kind not in ("html", "md", "json"):
            raise ValueError(f"{path}: unknown report format {kind or path.suffix!r}; end the "
                             "name in .html, .md or .json.")
        write_report(self, {kind: path}, self.figures() if kind == "html" else None)
        return path


@dataclass
class AdaptationResult:
    """What :func:`adapt` returns.

    Attributes
    ----------
    pipeline : fitted estimator
        The chosen model (a :class:`~shiftlearn.compose.DomainAdaptationClassifier`, or the
        bare classifier without adaptation), fitted on the integer codes of ``classes``:
        ``classes[pipeline.predict(X)]`` are labels (:meth:`predict` does it).
    classes : ndarray
        The labels, sorted; the pipeline predicts their indices.
    predictions : ndarray
        The target rows' predicted labels.
    confidence : ndarray or None
        The predicted class's probability, for estimators with graded probabilities.
    report : AdaptationReport
        The report dict, with :meth:`AdaptationReport.write` for the HTML page.
    """

    pipeline: object
    classes: np.ndarray
    predictions: np.ndarray
    confidence: np.ndarray | None
    report: AdaptationReport

    def predict(self, X) -> np.ndarray:
        """The labels the pipeline predicts for ``X`` (rows of the target's domain)."""
        return self.classes[np.asarray(self.pipeline.predict(np.asarray(X, dtype=float)),
                                       dtype=np.int64)]


def run_adaptation(opts, X: np.ndarray, y: np.ndarray, sd: np.ndarray, codes: np.ndarray,
                   classes: np.ndarray, target_codes: np.ndarray | None, *, names: list[str],
                   files: list[str], label_column, label_name, notes: list[str], command: str,
                   html: bool = False, t_start: float | None = None, on_selection=None,
                   on_predictions=None) -> AdaptationResult:
    """Fit or choose, predict the target rows, measure the shift, build the report.

    Parameters
    ----------
    opts : namespace
        ``method``, ``select`` (resolved), ``candidates``, ``tune``, ``margin``, ``params``
        (dict), ``permutations``, ``n_jobs``, ``seed``, ``_estimator`` (unfitted classifier)
        and ``_estimator_name``, as the command's options.
    X, y, sd : arrays
        Every row (the sources' first, then the target's), their codes (-1 on the target
        rows) and ``sample_domain`` (``1..K`` for the sources, ``-(K + 1)`` for the target).
    codes : array
        The source rows' class codes (``y[:n_source]``).
    classes : array
        The labels of the codes.
    target_codes : array or None
        The target rows' codes when given (-1 where missing): only for the accuracy line.
    names, files : list of str
        Display names and file names of the K sources and the target.
    label_column, label_name, notes, command
        For the report.
    html : bool
        Embed the rows in the adapted space even without MMD tests (for the figures).
    t_start : float or None
        ``time.perf_counter()`` at the start of the run (for ``seconds.total``).
    on_selection, on_predictions : callable or None
        Called with the selection summary (``auto``), and with ``(model, pred_codes,
        confidence, method)`` right after the target rows are predicted.

    Returns
    -------
    AdaptationResult
        Its report has no ``warnings`` key: the caller adds the warnings it caught.
    """
    from sklearn.base import clone

    from .._progress import task

    t_start = time.perf_counter() if t_start is None else t_start
    K = len(names) - 1
    d, n_src = X.shape[1], len(codes)
    t0 = time.perf_counter()
    model, embed, final, params_from, cv_info, selection = _fit(opts, X, y, sd, codes, K)
    t_fit = time.perf_counter() - t0
    if selection is not None:
        selection["classifier"] = opts._estimator_name
        if on_selection is not None:
            on_selection(selection)
    t0 = time.perf_counter()
    src_X = [X[sd == i + 1] for i in range(K)]
    tgt_X = X[sd == -(K + 1)]
    pred_codes = np.asarray(model.predict(tgt_X), dtype=np.int64)
    conf = _confidence(model, tgt_X)
    method = opts.method if selection is None else (
        "auto: " + ("no adaptation" if selection["choice"] == "none" else selection["choice"]))
    if on_predictions is not None:
        on_predictions(model, pred_codes, conf, method)
    analyses, spaces = {}, {"raw": [*src_X, tgt_X]}
    if embed is not None and (opts.permutations or html):
        # each domain embedded as its domain (CORAL maps source rows and leaves target rows)
        spaces["adapted"] = [embed(x, np.full(len(x), i + 1)) for i, x in enumerate(src_X)] \
            + [embed(tgt_X, np.full(len(tgt_X), -(K + 1)))]
    if opts.permutations:
        k = K + 1
        with task("MMD tests", len(spaces) * k * (k - 1) // 2) as advance:
            analyses = _analyses(opts, names, spaces, advance)
    seen = np.unique(np.r_[codes, pred_codes])
    src_share = np.bincount(codes, minlength=classes.size)[seen] / n_src
    tgt_share = np.bincount(pred_codes, minlength=classes.size)[seen] / len(pred_codes)
    src_sd = sd[:n_src]
    from .. import __version__

    rep = {"command": command,
           "date_utc": time.strftime("%Y-%m-%d %H:%M", time.gmtime()), "version": __version__,
           "method": method, "classifier": opts._estimator_name, "n_features": d,
           "label_column": label_column, "label_name": label_name,
           "permutations": opts.permutations,
           "seed": opts.seed,
           "notes": list(notes),
           "domains": [{"role": "source", "id": i + 1, "name": names[i], "file": files[i],
                        "rows": len(x), "labeled": len(x),
                        "classes": int(np.unique(codes[src_sd == i + 1]).size)}
                       for i, x in enumerate(src_X)]
           + [{"role": "target", "id": -(K + 1), "name": names[-1], "file": files[-1],
               "rows": len(tgt_X), "labeled": 0, "classes": "–"}],
           "shift_raw": _source_vs_target(analyses["raw"]) if analyses else [],
           "shift_adapted": (_source_vs_target(analyses["adapted"]) if "adapted" in analyses
                             else [None] * K if analyses else []),
           "shift_matrices": {k: v.to_dict() for k, v in analyses.items()},
           "params": final, "params_from": params_from, "source_cv": cv_info,
           "replaces_classifier": bool(getattr(type(getattr(model, "adapter_", None)),
                                               "_replaces_estimator", False)),
           "selection": selection,
           "class_mix": [[str(_value(classes[c])), float(s), float(p)]
                         for c, s, p in zip(seen, src_share, tgt_share, strict=True)],
           "confidence": None if conf is None else {
               "mean": float(conf.mean()), "below_0.5": int(np.sum(conf < 0.5))}}
    if target_codes is not None and np.any(target_codes >= 0):
        known = target_codes >= 0                    # rows whose label is given
        raw_clf = clone(opts._estimator).fit(X[:n_src], codes)
        raw_pred = np.asarray(raw_clf.predict(tgt_X), dtype=np.int64)
        rep["target_accuracy"] = {
            "adapted": float(np.mean(pred_codes[known] == target_codes[known])),
            "raw": float(np.mean(raw_pred[known] == target_codes[known])),
            "rows": int(known.sum())}
        true_share = np.bincount(target_codes[known], minlength=classes.size)[seen] / known.sum()
        rep["class_mix_true"] = [float(v) for v in true_share]
    rep["class_mix_estimated"] = _estimated_mix(opts, X, y, sd, seen)
    rep["seconds"] = {"fit": t_fit, "report": time.perf_counter() - t0,
                      "total": time.perf_counter() - t_start}
    report = AdaptationReport(rep, names=names, spaces=spaces, analyses=analyses,
                              seed=opts.seed)
    return AdaptationResult(model, np.asarray(classes), np.asarray(classes)[pred_codes], conf,
                            report)


def _estimated_mix(opts, X, y, sd, seen) -> dict:
    """The target class proportions estimated by BBSE with the run's classifier (label shift:
    the share of each class among the target rows, without their labels), beside the
    predicted mix of the report: ``{"method": "BBSE", "shares": [...]}`` in the order of
    ``seen`` (the report's class codes; a ``note`` when the classifier's confusion matrix is
    singular), or ``{"method": "BBSE", "error": reason}`` when it cannot be estimated. Cost:
    5 fits of the classifier on 4/5 of the source rows (cross-fitted confusion matrix)."""
    from ..labelshift import bbse_weights, cross_fit_confusion

    src, tgt = sd > 0, sd < 0
    codes = np.asarray(y[src], dtype=np.int64)
    present = np.unique(codes)
    k = present.size
    if k < 2 or not tgt.any():
        return {"method": "BBSE", "error": "it needs two classes or more and target rows"}
    try:
        # an auxiliary estimate: its folds' warnings (convergence, ...) are not the run's
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            C, mu = cross_fit_confusion(opts._estimator, X[src],
                                        np.searchsorted(present, codes), X[tgt], k, cv=5,
                                        random_state=opts.seed)
    except (ValueError, TypeError, np.linalg.LinAlgError) as exc:
        return {"method": "BBSE", "error": _reason(exc)}
    p_s = np.bincount(np.searchsorted(present, codes), minlength=k) / codes.size
    q = bbse_weights(C, mu) * p_s
    if not q.sum() > 0:
        return {"method": "BBSE", "error": "every estimated class weight is 0"}
    share = dict(zip(present.tolist(), q / q.sum(), strict=True))
    out = {"method": "BBSE", "shares": [float(share.get(c, 0.0)) for c in np.asarray(seen)]}
    rank = int(np.linalg.matrix_rank(C))
    if rank < k:
        out["note"] = (f"the classifier's confusion matrix is singular (rank {rank} of {k}): "
                       "some classes' shares are not identifiable")
    return out


def _features(X, what: str):
    """``(array, column names or None)`` of an array or a DataFrame."""
    names = [str(c) for c in X.columns] if hasattr(X, "columns") else None
    A = np.asarray(X, dtype=float)
    if A.ndim != 2:
        raise ValueError(f"{what} must be 2-D (rows x features), got shape {A.shape}.")
    return A, names
