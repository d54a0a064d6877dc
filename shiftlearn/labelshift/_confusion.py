"""Label-shift estimation from a classifier's confusion matrix: BBSE and RLLS.

Under label shift the classifier's predictions on the target rows mix its predictions on each
source class with the target proportions: ``mu = C w``, where ``mu_i = p_t(yhat = i)``,
``C_ij = p_s(yhat = i, y = j)`` (the joint confusion matrix on the source) and
``w_j = p_t(y = j) / p_s(y = j)``. BBSE solves it by least squares; RLLS regularises the shift
``theta = w - 1``.
"""

from __future__ import annotations

import warnings
from numbers import Integral, Real

import numpy as np
from scipy.optimize import minimize_scalar
from sklearn.model_selection import KFold, StratifiedKFold

from .._constraints import HasMethods, Interval, StrOptions
from .._stacklevel import user_stacklevel
from ._base import BaseLabelShift, LabelShiftRows, classifier_on, proba_in

__all__ = ["BBSE", "RLLS", "bbse_weights", "cross_fit_confusion", "cross_fit_predictions",
           "rlls_reg", "rlls_shift"]


def _predictions(model, X: np.ndarray, k: int, confusion: str) -> np.ndarray:
    """One row per row of ``X``: the predicted class one-hot (``"hard"``) or the predicted
    probabilities (``"soft"``), over the class codes ``0 .. k - 1``."""
    if confusion == "soft":
        return proba_in(k, model, X)
    out = np.zeros((X.shape[0], k))
    out[np.arange(X.shape[0]), np.asarray(model.predict(X), dtype=np.int64)] = 1.0
    return out


def cross_fit_confusion(estimator, Xs: np.ndarray, codes: np.ndarray, Xt: np.ndarray, k: int,
                        *, cv: int = 5, confusion: str = "hard", random_state=None
                        ) -> tuple[np.ndarray, np.ndarray]:
    """The joint confusion matrix ``C`` (``C_ij = p_s(yhat = i, y = j)``) and the mean
    prediction on the target ``mu`` (``mu_i = p_t(yhat = i)``), cross-fitted.

    The source rows are split into ``min(cv, n_s)`` folds (stratified when every class has
    that many rows); the model of each fold (``estimator`` fitted on the other folds) predicts
    its held-out source rows, so every source row counts in ``C`` without being predicted by a
    model that saw it, and the target rows, averaged over the fold models, so ``mu`` and ``C``
    come from the same models. With one source row there is nothing to hold out: one model
    fitted on it predicts both.

    Parameters
    ----------
    estimator : classifier
        Cloned for each fold; fitted on class codes ``0 .. k - 1``.
    Xs, codes : the source rows and their class codes.
    Xt : the target rows.
    k : number of classes.
    cv : folds.
    confusion : {"hard", "soft"}
        Count predicted labels (the paper's) or sum predicted probabilities.
    random_state : seeds the folds.

    Returns
    -------
    C : ndarray of shape (k, k), entries summing to 1.
    mu : ndarray of shape (k,), summing to 1.

    Notes
    -----
    Cost: ``min(cv, n_s)`` fits on ``(1 - 1/cv) n_s`` rows, predictions of ``n_s + cv n_t``
    rows, ``O((n_s + cv n_t) k)``.
    """
    n = codes.shape[0]
    Ps, Pt = cross_fit_predictions(estimator, Xs, codes, Xt, k, cv=cv, confusion=confusion,
                                   random_state=random_state)
    C = np.zeros((k, k))
    np.add.at(C.T, codes, Ps)          # column j: the predictions of the rows of class j
    return C / n, Pt.mean(axis=0)


def cross_fit_predictions(estimator, Xs: np.ndarray, codes: np.ndarray, Xt: np.ndarray, k: int,
                          *, cv: int = 5, confusion: str = "soft", random_state=None
                          ) -> tuple[np.ndarray, np.ndarray]:
    """The cross-fitted predictions of :func:`cross_fit_confusion`, row by row: ``Ps`` (each
    source row predicted by the model of the fold that held it out) and ``Pt`` (each target
    row's prediction averaged over the fold models), one-hot labels (``"hard"``) or
    probabilities (``"soft"``), shapes ``(n_s, k)`` and ``(n_t, k)``. Cost: as
    :func:`cross_fit_confusion`."""
    n = codes.shape[0]
    n_splits = min(int(cv), n)
    Ps = np.zeros((n, k))
    Pt = np.zeros((Xt.shape[0], k))
    if n_splits < 2:
        model = classifier_on(estimator, Xs, codes, k)
        return _predictions(model, Xs, k, confusion), _predictions(model, Xt, k, confusion)
    counts = np.bincount(codes, minlength=k)
    splitter = (StratifiedKFold(n_splits, shuffle=True, random_state=random_state)
                if counts[counts > 0].min() >= n_splits
                else KFold(n_splits, shuffle=True, random_state=random_state))
    for train, test in splitter.split(Xs, codes):
        model = classifier_on(estimator, Xs[train], codes[train], k)
        Ps[test] = _predictions(model, Xs[test], k, confusion)
        Pt += _predictions(model, Xt, k, confusion) / n_splits
    return Ps, Pt


def bbse_weights(C: np.ndarray, mu: np.ndarray) -> np.ndarray:
    """``w = argmin ||C w - mu||_2`` (least squares, the minimum-norm solution when ``C`` is
    singular), clipped at 0: the class weights ``p_t(y) / p_s(y)`` of BBSE. Cost: ``O(k^3)``.

    Examples
    --------
    >>> C = np.array([[0.4, 0.1], [0.1, 0.4]])    # p_s = (0.5, 0.5), 80% accurate
    >>> bbse_weights(C, np.array([0.25, 0.75])).round(6).tolist()
    [0.166667, 1.833333]
    """
    w = np.linalg.lstsq(np.asarray(C, dtype=np.float64), np.asarray(mu, dtype=np.float64),
                        rcond=None)[0]
    return np.maximum(w, 0.0)


def rlls_reg(k: int, n: int, delta: float = 0.05) -> float:
    """The paper's ``Delta_C``: the bound, holding with probability ``1 - delta``, on the
    spectral-norm error of a ``k x k`` confusion matrix estimated from ``n`` rows,
    ``2 log(2k / delta) / (3 n) + sqrt(2 log(2k / delta) / n)`` (Azizzadenesheli et al. 2019,
    the concentration lemma). Cost: ``O(1)``.

    Examples
    --------
    >>> round(rlls_reg(2, 1000), 4)
    0.0965
    """
    t = np.log(2.0 * k / delta)
    return float(2.0 * t / (3.0 * n) + np.sqrt(2.0 * t / n))


def rlls_shift(C: np.ndarray, b: np.ndarray, reg: float) -> np.ndarray:
    """``theta = argmin ||C theta - b||_2 + reg ||theta||_2`` (norms, not squared), exactly.

    The objective is convex; where it is differentiable away from ``theta = 0`` and
    ``C theta = b`` its minimiser solves ``(C^T C + lam I) theta = C^T b`` with
    ``lam = reg ||C theta - b|| / ||theta||``, so it lies on the ridge path
    ``theta(lam) = V diag(s / (s^2 + lam)) U^T b`` (``C = U diag(s) V^T``), whose ends are the
    minimum-norm least-squares solution (``lam = 0``) and ``0`` (``lam -> inf``). The
    objective along the path is minimised over ``log lam`` (a grid of 97 points over 24
    decades around ``s_max^2``, then scipy's bounded Brent search between the best point's
    neighbours), and the best of that and the two ends is returned. ``reg = 0`` gives the
    least-squares solution. Cost: ``O(k^3)`` (one SVD) plus ``O(k^2)`` per evaluation.

    Examples
    --------
    >>> C = np.eye(2) / 2
    >>> rlls_shift(C, np.array([0.1, -0.1]), 0.0).round(6).tolist()
    [0.2, -0.2]
    >>> rlls_shift(C, np.array([0.1, -0.1]), 1.0).tolist()        # reg >= ||C^T b|| / ||b||
    [0.0, 0.0]
    """
    C = np.asarray(C, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    U, s, Vt = np.linalg.svd(C, full_matrices=False)
    c = U.T @ b
    rank = int(np.sum(s > s[0] * max(C.shape) * np.finfo(float).eps)) if s.size and s[0] > 0 \
        else 0
    lsq = Vt[:rank].T @ (c[:rank] / s[:rank])
    if reg == 0 or rank == 0:
        return lsq

    def objective(theta):
        return float(np.linalg.norm(C @ theta - b) + reg * np.linalg.norm(theta))

    def on_path(t):
        lam = s[0] ** 2 * 10.0 ** t
        return Vt.T @ (s * c / (s ** 2 + lam))

    grid = np.linspace(-12.0, 12.0, 97)
    values = np.array([objective(on_path(t)) for t in grid])
    i = int(np.argmin(values))
    lo, hi = grid[max(i - 1, 0)], grid[min(i + 1, grid.size - 1)]
    res = minimize_scalar(lambda t: objective(on_path(t)), bounds=(lo, hi), method="bounded",
                          options={"xatol": 1e-10})
    cands = [np.zeros_like(lsq), lsq, on_path(grid[i]), on_path(float(res.x))]
    return min(cands, key=objective)


class _ConfusionLabelShift(BaseLabelShift):
    """The fit of BBSE and RLLS: cross-fitted confusion matrix, then ``_solve(C, mu, n)``."""

    def _start_fit(self) -> None:
        self.confusion_matrix_ = self.predicted_target_proportions_ = None

    def _weights(self, rows: LabelShiftRows, p_source: np.ndarray) -> np.ndarray:
        k = rows.classes.shape[0]
        C, mu = cross_fit_confusion(self._estimator(), rows.Xs, rows.codes, rows.Xt, k,
                                    cv=self.cv, confusion=self.confusion,
                                    random_state=self.random_state)
        self.confusion_matrix_ = C
        self.predicted_target_proportions_ = mu
        return self._solve(C, mu, rows.codes.shape[0])


_COMMON_DOC = """
    estimator : classifier or None, default None
        The source classifier, cloned for the cross-fitting and the final model; it needs
        ``predict_proba`` (``correction="posterior"``) and ``sample_weight`` in ``fit``
        (``correction="retrain"``). ``None`` means ``sklearn.linear_model.
        LogisticRegression()``. Rows of a single class get a constant (prior) model.
    cv : int, default 5
        Folds over the source rows for the confusion matrix (at most one per source row).
    confusion : {"hard", "soft"}, default "hard"
        Count the predicted labels (the paper's) or sum the predicted probabilities.
    correction : {"posterior", "retrain"}, default "posterior"
        ``"posterior"``: the source classifier's probabilities reweighted by the class weights
        and renormalised (Bayes' rule under label shift); ``"retrain"``: the classifier
        refitted on the source rows with ``sample_weight = class_weights_[y]`` (the paper's
        importance-weighted training).
    random_state : int, RandomState instance or None, default None
        Shuffles the source rows into folds."""

_COMMON_ATTRS = """
    classes_ : ndarray of shape (K,), the source labels.
    source_proportions_ : ndarray of shape (K,), the source class shares.
    target_proportions_ : ndarray of shape (K,), the estimated target class shares (sum 1).
    class_weights_ : ndarray of shape (K,), ``target_proportions_ / source_proportions_``.
    confusion_matrix_ : ndarray of shape (K, K), ``C_ij = p_s(yhat = i, y = j)``, cross-fitted.
    predicted_target_proportions_ : ndarray of shape (K,), the mean prediction on the target.
    estimator_ : the classifier fitted on every source row.
    n_features_in_, feature_names_in_ : as scikit-learn records them."""


class BBSE(_ConfusionLabelShift):
    __doc__ = f"""Black Box Shift Estimation: the target class proportions from a classifier's
    confusion matrix, and the classifier corrected for them.

    ``fit`` estimates ``C_ij = p_s(yhat = i, y = j)`` on the source rows (cross-fitted: every
    source row is predicted by a model that did not see it) and the mean prediction on the
    target rows ``mu_i = p_t(yhat = i)``; under label shift ``mu = C w`` with
    ``w_j = p_t(j) / p_s(j)``. ``w`` is the least-squares solution (minimum norm when ``C`` is
    singular, with a warning: some classes are then not identifiable from this classifier's
    predictions), clipped at 0, and the target proportions are ``q = w * p_s`` normalised.
    Without target rows the proportions are the source's and nothing is corrected (with a
    warning).

    Parameters
    ----------{_COMMON_DOC}

    Attributes
    ----------{_COMMON_ATTRS}

    Raises
    ------
    ValueError
        No source row, non-finite ``X``, ``correction="retrain"`` with an estimator whose
        ``fit`` takes no ``sample_weight``.

    Notes
    -----
    Cost: ``min(cv, n_s) + 1`` fits of the estimator on at most ``n_s`` rows, predictions of
    ``n_s + cv n_t`` rows, ``O(K^3)`` for the solve.

    References
    ----------
    Z. C. Lipton, Y.-X. Wang, A. J. Smola, "Detecting and Correcting for Label Shift with Black
    Box Predictors", ICML 2018: ``mu_yhat = C_yhat,y w`` (their Eq. 3), ``w_hat =
    C_hat^-1 mu_hat`` (Eq. 4).

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> ys = rng.integers(0, 2, 400); yt = (rng.random(400) < 0.8).astype(int)
    >>> X = np.r_[rng.normal(ys * 2.0, 1.0), rng.normal(yt * 2.0, 1.0)][:, None]
    >>> y = np.r_[ys, -np.ones(400, int)]; sd = np.r_[np.ones(400, int), -np.ones(400, int)]
    >>> m = BBSE(random_state=0).fit(X, y, sd)
    >>> bool(abs(m.target_proportions_[1] - 0.8) < 0.1)
    True
    """

    _parameter_constraints: dict = {
        "estimator": [HasMethods(["fit", "predict"]), None],
        "cv": [Interval(Integral, 2, None, closed="left")],
        "confusion": [StrOptions({"hard", "soft"})],
        "correction": [StrOptions({"posterior", "retrain"})],
        "random_state": ["random_state"],
    }

    def __init__(self, estimator=None, *, cv: int = 5, confusion: str = "hard",
                 correction: str = "posterior", random_state=None):
        self.estimator = estimator
        self.cv = cv
        self.confusion = confusion
        self.correction = correction
        self.random_state = random_state

    def _solve(self, C, mu, n):
        k = C.shape[0]
        rank = np.linalg.matrix_rank(C)
        if rank < k:
            warnings.warn(f"BBSE: the confusion matrix is singular (rank {rank} of {k}): the "
                          "classifier does not tell some classes apart, so their target "
                          "proportions are not identifiable; the minimum-norm least-squares "
                          "estimate is used. A more accurate estimator, or RLLS (regularised), "
                          "is safer.", UserWarning, stacklevel=user_stacklevel())
        return bbse_weights(C, mu)


class RLLS(_ConfusionLabelShift):
    __doc__ = f"""Regularized Learning under Label Shift: BBSE's system solved with a
    regulariser that pulls the class weights towards 1 (no shift) when the confusion matrix
    is estimated from few rows.

    With ``C`` and ``mu`` as in :class:`BBSE`, ``b = mu - C 1`` and the shift
    ``theta = w - 1``, ``fit`` solves ``theta = argmin ||C theta - b||_2 + reg ||theta||_2``
    exactly (:func:`rlls_shift`), then ``w = max(1 + theta, 0)`` and
    ``q = w * p_s`` normalised. ``reg="auto"`` is the paper's ``Delta_C`` for ``K`` classes and
    ``n_s`` source rows at confidence ``0.95`` (:func:`rlls_reg`); ``reg=0`` is BBSE.

    Parameters
    ----------
    reg : "auto" or float >= 0, default "auto"
        The regularisation weight ``Delta_C``.{_COMMON_DOC}

    Attributes
    ----------
    reg_ : float, the regularisation weight used.{_COMMON_ATTRS}

    Raises
    ------
    ValueError
        As :class:`BBSE`.

    Notes
    -----
    Cost: as :class:`BBSE`, and ``O(K^3)`` plus about 110 evaluations of ``O(K^2)`` for the
    solve.

    References
    ----------
    K. Azizzadenesheli, A. Liu, F. Yang, A. Anandkumar, "Regularized Learning for Domain
    Adaptation under Label Shifts", ICLR 2019: ``theta_hat = argmin_theta ||C_hat theta -
    b_hat||_2 + Delta_C ||theta||_2`` with ``b_hat = q_hat - C_hat 1`` (their Eq. 4) and
    ``Delta_C`` the concentration bound of ``||C_hat - C||_2``.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> ys = rng.integers(0, 2, 400); yt = (rng.random(400) < 0.8).astype(int)
    >>> X = np.r_[rng.normal(ys * 2.0, 1.0), rng.normal(yt * 2.0, 1.0)][:, None]
    >>> y = np.r_[ys, -np.ones(400, int)]; sd = np.r_[np.ones(400, int), -np.ones(400, int)]
    >>> m = RLLS(random_state=0).fit(X, y, sd)
    >>> bool(0.5 < m.target_proportions_[1] < 0.9)
    True
    """

    _parameter_constraints: dict = {
        "reg": [StrOptions({"auto"}), Interval(Real, 0, None, closed="left")],
        **BBSE._parameter_constraints,
    }

    def __init__(self, estimator=None, *, reg="auto", cv: int = 5, confusion: str = "hard",
                 correction: str = "posterior", random_state=None):
        self.estimator = estimator
        self.reg = reg
        self.cv = cv
        self.confusion = confusion
        self.correction = correction
        self.random_state = random_state

    def _start_fit(self) -> None:
        super()._start_fit()
        self.reg_ = None

    def _solve(self, C, mu, n):
        k = C.shape[0]
        self.reg_ = rlls_reg(k, n) if self.reg == "auto" else float(self.reg)
        theta = rlls_shift(C, mu - C.sum(axis=1), self.reg_)
        return np.maximum(1.0 + theta, 0.0)
