"""``SourceCVSearch``: hyper-parameter search scored on SOURCE labels only (the papers' protocol).

Unsupervised domain adaptation has no target labels, so the SCA and TCA papers choose
hyper-parameters by k-fold cross-validation on the labeled source rows: each fold fits the
whole pipeline on all rows except the held-out source fold (the unlabeled target rows always
take part) and scores the predictions on the held-out source rows. The best setting is refitted
on all rows.
"""

from __future__ import annotations

import logging
import time
from copy import deepcopy
from numbers import Integral, Real

import numpy as np
from sklearn.base import BaseEstimator, MetaEstimatorMixin, clone, is_classifier
from sklearn.metrics import check_scoring, get_scorer_names
from sklearn.model_selection import KFold, ParameterGrid, StratifiedKFold
from sklearn.utils import get_tags
from sklearn.utils.metaestimators import available_if
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted

from .._logging import verbose_message
from .._param_validation import HasMethods, Interval, StrOptions, check_params
from .._progress import track
from .._validation import check_X, check_X_y_domain, unlabeled_mask

_LOG = logging.getLogger(__name__)

__all__ = ["SourceCVSearch"]


def _search_estimator_has(attr: str):
    """``available_if`` test (as scikit-learn's searches): the refitted best estimator, else the
    given estimator, has ``attr``."""
    def check(self) -> bool:
        if not self.refit:
            raise AttributeError(f"This SourceCVSearch was created with refit=False: {attr} is "
                                 "available only after refitting on the best parameters; set "
                                 "refit=True.")
        est = self.best_estimator_ if hasattr(self, "best_estimator_") else self.estimator
        getattr(est, attr)          # raises AttributeError if it is missing
        return True
    return check


def _path_key(grid: dict) -> str | None:
    keys = [k for k in grid if k.split("__")[-1] == "n_components" and len(grid[k]) > 1]
    return keys[0] if len(keys) == 1 else None


class SourceCVSearch(MetaEstimatorMixin, BaseEstimator):
    """Grid search scored by k-fold CV on the labeled SOURCE rows only.

    For every parameter setting and fold, ``estimator`` is fitted on all rows but the held-out
    labeled source rows (sources of the other folds *and every target row*, labels of targets
    masked as given) and scored on the held-out source rows. The best setting (highest mean
    score; ties go to the first in grid order) is refitted on all rows, targets included.

    Parameters
    ----------
    estimator : estimator with ``fit(X, y, sample_domain)`` and ``predict``
        Typically a :class:`~shiftlearn.adaptation.DomainAdaptationClassifier`.
    param_grid : dict or list of dicts
        As :class:`sklearn.model_selection.GridSearchCV`.
    cv : int, default=5
        Number of folds over the labeled source rows (stratified when every class has at
        least ``cv`` rows).
    scoring : str, callable or None, default=None
        Scorer on the held-out source rows; ``None`` uses ``estimator.score`` (accuracy).
    refit : bool, default=True
    use_path : bool, default=True
        When the grid varies ``...n_components`` and the estimator has ``fit_path`` (e.g.
        ``DomainAdaptationClassifier`` over TCA/SCA), all ``n_components`` values of one
        setting come from one fit (nested leading eigenvectors, exact).
    random_state : int, default=0
        Seed of the fold shuffling.
    error_score : float, default=nan
        Score recorded when a fit fails (e.g. ``n_components`` too large for a fold).
    verbose : int, default=0
        ``1``: one line per fold (time so far, best setting so far); ``2``: also one line per
        fitted setting. Logged (``logging``, INFO), on stderr when logging is not configured.

    Attributes
    ----------
    cv_results_ : dict
        ``params``, ``mean_test_score``, ``std_test_score``, ``split<i>_test_score``,
        ``rank_test_score``, ``mean_fit_time``.
    best_params_, best_score_, best_index_, best_estimator_
    n_features_in_ : int
    feature_names_in_ : ndarray of str
        Only when ``X`` had string column names; ``predict``/``transform`` then check them.

    Notes
    -----
    Decisions: like :class:`sklearn.model_selection.GridSearchCV` it takes the estimator type
    and the classifier/transformer tags of ``estimator``, and exposes ``predict``,
    ``transform``, ``predict_proba`` and ``score`` only when ``refit=True`` and the estimator has
    them. The sub-fits see plain arrays, so the feature names are checked here.

    Examples
    --------
    >>> from shiftlearn.datasets import make_sca_toy
    >>> from shiftlearn.adaptation import SCA, DomainAdaptationClassifier
    >>> X, y, sd = make_sca_toy(n_per_cluster=20, random_state=0)
    >>> search = SourceCVSearch(DomainAdaptationClassifier(SCA()),
    ...                         {"adapter__n_components": [1, 2], "adapter__beta": [0.1, 0.9]},
    ...                         cv=3).fit(X, y, sd)
    >>> sorted(search.best_params_)
    ['adapter__beta', 'adapter__n_components']
    """

    # scikit-learn metadata routing: sample_domain is requested by default, so
    # GridSearchCV(...).fit(X, y, sample_domain=sd) routes it here when routing is on
    __metadata_request__fit = {"sample_domain": True}

    _parameter_constraints: dict = {
        "estimator": [HasMethods(["fit", "predict"])],
        "param_grid": [dict, list],
        "cv": [Interval(Integral, 2, None, closed="left")],
        "scoring": [StrOptions(set(get_scorer_names())), callable, None],
        "refit": ["boolean"],
        "use_path": ["boolean"],
        "random_state": ["random_state"],
        "error_score": [Real],
        "verbose": ["verbose"],
    }

    def __init__(self, estimator, param_grid, *, cv=5, scoring=None, refit=True, use_path=True,
                 random_state=0, error_score=np.nan, verbose=0):
        self.estimator = estimator
        self.param_grid = param_grid
        self.cv = cv
        self.scoring = scoring
        self.refit = refit
        self.use_path = use_path
        self.random_state = random_state
        self.error_score = error_score
        self.verbose = verbose

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        sub = get_tags(self.estimator)
        tags.estimator_type = sub.estimator_type
        tags.classifier_tags = deepcopy(sub.classifier_tags)
        tags.regressor_tags = deepcopy(sub.regressor_tags)
        tags.transformer_tags = deepcopy(sub.transformer_tags)
        tags.input_tags.pairwise = sub.input_tags.pairwise
        tags.input_tags.sparse = sub.input_tags.sparse
        return tags

    def _folds(self, y, lab_idx):
        yl = y[lab_idx]
        _, counts = np.unique(yl, return_counts=True)
        if counts.min() >= self.cv:
            split = StratifiedKFold(self.cv, shuffle=True, random_state=self.random_state)
            return [lab_idx[te] for _, te in split.split(lab_idx, yl)]
        split = KFold(self.cv, shuffle=True, random_state=self.random_state)
        return [lab_idx[te] for _, te in split.split(lab_idx)]

    def _say(self, level: int, msg: str) -> None:
        if self.verbose >= level:  # logged; on stderr when logging is not configured
            verbose_message(_LOG, msg)

    def _score(self, est, X, y):
        if self.scoring is None:
            return float(est.score(X, y))
        return float(check_scoring(est, scoring=self.scoring)(est, X, y))

    def fit(self, X, y, sample_domain=None):
        """Run the search and (if ``refit``) refit the best setting on all rows."""
        check_params(self)
        if y is None:
            raise ValueError("SourceCVSearch requires y to be passed, but the target y is None: "
                             "the search scores on the labels of the source rows.")
        X, y, sd = check_X_y_domain(X, y, sample_domain, task="classification", estimator=self)
        lab_idx = np.flatnonzero((sd > 0) & ~unlabeled_mask(y))
        if is_classifier(self.estimator):
            check_classification_targets(y[lab_idx])
        if lab_idx.shape[0] < self.cv:
            raise ValueError(f"n_samples={lab_idx.shape[0]} labeled source rows cannot be split "
                             f"into cv={self.cv} folds; lower cv or give more labeled rows.")
        folds = self._folds(y, lab_idx)
        grids = [self.param_grid] if isinstance(self.param_grid, dict) else list(self.param_grid)
        # expand into groups: settings that differ only in the path key share one fit
        groups = []
        for grid in grids:
            grid = {k: list(v) for k, v in grid.items()}
            key = _path_key(grid) if (self.use_path and hasattr(self.estimator, "fit_path")) \
                else None
            if key is None:
                groups += [(None, [p]) for p in ParameterGrid(grid)]
                continue
            rest = {k: v for k, v in grid.items() if k != key}
            for p in ParameterGrid(rest) if rest else [{}]:
                groups.append((key, [{**p, key: k} for k in grid[key]]))
        # folds in the outer loop: consecutive fits share their training rows, so adapters that
        # cache data-dependent work (SCA's factorisation) reuse it across the grid
        params = [p for _, plist in groups for p in plist]
        scores = [np.full((len(plist), len(folds)), np.nan) for _, plist in groups]
        times = [0.0] * len(groups)
        first_error = None
        self._say(1, f"SourceCVSearch: {len(params)} settings x {len(folds)} folds on "
                     f"{lab_idx.shape[0]} labeled source rows ({len(groups)} fits per fold)")
        t_start = time.perf_counter()
        for f, test in enumerate(track(folds, description="source CV folds")):
            train = np.ones(X.shape[0], bool)
            train[test] = False
            for g, (key, plist) in enumerate(groups):
                t0 = time.perf_counter()
                try:
                    if key is None:
                        est = clone(self.estimator).set_params(**plist[0])
                        fitted = [est.fit(X[train], y[train], sd[train])]
                    else:
                        base = clone(self.estimator).set_params(
                            **{k: v for k, v in plist[0].items() if k != key})
                        if key != "adapter__n_components":
                            raise ValueError("path search supports adapter__n_components only")
                        fitted = base.fit_path(X[train], y[train], sd[train],
                                               [p[key] for p in plist])
                    for i, est in enumerate(fitted):
                        scores[g][i, f] = self._score(est, X[test], y[test])
                except ValueError as exc:
                    if not np.isnan(self.error_score):
                        raise
                    scores[g][:, f] = self.error_score
                    first_error = first_error or f"{type(exc).__name__}: {exc}"
                times[g] += time.perf_counter() - t0
                if self.verbose >= 2:
                    self._say(2, f"  fold {f + 1}/{len(folds)} fit {g + 1}/{len(groups)}: "
                                 f"{plist[0] if len(plist) == 1 else plist[0] | {key: '*'}} "
                                 f"scores {np.round(scores[g][:, f], 4).tolist()} "
                                 f"({time.perf_counter() - t0:.1f} s)")
            if self.verbose >= 1:
                self._say(1, f"fold {f + 1}/{len(folds)} done after "
                             f"{time.perf_counter() - t_start:.1f} s; "
                             + _best_so_far(params, scores, f + 1))
        times = [times[g] / (len(folds) * len(plist)) for g, (_, plist) in enumerate(groups)
                 for _ in plist]
        S = np.vstack(scores)
        mean = S.mean(axis=1)
        mean[np.isnan(mean)] = -np.inf     # a setting that failed on any fold ranks last
        self.cv_results_ = {"params": params,
                            "mean_test_score": np.where(np.isfinite(mean), mean, np.nan),
                            "std_test_score": _nanstd_rows(S),
                            "mean_fit_time": np.array(times)}
        for f in range(len(folds)):
            self.cv_results_[f"split{f}_test_score"] = S[:, f]
        order = np.argsort(-mean, kind="stable")
        rank = np.empty(len(mean), int)
        rank[order] = np.arange(1, len(mean) + 1)
        self.cv_results_["rank_test_score"] = rank
        if not np.isfinite(mean).any():
            raise ValueError("Every parameter setting failed on some fold; the first failure: "
                             f"{first_error}")
        self.best_index_ = int(order[0])
        self.best_params_ = params[self.best_index_]
        self.best_score_ = float(mean[self.best_index_])
        if self.refit:
            self.best_estimator_ = clone(self.estimator).set_params(**self.best_params_).fit(
                X, y, sd)
        return self

    def _best(self, X=None):
        """The refitted best estimator and ``X`` checked against the fitted feature count and
        names (as a plain array, which the best estimator was fitted on)."""
        check_is_fitted(self, "best_estimator_")
        return self.best_estimator_, (None if X is None else
                                      check_X(X, estimator=self, reset=False))

    @available_if(_search_estimator_has("predict"))
    def predict(self, X):
        """``best_estimator_.predict``."""
        est, X = self._best(X)
        return est.predict(X)

    @available_if(_search_estimator_has("predict_proba"))
    def predict_proba(self, X):
        """``best_estimator_.predict_proba``."""
        est, X = self._best(X)
        return est.predict_proba(X)

    @available_if(_search_estimator_has("transform"))
    def fit_transform(self, X, y, sample_domain=None):
        """``fit(X, y, sample_domain)`` then ``transform(X)``."""
        return self.fit(X, y, sample_domain).transform(X)

    @available_if(_search_estimator_has("transform"))
    def transform(self, X):
        """``best_estimator_.transform``."""
        est, X = self._best(X)
        return est.transform(X)

    @available_if(_search_estimator_has("score"))
    def score(self, X, y):
        """``best_estimator_.score``."""
        est, X = self._best(X)
        return est.score(X, y)

    @property
    def classes_(self):
        """``best_estimator_.classes_``."""
        return self._best()[0].classes_


def _best_so_far(params: list, scores: list, n_folds_done: int) -> str:
    """``"best so far {params} (mean score)"`` over the first ``n_folds_done`` folds."""
    mean = np.vstack([sc[:, :n_folds_done] for sc in scores]).mean(axis=1)
    if not np.isfinite(mean).any():
        return "every setting has failed so far"
    best = int(np.argmax(np.where(np.isfinite(mean), mean, -np.inf)))
    return f"best so far {params[best]} ({mean[best]:.4f})"


def _nanstd_rows(S: np.ndarray) -> np.ndarray:
    """Row-wise ``nanstd``; NaN (without numpy's warning) for a row with no finite score."""
    out = np.full(S.shape[0], np.nan)
    ok = np.isfinite(S).any(axis=1)
    out[ok] = np.nanstd(S[ok], axis=1)
    return out
