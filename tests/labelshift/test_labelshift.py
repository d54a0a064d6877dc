"""shiftlearn.labelshift: BBSE, RLLS, MLLS and JCPOT against their formulas, POT/skada, the show-it
numbers on a synthetic shift, awkward inputs and the report of ``shiftlearn adapt``."""

from __future__ import annotations

import sys
import warnings

import numpy as np
import pytest
from _tolerances import EPS
from scipy.optimize import minimize
from scipy.stats import norm
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.dummy import DummyClassifier
from sklearn.linear_model import LogisticRegression
from sklearn.neighbors import KNeighborsClassifier
from sklearn.svm import LinearSVC

from shiftlearn.labelshift import (
    BBSE,
    JCPOT,
    MLLS,
    RLLS,
    bbse_weights,
    bcts_calibration,
    estimate_target_proportions,
    jcpot_proportions,
    mlls_proportions,
    rlls_reg,
    rlls_shift,
)

ESTIMATORS = {"BBSE": lambda: BBSE(random_state=0), "RLLS": lambda: RLLS(random_state=0),
              "MLLS": lambda: MLLS(random_state=0), "JCPOT": lambda: JCPOT()}


def _shifted(n_s=1500, n_t=1500, q=(0.6, 0.3, 0.1), sep=2.0, seed=0):
    """Three Gaussian classes in 2-D (centres on a triangle, unit variance): uniform classes
    in the source, proportions ``q`` in the target (label shift: same class-conditionals)."""
    rng = np.random.default_rng(seed)
    centres = sep * np.array([[0.0, 0.0], [1.0, 0.0], [0.5, 0.87]])
    ys = rng.integers(0, 3, n_s)
    yt = rng.choice(3, n_t, p=np.asarray(q))
    Xs = centres[ys] + rng.normal(size=(n_s, 2))
    Xt = centres[yt] + rng.normal(size=(n_t, 2))
    X = np.r_[Xs, Xt]
    y = np.r_[ys, -np.ones(n_t, dtype=int)]
    sd = np.r_[np.ones(n_s, dtype=int), -2 * np.ones(n_t, dtype=int)]
    return X, y, sd, yt


# ------------------------------------------------------------------------ the formulas -----
class _Identity(ClassifierMixin, BaseEstimator):
    """A fixed classifier of one binary feature: it predicts the feature (whatever it is fitted
    on), so the confusion matrix is known exactly from the rows' counts."""

    def fit(self, X, y):
        self.classes_ = np.array([0, 1])
        return self

    def predict(self, X):
        return np.asarray(X)[:, 0].astype(int)

    def predict_proba(self, X):
        p = self.predict(X)
        return np.c_[1 - p, p].astype(float)


def test_bbse_recovers_the_proportions_of_a_population_exact_confusion_matrix():
    """Source: class 0 predicted right 8 times in 10, class 1 7 times in 10, 50/50 classes;
    target: the same class-conditionals (row counts exactly in those ratios), 20/80 classes.
    Then mu = C w holds exactly and BBSE returns q = (0.2, 0.8) to round-off."""
    xs0, xs1 = [0] * 80 + [1] * 20, [0] * 30 + [1] * 70         # class 0, class 1 rows
    xt0, xt1 = [0] * 16 + [1] * 4, [0] * 24 + [1] * 56          # 20 and 80 target rows
    X = np.array(xs0 + xs1 + xt0 + xt1, dtype=float)[:, None]
    y = np.r_[np.zeros(100, int), np.ones(100, int), -np.ones(100, int)]
    sd = np.r_[np.ones(200, int), -np.ones(100, int)]
    m = BBSE(_Identity(), random_state=0).fit(X, y, sd)
    np.testing.assert_allclose(m.confusion_matrix_, [[0.4, 0.15], [0.1, 0.35]], atol=10 * EPS)
    np.testing.assert_allclose(m.target_proportions_, [0.2, 0.8], atol=100 * EPS)
    np.testing.assert_allclose(m.class_weights_, [0.4, 1.6], atol=100 * EPS)
    # the same numbers from the formula: C w = mu with w = q / p_s
    C = np.array([[0.4, 0.15], [0.1, 0.35]])
    np.testing.assert_allclose(bbse_weights(C, C @ [0.4, 1.6]), [0.4, 1.6], atol=100 * EPS)


def test_bbse_weights_clip_at_zero_and_take_the_minimum_norm_solution():
    C = np.array([[0.5, 0.0], [0.0, 0.5]])
    assert bbse_weights(C, np.array([1.2, -0.2])).tolist() == [2.4, 0.0]
    singular = np.array([[0.25, 0.25], [0.25, 0.25]])          # two classes never told apart
    np.testing.assert_allclose(bbse_weights(singular, np.array([0.5, 0.5])), [1.0, 1.0],
                               atol=100 * EPS)


def test_rlls_with_zero_regularisation_is_bbse():
    X, y, sd, _ = _shifted(n_s=600, n_t=600)
    a = BBSE(random_state=0).fit(X, y, sd)
    b = RLLS(reg=0.0, random_state=0).fit(X, y, sd)
    np.testing.assert_array_equal(a.confusion_matrix_, b.confusion_matrix_)
    np.testing.assert_allclose(b.target_proportions_, a.target_proportions_, atol=100 * EPS)


@pytest.mark.parametrize("seed", range(6))
def test_rlls_shift_is_the_minimiser_of_its_objective(seed):
    """Against a general-purpose minimiser started from several points: ours is never worse
    (the objective is convex, its minimiser lies on the ridge path searched exactly)."""
    rng = np.random.default_rng(seed)
    k = int(rng.integers(2, 6))
    C = rng.dirichlet(np.ones(k), size=k).T * rng.dirichlet(np.ones(k))
    b = rng.normal(scale=0.1, size=k)
    for reg in (0.0, 0.01, 0.1, 1.0):
        theta = rlls_shift(C, b, reg)

        def f(t, reg=reg):
            return np.linalg.norm(C @ t - b) + reg * np.linalg.norm(t)

        best = min((minimize(f, x0, method="Nelder-Mead",
                             options={"xatol": 1e-12, "fatol": 1e-14, "maxiter": 40000})
                    for x0 in (np.zeros(k), np.linalg.lstsq(C, b, rcond=None)[0],
                               rng.normal(size=k))), key=lambda r: r.fun)
        assert f(theta) <= best.fun + 1e-9


def test_rlls_reg_is_the_papers_bound_and_large_reg_means_no_shift():
    k, n = 3, 500
    t = np.log(2 * k / 0.05)
    assert rlls_reg(k, n) == pytest.approx(2 * t / (3 * n) + np.sqrt(2 * t / n), rel=1e-15)
    X, y, sd, _ = _shifted(n_s=300, n_t=300)
    m = RLLS(reg=10.0, random_state=0).fit(X, y, sd)
    np.testing.assert_allclose(m.class_weights_, 1.0, atol=1e-9)     # theta = 0: no shift
    assert RLLS(random_state=0).fit(X, y, sd).reg_ == pytest.approx(rlls_reg(3, 300))


def test_the_corrected_posterior_is_bayes_rule_on_a_gaussian_mixture():
    """Two unit-variance Gaussians at -1 and +1, balanced source, 20/80 target. Logistic
    regression is well specified (the log-odds is 2x), so its posterior is the source's Bayes
    posterior; the correction must give ``q_y N(x; mu_y) / sum_c q_c N(x; mu_c)``: exactly in
    terms of the fitted weights, and to the sampling error of q and of the fit against the
    true proportions."""
    rng = np.random.default_rng(0)
    n = 6000
    ys = rng.integers(0, 2, n)
    yt = (rng.random(n) < 0.8).astype(int)
    X = np.r_[rng.normal(2.0 * ys - 1.0), rng.normal(2.0 * yt - 1.0)][:, None]
    y = np.r_[ys, -np.ones(n, int)]
    sd = np.r_[np.ones(n, int), -np.ones(n, int)]
    m = BBSE(random_state=0).fit(X, y, sd)
    grid = np.linspace(-3, 3, 61)[:, None]
    p_s = m.estimator_.predict_proba(grid)
    w = m.class_weights_
    expected = p_s * w / (p_s * w).sum(axis=1, keepdims=True)
    np.testing.assert_allclose(m.predict_proba(grid), expected, atol=10 * EPS)
    lik = np.c_[norm.pdf(grid[:, 0], -1.0), norm.pdf(grid[:, 0], 1.0)]
    bayes = lik * [0.2, 0.8] / (lik * [0.2, 0.8]).sum(axis=1, keepdims=True)
    assert np.max(np.abs(m.predict_proba(grid) - bayes)) < 0.05


# ----------------------------------------------------------------------- JCPOT parity -----
def test_mlls_proportions_are_the_likelihood_maximum():
    """EM's fixed point is the maximum of the target rows' log-likelihood under label shift,
    sum_i log sum_y p(y | x_i) q_y / p_s(y), over the simplex: checked against a direct
    maximisation (softmax parametrisation, BFGS) and by the stationarity condition."""
    rng = np.random.default_rng(0)
    p = rng.dirichlet(np.ones(4) * 0.7, size=300)
    p_s = np.array([0.1, 0.2, 0.3, 0.4])
    q, n_iter = mlls_proportions(p, p_s, tol=1e-13, max_iter=100_000)
    assert n_iter < 100_000 and q.sum() == pytest.approx(1.0, abs=10 * EPS)

    def neg_ll(z):
        qq = np.exp(z - z.max())
        qq /= qq.sum()
        return -np.sum(np.log(p @ (qq / p_s)))

    ref = minimize(neg_ll, np.zeros(4), method="BFGS", options={"gtol": 1e-10}).x
    ref = np.exp(ref - ref.max())
    ref /= ref.sum()
    # both maximise a concave function: the same point up to the solvers' tolerances
    np.testing.assert_allclose(q, ref, atol=1e-5)
    assert -neg_ll(np.log(q)) >= -neg_ll(np.log(ref)) - 1e-9
    # stationarity: every share with q_y > 0 has mean responsibility ratio 1
    ratio = (p / p_s) / (p @ (q / p_s))[:, None]
    np.testing.assert_allclose(ratio.mean(axis=0)[q > 1e-8], 1.0, atol=1e-8)


def test_bcts_recovers_a_known_temperature_and_bias():
    """Rows labeled from softmax(z) and probabilities reported as softmax(3 z + c): the
    calibration finds T = 3 and the bias -c / 3 (up to the common shift) from 20,000 rows."""
    rng = np.random.default_rng(0)
    z = rng.normal(size=(20_000, 3))
    codes = np.array([rng.choice(3, p=pz) for pz in np.exp(z) / np.exp(z).sum(1, keepdims=True)])
    c = np.array([0.0, 1.0, -0.5])
    reported = np.exp(3 * z + c)
    reported /= reported.sum(axis=1, keepdims=True)
    T, b = bcts_calibration(reported, codes)
    assert T == pytest.approx(3.0, rel=0.05)
    np.testing.assert_allclose(b - b[0], -(c - c[0]) / T, atol=0.05)
    # the fitted point is a stationary point of the likelihood (L-BFGS-B's tolerance)
    eps = 1e-5
    from scipy.special import log_softmax

    def nll(T_, b_):
        return -log_softmax(np.log(reported) / T_ + b_, axis=1)[np.arange(codes.size), codes].sum()

    assert nll(T, b) <= min(nll(T * (1 + eps), b), nll(T * (1 - eps), b)) + 1e-3


def test_mlls_within_0_05_on_mnist_where_calibration_matters(data_home):
    """Real digits, pure label shift (the MNIST halves and tweak-one shift of the test
    below): logistic regression is underconfident there, so EM on its raw probabilities
    misses the proportions (calibration=None) and the calibrated EM (the default) does not;
    the calibrated correction also beats the uncorrected classifier."""
    Xa, ya, sda, (Xs, ys), (Xt, yt), truth = _mnist_tweak_one(data_home)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")          # lbfgs convergence on raw pixels
        lr = LogisticRegression(max_iter=1000)
        m = MLLS(lr, random_state=0).fit(Xa, ya, sda)
        raw = MLLS(lr, calibration=None, random_state=0).fit(Xa, ya, sda)
        before = np.mean(lr.fit(Xs, ys).predict(Xt) == yt)
    assert 0.5 * np.abs(m.target_proportions_ - truth).sum() < 0.05
    assert 0.5 * np.abs(raw.target_proportions_ - truth).sum() > 0.05
    assert m.calibration_temperature_ < 1                   # underconfident probabilities
    assert np.mean(m.predict(Xt) == yt) > before


def test_mlls_without_calibration_is_em_on_the_fold_models_probabilities():
    from shiftlearn.labelshift import cross_fit_predictions

    X, y, sd, _ = _shifted(n_s=300, n_t=300)
    m = MLLS(calibration=None, random_state=0).fit(X, y, sd)
    Ps, Pt = cross_fit_predictions(LogisticRegression(), X[sd > 0], y[sd > 0], X[sd < 0], 3,
                                   random_state=0)
    q, _ = mlls_proportions(Pt, m.source_proportions_)
    np.testing.assert_allclose(m.target_proportions_, q, rtol=1e-12)
    assert m.calibration_temperature_ is None and m.calibration_bias_ is None
    # and its correction reweights the classifier's own probabilities
    p = m.estimator_.predict_proba(X[sd < 0]) * m.class_weights_
    np.testing.assert_allclose(m.predict_proba(X[sd < 0]), p / p.sum(1, keepdims=True),
                               rtol=1e-12)


def test_mlls_warns_when_em_runs_out_of_iterations():
    from sklearn.exceptions import ConvergenceWarning

    X, y, sd, _ = _shifted(n_s=300, n_t=300)
    with pytest.warns(ConvergenceWarning, match="raise max_iter"):
        m = MLLS(max_iter=1, random_state=0).fit(X, y, sd)
    assert m.n_iter_ == 1
    with pytest.raises(ValueError, match="predict_proba.*use BBSE"):
        MLLS(LinearSVC()).fit(X, y, sd)
    with pytest.raises(ValueError, match="predict_proba.*use BBSE"):   # retrain needs it too
        MLLS(LinearSVC(), correction="retrain").fit(X, y, sd)


def test_jcpot_equals_pots_barycenter_on_two_sources():
    ot = pytest.importorskip("ot")
    X, y, sd, _ = _shifted(n_s=150, n_t=100, seed=1)
    sd[:70] = 2
    m = JCPOT(reg_e=0.5, tol=1e-11, max_iter=5000).fit(X, y, sd)
    Xs, ys, Xt = X[:150], y[:150].astype(float), X[150:]
    h = ot.bregman.jcpot_barycenter([Xs[:70], Xs[70:]], [ys[:70], ys[70:]], Xt,
                                    reg=0.5 * m.cost_scale_, numItermax=5000, stopThr=1e-11)
    np.testing.assert_allclose(m.target_proportions_, h, atol=1e-9)


def test_jcpot_equals_skadas_proportions():
    pytest.importorskip("ot")
    skada = pytest.importorskip("skada")
    X, y, sd, _ = _shifted(n_s=150, n_t=100, seed=2)
    m = JCPOT(reg_e=0.5, tol=1e-11, max_iter=5000).fit(X, y, sd)
    theirs = skada.JCPOTLabelPropAdapter(reg=0.5 * m.cost_scale_, max_iter=5000, tol=1e-11)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        theirs.fit_transform(X, y, sd)
    np.testing.assert_allclose(m.target_proportions_, theirs.ot_adapter_.proportions_,
                               atol=1e-9)


def test_jcpot_scaling_and_log_routes_are_the_same_iterations():
    from shiftlearn.labelshift._jcpot import _bregman_log, _bregman_scaling

    X, y, sd, _ = _shifted(n_s=120, n_t=90, seed=5)
    codes = [y[:60], y[60:120]]
    M = [((X[a:b, None] - X[None, 120:]) ** 2).sum(-1) for a, b in ((0, 60), (60, 120))]
    logK = [-(m - m.min(axis=0)) / (0.3 * np.median(np.r_[M[0], M[1]])) for m in M]
    counts = [np.bincount(c, minlength=3) for c in codes]
    args = (codes, counts, np.array([2, 2, 2]), 3, 300, 1e-12)
    h1, n1, ok1, _ = _bregman_scaling([np.exp(lk) for lk in logK], *args)
    h2, n2, ok2, _ = _bregman_log(logK, *args)
    assert ok1 and ok2 and n1 == n2
    np.testing.assert_allclose(h1, h2, rtol=1e-10)
    h, n_iter, scale = jcpot_proportions([X[:60], X[60:120]], codes, X[120:], 3, reg=0.3,
                                         tol=1e-12, max_iter=300)
    np.testing.assert_allclose(h, h1 / h1.sum(), rtol=1e-10)


def test_jcpot_takes_the_log_route_where_the_kernel_underflows(monkeypatch):
    """One source row far from every target row: its kernel row underflows to 0 (exp of less
    than -745), the scalings break and the log-domain iterations take over, with the answer
    of the data without the outlier. (POT's jcpot_barycenter then gives class 2 a share of
    0.026 against a true 0.087: its zero kernel row loses that row's class mass.)"""
    from shiftlearn.labelshift import _jcpot

    used = []
    real = _jcpot._bregman_log
    monkeypatch.setattr(_jcpot, "_bregman_log", lambda *a: used.append(1) or real(*a))
    X, y, sd, yt = _shifted(n_s=300, n_t=300, sep=4.0, seed=3)
    X[0] = [40.0, 40.0]
    m = JCPOT(reg_e=0.02).fit(X, y, sd)
    assert used and np.all(np.isfinite(m.target_proportions_))
    assert 0.5 * np.abs(m.target_proportions_ - np.bincount(yt) / 300).sum() < 0.05


def test_jcpot_refuses_plans_beyond_the_memory_budget(monkeypatch):
    from shiftlearn import _resources

    X, y, sd, _ = _shifted(n_s=40, n_t=30)
    monkeypatch.setattr(_resources, "MEMORY_BUDGET", 40 * 30 * 8)
    with pytest.raises(ValueError, match=r"JCPOT on 40 source and 30 target rows needs about "
                                         r".*Use BBSE or RLLS"):
        JCPOT().fit(X, y, sd)


def test_jcpot_without_pot_says_how_to_install_it(monkeypatch):
    monkeypatch.setitem(sys.modules, "ot", None)
    X, y, sd, _ = _shifted(n_s=30, n_t=30)
    with pytest.raises(ImportError, match="pip install"):
        JCPOT().fit(X, y, sd)


def test_jcpot_refuses_a_source_domain_without_some_class():
    X, y, sd, _ = _shifted(n_s=300, n_t=300, seed=4)
    sd[:150] = 2
    keep = ~((sd == 2) & (y == 2))              # source 2 lacks class 2
    with pytest.raises(ValueError, match="every class in every source domain"):
        JCPOT().fit(X[keep], y[keep], sd[keep])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = JCPOT().fit(X[keep], y[keep], np.where(sd[keep] > 0, 1, -1))   # pooled: fine
    assert m.target_proportions_.shape == (3,)


# ------------------------------------------------------------------------ show-it numbers --
@pytest.mark.parametrize("name", ESTIMATORS)
def test_proportions_within_0_05_and_correction_beats_no_correction(name):
    """Synthetic label shift (uniform source, target 60/30/10): L1/2 error of the estimated
    target proportions below 0.05, and the target accuracy after the correction above the
    source classifier's (docs/dev/labelshift.md has the study)."""
    X, y, sd, yt = _shifted()
    m = ESTIMATORS[name]().fit(X, y, sd)
    truth = np.bincount(yt, minlength=3) / yt.size
    assert 0.5 * np.abs(m.target_proportions_ - truth).sum() < 0.05
    Xt = X[sd < 0]
    before = np.mean(LogisticRegression().fit(X[sd > 0], y[sd > 0]).predict(Xt) == yt)
    after = np.mean(m.predict(Xt) == yt)
    assert after > before + 0.01


def _mnist_tweak_one(data_home):
    """MNIST split in two seeded halves, the source the first half, the target drawn without
    replacement from the second half with 40% of its rows of the second digit class (Lipton et
    al.'s tweak-one shift). Returns ``X, y, sd`` of the fit, the source and target rows, and
    the true target proportions."""
    from shiftlearn.datasets import load_mnist_usps

    ds = load_mnist_usps(data_home)
    X, y = ds.domains["mnist"]
    X = ds.preprocess(X)
    rng = np.random.default_rng(1000)
    q = np.full(10, 0.6 / 9)
    q[1] = 0.4
    perm = rng.permutation(len(y))
    a, b = perm[:1000], perm[1000:]
    classes = np.unique(y)
    n = int(min(600, min(np.sum(y[b] == c) / q[i] for i, c in enumerate(classes))))
    take = np.concatenate([rng.choice(b[y[b] == c], size=int(np.floor(q[i] * n)), replace=False)
                           for i, c in enumerate(classes)])
    Xa = np.r_[X[a], X[take]]
    ya = np.r_[y[a], -np.ones(take.size, int)]
    sda = np.r_[np.ones(a.size, int), -np.ones(take.size, int)]
    truth = np.array([np.mean(y[take] == c) for c in classes])
    return Xa, ya, sda, (X[a], y[a]), (X[take], y[take]), truth


def test_proportions_within_0_05_on_mnist_resampled_to_a_known_shift(data_home):
    """Real digits, pure label shift: MNIST split in two seeded halves, the source the first
    half (about 10% per digit), the target drawn without replacement from the second half
    with 40% of the rows of the second digit class (Lipton et al.'s tweak-one shift; 302
    rows). The study (benchmarks/labelshift) has five seeds and a Dirichlet shift."""
    Xa, ya, sda, _, _, truth = _mnist_tweak_one(data_home)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")          # lbfgs convergence on raw pixels
        for model in (BBSE(LogisticRegression(max_iter=1000), random_state=0),
                      JCPOT(LogisticRegression(max_iter=1000))):
            q_hat = model.fit(Xa, ya, sda).target_proportions_
            assert 0.5 * np.abs(q_hat - truth).sum() < 0.05, type(model).__name__


@pytest.mark.parametrize("name", ["BBSE", "RLLS"])
def test_retrain_correction_fits_with_the_class_weights(name):
    X, y, sd, yt = _shifted()
    m = ESTIMATORS[name]().set_params(correction="retrain").fit(X, y, sd)
    ref = LogisticRegression().fit(X[sd > 0], y[sd > 0],
                                   sample_weight=m.class_weights_[y[sd > 0]])
    np.testing.assert_allclose(m.predict_proba(X[sd < 0]), ref.predict_proba(X[sd < 0]))
    before = np.mean(LogisticRegression().fit(X[sd > 0], y[sd > 0]).predict(X[sd < 0]) == yt)
    assert np.mean(m.predict(X[sd < 0]) == yt) > before


def test_estimate_target_proportions_is_the_fitted_attribute():
    X, y, sd, _ = _shifted(n_s=300, n_t=300)
    classes, q = estimate_target_proportions(None, X, y, sd, method="rlls", random_state=0)
    assert classes.tolist() == [0, 1, 2]
    np.testing.assert_array_equal(q, RLLS(random_state=0).fit(X, y, sd).target_proportions_)
    with pytest.raises(ValueError, match="choose one of 'bbse', 'rlls', 'mlls', 'jcpot'"):
        estimate_target_proportions(None, X, y, sd, method="em")


# --------------------------------------------------------------------------- awkward input --
@pytest.mark.parametrize("name", ESTIMATORS)
def test_a_class_absent_from_the_target_gets_a_small_share(name):
    X, y, sd, yt = _shifted(q=(0.7, 0.3, 0.0))
    m = ESTIMATORS[name]().fit(X, y, sd)
    assert m.target_proportions_[2] < 0.05
    assert 0.5 * np.abs(m.target_proportions_ - np.bincount(yt, minlength=3) / yt.size).sum() \
        < 0.05


@pytest.mark.parametrize("name", ESTIMATORS)
def test_one_class_predicts_it(name):
    X, y, sd, _ = _shifted(n_s=40, n_t=20)
    y = np.where(y >= 0, 7, -1)
    m = ESTIMATORS[name]().fit(X, y, sd)
    assert m.target_proportions_.tolist() == [1.0] and set(m.predict(X)) == {7}


@pytest.mark.parametrize("name", ESTIMATORS)
def test_no_target_rows_warns_and_keeps_the_source_proportions(name):
    X, y, sd, _ = _shifted(n_s=90, n_t=0)
    with pytest.warns(UserWarning, match="no target rows"):
        m = ESTIMATORS[name]().fit(X, y, sd)
    np.testing.assert_allclose(m.target_proportions_, m.source_proportions_)
    np.testing.assert_allclose(m.class_weights_, 1.0)


def test_a_singular_confusion_matrix_warns_in_bbse_and_is_regularised_in_rlls():
    X, y, sd, _ = _shifted(n_s=200, n_t=200)
    with pytest.warns(UserWarning, match="singular"):
        m = BBSE(DummyClassifier(strategy="most_frequent"), random_state=0).fit(X, y, sd)
    assert np.all(np.isfinite(m.target_proportions_))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        r = RLLS(DummyClassifier(strategy="most_frequent"), random_state=0).fit(X, y, sd)
    assert np.all(np.isfinite(r.target_proportions_))


def test_corrections_the_estimator_cannot_do_are_refused():
    X, y, sd, _ = _shifted(n_s=60, n_t=60)
    with pytest.raises(ValueError, match="takes no sample_weight"):
        BBSE(KNeighborsClassifier(), correction="retrain").fit(X, y, sd)
    with pytest.raises(ValueError, match="has none"):
        RLLS(LinearSVC()).fit(X, y, sd)
    with pytest.raises(ValueError, match="No source rows"):
        BBSE().fit(X[sd < 0], y[sd < 0], sd[sd < 0])


@pytest.mark.parametrize("name", ESTIMATORS)
def test_several_source_and_target_domains_are_read(name):
    X, y, sd, yt = _shifted()
    sd = sd.copy()
    sd[:700] = 3
    sd[-500:] = -5
    m = ESTIMATORS[name]().fit(X, y, sd)
    assert 0.5 * np.abs(m.target_proportions_ - np.bincount(yt) / yt.size).sum() < 0.05


@pytest.mark.parametrize("name", ESTIMATORS)
def test_string_labels_and_no_sample_domain(name):
    X, y, sd, yt = _shifted(n_s=600, n_t=600)
    ys = np.where(y >= 0, np.array(["a", "b", "c"])[np.maximum(y, 0)], "")
    m = ESTIMATORS[name]().fit(X, ys)                      # domains inferred from ""
    assert m.classes_.tolist() == ["a", "b", "c"]
    assert set(m.predict(X[sd < 0])) <= {"a", "b", "c"}


# ------------------------------------------------------------------- auto and the report ---
def test_registered_as_opt_in_adapters_with_grids():
    from shiftlearn.model_selection import ADAPTERS, DEFAULT_GRIDS, AdaptationSelector
    from shiftlearn.model_selection._select import OPT_IN, make_adapter
    from shiftlearn.workflow import METHODS

    for label in ESTIMATORS:
        assert label in ADAPTERS and label in OPT_IN and label in METHODS
        adapter = make_adapter(label)
        assert adapter._replaces_estimator is True
        assert set(DEFAULT_GRIDS[label]) <= set(adapter.get_params())
    assert not OPT_IN & set(AdaptationSelector()._methods())


def test_adapt_method_bbse_gives_the_corrected_predictions():
    import shiftlearn

    X, y, sd, yt = _shifted(n_s=600, n_t=600)
    res = shiftlearn.adapt(X[sd > 0], y[sd > 0], X[sd < 0], method="BBSE", estimator="logreg",
                           permutations=0)
    assert np.mean(res.predictions == yt) > 0.5


def test_the_adapt_report_states_the_estimated_target_proportions(tmp_path):
    import shiftlearn

    X, y, sd, yt = _shifted(n_s=600, n_t=600)
    res = shiftlearn.adapt(X[sd > 0], y[sd > 0], X[sd < 0], y_target=yt, method="raw",
                           estimator="logreg", permutations=0)
    est = res.report["class_mix_estimated"]
    truth = np.bincount(yt, minlength=3) / yt.size
    assert est["method"] == "BBSE" and len(est["shares"]) == 3
    assert 0.5 * np.abs(np.asarray(est["shares"]) - truth).sum() < 0.05
    predicted = np.array([p for _, _, p in res.report["class_mix"]])
    assert 0.5 * np.abs(predicted - truth).sum() > 0.5 * np.abs(est["shares"] - truth).sum()
    md = res.report.markdown()
    assert "estimated target share (BBSE)" in md
    assert f"{100 * est['shares'][0]:.1f}%" in md
    html = res.report.write(tmp_path / "r.html").read_text(encoding="utf-8")
    assert "estimated target share (BBSE)" in html
    js = res.report.write(tmp_path / "r.json").read_text(encoding="utf-8")
    assert "class_mix_estimated" in js
