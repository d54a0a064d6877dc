"""Density-ratio weights from one density model per domain: Gaussian and kernel density.

The design decisions and measurements are in ``docs/dev/reweighting.md``.
"""

from __future__ import annotations

from numbers import Real

import numpy as np
from scipy.linalg import cho_factor, cho_solve
from scipy.special import logsumexp
from sklearn.covariance import empirical_covariance, ledoit_wolf, shrunk_covariance
from sklearn.utils.validation import check_is_fitted

from .._constraints import Interval, StrOptions
from .._resources import check_dense_memory
from ..kernels import BANDWIDTH_RULES, DEFAULT_CHUNK_BYTES, resolve_bandwidth, sq_distances
from ._base import BaseReweighting

__all__ = ["GaussianRW", "KDERW", "gaussian_log_density"]


def _covariance(X: np.ndarray, shrinkage) -> np.ndarray:
    """The covariance of the rows: empirical (``None``), Ledoit-Wolf on the standardised
    features rescaled back (``"auto"``: the shrinkage towards the correlation's identity is
    scale-free), or a fixed shrinkage towards ``mu I`` (a float in ``[0, 1]``)."""
    if shrinkage is None:
        return empirical_covariance(X)
    if shrinkage == "auto":
        scale = X.std(axis=0)
        scale[scale == 0.0] = 1.0
        S = ledoit_wolf((X - X.mean(axis=0)) / scale)[0]
        return scale[:, None] * S * scale[None, :]
    return shrunk_covariance(empirical_covariance(X), shrinkage=float(shrinkage))


def _factored_covariance(X: np.ndarray, shrinkage) -> tuple[np.ndarray, np.ndarray]:
    """The covariance of :func:`_covariance` as ``diag(a) + U U^T`` (``U``: ``d x n``), never
    a ``d x d`` matrix: for fewer rows than features, ``O(n^2 d)``.

    With ``C = Xc^T Xc / n`` (``Xc`` the centred rows) a fixed shrinkage ``s`` is
    ``s mu I + (1 - s) C``, ``mu = trace(C) / d``; ``"auto"`` is Ledoit-Wolf's ``s`` of the
    standardised rows ``Z = Xc D^-1`` (read from their ``n x n`` Gram matrix ``G``:
    ``||Z^T Z||_F = ||G||_F``, ``sum_i ||z_i||^4 = sum_i G_ii^2``), rescaled back:
    ``s mu D^2 + (1 - s) C``. ``None`` has no factored form (singular)."""
    n, d = X.shape
    Xc = X - X.mean(axis=0)
    if shrinkage == "auto":
        scale = Xc.std(axis=0)
        scale[scale == 0.0] = 1.0
        Z = Xc / scale
        G = Z @ Z.T
        trace = float(np.trace(G)) / n                 # trace of Z^T Z / n
        mu = trace / d
        beta_ = float(np.sum(np.diag(G) ** 2))
        delta_ = float(np.sum(G * G)) / n ** 2
        beta = (beta_ / n - delta_) / (d * n)
        delta = (delta_ - 2.0 * mu * trace + d * mu ** 2) / d
        beta = min(beta, delta)
        s = 0.0 if beta == 0 else beta / delta
        a = s * mu * scale ** 2
    else:
        s = float(shrinkage)
        a = np.full(d, s * float(np.sum(Xc * Xc)) / (n * d))
    return a, np.sqrt((1.0 - s) / n) * Xc.T


def _factored_log_density(X: np.ndarray, mean: np.ndarray, a: np.ndarray,
                          U: np.ndarray) -> np.ndarray:
    """``log N(x; mean, diag(a) + U U^T)`` by the Woodbury identity and the matrix determinant
    lemma: one ``k x k`` Cholesky factor (``k`` the columns of ``U``), ``O(k^2 d + n k d)``."""
    d, k = U.shape
    if np.any(a <= 0):
        raise ValueError("The covariance of a domain is singular (a constant domain): use a "
                         "shrinkage in (0, 1] or more varied rows.")
    Ua = U / a[:, None]
    M = U.T @ Ua
    M[np.diag_indices_from(M)] += 1.0
    c, low = cho_factor(M, lower=True)
    V = X - mean
    W = V @ Ua                                          # U^T diag(1/a) v, per row
    maha = np.einsum("ij,ij->i", V, V / a) - np.einsum("ij,ji->i", W, cho_solve((c, low), W.T))
    logdet = float(np.sum(np.log(a))) + 2.0 * float(np.sum(np.log(np.diag(c))))
    return -0.5 * (maha + logdet + d * np.log(2.0 * np.pi))


def gaussian_log_density(X: np.ndarray, mean: np.ndarray, cov: np.ndarray) -> np.ndarray:
    """``log N(x; mean, cov)`` of every row, through a Cholesky factor (``O(d^3 + n d^2)``).

    Raises
    ------
    ValueError
        ``cov`` is not positive definite (the message names the fix: shrinkage).

    Examples
    --------
    >>> from scipy.stats import multivariate_normal
    >>> X = np.array([[0.0, 1.0], [1.0, -1.0]]); C = np.array([[2.0, 0.5], [0.5, 1.0]])
    >>> bool(np.allclose(gaussian_log_density(X, np.zeros(2), C),
    ...                  multivariate_normal(np.zeros(2), C).logpdf(X)))
    True
    """
    d = X.shape[1]
    try:
        c, low = cho_factor(cov, lower=True)
    except np.linalg.LinAlgError:
        raise ValueError("The covariance of a domain is singular (fewer rows than features, or "
                         "a constant feature): use shrinkage='auto' or a shrinkage in (0, 1].")\
            from None
    diff = X - mean
    sol = cho_solve((c, low), diff.T)
    maha = np.einsum("ij,ji->i", diff, sol)
    logdet = 2.0 * np.sum(np.log(np.diag(c)))
    return -0.5 * (maha + logdet + d * np.log(2.0 * np.pi))


class GaussianRW(BaseReweighting):
    """Importance weights from one Gaussian per domain (Shimodaira, 2000):
    ``w(x) = N(x; m_t, S_t) / N(x; m_s, S_s)``.

    ``fit(X, y, sample_domain)`` estimates the mean and covariance of the source rows
    (``sample_domain > 0``, several sources pooled) and of the target rows
    (``sample_domain < 0``); ``weights_`` holds the ratio on the training source rows, computed
    in log space and scaled to mean 1 over them, and ``1.0`` on the target rows.
    ``transform`` returns ``X`` unchanged: the weights reach the classifier of
    :class:`~shiftlearn.compose.DomainAdaptationClassifier` or
    :func:`~shiftlearn.compose.make_da_pipeline` as its ``sample_weight``.

    Parameters
    ----------
    shrinkage : "auto", float in [0, 1] or None, default="auto"
        Covariance estimate of each domain: ``"auto"`` the Ledoit-Wolf shrinkage of the
        standardised features (rescaled back); a float a fixed shrinkage towards
        ``trace(S)/d I``; ``None`` the empirical covariance (singular with fewer rows than
        features).

    Attributes
    ----------
    weights_ : ndarray of shape (n_samples,)
        The training rows' weights (mean 1 over the source rows, 1 on the target rows).
    mean_source_, mean_target_ : ndarray of shape (n_features,)
    covariance_source_, covariance_target_ : ndarray of shape (n_features, n_features)
        Built on access when the domain has fewer rows than features (the fit keeps the
        covariance as ``diag(a) + U U^T`` then, with ``U`` of the domain's rows).
    effective_sample_size_ : float
        Kish's effective sample size of the source rows' weights, ``(sum w)^2 / sum w^2``
        (fit warns below 1% of the source rows, or 2).
    log_scale_ : float
        Log of the mean of the raw ratio over the training source rows (the normalisation
        :meth:`compute_weights` applies).
    n_source_, n_target_ : int
    n_features_in_ : int
    feature_names_in_ : ndarray of str
        Only when ``X`` had string column names.

    Raises
    ------
    ValueError
        No source rows; NaN/inf in ``X``; a singular covariance with ``shrinkage=None``.

    Notes
    -----
    Cost: ``O(n d^2 + d^3)`` time and ``O(d^2)`` memory for a domain with more rows than
    features (``d x d`` covariances beyond the memory budget are refused up front); with
    fewer rows ``n_k`` than features, ``diag + low rank`` (Woodbury), ``O(n_k^2 d)`` time and
    ``O(n_k d)`` memory: thousands of features with hundreds of rows cost what the rows cost.
    Without target rows every weight is 1, with a warning.

    References
    ----------
    H. Shimodaira, "Improving predictive inference under covariate shift by weighting the
    log-likelihood function", Journal of Statistical Planning and Inference 90(2), 2000.

    Examples
    --------
    >>> import numpy as np
    >>> from shiftlearn.reweighting import GaussianRW
    >>> rng = np.random.default_rng(0)
    >>> X = np.vstack([rng.normal(0, 1, (50, 2)), rng.normal(1, 1, (50, 2))])
    >>> sd = np.r_[np.ones(50, int), -np.ones(50, int)]
    >>> w = GaussianRW().fit(X, sample_domain=sd).weights_
    >>> round(float(w[:50].mean()), 6), bool(w[:50].argmax() == X[:50].sum(axis=1).argmax())
    (1.0, True)
    """

    _parameter_constraints: dict = {
        "shrinkage": [StrOptions({"auto"}), Interval(Real, 0, 1, closed="both"), None],
    }

    def __init__(self, shrinkage="auto"):
        self.shrinkage = shrinkage

    def _fit_ratio(self, Xs, Xt):
        d = Xs.shape[1]
        self.mean_source_ = Xs.mean(axis=0)
        self.mean_target_ = Xt.mean(axis=0)
        self._models = []
        for rows in (Xs, Xt):
            if rows.shape[0] < d and self.shrinkage is not None:
                # fewer rows than features: diag + low rank, never d x d
                self._models.append(("factored", _factored_covariance(rows, self.shrinkage)))
            else:
                check_dense_memory(d, d, 4, f"GaussianRW.fit on {d} features", "",
                                   advice="Reduce the features first (e.g. PCA), or use "
                                          "KDERW.")
                self._models.append(("dense", _covariance(rows, self.shrinkage)))
        return self._ratio(Xs)

    def _log_density(self, X, mean, model):
        kind, cov = model
        if kind == "dense":
            return gaussian_log_density(X, mean, cov)
        return _factored_log_density(X, mean, *cov)

    @staticmethod
    def _dense(model) -> np.ndarray:
        kind, cov = model
        if kind == "dense":
            return cov
        a, U = cov
        return np.diag(a) + U @ U.T

    @property
    def covariance_source_(self) -> np.ndarray:
        """The source rows' covariance, ``d x d`` (built on access on the factored route)."""
        check_is_fitted(self, "mean_source_")
        return self._dense(self._models[0])

    @property
    def covariance_target_(self) -> np.ndarray:
        """The target rows' covariance, ``d x d`` (built on access on the factored route)."""
        check_is_fitted(self, "mean_target_")
        return self._dense(self._models[1])

    def _ratio(self, X):
        check_is_fitted(self, "mean_target_")
        return (self._log_density(X, self.mean_target_, self._models[1])
                - self._log_density(X, self.mean_source_, self._models[0])), True


def _kde_log_sums(X: np.ndarray, centres: np.ndarray, sigma: float) -> np.ndarray:
    """``log sum_j exp(-||x - c_j||^2 / (2 sigma^2))`` for every row of ``X``, in row blocks
    of :data:`shiftlearn.kernels.DEFAULT_CHUNK_BYTES` (memory ``O(block x n_centres)``)."""
    block = max(1, DEFAULT_CHUNK_BYTES // (8 * max(1, centres.shape[0])))
    out = np.empty(X.shape[0])
    for start in range(0, X.shape[0], block):
        D = sq_distances(X[start:start + block], centres)
        D *= -1.0 / (2.0 * sigma * sigma)
        out[start:start + block] = logsumexp(D, axis=1)
    return out


class KDERW(BaseReweighting):
    """Importance weights from a Gaussian kernel density estimate per domain:
    ``w(x) = p_t(x) / p_s(x)`` with ``p(x) = 1/n sum_j N(x; x_j, h^2 I)``.

    ``fit(X, y, sample_domain)`` keeps the source rows and the target rows as the two
    estimates' centres (one bandwidth ``h`` for both, so the Gaussian's normalising constant
    cancels in the ratio); ``weights_`` holds the ratio on the training source rows, computed
    in log space (log-sum-exp) and scaled to mean 1 over them, and ``1.0`` on the target rows.
    ``transform`` returns ``X`` unchanged.

    Parameters
    ----------
    bandwidth : float or {"scott", "median", "median_sq", "mean", "n_features"}, default="scott"
        ``h``. ``"scott"``: ``s n^(-1/(d+4))`` with ``s`` the root mean feature variance of the
        pooled rows and ``n`` their number (Scott's rule); the other rules are the library's
        median heuristics on the pooled rows (:func:`shiftlearn.kernels.median_heuristic`).

    Attributes
    ----------
    weights_ : ndarray of shape (n_samples,)
    bandwidth_ : float
        ``h`` used.
    X_source_, X_target_ : ndarray
        The centres of the two estimates.
    effective_sample_size_ : float
        Kish's effective sample size of the source rows' weights, ``(sum w)^2 / sum w^2``
        (fit warns below 1% of the source rows, or 2).
    log_scale_ : float
    n_source_, n_target_ : int
    n_features_in_ : int
    feature_names_in_ : ndarray of str
        Only when ``X`` had string column names.

    Raises
    ------
    ValueError
        No source rows; NaN/inf in ``X``.

    Notes
    -----
    Cost: ``O(n_s (n_s + n_t) d)`` time (one distance matrix per domain, by row blocks),
    ``O(block x n)`` memory; ``compute_weights`` of ``m`` rows ``O(m (n_s + n_t) d)``.
    The source density at a training source row includes that row (as scikit-learn's
    ``KernelDensity.score_samples``).

    References
    ----------
    H. Shimodaira, "Improving predictive inference under covariate shift by weighting the
    log-likelihood function", Journal of Statistical Planning and Inference 90(2), 2000
    (the weights as a density ratio); D. W. Scott, "Multivariate Density Estimation", 1992
    (the bandwidth rule).

    Examples
    --------
    >>> import numpy as np
    >>> from shiftlearn.reweighting import KDERW
    >>> rng = np.random.default_rng(0)
    >>> X = np.vstack([rng.normal(0, 1, (50, 2)), rng.normal(1, 1, (50, 2))])
    >>> sd = np.r_[np.ones(50, int), -np.ones(50, int)]
    >>> KDERW().fit(X, sample_domain=sd).weights_.shape
    (100,)
    """

    _parameter_constraints: dict = {
        "bandwidth": [Interval(Real, 0, None, closed="neither"),
                      StrOptions({"scott", *BANDWIDTH_RULES})],
    }

    def __init__(self, bandwidth="scott"):
        self.bandwidth = bandwidth

    def _fit_ratio(self, Xs, Xt):
        X = np.vstack([Xs, Xt])
        if self.bandwidth == "scott":
            s = float(np.sqrt(X.var(axis=0).mean()))
            h = s * X.shape[0] ** (-1.0 / (X.shape[1] + 4)) if s > 0 else 1.0
        else:
            h = resolve_bandwidth(self.bandwidth, X, kernel="rbf")
        self.bandwidth_ = float(h)
        self.X_source_, self.X_target_ = Xs, Xt
        return self._ratio(Xs)

    def _ratio(self, X):
        check_is_fitted(self, "bandwidth_")
        ns, nt = self.X_source_.shape[0], self.X_target_.shape[0]
        return (_kde_log_sums(X, self.X_target_, self.bandwidth_) - np.log(nt)
                - _kde_log_sums(X, self.X_source_, self.bandwidth_) + np.log(ns)), True
