"""The machinery shared by the marginal-transfer estimators: task weights, the exact and
random-feature fits, prediction by test task (decisions: :mod:`._marginal`; input checks:
:mod:`._marginal_checks`).
"""

from __future__ import annotations

import warnings

import numpy as np
from sklearn.base import BaseEstimator
from sklearn.exceptions import DataConversionWarning
from sklearn.utils.validation import check_is_fitted

from .._param_validation import check_params
from .._validation import check_sample_domain, check_X, check_X_y_domain
from ..adaptation._base import user_stacklevel
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
from ._marginal_checks import (
    MIN_PREDICT_TASK_SIZE,
    check_exact_memory,
    check_rf_memory,
    labeled_training_rows,
    resolve_sigma,
    warn_small_test_tasks,
)
from ._solvers import linear_squared_hinge_newton

__all__ = ["AUTO_RF_MIN_SAMPLES"]

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


class _MarginalTransferBase(BaseEstimator):
    """Shared fit/predict machinery (see the module docstring)."""

    # scikit-learn metadata routing: sample_domain is requested by default, so
    # GridSearchCV(...).fit(X, y, sample_domain=sd) routes it here when routing is on
    __metadata_request__fit = {"sample_domain": True}
    __metadata_request__predict = {"sample_domain": True}

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
                          "raveled.", DataConversionWarning, stacklevel=user_stacklevel())
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
            check_exact_memory(type(self).__name__, M, self.kernel_x)
        else:
            check_rf_memory(type(self).__name__, M, X.shape[1], int(self.n_components),
                            int(self._param("n_components_emb", 100)))
        med = {}

        def median_x() -> float:  # computed once, shared by sigma_x and sigma_emb
            if "x" not in med:
                med["x"] = median_heuristic(X)
            return med["x"]

        self.sigma_x_ = (resolve_sigma(self.sigma_x, median_x, "sigma_x")
                         if self.kernel_x == "rbf" else None)
        ke = self._param("kernel_emb", "rbf")
        pooling = self._pooling()
        self.sigma_emb_ = None
        if not pooling and ke == "rbf":
            self.sigma_emb_ = resolve_sigma(self._param("sigma_emb", "median"), median_x,
                                             "sigma_emb")
        if self.solver_ == "exact":
            self._fit_exact(X, Y, task, c, rng, pooling, ke)
        else:
            self._fit_rf(X, Y, task, c, rng, pooling, ke)
        return self

    def _fit_exact(self, X, Y, task, c, rng, pooling, ke):
        N = self.n_tasks_
        if pooling:
            KP = np.ones((N, N))
            self.sigma_p_ = None
        else:
            G = exact_embedding_gram(X, task, N, kernel=ke, sigma=self.sigma_emb_)
            self.emb_sqnorm_ = np.diag(G).copy()
            D2 = embedding_sq_distances(G, self.emb_sqnorm_, self.emb_sqnorm_)
            self.sigma_p_ = resolve_sigma(self._param("sigma_p", "median"),
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
            self.sigma_p_ = resolve_sigma(
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
                              UserWarning, stacklevel=user_stacklevel())
        n_test = 1 if ids is None else ids.shape[0]
        if not self._pooling():
            warn_small_test_tasks(type(self).__name__, np.bincount(task, minlength=n_test), ids,
                                  self._param("min_predict_task_size", MIN_PREDICT_TASK_SIZE))
        return X, task, n_test

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
