"""The few-labels family (shiftlearn.fewlabels): each method against an explicit reference
written here, and its awkward input (no labeled target row, one class among the labeled target
rows, NaN)."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.linear_model import LogisticRegression

import shiftlearn
from shiftlearn.fewlabels import FeatureAugmentation, augment


def _problem(n_src=60, n_tgt=40, n_lab=6, d=3, shift=1.5, seed=0, n_classes=2):
    """Source rows, and target rows shifted by ``shift``, of which ``n_lab`` keep a label."""
    rng = np.random.default_rng(seed)
    ys = np.arange(n_src) % n_classes
    yt = np.arange(n_tgt) % n_classes
    Xs = rng.normal(size=(n_src, d)) + 2.0 * ys[:, None]
    Xt = rng.normal(size=(n_tgt, d)) + 2.0 * yt[:, None] + shift
    X = np.vstack([Xs, Xt])
    y_true = np.r_[ys, yt]
    y = y_true.copy()
    y[n_src + n_lab:] = -1
    sd = np.r_[np.ones(n_src, int), -2 * np.ones(n_tgt, int)]
    return X, y, sd, y_true


# ---------------------------------------------------------------- FeatureAugmentation
def test_augment_is_dauments_map():
    X = np.arange(6.0).reshape(3, 2)
    sd = np.array([1, -2, 3])
    expected = np.array([[0, 1, 0, 1, 0, 0],
                         [2, 3, 0, 0, 2, 3],
                         [4, 5, 4, 5, 0, 0]], dtype=float)
    np.testing.assert_array_equal(augment(X, sd), expected)


def test_feature_augmentation_is_the_estimator_on_the_augmented_rows():
    X, y, sd, _ = _problem()
    fa = FeatureAugmentation(LogisticRegression(C=0.5)).fit(X, y, sd)
    keep = y != -1
    d = X.shape[1]
    Z = np.zeros((keep.sum(), 3 * d))
    Z[:, :d] = X[keep]
    src = sd[keep] > 0
    Z[src, d:2 * d] = X[keep][src]
    Z[~src, 2 * d:] = X[keep][~src]
    ref = LogisticRegression(C=0.5).fit(Z, y[keep])
    # the same solver on the same matrix: the same coefficients (same code path)
    np.testing.assert_array_equal(fa.estimator_.coef_, ref.coef_)
    # predict reads rows as target rows: [x, 0, x]
    Zt = np.hstack([X, np.zeros_like(X), X])
    np.testing.assert_array_equal(fa.predict(X), ref.predict(Zt))
    np.testing.assert_array_equal(fa.predict_proba(X), ref.predict_proba(Zt))
    Zs = np.hstack([X, X, np.zeros_like(X)])
    np.testing.assert_array_equal(fa.predict(X, sample_domain=np.ones(len(X), int)),
                                  ref.predict(Zs))
    assert fa.classes_.tolist() == [0, 1] and fa.n_features_in_ == d


def test_feature_augmentation_ignores_unlabeled_target_rows():
    X, y, sd, _ = _problem()
    keep = y != -1
    a = FeatureAugmentation().fit(X, y, sd)
    b = FeatureAugmentation().fit(X[keep], y[keep], sd[keep])
    np.testing.assert_array_equal(a.estimator_.coef_, b.estimator_.coef_)


# ---------------------------------------------------------------- awkward input, every method
FAMILY = [FeatureAugmentation()]


@pytest.mark.parametrize("est", FAMILY, ids=lambda e: type(e).__name__)
def test_no_labeled_target_row_is_refused_with_the_fix(est):
    X, y, sd, _ = _problem(n_lab=0)
    with pytest.raises(ValueError, match="no row has a negative sample_domain and a label"):
        est.fit(X, y, sd)
    # without sample_domain every labeled row is a source row: the message says so
    with pytest.raises(ValueError, match="sample_domain was not given"):
        est.fit(X[y != -1], y[y != -1])


@pytest.mark.parametrize("est", FAMILY, ids=lambda e: type(e).__name__)
def test_nan_is_refused(est):
    X, y, sd, _ = _problem()
    X[3, 1] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        est.fit(X, y, sd)


@pytest.mark.parametrize("est", FAMILY, ids=lambda e: type(e).__name__)
def test_one_class_among_the_labeled_target_rows(est):
    X, y, sd, _ = _problem(n_lab=1)
    est.fit(X, y, sd)
    pred = est.predict(X[sd < 0])
    assert set(np.unique(pred)) <= {0, 1} and pred.shape == (int((sd < 0).sum()),)


@pytest.mark.parametrize("name", ["FeatureAugmentation"])
def test_top_level_export(name):
    assert getattr(shiftlearn, name) is getattr(shiftlearn.fewlabels, name)
    assert name in shiftlearn.__all__
