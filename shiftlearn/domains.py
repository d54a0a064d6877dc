"""Small helpers to build and split ``(X, y, sample_domain)`` arrays (skada's convention)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ._validation import check_X_y_domain, infer_sample_domain, label_array, unlabeled_mask

__all__ = ["infer_sample_domain", "pack_domains", "split_by_domain", "split_source_target",
           "unlabeled_mask"]


def pack_domains(
    sources: Sequence[tuple[np.ndarray, np.ndarray]],
    targets: Sequence[np.ndarray | tuple[np.ndarray, np.ndarray]] = (),
    *,
    regression: bool = False,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Stack labeled sources and (unlabeled) targets into ``(X, y, sample_domain)``.

    Source ``i`` (0-based) gets id ``i + 1``; target ``j`` gets ``-(len(sources) + j + 1)``.
    A target given as ``(X, y)`` keeps its labels (semi-supervised); given as ``X`` alone its
    rows get ``y = -1`` (or ``NaN`` with ``regression=True``).

    Examples
    --------
    >>> import numpy as np
    >>> X, y, sd = pack_domains([(np.zeros((2, 1)), np.array([0, 1]))], [np.ones((1, 1))])
    >>> y.tolist(), sd.tolist()
    ([0, 1, -1], [1, 1, -2])
    """
    Xs, ys, sds = [], [], []
    for i, (X, y) in enumerate(sources):
        X = np.asarray(X)
        Xs.append(X)
        ys.append(label_array(y))
        sds.append(np.full(X.shape[0], i + 1, dtype=np.int64))
    for j, t in enumerate(targets):
        if isinstance(t, tuple):
            X, y = np.asarray(t[0]), np.asarray(t[1])
        else:
            X = np.asarray(t)
            y = np.full(X.shape[0], np.nan if regression else -1)
        Xs.append(X)
        ys.append(y)
        sds.append(np.full(X.shape[0], -(len(sources) + j + 1), dtype=np.int64))
    if not Xs:
        raise ValueError("pack_domains needs at least one domain.")
    y = np.concatenate(ys)
    if regression:
        y = y.astype(np.float64)
    return np.vstack(Xs), y, np.concatenate(sds)


def split_by_domain(X, y=None, sample_domain=None) -> dict[int, tuple[np.ndarray, np.ndarray]]:
    """``{domain_id: (X_d, y_d)}`` in order of first appearance."""
    X, y, sd = check_X_y_domain(X, y, sample_domain, require_source=False,
                                allow_unlabeled_source=True)
    _, first = np.unique(sd, return_index=True)
    out = {}
    for d in sd[np.sort(first)]:
        m = sd == d
        out[int(d)] = (X[m], None if y is None else y[m])
    return out


def split_source_target(X, y=None, sample_domain=None):
    """``(X_source, y_source, X_target, y_target)`` by the sign of ``sample_domain``."""
    X, y, sd = check_X_y_domain(X, y, sample_domain, require_source=False,
                                allow_unlabeled_source=True)
    s = sd > 0
    return X[s], None if y is None else y[s], X[~s], None if y is None else y[~s]
