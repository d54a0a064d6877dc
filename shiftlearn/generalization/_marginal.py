"""Marginal transfer learning for domain generalization (Blanchard et al., JMLR 2021).

A kernel machine on the augmented input ``(P_X, x)`` with the product kernel
``k = k_P(P, P') k_X(x, x')`` (eq. 8), ``k_P = K(Psi(P), Psi(P'))`` (eq. 10) on kernel-mean
embeddings ``Psi`` (embedding kernel ``k'``, eq. 9), ``K`` Gaussian by default
(``exp(-||Psi(P) - Psi(P')||^2 / (2 sigma_P^2))``, eq. 11). Each training task is embedded from
its own rows; at prediction time each test task (rows sharing a ``sample_domain`` id) is
embedded from its own unlabeled rows. No retraining at test time.

The model where the paper leaves it open (see ``docs/marginal_transfer.md``)
---------------------------------------------------------------------------
* **Regularisation.** We minimise ``sum_a c_a loss(f(x~_a), y_a) + 1/2 ||f||^2`` with
  ``c_a = C * M / (N n_{t(a)})`` (``M`` training rows, ``N`` tasks, ``n_t`` rows of task t), i.e.
  eq. (7) with ``lambda = 1 / (2 C M)``. ``C`` is "per point on average", so with equal task
  sizes it is scikit-learn's/liblinear's ``C`` (the authors' code grid ``C in [0.1, 10]``).
  ``weighting="point"`` drops the ``1/n_t`` weights (the paper's unweighted pooling (b)).
* **No intercept**, as in the paper. The exact solver runs liblinear's dual coordinate
  descent on the ``M x M`` product kernel itself, keeping the dual gradient
  (:mod:`._dual_cd`). The
  Nyström and RF solvers build explicit features, a pivoted-Cholesky factor of the kernel
  through random landmark rows (App. A.6.2, :mod:`._solvers`; the task embeddings too are
  means of the same landmarks' features of ``k'``, our extension: no ``M x M`` kernel anywhere)
  or the two-stage random Fourier features (App. A.6.1), and fit a linear machine without
  intercept on them: liblinear (``LinearSVC``/``LinearSVR``, ``fit_intercept=False``, per-row
  costs as ``sample_weight``) or, for the squared hinge, our primal finite Newton method. All
  three minimise one objective; ``tol`` keeps liblinear's meaning on all of them.
* **Solver choice** (``solver="auto"``, reported in ``solver_``): exact below
  ``AUTO_RF_MIN_SAMPLES`` rows (no approximation, well under a second there); above, random
  features where they apply (shift-invariant ``kernel_x``, Gaussian ``kernel_p``, ``tau = 0``)
  and Nyström otherwise (any kernel).
* **Kernels on embeddings** (``kernel_p``, ``normalize_p``, ``tau``): the Gaussian (eq. 11),
  exponential and polynomial (eq. 12), their normalised versions (§6.1; the normalised
  exponential is the Gaussian and is computed as such), and ``tau + (1 - tau) K`` between
  pooling (``tau = 1``) and marginal transfer (``tau = 0``); with the indicator kernel (1 on
  the same task, by ``sample_domain`` id) ``tau`` is the paper's multi-task family of §5.2,
  ``tau = 0`` being one machine per training task (a new task then gets decision 0, with a
  warning).
* **Losses:** by default the true hinge / epsilon-insensitive losses (the paper's text).
  The classifier's ``loss="squared_hinge"`` is the authors' code (liblinear ``-s 1``), with the
  same weights ``c_a``: the squared-hinge dual on the exact kernel, a primal Newton
  method on random or Nyström features (rows >> features). The regressor keeps the
  epsilon-insensitive loss.
  Multiclass: one-vs-rest (the paper is binary).
* **Regression target:** with ``normalize_y=True`` (default) ``y`` is standardised with the
  training mean/std before fitting and predictions are mapped back, so ``epsilon`` is in units
  of the target's standard deviation. The mean acts as a fixed, unpenalised offset: a small
  deviation from the paper's no-offset formulation, needed because UPDRS scores sit far from 0.
* **Embeddings:** V-statistic (diagonal included, eq. 30) in the exact solver; random-feature
  means (eq. 31) in the RF solver. A training point belongs to its own task's embedding.
* **Bandwidths:** each of ``bandwidth_x``, ``bandwidth_emb``, ``bandwidth_p`` (one per
  kernel) is a float, ``"median"`` (median pairwise distance of the training rows, resp. of
  the training task embeddings) or ``"<f>*median"`` (``f`` times it, handy for grids); the
  fitted numbers are ``sigma_x_``, ``sigma_emb_``, ``sigma_p_``. The former names
  ``sigma_x``, ``sigma_emb``, ``sigma_p`` are read for one release, mapped by ``fit`` with a
  ``FutureWarning``.
* **Training rows** (the library's unlabeled convention): ``fit`` learns from the labeled rows
  of source domains (positive ``sample_domain``). Unlabeled rows (``y = -1``/NaN; regression:
  NaN) and target-domain rows are left out with a warning that counts them per domain, so the
  output of ``DomainDataset.pack()`` (masked target rows included) can be passed as it is and
  ``-1`` is never learnt as a class. Labels ``-1/+1`` in source domains are refused with the
  convention's error (re-encode them, e.g. ``make_rotated_ellipses``' default ``(0, 1)``).
* **Test tasks** may have any size >= 1, but each is embedded from the rows given in the
  ``predict`` call: a task with fewer than ``min_predict_task_size`` rows (default 10) is
  predicted with a warning. Predicting a stream one row at a time would embed every row as its
  own task, with a much larger error; pass a task's rows together, or embed the new
  rows with a stored sample of their task::

      pred = clf.predict(np.vstack([X_sample, X_new]),
                         np.full(len(X_sample) + len(X_new), -1))[len(X_sample):]

  A test ``sample_domain`` id also used in training triggers a warning (that is not domain
  generalization).
* **Conformance:** declarative ``_parameter_constraints`` (checked before any work) and
  scikit-learn's ``validate_data`` (feature names recorded in ``fit``; a DataFrame with
  reordered columns is refused at ``predict``). ``predict`` on a subset of a batch differs from
  the batch's prediction by design (the batch is one test task): scikit-learn's
  ``check_methods_subset_invariance`` is an expected failure (``tests/house/test_common.py``).
"""

from __future__ import annotations

import numpy as np
from sklearn.base import ClassifierMixin, RegressorMixin
from sklearn.svm import LinearSVC, LinearSVR
from sklearn.utils.multiclass import check_classification_targets

from .._dask import is_dask
from .._validation import scored_rows
from ._dual_cd import kernel_svm, kernel_svr
from ._marginal_base import AUTO_RF_MIN_SAMPLES, _MarginalTransferBase, _SquaredHingeNewtonSVC
from ._marginal_checks import (
    DEFAULT_N_LANDMARKS,
    MARGINAL_PARAMETER_CONSTRAINTS,
    MIN_PREDICT_TASK_SIZE,
)

__all__ = [
    "AUTO_RF_MIN_SAMPLES",
    "MIN_PREDICT_TASK_SIZE",
    "MarginalTransferClassifier",
    "MarginalTransferRegressor",
    "PoolingClassifier",
    "PoolingRegressor",
]

_COMMON_DOC = """
    Parameters
    ----------
    C : float, default=1.0
        Regularisation: per-point cost ``c_a = C * M / (N n_t)`` (``lambda = 1 / (2 C M)`` in
        the paper's eq. 7). Equals liblinear's ``C`` when all tasks have the same size.
    bandwidth_x, bandwidth_emb, bandwidth_p : float, "median" or "<f>*median", default="median"
        Bandwidths of ``k_X`` (on x), ``k'`` (the embedding kernel) and ``k_P`` (the kernel
        on embeddings), fitted as ``sigma_x_``, ``sigma_emb_``, ``sigma_p_``. ``"median"``:
        the kernel's median rule on the training rows (``bandwidth_x``, ``bandwidth_emb``;
        :func:`shiftlearn.kernels.median_heuristic`: median L2 distance for rbf, L1 for
        laplacian, ``sqrt(2)`` x L2 for cauchy), resp. the median distance between training
        task embeddings (``bandwidth_p``, Gaussian ``kernel_p``) or
        ``sqrt(median |<Psi_i, Psi_j>|)`` (exponential, polynomial); ``"<f>*median"``: ``f``
        times it. A value outside ``[1e-150, 1e150]`` is refused (``ValueError``).
    sigma_x, sigma_emb, sigma_p : deprecated
        The former names of ``bandwidth_x``, ``bandwidth_emb``, ``bandwidth_p``, read for one
        release: ``fit`` uses a given one with a ``FutureWarning``, and raises a
        ``ValueError`` when the new name is given too.
    kernel_x : {"rbf", "laplacian", "cauchy", "linear"}, default="rbf"
        ``exp(-||a-b||^2/(2 sigma^2))``, ``exp(-||a-b||_1/sigma)``,
        ``prod_j 1/(1 + ((a_j-b_j)/sigma)^2)`` or ``a . b`` (:mod:`shiftlearn.kernels`).
    kernel_emb : {"rbf", "laplacian", "cauchy", "linear"}, default="rbf"
        ``k'``; ``"linear"`` embeds a task by its mean (the paper's flow-cytometry set-up).
    kernel_p : {"gaussian", "exponential", "polynomial", "indicator"}, default="gaussian"
        ``K`` in ``k_P(P, P') = K(Psi(P), Psi(P'))`` (eq. 10): ``exp(-||Psi - Psi'||^2 /
        (2 sigma_p^2))`` (eq. 11, the paper's experiments), ``exp(<Psi, Psi'> / sigma_p^2)``
        or ``(1 + <Psi, Psi'> / sigma_p^2)^degree_p`` (eq. 12), or ``1`` on the same task and
        ``0`` otherwise (§5.2; the same task = the same ``sample_domain`` id).
    degree_p : int, default=2
        Degree of the polynomial ``kernel_p``.
    normalize_p : bool, default=False
        Use the normalised kernel ``K(v, v') / sqrt(K(v, v) K(v', v'))`` (§6.1). The
        normalised exponential kernel is the Gaussian one and is computed as such.
    tau : float in [0, 1], default=0.0
        ``k_P = tau + (1 - tau) K``: ``tau = 1`` is pooling, ``tau = 0`` marginal transfer;
        with ``kernel_p="indicator"`` this is the paper's family between independent
        per-task machines (``tau = 0``) and pooling (§5.2). ``tau = 1`` (``k_P = 1``) is the
        paper's pooling baseline, a plain kernel machine on all training rows with the
        per-task weights; :class:`PoolingClassifier` / :class:`PoolingRegressor` fit the same
        model without the embedding parameters.
    solver : {"auto", "exact", "rf", "nystroem"}, default="auto"
        ``"exact"``: the kernel machine (liblinear's dual coordinate descent run on the
        ``M x M`` kernel, no intercept; ``O(M^2)`` memory). ``"nystroem"``: a
        pivoted-Cholesky factor of the kernel through ``n_landmarks`` random landmark rows,
        fed to liblinear (App. A.6.2, eq. 42; any kernel; the task embeddings through the
        same landmarks). ``"rf"``: two-stage random Fourier features + liblinear (App. A.6.1;
        shift-invariant ``kernel_x``, Gaussian ``kernel_p``, ``tau = 0``). ``"auto"``:
        ``"exact"`` below ``AUTO_RF_MIN_SAMPLES`` training rows, else ``"rf"`` where it
        applies and ``"nystroem"`` otherwise; the choice is ``solver_``.
    n_features_emb : int, default=100
        ``L``, random frequencies of the embedding kernel (RF solver).
    n_features : int, default=300
        ``Q``, random frequencies of the product kernel (RF solver); ``2Q`` features.
    n_landmarks : int or float in (0, 1], default=500
        Landmarks of the Nyström solver: a count (at most the training rows), or a fraction
        of the training rows (``1.0``: every row, the exact solver's function).
    sampling : {"gaussian", "orthogonal"}, default="gaussian"
        How both stages draw their frequencies (RF solver): i.i.d. from each kernel's
        spectral law (Gaussian for rbf, the paper's) or orthogonal random features
        (:func:`shiftlearn.kernels.rff_weights`; rbf kernels only; lower kernel error at the
        same ``L`` and ``Q``). With an rbf ``kernel_x`` the product kernel ``k_P k_X`` is one
        Gaussian kernel on ``(x / sigma_x, Psi(P) / sigma_p)``, so its ``Q`` frequencies are
        drawn (orthogonally) in that joint space and split; with a laplacian or cauchy
        ``kernel_x`` the two blocks are drawn independently (the product of two kernels).
    weighting : {"task", "point"}, default="task"
        ``"task"``: weights ``1/(N n_t)`` (every task counts equally, the paper's eq. 7);
        ``"point"``: every row counts equally.
    min_task_size : int, default=2
        Training tasks with fewer (labeled) rows raise a ``ValueError``.
    tol : float or None, default=None
        Stopping tolerance of the linear solvers. ``None``: ``1e-2`` for the exact
        solver's dual coordinate descent (liblinear's rules; ``1e-3`` for the regressors,
        whose SVR dual needs it for the same objective gap), ``0.1`` for liblinear on random
        or Nyström features (liblinear's own default for its dual solvers and the authors'
        setting); for the classifier's
        ``loss="squared_hinge"`` on random or Nyström features ``1e-4`` (relative gradient
        norm of the primal Newton method).
    max_iter : int, default=1000
        Epochs of liblinear (Newton steps, squared hinge on random or Nyström features).
    random_state : int, Generator or None
        Seeds the random features, the landmarks and liblinear's coordinate order.
"""

_PREDICT_SIZE_DOC = """    min_predict_task_size : int, default=10
        ``predict`` warns when a test task has fewer rows (its embedding is then poor; see
        the module docstring for how to predict a stream; ``MIN_PREDICT_TASK_SIZE``).
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
    _parameter_constraints: dict = {
        k: MARGINAL_PARAMETER_CONSTRAINTS[k]
        for k in ("C", "bandwidth_x", "bandwidth_emb", "bandwidth_p", "kernel_x", "kernel_emb",
                  "kernel_p", "degree_p", "normalize_p", "tau", "solver", "n_features_emb",
                  "n_features", "n_landmarks", "sampling", "weighting", "min_task_size",
                  "min_predict_task_size", "tol", "max_iter", "loss", "random_state", "sigma_x",
                  "sigma_emb", "sigma_p")}

    __doc__ = """Marginal transfer learning classifier (hinge or squared hinge, no intercept).

    ``fit(X, y, sample_domain)`` on labeled training tasks (one id per task);
    ``predict(X, sample_domain)`` embeds each test task from its own rows. Plain
    ``fit(X, y)`` is one task. Multiclass is one-vs-rest.
    """ + _COMMON_DOC + _PREDICT_SIZE_DOC + _LOSS_DOC + """
    Attributes
    ----------
    classes_, domains_ (training task ids), n_tasks_, solver_, sigma_x_, sigma_emb_,
    sigma_p_ ; exact and Nyström solvers: dual_coef_, support_vectors_ ; Nyström solver:
    emb_landmarks_, emb_chol_, emb_features_ (the training task embeddings through the
    landmarks) ; RF solver: W_, V_x_, V_p_, ZP_ (training task embeddings), linear_model_.

    Examples
    --------
    >>> from shiftlearn.datasets import make_rotated_ellipses
    >>> X, y, sd = make_rotated_ellipses(32, 32, random_state=0)
    >>> clf = MarginalTransferClassifier(C=10, bandwidth_x=0.3, random_state=0).fit(X, y, sd)
    >>> Xt, yt, sdt = make_rotated_ellipses(4, 200, first_domain=100, random_state=1)
    >>> bool(clf.score(Xt, yt, sdt) > 0.7)
    True
    """

    def __init__(self, *, C=1.0, bandwidth_x="median", bandwidth_emb="median",
                 bandwidth_p="median", kernel_x="rbf", kernel_emb="rbf", kernel_p="gaussian",
                 degree_p=2, normalize_p=False, tau=0.0, solver="auto",
                 n_features_emb=100, n_features=300, n_landmarks=DEFAULT_N_LANDMARKS,
                 sampling="gaussian", weighting="task", min_task_size=2,
                 min_predict_task_size=MIN_PREDICT_TASK_SIZE, tol=None, max_iter=1000,
                 loss="hinge", random_state=None, sigma_x="deprecated", sigma_emb="deprecated",
                 sigma_p="deprecated"):
        self.C = C
        self.bandwidth_x = bandwidth_x
        self.bandwidth_emb = bandwidth_emb
        self.bandwidth_p = bandwidth_p
        self.kernel_x = kernel_x
        self.kernel_emb = kernel_emb
        self.kernel_p = kernel_p
        self.degree_p = degree_p
        self.normalize_p = normalize_p
        self.tau = tau
        self.solver = solver
        self.n_features_emb = n_features_emb
        self.n_features = n_features
        self.n_landmarks = n_landmarks
        self.sampling = sampling
        self.weighting = weighting
        self.min_task_size = min_task_size
        self.min_predict_task_size = min_predict_task_size
        self.tol = tol
        self.max_iter = max_iter
        self.loss = loss
        self.random_state = random_state
        self.sigma_x = sigma_x
        self.sigma_emb = sigma_emb
        self.sigma_p = sigma_p

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

    def _dual_solve(self, K, Y, c, seed):
        """Exact solver: one kernel SVM per column of ``Y`` (one-vs-rest beyond two classes,
        as liblinear), one random stream; ``(beta (M, n_out), epochs)``."""
        rng = np.random.default_rng(seed)
        sols = [kernel_svm(K, Y[:, j], c, loss=self._loss(), tol=self._tol("exact"),
                           max_iter=self.max_iter, random_state=rng, return_n_iter=True)
                for j in range(Y.shape[1])]
        return np.column_stack([b for b, _ in sols]), max(it for _, it in sols)

    def _linear_model(self, seed, solver):
        """The linear machine on Nyström or random features: liblinear (``LinearSVC``, no
        intercept); the squared hinge (rows >> features) by the primal Newton method."""
        loss = self._loss()
        if loss == "squared_hinge":
            return _SquaredHingeNewtonSVC(C=self.C, tol=self._tol(solver),
                                          max_iter=self.max_iter)
        return LinearSVC(C=self.C, loss=loss, fit_intercept=False, dual=True,
                         tol=self._tol(solver), max_iter=self.max_iter, random_state=seed)

    def _linear_target(self, Y):
        return self.classes_[self._y_index]

    def fit(self, X, y, sample_domain=None):
        """Fit on labeled tasks; ``sample_domain`` gives one id per task (default: one task).

        Unlabeled rows and target-domain rows are left out with a warning (see the module
        docstring)."""
        return self._fit(X, y, sample_domain)

    def decision_function(self, X, sample_domain=None):
        """Scores ``f(P_hat_T, x)``: shape ``(n,)`` for two classes (positive means
        ``classes_[1]``), else ``(n, n_classes)`` one-vs-rest."""
        D = self._raw_decision(X, sample_domain)
        return D[:, 0] if D.shape[1] == 1 else D

    def predict(self, X, sample_domain=None):
        """Labels; the rows of each ``sample_domain`` id form one test task (None: one task)."""
        D = self.decision_function(X, sample_domain)
        idx = (D > 0).astype(int) if D.ndim == 1 else D.argmax(axis=1)
        if is_dask(idx):                        # a Dask X: labels stay lazy
            return idx.map_blocks(self.classes_.take, dtype=self.classes_.dtype)
        return self.classes_[idx]

    def score(self, X, y, sample_domain=None, sample_weight=None):
        """Accuracy of ``predict(X, sample_domain)`` on the rows that carry a label: every row
        of a test task embeds the task, and unlabeled rows (``y = -1``, NaN, ...) are not
        counted (:func:`shiftlearn._validation.scored_rows`)."""
        from sklearn.metrics import accuracy_score
        keep, y = scored_rows(y)
        pred = self.predict(X, sample_domain)
        return float(accuracy_score(y[keep], pred[keep], sample_weight=None if sample_weight
                                    is None else np.asarray(sample_weight)[keep]))


class MarginalTransferRegressor(RegressorMixin, _MarginalTransferBase):
    _parameter_constraints: dict = {
        k: MARGINAL_PARAMETER_CONSTRAINTS[k]
        for k in ("C", "epsilon", "bandwidth_x", "bandwidth_emb", "bandwidth_p", "kernel_x",
                  "kernel_emb", "kernel_p", "degree_p", "normalize_p", "tau", "solver",
                  "n_features_emb", "n_features", "n_landmarks", "sampling", "weighting",
                  "normalize_y", "min_task_size", "min_predict_task_size", "tol", "max_iter",
                  "random_state", "sigma_x", "sigma_emb", "sigma_p")}

    __doc__ = """Marginal transfer learning regressor (epsilon-insensitive loss, SVR-like).

    Same interface as :class:`MarginalTransferClassifier`; ``epsilon`` is the width of the
    insensitive tube, in units of the target's standard deviation when ``normalize_y``.
    """ + _COMMON_DOC + _PREDICT_SIZE_DOC + """
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

    def __init__(self, *, C=1.0, epsilon=0.1, bandwidth_x="median", bandwidth_emb="median",
                 bandwidth_p="median", kernel_x="rbf", kernel_emb="rbf", kernel_p="gaussian",
                 degree_p=2, normalize_p=False, tau=0.0, solver="auto",
                 n_features_emb=100, n_features=300, n_landmarks=DEFAULT_N_LANDMARKS,
                 sampling="gaussian", weighting="task", normalize_y=True, min_task_size=2,
                 min_predict_task_size=MIN_PREDICT_TASK_SIZE, tol=None, max_iter=1000,
                 random_state=None, sigma_x="deprecated", sigma_emb="deprecated",
                 sigma_p="deprecated"):
        self.C = C
        self.epsilon = epsilon
        self.bandwidth_x = bandwidth_x
        self.bandwidth_emb = bandwidth_emb
        self.bandwidth_p = bandwidth_p
        self.kernel_x = kernel_x
        self.kernel_emb = kernel_emb
        self.kernel_p = kernel_p
        self.degree_p = degree_p
        self.normalize_p = normalize_p
        self.tau = tau
        self.solver = solver
        self.n_features_emb = n_features_emb
        self.n_features = n_features
        self.n_landmarks = n_landmarks
        self.sampling = sampling
        self.weighting = weighting
        self.normalize_y = normalize_y
        self.min_task_size = min_task_size
        self.min_predict_task_size = min_predict_task_size
        self.tol = tol
        self.max_iter = max_iter
        self.random_state = random_state
        self.sigma_x = sigma_x
        self.sigma_emb = sigma_emb
        self.sigma_p = sigma_p

    def _encode_targets(self, y):
        y = np.asarray(y, dtype=np.float64)
        if self._param("normalize_y", True):
            with np.errstate(over="ignore"):
                self.y_mean_, sd = float(y.mean()), float(y.std())
            if not (np.isfinite(self.y_mean_) and np.isfinite(sd)):
                # y.std() overflows for |y| ~ 1e300: moments of y / max|y|, scaled back
                m = float(np.max(np.abs(y)))
                self.y_mean_, sd = float((y / m).mean()) * m, float((y / m).std()) * m
            if not (np.isfinite(self.y_mean_) and np.isfinite(sd)):
                raise ValueError("The regression target's mean or spread overflows float64; "
                                 "rescale y.")
            self.y_scale_ = sd if sd > 0 else 1.0
        else:
            self.y_mean_, self.y_scale_ = 0.0, 1.0
        return ((y - self.y_mean_) / self.y_scale_)[:, None]

    def _dual_solve(self, K, Y, c, seed):
        """Exact solver: the kernel SVR on ``K``; ``(beta (M, 1), epochs)``."""
        beta, it = kernel_svr(K, Y[:, 0], c, epsilon=self.epsilon, tol=self._tol("exact"),
                              max_iter=self.max_iter, random_state=seed, return_n_iter=True)
        return beta[:, None], it

    def _linear_model(self, seed, solver):
        return LinearSVR(C=self.C, epsilon=self.epsilon, loss="epsilon_insensitive",
                         fit_intercept=False, dual=True, tol=self._tol(solver),
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
        """R^2 of ``predict(X, sample_domain)`` on the rows whose target is not NaN (every row
        of a test task embeds the task)."""
        from sklearn.metrics import r2_score
        keep, y = scored_rows(y, task="regression")
        pred = self.predict(X, sample_domain)
        return float(r2_score(y[keep], pred[keep], sample_weight=None if sample_weight is None
                              else np.asarray(sample_weight)[keep]))


class PoolingClassifier(MarginalTransferClassifier):
    """The paper's pooling baseline: :class:`MarginalTransferClassifier` with ``k_P = 1``.

    One kernel machine on all training rows (per-task weights ``1/(N n_t)`` by default); the
    prediction ignores the test task's marginal. Parameters as the marginal classifier, without
    the embedding ones; ``MarginalTransferClassifier(tau=1)`` is the same model.

    Examples
    --------
    >>> from shiftlearn.datasets import make_rotated_ellipses
    >>> X, y, sd = make_rotated_ellipses(8, 16, random_state=0)
    >>> PoolingClassifier(random_state=0).fit(X, y, sd).predict(X[:3]).shape
    (3,)
    """

    _POOLING = True

    def __init__(self, *, C=1.0, bandwidth_x="median", kernel_x="rbf", solver="auto",
                 n_features=300, n_landmarks=DEFAULT_N_LANDMARKS, sampling="gaussian",
                 weighting="task", min_task_size=2, tol=None, max_iter=1000, loss="hinge",
                 random_state=None, sigma_x="deprecated"):
        self.C = C
        self.bandwidth_x = bandwidth_x
        self.kernel_x = kernel_x
        self.solver = solver
        self.n_features = n_features
        self.n_landmarks = n_landmarks
        self.sampling = sampling
        self.weighting = weighting
        self.min_task_size = min_task_size
        self.tol = tol
        self.max_iter = max_iter
        self.loss = loss
        self.random_state = random_state
        self.sigma_x = sigma_x


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

    _POOLING = True

    def __init__(self, *, C=1.0, epsilon=0.1, bandwidth_x="median", kernel_x="rbf",
                 solver="auto", n_features=300, n_landmarks=DEFAULT_N_LANDMARKS,
                 sampling="gaussian", weighting="task", normalize_y=True, min_task_size=2,
                 tol=None, max_iter=1000, random_state=None, sigma_x="deprecated"):
        self.C = C
        self.epsilon = epsilon
        self.bandwidth_x = bandwidth_x
        self.kernel_x = kernel_x
        self.solver = solver
        self.n_features = n_features
        self.n_landmarks = n_landmarks
        self.sampling = sampling
        self.weighting = weighting
        self.normalize_y = normalize_y
        self.min_task_size = min_task_size
        self.tol = tol
        self.max_iter = max_iter
        self.random_state = random_state
        self.sigma_x = sigma_x
