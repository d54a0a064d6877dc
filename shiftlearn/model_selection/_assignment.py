"""The assignment step of the constrained kernel k-means (Napoli & White, Eqs. 12-17).

Per-group size constraints (:func:`group_bounds`) and the assignment of rows to clusters for
fixed centroid distances ``D``: two clusters in closed form (sort by ``D_iV - D_iT`` within
each group) or by the paper's LP; ``K > 2`` clusters by the (totally unimodular) assignment LP
with HiGHS. The decisions are documented in :mod:`._cluster_kmeans`.
"""

from __future__ import annotations

import numpy as np
from scipy import sparse
from scipy.optimize import linprog

__all__ = ["SOLVERS", "assign_k_clusters", "assign_two_clusters", "group_bounds"]

SOLVERS = ("closed_form", "lp")


def _round_half_up(x: np.ndarray) -> np.ndarray:
    return np.floor(np.asarray(x, dtype=np.float64) + 0.5).astype(np.int64)


# ---------------------------------------------------------------------------------------------
# constraints
# ---------------------------------------------------------------------------------------------
def group_bounds(sizes: np.ndarray, test_size: float, tolerance=0.0
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Validation counts per group: target ``m``, lower ``lo`` and upper ``hi`` bounds.

    ``m_g = round(h n_g)`` (half up); with tolerance ``tau_g``,
    ``lo_g = round(h (1 - tau_g) n_g)`` and ``hi_g = round(h (1 + tau_g) n_g)``, clipped to
    ``[0, n_g]`` (the paper's Eq. 15 and 17).

    Parameters
    ----------
    sizes : ndarray of int, shape (n_groups,)
    test_size : float in (0, 1)
        The holdout fraction ``h``.
    tolerance : float or ndarray of shape (n_groups,)
        Relative tolerance ``tau_g >= 0``; 0 gives hard constraints.

    Returns
    -------
    m, lo, hi : ndarray of int, shape (n_groups,)

    Examples
    --------
    >>> import numpy as np
    >>> m, lo, hi = group_bounds(np.array([10, 5, 2]), 0.25)
    >>> m.tolist(), lo.tolist(), hi.tolist()
    ([3, 1, 1], [3, 1, 1], [3, 1, 1])
    """
    sizes = np.asarray(sizes, dtype=np.int64)
    tau = np.broadcast_to(np.asarray(tolerance, dtype=np.float64), sizes.shape)
    if np.any(tau < 0) or not np.all(np.isfinite(tau)):
        raise ValueError(f"tolerance must be finite and >= 0, got {tolerance!r}.")
    m = np.clip(_round_half_up(test_size * sizes), 0, sizes)
    lo = np.clip(_round_half_up(test_size * (1 - tau) * sizes), 0, m)
    hi = np.clip(_round_half_up(test_size * (1 + tau) * sizes), m, sizes)
    return m, lo, hi


# ---------------------------------------------------------------------------------------------
# assignment step
# ---------------------------------------------------------------------------------------------
def _rank_in_group(values: np.ndarray, codes: np.ndarray) -> np.ndarray:
    """Rank (0-based) of each row's value within its group: one float sort + one stable
    integer sort (faster than ``lexsort``)."""
    order = np.argsort(values)
    order = order[np.argsort(codes[order], kind="stable")]
    sc = codes[order]
    start = np.r_[0, np.flatnonzero(sc[1:] != sc[:-1]) + 1]
    counts = np.diff(np.r_[start, sc.shape[0]])
    ranks = np.empty_like(order)
    ranks[order] = np.arange(order.shape[0]) - np.repeat(start, counts)
    return ranks


def _select_from_rank(rank, values, codes, lo, hi):
    return (rank < lo[codes]) | ((rank < hi[codes]) & (values < 0))


def _select_closed_form(delta, codes, lo, hi):
    return _select_from_rank(_rank_in_group(delta, codes), delta, codes, lo, hi)


def _select_lp(D, v, codes, lo, hi):
    """The paper's LP (12)-(16) (or (17)) for validation column ``v``, via HiGHS."""
    n = D.shape[0]
    n_groups = lo.shape[0]
    c = D.ravel()                       # U[i, j] at position 2 i + j
    rows = np.repeat(np.arange(n), 2)
    A_one = sparse.csr_matrix((np.ones(2 * n), (rows, np.arange(2 * n))), shape=(n, 2 * n))
    A_grp = sparse.csr_matrix((np.ones(n), (codes, 2 * np.arange(n) + v)),
                              shape=(n_groups, 2 * n))
    if np.array_equal(lo, hi):
        A_eq = sparse.vstack([A_one, A_grp]).tocsr()
        b_eq = np.r_[np.ones(n), lo]
        A_ub = b_ub = None
    else:
        A_eq, b_eq = A_one, np.ones(n)
        A_ub = sparse.vstack([A_grp, -A_grp]).tocsr()
        b_ub = np.r_[hi, -lo].astype(np.float64)
    for method in ("highs", "highs-ds"):
        res = linprog(c, A_ub=A_ub, b_ub=b_ub, A_eq=A_eq, b_eq=b_eq, bounds=(0, 1),
                      method=method)
        if res.status != 0:
            raise RuntimeError(f"linprog failed on the assignment LP: {res.message}")
        U = res.x.reshape(n, 2)
        if np.max(np.abs(U - np.round(U))) < 1e-6:
            return U[:, v] > 0.5
    raise RuntimeError("The assignment LP returned a fractional solution (should be integral "
                       "by total unimodularity).")


def assign_two_clusters(D: np.ndarray, codes: np.ndarray, lo: np.ndarray, hi: np.ndarray, *,
                        solver: str = "closed_form") -> tuple[np.ndarray, float]:
    """Constrained assignment for two clusters; both choices of the validation cluster.

    Parameters
    ----------
    D : ndarray of shape (n, 2)
        Distance of each row to the centroid of cluster 0 (train) and cluster 1 (validation).
    codes : ndarray of int, shape (n,)
        Constraint group of each row, ``0..n_groups-1``.
    lo, hi : ndarray of int, shape (n_groups,)
        Bounds on the validation count of each group (equal for hard constraints).
    solver : {"closed_form", "lp"}

    Returns
    -------
    in_val : ndarray of bool, shape (n,)
        The new validation set (whichever old cluster it grew from).
    cost : float
        ``sum_ij U_ij D_ij`` of the chosen assignment (the lower of the two LPs).

    Examples
    --------
    >>> import numpy as np
    >>> D = np.array([[0.0, 1.0], [1.0, 0.0], [0.2, 0.9], [0.9, 0.1]])
    >>> in_val, cost = assign_two_clusters(D, np.zeros(4, int), np.array([2]), np.array([2]))
    >>> in_val.tolist(), round(cost, 6)
    ([False, True, False, True], 0.3)
    """
    if solver not in SOLVERS:
        raise ValueError(f"solver must be one of {SOLVERS}, got {solver!r}.")
    D = np.asarray(D, dtype=np.float64)
    if solver == "closed_form":
        return _assign_two_closed_form(D[:, 1] - D[:, 0], D.sum(axis=0), codes, lo, hi)
    best = None
    for v in (1, 0):
        t = 1 - v
        sel = _select_lp(D, v, codes, lo, hi)
        cost = float(D[:, t].sum() + (D[sel, v] - D[sel, t]).sum())
        if best is None or cost < best[1]:
            best = (sel, cost)
    return best


def _assign_two_closed_form(delta, colsum, codes, lo, hi):
    """Closed-form optimum of both LPs from ``delta = D1 - D0`` and the column sums of D."""
    rank = _rank_in_group(delta, codes)
    sel1 = _select_from_rank(rank, delta, codes, lo, hi)      # validation grows from cluster 1
    cost1 = float(colsum[0] + delta[sel1].sum())
    size = np.bincount(codes, minlength=lo.shape[0])
    rank0 = size[codes] - 1 - rank                            # ranks of -delta (one sort)
    sel0 = _select_from_rank(rank0, -delta, codes, lo, hi)    # ... or from cluster 0
    cost0 = float(colsum[1] - delta[sel0].sum())
    return (sel1, cost1) if cost1 <= cost0 else (sel0, cost0)


def assign_k_clusters(D: np.ndarray, codes: np.ndarray, lo: np.ndarray, hi: np.ndarray,
                      size_lo: int, size_hi: int) -> tuple[np.ndarray, float]:
    """Constrained assignment for ``K`` clusters (K folds) by the integral LP (HiGHS).

    Every group ``g`` puts between ``lo[g]`` and ``hi[g]`` rows in every cluster and every
    cluster has between ``size_lo`` and ``size_hi`` rows. The constraint matrix is two laminar
    families, hence totally unimodular: the simplex vertex is integral (checked).

    Returns ``(labels, cost)``.
    """
    n, k = D.shape
    n_groups = lo.shape[0]
    idx = np.arange(n * k)
    A_one = sparse.csr_matrix((np.ones(n * k), (np.repeat(np.arange(n), k), idx)),
                              shape=(n, n * k))
    gj = np.repeat(codes, k) * k + np.tile(np.arange(k), n)
    A_grp = sparse.csr_matrix((np.ones(n * k), (gj, idx)), shape=(n_groups * k, n * k))
    A_tot = sparse.csr_matrix((np.ones(n * k), (np.tile(np.arange(k), n), idx)), shape=(k, n * k))
    A_ub = sparse.vstack([A_grp, -A_grp, A_tot, -A_tot]).tocsr()
    b_ub = np.r_[np.repeat(hi, k), -np.repeat(lo, k), np.full(k, size_hi), -np.full(k, size_lo)]
    for method in ("highs", "highs-ds"):
        res = linprog(D.ravel(), A_ub=A_ub, b_ub=b_ub.astype(np.float64), A_eq=A_one,
                      b_eq=np.ones(n), bounds=(0, 1), method=method)
        if res.status != 0:
            raise RuntimeError(f"linprog failed on the K-cluster assignment LP: {res.message}")
        U = res.x.reshape(n, k)
        if np.max(np.abs(U - np.round(U))) < 1e-6:
            labels = np.argmax(U, axis=1)
            return labels, float(D[np.arange(n), labels].sum())
    raise RuntimeError("The K-cluster assignment LP returned a fractional solution.")
