"""Exact TCA: the symmetric-definite solve, mu/gamma, scaling, robustness, clipping, memory
guard (scikit-learn's checks: tests/house/test_common.py)."""

import tracemalloc

import numpy as np
import pytest
import scipy.linalg
from _tolerances import (
    dot_atol,
    kernel_map_atol,
    leading_eigvec_atol,
    leading_pencil_atol,
    mmd_atol,
    quad_atol,
    rbf_err,
)
from sklearn.neighbors import KNeighborsClassifier

from shiftlearn import _resources
from shiftlearn._linalg import leading_eigh
from shiftlearn.adaptation import TCA, _base, tca_components
from shiftlearn.adaptation._base import ComponentsClippedWarning
from shiftlearn.adaptation._tca import FIT_MATRICES, resolve_tca_solver
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


# ------------------------------------------------------------------------- edge cases
# Exact TCA on asymmetric data (issue #23): unequal domain sizes, several sources pooled, both
# solvers, both scalings, the solver switch on both sides. The MMD vector is built by hand here
# (``1/n_s`` on source rows, ``-1/n_t`` on target rows), not with ``mmd_vector``.


def _unequal(sizes=(60, 25), d=3, seed=0, targets=1):
    rng = np.random.default_rng(seed)
    X, sd = [], []
    for i, n in enumerate(sizes):
        X.append(rng.normal(size=(n, d)) * (1 + 0.3 * i) + 0.9 * i)
        sd.append(np.full(n, -(i + 1) if i >= len(sizes) - targets else i + 1))
    return np.vstack(X), np.concatenate(sd)


def _ell(sd):
    src = sd > 0
    return np.where(src, 1.0 / src.sum(), -1.0 / (~src).sum())


def _pencil(K, ell, mu):
    n = K.shape[0]
    H = np.eye(n) - 1.0 / n
    u = K @ ell
    return K @ H @ K, np.eye(n) + mu * np.outer(u, u)


@pytest.mark.parametrize("sizes", [(60, 25), (30, 14, 41)])
@pytest.mark.parametrize("solver", ["dense", "arpack"])
def test_tca_components_solve_the_pencil_on_unequal_domains(sizes, solver):
    X, sd = _unequal(sizes)
    K = rbf_kernel(X, sigma=1.7)
    ell = _ell(sd)
    mu = 2.5
    w, W, KW = tca_components(K, ell, 4, mu, eigen_solver=solver)
    A, M = _pencil(K, ell, mu)
    ref = scipy.linalg.eigh(A, M, eigvals_only=True)[::-1][:4]
    np.testing.assert_allclose(w, ref, rtol=1e-8)
    np.testing.assert_allclose(A @ W, M @ W * w, rtol=1e-6, atol=1e-8 * w[0])
    np.testing.assert_allclose(W.T @ M @ W, np.eye(4), atol=1e-8)
    np.testing.assert_allclose(KW, K @ W, atol=1e-9)


@pytest.mark.parametrize("scaling", ["eigh", "constraint"])
def test_tca_estimator_on_unequal_domains(scaling):
    X, sd = _unequal((60, 25), seed=1)
    mu = 0.7
    tca = TCA(n_components=3, mu=mu, kernel="linear", scaling=scaling,
              eigen_solver="dense").fit(X, sample_domain=sd)
    K = X @ X.T
    ell = _ell(sd)
    A, M = _pencil(K, ell, mu)
    ref = scipy.linalg.eigh(A, M, eigvals_only=True)[::-1][:3]
    np.testing.assert_allclose(tca.eigenvalues_, ref, rtol=1e-8)
    # an MMD is a difference of means: round-off is absolute, n eps |ell|^T |X||X|^T |ell|
    # (a missing 1/n_s or a sign on the target side changes it by O(1) of itself)
    Xa = np.abs(X)
    assert tca.mmd_ == pytest.approx(float(ell @ K @ ell), rel=0, abs=quad_atol(ell, Xa @ Xa.T))
    W = tca.components_
    if scaling == "eigh":
        np.testing.assert_allclose(W.T @ M @ W, np.eye(3), atol=1e-8)
    else:
        np.testing.assert_allclose(W.T @ A @ W, np.eye(3), atol=1e-8)
    # the embedding of a row is its kernel row times W, training rows included
    np.testing.assert_allclose(tca.transform(X), K @ W, atol=1e-8)
    np.testing.assert_allclose(tca.fit_transform(X, sample_domain=sd), K @ W, atol=1e-8)
    Xt = X[:5] + 0.1
    np.testing.assert_allclose(tca.transform(Xt), Xt @ X.T @ W, atol=1e-8)


def test_paper_gamma_as_mu_and_one_sided_data_is_kernel_pca():
    X, sd = _unequal((40, 20), seed=2)
    a = TCA(n_components=2, mu=1 / 0.25, eigen_solver="dense").fit(X, sample_domain=sd)
    b = TCA(n_components=2, mu=4.0, eigen_solver="dense").fit(X, sample_domain=sd)
    assert a.mu_ == 4.0 and b.mu_ == 4.0
    # the same pencil: its round-off bound (gamma = 0.25 taken as mu = 0.25 moves w by O(1))
    K = rbf_kernel(X, sigma=b.sigma_)
    A, M = _pencil(K, _ell(sd), 4.0)
    np.testing.assert_allclose(a.eigenvalues_, b.eigenvalues_, rtol=0,
                               atol=leading_pencil_atol(A, M, b.eigenvalues_))
    # sources only: no MMD term, the leading eigenvalues of K H K
    src = sd > 0
    c = TCA(n_components=2, kernel="linear", eigen_solver="dense").fit(X[src],
                                                                       sample_domain=sd[src])
    K = X[src] @ X[src].T
    n = src.sum()
    H = np.eye(n) - 1.0 / n
    assert c.mmd_ == 0.0
    np.testing.assert_allclose(c.eigenvalues_,
                               np.linalg.eigvalsh(K @ H @ K)[::-1][:2], rtol=1e-8)


def test_solver_switch_both_sides():
    assert resolve_tca_solver("auto", 400, 10) == "dense"
    assert resolve_tca_solver("auto", 401, 10) == "arpack"
    assert resolve_tca_solver("auto", 1000, 200) == "arpack"          # k = n / 5: arpack
    assert resolve_tca_solver("auto", 1000, 201) == "dense"
    assert resolve_tca_solver("arpack", 50, 48) == "arpack"
    assert resolve_tca_solver("arpack", 50, 49) == "dense"             # ARPACK: k < n - 1
    assert resolve_tca_solver("dense", 5000, 3) == "dense"
    with pytest.raises(ValueError, match="^eigen_solver must be 'auto', 'arpack' or 'dense', "
                                         "got 'lapack'"):
        resolve_tca_solver("lapack", 50, 3)


def test_constant_rows_are_refused_and_two_rows_are_enough():
    X = np.ones((6, 2))
    sd = np.r_[np.ones(3, int), -np.ones(3, int)]
    with pytest.raises(ValueError, match="centred kernel is zero"):
        TCA(n_components=1).fit(X, sample_domain=sd)
    Z = TCA(n_components=1, kernel="linear").fit_transform(np.array([[0.0], [1.0]]),
                                                           sample_domain=np.array([1, -1]))
    assert Z.shape == (2, 1) and np.all(np.isfinite(Z))


# ------------------------------------------------------------------ from the mutation run
def test_tca_components_defaults_and_arpack_reproducibility():
    X, sd = _unequal((300, 101), d=3, seed=3)            # n = 401: "auto" is ARPACK
    K = rbf_kernel(X, sigma=1.7)
    ell = _ell(sd)
    w, W, KW = tca_components(K, ell, 3)
    w2, W2, KW2 = tca_components(K, ell, 3, 1.0, eigen_solver="auto", tol=1e-10,
                                 random_state=0)
    np.testing.assert_array_equal(w, w2)
    np.testing.assert_array_equal(W, W2)                 # same start vector: bit for bit
    A, M = _pencil(K, ell, 1.0)
    ref = scipy.linalg.eigh(A, M, eigvals_only=True, subset_by_index=[398, 400])[::-1]
    np.testing.assert_allclose(w, ref, rtol=1e-9)
    # two fits of the estimator give the same components
    a = TCA(n_components=3).fit(X, sample_domain=sd).components_
    b = TCA(n_components=3).fit(X, sample_domain=sd).components_
    np.testing.assert_array_equal(a, b)


def test_tca_documented_defaults_and_fitted_attributes():
    from shiftlearn.adaptation._base import ComponentsClippedWarning

    assert TCA().get_params() == {"n_components": 30, "mu": 1.0,
                                  "kernel": "rbf", "bandwidth": "median", "scaling": "eigh",
                                  "eigen_solver": "auto", "memory": None}
    X, sd = _unequal((8, 5), seed=4)
    with pytest.warns(ComponentsClippedWarning,
                      match=r"^TCA: n_components=20 is more than the data allow \(the centred "
                            r"kernel of 13 training rows has rank <= 12\); using "
                            r"n_components=12"):
        tca = TCA(n_components=20, eigen_solver="dense").fit(X, sample_domain=sd)
    assert tca.n_components_ == 12 and tca.components_.shape == (13, 12)
    one = TCA(n_components=1, scaling="constraint").fit(X, sample_domain=sd)
    assert one.n_components_ == 1 and one.components_.shape == (13, 1)
    lin = TCA(n_components=2, kernel="linear").fit(X, sample_domain=sd)
    assert lin.sigma_ is None


def test_tca_computes_in_float64_whatever_the_input():
    X, sd = _unequal((40, 15), seed=5)
    a = TCA(n_components=3, eigen_solver="dense").fit(X, sample_domain=sd)
    b = TCA(n_components=3, eigen_solver="dense").fit(X.astype(np.float32).astype(np.float64),
                                                      sample_domain=sd)
    c = TCA(n_components=3, eigen_solver="dense").fit(X.astype(np.float32), sample_domain=sd)
    # float32 input is computed in float64: the fits agree to the float64 round-off of the
    # pencil (~2e-11 on eigenvalues ~20) and of its eigenvectors (~1e-11); a float32
    # computation misses both by ~1e4 and more
    K = rbf_kernel(b.X_fit_, sigma=b.sigma_)
    A, M = _pencil(K, _ell(sd), b.mu_)
    np.testing.assert_allclose(c.eigenvalues_, b.eigenvalues_, rtol=0,
                               atol=leading_pencil_atol(A, M, b.eigenvalues_))
    assert c.X_fit_.dtype == np.float64
    Xt = X[:7].astype(np.float32)
    Kt = rbf_kernel(Xt.astype(np.float64), b.X_fit_, sigma=b.sigma_)
    # Kt W: W's round-off through ||Kt||, plus the product's own
    atol = (np.linalg.norm(Kt, 2) * leading_eigvec_atol(A, M, 3)
            + dot_atol(Kt, b.components_))
    np.testing.assert_allclose(c.transform(Xt), b.transform(Xt.astype(np.float64)), rtol=0,
                               atol=atol)
    assert a.X_fit_.dtype == np.float64


# ------------------------------------------------------------------ memory= (FitMemory)
def _count_calls(monkeypatch, module, name):
    """Replace ``module.name`` by a spy that records the ``k`` (third argument) of each call."""
    real = getattr(module, name)
    ks = []

    def spy(*args, **kwargs):
        ks.append(args[2])
        return real(*args, **kwargs)
    monkeypatch.setattr(module, name, spy)
    return ks


def _same_up_to_sign(A, B, atol):
    signs = np.sign(np.sum(A * B, axis=0))
    signs[signs == 0] = 1
    np.testing.assert_allclose(A * signs, B, atol=atol)


def test_memory_keeps_bandwidth_kernel_and_one_solve_per_mu(monkeypatch):
    """The documented pieces (bandwidth, kernel, one eigen-solve per mu for the most components
    asked so far) are kept, reused, and the kept kernel is never overwritten by the in-place
    ARPACK path: every fit equals the same fit without memory."""
    from shiftlearn.adaptation import FitMemory, _tca

    X, sd = _unequal((30, 14), seed=6)
    mem = FitMemory()
    assert TCA(memory=mem).get_params()["memory"] is mem
    kernels = []
    real_kernel = TCA._kernel

    def kernel_spy(self, *args):
        if len(args) == 1:                           # the training kernel, not transform's
            kernels.append(self.memory is not None)
        return real_kernel(self, *args)
    monkeypatch.setattr(TCA, "_kernel", kernel_spy)
    solves = _count_calls(monkeypatch, _tca, "tca_components")
    settings = ((1.0, 5), (1.0, 3), (2.0, 3), (2.0, 5))
    served = [TCA(n_components=k, mu=mu, eigen_solver="arpack", memory=mem).fit(
        X, sample_domain=sd) for mu, k in settings]
    assert kernels == [True]                         # one kernel for every setting
    assert solves == [5, 5]                          # mu=2, k=3 is solved for k=5 at once
    assert len(mem) == 4                             # bandwidth, kernel, two solves
    for (mu, k), s in zip(settings, served, strict=True):
        fresh = TCA(n_components=k, mu=mu, eigen_solver="arpack").fit(X, sample_domain=sd)
        np.testing.assert_allclose(s.eigenvalues_, fresh.eigenvalues_, rtol=1e-9)
        assert s.mmd_ == fresh.mmd_ and s.sigma_ == fresh.sigma_
        _same_up_to_sign(s.transform(X), fresh.transform(X), 1e-7)


def test_memory_solves_for_at_most_what_smaller_data_allow(monkeypatch):
    """A larger n_components asked on other rows raises the target of later solves, but only
    up to n - 1 (the rank of the centred kernel) of the rows at hand."""
    from shiftlearn.adaptation import FitMemory, _tca

    X, sd = _unequal((30, 14), seed=7)
    mem = FitMemory()
    TCA(n_components=8, eigen_solver="dense", memory=mem).fit(X, sample_domain=sd)
    small = np.r_[0:4, 30:34]                        # 8 rows: rank <= 7
    solves = _count_calls(monkeypatch, _tca, "tca_components")
    a = TCA(n_components=3, eigen_solver="dense", memory=mem).fit(X[small],
                                                                  sample_domain=sd[small])
    assert solves == [7]
    b = TCA(n_components=7, eigen_solver="dense", memory=mem).fit(X[small],
                                                                  sample_domain=sd[small])
    assert solves == [7]                             # served by the truncated solve
    ref = TCA(n_components=7, eigen_solver="dense").fit(X[small], sample_domain=sd[small])
    np.testing.assert_allclose(b.eigenvalues_, ref.eigenvalues_, rtol=1e-9)
    np.testing.assert_allclose(a.eigenvalues_, ref.eigenvalues_[:3], rtol=1e-9)


@pytest.mark.parametrize("change", ["X", "sd", "kernel", "bandwidth", "mu", "eigen_solver"])
def test_memory_never_mixes_rows_or_parameters(change):
    """Fit A, then B that differs in one input or parameter with the same memory: B equals B
    fitted without memory."""
    from shiftlearn.adaptation import FitMemory

    X, sd = _unequal((30, 14), seed=8)
    kw = dict(n_components=3, eigen_solver="arpack")
    X2, sd2, kw2 = X, sd, dict(kw)
    if change == "X":                                # not a translation (invisible to rbf),
        kw["bandwidth"] = 1.0                        # and the same sigma: only the rows differ
        kw2 = dict(kw)
        X2 = X * np.r_[1.0, 1.5, 1.0]
    elif change == "sd":
        sd2 = sd.copy()
        sd2[:10] = -1                                # ten source rows become target rows
    else:
        kw2[change] = {"kernel": "laplacian", "bandwidth": 0.8, "mu": 3.0,
                       "eigen_solver": "dense"}[change]
    mem = FitMemory()
    TCA(**kw, memory=mem).fit(X, sample_domain=sd)
    served = TCA(**kw2, memory=mem).fit(X2, sample_domain=sd2)
    fresh = TCA(**kw2).fit(X2, sample_domain=sd2)
    np.testing.assert_allclose(served.eigenvalues_, fresh.eigenvalues_, rtol=1e-9)
    # ell^T K ell with |k| <= 1 and ||ell||_1 = 2: round-off below c n eps 4, absolute (the
    # MMD of other rows or another kernel differs by far more)
    assert served.mmd_ == pytest.approx(fresh.mmd_, rel=0, abs=mmd_atol(len(X2)))


def test_memory_keeps_nothing_for_a_callable_kernel():
    from shiftlearn.adaptation import FitMemory

    X, sd = _unequal((30, 14), seed=9)
    mem = FitMemory()
    a = TCA(n_components=2, kernel=lambda A, B: A @ B.T, memory=mem).fit(X, sample_domain=sd)
    b = TCA(n_components=2, kernel="linear").fit(X, sample_domain=sd)
    assert len(mem) == 0
    np.testing.assert_allclose(a.eigenvalues_, b.eigenvalues_, rtol=1e-10)


def test_memory_guard_counts_the_kept_kernel_and_names_fit_and_alternative(monkeypatch):
    """With memory the kept kernel is one more n x n matrix: a budget between 1.2 and 2.2
    matrices accepts the fit without memory and refuses it with memory, saying so."""
    from shiftlearn import _resources
    from shiftlearn.adaptation import FitMemory

    X, sd = _unequal((40, 20), seed=10)              # n = 60
    n = 60
    monkeypatch.setattr(_resources, "MEMORY_BUDGET", int(1.7 * n * n * 8))
    TCA(n_components=2, eigen_solver="arpack").fit(X, sample_domain=sd)
    with pytest.raises(ValueError, match=(
            r"^TCA\.fit on 60 rows \(eigen_solver='arpack'\) needs about 0\.0 GiB of memory "
            r"\(2\.2 float64 60 x 60 matrices\) .* Use RFTCA \(random-feature TCA, the same "
            r"problem with random Fourier features\), whose memory")):
        TCA(n_components=2, eigen_solver="arpack", memory=FitMemory()).fit(X, sample_domain=sd)


def test_arpack_settings_and_failures_name_tca(monkeypatch):
    from scipy.sparse.linalg import ArpackNoConvergence

    from shiftlearn import _linalg
    from shiftlearn.adaptation import _tca

    X, sd = _unequal((30, 14), seed=11)
    K = rbf_kernel(X, sigma=1.5)
    seen = []
    real = _tca.leading_eigh

    def spy(*args, **kwargs):
        seen.append(kwargs)
        return real(*args, **kwargs)
    monkeypatch.setattr(_tca, "leading_eigh", spy)
    tca_components(K, _ell(sd), 3, eigen_solver="arpack", tol=1e-7, random_state=5)
    assert seen[-1] == {"solver": "arpack", "tol": 1e-7, "random_state": 5, "owner": "TCA"}

    def no_convergence(*args, **kwargs):
        raise ArpackNoConvergence("ARPACK error -1: No convergence", np.empty(0),
                                  np.empty((0, 0)))
    monkeypatch.setattr(_linalg, "eigsh", no_convergence)
    with pytest.raises(ValueError, match=r"^TCA: the iterative eigensolver \(ARPACK\) failed"):
        tca_components(K, _ell(sd), 3, eigen_solver="arpack")


def _pencil_general(K, ell, mu, g=None):
    """``K H K`` and ``diag(g) + mu K ell ell^T K`` for ``ell`` of one or several columns."""
    n = K.shape[0]
    H = np.eye(n) - 1.0 / n
    u = K @ ell.reshape(n, -1)
    return K @ H @ K, np.diag(np.ones(n) if g is None else g) + mu * u @ u.T


@pytest.mark.parametrize("solver", ["dense", "arpack"])
@pytest.mark.parametrize("columns", [1, 3])
@pytest.mark.parametrize("reweighted", [False, True])
def test_tca_components_solve_the_pencil_for_several_mmd_columns_and_a_diagonal(
        solver, columns, reweighted):
    # JDA's marginal and class vectors (several columns of ell) and TJM's diagonal g
    X, sd = _unequal((45, 30), seed=2)
    K = rbf_kernel(X, sigma=1.3)
    rng = np.random.default_rng(3)
    ell = np.column_stack([_ell(sd)] + [rng.normal(size=75) / 75 for _ in range(columns - 1)])
    g = rng.uniform(0.5, 3.0, size=75) if reweighted else None
    mu = 1.7
    w, W, KW = tca_components(K, ell, 4, mu, eigen_solver=solver, reg_diagonal=g)
    A, M = _pencil_general(K, ell, mu, g)
    ref = scipy.linalg.eigh(A, M, eigvals_only=True)[::-1][:4]
    np.testing.assert_allclose(w, ref, rtol=1e-8)
    np.testing.assert_allclose(A @ W, M @ W * w, rtol=1e-6, atol=1e-8 * w[0])
    np.testing.assert_allclose(W.T @ M @ W, np.eye(4), atol=1e-8)
    np.testing.assert_allclose(KW, K @ W, atol=1e-9)


def test_tca_components_read_one_mmd_column_as_the_vector_bit_for_bit():
    X, sd = _unequal((45, 30), seed=2)
    K = rbf_kernel(X, sigma=1.3)
    ell = _ell(sd)
    for solver in ("dense", "arpack"):
        one = tca_components(K, ell, 3, 1.5, eigen_solver=solver)
        col = tca_components(K, ell[:, None], 3, 1.5, eigen_solver=solver)
        for a, b in zip(one, col, strict=True):
            assert np.array_equal(a, b)


def test_tca_components_factored_default_mu_and_rank_bound():
    from shiftlearn.adaptation._tca import tca_components_factored

    X, sd = _unequal((30, 20), d=6, seed=4)
    ell = _ell(sd)
    for a, b in zip(tca_components_factored(X[:, :5], ell, 3),
                    tca_components_factored(X[:, :5], ell, 3, 1.0), strict=True):
        assert np.array_equal(a, b)
    with pytest.raises(ValueError, match=r"^tca_components_factored: n_components=6 exceeds "
                                         r"the factor's rank bound 5; use tca_components"):
        tca_components_factored(X[:, :5], ell, 6)


@pytest.mark.parametrize("kernel", ["linear", "rbf"])
def test_tca_fitted_state_and_training_embedding_on_both_routes(kernel):
    # linear with n > d: the factored route; rbf: the kernel route
    X, sd = _unequal((40, 25), d=4, seed=6)
    tca = TCA(n_components=3, kernel=kernel, mu=0.4, eigen_solver="dense")
    Z = tca.fit_transform(X, sample_domain=sd)
    assert tca.mu_ == 0.4 and tca.n_components_ == 3
    np.testing.assert_allclose(Z, tca.transform(X), rtol=1e-9, atol=1e-9 * np.abs(Z).max())


def test_tca_linear_kernel_route_and_clipping_at_as_many_columns_as_rows():
    # d == n goes the kernel route: rank <= n - 1 (the centred kernel), not d
    rng = np.random.default_rng(7)
    X = rng.normal(size=(6, 6))
    sd = np.r_[np.ones(3, int), -np.ones(3, int)]
    with pytest.warns(ComponentsClippedWarning, match=r"^TCA: n_components=30 .*centred kernel "
                                                       r"of 6 training rows has rank <= 5"):
        assert TCA(n_components=30, kernel="linear").fit(X, sample_domain=sd).n_components_ == 5
    with pytest.warns(ComponentsClippedWarning, match=r"^TCA: n_components=30 .*the linear "
                                                       r"kernel of 3 features has rank <= 3"):
        tca = TCA(n_components=30, kernel="linear").fit(X[:, :3], sample_domain=sd)
    assert tca.n_components_ == 3


@pytest.mark.parametrize("kernel", ["linear", "rbf"])
def test_tca_identical_rows_are_refused_naming_tca(kernel):
    X = np.tile([1.0, 2.0, 3.0], (8, 1))           # constant columns, differing entries
    sd = np.r_[np.ones(4, int), -np.ones(4, int)]
    with pytest.raises(ValueError, match=r"^TCA: the centred kernel is zero"):
        TCA(n_components=2, kernel=kernel).fit(X, sample_domain=sd)


def test_tca_constraint_scaling_stays_finite_on_a_rank_deficient_kernel():
    # duplicated rows: the centred kernel's trailing eigenvalues are round-off (or below 0)
    X, sd = _unequal((10, 8), d=2, seed=8)
    X = np.vstack([X, X])
    sd = np.r_[sd, sd]
    tca = TCA(n_components=35, scaling="constraint", eigen_solver="dense").fit(
        X, sample_domain=sd)                       # rank 17: 18 round-off eigenvalues
    assert tca.eigenvalues_[-1] < 1e-12 * tca.eigenvalues_[0]
    assert np.all(np.isfinite(tca.components_))
