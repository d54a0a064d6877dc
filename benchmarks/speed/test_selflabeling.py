"""Speed history of the self-labeling fits (pytest-benchmark, ``make bench``; see conftest.py)."""

from __future__ import annotations

import pytest


@pytest.mark.benchmark(group="selflabeling, n >> d")
def test_dasvm_fit(run, shifted_rows):
    """DASVM with a linear SVM, 1,000 + 1,000 rows."""
    from shiftlearn.selflabeling import DASVM

    X, y, sd = shifted_rows
    est = run(lambda: DASVM(k=10).fit(X, y, sample_domain=sd))
    assert est.predict(X[:5]).shape == (5,)
