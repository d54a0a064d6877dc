"""Hyper-parameter search with cross-validation that splits by task, never by point.

A validation fold is a set of whole training tasks: the model is fitted on the other tasks and
each validation task is predicted with its embedding computed from its own rows, exactly as a
new test task would be (Blanchard et al. §8.1: 5-fold CV repeated 5 times over random task
splits; their code searches coordinate-wise, which ``staged=True`` reproduces). When a chosen
value sits on the edge of its grid the paper re-centres the grid on it (``extend_grid``).

Input decisions: the search trains and scores on the labeled rows of source domains only (the
library's unlabeled convention, as the marginal-transfer estimators: other rows are left out
with a warning that counts them per domain). With a single training task (e.g. ``fit(X, y)``
without ``sample_domain``) there is no other task to hold out, so the folds split that task's
rows (``KFold``, each validation fold embedded as one test task) with a warning that says so.
Parameters are validated declaratively; ``X`` goes through scikit-learn's ``validate_data``
(feature names recorded in ``fit`` and checked at predict).
"""

from __future__ import annotations

import warnings
from copy import deepcopy
from itertools import product
from numbers import Integral, Real

import numpy as np
from sklearn.base import BaseEstimator, MetaEstimatorMixin, clone, is_classifier, is_regressor
from sklearn.model_selection import GroupKFold, KFold
from sklearn.utils import get_tags
from sklearn.utils.metaestimators import available_if
from sklearn.utils.validation import check_is_fitted

from .._constraints import HasMethods, Interval, check_params
from .._stacklevel import user_stacklevel
from .._validation import (
    check_sample_domain,
    check_X,
    check_X_y_domain,
    require_y,
    scored_rows,
)
from ..kernels import parse_bandwidth
from ._marginal_checks import labeled_training_rows

__all__ = ["TaskGroupSearchCV", "task_group_score"]


def task_group_score(estimator, X, y, sample_domain) -> float:
    """The paper's test metric as a score (higher is better), averaged over tasks.

    Classifier: mean over tasks of the per-task accuracy. Regressor: ``-RMSE`` with
    ``RMSE = sqrt(mean over tasks of the per-task MSE)`` (equal task weights; the pooled RMSE
    when tasks have equal sizes). Only labeled rows are scored (the unlabeled ones still embed
    their task); a task without labeled rows is left out.
    """
    sd = check_sample_domain(sample_domain, np.asarray(X).shape[0])
    pred = estimator.predict(X, sd)
    keep, y = scored_rows(y, "classification" if is_classifier(estimator) else "regression")
    ids = np.unique(sd[keep])           # unlabeled rows embed their task but are not scored
    if is_classifier(estimator):
        return float(np.mean([np.mean(pred[keep & (sd == i)] == y[keep & (sd == i)])
                              for i in ids]))
    mse = [np.mean((pred[keep & (sd == i)] - y[keep & (sd == i)]) ** 2) for i in ids]
    return -float(np.sqrt(np.mean(mse)))


def _grid(d: dict) -> list[dict]:
    keys = sorted(d)
    return [dict(zip(keys, vals, strict=True)) for vals in product(*(list(d[k]) for k in keys))]


def _as_scale(v):
    """``(kind, x)``: a positive number (``"int"``/``"float"``) or a bandwidth spec
    ``"<f>*<rule>"`` (:func:`shiftlearn.kernels.parse_bandwidth`; kind ``("spec", rule)``,
    ``x = f``); ``None`` for anything else."""
    if isinstance(v, str):
        try:
            f, rule = parse_bandwidth(v)
        except ValueError:
            return None
        return ("spec", rule), f
    if isinstance(v, Real) and not isinstance(v, bool | np.bool_) and np.isfinite(v) and v > 0:
        return ("int" if isinstance(v, Integral) else "float", float(v))
    return None


def _scale_axis(values):
    """``(kind, sorted distinct scales, log step)`` when ``values`` is a list of at least two
    positive numbers (or ``"<f>*median"`` specs) that re-centring can extend, else ``None``."""
    parsed = [_as_scale(v) for v in values]
    if len(parsed) < 2 or any(p is None for p in parsed):
        return None
    kinds = {p[0] for p in parsed}
    if kinds == {"int", "float"}:
        kinds = {"float"}
    if len(kinds) != 1:
        return None
    xs = np.unique([p[1] for p in parsed])
    if xs.shape[0] < 2:
        return None
    return kinds.pop(), xs, float(np.log(xs[-1] / xs[0]) / (xs.shape[0] - 1))


def _format_scale(kind, x):
    if kind == "int":
        return int(round(x))
    if isinstance(kind, tuple):                     # ("spec", rule)
        return kind[1] if np.isclose(x, 1.0) else f"{x:.6g}*{kind[1]}"
    return float(f"{x:.6g}")


def _recentre(kind, best, step, k, upward):
    """``k`` values spaced by ``exp(step)`` around ``best`` (the paper's re-centring): more of
    them on the side of the edge the best value sits on (``upward``: the top edge)."""
    c = (k - 1) // 2 if upward else k // 2
    vals = [_format_scale(kind, best * np.exp(step * (j - c))) for j in range(k)]
    out = []
    for v in vals:                      # integers may round onto each other
        if v not in out and _as_scale(v) is not None:
            out.append(v)
    return out


def _key(v):
    """A setting's value as a dictionary key: by value where hashable (``1 == 1.0``, so a
    re-centred grid never refits a setting it scored as an int), else by ``repr``."""
    try:
        hash(v)
    except TypeError:
        return repr(v)
    return v


def _estimator_has(attr):
    def check(self):
        return hasattr(self.best_estimator_ if hasattr(self, "best_estimator_")
                       else self.estimator, attr)
    return check


class TaskGroupSearchCV(MetaEstimatorMixin, BaseEstimator):
    """Grid search over an estimator's parameters with task-level (GroupKFold) folds.

    Parameters
    ----------
    estimator : estimator with ``fit(X, y, sample_domain)`` and ``predict(X, sample_domain)``
    param_grid : dict or list of dict
        Parameter name -> list of values. A list of dicts is a union of grids, or, with
        ``staged=True``, a sequence of stages searched one after another (each stage fixes the
        best values found so far: the authors' coordinate-wise search).
    cv : int, default=5
        Number of task folds (reduced to the number of tasks if larger). With a single
        training task, folds of its rows (reduced to the number of rows), with a warning.
    n_repeats : int, default=1
        Repetitions with independently shuffled task folds (the paper uses 5).
    staged : bool, default=False
    scoring : callable or None
        ``scoring(estimator, X, y, sample_domain) -> float``, higher is better; default
        :func:`task_group_score`.
    refit : bool, default=True
        Refit the best parameters on all training tasks.
    extend_grid : int, default=0
        How many times each grid (each stage with ``staged=True``) may be re-centred, as the
        paper does (§8.1: "If any of the chosen hyper-parameters was at the grid boundary, the
        grid was extended accordingly, i.e., the same grid size has been used, however, the
        center of grid has been assigned to the previously selected point"). After a grid is
        searched, every parameter whose list holds at least two positive numbers (or
        ``"<f>*<rule>"`` bandwidth specs of one rule) and whose best value is the smallest or
        largest value tried so far gets a new list: as many values as before, with the list's mean
        log step, centred on the best value (an even-sized list puts the extra value beyond
        the edge). The product grid is
        searched again (settings already scored are not refitted). Integers are rounded.
        ``0`` keeps the grid as given (scikit-learn's behaviour); a best value still on an
        edge after ``extend_grid > 0`` rounds warns.
    random_state : int or None
        Seeds the fold shuffling.

    Attributes
    ----------
    best_params_, best_score_, best_estimator_, cv_results_ (list of dicts with ``params``,
    ``mean_score``, ``std_score``, ``stage``, ``extension`` (0: the grid as given, ``r``: the
    r-th re-centring)), grid_extensions_ (one dict per re-centred parameter: ``stage``,
    ``round``, ``param``, ``best`` (the value that sat on the edge), ``values``),
    best_on_edge_ (parameters whose best value is on the edge of the values tried),
    n_features_in_, feature_names_in_ (DataFrame input), classes_ (classifiers).

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

    # scikit-learn metadata routing: sample_domain is requested by default, so
    # GridSearchCV(...).fit(X, y, sample_domain=sd) routes it here when routing is on
    __metadata_request__fit = {"sample_domain": True}
    # and to the methods whose result depends on the test tasks
    __metadata_request__predict = {"sample_domain": True}
    __metadata_request__decision_function = {"sample_domain": True}
    __metadata_request__score = {"sample_domain": True}

    _parameter_constraints: dict = {
        "estimator": [HasMethods(["fit", "predict"])],
        "param_grid": [dict, list],
        "cv": [Interval(Integral, 2, None, closed="left")],
        "n_repeats": [Interval(Integral, 1, None, closed="left")],
        "staged": ["boolean"],
        "scoring": [callable, None],
        "refit": ["boolean"],
        "extend_grid": [Interval(Integral, 0, None, closed="left")],
        "random_state": ["random_state", np.random.Generator],
    }

    def __init__(self, estimator, param_grid, *, cv=5, n_repeats=1, staged=False, scoring=None,
                 refit=True, extend_grid=0, random_state=None):
        self.estimator = estimator
        self.param_grid = param_grid
        self.cv = cv
        self.n_repeats = n_repeats
        self.staged = staged
        self.extend_grid = extend_grid
        self.scoring = scoring
        self.refit = refit
        self.random_state = random_state

    def _splits(self, sd):
        n_tasks = np.unique(sd).shape[0]
        rng = np.random.default_rng(self.random_state)
        out = []
        if n_tasks < 2:
            n = sd.shape[0]
            if n < 2:
                raise ValueError("TaskGroupSearchCV needs at least 2 labeled rows to "
                                 f"cross-validate, got {n} sample.")
            warnings.warn(
                f"TaskGroupSearchCV: only one training task ({n} labeled rows), so there is no "
                f"task to hold out: the {min(self.cv, n)} folds split its rows and each "
                "validation fold is embedded as one test task. Pass sample_domain with several "
                "training tasks for task-level cross-validation.", UserWarning,
                stacklevel=user_stacklevel())
            for _ in range(self.n_repeats):
                kf = KFold(n_splits=min(self.cv, n), shuffle=True,
                           random_state=int(rng.integers(2**31 - 1)))
                out.extend(kf.split(np.zeros(n)))
            return out
        k = min(self.cv, n_tasks)
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

    def _search_stage(self, i_stage, stage, fixed, X, y, sd, splits):
        """Evaluate one grid (``fixed`` parameters added), then re-centre it up to
        ``extend_grid`` times while the best value of a numeric parameter sits on the edge of
        the values tried. Returns ``(best params, best score, parameters still on an edge)``."""
        axes = {k: list(v) for k, v in stage.items()}
        scale = {k: _scale_axis(v) for k, v in axes.items()}
        tried = {k: {_as_scale(v)[1] for v in vals} for k, vals in axes.items()
                 if scale[k] is not None}
        done, best, best_score = set(), None, -np.inf
        for round_ in range(self.extend_grid + 1):
            for cand in _grid(axes):
                params = {**fixed, **cand}
                key = tuple(sorted((k, _key(v)) for k, v in params.items()))
                if key in done:
                    continue
                done.add(key)
                mean, std = self._evaluate(params, X, y, sd, splits)
                self.cv_results_.append({"params": params, "mean_score": mean,
                                         "std_score": std, "stage": i_stage,
                                         "extension": round_})
                if mean > best_score:
                    best, best_score = params, mean
            if best is None:
                return None, best_score, []
            edge = {}
            for k in tried:
                x = _as_scale(best[k])[1]
                if x in (min(tried[k]), max(tried[k])) and len(tried[k]) >= 2:
                    edge[k] = x == max(tried[k])
            if not edge or round_ == self.extend_grid:
                break
            for k, upward in edge.items():
                kind, xs, step = scale[k]
                new = _recentre(kind, _as_scale(best[k])[1], step, xs.shape[0], upward)
                axes[k] = new
                tried[k] |= {_as_scale(v)[1] for v in new}
                self.grid_extensions_.append({"stage": i_stage, "round": round_ + 1,
                                              "param": k, "best": best[k], "values": new})
        on_edge = sorted(edge)
        if on_edge and self.extend_grid > 0:
            warnings.warn(
                f"TaskGroupSearchCV: after {self.extend_grid} re-centring(s) of the grid the "
                f"best value of {', '.join(on_edge)} still sits on the edge of the values "
                f"tried ({', '.join(f'{k}={best[k]!r}' for k in on_edge)}); raise extend_grid "
                "or widen the grid.", UserWarning, stacklevel=user_stacklevel())
        return best, best_score, on_edge

    def fit(self, X, y, sample_domain=None):
        """Search on labeled training tasks (``sample_domain``: one id per task; unlabeled and
        target-domain rows are left out with a warning)."""
        check_params(self)
        require_y(y, self, " (training tasks must be labeled).")
        kind = "regression" if is_regressor(self.estimator) else "classification"
        X, y, sd = check_X_y_domain(X, y, sample_domain, task=kind,
                                    allow_unlabeled_source=True, require_source=False,
                                    estimator=self)
        keep = labeled_training_rows(y, sd, kind, "TaskGroupSearchCV")
        if not keep.all():
            X, y, sd = X[keep], y[keep], sd[keep]
        grids = [self.param_grid] if isinstance(self.param_grid, dict) else list(self.param_grid)
        if not grids or any(not isinstance(g, dict) for g in grids):
            raise ValueError("param_grid must be a dict or a non-empty list of dicts "
                             "(parameter name -> list of values).")
        splits = self._splits(sd)
        self.cv_results_ = []
        self.grid_extensions_ = []
        self.best_on_edge_ = []
        best, best_score = {}, -np.inf
        for i_stage, stage in enumerate(grids):
            stage_best, stage_score, edge = self._search_stage(
                i_stage, stage, best if self.staged else {}, X, y, sd, splits)
            if stage_best is None:
                raise ValueError(f"No parameter setting of {stage!r} got a finite score: the "
                                 "grid is empty or every setting scored NaN; give each "
                                 "parameter a non-empty list of values.")
            if self.staged or stage_score > best_score:
                best, best_score = stage_best, stage_score
                self.best_on_edge_ = edge
        self.best_params_ = best
        self.best_score_ = best_score
        if self.refit:
            self.best_estimator_ = clone(self.estimator).set_params(**best).fit(X, y, sd)
        return self

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        sub = get_tags(self.estimator)
        tags.estimator_type = sub.estimator_type
        tags.classifier_tags = deepcopy(sub.classifier_tags)
        tags.regressor_tags = deepcopy(sub.regressor_tags)
        tags.target_tags.required = True
        return tags

    @property
    def classes_(self):
        """``best_estimator_.classes_`` (classifiers)."""
        check_is_fitted(self, "best_estimator_")
        return self.best_estimator_.classes_

    def _check_X(self, X):
        check_is_fitted(self, "best_estimator_")
        return check_X(X, estimator=self, reset=False)

    def predict(self, X, sample_domain=None):
        """``best_estimator_.predict(X, sample_domain)``."""
        X = self._check_X(X)
        return self.best_estimator_.predict(X, sample_domain)

    @available_if(_estimator_has("decision_function"))
    def decision_function(self, X, sample_domain=None):
        """``best_estimator_.decision_function(X, sample_domain)``."""
        X = self._check_X(X)
        return self.best_estimator_.decision_function(X, sample_domain)

    def score(self, X, y, sample_domain=None):
        """:func:`task_group_score` (or ``scoring``) of the refitted best estimator."""
        X = self._check_X(X)
        if sample_domain is None:
            sample_domain = np.ones(X.shape[0], dtype=np.int64)
        return (self.scoring or task_group_score)(self.best_estimator_, X, y, sample_domain)
