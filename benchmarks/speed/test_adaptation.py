"""Speed history of the adaptation fits (pytest-benchmark, ``make bench``; see conftest.py)."""

from __future__ import annotations

import pytest


@pytest.mark.benchmark(group="adaptation, MNIST->USPS n = 3,800")
def test_rftca_fit(run, mnist_usps):
    """RF-TCA, 1,000 frequencies, 30 components (docs/random_features.md: < 0.5 s)."""
    from shiftlearn.adaptation import RFTCA

    X, y, sd = mnist_usps
    est = run(lambda: RFTCA(n_components=30, mu=1.0, n_features=1000,
                                       random_state=0).fit(X, y, sample_domain=sd))
    assert est.transform(X[:5]).shape == (5, 30)


@pytest.mark.benchmark(group="adaptation, MNIST->USPS n = 3,800")
def test_rfsca_fit(run, mnist_usps):
    """RF-SCA, 1,000 frequencies, 30 components, beta = 0.5."""
    from shiftlearn.adaptation import RFSCA

    X, y, sd = mnist_usps
    est = run(lambda: RFSCA(n_components=30, beta=0.5, delta=1.0, n_features=1000,
                                       random_state=0).fit(X, y, sample_domain=sd))
    assert est.transform(X[:5]).shape == (5, 30)


@pytest.mark.benchmark(group="adaptation, MNIST->USPS n = 3,800")
def test_tca_fit(run, mnist_usps):
    """Exact TCA, 30 components, mu = 1 (the reference of the skada comparison)."""
    from shiftlearn.adaptation import TCA

    X, y, sd = mnist_usps
    est = run(lambda: TCA(n_components=30, mu=1.0).fit(X, y, sample_domain=sd))
    assert est.transform(X[:5]).shape == (5, 30)


@pytest.mark.benchmark(group="adaptation, d >> n")
def test_coral_wide_fit(run, wide_rows):
    """CORAL on 450 rows x 4,096 columns (its "auto" shrinkage: the factored route)."""
    from shiftlearn.adaptation import CORAL

    X, y, sd = wide_rows
    est = run(lambda: CORAL().fit(X, y, sample_domain=sd))
    assert est.transform(X[:5]).shape == (5, X.shape[1])
