"""SCA: the kernelised scatters against an explicit feature map, the special cases (KPCA, KFD,
uSCA = uDICA), the SCA note's reviewer checklist (§13), errors and robustness."""

from dataclasses import replace

import numpy as np
import pytest
import scipy.linalg
from _tolerances import EPS, dot_atol, kernel_map_atol, rbf_err, sum_atol
from sklearn.decomposition import KernelPCA

from shiftlearn import _resources
from shiftlearn.adaptation import SCA, _base, _sca, sca_problem, sca_solve, uSCA
from shiftlearn.adaptation._base import ComponentsClippedWarning
from shiftlearn.kernels import center_kernel, gamma_from_sigma, mmd_matrix, rbf_kernel


def _da_data(n=60, d=5, seed=0, n_classes=3):
    """Two domains; source rows labeled (n_classes), target rows unlabeled."""
    rng = np.random.default_rng(seed)
    ys = rng.integers(0, n_classes, n)
    yt = rng.integers(0, n_classes, n)
    centers = rng.normal(size=(n_classes, d)) * 2
    Xs = centers[ys] + rng.normal(size=(n, d))
    Xt = centers[yt] + rng.normal(size=(n, d)) + 0.7
    X = np.vstack([Xs, Xt])
    y = np.r_[ys, -np.ones(n, int)]
    sd = np.r_[np.ones(n, int), -2 * np.ones(n, int)]
    return X, y, sd, yt


def _primal(X, y, sd, beta, delta):
    """SCA written with the explicit (linear) feature map: d x d scatter matrices."""
    n = len(X)
    Xc = X - X.mean(axis=0)
    lab = y >= 0
    ns = lab.sum()
    total = Xc.T @ Xc / n
    mus = {c: Xc[lab & (y == c)].mean(axis=0) for c in np.unique(y[lab])}
    mbar = Xc[lab].mean(axis=0)
    Sb = sum((y[lab] == c).sum() * np.outer(m - mbar, m - mbar) for c, m in mus.items()) / ns
    Sw = sum((Xc[lab & (y == c)] - m).T @ (Xc[lab & (y == c)] - m) for c, m in mus.items()) / ns
    Sd = Xc.T @ mmd_matrix(sd, normalization="sca") @ Xc
    A = (1 - beta) * total + beta * Sb
    M = delta * Sd + Sw + np.eye(X.shape[1])
    return Xc, A, M, (total, Sb, Sw, Sd)


@pytest.mark.parametrize("beta,delta", [(0.5, 1.0), (1.0, 0.0), (0.0, 1.0), (0.3, 5.0)])
def test_kernel_scatters_match_explicit_feature_map(beta, delta):
    """Checklist 1, 2, 8 and KFD (beta=1, delta=0): with a linear kernel the dual eigenproblem
    has the eigenvalues of the primal scatter problem and the same embedding."""
    X, y, sd, _ = _da_data()
    k = 2
    sca = SCA(n_components=k, beta=beta, delta=delta, kernel="linear", eps=1e-10,
              whiten=False, eigen_solver="dense").fit(X, y, sd)
    Xc, A, M, _ = _primal(X, y, sd, beta, delta)
    w_p, W_p = scipy.linalg.eigh(A, M)
    w_p, W_p = w_p[::-1][:k], W_p[:, ::-1][:, :k]
    np.testing.assert_allclose(sca.eigenvalues_, w_p, rtol=1e-6)
    Z = sca.transform(X)                             # K~ B (whiten=False)
    Zp = Xc @ W_p
    np.testing.assert_allclose(np.abs(Z), np.abs(Zp), rtol=1e-5, atol=1e-7)
    # W^T W = B^T K~ B  and the constraint B^T M B = I
    B = sca.dual_coef_
    Kc = center_kernel(X @ X.T)
    W = Xc.T @ B
    np.testing.assert_allclose(W.T @ W, B.T @ Kc @ B, atol=1e-8)


def test_total_is_between_plus_within_and_rank_of_P():
    """Checklist 4 and 5: DG with every row labeled, K~K~/n = P + Q; rank(P) = C - 1."""
    rng = np.random.default_rng(1)
    X = rng.normal(size=(45, 3))
    y = np.repeat([0, 1, 2], 15)
    sd = np.tile([1, 2, 3], 15)
    K = rbf_kernel(X, sigma=1.5)
    prob = sca_problem(K, y, sd, beta=0.5, delta=0.0, eps=0.0)
    Q = prob.M - prob.Kc
    P = prob.Pf @ prob.Pf.T
    # the same n x n products summed in other orders (K~ K~ against the class-mean factor
    # and M - K~): gamma_n |K~| |K~| / n, plus the subtraction's eps |M|; a wrong 1/n_s or
    # centring moves entries by ~1e-2
    atol = dot_atol(prob.Kc, prob.Kc, c=8) / len(X) + 4 * EPS * np.max(np.abs(prob.M))
    np.testing.assert_allclose(prob.Kc @ prob.Kc / len(X), P + Q, atol=atol)
    assert prob.Pf.shape[1] == 2
    # at beta = 1 at most C - 1 components: more are lowered to C - 1, with a warning
    two = SCA(n_components=2, beta=1.0).fit(X, y, sd)
    with pytest.warns(ComponentsClippedWarning, match=r"n_classes - 1 = 2\); using "
                      r"n_components=2"):
        three = SCA(n_components=3, beta=1.0).fit(X, y, sd)
    assert three.n_components_ == 2
    np.testing.assert_allclose(three.transform(X), two.transform(X), atol=1e-10)


def test_domain_scatter_is_quarter_mmd():
    """Checklist 3: L 1 = 0; for two domains L = L_tca / 4 and Tr(K~ L) = MMD^2 / 4."""
    X, _, sd, _ = _da_data(n=20)
    L = mmd_matrix(sd, normalization="sca")
    # row sums: c n eps sum|L_i|; L_tca / 4 is an exact division, so the two formulas agree
    # to a few roundings of each entry (a factor 1/2 instead of 1/4 is off by |L|)
    np.testing.assert_allclose(L @ np.ones(len(X)), 0, atol=sum_atol(L, axis=1))
    np.testing.assert_allclose(L, mmd_matrix(sd, normalization="tca") / 4, rtol=4 * EPS)


def test_kpca_special_case():
    """Checklist 6: beta = delta = 0, no labels -> n * lambda = KPCA eigenvalues, same axes."""
    X, _, _, _ = _da_data(n=40)
    sigma = 3.0
    sca = SCA(n_components=3, beta=0.0, delta=0.0, bandwidth=sigma, eps=1e-12,
              eigen_solver="dense").fit(X)
    kpca = KernelPCA(n_components=3, kernel="rbf", gamma=gamma_from_sigma(sigma)).fit(X)
    np.testing.assert_allclose(len(X) * sca.eigenvalues_, kpca.eigenvalues_, rtol=1e-6)
    Z, Zk = sca.transform(X), kpca.transform(X)
    for j in range(3):
        assert abs(np.corrcoef(Z[:, j], Zk[:, j])[0, 1]) > 1 - 1e-8


def test_usca_is_udica():
    """Checklist 7: uSCA(delta=1, eps=lam) has uDICA's eigenvectors, eigenvalues / n."""
    X, y, sd, _ = _da_data(n=30)
    lam = 1e-3
    sigma = 2.5
    usca = uSCA(n_components=3, delta=1.0, eps=lam, bandwidth=sigma,
                eigen_solver="dense").fit(X, y, sd)
    Kc = center_kernel(rbf_kernel(X, sigma=sigma))
    L = mmd_matrix(sd, normalization="sca")
    n = len(X)
    w, V = scipy.linalg.eigh(Kc @ Kc, Kc @ L @ Kc + Kc + lam * np.eye(n))
    np.testing.assert_allclose(usca.eigenvalues_, w[::-1][:3] / n, rtol=1e-6)
    np.testing.assert_allclose(np.abs(usca.dual_coef_), np.abs(V[:, ::-1][:, :3]), atol=1e-6)
    # uSCA ignores labels entirely
    y2 = np.where(y >= 0, (y + 1) % 3, -1)
    np.testing.assert_allclose(usca.eigenvalues_,
                               uSCA(n_components=3, eps=lam, bandwidth=sigma,
                                    eigen_solver="dense").fit(X, y2, sd).eigenvalues_)


def test_linear_usca_equals_tca_up_to_component_scale_when_domain_means_agree():
    """With two domains whose means coincide (each domain z-scored, as Office+Caltech's recipe
    does), the linear kernel's domain term ``K l = X (mean_s - mean_t)`` vanishes: TCA and uSCA
    both become kernel PCA, whatever mu and delta, and differ only in the scale of component i
    (TCA ``lambda_i u_i``, uSCA with ``whiten=False`` ``sqrt(lambda_i) u_i``).
    ``benchmarks/adaptation/subspace_usca_vs_tca.py`` shows the same on the 12 Office tasks."""
    from shiftlearn.adaptation import TCA

    X, y, sd, _ = _da_data(n=50, d=6)
    for dom in (sd > 0, sd < 0):
        X[dom] -= X[dom].mean(axis=0)
    Zt = TCA(n_components=3, kernel="linear", mu=5.0).fit(X, y, sd).transform(X)
    u = uSCA(n_components=3, kernel="linear", delta=0.3, whiten=False).fit(X, y, sd)
    Zu = u.transform(X) * np.sqrt(len(X) * u.eigenvalues_)
    np.testing.assert_allclose(np.abs(Zt), np.abs(Zu), rtol=1e-5, atol=1e-6)
    # a mean shift between the domains breaks it: the domain term is no longer zero
    X[sd < 0] += 3.0
    Zt = TCA(n_components=3, kernel="linear", mu=5.0).fit(X, y, sd).transform(X)
    u = uSCA(n_components=3, kernel="linear", delta=0.3, whiten=False).fit(X, y, sd)
    Zu = u.transform(X) * np.sqrt(len(X) * u.eigenvalues_)
    assert not np.allclose(np.abs(Zt), np.abs(Zu), rtol=1e-3)


def test_singular_denominator_warns_instead_of_returning_a_spurious_component():
    """A linear kernel of rank 6 on 100 rows with eps = 1e-12: the denominator is singular to
    working precision and the solver returns a component with lambda > 0 but a zero embedding;
    the Rayleigh-quotient check names it. The default eps gives the KPCA components, silently."""
    X, y, sd, _ = _da_data(n=50, d=6)
    with pytest.warns(RuntimeWarning, match="numerically unreliable.*Increase eps"):
        uSCA(n_components=3, kernel="linear", whiten=False, eps=1e-12).fit(X, y, sd)
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        Z = uSCA(n_components=3, kernel="linear", whiten=False).fit(X, y, sd).transform(X)
    assert np.all(np.linalg.norm(Z, axis=0) > 1.0)


def test_constraint_centering_and_test_translation():
    """Checklist 8, 9: B^T M B = I; center-first gives B^T 1 = 0 so uncentred test kernels only
    translate the embedding; the literal order does not."""
    X, y, sd, _ = _da_data(n=40)
    sca = SCA(n_components=3, beta=0.4, bandwidth=2.0, eigen_solver="dense").fit(X, y, sd)
    prob = sca_problem(rbf_kernel(X, sigma=2.0), y, sd, beta=0.4, delta=1.0)
    B = sca.dual_coef_
    np.testing.assert_allclose(B.T @ prob.M @ B, np.eye(3), atol=1e-8)
    np.testing.assert_allclose(B.T @ np.ones(len(X)), 0, atol=1e-8)
    Zc = sca.transform(X)
    Zu = rbf_kernel(X, sca.X_fit_, sigma=2.0) @ sca._proj
    diff = Zu - Zc
    np.testing.assert_allclose(diff, np.broadcast_to(diff[0], diff.shape), atol=1e-8)
    lit = SCA(n_components=3, beta=0.4, bandwidth=2.0, centering="literal",
              eigen_solver="dense").fit(X, y, sd)
    assert np.abs(lit.dual_coef_.T @ np.ones(len(X))).max() > 1e-6


@pytest.mark.parametrize("beta", [0.0, 0.5, 1.0])
def test_solvers_agree(beta):
    X, y, sd, _ = _da_data(n=200, d=4)
    k = 2
    a = SCA(n_components=k, beta=beta, eigen_solver="dense").fit(X, y, sd)
    b = SCA(n_components=k, beta=beta, eigen_solver="arpack").fit(X, y, sd)
    np.testing.assert_allclose(a.eigenvalues_, b.eigenvalues_, rtol=1e-7)
    np.testing.assert_allclose(np.abs(a.transform(X)), np.abs(b.transform(X)), atol=1e-6)
    np.testing.assert_allclose(b.fit_transform(X, y, sd), b.transform(X), atol=1e-8)


def test_truncate_is_exact():
    X, y, sd, _ = _da_data(n=50)
    big = SCA(n_components=6, beta=0.3, eigen_solver="dense").fit(X, y, sd)
    small = SCA(n_components=2, beta=0.3, eigen_solver="dense").fit(X, y, sd)
    np.testing.assert_allclose(np.abs(big.truncate(2).transform(X)),
                               np.abs(small.transform(X)), atol=1e-8)


def test_direct_problem_helpers():
    X, y, sd, _ = _da_data(n=30)
    prob = sca_problem(rbf_kernel(X, sigma=2.0), y, sd, beta=0.2, delta=1.0)
    w, B = sca_solve(prob, 2, eigen_solver="dense")
    np.testing.assert_allclose(prob.A() @ B, prob.M @ B * w, atol=1e-9)


def test_errors():
    X, y, sd, _ = _da_data(n=20)
    with pytest.raises(ValueError, match="at least 2 classes"):
        SCA(n_components=2).fit(X, np.where(y >= 0, 0, -1), sd)
    with pytest.raises(ValueError, match="No target rows"):
        SCA(n_components=2, setting="da").fit(X[sd > 0], y[sd > 0], sd[sd > 0])
    with pytest.raises(ValueError, match="must not see target rows"):
        SCA(n_components=2, setting="dg").fit(X, y, sd)
    with pytest.raises(ValueError, match="'beta' parameter of SCA must be a float in the "
                       r"range \[0.0, 1.0\]"):
        SCA(beta=1.5).fit(X, y, sd)
    with pytest.raises(ValueError, match="'centering' parameter of SCA"):
        SCA(n_components=2, centering="later").fit(X, y, sd)
    with pytest.raises(ValueError, match="'delta' parameter of uSCA"):
        uSCA(delta=-1.0).fit(X, y, sd)
    with pytest.raises(ValueError, match="'whiten' parameter"):
        SCA(whiten="yes").fit(X, y, sd)
    with pytest.raises(ValueError):              # an empty training set
        SCA(n_components=2).fit(X[:0], y[:0], sd[:0])
    with pytest.raises(ValueError, match="n_samples=1"):
        SCA(n_components=1, beta=0.0).fit(X[:1], y[:1], sd[:1])


def test_robust_to_duplicates_constant_features_float32():
    X, y, sd, _ = _da_data(n=40)
    X = np.hstack([X, np.full((len(X), 1), 3.0)])
    X = np.vstack([X, X[:15]])
    y, sd = np.r_[y, y[:15]], np.r_[sd, sd[:15]]
    Z = SCA(n_components=3).fit_transform(X, y, sd)
    Z32 = SCA(n_components=3).fit_transform(X.astype(np.float32), y, sd)
    assert np.all(np.isfinite(Z))
    np.testing.assert_allclose(np.abs(Z32), np.abs(Z), rtol=1e-3, atol=1e-3)


@pytest.mark.parametrize("Est", [SCA, uSCA])
def test_default_n_components_is_clipped_on_small_data(Est):
    X, y, sd, _ = _da_data(n=4)
    with pytest.warns(ComponentsClippedWarning, match=f"{Est.__name__}: n_components=10 .* "
                      r"rank <= 7\); using n_components=7"):
        est = Est().fit(X, y, sd)
    assert est.n_components_ == 7 and est.transform(X).shape == (8, 7)
    with pytest.raises(ValueError, match="n_components=8 is too large"):
        est.truncate(8)


def test_exact_sca_beyond_the_memory_budget_is_refused_up_front(monkeypatch):
    monkeypatch.setattr(_resources, "MEMORY_BUDGET", 32 << 30)
    X = np.random.default_rng(0).normal(size=(70_000, 2))
    y = np.r_[np.arange(35_000) % 2, -np.ones(35_000, int)]
    sd = np.r_[np.ones(35_000, int), -np.ones(35_000, int)]
    with pytest.raises(ValueError, match=r"SCA.fit .* needs about 1\d\d\.\d GiB .* Use RFSCA"):
        SCA().fit(X, y, sd)


@pytest.mark.parametrize("solver", ["arpack", "dense"])
def test_memory_estimate_bounds_the_measured_peak(solver):
    """FIT_MATRICES (the guard's n x n count) is at least what numpy really allocates."""
    import tracemalloc

    X, y, sd, _ = _da_data(n=300)
    n = len(X)
    tracemalloc.start()
    SCA(n_components=5, bandwidth=2.0, eigen_solver=solver).fit(X, y, sd)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert 0.5 * _sca.FIT_MATRICES[solver] <= peak / (n * n * 8) <= _sca.FIT_MATRICES[solver]


def test_transform_in_row_blocks_equals_one_block(monkeypatch):
    X, y, sd, _ = _da_data(n=30)
    sca = SCA(n_components=3).fit(X, y, sd)
    whole = sca.transform(X)
    monkeypatch.setattr(_base, "KERNEL_CHUNK_BYTES", 8 * 60 * 3 * 7)     # 7 rows per block
    # blocks change the BLAS calls that form the kernel rows and their product with the
    # coefficients: the kernel's round-off through |coef| plus the product's (~4e-13 against
    # entries ~4; a row of one block paired with another's kernel row is off by O(1))
    Kt = rbf_kernel(X, sca.X_fit_, sigma=sca.sigma_)
    atol = kernel_map_atol(rbf_err(X, sca.X_fit_, sca.sigma_), Kt, sca.dual_coef_)
    np.testing.assert_allclose(sca.transform(X), whole, rtol=0, atol=atol)


def test_sca_toy_far_above_raw():
    """The SCA paper's 2-D toy (its figure uses target-tuned hyper-parameters; these are the
    values our target-tuned search picks): SCA's target 1NN far above raw."""
    from sklearn.neighbors import KNeighborsClassifier

    from shiftlearn.datasets import make_sca_toy

    X, y, sd, yt = make_sca_toy(n_per_cluster=60, random_state=3, return_target_labels=True)
    src = sd > 0
    raw = KNeighborsClassifier(1).fit(X[src], y[src]).score(X[~src], yt)
    Z = SCA(n_components=1, beta=0.5, delta=10.0, kernel="linear").fit_transform(X, y, sd)
    acc = KNeighborsClassifier(1).fit(Z[src], y[src]).score(Z[~src], yt)
    assert raw < 0.45 and acc > raw + 0.3


@pytest.mark.parametrize("setting", ["da", "dg"])
@pytest.mark.parametrize("beta", [0.0, 0.5, 1.0])
def test_delta_grid_shares_one_factorisation_and_matches_dense(setting, beta):
    """M = M0 + delta U U^T: every delta reuses the Cholesky of M0 (closed-form S^{-1/2}) and
    gives the dense generalized eigenpairs, with B^T M B = I."""
    X, y, sd, _ = _da_data(n=200)
    if setting == "dg":        # three labeled source domains, no target
        y = np.r_[y[:200], np.random.default_rng(1).integers(0, 3, 200)]
        sd = np.r_[np.ones(100, int), 2 * np.ones(100, int), 3 * np.ones(200, int)]
    K = rbf_kernel(X, sigma=2.0)
    k = 2 if beta == 1.0 else 5
    prob = sca_problem(K, y, sd, beta=beta, delta=1.0)
    assert prob.U.shape[1] == (3 if setting == "dg" else 2)
    factors = {}
    for delta in (0.0, 0.1, 1.0, 10.0, 100.0):
        p = replace(prob, delta=delta)
        w, B = sca_solve(p, k, eigen_solver="arpack", factors=factors)
        if delta == 0.0:
            chol = factors["Lc"]
        assert factors["Lc"] is chol                      # never refactorised
        w_d, B_d = sca_solve(p, k, eigen_solver="dense")
        np.testing.assert_allclose(w, w_d, rtol=1e-7, atol=1e-12)
        np.testing.assert_allclose(B.T @ p.M @ B, np.eye(k), atol=1e-7)
        corr = np.abs(np.sum(B * B_d, axis=0)) / (np.linalg.norm(B, axis=0)
                                                  * np.linalg.norm(B_d, axis=0))
        np.testing.assert_allclose(corr, 1.0, atol=1e-6)


@pytest.mark.parametrize("Est", [SCA, uSCA])
@pytest.mark.parametrize("solver", ["arpack", "dense"])
def test_degenerate_input_is_a_clear_value_error(Est, solver):
    """Constant rows: an ArpackError before (ARPACK), NaN features with eps = 0 (dense)."""
    X, y, sd, _ = _da_data(n=200)
    for eps in (1e-5, 0.0):
        with pytest.raises(ValueError, match="centred kernel is zero"):
            Est(n_components=3, eps=eps, eigen_solver=solver).fit(np.ones_like(X), y, sd)
