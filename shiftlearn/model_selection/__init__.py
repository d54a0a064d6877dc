"""shiftlearn.model_selection"""

from ._cluster_kmeans import constrained_kernel_kmeans, split_mmd2  # noqa: F401
from ._cluster_split import ClusterSplit  # noqa: F401
from ._grids import DEFAULT_GRIDS, source_cv_estimator  # noqa: F401
from ._source_cv import SourceCVSearch  # noqa: F401
from ._splitters import (  # noqa: F401
    DomainAwareSplit,
    LeaveOneDomainOut,
    RandomStratifiedSplit,
    SourceKFold,
    split_domains,
)
