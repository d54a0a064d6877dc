"""``MultiTaskBoostingClassifier``: thin scikit-learn wrapper around ``_core.boost``.

Input decisions: parameters are validated declaratively (``_parameter_constraints``, checked by
:func:`~shiftlearn._constraints.check_params` before any work); ``X`` goes through
scikit-learn's ``validate_data`` (feature count and names recorded in ``fit``, checked at
predict); ``y`` follows the library's unlabeled convention (``-1``/NaN/``""`` rows are ignored,
labels ``-1/+1`` are refused with the convention's error). Before any allocation, ``fit``
estimates the memory of the stored ensembles (complete binary trees: ``2**max_depth - 1``
nodes per tree and task) and of the split search and refuses, naming the bytes, what does not
fit in the library's memory budget (:func:`shiftlearn._resources.memory_budget`, the
physical memory unless ``MEMORY_BUDGET`` is set; ``max_depth=40`` would need thousands of TiB).

Progress: ``fit`` advances one bar per boosting iteration (all classes' ensembles together)
through :mod:`shiftlearn._progress`, drawn only where the caller switched progress on (the
``shiftlearn`` command line on a terminal); called from Python it draws and prints nothing.
"""

from __future__ import annotations

from numbers import Integral, Real

import numpy as np
from joblib import effective_n_jobs
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted

from .._constraints import Interval, StrOptions, check_params
from .._progress import task as progress_task
from .._resources import memory_budget
from .._validation import (
    check_sample_domain,
    check_X,
    check_X_y_domain,
    require_y,
    scored_rows,
    unlabeled_mask,
)
from . import _loops
from ._binning import bin_tasks
from ._core import boost, decision_function_stages
from ._core import decision_function as _final_decision

__all__ = ["MultiTaskBoostingClassifier", "fit_memory_bytes"]

_MODES = ("multitask", "pooling", "source_only", "target_only")

#: working arrays of the split search per (active node, feature, task, bin), in float64s
#: (histograms, their sums and differences, the sorted prefix sums of ``tree_split_exact``):
#: tracemalloc peaks at 3.1-6.0 of them for depths 10-12 on 2,000 rows, 6 features, 2 tasks
_WORK_FACTOR = 6


def fit_memory_bytes(n_rows: int, n_features: int, n_tasks: int, n_ensembles: int,
                     n_estimators: int, max_depth: int, max_bins: int,
                     min_samples_split: int) -> tuple[int, int]:
    """``(stored, working)`` bytes of a fit: the ensembles (per iteration ``feature`` and
    ``threshold`` for ``2**max_depth - 1`` nodes, the latter per task, and ``2**max_depth``
    leaves; float64/int64) and the split search at the deepest level (at most
    ``min(2**(max_depth - 1), n_rows // min_samples_split)`` nodes can split).

    Examples
    --------
    >>> stored, work = fit_memory_bytes(1000, 5, 2, 1, 500, 40, 255, 2)
    >>> round(stored / 2**40)          # TiB: the complete trees of depth 40
    16000
    """
    nodes, leaves = 2 ** max_depth - 1, 2 ** max_depth
    stored = 8 * n_ensembles * n_estimators * ((n_tasks + 1) * nodes + leaves)
    active = min(2 ** (max_depth - 1), max(n_rows // max(min_samples_split, 1), 1))
    bins = min(max_bins, n_rows) + 1
    return stored, 8 * _WORK_FACTOR * active * n_features * n_tasks * bins


def _gib(b: float) -> str:
    return f"{b / 2**40:.1f} TiB" if b >= 2**40 else f"{b / 2**30:.2f} GiB"


class MultiTaskBoostingClassifier(ClassifierMixin, BaseEstimator):
    """Non-linear domain adaptation with multi-task boosting (Becker, Christoudias, Fua 2013).

    One boosted classifier shared by all tasks: every weak learner has shared split features
    and leaf values (and one shared weight ``beta``); only the split thresholds are
    task-specific, so a task can absorb a strictly increasing per-feature shift of its inputs.
    Every domain with at least one labeled row is a task; unlabeled rows are ignored.

    Parameters
    ----------
    n_estimators : int, default 500
        Number of boosting iterations K (exactly K weak learners are fitted).
    learning_rate : float in (0, 1], default 0.1
        Shrinkage gamma: ``beta = gamma * alpha`` after the line search.
    max_depth : int, default 1
        Depth L of the weak learners (L = 3: at most 8 leaves, the paper's trees). Every tree
        is stored complete (``2**L - 1`` nodes, thresholds per task), so memory grows as
        ``2**L``: a fit that would not fit in memory is refused up front with the bytes
        (``max_depth=40``: about 16,000 TiB for two tasks at 500 iterations). The split
        search runs only over nodes with at least ``min_samples_split`` rows, so its time
        grows with ``L * min(2**L, n_rows)``.
    weak_learner : {"auto", "stump", "tree"}, default "auto"
        "stump": the paper's decision stump, outputs +-1 with shared polarity, each task picks
        its own error-minimising threshold (needs ``max_depth=1``). "tree": regression tree,
        leaf values are the pooled weighted means of ``y``; each node solves Eq. 6 exactly.
        "auto" = "stump" if ``max_depth == 1`` else "tree".
    mode : {"multitask", "pooling", "source_only", "target_only"}, default "multitask"
        The baselines are one flag away: "pooling" fits ONE task on all labeled rows (the
        paper's Pooling: thresholds tied), "source_only" on the labeled rows of the positive
        (source) domains, "target_only" on the labeled rows of the negative (target) domains.
        Outside "multitask" predictions ignore ``sample_domain``.
    max_bins : int in [2, 256], default 255
        Per-task, per-feature bins. Columns with at most ``max_bins`` distinct values are
        searched exactly (every midpoint); otherwise quantile bins (as HistGradientBoosting).
    min_samples_split : int, default 2
        A tree node with fewer pooled rows is not split (its rows all go left).
    n_jobs : int or None, default None
        Threads that bin the features (blocks of columns, numpy's sorts) and build the
        histograms (numba's ``prange`` over groups of features; needs numba). ``None``
        means 1 unless in a :func:`joblib.parallel_backend` context, ``-1`` every core
        (joblib's convention, as ``effective_n_jobs``); the histograms' threads are capped
        at numba's thread count. The model is the same bit for bit whatever ``n_jobs``
        (each column binned alone; each feature's sums stay in row order on one thread).
        Leave it at 1 when fits already run in parallel (``GridSearchCV(n_jobs=...)``).

    Attributes
    ----------
    classes_ : ndarray of the labels.
    tasks_ : ndarray of the domain ids that are tasks (multitask mode), else the domains used.
    estimators_ : list of fitted ensembles (dicts of arrays), one for binary data, one per
        class (one-vs-rest) otherwise.
    train_loss_ : ndarray (n_estimators,) (binary) or (n_classes, n_estimators): mean
        exponential training loss after each iteration (never increases).

    Notes
    -----
    Where the paper leaves a point open (see ``docs/boosting.md``):

    * Multi-class: one-vs-rest, one binary ensemble per class; ``predict`` = argmax of the
      decision functions, ``predict_proba`` normalises ``1 / (1 + exp(-2 f_c))``. Binary
      ``predict_proba`` is ``1 / (1 + exp(-2 f))`` (the exponential-loss link).
    * Eq. 6 for trees is solved exactly (convex hull / Minkowski-sum argument, see
      ``_splits.py``), with independent per-node, per-task thresholds.
    * Among split positions that give the same training partition the middle one is used; a
      task with no row at a node gets the threshold at the same marginal quantile as the
      heaviest task there (quantile matching).
    * Weights are normalised over all tasks together (never per task); no per-task weighting.
    * ``|alpha|`` is capped at ``0.5 ln(1e10)`` (separable data); iterations never stop early.
    * ``sample_domain`` omitted at predict time: the only task if there is one, else the only
      target (negative id) task; otherwise a ``ValueError``.
    * Speed: stumps scan only the features a lower bound does not rule out, trees search exactly
      only the (node, feature) pairs an upper bound lets through, and with numba installed
      (``pip install shiftlearn[speed]``) compiled loops build the histograms, on
      ``n_jobs`` threads; the model is the full search's, bit for bit, with or without numba
      and on any number of threads (``docs/boosting.md``).

    Examples
    --------
    >>> from shiftlearn.datasets import make_monotone_shift
    >>> X, y, sd = make_monotone_shift(300, 300, random_state=0)
    >>> keep = (sd > 0) | (np.arange(len(y)) < 340)          # 40 labeled target rows
    >>> y_fit = np.where(keep, y, -1)
    >>> clf = MultiTaskBoostingClassifier(n_estimators=50, learning_rate=0.5).fit(X, y_fit, sd)
    >>> clf.predict(X[sd < 0], sample_domain=sd[sd < 0]).shape
    (300,)
    """

    # scikit-learn metadata routing: sample_domain is requested by default, so
    # GridSearchCV(...).fit(X, y, sample_domain=sd) routes it here when routing is on
    __metadata_request__fit = {"sample_domain": True}
    __metadata_request__predict = {"sample_domain": True}
    __metadata_request__predict_proba = {"sample_domain": True}
    __metadata_request__decision_function = {"sample_domain": True}
    __metadata_request__score = {"sample_domain": True}

    _parameter_constraints: dict = {
        "n_estimators": [Interval(Integral, 1, None, closed="left")],
        "learning_rate": [Interval(Real, 0, 1, closed="right")],
        "max_depth": [Interval(Integral, 1, None, closed="left")],
        "weak_learner": [StrOptions({"auto", "stump", "tree"})],
        "mode": [StrOptions(set(_MODES))],
        "max_bins": [Interval(Integral, 2, 256, closed="both")],
        "min_samples_split": [Interval(Integral, 1, None, closed="left")],
        "n_jobs": [Interval(Integral, 1, None, closed="left"),
                   Interval(Integral, None, -1, closed="right"), None],
    }

    def __init__(self, n_estimators: int = 500, learning_rate: float = 0.1, max_depth: int = 1,
                 *, weak_learner: str = "auto", mode: str = "multitask", max_bins: int = 255,
                 min_samples_split: int = 2, n_jobs: int | None = None):
        self.n_estimators = n_estimators
        self.learning_rate = learning_rate
        self.max_depth = max_depth
        self.weak_learner = weak_learner
        self.mode = mode
        self.max_bins = max_bins
        self.min_samples_split = min_samples_split
        self.n_jobs = n_jobs

    # ------------------------------------------------------------------ fit
    def _weak_learner(self) -> str:
        wl = self.weak_learner
        if wl == "auto":
            wl = "stump" if self.max_depth == 1 else "tree"
        if wl == "stump" and self.max_depth != 1:
            raise ValueError("weak_learner='stump' needs max_depth=1 (a stump is one split); "
                             "use weak_learner='tree' or 'auto' for deeper weak learners.")
        return wl

    def _check_memory(self, n_rows, n_features, n_tasks, n_ensembles):
        stored, work = fit_memory_bytes(n_rows, n_features, n_tasks, n_ensembles,
                                        int(self.n_estimators), int(self.max_depth),
                                        int(self.max_bins), int(self.min_samples_split))
        budget = memory_budget()
        if stored + work > budget:
            raise ValueError(
                f"MultiTaskBoostingClassifier(max_depth={self.max_depth}, n_estimators="
                f"{self.n_estimators}) would need about {_gib(stored + work)} of memory "
                f"({_gib(stored)} to store {n_ensembles} ensemble(s) of {self.n_estimators} "
                f"complete trees with 2**{self.max_depth} leaves for {n_tasks} task(s), "
                f"{_gib(work)} for the split search) but {_gib(budget)} is available. Lower "
                "max_depth (the paper uses 3; each level doubles the stored nodes) or "
                "n_estimators.")

    def fit(self, X, y, sample_domain=None):
        """Fit on the labeled rows; each domain with labels is a task (unlabeled rows ignored).

        Unlabeled rows belong to target domains: an unlabeled row (``-1``/NaN) in a source
        domain (positive id) is refused, as by every estimator of the library, so that a class
        ``-1`` is never silently dropped.

        Parameters
        ----------
        X : array-like (n, d); y : array-like (n,), ``-1``/NaN = unlabeled;
        sample_domain : array-like (n,) of domain ids (inferred from ``y`` if omitted).
        """
        check_params(self)
        wl = self._weak_learner()
        require_y(y, self, " (y = -1 marks the unlabeled rows).")
        # a -1 row in a source domain is refused as everywhere (the class -1 would be dropped)
        X, y, sd = check_X_y_domain(X, y, sample_domain, task="classification",
                                    require_source=False, estimator=self)
        lab = ~unlabeled_mask(y)
        if self.mode == "source_only":
            lab &= sd > 0
        elif self.mode == "target_only":
            lab &= sd < 0
        if not lab.any():
            which = {"source_only": " of source domains (positive sample_domain)",
                     "target_only": " of target domains (negative sample_domain)"}.get(
                         self.mode, "")
            raise ValueError(f"No labeled rows{which} to fit in mode={self.mode!r}: label some "
                             "rows (y = -1/NaN marks unlabeled ones) or choose another mode "
                             f"({', '.join(repr(m) for m in _MODES)}).")
        X, y, sd = X[lab], y[lab], sd[lab]
        check_classification_targets(y)     # a continuous y is refused, not one class per value
        self.classes_ = np.unique(y)
        if self.classes_.size < 2:
            n_cls = self.classes_.size
            raise ValueError(f"MultiTaskBoostingClassifier needs labeled rows of at least 2 "
                             f"classes; got {n_cls} class{'es' if n_cls != 1 else ''} "
                             f"{self.classes_.tolist()} in mode={self.mode!r}. Label rows of "
                             "another class (y = -1/NaN marks unlabeled rows).")
        self.tasks_ = np.unique(sd)
        task = (np.searchsorted(self.tasks_, sd) if self.mode == "multitask"
                else np.zeros(sd.size, dtype=np.intp))
        n_tasks = int(task.max()) + 1
        self._check_memory(X.shape[0], X.shape[1], n_tasks,
                           1 if self.classes_.size == 2 else self.classes_.size)
        n_threads = effective_n_jobs(self.n_jobs)
        codes, edges, n_edges, frac = bin_tasks(X, task, n_tasks, self.max_bins, n_threads)
        targets = [self.classes_[1]] if self.classes_.size == 2 else list(self.classes_)
        self.estimators_ = []
        # a bar only where the caller switched progress on (the command line), see _progress
        with progress_task(f"boosting ({self.mode})",
                           len(targets) * int(self.n_estimators)) as advance, \
                _loops.threads(n_threads):
            for c in targets:
                yy = np.where(y == c, 1, -1)
                self.estimators_.append(boost(
                    codes, yy, task, edges, n_edges, frac, n_estimators=int(self.n_estimators),
                    learning_rate=float(self.learning_rate), max_depth=int(self.max_depth),
                    weak_learner=wl, min_samples_split=self.min_samples_split,
                    on_iteration=advance))
        losses = np.array([e["train_loss"] for e in self.estimators_])
        self.train_loss_ = losses[0] if len(targets) == 1 else losses
        return self

    # -------------------------------------------------------------- predict
    def _task_index(self, X, sample_domain):
        if self.mode != "multitask":
            return np.zeros(X.shape[0], dtype=np.intp)
        if sample_domain is None:
            if self.tasks_.size == 1:
                return np.zeros(X.shape[0], dtype=np.intp)
            tgt = self.tasks_[self.tasks_ < 0]
            if tgt.size != 1:
                raise ValueError(
                    f"sample_domain is required: the model has tasks {self.tasks_.tolist()} "
                    "and not exactly one target (negative id) task to default to.")
            return np.full(X.shape[0], int(np.flatnonzero(self.tasks_ == tgt[0])[0]))
        sd = check_sample_domain(sample_domain, X.shape[0])
        unknown = np.setdiff1d(np.unique(sd), self.tasks_)
        if unknown.size:
            raise ValueError(f"Domain(s) {unknown.tolist()} were not tasks at fit time "
                             f"(tasks: {self.tasks_.tolist()}); they have no thresholds.")
        return np.searchsorted(self.tasks_, sd)

    def _prep(self, X, sample_domain):
        check_is_fitted(self, "estimators_")
        X = check_X(X, estimator=self, reset=False)
        return X, self._task_index(X, sample_domain)

    def staged_decision_function(self, X, sample_domain=None):
        """Yield the decision function after each boosting iteration."""
        X, task = self._prep(X, sample_domain)
        gens = [decision_function_stages(X, task, e) for e in self.estimators_]
        for fs in zip(*gens, strict=True):
            yield fs[0].copy() if len(fs) == 1 else np.column_stack(fs)

    def decision_function(self, X, sample_domain=None):
        """``f_t(x)`` with each row's task thresholds: (n,) binary, (n, n_classes) otherwise
        (the last stage of :meth:`staged_decision_function`, computed at once)."""
        X, task = self._prep(X, sample_domain)
        fs = [_final_decision(X, task, e) for e in self.estimators_]
        return fs[0] if len(fs) == 1 else np.column_stack(fs)

    def _proba(self, f):
        p = 1.0 / (1.0 + np.exp(-2.0 * np.clip(f, -350, 350)))
        if p.ndim == 1:
            return np.column_stack([1 - p, p])
        s = p.sum(axis=1, keepdims=True)
        return np.divide(p, s, out=np.full_like(p, 1.0 / p.shape[1]), where=s > 0)

    def _label(self, f):
        if f.ndim == 1:
            return self.classes_[(f > 0).astype(int)]
        return self.classes_[np.argmax(f, axis=1)]

    def predict(self, X, sample_domain=None):
        """Predicted labels (each row thresholded with its own task)."""
        return self._label(self.decision_function(X, sample_domain))

    def score(self, X, y, sample_domain=None, sample_weight=None):
        """Accuracy of ``predict(X, sample_domain)`` on the rows that carry a label.

        Each row is thresholded with its own task, so ``sample_domain`` is required when the
        model has several tasks (mode ``"multitask"``): a score that read every row as the
        target task's would be silently wrong for the other tasks' rows (a scalar is
        broadcast: ``score(X_target, y_target, sample_domain=-2)``). In ``cross_val_score``
        or ``GridSearchCV``, switch scikit-learn's metadata routing on so that ``params=
        {"sample_domain": sd}`` reaches ``score`` too (with routing off it reaches ``fit``
        only). Unlabeled rows (``y = -1``, NaN, ...) are skipped, as by every estimator's
        ``score`` (:func:`shiftlearn._validation.scored_rows`)."""
        from sklearn.metrics import accuracy_score

        check_is_fitted(self, "estimators_")
        if sample_domain is None and self.mode == "multitask" and self.tasks_.size > 1:
            raise ValueError(
                "MultiTaskBoostingClassifier.score needs sample_domain: the model has tasks "
                f"{self.tasks_.tolist()} and thresholds each row with its own task's. Pass "
                "score(X, y, sample_domain=...) (a scalar is broadcast). In cross_val_score, "
                "cross_validate or GridSearchCV, params={'sample_domain': sd} reaches score "
                "only with metadata routing on: sklearn.set_config("
                "enable_metadata_routing=True).")
        keep, y = scored_rows(y)
        pred = self.predict(X, sample_domain)
        return float(accuracy_score(y[keep], pred[keep], sample_weight=None if sample_weight
                                    is None else np.asarray(sample_weight)[keep]))

    def predict_proba(self, X, sample_domain=None):
        """Class probabilities from the exponential-loss link ``1 / (1 + exp(-2 f))``."""
        return self._proba(self.decision_function(X, sample_domain))

    def staged_predict(self, X, sample_domain=None):
        """Yield the predicted labels after each iteration."""
        for f in self.staged_decision_function(X, sample_domain):
            yield self._label(f)

    def staged_predict_proba(self, X, sample_domain=None):
        """Yield the class probabilities after each iteration."""
        for f in self.staged_decision_function(X, sample_domain):
            yield self._proba(f)
