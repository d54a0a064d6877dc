"""TrAdaBoost (Dai et al. 2007) and TrAdaBoost.R2 with its two-stage variant (Pardoe & Stone
2010), written from the papers' equations."""

from __future__ import annotations

from numbers import Integral, Real

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin, RegressorMixin, clone
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import KFold
from sklearn.tree import DecisionTreeRegressor
from sklearn.utils import check_random_state
from sklearn.utils.validation import check_is_fitted, has_fit_parameter

from .._constraints import HasMethods, Interval, StrOptions
from .._validation import check_X
from .._warm import fit_warm
from .._weights import fit_weighted, last_step
from ._base import fit_rows, score_labeled
from ._tree import LeastSquaresTree, Presorted, presorted_depth

__all__ = ["TrAdaBoost", "TrAdaBoostR2", "weighted_median"]

#: the smallest error a round is credited with: a round with no error on the target rows would
#: get beta_t = 0, an infinite vote and target weights divided by 0
_MIN_ERROR = 1e-10


def _learner(est, default, rng):
    """A fresh clone of ``est`` (or ``default``), seeded from ``rng`` when it has a
    ``random_state``; refused when its ``fit`` (a ``Pipeline``'s last step's) takes no
    ``sample_weight``."""
    est = clone(default if est is None else est)
    if not has_fit_parameter(last_step(est), "sample_weight"):
        raise ValueError(f"{type(last_step(est)).__name__}.fit takes no sample_weight: "
                         "boosting reweights the rows, so the estimator (a Pipeline's last "
                         "step) must accept sample_weight (e.g. LogisticRegression, "
                         "DecisionTreeClassifier/Regressor, Ridge).")
    if "random_state" in est.get_params(deep=False):
        est.set_params(random_state=int(rng.randint(np.iinfo(np.int32).max)))
    return est


def _source_beta(n_source: int, n_rounds: int) -> float:
    """Dai et al.'s source factor ``beta = 1 / (1 + sqrt(2 ln n / N))`` (``n`` source rows,
    ``N`` rounds)."""
    return 1.0 / (1.0 + np.sqrt(2.0 * np.log(max(n_source, 1)) / n_rounds))


def weighted_median(predictions: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """Per row, the smallest prediction ``y`` such that the weights of the predictions
    ``<= y`` reach half the total (Drucker's weighted median of AdaBoost.R2).

    ``predictions`` has shape ``(n_rows, n_models)``, ``weights`` ``(n_models,)`` (non-negative,
    not all 0). Cost: ``O(n T log T)``.

    Examples
    --------
    >>> weighted_median(np.array([[1.0, 2.0, 3.0]]), np.array([1.0, 1.0, 3.0])).tolist()
    [3.0]
    >>> weighted_median(np.array([[1.0, 2.0, 3.0]]), np.array([1.0, 1.0, 1.0])).tolist()
    [2.0]
    """
    order = np.argsort(predictions, axis=1, kind="stable")
    sorted_pred = np.take_along_axis(predictions, order, axis=1)
    cum = np.cumsum(weights[order], axis=1)
    idx = np.argmax(cum >= 0.5 * cum[:, -1:] * (1 - 1e-12), axis=1)
    return sorted_pred[np.arange(predictions.shape[0]), idx]


class TrAdaBoost(ClassifierMixin, BaseEstimator):
    """TrAdaBoost (Dai, Yang, Xue, Yu 2007): boosting over source and labeled target rows in
    which misclassified source rows lose weight and misclassified target rows gain it.

    Each round fits ``estimator`` on the source rows and the labeled target rows with the
    current weights, measures its weighted error ``eps_t`` on the labeled target rows only, and
    reweights: a misclassified source row by ``beta`` (< 1: a source row the target concept
    disagrees with fades out), a misclassified target row by ``1 / beta_t`` (> 1, AdaBoost's
    update). The prediction is the weighted vote of the second half of the rounds. Unlabeled
    target rows are ignored.

    Parameters
    ----------
    estimator : classifier or None, default None
        The weak learner, cloned every round; its ``fit`` (a ``Pipeline``'s last step's) must
        take ``sample_weight``. ``None`` means ``sklearn.linear_model.LogisticRegression()``. A
        ``LogisticRegression`` starts each round from the previous round's solution (Notes).
    n_estimators : int, default 10
        Boosting rounds ``N``.
    target_share : float in [0, 1), default 0.0
        The smallest share of the total weight the learner is given on the labeled target
        rows: when theirs is below it, their weights are scaled up to it for the learner's
        fit only (the errors, the updates and the votes are the paper's). ``0`` is the
        paper's learner input. With a few target rows among many source rows the learner
        otherwise ignores them, its target error stays at ``1/2`` and no weight moves after
        the first round (see Notes); ``0.5`` lets it see them.
    random_state : int, RandomState instance or None, default None
        Seeds the learners that have a ``random_state`` (one draw per round).

    Attributes
    ----------
    estimators_ : list of the ``N`` fitted learners.
    estimator_errors_ : ndarray (N,), ``eps_t`` (clipped to ``[1e-10, 0.5]``).
    estimator_weights_ : ndarray (N,), the vote ``ln(1 / beta_t)``; 0 for the first
        ``ceil(N / 2) - 1`` rounds, which do not vote.
    sample_weight_ : ndarray (n_labeled,), the weights after the last round (summing to 1), over
        the source rows then the labeled target rows, in the order of ``X``.
    beta_ : float, the source factor ``beta``.
    classes_ : ndarray, the labels.
    n_features_in_, feature_names_in_ : as scikit-learn records them.

    Raises
    ------
    ValueError
        No labeled target row (the message says how to pass them), an estimator whose ``fit``
        takes no ``sample_weight``, fewer than two classes among the labeled rows, non-finite
        ``X``.

    Notes
    -----
    Cost: ``N`` fits of the learner on the ``n_s + n_t`` labeled rows with weights, plus
    ``O(N (n_s + n_t))`` for the updates; ``predict`` is ``N / 2`` learner predictions. A
    ``LogisticRegression`` learner (the default; L2 penalty, finite ``C``, any solver but
    liblinear) starts each round from the previous round's coefficients: its objective is
    strictly convex, so the round reaches the same optimum to the solver's tolerance in fewer
    iterations (a fit stopped by ``max_iter`` ends nearer the optimum than a cold one; a row
    within the tolerance of a class boundary may flip, and boosting carries that into the
    next rounds' weights).

    Several classes: ``|h_t(x) - c(x)|`` is read as the 0/1 error ``[h_t(x) != c(x)]`` (the
    paper's for labels in {0, 1}) and the vote as ``argmax_c sum_t ln(1 / beta_t) [h_t(x) = c]``,
    which for two classes is the paper's rule. ``eps_t`` is clipped to ``[1e-10, 0.5]``: a
    round no better than chance on the target rows (``eps_t >= 1/2``) gets ``beta_t = 1``,
    leaves the target weights as they are and has no vote; a perfect round gets a large but
    finite vote. Weights start uniform over the labeled rows (the paper lets the user choose).
    The learner receives the weights scaled to a mean of 1 (``n p^t``), so that a regularised
    learner (``LogisticRegression``'s ``C``) weighs its penalty against the data as it does
    unweighted; a learner invariant to the scale (trees) is unaffected.

    A learner that makes no error on the labeled target rows (a logistic regression on more
    features than rows) gives ``eps_t = 0`` in every round: no weight moves, and the model is
    the learner fitted on the pooled rows. Boosting needs a learner weaker than the data.

    A learner that ignores the target rows stalls the paper's algorithm: after a round, the
    reweighting gives that round's learner a target error of exactly ``1/2``; when the target
    rows hold a small share of the weight the next learner is the same, so ``eps_t = 1/2``,
    ``beta_t = 1`` and nothing moves again. ``target_share`` gives the learner the target rows
    at a share it cannot ignore.

    References
    ----------
    W. Dai, Q. Yang, G.-R. Xue, Y. Yu, "Boosting for transfer learning", ICML 2007,
    Algorithm 2. With ``n`` source rows (``i <= n``), ``m`` labeled target rows and
    ``p^t = w^t / sum_i w^t_i``:

    * ``eps_t = sum_{i > n} w^t_i |h_t(x_i) - c(x_i)| / sum_{i > n} w^t_i``,
    * ``beta_t = eps_t / (1 - eps_t)``, ``beta = 1 / (1 + sqrt(2 ln n / N))``,
    * ``w^{t+1}_i = w^t_i beta^{|h_t(x_i) - c(x_i)|}`` for ``i <= n``,
      ``w^{t+1}_i = w^t_i beta_t^{-|h_t(x_i) - c(x_i)|}`` for ``i > n``,
    * ``h_f(x) = 1`` iff ``prod_{t = ceil(N/2)}^{N} beta_t^{-h_t(x)} >=
      prod_{t = ceil(N/2)}^{N} beta_t^{-1/2}``.

    Examples
    --------
    >>> import numpy as np
    >>> X = np.array([[0.0], [1.0], [0.2], [1.2], [0.3], [1.1]])
    >>> y = np.array([0, 1, 0, 1, -1, -1]); sd = np.array([1, 1, -2, -2, -2, -2])
    >>> TrAdaBoost(n_estimators=4).fit(X, y, sd).predict(X[4:]).shape
    (2,)
    """

    __metadata_request__fit = {"sample_domain": True}

    _parameter_constraints: dict = {
        "estimator": [HasMethods(["fit", "predict"]), None],
        "n_estimators": [Interval(Integral, 1, None, closed="left")],
        "target_share": [Interval(Real, 0, 1, closed="left")],
        "random_state": ["random_state"],
    }

    def __init__(self, estimator=None, n_estimators: int = 10, *, target_share: float = 0.0,
                 random_state=None):
        self.estimator = estimator
        self.n_estimators = n_estimators
        self.target_share = target_share
        self.random_state = random_state

    def fit(self, X, y, sample_domain=None):
        """Boost on the source rows and the labeled target rows.

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
        keep = rows.source | rows.target
        Xl, yl = rows.X[keep], rows.y[keep]
        is_tgt = rows.target[keep]
        self.classes_, codes = np.unique(yl, return_inverse=True)
        if self.classes_.shape[0] < 2:
            raise ValueError(f"TrAdaBoost needs two classes among the labeled rows; got only "
                             f"{self.classes_.tolist()}.")
        rng = check_random_state(self.random_state)
        N = self.n_estimators
        n_src = int((~is_tgt).sum())
        self.beta_ = _source_beta(n_src, N)
        w = np.full(yl.shape[0], 1.0 / yl.shape[0])
        self.estimators_, errors = [], np.empty(N)
        for t in range(N):
            est = _learner(self.estimator, LogisticRegression(), rng)
            sw = _lift_target(w, is_tgt, self.target_share) * w.shape[0]
            fit_warm(est, self.estimators_[-1] if t else None, codes,
                     lambda est=est, sw=sw: fit_weighted(est, Xl, codes, sw))
            miss = (est.predict(Xl) != codes).astype(np.float64)
            eps = float(np.sum(w[is_tgt] * miss[is_tgt]) / np.sum(w[is_tgt]))
            eps = min(max(eps, _MIN_ERROR), 0.5)
            beta_t = eps / (1.0 - eps)
            w = np.where(is_tgt, w * beta_t ** (-miss), w * self.beta_ ** miss)
            w /= w.sum()
            self.estimators_.append(est)
            errors[t] = eps
        self.estimator_errors_ = errors
        votes = np.log((1.0 - errors) / errors)
        votes[: int(np.ceil(N / 2)) - 1] = 0.0
        self.estimator_weights_ = votes
        self.sample_weight_ = w
        return self

    def predict_proba(self, X) -> np.ndarray:
        """The voting rounds' weighted share of each class, ``sum_t ln(1 / beta_t)
        [h_t(x) = c] / sum_t ln(1 / beta_t)`` (equal shares when no round has a vote).
        Cost: ``N / 2`` learner predictions."""
        check_is_fitted(self, "estimators_")
        X = check_X(X, estimator=self, reset=False)
        votes = self.estimator_weights_
        start = int(np.ceil(self.n_estimators / 2)) - 1
        use = np.arange(start, len(self.estimators_))
        v = votes[use] if votes[use].sum() > 0 else np.ones(use.shape[0])
        out = np.zeros((X.shape[0], self.classes_.shape[0]))
        rows = np.arange(X.shape[0])
        for t, vt in zip(use, v, strict=True):
            out[rows, self.estimators_[t].predict(X).astype(np.int64)] += vt
        return out / v.sum()

    def predict(self, X) -> np.ndarray:
        """The weighted vote of the second half of the rounds (ties: the first class)."""
        proba = self.predict_proba(X)
        return self.classes_[np.argmax(proba, axis=1)]

    def score(self, X, y) -> float:
        """Accuracy on the rows that carry a label (unlabeled rows are skipped)."""
        return score_labeled(self, X, y, "classification")


def _lift_target(w: np.ndarray, is_tgt: np.ndarray, share: float) -> np.ndarray:
    """``w`` (summing to 1) with the target rows' weights scaled so that they hold ``share`` of
    the total, when they hold less; otherwise ``w`` itself."""
    held = float(w[is_tgt].sum())
    if held >= share or held <= 0.0:
        return w
    out = w.copy()
    out[is_tgt] *= share * (1.0 - held) / (held * (1.0 - share))
    return out / out.sum()


def _adjusted_error(residual: np.ndarray, loss: str) -> np.ndarray:
    """AdaBoost.R2's adjusted error of each row, in ``[0, 1]``: ``r / D`` (linear),
    ``(r / D)^2`` (square) or ``1 - exp(-r / D)`` (exponential), ``D = max r``."""
    D = residual.max()
    if D <= 0:
        return np.zeros_like(residual)
    e = residual / D
    if loss == "square":
        return e * e
    if loss == "exponential":
        return 1.0 - np.exp(-e)
    return e


class TrAdaBoostR2(RegressorMixin, BaseEstimator):
    """TrAdaBoost.R2 (Pardoe & Stone 2010): TrAdaBoost for regression, and its two-stage
    variant.

    ``two_stage=False``: each round fits ``estimator`` on the source rows and the labeled
    target rows with the current weights, takes AdaBoost.R2's adjusted error ``e_i`` of every
    row, the error ``eps_t`` on the labeled target rows, and reweights source rows by
    ``beta^{e_i}`` and target rows by ``beta_t^{-e_i}``; boosting stops at the first round with
    ``eps_t >= 1/2``. The prediction is the weighted median of the second half of the rounds.

    ``two_stage=True``: stage one moves weight from the source rows to the target rows in
    ``n_steps`` steps (at step ``t`` the target rows hold ``m/(n+m) + t/(S-1) (1 - m/(n+m))`` of
    the weight, each source row losing ``beta_t^{e_i}`` with ``beta_t`` found by bisection);
    at each step AdaBoost.R2 with the source weights frozen (``n_estimators`` rounds) is scored
    by ``cv``-fold cross-validation over the labeled target rows (the source rows always train),
    and the step with the smallest mean squared error is refitted on every row.

    Unlabeled target rows (``y`` NaN) are ignored.

    Parameters
    ----------
    estimator : regressor or None, default None
        The learner, cloned every round; its ``fit`` (a ``Pipeline``'s last step's) must take
        ``sample_weight``. ``None`` means ``sklearn.tree.DecisionTreeRegressor(max_depth=3)``.
    n_estimators : int, default 10
        Boosting rounds ``N`` (in the two-stage variant: of each step's AdaBoost.R2).
    loss : {"linear", "square", "exponential"}, default "linear"
        AdaBoost.R2's adjusted error ``e_i`` of a residual ``r_i``: ``r_i / D``,
        ``(r_i / D)^2`` or ``1 - exp(-r_i / D)``, ``D = max_j r_j``.
    two_stage : bool, default False
        Run the two-stage variant.
    n_steps : int, default 10
        Steps ``S`` of the two-stage variant's first stage (unused otherwise).
    cv : int, default 5
        Folds ``F`` over the labeled target rows that score each step of the two-stage variant
        (at most one per labeled target row; unused otherwise).
    random_state : int, RandomState instance or None, default None
        Seeds the learners that have a ``random_state`` and the folds.

    Attributes
    ----------
    estimators_ : list of the fitted learners of the final model.
    estimator_weights_ : ndarray, their votes ``ln(1 / beta_t)`` (0 for the rounds that do
        not vote).
    estimator_errors_ : ndarray, their errors ``eps_t`` on the labeled target rows.
    sample_weight_ : ndarray (n_labeled,), the final model's training weights after its last
        round (summing to 1), source rows then labeled target rows in the order of ``X``.
    cv_errors_ : ndarray (n_steps,), the two-stage variant's cross-validated mean squared
        error per step (``two_stage=True`` only).
    best_step_ : int, the step chosen (0-based; ``two_stage=True`` only).
    n_features_in_, feature_names_in_ : as scikit-learn records them.

    Raises
    ------
    ValueError
        No labeled target row; ``two_stage=True`` with a single labeled target row (no fold
        to score on: label another or use ``two_stage=False``); an estimator whose ``fit``
        takes no ``sample_weight``; non-finite ``X`` or ``y``.

    Notes
    -----
    Cost: ``N`` weighted fits on the ``n + m`` labeled rows; the two-stage variant
    ``S (F N + 1) + N`` of them, plus ``O(S (n + m) log(1/tol))`` for the bisections. When the
    learner is a plain regression tree (``None``, or a ``DecisionTreeRegressor`` with
    scikit-learn's defaults but for ``random_state`` and a ``max_depth`` of at most 8), the
    two-stage variant's ``S (F N + 1)`` scoring fits grow that tree from each fold's rows
    sorted once, ``O((n + m) d)`` per level instead of a sort per node (compiled by numba when
    installed, about scikit-learn's speed without it; the same splits as scikit-learn's up to
    ties in the last bits of the split scores, which scikit-learn breaks by its seed); the
    final ``N`` fits are scikit-learn's.
    ``eps_t`` is clipped below at ``1e-10`` (a perfect round gets a large, finite vote); the
    first round is kept even when ``eps_1 >= 1/2`` so that the model is never empty. The
    learner receives the weights scaled to a mean of 1 (as :class:`TrAdaBoost`'s).

    References
    ----------
    D. Pardoe, P. Stone, "Boosting for regression transfer", ICML 2010 (Algorithms 2 and 3);
    H. Drucker, "Improving regressors using boosting techniques", ICML 1997 (AdaBoost.R2).
    With ``n`` source rows, ``m`` labeled target rows and ``e^t_i`` the adjusted error:

    * ``eps_t = sum_{i > n} w^t_i e^t_i / sum_{i > n} w^t_i``; stop if ``eps_t >= 1/2``,
    * ``beta_t = eps_t / (1 - eps_t)``, ``beta = 1 / (1 + sqrt(2 ln n / N))``,
    * ``w^{t+1}_i = w^t_i beta^{e^t_i} / Z_t`` (``i <= n``),
      ``w^{t+1}_i = w^t_i beta_t^{-e^t_i} / Z_t`` (``i > n``),
    * ``h_f(x)`` = the weighted median of ``h_t(x)``, ``t >= ceil(N/2)``, with weights
      ``ln(1 / beta_t)``;
    * two-stage: ``w^{t+1}_i = w^t_i beta_t^{e^t_i} / Z_t`` on source rows only, ``beta_t`` such
      that ``sum_{i > n} w^{t+1}_i = m/(n+m) + t/(S-1) (1 - m/(n+m))``; AdaBoost.R2 (frozen
      source weights) reweights target rows by ``beta^{1 - e_i}``, ``beta = eps / (1 - eps)``.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(40, 2)); y = X[:, 0] + 0.1 * rng.normal(size=40)
    >>> sd = np.r_[np.ones(30, int), -2 * np.ones(10, int)]; y[35:] = np.nan
    >>> TrAdaBoostR2(random_state=0).fit(X, y, sd).predict(X[35:]).shape
    (5,)
    """

    __metadata_request__fit = {"sample_domain": True}

    _parameter_constraints: dict = {
        "estimator": [HasMethods(["fit", "predict"]), None],
        "n_estimators": [Interval(Integral, 1, None, closed="left")],
        "loss": [StrOptions({"linear", "square", "exponential"})],
        "two_stage": ["boolean"],
        "n_steps": [Interval(Integral, 1, None, closed="left")],
        "cv": [Interval(Integral, 2, None, closed="left")],
        "random_state": ["random_state"],
    }

    def __init__(self, estimator=None, n_estimators: int = 10, *, loss: str = "linear",
                 two_stage: bool = False, n_steps: int = 10, cv: int = 5, random_state=None):
        self.estimator = estimator
        self.n_estimators = n_estimators
        self.loss = loss
        self.two_stage = two_stage
        self.n_steps = n_steps
        self.cv = cv
        self.random_state = random_state

    # ------------------------------------------------------------------ one boosting
    def _boost(self, X, y, is_tgt, w, rng, frozen_source: bool, rows=None, depth=None):
        """TrAdaBoost.R2 (``frozen_source=False``) or AdaBoost.R2 with the source weights
        frozen; returns ``(learners, votes, errors, final weights)``. ``rows``: ``X``
        presorted, to grow the plain regression tree learner of depth ``depth`` from
        (``presorted_depth``)."""
        N = self.n_estimators
        beta = _source_beta(int((~is_tgt).sum()), N)
        w = w / w.sum()
        learners, errors = [], []
        for t in range(N):
            est, pred = self._fit_learner(X, y, w * w.shape[0], rng, rows, depth)
            e = _adjusted_error(np.abs(y - pred), self.loss)
            eps = float(np.sum(w[is_tgt] * e[is_tgt]) / np.sum(w[is_tgt]))
            if eps >= 0.5 and t > 0:
                break
            eps = min(max(eps, _MIN_ERROR), 0.5)
            beta_t = eps / (1.0 - eps)
            if frozen_source:
                tw = w[is_tgt] * beta_t ** (1.0 - e[is_tgt])
                w = w.copy()
                w[is_tgt] = tw * (w[is_tgt].sum() / tw.sum())
            else:
                w = np.where(is_tgt, w * beta_t ** (-e), w * beta ** e)
                w /= w.sum()
            learners.append(est)
            errors.append(eps)
        errors = np.asarray(errors)
        votes = np.log((1.0 - errors) / errors)
        if not frozen_source:       # the second half of the rounds vote
            votes[: int(np.ceil(len(learners) / 2)) - 1] = 0.0
        return learners, votes, errors, w

    def _fit_learner(self, X, y, sw, rng, rows, depth):
        """A learner fitted with weights ``sw`` and its predictions on ``X``: the plain
        regression tree of depth ``depth`` grown from the presorted ``rows`` when given (the
        same splits as scikit-learn's, :mod:`._tree`), else a fresh clone of the learner."""
        if rows is not None:
            rng.randint(np.iinfo(np.int32).max)    # the tree's seed, as _learner draws it,
            tree = LeastSquaresTree(depth).fit(rows, y, sw)    # so the stream stays the same
            return tree, tree.fit_predictions_
        est = _learner(self.estimator, DecisionTreeRegressor(max_depth=3), rng)
        fit_weighted(est, X, y, sw)
        return est, est.predict(X)

    def fit(self, X, y, sample_domain=None):
        """Boost (or run the two stages) on the source rows and the labeled target rows.

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
        keep = rows.source | rows.target
        Xl, yl, is_tgt = rows.X[keep], rows.y[keep], rows.target[keep]
        rng = check_random_state(self.random_state)
        w = np.full(yl.shape[0], 1.0 / yl.shape[0])
        if not self.two_stage:
            out = self._boost(Xl, yl, is_tgt, w, rng, frozen_source=False)
        else:
            out = self._two_stage(Xl, yl, is_tgt, w, rng)
        self.estimators_, self.estimator_weights_, self.estimator_errors_, \
            self.sample_weight_ = out
        return self

    def _two_stage(self, X, y, is_tgt, w, rng):
        m, n_all = int(is_tgt.sum()), y.shape[0]
        if m < 2:
            raise ValueError("TrAdaBoostR2(two_stage=True) scores each step by cross-validation "
                             "over the labeled target rows and needs at least 2 of them, got "
                             f"{m}: label another target row or use two_stage=False.")
        S = self.n_steps
        tgt_idx, src_idx = np.flatnonzero(is_tgt), np.flatnonzero(~is_tgt)
        folds = list(KFold(min(self.cv, m), shuffle=True,
                           random_state=rng.randint(np.iinfo(np.int32).max)).split(tgt_idx))
        share0 = m / n_all
        # a plain regression tree: each fold's rows sorted once, the trees grown from them
        depth = presorted_depth(self.estimator)
        fast = depth is not False
        train_rows = [np.r_[src_idx, tgt_idx[train]] for train, _ in folds]
        sorted_rows = [Presorted(X[tr]) if fast else None for tr in train_rows]
        all_rows = Presorted(X) if fast else None
        weights, cv_errors = [], np.empty(S)
        for t in range(S):
            weights.append(w.copy())
            se = 0.0
            for (_, test), tr, rows in zip(folds, train_rows, sorted_rows, strict=True):
                learners, votes, _, _ = self._boost(X[tr], y[tr], is_tgt[tr], w[tr], rng,
                                                    frozen_source=True, rows=rows,
                                                    depth=depth)
                pred = _median_of(learners, votes, X[tgt_idx[test]])
                se += float(np.sum((y[tgt_idx[test]] - pred) ** 2))
            cv_errors[t] = se / m
            if t == S - 1:
                break
            _, pred = self._fit_learner(X, y, w * w.shape[0], rng, all_rows, depth)
            e = _adjusted_error(np.abs(y - pred), self.loss)
            goal = share0 + (t + 1) / (S - 1) * (1.0 - share0)
            w = _move_weight(w, e, is_tgt, goal)
        self.cv_errors_ = cv_errors
        self.best_step_ = int(np.argmin(cv_errors))
        return self._boost(X, y, is_tgt, weights[self.best_step_], rng, frozen_source=True)

    def predict(self, X) -> np.ndarray:
        """The weighted median of the voting learners' predictions. Cost: one prediction per
        learner and ``O(n T log T)``."""
        check_is_fitted(self, "estimators_")
        X = check_X(X, estimator=self, reset=False)
        return _median_of(self.estimators_, self.estimator_weights_, X)

    def score(self, X, y) -> float:
        """R^2 on the rows that carry a label (NaN rows are skipped)."""
        return score_labeled(self, X, y, "regression")


def _median_of(learners, votes, X) -> np.ndarray:
    use = np.flatnonzero(votes > 0)
    if use.size == 0:                  # no round has a vote: all count alike
        use, v = np.arange(len(learners)), np.ones(len(learners))
    else:
        v = votes[use]
    P = np.column_stack([learners[t].predict(X) for t in use])
    return weighted_median(P, v)


def _move_weight(w, e, is_tgt, goal: float, n_iter: int = 100) -> np.ndarray:
    """Source weights times ``beta^{e_i}``, ``beta`` in ``[0, 1]`` found by bisection so that the
    target rows hold ``goal`` of the total after normalisation (or as close as rows with
    ``e_i = 0`` allow). Cost: ``O(n n_iter)``."""
    wt = w[is_tgt].sum()
    ws, es = w[~is_tgt], e[~is_tgt]

    def share(beta):
        return wt / (wt + np.sum(ws * beta ** es))

    if goal >= 1.0 - 1e-12:
        beta = 0.0
    elif share(1.0) >= goal:
        beta = 1.0
    else:
        lo, hi = 0.0, 1.0               # share decreases as beta grows
        for _ in range(n_iter):
            mid = 0.5 * (lo + hi)
            lo, hi = (mid, hi) if share(mid) > goal else (lo, mid)
        beta = 0.5 * (lo + hi)
    out = w.copy()
    out[~is_tgt] = ws * (beta ** es if beta > 0 else (es == 0) * 0.0)
    return out / out.sum()
