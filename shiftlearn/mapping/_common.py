"""What every mapping needs: the fit-time validation of rows and domains, and the rows of each
side (the memory check is the package's, :func:`shiftlearn._resources.check_dense_memory`)."""

from __future__ import annotations

import warnings

import numpy as np

from .._stacklevel import user_stacklevel
from .._validation import check_X, check_X_y_domain

__all__ = ["check_rows", "fit_rows", "no_target_warning", "sides"]


def fit_rows(estimator, X, y, sample_domain) -> tuple[np.ndarray, np.ndarray | None, np.ndarray]:
    """``(X, y, sample_domain)`` validated for ``fit``: float rows (finite, NaN/inf refused with
    the column named), the labels, and the domains (inferred from ``y`` when omitted: labeled
    rows are source rows; every row a source row when both are omitted)."""
    if y is None and sample_domain is None:
        X = check_X(X, estimator=estimator, reset=True)
        return X, None, np.ones(X.shape[0], dtype=np.int64)
    return check_X_y_domain(X, y, sample_domain, task="auto", allow_unlabeled_source=True,
                            estimator=estimator)


def sides(sd: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Boolean masks of the source (``sd > 0``) and target (``sd < 0``) rows."""
    return sd > 0, sd < 0


def no_target_warning(owner: str) -> None:
    """Without target rows there is nothing to map onto: the map is the identity."""
    warnings.warn(
        f"{owner}: no target rows (negative sample_domain, or y = -1 without sample_domain), "
        "so there is nothing to align to: the map is the identity (no adaptation). Pass the "
        "unlabeled target rows to fit.", UserWarning, stacklevel=user_stacklevel())


def check_rows(owner: str, n_source: int, n_target: int, need: int, what: str) -> None:
    """Refuse a side with fewer than ``need`` rows, saying what they are needed for."""
    for name, n in (("source", n_source), ("target", n_target)):
        if n < need:
            raise ValueError(f"{owner} needs at least {need} {name} rows to {what}, got "
                             f"n_samples = {n}.")
