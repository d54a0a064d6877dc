"""Speed history of the few-labels fits (pytest-benchmark, ``make bench``; see conftest.py)."""

from __future__ import annotations

import pytest


@pytest.mark.benchmark(group="fewlabels, n >> d")
def test_tradaboost_fit(run, shifted_rows):
    """TrAdaBoost, 10 rounds, 1,000 source + 50 labeled target rows."""
    import numpy as np

    from shiftlearn.fewlabels import TrAdaBoost

    X, y, sd = shifted_rows
    y = y.copy()
    tgt = np.flatnonzero(sd < 0)[:50]
    y[tgt] = (X[tgt, 0] > X[tgt, 0].mean()).astype(int)
    est = run(lambda: TrAdaBoost(n_estimators=10, random_state=0).fit(X, y, sample_domain=sd))
    assert est.predict(X[:5]).shape == (5,)
