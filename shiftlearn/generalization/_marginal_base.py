"""The machinery shared by the marginal-transfer estimators: input checks, task weights, the
exact and random-feature fits, prediction by test task (decisions: :mod:`._marginal`).

Input decisions (the library's unlabeled convention, ``docs/conventions.md``):

* **Training rows.** Domain generalization learns from labeled training tasks only. Rows that
  are unlabeled (``y = -1``/NaN/``""``; regression: NaN) and every row of a target domain
  (negative ``sample_domain``) are left out of training with a :class:`UserWarning` that counts
  them per domain (:func:`labeled_training_rows`): those rows are test tasks, embedded at
  predict time from their own rows. So the library's own ``pack()`` output (labeled sources,
  masked targets) can be passed to ``fit`` as it is; ``-1`` is never learnt as a class. No
  labeled source row left is a ``ValueError``.
* **Test tasks.** ``predict`` embeds each test task from the rows given in that call. A task
  with fewer than ``min_predict_task_size`` rows triggers a :class:`UserWarning` naming the
  task, its rows and the two ways to predict a stream (pass the whole task; embed from a stored
  sample, ``predict(np.vstack([X_sample, X_new]), ...)[len(X_sample):]``).
* **Parameters** are validated declaratively (``_parameter_constraints``, checked by
  :func:`~shiftlearn._param_validation.check_params` before any work); ``X`` goes through
  scikit-learn's ``validate_data`` (feature count and names recorded in ``fit``, checked in
  ``predict``).
"""

from __future__ import annotations

import re
import warnings
from numbers import Integral, Real

import numpy as np
from sklearn.base import BaseEstimator
from sklearn.exceptions import DataConversionWarning
from sklearn.utils.validation import check_is_fitted

from .._param_validation import Interval, Options, StrOptions, check_params
from .._validation import check_sample_domain, check_X, check_X_y_domain, unlabeled_mask
from ..adaptation._base import memory_budget
from ..kernels import _rng, median_heuristic, rff_weights
from ._embedding import (
    embedding_sq_distances,
    exact_embedding_gram,
    gaussian_from_sq_distances,
    median_sigma_from_sq_distances,
    product_kernel,
    rff_embeddings,
    rff_product_features,
)
from ._solvers import linear_squared_hinge_newton

__all__ = ["AUTO_RF_MIN_SAMPLES", "MIN_PREDICT_TASK_SIZE", "labeled_training_rows"]

#: ``solver="auto"`` uses random features from this many training rows on. Below it both
#: solvers fit in a fraction of a second (``benchmarks/generalization/marginal_speed.py``: at
#: M = 512 exact ~0.3 s, RF ~0.04 s) and the exact solver has no approximation error, so it
#: is kept there.
AUTO_RF_MIN_SAMPLES = 1000

#: precision of the random-feature projections and cos/sin (RF solver). float32 cos/sin are
#: ~10x faster than float64 (SIMD); the absolute error per feature (~1e-6) is far below the
#: Monte-Carlo error of the features (~1/sqrt(Q)). Frequencies, task offsets, embeddings'
#: means and the liblinear problem stay in float64 (the squared-hinge Newton solver keeps the
#: design in float32: its matrix products are the cost, see ``linear_squared_hinge_newton``).
_RF_DTYPE = np.float32

_LOSSES = ("hinge", "squared_hinge")

#: Default ``min_predict_task_size``: test tasks with fewer rows are predicted with a warning.
#: ``benchmarks/marginal_stream.py`` (rotated ellipses, 64 training tasks of 32 rows, C=10,
#: sigma_x=0.4, 10 test tasks of 200 rows cut into test tasks of m rows): test error, random
#: features / exact, 45.2 / 40.5% at m = 1, 22.8 / 17.0% at 5, 15.2 / 12.4% at 10,
#: 9.6 / 9.2% at 20, 5.4 / 5.0% at 200. Below 10 rows the error is more than three times the
#: whole-task error.
MIN_PREDICT_TASK_SIZE = 10

#: peak memory of an exact fit in ``M x M`` float64 matrices (tracemalloc at M = 2,000: 2.02 to
#: 2.03 for the classifier, the regressor and linear kernels: the kernel and its product)
EXACT_FIT_MATRICES = 2.1

#: how many domains a left-out/small-task message lists before "and k more"
_LIST_MAX = 8


class _SigmaSpec(Options):
    """A bandwidth: a positive finite real, ``"median"`` or ``"<f>*median"`` with ``f > 0``.

    An ``Options`` subclass because the vendored ``make_constraint`` accepts only its own
    constraint classes (as scikit-learn's); it overrides the test and the message."""

    def __init__(self):
        super().__init__(str, {"median"})

    _PATTERN = re.compile(r"^\s*(?:([^*]+)\*)?\s*median\s*$")

    def is_satisfied_by(self, val):
        if isinstance(val, str):
            m = self._PATTERN.match(val)
            if m is None:
                return False
            if m.group(1) is None:
                return True
            try:
                f = float(m.group(1))
            except ValueError:
                return False
            return bool(np.isfinite(f) and f > 0)
        return (isinstance(val, Real) and not isinstance(val, bool | np.bool_)
                and bool(np.isfinite(val)) and val > 0)

    def __str__(self):
        return "a positive float, 'median' or '<f>*median' with a positive factor f"


_POS_INT = Interval(Integral, 1, None, closed="left")

#: constraints of every marginal-transfer / pooling parameter (a class checks the ones it has)
MARGINAL_PARAMETER_CONSTRAINTS: dict = {
    "C": [Interval(Real, 0, None, closed="neither")],
    "epsilon": [Interval(Real, 0, None, closed="left")],
    "sigma_x": [_SigmaSpec()],
    "sigma_emb": [_SigmaSpec()],
    "sigma_p": [_SigmaSpec()],
    "kernel_x": [StrOptions({"rbf", "linear"})],
    "kernel_emb": [StrOptions({"rbf", "linear"})],
    "pooling": ["boolean"],
    "solver": [StrOptions({"auto", "exact", "rf"})],
    "n_components_emb": [_POS_INT],
    "n_components": [_POS_INT],
    "sampling": [StrOptions({"gaussian", "orthogonal"})],
    "weighting": [StrOptions({"task", "point"})],
    "normalize_y": ["boolean"],
    "min_task_size": [_POS_INT],
    "min_predict_task_size": [_POS_INT],
    "tol": [Interval(Real, 0, None, closed="neither"), None],
    "max_iter": [_POS_INT],
    "loss": [StrOptions(set(_LOSSES))],
    "random_state": ["random_state", np.random.Generator],
}


def _domain_list(items: list[str]) -> str:
    if len(items) <= _LIST_MAX:
        return ", ".join(items)
    return ", ".join(items[:_LIST_MAX]) + f" and {len(items) - _LIST_MAX} more"


def labeled_training_rows(y: np.ndarray, sd: np.ndarray, task: str, owner: str) -> np.ndarray:
    """Mask of the rows domain generalization trains on: labeled rows of source domains.

    Unlabeled rows (the library's convention, :func:`~shiftlearn._validation.unlabeled_mask`)
    and every row of a target domain (negative ``sample_domain``) are left out with a
    :class:`UserWarning` that counts them per domain; with no row left, a ``ValueError``.

    Examples
    --------
    >>> import numpy as np, warnings
    >>> y = np.array([0, 1, 0, -1, -1]); sd = np.array([1, 1, 1, -2, -2])
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("ignore")
    ...     labeled_training_rows(y, sd, "classification", "Est").tolist()
    [True, True, True, False, False]
    """
    unl = unlabeled_mask(y, task=task)
    keep = ~unl & (sd > 0)
    drop = ~keep
    if not drop.any():
        return keep
    parts = []
    for d in np.unique(sd[drop]):
        m = drop & (sd == d)
        n_unl, n_lab = int(np.sum(m & unl)), int(np.sum(m & ~unl))
        what = " + ".join(([f"{n_unl} unlabeled"] if n_unl else [])
                          + ([f"{n_lab} labeled"] if n_lab else []))
        parts.append(f"domain {int(d)}: {what}")
    where = _domain_list(parts)
    lab_target = bool(np.any(drop & ~unl))
    if not keep.any():
        raise ValueError(
            f"{owner} has no labeled row in a source domain to train on (all {sd.shape[0]} "
            f"rows left out; {where}). Domain generalization trains on labeled training tasks: "
            "give each training task a positive sample_domain id and its labels (y = -1 or NaN "
            "marks an unlabeled row; negative ids are test tasks, passed to predict).")
    msg = (f"{owner} trains on the labeled rows of source domains only (domain generalization): "
           f"left out {int(drop.sum())} of {sd.shape[0]} rows ({where}). Test tasks (negative "
           "sample_domain ids) need no labels at fit time: pass their rows to "
           "predict(X, sample_domain), which embeds each test task from its own rows.")
    if lab_target:
        msg += (" Labeled rows of a target domain are not trained on either; give that domain a "
                "positive id to use it as a training task.")
    warnings.warn(msg, UserWarning, stacklevel=4)
    return keep


class _SquaredHingeNewtonSVC:
    """Linear squared-hinge SVM without intercept (one-vs-rest), liblinear-like interface:
    ``fit(Z, labels, sample_weight)`` with costs ``C * sample_weight``, ``decision_function``,
    ``coef_``, ``classes_``, ``n_iter_``. Solved in the primal by
    :func:`~shiftlearn.generalization._solvers.linear_squared_hinge_newton`."""

    def __init__(self, C, tol, max_iter):
        self.C, self.tol, self.max_iter = C, tol, max_iter

    def fit(self, Z, labels, sample_weight):
        self.classes_ = np.unique(labels)
        pos = self.classes_[1:] if self.classes_.shape[0] == 2 else self.classes_
        c = self.C * np.asarray(sample_weight, dtype=np.float64)
        sols = [linear_squared_hinge_newton(Z, np.where(labels == k, 1.0, -1.0), c,
                                            tol=self.tol, max_iter=self.max_iter,
                                            return_n_iter=True) for k in pos]
        self.coef_ = np.vstack([w for w, _ in sols])
        self.n_iter_ = np.array([it for _, it in sols])
        return self

    def decision_function(self, Z):
        out = Z @ self.coef_.T.astype(Z.dtype)
        return out[:, 0] if out.shape[1] == 1 else out


#: bandwidths whose square (and inverse square) float64 holds with room for the kernel's sums
_SIGMA_RANGE = (1e-150, 1e150)


def _resolve_sigma(spec, data_rule, name: str) -> float:
    """float | "median" | "<f>*median" -> positive float; ``data_rule()`` gives the median.

    The spec's form is checked by the ``_SigmaSpec`` constraint before any work; the value is
    refused outside ``_SIGMA_RANGE`` (``1 / (2 sigma^2)`` would under- or overflow float64:
    ``sigma_x=1e-300`` raised ``ZeroDivisionError``, ``1e300`` an ``OverflowError``)."""
    if isinstance(spec, str):
        factor = spec.rpartition("*")[0].strip()
        value = (float(factor) if factor else 1.0) * data_rule()
    else:
        value = float(spec)
    lo, hi = _SIGMA_RANGE
    if not lo <= value <= hi:
        raise ValueError(f"{name}={spec!r} gives the bandwidth {value:.3g}, outside "
                         f"[{lo:g}, {hi:g}] where its square is representable in float64; "
                         "rescale X (e.g. StandardScaler) or give a bandwidth on the scale of "
                         "the distances between rows.")
    return value


class _MarginalTransferBase(BaseEstimator):
    """Shared fit/predict machinery (see the module docstring)."""

    _task_kind = "classification"

    # -- parameters read through these helpers so the Pooling* subclasses can omit them --
    def _pooling(self) -> bool:
        return bool(getattr(self, "pooling", True))

    def _param(self, name, default):
        return getattr(self, name, default)

    def _loss(self) -> str:
        return self._param("loss", "hinge")

    def _tol(self, solver: str) -> float:
        if self.tol is None:
            if solver == "exact":
                return 1e-2
            return 1e-4 if self._param("loss", "hinge") == "squared_hinge" else 0.1
        return float(self.tol)

    # ------------------------------------------------------------------------------- fit
    def _check_fit_input(self, X, y, sample_domain):
        if y is None:
            raise ValueError(f"{type(self).__name__} requires y to be passed, but the target y "
                             "is None (training tasks must be labeled).")
        y = np.asarray(y)
        if y is not None and y.ndim == 2 and y.shape[1] == 1:
            warnings.warn("A column-vector y was passed when a 1d array was expected; it is "
                          "raveled.", DataConversionWarning, stacklevel=3)
            y = y.ravel()
        X, y, sd = check_X_y_domain(X, y, sample_domain, task=self._task_kind,
                                    allow_unlabeled_source=True, require_source=False,
                                    estimator=self)
        keep = labeled_training_rows(y, sd, self._task_kind, type(self).__name__)
        if not keep.all():
            X, y, sd = X[keep], y[keep], sd[keep]
        ids, inv, counts = np.unique(sd, return_inverse=True, return_counts=True)
        small = counts < self.min_task_size
        if np.any(small):
            bad = ", ".join(f"task {i} has only {c} sample(s)"
                            for i, c in zip(ids[small], counts[small], strict=True))
            raise ValueError(f"Too few points per task: {bad}; each task needs at least "
                             f"min_task_size={self.min_task_size} points to embed its "
                             "marginal distribution.")
        order = np.argsort(inv, kind="stable")  # rows grouped task by task
        return X[order], y[order], inv[order].astype(np.int64), ids, counts

    def _weights(self, task, counts) -> np.ndarray:
        if self._param("weighting", "task") == "point":
            return np.ones(task.shape[0])
        M, N = task.shape[0], counts.shape[0]
        return M / (N * counts[task].astype(np.float64))

    def _choose_solver(self, M: int) -> str:
        solver, kx = self.solver, self.kernel_x
        if solver == "auto":
            return "rf" if (kx == "rbf" and M >= AUTO_RF_MIN_SAMPLES) else "exact"
        if solver == "rf" and kx != "rbf":
            raise ValueError("solver='rf' needs kernel_x='rbf' (random Fourier features of a "
                             "Gaussian); use solver='exact' for a linear kernel_x.")
        return solver

    def _fit(self, X, y, sample_domain):
        check_params(self)
        if self.solver == "rf" and self.kernel_x != "rbf":
            self._choose_solver(0)  # the cross-parameter error, before any work
        X, y, task, ids, counts = self._check_fit_input(X, y, sample_domain)
        self.domains_ = ids
        self.n_tasks_ = ids.shape[0]
        M = X.shape[0]
        Y = self._encode_targets(y)  # (M, n_outputs) of +-1 labels or scaled targets
        c = self.C * self._weights(task, counts)
        rng = _rng(self.random_state)
        self.solver_ = self._choose_solver(M)
        if self.solver_ == "exact":
            self._check_exact_memory(M)
        else:
            self._check_rf_memory(M, X.shape[1])
        med = {}

        def median_x() -> float:  # computed once, shared by sigma_x and sigma_emb
            if "x" not in med:
                med["x"] = median_heuristic(X)
            return med["x"]

        self.sigma_x_ = (_resolve_sigma(self.sigma_x, median_x, "sigma_x")
                         if self.kernel_x == "rbf" else None)
        ke = self._param("kernel_emb", "rbf")
        pooling = self._pooling()
        self.sigma_emb_ = None
        if not pooling and ke == "rbf":
            self.sigma_emb_ = _resolve_sigma(self._param("sigma_emb", "median"), median_x,
                                             "sigma_emb")
        if self.solver_ == "exact":
            self._fit_exact(X, Y, task, c, rng, pooling, ke)
        else:
            self._fit_rf(X, Y, task, c, rng, pooling, ke)
        return self

    def _check_exact_memory(self, M: int) -> None:
        """Refuse an exact fit whose ``M x M`` kernel does not fit in memory (before numpy
        asks for it and dies with ``MemoryError``; ``kernel_x="linear"`` keeps the exact solver
        at any size). Peak: :data:`EXACT_FIT_MATRICES` float64 ``M x M`` matrices."""
        need = EXACT_FIT_MATRICES * 8.0 * M * M
        budget = memory_budget()
        if need > budget:
            alt = ("solver='rf' (random features, memory linear in the rows)"
                   if self.kernel_x == "rbf" else
                   "kernel_x='rbf' with solver='rf' (random features, memory linear in the rows)")
            raise ValueError(
                f"{type(self).__name__} with the exact solver on {M} training rows needs about "
                f"{need / 2**30:.1f} GiB ({EXACT_FIT_MATRICES:g} float64 {M} x {M} matrices) but "
                f"{budget / 2**30:.1f} GiB are available. Use {alt}, or fit on a subsample of "
                "each task's rows.")

    def _check_rf_memory(self, M: int, d: int) -> None:
        """Refuse a random-feature fit whose features do not fit in memory (e.g. a mistyped
        ``n_components=10**7``): ``4 M 2Q`` float32 (features and the solvers' copies) plus
        ``2 (2Q)^2`` float64 (the Newton system) plus the ``(d + 2L) x Q`` frequencies
        (tracemalloc at M = 4,000: 2.2 M 2Q float32 for liblinear, 3.9-7.1 M 2Q plus the
        Newton system for the squared hinge at Q = 300-2,000)."""
        Q, L = int(self.n_components), int(self._param("n_components_emb", 100))
        need = 4.0 * M * 2 * Q * 4 + 2.0 * (2 * Q) ** 2 * 8 + (d + 2 * L) * Q * 8.0
        budget = memory_budget()
        if need > budget:
            raise ValueError(
                f"{type(self).__name__} with solver='rf' on {M} training rows with "
                f"n_components={Q} and n_components_emb={L} needs about {need / 2**30:.1f} GiB "
                f"but {budget / 2**30:.1f} GiB are available. Lower n_components (300 is the "
                "default; the kernel error falls as 1/sqrt(n_components)) or fit on fewer rows.")

    def _fit_exact(self, X, Y, task, c, rng, pooling, ke):
        N = self.n_tasks_
        if pooling:
            KP = np.ones((N, N))
            self.sigma_p_ = None
        else:
            G = exact_embedding_gram(X, task, N, kernel=ke, sigma=self.sigma_emb_)
            self.emb_sqnorm_ = np.diag(G).copy()
            D2 = embedding_sq_distances(G, self.emb_sqnorm_, self.emb_sqnorm_)
            self.sigma_p_ = _resolve_sigma(self._param("sigma_p", "median"),
                                           lambda: median_sigma_from_sq_distances(D2), "sigma_p")
            KP = gaussian_from_sq_distances(D2, self.sigma_p_)
        K = product_kernel(X, task, KP, kernel=self.kernel_x, sigma=self.sigma_x_)
        seed = int(rng.integers(2**31 - 1))
        sols = [self._solve_kernel(K, Y[:, k], c, seed) for k in range(Y.shape[1])]
        coefs = np.column_stack([s[0] for s in sols])
        self.n_iter_ = max(s[1] for s in sols)
        keep = np.any(coefs != 0, axis=1)
        self.dual_coef_ = coefs[keep]
        self.support_vectors_ = X[keep]
        self.support_task_ = task[keep]
        self.X_fit_, self.task_fit_ = X, task  # the training rows, for test-task embeddings

    def _fit_rf(self, X, Y, task, c, rng, pooling, ke):
        N, d = self.n_tasks_, X.shape[1]
        L, Q = self._param("n_components_emb", 100), self.n_components
        seeds = rng.integers(2**31 - 1, size=3)
        sampling = self.sampling
        self.W_ = None
        if pooling:
            self.V_x_ = rff_weights(d, Q, 1.0, seeds[0], sampling=sampling)
            self.V_p_, self.ZP_, self.sigma_p_ = None, None, None
        else:
            self.W_ = (rff_weights(d, L, self.sigma_emb_, seeds[1], sampling=sampling)
                       if ke == "rbf" else None)
            self.ZP_ = rff_embeddings(X, task, N, self.W_, dtype=_RF_DTYPE)
            V = rff_weights(d + self.ZP_.shape[1], Q, 1.0, seeds[0], sampling=sampling)
            self.V_x_, self.V_p_ = V[:d], V[d:]
            self.sigma_p_ = _resolve_sigma(
                self._param("sigma_p", "median"),
                lambda: median_heuristic(self.ZP_) if N >= 2 else 1.0, "sigma_p")
        self.linear_model_ = self._linear_model(int(seeds[2]))
        # liblinear converts its input to float64; the Newton solver works on float32
        out = (np.empty((X.shape[0], 2 * Q), dtype=_RF_DTYPE)
               if isinstance(self.linear_model_, _SquaredHingeNewtonSVC) else None)
        Z = rff_product_features(X, task, self.ZP_, self.V_x_, self.V_p_, sigma_x=self.sigma_x_,
                                 sigma_p=self.sigma_p_ or 1.0, out=out, dtype=_RF_DTYPE)
        self.linear_model_.fit(Z, self._linear_target(Y), sample_weight=c / self.C)
        self.n_iter_ = int(np.max(self.linear_model_.n_iter_))

    # --------------------------------------------------------------------------- predict
    def _group_test(self, X, sample_domain):
        check_is_fitted(self, "solver_")
        X = check_X(X, estimator=self, reset=False)
        if sample_domain is None:
            task, ids = np.zeros(X.shape[0], dtype=np.int64), None
        else:
            sd = check_sample_domain(sample_domain, X.shape[0])
            ids, inv = np.unique(sd, return_inverse=True)
            task = inv.astype(np.int64)
            seen = np.intersect1d(ids, self.domains_)
            if seen.size:
                warnings.warn(f"Test domain id(s) {seen.tolist()} were training tasks: their "
                              "rows are embedded from the test rows only, but this is not "
                              "domain generalization (the task was seen in training).",
                              UserWarning, stacklevel=4)
        n_test = 1 if ids is None else ids.shape[0]
        if not self._pooling():
            self._warn_small_test_tasks(np.bincount(task, minlength=n_test), ids)
        return X, task, n_test

    def _warn_small_test_tasks(self, counts: np.ndarray, ids) -> None:
        """Warn when a test task has too few rows to embed its distribution (see the module
        docstring); pooling ignores the task, so it never warns."""
        k = self._param("min_predict_task_size", MIN_PREDICT_TASK_SIZE)
        small = np.flatnonzero(counts < k)
        if small.size == 0:
            return
        if ids is None:
            which = (f"the batch of {int(counts[0])} row(s) (sample_domain=None makes all rows "
                     "of the call one test task) has")
        else:
            items = [f"{int(ids[i])} ({int(counts[i])} row{'s' if counts[i] != 1 else ''})"
                     for i in small]
            which = f"test task(s) {_domain_list(items)} {'has' if len(items) == 1 else 'have'}"
        warnings.warn(
            f"{type(self).__name__}: {which} fewer than min_predict_task_size={k} rows. Each "
            "test task is embedded from its own rows in this call, so a task of a few rows gets "
            "a poor embedding and worse predictions (predicting one row at a time embeds every "
            "row as its own task: 5% -> 45% error on the rotated ellipses). Pass all rows of a "
            "task in one call; to predict a stream, embed it from a stored sample of the task: "
            "predict(np.vstack([X_sample, X_new]), sample_domain)[len(X_sample):].",
            UserWarning, stacklevel=5)

    def _raw_decision(self, X, sample_domain) -> np.ndarray:
        """``(n, n_outputs)`` decision values; each test task embedded from its own rows."""
        X, task, n_test = self._group_test(X, sample_domain)
        pooling = self._pooling()
        if self.solver_ == "rf":
            ZP = None if pooling else rff_embeddings(X, task, n_test, self.W_, dtype=_RF_DTYPE)
            Z = rff_product_features(X, task, ZP, self.V_x_, self.V_p_, sigma_x=self.sigma_x_,
                                     sigma_p=self.sigma_p_ or 1.0, dtype=_RF_DTYPE)
            out = self.linear_model_.decision_function(Z) if hasattr(
                self.linear_model_, "decision_function") else self.linear_model_.predict(Z)
            return out.reshape(X.shape[0], -1)
        if pooling:
            KP = np.ones((n_test, self.n_tasks_))
        else:
            ke = self._param("kernel_emb", "rbf")
            G_tt = exact_embedding_gram(X, task, n_test, kernel=ke, sigma=self.sigma_emb_)
            G_tr = exact_embedding_gram(X, task, n_test, self.X_fit_, self.task_fit_,
                                        self.n_tasks_, kernel=ke, sigma=self.sigma_emb_)
            D2 = embedding_sq_distances(G_tr, np.diag(G_tt), self.emb_sqnorm_)
            KP = gaussian_from_sq_distances(D2, self.sigma_p_)
        out = np.zeros((X.shape[0], self.dual_coef_.shape[1]))
        if self.support_vectors_.shape[0] == 0:
            return out  # every dual coefficient is 0 (e.g. a constant target inside the tube)
        for start in range(0, X.shape[0], 4096):
            sl = slice(start, min(start + 4096, X.shape[0]))
            K = product_kernel(X[sl], task[sl], KP, self.support_vectors_, self.support_task_,
                               kernel=self.kernel_x, sigma=self.sigma_x_)
            out[sl] = K @ self.dual_coef_
        return out
