"""Tests of marginal transfer learning (shiftlearn.generalization)."""

import warnings

import numpy as np
import pytest
from _tolerances import EPS, dot_atol, mean_atol, rbf_err, rff_err
from sklearn.exceptions import ConvergenceWarning

from shiftlearn.datasets import make_rotated_ellipses
from shiftlearn.generalization import (
    AUTO_RF_MIN_SAMPLES,
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


# ------------------------------------------------------------------------- edge cases
# Both sides of the marginal-transfer boundaries (issue #23, row 6): ``min_task_size`` (a task
# with exactly that many rows is accepted, one fewer is refused) and the automatic solver switch
# (``AUTO_RF_MIN_SAMPLES - 1`` rows: exact, ``AUTO_RF_MIN_SAMPLES``: random features).


ESTIMATORS = [MarginalTransferClassifier, MarginalTransferRegressor, PoolingClassifier,
              PoolingRegressor]


def _tasks(sizes, seed=0, regression=False):
    """Tasks of unequal sizes (ids 1, 2, ...), two classes in every task."""
    rng = np.random.default_rng(seed)
    X, y, sd = [], [], []
    for i, n in enumerate(sizes):
        Xi = rng.normal(size=(n, 2)) + 0.3 * i
        X.append(Xi)
        yi = Xi[:, 0] + 0.1 * rng.normal(size=n) if regression else (np.arange(n) % 2)
        y.append(yi)
        sd.append(np.full(n, i + 1))
    return np.vstack(X), np.concatenate(y), np.concatenate(sd)


def _fit(Est, X, y, sd, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return Est(max_iter=30, **kw).fit(X, y, sd)


# ------------------------------------------------------------------ min_task_size
@pytest.mark.parametrize("Est", ESTIMATORS)
def test_min_task_size_boundary(Est):
    reg = "Regressor" in Est.__name__
    X, y, sd = _tasks((6, 3, 9), regression=reg)     # the smallest task (id 2) has 3 rows
    est = _fit(Est, X, y, sd, min_task_size=3)      # exactly min_task_size: accepted
    assert est.n_tasks_ == 3
    with pytest.raises(ValueError, match=r"task 2 has only 3 sample\(s\).*min_task_size=4"):
        _fit(Est, X, y, sd, min_task_size=4)


def test_min_task_size_names_every_small_task_and_only_those():
    X, y, sd = _tasks((6, 3, 9, 2))
    with pytest.raises(ValueError, match="min_task_size=4") as e:
        _fit(MarginalTransferClassifier, X, y, sd, min_task_size=4)
    msg = str(e.value)
    assert "task 2 has only 3" in msg and "task 4 has only 2" in msg
    assert "task 1" not in msg and "task 3" not in msg


def test_default_min_task_size_is_two():
    X, y, sd = _tasks((6, 2, 5))
    _fit(MarginalTransferClassifier, X, y, sd)                  # a task of 2 rows: accepted
    sd1 = sd.copy()
    sd1[6] = 7                                                  # a task of 1 row: refused
    with pytest.raises(ValueError, match="task 7 has only 1 sample"):
        _fit(MarginalTransferClassifier, X, y, sd1)


# ------------------------------------------------------------------ solver="auto"
@pytest.mark.parametrize("Est", ESTIMATORS)
def test_auto_solver_switch_boundary(Est):
    reg = "Regressor" in Est.__name__
    M = AUTO_RF_MIN_SAMPLES
    # unequal tasks: M - 1 rows in all, then one more row in the last task
    sizes = [M // 2, M // 3, M - 1 - M // 2 - M // 3]
    X, y, sd = _tasks(sizes, regression=reg)
    assert X.shape[0] == M - 1
    assert _fit(Est, X, y, sd, random_state=0).solver_ == "exact"
    X2, y2, sd2 = _tasks(sizes[:2] + [sizes[2] + 1], regression=reg)
    assert X2.shape[0] == M
    assert _fit(Est, X2, y2, sd2, random_state=0).solver_ == "rf"
    # a linear kernel_x has no random-feature solver: exact below, Nyström from the threshold
    assert _fit(Est, X, y, sd, kernel_x="linear").solver_ == "exact"
    assert _fit(Est, X2, y2, sd2, kernel_x="linear").solver_ == "nystroem"
    # explicit solvers are kept on the other side of the boundary
    assert _fit(Est, X, y, sd, solver="rf", random_state=0).solver_ == "rf"


def test_auto_rf_min_samples_is_the_documented_value():
    """The docs and benchmarks/generalization/marginal_speed.py quote 1000 rows."""
    assert AUTO_RF_MIN_SAMPLES == 1000


# ------------------------------------------------------------------ embeddings (plain functions)
def _tasks_xy(seed=0, sizes=(7, 2, 11, 4), d=2, shuffle=True):
    rng = np.random.default_rng(seed)
    task = np.repeat(np.arange(len(sizes)), sizes)
    X = rng.normal(size=(task.size, d)) + task[:, None] * 0.7
    if shuffle:
        p = rng.permutation(task.size)
        X, task = X[p], task[p]
    return X, task


def _kernel_err(kernel, X, Y, sigma, K):
    """Entrywise round-off bound of a kernel matrix computed in two orders: the Gaussian's
    cancellation (rbf_err), gamma_d |x||y| for the linear kernel, and c d eps (1 + |log k|)
    relative for the Laplacian and Cauchy kernels (no BLAS: each coordinate's rounding)."""
    d = X.shape[1]
    if kernel == "rbf":
        return rbf_err(X, Y, sigma)
    if kernel == "linear":
        return 4 * d * EPS * (np.abs(X) @ np.abs(Y).T)
    return 4 * d * EPS * (1 + np.abs(np.log(K))) * K


def _block_mean_atol(kernel, X, Y, sigma, K):
    """The kernel's round-off plus that of a mean over at most K.size entries."""
    return float(np.max(_kernel_err(kernel, X, Y, sigma, K))
                 + 4 * K.size * EPS * np.max(np.abs(K)))


@pytest.mark.parametrize("kernel", ["rbf", "linear", "laplacian", "cauchy"])
def test_exact_embedding_gram_is_the_mean_kernel_between_tasks(kernel):
    from shiftlearn.generalization._embedding import exact_embedding_gram
    from shiftlearn.kernels import kernel_matrix

    X, t = _tasks_xy()
    Y, ty = _tasks_xy(seed=1, sizes=(3, 5, 1))
    sigma = None if kernel == "linear" else 1.3
    K = kernel_matrix(X, Y, kernel=kernel, sigma=sigma)
    ref = np.array([[K[t == i][:, ty == j].mean() for j in range(3)] for i in range(4)])
    for chunk in (2048, 3):
        G = exact_embedding_gram(X, t, 4, Y, ty, 3, kernel=kernel, sigma=sigma,
                                 chunk_rows=chunk)
        # kernel entries formed in other chunks, then block means: their round-off (a block
        # of the wrong task pair is off by ~0.1)
        np.testing.assert_allclose(G, ref, rtol=0,
                                   atol=_block_mean_atol(kernel, X, Y, sigma, K))
    Kxx = kernel_matrix(X, kernel=kernel, sigma=sigma)
    ref_xx = np.array([[Kxx[t == i][:, t == j].mean() for j in range(4)] for i in range(4)])
    np.testing.assert_allclose(exact_embedding_gram(X, t, 4, kernel=kernel, sigma=sigma),
                               ref_xx, rtol=0, atol=_block_mean_atol(kernel, X, X, sigma, Kxx))


def test_embedding_distances_gaussian_and_median_rule():
    from shiftlearn.generalization._embedding import (
        embedding_sq_distances,
        gaussian_from_sq_distances,
    )
    from shiftlearn.kernels import median_heuristic
    from shiftlearn.kernels import sigma_from_sq_distances as median_sigma_from_sq_distances

    G = np.array([[2.0, 1.0 + 1e-15], [1.0 + 1e-15, 0.0]])
    D = embedding_sq_distances(G, np.diag(G), np.diag(G))
    # d_i + d_j - 2 G_ij rounds to c eps (d_i + d_j + 2 |G_ij|), here 4 eps 6 (an unclipped
    # -2e-15 or a G_ii term left in is caught only by the clip itself, as here)
    np.testing.assert_allclose(D, [[0.0, 0.0], [0.0, 0.0]], atol=4 * EPS * 6)
    assert np.all(D >= 0)                                   # rounding below 0 is clipped
    D2 = np.array([[0.0, 4.0, 9.0], [4.0, 0.0, 1.0], [9.0, 1.0, 0.0]])
    np.testing.assert_allclose(gaussian_from_sq_distances(D2, 1.5), np.exp(-D2 / 4.5))
    assert median_sigma_from_sq_distances(D2) == 2.0        # median of 4, 9, 1 is 4
    assert median_sigma_from_sq_distances(D2[:2, :2]) == 2.0   # two tasks: one distance
    assert median_sigma_from_sq_distances(np.zeros((1, 1))) == 1.0
    assert median_sigma_from_sq_distances(np.zeros((3, 3))) == 1.0
    assert median_sigma_from_sq_distances(np.full((2, 2), 0.25) - np.diag([0.25, 0.25])) == 0.5
    # one rule: on the rows' own squared distances it is the median heuristic
    X = np.random.default_rng(0).normal(size=(30, 3))
    sq = ((X[:, None] - X[None]) ** 2).sum(-1)
    # the Gram formula against differences: c (d + 2) eps (||x||^2 + ||y||^2) on each squared
    # distance, relative to the statistic
    n2 = np.sum(X * X, axis=1)
    iu = np.triu_indices(30, k=1)
    rel = (4 * 5 * EPS * np.max(n2[:, None] + n2[None, :])
           / min(np.median(sq[iu]), np.mean(sq[iu])))
    for rule in ("median", "median_sq", "mean"):
        assert (median_sigma_from_sq_distances(sq, rule)
                == pytest.approx(median_heuristic(X, rule=rule), rel=rel))


def test_product_kernel_multiplies_task_and_point_kernels():
    from shiftlearn.generalization._embedding import product_kernel
    from shiftlearn.kernels import rbf_kernel

    X, t = _tasks_xy()
    Y, ty = _tasks_xy(seed=2, sizes=(2, 3, 1, 4))
    KP = np.random.default_rng(0).random((4, 4)) + 0.5
    for chunk in (2048, 5):
        K = product_kernel(X, t, KP, Y, ty, sigma=0.9, chunk_rows=chunk)
        # the Gaussian's round-off scaled by k_P, plus the product's rounding (the wrong
        # task's k_P is off by ~0.3 relative)
        atol = np.max(KP[t][:, ty] * rbf_err(X, Y, 0.9)) + 2 * EPS * np.max(KP)
        np.testing.assert_allclose(K, KP[t][:, ty] * rbf_kernel(X, Y, sigma=0.9), rtol=0,
                                   atol=atol)
    K = product_kernel(X, t, KP, kernel="linear")
    # X X^T in another BLAS call: gamma_d |X| |X|^T, absolute (entries cancel), times k_P
    np.testing.assert_allclose(K, KP[t][:, t] * (X @ X.T), rtol=2 * EPS,
                               atol=np.max(KP) * dot_atol(X, X.T))


def test_task_rows_and_rff_embeddings():
    from shiftlearn.generalization._embedding import rff_embeddings, task_rows
    from shiftlearn.kernels import rff_map, rff_weights

    t = np.array([2, 0, 2, 0, 2])
    rows = task_rows(t)
    assert [r.tolist() for r in rows] == [[1, 3], [], [0, 2, 4]]
    assert [r.tolist() for r in task_rows(t, 4)][3] == []
    assert task_rows(np.array([], dtype=int)) == []
    X, task = _tasks_xy()
    np.testing.assert_allclose(rff_embeddings(X, task, 4, None),
                               np.array([X[task == i].mean(axis=0) for i in range(4)]))
    W = rff_weights(2, 6, 1.0, random_state=0)
    Z = rff_map(X, W)
    ref = np.array([Z[task == i].mean(axis=0) for i in range(4)])
    # task means of features formed in other BLAS calls: rff_err, summed in another order
    dZ = rff_err(X, W)
    atol = max(mean_atol(Z[task == i], err=dZ[task == i]) for i in range(4))
    np.testing.assert_allclose(rff_embeddings(X, task, 4, W), ref, rtol=0, atol=atol)
    e32 = rff_embeddings(X, task, 4, W, dtype=np.float32)
    assert e32.dtype == np.float64
    assert 0 < np.abs(e32 - ref).max() < 1e-5


@pytest.mark.parametrize("shuffle", [True, False])
def test_rff_product_features_are_rff_of_the_stacked_input(shuffle):
    """z(u) with u = (x / sigma_x, Z_P[task] / sigma_p) and frequencies (V_x; V_p): the task
    offsets are a shortcut, not an approximation; chunking and row order do not matter."""
    from shiftlearn.generalization._embedding import rff_product_features
    from shiftlearn.kernels import rff_map

    X, task = _tasks_xy(shuffle=shuffle)
    rng = np.random.default_rng(3)
    ZP = rng.normal(size=(5, 4))                      # task 4 has no rows: skipped
    Vx, Vp = rng.normal(size=(2, 7)), rng.normal(size=(4, 7))
    ref = rff_map(np.hstack([X / 0.8, ZP[task] / 1.7]), np.vstack([Vx, Vp]))
    # the task offsets ZP V_p / 1.7 added to X V_x / 0.8 change the phases' order of
    # summation: rff_err of the stacked input (a wrong task's offset is off by O(1 / sqrt Q))
    atol = np.max(rff_err(np.hstack([X / 0.8, ZP[task] / 1.7]), np.vstack([Vx, Vp])))
    for chunk in (None, 3):
        Z = rff_product_features(X, task, ZP, Vx, Vp, sigma_x=0.8, sigma_p=1.7,
                                 chunk_size=chunk)
        np.testing.assert_allclose(Z, ref, rtol=0, atol=atol)
    out = np.full((X.shape[0], 14), np.nan)
    res = rff_product_features(X, task, ZP, Vx, Vp, sigma_x=0.8, sigma_p=1.7, out=out)
    assert res is out
    np.testing.assert_allclose(out, ref, rtol=0, atol=atol)
    f32 = rff_product_features(X, task, ZP, Vx, Vp, sigma_x=0.8, sigma_p=1.7, dtype=np.float32)
    assert 0 < np.abs(f32 - ref).max() < 1e-5
    # pooling: plain RFF of x / sigma_x, chunked or not
    pool = rff_map(X / 0.8, Vx)
    atol = np.max(rff_err(X / 0.8, Vx))                # phases in other BLAS calls
    for chunk in (None, 4):
        np.testing.assert_allclose(
            rff_product_features(X, task, None, Vx, None, sigma_x=0.8, sigma_p=1.7,
                                 chunk_size=chunk), pool, rtol=0, atol=atol)
        np.testing.assert_allclose(
            rff_product_features(X, task, ZP, Vx, None, sigma_x=0.8, sigma_p=1.7,
                                 chunk_size=chunk), pool, rtol=0, atol=atol)


@pytest.mark.parametrize("layout", ["alternating", "middle_task_empty", "few_frequencies"])
def test_rff_product_features_on_awkward_task_layouts(layout):
    from shiftlearn.generalization._embedding import rff_product_features
    from shiftlearn.kernels import rff_map

    rng = np.random.default_rng(4)
    Q = 7
    if layout == "alternating":                        # rows of a task with gaps of one row
        task = np.array([0, 1, 0, 1, 0, 2, 2])
    elif layout == "middle_task_empty":
        task = np.array([0, 0, 1, 3, 3, 4, 1])         # task 2 has no rows
    else:
        task = np.repeat(np.arange(5), 2)              # 5 tasks, 3 frequencies
        Q = 3
    X = rng.normal(size=(task.size, 2))
    ZP = rng.normal(size=(5, 4))
    Vx, Vp = rng.normal(size=(2, Q)), rng.normal(size=(4, Q))
    ref = rff_map(np.hstack([X / 0.8, ZP[task] / 1.7]), np.vstack([Vx, Vp]))
    # the task offsets ZP V_p / 1.7 added to X V_x / 0.8 change the phases' order of
    # summation: rff_err of the stacked input (a wrong task's offset is off by O(1 / sqrt Q))
    atol = np.max(rff_err(np.hstack([X / 0.8, ZP[task] / 1.7]), np.vstack([Vx, Vp])))
    for chunk in (None, 1):
        Z = rff_product_features(X, task, ZP, Vx, Vp, sigma_x=0.8, sigma_p=1.7,
                                 chunk_size=chunk)
        np.testing.assert_allclose(Z, ref, rtol=0, atol=atol)
        # into a NaN buffer: every row is written (np.empty may hand back the last result's
        # memory, which hides rows a bug leaves unwritten)
        out = np.full((X.shape[0], 2 * Q), np.nan)
        rff_product_features(X, task, ZP, Vx, Vp, sigma_x=0.8, sigma_p=1.7, chunk_size=chunk,
                             out=out)
        np.testing.assert_allclose(out, ref, rtol=0, atol=atol)


# ------------------------------------------------------------------ parameters reach the fit
def _fit_q(Est=MarginalTransferClassifier, sizes=(12, 5, 9), **kw):
    X, y, sd = _tasks(sizes, regression="Regressor" in Est.__name__)
    kw.setdefault("random_state", 0)
    return _fit(Est, X, y, sd, **kw), (X, y, sd)


@pytest.mark.filterwarnings("ignore:.*min_predict_task_size")
@pytest.mark.parametrize("solver", ["exact", "rf"])
def test_embedding_parameters_reach_the_fit_and_predict(solver):
    est, (X, y, sd) = _fit_q(solver=solver, bandwidth_emb=2.0, bandwidth_p=0.7, n_features_emb=7,
                             n_features=20)
    assert est.sigma_emb_ == 2.0 and est.sigma_p_ == 0.7 and isinstance(est.n_iter_, int)
    if solver == "rf":
        assert est.W_.shape == (2, 7) and est.ZP_.shape == (3, 14)
    lin, _ = _fit_q(solver=solver, kernel_emb="linear", n_features=20)
    assert lin.sigma_emb_ is None
    if solver == "rf":
        assert lin.W_ is None and lin.ZP_.shape == (3, 2)          # task means
    lin.decision_function(X, sd + 10)
    linx, _ = _fit_q(solver=solver, kernel_x="linear") if solver == "exact" else (None, None)
    if linx is not None:
        assert linx.sigma_x_ is None
        linx.decision_function(X, sd + 10)
    for bad in ("bandwidth_emb", "bandwidth_p"):
        with pytest.raises(ValueError, match=bad):
            _fit_q(solver=solver, n_features=20, **{bad: "-2*median"})


@pytest.mark.parametrize("Est", [PoolingClassifier, PoolingRegressor])
@pytest.mark.parametrize("solver", ["exact", "rf"])
def test_pooling_has_no_embedding_state(Est, solver):
    est, (X, y, sd) = _fit_q(Est, solver=solver, n_features=20)
    assert est.sigma_emb_ is None and est.sigma_p_ is None
    if solver == "rf":
        assert est.W_ is None and est.V_p_ is None and est.ZP_ is None
        assert abs(float(np.std(est.V_x_)) - 1.0) < 0.2          # unit-bandwidth frequencies
    est.predict(X, sd + 10)
    est.predict(X)                                               # one test task


def test_rf_sigma_p_with_one_and_two_training_tasks():
    from shiftlearn.kernels import median_heuristic

    one, _ = _fit_q(sizes=(10,), solver="rf", n_features=20)
    assert one.sigma_p_ == 1.0                                   # no pair of tasks to measure
    two, _ = _fit_q(sizes=(10, 6), solver="rf", n_features=20)
    assert two.sigma_p_ == pytest.approx(median_heuristic(two.ZP_))
    assert two.sigma_p_ != 1.0
    V = np.vstack([two.V_x_, two.V_p_])
    assert abs(float(np.std(V)) - 1.0) < 0.2                     # unit-bandwidth frequencies


@pytest.mark.parametrize("weighting", ["task", "point"])
def test_task_weighting_sets_the_per_point_costs(weighting):
    """Linear kernel_x with pooling: the exact model is the linear SVM without intercept on x
    with costs c_a = C M / (N n_t) ('task') or C ('point'), which liblinear solves directly
    (sample_weight = the per-row cost / C) to the same decision values."""
    from sklearn.svm import LinearSVC

    sizes = (24, 6, 12)
    M, N = sum(sizes), len(sizes)
    est, (X, y, sd) = _fit_q(sizes=sizes, solver="exact", C=0.05, weighting=weighting,
                             kernel_x="linear", tau=1.0, tol=1e-8)
    n_t = np.repeat(sizes, sizes).astype(float)
    w = M / (N * n_t) if weighting == "task" else np.ones(M)
    ref = LinearSVC(C=0.05, loss="hinge", fit_intercept=False, dual=True, tol=1e-8,
                    max_iter=100_000, random_state=0).fit(X, y, sample_weight=w)
    np.testing.assert_allclose(est.decision_function(X, sd + 10), ref.decision_function(X),
                               atol=1e-6)
    other = LinearSVC(C=0.05, loss="hinge", fit_intercept=False, dual=True, tol=1e-8,
                      max_iter=100_000, random_state=0).fit(
        X, y, sample_weight=np.ones(M) if weighting == "task" else M / (N * n_t))
    assert np.max(np.abs(other.decision_function(X) - ref.decision_function(X))) > 1e-3
    # the support vectors are the rows on or inside the margin (hinge KKT conditions)
    margin = np.where(y == est.classes_[1], 1.0, -1.0) * ref.decision_function(X)
    sv = {tuple(r) for r in est.support_vectors_}
    assert all(tuple(X[a]) in sv for a in np.flatnonzero(margin < 1 - 1e-4))
    assert not any(tuple(X[a]) in sv for a in np.flatnonzero(margin > 1 + 1e-4))


def test_squared_hinge_newton_svc_matches_the_solver():
    from shiftlearn.generalization._marginal_base import _SquaredHingeNewtonSVC
    from shiftlearn.generalization._solvers import linear_squared_hinge_newton

    rng = np.random.default_rng(0)
    Z = rng.normal(size=(40, 5)).astype(np.float32)
    w = rng.random(40) + 0.5
    for labels in (np.arange(40) % 2, np.arange(40) % 3):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            svc = _SquaredHingeNewtonSVC(C=0.7, tol=1e-8, max_iter=50).fit(Z, labels, w)
        pos = [1] if labels.max() == 1 else [0, 1, 2]
        for j, k in enumerate(pos):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", ConvergenceWarning)
                ref = linear_squared_hinge_newton(Z, np.where(labels == k, 1.0, -1.0), 0.7 * w,
                                                  tol=1e-8, max_iter=50)
            np.testing.assert_allclose(svc.coef_[j], ref, rtol=1e-5, atol=1e-7)
        out = svc.decision_function(Z)
        assert out.shape == ((40,) if len(pos) == 1 else (40, 3))


def test_predictions_do_not_depend_on_row_order():
    """(Not on the batch either, but a smaller batch is another test task: another marginal.)"""
    est, (X, y, sd) = _fit_q(solver="exact")
    rng = np.random.default_rng(1)
    Xt = rng.normal(size=(4100, 2))                    # more than one 4096-row block
    f = est.decision_function(Xt)
    np.testing.assert_allclose(est.decision_function(Xt[::-1]), f[::-1], rtol=1e-10,
                               atol=1e-12)
    assert np.all(f != 0)                              # every row of every block is computed


def test_one_test_task_without_sample_domain_warns_about_nothing():
    import warnings as w

    est, (X, y, sd) = _fit_q(solver="exact")
    with w.catch_warnings():
        w.simplefilter("error")
        est.predict(np.random.default_rng(2).normal(size=(30, 2)))


def test_missing_y_and_task_size_messages():
    X, y, sd = _tasks((6, 3, 9, 2))
    with pytest.raises(ValueError, match="^MarginalTransferClassifier requires y to be passed"):
        MarginalTransferClassifier().fit(X, None, sd)
    with pytest.raises(ValueError, match=r"task 2 has only 3 sample\(s\), task 4 has only 2 "):
        _fit(MarginalTransferClassifier, X, y, sd, min_task_size=4)


def test_squared_hinge_newton_svc_passes_tol_and_max_iter():
    """Both stopping rules reach the solver: one Newton step with max_iter=1, and a loose tol
    stops earlier (with fewer iterations) than a tight one."""
    from shiftlearn.generalization._marginal_base import _SquaredHingeNewtonSVC
    from shiftlearn.generalization._solvers import linear_squared_hinge_newton

    rng = np.random.default_rng(5)
    Z = rng.normal(size=(60, 4))
    labels = (Z[:, 0] + 0.8 * rng.normal(size=60) > 0).astype(int)
    w = rng.random(60) + 0.5
    yy = np.where(labels == 1, 1.0, -1.0)
    for tol, max_iter in ((1e-10, 1), (0.5, 50), (1e-10, 50)):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            svc = _SquaredHingeNewtonSVC(C=2.0, tol=tol, max_iter=max_iter).fit(Z, labels, w)
            ref, it = linear_squared_hinge_newton(Z, yy, 2.0 * w, tol=tol, max_iter=max_iter,
                                                  return_n_iter=True)
        assert svc.n_iter_.tolist() == [it]
        np.testing.assert_array_equal(svc.coef_[0], ref)
    one = _SquaredHingeNewtonSVC(C=2.0, tol=1e-10, max_iter=1)
    loose = _SquaredHingeNewtonSVC(C=2.0, tol=0.5, max_iter=50)
    tight = _SquaredHingeNewtonSVC(C=2.0, tol=1e-10, max_iter=50)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        n = [m.fit(Z, labels, w).n_iter_[0] for m in (one, loose, tight)]
    assert n[0] == 1 and n[1] < n[2] and n[2] > 1


# ------------------------------------------------------------------ test tasks' k_P
def _expansion(est, X, t, KP):
    """The documented decision function: sum_b alpha_b k_P(task(x), task_b) k(x, x_b), with
    ``KP[i, j]`` = k_P between test task ``i`` and training task ``j``."""
    from shiftlearn.generalization._embedding import product_kernel

    K = product_kernel(X, t, KP, est.support_vectors_, est.support_task_,
                       kernel=est.kernel_x, sigma=est.sigma_x_)
    return (K @ est.dual_coef_).ravel()


@pytest.mark.parametrize("kernel_p,kw", [("polynomial", dict(degree_p=3, tau=0.3)),
                                         ("exponential", dict(tau=0.2)),
                                         ("gaussian", dict()),
                                         ("indicator", dict(tau=0.4))])
def test_a_test_task_with_a_training_task_rows_gets_its_training_task_kernel(kernel_p, kw):
    """A test task made of the rows of training task i is embedded as task i, so its k_P row
    is the training k_P row of task i (with every parameter of k_P: kind, degree, tau, sigma_p):
    the decision values are the expansion with the training task kernel."""
    from shiftlearn.generalization._embedding import exact_embedding_gram, task_kernel

    X, y, sd = _tasks((12, 10, 15), seed=3)
    est = _fit(MarginalTransferClassifier, X, y, sd, solver="exact", kernel_p=kernel_p,
               random_state=0, **kw)
    N, tau = est.n_tasks_, kw.get("tau", 0.0)
    t = np.searchsorted(est.domains_, sd)
    if kernel_p == "indicator":
        KP = task_kernel(None, None, None, kind="indicator", tau=tau,
                         same=np.eye(N, dtype=bool))
        test_ids = sd                                # the same task = the same id
    else:
        G = exact_embedding_gram(X, t, N, kernel="rbf", sigma=est.sigma_emb_)
        d = np.diag(G).copy()
        KP = task_kernel(G, d, d, kind=kernel_p, sigma=est.sigma_p_,
                         degree=kw.get("degree_p", 2), tau=tau)
        test_ids = sd + 10                           # new ids: embedded from their rows
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)     # "were training tasks"
        got = est.decision_function(X, test_ids).ravel()
    np.testing.assert_allclose(got, _expansion(est, X, t, KP), rtol=1e-9, atol=1e-12)
    if kernel_p == "indicator":                      # one batch, no id: a new task, k_P = tau
        rows = sd == 2
        got = est.decision_function(X[rows]).ravel()
        ref = _expansion(est, X[rows], np.zeros(rows.sum(), int), np.full((1, N), tau))
        np.testing.assert_allclose(got, ref, rtol=1e-9, atol=1e-12)


def _indicator_tau_zero():
    """The exact indicator model with tau = 0 (nothing shared between tasks) and its data."""
    X, y, sd = _tasks((12, 10, 15), seed=4)
    est = _fit(MarginalTransferClassifier, X, y, sd, solver="exact", kernel_p="indicator",
               random_state=0)
    return est, (X, y, sd)


def test_indicator_tau_zero_on_a_batch_without_ids_warns_once():
    est, (X, y, sd) = _indicator_tau_zero()
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        f = est.decision_function(X[:12])
    assert len(rec) == 1 and rec[0].category is UserWarning
    assert str(rec[0].message).startswith(
        "MarginalTransferClassifier: kernel_p='indicator' with tau=0 shares nothing between "
        "tasks, and the batch (sample_domain=None) is not a training task, so k_P = 0")
    np.testing.assert_array_equal(f, 0.0)


# ------------------------------------------------------------------ task_kernel edges
def test_task_kernel_defaults_dtype_refusals_and_silent_overflow():
    from shiftlearn.generalization._embedding import TASK_KERNELS, task_kernel

    G = np.array([[1.0, 0.5], [0.5, 2.0]])
    d = np.diag(G).copy()
    D2 = d[:, None] + d[None, :] - 2 * G
    # d_i + d_j - 2 G_ij rounds to c eps (d_i + d_j + 2 |G_ij|), which exp(-D2 / 2) turns
    # into half that relative; (1 + G)^2 is three roundings (another sigma or degree is off
    # by O(1))
    rtol = 4 * EPS * (np.max(d[:, None] + d[None, :] + 2 * np.abs(G)) / 2 + 1)
    np.testing.assert_allclose(task_kernel(G, d, d), np.exp(-D2 / 2.0), rtol=rtol)  # gaussian
    np.testing.assert_allclose(task_kernel(G, d, d, kind="polynomial"), (1.0 + G) ** 2,
                               rtol=4 * EPS)                               # degree 2
    ind = task_kernel(None, None, None, kind="indicator", same=np.eye(2, dtype=bool))
    assert ind.dtype == np.float64 and ind.tolist() == [[1.0, 0.0], [0.0, 1.0]]
    with pytest.raises(ValueError, match=r"^The indicator kernel needs same\[i, j\]"):
        task_kernel(None, None, None, kind="indicator")
    with pytest.raises(ValueError, match=r"^kernel_p='exponential' overflows: .* reaches 800"):
        task_kernel(np.full((2, 2), 800.0), d, d, kind="exponential")
    assert task_kernel(np.full((2, 2), 700.0), d, d, kind="exponential")[0, 0] == np.exp(700.0)
    with pytest.raises(ValueError, match=r"^kind must be one of .*got 'cosine'") as e:
        task_kernel(G, d, d, kind="cosine")
    assert str(TASK_KERNELS) in str(e.value)
    with warnings.catch_warnings():                  # the overflow is an error, not a warning
        warnings.simplefilter("error")
        with pytest.raises(ValueError, match="kernel_p='polynomial' overflows float64"):
            task_kernel(np.full((2, 2), 1e200), d, d, kind="polynomial", degree=3)


def test_task_kernel_sigma_with_two_tasks_uses_their_one_pair():
    from shiftlearn.generalization._embedding import task_kernel_sigma

    G2 = np.array([[4.0, 2.25], [2.25, 9.0]])
    assert task_kernel_sigma(G2, None, "exponential") == 1.5      # sqrt(|G01|), not the diag
    assert task_kernel_sigma(G2, None, "polynomial") == 1.5
    assert task_kernel_sigma(np.array([[6.25]]), None, "polynomial") == 2.5   # one task
    G3 = np.array([[4.0, 1.0, 9.0], [1.0, 1.0, 4.0], [9.0, 4.0, 9.0]])
    assert task_kernel_sigma(G3, None, "exponential") == 2.0      # median(1, 9, 4)


@pytest.mark.parametrize("solver", ["exact", "rf"])
@pytest.mark.parametrize("name", ["bandwidth_x", "bandwidth_emb", "bandwidth_p"])
def test_an_unrepresentable_bandwidth_is_refused_by_its_name(solver, name):
    with pytest.raises(ValueError, match=rf"^{name}=1e-200 gives the bandwidth 1e-200, outside"):
        _fit_q(solver=solver, n_features=20, **{name: 1e-200})


def test_indicator_task_kernel_with_tau_is_the_multitask_feature_map():
    """kernel_p='indicator' with tau: k_P = tau + (1 - tau) [same task]; with a linear kernel_x
    the model is the linear SVM without intercept on the features
    (sqrt(tau) x, sqrt(1 - tau) x in the block of x's task) with the per-task costs, which
    liblinear solves directly to the same decision values."""
    from sklearn.svm import LinearSVC

    sizes, tau, C = (24, 6, 12), 0.4, 0.05
    M, N = sum(sizes), len(sizes)
    est, (X, y, sd) = _fit_q(sizes=sizes, solver="exact", C=C, kernel_x="linear",
                             kernel_p="indicator", tau=tau, tol=1e-8)
    t = sd - 1
    blocks = np.zeros((M, N * X.shape[1]))
    for i in range(N):
        blocks[t == i, 2 * i:2 * i + 2] = X[t == i]
    Phi = np.hstack([np.sqrt(tau) * X, np.sqrt(1 - tau) * blocks])
    w = M / (N * np.repeat(sizes, sizes).astype(float))
    ref = LinearSVC(C=C, loss="hinge", fit_intercept=False, dual=True, tol=1e-8,
                    max_iter=100_000, random_state=0).fit(Phi, y, sample_weight=w)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)     # the test ids are training tasks
        got = est.decision_function(X, sd)
    np.testing.assert_allclose(got, ref.decision_function(Phi), atol=1e-6)


@pytest.mark.parametrize("Est", [MarginalTransferClassifier, PoolingRegressor])
def test_a_column_vector_y_is_raveled_with_a_warning_and_two_columns_are_refused(Est):
    from sklearn.exceptions import DataConversionWarning

    X, y, sd = _tasks((12, 10), regression="Regressor" in Est.__name__)
    ref = _fit(Est, X, y, sd, solver="exact", random_state=0)
    with pytest.warns(DataConversionWarning, match="^A column-vector y was passed when a 1d "
                                                   "array was expected; it is raveled"):
        col = _fit(Est, X, y[:, None], sd, solver="exact", random_state=0)
    np.testing.assert_array_equal(col.dual_coef_, ref.dual_coef_)
    with pytest.raises(ValueError):
        _fit(Est, X, np.column_stack([y, y]), sd, solver="exact", random_state=0)


@pytest.mark.parametrize("Est", [MarginalTransferRegressor, PoolingRegressor])
def test_a_regression_target_of_minus_one_is_a_label_not_an_unlabeled_row(Est):
    """-1 marks unlabeled rows in classification only: an integer-valued regression target
    with -1 values trains on every row (only NaN is unlabeled in regression)."""
    X, _, sd = _tasks((12, 10), seed=6)
    y = np.round(X[:, 0] * 2).astype(int)
    assert (y == -1).sum() >= 2
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)          # no row is dropped
        est = _fit(Est, X, y, sd, solver="exact")
    assert est.X_fit_.shape[0] == X.shape[0]
    y_nan = y.astype(float)
    y_nan[:2] = np.nan
    with pytest.warns(UserWarning, match="2 unlabeled"):
        part = _fit(Est, X, y_nan, sd, solver="exact")
    assert part.X_fit_.shape[0] == X.shape[0] - 2


@pytest.mark.parametrize("solver", ["exact", "nystroem"])
def test_an_all_zero_linear_kernel_warns_at_the_caller_and_predicts_zero(solver):
    X, y, sd = _tasks((12, 10), seed=7)
    Z = np.zeros_like(X)
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        est = MarginalTransferClassifier(solver=solver, kernel_x="linear", kernel_p="indicator",
                                         tau=0.5).fit(Z, y, sd)
    mine = [r for r in rec if "the kernel is zero" in str(r.message)]
    assert len(mine) == 1 and mine[0].category is UserWarning
    assert str(mine[0].message) == (
        "MarginalTransferClassifier: the kernel is zero on every training row (e.g. all-zero "
        "X with kernel_x='linear'), so the model predicts 0 everywhere.")
    assert est.n_iter_ == 0 and est.support_vectors_.shape[0] == 0
    np.testing.assert_array_equal(est.decision_function(X, sd + 10), 0.0)


@pytest.mark.parametrize("Est,solver,default", [
    (MarginalTransferClassifier, "exact", 1e-2), (MarginalTransferRegressor, "exact", 1e-3),
    (MarginalTransferClassifier, "nystroem", 0.1)])
def test_tol_none_is_the_documented_tolerance_of_each_solver(Est, solver, default):
    """tol=None is liblinear's 1e-2 (classifier) / 1e-3 (regressor) on the exact factor and 0.1
    on Nyström features: the same model bit for bit as that tol given, not as the other."""
    X, y, sd = _tasks((40, 30, 25), seed=8, regression="Regressor" in Est.__name__)

    def coef(tol):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            return Est(solver=solver, random_state=0, C=10.0, tol=tol).fit(X, y, sd).dual_coef_

    none = coef(None)
    np.testing.assert_array_equal(none, coef(default))
    assert not np.array_equal(none, coef(0.1 if default != 0.1 else 1e-2))


def _hinge_dual(K, y, c):
    """The no-intercept hinge dual by scipy's L-BFGS-B: ``beta`` with ``f = K beta``."""
    from scipy.optimize import minimize

    def fg(a):
        b = a * y
        Kb = K @ b
        return 0.5 * b @ Kb - a.sum(), y * Kb - 1.0

    a = minimize(fg, np.zeros(y.size), jac=True, method="L-BFGS-B",
                 bounds=[(0.0, ci) for ci in c],
                 options={"ftol": 1e-15, "gtol": 1e-11, "maxiter": 50_000}).x
    return a * y


@pytest.mark.parametrize("kernel_p,kw", [("polynomial", dict(degree_p=3, tau=0.3)),
                                         ("exponential", dict(tau=0.2)),
                                         ("indicator", dict(tau=0.4))])
def test_training_solves_the_dual_of_the_documented_product_kernel(kernel_p, kw):
    """The exact fit reaches the optimum of the no-intercept hinge dual whose kernel is
    k_P(tau, kind, degree, sigma_p) x k_X with the per-task costs (scipy's L-BFGS-B as the
    independent reference): every parameter of k_P reaches the training problem."""
    from shiftlearn.generalization._embedding import (
        exact_embedding_gram,
        product_kernel,
        task_kernel,
    )

    X, y, sd = _tasks((12, 10, 15), seed=9)
    C = 2.0
    est = MarginalTransferClassifier(solver="exact", kernel_p=kernel_p, C=C, tol=1e-8,
                                     max_iter=100_000, random_state=0, **kw).fit(X, y, sd)
    N, M, tau = est.n_tasks_, X.shape[0], kw.get("tau", 0.0)
    t = np.searchsorted(est.domains_, sd)
    if kernel_p == "indicator":
        KP = task_kernel(None, None, None, kind="indicator", tau=tau,
                         same=np.eye(N, dtype=bool))
    else:
        G = exact_embedding_gram(X, t, N, kernel="rbf", sigma=est.sigma_emb_)
        d = np.diag(G).copy()
        KP = task_kernel(G, d, d, kind=kernel_p, sigma=est.sigma_p_,
                         degree=kw.get("degree_p", 2), tau=tau)
    K = product_kernel(X, t, KP, kernel="rbf", sigma=est.sigma_x_)
    n_t = np.bincount(t)[t].astype(float)
    yy = np.where(y == est.classes_[1], 1.0, -1.0)
    beta = _hinge_dual(K, yy, C * M / (N * n_t))
    ids = sd if kernel_p == "indicator" else sd + 10
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)     # "were training tasks"
        got = est.decision_function(X, ids)
    np.testing.assert_allclose(got, K @ beta, atol=2e-4)


def test_marginal_warnings_point_at_the_callers_line():
    """(Deselected in the mutation run: mutmut's trampoline is the caller there.)"""
    est, (X, y, sd) = _indicator_tau_zero()
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        est.decision_function(X[:12])                            # indicator, tau=0, no ids
        MarginalTransferClassifier(solver="exact", kernel_x="linear", kernel_p="indicator",
                                   tau=0.5).fit(np.zeros_like(X), y, sd)  # a zero kernel
    assert len(rec) == 2 and all(r.filename == __file__ for r in rec)



def test_orthogonal_sampling_accepts_a_linear_embedding_kernel():
    # kernel_emb='linear' draws no embedding frequencies (task means), so the rbf kernel_x's
    # orthogonal law is all the random-feature solver draws: accepted, and orthogonal
    est, (X, y, sd) = _fit_q(solver="rf", sampling="orthogonal", kernel_emb="linear",
                             n_features=8)
    assert est.W_ is None
    V = np.vstack([est.V_x_, est.V_p_])             # (d + d) x Q, one joint Gaussian draw
    b = min(V.shape)
    G = V[:, :b].T @ V[:, :b]
    assert np.allclose(G - np.diag(np.diag(G)), 0, atol=1e-9)
    est.decision_function(X, sd)



# ------------------------------------------------------------------ survivors of the mutation run
def test_unlabeled_training_is_refused_in_the_estimators_words():
    X, y, sd = _tasks((6, 6))
    for Est in ESTIMATORS:
        with pytest.raises(ValueError, match=r"\(training tasks must be labeled\)\.$"):
            Est().fit(X, None, sd)


def test_regression_targets_of_minus_one_are_values_not_unlabeled():
    # only NaN is unlabeled in regression: targets in {-1, +1} fit (the classification reading
    # would refuse "-1 beside a single other class")
    X, _, sd = _tasks((10, 10, 10))
    y = np.where(X[:, 0] > X[:, 0].mean(), 1.0, -1.0)
    for Est in (MarginalTransferRegressor, PoolingRegressor):
        est = _fit(Est, X, y, sd)
        assert est.n_tasks_ == 3 and np.all(np.isfinite(est.predict(X, sd + 10)))


@pytest.mark.parametrize("solver", ["exact", "nystroem", "rf"])
@pytest.mark.parametrize("Est", [MarginalTransferClassifier, PoolingRegressor])
def test_memory_refusals_name_the_estimator_and_its_sizes(Est, solver, monkeypatch):
    import shiftlearn._resources as resources

    monkeypatch.setattr(resources, "MEMORY_BUDGET", 1000)        # bytes: every fit is too large
    X, y, sd = _tasks((6, 5, 7), regression="Regressor" in Est.__name__)
    kw = {"n_features": 20, "n_features_emb": 7} if "Marginal" in Est.__name__ else {
        "n_features": 20}
    with pytest.raises(ValueError, match=f"^{Est.__name__} with .*on 18 training rows") as e:
        Est(solver=solver, **kw).fit(X, y, sd)
    if solver == "rf" and "Marginal" in Est.__name__:
        assert "n_features=20 and n_features_emb=7" in str(e.value)


def test_parameter_errors_of_the_rf_solver_come_before_any_input_check():
    X, y, sd = _tasks((6, 6))
    with pytest.raises(ValueError, match="solver='rf' needs the Gaussian kernel on embeddings"):
        MarginalTransferClassifier(solver="rf", kernel_p="polynomial").fit(X, None, sd)
    with pytest.raises(ValueError, match="sampling='orthogonal' applies to the rbf kernel only"):
        MarginalTransferClassifier(solver="rf", kernel_x="laplacian",
                                   sampling="orthogonal").fit(X, None, sd)


def test_auto_solver_checks_the_sampling_of_the_random_features_it_chooses():
    X, y, sd = _tasks((AUTO_RF_MIN_SAMPLES // 2, AUTO_RF_MIN_SAMPLES // 2))
    with pytest.raises(ValueError, match="kernel_x='laplacian' with the random-feature solver."
                                         ".*or solver='nystroem'"):
        MarginalTransferClassifier(kernel_x="laplacian", sampling="orthogonal").fit(X, y, sd)


def test_rf_obstacle_suggests_normalize_p_only_for_the_exponential_kernel():
    X, y, sd = _tasks((6, 6))
    with pytest.raises(ValueError, match="kernel_p='exponential' \\(normalised, the "
                                         "exponential one is the Gaussian: normalize_p=True\\)"):
        MarginalTransferClassifier(solver="rf", kernel_p="exponential").fit(X, y, sd)
    with pytest.raises(ValueError, match="kernel_p='polynomial'") as e:
        MarginalTransferClassifier(solver="rf", kernel_p="polynomial").fit(X, y, sd)
    assert "normalize_p" not in str(e.value)


def _standard_draws(V, kernel):
    """Frequencies times the bandwidth: standard normal (rbf) or standard Cauchy (laplacian)."""
    from scipy import stats

    law = {"rbf": stats.norm, "laplacian": stats.cauchy}[kernel]
    return stats.kstest(V.ravel(), law.cdf).pvalue


@pytest.mark.parametrize("kernel", ["rbf", "laplacian"])
def test_every_frequency_block_follows_its_kernels_law(kernel):
    # V_x of kernel_x (pooling and marginal transfer) and W of kernel_emb: the Laplacian
    # kernel's frequencies are Cauchy, the Gaussian's normal (unit bandwidth: V_x is drawn
    # for x / sigma_x)
    other = "laplacian" if kernel == "rbf" else "rbf"
    pool, _ = _fit_q(PoolingClassifier, solver="rf", kernel_x=kernel, n_features=400)
    assert _standard_draws(pool.V_x_, kernel) > 1e-3 > _standard_draws(pool.V_x_, other)
    est, _ = _fit_q(solver="rf", kernel_x="laplacian", kernel_emb=kernel, n_features=50,
                    n_features_emb=400)
    W = est.W_ * est.sigma_emb_
    assert _standard_draws(W, kernel) > 1e-3 > _standard_draws(W, other)
    assert _standard_draws(est.V_x_, "laplacian") > 1e-3


@pytest.mark.parametrize("kernel", ["rbf", "laplacian"])
def test_frequency_blocks_are_reproducible_and_independent(kernel):
    # one seed per block: the same random_state gives the same blocks, and no block repeats
    # another's draws (a shared seed would make the embedding and the product frequencies
    # the same numbers up to scale)
    kw = dict(solver="rf", kernel_x=kernel, kernel_emb=kernel, n_features=30,
              n_features_emb=30)
    a, _ = _fit_q(**kw)
    b, _ = _fit_q(**kw)
    for name in ("W_", "V_x_", "V_p_"):
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name))
    raw = {"W": a.W_ * a.sigma_emb_, "V_x": a.V_x_, "V_p": a.V_p_}
    names = list(raw)
    for i, p in enumerate(names):
        for q in names[i + 1:]:
            shared = np.intersect1d(np.round(np.abs(raw[p]), 9), np.round(np.abs(raw[q]), 9))
            assert shared.size == 0, (p, q, shared[:3])


def test_a_model_with_one_support_row_still_predicts():
    # a rank-one kernel (linear on one feature, pooling): one Nystroem landmark carries the
    # model exactly, and it predicts as the exact solver does
    rng = np.random.default_rng(0)
    X = rng.normal(size=(12, 1))
    y, sd = 2.0 * X[:, 0], np.repeat([1, 2], 6)
    est = _fit(PoolingRegressor, X, y, sd, kernel_x="linear", solver="nystroem",
               n_landmarks=1, C=100.0)
    assert est.support_vectors_.shape[0] == 1
    pred = est.predict(X, sd + 10)
    assert np.corrcoef(pred, y)[0, 1] > 0.99 and np.abs(pred).max() > 1.0
    tight = dict(kernel_x="linear", C=100.0, tol=1e-8, max_iter=100_000)
    ny = PoolingRegressor(solver="nystroem", n_landmarks=1, **tight).fit(X, y, sd)
    exact = PoolingRegressor(solver="exact", **tight).fit(X, y, sd)
    np.testing.assert_allclose(exact.predict(X, sd + 10), ny.predict(X, sd + 10), atol=1e-5)


def test_nystroem_solver_weights_rows_by_task_and_keeps_one_column_per_class():
    # unequal tasks: the task weighting (1 / n_t) reaches the linear machine
    X, y, sd = _tasks((12, 40), seed=9)
    fits = {w: _fit(MarginalTransferClassifier, X, y, sd, solver="nystroem", weighting=w,
                    random_state=0) for w in ("task", "point")}
    assert not np.allclose(fits["task"].dual_coef_, fits["point"].dual_coef_)
    y3 = np.arange(X.shape[0]) % 3
    est = _fit(MarginalTransferClassifier, X, y3, sd, solver="nystroem", random_state=0)
    assert est.decision_function(X, sd).shape == (X.shape[0], 3)
    assert isinstance(est.n_iter_, int) and est.n_iter_ >= 1


def test_left_out_rows_and_small_test_tasks_are_named_by_the_estimator():
    X, y, sd = _tasks((20, 20), seed=10)
    y = y.astype(float)
    y[0] = np.nan
    with pytest.warns(UserWarning, match=r"^MarginalTransferClassifier trains on the labeled "
                                         r"rows of source domains only"):
        est = MarginalTransferClassifier(solver="exact", random_state=0).fit(X, y, sd)
    with pytest.warns(UserWarning, match=r"^MarginalTransferClassifier: .*fewer than "
                                         r"min_predict_task_size="):
        est.predict(X[:2], np.array([-5, -5]))
