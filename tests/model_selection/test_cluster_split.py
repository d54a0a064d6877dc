"""ClusterSplit / constrained kernel k-means (Napoli & White): the paper's checklist."""

import itertools

import numpy as np
import pytest
from _tolerances import EPS, EPS32, mmd_atol, quad_atol, rbf_err, sum_atol
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import GridSearchCV, cross_val_score, cross_validate

from shiftlearn import ClusterSplit
from shiftlearn.kernels import (
    gamma_from_sigma,
    kernel_matrix,
    linear_kernel,
    median_heuristic,
    mmd2_from_kernels,
    nystroem,
    rbf_kernel,
    sigma_from_gamma,
)
from shiftlearn.model_selection import (
    LeaveOneDomainOut,
    RandomStratifiedSplit,
    constrained_kernel_kmeans,
    split_mmd2,
)
from shiftlearn.model_selection import _cluster_kmeans as ckm
from shiftlearn.model_selection._cluster_kmeans import (
    _stats,
    assign_k_clusters,
    assign_two_clusters,
    group_bounds,
    kernel_operator,
)
from shiftlearn.model_selection._splitters import constraint_codes


def _data(n=240, d=4, seed=0, n_classes=3, n_domains=3):
    rng = np.random.default_rng(seed)
    dom = rng.integers(1, n_domains + 1, n)
    y = rng.integers(0, n_classes, n)
    X = rng.normal(size=(n, d)) + dom[:, None] * 0.7 + y[:, None] * 0.3
    return X, y, dom


def _expected_counts(codes, h):
    sizes = np.bincount(codes)
    return np.floor(h * sizes + 0.5).astype(int)


# ------------------------------------------------------------------ constraints
@pytest.mark.parametrize("stratify", ["label_domain", "label", "domain", None])
@pytest.mark.parametrize("h", [0.2, 0.37, 0.5])
def test_hard_constraints_hold_exactly(stratify, h):
    X, y, dom = _data(seed=1)
    cv = ClusterSplit(test_size=h, stratify=stratify, random_state=0)
    (tr, va), = list(cv.split(X, y, dom))
    assert np.intersect1d(tr, va).size == 0
    assert np.array_equal(np.sort(np.r_[tr, va]), np.arange(X.shape[0]))
    codes = constraint_codes(y, dom, stratify, X.shape[0])
    in_val = np.bincount(codes[va], minlength=codes.max() + 1)
    assert np.array_equal(in_val, _expected_counts(codes, h))


def test_soft_constraints_within_bounds_and_relaxing_helps():
    X, y, dom = _data(seed=2)
    codes = constraint_codes(y, dom, "label_domain", X.shape[0])
    hard = constrained_kernel_kmeans(X, codes, test_size=0.3, random_state=0)
    soft = constrained_kernel_kmeans(X, codes, test_size=0.3, tolerance=0.5, random_state=0)
    _, lo, hi = group_bounds(np.bincount(codes), 0.3, 0.5)
    cnt = np.bincount(codes[soft.labels == 1], minlength=lo.size)
    assert np.all(cnt >= lo) and np.all(cnt <= hi)
    assert np.any(lo < hi)
    assert soft.objective <= hard.objective + 1e-9  # a larger feasible set: Psi no worse
    assert np.all(np.diff(soft.objective_trace) <= 1e-9)


def test_k_fold_bounds():
    X, y, dom = _data(n=203, seed=3)
    cv = ClusterSplit(n_splits=4, random_state=0)
    folds = list(cv.split(X, y, dom))
    assert len(folds) == 4 == cv.get_n_splits()
    codes = constraint_codes(y, dom, "label_domain", X.shape[0])
    sizes = np.bincount(codes)
    allval = np.concatenate([va for _, va in folds])
    assert np.array_equal(np.sort(allval), np.arange(X.shape[0]))
    for tr, va in folds:
        cnt = np.bincount(codes[va], minlength=sizes.size)
        assert np.all(cnt >= sizes // 4) and np.all(cnt <= -(-sizes // 4))
        assert 203 // 4 <= len(va) <= 203 // 4 + 1
        assert np.intersect1d(tr, va).size == 0
    assert cv.mmd2_.shape == (4,) and np.all(cv.mmd2_ > cv.mmd2_init_)


# ------------------------------------------------------------------ monotonicity and MMD
@pytest.mark.parametrize("kernel,n_landmarks", [("rbf", None), ("linear", None), ("rbf", 60)])
def test_objective_never_increases_and_mmd_grows(kernel, n_landmarks):
    X, y, dom = _data(seed=4)
    for seed in range(3):
        cv = ClusterSplit(kernel=kernel, n_landmarks=n_landmarks, random_state=seed)
        list(cv.split(X, y, dom))
        res_trace = np.array(cv.objective_trace_)
        assert np.all(np.diff(res_trace) <= 1e-9 * abs(res_trace[0]))
        # fixed sizes: MMD never decreases along the run (Eq. 11 corollary)
        mmds = np.array([m[0] for m in cv.mmd2_trace_])
        # up to two MMD^2 round-offs: 4 c n eps for kernels <= 1, c n eps |ell|^T |X||X|^T
        # |ell| (<= 4 max|x|^2) for the linear one; a step that lowers it is off by ~1e-3
        n = len(X)
        tol = mmd_atol(n) if kernel == "rbf" else quad_atol(
            np.full(n, 2.0 / n), np.full((n, n), np.max(np.sum(X * X, axis=1))))
        assert np.all(np.diff(mmds) >= -2 * tol)
        assert cv.mmd2_[0] >= cv.mmd2_init_[0]
        assert cv.mmd2_[0] > 5 * cv.mmd2_init_[0]   # far more shifted than a random split
        assert cv.converged_


def test_cost_sandwich_and_fixed_point():
    X, y, dom = _data(seed=5)
    codes = constraint_codes(y, dom, "label_domain", X.shape[0])
    res = constrained_kernel_kmeans(X, codes, random_state=0)
    psi = res.objective_trace
    for t, cost in enumerate(res.cost_trace[:len(psi) - 1]):
        assert psi[t] + 1e-9 >= cost >= psi[t + 1] - 1e-9   # assignment, then centroid update
    again = constrained_kernel_kmeans(X, codes, init=res.labels)
    assert again.n_iter == 1 and np.array_equal(again.labels, res.labels)


# ------------------------------------------------------------ Eq. 11 and the K-cluster identity
@pytest.mark.parametrize("kernel", ["rbf", "linear"])
def test_mmd_kmeans_identity_eq11(kernel):
    X, _, _ = _data(n=150, seed=6)
    n = X.shape[0]
    op, gamma = kernel_operator(X, kernel=kernel)
    K = rbf_kernel(X, sigma=sigma_from_gamma(gamma)) if kernel == "rbf" else linear_kernel(X)
    ssq = np.trace(K) - K.sum() / n
    # round-off: ssq and psi are sums of n^2 kernel entries of weight <= 1 / n_j, each known
    # to dK (the operator forms K in its own order: rbf_err, or gamma_d |x||y|), so
    # c n eps (tr|K| + sum|K| / n) + 3 n max dK, scaled by n / (|T| |V|); the MMD^2 itself
    # adds 4 c n eps max|K| (a wrong n / (|T| |V|) or centring is off by O(1) relative)
    dK = (rbf_err(X, X, sigma_from_gamma(gamma)) if kernel == "rbf"
          else 4 * X.shape[1] * EPS * (np.abs(X) @ np.abs(X).T))
    scale = 8 * n * EPS * (np.trace(np.abs(K)) + np.abs(K).sum() / n) + 3 * n * np.max(dK)
    rng = np.random.default_rng(0)
    for size in (1, 17, 75, 149):
        labels = np.zeros(n, dtype=int)
        labels[rng.choice(n, size, replace=False)] = 1
        psi = _stats(op, labels, 2).psi
        T, V = labels == 0, labels == 1
        mmd = mmd2_from_kernels(K[np.ix_(T, T)], K[np.ix_(V, V)], K[np.ix_(T, V)])
        rhs = n / (T.sum() * V.sum()) * (ssq - psi)
        tol = n / (T.sum() * V.sum()) * scale + 16 * n * EPS * np.max(np.abs(K))
        assert abs(mmd - rhs) <= tol


def test_k_cluster_identity():
    X, y, dom = _data(n=120, seed=7)
    n = X.shape[0]
    codes = constraint_codes(y, dom, "label_domain", n)
    res = constrained_kernel_kmeans(X, codes, n_clusters=3, random_state=0)
    K = rbf_kernel(X, sigma=sigma_from_gamma(1.0 / X.shape[1]))
    # kernel entries formed in another order (rbf_err) weighted by 4 in all, plus two
    # MMD^2 round-offs (one cluster's rows in another is off by ~1e-2)
    atol = 4 * np.max(rbf_err(X, X, sigma_from_gamma(1.0 / X.shape[1]))) + 2 * mmd_atol(n)
    total = 0.0
    for j in range(3):
        C = res.labels == j
        nj = C.sum()
        m = mmd2_from_kernels(K[np.ix_(C, C)], K[np.ix_(~C, ~C)], K[np.ix_(C, ~C)])
        assert abs(m - res.mmd2[j]) <= atol
        total += nj * (n - nj) ** 2 / n**2 * m
    assert abs((res.ssq_total - res.objective) - total) < 1e-10 * res.ssq_total


# ------------------------------------------------------------------ closed form vs the paper's LP
def test_closed_form_equals_lp_on_assignment_step():
    rng = np.random.default_rng(8)
    for trial in range(15):
        n = int(rng.integers(10, 80))
        D = rng.random((n, 2)) * rng.choice([0.1, 1, 10])
        if trial % 3 == 0:
            D = np.round(D, 1)          # ties
        codes = rng.integers(0, 4, n)
        _, codes = np.unique(codes, return_inverse=True)
        tau = 0.0 if trial % 2 else 0.6
        _, lo, hi = group_bounds(np.bincount(codes), rng.uniform(0.1, 0.9), tau)
        v1, c1 = assign_two_clusters(D, codes, lo, hi, solver="closed_form")
        v2, c2 = assign_two_clusters(D, codes, lo, hi, solver="lp")
        assert abs(c1 - c2) <= 1e-9 * max(1.0, abs(c1))
        for sel in (v1, v2):
            cnt = np.bincount(codes[sel], minlength=lo.size)
            assert np.all(cnt >= lo) and np.all(cnt <= hi)


def test_assignment_brute_force_and_both_sides():
    rng = np.random.default_rng(9)
    n = 9
    codes = np.array([0, 0, 0, 0, 1, 1, 1, 1, 1])
    lo = hi = np.array([1, 2])
    for _ in range(10):
        D = rng.random((n, 2))
        best = np.inf
        for a in itertools.combinations(range(4), 1):
            for b in itertools.combinations(range(4, 9), 2):
                for v in (0, 1):            # either cluster may be the validation one
                    sel = np.zeros(n, bool)
                    sel[list(a) + list(b)] = True
                    best = min(best, D[sel, v].sum() + D[~sel, 1 - v].sum())
        _, cost = assign_two_clusters(D, codes, lo, hi)
        # n entries of D summed in another order: c n eps sum|D| (the next best
        # assignment differs by one entry's change, ~1e-2)
        assert abs(cost - best) <= 4 * n * EPS * np.abs(D).sum()
    # a case where only the "validation = old train cluster" LP reaches the optimum
    D = np.c_[np.r_[np.zeros(2), np.ones(7)], np.r_[np.ones(2), np.zeros(7)] + 0.01]
    codes = np.zeros(n, int)
    sel, cost = assign_two_clusters(D, codes, np.array([2]), np.array([2]))
    assert abs(cost - 0.07) <= 4 * n * EPS * np.abs(D).sum() and sel[:2].all()


@pytest.mark.parametrize("kw", [{}, {"kernel": "linear"}, {"n_landmarks": 50}])
def test_closed_form_and_lp_runs_agree(kw):
    X, y, dom = _data(n=160, seed=10)
    cv_a = ClusterSplit(random_state=3, **kw)
    cv_b = ClusterSplit(random_state=3, solver="lp", **kw)
    (_, va_a), = cv_a.split(X, y, dom)
    (_, va_b), = cv_b.split(X, y, dom)
    assert abs(cv_a.objective_ - cv_b.objective_) < 1e-9 * cv_a.objective_
    assert np.array_equal(va_a, va_b)


def test_k_cluster_lp_matches_brute_force():
    rng = np.random.default_rng(11)
    n, k = 7, 3
    codes = np.array([0, 0, 0, 0, 1, 1, 1])
    lo, hi = np.array([1, 1]), np.array([2, 1])
    D = rng.random((n, k))
    best = np.inf
    for lab in itertools.product(range(k), repeat=n):
        lab = np.array(lab)
        ok = all(lo[g] <= np.sum((codes == g) & (lab == j)) <= hi[g]
                 for g in range(2) for j in range(k))
        sizes = np.bincount(lab, minlength=k)
        if ok and sizes.min() >= 2 and sizes.max() <= 3:
            best = min(best, D[np.arange(n), lab].sum())
    _, cost = assign_k_clusters(D, codes, lo, hi, 2, 3)
    assert abs(cost - best) <= 4 * n * EPS * np.abs(D).sum()      # n entries, any order


# ------------------------------------------------------------------ kernel paths
def test_nystroem_with_all_points_equals_exact():
    X, y, dom = _data(n=120, seed=12)
    codes = constraint_codes(y, dom, "label_domain", X.shape[0])
    (_, va), = RandomStratifiedSplit(random_state=5).split(X, y, dom)
    lab0 = np.zeros(X.shape[0], int)
    lab0[va] = 1
    exact = constrained_kernel_kmeans(X, codes, init=lab0)
    nys = constrained_kernel_kmeans(X, codes, init=lab0, n_landmarks=X.shape[0],
                                    random_state=0)
    assert np.array_equal(exact.labels, nys.labels)
    assert abs(exact.objective - nys.objective) < 1e-6 * exact.objective
    assert abs(exact.mmd2[0] - nys.mmd2[0]) < 1e-6


def test_nystroem_equals_linear_kmeans_on_nystroem_features():
    X, y, dom = _data(n=200, seed=13)
    codes = constraint_codes(y, dom, "label_domain", X.shape[0])
    q, gamma = 40, 0.25
    lab0 = constrained_kernel_kmeans(X, codes, max_iter=1, kernel="linear",
                                     random_state=1).labels
    a = constrained_kernel_kmeans(X, codes, init=lab0, gamma=gamma, n_landmarks=q,
                                  random_state=7)
    # same landmarks: kernel_operator draws them from the same seed
    Z = nystroem(q, sigma_from_gamma(gamma), random_state=np.random.default_rng(7)
                 ).fit_transform(X)
    b = constrained_kernel_kmeans(Z, codes, init=lab0, kernel="linear")
    assert np.array_equal(a.labels, b.labels)
    assert abs(a.mmd2[0] - b.mmd2[0]) < 1e-9


def test_linear_explicit_equals_kernel_trick():
    X, y, dom = _data(n=150, seed=14)
    codes = constraint_codes(y, dom, "label", X.shape[0])
    a = constrained_kernel_kmeans(X, codes, kernel="linear", random_state=0)
    def lin(A, B):
        return kernel_matrix(A, B, kernel="linear")

    b = constrained_kernel_kmeans(X, codes, kernel=lin, random_state=0)
    assert np.array_equal(a.labels, b.labels)
    assert abs(a.objective - b.objective) < 1e-8 * abs(a.objective)


def test_permutation_equivariance():
    X, y, dom = _data(n=150, seed=15)
    codes = constraint_codes(y, dom, "label_domain", X.shape[0])
    res = constrained_kernel_kmeans(X, codes, random_state=0, max_iter=1)
    full = constrained_kernel_kmeans(X, codes, init=res.labels)
    perm = np.random.default_rng(0).permutation(X.shape[0])
    pres = constrained_kernel_kmeans(X[perm], codes[perm] + 10, init=res.labels[perm])
    assert np.array_equal(pres.labels, full.labels[perm])


def test_split_mmd2_matches_diagnostic():
    X, y, dom = _data(n=130, seed=16)
    cv = ClusterSplit(random_state=0)
    (tr, va), = cv.split(X, y, dom)
    # two computations of one MMD^2: the Gaussian's round-off (weighted by 4) and the sums'
    atol = 4 * np.max(rbf_err(X, X, sigma_from_gamma(cv.gamma_))) + 2 * mmd_atol(len(X))
    assert abs(split_mmd2(X, tr, va) - cv.mmd2_[0]) <= atol


def test_featurizer_is_used():
    from sklearn.preprocessing import StandardScaler

    X, y, dom = _data(n=120, seed=17)
    X[:, 0] *= 100
    sc = StandardScaler().fit(X)
    a = ClusterSplit(featurizer=sc, random_state=0)
    b = ClusterSplit(random_state=0)
    (_, va_a), = a.split(X, y, dom)
    list(b.split(sc.transform(X), y, dom))
    assert np.array_equal(a.labels_, b.labels_) and np.array_equal(np.flatnonzero(a.labels_), va_a)
    c = ClusterSplit(featurizer=sc.transform, random_state=0)
    list(c.split(X, y, dom))
    assert np.array_equal(c.labels_, a.labels_)


# ------------------------------------------------------------------ scikit-learn integration
def test_works_in_gridsearch_cross_validate_cross_val_score():
    X, y, dom = _data(n=180, seed=18, n_classes=2)
    cv = ClusterSplit(n_splits=3, random_state=0)
    gs = GridSearchCV(LogisticRegression(), {"C": [0.01, 1.0]}, cv=cv).fit(X, y, groups=dom)
    assert len(gs.cv_results_["split2_test_score"]) == 2 and cv.mmd2_.shape == (3,)
    out = cross_validate(LogisticRegression(), X, y, groups=dom, cv=ClusterSplit(random_state=0))
    assert out["test_score"].shape == (1,)
    s = cross_val_score(LogisticRegression(), X, y, groups=dom, cv=LeaveOneDomainOut())
    assert s.shape == (3,)
    s = cross_val_score(LogisticRegression(), X, y, groups=dom,
                        cv=RandomStratifiedSplit(n_splits=4, random_state=0))
    assert s.shape == (4,)
    assert "ClusterSplit(" in repr(cv)


def test_random_baseline_has_the_cluster_split_counts():
    X, y, dom = _data(seed=19)
    (_, va_r), = RandomStratifiedSplit(random_state=0).split(X, y, dom)
    (_, va_c), = ClusterSplit(random_state=0).split(X, y, dom)
    codes = constraint_codes(y, dom, "label_domain", X.shape[0])
    assert np.array_equal(np.bincount(codes[va_r]), np.bincount(codes[va_c]))
    assert split_mmd2(X, np.setdiff1d(np.arange(len(y)), va_c), va_c) > \
        split_mmd2(X, np.setdiff1d(np.arange(len(y)), va_r), va_r)


def test_leave_one_domain_out():
    _, _, dom = _data(n=50, seed=20)
    folds = list(LeaveOneDomainOut().split(None, None, dom))
    assert len(folds) == LeaveOneDomainOut().get_n_splits(groups=dom) == 3
    for tr, va in folds:
        assert np.unique(dom[va]).size == 1 and dom[va][0] not in dom[tr]
    with pytest.raises(ValueError, match="groups"):
        list(LeaveOneDomainOut().split(np.zeros((3, 1))))


# ------------------------------------------------------------------ errors and edge cases
def test_errors_and_warnings():
    X, y, dom = _data(n=60, seed=21)
    with pytest.raises(ValueError, match="continuous"):
        list(ClusterSplit().split(X, y + 0.5, dom))
    with pytest.raises(ValueError, match="test_size"):
        list(ClusterSplit(test_size=1.5).split(X, y, dom))
    with pytest.raises(ValueError, match="stratify"):
        list(ClusterSplit(stratify="bogus").split(X, y, dom))
    with pytest.raises(ValueError, match="kernel"):
        list(ClusterSplit(kernel="poly").split(X, y, dom))
    with pytest.raises(ValueError, match="needs groups"):
        list(ClusterSplit(stratify="domain").split(X, y))
    with pytest.raises(ValueError, match="no row in validation"):
        list(ClusterSplit(test_size=0.01, stratify="label_domain").split(X[:9], y[:9], dom[:9]))
    y2 = y.copy()
    y2[0] = 7                          # a singleton class: round(0.2 * 1) = 0
    with pytest.warns(UserWarning, match="entirely to the training side"):
        list(ClusterSplit(random_state=0).split(X, y2, dom))
    # continuous targets work with domain strata (regression)
    (tr, va), = ClusterSplit(stratify="domain", random_state=0).split(X, y + 0.5, dom)
    assert np.array_equal(np.bincount(dom[va])[1:], _expected_counts(dom - 1, 0.2))


# ------------------------------------------------------------------ real data (skips without it)
def test_office_caltech_small_set_random_start_is_sticky_pca_start_is_not(data_home):
    """dslr + webcam (452 rows, 800-d): each row's own weight in its centroid (2/|V| ~ 0.02)
    outweighs the spread of the distance differences, so the random start is already a fixed
    point of the paper's Lloyd step; the PCA start finds a far more shifted split."""
    from shiftlearn.datasets import load_office_caltech

    ds = load_office_caltech(data_home)
    X, y, d = ds.pack(sources=["dslr", "webcam"])
    rnd = ClusterSplit(random_state=0)
    (tr, va), = rnd.split(X, y, d)
    (tr_r, va_r), = RandomStratifiedSplit(random_state=0).split(X, y, d)
    codes = constraint_codes(y, d, "label_domain", X.shape[0])
    assert np.array_equal(np.bincount(codes[va]), np.bincount(codes[va_r]))
    assert rnd.n_iter_ == 1 and np.array_equal(va, va_r)       # stuck at the random start
    pca = ClusterSplit(init="pca", random_state=0)
    (tr_p, va_p), = pca.split(X, y, d)
    assert np.array_equal(np.bincount(codes[va_p]), np.bincount(codes[va_r]))
    assert pca.mmd2_[0] >= pca.mmd2_init_[0]
    assert split_mmd2(X, tr_p, va_p) > 3 * split_mmd2(X, tr, va)
    lodo = np.mean([split_mmd2(X, a, b) for a, b in LeaveOneDomainOut().split(X, y, d)])
    assert split_mmd2(X, tr_p, va_p) > lodo


def test_pca_init_synthetic_and_errors():
    X, y, dom = _data(seed=22)
    cv = ClusterSplit(init="pca", n_init=3, random_state=0)
    (tr, va), = cv.split(X, y, dom)
    codes = constraint_codes(y, dom, "label_domain", X.shape[0])
    assert np.array_equal(np.bincount(codes[va]), _expected_counts(codes, 0.2))
    with pytest.raises(ValueError, match="init"):
        list(ClusterSplit(init="pca", n_splits=3).split(X, y, dom))
    with pytest.raises(ValueError, match="init"):
        list(ClusterSplit(init="bogus").split(X, y, dom))


def test_cli_splits(data_home, capsys):
    from shiftlearn.cli import main as shiftlearn_main

    def main(argv):  # `shiftlearn demo splits ...`
        return shiftlearn_main(["demo", "splits", *argv])

    assert main(["--holdout", "amazon", "--data-home", data_home]) == 0
    out = capsys.readouterr().out
    assert "cluster (rbf)" in out and "leave-one-domain-out" in out


# ----------------------------------------------------- bandwidth, and the former gamma (a release)
def test_bandwidth_is_the_other_estimators_spec_and_none_stays_one_over_d():
    X, y, g = _data(n=90)
    cv = ClusterSplit(random_state=0)
    list(cv.split(X, y, g))
    assert cv.gamma_ == 1.0 / X.shape[1]                 # not through the n_features rule
    cv = ClusterSplit(bandwidth="0.5*median", random_state=0)
    list(cv.split(X, y, g))
    assert cv.gamma_ == gamma_from_sigma(0.5 * median_heuristic(X, random_state=0))
    with pytest.raises(ValueError, match="^bandwidth must be a positive float, a rule among"):
        list(ClusterSplit(bandwidth="silverman").split(X, y, g))


@pytest.mark.parametrize("gamma, bandwidth", [(None, None), ("median", "median"),
                                              ("median_sq", "median_sq"), (0.37, None)])
@pytest.mark.parametrize("n_landmarks", [None, 30])
def test_former_gamma_warns_and_gives_the_same_split_bit_for_bit(gamma, bandwidth, n_landmarks):
    import warnings

    X, y, g = _data(n=90)
    with pytest.warns(FutureWarning, match=r"^ClusterSplit: gamma is replaced by bandwidth; "
                                           r"pass bandwidth="):
        old = ClusterSplit(gamma=gamma, n_landmarks=n_landmarks, random_state=0)
        folds_old = list(old.split(X, y, g))
    assert old.gamma == gamma                            # __init__ stores it as given
    if isinstance(gamma, float):                         # a number is used as it is
        assert old.gamma_ == gamma
        return
    with warnings.catch_warnings():
        warnings.simplefilter("error", FutureWarning)
        new = ClusterSplit(bandwidth=bandwidth, n_landmarks=n_landmarks, random_state=0)
        folds_new = list(new.split(X, y, g))
    assert old.gamma_ == new.gamma_
    np.testing.assert_array_equal(old.labels_, new.labels_)
    np.testing.assert_array_equal(old.mmd2_, new.mmd2_)
    for (a, b), (c, d) in zip(folds_old, folds_new, strict=True):
        np.testing.assert_array_equal(a, c)
        np.testing.assert_array_equal(b, d)
    with pytest.raises(ValueError, match=r"^ClusterSplit got both gamma=.* and bandwidth=0.5; "
                                         "gamma is the former parameter: give bandwidth only"):
        list(ClusterSplit(gamma=gamma, bandwidth=0.5).split(X, y, g))


# ------------------------------------------------------------------------- edge cases
# Edges of the constrained kernel k-means (issue #23, rows 4 and 5): ``n_init`` keeps the best
# restart, and the factored (linear / Nyström) path chooses the same side as the full kernel on
# asymmetric data (unequal clusters, off-centre blobs).


def _asymmetric(n_big=70, n_small=18, d=3, seed=0):
    """A big blob and a small, far, off-centre one: the two clusters have very different
    sizes and mean norms, so no symmetry hides a sign or a side."""
    rng = np.random.default_rng(seed)
    X = np.r_[rng.normal(size=(n_big, d)) + 1.0,
              0.5 * rng.normal(size=(n_small, d)) + np.array([4.0, -1.0, 2.5])[:d]]
    codes = np.r_[np.zeros(n_big, int), np.ones(n_small, int)]
    rng.shuffle(codes)                   # groups that cut across the blobs
    return X, codes


# ------------------------------------------------------------------ row 4: n_init keeps the best
def test_n_init_keeps_the_lowest_objective(monkeypatch):
    X, codes = _asymmetric(seed=1)
    seen = []
    real = ckm._lloyd

    def spy(*args, **kwargs):
        out = real(*args, **kwargs)
        seen.append(out[0].psi)
        return out

    monkeypatch.setattr(ckm, "_lloyd", spy)
    res = constrained_kernel_kmeans(X, codes, test_size=0.3, gamma=0.5, n_init=8,
                                    max_iter=2, random_state=0)
    assert len(seen) == 8
    assert max(seen) - min(seen) > 1e-6 * abs(min(seen))   # the restarts do differ
    assert res.objective == min(seen)
    # the first restart is the n_init=1 run with the same seed: restarts can only improve it
    one = constrained_kernel_kmeans(X, codes, test_size=0.3, gamma=0.5, n_init=1,
                                    max_iter=2, random_state=0)
    assert one.objective == seen[0] and res.objective <= one.objective


def test_n_init_result_is_consistent_with_its_labels():
    """The returned objective / MMD belong to the returned labels (not to another restart)."""
    X, codes = _asymmetric(seed=2)
    res = constrained_kernel_kmeans(X, codes, test_size=0.3, kernel="linear", n_init=6,
                                    max_iter=2, random_state=3)
    again = constrained_kernel_kmeans(X, codes, test_size=0.3, kernel="linear",
                                      init=res.labels, max_iter=1)
    # SSq - sum_j ||U_j||^2 / n_j, both <= sum ||x||^2: sums of n d terms in another order
    # (another restart's labels change it by percents)
    atol = 8 * X.shape[0] * X.shape[1] * EPS * np.sum(X * X)
    assert again.objective_trace[0] == pytest.approx(res.objective, rel=0, abs=atol)


# ------------------------------------------- row 5: factored operator vs the full kernel matrix
def _full_linear_op(X):
    op, _ = kernel_operator(X, kernel=lambda A, B: kernel_matrix(A, B, kernel="linear"))
    return op


def _nystroem_as_full(op_ny):
    K = op_ny.Phi @ op_ny.M @ op_ny.Phi.T
    return ckm._KernelOperator(diag=op_ny.diag.copy(), kind="callable", K=K)


@pytest.mark.parametrize("path", ["linear", "nystroem"])
@pytest.mark.parametrize("val_size", [8, 30, 60])
def test_factored_delta_and_colsum_equal_the_full_kernel(path, val_size):
    """The two-cluster shortcut (one matrix-vector product, constant term c1 - c0) gives the
    same delta = D1 - D0 and column sums as the full distance matrix."""
    X, _ = _asymmetric()
    if path == "linear":
        op, _ = kernel_operator(X, kernel="linear")
        full = _full_linear_op(X)
    else:
        op, _ = kernel_operator(X, kernel="rbf", gamma=0.3, n_landmarks=25, random_state=0)
        full = _nystroem_as_full(op)
    labels = np.zeros(X.shape[0], np.int64)
    labels[-val_size:] = 1               # cluster 1 = mostly the small blob, sizes unequal
    a = _stats(op, labels, 2, need_D=False)
    b = _stats(full, labels, 2, need_D=True)
    assert a.D is None                   # the shortcut was taken
    scale = np.abs(b.delta).max()
    np.testing.assert_allclose(a.delta, b.delta, atol=1e-9 * scale)
    np.testing.assert_allclose(a.colsum, b.colsum, rtol=1e-9)
    assert a.psi == pytest.approx(b.psi, rel=1e-10)


@pytest.mark.parametrize("tolerance", [0.0, 0.5])
def test_linear_path_chooses_the_same_split_as_the_full_kernel(tolerance):
    X, codes = _asymmetric(seed=4)
    rng = np.random.default_rng(0)
    init = np.zeros(X.shape[0], np.int64)
    for g in (0, 1):                     # a feasible start: 20% of each group
        rows = np.flatnonzero(codes == g)
        init[rng.choice(rows, int(np.floor(0.2 * rows.size + 0.5)), replace=False)] = 1
    a = constrained_kernel_kmeans(X, codes, kernel="linear", init=init, tolerance=tolerance)
    b = constrained_kernel_kmeans(X, codes, kernel=lambda A, B: A @ B.T, init=init,
                                  tolerance=tolerance)
    assert np.array_equal(a.labels, b.labels)
    np.testing.assert_allclose(a.objective_trace, b.objective_trace, rtol=1e-10)
    assert a.mmd2[0] == pytest.approx(b.mmd2[0], rel=1e-9)


# ------------------------------------------------------------------ ClusterSplit plumbing
def _labeled(seed=0):
    X, _ = _asymmetric(seed=seed)
    rng = np.random.default_rng(seed)
    y = (X[:, 0] + rng.normal(size=X.shape[0]) > 2).astype(int)
    groups = rng.choice([1, 2, 3], size=X.shape[0], p=[0.5, 0.3, 0.2])
    return X, y, groups


def _reference(X, y, groups, *, test_size, kernel="rbf", bandwidth=None, n_landmarks=None,
               tolerance=0.0, solver="closed_form", max_iter=100, tol=0.0, n_init=1,
               init="random", n_splits=1, stratify="label_domain", seed=0):
    """What ClusterSplit documents it does, spelled out with the public functions."""
    from shiftlearn.model_selection._splitters import constraint_codes

    codes = constraint_codes(y, groups, stratify, X.shape[0])
    rng = np.random.default_rng(seed)
    op, gamma_ = kernel_operator(X, kernel=kernel, bandwidth=bandwidth, n_landmarks=n_landmarks,
                                 random_state=rng)
    k = 2 if n_splits == 1 else n_splits
    res = constrained_kernel_kmeans(X, codes, n_clusters=k, test_size=test_size,
                                    tolerance=tolerance, solver=solver, max_iter=max_iter,
                                    tol=tol, n_init=n_init, random_state=rng, operator=op,
                                    init=init)
    return res, gamma_


CASES = [
    ({}, None),
    ({"kernel": "linear"}, "kernel"),
    ({"bandwidth": 0.5}, "bandwidth"),
    ({"bandwidth": "2*median", "n_landmarks": 15}, "n_landmarks"),
    ({"solver": "lp"}, None),           # the LP and the closed form give the same optimum
    ({"max_iter": 1}, "max_iter"),
    ({"tol": 0.9}, "tol"),
    ({"n_init": 4, "max_iter": 1, "seed": 1}, "n_init"),
    ({"init": "pca"}, "init"),
    ({"tolerance": 0.6}, "tolerance"),
    ({"n_splits": 3}, "n_splits"),
]


@pytest.mark.parametrize("params,key", CASES, ids=[",".join(c) or "defaults" for c, _ in CASES])
def test_cluster_split_passes_each_parameter_to_the_kmeans(params, key):
    from shiftlearn import ClusterSplit

    X, y, groups = _labeled()
    cv = ClusterSplit(test_size=0.3, random_state=params.get("seed", 0),
                      **{k: v for k, v in params.items() if k != "seed"})
    folds = list(cv.split(X, y, groups))
    res, gamma_ = _reference(X, y, groups, test_size=0.3, **params)
    np.testing.assert_array_equal(cv.labels_, res.labels)
    assert cv.objective_ == res.objective and cv.n_iter_ == res.n_iter
    assert cv.gamma_ == gamma_
    np.testing.assert_array_equal(cv.mmd2_, res.mmd2)
    n_folds = params.get("n_splits", 1)
    assert len(folds) == n_folds == cv.get_n_splits()
    if key is not None:                  # the parameter does change the split
        base, _ = _reference(X, y, groups, test_size=0.3,
                             **{k: v for k, v in params.items() if k != key})
        assert (not np.array_equal(base.labels, res.labels) or base.n_iter != res.n_iter
                or base.objective != res.objective)


def test_cluster_split_dict_tolerance_is_per_group():
    from shiftlearn import ClusterSplit
    from shiftlearn.model_selection._splitters import constraint_codes

    X, y, groups = _labeled(1)
    codes = constraint_codes(y, groups, "label_domain", X.shape[0])
    tau = np.zeros(codes.max() + 1)
    tau[[0, 3]] = [0.5, 0.8]
    a = ClusterSplit(test_size=0.3, tolerance={0: 0.5, 3: 0.8}, random_state=0)
    list(a.split(X, y, groups))
    res, _ = _reference(X, y, groups, test_size=0.3, tolerance=tau)
    np.testing.assert_array_equal(a.labels_, res.labels)


def test_cluster_split_defaults_and_stratify_fallback():
    from shiftlearn import ClusterSplit

    assert vars(ClusterSplit()) == {
        "n_splits": 1, "test_size": 0.2, "kernel": "rbf", "bandwidth": None,
        "stratify": "label_domain", "tolerance": 0, "n_landmarks": None, "featurizer": None,
        "random_state": None, "solver": "closed_form", "max_iter": 100, "tol": 0.0,
        "n_init": 1, "init": "random", "gamma": "deprecated"}
    X, y, _ = _labeled(2)
    # label_domain without groups is stratified by label, as stratify="label"
    a = ClusterSplit(test_size=0.3, random_state=0)
    (_, va_a), = a.split(X, y)
    b = ClusterSplit(test_size=0.3, stratify="label", random_state=0)
    (_, va_b), = b.split(X, y)
    np.testing.assert_array_equal(va_a, va_b)
    for c in (0, 1):
        assert (y[va_a] == c).sum() == int(np.floor(0.3 * (y == c).sum() + 0.5))


def test_cluster_split_errors_name_the_problem():
    from shiftlearn import ClusterSplit

    X, y, groups = _labeled(3)
    with pytest.raises(ValueError, match="^n_splits must be a positive integer, got 0"):
        list(ClusterSplit(n_splits=0).split(X, y, groups))

    def two_rows_short(A):
        return A[:-2]

    with pytest.raises(ValueError, match="^The featurizer returned 86 rows for 88 inputs"):
        list(ClusterSplit(featurizer=two_rows_short).split(X, y, groups))

    def nan_features(A):
        out = A.copy()
        out[0, 0] = np.nan
        return out

    with pytest.raises(ValueError, match="featurizer output contains NaN"):
        list(ClusterSplit(featurizer=nan_features).split(X, y, groups))


# ------------------------------------------------------------------ the Lloyd loop's contract
def test_fixed_point_trace_and_iteration_count():
    """tol = 0: Psi strictly decreases along the trace, the last assignment step reproduces
    the labels (converged), and n_iter counts the assignment steps (= len(trace))."""
    X, codes = _asymmetric(seed=5)
    for kw in ({}, {"kernel": "linear"}, {"gamma": 0.3, "n_landmarks": 20}):
        res = constrained_kernel_kmeans(X, codes, test_size=0.3, random_state=2, **kw)
        assert res.converged is True and res.n_iter >= 2
        assert len(res.objective_trace) == res.n_iter
        assert np.all(np.diff(res.objective_trace) < 0)
        assert res.objective == res.objective_trace[-1]


def test_max_iter_stop_is_not_convergence():
    X, codes = _asymmetric(seed=5)
    res = constrained_kernel_kmeans(X, codes, test_size=0.3, random_state=2, max_iter=1)
    assert res.n_iter == 1 and res.converged is False
    assert len(res.objective_trace) == 2


@pytest.mark.parametrize("tol,small", [(0.05, False), (0.3, False), (0.3, True)])
def test_tol_stops_at_the_first_small_gain(tol, small):
    """Stop after the first iteration whose gain is <= tol x the separation SSq - Psi (also
    when the separation is below 1: a small-scale linear kernel)."""
    if small:
        X = np.random.default_rng(0).normal(size=(120, 3)) * 0.05
        codes, kw = np.zeros(120, int), {"kernel": "linear"}
    else:
        X, codes = _asymmetric(seed=6, n_big=150, n_small=40)
        kw = {"gamma": 0.2}
    full = constrained_kernel_kmeans(X, codes, test_size=0.3, random_state=0, **kw)
    res = constrained_kernel_kmeans(X, codes, test_size=0.3, random_state=0, tol=tol, **kw)
    tr, ssq = res.objective_trace, res.ssq_total
    gains = -np.diff(tr)
    sep = ssq - np.asarray(tr[1:])
    assert res.converged is True
    assert np.all(gains[:-1] > tol * sep[:-1])         # every earlier step was worth it
    assert gains[-1] <= tol * sep[-1]                   # the last one was not
    # the same iterations: objectives <= sum_i k(x_i, x_i) (sum ||x||^2 linear, n rbf) to
    # c n eps of that, whatever the order of the sums
    kscale = np.sum(X * X) if kw.get("kernel") == "linear" else len(X)
    assert full.objective_trace[:len(tr)] == pytest.approx(tr, rel=0,
                                                         abs=8 * len(X) * EPS * kscale)
    assert res.n_iter < full.n_iter                     # tol did stop early


# ------------------------------------------------------------------ constraints
def test_soft_tolerance_is_used_by_both_solvers():
    from shiftlearn.model_selection._cluster_kmeans import group_bounds

    X, codes = _asymmetric(seed=7)
    hard = constrained_kernel_kmeans(X, codes, test_size=0.3, random_state=0)
    for solver in ("closed_form", "lp"):
        soft = constrained_kernel_kmeans(X, codes, test_size=0.3, tolerance=0.6,
                                         random_state=0, solver=solver)
        m, lo, hi = group_bounds(np.bincount(codes), 0.3, 0.6)
        cnt = np.bincount(codes[soft.labels == 1], minlength=m.size)
        assert np.all((cnt >= lo) & (cnt <= hi))
        assert np.any(cnt != m)                        # the slack is used ...
        assert soft.objective < hard.objective         # ... and pays off
        if solver == "closed_form":
            ref = soft
        else:
            np.testing.assert_array_equal(soft.labels, ref.labels)


def test_k_folds_with_tolerance_respect_the_soft_bounds_and_use_them():
    X, codes = _asymmetric(seed=8, n_big=90, n_small=30)
    K, tau = 3, 0.5
    res = constrained_kernel_kmeans(X, codes, n_clusters=K, tolerance=tau, random_state=0)
    sizes = np.bincount(codes)
    n = codes.size
    counts = np.array([np.bincount(codes[res.labels == j], minlength=sizes.size)
                       for j in range(K)])
    assert np.all(counts >= np.floor(sizes * (1 - tau) / K))
    assert np.all(counts <= np.ceil(sizes * (1 + tau) / K))
    tot = counts.sum(axis=1)
    assert np.all((tot >= np.floor(n * (1 - tau) / K)) & (tot <= np.ceil(n * (1 + tau) / K)))
    hard_hi = np.ceil(sizes / K)
    assert np.any(counts > hard_hi)                                   # the slack is used ...
    assert np.any(tot > np.ceil(n / K))                               # ... also by the folds


def test_random_k_fold_start_is_stratified_and_seeded():
    from shiftlearn.model_selection._cluster_kmeans import _init_labels

    codes = np.r_[np.tile([0, 1, 2], 5), np.zeros(4, int)]     # interleaved groups
    a = _init_labels(codes, 3, None, np.random.default_rng(0))
    b = _init_labels(codes, 3, None, np.random.default_rng(1))
    for g in range(3):
        cnt = np.bincount(a[codes == g], minlength=3)
        assert cnt.max() - cnt.min() <= 1              # each group spread evenly
    assert not np.array_equal(a, b)


def test_warning_for_groups_without_validation_rows_names_how_many():
    X, codes = _asymmetric(seed=9)
    codes = codes.copy()
    codes[:3] = [5, 6, 7]                               # three singleton groups: round(0.2) = 0
    with pytest.warns(UserWarning, match="^3 constraint group"):
        constrained_kernel_kmeans(X, codes, test_size=0.2, random_state=0)
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")                  # every group has a validation row
        constrained_kernel_kmeans(X, codes[::-1] * 0, test_size=0.2, random_state=0)


def test_argument_checks_both_sides():
    X, codes = _asymmetric(seed=10, n_big=12, n_small=6)
    n = X.shape[0]
    # boundaries that are accepted
    res = constrained_kernel_kmeans(X, np.zeros(n, int), n_clusters=n, random_state=0)
    assert sorted(res.labels.tolist()) == list(range(n))
    constrained_kernel_kmeans(X, codes, n_init=1, max_iter=1, random_state=0)
    bad = [
        ({"F": X[:, 0]}, r"^F must be 2-D, got shape \(18,\)"),
        ({"codes": codes[:-1]}, r"^codes must have shape \(18,\), got \(17,\)"),
        ({"n_clusters": 1}, r"^n_clusters must be an integer >= 2, got 1"),
        ({"n_clusters": n + 1}, r"^n_clusters=19 exceeds the number of rows \(18\)"),
        ({"n_init": 0}, r"^n_init must be a positive integer, got 0"),
        ({"max_iter": 0}, r"^max_iter must be a positive integer, got 0"),
        ({"solver": "simplex"}, r"^solver must be one of"),
        ({"test_size": 0.0}, r"^test_size must be a float in \(0, 1\), got 0.0"),
        ({"test_size": 1.0}, r"^test_size must be a float in \(0, 1\), got 1.0"),
        ({"test_size": 1.5}, r"^test_size must be a float in \(0, 1\), got 1.5"),
        ({"test_size": 0.97}, r"^test_size=0.97 puts every row in validation"),
    ]
    for kw, msg in bad:
        args = {"F": X, "codes": codes}
        args.update(kw)
        with pytest.raises(ValueError, match=msg):
            constrained_kernel_kmeans(args.pop("F"), args.pop("codes"), random_state=0, **args)


# ------------------------------------------------------------------ kernels of the clustering
@pytest.mark.parametrize("path", ["full", "linear", "nystroem"])
def test_pca_start_scores_are_the_leading_kernel_principal_component(path):
    from shiftlearn.model_selection._cluster_kmeans import _pca_scores

    X, _ = _asymmetric(seed=11)
    if path == "full":
        op, _ = kernel_operator(X, gamma=0.3)
    elif path == "linear":
        op, _ = kernel_operator(X, kernel="linear")
    else:
        op, _ = kernel_operator(X, gamma=0.3, n_landmarks=20, random_state=0)
        op_full = _nystroem_as_full(op)
    K = (op.K if op.K is not None else op.Phi @ (op.M if op.M is not None else np.eye(
        op.Phi.shape[1])) @ op.Phi.T)
    if path == "nystroem":
        K = op_full.K
    n = K.shape[0]
    H = np.eye(n) - 1.0 / n
    w, V = np.linalg.eigh(H @ K @ H)
    s = _pca_scores(op, np.random.default_rng(0))
    assert abs(np.corrcoef(s, V[:, -1])[0, 1]) > 1 - 1e-6
    assert w[-1] > 1.5 * w[-2]                          # a well-separated leading component


def test_split_mmd2_uses_gamma_and_the_given_kernel():
    from shiftlearn.kernels import mmd2_from_kernels, rbf_kernel, sigma_from_gamma
    from shiftlearn.model_selection import split_mmd2

    X, _ = _asymmetric(seed=12)
    tr, te = np.arange(0, 60), np.arange(60, X.shape[0])
    A, B = X[tr], X[te]
    s = sigma_from_gamma(2.0)
    ref = mmd2_from_kernels(rbf_kernel(A, sigma=s), rbf_kernel(B, sigma=s),
                            rbf_kernel(A, B, sigma=s))
    # another evaluation of the same MMD^2: the kernels' round-off weighted by 4 in all,
    # plus two sums' (absolute: MMD^2 is a difference; another gamma is off by percents)
    n = X.shape[0]
    atol = 4 * np.max(rbf_err(X, X, s)) + 2 * mmd_atol(n)
    assert split_mmd2(X, tr, te, gamma=2.0) == pytest.approx(ref, rel=0, abs=atol)
    assert split_mmd2(X, tr, te) != pytest.approx(ref, rel=1e-3)     # default gamma = 1/d
    lin = mmd2_from_kernels(A @ A.T, B @ B.T, A @ B.T)
    # linear: entries x.y off by gamma_d |x||y|, means of them weighted by 4, plus the sums
    G = np.abs(X) @ np.abs(X).T
    atol = 4 * 4 * X.shape[1] * EPS * np.max(G) + 2 * 4 * 4 * n * EPS * np.max(G)
    assert split_mmd2(X, tr, te, kernel="linear") == pytest.approx(lin, rel=0, abs=atol)
    assert lin == pytest.approx(float(np.sum((A.mean(0) - B.mean(0)) ** 2)), rel=1e-9)

    def cubic(P, Q):
        return (P @ Q.T + 1.0) ** 3

    ref3 = mmd2_from_kernels(cubic(A, A), cubic(B, B), cubic(A, B))
    # (x.y + 1)^3: x.y's gamma_d |x||y| times 3 (|x.y| + 1)^2, plus the cube's roundings;
    # weighted by 4, plus the sums
    K3 = (G + 1.0) ** 3
    dK3 = 3 * (G + 1.0) ** 2 * 4 * X.shape[1] * EPS * G + 4 * EPS * K3
    atol = 4 * np.max(dK3) + 2 * 4 * 4 * n * EPS * np.max(K3)
    assert split_mmd2(X, tr, te, kernel=cubic) == pytest.approx(ref3, rel=0, abs=atol)


@pytest.mark.parametrize("n_moved", [1, 5, 10, 11, 60, 85])
def test_incremental_cluster_sums_equal_a_fresh_computation(n_moved):
    """The factored path updates the cluster sums from the rows that moved (fewer than n/8)
    or recomputes them; either way the statistics equal a fresh computation (float32
    features: to float32 rounding)."""
    X, _ = _asymmetric(seed=13)                         # n = 88: n // 8 = 11
    for dtype in (np.float64, np.float32):
        op, _ = kernel_operator(X.astype(dtype), kernel="linear")
        rng = np.random.default_rng(n_moved)
        lab0 = (rng.random(88) < 0.4).astype(np.int64)
        lab1 = lab0.copy()
        idx = rng.choice(88, n_moved, replace=False)
        lab1[idx] = 1 - lab1[idx]
        prev = _stats(op, lab0, 2, need_D=False)
        inc = _stats(op, lab1, 2, prev=prev, need_D=False)
        fresh = _stats(op, lab1, 2, need_D=False)
        # sums of the rows in the working precision (float32 features: float32 rounding),
        # c n eps sum|x| absolute (the sums cancel); the incremental path adds and removes
        # the moved rows, so twice that; psi = sum_j ||U_j||^2 / n_j moves by
        # 2 ||U_j|| ||dU_j|| / n_j (a moved row left out is off by |x| ~ 1)
        eps = EPS if dtype == np.float64 else EPS32
        Xd = X.astype(dtype).astype(np.float64)
        exact = Xd[lab1 == 1].sum(axis=0)
        atol = 2 * sum_atol(Xd, axis=0, eps=eps)
        np.testing.assert_allclose(inc.U[:, 1], exact, rtol=0, atol=atol)
        np.testing.assert_allclose(inc.U, fresh.U, rtol=0, atol=atol)
        sizes = np.bincount(lab1, minlength=2)
        dpsi = np.sum(2 * np.linalg.norm(fresh.U, axis=0) * np.sqrt(X.shape[1]) * atol / sizes)
        assert inc.psi == pytest.approx(fresh.psi, rel=4 * X.shape[1] * eps, abs=dpsi)


def test_kernel_operator_arguments_both_sides():
    from shiftlearn.kernels import gamma_from_sigma, median_heuristic, rbf_kernel

    X, _ = _asymmetric(seed=14)
    op, g = kernel_operator(X)                          # defaults: rbf, gamma = 1 / d
    assert g == pytest.approx(1 / 3)
    # the Gaussian in another order: rbf_err (another gamma is off by percents)
    np.testing.assert_allclose(op.K, rbf_kernel(X, sigma=np.sqrt(1.5)), rtol=0,
                               atol=np.max(rbf_err(X, X, np.sqrt(1.5))))
    op, g = kernel_operator(X, gamma="median")          # a bandwidth rule, seed 0
    assert g == pytest.approx(gamma_from_sigma(median_heuristic(X, random_state=0)))
    op, _ = kernel_operator(X, gamma=0.5, n_landmarks=1, random_state=0)   # 1 landmark: ok
    assert op.Phi.shape == (X.shape[0], 1)
    for bad in (0.0, -1.0, np.inf, True, "bogus"):
        with pytest.raises(ValueError):
            kernel_operator(X, gamma=bad)
    with pytest.raises(ValueError, match="^gamma must be None, a positive float or a bandwidth"):
        kernel_operator(X, gamma=0.0)
    with pytest.raises(ValueError, match="^n_landmarks must be a positive integer or None, "
                                         "got 0"):
        kernel_operator(X, n_landmarks=0)


def test_gamma_reaches_the_kernel_and_result_shapes():
    X, codes = _asymmetric(seed=15)
    rng = np.random.default_rng(0)
    init = np.zeros(X.shape[0], np.int64)
    for g in (0, 1):
        rows = np.flatnonzero(codes == g)
        init[rng.choice(rows, int(np.floor(0.2 * rows.size + 0.5)), replace=False)] = 1
    a = constrained_kernel_kmeans(X, codes, gamma=2.0, init=init)
    op, _ = kernel_operator(X, gamma=2.0)
    b = constrained_kernel_kmeans(X, codes, operator=op, init=init)
    c = constrained_kernel_kmeans(X, codes, init=init)
    assert a.objective_trace == b.objective_trace and a.objective_trace != c.objective_trace
    # one split: one MMD value per trace entry; every iteration records its cost
    assert a.mmd2.shape == (1,) and a.mmd2_init.shape == (1,)
    assert all(v.shape == (1,) for v in a.mmd2_trace)
    assert len(a.mmd2_trace) == len(a.objective_trace)
    assert len(a.cost_trace) == a.n_iter
    # a float array of 0/1 is a valid init
    d = constrained_kernel_kmeans(X, codes, gamma=2.0, init=init.astype(float))
    assert d.objective_trace == a.objective_trace


def test_init_array_and_tol_checks():
    X, codes = _asymmetric(seed=16)
    n = X.shape[0]
    ok = np.r_[np.ones(20, int), np.zeros(n - 20, int)]
    for bad in (ok[:-1], np.r_[-1, ok[1:]], np.r_[2, ok[1:]]):
        with pytest.raises(ValueError, match=rf"^init must hold {n} labels in 0\.\.1\."):
            constrained_kernel_kmeans(X, codes, init=bad)
    with pytest.raises(ValueError, match="^An init array and n_init > 1 are exclusive"):
        constrained_kernel_kmeans(X, codes, init=ok, n_init=2)
    with pytest.raises(ValueError, match=r"^tol must be a float >= 0, got -0.1"):
        constrained_kernel_kmeans(X, codes, tol=-0.1)
    constrained_kernel_kmeans(X, codes, tol=0, init=ok)       # 0 is accepted


def test_unlabeled_rows_with_positive_groups_switch_to_domain_adaptation():
    """y = -1 rows (with groups) are targets: they join every training and validation fold."""
    from shiftlearn import ClusterSplit

    X, y, groups = _labeled(4)
    y = y.copy()
    y[-15:] = -1
    cv = ClusterSplit(test_size=0.25, random_state=0)
    (tr, va), = cv.split(X, y, groups)
    unl = np.flatnonzero(y == -1)
    assert np.isin(unl, tr).all() and np.isin(unl, va).all()
    assert cv.labels_.shape == (X.shape[0] - 15,)
    assert cv.mmd2_.shape == (1,) and cv.n_iter_ >= 1 and cv.converged_ in (True, False)
    assert len(cv.objective_trace_) >= 1 and len(cv.mmd2_trace_) >= 1 and cv.gamma_ > 0


def test_bandwidth_rule_uses_seed_0_on_large_inputs():
    from shiftlearn.kernels import gamma_from_sigma, median_heuristic

    X = np.random.default_rng(17).standard_exponential(size=(1001, 2))
    _, g = kernel_operator(X, gamma="median")
    assert g == gamma_from_sigma(median_heuristic(X, random_state=0))
    assert g != gamma_from_sigma(median_heuristic(X, random_state=1))


@pytest.mark.parametrize("routing", ["sample_domain", "groups"])
def test_da_mode_clusters_the_labeled_sources_like_a_source_only_split(routing):
    """DA mode = the DG split of the labeled source rows (features, labels, source domains as
    strata), with every target row added to both sides."""
    from shiftlearn import ClusterSplit

    X, y, groups = _labeled(5)
    sd = np.where(np.arange(X.shape[0]) % 4 == 0, -9, groups)       # a quarter are targets
    y = np.where(sd < 0, -1, y)
    src = np.flatnonzero(sd > 0)
    cv = ClusterSplit(test_size=0.25, random_state=0)
    kw = {"sample_domain": sd} if routing == "sample_domain" else {"groups": sd}
    (tr, va), = cv.split(X, y, **kw)
    ref = ClusterSplit(test_size=0.25, random_state=0)
    (rtr, rva), = ref.split(X[src], y[src], sd[src])
    np.testing.assert_array_equal(np.intersect1d(va, src), src[rva])
    np.testing.assert_array_equal(np.intersect1d(tr, src), src[rtr])
    np.testing.assert_array_equal(cv.labels_, ref.labels_)


# ------------------------------------------------------------ parameters reach the solver ----
def test_label_domain_without_groups_stratifies_by_label():
    X, y, _ = _data(n=120, seed=2)
    a = ClusterSplit(stratify="label_domain", random_state=0)
    b = ClusterSplit(stratify="label", random_state=0)
    list(a.split(X, y)), list(b.split(X, y))
    assert np.array_equal(a.labels_, b.labels_)


def test_two_folds_are_halves_with_one_mmd_per_fold():
    X, y, dom = _data(n=120, seed=3)
    cv = ClusterSplit(n_splits=2, test_size=0.2, stratify=None, random_state=0)
    folds = list(cv.split(X, y, dom))
    assert [va.size for _, va in folds] == [60, 60]
    for v in (cv.mmd2_, cv.mmd2_init_, *cv.mmd2_trace_):
        assert v.shape == (2,) and v.dtype == np.float64 and v[0] == v[1]


@pytest.mark.parametrize(("gamma", "hint"), [
    (None, r"bandwidth=None \(the default: gamma = 1 / n_features\)"),
    (0.5, r"bandwidth=\(2 \* gamma\) \*\* -0\.5 \(the RBF's sigma\)"),
    ("median", r"bandwidth='median'"),
])
def test_former_gamma_names_the_bandwidth_to_pass(gamma, hint):
    X, y, dom = _data(n=60, seed=4)
    with pytest.warns(FutureWarning, match=r"^ClusterSplit: gamma is replaced by bandwidth; "
                                           r"pass " + hint):
        list(ClusterSplit(gamma=gamma, random_state=0).split(X, y, dom))


def test_resolve_gamma_refuses_both_spellings_and_reads_rules_reproducibly():
    from shiftlearn.kernels import BANDWIDTH_MAX_SAMPLES

    with pytest.raises(ValueError, match=r"^got both gamma=0\.5 and bandwidth=1\.0; gamma is the "
                                         r"former parameter"):
        ckm.resolve_gamma(0.5, 3, lambda: None, bandwidth=1.0)
    rng = np.random.default_rng(5)
    X = rng.normal(size=(BANDWIDTH_MAX_SAMPLES + 300, 2))   # the rule subsamples its rows
    expected = gamma_from_sigma(median_heuristic(X, random_state=0))
    assert ckm.resolve_gamma(None, 2, lambda: X, bandwidth="median") == expected
    assert ckm.resolve_gamma("median", 2, lambda: X) == expected


def test_constrained_kernel_kmeans_builds_the_kernel_of_the_bandwidth_given():
    X, y, dom = _data(n=90, seed=6)
    codes = constraint_codes(y, dom, "label", X.shape[0])
    own = constrained_kernel_kmeans(X, codes, bandwidth=0.4, random_state=0)
    op, _ = kernel_operator(X, bandwidth=0.4)
    given = constrained_kernel_kmeans(X, codes, operator=op, random_state=0)
    assert np.array_equal(own.labels, given.labels)
    assert own.objective == given.objective


def test_pca_start_of_two_rows_is_their_difference():
    X = np.array([[0.0, 1.0], [2.0, -1.0]])
    op, _ = kernel_operator(X)
    v = ckm._pca_scores(op, np.random.default_rng(0))
    np.testing.assert_allclose(np.abs(v), [2**-0.5, 2**-0.5], rtol=1e-12)
    assert v[0] == -v[1]


def test_pca_start_is_the_leading_kernel_component():
    X, _, _ = _data(n=60, seed=7)
    op, _ = kernel_operator(X, n_landmarks=20, random_state=0)
    v = ckm._pca_scores(op, np.random.default_rng(0))
    K = op.matvec(np.eye(60))
    H = np.eye(60) - 1.0 / 60
    w, V = np.linalg.eigh(H @ K @ H)
    # ARPACK at tol 1e-6 on a well-separated leading eigenvalue: the vector within 1e-5
    assert (w[-1] - w[-2]) > 0.1 * w[-1]
    assert abs(float(v @ V[:, -1])) > 1 - 1e-5


def test_kernel_operator_products_come_back_in_float64_for_float32_features():
    X, _, _ = _data(n=40, seed=8)
    op, _ = kernel_operator(X.astype(np.float32), n_landmarks=10, random_state=0)
    assert op.Phi.dtype == np.float32
    V = np.ones((op.Phi.shape[1], 2))
    W = np.ones((40, 2))
    assert op.phi(V).dtype == op.phi_t(W).dtype == op.phi_sum().dtype == np.float64


def test_cluster_split_hands_its_solver_to_the_clustering(monkeypatch):
    from shiftlearn.model_selection import _cluster_split

    seen = {}
    real = _cluster_split.constrained_kernel_kmeans

    def spy(*args, **kwargs):
        seen.update(kwargs)
        return real(*args, **kwargs)

    monkeypatch.setattr(_cluster_split, "constrained_kernel_kmeans", spy)
    X, y, dom = _data(n=60, seed=9)
    cv = ClusterSplit(solver="lp", random_state=0)
    list(cv.split(X, y, dom))
    assert seen["solver"] == "lp"
    assert cv.mmd2_.dtype == np.float64


def test_constrained_kernel_kmeans_reads_a_list_of_rows():
    X, y, dom = _data(n=40, seed=10)
    codes = constraint_codes(y, dom, "label", 40)
    a = constrained_kernel_kmeans(X, codes, random_state=0)
    b = constrained_kernel_kmeans(X.tolist(), codes, random_state=0)
    assert np.array_equal(a.labels, b.labels)
