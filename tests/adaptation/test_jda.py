"""JDA (Long et al., ICCV 2013): TCA plus per-class MMD terms on pseudo-labels, iterated."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.linalg
from _tolerances import kernel_map_atol, rbf_err
from sklearn.neighbors import KNeighborsClassifier

from shiftlearn.adaptation import JDA, TCA, FitMemory, jda_vectors
from shiftlearn.compose import DomainAdaptationClassifier
from shiftlearn.kernels import kernel_matrix, mmd_vector, rbf_kernel, resolve_bandwidth


def _data(seed=0, n=60, shift=1.5):
    rng = np.random.default_rng(seed)
    Xs = rng.normal(size=(n, 4))
    ys = (Xs[:, 0] > 0).astype(int) + (Xs[:, 1] > 0.5)
    Xt = rng.normal(size=(n, 4)) + shift * np.r_[1.0, 0.0, 0.5, 0.0]
    X = np.vstack([Xs, Xt])
    y = np.r_[ys, -np.ones(n, int)]
    sd = np.r_[np.ones(n, int), -2 * np.ones(n, int)]
    return X, y, sd


def _reference(X, y, sd, k, mu, kernel, n_iter):
    """JDA written from the paper's formulas: the explicit MMD matrix ``M = sum_c M_c`` and
    pencil ``(K H K, I + mu K M K)``, ``scipy.linalg.eigh``, 1NN relabelling, ``n_iter``
    rounds (no early stop)."""
    sigma = None if kernel == "linear" else resolve_bandwidth("median", X, kernel=kernel)
    K = kernel_matrix(X, kernel=kernel, sigma=sigma)
    n = len(X)
    H = np.eye(n) - 1.0 / n
    src, tgt = (sd > 0) & (y != -1), sd < 0
    l0 = mmd_vector(sd)
    labels = None
    for it in range(n_iter + 1):
        M = np.outer(l0, l0)
        if labels is not None:
            for c in np.unique(y[src]):
                e = np.zeros(n)
                s = src & (y == c)
                t = np.zeros(n, bool)
                t[np.flatnonzero(tgt)[labels == c]] = True
                if t.any():
                    e[s], e[t] = 1 / s.sum(), -1 / t.sum()
                    M += np.outer(e, e)
        w, W = scipy.linalg.eigh(K @ H @ K, np.eye(n) + mu * K @ M @ K)
        W = W[:, ::-1][:, :k]
        Z = K @ W
        if it < n_iter:
            labels = KNeighborsClassifier(1).fit(Z[src], y[src]).predict(Z[tgt])
    return Z, labels


@pytest.mark.parametrize("solver", ["dense", "arpack"])
@pytest.mark.parametrize("kernel", ["linear", "rbf"])
def test_equals_reference(solver, kernel):
    """Same embedding (up to the sign of each component) and pseudo-labels as the explicit
    reference, with both solvers and with or without an early stop."""
    X, y, sd = _data()
    jda = JDA(n_components=3, mu=2.0, kernel=kernel, eigen_solver=solver, n_iter=4).fit(X, y, sd)
    Z, labels = _reference(X, y, sd, 3, 2.0, kernel, jda.n_iter_)
    Zj = jda.transform(X)
    signs = np.sign(np.sum(Zj * Z, axis=0))
    np.testing.assert_allclose(Zj * signs, Z, atol=1e-6 * np.abs(Z).max())
    np.testing.assert_array_equal(jda.target_labels_, labels)
    assert 1 <= jda.n_iter_ <= 4


def test_no_rounds_is_tca():
    """``n_iter=0`` (or no labeled source row, or no target row) is TCA exactly."""
    X, y, sd = _data()
    for kernel in ("linear", "rbf"):
        tca = TCA(n_components=3, kernel=kernel).fit(X, y, sd).transform(X)
        np.testing.assert_array_equal(
            JDA(n_components=3, kernel=kernel, n_iter=0).fit(X, y, sd).transform(X), tca)
    unlabeled = np.full_like(y, -1)
    np.testing.assert_array_equal(
        JDA(n_components=3).fit(X, unlabeled, sd).transform(X),
        TCA(n_components=3, kernel="linear").fit(X, unlabeled, sd).transform(X))
    src = sd > 0
    only_src = JDA(n_components=3).fit(X[src], y[src], sd[src])
    assert only_src.n_iter_ == 0 and only_src.target_labels_.size == 0


def test_early_stop_is_the_same_fit():
    """Once the pseudo-labels stop changing, more rounds change nothing. (They may also cycle,
    as on most seeds of these data; then every round runs.)"""
    X, y, sd = _data(shift=1.0)
    a = JDA(n_components=3, kernel="rbf", n_iter=50).fit(X, y, sd)
    assert a.n_iter_ < 50
    # the stop is a fixed point: 1NN in the final embedding gives back the labels it used
    Z = a.transform(X)
    src, tgt = sd > 0, sd < 0
    np.testing.assert_array_equal(
        KNeighborsClassifier(1).fit(Z[src], y[src]).predict(Z[tgt]), a.target_labels_)
    # and the reference, run one round more than the fit, lands on the same embedding
    Z_ref, labels = _reference(X, y, sd, 3, 1.0, "rbf", a.n_iter_ + 1)
    signs = np.sign(np.sum(Z * Z_ref, axis=0))
    np.testing.assert_allclose(Z * signs, Z_ref, atol=1e-6 * np.abs(Z_ref).max())
    np.testing.assert_array_equal(labels, a.target_labels_)


def test_vectors_and_mmd():
    """The marginal column is TCA's, so ``l0^T K l0`` is the biased MMD² (``mmd_``); a class with
    no predicted target row has no column."""
    X, y, sd = _data()
    jda = JDA(n_components=2, kernel="rbf").fit(X, y, sd)
    K = kernel_matrix(X, kernel="rbf", sigma=jda.sigma_)
    l0 = mmd_vector(sd)
    assert jda.mmd_ == pytest.approx(l0 @ K @ l0)
    labels = np.zeros((sd < 0).sum(), int)          # every target row predicted class 0
    E = jda_vectors(sd, y, list(labels))            # a list is read as an array
    assert E.shape == (len(y), 2)                   # classes 1 and 2 have no target row
    src0 = (sd > 0) & (y == 0)
    np.testing.assert_allclose(E[src0, 1], 1 / src0.sum())
    np.testing.assert_allclose(E[sd < 0, 1], -1 / (sd < 0).sum())
    assert not E[(sd > 0) & (y != 0), 1].any()


def test_default_is_not_fooled_on_the_toy():
    """The default (linear) JDA is not the consistent wrong class map the Gaussian one finds on
    the SCA toy, which circular validation scores near 1: with defaults, ``auto``'s circular
    choice on the toy must not be JDA, and the Gaussian JDA shows the trap."""
    from shiftlearn.datasets import make_sca_toy
    from shiftlearn.model_selection import AdaptationSelector, CircularValidation

    X, y, sd, yt = make_sca_toy(n_per_cluster=50, random_state=0, return_target_labels=True)
    t = sd < 0
    trap = AdaptationSelector(methods=["JDA"], grids={"JDA": {"kernel": ["rbf"], "mu": [10.0]}},
                              scoring=CircularValidation()).fit(X, y, sd)
    assert trap.choice_ == "JDA" and trap.summary_[1]["score"] > 0.9     # circular: 0.95
    assert trap.score(X[t], yt) < 0.2                                    # target: 9%
    sel = AdaptationSelector(methods=["JDA", "CORAL"], grids={},
                             scoring=CircularValidation()).fit(X, y, sd)
    assert sel.choice_ == "CORAL" and sel.score(X[t], yt) > 0.9


def test_truncate_refused():
    X, y, sd = _data()
    jda = JDA(n_components=3).fit(X, y, sd)
    with pytest.raises(NotImplementedError, match="fit JDA"):
        jda.truncate(2)


def test_memory_shares_tca_kernel():
    """With a memory, JDA and TCA on the same rows compute one kernel; same results."""
    X, y, sd = _data()
    mem = FitMemory()
    TCA(n_components=2, memory=mem).fit(X, y, sd)
    before = len(mem)
    Z = JDA(n_components=2, kernel="rbf", memory=mem).fit(X, y, sd).transform(X)
    assert len(mem) == before + 1      # only the test kernel of transform is new
    # the same components; transform's kernel comes in one block from the memory, so the
    # Gaussian kernel's round-off carried through |W| plus the product's (~2e-12 against
    # entries ~7; a kernel of other rows or another bandwidth is off by O(1))
    ref = JDA(n_components=2, kernel="rbf").fit(X, y, sd)
    atol = kernel_map_atol(rbf_err(X, ref.X_fit_, ref.sigma_),
                           rbf_kernel(X, ref.X_fit_, sigma=ref.sigma_), ref.components_)
    np.testing.assert_allclose(Z, ref.transform(X), rtol=0, atol=atol)


def test_in_the_classifier_and_string_labels():
    X, y, sd = _data()
    names = np.array(["a", "b", "c"])[np.where(y < 0, 0, y)].astype(object)
    names[y < 0] = ""
    clf = DomainAdaptationClassifier(JDA(n_components=3)).fit(X, names, sd)
    pred = clf.predict(X[sd < 0])
    assert set(pred) <= {"a", "b", "c"}
    # the same fit as on the integer labels
    direct = JDA(n_components=3).fit(X, y, sd)
    np.testing.assert_array_equal(clf.adapter_.target_labels_,
                                  np.array(["a", "b", "c"])[direct.target_labels_])
    np.testing.assert_array_equal(pred, np.array(["a", "b", "c"])[
        KNeighborsClassifier(1).fit(direct.transform(X)[sd > 0], y[sd > 0])
        .predict(direct.transform(X[sd < 0]))])


def test_continuous_labels_refused():
    X, y, sd = _data()
    yc = np.where(y < 0, np.nan, y + 0.37)
    with pytest.raises(ValueError, match="JDA needs class labels.*continuous.*use TCA"):
        JDA(n_components=2).fit(X, yc, sd)
