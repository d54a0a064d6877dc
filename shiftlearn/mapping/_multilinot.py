"""Multi-source linear Monge alignment: every domain's Gaussian mapped onto the
Bures-Wasserstein barycenter of the source domains' Gaussians (Gnassounou, Flamary and
Gramfort), so that a domain seen only at test time is mapped too.

The design decisions and measurements are in ``docs/dev/mapping.md``.
"""

from __future__ import annotations

import warnings
from numbers import Integral, Real

import numpy as np
from sklearn.base import BaseEstimator, OneToOneFeatureMixin, TransformerMixin
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils.validation import check_is_fitted

from .._constraints import Interval, check_params
from .._resources import check_dense_memory
from .._stacklevel import user_stacklevel
from .._validation import check_sample_domain, check_X
from ._common import fit_rows
from ._linot import monge_matrix

__all__ = ["MultiLinOT", "bures_barycenter"]


def _sym_sqrt(C: np.ndarray, inverse: bool = False):
    """``C^{1/2}`` (and ``C^{-1/2}`` with ``inverse``) of a symmetric PSD matrix by ``eigh``,
    eigenvalues clipped at 0 (at ``d eps`` of the largest for the inverse): round-off cannot
    make a NaN."""
    w, V = np.linalg.eigh((C + C.T) / 2.0)
    top = max(float(w[-1]), 0.0)
    r = np.sqrt(np.maximum(w, 0.0))
    root = (V * r) @ V.T
    if not inverse:
        return root
    floor = np.sqrt(max(C.shape[0] * np.finfo(np.float64).eps * top, np.finfo(np.float64).tiny))
    return root, (V / np.maximum(r, floor)) @ V.T


def bures_barycenter(covs: np.ndarray, weights: np.ndarray | None = None, *,
                     max_iter: int = 200, tol: float = 1e-10) -> tuple[np.ndarray, int, float]:
    """Covariance ``C_b`` of the Bures-Wasserstein barycenter of ``N(., C_k)`` with weights
    ``w_k`` (equal by default): the positive definite solution of
    ``C_b = sum_k w_k (C_b^{1/2} C_k C_b^{1/2})^{1/2}`` (Agueh and Carlier 2011).

    Iterates ``S <- S^{-1/2} (sum_k w_k (S^{1/2} C_k S^{1/2})^{1/2})^2 S^{-1/2}`` from the
    arithmetic mean (Alvarez-Esteban, del Barrio, Cuesta-Albertos and Matran 2016,
    Theorem 4.2: it converges to the barycenter from any positive definite start; one step when
    the ``C_k`` commute), until ``||S' - S||_F <= tol ||S||_F``. ``O(K d^3)`` per iteration.
    Square roots by ``eigh`` with the eigenvalues clipped at 0, so near-singular covariances
    give no NaN (POT's numpy ``sqrtm`` does not clip).

    Returns ``(C_b, n_iter, last relative change)``.

    Examples
    --------
    >>> Cb, it, _ = bures_barycenter(np.stack([np.diag([1.0, 4.0]), np.diag([9.0, 16.0])]))
    >>> np.round(Cb, 12).tolist(), it                     # ((sqrt(a) + sqrt(b)) / 2)^2
    ([[4.0, 0.0], [0.0, 9.0]], 2)
    """
    covs = np.asarray(covs, dtype=np.float64)
    K = covs.shape[0]
    w = np.full(K, 1.0 / K) if weights is None else np.asarray(weights, dtype=np.float64)
    S = np.tensordot(w, covs, axes=1)
    change = np.inf
    n_iter = 0
    while n_iter < max_iter:
        n_iter += 1
        R, Rinv = _sym_sqrt(S, inverse=True)
        M = sum(wk * _sym_sqrt(R @ C @ R) for wk, C in zip(w, covs, strict=True))
        T = Rinv @ M
        S_new = T @ T.T                                  # S^{-1/2} M M S^{-1/2}
        S_new = (S_new + S_new.T) / 2.0
        change = float(np.linalg.norm(S_new - S)) / max(float(np.linalg.norm(S_new)), 1e-300)
        S = S_new
        if change <= tol:
            break
    return S, n_iter, change


class MultiLinOT(OneToOneFeatureMixin, TransformerMixin, BaseEstimator):
    """Multi-source linear Monge alignment: each domain moved by the Gaussian optimal-transport
    map from its own Gaussian onto the Bures-Wasserstein barycenter of the source domains'
    Gaussians.

    ``fit(X, y, sample_domain)`` estimates, for every domain ``k`` (each distinct
    ``sample_domain``), the mean ``m_k`` and covariance ``C_k = X_k^T X_k / n_k + reg I``
    (centred rows, ``1/n``); the barycenter ``N(m_b, C_b)`` of the source domains'
    Gaussians with equal weights; and
    each domain's map ``x -> x A_k + b_k``, ``A_k = C_k^{-1/2} (C_k^{1/2} C_b C_k^{1/2})^{1/2}
    C_k^{-1/2}``, ``b_k = m_b - m_k A_k`` (:func:`~shiftlearn.mapping.monge_matrix`). Every
    row, source or target, is mapped: a classifier trained on the mapped source rows is
    applied to mapped target rows. ``transform(X, sample_domain)`` maps each row with its
    domain's map; a domain not seen in ``fit`` is estimated from its rows in ``X`` (test-time
    adaptation: its Gaussian is mapped onto the fitted barycenter; nothing is stored).
    ``transform(X)`` without ``sample_domain`` uses the map of the one target domain of
    ``fit`` (or of its one domain); with several, ``sample_domain`` is required.

    Parameters
    ----------
    reg : float >= 0, default=1e-8
        Added to the diagonal of every domain's covariance (as :class:`LinOT`'s ``reg``).
        ``0`` needs non-singular covariances (more rows than features in each domain). With
        fewer rows than features in a domain the covariances are nearly singular at ``1e-8``
        and the barycenter's fixed point converges slowly (sublinearly); about ``1e-2`` of
        the features' variance converges in tens of iterations.
    max_iter : int >= 1, default=200
        Iterations of the barycenter's fixed point (:func:`bures_barycenter`).
    tol : float > 0, default=1e-10
        Stop the fixed point when ``||C_b' - C_b||_F <= tol ||C_b'||_F``; a
        :class:`~sklearn.exceptions.ConvergenceWarning` if it does not.

    Attributes
    ----------
    domains_ : ndarray of shape (n_domains,)
        The domain ids of ``fit``, sorted.
    means_ : ndarray of shape (n_domains, n_features)
    barycenter_mean_ : ndarray of shape (n_features,)
    barycenter_covariance_ : ndarray of shape (n_features, n_features)
        ``C_b`` (formed on access on the factored route, ``O(d^2 r)``).
    offsets_ : ndarray of shape (n_domains, n_features)
        ``b_k``.
    basis_ : ndarray of shape (n_features, r) or None
        The factored route's orthonormal basis ``Q`` of every domain's centred rows; ``None``
        on the dense route.
    n_iter_ : int
        Fixed-point iterations of the barycenter (0 with one domain: it is that domain).
    n_features_in_ : int
    feature_names_in_ : ndarray of str
        Only when ``X`` had string column names.

    Raises
    ------
    ValueError
        A domain with fewer than 2 rows in ``fit``; ``reg=0`` with a singular covariance;
        ``transform(X)`` without ``sample_domain`` when ``fit`` saw several target domains
        (or several domains and no target); NaN/inf in ``X``.

    Notes
    -----
    Cost, ``n`` rows in ``K`` domains, ``d`` features, ``T`` fixed-point iterations: with
    ``reg > 0`` and ``n < d`` (the factored route) one QR of the centred rows, ``O(d n^2)``,
    and ``r x r`` problems (``r <= n``), ``O(T K n^3)``, in ``O(d n + K n^2)`` memory, no
    ``d x d`` matrix; exact, since every covariance is ``reg I`` off the span of the rows,
    where the barycenter is ``reg I`` and every map the identity. Otherwise ``O(n d^2)`` for the
    covariances and ``O((T + 1) K d^3)`` for the barycenter and the maps, in ``2 K + 6``
    ``d x d`` matrices, refused up front beyond the memory budget. ``transform`` of ``m`` rows:
    ``O(m d^2)`` or ``O(m d r)``, plus one map's fit for an unseen domain.

    References
    ----------
    T. Gnassounou, R. Flamary and A. Gramfort, "Convolutional Monge Mapping Normalization for
    learning on sleep data", NeurIPS 2023: Eq. (4)-(5), the barycenter of the domains'
    Gaussians and each domain's Monge map onto it, applicable to a new domain at test time.
    M. Agueh and G. Carlier, "Barycenters in the Wasserstein space", SIAM J. Math. Anal. 43,
    2011: the barycenter of ``N(m_k, C_k)`` with weights ``w_k`` is ``N(sum w_k m_k, C_b)``,
    ``C_b = sum_k w_k (C_b^{1/2} C_k C_b^{1/2})^{1/2}``.
    M. Knott and C. S. Smith, "On the optimal mapping of distributions", J. Optim. Theory
    Appl. 43, 1984: the map ``A_k`` above.

    Examples
    --------
    >>> import numpy as np
    >>> from shiftlearn.mapping import MultiLinOT
    >>> rng = np.random.default_rng(0)
    >>> X = np.vstack([rng.normal(size=(50, 2)) * [1, 3], rng.normal(size=(50, 2)) * [3, 1]])
    >>> sd = np.r_[np.ones(50, int), 2 * np.ones(50, int)]
    >>> ml = MultiLinOT().fit(X, sample_domain=sd)
    >>> Z = ml.transform(X, sample_domain=sd)
    >>> bool(np.allclose(np.cov(Z[:50].T, bias=True), ml.barycenter_covariance_))
    True
    """

    # scikit-learn metadata routing: sample_domain is requested by default
    __metadata_request__fit = {"sample_domain": True}
    __metadata_request__transform = {"sample_domain": True}

    _parameter_constraints: dict = {
        "reg": [Interval(Real, 0, None, closed="left")],
        "max_iter": [Interval(Integral, 1, None, closed="left")],
        "tol": [Interval(Real, 0, None, closed="neither")],
    }

    def __init__(self, reg=1e-8, max_iter=200, tol=1e-10):
        self.reg = reg
        self.max_iter = max_iter
        self.tol = tol

    # ------------------------------------------------------------------------------ fit

    def fit(self, X, y=None, sample_domain=None):
        """Estimate every domain's Gaussian, the barycenter of the sources' and the maps.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : array-like of shape (n_samples,), optional
            Labels (not used by the maps); ``-1`` (or NaN) marks unlabeled rows, from which
            ``sample_domain`` is inferred when it is omitted.
        sample_domain : array-like of shape (n_samples,), optional
            Positive = source, negative = target; every distinct id is a domain.

        Returns
        -------
        self
        """
        self._fit(X, y, sample_domain)
        return self

    def _fit(self, X, y, sample_domain):
        check_params(self)
        X, _, sd = fit_rows(self, X, y, sample_domain)
        n, d = X.shape
        X = X.astype(np.float64, copy=False)
        domains = np.unique(sd)
        for k in domains:
            nk = int(np.sum(sd == k))
            if nk < 2:
                raise ValueError(
                    f"MultiLinOT needs at least 2 rows per domain to estimate a covariance, got "
                    f"n_samples = {nk} in domain {k}. Merge it with another domain or drop it.")
        reg = float(self.reg)
        K = domains.shape[0]
        factored = reg > 0 and n < d
        if factored:
            check_dense_memory(n, d, 3, f"MultiLinOT.fit on {d} features", "",
                               advice="Reduce the rows or the features first.")
        else:
            check_dense_memory(d, d, 2 * K + 6, f"MultiLinOT.fit on {d} features and {K} "
                               "domains", "",
                               advice="Reduce the features first (e.g. "
                                      "sklearn.decomposition.PCA), or give reg > 0 with fewer "
                                      "rows than features, whose route needs no d x d matrix.")
        means = np.stack([X[sd == k].mean(axis=0) for k in domains])
        centred = [X[sd == k] - means[i] for i, k in enumerate(domains)]
        ref = domains > 0                    # fit_rows guarantees a source row
        if factored:
            Q, _ = np.linalg.qr(np.vstack(centred).T)
            eye = np.eye(Q.shape[1])
            covs = [(B := Xc @ Q).T @ B / Xc.shape[0] + reg * eye for Xc in centred]
        else:
            Q, eye = None, np.eye(d)
            covs = [Xc.T @ Xc / Xc.shape[0] + reg * eye for Xc in centred]
        ref_covs = np.stack([c for c, r in zip(covs, ref, strict=True) if r])
        mb = means[ref].mean(axis=0)
        Cb = self._barycenter(means[ref], ref_covs)
        self.domains_, self.means_, self.basis_ = domains, means, Q
        self.barycenter_mean_, self._Cb = mb, Cb
        cores = [monge_matrix(C, Cb, reg) for C in covs]
        if factored:
            self._cores = [A - eye for A in cores]
            self._matrices = None
            self.offsets_ = np.stack([mb - self._apply(Q, D, m[None, :])[0]
                                      for D, m in zip(self._cores, means, strict=True)])
        else:
            self._matrices = cores
            self.offsets_ = np.stack([mb - m @ A for A, m in zip(cores, means, strict=True)])
        return X, sd

    def _barycenter(self, means: np.ndarray, covs: np.ndarray) -> np.ndarray:
        """``C_b`` of the Gaussians ``N(means[k], covs[k])`` with equal weights: one Gaussian is
        its own barycenter; several, :func:`bures_barycenter`."""
        if covs.shape[0] == 1:
            self.n_iter_ = 0
            return covs[0].copy()
        Cb, self.n_iter_, change = bures_barycenter(covs, max_iter=int(self.max_iter),
                                                    tol=float(self.tol))
        if change > self.tol:
            warnings.warn(f"MultiLinOT: the barycenter's fixed point did not reach tol={self.tol} "
                          f"in max_iter={self.max_iter} iterations (last relative change "
                          f"{change:.2g}); raise max_iter.", ConvergenceWarning,
                          stacklevel=user_stacklevel())
        return Cb

    # ------------------------------------------------------------------------ transform

    def fit_transform(self, X, y=None, sample_domain=None):
        """``fit``, then every training row mapped with its domain's map."""
        X, sd = self._fit(X, y, sample_domain)
        return self._map(X, sd)

    def transform(self, X, sample_domain=None):
        """Each row mapped onto the barycenter with its domain's map.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        sample_domain : array-like of shape (n_samples,), optional
            A domain of ``fit`` takes its fitted map; another is estimated from its rows in
            ``X`` (at least 2). ``None``: every row is in the one target domain of ``fit``
            (or its one domain).

        Returns
        -------
        ndarray of shape (n_samples, n_features)
        """
        check_is_fitted(self, "offsets_")
        X = check_X(X, estimator=self, reset=False).astype(np.float64, copy=False)
        if sample_domain is None:
            tgt = self.domains_[self.domains_ < 0]
            only = tgt if tgt.shape[0] else self.domains_
            if only.shape[0] != 1:
                raise ValueError(
                    f"MultiLinOT.transform: fit saw the domains {self.domains_.tolist()}, so X's "
                    "domain is ambiguous; pass sample_domain (a fitted id, or a new id whose "
                    "map is estimated from its rows).")
            sd = np.full(X.shape[0], only[0], dtype=np.int64)
        else:
            sd = check_sample_domain(sample_domain, X.shape[0])
        return self._map(X, sd)

    @property
    def barycenter_covariance_(self) -> np.ndarray:
        """``C_b``, shape ``(n_features, n_features)``."""
        check_is_fitted(self, "offsets_")
        Q = self.basis_
        if Q is None:
            return self._Cb
        d = Q.shape[0]
        P = Q @ self._Cb @ Q.T - float(self.reg) * (Q @ Q.T)
        P.flat[:: d + 1] += float(self.reg)
        return P

    @staticmethod
    def _apply(Q: np.ndarray, D: np.ndarray, Y: np.ndarray) -> np.ndarray:
        """``Y A`` with ``A = I + Q D Q^T``, ``O(n d r)``."""
        return Y + ((Y @ Q) @ D) @ Q.T

    def _new_domain(self, Y: np.ndarray, k: int):
        """``(apply, offset)`` of a domain not seen in ``fit``, from its rows ``Y``."""
        if Y.shape[0] < 2:
            raise ValueError(
                f"MultiLinOT.transform: domain {k} was not seen in fit, and its map needs at "
                f"least 2 rows to estimate a covariance, got n_samples = {Y.shape[0]}. Pass "
                "more rows of it, or a fitted domain id.")
        reg = float(self.reg)
        m = Y.mean(axis=0)
        Yc = Y - m
        if self.basis_ is None:
            A = monge_matrix(Yc.T @ Yc / Y.shape[0] + reg * np.eye(Y.shape[1]), self._Cb, reg)
            return (lambda Z: Z @ A), self.barycenter_mean_ - m @ A
        Q = self.basis_
        Qn, _ = np.linalg.qr(np.hstack([Q, Yc.T]))      # a basis holding Q and the new rows
        R = Qn.T @ Q
        eye = np.eye(Qn.shape[1])
        Cb = R @ self._Cb @ R.T + reg * (eye - R @ R.T)  # C_b in that basis
        B = Yc @ Qn
        D = monge_matrix(B.T @ B / Y.shape[0] + reg * eye, (Cb + Cb.T) / 2.0, reg) - eye
        return (lambda Z: self._apply(Qn, D, Z)), \
            self.barycenter_mean_ - self._apply(Qn, D, m[None, :])[0]

    def _map(self, X: np.ndarray, sd: np.ndarray) -> np.ndarray:
        Z = np.array(X, dtype=np.float64)
        index = {int(k): i for i, k in enumerate(self.domains_)}
        for k in np.unique(sd):
            rows = sd == k
            i = index.get(int(k))
            if i is None:
                apply, offset = self._new_domain(Z[rows], int(k))
            elif self._matrices is not None:
                A = self._matrices[i]
                apply, offset = (lambda Y, A=A: Y @ A), self.offsets_[i]
            else:
                D = self._cores[i]
                apply, offset = (lambda Y, D=D: self._apply(self.basis_, D, Y)), self.offsets_[i]
            Z[rows] = apply(Z[rows]) + offset
        return Z
