"""The machinery shared by the marginal-transfer estimators: task weights, the exact and
random-feature fits, prediction by test task (decisions: :mod:`._marginal`; input checks:
:mod:`._marginal_checks`).
"""

from __future__ import annotations

import warnings
from numbers import Integral

import numpy as np
from sklearn.base import BaseEstimator
from sklearn.exceptions import DataConversionWarning
from sklearn.utils.validation import check_is_fitted

from .._constraints import check_params
from .._dask import is_dask, to_memory
from .._stacklevel import user_stacklevel
from .._validation import (
    check_sample_domain,
    check_X,
    check_X_y_domain,
    label_array,
    require_y,
)
from ..kernels import (
    domain_mean_matrix,
    kernel_matrix,
    median_heuristic,
    resolve_bandwidth,
    rff_weights,
)
from ._dask import decision_dask, fit_rf_dask
from ._embedding import (
    canonical_task_kernel,
    embedding_sq_distances,
    exact_embedding_gram,
    landmark_embeddings,
    product_kernel,
    rff_embeddings,
    rff_product_features,
    task_kernel,
    task_kernel_sigma,
)
from ._marginal_checks import (
    DEFAULT_N_LANDMARKS,
    MIN_PREDICT_TASK_SIZE,
    RF_KERNELS,
    bandwidth_specs,
    check_exact_memory,
    check_nystroem_memory,
    check_rf_memory,
    labeled_training_rows,
    warn_small_test_tasks,
)
from ._solvers import expansion_coef, landmark_factor, linear_squared_hinge_newton

__all__ = ["AUTO_RF_MIN_SAMPLES"]

#: ``solver="auto"`` uses the exact solver below this many training rows, and random features
#: (or Nyström, where random features do not apply) from it on. Below it the exact solver has
#: no approximation error and fits in a fraction of a second
#: (``benchmarks/generalization/marginal_solvers.py``: 0.044 s for the whole fit at M = 1,024,
#: one thread); above it random features are 2.5-8.6x faster at M = 2,048-10,000
#: (``marginal_speed.py``) and the ``M x M`` kernel's memory grows as ``M^2``.
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
    __metadata_request__decision_function = {"sample_domain": True}
    __metadata_request__score = {"sample_domain": True}

    _task_kind = "classification"
    #: ``k_P = 1`` whatever ``tau`` says: set by the Pooling* estimators
    _POOLING = False

    # -- parameters read through these helpers so the Pooling* subclasses can omit them --
    def _param(self, name, default):
        return getattr(self, name, default)

    def _loss(self) -> str:
        return self._param("loss", "hinge")

    def _tol(self, solver: str) -> float:
        """``tol=None``: the exact solver's dual coordinate descent (liblinear's rules) 1e-2
        (classifier) or 1e-3 (regressor: the SVR dual's relative rule needs the smaller value
        for the objective gap the classifier's dual reaches at 1e-2,
        ``benchmarks/generalization/marginal_solvers.py``), liblinear 0.1 on random or Nyström
        features, 1e-4 for the squared-hinge Newton method."""
        if self.tol is None:
            if solver == "exact":
                return 1e-3 if self._task_kind == "regression" else 1e-2
            return 1e-4 if self._param("loss", "hinge") == "squared_hinge" else 0.1
        return float(self.tol)

    # ------------------------------------------------------------------------------- fit
    def _training_y(self, y) -> np.ndarray:
        """``y`` as a 1-D array (a column is raveled with a warning); ``None`` refused."""
        require_y(y, self, " (training tasks must be labeled).")
        y = label_array(y)
        if y.ndim == 2 and y.shape[1] == 1:
            warnings.warn("A column-vector y was passed when a 1d array was expected; it is "
                          "raveled.", DataConversionWarning, stacklevel=user_stacklevel())
            y = y.ravel()
        return y

    def _training_tasks(self, sd: np.ndarray):
        """``(ids, inv, counts)`` of the training tasks; tasks below ``min_task_size`` refused."""
        ids, inv, counts = np.unique(sd, return_inverse=True, return_counts=True)
        small = counts < self.min_task_size
        if np.any(small):
            bad = ", ".join(f"task {i} has only {c} sample(s)"
                            for i, c in zip(ids[small], counts[small], strict=True))
            raise ValueError(f"Too few points per task: {bad}; each task needs at least "
                             f"min_task_size={self.min_task_size} points to embed its "
                             "marginal distribution.")
        return ids, inv.astype(np.int64), counts

    def _check_fit_input(self, X, y, sample_domain):
        y = self._training_y(y)
        X, y, sd = check_X_y_domain(X, y, sample_domain, task=self._task_kind,
                                    allow_unlabeled_source=True, require_source=False,
                                    estimator=self)
        keep = labeled_training_rows(y, sd, self._task_kind, type(self).__name__)
        if not keep.all():
            X, y, sd = X[keep], y[keep], sd[keep]
        ids, inv, counts = self._training_tasks(sd)
        order = np.argsort(inv, kind="stable")  # rows grouped task by task
        return X[order], y[order], inv[order], ids, counts

    def _weights(self, task, counts) -> np.ndarray:
        if self._param("weighting", "task") == "point":
            return np.ones(task.shape[0])
        M, N = task.shape[0], counts.shape[0]
        return M / (N * counts[task].astype(np.float64))

    # ------------------------------------------------------------------- kernels and solvers
    def _pooling(self) -> bool:
        """``k_P = 1``: the Pooling* estimators or ``tau=1``."""
        return self._POOLING or float(self._param("tau", 0.0)) == 1.0

    def _kernel_p_kind(self) -> str:
        return canonical_task_kernel(self._param("kernel_p", "gaussian"),
                                     bool(self._param("normalize_p", False)))

    def _rf_obstacle(self) -> str | None:
        """Why the random-feature solver cannot fit this configuration (``None``: it can)."""
        if self.kernel_x not in RF_KERNELS:
            return (f"solver='rf' needs a shift-invariant kernel_x ({', '.join(RF_KERNELS)}: "
                    f"random Fourier features), got kernel_x={self.kernel_x!r}")
        if self._pooling():
            return None
        if self._kernel_p_kind() != "gaussian":
            return ("solver='rf' needs the Gaussian kernel on embeddings (eq. 11; "
                    f"kernel_p='gaussian'), got kernel_p={self._param('kernel_p', '')!r}"
                    + (" (normalised, the exponential one is the Gaussian: normalize_p=True)"
                       if self._param("kernel_p", "") == "exponential" else ""))
        if float(self._param("tau", 0.0)) != 0.0:
            return (f"solver='rf' has no features for tau={self._param('tau', 0.0)!r} between "
                    "pooling (tau=1) and marginal transfer (tau=0)")
        return None

    def _choose_solver(self, M: int) -> str:
        solver = self.solver
        obstacle = self._rf_obstacle()
        if solver == "auto":
            if M < AUTO_RF_MIN_SAMPLES:
                return "exact"
            return "rf" if obstacle is None else "nystroem"
        if solver == "rf" and obstacle is not None:
            raise ValueError(f"{obstacle}; use solver='nystroem' (Nyström features of any "
                             "kernel) or solver='exact'.")
        return solver

    def _n_landmarks(self, M: int) -> int:
        m = self._param("n_landmarks", DEFAULT_N_LANDMARKS)
        if isinstance(m, Integral):
            return int(min(m, M))
        return int(min(M, max(1, np.ceil(float(m) * M))))

    def _fit(self, X, y, sample_domain):
        if is_dask(X):      # statistics per block where the blocks live (generalization/_dask)
            return fit_rf_dask(self, X, y, sample_domain, _RF_DTYPE)
        y, sample_domain = to_memory(y, sample_domain)
        check_params(self)
        self._bandwidths = bandwidth_specs(self)    # the former sigma_* names, with a warning
        if self.solver == "rf":
            self._choose_solver(0)  # the cross-parameter errors, before any work
            self._check_rf_sampling()
        X, y, task, ids, counts = self._check_fit_input(X, y, sample_domain)
        self.domains_ = ids
        self.n_tasks_ = ids.shape[0]
        M = X.shape[0]
        Y = self._encode_targets(y)  # (M, n_outputs) of +-1 labels or scaled targets
        c = self.C * self._weights(task, counts)
        rng = np.random.default_rng(self.random_state)
        self.solver_ = self._choose_solver(M)
        if self.solver_ == "rf":
            self._check_rf_sampling()
        if self.solver_ == "exact":
            check_exact_memory(type(self).__name__, M, self.kernel_x)
        elif self.solver_ == "nystroem":
            check_nystroem_memory(type(self).__name__, M, self._n_landmarks(M))
        else:
            check_rf_memory(type(self).__name__, M, X.shape[1], int(self.n_features),
                            int(self._param("n_features_emb", 100)))
        self._set_bandwidths(X)
        ke = self._param("kernel_emb", "rbf")
        pooling = self._pooling()
        if self.solver_ == "rf":
            self._fit_rf(X, Y, task, c, rng, pooling, ke)
        else:
            self._fit_kernel(X, Y, task, c, rng, pooling, ke)
        return self

    def _set_bandwidths(self, X: np.ndarray) -> None:
        """``sigma_x_`` and ``sigma_emb_`` from ``bandwidth_x`` and ``bandwidth_emb``
        (numbers, or the median rule of each kernel on the rows of ``X``, which it subsamples
        itself: a Dask fit passes those rows only)."""
        med = {}

        def median(kernel):  # once per kernel, shared by bandwidth_x and bandwidth_emb
            if kernel not in med:  # the kernel's own rule (laplacian: L1 distances, ...)
                med[kernel] = median_heuristic(X, kernel=kernel)
            return med[kernel]

        kx = self.kernel_x
        self.sigma_x_ = (resolve_bandwidth(self._bandwidths["bandwidth_x"], None,
                                           name="bandwidth_x",
                                           rule_value=lambda rule: median(kx))
                         if kx != "linear" else None)
        ke = self._param("kernel_emb", "rbf")
        self.sigma_emb_ = None
        if not self._pooling() and ke != "linear" and self._kernel_p_kind() != "indicator":
            self.sigma_emb_ = resolve_bandwidth(self._bandwidths["bandwidth_emb"], None,
                                                name="bandwidth_emb",
                                                rule_value=lambda rule: median(ke))

    def _train_task_kernel(self, X, task, pooling, ke, landmarks=None) -> np.ndarray:
        """``k_P`` between the training tasks (``N x N``); sets ``sigma_p_`` and the embedding
        norms kept for prediction. With ``landmarks`` (the Nyström solver) the embeddings are
        task means of the landmarks' Nyström features of ``k'`` (kept for prediction:
        ``emb_landmarks_``, ``emb_chol_``, ``emb_features_``), ``O(M m)`` instead of the
        ``O(M^2)`` exact inner products of eq. 30; a linear ``k'`` stays exact (the means)."""
        N = self.n_tasks_
        self.sigma_p_ = None
        self.emb_landmarks_ = self.emb_chol_ = self.emb_features_ = None
        if pooling:
            return np.ones((N, N))
        kind, tau = self._kernel_p_kind(), float(self._param("tau", 0.0))
        if kind == "indicator":
            return task_kernel(None, None, None, kind=kind, tau=tau, same=np.eye(N, dtype=bool))
        if landmarks is not None and ke != "linear":
            fac = landmark_factor(kernel_matrix(X, X[landmarks], kernel=ke,
                                                sigma=self.sigma_emb_), landmarks)
            self.emb_landmarks_ = X[landmarks[fac.pivots]]
            self.emb_chol_ = fac.chol
            self.emb_features_ = domain_mean_matrix(task, N)[0].T @ fac.features
            G = self.emb_features_ @ self.emb_features_.T
        else:
            G = exact_embedding_gram(X, task, N, kernel=ke, sigma=self.sigma_emb_)
        self.emb_sqnorm_ = np.diag(G).copy()
        D2 = embedding_sq_distances(G, self.emb_sqnorm_, self.emb_sqnorm_)
        self.sigma_p_ = resolve_bandwidth(
            self._bandwidths["bandwidth_p"], None, name="bandwidth_p",
            rule_value=lambda rule: task_kernel_sigma(G, D2, kind))
        return task_kernel(G, self.emb_sqnorm_, self.emb_sqnorm_, kind=kind,
                           sigma=self.sigma_p_, degree=int(self._param("degree_p", 2)),
                           tau=tau)

    def _test_task_kernel(self, X, task, ids, n_test) -> np.ndarray:
        """``k_P`` between the test tasks (each embedded from its own rows) and the training
        tasks, ``(n_test, N)``."""
        if self._pooling():
            return np.ones((n_test, self.n_tasks_))
        kind, tau = self._kernel_p_kind(), float(self._param("tau", 0.0))
        if kind == "indicator":  # the same task = the same sample_domain id
            same = (np.zeros((n_test, self.n_tasks_), dtype=bool) if ids is None
                    else ids[:, None] == self.domains_[None, :])
            new = ~same.any(axis=1)
            if tau == 0.0 and new.any():
                which = ("the batch (sample_domain=None)" if ids is None
                         else f"test task(s) {ids[new].tolist()}")
                warnings.warn(
                    f"{type(self).__name__}: kernel_p='indicator' with tau=0 shares nothing "
                    f"between tasks, and {which} is not a training task, so k_P = 0 and its "
                    "decision values are 0 (one machine per training task: no generalization "
                    "to a new task, paper §5.2). Use tau > 0 or another kernel_p.",
                    UserWarning, stacklevel=user_stacklevel())
            return task_kernel(None, None, None, kind=kind, tau=tau, same=same)
        ke = self._param("kernel_emb", "rbf")
        if getattr(self, "emb_features_", None) is not None:      # Nystroem embeddings
            Z = landmark_embeddings(X, task, n_test, self.emb_landmarks_, self.emb_chol_,
                                    kernel=ke, sigma=self.sigma_emb_)
            G_tr, d_tt = Z @ self.emb_features_.T, np.einsum("ij,ij->i", Z, Z)
        else:
            d_tt = np.diag(exact_embedding_gram(X, task, n_test, kernel=ke,
                                                sigma=self.sigma_emb_))
            G_tr = exact_embedding_gram(X, task, n_test, self.X_fit_, self.task_fit_,
                                        self.n_tasks_, kernel=ke, sigma=self.sigma_emb_)
        return task_kernel(G_tr, d_tt, self.emb_sqnorm_, kind=kind,
                           sigma=self.sigma_p_, degree=int(self._param("degree_p", 2)),
                           tau=tau)

    def _fit_kernel(self, X, Y, task, c, rng, pooling, ke):
        """Exact and Nyström solvers. Exact: dual coordinate descent on the ``M x M`` product
        kernel (:mod:`._dual_cd`), one problem per output column; Nyström: a factor of the
        kernel through landmark rows (the same landmarks give the embeddings' features), then
        the linear machine on it (:mod:`._solvers`)."""
        M = X.shape[0]
        kw = dict(kernel=self.kernel_x, sigma=self.sigma_x_)
        if self.solver_ == "exact":
            KP = self._train_task_kernel(X, task, pooling, ke)
            K = product_kernel(X, task, KP, **kw)
            zero = not np.any(np.diag(K) > 0.0)
        else:
            S = np.sort(rng.choice(M, self._n_landmarks(M), replace=False))
            KP = self._train_task_kernel(X, task, pooling, ke, landmarks=S)
            fac = landmark_factor(product_kernel(X, task, KP, X[S], task[S], **kw), S)
            rows = S[fac.pivots]
            zero = fac.features.shape[1] == 0
        seed = int(rng.integers(2**31 - 1))
        n_out = Y.shape[1]
        if zero:
            warnings.warn(f"{type(self).__name__}: the kernel is zero on every training row "
                          "(e.g. all-zero X with kernel_x='linear'), so the model predicts "
                          "0 everywhere.", UserWarning, stacklevel=user_stacklevel())
            beta, rows, self.n_iter_ = np.zeros((0, n_out)), np.zeros(0, dtype=np.int64), 0
        elif self.solver_ == "exact":
            beta, self.n_iter_ = self._dual_solve(K, Y, c, seed)
            rows = np.flatnonzero(np.any(beta != 0.0, axis=1))
            beta = beta[rows]
        else:
            model = self._linear_model(seed, self.solver_)
            model.fit(fac.features, self._linear_target(Y), sample_weight=c / self.C)
            coef = np.asarray(model.coef_, dtype=np.float64).reshape(n_out, -1)
            self.n_iter_ = int(np.max(model.n_iter_))
            beta = expansion_coef(fac, coef)
        self.dual_coef_ = beta
        self.support_vectors_ = X[rows]
        self.support_task_ = task[rows]
        self.X_fit_, self.task_fit_ = X, task  # the training rows, for test-task embeddings

    def _rff_weights(self, n_input, n_features, sigma, seed, kernel="rbf"):
        """Frequencies of ``kernel`` from its spectral law (:func:`~shiftlearn.kernels.
        rff_weights`: Gaussian, Cauchy for the Laplacian, Laplace for the Cauchy kernel)."""
        return rff_weights(n_input, n_features, sigma, seed, sampling=self.sampling,
                           kernel=kernel)

    def _check_rf_sampling(self):
        """Orthogonal random features need the Gaussian's rotation-invariant law: refused
        before any work for another kernel_x / kernel_emb of the RF solver."""
        if self.sampling != "orthogonal":
            return
        used = [("kernel_x", self.kernel_x)]
        if not self._pooling():
            used.append(("kernel_emb", self._param("kernel_emb", "rbf")))
        bad = [f"{name}={k!r}" for name, k in used if k not in ("rbf", "linear")]
        if bad:
            raise ValueError(
                f"sampling='orthogonal' applies to the rbf kernel only (orthogonal random "
                f"features need a rotation-invariant frequency law), got {', '.join(bad)} with "
                "the random-feature solver. Use sampling='gaussian' (i.i.d. frequencies of "
                "each kernel's law), an rbf kernel, or solver='nystroem'.")

    def _draw_rf(self, d: int, rng, pooling: bool, ke: str) -> int:
        """The frequencies of the RF solver (``W_``, ``V_x_``, ``V_p_``; they depend on the
        embeddings' width, not their values); returns the linear model's seed."""
        L, Q = self._param("n_features_emb", 100), self.n_features
        seeds = rng.integers(2**31 - 1, size=3)
        kx = self.kernel_x
        self.W_ = None
        if pooling:
            self.V_x_ = self._rff_weights(d, Q, 1.0, seeds[0], kx)
            self.V_p_, self.ZP_, self.sigma_p_ = None, None, None
            return int(seeds[2])
        self.W_ = (self._rff_weights(d, L, self.sigma_emb_, seeds[1], ke)
                   if ke != "linear" else None)
        width = d if self.W_ is None else 2 * self.W_.shape[1]   # Z_P: task means of x, or RFF
        if kx == "rbf":  # one Gaussian kernel on (x / sigma_x, Z_P / sigma_p): joint draw
            V = self._rff_weights(d + width, Q, 1.0, seeds[0])
            self.V_x_, self.V_p_ = V[:d], V[d:]
        else:  # the product of two kernels: independent frequency blocks
            self.V_x_ = self._rff_weights(d, Q, 1.0, seeds[0], kx)
            self.V_p_ = self._rff_weights(width, Q, 1.0, int(seeds[0]) + 1)
        return int(seeds[2])

    def _set_embeddings(self, ZP: np.ndarray):
        """``ZP_`` (training tasks' embeddings) and the bandwidth ``sigma_p_`` between them."""
        self.ZP_ = ZP
        self.sigma_p_ = resolve_bandwidth(
            self._bandwidths["bandwidth_p"], None, name="bandwidth_p",
            rule_value=lambda rule: median_heuristic(self.ZP_) if self.n_tasks_ >= 2 else 1.0)

    def _fit_rf(self, X, Y, task, c, rng, pooling, ke):
        seed = self._draw_rf(X.shape[1], rng, pooling, ke)
        if not pooling:
            self._set_embeddings(rff_embeddings(X, task, self.n_tasks_, self.W_,
                                                dtype=_RF_DTYPE))
        Q = self.n_features
        self.linear_model_ = self._linear_model(seed, "rf")
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
        return (X,) + self._test_tasks(X.shape[0], sample_domain)

    def _test_tasks(self, n: int, sample_domain):
        """``(task, ids, n_test)`` of ``n`` test rows; warns about seen and tiny tasks."""
        if sample_domain is None:
            task, ids = np.zeros(n, dtype=np.int64), None
        else:
            sd = check_sample_domain(sample_domain, n)
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
        return task, ids, n_test

    def _raw_decision(self, X, sample_domain) -> np.ndarray:
        """``(n, n_outputs)`` decision values; each test task embedded from its own rows.
        A Dask ``X`` gives a lazy Dask array (``generalization/_dask.py``)."""
        if is_dask(X):
            return decision_dask(self, X, sample_domain, _RF_DTYPE)
        sample_domain = to_memory(sample_domain)
        X, task, ids, n_test = self._group_test(X, sample_domain)
        pooling = self._pooling()
        if self.solver_ == "rf":
            ZP = None if pooling else rff_embeddings(X, task, n_test, self.W_, dtype=_RF_DTYPE)
            Z = rff_product_features(X, task, ZP, self.V_x_, self.V_p_, sigma_x=self.sigma_x_,
                                     sigma_p=self.sigma_p_ or 1.0, dtype=_RF_DTYPE)
            out = self.linear_model_.decision_function(Z) if hasattr(
                self.linear_model_, "decision_function") else self.linear_model_.predict(Z)
            return out.reshape(X.shape[0], -1)
        KP = self._test_task_kernel(X, task, ids, n_test)
        out = np.zeros((X.shape[0], self.dual_coef_.shape[1]))
        if self.support_vectors_.shape[0] == 0:
            return out  # every dual coefficient is 0 (e.g. a constant target inside the tube)
        for start in range(0, X.shape[0], 4096):
            sl = slice(start, min(start + 4096, X.shape[0]))
            K = product_kernel(X[sl], task[sl], KP, self.support_vectors_, self.support_task_,
                               kernel=self.kernel_x, sigma=self.sigma_x_)
            out[sl] = K @ self.dual_coef_
        return out
