"""``FeatureAugmentation``: Daumé III's "frustratingly easy" domain adaptation."""

from __future__ import annotations

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin, MetaEstimatorMixin, clone, is_regressor
from sklearn.linear_model import LogisticRegression
from sklearn.utils.metaestimators import available_if
from sklearn.utils.validation import check_is_fitted

from .._constraints import HasMethods
from .._validation import check_sample_domain, check_X
from ._base import fit_rows, score_labeled

__all__ = ["FeatureAugmentation", "augment"]


def augment(X: np.ndarray, sample_domain: np.ndarray) -> np.ndarray:
    """Daumé's augmented features: ``[x, x, 0]`` for a source row (positive
    ``sample_domain``), ``[x, 0, x]`` for a target row (negative). Shape ``(n, 3 d)``, the
    dtype of ``X``; cost ``O(n d)`` time and memory.

    Examples
    --------
    >>> augment(np.array([[1.0, 2.0], [3.0, 4.0]]), np.array([1, -2])).tolist()
    [[1.0, 2.0, 1.0, 2.0, 0.0, 0.0], [3.0, 4.0, 0.0, 0.0, 3.0, 4.0]]
    """
    X = np.asarray(X)
    n, d = X.shape
    Z = np.zeros((n, 3 * d), dtype=X.dtype)
    src = np.asarray(sample_domain) > 0
    Z[:, :d] = X
    Z[src, d:2 * d] = X[src]
    Z[~src, 2 * d:] = X[~src]
    return Z


def _inner_has(attr):
    def check(self):
        return hasattr(self.estimator_ if hasattr(self, "estimator_") else
                       (self.estimator or LogisticRegression()), attr)
    return check


class FeatureAugmentation(MetaEstimatorMixin, ClassifierMixin, BaseEstimator):
    """Feature augmentation (Daumé III 2007): one model on features copied per domain.

    Each row ``x`` becomes ``[x, x, 0]`` if it is a source row and ``[x, 0, x]`` if it is a
    target row; ``estimator`` is fitted on the augmented labeled rows (source rows and labeled
    target rows). The first block is shared by both domains, the second is source-specific and
    the third target-specific, so a regularised linear model learns what the domains share
    where the data agree and a target-specific correction where the few target labels say so.
    All source domains share the source block, all target domains the target block. Unlabeled
    target rows are ignored.

    The task follows ``estimator``: a classifier (the default) makes this a classifier; a
    regressor (``sklearn.base.is_regressor``, e.g. ``Ridge()``) makes it a regressor, whose
    unlabeled target rows are marked with NaN and whose ``score`` is R^2.

    Parameters
    ----------
    estimator : classifier, regressor or None, default None
        Fitted on the augmented rows (cloned into ``estimator_``); ``None`` means
        ``sklearn.linear_model.LogisticRegression()``.

    Attributes
    ----------
    estimator_ : the fitted clone, on ``3 * n_features_in_`` columns.
    classes_ : ndarray, the labels (``estimator_.classes_``; a classifier only).
    n_features_in_, feature_names_in_ : as scikit-learn records them.

    Raises
    ------
    ValueError
        No labeled target row (the message says how to pass them), an unlabeled source row,
        non-finite ``X``.

    Notes
    -----
    Cost: the augmented matrix is ``O(n d)`` (three times ``X``), then the estimator's fit on
    ``n`` rows and ``3 d`` columns (``LogisticRegression``: ``O(n d)`` per L-BFGS iteration).
    ``predict`` reads rows as target rows unless ``sample_domain`` says otherwise.

    References
    ----------
    H. Daumé III, "Frustratingly easy domain adaptation", ACL 2007. The map is
    ``Phi_s(x) = <x, x, 0>`` for source rows and ``Phi_t(x) = <x, 0, x>`` for target rows; in
    kernel form ``K_aug(x, x') = 2 K(x, x')`` within a domain and ``K(x, x')`` across domains.

    Examples
    --------
    >>> import numpy as np
    >>> X = np.array([[0.0], [1.0], [0.2], [1.2], [0.3], [1.1]])
    >>> y = np.array([0, 1, 0, 1, -1, -1]); sd = np.array([1, 1, -2, -2, -2, -2])
    >>> FeatureAugmentation().fit(X, y, sd).predict(X[4:]).shape
    (2,)
    """

    __metadata_request__fit = {"sample_domain": True}
    __metadata_request__predict = {"sample_domain": True}
    __metadata_request__predict_proba = {"sample_domain": True}
    __metadata_request__decision_function = {"sample_domain": True}
    __metadata_request__score = {"sample_domain": True}

    _parameter_constraints: dict = {"estimator": [HasMethods(["fit", "predict"]), None]}

    def __init__(self, estimator=None):
        self.estimator = estimator

    def fit(self, X, y, sample_domain=None):
        """Fit ``estimator`` on the augmented source rows and labeled target rows.

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
        rows = fit_rows(self, X, y, sample_domain, self._task())
        keep = rows.source | rows.target
        Z = augment(rows.X[keep], rows.sample_domain[keep])
        est = LogisticRegression() if self.estimator is None else self.estimator
        self.estimator_ = clone(est).fit(Z, rows.y[keep])
        return self

    def _task(self) -> str:
        est = self.estimator
        return ("regression" if est is not None and is_regressor(est) else "classification")

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        if self._task() == "regression":
            from sklearn.utils import RegressorTags

            tags.estimator_type = "regressor"
            tags.classifier_tags = None
            tags.regressor_tags = RegressorTags()
        return tags

    def _augmented(self, X, sample_domain) -> np.ndarray:
        check_is_fitted(self, "estimator_")
        X = check_X(X, estimator=self, reset=False)
        sd = (np.full(X.shape[0], -1, dtype=np.int64) if sample_domain is None
              else check_sample_domain(sample_domain, X.shape[0]))
        return augment(X, sd)

    @property
    def classes_(self) -> np.ndarray:
        check_is_fitted(self, "estimator_")
        if self._task() == "regression":
            raise AttributeError("FeatureAugmentation with a regressor has no classes_")
        return self.estimator_.classes_

    def predict(self, X, sample_domain=None) -> np.ndarray:
        """Labels (values, with a regressor) of the rows of ``X``, read as target rows
        (``sample_domain=None``) or as their ``sample_domain`` says. Cost: ``O(n d)`` plus the
        estimator's."""
        Z = self._augmented(X, sample_domain)
        return self.estimator_.predict(Z)

    @available_if(_inner_has("predict_proba"))
    def predict_proba(self, X, sample_domain=None) -> np.ndarray:
        """Class probabilities of the estimator on the augmented rows, columns in
        ``classes_`` order."""
        Z = self._augmented(X, sample_domain)
        return self.estimator_.predict_proba(Z)

    @available_if(_inner_has("decision_function"))
    def decision_function(self, X, sample_domain=None) -> np.ndarray:
        """The estimator's decision function on the augmented rows."""
        Z = self._augmented(X, sample_domain)
        return self.estimator_.decision_function(Z)

    def score(self, X, y, sample_domain=None) -> float:
        """Accuracy (R^2 with a regressor) on the rows that carry a label (unlabeled rows are
        skipped)."""
        return score_labeled(self, X, y, self._task(), sample_domain)
