"""Laplacian and Cauchy kernels: exact Gram matrices, bandwidth rules, random Fourier features
from their spectral laws (issue #20), and the exact feature factor random features tend to."""

import numpy as np
import pytest
from _tolerances import EPS, EPS32

import shiftlearn.kernels as kernels
from shiftlearn.kernels import (
    CAUCHY_RBF_RATIO,
    RFF_KERNELS,
    RandomFourierFeatures,
    cauchy_kernel,
    kernel_feature_factor,
    kernel_matrix,
    laplacian_kernel,
    median_heuristic,
    mmd2,
    mmd2_from_kernels,
    mmd2_rff,
    rbf_kernel,
    resolve_bandwidth,
    rff_frequencies,
    rff_map,
    rff_weights,
)


def _data(n, d=11, seed=0, shift=0.0):
    rng = np.random.default_rng(seed)
    return rng.normal(size=(n, d)) * rng.uniform(0.5, 2.0, size=d) + shift


def _log_rtol(K, d):
    """Relative round-off of a kernel exp(-s) or prod 1 / (1 + t^2) (through logarithms)
    of d coordinates: each coordinate's rounding moves s = |log k| by ~eps of itself, so
    c d eps (1 + |log k|), no BLAS involved; a wrong scale (sigma for sigma^2, a lost
    coordinate) is off by O(1)."""
    return float(4 * d * EPS * (1 + np.max(np.abs(np.log(K[K > 0])))))


def _brute(kernel, X, Y, sigma):
    K = np.empty((X.shape[0], Y.shape[0]))
    for i in range(X.shape[0]):
        for j in range(Y.shape[0]):
            D = X[i] - Y[j]
            if kernel == "laplacian":
                K[i, j] = np.exp(-np.sum(np.abs(D)) / sigma)
            elif kernel == "cauchy":
                K[i, j] = np.prod(1.0 / (1.0 + (D / sigma) ** 2))
            else:
                K[i, j] = np.exp(-np.sum(D**2) / (2 * sigma**2))
    return K


# ----------------------------------------------------------------------- exact kernels -------
@pytest.mark.parametrize("kernel", ["laplacian", "cauchy"])
def test_exact_kernel_equals_brute_force(kernel):
    X, Y = _data(15), _data(9, seed=1, shift=0.4)     # unequal sizes, d = 11 (not a multiple of 8)
    f = {"laplacian": laplacian_kernel, "cauchy": cauchy_kernel}[kernel]
    ref = _brute(kernel, X, Y, 1.7)
    np.testing.assert_allclose(f(X, Y, sigma=1.7), ref, rtol=_log_rtol(ref, 11))
    K = f(X, sigma=0.9)
    ref = _brute(kernel, X, X, 0.9)
    np.testing.assert_allclose(K, ref, rtol=_log_rtol(ref, 11))
    np.testing.assert_allclose(np.diag(K), 1.0)
    np.testing.assert_array_equal(K, K.T)
    np.testing.assert_array_equal(kernel_matrix(X, Y, kernel=kernel, sigma=1.7), f(X, Y, sigma=1.7))


def test_laplacian_kernel_is_sklearns_with_gamma_one_over_sigma():
    from sklearn.metrics.pairwise import laplacian_kernel as sk_laplacian

    X, Y = _data(12), _data(7, seed=3)
    ref = sk_laplacian(X, Y, gamma=0.4)
    np.testing.assert_allclose(laplacian_kernel(X, Y, sigma=2.5), ref,
                               rtol=_log_rtol(ref, X.shape[1]))


def test_cauchy_kernel_blocks_groups_and_mirror(monkeypatch):
    """Several row blocks (the symmetric path mirrors them), a group of 8 coordinates that
    straddles the end (d = 19), float32 input: all equal the brute force."""
    monkeypatch.setattr(kernels, "_CAUCHY_BLOCK", 40)          # 40 entries: 2-5 rows a block
    X = _data(23, d=19, seed=4)
    Y = _data(13, d=19, seed=5)
    ref = _brute("cauchy", X, X, 3.0)
    np.testing.assert_allclose(cauchy_kernel(X, sigma=3.0), ref, rtol=_log_rtol(ref, 19))
    refy = _brute("cauchy", X, Y, 3.0)
    np.testing.assert_allclose(cauchy_kernel(X, Y, sigma=3.0), refy, rtol=_log_rtol(refy, 19))
    K32 = cauchy_kernel(X.astype(np.float32), sigma=3.0)
    assert K32.dtype == np.float64
    # float32 input: each coordinate rounded by eps32 |x| / 2 moves log k by at most that
    # over sigma per side (|d log(1 + t^2) / dD| <= 1 / sigma), so eps32 sum(|x| + |y|) / sigma
    # relative, ~3e-6 here (a float32 computation of the kernel itself is no worse; the
    # bound guards the float64 result against a wrong sigma or a lost coordinate group)
    s = np.sum(np.abs(X), axis=1)
    rel32 = EPS32 * np.max(s[:, None] + s[None, :]) / 3.0 + _log_rtol(ref, 19)
    np.testing.assert_allclose(K32, ref, rtol=rel32)


def test_cauchy_kernel_far_points_underflow_to_zero_without_nan():
    X = np.array([[0.0, 0.0], [1e200, 0.0], [1.0, 1.0], [1e25, 0.0]])   # (1e200)^2 = inf
    K = cauchy_kernel(X, sigma=1.0)
    assert np.all(np.isfinite(K))
    assert K[0, 1] == 0.0 and K[1, 2] == 0.0
    assert K[0, 2] == pytest.approx(0.25)
    assert K[0, 3] == pytest.approx(1e-50, rel=_log_rtol(K[0, 3:4], 2))  # tiny, not lost


def test_cauchy_with_sqrt2_bandwidth_matches_rbf_to_second_order():
    """The reason for CAUCHY_RBF_RATIO: at distance t the two kernels differ by O(t^4)."""
    rng = np.random.default_rng(0)
    direction = rng.normal(size=(1, 6))
    direction /= np.linalg.norm(direction)
    gaps = []
    for t in (0.2, 0.1, 0.05):
        P = np.vstack([np.zeros((1, 6)), t * direction])
        gaps.append(abs(cauchy_kernel(P, sigma=CAUCHY_RBF_RATIO)[0, 1] - rbf_kernel(P, sigma=1.0)
                        [0, 1]))
    assert gaps[0] / gaps[1] == pytest.approx(16, rel=0.1)      # halving t: /16, i.e. O(t^4)
    assert gaps[1] / gaps[2] == pytest.approx(16, rel=0.1)


@pytest.mark.parametrize("kernel", ["rbf", "laplacian", "cauchy"])
def test_kernel_matrix_sigma_is_checked(kernel):
    X = _data(5)
    with pytest.raises(ValueError, match=f"The {kernel} kernel needs sigma"):
        kernel_matrix(X, kernel=kernel)
    for bad in (0.0, -1.0, np.inf, np.nan):
        with pytest.raises(ValueError, match=f"sigma of the {kernel} kernel must be a positive"):
            kernel_matrix(X, kernel=kernel, sigma=bad)
    assert kernel_matrix(X, kernel=kernel, sigma=np.float32(2.0)).shape == (5, 5)


def test_kernel_matrix_unknown_name_lists_the_choices():
    with pytest.raises(ValueError, match=r"Unknown kernel 'laplace'; use one of \('rbf', "
                                         r"'laplacian', 'cauchy', 'linear'\)"):
        kernel_matrix(_data(4), kernel="laplace", sigma=1.0)


def test_cauchy_kernel_refuses_mismatched_features():
    with pytest.raises(ValueError, match="X has 11 features but Y has 3"):
        cauchy_kernel(_data(4), _data(4, d=3), sigma=1.0)


# ----------------------------------------------------------------------- bandwidth rules -----
def test_median_heuristic_per_kernel_on_hand_computed_distances():
    X = np.array([[0.0, 0.0], [1.0, 1.0], [3.0, 0.0], [3.0, 4.0]])
    # l1 distances: 2, 3, 7, 3, 5, 4 -> median 3.5, mean 4; squared l2: 2, 9, 25, 5, 13, 16
    assert median_heuristic(X, kernel="laplacian") == pytest.approx(3.5)
    assert median_heuristic(X, kernel="laplacian", rule="median_sq") == pytest.approx(1.75)
    assert median_heuristic(X, kernel="laplacian", rule="mean") == pytest.approx(4.0)
    assert median_heuristic(X, kernel="laplacian", rule="n_features") == 2.0
    m2 = np.median([2, 9, 25, 5, 13, 16])
    for rule, rbf in [("median", np.sqrt(m2)), ("median_sq", np.sqrt(m2 / 2)),
                      ("mean", np.mean(np.sqrt([2, 9, 25, 5, 13, 16]))),
                      ("n_features", 1.0)]:
        assert median_heuristic(X, rule=rule) == pytest.approx(rbf)
        assert median_heuristic(X, rule=rule, kernel="cauchy") == pytest.approx(np.sqrt(2) * rbf)


@pytest.mark.parametrize("kernel", RFF_KERNELS)
def test_median_heuristic_coincident_points_and_subsample(kernel):
    assert median_heuristic(np.ones((5, 3)), kernel=kernel) == 1.0
    X = _data(1500, d=4, seed=2)
    s = median_heuristic(X, kernel=kernel)        # 1,000-row seeded subsample
    assert s == median_heuristic(X, kernel=kernel)
    assert s != median_heuristic(X, kernel=kernel, random_state=1)
    assert s == pytest.approx(median_heuristic(X, kernel=kernel, max_samples=1500), rel=0.05)


def test_median_heuristic_refuses_unknown_kernel():
    with pytest.raises(ValueError, match=r"kernel must be one of \('rbf', 'laplacian', "
                                         r"'cauchy'\), got 'linear'"):
        median_heuristic(_data(5), kernel="linear")
    assert resolve_bandwidth(2.5, _data(5), kernel="cauchy") == 2.5
    assert resolve_bandwidth("mean", _data(5), kernel="laplacian") == \
        median_heuristic(_data(5), rule="mean", kernel="laplacian")


# ----------------------------------------------------------------------- random features -----
def test_rff_weights_draw_the_spectral_laws():
    """Cauchy frequencies for the Laplacian, Laplace for the Cauchy kernel, scale 1/sigma:
    the median |omega| sigma is 1 (|Cauchy|) and log 2 (|Laplace|), 1.0 would be the wrong
    pairing's value; the rbf draws stay the paper's standard_normal / sigma bit for bit."""
    sigma = 2.5
    lap = rff_weights(1, 200_000, sigma, 0, kernel="laplacian")
    cau = rff_weights(1, 200_000, sigma, 0, kernel="cauchy")
    assert np.median(np.abs(lap)) * sigma == pytest.approx(1.0, abs=0.01)
    assert np.median(np.abs(cau)) * sigma == pytest.approx(np.log(2), abs=0.01)
    np.testing.assert_array_equal(rff_weights(3, 7, sigma, 5),
                                  np.random.default_rng(5).standard_normal((3, 7)) / sigma)
    np.testing.assert_array_equal(rff_weights(3, 7, sigma, 5, kernel="laplacian"),
                                  np.random.default_rng(5).standard_cauchy((3, 7)) / sigma)
    np.testing.assert_array_equal(rff_weights(3, 7, sigma, 5, kernel="cauchy"),
                                  np.random.default_rng(5).laplace(size=(3, 7)) / sigma)


@pytest.mark.parametrize("kernel", ["laplacian", "cauchy"])
def test_rff_characteristic_function_is_the_kernel(kernel):
    """E cos(omega . D) = k(D) for one fixed difference D, within 5 standard errors."""
    sigma, N = 1.3, 400_000
    D = np.array([0.7, -1.1, 0.4])
    W = rff_weights(3, N, sigma, 1, kernel=kernel)
    c = np.cos(D @ W)
    exact = kernel_matrix(D[None, :], np.zeros((1, 3)), kernel=kernel, sigma=sigma)[0, 0]
    assert abs(c.mean() - exact) < 5 * c.std() / np.sqrt(N)


@pytest.mark.parametrize("kernel", RFF_KERNELS)
def test_rff_gram_converges_at_one_over_sqrt_n(kernel):
    """The random-feature Gram of each kernel tends to the exact one at the 1/sqrt(N) rate:
    log-log slope of the max error over N = 16..1024 (mean of 6 seeds) in (-0.62, -0.38)."""
    X = _data(120, d=5, seed=7)
    sigma = median_heuristic(X, kernel=kernel)
    K = kernel_matrix(X, kernel=kernel, sigma=sigma)
    Ns = [16, 64, 256, 1024]
    errs = []
    for N in Ns:
        e = []
        for seed in range(6):
            Z = rff_map(X, rff_weights(5, N, sigma, seed, kernel=kernel))
            e.append(np.abs(Z @ Z.T - K).max())
        errs.append(np.mean(e))
    slope = np.polyfit(np.log(Ns), np.log(errs), 1)[0]
    assert -0.62 < slope < -0.38, (kernel, errs, slope)
    assert errs[-1] < 0.15


@pytest.mark.parametrize("kernel", ["laplacian", "cauchy"])
def test_orthogonal_sampling_is_refused_beyond_rbf(kernel):
    with pytest.raises(ValueError, match=rf"sampling='orthogonal' applies to the rbf kernel "
                                         rf"only.*kernel={kernel!r}"):
        rff_weights(4, 8, 1.0, 0, sampling="orthogonal", kernel=kernel)
    with pytest.raises(ValueError, match="applies to the rbf kernel only"):
        RandomFourierFeatures(kernel=kernel, sampling="orthogonal").fit(_data(10))
    assert rff_weights(4, 8, 1.0, 0, sampling="orthogonal").shape == (4, 8)


def test_rff_weights_refuses_unknown_kernel():
    with pytest.raises(ValueError, match=r"kernel must be one of \('rbf', 'laplacian', "
                                         r"'cauchy'\), got 'linear'"):
        rff_weights(2, 3, 1.0, 0, kernel="linear")


@pytest.mark.parametrize("kernel", RFF_KERNELS)
def test_random_fourier_features_transformer_per_kernel(kernel):
    X = _data(60, d=4, seed=8)
    rff = RandomFourierFeatures(n_features=3000, kernel=kernel, random_state=0).fit(X)
    assert rff.sigma_ == median_heuristic(X, kernel=kernel)
    Omega, sigma = rff_frequencies(X, 3000, kernel=kernel, random_state=0)
    np.testing.assert_array_equal(rff.omega_, Omega)
    assert sigma == rff.sigma_
    Z = rff.transform(X)
    K = kernel_matrix(X, kernel=kernel, sigma=rff.sigma_)
    assert np.abs(Z @ Z.T - K).max() < 0.1
    np.testing.assert_allclose(np.sum(Z**2, axis=1), 1.0)
    assert rff.transform(X.astype(np.float32)).dtype == np.float32


def test_random_fourier_features_rejects_unknown_kernel():
    with pytest.raises(ValueError, match="'kernel' parameter of RandomFourierFeatures"):
        RandomFourierFeatures(kernel="linear").fit(_data(5))


# ----------------------------------------------------------------------- MMD -----------------
@pytest.mark.parametrize("kernel", ["laplacian", "cauchy"])
def test_mmd2_with_the_new_kernels_matches_the_blocks(kernel):
    X, Y = _data(30, d=3), _data(17, d=3, seed=9, shift=0.7)
    sigma = median_heuristic(np.vstack([X, Y]), kernel=kernel)
    K = lambda A, B: _brute(kernel, A, B, sigma)  # noqa: E731
    for unbiased in (False, True):
        assert mmd2(X, Y, kernel=kernel, unbiased=unbiased) == pytest.approx(
            mmd2_from_kernels(K(X, X), K(Y, Y), K(X, Y), unbiased=unbiased), rel=1e-10)
    assert mmd2(X, Y, kernel=kernel, bandwidth=0.8) == pytest.approx(
        mmd2_from_kernels(*(_brute(kernel, A, B, 0.8) for A, B in [(X, X), (Y, Y), (X, Y)])))


@pytest.mark.parametrize("kernel", RFF_KERNELS)
def test_mmd2_rff_with_a_kernel_tends_to_the_exact_mmd(kernel):
    X, Y = _data(200, d=3, seed=10), _data(150, d=3, seed=11, shift=0.8)
    exact = mmd2(X, Y, kernel=kernel)
    approx = mmd2_rff(X, Y, kernel=kernel, n_features=6000, random_state=0)
    assert approx == pytest.approx(exact, rel=0.1)
    Omega, _ = rff_frequencies(np.vstack([X, Y]), 6000, kernel=kernel, random_state=0)
    assert mmd2_rff(X, Y, Omega) == approx


def test_mmd2_rff_refuses_omega_and_a_kernel_together():
    X, Y = _data(10, d=3), _data(12, d=3, seed=1)
    Omega = rff_weights(3, 20, 1.0, 0)
    with pytest.raises(ValueError, match="so kernel, n_features would be ignored"):
        mmd2_rff(X, Y, Omega, kernel="rbf", n_features=20)
    assert mmd2_rff(X, Y, Omega) >= 0


# ----------------------------------------------------------------------- exact factor --------
@pytest.mark.parametrize("kernel", RFF_KERNELS)
def test_kernel_feature_factor_reproduces_the_kernel_and_new_points(kernel):
    X, T = _data(25, d=4), _data(6, d=4, seed=12)
    K = kernel_matrix(X, kernel=kernel, sigma=2.0)
    Phi, P = kernel_feature_factor(K)
    np.testing.assert_allclose(Phi @ Phi.T, K, atol=1e-10)
    np.testing.assert_allclose(K @ P, Phi, atol=1e-8)
    # a new point's features: k_x^T P; their inner products are the Nystroem kernel, exact
    # between a new point and a training row
    Kt = kernel_matrix(T, X, kernel=kernel, sigma=2.0)
    np.testing.assert_allclose((Kt @ P) @ Phi.T, Kt, atol=1e-8)


def test_kernel_feature_factor_drops_null_directions():
    X = _data(8, d=3)
    X = np.vstack([X, X[:3]])                        # 3 duplicated rows: rank 8
    K = rbf_kernel(X, sigma=1.5)
    Phi, P = kernel_feature_factor(K)
    assert Phi.shape == (11, 8) and P.shape == (11, 8)
    np.testing.assert_allclose(Phi @ Phi.T, K, atol=1e-10)
    with pytest.raises(ValueError, match="square kernel matrix"):
        kernel_feature_factor(K[:, :5])
    with pytest.raises(ValueError, match="no positive eigenvalue"):
        kernel_feature_factor(np.zeros((3, 3)))
