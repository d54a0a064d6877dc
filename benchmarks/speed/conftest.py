"""The speed suite's shared fixtures (pytest-benchmark, ``make bench``): one file per family.

The suite times the fits whose speed the docs promise. Each case times one ``fit`` (or one
split) of a public estimator at the size the docs quote, on one BLAS thread (``make bench``
sets it), a few rounds after a warm-up round. pytest-benchmark saves every run under
``.benchmarks/`` (ignored by git) and ``make bench`` compares it with the previous run;
``benchmarks/README.md`` says how to time an older commit's code the same way. The
stage-by-stage diagnoses stay in the scripts (``adaptation/rf_speed.py``, ...), which write the
published tables. Only public API is called here.

The MNIST->USPS cases need the data home (``SHIFTLEARN_DATA``) and are skipped without it; the
optimal-transport ones need POT. These are not tests of correctness: they are outside
``make test`` (``testpaths``) and need the ``bench`` extra (``pytest-benchmark``).
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("pytest_benchmark")
os.environ.setdefault("SHIFTLEARN_DATA",
                      str(Path(__file__).resolve().parents[3] / "shared" / "data"))

ROUNDS = 3


@pytest.fixture
def run(benchmark):
    """``run(fn)``: ``fn`` once to warm up, then ``ROUNDS`` timed rounds of one call each; the
    saved run records which ``shiftlearn`` was timed (``make bench BENCH_SRC=...`` times
    another one)."""
    import shiftlearn

    benchmark.extra_info["shiftlearn"] = str(Path(shiftlearn.__file__).resolve().parent)
    return lambda fn: benchmark.pedantic(fn, rounds=ROUNDS, iterations=1, warmup_rounds=1)


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


@pytest.fixture(scope="module")
def shifted_rows():
    """A seeded two-class task, 1,000 labeled source + 1,000 unlabeled target rows, d = 20
    (n >> d), the target shifted and scaled."""
    rng = np.random.default_rng(0)
    n, d = 1000, 20
    ys = rng.integers(0, 2, n)
    Xs = rng.normal(size=(n, d)) + ys[:, None] * 1.5
    Xt = 1.3 * rng.normal(size=(n, d)) + rng.integers(0, 2, n)[:, None] * 1.5 + 0.8
    X = np.vstack([Xs, Xt])
    y = np.r_[ys, -np.ones(n, int)]
    sd = np.r_[np.ones(n, int), -np.ones(n, int)]
    return X, y, sd


@pytest.fixture(scope="module")
def wide_rows():
    """d >> n: 150 labeled source + 300 unlabeled target rows, d = 4,096 (a modern feature
    extractor's width), the target shifted."""
    rng = np.random.default_rng(1)
    ns, nt, d = 150, 300, 4096
    ys = rng.integers(0, 2, ns)
    basis = rng.normal(size=(30, d)) / np.sqrt(30)
    Xs = (rng.normal(size=(ns, 30)) + ys[:, None]) @ basis
    Xt = (1.2 * rng.normal(size=(nt, 30)) + 0.5) @ basis
    X = np.vstack([Xs, Xt])
    y = np.r_[ys, -np.ones(nt, int)]
    sd = np.r_[np.ones(ns, int), -np.ones(nt, int)]
    return X, y, sd
