"""The library's channel for sample weights it computes itself (a reweighting adapter's, a
transport plan's, a boosting round's): handed to an estimator's ``fit``, or to a scikit-learn
``Pipeline``'s last step, with metadata routing off for the call (they are the library's
weights, not metadata the user routes)."""

from __future__ import annotations

from sklearn import config_context
from sklearn.pipeline import Pipeline

__all__ = ["fit_weighted", "last_step", "weight_params"]


def last_step(est):
    """The estimator that receives ``sample_weight``: ``est``, or a ``Pipeline``'s last step
    (nested)."""
    while isinstance(est, Pipeline):
        est = est.steps[-1][1]
    return est


def weight_params(est, sample_weight) -> dict:
    """``fit`` keyword arguments that hand ``sample_weight`` to ``est``: ``sample_weight``, or
    ``<last step>__sample_weight`` (nested) for a scikit-learn ``Pipeline``, which the caller
    fits with metadata routing off."""
    if isinstance(est, Pipeline):
        name, last = est.steps[-1]
        return {f"{name}__{k}": v for k, v in weight_params(last, sample_weight).items()}
    return {"sample_weight": sample_weight}


def fit_weighted(est, X, y, sample_weight, **params):
    """``est.fit(X, y, sample_weight=...)`` by the library's channel: a scikit-learn
    ``Pipeline`` gets the weights as its last step's parameter, with metadata routing off for
    the call."""
    with config_context(enable_metadata_routing=False):
        return est.fit(X, y, **params, **weight_params(est, sample_weight))
