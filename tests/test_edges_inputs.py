"""Inputs a new user gives that used to be silently wrong: reordered DataFrame columns, scores
that counted unlabeled rows as errors, the class ``-1`` dropped, a splitter yielding fewer
splits than it announced, missing labels spelled by pandas, ``sample_domain`` lost by a search
with metadata routing off. Each test fails on the bug it guards against."""

from __future__ import annotations

import re

import numpy as np
import pytest
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import GridSearchCV

from shiftlearn.model_selection import ClusterSplit


def _blobs(n_src=60, n_tgt=25, seed=0):
    """Two classes, one source and one target domain of unequal sizes, off-centre."""
    rng = np.random.default_rng(seed)
    ys = np.r_[np.zeros(n_src - n_src // 3, int), np.ones(n_src // 3, int)]
    yt = np.r_[np.zeros(n_tgt - n_tgt // 3, int), np.ones(n_tgt // 3, int)]
    Xs = rng.normal(size=(n_src, 3)) + 2.5 * ys[:, None] + 0.3
    Xt = rng.normal(size=(n_tgt, 3)) + 2.5 * yt[:, None] + 0.8
    X = np.r_[Xs, Xt]
    y = np.r_[ys, -np.ones(n_tgt, int)]
    sd = np.r_[np.ones(n_src, int), -2 * np.ones(n_tgt, int)]
    return X, y, sd, yt


# ---------------------------------------------------------------- ClusterSplit's split count
@pytest.mark.parametrize("n_splits", [1, 2, 3])
def test_cluster_split_yields_get_n_splits_splits(n_splits):
    """n_splits=2 yielded one split (the two-cluster holdout) while get_n_splits said 2."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(61, 3))
    y = (X[:, 0] > 0.3).astype(int)
    dom = np.repeat([1, 2], [40, 21])
    cv = ClusterSplit(n_splits=n_splits, random_state=0)
    folds = list(cv.split(X, y, dom))
    assert len(folds) == cv.get_n_splits(X, y, dom) == n_splits
    assert cv.mmd2_.shape == cv.mmd2_init_.shape == (n_splits,)
    for tr, va in folds:
        assert np.intersect1d(tr, va).size == 0 and tr.size + va.size == 61
    if n_splits > 1:        # K folds: every row validated exactly once
        counts = np.bincount(np.concatenate([va for _, va in folds]), minlength=61)
        assert np.all(counts == 1)
    if n_splits == 2:       # halves of each (class, domain) group: floor or ceil of n_g / 2
        va = folds[0][1]
        for c in (0, 1):
            for d in (1, 2):
                g = np.flatnonzero((y == c) & (dom == d))
                assert np.isin(g, va).sum() in (g.size // 2, (g.size + 1) // 2)


def test_cluster_split_two_folds_in_a_search():
    """GridSearchCV(cv=ClusterSplit(n_splits=2)) failed with scikit-learn's consistency error;
    also through the domain-adaptation path (target rows in every fold)."""
    X, y, sd, _ = _blobs()
    gs = GridSearchCV(LogisticRegression(), {"C": [0.1, 1.0]},
                      cv=ClusterSplit(n_splits=2, random_state=0))
    src = sd > 0
    gs.fit(X[src], y[src], groups=sd[src])
    assert "split1_test_score" in gs.cv_results_ and "split2_test_score" not in gs.cv_results_
    cv = ClusterSplit(n_splits=2, random_state=0)
    folds = list(cv.split(X, y, sd, sample_domain=sd))
    assert len(folds) == cv.get_n_splits(X, y, sd) == 2
    tgt = np.flatnonzero(sd < 0)
    for tr, va in folds:
        assert np.isin(tgt, tr).all() and np.isin(tgt, va).all()


# ------------------------------------------------------- the class -1 in a source domain
def _three_classes(seed=0):
    rng = np.random.default_rng(seed)
    y = np.tile([-1, 0, 1, 2], 15)
    X = rng.normal(size=(60, 3)) + y[:, None]
    return X, y


@pytest.mark.parametrize("sd", [np.ones(60, int), np.repeat([1, 2], 30), np.repeat([1, -2], 30)])
def test_boosting_refuses_minus_one_in_source_domains(sd):
    """-1 beside several classes in positive domains was dropped (classes_ lost it, no
    warning); the message is the one every estimator gives and names the source domains."""
    from shiftlearn.boosting import MultiTaskBoostingClassifier

    X, y = _three_classes()
    bad = np.unique(sd[(y == -1) & (sd > 0)]).tolist()
    with pytest.raises(ValueError, match=rf"Source domain\(s\) {re.escape(str(bad))} contain "
                                         "unlabeled rows.*re-encode"):
        MultiTaskBoostingClassifier(n_estimators=5).fit(X, y, sd)


def test_boosting_accepts_minus_one_in_target_domains_and_class_minus_two():
    """Valid input beside the refusal: -1 rows of a target domain are unlabeled, and the
    negative class -2 stays a class."""
    from shiftlearn.boosting import MultiTaskBoostingClassifier

    X, y = _three_classes()
    sd = np.where(y == -1, -3, np.repeat([1, 2], 30))
    clf = MultiTaskBoostingClassifier(n_estimators=5).fit(X, y, sd)
    assert clf.classes_.tolist() == [0, 1, 2] and clf.tasks_.tolist() == [1, 2]
    y2 = np.where(y == -1, -2, y)
    clf = MultiTaskBoostingClassifier(n_estimators=5).fit(X, y2, np.repeat([1, 2], 30))
    assert clf.classes_.tolist() == [-2, 0, 1, 2]
