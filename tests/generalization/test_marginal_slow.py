"""Paper-scale checks of marginal transfer learning (run with ``pytest -m slow``)."""

import warnings

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning

from shiftlearn.datasets import make_rotated_ellipses
from shiftlearn.generalization import (
    MarginalTransferClassifier,
    PoolingClassifier,
    task_group_score,
)

pytestmark = pytest.mark.slow


def test_ellipses_paper_scale_error_below_two_percent():
    """N = n = 256 (paper Table 1: 1.27%); fixed parameters from the benchmark's CV."""
    X, y, sd = make_rotated_ellipses(256, 256, random_state=0)
    Xt, yt, sdt = make_rotated_ellipses(10, 2000, first_domain=-1000, random_state=1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        mt = MarginalTransferClassifier(C=10.0, bandwidth_x=0.4, solver="rf", n_features=200,
                                        random_state=0).fit(X, y, sd)
        pool = PoolingClassifier(C=10.0, bandwidth_x=0.4, solver="rf", n_features=200,
                                 random_state=0).fit(X, y, sd)
    err = 1 - task_group_score(mt, Xt, yt, sdt)
    assert err <= 0.02
    assert 1 - task_group_score(pool, Xt, yt, sdt) > 0.25


def test_error_falls_with_N_and_n():
    Xt, yt, sdt = make_rotated_ellipses(10, 1000, first_domain=-1000, random_state=1)
    errs = {}
    for N, n in [(16, 8), (64, 32), (256, 64)]:
        X, y, sd = make_rotated_ellipses(N, n, random_state=N + n)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            mt = MarginalTransferClassifier(C=10.0, bandwidth_x=0.4, solver="rf",
                                            random_state=0).fit(X, y, sd)
        errs[N, n] = 1 - task_group_score(mt, Xt, yt, sdt)
    vals = list(errs.values())
    assert np.all(np.diff(vals) < 0), errs
