"""Regression everywhere it makes sense: DomainAdaptationRegressor, the target-value-free
regression criteria (checked against their formulas written here) and the regression
selector."""

import numpy as np
import pytest
from _tolerances import EPS
from sklearn.base import clone
from sklearn.linear_model import LinearRegression, LogisticRegression, Ridge
from sklearn.model_selection import GridSearchCV
from sklearn.neighbors import KNeighborsRegressor

from shiftlearn import DomainAdaptationRegressor
from shiftlearn.adaptation import CORAL, TCA, uSCA
from shiftlearn.model_selection import (
    REGRESSION_METHODS,
    AdaptationRegressorSelector,
    ImportanceWeightedMSEScorer,
    ReverseValidationMSEScorer,
    SourceKFold,
    SourceMSEScorer,
)
from shiftlearn.reweighting import KLIEP


def _shift(n=80, seed=0):
    """Covariate shift: source N(0, 1), target N(1, 1) in 2-d, y = sin(x0) + x1^2 + noise."""
    rng = np.random.default_rng(seed)
    Xs, Xt = rng.normal(0, 1, (n, 2)), rng.normal(1, 1, (n, 2))
    f = lambda X: np.sin(X[:, 0]) + X[:, 1] ** 2   # noqa: E731
    X = np.r_[Xs, Xt]
    y = np.r_[f(Xs) + 0.1 * rng.normal(size=n), np.full(n, np.nan)]
    sd = np.r_[np.ones(n, int), -np.ones(n, int)]
    return X, y, sd, f(Xt)


# ----------------------------------------------------------------------------- the regressor
def test_regressor_without_adapter_is_ridge_on_the_labeled_source_rows():
    X, y, sd, _ = _shift()
    reg = DomainAdaptationRegressor(None).fit(X, y, sd)
    ref = Ridge().fit(X[sd > 0], y[sd > 0])
    np.testing.assert_allclose(reg.predict(X), ref.predict(X), rtol=0, atol=100 * EPS)
    assert isinstance(reg.estimator_, Ridge)


def test_minus_one_is_a_value_and_nan_marks_unlabeled():
    X, y, sd, _ = _shift()
    y = y.copy()
    y[:10] = -1.0                           # real target values
    reg = DomainAdaptationRegressor(None, LinearRegression()).fit(X, y)   # domains inferred
    ref = LinearRegression().fit(X[sd > 0], y[sd > 0])
    np.testing.assert_allclose(reg.estimator_.coef_, ref.coef_, rtol=1e-10)


def test_reweighting_adapter_weights_reach_the_regressor():
    X, y, sd, _ = _shift()
    reg = DomainAdaptationRegressor(KLIEP(random_state=0)).fit(X, y, sd)
    w = reg.adapter_.weights_[sd > 0] if reg.adapter_.weights_.shape[0] == X.shape[0] \
        else reg.adapter_.weights_
    ref = Ridge().fit(X[sd > 0], y[sd > 0], sample_weight=w)
    np.testing.assert_allclose(reg.estimator_.coef_, ref.coef_, rtol=1e-8)
    with pytest.raises(ValueError, match="sample_weight"):
        DomainAdaptationRegressor(KLIEP(), KNeighborsRegressor()).fit(X, y, sd)


@pytest.mark.parametrize("adapter", [TCA(n_components=2), uSCA(n_components=2), CORAL()])
def test_subspace_and_mapping_adapters_predict_finite_values(adapter):
    X, y, sd, _ = _shift()
    reg = DomainAdaptationRegressor(adapter).fit(X, y, sd)
    pred = reg.predict(X[sd < 0])
    assert pred.shape == (int((sd < 0).sum()),) and np.isfinite(pred).all()
    assert reg.transform(X).shape[0] == X.shape[0]


def test_awkward_labels_are_refused_with_the_fix():
    X, y, sd, _ = _shift()
    with pytest.raises(ValueError, match="No source rows"):     # every y NaN: all targets
        DomainAdaptationRegressor(None).fit(X, np.full(len(y), np.nan))
    with pytest.raises(ValueError, match="numeric target values"):
        DomainAdaptationRegressor(None).fit(X, np.array(["a"] * len(y), dtype=object), sd)
    with pytest.raises(ValueError, match="source rows must be labeled"):
        DomainAdaptationRegressor(None).fit(X, np.where(sd > 0, np.nan, 0.0), np.abs(sd))
    # one labeled row: allowed, ridge predicts a constant, the row's value shrunk towards it
    y1 = np.full(len(y), np.nan)
    y1[0] = 3.0
    sd1 = np.where(np.arange(len(y)) == 0, 1, -1)
    pred = DomainAdaptationRegressor(None).fit(X, y1, sd1).predict(X)
    np.testing.assert_allclose(pred, 3.0, rtol=0, atol=100 * EPS)


def test_score_is_r2_on_labeled_rows_only():
    X, y, sd, ft = _shift()
    reg = DomainAdaptationRegressor(None).fit(X, y, sd)
    from sklearn.metrics import r2_score

    assert reg.score(X[sd < 0], ft) == pytest.approx(r2_score(ft, reg.predict(X[sd < 0])))
    assert reg.score(X, y) == pytest.approx(r2_score(y[sd > 0], reg.predict(X[sd > 0])))


# ----------------------------------------------------------------------------- the criteria
def test_source_mse_is_minus_the_mean_squared_error_on_labeled_source_rows():
    X, y, sd, _ = _shift()
    reg = DomainAdaptationRegressor(None).fit(X, y, sd)
    src = sd > 0
    expected = -np.mean((reg.predict(X[src]) - y[src]) ** 2)
    assert SourceMSEScorer()(reg, X, y, sd) == pytest.approx(expected, rel=1e-12)
    assert SourceMSEScorer()(reg, X, y) == pytest.approx(expected, rel=1e-12)


def test_iw_mse_matches_the_discriminator_weighted_formula():
    X, y, sd, _ = _shift()
    reg = DomainAdaptationRegressor(None).fit(X, y, sd)
    src, tgt = sd > 0, sd < 0
    disc = LogisticRegression(C=1.0)
    # w = (n_s / n_t) P(target | x) / P(source | x), normalised: written out here
    lab = np.r_[np.ones(src.sum()), np.zeros(tgt.sum())].astype(int)
    p = clone(disc).fit(np.vstack([X[src], X[tgt]]), lab).predict_proba(X[src])
    w = (src.sum() / tgt.sum()) * p[:, 0] / p[:, 1]
    w /= w.sum()
    expected = -np.sum(w * (reg.predict(X[src]) - y[src]) ** 2)
    got = ImportanceWeightedMSEScorer(disc)(reg, X, y, sd)
    assert got == pytest.approx(expected, rel=1e-9)
    # the default (standardised logistic regression) is a valid estimate as well
    assert ImportanceWeightedMSEScorer()(reg, X, y, sd) < 0


def test_iw_mse_weights_favour_source_rows_near_the_target():
    X, y, sd, _ = _shift()
    w = ImportanceWeightedMSEScorer().weights(X[sd > 0], X[sd < 0])
    near = (X[sd > 0] @ [1.0, 1.0]) > 1.0      # towards the target mean (1, 1)
    assert w[near].mean() > 2 * w[~near].mean()
    assert w.sum() == pytest.approx(1.0)


def test_reverse_mse_matches_the_swapped_refit():
    X, y, sd, _ = _shift()
    reg = DomainAdaptationRegressor(CORAL()).fit(X, y, sd)
    src, tgt = sd > 0, sd < 0
    pseudo = reg.predict(X[tgt])
    back_y = np.full(len(y), np.nan)
    back_y[tgt] = pseudo
    back = DomainAdaptationRegressor(CORAL()).fit(X, back_y, -sd)
    expected = -np.mean((back.predict(X[src], -sd[src]) - y[src]) ** 2)
    assert ReverseValidationMSEScorer()(reg, X, y, sd) == pytest.approx(expected, rel=1e-10)
    # a plain regressor: refitted on the pseudo-labeled target rows
    plain = Ridge().fit(X[src], y[src])
    back = Ridge().fit(X[tgt], plain.predict(X[tgt]))
    expected = -np.mean((back.predict(X[src]) - y[src]) ** 2)
    assert ReverseValidationMSEScorer()(plain, X, y, sd) == pytest.approx(expected, rel=1e-10)


def test_criteria_in_gridsearch_with_source_kfold():
    X, y, sd, _ = _shift()
    search = GridSearchCV(DomainAdaptationRegressor(TCA(kernel="rbf")),
                          {"adapter__n_components": [1, 2]},
                          scoring=ImportanceWeightedMSEScorer(), cv=SourceKFold(3))
    search.fit(X, y, groups=sd, sample_domain=sd)
    assert np.all(search.cv_results_["mean_test_score"] < 0)


def test_criteria_need_their_rows():
    X, y, sd, _ = _shift()
    reg = DomainAdaptationRegressor(None).fit(X, y, sd)
    with pytest.raises(ValueError, match="no target rows"):
        ImportanceWeightedMSEScorer()(reg, X[sd > 0], y[sd > 0])
    with pytest.raises(ValueError, match="no labeled source rows"):
        ReverseValidationMSEScorer()(reg, X[sd < 0], y[sd < 0])


# ----------------------------------------------------------------------------- the selector
def test_regression_selector_adapts_when_it_helps_and_keeps_the_contract():
    X, y, sd, ft = _shift(n=120)
    sel = AdaptationRegressorSelector(methods=["TCA", "CORAL"], grids={}, cv=3).fit(X, y, sd)
    assert [r["method"] for r in sel.summary_] == ["none", "TCA", "CORAL"]
    chosen = next(r for r in sel.summary_ if r["chosen"])
    assert chosen["score"] == max(r["score"] for r in sel.summary_)
    assert isinstance(sel.best_estimator_, DomainAdaptationRegressor)
    raw = Ridge().fit(X[sd > 0], y[sd > 0]).predict(X[sd < 0])
    if sel.choice_ != "none":
        assert np.mean((sel.predict(X[sd < 0]) - ft) ** 2) < np.mean((raw - ft) ** 2)
    # the margin: a huge one keeps no adaptation
    big = AdaptationRegressorSelector(methods=["TCA"], grids={}, cv=3, margin=1e6).fit(X, y, sd)
    assert big.choice_ == "none"


def test_regression_selector_refuses_methods_that_need_classes():
    X, y, sd, _ = _shift()
    with pytest.raises(ValueError, match="needs classes"):
        AdaptationRegressorSelector(methods=["JDA"]).fit(X, y, sd)
    assert "JDA" not in REGRESSION_METHODS and "SCA" not in REGRESSION_METHODS
    sel = AdaptationRegressorSelector(methods="sized")
    assert sel._methods(300)[0] == "none"
