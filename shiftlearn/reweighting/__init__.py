"""shiftlearn.reweighting: covariate-shift reweighting. Each adapter estimates the importance
weights ``w(x) = p_t(x) / p_s(x)`` of the source rows and leaves the rows where they are;
:class:`~shiftlearn.adaptation.DomainAdaptationClassifier` and
:func:`~shiftlearn.adaptation.make_da_pipeline` pass the weights to the final estimator's
``sample_weight`` (an estimator without one is refused)."""

from ._base import BaseReweighting
from ._density import KDERW, GaussianRW, gaussian_log_density

__all__ = ["KDERW", "BaseReweighting", "GaussianRW", "gaussian_log_density"]
