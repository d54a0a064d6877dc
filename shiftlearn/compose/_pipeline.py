"""Domain-aware pipelines: adapters see every row, the final estimator only the labeled ones.

A plain scikit-learn ``Pipeline`` hands the same ``y`` to every step. With target rows marked
``y = -1`` (the unlabeled convention), ``make_pipeline(TCA(), KNeighborsClassifier(1))`` trains
the classifier on the target rows as a class ``-1`` and predicts it for them: 0% accuracy and
no error. :func:`make_da_pipeline` builds the pipeline the way skada's ``make_da_pipeline``
does, without needing skada:

* ``sample_domain`` (given to ``fit``, or inferred from ``y`` with the library's rule) reaches
  every step whose ``fit`` accepts it (the domain-aware ones: TCA, SCA, RF-TCA, ...); the other
  transformers (``StandardScaler``, ...) are fitted on all rows, as skada's ``Shared``.
* the final step, if it is a predictor that does not take ``sample_domain``, is wrapped in
  :class:`LabeledOnly`, which fits it on the labeled rows only (``y`` not ``-1``/NaN/``""``).

The other half is ``shiftlearn._validation.warn_if_plain_pipeline`` (a bottom module, since
the adapters call it): a library transformer fitted inside a *plain* ``Pipeline`` on unlabeled
rows, where a later step would learn them as a class, warns and names the fix.
"""

from __future__ import annotations

import warnings

import numpy as np
from sklearn import config_context
from sklearn.base import BaseEstimator, MetaEstimatorMixin, clone
from sklearn.pipeline import Pipeline, make_pipeline
from sklearn.utils import _safe_indexing
from sklearn.utils.metaestimators import available_if
from sklearn.utils.validation import check_is_fitted, has_fit_parameter

from .._validation import (
    _normalize_class_labels,
    check_unlabeled_convention,
    check_y_domain,
    infer_sample_domain,
    label_array,
    learns_labels,
    scored_rows,
    scoring_domains,
    takes_sample_domain,
    unlabeled_mask,
)
from .._weights import fit_weighted
from ..adaptation import FitMemory

__all__ = ["DomainAwarePipeline", "LabeledOnly", "check_labeler_reach", "check_weights_reach",
           "fit_weighted", "make_da_pipeline"]


def _gives_weights(est) -> bool:
    """A reweighting adapter (the protocol of :mod:`shiftlearn.reweighting`, and skada's): it
    has a ``compute_weights`` method; once fitted, ``weights_`` holds the training rows'."""
    return est is not None and not isinstance(est, str) and \
        callable(getattr(est, "compute_weights", None))


def _is_labeler(est) -> bool:
    """A labeler (the protocol of :class:`~shiftlearn.mapping.JDOTClassifier`,
    :class:`~shiftlearn.mapping.OTLabelProp`): a domain-adaptation estimator that predicts the
    target labels itself, marked by the class attribute ``_replaces_estimator = True``, with an
    ``estimator`` parameter (its model) and ``fit(X, y, sample_domain)``; it replaces the
    adapter + classifier pair of :class:`DomainAdaptationClassifier`."""
    return est is not None and not isinstance(est, str) and \
        bool(getattr(type(est), "_replaces_estimator", False))


def check_labeler_reach(labeler, estimator) -> None:
    """Refuse, before anything is fitted, a labeler given an ``estimator`` it cannot use (JDOT
    with a classifier whose ``fit`` takes no ``sample_weight``): the labeler's optional
    ``_check_estimator(estimator)`` raises the ``ValueError`` that names the reason and the fix.
    ``estimator=None`` keeps the labeler's own model."""
    check = getattr(labeler, "_check_estimator", None)
    if estimator is not None and callable(check):
        check(estimator)


def _fitted_weights(est, X, sample_domain) -> np.ndarray:
    """The training rows' weights of a fitted reweighting adapter: its ``weights_``, else its
    ``compute_weights`` of the rows; refused unless finite and non-negative."""
    w = getattr(est, "weights_", None)
    if w is None:
        w = est.compute_weights(X, sample_domain=sample_domain)
    w = np.asarray(w, dtype=np.float64).ravel()
    if w.shape[0] != np.shape(X)[0] or not np.all(np.isfinite(w)) or np.any(w < 0):
        raise ValueError(f"{type(est).__name__} gave sample weights that are not one finite, "
                         "non-negative number per training row.")
    return w


def _takes_sample_weight(est) -> bool:
    """``est.fit`` accepts ``sample_weight`` (a :class:`LabeledOnly` is its estimator, a
    scikit-learn ``Pipeline`` its last step)."""
    if isinstance(est, LabeledOnly):
        est = est.estimator
    if isinstance(est, Pipeline):
        return _takes_sample_weight(est.steps[-1][1])
    return est is not None and not isinstance(est, str) and \
        has_fit_parameter(est, "sample_weight")


def check_weights_reach(adapter, estimator) -> None:
    """Refuse a reweighting ``adapter`` before a final ``estimator`` whose ``fit`` takes no
    ``sample_weight``: the weights would be dropped and the adaptation would do nothing."""
    if _gives_weights(adapter) and not _takes_sample_weight(estimator):
        name = type(estimator.estimator if isinstance(estimator, LabeledOnly)
                    else estimator).__name__
        raise ValueError(
            f"{type(adapter).__name__} is a reweighting adapter: its importance weights go to "
            f"the final estimator's sample_weight, but {name}.fit takes no sample_weight, so "
            "the reweighting would change nothing. Use an estimator that takes sample_weight, "
            "e.g. sklearn.linear_model.LogisticRegression (on the command line: --classifier "
            "logreg).")


def _final_has(attr: str):
    """``available_if`` test of a pipeline method: its final step has ``attr``."""
    return lambda self: self.steps[-1][1] in (None, "passthrough") and attr == "transform" \
        or hasattr(self.steps[-1][1], attr)


def _estimator_has(attr: str):
    return lambda self: hasattr(self.estimator_ if hasattr(self, "estimator_")
                                else self.estimator, attr)


class LabeledOnly(MetaEstimatorMixin, BaseEstimator):
    """Fit ``estimator`` on the labeled rows only; predict on every row.

    Rows whose label is the unlabeled marker (``-1``, NaN, ``"-1"``, ``""``; see
    ``docs/conventions.md``) are dropped before ``estimator.fit``; so are the matching entries
    of array-valued fit parameters such as ``sample_weight``. ``predict``, ``predict_proba``,
    ``decision_function``, ``transform`` and ``classes_`` are the fitted estimator's. ``score``
    skips unlabeled rows. :func:`make_da_pipeline` wraps a pipeline's final predictor in it.

    Parameters
    ----------
    estimator : estimator
        Cloned in ``fit``.

    Attributes
    ----------
    estimator_ : the fitted clone.
    n_features_in_, feature_names_in_ : the fitted clone's, when it has them (a DataFrame's
        columns in another order are refused by its ``predict``).

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.neighbors import KNeighborsClassifier
    >>> X = np.array([[0.0], [1.0], [0.1], [0.9]]); y = np.array([0, 1, -1, -1])
    >>> LabeledOnly(KNeighborsClassifier(1)).fit(X, y).predict(X).tolist()
    [0, 1, 0, 1]
    """

    # scikit-learn metadata routing: sample_domain is requested by default, so
    # GridSearchCV(...).fit(X, y, sample_domain=sd) routes it here when routing is on
    __metadata_request__fit = {"sample_domain": True}

    def __init__(self, estimator):
        self.estimator = estimator

    def fit(self, X, y, sample_domain=None, **fit_params):
        """Fit a clone of ``estimator`` on the rows of ``X`` that carry a label.

        ``sample_domain`` (passed by domain-aware pipelines) is checked as every estimator
        checks it: an unlabeled row in a source (positive) domain is refused, so that a class
        ``-1`` is never silently dropped. A labeled target row (semi-supervised adaptation) is
        a training row too.
        """
        y = label_array(y)
        if sample_domain is None:
            check_unlabeled_convention(y, None)
        else:
            check_y_domain(y, sample_domain, y.shape[0], require_source=False)
        keep = ~unlabeled_mask(y)
        if not keep.any():
            raise ValueError(f"No labeled row to fit {type(self.estimator).__name__} on: every "
                             "y is the unlabeled marker (-1, NaN or empty).")
        n = y.shape[0]
        sub = {k: (_safe_indexing(v, keep) if hasattr(v, "__len__") and len(v) == n else v)
               for k, v in fit_params.items()}
        yk = y[keep]
        if yk.dtype.kind == "f" and np.all(yk == np.round(yk)):
            yk = yk.astype(np.int64)
        elif yk.dtype.kind == "O":          # a pandas column with <NA>: booleans, numbers...
            yk = _normalize_class_labels(yk)
        if sub.get("sample_weight") is not None:
            sw = sub.pop("sample_weight")
            self.estimator_ = fit_weighted(clone(self.estimator), _safe_indexing(X, keep), yk,
                                           sw, **sub)
        else:
            self.estimator_ = clone(self.estimator).fit(_safe_indexing(X, keep), yk, **sub)
        # the fitted estimator's input checks are this one's (it checks the names at predict)
        for attr in ("n_features_in_", "feature_names_in_"):
            if hasattr(self.estimator_, attr):
                setattr(self, attr, getattr(self.estimator_, attr))
            elif attr in vars(self):
                delattr(self, attr)
        return self

    @property
    def classes_(self):
        check_is_fitted(self, "estimator_")
        return self.estimator_.classes_

    @available_if(_estimator_has("predict"))
    def predict(self, X, **params):
        """The fitted estimator's predictions."""
        check_is_fitted(self, "estimator_")
        return self.estimator_.predict(X, **params)

    @available_if(_estimator_has("predict_proba"))
    def predict_proba(self, X, **params):
        """The fitted estimator's class probabilities."""
        check_is_fitted(self, "estimator_")
        return self.estimator_.predict_proba(X, **params)

    @available_if(_estimator_has("decision_function"))
    def decision_function(self, X):
        """The fitted estimator's decision function."""
        check_is_fitted(self, "estimator_")
        return self.estimator_.decision_function(X)

    @available_if(_estimator_has("transform"))
    def transform(self, X):
        """The fitted estimator's transform."""
        check_is_fitted(self, "estimator_")
        return self.estimator_.transform(X)

    @available_if(_estimator_has("score"))
    def score(self, X, y, sample_weight=None):
        """The fitted estimator's score on the labeled rows of ``X``."""
        check_is_fitted(self, "estimator_")
        keep, y = scored_rows(y)
        sw = None if sample_weight is None else np.asarray(sample_weight)[keep]
        return self.estimator_.score(_safe_indexing(X, keep), y[keep], sample_weight=sw)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        inner = self.estimator.__sklearn_tags__()
        tags.estimator_type = inner.estimator_type
        tags.classifier_tags = inner.classifier_tags
        tags.regressor_tags = inner.regressor_tags
        tags.transformer_tags = inner.transformer_tags
        tags.input_tags = inner.input_tags
        return tags


class DomainAwarePipeline(Pipeline):
    """A ``Pipeline`` whose ``fit`` takes ``sample_domain`` and gives it to every step that
    accepts it. Build it with :func:`make_da_pipeline` (which also wraps the final predictor in
    :class:`LabeledOnly`). Everything else is scikit-learn's ``Pipeline``.

    ``sample_domain`` omitted: inferred from ``y`` by the library's rule (labeled rows source
    ``1``, unlabeled rows target ``-2``), after the unlabeled-convention check.
    """

    def _domain_params(self, y, sample_domain, params: dict) -> dict:
        if sample_domain is None and y is not None:
            y = label_array(y)
            check_unlabeled_convention(y, None)
            sample_domain = infer_sample_domain(y)
        if sample_domain is None:
            return params
        out = dict(params)
        for name, step in self.steps:
            if step is not None and not isinstance(step, str) and takes_sample_domain(step):
                out.setdefault(f"{name}__sample_domain", sample_domain)
        return out

    # The pipeline routes ``sample_domain`` itself, as ``step__sample_domain`` parameters; with
    # scikit-learn's metadata routing switched on (skada switches it on globally when imported)
    # that form is refused, so routing is switched off for the duration of the call.
    def fit(self, X, y=None, sample_domain=None, **params):
        """Fit every step (``sample_domain`` to those that take it); returns ``self``.

        A reweighting step (a ``compute_weights`` method, :mod:`shiftlearn.reweighting`) gives
        its fitted ``weights_`` to the final step's ``sample_weight`` (multiplied into a
        ``<final>__sample_weight`` given here); a final step whose ``fit`` takes no
        ``sample_weight`` is refused before anything is fitted."""
        with config_context(enable_metadata_routing=False):
            params = self._domain_params(y, sample_domain, params)
            if self._weighting_steps():
                return self._fit_weighted(X, y, params)[0]
            return super().fit(X, y, **params)

    def fit_transform(self, X, y=None, sample_domain=None, **params):
        """``fit`` then the last step's transform of the training rows."""
        with config_context(enable_metadata_routing=False):
            params = self._domain_params(y, sample_domain, params)
            if self._weighting_steps():
                Xt = self._fit_weighted(X, y, params)[1]
                final = self.steps[-1][1]
                return Xt if final in (None, "passthrough") else final.transform(Xt)
            return super().fit_transform(X, y, **params)

    def fit_predict(self, X, y=None, sample_domain=None, **params):
        """``fit`` then the last step's ``fit_predict``."""
        with config_context(enable_metadata_routing=False):
            params = self._domain_params(y, sample_domain, params)
            if self._weighting_steps():
                return self.steps[-1][1].predict(self._fit_weighted(X, y, params)[1])
            return super().fit_predict(X, y, **params)

    def _weighting_steps(self) -> list[str]:
        return [name for name, step in self.steps[:-1] if _gives_weights(step)]

    def _fit_weighted(self, X, y, params: dict):
        """The transforming steps (a plain ``Pipeline`` of them, fitted in place as
        scikit-learn's), then the final step with the product of the reweighting steps'
        weights as ``sample_weight``. Returns ``(self, transformed training rows)``."""
        name, final = self.steps[-1]
        for step_name in self._weighting_steps():
            check_weights_reach(dict(self.steps)[step_name], final)
        head_names = {n for n, _ in self.steps[:-1]}
        head_params = {k: v for k, v in params.items() if k.split("__", 1)[0] in head_names}
        final_params = {k.split("__", 1)[1]: v for k, v in params.items()
                        if k.split("__", 1)[0] == name}
        unknown = sorted(k for k in params if k.split("__", 1)[0] not in head_names | {name})
        if unknown:
            raise ValueError(f"Pipeline.fit does not accept the parameter(s) {unknown}: give "
                             "each as <step name>__<parameter>, with the names of "
                             f"{[n for n, _ in self.steps]}.")
        head = Pipeline(self.steps[:-1], memory=self.memory, verbose=self.verbose)
        Xt = head.fit_transform(X, y, **head_params)
        self.steps = [*head.steps, self.steps[-1]]
        w = np.ones(np.shape(X)[0], dtype=np.float64)
        for step_name, step in self.steps[:-1]:
            if _gives_weights(step):
                w = w * _fitted_weights(step, X, head_params.get(f"{step_name}__sample_domain"))
        if final_params.get("sample_weight") is not None:
            w = w * np.asarray(final_params["sample_weight"], dtype=np.float64)
        final_params.pop("sample_weight", None)
        fit_weighted(final, Xt, y, w, **final_params)
        return self, Xt

    def _transform_steps(self, X, sample_domain, with_final: bool):
        """``X`` through the transforming steps (the final one too with ``with_final``),
        ``sample_domain`` to every ``transform`` that takes it."""
        Xt = X
        for _, _, step in self._iter(with_final=with_final, filter_passthrough=True):
            Xt = (step.transform(Xt, sample_domain=sample_domain)
                  if takes_sample_domain(step, "transform") else step.transform(Xt))
        return Xt

    def _final_call(self, method: str, X, sample_domain, *args, **params):
        """The final step's ``method`` on the transformed ``X``; ``sample_domain`` to the steps
        that take it (``None``: scikit-learn's own path, the rows are target rows)."""
        with config_context(enable_metadata_routing=False):
            if sample_domain is None:
                return getattr(super(), method)(X, *args, **params)
            final = self.steps[-1][1]
            if takes_sample_domain(final, method):
                params["sample_domain"] = sample_domain
            return getattr(final, method)(self._transform_steps(X, sample_domain, False),
                                          *args, **params)

    def predict(self, X, sample_domain=None, **params):
        """The final step's predictions. ``sample_domain`` (optional) reaches every step whose
        ``transform`` takes it (an adapter that maps source and target rows differently, such as
        :class:`~shiftlearn.adaptation.CORAL`) and a final step whose ``predict`` takes it;
        without it the rows are target rows. ``params`` go to the final step."""
        return self._final_call("predict", X, sample_domain, **params)

    @available_if(_final_has("predict_proba"))
    def predict_proba(self, X, sample_domain=None, **params):
        """The final step's class probabilities (``sample_domain`` as in :meth:`predict`)."""
        return self._final_call("predict_proba", X, sample_domain, **params)

    @available_if(_final_has("transform"))
    def transform(self, X, sample_domain=None, **params):
        """``X`` through every step (``sample_domain`` as in :meth:`predict`)."""
        if sample_domain is None:
            with config_context(enable_metadata_routing=False):
                return super().transform(X, **params)
        return self._transform_steps(X, sample_domain, True)

    @available_if(_final_has("score"))
    def score(self, X, y=None, sample_weight=None, sample_domain=None, **params):
        """The final step's score. Without ``sample_domain``, a ``y`` that also marks unlabeled
        rows is read as a validation fold (labeled rows are source rows, the library's rule:
        :func:`shiftlearn._validation.scoring_domains`); else the rows are target rows."""
        if y is not None:
            sample_domain = scoring_domains(y, sample_domain)
        if sample_weight is not None:
            params["sample_weight"] = sample_weight
        return self._final_call("score", X, sample_domain, y, **params)


def make_da_pipeline(*steps, memory=None, verbose: bool = False) -> DomainAwarePipeline:
    """A domain-aware pipeline: adapters fitted on all rows, the final predictor on the labeled.

    Steps are named as by ``sklearn.pipeline.make_pipeline``. The final step is wrapped in
    :class:`LabeledOnly` when it predicts and does not take ``sample_domain`` itself (a plain
    scikit-learn classifier or regressor); a domain-aware final step (e.g.
    :class:`~shiftlearn.boosting.MultiTaskBoostingClassifier`) receives ``sample_domain``
    instead. skada's ``make_da_pipeline`` gives the same result with skada's adapters.

    Parameters
    ----------
    *steps : estimators
        The adapters and transformers, then the final estimator.
    memory : FitMemory or None, default=None
        ``memory`` means what it means everywhere in the library: a
        :class:`~shiftlearn.adaptation.FitMemory` that fits on the same rows share. It is handed
        to every step that takes a ``memory`` and has none of its own. A joblib cache (a folder
        or a ``joblib.Memory``, scikit-learn's ``Pipeline`` cache of fitted transformers) still
        works for one release with a ``FutureWarning``; give it as
        ``DomainAwarePipeline(steps, memory=...)``, whose ``memory`` is scikit-learn's.
    verbose : bool, default=False
        Print each step's fit time (scikit-learn's ``Pipeline``).

    Examples
    --------
    >>> from sklearn.neighbors import KNeighborsClassifier
    >>> from sklearn.preprocessing import StandardScaler
    >>> from shiftlearn.adaptation import SCA
    >>> from shiftlearn.datasets import make_sca_toy
    >>> X, y, sd = make_sca_toy(n_per_cluster=20, random_state=0)
    >>> pipe = make_da_pipeline(StandardScaler(), SCA(n_components=2), KNeighborsClassifier(1))
    >>> pipe.fit(X, y, sample_domain=sd).predict(X[sd < 0]).shape
    (60,)
    >>> bool(set(pipe.predict(X[sd < 0]).tolist()) <= {0, 1, 2})   # never the marker -1
    True
    """
    joblib_cache = None
    if isinstance(memory, FitMemory):
        for step in steps:
            if (isinstance(step, BaseEstimator) and "memory" in step.get_params(deep=False)
                    and step.get_params(deep=False)["memory"] is None):
                step.set_params(memory=memory)
    elif memory is not None:
        warnings.warn(
            "make_da_pipeline: memory is a FitMemory shared by the adapters, as everywhere in "
            "shiftlearn; a joblib cache there will be refused in the next release. For "
            "scikit-learn's cache of fitted transformers, build the pipeline as "
            "DomainAwarePipeline(make_da_pipeline(...).steps, memory=...).",
            FutureWarning, stacklevel=2)
        joblib_cache = memory
    pipe = make_pipeline(*steps, memory=joblib_cache, verbose=verbose)
    name, last = pipe.steps[-1]
    if learns_labels(last) and not isinstance(last, Pipeline):
        pipe.steps[-1] = (name, LabeledOnly(last))
    return DomainAwarePipeline(pipe.steps, memory=joblib_cache, verbose=verbose)
