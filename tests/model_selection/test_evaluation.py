"""Evaluation utilities (issue #15, item 4): gap closed, rank correlation, selection summary, and
the splits paper's worst-domain and mix-up validation baselines."""

import warnings

import numpy as np
import pytest
from scipy import stats
from sklearn import config_context
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.dummy import DummyClassifier
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import GridSearchCV

from shiftlearn import DomainAdaptationClassifier
from shiftlearn.model_selection import SourceKFold
from shiftlearn.model_selection._evaluation import (
    MixupValidationScorer,
    WorstDomainScorer,
    gap_closed,
    rank_correlation,
    selected_index,
    selection_summary,
)


# ------------------------------------------------------------------ gap closed
def test_gap_closed_endpoints_and_a_middle_value():
    t = np.array([0.30, 0.50, 0.70, 0.90])            # random (mean) 0.6, oracle 0.9
    assert gap_closed(t, selected=3) == pytest.approx(1.0)
    assert gap_closed(t, selected=0) == pytest.approx(-1.0)
    assert gap_closed(t, selected=2) == pytest.approx(1 / 3)
    assert gap_closed(t, [0.1, 0.2, 0.9, 0.3]) == pytest.approx(1 / 3)   # argmax -> index 2
    # a candidate exactly at the mean closes nothing
    assert gap_closed([0.2, 0.4, 0.6], selected=1) == pytest.approx(0.0)


def test_gap_closed_with_a_baseline_and_for_losses():
    t = [0.5, 0.6, 0.8]
    assert gap_closed(t, selected=1, baseline=0.5) == pytest.approx(1 / 3)
    rmse = [12.0, 10.0, 11.0]                              # lower is better: oracle 10, mean 11
    assert gap_closed(rmse, selected=1, greater_is_better=False) == pytest.approx(1.0)
    assert gap_closed(rmse, selected=0, greater_is_better=False) == pytest.approx(-1.0)
    # the same numbers read as "greater is better" give the opposite verdict
    assert gap_closed(rmse, selected=0) == pytest.approx(1.0)


def test_gap_closed_undefined_without_a_gap():
    with pytest.warns(RuntimeWarning, match="no gap to close"):
        assert np.isnan(gap_closed([0.5, 0.5, 0.5], selected=0))
    with pytest.warns(RuntimeWarning, match="no gap"):
        assert np.isnan(gap_closed([0.4, 0.6], selected=1, baseline=0.6))
    # one step away from the tie it is defined
    assert gap_closed([0.5, 0.5, 0.5 + 1e-9], selected=2) == pytest.approx(1.0)


def test_gap_closed_refuses_bad_input():
    with pytest.raises(ValueError, match="exactly one of"):
        gap_closed([0.1, 0.2])
    with pytest.raises(ValueError, match="exactly one of"):
        gap_closed([0.1, 0.2], [0.0, 1.0], selected=0)
    with pytest.raises(ValueError, match="2 entries but target_scores has 3"):
        gap_closed([0.1, 0.2, 0.3], [0.0, 1.0])
    with pytest.raises(ValueError, match="target_scores contains NaN"):
        gap_closed([0.1, np.nan], selected=0)
    with pytest.raises(ValueError, match="not a candidate index"):
        gap_closed([0.1, 0.2], selected=2)
    with pytest.raises(ValueError, match="non-empty 1-D"):
        gap_closed([], selected=0)


def test_selected_index_skips_nan_and_takes_the_first_tie():
    assert selected_index([0.5, np.nan, 0.7, 0.7]) == 2
    assert selected_index([np.nan, 0.1]) == 1
    with pytest.raises(ValueError, match="Every validation score is NaN"):
        selected_index([np.nan, np.nan])


# ------------------------------------------------------------------ rank correlation
def test_rank_correlation_matches_scipy_and_drops_nan_pairs():
    rng = np.random.default_rng(0)
    v, t = rng.normal(size=12), rng.normal(size=12)
    r = rank_correlation(v, t)
    ref = stats.spearmanr(v, t)
    assert r.rho == pytest.approx(ref.statistic) and r.p_value == pytest.approx(ref.pvalue)
    assert r.n == 12
    v2 = v.copy()
    v2[[1, 5]] = np.nan
    r2 = rank_correlation(v2, t)
    keep = ~np.isnan(v2)
    assert r2.n == 10 and r2.rho == pytest.approx(stats.spearmanr(v[keep], t[keep]).statistic)
    assert rank_correlation([1, 2, 3, 4], [10, 20, 30, 40]).rho == pytest.approx(1.0)
    assert rank_correlation([1, 2, 3, 4], [4, 3, 2, 1]).rho == pytest.approx(-1.0)
    assert rank_correlation([1, 2, 2, 3], [1, 2, 3, 4]).rho == pytest.approx(
        stats.spearmanr([1, 2, 2, 3], [1, 2, 3, 4]).statistic)     # ties: average ranks


def test_rank_correlation_undefined_cases_warn():
    with pytest.warns(RuntimeWarning, match="constant"):
        assert np.isnan(rank_correlation([1, 1, 1], [1, 2, 3]).rho)
    with pytest.warns(RuntimeWarning, match="2 usable pair"):
        r = rank_correlation([1, 2, np.nan], [1, 2, 3])
    assert np.isnan(r.rho) and r.n == 2
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert rank_correlation([1, 2, 3], [1, 3, 2]).n == 3           # 3 pairs: defined


def test_selection_summary_agrees_with_the_parts():
    v, t = [0.8, 0.9, 0.1, 0.5], [0.40, 0.55, 0.9, 0.45]
    s = selection_summary(v, t)
    assert s["selected"] == 1 and s["selected_target"] == 0.55
    assert s["oracle"] == 0.9 and s["random"] == pytest.approx(np.mean(t))
    assert s["gap_closed"] == pytest.approx(gap_closed(t, v))
    assert s["spearman"] == pytest.approx(rank_correlation(v, t).rho)
    assert s["n_candidates"] == 4


# ------------------------------------------------------------------ worst-domain baseline
def _three_domains():
    X = np.arange(12, dtype=float)[:, None]
    y = np.array([0, 0, 1, 1, 0, 0, 0, 1, 0, 1, -1, -1])
    sd = np.array([1, 1, 1, 1, 2, 2, 2, 2, 3, 3, -4, -4])
    return X, y, sd


def test_worst_domain_is_the_minimum_per_domain_accuracy():
    X, y, sd = _three_domains()
    zero = DummyClassifier(strategy="constant", constant=0).fit(X[:10], y[:10])
    # domain 1: acc 0.5, bal 0.5; domain 2: acc 0.75, bal 0.5; domain 3: acc 0.5, bal 0.5
    assert WorstDomainScorer(balanced=False)(zero, X, y, sample_domain=sd) == 0.5
    assert WorstDomainScorer()(zero, X, y, sample_domain=sd) == 0.5
    sd2 = np.where(sd == 3, 2, sd)                  # domains 2 and 3 merged: 4/6 and 2/4
    assert WorstDomainScorer(balanced=False)(zero, X, y, sample_domain=sd2) == 0.5
    sd1 = np.where(sd > 0, 1, sd)                   # one source domain: its accuracy
    assert WorstDomainScorer(balanced=False)(zero, X, y, sample_domain=sd1) == 0.6


def test_worst_domain_balanced_differs_from_plain_accuracy():
    X = np.zeros((8, 1))
    y = np.array([0, 0, 0, 1, 0, 1, 1, 1])
    sd = np.array([1, 1, 1, 1, 2, 2, 2, 2])
    zero = DummyClassifier(strategy="constant", constant=0).fit(X, y)
    assert WorstDomainScorer(balanced=False)(zero, X, y, sample_domain=sd) == 0.25
    assert WorstDomainScorer()(zero, X, y, sample_domain=sd) == 0.5


def test_worst_domain_needs_the_domains():
    X, y, sd = _three_domains()
    zero = DummyClassifier(strategy="constant", constant=0).fit(X[:10], y[:10])
    with pytest.raises(ValueError, match="needs sample_domain.*enable_metadata_routing"):
        WorstDomainScorer()(zero, X, y)


# ------------------------------------------------------------------ mix-up baseline
class _Spy(ClassifierMixin, BaseEstimator):
    """Predicts 0 left of 0.5, 1 right of it; records what it was asked to predict."""

    def fit(self, X, y):
        self.classes_ = np.array([0, 1])
        self.seen_ = []
        return self

    def predict(self, X):
        self.seen_.append(np.asarray(X).copy())
        return (np.asarray(X)[:, 0] > 0.5).astype(int)


def test_mixup_pairs_rows_of_different_domains_and_mixes_labels():
    X = np.r_[np.zeros(6), np.ones(6), np.full(3, 0.3)][:, None]
    y = np.r_[np.zeros(6, int), np.ones(6, int), np.full(3, -1)]
    sd = np.r_[np.ones(6, int), np.full(6, 2), np.full(3, -3)]
    spy = _Spy().fit(X, y)
    sc = MixupValidationScorer(alpha=0.5, random_state=0)
    s = sc(spy, X, y, sample_domain=sd)
    mixed = spy.seen_[-1][:, 0]
    assert mixed.shape == (12,)                        # source rows only
    # every partner is from the other domain: each mix lies strictly between 0 and 1 (a.s.)
    assert np.all((mixed > 0) & (mixed < 1))
    # the score is the mixed-label accuracy: lam if the prediction is y_i, 1 - lam if y_j
    rng = np.random.RandomState(0)
    for _ in range(12):
        rng.randint(6)                                 # the partner draws (pool of 6)
    lam = rng.beta(0.5, 0.5, size=12)
    i_is_0 = np.r_[np.ones(6, bool), np.zeros(6, bool)]
    x_expect = np.where(i_is_0, 1 - lam, lam)          # a 0-row mixed with a 1-row and back
    assert mixed == pytest.approx(x_expect)
    pred1 = x_expect > 0.5
    expected = np.where(pred1 == ~i_is_0, lam, 1 - lam)
    assert s == pytest.approx(expected.mean())


def test_mixup_without_domains_and_small_alpha_is_plain_accuracy():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(200, 2))
    X = X[np.abs(X[:, 0]) > 0.5][:60]                       # a margin: LR is perfect
    y = (X[:, 0] > 0).astype(int)
    clf = LogisticRegression().fit(X, y)
    assert clf.score(X, y) == 1.0
    # lam ~ Beta(1e-3, 1e-3) is ~0 or ~1: each mix is one of its two rows, with its label
    assert MixupValidationScorer(alpha=1e-3)(clf, X, y) == pytest.approx(1.0, abs=1e-6)
    # real mixing between the classes crosses the boundary: the score falls below 1
    assert MixupValidationScorer(alpha=1.0)(clf, X, y) < 0.95


def test_baselines_in_a_grid_search_with_routing_on():
    rng = np.random.default_rng(0)
    Xs = rng.normal(size=(60, 2)) + np.repeat([[0, 0], [0.5, 0]], 30, axis=0)
    ys = (Xs[:, 1] > 0).astype(int)
    X = np.r_[Xs, rng.normal(size=(20, 2)) + [1.0, 0]]
    y = np.r_[ys, np.full(20, -1)]
    sd = np.r_[np.full(30, 1), np.full(30, 2), np.full(20, -3)]
    est = DomainAdaptationClassifier(None, LogisticRegression())
    scoring = {"worst": WorstDomainScorer(), "mixup": MixupValidationScorer()}
    with config_context(enable_metadata_routing=True):
        est.set_fit_request(sample_domain=True)
        search = GridSearchCV(est, {"estimator__C": [0.01, 1.0]}, cv=SourceKFold(3),
                              scoring=scoring, refit="worst").fit(X, y, sample_domain=sd)
    worst, mix = search.cv_results_["mean_test_worst"], search.cv_results_["mean_test_mixup"]
    assert worst[0] == 0.5 < worst[1] <= 1.0        # C=0.01 predicts one class: balanced 0.5
    assert np.all((mix > 0.5) & (mix <= 1.0)) and search.best_params_["estimator__C"] == 1.0
    # routing off: the scorer gets no domains and says so (instead of scoring one pooled domain)
    with config_context(enable_metadata_routing=False), pytest.raises(
            ValueError, match="needs sample_domain"):
        GridSearchCV(DomainAdaptationClassifier(None, LogisticRegression()), {},
                     cv=SourceKFold(3), scoring=WorstDomainScorer(),
                     error_score="raise").fit(X, y, groups=sd, sample_domain=sd)
