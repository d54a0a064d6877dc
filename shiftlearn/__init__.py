"""shiftlearn: learning under domain shift with kernel methods.

Estimators are imported lazily, so ``import shiftlearn`` stays fast and optional extras
(flwr, dask, matplotlib) are only needed by the parts that use them.
"""

from __future__ import annotations

import importlib

__version__ = "0.1.0"

# public name -> module that defines it: every estimator and function the README documents
# (tests/house/test_glossary.py checks the README against this table)
_LAZY = {
    "TCA": "shiftlearn.adaptation",
    "RFTCA": "shiftlearn.adaptation",
    "SCA": "shiftlearn.adaptation",
    "uSCA": "shiftlearn.adaptation",
    "RFSCA": "shiftlearn.adaptation",
    "CORAL": "shiftlearn.adaptation",
    "JDA": "shiftlearn.adaptation",
    "DomainAdaptationClassifier": "shiftlearn.compose",
    "make_da_pipeline": "shiftlearn.compose",
    "LabeledOnly": "shiftlearn.compose",
    "DomainAdaptationRegressor": "shiftlearn.compose",
    "TJM": "shiftlearn.adaptation",
    "FitMemory": "shiftlearn.adaptation",
    "RFStats": "shiftlearn.adaptation",
    "SA": "shiftlearn.mapping",
    "LinOT": "shiftlearn.mapping",
    "MultiLinOT": "shiftlearn.mapping",
    "MMDLS": "shiftlearn.mapping",
    "EMD": "shiftlearn.mapping",
    "Sinkhorn": "shiftlearn.mapping",
    "ClassRegOT": "shiftlearn.mapping",
    "JDOTClassifier": "shiftlearn.mapping",
    "JDOTRegressor": "shiftlearn.mapping",
    "OTLabelProp": "shiftlearn.mapping",
    "KMM": "shiftlearn.reweighting",
    "KLIEP": "shiftlearn.reweighting",
    "uLSIF": "shiftlearn.reweighting",
    "RuLSIF": "shiftlearn.reweighting",
    "DiscriminatorRW": "shiftlearn.reweighting",
    "NearestNeighborRW": "shiftlearn.reweighting",
    "KDERW": "shiftlearn.reweighting",
    "GaussianRW": "shiftlearn.reweighting",
    "FeatureAugmentation": "shiftlearn.fewlabels",
    "TrAdaBoost": "shiftlearn.fewlabels",
    "TrAdaBoostR2": "shiftlearn.fewlabels",
    "RegularTransferLR": "shiftlearn.fewlabels",
    "RegularTransferLC": "shiftlearn.fewlabels",
    "LinInt": "shiftlearn.fewlabels",
    "DASVM": "shiftlearn.selflabeling",
    "BBSE": "shiftlearn.labelshift",
    "RLLS": "shiftlearn.labelshift",
    "MLLS": "shiftlearn.labelshift",
    "JCPOT": "shiftlearn.labelshift",
    "estimate_target_proportions": "shiftlearn.labelshift",
    "MarginalTransferClassifier": "shiftlearn.generalization",
    "MarginalTransferRegressor": "shiftlearn.generalization",
    "PoolingClassifier": "shiftlearn.generalization",
    "PoolingRegressor": "shiftlearn.generalization",
    "MultiTaskBoostingClassifier": "shiftlearn.boosting",
    "ClusterSplit": "shiftlearn.model_selection",
    "SourceKFold": "shiftlearn.model_selection",
    "MaNoScorer": "shiftlearn.model_selection",
    "fit_source_cv": "shiftlearn.model_selection",
    "FewLabelSelector": "shiftlearn.model_selection",
    "RandomFourierFeatures": "shiftlearn.kernels",
    "adapt": "shiftlearn.workflow",
}

__all__ = ["__version__", *sorted(_LAZY)]


def __getattr__(name: str):
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'shiftlearn' has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(_LAZY))
