"""Speed history of the boosting fits (pytest-benchmark, ``make bench``; see conftest.py)."""

from __future__ import annotations

import pytest


@pytest.mark.benchmark(group="boosting")
def test_multitask_boosting_fit(run):
    """Multi-task boosting, 100 stumps, 20,000 source + 500 labeled target rows, d = 50."""
    from shiftlearn import MultiTaskBoostingClassifier
    from shiftlearn.datasets import make_monotone_shift

    X, y, sd = make_monotone_shift(20_000, 500, n_input=50, random_state=0)
    clf = run(lambda: MultiTaskBoostingClassifier(100, 0.1, 1).fit(
        X, y, sample_domain=sd))
    assert clf.predict(X[:5]).shape == (5,)
