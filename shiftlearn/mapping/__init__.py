"""shiftlearn.mapping: maps of the source rows onto the target domain: Subspace Alignment, the
linear (Gaussian) optimal-transport map and the barycentric optimal-transport maps (exact,
entropic, class-regularised), and the optimal-transport labelers that predict the target rows
themselves (JDOT, OT label propagation); the optimal-transport ones need POT,
``pip install shiftlearn[ot]``."""

from ._jdot import JDOTClassifier, JDOTRegressor
from ._labelprop import OTLabelProp
from ._linot import LinOT, monge_matrix
from ._mmdls import MMDLS
from ._multilinot import MultiLinOT, bures_barycenter
from ._ot import EMD, ClassRegOT, Sinkhorn, barycentric_map
from ._sa import SA, pca_basis

__all__ = ["EMD", "MMDLS", "SA", "ClassRegOT", "JDOTClassifier", "JDOTRegressor", "LinOT",
           "MultiLinOT", "OTLabelProp", "Sinkhorn", "barycentric_map", "bures_barycenter",
           "monge_matrix", "pca_basis"]
