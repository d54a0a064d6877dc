"""The fast multi-task boosting solver fits the same models as the solver before the speed work
(issue #18 item 3): ``_boosting_reference.py`` is a frozen copy of that solver. Features,
thresholds, leaf values, ``beta`` and the training loss must be equal bit for bit, on problems
with ties (integer features, duplicated columns, identical tasks, few bins) and without."""

import _boosting_reference as ref
import numpy as np
import pytest

from shiftlearn import MultiTaskBoostingClassifier
from shiftlearn.boosting import _core, _loops
from shiftlearn.boosting._binning import bin_tasks
from shiftlearn.boosting._splits import exact_pairs, stump_split, tree_split_exact
from shiftlearn.datasets import make_monotone_shift

KEYS = ("feature", "threshold", "leaf", "beta", "train_loss")


@pytest.fixture(params=["numba", "numpy"])
def kernels(request, monkeypatch):
    """Both paths of ``_loops``: the compiled loops (numba, where installed) and plain numpy."""
    if request.param == "numba" and not _loops.HAVE_NUMBA:
        pytest.skip("numba is not installed (optional: pip install shiftlearn[speed])")
    monkeypatch.setenv("SHIFTLEARN_NUMBA", "1" if request.param == "numba" else "0")
    assert _loops.use_numba() == (request.param == "numba")
    return request.param


def _problems(seed):
    rng = np.random.default_rng(seed)
    X, y, sd = make_monotone_shift(int(rng.integers(80, 250)), int(rng.integers(30, 120)),
                                   n_input=int(rng.integers(4, 9)), random_state=seed)
    yield "monotone", X, y, sd
    Xi = rng.integers(0, 6, X.shape).astype(float)                 # many exact ties
    yi = ((Xi[:, 0] + Xi[:, 1] + rng.normal(size=len(y))) > 5).astype(int)
    yield "integer", Xi, yi, sd
    yield "duplicated columns", np.column_stack([X, X[:, :2]]), y, sd
    src = sd > 0                                                   # two identical tasks
    yield "identical tasks", np.vstack([X[src], X[src]]), np.concatenate([y[src], y[src]]), \
        np.repeat([1, -2], src.sum())
    yield "float32, three tasks", X.astype(np.float32), y, np.where(
        sd > 0, np.where(np.arange(len(y)) % 2 == 0, 1, 3), -2)


def _binned(X, y, sd, max_bins):
    tasks = np.unique(sd)
    task = np.searchsorted(tasks, sd)
    T = int(task.max()) + 1
    return (bin_tasks(X, task, T, max_bins), ref.bin_tasks(X, task, T, max_bins), task,
            np.where(y > 0, 1, -1))


@pytest.mark.parametrize("seed", [0, 1])
@pytest.mark.parametrize("depth,learner,lr,K", [(1, "stump", 0.5, 40), (1, "stump", 1.0, 30),
                                                (1, "tree", 0.5, 12), (2, "tree", 0.5, 12),
                                                (3, "tree", 0.1, 12), (3, "tree", 1.0, 12)])
def test_boost_is_the_reference_bit_for_bit(seed, depth, learner, lr, K, kernels):
    for name, X, y, sd in _problems(seed):
        for max_bins in (255, 7):
            new, old, task, yy = _binned(X, y, sd, max_bins)
            for u, v in zip(new, old, strict=True):                    # the binning too
                assert u.dtype == v.dtype and np.array_equal(u, v), name
            kw = dict(n_estimators=K, learning_rate=lr, max_depth=depth, weak_learner=learner)
            a = _core.boost(new[0], yy, task, *new[1:], **kw)
            b = ref.boost(old[0], yy, task, *old[1:], **kw)
            for key in KEYS:
                assert np.array_equal(a[key], b[key]), (name, max_bins, key)


def test_estimator_predictions_are_the_reference(kernels):
    X, y, sd = make_monotone_shift(500, 300, n_input=10, random_state=7)
    y = np.where((sd < 0) & (np.arange(len(y)) % 5 != 0), -1, y)       # 60 target labels
    lab = y != -1
    task = np.searchsorted(np.unique(sd[lab]), sd[lab])
    codes, edges, n_edges, frac = ref.bin_tasks(X[lab], task, 2, 255)
    Xt = X[sd < 0]
    for depth in (1, 3):
        clf = MultiTaskBoostingClassifier(60, 0.3, depth).fit(X, y, sd)
        ens = ref.boost(codes, np.where(y[lab] > 0, 1, -1), task, edges, n_edges, frac,
                        n_estimators=60, learning_rate=0.3, max_depth=depth,
                        weak_learner="stump" if depth == 1 else "tree")
        f = ref.decision_function(Xt, np.zeros(len(Xt), dtype=np.intp), ens)
        assert np.array_equal(clf.decision_function(Xt, sd[sd < 0]), f)
        np.testing.assert_array_equal(clf.predict(Xt), clf.classes_[(f > 0).astype(int)])


def test_binning_float32_ties_and_signed_zeros_are_the_reference():
    rng = np.random.default_rng(3)
    n = 700
    task = np.sort(rng.integers(0, 3, n))
    cols = [rng.standard_normal(n).astype(np.float32),                     # > max_bins values
            rng.integers(0, 4, n) * 0.5,                                       # few, tied
            np.where(rng.random(n) < 0.5, -0.0, 0.0),                          # signed zeros
            np.zeros(n),                                                       # constant
            np.round(rng.standard_normal(n), 1)]
    X = np.column_stack(cols)
    for max_bins in (2, 3, 16, 255, 256):
        for Xc in (X, X.astype(np.float32)):
            want = ref.bin_tasks(Xc, task, 3, max_bins)
            # n_jobs: blocks of columns on threads (more threads than columns: one each)
            for n_jobs in (1, 2, 3, 7):
                for u, v in zip(bin_tasks(Xc, task, 3, max_bins, n_jobs), want, strict=True):
                    assert u.dtype == v.dtype and np.array_equal(u, v), n_jobs


def _random_hist(rng, J, T, D, B):
    w = rng.random((J, T, D, B)) * (rng.random((J, T, D, B)) > 0.3)
    s = w * (np.sign(rng.uniform(-1, 1, w.shape)) if rng.random() < 0.4
             else rng.uniform(-1, 1, w.shape))
    if D > 1 and rng.random() < 0.3:                                   # a duplicated feature
        w[:, :, 1], s[:, :, 1] = w[:, :, 0], s[:, :, 0]
    scale = 10.0 ** int(rng.integers(-15, 1))
    return w * scale, s * scale


def test_split_searches_are_the_reference_and_subsets_are_searched_as_in_the_batch(kernels):
    rng = np.random.default_rng(0)
    for _ in range(150):
        J, T, D, B = (int(v) for v in (rng.integers(1, 5), rng.integers(1, 4),
                                        rng.integers(1, 6), rng.integers(2, 25)))
        Hw, Hs = _random_hist(rng, J, T, D, B)
        for u, v in zip(tree_split_exact(Hw, Hs), ref.tree_split_exact(Hw, Hs), strict=True):
            assert np.array_equal(u, v)
        Hp, Hn = (Hw[0] + Hs[0]) / 2, (Hw[0] - Hs[0]) / 2
        a, b = stump_split(Hp, Hn), ref.stump_split(Hp, Hn)
        assert a[:2] == b[:2] and np.array_equal(a[2], b[2]) and a[3] == b[3]
        # a subset of the (node, feature) pairs: each pair's optimum is the whole batch's
        W, S = Hw[:, :, 0].sum(axis=(1, 2)), Hs[:, :, 0].sum(axis=(1, 2))
        keep = rng.random((J, D)) < 0.5
        keep[np.arange(J), a[0] if J == 1 else 0] = True
        keep[:, 0] = True
        node, feat = np.nonzero(keep)
        hw, hs = Hw.transpose(0, 2, 1, 3), Hs.transpose(0, 2, 1, 3)
        sub = exact_pairs(hw[node, feat], hs[node, feat], W, S, node, feat, D)
        nn, ff = np.divmod(np.arange(J * D), D)
        full = exact_pairs(hw.reshape(J * D, T, B), hs.reshape(J * D, T, B), W, S, nn, ff, D)
        assert np.array_equal(sub[3], full[3].reshape(J, D)[node, feat])


@pytest.mark.skipif(not _loops.HAVE_NUMBA, reason="numba is not installed")
def test_pair_gains_compiled_is_the_numpy_path_bit_for_bit():
    """The compiled search of ``exact_pairs`` (PAVA, stable sort, prefix sums, gains) gives
    the numpy path's gains and order bit for bit, on one thread and on two: ties (rounded
    ratios, +-1 ratios, equal weights), empty bins, tiny scales, a batch offset per row."""
    from shiftlearn.boosting._splits import _pair_gains
    rng = np.random.default_rng(5)
    for _ in range(400):
        P, T, B = int(rng.integers(1, 6)), int(rng.integers(1, 4)), int(rng.integers(2, 30))
        w = rng.random((P, T, B)) * (rng.random((P, T, B)) > rng.random())
        if rng.random() < 0.3:
            w = np.round(w * 4) / 4
        s = w * (np.sign(rng.uniform(-1, 1, w.shape)) if rng.random() < 0.4
                 else np.round(rng.uniform(-1, 1, w.shape), int(rng.integers(0, 3))))
        scale = 10.0 ** int(rng.integers(-15, 1))
        w, s = w * scale, s * scale
        Wp, Sp = w.sum(axis=(1, 2)) * (1 + rng.random(P)), s.sum(axis=(1, 2))
        n_rows = int(rng.integers(1, 20)) * 2 * P * T
        base = np.sort(rng.choice(n_rows // T, 2 * P, replace=False)).reshape(2, P) * T
        want = _pair_gains(w, s, Wp, Sp, base, n_rows)
        for n_threads in (1, 2):
            with _loops.threads(n_threads):
                got = _loops.pair_gains(w, s, Wp, Sp, base, n_rows)
            for u, v in zip(got, want, strict=True):
                assert u.dtype == v.dtype and np.array_equal(u, v)


def test_the_lazy_stump_scan_skips_features_and_keeps_the_model(monkeypatch, kernels):
    """Many noise features: most are ruled out by the bound most iterations (and the model is
    the reference's); a bound that is not a bound (rho too large) would change the model."""
    X, y, sd = make_monotone_shift(3000, 400, n_input=30, random_state=4)
    task = (sd < 0).astype(np.intp)
    codes, edges, n_edges, frac = bin_tasks(X, task, 2)
    yy = np.where(y > 0, 1, -1)
    scanned = []
    hist = _core._feature_histograms

    def spy(prep, w, feats, T, B):
        scanned.append(len(feats))
        return hist(prep, w, feats, T, B)

    monkeypatch.setattr(_core, "_feature_histograms", spy)
    kw = dict(n_estimators=80, learning_rate=0.1)
    a = _core.boost(codes, yy, task, edges, n_edges, frac, **kw)
    b = ref.boost(codes, yy, task, edges, n_edges, frac, **kw)
    for key in KEYS:
        assert np.array_equal(a[key], b[key]), key
    assert sum(scanned) < 0.5 * 30 * 80
    # the bound alone decides what is scanned after the lowest-bound feature: same model
    monkeypatch.setattr(_core, "_FIRST_SCAN", 1)
    d = _core.boost(codes, yy, task, edges, n_edges, frac, **kw)
    for key in KEYS:
        assert np.array_equal(d[key], b[key]), key
    # a wrong bound (ten times too high) skips features that win: the model changes
    monkeypatch.setattr(_core.RootCache, "lower", lambda self: 10.0 * self.value)
    c = _core.boost(codes, yy, task, edges, n_edges, frac, **kw)
    assert not np.array_equal(c["feature"], b["feature"])


@pytest.mark.skipif(not _loops.HAVE_NUMBA, reason="numba is not installed")
def test_compiled_loops_are_the_numpy_paths_bit_for_bit(monkeypatch):
    rng = np.random.default_rng(8)
    for n, D, T, B, A in [(1, 1, 1, 2, 1), (500, 7, 3, 9, 3), (2000, 5, 2, 256, 4)]:
        codes = rng.integers(0, B, (D, n))
        task = rng.integers(0, T, n)
        ct = B * (rng.integers(0, 2, n) + 2 * task)
        codes2 = codes + ct
        w = rng.random(n) * 10.0 ** rng.integers(-300, 0, n)          # many magnitudes
        node = rng.integers(-1, A, n)                                    # -1: not searched
        feats = rng.permutation(D)[: max(1, D // 2)]
        first = A - 1                                    # routing the level of A nodes
        level = first + rng.integers(0, A, n)
        feat, pos = rng.integers(0, D, A), rng.integers(-1, B, (A, T))
        out = {}
        for flag in ("1", "0"):
            monkeypatch.setenv("SHIFTLEARN_NUMBA", flag)
            c8 = codes.astype(np.uint8) if flag == "1" else None
            out[flag] = (_loops.level_histograms(c8, codes2, ct, node, w, A, 2 * T * B),
                         _loops.feature_histograms(c8, codes2, ct, w, feats, 2 * T * B),
                         *_loops.route(c8, codes, level, first, feat, pos, task))
        # the rows of some nodes only (numba): as the level histogram of those nodes
        at = rng.integers(0, A, n)                                       # local node ids
        slot = np.full(A, -1)
        keep = np.unique(np.r_[rng.integers(A), np.flatnonzero(rng.random(A) < 0.4)])
        slot[keep] = np.arange(keep.size)
        monkeypatch.setenv("SHIFTLEARN_NUMBA", "0")
        want = _loops.level_histograms(None, codes2, ct, slot[at], w, keep.size, 2 * T * B)
        got = _loops.node_histograms(codes.astype(np.uint8), at + 5, 5, slot, ct, w, feats,
                                       2 * T * B)
        assert np.array_equal(got, want[feats])
        for u, v in zip(out["1"], out["0"], strict=True):
            assert np.array_equal(u, v)
        assert out["1"][0].dtype == out["0"][0].dtype == np.float64


@pytest.mark.parametrize("depth,min_split,lr,K", [(6, 2, 1.0, 10), (6, 9, 0.5, 10),
                                                  (8, 3, 1.0, 6)])
def test_deep_trees_and_separable_data_are_the_reference(depth, min_split, lr, K, kernels):
    """Deep trees (nodes that cannot split, parents that do not: every row left) and separable
    data (weights over hundreds of orders of magnitude, where a histogram got by subtracting
    a sibling's is least like the sums of the rows)."""
    rng = np.random.default_rng(depth + min_split)
    X, y, sd = make_monotone_shift(150, 60, n_input=5, random_state=depth)
    Xs = np.arange(len(y), dtype=float)[:, None] * np.ones((1, 3)) + rng.normal(0, 0.01,
                                                                                  (len(y), 3))
    ys = (np.arange(len(y)) > len(y) // 2).astype(int)
    for Xc, yc in ((X, y), (Xs, ys)):
        new, old, task, yy = _binned(Xc, yc, sd, 255)
        kw = dict(n_estimators=K, learning_rate=lr, max_depth=depth, weak_learner="tree",
                  min_samples_split=min_split)
        a = _core.boost(new[0], yy, task, *new[1:], **kw)
        b = ref.boost(old[0], yy, task, *old[1:], **kw)
        for key in KEYS:
            assert np.array_equal(a[key], b[key]), key


@pytest.mark.skipif(not _loops.HAVE_NUMBA, reason="numba is not installed")
def test_parallel_histograms_are_the_serial_ones_bit_for_bit(monkeypatch):
    """``n_jobs > 1``: feature groups, row chunks and (node, feature) pairs run on numba's
    threads; every histogram and bound, and so the model, is the serial one bit for bit (a
    feature's sums stay in row order on one thread), including feature counts that are not a
    multiple of the group size of four."""
    monkeypatch.setenv("SHIFTLEARN_NUMBA", "1")
    cores = _loops.numba.config.NUMBA_NUM_THREADS
    rng = np.random.default_rng(11)
    for n, D, T, B, A in [(1, 1, 1, 2, 1), (700, 7, 3, 9, 3), (3000, 13, 2, 256, 4)]:
        codes8 = rng.integers(0, B, (D, n)).astype(np.uint8)
        task = rng.integers(0, T, n)
        ct = B * (rng.integers(0, 2, n) + 2 * task)
        w = rng.random(n) * 10.0 ** rng.integers(-300, 0, n)
        node = rng.integers(-1, A, n)
        slot = np.where(rng.random(A) < 0.6, np.arange(A), -1)
        slot[0] = 0
        feats = rng.permutation(D)[: max(1, D - 2)]
        H = rng.random((D, A, T, 2, B)) * (rng.random((D, A, T, 2, B)) < 0.7)
        W = H.sum(axis=(0, 2, 3, 4)) / D
        S = (H[:, :, :, 1] - H[:, :, :, 0]).sum(axis=(0, 2, 3)) / D
        out = []
        for n_threads in (1, 2):
            with _loops.threads(n_threads):
                assert _loops._parallel() == (min(n_threads, cores) > 1)   # capped
                out.append((_loops.level_histograms(codes8, None, ct, node, w, A, 2 * T * B),
                            _loops.feature_histograms(codes8, None, ct, w, feats, 2 * T * B),
                            _loops.node_histograms(codes8, node + 3, 3, slot, ct, w, feats,
                                                     2 * T * B),
                            *_loops.class_bounds(H, W, S)))
        assert not _loops._parallel()
        # numba's on-disk cache is keyed by name and line, not by parallel=True: under the
        # serial build's name, the parallel one would load the serial code (one thread)
        for par, ser in ((_loops._hist_par_nb, _loops._hist_nb),
                         (_loops._hist_nodes_par_nb, _loops._hist_nodes_nb),
                         (_loops._bounds_par_nb, _loops._bounds_nb),
                         (_loops._gains_par_nb, _loops._gains_nb)):
            assert par.py_func.__qualname__ != ser.py_func.__qualname__
            assert par.py_func.__code__.co_firstlineno == ser.py_func.__code__.co_firstlineno
        for u, v in zip(*out, strict=True):
            assert np.array_equal(u, v)
    X, y, sd = make_monotone_shift(400, 150, n_input=9, random_state=3)
    fits = [MultiTaskBoostingClassifier(20, 0.5, 3, n_jobs=j).fit(X, y, sd) for j in (1, 2)]
    for key in KEYS:
        assert np.array_equal(fits[0].estimators_[0][key], fits[1].estimators_[0][key]), key
    with pytest.raises(ValueError, match="n_jobs"):             # joblib's n_jobs=0: meaningless
        MultiTaskBoostingClassifier(5, n_jobs=0).fit(X, y, sd)
