"""What the label-shift classifiers share: reading the rows of a fit, the source classifier, the
class weights and the corrected posterior.

Label shift (target shift): the class proportions change between the source and the target,
``p_t(y) != p_s(y)``, while each class looks the same, ``p_t(x | y) = p_s(x | y)``. Then the
target posterior is the source posterior reweighted by ``w_y = p_t(y) / p_s(y)`` and
renormalised (Bayes' rule), and the whole adaptation is the estimate of the target proportions
``q = p_t(y)`` from unlabeled target rows. A subclass implements
``_weights(rows) -> (w, extra attributes)``; this base fits the source classifier, turns ``w``
into ``class_weights_``, ``target_proportions_`` and the corrected ``predict_proba``.

The design decisions are in ``docs/dev/labelshift.md``.
"""

from __future__ import annotations

import warnings

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin, clone
from sklearn.dummy import DummyClassifier
from sklearn.linear_model import LogisticRegression
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted, has_fit_parameter

from .._constraints import check_params
from .._stacklevel import user_stacklevel
from .._validation import check_X, check_X_y_domain, require_y, scored_rows

__all__ = ["BaseLabelShift", "LabelShiftRows", "classifier_on", "proba_in"]


class LabelShiftRows:
    """The validated rows of a fit: ``X``, class codes ``codes`` of the source rows (indices
    into ``classes``), the source and target masks and the source domain ids."""

    def __init__(self, X, codes, classes, source, target, sd):
        self.X, self.codes, self.classes = X, codes, classes
        self.source, self.target, self.sample_domain = source, target, sd

    @property
    def Xs(self) -> np.ndarray:
        return self.X[self.source]

    @property
    def Xt(self) -> np.ndarray:
        return self.X[self.target]


def read_rows(est, X, y, sample_domain) -> LabelShiftRows:
    """Validate a fit's input for ``est`` (parameters, ``X`` finite and numeric, ``y`` and
    ``sample_domain``) and split its rows: labeled source rows (positive ids) and target rows
    (negative ids; their labels, if any, are ignored). Cost: ``O(n d)``."""
    check_params(est)
    require_y(y, est, ": give the source labels, y = -1 (or NaN) for the target rows, and "
                      "sample_domain.")
    X, y, sd = check_X_y_domain(X, y, sample_domain, estimator=est, task="classification")
    source = sd > 0
    if not source.any():
        raise ValueError(f"{type(est).__name__} needs labeled source rows (positive "
                         "sample_domain): every row is a target row.")
    check_classification_targets(y[source])
    classes, codes = np.unique(y[source], return_inverse=True)
    return LabelShiftRows(X, codes.astype(np.int64), classes, source, sd < 0, sd)


def classifier_on(est, X, codes, n_classes: int, sample_weight=None):
    """A clone of ``est`` fitted on ``(X, codes)``; a constant (prior) classifier when the rows
    hold a single class, which no discriminative classifier can fit."""
    if np.unique(codes).shape[0] < 2:
        return DummyClassifier(strategy="prior").fit(X, codes, sample_weight=sample_weight)
    model = clone(est)
    if sample_weight is None:
        return model.fit(X, codes)
    return model.fit(X, codes, sample_weight=sample_weight)


def proba_in(n_classes: int, model, X: np.ndarray) -> np.ndarray:
    """``model.predict_proba(X)`` with one column per class code ``0 .. n_classes - 1`` (a class
    the model never saw gets probability 0). Cost: the model's, plus ``O(n K)``."""
    p = np.asarray(model.predict_proba(X), dtype=np.float64)
    out = np.zeros((X.shape[0], n_classes))
    out[:, np.asarray(model.classes_, dtype=np.int64)] = p
    return out


def no_target_warning(owner: str) -> None:
    warnings.warn(
        f"{owner}: no target rows (negative sample_domain, or y = -1 without sample_domain), "
        "so there are no target proportions to estimate: they are taken equal to the source "
        "proportions and nothing is corrected. Pass the unlabeled target rows to fit.",
        UserWarning, stacklevel=user_stacklevel())


class BaseLabelShift(ClassifierMixin, BaseEstimator):
    """Base of the label-shift classifiers (see the module docstring)."""

    __metadata_request__fit = {"sample_domain": True}

    #: the estimator predicts labels itself: ``DomainAdaptationClassifier`` gives it its
    #: ``estimator`` instead of appending a classifier after it
    _replaces_estimator = True

    def _estimator(self):
        return LogisticRegression() if self.estimator is None else self.estimator

    def _weights(self, rows: LabelShiftRows, p_source: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def _start_fit(self) -> None:
        """Check what only the subclass needs of the estimator, and give the estimator's own
        fitted attributes their value for a fit that solves nothing (one class, no target
        row)."""

    def fit(self, X, y, sample_domain=None):
        """Estimate the target class proportions and fit the corrected classifier.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            The source and target rows.
        y : array-like of shape (n_samples,)
            Labels of the source rows; ``-1`` (or NaN, ``""``) on the unlabeled target rows.
        sample_domain : array-like of shape (n_samples,), optional
            Positive ids for source rows, negative ids for target rows; inferred from ``y``
            when omitted (labeled rows are source rows, skada's rule). Several source domains
            are pooled (JCPOT keeps them apart), several target domains too.

        Returns
        -------
        self
        """
        rows = read_rows(self, X, y, sample_domain)
        self._start_fit()
        if self.correction == "retrain" and not has_fit_parameter(self._estimator(),
                                                                   "sample_weight"):
            raise ValueError(f"correction='retrain' refits the estimator with class weights, "
                             f"and {type(self._estimator()).__name__}.fit takes no "
                             "sample_weight: use correction='posterior' or another estimator.")
        if self.correction == "posterior" and not hasattr(self._estimator(), "predict_proba"):
            raise ValueError(f"correction='posterior' reweights the estimator's predict_proba, "
                             f"and {type(self._estimator()).__name__} has none: give a "
                             "classifier with probabilities (or correction='retrain').")
        k = rows.classes.shape[0]
        self.classes_ = rows.classes
        p_s = np.bincount(rows.codes, minlength=k) / rows.codes.shape[0]
        self.source_proportions_ = p_s
        if k == 1:
            w = np.ones(1)
        elif not rows.target.any():
            no_target_warning(type(self).__name__)
            w = np.ones(k)
        else:
            w = np.asarray(self._weights(rows, p_s), dtype=np.float64)
            w = np.where(np.isfinite(w), np.maximum(w, 0.0), 0.0)
            if not np.sum(w * p_s) > 0:
                warnings.warn(f"{type(self).__name__}: every estimated class weight is 0 (the "
                              "target looks like no source class); no correction is made. "
                              "Check that the target shares the source's classes and "
                              "features.", UserWarning, stacklevel=user_stacklevel())
                w = np.ones(k)
        q = w * p_s
        q = q / q.sum()
        self.target_proportions_ = q
        self.class_weights_ = q / p_s
        est = self._estimator()
        Xs = rows.Xs
        if self.correction == "retrain" and k > 1:
            sw = self.class_weights_[rows.codes]
            self.estimator_ = classifier_on(est, Xs, rows.codes, k, sample_weight=sw)
        else:
            self.estimator_ = classifier_on(est, Xs, rows.codes, k)
        return self

    def predict_proba(self, X) -> np.ndarray:
        """The target posterior: ``p_t(y | x) = w_y p_s(y | x) / sum_c w_c p_s(c | x)`` with
        ``w = class_weights_`` (``correction="posterior"``), or the probabilities of the
        classifier refitted with those class weights (``correction="retrain"``). A row whose
        reweighted probabilities are all 0 keeps the source posterior. Columns in
        ``classes_`` order. Cost: the estimator's prediction, plus ``O(n K)``."""
        check_is_fitted(self, "estimator_")
        X = check_X(X, estimator=self, reset=False)
        p = self._source_posterior(proba_in(self.classes_.shape[0], self.estimator_, X))
        if self.correction == "retrain":
            return p
        r = p * self.class_weights_
        s = r.sum(axis=1, keepdims=True)
        ok = s[:, 0] > 0
        r[ok] /= s[ok]
        r[~ok] = p[~ok]
        return r

    def _source_posterior(self, p: np.ndarray) -> np.ndarray:
        """The source posterior the correction reweights, from the fitted classifier's
        probabilities ``p`` (a subclass may calibrate them; here ``p`` itself)."""
        return p

    def predict(self, X) -> np.ndarray:
        """The most probable class of the corrected posterior."""
        proba = self.predict_proba(X)
        return self.classes_[np.argmax(proba, axis=1)]

    def score(self, X, y) -> float:
        """Accuracy on the rows that carry a label (unlabeled rows are skipped)."""
        from sklearn.metrics import accuracy_score

        keep, y = scored_rows(y)
        if not keep.any():
            raise ValueError("score needs labeled rows: every y is the unlabeled marker.")
        X = check_X(X, estimator=self, reset=False)
        return float(accuracy_score(y[keep], self.predict(X[keep])))

