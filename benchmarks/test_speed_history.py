"""Speed history of the fits whose speed the docs promise (pytest-benchmark, ``make bench``).

Each case times one ``fit`` (or one split) of a public estimator at the size the docs quote,
on one BLAS thread (``make bench`` sets it), a few rounds after a warm-up round. pytest-benchmark
saves every run under ``.benchmarks/`` (ignored by git) and ``make bench`` compares it with
the previous run; ``benchmarks/README.md`` says how to time an older commit's code the same way.
The stage-by-stage diagnoses stay in the scripts (``adaptation/rf_speed.py``, ...), which write
the published tables. Only public API is called here, so the same file times older commits.

The MNIST->USPS cases need the data home (``SHIFTLEARN_DATA``) and are skipped without it.
These are not tests of correctness: they are outside ``make test`` (``testpaths``) and need the
``bench`` extra (``pytest-benchmark``).
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("pytest_benchmark")
os.environ.setdefault("SHIFTLEARN_DATA",
                      str(Path(__file__).resolve().parents[2] / "shared" / "data"))

ROUNDS = 3


def run(benchmark, fn):
    """``fn`` once to warm up, then ``ROUNDS`` timed rounds of one call each; the saved run
    records which ``shiftlearn`` was timed (``make bench BENCH_SRC=...`` times another one)."""
    import shiftlearn

    benchmark.extra_info["shiftlearn"] = str(Path(shiftlearn.__file__).resolve().parent)
    return benchmark.pedantic(fn, rounds=ROUNDS, iterations=1, warmup_rounds=1)


@pytest.fixture(scope="module")
def mnist_usps():
    """MNIST->USPS, n = 3,800 (2,000 labeled source + 1,800 unlabeled target), d = 256."""
    from shiftlearn.datasets import load_mnist_usps

    try:
        ds = load_mnist_usps()
    except (FileNotFoundError, OSError, ValueError) as err:
        pytest.skip(f"MNIST/USPS not in the data home ({err})")
    X, y, sd, _ = ds.pack("mnist", "usps", return_masked_labels=True)
    return X, y, sd


@pytest.mark.benchmark(group="adaptation, MNIST->USPS n = 3,800")
def test_rftca_fit(benchmark, mnist_usps):
    """RF-TCA, 1,000 frequencies, 30 components (docs/random_features.md: < 0.5 s)."""
    from shiftlearn.adaptation import RFTCA

    X, y, sd = mnist_usps
    est = run(benchmark, lambda: RFTCA(n_components=30, mu=1.0, n_features=1000,
                                       random_state=0).fit(X, y, sample_domain=sd))
    assert est.transform(X[:5]).shape == (5, 30)


@pytest.mark.benchmark(group="adaptation, MNIST->USPS n = 3,800")
def test_rfsca_fit(benchmark, mnist_usps):
    """RF-SCA, 1,000 frequencies, 30 components, beta = 0.5."""
    from shiftlearn.adaptation import RFSCA

    X, y, sd = mnist_usps
    est = run(benchmark, lambda: RFSCA(n_components=30, beta=0.5, delta=1.0, n_features=1000,
                                       random_state=0).fit(X, y, sample_domain=sd))
    assert est.transform(X[:5]).shape == (5, 30)


@pytest.mark.benchmark(group="adaptation, MNIST->USPS n = 3,800")
def test_tca_fit(benchmark, mnist_usps):
    """Exact TCA, 30 components, mu = 1 (the reference of the skada comparison)."""
    from shiftlearn.adaptation import TCA

    X, y, sd = mnist_usps
    est = run(benchmark, lambda: TCA(n_components=30, mu=1.0).fit(X, y, sample_domain=sd))
    assert est.transform(X[:5]).shape == (5, 30)


@pytest.mark.benchmark(group="generalization")
def test_marginal_transfer_rf_fit(benchmark):
    """Marginal transfer, random-feature solver, N = n = 100 (N n = 10,000; marginal_speed.py)."""
    from shiftlearn.datasets import make_rotated_ellipses
    from shiftlearn.generalization import MarginalTransferClassifier

    X, y, sd = make_rotated_ellipses(100, 100, random_state=100_100)
    clf = run(benchmark, lambda: MarginalTransferClassifier(
        C=10.0, sigma_x=0.3, solver="rf", random_state=0).fit(X, y, sd))
    assert clf.predict(X[:100], np.full(100, -1)).shape == (100,)  # a new (target) task


@pytest.mark.benchmark(group="boosting")
def test_multitask_boosting_fit(benchmark):
    """Multi-task boosting, 100 stumps, 20,000 source + 500 labeled target rows, d = 50."""
    from shiftlearn import MultiTaskBoostingClassifier
    from shiftlearn.datasets import make_monotone_shift

    X, y, sd = make_monotone_shift(20_000, 500, n_input=50, random_state=0)
    clf = run(benchmark, lambda: MultiTaskBoostingClassifier(100, 0.1, 1).fit(
        X, y, sample_domain=sd))
    assert clf.predict(X[:5]).shape == (5,)


@pytest.mark.benchmark(group="model_selection")
def test_cluster_split(benchmark):
    """One ClusterSplit at n = 20,000, d = 256, Nystrom 1,000 landmarks (splits_speed --quick)."""
    from shiftlearn.model_selection import ClusterSplit

    rng = np.random.default_rng(0)
    n, d = 20_000, 256
    dom = rng.integers(0, 5, n)
    y = rng.integers(0, 10, n)
    X = rng.normal(size=(n, d)) + dom[:, None] * 0.05 + (y[:, None] == np.arange(d) % 10) * 0.3
    sd = dom + 1
    train, test = run(benchmark, lambda: next(ClusterSplit(n_landmarks=1000, random_state=0)
                                              .split(X, y, sample_domain=sd)))
    assert train.size + test.size == n
