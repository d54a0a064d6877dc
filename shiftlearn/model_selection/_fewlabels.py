"""Choose a method on a few labeled target rows: ``FewLabelSelector``.

The candidates learn from labeled source rows and a few labeled target rows: the few-labels
family (:mod:`shiftlearn.fewlabels`), the multi-task boosting of Becker et al.
(:class:`~shiftlearn.boosting.MultiTaskBoostingClassifier`), the baselines (target only,
source only, pooled, pooled with the target rows weighted up) and the adapters of
:data:`~shiftlearn.model_selection.ADAPTERS` followed by a classifier trained on the source and
labeled target rows in the adapted space. Each is scored by cross-validation over the labeled
target rows only: a validation fold's labels are hidden (its rows stay in training as
unlabeled target rows, as the rows to predict do in the final fit), the candidate is fitted on
every row and scored on the fold. The split rule: stratified K-fold, repeated when the rows are
few, when every class has at least two labeled target rows; leave-one-out over the labeled
target rows otherwise. The best mean accuracy wins (ties go to the earlier candidate in
``methods`` order) and is refitted on every row. When a class has a single labeled target row
nothing is chosen by default: leave-one-out would hold out that class's only label, so the
one-label default (:data:`SINGLE_LABEL_DEFAULT`) is fitted and scored alone.

Contract: no target label of a validation fold reaches the candidates' fit on that fold; the
estimate of the winner is optimistic (the same labels chose it): :func:`nested_estimate` gives
one that is not. Design notes: ``docs/dev/fewlabels.md``.
"""

from __future__ import annotations

import time
from numbers import Integral, Real
from typing import NamedTuple

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin, clone
from sklearn.utils.metaestimators import available_if
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted

from .._constraints import HasMethods, Interval, StrOptions, check_params
from .._validation import (
    check_X,
    check_X_y_domain,
    label_array,
    require_y,
    unlabeled_mask,
)
from .._weights import weight_params

__all__ = ["FEWLABEL_DEFAULT", "FEWLABEL_METHODS", "SINGLE_LABEL_DEFAULT", "Estimate",
           "FewLabelSelector", "few_label_folds", "make_few_label_candidate",
           "nested_estimate"]

#: the baselines: which labeled rows train the classifier
BASELINES = ("target-only", "source-only", "pooled", "pooled-weighted")
#: the few-labels family and the multi-task boosting
FAMILY = ("FeatureAugmentation", "TrAdaBoost", "RegularTransferLC", "LinInt",
          "MultiTaskBoosting")
#: adapters that map rows (no reweighting adapter: their weights fit the source to the target
#: marginal, which the labeled target rows already are)
ADAPTER_CANDIDATES = ("CORAL", "SA", "TCA", "JDA", "SCA", "uSCA", "RF-TCA", "RF-SCA", "LinOT",
                      "EMD", "Sinkhorn", "ClassRegOT")
#: every candidate name ``methods`` accepts
FEWLABEL_METHODS = (*FAMILY, *BASELINES, *ADAPTER_CANDIDATES)
#: ``methods="default"``: the cheap candidates, the study's best first (ties go to the earlier)
FEWLABEL_DEFAULT = ("FeatureAugmentation", "pooled", "RegularTransferLC", "LinInt",
                    "pooled-weighted", "target-only", "source-only", "CORAL", "SA")
#: fitted without a choice when a class has a single labeled target row
#: (``single_label="default"``): the best single method at one label per class
SINGLE_LABEL_DEFAULT = "pooled-weighted"


class Estimate(NamedTuple):
    """An accuracy estimated on the labeled target rows: ``accuracy``, its standard error
    ``se`` (NaN with one row) and the number of labeled rows ``rows`` it is made on."""

    accuracy: float
    se: float
    rows: int


class _Rows(ClassifierMixin, BaseEstimator):
    """A baseline: ``estimator`` fitted on some labeled rows (``rows``: ``"target-only"``,
    ``"source-only"``, ``"pooled"``, ``"pooled-weighted"``: pooled with every labeled target
    row weighing ``n_source / n_target`` so that the two domains weigh the same)."""

    __metadata_request__fit = {"sample_domain": True}

    def __init__(self, rows="pooled", estimator=None):
        self.rows = rows
        self.estimator = estimator

    def fit(self, X, y, sample_domain):
        from sklearn import config_context
        from sklearn.linear_model import LogisticRegression

        lab = y >= 0
        src, tgt = lab & (sample_domain > 0), lab & (sample_domain < 0)
        keep = {"target-only": tgt, "source-only": src}.get(self.rows, src | tgt)
        if not keep.any():
            raise ValueError(f"{self.rows}: no labeled row to train on.")
        est = clone(LogisticRegression() if self.estimator is None else self.estimator)
        kw = {}
        if self.rows == "pooled-weighted" and src.any() and tgt.any():
            w = np.where(tgt, src.sum() / tgt.sum(), 1.0)[keep]
            kw = weight_params(est, w)
        if np.unique(y[keep]).size < 2:
            from sklearn.dummy import DummyClassifier

            est = DummyClassifier(strategy="prior")
            kw = {}
        with config_context(enable_metadata_routing=False):
            self.estimator_ = est.fit(X[keep], y[keep], **kw)
        self.classes_ = self.estimator_.classes_
        return self

    def predict(self, X):
        return self.estimator_.predict(X)

    @available_if(lambda self: hasattr(self.estimator_, "predict_proba"))
    def predict_proba(self, X):
        return self.estimator_.predict_proba(X)


class _Prefit:
    """A fitted adapter handed to every clone of a candidate: scikit-learn's ``clone``
    deep-copies a parameter that is not an estimator, and this one copies as itself."""

    def __init__(self, adapter):
        self.adapter = adapter

    def __copy__(self):
        return self

    def __deepcopy__(self, memo):
        return self

    def __repr__(self) -> str:
        return f"_Prefit({self.adapter!r})"


class _AdaptThenClassify(ClassifierMixin, BaseEstimator):
    """An adapter fitted on every row (the target labels hidden from it), then ``estimator``
    on the adapted source rows and labeled target rows (each row mapped as its domain).

    The adapter sees the source labels only, so its fit is the same in every validation fold
    of a :class:`FewLabelSelector` (the folds hide target labels) and in the refit: the
    selector fits it once and hands it over as ``prefit``, which must have been fitted on the
    same ``X``, source labels and ``sample_domain``."""

    __metadata_request__fit = {"sample_domain": True}

    def __init__(self, adapter=None, estimator=None, prefit=None):
        self.adapter = adapter
        self.estimator = estimator
        self.prefit = prefit

    def _fit_adapter(self, X, y, sample_domain):
        """The adapter fitted on ``X`` with the target labels hidden."""
        return clone(self.adapter).fit(X, np.where(sample_domain > 0, y, -1),
                                       sample_domain=sample_domain)

    def _map(self, X, sd):
        import inspect

        if "sample_domain" in inspect.signature(self.adapter_.transform).parameters:
            return self.adapter_.transform(X, sample_domain=sd)
        return self.adapter_.transform(X)

    def fit(self, X, y, sample_domain):
        from sklearn.linear_model import LogisticRegression

        lab = y >= 0
        self.adapter_ = (self.prefit.adapter if self.prefit is not None
                         else self._fit_adapter(X, y, sample_domain))
        Z = self._map(X, sample_domain)
        est = clone(LogisticRegression() if self.estimator is None else self.estimator)
        self.estimator_ = est.fit(Z[lab], y[lab])
        self.classes_ = self.estimator_.classes_
        return self

    def predict(self, X):
        return self.estimator_.predict(self._map(X, np.full(X.shape[0], -1)))

    @available_if(lambda self: hasattr(self.estimator_, "predict_proba"))
    def predict_proba(self, X):
        return self.estimator_.predict_proba(self._map(X, np.full(X.shape[0], -1)))


def make_few_label_candidate(method: str, estimator=None, random_state: int = 0):
    """The unfitted candidate of a name of :data:`FEWLABEL_METHODS`.

    Every candidate fits as ``fit(X, y, sample_domain)`` (``y = -1`` on the unlabeled rows)
    and predicts target rows with ``predict(X)``. ``estimator`` (``None``:
    ``LogisticRegression()``) is the classifier of the baselines, of FeatureAugmentation,
    TrAdaBoost and LinInt, and of the adapter pairs; RegularTransferLC is a logistic model by
    definition and MultiTaskBoosting boosts its own stumps.

    Examples
    --------
    >>> make_few_label_candidate("FeatureAugmentation")
    FeatureAugmentation()
    """
    from ..boosting import MultiTaskBoostingClassifier
    from ..fewlabels import FeatureAugmentation, LinInt, RegularTransferLC, TrAdaBoost
    from ._select import make_adapter

    est = None if estimator is None else clone(estimator)
    if method in BASELINES:
        return _Rows(method, est)
    if method == "FeatureAugmentation":
        return FeatureAugmentation(est)
    if method == "TrAdaBoost":
        return TrAdaBoost(est, random_state=random_state)
    if method == "RegularTransferLC":
        return RegularTransferLC()
    if method == "LinInt":
        return LinInt(est, random_state=random_state)
    if method == "MultiTaskBoosting":
        return MultiTaskBoostingClassifier(n_estimators=100, learning_rate=0.5)
    if method in ADAPTER_CANDIDATES:
        return _AdaptThenClassify(make_adapter(method, random_state), est)
    raise ValueError(f"Unknown method {method!r}; choose from "
                     f"{', '.join(repr(m) for m in FEWLABEL_METHODS)}.")


def few_label_folds(y_labeled: np.ndarray, n_splits: int = 5, n_repeats="auto",
                    random_state: int = 0) -> tuple[list[np.ndarray], int, str]:
    """The validation folds over ``m`` labeled target rows (``y_labeled``, their labels):
    ``(folds, n_repeats, rule)``, each fold an array of positions in ``0..m-1``; each repeat's
    folds cover every row once.

    Every class with at least two rows: stratified ``min(n_splits, smallest class)``-fold,
    repeated ``n_repeats`` times with fresh shuffles (``"auto"``: ``ceil(30 / m)`` clipped to
    ``[1, 5]``). A class with one row: leave-one-out (one repeat). ``rule`` says which in words.

    Examples
    --------
    >>> folds, r, rule = few_label_folds(np.array([0, 1, 1]))
    >>> len(folds), rule
    (3, 'leave-one-out over the 3 labeled target rows (a class has a single label)')
    """
    from sklearn.model_selection import StratifiedKFold

    m = y_labeled.shape[0]
    _, counts = np.unique(y_labeled, return_counts=True)
    if counts.min() < 2:
        folds = [np.array([i]) for i in range(m)]
        return folds, 1, (f"leave-one-out over the {m} labeled target row"
                          f"{'s' if m != 1 else ''} (a class has a single label)")
    k = int(min(n_splits, counts.min()))
    r = int(np.clip(np.ceil(30 / m), 1, 5)) if n_repeats == "auto" else int(n_repeats)
    folds = []
    for rep in range(r):
        skf = StratifiedKFold(k, shuffle=True, random_state=random_state + rep)
        folds += [val for _, val in skf.split(np.zeros((m, 1)), y_labeled)]
    rep_words = f", repeated {r} times" if r > 1 else ""
    return folds, r, f"stratified {k}-fold{rep_words} over the {m} labeled target rows"


def _fit_score(cand, X, y, sd, val_rows):
    """Fit ``cand`` with the labels of ``val_rows`` hidden; its correct (1) / wrong (0)
    predictions of those rows, or the exception's text."""
    y_train = y.copy()
    y_train[val_rows] = -1
    t0 = time.perf_counter()
    try:
        est = clone(cand).fit(X, y_train, sd)
        pred = est.predict(X[val_rows])
    except Exception as exc:  # noqa: BLE001 - a failing candidate is scored NaN with its reason
        return None, " ".join(str(exc).split())[:240] or type(exc).__name__, 0.0
    return (np.asarray(pred) == y[val_rows]).astype(float), "", time.perf_counter() - t0


class FewLabelSelector(ClassifierMixin, BaseEstimator):
    """Choose among the few-labels methods by cross-validation over the labeled target rows.

    ``fit(X, y, sample_domain)``: source rows (positive ``sample_domain``) labeled, target
    rows (negative) labeled for a few and ``-1`` for the others. Each candidate is scored by
    its accuracy on held-out labeled target rows: in each validation fold the held-out rows'
    labels are hidden, the candidate is fitted on every row (all source rows, the other
    labeled target rows, every unlabeled target row) and predicts the held-out rows. The split
    (:func:`few_label_folds`): stratified K-fold, repeated when the rows are few, when every
    class has two labeled target rows; leave-one-out over the labeled target rows otherwise.
    The best mean accuracy wins (ties: the earlier in ``methods``) and is refitted on every row.
    With a class of a single labeled target row no choice is made (``single_label``).

    Parameters
    ----------
    methods : "default", "all" or list of str, default="default"
        Candidate names (:data:`FEWLABEL_METHODS`): ``"FeatureAugmentation"``,
        ``"TrAdaBoost"``, ``"RegularTransferLC"``, ``"LinInt"``, ``"MultiTaskBoosting"``, the
        baselines ``"target-only"``, ``"source-only"``, ``"pooled"``, ``"pooled-weighted"``,
        and adapters (``"CORAL"``, ``"SA"``, ``"TCA"``, ...: the adapter, then ``estimator``
        on the adapted source and labeled target rows). ``"default"``:
        :data:`FEWLABEL_DEFAULT`; ``"all"``: every name.
    estimator : classifier or None, default=None
        The classifier of the candidates that take one (see
        :func:`make_few_label_candidate`); ``None`` is ``LogisticRegression()``.
    n_splits : int, default=5
        Folds of the stratified split (fewer when a class has fewer labeled target rows).
    n_repeats : int or "auto", default="auto"
        Repeats of the stratified split; ``"auto"``: ``ceil(30 / m)`` clipped to ``[1, 5]``
        for ``m`` labeled target rows.
    random_state : int, default=0
        Seeds the folds and the candidates that draw.
    n_jobs : int or None, default=None
        Parallel workers over the candidates' fold fits (joblib's convention); the choice does
        not depend on it.
    margin : "se" or float, default=0.0
        The winner is the earliest candidate in ``methods`` whose mean accuracy is at least
        the best mean minus ``margin``: ``0.0`` takes the best (ties to the earlier);
        ``"se"``, the best candidate's standard error (the one-standard-error rule: with a few
        labels, a lead within the noise does not displace an earlier candidate).
    single_label : {"default", "cv"}, default="default"
        When a class has a single labeled target row. ``"default"``: no choice; the one-label
        default (:data:`SINGLE_LABEL_DEFAULT` if it is among ``methods``, else the first of
        ``methods``) is fitted, and scored alone by leave-one-out (a pessimistic estimate: its
        folds hold out a class's only label, which the final fit keeps). ``"cv"``: choose by
        leave-one-out over the labeled target rows like any other split. Leave-one-out ranks
        the candidates by a situation the final fit never faces, to the cost of those that
        learn most from the target labels, which is why it does not choose by default.

    Attributes
    ----------
    cv_results_ : dict of lists, one entry per candidate in ``methods`` order: ``method``,
        ``mean_test_score`` (accuracy over the labeled target rows, averaged over the
        repeats), ``se_test_score``, ``rank_test_score``, ``fit_time`` (seconds, all folds),
        ``error`` (why a candidate failed, else ``""``), ``row_test_scores`` (each labeled
        target row's correctness averaged over the repeats, in the order of the labeled target
        rows in ``X``; all NaN for a failed or unscored candidate): the rows the means and
        standard errors are made of, so that another rule (a paired comparison) can be read
        from the same fits; ``scored`` (False for a candidate left unscored, see
        ``single_label``).
    best_method_ : str
    best_estimator_ : the chosen candidate refitted on every row.
    estimate_ : :class:`Estimate`, the winner's cross-validated accuracy and standard error
        (over the labeled target rows' mean correctness). Optimistic: the same labels chose
        the winner (:func:`nested_estimate` is not); for the one-label default, which nothing
        chose, pessimistic (its folds hold out a class's only label).
    split_rule_ : str, the split used, in words.
    single_label_default_ : bool, True when a class had a single labeled target row and the
        one-label default was fitted without a choice (the other candidates are not scored:
        ``cv_results_["scored"]`` is False for them, their scores NaN and their ranks tied
        last). Should the default fail (an ``estimator`` without the ``sample_weight`` it
        needs), the next candidate in ``methods`` order is fitted instead, and so on.
    margin_ : float, the margin applied (``"se"`` resolved to a number).
    n_repeats_ : int
    classes_ : ndarray
    n_features_in_, feature_names_in_ : as scikit-learn records them.

    Raises
    ------
    ValueError
        No labeled target row (use :class:`AdaptationSelector` for unlabeled targets), no
        source row, a labeled target class the source rows do not have, every candidate
        failing.

    Notes
    -----
    Cost: ``(folds + 1)`` fits of each candidate on every row, ``folds`` being ``m`` with
    leave-one-out and ``K * n_repeats`` otherwise; ``m + 1`` fits of the one-label default
    alone when it is fitted without a choice.

    References
    ----------
    Kohavi, "A study of cross-validation and bootstrap for accuracy estimation and model
    selection", IJCAI 1995 (stratified and repeated K-fold). Varma & Simon, "Bias in error
    estimation when using cross-validation for model selection", BMC Bioinformatics 2006 (the
    selected model's CV estimate is optimistic; nested CV is not).

    Examples
    --------
    >>> import numpy as np
    >>> from shiftlearn.model_selection import FewLabelSelector
    >>> rng = np.random.default_rng(0)
    >>> y = np.tile([0, 1], 40)
    >>> X = rng.normal(size=(80, 2)) + 3 * y[:, None]
    >>> sd = np.r_[np.ones(40, int), -np.ones(40, int)]
    >>> y_fit = y.copy(); y_fit[46:] = -1           # 6 labeled target rows
    >>> sel = FewLabelSelector(methods=["pooled", "target-only"]).fit(X, y_fit, sd)
    >>> sel.best_method_, sel.split_rule_
    ('pooled', 'stratified 3-fold, repeated 5 times over the 6 labeled target rows')
    """

    __metadata_request__fit = {"sample_domain": True}

    _parameter_constraints: dict = {
        "methods": [StrOptions({"default", "all"}), list, tuple],
        "estimator": [HasMethods(["fit", "predict"]), None],
        "n_splits": [Interval(Integral, 2, None, closed="left")],
        "n_repeats": [Interval(Integral, 1, None, closed="left"), StrOptions({"auto"})],
        "random_state": [Interval(Integral, 0, None, closed="left")],
        "n_jobs": [Integral, None],
        "margin": [StrOptions({"se"}), Interval(Real, 0, None, closed="left")],
        "single_label": [StrOptions({"default", "cv"})],
    }

    def __init__(self, methods="default", estimator=None, n_splits=5, n_repeats="auto",
                 random_state=0, n_jobs=None, margin=0.0, single_label="default"):
        self.methods = methods
        self.estimator = estimator
        self.n_splits = n_splits
        self.n_repeats = n_repeats
        self.random_state = random_state
        self.n_jobs = n_jobs
        self.margin = margin
        self.single_label = single_label

    def _methods(self) -> list[str]:
        ms = {"default": list(FEWLABEL_DEFAULT), "all": list(FEWLABEL_METHODS)}.get(
            self.methods) if isinstance(self.methods, str) else list(self.methods)
        bad = [m for m in ms if m not in FEWLABEL_METHODS]
        if bad or not ms:
            raise ValueError(f"methods: unknown {bad or '(none given)'}; choose from "
                             f"{', '.join(FEWLABEL_METHODS)}, or 'default' or 'all'.")
        return list(dict.fromkeys(ms))

    def _rows(self, X, y, sample_domain):
        """Validated ``X``, class codes (``-1`` unlabeled), ``sample_domain``."""
        check_params(self)
        require_y(y, self, ": give the labels of the source rows and of the few labeled "
                           "target rows, and -1 (or NaN) for the other target rows.")
        X, y, sd = check_X_y_domain(X, y, sample_domain, task="classification",
                                    estimator=self)
        unl = unlabeled_mask(y, task="classification")
        check_classification_targets(y[~unl])       # a continuous y is refused
        tgt = (sd < 0) & ~unl
        if not tgt.any():
            how = ("" if sample_domain is not None else " sample_domain was not given, so "
                   "every labeled row was read as a source row (skada's rule).")
            raise ValueError(
                "FewLabelSelector chooses on labeled target rows, and there is none: no row "
                f"has a negative sample_domain and a label.{how} Pass sample_domain and keep "
                "the target labels you know; with no target label at all use "
                "AdaptationSelector (shiftlearn adapt --method auto), which chooses without "
                "them.")
        src = sd > 0                   # at least one (check_X_y_domain refuses none)
        classes = np.unique(y[~unl])
        codes = np.full(y.shape[0], -1, dtype=np.int64)
        codes[~unl] = np.searchsorted(classes, y[~unl])
        missing = sorted(set(codes[tgt].tolist()) - set(codes[src].tolist()))
        if missing:
            names = [classes[c].item() if isinstance(classes[c], np.generic) else classes[c]
                     for c in missing]
            raise ValueError(
                f"labeled target rows of class(es) {names} that no source row has: the "
                "candidates that learn from the source could never predict them, so their "
                "comparison would be unfair. Give source rows of those classes, or leave those "
                "target labels empty (-1).")
        return X, codes, sd, classes

    def fit(self, X, y, sample_domain=None):
        """Score the candidates on the labeled target rows' folds (the one-label default alone
        when a class has a single label, see ``single_label``); refit the chosen one on all
        rows."""
        from joblib import Parallel, delayed

        X, codes, sd, classes = self._rows(X, y, sample_domain)
        methods = self._methods()
        lab = np.flatnonzero((sd < 0) & (codes >= 0))
        folds, r, rule = few_label_folds(codes[lab], self.n_splits, self.n_repeats,
                                         self.random_state)
        cands = [make_few_label_candidate(m, self.estimator, self.random_state) for m in methods]
        times = np.zeros(len(cands))
        single = (len(methods) > 1 and self.single_label == "default"
                  and np.unique(codes[lab], return_counts=True)[1].min() < 2)
        m = lab.shape[0]
        correct = np.zeros((len(cands), r, m))
        per_rep = len(folds) // r
        errors = [""] * len(cands)
        scored = np.zeros(len(cands), dtype=bool)

        def score_candidates(which) -> None:
            """Fit and score the candidates ``which`` on every fold (in parallel)."""
            for i in which:
                scored[i] = True
                if isinstance(cands[i], _AdaptThenClassify):  # one adapter fit, every fold
                    t0 = time.perf_counter()
                    try:
                        cands[i].set_params(prefit=_Prefit(cands[i]._fit_adapter(X, codes, sd)))
                    except Exception:  # noqa: BLE001 - each fold then fails with the reason
                        pass
                    times[i] += time.perf_counter() - t0
            jobs = [(i, j) for i in which for j in range(len(folds))]
            out = Parallel(n_jobs=self.n_jobs, prefer="threads")(
                delayed(_fit_score)(cands[i], X, codes, sd, lab[folds[j]]) for i, j in jobs)
            for (i, j), (hits, err, sec) in zip(jobs, out, strict=True):
                times[i] += sec
                if hits is None:
                    errors[i] = errors[i] or err
                else:
                    correct[i, j // per_rep, folds[j]] = hits

        if single:
            # no choice: the one-label default scored alone; should it fail (a classifier
            # without the sample_weight it needs), the next candidate in ``methods`` order
            first = methods.index(SINGLE_LABEL_DEFAULT) if SINGLE_LABEL_DEFAULT in methods else 0
            for i in [first] + [k for k in range(len(cands)) if k != first]:
                score_candidates([i])
                if not errors[i]:
                    break
        else:
            score_candidates(list(range(len(cands))))
        row_mean = correct.mean(axis=1)                     # (candidates, m)
        mean = row_mean.mean(axis=1)
        se = (row_mean.std(axis=1, ddof=1) / np.sqrt(m)) if m > 1 else np.full(len(cands),
                                                                               np.nan)
        failed = np.array([bool(e) for e in errors])
        mean[failed | ~scored], se[failed | ~scored] = np.nan, np.nan
        if failed[scored].all():
            i = int(np.flatnonzero(scored)[0])
            raise ValueError("Every candidate failed on the validation folds; e.g. "
                             f"{methods[i]}: {errors[i]}")
        score = np.where(failed | ~scored, -np.inf, mean)
        top = int(np.argmax(score))                         # the first of the best: ties
        margin = (float(se[top]) if self.margin == "se" else float(self.margin))
        margin = 0.0 if not np.isfinite(margin) else margin
        # the earliest candidate within the margin of the best
        best = int(np.flatnonzero(score >= score[top] - margin - 1e-12)[0])
        order = np.argsort(-score, kind="stable")
        rank = np.empty(len(cands), dtype=int)
        rank[order] = np.arange(1, len(cands) + 1)
        rank[~scored] = len(cands)                          # never scored: tied last
        self.cv_results_ = {"method": methods, "mean_test_score": mean.tolist(),
                            "se_test_score": se.tolist(), "rank_test_score": rank.tolist(),
                            "fit_time": times.tolist(), "error": errors,
                            "row_test_scores": np.where((failed | ~scored)[:, None], np.nan,
                                                        row_mean).tolist(),
                            "scored": scored.tolist()}
        self.best_method_ = methods[best]
        self.best_estimator_ = clone(cands[best]).fit(X, codes, sd)
        if isinstance(self.best_estimator_, _AdaptThenClassify):
            # fitted now; a refit of a clone on other rows must fit its own adapter
            self.best_estimator_.set_params(prefit=None)
        self.estimate_ = Estimate(float(mean[best]), float(se[best]), int(m))
        self.split_rule_ = rule
        self.single_label_default_ = bool(single)
        self.margin_ = margin
        self.n_repeats_ = r
        self.classes_ = classes
        return self

    def _check_X(self, X):
        check_is_fitted(self, "best_estimator_")
        return check_X(X, estimator=self, reset=False)

    def predict(self, X):
        """Labels of ``X`` (target rows) from the chosen candidate."""
        X = self._check_X(X)
        return self.classes_[np.asarray(self.best_estimator_.predict(X), dtype=np.int64)]

    @available_if(lambda self: hasattr(self.best_estimator_, "predict_proba"))
    def predict_proba(self, X):
        """Class probabilities of ``X`` (target rows), one column per ``classes_``."""
        X = self._check_X(X)
        est = self.best_estimator_
        p = np.asarray(est.predict_proba(X))
        out = np.zeros((X.shape[0], self.classes_.shape[0]))
        out[:, np.asarray(est.classes_, dtype=np.int64)] = p
        return out

    def score(self, X, y, sample_weight=None):
        """Accuracy on the rows of ``X`` that carry a label (unlabeled rows skipped)."""
        from sklearn.metrics import accuracy_score
        from sklearn.utils import _safe_indexing

        y = label_array(y)
        keep = ~unlabeled_mask(y, task="classification")
        if not keep.any():
            raise ValueError("score needs labeled rows: every y is the unlabeled marker.")
        w = None if sample_weight is None else np.asarray(sample_weight)[keep]
        pred = self.predict(_safe_indexing(X, np.flatnonzero(keep)))  # a DataFrame stays one
        return float(accuracy_score(y[keep], pred, sample_weight=w))


def nested_estimate(selector: FewLabelSelector, X, y, sample_domain,
                    n_splits: int = 5) -> Estimate:
    """The accuracy of the whole selection, estimated without the optimism of its own CV.

    Outer folds over the labeled target rows (the rule of :func:`few_label_folds` with
    ``n_splits`` folds and one repeat); in each, the held-out labels are hidden, ``selector``
    (cloned) chooses and refits on the other rows, and predicts the held-out rows. An outer
    fold that leaves no labeled target row to choose on is skipped. The inner selections
    follow ``selector``'s rules: an outer fold that leaves a class with a single label fits
    the one-label default there (``single_label``), so with two labels per class the estimate
    is that of the procedure, not of a choice. Cost: ``outer folds + 1`` selections
    (including none of ``selector.fit`` on all rows).

    Returns
    -------
    Estimate
        Mean correctness over the held-out rows, its standard error, and the rows scored.
    """
    sel = clone(selector)
    X, codes, sd, _ = sel._rows(X, y, sample_domain)
    lab = np.flatnonzero((sd < 0) & (codes >= 0))
    folds, _, _ = few_label_folds(codes[lab], n_splits, 1, selector.random_state)
    hits = []
    for f in folds:
        if f.shape[0] == lab.shape[0]:
            continue
        y_train = codes.copy()
        y_train[lab[f]] = -1
        inner = clone(selector).fit(X, y_train, sd)
        hits.append(inner.predict(X[lab[f]]) == codes[lab[f]])
    if not hits:
        raise ValueError("nested_estimate needs at least 2 labeled target rows (one to hold "
                         "out, one to choose on).")
    h = np.concatenate(hits).astype(float)
    se = float(h.std(ddof=1) / np.sqrt(h.size)) if h.size > 1 else float("nan")
    return Estimate(float(h.mean()), se, int(h.size))
