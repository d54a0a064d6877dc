"""Hyper-parameter search with cross-validation that splits by task, never by point.

A validation fold is a set of whole training tasks: the model is fitted on the other tasks and
each validation task is predicted with its embedding computed from its own rows, exactly as a
new test task would be (Blanchard et al. §8.1: 5-fold CV repeated 5 times over random task
splits; their code searches coordinate-wise, which ``staged=True`` reproduces).
"""

from __future__ import annotations

import warnings
from itertools import product

import numpy as np
from sklearn.base import BaseEstimator, clone, is_classifier
from sklearn.model_selection import GroupKFold
from sklearn.utils.validation import check_is_fitted

from .._validation import check_sample_domain

__all__ = ["TaskGroupSearchCV", "task_group_score"]


def task_group_score(estimator, X, y, sample_domain) -> float:
    """The paper's test metric as a score (higher is better), averaged over tasks.

    Classifier: mean over tasks of the per-task accuracy. Regressor: ``-RMSE`` with
    ``RMSE = sqrt(mean over tasks of the per-task MSE)`` (equal task weights; the pooled RMSE
    when tasks have equal sizes).
    """
    sd = check_sample_domain(sample_domain, np.asarray(X).shape[0])
    pred = estimator.predict(X, sd)
    y = np.asarray(y)
    ids = np.unique(sd)
    if is_classifier(estimator):
        return float(np.mean([np.mean(pred[sd == i] == y[sd == i]) for i in ids]))
    mse = [np.mean((pred[sd == i] - y[sd == i]) ** 2) for i in ids]
    return -float(np.sqrt(np.mean(mse)))


def _grid(d: dict) -> list[dict]:
    keys = sorted(d)
    return [dict(zip(keys, vals, strict=True)) for vals in product(*(list(d[k]) for k in keys))]


class TaskGroupSearchCV(BaseEstimator):
    """Grid search over an estimator's parameters with task-level (GroupKFold) folds.

    Parameters
    ----------
    estimator : estimator with ``fit(X, y, sample_domain)`` and ``predict(X, sample_domain)``
    param_grid : dict or list of dict
        Parameter name -> list of values. A list of dicts is a union of grids, or, with
        ``staged=True``, a sequence of stages searched one after another (each stage fixes the
        best values found so far: the authors' coordinate-wise search).
    cv : int, default=5
        Number of task folds (reduced to the number of tasks if larger).
    n_repeats : int, default=1
        Repetitions with independently shuffled task folds (the paper uses 5).
    staged : bool, default=False
    scoring : callable or None
        ``scoring(estimator, X, y, sample_domain) -> float``, higher is better; default
        :func:`task_group_score`.
    refit : bool, default=True
        Refit the best parameters on all training tasks.
    random_state : int or None
        Seeds the fold shuffling.

    Attributes
    ----------
    best_params_, best_score_, best_estimator_, cv_results_ (list of dicts with ``params``,
    ``mean_score``, ``std_score``).

    Examples
    --------
    >>> from shiftlearn.datasets import make_rotated_ellipses
    >>> from shiftlearn.generalization import MarginalTransferClassifier
    >>> X, y, sd = make_rotated_ellipses(10, 16, random_state=0)
    >>> search = TaskGroupSearchCV(MarginalTransferClassifier(random_state=0),
    ...                            {"C": [1.0, 10.0]}, cv=2).fit(X, y, sd)
    >>> sorted(search.best_params_)
    ['C']
    """

    def __init__(self, estimator, param_grid, *, cv=5, n_repeats=1, staged=False, scoring=None,
                 refit=True, random_state=None):
        self.estimator = estimator
        self.param_grid = param_grid
        self.cv = cv
        self.n_repeats = n_repeats
        self.staged = staged
        self.scoring = scoring
        self.refit = refit
        self.random_state = random_state

    def _splits(self, sd):
        n_tasks = np.unique(sd).shape[0]
        if n_tasks < 2:
            raise ValueError("Task-level cross-validation needs at least 2 training tasks, "
                             f"got {n_tasks}.")
        k = min(self.cv, n_tasks)
        rng = np.random.default_rng(self.random_state)
        out = []
        for _ in range(self.n_repeats):
            gkf = GroupKFold(n_splits=k, shuffle=True,
                             random_state=int(rng.integers(2**31 - 1)))
            out.extend(gkf.split(np.zeros(sd.shape[0]), groups=sd))
        return out

    def _evaluate(self, params, X, y, sd, splits):
        score = self.scoring or task_group_score
        scores = []
        for tr, va in splits:
            est = clone(self.estimator).set_params(**params)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # convergence chatter inside CV
                est.fit(X[tr], y[tr], sd[tr])
            scores.append(score(est, X[va], y[va], sd[va]))
        return float(np.mean(scores)), float(np.std(scores))

    def fit(self, X, y, sample_domain):
        """Search on labeled training tasks (``sample_domain``: one id per task)."""
        X = np.asarray(X)
        y = np.asarray(y)
        sd = check_sample_domain(sample_domain, X.shape[0])
        splits = self._splits(sd)
        grids = [self.param_grid] if isinstance(self.param_grid, dict) else list(self.param_grid)
        if not grids:
            raise ValueError("param_grid is empty.")
        self.cv_results_ = []
        best, best_score = {}, -np.inf
        for stage in grids:
            candidates = _grid(stage)
            stage_best, stage_score = None, -np.inf
            for cand in candidates:
                params = {**best, **cand} if self.staged else cand
                mean, std = self._evaluate(params, X, y, sd, splits)
                self.cv_results_.append({"params": params, "mean_score": mean,
                                         "std_score": std})
                if mean > stage_score:
                    stage_best, stage_score = params, mean
            if self.staged or stage_score > best_score:
                best, best_score = stage_best, stage_score
        self.best_params_ = best
        self.best_score_ = best_score
        if self.refit:
            self.best_estimator_ = clone(self.estimator).set_params(**best).fit(X, y, sd)
        return self

    def predict(self, X, sample_domain=None):
        """``best_estimator_.predict(X, sample_domain)``."""
        check_is_fitted(self, "best_estimator_")
        return self.best_estimator_.predict(X, sample_domain)

    def score(self, X, y, sample_domain=None):
        """:func:`task_group_score` (or ``scoring``) of the refitted best estimator."""
        check_is_fitted(self, "best_estimator_")
        if sample_domain is None:
            sample_domain = np.ones(np.asarray(X).shape[0], dtype=np.int64)
        return (self.scoring or task_group_score)(self.best_estimator_, X, y, sample_domain)
