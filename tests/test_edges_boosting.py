"""Ties in multi-task boosting (issue #23, row 7): a point on a threshold goes right (the
binning rule ``code = #(edges <= x)``), and predicting the training data reproduces
``train_loss_`` stage by stage even when training values sit exactly on thresholds."""

import numpy as np
import pytest
from _tolerances import EPS

from shiftlearn.boosting import MultiTaskBoostingClassifier
from shiftlearn.boosting._binning import bin_tasks
from shiftlearn.boosting._core import boost, decision_function_stages


def test_point_on_the_threshold_goes_right():
    X = np.array([[0.0], [1.0], [2.0], [3.0]])
    y = np.array([-1, -1, 1, 1])
    t = np.zeros(4, dtype=int)
    codes, edges, n_edges, frac = bin_tasks(X, t, 1)
    ens = boost(codes, y, t, edges, n_edges, frac, n_estimators=1)
    thr = ens["threshold"][0, 0, 0]
    assert thr == 1.5 and ens["leaf"][0].tolist() == [-1.0, 1.0]
    # the threshold, a hair above it, a hair below it
    Xq = np.array([[thr], [np.nextafter(thr, np.inf)], [np.nextafter(thr, -np.inf)]])
    f = list(decision_function_stages(Xq, np.zeros(3, int), ens))[-1]
    assert f[0] > 0 and f[1] == f[0] and f[2] < 0


def _tied_multitask(n=300, seed=0):
    """Integer features (many ties) and few bins: quantile edges fall ON training values."""
    rng = np.random.default_rng(seed)
    X = rng.integers(0, 12, size=(n, 3)).astype(float)
    sd = np.where(np.arange(n) < 200, 1, -2)
    X[sd < 0] += 1.5
    y = ((X[:, 0] + X[:, 1] - 3 * (sd < 0) + rng.normal(size=n)) > 11).astype(int)
    return X, y, sd


def _loss_rtol(F, n_terms):
    """Relative round-off of mean(exp(-y f)) recomputed from f against the fit's own
    (incremental) train loss: f sums n_terms terms, off by c n_terms eps (1 + max|f|), which
    exp passes on relatively, plus the mean's c n eps (a wrong sign, shrinkage or
    learning rate is off by percents)."""
    F = np.asarray(F)
    return 4 * EPS * (F.shape[0] + n_terms * (1 + np.max(np.abs(F))))


@pytest.mark.parametrize("depth", [1, 2])
def test_predicting_the_training_data_reproduces_train_loss(depth):
    X, y, sd = _tied_multitask()
    clf = MultiTaskBoostingClassifier(n_estimators=15, learning_rate=0.5, max_depth=depth,
                                      max_bins=5).fit(X, y, sd)
    thr = np.concatenate([e["threshold"].ravel() for e in clf.estimators_])
    assert np.isin(X, thr).sum() > 50          # many training values sit on a threshold
    yy = np.where(y == clf.classes_[1], 1.0, -1.0)
    for k, f in enumerate(clf.staged_decision_function(X, sd)):
        assert np.mean(np.exp(-yy * f)) == pytest.approx(clf.train_loss_[k],
                                                         rel=_loss_rtol(f, k + 1))


def test_training_loss_is_reproduced_per_class_in_multiclass():
    X, y, sd = _tied_multitask(seed=1)
    y = np.digitize(X[:, 0] + X[:, 2], [9, 14])          # three classes
    clf = MultiTaskBoostingClassifier(n_estimators=8, learning_rate=0.5, max_bins=6).fit(
        X, y, sd)
    F = clf.decision_function(X, sd)
    for j, c in enumerate(clf.classes_):
        yy = np.where(y == c, 1.0, -1.0)
        assert np.mean(np.exp(-yy * F[:, j])) == pytest.approx(clf.train_loss_[j, -1],
                                                                rel=_loss_rtol(F[:, j], 8))


# --------------------------------------------------------------------------- line search
def _line_search_reference(c, m, alpha_max):
    """argmin_a sum c exp(-a m) on [-alpha_max, alpha_max] by bracketing the derivative."""
    from scipy.optimize import brentq

    c, m = np.asarray(c, float), np.asarray(m, float)
    keep = (c > 0) & (m != 0)
    c, m = c[keep], m[keep]
    if c.size == 0:
        return 0.0

    def d1(a):
        return -np.sum(c * m * np.exp(-a * m))

    if d1(alpha_max) <= 0:
        return alpha_max
    if d1(-alpha_max) >= 0:
        return -alpha_max
    return brentq(d1, -alpha_max, alpha_max, xtol=1e-15, rtol=1e-15)


def _line_search_cases():
    tiny = np.exp(-28.75)
    cases = [
        ([3.0, 1.0], [1.0, -1.0]),                 # the docstring: 0.5 ln 3
        ([1.0, 2.0, 0.5], [1.0, -1.0, 1.0]),       # margins exactly +-1
        ([1.0, 1e-7], [1.0, -1.0]),                # optimum 8.06, derivative at the cap < 1
        ([1e-7, 1.0], [1.0, -1.0]),                # ... and mirrored
        ([1.0, tiny], [0.5, -2.0]),                # interior optimum 10.95 close to the cap
        ([tiny, 1.0], [2.0, -0.5]),                # ... mirrored: -10.95
        ([1.0, np.exp(-20.0)], [2.0, -2.0]),       # optimum 5 although exp(-a / m) says cap
        ([3.0, 1.0], [0.1, -0.1]),                 # small margins: Newton needs the curvature
        ([3.0, 1.0], [1e-3, -1e-3]),               # optimum beyond the cap
        ([2.0], [0.5]), ([2.0], [-0.5]),           # one entry: the loss is monotone
        ([0.0, 0.0], [1.0, -1.0]),                 # no weight: 0
        ([1.0, 2.0], [0.0, 0.0]),                  # no margin: 0
        ([1.0, 0.0, 2.0], [0.5, -0.3, -0.2]),      # a zero weight beside real entries
        ([], []),
    ]
    rng = np.random.default_rng(0)
    for _ in range(30):
        k = int(rng.integers(2, 9))
        cases.append((rng.random(k) * 10.0 ** rng.integers(-6, 1, k),
                      rng.uniform(-1, 1, k) * rng.choice([1e-2, 0.3, 1.0, 2.0])))
    return cases


def test_line_search_matches_a_bracketing_reference():
    from shiftlearn.boosting._core import ALPHA_MAX, line_search_alpha

    for c, m in _line_search_cases():
        ref = _line_search_reference(c, m, ALPHA_MAX)
        got = line_search_alpha(np.array(c), np.array(m))
        assert isinstance(got, float)
        assert got == pytest.approx(ref, abs=1e-9), (c, m)


# --------------------------------------------------------------------------- split positions
def _tidy_reference(pos, cw, n_edges, frac):
    """The documented rule, written out: the middle of the run of positions with the same
    cumulative weight; a task without weight takes the position at the heaviest task's
    quantile."""
    T = pos.size
    out = pos.copy()
    tot = cw[:, -1]
    for t in range(T):
        if tot[t] <= 0:
            continue
        valid = range(-1, n_edges[t] + 1)
        v = cw[t, min(pos[t], n_edges[t]) + 1]
        run = [p for p in valid if cw[t, p + 1] == v]
        out[t] = (min(run) + max(run)) // 2
    if np.any(tot <= 0) and np.any(tot > 0):
        r = int(np.argmax(tot))
        q = frac[r, out[r] + 1]
        for t in np.flatnonzero(tot <= 0):
            d = [abs(frac[t, p + 1] - q) for p in range(-1, n_edges[t] + 1)]
            out[t] = int(np.argmin(d)) - 1
    return out


def test_tidy_positions_matches_the_documented_rule():
    from shiftlearn.boosting._core import _tidy_positions

    rng = np.random.default_rng(0)
    n_checked = 0
    for _ in range(400):
        T = int(rng.integers(1, 5))
        B = int(rng.integers(2, 8))
        n_edges = rng.integers(0, B, T)
        n_edges[rng.integers(T)] = B - 1
        wts = rng.choice([0.0, 0.0, 1.0, 2.0, 0.5], size=(T, B))   # zeros make flat runs
        cnt = rng.integers(1, 4, size=(T, B)).astype(float)
        for t in range(T):
            wts[t, n_edges[t] + 1:] = 0.0                         # no rows past the last edge
            cnt[t, n_edges[t] + 1:] = 0.0
        wts[rng.random(T) < 0.3] = 0.0                            # tasks absent from the node
        cw = np.zeros((T, B + 1))
        np.cumsum(wts, axis=1, out=cw[:, 1:])
        frac = np.zeros((T, B + 1))
        np.cumsum(cnt, axis=1, out=frac[:, 1:])
        frac /= frac[:, -1:]
        frac[:, 0] = 0.0
        pos = rng.integers(-1, B, T)
        got = _tidy_positions(pos.copy(), cw, n_edges, frac)
        np.testing.assert_array_equal(got, _tidy_reference(pos, cw, n_edges, frac))
        n_checked += int(np.any(got != pos))
    assert n_checked > 100                   # the rule moved many positions


@pytest.mark.parametrize("weak_learner", ["stump", "tree"])
def test_threshold_in_the_middle_of_a_zero_weight_stretch(weak_learner):
    """Rows 3..6 carry no weight: every split between rows 2 and 7 is equally good on the
    training data, and the documented choice is the middle one (edge 4.5), not the first."""
    from shiftlearn.boosting._core import fit_weak_learner

    X = np.arange(10.0)[:, None]
    yf = np.r_[-np.ones(5), np.ones(5)]
    task = np.zeros(10, int)
    codes, edges, n_edges, frac = bin_tasks(X, task, 1)
    codes2 = codes + edges.shape[-1] * ((yf > 0).astype(int) + 2 * task)[None, :]
    w = np.where((np.arange(10) >= 3) & (np.arange(10) <= 6), 0.0, 1.0 / 6)
    feature, threshold, leaf, _ = fit_weak_learner(codes, codes2, task, yf, w, edges, n_edges,
                                                   frac, depth=1, weak_learner=weak_learner)
    assert threshold[0, 0] == 4.5


# --------------------------------------------------------------------------- weak learners
def _binned(X, y, task=None):
    task = np.zeros(len(y), int) if task is None else task
    codes, edges, n_edges, frac = bin_tasks(X, task, int(task.max()) + 1)
    yf = np.where(y > 0, 1.0, -1.0)
    codes2 = codes + edges.shape[-1] * ((yf > 0).astype(int) + 2 * task)[None, :]
    return codes, codes2, task, yf, edges, n_edges, frac


def test_fit_weak_learner_defaults_and_dtypes():
    from shiftlearn.boosting._core import fit_weak_learner

    rng = np.random.default_rng(0)
    X = rng.normal(size=(40, 3))
    y = np.where(X[:, 1] + 0.3 * rng.normal(size=40) > 0, 1, -1)
    codes, codes2, task, yf, edges, n_edges, frac = _binned(X, y)
    w = np.full(40, 1 / 40)
    a = fit_weak_learner(codes, codes2, task, yf, w, edges, n_edges, frac)
    b = fit_weak_learner(codes, codes2, task, yf, w, edges, n_edges, frac, depth=1,
                         weak_learner="stump", min_samples_split=2)
    for u, v in zip(a, b, strict=True):
        np.testing.assert_array_equal(u, v)
    feature, threshold, leaf, _ = a
    assert feature.dtype == np.int64 and threshold.dtype == np.float64
    assert leaf.dtype == np.float64 and sorted(leaf.tolist()) == [-1.0, 1.0]
    for kw in ({"depth": 2, "weak_learner": "tree"}, {"depth": 1, "weak_learner": "tree"}):
        f2, t2, l2, _ = fit_weak_learner(codes, codes2, task, yf, w, edges, n_edges, frac, **kw)
        assert f2.dtype == np.int64 and t2.dtype == np.float64 and l2.dtype == np.float64


def test_tree_does_not_depend_on_the_scale_of_the_weights():
    """Boosting weights shrink; a node whose total weight is 1e-14 still splits as at 1."""
    from shiftlearn.boosting._core import fit_weak_learner

    rng = np.random.default_rng(1)
    X = rng.normal(size=(60, 2))
    y = np.where(X[:, 0] * X[:, 1] > 0, 1, -1)
    codes, codes2, task, yf, edges, n_edges, frac = _binned(X, y)
    w = rng.random(60)
    w /= w.sum()
    a = fit_weak_learner(codes, codes2, task, yf, w, edges, n_edges, frac, depth=2,
                         weak_learner="tree")
    b = fit_weak_learner(codes, codes2, task, yf, 1e-14 * w, edges, n_edges, frac, depth=2,
                         weak_learner="tree")
    np.testing.assert_array_equal(a[0], b[0])
    np.testing.assert_array_equal(a[1], b[1])
    np.testing.assert_allclose(a[2], b[2], rtol=1e-9)
    assert np.all(np.isfinite(a[1][:, 1:]))            # the second level did split


def test_min_samples_split_stops_small_nodes_and_empty_leaves_are_zero():
    from shiftlearn.boosting._core import boost, fit_weak_learner

    X = np.array([[0.0, 0.0], [0.0, 1.0], [1.0, 0.0], [1.0, 1.0]])
    y = np.array([-1, -1, -1, 1])
    codes, codes2, task, yf, edges, n_edges, frac = _binned(X, y)
    full = boost(codes, y, task, edges, n_edges, frac, n_estimators=1, weak_learner="tree",
                 max_depth=2)                         # default min_samples_split=2: 2-row nodes
    stop = boost(codes, y, task, edges, n_edges, frac, n_estimators=1, weak_learner="tree",
                 max_depth=2, min_samples_split=3)
    assert full["train_loss"][0] < stop["train_loss"][0]
    # a node that does not split: threshold +inf (every row left), its empty leaf is 0
    w = np.full(4, 0.25)
    feature, threshold, leaf, lf = fit_weak_learner(codes, codes2, task, yf, w, edges, n_edges,
                                                    frac, depth=2, weak_learner="tree",
                                                    min_samples_split=3)
    assert np.isfinite(threshold[0, 0]) and np.all(threshold[0, 1:] == np.inf)
    assert np.all(np.isfinite(leaf)) and leaf[1] == 0.0 and leaf[3] == 0.0
    assert set(lf.tolist()) <= {0, 2}


def test_unsplit_nodes_predict_like_training_with_one_feature():
    """Trees deeper than the data allow, on a single feature: prediction follows the training
    routing (train_loss_ reproduced) and never looks for a second feature."""
    rng = np.random.default_rng(0)
    X = rng.integers(0, 6, size=(80, 1)).astype(float)
    sd = np.where(np.arange(80) < 50, 1, 2)
    y = (X[:, 0] + rng.normal(size=80) > 2.5).astype(int)
    clf = MultiTaskBoostingClassifier(n_estimators=6, learning_rate=0.5, max_depth=3,
                                      min_samples_split=25, max_bins=4).fit(X, y, sd)
    thr = np.concatenate([e["threshold"].ravel() for e in clf.estimators_])
    assert np.any(thr == np.inf) and not np.any(np.isnan(thr))
    yy = np.where(y == 1, 1.0, -1.0)
    f = clf.decision_function(X, sd)
    assert np.mean(np.exp(-yy * f)) == pytest.approx(clf.train_loss_[-1], rel=_loss_rtol(f, 6))


# --------------------------------------------------------------------------- boost
def test_boost_defaults_and_stump_depth_error():
    X = np.arange(6.0)[:, None]
    y = np.array([-1, -1, 1, -1, 1, 1])
    t = np.zeros(6, int)
    codes, edges, n_edges, frac = bin_tasks(X, t, 1)
    ens = boost(codes, y, t, edges, n_edges, frac)
    assert ens["beta"].shape == (500,) and ens["threshold"].dtype == np.float64
    assert ens["depth"] == 1 and sorted(ens["leaf"][0].tolist()) == [-1.0, 1.0]   # a stump
    eps = 1 / 6                                        # the first stump misclassifies 1 row
    assert ens["beta"][0] == pytest.approx(0.1 * 0.5 * np.log((1 - eps) / eps))
    with pytest.raises(ValueError, match="^weak_learner='stump' needs max_depth=1"):
        boost(codes, y, t, edges, n_edges, frac, max_depth=2)


def test_separable_data_do_not_overflow_the_weights():
    """Margins grow by alpha_max per iteration; the weights are normalised before exp."""
    X = np.arange(20.0)[:, None]
    y = np.where(X[:, 0] >= 10, 1, -1)
    t = np.zeros(20, int)
    codes, edges, n_edges, frac = bin_tasks(X, t, 1)
    for kw in ({}, {"weak_learner": "tree", "max_depth": 2}):
        ens = boost(codes, y, t, edges, n_edges, frac, n_estimators=200, learning_rate=1.0,
                    **kw)
        assert np.all(np.isfinite(ens["beta"])) and np.all(np.isfinite(ens["leaf"]))
        assert np.all(ens["threshold"][:, 0, 0] == 9.5)


def test_tree_alpha_minimises_the_weighted_exponential_loss():
    """Each iteration's alpha = beta / learning_rate is the line-search optimum for the
    current weights: the derivative of sum_i exp(-y_i (f_{k-1}(x_i) + alpha h(x_i))) is 0."""
    from shiftlearn.boosting._core import ALPHA_MAX

    X, y, sd = _tied_multitask(seed=3)
    lr = 0.5
    clf = MultiTaskBoostingClassifier(n_estimators=8, learning_rate=lr, max_depth=2,
                                      max_bins=6).fit(X, y, sd)
    beta = clf.estimators_[0]["beta"]
    yy = np.where(y == clf.classes_[1], 1.0, -1.0)
    prev = np.zeros(len(y))
    checked = 0
    for k, f in enumerate(clf.staged_decision_function(X, sd)):
        alpha = beta[k] / lr
        if beta[k] != 0 and abs(alpha) < ALPHA_MAX:
            m = yy * (f - prev) / beta[k]                 # y_i h(x_i)
            w = np.exp(-yy * prev)
            d = np.sum(w * m * np.exp(-alpha * m))
            assert abs(d) < 1e-8 * np.sum(w * np.abs(m)), k
            checked += 1
        prev = f
    assert checked >= 6


def test_brute_force_reference_returns_positions_that_achieve_its_gain():
    from shiftlearn.boosting._splits import brute_force_split, split_gain

    rng = np.random.default_rng(5)
    for _ in range(40):
        T, D, B = int(rng.integers(1, 3)), int(rng.integers(1, 3)), int(rng.integers(2, 5))
        Hw = rng.random((T, D, B)) * (rng.random((T, D, B)) > 0.2)
        Hs = Hw * rng.uniform(-1, 1, (T, D, B))
        Hw[:, 1:] = Hw[:, :1].sum(axis=2, keepdims=True) * Hw[:, 1:] / np.maximum(
            Hw[:, 1:].sum(axis=2, keepdims=True), 1e-300)          # same rows in every feature
        g, f, pos = brute_force_split(Hw, Hs)
        W, S = Hw[:, 0].sum(), Hs[:, 0].sum()
        wl = sum(Hw[t, f, :pos[t] + 1].sum() for t in range(T))
        sl = sum(Hs[t, f, :pos[t] + 1].sum() for t in range(T))
        # the bins summed in another order than the reference's: W, W_L off by
        # dW = c m eps W and S, S_L by dS = c m eps sum|H_s| (m the bins); the gain
        # S_L^2 / W_L + S_R^2 / W_R moves by 2 |S_L| dS / W_L + S_L^2 dW / W_L^2 and the same
        # on the right, where W_R = W - W_L may cancel (another position is off by ~1e-2)
        m = T * B
        dW, dS = 4 * m * EPS * W, 4 * m * EPS * np.abs(Hs[:, f]).sum()
        atol = 0.0
        for w_, s_ in ((wl, sl), (W - wl, S - sl)):
            if w_ > 1e-300:
                atol += 2 * abs(s_) * dS / w_ + s_**2 * dW / w_**2
        assert float(split_gain(wl, sl, W, S)) == pytest.approx(g, rel=0, abs=atol)
        assert np.all((pos >= -1) & (pos <= B - 1))
    # two identical features: the first one and the first position combination win
    Hw = np.ones((1, 2, 3))
    Hs = np.array([[[-1.0, 1.0, 1.0], [-1.0, 1.0, 1.0]]])
    g, f, pos = brute_force_split(Hw, Hs)
    assert f == 0 and pos.tolist() == [0]
