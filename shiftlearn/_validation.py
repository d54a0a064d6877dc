"""Input checks shared by every estimator: ``X``, ``y`` and ``sample_domain``.

Domain convention (skada's): ``sample_domain`` holds one integer per row, positive for
source domains, negative for target domains, never 0. Unlabeled rows carry ``y = -1``
(classification) or ``NaN`` (regression). When ``sample_domain`` is omitted it is inferred
as skada does: labeled rows form source domain ``1``, unlabeled rows target domain ``-2``.
"""

from __future__ import annotations

from typing import Literal

import numpy as np
from sklearn.utils.validation import check_array

DEFAULT_SOURCE_DOMAIN = 1
DEFAULT_TARGET_DOMAIN = -2
UNLABELED_CLASS = -1

__all__ = [
    "DEFAULT_SOURCE_DOMAIN",
    "DEFAULT_TARGET_DOMAIN",
    "UNLABELED_CLASS",
    "check_X",
    "check_X_y_domain",
    "check_sample_domain",
    "infer_sample_domain",
    "unlabeled_mask",
]


def check_X(X, *, dtype=(np.float64, np.float32), ensure_min_samples: int = 1,
            name: str = "X") -> np.ndarray:
    """Validate a 2-D finite numeric feature array (float32 is kept, other types become float64)."""
    return check_array(X, dtype=dtype, ensure_min_samples=ensure_min_samples,
                       ensure_all_finite=True, input_name=name)


def unlabeled_mask(y: np.ndarray) -> np.ndarray:
    """Boolean mask of unlabeled rows: ``NaN`` or the class marker ``-1``.

    As skada decides it: integer labels are unlabeled where ``-1``; float labels containing
    ``NaN`` are regression targets, unlabeled exactly where ``NaN`` (a real target value of
    ``-1.0`` stays labeled); float labels without ``NaN`` that are all integral are class
    labels (``-1.0`` = unlabeled); other float labels are all labeled.

    Examples
    --------
    >>> import numpy as np
    >>> unlabeled_mask(np.array([0, 1, -1])).tolist()
    [False, False, True]
    >>> unlabeled_mask(np.array([0.5, -1.0, np.nan])).tolist()
    [False, False, True]
    """
    y = np.asarray(y)
    if y.dtype.kind == "f":
        nan = np.isnan(y)
        if np.any(nan):
            return nan
        if np.all(y == np.round(y)):
            return y == UNLABELED_CLASS
        return np.zeros(y.shape, dtype=bool)
    if y.dtype.kind in "iu":
        return y == UNLABELED_CLASS
    if y.dtype.kind == "O":
        return np.array([v is None or (isinstance(v, float) and np.isnan(v)) or
                         (np.isscalar(v) and v == UNLABELED_CLASS) for v in y], dtype=bool)
    return np.zeros(y.shape[0], dtype=bool)


def infer_sample_domain(y: np.ndarray) -> np.ndarray:
    """skada's rule: labeled rows are source domain ``1``, unlabeled rows target domain ``-2``."""
    mask = unlabeled_mask(y)
    return np.where(mask, DEFAULT_TARGET_DOMAIN, DEFAULT_SOURCE_DOMAIN).astype(np.int64)


def check_sample_domain(sample_domain, n_samples: int) -> np.ndarray:
    """Validate ``sample_domain``: 1-D, integer-valued, non-zero, one entry per row.

    A scalar is broadcast to every row (as in skada).
    """
    sd = np.asarray(sample_domain)
    if sd.ndim == 0:
        sd = np.full(n_samples, sd.item() if sd.dtype.kind in "iuf" else sd, dtype=sd.dtype)
    if sd.ndim != 1:
        sd = sd.reshape(-1) if sd.ndim == 2 and 1 in sd.shape else sd
    if sd.ndim != 1:
        raise ValueError(f"sample_domain must be 1-D, got an array of shape {sd.shape}.")
    if sd.shape[0] != n_samples:
        raise ValueError(
            f"sample_domain has {sd.shape[0]} entries but X has {n_samples} rows; "
            "give one domain id per row.")
    if sd.dtype.kind == "f":
        if not np.all(np.isfinite(sd)) or np.any(sd != np.round(sd)):
            raise ValueError("sample_domain must hold integer domain ids (no NaN or fractions).")
    elif sd.dtype.kind not in "iu":
        raise ValueError(f"sample_domain must hold integer domain ids, got dtype {sd.dtype}.")
    sd = sd.astype(np.int64)
    if np.any(sd == 0):
        raise ValueError("sample_domain contains 0: ids must be positive (source) "
                         "or negative (target), never 0.")
    return sd


def check_X_y_domain(
    X,
    y=None,
    sample_domain=None,
    *,
    task: Literal["classification", "regression", "auto"] = "auto",
    allow_unlabeled_source: bool = False,
    require_source: bool = True,
    require_target: bool = False,
    allow_target_labels: bool = True,
    min_samples_per_domain: int = 1,
    dtype=(np.float64, np.float32),
) -> tuple[np.ndarray, np.ndarray | None, np.ndarray]:
    """Validate ``(X, y, sample_domain)`` together and return clean arrays.

    Parameters
    ----------
    X : array-like of shape (n_samples, n_features)
        Finite numeric features (NaN/inf rejected).
    y : array-like of shape (n_samples,) or None
        Labels; ``-1`` (classification) or ``NaN`` (regression) marks unlabeled rows.
        ``None`` means every row is unlabeled (then ``sample_domain`` is required).
    sample_domain : array-like of shape (n_samples,) or None
        Domain ids (positive = source, negative = target). Inferred from ``y`` if omitted.
    task : {"classification", "regression", "auto"}
        For classification, labels are cast to integers where they are integral.
    allow_unlabeled_source : bool
        If False, an unlabeled row in a source domain is an error (a labeled row in a
        target domain is allowed: it is semi-supervised DA, unless ``allow_target_labels``
        is False).
    require_source, require_target : bool
        Demand at least one source (resp. target) row.
    allow_target_labels : bool
        If False, a labeled row in a target (negative id) domain is an error.
    min_samples_per_domain : int
        Each domain present must have at least this many rows.

    Returns
    -------
    X : ndarray of shape (n_samples, n_features)
    y : ndarray of shape (n_samples,) or None
    sample_domain : ndarray of int64, shape (n_samples,)

    Examples
    --------
    >>> import numpy as np
    >>> X = np.zeros((4, 2)); y = np.array([0, 1, -1, -1])
    >>> _, _, sd = check_X_y_domain(X, y)
    >>> sd.tolist()
    [1, 1, -2, -2]
    """
    X = check_X(X, dtype=dtype)
    n = X.shape[0]
    if y is not None:
        y = np.asarray(y)
        if y.ndim == 2 and y.shape[1] == 1:
            y = y.ravel()
        if y.ndim != 1:
            raise ValueError(f"y must be 1-D, got an array of shape {y.shape}.")
        if y.shape[0] != n:
            raise ValueError(f"X has {n} rows but y has {y.shape[0]} entries.")
        if y.dtype.kind == "f" and np.any(np.isinf(y)):
            raise ValueError("y contains inf.")
        if task == "classification" and y.dtype.kind == "f":
            lab = ~np.isnan(y)
            if np.all(y[lab] == np.round(y[lab])):
                y = np.where(lab, y, UNLABELED_CLASS).astype(np.int64)
    if sample_domain is None:
        if y is None:
            raise ValueError("Without y, sample_domain is required to tell sources from targets.")
        sd = infer_sample_domain(y)
    else:
        sd = check_sample_domain(sample_domain, n)

    ids, counts = np.unique(sd, return_counts=True)
    small = ids[counts < min_samples_per_domain]
    if small.size:
        raise ValueError(f"Domain(s) {small.tolist()} have fewer than "
                         f"{min_samples_per_domain} rows.")
    is_source = sd > 0
    if require_source and not np.any(is_source):
        raise ValueError("No source rows: at least one row needs a positive sample_domain.")
    if require_target and not np.any(~is_source):
        raise ValueError("No target rows: domain adaptation needs rows with a negative "
                         "sample_domain (unlabeled target data).")
    if y is not None:
        unl = unlabeled_mask(y)
        if not allow_unlabeled_source and np.any(unl & is_source):
            bad = np.unique(sd[unl & is_source]).tolist()
            raise ValueError(f"Source domain(s) {bad} contain unlabeled rows (y = -1 or NaN); "
                             "source rows must be labeled.")
        if not allow_target_labels and np.any(~unl & ~is_source):
            bad = np.unique(sd[~unl & ~is_source]).tolist()
            raise ValueError(f"Target domain(s) {bad} are declared unlabeled but contain "
                             "labeled rows; mask them with y = -1 (or NaN).")
        if require_source and np.all(unl):
            raise ValueError("y has no labeled row.")
    return X, y, sd
