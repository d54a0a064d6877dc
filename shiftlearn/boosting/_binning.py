"""Per-task feature binning: each task's columns are cut at its own (midpoint) edges.

Binning is rank based: a strictly increasing map of a task's feature leaves its codes unchanged,
which is what lets per-task thresholds absorb such a shift exactly. With at most ``max_bins``
distinct values per (task, feature) the edges are the midpoints between consecutive distinct
values (exact threshold search); otherwise they are ``max_bins - 1`` quantile midpoints, as in
scikit-learn's ``HistGradientBoosting``.

Convention: ``code = #(edges <= x)``, so ``code <= p`` (left of split position ``p``) is
``x < edges[p]``; position ``-1`` is threshold ``-inf`` (all right), positions
``>= n_edges`` are ``+inf`` (all left). Predictions send ``x >= threshold`` to the right.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from contextlib import nullcontext
from functools import partial

import numpy as np

__all__ = ["bin_tasks", "feature_edges", "positions_to_thresholds"]


def feature_edges(col: np.ndarray, max_bins: int) -> np.ndarray:
    """Bin edges of one column: distinct-value midpoints, or quantile midpoints if too many.

    Examples
    --------
    >>> feature_edges(np.array([3.0, 1.0, 2.0, 2.0]), 255).tolist()
    [1.5, 2.5]
    """
    u = np.unique(col)
    if u.size <= max_bins:
        return (u[:-1] + u[1:]) / 2.0
    q = np.percentile(col, np.linspace(0, 100, max_bins + 1)[1:-1], method="midpoint")
    return np.unique(q)


def _bin_block(XT: np.ndarray, max_bins: int, qs: np.ndarray):
    """Codes (d, m), edges (d, max_bins), edge counts (d,) and fractions (d, max_bins + 1) of
    the columns ``XT`` (d, m) of one task (each column alone: a block of columns is binned
    as in the whole task, bit for bit)."""
    d, m = XT.shape
    edges = np.full((d, max_bins), np.inf)
    n_edges = np.zeros(d, dtype=np.int64)
    frac = np.ones((d, max_bins + 1))
    frac[:, 0] = 0.0
    perm = np.argsort(XT, axis=1)
    S = np.take_along_axis(XT, perm, axis=1)
    new = np.ones((d, m), dtype=bool)
    np.not_equal(S[:, 1:], S[:, :-1], out=new[:, 1:])       # first of each distinct value
    quantile = new.sum(axis=1) > max_bins
    Q = (np.percentile(S[quantile], qs, axis=1, method="midpoint").T
         if quantile.any() else None)                        # = percentile per column
    qi = np.cumsum(quantile) - 1
    CS = np.empty((d, m), dtype=np.intp)
    for f in range(d):
        if quantile[f]:
            e = np.unique(Q[qi[f]])
        else:
            u = S[f][new[f]]
            e = (u[:-1] + u[1:]) / 2.0
        ne = e.size
        edges[f, :ne] = e
        n_edges[f] = ne
        # code = #(edges <= x): along the sorted column it steps up at each edge's
        # insertion point #(x < edge)
        pos = np.searchsorted(S[f], e, side="left")
        step = np.zeros(m + 1, dtype=np.intp)
        np.add.at(step, pos, 1)
        np.cumsum(step[:m], out=CS[f])
        frac[f, 1:ne + 1] = pos / m
    Ct = np.empty((d, m), dtype=np.intp)
    np.put_along_axis(Ct, perm, CS, axis=1)
    return Ct, edges, n_edges, frac


def bin_tasks(X: np.ndarray, task: np.ndarray, n_tasks: int, max_bins: int = 255,
              n_jobs: int = 1):
    """Bin every feature of every task with the task's own edges.

    Parameters
    ----------
    X : ndarray (n, d)
    task : ndarray (n,) of task indices ``0..n_tasks-1``
    n_tasks : int
    max_bins : int, at most 256 (codes then fit in ``0..255``)
    n_jobs : int, default 1
        Threads: each task's columns are cut into ``n_jobs`` contiguous blocks binned side by
        side (numpy's sorts release the GIL). Every column is binned alone, so the
        result is the same bit for bit whatever ``n_jobs``.

    Returns
    -------
    codes : ndarray (d, n) of intp, feature-major
    edges : ndarray (n_tasks, d, B) of float, padded with ``+inf``; ``B = max(n_edges) + 1``
    n_edges : ndarray (n_tasks, d) of int
    frac : ndarray (n_tasks, d, B + 1): fraction of the task's rows at split position
        ``p`` (index ``p + 1``) or left of it; used to map thresholds into tasks with no
        sample at a node (quantile matching).

    Notes
    -----
    One ``argsort`` per (task, feature) does all the work (the edges of
    :func:`feature_edges`, bit for bit, and the codes): the distinct values and the quantiles
    are read off the sorted column, and the codes of the sorted column are a cumulative count
    of the edges' insertion points, scattered back through the permutation. A binary search
    per row (``searchsorted`` on unsorted values, branch-mispredicted) cost more than the sort.

    Examples
    --------
    >>> X = np.array([[0.0], [1.0], [10.0], [20.0]]); task = np.array([0, 0, 1, 1])
    >>> codes, edges, n_edges, _ = bin_tasks(X, task, 2)
    >>> codes.tolist(), edges[:, 0, 0].tolist()
    ([[0, 1, 0, 1]], [0.5, 15.0])
    """
    if not 2 <= max_bins <= 256:
        raise ValueError(f"max_bins must be in [2, 256], got {max_bins}.")
    n, d = X.shape
    codes = np.empty((d, n), dtype=np.intp)
    edges = np.full((n_tasks, d, max_bins), np.inf)
    n_edges = np.zeros((n_tasks, d), dtype=np.int64)
    frac = np.ones((n_tasks, d, max_bins + 1))
    qs = np.linspace(0, 100, max_bins + 1)[1:-1]
    blocks = [slice(b[0], b[-1] + 1)
              for b in np.array_split(np.arange(d), max(1, min(int(n_jobs), d))) if b.size]
    bin_block = partial(_bin_block, max_bins=max_bins, qs=qs)
    # one block: no thread started
    with ThreadPoolExecutor(len(blocks)) if len(blocks) > 1 else nullcontext() as pool:
        for t in range(n_tasks):
            rows = np.flatnonzero(task == t)
            if rows.size == 0:
                raise ValueError(f"task {t} has no rows.")
            XT = np.ascontiguousarray(X[rows].T)                    # (d, m)
            done = (map if pool is None else pool.map)(bin_block, [XT[sl] for sl in blocks])
            for sl, (Ct, e, ne, fr) in zip(blocks, done, strict=True):
                codes[sl, rows] = Ct
                edges[t, sl], n_edges[t, sl], frac[t, sl] = e, ne, fr
    width = int(n_edges.max()) + 1          # drop padding no task uses: fewer bins to search
    return codes, edges[..., :width].copy(), n_edges, frac[..., :width + 1].copy()


def positions_to_thresholds(edges_tf: np.ndarray, pos: np.ndarray) -> np.ndarray:
    """Thresholds of split positions (``-1`` -> ``-inf``; past the last edge -> ``+inf``).

    ``edges_tf`` has shape (..., max_bins) (padded with ``+inf``) and ``pos`` the matching
    leading shape.
    """
    pos = np.asarray(pos)
    safe = np.clip(pos, 0, edges_tf.shape[-1] - 1)
    thr = np.take_along_axis(edges_tf, safe[..., None], axis=-1)[..., 0]
    return np.where(pos < 0, -np.inf, thr)
