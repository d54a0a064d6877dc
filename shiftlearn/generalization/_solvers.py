"""No-intercept kernel SVM / SVR with per-example costs: dual coordinate descent.

The marginal-transfer objective (Blanchard et al., §7.1) is a cost-sensitive SVM *without
offset*: ``min_f sum_a c_a loss(f(x_a), y_a) + 1/2 ||f||^2``. Without a bias the dual has box
constraints only (no ``sum alpha y = 0``), so exact coordinate descent applies (Hsieh et al.
2008, in kernel form): each step solves one coordinate in closed form and updates the cached
``f = K beta`` with one row of ``K``. The squared hinge shares the hinge loop: its dual drops
the upper bound and adds ``1/(2 c_a)`` to the diagonal. Stopping rule: the largest
projected-gradient violation (classification) or coordinate step times ``K_aa`` (regression)
over an epoch is below ``tol``. Shrinking: after an epoch only the coordinates that moved are
visited until they converge; then a full pass confirms (or restarts) convergence.

For explicit (random) features the squared hinge is also solved in the primal by a finite
Newton method (:func:`linear_squared_hinge_newton`), cheap when rows >> features.
"""

from __future__ import annotations

import warnings

import numpy as np
from scipy.linalg import LinAlgError, solve
from sklearn.exceptions import ConvergenceWarning

__all__ = ["kernel_svm_dual", "kernel_svr_dual", "linear_squared_hinge_newton"]


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


def linear_squared_hinge_newton(Z: np.ndarray, y: np.ndarray, c: np.ndarray, *,
                                tol: float = 1e-4, max_iter: int = 50,
                                return_n_iter: bool = False):
    """Primal squared-hinge linear SVM without intercept, by finite Newton (Keerthi & DeCoste
    2005); returns ``w``.

    Minimises ``1/2 ||w||^2 + sum_a c_a max(0, 1 - y_a z_a^T w)^2``. Each step solves
    ``(I + 2 Z_I^T diag(c_I) Z_I) d = -g`` (``I``: the rows with margin < 1) by Cholesky and
    takes the exact step length along ``d`` (1-D Newton on the piecewise-linear derivative).
    The matrix products run in ``Z``'s dtype (float32 features halve the cost); the gradient
    and margins are accumulated in float64. Fast when rows >> features: one step costs
    ``O(|I| D^2 + D^3)``. Stops when ``||g|| <= tol ||g(0)||``.

    Examples
    --------
    >>> import numpy as np
    >>> Z = np.array([[1.0, 0.0], [0.0, 1.0]]); y = np.array([1.0, -1.0])
    >>> linear_squared_hinge_newton(Z, y, np.array([0.5, 0.5]))
    array([ 0.5, -0.5])
    """
    c = np.asarray(c, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    D = Z.shape[1]
    # the Hessian's entries are up to 2 max(c) max ||z||^2: they must be finite in float64
    # (C = 1e300 hung); products run in float64 where sqrt(2 c) |z| leaves float32's range
    scale = 2.0 * float(c.max(initial=0.0)) * float(np.max(np.einsum("ij,ij->i", Z, Z),
                                                            initial=0.0))
    if not np.isfinite(scale) or scale > 1e200:
        raise ValueError(f"The squared-hinge costs are too large (2 max(c) max||z||^2 = "
                         f"{scale:.3g} overflows the Newton system): lower C (or rescale the "
                         "features).")
    if Z.dtype == np.float32 and scale > 1e30:
        Z = Z.astype(np.float64)
    w = np.zeros(D)
    margin = np.zeros(Z.shape[0])  # y * (Z w)
    g0 = None
    n_iter = 0
    for _ in range(max_iter):
        act = np.flatnonzero(margin < 1.0)
        Za = Z[act]
        r = c[act] * y[act] * (1.0 - margin[act])
        g = w - 2.0 * (Za.T @ r.astype(Z.dtype)).astype(np.float64)
        gnorm = float(np.linalg.norm(g))
        if g0 is None:
            g0 = gnorm
        if gnorm <= tol * g0:
            break
        n_iter += 1
        Zs = Za * np.sqrt(2.0 * c[act]).astype(Z.dtype)[:, None]
        H = (Zs.T @ Zs).astype(np.float64)  # A^T A: numpy calls BLAS syrk (half the flops)
        H[np.diag_indices(D)] += 1.0
        try:
            d = solve(H, -g, assume_a="pos", overwrite_a=True, check_finite=False)  # Cholesky
        except LinAlgError:
            if Z.dtype == np.float64:
                raise ValueError("The squared-hinge Newton system is numerically singular "
                                 f"(costs up to {float(c.max()):.3g}): lower C.") from None
            # large costs: float32 rounding of Z^T Z made H indefinite; redo in float64
            Z = Z.astype(np.float64)
            Zs = Z[act] * np.sqrt(2.0 * c[act])[:, None]
            H = Zs.T @ Zs
            H[np.diag_indices(D)] += 1.0
            try:
                d = solve(H, -g, assume_a="pos", overwrite_a=True, check_finite=False)
            except LinAlgError:
                raise ValueError("The squared-hinge Newton system is numerically singular "
                                 f"(costs up to {float(c.max()):.3g}): lower C.") from None
        delta = y * (Z @ d.astype(Z.dtype)).astype(np.float64)
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
