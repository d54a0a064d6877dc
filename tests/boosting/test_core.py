"""The multi-task boosting solver's pruning (``shiftlearn.boosting._core``): the bounds that let
a fit skip work are bounds, their margins are the documented ones, and the work they skip is
skipped. The models themselves are compared with a frozen reference solver in
``test_boosting_reference.py``; these tests pin what that comparison cannot see (a looser bound
fits the same model, only slower)."""

import numpy as np
import pytest

from shiftlearn.boosting import _core, _loops
from shiftlearn.boosting._binning import bin_tasks
from shiftlearn.boosting._core import RootCache, _candidates
from shiftlearn.datasets import make_monotone_shift


def test_root_cache_bounds_every_feature_by_the_weight_ratio():
    """``lower() = value * rho * (1 - 1e-9)`` with ``rho = exp(-moved + dmu - dlogZ)`` since
    the feature's scan; and it is a lower bound: the weights of boosting between two scans
    (margins moved by at most ``sum |beta| max|leaf|``) are at least ``rho`` times the old
    ones, so any non-negative linear error is at least ``rho`` times its old value."""
    rng = np.random.default_rng(0)
    D, n = 5, 200
    cache = RootCache(D)
    assert np.array_equal(cache.lower(), np.zeros(D))      # never scanned: bounded by 0
    C = rng.random((D, n)) * (rng.random((D, n)) < 0.5)     # each feature's error: C[f] @ w
    margin = rng.normal(size=n)

    def weights():
        mu = margin.min()
        w = np.exp(-(margin - mu))
        z = w.sum()
        return w / z, mu, np.log(z)

    w, mu, log_z = weights()
    cache.set_weights(mu, log_z)
    cache.update(np.array([0, 2, 3]), np.array([C[0] @ w, C[2] @ w, -0.5]))
    assert np.array_equal(cache.value, [C[0] @ w, 0.0, C[2] @ w, 0.0, 0.0])   # clipped at 0
    assert np.array_equal(cache.stamp[[0, 2, 3]], np.tile([0.0, mu, log_z], (3, 1)))
    assert not cache.stamp[[1, 4]].any()
    old = (mu, log_z)
    moved = 0.0
    for beta, leaf_max in ((0.3, 1.0), (-0.2, 0.5), (0.05, 2.0)):
        margin += beta * rng.uniform(-leaf_max, leaf_max, n)
        cache.step(beta, leaf_max)
        moved += abs(beta) * leaf_max
    assert cache.moved == pytest.approx(moved, rel=1e-15)
    w, mu, log_z = weights()
    cache.set_weights(mu, log_z)
    rho = np.exp(-moved + (mu - old[0]) - (log_z - old[1]))
    lower = cache.lower()
    want = cache.value * rho * (1 - 1e-9)
    assert np.allclose(lower, want, rtol=1e-13, atol=0)     # a few roundings of exp and sums
    assert rho < 1 and (lower[[0, 2]] > 0).all()
    assert (lower <= C @ w).all()                           # the bound holds
    assert (lower[[0, 2]] >= 0.5 * (C @ w)[[0, 2]]).all()   # and is not vacuous here


def test_candidate_pairs_are_those_within_the_rounding_and_tie_margins(monkeypatch):
    """A (node, feature) pair is searched iff its upper bound ``u`` satisfies
    ``(u + margin) (1 + 1e-9) + 1e-9 W >= reach - 1e-12 W - margin`` (the rounding margin, the
    tie tolerance, and the error ``margin`` of approximate histograms on either side), or it
    has the node's largest bound. Tested at points half a tie tolerance either side of that
    line, at three scales of the node weight ``W``."""
    for s in (1e-3, 1.0, 1e3):
        for m in (0.0, 1e-6 * s):
            floor = s - 1e-12 * s - m
            line = (floor - 1e-9 * s) / (1 + 1e-9) - m     # the bound that just reaches it
            half = 0.5e-12 * s / (1 + 1e-9)
            upper = np.array([[s, line + half, line - half, 0.5 * s]])
            monkeypatch.setattr(_core, "class_bounds",
                                lambda H, W, S, u=upper, r=s: (u, np.array([r])))
            W = np.array([s])
            cand = (_candidates(None, W, None, m) if m else _candidates(None, W, None))
            assert cand.tolist() == [[True, True, False, False]], (s, m)


def test_a_tie_within_the_tolerance_goes_to_the_first_feature(monkeypatch):
    """Two stumps whose errors differ by 5e-13 of the total weight tie (tolerance ``1e-12 D``
    of the total, with the lazy scan as without it): the first feature wins. A difference of
    ``1e-10`` does not tie."""
    n, D = 40, 10
    X = np.tile(np.arange(n, dtype=float)[:, None], (1, D))
    y = np.where(np.arange(n) >= n // 2, 1, -1)
    task = np.zeros(n, dtype=np.intp)
    for gap, first in ((5e-13, 0), (1e-10, 1)):
        w = np.full(n, 1.0)
        w[0] = gap * (n - 1)             # a row the first feature misclassifies, the second not
        w /= w.sum()
        Xg = X.copy()
        Xg[0, 0] = n                     # feature 0 puts row 0 on the right (positive) side
        codes, edges, n_edges, frac = bin_tasks(Xg, task, 1)
        yf = y.astype(float)
        codes2 = codes + edges.shape[-1] * ((y > 0) + 2 * task)[None, :]
        for cache in (None, RootCache(D)):
            if cache is not None:
                cache.set_weights(0.0, 0.0)
            feat = _core.fit_weak_learner(codes, codes2, task, yf, w, edges, n_edges, frac,
                                          cache=cache)[0]
            assert feat[0] == first, (gap, cache)


@pytest.mark.skipif(not _loops.HAVE_NUMBA, reason="numba is not installed")
def test_sibling_subtraction_is_exact_where_it_is_searched(monkeypatch):
    """Trees below the root (numba): each split parent's smaller child (by rows; ties: the
    left one) and the root are histogrammed from their rows, exact for every feature, and
    search exactly the pairs of the direct path; the larger child's histograms are the
    parent's minus the sibling's, within ``1e-9`` of the total weight of the direct ones and
    never negative, and only its candidate pairs and feature 0 (the node totals) are
    histogrammed again from its rows, so the totals and every searched histogram are the
    direct path's bit for bit. A node whose parent did not split keeps the parent's exact
    histograms."""
    monkeypatch.setenv("SHIFTLEARN_NUMBA", "1")
    X, y, sd = make_monotone_shift(300, 120, n_input=6, random_state=2)
    task = (sd < 0).astype(np.intp)
    codes, edges, n_edges, frac = bin_tasks(X, task, 2)
    level = _core._Subtraction.level
    seen = {"direct": 0, "subtracted": 0, "ties": 0, "unsplit": 0, "skipped": 0}

    def checked(self, w, node, lev, cnt, active):
        J = 2 ** lev
        D = self.prep["codes"].shape[0]
        Hd, Wd, Sd, cd = _core._direct_level(self.prep, w, node - (J - 1), active, J,
                                             self.T, self.B)
        prev = None if lev == 0 else (self.exact.copy(), self.slot.copy())
        H, W, S, cand = level(self, w, node, lev, cnt, active)
        assert np.array_equal(W, Wd) and np.array_equal(S, Sd)
        ex = self.exact.T                                          # (D, A)
        assert np.array_equal(H[ex], Hd[ex])
        assert (H >= 0).all() and np.abs(H - Hd).max() <= 1e-9 * w.sum()
        assert (cand | ~cd).all()                                  # a superset of the pairs
        sub, unsplit = [], []
        for a, j in enumerate(active):
            sib = j ^ 1
            if lev > 0 and cnt[sib] == 0:                          # the parent did not split
                unsplit.append(a)
                continue
            seen["ties"] += lev > 0 and cnt[j] == cnt[sib]
            if lev == 0 or cnt[j] < cnt[sib] or (cnt[j] == cnt[sib] and j < sib):
                seen["direct"] += 1
                assert self.exact[a].all() and np.array_equal(cand[a], cd[a]), (lev, j)
            else:
                sub.append(a)
        seen["unsplit"] += len(unsplit)
        for a in unsplit:         # holds the parent's rows: its exact histograms are kept
            parent = prev[1][(active[a] + J - 2) // 2 - (J // 2 - 1)]
            assert (self.exact[a] >= prev[0][parent]).all()
            if prev[0][parent].all():
                assert np.array_equal(cand[a], cd[a])
        seen["subtracted"] += len(sub)
        if sub:
            # one pass over the approximate nodes' rows, for the union of their pairs
            f0 = np.arange(D) == 0
            need = (cand[sub] | f0).any(axis=0)
            most = need | (cand[unsplit] | f0).any(axis=0)
            for a in sub:
                assert (self.exact[a] >= need).all() and (self.exact[a] <= most).all()
            seen["skipped"] += int((~self.exact[sub]).sum())     # pairs not histogrammed
        return H, W, S, cand

    monkeypatch.setattr(_core._Subtraction, "level", checked)
    yy = np.where(y > 0, 1, -1)
    for mss in (2, 9):
        a = _core.boost(codes, yy, task, edges, n_edges, frac, n_estimators=6,
                        learning_rate=1.0, max_depth=6, weak_learner="tree",
                        min_samples_split=mss)
        monkeypatch.setenv("SHIFTLEARN_NUMBA", "0")
        b = _core.boost(codes, yy, task, edges, n_edges, frac, n_estimators=6,
                        learning_rate=1.0, max_depth=6, weak_learner="tree",
                        min_samples_split=mss)
        monkeypatch.setenv("SHIFTLEARN_NUMBA", "1")
        for key in ("feature", "threshold", "leaf", "beta", "train_loss"):
            assert np.array_equal(a[key], b[key]), key
    assert min(seen.values()) > 0, seen          # every case was met


@pytest.mark.skipif(not _loops.HAVE_NUMBA, reason="numba is not installed")
def test_trees_histogram_levels_by_subtraction_and_stumps_scan_lazily(monkeypatch):
    """Where numba runs, a tree histograms its levels below the root by sibling subtraction
    (never one pass over every row per level), and ``boost`` carries a :class:`RootCache`
    into the stump search (not into trees)."""
    monkeypatch.setenv("SHIFTLEARN_NUMBA", "1")
    X, y, sd = make_monotone_shift(200, 80, n_input=4, random_state=1)
    task = (sd < 0).astype(np.intp)
    codes, edges, n_edges, frac = bin_tasks(X, task, 2)
    yy = np.where(y > 0, 1, -1)
    calls = {"level": 0, "rows": 0}
    monkeypatch.setattr(_loops, "level_histograms", lambda *a, **k: calls.__setitem__(
        "level", calls["level"] + 1))
    node_hist = _loops.node_histograms

    def rows(*args):
        calls["rows"] += 1
        return node_hist(*args)

    monkeypatch.setattr(_loops, "node_histograms", rows)
    _core.boost(codes, yy, task, edges, n_edges, frac, n_estimators=2, max_depth=3,
                weak_learner="tree")
    assert calls["level"] == 0 and calls["rows"] > 0
    caches = []
    fit = _core.fit_weak_learner

    def spy(*args, **kw):
        caches.append(kw["cache"])
        return fit(*args, **kw)

    monkeypatch.setattr(_core, "fit_weak_learner", spy)
    _core.boost(codes, yy, task, edges, n_edges, frac, n_estimators=3)
    assert len({id(c) for c in caches}) == 1 and isinstance(caches[0], RootCache)
    caches.clear()
    _core.boost(codes, yy, task, edges, n_edges, frac, n_estimators=2, max_depth=2,
                weak_learner="tree")
    assert caches == [None, None]
