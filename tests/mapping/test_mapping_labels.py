"""shiftlearn.mapping's labelers: JDOTClassifier, JDOTRegressor and OTLabelProp against skada
on the same rows, against explicit formulas, on a shifted task, on awkward inputs, and through
the labeler protocol (DomainAdaptationClassifier, AdaptationSelector, the adapt report)."""

from __future__ import annotations

import sys
import warnings

import numpy as np
import pytest
from scipy.optimize import linear_sum_assignment
from sklearn.base import BaseEstimator, ClassifierMixin, clone
from sklearn.linear_model import LinearRegression, LogisticRegression, Ridge
from sklearn.neighbors import KNeighborsClassifier
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.svm import LinearSVC

from shiftlearn import _resources
from shiftlearn.adaptation import TCA
from shiftlearn.compose import DomainAdaptationClassifier
from shiftlearn.mapping import JDOTClassifier, JDOTRegressor, OTLabelProp
from shiftlearn.model_selection import AdaptationSelector

ot = pytest.importorskip("ot")


def _domains(ns=(30, 20), nt=40, d=3, seed=0, shift=1.0):
    """Two source domains (pooled by every method) and one target, unequal sizes, off-centre;
    the label depends on the first two features."""
    rng = np.random.default_rng(seed)
    parts, sds = [], []
    for k, n in enumerate(ns):
        parts.append(rng.normal(size=(n, d)) * np.linspace(0.7, 1.5, d) + 0.2 * k)
        sds.append(np.full(n, k + 1))
    Xs = np.vstack(parts)
    ys = (Xs[:, 0] - 0.5 * Xs[:, 1] + 0.3 * rng.normal(size=len(Xs)) > 0).astype(int)
    ys[Xs[:, 1] > 1.2] = 2
    Xt = rng.normal(size=(nt, d)) + shift
    X = np.r_[Xs, Xt]
    y = np.r_[ys, -np.ones(nt, int)]
    sd = np.r_[np.concatenate(sds), -3 * np.ones(nt, int)]
    return X, y, sd


def _skada():
    return pytest.importorskip("skada")


def _quiet(fn, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn(*args, **kwargs)


def _normalised_cost(Xs, Xt):
    D = ot.dist(Xs, Xt, metric="sqeuclidean")
    return D / D.mean()


# ------------------------------------------------------------------------- parity with skada
# skada's JDOT cost is (1 - a) * D + a * L with the same mean-normalised D; ours is
# alpha * D + L, the same plan for alpha = (1 - a) / a: a = 0.5 <-> alpha = 1. Both stop after
# max_iter model fits with tol = 0 (the stopping rules differ: skada's watches two sequences).
# Same network simplex on costs equal to round-off, then the same weighted rows in the same
# order: the plans agree to round-off and the models to LBFGS's reproducibility. Ours starts a
# LogisticRegression from the last alternation's solution (the same optimum to LBFGS's
# tolerance, tested below); skada starts cold, so the parity runs a subclass, fitted cold on
# both sides, to compare the algorithms fit for fit.

class _ColdLR(LogisticRegression):
    """A logistic regression JDOT does not warm-start (not the class itself)."""


@pytest.mark.parametrize("n_iter", [1, 3, 8])
def test_jdot_classifier_equals_skada_on_the_same_rows(n_iter):
    skada = _skada()
    X, y, sd = _domains()
    ours = _quiet(JDOTClassifier(_ColdLR(), alpha=1.0, max_iter=n_iter, tol=0).fit,
                  X, y, sd)
    theirs = skada.JDOTClassifier(_ColdLR(), alpha=0.5, n_iter_max=n_iter, tol=0)
    _quiet(theirs.fit, X, y, sd)
    np.testing.assert_allclose(ours.plan_, theirs.sol_.plan, atol=1e-12)
    Xt = X[sd < 0]
    np.testing.assert_allclose(ours.predict_proba(Xt), theirs.predict_proba(Xt), atol=1e-8)
    np.testing.assert_array_equal(ours.predict(Xt), theirs.predict(Xt))
    # tol = 0 still stops at an exact fixed point (the objective repeated: the plan and the
    # model would repeat too), where skada goes on to its cap with the same plan
    assert ours.n_iter_ <= len(theirs.lst_loss_ot_) == n_iter
    if ours.n_iter_ < n_iter:
        assert ours.loss_history_[-1] == ours.loss_history_[-2]


@pytest.mark.parametrize("pipe", [False, True])
def test_jdot_warm_starts_logistic_regression_to_the_same_alternations(pipe):
    # each alternation's weighted fit is strictly convex: from the last alternation's solution
    # LBFGS reaches the cold start's optimum. L-BFGS-B also stops once the objective changes by
    # less than 64 eps relative, so the coefficients agree to about sqrt(64 eps |f| / mu)
    X, y, sd = _domains(seed=3)
    kw = dict(tol=1e-10, max_iter=10_000)

    def model(cls):
        return make_pipeline(StandardScaler(), cls(**kw)) if pipe else cls(**kw)

    warm = _quiet(JDOTClassifier(model(LogisticRegression), max_iter=6, tol=0).fit, X, y, sd)
    cold = _quiet(JDOTClassifier(model(_ColdLR), max_iter=6, tol=0).fit, X, y, sd)
    assert warm.n_iter_ == cold.n_iter_ > 1
    np.testing.assert_allclose(warm.loss_history_, cold.loss_history_, rtol=1e-6)
    np.testing.assert_allclose(warm.plan_, cold.plan_, atol=1e-9)
    Xt = X[sd < 0]
    np.testing.assert_allclose(warm.predict_proba(Xt), cold.predict_proba(Xt), atol=1e-5)
    lr = warm.estimator_[-1] if pipe else warm.estimator_
    assert lr.get_params()["warm_start"] is False             # the user's setting is back


@pytest.mark.parametrize("model", [LinearRegression(), Ridge(alpha=2.0)])
@pytest.mark.parametrize("n_iter", [1, 4])
def test_jdot_regressor_equals_skada_on_the_same_rows(model, n_iter):
    skada = _skada()
    X, y, sd = _domains()
    yr = X @ np.array([1.0, -2.0, 0.5]) + 0.1
    yr[sd < 0] = np.nan
    ours = _quiet(JDOTRegressor(model, alpha=1.0, max_iter=n_iter, tol=0).fit, X, yr, sd)
    theirs = skada.JDOTRegressor(model, alpha=0.5, n_iter_max=n_iter, tol=0)
    _quiet(theirs.fit, X, yr, sd)
    np.testing.assert_allclose(ours.plan_, theirs.sol_.plan, atol=1e-12)
    Xt = X[sd < 0]
    scale = np.abs(yr[sd > 0]).max()
    np.testing.assert_allclose(ours.predict(Xt), theirs.predict(Xt), atol=1e-9 * scale)


def test_otlabelprop_equals_skada_with_a_converged_simplex():
    skada = _skada()
    from skada._ot import OTLabelPropAdapter

    X, y, sd = _domains()
    ours = OTLabelProp().fit(X, y, sd)
    theirs = OTLabelPropAdapter(n_iter_max=10**7)
    theirs.fit_transform(X, y, sample_domain=sd)
    np.testing.assert_allclose(ours.plan_, theirs.G_, atol=1e-15)
    P = theirs.yht_continuous_ / theirs.yht_continuous_.sum(axis=1, keepdims=True)
    np.testing.assert_allclose(ours.target_proba_, P, atol=1e-12)
    np.testing.assert_array_equal(ours.target_labels_, theirs.yht_)
    # the classifier of skada's pipeline (OTLabelProp(base_estimator)) is fitted on the target
    # rows and these labels: the same fit
    lr = OTLabelProp(LogisticRegression()).fit(X, y, sd)
    Xt = X[sd < 0]
    ref = LogisticRegression().fit(Xt, theirs.yht_)
    np.testing.assert_allclose(lr.predict_proba(Xt), ref.predict_proba(Xt), atol=1e-12)
    del skada


def test_otlabelprop_entropic_equals_skada():
    _skada()
    from skada._ot import OTLabelPropAdapter

    X, y, sd = _domains()
    ours = OTLabelProp(reg_e=0.5).fit(X, y, sd)
    theirs = OTLabelPropAdapter(reg=0.5, n_iter_max=10**4)
    _quiet(theirs.fit_transform, X, y, sample_domain=sd)
    # two Sinkhorns stopped at marginal errors of 1e-9 (ours) and POT's default: the plans
    # agree to that tolerance times the plan's scale 1 / (n_s n_t) ... bounded by 1e-9
    np.testing.assert_allclose(ours.plan_, theirs.G_, atol=1e-9)
    P = theirs.yht_continuous_ / theirs.yht_continuous_.sum(axis=1, keepdims=True)
    np.testing.assert_allclose(ours.target_proba_, P, atol=1e-6)


def test_otlabelprop_exact_plan_where_skada_caps_the_simplex():
    """skada's ``OTLabelPropAdapter`` passes its ``n_iter_max=200`` to the network simplex,
    which stops before optimality on a few dozen rows (POT warns): its plan is not the
    optimal one. Ours is tested against the explicit optimum: with as many source as target
    rows and uniform weights the exact plan is a permutation divided by ``n`` (Birkhoff), the
    assignment that scipy's Hungarian solver finds."""
    skada = _skada()
    from skada._ot import OTLabelPropAdapter

    X, y, sd = _domains(ns=(25, 15), nt=40)
    ours = OTLabelProp().fit(X, y, sd)
    Xs, Xt = X[sd > 0], X[sd < 0]
    C = ot.dist(Xs, Xt)
    rows, cols = linear_sum_assignment(C)
    perm = np.zeros_like(C)
    perm[rows, cols] = 1.0 / len(rows)
    assert np.vdot(ours.plan_, C) == pytest.approx(np.vdot(perm, C), rel=1e-12)
    np.testing.assert_allclose(ours.target_proba_.max(axis=1), 1.0)   # one source row each
    np.testing.assert_array_equal(ours.target_labels_, y[sd > 0][rows[np.argsort(cols)]])
    capped = OTLabelPropAdapter()                                      # its default cap
    _quiet(capped.fit_transform, X, y, sample_domain=sd)
    assert np.vdot(capped.G_, C) > np.vdot(perm, C) * (1 + 1e-9)
    del skada


# ------------------------------------------------------------------------- explicit formulas

def test_jdot_first_plan_is_the_exact_plan_of_the_feature_cost():
    X, y, sd = _domains()
    Xs, Xt = X[sd > 0], X[sd < 0]
    ns, nt = len(Xs), len(Xt)
    est = JDOTClassifier(max_iter=1, alpha=2.5).fit(X, y, sd)
    plan = ot.emd(np.full(ns, 1 / ns), np.full(nt, 1 / nt), 2.5 * _normalised_cost(Xs, Xt))
    np.testing.assert_allclose(est.plan_, plan, atol=1e-15)
    # the model step: every target row once per class it receives, weight n_t * mass
    ys = y[sd > 0]
    W = nt * np.stack([plan[ys == c].sum(axis=0) for c in (0, 1, 2)], axis=1)
    r, c = np.nonzero(W > 0)
    ref = LogisticRegression().fit(Xt[r], c, sample_weight=W[r, c])
    np.testing.assert_allclose(est.predict_proba(Xt), ref.predict_proba(Xt), atol=1e-8)
    # and the objective recorded: alpha <pi, D> + <pi, -log p_f(y_i | x_j)>
    logp = np.log(ref.predict_proba(Xt) + 1e-16)
    J = 2.5 * np.vdot(plan, _normalised_cost(Xs, Xt)) - np.vdot(plan, logp[:, ys].T)
    assert est.loss_history_ == [pytest.approx(J, rel=1e-8)]


def test_jdot_regressor_model_step_is_least_squares_on_the_carried_values():
    X, y, sd = _domains()
    yr = X @ np.array([1.0, -2.0, 0.5])
    yr[sd < 0] = np.nan
    est = JDOTRegressor(LinearRegression(), max_iter=1).fit(X, yr, sd)
    Xt = X[sd < 0]
    nt = len(Xt)
    carried = nt * (yr[sd > 0] @ est.plan_)
    ref = LinearRegression().fit(Xt, carried)
    np.testing.assert_allclose(est.predict(Xt), ref.predict(Xt), atol=1e-9)


def test_jdot_regressor_objective_never_increases_with_exact_least_squares():
    """Block coordinate descent: with an unregularised least-squares model both steps are
    exact minimisations, so the objective after each model fit cannot increase (up to the
    round-off of the sums, relative 1e-12)."""
    X, y, sd = _domains(seed=3)
    yr = np.sin(X[:, 0]) + X[:, 1]
    yr[sd < 0] = np.nan
    est = JDOTRegressor(LinearRegression(), alpha=0.3, max_iter=15, tol=0).fit(X, yr, sd)
    h = np.array(est.loss_history_)
    assert 2 < len(h) <= 15
    assert np.all(np.diff(h) <= 1e-12 * np.abs(h[:-1]))


def test_jdot_with_tol_zero_stops_at_an_exact_fixed_point():
    """tol = 0 stops when an alternation gives back the same objective (the same plan, hence
    the same model): no descent is left."""
    X, y, sd = _domains()
    est = _quiet(JDOTClassifier(LogisticRegression(), max_iter=50, tol=0).fit, X, y, sd)
    h = est.loss_history_
    assert est.n_iter_ == len(h) < 50
    assert h[-1] == min(h[:-1]) and all(np.diff(h[:-1]) < 0)


class _Toggle(ClassifierMixin, BaseEstimator):
    """A model that ignores its rows and alternates, fit after fit, between two fixed class
    probability tables: with it the alternation cannot descend, and cycles."""

    fits = 0

    def fit(self, X, y, sample_weight=None):
        type(self).fits += 1
        self.classes_ = np.unique(y)
        self.table_ = type(self).fits % 2
        return self

    def predict_proba(self, X):
        k = self.classes_.shape[0]
        p = np.full((X.shape[0], k), 0.1 / max(k - 1, 1))
        p[np.arange(X.shape[0]), (np.arange(X.shape[0]) + self.table_) % k] = 0.9
        return p

    def predict(self, X):
        return self.classes_[np.argmax(self.predict_proba(X), axis=1)]


def test_jdot_stops_when_the_alternation_cycles_and_keeps_the_lower_state():
    """A model that does not minimise the objective can make the alternation rise and cycle
    between two states (logistic regression's penalty did, on 450 x 4,096 rows, for the
    100 fits of max_iter); the fit stops at the first alternation that does not descend and
    keeps the state whose objective is the lowest: its plan and its model."""
    X, y, sd = _domains()
    _Toggle.fits = 0
    est = JDOTClassifier(_Toggle(), alpha=1.0, max_iter=50).fit(X, y, sd)
    h = est.loss_history_
    assert est.n_iter_ == len(h) <= 3 < 50
    assert h[-1] > min(h[:-1])                       # stopped on a rise, not a repeat
    Xs, Xt = X[sd > 0], X[sd < 0]
    codes = np.searchsorted(est.classes_, y[sd > 0])
    L = -np.log(est.predict_proba(Xt) + 1e-16)[:, codes].T
    kept = float(np.vdot(est.plan_, _normalised_cost(Xs, Xt)) + np.vdot(est.plan_, L))
    assert kept == pytest.approx(min(h), rel=1e-12)


def test_otlabelprop_probabilities_are_the_normalised_carried_labels():
    X, y, sd = _domains()
    for reg in (0.0, 2.0):
        est = OTLabelProp(reg_e=reg).fit(X, y, sd)
        Y = np.eye(3)[y[sd > 0]]
        P = est.plan_.T @ Y
        P /= P.sum(axis=1, keepdims=True)
        np.testing.assert_allclose(est.target_proba_, P, atol=1e-15)
        np.testing.assert_array_equal(est.target_labels_, np.argmax(P, axis=1))
        # the default 1NN gives every training target row its propagated label back
        np.testing.assert_array_equal(est.predict(X[sd < 0]), est.target_labels_)


def test_jdot_beats_source_only_on_a_shifted_gaussian_task():
    """Two classes at x0 = -2 and +2; the target is the source translated by 2.5 along x0, so
    the source boundary x0 = 0 sends most of the target's first class to the second. The
    transport plan follows the translation and carries the right labels."""
    rng = np.random.default_rng(0)
    n = 100
    ys = np.repeat([0, 1], n // 2)
    Xs = np.c_[np.where(ys == 0, -2.0, 2.0), np.zeros(n)] + 0.6 * rng.normal(size=(n, 2))
    yt = np.repeat([0, 1], n // 2)
    Xt = np.c_[np.where(yt == 0, -2.0, 2.0), np.zeros(n)] + 0.6 * rng.normal(size=(n, 2))
    Xt[:, 0] += 2.5
    X = np.r_[Xs, Xt]
    y = np.r_[ys, -np.ones(n, int)]
    sd = np.r_[np.ones(n, int), -2 * np.ones(n, int)]
    source_only = LogisticRegression().fit(Xs, ys).score(Xt, yt)
    jdot = JDOTClassifier().fit(X, y, sd).score(Xt, yt)
    prop = OTLabelProp().fit(X, y, sd).score(Xt, yt)
    assert source_only < 0.8
    assert jdot > 0.95 and prop > 0.95


# ------------------------------------------------------------------------- awkward inputs

@pytest.mark.parametrize("cls", [JDOTClassifier, OTLabelProp])
def test_one_source_class_is_refused(cls):
    X, y, sd = _domains()
    y = np.where(y >= 0, 4, -1)
    with pytest.raises(ValueError, match="one class only"):
        cls().fit(X, y, sd)


@pytest.mark.parametrize("cls", [JDOTClassifier, OTLabelProp, JDOTRegressor])
def test_without_target_rows_the_model_is_fitted_on_the_source(cls):
    X, y, sd = _domains()
    keep = sd > 0
    Xs, ys = X[keep], y[keep].astype(float)
    with pytest.warns(UserWarning, match="no target rows"):
        est = cls().fit(Xs, ys, sd[keep])
    ref = {JDOTClassifier: LogisticRegression(), OTLabelProp: KNeighborsClassifier(1),
           JDOTRegressor: Ridge()}[cls].fit(Xs, ys)
    np.testing.assert_array_equal(est.predict(Xs), ref.predict(Xs))
    assert est.plan_.shape == (len(Xs), 0)


@pytest.mark.parametrize("est", [KNeighborsClassifier(1), LinearSVC()],
                         ids=["no sample_weight", "no predict_proba"])
def test_jdot_refuses_a_model_it_cannot_use(est):
    X, y, sd = _domains()
    with pytest.raises(ValueError, match="LogisticRegression"):
        JDOTClassifier(est).fit(X, y, sd)


def test_jdot_accepts_a_pipeline_whose_last_step_takes_weights():
    X, y, sd = _domains()
    pipe = make_pipeline(StandardScaler(), LogisticRegression())
    est = JDOTClassifier(pipe, max_iter=1).fit(X, y, sd)
    # the weights reached the last step: the same as scaling the duplicated rows by hand
    plan, ys, Xt = est.plan_, y[sd > 0], X[sd < 0]
    W = len(Xt) * np.stack([plan[ys == c].sum(axis=0) for c in (0, 1, 2)], axis=1)
    # the scaler sees the duplicated rows unweighted: the network simplex's round-off dust
    # (entries ~1e-17) must be dropped as the estimator drops it, below 1e-6 of the largest
    r, c = np.nonzero(W > 1e-6 * W.max())
    ref = make_pipeline(StandardScaler(), LogisticRegression()).fit(
        Xt[r], c, logisticregression__sample_weight=W[r, c])
    np.testing.assert_allclose(est.predict_proba(Xt), ref.predict_proba(Xt), atol=1e-12)


@pytest.mark.parametrize("cls", [JDOTClassifier, OTLabelProp])
def test_target_labels_are_never_read(cls):
    X, y, sd = _domains()
    a = cls().fit(X, y, sd)
    y2 = y.copy()
    y2[sd < 0] = np.random.default_rng(1).integers(0, 3, int((sd < 0).sum()))
    b = cls().fit(X, y2, sd)
    np.testing.assert_array_equal(a.plan_, b.plan_)
    np.testing.assert_array_equal(a.predict(X), b.predict(X))


@pytest.mark.parametrize("cls", [JDOTClassifier, OTLabelProp])
def test_string_labels_and_identical_rows(cls):
    X, y, sd = _domains()
    names = np.array(["a", "b", "c"])
    ys = np.where(y >= 0, names[np.clip(y, 0, 2)], "")
    est = cls().fit(X, ys, sd)
    assert set(est.predict(X[sd < 0])) <= set(names)
    Xc = np.ones_like(X)                      # every row the same: a zero feature cost
    est = _quiet(cls().fit, Xc, ys, sd)
    assert set(est.predict(Xc[:3])) <= set(names)


def test_otlabelprop_one_propagated_class_predicts_it():
    """Every target row next to the source rows of one class: the propagated labels hold one
    class, which is then the prediction everywhere (not a refusal of the classifier)."""
    rng = np.random.default_rng(0)
    Xs = np.r_[rng.normal(size=(21, 2)), rng.normal(size=(1, 2)) + 50]
    ys = np.r_[np.zeros(21, int), np.ones(1, int)]
    Xt = rng.normal(size=(5, 2))
    X, y = np.r_[Xs, Xt], np.r_[ys, -np.ones(5, int)]
    sd = np.r_[np.ones(22, int), -2 * np.ones(5, int)]
    # each target row takes 1/5 of the mass, the one class-1 row holds 1/22 < 1/10: every
    # target row gets mostly class 0
    est = OTLabelProp(LogisticRegression()).fit(X, y, sd)
    assert set(est.target_labels_) == {0}
    np.testing.assert_array_equal(est.predict(Xt), 0)
    np.testing.assert_array_equal(est.predict_proba(Xt), np.tile([1.0, 0.0], (5, 1)))


@pytest.mark.parametrize("cls", [JDOTClassifier, OTLabelProp, JDOTRegressor])
def test_nan_and_memory_are_refused_up_front(cls, monkeypatch):
    X, y, sd = _domains()
    y = y.astype(float)
    if cls is JDOTRegressor:
        y[sd < 0] = np.nan
    Xn = X.copy()
    Xn[3, 1] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        cls().fit(Xn, y, sd)
    monkeypatch.setattr(_resources, "MEMORY_BUDGET", 50 * 40 * 8)
    with pytest.raises(ValueError, match=r"needs about .* GiB.*MEMORY_BUDGET"):
        cls().fit(X, y, sd)


@pytest.mark.parametrize("cls", [JDOTClassifier, OTLabelProp])
def test_without_pot_says_how_to_install_it(cls, monkeypatch):
    X, y, sd = _domains()
    monkeypatch.setitem(sys.modules, "ot", None)
    with pytest.raises(ImportError, match=r"shiftlearn\[ot\]"):
        cls().fit(X, y, sd)


# ------------------------------------------------------------------------- the labeler protocol

def test_domain_adaptation_classifier_fits_the_labeler_with_its_classifier():
    X, y, sd = _domains()
    model = DomainAdaptationClassifier(JDOTClassifier(max_iter=3),
                                       LogisticRegression(C=0.5)).fit(X, y, sd)
    direct = JDOTClassifier(LogisticRegression(C=0.5), max_iter=3).fit(X, y, sd)
    Xt = X[sd < 0]
    np.testing.assert_array_equal(model.predict(Xt), direct.predict(Xt))
    np.testing.assert_allclose(model.predict_proba(Xt), direct.predict_proba(Xt), atol=0)
    np.testing.assert_array_equal(model.transform(Xt), Xt)              # the identity
    assert model.adapter_.estimator.C == 0.5 and model.estimator_ is model.adapter_.estimator_
    np.testing.assert_array_equal(model.classes_, [0, 1, 2])
    assert model.get_feature_names_out().tolist() == ["x0", "x1", "x2"]


def test_domain_adaptation_classifier_keeps_the_labelers_own_model_without_one():
    X, y, sd = _domains()
    model = DomainAdaptationClassifier(OTLabelProp(LogisticRegression())).fit(X, y, sd)
    assert isinstance(model.estimator_, LogisticRegression)
    model = DomainAdaptationClassifier(OTLabelProp()).fit(X, y, sd)      # its default 1NN
    np.testing.assert_array_equal(model.predict(X[sd < 0]), model.adapter_.target_labels_)


def test_domain_adaptation_classifier_refuses_jdot_with_1nn_before_fitting():
    X, y, sd = _domains()
    model = DomainAdaptationClassifier(JDOTClassifier(), KNeighborsClassifier(1))
    with pytest.raises(ValueError, match="takes no sample_weight.*LogisticRegression"):
        model.fit(X, y, sd)
    assert not hasattr(model, "adapter_")


def test_domain_adaptation_classifier_refuses_a_predictor_that_is_no_labeler():
    X, y, sd = _domains()
    with pytest.raises(ValueError, match="'adapter' parameter.*a labeler"):
        DomainAdaptationClassifier(LogisticRegression()).fit(X, y, sd)
    DomainAdaptationClassifier(TCA(n_components=2)).fit(X, y, sd)        # unchanged


def test_selector_compares_the_labelers_with_logistic_regression():
    X, y, sd = _domains()
    sel = AdaptationSelector(methods=["none", "JDOT", "OTLabelProp"],
                             classifier=LogisticRegression(), cv=3, grids={}).fit(X, y, sd)
    assert [r["method"] for r in sel.summary_] == ["none", "JDOT", "OTLabelProp"]
    assert all(np.isfinite(r["score"]) for r in sel.summary_)
    assert sel.predict(X[sd < 0]).shape == (40,)


def test_selector_refuses_jdot_with_1nn_and_keeps_otlabelprop():
    X, y, sd = _domains()
    with pytest.raises(ValueError, match="JDOT: a labeler.*leave JDOT out of methods"):
        AdaptationSelector(methods=["none", "JDOT", "OTLabelProp"], cv=3).fit(X, y, sd)
    sel = AdaptationSelector(methods=["OTLabelProp"], cv=3, grids={}).fit(X, y, sd)
    assert [r["method"] for r in sel.summary_] == ["none", "OTLabelProp"]


def test_labelers_are_opt_in_candidates():
    from shiftlearn.model_selection._select import ADAPTERS, OPT_IN
    from shiftlearn.workflow import candidate_methods

    assert {"JDOT", "OTLabelProp"} <= set(ADAPTERS) & OPT_IN
    assert not {"JDOT", "OTLabelProp"} & set(candidate_methods("all", 100))
    assert candidate_methods("JDOT,OTLabelProp", 100) == ["JDOT", "OTLabelProp"]


def test_the_adapt_report_says_the_labeler_replaces_the_classifier():
    from shiftlearn.workflow import adapt
    from shiftlearn.workflow._report import decision

    rng = np.random.default_rng(0)
    Xs = rng.normal(size=(60, 2))
    ys = (Xs[:, 0] > 0).astype(int)
    Xt = rng.normal(size=(50, 2)) + [1.0, 0.0]
    res = adapt(Xs, ys, Xt, method="JDOT", estimator="logreg", permutations=0)
    assert res.report["replaces_classifier"] is True
    assert "replaces the classifier" in decision(res.report)
    res = adapt(Xs, ys, Xt, method="CORAL", permutations=0)
    assert "replaces" not in decision(res.report)


class _SourceModelLabeler(ClassifierMixin, BaseEstimator):
    """The smallest labeler of the protocol (``_replaces_estimator = True``, an ``estimator``
    parameter, ``fit(X, y, sample_domain)``, ``predict``), without the optional
    ``_check_estimator`` and without ``estimator_``: what another family's labeler (a
    self-labeling SVM) may look like."""

    _replaces_estimator = True

    def __init__(self, estimator=None):
        self.estimator = estimator

    def fit(self, X, y, sample_domain=None):
        src = np.asarray(sample_domain) > 0
        est = KNeighborsClassifier(1) if self.estimator is None else self.estimator
        self.model_ = clone(est).fit(X[src], y[src])
        self.classes_ = self.model_.classes_
        return self

    def predict(self, X):
        return self.model_.predict(X)


def test_the_protocol_takes_a_minimal_labeler():
    X, y, sd = _domains()
    model = DomainAdaptationClassifier(_SourceModelLabeler(), LogisticRegression()).fit(
        X, y, sd)
    assert isinstance(model.adapter_.model_, LogisticRegression)
    assert model.estimator_ is model.adapter_                   # no estimator_ of its own
    ref = LogisticRegression().fit(X[sd > 0], y[sd > 0])
    np.testing.assert_array_equal(model.predict(X[sd < 0]), ref.predict(X[sd < 0]))
    assert not hasattr(model, "predict_proba")                  # the labeler has none


def test_jdot_entropic_first_plan_is_sinkhorns():
    """``reg_e > 0``: the first plan is the entropic plan of ``alpha D`` (POT's Sinkhorn run
    here to a tighter tolerance): both are the unique entropic optimum, so they agree to the
    stopping tolerance of ours (marginal error 1e-9) over the entries."""
    X, y, sd = _domains()
    Xs, Xt = X[sd > 0], X[sd < 0]
    ns, nt = len(Xs), len(Xt)
    est = JDOTClassifier(max_iter=1, reg_e=0.1).fit(X, y, sd)
    ref = ot.sinkhorn(np.full(ns, 1 / ns), np.full(nt, 1 / nt), _normalised_cost(Xs, Xt), 0.1,
                      method="sinkhorn_log", numItermax=100000, stopThr=1e-13)
    np.testing.assert_allclose(est.plan_, ref, atol=1e-9)
    assert est.predict(Xt).shape == (nt,)
