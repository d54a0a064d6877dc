"""Maximum-likelihood label shift (MLLS): EM on calibrated probabilities.

Saerens, Latinne and Decaestecker's EM estimates the target class proportions as the maximum of
the target rows' likelihood under label shift; Alexandari, Kundaje and Shrikumar showed that it
beats BBSE and RLLS once the classifier's probabilities are calibrated, with a temperature and
a bias per class fitted on held-out source rows (bias-corrected temperature scaling, BCTS).
"""

from __future__ import annotations

import warnings
from numbers import Integral, Real

import numpy as np
from scipy.optimize import minimize
from scipy.special import log_softmax
from sklearn.exceptions import ConvergenceWarning

from .._constraints import HasMethods, Interval, StrOptions
from .._stacklevel import user_stacklevel
from ._base import BaseLabelShift, LabelShiftRows
from ._confusion import cross_fit_predictions

__all__ = ["MLLS", "bcts_calibration", "mlls_proportions"]

#: the smallest probability whose logarithm the calibration reads (a class a model gives
#: probability 0 keeps a finite, very negative score)
_TINY = 1e-300


def _log(p: np.ndarray) -> np.ndarray:
    return np.log(np.maximum(p, _TINY))


def bcts_calibration(proba: np.ndarray, codes: np.ndarray) -> tuple[float, np.ndarray]:
    """Bias-corrected temperature scaling: the temperature ``T > 0`` and class biases ``b``
    that minimise the negative log-likelihood of ``softmax(log(proba) / T + b)`` on rows of
    known classes ``codes`` (held-out rows, so that the calibration is not fitted on the
    model's own training rows).

    Returns ``(T, b)``, ``b`` of shape ``(k,)`` with ``b[0] = 0`` (the softmax is unchanged by a
    common shift, so one bias is fixed). L-BFGS-B on the convex problem in ``(1 / T, b)``.
    Cost: ``O(n k)`` per iteration.

    Examples
    --------
    >>> p = np.array([[0.6, 0.4], [0.4, 0.6], [0.6, 0.4], [0.4, 0.6]])
    >>> T, b = bcts_calibration(p, np.array([0, 1, 0, 1]))
    >>> bool(T < 1)                                  # the rows are better than 0.6 says
    True
    """
    logp = _log(np.asarray(proba, dtype=np.float64))
    n, k = logp.shape
    rows = np.arange(n)

    def nll(theta):                     # theta = (1 / T, b_1, ..., b_{k-1})
        b = np.r_[0.0, theta[1:]]
        z = log_softmax(theta[0] * logp + b, axis=1)
        g = np.exp(z)
        g[rows, codes] -= 1.0
        return -z[rows, codes].sum(), np.r_[np.sum(g * logp), g.sum(axis=0)[1:]]

    res = minimize(nll, np.r_[1.0, np.zeros(k - 1)], jac=True, method="L-BFGS-B",
                   bounds=[(1e-6, None)] + [(None, None)] * (k - 1))
    return float(1.0 / res.x[0]), np.r_[0.0, res.x[1:]]


def calibrate(proba: np.ndarray, temperature: float, bias: np.ndarray) -> np.ndarray:
    """``softmax(log(proba) / temperature + bias)``, row by row. Cost: ``O(n k)``."""
    return np.exp(log_softmax(_log(proba) / temperature + bias, axis=1))


def mlls_proportions(proba: np.ndarray, source_proportions: np.ndarray, *,
                     max_iter: int = 1000, tol: float = 1e-8) -> tuple[np.ndarray, int]:
    """The target class proportions that maximise the likelihood of the target rows under
    label shift, by EM (Saerens et al. 2002): ``q`` is the mean over the target rows of the
    posterior reweighted by ``q / p_s``, from ``q = p_s``, until no share moves by more than
    ``tol``.

    ``proba``: the (calibrated) source posterior of each target row, ``(n_t, k)``;
    ``source_proportions``: the class shares that posterior assumes. Returns ``(q, n_iter)``;
    ``n_iter == max_iter`` means EM did not reach ``tol``. Cost: ``O(n_t k)`` per iteration.

    Examples
    --------
    >>> p = np.array([[0.9, 0.1], [0.9, 0.1], [0.9, 0.1], [0.1, 0.9]])
    >>> q, _ = mlls_proportions(p, np.array([0.5, 0.5]))
    >>> q.round(2).tolist()
    [0.81, 0.19]
    """
    p_s = np.asarray(source_proportions, dtype=np.float64)
    q = p_s.copy()
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio_base = np.where(p_s > 0, 1.0 / p_s, 0.0)
    for it in range(1, max_iter + 1):
        r = proba * (q * ratio_base)
        s = r.sum(axis=1, keepdims=True)
        r = np.divide(r, s, out=np.zeros_like(r), where=s > 0)
        q_new = r.mean(axis=0)
        total = q_new.sum()
        q_new = q_new / total if total > 0 else p_s.copy()
        if np.max(np.abs(q_new - q)) <= tol:
            return q_new, it
        q = q_new
    return q, max_iter


class MLLS(BaseLabelShift):
    """Maximum-likelihood label shift: the target class proportions by EM on the source
    classifier's calibrated probabilities, and the classifier corrected for them.

    ``fit`` cross-fits the source classifier (every source row predicted by a model that did
    not see it, every target row by the mean of the fold models), calibrates those
    probabilities with a temperature and a bias per class fitted on the held-out source rows
    (``calibration="bcts"``), then runs EM (:func:`mlls_proportions`) on the calibrated target
    probabilities. The correction reweights the calibrated posterior of the classifier fitted
    on every source row. Without target rows the proportions are the source's (with a
    warning).

    Parameters
    ----------
    estimator : classifier or None, default None
        The source classifier, cloned for the cross-fitting and the final model; it needs
        ``predict_proba`` (and ``sample_weight`` in ``fit`` for ``correction="retrain"``).
        ``None`` means ``sklearn.linear_model.LogisticRegression()``.
    cv : int, default 5
        Folds over the source rows for the held-out probabilities (at most one per row).
    calibration : {"bcts"} or None, default "bcts"
        ``"bcts"``: bias-corrected temperature scaling of the probabilities before EM and in
        the correction; ``None``: the classifier's probabilities as they are (Saerens et al.).
    max_iter : int, default 1000
        EM iterations at most; a ``ConvergenceWarning`` when they run out.
    tol : float, default 1e-8
        EM stops when no class share moves by more than ``tol``.
    correction : {"posterior", "retrain"}, default "posterior"
        ``"posterior"``: the (calibrated) probabilities reweighted by the class weights and
        renormalised; ``"retrain"``: the classifier refitted with
        ``sample_weight = class_weights_[y]``.
    random_state : int, RandomState instance or None, default None
        Shuffles the source rows into folds.

    Attributes
    ----------
    classes_ : ndarray of shape (K,), the source labels.
    source_proportions_ : ndarray of shape (K,), the source class shares.
    target_proportions_ : ndarray of shape (K,), the estimated target class shares (sum 1).
    class_weights_ : ndarray of shape (K,), ``target_proportions_ / source_proportions_``.
    calibration_temperature_ : float or None, the fitted temperature ``T``.
    calibration_bias_ : ndarray of shape (K,) or None, the fitted class biases.
    n_iter_ : int, EM iterations run (0 without target rows).
    estimator_ : the classifier fitted on every source row.
    n_features_in_, feature_names_in_ : as scikit-learn records them.

    Raises
    ------
    ValueError
        No source row, non-finite ``X``, an estimator without ``predict_proba`` with
        ``correction="posterior"``, ``correction="retrain"`` with an estimator whose ``fit``
        takes no ``sample_weight``.

    Notes
    -----
    Cost: ``min(cv, n_s) + 1`` fits of the estimator, predictions of ``n_s + cv n_t`` rows, the
    calibration (``O(n_s K)`` per L-BFGS iteration) and EM (``O(n_t K)`` per iteration).

    References
    ----------
    M. Saerens, P. Latinne, C. Decaestecker, "Adjusting the outputs of a classifier to new a
    priori probabilities: a simple procedure", Neural Computation 14(1), 2002: the EM step
    ``q_y <- (1/n) sum_i p_s(y | x_i) q_y / p_s(y) / sum_c p_s(c | x_i) q_c / p_s(c)``.
    A. Alexandari, A. Kundaje, A. Shrikumar, "Maximum likelihood with bias-corrected
    calibration is hard-to-beat at label shift adaptation", ICML 2020: calibrated
    probabilities ``softmax(log p(x) / T + b)``, ``(T, b)`` by likelihood on held-out rows.

    Examples
    --------
    Three classes, balanced in the source and 60/30/10 in the target:

    >>> import numpy as np
    >>> gen = np.random.default_rng(3)
    >>> y_src = np.repeat([0, 1, 2], 300)
    >>> y_tgt = gen.choice(3, size=900, p=[0.6, 0.3, 0.1])
    >>> feats = np.concatenate([y_src, y_tgt])[:, None] * 2.5 + gen.normal(size=(1800, 1))
    >>> labels = np.concatenate([y_src, np.full(900, -1)])
    >>> domains = np.repeat([1, -1], 900)
    >>> model = MLLS(random_state=0).fit(feats, labels, domains)
    >>> bool(np.abs(model.target_proportions_ - [0.6, 0.3, 0.1]).sum() / 2 < 0.05)
    True
    """

    _parameter_constraints: dict = {
        "estimator": [HasMethods(["fit", "predict"]), None],
        "cv": [Interval(Integral, 2, None, closed="left")],
        "calibration": [StrOptions({"bcts"}), None],
        "max_iter": [Interval(Integral, 1, None, closed="left")],
        "tol": [Interval(Real, 0, None, closed="left")],
        "correction": [StrOptions({"posterior", "retrain"})],
        "random_state": ["random_state"],
    }

    def __init__(self, estimator=None, *, cv: int = 5, calibration: str | None = "bcts",
                 max_iter: int = 1000, tol: float = 1e-8, correction: str = "posterior",
                 random_state=None):
        self.estimator = estimator
        self.cv = cv
        self.calibration = calibration
        self.max_iter = max_iter
        self.tol = tol
        self.correction = correction
        self.random_state = random_state

    def _start_fit(self) -> None:
        if not hasattr(self._estimator(), "predict_proba"):
            raise ValueError(f"MLLS maximises a likelihood of the estimator's predict_proba, and "
                             f"{type(self._estimator()).__name__} has none: give a classifier "
                             "with probabilities (e.g. LogisticRegression; the command line's "
                             "--estimator logreg), or use BBSE, which reads predicted labels.")
        self.calibration_temperature_ = self.calibration_bias_ = None
        self.n_iter_ = 0

    def _weights(self, rows: LabelShiftRows, p_source: np.ndarray) -> np.ndarray:
        k = rows.classes.shape[0]
        Ps, Pt = cross_fit_predictions(self._estimator(), rows.Xs, rows.codes, rows.Xt, k,
                                       cv=self.cv, confusion="soft",
                                       random_state=self.random_state)
        if self.calibration == "bcts":
            T, b = bcts_calibration(Ps, rows.codes)
            self.calibration_temperature_, self.calibration_bias_ = T, b
            Pt = calibrate(Pt, T, b)
        q, self.n_iter_ = mlls_proportions(Pt, p_source, max_iter=self.max_iter, tol=self.tol)
        if self.n_iter_ >= self.max_iter:
            warnings.warn(f"MLLS: EM did not reach tol={self.tol} in max_iter={self.max_iter} "
                          "iterations; raise max_iter (or tol).", ConvergenceWarning,
                          stacklevel=user_stacklevel())
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(p_source > 0, q / p_source, 0.0)

    def _source_posterior(self, p: np.ndarray) -> np.ndarray:
        if self.correction == "posterior" and self.calibration_temperature_ is not None:
            return calibrate(p, self.calibration_temperature_, self.calibration_bias_)
        return p
