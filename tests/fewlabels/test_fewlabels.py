"""The few-labels family (shiftlearn.fewlabels): each method against an explicit reference
written here, and its awkward input (no labeled target row, one class among the labeled target
rows, NaN)."""

from __future__ import annotations

import numpy as np
import pytest
from _tolerances import EPS
from sklearn.base import BaseEstimator, ClassifierMixin, RegressorMixin
from sklearn.linear_model import LogisticRegression
from sklearn.tree import DecisionTreeRegressor

import shiftlearn
from shiftlearn.fewlabels import (
    FeatureAugmentation,
    LinInt,
    RegularTransferLC,
    RegularTransferLR,
    TrAdaBoost,
    TrAdaBoostR2,
    augment,
    interpolation_weight,
    ridge_to_prior,
    weighted_median,
)
from shiftlearn.fewlabels._tradaboost import _move_weight


def _problem(n_src=60, n_tgt=40, n_lab=6, d=3, shift=1.5, seed=0, n_classes=2):
    """Source rows, and target rows shifted by ``shift``, of which ``n_lab`` keep a label."""
    rng = np.random.default_rng(seed)
    ys = np.arange(n_src) % n_classes
    yt = np.arange(n_tgt) % n_classes
    Xs = rng.normal(size=(n_src, d)) + 2.0 * ys[:, None]
    Xt = rng.normal(size=(n_tgt, d)) + 2.0 * yt[:, None] + shift
    X = np.vstack([Xs, Xt])
    y_true = np.r_[ys, yt]
    y = y_true.copy()
    y[n_src + n_lab:] = -1
    sd = np.r_[np.ones(n_src, int), -2 * np.ones(n_tgt, int)]
    return X, y, sd, y_true


# ---------------------------------------------------------------- FeatureAugmentation
def test_augment_is_dauments_map():
    X = np.arange(6.0).reshape(3, 2)
    sd = np.array([1, -2, 3])
    expected = np.array([[0, 1, 0, 1, 0, 0],
                         [2, 3, 0, 0, 2, 3],
                         [4, 5, 4, 5, 0, 0]], dtype=float)
    np.testing.assert_array_equal(augment(X, sd), expected)


def test_feature_augmentation_is_the_estimator_on_the_augmented_rows():
    X, y, sd, _ = _problem()
    fa = FeatureAugmentation(LogisticRegression(C=0.5)).fit(X, y, sd)
    keep = y != -1
    d = X.shape[1]
    Z = np.zeros((keep.sum(), 3 * d))
    Z[:, :d] = X[keep]
    src = sd[keep] > 0
    Z[src, d:2 * d] = X[keep][src]
    Z[~src, 2 * d:] = X[keep][~src]
    ref = LogisticRegression(C=0.5).fit(Z, y[keep])
    # the same solver on the same matrix: the same coefficients (same code path)
    np.testing.assert_array_equal(fa.estimator_.coef_, ref.coef_)
    # predict reads rows as target rows: [x, 0, x]
    Zt = np.hstack([X, np.zeros_like(X), X])
    np.testing.assert_array_equal(fa.predict(X), ref.predict(Zt))
    np.testing.assert_array_equal(fa.predict_proba(X), ref.predict_proba(Zt))
    Zs = np.hstack([X, X, np.zeros_like(X)])
    np.testing.assert_array_equal(fa.predict(X, sample_domain=np.ones(len(X), int)),
                                  ref.predict(Zs))
    assert fa.classes_.tolist() == [0, 1] and fa.n_features_in_ == d


def test_feature_augmentation_ignores_unlabeled_target_rows():
    X, y, sd, _ = _problem()
    keep = y != -1
    a = FeatureAugmentation().fit(X, y, sd)
    b = FeatureAugmentation().fit(X[keep], y[keep], sd[keep])
    np.testing.assert_array_equal(a.estimator_.coef_, b.estimator_.coef_)


def test_feature_augmentation_with_a_regressor_is_a_regressor():
    """A regressor makes FeatureAugmentation a regressor: Ridge on Daumé's matrix, NaN marks
    the unlabeled target rows, score is R^2, and there is no classes_."""
    from sklearn.base import is_classifier, is_regressor
    from sklearn.linear_model import Ridge
    from sklearn.metrics import r2_score

    rng = np.random.default_rng(0)
    X = rng.normal(size=(50, 3))
    sd = np.r_[np.ones(35, int), -np.ones(15, int)]
    y = X @ np.array([1.0, -2.0, 0.5]) + 0.3 * (sd < 0) + 0.05 * rng.normal(size=50)
    y_fit = y.copy()
    y_fit[42:] = np.nan                                      # unlabeled target rows
    fa = FeatureAugmentation(Ridge(alpha=0.5)).fit(X, y_fit, sd)
    assert is_regressor(fa) and not is_classifier(fa) and not hasattr(fa, "classes_")
    keep = ~np.isnan(y_fit)
    ref = Ridge(alpha=0.5).fit(augment(X[keep], sd[keep]), y[keep])
    np.testing.assert_array_equal(fa.estimator_.coef_, ref.coef_)   # the same code path
    Zt = augment(X, -np.ones(50, int))
    np.testing.assert_array_equal(fa.predict(X), ref.predict(Zt))
    assert fa.score(X[42:], y[42:]) == pytest.approx(r2_score(y[42:], ref.predict(Zt[42:])),
                                                     rel=1e-12)
    assert is_classifier(FeatureAugmentation())


# ---------------------------------------------------------------- TrAdaBoost, TrAdaBoostR2
class _Threshold(ClassifierMixin, BaseEstimator):
    """A learner whose predictions do not depend on the weights: class 1 where x > 1.5."""

    def fit(self, X, y, sample_weight=None):
        self.classes_ = np.unique(y)
        self.seen_weight_ = sample_weight
        return self

    def predict(self, X):
        return (np.asarray(X)[:, 0] > 1.5).astype(int)


class _Identity(RegressorMixin, BaseEstimator):
    """A regressor that predicts its first feature, whatever the weights."""

    def fit(self, X, y, sample_weight=None):
        return self

    def predict(self, X):
        return np.asarray(X, dtype=float)[:, 0]


def test_tradaboost_one_round_by_hand():
    # source x = 0..3, labels 0 1 1 1: the threshold misses source row 1;
    # target x = .5 1 2 2.5, labels 0 1 1 1: it misses target row 1
    X = np.array([[0.0], [1.0], [2.0], [3.0], [0.5], [1.0], [2.0], [2.5]])
    y = np.array([0, 1, 1, 1, 0, 1, 1, 1])
    sd = np.r_[np.ones(4, int), -np.ones(4, int)]
    m = TrAdaBoost(_Threshold(), n_estimators=1).fit(X, y, sd)
    eps = 1 / 4                                   # one of four equal target weights
    beta_t = eps / (1 - eps)                      # 1/3
    beta = 1 / (1 + np.sqrt(2 * np.log(4) / 1))   # n = 4 source rows, N = 1
    w = np.array([1, beta, 1, 1, 1, 1 / beta_t, 1, 1]) / 8
    np.testing.assert_allclose(m.sample_weight_, w / w.sum(), rtol=10 * EPS)
    np.testing.assert_allclose(m.estimator_errors_, [eps], rtol=10 * EPS)
    np.testing.assert_allclose(m.estimator_weights_, [np.log(1 / beta_t)], rtol=10 * EPS)
    # the learner saw the uniform weights scaled to a mean of 1
    np.testing.assert_array_equal(m.estimators_[0].seen_weight_, np.ones(8))
    np.testing.assert_array_equal(m.predict(X), (X[:, 0] > 1.5).astype(int))


def test_tradaboost_target_share_lifts_only_the_learners_input():
    """``target_share``: the learner sees the target rows at that share of the weight (each
    block's rows in their own proportions); the errors, updates and votes are the paper's,
    computed on the unlifted weights. At or above the share, the input is the paper's."""
    X = np.array([[0.0], [1.0], [2.0], [3.0], [0.5], [1.0], [2.0], [2.5]])
    y = np.array([0, 1, 1, 1, 0, 1, 1, 1])
    sd = np.r_[np.ones(4, int), -np.ones(4, int)]
    plain = TrAdaBoost(_Threshold(), n_estimators=3).fit(X, y, sd)
    for share in (0.5, 0.8):
        m = TrAdaBoost(_Threshold(), n_estimators=3, target_share=share).fit(X, y, sd)
        for t in range(3):
            w = m.estimators_[t].seen_weight_
            p = plain.estimators_[t].seen_weight_       # the paper's input, mean 1
            tgt = sd < 0
            held = p[tgt].sum() / p.sum()
            want = share if held < share else held
            assert w.sum() == pytest.approx(8, rel=10 * EPS)
            assert w[tgt].sum() / w.sum() == pytest.approx(want, rel=10 * EPS)
            np.testing.assert_allclose(w[tgt] / w[tgt].sum(), p[tgt] / p[tgt].sum(),
                                       rtol=10 * EPS)
            np.testing.assert_allclose(w[~tgt] / w[~tgt].sum(), p[~tgt] / p[~tgt].sum(),
                                       rtol=10 * EPS)
        # the learner's predictions do not depend on its weights: the paper's run exactly
        for key in ("sample_weight_", "estimator_errors_", "estimator_weights_"):
            np.testing.assert_array_equal(getattr(m, key), getattr(plain, key))
    # 0.5 is already held at the start (4 of 8 rows): the first input is the paper's
    m = TrAdaBoost(_Threshold(), n_estimators=1, target_share=0.5).fit(X, y, sd)
    np.testing.assert_array_equal(m.estimators_[0].seen_weight_, np.ones(8))
    with pytest.raises(ValueError, match="target_share"):
        TrAdaBoost(target_share=1.0).fit(X, y, sd)


def test_tradaboost_stalls_when_the_learner_ignores_the_target_and_target_share_unstalls():
    """The boosting paper's monotone pair, 2,000 source rows and 20 labeled target rows,
    depth-3 trees: with the paper's input almost every round after the first has
    ``eps_t = 1/2`` (nothing moves); with ``target_share=0.5`` the learners fit the target
    rows (``eps_t < 1/2``) and the target error falls below the stalled model's."""
    from sklearn.tree import DecisionTreeClassifier

    from shiftlearn.datasets import make_monotone_shift

    X, y, sd = make_monotone_shift(2000, 3000, shift="monotone", random_state=0)
    src, tgt = np.flatnonzero(sd > 0), np.flatnonzero(sd < 0)
    lab, test = tgt[:20], tgt[20:]
    rows = np.r_[src, lab]
    tree = DecisionTreeClassifier(max_depth=3, random_state=0)
    fits = {s: TrAdaBoost(tree, 20, target_share=s, random_state=0).fit(X[rows], y[rows],
                                                                        sd[rows])
            for s in (0.0, 0.5)}
    stalled = {s: int(np.sum(m.estimator_errors_[1:] == 0.5)) for s, m in fits.items()}
    assert stalled[0.0] >= 15 and stalled[0.5] <= 9, stalled
    err = {s: np.mean(m.predict(X[test]) != y[test]) for s, m in fits.items()}
    assert err[0.5] < err[0.0] - 0.03, err


def test_tradaboost_votes_with_the_second_half_of_the_rounds():
    X, y, sd, y_true = _problem(n_lab=10, seed=1)
    m = TrAdaBoost(n_estimators=7, random_state=0).fit(X, y, sd)
    assert np.all(m.estimator_weights_[:3] == 0)      # rounds 1..3 do not vote (ceil(7/2)=4)
    v = m.estimator_weights_[3:]
    votes = np.zeros((len(X), 2))
    for t, vt in zip(range(3, 7), v, strict=True):
        votes[np.arange(len(X)), m.estimators_[t].predict(X)] += vt
    np.testing.assert_array_equal(m.predict(X), np.argmax(votes, axis=1))
    assert m.score(X[sd < 0], y_true[sd < 0]) > 0.8


class _ColdLR(LogisticRegression):
    """A logistic regression TrAdaBoost does not warm-start (not the class itself)."""


def test_tradaboost_warm_starts_logistic_regression_to_the_same_rounds():
    # each round's penalised likelihood is strictly convex: from the previous round's
    # coefficients the solver reaches the optimum a cold start reaches, in fewer iterations
    X, y, sd, _ = _problem(n_src=200, n_lab=10, d=5, seed=2, n_classes=3)
    kw = dict(tol=1e-10, max_iter=10_000)
    warm = TrAdaBoost(LogisticRegression(**kw), n_estimators=6).fit(X, y, sd)
    cold = TrAdaBoost(_ColdLR(**kw), n_estimators=6).fit(X, y, sd)
    # the premise: no labeled row within the solvers' disagreement of a class boundary, where
    # a flipped prediction would change the next rounds' weights
    lab = (sd > 0) | (y >= 0)
    for e in cold.estimators_:
        top2 = np.sort(e.decision_function(X[lab]), axis=1)[:, -2:]
        assert np.min(top2[:, 1] - top2[:, 0]) > 1e-4
    np.testing.assert_allclose(warm.estimator_errors_, cold.estimator_errors_, rtol=1e-9)
    # L-BFGS-B also stops once the objective changes by less than 64 eps relative: the
    # coefficients are then known to about sqrt(64 eps |f| / mu), ~1e-6 here, not to tol
    for a, b in zip(warm.estimators_, cold.estimators_, strict=True):
        np.testing.assert_allclose(a.coef_, b.coef_, atol=1e-5)
        assert a.get_params()["warm_start"] is False           # the user's setting is back
    n_iter = [sum(int(e.n_iter_[0]) for e in m.estimators_[1:]) for m in (warm, cold)]
    assert n_iter[0] < n_iter[1]


def test_tradaboost_r2_one_round_by_hand():
    X = np.array([[0.0], [1.0], [2.0], [3.0], [0.0], [1.0], [2.0]])
    y = np.array([0.0, 1.0, 2.0, 5.0, 0.5, 1.0, 2.0])
    sd = np.r_[np.ones(4, int), -np.ones(3, int)]
    m = TrAdaBoostR2(_Identity(), n_estimators=1).fit(X, y, sd)
    # residuals: source 0 0 0 2, target .5 0 0; D = 2; linear adjusted errors
    e = np.array([0, 0, 0, 1, 0.25, 0, 0])
    eps = 0.25 / 3
    beta_t = eps / (1 - eps)                      # 1/11
    beta = 1 / (1 + np.sqrt(2 * np.log(4) / 1))
    w = np.where(sd > 0, beta ** e, beta_t ** -e)
    np.testing.assert_allclose(m.sample_weight_, w / w.sum(), rtol=10 * EPS)
    np.testing.assert_allclose(m.estimator_errors_, [eps], rtol=10 * EPS)
    np.testing.assert_allclose(m.predict(X), X[:, 0], rtol=0, atol=0)


def test_weighted_median_against_a_sort():
    rng = np.random.default_rng(0)
    P = rng.normal(size=(50, 7))
    v = rng.uniform(0.1, 1, size=7)
    got = weighted_median(P, v)
    for i in range(50):
        order = np.argsort(P[i])
        cum = np.cumsum(v[order])
        assert got[i] == P[i, order][np.flatnonzero(cum >= cum[-1] / 2)[0]]


def test_two_stage_moves_the_target_share_to_the_schedule():
    rng = np.random.default_rng(0)
    w = rng.uniform(size=30)
    w /= w.sum()
    is_tgt = np.arange(30) >= 25
    e = rng.uniform(size=30)
    for goal in (0.3, 0.6, 0.95):
        out = _move_weight(w, e, is_tgt, goal)
        assert abs(out[is_tgt].sum() - goal) < 1e-9
        # the target rows keep their proportions; the source rows are multiplied by beta^e
        np.testing.assert_allclose(out[is_tgt] / out[is_tgt].sum(),
                                   w[is_tgt] / w[is_tgt].sum(), rtol=10 * EPS)
    assert np.all(_move_weight(w, e, is_tgt, 1.0)[~is_tgt] == 0)


def test_two_stage_keeps_the_step_with_the_least_cv_error():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(80, 2))
    y = X[:, 0] + 0.1 * rng.normal(size=80)
    y[60:] += 2.0 * X[60:, 1]                    # the target concept differs
    sd = np.r_[np.ones(60, int), -2 * np.ones(20, int)]
    y_fit = y.copy()
    y_fit[70:] = np.nan
    m = TrAdaBoostR2(DecisionTreeRegressor(max_depth=2), n_estimators=5, two_stage=True,
                     n_steps=4, cv=3, random_state=0).fit(X, y_fit, sd)
    assert m.cv_errors_.shape == (4,) and m.best_step_ == int(np.argmin(m.cv_errors_))
    assert m.predict(X).shape == (80,)
    # the same seed, the same model
    m2 = TrAdaBoostR2(DecisionTreeRegressor(max_depth=2), n_estimators=5, two_stage=True,
                      n_steps=4, cv=3, random_state=0).fit(X, y_fit, sd)
    np.testing.assert_array_equal(m.predict(X), m2.predict(X))
    one = y_fit.copy()
    one[61:] = np.nan
    with pytest.raises(ValueError, match="at least 2 of them"):
        TrAdaBoostR2(two_stage=True).fit(X, one, sd)


def test_tradaboost_takes_a_pipeline_whose_last_step_takes_weights():
    # the command's logistic regression is StandardScaler + LogisticRegression: the weights go
    # to the last step, and the scaler (fitted on the same labeled rows every round) gives the
    # rows a LogisticRegression fitted on the standardised rows sees
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    X, y, sd, y_true = _problem(n_lab=10, seed=3)
    piped = TrAdaBoost(make_pipeline(StandardScaler(), LogisticRegression(C=0.01)),
                       n_estimators=5).fit(X, y, sd)
    lab = y >= 0
    Z = X.copy()
    Z[lab] = StandardScaler().fit(X[lab]).transform(X[lab])
    plain = TrAdaBoost(LogisticRegression(C=0.01), n_estimators=5).fit(Z, y, sd)
    np.testing.assert_array_equal(piped.estimator_errors_, plain.estimator_errors_)
    np.testing.assert_array_equal(piped.sample_weight_, plain.sample_weight_)
    r2 = TrAdaBoostR2(make_pipeline(StandardScaler(), DecisionTreeRegressor(max_depth=2)),
                      n_estimators=3, random_state=0)
    yr = np.where(lab, X[:, 0], np.nan)
    assert r2.fit(X, yr, sd).predict(X).shape == (len(X),)


def test_tradaboost_refuses_a_learner_without_sample_weight():
    from sklearn.neighbors import KNeighborsClassifier
    X, y, sd, _ = _problem()
    with pytest.raises(ValueError, match="sample_weight"):
        TrAdaBoost(KNeighborsClassifier()).fit(X, y, sd)


# ---------------------------------------------------------------- RegularTransferLR, LC
def _stacked_lstsq(A, y, theta0, lam):
    """``min ||y - A theta||^2 + lam ||theta - theta0||^2`` as one least-squares problem:
    ``[A; sqrt(lam) I] theta = [y; sqrt(lam) theta0]``."""
    k = A.shape[1]
    M = np.vstack([A, np.sqrt(lam) * np.eye(k)])
    b = np.r_[y, np.sqrt(lam) * theta0]
    return np.linalg.lstsq(M, b, rcond=None)[0], np.linalg.cond(M)


@pytest.mark.parametrize("m,d", [(30, 4), (5, 12)])       # more rows, more columns
def test_regular_transfer_lr_is_the_stacked_least_squares(m, d):
    rng = np.random.default_rng(m)
    Xs, Xt = rng.normal(size=(50, d)), rng.normal(size=(m, d)) + 0.5
    w = rng.normal(size=d)
    ys, yt = Xs @ w + 1.0, Xt @ (w + 0.3) - 0.5 + 0.1 * rng.normal(size=m)
    X = np.vstack([Xs, Xt, rng.normal(size=(7, d))])
    y = np.r_[ys, yt, np.full(7, np.nan)]
    sd = np.r_[np.ones(50, int), -2 * np.ones(m + 7, int)]
    for lam in (0.1, 3.0):
        model = RegularTransferLR(prior_weight=lam).fit(X, y, sd)
        src = model.source_estimator_
        theta0 = np.r_[src.coef_, src.intercept_]
        ref, cond = _stacked_lstsq(np.hstack([Xt, np.ones((m, 1))]), yt, theta0, lam)
        got = np.r_[model.coef_, model.intercept_]
        # two backward-stable solvers of the same problem: relative error <= c n eps cond
        tol = 10 * (m + d) * EPS * cond
        np.testing.assert_allclose(got, ref, rtol=0, atol=tol * np.linalg.norm(ref))
        np.testing.assert_allclose(model.predict(Xt), Xt @ ref[:-1] + ref[-1], rtol=0,
                                   atol=tol * np.abs(Xt @ ref[:-1] + ref[-1]).max() * d)


def test_regular_transfer_lr_limits():
    X, _, sd, _ = _problem(n_lab=30, d=2)
    rng = np.random.default_rng(0)
    y = X @ np.array([1.0, -2.0]) + rng.normal(size=len(X))
    y[sd < 0] += 3.0
    y[np.flatnonzero(sd < 0)[30:]] = np.nan
    big = RegularTransferLR(prior_weight=1e12).fit(X, y, sd)
    np.testing.assert_allclose(big.coef_, big.source_estimator_.coef_, atol=1e-8)
    tiny = RegularTransferLR(prior_weight=1e-10).fit(X, y, sd)
    t = (sd < 0) & ~np.isnan(y)
    A = np.hstack([X[t], np.ones((t.sum(), 1))])
    ols = np.linalg.lstsq(A, y[t], rcond=None)[0]
    np.testing.assert_allclose(np.r_[tiny.coef_, tiny.intercept_], ols, atol=1e-6)
    np.testing.assert_allclose(ridge_to_prior(X[t], y[t], np.zeros(3), 1e-10), ols, atol=1e-6)


@pytest.mark.parametrize("d", [2, 40])          # the SVD of [X, 1] and the R-SVD of its transpose
def test_ridge_to_prior_refuses_non_finite_input(d):
    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(5, d)), rng.normal(size=5)
    assert np.all(np.isfinite(ridge_to_prior(X, y, np.zeros(d + 1), 1.0)))
    for bad in ("X", "y", "theta0"):
        Xb, yb, tb = X.copy(), y.copy(), np.zeros(d + 1)
        {"X": Xb, "y": yb, "theta0": tb}[bad][0] = np.nan
        with pytest.raises(ValueError, match=f"{bad} holds NaN or inf"):
            ridge_to_prior(Xb, yb, tb, 1.0)


# the source model, scikit-learn's Ridge, solves its own normal equations and warns on these rows
@pytest.mark.filterwarnings("ignore::scipy.linalg.LinAlgWarning")
def test_regular_transfer_lr_on_features_of_size_1e9():
    # two copies of the target row x = (2^30, 0): A A^T + lam I (and A^T A + lam I) lose lam = 1
    # to the round-off of 2^60 and are exactly singular, so a Cholesky solve of the normal
    # equations fails (the fuzzing found it at scale 1e8); the thin SVD does not
    X = np.array([[0.0, 0.0], [2.0**29, 2.0**29], [2.0**30, 0.0], [2.0**30, 0.0]])
    y = np.array([0.0, 1.0, 2.0, 2.0])
    sd = np.array([1, 1, -2, -2])
    m = RegularTransferLR().fit(X, y, sd)
    A = np.hstack([X[2:], np.ones((2, 1))])
    theta0 = np.r_[m.source_estimator_.coef_, m.source_estimator_.intercept_]
    ref, _ = _stacked_lstsq(A, y[2:], theta0, 1.0)
    got = np.r_[m.coef_, m.intercept_]
    assert np.all(np.isfinite(got))
    # both minimise the stacked system's residual, to round-off of its scale
    M = np.vstack([A, np.eye(3)])
    b = np.r_[y[2:], theta0]
    res = lambda th: np.linalg.norm(M @ th - b)   # noqa: E731
    assert res(got) <= res(ref) + 1e3 * EPS * np.linalg.norm(M, 2) * np.linalg.norm(got)


def _logistic_reference(A, Y, theta0, lam, K):
    """The objective written out: summed log-loss of softmax (or sigmoid) plus the prior."""
    def f(theta):
        if K == 2:
            z = A @ theta
            p = 1 / (1 + np.exp(-z))
            nll = -np.sum(Y * np.log(p) + (1 - Y) * np.log(1 - p))
        else:
            Z = A @ theta.reshape(K, -1).T
            Z = Z - Z.max(axis=1, keepdims=True)
            logp = Z - np.log(np.exp(Z).sum(axis=1, keepdims=True))
            nll = -np.sum(Y * logp)
        return nll + lam * np.sum((theta - theta0) ** 2)
    return f


@pytest.mark.parametrize("n_classes", [2, 3])
@pytest.mark.parametrize("d", [3, 20])      # 12 labeled rows: more, then fewer than d + 1
def test_regular_transfer_lc_minimises_the_map_objective(n_classes, d):
    from scipy.optimize import minimize
    X, y, sd, _ = _problem(n_lab=12, n_classes=n_classes, seed=3, d=d)
    lam = 0.5
    m = RegularTransferLC(prior_weight=lam, tol=1e-10).fit(X, y, sd)
    t = (sd < 0) & (y != -1)
    A = np.hstack([X[t], np.ones((t.sum(), 1))])
    src = m.source_estimator_
    S = np.hstack([src.coef_, src.intercept_[:, None]])
    theta0 = S[0] if n_classes == 2 else S.ravel()
    Y = y[t].astype(float) if n_classes == 2 else np.eye(n_classes)[y[t]]
    f = _logistic_reference(A, Y, theta0, lam, n_classes)
    ref = minimize(f, np.zeros_like(theta0), method="BFGS", options={"gtol": 1e-9}).x
    got = np.hstack([m.coef_, m.intercept_[:, None]]).ravel()
    # a strongly convex objective (curvature >= 2 lam): |got - ref| <= |grad| / (2 lam)
    np.testing.assert_allclose(got, ref, atol=1e-5)
    assert f(got) <= f(ref) + 1e-8
    proba = m.predict_proba(X)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0, rtol=10 * EPS)
    np.testing.assert_array_equal(m.predict(X), m.classes_[np.argmax(proba, axis=1)])


def test_regular_transfer_lc_with_a_heavy_prior_is_the_source_model():
    X, y, sd, _ = _problem(n_lab=12)
    m = RegularTransferLC(prior_weight=1e10).fit(X, y, sd)
    np.testing.assert_allclose(m.coef_, m.source_estimator_.coef_, atol=1e-7)
    np.testing.assert_allclose(m.intercept_, m.source_estimator_.intercept_, atol=1e-7)


def test_regular_transfer_refuses_a_source_model_that_is_not_linear():
    from sklearn.tree import DecisionTreeClassifier
    X, y, sd, _ = _problem()
    with pytest.raises(ValueError, match="linear source model"):
        RegularTransferLC(DecisionTreeClassifier()).fit(X, y, sd)


# ---------------------------------------------------------------- LinInt
def test_linint_is_the_interpolation_of_its_two_models():
    X, y, sd, _ = _problem(n_lab=10, n_classes=3, seed=2)
    m = LinInt(random_state=0).fit(X, y, sd)
    ps = m.source_estimator_.predict_proba(X)
    pt = m.target_estimator_.predict_proba(X)
    np.testing.assert_allclose(m.predict_proba(X), m.alpha_ * ps + (1 - m.alpha_) * pt,
                               rtol=10 * EPS, atol=10 * EPS)
    np.testing.assert_array_equal(m.predict(X), np.argmax(m.predict_proba(X), axis=1))
    # the models: the estimator on the source rows and on the labeled target rows
    ref_s = LogisticRegression().fit(X[sd > 0], y[sd > 0])
    np.testing.assert_array_equal(m.source_estimator_.coef_, ref_s.coef_)
    t = (sd < 0) & (y != -1)
    np.testing.assert_array_equal(m.target_estimator_.coef_,
                                  LogisticRegression().fit(X[t], y[t]).coef_)


def test_interpolation_weight_minimises_the_log_loss_on_a_grid():
    rng = np.random.default_rng(0)
    for _ in range(20):
        ps, pt = rng.uniform(0, 1, size=8), rng.uniform(0, 1, size=8)
        a = interpolation_weight(ps, pt)
        grid = np.linspace(0, 1, 10001)
        loss = -np.log(grid[:, None] * ps + (1 - grid[:, None]) * pt + 1e-12).sum(axis=1)
        best = grid[np.argmin(loss)]
        # the loss is convex: its minimiser on [0, 1] within the grid step (and Brent's xatol)
        assert abs(a - best) <= 1e-4 + 1e-7
    assert interpolation_weight(np.ones(3), np.zeros(3)) == 1.0
    assert interpolation_weight(np.zeros(3), np.ones(3)) == 0.0


def test_linint_weights_the_model_that_is_right_on_the_target():
    X, y, sd, y_true = _problem(n_lab=20, seed=4)
    wrong = y.copy()
    wrong[sd > 0] = 1 - wrong[sd > 0]                 # a source concept opposite to the target's
    assert LinInt(random_state=0).fit(X, wrong, sd).alpha_ < 0.2
    same = LinInt(random_state=0).fit(X, y, sd)
    assert same.score(X[sd < 0], y_true[sd < 0]) > 0.8


def test_linint_with_one_labeled_target_row_is_the_source_model():
    X, y, sd, _ = _problem(n_lab=1)
    m = LinInt().fit(X, y, sd)
    assert m.alpha_ == 1.0
    np.testing.assert_allclose(m.predict_proba(X), m.source_estimator_.predict_proba(X))


# ---------------------------------------------------------------- scikit-learn's routing
def test_sample_domain_is_routed_to_fit_and_to_feature_augmentations_score():
    import sklearn
    from sklearn.model_selection import GridSearchCV, KFold, cross_val_score

    X, y, sd, _ = _problem(n_lab=20, seed=5)
    cv = KFold(3, shuffle=True, random_state=0)
    with sklearn.config_context(enable_metadata_routing=True):
        scores = cross_val_score(FeatureAugmentation(), X, y, cv=cv,
                                 params={"sample_domain": sd})
        search = GridSearchCV(RegularTransferLC(), {"prior_weight": [0.1, 10.0]}, cv=cv)
        search.fit(X, y, sample_domain=sd)
    # the same folds by hand: fit with the fold's domains, score its labeled rows as their
    # domains say (source rows get the source augmentation)
    for score, (train, test) in zip(scores, cv.split(X), strict=True):
        fa = FeatureAugmentation().fit(X[train], y[train], sd[train])
        keep = y[test] != -1
        ref = np.mean(fa.predict(X[test][keep], sample_domain=sd[test][keep]) == y[test][keep])
        assert score == ref
    assert search.best_params_["prior_weight"] in (0.1, 10.0)


# ---------------------------------------------------------------- awkward input, every method
FAMILY = [FeatureAugmentation(), TrAdaBoost(random_state=0), RegularTransferLC(),
          LinInt(random_state=0)]
REGRESSORS = [TrAdaBoostR2(random_state=0), TrAdaBoostR2(two_stage=True, n_steps=3, cv=2,
                                                          random_state=0),
              RegularTransferLR()]


@pytest.mark.parametrize("est", FAMILY, ids=lambda e: type(e).__name__)
def test_no_labeled_target_row_is_refused_with_the_fix(est):
    X, y, sd, _ = _problem(n_lab=0)
    with pytest.raises(ValueError, match="no row has a negative sample_domain and a label"):
        est.fit(X, y, sd)
    # without sample_domain every labeled row is a source row: the message says so
    with pytest.raises(ValueError, match="sample_domain was not given"):
        est.fit(X[y != -1], y[y != -1])


def test_regressors_refuse_no_labeled_target_row_and_nan():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(30, 2))
    y = X[:, 0].copy()
    sd = np.r_[np.ones(20, int), -2 * np.ones(10, int)]
    y[20:] = np.nan
    for est in REGRESSORS:
        with pytest.raises(ValueError, match="no row has a negative sample_domain and a label"):
            est.fit(X, y, sd)
        y2 = y.copy()
        y2[20:23] = 1.0
        Xn = X.copy()
        Xn[0, 0] = np.nan
        with pytest.raises(ValueError, match="NaN"):
            est.fit(Xn, y2, sd)
        assert est.fit(X, y2, sd).predict(X).shape == (30,)


@pytest.mark.parametrize("est", FAMILY, ids=lambda e: type(e).__name__)
def test_nan_is_refused(est):
    X, y, sd, _ = _problem()
    X[3, 1] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        est.fit(X, y, sd)


@pytest.mark.parametrize("est", FAMILY, ids=lambda e: type(e).__name__)
def test_one_class_among_the_labeled_target_rows(est):
    X, y, sd, _ = _problem(n_lab=1)
    est.fit(X, y, sd)
    pred = est.predict(X[sd < 0])
    assert set(np.unique(pred)) <= {0, 1} and pred.shape == (int((sd < 0).sum()),)


@pytest.mark.parametrize("name", ["FeatureAugmentation", "TrAdaBoost", "TrAdaBoostR2",
                                  "RegularTransferLR", "RegularTransferLC", "LinInt"])
def test_top_level_export(name):
    assert getattr(shiftlearn, name) is getattr(shiftlearn.fewlabels, name)
    assert name in shiftlearn.__all__

