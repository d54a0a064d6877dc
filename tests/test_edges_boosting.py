"""Ties in multi-task boosting (issue #23, row 7): a point on a threshold goes right (the
binning rule ``code = #(edges <= x)``), and predicting the training data reproduces
``train_loss_`` stage by stage even when training values sit exactly on thresholds."""

import numpy as np
import pytest

from shiftlearn.boosting import MultiTaskBoostingClassifier
from shiftlearn.boosting._binning import bin_tasks
from shiftlearn.boosting._core import boost, decision_function_stages


def test_point_on_the_threshold_goes_right():
    X = np.array([[0.0], [1.0], [2.0], [3.0]])
    y = np.array([-1, -1, 1, 1])
    t = np.zeros(4, dtype=int)
    codes, edges, n_edges, frac = bin_tasks(X, t, 1)
    ens = boost(codes, y, t, edges, n_edges, frac, n_estimators=1)
    thr = ens["threshold"][0, 0, 0]
    assert thr == 1.5 and ens["leaf"][0].tolist() == [-1.0, 1.0]
    # the threshold, a hair above it, a hair below it
    Xq = np.array([[thr], [np.nextafter(thr, np.inf)], [np.nextafter(thr, -np.inf)]])
    f = list(decision_function_stages(Xq, np.zeros(3, int), ens))[-1]
    assert f[0] > 0 and f[1] == f[0] and f[2] < 0


def _tied_multitask(n=300, seed=0):
    """Integer features (many ties) and few bins: quantile edges fall ON training values."""
    rng = np.random.default_rng(seed)
    X = rng.integers(0, 12, size=(n, 3)).astype(float)
    sd = np.where(np.arange(n) < 200, 1, -2)
    X[sd < 0] += 1.5
    y = ((X[:, 0] + X[:, 1] - 3 * (sd < 0) + rng.normal(size=n)) > 11).astype(int)
    return X, y, sd


@pytest.mark.parametrize("depth", [1, 2])
def test_predicting_the_training_data_reproduces_train_loss(depth):
    X, y, sd = _tied_multitask()
    clf = MultiTaskBoostingClassifier(n_estimators=15, learning_rate=0.5, max_depth=depth,
                                      max_bins=5).fit(X, y, sd)
    thr = np.concatenate([e["threshold"].ravel() for e in clf.estimators_])
    assert np.isin(X, thr).sum() > 50          # many training values sit on a threshold
    yy = np.where(y == clf.classes_[1], 1.0, -1.0)
    for k, f in enumerate(clf.staged_decision_function(X, sd)):
        assert np.mean(np.exp(-yy * f)) == pytest.approx(clf.train_loss_[k], rel=1e-12)


def test_training_loss_is_reproduced_per_class_in_multiclass():
    X, y, sd = _tied_multitask(seed=1)
    y = np.digitize(X[:, 0] + X[:, 2], [9, 14])          # three classes
    clf = MultiTaskBoostingClassifier(n_estimators=8, learning_rate=0.5, max_bins=6).fit(
        X, y, sd)
    F = clf.decision_function(X, sd)
    for j, c in enumerate(clf.classes_):
        yy = np.where(y == c, 1.0, -1.0)
        assert np.mean(np.exp(-yy * F[:, j])) == pytest.approx(clf.train_loss_[j, -1],
                                                                rel=1e-12)
