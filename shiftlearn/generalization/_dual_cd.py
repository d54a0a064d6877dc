"""Dual coordinate descent on a precomputed kernel: the exact solver of marginal transfer.

The exact marginal-transfer machines (no offset, per-row costs ``c_a``) are solved in the dual
on the ``M x M`` product kernel ``K`` itself, by liblinear's dual coordinate descent (Hsieh et
al. 2008, ``solve_l2r_l1l2_svc``; Ho & Lin 2012, ``solve_l2r_l1l2_svr``) with one change: the
dual gradient ``G`` is *kept* for every row and updated by one column of ``K`` when a
coordinate moves, instead of being recomputed from the primal weights for every visited
coordinate. Visiting a coordinate is then O(1) and moving it O(M); most visits do not move a
coordinate (rows at a bound), which is where liblinear on a factor ``F F^T = K`` spends
O(rank) each. Everything else is liblinear's: the random order of each epoch, the shrinking
of rows at a bound, the stopping rules (projected-gradient spread ``<= tol`` for the
classifier, violation sum ``<= tol`` times the first epoch's for the regressor) and
``max_iter`` epochs, so ``tol`` keeps liblinear's meaning.

It needs no ``O(M^3)`` factorisation. Each epoch is one function: numba compiles it where it
is installed (``pip install shiftlearn[speed]``); without numba the same function runs in
Python with numpy updates, more slowly, and gives the same ``beta`` bit for bit (no fast-math;
the products are evaluated in the same order on both paths; the epoch order is drawn by numpy
in both). ``SHIFTLEARN_NUMBA=0`` switches numba off. Measurements:
``docs/dev/generalization.md``.

Rows whose kernel diagonal is zero (``k(x_a, x_a) = 0``, e.g. a zero row under a linear
``kernel_x``) are left out: their feature vector is zero, so no coefficient on them changes
``f`` anywhere; their ``beta`` is 0.
"""

from __future__ import annotations

import warnings

import numpy as np
from sklearn.exceptions import ConvergenceWarning

from .._numba import numba, use_numba

__all__ = ["kernel_svm", "kernel_svr"]

_INF = np.inf


def _add_scaled_column(G, d, w, Ki):
    """``G += (d * w) * Ki`` (numpy; compiled below as the same products in a loop)."""
    G += (d * w) * Ki


def _add_column(G, d, Ki):
    """``G += d * Ki`` (numpy; compiled below as a loop)."""
    G += d * Ki


if numba is not None:  # pragma: no branch - the loops numba compiles in place of the above
    @numba.extending.overload(_add_scaled_column)
    def _add_scaled_column_nb(G, d, w, Ki):
        def impl(G, d, w, Ki):
            for j in range(G.shape[0]):
                G[j] += d * w[j] * Ki[j]
        return impl

    @numba.extending.overload(_add_column)
    def _add_column_nb(G, d, Ki):
        def impl(G, d, Ki):
            for j in range(G.shape[0]):
                G[j] += d * Ki[j]
        return impl


def _svc_epoch(K, y, U, D, QD, G, alpha, index, active, pg_max_old, pg_min_old):
    """One epoch over ``index[:active]`` (liblinear ``solve_l2r_l1l2_svc``, gradient kept):
    ``(active, PGmax_new, PGmin_new)``; ``alpha``, ``G`` and ``index`` change in place."""
    pg_max_new = -_INF
    pg_min_new = _INF
    s = 0
    while s < active:
        i = index[s]
        g = G[i]
        pg = 0.0
        if alpha[i] == 0.0:
            if g > pg_max_old:
                active -= 1
                index[s], index[active] = index[active], index[s]
                continue
            elif g < 0.0:
                pg = g
        elif alpha[i] == U[i]:
            if g < pg_min_old:
                active -= 1
                index[s], index[active] = index[active], index[s]
                continue
            elif g > 0.0:
                pg = g
        else:
            pg = g
        if pg > pg_max_new:
            pg_max_new = pg
        if pg < pg_min_new:
            pg_min_new = pg
        if abs(pg) > 1e-12:
            a_old = alpha[i]
            a = min(max(a_old - g / QD[i], 0.0), U[i])
            alpha[i] = a
            d = (a - a_old) * y[i]
            if d != 0.0:
                _add_scaled_column(G, d, y, K[i])
                G[i] += (a - a_old) * D[i]
        s += 1
    return active, pg_max_new, pg_min_new


def _svr_epoch(K, y, U, eps, QD, G, beta, index, active, g_max_old):
    """One epoch of liblinear's ``solve_l2r_l1l2_svr`` (L1 loss, gradient ``G = K beta - y``
    kept): ``(active, Gmax_new, Gnorm1_new)``; ``beta``, ``G``, ``index`` change in place."""
    g_max_new = 0.0
    g_norm1_new = 0.0
    s = 0
    while s < active:
        i = index[s]
        g = G[i]
        h = QD[i]
        gp = g + eps
        gn = g - eps
        b = beta[i]
        viol = 0.0
        if b == 0.0:
            if gp < 0.0:
                viol = -gp
            elif gn > 0.0:
                viol = gn
            elif gp > g_max_old and gn < -g_max_old:
                active -= 1
                index[s], index[active] = index[active], index[s]
                continue
        elif b >= U[i]:
            if gp > 0.0:
                viol = gp
            elif gp < -g_max_old:
                active -= 1
                index[s], index[active] = index[active], index[s]
                continue
        elif b <= -U[i]:
            if gn < 0.0:
                viol = -gn
            elif gn > g_max_old:
                active -= 1
                index[s], index[active] = index[active], index[s]
                continue
        elif b > 0.0:
            viol = abs(gp)
        else:
            viol = abs(gn)
        if viol > g_max_new:
            g_max_new = viol
        g_norm1_new += viol
        if gp < h * b:
            d = -gp / h
        elif gn > h * b:
            d = -gn / h
        else:
            d = -b
        s += 1
        if abs(d) < 1e-12:
            continue
        nb = min(max(b + d, -U[i]), U[i])
        beta[i] = nb
        d = nb - b
        if d != 0.0:
            _add_column(G, d, K[i])
    return active, g_max_new, g_norm1_new


if numba is not None:  # pragma: no branch
    _svc_epoch_nb = numba.njit(cache=True, nogil=True)(_svc_epoch)
    _svr_epoch_nb = numba.njit(cache=True, nogil=True)(_svr_epoch)


#: rows per block of the finiteness check of ``K`` (an 8 MB boolean temporary at M = 8,192)
_CHECK_ROWS = 1024


def _setup(K, c):
    """``(K, c, index)``: C-ordered float64 ``K`` and ``c``, and the rows the solver visits.
    A non-finite entry is refused: with an infinite diagonal no coordinate would move and the
    solver would stop at ``beta = 0`` as if converged."""
    K = np.ascontiguousarray(K, dtype=np.float64)
    if K.ndim != 2 or K.shape[0] != K.shape[1]:
        raise ValueError(f"K must be a square kernel matrix, got shape {K.shape}.")
    for start in range(0, K.shape[0], _CHECK_ROWS):
        if not np.isfinite(K[start:start + _CHECK_ROWS]).all():
            raise ValueError("The kernel matrix has non-finite entries (the kernel overflows "
                             "float64): rescale X (e.g. StandardScaler).")
    # rows with k(x_a, x_a) = 0 have a zero feature vector: left out (beta_a = 0)
    index = np.flatnonzero(np.diag(K) > 0.0).astype(np.int64)
    return K, np.asarray(c, dtype=np.float64), index


def _warn_max_iter(name, max_iter, what):
    warnings.warn(f"{name} did not converge in {max_iter} epochs ({what}); increase max_iter "
                  "or loosen tol.", ConvergenceWarning, stacklevel=3)


def kernel_svm(K: np.ndarray, y: np.ndarray, c: np.ndarray, *, loss: str = "hinge",
               tol: float = 1e-2, max_iter: int = 1000, random_state=None,
               return_n_iter: bool = False):
    """``beta`` (and the number of epochs with ``return_n_iter``): the no-intercept kernel SVM
    with per-row costs ``c``, by dual coordinate descent on ``K`` (see the module docstring).

    Minimises ``sum_a c_a max(0, 1 - y_a f_a) + 1/2 ||f||^2`` (``"hinge"``) or
    ``sum_a c_a max(0, 1 - y_a f_a)^2 + 1/2 ||f||^2`` (``"squared_hinge"``) over
    ``f = K beta``, ``y`` in ``{-1, +1}``; ``beta = y * alpha`` (dual variables ``alpha``).

    Examples
    --------
    >>> import numpy as np
    >>> K = np.eye(2); y = np.array([1.0, -1.0])
    >>> kernel_svm(K, y, np.array([10.0, 10.0]), random_state=0)
    array([ 1., -1.])
    >>> kernel_svm(K, y, np.array([0.5, 0.5]), loss="squared_hinge", random_state=0)
    array([ 0.5, -0.5])
    """
    if loss not in ("hinge", "squared_hinge"):
        raise ValueError(f"loss must be 'hinge' or 'squared_hinge', got {loss!r}.")
    sq = loss == "squared_hinge"
    y = np.where(np.asarray(y) > 0, 1.0, -1.0)
    K, c, index = _setup(K, c)
    M = K.shape[0]
    D = 0.5 / c if sq else np.zeros(M)          # liblinear's L2-loss diagonal 1 / (2 C_a)
    U = np.full(M, _INF) if sq else c
    QD = np.diag(K) + D
    alpha = np.zeros(M)
    G = -np.ones(M)
    epoch = _svc_epoch_nb if use_numba() else _svc_epoch
    rng = np.random.default_rng(random_state)
    n_all = active = index.shape[0]
    pg_max_old, pg_min_old = _INF, -_INF
    pg_max_new, pg_min_new = _INF, -_INF          # reported if max_iter = 0
    it = 0
    while it < max_iter:
        rng.shuffle(index[:active])
        active, pg_max_new, pg_min_new = epoch(K, y, U, D, QD, G, alpha, index, active,
                                               pg_max_old, pg_min_old)
        it += 1
        if pg_max_new - pg_min_new <= tol:
            if active == n_all:
                break
            active, pg_max_old, pg_min_old = n_all, _INF, -_INF
            continue
        pg_max_old = pg_max_new if pg_max_new > 0 else _INF
        pg_min_old = pg_min_new if pg_min_new < 0 else -_INF
    else:
        if n_all:
            _warn_max_iter("kernel_svm", max_iter,
                           f"projected-gradient spread {pg_max_new - pg_min_new:.2g} > tol "
                           f"{tol:g}")
    return (y * alpha, it) if return_n_iter else y * alpha


def kernel_svr(K: np.ndarray, y: np.ndarray, c: np.ndarray, *, epsilon: float = 0.1,
               tol: float = 1e-3, max_iter: int = 1000, random_state=None,
               return_n_iter: bool = False):
    """``beta`` (and the number of epochs with ``return_n_iter``): the no-intercept
    epsilon-insensitive kernel SVR with per-row costs ``c``, by dual coordinate descent on
    ``K`` (see the module docstring).

    Minimises ``sum_a c_a max(0, |y_a - f_a| - epsilon) + 1/2 ||f||^2`` over ``f = K beta``;
    ``tol`` is relative: the epoch's summed violation against the first epoch's (liblinear).

    Examples
    --------
    >>> import numpy as np
    >>> K = np.eye(2); y = np.array([1.0, -2.0])
    >>> kernel_svr(K, y, np.array([10.0, 10.0]), epsilon=0.5, random_state=0)
    array([ 0.5, -1.5])
    """
    y = np.asarray(y, dtype=np.float64)
    K, c, index = _setup(K, c)
    QD = np.diag(K).copy()
    beta = np.zeros(K.shape[0])
    G = -y.copy()
    epoch = _svr_epoch_nb if use_numba() else _svr_epoch
    rng = np.random.default_rng(random_state)
    n_all = active = index.shape[0]
    g_max_old, g_norm1_init, g_norm1_new = _INF, -1.0, _INF
    it = 0
    while it < max_iter:
        rng.shuffle(index[:active])
        active, g_max_new, g_norm1_new = epoch(K, y, c, float(epsilon), QD, G, beta, index,
                                               active, g_max_old)
        if it == 0:
            g_norm1_init = g_norm1_new
        it += 1
        if g_norm1_new <= tol * g_norm1_init:
            if active == n_all:
                break
            active, g_max_old = n_all, _INF
            continue
        g_max_old = g_max_new
    else:
        if n_all:
            _warn_max_iter("kernel_svr", max_iter,
                           f"violation {g_norm1_new:.2g} > tol {tol:g} x {g_norm1_init:.2g}")
    return (beta, it) if return_n_iter else beta
