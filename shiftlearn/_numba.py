"""numba, an optional dependency (``pip install shiftlearn[speed]``), in one place.

Two inner loops are compiled when numba is installed: multi-task boosting's histograms
(:mod:`shiftlearn.boosting._loops`) and the epochs of marginal transfer's exact solver
(:mod:`shiftlearn.generalization._dual_cd`). Each has a numpy path that returns the same arrays
bit for bit (no fast-math), so a model never depends on whether numba is installed.
``SHIFTLEARN_NUMBA=0`` switches the compiled loops off (tests compare both paths).
"""

from __future__ import annotations

import os

try:  # pragma: no cover - exercised where numba is installed
    import numba
    import numba.extending  # noqa: F401 - overloads of the numpy helpers
except ImportError:  # pragma: no cover
    numba = None

__all__ = ["HAVE_NUMBA", "numba", "use_numba"]

HAVE_NUMBA = numba is not None


def use_numba() -> bool:
    """Whether the compiled loops run (numba installed and ``SHIFTLEARN_NUMBA`` is not ``0``)."""
    return HAVE_NUMBA and os.environ.get("SHIFTLEARN_NUMBA", "1") != "0"
