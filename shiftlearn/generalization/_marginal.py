"""Marginal transfer learning for domain generalization (Blanchard et al., JMLR 2021).

A kernel machine on the augmented input ``(P_X, x)`` with the product kernel
``k = k_P(P, P') k_X(x, x')``, ``k_P = exp(-||Psi(P) - Psi(P')||^2 / (2 sigma_P^2))`` on
kernel-mean embeddings ``Psi`` (embedding kernel ``k'``). Each training task is embedded from
its own rows; at prediction time each test task (rows sharing a ``sample_domain`` id) is
embedded from its own unlabeled rows. No retraining at test time.

Decisions on the paper's ambiguities (see ``docs/marginal_transfer.md``)
-----------------------------------------------------------------------
* **Regularisation.** We minimise ``sum_a c_a loss(f(x~_a), y_a) + 1/2 ||f||^2`` with
  ``c_a = C * M / (N n_{t(a)})`` (``M`` training rows, ``N`` tasks, ``n_t`` rows of task t), i.e.
  eq. (7) with ``lambda = 1 / (2 C M)``. ``C`` is "per point on average", so with equal task
  sizes it is scikit-learn's/liblinear's ``C`` (the authors' code grid ``C in [0.1, 10]``).
  ``weighting="point"`` drops the ``1/n_t`` weights (the paper's unweighted pooling (b)).
* **No intercept**, as in the paper: the exact solver is our own box-constrained dual
  coordinate descent; the random-feature solver is liblinear with ``fit_intercept=False``
  (hinge) or our primal finite Newton method (squared hinge).
* **Losses:** by default the true hinge / epsilon-insensitive losses (the paper's text).
  The classifier's ``loss="squared_hinge"`` is the authors' code (liblinear ``-s 1``), with the
  same weights ``c_a``: the exact solver runs the squared-hinge dual (no upper bound,
  ``1/(2 c_a)`` on the diagonal), the RF solver a primal Newton method on the float32 features
  (rows >> features), which is much faster than liblinear's dual coordinate descent for the
  hinge (``benchmarks/marginal_speed.py``). The regressor keeps the epsilon-insensitive loss.
  Multiclass: one-vs-rest (the paper is binary).
* **Regression target:** with ``normalize_y=True`` (default) ``y`` is standardised with the
  training mean/std before fitting and predictions are mapped back, so ``epsilon`` is in units
  of the target's standard deviation. The mean acts as a fixed, unpenalised offset: a small
  deviation from the paper's no-offset formulation, needed because UPDRS scores sit far from 0.
* **Embeddings:** V-statistic (diagonal included, eq. 30) in the exact solver; random-feature
  means (eq. 31) in the RF solver. A training point belongs to its own task's embedding.
* **Bandwidths:** each of ``sigma_x``, ``sigma_emb``, ``sigma_p`` is a float, ``"median"``
  (median pairwise distance of the training rows, resp. of the training task embeddings) or
  ``"<f>*median"`` (``f`` times it, handy for grids).
* **Test tasks** may have any size >= 1; a test ``sample_domain`` id also used in training
  triggers a warning (that is not domain generalization).
"""

from __future__ import annotations

import warnings

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin, RegressorMixin
from sklearn.exceptions import DataConversionWarning
from sklearn.svm import LinearSVC, LinearSVR
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted

from .._validation import check_sample_domain, check_X, check_X_y_domain
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
from ._solvers import kernel_svm_dual, kernel_svr_dual, linear_squared_hinge_newton

__all__ = [
    "AUTO_RF_MIN_SAMPLES",
    "MarginalTransferClassifier",
    "MarginalTransferRegressor",
    "PoolingClassifier",
    "PoolingRegressor",
]

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
        self.W_ = None
        if pooling:
            self.V_x_, self.V_p_, self.ZP_, self.sigma_p_ = rff_weights(d, Q, 1.0, seeds[0]), \
                None, None, None
        else:
            self.W_ = rff_weights(d, L, self.sigma_emb_, seeds[1]) if ke == "rbf" else None
            self.ZP_ = rff_embeddings(X, task, N, self.W_, dtype=_RF_DTYPE)
            V = rff_weights(d + self.ZP_.shape[1], Q, 1.0, seeds[0])
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


_COMMON_DOC = """
    Parameters
    ----------
    C : float, default=1.0
        Regularisation: per-point cost ``c_a = C * M / (N n_t)`` (``lambda = 1 / (2 C M)`` in
        the paper's eq. 7). Equals liblinear's ``C`` when all tasks have the same size.
    sigma_x, sigma_emb, sigma_p : float, "median" or "<f>*median", default="median"
        Bandwidths of ``k_X`` (on x), ``k'`` (the embedding kernel) and ``k_P`` (Gaussian on
        embeddings). ``"median"``: median pairwise distance of the training rows (``sigma_x``,
        ``sigma_emb``), resp. of the training task embeddings (``sigma_p``).
    kernel_x : {"rbf", "linear"}, default="rbf"
    kernel_emb : {"rbf", "linear"}, default="rbf"
        ``"linear"`` embeds a task by its mean (the paper's flow-cytometry set-up).
    pooling : bool, default=False
        ``True`` sets ``k_P = 1``: the paper's pooling baseline (a plain kernel machine on all
        training rows with the per-task weights).
    solver : {"auto", "exact", "rf"}, default="auto"
        ``"exact"``: the kernel machine (dual coordinate descent, no intercept, O(M^2)
        memory). ``"rf"``: two-stage random Fourier features + liblinear without intercept.
        ``"auto"``: ``"rf"`` from ``AUTO_RF_MIN_SAMPLES`` training rows on (rbf ``kernel_x``).
    n_components_emb : int, default=100
        ``L``, random frequencies of the embedding kernel (RF solver).
    n_components : int, default=300
        ``Q``, random frequencies of the product kernel (RF solver); ``2Q`` features.
    weighting : {"task", "point"}, default="task"
        ``"task"``: weights ``1/(N n_t)`` (every task counts equally, the paper's eq. 7);
        ``"point"``: every row counts equally.
    min_task_size : int, default=2
        Training tasks with fewer rows raise a ``ValueError``.
    tol : float or None, default=None
        Stopping tolerance of the dual solvers. ``None``: ``1e-2`` for the exact solver and
        ``0.1`` for liblinear (RF solver; liblinear's own default for its dual solvers and the
        authors' setting; at N n = 10^4 it needs ~5x fewer epochs than ``1e-2`` for the same
        test error, see ``benchmarks/marginal_speed.py``); for the classifier's
        ``loss="squared_hinge"`` the RF solver's default is ``1e-4`` (relative gradient norm of
        the primal Newton method).
    max_iter : int, default=1000
        Epochs of the exact solver / iterations of liblinear (Newton steps, squared hinge).
    random_state : int, Generator or None
        Seeds the random features and the coordinate order.
"""

_LOSS_DOC = """    loss : {"hinge", "squared_hinge"}, default="hinge"
        ``"hinge"``: ``c_a max(0, 1 - y f)``, the paper's text. ``"squared_hinge"``:
        ``c_a max(0, 1 - y f)^2``, the authors' code (liblinear ``-s 1``); same costs ``c_a``.
        Exact solver: the squared-hinge dual (``alpha_a >= 0``, ``1/(2 c_a)`` added to the
        diagonal). RF solver: a primal finite Newton method on float32 features, stopped at
        ``||gradient|| <= tol ||gradient at 0||`` (``tol=None``: ``1e-4``); much faster than
        liblinear's dual for the hinge when rows >> ``2Q`` features.
"""


class MarginalTransferClassifier(ClassifierMixin, _MarginalTransferBase):
    __doc__ = """Marginal transfer learning classifier (hinge or squared hinge, no intercept).

    ``fit(X, y, sample_domain)`` on labeled training tasks (one id per task);
    ``predict(X, sample_domain)`` embeds each test task from its own rows. Plain
    ``fit(X, y)`` is one task. Multiclass is one-vs-rest.
    """ + _COMMON_DOC + _LOSS_DOC + """
    Attributes
    ----------
    classes_, domains_ (training task ids), n_tasks_, solver_, sigma_x_, sigma_emb_,
    sigma_p_ ; exact solver: dual_coef_, support_vectors_ ; RF solver: W_, V_x_, V_p_,
    ZP_ (training task embeddings), linear_model_.

    Examples
    --------
    >>> from shiftlearn.datasets import make_rotated_ellipses
    >>> X, y, sd = make_rotated_ellipses(32, 32, random_state=0)
    >>> clf = MarginalTransferClassifier(C=10, sigma_x=0.3, random_state=0).fit(X, y, sd)
    >>> Xt, yt, sdt = make_rotated_ellipses(4, 200, first_domain=100, random_state=1)
    >>> bool(clf.score(Xt, yt, sdt) > 0.7)
    True
    """

    def __init__(self, *, C=1.0, sigma_x="median", sigma_emb="median", sigma_p="median",
                 kernel_x="rbf", kernel_emb="rbf", pooling=False, solver="auto",
                 n_components_emb=100, n_components=300, weighting="task", min_task_size=2,
                 tol=None, max_iter=1000, loss="hinge", random_state=None):
        self.C = C
        self.sigma_x = sigma_x
        self.sigma_emb = sigma_emb
        self.sigma_p = sigma_p
        self.kernel_x = kernel_x
        self.kernel_emb = kernel_emb
        self.pooling = pooling
        self.solver = solver
        self.n_components_emb = n_components_emb
        self.n_components = n_components
        self.weighting = weighting
        self.min_task_size = min_task_size
        self.tol = tol
        self.max_iter = max_iter
        self.loss = loss
        self.random_state = random_state

    def _encode_targets(self, y):
        check_classification_targets(y)
        self.classes_ = np.unique(y)
        if self.classes_.shape[0] < 2:
            raise ValueError(f"The classifier needs samples of at least 2 classes; got 1 class "
                             f"({self.classes_[0]!r}).")
        self._y_index = np.searchsorted(self.classes_, y)
        if self.classes_.shape[0] == 2:
            return np.where(self._y_index == 1, 1.0, -1.0)[:, None]
        return np.where(self._y_index[:, None] == np.arange(self.classes_.shape[0]), 1.0, -1.0)

    def _solve_kernel(self, K, yk, c, seed):
        return kernel_svm_dual(K, yk, c, loss=self._loss(), tol=self._tol("exact"),
                               max_iter=self.max_iter, random_state=seed, return_n_iter=True)

    def _linear_model(self, seed):
        if self._loss() == "squared_hinge":
            return _SquaredHingeNewtonSVC(C=self.C, tol=self._tol("rf"), max_iter=self.max_iter)
        return LinearSVC(C=self.C, loss="hinge", fit_intercept=False, dual=True,
                         tol=self._tol("rf"), max_iter=self.max_iter, random_state=seed)

    def _linear_target(self, Y):
        return self.classes_[self._y_index]

    def fit(self, X, y, sample_domain=None):
        """Fit on labeled tasks; ``sample_domain`` gives one id per task (default: one task)."""
        self._loss()  # validate before any work
        return self._fit(X, y, sample_domain)

    def decision_function(self, X, sample_domain=None):
        """Scores ``f(P_hat_T, x)``: shape ``(n,)`` for two classes (positive means
        ``classes_[1]``), else ``(n, n_classes)`` one-vs-rest."""
        D = self._raw_decision(X, sample_domain)
        return D[:, 0] if D.shape[1] == 1 else D

    def predict(self, X, sample_domain=None):
        """Labels; the rows of each ``sample_domain`` id form one test task (None: one task)."""
        D = self.decision_function(X, sample_domain)
        idx = (D > 0).astype(int) if D.ndim == 1 else np.argmax(D, axis=1)
        return self.classes_[idx]

    def score(self, X, y, sample_domain=None, sample_weight=None):
        """Accuracy of ``predict(X, sample_domain)``."""
        from sklearn.metrics import accuracy_score
        return accuracy_score(y, self.predict(X, sample_domain), sample_weight=sample_weight)


class MarginalTransferRegressor(RegressorMixin, _MarginalTransferBase):
    __doc__ = """Marginal transfer learning regressor (epsilon-insensitive loss, SVR-like).

    Same interface as :class:`MarginalTransferClassifier`; ``epsilon`` is the width of the
    insensitive tube, in units of the target's standard deviation when ``normalize_y``.
    """ + _COMMON_DOC + """
    epsilon : float, default=0.1
    normalize_y : bool, default=True
        Standardise ``y`` with the training mean and std (the mean acts as a fixed offset).

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> shift = np.repeat(rng.normal(size=20), 30)          # each task has its own shift
    >>> X = rng.normal(size=(600, 1)) + shift[:, None]; y = shift
    >>> sd = np.repeat(np.arange(1, 21), 30)
    >>> reg = MarginalTransferRegressor(C=10, random_state=0).fit(X, y, sd)
    >>> bool(reg.predict(X[:30], -np.ones(30, dtype=int)).std() < 0.2)   # one value per task
    True
    """

    _task_kind = "regression"

    def __init__(self, *, C=1.0, epsilon=0.1, sigma_x="median", sigma_emb="median",
                 sigma_p="median", kernel_x="rbf", kernel_emb="rbf", pooling=False,
                 solver="auto", n_components_emb=100, n_components=300, weighting="task",
                 normalize_y=True, min_task_size=2, tol=None, max_iter=1000,
                 random_state=None):
        self.C = C
        self.epsilon = epsilon
        self.sigma_x = sigma_x
        self.sigma_emb = sigma_emb
        self.sigma_p = sigma_p
        self.kernel_x = kernel_x
        self.kernel_emb = kernel_emb
        self.pooling = pooling
        self.solver = solver
        self.n_components_emb = n_components_emb
        self.n_components = n_components
        self.weighting = weighting
        self.normalize_y = normalize_y
        self.min_task_size = min_task_size
        self.tol = tol
        self.max_iter = max_iter
        self.random_state = random_state

    def _encode_targets(self, y):
        y = np.asarray(y, dtype=np.float64)
        if self._param("normalize_y", True):
            self.y_mean_ = float(y.mean())
            sd = float(y.std())
            self.y_scale_ = sd if sd > 0 else 1.0
        else:
            self.y_mean_, self.y_scale_ = 0.0, 1.0
        return ((y - self.y_mean_) / self.y_scale_)[:, None]

    def _solve_kernel(self, K, yk, c, seed):
        return kernel_svr_dual(K, yk, c, epsilon=self.epsilon, tol=self._tol("exact"),
                               max_iter=self.max_iter, random_state=seed, return_n_iter=True)

    def _linear_model(self, seed):
        return LinearSVR(C=self.C, epsilon=self.epsilon, loss="epsilon_insensitive",
                         fit_intercept=False, dual=True, tol=self._tol("rf"),
                         max_iter=self.max_iter, random_state=seed)

    def _linear_target(self, Y):
        return Y[:, 0]

    def fit(self, X, y, sample_domain=None):
        """Fit on labeled tasks; ``sample_domain`` gives one id per task (default: one task)."""
        return self._fit(X, y, sample_domain)

    def predict(self, X, sample_domain=None):
        """Predictions; the rows of each ``sample_domain`` id form one test task."""
        return self._raw_decision(X, sample_domain)[:, 0] * self.y_scale_ + self.y_mean_

    def score(self, X, y, sample_domain=None, sample_weight=None):
        """R^2 of ``predict(X, sample_domain)``."""
        from sklearn.metrics import r2_score
        return r2_score(y, self.predict(X, sample_domain), sample_weight=sample_weight)


class PoolingClassifier(MarginalTransferClassifier):
    """The paper's pooling baseline: :class:`MarginalTransferClassifier` with ``k_P = 1``.

    One kernel machine on all training rows (per-task weights ``1/(N n_t)`` by default); the
    prediction ignores the test task's marginal. Parameters as the marginal classifier, without
    the embedding ones.

    Examples
    --------
    >>> from shiftlearn.datasets import make_rotated_ellipses
    >>> X, y, sd = make_rotated_ellipses(8, 16, random_state=0)
    >>> PoolingClassifier(random_state=0).fit(X, y, sd).predict(X[:3]).shape
    (3,)
    """

    def __init__(self, *, C=1.0, sigma_x="median", kernel_x="rbf", solver="auto",
                 n_components=300, weighting="task", min_task_size=2, tol=None,
                 max_iter=1000, loss="hinge", random_state=None):
        self.C = C
        self.sigma_x = sigma_x
        self.kernel_x = kernel_x
        self.solver = solver
        self.n_components = n_components
        self.weighting = weighting
        self.min_task_size = min_task_size
        self.tol = tol
        self.max_iter = max_iter
        self.loss = loss
        self.random_state = random_state


class PoolingRegressor(MarginalTransferRegressor):
    """The paper's pooling baseline for regression: :class:`MarginalTransferRegressor` with
    ``k_P = 1`` (an SVR without intercept on all training rows).

    Examples
    --------
    >>> import numpy as np
    >>> X = np.linspace(0, 1, 40)[:, None]; y = X.ravel() ** 2
    >>> sd = np.repeat([1, 2], 20)
    >>> PoolingRegressor(C=10, random_state=0).fit(X, y, sd).score(X, y) > 0.9
    True
    """

    def __init__(self, *, C=1.0, epsilon=0.1, sigma_x="median", kernel_x="rbf",
                 solver="auto", n_components=300, weighting="task", normalize_y=True,
                 min_task_size=2, tol=None, max_iter=1000, random_state=None):
        self.C = C
        self.epsilon = epsilon
        self.sigma_x = sigma_x
        self.kernel_x = kernel_x
        self.solver = solver
        self.n_components = n_components
        self.weighting = weighting
        self.normalize_y = normalize_y
        self.min_task_size = min_task_size
        self.tol = tol
        self.max_iter = max_iter
        self.random_state = random_state
