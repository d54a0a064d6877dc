"""shiftlearn.reweighting: covariate-shift reweighting. Each adapter estimates the importance
weights ``w(x) = p_t(x) / p_s(x)`` of the source rows and leaves the rows where they are;
:class:`~shiftlearn.compose.DomainAdaptationClassifier` and
:func:`~shiftlearn.compose.make_da_pipeline` pass the weights to the final estimator's
``sample_weight`` (an estimator without one is refused): kernel mean matching (KMM), KLIEP,
uLSIF and RuLSIF, a calibrated domain classifier, nearest-neighbour counts, kernel density
and Gaussian density ratios."""

from ._base import BaseReweighting
from ._classifier import DiscriminatorRW, NearestNeighborRW
from ._density import KDERW, GaussianRW, gaussian_log_density
from ._kernel import KLIEP, KMM, RuLSIF, kmm_weights, uLSIF

__all__ = ["KDERW", "KLIEP", "KMM", "BaseReweighting", "DiscriminatorRW", "GaussianRW",
           "NearestNeighborRW", "RuLSIF", "gaussian_log_density", "kmm_weights", "uLSIF"]
