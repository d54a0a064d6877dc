"""Joint distribution optimal transport (JDOT): a target model learned by alternating an
optimal-transport plan between the labeled source rows and the unlabeled target rows with a
fit of the model on the target rows and the labels the plan carries to them.

JDOT predicts labels itself: it is a *labeler* (``_replaces_estimator = True``), which
:class:`~shiftlearn.compose.DomainAdaptationClassifier` uses in place of its classifier.
The design decisions and measurements are in ``docs/dev/mapping.md``.
"""

from __future__ import annotations

import warnings
from numbers import Integral, Real

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin, RegressorMixin, clone
from sklearn.linear_model import LogisticRegression, Ridge
from sklearn.utils.metaestimators import available_if
from sklearn.utils.validation import check_is_fitted, has_fit_parameter

from .._constraints import HasMethods, Interval, check_params
from .._resources import check_dense_memory
from .._stacklevel import user_stacklevel
from .._validation import check_X, check_X_y_domain, require_y, scored_rows
from .._warm import fit_warm
from .._weights import fit_weighted, last_step
from ._ot import entropic_plan, import_ot

__all__ = ["JDOTClassifier", "JDOTRegressor", "label_plan", "labeled_score",
           "source_only_warning"]

#: weights of the duplicated target rows below this share of the largest are dropped: exact
#: plans are sparse (their zeros go), entropic ones have dust far below the solver's tolerance
_DUST = 1e-6
#: cap and stopping threshold of each entropic solve (``reg_e > 0``)
_SINKHORN_MAX_ITER, _SINKHORN_TOL = 1000, 1e-9


def label_plan(ot, a: np.ndarray, b: np.ndarray, M: np.ndarray, reg_e: float) -> np.ndarray:
    """The transport plan of the cost ``M`` between the weights ``a`` and ``b``: exact (POT's
    network simplex, ``ot.emd``, capped at ``max(100000, 10 n_s n_t)`` iterations) when
    ``reg_e == 0``, else entropic (:func:`~shiftlearn.mapping._ot.entropic_plan`)."""
    if reg_e > 0:
        return entropic_plan(ot, a, b, M, reg_e, _SINKHORN_MAX_ITER, _SINKHORN_TOL)[0]
    cap = max(100000, 10 * M.shape[0] * M.shape[1])
    return ot.emd(a, b, M, numItermax=cap)


def source_only_warning(owner: str) -> None:
    """Without target rows there is no plan: the model is fitted on the source rows."""
    warnings.warn(
        f"{owner}: no target rows (negative sample_domain, or y = -1 without sample_domain), "
        "so there is nothing to transport the labels to: the model is fitted on the labeled "
        "source rows (no adaptation). Pass the unlabeled target rows to fit.", UserWarning,
        stacklevel=user_stacklevel())


def labeled_score(est, X, y, sample_weight, task: str) -> float:
    """The score of ``est`` (scikit-learn's accuracy or R^2) on the labeled rows of ``X`` only,
    the package's one scoring rule (:func:`shiftlearn._validation.scored_rows`)."""
    from sklearn.metrics import accuracy_score, r2_score
    from sklearn.utils import _safe_indexing

    keep, y = scored_rows(y, task=task)
    w = None if sample_weight is None else np.asarray(sample_weight)[keep]
    pred = est.predict(_safe_indexing(X, np.flatnonzero(keep)))
    if task == "classification":
        return float(accuracy_score(y[keep], pred, sample_weight=w))
    return float(r2_score(np.asarray(y[keep], dtype=np.float64), pred, sample_weight=w))


def _feature_cost(ot, Xs: np.ndarray, Xt: np.ndarray) -> np.ndarray:
    """Squared Euclidean distances divided by their mean (all zero when the rows coincide)."""
    D = ot.dist(Xs, Xt, metric="sqeuclidean")
    mean = float(D.mean())
    if mean > 0:
        D /= mean
    return D


class _BaseJDOT(BaseEstimator):
    """Validation, the alternation and the no-target fallback shared by the two tasks."""

    # scikit-learn metadata routing: sample_domain is requested by default
    __metadata_request__fit = {"sample_domain": True}
    # and to the prediction methods and score, which take it for the protocol's sake (every
    # row is predicted by the target model)
    __metadata_request__predict = {"sample_domain": True}
    __metadata_request__predict_proba = {"sample_domain": True}
    __metadata_request__score = {"sample_domain": True}

    #: a labeler: DomainAdaptationClassifier fits it (with its classifier as ``estimator``)
    #: in place of adapter + classifier
    _replaces_estimator = True
    #: float64 ``n_s x n_t`` arrays held at once (feature cost, label cost, cost, plan, a
    #: product)
    _PLAN_ARRAYS = 5.0

    _parameter_constraints: dict = {
        "estimator": [HasMethods(["fit", "predict"]), None],
        "alpha": [Interval(Real, 0, None, closed="neither")],
        "reg_e": [Interval(Real, 0, None, closed="left")],
        "max_iter": [Interval(Integral, 1, None, closed="left")],
        "tol": [Interval(Real, 0, None, closed="left")],
    }

    def __init__(self, estimator=None, alpha=1.0, reg_e=0.0, max_iter=100, tol=1e-5):
        self.estimator = estimator
        self.alpha = alpha
        self.reg_e = reg_e
        self.max_iter = max_iter
        self.tol = tol

    def fit(self, X, y, sample_domain=None):
        """Alternate the plan and the model until the objective stalls.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            The labeled source rows and the unlabeled target rows.
        y : array-like of shape (n_samples,)
            Source labels; ``-1`` or NaN (NaN for regression) on the target rows, whose
            labels, if given, are never read.
        sample_domain : array-like of shape (n_samples,), optional
            Positive = source, negative = target; inferred from ``y`` when omitted.

        Returns
        -------
        self
        """
        check_params(self)
        require_y(y, self, ": give the labels of the source rows and -1 (or NaN) for the "
                           "unlabeled target rows.")
        est = self._default() if self.estimator is None else self.estimator
        self._check_estimator(est)
        X, y, sd = check_X_y_domain(X, y, sample_domain, task=self._task, estimator=self)
        src, tgt = sd > 0, sd < 0
        Xs = X[src].astype(np.float64, copy=False)
        ys = self._source_labels(y[src])
        ns, nt = Xs.shape[0], int(tgt.sum())
        self.estimator_ = clone(est)
        if nt == 0:
            source_only_warning(type(self).__name__)
            self._fit_source(Xs, ys)
            self.plan_ = np.zeros((ns, 0))
            self.loss_history_ = []
            self.n_iter_ = 1
            return self
        check_dense_memory(ns, nt, self._PLAN_ARRAYS,
                           f"{type(self).__name__}.fit on {ns} source and {nt} target rows",
                           "", advice="Fit on a subsample of the rows (the plan is n_source "
                                      "x n_target).")
        ot = import_ot()
        Xt = X[tgt].astype(np.float64, copy=False)
        a, b = np.full(ns, 1.0 / ns), np.full(nt, 1.0 / nt)
        Df = _feature_cost(ot, Xs, Xt)
        alpha, reg = float(self.alpha), float(self.reg_e)
        M = alpha * Df
        history: list[float] = []
        best = None                                        # (objective, plan, fitted model)
        for _ in range(int(self.max_iter)):
            plan = label_plan(ot, a, b, M, reg)
            self.estimator_ = clone(est)                   # the last state stays intact
            # the label cost of the new model, fitted from the last one (the best so far:
            # the loop goes on only after a descent)
            L = self._fit_step(Xt, ys, plan, None if best is None else best[2])
            history.append(float(alpha * np.vdot(plan, Df) + np.vdot(plan, L)))
            if best is not None and history[-1] >= best[0] - float(self.tol):
                # no descent by more than tol: converged, or (a regularised model) rising or
                # cycling; keep the lower of the two states
                if history[-1] > best[0]:
                    _, plan, self.estimator_ = best
                break
            best = (history[-1], plan, self.estimator_)
            M = alpha * Df + L
        self.plan_ = plan
        self.loss_history_ = history
        self.n_iter_ = len(history)
        return self

    def predict(self, X, sample_domain=None):
        """The target model's predictions for the rows of ``X`` (target rows;
        ``sample_domain`` is accepted for the package's protocol and ignored: every row is
        predicted by the target model)."""
        check_is_fitted(self, "estimator_")
        X = check_X(X, estimator=self, reset=False)
        return self.estimator_.predict(X)

    def _check_estimator(self, est) -> None:
        """Refuse, before anything is fitted, a model that cannot be JDOT's (nothing here)."""


class JDOTClassifier(ClassifierMixin, _BaseJDOT):
    """Joint distribution optimal transport classifier: a classifier of the target rows
    learned from the source labels the transport plan carries to them, alternating plan and
    model.

    ``fit(X, y, sample_domain)`` minimises over the couplings ``pi`` of the uniform weights
    of the labeled source rows ``(x_i, y_i)`` and the unlabeled target rows ``x_j``, and over
    the model ``f``::

        sum_ij pi_ij (alpha D_ij + L(y_i, f(x_j))),   D_ij = ||x_i - x_j||^2 / mean(||.||^2)

    with ``L`` the cross-entropy ``-log p_f(y_i | x_j)``, by block coordinate descent: the
    first plan on the feature cost alone, then (1) ``f`` fitted on the target rows, each
    duplicated once per class with weight ``n_t sum_{i: y_i = c} pi_ij`` (the labels the plan
    carries to ``x_j``; for the cross-entropy this weighted fit minimises the objective in
    ``f`` exactly), (2) the plan of the cost ``alpha D + L(f)``, until an alternation lowers
    the objective by at most ``tol`` (or raises it) or ``max_iter`` model fits.
    ``predict``/``predict_proba`` apply ``f`` to new target rows. Several sources are pooled;
    the target labels are never read.

    A labeler: :class:`~shiftlearn.compose.DomainAdaptationClassifier` with it as
    ``adapter`` fits it (its classifier as ``estimator``) in place of a classifier.

    Parameters
    ----------
    estimator : classifier or None, default=None
        The model ``f``; its ``fit`` (a ``Pipeline``'s last step's) must take
        ``sample_weight`` and it must have
        ``predict_proba`` (the cross-entropy cost). It should minimise the (weighted)
        cross-entropy, as logistic regression does, for the alternation to descend. ``None``:
        ``LogisticRegression()``.
    alpha : float > 0, default=1.0
        Weight of the feature cost against the label loss (the feature cost is divided by its
        mean, so ``alpha`` has no unit). Large values make the plan that of
        :class:`EMD` (labels by nearest transport), small ones trust the model's labels.
    reg_e : float >= 0, default=0.0
        ``0``: exact plans (POT's network simplex); ``> 0``: entropic plans with this weight
        of the entropy (in the units of the normalised cost).
    max_iter : int >= 1, default=100
        Cap on the model fits (alternations).
    tol : float >= 0, default=1e-5
        Stop when an alternation lowers the objective by at most this. A regularised model
        (logistic regression's default penalty, a ridge) does not minimise the objective in
        ``f`` exactly, and entropic plans (``reg_e > 0``) minimise it plus their entropy, so
        the alternation can rise or cycle between two states; it then stops too, and keeps
        the state with the lower objective.

    Attributes
    ----------
    estimator_ : the fitted model ``f``
    classes_ : ndarray, the source classes
    plan_ : ndarray of shape (n_source, n_target), the plan kept (``(n_source, 0)`` without
        target rows)
    loss_history_ : list of float, the objective after each model fit, the last one
        included even when its state was not kept (the kept state's is the lowest)
    n_iter_ : int, model fits run (1 without target rows: ``f`` on the source rows)
    n_features_in_ : int
    feature_names_in_ : ndarray of str
        Only when ``X`` had string column names.

    Raises
    ------
    ImportError
        POT is not installed.
    ValueError
        An estimator without ``sample_weight`` in its ``fit`` or without ``predict_proba``
        (the message names the fix); labeled source rows of one class; the plan exceeding
        the memory budget; NaN/inf in ``X``.

    Notes
    -----
    Cost per alternation: the plan (network simplex, about ``O(n^3 log n)`` with
    ``n = max(n_s, n_t)``, far less in practice; entropic: ``O(n_s n_t)`` per Sinkhorn
    iteration), the model's fit on at most ``n_s + n_t`` weighted rows (an exact plan has at
    most ``n_s + n_t - 1`` non-zeros) and the label cost ``O(n_s n_t + n_t K)``; once: the
    feature cost ``O(n_s n_t d)``. Memory ``O(n_s n_t)``, refused up front beyond the
    package's budget (``shiftlearn._resources.MEMORY_BUDGET``). Without target rows the model
    is fitted on the source rows, with a warning. A ``LogisticRegression`` (alone or a
    ``Pipeline``'s last step; L2 penalty, finite ``C``, any solver but liblinear) starts each
    alternation's fit from the last alternation's coefficients: its objective is strictly
    convex, so it reaches the same optimum to the solver's tolerance in fewer iterations (a
    fit stopped by ``max_iter`` ends nearer the optimum than a cold one).

    References
    ----------
    N. Courty, R. Flamary, A. Habrard and A. Rakotomamonjy, "Joint distribution optimal
    transportation for domain adaptation", NeurIPS 2017: Eq. (4), the objective
    ``min_{f, pi in Pi(mu_s, mu_t)} sum_ij pi_ij (alpha d(x_i, x_j) + L(y_i, f(x_j)))``
    (+ ``lambda Omega(f)``, the model's own regularisation); Section 3.1, the block
    coordinate descent (the plan for fixed ``f``: an OT problem with the cost
    ``alpha D + L(f)``; ``f`` for fixed ``pi``: a weighted learning problem on the target
    rows, Eq. (9) for the hinge/cross-entropy losses with the weights
    ``n_t sum_{i in c} pi_ij``).

    Examples
    --------
    >>> import numpy as np
    >>> from shiftlearn.mapping import JDOTClassifier
    >>> from shiftlearn.datasets import make_sca_toy
    >>> X, y, sd = make_sca_toy(n_per_cluster=10, random_state=0)
    >>> clf = JDOTClassifier().fit(X, y, sd)
    >>> clf.predict(X[sd < 0]).shape
    (30,)
    """

    _task = "classification"

    def score(self, X, y, sample_weight=None, sample_domain=None):
        """Accuracy on the rows of ``X`` that carry a label: unlabeled rows (``-1``, NaN,
        ...) are skipped, never counted as errors (``sample_domain`` ignored)."""
        return labeled_score(self, X, y, sample_weight, "classification")

    @staticmethod
    def _default():
        return LogisticRegression()

    def _check_estimator(self, est) -> None:
        """Refuse a model whose ``fit`` takes no ``sample_weight`` or without
        ``predict_proba``: JDOT's model step is a weighted fit and its label cost the
        cross-entropy."""
        name = type(last_step(est)).__name__
        if not has_fit_parameter(last_step(est), "sample_weight"):
            raise ValueError(
                f"JDOTClassifier fits its model on the target rows weighted by the transport "
                f"plan, but {name}.fit takes no sample_weight, so the plan's labels would be "
                "dropped. Use a classifier that takes sample_weight and has predict_proba, "
                "e.g. sklearn.linear_model.LogisticRegression (on the command line: "
                "--classifier logreg).")
        if not hasattr(est, "predict_proba"):
            raise ValueError(
                f"JDOTClassifier's plan costs are the model's cross-entropy, but {name} has no "
                "predict_proba. Use a classifier with predict_proba, e.g. "
                "sklearn.linear_model.LogisticRegression (or SVC(probability=True)).")

    def _source_labels(self, ys: np.ndarray) -> np.ndarray:
        classes, codes = np.unique(ys, return_inverse=True)
        if classes.shape[0] < 2:
            raise ValueError(
                f"The labeled source rows hold one class only ({classes[0]}): the classifier "
                "would predict that class for every row. Give labeled source rows of at least "
                "2 classes (y = -1 marks unlabeled rows; if -1 is one of your classes, "
                "re-encode the labels, e.g. with sklearn.preprocessing.LabelEncoder).")
        self.classes_ = classes
        self._codes = codes
        return ys

    def _fit_source(self, Xs, ys) -> None:
        self.estimator_.fit(Xs, ys)

    def _fit_step(self, Xt, ys, plan, prev) -> np.ndarray:
        K, nt = self.classes_.shape[0], Xt.shape[0]
        onehot = np.zeros((plan.shape[0], K))
        onehot[np.arange(plan.shape[0]), self._codes] = 1.0
        W = nt * (plan.T @ onehot)                        # n_t x K: the carried labels
        keep = W > _DUST * W.max()
        rows, cols = np.nonzero(keep)
        yk = self.classes_[cols]
        fit_warm(self.estimator_, prev, yk,                # from the last model's solution
                 lambda: fit_weighted(self.estimator_, Xt[rows], yk, W[rows, cols]))
        logp = self._log_proba(Xt)
        return -logp[:, self._codes].T                    # L_ij = -log p(y_i | x_j)

    def _log_proba(self, X) -> np.ndarray:
        """log p(c | x) for every source class (``-inf`` guarded: ``log(p + 1e-16)``), the
        model's columns put in ``classes_`` order."""
        P = self._full_proba(X)
        return np.log(P + 1e-16)

    def _full_proba(self, X) -> np.ndarray:
        p = self.estimator_.predict_proba(X)
        cols = np.searchsorted(self.classes_, self.estimator_.classes_)
        if p.shape[1] == self.classes_.shape[0] and np.array_equal(cols, np.arange(p.shape[1])):
            return p
        out = np.zeros((p.shape[0], self.classes_.shape[0]))
        out[:, cols] = p
        return out

    def __init__(self, estimator=None, alpha=1.0, reg_e=0.0, max_iter=100, tol=1e-5):
        super().__init__(estimator=estimator, alpha=alpha, reg_e=reg_e, max_iter=max_iter,
                         tol=tol)

    @available_if(lambda self: hasattr(self.estimator_ if hasattr(self, "estimator_") else
                                       (self._default() if self.estimator is None
                                        else self.estimator), "predict_proba"))
    def predict_proba(self, X, sample_domain=None):
        """Class probabilities of the rows of ``X`` (columns in ``classes_`` order;
        ``sample_domain`` ignored, as in :meth:`predict`)."""
        check_is_fitted(self, "estimator_")
        X = check_X(X, estimator=self, reset=False)
        return self._full_proba(X)


class JDOTRegressor(RegressorMixin, _BaseJDOT):
    """Joint distribution optimal transport regressor: a regressor of the target rows
    learned from the source values the transport plan carries to them, alternating plan and
    model.

    ``fit(X, y, sample_domain)`` minimises over the couplings ``pi`` of the uniform weights
    and over the model ``f``::

        sum_ij pi_ij (alpha D_ij + (y_i - f(x_j))^2),   D_ij = ||x_i - x_j||^2 / mean(||.||^2)

    by block coordinate descent: the first plan on the feature cost alone, then (1) ``f``
    fitted by least squares on the target rows and the values the plan carries to them,
    ``y^_j = n_t sum_i pi_ij y_i`` (for the squared loss this fit minimises the objective in
    ``f`` exactly: ``sum_i pi_ij (y_i - f)^2 = (1/n_t)(y^_j - f)^2 + const``), (2) the plan
    of the cost ``alpha D + (y_i - f(x_j))^2``, until an alternation lowers the objective by
    at most ``tol`` (or raises it) or ``max_iter`` model fits. ``predict`` applies ``f`` to
    new target rows. Several sources are pooled; the target values are never read.

    Parameters
    ----------
    estimator : regressor or None, default=None
        The model ``f``; it should minimise the squared loss (``Ridge``,
        ``LinearRegression``, a kernel ridge) for the alternation to descend. ``None``:
        ``Ridge()``.
    alpha : float > 0, default=1.0
        Weight of the feature cost (divided by its mean, so without unit) against the squared
        loss (in the units of ``y`` squared: scale ``y`` to balance them).
    reg_e : float >= 0, default=0.0
        ``0``: exact plans; ``> 0``: entropic plans with this weight of the entropy.
    max_iter : int >= 1, default=100
        Cap on the model fits (alternations).
    tol : float >= 0, default=1e-5
        Stop when an alternation lowers the objective by at most this. A regularised model
        (logistic regression's default penalty, a ridge) does not minimise the objective in
        ``f`` exactly, and entropic plans (``reg_e > 0``) minimise it plus their entropy, so
        the alternation can rise or cycle between two states; it then stops too, and keeps
        the state with the lower objective.

    Attributes
    ----------
    estimator_ : the fitted model ``f``
    plan_ : ndarray of shape (n_source, n_target), the plan kept
    loss_history_ : list of float, the objective after each model fit, the last one
        included even when its state was not kept (the kept state's is the lowest)
    n_iter_ : int, model fits run (1 without target rows: ``f`` on the source rows)
    n_features_in_ : int
    feature_names_in_ : ndarray of str
        Only when ``X`` had string column names.

    Raises
    ------
    ImportError
        POT is not installed.
    ValueError
        The plan exceeding the memory budget; NaN/inf in ``X`` or in a source value.

    Notes
    -----
    Cost per alternation: the plan (as :class:`JDOTClassifier`), the model's fit on ``n_t``
    rows, the label cost ``O(n_s n_t)``; once: the feature cost ``O(n_s n_t d)``. Memory
    ``O(n_s n_t)``, refused up front beyond the package's budget. Without target rows the
    model is fitted on the source rows, with a warning.

    References
    ----------
    N. Courty, R. Flamary, A. Habrard and A. Rakotomamonjy, "Joint distribution optimal
    transportation for domain adaptation", NeurIPS 2017: Eq. (4), the objective with the
    squared loss; Section 3.1, the block coordinate descent, Eq. (8): for the squared loss
    the model step is least squares on ``(x_j, n_t sum_i pi_ij y_i)``.

    Examples
    --------
    >>> import numpy as np
    >>> from shiftlearn.mapping import JDOTRegressor
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(40, 2)); X[20:] += 1.0
    >>> y = X @ np.array([1.0, -1.0]); y[20:] = np.nan     # target rows unlabeled
    >>> reg = JDOTRegressor().fit(X, y, np.r_[np.ones(20, int), -2 * np.ones(20, int)])
    >>> reg.predict(X[20:]).shape
    (20,)
    """

    _task = "regression"

    def score(self, X, y, sample_weight=None, sample_domain=None):
        """R^2 on the rows of ``X`` that carry a value: NaN rows are skipped
        (``sample_domain`` ignored)."""
        return labeled_score(self, X, y, sample_weight, "regression")

    @staticmethod
    def _default():
        return Ridge()

    def _source_labels(self, ys: np.ndarray) -> np.ndarray:
        return np.asarray(ys, dtype=np.float64)

    def _fit_source(self, Xs, ys) -> None:
        self.estimator_.fit(Xs, ys)

    def _fit_step(self, Xt, ys, plan, prev) -> np.ndarray:
        mass = plan.sum(axis=0)
        mass[mass <= 0] = 1.0
        yt = (ys @ plan) / mass                          # n_t sum_i pi_ij y_i (exact plan)
        self.estimator_.fit(Xt, yt)
        pred = np.asarray(self.estimator_.predict(Xt), dtype=np.float64).ravel()
        return (ys[:, None] - pred[None, :]) ** 2

    def __init__(self, estimator=None, alpha=1.0, reg_e=0.0, max_iter=100, tol=1e-5):
        super().__init__(estimator=estimator, alpha=alpha, reg_e=reg_e, max_iter=max_iter,
                         tol=tol)
