"""TJM (Long et al., CVPR 2014): TCA's marginal MMD with an l2,1 row-sparsity on the source
part of the transformation, alternated with its reweighting matrix ``G``."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import scipy.linalg
from _tolerances import kernel_map_atol, rbf_err

from shiftlearn import _resources
from shiftlearn.adaptation import TCA, TJM, FitMemory
from shiftlearn.compose import DomainAdaptationClassifier
from shiftlearn.kernels import kernel_matrix, mmd_vector, rbf_kernel


def _data(seed=0, n=60, d=4, shift=1.5):
    rng = np.random.default_rng(seed)
    Xs = rng.normal(size=(n, d))
    ys = (Xs[:, 0] > 0).astype(int)
    Xt = rng.normal(size=(n, d)) + shift * np.r_[1.0, 0.0, 0.5, 0.0, np.zeros(d - 4)]
    X = np.vstack([Xs, Xt])
    y = np.r_[ys, -np.ones(n, int)]
    sd = np.r_[np.ones(n, int), -2 * np.ones(n, int)]
    return X, y, sd


def _reference(X, sd, k, mu, kernel, sigma, n_rounds):
    """TJM written from the paper's formulas: the explicit pencil
    ``(K H K, G + mu K L K)`` by ``scipy.linalg.eigh``, ``A`` normalised to
    ``A^T K H K A = I``, ``G_ii = 1 / (2 ||a^i||)`` on the source rows (norms floored at
    ``1e-10`` of the largest, as the class: a zero row keeps a finite weight); ``n_rounds``
    updates of ``G`` (no early stop)."""
    K = kernel_matrix(X, kernel=kernel, sigma=sigma)
    n = len(X)
    H = np.eye(n) - 1.0 / n
    ell = mmd_vector(sd)
    g = np.ones(n)
    for it in range(n_rounds + 1):
        w, W = scipy.linalg.eigh(K @ H @ K, np.diag(g) + mu * np.outer(K @ ell, K @ ell))
        w, W = w[::-1][:k], W[:, ::-1][:, :k]
        A = W / np.sqrt(w)
        if it < n_rounds:
            g = np.ones(n)
            norms = np.linalg.norm(A, axis=1)
            g[sd > 0] = 1.0 / (2.0 * np.maximum(norms[sd > 0], 1e-10 * norms.max()))
    return K @ W, w, g


def _signed(Z, Zref):
    return Z * np.sign(np.sum(Z * Zref, axis=0))


@pytest.mark.parametrize("solver", ["dense", "arpack"])
@pytest.mark.parametrize("kernel", ["linear", "rbf"])
def test_equals_reference(solver, kernel):
    """Same embedding (up to sign), eigenvalues and final ``G`` as the explicit reference,
    with both solvers and, for the linear kernel with n > d, the factored route. The
    reweighting is a fixed-point iteration whose map amplifies round-off a little each round
    (``G`` divides by row norms), hence ``1e-7`` of the scale after 5 rounds, far below the
    O(1) change one round makes."""
    X, _, sd = _data()
    tjm = TJM(n_components=3, mu=2.0, kernel=kernel, eigen_solver=solver, n_iter=5,
              tol=0).fit(X, sample_domain=sd)
    assert tjm.n_iter_ == 5
    Z, w, g = _reference(X, sd, 3, 2.0, kernel, tjm.sigma_, 5)
    np.testing.assert_allclose(_signed(tjm.transform(X), Z), Z, atol=1e-7 * np.abs(Z).max())
    np.testing.assert_allclose(tjm.eigenvalues_, w, rtol=1e-7)
    np.testing.assert_allclose(tjm.reg_diagonal_, g, rtol=1e-7)


def test_final_solve_is_the_pencil_of_its_g():
    """Whatever the number of rounds, the fitted components solve
    ``K H K W = (diag(G) + mu K L K) W diag(lambda)`` with the reported ``G``: the residual is
    round-off of the products (``n eps`` of their scale)."""
    X, _, sd = _data(seed=1)
    tjm = TJM(n_components=4, kernel="rbf", n_iter=3, tol=0).fit(X, sample_domain=sd)
    K = kernel_matrix(X, kernel="rbf", sigma=tjm.sigma_)
    n = len(X)
    H = np.eye(n) - 1.0 / n
    ell = mmd_vector(sd)
    W, lam = tjm.components_, tjm.eigenvalues_
    lhs = K @ H @ K @ W
    rhs = (np.diag(tjm.reg_diagonal_) + tjm.mu_ * np.outer(K @ ell, K @ ell)) @ W * lam
    assert np.abs(lhs - rhs).max() <= 1e3 * n * np.finfo(float).eps * np.abs(lhs).max()
    assert np.all(tjm.reg_diagonal_[sd < 0] == 1.0)
    assert np.all(tjm.reg_diagonal_[sd > 0] != 1.0)


def test_objective_decreases():
    """The alternation is the paper's half-quadratic scheme: each round does not increase
    ``mu tr(A^T K L K A) + ||A_s||_{2,1} + ||A_t||_F^2`` (to round-off), and the reweighting
    lowers it from TCA's value (the first entry)."""
    X, _, sd = _data(seed=2)
    for kernel in ("linear", "rbf"):
        obj = np.array(TJM(n_components=3, kernel=kernel, n_iter=8, tol=0)
                       .fit(X, sample_domain=sd).objective_)
        assert obj.shape == (9,)
        assert np.all(np.diff(obj) <= 1e-9 * obj[0])
        assert obj[-1] < 0.9 * obj[0]


def test_no_rounds_is_tca():
    """``n_iter=0``, or no target rows, or no source rows, is TCA: bit for bit on the kernel
    route (the same call), to round-off on the factored one (TJM's ``r x r`` pencil with
    ``G = I`` is TCA's written with ``P = U^T U = I`` explicitly)."""
    X, y, sd = _data()
    Zt = TCA(n_components=3, kernel="rbf").fit(X, y, sd).transform(X)
    np.testing.assert_array_equal(
        TJM(n_components=3, kernel="rbf", n_iter=0).fit(X, y, sd).transform(X), Zt)
    Zl = TCA(n_components=3, kernel="linear").fit(X, y, sd).transform(X)
    Zj = TJM(n_components=3, kernel="linear", n_iter=0).fit(X, y, sd).transform(X)
    np.testing.assert_allclose(_signed(Zj, Zl), Zl, atol=1e-10 * np.abs(Zl).max())
    src = sd > 0
    for rows in (src, ~src):
        only = TJM(n_components=3).fit(X[rows], y[rows], sd[rows])
        assert only.n_iter_ == 0 and np.all(only.reg_diagonal_ == 1.0)
        np.testing.assert_array_equal(
            only.transform(X), TCA(n_components=3).fit(X[rows], y[rows], sd[rows]).transform(X))


def test_early_stop():
    """``tol`` stops the rounds once the objective settles; ``tol=0`` runs them all."""
    X, _, sd = _data()
    early = TJM(n_components=3, n_iter=50, tol=1e-3).fit(X, sample_domain=sd)
    assert 1 <= early.n_iter_ < 50
    o = early.objective_
    assert abs(o[-2] - o[-1]) <= 1e-3 * abs(o[-2])
    assert TJM(n_components=3, n_iter=7, tol=0).fit(X, sample_domain=sd).n_iter_ == 7


def test_reweighting_drops_the_source_rows_unlike_the_target():
    """The point of the l2,1 term: source rows far from every target row get (near) zero rows
    of ``A``. Half of the source rows sit at the target, half far away: after the rounds the
    far half has much smaller row norms."""
    rng = np.random.default_rng(3)
    near = rng.normal(size=(30, 2)) + 3.0
    far = rng.normal(size=(30, 2)) - 3.0
    Xt = rng.normal(size=(40, 2)) + 3.0
    X = np.vstack([near, far, Xt])
    sd = np.r_[np.ones(60, int), -np.ones(40, int)]
    tjm = TJM(n_components=3, kernel="rbf", n_iter=10).fit(X, sample_domain=sd)
    r = tjm.row_norms_
    assert np.median(r[30:60]) < 0.1 * np.median(r[:30])


def test_skada_parity_where_skada_is_right():
    """skada 0.6's ``TransferJointMatchingAdapter`` stops after its first solve whatever
    ``max_iter`` and ``tol`` (its test ``|last - loss| / last < tol`` divides by the negative
    initial ``last = -2 tol``), so it is TCA's pencil in the paper's normalisation
    ``A^T K H K A = I`` with ``M / ||M||_F``: ``TJM(n_iter=0, scaling="constraint",
    mu = 1 / (lambda (1/n_s + 1/n_t)))`` with the Gaussian kernel of ``gamma = 1/d``.

    skada solves ``eigh(B, C)`` with ``C = K H K + 1e-10 I`` as the definite side; ``K H K`` is
    singular (``H 1 = 0``), so ``C`` has condition ``||K H K|| / 1e-10`` and its eigenvectors
    carry errors up to ``eps`` times that (measured 6e-6 of the scale; an explicit ``eigh`` of
    skada's own pencil differs from skada by as much). That bound, times 10, is the tolerance;
    the rows are spread (times 3) so that ``K H K``'s other eigenvalues are far from 0."""
    skada = pytest.importorskip("skada")
    X, _, sd = _data(n=40)
    X = 3.0 * X
    n_s = n_t = 40
    lam = 1e-2
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ref = skada.TransferJointMatchingAdapter(n_components=3, tradeoff=lam, kernel="rbf",
                                                 max_iter=20, tol=1e-6).fit(X, sample_domain=sd)
        Zs = ref.transform(X, sample_domain=sd, allow_source=True)
    ours = TJM(n_components=3, mu=1 / (lam * (1 / n_s + 1 / n_t)), kernel="rbf",
               bandwidth="n_features", scaling="constraint", n_iter=0).fit(X, sample_domain=sd)
    K = kernel_matrix(X, kernel="rbf", sigma=ours.sigma_)
    KHK = K @ (K - K.mean(axis=0))
    cond = np.linalg.norm(KHK, 2) / 1e-10
    atol = 10 * np.finfo(float).eps * cond * np.abs(Zs).max()
    assert atol < 1e-3 * np.abs(Zs).max()                 # still a test that can fail
    np.testing.assert_allclose(_signed(ours.transform(X), Zs), Zs, atol=atol)


def test_memory_shares_tca_kernel():
    """With a memory, TJM and TCA on the same rows compute one kernel; same results."""
    X, y, sd = _data()
    mem = FitMemory()
    TCA(n_components=2, memory=mem).fit(X, y, sd)
    before = len(mem)
    tjm = TJM(n_components=2, memory=mem, n_iter=3).fit(X, y, sd)
    assert len(mem) == before          # the kernel came from the memory, was not overwritten
    Z = tjm.transform(X)
    ref = TJM(n_components=2, n_iter=3).fit(X, y, sd)
    atol = kernel_map_atol(rbf_err(X, ref.X_fit_, ref.sigma_),
                           rbf_kernel(X, ref.X_fit_, sigma=ref.sigma_), ref.components_)
    np.testing.assert_allclose(Z, ref.transform(X), rtol=0, atol=atol)


def test_in_the_classifier():
    X, y, sd = _data()
    clf = DomainAdaptationClassifier(TJM(n_components=3, n_iter=3)).fit(X, y, sd)
    assert set(clf.predict(X[sd < 0])) <= {0, 1}


def test_truncate_refused_and_foreign_arrays():
    X, y, sd = _data()
    tjm = TJM(n_components=3, n_iter=1).fit(X, y, sd)
    with pytest.raises(NotImplementedError, match="fit TJM"):
        tjm.truncate(2)


def test_awkward_inputs():
    """One row per side, a constant X, NaN: a right answer or a ValueError naming the problem;
    more components than the data allow are clipped with a warning, as TCA."""
    X, y, sd = _data(n=5)
    with pytest.warns(UserWarning, match="n_components"):
        tjm = TJM(n_components=30, kernel="rbf", n_iter=2).fit(X, y, sd)
    assert tjm.n_components_ == 9 and np.all(np.isfinite(tjm.transform(X)))
    with pytest.raises(ValueError, match="TJM.*constant|TJM.*same point"):
        TJM(n_components=2).fit(np.ones((10, 3)), sample_domain=np.r_[[1] * 5, [-2] * 5])
    Xn = X.copy()
    Xn[0, 1] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        TJM(n_components=2).fit(Xn, y, sd)
    one = TJM(n_components=1, n_iter=3).fit(X[[0, 5]], sample_domain=np.array([1, -2]))
    assert np.all(np.isfinite(one.transform(X)))


def test_memory_refused_up_front(monkeypatch):
    X, y, sd = _data()
    n = len(X)
    monkeypatch.setattr(_resources, "MEMORY_BUDGET", 4 * n * n * 8)
    with pytest.raises(ValueError, match="TJM.fit on 120 rows.*RFTCA"):
        TJM(n_components=2, kernel="rbf").fit(X, y, sd)
