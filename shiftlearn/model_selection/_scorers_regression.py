"""Target-label-free criteria for regression: rank candidate regressors without target values.

The regression counterparts of :class:`~shiftlearn.model_selection.SourceAccuracyScorer`,
:class:`~shiftlearn.model_selection.ImportanceWeightedScorer` and
:class:`~shiftlearn.model_selection.CircularValidation`. Each is a scikit-learn scorer,
``scorer(estimator, X_val, y_val, sample_domain=None)``, and returns **minus** a mean squared
error (greater is better, scikit-learn's ``neg_mean_squared_error`` convention), in squared
units of the label. The rows are read as by every scorer of the library (module docstring of
``_scorers.py``), with one difference: only ``y = NaN`` marks an unlabeled row, so a target
value of ``-1`` stays a value.

:data:`REGRESSION_CRITERIA` names them for the command line: ``"source_mse"``, ``"iw_mse"``,
``"reverse_mse"``. Design notes: ``docs/dev/model_selection.md``.
"""

from __future__ import annotations

import warnings

import numpy as np
from sklearn.base import clone
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from .._constraints import HasMethods
from ._scorers import ImportanceWeightedScorer, _call, _domain_kw, _DomainScorer, _Fold

__all__ = ["REGRESSION_CRITERIA", "ImportanceWeightedMSEScorer", "ReverseValidationMSEScorer",
           "SourceMSEScorer"]


def _values(fold: _Fold, idx) -> np.ndarray:
    try:
        return np.asarray(fold.y, dtype=np.float64)[idx]
    except (TypeError, ValueError):
        raise ValueError("A regression criterion needs numeric target values (NaN for the "
                         f"unlabeled rows), got y of dtype {np.asarray(fold.y).dtype}.") from None


def _predict(estimator, fold: _Fold, idx) -> np.ndarray:
    return np.asarray(_call(estimator, "predict", fold, idx), dtype=np.float64).ravel()


class SourceMSEScorer(_DomainScorer):
    """Minus the mean squared error on the held-out labeled source rows (source CV).

    ``score = -(1/n_s) sum_{i in S} (f(x_i) - y_i)^2``, each row predicted *as a source row*
    (its ``sample_domain`` is passed to ``predict``, as :class:`SourceAccuracyScorer` does).
    The default criterion of a regression selection.

    Examples
    --------
    >>> import numpy as np
    >>> from shiftlearn import DomainAdaptationRegressor
    >>> X = np.arange(8.0).reshape(-1, 1); y = 2 * X.ravel()
    >>> reg = DomainAdaptationRegressor(None).fit(X, y)
    >>> round(SourceMSEScorer()(reg, X, y), 3)
    -0.011
    """

    _needs_target = False
    _task = "regression"

    def _score(self, estimator, fold: _Fold) -> float:
        err = _predict(estimator, fold, fold.src) - _values(fold, fold.src)
        return -float(np.mean(err ** 2))


class ImportanceWeightedMSEScorer(_DomainScorer):
    """Minus the importance-weighted mean squared error on the held-out source rows
    (Sugiyama, Krauledat & Müller, JMLR 2007, Eq. 8, the squared loss).

    Each labeled source row gets ``w(x) = p_t(x) / p_s(x)`` (normalised to sum 1) and
    ``score = -sum_{i in S} w_i (f(x_i) - y_i)^2``: under covariate shift (``p(y|x)`` the same
    in both domains) an estimate of the target mean squared error. The weights come from the
    fold's inputs, the same for every candidate, computed as
    :meth:`ImportanceWeightedScorer.weights` does.

    Parameters
    ----------
    weight_estimator : probabilistic classifier or density estimator, default=None
        As in :class:`ImportanceWeightedScorer`: a classifier with ``predict_proba`` is a
        domain discriminator (target class 0, source class 1), ``w = (n_s / n_t) P(0|x) /
        P(1|x)``; a density estimator gives ``w = exp(log p_t - log p_s)``. ``None``:
        standardised logistic regression (``StandardScaler`` then ``LogisticRegression``),
        fitted on the fold's rows.

    Notes
    -----
    A warning reports weights whose effective sample size ``1 / sum w_i^2`` is below 2 rows
    (one row decides). Cost: the discriminator's fit on the fold, then ``O(n_s)``.

    Examples
    --------
    >>> import numpy as np
    >>> from shiftlearn import DomainAdaptationRegressor
    >>> rng = np.random.default_rng(0)
    >>> X = np.r_[rng.normal(0, 1, (30, 1)), rng.normal(1, 1, (30, 1))]
    >>> y = np.r_[X[:30, 0] ** 2, np.full(30, np.nan)]
    >>> reg = DomainAdaptationRegressor(None).fit(X, y)
    >>> ImportanceWeightedMSEScorer()(reg, X, y) < 0
    True
    """

    _task = "regression"
    _parameter_constraints: dict = {
        "weight_estimator": [HasMethods(["fit", "score_samples"]),
                             HasMethods(["fit", "predict_proba"]), None],
    }

    def __init__(self, weight_estimator=None):
        self.weight_estimator = weight_estimator

    def weights(self, X_source, X_target) -> np.ndarray:
        """The normalised importance weights (sum 1) of the rows of ``X_source``."""
        we = (make_pipeline(StandardScaler(), LogisticRegression(max_iter=1000))
              if self.weight_estimator is None else self.weight_estimator)
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message="ImportanceWeightedScorer: every",
                                    category=UserWarning)
            return ImportanceWeightedScorer(we).weights(X_source, X_target)

    def _score(self, estimator, fold: _Fold) -> float:
        w = self.weights(fold.Xa[fold.src], fold.Xa[fold.tgt])
        ess = 1.0 / np.sum(w ** 2)
        if ess < 2 and len(w) > 2:
            warnings.warn(f"ImportanceWeightedMSEScorer: the importance weights put almost all "
                          f"mass on one source row (effective sample size {ess:.2f} of "
                          f"{len(w)}); the estimate is that row's error. Use a smoother "
                          "weight_estimator (a more regularised domain classifier).",
                          UserWarning, stacklevel=3)
        err = _predict(estimator, fold, fold.src) - _values(fold, fold.src)
        return -float(np.sum(w * err ** 2))


class ReverseValidationMSEScorer(_DomainScorer):
    """Reverse validation for regression (Zhong et al., ECML PKDD 2010; Bruzzone & Marconcini,
    TPAMI 2010): minus the error on the source rows of a model trained on the target rows'
    predicted values.

    The candidate predicts the target rows, ``yhat_t = f(x_t)``; a clone with the same
    hyper-parameters is refitted on the fold with the roles of the domains swapped (target rows
    labeled ``yhat_t`` are the source, source rows unlabeled, ``sample_domain`` negated) and
    predicts the source rows: ``score = -(1/n_s) sum_{i in S} (g(x_i) - y_i)^2``, ``g`` the
    reverse model. A candidate that adapts well yields target predictions from which the way
    back to the source is also good.

    Notes
    -----
    A candidate whose ``fit`` does not take ``sample_domain`` (a plain regressor) is refitted
    on the pseudo-labeled target rows only. Labels of target rows, if any, are ignored. Costs
    one more ``fit`` per candidate and fold. The criterion's blind spot: a candidate that
    predicts the same constant for every target row gets a constant reverse model, whose
    error is the variance of the source values: bad, but not infinitely so.

    Examples
    --------
    >>> import numpy as np
    >>> from shiftlearn import DomainAdaptationRegressor
    >>> rng = np.random.default_rng(0)
    >>> X = np.r_[rng.normal(0, 1, (30, 1)), rng.normal(1, 1, (30, 1))]
    >>> y = np.r_[3 * X[:30, 0], np.full(30, np.nan)]
    >>> reg = DomainAdaptationRegressor(None).fit(X, y)
    >>> ReverseValidationMSEScorer()(reg, X, y) > -0.1
    True
    """

    _task = "regression"

    def _score(self, estimator, fold: _Fold) -> float:
        y_src = _values(fold, fold.src)
        pred_t = _predict(estimator, fold, fold.tgt)
        back = clone(estimator)
        fit_kw = _domain_kw(back, "fit", -fold.sd)
        if fit_kw:   # domain-aware: every row of the fold, the roles of the domains swapped
            back_y = np.full(fold.sd.shape[0], np.nan)
            back_y[fold.tgt] = pred_t
            back.fit(fold.X, back_y, **fit_kw)
        else:        # a plain regressor (no adaptation): fitted on the pseudo-labeled targets
            back.fit(fold.rows(fold.tgt), pred_t)
        pred_s = np.asarray(back.predict(fold.rows(fold.src),
                                         **_domain_kw(back, "predict", -fold.sd[fold.src])),
                            dtype=np.float64).ravel()
        return -float(np.mean((pred_s - y_src) ** 2))


#: criterion name (``shiftlearn adapt --select`` for a regression target) -> scorer class
REGRESSION_CRITERIA: dict[str, type] = {
    "source_mse": SourceMSEScorer,
    "iw_mse": ImportanceWeightedMSEScorer,
    "reverse_mse": ReverseValidationMSEScorer,
}
