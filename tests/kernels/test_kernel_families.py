"""Edges of the Laplacian and Cauchy kernels, their random features and the exact feature factor
(shiftlearn.kernels; issue #23, from the mutation run): float32 input computed in float64, an
overflow that is a kernel value of 0 (silently), both sides of the eigenvalue cut of
``kernel_feature_factor``, every documented default of ``mmd2_rff`` and ``rff_frequencies``,
and error messages that name the offending parameter, sample or kernel."""

import warnings

import numpy as np
import pytest
from _tolerances import EPS, dot_atol, eigh_atol
from sklearn.base import clone

from shiftlearn.kernels import (
    RandomFourierFeatures,
    cauchy_kernel,
    check_rff_kernel,
    kernel_feature_factor,
    laplacian_kernel,
    median_heuristic,
    mmd2_rff,
    rff_frequencies,
    rff_weights,
)

EXACT = {"laplacian": laplacian_kernel, "cauchy": cauchy_kernel}


def _two_samples(seed=0, n=40, m=25, d=3):
    """Unequal sample sizes, the second shifted."""
    rng = np.random.default_rng(seed)
    return rng.normal(size=(n, d)), rng.normal(size=(m, d)) + 0.8


# ------------------------------------------------------------------ exact Laplacian / Cauchy
@pytest.mark.parametrize("kernel", sorted(EXACT))
def test_sigma_checks_name_the_kernel_and_refuse_booleans(kernel):
    X = np.zeros((3, 2))
    with pytest.raises(ValueError, match=f"The {kernel} kernel needs sigma"):
        EXACT[kernel](X, sigma=None)
    for bad in (True, False, 0.0, -1.0, np.inf):
        with pytest.raises(ValueError, match=f"sigma of the {kernel} kernel must be a positive"):
            EXACT[kernel](X, sigma=bad)
    # valid input is accepted: an integer bandwidth, a numpy float
    assert EXACT[kernel](X, sigma=2).shape == EXACT[kernel](X, sigma=np.float64(2.0)).shape


@pytest.mark.parametrize("kernel", sorted(EXACT))
def test_float32_input_is_computed_in_float64(kernel):
    """float32 X (and Y) give the kernel of their exact float64 values, not a float32 one
    (differences taken in float32 would be off by ~1e-7 relative)."""
    X, Y = _two_samples(1, n=9, m=6, d=11)
    X32, Y32 = X.astype(np.float32), Y.astype(np.float32)
    f = EXACT[kernel]
    for K, ref in ((f(X32, sigma=1.3), f(X32.astype(np.float64), sigma=1.3)),
                   (f(X32, Y32, sigma=1.3),
                    f(X32.astype(np.float64), Y32.astype(np.float64), sigma=1.3))):
        assert K.dtype == np.float64
        # the same float64 values: at most each coordinate's rounding of |log k|,
        # c d eps (1 + |log k|) relative, ~1e-13; float32 differences are ~1e-7
        rtol = 4 * X.shape[1] * EPS * (1 + np.max(np.abs(np.log(ref))))
        np.testing.assert_allclose(K, ref, rtol=rtol, atol=0)


@pytest.mark.parametrize("symmetric", [True, False])
def test_cauchy_overflow_is_a_kernel_value_of_zero_without_a_warning(symmetric):
    """Coordinates 1e100 apart: (1 + 1e200)^2 overflows inside a group of factors; the kernel is
    0 there (its true value, ~1e-400, is below the smallest double), silently, and the other
    entries are untouched."""
    X = np.array([[0.0, 0.0], [1e100, 1e100], [1.0, -2.0]])
    with warnings.catch_warnings():
        warnings.simplefilter("error")            # a RuntimeWarning would fail the test
        K = cauchy_kernel(X, None if symmetric else X.copy(), sigma=2.0)
    assert K[0, 1] == K[1, 0] == 0.0 and K[1, 2] == K[2, 1] == 0.0
    # 1/(1 + 1/4) * 1/(1 + 1), two coordinates: c d eps (1 + |log k|) relative
    assert K[0, 2] == pytest.approx(0.4, rel=4 * 2 * EPS * (1 + abs(np.log(0.4))))
    np.testing.assert_array_equal(np.diag(K), 1.0)


# ------------------------------------------------------------------ random Fourier features
@pytest.mark.parametrize("kernel, law", [("laplacian", "Cauchy"), ("cauchy", "Laplace")])
def test_orthogonal_refusal_names_the_kernels_frequency_law(kernel, law):
    with pytest.raises(ValueError, match=rf"frequencies are i\.i\.d\. {law} per coordinate"):
        rff_weights(3, 6, 1.0, 0, sampling="orthogonal", kernel=kernel)
    # valid input is accepted: the same kernel with i.i.d. frequencies, rbf with orthogonal
    assert rff_weights(3, 6, 1.0, 0, kernel=kernel).shape == (3, 6)
    assert rff_weights(3, 6, 1.0, 0, sampling="orthogonal").shape == (3, 6)


def test_check_rff_kernel_names_the_parameter():
    with pytest.raises(ValueError, match=r"^kernel_x must be one of \('rbf'"):
        check_rff_kernel("sigmoid", name="kernel_x")
    with pytest.raises(ValueError, match=r"^kernel must be one of"):
        check_rff_kernel("sigmoid")
    assert check_rff_kernel("cauchy", name="kernel_x") == "cauchy"


def test_rff_frequencies_default_kernel_and_dtype():
    X, _ = _two_samples(2)
    Omega, sigma = rff_frequencies(X, 10, random_state=0)       # kernel="rbf" by default
    assert sigma == median_heuristic(X)
    np.testing.assert_array_equal(Omega, rff_weights(3, 10, sigma, 0))
    Om32, sc = rff_frequencies(X, 10, kernel="cauchy", random_state=0, dtype=np.float32)
    assert Om32.dtype == np.float32
    np.testing.assert_array_equal(
        Om32, rff_weights(3, 10, sc, 0, kernel="cauchy").astype(np.float32))


def test_random_fourier_features_keeps_chunk_size():
    rff = RandomFourierFeatures(n_features=8, chunk_size=7, random_state=0)
    assert rff.get_params()["chunk_size"] == 7 and clone(rff).chunk_size == 7


# ------------------------------------------------------------------ mmd2_rff
def test_mmd2_rff_defaults_are_the_documented_ones():
    """kernel "rbf", bandwidth "median" on the pooled sample, 1,000 features, "gaussian"."""
    X, Y = _two_samples(3)
    Omega, _ = rff_frequencies(np.vstack([X, Y]), 1000, kernel="rbf", bandwidth="median",
                               sampling="gaussian", random_state=0)
    assert Omega.shape == (3, 1000)
    assert mmd2_rff(X, Y, random_state=0) == mmd2_rff(X, Y, Omega)


@pytest.mark.parametrize("kernel, sampling", [("rbf", "orthogonal"), ("laplacian", "gaussian")])
def test_mmd2_rff_uses_every_described_setting(kernel, sampling):
    X, Y = _two_samples(4)
    Omega, sigma = rff_frequencies(np.vstack([X, Y]), 64, kernel=kernel, bandwidth=0.7,
                                   sampling=sampling, random_state=3)
    assert sigma == 0.7 != median_heuristic(np.vstack([X, Y]), kernel=kernel)
    got = mmd2_rff(X, Y, kernel=kernel, bandwidth=0.7, n_features=64, sampling=sampling,
                   random_state=3)
    assert got == mmd2_rff(X, Y, Omega)                 # reproducible from the seed
    assert got != mmd2_rff(X, Y, kernel=kernel, bandwidth=0.7, n_features=64,
                           sampling=sampling, random_state=4)


@pytest.mark.parametrize("param, value", [("kernel", "rbf"), ("bandwidth", 1.0),
                                          ("n_features", 20), ("sampling", "gaussian"),
                                          ("random_state", 0)])
def test_mmd2_rff_names_the_setting_omega_makes_useless(param, value):
    X, Y = _two_samples(5)
    Omega = rff_weights(3, 20, 1.0, 0)
    with pytest.raises(ValueError, match=f"so {param} would be ignored"):
        mmd2_rff(X, Y, Omega, **{param: value})


def test_mmd2_rff_names_the_sample_with_nan():
    X, Y = _two_samples(6)
    Xn, Yn = X.copy(), Y.copy()
    Xn[2, 1] = Yn[3, 0] = np.nan
    with pytest.raises(ValueError, match="Input X contains NaN"):
        mmd2_rff(Xn, Y, n_features=20, random_state=0)
    with pytest.raises(ValueError, match="Input Y contains NaN"):
        mmd2_rff(X, Yn, n_features=20, random_state=0)


# ------------------------------------------------------------------ kernel_feature_factor
def test_feature_factor_of_a_rank_one_kernel_has_one_column():
    """All points coincide: K is all ones (any kernel), one feature of value 1 per row."""
    K = np.ones((4, 4))
    Phi, P = kernel_feature_factor(K)
    assert Phi.shape == P.shape == (4, 1)
    # a symmetric eigensolver's backward error, c n eps ||K|| (Weyl), plus the products'
    # (a missing square root of the eigenvalue is off by 1)
    atol = eigh_atol(K) + dot_atol(Phi, Phi.T)
    np.testing.assert_allclose(Phi @ Phi.T, K, atol=atol)
    np.testing.assert_allclose(K @ P, Phi, atol=atol * np.linalg.norm(P, 2))


def test_feature_factor_with_a_largest_eigenvalue_below_one():
    """A kernel matrix need not have eigenvalues above 1 (a scaled kernel, one row)."""
    Phi, P = kernel_feature_factor(np.array([[0.5]]))
    np.testing.assert_allclose(Phi, [[np.sqrt(0.5)]])
    np.testing.assert_allclose(P, [[1 / np.sqrt(0.5)]])
    K = 0.1 * laplacian_kernel(_two_samples(7, n=6)[0], sigma=1.0)
    Phi, _ = kernel_feature_factor(K)
    # the eigensolver's backward error plus the product's (no eigenvalue is cut here)
    np.testing.assert_allclose(Phi @ Phi.T, K, atol=eigh_atol(K) + dot_atol(Phi, Phi.T))


def test_feature_factor_cut_both_sides_and_relative_to_the_largest():
    """Eigenvalues at or below rtol * lam_max are dropped; just above are kept."""
    assert kernel_feature_factor(np.diag([1.0, 1e-10]))[0].shape == (2, 1)      # at: dropped
    assert kernel_feature_factor(np.diag([1.0, 2e-10]))[0].shape == (2, 2)      # above: kept
    assert kernel_feature_factor(np.diag([2.0, 0.0]), rtol=0.0)[0].shape == (2, 1)
    P = kernel_feature_factor(np.diag([2.0, 0.0]), rtol=0.0)[1]
    assert np.all(np.isfinite(P))
    # the cut scales with lam_max: 0.3 < 0.1 * 4 is dropped, 0.5 > 0.1 * 4 is kept
    assert kernel_feature_factor(np.diag([4.0, 0.3]), rtol=0.1)[0].shape == (2, 1)
    assert kernel_feature_factor(np.diag([4.0, 0.5]), rtol=0.1)[0].shape == (2, 2)


def test_feature_factor_refuses_empty_and_non_finite_matrices():
    with pytest.raises(ValueError, match="no positive eigenvalue"):
        kernel_feature_factor(np.zeros((0, 0)))
    K = cauchy_kernel(_two_samples(8, n=6)[0], sigma=1.0)
    K[0, 1] = K[1, 0] = np.nan
    with pytest.raises(ValueError, match="infs or NaNs"):
        kernel_feature_factor(K)


def test_feature_factor_of_a_float32_matrix_is_computed_in_float64():
    K = laplacian_kernel(_two_samples(9, n=12)[0], sigma=1.5)
    Phi32, P32 = kernel_feature_factor(K.astype(np.float32))
    Phi, P = kernel_feature_factor(K.astype(np.float32).astype(np.float64))
    assert Phi32.dtype == P32.dtype == np.float64
    # both factor the same float64 values: each reproduces K to the eigensolver's backward
    # error plus the product's; a float32 factor would be ~1e-7 off
    Kd = K.astype(np.float32).astype(np.float64)
    atol = 2 * (eigh_atol(Kd) + dot_atol(Phi, Phi.T))
    np.testing.assert_allclose(Phi32 @ Phi32.T, Phi @ Phi.T, rtol=0, atol=atol)
