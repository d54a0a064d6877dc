"""Multi-task boosting for non-linear domain adaptation (Becker, Christoudias & Fua, 2013)."""

from ._binning import bin_tasks
from ._core import boost, decision_function_stages, line_search_alpha
from ._estimator import MultiTaskBoostingClassifier
from ._splits import brute_force_split, stump_split, tree_split_exact

__all__ = [
    "MultiTaskBoostingClassifier",
    "bin_tasks",
    "boost",
    "brute_force_split",
    "decision_function_stages",
    "line_search_alpha",
    "stump_split",
    "tree_split_exact",
]
