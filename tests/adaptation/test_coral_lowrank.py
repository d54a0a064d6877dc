"""CORAL's factored route (a float shrinkage, fewer rows than features): the map equals the
dense route's formula, written out here, to a bound from the conditioning; the route is taken
exactly when it applies, and the dense route is untouched otherwise."""

import numpy as np
import pytest
import scipy.linalg
from sklearn.covariance import empirical_covariance, shrunk_covariance

from shiftlearn.adaptation import CORAL

EPS = np.finfo(np.float64).eps


def _domains(n_s, n_t, d, seed=0):
    rng = np.random.default_rng(seed)
    scales = np.exp(rng.normal(size=d))              # columns of very different scales
    Xs = rng.normal(size=(n_s, d)) * scales + 1.0
    Xt = (rng.normal(size=(n_t, d)) @ rng.normal(size=(d, d)) / np.sqrt(d)) * scales - 0.5
    X = np.vstack([Xs, Xt])
    sd = np.r_[np.ones(n_s, int), -2 * np.ones(n_t, int)]
    return X, sd


def _dense_power(X, shrinkage, p):
    C = shrunk_covariance(empirical_covariance(X), shrinkage=shrinkage)
    w, V = scipy.linalg.eigh(C)
    w = np.maximum(w, C.shape[0] * EPS * w[-1])
    return (V * w ** p) @ V.T, w[-1] / w[0]


@pytest.mark.parametrize("shrinkage", [0.05, 0.3, 1.0])
@pytest.mark.parametrize("shape", [(30, 25, 80), (12, 40, 60)])
def test_factored_map_equals_the_dense_formula(shrinkage, shape):
    n_s, n_t, d = shape
    X, sd = _domains(n_s, n_t, d)
    est = CORAL(shrinkage=shrinkage).fit(X, None, sd)
    assert est.powers_ is not None                   # the factored route was taken
    Ps, cond_s = _dense_power(X[sd > 0], shrinkage, -0.5)
    Qt, cond_t = _dense_power(X[sd < 0], shrinkage, 0.5)
    A = Ps @ Qt
    # both routes are backward stable: a power of C moves by about d eps cond(C) relative
    bound = 100 * d * EPS * (cond_s + cond_t) * np.abs(A).max()
    np.testing.assert_allclose(est.matrix_, A, rtol=0, atol=bound)
    assert bound < 1e-8 * np.abs(A).max()            # the 1e-8 holds a fortiori
    Z = est.transform(X, sample_domain=sd)
    ref = (X[sd > 0] - X[sd > 0].mean(0)) @ A + X[sd < 0].mean(0)
    np.testing.assert_allclose(Z[sd > 0], ref, rtol=0,
                               atol=bound * np.abs(X).max() * d)
    np.testing.assert_array_equal(Z[sd < 0], X[sd < 0])       # target rows as they are


def test_the_dense_route_is_kept_where_the_factored_one_does_not_apply():
    X, sd = _domains(120, 100, 30)                     # more rows than features
    assert CORAL(shrinkage=0.3).fit(X, None, sd).powers_ is None
    X, sd = _domains(70, 20, 60)                       # one domain with more rows
    assert CORAL(shrinkage=0.3).fit(X, None, sd).powers_ is None
    X, sd = _domains(20, 20, 60)
    assert CORAL(shrinkage="auto").fit(X, None, sd).powers_ is None   # Ledoit-Wolf: dense
    with pytest.raises(ValueError, match="source covariance is singular"):
        CORAL(shrinkage=0.0).fit(X, None, sd)


def test_at_the_boundary_rows_equal_features():
    X, sd = _domains(40, 39, 40)                       # n_s == d: dense; one row fewer: factored
    assert CORAL(shrinkage=0.3).fit(X, None, sd).powers_ is None
    X, sd = _domains(39, 39, 40)
    est = CORAL(shrinkage=0.3).fit(X, None, sd)
    assert est.powers_ is not None
    Ps, cs = _dense_power(X[sd > 0], 0.3, -0.5)
    Qt, ct = _dense_power(X[sd < 0], 0.3, 0.5)
    A = Ps @ Qt
    np.testing.assert_allclose(est.matrix_, A, rtol=0,
                               atol=100 * 40 * EPS * (cs + ct) * np.abs(A).max())


def test_constant_features_are_refused_on_the_factored_route():
    X = np.ones((10, 30))
    sd = np.r_[np.ones(5, int), -np.ones(5, int)]
    with pytest.raises(ValueError, match="every feature is constant"):
        CORAL(shrinkage=0.5).fit(X, None, sd)


@pytest.mark.parametrize("shape", [(30, 25, 80), (12, 40, 60), (5, 4, 300)])
def test_ledoit_wolf_on_the_factored_route_equals_scikit_learns(shape):
    from sklearn.covariance import ledoit_wolf

    n_s, n_t, d = shape
    X, sd = _domains(n_s, n_t, d, seed=2)
    est = CORAL(shrinkage="ledoit_wolf").fit(X, None, sd)
    assert est.powers_ is not None
    powers = []
    for mask, p in ((sd > 0, -0.5), (sd < 0, 0.5)):
        C, _ = ledoit_wolf(X[mask])
        w, V = scipy.linalg.eigh(C)
        w = np.maximum(w, d * EPS * w[-1])
        powers.append(((V * w ** p) @ V.T, w[-1] / w[0]))
    A = powers[0][0] @ powers[1][0]
    bound = 100 * d * EPS * (powers[0][1] + powers[1][1]) * np.abs(A).max()
    np.testing.assert_allclose(est.matrix_, A, rtol=0, atol=bound)
    X2, sd2 = _domains(120, 100, 30)                 # more rows than features: the dense route
    dense = CORAL(shrinkage="ledoit_wolf").fit(X2, None, sd2)
    assert dense.powers_ is None


def test_auto_takes_the_factored_ledoit_wolf_beyond_1024_features():
    """``"auto"`` is Ledoit-Wolf on standardised columns up to 1,024 features (or with a
    domain of at least as many rows as features), and the factored Ledoit-Wolf on the columns
    as they are beyond: the same map as ``shrinkage="ledoit_wolf"``, bit for bit, and
    ``shrinkage_`` says which was used."""
    from shiftlearn.adaptation._coral import AUTO_DENSE_MAX_FEATURES

    rng = np.random.default_rng(0)
    for d, expect in ((AUTO_DENSE_MAX_FEATURES, "auto"), (AUTO_DENSE_MAX_FEATURES + 1,
                                                          "ledoit_wolf")):
        X = rng.normal(size=(50, d)) * rng.uniform(0.5, 2.0, size=d)
        sd = np.where(np.arange(50) < 20, 1, -1)
        auto = CORAL().fit(X, None, sd)
        assert auto.shrinkage_ == expect
        assert (auto.powers_ is None) == (expect == "auto")
        same = CORAL(shrinkage=expect).fit(X, None, sd)
        np.testing.assert_array_equal(auto.transform(X, sd), same.transform(X, sd))
    X = rng.normal(size=(1200, AUTO_DENSE_MAX_FEATURES + 1))       # a domain with n >= d
    sd = np.where(np.arange(1200) < 1100, 1, -1)
    assert CORAL().fit(X, None, sd).shrinkage_ == "auto"
