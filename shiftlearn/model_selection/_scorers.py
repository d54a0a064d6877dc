"""Target-label-free scorers: rank candidate models by source labels and unlabeled target rows.

Every scorer is a scikit-learn scorer, ``scorer(estimator, X_val, y_val, sample_domain=None)``
returning a float where **greater is better**; pass one as ``scoring=`` of ``GridSearchCV`` or
``cross_validate`` together with a domain-aware splitter whose validation folds hold held-out
labeled source rows *and* target rows (:class:`~shiftlearn.model_selection.SourceKFold`,
:class:`~shiftlearn.model_selection.DomainAwareSplit`).

Which rows are which (one rule for every scorer)
------------------------------------------------
* With ``sample_domain`` (scikit-learn's metadata routing on: every scorer requests it, as
  skada's do): target rows are ``sample_domain < 0``, whatever their ``y`` (a target label is
  never read); source rows are ``sample_domain > 0`` with a label.
* Without it (routing off, the default): target rows are the **unlabeled** rows of ``y_val``
  (``-1``/NaN, :func:`shiftlearn._validation.unlabeled_mask`), source rows the labeled ones.
* A fold without target rows, or without labeled source rows for a scorer that needs them, is a
  ``ValueError`` that names the splitter to use.

Each scorer re-implements skada's algorithm with skada's default hyper-parameters, works
without skada and is checked against skada's on the same inputs
(``tests/model_selection/test_scorers.py``).
``sample_domain`` is passed to an estimator's methods only when they take it. The embedding of
a candidate (DEV, MMD) is what its final classifier sees (``transform`` of a
``DomainAdaptationClassifier``, a ``Pipeline`` up to its last step with ``transform``, the raw
``X`` otherwise). Random steps default to ``random_state=0``, so the candidates of a search are
compared on the same split, pairs and features. Design notes: ``docs/dev/model_selection.md``.
"""

from __future__ import annotations

import functools
import inspect
import warnings
from dataclasses import dataclass
from numbers import Integral, Real

import numpy as np
from scipy.special import entr
from sklearn import get_config
from sklearn.base import BaseEstimator, clone
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import balanced_accuracy_score
from sklearn.model_selection import train_test_split
from sklearn.neighbors import KernelDensity
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import LabelEncoder
from sklearn.utils import _safe_indexing, check_random_state
from sklearn.utils.extmath import softmax, svd_flip
from sklearn.utils.metadata_routing import MetadataRequest, get_routing_for_object

from .._constraints import HasMethods, Interval, StrOptions, check_params
from .._validation import check_sample_domain, check_unlabeled_convention, label_array
from ..kernels import median_heuristic, mmd2_rff, rff_mean, rff_weights

__all__ = ["CircularValidation", "DeepEmbeddedValidation", "ImportanceWeightedScorer",
           "MMDScorer", "MaNoScorer", "MixValScorer", "PredictionEntropyScorer",
           "SoftNeighborhoodDensity", "SourceAccuracyScorer", "softrun"]

_SPLITTER_HINT = ("use a domain-aware splitter whose validation folds hold held-out labeled "
                  "source rows and every target row, e.g. "
                  "shiftlearn.model_selection.SourceKFold(5) or DomainAwareSplit(cv)")


# --------------------------------------------------------------------------- the fold's rows
@dataclass
class _Fold:
    X: object              # as given (array or DataFrame): what the estimator is called on
    Xa: np.ndarray         # the same rows as a 2-D float array (mixing, densities)
    y: np.ndarray | None
    sd: np.ndarray         # given or inferred (labeled -> 1, unlabeled -> -2)
    src: np.ndarray        # labeled source rows
    tgt: np.ndarray        # target rows

    def rows(self, idx):
        return _safe_indexing(self.X, idx)


def _fold(X, y, sample_domain, name: str, needs_source: bool, needs_target: bool = True,
          task: str = "auto") -> _Fold:
    n = X.shape[0] if hasattr(X, "shape") else len(X)
    if y is None and sample_domain is None:
        raise ValueError(f"{name} needs y (labels, -1/NaN on the target rows) or sample_domain "
                         "to tell the source rows from the target rows.")
    if y is not None:
        y = label_array(y)
        if y.shape[0] != n:
            raise ValueError(f"y has {y.shape[0]} entries but X has {n} rows.")
    sd = None if sample_domain is None else check_sample_domain(sample_domain, n)
    unl = np.ones(n, bool) if y is None else check_unlabeled_convention(y, sd, task=task)
    if sd is None:
        src, tgt = ~unl, unl
        sd = np.where(unl, -2, 1).astype(np.int64)
    else:
        src, tgt = (sd > 0) & ~unl, sd < 0
    if needs_target and not tgt.any():
        raise ValueError(f"{name}: the validation fold holds no target rows (negative "
                         "sample_domain, or y = -1/NaN without sample_domain); a target-label-"
                         f"free scorer needs them: {_SPLITTER_HINT}.")
    if needs_source and not src.any():
        raise ValueError(f"{name}: the validation fold holds no labeled source rows; "
                         f"{_SPLITTER_HINT}.")
    Xa = np.asarray(X, dtype=np.float64)
    Xa = Xa.reshape(n, -1)
    return _Fold(X, Xa, y, sd, np.flatnonzero(src), np.flatnonzero(tgt))


def _domain_kw(est, method: str, sd) -> dict:
    """``{"sample_domain": sd}`` if ``est.method`` takes it (by name or by routing), else ``{}``."""
    fn = getattr(est, method)
    try:
        if "sample_domain" in inspect.signature(fn).parameters:
            return {"sample_domain": sd}
    except (TypeError, ValueError):
        pass
    if get_config()["enable_metadata_routing"]:
        try:
            used = get_routing_for_object(est).consumes(method, ["sample_domain",
                                                                 "allow_source"])
        except (AttributeError, TypeError, ValueError):
            used = set()
        if "sample_domain" in used:
            kw = {"sample_domain": sd}
            # skada's adapters refuse source rows at predict/transform unless told (its own
            # scorers pass allow_source=True the same way)
            if "allow_source" in used and np.any(np.asarray(sd) > 0):
                kw["allow_source"] = True
            return kw
    return {}


def _call(est, method: str, fold: _Fold, idx):
    if not hasattr(est, method):
        raise TypeError(f"{type(est).__name__} has no {method}(); " + (
            "use a classifier with predict_proba (e.g. LogisticRegression, or "
            "KNeighborsClassifier(n_neighbors=5)) for this scorer." if method.startswith(
                "predict_") else f"this scorer needs {method}()."))
    return getattr(est, method)(fold.rows(idx), **_domain_kw(est, method, fold.sd[idx]))


def _embed(est, X, sd):
    """The features the candidate's final classifier sees (see the module docstring)."""
    if isinstance(est, Pipeline):
        for i in range(len(est.steps) - 1, -1, -1):
            step = est.steps[i][1]
            if step not in (None, "passthrough") and hasattr(step, "transform"):
                head = est[: i + 1]
                return np.asarray(head.transform(X, **_domain_kw(head, "transform", sd)))
        return np.asarray(X, dtype=np.float64)
    if hasattr(est, "transform"):
        return np.asarray(est.transform(X, **_domain_kw(est, "transform", sd)))
    return np.asarray(X, dtype=np.float64)


def _classes(est, n_columns: int, y) -> list:
    """The class of each ``predict_proba`` column: ``classes_`` of the estimator, of a
    pipeline's last step or of the estimator it wraps (skada's selectors); else, as skada
    assumes, ``0..K-1`` when the labels are such integers (anything else is an error)."""
    last = est.steps[-1][1] if isinstance(est, Pipeline) else None
    for obj in (est, last, getattr(last, "estimator_", None),
                getattr(last, "base_estimator_", None)):
        try:
            return list(obj.classes_)
        except AttributeError:
            continue
    y = np.asarray(y)
    if y.dtype.kind in "iuf" and np.all((y >= 0) & (y < n_columns) & (y == np.round(y))):
        return list(range(n_columns))
    raise ValueError(f"{type(est).__name__} has no classes_: cannot tell which predict_proba "
                     "column belongs to which class; give the estimator a classes_ attribute "
                     "or encode the labels as 0..K-1.")


def _warn_if_hard(proba: np.ndarray, est, name: str) -> None:
    if np.all((proba == 0) | (proba == 1)):
        warnings.warn(f"{name}: predict_proba of {type(est).__name__} gives hard 0/1 "
                      "probabilities (e.g. 1-nearest-neighbour), so the score is the same for "
                      "every such candidate and cannot rank them; use a classifier with graded "
                      "probabilities (LogisticRegression, KNeighborsClassifier(n_neighbors=5)).",
                      UserWarning, stacklevel=4)


# --------------------------------------------------------------------------- the base class
class _DomainScorer(BaseEstimator):
    """``scorer(estimator, X, y=None, sample_domain=None) -> float``, greater is better."""

    _needs_source = True
    _needs_target = True
    _task = "auto"          # "regression": only NaN marks an unlabeled row

    def __call__(self, estimator, X, y=None, sample_domain=None, **kwargs) -> float:
        if kwargs:
            raise TypeError(f"{type(self).__name__} got unexpected metadata {sorted(kwargs)}; "
                            "it takes sample_domain only.")
        check_params(self)
        fold = _fold(X, y, sample_domain, type(self).__name__, self._needs_source,
                     self._needs_target, self._task)
        return float(self._score(estimator, fold))

    def get_metadata_routing(self) -> MetadataRequest:
        """Requests ``sample_domain`` for ``score`` (used when metadata routing is on)."""
        req = MetadataRequest(owner=self)
        req.score.add_request(param="sample_domain", alias=True)
        return req

    def _score(self, estimator, fold: _Fold) -> float:       # pragma: no cover - abstract
        raise NotImplementedError


# --------------------------------------------------------------------------- source CV
class SourceAccuracyScorer(_DomainScorer):
    """Accuracy on the held-out labeled source rows, each predicted *as a source row*.

    The papers' source cross-validation, and what ``AdaptationSelector(scoring=None)`` and
    :func:`~shiftlearn.model_selection.fit_source_cv` use. Equal to scikit-learn's
    ``"accuracy"`` (``estimator.score`` on the labeled rows) for every adapter that embeds
    both domains the same way (TCA, SCA, ...). It differs for an adapter that maps the domains
    differently (:class:`~shiftlearn.adaptation.CORAL`): ``"accuracy"`` calls ``predict(X)``,
    which treats the held-out source rows as target rows; this scorer passes their
    ``sample_domain`` (given, or positive for the labeled rows), so they are mapped as the
    training source rows were.

    Examples
    --------
    >>> from shiftlearn import CORAL, DomainAdaptationClassifier
    >>> from shiftlearn.datasets import make_sca_toy
    >>> X, y, sd = make_sca_toy(n_per_cluster=20, random_state=0)
    >>> clf = DomainAdaptationClassifier(CORAL()).fit(X, y, sd)
    >>> SourceAccuracyScorer()(clf, X, y, sd)                    # the training rows: 1NN
    1.0
    """

    _needs_target = False

    def _score(self, estimator, fold: _Fold) -> float:
        pred = np.asarray(_call(estimator, "predict", fold, fold.src))
        return float(np.mean(pred == fold.y[fold.src]))


# --------------------------------------------------------------------------- IW
class ImportanceWeightedScorer(_DomainScorer):
    """Importance-weighted accuracy on the held-out source rows (Sugiyama et al., JMLR 2007).

    Each labeled source row ``x`` gets the weight ``w(x) = p_t(x) / p_s(x)``, the ratio of the
    target and source densities of the *inputs* (the same weights for every candidate), and the
    score is the weighted accuracy ``sum_i w_i [pred_i == y_i] / sum_i w_i``: an unbiased
    estimate of the target accuracy under covariate shift (``p(y|x)`` equal in both domains).

    Parameters
    ----------
    weight_estimator : density estimator or probabilistic classifier, default=None
        With ``fit`` and ``score_samples`` (a density, e.g. ``KernelDensity``): fitted once on
        the source rows and once on the target rows of the fold, ``w = exp(log p_t - log p_s)``.
        With ``predict_proba`` (a classifier): fitted to tell the fold's target rows (class 0)
        from its source rows (class 1), ``w = (n_s / n_t) P(0|x) / P(1|x)``. ``None``:
        ``KernelDensity()`` (bandwidth 1 on the inputs), skada's default.
    metric : callable or None, default=None
        ``metric(y_true, y_pred, sample_weight=w)``, e.g. ``balanced_accuracy_score``; ``None``
        is the weighted accuracy (what skada computes through ``estimator.score``).

    Notes
    -----
    Equal to skada's ``ImportanceWeightedScorer`` with the same ``weight_estimator``
    (tested). Difference: the log-ratios are shifted by their maximum before ``exp`` (same
    normalised weights, no overflow to ``inf``). Works without skada. A warning reports weights
    whose effective sample size ``(sum w)^2 / sum w^2`` is below 2 rows (one row decides).

    Examples
    --------
    >>> from sklearn.linear_model import LogisticRegression
    >>> from shiftlearn import DomainAdaptationClassifier
    >>> from shiftlearn.datasets import make_sca_toy
    >>> X, y, sd = make_sca_toy(n_per_cluster=20, random_state=0)
    >>> clf = DomainAdaptationClassifier(None, LogisticRegression()).fit(X, y, sd)
    >>> 0.0 <= ImportanceWeightedScorer()(clf, X, y) <= 1.0
    True
    """

    _parameter_constraints: dict = {
        "weight_estimator": [HasMethods(["fit", "score_samples"]),
                             HasMethods(["fit", "predict_proba"]), None],
        "metric": [callable, None],
    }

    def __init__(self, weight_estimator=None, metric=None):
        self.weight_estimator = weight_estimator
        self.metric = metric

    def weights(self, X_source, X_target) -> np.ndarray:
        """The normalised importance weights (sum 1) of the rows of ``X_source``."""
        Xs, Xt = np.asarray(X_source, float), np.asarray(X_target, float)
        we = KernelDensity() if self.weight_estimator is None else self.weight_estimator
        if hasattr(we, "score_samples"):
            log_w = clone(we).fit(Xt).score_samples(Xs) - clone(we).fit(Xs).score_samples(Xs)
        else:
            dom = np.r_[np.ones(len(Xs)), np.zeros(len(Xt))].astype(int)
            clf = clone(we).fit(np.vstack([Xs, Xt]), dom)
            p = clf.predict_proba(Xs)
            cols = list(clf.classes_)
            with np.errstate(divide="ignore"):
                log_w = (np.log(p[:, cols.index(0)]) - np.log(p[:, cols.index(1)])
                         + np.log(len(Xs) / len(Xt)))
        if not np.isfinite(log_w).any():
            warnings.warn("ImportanceWeightedScorer: every importance weight is zero; using "
                          "uniform weights (plain source accuracy).", UserWarning, stacklevel=3)
            return np.full(len(Xs), 1.0 / len(Xs))
        w = np.exp(log_w - np.max(log_w[np.isfinite(log_w)]))
        w = np.where(np.isfinite(w), w, 0.0)
        return w / w.sum()

    def _score(self, estimator, fold: _Fold) -> float:
        w = self.weights(fold.Xa[fold.src], fold.Xa[fold.tgt])
        ess = 1.0 / np.sum(w ** 2)
        if ess < 2 and len(w) > 2:
            warnings.warn(f"ImportanceWeightedScorer: the importance weights put almost all "
                          f"mass on one source row (effective sample size {ess:.2f} of "
                          f"{len(w)}); the estimate is that row's correctness. Use a smoother "
                          "weight_estimator (e.g. KernelDensity with a larger bandwidth, or a "
                          "LogisticRegression domain classifier).", UserWarning, stacklevel=3)
        pred = np.asarray(_call(estimator, "predict", fold, fold.src))
        y = fold.y[fold.src]
        if self.metric is not None:
            return self.metric(y, pred, sample_weight=w)
        return float(np.sum(w * (pred == y)))


# --------------------------------------------------------------------------- PE
class PredictionEntropyScorer(_DomainScorer):
    """Minus the mean entropy of the predicted class probabilities on the target rows
    (Morerio et al., ICLR 2018): confident target predictions score higher.

    ``score = -(1/n_t) sum_i H(p_i)``, ``H(p) = -sum_k p_k log p_k`` (``0 log 0 = 0``).

    Notes
    -----
    skada's ``PredictionEntropyScorer`` averages ``-p_ik log p_ik`` over the ``n_t x K``
    entries, i.e. its value is this one divided by the number of classes ``K`` (same ranking
    when ``K`` is the same for all candidates; tested), and uses ``log(p + 1e-7)`` when the
    estimator has no ``predict_log_proba``. Needs ``predict_proba``; a classifier with hard
    0/1 probabilities (1-nearest-neighbour) gives 0 for every candidate, which is reported with
    a warning. Works without skada.

    Examples
    --------
    >>> from sklearn.linear_model import LogisticRegression
    >>> from shiftlearn import DomainAdaptationClassifier
    >>> from shiftlearn.datasets import make_sca_toy
    >>> X, y, sd = make_sca_toy(n_per_cluster=20, random_state=0)
    >>> clf = DomainAdaptationClassifier(None, LogisticRegression()).fit(X, y, sd)
    >>> PredictionEntropyScorer()(clf, X, y) <= 0.0
    True
    """

    _needs_source = False

    def _score(self, estimator, fold: _Fold) -> float:
        proba = np.asarray(_call(estimator, "predict_proba", fold, fold.tgt), dtype=float)
        _warn_if_hard(proba, estimator, type(self).__name__)
        return -float(np.mean(entr(proba).sum(axis=1)))


# --------------------------------------------------------------------------- SND
class SoftNeighborhoodDensity(_DomainScorer):
    """Soft neighbourhood density of the target predictions (Saito et al., ICCV 2021).

    The target rows' probability vectors are L2-normalised, their similarities divided by the
    temperature ``T`` (self-similarity set to ``-1/T``), each row soft-maxed, and the score is
    the mean entropy of these neighbourhood distributions: high when target predictions form
    dense clusters.

    Parameters
    ----------
    T : float, default=0.05
        Temperature (the paper's value; skada's default).
    max_samples : int, default=2000
        The ``n_t x n_t`` similarity matrix is computed on at most this many target rows (a
        seeded subsample when there are more), so memory stays ``O(max_samples^2)``.
    random_state : int, RandomState or None, default=0
        Seed of that subsample.

    Notes
    -----
    Equal to skada's ``SoftNeighborhoodDensity`` when the fold has at most ``max_samples``
    target rows (tested); skada always forms the full matrix. Hard 0/1 probabilities
    (1-nearest-neighbour) make the score a function of the predicted class sizes only, which is
    reported with a warning. Works without skada.
    """

    _needs_source = False
    _parameter_constraints: dict = {
        "T": [Interval(Real, 0, None, closed="neither")],
        "max_samples": [Interval(Integral, 2, None, closed="left")],
        "random_state": ["random_state"],
    }

    def __init__(self, T=0.05, max_samples=2000, random_state=0):
        self.T = T
        self.max_samples = max_samples
        self.random_state = random_state

    def _score(self, estimator, fold: _Fold) -> float:
        tgt = fold.tgt
        if tgt.size > self.max_samples:
            rng = check_random_state(self.random_state)
            tgt = np.sort(rng.choice(tgt, self.max_samples, replace=False))
        proba = np.asarray(_call(estimator, "predict_proba", fold, tgt), dtype=float)
        _warn_if_hard(proba, estimator, type(self).__name__)
        norm = np.linalg.norm(proba, axis=1, keepdims=True)
        P = proba / np.where(norm > 0, norm, 1.0)
        S = P @ P.T / self.T
        np.fill_diagonal(S, -np.diag(S))
        S = softmax(S, copy=False)
        return float(np.mean(entr(S).sum(axis=1)))


# --------------------------------------------------------------------------- DEV
#: DEV risks are rounded to this many decimals (differences below are round-off of losses at
#: the 1e-15 clip, see :class:`DeepEmbeddedValidation`)
DEV_DECIMALS = 12


class DeepEmbeddedValidation(_DomainScorer):
    """Deep embedded validation (You et al., ICML 2019), shallow version: minus the
    importance-weighted, control-variate corrected log-loss on held-out source rows.

    The fold's labeled source rows are split (``test_size`` held out, seeded). A domain
    classifier learns target (0) vs the remaining source rows (1) on the candidate's
    **embedding**; on the held-out source rows ``w = (n_train / n_t) P(0|z) / P(1|z)``, the loss
    is ``l = -log p(y|x)`` (clipped at ``1e-15``), and the DEV risk is
    ``mean(w l) + eta mean(w) - eta`` with ``eta = -Cov(w l, w) / Var(w)``. The score is
    ``-risk``, rounded to 12 decimals: a candidate that predicts every held-out row right
    with certainty (1NN always does) has losses at the clip, ``~1e-15``, and a risk of a few
    ``1e-15`` whose differences between candidates are round-off; rounded, such candidates tie
    exactly (a search then keeps the first, e.g. no adaptation), instead of the last bit
    deciding. One wrong
    prediction among ``m`` rows adds ``~34.5 w / m``, far above ``1e-12``.

    Parameters
    ----------
    domain_classifier : classifier with predict_proba, default=None
        ``None``: ``LogisticRegression(max_iter=1000)``.
    test_size : float, default=0.33
        Fraction of the labeled source rows on which the loss is evaluated (skada's 0.33).
    random_state : int, RandomState or None, default=0

    Notes
    -----
    skada's ``DeepEmbeddedValidation`` (0.6) computes a different number on the same inputs:
    it multiplies weights of shape ``(m, 1)`` by losses of shape ``(m,)``, an ``m x m``
    matrix, so its ``mean(w l)`` is ``mean(w) mean(l)`` and its control variate is computed
    from the matrix's first two columns. ``tests/model_selection/test_scorers.py`` reproduces
    both values from the same weights and losses (same split, domain classifier and
    embedding). skada also looks the true class up by its *value* in the probability
    columns, which is wrong for labels other than ``0..K-1``; here the column is found in
    ``classes_``. skada only accepts a ``Pipeline`` (or a skorch model); here any estimator
    works (embedding: see the module docstring). skada's default domain classifier is
    ``LogisticRegression()`` (100 iterations). Works without skada.
    """

    _parameter_constraints: dict = {
        "domain_classifier": [HasMethods(["fit", "predict_proba"]), None],
        "test_size": [Interval(Real, 0, 1, closed="neither")],
        "random_state": ["random_state"],
    }

    def __init__(self, domain_classifier=None, test_size=0.33, random_state=0):
        self.domain_classifier = domain_classifier
        self.test_size = test_size
        self.random_state = random_state

    def _score(self, estimator, fold: _Fold) -> float:
        if fold.src.size < 4:
            raise ValueError(f"DeepEmbeddedValidation needs at least 4 labeled source rows in "
                             f"the validation fold, got {fold.src.size}; use fewer folds.")
        rng = check_random_state(self.random_state)
        tr, va = train_test_split(fold.src, test_size=self.test_size, random_state=rng)
        f_tr = _embed(estimator, fold.rows(tr), fold.sd[tr])
        f_va = _embed(estimator, fold.rows(va), fold.sd[va])
        f_t = _embed(estimator, fold.rows(fold.tgt), fold.sd[fold.tgt])
        dc = (LogisticRegression(max_iter=1000) if self.domain_classifier is None
              else self.domain_classifier)
        dc = clone(dc).fit(np.vstack([f_tr, f_t]), np.r_[np.ones(len(f_tr)),
                                                         np.zeros(len(f_t))].astype(int))
        p = dc.predict_proba(f_va)
        cols = list(dc.classes_)
        w = (len(f_tr) / len(f_t)) * p[:, cols.index(0)] / p[:, cols.index(1)]
        proba = np.asarray(_call(estimator, "predict_proba", fold, va), dtype=float)
        classes = _classes(estimator, proba.shape[1], fold.y[va])
        p_true = np.array([proba[i, classes.index(c)] if c in classes else 0.0
                           for i, c in enumerate(fold.y[va])])
        loss = -np.log(np.clip(p_true, 1e-15, 1 - 1e-15))
        wl = w * loss
        var_w = np.var(w, ddof=1)
        eta = 0.0 if var_w == 0 else -np.cov(np.c_[wl, w], rowvar=False)[0, 1] / var_w
        return -round(float(np.mean(wl) + eta * np.mean(w) - eta), DEV_DECIMALS) + 0.0


# --------------------------------------------------------------------------- circular
class CircularValidation(_DomainScorer):
    """Circular (reverse) validation (Bruzzone & Marconcini, TPAMI 2010; Zhong et al. 2010).

    The candidate labels the target rows; a clone with the same hyper-parameters is refitted on
    the fold with the roles swapped (target rows, with those pseudo-labels, as the labeled
    source; source rows unlabeled, ``sample_domain`` negated) and predicts the source rows. The
    score is ``source_scorer(y_source, back_prediction)`` (balanced accuracy by default).

    Parameters
    ----------
    source_scorer : callable, default=sklearn.metrics.balanced_accuracy_score
        ``source_scorer(y_true, y_pred)``.

    Notes
    -----
    skada's algorithm (same value, tested), including its special case: when the candidate
    predicts a single class for the target, the back-prediction is that class for every source
    row (with a warning). Labels of target rows, if any, are ignored (skada refuses them). A
    candidate whose ``fit`` does not take ``sample_domain`` (a plain classifier) is refitted on
    the pseudo-labeled target rows only (skada would fail). Costs one more ``fit`` per
    candidate and fold. Works without skada.

    A known blind spot (tested): a candidate that maps each target class onto *another* source
    class, consistently, is mapped back onto the right source classes and scores as high as a
    correct one (the SCA toy's unaligned subspaces, ``docs/adaptation.md``).
    """

    _parameter_constraints: dict = {"source_scorer": [callable]}

    def __init__(self, source_scorer=balanced_accuracy_score):
        self.source_scorer = source_scorer

    def _score(self, estimator, fold: _Fold) -> float:
        y_src = fold.y[fold.src]
        pred_t = np.asarray(_call(estimator, "predict", fold, fold.tgt))
        if np.unique(pred_t).size == 1:
            warnings.warn("CircularValidation: the candidate predicts one class for every "
                          "target row; the back-prediction is that class for every source row.",
                          UserWarning, stacklevel=3)
            return float(self.source_scorer(y_src, np.full(y_src.shape, pred_t[0])))
        le = LabelEncoder().fit(pred_t)
        back = clone(estimator)
        fit_kw = _domain_kw(back, "fit", -fold.sd)
        if fit_kw:   # domain-aware: every row of the fold, the roles of the domains swapped
            back_y = np.full(fold.sd.shape[0], -1, dtype=np.int64)
            back_y[fold.tgt] = le.transform(pred_t)
            back.fit(fold.X, back_y, **fit_kw)
        else:        # a plain classifier (no adaptation): fitted on the pseudo-labeled targets
            back.fit(fold.rows(fold.tgt), le.transform(pred_t))
        pred_s = back.predict(fold.rows(fold.src),
                              **_domain_kw(back, "predict", -fold.sd[fold.src]))
        return float(self.source_scorer(y_src, le.inverse_transform(np.asarray(pred_s))))


# --------------------------------------------------------------------------- MixVal
class MixValScorer(_DomainScorer):
    """MixVal (Hu et al., NeurIPS 2023): consistency of the predictions on mixed target rows.

    Target rows are paired with a seeded random permutation of themselves and mixed,
    ``x = alpha x_a + (1 - alpha) x_b``; the mixed row's pseudo-label is the prediction of its
    dominant end (``a`` when ``alpha >= 0.5``). ICE scores are the accuracies of the candidate
    on the mixed rows whose ends it predicts in the same class (intra) and in different classes
    (inter); ``ice_type="both"`` averages the two (ignoring an empty group).

    Parameters
    ----------
    alpha : float, default=0.55
    ice_type : {"both", "intra", "inter"}, default="both"
    random_state : int, RandomState or None, default=0

    Notes
    -----
    skada's ``MixValScorer`` algorithm, same value with the same ``random_state`` (tested);
    the accuracy is computed from ``predict`` (skada calls ``estimator.score``). Mixing is in
    the input space, so ``X`` must be numeric. NaN if the chosen group is empty. Works without
    skada.
    """

    _needs_source = False
    _parameter_constraints: dict = {
        "alpha": [Interval(Real, 0, 1, closed="both")],
        "ice_type": [StrOptions({"both", "intra", "inter"})],
        "random_state": ["random_state"],
    }

    def __init__(self, alpha=0.55, ice_type="both", random_state=0):
        self.alpha = alpha
        self.ice_type = ice_type
        self.random_state = random_state

    def _score(self, estimator, fold: _Fold) -> float:
        Xt = fold.Xa[fold.tgt]
        perm = check_random_state(self.random_state).permutation(Xt.shape[0])
        a = np.asarray(_call(estimator, "predict", fold, fold.tgt))
        b = a[perm]
        mix = self.alpha * Xt + (1 - self.alpha) * Xt[perm]
        labels = a if self.alpha >= 0.5 else b
        sd_t = fold.sd[fold.tgt]
        if hasattr(fold.X, "columns"):       # a DataFrame: keep the column names
            mix = type(fold.X)(mix, columns=fold.X.columns)
        pred = np.asarray(estimator.predict(mix, **_domain_kw(estimator, "predict", sd_t)))
        hit = pred == labels
        same = a == b
        ice = {"intra": np.mean(hit[same]) if same.any() else np.nan,
               "inter": np.mean(hit[~same]) if (~same).any() else np.nan}
        if self.ice_type == "both":
            vals = [v for v in ice.values() if not np.isnan(v)]
            return float(np.mean(vals)) if vals else np.nan
        return float(ice[self.ice_type])


# --------------------------------------------------------------------------- MMD (ours)
class MMDScorer(_DomainScorer):
    """Source accuracy penalised by the MMD between the embedded, labeled source rows and the
    embedded target rows with their *predicted* labels (ours).

    ``score = acc_S - lam * JMMD``, where ``acc_S`` is the accuracy on the fold's labeled source
    rows and ``JMMD`` the maximum mean discrepancy between the joint distributions of
    (embedding, class): source rows with their labels, target rows with the candidate's
    predictions. With the product kernel ``k(z, z') [c == c']`` (``k`` Gaussian),

    ``JMMD^2 = sum_c || (1/n_s) sum_{i in S, y_i = c} phi(z_i) - (1/n_t) sum_{j in T,
    yhat_j = c} phi(z_j) ||^2``,

    the class-by-class distance between the source classes and the target rows predicted in
    them (their mean embeddings weighted by the class shares). ``z`` is the candidate's
    embedding (what its classifier sees; the raw inputs for no adaptation) and the bandwidth is
    the median pairwise distance of the pooled embedded rows. ``kind="marginal"`` drops the
    classes: the plain MMD between the embedded source and target rows.

    Why: ``acc_S`` and the MMD are the estimable terms of the bound the splits paper builds on
    (Redko et al. 2022, Thm. 36; Napoli & White, Eq. 3), ``R_T <= R_S + MMD(S, T) + lambda``;
    the remaining term ``lambda`` (how well one classifier fits both domains) is large exactly
    when aligned marginals put target classes next to the wrong source classes. Comparing the
    *joint* distributions with predicted target labels measures that part too: target rows
    predicted ``c`` must lie where the source rows of class ``c`` lie, in the same proportion.
    Source accuracy alone prefers unaligned embeddings; the MMD alone prefers collapsing every
    row to one point, which the accuracy term forbids. The median bandwidth makes the MMD
    invariant to the scale of the embedding (embeddings of different sizes and scales are
    comparable) and keeps it in
    ``[0, sqrt(2)]``, on the scale of an accuracy, so ``lam = 1`` weighs the two terms as the
    bound does. On the SCA toy (``docs/model_selection.md``) the joint form selects near the
    oracle with 1NN and with logistic regression at ``lam = 1``; the marginal form needed
    ``lam = 2`` with 1NN.

    Limits: a label shift between the domains (other class shares in the target) is penalised
    as a mismatch, and a candidate that maps every target class onto another source class,
    consistently and with the same shares, cannot be told from a correct one (no
    target-label-free criterion can).

    Invariant to the sign of each embedding column: an eigenvector's sign is arbitrary (a
    solve for more components truncated by :class:`~shiftlearn.adaptation.FitMemory`, or
    another solver, may return ``-v``), the Gaussian MMD does not see it, but a random-feature
    estimate with fixed frequencies does (by about ``1e-3`` on MSRC->VOC, the size of the
    gaps between candidates). So each column of the pooled rows is first flipped to make its
    entry of largest magnitude positive (scikit-learn's ``svd_flip``): the same
    embedding up to signs gives the same score, bit for bit (tested), and a search with and
    without ``FitMemory`` the same estimates.

    Cost: each class's mean embedding is a mean of random Fourier features (``n_features``
    frequencies, :func:`shiftlearn.kernels.rff_mean`), linear in the number of rows; the
    bandwidth comes from at most 1000 rows. No ``n x n`` matrix is formed.

    Parameters
    ----------
    lam : float, default=1.0
        Weight of the MMD term.
    kind : {"joint", "marginal"}, default="joint"
    n_features : int, default=500
        Random Fourier frequencies.
    random_state : int or None, default=0
        Seed of the frequencies and of the bandwidth subsample.

    Notes
    -----
    skada has no MMD scorer. Invariant to the order of the rows when the fold has at most 1000
    rows (tested). Works without skada.

    Examples
    --------
    >>> from shiftlearn import DomainAdaptationClassifier, SCA
    >>> from shiftlearn.datasets import make_sca_toy
    >>> X, y, sd = make_sca_toy(n_per_cluster=20, random_state=0)
    >>> raw = DomainAdaptationClassifier(None).fit(X, y, sd)
    >>> s = MMDScorer()(raw, X, y)
    >>> bool(-1.5 < s < 1.0)
    True
    """

    _parameter_constraints: dict = {
        "lam": [Interval(Real, 0, None, closed="left")],
        "kind": [StrOptions({"joint", "marginal"})],
        "n_features": [Interval(Integral, 1, None, closed="left")],
        "random_state": ["random_state"],
    }

    def __init__(self, lam=1.0, kind="joint", n_features=500, random_state=0):
        self.lam = lam
        self.kind = kind
        self.n_features = n_features
        self.random_state = random_state

    def mmd(self, Z_source, Z_target, y_source=None, y_target=None) -> float:
        """The random-feature MMD (median bandwidth) between two embedded samples; the joint
        MMD when the labels of both are given (see the class docstring)."""
        Zs, Zt = np.atleast_2d(np.asarray(Z_source, float), np.asarray(Z_target, float))
        if Zs.shape[1] != Zt.shape[1]:
            raise ValueError(f"MMDScorer.mmd: Z_source has {Zs.shape[1]} columns and Z_target "
                             f"{Zt.shape[1]}; embed both samples with the same transform.")
        if min(len(Zs), len(Zt)) == 0 or Zs.shape[1] == 0:
            raise ValueError(f"MMDScorer.mmd: the samples have {len(Zs)} and {len(Zt)} rows of "
                             f"{Zs.shape[1]} columns; the MMD needs at least one row and one "
                             "column in each (pass the embedded source and target rows).")
        # the pooled rows, each column's largest entry made positive (see the class docstring)
        Z, _ = svd_flip(np.vstack([Zs, Zt]), None)
        n_source = len(Zs)
        Zs, Zt = Z[:n_source], Z[n_source:]
        seed = None if self.random_state is None else int(
            check_random_state(self.random_state).randint(2**31 - 1))
        sigma = median_heuristic(Z, random_state=seed)
        omega = (rff_weights(Zs.shape[1], int(self.n_features), sigma, random_state=seed)
                 if seed is None else _unit_frequencies(Zs.shape[1], int(self.n_features), seed)
                 / sigma)
        if y_source is None or y_target is None:
            return float(np.sqrt(max(mmd2_rff(Zs, Zt, omega), 0.0)))
        ys, yt = np.asarray(y_source), np.asarray(y_target)
        total = 0.0
        for c in np.unique(np.r_[ys, yt]):
            diff = np.zeros(2 * omega.shape[1])
            if np.any(ys == c):
                diff += rff_mean(Zs[ys == c], omega) * np.mean(ys == c)
            if np.any(yt == c):
                diff -= rff_mean(Zt[yt == c], omega) * np.mean(yt == c)
            total += float(diff @ diff)
        return float(np.sqrt(total))

    def _score(self, estimator, fold: _Fold) -> float:
        y_src = fold.y[fold.src]
        acc = float(np.mean(np.asarray(_call(estimator, "predict", fold, fold.src)) == y_src))
        if self.lam == 0:
            return acc
        zs = _embed(estimator, fold.rows(fold.src), fold.sd[fold.src])
        zt = _embed(estimator, fold.rows(fold.tgt), fold.sd[fold.tgt])
        if self.kind == "marginal":
            return acc - self.lam * self.mmd(zs, zt)
        pred_t = np.asarray(_call(estimator, "predict", fold, fold.tgt))
        return acc - self.lam * self.mmd(zs, zt, y_src, pred_t)


@functools.lru_cache(maxsize=4)
def _unit_frequencies(n_input: int, n_features: int, seed: int) -> np.ndarray:
    """``rff_weights(n_input, n_features, 1.0, seed)``, drawn once per shape and seed (a
    search scores every candidate and fold with the same seed: the draws of 4,096 x 500
    frequencies took 8 ms a call); read-only. Divided by ``sigma`` it is bit for bit
    ``rff_weights(n_input, n_features, sigma, seed)`` (the draws divided by 1, then by
    ``sigma``)."""
    W = rff_weights(n_input, n_features, 1.0, random_state=seed)
    W.flags.writeable = False
    return W


# --------------------------------------------------------------------------- MaNo
def _log_softmax(Q: np.ndarray) -> np.ndarray:
    Z = Q - np.max(Q, axis=1, keepdims=True)
    return Z - np.log(np.sum(np.exp(Z), axis=1, keepdims=True))


def softrun(logits, threshold: float = 5.0) -> tuple[np.ndarray, str]:
    """MaNo's normalisation of a logit matrix ``Q`` (``n x K``), Eq. (6) of Xie et al.

    ``Phi = -(1/(n K)) sum_ik log softmax(q_i)_k`` measures how far the softmax outputs are from
    calibrated-looking ones; when ``Phi > threshold`` the rows are soft-maxed, otherwise each is
    normalised by the second-order Taylor expansion of ``exp``: ``sigma(q)_k = (1 + q_k +
    q_k^2 / 2) / sum_j (1 + q_j + q_j^2 / 2)`` (every term is ``((q + 1)^2 + 1) / 2 > 0``).
    Returns ``(sigma(Q), "softmax" or "taylor")``. Cost: ``O(n K)``.

    Examples
    --------
    >>> P, kind = softrun(np.array([[0.0, 0.0]]))
    >>> P.tolist(), kind
    ([[0.5, 0.5]], 'taylor')
    """
    Q = np.asarray(logits, dtype=np.float64)
    log_p = _log_softmax(Q)
    if -float(np.mean(log_p)) > threshold:
        return np.exp(log_p), "softmax"
    T = 1.0 + Q + 0.5 * Q ** 2
    return T / T.sum(axis=1, keepdims=True), "taylor"


class MaNoScorer(_DomainScorer):
    """MaNo (Xie et al., NeurIPS 2024): the normalised entry-wise ``p``-norm of the candidate's
    class probabilities on the target rows; confident target predictions score higher.

    ``score = ((1 / (n_t K)) sum_i sum_k sigma_ik^p)^(1/p)`` (Eq. 2 of the paper, the matrix
    ``p``-norm divided by ``(n_t K)^(1/p)``), in ``[1/K, K^(-1/p)]`` for ``p >= 1``: ``1/K``
    when every row is uniform, ``K^(-1/p)`` when every row is one-hot. ``sigma`` is, by
    ``normalization``:

    * ``"proba"``: the estimator's ``predict_proba`` (skada's route for scikit-learn
      estimators);
    * ``"softrun"``: the paper's normalisation (:func:`softrun`, Eq. 6) of the logits, read
      from ``decision_function``: its ``K`` columns, or for two classes ``[-f/2, f/2]`` (whose
      softmax is ``sigmoid(f)``, the logistic probability, and whose Taylor normalisation does
      not depend on which class is called positive).

    Parameters
    ----------
    p : float, default=4
        Order of the norm (the paper's value; skada's default).
    threshold : float, default=5
        ``eta`` of Eq. (6): softmax when ``Phi > threshold``, the Taylor normalisation
        otherwise (``"softrun"`` only).
    normalization : {"proba", "softrun"}, default="proba"
        Where the probabilities come from (see above).

    Notes
    -----
    With ``normalization="proba"``, equal to skada's ``MaNoScorer`` on a scikit-learn pipeline
    (tested to round-off). skada's logit route (its deep models) departs from Eq. (6): its
    softmax shifts the logits in place, so its Taylor branch sees ``q - max_k q_k``, and it
    subtracts each row's minimum before normalising (the smallest probability becomes 0); here
    the Taylor normalisation is the paper's, on the logits as given (tested against the
    formula). A classifier with hard 0/1 probabilities (1-nearest-neighbour) gives the same
    score to every candidate, reported with a warning. Needs only target rows. Works without
    skada.

    Examples
    --------
    >>> from sklearn.linear_model import LogisticRegression
    >>> from shiftlearn import DomainAdaptationClassifier
    >>> from shiftlearn.datasets import make_sca_toy
    >>> X, y, sd = make_sca_toy(n_per_cluster=20, random_state=0)
    >>> clf = DomainAdaptationClassifier(None, LogisticRegression()).fit(X, y, sd)
    >>> 0.0 < MaNoScorer()(clf, X, y) <= 1.0
    True
    """

    _needs_source = False
    _parameter_constraints: dict = {
        "p": [Interval(Real, 0, None, closed="neither")],
        "threshold": [Interval(Real, None, None, closed="neither")],
        "normalization": [StrOptions({"proba", "softrun"})],
    }

    def __init__(self, p=4, threshold=5.0, normalization="proba"):
        self.p = p
        self.threshold = threshold
        self.normalization = normalization

    def _score(self, estimator, fold: _Fold) -> float:
        if self.normalization == "proba":
            P = np.asarray(_call(estimator, "predict_proba", fold, fold.tgt), dtype=float)
            _warn_if_hard(P, estimator, type(self).__name__)
        else:
            Q = np.asarray(_call(estimator, "decision_function", fold, fold.tgt), dtype=float)
            if Q.ndim == 1:
                Q = np.column_stack([-Q / 2.0, Q / 2.0])
            P, _ = softrun(Q, self.threshold)
        return float(np.mean(P ** self.p) ** (1.0 / self.p))
