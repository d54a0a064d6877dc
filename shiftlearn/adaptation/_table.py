"""Read a user's table of rows (CSV / TSV / ``.npy`` / ``.npz``) for ``shiftlearn adapt``.

Text files: one row per line, comma, semicolon, tab or whitespace separated (sniffed from the
first line); an optional header line (recognised when one of its cells is not a number). The
label column is named (``--label-column label``, needs a header) or indexed (``-1`` = last,
the default). Every feature cell must be a finite number: the error names the file, the line
and the column of the first cell that is not.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path

import numpy as np

__all__ = ["Table", "read_table"]


@dataclass
class Table:
    path: str
    X: np.ndarray                      # (n, d) float64
    y: np.ndarray | None               # (n,) labels as read (str or int), None without labels
    feature_names: list[str] | None    # from the header, None without one


def _is_number(s: str) -> bool:
    try:
        float(s)
    except ValueError:
        return False
    return True


def _label_index(label_column: str | int, header: list[str] | None, n_cols: int,
                 path: str) -> int:
    if isinstance(label_column, str) and not label_column.lstrip("-").isdigit():
        if header is None:
            raise ValueError(f"{path}: --label-column {label_column!r} is a name but the file has "
                             "no header line; give a column index (e.g. -1 for the last).")
        if label_column not in header:
            raise ValueError(f"{path}: no column named {label_column!r} (columns: "
                             f"{', '.join(header)}).")
        return header.index(label_column)
    j = int(label_column)
    if not -n_cols <= j < n_cols:
        raise ValueError(f"{path}: label column index {j} outside the {n_cols} columns.")
    return j % n_cols


def _parse_labels(raw: list[str]) -> np.ndarray:
    arr = np.asarray([s.strip() for s in raw])
    try:
        as_int = arr.astype(np.int64)
    except ValueError:
        return arr
    return as_int


def _read_text(path: Path, label_column, with_labels: bool) -> Table:
    text = path.read_text()
    lines = [ln for ln in text.splitlines() if ln.strip()]
    if not lines:
        raise ValueError(f"{path}: the file is empty.")
    first = lines[0]
    delim = next((d for d in (",", ";", "\t") if d in first), None)
    rows = ([r for r in csv.reader(lines, delimiter=delim)] if delim
            else [ln.split() for ln in lines])
    header = None
    if not all(_is_number(c) for c in rows[0]):
        header, rows = [c.strip() for c in rows[0]], rows[1:]
    if not rows:
        raise ValueError(f"{path}: a header line but no data rows.")
    n_cols = len(header) if header else len(rows[0])
    for i, r in enumerate(rows):
        if len(r) != n_cols:
            line = i + 1 + (header is not None)
            raise ValueError(f"{path}: line {line} has {len(r)} cells, expected {n_cols}.")
    j = _label_index(label_column, header, n_cols, str(path)) if with_labels else None
    keep = [c for c in range(n_cols) if c != j]
    X = np.empty((len(rows), len(keep)))
    for i, r in enumerate(rows):
        for out, c in enumerate(keep):
            try:
                X[i, out] = float(r[c])
            except ValueError:
                name = header[c] if header else str(c)
                raise ValueError(f"{path}: line {i + 1 + (header is not None)}, column {name!r}: "
                                 f"{r[c]!r} is not a number.") from None
    y = _parse_labels([r[j] for r in rows]) if j is not None else None
    names = [header[c] for c in keep] if header else None
    return Table(str(path), X, y, names)


def _read_numpy(path: Path, label_column, with_labels: bool) -> Table:
    if path.suffix == ".npz":
        with np.load(path, allow_pickle=False) as z:
            if "X" not in z:
                raise ValueError(f"{path}: an .npz file needs an array 'X' (and 'y' for labels); "
                                 f"found {sorted(z.files)}.")
            X = np.asarray(z["X"], dtype=np.float64)
            y = np.asarray(z["y"]) if (with_labels and "y" in z) else None
        if with_labels and y is None:
            raise ValueError(f"{path}: no array 'y' with the labels.")
        return Table(str(path), X, y, None)
    A = np.load(path, allow_pickle=False)
    if A.ndim != 2:
        raise ValueError(f"{path}: expected a 2-D array, got shape {A.shape}.")
    if not with_labels:
        return Table(str(path), np.asarray(A, dtype=np.float64), None, None)
    j = _label_index(label_column, None, A.shape[1], str(path))
    X = np.delete(A, j, axis=1).astype(np.float64)
    return Table(str(path), X, _parse_labels([str(v) for v in A[:, j]]), None)


def read_table(path: str | Path, *, label_column: str | int = -1,
               with_labels: bool = True) -> Table:
    """Features (and labels) of one file; clear errors for malformed input.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "s.csv"
    >>> _ = p.write_text("a,b,label\\n1,2,cat\\n3,4,dog\\n")
    >>> t = read_table(p, label_column="label")
    >>> t.X.tolist(), t.y.tolist(), t.feature_names
    ([[1.0, 2.0], [3.0, 4.0]], ['cat', 'dog'], ['a', 'b'])
    """
    path = Path(path)
    if not path.is_file():
        raise ValueError(f"{path}: no such file.")
    if path.suffix in (".npy", ".npz"):
        table = _read_numpy(path, label_column, with_labels)
    else:
        table = _read_text(path, label_column, with_labels)
    if table.X.shape[1] == 0:
        raise ValueError(f"{path}: no feature columns.")
    bad = ~np.isfinite(table.X)
    if bad.any():
        i, c = np.argwhere(bad)[0]
        raise ValueError(f"{path}: row {i + 1}, feature {c}: {table.X[i, c]} is not finite.")
    return table
