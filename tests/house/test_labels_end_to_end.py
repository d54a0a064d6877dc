"""Labels -1/+1 and string masks through the public estimators (issue #14): refused with the
convention's message, never a one-class model."""

import numpy as np
import pytest

from shiftlearn.adaptation import SCA, TCA, uSCA
from shiftlearn.boosting import MultiTaskBoostingClassifier
from shiftlearn.compose import DomainAdaptationClassifier


def _data():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(40, 3))
    return X, np.where(X[:, 0] > 0, 1, -1)


@pytest.mark.parametrize("make", [
    lambda: DomainAdaptationClassifier(TCA(n_components=2)),
    lambda: SCA(n_components=2),
    lambda: uSCA(n_components=2),
    lambda: MultiTaskBoostingClassifier(n_estimators=5),
], ids=["DomainAdaptationClassifier", "SCA", "uSCA", "MultiTaskBoosting"])
def test_minus_one_plus_one_refused_with_the_fix(make):
    X, y = _data()
    with pytest.raises(ValueError, match=r"reads y = -1 as 'unlabeled'.*re-encode"):
        make().fit(X, y)


def test_reencoded_labels_learn_both_classes():
    X, y = _data()
    clf = DomainAdaptationClassifier(TCA(n_components=2)).fit(X, (y > 0).astype(int))
    assert clf.classes_.tolist() == [0, 1]
    assert np.mean(clf.predict(X) == (y > 0)) > 0.9


def test_string_masks_mark_the_target():
    X, y = _data()
    ys = np.where(y > 0, "pos", "neg").astype(object)
    ys[30:35] = ""
    ys[35:] = "-1"
    clf = DomainAdaptationClassifier(TCA(n_components=2)).fit(X, ys)
    assert sorted(clf.classes_.tolist()) == ["neg", "pos"]
