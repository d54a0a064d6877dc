"""Transfer Joint Matching (Long, Wang, Ding, Sun and Yu, CVPR 2014), exact kernel version.

TCA (:mod:`shiftlearn.adaptation._tca`) matches the marginal distributions with every row
weighted alike. TJM replaces TCA's regulariser ``tr(A^T A)`` by
``||A_s||_{2,1} + ||A_t||_F^2``: the rows of ``A`` that belong to source rows are pushed to zero
as whole rows (the source rows least like the target drop out of the embedding, an instance
reweighting), the target rows keep a ridge. The l2,1 norm is handled as in the paper, by
alternating the generalised eigenproblem with the diagonal ``G`` of its half-quadratic bound
(``G_ii = 1 / (2 ||a^i||)`` on the source rows, 1 on the target rows)::

    K H K w = lambda (G + mu K L K) w

which is TCA's pencil with ``G`` for the identity, so
:func:`~shiftlearn.adaptation.tca_components` solves it (``reg_diagonal``).
"""

from __future__ import annotations

from numbers import Integral, Real

import numpy as np

from .._constraints import Interval
from .._linalg import leading_eigh
from ..kernels import mmd_vector
from ._tca import TCA, tca_components

__all__ = ["TJM", "tjm_components_factored"]

#: row norms of ``A`` are floored at this times the largest before ``G = 1 / (2 ||a^i||)``
#: (a source row whose norm reached zero keeps a finite, very large weight)
_NORM_FLOOR = 1e-10


def tjm_components_factored(U: np.ndarray, sv: np.ndarray, ell: np.ndarray, g: np.ndarray,
                            n_components: int, mu: float = 1.0
                            ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """TJM's pencil ``K H K w = lambda (diag(g) + mu K l l^T K) w`` for the linear kernel
    ``K = X X^T`` given by the thin SVD ``X = U diag(sv) V^T``, without forming ``K``.

    For a nonzero eigenvalue ``diag(g) w`` lies in the range of ``K``, so
    ``w = diag(g)^{-1} U c``; with ``S = diag(sv^2)``, ``H' = U^T H U``, ``q = S U^T ell`` and
    ``P = U^T diag(g)^{-1} U`` the problem is the ``r x r`` pencil
    ``S H' S e = lambda (P^{-1} + mu q q^T) e`` with ``e = P c``, ``w = diag(g)^{-1} U P^{-1} e``
    and ``K w = U S e``; ``w^T (diag(g) + mu K L K) w = e^T (P^{-1} + mu q q^T) e``, so the
    normalisation is :func:`~shiftlearn.adaptation.tca_components`'. ``g = 1`` is
    :func:`~shiftlearn.adaptation.tca_components_factored`. ``O(n r^2 + r^3)``.

    Returns ``(eigenvalues, W, K W)``.
    """
    n, r = U.shape
    s2 = sv ** 2
    one = U.sum(axis=0)
    A = -np.outer(one, one) / n
    A.flat[:: r + 1] += 1.0
    A = s2[:, None] * A * s2[None, :]                    # S H' S
    P = (U / g[:, None]).T @ U                           # U^T diag(g)^{-1} U
    Pinv = np.linalg.inv((P + P.T) / 2.0)
    Pinv = (Pinv + Pinv.T) / 2.0
    q = s2 * (U.T @ ell)
    B = Pinv + mu * np.outer(q, q)
    w, E = leading_eigh(A, n_components, B, overwrite=True, owner="TJM")
    W = (U @ (Pinv @ E)) / g[:, None]
    return w, W, U @ (s2[:, None] * E)


class TJM(TCA):
    """Transfer Joint Matching (Long et al., CVPR 2014): TCA's marginal MMD with an l2,1
    row-sparsity on the source part of the transformation (instance reweighting), solved by
    alternating the eigenproblem and the reweighting matrix.

    Learns ``k`` components ``W`` (n_train × k) as TCA does; each round solves TCA's pencil
    with the regulariser's identity replaced by the diagonal ``G`` (``1 / (2 ||a^i||)`` on the
    source rows, from the previous round's components ``A`` in the paper's normalisation
    ``A^T K H K A = I``; 1 on the target rows). Embedding of any row ``x``:
    ``z(x) = [k(x, x_1), ..., k(x, x_n)] W`` (as TCA).

    Parameters
    ----------
    n_components : int, default=30
        Number of components ``k``.
    mu : float, default=1.0
        Weight of the MMD term, as TCA's ``mu``. The paper's trade-off ``lambda`` (on the
        regulariser) is ``1 / mu`` up to the scale of its MMD matrix (its code and skada's
        divide ``M`` by its Frobenius norm ``1/n_s + 1/n_t``: pass
        ``mu = 1 / (lambda (1/n_s + 1/n_t))`` for their value).
    kernel, bandwidth, scaling, eigen_solver : as :class:`~shiftlearn.adaptation.TCA`.
    n_iter : int, default=10
        Reweighting rounds after the first (``G = I``, i.e. TCA) solve, so at most
        ``n_iter + 1`` solves (the paper's code runs ``T = 10``).
    tol : float, default=1e-4
        Stop when the paper's objective changes by less than ``tol`` times its value between
        two rounds; ``0`` runs every round.
    memory : FitMemory or None, default=None
        Shares the bandwidth and the kernel matrix with other fits on the same rows (TCA's,
        JDA's and TJM's, under the same key); the solves depend on ``G`` and are not kept.

    Attributes
    ----------
    n_components_, sigma_, mu_, eigenvalues_, components_, X_fit_, mmd_ : as TCA
        (``mmd_`` is the marginal MMD² before projection).
    reg_diagonal_ : ndarray of shape (n_train,)
        The diagonal ``G`` of the final solve (all ones when no round ran).
    row_norms_ : ndarray of shape (n_train,)
        ``||a^i||`` of the final components in the paper's normalisation: on the source rows,
        the weight TJM leaves each instance (near 0 = dropped).
    objective_ : list of float
        The paper's objective times ``mu``,
        ``mu tr(A^T K L K A) + ||A_s||_{2,1} + ||A_t||_F^2``, after each solve.
    n_iter_ : int
        Reweighting rounds run (at most ``n_iter``).

    Raises
    ------
    ValueError
        As TCA (a constant kernel, a fit beyond the memory budget), named ``TJM``.

    Notes
    -----
    * ``n_iter=0`` is TCA exactly (tested), and so is a fit without source or without target
      rows (nothing to reweight against; several source or target domains are pooled).
    * ``truncate`` is refused: ``G`` depends on all the components, so fewer components are
      not a truncation.
    * skada 0.6's ``TransferJointMatchingAdapter`` stops after its first solve (its
      convergence test divides by a negative initial loss), so it is TCA in the paper's
      normalisation; it equals ``TJM(n_iter=0, scaling="constraint")`` (tested).

    Cost: TCA's kernel once (``O(n^2 d)``), then up to ``n_iter + 1`` of TCA's solves
    (``O(n^2 k)`` per Lanczos iteration, or ``O(n^3)`` dense). With the linear kernel and
    fewer columns than rows, one thin SVD of the rows (``O(n d^2)``) and ``r x r`` pencils
    (``O(n d^2 + d^3)`` per round, no ``n x n`` matrix, :func:`tjm_components_factored`).

    Memory: as TCA, with two more ``n_train x n_train`` matrices (the kernel kept across the
    rounds and the copy each solve overwrites); refused up front beyond the budget.

    References
    ----------
    M. Long, J. Wang, G. Ding, J. Sun and P. S. Yu, "Transfer Joint Matching for Unsupervised
    Domain Adaptation", CVPR 2014: Eq. (6), the problem
    ``min_A tr(A^T K M K^T A) + lambda (||A_s||_{2,1} + ||A_t||_F^2)`` s.t.
    ``A^T K H K^T A = I``; Eq. (8), its generalised eigenproblem
    ``(K M K^T + lambda G) A = K H K^T A Phi`` (the ``k`` smallest ``Phi``, here the ``k``
    largest ``1/Phi`` with ``mu = 1/lambda``); and the subgradient of the l2,1 norm,
    ``G_ii = 1 / (2 ||a^i||)`` for source rows, 1 for target rows.

    Examples
    --------
    >>> import numpy as np
    >>> from shiftlearn.adaptation import TJM
    >>> rng = np.random.default_rng(0)
    >>> X = np.vstack([rng.normal(size=(40, 3)), rng.normal(size=(40, 3)) + 1.0])
    >>> sd = np.r_[np.ones(40, int), -2 * np.ones(40, int)]
    >>> tjm = TJM(n_components=2, n_iter=3).fit(X, sample_domain=sd)
    >>> tjm.transform(X).shape, tjm.row_norms_.shape
    ((80, 2), (80,))
    """

    _array_api_support = False
    _parameter_constraints: dict = {
        **TCA._parameter_constraints,
        "n_iter": [Interval(Integral, 0, None, closed="left")],
        "tol": [Interval(Real, 0, None, closed="left")],
    }

    def __init__(self, n_components=30, mu=1.0, kernel="rbf", bandwidth="median",
                 scaling="eigh", eigen_solver="auto", n_iter=10, tol=1e-4, memory=None):
        super().__init__(n_components=n_components, mu=mu, kernel=kernel, bandwidth=bandwidth,
                         scaling=scaling, eigen_solver=eigen_solver, memory=memory)
        self.n_iter = n_iter
        self.tol = tol

    def truncate(self, k: int):
        """Refused: TJM's reweighting depends on every component."""
        raise NotImplementedError(
            "TJM.truncate: the components of a smaller n_components are not a truncation (the "
            "reweighting matrix G depends on every component); fit TJM(n_components=k).")

    def _fit(self, X, y, sample_domain):
        mu = self._effective_mu()
        X = np.asarray(X, dtype=np.float64)
        n = X.shape[0]
        sd = sample_domain
        ell = mmd_vector(sd)
        k = self._factored_k(X, "TJM")
        if k is not None:                 # linear kernel, n > d: in the span of the columns
            U, sv = np.linalg.svd(X, full_matrices=False)[:2]
            g_ = U.T @ ell
            self.mmd_ = float((sv * g_) @ (sv * g_))

            def solve(g):
                return tjm_components_factored(U, sv, ell, g, k, mu)
        else:
            k, solver, K, _, _ = self._fit_kernel(
                X, sd, "TJM", 2, "RFTCA (random-feature TCA; TJM's reweighting is not built "
                "for it)")
            self.mmd_ = float(ell @ K @ ell)

            def solve(g):
                return tca_components(K, ell, k, mu, eigen_solver=solver,
                                      reg_diagonal=None if np.all(g == 1.0) else g)
        src = sd > 0
        reweight = bool(src.any() and (sd < 0).any())
        g = np.ones(n)
        objective: list[float] = []
        rounds = 0
        while True:
            w, W, KW = solve(g)
            # the paper's normalisation A^T K H K A = I: A = W lambda^{-1/2}
            A = W / np.sqrt(np.maximum(w, 1e-12 * max(float(w[0]), 1e-300)))[None, :]
            norms = np.linalg.norm(A, axis=1)
            KA = KW / np.sqrt(np.maximum(w, 1e-12 * max(float(w[0]), 1e-300)))[None, :]
            mmd = float(np.sum((ell @ KA) ** 2))
            objective.append(mu * mmd + norms[src].sum() + float(np.sum(norms[~src] ** 2)))
            if not reweight or rounds == self.n_iter:
                break
            if len(objective) > 1 and abs(objective[-2] - objective[-1]) <= (
                    self.tol * abs(objective[-2])):
                break
            g = np.ones(n)
            floor = _NORM_FLOOR * max(float(norms.max()), 1e-300)
            g[src] = 1.0 / (2.0 * np.maximum(norms[src], floor))
            rounds += 1
        self.reg_diagonal_ = g
        self.row_norms_ = norms
        self.objective_ = objective
        self.n_iter_ = rounds
        W, KW = self._scaled(w, W, KW)
        return self._set_solution(mu, w, W, KW, X, k)
