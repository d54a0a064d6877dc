"""shiftlearn._warm: which learners start warm, that they start from the previous solution,
and that a cold fit is run where a warm one cannot be."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.feature_selection import VarianceThreshold
from sklearn.linear_model import LogisticRegression, SGDClassifier
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from shiftlearn._warm import fit_warm


class _Sub(LogisticRegression):
    pass


def _rows(seed=0, k=3):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(120, 4))
    y = np.argmax(X[:, :k] + 0.5 * rng.normal(size=(120, k)), axis=1)
    return X, y


@pytest.mark.parametrize("make, warm", [
    (LogisticRegression, True), (lambda: LogisticRegression(solver="newton-cg"), True),
    (lambda: make_pipeline(StandardScaler(), LogisticRegression()), True),
    (lambda: LogisticRegression(solver="liblinear"), False), (_Sub, False),
    (lambda: LogisticRegression(C=np.inf), False),
    (lambda: LogisticRegression(solver="saga", l1_ratio=1.0), False), (SGDClassifier, False),
])
def test_which_learners_start_warm(make, warm):
    X, y = _rows(k=2)
    prev, est = make().fit(X, y), make()
    assert fit_warm(est, prev, y, lambda: est.fit(X, y)) is warm
    assert est.get_params()["warm_start"] is False if hasattr(est, "warm_start") else True


@pytest.mark.parametrize("pipe", [False, True])
def test_a_warm_fit_starts_from_the_previous_solution(pipe):
    X, y = _rows()

    def make():
        lr = LogisticRegression(tol=1e-10, max_iter=5000)
        return make_pipeline(StandardScaler(), lr) if pipe else lr

    prev, est = make().fit(X, y), make()
    assert fit_warm(est, prev, y, lambda: est.fit(X, y))   # the same rows: from the optimum
    lr, plr = (est[-1], prev[-1]) if pipe else (est, prev)
    assert lr.n_iter_[0] <= 2 < plr.n_iter_[0]
    np.testing.assert_allclose(lr.coef_, plr.coef_, atol=1e-6)
    assert lr.get_params()["warm_start"] is False


def test_other_classes_no_previous_fit_or_another_width_fit_cold():
    X, y = _rows()
    prev = LogisticRegression().fit(X, y)
    y2 = np.where(y == 2, 1, y)            # two classes now: the old coefficients do not fit
    for p, labels in ((prev, y2), (None, y), (LogisticRegression(), y)):
        est = LogisticRegression()
        assert not fit_warm(est, p, labels, lambda est=est, labels=labels: est.fit(X, labels))
        assert hasattr(est, "coef_") and est.get_params()["warm_start"] is False
    # a selector before the model drops a column that is now constant: the warm start is
    # refused by the solver and the fit is run again cold, as it would have been
    Xc = X.copy()
    Xc[:, 3] = 1.0
    prev = make_pipeline(VarianceThreshold(), LogisticRegression()).fit(X, y)
    est = make_pipeline(VarianceThreshold(), LogisticRegression())
    assert not fit_warm(est, prev, y, lambda: est.fit(Xc, y))
    cold = make_pipeline(VarianceThreshold(), LogisticRegression()).fit(Xc, y)
    np.testing.assert_array_equal(est[-1].coef_, cold[-1].coef_)
    assert est[-1].get_params()["warm_start"] is False
