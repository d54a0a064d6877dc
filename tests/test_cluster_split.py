"""ClusterSplit / constrained kernel k-means (Napoli & White): the paper's checklist."""

import itertools

import numpy as np
import pytest
from _tolerances import EPS, mmd_atol, quad_atol, rbf_err
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
