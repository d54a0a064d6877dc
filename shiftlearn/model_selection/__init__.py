"""shiftlearn.model_selection: choosing without target labels.

Domain-aware splitters (held-out labeled source rows, target rows in every fold), target-label-free
scorers for ``GridSearchCV``/``cross_validate``, the selector that decides whether and how to adapt
(:class:`AdaptationSelector`), the one that chooses a method for unseen domains
(:class:`GeneralizationSelector`), the one that chooses on a few labeled target rows
(:class:`FewLabelSelector`), evaluation utilities, the cluster-based validation split and the
default grids.
"""

from ._cluster_kmeans import constrained_kernel_kmeans, split_mmd2
from ._cluster_split import ClusterSplit
from ._evaluation import (
    MixupValidationScorer,
    RankCorrelation,
    WorstDomainScorer,
    gap_closed,
    rank_correlation,
    selected_index,
    selection_summary,
)
from ._fewlabels import (
    FEWLABEL_DEFAULT,
    FEWLABEL_METHODS,
    SINGLE_LABEL_DEFAULT,
    Estimate,
    FewLabelSelector,
    few_label_folds,
    make_few_label_candidate,
    nested_estimate,
)
from ._generalize import GENERALIZATION_CANDIDATES, GeneralizationSelector, infer_task
from ._grids import DEFAULT_GRIDS, fit_source_cv
from ._scorers import (
    CircularValidation,
    DeepEmbeddedValidation,
    ImportanceWeightedScorer,
    MaNoScorer,
    MixValScorer,
    MMDScorer,
    PredictionEntropyScorer,
    SoftNeighborhoodDensity,
    SourceAccuracyScorer,
)
from ._scorers_regression import (
    REGRESSION_CRITERIA,
    ImportanceWeightedMSEScorer,
    ReverseValidationMSEScorer,
    SourceMSEScorer,
)
from ._select import (
    ADAPTERS,
    REGRESSION_METHODS,
    AdaptationRegressorSelector,
    AdaptationSelector,
    candidate_grid,
    default_methods,
    default_regression_methods,
    make_adapter,
    method_label,
)
from ._splitters import (
    DomainAwareSplit,
    LeaveOneDomainOut,
    RandomStratifiedSplit,
    SourceKFold,
    split_domains,
)

__all__ = [
    "ADAPTERS",
    "DEFAULT_GRIDS",
    "FEWLABEL_DEFAULT",
    "FEWLABEL_METHODS",
    "GENERALIZATION_CANDIDATES",
    "REGRESSION_CRITERIA",
    "REGRESSION_METHODS",
    "SINGLE_LABEL_DEFAULT",
    "AdaptationRegressorSelector",
    "AdaptationSelector",
    "CircularValidation",
    "ClusterSplit",
    "DeepEmbeddedValidation",
    "DomainAwareSplit",
    "Estimate",
    "FewLabelSelector",
    "GeneralizationSelector",
    "ImportanceWeightedMSEScorer",
    "ImportanceWeightedScorer",
    "LeaveOneDomainOut",
    "MMDScorer",
    "MaNoScorer",
    "MixValScorer",
    "MixupValidationScorer",
    "PredictionEntropyScorer",
    "RandomStratifiedSplit",
    "RankCorrelation",
    "ReverseValidationMSEScorer",
    "SoftNeighborhoodDensity",
    "SourceAccuracyScorer",
    "SourceKFold",
    "SourceMSEScorer",
    "WorstDomainScorer",
    "candidate_grid",
    "default_methods",
    "default_regression_methods",
    "constrained_kernel_kmeans",
    "few_label_folds",
    "fit_source_cv",
    "gap_closed",
    "infer_task",
    "make_adapter",
    "method_label",
    "make_few_label_candidate",
    "nested_estimate",
    "rank_correlation",
    "selected_index",
    "selection_summary",
    "split_domains",
    "split_mmd2",
]
