"""Optimal-transport label propagation: the source labels carried to the target rows by the
transport plan, and a classifier of the target rows fitted on them.

A labeler (``_replaces_estimator = True``), as :class:`~shiftlearn.mapping.JDOTClassifier`.
The design decisions and measurements are in ``docs/dev/mapping.md``.
"""

from __future__ import annotations

from numbers import Real

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin, clone
from sklearn.dummy import DummyClassifier
from sklearn.neighbors import KNeighborsClassifier
from sklearn.utils.metaestimators import available_if
from sklearn.utils.validation import check_is_fitted

from .._constraints import HasMethods, Interval, check_params
from .._resources import check_dense_memory
from .._validation import check_X, check_X_y_domain, require_y
from ._jdot import label_plan, labeled_score, source_only_warning
from ._ot import import_ot

__all__ = ["OTLabelProp"]


def _has_proba(self) -> bool:
    est = getattr(self, "estimator_", None)
    if est is None:
        est = KNeighborsClassifier(1) if self.estimator is None else self.estimator
    return hasattr(est, "predict_proba")


class OTLabelProp(ClassifierMixin, BaseEstimator):
    """Optimal-transport label propagation: each target row takes the source labels its share
    of the transport plan comes from; a classifier fitted on the target rows and these labels
    predicts new target rows.

    ``fit(X, y, sample_domain)`` solves the plan ``pi`` between the uniform weights of the
    labeled source rows and the unlabeled target rows on the cost
    ``C_ij = ||x_i - x_j||^2`` (exact by default, entropic with ``reg_e > 0``), and gives
    each target row the class probabilities ``P_jc = sum_{i: y_i = c} pi_ij / sum_i pi_ij``
    (``pi^T Y_s`` with ``Y_s`` the one-hot source labels, each row normalised): the
    propagated labels are their argmax. ``estimator`` is then fitted on the target rows and
    their propagated labels; ``predict``/``predict_proba`` apply it to new target rows.
    Several sources are pooled; the target labels are never read.

    A labeler: :class:`~shiftlearn.compose.DomainAdaptationClassifier` with it as
    ``adapter`` fits it (its classifier as ``estimator``) in place of a classifier.

    Parameters
    ----------
    estimator : classifier or None, default=None
        Fitted on the target rows and their propagated labels. ``None``: 1-nearest-neighbour,
        which gives every training target row its propagated label back and a new row the
        label of the nearest training target row (no smoothing to tune).
    reg_e : float >= 0, default=0.0
        ``0``: the exact plan (POT's network simplex); ``> 0``: the entropic plan with this
        weight of the entropy (in the units of the squared distances), whose probabilities
        are softer.

    Attributes
    ----------
    estimator_ : the fitted classifier (a ``DummyClassifier`` when every target row got the
        same label: that label is the prediction everywhere)
    classes_ : ndarray, the source classes
    target_proba_ : ndarray of shape (n_target, n_classes), the propagated probabilities
        ``P`` (columns in ``classes_`` order; ``(0, n_classes)`` without target rows)
    target_labels_ : ndarray of shape (n_target,), their argmax (first class on ties)
    plan_ : ndarray of shape (n_source, n_target)
    n_features_in_ : int
    feature_names_in_ : ndarray of str
        Only when ``X`` had string column names.

    Raises
    ------
    ImportError
        POT is not installed.
    ValueError
        Labeled source rows of one class; the plan exceeding the memory budget; NaN/inf in
        ``X``.

    Notes
    -----
    Cost: the cost matrix ``O(n_s n_t d)``, the plan (network simplex, about
    ``O(n^3 log n)``, ``n = max(n_s, n_t)``, far less in practice; entropic: ``O(n_s n_t)``
    per Sinkhorn iteration), the propagation ``O(n_s n_t)``, then the classifier's fit on
    ``n_t`` rows. Memory ``O(n_s n_t)``, refused up front beyond the package's budget
    (``shiftlearn._resources.MEMORY_BUDGET``). Without target rows the classifier is fitted
    on the source rows, with a warning.

    References
    ----------
    J. Solomon, R. Rustamov, L. Guibas and A. Butscher, "Wasserstein propagation for
    semi-supervised learning", ICML 2014: labels propagated by transport.
    I. Redko, N. Courty, R. Flamary and D. Tuia, "Optimal transport for multi-source domain
    adaptation under target shift", AISTATS 2019: Eq. (7), the label proportions of target
    row ``j`` from the plan, ``(1 / sum_i pi_ij) sum_i pi_ij y_i`` (one-hot ``y_i``), i.e.
    ``diag(pi^T 1)^{-1} pi^T Y_s``.

    Examples
    --------
    >>> from shiftlearn.mapping import OTLabelProp
    >>> from shiftlearn.datasets import make_sca_toy
    >>> X, y, sd = make_sca_toy(n_per_cluster=10, random_state=0)
    >>> lp = OTLabelProp().fit(X, y, sd)
    >>> lp.target_proba_.shape, lp.predict(X[sd < 0]).shape
    ((30, 3), (30,))
    """

    # scikit-learn metadata routing: sample_domain is requested by default
    __metadata_request__fit = {"sample_domain": True}
    # and to the prediction methods and score, which take it for the protocol's sake (every
    # row is predicted by the target model)
    __metadata_request__predict = {"sample_domain": True}
    __metadata_request__predict_proba = {"sample_domain": True}
    __metadata_request__score = {"sample_domain": True}

    #: a labeler: DomainAdaptationClassifier fits it in place of adapter + classifier
    _replaces_estimator = True
    #: float64 ``n_s x n_t`` arrays held at once (cost, plan, the solver's copies)
    _PLAN_ARRAYS = 4.0

    _parameter_constraints: dict = {
        "estimator": [HasMethods(["fit", "predict"]), None],
        "reg_e": [Interval(Real, 0, None, closed="left")],
    }

    def __init__(self, estimator=None, reg_e=0.0):
        self.estimator = estimator
        self.reg_e = reg_e

    def fit(self, X, y, sample_domain=None):
        """Propagate the source labels to the target rows and fit the classifier on them.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)
            Source labels; ``-1`` (or NaN) on the target rows, whose labels, if given, are
            never read.
        sample_domain : array-like of shape (n_samples,), optional
            Positive = source, negative = target; inferred from ``y`` when omitted.

        Returns
        -------
        self
        """
        check_params(self)
        require_y(y, self, ": give the labels of the source rows and -1 (or NaN) for the "
                           "unlabeled target rows.")
        X, y, sd = check_X_y_domain(X, y, sample_domain, task="classification",
                                    estimator=self)
        src, tgt = sd > 0, sd < 0
        classes, codes = np.unique(y[src], return_inverse=True)
        if classes.shape[0] < 2:
            raise ValueError(
                f"The labeled source rows hold one class only ({classes[0]}): every target "
                "row would get that label. Give labeled source rows of at least 2 classes "
                "(y = -1 marks unlabeled rows; if -1 is one of your classes, re-encode the "
                "labels, e.g. with sklearn.preprocessing.LabelEncoder).")
        self.classes_ = classes
        est = KNeighborsClassifier(n_neighbors=1) if self.estimator is None else self.estimator
        Xs = X[src].astype(np.float64, copy=False)
        ns, nt, K = Xs.shape[0], int(tgt.sum()), classes.shape[0]
        if nt == 0:
            source_only_warning(type(self).__name__)
            self.estimator_ = clone(est).fit(Xs, y[src])
            self.plan_ = np.zeros((ns, 0))
            self.target_proba_ = np.zeros((0, K))
            self.target_labels_ = classes[:0]
            return self
        check_dense_memory(ns, nt, self._PLAN_ARRAYS,
                           f"OTLabelProp.fit on {ns} source and {nt} target rows", "",
                           advice="Fit on a subsample of the rows (the plan is n_source x "
                                  "n_target).")
        ot = import_ot()
        Xt = X[tgt].astype(np.float64, copy=False)
        a, b = np.full(ns, 1.0 / ns), np.full(nt, 1.0 / nt)
        M = ot.dist(Xs, Xt, metric="sqeuclidean")
        plan = label_plan(ot, a, b, M, float(self.reg_e))
        onehot = np.zeros((ns, K))
        onehot[np.arange(ns), codes] = 1.0
        P = plan.T @ onehot
        mass = P.sum(axis=1, keepdims=True)
        empty = mass[:, 0] <= 0
        if empty.any():          # an entropic column that underflowed: the source shares
            P[empty] = onehot.mean(axis=0)
            mass[empty] = 1.0
        P /= mass
        labels = classes[np.argmax(P, axis=1)]
        self.plan_ = plan
        self.target_proba_ = P
        self.target_labels_ = labels
        if np.unique(labels).shape[0] < 2:
            self.estimator_ = DummyClassifier(strategy="most_frequent").fit(Xt, labels)
        else:
            self.estimator_ = clone(est).fit(Xt, labels)
        return self

    def predict(self, X, sample_domain=None):
        """Labels of the rows of ``X`` (target rows) from the fitted classifier
        (``sample_domain`` is accepted for the package's protocol and ignored)."""
        check_is_fitted(self, "estimator_")
        X = check_X(X, estimator=self, reset=False)
        return self.estimator_.predict(X)

    def score(self, X, y, sample_weight=None, sample_domain=None):
        """Accuracy on the rows of ``X`` that carry a label (unlabeled rows are skipped)."""
        return labeled_score(self, X, y, sample_weight, "classification")

    @available_if(_has_proba)
    def predict_proba(self, X, sample_domain=None):
        """Class probabilities of the rows of ``X`` (columns in ``classes_`` order; ``0`` for
        a class no target row was given)."""
        check_is_fitted(self, "estimator_")
        X = check_X(X, estimator=self, reset=False)
        p = self.estimator_.predict_proba(X)
        out = np.zeros((p.shape[0], self.classes_.shape[0]))
        out[:, np.searchsorted(self.classes_, self.estimator_.classes_)] = p
        return out
