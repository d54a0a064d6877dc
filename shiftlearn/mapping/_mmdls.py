"""The location-scale conditional-shift map of Zhang, Schölkopf, Muandet and Wang (ICML 2013),
found by minimising the MMD between the mapped source rows and the target rows.

The design decisions and measurements are in ``docs/dev/mapping.md``.
"""

from __future__ import annotations

from numbers import Integral, Real

import numpy as np
import scipy.optimize
from sklearn.base import BaseEstimator, OneToOneFeatureMixin, TransformerMixin
from sklearn.utils.multiclass import type_of_target
from sklearn.utils.validation import check_is_fitted

from .._constraints import BandwidthSpec, Interval, check_params
from .._resources import check_dense_memory
from .._validation import check_sample_domain, check_X, unlabeled_mask
from ..kernels import BANDWIDTH_RULES, gamma_from_sigma, resolve_bandwidth, sq_distances
from ._common import fit_rows, no_target_warning, sides

__all__ = ["MMDLS", "mmdls_objective"]


def _sqdist(A: np.ndarray, B: np.ndarray) -> np.ndarray:
    """``||a_i - b_j||^2`` by one product (clipped at 0), without scikit-learn's per-call
    validation (the objective is evaluated hundreds of times)."""
    D = (A * A).sum(axis=1)[:, None] + (B * B).sum(axis=1)[None, :] - 2.0 * (A @ B.T)
    return np.maximum(D, 0.0, out=D)


def mmdls_objective(params: np.ndarray, Xs: np.ndarray, Xt: np.ndarray, R: np.ndarray,
                    a: np.ndarray, sigma: float, prior_weight: float,
                    ktt: float | None = None) -> tuple[float, np.ndarray, float]:
    """MMD-LS's objective, its gradient and the MMD² part, at ``params = (G, H)`` raveled.

    With ``W = R G``, ``B = R H`` (``m x d``; ``G``, ``H`` are ``k x d``; ``R`` given as an
    ``m x k`` matrix, or for one-hot classes as the ``m`` class codes), the mapped source
    rows ``Z = W * X_s + B`` (elementwise), the Gaussian kernel ``k`` of bandwidth ``sigma``,
    the source weights ``a`` (``m``, summing to about 1) and ``b = 1/n`` on the target rows::

        J = a^T K_ZZ a - 2 b^T K_tZ a + b^T K_tt b + (prior_weight / m) (||W - 1||^2 + ||B||^2)

    (the first three terms: the biased MMD² between the weighted mapped source and the target).
    Gradient in ``Z``, with ``P = (a a^T) * K_ZZ`` and ``Q = (a b^T) * K_Zt``::

        dJ/dZ = -(2 / sigma^2) (diag(P 1) Z - P Z - diag(Q 1) Z + Q X_t)

    then ``dJ/dW = dJ/dZ * X_s``, ``dJ/dB = dJ/dZ`` (plus the penalty's ``2 prior_weight / m``
    terms), ``dJ/dG = R^T dJ/dW``, ``dJ/dH = R^T dJ/dB``. ``O(m (m + n) d + m k d)``;
    ``ktt``, the constant ``b^T K_tt b``, is computed (``O(n^2 d)``) when not given.

    Returns ``(J, gradient (raveled as params), MMD²)``.
    """
    m, d = Xs.shape
    n = Xt.shape[0]
    codes = R.ndim == 1                    # class codes: R is one-hot, R G is G[codes]
    k = int(R.max()) + 1 if codes else R.shape[1]
    G = params[: k * d].reshape(k, d)
    H = params[k * d:].reshape(k, d)
    W = G[R] if codes else R @ G
    B = H[R] if codes else R @ H
    Z = W * Xs
    Z += B
    g = gamma_from_sigma(sigma)
    Kzz = np.exp(-g * _sqdist(Z, Z))
    Kzt = np.exp(-g * _sqdist(Z, Xt))
    P = Kzz * np.outer(a, a)
    Q = Kzt * (a[:, None] / n)
    if ktt is None:
        ktt = _ktt_term(Xt, g)
    mmd = float(np.sum(P) - 2.0 * np.sum(Q) + ktt)
    pen = (float(np.sum((W - 1.0) ** 2)) + float(np.sum(B ** 2))) / m
    # dJ/dZ = -(4 g) (diag(P 1 - Q 1) Z - [P, -Q] [Z; X_t]), with 2 / sigma^2 = 4 g
    dZ = (P.sum(axis=1) - Q.sum(axis=1))[:, None] * Z
    dZ -= np.hstack([P, -Q]) @ np.vstack([Z, Xt])
    dZ *= -4.0 * g
    c = 2.0 * prior_weight / m
    dB = dZ + c * B
    dW = dZ * Xs
    dW += c * (W - 1.0)
    if codes:
        gW = np.zeros((k, d))
        gB = np.zeros((k, d))
        np.add.at(gW, R, dW)
        np.add.at(gB, R, dB)
    else:
        gW, gB = R.T @ dW, R.T @ dB
    return mmd + prior_weight * pen, np.concatenate([gW.ravel(), gB.ravel()]), mmd


def _ktt_term(Xt: np.ndarray, g: float) -> float:
    """``b^T K_tt b`` (the target's constant term), ``O(n^2 d)``."""
    return float(np.mean(np.exp(-g * _sqdist(Xt, Xt))))


class MMDLS(OneToOneFeatureMixin, TransformerMixin, BaseEstimator):
    """Location-scale conditional-shift map (Zhang et al., ICML 2013): each source row moved by
    a label-dependent affine map ``x -> w(y) * x + b(y)`` (elementwise) chosen to minimise the
    MMD between the mapped source rows and the target rows.

    ``fit(X, y, sample_domain)`` parametrises ``W = R G``, ``B = R H`` over the labeled source
    rows: for class labels ``R`` is the one-hot class matrix (one scale and one offset vector
    per class); for a continuous label ``R = L (L + reg I)^{-1}`` with ``L`` the Gaussian kernel
    of the source labels (median bandwidth), so ``w(y)`` and ``b(y)`` are smooth in ``y``. It
    minimises :func:`mmdls_objective` (the MMD² between the mapped source rows, weighted by
    ``a = Omega^T 1 / m`` with the paper's ``Omega = R`` (``1/m`` for classes), and the
    target rows, with the Gaussian kernel of
    ``bandwidth``, plus ``prior_weight`` times the penalty towards the identity map) over ``G``,
    ``H`` with scipy's L-BFGS-B and the analytic gradient, from the identity (``G = 1``,
    ``H = 0``). ``fit_transform`` maps the source rows (``sample_domain > 0``) and returns the
    target rows as they are; ``transform(X)`` treats ``X`` as target rows (the identity);
    ``transform(X, sample_domain=sd)`` maps each row with ``sd > 0`` with the map of its
    nearest fitted source row (its label is not known at ``transform``).

    Parameters
    ----------
    bandwidth : float or str (a rule of BANDWIDTH_RULES, "<f>*<rule>"), default="median"
        Bandwidth ``sigma`` of the Gaussian kernel of the MMD, or the rule applied to the
        pooled source and target rows.
    reg : float > 0, default=1e-3
        Ridge of the label kernel, ``R = L (L + reg I)^{-1}`` (the paper's ``lambda``; used
        for a continuous label only).
    prior_weight : float >= 0, default=1e-3
        Weight of the penalty ``(||W - 1||^2 + ||B||^2) / m`` that holds the map near the
        identity.
    max_iter : int >= 1, default=200
        L-BFGS-B iterations.
    tol : float > 0, default=1e-9
        L-BFGS-B's tolerance (scipy's ``tol``: ``ftol`` and ``gtol``).

    Attributes
    ----------
    sigma_ : float
    classes_ : ndarray or None
        The source classes (``None`` for a continuous label).
    scales_, offsets_ : ndarray of shape (n_source_rows, n_features)
        ``W`` and ``B`` of the fitted source rows (in row order).
    X_source_ : ndarray of shape (n_source_rows, n_features)
        The fitted source rows (``transform`` maps a new source row as its nearest one).
    mmd_before_, mmd_ : float
        The weighted biased MMD² between source and target before (identity map) and after.
    n_iter_ : int
        L-BFGS-B iterations run.
    n_features_in_ : int
    feature_names_in_ : ndarray of str
        Only when ``X`` had string column names.

    Raises
    ------
    ValueError
        A source row without a label while there are target rows (the map depends on it); a
        label that is neither classes nor continuous; NaN/inf in ``X``; a fit beyond the
        memory budget.

    Notes
    -----
    Without target rows the map is the identity, with a warning. Cost, ``m`` source and ``n``
    target rows of ``d`` features, ``k`` classes (``k = m`` for a continuous label), ``T``
    L-BFGS-B evaluations: ``O(T (m (m + n) d + m k d))`` time, plus ``O(m^3)`` for ``R`` of a
    continuous label, and ``m (m + n)`` floats of kernels; ``transform`` of ``q`` source rows
    ``O(q m d)`` (the nearest fitted source row).

    References
    ----------
    K. Zhang, B. Schölkopf, K. Muandet and Z. Wang, "Domain Adaptation under Target and
    Conditional Shift", ICML 2013, Section 4 (location-scale conditional shift): the
    transformation ``x^new = W * x^s + B`` with ``W = R G``, ``B = R H``,
    ``R = L (L + lambda I)^{-1}``; Eq. (8), the objective
    ``(1/m^2) 1^T Omega K~ Omega^T 1 - (2/(mn)) 1^T K~^c Omega^T 1`` (+ const) with
    ``Omega = R``, ``K~`` the kernel of the mapped source rows and ``K~^c`` the cross kernel
    with the target rows; regularised towards ``W = 1``, ``B = 0``.

    Examples
    --------
    >>> import numpy as np
    >>> from shiftlearn.mapping import MMDLS
    >>> rng = np.random.default_rng(0)
    >>> Xs = rng.normal(size=(60, 2))
    >>> X = np.vstack([Xs, 2.0 * rng.normal(size=(60, 2)) + 1.0])
    >>> y = np.r_[(Xs[:, 0] > 0).astype(int), -np.ones(60, int)]
    >>> sd = np.r_[np.ones(60, int), -np.ones(60, int)]
    >>> m = MMDLS().fit(X, y, sd)
    >>> bool(m.mmd_ < 0.2 * m.mmd_before_)
    True
    """

    # scikit-learn metadata routing: sample_domain is requested by default
    __metadata_request__fit = {"sample_domain": True}
    __metadata_request__transform = {"sample_domain": True}

    _parameter_constraints: dict = {
        "bandwidth": [BandwidthSpec(BANDWIDTH_RULES)],
        "reg": [Interval(Real, 0, None, closed="neither")],
        "prior_weight": [Interval(Real, 0, None, closed="left")],
        "max_iter": [Interval(Integral, 1, None, closed="left")],
        "tol": [Interval(Real, 0, None, closed="neither")],
    }

    def __init__(self, bandwidth="median", reg=1e-3, prior_weight=1e-3, max_iter=200, tol=1e-9):
        self.bandwidth = bandwidth
        self.reg = reg
        self.prior_weight = prior_weight
        self.max_iter = max_iter
        self.tol = tol

    def fit(self, X, y=None, sample_domain=None):
        """Fit the label-dependent location-scale map of the source rows.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)
            Source labels (classes or a continuous value); ``-1`` (or NaN) marks unlabeled
            rows, from which ``sample_domain`` is inferred when it is omitted.
        sample_domain : array-like of shape (n_samples,), optional
            Positive = source, negative = target.

        Returns
        -------
        self
        """
        self._fit(X, y, sample_domain)
        return self

    def _fit(self, X, y, sample_domain):
        check_params(self)
        X, y, sd = fit_rows(self, X, y, sample_domain)
        X = X.astype(np.float64, copy=False)
        src, tgt = sides(sd)
        m, n, d = int(src.sum()), int(tgt.sum()), X.shape[1]
        Xs = X[src]
        self.X_source_ = Xs
        self.classes_ = None
        self.n_iter_ = 0
        self.scales_, self.offsets_ = np.ones((m, d)), np.zeros((m, d))
        if n == 0 or m == 0:
            if n == 0:
                no_target_warning("MMDLS")
            self.sigma_ = None
            self.mmd_before_ = self.mmd_ = 0.0
            return X, sd
        ys = None if y is None else y[src]
        if ys is None or np.any(unlabeled_mask(ys)):
            missing = m if ys is None else int(np.sum(unlabeled_mask(ys)))
            raise ValueError(f"MMDLS maps each source row by its label, and {missing} source "
                             "row(s) have none; give labels to every source row (or drop the "
                             "unlabeled ones).")
        kind = type_of_target(ys)
        continuous = kind == "continuous"
        if not continuous and kind not in ("binary", "multiclass"):
            raise ValueError(f"MMDLS needs class labels or a continuous label on the source "
                             f"rows, got {kind!r}.")
        check_dense_memory(m, m + n + (m if continuous else 0), 4,
                           f"MMDLS.fit on {m} source and {n} target rows", "",
                           advice="Subsample the rows first.")
        Xt = X[tgt]
        self.sigma_ = resolve_bandwidth(self.bandwidth, X)
        if continuous:
            yv = np.asarray(ys, dtype=np.float64)
            ly = resolve_bandwidth("median", yv[:, None]) if np.ptp(yv) > 0 else 1.0
            L = np.exp(-gamma_from_sigma(ly) * sq_distances(yv[:, None]))
            # R = L (L + reg I)^{-1}, symmetric (L and its resolvent commute)
            R = np.linalg.solve(L + float(self.reg) * np.eye(m), L).T
            R = (R + R.T) / 2.0
            a = R.T @ np.full(m, 1.0 / m)
        else:
            self.classes_, R = np.unique(ys, return_inverse=True)
            a = np.full(m, 1.0 / m)
        k = self.classes_.shape[0] if R.ndim == 1 else R.shape[1]
        x0 = np.concatenate([np.ones(k * d), np.zeros(k * d)])
        lam = float(self.prior_weight)
        ktt = _ktt_term(Xt, gamma_from_sigma(self.sigma_))

        def fun(p):
            J, grad, _ = mmdls_objective(p, Xs, Xt, R, a, self.sigma_, lam, ktt)
            return J, grad

        self.mmd_before_ = mmdls_objective(x0, Xs, Xt, R, a, self.sigma_, 0.0, ktt)[2]
        res = scipy.optimize.minimize(fun, x0, jac=True, method="L-BFGS-B", tol=float(self.tol),
                                      options={"maxiter": int(self.max_iter)})
        self.n_iter_ = int(res.nit)
        self.mmd_ = mmdls_objective(res.x, Xs, Xt, R, a, self.sigma_, 0.0, ktt)[2]
        G = res.x[: k * d].reshape(k, d)
        H = res.x[k * d:].reshape(k, d)
        self.scales_, self.offsets_ = (G[R], H[R]) if R.ndim == 1 else (R @ G, R @ H)
        return X, sd

    def fit_transform(self, X, y=None, sample_domain=None):
        """``fit``, then the training rows: source rows mapped, target rows as they are."""
        X, sd = self._fit(X, y, sample_domain)
        Z = np.array(X, dtype=np.float64)
        src = sd > 0
        Z[src] = self.scales_ * Z[src] + self.offsets_
        return Z

    def transform(self, X, sample_domain=None):
        """The rows with ``sample_domain > 0`` mapped (each with the map of its nearest fitted
        source row); the others as given.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        sample_domain : array-like of shape (n_samples,), optional
            ``None``: every row is a target row (returned as it is, as float).

        Returns
        -------
        ndarray of shape (n_samples, n_features)
        """
        check_is_fitted(self, "offsets_")
        X = check_X(X, estimator=self, reset=False)
        Z = np.array(X, dtype=np.float64)
        if sample_domain is None or self.X_source_.shape[0] == 0:
            return Z
        src = check_sample_domain(sample_domain, X.shape[0]) > 0
        if src.any():
            idx = np.argmin(sq_distances(Z[src], self.X_source_), axis=1)
            Z[src] = self.scales_[idx] * Z[src] + self.offsets_[idx]
        return Z
