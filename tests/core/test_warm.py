"""shiftlearn._warm: which learners start warm, that they start from the previous solution,
and that a cold start is kept where a warm one would not fit."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.linear_model import LogisticRegression, SGDClassifier
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from shiftlearn._warm import started_from, warm_startable


class _Sub(LogisticRegression):
    pass


def _rows(seed=0, k=3):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(120, 4))
    y = np.argmax(X[:, :k] + 0.5 * rng.normal(size=(120, k)), axis=1)
    return X, y


@pytest.mark.parametrize("est, ok", [
    (None, True), (LogisticRegression(), True), (LogisticRegression(solver="newton-cg"), True),
    (make_pipeline(StandardScaler(), LogisticRegression()), True),
    (LogisticRegression(solver="liblinear"), False), (_Sub(), False), (SGDClassifier(), False),
])
def test_which_learners_start_warm(est, ok):
    assert warm_startable(est) is ok


@pytest.mark.parametrize("pipe", [False, True])
def test_a_warm_fit_starts_from_the_previous_solution(pipe):
    X, y = _rows()

    def make():
        lr = LogisticRegression(tol=1e-10, max_iter=5000)
        return make_pipeline(StandardScaler(), lr) if pipe else lr

    prev = make().fit(X, y)
    est = make()
    with started_from(est, prev, y) as warm:
        assert warm
        est.fit(X, y)                      # the same rows: it starts at the optimum
    lr, plr = (est[-1], prev[-1]) if pipe else (est, prev)
    assert lr.n_iter_[0] <= 2 < plr.n_iter_[0]
    np.testing.assert_allclose(lr.coef_, plr.coef_, atol=1e-6)
    assert lr.get_params()["warm_start"] is False


def test_other_classes_or_no_previous_fit_start_cold():
    X, y = _rows()
    prev = LogisticRegression().fit(X, y)
    y2 = np.where(y == 2, 1, y)            # two classes now: the old coefficients do not fit
    for p, labels in ((prev, y2), (None, y), (LogisticRegression(), y)):
        est = LogisticRegression()
        with started_from(est, p, labels) as warm:
            assert not warm
            est.fit(X, labels)
        assert est.get_params()["warm_start"] is False
