"""FitMemory (``memory=``): explicit reuse across fits on the same rows. Every adapter gives
the same results with and without memory (grids run largest n_components first, as the
selector does), the expensive step runs once, nothing mixes across rows or parameters, the
store is bounded, and the object survives scikit-learn's clones."""

import copy
import pickle

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.model_selection import GridSearchCV, ParameterGrid

from shiftlearn.adaptation import (
    JDA,
    RFSCA,
    RFTCA,
    SCA,
    TCA,
    FitMemory,
    uSCA,
)
from shiftlearn.adaptation._memory import nbytes
from shiftlearn.compose import DomainAdaptationClassifier
from shiftlearn.datasets import make_sca_toy
from shiftlearn.model_selection import SourceKFold
from shiftlearn.model_selection._select import AdaptationSelector


def _toy(n=20, seed=0):
    """The SCA toy with 6 noise columns beside its 2, so that the linear kernel has rank 8:
    degenerate (numerically zero) eigenvalues have no unique eigenvectors to compare."""
    X, y, sd = make_sca_toy(n_per_cluster=n, random_state=seed)
    noise = np.random.default_rng(seed).normal(scale=0.3, size=(X.shape[0], 6))
    return np.hstack([X, noise]), y, sd


def _same_up_to_sign(A, B, atol):
    """Columns equal up to a sign flip each."""
    assert A.shape == B.shape
    signs = np.sign(np.sum(A * B, axis=0))
    signs[signs == 0] = 1
    np.testing.assert_allclose(A * signs, B, atol=atol)


# (estimator, grid over the searched parameters, atol of the embeddings); n_components in
# both orders (a larger k after a smaller one is solved anew, then serves the later settings)
CASES = [
    (TCA(eigen_solver="dense"), {"mu": [0.1, 1.0], "kernel": ["linear", "rbf"],
                                 "scaling": ["eigh", "constraint"], "n_components": [3, 6]},
     1e-7),
    (TCA(eigen_solver="arpack"), {"mu": [0.1, 1.0], "n_components": [6, 3]}, 1e-6),
    (JDA(n_iter=3), {"mu": [0.1, 1.0], "kernel": ["linear", "rbf"], "n_components": [6, 3]},
     1e-7),
    (SCA(eigen_solver="dense"), {"beta": [0.1, 0.9], "kernel": ["linear", "rbf"],
                                 "whiten": [False, True], "n_components": [3, 6]}, 1e-7),
    (SCA(eigen_solver="arpack"), {"beta": [0.0, 0.5, 1.0], "delta": [0.5, 2.0],
                                  "n_components": [6, 2]}, 1e-6),
    (uSCA(eigen_solver="arpack"), {"delta": [0.1, 10.0], "n_components": [6, 3]}, 1e-6),
    (RFTCA(n_features=80, random_state=0), {"mu": [0.1, 1.0], "penalty": ["features",
                                            "coefficients"], "n_components": [6, 3]}, 1e-7),
    (RFSCA(n_features=80, random_state=0), {"beta": [0.1, 0.9], "supervised": [True, False],
                                            "n_components": [3, 6]}, 1e-7),
    (RFSCA(n_features=40, random_state=0, keep_stats=True),      # the full 2N x 2N path
     {"beta": [0.1, 0.9], "whiten": [False, True], "n_components": [6, 3]}, 1e-7),
    (RFTCA(n_features=150, random_state=0), {"mu": [0.1, 1.0], "n_components": [6, 3]},
     1e-7),                                                      # n <= N: the row space
    (RFTCA(exact=True), {"mu": [0.1, 1.0], "kernel": ["laplacian", "cauchy"],
                         "n_components": [6, 3]}, 1e-7),        # R-TCA: the exact kernel
]


@pytest.mark.parametrize("est,grid,atol", CASES, ids=lambda c: getattr(c, "__name__", None)
                         or (repr(c)[:40] if not isinstance(c, (dict, float)) else ""))
def test_every_adapter_gives_the_same_results_with_memory(est, grid, atol):
    X, y, sd = _toy()
    X1, y1, sd1 = X[5:], y[5:], sd[5:]                   # a second "fold": other rows
    mem = FitMemory()
    n_fits = 0
    for Xf, yf, sdf in ((X, y, sd), (X1, y1, sd1), (X, y, sd)):
        for params in ParameterGrid(grid):
            plain = clone(est).set_params(**params).fit(Xf, yf, sdf)
            shared = clone(est).set_params(**params, memory=mem).fit(Xf, yf, sdf)
            n_fits += 1
            np.testing.assert_allclose(shared.eigenvalues_, plain.eigenvalues_, rtol=1e-8)
            _same_up_to_sign(shared.transform(Xf), plain.transform(Xf), atol)
            _same_up_to_sign(shared.transform(X[:7] + 0.1), plain.transform(X[:7] + 0.1),
                             atol)
    assert mem.hits > n_fits                     # reused on every fit but the first of a fold
    assert 0 < mem.nbytes <= mem.max_bytes


def test_the_expensive_step_runs_once_per_rows_and_kernel(monkeypatch):
    from shiftlearn.adaptation import _rf, _sca, _tca

    X, y, sd = _toy()
    calls = {"kernel": 0, "sca_problem": 0, "rf_stats": 0, "tca_solve": 0, "sca_solve": 0}

    def counting(module, name, counter):
        real = getattr(module, name)

        def spy(*args, **kwargs):
            calls[counter] += 1
            return real(*args, **kwargs)
        monkeypatch.setattr(module, name, spy)

    counting(_sca, "sca_problem", "sca_problem")
    counting(_sca, "sca_solve", "sca_solve")
    counting(_tca, "tca_components", "tca_solve")
    counting(_rf, "rf_stats", "rf_stats")
    real_kernel = TCA._kernel

    def kernel_spy(self, *args):
        calls["kernel"] += 1
        return real_kernel(self, *args)
    monkeypatch.setattr(TCA, "_kernel", kernel_spy)
    mem = FitMemory()
    for k in (5, 3, 1):
        for mu in (0.1, 1.0):
            TCA(n_components=k, mu=mu, memory=mem).fit(X, y, sd)
        for beta in (0.1, 0.9):
            for whiten in (False, True):
                SCA(n_components=k, beta=beta, whiten=whiten, memory=mem).fit(X, y, sd)
        for mu in (0.1, 1.0):
            RFTCA(n_components=k, mu=mu, n_features=80, random_state=0, memory=mem).fit(X, y, sd)
    # one kernel, one SCA problem, one pass of random features over the rows; one solve per
    # setting (mu, beta), whatever whiten and the (decreasing) n_components
    assert calls == {"kernel": 1, "sca_problem": 1, "rf_stats": 1, "tca_solve": 2,
                     "sca_solve": 2}
    # increasing n_components: the first setting solves each k; later settings solve once,
    # for the most components asked so far (k = 5), and truncate
    mem = FitMemory()
    for key in calls:
        calls[key] = 0
    for beta in (0.1, 0.5, 0.9):
        for k in (1, 3, 5):
            SCA(n_components=k, beta=beta, memory=mem).fit(X, y, sd)
    assert calls["sca_problem"] == 1 and calls["sca_solve"] == 3 + 1 + 1


@pytest.mark.parametrize("Est", [TCA, SCA, lambda **kw: RFTCA(exact=True, **kw)],
                         ids=["TCA", "SCA", "R-TCA"])
def test_the_out_of_sample_kernel_is_computed_once_per_rows(Est, monkeypatch):
    # a grid search embeds the same training / validation rows for every candidate: with a
    # memory the kernel between those rows and the training rows is computed once
    X, y, sd = _toy()
    est0 = Est(kernel="laplacian")
    real_kernel = type(est0)._kernel
    calls = []

    def kernel_spy(self, A, B=None):
        calls.append((A.shape[0], None if B is None else B.shape[0]))
        return real_kernel(self, A, B)
    monkeypatch.setattr(type(est0), "_kernel", kernel_spy)
    mem = FitMemory()
    Xq = X[:9] + 0.1
    outs = []
    for k in (4, 2):
        for mu in (0.1, 1.0):
            est = clone(est0).set_params(n_components=k, memory=mem)
            est.set_params(**({"beta": mu / 2} if isinstance(est, SCA) else {"mu": mu}))
            est.fit(X, y, sd)
            outs.append((est, est.transform(Xq)))
    assert calls.count((9, X.shape[0])) == 1                 # one test kernel for the 4 fits
    for _, Z in outs:
        Z[:] = 0.0                                           # the caller's array, writable
    for est, _ in outs:
        plain = clone(est).set_params(memory=None)
        plain.fit(X, y, sd)
        np.testing.assert_allclose(est.transform(Xq), plain.transform(Xq), atol=1e-10)
    # a budget too small for the whole block: computed in blocks every time, nothing kept
    small = FitMemory(max_bytes=4 * 8 * 9 * X.shape[0] - 1)
    calls.clear()
    for _ in range(2):
        clone(est0).set_params(memory=small).fit(X, y, sd).transform(Xq)
    assert calls.count((9, X.shape[0])) == 2


def test_more_components_than_remembered_solve_again():
    X, y, sd = _toy()
    mem = FitMemory()
    small = SCA(n_components=2, memory=mem).fit(X, y, sd)
    big = SCA(n_components=5, memory=mem).fit(X, y, sd)          # a new solve, not a prefix
    ref = SCA(n_components=5).fit(X, y, sd)
    np.testing.assert_allclose(big.eigenvalues_, ref.eigenvalues_, rtol=1e-10)
    np.testing.assert_allclose(small.eigenvalues_, ref.eigenvalues_[:2], rtol=1e-10)
    again = SCA(n_components=2, memory=mem).fit(X, y, sd)        # now a truncation of 5
    _same_up_to_sign(again.transform(X), small.transform(X), 1e-8)


@pytest.mark.parametrize("change", ["X", "y", "sd", "kernel", "bandwidth", "eps", "mu",
                                    "random_state", "n_features", "sampling", "dtype"])
def test_nothing_mixes_across_rows_or_parameters(change):
    """Fit A then B with one memory; B equals B fitted without memory."""
    X, y, sd = _toy()
    X2, y2, sd2 = X.copy(), y.copy(), sd.copy()
    if change in ("X", "y", "sd"):
        Est, kw2 = SCA, {}
        if change == "X":
            X2[0, 0] += 1e-3
        elif change == "y":
            lab = np.flatnonzero(y >= 0)[:6]
            y2[lab] = (y[lab] + 1) % 3
        else:
            sd2[sd2 > 0] = 3
    elif change in ("kernel", "bandwidth", "eps"):
        Est, kw2 = SCA, {"kernel": "linear", "bandwidth": 0.7, "eps": 1e-2}
        kw2 = {change: kw2[change]}
    elif change == "mu":
        Est, kw2 = TCA, {"mu": 7.0}
    else:
        Est, kw2 = RFSCA, {"random_state": 1, "n_features": 60, "sampling": "orthogonal",
                           "dtype": "float32"}
        kw2 = {change: kw2[change]}
    kw = {"n_components": 3} | ({"n_features": 50, "random_state": 0} if Est is RFSCA else {})
    mem = FitMemory()
    Est(**kw, memory=mem).fit(X, y, sd)
    served = Est(**{**kw, **kw2}, memory=mem).fit(X2, y2, sd2)
    fresh = Est(**{**kw, **kw2}).fit(X2, y2, sd2)
    np.testing.assert_allclose(served.eigenvalues_, fresh.eigenvalues_, rtol=1e-7)


def test_unrecognisable_pieces_are_not_kept():
    X, y, sd = _toy()
    mem = FitMemory()
    SCA(n_components=2, kernel=lambda A, B: A @ B.T, memory=mem).fit(X, y, sd)
    TCA(n_components=2, kernel=lambda A, B: A @ B.T, memory=mem).fit(X, y, sd)
    RFTCA(n_components=2, n_features=30, random_state=None, memory=mem).fit(X, y, sd)
    RFTCA(n_components=2, n_features=30, random_state=np.random.default_rng(0),
          memory=mem).fit(X, y, sd)
    assert len(mem) == 0


def test_the_store_is_bounded_least_recently_used_first():
    mem = FitMemory(max_bytes=3 * 800)
    a, b, c, d = (np.zeros(100) for _ in range(4))          # 800 bytes each
    assert mem.put("a", a) and mem.put("b", b) and mem.put("c", c)
    assert mem.get("a") is a                                # a is now the most recent
    assert mem.put("d", d)                                  # evicts b, the least recent
    assert mem.get("b") is None and mem.get("a") is a and len(mem) == 3
    assert mem.nbytes == 2400
    assert not mem.put("big", np.zeros(301))                # larger than the budget alone
    assert mem.get("big") is None and len(mem) == 3
    assert mem.put("edge", (np.zeros(299), 1))              # exactly the budget: kept
    assert len(mem) == 1 and mem.nbytes == 2400
    # an entry that grows in place is recounted (and evicts the rest)
    grow = {"x": np.zeros(10)}
    mem.put("g", grow)
    grow["y"] = np.zeros(200)
    mem.recount("g", grow)
    assert mem.nbytes == nbytes(grow) == 1680 and "edge" not in mem._store
    mem.recount("nothing", grow)                            # a key it no longer holds: no-op
    mem.clear()
    assert len(mem) == 0 and mem.nbytes == 0
    for bad in (-1, 1.5, True, "1GB"):
        with pytest.raises(ValueError, match="max_bytes must be a non-negative integer"):
            FitMemory(bad)


def test_a_large_fit_leaves_nothing_behind():
    X, y, sd = _toy()
    mem = FitMemory(max_bytes=100 * 1024)                   # below one 120 x 120 problem
    plain = SCA(n_components=3).fit(X, y, sd)
    shared = SCA(n_components=3, memory=mem).fit(X, y, sd)
    np.testing.assert_allclose(shared.eigenvalues_, plain.eigenvalues_, rtol=1e-10)
    assert mem.nbytes <= mem.max_bytes
    assert not any(k[0] == "sca-problem" for k in mem._store)        # the solve may stay
    assert any(k[0] == "sca-solve" for k in mem._store)


def test_nested_solve_truncates_and_copies():
    mem = FitMemory()
    calls = []

    def solve(k):
        calls.append(k)
        return np.arange(k, 0, -1.0), np.ones((4, k)) * np.arange(k)

    w, V = mem.nested_solve("key", 3, solve)
    w2, V2 = mem.nested_solve("key", 2, solve)
    assert calls == [3]
    np.testing.assert_array_equal(w2, w[:2])
    np.testing.assert_array_equal(V2, V[:, :2])
    V2[:] = -1                                              # the caller's own copy
    np.testing.assert_array_equal(mem.nested_solve("key", 2, solve)[1], V[:, :2])
    mem.nested_solve("key", 4, solve)                       # more than remembered: solve
    assert calls == [3, 4]
    assert mem.nested_solve(None, 2, solve)[0].tolist() == [2.0, 1.0] and calls[-1] == 2


def test_it_survives_clones_copies_and_pickling():
    mem = FitMemory(max_bytes=12345)
    mem.put("a", np.zeros(3))
    assert copy.copy(mem) is mem and copy.deepcopy(mem) is mem
    est = DomainAdaptationClassifier(SCA(memory=mem), memory=mem)
    c = clone(est)
    assert c.memory is mem and c.adapter.memory is mem
    assert repr(mem) == "FitMemory(max_bytes=12345)"
    back = pickle.loads(pickle.dumps(est))                  # process-based n_jobs
    assert isinstance(back.memory, FitMemory) and back.memory is not mem
    assert back.memory.max_bytes == 12345 and len(back.memory) == 0
    assert back.adapter.memory is back.memory               # one memory per worker


def test_fingerprint_tells_arrays_apart():
    fp = FitMemory.fingerprint
    a = np.arange(6.0)
    assert fp(a) == fp(a.copy()) and fp(a) != fp(a.reshape(2, 3))
    assert fp(a) != fp(a.astype(np.float32)) and fp(a) != fp(a + 1e-15 * a.max())
    assert fp(a, None) != fp(None, a) and fp(a[::2]) == fp(a[::2].copy())
    assert fp(np.array(["x", "y"], dtype=object)) != fp(np.array(["x", "z"], dtype=object))
    assert fp("abc") != fp("ab", "c")


def test_the_classifier_passes_its_memory_to_the_adapter_in_a_grid_search():
    X, y, sd = _toy()
    grid = {"adapter__n_components": [4, 2], "adapter__beta": [0.1, 0.9]}
    mem = FitMemory()

    def search(memory):
        return GridSearchCV(DomainAdaptationClassifier(SCA(), memory=memory), grid,
                            cv=SourceKFold(3)).fit(X, y, groups=sd, sample_domain=sd)

    plain, shared = search(None), search(mem)
    for key in ("mean_test_score", "split0_test_score", "split2_test_score",
                "rank_test_score"):
        np.testing.assert_array_equal(shared.cv_results_[key], plain.cv_results_[key])
    assert mem.hits > 0 and any(k[0] == "sca-problem" for k in mem._store)
    # the adapter's own memory is replaced by the classifier's; no adapter memory: ignored
    other = FitMemory()
    clf = DomainAdaptationClassifier(SCA(n_components=2, memory=other), memory=mem)
    assert clf.fit(X, y, sd).adapter_.memory is mem
    assert DomainAdaptationClassifier(None, memory=mem).fit(X, y, sd).adapter_ is None


def test_selector_with_and_without_memory_agree_and_empties_it():
    X, y, sd = _toy(n=15)
    grids = {"TCA": {"n_components": [1, 2, 3]}, "SCA": {"n_components": [1, 2, 3],
                                                         "beta": [0.1, 0.9]},
             "RF-SCA": {"n_components": [1, 3], "n_features": [40]}}
    kw = dict(methods=["TCA", "SCA", "RF-SCA"], grids=grids, cv=3)
    plain = AdaptationSelector(memory=None, **kw).fit(X, y, sd)
    auto = AdaptationSelector(**kw).fit(X, y, sd)
    mine = FitMemory()
    kept = AdaptationSelector(memory=mine, **kw).fit(X, y, sd)
    for sel in (auto, kept):
        a, b = sel.search_.cv_results_, plain.search_.cv_results_
        assert [str(p) for p in a["params"]] == [str(p) for p in b["params"]]  # order as given
        for key in ("mean_test_score", "std_test_score", "rank_test_score", "split1_test_score"):
            np.testing.assert_allclose(a[key], b[key], rtol=1e-12)
        assert sel.summary_ == plain.summary_ and sel.choice_ == plain.choice_
    assert auto.search_.estimator.memory is not None and len(auto.search_.estimator.memory) == 0
    assert len(mine) > 0                                    # a memory the user gave is kept
    assert auto.best_estimator_.memory is None              # the refit keeps nothing alive


@pytest.mark.parametrize("Est", [RFTCA, RFSCA], ids=["RF-TCA", "RF-SCA"])
def test_random_features_of_the_same_rows_are_computed_once(Est, monkeypatch):
    # the features of the training rows do not depend on the labels, the domains or the
    # setting: one map serves every setting, circular validation's reverse fit (other labels,
    # domains swapped) and the transforms of those rows; results as the memory's contract
    # (a smaller n_components may come from a larger solve: up to sign, the CASES tolerance)
    import shiftlearn.adaptation._rf as rf_module

    X, y, sd = _toy()
    Xq = X[:9] + 0.1
    real_map = rf_module.rff_map
    calls = []

    def map_spy(A, *args, **kwargs):
        calls.append(A.shape[0])
        return real_map(A, *args, **kwargs)
    monkeypatch.setattr(rf_module, "rff_map", map_spy)
    mem = FitMemory()
    labels = [(y, sd), (np.where(sd < 0, y[::-1] % 2, -1), -sd)]     # the reverse fit's roles
    outs = []
    for yy, dd in labels:
        for k in (4, 2):
            est = Est(n_components=k, n_features=80, random_state=0, memory=mem).fit(X, yy, dd)
            outs.append((est, est.transform(X), est.transform(Xq)))
    assert calls.count(X.shape[0]) == 1 and calls.count(9) == 1
    for i, (est, Z_fit, Z_q) in enumerate(outs):
        plain = clone(est).set_params(memory=None).fit(X, *labels[i // 2])
        _same_up_to_sign(Z_fit, plain.transform(X), 1e-7)
        _same_up_to_sign(Z_q, plain.transform(Xq), 1e-7)


@pytest.mark.parametrize("d", [8, 60], ids=["n>d dense", "n<d factored"])
def test_coral_factorises_each_domain_once_with_the_same_results(d):
    # the factorisation of a domain depends on its rows only (the SVD) or on its rows and the
    # shrinkage (the covariance's eigendecomposition): another shrinkage (factored route) and
    # the domains' roles swapped (circular validation's reverse fit) reuse it, bit for bit
    from shiftlearn.adaptation import CORAL

    rng = np.random.default_rng(0)
    X = rng.normal(size=(50, d)) * rng.uniform(0.5, 2.0, size=d)
    X[30:] = X[30:] * 1.5 + 0.3
    sd = np.where(np.arange(50) < 30, 1, -1)
    mem = FitMemory()
    for shrinkage in ("ledoit_wolf", 1.0, 0.5):
        for roles in (sd, -sd):
            plain = CORAL(shrinkage=shrinkage).fit(X, sample_domain=roles)
            shared = CORAL(shrinkage=shrinkage, memory=mem).fit(X, sample_domain=roles)
            np.testing.assert_array_equal(shared.transform(X, roles), plain.transform(X, roles))
    # factored: one SVD per domain for all 6 fits; dense: one eigh per domain and shrinkage
    assert len(mem) == (2 if d > 50 - 30 else 6)
    assert mem.hits == (10 if d > 50 - 30 else 6)


def test_the_rows_kernel_serves_other_domains_and_labels(monkeypatch):
    # circular validation refits each candidate with the domains' roles swapped and the target
    # rows pseudo-labelled: the kernel of the same rows is computed once, for TCA and SCA alike
    from shiftlearn.adaptation import _base

    X, y, sd = _toy()
    real = _base.kernel_matrix
    calls = []

    def spy(A, B=None, **kw):
        calls.append((A.shape[0], None if B is None else B.shape[0]))
        return real(A, B, **kw)
    monkeypatch.setattr(_base, "kernel_matrix", spy)
    mem = FitMemory()
    flipped = np.where(sd > 0, -1, y[::-1] % 3)                 # pseudo-labels on the targets
    outs = []
    for Est in (TCA, SCA):
        for yy, dd in ((y, sd), (flipped, -sd)):
            est = Est(n_components=2, kernel="rbf", bandwidth=1.0, memory=mem).fit(X, yy, dd)
            plain = Est(n_components=2, kernel="rbf", bandwidth=1.0).fit(X, yy, dd)
            outs.append((est, plain))
    assert calls.count((X.shape[0], None)) == 1 + 4           # once with memory, 4 without
    for est, plain in outs:
        np.testing.assert_allclose(est.eigenvalues_, plain.eigenvalues_, rtol=1e-10)


@pytest.mark.parametrize("make", [lambda m: TCA(memory=m), lambda m: SCA(memory=m),
                                  lambda m: RFTCA(memory=m, exact=True)])
def test_transform_reuses_the_fits_fingerprint_of_its_rows(make):
    """The test-kernel key of ``transform`` uses the fit's fingerprint of ``X_fit_`` (not a
    second hash of it); it is that of ``X_fit_`` after every refit, and a refit without
    memory forgets it."""
    X, y, sd = make_sca_toy(n_per_cluster=8, random_state=0)
    est = make(FitMemory()).fit(X, y, sd)
    assert est._fit_rows_key() == FitMemory.fingerprint(est.X_fit_)
    est.fit(X[::-1].copy(), y[::-1], sd[::-1])
    assert est._fit_rows_key() == FitMemory.fingerprint(est.X_fit_)
    est.set_params(memory=None).fit(X, y, sd)
    assert est._rows_fingerprint is None
    assert est._fit_rows_key() == FitMemory.fingerprint(est.X_fit_)
