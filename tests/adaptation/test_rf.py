"""RF-TCA / RF-SCA: additive statistics, convergence to the exact methods, robustness."""

import numpy as np
import pytest
import scipy.linalg
from _tolerances import EPS, dot_atol, mean_atol, rff_err, sum_atol
from scipy.linalg import eigh
from sklearn.base import clone
from sklearn.decomposition import PCA
from sklearn.neighbors import KNeighborsClassifier
from threadpoolctl import threadpool_limits

from shiftlearn.adaptation import (
    RFSCA,
    RFTCA,
    SCA,
    TCA,
    RFStats,
    rf_stats,
    rfsca_from_stats,
    rftca_from_stats,
)
from shiftlearn.adaptation._base import ComponentsClippedWarning
from shiftlearn.adaptation._rf_solvers import rfsca_max_components
from shiftlearn.kernels import omega_fingerprint, rbf_kernel, rff_map, rff_weights


@pytest.fixture(autouse=True)
def _one_blas_thread():
    """Dense 2N x 2N eigensolves are 10-50x slower with oversubscribed BLAS threads on the
    shared 2-core machine; one thread keeps these tests fast and their timing stable."""
    with threadpool_limits(1):
        yield


def _da_data(n=120, d=5, seed=0, shift=0.8):
    rng = np.random.default_rng(seed)
    Xs = rng.normal(size=(n, d))
    ys = (Xs[:, 0] + 0.5 * Xs[:, 1] > 0).astype(int) + (Xs[:, 2] > 1).astype(int)
    Xt = rng.normal(size=(n, d)) * 1.2 + shift
    yt = (Xt[:, 0] - shift + 0.5 * (Xt[:, 1] - shift) > 0).astype(int) + (Xt[:, 2] > 1 + shift)
    X = np.vstack([Xs, Xt])
    y = np.r_[ys, -np.ones(n, int)]
    sd = np.r_[np.ones(n, int), -2 * np.ones(n, int)]
    return X, y, sd, ys, yt.astype(int)


def _cluster_data(n=50, seed=0):
    """Three well-separated classes (clear eigen-gaps for TCA), target shifted."""
    rng = np.random.default_rng(seed)
    centers = np.array([[0.0, 0, 0], [4, 0, 0], [0, 4, 0]])
    ys = np.repeat(np.arange(3), n)
    Xs = centers[ys] + 0.7 * rng.normal(size=(3 * n, 3))
    Xt = centers[ys] + 0.7 * rng.normal(size=(3 * n, 3)) + np.array([1.0, 1.0, 1.5])
    X = np.vstack([Xs, Xt])
    y = np.r_[ys, -np.ones(3 * n, int)]
    sd = np.r_[np.ones(3 * n, int), -2 * np.ones(3 * n, int)]
    return X, y, sd, ys, ys.copy()


def _min_cos(A, B):
    """Smallest principal-angle cosine between the column spans of centred A and B."""
    Qa, _ = np.linalg.qr(A - A.mean(0))
    Qb, _ = np.linalg.qr(B - B.mean(0))
    return float(np.linalg.svd(Qa.T @ Qb, compute_uv=False).min())


def _1nn(Z, n, ys, yt):
    return KNeighborsClassifier(1).fit(Z[:n], ys).score(Z[n:], yt)


# ----------------------------------------------------------------------------- statistics
def test_stats_merge_equals_whole_and_sum_works():
    X, y, sd, _, _ = _da_data(n=60)
    sd = sd.copy()
    sd[:20] = 3                                     # a second source domain
    om = rff_weights(X.shape[1], 30, 1.5, random_state=1)
    whole = rf_stats(X, y, sd, om)
    perm = np.random.default_rng(0).permutation(X.shape[0])
    parts = [rf_stats(X[idx], y[idx], sd[idx], om) for idx in np.array_split(perm, 3)]
    merged = sum(parts)
    assert isinstance(merged, RFStats)
    np.testing.assert_array_equal(merged.domains, whole.domains)
    np.testing.assert_array_equal(merged.domain_counts, whole.domain_counts)
    np.testing.assert_array_equal(merged.classes, whole.classes)
    np.testing.assert_array_equal(merged.class_counts, whole.class_counts)
    for f in ("domain_sums", "class_sums", "moment_labeled", "moment_unlabeled"):
        np.testing.assert_allclose(getattr(merged, f), getattr(whole, f), atol=1e-10)
    # one part may lack a domain or a class entirely
    only_target = rf_stats(X[sd < 0], y[sd < 0], sd[sd < 0], om)
    assert only_target.classes.size == 0
    both = rf_stats(X[sd > 0], y[sd > 0], sd[sd > 0], om) + only_target
    np.testing.assert_allclose(both.total_moment(), whole.total_moment(), atol=1e-10)


def test_chunked_equals_unchunked_and_scatters_match_explicit_features():
    X, y, sd, _, _ = _da_data(n=50)
    om = rff_weights(X.shape[1], 20, 1.3, random_state=2)
    a = rf_stats(X, y, sd, om, chunk_size=7)
    b = rf_stats(X, y, sd, om)
    # chunks sum the same products in another order, of features whose phases come from
    # other BLAS calls (rff_err): gamma_n |Z|^T |Z| and n eps sum|Z| plus the features' own
    # round-off (a chunk counted twice or dropped is off by ~|Z|^T |Z| 7 / n)
    Zb, dZ = rff_map(X, om, fast_trig=True), rff_err(X, om)
    np.testing.assert_allclose(a.total_moment(), b.total_moment(), rtol=0,
                               atol=dot_atol(Zb.T, Zb, Xerr=dZ.T, Yerr=dZ))
    np.testing.assert_allclose(a.class_sums, b.class_sums, rtol=0,
                               atol=sum_atol(Zb, axis=0, err=dZ))
    # explicit n x 2N features (fine at this size) against the sums; rf_stats evaluates cos/sin
    # in float32 (fast_trig) and those features are within 1e-5 of the float64 ones
    Z = rff_map(X, om, fast_trig=True)
    assert np.abs(Z - rff_map(X, om)).max() < 1e-5 / np.sqrt(om.shape[1])
    exact = rf_stats(X, y, sd, om, fast_trig=False)
    np.testing.assert_allclose(exact.total_scatter(), (lambda Ze: (Ze - Ze.mean(0)).T
                                                       @ (Ze - Ze.mean(0)))(rff_map(X, om)),
                               atol=1e-10)
    Zc = Z - Z.mean(0)
    np.testing.assert_allclose(a.total_scatter(), Zc.T @ Zc, atol=1e-10)
    d = Z[sd > 0].mean(0) - Z[sd < 0].mean(0)
    # two means in any order, absolute (the difference cancels)
    np.testing.assert_allclose(a.mmd_vector(), d, rtol=0,
                               atol=mean_atol(Z[sd > 0], err=dZ[sd > 0])
                               + mean_atol(Z[sd < 0], err=dZ[sd < 0]))
    # SCA's domain scatter = Z^T L Z with L = (1/m) E (I - 11^T/m) E^T
    E = np.stack([(sd == g) / np.sum(sd == g) for g in np.unique(sd)], axis=1)
    m = E.shape[1]
    L = E @ (np.eye(m) - 1.0 / m) @ E.T / m
    # Z^T L Z against the domain means' scatter: gamma_2n |Z|^T |L| |Z|
    np.testing.assert_allclose(a.domain_scatter(), Z.T @ L @ Z, rtol=0,
                               atol=dot_atol(np.abs(Z).T @ np.abs(L), Z, c=8,
                                             Xerr=dZ.T @ np.abs(L), Yerr=dZ))
    # class scatters: between + within = covariance of the labeled rows; the statistics
    # centre the uncentred moment, so the round-off is that of |Z|^T |Z| / n_l
    Sb, Sw = a.class_scatters()
    Zl = Z[y >= 0]
    np.testing.assert_allclose(Sb + Sw, np.cov(Zl.T, bias=True), rtol=0,
                               atol=dot_atol(Zl.T, Zl, c=8, Xerr=dZ[y >= 0].T,
                                             Yerr=dZ[y >= 0]) / len(Zl))
    assert np.linalg.matrix_rank(Sb, tol=1e-10) <= np.unique(y[y >= 0]).size - 1


def test_merging_stats_of_different_frequencies_is_an_error():
    X, y, sd, _, _ = _da_data(n=20)
    a = rf_stats(X, y, sd, rff_weights(5, 10, 1.0, random_state=0))
    b = rf_stats(X, y, sd, rff_weights(5, 10, 1.0, random_state=1))
    with pytest.raises(ValueError, match="different frequencies"):
        a + b
    with pytest.raises(ValueError, match="random-feature columns"):
        a + rf_stats(X, y, sd, rff_weights(5, 11, 1.0, random_state=0))


def test_fit_from_merged_client_stats_equals_fit_on_all_rows():
    X, y, sd, _, _ = _da_data(n=80)
    full = RFSCA(n_components=3, n_features=60, random_state=0).fit(X, y, sample_domain=sd)
    om = full.omega_
    clients = [rf_stats(X[i::3], y[i::3], sd[i::3], om) for i in range(3)]
    for fed in (clone(full).fit_from_stats(sum(clients), omega=om),      # a fresh estimator
                clone(full).fit(X, y, sd).fit_from_stats(sum(clients))):
        np.testing.assert_allclose(fed.eigenvalues_, full.eigenvalues_, rtol=1e-8)
        Z1, Z2 = full.transform(X), fed.transform(X)
        np.testing.assert_allclose(np.abs(Z1), np.abs(Z2), rtol=1e-6, atol=1e-8)
        assert fed.n_features_in_ == X.shape[1] and fed.setting_ == "da"


@pytest.mark.parametrize("Est", [RFTCA, RFSCA])
def test_fit_from_stats_without_frequencies_is_a_clear_error(Est):
    """Unfitted (no omega_): it used to solve and then fail in transform with AttributeError."""
    X, y, sd, _, _ = _da_data(n=30)
    om = rff_weights(X.shape[1], 20, 2.0, random_state=0)
    st = rf_stats(X, y, sd, om)
    with pytest.raises(ValueError, match=r"has no frequencies \(omega_\).*omega=om"):
        Est(n_components=2, n_features=20).fit_from_stats(st)
    with pytest.raises(ValueError, match="different frequencies"):
        Est(n_components=2, n_features=20).fit_from_stats(
            st, omega=rff_weights(X.shape[1], 20, 2.0, random_state=1))
    with pytest.raises(ValueError, match="set n_features=20"):
        Est(n_components=2, n_features=30).fit_from_stats(st, omega=om)
    with pytest.raises(ValueError, match="'n_components' parameter"):
        Est(n_components=0, n_features=20).fit_from_stats(st, omega=om)
    fitted = Est(n_components=2, n_features=20, random_state=5).fit(X, y, sd)
    with pytest.raises(ValueError, match="different frequencies"):
        fitted.fit_from_stats(st)                    # its own omega_ is not the stats' one
    est = Est(n_components=2, n_features=20).fit_from_stats(st, omega=om)
    ref = Est(n_components=2, n_features=20, bandwidth=2.0, random_state=0).fit(X, y, sd)
    np.testing.assert_allclose(np.abs(est.transform(X)), np.abs(ref.transform(X)),
                               rtol=1e-6, atol=1e-9)


@pytest.mark.parametrize("Est", [RFTCA, RFSCA])
def test_default_n_components_is_clipped_on_small_data(Est):
    X, y, sd, _, _ = _da_data(n=4)
    with pytest.warns(ComponentsClippedWarning, match=r"rank <= 7\); using n_components=7"):
        est = Est(n_features=100, random_state=0).fit(X, y, sample_domain=sd)
    assert est.n_components_ == 7 and est.transform(X).shape == (8, 7)
    with pytest.raises(ValueError, match="n_components=8 is too large"):
        est.truncate(8)
    # two tight clusters of rows: numerically rank 2 (null eigenvalues are dropped, warned)
    rng = np.random.default_rng(0)
    Xc = np.repeat(np.eye(2) * 5, 10, axis=0) + 1e-9 * rng.normal(size=(20, 2))
    yc, sdc = np.repeat([0, 1], 10), np.ones(20, int)
    with pytest.warns(ComponentsClippedWarning, match="numerically non-zero"):
        est = Est(n_components=5, n_features=100, random_state=0).fit(Xc, yc, sample_domain=sdc)
    assert 1 <= est.n_components_ < 5
    assert np.all(est.eigenvalues_ > 1e-10 * est.eigenvalues_[0])
    with pytest.raises(ValueError, match="numerically non-zero"):   # the function still raises
        (rftca_from_stats(rf_stats(Xc, yc, sdc, est.omega_), 5) if Est is RFTCA else
         rfsca_from_stats(rf_stats(Xc, yc, sdc, est.omega_), 5))


# ----------------------------------------------------------------------------- convergence
def test_rftca_coefficients_penalty_tends_to_exact_tca():
    X, y, sd, ys, yt = _cluster_data()
    n = 150
    exact = TCA(n_components=2, mu=1.0).fit(X, y, sample_domain=sd)
    Ze = exact.transform(X)
    cos = {}
    for N in (20, 400):
        rf = RFTCA(n_components=2, mu=1.0, n_features=N, penalty="coefficients",
                   random_state=1).fit(X, y, sample_domain=sd)
        assert rf.sigma_ == pytest.approx(exact.sigma_)
        Z = rf.transform(X)
        cos[N] = _min_cos(Ze, Z)
        if N == 400:
            np.testing.assert_allclose(rf.eigenvalues_, exact.eigenvalues_, rtol=0.15)
            assert abs(_1nn(Z, n, ys, yt) - _1nn(Ze, n, ys, yt)) <= 0.02
    # (clear eigen-gaps needed: with small gaps TCA's eigenvectors swap under any kernel
    # perturbation, as the RF-TCA paper's Theorem 1 warns)
    assert cos[400] > 0.99
    assert cos[400] > cos[20]


def test_rftca_paper_penalty_tends_to_rtca():
    """The paper's RF-TCA (penalty ||V||^2) solves R-TCA, ``KHK w = lam (K + mu K l l^T K) w``,
    with the random-feature kernel; compare with R-TCA on the exact kernel."""
    X, y, sd, _, _ = _cluster_data()
    rf = RFTCA(n_components=2, mu=2.0, n_features=400, random_state=0).fit(
        X, y, sample_domain=sd)
    K = rbf_kernel(X, sigma=rf.sigma_)
    n = K.shape[0]
    ell = np.where(sd > 0, 1.0 / np.sum(sd > 0), -1.0 / np.sum(sd < 0))
    Kc = K - K.mean(0)
    u = K @ ell
    B = K + 2.0 * np.outer(u, u) + 1e-8 * np.eye(n)
    w, W = eigh(Kc.T @ Kc, B, subset_by_index=[n - 2, n - 1])
    assert _min_cos(K @ W, rf.transform(X)) > 0.99
    np.testing.assert_allclose(np.sort(rf.eigenvalues_), w, rtol=0.15)


@pytest.mark.parametrize("beta,delta,supervised", [(0.5, 1.0, True), (0.0, 1.0, False),
                                                   (1.0, 0.5, True)])
def test_rfsca_tends_to_exact_sca(beta, delta, supervised):
    X, y, sd, ys, yt = _da_data(n=100)
    k = 2
    kw = dict(n_components=k, beta=beta, delta=delta, supervised=supervised)
    exact = SCA(**kw).fit(X, y, sample_domain=sd)
    Ze = exact.transform(X)
    cos = {}
    for N in (15, 400):
        rf = RFSCA(n_features=N, random_state=0, **kw).fit(X, y, sample_domain=sd)
        cos[N] = _min_cos(Ze, rf.transform(X))
        if N == 400:
            np.testing.assert_allclose(rf.eigenvalues_, exact.eigenvalues_, rtol=0.2)
    assert cos[400] > 0.95
    assert cos[400] > cos[15]


def test_rfsca_kpca_special_case_is_pca_of_the_features():
    X, _, sd, _, _ = _da_data(n=60)
    rf = RFSCA(n_components=3, beta=0.0, delta=0.0, eps=0.0, supervised=False, n_features=40,
               random_state=0).fit(X)
    Z = rff_map(X, rf.omega_)
    pca = PCA(n_components=3).fit(Z)
    np.testing.assert_allclose(rf.eigenvalues_, pca.explained_variance_ * (119 / 120),
                               rtol=1e-6)
    assert _min_cos(rf.transform(X), pca.transform(Z)) > 1 - 1e-8


def test_rfsca_domain_term_shrinks_projected_domain_scatter():
    X, y, sd, _, _ = _da_data(n=100, shift=1.5)

    def dom_gap(delta):
        Z = RFSCA(n_components=3, beta=0.0, delta=delta, supervised=False, whiten=False,
                  n_features=200, random_state=0).fit(X, y, sample_domain=sd).transform(X)
        Z = Z / Z.std()
        return np.sum((Z[sd > 0].mean(0) - Z[sd < 0].mean(0)) ** 2)

    assert dom_gap(100.0) < 0.5 * dom_gap(0.0)


# ----------------------------------------------------------------------------- properties
def test_random_state_reproducible_and_float32():
    X, y, sd, _, _ = _da_data(n=60)
    for Est in (RFTCA, RFSCA):
        a = Est(n_components=3, n_features=50, random_state=3).fit(X, y, sample_domain=sd)
        b = Est(n_components=3, n_features=50, random_state=3).fit(X, y, sample_domain=sd)
        c = Est(n_components=3, n_features=50, random_state=4).fit(X, y, sample_domain=sd)
        np.testing.assert_array_equal(a.transform(X), b.transform(X))
        assert not np.allclose(np.abs(a.transform(X)), np.abs(c.transform(X)))
        f = Est(n_components=3, n_features=50, random_state=3).fit(
            X.astype(np.float32), y, sample_domain=sd)
        Zf = f.transform(X.astype(np.float32))
        assert Zf.dtype == np.float32 and np.all(np.isfinite(Zf))
        assert _min_cos(Zf.astype(np.float64), a.transform(X)) > 0.999


def test_orthogonal_sampling_is_reproducible_and_tends_to_exact_tca():
    X, y, sd, ys, yt = _cluster_data()
    Ze = TCA(n_components=2, mu=1.0).fit(X, y, sample_domain=sd).transform(X)
    for Est in (RFTCA, RFSCA):
        a = Est(n_components=2, n_features=60, sampling="orthogonal", random_state=2)
        b = clone(a)
        np.testing.assert_array_equal(a.fit(X, y, sample_domain=sd).transform(X),
                                      b.fit(X, y, sample_domain=sd).transform(X))
        assert not np.array_equal(a.omega_, rff_weights(X.shape[1], 60, a.sigma_, 2))
    rf = RFTCA(n_components=2, mu=1.0, n_features=400, penalty="coefficients",
               sampling="orthogonal", random_state=1).fit(X, y, sample_domain=sd)
    assert _min_cos(Ze, rf.transform(X)) > 0.99
    with pytest.raises(ValueError, match="sampling"):
        RFTCA(sampling="halton").fit(X, y, sample_domain=sd)


def test_chunked_transform_and_no_training_data_kept():
    X, y, sd, _, _ = _da_data(n=50)
    a = RFTCA(n_components=3, n_features=40, random_state=0, chunk_size=9).fit(
        X, y, sample_domain=sd)
    b = RFTCA(n_components=3, n_features=40, random_state=0).fit(X, y, sample_domain=sd)
    np.testing.assert_allclose(a.transform(X), b.transform(X), rtol=1e-9, atol=1e-12)
    for value in vars(a).values():
        assert not (isinstance(value, np.ndarray) and value.shape[0] == X.shape[0])


def test_duplicated_points_and_constant_features():
    X, y, sd, _, _ = _da_data(n=60)
    Xd = np.vstack([X, X])
    Xd[:, 0] = 3.0                                # a constant feature
    yd, sdd = np.r_[y, y], np.r_[sd, sd]
    for Est in (RFTCA, RFSCA):
        Z = Est(n_components=3, n_features=50, random_state=0).fit(
            Xd, yd, sample_domain=sdd).transform(Xd)
        assert np.all(np.isfinite(Z))
        np.testing.assert_allclose(Z[:120], Z[120:])


def test_no_gamma_alias_and_scaling_constraint():
    X, y, sd, _, _ = _da_data(n=50)
    with pytest.raises(TypeError, match="gamma"):       # the paper's gamma is mu = 1 / gamma
        RFTCA(n_components=3, gamma=0.25)
    c = RFTCA(n_components=3, mu=4.0, n_features=40, random_state=0, scaling="constraint",
              keep_stats=True).fit(X, y, sample_domain=sd)
    V = c.components_
    np.testing.assert_allclose(V.T @ c.stats_.total_scatter() @ V, np.eye(3), atol=1e-8)


# ----------------------------------------------------------------------------- errors
def test_errors():
    X, y, sd, _, _ = _da_data(n=40)
    st = rf_stats(X, y, sd, rff_weights(X.shape[1], 30, 2.0, random_state=0))
    with pytest.raises(ValueError, match="n_components=300 is too large"):
        rftca_from_stats(st, 300)                     # the function refuses, the estimator clips
    with pytest.warns(ComponentsClippedWarning, match="n_classes - 1"):
        RFSCA(n_components=5, beta=1.0, n_features=30).fit(X, y, sample_domain=sd)
    with pytest.raises(ValueError, match="n_classes - 1"):
        rfsca_from_stats(st, 5, beta=1.0)
    one = np.where(y >= 0, 0, -1)
    with pytest.raises(ValueError, match="one class|2 classes"):
        RFSCA(n_components=2, beta=0.5, n_features=30).fit(X, one, sample_domain=sd)
    with pytest.raises(ValueError, match="No target rows"):
        RFSCA(n_components=2, setting="da", n_features=30).fit(X[:40], y[:40],
                                                                sample_domain=sd[:40])
    with pytest.raises(ValueError, match="must not see target"):
        RFSCA(n_components=2, setting="dg", n_features=30).fit(X, y, sample_domain=sd)
    with pytest.raises(ValueError, match="'n_features' parameter of RFTCA"):
        RFTCA(n_features=0).fit(X, y, sample_domain=sd)
    with pytest.raises(ValueError, match="'dtype' parameter of RFSCA"):
        RFSCA(dtype="float16").fit(X, y, sample_domain=sd)
    with pytest.raises(ValueError, match="'random_state' parameter"):
        RFTCA(random_state="seed").fit(X, y, sample_domain=sd)
    with pytest.raises(ValueError, match="beta"):
        RFSCA(beta=1.5, n_features=10).fit(X, y, sample_domain=sd)
    with pytest.raises(ValueError, match="penalty"):
        RFTCA(n_components=2, n_features=10, penalty="nope").fit(X, y, sample_domain=sd)
    fitted = RFTCA(n_components=2, n_features=10, random_state=0).fit(X, y, sample_domain=sd)
    with pytest.raises(ValueError, match="features"):
        fitted.transform(X[:, :3])
    with pytest.raises(ValueError, match="NaN|infinity"):
        RFTCA(n_features=10).fit(np.where(X > 2, np.nan, X), y, sample_domain=sd)
    st = rf_stats(X, y, sd, fitted.omega_)
    with pytest.raises(ValueError, match="labeled"):
        rfsca_from_stats(rf_stats(X, None, sd, fitted.omega_), 2, beta=0.5)
    with pytest.raises(ValueError, match="mu"):
        rftca_from_stats(st, 2, mu=-1.0)


def test_clone_and_params():
    est = RFSCA(n_components=3, beta=0.2, n_features=77, random_state=5)
    c = clone(est)
    assert c.get_params()["n_features"] == 77 and c.get_params()["beta"] == 0.2


def test_arpack_solver_matches_dense():
    X, y, sd, _, _ = _cluster_data(n=80)
    for Est, kw in ((RFTCA, {}), (RFSCA, {"beta": 0.5})):
        fits = {s: Est(n_components=5, n_features=400, random_state=0, eigen_solver=s,
                       **kw).fit(X, y, sample_domain=sd) for s in ("dense", "arpack")}
        np.testing.assert_allclose(fits["arpack"].eigenvalues_, fits["dense"].eigenvalues_,
                                   rtol=1e-6)
        assert _min_cos(fits["arpack"].transform(X), fits["dense"].transform(X)) > 0.9999


def test_truncate_equals_fit_with_fewer_components():
    X, y, sd, _, _ = _cluster_data(n=40)
    for Est in (RFTCA, RFSCA):
        big = Est(n_components=6, n_features=60, random_state=0, eigen_solver="dense").fit(
            X, y, sample_domain=sd)
        small = Est(n_components=3, n_features=60, random_state=0, eigen_solver="dense").fit(
            X, y, sample_domain=sd)
        np.testing.assert_allclose(np.abs(big.truncate(3).transform(X)),
                                   np.abs(small.transform(X)), rtol=1e-6, atol=1e-9)


def test_dask_blocks_sum_to_in_memory_stats():
    pytest.importorskip("dask")
    import dask
    import dask.array as da

    from shiftlearn.adaptation._dask import rf_stats_dask

    X, y, sd, _, _ = _da_data(n=70)
    om = rff_weights(X.shape[1], 20, 1.2, random_state=0)
    with dask.config.set(scheduler="synchronous"):
        st = rf_stats_dask(da.from_array(X, chunks=(33, 5)), da.from_array(y, chunks=50), sd,
                           om, split_every=2)
    ref = rf_stats(X, y, sd, om)
    np.testing.assert_allclose(st.total_moment(), ref.total_moment(), atol=1e-10)
    np.testing.assert_allclose(st.class_sums, ref.class_sums, atol=1e-10)
    np.testing.assert_array_equal(st.domain_counts, ref.domain_counts)


def test_one_pass_stats_interleaved_rows_float_labels_and_float32_chunks():
    """The one-pass accumulator against explicit features: rows of the groups interleaved
    (no contiguous views), NaN-marked float labels, several chunks, float32 products."""
    X, y, sd, _, _ = _da_data(n=40)
    perm = np.random.default_rng(3).permutation(X.shape[0])
    X, y, sd = X[perm], y[perm], sd[perm]
    om = rff_weights(X.shape[1], 16, 1.4, random_state=0)
    Z = rff_map(X, om, fast_trig=True)           # rf_stats' default: float32 cos/sin
    for dtype in (np.float64, np.float32):
        # products and sums in the working precision, of features whose phases are too:
        # gamma_n |Z|^T |Z| and n eps sum|Z| plus the features' round-off (rff_err), with that
        # precision's eps (float32 products checked at float64's would be 1e-9 off)
        eps = float(np.finfo(dtype).eps)
        dZ = rff_err(X, om, eps=eps)
        st = rf_stats(X, np.where(y >= 0, y, -1), sd, om, chunk_size=9, dtype=dtype)
        lab = y >= 0
        for got, rows in ((st.moment_labeled, lab), (st.moment_unlabeled, ~lab)):
            Zp, dp = Z[rows], dZ[rows]
            np.testing.assert_allclose(got, Zp.T @ Zp, rtol=0,
                                       atol=dot_atol(Zp.T, Zp, eps=eps, Xerr=dp.T, Yerr=dp))
        # symmetric by construction (one triangle mirrored), whatever the BLAS
        assert np.array_equal(st.moment_labeled, st.moment_labeled.T)
        for c in range(3):
            np.testing.assert_allclose(st.class_sums[c], Z[y == c].sum(0), rtol=0,
                                       atol=sum_atol(Z[y == c], axis=0, eps=eps,
                                                     err=dZ[y == c]))
        np.testing.assert_array_equal(st.domain_counts, [np.sum(sd == -2), np.sum(sd == 1)])
    # float labels with NaN for the unlabeled rows: same statistics, integer classes
    st = rf_stats(X, np.where(y >= 0, y, np.nan), sd, om, chunk_size=11)
    assert st.classes.tolist() == [0, 1, 2] and st.classes.dtype.kind == "i"
    dZ = rff_err(X, om)
    np.testing.assert_allclose(st.class_sums[1], Z[y == 1].sum(0), rtol=0,
                               atol=sum_atol(Z[y == 1], axis=0, err=dZ[y == 1]))
    np.testing.assert_allclose(st.moment_unlabeled, Z[y < 0].T @ Z[y < 0], rtol=0,
                               atol=dot_atol(Z[y < 0].T, Z[y < 0], Xerr=dZ[y < 0].T,
                                             Yerr=dZ[y < 0]))


@pytest.mark.parametrize("penalty", ["features", "coefficients"])
def test_arpack_solver_and_its_fallback_match_dense(penalty, monkeypatch):
    """ARPACK (auto at 2N >= 800) matches the dense pencil solve; when ARPACK is made to fail,
    the dense fallback (the pencil is a matrix) gives the same answer, and the coefficient
    path falls back to its eigendecomposition."""
    from scipy.sparse.linalg import ArpackNoConvergence

    from shiftlearn import _linalg

    X, y, sd, _, _ = _cluster_data(n=150)
    om = rff_weights(3, 450, 1.5, random_state=0)
    st = rf_stats(X, y, sd, om)
    Vd, wd = rftca_from_stats(st, 8, 1.0, penalty=penalty, eigen_solver="dense")
    Vr, wr = rftca_from_stats(st, 8, 1.0, penalty=penalty, eigen_solver="arpack")
    np.testing.assert_allclose(wr, wd, rtol=1e-9)
    assert _min_cos(Vr, Vd) > 1 - 1e-9
    Sd, ld = rfsca_from_stats(st, 8, 0.5, 1.0, eigen_solver="dense")
    Sr, lr = rfsca_from_stats(st, 8, 0.5, 1.0, eigen_solver="arpack")
    np.testing.assert_allclose(lr, ld, rtol=1e-9)
    assert _min_cos(Sr, Sd) > 1 - 1e-9

    def fail(*args, **kwargs):
        raise ArpackNoConvergence("ARPACK error -1: No convergence", np.empty(0),
                                  np.empty((0, 0)))

    # the gap after the 8th eigenvalue, for the subspace bound below
    l9 = rfsca_from_stats(st, 9, 0.5, 1.0, eigen_solver="dense")[1][-1]
    monkeypatch.setattr(_linalg, "eigsh", fail)
    Sf, lf = rfsca_from_stats(st, 8, 0.5, 1.0, eigen_solver="arpack")
    # the dense fallback against the dense solve: the pencil's round-off. RF-SCA's pencil has
    # ||A|| <= tr(A) <= 1 (unit-norm features), M >= I so ||M^-1|| <= 1, and
    # ||M|| <= 1 + eps + tr(S_w) + delta tr(S_d) <= 3 + delta: eigh_atol's bound with these;
    # the subspace turns by at most that over the gap (Davis-Kahan), its cosine by the square
    # of it, plus the round-off of _min_cos' QR and SVD (~8e-12 against eigenvalues 0.01 to
    # 0.17: a term of the pencil dropped or mis-weighted moves them by percents).
    D, delta = Sd.shape[0], 1.0
    atol = 10 * D * EPS * (1 + 1 * (3 + delta))
    np.testing.assert_allclose(lf, ld, rtol=0, atol=atol)
    theta = atol / (ld[-1] - l9) * np.sqrt(3 + delta)
    assert _min_cos(Sf, Sd) > 1 - (theta**2 / 2 + 10 * D * EPS)
    Vf, wf = rftca_from_stats(st, 8, 1.0, penalty=penalty, eigen_solver="arpack")
    np.testing.assert_allclose(wf, wd, rtol=1e-9)
    assert _min_cos(Vf, Vd) > 1 - 1e-9


def test_row_sums_of_float32_features_agree_with_float64_sums():
    from shiftlearn.adaptation._rf_stats import _group_sums

    rng = np.random.default_rng(0)
    U = (np.cos(rng.uniform(0, 6.3, (20000, 64))) + 0.3).astype(np.float32)
    inv = rng.integers(0, 3, 20000)
    ref = np.stack([U[inv == g].sum(axis=0, dtype=np.float64) for g in range(3)])
    for groups, sums in ((3, _group_sums(U, inv, 3)),
                         (1, _group_sums(U, np.zeros(20000, int), 1))):
        want = ref if groups == 3 else ref.sum(axis=0, keepdims=True)
        assert sums.dtype == np.float64
        assert np.max(np.abs(sums - want) / np.abs(want)) < 1e-5


@pytest.mark.parametrize("Est,kw", [(RFTCA, {}), (RFTCA, {"penalty": "coefficients"}),
                                    (RFSCA, {}), (RFSCA, {"beta": 1.0})])
def test_constant_rows_are_refused(Est, kw):
    """Constant rows carry no variance: the scatter is rounding noise (RF-TCA used to return
    its eigenvectors as components)."""
    X, y, sd, _, _ = _da_data(n=30)
    with pytest.raises(ValueError, match="carry no variance"):
        Est(n_components=3, n_features=40, random_state=0, **kw).fit(
            np.ones_like(X), y, sample_domain=sd)


@pytest.mark.parametrize("Est,kw", [(RFTCA, {}), (RFTCA, {"penalty": "coefficients"}),
                                    (RFTCA, {"scaling": "constraint", "mu": 10.0}),
                                    (RFSCA, {}), (RFSCA, {"beta": 1.0, "n_components": 2}),
                                    (RFSCA, {"supervised": False, "whiten": False})])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_small_n_row_space_solve_equals_the_full_solve(Est, kw, dtype):
    """n <= N: fit solves in the span of the n feature rows; keep_stats=True forces the full
    2N x 2N solve. Same eigenvalues, same embedding (up to sign), same clipping."""
    X, y, sd, _, _ = _cluster_data(n=30)
    X = X.astype(dtype)
    params = {"n_components": 4, "n_features": 200, "random_state": 0,
              "eigen_solver": "dense", **kw}
    small = Est(**params).fit(X, y, sample_domain=sd)
    full = Est(keep_stats=True, **params).fit(X, y, sample_domain=sd)
    assert small.stats_ is None and full.stats_.dim == 400
    assert small.components_.shape == full.components_.shape
    rtol = 1e-8 if dtype == np.float64 else 1e-4
    np.testing.assert_allclose(small.eigenvalues_, full.eigenvalues_, rtol=rtol)
    np.testing.assert_allclose(np.abs(small.transform(X)), np.abs(full.transform(X)),
                               rtol=rtol, atol=rtol * np.abs(full.transform(X)).max())


@pytest.mark.parametrize("Est,kw", [(RFTCA, {"penalty": "coefficients"}), (RFTCA, {}),
                                    (RFSCA, {})])
@pytest.mark.parametrize("n", [2000, 400])
def test_memory_estimate_bounds_the_measured_peak(Est, kw, n):
    """The guard's counts (FIT_MATRICES: full 2N x 2N path, and the n <= N row-space path)
    are at least what numpy allocates (dense solver, the largest; small chunks)."""
    import tracemalloc

    from shiftlearn.adaptation._rf import FIT_MATRICES

    X, y, sd, _, _ = _da_data(n=n // 2)
    N = 400
    D = 2 * N
    tracemalloc.start()
    Est(n_features=N, bandwidth=3.0, random_state=0, eigen_solver="dense", chunk_size=100,
        **kw).fit(X, y, sample_domain=sd)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    if n > N:
        bound = FIT_MATRICES["full"] * D * D * 8 + 2 * 100 * D * 8      # + two chunks
    else:
        bound = (FIT_MATRICES["row_space"] + FIT_MATRICES["row_space_square"] * n / D) * n * D * 8
    assert 0.4 * bound <= peak <= bound


def test_huge_n_features_is_refused_before_allocating(monkeypatch):
    from shiftlearn import _resources

    monkeypatch.setattr(_resources, "MEMORY_BUDGET", 1 << 30)
    X, y, sd, _, _ = _da_data(n=3000)
    with pytest.raises(ValueError, match=r"RFTCA.fit \(n_features=3000\) needs about 2\.7 GiB "
                       r".* but 1\.0 GiB are available .* Lower n_features"):
        RFTCA(n_features=3000).fit(X, y, sample_domain=sd)
    with pytest.raises(ValueError, match=r"RFSCA.fit on 60 rows needs .* Lower n_features"):
        RFSCA(n_features=100_000_000).fit(X[:60], y[:60], sample_domain=sd[:60])


# ------------------------------------------------------------------------- edge cases
# Random-feature statistics and solvers against references computed from the features ``Z``
# themselves (issue #23: asymmetric data, both sides of every check, the paths the reference
# tests did not reach: many domains, non-contiguous rows, float labels, merging, chunking).


def _data(n_per=(40, 17, 9, 25, 12, 30), d=3, seed=0, shuffle=True, n_classes=3,
          unlabeled_domains=(-5, -6)):
    """Six domains of unequal sizes (four sources, two targets); unbalanced classes on the
    sources, unlabeled (-1) rows on the targets."""
    rng = np.random.default_rng(seed)
    ids = [1, 2, 3, 4, -5, -6]
    X, y, sd = [], [], []
    for i, (dom, n) in enumerate(zip(ids, n_per, strict=True)):
        X.append(rng.normal(size=(n, d)) + 0.5 * i)
        if dom in unlabeled_domains:
            y.append(np.full(n, -1))
        else:
            y.append(rng.choice(n_classes, n, p=np.linspace(1, 2, n_classes) / np.linspace(
                1, 2, n_classes).sum()))
        sd.append(np.full(n, dom))
    X, y, sd = np.vstack(X), np.concatenate(y), np.concatenate(sd)
    if shuffle:
        p = rng.permutation(len(y))
        X, y, sd = X[p], y[p], sd[p]
    return X, y, sd


def _reference(Z, y, sd):
    """Every sum of RFStats, straight from the features."""
    lab = y != -1 if y is not None else np.zeros(len(sd), bool)
    doms = np.unique(sd)
    ref = {
        "domains": doms,
        "domain_counts": np.array([(sd == g).sum() for g in doms]),
        "domain_sums": np.array([Z[sd == g].sum(axis=0) for g in doms]),
        "moment_labeled": Z[lab].T @ Z[lab],
        "moment_unlabeled": Z[~lab].T @ Z[~lab],
    }
    classes = np.unique(y[lab]) if lab.any() else np.zeros(0)
    ref["classes"] = classes
    ref["class_counts"] = np.array([(y[lab] == c).sum() for c in classes], dtype=np.int64)
    ref["class_sums"] = np.array([Z[lab][y[lab] == c].sum(axis=0) for c in classes]).reshape(
        len(classes), Z.shape[1])
    return ref


def _check_stats(st, ref, rtol=1e-10):
    for name in ("domains", "domain_counts", "classes", "class_counts"):
        np.testing.assert_array_equal(getattr(st, name), ref[name], err_msg=name)
    for name in ("domain_sums", "class_sums", "moment_labeled", "moment_unlabeled"):
        np.testing.assert_allclose(getattr(st, name), ref[name], rtol=rtol, atol=rtol,
                                   err_msg=name)


@pytest.mark.parametrize("shuffle", [True, False])
@pytest.mark.parametrize("chunk_size", [None, 7, 64])
def test_rf_stats_equal_sums_of_the_features(shuffle, chunk_size):
    X, y, sd = _data(shuffle=shuffle)
    om = rff_weights(3, 8, 1.3, random_state=0)
    st = rf_stats(X, y, sd, omega=om, chunk_size=chunk_size, fast_trig=False)
    Z = rff_map(X, om)
    _check_stats(st, _reference(Z, y, sd))
    assert st.dim == 16 and st.n_samples == len(y) and st.n_labeled == (y >= 0).sum()
    assert st.fingerprint == omega_fingerprint(om) and len(st.fingerprint) == 16
    # the same from an already mapped block, in any number of pieces
    ff = RFStats.from_features(Z, y, sd, fingerprint=st.fingerprint)
    _check_stats(ff, _reference(Z, y, sd))
    parts = sum(RFStats.from_features(Z[i:i + 31], y[i:i + 31], sd[i:i + 31],
                                      fingerprint=st.fingerprint) for i in range(0, len(y), 31))
    _check_stats(parts, _reference(Z, y, sd))
    assert parts.fingerprint == st.fingerprint


def test_rf_stats_label_and_domain_inference():
    X, y, sd = _data(n_per=(30, 20, 10, 10, 8, 12))
    om = rff_weights(3, 5, 1.0, random_state=1)
    Z = rff_map(X, om)
    # float labels with NaN = unlabeled: classes kept as integers
    yf = np.where(y == -1, np.nan, y.astype(float))
    st = rf_stats(X, yf, sd, omega=om, fast_trig=False)
    assert st.classes.dtype.kind == "i"
    _check_stats(st, _reference(Z, y, sd))
    ff = RFStats.from_features(Z, yf, sd)
    assert ff.classes.dtype.kind == "i" and ff.fingerprint == ""
    _check_stats(ff, _reference(Z, y, sd))
    # no sample_domain: labeled rows are domain 1, unlabeled rows domain -2
    st = rf_stats(X, y, omega=om, fast_trig=False)
    _check_stats(st, _reference(Z, y, np.where(y == -1, -2, 1)))
    # neither: every row is one unlabeled source domain
    st = rf_stats(X, omega=om, fast_trig=False)
    assert st.domains.tolist() == [1] and st.n_labeled == 0 and st.classes.size == 0
    # one product in two orders, of features computed twice: gamma_n |Z|^T |Z| plus the
    # features' own round-off through |Z| (a row lost is off by |z|^2 ~ 1 / N)
    dZ = rff_err(X, om)
    np.testing.assert_allclose(st.moment_unlabeled, Z.T @ Z, rtol=0,
                               atol=dot_atol(Z.T, Z, Xerr=dZ.T, Yerr=dZ))
    ff = RFStats.from_features(Z, None, np.ones(len(y), int))
    np.testing.assert_allclose(ff.moment_unlabeled, Z.T @ Z, rtol=0, atol=dot_atol(Z.T, Z))
    assert ff.classes.size == 0 and ff.class_sums.shape == (0, 10)
    # all labeled: the unlabeled moment is zero
    lab = y >= 0
    ff = RFStats.from_features(Z[lab], y[lab], sd[lab])
    assert np.all(ff.moment_unlabeled == 0)


def test_rf_stats_float32_input_and_explicit_dtype():
    X, y, sd = _data()
    om = rff_weights(3, 8, 1.3, random_state=0)
    ref = _reference(rff_map(X, om), y, sd)
    st32 = rf_stats(X.astype(np.float32), y, sd, omega=om, fast_trig=False)
    _check_stats(st32, ref, rtol=1e-4)
    assert st32.moment_labeled.dtype == np.float64
    st = rf_stats(X, y, sd, omega=om, dtype=np.float32, fast_trig=False)
    _check_stats(st, ref, rtol=1e-4)
    st64 = rf_stats(X, y, sd, omega=om, fast_trig=False)
    assert np.abs(st.moment_labeled - st64.moment_labeled).max() > 0     # float32 was used
    # fast trig (the default): float32 cos/sin, error below 1e-5 per feature
    fast = rf_stats(X, y, sd, omega=om)
    np.testing.assert_allclose(fast.moment_labeled, st64.moment_labeled, atol=1e-3)


def test_rf_stats_errors_name_the_problem():
    X, y, sd = _data()
    om = rff_weights(3, 4, 1.0, random_state=0)
    with pytest.raises(ValueError, match=r"^rf_stats needs the frequencies omega"):
        rf_stats(X, y, sd)
    with pytest.raises(ValueError, match=r"^X has 2 features but omega was drawn for 3\."):
        rf_stats(X[:, :2], y, sd, omega=om)
    with pytest.raises(ValueError, match=rf"^X has {len(y)} rows but y has {len(y) - 1} "):
        rf_stats(X, y[:-1], sd, omega=om)
    # the unlabeled convention applies: labels -1/+1 without sample_domain are refused ...
    ypm = np.where(np.arange(len(y)) % 2 == 0, 1, -1)
    with pytest.raises(ValueError, match="-1 beside a single other class"):
        rf_stats(X, ypm, omega=om)
    # ... and with a sample_domain that puts -1 rows in a source domain
    with pytest.raises(ValueError, match="-1 beside a single other class"):
        rf_stats(X, ypm, np.ones(len(y), int), omega=om)
    # -1 only on target rows is the marker: accepted
    rf_stats(X, np.where(sd > 0, 1, -1), sd, omega=om)


# ------------------------------------------------------------------ derived quantities
def test_derived_quantities_match_the_formulas():
    X, y, sd = _data()
    om = rff_weights(3, 6, 1.2, random_state=2)
    st = rf_stats(X, y, sd, omega=om, fast_trig=False)
    Z = rff_map(X, om)
    n = len(y)
    m = Z.mean(axis=0)
    # sums and products in other orders than numpy's, of features computed twice (rff_err):
    # n eps sum|Z| for the sums (absolute: means of signed features cancel), gamma_n |Z|^T |Z|
    # for the products; a wrong count or a row in the wrong group moves them by ~1 / n of
    # the features' size, 1e10 times more
    dZ = rff_err(X, om)
    s, s_ = Z[sd > 0], Z[sd < 0]
    e, e_ = dZ[sd > 0], dZ[sd < 0]
    np.testing.assert_allclose(st.mean(), m, rtol=0, atol=mean_atol(Z, err=dZ))
    np.testing.assert_allclose(st.total_moment(), Z.T @ Z, rtol=0,
                               atol=dot_atol(Z.T, Z, Xerr=dZ.T, Yerr=dZ))
    np.testing.assert_allclose(st.total_scatter(), Z.T @ Z - n * np.outer(m, m), atol=1e-10)
    src, tgt = Z[sd > 0].mean(axis=0), Z[sd < 0].mean(axis=0)
    np.testing.assert_allclose(st.side_mean(+1), src, rtol=0, atol=mean_atol(s, err=e))
    np.testing.assert_allclose(st.side_mean(-1), tgt, rtol=0, atol=mean_atol(s_, err=e_))
    np.testing.assert_allclose(st.mmd_vector(), src - tgt, rtol=0,
                               atol=mean_atol(s, err=e) + mean_atol(s_, err=e_))
    groups = [(Z[sd == g], dZ[sd == g]) for g in np.unique(sd)]
    means = np.array([G.mean(axis=0) for G, _ in groups])
    atol_means = max(mean_atol(G, err=E) for G, E in groups)
    np.testing.assert_allclose(st.domain_means(), means, rtol=0, atol=atol_means)
    np.testing.assert_allclose(st.domain_means("ids"), means, rtol=0, atol=atol_means)
    atol_sides = max(mean_atol(s, err=e), mean_atol(s_, err=e_))
    np.testing.assert_allclose(st.domain_means("sides"), np.array([src, tgt]), rtol=0,
                               atol=atol_sides)
    # the scatter of the means: their own round-off through |dev| (2 |dev| d), plus the product's
    dev = means - means.mean(axis=0)
    atol = dot_atol(dev.T, dev) / len(means) + 4 * atol_means * np.max(np.abs(dev))
    np.testing.assert_allclose(st.domain_scatter(), dev.T @ dev / len(means), rtol=0, atol=atol)
    dev2 = np.array([src, tgt]) - (src + tgt) / 2
    atol = dot_atol(dev2.T, dev2) / 2 + 4 * atol_sides * np.max(np.abs(dev2))
    np.testing.assert_allclose(st.domain_scatter("sides"), dev2.T @ dev2 / 2, rtol=0, atol=atol)
    lab = y >= 0
    ns = lab.sum()
    mu_s = Z[lab].mean(axis=0)
    Sb = sum((y[lab] == c).sum() * np.outer(Z[lab][y[lab] == c].mean(0) - mu_s,
                                            Z[lab][y[lab] == c].mean(0) - mu_s)
             for c in np.unique(y[lab])) / ns
    Sw = sum((Z[lab][y[lab] == c] - Z[lab][y[lab] == c].mean(0)).T
             @ (Z[lab][y[lab] == c] - Z[lab][y[lab] == c].mean(0)) for c in np.unique(y[lab])) / ns
    got_b, got_w = st.class_scatters()
    # the statistics centre the uncentred moment of the labeled rows: its round-off,
    # gamma_n |Z_l|^T |Z_l| / n_s (a class mean off by one row is ~1e-2 off)
    atol = dot_atol(Z[lab].T, Z[lab], c=8, Xerr=dZ[lab].T, Yerr=dZ[lab]) / ns
    np.testing.assert_allclose(got_b, Sb, rtol=0, atol=atol)
    np.testing.assert_allclose(got_w, Sw, rtol=0, atol=atol)
    with pytest.raises(ValueError, match="^domains must be 'ids' or 'sides', got 'all'"):
        st.domain_means("all")


def test_one_sided_statistics():
    X, y, sd = _data()
    om = rff_weights(3, 4, 1.0, random_state=0)
    src = rf_stats(X[sd > 0], y[sd > 0], sd[sd > 0], omega=om)
    tgt = rf_stats(X[sd < 0], y[sd < 0], sd[sd < 0], omega=om)
    assert np.all(src.mmd_vector() == 0) and np.all(tgt.mmd_vector() == 0)
    with pytest.raises(ValueError, match="^No target rows in the statistics"):
        src.side_mean(-1)
    with pytest.raises(ValueError, match="^No source rows in the statistics"):
        tgt.side_mean(+1)
    assert src.domain_means("sides").shape == (1, 8)
    assert tgt.domain_means("sides").shape == (1, 8)
    np.testing.assert_allclose(tgt.domain_means("sides")[0], tgt.side_mean(-1))
    with pytest.raises(ValueError, match="^No labeled rows: the class scatters need labels"):
        tgt.class_factors()
    # one labeled row is enough for the class factors
    one = rf_stats(X[:1], np.array([2]), np.array([1]), omega=om)
    Fb, Fw = one.class_factors()
    assert np.allclose(Fb, 0) and Fw.shape == (1, 8)


def test_merging_statistics():
    X, y, sd = _data()
    om = rff_weights(3, 4, 1.0, random_state=0)
    a = rf_stats(X[:70], y[:70], sd[:70], omega=om, fast_trig=False)
    b = rf_stats(X[70:], y[70:], sd[70:], omega=om, fast_trig=False)
    whole = rf_stats(X, y, sd, omega=om, fast_trig=False)
    for merged in (a + b, sum([a, b]), RFStats.empty(8) + a + b, a + RFStats.empty(8) + b):
        _check_stats(merged, {k: getattr(whole, k) for k in (
            "domains", "domain_counts", "domain_sums", "classes", "class_counts",
            "class_sums", "moment_labeled", "moment_unlabeled")})
        assert merged.fingerprint == whole.fingerprint
    assert (RFStats.empty(8) + RFStats.empty(8, fingerprint="ab")).fingerprint == "ab"
    e = RFStats.empty(8)
    assert e.n_samples == 0 and e.n_labeled == 0 and e.domain_sums.shape == (0, 8)
    assert e.moment_labeled.shape == (8, 8) and e.classes.dtype == np.int64
    assert RFStats.empty(8, label_dtype=np.float64).classes.dtype == np.float64
    with pytest.raises(ValueError, match="^Cannot merge RFStats with 8 and 6 random-feature"):
        a + RFStats.empty(6)
    other = rf_stats(X[70:], y[70:], sd[70:], omega=rff_weights(3, 4, 1.0, random_state=1))
    with pytest.raises(ValueError, match="^Cannot merge RFStats computed with different"):
        a + other
    assert a.__add__("x") is NotImplemented


# ------------------------------------------------------------------ solvers
def _sca_reference(Z, y, sd, beta, delta, eps, norm, domains, supervised):
    n = len(y)
    m = Z.mean(axis=0)
    C = Z.T @ Z - n * np.outer(m, m)
    A = (1 - beta) * C / n
    D = Z.shape[1]
    M = (1 + eps) * np.eye(D)
    lab = y >= 0
    if supervised and lab.any():
        ns = lab.sum()
        scale = 1.0 / ns if norm == "n_s" else 1.0
        mu_s = Z[lab].mean(axis=0)
        for c in np.unique(y[lab]):
            Zc = Z[lab][y[lab] == c]
            mc = Zc.mean(axis=0)
            A += beta * scale * len(Zc) * np.outer(mc - mu_s, mc - mu_s)
            M += scale * (Zc - mc).T @ (Zc - mc)
    if delta > 0:
        if domains == "ids":
            means = np.array([Z[sd == g].mean(axis=0) for g in np.unique(sd)])
        else:
            means = np.array([Z[sd > 0].mean(axis=0), Z[sd < 0].mean(axis=0)])
        dev = means - means.mean(axis=0)
        M += delta * dev.T @ dev / len(means)
    return scipy.linalg.eigh(A, M, eigvals_only=True)[::-1]


SCA_CASES = [
    dict(beta=0.5, delta=1.0),
    dict(beta=0.0, delta=2.0),
    dict(beta=1.0, delta=0.0),
    dict(beta=0.3, delta=0.5, domains="sides"),
    dict(beta=0.4, delta=1.5, class_scatter_normalization="none"),
    dict(beta=0.7, delta=1.0, supervised=False),
    dict(beta=0.5, delta=1.0, eps=0.3),
]


@pytest.mark.parametrize("kw", SCA_CASES)
def test_rfsca_matches_the_feature_space_problem(kw):
    X, y, sd = _data(seed=3)
    om = rff_weights(3, 10, 1.1, random_state=3)
    st = rf_stats(X, y, sd, omega=om, fast_trig=False)
    Z = rff_map(X, om)
    args = dict(beta=0.5, delta=1.0, eps=1e-5, class_scatter_normalization="n_s",
                domains="ids", supervised=True)
    args.update(kw)
    k = 2
    V, w = rfsca_from_stats(st, n_components=k, eigen_solver="dense", **args)
    beta = args["beta"] if args["supervised"] else 0.0
    ref = _sca_reference(Z, y, sd, beta, args["delta"], args["eps"],
                         args["class_scatter_normalization"], args["domains"],
                         args["supervised"])
    np.testing.assert_allclose(w, ref[:k], rtol=1e-8)


def test_rfsca_defaults_and_argument_checks():
    X, y, sd = _data(seed=4)
    om = rff_weights(3, 10, 1.1, random_state=4)
    st = rf_stats(X, y, sd, omega=om, fast_trig=False)
    V, w = rfsca_from_stats(st)
    V2, w2 = rfsca_from_stats(st, n_components=10, beta=0.5, delta=1.0, eps=1e-5,
                              domains="ids", supervised=True, class_scatter_normalization="n_s",
                              eigen_solver="auto", rank_deficient="raise")
    assert V.shape == (20, 10)
    np.testing.assert_array_equal(w, w2)
    for kw in (dict(beta=1.0), dict(beta=0.0), dict(delta=0.0), dict(eps=0.0)):
        rfsca_from_stats(st, n_components=2, **kw)                     # boundaries accepted
    bad = [
        (dict(beta=1.5), r"^beta must lie in \[0, 1\], got 1.5"),
        (dict(beta=-0.1), r"^beta must lie in \[0, 1\], got -0.1"),
        (dict(delta=-1.0), r"^delta must be a non-negative finite number, got -1.0"),
        (dict(delta=np.inf), r"^delta must be a non-negative finite number, got inf"),
        (dict(eps=-1e-3), r"^eps must be a non-negative finite number, got -0.001"),
        (dict(eps=np.nan), r"^eps must be a non-negative finite number, got nan"),
        (dict(domains="all"), r"^domains must be 'ids' or 'sides', got 'all'"),
        (dict(class_scatter_normalization="n"), r"^class_scatter_normalization must be "
                                                 r"'n_s' or 'none', got 'n'"),
    ]
    for kw, msg in bad:
        with pytest.raises(ValueError, match=msg):
            rfsca_from_stats(st, n_components=2, **kw)


def test_rfsca_component_limits_and_label_checks():
    X, y, sd = _data(seed=5)
    om = rff_weights(3, 10, 1.1, random_state=5)
    st = rf_stats(X, y, sd, omega=om, fast_trig=False)
    C = st.classes.size
    assert C == 3
    assert rfsca_max_components(st, 1.0)[0] == C - 1
    assert rfsca_max_components(st, 1.0, supervised=True)[0] == C - 1
    assert rfsca_max_components(st, 1.0, supervised=False)[0] == 20
    assert rfsca_max_components(st, 0.9)[0] == 20
    assert "n_classes - 1 = 2" in rfsca_max_components(st, 1.0)[1]
    rfsca_from_stats(st, n_components=C - 1, beta=1.0, delta=0.0)
    with pytest.raises(ValueError, match="n_classes - 1 = 2"):
        rfsca_from_stats(st, n_components=C, beta=1.0, delta=0.0)
    # unsupervised: any number of components up to the rank, labels ignored
    V, w = rfsca_from_stats(st, n_components=5, beta=1.0, supervised=False)
    assert V.shape == (20, 5)
    # two classes: the beta = 1 limit is 1
    lab2 = np.where(y == 2, 1, y)
    st2 = rf_stats(X, lab2, sd, omega=om)
    assert rfsca_max_components(st2, 1.0)[0] == 1
    # labels: beta > 0 needs labeled rows of two classes; beta = 0 needs none
    tgt = sd < 0
    st_u = rf_stats(X[tgt], y[tgt], sd[tgt], omega=om)
    with pytest.raises(ValueError, match=r"^beta > 0 needs labeled rows"):
        rfsca_from_stats(st_u, n_components=2, beta=0.5)
    rfsca_from_stats(st_u, n_components=2, beta=0.0)
    one = np.where(y >= 0, 0, -1)
    st1 = rf_stats(X, one, sd, omega=om)
    with pytest.raises(ValueError, match=r"^Only one class \(\[0\]\) among the labeled rows"):
        rfsca_from_stats(st1, n_components=2, beta=0.5)
    # a single labeled row: the class terms are still built (one class: beta = 0 only)
    y1 = np.full(len(y), -1)
    y1[0] = 1
    sd1 = np.where(np.arange(len(y)) == 0, 1, -3)          # one labeled source row
    V1, w1 = rfsca_from_stats(rf_stats(X, y1, sd1, omega=om, fast_trig=False), n_components=2,
                              beta=0.0, eigen_solver="dense")
    ref = _sca_reference(rff_map(X, om), y1, sd1, 0.0, 1.0, 1e-5, "n_s", "ids", True)
    np.testing.assert_allclose(w1, ref[:2], rtol=1e-8)


def _tca_features_reference(Z, sd, mu):
    n = len(sd)
    m = Z.mean(axis=0)
    C = Z.T @ Z - n * np.outer(m, m)
    d = Z[sd > 0].mean(axis=0) - Z[sd < 0].mean(axis=0)
    B = np.eye(Z.shape[1]) + mu * np.outer(d, d)
    return scipy.linalg.eigh(C, B, eigvals_only=True)[::-1]


@pytest.mark.parametrize("mu", [0.0, 0.5, 1.0, 7.0])
def test_rftca_features_penalty_matches_the_feature_space_problem(mu):
    X, y, sd = _data(seed=6)
    om = rff_weights(3, 10, 1.1, random_state=6)
    st = rf_stats(X, None, sd, omega=om, fast_trig=False)
    V, w = rftca_from_stats(st, n_components=3, mu=mu, eigen_solver="dense")
    ref = _tca_features_reference(rff_map(X, om), sd, mu)
    np.testing.assert_allclose(w, ref[:3], rtol=1e-8)


def test_rftca_argument_checks_and_defaults():
    X, y, sd = _data(seed=7)
    om = rff_weights(3, 20, 1.1, random_state=7)
    st = rf_stats(X, None, sd, omega=om)
    V, w = rftca_from_stats(st)
    assert V.shape == (40, 30)
    for bad in (-1.0, np.inf, np.nan):
        with pytest.raises(ValueError, match="^mu must be a non-negative finite number"):
            rftca_from_stats(st, mu=bad)
    with pytest.raises(ValueError, match="^penalty must be 'features' or 'coefficients', "
                                         "got 'both'"):
        rftca_from_stats(st, n_components=2, penalty="both")


def test_rftca_coefficients_dense_and_cholesky_agree_and_clip_on_duplicates():
    X, y, sd = _data(seed=8)
    om = rff_weights(3, 60, 1.1, random_state=8)
    st = rf_stats(X, None, sd, omega=om, fast_trig=False)
    Vd, wd = rftca_from_stats(st, n_components=4, penalty="coefficients", eigen_solver="dense")
    Vr, wr = rftca_from_stats(st, n_components=4, penalty="coefficients",
                              eigen_solver="arpack")
    np.testing.assert_allclose(wr, wd, rtol=1e-6)
    # exact TCA with the random-feature kernel K = Z Z^T (Pan's penalty on the coefficients)
    Z = rff_map(X, om)
    n = len(sd)
    K = Z @ Z.T
    H = np.eye(n) - 1.0 / n
    l = np.where(sd > 0, 1.0 / (sd > 0).sum(), -1.0 / (sd < 0).sum())
    KL = K @ l
    ref = scipy.linalg.eigh(K @ H @ K, np.outer(KL, KL) + np.eye(n) + 0 * K,
                            eigvals_only=True)[::-1]
    np.testing.assert_allclose(wd, ref[:4], rtol=1e-6)
    # three distinct points repeated: the kernel has rank 3
    Xd = np.repeat(X[:3], 20, axis=0)
    sdd = np.where(np.arange(60) % 2 == 0, 1, -2)
    std = rf_stats(Xd, None, sdd, omega=om, fast_trig=False)
    with pytest.raises(ValueError, match="^n_components=5 exceeds the numerical rank 3"):
        rftca_from_stats(std, n_components=5, penalty="coefficients", eigen_solver="dense")
    with pytest.warns(Warning, match="using n_components=2"):
        V, w = rftca_from_stats(std, n_components=5, penalty="coefficients",
                                eigen_solver="dense", rank_deficient="clip")
    assert V.shape[1] == w.shape[0] == 2
    rftca_from_stats(std, n_components=2, penalty="coefficients", eigen_solver="dense")
    Xc = np.repeat(X[:1], 20, axis=0)
    stc = rf_stats(Xc, None, np.where(np.arange(20) % 2 == 0, 1, -2), omega=om)
    with pytest.raises(ValueError, match="^The random-feature kernel has numerical rank 1"):
        rftca_from_stats(stc, n_components=2, penalty="coefficients", eigen_solver="dense",
                         rank_deficient="clip")


def test_statistics_dtypes_and_small_cases():
    X, y, sd = _data()
    om = rff_weights(3, 4, 1.0, random_state=0)
    st = rf_stats(X, y, sd, omega=om)
    for name in ("domains", "domain_counts", "class_counts"):
        assert getattr(st, name).dtype == np.int64, name
    merged = rf_stats(X[:50], y[:50], sd[:50], omega=om) + rf_stats(X[50:], y[50:], sd[50:],
                                                                     omega=om)
    assert merged.domain_counts.dtype == np.int64 and merged.class_counts.dtype == np.int64
    # float32 features: products in float32, sums and moments in float64
    Z32 = rff_map(X, om).astype(np.float32)
    ff = RFStats.from_features(Z32, y, sd)
    for name in ("domain_sums", "class_sums", "moment_labeled", "moment_unlabeled"):
        assert getattr(ff, name).dtype == np.float64, name
    assert ff.domain_counts.dtype == np.int64 and ff.class_counts.dtype == np.int64
    nolab = RFStats.from_features(Z32, None, sd)
    assert nolab.classes.dtype == np.int64 and nolab.class_counts.dtype == np.int64
    # a float32 X is mapped in float32 (not silently in float64)
    st32 = rf_stats(X.astype(np.float32), y, sd, omega=om, fast_trig=False)
    st64 = rf_stats(X, y, sd, omega=om, fast_trig=False)
    assert np.abs(st32.moment_labeled - st64.moment_labeled).max() > 0
    # one row: zero scatter; one target row: a target mean
    one = rf_stats(X[:1], None, np.array([1]), omega=om)
    assert np.all(one.total_scatter() == 0)
    st1 = rf_stats(X[:4], None, np.array([1, 1, 1, -2]), omega=om, fast_trig=False)
    # one row's features: the same cos/sin of the same products, up to their rounding
    z3 = rff_map(X[3:4], om)
    np.testing.assert_allclose(st1.side_mean(-1), z3[0], rtol=0,
                               atol=mean_atol(z3, err=rff_err(X[3:4], om)))
    # string labels
    ys = np.where(y == -1, "", np.char.add("c", y.astype(str)))
    sts = rf_stats(X, ys, sd, omega=om, fast_trig=False)
    assert sts.classes.tolist() == ["c0", "c1", "c2"]
    np.testing.assert_array_equal(sts.class_counts, st64.class_counts)
    # the same rows grouped by other labels: the same sums, up to their order
    np.testing.assert_allclose(sts.class_sums, st64.class_sums, rtol=0,
                               atol=sum_atol(rff_map(X, om), axis=0))
    # adding a non-zero int is not a merge
    with pytest.raises(TypeError):
        st + 1
    assert (0 + st) is st


def test_statistics_without_labels_one_source_id_and_empty_have_the_documented_shapes():
    X, y, sd = _data()
    om = rff_weights(3, 4, 1.0, random_state=0)
    for st in (rf_stats(X, None, sd, omega=om), RFStats.from_features(rff_map(X, om), None, sd),
               RFStats.empty(8)):
        assert st.classes.shape == (0,) and st.classes.dtype == np.int64
        assert st.class_counts.shape == (0,) and st.class_counts.dtype == np.int64
        assert st.class_sums.shape == (0, 8) and st.n_labeled == 0
    e = RFStats.empty(8)
    assert e.domains.dtype == np.int64 and e.domain_counts.dtype == np.int64
    merged = e + rf_stats(X, y, sd, omega=om) + e
    assert merged.domains.dtype == np.int64 and merged.domain_counts.dtype == np.int64
    assert merged.classes.dtype == np.int64 and merged.class_counts.dtype == np.int64
    # a float32 X is mapped in float32: not the float64 statistics of the same values
    X32 = X.astype(np.float32)
    st32 = rf_stats(X32, y, sd, omega=om, fast_trig=False)
    st64 = rf_stats(X32.astype(np.float64), y, sd, omega=om, fast_trig=False)
    assert np.abs(st32.moment_labeled - st64.moment_labeled).max() > 0
    # one row: its mean is its feature vector
    one = rf_stats(X[:1], None, np.array([1]), omega=om, fast_trig=False)
    z0 = rff_map(X[:1], om)
    np.testing.assert_allclose(one.mean(), z0[0], rtol=0,
                               atol=mean_atol(z0, err=rff_err(X[:1], om)))
    # "sides" with the single source id 1
    st = rf_stats(X, None, np.where(sd > 0, 1, -2), omega=om)
    assert st.domain_means("sides").shape == (2, 8)
    # string labels straight from features
    Z = rff_map(X, om)
    ys = np.where(y == -1, "", np.char.add("c", y.astype(str)))
    ff = RFStats.from_features(Z, ys, sd)
    assert ff.classes.tolist() == ["c0", "c1", "c2"]


def test_rftca_clipping_on_every_path():
    from shiftlearn.adaptation._base import ComponentsClippedWarning

    X, y, sd = _data(seed=9)
    om = rff_weights(3, 60, 1.1, random_state=9)
    # three distinct points: the kernel has rank 3, the centred one rank 2
    Xd = np.repeat(X[:3], 20, axis=0)
    sdd = np.where(np.arange(60) % 2 == 0, 1, -2)
    std = rf_stats(Xd, None, sdd, omega=om, fast_trig=False)
    # n_components = the rank: the centring leaves 2 non-zero eigenvalues
    with pytest.raises(ValueError, match="^Only 2 of the n_components=3 leading eigenvalues"):
        rftca_from_stats(std, n_components=3, penalty="coefficients", eigen_solver="dense")
    for solver in ("dense", "arpack"):
        with pytest.warns(ComponentsClippedWarning):
            V, w = rftca_from_stats(std, n_components=5, penalty="coefficients",
                                    eigen_solver=solver, rank_deficient="clip")
        assert V.shape[1] == 2
    with pytest.warns(ComponentsClippedWarning):
        V, w = rftca_from_stats(std, n_components=5, rank_deficient="clip")     # features
    assert V.shape[1] == 2
    # two distinct points: rank 2, one component after centring (clipped, not refused)
    X2 = np.repeat(X[:2], 10, axis=0)
    st2 = rf_stats(X2, None, np.where(np.arange(20) % 2 == 0, 1, -2), omega=om, fast_trig=False)
    with pytest.warns(ComponentsClippedWarning, match="using n_components=1"):
        V, w = rftca_from_stats(st2, n_components=3, penalty="coefficients",
                                eigen_solver="dense", rank_deficient="clip")
    assert V.shape[1] == 1
    # one component is a valid request
    V, w = rftca_from_stats(rf_stats(X, None, sd, omega=om), n_components=1)
    assert V.shape == (120, 1)


def test_rftca_coefficients_auto_solver_on_800_features():
    X, y, sd = _data(seed=10)
    om = rff_weights(3, 400, 1.1, random_state=10)        # D = 800: "auto" may go to ARPACK
    st = rf_stats(X, None, sd, omega=om, fast_trig=False)
    w_auto = rftca_from_stats(st, n_components=3, penalty="coefficients")[1]
    w_dense = rftca_from_stats(st, n_components=3, penalty="coefficients",
                               eigen_solver="dense")[1]
    np.testing.assert_allclose(w_auto, w_dense, rtol=1e-6)


def test_rf_stats_refuses_a_chunk_size_that_is_no_row_count():
    X = np.random.default_rng(0).normal(size=(9, 2))
    W = rff_weights(2, 3, 1.0, random_state=0)
    for bad in (0, -2, 2.5, True):
        with pytest.raises(ValueError, match="chunk_size must be a positive integer"):
            rf_stats(X, omega=W, chunk_size=bad)
    one = rf_stats(X, omega=W, chunk_size=np.int64(1))          # numpy ints are row counts
    # row by row against one block: the same products summed in another order
    Zw, dZ = rff_map(X, W, fast_trig=True), rff_err(X, W)
    np.testing.assert_allclose(one.total_moment(), rf_stats(X, omega=W).total_moment(),
                               rtol=0, atol=dot_atol(Zw.T, Zw, Xerr=dZ.T, Yerr=dZ))


def test_resolve_eigen_solver_rule_and_its_boundaries():
    from shiftlearn.adaptation._rf_solvers import resolve_eigen_solver

    assert resolve_eigen_solver("auto", 800, 80) == "arpack"      # both bounds inclusive
    assert resolve_eigen_solver("auto", 799, 10) == "dense"
    assert resolve_eigen_solver("auto", 800, 81) == "dense"
    assert resolve_eigen_solver("auto", 5000, 30) == "arpack"
    assert resolve_eigen_solver("arpack", 50, 48) == "arpack"      # k = D - 2: ARPACK can
    assert resolve_eigen_solver("arpack", 50, 49) == "dense"       # k = D - 1: it cannot
    assert resolve_eigen_solver("dense", 5000, 3) == "dense"
    with pytest.raises(ValueError, match=r"^eigen_solver must be 'auto', 'dense' or 'arpack', "
                                         r"got 'lanczos'\.$"):
        resolve_eigen_solver("lanczos", 10, 2)
