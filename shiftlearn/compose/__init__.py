"""shiftlearn.compose: an adapter and a final estimator as one estimator.

:class:`DomainAdaptationClassifier` (an adapter fitted on every row, a classifier on the
adapted labeled source rows) and the domain-aware pipelines (:func:`make_da_pipeline`,
:class:`DomainAwarePipeline`, :class:`LabeledOnly`: adapters see every row and
``sample_domain``, the final estimator only the labeled rows). Above the method families:
any adapter of :mod:`shiftlearn.adaptation`, :mod:`shiftlearn.mapping` or
:mod:`shiftlearn.reweighting` composes with any scikit-learn estimator.
"""

from ._meta import DomainAdaptationClassifier
from ._pipeline import DomainAwarePipeline, LabeledOnly, make_da_pipeline

__all__ = ["DomainAdaptationClassifier", "DomainAwarePipeline", "LabeledOnly",
           "make_da_pipeline"]
