"""Domain generalization: marginal transfer learning (Blanchard et al., JMLR 2021)."""

from ._marginal import (
    AUTO_RF_MIN_SAMPLES,
    MIN_PREDICT_TASK_SIZE,
    MarginalTransferClassifier,
    MarginalTransferRegressor,
    PoolingClassifier,
    PoolingRegressor,
)
from ._search import TaskGroupSearchCV, task_group_score

__all__ = [
    "AUTO_RF_MIN_SAMPLES",
    "MIN_PREDICT_TASK_SIZE",
    "MarginalTransferClassifier",
    "MarginalTransferRegressor",
    "PoolingClassifier",
    "PoolingRegressor",
    "TaskGroupSearchCV",
    "task_group_score",
]
