"""Read a user's table (CSV/TSV/text, compressed or not, Parquet, ``.npy``/``.npz``).

:func:`read_table` returns the features ``X`` (float64, finite), the labels (as *values*) and,
optionally, a per-row domain column; :func:`encode_labels` pools the labels of several files
into one set of classes. Both either return a right answer or raise :class:`TableError` (a
``ValueError``) with a one-line message naming the file, the line (1-based, counting the header
and blank lines as in an editor) or row, the column, and the fix.

What is read, and how
---------------------
* **Formats** are recognised by their content: gzip/bz2/xz/zip compression by magic bytes
  (whatever the extension), Parquet (``PAR1``, read with pyarrow), ``.npy`` (``\\x93NUMPY``),
  ``.npz`` (a zip of ``.npy`` arrays ``X``, ``y`` and optionally the domain column), else text.
* **Text** is parsed by pandas' C engine with a delimiter sniffed from the first 100 non-blank
  lines (``,``, tab, ``;``, ``|``, else whitespace: the one that splits most lines into the same
  number of cells, then the one giving most numbers; ``.tsv`` prefers tab). A ``;`` file whose
  numbers use a decimal comma (``1,5``) is read with ``decimal=","``. Blank lines are ignored,
  and so is an empty last column with an empty header cell (lines ending with the delimiter).
  **Encodings**: UTF-8 with or without BOM, UTF-16 (with a BOM, or recognised by its NUL
  bytes); a file that is not valid UTF-8 is decoded as cp1252 (Windows Western, a superset of
  latin-1's printable characters), or latin-1 when cp1252 fails; a note says so.
* **Header**: the first non-blank line is a header when one of its cells is text in a column
  whose values below are numbers, or when all of its cells are text. A pandas ``to_csv()``
  export of integer column names (``,0,1,2,...`` with the index, or ``0,1,2,...`` with at least
  three columns) is a header too (with a note). A first line that mixes numbers with text
  only in text columns (``400,410,label`` above ``0.1,0.2,cat``, or a headerless ``1,2,cat``)
  is ambiguous: it is data when one of its text cells recurs below (``cat`` is a class), else a
  header, with a note saying how to force either (``header=True/False``). In a
  whitespace-separated file, a header one cell shorter than the rows below names every column
  but a leading index (R's ``write.table``, pandas ``to_csv(sep=" ")``).
* **Index column**: a first column whose header cell is empty or ``Unnamed: <k>`` (what pandas
  writes and re-reads as the row index) is dropped, with a note. A headerless first feature
  column that counts ``0..n-1`` or ``1..n`` only gets a note (it may be a row index).
* **Labels are values** (:mod:`shiftlearn.io._labels`): ``1``, ``1.0`` and ``01`` are
  one class (int64), text labels are stripped strings; ``""``, ``NA``, ``nan``, ... are missing;
  non-integral numbers or very many distinct values (a regression target, an identifier) are
  refused for classification with the fix.
* **Magnitudes**: a feature value beyond ``+-1e50`` (:data:`MAX_MAGNITUDE`), or a column whose
  non-zero values are all below ``1e-50``, is refused with the column and the row: the
  kernels and covariances multiply features up to the fourth power, which overflows (or
  underflows) float64 long before the values themselves do.
* **Booleans in features** (``True``/``False``, e.g. ``pd.get_dummies`` columns) read as 1/0,
  with a note.
"""

from __future__ import annotations

import bz2
import csv
import difflib
import gzip
import io
import lzma
import re
import zipfile
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

# the estimators' limit (shiftlearn._validation.check_magnitudes), applied here with the row and
# column of the file; a column whose values are all below 1 / MAX_MAGNITUDE (but not all 0) is
# refused too here: its squares underflow
from .._validation import MAX_MAGNITUDE
from ._labels import (
    MAX_DISTINCT_CLASSES,
    MISSING_TOKENS,
    TableError,
    check_classes,
    encode_labels,
    normalise_labels,
)

__all__ = ["MAX_DISTINCT_CLASSES", "MISSING_TOKENS", "Table", "TableError", "encode_labels",
           "read_table"]

_SAMPLE_LINES = 100
_LINE_END = re.compile(r"\r\n|\r|\n")
_NON_BLANK = re.compile(rb"[^\s\x00]")


@dataclass
class Table:
    """One file read by :func:`read_table`.

    ``y`` holds the labels as values: int64 for integral numbers, strings otherwise, ``None``
    without labels (with ``allow_missing_labels=True`` and some missing, an object array with
    ``None`` in the missing rows). ``domains`` (with ``domain_column``) is normalised the same
    way. ``notes`` are one-line remarks worth showing a user (a dropped index column, an
    encoding fallback, a header guess).
    """

    path: str
    X: np.ndarray
    y: np.ndarray | None
    feature_names: list[str] | None
    label_name: str | None
    domains: np.ndarray | None = None
    notes: list[str] = field(default_factory=list)


# ---------------------------------------------------------------- bytes, formats, encodings


def _read_bytes(path: Path) -> bytes:
    if not path.exists():
        raise TableError(f"{path}: no such file; check the path.")
    if path.is_dir():
        raise TableError(f"{path}: is a folder, not a file; give the table file inside it.")
    try:
        return path.read_bytes()
    except PermissionError:
        raise TableError(f"{path}: permission denied; make the file readable "
                         f"(chmod +r) or copy it.") from None
    except OSError as exc:
        raise TableError(f"{path}: cannot be read ({exc.strerror or exc}).") from None


def _decompress(raw: bytes, path: Path, notes: list[str]) -> tuple[bytes, str]:
    """Undo gzip/bz2/xz (by magic bytes) or a one-member zip; return the bytes and the name
    of the content (the zip member's, else the file's without the compression suffix)."""
    name = path.name
    opener = {b"\x1f\x8b": gzip.decompress, b"BZh": bz2.decompress,
              b"\xfd7zXZ\x00": lzma.decompress}
    for magic, fn in opener.items():
        if raw.startswith(magic):
            try:
                raw = fn(raw)
            except Exception as exc:  # truncated or corrupt archives raise many types
                raise TableError(f"{path}: corrupt or truncated compressed file "
                                 f"({type(exc).__name__}: {exc}).") from None
            return raw, re.sub(r"\.(gz|bz2|xz)$", "", name)
    if raw.startswith(b"PK\x03\x04") and not name.endswith(".npz"):
        try:
            with zipfile.ZipFile(io.BytesIO(raw)) as z:
                members = [m for m in z.namelist() if not m.endswith("/")]
                if members and all(m.endswith(".npy") for m in members):
                    return raw, name + ".npz"
                if name.endswith((".xlsx", ".xlsm", ".ods")) or "[Content_Types].xml" in members:
                    raise TableError(f"{path}: a spreadsheet, not a table file; save it as "
                                     "CSV (or Parquet) and read that.")
                if len(members) != 1:
                    raise TableError(f"{path}: a zip archive with {len(members)} files; it "
                                     "must hold exactly one table.")
                notes.append(f"{path}: read {members[0]!r} from the zip archive.")
                return z.read(members[0]), members[0]
        except TableError:
            raise
        except Exception as exc:   # BadZipFile, zlib.error, NotImplementedError, ...
            raise TableError(f"{path}: corrupt or unsupported zip archive "
                             f"({type(exc).__name__}: {exc}).") from None
    return raw, name


def _decode_setup(raw: bytes, path: Path, notes: list[str]) -> tuple[bytes, str]:
    """Bytes without BOM, in an encoding pandas reads byte-wise (utf-8, cp1252, latin-1)."""
    for bom, codec in ((b"\xff\xfe", "utf-16-le"), (b"\xfe\xff", "utf-16-be")):
        if raw.startswith(bom):
            try:
                return raw[2:].decode(codec).encode("utf-8"), "utf-8"
            except UnicodeDecodeError:
                raise TableError(f"{path}: invalid UTF-16 text; save it as UTF-8.") from None
    if raw.startswith(b"\xef\xbb\xbf"):
        raw = raw[3:]
    head = raw[:8192]
    if b"\x00" in head:   # UTF-16 without a BOM has a NUL beside every ASCII character
        even, odd = head[0::2].count(0), head[1::2].count(0)
        codec = ("utf-16-le" if odd > 0.3 * len(head) / 2 and even == 0 else
                 "utf-16-be" if even > 0.3 * len(head) / 2 and odd == 0 else None)
        if codec and len(raw) % 2 == 0:
            try:
                text = raw.decode(codec)
            except UnicodeDecodeError:
                text = None
            if text is not None and "\x00" not in text:
                notes.append(f"{path}: decoded as {codec} (UTF-16 without a byte-order mark).")
                return text.lstrip("\ufeff").encode("utf-8"), "utf-8"
        raise TableError(f"{path}: binary content (NUL bytes), not a text table; give a "
                         "CSV/TSV/text, Parquet, .npy or .npz file.")
    try:
        raw.decode("utf-8")
        return raw, "utf-8"
    except UnicodeDecodeError as exc:
        bad = exc.start
    for codec in ("cp1252", "latin-1"):
        try:
            raw.decode(codec)
        except UnicodeDecodeError:
            continue
        notes.append(f"{path}: not valid UTF-8 (byte {bad}); decoded as {codec}.")
        return raw, codec
    raise AssertionError("latin-1 decodes any bytes")  # pragma: no cover


# ---------------------------------------------------------------- text: sniffing, header


def _is_num(cell: str) -> bool:
    try:
        float(cell)
    except ValueError:
        return False
    return True


def _split(line: str, sep: str) -> list[str]:
    if sep == r"\s+":
        return line.split()
    return next(csv.reader([line], delimiter=sep, skipinitialspace=True), [])


def _blank(line: str, sep: str) -> bool:
    """Blank as pandas' C engine skips it: only whitespace that is not the delimiter."""
    return not line.strip() and not (sep == "\t" and "\t" in line)


def _sniff(lines: list[str], suffix: str) -> tuple[str, str]:
    """Delimiter and decimal mark from sample lines."""
    order = [",", "\t", ";", "|"]
    if suffix in (".tsv", ".tab"):
        order.insert(0, order.pop(1))
    best, best_score = None, None
    for pri, sep in enumerate([*order, r"\s+"]):
        rows = [_split(ln, sep) for ln in lines]
        count, freq = Counter(len(r) for r in rows).most_common(1)[0]
        if count < 2:
            continue
        body = rows[1:] or rows
        cells = [c.strip() for r in body for c in r]
        num = sum(_is_num(c) or (sep == ";" and _is_num(c.replace(",", ".", 1)))
                  for c in cells) / max(len(cells), 1)
        score = (freq / len(rows), num, -pri)
        if best_score is None or score > best_score:
            best, best_score = sep, score
    sep = best or ","
    decimal = "."
    if sep == ";":
        cells = [c.strip() for ln in lines for c in _split(ln, ";")]
        if any(re.fullmatch(r"[+-]?\d*,\d+", c) for c in cells) and \
                not any(re.fullmatch(r"[+-]?\d*\.\d+", c) for c in cells):
            decimal = ","
    return sep, decimal


def _int_header(cells: list[str]) -> str | None:
    if len(cells) >= 2 and cells[0] == "" and cells[1:] == [str(i) for i in range(len(cells) - 1)]:
        return "index"
    if len(cells) >= 3 and cells == [str(i) for i in range(len(cells))]:
        return "plain"
    return None


def _is_header(cells: list[str], below: list[list[str]], line: int, path: Path,
               notes: list[str], num: Callable[[str], bool]) -> bool:
    """Decide whether the first line is a header (see the module docstring)."""
    kind = _int_header(cells)
    if kind:
        notes.append(f"{path}: line {line} ({','.join(cells[:4])},...) read as a header of integer "
                     "column names, as pandas to_csv() writes them; pass header=False if it is "
                     "data.")
        return True
    text = [j for j, c in enumerate(cells) if c != "" and not num(c)]
    if not text:
        return False
    if not below or len(text) + sum(c == "" for c in cells) == len(cells):
        return True

    def numeric_below(j):
        col = [r[j].strip() for r in below if j < len(r)]
        return sum(num(c) for c in col) > len(col) / 2

    if any(numeric_below(j) for j in text):
        return True
    if any(cells[j] in {r[j].strip() for r in below if j < len(r)} for j in text):
        return False
    shown = ", ".join(repr(cells[j]) for j in text[:3])
    notes.append(f"{path}: line {line} read as a header (its text cells {shown} do not recur "
                 "below, though its other cells are numbers); pass header=False if it is data.")
    return True


class _Rows:
    """Words row references: file lines for text (blank lines and the header counted, as an
    editor shows them), 1-based rows for Parquet/NumPy. For text it also gives a line's raw
    cells, computed only when an error needs them."""

    def __init__(self, raw: bytes | None = None, encoding: str = "utf-8", sep: str = ",",
                 first_line: int = 0, n_cols: int = 0):
        self.raw, self.encoding, self.sep = raw, encoding, sep
        self.first_line, self.n_cols = first_line, n_cols
        self.unit = "row" if raw is None else "line"
        self._lines: list[tuple[int, str]] | None = None

    def _data_lines(self) -> list[tuple[int, str]]:
        if self._lines is None:
            lines = _LINE_END.split(self.raw.decode(self.encoding))
            self._lines = [(k + 1, ln) for k, ln in enumerate(lines)
                           if k >= self.first_line and not _blank(ln, self.sep)]
        return self._lines

    def number(self, i: int) -> int:
        if self.raw is None:
            return i + 1
        lines = self._data_lines()
        return lines[i][0] if i < len(lines) else i + 1 + self.first_line

    def where(self, i: int) -> str:
        return f"{self.unit} {self.number(i)}"

    def cells(self, i: int) -> list[str] | None:
        if self.raw is None:
            return None
        lines = self._data_lines()
        return _split(lines[i][1], self.sep) if i < len(lines) else None

    def check_width(self, i: int, path: Path) -> None:
        """Raise the 'wrong number of cells' error if data row ``i`` has one."""
        cells = self.cells(i)
        if cells is not None and len(cells) != self.n_cols:
            raise TableError(f"{path}: {self.where(i)} has {len(cells)} cells, expected "
                             f"{self.n_cols} (as the first line); make every line the same "
                             "width.")

    def check_all_widths(self, path: Path) -> None:
        if self.raw is not None:
            for i in range(len(self._data_lines())):
                self.check_width(i, path)


@dataclass
class _Layout:
    """Which columns are the dropped index, the labels, the domains and the features."""

    names: list[str] | None
    index: int | None
    label: int | None
    domain: int | None
    features: list[int]

    def name(self, j: int) -> str:
        return repr(self.names[j]) if self.names else str(j + 1 - (self.index is not None))


def _resolve(spec, names: list[str] | None, usable: list[int], what: str, path: Path) -> int:
    """A header name (exact, blanks stripped), else an integer index among ``usable``."""
    digits = isinstance(spec, str) and re.fullmatch(r"[+-]?\d+", spec.strip())
    if digits and names and sum(names[j] == spec.strip() for j in usable) == 1:
        return next(j for j in usable if names[j] == spec.strip())
    if isinstance(spec, str) and not digits:
        if names is None:
            raise TableError(f"{path}: {what} {spec!r} is a name but the file has no header "
                             "line; give a column index (e.g. -1 for the last) or add a header.")
        hits = [j for j in usable if names[j] == spec.strip()]
        if len(hits) > 1:
            raise TableError(f"{path}: {len(hits)} columns are named {spec!r}; rename them or "
                             "give the column by index.")
        if not hits:
            cols = [names[j] for j in usable]
            close = difflib.get_close_matches(spec, cols, n=1)
            shown = ", ".join(cols[:20]) + (", ..." if len(cols) > 20 else "")
            raise TableError(f"{path}: no column named {spec!r} (columns: {shown})"
                             + (f"; did you mean {close[0]!r}?" if close else "."))
        return hits[0]
    if isinstance(spec, bool) or not isinstance(spec, int | str | np.integer):
        raise TypeError(f"{what} must be a column name or an integer index, got {spec!r}.")
    j = int(spec)
    n = len(usable)
    if not -n <= j < n:
        raise TableError(f"{path}: {what} index {j} is outside the {n} columns "
                         f"(valid: {-n} to {n - 1}).")
    return usable[j]


def _layout(names: list[str] | None, n_cols: int, label_column, domain_column,
            path: Path, notes: list[str]) -> _Layout:
    index = None
    if names and (names[0] == "" or re.fullmatch(r"Unnamed: \d+", names[0])):
        index = 0
    usable = [j for j in range(n_cols) if j != index]
    label = (None if label_column is None else
             _resolve(label_column, names, usable, "label column", path))
    domain = (None if domain_column is None else
              _resolve(domain_column, names, usable, "domain column", path))
    if label is not None and label == domain:
        raise TableError(f"{path}: the label column and the domain column are the same "
                         f"column; give two different columns.")
    features = [j for j in usable if j not in (label, domain)]
    if not features:
        raise TableError(f"{path}: no feature columns (only {n_cols} column(s)); the file "
                         "needs at least one feature beside the label/domain columns.")
    return _Layout(names, index, label, domain, features)


# ---------------------------------------------------------------- the three readers


def _read_text(raw: bytes, path: Path, name: str, header: bool | None, notes: list[str],
               layout_of: Callable[[list[str] | None, int], _Layout]):
    raw, enc = _decode_setup(raw, path, notes)
    end, seen = 0, 0
    while end < len(raw) and seen <= _SAMPLE_LINES:   # whole lines, to the 101st non-blank
        stop = raw.find(b"\n", end) + 1 or len(raw)
        seen += bool(_NON_BLANK.search(raw, end, stop))
        end = stop
    head = raw[:end].decode(enc)
    head_lines = _LINE_END.split(head)
    sample = [ln for ln in head_lines if ln.strip()][:_SAMPLE_LINES + 1]
    if not sample:
        raise TableError(f"{path}: the file is empty (no non-blank line); give a file with "
                         "rows.")
    sep, decimal = _sniff(sample, Path(name).suffix.lower())
    if decimal == ",":
        notes.append(f"{path}: ';'-separated with decimal commas (1,5 read as 1.5).")

    def num(c: str) -> bool:
        return _is_num(c) or (decimal == "," and _is_num(c.replace(",", ".", 1)))

    k0 = next(k for k, ln in enumerate(head_lines) if not _blank(ln, sep))
    first = [c.strip() for c in _split(head_lines[k0], sep)]
    below = [_split(ln, sep) for ln in head_lines[k0 + 1:] if not _blank(ln, sep)]
    if sep == r"\s+" and header is not False and below and \
            all(len(r) == len(first) + 1 for r in below[:_SAMPLE_LINES]):
        first = ["", *first]   # whitespace: a header one cell short names no index column
    has_header = (bool(header) if header is not None else
                  _is_header(first, below[:_SAMPLE_LINES], k0 + 1, path, notes, num))
    width = len(first)   # cells per line in the file
    trailing = (has_header and sep != r"\s+" and width > 1 and first[-1] == "" and bool(below)
                and 2 * sum(bool(r) and r[-1].strip() == "" for r in below[:_SAMPLE_LINES])
                >= len(below[:_SAMPLE_LINES]))
    if trailing:   # the lines end with the delimiter: an unnamed empty last column, ignored
        first = first[:-1]
    names = first if has_header else None
    layout = layout_of(names, len(first))
    offset, first_line = 0, 0
    if has_header:   # the data start after the header line (line ends are one byte here)
        ends = [m for _, m in zip(range(k0 + 1), _LINE_END.finditer(head), strict=False)]
        offset = len(head[:ends[k0].end()].encode(enc)) if len(ends) > k0 else len(raw)
        if not _NON_BLANK.search(raw, offset):
            raise TableError(f"{path}: a header line but no data rows; add the rows.")
        first_line = k0 + 1
    rows = _Rows(raw, enc, sep, first_line, width)
    str_cols = [j for j in (layout.index, layout.label, layout.domain,
                            width - 1 if trailing else None) if j is not None]
    try:
        buf = io.BytesIO(raw)
        buf.seek(offset)
        df = pd.read_csv(buf, sep=sep, header=None, encoding=enc,
                         skipinitialspace=True, keep_default_na=False, decimal=decimal,
                         skip_blank_lines=True, engine="c", dtype=dict.fromkeys(str_cols, str))
    except pd.errors.EmptyDataError:
        raise TableError(f"{path}: no data rows; add the rows.") from None
    except Exception as exc:   # ParserError (ragged rows, open quotes) and the like
        rows.check_all_widths(path)
        msg = str(exc).strip().splitlines()
        raise TableError(f"{path}: cannot be parsed as a table ("
                         f"{msg[-1] if msg else type(exc).__name__}).") from None
    if df.shape[1] != width:
        rows.check_all_widths(path)
        raise TableError(f"{path}: {rows.where(0)} has {df.shape[1]} cells but line {k0 + 1} "
                         f"has {width}; make every line the same width.")
    if trailing:
        last = df.iloc[:, -1].fillna("").str.strip()
        if (last != "").any():
            i = int(np.flatnonzero((last != "").to_numpy())[0])
            raise TableError(f"{path}: {rows.where(i)} has a value after the last delimiter, "
                             "where the lines above end with the delimiter; make every line "
                             "the same width.")
        notes.append(f"{path}: every line ends with the delimiter; the empty last column is "
                     "ignored.")
        df = df.iloc[:, :-1]
    return df, layout, rows


def _read_parquet(raw: bytes, path: Path) -> pd.DataFrame:
    import pyarrow.parquet as pq

    try:
        df = pq.read_table(io.BytesIO(raw)).to_pandas()
    except Exception as exc:   # ArrowInvalid, OSError, ... on corrupt files
        msg = str(exc).strip().splitlines()
        raise TableError(f"{path}: cannot be read as Parquet ({type(exc).__name__}"
                         f"{': ' + msg[0] if msg else ''}).") from None
    if isinstance(df.columns, pd.MultiIndex):
        raise TableError(f"{path}: multi-level column names; flatten them before saving.")
    return df.reset_index(drop=True)


def _read_numpy(raw: bytes, path: Path, npz: bool, label_column, domain_column):
    """DataFrame, labels key and domain key: for .npz the columns of X then y/domain."""
    try:
        obj = np.load(io.BytesIO(raw), allow_pickle=False)
        arrays = None
        if npz:
            with obj as z:
                arrays = {k: z[k] for k in z.files}
    except Exception as exc:
        raise TableError(f"{path}: cannot be read as a NumPy file ({type(exc).__name__}: "
                         f"{exc}).") from None
    if arrays is None:
        if obj.ndim != 2 or obj.dtype.kind not in "biuf":
            raise TableError(f"{path}: expected a 2-D numeric array (rows x columns), got "
                             f"shape {obj.shape} and dtype {obj.dtype}.")
        return pd.DataFrame(obj), label_column, domain_column
    X = arrays.get("X")
    if X is None:
        raise TableError(f"{path}: an .npz file needs an array 'X' (and 'y' for labels); "
                         f"found {sorted(arrays)}.")
    if X.ndim != 2 or X.dtype.kind not in "biuf":
        raise TableError(f"{path}: 'X' must be a 2-D numeric array, got shape {X.shape} "
                         f"and dtype {X.dtype}.")
    df = pd.DataFrame(X, columns=[f"X[:, {j}]" for j in range(X.shape[1])])
    keys = []
    for spec, default, what in ((label_column, "y", "labels"), (domain_column, None, "domains")):
        key = None
        if spec is not None:
            key = default if (default and re.fullmatch(r"[+-]?\d+", str(spec))) else str(spec)
            if key not in arrays:
                raise TableError(f"{path}: no array {key!r} with the {what} (arrays: "
                                 f"{', '.join(sorted(arrays))}).")
            a = arrays[key]
            if a.ndim != 1 or len(a) != len(X):
                raise TableError(f"{path}: {key!r} must be 1-D with one entry per row of X "
                                 f"({len(X)}), got shape {a.shape}.")
            df[key] = a
        keys.append(key)
    return df, *keys


# ---------------------------------------------------------------- values: features, labels


def _features(df: pd.DataFrame, layout: _Layout, rows: _Rows, path: Path,
              notes: list[str]) -> np.ndarray:
    cols = [df.iloc[:, j] for j in layout.features]
    for j, c in zip(layout.features, cols, strict=True):
        if c.dtype.kind in "mM":
            raise TableError(f"{path}: column {layout.name(j)} holds {c.dtype} values (dates or "
                             "durations), not numbers; convert it to numbers or drop it.")
    if all(c.dtype.kind in "iuf" for c in cols):
        X = df.iloc[:, layout.features].to_numpy(dtype=np.float64, na_value=np.nan)
    else:
        X = np.empty((len(df), len(cols)))
        booleans = []
        for k, c in enumerate(cols):
            if c.dtype.kind == "b":
                booleans.append(layout.name(layout.features[k]))
            if c.dtype.kind in "iufb":
                X[:, k] = c.to_numpy(dtype=np.float64, na_value=np.nan)
            else:
                X[:, k] = pd.to_numeric(c, errors="coerce").to_numpy(dtype=np.float64,
                                                                     na_value=np.nan)
        if booleans:
            notes.append(f"{path}: True/False read as 1/0 in column(s) "
                         f"{', '.join(booleans[:5])}{', ...' if len(booleans) > 5 else ''}.")
    bad = ~np.isfinite(X)
    if bad.any():
        i = int(np.flatnonzero(bad.any(axis=1))[0])
        k = int(np.flatnonzero(bad[i])[0])
        rows.check_width(i, path)
        j = layout.features[k]
        cells = rows.cells(i)
        if cells is not None:
            cell = cells[j].strip()
            why = ("is empty" if cell == "" else
                   "is not finite" if _is_num(cell) else "is not a number")
        else:
            value = df.iat[i, j]
            cell = str(value)
            why = ("is missing" if value is None or value is pd.NA or value is pd.NaT else
                   "is not finite" if _is_num(cell) else "is not a number")
        raise TableError(f"{path}: {rows.where(i)}, column {layout.name(j)}: {cell!r} {why}; "
                         "every feature cell must be a finite number (fix or drop the row).")
    _check_magnitudes(X, df, layout, rows, path)
    if not layout.names and X.shape[0] >= 3:
        first = X[:, 0]
        for start in (0, 1):
            if np.array_equal(first, np.arange(start, start + len(first))):
                notes.append(f"{path}: the first feature column counts {start}..."
                             f"{start + len(first) - 1}; if it is a row index, remove it.")
    return X


def _check_magnitudes(X: np.ndarray, df: pd.DataFrame, layout: _Layout, rows: _Rows,
                      path: Path) -> None:
    """Refuse a feature column whose values the kernels cannot square and multiply in float64
    (see :data:`MAX_MAGNITUDE`), naming the column, the row and the fix."""
    if X.size == 0:
        return
    amax = np.abs(X).max(axis=0)
    big = np.flatnonzero(amax > MAX_MAGNITUDE)
    tiny = np.flatnonzero((amax > 0) & (amax < 1 / MAX_MAGNITUDE))
    if not big.size and not tiny.size:
        return
    k = int(big[0] if big.size else tiny[0])
    j = layout.features[k]
    i = int(np.argmax(np.abs(X[:, k])))
    if big.size:
        raise TableError(f"{path}: {rows.where(i)}, column {layout.name(j)}: {X[i, k]:.6g} is "
                         f"beyond +-{MAX_MAGNITUDE:.0e}; the kernels, distances and "
                         "covariances multiply the features up to the fourth power, which "
                         "would overflow: rescale that column (another unit, or its logarithm).")
    raise TableError(f"{path}: column {layout.name(j)}: every value is below "
                     f"{1 / MAX_MAGNITUDE:.0e} in magnitude (largest {X[i, k]:.6g} on "
                     f"{rows.where(i)}); its squares would vanish in float64: rescale that "
                     "column (another unit).")


def _target_values(col: pd.Series, rows: _Rows, path: Path, what: str, missing_ok: bool
                   ) -> np.ndarray:
    """A regression target's column as float64 (NaN where a cell is missing, if allowed)."""
    st = pd.Series(col.to_numpy(), dtype=object)
    text = st.astype(str).str.strip()
    missing = (st.isna() | text.isin(MISSING_TOKENS)).to_numpy()
    num = pd.to_numeric(text.where(~missing, None), errors="coerce").to_numpy(
        dtype=np.float64, na_value=np.nan)
    bad = ~missing & ~np.isfinite(num)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise TableError(f"{what}: {rows.where(i)}: {text.iloc[i]!r} is not a finite number; "
                         "a regression target needs a number on every labeled row (fix it, or "
                         "read the column as classes without --task regression).")
    if missing.any() and not missing_ok:
        idx = np.flatnonzero(missing)
        shown = ", ".join(str(rows.number(int(i))) for i in idx[:8])
        raise TableError(f"{what}: {idx.size} row(s) without a value ({rows.unit}s {shown}"
                         f"{', ...' if idx.size > 8 else ''}); fill them in or remove "
                         "those rows.")
    return np.where(missing, np.nan, num)


def _column_values(col: pd.Series, rows: _Rows, path: Path, what: str, missing_ok: bool,
                   classes: bool) -> np.ndarray:
    vals, missing, kind = normalise_labels(col.to_numpy(), what, "labels" if classes else "domains")
    if missing.any():
        idx = np.flatnonzero(missing)
        for i in idx:   # a short line also leaves its last cell empty: say so first
            rows.check_width(int(i), path)
        if not missing_ok:
            shown = ", ".join(str(rows.number(int(i))) for i in idx[:8])
            raise TableError(f"{what}: {idx.size} row(s) without a value ({rows.unit}s {shown}"
                             f"{', ...' if idx.size > 8 else ''}); fill them in or remove "
                             "those rows.")
    if classes and kind is not None:
        check_classes(vals[~missing], int((~missing).sum()), what)
    if missing.any():
        out = vals.astype(object)
        out[missing] = None
        return out
    return vals


def read_table(path: str | Path, *, label_column: str | int | None = -1, with_labels: bool = True,
               domain_column: str | int | None = None, header: bool | None = None,
               allow_missing_labels: bool = False, label_values: bool = False) -> Table:
    """Read one table: features, labels (as values) and optionally a domain column.

    Parameters
    ----------
    path : str or Path
        CSV/TSV/semicolon/whitespace text (optionally .gz/.bz2/.xz/.zip compressed), Parquet
        (``.parquet``/``.pq``), ``.npy`` (a 2-D array, labels a column of it) or ``.npz``
        (arrays ``X``, ``y`` and, with ``domain_column``, the array of that name).
    label_column : str, int or None, default -1
        A header name or an index among the columns (``-1``: the last; a dropped index column
        does not count). A string of digits that is not a column name is an index. ``None``:
        no labels.
    with_labels : bool, default True
        ``False``: every column but the domain column is a feature.
    domain_column : str, int or None
        A column holding each row's domain (one file with several domains); returned in
        ``Table.domains``, normalised as the labels are.
    header : bool or None
        ``None`` detects it (see the module docstring), ``True``/``False`` forces it.
    allow_missing_labels : bool, default False
        ``True`` (e.g. a target file whose labels are only for evaluation): rows without a
        label get ``None`` in an object ``y``; ``False``: they are an error naming the lines.
    label_values : bool, default False
        ``True``: the label column holds the values of a regression target, read as float64
        numbers (missing cells NaN when ``allow_missing_labels``); a cell that is not a finite
        number is an error naming its line.

    Returns
    -------
    Table

    Raises
    ------
    TableError
        A ``ValueError`` whose one-line message names the file, the line and column where it
        applies, and the fix.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> _ = (folder / "s.csv").write_text("a,b,label\\n1,2,1\\n3,4,2.0\\n5,6,01\\n")
    >>> t = read_table(folder / "s.csv", label_column="label")
    >>> t.X.tolist(), t.y.tolist(), t.feature_names
    ([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]], [1, 2, 1], ['a', 'b'])

    A pandas ``to_csv()`` export keeps its integer header; the index column is dropped:

    >>> import pandas as pd
    >>> pd.DataFrame([[0.5, 1.5, "cat"], [2.5, 3.5, "dog"]]).to_csv(folder / "e.csv.gz")
    >>> t = read_table(folder / "e.csv.gz")
    >>> t.X.tolist(), t.y.tolist(), t.feature_names
    ([[0.5, 1.5], [2.5, 3.5]], ['cat', 'dog'], ['0', '1'])
    >>> print(t.notes[-1].split(": ", 1)[1])
    dropped the first column (no header name: a row index as pandas to_csv() writes it;
    values 0..1).
    """
    path = Path(path)
    notes: list[str] = []
    raw = _read_bytes(path)
    raw, name = _decompress(raw, path, notes)
    if not _NON_BLANK.search(raw):
        raise TableError(f"{path}: the file is empty; give a file with rows.")
    label_column = label_column if with_labels else None
    suffix = Path(name).suffix.lower()
    magic = {".parquet": b"PAR1", ".pq": b"PAR1", ".npy": b"\x93NUMPY", ".npz": b"PK"}
    if suffix in magic and not raw.startswith(magic[suffix]):
        raise TableError(f"{path}: not a valid {suffix} file (its first bytes are "
                         f"{raw[:8]!r}); check the file or its extension.")
    rows, names_shown = _Rows(), True
    if raw.startswith(b"PAR1"):
        df = _read_parquet(raw, path)
        names = [str(c) for c in df.columns]
        layout = _layout(names, len(names), label_column, domain_column, path, notes)
    elif raw.startswith((b"\x93NUMPY", b"PK")):
        npz = raw.startswith(b"PK")
        df, ykey, dkey = _read_numpy(raw, path, npz, label_column, domain_column)
        if npz:
            cols = list(df.columns)
            d = cols.index(ykey) if ykey else None
            m = cols.index(dkey) if dkey else None
            layout = _Layout(cols, None, d, m, [j for j in range(len(cols)) if j not in (d, m)])
            names_shown = False
        else:
            layout = _layout(None, df.shape[1], label_column, domain_column, path, notes)
    else:
        df, layout, rows = _read_text(
            raw, path, name, header, notes,
            lambda names, n: _layout(names, n, label_column, domain_column, path, notes))
    if len(df) == 0:
        raise TableError(f"{path}: no data rows; add the rows.")
    if layout.index is not None:
        col = pd.to_numeric(df.iloc[:, layout.index], errors="coerce").to_numpy(
            dtype=np.float64, na_value=np.nan)
        counts = next((f"; values {s}..{s + len(col) - 1}" for s in (0, 1)
                       if np.array_equal(col, np.arange(s, s + len(col)))), "")
        notes.append(f"{path}: dropped the first column (no header name: a row index as "
                     f"pandas to_csv() writes it{counts}).")
    X = _features(df, layout, rows, path, notes)
    y = label_name = domains = None
    if layout.label is not None:
        label_name = layout.names[layout.label] if layout.names else None
        what = f"{path}, label column {layout.name(layout.label)}"
        if label_values:
            y = _target_values(df.iloc[:, layout.label], rows, path, what,
                               allow_missing_labels)
        else:
            y = _column_values(df.iloc[:, layout.label], rows, path, what,
                               allow_missing_labels, classes=True)
    if layout.domain is not None:
        domains = _column_values(df.iloc[:, layout.domain], rows, path,
                                 f"{path}, domain column {layout.name(layout.domain)}",
                                 False, classes=False)
    feature_names = ([layout.names[j] for j in layout.features]
                     if layout.names and names_shown else None)
    if feature_names:
        twice = [n for n, k in Counter(feature_names).items() if k > 1]
        if twice:
            notes.append(f"{path}: {len(twice)} column name(s) used more than once ("
                         + ", ".join(repr(n) for n in twice[:5])
                         + (", ..." if len(twice) > 5 else "") + "); each such column is a "
                         "separate feature, matched across files by position only.")
    return Table(str(path), X, y, feature_names, label_name, domains, notes)
