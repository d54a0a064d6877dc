"""SCA: the kernelised scatters against an explicit feature map, the special cases (KPCA, KFD,
uSCA = uDICA), the SCA note's reviewer checklist (§13), errors and robustness."""

from dataclasses import replace

import numpy as np
import pytest
import scipy.linalg
from _tolerances import EPS, dot_atol, kernel_map_atol, leading_pencil_atol, rbf_err, sum_atol
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
        with pytest.raises(ValueError, match=rf"^{Est.__name__}: the centred kernel is zero"):
            Est(n_components=3, eps=eps, eigen_solver=solver).fit(np.ones_like(X), y, sd)


# ------------------------------------------------------------------------- edge cases
# SCA on asymmetric data (issue #23, row 2): unequal domain sizes, unbalanced classes.
#
# With equal domain sizes the centring of the domain-mean embeddings is invisible (the mean of
# the domain means is the grand mean, which the centred kernel sends to 0), so a reference test
# on 60/60 domains cannot see it. These references are built from explicit domain means of the
# centred features (linear kernel), not from ``mmd_matrix``.


def _unequal(sizes=(60, 25), d=4, seed=0, n_classes=3, targets=1):
    """Domains of the given sizes; the last ``targets`` are unlabeled targets (y = -1),
    the others labeled with unbalanced classes."""
    rng = np.random.default_rng(seed)
    X, y, sd = [], [], []
    n_src = len(sizes) - targets
    for i, n in enumerate(sizes):
        X.append(rng.normal(size=(n, d)) + 0.8 * i + rng.normal(size=d))
        if i < n_src:
            y.append(rng.choice(n_classes, size=n, p=np.linspace(1, 3, n_classes) / (
                np.linspace(1, 3, n_classes).sum())))
            sd.append(np.full(n, i + 1))
        else:
            y.append(np.full(n, -1))
            sd.append(np.full(n, -(i + 1)))
    return np.vstack(X), np.concatenate(y), np.concatenate(sd)


def _domain_scatter_primal(X, sd):
    """(1/m) sum_d (mu_d - mu_bar)(mu_d - mu_bar)^T of the centred features (the paper's
    distributional variance with a linear kernel)."""
    Xc = X - X.mean(axis=0)
    ids = np.unique(sd)
    mus = np.array([Xc[sd == i].mean(axis=0) for i in ids])
    dev = mus - mus.mean(axis=0)
    return Xc, dev.T @ dev / len(ids)


@pytest.mark.parametrize("sizes,targets", [((60, 25), 1), ((50, 20, 35), 1), ((40, 15, 22), 0)])
def test_domain_scatter_factor_matches_explicit_means(sizes, targets):
    X, y, sd = _unequal(sizes, targets=targets)
    prob = sca_problem(X @ X.T, y, sd, beta=0.5, delta=1.0, eps=0.0)
    Xc, Sd = _domain_scatter_primal(X, sd)
    ref = Xc @ Sd @ Xc.T                       # K~ L K~ written with explicit features
    assert np.abs(ref).max() > 1e-2            # the domains do differ
    np.testing.assert_allclose(prob.U @ prob.U.T, ref, atol=1e-10 * np.abs(ref).max())


def test_domain_scatter_centring_is_visible_only_with_unequal_sizes():
    """The reason the 60/60 reference missed the bug: without centring the factor is right for
    equal sizes and wrong for 60/25."""
    for sizes, differs in (((30, 30), False), ((30, 12), True)):
        X, y, sd = _unequal(sizes)
        Kc = center_kernel(X @ X.T)
        ids = np.unique(sd)
        E = np.column_stack([(sd == i) / np.sum(sd == i) for i in ids])
        no_centring = (Kc @ E) / np.sqrt(len(ids))
        Xc, Sd = _domain_scatter_primal(X, sd)
        gap = np.abs(no_centring @ no_centring.T - Xc @ Sd @ Xc.T).max()
        assert (gap > 1e-6) == differs


def test_sca_fit_matches_primal_on_unequal_domains_and_unbalanced_classes():
    """The whole estimator (dense and Lanczos paths) against the primal d x d problem."""
    X, y, sd = _unequal((60, 25), d=5, seed=3)
    beta, delta, k = 0.4, 2.0, 3
    Xc, Sd = _domain_scatter_primal(X, sd)
    lab = y >= 0
    ns = lab.sum()
    mus = {c: Xc[lab & (y == c)].mean(axis=0) for c in np.unique(y[lab])}
    mbar = Xc[lab].mean(axis=0)
    Sb = sum((y[lab] == c).sum() * np.outer(m - mbar, m - mbar) for c, m in mus.items()) / ns
    Sw = sum((Xc[lab & (y == c)] - m).T @ (Xc[lab & (y == c)] - m)
             for c, m in mus.items()) / ns
    A = (1 - beta) * Xc.T @ Xc / len(X) + beta * Sb
    M = delta * Sd + Sw + np.eye(X.shape[1])
    w_p = scipy.linalg.eigh(A, M, eigvals_only=True)[::-1][:k]
    for solver in ("dense", "arpack"):
        sca = SCA(n_components=k, beta=beta, delta=delta, kernel="linear", eps=1e-10,
                  whiten=False, eigen_solver=solver).fit(X, y, sd)
        np.testing.assert_allclose(sca.eigenvalues_, w_p, rtol=1e-6)


# ------------------------------------------------------------------ from the mutation run
def test_class_scatter_normalization_none_matches_the_unscaled_primal():
    X, y, sd = _unequal((60, 25), d=5, seed=3)
    beta, delta, k = 0.4, 2.0, 3
    Xc, Sd = _domain_scatter_primal(X, sd)
    lab = y >= 0
    mus = {c: Xc[lab & (y == c)].mean(axis=0) for c in np.unique(y[lab])}
    mbar = Xc[lab].mean(axis=0)
    Sb = sum((y[lab] == c).sum() * np.outer(m - mbar, m - mbar) for c, m in mus.items())
    Sw = sum((Xc[lab & (y == c)] - m).T @ (Xc[lab & (y == c)] - m) for c, m in mus.items())
    A = (1 - beta) * Xc.T @ Xc / len(X) + beta * Sb
    M = delta * Sd + Sw + np.eye(X.shape[1])
    w_p = scipy.linalg.eigh(A, M, eigvals_only=True)[::-1][:k]
    for solver in ("dense", "arpack"):
        sca = SCA(n_components=k, beta=beta, delta=delta, kernel="linear", eps=1e-10,
                  whiten=False, class_scatter_normalization="none",
                  eigen_solver=solver).fit(X, y, sd)
        np.testing.assert_allclose(sca.eigenvalues_, w_p, rtol=1e-6)


def _sca_fit(X, y, sd, **kw):
    return SCA(**kw).fit(X, y, sd)               # no memory: nothing shared


@pytest.mark.parametrize("change", ["X", "y", "sd", "kernel", "bandwidth", "eps",
                                    "class_scatter_normalization", "centering", "supervised"])
def test_the_factorisation_cache_never_mixes_problems(change):
    """Fit A, then B that differs in one input or parameter: B (served with A in the shared
    FitMemory) equals B fitted without memory."""
    from shiftlearn.adaptation import FitMemory

    X, y, sd = _unequal((30, 14), d=3, seed=6)
    kw = dict(n_components=2, beta=0.5, delta=1.0, eigen_solver="arpack")
    X2, y2, sd2, kw2 = X, y, sd, dict(kw)
    if change == "X":
        X2 = X + 0.05
    elif change == "y":                      # another partition (renaming classes is not)
        y2 = y.copy()
        lab = np.flatnonzero(y >= 0)[:8]
        y2[lab] = (y[lab] + 1) % 3
    elif change == "sd":
        sd2 = np.where(sd > 0, 1, -3)
        sd2[:5] = 2
    else:
        kw2[change] = {"kernel": "linear", "bandwidth": 0.7, "eps": 1e-2,
                       "class_scatter_normalization": "none", "centering": "literal",
                       "supervised": False}[change]
        if change == "supervised":
            kw2["beta"] = 0.0
    fresh = _sca_fit(X2, y2, sd2, **kw2)
    mem = FitMemory()
    SCA(**kw, memory=mem).fit(X, y, sd)
    served = SCA(**kw2, memory=mem).fit(X2, y2, sd2)
    np.testing.assert_allclose(served.eigenvalues_, fresh.eigenvalues_, rtol=1e-10)


def test_cache_switch_and_single_domain_and_unsupervised_paths():
    from shiftlearn.adaptation import FitMemory

    X, y, sd = _unequal((30, 14), d=3, seed=7)
    mem = FitMemory(max_bytes=0)                 # a zero budget keeps nothing
    SCA(n_components=2, eigen_solver="arpack", memory=mem).fit(X, y, sd)
    assert len(mem) == 0 and mem.nbytes == 0
    src = sd > 0
    for solver in ("dense", "arpack"):
        # one domain (DG with a single source): no domain scatter
        one = SCA(n_components=2, beta=0.5, eigen_solver=solver).fit(X[src], y[src], sd[src])
        assert one.setting_ == "dg" and np.all(np.isfinite(one.eigenvalues_))
        # labels ignored: no class scatter, no classes
        u = SCA(n_components=2, beta=0.7, supervised=False, eigen_solver=solver).fit(X, y, sd)
        assert u.classes_.shape == (0,) and u.setting_ == "da"
        assert np.all(np.isfinite(u.eigenvalues_))
        # beta = 0 with a single labeled class is allowed
        y1 = np.where(y >= 0, 0, -1)
        SCA(n_components=2, beta=0.0, eigen_solver=solver).fit(X, y1, sd)
    nolab = SCA(n_components=2, beta=0.0).fit(X, None, sd)
    assert nolab.classes_.shape == (0,)


def test_whitening_scales_by_the_eigenvalues():
    X, y, sd = _unequal((40, 20), d=3, seed=8)
    a = SCA(n_components=3, eigen_solver="dense").fit(X, y, sd)
    b = SCA(n_components=3, eigen_solver="dense", whiten=False).fit(X, y, sd)
    np.testing.assert_allclose(a.transform(X), b.transform(X) / np.sqrt(b.eigenvalues_),
                               rtol=1e-8, atol=1e-10)


def _spy_problems(monkeypatch):
    """Record the SCA problems built (their pencils give the round-off bounds)."""
    from shiftlearn.adaptation import _sca

    real, seen = _sca.sca_problem, []

    def spy(*args, **kwargs):
        seen.append(real(*args, **kwargs))
        return seen[-1]
    monkeypatch.setattr(_sca, "sca_problem", spy)
    return seen


def _pencil_atol(prob, w):
    """Round-off bound of the leading eigenvalues ``w`` of SCA's pencil ``(A, M)``."""
    return leading_pencil_atol(prob.A(), prob.M, w)


def test_sca_defaults_solver_switch_and_float64(monkeypatch):
    from shiftlearn.adaptation import uSCA
    from shiftlearn.adaptation._sca import resolve_sca_solver

    assert SCA().get_params() == {
        "n_components": 10, "beta": 0.5, "delta": 1.0, "kernel": "rbf",
        "bandwidth": "median", "eps": 1e-5, "whiten": True, "class_scatter_normalization": "n_s",
        "centering": "first", "supervised": True, "setting": "auto", "eigen_solver": "auto",
        "memory": None}
    assert uSCA().get_params()["whiten"] is True
    assert resolve_sca_solver("auto", 300, 10) == "dense"
    assert resolve_sca_solver("auto", 301, 10) == "arpack"
    assert resolve_sca_solver("auto", 1000, 200) == "arpack"
    assert resolve_sca_solver("auto", 1000, 201) == "dense"
    assert resolve_sca_solver("arpack", 50, 48) == "arpack"
    assert resolve_sca_solver("arpack", 50, 49) == "dense"
    with pytest.raises(ValueError, match="^eigen_solver must be 'auto', 'arpack' or 'dense', "
                                         "got 'svd'"):
        resolve_sca_solver("svd", 50, 3)
    X, y, sd = _unequal((30, 12), d=3, seed=9)
    problems = _spy_problems(monkeypatch)
    a = SCA(n_components=2, eigen_solver="dense").fit(X.astype(np.float32), y, sd)
    b = SCA(n_components=2, eigen_solver="dense").fit(X.astype(np.float32).astype(np.float64),
                                                     y, sd)
    # float32 input is computed in float64: the two fits agree to the pencil's float64
    # round-off (~1e-14 here); a float32 computation is off by ~1e-8, 1e6 times more
    np.testing.assert_allclose(a.eigenvalues_, b.eigenvalues_, rtol=0,
                               atol=_pencil_atol(problems[-1], b.eigenvalues_))
    np.testing.assert_allclose(a.transform(X[:5].astype(np.float32)),
                               b.transform(X[:5].astype(np.float32).astype(np.float64)),
                               rtol=1e-10, atol=1e-12)
    assert SCA(n_components=2, kernel="linear").fit(X, y, sd).sigma_ is None


def test_sca_solve_defaults_and_singular_denominator():
    from shiftlearn.adaptation import sca_solve
    from shiftlearn.kernels import rbf_kernel

    X, y, sd = _unequal((40, 25), d=3, seed=10)
    K = rbf_kernel(X, sigma=1.5)
    prob = sca_problem(K, y, sd, beta=0.5, delta=1.0)
    w, B = sca_solve(prob, 3)                                   # "auto": dense at n = 65
    w2, _ = sca_solve(prob, 3, eigen_solver="dense")
    np.testing.assert_array_equal(w, w2)
    w3, _ = sca_solve(prob, 3, eigen_solver="arpack")           # no factors dict given
    np.testing.assert_allclose(w3, w2, rtol=1e-8)
    # eps = 0 and no labels: M0 = K~ is singular, the Cholesky needs the 1e-10 jitter
    p0 = sca_problem(K, None, sd, beta=0.0, delta=1.0, eps=0.0, supervised=False)
    w0, B0 = sca_solve(p0, 3, eigen_solver="arpack")
    n = K.shape[0]
    Mj = p0.M + 1e-10 * np.trace(p0.M0) / n * np.eye(n)
    ref = scipy.linalg.eigh(p0.A(), Mj, eigvals_only=True)[::-1][:3]
    np.testing.assert_allclose(w0, ref, rtol=1e-9)
    # a zero denominator cannot be factored even with the jitter
    pz = sca_problem(np.ones((6, 6)), None, np.r_[np.ones(3, int), -np.ones(3, int)],
                     beta=0.0, delta=0.0, eps=0.0, supervised=False)
    with pytest.raises(ValueError, match="positive definite"):
        sca_solve(pz, 2, eigen_solver="arpack")


def test_rayleigh_check_is_silent_on_sound_fits():
    import warnings

    X, y, sd = _unequal((40, 20), d=3, seed=11)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        for kw in (dict(beta=0.5), dict(beta=1.0, n_components=2), dict(beta=0.0),
                   dict(kernel="linear", n_components=3)):
            kw.setdefault("n_components", 4)
            SCA(eigen_solver="arpack", **kw).fit(X, y, sd)


# ------------------------------------------------------------------ memory= (FitMemory)
def _spy_k(monkeypatch, module, name, pos):
    """Replace ``module.name`` by a spy recording the argument at position ``pos`` of each
    call (the number of components asked)."""
    real = getattr(module, name)
    seen = []

    def spy(*args, **kwargs):
        seen.append(args[pos] if pos is not None else None)
        return real(*args, **kwargs)
    monkeypatch.setattr(module, name, spy)
    return seen


@pytest.mark.parametrize("Est", ["SCA", "uSCA"])
def test_memory_keeps_problem_factor_and_one_solve_per_setting(monkeypatch, Est):
    """The documented pieces (bandwidth, problem, the Cholesky factor of its delta-free
    denominator, one eigen-solve per (beta, delta) for the most components asked so far) are
    kept and reused: one problem and one factorisation for a grid over beta and delta, and
    every fit equals the same fit without memory."""
    from shiftlearn.adaptation import FitMemory, _sca, uSCA

    cls = SCA if Est == "SCA" else uSCA
    X, y, sd = _unequal((30, 14), d=3, seed=12)
    mem = FitMemory()
    assert cls(memory=mem).get_params()["memory"] is mem
    problems = _spy_k(monkeypatch, _sca, "sca_problem", None)
    solves = _spy_k(monkeypatch, _sca, "sca_solve", 1)
    cholesky = _spy_k(monkeypatch, scipy.linalg, "cholesky", None)
    settings = [(0.5, 1.0, 4), (0.5, 1.0, 2), (0.2, 1.0, 2), (0.2, 3.0, 4)]
    if cls is uSCA:
        settings = [(None, d, k) for _, d, k in settings]
    fits = []
    for beta, delta, k in settings:
        kw = dict(n_components=k, delta=delta, eigen_solver="arpack")
        if beta is not None:
            kw["beta"] = beta
        fits.append((kw, cls(**kw, memory=mem).fit(X, y, sd)))
    assert len(problems) == 1 and len(cholesky) == 1
    distinct = len({(kw.get("beta"), kw["delta"]) for kw, _ in fits})
    assert solves == [4] * distinct                  # (0.2, 1.0, k=2) is solved for k=4
    assert len(mem) == 3 + distinct                  # bandwidth, kernel, problem, the solves
    for kw, served in fits:
        fresh = cls(**kw).fit(X, y, sd)
        np.testing.assert_allclose(served.eigenvalues_, fresh.eigenvalues_, rtol=1e-9)
        np.testing.assert_allclose(np.abs(served.transform(X[:9])),
                                   np.abs(fresh.transform(X[:9])), rtol=1e-6, atol=1e-9)


def test_memory_shares_the_problem_of_unsupervised_sca_whatever_the_labels(monkeypatch):
    from shiftlearn.adaptation import FitMemory

    X, y, sd = _unequal((30, 14), d=3, seed=13)
    y2 = np.where(y >= 0, (y + 1) % 3, -1)
    problems = _spy_problems(monkeypatch)
    mem = FitMemory()
    a = SCA(n_components=2, beta=0.0, supervised=False, memory=mem).fit(X, y, sd)
    b = SCA(n_components=2, beta=0.0, supervised=False, memory=mem).fit(X, y2, sd)
    assert len(problems) == 1                        # labels are ignored: the same problem
    # the same pencil: its round-off bound (a problem built from y2's labels differs by O(1))
    np.testing.assert_allclose(a.eigenvalues_, b.eigenvalues_, rtol=0,
                               atol=_pencil_atol(problems[0], a.eigenvalues_))


@pytest.mark.parametrize("change", ["X", "beta", "delta", "whiten", "n_components"])
def test_memory_serves_each_setting_its_own_solution(change):
    """Fit A then B with one memory, B differing in rows (same bandwidth, same labels) or in
    a solve-level parameter: B equals B fitted without memory."""
    from shiftlearn.adaptation import FitMemory

    X, y, sd = _unequal((30, 14), d=3, seed=14)
    kw = dict(n_components=3, beta=0.5, delta=1.0, bandwidth=1.0, eigen_solver="arpack")
    kw2, X2 = dict(kw), X
    if change == "X":
        X2 = X * np.r_[1.0, 1.5, 1.0]
    else:
        kw2[change] = {"beta": 0.9, "delta": 4.0, "whiten": False, "n_components": 2}[change]
    mem = FitMemory()
    SCA(**kw, memory=mem).fit(X, y, sd)
    served = SCA(**kw2, memory=mem).fit(X2, y, sd)
    fresh = SCA(**kw2).fit(X2, y, sd)
    np.testing.assert_allclose(served.eigenvalues_, fresh.eigenvalues_, rtol=1e-9)
    np.testing.assert_allclose(np.abs(served.transform(X2[:9])), np.abs(fresh.transform(X2[:9])),
                               rtol=1e-6, atol=1e-9)


def test_memory_keeps_nothing_for_a_callable_kernel():
    from shiftlearn.adaptation import FitMemory

    X, y, sd = _unequal((30, 14), d=3, seed=15)
    mem = FitMemory()
    a = SCA(n_components=2, kernel=lambda A, B: A @ B.T, memory=mem).fit(X, y, sd)
    b = SCA(n_components=2, kernel="linear").fit(X, y, sd)
    assert len(mem) == 0
    np.testing.assert_allclose(a.eigenvalues_, b.eigenvalues_, rtol=1e-10)


def test_memory_guard_names_the_fit_and_rfsca(monkeypatch):
    from shiftlearn import _resources

    X, y, sd = _unequal((40, 20), d=3, seed=16)      # n = 60
    monkeypatch.setattr(_resources, "MEMORY_BUDGET", 1000)
    with pytest.raises(ValueError, match=(
            r"^SCA\.fit on 60 rows \(eigen_solver='arpack'\) needs about 0\.0 GiB of memory "
            r"\(4\.6 float64 60 x 60 matrices\) .* Use RFSCA \(random-feature SCA, the same "
            r"problem with random Fourier features\), whose memory")):
        SCA(n_components=2, eigen_solver="arpack").fit(X, y, sd)


def test_clipping_at_beta_one_names_the_estimator():
    from shiftlearn.adaptation._base import ComponentsClippedWarning

    X, y, sd = _unequal((40, 20), d=3, seed=17)      # 3 classes: rank <= 2 at beta = 1
    with pytest.warns(ComponentsClippedWarning, match=(
            r"^SCA: n_components=5 is more than the data allow \(at beta=1 the numerator is "
            r"the between-class scatter, of rank <= n_classes - 1 = 2\); using "
            r"n_components=2")):
        sca = SCA(n_components=5, beta=1.0).fit(X, y, sd)
    assert sca.n_components_ == 2


def _rayleigh_case(w, rq):
    """A one-component problem whose Rayleigh quotient ``b^T A b`` is ``rq`` (a = 1, no P)."""
    from shiftlearn.adaptation import SCAProblem

    prob = SCAProblem(Kc=np.eye(1), a=1.0, beta=0.0, Pf=np.zeros((1, 0)), M0=np.eye(1),
                      U=np.zeros((1, 0)), delta=0.0, n_classes=0)
    return prob, np.ones((1, 1)), np.array([[np.sqrt(rq)]]), np.array([w])


@pytest.mark.parametrize("w,rq,rtol,warns", [
    (2.0, 1.0, 0.5, False),           # |rq - w| = rtol * |w| exactly: accepted
    (2.0, 0.75, 0.5, True),           # beyond it: refused
    (100.0, 100.05, 1e-3, False),     # 5e-4 relative to a large eigenvalue: accepted
    (1e-3, 1e-3 + 2e-6, 1e-3, True),  # 2e-3 relative to a small one: refused
])
def test_rayleigh_check_is_relative_with_its_boundary_accepted(w, rq, rtol, warns):
    import warnings

    from shiftlearn.adaptation._sca import _check_rayleigh

    prob, B, KB, ws = _rayleigh_case(w, rq)
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        _check_rayleigh(prob, B, KB, ws, 1e-5, rtol=rtol)
    assert [issubclass(r.category, RuntimeWarning) for r in rec] == ([True] if warns else [])


def test_memory_solves_for_at_most_what_the_rows_and_classes_allow(monkeypatch):
    """A larger n_components asked on other rows raises the target of later solves, but only
    up to what the problem at hand allows: n - 1 components, n_classes - 1 at beta = 1."""
    from shiftlearn.adaptation import FitMemory, _sca

    X, y, sd = _unequal((30, 14), d=3, seed=18)
    mem = FitMemory()
    SCA(n_components=12, beta=0.5, eigen_solver="dense", memory=mem).fit(X, y, sd)
    small = np.r_[[np.flatnonzero(y == c)[i] for c in range(3) for i in range(2)],
                  np.flatnonzero(y < 0)[:2]]        # 8 rows: 3 classes, 2 target rows
    solves = _spy_k(monkeypatch, _sca, "sca_solve", 1)
    Xs, ys, sds = X[small], y[small], sd[small]
    a = SCA(n_components=3, beta=0.5, eigen_solver="dense", memory=mem).fit(Xs, ys, sds)
    assert solves == [7]                             # n - 1, not 12
    b = SCA(n_components=1, beta=1.0, eigen_solver="dense", memory=mem).fit(Xs, ys, sds)
    assert solves == [7, 2]                          # n_classes - 1, not 7
    for est, kw in ((a, dict(n_components=3, beta=0.5)), (b, dict(n_components=1, beta=1.0))):
        fresh = SCA(**kw, eigen_solver="dense").fit(Xs, ys, sds)
        np.testing.assert_allclose(est.eigenvalues_, fresh.eigenvalues_, rtol=1e-9)


def test_memory_counts_the_factorisation_filled_by_the_solve():
    """The Cholesky factor and L^-1 K~ are added to the kept problem by the solve; the store
    recounts its bytes (at least K~, M0, L and L^-1 K~: four n x n matrices, and the rows'
    kernel, kept for fits on other labels or domains: five)."""
    from shiftlearn.adaptation import FitMemory

    X, y, sd = _unequal((30, 14), d=3, seed=19)
    n = X.shape[0]
    mem = FitMemory()
    SCA(n_components=2, eigen_solver="arpack", memory=mem).fit(X, y, sd)
    assert 5 * n * n * 8 <= mem.nbytes < 6 * n * n * 8


def test_sca_problem_numerator_weight_and_direct_solve_match_the_estimator():
    from shiftlearn.adaptation import sca_solve
    from shiftlearn.kernels import rbf_kernel

    X, y, sd = _unequal((30, 14), d=3, seed=20)
    n = X.shape[0]
    prob = sca_problem(rbf_kernel(X, sigma=1.3), y, sd, beta=0.3, delta=2.0)
    assert prob.a == (1.0 - 0.3) / n
    w, _ = sca_solve(prob, 3, eigen_solver="dense")
    est = SCA(n_components=3, beta=0.3, delta=2.0, bandwidth=1.3, eigen_solver="dense").fit(
        X, y, sd)
    np.testing.assert_allclose(w, est.eigenvalues_, rtol=1e-10)


def test_sca_solve_arpack_settings_are_passed_and_deterministic(monkeypatch):
    from shiftlearn.adaptation import _sca, sca_solve
    from shiftlearn.kernels import rbf_kernel

    X, y, sd = _unequal((30, 14), d=3, seed=21)
    prob = sca_problem(rbf_kernel(X, sigma=1.3), y, sd, beta=0.3, delta=2.0)
    w1, B1 = sca_solve(prob, 3, eigen_solver="arpack")
    w2, B2 = sca_solve(prob, 3, eigen_solver="arpack")
    np.testing.assert_array_equal(B1, B2)           # a fixed start vector: bit for bit
    seen = []
    real = _sca.leading_eigh

    def spy(*args, **kwargs):
        seen.append(kwargs)
        return real(*args, **kwargs)
    monkeypatch.setattr(_sca, "leading_eigh", spy)
    sca_solve(prob, 3, eigen_solver="arpack", random_state=5)
    assert seen == [{"solver": "arpack", "random_state": 5, "owner": "SCA"}]


def test_sca_solve_factors_a_singular_denominator_with_the_stated_jitter():
    """Linear kernel of 2 features, eps = 0, no labels: M0 = K~ has rank 2 of 20, its
    Cholesky factorisation fails, and the solve factors M0 + 1e-10 trace(M0)/n I instead."""
    from shiftlearn.adaptation import sca_solve

    rng = np.random.default_rng(22)
    X = rng.normal(size=(20, 2)) * np.r_[1.0, 0.3]
    sd = np.r_[np.ones(12, int), -np.ones(8, int)]
    X[sd < 0] += 0.7
    p = sca_problem(X @ X.T, None, sd, beta=0.0, delta=1.0, eps=0.0, supervised=False)
    with pytest.raises(np.linalg.LinAlgError):
        scipy.linalg.cholesky(p.M0, lower=True)
    n = X.shape[0]
    jitter = 1e-10 * np.trace(p.M0) / n
    assert 0 < jitter < 1
    w, B = sca_solve(p, 2, eigen_solver="arpack")
    ref = scipy.linalg.eigh(p.A(), p.M + jitter * np.eye(n), eigvals_only=True)[::-1][:2]
    np.testing.assert_allclose(w, ref, rtol=1e-6)
    Mj = p.M + jitter * np.eye(n)
    np.testing.assert_allclose(B.T @ Mj @ B, np.eye(2), atol=1e-6)
