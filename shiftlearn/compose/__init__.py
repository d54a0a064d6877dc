"""shiftlearn.compose: an adapter and a final estimator as one estimator.

:class:`DomainAdaptationClassifier` and :class:`DomainAdaptationRegressor` (an adapter fitted
on every row, the final estimator on the adapted labeled source rows) and the domain-aware
pipelines (:func:`make_da_pipeline`, :class:`DomainAwarePipeline`, :class:`LabeledOnly`:
adapters see every row and ``sample_domain``, the final estimator only the labeled rows).
Above the method families: any adapter of :mod:`shiftlearn.adaptation`,
:mod:`shiftlearn.mapping` or :mod:`shiftlearn.reweighting` composes with any scikit-learn
estimator.
"""

from ._meta import DomainAdaptationClassifier, DomainAdaptationRegressor
from ._pipeline import DomainAwarePipeline, LabeledOnly, make_da_pipeline

__all__ = ["DomainAdaptationClassifier", "DomainAdaptationRegressor", "DomainAwarePipeline",
           "LabeledOnly", "make_da_pipeline"]
