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
