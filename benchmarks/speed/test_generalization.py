"""Speed history of the generalization fits (pytest-benchmark, ``make bench``; see conftest.py)."""

from __future__ import annotations

import numpy as np
import pytest


@pytest.mark.benchmark(group="generalization")
def test_marginal_transfer_rf_fit(run):
    """Marginal transfer, random-feature solver, N = n = 100 (N n = 10,000; marginal_speed.py)."""
    from shiftlearn.datasets import make_rotated_ellipses
    from shiftlearn.generalization import MarginalTransferClassifier

    X, y, sd = make_rotated_ellipses(100, 100, random_state=100_100)
    clf = run(lambda: MarginalTransferClassifier(
        C=10.0, bandwidth_x=0.3, solver="rf", random_state=0).fit(X, y, sd))
    assert clf.predict(X[:100], np.full(100, -1)).shape == (100,)  # a new (target) task
