"""``DASVM``: Bruzzone and Marconcini's domain adaptation SVM (self-labeling of target rows)."""

from __future__ import annotations

import warnings
from numbers import Integral

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin, clone
from sklearn.exceptions import ConvergenceWarning
from sklearn.multiclass import OneVsRestClassifier
from sklearn.svm import SVC
from sklearn.utils.metaestimators import available_if
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted

from .._constraints import HasMethods, Interval, check_params
from .._validation import (
    check_sample_domain,
    check_X,
    check_X_y_domain,
    require_y,
    scored_rows,
    unlabeled_mask,
)

__all__ = ["DASVM", "class_scores"]


def class_scores(decision: np.ndarray, n_classes: int) -> np.ndarray:
    """Per-class signed distances ``S`` of shape ``(n, K)`` from ``decision_function`` values.

    Two classes: ``decision`` is the one binary value ``f`` (positive for ``classes_[1]``), and
    ``S = [-f, f]``. More classes: ``decision`` holds the ``K`` one-vs-rest values
    ``f_c`` and ``S = decision``. Either way ``S[i, c] >= 0`` on the side of class ``c`` and
    ``|S[i, c]| < 1`` inside the margin band of an SVM. Cost: ``O(n K)``.

    Examples
    --------
    >>> class_scores(np.array([0.5, -2.0]), 2).tolist()
    [[-0.5, 0.5], [2.0, -2.0]]
    """
    d = np.asarray(decision, dtype=np.float64)
    if n_classes == 2:
        d = d.reshape(-1)
        return np.column_stack([-d, d])
    return d.reshape(d.shape[0], n_classes)


def _top(mask: np.ndarray, score: np.ndarray, count: int) -> np.ndarray:
    """Indices of the ``count`` rows of ``mask`` with the largest ``score`` (ties: the first
    row first)."""
    idx = np.flatnonzero(mask)
    if count <= 0 or idx.size == 0:
        return idx[:0]
    order = np.argsort(-score[idx], kind="stable")
    return idx[order[:count]]


class DASVM(ClassifierMixin, BaseEstimator):
    """Domain adaptation SVM (Bruzzone and Marconcini): an SVM that labels the target rows of
    its margin band one batch at a time and forgets the source rows.

    The SVM is first trained on the labeled rows. At each iteration, with the current model's
    per-class decision values ``S`` (:func:`class_scores`):

    1. a target row added earlier whose predicted class changed goes back to the unlabeled
       pool;
    2. among the unlabeled target rows inside the margin band on the side of their predicted
       class ``c`` (``0 <= S[i, c] < 1``), the ``k`` of largest ``S[i, c]`` (the closest to the
       margin bound) join the training set with label ``c``, for every class ``c``;
    3. for each class, as many source rows of that class as target rows were just added with
       it leave the training set: those farthest from the boundary on their own side (largest
       ``S[i, c]``), until none is left;
    4. the SVM is retrained on the new training set.

    The iterations stop when the training set no longer changes (no target row in the margin
    band, no label changed), or after ``max_iter`` fits (with a ``ConvergenceWarning``),
    or before a retraining that would leave a class without rows (the current model is kept).
    ``predict`` is the last model's.

    Parameters
    ----------
    estimator : classifier or None, default None
        The SVM, cloned at every retraining; it needs ``decision_function`` (its values are the
        signed distances of the margin band: ``|f| < 1`` for an SVM). ``None`` means
        ``sklearn.svm.SVC(kernel="linear")``. With more than two classes it is wrapped in a
        ``OneVsRestClassifier``, so that each class has its own binary SVM and margin.
    k : int, default 3
        Target rows moved into the training set per class and iteration (the paper's ``rho``).
    max_iter : int, default 100
        Largest number of fits of ``estimator``, the first one (on the labeled rows) included;
        ``1`` gives the SVM of the labeled rows.

    Attributes
    ----------
    estimator_ : the last fitted model (what ``predict`` uses).
    classes_ : ndarray, the labels of the labeled rows.
    n_iter_ : int, the fits done (``1``: the SVM of the labeled rows only).
    semilabeled_ : ndarray of bool, shape (n_samples,), the rows of the fit that are unlabeled
        target rows in ``estimator_``'s training set.
    removed_ : ndarray of bool, shape (n_samples,), the source rows left out of it.
    n_features_in_, feature_names_in_ : as scikit-learn records them.

    Raises
    ------
    ValueError
        Fewer than two classes among the labeled rows, an ``estimator`` without
        ``decision_function``, non-finite ``X``, an invalid ``sample_domain``.

    Notes
    -----
    Labeled target rows (semi-supervised input) are training rows like the source rows but are
    never removed. With no unlabeled target row the result is the SVM of the labeled rows
    (``n_iter_ = 1``). Cost: at most ``max_iter`` fits of ``estimator`` on at most
    ``n_labeled + m`` rows (an SVC costs ``O(n^2 d)`` to ``O(n^3)`` each) and the decision values
    of the ``n`` rows per iteration; ``O(n K)`` besides. Each iteration adds at most ``k K``
    rows, so labeling ``m`` target rows takes at least ``m / (k K)`` iterations. Design notes and
    the differences with skada's ``DASVMClassifier``: ``docs/dev/selflabeling.md``.

    ``predict_proba`` exists when ``estimator`` has it (``SVC(probability=True)``,
    ``LogisticRegression``). ``DASVM`` predicts labels itself: as an adapter of
    :class:`~shiftlearn.compose.DomainAdaptationClassifier` it replaces the final classifier
    (class attribute ``_replaces_estimator``), which is passed as its ``estimator`` (refused
    before any fit, by ``_check_estimator``, when it has no ``decision_function``).

    References
    ----------
    L. Bruzzone and M. Marconcini, "Domain adaptation problems: a DASVM classification technique
    and a circular validation strategy", IEEE TPAMI 32(5), 2010. Each model is the SVM
    ``min_w 1/2 ||w||^2 + C sum_i xi_i`` over the current training set (the remaining source
    rows and the semilabeled target rows, ``y_i f(x_i) >= 1 - xi_i``); the semilabeled rows of
    iteration ``i`` are ``H_up = top_rho {x in U : 0 <= f(x) < 1}`` and ``H_low = top_rho {x in
    U : -1 < f(x) < 0}`` by ``|f(x)|``; the paper's growing cost ``C*`` of the semilabeled rows
    is not applied (every row has the cost ``C`` of ``estimator``).

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> Xs = np.r_[rng.normal(-2, 1, (30, 2)), rng.normal(2, 1, (30, 2))]
    >>> Xt = Xs + [1.5, 3.0]
    >>> X = np.r_[Xs, Xt]; y = np.r_[np.repeat([0, 1], 30), -np.ones(60, int)]
    >>> sd = np.r_[np.ones(60, int), -2 * np.ones(60, int)]
    >>> clf = DASVM(k=5).fit(X, y, sd)
    >>> clf.n_iter_ > 1, clf.predict(Xt).shape
    (True, (60,))
    """

    _replaces_estimator = True
    __metadata_request__fit = {"sample_domain": True}
    __metadata_request__score = {"sample_domain": True}

    _parameter_constraints: dict = {
        "estimator": [HasMethods(["fit", "decision_function"]), None],
        "k": [Interval(Integral, 1, None, closed="left")],
        "max_iter": [Interval(Integral, 1, None, closed="left")],
    }

    def __init__(self, estimator=None, *, k: int = 3, max_iter: int = 100):
        self.estimator = estimator
        self.k = k
        self.max_iter = max_iter

    def _check_estimator(self, estimator) -> None:
        """Refuse, before any fit, a classifier without ``decision_function`` (the hook
        ``DomainAdaptationClassifier`` calls on the classifier it passes as ``estimator``)."""
        if estimator is not None and not hasattr(estimator, "decision_function"):
            raise ValueError(f"DASVM needs a classifier with decision_function (the signed "
                             f"distances of its margin band); {type(estimator).__name__} has "
                             "none. Give an SVM, e.g. sklearn.svm.SVC(kernel='linear'), or "
                             "None for DASVM's own.")

    def _has_proba(self) -> bool:
        est = getattr(self, "estimator_", None)
        if est is None:
            est = SVC(kernel="linear") if self.estimator is None else self.estimator
        return hasattr(est, "predict_proba")

    def _new_model(self):
        est = SVC(kernel="linear") if self.estimator is None else self.estimator
        est = clone(est)
        return est if self.classes_.shape[0] == 2 else OneVsRestClassifier(est)

    def fit(self, X, y, sample_domain=None):
        """Train the SVM on the labeled rows, then move target rows in and source rows out.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : array-like of shape (n_samples,), ``-1`` (or NaN, ``""``) for unlabeled rows.
        sample_domain : array-like of shape (n_samples,) or None
            Positive ids for source rows, negative ids for target rows; ``None`` reads the
            labeled rows as source rows and the unlabeled ones as target rows (skada's rule).

        Returns
        -------
        self
        """
        check_params(self)
        require_y(y, self, ": give the source labels, y = -1 on the unlabeled target rows, and "
                           "sample_domain.")
        X, y, sd = check_X_y_domain(X, y, sample_domain, estimator=self, task="classification")
        unl = unlabeled_mask(y, task="classification")
        check_classification_targets(y[~unl])
        self.classes_ = np.unique(y[~unl])
        if self.classes_.shape[0] < 2:
            raise ValueError(f"DASVM needs at least two classes among the labeled rows, got one "
                             f"class ({self.classes_[0]!r}): an SVM separates classes. Give "
                             "labeled rows of at least two classes.")
        n, K = X.shape[0], self.classes_.shape[0]
        lab = ~unl
        src = np.flatnonzero((sd > 0) & lab)          # removable rows
        tgt = np.flatnonzero((sd < 0) & unl)          # the pool of target rows
        code = np.full(n, -1, dtype=np.int64)
        code[lab] = np.searchsorted(self.classes_, y[lab])
        kept = lab.copy()                             # labeled rows in the training set
        semi = np.zeros(n, dtype=bool)                # semilabeled target rows
        semi_code = np.full(n, -1, dtype=np.int64)

        model = self._new_model().fit(X[kept], y[kept])
        train = (kept.copy(), semi.copy())
        n_iter, converged = 1, True
        if tgt.size:
            converged = False
            while True:
                S_t = class_scores(model.decision_function(X[tgt]), K)
                pred = np.argmax(S_t, axis=1)
                back = semi[tgt] & (pred != semi_code[tgt])
                semi[tgt[back]] = False
                s_pred = S_t[np.arange(tgt.size), pred]
                band = ~semi[tgt] & (s_pred >= 0) & (s_pred < 1)
                added = np.zeros(K, dtype=np.int64)
                for c in range(K):
                    pick = _top(band & (pred == c), s_pred, self.k)
                    semi[tgt[pick]], semi_code[tgt[pick]] = True, c
                    added[c] = pick.size
                if not back.any() and not added.any():
                    converged = True
                    break
                if n_iter >= self.max_iter:
                    break
                if added.any() and src.size:
                    S_s = class_scores(model.decision_function(X[src]), K)
                    for c in range(K):
                        drop = _top(kept[src] & (code[src] == c), S_s[:, c], int(added[c]))
                        kept[src[drop]] = False
                labels = np.r_[code[kept], semi_code[semi]]
                if np.unique(labels).shape[0] < K:
                    converged = True      # a class would vanish: keep the current model
                    break
                rows = np.r_[np.flatnonzero(kept), np.flatnonzero(semi)]
                model = self._new_model().fit(X[rows], self.classes_[labels])
                train = (kept.copy(), semi.copy())
                n_iter += 1
        if not converged:
            warnings.warn(f"DASVM stopped after max_iter={self.max_iter} fits while the "
                          "training set was still changing; raise max_iter (or k) to let it "
                          "converge.", ConvergenceWarning, stacklevel=2)
        self.estimator_ = model
        self.n_iter_ = n_iter
        self.semilabeled_ = train[1]
        self.removed_ = np.zeros(n, dtype=bool)
        self.removed_[src] = ~train[0][src]
        return self

    def decision_function(self, X) -> np.ndarray:
        """``estimator_.decision_function(X)``: shape ``(n,)`` for two classes (positive for
        ``classes_[1]``), ``(n, K)`` one-vs-rest values otherwise."""
        check_is_fitted(self, "estimator_")
        X = check_X(X, estimator=self, reset=False)
        return self.estimator_.decision_function(X)

    @available_if(_has_proba)
    def predict_proba(self, X) -> np.ndarray:
        """``estimator_.predict_proba(X)``, columns in ``classes_`` order; only when the
        estimator has it (``SVC(probability=True)``, ``LogisticRegression``)."""
        check_is_fitted(self, "estimator_")
        X = check_X(X, estimator=self, reset=False)
        return self.estimator_.predict_proba(X)

    def predict(self, X) -> np.ndarray:
        """The labels the last model predicts. Cost: its ``predict``."""
        check_is_fitted(self, "estimator_")
        X = check_X(X, estimator=self, reset=False)
        return self.estimator_.predict(X)

    def score(self, X, y, sample_domain=None) -> float:
        """Accuracy on the rows that carry a label (unlabeled rows are skipped);
        ``sample_domain`` is accepted and not used."""
        if sample_domain is not None:
            check_sample_domain(sample_domain, len(y))
        keep, y = scored_rows(y, task="classification")
        if not keep.any():
            raise ValueError("score needs labeled rows: every y is the unlabeled marker.")
        X = check_X(X, estimator=self, reset=False)
        return float(np.mean(self.predict(X[keep]) == y[keep]))
