"""Solvers of the no-intercept, cost-sensitive kernel machines of marginal transfer learning.

The marginal-transfer objective (Blanchard et al., §7.1) is a kernel SVM / SVR *without
offset*: ``min_f sum_a c_a loss(f(x_a), y_a) + 1/2 ||f||^2``. The Nyström and random-feature
solvers reduce it to a *linear* machine on explicit features and hand that to a maintained library
(liblinear through scikit-learn's ``LinearSVC`` / ``LinearSVR`` with ``fit_intercept=False`` and
per-row costs as ``sample_weight``), or, for the squared hinge on many rows and few features,
to our primal Newton method (:func:`linear_squared_hinge_newton`). The exact solver works on
the kernel matrix itself (:mod:`._dual_cd`).

Kernel factor (Nyström solver)
------------------------------
A factor ``F`` with ``F F^T = K`` turns the kernel machine into a linear one with the same
objective: ``f = F w`` on the training rows, ``||f||_H = ||w||`` (Nyström, paper App. A.6.2,
eq. 42). :func:`landmark_factor` builds it from the kernel between all rows and a set of
*landmark* rows: a **pivoted Cholesky** factorisation of the landmarks' kernel
``K_SS[p, p] = R R^T`` (LAPACK ``dpstrf``), stopped when the largest remaining pivot is below
``FACTOR_RTOL`` times the largest diagonal entry, gives ``F = K_{.,S_p} R^{-T}`` (``r <= m``
columns) and the map back to the kernel expansion ``f(x) = sum_p beta_p k(x_p, x)`` with
``beta = R^{-T} w``. With every row a landmark this is the exact kernel machine (``F`` is the
Cholesky factor itself: no triangular solve; ``K - F F^T`` has entries below ``FACTOR_RTOL``
times ``max K_aa``); with ``m`` random landmarks it is the Nyström approximation.

The exact solver does not use the factor (it runs on ``K`` itself, :mod:`._dual_cd`); the
factor serves the Nyström solver (``m << M`` landmarks). ``FACTOR_RTOL = 1e-10`` keeps ``R``'s
condition number near ``1e5``. Design notes: ``docs/dev/generalization.md``.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np
from scipy.linalg import LinAlgError, lapack, solve, solve_triangular
from sklearn.exceptions import ConvergenceWarning

__all__ = [
    "FACTOR_RTOL",
    "DenseDesign",
    "LandmarkFactor",
    "expansion_coef",
    "landmark_factor",
    "linear_squared_hinge_newton",
]

#: pivots below this fraction of the largest diagonal entry end the pivoted Cholesky factor
FACTOR_RTOL = 1e-10


@dataclass(frozen=True)
class LandmarkFactor:
    """A factor ``F F^T ≈ K`` of a kernel matrix through landmark rows.

    Attributes
    ----------
    features : ndarray (n_rows, r)
        ``F``, the features of every row (``r`` = numerical rank of the landmarks' kernel).
    pivots : ndarray (r,) of int
        Indices (into the landmark list) of the landmarks that carry the factor, in pivot order.
    chol : ndarray (r, r), lower triangular
        ``R`` with ``K[pivots][:, pivots] = R R^T``; any point's features are
        ``R^{-1} k(pivots, x)``.
    """

    features: np.ndarray
    pivots: np.ndarray
    chol: np.ndarray


def _pivoted_cholesky(C: np.ndarray, rtol: float, overwrite: bool):
    """``(L, perm, r)``: LAPACK ``dpstrf`` of the symmetric PSD ``C`` (``n x n``), stopped at
    pivots below ``rtol * max(diag C)``. ``perm`` is the full pivot permutation (length ``n``),
    ``L`` (``n x r``) satisfies ``C[perm][:, perm] ≈ L L^T``; its first ``r`` rows are the
    triangular factor of the pivots ``perm[:r]``."""
    n = C.shape[0]
    diag = np.diag(C)
    if not np.all(np.isfinite(diag)):
        raise ValueError("The kernel matrix has non-finite entries (the kernel overflows "
                         "float64): rescale X (e.g. StandardScaler).")
    top = float(np.max(diag, initial=0.0))
    if top <= 0.0:
        return np.zeros((n, 0)), np.arange(n, dtype=np.int64), 0
    # C is symmetric: its transpose is the Fortran-ordered array LAPACK factors in place
    # (a C-ordered array would be copied by f2py whatever overwrite_a says)
    L, piv, r, info = lapack.dpstrf(C.T, lower=1, tol=rtol * top, overwrite_a=overwrite)
    if info < 0:  # pragma: no cover - an argument error of ours
        raise RuntimeError(f"LAPACK dpstrf failed with info={info}.")
    L = L[:, :r]
    L[np.triu_indices(r, k=1)] = 0.0        # the upper triangle still holds C's entries
    return L, piv.astype(np.int64) - 1, int(r)


def landmark_factor(K_nm: np.ndarray, landmarks: np.ndarray | None = None, *,
                    rtol: float = FACTOR_RTOL, overwrite: bool = False) -> LandmarkFactor:
    """Factor ``F`` of the kernel of ``n`` rows through ``m`` landmark rows (Nyström, eq. 42).

    Parameters
    ----------
    K_nm : ndarray (n, m)
        Kernel between every row and the landmarks.
    landmarks : ndarray (m,) of int or None
        Row index of each landmark (``K_nm[landmarks]`` is the landmarks' own kernel).
        ``None``: every row is a landmark (``K_nm`` is the square ``K``): the exact factor,
        ``F F^T = K`` up to pivots below ``rtol * max K_aa``, without a triangular solve.
    rtol : float
        Relative pivot tolerance of the pivoted Cholesky factorisation.
    overwrite : bool
        With ``landmarks=None``, factor ``K_nm`` in place (saves one ``n x n`` copy; ``K_nm``
        is destroyed).

    Examples
    --------
    >>> import numpy as np
    >>> from shiftlearn.kernels import rbf_kernel
    >>> X = np.random.default_rng(0).normal(size=(30, 2))
    >>> K = rbf_kernel(X, sigma=1.0)
    >>> fac = landmark_factor(K)                       # every row a landmark: exact
    >>> bool(np.allclose(fac.features @ fac.features.T, K, atol=1e-9))
    True
    >>> S = np.arange(0, 30, 3)                        # 10 landmarks: Nystrom
    >>> fac = landmark_factor(K[:, S], S)
    >>> F = fac.features
    >>> F.shape[1] <= 10, bool(np.allclose(F[S] @ F[S].T, K[np.ix_(S, S)], atol=1e-9))
    (True, True)
    """
    K_nm = np.asarray(K_nm, dtype=np.float64)
    n = K_nm.shape[0]
    if landmarks is None:
        if K_nm.ndim != 2 or K_nm.shape[1] != n:
            raise ValueError(f"landmarks=None needs the square kernel, got shape {K_nm.shape}.")
        L, perm, r = _pivoted_cholesky(K_nm, rtol, overwrite)
        F = np.empty((n, r))
        F[perm] = L                                        # back to the original row order
        return LandmarkFactor(F, perm[:r], np.array(L[:r], order="C"))
    landmarks = np.asarray(landmarks, dtype=np.int64)
    L, perm, r = _pivoted_cholesky(K_nm[landmarks], rtol, True)   # the (m, m) copy is ours
    piv = perm[:r]
    if r == 0:
        return LandmarkFactor(np.zeros((n, 0)), piv, np.zeros((0, 0)))
    R = np.array(L[:r], order="C")
    # K_nm[:, piv] is a fresh (n, r) C-ordered copy: its transpose is solved in place and
    # transposed back, so F is C-ordered without a further copy
    F = solve_triangular(R, K_nm[:, piv].T, lower=True, overwrite_b=True,
                         check_finite=False).T
    return LandmarkFactor(F, piv, R)


def expansion_coef(factor: LandmarkFactor, coef: np.ndarray) -> np.ndarray:
    """``beta = R^{-T} w`` for each row ``w`` of ``coef`` (``(n_out, r)``): the coefficients of
    ``f(x) = sum_p beta_p k(x_p, x)`` over the pivot landmarks, shape ``(r, n_out)``."""
    coef = np.atleast_2d(np.asarray(coef, dtype=np.float64))
    if factor.chol.shape[0] == 0:
        return np.zeros((0, coef.shape[0]))
    return solve_triangular(factor.chol, coef.T, lower=True, trans="T", check_finite=False)


class DenseDesign:
    """The rows ``Z`` of :func:`linear_squared_hinge_newton`, in memory. The solver reaches its
    rows only through these methods, so the same Newton loop runs on rows held in blocks
    elsewhere (``generalization/_dask.py``: one pass over the blocks per call)."""

    def __init__(self, Z: np.ndarray):
        self.Z = Z
        self._Za = None

    @property
    def dtype(self):
        return self.Z.dtype

    @property
    def n_rows(self) -> int:
        return self.Z.shape[0]

    @property
    def n_columns(self) -> int:
        return self.Z.shape[1]

    def max_sq_norm(self) -> float:
        """``max_a ||z_a||^2`` (float)."""
        return float(np.max(np.einsum("ij,ij->i", self.Z, self.Z), initial=0.0))

    def as_float64(self) -> DenseDesign:
        return DenseDesign(self.Z.astype(np.float64))

    def gradient_part(self, act: np.ndarray, r: np.ndarray, s: np.ndarray | None = None
                      ) -> np.ndarray:
        """``Z_I^T r`` (float64) over the active rows ``act`` (``r``: one value per active
        row); keeps ``Z_I`` for the :meth:`hessian` of the same step (whose ``s`` a design of
        rows held elsewhere uses to build it in the same pass)."""
        self._Za = self.Z[act]
        return (self._Za.T @ r.astype(self.Z.dtype)).astype(np.float64)

    def hessian(self, act: np.ndarray, s: np.ndarray) -> np.ndarray:
        """``Z_I^T diag(s^2) Z_I`` (float64; ``s = sqrt(2 c_I)``), in ``Z``'s precision."""
        Za = self._Za if self._Za is not None else self.Z[act]
        self._Za = None
        Zs = Za * s.astype(self.Z.dtype)[:, None]
        return (Zs.T @ Zs).astype(np.float64)  # A^T A: numpy calls BLAS syrk (half the flops)

    def matvec(self, d: np.ndarray) -> np.ndarray:
        """``Z d`` (float64), one value per row."""
        return (self.Z @ d.astype(self.Z.dtype)).astype(np.float64)


def linear_squared_hinge_newton(Z, y: np.ndarray, c: np.ndarray, *,
                                tol: float = 1e-4, max_iter: int = 50,
                                return_n_iter: bool = False):
    """Primal squared-hinge linear SVM without intercept, by finite Newton (Keerthi & DeCoste
    2005); returns ``w``.

    Minimises ``1/2 ||w||^2 + sum_a c_a max(0, 1 - y_a z_a^T w)^2``. Each step solves
    ``(I + 2 Z_I^T diag(c_I) Z_I) d = -g`` (``I``: the rows with margin < 1) by Cholesky and
    takes the exact step length along ``d`` (1-D Newton on the piecewise-linear derivative).
    The matrix products run in ``Z``'s dtype (float32 features halve the cost); the gradient
    and margins are accumulated in float64. Fast when rows >> features: one step costs
    ``O(|I| D^2 + D^3)``. Stops when ``||g|| <= tol ||g(0)||``. ``Z`` is an array or a design
    object with :class:`DenseDesign`'s methods (rows held in blocks elsewhere: the margins,
    ``y`` and ``c``, one number per row, stay here).

    Examples
    --------
    >>> import numpy as np
    >>> Z = np.array([[1.0, 0.0], [0.0, 1.0]]); y = np.array([1.0, -1.0])
    >>> linear_squared_hinge_newton(Z, y, np.array([0.5, 0.5]))
    array([ 0.5, -0.5])
    """
    c = np.asarray(c, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    Z = Z if hasattr(Z, "gradient_part") else DenseDesign(Z)
    D = Z.n_columns
    # the Hessian's entries are up to 2 max(c) max ||z||^2: they must be finite in float64
    # (C = 1e300 hung); products run in float64 where sqrt(2 c) |z| leaves float32's range
    scale = 2.0 * float(c.max(initial=0.0)) * Z.max_sq_norm()
    if not np.isfinite(scale) or scale > 1e200:
        raise ValueError(f"The squared-hinge costs are too large (2 max(c) max||z||^2 = "
                         f"{scale:.3g} overflows the Newton system): lower C (or rescale the "
                         "features).")
    if Z.dtype == np.float32 and scale > 1e30:
        Z = Z.as_float64()
    w = np.zeros(D)
    margin = np.zeros(Z.n_rows)  # y * (Z w)
    g0 = None
    n_iter = 0
    for _ in range(max_iter):
        act = np.flatnonzero(margin < 1.0)
        r = c[act] * y[act] * (1.0 - margin[act])
        s = np.sqrt(2.0 * c[act])
        g = w - 2.0 * Z.gradient_part(act, r, s)
        gnorm = float(np.linalg.norm(g))
        if g0 is None:
            g0 = gnorm
        if gnorm <= tol * g0:
            break
        n_iter += 1
        H = Z.hessian(act, s)
        H[np.diag_indices(D)] += 1.0
        try:
            d = solve(H, -g, assume_a="pos", overwrite_a=True, check_finite=False)  # Cholesky
        except LinAlgError:
            if Z.dtype == np.float64:
                raise ValueError("The squared-hinge Newton system is numerically singular "
                                 f"(costs up to {float(c.max()):.3g}): lower C.") from None
            # large costs: float32 rounding of Z^T Z made H indefinite; redo in float64
            Z = Z.as_float64()
            H = Z.hessian(act, s)
            H[np.diag_indices(D)] += 1.0
            try:
                d = solve(H, -g, assume_a="pos", overwrite_a=True, check_finite=False)
            except LinAlgError:
                raise ValueError("The squared-hinge Newton system is numerically singular "
                                 f"(costs up to {float(c.max()):.3g}): lower C.") from None
        delta = y * Z.matvec(d)
        # exact line search, 1-D Newton on the piecewise-linear derivative
        # phi'(t) = w.d + t d.d - 2 sum_{m + t delta < 1} c delta (1 - m - t delta)
        wd, dd, t = float(w @ d), float(d @ d), 1.0
        for _ in range(30):
            m_t = margin + t * delta
            on = m_t < 1.0
            cd = c[on] * delta[on]
            der = wd + t * dd - 2.0 * float(cd @ (1.0 - m_t[on]))
            sec = dd + 2.0 * float(cd @ delta[on])
            step = der / sec
            t -= step
            if abs(step) <= 1e-10 * max(1.0, abs(t)):
                break
        w += t * d
        margin += t * delta
    else:
        warnings.warn(f"linear_squared_hinge_newton did not converge in {max_iter} Newton "
                      f"steps (gradient {gnorm:.2g} > tol {tol:g} x {g0:.2g}); increase "
                      "max_iter.", ConvergenceWarning, stacklevel=2)
    return (w, n_iter) if return_n_iter else w
