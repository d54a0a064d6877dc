"""shiftlearn.mapping: SA, LinOT, EMD, Sinkhorn and ClassRegOT against skada/POT on the same
rows, against explicit formulas, the factored routes, the awkward inputs and the registration."""

from __future__ import annotations

import sys
import warnings

import numpy as np
import pytest
from _tolerances import EPS
from scipy.linalg import sqrtm
from scipy.optimize import linear_sum_assignment

from shiftlearn import _resources
from shiftlearn.mapping import EMD, SA, ClassRegOT, LinOT, Sinkhorn, monge_matrix, pca_basis
from shiftlearn.mapping._linot import factored_monge


def _domains(ns=60, nt=25, d=6, seed=0, classes=3):
    """Unequal sizes, off-centre, anisotropic: symmetric data hide centring and scale bugs."""
    rng = np.random.default_rng(seed)
    Xs = rng.normal(size=(ns, d)) * np.linspace(0.5, 3.0, d) + 1.5
    Xt = rng.normal(size=(nt, d)) @ rng.normal(size=(d, d)) / np.sqrt(d) - 2.0
    X = np.r_[Xs, Xt]
    sd = np.r_[np.ones(ns, int), -2 * np.ones(nt, int)]
    y = np.r_[rng.integers(0, classes, ns), -np.ones(nt, int)]
    return X, y, sd


def _skada():
    return pytest.importorskip("skada")


def _quiet(fn, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn(*args, **kwargs)


# ------------------------------------------------------------------------------------------ SA

@pytest.mark.parametrize("k", [1, 3, 6])
def test_sa_equals_skada_on_the_same_rows(k):
    skada = _skada()
    X, y, sd = _domains()
    ours = SA(n_components=k)
    Z = ours.fit_transform(X, y, sd)
    theirs = skada.SubspaceAlignmentAdapter(n_components=k)
    Zs = theirs.fit_transform(X, y, sample_domain=sd)
    # two thin SVDs of the same rows: round-off of the axes, ~ d eps ||X|| / gap; the data's
    # spectral gaps are O(1), so 1e3 d eps ||X||
    atol = 1e3 * X.shape[1] * EPS * np.abs(X).max()
    np.testing.assert_allclose(Z, Zs, atol=atol)
    new = X[:7] + 0.3
    np.testing.assert_allclose(ours.transform(new), theirs.transform(new), atol=atol)
    src = np.ones(7, int)
    np.testing.assert_allclose(ours.transform(new, sample_domain=src),
                               theirs.transform(new, sample_domain=src, allow_source=True),
                               atol=atol)


def _projector(X, k):
    """The orthogonal projector on the leading k principal axes, from the covariance's eigh
    (an independent computation; sign-free)."""
    Xc = X - X.mean(axis=0)
    w, V = np.linalg.eigh(Xc.T @ Xc)
    P = V[:, ::-1][:, :k]
    return P @ P.T


@pytest.mark.parametrize("shape", [(60, 25, 6), (14, 9, 300)], ids=["n>d", "d>>n"])
def test_sa_is_the_papers_formula(shape):
    """Fernando et al. Eq. (5): source rows X_S X_S^T X_T, target rows X_T; compared through
    the projectors, which do not depend on the signs of the axes (both routes: d x d eigh
    here, thin SVDs in SA)."""
    ns, nt, d = shape
    X, y, sd = _domains(ns, nt, d)
    k = 4
    sa = SA(n_components=k).fit(X, y, sd)
    Z = sa.transform(X, sample_domain=sd)
    Xs, Xt = X[sd > 0], X[sd < 0]
    Pt = sa.components_target_.T
    np.testing.assert_allclose(Pt @ Pt.T, _projector(Xt, k), atol=1e-8)
    np.testing.assert_allclose(sa.components_source_.T @ sa.components_source_,
                               _projector(Xs, k), atol=1e-8)
    np.testing.assert_allclose(Z[sd > 0] @ Pt.T,
                               (Xs - Xs.mean(0)) @ _projector(Xs, k) @ Pt @ Pt.T, atol=1e-8)
    np.testing.assert_allclose(Z[sd < 0], (Xt - Xt.mean(0)) @ Pt, atol=1e-10)
    np.testing.assert_allclose(sa.matrix_, sa.components_source_ @ Pt, atol=0)
    assert Z.shape == (ns + nt, k)


def test_sa_gram_route_and_its_fallback():
    """Fewer rows than features: the Gram route gives the thin SVD's axes (to its round-off,
    eps s_1^2 / gap); rows of rank 3 asked for 9 axes fall back to the SVD (orthonormal axes,
    finite output) instead of dividing by a zero singular value."""
    rng = np.random.default_rng(4)
    X = rng.normal(size=(12, 200)) * np.linspace(3.0, 0.1, 200)
    m, P = pca_basis(X, 5)
    _, s, Vt = np.linalg.svd(X - m, full_matrices=False)
    gap = np.min(np.diff(-s[:6] ** 2))
    np.testing.assert_allclose(P.T @ P, Vt[:5].T @ Vt[:5], atol=100 * EPS * s[0] ** 2 / gap)
    low = np.repeat(rng.normal(size=(4, 200)), 3, axis=0)          # 12 rows, rank 3 centred
    _, P = pca_basis(low, 9)
    np.testing.assert_allclose(P @ P.T, np.eye(9), atol=1e-12)
    Xd = np.r_[low, rng.normal(size=(10, 200))]
    sd = np.r_[np.ones(12, int), -np.ones(10, int)]
    assert np.all(np.isfinite(SA().fit_transform(Xd, None, sd)))


def test_sa_pca_basis_sign_is_scikit_learns():
    from sklearn.decomposition import PCA

    X, _, _ = _domains()
    _, P = pca_basis(X, 4)
    np.testing.assert_allclose(P, PCA(4, svd_solver="full").fit(X).components_, atol=1e-10)


def test_sa_n_components_beyond_the_data_is_lowered_with_a_warning():
    X, y, sd = _domains(12, 5, 8)
    with pytest.warns(UserWarning, match=r"n_components=50 is more than the data allow.*"
                                         r"using n_components=4"):
        sa = SA(n_components=50).fit(X, y, sd)
    assert sa.n_components_ == 4                       # min(12 - 1, 5 - 1, 8)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert SA().fit(X, y, sd).n_components_ == 4   # None: all, silently
        assert SA(n_components=4).fit(X, y, sd).n_components_ == 4    # at the bound


def test_sa_awkward_rows():
    X, y, sd = _domains(20, 9, 5)
    X[:, 2] = 7.0                                      # a constant column
    y[sd > 0] = 0                                      # one class
    Z = SA(n_components=4).fit_transform(X, y, sd)
    assert np.all(np.isfinite(Z))
    with pytest.raises(ValueError, match="at least 2 target rows"):
        SA().fit(X[:21], y[:21], sd[:21])
    Xn = X.copy()
    Xn[3, 1] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        SA().fit(Xn, y, sd)


def test_sa_without_target_rows_warns():
    X, y, sd = _domains()
    with pytest.warns(UserWarning, match="no target rows"):
        sa = SA(n_components=2).fit(X[sd > 0], y[sd > 0])
    np.testing.assert_allclose(sa.components_target_, sa.components_source_)


# --------------------------------------------------------------------------------------- LinOT

def _covariances(X, sd, reg):
    Xs, Xt = X[sd > 0], X[sd < 0]
    Xsc, Xtc = Xs - Xs.mean(0), Xt - Xt.mean(0)
    d = X.shape[1]
    return (Xsc.T @ Xsc / len(Xs) + reg * np.eye(d), Xtc.T @ Xtc / len(Xt) + reg * np.eye(d))


def _monge_atol(Cs, Ct, scale, c=100.0):
    """Round-off of A = Cs^{-1/2} (Cs^{1/2} Ct Cs^{1/2})^{1/2} Cs^{-1/2} computed two ways:
    each eigendecomposition is backward stable (d eps of its norm), and the errors of the middle
    matrix (norm ~ sqrt(||Cs|| ||Ct||)) are amplified by ||Cs^{-1/2}||^2 = 1 / lambda_min(Cs);
    times the size of what A multiplies."""
    d = Cs.shape[0]
    ws, wt = np.linalg.eigvalsh(Cs), np.linalg.eigvalsh(Ct)
    return c * d * EPS * (np.sqrt(ws[-1] * wt[-1]) + ws[-1]) / ws[0] * scale


@pytest.mark.parametrize("reg", [1e-8, 1e-3, 1.0])
def test_linot_equals_skada_on_the_same_rows(reg):
    skada = _skada()
    X, y, sd = _domains()
    Z = LinOT(reg=reg).fit_transform(X, y, sd)
    Zs = skada.LinearOTMappingAdapter(reg=reg).fit_transform(X, y, sample_domain=sd)
    Cs, Ct = _covariances(X, sd, reg)
    np.testing.assert_allclose(Z, Zs, atol=_monge_atol(Cs, Ct, np.abs(X).max()))
    np.testing.assert_array_equal(Z[sd < 0], X[sd < 0])       # target rows as they are


def test_linot_is_the_gaussian_monge_map():
    """Knott & Smith: A = Cs^-1/2 (Cs^1/2 Ct Cs^1/2)^1/2 Cs^-1/2 (scipy's sqrtm, an
    independent square root), b = m_t - m_s A; A is symmetric and pushes Cs onto Ct."""
    X, y, sd = _domains()
    reg = 1e-3
    est = LinOT(reg=reg).fit(X, y, sd)
    Cs, Ct = _covariances(X, sd, reg)
    S = np.real(sqrtm(Cs))
    Si = np.linalg.inv(S)
    A = Si @ np.real(sqrtm(S @ Ct @ S)) @ Si
    atol = _monge_atol(Cs, Ct, 1.0)
    np.testing.assert_allclose(est.matrix_, A, atol=atol)
    np.testing.assert_allclose(est.matrix_ @ Cs @ est.matrix_, Ct,
                               atol=atol * np.abs(Cs).max() * np.abs(A).max() * 10)
    Xs, Xt = X[sd > 0], X[sd < 0]
    np.testing.assert_allclose(est.offset_, Xt.mean(0) - Xs.mean(0) @ A,
                               atol=atol * np.abs(X).max())
    Z = est.transform(Xs, sample_domain=np.ones(len(Xs), int))
    np.testing.assert_allclose(Z.mean(0), Xt.mean(0), atol=1e-10 * np.abs(X).max())


@pytest.mark.parametrize("shape", [(9, 7, 60), (40, 30, 12)], ids=["n<d", "n>d"])
@pytest.mark.parametrize("reg", [1e-2, 1.0])
def test_linot_factored_route_equals_the_dense_formula(shape, reg):
    ns, nt, d = shape
    X, y, sd = _domains(ns, nt, d, seed=3)
    Xs, Xt = X[sd > 0], X[sd < 0]
    Q, D = factored_monge(Xs - Xs.mean(0), Xt - Xt.mean(0), reg)
    Cs, Ct = _covariances(X, sd, reg)
    dense = monge_matrix(Cs, Ct, reg)
    np.testing.assert_allclose(np.eye(d) + Q @ D @ Q.T, dense, atol=_monge_atol(Cs, Ct, 1.0))
    if ns + nt < d:                                  # the estimator takes the factored route
        est = LinOT(reg=reg).fit(X, y, sd)
        assert est.basis_ is not None
        np.testing.assert_allclose(est.matrix_, dense, atol=_monge_atol(Cs, Ct, 1.0))


def test_linot_stays_finite_where_pot_makes_nan():
    """50 rows in 100 features with POT's default reg: its dense square roots of a matrix with
    eigenvalues ~ reg^2 give NaN (skada raises); the factored route is exact and finite, and
    its map pushes Cs onto Ct."""
    X, y, sd = _domains(30, 20, 100, seed=0)
    est = LinOT().fit(X, y, sd)
    assert est.basis_ is not None
    Z = est.transform(X, sample_domain=sd)
    assert np.all(np.isfinite(Z))
    Cs, Ct = _covariances(X, sd, 1e-8)
    A = est.matrix_
    resid = np.abs(A @ Cs @ A - Ct).max() / np.abs(Ct).max()
    assert resid < 1e-5, resid
    skada = pytest.importorskip("skada")
    try:
        Zs = _quiet(skada.LinearOTMappingAdapter().fit_transform, X, y, sample_domain=sd)
    except ValueError:                                 # "array must not contain infs or NaNs"
        return
    assert not np.all(np.isfinite(Zs))


def test_linot_awkward_rows():
    X, y, sd = _domains(30, 12, 5)
    X[:, 1] = 3.0                                      # constant column: reg keeps it defined
    y[sd > 0] = 1
    Z = LinOT().fit_transform(X, y, sd)
    assert np.all(np.isfinite(Z))
    np.testing.assert_allclose(Z[sd > 0, 1], 3.0, atol=1e-6)
    with pytest.raises(ValueError, match="source covariance is singular.*reg"):
        LinOT(reg=0).fit(X, y, sd)
    with pytest.raises(ValueError, match="at least 2 target rows"):
        LinOT().fit(X[:31], y[:31], sd[:31])
    Xn = X.copy()
    Xn[0, 0] = np.inf
    with pytest.raises(ValueError, match="infinity|inf"):
        LinOT().fit(Xn, y, sd)
    np.testing.assert_array_equal(LinOT().fit(X, y, sd).transform(X[:4]), X[:4])


# ------------------------------------------------------------------------------ OT barycentric

_OT_PAIRS = [
    ("EMD", lambda: EMD(), "OTMappingAdapter", {}),
    ("Sinkhorn", lambda: Sinkhorn(reg_e=2.0), "EntropicOTMappingAdapter", {"reg_e": 2.0}),
    ("ClassRegOT-lpl1", lambda: ClassRegOT(reg_e=2.0, reg_cl=1.0),
     "ClassRegularizerOTMappingAdapter", {"reg_e": 2.0, "reg_cl": 1.0}),
    ("ClassRegOT-l1l2", lambda: ClassRegOT(reg_e=2.0, reg_cl=1.0, norm="l1l2"),
     "ClassRegularizerOTMappingAdapter", {"reg_e": 2.0, "reg_cl": 1.0, "norm": "l1l2"}),
]


@pytest.mark.parametrize("name,ours,theirs,kw", _OT_PAIRS, ids=[p[0] for p in _OT_PAIRS])
def test_ot_maps_equal_skada_on_the_same_rows(name, ours, theirs, kw):
    """The same POT solvers: the plans agree to round-off (EMD, l1l2) or to the inner
    Sinkhorn's tolerance (Sinkhorn, lpl1: the reduced cost, and our class sums against POT's
    n_s x n_t x classes array), and so do the barycentres."""
    skada = _skada()
    pytest.importorskip("ot")
    X, y, sd = _domains(50, 35, 4)
    est = ours()
    Z = _quiet(est.fit_transform, X, y, sd)
    ref = getattr(skada, theirs)(**kw)
    Zs = _quiet(ref.fit_transform, X, y, sample_domain=sd)
    atol = 1e-9 * np.abs(X).max()
    np.testing.assert_allclose(Z, Zs, atol=atol)
    rng = np.random.default_rng(1)
    new = X[sd > 0][:9] + rng.normal(scale=0.05, size=(9, 4))
    src = np.ones(len(new), int)
    mine = est.transform(new, sample_domain=src)
    if name != "Sinkhorn":       # skada's entropic map extends with its dual potential
        np.testing.assert_allclose(mine, ref.transform(new, sample_domain=src,
                                                       allow_source=True), atol=atol)
    # the nearest-neighbour rule, explicitly
    S = X[sd > 0]
    idx = np.argmin(((new[:, None, :] - S[None]) ** 2).sum(-1), axis=1)
    np.testing.assert_allclose(mine, Z[sd > 0][idx] + new - S[idx], atol=atol)
    np.testing.assert_array_equal(est.transform(new), new)       # target rows as they are
    assert est.n_iter_ >= 1


def test_emd_with_equal_sizes_is_the_optimal_assignment():
    """Uniform weights and n_s = n_t: the exact plan is a permutation (Birkhoff), the one of
    the linear assignment problem (scipy, an independent solver); each source row lands on
    its assigned target row."""
    pytest.importorskip("ot")
    X, y, sd = _domains(30, 30, 3, seed=5)
    Xs, Xt = X[sd > 0], X[sd < 0]
    Z = EMD().fit_transform(X, y, sd)
    C = ((Xs[:, None, :] - Xt[None]) ** 2).sum(-1)
    _, col = linear_sum_assignment(C)
    np.testing.assert_allclose(Z[sd > 0], Xt[col], atol=1e-12 * np.abs(X).max())


def test_sinkhorn_with_a_large_entropy_sends_every_row_to_the_target_mean():
    """reg_e -> inf: the plan tends to the product a b^T, so every image to the target mean
    (first order in max C / reg_e)."""
    pytest.importorskip("ot")
    X, y, sd = _domains(20, 15, 3)
    Z = Sinkhorn(reg_e=1e6).fit_transform(X, y, sd)
    Xs, Xt = X[sd > 0], X[sd < 0]
    spread = ((Xs[:, None, :] - Xt[None]) ** 2).sum(-1).max() / 1e6
    np.testing.assert_allclose(Z[sd > 0], np.tile(Xt.mean(0), (20, 1)),
                               atol=2 * spread * np.abs(Xt).max())


def test_entropic_plan_is_the_log_domain_plan():
    """Domains 60 apart (costs ~1e4): exp(-C / reg) of the raw cost is 0 everywhere, the
    reduced cost keeps a 1 per row and column; with reg = 1 the scaling-domain Sinkhorn
    converges to the log-domain plan (to its stopping tolerance on the marginals)."""
    ot = pytest.importorskip("ot")
    from shiftlearn.mapping._ot import entropic_plan

    rng = np.random.default_rng(0)
    Xs, Xt = rng.normal(size=(40, 3)), rng.normal(size=(30, 3)) * 2 + 60
    a, b = np.full(40, 1 / 40), np.full(30, 1 / 30)
    M = ot.dist(Xs, Xt)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        plan, n_iter = entropic_plan(ot, a, b, M, 1.0, 1000, 1e-9)
        ref = ot.sinkhorn(a, b, M, 1.0, method="sinkhorn_log", numItermax=1000, stopThr=1e-9)
    assert np.all(np.isfinite(plan)) and n_iter >= 1
    np.testing.assert_allclose(plan, ref, atol=1e-9)
    np.testing.assert_allclose(plan.sum(1), a, atol=1e-8)


def test_entropic_plan_with_a_tiny_entropy_keeps_its_marginals():
    """reg = 0.002 against costs ~1e4: the scaling domain meets round-off, and a plain
    log-domain Sinkhorn needs ~max C / reg iterations (its 1000 leave a column marginal off by
    more than the marginal itself). The plan must still be a coupling, near the exact one:
    for the entropic optimum ``<P, C> - <E, C>`` lies in ``[0, reg log(n_s n_t)]`` (E: the
    exact plan), widened by what the marginal violation can move the cost."""
    ot = pytest.importorskip("ot")
    from shiftlearn.mapping._ot import entropic_plan

    rng = np.random.default_rng(0)
    Xs, Xt = rng.normal(size=(40, 3)), rng.normal(size=(30, 3)) * 2 + 60
    a, b = np.full(40, 1 / 40), np.full(30, 1 / 30)
    M = ot.dist(Xs, Xt)
    reg = 0.002
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        plan, _ = entropic_plan(ot, a, b, M, reg, 1000, 1e-9)
    np.testing.assert_allclose(plan.sum(1), a, atol=1e-12)
    off = np.abs(plan.sum(0) - b).sum()
    assert off < 1e-3 * b.sum()                       # well inside one row's share, 1/30
    gap = (plan * M).sum() - (ot.emd(a, b, M) * M).sum()
    slack = off * M.max()
    assert -slack <= gap <= reg * np.log(40 * 30) + slack


def test_entropic_plan_short_of_its_tolerance_warns_with_the_violation():
    """A cap too small to reach ``tol``: the plan comes back with one ConvergenceWarning
    that gives the marginal violation and the remedies."""
    ot = pytest.importorskip("ot")
    from sklearn.exceptions import ConvergenceWarning

    from shiftlearn.mapping._ot import entropic_plan

    rng = np.random.default_rng(1)
    Xs, Xt = rng.normal(size=(30, 3)), rng.normal(size=(20, 3)) * 2 + 30
    a, b = np.full(30, 1 / 30), np.full(20, 1 / 20)
    with pytest.warns(ConvergenceWarning, match="marginals off by .*Raise max_iter"):
        entropic_plan(ot, a, b, ot.dist(Xs, Xt), 0.01, 10, 1e-14)


def test_classregot_lpl1_plan_is_pots():
    ot = pytest.importorskip("ot")
    from shiftlearn.mapping._ot import _lpl1_plan

    X, y, sd = _domains(40, 30, 4)
    Xs, Xt, ys = X[sd > 0], X[sd < 0], y[sd > 0]
    a, b = np.full(40, 1 / 40), np.full(30, 1 / 30)
    M = ot.dist(Xs, Xt)
    mine = _lpl1_plan(ot, a, ys, b, M, 2.0, 1.0, 10, 200, 1e-8)
    theirs = ot.da.sinkhorn_lpl1_mm(a, ys, b, M, 2.0, 1.0, numItermax=10,
                                    numInnerItermax=200, stopInnerThr=1e-8)
    # the same iteration on a cost shifted by row and column constants: the inner Sinkhorns
    # stop within their tolerance (1e-8 on the marginals) of each other
    np.testing.assert_allclose(mine, theirs, atol=1e-8)
    # the penalty at work: each target row takes its mass from fewer classes than Sinkhorn's
    plain = ot.sinkhorn(a, b, M, 2.0)
    onehot = np.eye(3)[ys]

    def spread(plan):
        g = onehot.T @ plan
        return float(np.sum(np.sqrt(g)))

    assert spread(mine) < spread(plain)


def test_classregot_stays_right_where_pot_loses_the_plan():
    """Domains 60 apart (costs ~1e4, reg_e = 1): exp(-C / reg_e) underflows to 0, POT's
    sinkhorn_lpl1_mm returns a zero plan (skada then maps every source row to 0); on the
    reduced cost the plan keeps its marginals and the images lie among the target rows."""
    ot = pytest.importorskip("ot")
    from shiftlearn.mapping._ot import _lpl1_plan

    rng = np.random.default_rng(0)
    Xs, Xt = rng.normal(size=(40, 4)), rng.normal(size=(30, 4)) * 2 + 60
    ys = rng.integers(0, 3, 40)
    a, b = np.full(40, 1 / 40), np.full(30, 1 / 30)
    M = ot.dist(Xs, Xt)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        plan = _lpl1_plan(ot, a, ys, b, M, 1.0, 1.0, 10, 200, 1e-8)
        pots = ot.da.sinkhorn_lpl1_mm(a, ys, b, M, 1.0, 1.0)
        X = np.r_[Xs, Xt]
        sd = np.r_[np.ones(40, int), -np.ones(30, int)]
        Z = ClassRegOT(reg_cl=1.0).fit_transform(X, np.r_[ys, -np.ones(30, int)], sd)
    assert pots.sum() == 0                           # what the test guards against
    np.testing.assert_allclose(plan.sum(1), a, atol=1e-12)
    assert np.all(np.isfinite(Z))
    lo, hi = Xt.min(0), Xt.max(0)                    # barycentres of target rows
    assert np.all((Z[sd > 0] >= lo - 1e-9) & (Z[sd > 0] <= hi + 1e-9))


def test_classregot_needs_the_source_labels():
    X, y, sd = _domains(20, 10, 3)
    with pytest.raises(ValueError, match="labels"):
        ClassRegOT().fit(X, None, sd)
    y2 = y.copy()
    y2[0] = -1
    with pytest.raises(ValueError, match="unlabeled"):
        ClassRegOT().fit(X, y2, sd)
    y[sd > 0] = 4                                     # one class: Sinkhorn's plan, finite
    pytest.importorskip("ot")
    assert np.all(np.isfinite(_quiet(ClassRegOT(reg_e=5.0).fit_transform, X, y, sd)))


@pytest.mark.parametrize("cls", [EMD, Sinkhorn, ClassRegOT])
def test_ot_plans_beyond_memory_are_refused_up_front(cls, monkeypatch):
    X, y, sd = _domains(40, 30, 3)
    monkeypatch.setattr(_resources, "MEMORY_BUDGET", 40 * 30 * 8)
    with pytest.raises(ValueError, match=rf"{cls.__name__}.fit on 40 source and 30 target "
                                         r"rows needs about .* GiB.*MEMORY_BUDGET"):
        cls().fit(X, y, sd)


@pytest.mark.parametrize("shape,route", [((30, 20, 8), "d x d"), ((6, 5, 40), "rows")])
def test_linear_maps_beyond_memory_are_refused_up_front(shape, route, monkeypatch):
    """Both sides of LinOT's route switch: the dense route's d x d matrices, the factored
    route's n x d rows; SA's rows."""
    X, y, sd = _domains(*shape)
    n, d = shape[0] + shape[1], shape[2]
    need = 6 * d * d * 8 if route == "d x d" else 3 * n * d * 8
    monkeypatch.setattr(_resources, "MEMORY_BUDGET", need - 8)
    with pytest.raises(ValueError, match=rf"LinOT.fit on {d} features needs about"):
        LinOT().fit(X, y, sd)
    monkeypatch.setattr(_resources, "MEMORY_BUDGET", need)
    LinOT().fit(X, y, sd)                             # at the budget: accepted
    monkeypatch.setattr(_resources, "MEMORY_BUDGET", 3 * shape[0] * d * 8 - 8)
    with pytest.raises(ValueError, match=rf"SA.fit on {d} features needs about"):
        SA().fit(X, y, sd)


@pytest.mark.parametrize("cls", [EMD, Sinkhorn, ClassRegOT])
def test_ot_maps_without_pot_say_how_to_install_it(cls, monkeypatch):
    X, y, sd = _domains(10, 8, 2)
    monkeypatch.setitem(sys.modules, "ot", None)      # import ot raises ImportError
    with pytest.raises(ImportError, match=r"pip install shiftlearn\[ot\]"):
        cls().fit(X, y, sd)


def test_ot_maps_awkward_rows():
    pytest.importorskip("ot")
    X, y, sd = _domains(15, 10, 4)
    X[:, 0] = 2.0
    X[1] = X[0]                                       # duplicated source rows
    for est in (EMD(), Sinkhorn(reg_e=5.0), ClassRegOT(reg_e=5.0)):
        Z = _quiet(est.fit_transform, X, y, sd)
        assert np.all(np.isfinite(Z))
    Xn = X.copy()
    Xn[2, 2] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        EMD().fit(Xn, y, sd)
    with pytest.warns(UserWarning, match="no target rows"):
        EMD().fit(X[sd > 0], y[sd > 0])


# -------------------------------------------------------------------------------- registration

def test_registered_under_the_fields_names_but_not_in_the_default_pool():
    from shiftlearn.model_selection import ADAPTERS, DEFAULT_GRIDS, AdaptationSelector
    from shiftlearn.model_selection._select import OPT_IN

    for name in ("SA", "LinOT", "EMD", "Sinkhorn", "ClassRegOT"):
        assert name in ADAPTERS and name in DEFAULT_GRIDS and name in OPT_IN
    assert not OPT_IN & set(AdaptationSelector()._methods())
    assert "SA" in AdaptationSelector(methods=["SA"])._methods()


def test_command_line_method_and_candidates(tmp_path):
    from shiftlearn import cli

    X, y, sd = _domains(60, 40, 3, seed=2)
    rows = ["a,b,c,label"] + [",".join(f"{v:.6g}" for v in x) + f",{c}"
                              for x, c in zip(X[sd > 0], y[sd > 0], strict=True)]
    (tmp_path / "s.csv").write_text("\n".join(rows) + "\n")
    (tmp_path / "t.csv").write_text("\n".join(["a,b,c"] + [",".join(f"{v:.6g}" for v in x)
                                                          for x in X[sd < 0]]) + "\n")
    for extra in (["--method", "SA"], ["--method", "auto", "--candidates", "SA,LinOT"]):
        out = tmp_path / "p.csv"
        code = cli.main(["adapt", str(tmp_path / "s.csv"), "--target", str(tmp_path / "t.csv"),
                         "--label-column", "label", "--out", str(out), "--n-jobs", "1",
                         *extra])
        assert code == 0
        assert len(out.read_text().splitlines()) == 1 + 40


def _unit_problem():
    rng = np.random.default_rng(0)
    Xs, Xt = rng.normal(size=(80, 5)), rng.normal(size=(60, 5)) + 0.5
    return np.full(80, 1 / 80), np.full(60, 1 / 60), ((Xs[:, None] - Xt[None]) ** 2).sum(-1)


def test_entropic_plan_keeps_a_scaling_plan_within_sqrt_tol(monkeypatch):
    """Scaling-domain marginals off by less than sqrt(tol) (here ~4e-8 against tol 1e-12):
    the plan is kept, with the warning, and the costly log-stabilised solver does not run."""
    ot = pytest.importorskip("ot")
    from sklearn.exceptions import ConvergenceWarning

    from shiftlearn.mapping._ot import _violation, entropic_plan

    def refuse(*args, **kwargs):
        raise AssertionError("epsilon scaling ran")

    monkeypatch.setattr(ot.bregman, "sinkhorn_epsilon_scaling", refuse)
    a, b, M = _unit_problem()
    with pytest.warns(ConvergenceWarning, match="marginals off by"):
        plan, n_iter = entropic_plan(ot, a, b, M, 0.5, 100, 1e-12)
    assert 1e-12 < _violation(plan, a, b) < 1e-6 and n_iter <= 100


def test_entropic_plan_far_from_tol_takes_the_log_stabilised_plan():
    """Marginals off by more than sqrt(tol) after max_iter (20 iterations: ~4e-3): epsilon
    scaling runs and its plan, much nearer a coupling, is returned."""
    ot = pytest.importorskip("ot")
    from shiftlearn.mapping._ot import _violation, entropic_plan

    a, b, M = _unit_problem()
    first = ot.sinkhorn(a, b, M - M.min(1, keepdims=True), 0.5, numItermax=20, stopThr=1e-14)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        plan, _ = entropic_plan(ot, a, b, M, 0.5, 20, 1e-12)
    assert _violation(first, a, b) > 1e-6
    assert _violation(plan, a, b) < 1e-3 * _violation(first, a, b)


def test_a_stabilised_plan_scaled_by_an_absorption_is_formed_again():
    """POT's stabilised Sinkhorn resets its scalings to 1/n when it absorbs them; stopping
    right after, it returns the plan scaled by ~1/(n_s n_t). Given such a plan and its
    potentials, the repair re-forms it from the potentials: a coupling again."""
    ot = pytest.importorskip("ot")
    from shiftlearn.mapping._ot import _repaired, _violation

    a, b, M = _unit_problem()
    good, log = ot.bregman.sinkhorn_stabilized(a, b, M, 0.5, numItermax=2000, stopThr=1e-12,
                                               log=True)
    broken = good / (80 * 60)
    off, plan, _, _ = _repaired(ot, a, b, M, 0.5, 1e-9, broken, log, 1)
    assert _violation(broken, a, b) > 0.1
    assert off == _violation(plan, a, b) < 1e-9
    np.testing.assert_allclose(plan, good, atol=1e-9)
