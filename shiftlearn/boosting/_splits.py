"""Split search on per-task histograms: multi-task stumps and the exact solver of Eq. 6.

All functions work on histograms ``Hw[..., t, f, b]`` (sum of weights) and ``Hs`` (sum of
``w * r`` with ``r = y in {-1, +1}``) of the rows of task ``t`` whose feature ``f`` falls in bin
``b``. A split position ``p in {-1, ..., B-1}`` sends bins ``<= p`` left.

Eq. 6 for one node: shared leaf values ``eta_L, eta_R`` and feature ``f``, one position per
task. With pooled sums ``(W_L, S_L) = sum_t (W_L^t(p_t), S_L^t(p_t))`` the weighted squared
error is ``const - G`` with ``G = S_L^2 / W_L + (S - S_L)^2 / (W - W_L)``. ``G`` is convex
(sum of perspective functions), so its maximum over the Minkowski sum of the per-task point
sets is at a vertex of the sum of the per-task convex hulls. The upper hull of a task's
cumulative path ``p -> (W_L(p), S_L(p))`` has, as edge slopes, the weighted antitonic
regression of the bin ratios ``s_b / w_b`` (pool-adjacent-violators); merging all tasks' bins
by fitted slope (stable, so every prefix is a per-task prefix, i.e. a feasible split) and
taking prefix sums walks the upper chain of the Minkowski sum; the lower chain is the same with
``-s``. Evaluating ``G`` at every end of a group of equal slopes (the Minkowski vertices) is
exact: O(T B log(T B)) per (node, feature). ``brute_force_split`` checks it.
"""

from __future__ import annotations

import itertools

import numpy as np
from scipy.optimize import isotonic_regression

__all__ = ["brute_force_split", "split_gain", "stump_split", "tree_split_exact"]


def _cumpad(H: np.ndarray) -> np.ndarray:
    """Cumulative sums along the last axis with a leading 0 (index ``p + 1`` = position p)."""
    out = np.zeros(H.shape[:-1] + (H.shape[-1] + 1,))
    np.cumsum(H, axis=-1, out=out[..., 1:])
    return out


def split_gain(WL, SL, W, S):
    """``G = S_L^2/W_L + (S-S_L)^2/(W-W_L)`` (a term is 0 where its weight is 0)."""
    WL, SL = np.asarray(WL, float), np.asarray(SL, float)
    WR, SR = W - WL, S - SL
    tiny = 1e-300
    gl = np.divide(SL * SL, WL, out=np.zeros(np.broadcast(SL, WL).shape), where=WL > tiny)
    gr = np.divide(SR * SR, WR, out=np.zeros(np.broadcast(SR, WR).shape), where=WR > tiny)
    return gl + gr


def stump_split(Hpos: np.ndarray, Hneg: np.ndarray):
    """Multi-task decision stump with outputs ``-s`` (left) / ``+s`` (right), shared ``s``.

    For each feature and polarity every task picks its own error-minimising position
    (separable, Sec. 3.2 of the paper); the feature and polarity minimise the summed error.

    Parameters
    ----------
    Hpos, Hneg : ndarray (T, D, B)
        Weight histograms of the positive / negative rows.

    Returns
    -------
    feature : int
    polarity : int (+1 or -1)
    positions : ndarray (T,) of split positions
    error : float, the summed weighted error

    Examples
    --------
    >>> Hp = np.array([[[0.0, 1.0]]]); Hn = np.array([[[1.0, 0.0]]])
    >>> f, s, pos, err = stump_split(Hp, Hn)
    >>> (f, s, pos.tolist(), err)
    (0, 1, [0], 0.0)
    """
    cp, cn = _cumpad(Hpos), _cumpad(Hneg)
    P, N = cp[..., -1:], cn[..., -1:]
    err = np.stack([cp + (N - cn), cn + (P - cp)])       # polarity +1 / -1, (2, T, D, B+1)
    # first optimum up to a relative 1e-12: ties break by (polarity +1 first, feature, position)
    tol = 1e-12 * (P + N)
    emin = err.min(axis=-1, keepdims=True)
    k = np.argmax(err <= emin + tol, axis=-1)
    e = np.take_along_axis(err, k[..., None], axis=-1)[..., 0].sum(axis=1)   # (2, D)
    flat = e.ravel()
    si, f = np.unravel_index(int(np.argmax(flat <= flat.min() + 1e-12 * float((P + N).sum()))),
                             e.shape)
    return int(f), 1 - 2 * int(si), k[si, :, f] - 1, float(e[si, f])


def _antitonic_rows(vals: np.ndarray, w: np.ndarray) -> np.ndarray:
    """Weighted non-increasing fit of every row (last axis) with ONE PAVA call.

    Rows are concatenated with offsets that make the sequence strictly decreasing across row
    boundaries, so no block ever pools two rows. Values must lie in [-1, 1]; zero-weight entries
    are skipped and then forward-filled (leading ones get 2.0), so each row stays
    non-increasing and a zero-weight bin travels with its left neighbour.
    """
    shape = vals.shape
    R, B = int(np.prod(shape[:-1])), shape[-1]
    v = vals.reshape(R, B)
    ww = w.reshape(R, B)
    off = (4.0 * (R - 1 - np.arange(R)))[:, None]
    m = ww > 0
    full = np.zeros((R, B))
    if m.any():
        full[m] = isotonic_regression((v + off)[m], weights=ww[m], increasing=False).x \
            - np.broadcast_to(off, (R, B))[m]
    idx = np.maximum.accumulate(np.where(m, np.arange(B), -1), axis=1)
    F = np.where(idx >= 0, np.take_along_axis(full, np.maximum(idx, 0), axis=1), 2.0)
    return np.minimum.accumulate(F, axis=1).reshape(shape)


def tree_split_exact(Hw: np.ndarray, Hs: np.ndarray):
    """Exact maximiser of Eq. 6 for a batch of nodes (shared ``f``, one position per task).

    Parameters
    ----------
    Hw, Hs : ndarray (J, T, D, B)
        Per node ``j``: weight and ``w * r`` histograms.

    Returns
    -------
    feature : ndarray (J,) of int
    positions : ndarray (J, T) of split positions (``-1`` .. ``B-1``)
    gain : ndarray (J,) ``G(best) - S^2/W`` (>= 0 up to rounding)

    Examples
    --------
    >>> Hw = np.array([[[[1.0, 1.0, 1.0]], [[1.0, 1.0, 1.0]]]])
    >>> Hs = np.array([[[[-1.0, 1.0, 1.0]], [[-1.0, -1.0, 1.0]]]])
    >>> f, pos, gain = tree_split_exact(Hw, Hs)
    >>> f.tolist(), pos.tolist(), round(float(gain[0]), 6)
    ([0], [[0, 1]], 6.0)
    """
    J, T, D, B = Hw.shape
    W = Hw[:, :, 0].sum(axis=(1, 2))
    S = Hs[:, :, 0].sum(axis=(1, 2))
    hw = np.ascontiguousarray(Hw.transpose(0, 2, 1, 3))          # (J, D, T, B)
    hs = np.ascontiguousarray(Hs.transpose(0, 2, 1, 3))
    mask = hw > 0
    ratio = np.divide(hs, hw, out=np.zeros_like(hs), where=mask)
    np.clip(ratio, -1.0, 1.0, out=ratio)
    F = _antitonic_rows(np.stack([ratio, -ratio]), np.stack([hw, hw]))   # (2, J, D, T, B)
    M = T * B
    keys = (-F).reshape(-1, M)                                   # rows = (side, j, d)
    order = np.argsort(keys, axis=1, kind="stable")
    flat = order + (np.arange(keys.shape[0]) * M)[:, None]
    ks = keys.ravel()[flat]
    wsort = np.broadcast_to(hw.reshape(1, -1), (2, hw.size)).ravel()[flat]
    hs2 = np.stack([hs, -hs]).ravel()
    WL = np.cumsum(wsort, axis=1).reshape(2, J, D, M)
    SL = np.cumsum(hs2[flat], axis=1).reshape(2, J, D, M)
    SL[1] *= -1.0
    G = split_gain(WL, SL, W[None, :, None, None], S[None, :, None, None])
    end = np.ones(ks.shape, dtype=bool)
    end[:, :-1] = ks[:, :-1] != ks[:, 1:]
    G[~end.reshape(G.shape)] = -np.inf
    flatG = G.transpose(1, 0, 2, 3).reshape(J, -1)
    # first optimum up to a relative 1e-12 (G <= W): exact ties (e.g. two features that
    # separate the node's rows the same way) go to (side, feature, prefix) order instead of
    # to rounding, which depends on how many nodes are batched (``_antitonic_rows`` offsets)
    tol = 1e-12 * np.maximum(W, 1e-300)[:, None]
    best = np.argmax(flatG >= flatG.max(axis=1, keepdims=True) - tol, axis=1)
    side, feat, pre = np.unravel_index(best, (2, D, M))
    g0 = split_gain(0.0, 0.0, W, S)
    gain = flatG[np.arange(J), best] - g0
    task_of = order.reshape(2, J, D, M)[side, np.arange(J), feat] // B      # (J, M)
    inpre = np.arange(M)[None, :] <= pre[:, None]
    counts = np.stack([((task_of == t) & inpre).sum(axis=1) for t in range(T)], axis=1)
    return feat.astype(np.int64), counts - 1, gain


def brute_force_split(Hw: np.ndarray, Hs: np.ndarray):
    """Reference for ONE node (Hw, Hs of shape (T, D, B)): try every position combination.

    Returns ``(best G, feature, positions)``; exponential in T, for tests only.
    """
    T, D, B = Hw.shape
    cw, cs = _cumpad(Hw), _cumpad(Hs)
    W, S = Hw[:, 0].sum(), Hs[:, 0].sum()
    best = (-np.inf, -1, None)
    for f in range(D):
        for combo in itertools.product(range(B + 1), repeat=T):
            wl = sum(cw[t, f, c] for t, c in enumerate(combo))
            sl = sum(cs[t, f, c] for t, c in enumerate(combo))
            g = float(split_gain(wl, sl, W, S))
            if g > best[0]:
                best = (g, f, np.array(combo) - 1)
    return best
