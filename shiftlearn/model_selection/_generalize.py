"""Choose a domain-generalization method for unseen domains: ``GeneralizationSelector``.

Several labeled training domains, no target at training time. Candidates (every one after a
:class:`~sklearn.preprocessing.StandardScaler` fitted on the training rows):

* ``"plain"``: the estimator on every training row as it is (default: an RBF SVM, scikit-learn's
  ``SVC``/``SVR``);
* ``"pooling"``: the marginal-transfer paper's pooling baseline
  (:class:`~shiftlearn.generalization.PoolingClassifier` / ``PoolingRegressor``): the same
  kernel machine as ``"marginal"`` without the task kernel (``k_P = 1``), every training domain
  weighted equally;
* ``"SCA"``: scatter component analysis in its domain-generalization form
  (:class:`~shiftlearn.adaptation.SCA` fitted on the training domains only, ``setting="dg"``),
  then the estimator on its components; for a continuous label the class scatters do not
  exist, so SCA keeps the total and the domain scatter only (``supervised=False``);
* ``"marginal"``: marginal transfer learning
  (:class:`~shiftlearn.generalization.MarginalTransferClassifier` / ``Regressor``), which embeds
  each new domain from its own rows at prediction time.

Validation (``select``): ``"lodo"`` holds each training domain out in turn, as an unseen
domain; ``"cluster"`` holds out one clustering-based validation split
(:class:`~shiftlearn.model_selection.ClusterSplit`: the 20% of the rows most shifted from the
rest, the same share of every domain), scored domain by domain. A held-out domain is always
predicted as one new domain (its rows together, a fresh id). Scores: accuracy (classification),
root mean squared error in the label's units (regression). The choice is the best mean over the
held-out domains (``aggregate="worst"``: the best worst domain); ties go to the earlier
candidate, so the plain estimator wins a tie. The winner is refitted on every row.

Design notes and measurements: ``docs/dev/model_selection.md``.
"""

from __future__ import annotations

import time
import warnings
from numbers import Integral

import numpy as np
from sklearn.base import BaseEstimator, clone, is_classifier
from sklearn.utils import ClassifierTags, RegressorTags
from sklearn.utils.validation import check_is_fitted

from .._constraints import HasMethods, Interval, StrOptions, check_params
from .._progress import task
from .._validation import check_unlabeled_convention, check_X, check_y_shape

__all__ = ["GENERALIZATION_CANDIDATES", "GeneralizationSelector", "infer_task"]

#: the candidates :class:`GeneralizationSelector` knows, in its tie-breaking order
GENERALIZATION_CANDIDATES = ("plain", "pooling", "SCA", "marginal")

#: up to this many rows (of the whole training set) the kernel candidates are exact: SCA
#: (several n x n matrices) and the kernel machines of ``"pooling"`` and ``"marginal"``
#: (``solver="exact"``); above, all of them use random features (:class:`~shiftlearn.adaptation.
#: RFSCA`, ``solver="rf"``). Decided once from every row, so that the held-out folds validate
#: the model the final refit builds (the estimators' own ``solver="auto"`` would switch at
#: :data:`~shiftlearn.generalization.AUTO_RF_MIN_SAMPLES` rows between a fold and the refit)
EXACT_MAX_ROWS = 3000


def infer_task(y) -> str:
    """``"regression"`` when ``y`` holds numbers that are not all whole, else
    ``"classification"`` (text labels, integers, and floats such as ``1.0``).

    Examples
    --------
    >>> infer_task([0, 1, 1]), infer_task([1.0, 2.0]), infer_task([0.5, 1.25])
    ('classification', 'classification', 'regression')
    >>> infer_task(["a", "b"])
    'classification'
    """
    y = np.asarray(y)
    if y.dtype.kind == "f":
        finite = y[np.isfinite(y)]
        return "regression" if np.any(finite != np.round(finite)) else "classification"
    if y.dtype.kind == "O":
        try:
            yf = y.astype(float)
        except (TypeError, ValueError):
            return "classification"
        return infer_task(yf)
    return "classification"


def _plain(v):
    """A numpy scalar as the Python value (for JSON)."""
    return v.item() if isinstance(v, np.generic) else v


def _rmse(y, pred) -> float:
    return float(np.sqrt(np.mean((np.asarray(y, float) - np.asarray(pred, float)) ** 2)))


class GeneralizationSelector(BaseEstimator):
    """Choose among pooling, SCA (domain generalization), marginal transfer and the plain
    estimator for domains not seen in training, by leave-one-domain-out or the clustering-based
    validation split.

    ``fit(X, y, sample_domain)``: rows of several labeled domains (one id per domain; any
    integers, all rows are training rows). ``predict(X)`` treats the rows of one call as one
    new domain (``sample_domain`` may name several). Contract and candidates: the module
    docstring of :mod:`shiftlearn.model_selection._generalize`.

    Parameters
    ----------
    estimator : estimator or None, default=None
        The predictor of ``"plain"`` and ``"SCA"``. ``None``: an RBF SVM (``SVC()`` or
        ``SVR()``, scikit-learn's defaults), the marginal-transfer paper's model family.
    task : {"auto", "classification", "regression"}, default="auto"
        ``"auto"``: regression when ``y`` has non-integral numbers (:func:`infer_task`).
    candidates : sequence of str, default=("plain", "pooling", "SCA", "marginal")
        A subset of :data:`GENERALIZATION_CANDIDATES`, kept in that order (ties go to the
        earlier one).
    select : {"lodo", "cluster"}, default="lodo"
        Leave one domain out (needs 2 or more domains) or one clustering-based validation split
        (:class:`~shiftlearn.model_selection.ClusterSplit`, ``test_size=0.2``, stratified by
        class and domain, by domain for regression).
    aggregate : {"mean", "worst"}, default="mean"
        Rank candidates by their mean score over the held-out domains, or by their worst one.
    sca_components : int, default=10
        Components of ``"SCA"`` (at most the training rows minus one).
    refit_all : bool, default=False
        Also refit every other validated candidate on every row (``estimators_``), to compare
        them on new data; costs one more fit per candidate.
    random_state : int, default=0
        Seeds the random features, the clustering split and liblinear.

    Attributes
    ----------
    task_ : {"classification", "regression"}
    metric_ : {"accuracy", "rmse"}
        Greater is better for accuracy, smaller for the RMSE (in the label's units).
    classes_ : ndarray
        The classes (classification only).
    domains_ : ndarray
        The training domain ids, sorted.
    solver_ : {"exact", "rf"}
        How the kernel candidates are solved, in every fold and the refit alike: exactly up
        to :data:`EXACT_MAX_ROWS` training rows, else with random features.
    held_out_ : list of ndarray
        The domain ids held out fold by fold (``lodo``: one each).
    scores_ : dict
        ``{candidate: ndarray (n_domains,)}``: each domain's score when held out (``cluster``:
        on its validation rows); NaN where the candidate could not be fitted or scored.
    summary_ : list of dict
        One per candidate: ``method``, ``mean``, ``worst``, ``worst_domain``, ``seconds``,
        ``chosen`` and ``failed`` (a reason, or None).
    choice_ : str
    best_estimator_ : estimator
        The chosen candidate (a :class:`~shiftlearn.compose.DomainAwarePipeline`) refitted
        on every row.
    estimators_ : dict
        ``{candidate: fitted pipeline}``: the chosen one, and with ``refit_all`` every
        candidate that could be validated. Predict a new domain with
        ``estimators_[m].predict(X, sample_domain=np.full(len(X), -1))``.
    n_features_in_ : int

    Raises
    ------
    ValueError
        ``select="lodo"`` with one domain; a classification task with one class; no candidate
        could be validated.

    Notes
    -----
    Cost: every candidate is fitted once per held-out fold and once more at the end. The exact
    kernel candidates cost ``O(n^2 d)`` time and ``O(n^2)`` memory (SCA ``O(n^3)``; above
    :data:`EXACT_MAX_ROWS` rows every kernel candidate uses random features, ``O(n D^2)``).

    References
    ----------
    Blanchard, Deshmukh, Dogan, Lee and Scott, "Domain generalization by marginal transfer
    learning", JMLR 2021. Ghifary, Balduzzi, Kleijn and Zhang, "Scatter component analysis",
    TPAMI 2017. Napoli and White, "Clustering-based validation splits for model selection under
    domain shift", 2024.

    Examples
    --------
    >>> from shiftlearn.datasets import make_rotated_ellipses
    >>> X, y, sd = make_rotated_ellipses(8, 40, random_state=0)
    >>> sel = GeneralizationSelector(candidates=["plain", "marginal"]).fit(X, y, sd)
    >>> sel.choice_ in ("plain", "marginal"), sel.scores_["plain"].shape
    (True, (8,))
    """

    # scikit-learn metadata routing: sample_domain is requested by default
    __metadata_request__fit = {"sample_domain": True}
    __metadata_request__predict = {"sample_domain": True}
    __metadata_request__score = {"sample_domain": True}

    _parameter_constraints: dict = {
        "estimator": [HasMethods(["fit", "predict"]), None],
        "task": [StrOptions({"auto", "classification", "regression"})],
        "candidates": [list, tuple],
        "select": [StrOptions({"lodo", "cluster"})],
        "aggregate": [StrOptions({"mean", "worst"})],
        "sca_components": [Interval(Integral, 1, None, closed="left")],
        "refit_all": ["boolean"],
        "random_state": [Interval(Integral, 0, None, closed="left")],
    }

    def __init__(self, estimator=None, *, task="auto", candidates=GENERALIZATION_CANDIDATES,
                 select="lodo", aggregate="mean", sca_components=10, refit_all=False,
                 random_state=0):
        self.estimator = estimator
        self.task = task
        self.candidates = candidates
        self.select = select
        self.aggregate = aggregate
        self.sca_components = sca_components
        self.refit_all = refit_all
        self.random_state = random_state

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        if self.task == "regression" or (self.estimator is not None
                                         and self.estimator.__sklearn_tags__().estimator_type
                                         == "regressor"):
            tags.estimator_type = "regressor"
            tags.regressor_tags = RegressorTags()
        else:
            tags.estimator_type = "classifier"
            tags.classifier_tags = ClassifierTags()
        return tags

    # ----------------------------------------------------------------------- candidates ---
    def _methods(self) -> list[str]:
        bad = [c for c in self.candidates if c not in GENERALIZATION_CANDIDATES]
        if bad or not len(self.candidates):
            raise ValueError(f"candidates {list(self.candidates)!r}: unknown {bad or '(none)'}; "
                             f"choose among {', '.join(GENERALIZATION_CANDIDATES)}.")
        return [c for c in GENERALIZATION_CANDIDATES if c in set(self.candidates)]

    def _estimator(self):
        if self.estimator is not None:
            est = clone(self.estimator)
            if (self.task_ == "regression") == is_classifier(est):
                kind = "classifier" if is_classifier(est) else "regressor"
                raise ValueError(f"The estimator {type(est).__name__} is a {kind}, but the task "
                                 f"is {self.task_}; give a "
                                 f"{'regressor' if kind == 'classifier' else 'classifier'} or "
                                 "set task.")
            return est
        from sklearn.svm import SVC, SVR

        return SVR() if self.task_ == "regression" else SVC()

    def _candidate(self, method: str, n_rows: int):
        """The unfitted pipeline of ``method`` (standardisation first)."""
        from sklearn.preprocessing import StandardScaler

        from ..adaptation import RFSCA, SCA
        from ..compose import make_da_pipeline
        from ..generalization import (
            MarginalTransferClassifier,
            MarginalTransferRegressor,
            PoolingClassifier,
            PoolingRegressor,
        )

        reg = self.task_ == "regression"
        seed = self.random_state
        exact = self.solver_ == "exact"
        if method == "plain":
            last = [self._estimator()]
        elif method == "pooling":
            last = [(PoolingRegressor if reg else PoolingClassifier)(solver=self.solver_,
                                                                     random_state=seed)]
        elif method == "marginal":
            last = [(MarginalTransferRegressor if reg else MarginalTransferClassifier)(
                solver=self.solver_, random_state=seed)]
        else:
            k = max(1, min(self.sca_components, n_rows - 1))
            sca = (SCA(n_components=k, setting="dg", supervised=not reg) if exact else
                   RFSCA(n_components=k, supervised=not reg, random_state=seed))
            last = [sca, self._estimator()]
        return make_da_pipeline(StandardScaler(), *last)

    # --------------------------------------------------------------------------- splits ---
    def _folds(self, X, y, dom):
        """``[(train, [(domain id, validation rows), ...]), ...]``."""
        ids = np.unique(dom)
        if self.select == "lodo":
            if ids.size < 2:
                raise ValueError(f"Leave-one-domain-out needs at least 2 domains, got "
                                 f"{ids.size}; give the rows of each domain their own "
                                 "sample_domain id, or use select='cluster'.")
            return [(np.flatnonzero(dom != d), [(d, np.flatnonzero(dom == d))]) for d in ids]
        from ._cluster_split import ClusterSplit

        strat = "domain" if self.task_ == "regression" else "label_domain"
        cv = ClusterSplit(random_state=self.random_state, stratify=strat,
                          n_landmarks=300 if len(X) > EXACT_MAX_ROWS else None)
        train, val = next(iter(cv.split(X, y, groups=dom)))
        groups = [(d, val[dom[val] == d]) for d in ids]
        return [(train, [(d, rows) for d, rows in groups if rows.size])]

    # ---------------------------------------------------------------------------- score ---
    def _score(self, y, pred) -> float:
        if self.task_ == "regression":
            return _rmse(y, pred)
        return float(np.mean(np.asarray(pred) == np.asarray(y)))

    def _better(self, a: float, b: float) -> bool:
        """``a`` better than ``b`` by more than rounding (NaN is never better), so that equal
        estimates summed in another order stay a tie."""
        if not np.isfinite(a):
            return False
        if not np.isfinite(b):
            return True
        gap = (b - a) if self.task_ == "regression" else (a - b)
        return bool(gap > 1e-9 * max(1.0, abs(a), abs(b)))

    def _validate_input(self, X, y, sample_domain):
        X = check_X(X, estimator=self, reset=True)
        if X.shape[0] < 2:
            raise ValueError(f"n_samples={X.shape[0]}: a selection needs at least 2 rows "
                             "(1 sample cannot be split into training and held-out rows).")
        y = check_y_shape(y, X.shape[0])
        self.task_ = infer_task(y) if self.task == "auto" else self.task
        if self.task_ == "regression":
            try:
                y = np.asarray(y, dtype=np.float64)
            except (TypeError, ValueError):
                raise ValueError("task='regression' needs numeric labels.") from None
            if not np.all(np.isfinite(y)):
                raise ValueError("The labels hold NaN or infinite values; every training row "
                                 "needs a label.")
            self.metric_ = "rmse"
        else:
            from sklearn.utils.multiclass import check_classification_targets

            check_classification_targets(y)
            # -1 beside one class is the library's 'unlabeled' marker, not a class: refused
            # with the re-encoding advice, as every classifier of the library does
            check_unlabeled_convention(y, task="classification")
            self.classes_ = np.unique(y)
            if self.classes_.size < 2:
                raise ValueError(f"The labels hold one class only ({self.classes_[0]!r}); "
                                 "classification needs at least two.")
            self.metric_ = "accuracy"
        if sample_domain is None:
            dom = np.ones(X.shape[0], dtype=np.int64)
        else:
            raw = np.asarray(sample_domain).reshape(-1)
            if raw.shape[0] != X.shape[0]:
                raise ValueError(f"sample_domain has {raw.shape[0]} entries for {X.shape[0]} "
                                 "rows.")
            self.domains_, dom = np.unique(raw, return_inverse=True)
            dom = dom.astype(np.int64) + 1          # positive ids 1..K: every row trains
        if sample_domain is None:
            self.domains_ = np.array([1])
        return X, y, dom

    def fit(self, X, y, sample_domain=None):
        """Validate every candidate on held-out domains, choose, refit the winner on all rows.

        Returns ``self``."""
        check_params(self)
        methods = self._methods()
        X, y, dom = self._validate_input(X, y, sample_domain)
        self.solver_ = "exact" if X.shape[0] <= EXACT_MAX_ROWS else "rf"
        folds = self._folds(X, y, dom)
        K = self.domains_.size
        self.held_out_ = [self.domains_[np.array([d for d, _ in groups]) - 1]
                          for _, groups in folds]
        scores = {m: np.full(K, np.nan) for m in methods}
        seconds = dict.fromkeys(methods, 0.0)
        failed: dict[str, str] = {}
        with task(f"validating {len(methods)} candidates ({self.select})",
                  len(methods) * len(folds)) as advance:
            for train, groups in folds:
                rows = np.concatenate([r for _, r in groups])
                test_sd = np.concatenate([np.full(r.size, -(K + d)) for d, r in groups])
                for m in methods:
                    advance(0, description=f"validating ({self.select}): {m}")
                    t0 = time.perf_counter()
                    try:
                        with warnings.catch_warnings():
                            warnings.simplefilter("ignore")
                            model = self._candidate(m, train.size).fit(
                                X[train], y[train], sample_domain=dom[train])
                            pred = np.asarray(model.predict(X[rows], sample_domain=test_sd))
                    except (ValueError, np.linalg.LinAlgError, MemoryError) as exc:
                        failed.setdefault(m, " ".join(str(exc).split())[:240]
                                          or type(exc).__name__)
                        pred = None
                    seconds[m] += time.perf_counter() - t0
                    if pred is not None:
                        at = 0
                        for d, r in groups:
                            scores[m][d - 1] = self._score(y[r], pred[at:at + r.size])
                            at += r.size
                    advance()
        self.scores_ = scores
        summary = []
        for m in methods:
            s = scores[m]
            got = s[np.isfinite(s)]
            if got.size:
                worst_i = int(np.nanargmax(s) if self.task_ == "regression" else np.nanargmin(s))
                mean, worst = float(got.mean()), float(s[worst_i])
                worst_dom = _plain(self.domains_[worst_i])
            else:
                mean = worst = float("nan")
                worst_dom = None
            summary.append({"method": m, "mean": mean, "worst": worst, "worst_domain": worst_dom,
                            "seconds": seconds[m], "chosen": False, "failed": failed.get(m)})
        key = "mean" if self.aggregate == "mean" else "worst"
        best = None
        for r in summary:
            if best is None or self._better(r[key], best[key]):
                best = r
        if best is None or not np.isfinite(best[key]):
            raise ValueError("No candidate could be validated: "
                             + "; ".join(f"{m}: {why}" for m, why in failed.items()))
        best["chosen"] = True
        self.summary_ = summary
        self.choice_ = best["method"]
        refit = [r["method"] for r in summary if r["chosen"] or (
            self.refit_all and np.isfinite(r[key]))]
        self.estimators_ = {}
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for m in refit:
                self.estimators_[m] = self._candidate(m, X.shape[0]).fit(
                    X, y, sample_domain=dom)
        self.best_estimator_ = self.estimators_[self.choice_]
        return self

    # ------------------------------------------------------------------------- predict ---
    def predict(self, X, sample_domain=None):
        """Predictions of the chosen model. The rows of one call are one new domain (marginal
        transfer embeds it from them); ``sample_domain`` may split them into several."""
        check_is_fitted(self, "best_estimator_")
        X = check_X(X, estimator=self, reset=False)
        sd = (np.full(X.shape[0], -1, dtype=np.int64) if sample_domain is None else
              -1 - np.unique(np.asarray(sample_domain).reshape(-1), return_inverse=True)[1])
        if len(sd) != X.shape[0]:
            raise ValueError(f"sample_domain has {len(sd)} entries for {X.shape[0]} rows.")
        return self.best_estimator_.predict(X, sample_domain=sd)

    def score(self, X, y, sample_domain=None) -> float:
        """Accuracy, or for regression R² (scikit-learn's convention; ``summary_`` reports the
        RMSE), of :meth:`predict` on ``X`` as one new domain."""
        pred = self.predict(X, sample_domain)
        if self.task_ == "regression":
            from sklearn.metrics import r2_score

            return float(r2_score(np.asarray(y, dtype=float), pred))
        return float(np.mean(pred == np.asarray(y)))
