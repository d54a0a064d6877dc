"""Both sides of the marginal-transfer boundaries (issue #23, row 6): ``min_task_size`` (a task
with exactly that many rows is accepted, one fewer is refused) and the automatic solver switch
(``AUTO_RF_MIN_SAMPLES - 1`` rows: exact, ``AUTO_RF_MIN_SAMPLES``: random features)."""

import warnings

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning

from shiftlearn.generalization import (
    AUTO_RF_MIN_SAMPLES,
    MarginalTransferClassifier,
    MarginalTransferRegressor,
    PoolingClassifier,
    PoolingRegressor,
)

ESTIMATORS = [MarginalTransferClassifier, MarginalTransferRegressor, PoolingClassifier,
              PoolingRegressor]


def _tasks(sizes, seed=0, regression=False):
    """Tasks of unequal sizes (ids 1, 2, ...), two classes in every task."""
    rng = np.random.default_rng(seed)
    X, y, sd = [], [], []
    for i, n in enumerate(sizes):
        Xi = rng.normal(size=(n, 2)) + 0.3 * i
        X.append(Xi)
        yi = Xi[:, 0] + 0.1 * rng.normal(size=n) if regression else (np.arange(n) % 2)
        y.append(yi)
        sd.append(np.full(n, i + 1))
    return np.vstack(X), np.concatenate(y), np.concatenate(sd)


def _fit(Est, X, y, sd, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return Est(max_iter=30, **kw).fit(X, y, sd)


# ------------------------------------------------------------------ min_task_size
@pytest.mark.parametrize("Est", ESTIMATORS)
def test_min_task_size_boundary(Est):
    reg = "Regressor" in Est.__name__
    X, y, sd = _tasks((6, 3, 9), regression=reg)     # the smallest task (id 2) has 3 rows
    est = _fit(Est, X, y, sd, min_task_size=3)      # exactly min_task_size: accepted
    assert est.n_tasks_ == 3
    with pytest.raises(ValueError, match=r"task 2 has only 3 sample\(s\).*min_task_size=4"):
        _fit(Est, X, y, sd, min_task_size=4)


def test_min_task_size_names_every_small_task_and_only_those():
    X, y, sd = _tasks((6, 3, 9, 2))
    with pytest.raises(ValueError, match="min_task_size=4") as e:
        _fit(MarginalTransferClassifier, X, y, sd, min_task_size=4)
    msg = str(e.value)
    assert "task 2 has only 3" in msg and "task 4 has only 2" in msg
    assert "task 1" not in msg and "task 3" not in msg


def test_default_min_task_size_is_two():
    X, y, sd = _tasks((6, 2, 5))
    _fit(MarginalTransferClassifier, X, y, sd)                  # a task of 2 rows: accepted
    sd1 = sd.copy()
    sd1[6] = 7                                                  # a task of 1 row: refused
    with pytest.raises(ValueError, match="task 7 has only 1 sample"):
        _fit(MarginalTransferClassifier, X, y, sd1)


# ------------------------------------------------------------------ solver="auto"
@pytest.mark.parametrize("Est", ESTIMATORS)
def test_auto_solver_switch_boundary(Est):
    reg = "Regressor" in Est.__name__
    M = AUTO_RF_MIN_SAMPLES
    # unequal tasks: M - 1 rows in all, then one more row in the last task
    sizes = [M // 2, M // 3, M - 1 - M // 2 - M // 3]
    X, y, sd = _tasks(sizes, regression=reg)
    assert X.shape[0] == M - 1
    assert _fit(Est, X, y, sd, random_state=0).solver_ == "exact"
    X2, y2, sd2 = _tasks(sizes[:2] + [sizes[2] + 1], regression=reg)
    assert X2.shape[0] == M
    assert _fit(Est, X2, y2, sd2, random_state=0).solver_ == "rf"
    # a linear kernel_x has no random-feature solver: exact on both sides
    assert _fit(Est, X2, y2, sd2, kernel_x="linear").solver_ == "exact"
    # explicit solvers are kept on the other side of the boundary
    assert _fit(Est, X, y, sd, solver="rf", random_state=0).solver_ == "rf"


def test_auto_rf_min_samples_is_the_documented_value():
    """The docs and benchmarks/generalization/marginal_speed.py quote 1000 rows."""
    assert AUTO_RF_MIN_SAMPLES == 1000
