"""Speed history of the model selection fits (pytest-benchmark, ``make bench``; see conftest.py)."""

from __future__ import annotations

import numpy as np
import pytest


@pytest.mark.benchmark(group="model_selection")
def test_cluster_split(run):
    """One ClusterSplit at n = 20,000, d = 256, Nystrom 1,000 landmarks (splits_speed --quick)."""
    from shiftlearn.model_selection import ClusterSplit

    rng = np.random.default_rng(0)
    n, d = 20_000, 256
    dom = rng.integers(0, 5, n)
    y = rng.integers(0, 10, n)
    X = rng.normal(size=(n, d)) + dom[:, None] * 0.05 + (y[:, None] == np.arange(d) % 10) * 0.3
    sd = dom + 1
    train, test = run(lambda: next(ClusterSplit(n_landmarks=1000, random_state=0)
                                              .split(X, y, sample_domain=sd)))
    assert train.size + test.size == n
