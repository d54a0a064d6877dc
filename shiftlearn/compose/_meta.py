"""``DomainAdaptationClassifier`` and ``DomainAdaptationRegressor``: any adapter + any scikit-learn
classifier or regressor, predict the target."""

from __future__ import annotations

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin, RegressorMixin, clone
from sklearn.linear_model import Ridge
from sklearn.metrics import accuracy_score, r2_score
from sklearn.neighbors import KNeighborsClassifier
from sklearn.utils import TransformerTags, _safe_indexing
from sklearn.utils.metaestimators import available_if
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import _check_feature_names_in, check_is_fitted

from .._constraints import HasMethods, check_params
from .._validation import (
    check_sample_domain,
    check_X,
    check_X_y_domain,
    require_y,
    scored_rows,
    scoring_domains,
    takes_sample_domain,
    unlabeled_mask,
)
from ..adaptation import FitMemory
from ._pipeline import (
    _fitted_weights,
    _gives_weights,
    _is_labeler,
    check_labeler_reach,
    check_weights_reach,
    fit_weighted,
)

__all__ = ["DomainAdaptationClassifier", "DomainAdaptationRegressor"]


class _Labeler(HasMethods):
    """Parameter constraint: a labeler (``_replaces_estimator = True`` on its class) with
    ``fit`` and ``predict``."""

    def __init__(self):
        super().__init__(["fit", "predict"])

    def is_satisfied_by(self, val) -> bool:
        return _is_labeler(val) and super().is_satisfied_by(val)

    def __str__(self) -> str:
        return ("a labeler (a class with _replaces_estimator = True, e.g. JDOTClassifier(), "
                "OTLabelProp())")


def _estimator_has(attr: str):
    """``available_if`` test: the fitted classifier (else the given one, else the default 1NN)
    has ``attr``; for a labeler adapter, the labeler."""
    def check(self) -> bool:
        if _is_labeler(self.adapter):
            est = self.adapter_ if hasattr(self, "adapter_") else self._labeler()
        elif hasattr(self, "estimator_"):
            est = self.estimator_
        else:
            est = KNeighborsClassifier(1) if self.estimator is None else self.estimator
        return hasattr(est, attr)
    return check


class _DomainAdaptationBase(BaseEstimator):
    """What :class:`DomainAdaptationClassifier` and :class:`DomainAdaptationRegressor` share:
    fit the adapter on every row, the final estimator on the adapted labeled source rows
    (importance weights of a reweighting adapter as its ``sample_weight``), and embed new rows.

    A subclass gives ``_validate`` (the rows and the labeled-source mask), ``_default_estimator``
    (used when ``estimator`` is None) and ``_fit_final`` (the final estimator's fit)."""

    # scikit-learn metadata routing: sample_domain is requested by default, so
    # GridSearchCV(...).fit(X, y, sample_domain=sd) routes it here when routing is on
    __metadata_request__fit = {"sample_domain": True}
    # and to score (GridSearchCV's default scoring) and the prediction methods, which hand it to
    # an adapter that maps source and target rows differently (CORAL)
    __metadata_request__score = {"sample_domain": True}
    __metadata_request__predict = {"sample_domain": True}
    __metadata_request__transform = {"sample_domain": True}

    _parameter_constraints: dict = {
        "adapter": [HasMethods(["fit", "transform"]), None],
        "estimator": [HasMethods(["fit", "predict"]), None],
        "memory": [FitMemory, None],
    }

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.transformer_tags = TransformerTags()
        return tags

    def fit(self, X, y, sample_domain=None):
        """Fit the adapter on all rows and the final estimator on the labeled source rows.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)
            Unlabeled (target) rows: ``-1`` or NaN for a classifier, NaN for a regressor.
        sample_domain : array-like of shape (n_samples,), optional
            Positive = source, negative = target; inferred from ``y`` if omitted.

        Returns
        -------
        self
        """
        self._fit_transform(X, y, sample_domain)
        return self

    def _labeler(self):
        """A clone of the labeler adapter, given this estimator's final estimator (if any)."""
        labeler = clone(self.adapter)
        if self.estimator is not None:
            labeler.set_params(estimator=clone(self.estimator))
        return labeler

    def _fit_transform(self, X, y, sample_domain):
        X, y, sd, lab = self._validate(X, y, sample_domain)
        if _is_labeler(self.adapter):
            # the labeler predicts the labels itself: it replaces the final estimator
            check_labeler_reach(self.adapter, self.estimator)     # refused before any fit
            self.adapter_ = self._labeler().fit(X, y, sample_domain=sd)
            # its fitted model when it exposes one (the protocol asks only for predict)
            self.estimator_ = getattr(self.adapter_, "estimator_", self.adapter_)
            if hasattr(self.adapter_, "classes_"):
                self.classes_ = self.adapter_.classes_
            return X
        if _gives_weights(self.adapter):        # refused before any fit
            check_weights_reach(self.adapter, self._default_estimator()
                                if self.estimator is None else self.estimator)
        self.adapter_ = self._clone_adapter()
        if _gives_weights(self.adapter_):
            # the rows stay where they are; their importance weights go to the estimator
            self.adapter_.fit(X, y, sample_domain=sd)
            self._fit_final(X, y, lab, _fitted_weights(self.adapter_, X, sd))
            return X
        Z = X if self.adapter_ is None else self.adapter_.fit_transform(X, y, sample_domain=sd)
        self._fit_final(Z, y, lab)
        return Z

    def _clone_adapter(self):
        if self.adapter is None:
            return None
        adapter = clone(self.adapter)
        if self.memory is not None and "memory" in adapter.get_params(deep=False):
            adapter.set_params(memory=self.memory)
        return adapter

    def fit_transform(self, X, y, sample_domain=None):
        """``fit(X, y, sample_domain)``, then the adapted features of the training rows (the
        adapter's own ``fit_transform``, equal to ``transform(X)``)."""
        return self._fit_transform(X, y, sample_domain)

    def transform(self, X, sample_domain=None):
        """The adapted features of ``X`` (same feature count and names as in ``fit``).

        ``sample_domain`` (optional, positive = source) reaches adapters whose ``transform``
        takes it, i.e. those that map the domains differently
        (:class:`~shiftlearn.adaptation.CORAL` maps source rows and leaves target rows); without
        it every row is a target row. The subspace adapters embed every row the same way and do
        not take it."""
        check_is_fitted(self, "estimator_")
        X = check_X(X, estimator=self, reset=False)
        if self.adapter_ is None or _is_labeler(self.adapter_):
            return X
        if sample_domain is not None and takes_sample_domain(self.adapter_, "transform"):
            return self.adapter_.transform(X, sample_domain=sample_domain)
        return self.adapter_.transform(X)

    def get_feature_names_out(self, input_features=None):
        """Names of the adapted features (the adapter's, e.g. ``tca0, tca1, ...``);
        ``input_features``, if given, must match the names seen in ``fit``."""
        check_is_fitted(self, "estimator_")
        names = _check_feature_names_in(self, input_features)
        return names if self.adapter_ is None or _is_labeler(self.adapter_) \
            else self.adapter_.get_feature_names_out()


class DomainAdaptationClassifier(ClassifierMixin, _DomainAdaptationBase):
    """Fit a domain adapter on all rows, a classifier on the adapted labeled source rows.

    ``fit(X, y, sample_domain)``: the adapter (e.g. :class:`~shiftlearn.adaptation.TCA`,
    :class:`~shiftlearn.adaptation.SCA`) is fitted on every row (labeled sources and the
    unlabeled targets), then ``estimator`` on the embedding of the labeled source rows
    (``sample_domain > 0`` and ``y`` not ``-1``/NaN). ``predict(X)`` embeds ``X`` with the fitted
    adapter and calls the classifier: pass the target rows to label them.

    A reweighting adapter (one with ``compute_weights``, e.g. :class:`shiftlearn.reweighting.KMM`)
    leaves the rows as they are: its fitted ``weights_`` (the source rows' importance weights)
    are the classifier's ``sample_weight``. A classifier whose ``fit`` takes no
    ``sample_weight`` (the default 1NN) is then refused with a ``ValueError`` before anything
    is fitted, rather than dropping the weights.

    A labeler adapter (a class with ``_replaces_estimator = True`` and an ``estimator``
    parameter, e.g. :class:`shiftlearn.mapping.JDOTClassifier`,
    :class:`shiftlearn.mapping.OTLabelProp`, :class:`shiftlearn.selflabeling.DASVM`,
    :class:`shiftlearn.labelshift.BBSE`) predicts the target labels itself: it *replaces the
    classifier*. Its clone, with ``estimator`` set to this estimator's (when not ``None``; else
    the labeler keeps its own model), is fitted on every row with ``sample_domain``, and
    ``predict``/``predict_proba`` are its own; ``transform`` is the identity (the scorers that
    embed rows see the raw features). A classifier the labeler cannot use (JDOT's weighted fit
    with the 1NN, which takes no ``sample_weight``) is refused with a ``ValueError`` before
    anything is fitted.

    Parameters
    ----------
    adapter : transformer with ``fit(X, y, sample_domain)``, labeler, or None
        Cloned in ``fit``. ``None`` means no adaptation: the classifier is trained on the raw
        features of the labeled source rows (the baseline every selection includes).
    estimator : classifier or None, default=None
        ``None`` means ``KNeighborsClassifier(n_neighbors=1)`` (the papers' 1NN protocol); for
        a labeler adapter, ``None`` keeps the labeler's own model.
    memory : FitMemory or None, default=None
        Given to the adapter's clone (it replaces the adapter's own ``memory``), so that a
        search over this estimator shares work between fits on the same rows
        (:class:`~shiftlearn.adaptation.FitMemory`). Adapters without a ``memory`` parameter
        ignore it (their results do not depend on it).

    Attributes
    ----------
    adapter_ : fitted clone of ``adapter``
    estimator_ : fitted clone of ``estimator`` (for a labeler: its fitted model
        ``estimator_``, else the fitted labeler)
    classes_ : ndarray
    n_features_in_ : int
    feature_names_in_ : ndarray of str
        Only when ``X`` had string column names (a DataFrame); ``transform``/``predict`` then
        refuse columns in another order.

    Notes
    -----
    It is a classifier that also has ``transform`` (the adapted features), so it
    carries scikit-learn's classifier *and* transformer tags. Labeled source rows of a single
    class are refused: the classifier could only predict that class for every target row
    (usually the sign that ``-1``, the unlabeled marker, was meant as a class).

    Examples
    --------
    >>> from shiftlearn.datasets import make_sca_toy
    >>> from shiftlearn.adaptation import SCA
    >>> from shiftlearn.compose import DomainAdaptationClassifier
    >>> X, y, sd = make_sca_toy(n_per_cluster=20, random_state=0)
    >>> clf = DomainAdaptationClassifier(SCA(n_components=2)).fit(X, y, sd)
    >>> clf.predict(X[sd < 0]).shape
    (60,)
    """

    # scikit-learn metadata routing: sample_domain is requested by default, so
    # GridSearchCV(...).fit(X, y, sample_domain=sd) routes it here when routing is on
    __metadata_request__fit = {"sample_domain": True}
    # and to score (GridSearchCV's default scoring) and the prediction methods, which hand it to
    # an adapter that maps source and target rows differently (CORAL)
    __metadata_request__score = {"sample_domain": True}
    __metadata_request__predict = {"sample_domain": True}
    __metadata_request__predict_proba = {"sample_domain": True}
    __metadata_request__transform = {"sample_domain": True}

    _parameter_constraints: dict = {
        "adapter": [HasMethods(["fit", "transform"]), _Labeler(), None],
        "estimator": [HasMethods(["fit", "predict"]), None],
        "memory": [FitMemory, None],
    }

    def __init__(self, adapter, estimator=None, memory=None):
        self.adapter = adapter
        self.estimator = estimator
        self.memory = memory

    def _default_estimator(self):
        return KNeighborsClassifier(n_neighbors=1)

    def _validate(self, X, y, sample_domain, estimator=None):
        check_params(self)
        require_y(y, self, ": give the labels of the source rows and -1 (or NaN) for the "
                           "unlabeled target rows.")
        X, y, sd = check_X_y_domain(X, y, sample_domain, task="classification",
                                    estimator=self if estimator is None else estimator)
        lab = (sd > 0) & ~unlabeled_mask(y)
        if not lab.any():
            raise ValueError("No labeled source rows to train the classifier on: give rows with "
                             "a positive sample_domain and a label (y = -1 or NaN marks "
                             "unlabeled rows).")
        check_classification_targets(y[lab])
        classes = np.unique(y[lab])
        if classes.shape[0] < 2:
            raise ValueError(
                f"The labeled source rows hold one class only ({classes[0]}): the classifier "
                "would predict that class for every row. Give labeled source rows of at least "
                "2 classes (y = -1 marks unlabeled rows; if -1 is one of your classes, "
                "re-encode the labels, e.g. with sklearn.preprocessing.LabelEncoder).")
        return X, y, sd, lab

    def _fit_classifier(self, Z, y, lab, sample_weight=None):
        est = KNeighborsClassifier(n_neighbors=1) if self.estimator is None else self.estimator
        if sample_weight is None:
            self.estimator_ = clone(est).fit(Z[lab], y[lab])
        else:
            self.estimator_ = fit_weighted(clone(est), Z[lab], y[lab], sample_weight[lab])
        self.classes_ = self.estimator_.classes_
        return self

    _fit_final = _fit_classifier

    def predict(self, X, sample_domain=None):
        """Labels of ``X`` (the target rows; ``sample_domain`` as in :meth:`transform`)."""
        Z = self.transform(X, sample_domain)
        if _is_labeler(self.adapter_):
            return self.adapter_.predict(Z)
        return self.estimator_.predict(Z)

    @available_if(_estimator_has("predict_proba"))
    def predict_proba(self, X, sample_domain=None):
        """Class probabilities, when the classifier has ``predict_proba`` (``sample_domain`` as
        in :meth:`transform`)."""
        Z = self.transform(X, sample_domain)
        if _is_labeler(self.adapter_):
            return self.adapter_.predict_proba(Z)
        return self.estimator_.predict_proba(Z)

    def score(self, X, y, sample_weight=None, sample_domain=None):
        """Accuracy on the rows of ``X`` that carry a label (unlabeled rows are skipped).

        ``sample_domain`` as in :meth:`transform`. Without it, rows are target rows, except
        when ``y`` also marks unlabeled rows: then ``X`` is a validation fold of the library's
        convention (``SourceKFold``: held-out labeled source rows and the unlabeled target
        rows) and the labeled rows are source rows, as ``sample_domain`` is inferred everywhere
        (labeled: source ``1``, unlabeled: target ``-2``). This is what ``GridSearchCV``'s
        default scoring needs for an adapter that maps the domains differently (CORAL); for the
        others the rows' domains do not matter."""
        keep, y = scored_rows(y)
        sd = scoring_domains(y, sample_domain)
        # rows taken as given (a DataFrame keeps its column names for predict's check)
        pred = self.predict(_safe_indexing(X, keep), None if sd is None else sd[keep])
        return float(accuracy_score(y[keep], pred, sample_weight=None if sample_weight is None
                                    else np.asarray(sample_weight)[keep]))


class DomainAdaptationRegressor(RegressorMixin, _DomainAdaptationBase):
    """Fit a domain adapter on all rows, a regressor on the adapted labeled source rows.

    The regression counterpart of :class:`DomainAdaptationClassifier`: ``fit(X, y,
    sample_domain)`` fits the adapter (a subspace adapter such as
    :class:`~shiftlearn.adaptation.TCA`, a mapping such as :class:`~shiftlearn.CORAL`) on every
    row, then ``estimator`` on the embedding of the labeled source rows. A reweighting adapter
    (e.g. :class:`~shiftlearn.reweighting.KMM`) leaves the rows as they are and its importance
    weights become the regressor's ``sample_weight`` (a regressor whose ``fit`` takes none is
    refused before anything is fitted). ``predict(X)`` embeds ``X`` and calls the regressor.

    Unlabeled rows are marked by ``y = NaN`` only: every other number, ``-1`` included, is a
    target value. Adapters that need classes (JDA, SCA with its class terms) read the labels as
    classes and are not meant for a real-valued target; use TCA, uSCA, the random-feature TCA,
    CORAL, SA, LinOT or a reweighting adapter.

    Parameters
    ----------
    adapter : transformer with ``fit(X, y, sample_domain)``, or None
        Cloned in ``fit``. ``None`` means no adaptation: the regressor on the raw features of
        the labeled source rows.
    estimator : regressor or None, default=None
        ``None`` means ``Ridge()`` (ridge regression, ``alpha=1``).
    memory : FitMemory or None, default=None
        Given to the adapter's clone, as in :class:`DomainAdaptationClassifier`.

    Attributes
    ----------
    adapter_ : fitted clone of ``adapter``
    estimator_ : fitted clone of ``estimator``
    n_features_in_ : int
    feature_names_in_ : ndarray of str
        Only when ``X`` had string column names (a DataFrame).

    Raises
    ------
    ValueError
        In ``fit``: no labeled source row (every source ``y`` NaN), labels that are not
        numbers, or a reweighting adapter with a regressor that takes no ``sample_weight``.

    Notes
    -----
    Cost: the adapter's fit plus the regressor's on the labeled source rows (``Ridge``:
    ``O(n d^2)`` for ``n`` rows of ``d`` adapted features). One labeled source row is allowed:
    the default ridge then predicts that row's value for every row.

    Examples
    --------
    >>> import numpy as np
    >>> from shiftlearn.adaptation import CORAL
    >>> from shiftlearn.compose import DomainAdaptationRegressor
    >>> rng = np.random.default_rng(0)
    >>> X = np.r_[rng.normal(0, 1, (40, 2)), rng.normal(1, 2, (40, 2))]
    >>> y = np.r_[X[:40] @ [1.0, -1.0], np.full(40, np.nan)]
    >>> sd = np.r_[np.ones(40, int), -np.ones(40, int)]
    >>> reg = DomainAdaptationRegressor(CORAL()).fit(X, y, sd)
    >>> reg.predict(X[sd < 0]).shape
    (40,)
    """

    _parameter_constraints: dict = {**_DomainAdaptationBase._parameter_constraints}

    def __init__(self, adapter, estimator=None, memory=None):
        self.adapter = adapter
        self.estimator = estimator
        self.memory = memory

    def _default_estimator(self):
        return Ridge()

    def _validate(self, X, y, sample_domain):
        check_params(self)
        require_y(y, self, ": give the target values of the source rows and NaN for the "
                           "unlabeled target rows.")
        y_arr = np.asarray(y)
        if y_arr.dtype.kind == "c":
            raise ValueError(f"{type(self).__name__}: Complex data not supported in y; "
                             "give real numbers (NaN for unlabeled rows).")
        if y_arr.dtype.kind not in "biuf":
            try:
                y = y_arr.astype(np.float64)
            except (TypeError, ValueError):
                raise ValueError(
                    f"{type(self).__name__} needs numeric target values (NaN for unlabeled "
                    f"rows), got values of dtype {y_arr.dtype}; for class labels use "
                    "DomainAdaptationClassifier.") from None
        X, y, sd = check_X_y_domain(X, y, sample_domain, task="regression", estimator=self)
        y = np.asarray(y, dtype=np.float64)
        lab = (sd > 0) & ~np.isnan(y)
        if not lab.any():
            raise ValueError("No labeled source rows to train the regressor on: give rows with "
                             "a positive sample_domain and a target value (y = NaN marks "
                             "unlabeled rows).")
        return X, y, sd, lab

    def _fit_final(self, Z, y, lab, sample_weight=None):
        est = Ridge() if self.estimator is None else self.estimator
        if sample_weight is None:
            self.estimator_ = clone(est).fit(Z[lab], y[lab])
        else:
            self.estimator_ = fit_weighted(clone(est), Z[lab], y[lab], sample_weight[lab])
        return self

    def predict(self, X, sample_domain=None):
        """Predicted values of ``X`` (the target rows; ``sample_domain`` as in
        :meth:`DomainAdaptationClassifier.transform`)."""
        Z = self.transform(X, sample_domain)
        return np.asarray(self.estimator_.predict(Z), dtype=np.float64)

    def score(self, X, y, sample_weight=None, sample_domain=None):
        """R^2 on the rows of ``X`` whose ``y`` is not NaN (unlabeled rows are skipped).

        Without ``sample_domain``, rows are target rows, except when ``y`` also holds NaN rows:
        then ``X`` is a validation fold (held-out labeled source rows and the unlabeled target
        rows) and its labeled rows are source rows (``1``, the NaN rows ``-2``), as in
        :meth:`DomainAdaptationClassifier.score`."""
        keep, y = scored_rows(y, task="regression")
        if not keep.any():
            raise ValueError("score needs labeled rows: every y is NaN.")
        y = np.asarray(y, dtype=np.float64)
        if sample_domain is not None:
            sd = check_sample_domain(sample_domain, y.shape[0])
        else:
            sd = np.where(keep, 1, -2).astype(np.int64) if (~keep).any() else None
        pred = self.predict(_safe_indexing(X, keep), None if sd is None else sd[keep])
        return float(r2_score(y[keep], pred, sample_weight=None if sample_weight is None
                              else np.asarray(sample_weight)[keep]))
