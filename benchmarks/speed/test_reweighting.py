"""Speed history of the reweighting fits (pytest-benchmark, ``make bench``; see conftest.py)."""

from __future__ import annotations

import pytest


@pytest.mark.benchmark(group="reweighting, n >> d")
def test_kmm_fit(run, shifted_rows):
    """Kernel mean matching (its QP), 1,000 + 1,000 rows."""
    from shiftlearn.reweighting import KMM

    X, y, sd = shifted_rows
    est = run(lambda: KMM().fit(X, y, sample_domain=sd))
    assert est.weights_.shape == (X.shape[0],)


@pytest.mark.benchmark(group="reweighting, n >> d")
def test_ulsif_fit(run, shifted_rows):
    """uLSIF, 1,000 + 1,000 rows."""
    from shiftlearn.reweighting import uLSIF

    X, y, sd = shifted_rows
    est = run(lambda: uLSIF(random_state=0).fit(X, y, sample_domain=sd))
    assert est.weights_.shape == (X.shape[0],)
