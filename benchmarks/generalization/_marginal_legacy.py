"""The two earlier exact solvers of marginal transfer, so that ``marginal_solvers.py`` measures
the library's exact solver against both in the same run. Not used by the library.

* ``kernel_svm_dual`` / ``kernel_svr_dual``: our pure-Python dual coordinate descent for the
  no-intercept kernel SVM / SVR, kept verbatim from ``shiftlearn/generalization/_solvers.py``
  at commit d23ad06^ (the last one before the factor solver): the solver when issue #19 was
  filed.
* ``kernel_svm_factor`` / ``kernel_svr_factor``: the pivoted-Cholesky factor of ``K`` fed to
  liblinear (``LinearSVC`` / ``LinearSVR``, no intercept), the exact solver from d23ad06 to
  the commit that replaced it by dual coordinate descent on ``K`` (``_dual_cd.py``); verbatim
  but for the names.
"""

from __future__ import annotations

import warnings

import numpy as np
from sklearn.exceptions import ConvergenceWarning
from sklearn.svm import LinearSVC, LinearSVR

from shiftlearn.generalization._solvers import expansion_coef, landmark_factor

__all__ = ["kernel_svm_dual", "kernel_svm_factor", "kernel_svr_dual", "kernel_svr_factor"]


def kernel_svm_dual(K: np.ndarray, y: np.ndarray, c: np.ndarray, *, loss: str = "hinge",
                    tol: float = 1e-3, max_iter: int = 200, random_state=None,
                    return_n_iter: bool = False):
    """Kernel SVM without intercept (hinge or squared hinge); returns ``beta = alpha * y``.

    ``loss="hinge"`` solves ``max_alpha sum alpha - 1/2 sum_ab alpha_a alpha_b y_a y_b K_ab``
    with ``0 <= alpha_a <= c_a`` (primal ``sum_a c_a max(0, 1 - y_a f_a) + 1/2 ||f||^2``).
    ``loss="squared_hinge"`` (primal ``sum_a c_a max(0, 1 - y_a f_a)^2 + 1/2 ||f||^2``, liblinear
    ``-s 1``) has ``alpha_a >= 0`` without upper bound and ``K_aa + 1/(2 c_a)`` on the diagonal
    of the dual Hessian (Hsieh et al. 2008). The decision function is
    ``f(x) = sum_a beta_a k(x_a, x)``.

    Parameters
    ----------
    K : ndarray (M, M), symmetric PSD
    y : ndarray (M,) in {-1, +1}
    c : ndarray (M,) of positive per-example costs
    loss : {"hinge", "squared_hinge"}, default="hinge"
    tol : float
        Stop when the largest projected-gradient violation in an epoch is below ``tol``.
    max_iter : int
        Maximum number of epochs (a :class:`ConvergenceWarning` is raised when reached).
    return_n_iter : bool
        Also return the number of epochs run.

    Examples
    --------
    >>> import numpy as np
    >>> K = np.array([[1.0, 0.0], [0.0, 1.0]]); y = np.array([1.0, -1.0])
    >>> kernel_svm_dual(K, y, np.array([10.0, 10.0]), random_state=0)
    array([ 1., -1.])
    >>> kernel_svm_dual(K, y, np.array([0.5, 0.5]), loss="squared_hinge", random_state=0)
    array([ 0.5, -0.5])
    """
    c = np.asarray(c, dtype=np.float64)
    if loss == "hinge":
        upper, ridge = c, None
    elif loss == "squared_hinge":
        upper, ridge = np.full(c.shape, np.inf), 0.5 / c
    else:
        raise ValueError(f"loss must be 'hinge' or 'squared_hinge', got {loss!r}.")
    M = y.shape[0]
    rng = np.random.default_rng(random_state)
    alpha = np.zeros(M)
    f = np.zeros(M)  # K @ (alpha * y)
    diag = np.maximum(np.diag(K).copy(), 1e-12)
    if ridge is not None:
        diag += ridge  # Hessian diagonal of the squared-hinge dual
    active = np.arange(M)
    full = True
    n_iter = 0
    for _ in range(max_iter):
        n_iter += 1
        viol = 0.0
        moved = []
        for a in rng.permutation(active):
            al = alpha[a]
            g = y[a] * f[a] - 1.0
            if ridge is not None:
                g += ridge[a] * al
            if al <= 0.0:
                pg = min(g, 0.0)
            elif al >= upper[a]:
                pg = max(g, 0.0)
            else:
                pg = g
            if pg == 0.0:
                continue
            viol = max(viol, abs(pg))
            new = min(max(al - g / diag[a], 0.0), upper[a])
            d = new - al
            if d != 0.0:
                alpha[a] = new
                f += (d * y[a]) * K[a]
                moved.append(a)
        if viol < tol:
            if full:
                break
            active, full = np.arange(M), True  # confirm on a full pass
        else:
            active, full = np.asarray(moved, dtype=np.int64), False  # shrink to movers
    else:
        warnings.warn(f"kernel_svm_dual did not converge in {max_iter} epochs (violation "
                      f"{viol:.2g} > tol {tol:g}); increase max_iter.", ConvergenceWarning,
                      stacklevel=2)
    return (alpha * y, n_iter) if return_n_iter else alpha * y


def kernel_svr_dual(K: np.ndarray, y: np.ndarray, c: np.ndarray, *, epsilon: float = 0.1,
                    tol: float = 1e-3, max_iter: int = 200, random_state=None,
                    return_n_iter: bool = False):
    """epsilon-insensitive kernel SVR without intercept; returns the dual coefficients ``beta``.

    Solves ``min_beta 1/2 beta^T K beta - y^T beta + epsilon ||beta||_1`` with
    ``-c_a <= beta_a <= c_a``; ``f(x) = sum_a beta_a k(x_a, x)``.

    Examples
    --------
    >>> import numpy as np
    >>> K = np.eye(2); y = np.array([1.0, -2.0])
    >>> kernel_svr_dual(K, y, np.array([10.0, 10.0]), epsilon=0.5, random_state=0)
    array([ 0.5, -1.5])
    """
    M = y.shape[0]
    rng = np.random.default_rng(random_state)
    beta = np.zeros(M)
    f = np.zeros(M)  # K @ beta
    diag = np.maximum(np.diag(K).copy(), 1e-12)
    active = np.arange(M)
    full = True
    n_iter = 0
    for _ in range(max_iter):
        n_iter += 1
        viol = 0.0
        moved = []
        for a in rng.permutation(active):
            kaa = diag[a]
            b = beta[a]
            z = b - (f[a] - y[a]) / kaa
            thr = epsilon / kaa
            new = (z - thr) if z > thr else ((z + thr) if z < -thr else 0.0)
            new = min(max(new, -c[a]), c[a])
            d = new - b
            if d != 0.0:
                viol = max(viol, abs(d) * kaa)
                beta[a] = new
                f += d * K[a]
                moved.append(a)
        if viol < tol:
            if full:
                break
            active, full = np.arange(M), True  # confirm on a full pass
        else:
            active, full = np.asarray(moved, dtype=np.int64), False  # shrink to movers
    else:
        warnings.warn(f"kernel_svr_dual did not converge in {max_iter} epochs (step "
                      f"{viol:.2g} > tol {tol:g}); increase max_iter.", ConvergenceWarning,
                      stacklevel=2)
    return (beta, n_iter) if return_n_iter else beta


def _liblinear_kernel_machine(K, y, c, model, overwrite):
    """Shared body of :func:`kernel_svm_factor` / :func:`kernel_svr_factor`: exact factor,
    liblinear fit with per-row costs ``c`` (``C = 1``, ``sample_weight = c``), coefficients on
    the rows."""
    fac = landmark_factor(K, overwrite=overwrite)
    beta = np.zeros(K.shape[0])
    if fac.features.shape[1] == 0:
        return beta, 0
    model.fit(fac.features, y, sample_weight=np.asarray(c, dtype=np.float64))
    beta[fac.pivots] = expansion_coef(fac, model.coef_.reshape(1, -1))[:, 0]
    return beta, int(np.max(model.n_iter_))


def kernel_svm_factor(K: np.ndarray, y: np.ndarray, c: np.ndarray, *, loss: str = "hinge",
                      tol: float = 1e-2, max_iter: int = 1000, random_state=None,
               return_n_iter: bool = False, overwrite: bool = False):
    """Kernel SVM without intercept, per-row costs ``c``: exact factor + liblinear.

    Minimises ``sum_a c_a max(0, 1 - y_a f_a) + 1/2 ||f||^2`` (``loss="hinge"``) or
    ``sum_a c_a max(0, 1 - y_a f_a)^2 + 1/2 ||f||^2`` (``"squared_hinge"``, liblinear ``-s 1``)
    over ``f = K beta``; returns ``beta`` (``f(x) = sum_a beta_a k(x_a, x)``; nonzero on the
    pivot rows of the factor only). ``tol`` and ``max_iter`` are liblinear's (dual coordinate
    descent: projected-gradient spread, epochs).

    Parameters
    ----------
    K : ndarray (M, M), symmetric PSD
    y : ndarray (M,) in {-1, +1}
    c : ndarray (M,) of positive per-row costs
    """
    if loss not in ("hinge", "squared_hinge"):
        raise ValueError(f"loss must be 'hinge' or 'squared_hinge', got {loss!r}.")
    model = LinearSVC(C=1.0, loss=loss, fit_intercept=False, dual=True, tol=tol,
                      max_iter=max_iter, random_state=random_state)
    beta, n_iter = _liblinear_kernel_machine(K, np.where(np.asarray(y) > 0, 1, -1), c, model,
                                             overwrite)
    return (beta, n_iter) if return_n_iter else beta


def kernel_svr_factor(K: np.ndarray, y: np.ndarray, c: np.ndarray, *,
                      epsilon: float = 0.1, tol: float = 1e-2, max_iter: int = 1000,
                      random_state=None, return_n_iter: bool = False,
                      overwrite: bool = False):
    """epsilon-insensitive kernel SVR without intercept, per-row costs ``c``: exact factor +
    liblinear (``LinearSVR(loss="epsilon_insensitive", dual=True)``).

    Minimises ``sum_a c_a max(0, |y_a - f_a| - epsilon) + 1/2 ||f||^2`` over ``f = K beta``;
    returns ``beta``.
    """
    model = LinearSVR(C=1.0, epsilon=epsilon, loss="epsilon_insensitive", fit_intercept=False,
                      dual=True, tol=tol, max_iter=max_iter, random_state=random_state)
    beta, n_iter = _liblinear_kernel_machine(K, np.asarray(y, dtype=np.float64), c, model,
                                             overwrite)
    return (beta, n_iter) if return_n_iter else beta
