"""Edges of the constrained kernel k-means (issue #23, rows 4 and 5): ``n_init`` keeps the best
restart, and the factored (linear / Nyström) path chooses the same side as the full kernel on
asymmetric data (unequal clusters, off-centre blobs)."""

import numpy as np
import pytest

from shiftlearn.kernels import kernel_matrix
from shiftlearn.model_selection import _cluster_kmeans as ckm
from shiftlearn.model_selection import constrained_kernel_kmeans
from shiftlearn.model_selection._cluster_kmeans import _stats, kernel_operator


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
    assert again.objective_trace[0] == pytest.approx(res.objective, rel=1e-12)


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
        op, _ = kernel_operator(X, kernel="rbf", gamma=0.3, n_components=25, random_state=0)
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


def _reference(X, y, groups, *, test_size, kernel="rbf", gamma=None, n_components=None,
               tolerance=0.0, solver="closed_form", max_iter=100, tol=0.0, n_init=1,
               init="random", n_splits=1, stratify="label_domain", seed=0):
    """What ClusterSplit documents it does, spelled out with the public functions."""
    from shiftlearn.model_selection._splitters import constraint_codes

    codes = constraint_codes(y, groups, stratify, X.shape[0])
    rng = np.random.default_rng(seed)
    op, gamma_ = kernel_operator(X, kernel=kernel, gamma=gamma, n_components=n_components,
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
    ({"gamma": 2.0}, "gamma"),
    ({"gamma": 0.3, "n_components": 15}, "n_components"),
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
        "n_splits": 1, "test_size": 0.2, "kernel": "rbf", "gamma": None,
        "stratify": "label_domain", "tolerance": 0, "n_components": None, "featurizer": None,
        "random_state": None, "solver": "closed_form", "max_iter": 100, "tol": 0.0,
        "n_init": 1, "init": "random"}
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
