"""Edge cases of shiftlearn.kernels that the reference tests miss: ties in the permutation test
(issue #23, row 1), and both sides of its boundaries."""

import numpy as np
import pytest

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
