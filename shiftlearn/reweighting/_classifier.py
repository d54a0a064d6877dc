"""Weights from a classifier of the domains (DiscriminatorRW) and from nearest-neighbour counts
(NearestNeighborRW).

The design decisions and measurements are in ``docs/dev/reweighting.md``.
"""

from __future__ import annotations

import warnings
from numbers import Integral

import numpy as np
from sklearn.base import clone
from sklearn.calibration import CalibratedClassifierCV
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import StratifiedKFold
from sklearn.neighbors import NearestNeighbors
from sklearn.utils.validation import check_is_fitted

from .._constraints import HasMethods, Interval, StrOptions
from .._stacklevel import user_stacklevel
from ._base import BaseReweighting

__all__ = ["DiscriminatorRW", "NearestNeighborRW"]

#: smallest probability the log-odds read (a probability of exactly 0 or 1 gives +-36.8)
_P_MIN = 1e-16


class DiscriminatorRW(BaseReweighting):
    """Importance weights from a probabilistic classifier of the domains:
    ``w(x) = p(t | x) / p(s | x) * n_s / n_t`` (Bayes' rule turns the odds of the domain
    classifier into the density ratio).

    ``fit(X, y, sample_domain)`` trains ``domain_classifier`` to tell the target rows (class
    1) from the source rows (class 0), calibrated by scikit-learn's ``CalibratedClassifierCV``
    (``calibration`` on ``cv`` stratified folds) unless ``calibration=None``: the ratio is only
    as good as the probabilities. ``weights_`` holds ``w`` on the source rows (from the
    log-odds, scaled to mean 1) and ``1.0`` on the target rows; ``transform`` returns ``X``
    unchanged.

    Parameters
    ----------
    domain_classifier : classifier with predict_proba, or None, default=None
        ``None``: ``LogisticRegression()``. Cloned.
    calibration : {"sigmoid", "isotonic"} or None, default="sigmoid"
        Calibration of the probabilities; ``None``: the classifier's own.
    cv : int, default=5
        Folds of the calibration (lowered to the smaller domain's row count; below 2 the
        classifier is used uncalibrated, with a warning).
    random_state : int, RandomState or None, default=None
        Seed of the calibration folds' shuffle.

    Attributes
    ----------
    weights_ : ndarray of shape (n_samples,)
    domain_classifier_ : fitted classifier (the calibrated one when calibrated)
    effective_sample_size_ : float
        Kish's effective sample size of the source rows' weights, ``(sum w)^2 / sum w^2``
        (fit warns below 1% of the source rows, or 2).
    log_scale_ : float
    n_source_, n_target_ : int
    n_features_in_ : int
    feature_names_in_ : ndarray of str
        Only when ``X`` had string column names.

    Raises
    ------
    ValueError
        No source rows; NaN/inf in ``X``.

    Notes
    -----
    Cost: that of the classifier on ``n_s + n_t`` rows, ``cv + 1`` times when calibrated.
    skada's ``DiscriminatorReweightAdapter`` (0.6) returns ``p(s | x) / p(t | x)``, the
    inverse of the ratio (``docs/dev/reweighting.md``).

    References
    ----------
    S. Bickel, M. Brueckner and T. Scheffer, "Discriminative learning for differing training
    and test distributions", ICML 2007 (the ratio from a domain classifier); J. Platt,
    "Probabilistic outputs for support vector machines", 1999 (sigmoid calibration).

    Examples
    --------
    >>> import numpy as np
    >>> from shiftlearn.reweighting import DiscriminatorRW
    >>> rng = np.random.default_rng(0)
    >>> X = np.vstack([rng.normal(0, 1, (40, 2)), rng.normal(1, 1, (30, 2))])
    >>> sd = np.r_[np.ones(40, int), -np.ones(30, int)]
    >>> w = DiscriminatorRW(random_state=0).fit(X, sample_domain=sd).weights_
    >>> bool(w[:40].argmax() == X[:40].sum(axis=1).argmax())
    True
    """

    _parameter_constraints: dict = {
        "domain_classifier": [HasMethods(["fit", "predict_proba"]), None],
        "calibration": [StrOptions({"sigmoid", "isotonic"}), None],
        "cv": [Interval(Integral, 2, None, closed="left")],
        "random_state": ["random_state"],
    }

    def __init__(self, domain_classifier=None, calibration="sigmoid", cv=5, random_state=None):
        self.domain_classifier = domain_classifier
        self.calibration = calibration
        self.cv = cv
        self.random_state = random_state

    def _fit_ratio(self, Xs, Xt):
        ns, nt = Xs.shape[0], Xt.shape[0]
        X = np.vstack([Xs, Xt])
        t = np.r_[np.zeros(ns, dtype=np.int64), np.ones(nt, dtype=np.int64)]
        base = LogisticRegression() if self.domain_classifier is None \
            else clone(self.domain_classifier)
        folds = min(int(self.cv), ns, nt)
        if self.calibration is not None and folds < 2:
            warnings.warn(
                f"DiscriminatorRW: {min(ns, nt)} row(s) in the smaller domain leave no folds "
                "to calibrate on; the classifier's probabilities are used uncalibrated.",
                UserWarning, stacklevel=user_stacklevel())
        if self.calibration is not None and folds >= 2:
            clf = CalibratedClassifierCV(
                base, method=self.calibration,
                cv=StratifiedKFold(folds, shuffle=True, random_state=self.random_state))
        else:
            clf = base
        self.domain_classifier_ = clf.fit(X, t)
        self._log_prior = float(np.log(ns) - np.log(nt))
        return self._ratio(Xs)

    def _ratio(self, X):
        check_is_fitted(self, "domain_classifier_")
        proba = self.domain_classifier_.predict_proba(X)
        col = list(self.domain_classifier_.classes_).index(1)
        p_t = np.clip(proba[:, col], _P_MIN, 1.0)
        p_s = np.clip(1.0 - proba[:, col], _P_MIN, 1.0)
        return np.log(p_t) - np.log(p_s) + self._log_prior, True


class NearestNeighborRW(BaseReweighting):
    """Nearest-neighbour importance weights (Loog, 2012): a source row's weight is the number
    of target rows whose nearest source row it is.

    ``fit(X, y, sample_domain)`` finds, for every target row, its ``n_neighbors`` nearest
    source rows (Euclidean) and gives each ``1 / n_neighbors``; a source row's weight is the sum
    it receives (plus 1 with ``laplace_smoothing``, so that no row is dropped), scaled to mean 1
    over the source rows: the count estimates ``n_s/n_t`` times the ratio of the target mass to
    the source mass of the row's Voronoi cell. Target rows get ``1.0``. ``transform`` returns
    ``X`` unchanged.

    Parameters
    ----------
    n_neighbors : int, default=1
        Source rows each target row is shared among (Loog's estimator is ``1``).
    laplace_smoothing : bool, default=False
        Add 1 to every count.

    Attributes
    ----------
    weights_ : ndarray of shape (n_samples,)
    counts_ : ndarray of shape (n_source,)
        The (smoothed) counts, before the scaling.
    effective_sample_size_ : float
        Kish's effective sample size of the source rows' weights, ``(sum w)^2 / sum w^2``
        (fit warns below 1% of the source rows, or 2).
    log_scale_ : float
    n_source_, n_target_ : int
    n_features_in_ : int
    feature_names_in_ : ndarray of str
        Only when ``X`` had string column names.

    Raises
    ------
    ValueError
        No source rows; NaN/inf in ``X``.

    Notes
    -----
    Cost: one neighbour search of the ``n_t`` target rows among the ``n_s`` source rows
    (scikit-learn's ``NearestNeighbors``: a tree for small ``d``, brute force
    ``O(n_s n_t d)`` otherwise). Ties between equidistant source rows go to the first.
    :meth:`compute_weights` gives a new row the weight of its nearest training source row.

    References
    ----------
    M. Loog, "Nearest neighbor-based importance weighting", IEEE International Workshop on
    Machine Learning for Signal Processing, 2012.

    Examples
    --------
    >>> import numpy as np
    >>> from shiftlearn.reweighting import NearestNeighborRW
    >>> X = np.array([[0.0], [1.0], [2.0], [0.9], [1.1], [2.2]])
    >>> sd = np.array([1, 1, 1, -1, -1, -1])
    >>> NearestNeighborRW().fit(X, sample_domain=sd).counts_.tolist()
    [0.0, 2.0, 1.0]
    """

    _parameter_constraints: dict = {
        "n_neighbors": [Interval(Integral, 1, None, closed="left")],
        "laplace_smoothing": ["boolean"],
    }

    def __init__(self, n_neighbors=1, laplace_smoothing=False):
        self.n_neighbors = n_neighbors
        self.laplace_smoothing = laplace_smoothing

    def _fit_ratio(self, Xs, Xt):
        k = min(int(self.n_neighbors), Xs.shape[0])
        self._nn = NearestNeighbors(n_neighbors=k).fit(Xs)
        idx = self._nn.kneighbors(Xt, return_distance=False)
        counts = np.bincount(idx.ravel(), minlength=Xs.shape[0]) / k
        self.counts_ = counts + (1.0 if self.laplace_smoothing else 0.0)
        return self.counts_, False

    def _ratio(self, X):
        check_is_fitted(self, "counts_")
        return self.counts_[self._nn.kneighbors(X, n_neighbors=1, return_distance=False)[:, 0]], \
            False
