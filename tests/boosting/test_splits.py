"""The split search's pieces (``shiftlearn.boosting._splits``) against explicit loops written
here: the pruning bounds of ``pair_bounds`` and the numpy path of the exact search on
histograms with empty bins. The whole search is compared with a brute force in
``test_boosting.py`` and with the frozen reference solver in ``test_boosting_reference.py``."""

import numpy as np

from shiftlearn.boosting._splits import _pair_gains, pair_bounds, split_gain


def _gain(wl, sl, W, S):
    """``S_L^2 / W_L + S_R^2 / W_R``, a term 0 where its weight is 0, one split at a time."""
    wr, sr = W - wl, S - sl
    return (sl * sl / wl if wl > 1e-300 else 0.0) + (sr * sr / wr if wr > 1e-300 else 0.0)


def test_pair_bounds_are_the_per_task_scans_written_as_loops():
    """``upper[j, f]``: the sum over tasks of each task's best split value with its own
    totals; ``lower[j]``: over features, the value of the split that puts every task at its
    own best position (the first one), with the node's totals. Both against loops, and the
    bounds against the exact optimum of each (node, feature) by brute force."""
    rng = np.random.default_rng(3)
    for J, T, D, B in [(1, 1, 1, 2), (3, 2, 4, 5), (2, 3, 3, 4)]:
        # histograms of rows: every feature of a node sees the same rows (the same totals)
        n = 12 * J * T
        node, task = rng.integers(0, J, n), rng.integers(0, T, n)
        w, r = rng.random(n), rng.choice([-1.0, 1.0], n)
        codes = rng.integers(0, B, (D, n))
        Hw, Hs = np.zeros((J, T, D, B)), np.zeros((J, T, D, B))
        for f in range(D):
            np.add.at(Hw, (node, task, f, codes[f]), w)
            np.add.at(Hs, (node, task, f, codes[f]), w * r)
        W = Hw[:, :, 0].sum(axis=(1, 2))
        S = Hs[:, :, 0].sum(axis=(1, 2))
        upper, lower = pair_bounds(Hw, Hs, W, S)
        assert upper.shape == (J, D) and lower.shape == (J,)
        for j in range(J):
            best_lower = -np.inf
            for f in range(D):
                total, wl, sl = 0.0, 0.0, 0.0
                for t in range(T):
                    cw, cs = np.cumsum(Hw[j, t, f]), np.cumsum(Hs[j, t, f])
                    g = [_gain(cw[b], cs[b], cw[-1], cs[-1]) for b in range(B)]
                    b = int(np.argmax(g))
                    total += g[b]
                    wl += cw[b]
                    sl += cs[b]
                assert np.isclose(upper[j, f], total, rtol=1e-12, atol=1e-300)
                best_lower = max(best_lower, _gain(wl, sl, W[j], S[j]))
                # the exact optimum of the pair: every combination of positions
                grids = np.meshgrid(*[np.arange(B + 1)] * T, indexing="ij")
                opt = -np.inf
                for combo in zip(*(g.ravel() for g in grids), strict=True):
                    cwl = sum(np.r_[0.0, np.cumsum(Hw[j, t, f])][c] for t, c in enumerate(combo))
                    csl = sum(np.r_[0.0, np.cumsum(Hs[j, t, f])][c] for t, c in enumerate(combo))
                    opt = max(opt, _gain(cwl, csl, W[j], S[j]))
                assert upper[j, f] >= opt * (1 - 1e-12)
            assert np.isclose(lower[j], best_lower, rtol=1e-12, atol=1e-300)


def test_exact_search_on_empty_bins_raises_no_floating_point_error():
    """Empty bins (weight 0) are skipped, never divided by: the numpy search runs under
    ``np.errstate(all="raise")`` and its gains are those of ``split_gain`` at the prefix
    sums of the merged order."""
    rng = np.random.default_rng(1)
    P, T, B = 3, 2, 6
    w = rng.random((P, T, B)) * (rng.random((P, T, B)) < 0.5)
    w[0, 0] = 0.0                                        # a task with no row at all
    s = w * rng.choice([-1.0, 1.0], w.shape)
    Wp, Sp = w.sum(axis=(1, 2)), s.sum(axis=(1, 2))
    base = np.arange(2 * P).reshape(2, P) * T
    with np.errstate(all="raise"):
        G, order = _pair_gains(w, s, Wp, Sp, base, 2 * P * T)
    assert G.shape == order.shape == (2, P, T * B)
    for side in (0, 1):
        for p in range(P):
            wl = np.cumsum(w[p].ravel()[order[side, p]])
            sl = np.cumsum(s[p].ravel()[order[side, p]])
            ends = np.isfinite(G[side, p])
            assert ends[-1]                                  # the last prefix is an end
            want = split_gain(wl, sl, Wp[p], Sp[p])
            np.testing.assert_allclose(G[side, p][ends], want[ends], rtol=1e-12, atol=1e-300)
