"""Frozen copy of the multi-task boosting solver as it was before the speed work (commit
2be30fd, ``shiftlearn/boosting/_binning.py``, ``_splits.py`` and ``_core.py`` concatenated, imports
merged). ``tests/test_boosting_speed_equivalence.py`` fits it beside the current solver and asks
for the same models: the optimisations must not change a tree, a threshold or a prediction.
Do not edit it to follow the library: it is the reference.
"""
# ruff: noqa
from __future__ import annotations

import itertools

import numpy as np
from scipy.optimize import isotonic_regression


# -------------------- shiftlearn/boosting/_binning.py
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

# -------------------- shiftlearn/boosting/_splits.py
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

# -------------------- shiftlearn/boosting/_core.py
#: cap of |alpha|: the line search is unbounded when the weak learner separates the data.
ALPHA_MAX = 0.5 * np.log(1e10)


def line_search_alpha(c: np.ndarray, m: np.ndarray, alpha_max: float = ALPHA_MAX) -> float:
    """``argmin_a sum_j c_j exp(-a m_j)`` on ``[-alpha_max, alpha_max]`` (convex; Newton+bisection).

    ``c`` are (aggregated) weights, ``m = y * h`` the margins of the weak learner.

    Examples
    --------
    >>> round(line_search_alpha(np.array([3.0, 1.0]), np.array([1.0, -1.0])), 6)  # 0.5 ln 3
    0.549306
    """
    c, m = np.asarray(c, float), np.asarray(m, float)
    keep = (c > 0) & (m != 0)
    c, m = c[keep], m[keep]
    if c.size == 0:
        return 0.0

    def d1(a):
        return -np.sum(c * m * np.exp(-a * m))

    lo, hi = -alpha_max, alpha_max
    if d1(hi) <= 0:
        return hi
    if d1(lo) >= 0:
        return lo
    a = 0.0
    for _ in range(100):
        e = np.exp(-a * m)
        g = -np.sum(c * m * e)
        if g > 0:
            hi = a
        else:
            lo = a
        h = np.sum(c * m * m * e)
        step = a - g / h if h > 0 else np.nan
        a_new = step if lo < step < hi else 0.5 * (lo + hi)
        if abs(a_new - a) <= 1e-12 * max(1.0, abs(a)):
            return float(a_new)
        a = a_new
    return float(a)


def _histograms(codes2, w, node, n_nodes, n_tasks, n_bins):
    """(J, T, D, B) positive- and negative-class weight histograms, one bincount per feature.

    ``codes2 = codes + n_bins * (ypos + 2 * task)`` (precomputed); ``node`` (n,) local node ids.
    """
    D = codes2.shape[0]
    size = 2 * n_tasks * n_nodes * n_bins
    H = np.empty((D, size))
    if n_nodes == 1:
        for f in range(D):
            H[f] = np.bincount(codes2[f], weights=w, minlength=size)
    else:
        off = (2 * n_tasks * n_bins) * node
        for f in range(D):
            H[f] = np.bincount(codes2[f] + off, weights=w, minlength=size)
    H = H.reshape(D, n_nodes, n_tasks, 2, n_bins).transpose(3, 1, 2, 0, 4)
    return H[1], H[0]


def _tidy_positions(pos, cw_node, n_edges_f, frac_f):
    """Choose among equivalent split positions and fill tasks absent from a node.

    ``pos`` (T,), ``cw_node`` (T, B+1) cumulative weights of the node's rows for the split
    feature, ``n_edges_f`` (T,), ``frac_f`` (T, B+1) root quantiles. Positions with the same
    cumulative weight give the same training split; take the middle of that run (a threshold
    midway through an empty stretch). A task with no weight at the node takes the position at
    the same marginal quantile as the heaviest task (quantile matching).
    """
    T = pos.size
    out = pos.copy()
    tot = cw_node[:, -1]
    for t in range(T):
        if tot[t] <= 0:
            continue
        cw = cw_node[t, :n_edges_f[t] + 2]
        v = cw[min(pos[t] + 1, cw.size - 1)]
        lo = np.searchsorted(cw, v, side="left")
        hi = np.searchsorted(cw, v, side="right") - 1
        out[t] = (lo + hi) // 2 - 1
    if np.any(tot <= 0) and np.any(tot > 0):
        r = int(np.argmax(tot))
        q = frac_f[r, out[r] + 1]
        for t in np.flatnonzero(tot <= 0):
            fr = frac_f[t, :n_edges_f[t] + 2]
            out[t] = int(np.argmin(np.abs(fr - q))) - 1
    return out


def fit_weak_learner(codes, codes2, task, yf, w, edges, n_edges, frac, *, depth=1,
                     weak_learner="stump", min_samples_split=2):
    """Line 4 of Algorithm 1: one shared weak learner with per-task thresholds.

    Parameters
    ----------
    codes : (D, n) bin codes; codes2 : ``codes + B * (ypos + 2 * task)``; task : (n,);
    yf : (n,) in {-1., +1.}; w : (n,) weights (summing to 1); edges, n_edges, frac : from
    ``bin_tasks``; depth, weak_learner, min_samples_split : as in ``boost``.

    Returns
    -------
    feature : (2**depth - 1,); threshold : (T, 2**depth - 1); leaf : (2**depth,);
    leaf_index : (n,) the leaf of every training row.
    """
    D, n = codes.shape
    T, _, B = edges.shape
    L = depth
    I = 2 ** L - 1
    feature = np.zeros(I, dtype=np.int64)
    threshold = np.full((T, I), np.inf)
    node = np.zeros(n, dtype=np.intp)
    if weak_learner == "stump":
        Hp, Hn = _histograms(codes2, w, node, 1, T, B)
        f, s, pos, _ = stump_split(Hp[0], Hn[0])
        cw = np.zeros((T, B + 1))
        np.cumsum(Hp[0, :, f] + Hn[0, :, f], axis=1, out=cw[:, 1:])
        pos = _tidy_positions(pos, cw, n_edges[:, f], frac[:, f])
        feature[0] = f
        threshold[:, 0] = positions_to_thresholds(edges[:, f], pos)
        return feature, threshold, np.array([-s, s], float), (codes[f] > pos[task]).astype(np.intp)
    cols = np.arange(n)
    for level in range(L):
        J = 2 ** level
        first = J - 1
        # only nodes with at least min_samples_split rows can split: histograms, the Eq. 6
        # search and the loop run over those (at most n of them), so a deep tree costs
        # O(min(2**level, n)) per level, not O(2**level); the others keep the no-split
        # defaults (feature 0, threshold +inf: every row goes left), as they always had.
        cnt = np.bincount(node - first, minlength=J)
        active = np.flatnonzero(cnt >= min_samples_split)
        feat_l = np.zeros(J, dtype=np.int64)
        pos_l = np.full((J, T), B - 1, dtype=np.int64)
        if active.size:
            local = np.full(J, -1, dtype=np.intp)
            local[active] = np.arange(active.size)
            jrow = local[node - first]
            rows = jrow >= 0
            A = active.size
            if rows.all():
                Hp, Hn = _histograms(codes2, w, jrow, A, T, B)
            else:
                Hp, Hn = _histograms(codes2[:, rows], w[rows], jrow[rows], A, T, B)
            Hw, Hs = Hp + Hn, Hp - Hn
            feats, pos, gain = tree_split_exact(Hw, Hs)
            Wn = Hw[:, :, 0].sum(axis=(1, 2))
            nosplit = gain <= 1e-12 * np.maximum(Wn, 1e-300)
            for a, j in enumerate(active):
                if nosplit[a]:
                    continue
                f = feats[a]
                cw = np.zeros((T, B + 1))
                np.cumsum(Hw[a, :, f], axis=1, out=cw[:, 1:])
                pos_l[j] = _tidy_positions(pos[a], cw, n_edges[:, f], frac[:, f])
                feat_l[j] = f
                threshold[:, first + j] = positions_to_thresholds(edges[:, f], pos_l[j])
        feature[first:first + J] = feat_l
        jj = node - first
        right = codes[feat_l[jj], cols] > pos_l[jj, task]
        node = 2 * node + 1 + right
    lf = node - I
    Wl = np.bincount(lf, weights=w, minlength=2 ** L)
    Sl = np.bincount(lf, weights=w * yf, minlength=2 ** L)
    return feature, threshold, np.divide(Sl, Wl, out=np.zeros_like(Sl), where=Wl > 0), lf


def boost(codes: np.ndarray, y: np.ndarray, task: np.ndarray, edges: np.ndarray,
          n_edges: np.ndarray, frac: np.ndarray, *, n_estimators: int = 500,
          learning_rate: float = 0.1, max_depth: int = 1, weak_learner: str = "stump",
          min_samples_split: int = 2) -> dict:
    """Run Algorithm 1 on binned data.

    Parameters
    ----------
    codes : ndarray (D, n) of bin codes (from ``bin_tasks``)
    y : ndarray (n,) in {-1, +1}
    task : ndarray (n,) of task indices 0..T-1
    edges, n_edges, frac : from ``bin_tasks``
    weak_learner : "stump" (one split, outputs +-1, shared polarity; needs ``max_depth=1``) or
        "tree" (depth ``max_depth`` regression tree, shared leaf values = weighted means,
        split per node by the exact Eq. 6 solver)

    Returns
    -------
    dict with ``feature``, ``threshold``, ``leaf``, ``beta``, ``train_loss``, ``depth``.

    Examples
    --------
    >>> from shiftlearn.boosting._binning import bin_tasks
    >>> X = np.array([[0.0], [1.0], [2.0], [3.0]]); y = np.array([-1, -1, 1, 1])
    >>> t = np.zeros(4, dtype=int)
    >>> ens = boost(*bin_tasks(X, t, 1)[:1], y, t, *bin_tasks(X, t, 1)[1:], n_estimators=3)
    >>> ens["threshold"][0, 0].tolist(), ens["leaf"][0].tolist()
    ([1.5], [-1.0, 1.0])
    """
    if weak_learner == "stump" and max_depth != 1:
        raise ValueError("weak_learner='stump' needs max_depth=1.")
    D, n = codes.shape
    T = int(task.max()) + 1
    B = edges.shape[-1]
    L = max_depth
    I = 2 ** L - 1
    K = n_estimators
    ypos = (y > 0).astype(np.intp)
    yf = np.where(y > 0, 1.0, -1.0)
    feature = np.zeros((K, I), dtype=np.int64)
    threshold = np.full((K, T, I), np.inf)
    leaf = np.zeros((K, 2 ** L))
    beta = np.zeros(K)
    train_loss = np.zeros(K)
    margin = np.zeros(n)                     # y * f_t(x) on the training rows
    codes2 = codes + (B * (ypos + 2 * task))[None, :]
    for k in range(K):
        w = np.exp(-(margin - margin.min()))
        w /= w.sum()
        feature[k], threshold[k], leaf[k], node = fit_weak_learner(
            codes, codes2, task, yf, w, edges, n_edges, frac, depth=L,
            weak_learner=weak_learner, min_samples_split=min_samples_split)
        h = leaf[k][node]
        if weak_learner == "stump":
            wc = w[yf * h > 0].sum()
            eps = min(max(1.0 - wc, 1e-10), 1 - 1e-10)
            alpha = 0.5 * np.log((1 - eps) / eps)
        else:
            # aggregate the weights by (leaf, class): the line search then costs O(2^L)
            grp = 2 * node + ypos
            c = np.bincount(grp, weights=w, minlength=2 ** (L + 1))
            lv = np.repeat(leaf[k], 2) * np.tile([-1.0, 1.0], 2 ** L)
            alpha = line_search_alpha(c, lv)
        beta[k] = learning_rate * alpha
        margin += beta[k] * yf * h
        train_loss[k] = np.mean(np.exp(-margin))
    return {"feature": feature, "threshold": threshold, "leaf": leaf, "beta": beta,
            "train_loss": train_loss, "depth": L}


def decision_function_stages(X: np.ndarray, task: np.ndarray, ens: dict):
    """Yield ``f_t(x)`` after each iteration, each row with its task's thresholds.

    Parameters
    ----------
    X : ndarray (n, D); task : ndarray (n,) task indices; ens : from ``boost``
    """
    n = X.shape[0]
    rows = np.arange(n)
    f = np.zeros(n)
    L = ens["depth"]
    I = 2 ** L - 1
    for k in range(ens["beta"].size):
        node = np.zeros(n, dtype=np.intp)
        feat, thr = ens["feature"][k], ens["threshold"][k]
        for _ in range(L):
            node = 2 * node + 1 + (X[rows, feat[node]] >= thr[task, node])
        f = f + ens["beta"][k] * ens["leaf"][k][node - I]
        yield f


def decision_function(X: np.ndarray, task: np.ndarray, ens: dict,
                      block: int = 1 << 21) -> np.ndarray:
    """``f_t(x)`` after the last iteration: the last value of :func:`decision_function_stages`,
    bit for bit (same products, added in the same order), with every tree of a row block
    traversed at once (``(rows, K)`` arrays of about ``block`` entries) instead of one
    iteration at a time: one-row predictions of a 500-tree model are 9-15x faster (0.9 vs
    7.8 ms for stumps, 1.1 vs 16 ms at depth 3).

    Examples
    --------
    >>> from shiftlearn.boosting._binning import bin_tasks
    >>> X = np.array([[0.0], [1.0], [2.0], [3.0]]); y = np.array([-1, -1, 1, 1])
    >>> t = np.zeros(4, dtype=int)
    >>> codes, edges, n_edges, frac = bin_tasks(X, t, 1)
    >>> ens = boost(codes, y, t, edges, n_edges, frac, n_estimators=5)
    >>> bool(np.array_equal(decision_function(X, t, ens),
    ...                     list(decision_function_stages(X, t, ens))[-1]))
    True
    """
    n = X.shape[0]
    beta, leaf = ens["beta"], ens["leaf"]
    feature, threshold = ens["feature"], ens["threshold"]
    K, L = beta.size, ens["depth"]
    I = 2 ** L - 1
    ks = np.arange(K)[None, :]
    f = np.zeros(n)
    step = max(1, block // max(K, 1))
    for start in range(0, n, step):
        sl = slice(start, min(start + step, n))
        Xb, tb = X[sl], task[sl][:, None]
        node = np.zeros((Xb.shape[0], K), dtype=np.intp)
        for _ in range(L):
            x = np.take_along_axis(Xb, feature[ks, node], axis=1)
            node = 2 * node + 1 + (x >= threshold[ks, tb, node])
        vals = beta[None, :] * leaf[ks, node - I]
        fb = np.zeros(Xb.shape[0])
        for k in range(K):          # the staged order of additions: identical values
            fb = fb + vals[:, k]
        f[sl] = fb
    return f
