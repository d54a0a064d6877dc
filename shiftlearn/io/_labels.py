"""Class labels as values, pooled over files (used by :mod:`shiftlearn.io._tables`).

Labels that are all numbers are parsed (``1``, ``1.0``, ``01`` and ``+1`` are one class);
missing cells are coded ``-1``, the unlabeled marker; regression targets and identifier
columns are refused. Design notes: ``docs/dev/datasets.md``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np
import pandas as pd

__all__ = ["MAX_DISTINCT_CLASSES", "MISSING_TOKENS", "TableError", "check_classes",
           "encode_labels", "normalise_labels"]

#: label cells read as missing (after stripping blanks)
MISSING_TOKENS = frozenset({"", "nan", "NaN", "NAN", "NA", "N/A", "n/a", "null", "NULL", "None",
                            "<NA>"})
#: a label column with more distinct values than this, that are also more than half of the
#: rows, is refused as a regression target or an identifier
MAX_DISTINCT_CLASSES = 50


class TableError(ValueError):
    """A file that cannot be read as a table; the message names the file and the fix."""


def normalise_labels(values, what: str, noun: str = "labels"
               ) -> tuple[np.ndarray, np.ndarray, str | None]:
    """Labels as values: (values, missing mask, kind) with kind 'number' (int64 values),
    'text' (str values) or None (all missing). Raises for non-integral or non-finite numbers
    and for text labels that write one number two ways."""
    a = np.asarray(values)
    if a.ndim != 1:
        raise TableError(f"{what}: {noun} must be 1-D, got shape {a.shape}.")
    if a.dtype.kind in "iu":
        if a.dtype.kind == "u" and a.size and a.max() > np.iinfo(np.int64).max:
            raise TableError(f"{what}: {noun[:-1]} {a.max()} is too large for an integer id.")
        return a.astype(np.int64), np.zeros(a.shape, bool), "number" if a.size else None
    if a.dtype.kind == "b":
        a = a.astype(str)
    elif a.dtype.kind == "S":
        a = np.char.decode(a, "utf-8", errors="replace")
    s = pd.Series(a, dtype=object)
    na = s.isna().to_numpy()
    st = s.astype(str).str.strip()
    missing = na | st.isin(MISSING_TOKENS).to_numpy()
    if missing.all():
        return np.full(a.shape, "", dtype=str), missing, None
    num = pd.to_numeric(st.where(~missing, None), errors="coerce").to_numpy(
        dtype=np.float64, na_value=np.nan)
    isnum = ~np.isnan(num) & ~missing
    if (isnum | missing).all():
        v = num[~missing]
        if not np.isfinite(v).all():
            bad = st.to_numpy()[~missing][~np.isfinite(v)][0]
            raise TableError(f"{what}: {noun[:-1]} {bad!r} is not a finite number; fix it.")
        frac = v != np.round(v)
        if frac.any():
            ex = ", ".join(f"{x:g}" for x in v[frac][:3])
            if noun != "labels":
                raise TableError(f"{what}: {noun} with fractions (e.g. {ex}); name them by "
                                 "text or integers.")
            raise TableError(f"{what}: labels with fractions (e.g. {ex}): a regression target?"
                             " Here they are read as class labels (classification); read them "
                             "as numbers (shiftlearn adapt --task regression, read_table(..., "
                             "label_values=True)), or give a column of class labels.")
        out = np.zeros(a.shape, dtype=np.int64)
        big = np.abs(v) >= 2.0 ** 53
        if big.any():   # exact integers beyond float precision, from the text
            texts = st.to_numpy()[~missing]
            ints = []
            for t, x, b in zip(texts, v, big, strict=True):
                n = (int(t) if re.fullmatch(r"[+-]?\d+", t) else int(x)) if b else int(x)
                if not -2 ** 63 <= n < 2 ** 63:
                    raise TableError(f"{what}: {noun[:-1]} {t!r} is too large for an integer id.")
                ints.append(n)
            out[~missing] = ints
        else:
            out[~missing] = v.astype(np.int64)
        return out, missing, "number"
    text = st.where(~missing, "").to_numpy(dtype=str)
    if isnum.any():   # a mixed column: '1' and '1.0' would be two classes; refuse that
        seen: dict[float, str] = {}
        for t, x in zip(text[isnum].tolist(), num[isnum].tolist(), strict=True):
            if seen.setdefault(x, t) != t:
                raise TableError(f"{what}: labels {seen[x]!r} and {t!r} are one number written "
                                 "two ways among text labels; write each class one way.")
    return text, missing, "text"


def check_classes(vals: np.ndarray, n: int, what: str) -> None:
    """Refuse ``n`` labels with more than :data:`MAX_DISTINCT_CLASSES` distinct values that are
    also more than half of the rows (a regression target or an identifier column)."""
    distinct = np.unique(vals)
    if distinct.size > MAX_DISTINCT_CLASSES and distinct.size > n / 2:
        ex = ", ".join(str(v) for v in distinct[:3])
        raise TableError(f"{what}: {distinct.size} distinct labels in {n} rows (e.g. {ex}, "
                         "...): a regression target or an identifier, not classes. Adaptation "
                         "here is classification (shiftlearn adapt); give a column of class "
                         "labels or bin the target into classes.")


def encode_labels(label_arrays: Sequence, *, what: str = "labels",
                  names: Sequence[str] | None = None) -> tuple[np.ndarray, list[np.ndarray]]:
    """Pool the labels of several files into sorted classes and per-array integer codes.

    Labels are compared as values (``1``, ``1.0`` and ``"01"`` are one class, in one file or
    across files); missing labels (``None``, NaN, ``""``, ``"NA"``, ...) get the code ``-1``
    (the library's unlabeled marker). Items may be ``Table`` objects (their ``y`` and
    ``path`` are used). Numeric labels in some arrays and text labels in others are an error
    naming both groups (``names``, or the tables' paths, or ``array 1``, ...), as are labels
    that look like a regression target (see :func:`check_classes`).

    Examples
    --------
    >>> import numpy as np
    >>> classes, codes = encode_labels([np.array([1, 2, 2]), np.array(["2.0", "1", None],
    ...                                                                 dtype=object)])
    >>> classes.tolist(), [c.tolist() for c in codes]
    ([1, 2], [[0, 1, 1], [1, 0, -1]])
    """
    items = list(label_arrays)
    if not items:
        raise ValueError(f"{what}: no label arrays given.")
    if names is not None and len(names) != len(items):
        raise ValueError(f"{what}: {len(names)} names for {len(items)} label arrays.")
    labels = []
    for i, item in enumerate(items):
        table = hasattr(item, "y") and hasattr(item, "path")
        nm = names[i] if names is not None else item.path if table else f"array {i + 1}"
        y = item.y if table else item
        if y is None:
            raise ValueError(f"{what}: {nm} has no labels; read it with its label column.")
        labels.append((nm, *normalise_labels(y, f"{what} of {nm}")))
    kinds = {k for _, _, _, k in labels if k is not None}
    if not kinds:
        raise ValueError(f"{what}: every label is missing; give labeled rows.")
    if len(kinds) > 1:
        group = {k: [nm for nm, _, _, kk in labels if kk == k] for k in kinds}
        raise ValueError(f"{what}: {', '.join(group['number'])} hold numeric labels but "
                         f"{', '.join(group['text'])} hold text labels; write each class the "
                         "same way in every file.")
    pool = np.concatenate([v[~m] for _, v, m, k in labels if k is not None])
    check_classes(pool, pool.size, f"{what} (all arrays together)")
    classes = np.unique(pool)
    codes = [np.full(v.shape, -1, dtype=np.int64) if k is None else
             np.where(m, -1, np.searchsorted(classes, v)).astype(np.int64)
             for _, v, m, k in labels]
    return classes, codes
