"""Choose among no adaptation and every adapter without target labels: ``AdaptationSelector``.

One plain ``GridSearchCV`` over ``DomainAdaptationClassifier(adapter, classifier)`` whose grid is a
list with one entry per candidate method (:func:`candidate_grid`): ``adapter=None`` (no
adaptation: the same classifier on the raw features, always a candidate) and each adapter with
its default grid (:data:`~shiftlearn.model_selection.DEFAULT_GRIDS`). Validation folds come from a
domain-aware splitter (:class:`~shiftlearn.model_selection.SourceKFold` by default: held-out
labeled source rows, and every target row in training and validation), and each candidate is
scored by a target-label-free criterion (``scoring``). The winner is refitted on all rows.

Contract: ties go to the earlier candidate in ``methods`` order and "none" comes first, so an
adapter is chosen only when its validation estimate is strictly better than no adaptation's;
the search behaves the same whatever the caller's metadata-routing setting; with
``memory="auto"`` one :class:`~shiftlearn.adaptation.FitMemory` per ``fit`` is shared by the
candidates and the results are those of the search without memory (to the solvers' tolerance);
``n_jobs`` gives the choice and the estimates of ``n_jobs=1``. Design notes:
``docs/dev/model_selection.md``.
"""

from __future__ import annotations

import time
from numbers import Integral, Real

import numpy as np
from sklearn import config_context
from sklearn.base import BaseEstimator, ClassifierMixin, RegressorMixin, clone
from sklearn.model_selection import GridSearchCV
from sklearn.utils.validation import check_is_fitted, has_fit_parameter

from .._constraints import HasMethods, Interval, StrOptions, check_params
from .._resources import parallel_workers
from .._validation import check_X, check_X_y_domain, require_y
from ._grids import DEFAULT_GRIDS
from ._halving import halving_results
from ._scorers import SourceAccuracyScorer

__all__ = ["ADAPTERS", "REGRESSION_METHODS", "AdaptationRegressorSelector",
           "AdaptationSelector", "candidate_grid", "default_methods",
           "default_regression_methods", "make_adapter", "method_label"]

#: method label -> ``(import path, constructor keyword arguments)`` of every adapter the selector
#: knows; ``"none"`` (no adaptation) is implicit and always a candidate.
ADAPTERS: dict[str, tuple[str, dict]] = {
    "TCA": ("shiftlearn.adaptation:TCA", {}),
    "JDA": ("shiftlearn.adaptation:JDA", {}),
    "TJM": ("shiftlearn.adaptation:TJM", {}),
    "SCA": ("shiftlearn.adaptation:SCA", {"whiten": False}),
    "uSCA": ("shiftlearn.adaptation:uSCA", {"whiten": False}),
    "RF-TCA": ("shiftlearn.adaptation:RFTCA", {"random_state": 0}),
    "RF-SCA": ("shiftlearn.adaptation:RFSCA", {"whiten": False, "random_state": 0}),
    "CORAL": ("shiftlearn.adaptation:CORAL", {}),
    "SA": ("shiftlearn.mapping:SA", {}),
    "LinOT": ("shiftlearn.mapping:LinOT", {}),
    "MultiLinOT": ("shiftlearn.mapping:MultiLinOT", {}),
    "MMD-LS": ("shiftlearn.mapping:MMDLS", {}),
    "EMD": ("shiftlearn.mapping:EMD", {}),
    "Sinkhorn": ("shiftlearn.mapping:Sinkhorn", {}),
    "ClassRegOT": ("shiftlearn.mapping:ClassRegOT", {}),
    "KMM": ("shiftlearn.reweighting:KMM", {}),
    "KLIEP": ("shiftlearn.reweighting:KLIEP", {"random_state": 0}),
    "uLSIF": ("shiftlearn.reweighting:uLSIF", {"random_state": 0}),
    "RuLSIF": ("shiftlearn.reweighting:RuLSIF", {"random_state": 0}),
    "DiscriminatorRW": ("shiftlearn.reweighting:DiscriminatorRW", {"random_state": 0}),
    "NearestNeighborRW": ("shiftlearn.reweighting:NearestNeighborRW", {}),
    "KDERW": ("shiftlearn.reweighting:KDERW", {}),
    "GaussianRW": ("shiftlearn.reweighting:GaussianRW", {}),
    # a labeler: predicts labels itself, replacing the final classifier (which it is given as
    # its estimator, so that classifier needs decision_function)
    "DASVM": ("shiftlearn.selflabeling:DASVM", {}),
    "BBSE": ("shiftlearn.labelshift:BBSE", {"random_state": 0}),
    "RLLS": ("shiftlearn.labelshift:RLLS", {"random_state": 0}),
    "MLLS": ("shiftlearn.labelshift:MLLS", {"random_state": 0}),
    "JCPOT": ("shiftlearn.labelshift:JCPOT", {}),
    # labelers: whole estimators that predict the labels and replace the classifier
    "JDOT": ("shiftlearn.mapping:JDOTClassifier", {}),
    "OTLabelProp": ("shiftlearn.mapping:OTLabelProp", {}),
}

#: labels of :data:`ADAPTERS` that ``methods="all"`` (the selector's default) leaves out until
#: the selection study has measured them as candidates; name them in ``methods`` to compare them
OPT_IN: frozenset[str] = frozenset({"SA", "LinOT", "EMD", "Sinkhorn", "ClassRegOT",
                                    # reweighting: their weights need a classifier that takes
                                    # sample_weight (the default 1NN does not)
                                    "KMM", "KLIEP", "uLSIF", "RuLSIF", "DiscriminatorRW",
                                    "NearestNeighborRW", "KDERW", "GaussianRW",
                                    # a labeler: its classifier needs decision_function (the
                                    # default 1NN has none)
                                    "DASVM",
                                    # label shift: they replace the classifier (their
                                    # estimator), and correct class proportions only
                                    "BBSE", "RLLS", "MLLS", "JCPOT",
                                    # labelers (they replace the classifier)
                                    "JDOT", "OTLabelProp",
                                    # not yet measured by the selection study
                                    "TJM", "MultiLinOT", "MMD-LS"})

#: above this many rows the sized pool takes the random-feature adapters instead of the exact
#: ones (the same models; a tuned search of the exact ones on 5,000 rows took more than 10
#: minutes on 2 cores, ``benchmarks/model_selection/auto_cost.py``)
EXACT_MAX_ROWS = 2000

#: labels of :data:`ADAPTERS` that are candidates for a regression target: the adapters whose
#: fit never reads ``y`` as classes (the subspace and mapping adapters without class terms, and
#: the reweighting family, whose weights depend on the inputs only). JDA, SCA, RF-SCA and
#: ClassRegOT use the classes of the source rows and are left out.
REGRESSION_METHODS: tuple[str, ...] = (
    "TCA", "uSCA", "RF-TCA", "CORAL", "SA", "LinOT", "EMD", "Sinkhorn",
    "KMM", "KLIEP", "uLSIF", "RuLSIF", "DiscriminatorRW", "NearestNeighborRW", "KDERW",
    "GaussianRW")

#: labels of :data:`REGRESSION_METHODS` that ``methods="all"`` of the regression selector
#: leaves out: the optimal-transport plans cost ``n_s x n_t`` memory and time per fit
REGRESSION_OPT_IN: frozenset[str] = frozenset({"EMD", "Sinkhorn"})


def default_regression_methods(n_rows: int) -> list[str]:
    """The adapters a regression search over ``n_rows`` rows compares with no adaptation by
    default (``methods="sized"`` of :class:`AdaptationRegressorSelector` and ``shiftlearn
    adapt --method auto`` on a regression target): the exact TCA and uSCA up to
    :data:`EXACT_MAX_ROWS` rows, RF-TCA above; CORAL and the two reweighting adapters that
    did best in the regression study (uLSIF and GaussianRW) always.

    Examples
    --------
    >>> default_regression_methods(300)
    ['TCA', 'uSCA', 'CORAL', 'uLSIF', 'GaussianRW']
    >>> default_regression_methods(20_000)
    ['RF-TCA', 'CORAL', 'uLSIF', 'GaussianRW']
    """
    if n_rows > EXACT_MAX_ROWS:
        return ["RF-TCA", "CORAL", "uLSIF", "GaussianRW"]
    return ["TCA", "uSCA", "CORAL", "uLSIF", "GaussianRW"]


def default_methods(n_rows: int) -> list[str]:
    """The adapters a search over ``n_rows`` rows compares with no adaptation by default (the
    size rule of ``methods="sized"`` and of ``shiftlearn adapt --method auto``): the exact TCA,
    JDA, SCA and uSCA up to :data:`EXACT_MAX_ROWS` rows, RF-TCA and RF-SCA above; CORAL
    always.

    Examples
    --------
    >>> default_methods(300)
    ['TCA', 'JDA', 'SCA', 'uSCA', 'CORAL']
    >>> default_methods(20_000)
    ['RF-TCA', 'RF-SCA', 'CORAL']
    """
    if n_rows > EXACT_MAX_ROWS:
        return ["RF-TCA", "RF-SCA", "CORAL"]
    return ["TCA", "JDA", "SCA", "uSCA", "CORAL"]


def make_adapter(method: str, random_state=0, **params):
    """A fresh adapter for a method label of :data:`ADAPTERS` (``None`` for ``"none"``).

    Examples
    --------
    >>> make_adapter("SCA", n_components=5)
    SCA(n_components=5, whiten=False)
    >>> make_adapter("none") is None
    True
    """
    import importlib

    if method == "none":
        if params:
            raise ValueError(f"'none' (no adaptation) takes no parameters, got {sorted(params)}.")
        return None
    if method not in ADAPTERS:
        raise ValueError(f"Unknown method {method!r}; choose from 'none', "
                         f"{', '.join(repr(m) for m in ADAPTERS)}.")
    target, kwargs = ADAPTERS[method]
    module, _, name = target.partition(":")
    cls = getattr(importlib.import_module(module), name)
    kw = dict(kwargs)
    if "random_state" in kw:
        kw["random_state"] = random_state
    adapter = cls(**kw)
    unknown = sorted(set(params) - set(adapter.get_params()))
    if unknown:
        raise ValueError(f"{method} has no parameter(s) {unknown}; it has "
                         f"{sorted(adapter.get_params())}.")
    return adapter.set_params(**params)


def candidate_grid(methods=("none", *ADAPTERS), *, grids=None, random_state=0) -> list[dict]:
    """``param_grid`` (a list of dicts) for ``GridSearchCV`` over
    ``DomainAdaptationClassifier``: one entry per method, ``adapter`` fixed to that method's
    adapter and ``adapter__<name>`` over its grid (keys the adapter lacks are dropped).

    Examples
    --------
    >>> grid = candidate_grid(["none", "TCA"], grids={"TCA": {"n_components": [5, 10]}})
    >>> grid[0]
    {'adapter': [None]}
    >>> grid[1]["adapter__n_components"]
    [5, 10]
    """
    grids = DEFAULT_GRIDS if grids is None else grids
    out = []
    for m in methods:
        adapter = make_adapter(m, random_state)
        entry: dict = {"adapter": [adapter]}
        if adapter is not None:
            names = adapter.get_params()
            entry.update({f"adapter__{k}": list(v) for k, v in grids.get(m, {}).items()
                          if k in names})
        out.append(entry)
    return out


def _largest_first(grid: list[dict]) -> list[dict]:
    """The grid with every ``adapter__n_components`` list sorted largest first (the same
    adapter objects), so that with a ``FitMemory`` the smaller values truncate one solve."""
    out = []
    for entry in grid:
        entry = dict(entry)
        ks = entry.get("adapter__n_components")
        if ks is not None and all(isinstance(k, Integral) for k in ks):
            entry["adapter__n_components"] = sorted(ks, reverse=True)
        out.append(entry)
    return out


def _params_key(params: dict) -> tuple:
    return tuple(sorted((k, id(v) if k == "adapter" else repr(v)) for k, v in params.items()))


def _reorder_results(search, grid: list[dict]) -> None:
    """Put ``search.cv_results_`` back in the order of ``ParameterGrid(grid)`` (the grid as
    given), so that the rows, ranks and ties are those of a search run in that order."""
    from sklearn.model_selection import ParameterGrid

    res = search.cv_results_
    position = {_params_key(p): i for i, p in enumerate(ParameterGrid(grid))}
    order = np.argsort([position[_params_key(p)] for p in res["params"]], kind="stable")
    for key, value in res.items():
        if isinstance(value, np.ndarray):
            res[key] = value[order]
        elif isinstance(value, list):
            res[key] = [value[i] for i in order]


def _final_estimator(est):
    """The estimator that receives ``sample_weight``: a ``Pipeline``'s last step, a
    ``LabeledOnly``'s estimator (read through, nested)."""
    from sklearn.pipeline import Pipeline

    from ..compose import LabeledOnly

    while isinstance(est, (Pipeline, LabeledOnly)):
        est = est.steps[-1][1] if isinstance(est, Pipeline) else est.estimator
    return est


def _check_labeler(method: str, labeler, clf) -> None:
    """Refuse up front a labeler candidate that cannot use the selector's classifier, in the
    labeler's words (``_check_estimator``, optional in the protocol), with the way out."""
    check = getattr(labeler, "_check_estimator", None)
    if not callable(check):
        return
    try:
        check(clf)
    except ValueError as exc:
        raise ValueError(f"{method}: a labeler, which replaces the classifier and fits it "
                         f"itself; {exc} Or leave {method} out of methods.") from exc


def method_label(adapter) -> str:
    """The label of :data:`ADAPTERS` an adapter's class is registered under (``"none"`` for
    ``None``, the class name for an adapter the registry does not know).

    Examples
    --------
    >>> from shiftlearn.adaptation import CORAL
    >>> method_label(CORAL()), method_label(None)
    ('CORAL', 'none')
    """
    if adapter is None:
        return "none"
    for label, (target, _) in ADAPTERS.items():
        if type(adapter).__name__ == target.partition(":")[2]:
            return label
    return type(adapter).__name__


class _SelectorBase(BaseEstimator):
    """What :class:`AdaptationSelector` and :class:`AdaptationRegressorSelector` share: the
    search (``_search``), the input check and ``predict`` of the chosen candidate, ``report``."""

    def _search(self, X, y, sd, meta, clf, default_scoring):
        """The search shared by the classification and regression selectors: ``meta`` is
        ``DomainAdaptationClassifier`` or ``DomainAdaptationRegressor``, ``clf`` the final
        estimator of every candidate, ``default_scoring`` the criterion of ``scoring=None``."""
        from ..adaptation import FitMemory
        from ._splitters import SourceKFold

        methods = self._methods(X.shape[0])
        kind = "regressor" if meta.__name__.endswith("Regressor") else "classifier"
        weighted = [m for m in methods if m != "none"
                    and callable(getattr(make_adapter(m), "compute_weights", None))]
        inner = _final_estimator(clf)
        if weighted and not has_fit_parameter(inner, "sample_weight"):
            raise ValueError(
                f"{', '.join(weighted)}: reweighting adapters, whose weights go to the "
                f"{kind}'s sample_weight, but {type(inner).__name__}.fit takes none, so "
                f"they would change nothing. Use a {kind} that takes sample_weight, e.g. "
                f"{'Ridge' if kind == 'regressor' else 'LogisticRegression'}, or leave them "
                "out of methods.")
        for m in methods:           # labelers that cannot use the classifier (JDOT with 1NN)
            if m != "none" and getattr(type(make_adapter(m)), "_replaces_estimator", False):
                _check_labeler(m, make_adapter(m), clf)
        cv = (SourceKFold(int(self.cv), random_state=self.random_state)
              if isinstance(self.cv, Integral) else self.cv)
        grid = candidate_grid(methods, grids=self.grids, random_state=self.random_state)
        mem = FitMemory() if self.memory == "auto" else self.memory
        scoring = default_scoring if self.scoring is None else self.scoring
        n_splits = cv.get_n_splits(X, y, groups=sd)
        halving = None
        try:
            with config_context(enable_metadata_routing=False), parallel_workers(self.n_jobs):
                if self.search == "halving":
                    res, winner, none, search = halving_results(
                        meta(None, clf, memory=mem), grid,
                        scoring=scoring, cv=cv, n_jobs=self.n_jobs, verbose=self.verbose,
                        random_state=self.random_state, factor=3, X=X, y=y, sd=sd)
                    halving = (winner, none)
                else:
                    search = GridSearchCV(
                        meta(None, clf, memory=mem),
                        grid if mem is None else _largest_first(grid), scoring=scoring,
                        cv=cv, n_jobs=self.n_jobs, verbose=self.verbose,
                        error_score=np.nan, refit=False)
                    search.fit(X, y, groups=sd, sample_domain=sd)
        finally:
            if self.memory == "auto":
                mem.clear()
        if halving is None:
            if mem is not None:
                _reorder_results(search, grid)
            res = dict(search.cv_results_)
            k = len(res["params"])
            res["fit_time"] = np.asarray(res["mean_fit_time"], dtype=float) * n_splits
            res["score_time"] = np.asarray(res["mean_score_time"], dtype=float) * n_splits
            res["n_fits"] = np.full(k, n_splits)
            res["n_resources"] = np.full(k, X.shape[0])
        mean = np.asarray(res["mean_test_score"], dtype=float)
        if not np.isfinite(mean).any():
            raise ValueError("Every candidate failed to fit on the validation folds; run with "
                             "verbose=1 to see why (e.g. too few labeled source rows).")
        labels = [method_label(p["adapter"]) for p in res["params"]]
        fit_time, score_time = res["fit_time"], res["score_time"]
        times = []
        summary = []
        for m in methods:
            idx = [i for i, lab in enumerate(labels) if lab == m]
            scores = np.where(np.isfinite(mean[idx]), mean[idx], -np.inf)
            j = idx[int(np.argmax(scores))]
            summary.append({"method": m, "score": float(mean[j]),
                            "std": float(res["std_test_score"][j]),
                            "params": {k.removeprefix("adapter__"): v for k, v in
                                       res["params"][j].items() if k != "adapter"},
                            "rows": int(res["n_resources"][j]), "index": j, "chosen": False})
            times.append({"method": m, "fit_time": float(fit_time[idx].sum()),
                          "score_time": float(score_time[idx].sum()),
                          "n_fits": int(np.sum(res["n_fits"][idx]))})
        if halving is None:
            best = max(range(len(summary)), key=lambda i: (np.nan_to_num(summary[i]["score"],
                                                                         nan=-np.inf), -i))
        else:       # the last round's best; its own summary row shows its full-row estimate
            winner = halving[0]
            best = methods.index(labels[winner])
            summary[best].update(score=float(mean[winner]),
                                 std=float(res["std_test_score"][winner]),
                                 params={k.removeprefix("adapter__"): v for k, v in
                                         res["params"][winner].items() if k != "adapter"},
                                 rows=int(res["n_resources"][winner]), index=winner)
            if not np.isfinite(mean[winner]):
                best = 0
        margin = 0.0
        if best != 0:
            if self.margin == "se":
                margin = float(summary[best]["std"]) / np.sqrt(n_splits)
            else:
                margin = float(self.margin)
            # adapt only when the lead over no adaptation is more than the margin
            if np.isfinite(summary[0]["score"]) and \
                    summary[best]["score"] - summary[0]["score"] <= margin:
                best = 0
        self.margin_ = margin
        summary[best]["chosen"] = True
        self.choice_ = summary[best]["method"]
        params = res["params"][summary[best]["index"]]
        est = clone(meta(None, clf)).set_params(**params)
        start = time.perf_counter()
        self.best_estimator_ = est.fit(X, y, sd)
        self.refit_time_ = time.perf_counter() - start
        self.search_ = search
        self.summary_ = summary
        self.candidate_times_ = times

    def _check_X(self, X):
        """``X`` checked against what ``fit`` saw: the number of features and, for a
        DataFrame, the column names in their order (scikit-learn's ``validate_data(...,
        reset=False)``; the chosen candidate was refitted on the checked array)."""
        check_is_fitted(self, "best_estimator_")
        return check_X(X, estimator=self, reset=False)

    def predict(self, X, sample_domain=None):
        """Predictions (labels, or values) of ``X`` from the chosen candidate (``sample_domain``
        as in :meth:`DomainAdaptationClassifier.predict
        <shiftlearn.compose.DomainAdaptationClassifier.predict>`: without it the rows are
        target rows)."""
        X = self._check_X(X)
        return self.best_estimator_.predict(X, sample_domain)

    def report(self) -> str:
        """A plain-text table of the candidates' validation estimates and the decision."""
        check_is_fitted(self, "summary_")
        lines = [f"{'method':8s} {'validation':>10s} {'± std':>7s}  best setting"]
        for row in self.summary_:
            mark = "  <- chosen" if row["chosen"] else ""
            lines.append(f"{row['method']:8s} {row['score']:10.4f} {row['std']:7.4f}  "
                         f"{row['params'] or '-'}{mark}")
        none = self.summary_[0]
        if self.choice_ == "none":
            others = [r for r in self.summary_[1:] if np.isfinite(r["score"])]
            top = max(others, key=lambda r: r["score"]) if others else None
            by = f" by more than {self.margin_:.4f}" if self.margin_ > 0 else ""
            lines.append("Decision: do not adapt. No adapter's validation estimate beats the "
                         f"raw features{by} ({none['score']:.4f}"
                         + (f"; best adapter {top['method']} {top['score']:.4f})." if top
                            else ")."))
        else:
            row = next(r for r in self.summary_ if r["chosen"])
            lines.append(f"Decision: adapt with {row['method']} ({row['score']:.4f} vs "
                         f"{none['score']:.4f} without adaptation).")
        return "\n".join(lines)


class AdaptationSelector(ClassifierMixin, _SelectorBase):
    """Adapt or not, and how: chosen among no adaptation and every adapter without target labels.

    Parameters
    ----------
    methods : "all", "sized" or list of str, default="all"
        Candidate methods: ``"none"`` (the raw features) and labels of :data:`ADAPTERS`
        (``"TCA"``, ``"JDA"``, ``"SCA"``, ``"uSCA"``, ``"RF-TCA"``, ``"RF-SCA"``,
        ``"CORAL"``, ...). ``"all"``: every adapter but the opt-in ones; ``"sized"``: the
        size rule of :func:`default_methods` (the command line's default). ``"none"`` is
        added if missing: not adapting is always a candidate.
    classifier : classifier or None, default=None
        The same classifier for every candidate; ``None`` is 1-nearest-neighbour.
    scoring : str, callable or None, default=None
        The target-label-free criterion, as ``scoring=`` of ``GridSearchCV``. ``None``: the
        classifier's accuracy on the held-out labeled source rows (source CV, the papers'
        protocol): :class:`~shiftlearn.model_selection.SourceAccuracyScorer`, which predicts
        them as source rows. The selection study's best criterion is
        :class:`~shiftlearn.model_selection.CircularValidation` with 1NN and
        :class:`~shiftlearn.model_selection.MMDScorer` with logistic regression (the command
        line's defaults; docs/model_selection.md).
    cv : int or splitter, default=5
        An int is :class:`~shiftlearn.model_selection.SourceKFold` with that many folds; any
        domain-aware splitter (``LeaveOneDomainOut``, ``ClusterSplit``, ...) can be given.
    grids : dict or None, default=None
        ``method -> {parameter: values}``; ``None`` uses
        :data:`~shiftlearn.model_selection.DEFAULT_GRIDS`. ``{}`` searches defaults only.
    random_state : int, default=0
        Seeds the random-feature adapters and the folds.
    n_jobs : int or None, default=None
        Parallel workers for the candidates' fits (``GridSearchCV``'s, joblib's convention:
        ``None`` is 1, ``-1`` every core); threads unless a backend is chosen with
        ``joblib.parallel_config`` (see the module docstring). The choice and the estimates do
        not depend on it.
    verbose : int, default=0
        Passed to ``GridSearchCV``.
    margin : "se" or float, default=0.0
        How much the best adapter's validation estimate must exceed no adaptation's for the
        selector to adapt: a number in the criterion's units, or ``"se"``, the best adapter's
        standard error over the folds (its ``std / sqrt(n_splits)``, the one-standard-error
        rule). With ``0.0`` the best estimate wins (ties go to no adaptation). ``"se"`` is the
        cautious choice (``shiftlearn adapt --margin se``): a lead within the folds' noise is
        not evidence that adapting helps.
    memory : "auto", FitMemory or None, default="auto"
        ``"auto"``: a new :class:`~shiftlearn.adaptation.FitMemory` for each ``fit``, shared
        by every candidate and fold and emptied at the end (see the module docstring); a
        ``FitMemory``: that one (kept, e.g. across several selections on the same data);
        ``None``: every fit from scratch. The choice and the estimates are the same.
    search : {"grid", "halving"}, default="grid"
        ``"grid"``: every candidate on every row of every fold. ``"halving"``: successive
        halving (scikit-learn's ``HalvingGridSearchCV`` on the rows, factor 3): every
        candidate on a subsample of each fold, the best third on three times the rows, and so
        on; then the last round's best and no adaptation are scored on every row of the same
        folds (the full grid's estimates of those two) and the margin decides between them.
        Fewer fits, at the price of ranking most candidates on fewer rows.

    Attributes
    ----------
    search_ : the fitted ``GridSearchCV`` (``HalvingGridSearchCV`` with ``search="halving"``).
    best_estimator_ : the chosen ``DomainAdaptationClassifier``, refitted on all rows.
    choice_ : str, the chosen method (``"none"`` means: do not adapt).
    margin_ : float, the margin applied (``"se"`` resolved to a number).
    summary_ : list of dict, one per method: ``method``, ``score`` (best mean validation
        estimate), ``std``, ``params``, ``rows`` (rows the estimate was made on: all of them,
        except for the methods successive halving stopped early) and ``chosen``; in ``methods``
        order.
    candidate_times_ : list of dict, one per method, in ``summary_`` order: ``method``,
        ``fit_time`` and ``score_time`` (seconds spent fitting and scoring it, summed over its
        settings and the folds: ``mean_fit_time`` and ``mean_score_time`` of
        ``search_.cv_results_`` times the number of folds) and ``n_fits``. With ``n_jobs > 1``
        the workers' seconds overlap, so their sum exceeds the wall time.
    refit_time_ : float, seconds to refit the chosen candidate on all rows.
    classes_ : ndarray
    n_features_in_ : int
    feature_names_in_ : ndarray of str
        Only when ``X`` had string column names (a DataFrame); ``predict``,
        ``predict_proba`` and ``score`` then refuse columns in another order.

    Examples
    --------
    >>> from shiftlearn.datasets import make_sca_toy
    >>> X, y, sd = make_sca_toy(n_per_cluster=15, random_state=0)
    >>> sel = AdaptationSelector(methods=["TCA"], grids={"TCA": {"n_components": [1, 2]}},
    ...                          cv=3).fit(X, y, sd)
    >>> [row["method"] for row in sel.summary_]
    ['none', 'TCA']
    >>> sel.predict(X[sd < 0]).shape
    (45,)
    """

    # scikit-learn metadata routing: sample_domain is requested by default, so
    # GridSearchCV(...).fit(X, y, sample_domain=sd) routes it here when routing is on
    __metadata_request__fit = {"sample_domain": True}
    # and, as DomainAdaptationClassifier's, to score and the prediction methods
    __metadata_request__score = {"sample_domain": True}
    __metadata_request__predict = {"sample_domain": True}
    __metadata_request__predict_proba = {"sample_domain": True}

    _parameter_constraints: dict = {
        "methods": [StrOptions({"all", "sized"}), list, tuple],
        "classifier": [HasMethods(["fit", "predict"]), None],
        "scoring": [str, callable, None],
        "cv": [Interval(Integral, 2, None, closed="left"), HasMethods(["split"])],
        "grids": [dict, None],
        "random_state": [Interval(Integral, 0, None, closed="left")],
        "n_jobs": [Integral, None],
        "verbose": [Interval(Integral, 0, None, closed="left")],
        "memory": [StrOptions({"auto"}), HasMethods(["nested_solve"]), None],
        "margin": [StrOptions({"se"}), Interval(Real, 0, None, closed="left")],
        "search": [StrOptions({"grid", "halving"})],
    }

    def __init__(self, methods="all", classifier=None, scoring=None, cv=5, grids=None,
                 random_state=0, n_jobs=None, verbose=0, memory="auto", margin=0.0,
                 search="grid"):
        self.methods = methods
        self.classifier = classifier
        self.scoring = scoring
        self.cv = cv
        self.grids = grids
        self.random_state = random_state
        self.n_jobs = n_jobs
        self.verbose = verbose
        self.memory = memory
        self.margin = margin
        self.search = search

    def _methods(self, n_rows: int = 0) -> list[str]:
        if self.methods == "sized":
            return ["none", *default_methods(n_rows)]
        ms = ([m for m in ADAPTERS if m not in OPT_IN] if self.methods == "all"
              else list(self.methods))
        for m in ms:
            if m != "none" and m not in ADAPTERS:
                raise ValueError(f"Unknown method {m!r}; choose from 'none', "
                                 f"{', '.join(repr(a) for a in ADAPTERS)}.")
        return ["none", *[m for m in ms if m != "none"]]

    def fit(self, X, y, sample_domain=None):
        """Score every candidate on the validation folds and refit the best on all rows."""
        from sklearn.neighbors import KNeighborsClassifier

        from ..compose import DomainAdaptationClassifier

        check_params(self)
        require_y(y, self, ": give the labels of the source rows and -1 (or NaN) for the "
                           "unlabeled target rows.")
        X, y, sd = check_X_y_domain(X, y, sample_domain, task="classification",
                                    estimator=self)
        clf = KNeighborsClassifier(1) if self.classifier is None else clone(self.classifier)
        self._search(X, y, sd, DomainAdaptationClassifier, clf, SourceAccuracyScorer())
        self.classes_ = self.best_estimator_.classes_
        return self

    def predict_proba(self, X, sample_domain=None):
        """Class probabilities from the chosen candidate (when its classifier has them)."""
        X = self._check_X(X)
        return self.best_estimator_.predict_proba(X, sample_domain)

    def score(self, X, y, sample_weight=None, sample_domain=None):
        """Accuracy of the chosen candidate on the rows of ``X`` that carry a label.

        The rule of :meth:`DomainAdaptationClassifier.score
        <shiftlearn.compose.DomainAdaptationClassifier.score>`: unlabeled rows (``y = -1``,
        NaN, ...) are skipped, never counted as errors, and without ``sample_domain`` a ``y``
        that also marks unlabeled rows is a validation fold whose labeled rows are source rows
        (:func:`shiftlearn._validation.scoring_domains`). So ``cross_val_score`` and nested
        cross-validation of the selector give the candidates' own scores."""
        X = self._check_X(X)
        return self.best_estimator_.score(X, y, sample_weight=sample_weight,
                                          sample_domain=sample_domain)


class AdaptationRegressorSelector(RegressorMixin, _SelectorBase):
    """Adapt or not, and how, for a regression target: chosen among no adaptation and every
    adapter that does not read the labels as classes, without target values.

    The regression counterpart of :class:`AdaptationSelector` (the same search, folds, margin
    and tie rule): one ``GridSearchCV`` over ``DomainAdaptationRegressor(adapter, regressor)``,
    each candidate scored by a target-value-free criterion, the winner refitted on all rows.
    Unlabeled target rows are ``y = NaN`` (``-1`` is a value).

    Parameters
    ----------
    methods : "all", "sized" or list of str, default="all"
        Candidate methods: ``"none"`` and labels of :data:`REGRESSION_METHODS` (TCA, uSCA,
        RF-TCA, CORAL, SA, LinOT, EMD, Sinkhorn and the reweighting family). ``"all"``: every
        one but EMD and Sinkhorn; ``"sized"``: :func:`default_regression_methods`. A method
        that needs classes (JDA, SCA, RF-SCA, ClassRegOT) is refused.
    regressor : regressor or None, default=None
        The same regressor for every candidate; ``None`` is ``Ridge()``.
    scoring : str, callable or None, default=None
        The criterion, greater is better. ``None``: minus the mean squared error on the
        held-out labeled source rows (:class:`~shiftlearn.model_selection.SourceMSEScorer`);
        :class:`~shiftlearn.model_selection.ImportanceWeightedMSEScorer` and
        :class:`~shiftlearn.model_selection.ReverseValidationMSEScorer` use the target rows.
    cv, grids, random_state, n_jobs, verbose, margin, memory, search
        As in :class:`AdaptationSelector`; ``margin`` is in the criterion's units (squared
        units of the label for the MSE criteria).

    Attributes
    ----------
    search_, best_estimator_, choice_, margin_, summary_, candidate_times_, refit_time_
        As in :class:`AdaptationSelector` (``best_estimator_`` a
        ``DomainAdaptationRegressor``; the ``score`` entries of ``summary_`` are the
        criterion's, minus an MSE for the built-in ones).
    n_features_in_ : int
    feature_names_in_ : ndarray of str
        Only when ``X`` had string column names.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> X = np.r_[rng.normal(0, 1, (60, 2)), rng.normal(1, 1, (60, 2))]
    >>> y = np.r_[X[:60] @ [1.0, 2.0], np.full(60, np.nan)]
    >>> sel = AdaptationRegressorSelector(methods=["CORAL"], cv=3).fit(X, y)
    >>> [row["method"] for row in sel.summary_]
    ['none', 'CORAL']
    >>> sel.predict(X[60:]).shape
    (60,)
    """

    __metadata_request__fit = {"sample_domain": True}
    __metadata_request__score = {"sample_domain": True}
    __metadata_request__predict = {"sample_domain": True}

    _parameter_constraints: dict = {
        **{k: v for k, v in AdaptationSelector._parameter_constraints.items()
           if k != "classifier"},
        "regressor": [HasMethods(["fit", "predict"]), None],
    }

    def __init__(self, methods="all", regressor=None, scoring=None, cv=5, grids=None,
                 random_state=0, n_jobs=None, verbose=0, memory="auto", margin=0.0,
                 search="grid"):
        self.methods = methods
        self.regressor = regressor
        self.scoring = scoring
        self.cv = cv
        self.grids = grids
        self.random_state = random_state
        self.n_jobs = n_jobs
        self.verbose = verbose
        self.memory = memory
        self.margin = margin
        self.search = search

    def _methods(self, n_rows: int = 0) -> list[str]:
        if self.methods == "sized":
            return ["none", *default_regression_methods(n_rows)]
        ms = ([m for m in REGRESSION_METHODS if m not in REGRESSION_OPT_IN]
              if self.methods == "all" else list(self.methods))
        for m in ms:
            if m != "none" and m not in REGRESSION_METHODS:
                why = (" needs classes (it reads y as class labels)" if m in ADAPTERS
                       else " is unknown")
                raise ValueError(f"Method {m!r}{why}; for a regression target choose from "
                                 f"'none', {', '.join(repr(a) for a in REGRESSION_METHODS)}.")
        return ["none", *[m for m in ms if m != "none"]]

    def fit(self, X, y, sample_domain=None):
        """Score every candidate on the validation folds and refit the best on all rows.
        ``y``: the source rows' values, NaN on the unlabeled target rows."""
        from sklearn.linear_model import Ridge

        from ..compose import DomainAdaptationRegressor
        from ._scorers_regression import SourceMSEScorer

        check_params(self)
        require_y(y, self, ": give the values of the source rows and NaN for the unlabeled "
                           "target rows.")
        X, y, sd = check_X_y_domain(X, _float_values(y, self), sample_domain,
                                    task="regression", estimator=self)
        y = np.asarray(y, dtype=np.float64)
        if not np.any((sd > 0) & ~np.isnan(y)):
            raise ValueError("No labeled source rows: give rows with a positive sample_domain "
                             "and a value (y = NaN marks unlabeled rows).")
        reg = Ridge() if self.regressor is None else clone(self.regressor)
        self._search(X, y, sd, DomainAdaptationRegressor, reg, SourceMSEScorer())
        return self

    def score(self, X, y, sample_weight=None, sample_domain=None):
        """R^2 of the chosen candidate on the rows of ``X`` whose ``y`` is not NaN (the rule
        of :meth:`DomainAdaptationRegressor.score
        <shiftlearn.compose.DomainAdaptationRegressor.score>`)."""
        X = self._check_X(X)
        return self.best_estimator_.score(X, y, sample_weight=sample_weight,
                                          sample_domain=sample_domain)


def _float_values(y, est) -> np.ndarray:
    """``y`` as float64 (NaN kept), or a ``ValueError`` naming the fix for text labels."""
    arr = np.asarray(y)
    if arr.dtype.kind == "c":
        raise ValueError(f"{type(est).__name__}: Complex data not supported in y; give real "
                         "numbers (NaN for the unlabeled rows).")
    try:
        return arr.astype(np.float64)
    except (TypeError, ValueError):
        raise ValueError(f"{type(est).__name__} needs numeric values (NaN for the unlabeled "
                         f"rows), got values of dtype {arr.dtype}; for class labels use "
                         "AdaptationSelector.") from None
