"""Subspace Alignment (Fernando et al., 2013): the source PCA basis aligned on the target's.

The design decisions and measurements are in ``docs/dev/mapping.md``.
"""

from __future__ import annotations

import warnings
from numbers import Integral

import numpy as np
from sklearn.base import BaseEstimator, ClassNamePrefixFeaturesOutMixin, TransformerMixin
from sklearn.utils.validation import check_is_fitted

from .._constraints import Interval, check_params
from .._resources import check_dense_memory
from .._stacklevel import user_stacklevel
from .._validation import check_sample_domain, check_X
from ._common import check_rows, fit_rows, no_target_warning, sides

__all__ = ["SA", "pca_basis"]

#: the Gram routes of :func:`pca_basis` need every requested variance above this times the
#: largest (else the thin SVD)
_GRAM_FLOOR = 1e-6


def pca_basis(X: np.ndarray, n_components: int) -> tuple[np.ndarray, np.ndarray]:
    """The mean and the leading ``n_components`` principal axes of the rows of ``X``.

    The smaller Gram matrix of the centred rows ``X_c = X - m`` when one side is much smaller:
    with fewer rows than features, the eigenvectors ``U`` of ``X_c X_c^T`` (``O(n^2 d)``) and
    ``V = X_c^T U diag(s)^{-1}``, never a ``d x d`` matrix; with ``n >= 10 d`` (scikit-learn's
    ``PCA`` rule for its covariance solver), the eigenvectors of ``X_c^T X_c``
    (``O(n d^2)``). Their axes carry a relative round-off of ``eps s_1^2 /
    (s_k^2 - s_{k+1}^2)``, so they are used only when every requested variance is above
    ``1e-6`` times the largest; otherwise, and for ``n ~ d``, one thin SVD of ``X_c``
    (``O(n d min(n, d))``). Axes get scikit-learn's sign convention (the entry of largest
    magnitude of each axis is positive, as ``PCA`` after ``svd_flip(u_based_decision=False)``).

    Returns
    -------
    mean : ndarray of shape (n_features,)
    axes : ndarray of shape (n_components, n_features)
        Orthonormal rows, by decreasing variance.

    Examples
    --------
    >>> X = np.random.default_rng(0).normal(size=(30, 4)) * [3.0, 2.0, 1.0, 0.5]
    >>> m, P = pca_basis(X, 2)
    >>> P.shape, bool(np.allclose(P @ P.T, np.eye(2)))
    ((2, 4), True)
    """
    X = np.asarray(X, dtype=np.float64)
    mean = X.mean(axis=0)
    Xc = X - mean
    P = None
    n, d = Xc.shape
    if n < d or n >= 10 * d:
        # the smaller Gram matrix: rows' (then V = Xc^T U / s) or columns' (V itself)
        w, U = np.linalg.eigh(Xc @ Xc.T if n < d else Xc.T @ Xc)
        w, U = w[::-1][:n_components], U[:, ::-1][:, :n_components]
        if w[-1] > _GRAM_FLOOR * w[0]:
            P = (Xc.T @ U / np.sqrt(w)).T if n < d else U.T
    if P is None:
        _, _, Vt = np.linalg.svd(Xc, full_matrices=False)
        P = Vt[:n_components]
    top = np.argmax(np.abs(P), axis=1)
    signs = np.sign(P[np.arange(P.shape[0]), top])
    signs[signs == 0] = 1.0
    return mean, P * signs[:, None]


class SA(ClassNamePrefixFeaturesOutMixin, TransformerMixin, BaseEstimator):
    """Subspace Alignment (Fernando et al., 2013): source rows projected on their principal
    axes, then aligned onto the target's.

    ``fit(X, y, sample_domain)`` computes the leading ``k`` principal axes of the source rows
    (``sample_domain > 0``), ``P_s`` (``d x k``), and of the target rows (``sample_domain <
    0``), ``P_t``, each about its own mean, and the alignment ``M = P_s^T P_t`` (``k x k``).
    ``transform`` maps a source row to ``(x - m_s) P_s M`` and a target row to
    ``(x - m_t) P_t``: both land in the target's ``k``-dimensional subspace. ``transform(X)``
    treats every row as a target row (what ``predict`` labels); ``transform(X,
    sample_domain=sd)`` maps the rows with ``sd > 0`` as source rows (validation on held-out
    source rows needs it; the library's scorers pass it). Several sources (or targets) are
    pooled into one source (or target) basis. Without target rows the target basis is the
    source's, with a warning.

    Parameters
    ----------
    n_components : int or None, default=None
        ``k``, the dimension of both subspaces. ``None``: all the data allow,
        ``min(n_s - 1, n_t - 1, d)`` (``n_s``, ``n_t`` the source and target rows). A larger
        value is lowered to that bound with a warning.

    Attributes
    ----------
    n_components_ : int
        ``k`` used.
    mean_source_, mean_target_ : ndarray of shape (n_features,)
    components_source_, components_target_ : ndarray of shape (k, n_features)
        ``P_s^T`` and ``P_t^T``: orthonormal rows, by decreasing variance, with
        scikit-learn's ``PCA`` sign convention.
    matrix_ : ndarray of shape (k, k)
        ``M = P_s^T P_t``.
    n_features_in_ : int
    feature_names_in_ : ndarray of str
        Only when ``X`` had string column names.

    Raises
    ------
    ValueError
        Fewer than 2 source rows, or fewer than 2 target rows when there are target rows
        (no principal axis), or NaN/inf in ``X`` (the message names the column).

    Notes
    -----
    Cost: one principal basis per domain (:func:`pca_basis`: a Gram matrix or a thin SVD),
    ``O(n_s d min(n_s, d) + n_t d min(n_t, d))`` time; memory ``O((n_s + n_t) d +
    min(n, d)^2)`` (no ``d x d`` matrix when the rows are fewer than the features, so
    thousands of columns with hundreds of rows cost what the rows cost); ``transform`` of
    ``n`` rows ``O(n d k)``.

    References
    ----------
    B. Fernando, A. Habrard, M. Sebban and T. Tuytelaars, "Unsupervised visual domain
    adaptation using subspace alignment", ICCV 2013. Eq. (3)-(4): the alignment
    ``M* = argmin_M ||X_S M - X_T||_F^2 = X_S^T X_T`` of the orthonormal bases ``X_S``,
    ``X_T`` (``P_s``, ``P_t`` here); Eq. (5): the source rows projected by
    ``X_a = X_S M* = X_S X_S^T X_T``, the target rows by ``X_T``.

    Examples
    --------
    >>> from shiftlearn.mapping import SA
    >>> from shiftlearn.datasets import make_sca_toy
    >>> X, y, sd = make_sca_toy(n_per_cluster=20, random_state=0)
    >>> Z = SA(n_components=2).fit_transform(X, y, sd)
    >>> Z.shape
    (120, 2)
    """

    # scikit-learn metadata routing: sample_domain is requested by default
    __metadata_request__fit = {"sample_domain": True}
    __metadata_request__transform = {"sample_domain": True}

    _parameter_constraints: dict = {
        "n_components": [Interval(Integral, 1, None, closed="left"), None],
    }

    def __init__(self, n_components=None):
        self.n_components = n_components

    def fit(self, X, y=None, sample_domain=None):
        """Compute both principal bases and the alignment ``M``.

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
        check_dense_memory(max(ns, nt), d, 3, f"SA.fit on {d} features", "",
                           advice="Reduce the rows or the features first.")
        has_target = nt > 0
        if not has_target:
            no_target_warning("SA")
        check_rows("SA", ns, nt if has_target else ns, 2, "compute a principal axis")
        bound = min(ns - 1, (nt if has_target else ns) - 1, d)
        if self.n_components is None:
            k = bound
        elif self.n_components > bound:
            warnings.warn(
                f"SA: n_components={self.n_components} is more than the data allow "
                f"({ns} source rows, {nt} target rows and {d} features give at most {bound} "
                f"principal axes each); using n_components={bound} (see n_components_). Pass "
                "a smaller n_components to silence this warning.", UserWarning,
                stacklevel=user_stacklevel())
            k = bound
        else:
            k = int(self.n_components)
        self.n_components_ = k
        self.mean_source_, self.components_source_ = pca_basis(X[src], k)
        if has_target:
            self.mean_target_, self.components_target_ = pca_basis(X[tgt], k)
        else:
            self.mean_target_ = self.mean_source_.copy()
            self.components_target_ = self.components_source_.copy()
        self.matrix_ = self.components_source_ @ self.components_target_.T
        return X, sd

    def fit_transform(self, X, y=None, sample_domain=None):
        """``fit``, then the training rows: source rows aligned, target rows projected."""
        X, sd = self._fit(X, y, sample_domain)
        return self._map(X, sd)

    def transform(self, X, sample_domain=None):
        """Rows with ``sample_domain > 0`` as source rows, the others as target rows.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        sample_domain : array-like of shape (n_samples,), optional
            ``None``: every row is a target row.

        Returns
        -------
        ndarray of shape (n_samples, k)
            ``k`` is ``n_components_``.
        """
        check_is_fitted(self, "matrix_")
        X = check_X(X, estimator=self, reset=False)
        return self._map(X, None if sample_domain is None
                         else check_sample_domain(sample_domain, X.shape[0]))

    def _map(self, X: np.ndarray, sd: np.ndarray | None) -> np.ndarray:
        X = np.asarray(X, dtype=np.float64)
        Z = (X - self.mean_target_) @ self.components_target_.T
        if sd is not None:
            src = sd > 0
            if src.any():
                # (x - m_s) P_s M: the k x k product first, O(n d k)
                Z[src] = ((X[src] - self.mean_source_) @ self.components_source_.T) \
                    @ self.matrix_
        return Z

    @property
    def _n_features_out(self) -> int:
        return self.n_components_
