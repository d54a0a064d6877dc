"""What every estimator of the few-labels family shares: reading the rows of a fit (source rows,
labeled target rows, unlabeled target rows), the error when there is no labeled target row,
class labels, and the scoring rule.

A labeled target row is a row with a negative ``sample_domain`` and a label (``y`` not the
unlabeled marker: ``-1``, NaN, ``""`` for classes, NaN for regression targets). Source rows
(positive ids) must all be labeled, as everywhere in the library.
"""

from __future__ import annotations

from typing import Literal

import numpy as np
from sklearn.utils.multiclass import check_classification_targets

from .._constraints import check_params
from .._validation import (
    check_sample_domain,
    check_X_y_domain,
    require_y,
    scored_rows,
    unlabeled_mask,
)

__all__ = ["FitRows", "fit_rows", "proba_in", "score_labeled"]


class FitRows:
    """The validated rows of a fit: ``X``, ``y`` and masks ``source`` (labeled source rows)
    and ``target`` (labeled target rows); ``unlabeled`` marks the unlabeled target rows."""

    def __init__(self, X, y, sd, source, target, unlabeled):
        self.X, self.y, self.sample_domain = X, y, sd
        self.source, self.target, self.unlabeled = source, target, unlabeled


def _no_target_message(name: str, given: bool) -> str:
    how = ("" if given else " sample_domain was not given, so every labeled row was read as a "
           "source row (skada's rule).")
    return (f"{name} learns from a few labeled target rows, and there is none: no row has a "
            f"negative sample_domain and a label.{how} Pass sample_domain (positive ids for "
            "source rows, negative ids for target rows) and keep the labels of the target rows "
            "you know (y = -1, NaN or empty marks the others); with no target label at all, use "
            "a method for unlabeled targets (e.g. shiftlearn.CORAL or shiftlearn.SA).")


def fit_rows(est, X, y, sample_domain, task: Literal["classification", "regression"]
             ) -> FitRows:
    """Validate a fit's input for ``est`` and split its rows. Checks the parameters first
    (``_parameter_constraints``), then ``X`` (finite, numeric; ``n_features_in_`` recorded),
    ``y`` and ``sample_domain`` (:func:`shiftlearn._validation.check_X_y_domain`); raises a
    ``ValueError`` that names the fix when there is no labeled target row. Cost: ``O(n d)``.
    """
    check_params(est)
    require_y(y, est, ": give the labels, y = -1 (or NaN) for the unlabeled target rows, and "
                      "sample_domain.")
    X, y, sd = check_X_y_domain(X, y, sample_domain, estimator=est, task=task)
    unl = unlabeled_mask(y, task=task)
    source = sd > 0
    target = (sd < 0) & ~unl
    if not target.any():
        raise ValueError(_no_target_message(type(est).__name__, sample_domain is not None))
    if task == "classification":
        check_classification_targets(y[~unl])
    else:
        y = np.asarray(y, dtype=np.float64)
    return FitRows(X, y, sd, source, target, (sd < 0) & unl)


def proba_in(classes: np.ndarray, est, X: np.ndarray) -> np.ndarray:
    """``est.predict_proba(X)`` with one column per entry of ``classes`` (a class ``est`` never
    saw gets probability 0). Cost: the estimator's, plus ``O(n K)``."""
    p = est.predict_proba(X)
    out = np.zeros((X.shape[0], classes.shape[0]))
    out[:, np.searchsorted(classes, est.classes_)] = p
    return out


def score_labeled(est, X, y, task: Literal["classification", "regression"],
                  sample_domain=None) -> float:
    """Accuracy (classification) or R^2 (regression) of ``est.predict`` on the rows of ``X``
    that carry a label; unlabeled rows are skipped, as by every estimator's ``score``.
    ``sample_domain`` (the rows' domains) is passed on to ``predict`` when given."""
    from sklearn.metrics import accuracy_score, r2_score
    from sklearn.utils import _safe_indexing

    keep, y = scored_rows(y, task=task)
    if not keep.any():
        raise ValueError("score needs labeled rows: every y is the unlabeled marker.")
    idx = np.flatnonzero(keep)
    params = {}
    if sample_domain is not None:
        sd = check_sample_domain(sample_domain, keep.shape[0])
        params["sample_domain"] = sd[idx]
    pred = est.predict(_safe_indexing(X, idx), **params)
    return float(accuracy_score(y[keep], pred) if task == "classification"
                 else r2_score(np.asarray(y[keep], dtype=np.float64), pred))
