"""shiftlearn.adaptation: kernel subspace adaptation (TCA, SCA and random-feature versions)."""

from ._base import (
    BaseSubspaceTransformer,
    check_n_components,
    mmd_vector,
    solve_generalized_eigh,
    whitening_scale,
)
from ._tca import TCA, tca_components

__all__ = [
    "TCA",
    "BaseSubspaceTransformer",
    "check_n_components",
    "mmd_vector",
    "solve_generalized_eigh",
    "tca_components",
    "whitening_scale",
]

try:  # the random-feature versions live in _rf.py (written alongside)
    from ._rf import RFSCA, RFTCA, RFStats, rf_stats, rfsca_from_stats, rftca_from_stats  # noqa: F401
except ModuleNotFoundError as _exc:  # pragma: no cover - only while _rf.py does not exist yet
    if _exc.name != f"{__name__}._rf":
        raise
else:
    __all__ += ["RFSCA", "RFTCA", "RFStats", "rf_stats", "rfsca_from_stats", "rftca_from_stats"]
