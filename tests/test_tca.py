"""Exact TCA: the symmetric-definite solve, mu/gamma, scaling, robustness, clipping, memory
guard (scikit-learn's checks: tests/test_common.py)."""

import tracemalloc

import numpy as np
import pytest
import scipy.linalg
from _tolerances import kernel_map_atol, rbf_err
from sklearn.neighbors import KNeighborsClassifier

from shiftlearn import _resources
from shiftlearn._linalg import leading_eigh
from shiftlearn.adaptation import TCA, _base, tca_components
from shiftlearn.adaptation._base import ComponentsClippedWarning
from shiftlearn.adaptation._tca import FIT_MATRICES
from shiftlearn.kernels import mmd_vector, rbf_kernel


def _two_domains(n=60, d=4, shift=1.0, seed=0):
    rng = np.random.default_rng(seed)
    X = np.vstack([rng.normal(size=(n, d)), rng.normal(size=(n, d)) + shift])
    sd = np.r_[np.ones(n, int), -2 * np.ones(n, int)]
    return X, sd


def test_solver_paths_agree_and_solve_the_pencil():
    X, sd = _two_domains(n=150)
    K = rbf_kernel(X, sigma=2.0)
    ell = mmd_vector(sd)
    w_d, W_d, KW_d = tca_components(K, ell, 5, 1.0, eigen_solver="dense")
    w_a, W_a, KW_a = tca_components(K, ell, 5, 1.0, eigen_solver="arpack")
    np.testing.assert_allclose(w_d, w_a, rtol=1e-8)
    # same directions up to sign
    np.testing.assert_allclose(np.abs(W_d.T @ (np.eye(len(X)) + np.outer(K @ ell, K @ ell)) @ W_a),
                               np.eye(5), atol=1e-6)
    np.testing.assert_allclose(KW_a, K @ W_a, atol=1e-10)
    # it really is the generalized problem K H K w = lambda (I + mu K l l^T K) w
    n = len(X)
    H = np.eye(n) - 1.0 / n
    A = K @ H @ K
    M = np.eye(n) + np.outer(K @ ell, K @ ell)
    np.testing.assert_allclose(A @ W_a, M @ W_a * w_a, rtol=1e-6, atol=1e-8 * w_a[0])
    # and the leading ones: compare with all eigenvalues of the pencil
    all_w = scipy.linalg.eigh(A, M, eigvals_only=True)
    np.testing.assert_allclose(w_a, all_w[::-1][:5], rtol=1e-8)


def test_eigh_of_solve_is_not_the_answer():
    """What skada/ADAPT do (eigh on the non-symmetric M^{-1} A) differs from the pencil."""
    X, sd = _two_domains(n=40)
    K = rbf_kernel(X, sigma=2.0)
    ell = mmd_vector(sd)
    n = len(X)
    A = K @ (np.eye(n) - 1.0 / n) @ K
    M = np.eye(n) + 10 * np.outer(K @ ell, K @ ell)
    wrong = np.linalg.eigh(np.linalg.solve(M, A))[0][::-1][:3]
    right, _ = leading_eigh(A, 3, M)
    assert not np.allclose(wrong, right, rtol=1e-3)


def test_paper_gamma_is_passed_as_one_over_mu():
    # the glossary (docs/conventions.md): ``gamma`` is scikit-learn's RBF coefficient only;
    # the RF-TCA paper's regulariser weight gamma is TCA's ``mu = 1 / gamma``
    X, sd = _two_domains()
    with pytest.raises(TypeError, match="gamma"):
        TCA(n_components=3, gamma=0.25)
    a = TCA(n_components=3, mu=4.0).fit(X, sample_domain=sd)
    b = TCA(n_components=3, mu=1 / 0.25).fit(X, sample_domain=sd)
    assert b.mu_ == 4.0
    np.testing.assert_allclose(np.abs(a.transform(X)), np.abs(b.transform(X)), atol=1e-8)


def test_mmd_shrinks_with_mu_and_scaling_options():
    X, sd = _two_domains(shift=1.5)
    ell = mmd_vector(sd)
    gaps = []
    for mu in (1e-3, 1e3):
        Z = TCA(n_components=3, mu=mu, scaling="constraint").fit_transform(X, sample_domain=sd)
        # the projected MMD per unit variance
        gaps.append(np.sum((ell @ Z) ** 2) / np.sum(np.var(Z, axis=0)))
    assert gaps[1] < 0.2 * gaps[0]
    tca = TCA(n_components=3, scaling="constraint").fit(X, sample_domain=sd)
    Z = tca.transform(X)
    Zc = Z - Z.mean(axis=0)
    np.testing.assert_allclose(Zc.T @ Zc, np.eye(3), atol=1e-6)   # W^T K H K W = I
    tca_e = TCA(n_components=3, scaling="eigh").fit(X, sample_domain=sd)
    np.testing.assert_allclose(np.var(tca_e.transform(X), axis=0) * len(X),
                               tca_e.eigenvalues_, rtol=1e-6)


def test_fit_transform_equals_transform():
    X, sd = _two_domains()
    for solver in ("dense", "arpack"):
        tca = TCA(n_components=4, eigen_solver=solver)
        Z = tca.fit_transform(X, sample_domain=sd)
        np.testing.assert_allclose(Z, tca.transform(X), atol=1e-9)


def test_default_n_components_is_clipped_on_small_data():
    X, sd = _two_domains(n=5)
    with pytest.warns(ComponentsClippedWarning, match=r"n_components=30 .* rank <= 9\); using "
                      r"n_components=9") as rec:
        tca = TCA().fit(X, sample_domain=sd)
    assert rec[0].filename == __file__          # points at the user's line
    assert tca.n_components_ == 9 and tca.n_components == 30
    assert tca.transform(X).shape == (10, 9)
    # the same components as asking for 9 (clipping is not an approximation)
    np.testing.assert_allclose(np.abs(tca.transform(X)),
                               np.abs(TCA(n_components=9).fit(X, sample_domain=sd).transform(X)),
                               atol=1e-10)
    # truncating beyond the fitted components stays an error
    with pytest.raises(ValueError, match="n_components=10 is too large"):
        tca.truncate(10)
    assert tca.truncate(3).transform(X).shape == (10, 3)


def test_errors():
    X, sd = _two_domains(n=5)
    with pytest.raises(ValueError, match="'n_components' parameter of TCA must be an int"):
        TCA(n_components=0).fit(X, sample_domain=sd)
    with pytest.raises(ValueError, match="'kernel' parameter"):
        TCA(kernel="poly").fit(X, sample_domain=sd)
    with pytest.raises(ValueError, match="mu"):
        TCA(n_components=2, mu=-1).fit(X, sample_domain=sd)
    with pytest.raises(ValueError, match="scaling"):
        TCA(n_components=2, scaling="nope").fit(X, sample_domain=sd)
    tca = TCA(n_components=2).fit(X, sample_domain=sd)
    with pytest.raises(ValueError, match="features"):
        tca.transform(X[:, :2])


def test_robust_to_duplicates_constant_features_float32():
    X, sd = _two_domains(n=40)
    X = np.hstack([X, np.ones((len(X), 1))])          # constant feature
    X = np.vstack([X, X[:10]])                          # duplicated rows
    sd = np.r_[sd, sd[:10]]
    Z64 = TCA(n_components=3).fit_transform(X, sample_domain=sd)
    Z32 = TCA(n_components=3).fit_transform(X.astype(np.float32), sample_domain=sd)
    assert np.all(np.isfinite(Z64))
    np.testing.assert_allclose(np.abs(Z32), np.abs(Z64), rtol=1e-3, atol=1e-3)


def test_beats_raw_on_a_shifted_toy():
    rng = np.random.default_rng(1)
    n = 100
    ys = rng.integers(0, 2, n)
    yt = rng.integers(0, 2, n)
    Xs = np.c_[ys * 2.0 + 0.3 * rng.normal(size=n), rng.normal(size=n)]
    Xt = np.c_[yt * 2.0 + 0.3 * rng.normal(size=n), rng.normal(size=n) + 4.0]
    X = np.vstack([Xs, Xt])
    y = np.r_[ys, -np.ones(n, int)]
    Z = TCA(n_components=1, kernel="linear").fit_transform(X, y)
    acc = KNeighborsClassifier(1).fit(Z[:n], ys).score(Z[n:], yt)
    assert acc > 0.9


def test_exact_tca_on_70000_rows_is_refused_before_allocating(monkeypatch):
    """36 GiB per 70,000 x 70,000 kernel: a ValueError that names the memory and RFTCA, raised
    before any n x n allocation (numpy used to die with MemoryError). The budget is pinned to
    32 GiB so that the test means the same on a machine with more memory."""
    monkeypatch.setattr(_resources, "MEMORY_BUDGET", 32 << 30)
    X = np.random.default_rng(0).normal(size=(70_000, 2))
    sd = np.r_[np.ones(35_000, int), -np.ones(35_000, int)]
    tracemalloc.start()
    with pytest.raises(ValueError, match=r"needs about 4\d\.\d GiB .* Use RFTCA"):
        TCA(n_components=5).fit(X, sample_domain=sd)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert peak < 50e6


def test_memory_budget_is_stated_and_overridable(monkeypatch):
    X, sd = _two_domains(n=100)
    monkeypatch.setattr(_resources, "MEMORY_BUDGET", 100_000)
    with pytest.raises(ValueError, match=r"0\.0 GiB are available \(shiftlearn\._resources"
                       r"\.MEMORY_BUDGET\)"):
        TCA(n_components=2).fit(X, sample_domain=sd)
    monkeypatch.setattr(_resources, "MEMORY_BUDGET", None)
    assert _resources.memory_budget() > 2**28       # the physical memory


@pytest.mark.parametrize("solver", ["arpack", "dense"])
def test_memory_estimate_bounds_the_measured_peak(solver):
    """The guard's n x n count (FIT_MATRICES) is at least what numpy really allocates (a fixed
    bandwidth: the median rule's own O(min(n, 1000)^2) work is freed before the fit's)."""
    X, sd = _two_domains(n=300, d=5)
    n = len(X)
    tracemalloc.start()
    TCA(n_components=5, bandwidth=2.0, eigen_solver=solver).fit(X, sample_domain=sd)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert peak <= FIT_MATRICES[solver] * n * n * 8
    assert peak >= 0.5 * FIT_MATRICES[solver] * n * n * 8     # and not a wild over-estimate


def test_transform_in_row_blocks_equals_one_block(monkeypatch):
    X, sd = _two_domains(n=50)
    tca = TCA(n_components=3).fit(X, sample_domain=sd)
    whole = tca.transform(X)
    monkeypatch.setattr(_base, "KERNEL_CHUNK_BYTES", 8 * 100 * 7)     # 7 rows per block
    # blocks change the BLAS calls that form the kernel rows and their product with W: the
    # kernel's round-off through |W| plus the product's (~2e-12 against entries ~8)
    Kt = rbf_kernel(X, tca.X_fit_, sigma=tca.sigma_)
    atol = kernel_map_atol(rbf_err(X, tca.X_fit_, tca.sigma_), Kt, tca.components_)
    np.testing.assert_allclose(tca.transform(X), whole, rtol=0, atol=atol)


@pytest.mark.slow
def test_mnist_usps_accuracy(data_home):
    from shiftlearn.datasets import load_mnist_usps

    X, y, sd, yt = load_mnist_usps(data_home).pack("mnist", "usps", return_masked_labels=True)
    src = sd > 0
    Z = TCA(n_components=30, mu=1.0).fit_transform(X, y, sd)
    acc = KNeighborsClassifier(1).fit(Z[src], y[src]).score(Z[~src], yt[~src])
    assert acc >= 0.56


@pytest.mark.parametrize("solver", ["arpack", "dense"])
def test_constant_rows_are_refused_not_a_linalg_error(solver):
    """A constant X used to end in ARPACK's 'starting vector is zero' (ArpackError)."""
    X = np.ones((600, 3))
    sd = np.r_[np.ones(300, int), -np.ones(300, int)]
    with pytest.raises(ValueError, match="centred kernel is zero .* constant X"):
        TCA(n_components=5, eigen_solver=solver).fit(X, sample_domain=sd)


def test_arpack_failure_is_a_value_error(monkeypatch):
    from scipy.sparse.linalg import ArpackNoConvergence

    from shiftlearn import _linalg

    def no_convergence(*args, **kwargs):
        raise ArpackNoConvergence("ARPACK error -1: No convergence", np.empty(0),
                                  np.empty((0, 0)))

    monkeypatch.setattr(_linalg, "eigsh", no_convergence)
    X, sd = _two_domains(n=300)
    with pytest.raises(ValueError, match="ARPACK.*failed .* eigen_solver='dense'"):
        TCA(n_components=5, eigen_solver="arpack").fit(X, sample_domain=sd)


@pytest.mark.parametrize("scaling", ["eigh", "constraint"])
@pytest.mark.parametrize("Est", ["TCA", "JDA"])
def test_linear_kernel_with_fewer_columns_than_rows_solves_in_their_span(Est, scaling):
    """n > d with the linear kernel: the fit works with the thin SVD of X (no n x n kernel),
    and gives the kernel route's eigenvalues and embeddings (a callable linear kernel takes
    that route) up to each component's sign, to round-off relative to the spectrum."""
    from shiftlearn.adaptation import JDA

    rng = np.random.default_rng(3)
    n, d = 120, 6
    y = rng.integers(0, 3, n)
    X = rng.normal(size=(n, d)) + y[:, None] * rng.normal(size=d)
    sd = np.where(np.arange(n) < 70, 1, -1)
    X[sd < 0] = X[sd < 0] * 1.2 + 0.4
    yy = np.where(sd > 0, y, -1)
    cls = {"TCA": TCA, "JDA": JDA}[Est]
    fast = cls(n_components=4, kernel="linear", scaling=scaling).fit(X, yy, sd)
    slow = cls(n_components=4, kernel=lambda A, B=None: A @ (A if B is None else B).T,
               scaling=scaling, eigen_solver="dense").fit(X, yy, sd)
    np.testing.assert_allclose(fast.eigenvalues_, slow.eigenvalues_,
                               rtol=1e-9, atol=1e-9 * slow.eigenvalues_[0])
    Z, Z0 = fast.transform(X), slow.transform(X)
    sign = np.sign(np.sum(Z * Z0, axis=0))
    np.testing.assert_allclose(Z * sign, Z0, atol=1e-8 * np.abs(Z0).max())
    assert fast.mmd_ == pytest.approx(slow.mmd_, rel=1e-10)
    if Est == "JDA":
        np.testing.assert_array_equal(fast.target_labels_, slow.target_labels_)
    # more components than columns: clipped to the linear kernel's rank, with the warning
    from shiftlearn.adaptation._base import ComponentsClippedWarning

    with pytest.warns(ComponentsClippedWarning, match=f"rank <= {d}"):
        wide = cls(n_components=d + 1, kernel="linear").fit(X, yy, sd)
    assert wide.n_components_ == d
