"""Arrays of other namespaces (array-api-strict with its devices, torch on the CPU, torch on a
GPU where there is one) through the estimators and kernel functions that claim array-API
support: the same results as NumPy within stated tolerances, output of the input's kind, on
its device, in its floating dtype; every other route refuses with the fix named.

Tolerances: an exact symmetric eigensolver perturbs an eigenvector by about
``n eps lambda_1 / gap`` (``gap``: the distance of its eigenvalue to the rest of the spectrum);
the subspace iteration stops at a relative residual ``tol`` (``SUBSPACE_TOL``), which moves an
eigenvector by at most ``tol lambda_1 / gap``. The bounds below are those quantities times a
safety factor of 100, computed from the fitted eigenvalues, never the digits one machine gave.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import sklearn
from _tolerances import rff_err

from shiftlearn._array_api import ARRAY_API_ESTIMATORS, to_numpy
from shiftlearn._linalg import SUBSPACE_TOL, leading_eigh_array_api
from shiftlearn.adaptation import RFSCA, RFTCA, SCA, TCA, rf_stats, uSCA
from shiftlearn.kernels import (
    kernel_matrix,
    median_heuristic,
    rbf_kernel,
    rff_map,
    rff_weights,
    sq_distances,
)

xps = pytest.importorskip("array_api_strict")
EPS64 = np.finfo(np.float64).eps
EPS32 = np.finfo(np.float32).eps


def _torch():
    return pytest.importorskip("torch")


def _namespaces():
    """(id, make) pairs: ``make(numpy_array)`` gives the array in that namespace/device."""
    cases = [("strict-device1", lambda a: xps.asarray(a, device=xps.Device("device1")))]
    try:
        import torch
    except ImportError:
        return cases
    cases.append(("torch-cpu", lambda a: torch.asarray(a)))
    if torch.cuda.is_available():
        cases.append(("torch-cuda", lambda a: torch.asarray(a, device="cuda")))
    return cases


NAMESPACES = _namespaces()


@pytest.fixture
def dispatch(monkeypatch):
    """scikit-learn's array-API dispatch on. scikit-learn checks SCIPY_ARRAY_API=1 when the
    switch is set; SciPy itself read the variable at import, but no array-API route of the
    library calls SciPy, so setting it for the check is enough here."""
    monkeypatch.setenv("SCIPY_ARRAY_API", "1")
    with sklearn.config_context(array_api_dispatch=True):
        yield


def _two_domains(n_s=70, n_t=45, d=5, seed=0):
    """Unequal, off-centre domains (a symmetric set-up would hide a wrong MMD vector)."""
    rng = np.random.default_rng(seed)
    X = np.vstack([rng.normal(size=(n_s, d)), 0.8 * rng.normal(size=(n_t, d)) + 0.7])
    y = np.r_[rng.integers(0, 3, n_s), -np.ones(n_t, dtype=int)]
    sd = np.r_[np.ones(n_s, dtype=int), -2 * np.ones(n_t, dtype=int)]
    return X, y, sd


def _sign_matched(Z, Z_ref):
    s = np.sign(np.sum(Z * Z_ref, axis=0))
    s[s == 0] = 1.0
    return Z * s


def _gaps(w):
    """Each eigenvalue's distance to its neighbours among the fitted ones (descending ``w``)."""
    w = np.asarray(w, dtype=np.float64)
    d = np.abs(np.diff(w))
    return np.minimum(np.r_[np.inf, d], np.r_[d, w[-1:]])


def _assert_same_embedding(Z, Z_ref, w, rel):
    """Per component: ``|Z - Z_ref| <= rel lambda_1 / gap`` times the component's scale."""
    Z = _sign_matched(to_numpy(Z).astype(np.float64), Z_ref)
    bound = rel * w[0] / _gaps(w) * np.abs(Z_ref).max(axis=0)
    err = np.abs(Z - Z_ref).max(axis=0)
    assert np.all(err <= bound), (err, bound)


def _assert_kind(Z, X_like):
    assert type(Z) is type(X_like)
    assert str(Z.device) == str(X_like.device)


@pytest.mark.parametrize("make", [m for _, m in NAMESPACES], ids=[i for i, _ in NAMESPACES])
@pytest.mark.parametrize("solver", ["dense", "arpack"])
@pytest.mark.parametrize("scaling", ["eigh", "constraint"])
def test_array_api_tca_equals_numpy(dispatch, make, solver, scaling):
    X, _, sd = _two_domains()
    n = X.shape[0]
    ref = TCA(n_components=4, eigen_solver=solver, scaling=scaling).fit(X, sample_domain=sd)
    Z_ref = ref.transform(X)
    Xd = make(X)
    est = TCA(n_components=4, eigen_solver=solver, scaling=scaling).fit(Xd, sample_domain=sd)
    w = ref.eigenvalues_
    # dense: both exact (n eps); arpack: ARPACK (1e-10) against the subspace iteration
    rel = 100 * (n * EPS64 if solver == "dense" else SUBSPACE_TOL["float64"])
    np.testing.assert_allclose(to_numpy(est.eigenvalues_), w, rtol=0, atol=rel * w[0])
    assert est.sigma_ == ref.sigma_             # the same seeded rows, read back to the host
    assert est.mmd_ == pytest.approx(ref.mmd_, rel=100 * n * EPS64)
    for Z in (est.transform(Xd), TCA(n_components=4, eigen_solver=solver, scaling=scaling)
              .fit_transform(Xd, sample_domain=sd)):
        _assert_kind(Z, Xd)
        _assert_same_embedding(Z, Z_ref, w, rel)


@pytest.mark.parametrize("make", [m for _, m in NAMESPACES], ids=[i for i, _ in NAMESPACES])
@pytest.mark.parametrize("Est", [RFTCA, RFSCA])
def test_array_api_random_feature_adapters_equal_numpy(dispatch, make, Est):
    X, y, sd = _two_domains(n_s=300, n_t=200)
    kw = {"n_components": 3, "n_features": 150, "random_state": 0}
    ref = Est(**kw).fit(X, y, sample_domain=sd)
    Xd = make(X)
    est = Est(**kw).fit(Xd, y, sample_domain=sd)
    Z = est.transform(Xd)
    _assert_kind(Z, Xd)
    # NumPy's route evaluates cos/sin in float32 (absolute error < 1e-5 per feature, see
    # kernels.cos_sin_into): the statistics, hence the components, move by about 1e-5 relative
    _assert_same_embedding(Z, ref.transform(X), ref.eigenvalues_, 100 * 1e-5)
    np.testing.assert_array_equal(est.omega_, ref.omega_)    # the same seeded frequencies


@pytest.mark.parametrize("make", [m for _, m in NAMESPACES], ids=[i for i, _ in NAMESPACES])
def test_array_api_rf_stats_equal_numpy_statistics(dispatch, make):
    from shiftlearn.adaptation._rf_stats import rf_stats_array_api

    X, y, sd = _two_domains(n_s=90, n_t=60)
    omega = rff_weights(X.shape[1], 40, sigma=1.3, random_state=0)
    n = X.shape[0]
    # labeled and unlabeled rows, every row labeled, and no labels at all (y=None)
    y_all = np.where(y < 0, 0, y)
    for yy in (y, y_all, None):
        ref = rf_stats(X, yy, sd, omega, fast_trig=False, chunk_size=37)
        got = rf_stats_array_api(make(X), yy, sd, omega, chunk_size=37)
        for name in ("domain_sums", "class_sums", "moment_labeled", "moment_unlabeled"):
            a, b = getattr(got, name), getattr(ref, name)
            # sums of n terms of size <= 1 (scaled features): |error| <= n eps per entry,
            # times 100
            np.testing.assert_allclose(a, b, rtol=0, atol=100 * n * EPS64, err_msg=name)
        for name in ("domains", "domain_counts", "classes", "class_counts"):
            a, b = getattr(got, name), getattr(ref, name)
            assert np.asarray(a).dtype == np.asarray(b).dtype, name
            np.testing.assert_array_equal(a, b, err_msg=name)
        assert got.fingerprint == ref.fingerprint


@pytest.mark.parametrize("make", [m for _, m in NAMESPACES], ids=[i for i, _ in NAMESPACES])
def test_array_api_kernel_functions_equal_numpy(dispatch, make):
    X, _, _ = _two_domains(n_s=30, n_t=20)
    Y = X[:7] + 0.1
    Xd, Yd = make(X), make(Y)
    scale = np.abs(X).max() ** 2 * X.shape[1]
    # ||x||^2 - 2 x.y + ||y||^2 cancels: absolute error about d eps max|x|^2, times 100
    for a, b in ((sq_distances(Xd), sq_distances(X)), (sq_distances(Xd, Yd), sq_distances(X, Y))):
        _assert_kind(a, Xd)
        np.testing.assert_allclose(to_numpy(a), b, rtol=0, atol=100 * scale * EPS64)
    K = rbf_kernel(Xd, Yd, sigma=1.7)
    _assert_kind(K, Xd)
    np.testing.assert_allclose(to_numpy(K), rbf_kernel(X, Y, sigma=1.7), rtol=0,
                               atol=100 * scale * EPS64)
    np.testing.assert_allclose(to_numpy(kernel_matrix(Xd, kernel="linear")), X @ X.T,
                               rtol=0, atol=100 * scale * EPS64)
    for rule in ("median", "median_sq", "mean", "n_features"):
        assert median_heuristic(Xd, rule=rule) == median_heuristic(X, rule=rule)
    big = make(np.random.default_rng(3).normal(size=(1500, 2)))    # a seeded subsample
    assert median_heuristic(big) == median_heuristic(to_numpy(big))
    om = rff_weights(X.shape[1], 9, sigma=1.0, random_state=0)
    Z = rff_map(Xd, make(om))
    _assert_kind(Z, Xd)
    # phases from another library's matmul and its own cos/sin: rff_err (the phases'
    # gamma_d |x||w| plus a few ulps of the trigonometry; a missing 1/sqrt(N) is O(1) off)
    np.testing.assert_allclose(to_numpy(Z), rff_map(X, om), rtol=0, atol=np.max(rff_err(X, om)))
    with pytest.raises(ValueError, match="kernel='laplacian' is computed with NumPy only"):
        kernel_matrix(Xd, kernel="laplacian", sigma=1.0)


def test_array_api_float32_is_kept_and_close_to_float64(dispatch):
    torch = _torch()
    X, y, sd = _two_domains()
    ref = TCA(n_components=3).fit(X, sample_domain=sd)
    X32 = torch.asarray(X, dtype=torch.float32)
    est = TCA(n_components=3).fit(X32, sample_domain=sd)
    Z = est.transform(X32)
    assert Z.dtype == torch.float32 and est.components_.dtype == torch.float32
    # float32 round-off: n eps32 lambda_1 / gap per component, times 100
    _assert_same_embedding(Z, ref.transform(X), ref.eigenvalues_, 100 * X.shape[0] * EPS32)
    Zr = RFTCA(n_components=3, n_features=100, random_state=0).fit(
        X32, y, sample_domain=sd).transform(X32)
    assert Zr.dtype == torch.float32


def test_array_api_subspace_iteration_states_its_failure():
    rng = np.random.default_rng(0)
    Q, _ = np.linalg.qr(rng.normal(size=(60, 60)))
    A = xps.asarray((Q * np.r_[np.ones(30), 0.999 * np.ones(30)]) @ Q.T)   # no gap at k=5
    w, V = leading_eigh_array_api(A, 5, solver="dense")
    assert w.shape == (5,) and V.shape == (60, 5)
    with pytest.raises(ValueError, match="subspace iteration reached a relative residual.*"
                                         "use eigen_solver='dense'"):
        leading_eigh_array_api(A, 5, solver="subspace", tol=1e-14, max_iter=3)
    B = xps.asarray((Q * np.linspace(10, 1, 60)) @ Q.T)
    w, V = leading_eigh_array_api(B, 4, solver="subspace")
    np.testing.assert_allclose(to_numpy(w), np.linspace(10, 1, 60)[:4],
                               atol=100 * SUBSPACE_TOL["float64"] * 10)


def test_array_api_refused_where_not_supported(dispatch):
    X, _, sd = _two_domains()
    Xd = xps.asarray(X, device=xps.Device("device1"))
    from shiftlearn.generalization import MarginalTransferClassifier

    with pytest.raises(ValueError, match=r"MarginalTransferClassifier computes with NumPy only"
                                         r".*" + ", ".join(ARRAY_API_ESTIMATORS)):
        MarginalTransferClassifier().fit(Xd, np.r_[np.zeros(60, int), np.ones(55, int)],
                                         sample_domain=sd)
    est = TCA(n_components=2).fit(X, sample_domain=sd)          # fitted on NumPy
    with pytest.raises(ValueError, match="fitted on ndarray arrays; transform arrays of the "
                                         "same kind"):
        est.transform(Xd)
    with pytest.raises(ValueError, match="input X contains NaN or infinity"):
        TCA().fit(xps.asarray(np.full((4, 2), np.nan)))
    with pytest.raises(ValueError, match="expecting 5 features"):
        TCA(n_components=2).fit(Xd, sample_domain=sd).transform(Xd[:, :3])


def test_array_api_without_dispatch_follows_scikit_learn():
    X, _, sd = _two_domains()
    Xd = xps.asarray(X, device=xps.Device("device1"))
    with pytest.raises(ValueError, match=r"dispatch is off.*array_api_dispatch=True"):
        TCA(n_components=2).fit(Xd, sample_domain=sd)
    torch = _torch()                             # a host array is converted, as scikit-learn
    Z = TCA(n_components=2).fit(torch.asarray(X), sample_domain=sd).transform(X)
    assert isinstance(Z, np.ndarray)


@pytest.mark.parametrize("make", [m for _, m in NAMESPACES], ids=[i for i, _ in NAMESPACES])
def test_array_api_mmd_equals_numpy(dispatch, make):
    from shiftlearn.kernels import mmd2, mmd2_rff

    X, _, sd = _two_domains(n_s=40, n_t=30)
    A, B = X[sd > 0], X[sd < 0]
    n = X.shape[0]
    for kw in ({}, {"unbiased": True}, {"kernel": "linear"}):
        # means of n^2 kernel entries in [0, 1] (rbf) or of size max|x|^2 d (linear)
        bound = 100 * n * EPS64 * (1 if "kernel" not in kw else np.abs(X).max() ** 2 * 5)
        assert abs(mmd2(make(A), make(B), **kw) - mmd2(A, B, **kw)) <= bound
    om = rff_weights(X.shape[1], 50, sigma=1.0, random_state=0)
    # NumPy's features are float64 here (Omega float64): the same sums, n eps apart
    assert mmd2_rff(make(A), make(B), make(om)) == pytest.approx(mmd2_rff(A, B, om),
                                                              abs=100 * n * EPS64)
    assert mmd2_rff(make(A), make(B), n_features=60, random_state=1) == pytest.approx(
        mmd2_rff(A, B, n_features=60, random_state=1), abs=100 * n * EPS64)
    with pytest.raises(ValueError, match="X and Y must be arrays of the same kind"):
        mmd2(make(A), B)
    with pytest.raises(ValueError, match="X has 5 features but Y has 2"):
        mmd2(make(A), make(B[:, :2]))


@pytest.mark.parametrize("make", [m for _, m in NAMESPACES], ids=[i for i, _ in NAMESPACES])
@pytest.mark.parametrize("kernel", ["linear", "rbf"])
def test_array_api_jda_equals_numpy(dispatch, make, kernel):
    from shiftlearn.adaptation import JDA

    X, y, sd = _two_domains()
    kw = {"n_components": 4, "kernel": kernel, "n_iter": 3}
    ref = JDA(**kw).fit(X, y, sample_domain=sd)
    Xd = make(X)
    est = JDA(**kw).fit(Xd, y, sample_domain=sd)
    # the same pseudo-labels each round, so the same last solve (dense: n eps)
    np.testing.assert_array_equal(est.target_labels_, ref.target_labels_)
    assert est.n_iter_ == ref.n_iter_
    Z = est.transform(Xd)
    _assert_kind(Z, Xd)
    _assert_same_embedding(Z, ref.transform(X), ref.eigenvalues_, 100 * X.shape[0] * EPS64)


def test_array_api_docs_example_runs(dispatch):
    """docs/gpu.md's example (its lines are +SKIP for installs without torch)."""
    _torch()
    from _docs_examples import run_skipped_example

    assert run_skipped_example("gpu.md", "# Arrays on a GPU") >= 5


@pytest.mark.parametrize("make", [m for _, m in NAMESPACES], ids=[i for i, _ in NAMESPACES])
@pytest.mark.parametrize("shrinkage", ["auto", "ledoit_wolf", 0.3, 1.0, None])
@pytest.mark.parametrize("shape", [(30, 25, 12), (12, 9, 40)], ids=["n>d", "n<d"])
def test_array_api_coral_equals_numpy(dispatch, make, shrinkage, shape):
    from shiftlearn.adaptation import CORAL, coral_covariance

    n_s, n_t, d = shape
    rng = np.random.default_rng(1)
    scales = np.exp(rng.normal(size=d))
    X = np.vstack([rng.normal(size=(n_s, d)), rng.normal(size=(n_t, d)) * 1.7 + 0.4]) * scales
    sd = np.r_[np.ones(n_s, int), -2 * np.ones(n_t, int)]
    if shrinkage is None and n_s < d:
        with pytest.raises(ValueError, match="source covariance is singular"):
            CORAL(shrinkage=None).fit(make(X), None, sd)
        return
    ref = CORAL(shrinkage=shrinkage).fit(X, None, sd)
    Xd = make(X)
    est = CORAL(shrinkage=shrinkage).fit(Xd, None, sd)
    assert (est.powers_ is None) == (ref.powers_ is None)     # the same route
    Z, Z_ref = est.transform(Xd, sample_domain=sd), ref.transform(X, sample_domain=sd)
    _assert_kind(Z, Xd)
    # the covariance powers move by about d eps cond(C) relative on either route
    cond = max(np.linalg.cond(coral_covariance(X[sd > 0], shrinkage)),
               np.linalg.cond(coral_covariance(X[sd < 0], shrinkage)))
    bound = 100 * d * EPS64 * cond * np.abs(Z_ref).max()
    np.testing.assert_allclose(to_numpy(Z), Z_ref, rtol=0, atol=bound)
    np.testing.assert_array_equal(to_numpy(Z)[sd < 0], X[sd < 0])
    assert est.matrix_.shape == (d, d)


@pytest.mark.parametrize("make", [m for _, m in NAMESPACES], ids=[i for i, _ in NAMESPACES])
@pytest.mark.parametrize("kw", [{}, {"beta": 0.0}, {"beta": 1.0, "n_components": 2},
                                {"whiten": False, "centering": "literal"},
                                {"class_scatter_normalization": "none", "delta": 3.0}],
                         ids=["default", "beta0", "beta1", "literal", "none-delta3"])
def test_array_api_sca_equals_numpy(dispatch, make, kw):
    X, y, sd = _two_domains()
    y = y.copy()
    y[sd < 0] = -1
    kw = {"n_components": 4, "eigen_solver": "dense", **kw}
    ref = SCA(**kw).fit(X, y, sample_domain=sd)
    Xd = make(X)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)   # the Rayleigh check finds no fault
        est = SCA(**kw).fit(Xd, y, sample_domain=sd)
    assert est.n_components_ == ref.n_components_
    assert to_numpy(est.dual_coef_).shape == ref.dual_coef_.shape
    w = ref.eigenvalues_
    # both exact (a Cholesky reduction against LAPACK's generalized eigh): n eps, scaled by
    # the denominator's condition number (its ridge eps bounds it by about ||M|| / eps)
    rel = 100 * X.shape[0] * EPS64 * (1.0 + 1.0 / ref.eps)
    np.testing.assert_allclose(to_numpy(est.eigenvalues_), w, rtol=0, atol=rel * w[0])
    for Z in (est.transform(Xd), SCA(**kw).fit_transform(Xd, y, sample_domain=sd)):
        _assert_kind(Z, Xd)
        _assert_same_embedding(Z, ref.transform(X), w, rel)


def test_array_api_usca_equals_numpy(dispatch):
    X, _, sd = _two_domains()
    ref = uSCA(n_components=3, eigen_solver="dense").fit(X, sample_domain=sd)
    Xd = xps.asarray(X, device=xps.Device("device1"))
    Z = uSCA(n_components=3).fit(Xd, sample_domain=sd).transform(Xd)
    _assert_kind(Z, Xd)
    rel = 100 * X.shape[0] * EPS64 * (1.0 + 1.0 / ref.eps)
    _assert_same_embedding(Z, ref.transform(X), ref.eigenvalues_, rel)


@pytest.mark.parametrize("solver", ["dense", "arpack"])
@pytest.mark.parametrize("columns", [1, 2, 3])
def test_tca_components_array_api_solve_the_pencil(solver, columns):
    """The array-API solve against the explicit pencil ``K H K w = lambda (I + mu K L K) w``:
    exact (dense) within ``n eps`` of ``lambda_1``, the subspace iteration within its residual
    tolerance ``tol lambda_1``, times 100."""
    import scipy.linalg

    from shiftlearn.adaptation._tca import tca_components_array_api

    X, _, sd = _two_domains(n_s=40, n_t=30)
    rng = np.random.default_rng(5)
    n = X.shape[0]
    src = sd > 0
    ell = np.column_stack([np.where(src, 1 / src.sum(), -1 / (~src).sum())]
                          + [rng.normal(size=n) / n for _ in range(columns - 1)])
    K = rbf_kernel(X, sigma=2.0)
    mu = 1.6
    w, W, KW = (to_numpy(a) for a in tca_components_array_api(
        xps.asarray(K.copy()), xps.asarray(ell if columns > 1 else ell[:, 0]), 3, mu,
        eigen_solver=solver))
    H = np.eye(n) - 1.0 / n
    A, M = K @ H @ K, np.eye(n) + mu * (K @ ell) @ (K @ ell).T
    ref = scipy.linalg.eigh(A, M, eigvals_only=True)[::-1][:3]
    tol = 100 * (n * EPS64 if solver == "dense" else SUBSPACE_TOL["float64"])
    np.testing.assert_allclose(w, ref, rtol=0, atol=tol * ref[0])
    np.testing.assert_allclose(W.T @ M @ W, np.eye(3), atol=1e-6)
    np.testing.assert_allclose(KW, K @ W, atol=1e-9 * np.abs(KW).max())


def test_tca_components_array_api_defaults_and_overwriting():
    from shiftlearn.adaptation._tca import tca_components_array_api

    X, _, sd = _two_domains(n_s=40, n_t=30)
    src = sd > 0
    ell = xps.asarray(np.where(src, 1 / src.sum(), -1 / (~src).sum()))
    K = rbf_kernel(X, sigma=2.0)
    for solver in ("auto", "arpack"):
        explicit = tca_components_array_api(xps.asarray(K.copy()), ell, 3, 1.0, eigen_solver=solver,
                                            random_state=0, overwrite_K=True)
        default = (tca_components_array_api(xps.asarray(K.copy()), ell, 3) if solver == "auto" else
                   tca_components_array_api(xps.asarray(K.copy()), ell, 3,
                                            eigen_solver=solver))
        for a, b in zip(explicit, default, strict=True):
            assert np.array_equal(to_numpy(a), to_numpy(b))
    K_xp = xps.asarray(K.copy())        # (shares the copy's memory)
    tca_components_array_api(K_xp, ell, 3)                    # K becomes G by default
    assert not np.array_equal(to_numpy(K_xp), K)
    K_xp = xps.asarray(K.copy())
    tca_components_array_api(K_xp, ell, 3, overwrite_K=False)
    assert np.array_equal(to_numpy(K_xp), K)


def test_tca_array_api_fitted_state_clipping_and_solver(dispatch, monkeypatch):
    from shiftlearn.adaptation import _tca
    from shiftlearn.adaptation._base import ComponentsClippedWarning

    X, _, sd = _two_domains(n_s=8, n_t=6, d=3)
    Xd = xps.asarray(X)
    with pytest.warns(ComponentsClippedWarning, match=r"^TCA: n_components=30 .*the centred "
                                                       r"kernel of 14 training rows has "
                                                       r"rank <= 13"):
        tca = TCA(n_components=30, mu=0.3).fit(Xd, sample_domain=sd)
    assert tca.n_components_ == 13 and tca.mu_ == 0.3
    ref = TCA(n_components=30, mu=0.3).fit(X, sample_domain=sd)
    np.testing.assert_allclose(tca.eigenvalues_, ref.eigenvalues_, rtol=1e-8)
    Z = tca.fit_transform(Xd, sample_domain=sd)
    np.testing.assert_allclose(to_numpy(Z), to_numpy(tca.transform(Xd)), rtol=1e-9,
                               atol=1e-9 * float(np.abs(to_numpy(Z)).max()))
    seen = {}
    real = _tca.tca_components_array_api

    def spy(*args, **kwargs):
        seen.update(mu=args[3], **kwargs)
        return real(*args, **kwargs)

    monkeypatch.setattr(_tca, "tca_components_array_api", spy)
    TCA(n_components=3, mu=0.3, eigen_solver="arpack").fit(Xd, sample_domain=sd)
    assert seen == {"mu": 0.3, "eigen_solver": "arpack"}


def test_tca_array_api_refuses_identical_rows_naming_tca(dispatch):
    X = np.tile([1.0, 2.0, 3.0], (8, 1))
    sd = np.r_[np.ones(4, int), -np.ones(4, int)]
    with pytest.raises(ValueError, match=r"^TCA: the centred kernel is zero"):
        TCA(n_components=2).fit(xps.asarray(X), sample_domain=sd)


def test_tca_components_array_api_row_blocks_and_solver_calls(monkeypatch):
    from shiftlearn.adaptation import _tca

    X, _, sd = _two_domains(n_s=40, n_t=30)
    n = X.shape[0]
    src = sd > 0
    ell = xps.asarray(np.column_stack([np.where(src, 1 / src.sum(), -1 / (~src).sum()),
                                       np.where(src, 0.0, 1 / (~src).sum())]))
    K = rbf_kernel(X, sigma=2.0)
    one = [to_numpy(a) for a in _tca.tca_components_array_api(xps.asarray(K.copy()), ell, 3)]
    monkeypatch.setattr(_tca, "_XP_BLOCK_BYTES", 8 * n * 7)       # blocks of 7 rows
    blocks = [to_numpy(a) for a in _tca.tca_components_array_api(xps.asarray(K.copy()), ell, 3)]
    for a, b in zip(one, blocks, strict=True):
        np.testing.assert_allclose(b, a, rtol=1e-12, atol=1e-12 * np.abs(a).max())
    calls = []
    real = _tca.leading_eigh_array_api

    def spy(A, k, **kwargs):
        calls.append(kwargs)
        return real(A, k, **kwargs)

    monkeypatch.setattr(_tca, "leading_eigh_array_api", spy)
    _tca.tca_components_array_api(xps.asarray(K.copy()), ell, 3, eigen_solver="dense")
    _tca.tca_components_array_api(xps.asarray(K.copy()), ell, 3, eigen_solver="arpack",
                                  random_state=7)
    assert calls[0] == {"solver": "dense"}
    assert calls[1]["solver"] == "subspace" and calls[1]["random_state"] == 7
    assert calls[1]["owner"] == "TCA"


def test_tca_array_api_scaling_stays_finite_and_linear_has_no_bandwidth(dispatch):
    X, _, sd = _two_domains(n_s=10, n_t=8, d=2)
    X, sd = np.vstack([X, X]), np.r_[sd, sd]          # rank 17 of 35: round-off eigenvalues
    tca = TCA(n_components=35, scaling="constraint", eigen_solver="dense")
    tca.fit(xps.asarray(X), sample_domain=sd)
    w = to_numpy(tca.eigenvalues_)
    assert w[-1] < 1e-12 * w[0]
    assert np.all(np.isfinite(to_numpy(tca.components_)))
    assert TCA(n_components=2, kernel="linear").fit(xps.asarray(X), sample_domain=sd).sigma_ \
        is None


def test_array_api_sca_names_itself_and_has_no_bandwidth_for_the_linear_kernel(dispatch):
    X = np.tile([1.0, 2.0, 3.0], (8, 1))
    sd = np.r_[np.ones(4, int), -np.ones(4, int)]
    with pytest.raises(ValueError, match=r"^uSCA: the centred kernel is zero"):
        uSCA(n_components=2).fit(xps.asarray(X), sample_domain=sd)
    X, _, sd = _two_domains(n_s=30, n_t=20, d=6)
    assert uSCA(n_components=2, kernel="linear").fit(xps.asarray(X), sample_domain=sd).sigma_ \
        is None


def test_array_api_squared_distances_are_clipped_at_zero():
    # far from the origin, ||x||^2 + ||y||^2 - 2 x.y cancels to a round-off negative for equal
    # rows (-1.9e-9 here before the clip)
    rng = np.random.default_rng(0)
    X = 1e3 + rng.normal(size=(50, 5))
    X = np.vstack([X, X])
    D = to_numpy(sq_distances(xps.asarray(X)))
    assert D.min() == 0.0
