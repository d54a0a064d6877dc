"""Random-feature adapters with the Laplacian and Cauchy kernels tend to their exact counterparts
(issue #20): RF-TCA (coefficients) -> TCA, RF-TCA (the paper's) -> R-TCA
(``RFTCA(exact=True)``), RF-SCA -> SCA, all with the same kernel."""

import numpy as np
import pytest
from scipy.linalg import eigh

from shiftlearn.adaptation import RFSCA, RFTCA, SCA, TCA, FitMemory
from shiftlearn.kernels import RFF_KERNELS, kernel_matrix, median_heuristic

KERNELS = ["laplacian", "cauchy"]


def _cluster_data(n_s=50, n_t=30, seed=0):
    """Three separated classes, unequal domains (150 source, 90 target rows), target shifted."""
    rng = np.random.default_rng(seed)
    centers = np.array([[0.0, 0, 0], [4, 0, 0], [0, 4, 0]])
    ys = np.repeat(np.arange(3), n_s)
    yt = np.repeat(np.arange(3), n_t)
    Xs = centers[ys] + 0.7 * rng.normal(size=(3 * n_s, 3))
    Xt = centers[yt] + 0.7 * rng.normal(size=(3 * n_t, 3)) + np.array([1.0, 1.0, 1.5])
    X = np.vstack([Xs, Xt])
    y = np.r_[ys, -np.ones(3 * n_t, int)]
    sd = np.r_[np.ones(3 * n_s, int), -2 * np.ones(3 * n_t, int)]
    return X, y, sd


def _min_cos(A, B):
    """Smallest principal-angle cosine between the column spans of centred A and B."""
    Qa, _ = np.linalg.qr(A - A.mean(0))
    Qb, _ = np.linalg.qr(B - B.mean(0))
    return float(np.linalg.svd(Qa.T @ Qb, compute_uv=False).min())


@pytest.mark.parametrize("kernel", RFF_KERNELS)
def test_exact_coefficients_option_is_exact_tca(kernel):
    """RFTCA(exact=True, penalty="coefficients") solves TCA's problem on the exact kernel:
    the same eigenvalues and embedding (training rows and new points) as TCA."""
    X, y, sd = _cluster_data()
    T = _cluster_data(n_s=4, n_t=3, seed=5)[0]
    tca = TCA(n_components=3, mu=2.0, kernel=kernel).fit(X, y, sample_domain=sd)
    ex = RFTCA(n_components=3, mu=2.0, kernel=kernel, exact=True,
               penalty="coefficients").fit(X, y, sample_domain=sd)
    assert ex.sigma_ == tca.sigma_ == median_heuristic(X, kernel=kernel)
    assert ex.omega_ is None
    np.testing.assert_allclose(ex.eigenvalues_, tca.eigenvalues_, rtol=1e-6)
    for A in (X, T):
        assert _min_cos(ex.transform(A), tca.transform(A)) > 1 - 1e-6


@pytest.mark.parametrize("kernel", RFF_KERNELS)
def test_exact_features_option_is_rtca(kernel):
    """RFTCA(exact=True) (the paper's penalty) is R-TCA on the exact kernel: leading
    eigenvectors of ``K H K w = lam (K + mu K l l^T K) w`` (dense reference)."""
    X, y, sd = _cluster_data()
    mu = 2.0
    ex = RFTCA(n_components=2, mu=mu, kernel=kernel, exact=True).fit(X, y, sample_domain=sd)
    K = kernel_matrix(X, kernel=kernel, sigma=ex.sigma_)
    n = K.shape[0]
    ell = np.where(sd > 0, 1.0 / np.sum(sd > 0), -1.0 / np.sum(sd < 0))
    Kc = K - K.mean(0)
    u = K @ ell
    w, W = eigh(Kc.T @ Kc, K + mu * np.outer(u, u) + 1e-10 * np.eye(n),
                subset_by_index=[n - 2, n - 1])
    assert _min_cos(K @ W, ex.transform(X)) > 1 - 1e-5
    np.testing.assert_allclose(np.sort(ex.eigenvalues_), w, rtol=1e-5)


@pytest.mark.parametrize("kernel", KERNELS)
@pytest.mark.parametrize("penalty", ["coefficients", "features"])
def test_rftca_tends_to_its_exact_counterpart(kernel, penalty):
    X, y, sd = _cluster_data()
    kw = dict(n_components=2, mu=1.0, kernel=kernel, penalty=penalty)
    exact = RFTCA(exact=True, **kw).fit(X, y, sample_domain=sd)
    Ze = exact.transform(X)
    cos, eig = {}, {}
    for N in (20, 2000):
        rf = RFTCA(n_features=N, random_state=1, **kw).fit(X, y, sample_domain=sd)
        assert rf.sigma_ == exact.sigma_
        cos[N] = _min_cos(Ze, rf.transform(X))
        eig[N] = np.max(np.abs(rf.eigenvalues_ / exact.eigenvalues_ - 1))
    assert cos[2000] > 0.98, cos
    assert cos[2000] > cos[20]
    assert eig[2000] < 0.15 and eig[2000] < eig[20]


@pytest.mark.parametrize("kernel", KERNELS)
def test_rfsca_tends_to_exact_sca_with_the_same_kernel(kernel):
    X, y, sd = _cluster_data()
    kw = dict(n_components=2, beta=0.5, delta=1.0, kernel=kernel)
    exact = SCA(**kw).fit(X, y, sample_domain=sd)
    assert exact.sigma_ == median_heuristic(X, kernel=kernel)
    Ze = exact.transform(X)
    cos = {}
    for N in (15, 2000):
        rf = RFSCA(n_features=N, random_state=0, **kw).fit(X, y, sample_domain=sd)
        assert rf.sigma_ == exact.sigma_
        cos[N] = _min_cos(Ze, rf.transform(X))
        if N == 2000:
            np.testing.assert_allclose(rf.eigenvalues_, exact.eigenvalues_, rtol=0.2)
    assert cos[2000] > 0.95, cos
    assert cos[2000] > cos[15]


@pytest.mark.parametrize("kernel", KERNELS)
def test_rf_frequencies_follow_the_kernel(kernel):
    X, y, sd = _cluster_data()
    rf = RFTCA(n_components=2, n_features=50, kernel=kernel, random_state=3).fit(X, y, sd)
    from shiftlearn.kernels import rff_weights

    np.testing.assert_array_equal(rf.omega_, rff_weights(3, 50, rf.sigma_, 3, kernel=kernel))
    with pytest.raises(ValueError, match="applies to the rbf kernel only"):
        RFTCA(kernel=kernel, sampling="orthogonal").fit(X, y, sd)
    with pytest.raises(ValueError, match="applies to the rbf kernel only"):
        RFSCA(kernel=kernel, sampling="orthogonal").fit(X, y, sd)


def test_random_features_need_a_shift_invariant_kernel():
    X, y, sd = _cluster_data()
    with pytest.raises(ValueError, match=r"RFTCA\(kernel='linear'\) needs exact=True"):
        RFTCA(kernel="linear").fit(X, y, sd)
    with pytest.raises(ValueError, match="needs exact=True"):
        RFTCA(kernel=lambda A, B: A @ B.T).fit(X, y, sd)
    with pytest.raises(ValueError, match="'kernel' parameter of RFSCA"):
        RFSCA(kernel="linear").fit(X, y, sd)
    # the exact option takes any kernel, the linear one included
    lin = RFTCA(n_components=2, kernel="linear", exact=True).fit(X, y, sd)
    assert lin.sigma_ is None and lin.transform(X).shape == (X.shape[0], 2)


def test_exact_option_has_no_statistics_path():
    X, y, sd = _cluster_data()
    rf = RFTCA(n_components=2, n_features=30, random_state=0, keep_stats=True).fit(X, y, sd)
    with pytest.raises(ValueError, match="exact=True"):
        RFTCA(n_components=2, exact=True).fit_from_stats(rf.stats_, omega=rf.omega_)


@pytest.mark.parametrize("kernel", ["laplacian", lambda A, B: (A @ B.T + 1.0) ** 2])
def test_exact_option_with_memory_gives_the_same_fit(kernel):
    """A FitMemory keeps the exact feature factor across mu and n_components (named kernels;
    a callable is recomputed): the same embedding as fits without it."""
    X, y, sd = _cluster_data()
    mem = FitMemory()
    for mu, k in [(1.0, 3), (10.0, 2), (1.0, 2)]:
        kw = dict(n_components=k, mu=mu, kernel=kernel, exact=True)
        plain = RFTCA(**kw).fit(X, y, sd)
        kept = RFTCA(memory=mem, **kw).fit(X, y, sd)
        np.testing.assert_allclose(np.abs(kept.transform(X)), np.abs(plain.transform(X)),
                                   rtol=1e-6, atol=1e-9)
        np.testing.assert_allclose(kept.eigenvalues_, plain.eigenvalues_, rtol=1e-8)
    assert (mem.hits > 0) == isinstance(kernel, str)
