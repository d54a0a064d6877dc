"""Speed history of the mapping fits (pytest-benchmark, ``make bench``; see conftest.py)."""

from __future__ import annotations

import pytest


@pytest.mark.benchmark(group="mapping, d >> n")
def test_sa_wide_fit(run, wide_rows):
    """Subspace alignment, 20 components, on 450 rows x 4,096 columns."""
    from shiftlearn.mapping import SA

    X, y, sd = wide_rows
    est = run(lambda: SA(n_components=20).fit(X, y, sample_domain=sd))
    assert est.transform(X[:5]).shape == (5, 20)


@pytest.mark.benchmark(group="mapping, d >> n")
def test_linot_wide_fit(run, wide_rows):
    """The linear (Gaussian) OT map on 450 rows x 4,096 columns (the low-rank route)."""
    from shiftlearn.mapping import LinOT

    X, y, sd = wide_rows
    est = run(lambda: LinOT().fit(X, y, sample_domain=sd))
    assert est.transform(X[:5]).shape == (5, X.shape[1])


@pytest.mark.benchmark(group="mapping, n >> d")
def test_emd_fit(run, shifted_rows):
    """The exact OT barycentric map (POT's network simplex), 1,000 + 1,000 rows."""
    pytest.importorskip("ot")
    from shiftlearn.mapping import EMD

    X, y, sd = shifted_rows
    est = run(lambda: EMD().fit(X, y, sample_domain=sd))
    assert est.transform(X[:5]).shape == (5, X.shape[1])


@pytest.mark.benchmark(group="mapping, n >> d")
def test_jdot_fit(run, shifted_rows):
    """JDOT with logistic regression, 1,000 + 1,000 rows."""
    pytest.importorskip("ot")
    from shiftlearn.mapping import JDOTClassifier

    X, y, sd = shifted_rows
    est = run(lambda: JDOTClassifier().fit(X, y, sample_domain=sd))
    assert est.predict(X[:5]).shape == (5,)
