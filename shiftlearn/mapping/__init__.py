"""shiftlearn.mapping: maps of the source rows onto the target domain: Subspace Alignment, the
linear (Gaussian) optimal-transport map and the barycentric optimal-transport maps (exact,
entropic, class-regularised; these need POT, ``pip install shiftlearn[ot]``)."""

from ._linot import LinOT, monge_matrix
from ._ot import EMD, ClassRegOT, Sinkhorn, barycentric_map
from ._sa import SA, pca_basis

__all__ = ["EMD", "SA", "ClassRegOT", "LinOT", "Sinkhorn", "barycentric_map", "monge_matrix",
           "pca_basis"]
