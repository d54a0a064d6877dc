"""``LinInt``: the interpolation of a source model and a target model (Daumé's baseline)."""

from __future__ import annotations

from numbers import Integral

import numpy as np
from scipy.optimize import minimize_scalar
from sklearn.base import BaseEstimator, ClassifierMixin, clone
from sklearn.dummy import DummyClassifier
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import KFold
from sklearn.utils.validation import check_is_fitted

from .._constraints import HasMethods, Interval
from .._validation import check_X
from ._base import fit_rows, proba_in, score_labeled

__all__ = ["LinInt", "interpolation_weight"]

#: floor added to every mixed probability, so that a row whose class both models give
#: probability 0 has a finite loss (the loss stays convex in alpha)
_FLOOR = 1e-12


def interpolation_weight(p_source: np.ndarray, p_target: np.ndarray) -> float:
    """``alpha`` in ``[0, 1]`` minimising ``-sum_i log(alpha p_source[i] + (1 - alpha)
    p_target[i] + 1e-12)``, the log-loss of the interpolated probabilities of each row's class.

    ``p_source`` and ``p_target`` hold, per labeled row, the probability each model gives the
    row's class. The loss is convex in ``alpha`` (minus the log of an affine function): bounded
    Brent search, then the better of its result and the two ends. Cost: ``O(m)`` per
    evaluation, about 40 evaluations.

    Examples
    --------
    >>> interpolation_weight(np.array([0.9, 0.8]), np.array([0.1, 0.2]))
    1.0
    """
    ps, pt = np.asarray(p_source, dtype=np.float64), np.asarray(p_target, dtype=np.float64)

    def loss(a):
        return -float(np.sum(np.log(a * ps + (1.0 - a) * pt + _FLOOR)))

    res = minimize_scalar(loss, bounds=(0.0, 1.0), method="bounded", options={"xatol": 1e-8})
    cands = [0.0, 1.0, float(res.x)]
    return min(cands, key=loss)


def _classifier_on(est, X, y):
    """A clone of ``est`` fitted on ``(X, y)``; a constant (prior) classifier when ``y``
    holds a single class, which no discriminative classifier can fit."""
    if np.unique(y).shape[0] < 2:
        return DummyClassifier(strategy="prior").fit(X, y)
    return clone(est).fit(X, y)


class LinInt(ClassifierMixin, BaseEstimator):
    """Linear interpolation of a source model and a target model (Daumé III's LinInt).

    ``estimator`` is fitted once on the source rows and once on the labeled target rows; the
    prediction is ``alpha p_source(c | x) + (1 - alpha) p_target(c | x)``. ``alpha`` minimises
    the log-loss of the interpolation on the labeled target rows, each row predicted by a
    target model fitted without it (``cv``-fold cross-validation over the labeled target
    rows), so the few labels both train the target model and choose the weight without one
    row doing both. The target model is then refitted on every labeled target row. Unlabeled
    target rows are ignored.

    Parameters
    ----------
    estimator : classifier or None, default None
        Cloned into the source and the target model; it needs ``predict_proba``. ``None``
        means ``sklearn.linear_model.LogisticRegression()``. A model whose rows hold one
        class is a constant (``DummyClassifier(strategy="prior")``).
    cv : int, default 5
        Folds over the labeled target rows that choose ``alpha`` (at most one per labeled
        target row). With a single labeled target row there is nothing to hold out:
        ``alpha = 1`` (the source model).
    random_state : int, RandomState instance or None, default None
        Shuffles the rows into folds.

    Attributes
    ----------
    alpha_ : float in [0, 1], the source model's weight.
    source_estimator_, target_estimator_ : the fitted models.
    classes_ : ndarray, the labels of the source rows and the labeled target rows.
    n_features_in_, feature_names_in_ : as scikit-learn records them.

    Raises
    ------
    ValueError
        No labeled target row (the message says how to pass them), an estimator without
        ``predict_proba``, non-finite ``X``.

    Notes
    -----
    Cost: one fit on the source rows, ``min(cv, m) + 1`` fits on at most ``m`` labeled target
    rows, and ``O(m)`` per evaluation of the loss. A class a model never saw gets probability 0
    from it.

    References
    ----------
    H. Daumé III, "Frustratingly easy domain adaptation", ACL 2007 (the LinInt baseline):
    ``p(c | x) = alpha p_S(c | x) + (1 - alpha) p_T(c | x)``, ``alpha`` chosen on held-out
    target data; here ``alpha = argmin_{a in [0, 1]} -sum_i log(a p_S(y_i | x_i) +
    (1 - a) p_T^{-i}(y_i | x_i))`` with ``p_T^{-i}`` the target model of the fold without row
    ``i``.

    Examples
    --------
    >>> import numpy as np
    >>> X = np.array([[0.0], [1.0], [0.2], [1.2], [0.1], [1.1], [0.3], [1.0]])
    >>> y = np.array([0, 1, 0, 1, 0, 1, -1, -1]); sd = np.array([1, 1, -2, -2, -2, -2, -2, -2])
    >>> m = LinInt(cv=2, random_state=0).fit(X, y, sd)
    >>> 0.0 <= m.alpha_ <= 1.0, m.predict(X[6:]).shape
    (True, (2,))
    """

    __metadata_request__fit = {"sample_domain": True}

    _parameter_constraints: dict = {
        "estimator": [HasMethods(["fit", "predict_proba"]), None],
        "cv": [Interval(Integral, 2, None, closed="left")],
        "random_state": ["random_state"],
    }

    def __init__(self, estimator=None, *, cv: int = 5, random_state=None):
        self.estimator = estimator
        self.cv = cv
        self.random_state = random_state

    def fit(self, X, y, sample_domain=None):
        """Fit the source and target models and choose ``alpha``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : array-like of shape (n_samples,), ``-1`` (or NaN, ``""``) for unlabeled rows.
        sample_domain : array-like of shape (n_samples,)
            Positive ids for source rows, negative ids for target rows.

        Returns
        -------
        self
        """
        rows = fit_rows(self, X, y, sample_domain, "classification")
        est = LogisticRegression() if self.estimator is None else self.estimator
        self.classes_ = np.unique(rows.y[rows.source | rows.target])
        Xs, ys = rows.X[rows.source], rows.y[rows.source]
        Xt, yt = rows.X[rows.target], rows.y[rows.target]
        self.source_estimator_ = _classifier_on(est, Xs, ys)
        codes = np.searchsorted(self.classes_, yt)
        m = yt.shape[0]
        if m < 2:
            self.alpha_ = 1.0
        else:
            p_src = proba_in(self.classes_, self.source_estimator_, Xt)[np.arange(m), codes]
            p_tgt = np.empty(m)
            folds = KFold(min(self.cv, m), shuffle=True, random_state=self.random_state)
            for train, test in folds.split(Xt):
                model = _classifier_on(est, Xt[train], yt[train])
                p_tgt[test] = proba_in(self.classes_, model, Xt[test])[
                    np.arange(test.shape[0]), codes[test]]
            self.alpha_ = interpolation_weight(p_src, p_tgt)
        self.target_estimator_ = _classifier_on(est, Xt, yt)
        return self

    def predict_proba(self, X) -> np.ndarray:
        """``alpha_ p_source + (1 - alpha_) p_target``, columns in ``classes_`` order.
        Cost: the two models' predictions."""
        check_is_fitted(self, "target_estimator_")
        X = check_X(X, estimator=self, reset=False)
        return (self.alpha_ * proba_in(self.classes_, self.source_estimator_, X)
                + (1.0 - self.alpha_) * proba_in(self.classes_, self.target_estimator_, X))

    def predict(self, X) -> np.ndarray:
        """The most probable class of the interpolation."""
        proba = self.predict_proba(X)
        return self.classes_[np.argmax(proba, axis=1)]

    def score(self, X, y) -> float:
        """Accuracy on the rows that carry a label (unlabeled rows are skipped)."""
        return score_labeled(self, X, y, "classification")
