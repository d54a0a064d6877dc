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

Pruning (``pair_bounds``): ``G`` is subadditive, so the sum over tasks of each task's own best
split value bounds a feature's optimum, and every task at its own best position is a feasible
split. ``exact_pairs`` searches only the (node, feature) pairs whose bound reaches a node's
feasible value, each bit for bit as in the whole batch, and returns what a full search returns.
"""

from __future__ import annotations

import itertools

import numpy as np
from scipy.optimize import isotonic_regression

from . import _loops

__all__ = ["brute_force_split", "class_bounds", "exact_pairs", "pair_bounds", "select_stump",
           "split_gain", "stump_errors", "stump_split", "tree_split_exact"]


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


def stump_errors(Hpos: np.ndarray, Hneg: np.ndarray):
    """Per (polarity, feature) summed error of the multi-task stump, each task at its own
    error-minimising position (the first one up to a relative ``1e-12``).

    Parameters
    ----------
    Hpos, Hneg : ndarray (T, D, B)

    Returns
    -------
    e : ndarray (2, D), polarity ``+1`` then ``-1``; positions : ndarray (2, T, D);
    total : ndarray (T, D) the weight of each task as the cumulative sums see it.
    """
    cp, cn = _cumpad(Hpos), _cumpad(Hneg)
    P, N = cp[..., -1:], cn[..., -1:]
    err = np.stack([cp + (N - cn), cn + (P - cp)])       # polarity +1 / -1, (2, T, D, B+1)
    # first optimum up to a relative 1e-12: ties break by (polarity +1 first, feature, position)
    tol = 1e-12 * (P + N)
    emin = err.min(axis=-1, keepdims=True)
    k = np.argmax(err <= emin + tol, axis=-1)
    e = np.take_along_axis(err, k[..., None], axis=-1)[..., 0].sum(axis=1)   # (2, D)
    return e, k - 1, (P + N)[..., 0]


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
    e, pos, total = stump_errors(Hpos, Hneg)
    si, f = select_stump(e, 1e-12 * float(total.sum()))
    return f, 1 - 2 * si, pos[si, :, f], float(e[si, f])


def select_stump(e: np.ndarray, tol: float) -> tuple[int, int]:
    """``(polarity index, column)`` of the first entry of ``e`` (2, D) within ``tol`` of its
    minimum, in (polarity, column) order."""
    flat = e.ravel()
    si, f = np.unravel_index(int(np.argmax(flat <= flat.min() + tol)), e.shape)
    return int(si), int(f)


def _antitonic_rows(vals: np.ndarray, w: np.ndarray, row: np.ndarray, n_rows: int) -> np.ndarray:
    """Weighted non-increasing fit of every row (last axis) with ONE PAVA call.

    Rows are concatenated with offsets that make the sequence strictly decreasing across row
    boundaries, so no block ever pools two rows. Values must lie in [-1, 1]; zero-weight entries
    are skipped and then forward-filled (leading ones get 2.0), so each row stays
    non-increasing and a zero-weight bin travels with its left neighbour.

    ``row``/``n_rows``: the rows' indices in a batch of ``n_rows`` rows. A row's offset
    ``4 (n_rows - 1 - row)`` is the only thing the other rows change about its fit (PAVA never
    pools across the offsets, and rounds ``value + offset``), so a subset of a batch, given its
    indices, is fitted bit for bit as in the whole batch.
    """
    shape = vals.shape
    R, B = int(np.prod(shape[:-1])), shape[-1]
    v = vals.reshape(R, B)
    ww = w.reshape(R, B)
    off = (4.0 * (n_rows - 1 - np.asarray(row).reshape(R)))[:, None]
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
    node, feat = np.divmod(np.arange(J * D), D)
    hw = Hw.transpose(0, 2, 1, 3).reshape(J * D, T, B)
    hs = Hs.transpose(0, 2, 1, 3).reshape(J * D, T, B)
    best = exact_pairs(hw, hs, W, S, node, feat, D)
    return best[0], best[1], best[2]


def _pair_gains(hw, hs, Wp, Sp, base, n_rows):
    """``G`` (2, P, T B): the gain at each end of a group of equal fitted slopes (``-inf``
    elsewhere) in the merged order ``order`` (2, P, T B) of every (side, pair); the numpy path
    of :func:`~shiftlearn.boosting._loops.pair_gains`."""
    P, T, B = hw.shape
    hw = np.ascontiguousarray(hw)
    hs = np.ascontiguousarray(hs)
    mask = hw > 0
    ratio = np.divide(hs, hw, out=np.zeros_like(hs), where=mask)
    np.clip(ratio, -1.0, 1.0, out=ratio)
    row = base[:, :, None] + np.arange(T)[None, None, :]
    F = _antitonic_rows(np.stack([ratio, -ratio]), np.stack([hw, hw]), row, n_rows)
    M = T * B
    keys = (-F).reshape(-1, M)                                   # rows = (side, pair)
    order = np.argsort(keys, axis=1, kind="stable")
    flat = order + (np.arange(keys.shape[0]) * M)[:, None]
    ks = keys.ravel()[flat]
    wsort = np.broadcast_to(hw.reshape(1, -1), (2, hw.size)).ravel()[flat]
    hs2 = np.stack([hs, -hs]).ravel()
    WL = np.cumsum(wsort, axis=1).reshape(2, P, M)
    SL = np.cumsum(hs2[flat], axis=1).reshape(2, P, M)
    SL[1] *= -1.0
    G = split_gain(WL, SL, Wp[None, :, None], Sp[None, :, None])
    end = np.ones(ks.shape, dtype=bool)
    end[:, :-1] = ks[:, :-1] != ks[:, 1:]
    G[~end.reshape(G.shape)] = -np.inf
    return G, order.reshape(2, P, M)


def exact_pairs(hw, hs, W, S, node, feat, D):
    """The exact Eq. 6 search over candidate (node, feature) pairs of a batch of nodes.

    ``hw, hs`` (P, T, B): the pairs' histograms, sorted by (node, feature); ``W, S`` (J,):
    the nodes' totals; ``D``: the batch's number of features. Every pair is searched as in
    the whole (J, D) batch, bit for bit (same PAVA offsets, row-local sorts and sums), and
    each node takes the first optimum (up to ``1e-12 W``) in (side, feature, prefix) order
    among its pairs: leaving out pairs that cannot come within that tolerance of the node's
    best changes nothing.

    Returns ``feature (J,), positions (J, T), gain (J,), pair_max (P,)`` (each pair's best
    ``G``; ``-inf`` entries of a node without pairs).

    The per-pair search runs compiled where numba does
    (:func:`~shiftlearn.boosting._loops.pair_gains`, the same arrays bit for bit).
    """
    P, T, B = hw.shape
    J = W.size
    M = T * B
    # each (side, pair)'s first row in the whole batch's (side, node, feature, task) order
    base = ((np.arange(2)[:, None] * J + node[None, :]) * D + feat[None, :]) * T
    gains = _loops.pair_gains if _loops.use_numba() else _pair_gains
    G, order = gains(hw, hs, W[node], S[node], base, 2 * J * D * T)
    # first optimum up to a relative 1e-12 (G <= W): exact ties (e.g. two features that
    # separate the node's rows the same way) go to (side, feature, prefix) order instead of
    # to rounding, which depends on how many nodes are batched (``_antitonic_rows`` offsets)
    rowmax = G.max(axis=2)                                        # (2, P)
    pair_max = rowmax.max(axis=0)
    nodemax = np.full(J, -np.inf)
    np.maximum.at(nodemax, node, pair_max)
    tol = 1e-12 * np.maximum(W, 1e-300)
    hit = G >= (nodemax - tol)[node][None, :, None]
    rowhit = hit.any(axis=2)                                      # (2, P)
    key = np.where(rowhit, np.arange(2)[:, None] * P + np.arange(P)[None, :], 2 * P)
    first = np.full(J, 2 * P)
    np.minimum.at(first, node, key[0])
    np.minimum.at(first, node, key[1])
    side, p = np.divmod(first, P)
    pre = np.argmax(hit[side, p], axis=1)
    g0 = split_gain(0.0, 0.0, W, S)
    gain = G[side, p, pre] - g0
    task_of = order[side, p] // B                                 # (J, M)
    inpre = np.arange(M)[None, :] <= pre[:, None]
    counts = np.stack([((task_of == t) & inpre).sum(axis=1) for t in range(T)], axis=1)
    return feat[p].astype(np.int64), counts - 1, gain, pair_max


def pair_bounds(Hw: np.ndarray, Hs: np.ndarray, W: np.ndarray, S: np.ndarray):
    """Cheap bounds on the Eq. 6 optimum of every (node, feature), from per-task scans.

    ``G = S_L^2/W_L + S_R^2/W_R`` is a sum of perspective functions, which are subadditive, so
    at any split ``G <= sum_t G_t`` where ``G_t`` is task ``t``'s own split value (its own
    totals): ``upper[j, f] = sum_t max_p G_t(p)`` bounds the feature's optimum from above.
    Every task at its own best position is a feasible multi-task split: ``lower[j]`` is the
    best of those points' ``G`` over the features, a value the node's optimum reaches.

    Parameters
    ----------
    Hw, Hs : ndarray (J, T, D, B); W, S : ndarray (J,) node totals.

    Returns
    -------
    upper : ndarray (J, D); lower : ndarray (J,)
    """
    cw = np.cumsum(Hw, axis=-1)
    cs = np.cumsum(Hs, axis=-1)
    Gt = split_gain(cw, cs, cw[..., -1:], cs[..., -1:])         # (J, T, D, B)
    k = Gt.argmax(axis=-1)[..., None]
    upper = np.take_along_axis(Gt, k, axis=-1)[..., 0].sum(axis=1)
    wl = np.take_along_axis(cw, k, axis=-1)[..., 0].sum(axis=1)
    sl = np.take_along_axis(cs, k, axis=-1)[..., 0].sum(axis=1)
    lower = split_gain(wl, sl, W[:, None], S[:, None]).max(axis=1)
    return upper, lower


def class_bounds(H: np.ndarray, W: np.ndarray, S: np.ndarray):
    """:func:`pair_bounds` of the class histograms ``H`` (D, J, T, 2, B): compiled where numba
    runs (:func:`~shiftlearn.boosting._loops.class_bounds`), else from the weight and signed
    histograms in numpy (the bounds only prune, with margins, so the two paths need not agree
    to the last bit)."""
    if _loops.use_numba():
        return _loops.class_bounds(H, W, S)
    Hc = H.transpose(3, 1, 2, 0, 4)
    return pair_bounds(Hc[1] + Hc[0], Hc[1] - Hc[0], W, S)


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
