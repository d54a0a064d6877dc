"""shiftlearn.adaptation: kernel subspace adaptation (TCA, JDA, SCA and random-feature versions)
and CORAL."""

from ._base import (
    BaseSubspaceTransformer,
    check_n_components,
    whitening_scale,
)
from ._coral import CORAL, coral_covariance
from ._jda import JDA, jda_vectors
from ._memory import FitMemory
from ._sca import SCA, SCAProblem, sca_problem, sca_solve, uSCA
from ._tca import TCA, tca_components
from ._tjm import TJM

__all__ = [
    "CORAL",
    "JDA",
    "SCA",
    "SCAProblem",
    "TCA",
    "TJM",
    "BaseSubspaceTransformer",
    "FitMemory",
    "check_n_components",
    "coral_covariance",
    "jda_vectors",
    "sca_problem",
    "sca_solve",
    "tca_components",
    "uSCA",
    "whitening_scale",
]

try:  # the random-feature versions live in _rf.py (written alongside)
    from ._rf import RFSCA, RFTCA, RFStats, rf_stats, rfsca_from_stats, rftca_from_stats  # noqa: F401
except ModuleNotFoundError as _exc:  # pragma: no cover - only while _rf.py does not exist yet
    if _exc.name != f"{__name__}._rf":
        raise
else:
    __all__ += ["RFSCA", "RFTCA", "RFStats", "rf_stats", "rfsca_from_stats", "rftca_from_stats"]


#: names that moved to :mod:`shiftlearn.compose` (an adapter and an estimator as one); reading
#: them here is an error that names their home (``compose`` is a layer above this one, so this
#: package cannot hand them out)
_MOVED_TO_COMPOSE = ("DomainAdaptationClassifier", "DomainAwarePipeline", "LabeledOnly",
                     "make_da_pipeline")


def __getattr__(name: str):
    if name in _MOVED_TO_COMPOSE:
        raise AttributeError(f"shiftlearn.adaptation.{name} moved to shiftlearn.compose: use "
                             f"`from shiftlearn.compose import {name}` (or `from shiftlearn "
                             f"import {name}`).")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
