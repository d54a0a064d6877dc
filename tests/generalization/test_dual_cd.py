"""Dual coordinate descent on a precomputed kernel (shiftlearn.generalization._dual_cd), the
exact solver of marginal transfer: same iterates with and without numba, liblinear's stopping
rules, rows with a zero kernel diagonal, and the estimator wired to it."""

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning
from sklearn.svm import LinearSVC, LinearSVR

from shiftlearn import _numba
from shiftlearn.datasets import make_rotated_ellipses
from shiftlearn.generalization import MarginalTransferClassifier, MarginalTransferRegressor
from shiftlearn.generalization._dual_cd import kernel_svm, kernel_svr
from shiftlearn.kernels import rbf_kernel


def _problem(n=150, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3))
    K = rbf_kernel(X, sigma=1.0)
    y = np.where(X[:, 0] + 0.4 * rng.normal(size=n) > 0, 1.0, -1.0)
    t = np.sin(2 * X[:, 0]) + 0.1 * rng.normal(size=n)
    return X, K, y, t, rng.uniform(0.5, 5.0, size=n)


def _solve(kind, K, y, t, c, **kw):
    if kind == "svr":
        return kernel_svr(K, t, c, epsilon=0.1, random_state=0, return_n_iter=True, **kw)
    return kernel_svm(K, y, c, loss=kind, random_state=0, return_n_iter=True, **kw)


@pytest.mark.skipif(not _numba.HAVE_NUMBA, reason="numba is not installed")
@pytest.mark.parametrize("kind", ["hinge", "squared_hinge", "svr"])
def test_numba_and_numpy_epochs_give_the_same_beta_bit_for_bit(kind, monkeypatch):
    _, K, y, t, c = _problem()
    out = {}
    for flag in ("1", "0"):
        monkeypatch.setenv("SHIFTLEARN_NUMBA", flag)
        out[flag] = _solve(kind, K, y, t, c, tol=1e-4)
    assert out["1"][1] == out["0"][1] > 1
    np.testing.assert_array_equal(out["1"][0], out["0"][0])


@pytest.mark.parametrize("kind", ["hinge", "squared_hinge", "svr"])
def test_same_optimum_as_liblinear_on_explicit_features(kind):
    """A linear kernel X X^T: liblinear on X (no intercept, per-row costs) solves the same
    problem; both at a tight tol reach the same primal objective and weights."""
    X, _, y, t, c = _problem(seed=1)
    K = X @ X.T
    beta, _ = _solve(kind, K, y, t, c, tol=1e-8, max_iter=100_000)
    if kind == "svr":
        lin = LinearSVR(C=1.0, epsilon=0.1, loss="epsilon_insensitive", fit_intercept=False,
                        dual=True, tol=1e-8, max_iter=100_000, random_state=0)
        lin.fit(X, t, sample_weight=c)
    else:
        lin = LinearSVC(C=1.0, loss=kind, fit_intercept=False, dual=True, tol=1e-8,
                        max_iter=100_000, random_state=0).fit(X, y, sample_weight=c)
    w = X.T @ beta
    np.testing.assert_allclose(w, lin.coef_.ravel(), rtol=1e-4, atol=1e-5)


def test_tol_is_liblinears_and_max_iter_warns():
    _, K, y, t, c = _problem()
    _, loose = kernel_svm(K, y, c, tol=1e-1, random_state=0, return_n_iter=True)
    _, tight = kernel_svm(K, y, c, tol=1e-5, random_state=0, return_n_iter=True)
    assert loose < tight
    with pytest.warns(ConvergenceWarning, match="kernel_svm did not converge in 2 epochs"):
        kernel_svm(K, y, c, tol=1e-8, max_iter=2, random_state=0)
    with pytest.warns(ConvergenceWarning, match="kernel_svr did not converge in 2 epochs"):
        kernel_svr(K, t, c, tol=1e-8, max_iter=2, random_state=0)


def test_rows_with_zero_kernel_diagonal_get_no_coefficient():
    """A zero row under the linear kernel has a zero feature vector: left out (beta 0), the
    rest of the solution unchanged."""
    X, _, y, t, c = _problem(n=60, seed=2)
    X0 = X.copy()
    X0[[3, 17]] = 0.0
    K0 = X0 @ X0.T
    keep = np.setdiff1d(np.arange(60), [3, 17])
    for kind in ("hinge", "squared_hinge", "svr"):
        beta0, _ = _solve(kind, K0, y, t, c, tol=1e-8, max_iter=50_000)
        assert beta0[3] == beta0[17] == 0.0 and np.all(np.isfinite(beta0))
        Kk = K0[np.ix_(keep, keep)]
        beta, _ = _solve(kind, Kk, y[keep], t[keep], c[keep], tol=1e-8, max_iter=50_000)
        np.testing.assert_allclose(K0 @ beta0, K0[:, keep] @ beta, atol=1e-5)


def test_input_errors():
    with pytest.raises(ValueError, match="square kernel matrix"):
        kernel_svm(np.ones((3, 2)), np.ones(3), np.ones(3))
    with pytest.raises(ValueError, match="loss must be"):
        kernel_svm(np.eye(2), np.array([1.0, -1.0]), np.ones(2), loss="log")


def test_estimator_exact_solver_keeps_only_support_vectors():
    """The exact estimator stores the rows with a nonzero dual coefficient; its decision
    values are those of the full expansion."""
    X, y, sd = make_rotated_ellipses(12, 24, random_state=0)
    clf = MarginalTransferClassifier(C=1.0, bandwidth_x=0.3, solver="exact", random_state=0)
    clf.fit(X, y, sd)
    n_sv = clf.support_vectors_.shape[0]
    assert 0 < n_sv < X.shape[0]
    assert np.all(clf.dual_coef_ != 0.0)
    reg = MarginalTransferRegressor(C=1.0, bandwidth_x=0.3, solver="exact", random_state=0)
    reg.fit(X, X[:, 0], sd)                     # tube of width epsilon: many rows inside it
    assert 0 < reg.support_vectors_.shape[0] < X.shape[0]
    assert reg.dual_coef_.shape == (reg.support_vectors_.shape[0], 1)


def test_a_kernel_that_overflows_is_refused_not_fitted_to_zero():
    """An infinite kernel diagonal would freeze every coordinate (the solver would 'converge'
    at beta = 0): refused with the fix, directly and through the exact estimator."""
    _, K, y, t, c = _problem(n=20)
    for bad in (np.inf, np.nan):
        Kb = K.copy()
        Kb[3, 3 if bad == np.inf else 5] = bad
        with pytest.raises(ValueError, match="non-finite entries .* rescale X"):
            kernel_svm(Kb, y, c)
        with pytest.raises(ValueError, match="non-finite entries .* rescale X"):
            kernel_svr(Kb, t, c)
    X, y, sd = make_rotated_ellipses(4, 10, random_state=0)
    for Est, target in ((MarginalTransferClassifier, y), (MarginalTransferRegressor, X[:, 0])):
        with pytest.raises(ValueError, match=r"overflows? float64"):   # by check_X first
            Est(solver="exact", kernel_x="linear", tau=1.0).fit(X * 1e160, target, sd)


def test_zero_epochs_return_zero_with_a_warning():
    _, K, y, t, c = _problem(n=20)
    with pytest.warns(ConvergenceWarning, match="0 epochs"):
        assert not np.any(kernel_svm(K, y, c, max_iter=0))
    with pytest.warns(ConvergenceWarning, match="0 epochs"):
        assert not np.any(kernel_svr(K, t, c, max_iter=0))
