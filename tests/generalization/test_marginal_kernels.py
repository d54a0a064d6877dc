"""Marginal transfer (issue #19): the Nyström solver and the kernel families on embeddings.

* Nyström with every row a landmark is the exact solver (decision values within 1e-6 at a
  tight tolerance); ``n_landmarks`` as a count or a fraction, both sides of its clipping.
* ``k_P = tau + (1 - tau) K(Psi, Psi')`` with ``K`` Gaussian (eq. 11), exponential or
  polynomial (eq. 12), normalised (§6.1) or the indicator (§5.2), against their formulas and
  the paper's special cases: the normalised exponential kernel is the Gaussian one, ``tau = 1``
  is pooling, ``tau = 0`` with the indicator is one independent machine per task.
"""

import warnings

import numpy as np
import pytest
from _tolerances import EPS, mean_atol, rbf_err
from sklearn.exceptions import ConvergenceWarning

from shiftlearn.datasets import make_rotated_ellipses
from shiftlearn.generalization import (
    MarginalTransferClassifier,
    MarginalTransferRegressor,
    PoolingClassifier,
    PoolingRegressor,
)
from shiftlearn.generalization._embedding import (
    exact_embedding_gram,
    task_kernel,
    task_kernel_sigma,
)

TIGHT = dict(tol=1e-8, max_iter=100_000)


@pytest.fixture(scope="module")
def tasks():
    X, y, sd = make_rotated_ellipses(12, 16, random_state=0)
    Xt, yt, sdt = make_rotated_ellipses(3, 100, first_domain=-100, random_state=1)
    return X, y, sd, Xt, yt, sdt


# ------------------------------------------------------------------------------ Nyström
@pytest.mark.parametrize("Est", [MarginalTransferClassifier, MarginalTransferRegressor])
def test_nystroem_with_every_row_a_landmark_is_the_exact_solver(tasks, Est):
    X, y, sd, Xt, _, sdt = tasks
    y = y if Est is MarginalTransferClassifier else X[:, 0] * X[:, 1]
    kw = dict(C=10.0, bandwidth_x=0.3, random_state=0, **TIGHT)
    exact = Est(solver="exact", **kw).fit(X, y, sd)
    every = Est(solver="nystroem", n_landmarks=1.0, **kw).fit(X, y, sd)
    as_count = Est(solver="nystroem", n_landmarks=10**6, **kw).fit(X, y, sd)
    f = exact.predict(Xt, sdt) if Est is MarginalTransferRegressor else \
        exact.decision_function(Xt, sdt)
    for est in (every, as_count):
        g = est.predict(Xt, sdt) if Est is MarginalTransferRegressor else \
            est.decision_function(Xt, sdt)
        assert est.solver_ == "nystroem"
        np.testing.assert_allclose(g, f, atol=1e-6, rtol=0)
    # a tenth of the rows: an approximation (other values), the same function nearly
    tenth = Est(solver="nystroem", n_landmarks=0.1, **kw).fit(X, y, sd)
    g = tenth.predict(Xt, sdt) if Est is MarginalTransferRegressor else \
        tenth.decision_function(Xt, sdt)
    assert tenth.support_vectors_.shape[0] <= 20 and np.max(np.abs(g - f)) > 1e-3
    assert np.corrcoef(g, f)[0, 1] > 0.7


@pytest.mark.parametrize("kernel_emb", ["rbf", "laplacian"])
def test_nystroem_embeds_tasks_through_its_landmarks(tasks, monkeypatch, kernel_emb):
    """The Nyström solver's embeddings are task means of the landmarks' features of k': the
    Gram of the training embeddings approximates eq. (30)'s exact one, and neither fit nor
    predict computes an M x M (or test x M) kernel (the exact Gram is never called)."""
    from shiftlearn.generalization import _marginal_base
    from shiftlearn.generalization._embedding import exact_embedding_gram

    X, y, sd, Xt, _, sdt = tasks
    ref = MarginalTransferClassifier(solver="exact", bandwidth_x=0.3, kernel_emb=kernel_emb,
                                     random_state=0).fit(X, y, sd)
    task = np.unique(sd, return_inverse=True)[1]
    G_exact = exact_embedding_gram(X, task, ref.n_tasks_, kernel=kernel_emb,
                                   sigma=ref.sigma_emb_)
    p_ref = ref.predict(Xt, sdt)

    def refuse(*a, **k):
        raise AssertionError("the Nystroem solver computed the exact embedding Gram")

    monkeypatch.setattr(_marginal_base, "exact_embedding_gram", refuse)
    if kernel_emb == "laplacian":
        # the Laplacian's spectrum decays slowly: with every row a landmark the embeddings are
        # exact up to the factor's pivot tolerance, and the kernel is seen to reach them
        full = MarginalTransferClassifier(solver="nystroem", n_landmarks=1.0, bandwidth_x=0.3,
                                          kernel_emb=kernel_emb, random_state=0).fit(X, y, sd)
        Z = full.emb_features_
        np.testing.assert_allclose(Z @ Z.T, G_exact, atol=1e-6 * np.max(G_exact))
        return
    est = MarginalTransferClassifier(solver="nystroem", n_landmarks=0.25, bandwidth_x=0.3,
                                     kernel_emb=kernel_emb, random_state=0).fit(X, y, sd)
    Z = est.emb_features_
    assert Z.shape[0] == est.n_tasks_ and Z.shape[1] <= 48
    assert est.emb_landmarks_.shape[0] == est.emb_chol_.shape[0] == Z.shape[1]
    np.testing.assert_allclose(Z @ Z.T, G_exact, atol=1e-3 * np.max(G_exact))
    assert np.max(np.abs(Z @ Z.T - G_exact)) > 1e-12          # an approximation, not a copy
    assert np.mean(est.predict(Xt, sdt) == p_ref) > 0.9
    with pytest.raises(AssertionError, match="exact embedding Gram"):
        ref.predict(Xt, sdt)                                  # the exact model needs it


def test_n_landmarks_count_fraction_and_clipping(tasks):
    X, y, sd, *_ = tasks                                   # M = 192 rows
    M = X.shape[0]

    def landmarks(m):
        est = MarginalTransferClassifier(solver="nystroem", n_landmarks=m, random_state=0)
        return est._n_landmarks(M), est.fit(X, y, sd)

    for m, want in ((1, 1), (M - 1, M - 1), (M, M), (M + 1, M), (0.5, 96), (0.501, 97),
                    (1.0, M), (1e-9, 1)):
        got, est = landmarks(m)
        assert got == want, (m, got)
        assert est.support_vectors_.shape[0] <= want          # pivots of the landmarks
    # the landmarks are training rows, drawn from the seed
    a = MarginalTransferClassifier(solver="nystroem", n_landmarks=30, random_state=3).fit(X, y, sd)
    b = MarginalTransferClassifier(solver="nystroem", n_landmarks=30, random_state=3).fit(X, y, sd)
    assert np.array_equal(a.support_vectors_, b.support_vectors_)
    rows = {tuple(r) for r in X}
    assert all(tuple(r) in rows for r in a.support_vectors_)
    from shiftlearn._constraints import InvalidParameterError
    for bad in (0, -3, 0.0, 1.5, "all"):
        with pytest.raises(InvalidParameterError, match="'n_landmarks' parameter"):
            MarginalTransferClassifier(n_landmarks=bad).fit(X, y, sd)


@pytest.mark.parametrize("Est", [PoolingClassifier, PoolingRegressor])
def test_nystroem_pooling_and_a_linear_kernel_x(tasks, Est):
    """Nyström takes any kernel on x: a linear kernel_x has rank d, so two landmarks carry
    it, and the result is the exact solver's (whose support vectors are the rows with a
    nonzero dual coefficient)."""
    X, y, sd, Xt, _, sdt = tasks
    y = y if Est is PoolingClassifier else X[:, 0] - 2 * X[:, 1]
    kw = dict(kernel_x="linear", C=1.0, random_state=0, **TIGHT)
    ny = Est(solver="nystroem", n_landmarks=50, **kw).fit(X, y, sd)
    ex = Est(solver="exact", **kw).fit(X, y, sd)
    assert ny.support_vectors_.shape[0] == 2
    assert ex.support_vectors_.shape[0] == ex.dual_coef_.shape[0] > 2
    assert np.all(np.any(ex.dual_coef_ != 0.0, axis=1))
    np.testing.assert_allclose(ny.predict(Xt, sdt), ex.predict(Xt, sdt), atol=1e-6)


# ----------------------------------------------------------------- kernels on embeddings
def _embeddings(seed=0, n=(4, 3)):
    rng = np.random.default_rng(seed)
    A, B = rng.normal(size=(n[0], 3)) + 0.4, rng.normal(size=(n[1], 3)) - 0.2
    return A, B, A @ B.T, (A**2).sum(1), (B**2).sum(1)


def _kind_rtol(kind, G, da, db, s, deg):
    """Relative round-off of a task kernel against its formula on the same G (no BLAS
    beyond G itself): the Gaussian's d_a + d_b - 2 G cancels to c eps (d_a + d_b + 2|G|)
    (the reference takes differences), passed on through exp as that over 2 s^2; exp(G / s^2)
    carries eps (1 + |G| / s^2); (1 + G / s^2)^deg deg eps (1 + |G| / s^2) / |1 + G / s^2|.
    Another sigma, degree or kind is off by O(1)."""
    if kind == "gaussian":
        return 4 * EPS * (np.max(da[:, None] + db[None, :] + 2 * np.abs(G)) / (2 * s**2) + 1)
    if kind == "exponential":
        return 4 * EPS * (np.max(np.abs(G)) / s**2 + 1)
    return 4 * deg * EPS * np.max((1 + np.abs(G) / s**2) / np.abs(1 + G / s**2))


def test_task_kernels_match_their_formulas():
    A, B, G, da, db = _embeddings()
    s, deg = 1.7, 3
    D2 = ((A[:, None, :] - B[None, :, :]) ** 2).sum(-1)
    ref = {
        "gaussian": np.exp(-D2 / (2 * s**2)),
        "exponential": np.exp(G / s**2),
        "polynomial": (1 + G / s**2) ** deg,
    }
    for kind, want in ref.items():
        got = task_kernel(G, da, db, kind=kind, sigma=s, degree=deg)
        rtol = _kind_rtol(kind, G, da, db, s, deg)
        np.testing.assert_allclose(got, want, rtol=rtol)
        norm = want / np.sqrt(np.outer(
            task_kernel(np.diag(da), da, da, kind=kind, sigma=s, degree=deg).diagonal(),
            task_kernel(np.diag(db), db, db, kind=kind, sigma=s, degree=deg).diagonal()))
        got_n = task_kernel(G, da, db, kind=kind, sigma=s, degree=deg, normalize=True)
        # three kernel values (the entry and two diagonals, under a root) and a division
        np.testing.assert_allclose(got_n, norm, rtol=3 * rtol + 4 * EPS)
        for tau in (0.0, 0.25, 1.0):
            np.testing.assert_allclose(
                task_kernel(G, da, db, kind=kind, sigma=s, degree=deg, tau=tau),
                tau + (1 - tau) * want, rtol=rtol + 4 * EPS)
    # normalised exponential = Gaussian (§6.1), computed from the distances
    np.testing.assert_allclose(task_kernel(G, da, db, kind="exponential", sigma=s,
                                           normalize=True), ref["gaussian"],
                               rtol=_kind_rtol("gaussian", G, da, db, s, deg))
    same = np.zeros((4, 3), dtype=bool)
    same[1, 2] = True
    np.testing.assert_array_equal(
        task_kernel(G, da, db, kind="indicator", same=same, tau=0.3),
        np.where(same, 1.0, 0.3))


def test_task_kernel_overflow_and_bandwidth_rules():
    A, B, G, da, db = _embeddings()
    with pytest.raises(ValueError, match="exponential' overflows.*normalize_p=True"):
        task_kernel(G * 1e3, da, db, kind="exponential", sigma=0.1)
    with pytest.raises(ValueError, match="polynomial' overflows.*degree_p"):
        task_kernel(G * 1e100, da, db, kind="polynomial", sigma=1e-100, degree=9)
    # the edge: exp(700) is finite, 700 + 1e-9 is refused
    np.isfinite(task_kernel(np.array([[700.0]]), np.ones(1), np.ones(1), kind="exponential"))
    with pytest.raises(ValueError, match="overflows"):
        task_kernel(np.array([[700.0 + 1e-9]]), np.ones(1), np.ones(1), kind="exponential")
    # median rules: distances for the Gaussian, |inner products| for eq. (12)
    Gs = np.array([[4.0, -1.0, 9.0, 0.5], [-1.0, 2.0, 16.0, 1.0], [9.0, 16.0, 9.0, 4.0],
                   [0.5, 1.0, 4.0, 3.0]])
    assert task_kernel_sigma(Gs, None, "exponential") == np.sqrt(np.median([1, 9, .5, 16, 1, 4]))
    assert task_kernel_sigma(Gs, None, "polynomial") == task_kernel_sigma(Gs, None,
                                                                          "exponential")
    assert task_kernel_sigma(np.array([[0.25]]), None, "exponential") == 0.5   # one task
    assert task_kernel_sigma(np.zeros((3, 3)), None, "exponential") == 1.0
    assert task_kernel_sigma(Gs, None, "indicator") == 1.0


@pytest.mark.parametrize("solver", ["exact", "nystroem", "rf"])
def test_normalised_exponential_is_the_gaussian_and_tau_one_is_pooling(tasks, solver):
    X, y, sd, Xt, _, sdt = tasks
    kw = dict(C=10.0, bandwidth_x=0.3, solver=solver, n_landmarks=60, random_state=0)
    gauss = MarginalTransferClassifier(**kw).fit(X, y, sd)
    nexp = MarginalTransferClassifier(kernel_p="exponential", normalize_p=True, **kw).fit(
        X, y, sd)
    assert nexp.sigma_p_ == gauss.sigma_p_
    np.testing.assert_array_equal(nexp.decision_function(Xt, sdt),
                                  gauss.decision_function(Xt, sdt))
    tau1 = MarginalTransferClassifier(tau=1.0, **kw).fit(X, y, sd)
    pool = PoolingClassifier(**{k: v for k, v in kw.items()}).fit(X, y, sd)
    assert tau1.sigma_p_ is None and tau1.sigma_emb_ is None
    np.testing.assert_allclose(tau1.decision_function(Xt, sdt), pool.decision_function(Xt, sdt),
                               atol=1e-12)


def test_sigma_p_rule_of_the_inner_product_kernels(tasks):
    X, y, sd, *_ = tasks
    est = MarginalTransferClassifier(kernel_p="polynomial", solver="exact",
                                     random_state=0).fit(X, y, sd)
    task = np.repeat(np.arange(12), 16)
    G = exact_embedding_gram(X, task, 12, sigma=est.sigma_emb_)
    want = np.sqrt(np.median(np.abs(G[np.triu_indices(12, k=1)])))
    # the Gram of task means may be formed in other chunks: the Gaussian's round-off plus
    # a mean over 16 x 16 entries, relative to the median |G| (under a root: half of it)
    atol_G = np.max(rbf_err(X, X, est.sigma_emb_)) + 4 * 16 * 16 * EPS
    rel = atol_G / want**2
    assert est.sigma_p_ == pytest.approx(want, rel=rel)
    half = MarginalTransferClassifier(kernel_p="polynomial", bandwidth_p="0.5*median",
                                      solver="exact", random_state=0).fit(X, y, sd)
    assert half.sigma_p_ == pytest.approx(want / 2, rel=rel)


def test_indicator_with_tau_zero_is_one_machine_per_task():
    """§5.2: k_P = 1 on the same task and 0 otherwise decouples the fit into one kernel
    machine per task (equal task sizes: the costs C M / (N n) = C are the single task's)."""
    X, y, sd = make_rotated_ellipses(4, 24, random_state=0)
    kw = dict(C=3.0, bandwidth_x=0.4, solver="exact", random_state=0, **TIGHT)
    joint = MarginalTransferClassifier(kernel_p="indicator", **kw).fit(X, y, sd)
    assert joint.sigma_p_ is None and joint.sigma_emb_ is None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)          # "was a training task"
        for t in np.unique(sd):
            rows = sd == t
            alone = PoolingClassifier(**kw).fit(X[rows], y[rows], sd[rows])
            np.testing.assert_allclose(joint.decision_function(X[rows], sd[rows]),
                                       alone.decision_function(X[rows], sd[rows]), atol=1e-6)
    # a new task shares nothing with the training tasks: decision 0, said in a warning
    with pytest.warns(UserWarning, match=r"kernel_p='indicator' with tau=0.*test task\(s\) "
                                         r"\[-5\].*decision values are 0"):
        f = joint.decision_function(X[:24], np.full(24, -5))
    assert np.all(f == 0)
    # with tau > 0 a new task gets tau times the shared part: not zero
    mt = MarginalTransferClassifier(kernel_p="indicator", tau=0.5, **kw).fit(X, y, sd)
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        assert np.all(mt.decision_function(X[:24], np.full(24, -5)) != 0)


@pytest.mark.parametrize("params, what", [
    ({"kernel_p": "polynomial"}, "kernel_p='polynomial'"),
    ({"kernel_p": "exponential"}, "normalize_p=True"),
    ({"kernel_p": "indicator"}, "kernel_p='indicator'"),
    ({"tau": 0.3}, "tau=0.3"),
    ({"kernel_x": "linear"}, "kernel_x='linear'"),
])
def test_rf_refuses_what_it_cannot_approximate_and_names_the_alternatives(tasks, params, what):
    X, y, sd, *_ = tasks
    with pytest.raises(ValueError, match=f"solver='rf'.*{what}.*use solver='nystroem'"):
        MarginalTransferClassifier(solver="rf", **params).fit(X, y, sd)
    # valid: the same configuration with the Nyström and exact solvers
    for solver in ("nystroem", "exact"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            est = MarginalTransferClassifier(solver=solver, n_landmarks=40, random_state=0,
                                             **params).fit(X, y, sd)
        assert est.solver_ == solver


# ------------------------------------------------- Laplacian and Cauchy kernels on x (#20)
@pytest.mark.parametrize("kernel", ["rbf", "laplacian", "cauchy"])
def test_rf_product_features_converge_to_the_exact_product_kernel(kernel):
    """Second stage of the RF solver for each kernel_x: frequencies of k_X's law on x / sigma_x
    beside N(0, I) on Z_P / sigma_P estimate k_P(Z_P, Z_P') k_X(x, x'), the error falling as
    1/sqrt(Q) (x16 frequencies: /4, within the spread of 6 seeds)."""
    from shiftlearn.generalization._embedding import rff_product_features
    from shiftlearn.kernels import kernel_matrix

    X, y, sd = make_rotated_ellipses(5, 12, random_state=0)
    task = np.repeat(np.arange(5), 12)
    errs = {}
    for Q in (250, 4000):
        e = []
        for seed in range(6):
            est = MarginalTransferClassifier(solver="rf", kernel_x=kernel, kernel_emb=kernel,
                                             n_features=Q, n_features_emb=50,
                                             random_state=seed).fit(X, y, sd)
            D2 = ((est.ZP_[:, None] - est.ZP_[None]) ** 2).sum(-1)
            KP = np.exp(-D2 / (2 * est.sigma_p_**2))
            exact = KP[task][:, task] * kernel_matrix(X, kernel=kernel, sigma=est.sigma_x_)
            Z = rff_product_features(X, task, est.ZP_, est.V_x_, est.V_p_,
                                     sigma_x=est.sigma_x_, sigma_p=est.sigma_p_)
            e.append(np.sqrt(np.mean((Z @ Z.T - exact) ** 2)))
        errs[Q] = np.mean(e)
    assert 2.5 < errs[250] / errs[4000] < 6.5, errs
    assert errs[4000] < 0.02, errs


@pytest.mark.parametrize("kernel", ["laplacian", "cauchy"])
def test_laplacian_and_cauchy_kernel_x_on_every_solver(kernel):
    X, y, sd = make_rotated_ellipses(32, 24, random_state=0)
    Xt, yt, sdt = make_rotated_ellipses(4, 300, first_domain=-100, random_state=1)
    from shiftlearn.kernels import median_heuristic
    kw = dict(C=10.0, kernel_x=kernel, random_state=0)
    ex = MarginalTransferClassifier(solver="exact", **kw).fit(X, y, sd)
    assert ex.sigma_x_ == pytest.approx(median_heuristic(X, kernel=kernel))
    assert ex.sigma_x_ != pytest.approx(median_heuristic(X))          # the kernel's own rule
    ny = MarginalTransferClassifier(solver="nystroem", n_landmarks=1.0, **kw, **TIGHT)
    ex_tight = MarginalTransferClassifier(solver="exact", **kw, **TIGHT).fit(X, y, sd)
    np.testing.assert_allclose(ny.fit(X, y, sd).decision_function(Xt, sdt),
                               ex_tight.decision_function(Xt, sdt), atol=1e-6)
    rf = MarginalTransferClassifier(solver="rf", n_features=2000, **kw).fit(X, y, sd)
    p_ex, p_rf = ex.predict(Xt, sdt), rf.predict(Xt, sdt)
    assert np.mean(p_ex == p_rf) > 0.9
    pool = PoolingClassifier(solver="exact", **kw).fit(X, y, sd)
    err = {n: np.mean(m.predict(Xt, sdt) != yt) for n, m in
           (("exact", ex), ("rf", rf), ("pool", pool))}
    assert err["exact"] < 0.2 and err["rf"] < 0.2 and err["pool"] > 0.25, err
    # orthogonal random features need the Gaussian law: refused before any work
    with pytest.raises(ValueError, match=f"sampling='orthogonal' applies to the rbf kernel "
                                         f"only.*kernel_x='{kernel}'"):
        MarginalTransferClassifier(solver="rf", sampling="orthogonal", **kw).fit(X, y, sd)
    with pytest.raises(ValueError, match=f"kernel_emb='{kernel}'"):
        MarginalTransferClassifier(solver="rf", sampling="orthogonal", kernel_emb=kernel,
                                   random_state=0).fit(X, y, sd)
    MarginalTransferClassifier(solver="exact", sampling="orthogonal", **kw).fit(X, y, sd)


def test_landmark_embeddings_are_built_in_chunks(monkeypatch):
    """The test embeddings of the Nyström solver are accumulated over row chunks (a 64 MB
    (r, rows) block at a time): the same values with one-row chunks."""
    from shiftlearn.generalization import _embedding
    from shiftlearn.generalization._solvers import landmark_factor
    from shiftlearn.kernels import domain_mean_matrix, rbf_kernel

    rng = np.random.default_rng(0)
    X, task = rng.normal(size=(60, 2)), rng.integers(0, 4, 60)
    fac = landmark_factor(rbf_kernel(X, X[:10], sigma=0.7), np.arange(10))
    L = X[fac.pivots]
    whole = _embedding.landmark_embeddings(X, task, 5, L, fac.chol, sigma=0.7)
    monkeypatch.setattr(_embedding, "GRAM_CHUNK_BYTES", 8 * fac.chol.shape[0])  # one row
    # features K R^-T in other chunks: the kernel's round-off through |R^-T|, the triangular
    # solve's backward error gamma_m |Phi| |R^T| |R^-T|, then task means (a row of another
    # task, or an unwritten chunk, is off by ~0.1)
    Ri = np.abs(np.linalg.inv(fac.chol)).T
    m = fac.chol.shape[0]
    dPhi = rbf_err(X, L, 0.7) @ Ri + 4 * m * EPS * (np.abs(fac.features) @ np.abs(fac.chol).T
                                                     @ Ri)
    atol = mean_atol(fac.features) + np.max(dPhi)      # any task's mean: at most these
    np.testing.assert_allclose(_embedding.landmark_embeddings(X, task, 5, L, fac.chol,
                                                              sigma=0.7), whole, rtol=0,
                               atol=atol)
    # the training rows' features averaged per task (task 4 has no rows: zeros)
    np.testing.assert_allclose(whole, domain_mean_matrix(task, 5)[0].T @ fac.features,
                               rtol=0, atol=atol)
    assert np.all(whole[4] == 0.0)
