"""MultiLinOT (multi-source linear Monge alignment onto a Bures-Wasserstein barycenter) and
MMDLS (Zhang et al.'s location-scale conditional-shift map)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from _tolerances import EPS

from shiftlearn import _resources
from shiftlearn.mapping import MMDLS, MultiLinOT, bures_barycenter, monge_matrix
from shiftlearn.mapping._mmdls import mmdls_objective


def _sqrtm(C):
    w, V = np.linalg.eigh((C + C.T) / 2)
    return (V * np.sqrt(np.maximum(w, 0))) @ V.T


def _domains(seed=0, d=4, sizes=(80, 70, 60), n_target=50):
    """Source domains of different covariances and means, and one target domain."""
    rng = np.random.default_rng(seed)
    blocks, sd = [], []
    for i, n in enumerate(sizes):
        blocks.append(rng.normal(size=(n, d)) @ rng.normal(size=(d, d)) + 3 * rng.normal(size=d))
        sd.append(np.full(n, i + 1))
    blocks.append(2 * rng.normal(size=(n_target, d)) - 1)
    sd.append(np.full(n_target, -1))
    return np.vstack(blocks), np.concatenate(sd)


def _cov(X):
    Xc = X - X.mean(axis=0)
    return Xc.T @ Xc / X.shape[0]


# ------------------------------------------------------------------------------- MultiLinOT

def test_multilinot_barycenter_solves_the_fixed_point():
    """Two (and three) source Gaussians: ``C_b`` satisfies Agueh and Carlier's equation
    ``C_b = mean_k (C_b^{1/2} C_k C_b^{1/2})^{1/2}`` to the stopping tolerance (the residual of
    a step is of the order of the last change, ``tol = 1e-12`` here, plus round-off of the
    square roots); the barycenter's mean is the mean of the means."""
    for sizes in ((80, 70), (80, 70, 60)):
        X, sd = _domains(sizes=sizes)
        ml = MultiLinOT(reg=0, tol=1e-12).fit(X, sample_domain=sd)
        Cb = ml.barycenter_covariance_
        covs = [_cov(X[sd == k]) for k in range(1, len(sizes) + 1)]
        R = _sqrtm(Cb)
        rhs = sum(_sqrtm(R @ C @ R) for C in covs) / len(covs)
        assert np.abs(rhs - Cb).max() <= 1e-9 * np.abs(Cb).max()
        means = [X[sd == k].mean(axis=0) for k in range(1, len(sizes) + 1)]
        np.testing.assert_allclose(ml.barycenter_mean_, np.mean(means, axis=0),
                                   atol=1e3 * EPS * np.abs(X).max())


def test_multilinot_maps_every_domain_onto_the_barycenter():
    """Each mapped domain (sources and the target) has the barycenter's mean and covariance:
    ``A C_k A = C_b`` is what the Monge map does (to the round-off of the square roots)."""
    X, sd = _domains()
    ml = MultiLinOT(reg=0).fit(X, sample_domain=sd)
    Z = ml.transform(X, sample_domain=sd)
    np.testing.assert_allclose(Z, ml.fit_transform(X, sample_domain=sd))
    Cb = ml.barycenter_covariance_
    for k in (1, 2, 3, -1):
        Zk = Z[sd == k]
        np.testing.assert_allclose(Zk.mean(axis=0), ml.barycenter_mean_,
                                   atol=1e-9 * np.abs(X).max())
        np.testing.assert_allclose(_cov(Zk), Cb, atol=1e-8 * np.abs(Cb).max())


def test_multilinot_equals_skada_where_skada_is_right():
    """skada 0.6's ``MultiLinearMongeAlignmentAdapter`` (POT's barycenter fixed point, which
    stops when ``||C' - C||_F <= 1e-8``; no ridge, its ``reg`` is that tolerance) on domains
    with more rows than features: the same maps to its stopping tolerance (the fixed point
    contracts, so its barycenter is within a few 1e-8 of the solution: 1e-6 relative)."""
    skada = pytest.importorskip("skada")
    X, sd = _domains()
    ours = MultiLinOT(reg=0).fit(X, sample_domain=sd)
    ref = skada.MultiLinearMongeAlignmentAdapter().fit(X, sample_domain=sd)
    Zs = ref.transform(X, sample_domain=sd, allow_source=True)
    np.testing.assert_allclose(ours.transform(X, sample_domain=sd), Zs,
                               atol=1e-6 * np.abs(Zs).max())
    np.testing.assert_allclose(ours.barycenter_covariance_, ref.barycenter_[1],
                               atol=1e-6 * np.abs(ref.barycenter_[1]).max())


def test_multilinot_where_skada_crashes():
    """More features than rows per domain: skada's maps need ``C_k^{-1/2}`` of singular
    covariances and raise (non-finite values); with ``reg > 0`` ours is finite, takes the
    factored route and equals the dense formula written here (covariances plus ``reg I``,
    :func:`bures_barycenter`, :func:`monge_matrix`) to the fixed point's tolerance."""
    rng = np.random.default_rng(1)
    d = 40
    X = np.vstack([rng.normal(size=(10, d)), rng.normal(size=(12, d)) + 1,
                   2 * rng.normal(size=(8, d))])
    sd = np.r_[np.ones(10, int), 2 * np.ones(12, int), -np.ones(8, int)]
    skada = pytest.importorskip("skada")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            Zs = skada.MultiLinearMongeAlignmentAdapter().fit(X, sample_domain=sd).transform(
                X, sample_domain=sd, allow_source=True)
            assert not np.all(np.isfinite(Zs))
        except (ValueError, np.linalg.LinAlgError):
            pass
    reg = 1e-2
    ml = MultiLinOT(reg=reg, tol=1e-12).fit(X, sample_domain=sd)
    assert ml.basis_ is not None and ml.basis_.shape[1] <= 30        # r <= n < d
    Z = ml.transform(X, sample_domain=sd)
    assert np.all(np.isfinite(Z))
    covs = {k: _cov(X[sd == k]) + reg * np.eye(d) for k in (1, 2, -1)}
    Cb, _, _ = bures_barycenter(np.stack([covs[1], covs[2]]), tol=1e-12)
    np.testing.assert_allclose(ml.barycenter_covariance_, Cb, atol=1e-9 * np.abs(Cb).max())
    mb = (X[sd == 1].mean(axis=0) + X[sd == 2].mean(axis=0)) / 2
    for k in (1, 2, -1):
        A = monge_matrix(covs[k], Cb, reg)
        ref = (X[sd == k] - X[sd == k].mean(axis=0)) @ A + mb
        np.testing.assert_allclose(Z[sd == k], ref, atol=1e-8 * np.abs(ref).max())


@pytest.mark.parametrize("d", [4, 200])
def test_multilinot_test_time_domain(d):
    """A domain not seen in ``fit`` is mapped from its own rows onto the fitted barycenter:
    the same as fitting with it as a target domain (the barycenter is of the sources only),
    on the dense and on the factored route."""
    rng = np.random.default_rng(2)
    Xs = np.vstack([rng.normal(size=(40, d)), rng.normal(size=(50, d)) * 0.5 + 1])
    sds = np.r_[np.ones(40, int), 2 * np.ones(50, int)]
    Xn = 3 * rng.normal(size=(30, d)) - 2
    ml = MultiLinOT(reg=1e-3).fit(Xs, sample_domain=sds)
    Zn = ml.transform(Xn, sample_domain=np.full(30, -7))
    both = MultiLinOT(reg=1e-3).fit(np.vstack([Xs, Xn]),
                                    sample_domain=np.r_[sds, np.full(30, -7)])
    np.testing.assert_allclose(Zn, both.transform(Xn), atol=1e-8 * np.abs(Zn).max())
    np.testing.assert_allclose(Zn.mean(axis=0), ml.barycenter_mean_,
                               atol=1e-9 * np.abs(Xn).max())


def test_multilinot_awkward_inputs():
    X, sd = _domains()
    ml = MultiLinOT().fit(X, sample_domain=sd)
    np.testing.assert_allclose(ml.transform(X[sd == -1]),        # the one target domain
                               ml.transform(X[sd == -1], sample_domain=np.full(50, -1)))
    sd2 = sd.copy()
    sd2[-10:] = -2
    two = MultiLinOT().fit(X, sample_domain=sd2)
    with pytest.raises(ValueError, match="ambiguous.*pass sample_domain"):
        two.transform(X)
    with pytest.raises(ValueError, match="n_samples = 1"):
        MultiLinOT().fit(X[:-49], sample_domain=sd[:-49])
    with pytest.raises(ValueError, match="n_samples = 1"):
        ml.transform(X[:1], sample_domain=[5])
    with pytest.raises(ValueError, match="singular.*reg"):
        MultiLinOT(reg=0).fit(np.c_[X, np.zeros(len(X))], sample_domain=sd)
    one = MultiLinOT().fit(X[sd == 1])                          # one domain: the identity
    assert one.n_iter_ == 0
    np.testing.assert_allclose(one.transform(X[sd == 1]), X[sd == 1],
                               atol=1e-6 * np.abs(X).max())
    Xn = X.copy()
    Xn[3, 1] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        MultiLinOT().fit(Xn, sample_domain=sd)


def test_multilinot_memory_refused_up_front(monkeypatch):
    X, sd = _domains(d=40)
    monkeypatch.setattr(_resources, "MEMORY_BUDGET", 5 * 40 * 40 * 8)
    with pytest.raises(ValueError, match="MultiLinOT.fit on 40 features"):
        MultiLinOT(reg=0).fit(X, sample_domain=sd)


# ------------------------------------------------------------------------------------ MMDLS

def _conditional_shift(seed=0, m=80, n=80):
    """Two classes; the target's class-conditionals are scaled and shifted source ones."""
    rng = np.random.default_rng(seed)
    ys = rng.integers(0, 2, m)
    Xs = rng.normal(size=(m, 2)) + 2.0 * ys[:, None]
    yt = rng.integers(0, 2, n)
    Xt = (rng.normal(size=(n, 2)) + 2.0 * yt[:, None]) * 1.5 + 0.7
    X = np.vstack([Xs, Xt])
    y = np.r_[ys, -np.ones(n, int)]
    sd = np.r_[np.ones(m, int), -np.ones(n, int)]
    return X, y, sd, yt


@pytest.mark.parametrize("kind", ["classes", "continuous"])
def test_mmdls_gradient_by_finite_differences(kind):
    """The analytic gradient of :func:`mmdls_objective` against central differences: the
    difference error is ``O(h^2)`` times the third derivative plus ``eps J / h`` of
    round-off, about 1e-9 here for ``h = 1e-6``; 1e-6 of the gradient's scale is a bound."""
    rng = np.random.default_rng(0)
    m, n, d = 25, 20, 3
    Xs, Xt = rng.normal(size=(m, d)), 2 * rng.normal(size=(n, d)) + 1
    if kind == "classes":
        R = rng.integers(0, 3, m)
        R[:3] = [0, 1, 2]
        k = 3
    else:
        R = rng.random((m, m))
        k = m
    a = rng.random(m)
    a /= a.sum()
    p = rng.normal(size=2 * k * d)
    J, grad, _ = mmdls_objective(p, Xs, Xt, R, a, 1.3, 0.2)
    h = 1e-6
    fd = np.array([(mmdls_objective(p + h * e, Xs, Xt, R, a, 1.3, 0.2)[0]
                    - mmdls_objective(p - h * e, Xs, Xt, R, a, 1.3, 0.2)[0]) / (2 * h)
                   for e in np.eye(p.size)])
    np.testing.assert_allclose(grad, fd, atol=1e-6 * np.abs(grad).max())
    if kind == "classes":                 # the codes are the one-hot matrix
        J1, g1, _ = mmdls_objective(p, Xs, Xt, np.eye(3)[R], a, 1.3, 0.2)
        assert J1 == pytest.approx(J, rel=1e-12)
        np.testing.assert_allclose(g1, grad, rtol=1e-10, atol=1e-14)


def _mmd2(A, B, wa, sigma):
    """Biased MMD² of the weighted rows ``A`` against the uniform rows ``B``, written out."""
    def k(U, V):
        return np.exp(-((U[:, None, :] - V[None, :, :]) ** 2).sum(-1) / (2 * sigma**2))
    wb = np.full(len(B), 1 / len(B))
    return wa @ k(A, A) @ wa - 2 * wa @ k(A, B) @ wb + wb @ k(B, B) @ wb


def test_mmdls_reduces_the_mmd_it_reports():
    """``mmd_before_`` and ``mmd_`` are the biased MMD² (Gaussian kernel of ``sigma_``) of the
    source rows before and after the map against the target rows, written out here; the map
    reduces it (here by more than 10x) and the fitted per-class maps are the classes'."""
    X, y, sd, _ = _conditional_shift()
    mm = MMDLS().fit(X, y, sd)
    src, tgt = sd > 0, sd < 0
    w = np.full(src.sum(), 1 / src.sum())
    assert mm.mmd_before_ == pytest.approx(_mmd2(X[src], X[tgt], w, mm.sigma_), rel=1e-10)
    Z = mm.fit_transform(X, y, sd)
    assert mm.mmd_ == pytest.approx(_mmd2(Z[src], X[tgt], w, mm.sigma_), rel=1e-10)
    assert mm.mmd_ < 0.1 * mm.mmd_before_
    np.testing.assert_array_equal(Z[tgt], X[tgt])
    for c in (0, 1):                                 # one scale and offset per class
        rows = y[src] == c
        assert np.ptp(mm.scales_[rows], axis=0).max() == 0
        assert np.ptp(mm.offsets_[rows], axis=0).max() == 0


def test_mmdls_recovers_a_location_scale_shift():
    """One class, the target a scaled and shifted copy of the source distribution
    (``x_t = 1.5 x + 0.7``): the fitted map is close to it (MMD with 200 rows a side
    identifies it to sampling error, ~0.1)."""
    rng = np.random.default_rng(3)
    Xs = rng.normal(size=(200, 2))
    Xt = 1.5 * rng.normal(size=(200, 2)) + 0.7
    X = np.vstack([Xs, Xt])
    y = np.r_[np.zeros(200, int), -np.ones(200, int)]
    sd = np.r_[np.ones(200, int), -np.ones(200, int)]
    mm = MMDLS(prior_weight=0.0).fit(X, y, sd)
    np.testing.assert_allclose(mm.scales_[0], [1.5, 1.5], atol=0.2)
    np.testing.assert_allclose(mm.offsets_[0], [0.7, 0.7], atol=0.2)


def test_mmdls_helps_a_classifier():
    """Trained on the mapped source rows, 1NN labels the conditionally shifted target better
    than on the raw rows."""
    from sklearn.neighbors import KNeighborsClassifier

    X, y, sd, yt = _conditional_shift(seed=1, m=150, n=150)
    src, tgt = sd > 0, sd < 0
    raw = KNeighborsClassifier(1).fit(X[src], y[src]).score(X[tgt], yt)
    Z = MMDLS().fit_transform(X, y, sd)
    mapped = KNeighborsClassifier(1).fit(Z[src], y[src]).score(X[tgt], yt)
    assert mapped > raw + 0.05


def test_mmdls_continuous_label():
    """A continuous label: ``W`` and ``B`` are smooth in ``y`` (``R = L (L + reg I)^{-1}``);
    the map still reduces the MMD."""
    rng = np.random.default_rng(4)
    ys = rng.uniform(-1, 1, 60)
    Xs = np.c_[ys + 0.1 * rng.normal(size=60), rng.normal(size=60)]
    yt = rng.uniform(-1, 1, 50)
    Xt = np.c_[2 * yt + 0.1 * rng.normal(size=50), rng.normal(size=50)] + 0.5
    X = np.vstack([Xs, Xt])
    y = np.r_[ys, np.full(50, np.nan)]
    sd = np.r_[np.ones(60, int), -np.ones(50, int)]
    mm = MMDLS().fit(X, y, sd)
    assert mm.classes_ is None and mm.mmd_ < 0.5 * mm.mmd_before_


def test_mmdls_transform_and_awkward_inputs():
    X, y, sd, _ = _conditional_shift()
    mm = MMDLS().fit(X, y, sd)
    np.testing.assert_array_equal(mm.transform(X), X)            # target rows: as they are
    np.testing.assert_allclose(mm.transform(X, sample_domain=sd), mm.fit_transform(X, y, sd))
    with pytest.warns(UserWarning, match="no target rows"):
        only = MMDLS().fit(X[sd > 0], y[sd > 0])
    np.testing.assert_array_equal(only.transform(X[sd > 0], sample_domain=sd[sd > 0]),
                                  X[sd > 0])
    y2 = y.copy()
    y2[0] = -1
    with pytest.raises(ValueError, match="1 source row.*no.*label|have none"):
        MMDLS().fit(X, y2, sd)
    Xn = X.copy()
    Xn[0, 0] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        MMDLS().fit(Xn, y, sd)
    one_class = MMDLS().fit(X, np.where(y >= 0, 0, -1), sd)
    assert one_class.classes_.tolist() == [0] and one_class.mmd_ <= one_class.mmd_before_


def test_mmdls_memory_refused_up_front(monkeypatch):
    X, y, sd, _ = _conditional_shift()
    monkeypatch.setattr(_resources, "MEMORY_BUDGET", 80 * 160 * 8)
    with pytest.raises(ValueError, match="MMDLS.fit on 80 source and 80 target rows"):
        MMDLS().fit(X, y, sd)
