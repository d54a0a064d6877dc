"""SCA on asymmetric data (issue #23, row 2): unequal domain sizes, unbalanced classes.

With equal domain sizes the centring of the domain-mean embeddings is invisible (the mean of
the domain means is the grand mean, which the centred kernel sends to 0), so a reference test
on 60/60 domains cannot see it. These references are built from explicit domain means of the
centred features (linear kernel), not from ``mmd_matrix``.
"""

import numpy as np
import pytest
import scipy.linalg

from shiftlearn.adaptation import SCA, sca_problem
from shiftlearn.kernels import center_kernel


def _unequal(sizes=(60, 25), d=4, seed=0, n_classes=3, targets=1):
    """Domains of the given sizes; the last ``targets`` are unlabeled targets (y = -1),
    the others labeled with unbalanced classes."""
    rng = np.random.default_rng(seed)
    X, y, sd = [], [], []
    n_src = len(sizes) - targets
    for i, n in enumerate(sizes):
        X.append(rng.normal(size=(n, d)) + 0.8 * i + rng.normal(size=d))
        if i < n_src:
            y.append(rng.choice(n_classes, size=n, p=np.linspace(1, 3, n_classes) / (
                np.linspace(1, 3, n_classes).sum())))
            sd.append(np.full(n, i + 1))
        else:
            y.append(np.full(n, -1))
            sd.append(np.full(n, -(i + 1)))
    return np.vstack(X), np.concatenate(y), np.concatenate(sd)


def _domain_scatter_primal(X, sd):
    """(1/m) sum_d (mu_d - mu_bar)(mu_d - mu_bar)^T of the centred features (the paper's
    distributional variance with a linear kernel)."""
    Xc = X - X.mean(axis=0)
    ids = np.unique(sd)
    mus = np.array([Xc[sd == i].mean(axis=0) for i in ids])
    dev = mus - mus.mean(axis=0)
    return Xc, dev.T @ dev / len(ids)


@pytest.mark.parametrize("sizes,targets", [((60, 25), 1), ((50, 20, 35), 1), ((40, 15, 22), 0)])
def test_domain_scatter_factor_matches_explicit_means(sizes, targets):
    X, y, sd = _unequal(sizes, targets=targets)
    prob = sca_problem(X @ X.T, y, sd, beta=0.5, delta=1.0, eps=0.0)
    Xc, Sd = _domain_scatter_primal(X, sd)
    ref = Xc @ Sd @ Xc.T                       # K~ L K~ written with explicit features
    assert np.abs(ref).max() > 1e-2            # the domains do differ
    np.testing.assert_allclose(prob.U @ prob.U.T, ref, atol=1e-10 * np.abs(ref).max())


def test_domain_scatter_centring_is_visible_only_with_unequal_sizes():
    """The reason the 60/60 reference missed the bug: without centring the factor is right for
    equal sizes and wrong for 60/25."""
    for sizes, differs in (((30, 30), False), ((30, 12), True)):
        X, y, sd = _unequal(sizes)
        Kc = center_kernel(X @ X.T)
        ids = np.unique(sd)
        E = np.column_stack([(sd == i) / np.sum(sd == i) for i in ids])
        no_centring = (Kc @ E) / np.sqrt(len(ids))
        Xc, Sd = _domain_scatter_primal(X, sd)
        gap = np.abs(no_centring @ no_centring.T - Xc @ Sd @ Xc.T).max()
        assert (gap > 1e-6) == differs


def test_sca_fit_matches_primal_on_unequal_domains_and_unbalanced_classes():
    """The whole estimator (dense and Lanczos paths) against the primal d x d problem."""
    X, y, sd = _unequal((60, 25), d=5, seed=3)
    beta, delta, k = 0.4, 2.0, 3
    Xc, Sd = _domain_scatter_primal(X, sd)
    lab = y >= 0
    ns = lab.sum()
    mus = {c: Xc[lab & (y == c)].mean(axis=0) for c in np.unique(y[lab])}
    mbar = Xc[lab].mean(axis=0)
    Sb = sum((y[lab] == c).sum() * np.outer(m - mbar, m - mbar) for c, m in mus.items()) / ns
    Sw = sum((Xc[lab & (y == c)] - m).T @ (Xc[lab & (y == c)] - m)
             for c, m in mus.items()) / ns
    A = (1 - beta) * Xc.T @ Xc / len(X) + beta * Sb
    M = delta * Sd + Sw + np.eye(X.shape[1])
    w_p = scipy.linalg.eigh(A, M, eigvals_only=True)[::-1][:k]
    for solver in ("dense", "arpack"):
        sca = SCA(n_components=k, beta=beta, delta=delta, kernel="linear", eps=1e-10,
                  whiten=False, eigen_solver=solver).fit(X, y, sd)
        np.testing.assert_allclose(sca.eigenvalues_, w_p, rtol=1e-6)
