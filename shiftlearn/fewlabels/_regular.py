"""Regularised transfer of linear and logistic models (Chelba & Acero 2006): the target model
is fitted on the labeled target rows with the source model's coefficients as the prior mean."""

from __future__ import annotations

import warnings
from numbers import Integral, Real

import numpy as np
from scipy import linalg, optimize
from scipy.special import expit, log_expit, logsumexp, softmax
from sklearn import config_context
from sklearn.base import BaseEstimator, ClassifierMixin, RegressorMixin, clone
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import LogisticRegression, Ridge
from sklearn.utils.validation import check_is_fitted

from .._constraints import HasMethods, Interval
from .._linalg import take_rows
from .._validation import check_X
from ._base import fit_rows, score_labeled

__all__ = ["RegularTransferLC", "RegularTransferLR", "ridge_to_prior"]


def ridge_to_prior(X: np.ndarray, y: np.ndarray, theta0: np.ndarray, lam: float) -> np.ndarray:
    """``argmin_theta ||y - [X, 1] theta||^2 + lam ||theta - theta0||^2`` (``theta0`` and the
    result: the coefficients, then the intercept), in closed form.

    With ``theta = theta0 + delta`` and ``r = y - [X, 1] theta0`` it is a ridge regression of
    ``r``: ``delta = (A^T A + lam I)^{-1} A^T r = V diag(s / (s^2 + lam)) U^T r`` with the thin
    SVD ``A = [X, 1] = U diag(s) V^T``. The SVD form is stable whatever the scale of ``X``
    (the normal equations' Cholesky fails once ``lam`` is below the round-off of ``A^T A``,
    e.g. features of size ``1e8``) and costs ``O(m d min(m, d))``: with few labeled rows
    (``m < d``) it is linear in ``d``. With at least twice as many columns as rows the SVD is
    taken through a thin QR of ``A^T`` (the R-SVD: the SVD of the small square factor), as
    backward stable as ``gesdd`` on ``A`` and faster (20 x 4,001: 0.7 against 2.5 ms).
    Raises ``ValueError`` when ``X``, ``y`` or ``theta0`` is not finite.

    Examples
    --------
    >>> X = np.array([[0.0], [1.0]]); y = np.array([0.0, 2.0])
    >>> ridge_to_prior(X, y, np.array([1.0, 0.0]), 1e-12).round(6).tolist()
    [2.0, 0.0]
    """
    m, d = X.shape
    for name, a in (("X", X), ("y", y), ("theta0", theta0)):
        if not np.all(np.isfinite(a)):    # the QR below runs without scipy's own scan
            raise ValueError(f"ridge_to_prior: {name} holds NaN or inf; give finite values.")
    r = y - (X @ theta0[:d] + theta0[d])
    if d + 1 >= 2 * m:                  # few rows, many columns: the R-SVD of A^T = QR
        At = np.empty((d + 1, m), order="F")      # A^T built in LAPACK's order, no copy
        At[:d] = X.T
        At[d] = 1.0
        Q, R = linalg.qr(At, mode="economic", overwrite_a=True, check_finite=False)
        U, sv, Wt = _svd(R.T)           # A = U s (Q W)^T: V = Q W
        return theta0 + Q @ (Wt.T @ (sv / (sv * sv + lam) * (U.T @ r)))
    A = np.hstack([X, np.ones((m, 1), dtype=X.dtype)])
    U, sv, Vt = _svd(A)
    return theta0 + Vt.T @ (sv / (sv * sv + lam) * (U.T @ r))


def _svd(A: np.ndarray):
    """The thin SVD of ``A``, with LAPACK's slower ``gesvd`` where ``gesdd`` (rarely) fails to
    converge."""
    try:
        return linalg.svd(A, full_matrices=False, lapack_driver="gesdd")
    except linalg.LinAlgError:
        return linalg.svd(A, full_matrices=False, lapack_driver="gesvd")


def _source_linear(est, default, X, y, name: str):
    """Fit a clone of ``est`` (or ``default``) on the source rows; its coefficients and
    intercept, or a ``ValueError`` when it is not a linear model. ``X`` and ``y`` have been
    checked (finite, labeled), so the estimator's own finiteness scan is skipped."""
    with config_context(assume_finite=True):
        model = clone(default if est is None else est).fit(X, y)
    if not hasattr(model, "coef_"):
        raise ValueError(f"{name} needs a linear source model (with coef_ and intercept_ "
                         f"once fitted), got {type(model).__name__}.")
    coef = np.atleast_2d(np.asarray(model.coef_, dtype=np.float64))
    intercept = np.atleast_1d(np.asarray(getattr(model, "intercept_", 0.0), dtype=np.float64))
    if intercept.shape[0] == 1 and coef.shape[0] > 1:
        intercept = np.repeat(intercept, coef.shape[0])
    return model, coef, intercept


class RegularTransferLR(RegressorMixin, BaseEstimator):
    """Regularised transfer of a linear regression (Chelba & Acero 2006): ridge regression on
    the labeled target rows shrunk toward the source model instead of toward 0.

    ``estimator`` is fitted on the source rows; its coefficients and intercept
    ``theta_s = (w_s, b_s)`` are the prior. On the ``m`` labeled target rows,
    ``theta = argmin ||y_t - X_t w - b||^2 + prior_weight ||theta - theta_s||^2``, in closed
    form. ``prior_weight -> 0`` gives least squares on the target rows, ``prior_weight -> inf``
    the source model. Unlabeled target rows are ignored.

    Parameters
    ----------
    estimator : regressor or None, default None
        The source model: a linear regressor (``coef_``, ``intercept_``), cloned and fitted on
        the source rows into ``source_estimator_``. ``None`` means
        ``sklearn.linear_model.Ridge()``.
    prior_weight : float > 0, default 1.0
        ``lambda``: the weight of ``||theta - theta_s||^2`` against the target rows' sum of
        squared errors (in the units of ``y`` squared per unit of coefficient squared).

    Attributes
    ----------
    coef_ : ndarray (n_features,), the target model's coefficients.
    intercept_ : float, its intercept.
    source_estimator_ : the fitted source model.
    n_features_in_, feature_names_in_ : as scikit-learn records them.

    Raises
    ------
    ValueError
        No labeled target row (the message says how to pass them), a source model that is
        not linear, non-finite ``X`` or ``y``.

    Notes
    -----
    Cost: the source fit, then ``O(m d min(m, d))`` for the target solve (a thin SVD of the
    labeled target rows, :func:`ridge_to_prior`). The intercept is a coefficient like the
    others (on a column of ones), shrunk toward ``b_s`` with the same weight.

    References
    ----------
    C. Chelba, A. Acero, "Adaptation of maximum entropy capitalizer: little data can help a
    lot", Computer Speech & Language 20(4), 2006: the MAP estimate under a Gaussian prior
    centred on the source parameters, ``N(theta_s, sigma^2 I)``, here with squared loss:
    ``min_theta ||y_t - X_t theta||^2 + lambda ||theta - theta_s||^2`` (``lambda =
    noise variance / sigma^2``), solved by
    ``theta = theta_s + (X_t^T X_t + lambda I)^{-1} X_t^T (y_t - X_t theta_s)``.

    Examples
    --------
    >>> import numpy as np
    >>> X = np.array([[0.0], [1.0], [2.0], [0.5], [1.5]])
    >>> y = np.array([0.0, 1.0, 2.0, 1.0, np.nan]); sd = np.array([1, 1, 1, -2, -2])
    >>> RegularTransferLR(prior_weight=1.0).fit(X, y, sd).predict(X[4:]).shape
    (1,)
    """

    __metadata_request__fit = {"sample_domain": True}

    _parameter_constraints: dict = {
        "estimator": [HasMethods(["fit", "predict"]), None],
        "prior_weight": [Interval(Real, 0, None, closed="neither")],
    }

    def __init__(self, estimator=None, prior_weight: float = 1.0):
        self.estimator = estimator
        self.prior_weight = prior_weight

    def fit(self, X, y, sample_domain=None):
        """Fit the source model on the source rows, then the target model on the labeled
        target rows with the source model as prior.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : array-like of shape (n_samples,), NaN for unlabeled target rows.
        sample_domain : array-like of shape (n_samples,)
            Positive ids for source rows, negative ids for target rows.

        Returns
        -------
        self
        """
        rows = fit_rows(self, X, y, sample_domain, "regression")
        X64 = np.asarray(rows.X, dtype=np.float64)
        self.source_estimator_, coef, intercept = _source_linear(
            self.estimator, Ridge(), take_rows(X64, rows.source), rows.y[rows.source],
            "RegularTransferLR")
        if coef.shape[0] != 1:
            raise ValueError("RegularTransferLR takes a single-output source model; got "
                             f"coefficients of shape {coef.shape}.")
        theta0 = np.r_[coef[0], intercept[0]]
        theta = ridge_to_prior(X64[rows.target], rows.y[rows.target], theta0,
                               float(self.prior_weight))
        self.coef_, self.intercept_ = theta[:-1], float(theta[-1])
        return self

    def predict(self, X) -> np.ndarray:
        """``X coef_ + intercept_``. Cost: ``O(n d)``."""
        check_is_fitted(self, "coef_")
        X = check_X(X, estimator=self, reset=False)
        return X @ self.coef_ + self.intercept_

    def score(self, X, y) -> float:
        """R^2 on the rows that carry a label (NaN rows are skipped)."""
        return score_labeled(self, X, y, "regression")


def _nll(Z, Y, binary):
    """Negative log-likelihood of the rows' scores ``Z`` (a vector of logits for two classes,
    one column per class otherwise) and its gradient in ``Z``."""
    if binary:
        s = 2.0 * Y - 1.0
        return -np.sum(log_expit(s * Z)), expit(Z) - Y
    return -np.sum(np.sum(Y * Z, axis=1) - logsumexp(Z, axis=1)), softmax(Z, axis=1) - Y


def _logistic_objective(theta, A, Y, theta0, lam, binary):
    """Negative log-likelihood of the rows plus ``lam ||theta - theta0||^2``, and its gradient.
    Binary: ``theta`` is one vector and ``Y`` holds 0/1; otherwise ``theta`` is
    ``(K, d + 1)`` flattened and ``Y`` the one-hot labels."""
    diff = theta - theta0
    if binary:
        f, G = _nll(A @ theta, Y, binary)
        g = A.T @ G
    else:
        f, G = _nll(A @ theta.reshape(Y.shape[1], -1).T, Y, binary)
        g = (G.T @ A).ravel()
    return f + lam * diff @ diff, g + 2.0 * lam * diff


def _logistic_objective_rows(delta, B, Z0, Y, lam, binary):
    """:func:`_logistic_objective` in the row space of the labeled rows' matrix ``A = B Q^T``
    (``Q`` orthonormal columns): ``theta = theta0 + Q delta`` (binary) or ``T = T0 + D Q^T``
    (``delta = D`` flattened), so ``A theta = Z0 + B delta`` and ``||theta - theta0|| =
    ||delta||``; the gradient is the full one's row-space coordinates (its other part is 0)."""
    if binary:
        f, G = _nll(Z0 + B @ delta, Y, binary)
        g = B.T @ G
    else:
        f, G = _nll(Z0 + B @ delta.reshape(Y.shape[1], -1).T, Y, binary)
        g = (G.T @ B).ravel()
    return f + lam * delta @ delta, g + 2.0 * lam * delta


def _solve_logistic(A, Y, theta0, lam, binary, options):
    """``argmin`` of :func:`_logistic_objective` by L-BFGS from ``theta0``: ``(theta, nit,
    converged)``. The data term depends on ``theta`` through ``A theta`` only, so the
    optimum is ``theta0`` plus a vector of the row space of ``A``; with fewer rows than
    columns (the few-label case) L-BFGS runs on the coordinates in that space (``m`` per class
    instead of ``d + 1``), from a thin QR of ``A^T``. The same objective and stopping rule:
    the gradient's norm is the same in both coordinates."""
    m, p = A.shape
    K = 1 if binary else Y.shape[1]
    if m >= p:
        res = optimize.minimize(_logistic_objective, theta0, jac=True, method="L-BFGS-B",
                                args=(A, Y, theta0, lam, binary), options=options)
        return res.x, int(res.nit), bool(res.success)
    Q, R = np.linalg.qr(A.T)                     # A = R^T Q^T
    T0 = theta0.reshape(K, p)
    Z0 = (A @ T0.T)[:, 0] if binary else A @ T0.T
    res = optimize.minimize(_logistic_objective_rows, np.zeros(K * m), jac=True,
                            method="L-BFGS-B", args=(R.T, Z0, Y, lam, binary), options=options)
    theta = (T0 + res.x.reshape(K, m) @ Q.T).ravel()
    return theta, int(res.nit), bool(res.success)


class RegularTransferLC(ClassifierMixin, BaseEstimator):
    """Regularised transfer of a logistic regression (Chelba & Acero 2006): the target model's
    likelihood on the labeled target rows under a Gaussian prior centred on the source model.

    ``estimator`` is fitted on the source rows; its coefficients and intercepts ``Theta_s`` are
    the prior. On the labeled target rows, ``Theta = argmin -sum_i log p(y_i | x_i; Theta) +
    prior_weight ||Theta - Theta_s||^2`` (L-BFGS from ``Theta_s``). Two classes: one
    coefficient vector, ``p(1 | x) = sigmoid(w^T x + b)``; more: one row per class,
    ``p(c | x) = softmax_c(W x + b)``. Unlabeled target rows are ignored.

    Parameters
    ----------
    estimator : classifier or None, default None
        The source model: a linear classifier (``coef_``, ``intercept_``), cloned and fitted
        on the source rows into ``source_estimator_``. ``None`` means
        ``sklearn.linear_model.LogisticRegression()``.
    prior_weight : float > 0, default 1.0
        ``lambda``: the weight of ``||Theta - Theta_s||^2`` against the target rows' summed
        log-loss (the prior's variance is ``1 / (2 lambda)``).
    max_iter : int, default 1000
        L-BFGS iteration cap (a ``ConvergenceWarning`` when reached).
    tol : float > 0, default 1e-6
        L-BFGS stopping tolerance on the projected gradient (the relative decrease of the
        objective stops it only at round-off level).

    Attributes
    ----------
    coef_ : ndarray (1, n_features) for two classes, (n_classes, n_features) otherwise.
    intercept_ : ndarray (1,) or (n_classes,).
    classes_ : ndarray, the labels of the source rows and the labeled target rows.
    source_estimator_ : the fitted source model (``None`` when the source rows hold a single
        class: the prior is then 0, plain L2-regularised logistic regression on the labeled
        target rows).
    n_iter_ : int, L-BFGS iterations.
    n_features_in_, feature_names_in_ : as scikit-learn records them.

    Raises
    ------
    ValueError
        No labeled target row (the message says how to pass them), fewer than two classes
        among the labeled rows, a source model that is not linear, non-finite ``X``.

    Notes
    -----
    Cost: the source fit, then per L-BFGS iteration ``O(m d K)`` on the ``m`` labeled target
    rows (``K = 1`` for two classes); with fewer labeled target rows than features, one thin QR
    (``O(m^2 d)``) and ``O(m^2 K)`` per iteration: the optimum differs from the prior only in
    the row space of the labeled rows, where L-BFGS then runs. The intercepts are coefficients
    like the others, shrunk toward the source's. A class of the labeled rows that the source
    model did not see gets the prior 0; with more than two classes and a two-class source model,
    the source's ``(w, b)`` becomes the rows ``-(w, b)/2`` and ``(w, b)/2`` of its two classes
    (the same probabilities between them).

    References
    ----------
    C. Chelba, A. Acero, "Adaptation of maximum entropy capitalizer: little data can help a
    lot", Computer Speech & Language 20(4), 2006: maximise
    ``sum_i log p(y_i | x_i; Theta) - sum_k (Theta_k - Theta_{s,k})^2 / (2 sigma^2)``, the
    MAP estimate under the prior ``N(Theta_s, sigma^2 I)``; here
    ``lambda = 1 / (2 sigma^2)``.

    Examples
    --------
    >>> import numpy as np
    >>> X = np.array([[0.0], [1.0], [0.2], [1.2], [0.3], [1.1]])
    >>> y = np.array([0, 1, 0, 1, -1, -1]); sd = np.array([1, 1, -2, -2, -2, -2])
    >>> RegularTransferLC().fit(X, y, sd).predict(X[4:]).shape
    (2,)
    """

    __metadata_request__fit = {"sample_domain": True}

    _parameter_constraints: dict = {
        "estimator": [HasMethods(["fit", "predict"]), None],
        "prior_weight": [Interval(Real, 0, None, closed="neither")],
        "max_iter": [Interval(Integral, 1, None, closed="left")],
        "tol": [Interval(Real, 0, None, closed="neither")],
    }

    def __init__(self, estimator=None, prior_weight: float = 1.0, *, max_iter: int = 1000,
                 tol: float = 1e-6):
        self.estimator = estimator
        self.prior_weight = prior_weight
        self.max_iter = max_iter
        self.tol = tol

    def _prior(self, coef, intercept, src_classes) -> np.ndarray:
        K, d = self.classes_.shape[0], coef.shape[1]
        src = np.hstack([coef, intercept[:, None]])
        pos = np.searchsorted(self.classes_, src_classes)
        if K == 2:
            return src[0] if src.shape[0] == 1 else src[1] - src[0]
        T = np.zeros((K, d + 1))
        if src.shape[0] == 1:           # a two-class source model among more classes
            T[pos[0]], T[pos[1]] = -src[0] / 2, src[0] / 2
        else:
            T[pos] = src
        return T.ravel()

    def fit(self, X, y, sample_domain=None):
        """Fit the source model on the source rows, then the target model on the labeled
        target rows with the source model as prior.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : array-like of shape (n_samples,), ``-1`` (or NaN, ``""``) for unlabeled rows.
        sample_domain : array-like of shape (n_samples,)
            Positive ids for source rows, negative ids for target rows.

        Returns
        -------
        self
        """
        rows = fit_rows(self, X, y, sample_domain, "classification")
        X64 = np.asarray(rows.X, dtype=np.float64)
        self.classes_ = np.unique(rows.y[rows.source | rows.target])
        if self.classes_.shape[0] < 2:
            raise ValueError("RegularTransferLC needs two classes among the labeled rows; got "
                             f"only {self.classes_.tolist()}.")
        K, d = self.classes_.shape[0], X64.shape[1]
        if np.unique(rows.y[rows.source]).shape[0] < 2:
            # one class among the source rows says nothing about the boundary: prior 0
            self.source_estimator_ = None
            theta0 = np.zeros((d + 1) * (1 if K == 2 else K))
        else:
            self.source_estimator_, coef, intercept = _source_linear(
                self.estimator, LogisticRegression(), take_rows(X64, rows.source),
                rows.y[rows.source], "RegularTransferLC")
            theta0 = self._prior(coef, intercept, self.source_estimator_.classes_)
        Xt = X64[rows.target]
        A = np.hstack([Xt, np.ones((Xt.shape[0], 1))])
        codes = np.searchsorted(self.classes_, rows.y[rows.target])
        binary = self.classes_.shape[0] == 2
        Y = codes.astype(np.float64) if binary else np.eye(self.classes_.shape[0])[codes]
        theta, nit, converged = _solve_logistic(
            A, Y, theta0, float(self.prior_weight), binary,
            {"maxiter": self.max_iter, "gtol": self.tol, "ftol": 64 * np.finfo(np.float64).eps})
        if not converged and nit >= self.max_iter:
            warnings.warn(f"RegularTransferLC: L-BFGS stopped at max_iter={self.max_iter} "
                          "before tol was reached; raise max_iter.", ConvergenceWarning,
                          stacklevel=2)
        T = theta.reshape(1 if binary else self.classes_.shape[0], -1)
        self.coef_, self.intercept_ = T[:, :-1].copy(), T[:, -1].copy()
        self.n_iter_ = nit
        return self

    def decision_function(self, X) -> np.ndarray:
        """``X coef_^T + intercept_``: shape (n,) for two classes, (n, n_classes) otherwise."""
        check_is_fitted(self, "coef_")
        X = check_X(X, estimator=self, reset=False)
        Z = X @ self.coef_.T + self.intercept_
        return Z[:, 0] if Z.shape[1] == 1 else Z

    def predict_proba(self, X) -> np.ndarray:
        """Sigmoid (two classes) or softmax of the decision function, columns in
        ``classes_`` order. Cost: ``O(n d K)``."""
        Z = self.decision_function(X)
        if Z.ndim == 1:
            p = expit(Z)
            return np.column_stack([1.0 - p, p])
        return softmax(Z, axis=1)

    def predict(self, X) -> np.ndarray:
        """The most probable class."""
        proba = self.predict_proba(X)
        return self.classes_[np.argmax(proba, axis=1)]

    def score(self, X, y) -> float:
        """Accuracy on the rows that carry a label (unlabeled rows are skipped)."""
        return score_labeled(self, X, y, "classification")
