"""Exact TCA on asymmetric data (issue #23): unequal domain sizes, several sources pooled, both
solvers, both scalings, the solver switch on both sides. The MMD vector is built by hand here
(``1/n_s`` on source rows, ``-1/n_t`` on target rows), not with ``mmd_vector``."""

import numpy as np
import pytest
import scipy.linalg

from shiftlearn.adaptation import TCA, tca_components
from shiftlearn.adaptation._tca import resolve_tca_solver
from shiftlearn.kernels import rbf_kernel


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
    assert tca.mmd_ == pytest.approx(float(ell @ K @ ell), rel=1e-12)
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
    np.testing.assert_allclose(a.eigenvalues_, b.eigenvalues_, rtol=1e-12)
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
    np.testing.assert_allclose(c.eigenvalues_, b.eigenvalues_, rtol=1e-12)
    assert c.X_fit_.dtype == np.float64
    Xt = X[:7].astype(np.float32)
    np.testing.assert_allclose(c.transform(Xt), b.transform(Xt.astype(np.float64)),
                               rtol=1e-12, atol=1e-12)
    assert a.X_fit_.dtype == np.float64
