"""Tests of marginal transfer learning (shiftlearn.generalization)."""

import warnings

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning

from shiftlearn.datasets import make_rotated_ellipses
from shiftlearn.generalization import (
    MarginalTransferClassifier,
    MarginalTransferRegressor,
    PoolingClassifier,
    PoolingRegressor,
    TaskGroupSearchCV,
    task_group_score,
)
from shiftlearn.generalization._dual_cd import kernel_svm, kernel_svr
from shiftlearn.generalization._embedding import (
    embedding_sq_distances,
    exact_embedding_gram,
    rff_embeddings,
    rff_product_features,
)
from shiftlearn.generalization._solvers import linear_squared_hinge_newton
from shiftlearn.kernels import rbf_kernel, rff_weights


@pytest.fixture(scope="module")
def ellipses():
    X, y, sd = make_rotated_ellipses(48, 32, random_state=0)
    Xt, yt, sdt = make_rotated_ellipses(6, 400, first_domain=-100, random_state=1)
    return X, y, sd, Xt, yt, sdt


# --------------------------------------------------------------------------- math functions
def test_embedding_gram_matches_brute_force():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(12, 3))
    task = np.repeat([0, 1, 2], [3, 4, 5])
    G = exact_embedding_gram(X, task, 3, kernel="rbf", sigma=1.3, chunk_rows=5)
    K = rbf_kernel(X, sigma=1.3)
    for i in range(3):
        for j in range(3):
            assert np.isclose(G[i, j], K[np.ix_(task == i, task == j)].mean())
    D2 = embedding_sq_distances(G, np.diag(G), np.diag(G))
    assert np.allclose(np.diag(D2), 0) and np.all(D2 >= 0)


def test_rff_product_kernel_converges_to_exact():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(40, 2))
    task = np.repeat([0, 1], 20)
    sx, se, sp = 1.0, 1.0, 0.5
    G = exact_embedding_gram(X, task, 2, sigma=se)
    D2 = embedding_sq_distances(G, np.diag(G), np.diag(G))
    exact = np.exp(-D2[0, 1] / (2 * sp**2)) * rbf_kernel(X[:1], X[20:21], sigma=sx)[0, 0]
    W = rff_weights(2, 1000, se, 0)
    ZP = rff_embeddings(X, task, 2, W)
    V = rff_weights(2 + ZP.shape[1], 8000, 1.0, 1)
    Z = rff_product_features(X[[0, 20]], np.array([0, 1]), ZP, V[:2], V[2:], sigma_x=sx,
                             sigma_p=sp)
    assert np.allclose((Z**2).sum(axis=1), 1.0)
    assert abs(Z[0] @ Z[1] - exact) < 0.04


def test_rff_embedding_is_permutation_invariant():
    rng = np.random.default_rng(2)
    X = rng.normal(size=(30, 2))
    W = rff_weights(2, 50, 1.0, 0)
    a = rff_embeddings(X, np.zeros(30, dtype=int), 1, W)
    b = rff_embeddings(X[rng.permutation(30)], np.zeros(30, dtype=int), 1, W)
    assert np.allclose(a, b)


def _box_qp_reference(K, y, c, loss="hinge", epsilon=None):
    """The no-intercept dual solved by scipy's L-BFGS-B (independent of liblinear and of our
    factor): returns ``beta`` with ``f = K beta``. Hinge: ``max sum alpha - 1/2 (alpha y)^T K
    (alpha y)``, ``0 <= alpha <= c``; squared hinge: no upper bound and ``1/(2c)`` on the
    diagonal; SVR (``epsilon`` given): ``beta = b+ - b-`` with both in ``[0, c]``."""
    from scipy.optimize import minimize

    M = y.shape[0]
    if epsilon is not None:
        def fg(z):
            b = z[:M] - z[M:]
            g = K @ b - y
            return 0.5 * b @ (K @ b) - y @ b + epsilon * z.sum(), \
                np.concatenate([g + epsilon, -g + epsilon])
        bounds = [(0.0, ci) for ci in c] * 2
        z = minimize(fg, np.zeros(2 * M), jac=True, method="L-BFGS-B", bounds=bounds,
                     options={"ftol": 1e-15, "gtol": 1e-11, "maxiter": 50_000}).x
        return z[:M] - z[M:]
    ridge = 0.5 / c if loss == "squared_hinge" else 0.0
    upper = None if loss == "squared_hinge" else c

    def fg(a):
        b = a * y
        Kb = K @ b
        return 0.5 * b @ Kb + 0.5 * (ridge * a) @ a - a.sum(), y * Kb + ridge * a - 1.0

    bounds = [(0.0, None if upper is None else ci) for ci in (c if upper is None else upper)]
    a = minimize(fg, np.zeros(M), jac=True, method="L-BFGS-B", bounds=bounds,
                 options={"ftol": 1e-15, "gtol": 1e-11, "maxiter": 50_000}).x
    return a * y


def _primal(K, beta, y, c, loss="hinge", epsilon=None):
    f = K @ beta
    if epsilon is not None:
        return 0.5 * beta @ f + c @ np.maximum(0.0, np.abs(y - f) - epsilon)
    h = np.maximum(0.0, 1.0 - y * f)
    return 0.5 * beta @ f + c @ (h**2 if loss == "squared_hinge" else h)


@pytest.mark.parametrize("loss", ["hinge", "squared_hinge", "epsilon_insensitive"])
def test_exact_solver_matches_an_independent_dual_solver(loss):
    """Dual coordinate descent on K reaches the optimum of the no-intercept dual (scipy's
    L-BFGS-B on the box QP as reference): same objective, same decision values, unequal
    per-row costs."""
    rng = np.random.default_rng(3)
    X = rng.normal(size=(70, 2))
    K = rbf_kernel(X, sigma=0.8)
    c = rng.uniform(0.5, 4.0, size=70)
    if loss == "epsilon_insensitive":
        y = np.sin(2 * X[:, 0]) + 0.1 * rng.normal(size=70)
        beta = kernel_svr(K, y, c, epsilon=0.1, tol=1e-8, max_iter=100_000, random_state=0)
        ref = _box_qp_reference(K, y, c, epsilon=0.1)
        kw = dict(epsilon=0.1)
    else:
        y = np.where(X[:, 0] + 0.3 * rng.normal(size=70) > 0, 1.0, -1.0)
        beta = kernel_svm(K, y, c, loss=loss, tol=1e-8, max_iter=100_000, random_state=0)
        ref = _box_qp_reference(K, y, c, loss=loss)
        kw = dict(loss=loss)
    p_new, p_ref = _primal(K, beta, y, c, **kw), _primal(K, ref, y, c, **kw)
    assert abs(p_new - p_ref) <= 1e-6 * p_ref, (p_new, p_ref)
    np.testing.assert_allclose(K @ beta, K @ ref, atol=2e-4)
    # and not trivially: a different cost vector gives another optimum
    other = kernel_svm(K, y, c * 3, tol=1e-8, max_iter=100_000, random_state=0) \
        if loss != "epsilon_insensitive" else kernel_svr(K, y, c * 3, epsilon=0.1, tol=1e-8,
                                                         max_iter=100_000, random_state=0)
    assert np.max(np.abs(K @ other - K @ ref)) > 1e-2


def test_no_bias_svr_fits_within_tube():
    X = np.linspace(-2, 2, 50)[:, None]
    y = np.sin(X.ravel())
    K = rbf_kernel(X, sigma=0.5)
    beta = kernel_svr(K, y, np.full(50, 100.0), epsilon=0.05, tol=1e-6, max_iter=5000,
                      random_state=0)
    resid = np.abs(K @ beta - y)
    assert resid.max() < 0.05 + 1e-3
    assert resid.max() > 0.05 - 1e-3                   # the tube is used: not an interpolant


# -------------------------------------------------------------------------------- estimators
@pytest.mark.parametrize("solver", ["exact", "rf"])
def test_marginal_beats_pooling_on_ellipses(ellipses, solver):
    X, y, sd, Xt, yt, sdt = ellipses
    kw = dict(C=10.0, bandwidth_x=0.3, solver=solver, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        mt = MarginalTransferClassifier(**kw).fit(X, y, sd)
        pool = PoolingClassifier(**kw).fit(X, y, sd)
    err_mt = 1 - task_group_score(mt, Xt, yt, sdt)
    err_pool = 1 - task_group_score(pool, Xt, yt, sdt)
    assert mt.solver_ == solver
    assert err_mt < 0.15
    assert err_pool > 0.25
    assert err_mt < err_pool - 0.15


def test_tau_one_equals_named_pooling_estimator(ellipses):
    X, y, sd, Xt, _, sdt = ellipses
    a = MarginalTransferClassifier(tau=1.0, solver="rf", random_state=0).fit(X, y, sd)
    b = PoolingClassifier(solver="rf", random_state=0).fit(X, y, sd)
    assert np.allclose(a.decision_function(Xt, sdt), b.decision_function(Xt, sdt))


def test_pooling_ignores_test_marginal_and_large_sigma_p_is_pooling(ellipses):
    X, y, sd, Xt, _, sdt = ellipses
    pool = PoolingClassifier(solver="exact", C=1.0, random_state=0).fit(X, y, sd)
    one = pool.decision_function(Xt[:50], sdt[:50])
    alone = pool.decision_function(Xt[:50])
    assert np.allclose(one, alone)  # k_P = 1: predictions do not depend on the task
    huge = MarginalTransferClassifier(solver="exact", C=1.0, bandwidth_p=1e6,
                                      random_state=0).fit(X, y, sd)
    assert np.allclose(huge.decision_function(Xt, sdt), pool.decision_function(Xt, sdt),
                       atol=1e-4)


def test_prediction_uses_each_test_task_own_rows(ellipses):
    X, y, sd, Xt, _, sdt = ellipses
    clf = MarginalTransferClassifier(solver="rf", C=10.0, bandwidth_x=0.3, random_state=0)
    clf.fit(X, y, sd)
    together = clf.decision_function(Xt, sdt)
    first = sdt == sdt[0]
    alone = clf.decision_function(Xt[first], sdt[first])
    assert np.allclose(together[first], alone)
    # one task id for all rows mixes the marginals: different predictions
    mixed = clf.decision_function(Xt, np.full(len(sdt), -7))
    assert not np.allclose(mixed, together)
    # row order does not matter
    perm = np.random.default_rng(0).permutation(len(sdt))
    assert np.allclose(clf.decision_function(Xt[perm], sdt[perm]), together[perm])


def test_multiclass_and_string_labels():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(180, 2)) + np.repeat(np.eye(3, 2) * 3, 60, axis=0)
    y = np.repeat(np.array(["a", "b", "c"]), 60)
    sd = np.tile(np.repeat([1, 2, 3], 20), 3)
    for solver in ("exact", "rf"):
        clf = MarginalTransferClassifier(solver=solver, random_state=0).fit(X, y, sd)
        assert clf.decision_function(X, -sd).shape == (180, 3)
        assert np.mean(clf.predict(X, -sd) == y) > 0.9


@pytest.mark.parametrize("solver", ["exact", "rf"])
def test_regressor_uses_task_marginal(solver):
    # y = the task's shift: invisible from x alone, obvious from the marginal
    rng = np.random.default_rng(0)
    shift = np.repeat(rng.uniform(-2, 2, size=30), 20)
    X = rng.normal(size=(600, 1)) + shift[:, None]
    sd = np.repeat(np.arange(1, 31), 20)
    Xt = rng.normal(size=(200, 1)) + np.repeat([-1.5, 1.5], 100)[:, None]
    yt = np.repeat([-1.5, 1.5], 100)
    sdt = np.repeat([-1, -2], 100)
    kw = dict(C=10.0, solver=solver, random_state=0)
    mt = MarginalTransferRegressor(**kw).fit(X, shift, sd)
    pool = PoolingRegressor(**kw).fit(X, shift, sd)
    rmse_mt = -task_group_score(mt, Xt, yt, sdt)
    rmse_pool = -task_group_score(pool, Xt, yt, sdt)
    assert rmse_mt < 0.4 < rmse_pool


def test_auto_solver_switches_on_size():
    from shiftlearn.generalization import AUTO_RF_MIN_SAMPLES
    X, y, sd = make_rotated_ellipses(8, 8, random_state=0)
    assert MarginalTransferClassifier().fit(X, y, sd).solver_ == "exact"
    n = AUTO_RF_MIN_SAMPLES // 8 + 1
    X, y, sd = make_rotated_ellipses(8, n, random_state=0)
    assert MarginalTransferClassifier().fit(X, y, sd).solver_ == "rf"
    # no random features for these: Nyström above the threshold
    assert MarginalTransferClassifier(kernel_x="linear").fit(X, y, sd).solver_ == "nystroem"
    assert MarginalTransferClassifier(kernel_p="polynomial").fit(X, y, sd).solver_ == "nystroem"
    assert MarginalTransferClassifier(tau=0.5).fit(X, y, sd).solver_ == "nystroem"
    assert MarginalTransferClassifier(kernel_p="exponential",
                                      normalize_p=True).fit(X, y, sd).solver_ == "rf"


def test_bandwidth_specs():
    X, y, sd = make_rotated_ellipses(8, 16, random_state=0)
    a = MarginalTransferClassifier(solver="rf", random_state=0).fit(X, y, sd)
    b = MarginalTransferClassifier(solver="rf", bandwidth_x="2*median", bandwidth_p="0.5*median",
                                   random_state=0).fit(X, y, sd)
    assert np.isclose(b.sigma_x_, 2 * a.sigma_x_) and np.isclose(b.sigma_p_, 0.5 * a.sigma_p_)
    with pytest.raises(ValueError, match="bandwidth_x"):
        MarginalTransferClassifier(bandwidth_x="mode").fit(X, y, sd)
    with pytest.raises(ValueError, match="bandwidth_p"):
        MarginalTransferClassifier(bandwidth_p=-1.0).fit(X, y, sd)


# ------------------------------------------------------------------------------------ errors
def test_clear_errors_and_warnings():
    X, y, sd = make_rotated_ellipses(4, 8, random_state=0)
    clf = MarginalTransferClassifier(solver="exact", random_state=0)
    sd_bad = sd.copy()
    sd_bad[0] = 99  # a task with a single point
    with pytest.raises(ValueError, match="task 99 has only 1 sample"):
        clf.fit(X, y, sd_bad)
    with pytest.raises(ValueError, match="min_task_size=10"):
        MarginalTransferClassifier(min_task_size=10).fit(X, y, sd)
    clf.fit(X, y, sd)
    with pytest.raises(ValueError, match="3 features, but MarginalTransferClassifier is "
                                         "expecting 2 features"):
        clf.predict(np.zeros((5, 3)), np.full(5, -1))
    with pytest.warns(UserWarning, match="not domain generalization"):
        clf.predict(X[:8], sd[:8])
    with pytest.raises(ValueError, match="sample_domain has 3 entries"):
        clf.predict(X[:8], sd[:3])
    with pytest.raises(ValueError, match="solver"):
        MarginalTransferClassifier(solver="magic").fit(X, y, sd)
    with pytest.raises(ValueError, match="solver='rf' needs a shift-invariant kernel_x .*got "
                                         "kernel_x='linear'; use solver='nystroem'"):
        MarginalTransferClassifier(solver="rf", kernel_x="linear").fit(X, y, sd)
    # a NaN target is an unlabeled row (the convention): left out with a warning, not an error
    y_nan = np.where(np.arange(len(y)) == 0, np.nan, X[:, 0])
    with pytest.warns(UserWarning, match=r"left out 1 of 32 rows \(domain 1: 1 unlabeled\)"):
        reg = MarginalTransferRegressor(solver="exact", random_state=0).fit(X, y_nan, sd)
    ref = MarginalTransferRegressor(solver="exact", random_state=0).fit(X[1:], y_nan[1:], sd[1:])
    assert np.allclose(reg.predict(X, -sd), ref.predict(X, -sd))


# ------------------------------------------------------------------------------------ search
def test_search_splits_by_task():
    X, y, sd = make_rotated_ellipses(12, 16, random_state=0)
    search = TaskGroupSearchCV(MarginalTransferClassifier(solver="rf", random_state=0),
                               {"C": [0.1, 10.0]}, cv=3, n_repeats=2, random_state=0)
    for tr, va in search._splits(sd):
        assert not set(sd[tr]) & set(sd[va])
    search.fit(X, y, sd)
    assert len(search.cv_results_) == 2 and search.best_params_["C"] in (0.1, 10.0)
    staged = TaskGroupSearchCV(MarginalTransferClassifier(solver="rf", random_state=0),
                               [{"C": [1.0, 10.0]}, {"bandwidth_x": [0.2, 0.4]}], staged=True,
                               cv=3, random_state=0).fit(X, y, sd)
    assert set(staged.best_params_) == {"C", "bandwidth_x"} and len(staged.cv_results_) == 4
    Xt, yt, sdt = make_rotated_ellipses(2, 50, first_domain=-50, random_state=1)
    assert 0 <= staged.score(Xt, yt, sdt) <= 1


def test_cli_runs(capsys):
    from shiftlearn.cli import main as shiftlearn_main

    def main(argv):  # `shiftlearn demo marginal ...`
        return shiftlearn_main(["demo", "marginal", *argv])

    assert main(["--N", "8", "--n", "8", "--test-points", "50", "--solver", "rf"]) == 0
    out = capsys.readouterr().out
    assert "marginal transfer" in out and "pooling" in out
    assert main(["--N", "8", "--n", "8", "--test-points", "50", "--solver", "rf",
                 "--loss", "squared_hinge"]) == 0
    assert "marginal transfer" in capsys.readouterr().out
    assert main(["--N", "8", "--n", "8", "--test-points", "50", "--solver", "rf",
                 "--sampling", "orthogonal"]) == 0
    assert "marginal transfer" in capsys.readouterr().out
    with pytest.raises(SystemExit):
        main(["--loss", "hinge2"])
    with pytest.raises(SystemExit):
        main(["--sampling", "sobol"])


def test_float32_random_features_match_float64_and_task_rows():
    from shiftlearn.generalization._embedding import (
        rff_embeddings,
        rff_product_features,
        task_rows,
    )
    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 3))
    task = rng.integers(0, 7, size=300)  # unsorted, as at prediction time
    rows = task_rows(task, 7)
    assert all(np.array_equal(r, np.flatnonzero(task == t)) for t, r in enumerate(rows))
    W = rng.normal(size=(3, 40))
    V_x, V_p = rng.normal(size=(3, 50)), rng.normal(size=(80, 50))
    ZP64 = rff_embeddings(X, task, 7, W)
    ZP32 = rff_embeddings(X, task, 7, W, dtype=np.float32)
    assert ZP32.dtype == np.float64 and np.max(np.abs(ZP32 - ZP64)) < 1e-5
    kw = dict(sigma_x=0.7, sigma_p=0.3)
    Z64 = rff_product_features(X, task, ZP64, V_x, V_p, **kw)
    Z32 = rff_product_features(X, task, ZP64, V_x, V_p, dtype=np.float32, **kw)
    assert Z32.dtype == np.float64 and np.max(np.abs(Z32 - Z64)) < 1e-5
    assert np.max(np.abs(Z32 - Z64)) > 0  # really computed in single precision


def test_default_tolerances_and_invalid_tol(ellipses):
    X, y, sd, *_ = ellipses
    clf = MarginalTransferClassifier(random_state=0)
    assert clf.tol is None
    assert clf._tol("exact") == 1e-2 and clf._tol("rf") == 0.1
    rf = MarginalTransferClassifier(solver="rf", C=10.0, bandwidth_x=0.3, random_state=0)
    assert rf.fit(X, y, sd).linear_model_.tol == 0.1
    assert MarginalTransferClassifier(tol=1e-3)._tol("rf") == 1e-3
    with pytest.raises(ValueError, match="tol"):
        MarginalTransferClassifier(solver="rf", tol=-1.0).fit(X, y, sd)


# ----------------------------------------------------------------------- squared-hinge loss
def _squared_hinge_reference(X, y, c):
    """``argmin 1/2 ||w||^2 + sum c max(0, 1 - y Xw)^2`` by scipy (independent of our code)."""
    from scipy.optimize import minimize

    def fg(w):
        r = np.maximum(0.0, 1.0 - y * (X @ w))
        return 0.5 * w @ w + c @ r**2, w - 2.0 * X.T @ (c * r * y)

    return minimize(fg, np.zeros(X.shape[1]), jac=True, method="L-BFGS-B",
                    options={"gtol": 1e-10, "ftol": 1e-15, "maxiter": 10_000}).x


def test_squared_hinge_dual_and_newton_match_primal():
    rng = np.random.default_rng(5)
    X = rng.normal(size=(80, 3))
    y = np.where(X @ [1.0, -0.5, 0.2] + 0.5 * rng.normal(size=80) > 0, 1.0, -1.0)
    c = rng.uniform(0.2, 3.0, size=80)  # unequal per-point costs, as with task weights
    w_ref = _squared_hinge_reference(X, y, c)
    beta = kernel_svm(X @ X.T, y, c, loss="squared_hinge", tol=1e-9, max_iter=20_000,
                      random_state=0)
    w_dual = X.T @ beta
    w_newton = linear_squared_hinge_newton(X, y, c, tol=1e-10)
    scale = np.linalg.norm(w_ref)
    assert np.linalg.norm(w_dual - w_ref) < 1e-5 * scale
    assert np.linalg.norm(w_newton - w_ref) < 1e-6 * scale
    w_hinge = X.T @ kernel_svm(X @ X.T, y, c, tol=1e-9, max_iter=20_000, random_state=0)
    assert np.linalg.norm(w_hinge - w_ref) > 1e-2 * scale  # a different objective


def test_squared_hinge_exact_and_rf_agree_on_ellipses(ellipses):
    X, y, sd, Xt, yt, sdt = ellipses
    kw = dict(C=10.0, bandwidth_x=0.3, loss="squared_hinge", random_state=0)
    ex = MarginalTransferClassifier(solver="exact", **kw).fit(X, y, sd)
    rf = MarginalTransferClassifier(solver="rf", **kw).fit(X, y, sd)
    assert rf.linear_model_.coef_.shape == (1, 2 * rf.n_features)
    p_ex, p_rf = ex.predict(Xt, sdt), rf.predict(Xt, sdt)
    assert np.mean(p_ex == p_rf) > 0.95
    assert np.mean(p_ex == yt) > 0.9 and np.mean(p_rf == yt) > 0.9
    # another objective than the hinge's: other decision values
    hinge = MarginalTransferClassifier(solver="exact", C=10.0, bandwidth_x=0.3, random_state=0)
    f_sq, f_h = ex.decision_function(Xt, sdt), hinge.fit(X, y, sd).decision_function(Xt, sdt)
    assert np.mean(np.abs(f_sq - f_h)) > 0.05


def test_invalid_loss_raises():
    X, y, sd = make_rotated_ellipses(4, 8, random_state=0)
    for Est in (MarginalTransferClassifier, PoolingClassifier):
        with pytest.raises(ValueError, match="'loss' parameter .* among .*'hinge'"):
            Est(loss="log").fit(X, y, sd)
    with pytest.raises(ValueError, match="loss"):
        kernel_svm(np.eye(2), np.array([1.0, -1.0]), np.ones(2), loss="squared")
    assert MarginalTransferClassifier(loss="squared_hinge")._tol("rf") == 1e-4
    assert MarginalTransferClassifier()._tol("rf") == 0.1


def test_orthogonal_sampling_draws_orthogonal_blocks_and_still_transfers(ellipses):
    X, y, sd, Xt, yt, sdt = ellipses
    kw = dict(C=10.0, bandwidth_x=0.3, solver="rf", random_state=0)
    clf = MarginalTransferClassifier(sampling="orthogonal", **kw).fit(X, y, sd)
    V = np.vstack([clf.V_x_, clf.V_p_])                 # (d + 2L) x Q frequencies, unit sigma
    b = min(V.shape)
    G = V[:, :b].T @ V[:, :b]
    assert np.allclose(G - np.diag(np.diag(G)), 0, atol=1e-9)
    G = clf.W_[:, :2].T @ clf.W_[:, :2]                 # d = 2: embedding blocks of 2 columns
    assert abs(G[0, 1]) < 1e-9
    gauss = MarginalTransferClassifier(**kw).fit(X, y, sd)
    assert abs((gauss.V_x_.T @ gauss.V_x_)[0, 1]) > 1e-6     # i.i.d. columns are not
    assert 1 - task_group_score(clf, Xt, yt, sdt) < 0.15
    again = MarginalTransferClassifier(sampling="orthogonal", **kw).fit(X, y, sd)
    assert np.array_equal(again.V_x_, clf.V_x_) and np.array_equal(again.W_, clf.W_)
    pool = PoolingClassifier(sampling="orthogonal", **kw).fit(X, y, sd)
    assert abs((pool.V_x_[:, :2].T @ pool.V_x_[:, :2])[0, 1]) < 1e-9


@pytest.mark.parametrize("Est", [MarginalTransferClassifier, MarginalTransferRegressor,
                                 PoolingClassifier, PoolingRegressor])
def test_invalid_sampling_raises_for_every_solver(Est):
    X, y, sd = make_rotated_ellipses(4, 8, random_state=0)
    for solver in ("exact", "rf"):
        with pytest.raises(ValueError, match="'sampling' parameter .* among"):
            Est(sampling="sobol", solver=solver).fit(X, y.astype(float), sd)


# ------------------------------------------------- the unlabeled convention (issue #14 item 1)
def _ellipse_dataset():
    """A DomainDataset of 24 training and 4 test ellipse tasks (labels 0/1)."""
    from shiftlearn.datasets._base import DomainDataset
    X, y, sd = make_rotated_ellipses(24, 32, random_state=0)
    Xt, yt, sdt = make_rotated_ellipses(4, 200, first_domain=100, random_state=1)
    doms = {f"train{i}": (X[sd == i], y[sd == i]) for i in np.unique(sd)}
    doms.update({f"test{i}": (Xt[sdt == i], yt[sdt == i]) for i in np.unique(sdt)})
    ds = DomainDataset("ellipses", doms)
    return ds, [n for n in doms if n.startswith("train")], [n for n in doms if n.startswith("test")]


@pytest.mark.parametrize("solver", ["exact", "rf"])
def test_pack_output_trains_on_labeled_sources_only(solver):
    """``pack()`` output (target rows y = -1, negative ids) used to keep -1 as a class and
    predict it for every target row (45.6% accuracy, 424 of 800 rows predicted -1)."""
    ds, src, tgt = _ellipse_dataset()
    X, y, sd, y_true = ds.pack(sources=src, targets=tgt, return_masked_labels=True)
    kw = dict(C=10.0, bandwidth_x=0.3, solver=solver, random_state=0)
    with pytest.warns(UserWarning, match=r"left out 800 of 1568 rows \(domain -28: 200 "
                                         r"unlabeled, .*pass their rows to predict"):
        clf = MarginalTransferClassifier(**kw).fit(X, y, sd)
    assert clf.classes_.tolist() == [0, 1] and clf.n_tasks_ == 24
    t = sd < 0
    pred = clf.predict(X[t], sd[t])
    assert -1 not in pred
    assert np.mean(pred == y_true[t]) > 0.85                # chance is 0.5
    # exactly the model fitted on the labeled source rows alone
    ref = MarginalTransferClassifier(**kw).fit(X[~t], y[~t], sd[~t])
    assert np.allclose(clf.decision_function(X[t], sd[t]), ref.decision_function(X[t], sd[t]))


def test_pack_output_regression_nan_targets_left_out():
    from shiftlearn.datasets._base import DomainDataset
    rng = np.random.default_rng(0)
    doms = {}
    for i in range(12):
        s = rng.uniform(-2, 2)
        Xi = rng.normal(size=(20, 1)) + s
        doms[f"d{i}"] = (Xi, np.full(20, s))
    ds = DomainDataset("shift", doms, target_name="shift")
    X, y, sd, y_true = ds.pack(sources=[f"d{i}" for i in range(10)], targets=["d10", "d11"],
                               return_masked_labels=True)
    assert np.isnan(y[sd < 0]).all()
    with pytest.warns(UserWarning, match="left out 40 of 240 rows"):
        reg = MarginalTransferRegressor(C=10.0, random_state=0).fit(X, y, sd)
    t = sd < 0
    assert np.sqrt(np.mean((reg.predict(X[t], sd[t]) - y_true[t]) ** 2)) < 0.5
    assert np.isfinite(reg.predict(X[t], sd[t])).all()


def test_unlabeled_convention_errors_and_labeled_target_rows():
    X, y, sd = make_rotated_ellipses(6, 16, random_state=0)
    pm = np.where(y == 1, 1, -1)                            # labels -1/+1: the convention's error
    for Est in (MarginalTransferClassifier, PoolingClassifier):
        with pytest.raises(ValueError, match="y holds the value -1 beside a single other class"):
            Est().fit(X, pm, sd)
        with pytest.raises(ValueError, match="re-encode the labels"):
            Est().fit(X, pm)
    # no labeled source row: a clear error that says how to fix it
    with pytest.raises(ValueError, match="no labeled row in a source domain.*positive "
                                         "sample_domain id"):
        MarginalTransferClassifier().fit(X, y, -sd)
    # labeled rows of a target domain are not trained on (domain generalization)
    sd2 = np.where(sd == 6, -6, sd)
    with pytest.warns(UserWarning, match="domain -6: 16 labeled.*Labeled rows of a target "
                                         "domain are not trained on"):
        clf = MarginalTransferClassifier(random_state=0).fit(X, y, sd2)
    assert clf.n_tasks_ == 5 and -6 not in clf.domains_
    # without sample_domain, -1 rows beside two classes are unlabeled (inferred target -2)
    y3 = np.where(np.arange(len(y)) % 7 == 0, -1, y)
    with pytest.warns(UserWarning, match=f"domain -2: {np.sum(y3 == -1)} unlabeled"):
        clf = MarginalTransferClassifier(random_state=0).fit(X, y3)
    assert clf.classes_.tolist() == [0, 1]
    # string labels: "" and "-1" are unlabeled too
    ys = np.where(y == 1, "pos", "neg").astype(object)
    ys[:3] = ["", "-1", None]
    with pytest.warns(UserWarning, match="domain 1: 3 unlabeled"):
        clf = MarginalTransferClassifier(random_state=0).fit(X, ys, sd)
    assert clf.classes_.tolist() == ["neg", "pos"]


# ---------------------------------------------------- predicting safely (issue #14, #19 item 4)
def test_small_test_tasks_warn_and_a_stream_is_embedded_from_a_stored_sample(ellipses):
    """One row at a time embeds each row as its own task: measured here on 2 test tasks."""
    X, y, sd, Xt, yt, sdt = ellipses
    clf = MarginalTransferClassifier(solver="rf", C=10.0, bandwidth_x=0.3, random_state=0)
    clf.fit(X, y, sd)
    rows = np.flatnonzero(np.isin(sdt, sdt[[0, -1]]))
    whole = np.mean(clf.predict(Xt[rows], sdt[rows]) != yt[rows])
    with pytest.warns(UserWarning, match=r"test task\(s\) -100 \(1 row\) has fewer than "
                                         r"min_predict_task_size=10 rows.*stored sample"):
        clf.predict(Xt[:1], sdt[:1])
    with pytest.warns(UserWarning, match=r"the batch of 3 row\(s\)"):
        clf.predict(Xt[:3])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        one = np.array([clf.predict(Xt[[i]], sdt[[i]])[0] for i in rows])
    err_one = np.mean(one != yt[rows])
    # the documented stream recipe: each new row with a stored random sample of its task
    stream_err = []
    rng = np.random.default_rng(0)
    for task in np.unique(sdt[rows]):
        idx = rng.permutation(np.flatnonzero(sdt == task))
        sample, new = idx[:100], idx[100:200]
        with warnings.catch_warnings():
            warnings.simplefilter("error", UserWarning)      # 101 rows: no warning
            p = [clf.predict(np.vstack([Xt[sample], Xt[[i]]]), np.full(101, task))[-1]
                 for i in new]
        stream_err.append(np.mean(np.array(p) != yt[new]))
    assert whole < 0.15 and err_one > whole + 0.2, (whole, err_one)
    assert np.mean(stream_err) < whole + 0.05, (stream_err, whole)
    # the threshold is a parameter; pooling ignores the task and never warns
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        clf.set_params(min_predict_task_size=1).predict(Xt[:1], sdt[:1])
        PoolingClassifier(solver="rf", random_state=0).fit(X, y, sd).predict(Xt[:1], sdt[:1])


# ---------------------------------------------------------------- conformance (issue #14)
def test_parameters_are_validated_before_any_work():
    from shiftlearn._constraints import InvalidParameterError
    bad = [("C", 0.0), ("bandwidth_x", "mode"), ("bandwidth_x", "-2*median"),
           ("bandwidth_emb", "0*median"), ("bandwidth_p", np.inf), ("sigma_x", "mode"),
           ("n_features", 0), ("max_iter", 1.5), ("tol", -1.0),
           ("min_task_size", 0), ("min_predict_task_size", 0), ("weighting", "row"),
           ("random_state", "seed"), ("tau", 1.5)]
    for name, value in bad:
        with pytest.raises(InvalidParameterError, match=f"'{name}' parameter of "
                                                        "MarginalTransferClassifier"):
            MarginalTransferClassifier(**{name: value}).fit(None, None)   # no data needed
    with pytest.raises(InvalidParameterError, match="'epsilon' parameter"):
        MarginalTransferRegressor(epsilon=-0.1).fit(None, None)
    ok = MarginalTransferClassifier(bandwidth_x="0.5*median", bandwidth_p=2,
                                    bandwidth_emb=" median", random_state=np.random.default_rng(0))
    X, y, sd = make_rotated_ellipses(4, 8, random_state=0)
    assert ok.fit(X, y, sd).sigma_x_ > 0


def test_feature_names_checked_at_predict():
    pd = pytest.importorskip("pandas")
    X, y, sd = make_rotated_ellipses(6, 16, random_state=0)
    df = pd.DataFrame(X, columns=["a", "b"])
    for Est in (MarginalTransferClassifier, PoolingRegressor):
        est = Est(random_state=0).fit(df, y.astype(float), sd)
        assert est.feature_names_in_.tolist() == ["a", "b"]
        with pytest.raises(ValueError, match="feature names"):
            est.predict(df[["b", "a"]], -sd)


# ---------------------------------------------------------- TaskGroupSearchCV conformance
def test_search_follows_the_unlabeled_convention_and_checks_inputs():
    from shiftlearn._constraints import InvalidParameterError
    ds, src, tgt = _ellipse_dataset()
    X, y, sd, y_true = ds.pack(sources=src[:8], targets=tgt[:2], return_masked_labels=True)
    search = TaskGroupSearchCV(MarginalTransferClassifier(random_state=0), {"C": [1.0, 10.0]},
                               cv=2, random_state=0)
    with pytest.warns(UserWarning, match=r"TaskGroupSearchCV trains on the labeled rows.*"
                                         r"left out 400 of 656 rows"):
        search.fit(X, y, sd)
    assert search.classes_.tolist() == [0, 1] and search.best_estimator_.n_tasks_ == 8
    t = sd < 0
    assert -1 not in search.predict(X[t], sd[t])
    assert search.decision_function(X[t], sd[t]).shape == (int(t.sum()),)
    # one training task: folds of its rows, said in a warning
    X1, y1, _ = make_rotated_ellipses(1, 40, random_state=0)
    with pytest.warns(UserWarning, match="only one training task .*the 2 folds split its rows"):
        TaskGroupSearchCV(PoolingClassifier(random_state=0), {"C": [1.0]}, cv=2).fit(X1, y1)
    with pytest.raises(InvalidParameterError, match="'cv' parameter"):
        TaskGroupSearchCV(PoolingClassifier(), {"C": [1.0]}, cv=1).fit(X1, y1)
    with pytest.raises(ValueError, match="non-empty list of dicts"):
        TaskGroupSearchCV(PoolingClassifier(), []).fit(X1, y1)
    with pytest.raises(ValueError, match="No parameter setting"):
        TaskGroupSearchCV(PoolingClassifier(), {"C": []}).fit(X1, y1)
    with pytest.raises(ValueError, match="X has 40 rows but y has 39"):
        TaskGroupSearchCV(PoolingRegressor(), {"C": [1.0]}).fit(X1, y1[:-1].astype(float))


def test_search_checks_feature_names_at_predict():
    pd = pytest.importorskip("pandas")
    X, y, sd = make_rotated_ellipses(6, 16, random_state=0)
    df = pd.DataFrame(X, columns=["a", "b"])
    search = TaskGroupSearchCV(MarginalTransferRegressor(random_state=0), {"C": [1.0]},
                               cv=2).fit(df, y.astype(float), sd)
    assert search.feature_names_in_.tolist() == ["a", "b"]
    assert search.predict(df, -sd).shape == (len(df),)
    with pytest.raises(ValueError, match="feature names"):
        search.predict(df[["b", "a"]], -sd)


# ------------------------------------------------------------------- guards (issue #14)
def test_exact_fit_memory_is_checked_before_allocating(monkeypatch):
    import shiftlearn._resources as resources
    X, y, sd = make_rotated_ellipses(8, 16, random_state=0)
    monkeypatch.setattr(resources, "MEMORY_BUDGET", 100_000)          # 128 rows: 275 kB needed
    with pytest.raises(ValueError, match=r"exact solver on 128 training rows needs about .* "
                                         r"Use solver='nystroem' .* or solver='rf'"):
        MarginalTransferClassifier(solver="exact").fit(X, y, sd)
    with pytest.raises(ValueError, match=r"Use solver='nystroem' \(Nyström features of any "
                                         r"kernel; memory linear"):
        MarginalTransferRegressor(kernel_x="linear").fit(X, y.astype(float), sd)
    with pytest.raises(ValueError, match=r"solver='nystroem' on 128 training rows and 100 "
                                         r"landmarks needs about .*Lower n_landmarks"):
        MarginalTransferClassifier(solver="nystroem", n_landmarks=100).fit(X, y, sd)
    monkeypatch.setattr(resources, "MEMORY_BUDGET", 400_000)     # 128 x 100 x 4 x 8 = 410 kB
    with pytest.raises(ValueError, match="100 landmarks needs about"):
        MarginalTransferClassifier(solver="nystroem", n_landmarks=100).fit(X, y, sd)
    MarginalTransferClassifier(solver="nystroem", n_landmarks=97, random_state=0).fit(X, y, sd)
    monkeypatch.setattr(resources, "MEMORY_BUDGET", None)        # the machine's memory
    MarginalTransferClassifier(solver="exact", random_state=0).fit(X, y, sd)
    with pytest.raises(ValueError, match=r"solver='rf' on 128 training rows with "
                                         r"n_features=10000000000 .*Lower n_features"):
        MarginalTransferClassifier(solver="rf", n_features=10**10).fit(X, y, sd)


def test_extreme_values_give_value_errors_or_finite_output():
    X, y, sd = make_rotated_ellipses(4, 10, random_state=0)
    for value in (1e-300, 1e300):                   # ZeroDivisionError / OverflowError before
        with pytest.raises(ValueError, match=r"bandwidth_x=.*outside \[1e-150, 1e\+150\]"):
            MarginalTransferClassifier(bandwidth_x=value).fit(X, y, sd)
    with pytest.raises(ValueError, match="squared-hinge costs are too large"):     # it hung
        MarginalTransferClassifier(C=1e300, solver="rf", loss="squared_hinge").fit(X, y, sd)
    with pytest.raises(ValueError, match="numerically singular"):   # it was a LinAlgError
        MarginalTransferClassifier(C=1e20, solver="rf", loss="squared_hinge",
                                   random_state=0).fit(X, y, sd)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        clf = MarginalTransferClassifier(C=1e10, solver="rf", loss="squared_hinge",
                                         random_state=0).fit(X, y, sd)
    assert np.isfinite(clf.decision_function(X, -sd)).all()
    for solver in ("exact", "rf"):
        # a constant target: every dual coefficient is 0 (the exact predict used to fail)
        reg = MarginalTransferRegressor(solver=solver, random_state=0).fit(X, np.full(40, 3.0),
                                                                           sd)
        assert np.allclose(reg.predict(X, -sd), 3.0)
        big = MarginalTransferRegressor(solver=solver, random_state=0).fit(
            X, X[:, 0] * 1e300, sd)                 # y.std() overflowed to inf
        assert np.isfinite(big.predict(X, -sd)).all() and big.y_scale_ > 1e299


# ------------------------------------------------ the former bandwidth names (one release)
@pytest.mark.parametrize("Est", [MarginalTransferClassifier, MarginalTransferRegressor,
                                 PoolingClassifier, PoolingRegressor])
@pytest.mark.parametrize("solver", ["exact", "rf"])
def test_former_sigma_names_warn_and_give_the_same_model_bit_for_bit(Est, solver):
    X, y, sd = make_rotated_ellipses(6, 16, random_state=0)
    y = y.astype(float) + X[:, 0] if "Regressor" in Est.__name__ else y
    values = {"sigma_x": 0.4, "sigma_emb": "2*median", "sigma_p": "0.5*median"}
    kw = dict(solver=solver, n_features=40, random_state=0)
    for old, value in values.items():
        if old not in Est().get_params():                   # Pooling*: sigma_x only
            continue
        new = "bandwidth_" + old.split("_")[1]
        assert Est(**{old: value}).get_params()[old] == value   # __init__ stores it as given
        with pytest.warns(FutureWarning, match=rf"^{Est.__name__}: {old} is renamed {new}; "
                                               rf"pass {new}="):
            a = Est(**kw, **{old: value}).fit(X, y, sd)
        with warnings.catch_warnings():
            warnings.simplefilter("error", FutureWarning)     # the new name does not warn
            b = Est(**kw, **{new: value}).fit(X, y, sd)
        assert (a.sigma_x_, a.sigma_emb_, a.sigma_p_) == (b.sigma_x_, b.sigma_emb_, b.sigma_p_)
        assert a.sigma_x_ == 0.4 or old != "sigma_x"          # the value given is used
        np.testing.assert_array_equal(a.predict(X, sd), b.predict(X, sd))
        if hasattr(a, "decision_function"):
            np.testing.assert_array_equal(a.decision_function(X, sd), b.decision_function(X, sd))
        with pytest.raises(ValueError, match=rf"got both {old}=.* and {new}=0.3; {old} is the "
                                             rf"former name of {new}: give {new} only"):
            Est(**{old: value, new: 0.3}).fit(X, y, sd)
