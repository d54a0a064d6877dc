"""``DomainAdaptationClassifier``: any adapter + any scikit-learn classifier, predict the target."""

from __future__ import annotations

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin, clone
from sklearn.neighbors import KNeighborsClassifier
from sklearn.utils.validation import check_is_fitted

from .._validation import check_X, check_X_y_domain, unlabeled_mask

__all__ = ["DomainAdaptationClassifier"]


def _truncatable(adapter) -> bool:
    return hasattr(adapter, "truncate")


class DomainAdaptationClassifier(ClassifierMixin, BaseEstimator):
    """Fit a domain adapter on all rows, a classifier on the adapted labeled source rows.

    ``fit(X, y, sample_domain)``: the adapter (e.g. :class:`~shiftlearn.adaptation.TCA`,
    :class:`~shiftlearn.adaptation.SCA`) is fitted on every row (labeled sources and the
    unlabeled targets), then ``estimator`` on the embedding of the labeled source rows
    (``sample_domain > 0`` and ``y`` not ``-1``/NaN). ``predict(X)`` embeds ``X`` with the fitted
    adapter and calls the classifier: pass the target rows to label them.

    Parameters
    ----------
    adapter : transformer with ``fit(X, y, sample_domain)``
        Cloned in ``fit``.
    estimator : classifier or None, default=None
        ``None`` means ``KNeighborsClassifier(n_neighbors=1)`` (the papers' 1NN protocol).

    Attributes
    ----------
    adapter_ : fitted clone of ``adapter``
    estimator_ : fitted clone of ``estimator``
    classes_ : ndarray

    Examples
    --------
    >>> from shiftlearn.datasets import make_sca_toy
    >>> from shiftlearn.adaptation import SCA, DomainAdaptationClassifier
    >>> X, y, sd = make_sca_toy(n_per_cluster=20, random_state=0)
    >>> clf = DomainAdaptationClassifier(SCA(n_components=2)).fit(X, y, sd)
    >>> clf.predict(X[sd < 0]).shape
    (60,)
    """

    def __init__(self, adapter, estimator=None):
        self.adapter = adapter
        self.estimator = estimator

    def _validate(self, X, y, sample_domain):
        X, y, sd = check_X_y_domain(X, y, sample_domain, task="classification")
        lab = (sd > 0) & ~unlabeled_mask(y)
        if not lab.any():
            raise ValueError("No labeled source rows to train the classifier on.")
        return X, y, sd, lab

    def _fit_classifier(self, Z, y, lab):
        est = KNeighborsClassifier(n_neighbors=1) if self.estimator is None else self.estimator
        self.estimator_ = clone(est).fit(Z[lab], y[lab])
        self.classes_ = self.estimator_.classes_
        return self

    def fit(self, X, y, sample_domain=None):
        """Fit the adapter on all rows and the classifier on the labeled source rows.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)
            ``-1`` (or NaN) marks unlabeled (target) rows.
        sample_domain : array-like of shape (n_samples,), optional
            Positive = source, negative = target; inferred from ``y`` if omitted.

        Returns
        -------
        self
        """
        X, y, sd, lab = self._validate(X, y, sample_domain)
        self.adapter_ = clone(self.adapter)
        Z = self.adapter_.fit_transform(X, y, sample_domain=sd)
        self.n_features_in_ = X.shape[1]
        return self._fit_classifier(Z, y, lab)

    def fit_path(self, X, y, sample_domain, n_components_values):
        """Fitted copies for several ``adapter__n_components`` from ONE adapter fit.

        Valid for adapters whose leading components are nested (TCA, SCA: eigenvectors sorted
        by eigenvalue, scaled per component); they expose ``truncate(k)``. Used by
        :class:`~shiftlearn.model_selection.SourceCVSearch` to search ``n_components`` at the
        cost of one eigen-solve. Returns a list of fitted estimators in the order given.
        """
        if not _truncatable(self.adapter):
            raise ValueError(f"{type(self.adapter).__name__} has no truncate(k); "
                             "fit each n_components separately.")
        X, y, sd, lab = self._validate(X, y, sample_domain)
        ks = [int(k) for k in n_components_values]
        big = clone(self.adapter).set_params(n_components=max(ks))
        Zfull = big.fit_transform(X, y, sample_domain=sd)
        out = []
        for k in ks:
            est = clone(self).set_params(adapter=clone(self.adapter).set_params(n_components=k))
            est.adapter_ = big.truncate(k)
            est.n_features_in_ = X.shape[1]
            est._fit_classifier(Zfull[:, :k], y, lab)
            out.append(est)
        return out

    def transform(self, X):
        """The adapted features of ``X``."""
        check_is_fitted(self, "estimator_")
        return self.adapter_.transform(check_X(X))

    def predict(self, X):
        """Labels of ``X`` (typically the target rows)."""
        return self.estimator_.predict(self.transform(X))

    def predict_proba(self, X):
        """Class probabilities, when the classifier has ``predict_proba``."""
        return self.estimator_.predict_proba(self.transform(X))

    def score(self, X, y, sample_weight=None):
        """Accuracy on the rows of ``X`` that carry a label (unlabeled rows are skipped)."""
        y = np.asarray(y)
        keep = ~unlabeled_mask(y)
        return super().score(np.asarray(X)[keep], y[keep], sample_weight=None if
                             sample_weight is None else np.asarray(sample_weight)[keep])
