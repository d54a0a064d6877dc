"""The linear optimal-transport map between Gaussian approximations of the two domains (the
Gaussian Monge map of Knott and Smith, 1984; linear OT mapping of Flamary et al., 2019).

The design decisions and measurements are in ``docs/dev/mapping.md``.
"""

from __future__ import annotations

from numbers import Real

import numpy as np
from sklearn.base import BaseEstimator, OneToOneFeatureMixin, TransformerMixin
from sklearn.utils.validation import check_is_fitted

from .._constraints import Interval, check_params
from .._resources import check_dense_memory
from .._validation import check_sample_domain, check_X
from ._common import check_rows, fit_rows, no_target_warning, sides

__all__ = ["LinOT", "factored_monge", "monge_matrix"]

#: without ``reg``, covariance eigenvalues below this times the largest make it singular
_SINGULAR_RTOL = 1e-10


def monge_matrix(Cs: np.ndarray, Ct: np.ndarray, reg: float = 0.0) -> np.ndarray:
    """``A = C_s^{-1/2} (C_s^{1/2} C_t C_s^{1/2})^{1/2} C_s^{-1/2}``: the symmetric matrix of the
    optimal-transport map from ``N(., C_s)`` to ``N(., C_t)`` (``x -> A x``).

    Computed in the eigenbasis of ``C_s`` (two ``eigh``, ``O(d^3)``). Round-off cannot make a
    NaN: the eigenvalues of ``C_s`` are floored at ``d eps`` times the largest and those of
    the (PSD) middle matrix at 0. ``reg`` is only read for the error message.

    Raises
    ------
    ValueError
        ``C_s`` is singular (smallest eigenvalue below ``1e-10`` times the largest) and no
        ``reg`` was given, or is zero.

    Examples
    --------
    >>> Cs, Ct = np.diag([1.0, 4.0]), np.diag([9.0, 1.0])
    >>> np.round(monge_matrix(Cs, Ct), 12).tolist()             # sqrt(Ct / Cs) when they commute
    [[3.0, 0.0], [0.0, 0.5]]
    """
    d = Cs.shape[0]
    w, V = np.linalg.eigh((Cs + Cs.T) / 2.0)
    top = float(w[-1]) if d else 0.0
    if top <= 0 or (reg == 0 and w[0] <= _SINGULAR_RTOL * top):
        why = ("every feature of the source rows is constant" if top <= 0 else
               f"smallest eigenvalue {w[0]:.3g} against largest {top:.3g}")
        raise ValueError(
            f"LinOT: the source covariance is singular ({why}; reg={reg!r}), so the map is "
            "not defined. Give reg > 0 (e.g. the default 1e-8), more source rows than "
            "features, or drop the constant features.")
    r = np.sqrt(np.maximum(w, d * np.finfo(np.float64).eps * top))
    Ctv = V.T @ Ct @ V
    mid = r[:, None] * Ctv * r[None, :]                      # C_s^{1/2} C_t C_s^{1/2}, rotated
    lam, U = np.linalg.eigh((mid + mid.T) / 2.0)
    root = (U * np.sqrt(np.maximum(lam, 0.0))) @ U.T
    Ar = root / r[:, None] / r[None, :]
    A = V @ Ar @ V.T
    return (A + A.T) / 2.0


def factored_monge(Xsc: np.ndarray, Xtc: np.ndarray, reg: float
                   ) -> tuple[np.ndarray, np.ndarray]:
    """The map of :func:`monge_matrix` between the covariances ``X^T X / n + reg I`` of the
    centred rows ``Xsc`` and ``Xtc`` in factored form, ``A = I + Q D Q^T``, ``reg > 0``.

    ``Q`` (``d x r``, ``r <= n_s + n_t``) is an orthonormal basis of a space holding every
    centred row (a thin QR); both covariances map it to itself and are ``reg I`` on its
    complement, where ``A`` is therefore the identity: ``D = A_r - I`` with ``A_r`` the
    ``r x r`` map between ``Q^T C Q``. Exact (no truncation); ``O(d n^2 + n^3)``, no ``d x d``
    matrix. Returns ``(Q, D)``.
    """
    Q, _ = np.linalg.qr(np.vstack([Xsc, Xtc]).T)
    Bs, Bt = Xsc @ Q, Xtc @ Q
    eye = np.eye(Q.shape[1])
    core = monge_matrix(Bs.T @ Bs / Xsc.shape[0] + reg * eye,
                        Bt.T @ Bt / Xtc.shape[0] + reg * eye, reg) - eye
    return Q, core


class LinOT(OneToOneFeatureMixin, TransformerMixin, BaseEstimator):
    """Linear optimal-transport map (Gaussian Monge map): the source rows moved by the affine
    map that transports a Gaussian fitted to the source onto one fitted to the target.

    ``fit(X, y, sample_domain)`` estimates the means ``m_s``, ``m_t`` and the covariances
    ``C_s = X_s^T X_s / n_s + reg I``, ``C_t`` likewise (centred rows, ``1/n``), and the map
    ``x -> x A + b`` with ``A = C_s^{-1/2} (C_s^{1/2} C_t C_s^{1/2})^{1/2} C_s^{-1/2}`` and
    ``b = m_t - m_s A``. ``fit_transform`` maps the source rows (``sample_domain > 0``) and
    returns the target rows as they are; ``transform(X)`` treats ``X`` as target rows (the
    identity), ``transform(X, sample_domain=sd)`` maps the rows with ``sd > 0``. Several
    sources (or targets) are pooled. Without target rows the map is the identity, with a
    warning.

    Parameters
    ----------
    reg : float >= 0, default=1e-8
        Added to the diagonal of both covariances (POT's ``LinearTransport(reg=...)`` and
        skada's ``LinearOTMappingAdapter``). ``0`` needs non-singular covariances (more rows
        than features in each domain).

    Attributes
    ----------
    mean_source_, mean_target_ : ndarray of shape (n_features,)
    matrix_ : ndarray of shape (n_features, n_features)
        ``A`` (formed on first access on the factored route, ``O(d^2 r)``).
    offset_ : ndarray of shape (n_features,)
        ``b = m_t - m_s A``.
    basis_ : ndarray of shape (n_features, r) or None
        The factored route's orthonormal basis ``Q`` of the centred rows of both domains
        (``A = I + Q (A_r - I) Q^T``); ``None`` on the dense route.
    n_features_in_ : int
    feature_names_in_ : ndarray of str
        Only when ``X`` had string column names.

    Raises
    ------
    ValueError
        Fewer than 2 source or target rows; ``reg=0`` with a singular source covariance;
        NaN/inf in ``X`` (the message names the column).

    Notes
    -----
    Cost, ``n = n_s + n_t``: with ``reg > 0`` and ``n < d`` (the factored route), one QR of
    the centred rows and two ``r x r`` problems, ``r <= n``: ``O(d n^2 + n^3)`` time and
    ``O(d n)`` memory, no ``d x d`` matrix; the result is exact, since both covariances are
    ``reg I`` on the complement of the rows' span, where ``A`` is the identity. Otherwise two
    covariances and two ``d x d`` eigendecompositions, ``O(n d^2 + d^3)``. ``transform`` of
    ``m`` rows: ``O(m d r)`` or ``O(m d^2)``.

    References
    ----------
    M. Knott and C. S. Smith, "On the optimal mapping of distributions", J. Optim. Theory
    Appl. 43, 1984: the map ``T(x) = m_t + A (x - m_s)`` with ``A`` above is the optimal
    (Monge, squared Euclidean) map between ``N(m_s, C_s)`` and ``N(m_t, C_t)``.
    R. Flamary, K. Lounici and A. Ferrari, "Concentration bounds for linear Monge mapping
    estimation and optimal transport domain adaptation", arXiv:1905.10155, 2019, Eq. (3): the
    same map with the empirical moments, used for domain adaptation.

    Examples
    --------
    >>> from shiftlearn.mapping import LinOT
    >>> from shiftlearn.datasets import make_sca_toy
    >>> X, y, sd = make_sca_toy(n_per_cluster=20, random_state=0)
    >>> Z = LinOT().fit_transform(X, y, sd)
    >>> bool(np.allclose(Z[sd < 0], X[sd < 0]))                  # target rows as they are
    True
    """

    # scikit-learn metadata routing: sample_domain is requested by default
    __metadata_request__fit = {"sample_domain": True}
    __metadata_request__transform = {"sample_domain": True}

    _parameter_constraints: dict = {"reg": [Interval(Real, 0, None, closed="left")]}

    def __init__(self, reg=1e-8):
        self.reg = reg

    def fit(self, X, y=None, sample_domain=None):
        """Estimate both domains' means and covariances and the map ``x -> x A + b``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            The source and target rows.
        y : array-like of shape (n_samples,), optional
            Labels (not used by the map); ``-1`` (or NaN) marks unlabeled rows, from which
            ``sample_domain`` is inferred when it is omitted.
        sample_domain : array-like of shape (n_samples,), optional
            Positive = source, negative = target.

        Returns
        -------
        self
        """
        self._fit(X, y, sample_domain)
        return self

    def _fit(self, X, y, sample_domain) -> tuple[np.ndarray, np.ndarray]:
        check_params(self)
        X, _, sd = fit_rows(self, X, y, sample_domain)
        src, tgt = sides(sd)
        ns, nt, d = int(src.sum()), int(tgt.sum()), X.shape[1]
        reg = float(self.reg)
        factored = reg > 0 and ns + nt < d
        if factored:
            check_dense_memory(ns + nt, d, 3, f"LinOT.fit on {d} features", "",
                               advice="Reduce the rows or the features first.")
        else:
            check_dense_memory(d, d, 6, f"LinOT.fit on {d} features", "",
                               advice="Reduce the features first (e.g. "
                                      "sklearn.decomposition.PCA), or give reg > 0 with fewer "
                                      "rows than features, whose route needs no d x d matrix.")
        Xs = X[src].astype(np.float64, copy=False)
        self.mean_source_ = Xs.mean(axis=0)
        self.basis_ = None
        if nt == 0:
            no_target_warning("LinOT")
            self.mean_target_ = self.mean_source_.copy()
            self._matrix, self.offset_ = np.eye(d), np.zeros(d)
            return X, sd
        check_rows("LinOT", ns, nt, 2, "estimate a covariance")
        Xt = X[tgt].astype(np.float64, copy=False)
        self.mean_target_ = Xt.mean(axis=0)
        Xsc, Xtc = Xs - self.mean_source_, Xt - self.mean_target_
        if factored:
            # both covariances are reg I plus a term in the span of the centred rows: the map
            # is the identity off that span, and the r x r formula on it
            self.basis_, self._core = factored_monge(Xsc, Xtc, reg)
            self._matrix = None
            self.offset_ = self.mean_target_ - self._apply(self.mean_source_[None, :])[0]
            return X, sd
        eye = reg * np.eye(d)
        self._matrix = monge_matrix(Xsc.T @ Xsc / ns + eye, Xtc.T @ Xtc / nt + eye, reg)
        self.offset_ = self.mean_target_ - self.mean_source_ @ self._matrix
        return X, sd

    def fit_transform(self, X, y=None, sample_domain=None):
        """``fit``, then the training rows: source rows mapped, target rows as they are."""
        X, sd = self._fit(X, y, sample_domain)
        return self._map(X, sd)

    def transform(self, X, sample_domain=None):
        """The rows with ``sample_domain > 0`` mapped onto the target; the others as given.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        sample_domain : array-like of shape (n_samples,), optional
            ``None``: every row is a target row (returned as it is, as float).

        Returns
        -------
        ndarray of shape (n_samples, n_features)
        """
        check_is_fitted(self, "offset_")
        X = check_X(X, estimator=self, reset=False)
        return self._map(X, None if sample_domain is None
                         else check_sample_domain(sample_domain, X.shape[0]))

    @property
    def matrix_(self) -> np.ndarray:
        """``A``, shape ``(n_features, n_features)``; on the factored route it is formed
        (``O(d^2 r)``) and kept on first access."""
        if "_matrix" not in vars(self):
            raise AttributeError("matrix_: this LinOT is not fitted yet.")
        if self._matrix is None:
            self._matrix = self._apply(np.eye(self.mean_source_.shape[0]))
        return self._matrix

    def _apply(self, Y: np.ndarray) -> np.ndarray:
        """``Y A`` without forming ``A``: ``Y + ((Y Q) (A_r - I)) Q^T``, ``O(n d r)``."""
        Q = self.basis_
        return Y + ((Y @ Q) @ self._core) @ Q.T

    def _map(self, X: np.ndarray, sd: np.ndarray | None) -> np.ndarray:
        Z = np.array(X, dtype=np.float64)
        if sd is not None:
            src = sd > 0
            if src.any():
                Y = Z[src]
                Z[src] = (Y @ self._matrix if self._matrix is not None
                          else self._apply(Y)) + self.offset_
        return Z
