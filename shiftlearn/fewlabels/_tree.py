"""A depth-limited weighted least-squares regression tree grown from one sort of the rows, for
boosting loops that refit the same rows many times with new weights.

It grows the tree of ``sklearn.tree.DecisionTreeRegressor(max_depth=D)`` (squared error, the
best split over every feature, ``min_samples_split=2``, ``min_samples_leaf=1``): the same
float32 features, the same candidate positions (none between values within ``1e-7`` of each
other, in float32), the same proxy ``S_l^2 / W_l + S_r^2 / W_r``, the same midpoint thresholds,
rows of weight 0 left out, a node with impurity ``<= eps`` or fewer than two rows a leaf.
Two things differ: between features whose best splits score exactly alike the lowest index
wins (scikit-learn draws the order of the features), and sums are added in another order, so
two splits that differ in the last bits of their scores may be ranked the other way round.

Cost: one ``O(n d log n)`` sort per set of rows (:class:`Presorted`), then ``O(n d)`` per
level of each tree (each node's rows kept sorted by filtering its parent's); scikit-learn
sorts every node's rows along every feature at every fit. The split search is compiled by
numba when installed; the numpy path returns the same trees bit for bit (each feature's
running sums added in sorted order by both), at about scikit-learn's speed. Why:
``docs/dev/fewlabels.md``.
"""

from __future__ import annotations

import numpy as np

from .._numba import HAVE_NUMBA, numba, use_numba

__all__ = ["Presorted", "LeastSquaresTree", "presorted_depth"]

#: scikit-learn's ``FEATURE_THRESHOLD`` (float32): no split between values this close
_FEATURE_THRESHOLD = np.float32(1e-7)
#: the deepest tree grown here: its nodes are bookkept in Python, so scikit-learn grows deeper
#: ones faster (docs/dev/fewlabels.md)
_MAX_DEPTH = 8
#: scikit-learn's ``EPSILON`` of the tree builder: a node this pure is a leaf
_EPS = float(np.finfo(np.float64).eps)


class Presorted:
    """The rows ``X`` as float32 (what scikit-learn's trees split on) and, per column, the row
    order that sorts it. Cost: ``O(n d log n)`` time, ``n d`` float32 and ``n d`` intp."""

    def __init__(self, X: np.ndarray):
        with np.errstate(over="ignore"):        # an overflow is the refusal below
            self.X = np.ascontiguousarray(X, dtype=np.float32)
        if not np.all(np.isfinite(self.X)):
            raise ValueError("The features hold values too large for float32 (|x| above "
                             "3.4e38), which regression trees split on; rescale them.")
        self.order = np.ascontiguousarray(np.argsort(self.X, axis=0, kind="stable"))


def _search_py(X, order, y, w, node_of, W, S, ftol, best, feat, thr):  # pragma: no cover
    """Best split of every node of one level (the body numba compiles): ``node_of[r]`` the
    row's node at this level (-1: in none searched), ``W, S`` the nodes' total weight and
    weighted label sum; writes ``best, feat, thr`` per node."""
    K = W.shape[0]
    n, d = X.shape
    wl = np.zeros(K)
    sl = np.zeros(K)
    last = np.zeros(K, dtype=np.float32)
    seen = np.zeros(K, dtype=np.bool_)
    for j in range(d):
        wl[:] = 0.0
        sl[:] = 0.0
        seen[:] = False
        for i in range(n):
            r = order[i, j]
            k = node_of[r]
            if k < 0:
                continue
            x = X[r, j]
            if seen[k] and x > last[k] + ftol:
                wr = W[k] - wl[k]
                sr = S[k] - sl[k]
                p = sl[k] * sl[k] / wl[k] + sr * sr / wr
                if p > best[k]:
                    best[k] = p
                    feat[k] = j
                    thr[k] = np.float64(last[k]) / 2.0 + np.float64(x) / 2.0
            wl[k] += w[r]
            sl[k] += w[r] * y[r]
            last[k] = x
            seen[k] = True


if HAVE_NUMBA:  # pragma: no branch
    _search_nb = numba.njit(cache=True, nogil=True, error_model="numpy")(_search_py)


def _restrict(sub: np.ndarray, mask: np.ndarray, m: int) -> np.ndarray:
    """The rows of ``sub`` (each column's rows in sorted order) that ``mask`` keeps, ``m`` of
    them, still sorted: ``O(n_sub d)``."""
    return np.ascontiguousarray(sub.T[mask[sub].T].reshape(sub.shape[1], m).T)


def _search_np(X, subs, y, w, W, S, ftol, best, feat, thr):
    """:func:`_search_py` in numpy, node by node on each node's own sorted rows ``subs[k]``
    (``O(n d)`` per level in all): the same running sums (``np.cumsum`` adds in order), the
    same first best position and feature."""
    d = X.shape[1]
    cols = np.arange(d)
    for k, sub in enumerate(subs):             # each holds at least two rows
        xs = X[sub, cols]
        ws = w[sub]
        cl = np.cumsum(ws, axis=0)[:-1]
        cs = np.cumsum(ws * y[sub], axis=0)[:-1]
        sr = S[k] - cs
        with np.errstate(divide="ignore", invalid="ignore"):
            p = cs * cs / cl + sr * sr / (W[k] - cl)
        ok = (xs[1:] > xs[:-1] + ftol) & ~np.isnan(p)
        p = np.where(ok, p, -np.inf)
        pos = np.argmax(p, axis=0)
        val = p[pos, cols]
        j = int(np.argmax(val))
        if val[j] > best[k]:
            best[k] = val[j]
            feat[k] = j
            thr[k] = np.float64(xs[pos[j], j]) / 2.0 + np.float64(xs[pos[j] + 1, j]) / 2.0


def presorted_depth(est) -> int | bool:
    """``est``'s ``max_depth`` when :class:`LeastSquaresTree` grows its trees (``est`` is
    ``None``: depth 3, or a ``DecisionTreeRegressor`` with scikit-learn's defaults but for
    ``random_state`` and a ``max_depth`` of at most ``_MAX_DEPTH``), else ``False``."""
    from sklearn.tree import DecisionTreeRegressor

    if est is None:
        return 3
    if type(est) is not DecisionTreeRegressor:
        return False
    params, default = est.get_params(), DecisionTreeRegressor().get_params()
    if any(params[k] != v for k, v in default.items() if k not in ("max_depth", "random_state")):
        return False
    depth = params["max_depth"]
    if depth is None or not (isinstance(depth, int | np.integer) and 1 <= depth <= _MAX_DEPTH):
        return False        # deep trees: scikit-learn's; below 1: its fit refuses it
    return int(depth)


def _seq_sum(a: np.ndarray) -> float:
    """The sum of ``a`` added in order (``np.sum`` adds pairwise)."""
    return float(np.cumsum(a)[-1]) if a.size else 0.0


class LeastSquaresTree:
    """A fitted tree: ``feature_`` (-1 at leaves), ``threshold_``, ``left_``, ``right_``,
    ``value_`` per node, node 0 the root; ``fit_predictions_`` its predictions on the rows it
    was grown on.

    Parameters
    ----------
    max_depth : int >= 1
        The deepest level (the root is level 0).
    """

    def __init__(self, max_depth: int):
        self.max_depth = max_depth

    def fit(self, rows: Presorted, y: np.ndarray, sample_weight: np.ndarray):
        """Grow the tree on ``rows`` with labels ``y`` and non-negative weights (float64)."""
        X, order = rows.X, rows.order
        y = np.ascontiguousarray(y, dtype=np.float64)
        w = np.ascontiguousarray(sample_weight, dtype=np.float64)
        compiled = use_numba()
        n = X.shape[0]
        feature, threshold, left, right, value = [], [], [], [], []

        def new_node(idx, sub):
            """A node's record ``(id, rows, W, S, impurity, sorted rows)``; the sorted rows
            only where numpy searches (numba walks the whole order)."""
            ww, wy = w[idx], w[idx] * y[idx]
            Wk, Sk, Qk = _seq_sum(ww), _seq_sum(wy), _seq_sum(wy * y[idx])
            for lst, v in ((feature, -1), (threshold, -2.0), (left, -1), (right, -1),
                           (value, Sk / Wk if Wk > 0 else 0.0)):
                lst.append(v)
            imp = Qk / Wk - (Sk / Wk) ** 2 if Wk > 0 else 0.0
            return len(value) - 1, idx, Wk, Sk, imp, sub

        def rows_of(parent_sub, idx):
            if compiled:
                return None
            mask = np.zeros(n, dtype=bool)
            mask[idx] = True
            return _restrict(parent_sub, mask, idx.size)

        root_idx = np.flatnonzero(w > 0)
        root = new_node(root_idx, rows_of(order, root_idx))
        W_root = root[2]
        level = [root]
        depth = 0
        while level:
            grow = [nd for nd in level
                    if depth < self.max_depth and nd[1].size >= 2 and nd[4] > _EPS]
            if not grow:
                break
            K = len(grow)
            best, feat = np.full(K, -np.inf), np.full(K, -1, dtype=np.intp)
            thr = np.zeros(K)
            W, S = np.array([nd[2] for nd in grow]), np.array([nd[3] for nd in grow])
            if compiled:
                node_of = np.full(n, -1, dtype=np.intp)
                for k, nd in enumerate(grow):
                    node_of[nd[1]] = k
                _search_nb(X, order, y, w, node_of, W, S, _FEATURE_THRESHOLD, best, feat, thr)
            else:
                _search_np(X, [nd[5] for nd in grow], y, w, W, S, _FEATURE_THRESHOLD, best,
                           feat, thr)
            level = []
            for k, (nid, idx, Wk, _, imp, sub) in enumerate(grow):
                if feat[k] < 0:
                    continue
                go_left = X[idx, feat[k]] <= thr[k]
                li, ri = idx[go_left], idx[~go_left]
                lo, hi = new_node(li, rows_of(sub, li)), new_node(ri, rows_of(sub, ri))
                gain = Wk / W_root * (imp - hi[2] / Wk * hi[4] - lo[2] / Wk * lo[4])
                if gain + _EPS < 0:        # scikit-learn's test: not a split after all
                    for lst in (feature, threshold, left, right, value):
                        del lst[-2:]
                    continue
                feature[nid], threshold[nid] = int(feat[k]), float(thr[k])
                left[nid], right[nid] = lo[0], hi[0]
                level += [lo, hi]
            depth += 1
        self.depth_ = depth
        self.feature_ = np.asarray(feature, dtype=np.intp)
        self.threshold_ = np.asarray(threshold)
        self.left_ = np.asarray(left, dtype=np.intp)
        self.right_ = np.asarray(right, dtype=np.intp)
        self.value_ = np.asarray(value)
        self.fit_predictions_ = self._predict32(X)
        return self

    def _predict32(self, X32: np.ndarray) -> np.ndarray:
        node = np.zeros(X32.shape[0], dtype=np.intp)
        rows = np.arange(X32.shape[0])
        for _ in range(self.depth_):
            f = self.feature_[node]
            inner = f >= 0
            if not inner.any():
                break
            r, nd = rows[inner], node[inner]
            go_left = X32[r, f[inner]] <= self.threshold_[nd]
            node[inner] = np.where(go_left, self.left_[nd], self.right_[nd])
        return self.value_[node]

    def predict(self, X: np.ndarray) -> np.ndarray:
        """The leaf values of the rows ``X`` (cast to float32, as scikit-learn's trees do)."""
        return self._predict32(np.asarray(X, dtype=np.float32))
