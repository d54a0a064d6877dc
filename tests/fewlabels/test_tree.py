"""The presorted least-squares tree of the two-stage TrAdaBoost.R2 (shiftlearn.fewlabels._tree)
against scikit-learn's DecisionTreeRegressor, and its numba path against its numpy path."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.tree import DecisionTreeRegressor

from shiftlearn._numba import HAVE_NUMBA
from shiftlearn.fewlabels import TrAdaBoostR2
from shiftlearn.fewlabels._tree import LeastSquaresTree, Presorted, presorted_depth


def _rows(seed):
    """Random rows of every awkward kind: rounded (tied) features, zero weights, tiny trees."""
    rng = np.random.default_rng(seed)
    n, d = int(rng.integers(2, 200)), int(rng.integers(1, 12))
    X = rng.normal(size=(n, d))
    if seed % 3 == 0:
        X = np.round(X, 1)
    y = X[:, 0] ** 2 + rng.normal(size=n)
    w = rng.exponential(size=n)
    if seed % 4 == 0:
        w[rng.random(n) < 0.3] = 0.0
    return X, y, w


@pytest.mark.parametrize("depth", [3, 8])
@pytest.mark.parametrize("seed", range(30))
def test_the_tree_fits_the_rows_as_sklearns_does(seed, depth):
    # The best split of a node is unique unless two splits cut the same rows of positive
    # weight (a tie broken by feature index here, by a random draw in scikit-learn; rows of
    # weight 0 are in no node): the rows of positive weight get the same leaf values.
    X, y, w = _rows(seed)
    ours = LeastSquaresTree(max_depth=depth).fit(Presorted(X), y, w)
    sk = DecisionTreeRegressor(max_depth=depth, random_state=0).fit(X, y, sample_weight=w)
    pos = w > 0
    np.testing.assert_allclose(ours.fit_predictions_[pos], sk.predict(X)[pos],
                               rtol=1e-12, atol=1e-12)
    np.testing.assert_array_equal(ours.predict(X), ours.fit_predictions_)


@pytest.mark.parametrize("depth", [1, 2, 3])
def test_large_nodes_give_sklearns_thresholds(depth):
    # continuous features, every node hundreds of rows: no tie, the same tree everywhere
    rng = np.random.default_rng(depth)
    X = rng.normal(size=(3000, 4))
    y = np.sin(2 * X[:, 0]) + X[:, 1] * X[:, 2] + 0.1 * rng.normal(size=3000)
    w = rng.uniform(0.5, 2.0, size=3000)
    ours = LeastSquaresTree(max_depth=depth).fit(Presorted(X), y, w)
    sk = DecisionTreeRegressor(max_depth=depth, random_state=0).fit(X, y, sample_weight=w)
    inner = sk.tree_.feature >= 0
    assert sk.tree_.n_node_samples.min() > 2     # the premise: no node of two rows to cut
    assert sorted(sk.tree_.threshold[inner]) == sorted(ours.threshold_[ours.feature_ >= 0])
    X_new = rng.normal(size=(2000, 4))
    np.testing.assert_allclose(ours.predict(X_new), sk.predict(X_new), rtol=1e-12)


def test_a_tie_between_features_goes_to_the_first():
    rng = np.random.default_rng(0)
    x = rng.normal(size=100)
    X = np.c_[x, 2 * x]                          # the same cuts, the same scores
    ours = LeastSquaresTree(max_depth=2).fit(Presorted(X), np.sign(x), np.ones(100))
    assert set(ours.feature_[ours.feature_ >= 0]) == {0}


def test_pure_and_single_row_nodes_are_leaves():
    X = np.arange(6.0)[:, None]
    tree = LeastSquaresTree(max_depth=5).fit(Presorted(X), np.array([1.0, 1, 1, 5, 5, 7]),
                                             np.ones(6))
    # the root cuts 1,1,1 | 5,5,7 (the largest drop); the pure left side stays a leaf
    np.testing.assert_array_equal(tree.fit_predictions_, [1, 1, 1, 5, 5, 7])
    assert (tree.feature_ >= 0).sum() == 2
    one = LeastSquaresTree(max_depth=3).fit(Presorted(X[:1]), np.array([2.0]), np.ones(1))
    assert one.feature_.tolist() == [-1] and one.value_.tolist() == [2.0]


@pytest.mark.skipif(not HAVE_NUMBA, reason="numba is not installed")
@pytest.mark.parametrize("seed", range(12))
def test_numba_and_numpy_grow_the_same_tree_bit_for_bit(seed, monkeypatch):
    X, y, w = _rows(seed)
    rows = Presorted(X)
    trees = []
    for flag in ("1", "0"):
        monkeypatch.setenv("SHIFTLEARN_NUMBA", flag)
        trees.append(LeastSquaresTree(max_depth=3).fit(rows, y, w))
    a, b = trees
    for name in ("feature_", "threshold_", "left_", "right_", "value_", "fit_predictions_"):
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name))


def test_only_plain_regression_trees_are_grown_from_sorted_rows():
    from sklearn.linear_model import Ridge

    assert presorted_depth(None) == 3
    assert presorted_depth(DecisionTreeRegressor(max_depth=5, random_state=1)) == 5
    assert presorted_depth(DecisionTreeRegressor(max_depth=8)) == 8
    for other in (DecisionTreeRegressor(), DecisionTreeRegressor(max_depth=9),   # deep: theirs
                  DecisionTreeRegressor(min_samples_leaf=2), Ridge(),
                  DecisionTreeRegressor(max_depth=0),   # scikit-learn's fit refuses it
                  DecisionTreeRegressor(max_features=1), DecisionTreeRegressor(splitter="random"),
                  DecisionTreeRegressor(criterion="absolute_error")):
        assert presorted_depth(other) is False


def test_two_stage_final_model_is_sklearns_trees():
    # the presorted trees only score the steps; the model keeps scikit-learn's trees
    rng = np.random.default_rng(0)
    X = rng.normal(size=(90, 3))
    y = X[:, 0] + 0.1 * rng.normal(size=90)
    sd = np.r_[np.ones(80, int), -2 * np.ones(10, int)]
    m = TrAdaBoostR2(two_stage=True, n_steps=3, cv=2, random_state=0).fit(X, y, sd)
    assert all(isinstance(e, DecisionTreeRegressor) for e in m.estimators_)
    assert np.all(np.isfinite(m.cv_errors_))


def test_features_beyond_float32_are_refused_before_any_tree():
    X = np.array([[1.0], [2.0], [1e39]])
    with pytest.raises(ValueError, match="too large for float32"):
        Presorted(X)
    rng = np.random.default_rng(0)
    X = rng.normal(size=(30, 2))
    X[0, 0] = 1e39
    sd = np.r_[np.ones(24, int), -2 * np.ones(6, int)]
    with pytest.raises(ValueError, match="float32"):
        TrAdaBoostR2(two_stage=True, n_steps=2, cv=2).fit(X, X[:, 1].copy(), sd)
