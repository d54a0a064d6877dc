"""The inner loops of multi-task boosting: compiled by numba when installed, numpy otherwise.

numba is an optional dependency (``pip install shiftlearn[speed]``): without it the same
functions run in numpy, and both paths return the same arrays bit for bit (the loops add each
bin's weights in row order, as ``np.bincount`` does; no fast-math), so a model does not depend
on whether numba is installed. ``SHIFTLEARN_NUMBA=0`` switches the compiled loops off. The
exact tree split search (:func:`pair_gains`, the body of ``_splits.exact_pairs``) is compiled
too and agrees with the numpy path bit for bit. Why compiled loops: ``docs/dev/boosting.md``.

Layout: a row's histogram slot is ``key[i] + code[f, i]`` with
``key = node * 2 T B + B * (ypos + 2 * task)`` (``-1``: the row is in no searched node), the
layout of ``codes2 = codes + B * (ypos + 2 * task)`` in ``_core``.
"""

from __future__ import annotations

import sys
import threading
import types
from contextlib import contextmanager
from functools import partial

import numpy as np

from .._numba import HAVE_NUMBA, numba, use_numba

#: the loop over groups of four features: ``numba.prange`` (a plain ``range`` in the serial
#: build and in Python)
_prange = numba.prange if HAVE_NUMBA else range

__all__ = ["HAVE_NUMBA", "class_bounds", "feature_histograms", "level_histograms", "route",
           "node_histograms", "pair_gains", "threads", "use_numba"]

_LOCAL = threading.local()      # the calling thread's thread count for the histogram loops


@contextmanager
def threads(n: int):
    """Run the histogram loops of this thread on ``n`` numba threads inside the block.

    ``n = 1`` (the default outside any block) calls the serial builds: no thread pool is
    started, which keeps numba's threading layer out of single-threaded fits (its
    ``workqueue`` fallback must not be entered by two Python threads at once). ``n > 1``
    (capped at numba's thread count: on one core the serial builds run) calls the parallel
    builds with ``numba.set_num_threads(n)``; the histograms are the same
    bit for bit (each feature summed in row order by one thread).
    """
    n = min(int(n), numba.config.NUMBA_NUM_THREADS) if HAVE_NUMBA else 1
    if n <= 1:
        yield
        return
    old_n, old_numba = getattr(_LOCAL, "n", 1), numba.get_num_threads()
    numba.set_num_threads(n)
    _LOCAL.n = n
    try:
        yield
    finally:
        _LOCAL.n = old_n
        numba.set_num_threads(old_numba)


def _parallel() -> bool:
    return getattr(_LOCAL, "n", 1) > 1


def _sweep_py(codes, feats, k, rows, key, m, w, H):      # pragma: no cover - compiled below
    """Add ``w[r]`` at ``key[q] + codes[f, r]`` of ``H[f]`` for the features ``feats[k:k+4]``
    (fewer at the end), ``r = rows[q]`` (``q`` itself where ``rows`` is None) for ``q < m``,
    in order, keys ``< 0`` skipped: one sweep of the rows for four features."""
    F = feats.size
    if k + 3 < F:
        c0, c1, c2, c3 = codes[feats[k]], codes[feats[k + 1]], codes[feats[k + 2]], \
            codes[feats[k + 3]]
        h0, h1, h2, h3 = H[k], H[k + 1], H[k + 2], H[k + 3]
        for q in range(m):
            r = q if rows is None else rows[q]
            b = key[q]
            if b < 0:
                continue
            wi = w[r]
            h0[b + c0[r]] += wi
            h1[b + c1[r]] += wi
            h2[b + c2[r]] += wi
            h3[b + c3[r]] += wi
    else:
        for kk in range(k, F):
            c, h = codes[feats[kk]], H[kk]
            for q in range(m):
                r = q if rows is None else rows[q]
                b = key[q]
                if b >= 0:
                    h[b + c[r]] += w[r]


def _hist_py(codes, feats, key, w, nbins):           # pragma: no cover - compiled below
    """H[k] = histogram of feature ``feats[k]``: ``H[k, key[i] + codes[f, i]] += w[i]``,
    rows in order, rows with ``key < 0`` skipped; four features per sweep of the rows (the
    groups of four are independent: ``prange`` spreads them over threads in the parallel
    build, each feature's sums still in row order)."""
    F = feats.size
    H = np.zeros((F, nbins))
    for g in _prange((F + 3) // 4):
        _sweep(codes, feats, 4 * g, None, key, key.size, w, H)
    return H


def _hist_nodes_py(codes, feats, node, first, slot, ct, w, size, n_chunks):  # pragma: no cover
    """``_hist_py`` over the rows whose node (``node - first``) has a ``slot >= 0``, at
    ``slot * size + ct`` (rows and keys found first, in ``n_chunks`` contiguous chunks of rows
    that each count their rows and then write them at their offset, so the rows stay in
    order; then four features per sweep; chunks and feature groups over threads in the
    parallel build)."""
    n = node.size
    rows = np.empty(n, dtype=np.intp)
    key = np.empty(n, dtype=np.intp)
    step = (n + n_chunks - 1) // n_chunks
    start = np.zeros(n_chunks, dtype=np.intp)
    for c in _prange(n_chunks - 1):          # the last chunk's count is not needed
        m = 0
        for i in range(c * step, min(n, (c + 1) * step)):
            if slot[node[i] - first] >= 0:
                m += 1
        start[c + 1] = m
    for c in range(1, n_chunks):
        start[c] += start[c - 1]
    end = np.zeros(n_chunks, dtype=np.intp)
    for c in _prange(n_chunks):
        m = start[c]
        for i in range(c * step, min(n, (c + 1) * step)):
            s = slot[node[i] - first]
            if s >= 0:
                rows[m] = i
                key[m] = s * size + ct[i]
                m += 1
        end[c] = m
    F = feats.size
    H = np.zeros((F, (slot.max() + 1) * size))
    for g in _prange((F + 3) // 4):
        _sweep(codes, feats, 4 * g, rows, key, end[n_chunks - 1], w, H)
    return H


def _route_py(codes, node, first, feat, pos, task, out):   # pragma: no cover - compiled below
    """``out[i] = 2 node + 1 + (code of the node's feature > the node's task position)``;
    returns the row counts of the next level's nodes too."""
    J = feat.size
    cnt = np.zeros(2 * J, dtype=np.intp)
    for i in range(node.size):
        j = node[i] - first
        right = codes[feat[j], i] > pos[j, task[i]]
        out[i] = 2 * node[i] + 1 + right
        cnt[2 * j + right] += 1
    return out, cnt


def _bounds_py(H, W, S):                      # pragma: no cover - compiled below
    """``pair_bounds`` in one sweep of the bins (see ``_splits.pair_bounds``), from the class
    histograms ``H`` (D, J, T, 2, B); the (node, feature) pairs over threads in the parallel
    build (each pair's values computed alone, the node maxima taken after, in order)."""
    D, J, T, _, B = H.shape
    upper = np.zeros((J, D))
    gfeas = np.empty((J, D))
    for jf in _prange(J * D):
        j = jf // D
        f = jf - j * D
        ub = 0.0
        wl = 0.0
        sl = 0.0
        for t in range(T):
            wt = 0.0
            st = 0.0
            for b in range(B):
                wt += H[f, j, t, 1, b] + H[f, j, t, 0, b]
                st += H[f, j, t, 1, b] - H[f, j, t, 0, b]
            cw = 0.0
            cs = 0.0
            best = -np.inf
            bw = 0.0
            bs = 0.0
            for b in range(B):
                cw += H[f, j, t, 1, b] + H[f, j, t, 0, b]
                cs += H[f, j, t, 1, b] - H[f, j, t, 0, b]
                g = cs * cs / cw if cw > 1e-300 else 0.0
                if wt - cw > 1e-300:
                    g += (st - cs) * (st - cs) / (wt - cw)
                if g > best:
                    best = g
                    bw = cw
                    bs = cs
            ub += best
            wl += bw
            sl += bs
        upper[j, f] = ub
        g = sl * sl / wl if wl > 1e-300 else 0.0
        if W[j] - wl > 1e-300:
            g += (S[j] - sl) * (S[j] - sl) / (W[j] - wl)
        gfeas[j, f] = g
    reach = np.full(J, -np.inf)
    for j in range(J):
        for f in range(D):
            if gfeas[j, f] > reach[j]:
                reach[j] = gfeas[j, f]
    return upper, reach


def _gains_py(hw, hs, Wp, Sp, base, n_rows, G, order):    # pragma: no cover - compiled below
    """``G`` and ``order`` of :func:`~shiftlearn.boosting._splits.exact_pairs` for every
    (side, pair), in the operations of its numpy path: the per-task antitonic fit (PAVA on
    the reversed weighted bins, the batch's offset ``4 (n_rows - 1 - row)`` added before and
    taken off after, as ``scipy.optimize.isotonic_regression`` on the whole batch sees it;
    zero-weight bins forward-filled, then a running minimum), the stable sort of the fitted
    slopes, the prefix sums in sorted order and the gains at the ends of equal slopes. One
    (side, pair) per iteration: the parallel build spreads them over threads."""
    P, T, B = hw.shape
    M = T * B
    for q in _prange(2 * P):
        side = q // P
        p = q - side * P
        sgn = 1.0 - 2.0 * side
        keys = np.empty(M)
        xs = np.empty(B)
        ws = np.empty(B)
        bw = np.empty(B)
        bx = np.empty(B)
        bend = np.empty(B + 1, dtype=np.intp)
        for t in range(T):
            off = 4.0 * (n_rows - 1 - (base[side, p] + t))
            # the bins with weight, last to first (the reversed order of the decreasing fit)
            n = 0
            for b in range(B - 1, -1, -1):
                w = hw[p, t, b]
                if w > 0:
                    r = hs[p, t, b] / w
                    r = min(max(r, -1.0), 1.0)
                    xs[n] = sgn * r + off
                    ws[n] = w
                    n += 1
            # increasing PAVA, pooling ties (Busing 2022, as scipy): block k holds the bins
            # [bend[k], bend[k + 1]) of the reversed order, value bx[k], weight bw[k]
            nb = 0
            bend[0] = 0
            i = 0
            while i < n:
                xb = xs[i]
                wb = ws[i]
                if nb > 0 and bx[nb - 1] >= xb:
                    nb -= 1
                    sb = bw[nb] * bx[nb] + wb * xb
                    wb += bw[nb]
                    xb = sb / wb
                    while i < n - 1 and xb >= xs[i + 1]:
                        i += 1
                        sb += ws[i] * xs[i]
                        wb += ws[i]
                        xb = sb / wb
                    while nb > 0 and bx[nb - 1] >= xb:
                        nb -= 1
                        sb += bw[nb] * bx[nb]
                        wb += bw[nb]
                        xb = sb / wb
                bx[nb] = xb
                bw[nb] = wb
                nb += 1
                i += 1
                bend[nb] = i
            # each weighted bin takes its block's value less the offset
            k = 0
            for i in range(n):
                while bend[k + 1] <= i:
                    k += 1
                xs[i] = bx[k] - off
            # forward fill over the zero-weight bins (2.0 before the first), running minimum
            last = 2.0
            run = 2.0
            i = n
            for b in range(B):
                if hw[p, t, b] > 0:
                    i -= 1
                    last = xs[i]
                run = min(run, last)
                keys[t * B + b] = -run
        o = np.argsort(keys, kind="mergesort")
        wl = 0.0
        sl = 0.0
        for k in range(M):
            j = o[k]
            t = j // B
            b = j - t * B
            if k == 0:
                wl = hw[p, t, b]
                sl = sgn * hs[p, t, b]
            else:
                wl += hw[p, t, b]
                sl += sgn * hs[p, t, b]
            s2 = sl * -1.0 if side == 1 else sl
            wr = Wp[p] - wl
            sr = Sp[p] - s2
            g = s2 * s2 / wl if wl > 1e-300 else 0.0
            g += sr * sr / wr if wr > 1e-300 else 0.0
            if k < M - 1 and keys[j] == keys[o[k + 1]]:
                g = -np.inf
            G[side, p, k] = g
            order[side, p, k] = j


def _renamed(func, name: str):
    """``func`` under another name (its code, globals and line number unchanged)."""
    names = {"co_name": name}
    if sys.version_info >= (3, 11):
        names["co_qualname"] = name
    code = func.__code__.replace(**names)
    out = types.FunctionType(code, func.__globals__, name, func.__defaults__, func.__closure__)
    out.__qualname__ = name
    return out


if HAVE_NUMBA:  # pragma: no branch
    _sweep = numba.njit(cache=True, nogil=True)(_sweep_py)
    _hist_nb = numba.njit(cache=True, nogil=True)(_hist_py)
    _route_nb = numba.njit(cache=True, nogil=True)(_route_py)
    _hist_nodes_nb = numba.njit(cache=True, nogil=True)(_hist_nodes_py)
    # the same sources over numba's threads (``n_jobs > 1``): feature groups, row chunks,
    # (node, feature) pairs; routing stays serial (two threads made its pass slower, 0.55 vs
    # 0.45 ms per level). Each under a name of its own: numba's on-disk cache is keyed by
    # the function's name and line, not by ``parallel``, so a parallel build of the same
    # function would load the serial machine code cached before it (and run on one thread)
    _par = partial(numba.njit, cache=True, nogil=True, parallel=True)
    _hist_par_nb = _par(_renamed(_hist_py, "_hist_par_py"))
    _hist_nodes_par_nb = _par(_renamed(_hist_nodes_py, "_hist_nodes_par_py"))
    _bounds_par_nb = _par(_renamed(_bounds_py, "_bounds_par_py"))
    _bounds_nb = numba.njit(cache=True, nogil=True)(_bounds_py)
    _gains_nb = numba.njit(cache=True, nogil=True)(_gains_py)
    _gains_par_nb = _par(_renamed(_gains_py, "_gains_par_py"))


def class_bounds(H, W, S):
    """:func:`~shiftlearn.boosting._splits.pair_bounds` of the class histograms ``H``
    (D, J, T, 2, B) in one compiled sweep (numba only: ``_splits.class_bounds`` chooses
    between this and the numpy path)."""
    return (_bounds_par_nb if _parallel() else _bounds_nb)(np.ascontiguousarray(H), W, S)


def pair_gains(hw, hs, Wp, Sp, base, n_rows):
    """``G`` (2, P, T B) and ``order`` of :func:`~shiftlearn.boosting._splits.exact_pairs`
    (numba only; its numpy path's arrays bit for bit). ``Wp, Sp`` (P,): each pair's node
    totals; ``base`` (2, P): each (side, pair)'s first row in the whole batch's order."""
    P, T, B = hw.shape
    G = np.empty((2, P, T * B))
    order = np.empty((2, P, T * B), dtype=np.intp)
    (_gains_par_nb if _parallel() else _gains_nb)(
        np.ascontiguousarray(hw), np.ascontiguousarray(hs), Wp, Sp, base, n_rows, G, order)
    return G, order


def level_histograms(codes8, codes2, ct, node, w, n_nodes, size):
    """Per-feature histograms (D, n_nodes * size) of the rows by node (``node`` (n,) local
    node ids, ``-1`` for rows in no searched node; ``ct`` the rows' class/task offsets).

    ``codes8`` (D, n) uint8 codes (numba path), ``codes2`` (D, n) intp ``codes + ct`` (numpy
    path: the bincounts of ``_core._histograms``; may be None when numba runs).
    """
    if use_numba():
        key = np.where(node >= 0, node * size + ct, -1)
        hist = _hist_par_nb if _parallel() else _hist_nb
        return hist(codes8, np.arange(codes8.shape[0]), key, w, n_nodes * size)
    rows = node >= 0
    if not rows.all():
        codes2, w, node = codes2[:, rows], w[rows], node[rows]
    D = codes2.shape[0]
    H = np.empty((D, n_nodes * size))
    if n_nodes == 1:
        for f in range(D):
            H[f] = np.bincount(codes2[f], weights=w, minlength=size)
    else:
        off = size * node
        for f in range(D):
            H[f] = np.bincount(codes2[f] + off, weights=w, minlength=n_nodes * size)
    return H


def node_histograms(codes8, node, first, slot, ct, w, feats, size):
    """Histograms (F, (max slot + 1) * size) of features ``feats`` over the rows of the nodes
    with ``slot[node - first] >= 0``, at ``slot * size + ct + code``, rows in order: the
    sums ``np.bincount`` gives for those rows (numba only)."""
    feats = np.asarray(feats, dtype=np.intp)
    if _parallel():
        return _hist_nodes_par_nb(codes8, feats, node, first, slot, ct, w, size,
                                  numba.get_num_threads())
    return _hist_nodes_nb(codes8, feats, node, first, slot, ct, w, size, 1)


def feature_histograms(codes8, codes2, ct, w, feats, size):
    """Histograms (F, size) of features ``feats`` over every row: the sums of
    ``np.bincount(codes2[f], weights=w, minlength=size)``."""
    feats = np.asarray(feats, dtype=np.intp)
    if use_numba():
        return (_hist_par_nb if _parallel() else _hist_nb)(codes8, feats, ct, w, size)
    H = np.empty((feats.size, size))
    for k, f in enumerate(feats):
        H[k] = np.bincount(codes2[f], weights=w, minlength=size)
    return H


def route(codes8, codes, node, first, feat, pos, task):
    """Children of the rows at one level: ``2 node + 1 + (code > position)`` with the node's
    feature and the row's task position (``feat`` (J,), ``pos`` (J, T)), and the row counts
    of the 2 J children."""
    if use_numba():
        return _route_nb(codes8, node, first, feat, pos, task, np.empty_like(node))
    jj = node - first
    right = codes[feat[jj], np.arange(node.size)] > pos[jj, task]
    child = 2 * node + 1 + right
    return child, np.bincount(child - (2 * first + 1), minlength=2 * feat.size)
