"""Algorithm 1 of Becker, Christoudias & Fua (NIPS 2013) on binned data, binary labels.

Every iteration: Newton weights ``w = exp(-y f_t(x))`` normalised over ALL tasks together
(never per task), one weak learner with shared split features and leaf values and
task-specific thresholds, one line search for ``alpha`` on the summed exponential loss,
``beta = learning_rate * alpha``. ``f_t`` starts at 0; exactly ``n_estimators`` iterations.

A fitted ensemble is a dict of arrays (``L`` = depth, ``I = 2**L - 1`` internal nodes stored
breadth first, node ``i`` has children ``2i+1`` / ``2i+2``):
``feature`` (K, I), ``threshold`` (K, T, I), ``leaf`` (K, 2**L), ``beta`` (K,),
``train_loss`` (K,) = mean exponential training loss after each iteration.
"""

from __future__ import annotations

import numpy as np

from . import _loops
from ._binning import positions_to_thresholds
from ._splits import class_bounds, exact_pairs, select_stump, stump_errors, stump_split

__all__ = ["ALPHA_MAX", "boost", "decision_function", "decision_function_stages",
           "fit_weak_learner", "line_search_alpha"]

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


class RootCache:
    """Lazy evaluation of the stump search across boosting iterations (exact, not a heuristic).

    A feature's best stump error is the minimum of functions linear in the weights with
    non-negative coefficients (the weighted error of each polarity and position). If every
    current weight is at least ``rho`` times the weight it had when a feature was last
    scanned, the feature's current error is at least ``rho`` times the old one. Between two
    scans ``w_i = exp(-(m_i - mu)) / Z`` with margins that moved by at most
    ``sum_k |beta_k| max|leaf_k|``, which gives ``rho``. Each iteration scans (histograms,
    stump errors) only the features whose bound does not already rule them out: the others
    cannot come within the tie tolerance of the best, so the chosen stump is the one a full
    scan chooses. On 100,000 rows x 50 features about 1 feature in 6 is scanned (8.4 of 50
    per iteration, K = 100). Trees do not use it: ``max|leaf|`` near 1 and larger ``alpha``
    make the bound too loose (45 of 50 features scanned), so their root is a full scan.
    """

    def __init__(self, n_features: int):
        self.value = np.zeros(n_features)          # lower bound when last scanned
        self.stamp = np.zeros((n_features, 3))     # (sum |beta| max|leaf|, mu, log Z) then
        self.moved = 0.0
        self.now = np.zeros(3)

    def set_weights(self, mu: float, log_z: float) -> None:
        self.now = np.array([self.moved, mu, log_z])

    def lower(self) -> np.ndarray:
        """Lower bounds of every feature's current value."""
        d = self.stamp - self.now
        rho = np.exp(d[:, 0] - d[:, 1] + d[:, 2])
        return self.value * rho * (1.0 - 1e-9)

    def update(self, feats: np.ndarray, lower: np.ndarray) -> None:
        self.value[feats] = np.maximum(lower, 0.0)
        self.stamp[feats] = self.now

    def step(self, beta: float, leaf_max: float) -> None:
        self.moved += abs(beta) * leaf_max


def _prepare(codes, codes2):
    """The arrays the kernels read: uint8 codes (numba), ``codes2`` (numpy), the rows'
    class/task offsets ``ct = codes2 - codes``."""
    ct = codes2[0] - codes[0]
    return {"codes": codes, "codes8": codes.astype(np.uint8) if _loops.use_numba() else None,
            "codes2": codes2, "ct": ct}


def _feature_histograms(prep, w, feats, n_tasks, n_bins):
    """(T, F, B) positive- and negative-class histograms of the root for features ``feats``:
    ``np.bincount(codes2[f], weights=w, minlength=2 T B)``, bit for bit."""
    H = _loops.feature_histograms(prep["codes8"], prep["codes2"], prep["ct"], w, feats,
                                    2 * n_tasks * n_bins)
    H = H.reshape(len(feats), n_tasks, 2, n_bins).transpose(2, 1, 0, 3)
    return H[1], H[0]


_FIRST_SCAN = 8      # features scanned first (lowest bounds) before the bound rules out others


def _stump_root(prep, w, T, B, cache):
    """Stump search: (feature, polarity, positions, Hp_f + Hn_f of the feature (T, B))."""
    D = prep["codes"].shape[0]
    if cache is None:
        Hp, Hn = _feature_histograms(prep, w, np.arange(D), T, B)
        f, s, pos, _ = stump_split(Hp, Hn)
        return f, s, pos, Hp[:, f] + Hn[:, f]
    lower = cache.lower()
    E = np.full((2, D), np.inf)
    P = np.zeros((2, T, D), dtype=np.int64)
    Hw = np.empty((T, D, B))
    scanned = np.zeros(D, dtype=bool)
    chunk = np.sort(np.argsort(lower, kind="stable")[:_FIRST_SCAN])
    tol = None
    while chunk.size:
        Hp, Hn = _feature_histograms(prep, w, chunk, T, B)
        e, pos, total = stump_errors(Hp, Hn)
        E[:, chunk], P[:, :, chunk], Hw[:, chunk] = e, pos, Hp + Hn
        scanned[chunk] = True
        if tol is None:    # full scan: 1e-12 * sum over tasks and features of the totals
            tol = 1e-12 * D * float(total[:, 0].sum())
        cache.update(chunk, e.min(axis=0) - tol)
        chunk = np.flatnonzero(~scanned & (lower <= E.min() + tol))
    si, f = select_stump(E, tol)
    return f, 1 - 2 * si, P[si, :, f], Hw[:, f]


def _may_win(upper, floor, W):
    """Pairs whose upper bound (with a rounding margin) reaches ``floor``."""
    return upper * (1 + 1e-9) + 1e-9 * W >= floor


def _pair_hist(H, node, feat):
    """(Hw, Hs) of (node, feature) pairs from class histograms ``H`` (D, A, T, 2, B): the
    sums and differences of the positive and negative histograms, as the reference took
    them."""
    Hp, Hn = H[feat, node, :, 1], H[feat, node, :, 0]
    return Hp + Hn, Hp - Hn


def _totals(H):
    """Node totals ``W, S`` (A,) from feature 0, summed as ``Hw[:, :, 0].sum(axis=(1, 2))``."""
    Hp, Hn = H[0, :, :, 1], H[0, :, :, 0]
    return (Hp + Hn).sum(axis=(1, 2)), (Hp - Hn).sum(axis=(1, 2))


def _level_search(H, W, S, cand):
    """Exact Eq. 6 search over the candidate (node, feature) pairs of one level."""
    D, J = H.shape[:2]
    node, feat = np.nonzero(cand)
    if np.unique(node).size < J:         # cannot happen (a node's best reaches its floor)
        raise RuntimeError("internal error: a node has no candidate split.")
    hw, hs = _pair_hist(H, node, feat)
    feats, pos, gain, _ = exact_pairs(hw, hs, W, S, node, feat, D)
    return feats, pos, gain


#: sibling subtraction below the root of trees (numba path; the numpy path histograms every
#: level in one pass of ``np.bincount``, which a gather of the smaller children's rows
#: does not beat)
_SUBTRACT = True


def _candidates(H, W, S, margin=0.0):
    """(node, feature) pairs whose upper bound reaches the node's feasible split, less the tie
    tolerance and ``margin`` (the error of approximate histograms)."""
    upper, reach = class_bounds(H, W, S)
    margin = np.broadcast_to(margin, W.shape)
    floor = reach - 1e-12 * np.maximum(W, 1e-300) - margin
    cand = _may_win(upper + margin[:, None], floor[:, None], W[:, None])
    cand[np.arange(W.size), np.argmax(upper, axis=1)] = True
    return cand


def _direct_level(prep, w, local_node, active, J, T, B):
    """Histograms of every active node from one pass over the rows (the numpy path)."""
    D = prep["codes"].shape[0]
    local = np.full(J, -1, dtype=np.intp)
    local[active] = np.arange(active.size)
    H = _loops.level_histograms(prep["codes8"], prep["codes2"], prep["ct"],
                                  local[local_node], w, active.size, 2 * T * B)
    H = H.reshape(D, active.size, T, 2, B)
    W, S = _totals(H)
    return H, W, S, _candidates(H, W, S)


class _Subtraction:
    """Histograms of a tree's levels by sibling subtraction, exact where it matters (numba).

    Below the root, each split node's smaller child (by rows) is histogrammed from its rows;
    the larger child's histograms are the parent's minus the smaller's (clipped at 0), which
    is exact in arithmetic but not in floating point. They serve only the bounds, with a
    margin of ``1e-9`` of the total weight (far above the rounding of ``L`` subtractions of
    sums of at most ``B`` bins); the (node, feature) pairs that survive, and feature 0 (the
    node totals), are then histogrammed from the node's rows, so the exact search, the tie
    tolerance and the thresholds see the sums of the direct path bit for bit. A node whose
    parent did not split holds the parent's rows, and the parent's histograms.
    """

    def __init__(self, prep, T, B):
        self.prep, self.T, self.B = prep, T, B
        self.size = 2 * T * B
        self.H = self.exact = self.slot = self.split = None

    def _rows_hist(self, w, node, J, nodes, feats):
        """Exact class histograms (F, len(nodes), T, 2, B) of ``nodes`` (local ids at the
        level of ``J`` nodes)."""
        slot = np.full(J, -1, dtype=np.intp)
        slot[nodes] = np.arange(len(nodes))
        H = _loops.node_histograms(self.prep["codes8"], node, J - 1, slot, self.prep["ct"],
                                     w, feats, self.size)
        return H.reshape(len(feats), len(nodes), self.T, 2, self.B)

    def level(self, w, node, level, cnt, active):
        D = self.prep["codes"].shape[0]
        T, B = self.T, self.B
        J = 2 ** level
        first = J - 1
        A = active.size
        H = np.empty((D, A, T, 2, B))
        exact = np.zeros((A, D), dtype=bool)
        if level == 0:
            H[:] = _loops.feature_histograms(self.prep["codes8"], None, self.prep["ct"], w,
                                               np.arange(D), self.size).reshape(H.shape)
            exact[:] = True
        else:
            parent = (active + first - 1) // 2 - (J // 2 - 1)         # local ids, level - 1
            psplit = self.split[self.slot[parent]]
            # the smaller child of each split parent is histogrammed from its rows
            sib = np.where(active % 2 == 0, active + 1, active - 1)
            small = np.where(cnt[active] < cnt[sib], active,                # ties: the left one
                             np.where(cnt[active] > cnt[sib], sib, np.minimum(active, sib)))
            direct = np.unique(small[psplit])
            Hd = self._rows_hist(w, node, J, direct, np.arange(D)) if direct.size else None
            d_of = np.full(J, -1, dtype=np.intp)
            d_of[direct] = np.arange(direct.size)
            for a, j in enumerate(active):
                ps = self.slot[parent[a]]
                if not psplit[a]:                                    # every row went left
                    H[:, a] = self.H[:, ps]
                    exact[a] = self.exact[ps]
                elif small[a] == j:
                    H[:, a] = Hd[:, d_of[j]]
                    exact[a] = True
                else:
                    np.subtract(self.H[:, ps], Hd[:, d_of[small[a]]], out=H[:, a])
                    np.maximum(H[:, a], 0.0, out=H[:, a])
        W, S = _totals(H)
        approx = ~exact.all(axis=1)
        # exact nodes: no margin; approximate ones: margin, then their surviving pairs and
        # feature 0 from their rows (the candidates of the approximate bounds are a superset)
        cand = _candidates(H, W, S, np.where(approx, 1e-9 * float(w.sum()), 0.0))
        if approx.any():
            need = (cand | (np.arange(D) == 0)[None, :]) & ~exact & approx[:, None]
            feats = np.flatnonzero(need.any(axis=0))
            nodes = np.flatnonzero(approx)
            He = self._rows_hist(w, node, J, active[nodes], feats)
            for i, a in enumerate(nodes):
                H[feats, a] = He[:, i]
                exact[a, feats] = True
            W, S = _totals(H)
        self.H, self.exact = H, exact
        self.slot = np.full(J, -1, dtype=np.intp)
        self.slot[active] = np.arange(A)
        return H, W, S, cand

    def splits(self, nosplit):
        """Record which active nodes of the level just searched split."""
        self.split = ~nosplit


def fit_weak_learner(codes, codes2, task, yf, w, edges, n_edges, frac, *, depth=1,
                     weak_learner="stump", min_samples_split=2, cache=None, prep=None):
    """Line 4 of Algorithm 1: one shared weak learner with per-task thresholds.

    Parameters
    ----------
    codes : (D, n) bin codes; codes2 : ``codes + B * (ypos + 2 * task)``; task : (n,);
    yf : (n,) in {-1., +1.}; w : (n,) weights (summing to 1); edges, n_edges, frac : from
    ``bin_tasks``; depth, weak_learner, min_samples_split : as in ``boost``;
    cache : a :class:`RootCache` carried across the iterations of ``boost`` (lazy stump scan),
    or None (scan every feature); prep : the kernels' arrays (``_prepare``; built if None).

    Returns
    -------
    feature : (2**depth - 1,); threshold : (T, 2**depth - 1); leaf : (2**depth,);
    leaf_index : (n,) the leaf of every training row.

    Notes
    -----
    The search is exact and returns what a scan of every (node, feature) returns: stump
    features the :class:`RootCache` bound rules out, and tree (node, feature) pairs whose
    per-task upper bound (:func:`~shiftlearn.boosting._splits.pair_bounds`) cannot reach
    a split the node already has, are not searched; the others are searched bit for bit as
    in the whole batch (:func:`~shiftlearn.boosting._splits.exact_pairs`).
    """
    D, n = codes.shape
    T, _, B = edges.shape
    L = depth
    I = 2 ** L - 1
    feature = np.zeros(I, dtype=np.int64)
    threshold = np.full((T, I), np.inf)
    node = np.zeros(n, dtype=np.intp)
    if prep is None:
        prep = _prepare(codes, codes2)
    if weak_learner == "stump":
        f, s, pos, hw = _stump_root(prep, w, T, B, cache)
        cw = np.zeros((T, B + 1))
        np.cumsum(hw, axis=1, out=cw[:, 1:])
        pos = _tidy_positions(pos, cw, n_edges[:, f], frac[:, f])
        feature[0] = f
        threshold[:, 0] = positions_to_thresholds(edges[:, f], pos)
        return feature, threshold, np.array([-s, s], float), (codes[f] > pos[task]).astype(np.intp)
    sub = _Subtraction(prep, T, B) if _SUBTRACT and _loops.use_numba() else None
    cnt = np.array([n])                      # rows per node of the level
    for level in range(L):
        J = 2 ** level
        first = J - 1
        # only nodes with at least min_samples_split rows can split: histograms, the Eq. 6
        # search and the loop run over those (at most n of them), so a deep tree costs
        # O(min(2**level, n)) per level, not O(2**level); the others keep the no-split
        # defaults (feature 0, threshold +inf: every row goes left), as they always had.
        active = np.flatnonzero(cnt >= min_samples_split)
        feat_l = np.zeros(J, dtype=np.int64)
        pos_l = np.full((J, T), B - 1, dtype=np.int64)
        if active.size:
            if sub is None:
                H, Wn, Sn, cand = _direct_level(prep, w, node - first, active, J, T, B)
            else:
                H, Wn, Sn, cand = sub.level(w, node, level, cnt, active)
            feats, pos, gain = _level_search(H, Wn, Sn, cand)
            nosplit = gain <= 1e-12 * np.maximum(Wn, 1e-300)
            if sub is not None:
                sub.splits(nosplit)
            for a, j in enumerate(active):
                if nosplit[a]:
                    continue
                f = feats[a]
                cw = np.zeros((T, B + 1))
                np.cumsum(_pair_hist(H, a, f)[0], axis=1, out=cw[:, 1:])
                pos_l[j] = _tidy_positions(pos[a], cw, n_edges[:, f], frac[:, f])
                feat_l[j] = f
                threshold[:, first + j] = positions_to_thresholds(edges[:, f], pos_l[j])
        feature[first:first + J] = feat_l
        node, cnt = _loops.route(prep["codes8"], codes, node, first, feat_l, pos_l, task)
    lf = node - I
    Wl = np.bincount(lf, weights=w, minlength=2 ** L)
    Sl = np.bincount(lf, weights=w * yf, minlength=2 ** L)
    return feature, threshold, np.divide(Sl, Wl, out=np.zeros_like(Sl), where=Wl > 0), lf


def boost(codes: np.ndarray, y: np.ndarray, task: np.ndarray, edges: np.ndarray,
          n_edges: np.ndarray, frac: np.ndarray, *, n_estimators: int = 500,
          learning_rate: float = 0.1, max_depth: int = 1, weak_learner: str = "stump",
          min_samples_split: int = 2, on_iteration=None) -> dict:
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
    on_iteration : callable or None
        Called with no argument after each iteration (a progress bar's ``advance``).

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
    ct = B * (ypos + 2 * task)
    prep = {"codes": codes, "codes2": None if _loops.use_numba() else codes + ct[None, :],
            "codes8": codes.astype(np.uint8) if _loops.use_numba() else None, "ct": ct}
    cache = RootCache(D) if weak_learner == "stump" else None
    for k in range(K):
        mu = margin.min()
        w = np.exp(-(margin - mu))
        z = w.sum()
        w /= z
        if cache is not None:
            cache.set_weights(mu, np.log(z))
        feature[k], threshold[k], leaf[k], node = fit_weak_learner(
            codes, prep["codes2"], task, yf, w, edges, n_edges, frac, depth=L,
            weak_learner=weak_learner, min_samples_split=min_samples_split, cache=cache,
            prep=prep)
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
        if cache is not None:
            cache.step(beta[k], np.abs(leaf[k]).max())
        margin += beta[k] * yf * h
        train_loss[k] = np.mean(np.exp(-margin))
        if on_iteration is not None:
            on_iteration()
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
    iteration at a time (much faster for one-row predictions of a large model).

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
