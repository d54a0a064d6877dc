"""The machinery shared by the marginal-transfer estimators: input checks, task weights, the
exact and random-feature fits, prediction by test task (decisions: :mod:`._marginal`)."""

from __future__ import annotations

import warnings

import numpy as np
from sklearn.base import BaseEstimator
from sklearn.exceptions import DataConversionWarning
from sklearn.utils.validation import check_is_fitted

from .._validation import check_sample_domain, check_X, check_X_y_domain
from ..kernels import _rng, check_rff_sampling, median_heuristic, rff_weights
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

__all__ = ["AUTO_RF_MIN_SAMPLES"]

#: ``solver="auto"`` uses random features from this many training rows on. Below it both
#: solvers fit in a fraction of a second (``benchmarks/marginal_speed.py``: at M = 512 exact
#: ~0.3 s, RF ~0.04 s) and the exact solver has no approximation error, so it is kept there.
AUTO_RF_MIN_SAMPLES = 1000

#: precision of the random-feature projections and cos/sin (RF solver). float32 cos/sin are
#: ~10x faster than float64 (SIMD); the absolute error per feature (~1e-6) is far below the
#: Monte-Carlo error of the features (~1/sqrt(Q)). Frequencies, task offsets, embeddings'
#: means and the liblinear problem stay in float64 (the squared-hinge Newton solver keeps the
#: design in float32: its matrix products are the cost, see ``linear_squared_hinge_newton``).
_RF_DTYPE = np.float32

_LOSSES = ("hinge", "squared_hinge")


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


def _resolve_sigma(spec, data_rule, name: str) -> float:
    """float | "median" | "<f>*median" -> positive float; ``data_rule()`` gives the median."""
    if isinstance(spec, str):
        factor, _, rule = spec.rpartition("*")
        if rule.strip() != "median":
            raise ValueError(f"{name} must be a positive float, 'median' or '<f>*median', "
                             f"got {spec!r}.")
        try:
            f = float(factor) if factor else 1.0
        except ValueError:
            raise ValueError(f"{name}: cannot read the factor in {spec!r}.") from None
        if not f > 0:
            raise ValueError(f"{name}: the factor in {spec!r} must be positive.")
        return f * data_rule()
    if isinstance(spec, (int, float, np.floating, np.integer)) and not isinstance(spec, bool):
        if np.isfinite(spec) and spec > 0:
            return float(spec)
    raise ValueError(f"{name} must be a positive float, 'median' or '<f>*median', got {spec!r}.")


class _MarginalTransferBase(BaseEstimator):
    """Shared fit/predict machinery (see the module docstring)."""

    _task_kind = "classification"

    # -- parameters read through these helpers so the Pooling* subclasses can omit them --
    def _pooling(self) -> bool:
        return bool(getattr(self, "pooling", True))

    def _param(self, name, default):
        return getattr(self, name, default)

    def _loss(self) -> str:
        loss = self._param("loss", "hinge")
        if not (isinstance(loss, str) and loss in _LOSSES):
            raise ValueError(f"loss must be 'hinge' or 'squared_hinge', got {loss!r}.")
        return loss

    def _tol(self, solver: str) -> float:
        if self.tol is None:
            if solver == "exact":
                return 1e-2
            return 1e-4 if self._param("loss", "hinge") == "squared_hinge" else 0.1
        if not (isinstance(self.tol, (int, float, np.number)) and self.tol > 0):
            raise ValueError(f"tol must be a positive number or None, got {self.tol!r}.")
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
                                    allow_unlabeled_source=True, require_source=False)
        # every DG training row is labeled, so for classification -1 is an ordinary class
        # (the rotated ellipses use {-1, +1}); only NaN marks a missing regression target.
        if self._task_kind == "regression" and np.any(np.isnan(y.astype(float))):
            raise ValueError("Domain generalization trains on labeled tasks only: y contains "
                             "NaN. Remove those rows (test tasks are passed to predict).")
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
        w = self._param("weighting", "task")
        if w == "point":
            return np.ones(task.shape[0])
        if w != "task":
            raise ValueError(f"weighting must be 'task' or 'point', got {w!r}.")
        M, N = task.shape[0], counts.shape[0]
        return M / (N * counts[task].astype(np.float64))

    def _choose_solver(self, M: int) -> str:
        solver = self.solver
        kx = self.kernel_x
        if kx not in ("rbf", "linear"):
            raise ValueError(f"kernel_x must be 'rbf' or 'linear', got {kx!r}.")
        ke = self._param("kernel_emb", "rbf")
        if ke not in ("rbf", "linear"):
            raise ValueError(f"kernel_emb must be 'rbf' or 'linear', got {ke!r}.")
        if solver == "auto":
            return "rf" if (kx == "rbf" and M >= AUTO_RF_MIN_SAMPLES) else "exact"
        if solver not in ("exact", "rf"):
            raise ValueError(f"solver must be 'auto', 'exact' or 'rf', got {solver!r}.")
        if solver == "rf" and kx != "rbf":
            raise ValueError("solver='rf' needs kernel_x='rbf' (random Fourier features of a "
                             "Gaussian); use solver='exact' for a linear kernel_x.")
        return solver

    def _fit(self, X, y, sample_domain):
        if not (isinstance(self.C, (int, float, np.number)) and self.C > 0):
            raise ValueError(f"C must be a positive number, got {self.C!r}.")
        check_rff_sampling(self.sampling)
        X, y, task, ids, counts = self._check_fit_input(X, y, sample_domain)
        self.n_features_in_ = X.shape[1]
        self.domains_ = ids
        self.n_tasks_ = ids.shape[0]
        M = X.shape[0]
        Y = self._encode_targets(y)  # (M, n_outputs) of +-1 labels or scaled targets
        c = self.C * self._weights(task, counts)
        rng = _rng(self.random_state)
        self.solver_ = self._choose_solver(M)
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
        X = check_X(X)
        if X.shape[1] != self.n_features_in_:
            raise ValueError(f"X has {X.shape[1]} features, but {type(self).__name__} is "
                             f"expecting {self.n_features_in_} features as input (the "
                             "number it was fitted with).")
        if sample_domain is None:
            return X, np.zeros(X.shape[0], dtype=np.int64), 1
        sd = check_sample_domain(sample_domain, X.shape[0])
        ids, inv = np.unique(sd, return_inverse=True)
        seen = np.intersect1d(ids, self.domains_)
        if seen.size:
            warnings.warn(f"Test domain id(s) {seen.tolist()} were training tasks: their rows "
                          "are embedded from the test rows only, but this is not domain "
                          "generalization (the task was seen in training).", UserWarning,
                          stacklevel=3)
        return X, inv.astype(np.int64), ids.shape[0]

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
        for start in range(0, X.shape[0], 4096):
            sl = slice(start, min(start + 4096, X.shape[0]))
            K = product_kernel(X[sl], task[sl], KP, self.support_vectors_, self.support_task_,
                               kernel=self.kernel_x, sigma=self.sigma_x_)
            out[sl] = K @ self.dual_coef_
        return out
