"""Logistic regression solved in the row space of its training rows (d >> n).

The design decisions and measurements are in ``docs/dev/linear_model.md``.
"""

from __future__ import annotations

import numpy as np
import scipy.linalg as sl
from scipy import sparse
from sklearn.linear_model import LogisticRegression
from sklearn.utils.validation import validate_data

from .._warm import unique_l2_optimum

__all__ = ["RowSpaceLogisticRegression", "row_space_basis"]

#: the Cholesky factor is used when its reciprocal condition number is at least this (then
#: the round-off of the back-transform is about ``n eps / RCOND_MIN**2``, 1e-7 at n = 1000)
RCOND_MIN = 1e-3
#: eigen-directions of the Gram matrix below this share of its largest eigenvalue are
#: dropped (rows that repeat or nearly so): their part of the fitted scores is at most of
#: the order of this share
EIG_FLOOR = 1e-10


def row_space_basis(X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(Z, T)``, ``Z`` of shape ``(n, r)`` and ``T`` of shape ``(n, r)``, such that the
    columns of ``X^T T`` are an orthonormal basis of the span of the rows of ``X``: every
    ``beta`` in that span is ``X^T T g`` with ``X beta = Z g`` and ``||beta|| = ||g||``.

    From the Gram matrix ``G = X X^T`` (``O(n^2 d)``): its Cholesky factor ``G = L L^T``
    (``Z = L``, ``T = L^{-T}``) when well conditioned (reciprocal condition of ``L`` at least
    :data:`RCOND_MIN`), else its eigen-decomposition ``G = V diag(w) V^T`` restricted to
    ``w > EIG_FLOOR max(w)`` (``Z = V_r w_r^{1/2}``, ``T = V_r w_r^{-1/2}``, ``r`` the rank
    kept), in float64.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> X, g = rng.normal(size=(3, 8)), rng.normal(size=3)
    >>> Z, T = row_space_basis(X)
    >>> beta = X.T @ T @ g
    >>> bool(np.allclose(X @ beta, Z @ g) and np.isclose(beta @ beta, g @ g))
    True
    """
    X = np.asarray(X, dtype=np.float64)
    G = X @ X.T
    try:
        L = sl.cholesky(G, lower=True, check_finite=False)
        rcond, info = sl.lapack.dtrcon(L, norm="1", uplo="L")
        if info == 0 and rcond >= RCOND_MIN:
            T = sl.solve_triangular(L, np.eye(L.shape[0]), lower=True, check_finite=False).T
            return L, T
    except sl.LinAlgError:
        pass
    w, V = sl.eigh(G, check_finite=False)
    keep = w > EIG_FLOOR * max(float(w[-1]), 0.0)
    if not keep.any():                          # every row zero: one direction, weight 0
        keep[-1] = True
        w = np.ones_like(w)
    root = np.sqrt(w[keep])
    return V[:, keep] * root, V[:, keep] / root


class RowSpaceLogisticRegression(LogisticRegression):
    """scikit-learn's ``LogisticRegression``, solved in the span of the training rows when
    the features outnumber them.

    With the L2 penalty the objective ``C sum_i s_i loss(y_i, x_i . beta + b) + ||beta||^2 / 2``
    depends on ``beta`` only through the scores ``X beta`` and its norm, so its minimiser
    lies in the span of the rows: ``beta = X^T T g`` with ``X beta = Z g`` and
    ``||beta|| = ||g||`` (:func:`row_space_basis`). ``fit`` then fits scikit-learn's own
    solver on ``Z`` (``n x r``, ``r <= n``) instead of ``X`` (``n x d``) and maps the
    coefficients back: the same problem, the same unique minimiser, and solver iterations
    that cost ``O(n r)`` instead of ``O(n d)`` (the limited-memory BFGS of ``lbfgs`` also
    keeps vectors of ``r`` instead of ``d`` entries per class).

    The row space is used when ``2 n_samples <= n_features``, ``X`` is dense, the penalty is
    L2 with a finite ``C`` and the solver is not liblinear; otherwise ``fit`` is
    scikit-learn's. Every parameter, attribute and method is ``LogisticRegression``'s.

    What differs: the solver's stopping rule (its largest gradient entry below ``tol``) is
    met in the coordinates ``g``, where the gradient has the same Euclidean norm in ``r``
    entries per coefficient row instead of ``d``. ``tol`` is applied there multiplied by
    ``sqrt((d + 1) / (r + 1))`` (``+ 1``: the intercept, when fitted), so that both fits stop
    with the same bound on the gradient's Euclidean norm, ``sqrt(K (d + 1)) tol`` for ``K``
    coefficient rows. The iterates themselves are scikit-learn's (L-BFGS does not depend on
    the orthonormal basis), but the stopping point may differ by a few iterations;
    ``n_iter_`` counts the row-space iterations. Both stop within the solver's tolerance of
    the one minimiser, and a row within that tolerance of a class boundary may be predicted
    differently. ``warm_start`` starts from the last ``coef_`` projected on the new rows'
    span (what of it lies outside has no effect on the scores).

    Cost: the Gram matrix ``O(n^2 d)`` and its factor ``O(n^3)`` once per ``fit``, then
    ``O(n r K)`` per solver iteration for ``K`` classes; the coefficients back in ``O(n d K)``.
    Prediction costs what ``LogisticRegression``'s does.

    Raises
    ------
    ValueError
        What ``LogisticRegression.fit`` raises (checked on ``X`` as given: NaN/inf, a single
        class, mismatched lengths).

    References
    ----------
    T. Hastie and R. Tibshirani, "Efficient quadratic regularization for expression arrays",
    Biostatistics 5(3), 2004, Sec. 3: the L2-penalised fit of a loss of ``X beta`` lies in the
    row space, so the model can be fitted on the ``n x n`` matrix ``R`` of ``X^T = Q R``
    (here the Cholesky factor of ``X X^T``, the same matrix up to an orthogonal rotation).

    Examples
    --------
    >>> from shiftlearn.linear_model import RowSpaceLogisticRegression
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(40, 500)); y = (X[:, 0] > 0).astype(int)
    >>> clf = RowSpaceLogisticRegression().fit(X, y)
    >>> clf.coef_.shape
    (1, 500)
    """

    #: its warm_start is scikit-learn's: ``shiftlearn._warm`` may start it from a last fit
    _sklearn_warm_start = True

    def _in_row_space(self, X) -> bool:
        if sparse.issparse(X) or X.ndim != 2 or 2 * X.shape[0] > X.shape[1]:
            return False
        return unique_l2_optimum(self)

    def fit(self, X, y, sample_weight=None):
        """Fit the model (see ``LogisticRegression.fit``); in the row space when the
        class's conditions hold. Returns ``self``."""
        self._validate_params()
        Xv = validate_data(self, X, accept_sparse=["csr", "csc"], dtype=[np.float64, np.float32],
                           reset=True)
        if not self._in_row_space(Xv):
            return super().fit(X, y, sample_weight=sample_weight)
        n_features, names = Xv.shape[1], getattr(self, "feature_names_in_", None)
        Z, T = row_space_basis(Xv)
        if self.warm_start and getattr(self, "coef_", None) is not None:
            coef = np.asarray(self.coef_, dtype=np.float64)
            if coef.ndim != 2 or coef.shape[1] != n_features:
                raise ValueError(
                    f"warm_start: the last fit's coef_ has shape {coef.shape}, this X has "
                    f"{n_features} features; refit without warm_start.")
            self.coef_ = coef @ (Xv.T @ T)                  # g = T^T X beta
        # the solver stops when its largest gradient entry is below tol; in r coordinates
        # instead of d that bounds the Euclidean norm by sqrt(r + 1) tol instead of
        # sqrt(d + 1) tol: tol is scaled so that the bound is scikit-learn's
        tol, b = self.tol, int(bool(self.fit_intercept))
        self.tol = float(tol) * np.sqrt((n_features + b) / (Z.shape[1] + b))
        try:
            super().fit(Z, y, sample_weight=sample_weight)
        finally:
            self.tol = tol
        self.coef_ = (self.coef_ @ T.T) @ Xv                # beta = X^T T g
        self.n_features_in_ = n_features
        if names is not None:
            self.feature_names_in_ = names
        return self
