"""Speed history of the label shift fits (pytest-benchmark, ``make bench``; see conftest.py)."""

from __future__ import annotations

import pytest


@pytest.mark.benchmark(group="labelshift, n >> d")
def test_bbse_fit(run, shifted_rows):
    """BBSE with logistic regression (cross-fitted confusion matrix), 1,000 + 1,000 rows."""
    from shiftlearn.labelshift import BBSE

    X, y, sd = shifted_rows
    est = run(lambda: BBSE(random_state=0).fit(X, y, sample_domain=sd))
    assert est.target_proportions_.shape == (2,)
