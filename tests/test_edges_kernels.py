"""Edge cases of shiftlearn.kernels that the reference tests miss: ties in the permutation test
(issue #23, row 1), and both sides of its boundaries."""

import numpy as np
import pytest
from _tolerances import EPS, mean_atol, rff_err

from shiftlearn.kernels import mmd_permutation_test


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
