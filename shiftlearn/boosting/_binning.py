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


def bin_tasks(X: np.ndarray, task: np.ndarray, n_tasks: int, max_bins: int = 255):
    """Bin every feature of every task with the task's own edges.

    Parameters
    ----------
    X : ndarray (n, d)
    task : ndarray (n,) of task indices ``0..n_tasks-1``
    n_tasks : int
    max_bins : int, at most 256 (codes then fit in ``0..255``)

    Returns
    -------
    codes : ndarray (d, n) of intp, feature-major
    edges : ndarray (n_tasks, d, B) of float, padded with ``+inf``; ``B = max(n_edges) + 1``
    n_edges : ndarray (n_tasks, d) of int
    frac : ndarray (n_tasks, d, B + 1): fraction of the task's rows at split position
        ``p`` (index ``p + 1``) or left of it; used to map thresholds into tasks with no
        sample at a node (quantile matching).

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
    for t in range(n_tasks):
        rows = np.flatnonzero(task == t)
        if rows.size == 0:
            raise ValueError(f"task {t} has no rows.")
        Xt = X[rows]
        for f in range(d):
            e = feature_edges(Xt[:, f], max_bins)
            edges[t, f, :e.size] = e
            n_edges[t, f] = e.size
            c = np.searchsorted(e, Xt[:, f], side="right")
            codes[f, rows] = c
            cnt = np.bincount(c, minlength=max_bins)
            frac[t, f, 0] = 0.0
            frac[t, f, 1:] = np.cumsum(cnt) / rows.size
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
