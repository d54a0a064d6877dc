"""shiftlearn.fewlabels: domain adaptation with a few labeled target rows (target rows with a
label beside the labeled source rows): feature augmentation, TrAdaBoost and TrAdaBoost.R2,
regularised transfer of linear and logistic models, and the interpolation of a source and a
target model."""

from ._augmentation import FeatureAugmentation, augment
from ._linint import LinInt, interpolation_weight
from ._regular import RegularTransferLC, RegularTransferLR, ridge_to_prior
from ._tradaboost import TrAdaBoost, TrAdaBoostR2, weighted_median

__all__ = ["FeatureAugmentation", "LinInt", "RegularTransferLC", "RegularTransferLR",
           "TrAdaBoost", "TrAdaBoostR2", "augment", "interpolation_weight", "ridge_to_prior",
           "weighted_median"]
