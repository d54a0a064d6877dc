"""shiftlearn.reweighting: every estimator against skada on the same rows where skada is right,
against explicit formulas (uLSIF, RuLSIF, the discriminator's odds) and independent solvers
(KMM's and KLIEP's optima), the weights' contract, the memory refusal and the registration."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from _tolerances import EPS
from scipy.optimize import minimize
from sklearn.linear_model import LogisticRegression

from shiftlearn import _resources
from shiftlearn.kernels import rbf_kernel, sigma_from_gamma
from shiftlearn.reweighting import (
    KDERW,
    KLIEP,
    KMM,
    DiscriminatorRW,
    GaussianRW,
    NearestNeighborRW,
    RuLSIF,
    kmm_weights,
    uLSIF,
)

ALL = [KMM(), KLIEP(random_state=0), uLSIF(random_state=0), RuLSIF(random_state=0),
       DiscriminatorRW(random_state=0), NearestNeighborRW(), KDERW(), GaussianRW()]


def _domains(ns=60, nt=40, d=3, seed=0):
    """Unequal sizes, anisotropic, off-centre source; target shifted (the true ratio is not
    constant)."""
    rng = np.random.default_rng(seed)
    Xs = rng.normal(size=(ns, d)) * np.linspace(0.5, 2.0, d) + 1.0
    Xt = rng.normal(size=(nt, d)) + 0.5
    X = np.r_[Xs, Xt]
    sd = np.r_[np.ones(ns, int), -2 * np.ones(nt, int)]
    return X, sd


def _skada():
    return pytest.importorskip("skada")


def _quiet(fn, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn(*args, **kwargs)


def _proportional(a, b, rtol):
    """``a = c b`` for one constant ``c > 0`` (the weights' normalisations differ)."""
    r = np.asarray(a) / np.asarray(b)
    assert np.all(r > 0)
    np.testing.assert_allclose(r, r.mean(), rtol=rtol)


# ---------------------------------------------------------------------------- the contract

@pytest.mark.parametrize("est", ALL, ids=lambda e: type(e).__name__)
def test_weights_contract(est):
    X, sd = _domains()
    est.fit(X, sample_domain=sd)
    w = est.weights_
    src = sd > 0
    assert w.shape == (X.shape[0],) and np.all(np.isfinite(w)) and np.all(w >= 0)
    np.testing.assert_allclose(w[src].mean(), 1.0, rtol=1e2 * EPS)
    np.testing.assert_array_equal(w[~src], 1.0)
    assert np.ptp(w[src]) > 0.1                     # the shift is seen
    np.testing.assert_array_equal(est.transform(X), X)
    # the fitted ratio on the training source rows is the training weights
    np.testing.assert_allclose(est.compute_weights(X, sample_domain=sd), w, rtol=1e-12,
                               atol=1e-12)
    np.testing.assert_allclose(est.compute_weights(X[src]), w[src], rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("est", ALL, ids=lambda e: type(e).__name__)
def test_weights_follow_the_true_ratio(est):
    """Gaussian source N(0, I), target N(0.7 e_1, I): the true ratio is monotone in x_1."""
    rng = np.random.default_rng(1)
    ns, nt = 300, 300
    Xs, Xt = rng.normal(size=(ns, 2)), rng.normal(size=(nt, 2)) + [0.7, 0.0]
    X, sd = np.r_[Xs, Xt], np.r_[np.ones(ns, int), -np.ones(nt, int)]
    true = np.exp(0.7 * Xs[:, 0] - 0.245)
    w = est.fit(X, sample_domain=sd).weights_[:ns]
    # Spearman-free check: a clearly positive correlation (each method's measured value is in
    # benchmarks/reweighting; the weakest, the nearest-neighbour counts, are near 0.6)
    assert np.corrcoef(w, true)[0, 1] > 0.4


@pytest.mark.parametrize("est", ALL, ids=lambda e: type(e).__name__)
def test_no_target_rows_give_uniform_weights_with_a_warning(est):
    X, _ = _domains()
    with pytest.warns(UserWarning, match="no target rows"):
        w = est.fit(X, np.arange(X.shape[0]) % 2).weights_
    np.testing.assert_array_equal(w, 1.0)


def test_no_source_rows_is_refused():
    X, _ = _domains()
    with pytest.raises(ValueError, match="(?i)no source rows"):
        GaussianRW().fit(X, sample_domain=-np.ones(X.shape[0], int))


def test_kmm_memory_is_refused_up_front(monkeypatch):
    X, sd = _domains()
    monkeypatch.setattr(_resources, "MEMORY_BUDGET", 1000)
    with pytest.raises(ValueError, match="KMM.fit on 60 source rows needs about"):
        KMM().fit(X, sample_domain=sd)


# ------------------------------------------------------------------------- against skada

@pytest.mark.parametrize("shrinkage", ["auto", None, 0.3])
def test_gaussian_is_skadas_up_to_the_scale(shrinkage):
    skada = _skada()
    X, sd = _domains()
    ours = GaussianRW(shrinkage=shrinkage).fit(X, sample_domain=sd).weights_[sd > 0]
    theirs = skada.GaussianReweightAdapter(reg=shrinkage).fit(X, sample_domain=sd)
    theirs = theirs.compute_weights(X, sample_domain=sd)[sd > 0]
    # skada's pdf ratio is unscaled; ours is scaled to mean 1: a Cholesky solve against
    # scipy's eigendecomposition, round-off ~ d^2 eps kappa(S) on a log-ratio of O(10)
    _proportional(ours, theirs, rtol=1e5 * EPS)


@pytest.mark.parametrize("shrinkage", ["auto", 0.3])
def test_gaussian_with_fewer_rows_than_features_is_the_dense_ratio(shrinkage, monkeypatch):
    """Fewer rows than features: diag + low rank (Woodbury), never d x d; the same weights as
    the dense covariances, and skada's up to the scale."""
    from shiftlearn.reweighting._density import _covariance, gaussian_log_density

    rng = np.random.default_rng(3)
    ns, nt, d = 15, 20, 40
    Xs = rng.normal(size=(ns, d)) * np.linspace(0.5, 2.0, d)
    Xt = rng.normal(size=(nt, d)) + 0.3
    Xt[:, 5] = 1.0                                    # a constant column in one domain
    X, sd = np.r_[Xs, Xt], np.r_[np.ones(ns, int), -np.ones(nt, int)]
    monkeypatch.setattr(_resources, "MEMORY_BUDGET", 8 * d * d)    # no room for 4 d x d
    est = GaussianRW(shrinkage=shrinkage).fit(X, sample_domain=sd)
    lr = (gaussian_log_density(Xs, Xt.mean(axis=0), _covariance(Xt, shrinkage))
          - gaussian_log_density(Xs, Xs.mean(axis=0), _covariance(Xs, shrinkage)))
    w = np.exp(lr - lr.max())
    # Woodbury against Cholesky of d x d: round-off of log-densities of size O(d), ~ d^2 eps
    # times the covariances' condition (shrinkage keeps it moderate)
    np.testing.assert_allclose(est.weights_[sd > 0], w / w.mean(), rtol=1e6 * EPS)
    np.testing.assert_allclose(est.covariance_target_, _covariance(Xt, shrinkage),
                               atol=1e2 * EPS * np.abs(Xt).max() ** 2)
    with pytest.raises(ValueError, match="GaussianRW.fit on 40 features needs"):
        GaussianRW(shrinkage=shrinkage).fit(np.r_[Xs, Xs, Xs, Xt, Xt], sample_domain=np.r_[
            np.ones(3 * ns, int), -np.ones(2 * nt, int)])


def test_kde_is_skadas():
    skada = _skada()
    from sklearn.neighbors import KernelDensity

    X, sd = _domains()
    ours = KDERW(bandwidth=0.7).fit(X, sample_domain=sd).weights_[sd > 0]
    theirs = skada.DensityReweightAdapter(KernelDensity(bandwidth=0.7)).fit(X, sample_domain=sd)
    theirs = theirs.compute_weights(X, sample_domain=sd)[sd > 0]
    # both scaled to mean 1; log-sum-exp against a tree's exact sums: round-off of n terms
    np.testing.assert_allclose(ours, theirs, rtol=1e3 * EPS)


def test_nearest_neighbour_counts_are_skadas():
    skada = _skada()
    X, sd = _domains()
    src = sd > 0
    ours = NearestNeighborRW().fit(X, sample_domain=sd)
    adapter = skada.NearestNeighborReweightAdapter().fit(X, sample_domain=sd)
    # skada's compute_weights picks its "target" rows with ~ of an index array (so the last
    # n_s rows, sources among them); its count of the true target rows is _get_weights
    np.testing.assert_array_equal(ours.counts_, adapter._get_weights(X[src], X[~src]))
    assert ours.counts_.sum() == (~src).sum()
    smooth = NearestNeighborRW(laplace_smoothing=True).fit(X, sample_domain=sd)
    np.testing.assert_array_equal(smooth.counts_, ours.counts_ + 1.0)


def test_discriminator_is_the_inverse_of_skadas():
    skada = _skada()
    X, sd = _domains()
    src = sd > 0
    ours = DiscriminatorRW(calibration=None).fit(X, sample_domain=sd)
    theirs = skada.DiscriminatorReweightAdapter(LogisticRegression()).fit(X, sample_domain=sd)
    theirs = theirs.compute_weights(X, sample_domain=sd)[src]
    # skada 0.6 returns p(s|x)/p(t|x); the density ratio p_t/p_s is its inverse
    _proportional(ours.weights_[src], 1.0 / theirs, rtol=1e2 * EPS)
    # and the explicit formula, same classifier: p(t|x)/p(s|x) n_s/n_t, scaled to mean 1
    p = LogisticRegression().fit(X, (sd < 0).astype(int)).predict_proba(X[src])[:, 1]
    w = p / (1 - p) * src.sum() / (~src).sum()
    np.testing.assert_allclose(ours.weights_[src], w / w.mean(), rtol=1e2 * EPS)


def test_discriminator_calibration_is_used():
    X, sd = _domains()
    est = DiscriminatorRW(random_state=0).fit(X, sample_domain=sd)
    assert type(est.domain_classifier_).__name__ == "CalibratedClassifierCV"
    with pytest.warns(UserWarning, match="uncalibrated"):
        DiscriminatorRW().fit(X[:61], sample_domain=sd[:61])


def _kmm_problem(X, sd, gamma):
    src = sd > 0
    ns, nt = src.sum(), (~src).sum()
    sig = sigma_from_gamma(gamma)
    K = rbf_kernel(X[src], sigma=sig)
    kappa = ns / nt * rbf_kernel(X[src], X[~src], sigma=sig).sum(axis=1)
    return K, kappa


def test_kmm_reaches_skadas_optimum():
    skada = _skada()
    X, sd = _domains()
    gamma = 0.2
    ours = KMM(bandwidth=sigma_from_gamma(gamma)).fit(X, sample_domain=sd)
    theirs = _quiet(skada.KMMReweightAdapter(gamma=gamma, solver="scipy").fit, X,
                    sample_domain=sd).compute_weights(X, sample_domain=sd)[sd > 0]
    K, kappa = _kmm_problem(X, sd, gamma)

    def f(b):
        return 0.5 * b @ K @ b - kappa @ b

    # same QP, two solvers at tolerance 1e-6: the optima agree to that relative tolerance, and
    # ours is not worse; the weights, in a flat valley, to the solvers' tolerance of b
    assert f(ours.beta_) <= f(theirs) + 1e-6 * abs(f(theirs))
    assert abs(f(ours.beta_) - f(theirs)) <= 1e-6 * abs(f(theirs))
    assert np.corrcoef(ours.beta_, theirs)[0, 1] > 0.999
    np.testing.assert_allclose(ours.beta_, theirs, atol=0.05 * theirs.max())


def test_kmm_active_sum_constraint_is_met():
    X, sd = _domains()
    K, kappa = _kmm_problem(X, sd, 0.2)
    n = kappa.shape[0]
    for eps in (0.01, 0.05):
        beta, lam, _ = kmm_weights(K, kappa, 1000.0, eps, tol=1e-9)
        s = beta.sum()
        assert n * (1 - eps) - 1e-6 * n <= s <= n * (1 + eps) + 1e-6 * n
        assert lam != 0.0
        # against SLSQP on the full QP (box and both sum constraints)
        cons = [{"type": "ineq", "fun": lambda b, e=eps: n * (1 + e) - b.sum()},
                {"type": "ineq", "fun": lambda b, e=eps: b.sum() - n * (1 - e)}]
        ref = minimize(lambda b: 0.5 * b @ K @ b - kappa @ b, np.ones(n),
                       jac=lambda b: K @ b - kappa, bounds=[(0, 1000.0)] * n,
                       constraints=cons, method="SLSQP", options={"ftol": 1e-12,
                                                                  "maxiter": 1000})
        fo, fr = 0.5 * beta @ K @ beta - kappa @ beta, ref.fun
        assert fo <= fr + 1e-6 * abs(fr)


def test_kmm_upper_bound_holds():
    X, sd = _domains()
    est = KMM(B=2.0).fit(X, sample_domain=sd)
    assert est.beta_.max() <= 2.0 + 1e-12 and est.beta_.min() >= 0.0


def test_kliep_reaches_the_optimum():
    """All target rows as centres (deterministic): EM's optimum against SLSQP's on the same
    concave programme; skada 0.6's KLIEP steps by machine epsilon and is left out."""
    X, sd = _domains()
    src = sd > 0
    est = KLIEP(bandwidth=1.0, n_centers=1000, tol=1e-9).fit(X, sample_domain=sd)
    assert est.gap_ <= 1e-9
    C = X[~src]
    np.testing.assert_array_equal(est.centers_, C)
    A = rbf_kernel(C, C, sigma=1.0)
    b = rbf_kernel(X[src], C, sigma=1.0).mean(axis=0)
    # the constraint: mean over the source rows of w is 1, so weights_ is w itself
    np.testing.assert_allclose(b @ est.alpha_, 1.0, rtol=1e2 * EPS)
    np.testing.assert_allclose(est.weights_[src],
                               rbf_kernel(X[src], C, sigma=1.0) @ est.alpha_, rtol=1e-10)
    obj = np.mean(np.log(A @ est.alpha_))
    ref = minimize(lambda a: -np.mean(np.log(np.maximum(A @ a, 1e-300))),
                   np.full(C.shape[0], 1.0 / b.sum()),
                   jac=lambda a: -A.T @ (1.0 / np.maximum(A @ a, 1e-300)) / A.shape[0],
                   bounds=[(0, None)] * C.shape[0], method="SLSQP",
                   constraints=[{"type": "eq", "fun": lambda a: b @ a - 1.0,
                                 "jac": lambda a: b}], options={"ftol": 1e-14,
                                                                "maxiter": 2000})
    # the certified gap bounds the distance to the optimum: obj >= optimum - gap
    assert obj >= -ref.fun - 1e-9
    assert obj <= -ref.fun + 1e-6


def test_kliep_centres_are_target_rows_without_repeats():
    X, sd = _domains(nt=40)
    est = KLIEP(n_centers=10, random_state=0).fit(X, sample_domain=sd)
    assert est.centers_.shape == (10, X.shape[1])
    assert np.unique(est.centers_, axis=0).shape[0] == 10
    tgt = X[sd < 0]
    assert all((np.abs(tgt - c).sum(axis=1) == 0).any() for c in est.centers_)


# ------------------------------------------------------------- closed forms, by the formula

def _lsif_by_formula(X, sd, sigma, reg, alpha):
    src = sd > 0
    C = X[~src]                                  # n_centers >= n_t: every target row
    Ps, Pt = rbf_kernel(X[src], C, sigma=sigma), rbf_kernel(X[~src], C, sigma=sigma)
    H = (1 - alpha) * Ps.T @ Ps / Ps.shape[0] + alpha * Pt.T @ Pt / Pt.shape[0]
    h = Pt.mean(axis=0)
    theta = np.linalg.solve(H + reg * np.eye(H.shape[0]), h)
    return Ps, theta


def test_ulsif_is_the_closed_form():
    X, sd = _domains()
    src = sd > 0
    est = uLSIF(bandwidth=0.8, reg=0.05, n_centers=1000, loo=False).fit(X, sample_domain=sd)
    Ps, theta = _lsif_by_formula(X, sd, 0.8, 0.05, 0.0)
    theta = np.maximum(theta, 0.0)
    np.testing.assert_allclose(est.theta_, theta, rtol=1e-9, atol=1e-12 * np.abs(theta).max())
    w = Ps @ theta
    np.testing.assert_allclose(est.weights_[src], w / w.mean(), rtol=1e-9)


def test_ulsif_leave_one_out_is_the_brute_force_one():
    """The closed-form score of every setting against refitting without each pair of rows
    (the i-th source and target rows), and the chosen setting is the grid's best."""
    from shiftlearn.reweighting._kernel import (
        LOO_BANDWIDTH_FACTORS,
        LOO_REG_FACTORS,
        _ulsif_loo,
    )

    X, sd = _domains(ns=30, nt=25)
    Xs, Xt = X[sd > 0], X[sd < 0]
    C = Xt[:10]
    sigma, reg, scores = _ulsif_loo(Xs, Xt, C, 1.0, 0.1)
    m = min(len(Xs), len(Xt))
    for i, fs in enumerate(LOO_BANDWIDTH_FACTORS):
        for j, fr in enumerate(LOO_REG_FACTORS):
            Ps, Pt = rbf_kernel(Xs, C, sigma=fs), rbf_kernel(Xt, C, sigma=fs)
            J = []
            for k in range(m):
                ks, kt = np.arange(len(Xs)) != k, np.arange(len(Xt)) != k
                H = Ps[ks].T @ Ps[ks] / ks.sum()
                a = np.maximum(0.0, np.linalg.solve(H + 0.1 * fr * np.eye(10),
                                                    Pt[kt].mean(axis=0)))
                J.append(0.5 * (Ps[k] @ a) ** 2 - Pt[k] @ a)
            # two solves of the same well-posed b x b systems (ridge >= 1e-3): round-off
            np.testing.assert_allclose(scores[i, j], np.mean(J), rtol=1e-8, atol=1e-10)
    i, j = np.unravel_index(np.argmin(scores), scores.shape)
    assert (sigma, reg) == (LOO_BANDWIDTH_FACTORS[i], 0.1 * LOO_REG_FACTORS[j])
    est = uLSIF(bandwidth=1.0, reg=0.1, n_centers=1000).fit(X, sample_domain=sd)
    assert est.loo_scores_.shape == (5, 5) and est.sigma_ in [f * 1.0 for f in
                                                              LOO_BANDWIDTH_FACTORS]


@pytest.mark.parametrize("alpha", [0.0, 0.1, 0.5])
def test_rulsif_is_the_closed_form(alpha):
    X, sd = _domains()
    src = sd > 0
    est = RuLSIF(alpha=alpha, bandwidth=0.8, reg=0.05, n_centers=1000).fit(X, sample_domain=sd)
    Ps, theta = _lsif_by_formula(X, sd, 0.8, 0.05, alpha)
    np.testing.assert_allclose(est.theta_, theta, rtol=1e-9, atol=1e-12 * np.abs(theta).max())
    w = np.maximum(Ps @ theta, 0.0)
    np.testing.assert_allclose(est.weights_[src], w / w.mean(), rtol=1e-9)


def test_rulsif_relative_ratio_is_bounded():
    """r = p_t / (alpha p_t + (1 - alpha) p_s) <= 1/alpha: a larger alpha flattens the
    weights."""
    X, sd = _domains()
    spread = [np.std(RuLSIF(alpha=a, random_state=0).fit(X, sample_domain=sd).weights_[sd > 0])
              for a in (0.0, 0.5, 0.9)]
    assert spread[0] > spread[1] > spread[2]


# -------------------------------------------------------------------------- registration

@pytest.mark.parametrize("label", ["KMM", "KLIEP", "uLSIF", "RuLSIF", "DiscriminatorRW",
                                   "NearestNeighborRW", "KDERW", "GaussianRW"])
def test_registered_opt_in_with_a_grid(label):
    from shiftlearn.model_selection import make_adapter
    from shiftlearn.model_selection._grids import DEFAULT_GRIDS
    from shiftlearn.model_selection._select import ADAPTERS, OPT_IN

    assert label in ADAPTERS and label in OPT_IN
    adapter = make_adapter(label)
    assert callable(adapter.compute_weights)
    assert set(DEFAULT_GRIDS[label]) <= set(adapter.get_params())


def test_effective_sample_size_is_kish_and_a_degenerate_weighting_warns():
    """Kish's ``(sum w)^2 / sum w^2``: n for equal weights, 1 for one row holding the mass; a
    density ratio in many dimensions from few rows (the Gaussian fit of 60 rows in 200
    features) puts nearly all the mass on one source row, and fit says so instead of
    handing a classifier one row's worth of data in silence."""
    import warnings

    from shiftlearn.reweighting import GaussianRW
    from shiftlearn.reweighting._base import effective_sample_size

    assert effective_sample_size(np.ones(7)) == pytest.approx(7.0, rel=1e-15)
    assert effective_sample_size(np.r_[1.0, np.zeros(9)]) == pytest.approx(1.0, rel=1e-15)
    assert effective_sample_size(np.r_[2.0, 2.0, 0.0, 0.0]) == pytest.approx(2.0, rel=1e-15)

    rng = np.random.default_rng(0)
    n, d = 60, 200
    X = np.vstack([rng.normal(size=(n, d)), rng.normal(size=(n, d)) + 0.8])
    sd = np.r_[np.ones(n, int), -np.ones(n, int)]
    with pytest.warns(UserWarning, match=r"effective sample size"):
        est = GaussianRW().fit(X, sample_domain=sd)
    assert est.effective_sample_size_ < 2.0

    # no shift, few features: the weights stay spread and nothing is said
    Xq = rng.normal(size=(2 * n, 2))
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        est = GaussianRW().fit(Xq, sample_domain=sd)
    assert est.effective_sample_size_ > 0.5 * n
