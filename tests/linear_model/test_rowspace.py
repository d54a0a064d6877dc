"""RowSpaceLogisticRegression: scikit-learn's LogisticRegression solved in the span of the
training rows when d >> n. The L2 problem has one minimiser, which lies in that span, so at
a tight solver tolerance both fits agree to the tolerance; the basis is exact (an isometry of
the span), so agreement is limited by the solver alone."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.linear_model import LogisticRegression

from shiftlearn.linear_model import RowSpaceLogisticRegression, row_space_basis

TIGHT = {"tol": 1e-12, "max_iter": 20000}


def _wide(n=60, d=700, k=3, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    y = (X[:, :k] @ rng.normal(size=k) > 0).astype(int) + (X[:, k] > 0.5)
    return X, y


def _assert_same_model(ours, ref, X):
    scale = np.abs(ref.coef_).max()
    # both are the one minimiser to the solver's accuracy: L-BFGS-B stops at the gradient
    # tolerance or when the objective's relative decrease falls below about 1e-13 (its
    # factr), and with the penalty's strong convexity (modulus of order 1 here) the latter
    # leaves the coefficients within about sqrt(1e-13 f) of it
    np.testing.assert_allclose(ours.coef_, ref.coef_, atol=1e-6 * max(scale, 1.0))
    np.testing.assert_allclose(ours.intercept_, ref.intercept_, atol=1e-6)
    np.testing.assert_array_equal(ours.predict(X), ref.predict(X))


@pytest.mark.parametrize("C", [0.01, 1.0, 100.0])
def test_wide_rows_give_sklearns_minimiser(C):
    X, y = _wide()
    ours = RowSpaceLogisticRegression(C=C, **TIGHT).fit(X, y)
    _assert_same_model(ours, LogisticRegression(C=C, **TIGHT).fit(X, y), X)
    assert ours.coef_.shape == (3, 700) and ours.n_features_in_ == 700


def test_binary_weighted_and_class_weighted():
    X, y = _wide(k=2)
    y = (y > 0).astype(int)
    w = np.random.default_rng(1).uniform(0, 3, len(y))
    kw = dict(class_weight="balanced", **TIGHT)
    ours = RowSpaceLogisticRegression(**kw).fit(X, y, sample_weight=w)
    _assert_same_model(ours, LogisticRegression(**kw).fit(X, y, sample_weight=w), X)


def test_repeated_rows_take_the_eigen_route_and_give_the_same_minimiser():
    """Repeated rows make X X^T singular: the Cholesky factor is refused (its condition) and
    the eigen-decomposition keeps the rank; the minimiser is unchanged."""
    X, y = _wide(n=40)
    Xd, yd = np.vstack([X, X[:15]]), np.r_[y, y[:15]]
    Z, T = row_space_basis(Xd)
    assert Z.shape == (55, 40)
    ours = RowSpaceLogisticRegression(**TIGHT).fit(Xd, yd)
    _assert_same_model(ours, LogisticRegression(**TIGHT).fit(Xd, yd), Xd)


@pytest.mark.parametrize("repeat", [False, True])
def test_the_basis_is_an_isometry_of_the_row_span(repeat):
    rng = np.random.default_rng(2)
    X = rng.normal(size=(30, 200))
    if repeat:
        X = np.vstack([X, X[:5] * 1.0])
    Z, T = row_space_basis(X)
    B = X.T @ T                                    # d x r: the basis of the span
    np.testing.assert_allclose(B.T @ B, np.eye(B.shape[1]), atol=1e-9)
    np.testing.assert_allclose(X @ B, Z, atol=1e-9 * np.abs(Z).max())
    # the span is the rows' span: projecting the rows on it leaves them unchanged
    np.testing.assert_allclose(X @ B @ B.T, X, atol=1e-9 * np.abs(X).max())


def test_tall_or_sparse_rows_are_sklearns_fit_bit_for_bit():
    from scipy import sparse

    X, y = _wide(n=200, d=300)                     # 2 n > d: scikit-learn's fit
    for data in (X, sparse.csr_matrix(_wide(n=60, d=700)[0])):
        yy = y if data.shape[0] == 200 else _wide(n=60, d=700)[1]
        ours = RowSpaceLogisticRegression().fit(data, yy)
        ref = LogisticRegression().fit(data, yy)
        np.testing.assert_array_equal(ours.coef_, ref.coef_)
        np.testing.assert_array_equal(ours.n_iter_, ref.n_iter_)


def test_other_penalties_are_sklearns_fit():
    X, y = _wide()
    for kw in ({"solver": "liblinear"}, {"C": np.inf}, {"l1_ratio": 1.0, "solver": "saga"}):
        ours = RowSpaceLogisticRegression(max_iter=50, **kw)
        assert not ours._in_row_space(X)


def test_feature_names_are_kept():
    pd = pytest.importorskip("pandas")
    X, y = _wide()
    df = pd.DataFrame(X, columns=[f"f{i}" for i in range(X.shape[1])])
    clf = RowSpaceLogisticRegression().fit(df, y)
    assert list(clf.feature_names_in_) == list(df.columns)
    with pytest.warns(UserWarning, match="feature names"):
        clf.predict(X)                             # names fitted, none given: sklearn warns


def test_float32_rows_fit():
    X, y = _wide()
    ref = RowSpaceLogisticRegression(**TIGHT).fit(X, y)
    ours = RowSpaceLogisticRegression(**TIGHT).fit(X.astype(np.float32), y)
    np.testing.assert_allclose(ours.coef_, ref.coef_, atol=1e-5 * np.abs(ref.coef_).max())


def test_warm_start_reaches_the_same_minimiser_in_fewer_iterations():
    X, y = _wide()
    cold = RowSpaceLogisticRegression(**TIGHT).fit(X, y)
    warm = RowSpaceLogisticRegression(warm_start=True, **TIGHT).fit(X, y)
    first = int(warm.n_iter_.max())
    warm.fit(X[:50], y[:50])                       # new rows: starts from the last coef_
    _assert_same_model(warm, LogisticRegression(**TIGHT).fit(X[:50], y[:50]), X[:50])
    again = RowSpaceLogisticRegression(warm_start=True, **TIGHT).fit(X, y)
    again.fit(X, y)
    assert int(again.n_iter_.max()) < first
    np.testing.assert_allclose(again.coef_, cold.coef_, atol=1e-6)


def test_warm_start_with_another_width_is_refused_with_the_fix():
    X, y = _wide()
    clf = RowSpaceLogisticRegression(warm_start=True).fit(X, y)
    with pytest.raises(ValueError, match="refit without warm_start"):
        clf.fit(X[:, :600], y)


def test_nan_and_single_class_are_refused_as_sklearn_refuses():
    X, y = _wide()
    bad = X.copy()
    bad[0, 0] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        RowSpaceLogisticRegression().fit(bad, y)
    with pytest.raises(ValueError, match="class"):
        RowSpaceLogisticRegression().fit(X, np.zeros(len(y), int))


def test_the_library_starts_it_warm():
    from shiftlearn._warm import _logistic_step

    assert _logistic_step(RowSpaceLogisticRegression()) is not None


def test_the_commands_logistic_regression_is_it():
    from shiftlearn.workflow import make_estimator

    assert isinstance(make_estimator("logreg")[-1], RowSpaceLogisticRegression)


def test_weights_equal_repeated_rows_at_a_tight_tolerance():
    """Integer weights and the rows repeated are the same problem (scikit-learn's check does
    this at the default tol, where the two bases stop the solver at different iterates)."""
    X, y = _wide(n=40)
    w = np.random.default_rng(3).integers(0, 3, len(y))
    rep = np.repeat(np.arange(len(y)), w)
    a = RowSpaceLogisticRegression(**TIGHT).fit(X, y, sample_weight=w)
    b = RowSpaceLogisticRegression(**TIGHT).fit(X[rep], y[rep])
    np.testing.assert_allclose(a.coef_, b.coef_, atol=1e-6 * np.abs(b.coef_).max())
