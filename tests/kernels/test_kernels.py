"""The kernel toolkit: kernels, bandwidths, centering, random features, Nyström and MMD."""

import hashlib

import numpy as np
import pytest
from _tolerances import EPS, dot_atol, mean_atol, mmd_atol, rbf_err, rff_err, sum_atol

from shiftlearn.kernels import (
    RandomFourierFeatures,
    center_kernel,
    center_test_kernel,
    domain_mean_matrix,
    gamma_from_sigma,
    kernel_centering_stats,
    kernel_matrix,
    median_heuristic,
    mmd2,
    mmd2_from_kernels,
    mmd2_rff,
    mmd_matrix,
    mmd_permutation_test,
    mmd_vector,
    nystroem,
    omega_fingerprint,
    parse_bandwidth,
    rbf_kernel,
    resolve_bandwidth,
    rff_chunks,
    rff_map,
    rff_mean,
    rff_weights,
    sigma_from_gamma,
    sigma_from_sq_distances,
)


def _data(n=40, d=3, seed=0, shift=0.0):
    return np.random.default_rng(seed).normal(size=(n, d)) + shift


def _brute_rbf(X, Y, sigma):
    K = np.empty((X.shape[0], Y.shape[0]))
    for i in range(X.shape[0]):
        for j in range(Y.shape[0]):
            K[i, j] = np.exp(-np.sum((X[i] - Y[j]) ** 2) / (2 * sigma**2))
    return K


# ------------------------------------------------------------------- kernels, bandwidths ------
def test_rbf_kernel_equals_brute_force():
    X, Y = _data(15), _data(9, seed=1)
    # ||x||^2 + ||y||^2 - 2 x.y cancels where the brute force does not: rbf_err (~1e-15 here;
    # a factor 2 lost in 2 sigma^2 moves entries by ~0.1)
    np.testing.assert_allclose(rbf_kernel(X, Y, sigma=1.3), _brute_rbf(X, Y, 1.3), rtol=0,
                               atol=np.max(rbf_err(X, Y, 1.3)))
    K = rbf_kernel(X, sigma=0.7)
    np.testing.assert_allclose(K, _brute_rbf(X, X, 0.7), rtol=0,
                               atol=np.max(rbf_err(X, X, 0.7)))
    np.testing.assert_allclose(np.diag(K), 1.0)


def test_gamma_sigma_round_trip_matches_sklearn():
    from sklearn.metrics.pairwise import rbf_kernel as sk_rbf

    X = _data(10)
    assert gamma_from_sigma(2.0) == pytest.approx(1 / 8)
    assert sigma_from_gamma(gamma_from_sigma(0.37)) == pytest.approx(0.37)
    np.testing.assert_allclose(rbf_kernel(X, sigma=1.5), sk_rbf(X, gamma=gamma_from_sigma(1.5)))


def test_median_heuristic_variants_as_documented():
    X = _data(30, d=4)
    n = X.shape[0]
    d2 = np.array([np.sum((X[i] - X[j]) ** 2) for i in range(n) for j in range(i + 1, n)])
    m = np.median(d2)
    s_med = median_heuristic(X, rule="median")
    s_sq = median_heuristic(X, rule="median_sq")
    assert s_med**2 == pytest.approx(m)                      # sigma^2 = median d^2
    assert 2 * s_sq**2 == pytest.approx(m)                    # 2 sigma^2 = median d^2
    assert gamma_from_sigma(s_sq) == pytest.approx(2 * gamma_from_sigma(s_med))
    assert median_heuristic(X, rule="mean") == pytest.approx(np.mean(np.sqrt(d2)))
    assert gamma_from_sigma(median_heuristic(X, rule="n_features")) == pytest.approx(1 / 4)
    with pytest.raises(ValueError, match="Unknown bandwidth rule"):
        median_heuristic(X, rule="silverman")
    with pytest.raises(ValueError, match="at least 2 rows"):
        median_heuristic(X[:1])
    assert median_heuristic(np.zeros((5, 2))) == 1.0  # all points equal: unit fallback


def test_median_heuristic_subsample_is_seeded():
    X = _data(300, d=2)
    a = median_heuristic(X, max_samples=50, random_state=3)
    assert a == median_heuristic(X, max_samples=50, random_state=3)
    assert a != median_heuristic(X, max_samples=50, random_state=4)
    assert abs(a - median_heuristic(X)) / median_heuristic(X) < 0.2


def test_resolve_bandwidth():
    X = _data(20)
    assert resolve_bandwidth(2.5, X) == 2.5
    assert resolve_bandwidth("median", X) == median_heuristic(X)
    for bad in (0.0, -1.0, np.inf, True, None, [1.0]):
        with pytest.raises(ValueError, match="bandwidth"):
            resolve_bandwidth(bad, X)


def test_one_parser_for_every_bandwidth_spec():
    assert parse_bandwidth(0.3) == (0.3, None)
    assert parse_bandwidth("mean") == (1.0, "mean")
    assert parse_bandwidth(" 0.5 * median_sq ") == (0.5, "median_sq")
    for bad in ("silverman", "0*median", "-1*median", "inf*median", "x*median", "2*", 0, True,
                np.nan, None):
        with pytest.raises(ValueError, match="^gamma must be a positive float, a rule among"):
            parse_bandwidth(bad, name="gamma")
    X = _data(20)
    for rule in ("median", "median_sq", "mean", "n_features"):      # the same product
        assert resolve_bandwidth(f"0.5*{rule}", X, kernel="laplacian") == \
            0.5 * median_heuristic(X, rule=rule, kernel="laplacian")
    assert resolve_bandwidth("3*median", None, rule_value=lambda rule: 2.0) == 6.0
    for value in (1e-200, 1e200):       # its square is not representable: refused by its name
        with pytest.raises(ValueError, match=r"^bandwidth_x=.* outside \[1e-150, 1e\+150\]"):
            resolve_bandwidth(value, X, name="bandwidth_x")
    rff = RandomFourierFeatures(n_features=10, bandwidth="2*median", random_state=0).fit(X)
    assert rff.sigma_ == 2 * median_heuristic(X)


def test_kernel_matrix_dispatch():
    X = _data(8)
    np.testing.assert_allclose(kernel_matrix(X, kernel="linear"), X @ X.T)
    np.testing.assert_allclose(kernel_matrix(X, kernel=lambda A, B: A @ B.T + 1), X @ X.T + 1)
    with pytest.raises(ValueError, match="needs sigma"):
        kernel_matrix(X)
    with pytest.raises(ValueError, match="Unknown kernel"):
        kernel_matrix(X, kernel="poly")


# ------------------------------------------------------------------------------ centering ------
def test_center_kernel_equals_HKH():
    X = _data(12)
    K = rbf_kernel(X, sigma=1.0)
    H = np.eye(12) - np.ones((12, 12)) / 12
    # H K H against means subtracted: gamma_2n |H| |K| |H| (a mean left out is off by ~0.3)
    atol = dot_atol(np.abs(H) @ np.abs(K), H, c=8)
    np.testing.assert_allclose(center_kernel(K), H @ K @ H, rtol=0, atol=atol)
    # column sums of the centred kernel: their own round-off plus n entries' error each
    Kc = center_kernel(K)
    np.testing.assert_allclose(Kc.sum(axis=0), 0, atol=sum_atol(Kc, axis=0) + 12 * atol)


def test_center_test_kernel_explicit_formula_and_feature_space():
    X, T = _data(10), _data(6, seed=2)
    K, Kt = rbf_kernel(X, sigma=1.2), rbf_kernel(T, X, sigma=1.2)
    n, m = 10, 6
    one_mn, one_nn = np.ones((m, n)) / n, np.ones((n, n)) / n
    explicit = Kt - one_mn @ K - Kt @ one_nn + one_mn @ K @ one_nn
    col, grand = kernel_centering_stats(K)
    # four terms, each a mean over n rows or columns: c n eps max|K| apiece (a row mean
    # instead of a column mean is off by ~0.1)
    atol = 4 * 4 * n * EPS * max(np.max(np.abs(K)), np.max(np.abs(Kt)))
    np.testing.assert_allclose(center_test_kernel(Kt, col, grand), explicit, rtol=0, atol=atol)
    # with a linear kernel, centering = subtracting the training mean from both sides
    KL, KLt = X @ X.T, T @ X.T
    col, grand = kernel_centering_stats(KL)
    mu = X.mean(axis=0)
    np.testing.assert_allclose(center_test_kernel(KLt, col, grand), (T - mu) @ (X - mu).T,
                               atol=1e-10)
    # and the training rows, centered as "test" rows, give the centered training kernel
    np.testing.assert_allclose(center_test_kernel(K, *kernel_centering_stats(K)),
                               center_kernel(K), rtol=0,
                               atol=4 * 4 * len(K) * EPS * np.max(np.abs(K)))


# --------------------------------------------------------------------- random features ------
def test_rff_weights_reproducible_from_seed():
    W1 = rff_weights(5, 30, sigma=2.0, random_state=7)
    W2 = rff_weights(5, 30, sigma=2.0, random_state=7)
    np.testing.assert_array_equal(W1, W2)
    # the documented recipe, bit for bit
    np.testing.assert_array_equal(W1, np.random.default_rng(7).standard_normal((5, 30)) / 2.0)
    assert not np.array_equal(W1, rff_weights(5, 30, sigma=2.0, random_state=8))
    assert rff_weights(5, 3, 1.0, 0, dtype=np.float32).dtype == np.float32
    with pytest.raises(ValueError, match="n_features"):
        rff_weights(5, 0, 1.0)
    with pytest.raises(ValueError, match="sigma"):
        rff_weights(5, 3, 0.0)


def test_omega_fingerprint_identifies_the_frequencies():
    W = rff_weights(5, 30, sigma=2.0, random_state=7)
    fp = omega_fingerprint(W)
    # the definition: 16 hex digits of SHA-1 over the C-ordered float64 bytes
    assert fp == hashlib.sha1(np.ascontiguousarray(W).tobytes()).hexdigest()[:16]
    # the values decide, not the memory layout or the dtype they arrive in
    assert omega_fingerprint(np.asfortranarray(W)) == fp == omega_fingerprint(W.copy())
    W32 = W.astype(np.float32)
    assert omega_fingerprint(W32) == omega_fingerprint(W32.astype(np.float64))
    # another draw or one changed entry: another fingerprint
    assert omega_fingerprint(rff_weights(5, 30, sigma=2.0, random_state=8)) != fp
    W[4, 29] = np.nextafter(W[4, 29], np.inf)
    assert omega_fingerprint(W) != fp


def test_rff_map_definition():
    X = _data(7)
    W = rff_weights(3, 11, 1.0, 0)
    Z = rff_map(X, W)
    assert Z.shape == (7, 22)
    np.testing.assert_allclose(Z[:, :11], np.cos(X @ W) / np.sqrt(11))
    np.testing.assert_allclose(Z[:, 11:], np.sin(X @ W) / np.sqrt(11))
    np.testing.assert_allclose(np.sum(Z**2, axis=1), 1.0)  # z(x).z(x) = k(x, x) = 1 exactly


def _rff_errors(N, seed, X, K):
    Z = rff_map(X, rff_weights(X.shape[1], N, 1.5, seed))
    E = Z @ Z.T - K
    return np.abs(E).max(), np.linalg.norm(E) / X.shape[0]


def test_rff_error_falls_like_inverse_sqrt_n_features():
    X = _data(80, d=4, seed=11)
    K = rbf_kernel(X, sigma=1.5)
    sizes = np.array([16, 64, 256, 1024])
    seeds = range(6)
    errs = np.array([[_rff_errors(N, s, X, K) for s in seeds] for N in sizes]).mean(axis=1)
    for col, name in ((0, "max"), (1, "frobenius")):
        slope = np.polyfit(np.log(sizes), np.log(errs[:, col]), 1)[0]
        assert -0.62 < slope < -0.38, f"{name} error slope {slope:.3f}, expected about -0.5"
    assert errs[-1, 0] < 0.12  # and it approximates K: max error at N = 1024


def test_orthogonal_rff_weights_blocks_lengths_and_seed():
    d, N, sigma = 6, 20, 2.0
    W = rff_weights(d, N, sigma, random_state=3, sampling="orthogonal")
    assert W.shape == (d, N)
    np.testing.assert_array_equal(W, rff_weights(d, N, sigma, 3, sampling="orthogonal"))
    assert not np.array_equal(W, rff_weights(d, N, sigma, 4, sampling="orthogonal"))
    for start in range(0, N, d):                  # blocks of <= d exactly orthogonal columns
        B = W[:, start:start + d] * sigma
        G = B.T @ B
        # Householder QR's columns are orthogonal to c d^2 eps of their lengths, and the Gram
        # product adds gamma_d |B|^T |B| (Gaussian columns, not orthogonalised, have
        # off-diagonal ~ sqrt(d))
        atol = dot_atol(B.T, B) + 4 * d**2 * EPS * np.max(np.sum(B * B, axis=0))
        np.testing.assert_allclose(G - np.diag(np.diag(G)), 0, atol=atol)
    # column lengths chi(d) / sigma, like Gaussian columns: E ||w||^2 = d / sigma^2
    big = rff_weights(d, 60000, sigma, 0, sampling="orthogonal")
    assert np.mean(np.sum(big ** 2, axis=0)) == pytest.approx(d / sigma ** 2, rel=0.02)
    with pytest.raises(ValueError, match="sampling"):
        rff_weights(d, N, sigma, sampling="sobol")


def test_orthogonal_features_estimate_the_kernel_with_less_error():
    """Orthogonal random features (Yu et al. 2016): same kernel, smaller error at N ~ d
    (bandwidth near the median distance, sqrt(2 d) = 5.7 here; measured ratio 0.57)."""
    X = _data(120, d=16, seed=5)
    K = rbf_kernel(X, sigma=4.0)

    def err(sampling, seed):
        Z = rff_map(X, rff_weights(16, 32, 4.0, seed, sampling=sampling))
        return np.sqrt(np.mean((Z @ Z.T - K) ** 2))

    gauss = np.mean([err("gaussian", s) for s in range(8)])
    orth = np.mean([err("orthogonal", s) for s in range(8)])
    assert orth < 0.8 * gauss
    assert orth < 0.1                                  # and it does estimate K


def test_rff_chunked_transform_equals_unchunked():
    X = _data(53, d=5)
    W = rff_weights(5, 20, 1.0, 3)
    full = rff_map(X, W)
    pieces = list(rff_chunks(X, W, chunk_size=7))
    assert len(pieces) == 8 and all(Z.shape[0] <= 7 for _, Z in pieces)
    # chunks form the phases X W in other BLAS calls: rff_err, ~1e-15 (a chunk's rows
    # shifted by one are off by O(1 / sqrt(N)))
    dZ = rff_err(X, W)
    np.testing.assert_allclose(np.vstack([Z for _, Z in pieces]), full, rtol=0,
                               atol=np.max(dZ))
    est = RandomFourierFeatures(n_features=20, bandwidth=1.0, random_state=3, chunk_size=7)
    np.testing.assert_allclose(est.fit_transform(X), full, rtol=0, atol=np.max(dZ))
    est_big = RandomFourierFeatures(n_features=20, bandwidth=1.0, random_state=3)
    # unchunked against chunks of 7: another order, so the same bound, not bit identity
    np.testing.assert_allclose(est_big.fit_transform(X), est.transform(X), rtol=0,
                               atol=np.max(dZ))
    np.testing.assert_allclose(rff_mean(X, W, chunk_size=5), full.mean(axis=0), rtol=0,
                               atol=mean_atol(full, err=dZ))
    with pytest.raises(ValueError, match="chunk_size"):
        list(rff_chunks(X, W, chunk_size=0))


def test_rf_stats_is_the_one_home_of_random_feature_moments():
    """``n``, ``sum z`` and ``sum z z^T`` (the former ``kernels.rff_moments``) are read off
    :func:`shiftlearn.adaptation.rf_stats`, chunked and additive across parts."""
    from shiftlearn.adaptation import rf_stats

    X = _data(31, d=4)
    W = rff_weights(4, 9, 1.0, 0)
    Z = rff_map(X, W)
    st = rf_stats(X, omega=W, chunk_size=4, fast_trig=False)
    assert st.n_samples == 31
    # sums and products in chunks of 4, of features formed in other BLAS calls (rff_err)
    dZ = rff_err(X, W)
    np.testing.assert_allclose(st.domain_sums.sum(axis=0), Z.sum(axis=0), rtol=0,
                               atol=sum_atol(Z, axis=0, err=dZ))
    atol = dot_atol(Z.T, Z, Xerr=dZ.T, Yerr=dZ)
    np.testing.assert_allclose(st.total_moment(), Z.T @ Z, rtol=0, atol=atol)
    both = rf_stats(X[:10], omega=W, fast_trig=False) + rf_stats(X[10:], omega=W, fast_trig=False)
    assert both.n_samples == 31
    np.testing.assert_allclose(both.total_moment(), st.total_moment(), rtol=0, atol=atol)


def test_random_fourier_features_estimator():
    X = _data(40, d=3)
    est = RandomFourierFeatures(n_features=50, random_state=0).fit(X)
    assert est.sigma_ == pytest.approx(median_heuristic(X))
    assert est.omega_.shape == (3, 50)
    with pytest.raises(ValueError, match="expecting 3 features"):
        est.transform(X[:, :2])
    X32 = X.astype(np.float32)
    assert np.isfinite(RandomFourierFeatures(10, random_state=0).fit_transform(X32)).all()


def test_nystroem_all_landmarks_reproduces_K():
    X = _data(25)
    ny = nystroem(25, sigma=1.1, random_state=0).fit(X)
    Z = ny.transform(X)
    np.testing.assert_allclose(Z @ Z.T, rbf_kernel(X, sigma=1.1), atol=1e-8)
    # a numpy Generator is accepted as the seed
    assert nystroem(5, 1.0, np.random.default_rng(0)).fit(X).transform(X).shape == (25, 5)


# ------------------------------------------------------------------------------------ MMD ------
def _brute_mmd2(X, Y, sigma, unbiased):
    def k(a, b):
        return np.exp(-np.sum((a - b) ** 2) / (2 * sigma**2))

    n, m = len(X), len(Y)
    xx = sum(k(X[i], X[j]) for i in range(n) for j in range(n) if not unbiased or i != j)
    yy = sum(k(Y[i], Y[j]) for i in range(m) for j in range(m) if not unbiased or i != j)
    xy = sum(k(X[i], Y[j]) for i in range(n) for j in range(m))
    if unbiased:
        return xx / (n * (n - 1)) + yy / (m * (m - 1)) - 2 * xy / (n * m)
    return xx / n**2 + yy / m**2 - 2 * xy / (n * m)


@pytest.mark.parametrize("unbiased", [False, True])
def test_mmd2_matches_brute_force(unbiased):
    X, Y = _data(9), _data(12, seed=1, shift=0.5)
    got = mmd2(X, Y, bandwidth=0.9, unbiased=unbiased)
    # kernel entries off by rbf_err, weighted by at most 4 in all (each of the three means
    # has weights summing to 1, the cross one counted twice), plus the sums' round-off
    Z = np.vstack([X, Y])
    atol = 4 * np.max(rbf_err(Z, Z, 0.9)) + mmd_atol(len(Z))
    assert got == pytest.approx(_brute_mmd2(X, Y, 0.9, unbiased), rel=0, abs=atol)
    # median bandwidth = rule applied to the pooled sample
    s = median_heuristic(np.vstack([X, Y]))
    assert mmd2(X, Y, unbiased=unbiased) == pytest.approx(_brute_mmd2(X, Y, s, unbiased))


def test_mmd2_linear_kernel_is_squared_mean_difference():
    X, Y = _data(20), _data(30, seed=1, shift=1.0)
    diff = X.mean(axis=0) - Y.mean(axis=0)
    assert mmd2(X, Y, kernel="linear") == pytest.approx(diff @ diff)


def test_mmd2_from_kernels_needs_two_points_for_unbiased():
    K = np.ones((1, 1))
    with pytest.raises(ValueError, match="at least 2 points"):
        mmd2_from_kernels(K, np.ones((3, 3)), np.ones((1, 3)), unbiased=True)


def test_mmd2_rff_approximates_mmd2():
    X, Y = _data(100, d=3), _data(100, d=3, seed=1, shift=0.7)
    exact = mmd2(X, Y, bandwidth=1.5)
    W = rff_weights(3, 4000, 1.5, 0)
    approx = mmd2_rff(X, Y, W, chunk_size=33)
    assert exact > 0.05
    assert approx == pytest.approx(exact, rel=0.1)
    Z = rff_map(np.vstack([X, Y]), W)  # equals the biased MMD of the RFF kernel exactly
    assert approx == pytest.approx(mmd2_from_kernels(Z[:100] @ Z[:100].T, Z[100:] @ Z[100:].T,
                                                     Z[:100] @ Z[100:].T), rel=1e-10)


def test_permutation_test_rejects_on_shifted_gaussians():
    X, Y = _data(80, d=2, seed=0), _data(80, d=2, seed=1, shift=0.6)
    res = mmd_permutation_test(X, Y, n_permutations=300, random_state=0)
    assert res.p_value <= 0.05 and res.reject(0.05)
    assert res.null_distribution.shape == (300,)
    assert res.statistic == pytest.approx(mmd2(X, Y, unbiased=True))
    assert res.sigma == pytest.approx(median_heuristic(np.vstack([X, Y])))


def test_permutation_test_does_not_reject_on_one_distribution():
    X, Y = _data(80, d=2, seed=2), _data(80, d=2, seed=3)
    res = mmd_permutation_test(X, Y, n_permutations=300, random_state=0)
    assert res.p_value > 0.05 and not res.reject(0.05)


def test_permutation_test_is_seeded_and_biased_option_works():
    X, Y = _data(30, seed=4), _data(30, seed=5, shift=0.3)
    a = mmd_permutation_test(X, Y, n_permutations=100, random_state=1)
    b = mmd_permutation_test(X, Y, n_permutations=100, random_state=1)
    assert a.p_value == b.p_value
    np.testing.assert_array_equal(a.null_distribution, b.null_distribution)
    c = mmd_permutation_test(X, Y, n_permutations=100, unbiased=False, random_state=1)
    assert c.statistic == pytest.approx(mmd2(X, Y, unbiased=False))
    lin = mmd_permutation_test(X, Y, kernel="linear", n_permutations=50, random_state=1)
    assert lin.sigma is None


def test_permutation_null_matches_brute_force_permutations():
    # the batched null statistics equal MMD^2 recomputed on explicitly permuted samples
    X, Y = _data(7, seed=6), _data(5, seed=7)
    res = mmd_permutation_test(X, Y, bandwidth=1.0, n_permutations=5, random_state=3)
    rng = np.random.default_rng(3)
    Z = np.vstack([X, Y])
    perms = np.argsort(rng.random((5, 12)), axis=1)
    expected = [_brute_mmd2(Z[p[:7]], Z[p[7:]], 1.0, True) for p in perms]
    # as for mmd2: kernel round-off weighted by 4, plus the sums'
    atol = 4 * np.max(rbf_err(Z, Z, 1.0)) + mmd_atol(len(Z))
    np.testing.assert_allclose(res.null_distribution, expected, rtol=0, atol=atol)


def test_permutation_test_calibration_under_the_null():
    # 40 seeded null data sets: the rejection rate at level 0.1 stays near 0.1
    pvals = []
    for seed in range(40):
        rng = np.random.default_rng(1000 + seed)
        pvals.append(mmd_permutation_test(rng.normal(size=(25, 2)), rng.normal(size=(25, 2)),
                                          n_permutations=99, random_state=seed).p_value)
    pvals = np.array(pvals)
    rate = np.mean(pvals <= 0.1)
    assert rate <= 0.25, f"rejection rate {rate} at level 0.1 under the null"
    assert 0.3 < pvals.mean() < 0.7  # p-values roughly uniform


def test_permutation_test_input_errors():
    X = _data(10)
    with pytest.raises(ValueError, match="features"):
        mmd_permutation_test(X, X[:, :2])
    with pytest.raises(ValueError, match="at least 2 rows"):
        mmd_permutation_test(X, X[:1])


# ---------------------------------------------------------------------- MMD / domain matrices --
def test_mmd_matrix_tca_sca_and_trace_identity():
    groups = np.array([1, 1, 1, -2, -2, 1, -2])
    L_tca = mmd_matrix(groups, normalization="tca")
    L_sca = mmd_matrix(groups, normalization="sca")
    # entrywise formulas, a few roundings each (dividing by 4 is exact); row sums: n eps
    # sum|L_i| (a factor 1/2 for 1/4, or a row that does not sum to 0, is off by |L|)
    np.testing.assert_allclose(L_sca, L_tca / 4, rtol=4 * EPS)
    np.testing.assert_allclose(L_tca @ np.ones(7), 0, atol=sum_atol(L_tca, axis=1))
    X = _data(7)
    K = rbf_kernel(X, sigma=1.0)
    s, t = groups > 0, groups < 0
    assert np.trace(K @ L_tca) == pytest.approx(
        mmd2_from_kernels(K[np.ix_(s, s)], K[np.ix_(t, t)], K[np.ix_(s, t)]))
    with pytest.raises(ValueError, match="exactly 2 groups"):
        mmd_matrix(np.array([1, 2, 3]), normalization="tca")
    with pytest.raises(ValueError, match="Unknown normalization"):
        mmd_matrix(groups, normalization="jda")


def test_mmd_matrix_sca_many_groups_is_distributional_variance():
    groups = np.array([1, 2, 2, 3, 3, 3, 1])
    L = mmd_matrix(groups, normalization="sca")
    np.testing.assert_allclose(L @ np.ones(7), 0, atol=sum_atol(L, axis=1))
    X = _data(7, d=2)
    # linear kernel: tr(K L) = (1/m) sum_d ||mu_d - mean_d mu_d||^2
    mus = np.array([X[groups == g].mean(axis=0) for g in (1, 2, 3)])
    dv = np.mean(np.sum((mus - mus.mean(axis=0)) ** 2, axis=1))
    assert np.trace(X @ X.T @ L) == pytest.approx(dv)
    E, ids = domain_mean_matrix(groups)
    assert ids.tolist() == [1, 2, 3]
    np.testing.assert_allclose(E.T @ X, mus)


def test_domain_mean_matrix_numbered_groups_keep_empty_columns():
    E, ids = domain_mean_matrix(np.array([0, 2, 2]), n_groups=4)   # groups 1 and 3 empty
    assert ids.tolist() == [0, 1, 2, 3]
    np.testing.assert_array_equal(E, [[1, 0, 0, 0], [0, 0, 0.5, 0], [0, 0, 0.5, 0]])
    np.testing.assert_array_equal(domain_mean_matrix(np.array([0, 2, 2]))[0],
                                  E[:, [0, 2]])                 # present groups only


def test_mmd_vector_is_the_tca_matrix_factor():
    sd = np.array([1, 3, 1, -2, -2, 1, -4])          # several sources and targets: two sides
    ell = mmd_vector(sd)
    np.testing.assert_array_equal(ell, np.where(sd > 0, 1 / 4, -1 / 3))
    np.testing.assert_array_equal(np.outer(ell, ell), mmd_matrix(np.sign(sd)))
    np.testing.assert_array_equal(mmd_vector(np.array([1, 2])), [0.0, 0.0])   # no target


def test_sigma_from_sq_distances_rules_and_refusals():
    X = _data(25)
    D2 = ((X[:, None] - X[None]) ** 2).sum(-1)
    iu = np.triu_indices(25, k=1)
    # the library forms ||x||^2 + ||y||^2 - 2 x.y, off by c (d + 2) eps (||x||^2 + ||y||^2)
    # from the differences squared here; a median or mean moves by no more, sigma (a root or
    # the statistic itself) by at most that relative to the statistic
    sq = np.sum(X * X, axis=1)
    dD2 = 4 * (X.shape[1] + 2) * EPS * np.max(sq[:, None] + sq[None, :])
    rel = dD2 / min(np.median(D2[iu]), np.mean(D2[iu]))
    for rule in ("median", "median_sq", "mean"):
        # the same statistic of the same values, whole or upper triangle: exact
        assert sigma_from_sq_distances(D2, rule) == sigma_from_sq_distances(D2[iu], rule)
        assert sigma_from_sq_distances(D2, rule) == pytest.approx(
            median_heuristic(X, rule=rule), rel=rel)
    assert sigma_from_sq_distances(np.zeros(0)) == 1.0                      # no pair
    assert sigma_from_sq_distances(np.zeros((3, 3))) == 1.0                 # all coincide
    with pytest.raises(ValueError, match="rule must be"):
        sigma_from_sq_distances(D2, "n_features")
    with pytest.raises(ValueError, match="square matrix or a 1-D"):
        sigma_from_sq_distances(D2[:, :3])


def test_median_heuristic_subsamples_before_converting_float32():
    X = np.random.default_rng(0).normal(size=(5000, 7)).astype(np.float32)
    # same rows drawn, converted after subsampling: the value is that of the float64 copy
    assert median_heuristic(X) == median_heuristic(X.astype(np.float64))
    assert median_heuristic(X.tolist()) == median_heuristic(X.astype(np.float64))


# ------------------------------------------------------------------------- edge cases
# Edge cases of shiftlearn.kernels that the reference tests miss: ties in the permutation test
# (issue #23, row 1), and both sides of its boundaries.


def _binary(n0, n1):
    return np.r_[np.zeros((n0, 1)), np.ones((n1, 1))]


# identical samples whose permutations tie with the observed split: constant rows (every
# permutation ties) and 0/1 rows with the same composition (a third of the permutations tie)
TIED = {
    "constant": (np.ones((20, 2)), np.ones((20, 2))),
    "binary_5_5": (_binary(5, 5), _binary(5, 5)),
    "binary_6_4": (_binary(6, 4), _binary(6, 4)),
}


@pytest.mark.parametrize("unbiased", [True, False])
@pytest.mark.parametrize("name", sorted(TIED))
def test_identical_samples_with_ties_give_p_one(name, unbiased):
    """Identical samples: the observed split minimises MMD², every tie counts as >=, so p = 1.
    Without the tie tolerance (or with > instead of >=) p was 0.005-0.97 here."""
    X, Y = TIED[name]
    res = mmd_permutation_test(X, Y, n_permutations=200, unbiased=unbiased, random_state=0)
    # the data do exercise ties: some null statistics equal the observed one up to rounding
    assert np.any(np.abs(res.null_distribution - res.statistic) < 1e-9)
    assert res.p_value == 1.0
    assert not res.reject(0.05)


def test_identical_continuous_samples_give_p_one():
    X = np.random.default_rng(0).normal(size=(25, 3))
    for unbiased in (True, False):
        res = mmd_permutation_test(X, X.copy(), n_permutations=100, unbiased=unbiased,
                                   random_state=1)
        assert res.p_value == 1.0


def test_tie_tolerance_does_not_hide_a_real_difference():
    """Beside "ties give p = 1": disjoint constant samples (no tie with the observed split is
    possible) still give the smallest p-value, 1 / (1 + n_permutations)."""
    X, Y = np.zeros((10, 2)), np.ones((10, 2))
    res = mmd_permutation_test(X, Y, n_permutations=99, random_state=0)
    assert res.p_value == pytest.approx(1 / 100)
    assert np.all(res.null_distribution < res.statistic)
    # linear kernel (unbounded entries): the tolerance scales with the kernel, still p = 1 / 100
    res = mmd_permutation_test(1e3 * X, 1e3 * Y + 1e3, kernel="linear", n_permutations=99,
                               random_state=0)
    assert res.p_value == pytest.approx(1 / 100)


def test_p_value_counts_the_observed_statistic_once():
    """p = (1 + #{null >= observed}) / (1 + P): recomputed from the returned null."""
    rng = np.random.default_rng(3)
    X, Y = rng.normal(size=(15, 2)), rng.normal(size=(11, 2)) + 0.4
    res = mmd_permutation_test(X, Y, n_permutations=150, random_state=2)
    count = int(np.sum(res.null_distribution >= res.statistic))
    assert 0 < count < 150      # a p-value strictly inside (min, 1): the count matters
    assert res.p_value == pytest.approx((1 + count) / 151)


def test_sample_size_boundary_and_feature_mismatch():
    """Two rows per sample are enough (the unbiased statistic divides by n - 1); one is not."""
    X2, Y2 = np.array([[0.0], [1.0]]), np.array([[0.5], [2.0]])
    res = mmd_permutation_test(X2, Y2, n_permutations=10, random_state=0)
    assert np.isfinite(res.statistic) and 0 < res.p_value <= 1
    with pytest.raises(ValueError, match="at least 2 rows"):
        mmd_permutation_test(X2[:1], Y2, n_permutations=10)
    with pytest.raises(ValueError, match="at least 2 rows"):
        mmd_permutation_test(X2, Y2[:1], n_permutations=10)
    with pytest.raises(ValueError, match="1 features but Y has 2"):
        mmd_permutation_test(X2, np.ones((3, 2)), n_permutations=10)


def test_n_permutations_must_be_a_positive_integer():
    X, Y = np.zeros((3, 1)), np.ones((3, 1))
    res = mmd_permutation_test(X, Y, n_permutations=1, random_state=0)     # the boundary
    assert res.null_distribution.shape == (1,) and res.p_value in (0.5, 1.0)
    for bad in (0, -3, 2.5, True):
        with pytest.raises(ValueError, match="n_permutations must be a positive integer"):
            mmd_permutation_test(X, Y, n_permutations=bad)
    # the documented default
    assert mmd_permutation_test(X, Y, random_state=0).null_distribution.shape == (500,)


def test_tie_tolerance_scales_with_the_kernel():
    """Identical constant samples far from the origin with the linear kernel (entries ~1e6):
    rounding of the statistic is ~1e-10, far above 1e-9 / max|K| but below 1e-9 * max|K|."""
    X = np.full((30, 2), 1e3) + np.array([0.1, 0.7])
    res = mmd_permutation_test(X, X.copy(), kernel="linear", n_permutations=100, random_state=0)
    assert res.p_value == 1.0


@pytest.mark.parametrize("which", ["X", "Y"])
def test_nan_input_is_named(which):
    from shiftlearn.kernels import mmd2

    good, bad = np.zeros((4, 2)), np.zeros((4, 2))
    bad[1, 0] = np.nan
    args = (bad, good) if which == "X" else (good, bad)
    with pytest.raises(ValueError, match=f"Input {which} contains NaN"):
        mmd_permutation_test(*args, n_permutations=5)
    with pytest.raises(ValueError, match=f"Input {which} contains NaN"):
        mmd2(*args)


def test_reject_boundary_and_default_level():
    from shiftlearn.kernels import MMDTestResult

    def res(p):
        return MMDTestResult(statistic=0.0, p_value=p, null_distribution=np.empty(0), sigma=None)

    assert res(0.05).reject() and res(0.05).reject(0.05)        # p = alpha rejects
    assert not res(0.06).reject() and res(0.06).reject(0.06)
    assert not res(0.5).reject()


# --------------------------------------------------------------------- random number streams
def test_random_state_goes_through_numpy_default_rng():
    """No wrapper of our own (issue #16): a seed means ``numpy.random.default_rng(seed)``."""
    from shiftlearn.kernels import rff_weights

    def draw(rs):
        return rff_weights(3, 4, 1.0, random_state=rs)

    np.testing.assert_array_equal(draw(3), np.random.default_rng(3).standard_normal((3, 4)))
    g = np.random.default_rng(0)
    assert not np.array_equal(draw(g), draw(g))          # a Generator is used, not copied
    a, b = draw(np.random.RandomState(7)), draw(np.random.RandomState(7))
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, draw(np.random.RandomState(8)))
    assert draw(None).shape == (3, 4)
    with pytest.raises(TypeError):
        draw("seed")


def test_nystroem_is_reproducible_from_an_int_and_a_generator():
    from shiftlearn.kernels import nystroem

    X = np.random.default_rng(0).normal(size=(40, 3))
    a = nystroem(6, 1.5, random_state=4).fit(X).components_
    b = nystroem(6, 1.5, random_state=4).fit(X).components_
    np.testing.assert_array_equal(a, b)
    c = nystroem(6, 1.5, random_state=np.random.default_rng(4)).fit(X).components_
    d = nystroem(6, 1.5, random_state=np.random.default_rng(4)).fit(X).components_
    np.testing.assert_array_equal(c, d)


# --------------------------------------------------------------------- bandwidth rules
def _pairwise_median(X):
    from scipy.spatial.distance import pdist

    return float(np.sqrt(np.median(pdist(X, "sqeuclidean"))))


def test_median_heuristic_small_scale_and_two_rows():
    from shiftlearn.kernels import median_heuristic

    # sigma below 1 is kept (the unit fallback is only for coinciding points)
    assert median_heuristic(np.array([[0.0], [0.1], [0.3]])) == pytest.approx(0.2)
    assert median_heuristic(np.array([[0.0], [0.25]])) == pytest.approx(0.25)   # 2 rows: enough
    with pytest.raises(ValueError, match="^The median heuristic needs at least 2 rows"):
        median_heuristic(np.array([[0.0, 1.0]]))
    assert median_heuristic(np.zeros((5, 2))) == 1.0


def test_median_heuristic_subsample_is_without_replacement_and_seeded():
    from shiftlearn.kernels import median_heuristic

    X = np.random.default_rng(1).normal(size=(60, 2)) * np.array([1.0, 5.0])
    idx = np.random.default_rng(3).choice(60, 20, replace=False)
    # ||x||^2 + ||y||^2 - 2 x.y against pdist's differences: c (d + 2) eps (||x||^2 + ||y||^2)
    # on each squared distance, so on their median, relative to it (another subsample moves
    # sigma by percents)
    sq = np.sum(X[idx] ** 2, axis=1)
    rel = 4 * 4 * EPS * np.max(sq[:, None] + sq[None, :]) / _pairwise_median(X[idx]) ** 2
    assert median_heuristic(X, max_samples=20, random_state=3) == pytest.approx(
        _pairwise_median(X[idx]), rel=rel)


def test_median_heuristic_default_subsample_is_1000_rows_seed_0():
    from shiftlearn.kernels import median_heuristic, resolve_bandwidth

    X = np.random.default_rng(2).standard_exponential(size=(1001, 2))
    default = median_heuristic(X)
    assert default == median_heuristic(X, max_samples=1000, random_state=0)
    assert default != median_heuristic(X, max_samples=1001)          # the exact value differs
    assert default != median_heuristic(X, max_samples=1000, random_state=1)
    assert resolve_bandwidth("median", X) == default                # same seed through the rule
    for rule in ("median_sq", "mean"):
        assert resolve_bandwidth(rule, X) == median_heuristic(X, rule=rule)
    assert resolve_bandwidth("mean", X) != resolve_bandwidth("median", X)


# --------------------------------------------------------------------- kernels and MMD helpers
def test_callable_kernel_gets_both_arguments_and_returns_float64():
    from shiftlearn.kernels import kernel_matrix

    X, Y = np.arange(6.0).reshape(3, 2), np.ones((2, 2))
    K = kernel_matrix(X, Y, kernel=lambda A, B: (A @ B.T).astype(int))
    assert K.shape == (3, 2) and K.dtype == np.float64
    np.testing.assert_array_equal(K, X @ Y.T)
    np.testing.assert_array_equal(kernel_matrix(X, kernel=lambda A, B: A @ B.T), X @ X.T)
    with pytest.raises(ValueError, match="^The rbf kernel needs sigma"):
        kernel_matrix(X)


def test_mmd_matrix_default_is_tca_and_unbiased_sample_size_boundary():
    from shiftlearn.kernels import mmd2_from_kernels, mmd_matrix

    g = np.array([1, 1, 1, -2, -2])
    np.testing.assert_array_equal(mmd_matrix(g), mmd_matrix(g, normalization="tca"))
    K = np.eye(5) + 0.5
    # two points per sample are enough for the unbiased estimate, one is not (either side)
    v = mmd2_from_kernels(K[:2, :2], K[2:, 2:], K[:2, 2:], unbiased=True)
    assert np.isfinite(v)
    for kxx, kyy, kxy in ((K[:1, :1], K[1:, 1:], K[:1, 1:]), (K[:4, :4], K[4:, 4:], K[:4, 4:])):
        with pytest.raises(ValueError, match="^The unbiased MMD estimate needs at least 2"):
            mmd2_from_kernels(kxx, kyy, kxy, unbiased=True)
    # non-square cross block: n and m are read from the right blocks
    assert mmd2_from_kernels(K[:3, :3], K[3:, 3:], K[:3, 3:], unbiased=True) == pytest.approx(
        (K[:3, :3].sum() - 3 * 1.5) / 6 + (K[3:, 3:].sum() - 2 * 1.5) / 2 - 2 * 0.5)


# --------------------------------------------------------------------- random Fourier features
def test_cos_sin_fast_path_is_float32_trig_and_default_is_exact():
    from shiftlearn.kernels import cos_sin_into

    P = np.linspace(-30, 30, 40).reshape(5, 8) + 1e-3
    exact = cos_sin_into(P, np.empty((5, 16)))
    np.testing.assert_array_equal(exact, np.c_[np.cos(P), np.sin(P)])
    fast = cos_sin_into(P, np.empty((5, 16)), fast=True)
    P32 = P.astype(np.float32)
    np.testing.assert_array_equal(fast, np.c_[np.cos(P32), np.sin(P32)].astype(np.float64))
    assert 0 < np.abs(fast - exact).max() < 1e-5
    # fast on float32 phases is the ordinary float32 path
    out32 = cos_sin_into(P32, np.empty((5, 16), np.float32), fast=True)
    np.testing.assert_array_equal(out32, np.c_[np.cos(P32), np.sin(P32)])


def test_rff_map_and_chunks_keep_the_frequency_dtype_and_fast_flag():
    from shiftlearn.kernels import rff_chunks, rff_map, rff_weights

    X = np.random.default_rng(0).normal(size=(7, 3)) * 10
    W = rff_weights(3, 4, 1.0, random_state=0)
    W32 = W.astype(np.float32)
    assert rff_map(X.astype(np.float32), W32).dtype == np.float32
    chunks = list(rff_chunks(X, W32, chunk_size=3))
    assert [sl.start for sl, _ in chunks] == [0, 3, 6]
    assert all(Z.dtype == np.float32 for _, Z in chunks)
    exact = rff_map(X, W)
    fast = rff_map(X, W, fast_trig=True)
    assert fast.dtype == np.float64 and 0 < np.abs(fast - exact).max() < 1e-5
    fast_chunks = np.vstack([Z for _, Z in rff_chunks(X, W, chunk_size=2, fast_trig=True)])
    # chunks form the phases in other BLAS calls (a float64 ulp apart at most, rff_err);
    # float32 trig rounds them to float32 first, so they agree bit for bit unless a phase
    # straddles a float32 rounding boundary (~1e-8 per entry): a float64 trig in the chunks
    # would differ by ~1e-7
    np.testing.assert_array_equal(fast_chunks, fast)


def test_chunk_size_boundary():
    from shiftlearn.kernels import rff_map, rff_mean, rff_weights

    X = np.random.default_rng(0).normal(size=(5, 2))
    W = rff_weights(2, 3, 1.0, random_state=0)
    # row by row against one block: phases from other BLAS calls (rff_err), summed in another
    # order (a row dropped or counted twice is off by ~0.1)
    np.testing.assert_allclose(rff_mean(X, W, chunk_size=1), rff_map(X, W).mean(axis=0),
                               rtol=0, atol=mean_atol(rff_map(X, W), err=rff_err(X, W)))
    with pytest.raises(ValueError, match="chunk_size must be >= 1, got 0"):
        rff_mean(X, W, chunk_size=0)


def test_rff_mean_of_one_row_and_float64_accumulation():
    from shiftlearn.kernels import rff_map, rff_mean, rff_weights

    rng = np.random.default_rng(0)
    W = rff_weights(2, 8, 1.0, random_state=0)
    x = rng.normal(size=(1, 2))
    np.testing.assert_allclose(rff_mean(x, W), rff_map(x, W)[0], rtol=0,
                               atol=mean_atol(rff_map(x, W), err=rff_err(x, W)))
    # float32 features are summed in float64: exact to float64 rounding, not float32's. Rows
    # and frequencies on a 2^-6 grid make every float32 phase exact (x.w needs < 20 bits), so
    # chunked and whole phases agree in any BLAS and only the summation differs: n eps64
    # sum|z| / n ~ 2e-11, where float32 accumulation is off by 1e-7 (in chunks) to 2e-5
    X = (np.round(rng.normal(size=(50_000, 2)) * 64) / 64).astype(np.float32)
    W32 = (np.round(W * 64) / 64).astype(np.float32)
    Z = rff_map(X, W32)
    ref = Z.astype(np.float64).sum(axis=0) / X.shape[0]
    np.testing.assert_allclose(rff_mean(X, W32), ref, rtol=0, atol=mean_atol(Z))


def test_rff_weights_one_feature_and_haar_signs():
    from shiftlearn.kernels import rff_weights

    assert rff_weights(3, 1, 1.0, random_state=0).shape == (3, 1)
    with pytest.raises(ValueError, match="n_features must be a positive integer"):
        rff_weights(3, 0, 1.0)
    # orthogonal blocks: without the sign fix from R's diagonal, Q[0, 0] of numpy's QR has
    # mean about -0.5; with it, every entry is symmetric about 0
    W = rff_weights(3, 3 * 3000, 1.0, random_state=0, sampling="orthogonal")
    first = W[:, 0::3]                                   # first column of every block
    se = first.std(axis=1) / np.sqrt(first.shape[1])
    assert np.all(np.abs(first.mean(axis=1)) < 4 * se)


def test_random_fourier_features_defaults_and_sampling():
    from shiftlearn.kernels import RandomFourierFeatures

    X = np.random.default_rng(0).normal(size=(20, 3))
    assert RandomFourierFeatures(random_state=0).fit(X).transform(X).shape == (20, 1000)
    orf = RandomFourierFeatures(n_features=3, sampling="orthogonal", random_state=0).fit(X)
    G = orf.omega_.T @ orf.omega_
    np.testing.assert_allclose(G - np.diag(np.diag(G)), 0, atol=1e-10)
    iid = RandomFourierFeatures(n_features=3, random_state=0).fit(X)
    G = iid.omega_.T @ iid.omega_
    assert np.abs(G - np.diag(np.diag(G))).max() > 1e-3


def test_sampling_check_names_the_parameter():
    from shiftlearn.kernels import check_rff_sampling

    assert check_rff_sampling("orthogonal") == "orthogonal"
    with pytest.raises(ValueError, match=r"^sampling must be one of \('gaussian', 'orthogonal'\)"):
        check_rff_sampling("sobol")
    with pytest.raises(ValueError, match="^frequencies must be one of"):
        check_rff_sampling("sobol", name="frequencies")


def test_resolve_bandwidth_passes_its_seed():
    from shiftlearn.kernels import median_heuristic, resolve_bandwidth

    X = np.random.default_rng(4).standard_exponential(size=(1001, 2))
    assert resolve_bandwidth("median", X, random_state=1) == median_heuristic(X, random_state=1)
    assert resolve_bandwidth("median", X, random_state=1) != resolve_bandwidth("median", X)


def test_random_fourier_features_small_inputs_and_dtypes():
    from shiftlearn.kernels import RandomFourierFeatures

    X1 = np.array([[0.5, 1.0]])
    with pytest.raises(ValueError, match=r"^n_samples=1: the bandwidth rule 'median' needs at "
                                         "least 2 rows"):
        RandomFourierFeatures(n_features=3).fit(X1)
    # the rules that do not look at distances, and numeric bandwidths, work on one row
    assert RandomFourierFeatures(n_features=3, bandwidth="n_features").fit(X1).sigma_ == 1.0
    RandomFourierFeatures(n_features=3, bandwidth=2.0).fit(X1)
    # two rows are enough for a rule; one feature is fine
    RandomFourierFeatures(n_features=3).fit(X1.repeat(2, axis=0) + [[0.0], [1.0]])
    RandomFourierFeatures(n_features=3).fit(np.arange(5.0)[:, None])
    # float32 in, float32 out; float64 in, float64 out (the declared tags)
    X = np.random.default_rng(0).normal(size=(10, 2))
    rff = RandomFourierFeatures(n_features=4, random_state=0).fit(X)
    assert rff.transform(X.astype(np.float32)).dtype == np.float32
    assert rff.transform(X).dtype == np.float64
    assert rff.__sklearn_tags__().transformer_tags.preserves_dtype == ["float64", "float32"]


def test_unbiased_mmd_needs_two_rows_per_sample_and_takes_exactly_two():
    from shiftlearn.kernels import mmd2_from_kernels

    rng = np.random.default_rng(0)
    X, Y = rng.normal(size=(2, 3)), rng.normal(size=(2, 3)) + 1.0
    K = rbf_kernel(np.vstack([X, Y]), sigma=1.0)
    value = mmd2_from_kernels(K[:2, :2], K[2:, 2:], K[:2, 2:], unbiased=True)
    # two rows each: the off-diagonal terms only
    want = K[0, 1] + K[2, 3] - K[:2, 2:].mean() * 2
    assert value == pytest.approx(want, rel=1e-12)
    for n, m in ((1, 2), (2, 1)):
        with pytest.raises(ValueError, match=r"^The unbiased MMD estimate needs at least 2 "
                                             r"points per sample"):
            mmd2_from_kernels(K[:n, :n], K[2:2 + m, 2:2 + m], K[:n, 2:2 + m], unbiased=True)


def test_bandwidth_rows_reads_every_row_up_to_the_limit():
    from shiftlearn.kernels import BANDWIDTH_MAX_SAMPLES, bandwidth_rows

    assert bandwidth_rows(BANDWIDTH_MAX_SAMPLES) is None
    assert bandwidth_rows(BANDWIDTH_MAX_SAMPLES + 1).shape == (BANDWIDTH_MAX_SAMPLES,)
