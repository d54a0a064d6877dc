"""Scatter Component Analysis (Ghifary, Balduzzi, Kleijn and Zhang, TPAMI 2017), exact kernel.

Generalized eigenproblem (the paper's (20) with footnote 1's ridge)::

    ((1 - beta)/n K~K~ + beta P) B = (delta K~ L K~ + K~ + Q + eps I) B Lambda

* ``K~ = H K H`` the centred kernel of all training rows (sources, and unlabeled targets in DA);
* ``K~ L K~ = (K~ E) C (K~ E)^T`` the domain scatter (distributional variance) with ``E`` the
  domain-mean matrix (:func:`shiftlearn.kernels.domain_mean_matrix`, one column per
  ``sample_domain`` id) and ``C = (I - 11^T/m)/m``; no n×n ``L`` is formed;
* ``P`` / ``Q`` the between / within class scatters of the *labeled* rows (Eqs. 13-14) with
  rows over all ``n`` training points, divided by ``n_s`` (see below).

Where the paper is ambiguous (``docs/adaptation.md`` has the reasoning)
----------------------------------------------------------------------
* **P/Q normalisation** (Eq. 18 lost): ``P = P_s / n_s``, ``Q = Q_s / n_s`` (exact scatter
  semantics; total = between + within holds), ``class_scatter_normalization="none"`` keeps
  ``P_s``, ``Q_s`` (the third-party MATLAB port).
* **Centering order**: everything is built from the centred ``K~`` (``centering="first"``), so
  ``B^T 1 = 0``; ``centering="literal"`` builds ``P``, ``Q`` from the uncentred ``K`` as the
  algorithm box reads literally.
* **Whitening**: features ``Z = K~_t^T B Lambda^{-1/2}`` (``whiten=True``); ``False`` drops
  ``Lambda^{-1/2}``.
* **Kernel form**: ``exp(-d^2 / (2 sigma^2))`` with ``sigma`` from the pooled training rows;
  ``bandwidth="median"`` (``sigma^2 = median d^2``, the paper's prose "median distance") by
  default, ``"median_sq"`` (``2 sigma^2 = median d^2``, the printed formula read as
  ``exp(-d^2/sigma)``) as the alternative.
* **eps**: absolute ridge ``1e-5`` on the denominator (``K~`` has unit-scale diagonal for RBF).
* **Test centering**: a test kernel is centred with the *training* mean (KPCA style); with
  ``B^T 1 = 0`` this only translates all embeddings, so 1NN is unaffected.
* **Labels**: every labeled row (y not -1/NaN) enters ``P``/``Q``; unlabeled rows (DA targets)
  enter only ``K~`` and the domain scatter. ``supervised=False`` ignores labels entirely
  (``P = Q = 0``, unsupervised SCA when ``beta = 0``).

Solver: the denominator splits into ``M = M0 + delta U U^T`` with ``M0 = K~ + Q + eps I`` and
the domain-scatter factor ``U`` of rank ``<= m - 1``. ``M0 = L L^T`` (Cholesky),
``G = L^{-1} K~`` (one triangular solve) and ``W = L^{-1} U`` give ``M = L S L^T`` with
``S = I + delta W W^T``, whose inverse square root is closed form; the leading eigenvectors of
the symmetric ``C = S^{-1/2} G ((1-beta)/n I + beta F) G^T S^{-1/2}`` (``P = K~ F K~``, ``F`` of
rank ``<= C-1``) come from Lanczos with ``O(n^2)`` products (or an SVD of the low-rank factor at
``beta = 1``), ``B = L^{-T} S^{-1/2} V``; so ``B^T M B = I`` exactly as the constraint (18), and
every ``beta`` and ``delta`` of a grid reuses one factorisation. The dense reference path
(``eigen_solver="dense"``) solves the explicit pencil with ``scipy.linalg.eigh``; both go
through :func:`shiftlearn._linalg.leading_eigh`.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, replace
from numbers import Integral, Real
from types import SimpleNamespace

import numpy as np
import scipy.linalg
from scipy.sparse.linalg import LinearOperator

from .._array_api import from_numpy, is_foreign_array, to_numpy
from .._constraints import BandwidthSpec, Interval, StrOptions
from .._linalg import NOT_POSITIVE_DEFINITE, leading_eigh, lowrank_inv_sqrt_weights
from .._resources import check_dense_memory
from .._validation import unlabeled_mask
from ..kernels import (
    BANDWIDTH_RULES,
    KERNELS,
    center_kernel,
    center_test_kernel,
    domain_mean_matrix,
    kernel_centering_stats,
)
from ._base import (
    BaseSubspaceTransformer,
    check_kernel_varies,
    clip_n_components,
    whitening_scale,
    zero_kernel_error,
)
from ._memory import FitMemory
from ._sca_array_api import sca_fit_array_api

__all__ = ["SCA", "SCAProblem", "sca_problem", "sca_solve", "uSCA"]


@dataclass
class SCAProblem:
    """The pieces of SCA's pencil, all with rows over the ``n`` training points.

    ``A = a * Kc @ Kc + beta * Pf @ Pf.T`` and ``M = M0 + delta * U @ U.T``: ``M0`` is the
    ``delta``-independent part ``K~ + Q + eps I`` and ``U`` (rank ``<= m - 1``) the factor of the
    domain scatter ``K~ L K~ = U U^T``, so a grid over ``delta`` shares one factorisation of
    ``M0``.
    """

    Kc: np.ndarray          # centred kernel (n, n)
    a: float                # (1 - beta) / n
    beta: float
    Pf: np.ndarray          # factor of P: P = Pf Pf^T, shape (n, r), r <= C - 1 (or 0)
    M0: np.ndarray          # K~ + Q + eps I, (n, n), symmetric positive definite
    U: np.ndarray           # K~ L K~ = U U^T, shape (n, m) (rank <= m - 1; (n, 0) if m = 1)
    delta: float
    n_classes: int

    @property
    def M(self) -> np.ndarray:
        """The explicit denominator ``M0 + delta U U^T`` (a new array)."""
        M = self.M0.copy()
        if self.delta and self.U.shape[1]:
            M += self.delta * (self.U @ self.U.T)
        return M

    def A(self) -> np.ndarray:
        """The explicit numerator (O(n^3)); for tests and the dense path."""
        A = self.a * (self.Kc.T @ self.Kc) if self.a else np.zeros_like(self.Kc)
        if self.beta and self.Pf.shape[1]:
            A += self.beta * (self.Pf @ self.Pf.T)
        return A


def _range_svd(F: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Thin SVD of a tall factor restricted to its numerical range: ``(U, s)`` with
    ``F F^T = U diag(s^2) U^T``, singular values below ``1e-12 * s_max`` dropped."""
    U, s, _ = np.linalg.svd(F, full_matrices=False)
    keep = s > 1e-12 * max(float(s[0]) if s.size else 0.0, 1e-300)
    return U[:, keep], s[keep]


def _class_stats(Kx: np.ndarray, y_lab: np.ndarray):
    """Class means ``m_k`` (columns), counts, and the class-centred columns of ``Kx``."""
    classes, inv, counts = np.unique(y_lab, return_inverse=True, return_counts=True)
    E, _ = domain_mean_matrix(inv)
    means = Kx @ E                                  # (n, C): m_k
    R = Kx - means[:, inv]                          # K_k H_k for every class, side by side
    return classes, counts, means, R


def sca_problem(
    K: np.ndarray,
    y: np.ndarray | None,
    sample_domain: np.ndarray,
    *,
    beta: float,
    delta: float,
    eps: float = 1e-5,
    class_scatter_normalization: str = "n_s",
    centering: str = "first",
    supervised: bool = True,
) -> SCAProblem:
    """Build SCA's numerator factors and denominator from the uncentred training kernel ``K``.

    Examples
    --------
    >>> import numpy as np
    >>> from shiftlearn.kernels import rbf_kernel
    >>> X = np.random.default_rng(0).normal(size=(12, 2))
    >>> y = np.r_[np.zeros(4, int), np.ones(4, int), -np.ones(4, int)]
    >>> sd = np.r_[np.ones(8, int), -2 * np.ones(4, int)]
    >>> prob = sca_problem(rbf_kernel(X, sigma=1.0), y, sd, beta=0.5, delta=1.0)
    >>> prob.M.shape, prob.Pf.shape, prob.U.shape
    ((12, 12), (12, 1), (12, 2))
    """
    n = K.shape[0]
    Kc = center_kernel(K)
    # domain scatter: K~ L K~ = (K~E) C (K~E)^T = U U^T, C = (I - 11^T/m)/m idempotent up to 1/m
    E, ids = domain_mean_matrix(sample_domain)
    m = ids.shape[0]
    if m > 1:
        Ud = Kc @ E
        Ud -= Ud.mean(axis=1, keepdims=True)        # (K~E)(I - 11^T/m)
        Ud *= 1.0 / np.sqrt(m)
    else:
        Ud = np.zeros((n, 0))
    M = Kc.copy()
    Pf = np.zeros((n, 0))
    n_classes = 0
    labeled = np.zeros(n, bool) if (y is None or not supervised) else ~unlabeled_mask(y)
    if labeled.any():
        Kx = Kc if centering == "first" else K
        classes, counts, means, R = _class_stats(Kx[:, labeled], np.asarray(y)[labeled])
        n_classes = classes.shape[0]
        ns = int(labeled.sum())
        norm = 1.0 / ns if class_scatter_normalization == "n_s" else 1.0
        # Q = sum_k K_k H_k K_k^T = R R^T
        M += norm * (R @ R.T)
        # P = sum_k n_k (m_k - mbar)(m_k - mbar)^T = Pf Pf^T, rank <= C - 1
        mbar = means @ (counts / ns)
        D = (means - mbar[:, None]) * np.sqrt(counts * norm)[None, :]
        U, s = _range_svd(D)
        Pf = U * s
    if eps:
        M.flat[:: n + 1] += eps
    M += M.T
    M *= 0.5
    return SCAProblem(Kc=Kc, a=(1.0 - beta) / n, beta=beta, Pf=Pf, M0=M, U=Ud,
                      delta=float(delta), n_classes=n_classes)


def sca_solve(prob: SCAProblem, n_components: int, *, eigen_solver: str = "auto",
              random_state=0, factors: dict | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Leading eigenpairs ``(Lambda, B)`` of the SCA pencil, ``B^T M B = I``, descending.

    With ``M0 = L L^T`` (Cholesky) and ``W = L^{-1} U`` the denominator is
    ``M = L S L^T``, ``S = I + delta W W^T``, whose inverse square root is closed form
    (``W`` has at most ``m`` columns); the pencil becomes the standard symmetric problem
    ``S^{-1/2} L^{-1} A L^{-T} S^{-1/2} v = lambda v`` and ``B = L^{-T} S^{-1/2} v``.

    ``factors`` (a dict, filled on first use) keeps the ``beta``- and ``delta``-independent
    factorisation (Cholesky of ``M0``, ``L^{-1} K~``, ``L^{-1}`` times the ``P`` and domain
    factors), so a grid over ``beta`` and ``delta`` on the same data costs one factorisation.
    """
    n = prob.Kc.shape[0]
    k = n_components
    if resolve_sca_solver(eigen_solver, n, k) == "dense":
        return leading_eigh(prob.A(), k, prob.M, overwrite=True, owner="SCA")
    f = {} if factors is None else factors
    if "Lc" not in f:
        try:
            f["Lc"] = scipy.linalg.cholesky(prob.M0, lower=True, check_finite=False)
        except np.linalg.LinAlgError:
            jitter = 1e-10 * float(np.trace(prob.M0)) / n
            try:
                if not jitter > 1e-300:
                    raise np.linalg.LinAlgError("M0 = 0")
                f["Lc"] = scipy.linalg.cholesky(prob.M0 + jitter * np.eye(n), lower=True,
                                                check_finite=False)
            except np.linalg.LinAlgError as exc:
                raise ValueError(NOT_POSITIVE_DEFINITE) from exc
        f["Gp"] = scipy.linalg.solve_triangular(f["Lc"], prob.Pf, lower=True,
                                                check_finite=False) \
            if prob.Pf.shape[1] else prob.Pf
        Wd = scipy.linalg.solve_triangular(f["Lc"], prob.U, lower=True, check_finite=False) \
            if prob.U.shape[1] else prob.U
        f["Wo"], f["ws"] = _range_svd(Wd)
    Lc, Gp, Wo, ws = f["Lc"], f["Gp"], f["Wo"], f["ws"]
    # S^{-1/2} = I + Wo diag(c) Wo^T with Wo orthonormal: c = s^2 a, a from the shared formula
    c = ws ** 2 * lowrank_inv_sqrt_weights(ws ** 2, prob.delta) if ws.size else ws

    def s_inv_sqrt(X: np.ndarray) -> np.ndarray:
        return X + Wo @ (c[:, None] * (Wo.T @ X)) if c.size else X

    if prob.a == 0.0:
        # C = beta (S^{-1/2} Gp)(S^{-1/2} Gp)^T has rank <= C - 1: an SVD of the factor is exact
        U, s, _ = np.linalg.svd(s_inv_sqrt(Gp), full_matrices=False)
        w = prob.beta * s[:k] ** 2
        V = U[:, :k]
    else:
        if "G" not in f:
            f["G"] = scipy.linalg.solve_triangular(Lc, prob.Kc, lower=True, check_finite=False)
        G = f["G"]
        a, beta = prob.a, prob.beta

        def matvec(v):
            x = s_inv_sqrt(np.asarray(v).reshape(n, 1))
            out = a * (G @ (G.T @ x))
            if beta and Gp.shape[1]:
                out += beta * (Gp @ (Gp.T @ x))
            return s_inv_sqrt(out).ravel()

        op = LinearOperator((n, n), matvec=matvec, dtype=np.float64)
        w, V = leading_eigh(op, k, solver="arpack", random_state=random_state, owner="SCA")
    B = scipy.linalg.solve_triangular(Lc, s_inv_sqrt(V), lower=True, trans="T",
                                      check_finite=False)
    return w, B


def resolve_sca_solver(eigen_solver: str, n: int, n_components: int) -> str:
    """The solver :func:`sca_solve` uses: ``"auto"`` is ``"dense"`` when ``n <= 300`` or
    ``n_components > n / 5``; ``n - 1`` or more pairs always go dense (ARPACK's limit)."""
    if eigen_solver not in ("auto", "arpack", "dense"):
        raise ValueError(f"eigen_solver must be 'auto', 'arpack' or 'dense', got {eigen_solver!r}.")
    if eigen_solver == "auto":
        eigen_solver = "dense" if (n <= 300 or n_components > n / 5) else "arpack"
    return "dense" if n_components >= n - 1 else eigen_solver


#: Peak numpy memory of ``SCA.fit`` in n x n float64 matrices, per solver (tracemalloc at
#: n = 1,500: 4.52 with ARPACK (kernel, centred kernel, M0, its Cholesky factor, L^{-1} K~;
#: ``memory`` keeps four of them) and 6.04 dense); ``tests/adaptation/test_sca.py`` checks them.
FIT_MATRICES = {"arpack": 4.6, "dense": 6.1}


def _check_rayleigh(prob: SCAProblem, B: np.ndarray, KB: np.ndarray, w: np.ndarray,
                    eps: float, rtol: float = 1e-3) -> None:
    """Warn when a returned eigenpair is numerically wrong.

    With ``B^T M B = I`` each eigenvalue must equal its Rayleigh quotient ``b^T A b``
    (``a ||K~ b||^2 + beta ||Pf^T b||^2``, from the ``K~ B`` the fit computes anyway). A
    denominator that is singular to working precision (``eps`` far below the scale of a
    rank-deficient kernel, e.g. a linear kernel with fewer features than rows) yields spurious
    components with ``lambda > 0`` but a zero embedding; this catches them.
    """
    rq = prob.a * np.einsum("ij,ij->j", KB, KB)
    if prob.beta and prob.Pf.shape[1]:
        PB = prob.Pf.T @ B
        rq += prob.beta * np.einsum("ij,ij->j", PB, PB)
    bad = np.abs(rq - w) > rtol * max(float(np.max(np.abs(w))), 1e-300)
    if np.any(bad):
        warnings.warn(
            f"SCA: {int(bad.sum())} of {w.size} components are numerically unreliable (their "
            f"eigenvalue disagrees with b^T A b by more than {rtol:g} relative): the denominator "
            f"K~ + Q + eps I is singular to working precision. Increase eps (now {eps:g}), or "
            "ask for fewer components than the kernel's rank.", RuntimeWarning, stacklevel=4)


class SCA(BaseSubspaceTransformer):
    """Scatter Component Analysis for domain adaptation (DA) and generalization (DG).

    Finds ``k`` components that keep total and between-class scatter large and domain and
    within-class scatter small (see the module docstring for the eigenproblem and the
    decisions taken on the paper's ambiguities). **DA**: pass labeled source rows and unlabeled
    target rows (``y = -1``, negative ``sample_domain``); the targets enter the kernel and the
    domain scatter only. **DG**: pass labeled rows of several source domains (distinct positive
    ids) and transform unseen target data later. Special cases: KPCA (``beta = delta = 0``, no
    labels), kernel Fisher discriminant (``beta = 1, delta = 0``), unsupervised SCA
    (``beta = 0, supervised=False``, also :class:`uSCA`), uDICA (uSCA with ``delta = 1``).

    Parameters
    ----------
    n_components : int, default=10
        Number of components ``k``. At ``beta = 1`` at most ``n_classes - 1``.
    beta : float in [0, 1], default=0.5
        Between-class (``beta``) vs total (``1 - beta``) scatter. The paper: tuned in DA,
        ``1`` in DG.
    delta : float >= 0, default=1.0
        Weight of the domain scatter. The paper: ``1`` in DA, tuned in DG.
    kernel : {"rbf", "laplacian", "cauchy", "linear"} or callable, default="rbf"
        Kernel from :mod:`shiftlearn.kernels` (``kernel_matrix``).
    bandwidth : float or str (a rule of BANDWIDTH_RULES, "<f>*<rule>"), default="median"
        ``sigma`` of a shift-invariant kernel (``exp(-d^2/(2 sigma^2))`` for ``"rbf"``) or the
        rule applied to the pooled training rows (rules per kernel:
        :func:`shiftlearn.kernels.median_heuristic`).
    eps : float, default=1e-5
        Ridge on the denominator (footnote 1).
    whiten : bool, default=True
        Scale component ``j`` by ``lambda_j^{-1/2}`` (Algorithm 1, step 4).
    class_scatter_normalization : {"n_s", "none"}, default="n_s"
        Divide ``P_s``, ``Q_s`` by the number of labeled rows, or not.
    centering : {"first", "literal"}, default="first"
        Build ``P``, ``Q`` from the centred kernel (exact scatters) or from the uncentred one.
    supervised : bool, default=True
        Use labels (``P``, ``Q``); ``False`` gives unsupervised SCA / KPCA.
    setting : {"auto", "da", "dg"}, default="auto"
        ``"da"`` demands target rows (negative ids), ``"dg"`` forbids them; ``"auto"`` accepts
        either (DA when targets are present).
    eigen_solver : {"auto", "arpack", "dense"}, default="auto"
        ``"dense"``: ``scipy.linalg.eigh`` on the explicit pencil (``O(n^3)``, exact
        reference); ``"arpack"``: Cholesky of ``M`` + Lanczos; ``"auto"`` picks dense for
        ``n <= 300``.
    memory : FitMemory or None, default=None
        Where fits on the same rows share work (:class:`~shiftlearn.adaptation.FitMemory`):
        the bandwidth, the problem (centred kernel, scatters) and the Cholesky factor of its
        ``delta``-free denominator (across ``beta``, ``delta``, ``whiten`` and
        ``n_components``), and the eigen-solve of each ``(beta, delta)`` for the most
        components asked so far, of which a smaller ``n_components`` is a truncation. Same
        results (up to sign, to the solver's tolerance); ``None`` keeps nothing.

    Attributes
    ----------
    n_components_ : int
        Components used: ``n_components``, lowered with a
        :class:`~shiftlearn.adaptation._base.ComponentsClippedWarning` to ``n_train - 1`` (the
        rank of the centred kernel), or at ``beta = 1`` to ``n_classes - 1``, when the data
        allow fewer.
    eigenvalues_ : ndarray of shape ``(n_components_,)``
    dual_coef_ : ndarray of shape ``(n_train, n_components_)``
        ``B`` (unscaled; ``B^T M B = I``).
    sigma_ : float or None
    X_fit_ : ndarray of shape (n_train, n_features)
    classes_ : ndarray
        Classes of the labeled rows (empty without labels).
    setting_ : {"da", "dg"}

    Notes
    -----
    Cost: ``n`` training rows of ``d`` columns, ``C`` classes, ``k`` components: the kernel
    ``O(n^2 d)``; the class scatters ``O(n^2 C)``; a Cholesky factor of the denominator
    ``O(n^3)``; the leading eigenpairs ``O(n^2 k)`` per Lanczos iteration (ARPACK) or
    ``O(n^3)`` (dense); ``transform`` of ``m`` rows ``O(m n (d + k))``. For ``n`` in the tens of
    thousands use :class:`~shiftlearn.adaptation.RFSCA` (``O(n N d + n N^2 + N^3)``).

    Memory: the fit needs about ``4.6`` (ARPACK) or ``6.1`` (dense solver) float64
    ``n_train x n_train`` matrices (:data:`FIT_MATRICES`); a fit beyond the physical memory (or
    :data:`~shiftlearn._resources.MEMORY_BUDGET`) is refused up front with a
    ``ValueError`` that names the GiB and points to :class:`~shiftlearn.adaptation.RFSCA`.
    ``transform`` forms the out-of-sample kernel in row blocks of about 64 MB.

    Examples
    --------
    >>> from shiftlearn.datasets import make_sca_toy
    >>> from shiftlearn.adaptation import SCA
    >>> X, y, sd = make_sca_toy(n_per_cluster=30, random_state=0)
    >>> Z = SCA(n_components=2, beta=0.5).fit(X, y, sample_domain=sd).transform(X)
    >>> Z.shape
    (180, 2)
    """

    _component_columns = ("dual_coef_", "_proj")
    _array_api_support = True
    _parameter_constraints: dict = {
        "n_components": [Interval(Integral, 1, None, closed="left")],
        "beta": [Interval(Real, 0, 1, closed="both")],
        "delta": [Interval(Real, 0, None, closed="left")],
        "kernel": [StrOptions(set(KERNELS)), callable],
        "bandwidth": [BandwidthSpec(BANDWIDTH_RULES)],
        "eps": [Interval(Real, 0, None, closed="left")],
        "whiten": ["boolean"],
        "class_scatter_normalization": [StrOptions({"n_s", "none"})],
        "centering": [StrOptions({"first", "literal"})],
        "supervised": ["boolean"],
        "setting": [StrOptions({"auto", "da", "dg"})],
        "eigen_solver": [StrOptions({"auto", "arpack", "dense"})],
        "memory": [FitMemory, None],
    }

    def __init__(self, n_components=10, beta=0.5, delta=1.0, kernel="rbf", bandwidth="median",
                 eps=1e-5, whiten=True, class_scatter_normalization="n_s", centering="first",
                 supervised=True, setting="auto", eigen_solver="auto", memory=None):
        self.n_components = n_components
        self.beta = beta
        self.delta = delta
        self.kernel = kernel
        self.bandwidth = bandwidth
        self.eps = eps
        self.whiten = whiten
        self.class_scatter_normalization = class_scatter_normalization
        self.centering = centering
        self.supervised = supervised
        self.setting = setting
        self.eigen_solver = eigen_solver
        self.memory = memory

    def _fit(self, X, y, sample_domain):
        foreign = is_foreign_array(X)
        if not foreign:
            X = np.asarray(X, dtype=np.float64)
        n = X.shape[0]
        has_target = bool(np.any(sample_domain < 0))
        if self.setting == "da" and not has_target:
            raise ValueError("No target rows: SCA(setting='da') needs unlabeled target rows "
                             "(negative sample_domain) at fit time.")
        if self.setting == "dg" and has_target:
            raise ValueError("SCA(setting='dg') must not see target rows (negative "
                             "sample_domain) at fit time; use setting='da' or 'auto'.")
        self.setting_ = "da" if has_target else "dg"
        beta = float(self.beta) if self.supervised else 0.0
        labeled = np.zeros(n, bool) if (y is None or not self.supervised) else ~unlabeled_mask(y)
        self.classes_ = np.unique(np.asarray(y)[labeled]) if labeled.any() else np.array([])
        if beta > 0 and self.classes_.shape[0] < 2:
            raise ValueError(
                f"SCA with beta={beta} needs labeled rows of at least 2 classes, got "
                f"{self.classes_.shape[0]} class(es); use supervised=False (uSCA) or beta=0.")
        name = type(self).__name__
        if beta == 1.0:
            k = clip_n_components(
                self.n_components, self.classes_.shape[0] - 1,
                f"at beta=1 the numerator is the between-class scatter, of rank <= n_classes - 1"
                f" = {self.classes_.shape[0] - 1}", name)
        else:
            k = clip_n_components(self.n_components, n - 1,
                                  f"the centred kernel of {n} training rows has rank <= {n - 1}",
                                  name)
        solver = resolve_sca_solver(self.eigen_solver, n, k)
        if foreign:
            return self._fit_array_api(X, y, sample_domain, k, beta)
        check_dense_memory(n, n, FIT_MATRICES[solver],
                           f"{name}.fit on {n} rows (eigen_solver={solver!r})",
                           "RFSCA (random-feature SCA, the same problem with random Fourier "
                           "features)")
        rows = self._rows_key(X)
        self.sigma_ = self._resolve_sigma(X, self.kernel, rows)
        mem, kkey = self.memory, self._kernel_key()
        pkey = skey = None
        if mem is not None and kkey is not None:
            # the problem depends on y only through the labels of supervised SCA
            data = mem.fingerprint(rows, y if self.supervised else None, sample_domain)
            pkey = ("sca-problem", data, *kkey, float(self.eps),
                    self.class_scatter_normalization, self.centering, bool(self.supervised))
            skey = ("sca-solve", *pkey[1:], beta, float(self.delta), self.eigen_solver)
        entry = None if pkey is None else mem.get(pkey)
        if entry is None:
            # the rows' kernel (shared with TCA's and with fits on other labels or domains,
            # such as circular validation's reverse fits); never modified here
            K = None if pkey is None else mem.get(("kernel", rows, *kkey))
            if K is None:
                K = self._kernel(X)
                if pkey is not None:
                    mem.put(("kernel", rows, *kkey), K)
            centering = kernel_centering_stats(K)
            prob = sca_problem(K, y, sample_domain, beta=beta, delta=float(self.delta),
                               eps=float(self.eps),
                               class_scatter_normalization=self.class_scatter_normalization,
                               centering=self.centering, supervised=self.supervised)
            del K
            # factors: the beta- and delta-free factorisation, filled by sca_solve
            entry = {"problem": prob, "factors": {}, "centering": centering}
            if pkey is not None:
                mem.put(pkey, entry)
        prob = replace(entry["problem"], a=(1.0 - beta) / n, beta=beta, delta=float(self.delta))
        self._col_mean, self._grand_mean = entry["centering"]
        if not np.any(prob.Kc):
            raise zero_kernel_error(name)

        def solve(k):
            return sca_solve(prob, k, eigen_solver=self.eigen_solver, factors=entry["factors"])

        limit = self.classes_.shape[0] - 1 if beta == 1.0 else n - 1
        w, B = solve(k) if mem is None else mem.nested_solve(skey, k, solve, family="SCA",
                                                             limit=limit)
        if pkey is not None:
            mem.recount(pkey, entry)        # the factors were filled
        self.eigenvalues_ = w
        self.dual_coef_ = B
        scale = whitening_scale(w) if self.whiten else np.ones_like(w)
        self._proj = B * scale[None, :]
        self.X_fit_ = X
        self.n_components_ = k
        KB = prob.Kc @ B
        _check_rayleigh(prob, B, KB, w, float(self.eps))
        return KB * scale[None, :]

    def _fit_array_api(self, X, y, sample_domain, k: int, beta: float):
        """The fit for arrays of another namespace: the kernel, the pencil (dense reduction,
        :func:`~shiftlearn.adaptation._sca_array_api.sca_fit_array_api`) and the fitted
        arrays on ``X``'s device, in its dtype (``memory`` is not used)."""
        name = type(self).__name__
        self.sigma_ = self._resolve_sigma(X, self.kernel)
        K = self._kernel(X)
        check_kernel_varies(K, name)
        w, B, Kc, Pf, a, col_mean, grand = sca_fit_array_api(
            K, y, sample_domain, k, beta=beta, delta=float(self.delta), eps=float(self.eps),
            class_scatter_normalization=self.class_scatter_normalization,
            centering=self.centering, supervised=self.supervised)
        del K
        self._col_mean, self._grand_mean = col_mean, grand
        wn = to_numpy(w).astype(np.float64)
        scale = from_numpy(whitening_scale(wn) if self.whiten else np.ones_like(wn), X)
        self.eigenvalues_ = w
        self.dual_coef_ = B
        self._proj = B * scale[None, :]
        self.X_fit_ = X
        self.n_components_ = k
        KB = Kc @ B
        n = X.shape[0]
        Pf_host = np.zeros((n, 0)) if Pf is None else to_numpy(Pf)
        _check_rayleigh(SimpleNamespace(a=a, beta=beta, Pf=Pf_host), to_numpy(B),
                        to_numpy(KB), wn, float(self.eps))
        return KB * scale[None, :]

    def _transform(self, X):
        X = self._like_fitted(X, self.X_fit_)
        return self._embed_blocks(
            X, lambda Kt: center_test_kernel(Kt, self._col_mean, self._grand_mean) @ self._proj,
            self._proj.shape[1], n_temporaries=3)


class uSCA(SCA):  # noqa: N801 - the paper's name
    """Unsupervised SCA: :class:`SCA` with ``beta = 0`` and labels ignored (``P = Q = 0``).

    Numerator ``K~K~/n``, denominator ``delta K~LK~ + K~ + eps I``; with ``delta = 1`` it is
    uDICA (eigenvalues scaled by ``1/n``). Parameters as :class:`SCA`.

    Examples
    --------
    >>> from shiftlearn.datasets import make_sca_toy
    >>> X, y, sd = make_sca_toy(n_per_cluster=20, random_state=0)
    >>> uSCA(n_components=2).fit_transform(X, y, sd).shape
    (120, 2)
    """

    # fixed by definition (class attributes, so clone/get_params only see the real ones)
    beta = 0.0
    supervised = False
    class_scatter_normalization = "n_s"

    def __init__(self, n_components=10, delta=1.0, kernel="rbf", bandwidth="median", eps=1e-5,
                 whiten=True, centering="first", setting="auto", eigen_solver="auto",
                 memory=None):
        self.n_components = n_components
        self.delta = delta
        self.kernel = kernel
        self.bandwidth = bandwidth
        self.eps = eps
        self.whiten = whiten
        self.centering = centering
        self.setting = setting
        self.eigen_solver = eigen_solver
        self.memory = memory
