"""Reading users' tables (issue #14, item 4): ``shiftlearn.io``.

One test per case a new user meets (encodings, compression, Parquet, pandas exports, delimiters,
labels as values, regression targets, missing labels, bad cells, unreadable files) and two
hypothesis properties: written-then-read DataFrames come back identical, and malformed files
raise ``ValueError`` (never another exception).
"""

from __future__ import annotations

import bz2
import gzip
import lzma
import os
import string
import zipfile
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from shiftlearn.io._tables import (
    MAX_MAGNITUDE,
    MISSING_TOKENS,
    Table,
    TableError,
    encode_labels,
    read_table,
)

COMPRESS = {".gz": gzip.compress, ".bz2": bz2.compress, ".xz": lzma.compress}


def _write(path: Path, text: str | bytes, encoding: str = "utf-8") -> Path:
    data = text.encode(encoding) if isinstance(text, str) else text
    for suffix, fn in COMPRESS.items():
        if path.name.endswith(suffix):
            data = fn(data)
    path.write_bytes(data)
    return path


CSV = "a,b,label\n1,2,cat\n3,4.5,dog\n"


def _is_cat_dog(t: Table) -> None:
    assert t.X.dtype == np.float64 and t.X.tolist() == [[1, 2], [3, 4.5]]
    assert t.y.tolist() == ["cat", "dog"] and t.feature_names == ["a", "b"]
    assert t.label_name == "label"


# ---------------------------------------------------------------- encodings and compression

def test_utf8_bom_is_not_part_of_the_first_name(tmp_path):
    t = read_table(_write(tmp_path / "bom.csv", "\ufeff" + CSV), label_column="label")
    _is_cat_dog(t)


def test_utf16_with_bom(tmp_path):
    _is_cat_dog(read_table(_write(tmp_path / "u16.csv", CSV, "utf-16"), label_column="label"))


@pytest.mark.parametrize("codec", ["latin-1", "cp1252"])
def test_latin1_and_cp1252_fall_back_with_a_note(tmp_path, codec):
    text = "a,b,label\n1,2,café\n3,4,naïve\n5,6,café\n"
    t = read_table(_write(tmp_path / "l.csv", text, codec))
    assert t.y.tolist() == ["café", "naïve", "café"]
    assert any("not valid UTF-8" in n and "decoded as" in n for n in t.notes)


@pytest.mark.parametrize("suffix", [".gz", ".bz2", ".xz"])
def test_compressed_text(tmp_path, suffix):
    _is_cat_dog(read_table(_write(tmp_path / f"c.csv{suffix}", CSV)))


def test_gzip_without_its_extension_is_still_read(tmp_path):
    p = tmp_path / "c.csv"
    p.write_bytes(gzip.compress(CSV.encode()))
    _is_cat_dog(read_table(p))


def test_zip_with_one_member_and_with_two(tmp_path):
    p = tmp_path / "c.zip"
    with zipfile.ZipFile(p, "w") as z:
        z.writestr("inner.csv", CSV)
    t = read_table(p)
    _is_cat_dog(t)
    assert any("inner.csv" in n for n in t.notes)
    with zipfile.ZipFile(p, "w") as z:
        z.writestr("one.csv", CSV)
        z.writestr("two.csv", CSV)
    with pytest.raises(ValueError, match="zip archive with 2 files"):
        read_table(p)


def test_corrupt_gzip_is_a_value_error(tmp_path):
    p = tmp_path / "c.csv.gz"
    p.write_bytes(gzip.compress(CSV.encode())[:15])
    with pytest.raises(ValueError, match="corrupt or truncated compressed file"):
        read_table(p)


# ---------------------------------------------------------------- Parquet and NumPy

def test_parquet_with_a_non_default_index(tmp_path):
    df = pd.DataFrame({"a": [1.0, 3.0], "b": [2, 4.5], "label": ["cat", "dog"]},
                      index=[7, 3])
    df.to_parquet(tmp_path / "d.parquet")
    _is_cat_dog(read_table(tmp_path / "d.parquet"))


def test_parquet_integral_float_labels_with_missing_are_ints(tmp_path):
    df = pd.DataFrame({"a": [1.0, 2.0, 3.0], "label": pd.array([1, None, 2], dtype="Int64")})
    df.to_parquet(tmp_path / "d.pq")
    with pytest.raises(ValueError, match=r"label column 'label': 1 row\(s\) without a value "
                                         r"\(rows 2\)"):
        read_table(tmp_path / "d.pq")
    t = read_table(tmp_path / "d.pq", allow_missing_labels=True)
    assert t.y.tolist() == [1, None, 2]


def test_parquet_text_feature_names_row_and_column(tmp_path):
    pd.DataFrame({"a": ["1", "x"], "label": [0, 1]}).to_parquet(tmp_path / "d.parquet")
    with pytest.raises(ValueError, match=r"row 2, column 'a': 'x' is not a number"):
        read_table(tmp_path / "d.parquet")


def test_parquet_dates_and_missing_numbers_are_refused(tmp_path):
    df = pd.DataFrame({"a": [1.0, 2.0], "when": pd.to_datetime(["2020-01-01", "2020-02-01"]),
                       "label": ["x", "y"]})
    df.to_parquet(tmp_path / "d.parquet")
    with pytest.raises(ValueError, match="column 'when' holds datetime64.* not numbers"):
        read_table(tmp_path / "d.parquet")
    df = pd.DataFrame({"a": pd.array([1, None], dtype="Int64"), "label": [1, 2]})
    df.to_parquet(tmp_path / "n.parquet")
    with pytest.raises(ValueError, match="row 2, column 'a': '<NA>' is missing"):
        read_table(tmp_path / "n.parquet")


def test_file_whose_extension_lies(tmp_path):
    with pytest.raises(ValueError, match="not a valid .parquet file"):
        read_table(_write(tmp_path / "d.parquet", CSV))


def test_npy_and_npz(tmp_path):
    np.save(tmp_path / "a.npy", np.array([[1, 2, 0], [3, 4.5, 1.0]]))
    t = read_table(tmp_path / "a.npy")
    assert t.X.tolist() == [[1, 2], [3, 4.5]] and t.y.tolist() == [0, 1]
    assert t.y.dtype == np.int64 and t.feature_names is None
    np.savez(tmp_path / "a.npz", X=np.ones((2, 2)), y=np.array(["b", "a"]),
             site=np.array([1, 2]))
    t = read_table(tmp_path / "a.npz", domain_column="site")
    assert t.y.tolist() == ["b", "a"] and t.domains.tolist() == [1, 2] and t.X.shape == (2, 2)
    np.savez(tmp_path / "b.npz", Z=np.ones((2, 2)))
    with pytest.raises(ValueError, match="needs an array 'X'"):
        read_table(tmp_path / "b.npz")


# ---------------------------------------------------------------- pandas exports

def test_to_csv_export_with_index_and_integer_header(tmp_path):
    X = np.array([[0.5, 1.5], [2.5, 3.5], [4.5, 5.5]])
    pd.DataFrame(np.c_[X, [1, 0, 1]]).to_csv(tmp_path / "e.csv")   # ,0,1,2 then 0,...
    t = read_table(tmp_path / "e.csv")
    assert t.X.tolist() == X.tolist() and t.y.tolist() == [1, 0, 1]
    assert t.y.dtype == np.int64   # written as 1.0, read as the value 1
    assert t.feature_names == ["0", "1"] and t.label_name == "2"
    assert any("dropped the first column" in n and "0..2" in n for n in t.notes)
    # label column by its integer name, which is also its index among the kept columns
    assert read_table(tmp_path / "e.csv", label_column="2").y.tolist() == [1, 0, 1]
    with pytest.raises(ValueError, match="label column '0': labels with fractions"):
        read_table(tmp_path / "e.csv", label_column="0")


def test_to_csv_export_without_index_integer_header(tmp_path):
    X = np.array([[0.5, 1.5], [2.5, 3.5]])
    pd.DataFrame(np.c_[X, [1, 0]]).to_csv(tmp_path / "e.csv", index=False)   # 0,1,2
    t = read_table(tmp_path / "e.csv")
    assert t.X.tolist() == X.tolist() and t.y.tolist() == [1, 0]
    assert any("integer column names" in n for n in t.notes)


def test_shuffled_index_and_unnamed_column_are_dropped(tmp_path):
    df = pd.DataFrame({"a": [1.0, 3.0], "b": [2, 4.5], "label": ["cat", "dog"]}, index=[9, 4])
    df.to_csv(tmp_path / "e.csv")
    _is_cat_dog(read_table(tmp_path / "e.csv"))
    pd.read_csv(tmp_path / "e.csv").to_parquet(tmp_path / "e.parquet")   # 'Unnamed: 0'
    t = read_table(tmp_path / "e.parquet")
    _is_cat_dog(t)
    assert any("dropped the first column" in n for n in t.notes)


def test_get_dummies_booleans_are_ones_and_zeros(tmp_path):
    df = pd.get_dummies(pd.DataFrame({"c": ["u", "v"], "x": [1.0, 2.0]}), columns=["c"])
    df["label"] = ["cat", "dog"]
    df.to_csv(tmp_path / "d.csv", index=False)
    t = read_table(tmp_path / "d.csv")
    assert t.X.tolist() == [[1, 1, 0], [2, 0, 1]]
    assert any("True/False read as 1/0" in n for n in t.notes)


# ---------------------------------------------------------------- delimiters and layout

@pytest.mark.parametrize("text", [
    "a;b;label\n1;2;cat\n3;4.5;dog\n",
    "a;b;label\n1;2;cat\n3;4,5;dog\n",        # decimal comma
    "a\tb\tlabel\n1\t2\tcat\n3\t4.5\tdog\n",
    "a b label\n1 2 cat\n  3   4.5 dog  \n",   # whitespace, aligned
    "a|b|label\n1|2|cat\n3|4.5|dog\n",
    "\n\na,b,label\n\n1,2,cat\n   \n3,4.5,dog\n\n",   # blank lines anywhere
    "a, b, label\r\n1, 2, cat\r\n3, 4.5, dog\r\n",  # CRLF, blanks after commas
    '"a","b","label"\n1,2,"cat"\n3,4.5,"dog"\n',
    "a,b,label,\n1,2,cat,\n3,4.5,dog,\n",
    "a;b;label;\n1;2;cat;\n3;4,5;dog;\n",
], ids=["semicolon", "decimal-comma", "tab", "whitespace", "pipe", "blank-lines", "crlf",
        "quoted", "trailing-comma", "trailing-semicolon"])
def test_delimiters(tmp_path, text):
    _is_cat_dog(read_table(_write(tmp_path / "d.txt", text)))


@pytest.mark.parametrize("codec", ["utf-16-le", "utf-16-be"])
def test_utf16_without_bom(tmp_path, codec):
    t = read_table(_write(tmp_path / "u.csv", CSV, codec))
    _is_cat_dog(t)
    assert any("without a byte-order mark" in n for n in t.notes)


def test_whitespace_header_one_cell_short_names_an_index(tmp_path):
    # R's write.table and pandas to_csv(sep=" ") with the index: no name above the index
    t = read_table(_write(tmp_path / "r.txt", "a b label\n1 1 2 cat\n2 3 4.5 dog\n"))
    _is_cat_dog(t)
    assert any("dropped the first column" in n for n in t.notes)


def test_long_blank_start_and_wide_header(tmp_path):
    names = [f"feature_{j:05d}" for j in range(3000)]   # a header line longer than 64 KiB
    row = ",".join(["1.5"] * 3000)
    text = "\n" * 300 + ",".join([*names, "label"]) + "\n" + f"{row},cat\n{row},dog\n"
    t = read_table(_write(tmp_path / "w.csv", text))
    assert t.X.shape == (2, 3000) and t.feature_names[-1] == "feature_02999"
    assert t.y.tolist() == ["cat", "dog"]
    with pytest.raises(ValueError, match=r"line 303, column 'feature_00007': 'x' is not"):
        bad = ",".join(["1.5"] * 7 + ["x"] + ["1.5"] * 2992)
        read_table(_write(tmp_path / "x.csv", text.replace(f"{row},dog", f"{bad},dog")))


def test_headerless_file_and_label_by_index(tmp_path):
    p = _write(tmp_path / "s.txt", "1 2 0\n3 4 1\n5 6 1\n")
    t = read_table(p)
    assert t.X.tolist() == [[1, 2], [3, 4], [5, 6]] and t.y.tolist() == [0, 1, 1]
    assert t.feature_names is None and t.label_name is None
    assert read_table(p, label_column="0").y.tolist() == [1, 3, 5]
    assert read_table(p, label_column=0).X[:, 0].tolist() == [2, 4, 6]


def test_headerless_string_labels_are_data_when_a_class_recurs(tmp_path):
    t = read_table(_write(tmp_path / "h.csv", "1,2,cat\n3,4,dog\n5,6,cat\n"))
    assert t.X.shape == (3, 2) and t.feature_names is None and t.notes == []


def test_ambiguous_first_line_is_a_header_with_a_note_and_can_be_forced(tmp_path):
    p = _write(tmp_path / "spectra.csv", "400,410,label\n0.1,0.2,cat\n0.3,0.4,dog\n")
    t = read_table(p)
    assert t.feature_names == ["400", "410"] and t.X.shape == (2, 2)
    assert any("header=False" in n for n in t.notes)
    q = _write(tmp_path / "two.csv", "1,2,cat\n3,4,dog\n")
    assert read_table(q, header=False).X.tolist() == [[1, 2], [3, 4]]


def test_headerless_counting_column_gets_a_note(tmp_path):
    t = read_table(_write(tmp_path / "i.csv", "0,5,1\n1,6,0\n2,7,1\n"))
    assert any("counts 0...2" in n for n in t.notes)


def test_domain_column(tmp_path):
    text = "a,site,b,label\n1,A,2,cat\n3,B,4.5,dog\n"
    t = read_table(_write(tmp_path / "d.csv", text), domain_column="site")
    _is_cat_dog(t)
    assert t.domains.tolist() == ["A", "B"]
    with pytest.raises(ValueError, match="domain column 'site': 1 row"):
        read_table(_write(tmp_path / "e.csv", "a,site,label\n1,,x\n2,B,y\n"),
                   domain_column="site")


def test_without_labels(tmp_path):
    t = read_table(_write(tmp_path / "t.csv", "a,b\n1,2\n3,4\n"), with_labels=False)
    assert t.y is None and t.X.shape == (2, 2) and t.feature_names == ["a", "b"]


# ---------------------------------------------------------------- labels as values

def test_one_and_one_point_zero_are_one_class_across_files(tmp_path):
    a = read_table(_write(tmp_path / "a.csv", "x,label\n1,1\n2,2\n3,01\n"))
    b = read_table(_write(tmp_path / "b.csv", "x,label\n1,1.0\n2,2.0\n"))
    assert a.y.dtype == b.y.dtype == np.int64
    classes, codes = encode_labels([a, b])
    assert classes.tolist() == [1, 2]
    assert [c.tolist() for c in codes] == [[0, 1, 0], [0, 1]]


def test_numeric_and_text_labels_across_files_name_the_files(tmp_path):
    a = read_table(_write(tmp_path / "a.csv", "x,label\n1,1\n2,2\n"))
    b = read_table(_write(tmp_path / "b.csv", "x,label\n1,cat\n2,dog\n"))
    with pytest.raises(ValueError, match=r"source labels: .*a\.csv hold numeric labels but "
                                         r".*b\.csv hold text labels"):
        encode_labels([a, b], what="source labels")


def test_one_number_written_two_ways_among_text_labels(tmp_path):
    with pytest.raises(ValueError, match="labels '1' and '1.0' are one number"):
        read_table(_write(tmp_path / "m.csv", "x,label\n1,1\n2,1.0\n3,cat\n"))


def test_encode_labels_missing_entries_get_minus_one():
    classes, codes = encode_labels([np.array(["b", "a"]), np.array([None, "b", ""], object)])
    assert classes.tolist() == ["a", "b"]
    assert [c.tolist() for c in codes] == [[1, 0], [-1, 1, -1]]


def test_minus_one_is_an_ordinary_class_in_a_file(tmp_path):
    t = read_table(_write(tmp_path / "pm.csv", "x,label\n1,-1\n2,1\n3,+1\n"))
    classes, codes = encode_labels([t])
    assert classes.tolist() == [-1, 1] and codes[0].tolist() == [0, 1, 1]


@pytest.mark.parametrize("labels, message", [
    ([0.5, 1.25, 3.14, 2.0], r"labels with fractions \(e\.g\. 0\.5, 1\.25, 3\.14\)"),
    (list(range(0, 700, 7)), "100 distinct labels in 100 rows"),
], ids=["fractions", "many-integers"])
def test_regression_target_is_refused(tmp_path, labels, message):
    text = "x,price\n" + "".join(f"{i},{v}\n" for i, v in enumerate(labels))
    p = _write(tmp_path / "r.csv", text)
    with pytest.raises(ValueError, match=message) as info:
        read_table(p)
    msg = str(info.value)
    assert str(p) in msg and "column 'price'" in msg and "classification" in msg
    assert "\n" not in msg


def test_many_classes_with_many_rows_are_accepted(tmp_path):
    labels = np.arange(300) % 60   # 60 classes, 5 rows each: not more than half unique
    text = "x,label\n" + "".join(f"{i},{v}\n" for i, v in enumerate(labels))
    assert np.unique(read_table(_write(tmp_path / "c.csv", text)).y).size == 60


def test_missing_labels_name_the_file_lines(tmp_path):
    text = "x,label\n1,cat\n2,\n\n3,NA\n4,dog\n5, nan \n"
    with pytest.raises(ValueError, match=r"m\.csv, label column 'label': 3 row\(s\) without a "
                                         r"value \(lines 3, 5, 7\); fill them in"):
        read_table(_write(tmp_path / "m.csv", text))
    # a headerless file whose last column is empty keeps it as the (missing) labels
    with pytest.raises(ValueError, match=r"label column 3: 2 row\(s\) without a value"):
        read_table(_write(tmp_path / "e.csv", "1,2,\n3,4,\n"))
    t = read_table(tmp_path / "m.csv", allow_missing_labels=True)
    assert t.y.tolist() == ["cat", None, None, "dog", None]
    assert encode_labels([t])[1][0].tolist() == [0, -1, -1, 1, -1]


# ---------------------------------------------------------------- errors

@pytest.mark.parametrize("text, message", [
    ("a,b,label\n1,2,x\n\n3,zz,y\n", r"line 4, column 'b': 'zz' is not a number"),
    ("a,b,label\n1,2,x\n3,inf,y\n", r"line 3, column 'b': 'inf' is not finite"),
    ("a,b,label\n1,NaN,x\n3,4,y\n", r"line 2, column 'b': 'NaN' is not finite"),
    ("a,b,label\n1,,x\n3,4,y\n", r"line 2, column 'b': '' is empty"),
    ("1,2,0\n3,x,1\n", r"line 2, column 2: 'x' is not a number"),
    ("a,b,label\n1,2,x\n3,4\n", r"line 3 has 2 cells, expected 3"),
    ("a,b,label\n1,2,x\n3,4,5,6\n", r"line 3 has 4 cells, expected 3"),
    ("a,b,label\n1,2,x\n3\n", r"line 3 has 1 cells, expected 3"),
    ("", r"the file is empty"),
    ("\n  \n\n", r"the file is empty"),
    ("a,b,label\n", r"a header line but no data rows"),
    ("a,b,label\n\n\n", r"a header line but no data rows"),
    ('a,b,label\n1,2,"x\n', r"cannot be parsed as a table"),
    ("label\nx\ny\n", r"no feature columns"),
    ("a,b,label,\n1,2,x,\n3,4,y,5\n", r"line 3 has a value after the last delimiter"),
], ids=["text-cell", "inf", "nan", "empty-cell", "headerless", "short", "long", "one-cell",
        "empty", "blank", "header-only", "header-blank", "open-quote", "label-only",
        "trailing-value"])
def test_malformed_text(tmp_path, text, message):
    p = _write(tmp_path / "bad.csv", text)
    with pytest.raises(TableError, match=message) as info:
        read_table(p)
    assert str(info.value).startswith(str(p)) and "\n" not in str(info.value)


def test_label_column_errors(tmp_path):
    p = _write(tmp_path / "s.csv", CSV)
    with pytest.raises(ValueError, match=r"no column named 'lable' \(columns: a, b, label\); "
                                         r"did you mean 'label'\?"):
        read_table(p, label_column="lable")
    with pytest.raises(ValueError, match=r"label column index 3 is outside the 3 columns "
                                         r"\(valid: -3 to 2\)"):
        read_table(p, label_column=3)
    with pytest.raises(ValueError, match="same column"):
        read_table(p, label_column="label", domain_column=-1)
    q = _write(tmp_path / "h.csv", "1,2,0\n3,4,1\n")
    with pytest.raises(ValueError, match="is a name but the file has no header line"):
        read_table(q, label_column="label")


def test_missing_file_folder_and_binary(tmp_path):
    with pytest.raises(ValueError, match="no such file"):
        read_table(tmp_path / "nope.csv")
    with pytest.raises(ValueError, match="is a folder"):
        read_table(tmp_path)
    with pytest.raises(ValueError, match="binary content"):
        read_table(_write(tmp_path / "b.csv", b"a,b\n\x00\x01\x02"))


def test_unreadable_file(tmp_path, monkeypatch):
    p = _write(tmp_path / "locked.csv", CSV)
    if os.geteuid() != 0:   # root reads any file: simulate the refusal as well
        p.chmod(0)
        with pytest.raises(ValueError, match="permission denied"):
            read_table(p)
        p.chmod(0o644)

    def refuse(self):
        raise PermissionError(13, "Permission denied", str(self))

    monkeypatch.setattr(Path, "read_bytes", refuse)
    with pytest.raises(ValueError, match=r"locked\.csv: permission denied; make the file "
                                         r"readable"):
        read_table(p)


# ---------------------------------------------------------------- properties

LETTERS = string.ascii_letters + "éü_"


def _text_label(s: str) -> bool:
    return s not in MISSING_TOKENS and pd.isna(pd.to_numeric(pd.Series([s]),
                                                             errors="coerce")[0])


text_labels = st.text(LETTERS, min_size=1, max_size=5).filter(_text_label)
SEPS = [",", ";", "\t", " ", "|"]
ENCODINGS = ["utf-8", "utf-8-sig", "cp1252", "utf-16"]
COMPRESSIONS = [None, "gzip", "bz2", "xz", "zip"]


@st.composite
def frames(draw):
    n = draw(st.integers(1, 6))
    d = draw(st.integers(1, 4))
    # the values the reader accepts: finite, within +-MAX_MAGNITUDE, 0 or not vanishing
    finite = st.floats(-MAX_MAGNITUDE, MAX_MAGNITUDE).filter(
        lambda v: v == 0 or abs(v) >= 1 / MAX_MAGNITUDE)
    cols = [draw(st.lists(st.integers(-10**6, 10**6) if draw(st.booleans()) else finite,
                          min_size=n, max_size=n)) for _ in range(d)]
    kind = draw(st.sampled_from(["int", "float", "str"]))
    pool = {"int": st.integers(-3, 5), "float": st.integers(-3, 5).map(float),
            "str": text_labels}[kind]
    labels = draw(st.lists(pool, min_size=n, max_size=n))
    names = draw(st.sampled_from(["letters", "integers"]))
    return cols, kind, labels, names


@pytest.mark.filterwarnings("ignore:.*will not write the byte order mark:UnicodeWarning")
@settings(max_examples=100, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(frame=frames(), sep=st.sampled_from(SEPS), header=st.booleans(), index=st.booleans(),
       encoding=st.sampled_from(ENCODINGS), compression=st.sampled_from(COMPRESSIONS),
       by_name=st.booleans())
def test_property_written_frames_read_back(tmp_path, frame, sep, header, index, encoding,
                                           compression, by_name):
    cols, kind, labels, names = frame
    d, n = len(cols), len(labels)
    df = pd.DataFrame({j: c for j, c in enumerate(cols)})
    df[d] = pd.Series(labels, dtype=object)
    if names == "letters":
        df.columns = [f"f{j}" for j in range(d)] + ["label"]
    ext = {None: "", "gzip": ".gz", "bz2": ".bz2", "xz": ".xz", "zip": ".zip"}[compression]
    p = tmp_path / f"frame.csv{ext}"
    df.to_csv(p, sep=sep, header=header, index=index, encoding=encoding,
              compression=compression)
    expected_X = np.array(cols, dtype=np.float64).T
    if index and not header:   # a headerless index is data as far as anyone can tell
        expected_X = np.c_[np.arange(n), expected_X]
    # where the first line cannot be told apart from data (documented), say which it is
    first = [str(v) for v in ([0] if index else []) + [c[0] for c in cols] + [labels[0]]]
    ambiguous = (
        (header and names == "integers" and not index and d + 1 < 3)
        or (not header and first == [str(i) for i in range(len(first))])
        or (not header and kind == "str" and labels[0] not in labels[1:]))
    label_column = ("label" if names == "letters" else str(d)) if header and by_name else -1
    t = read_table(p, label_column=label_column, header=header if ambiguous else None)
    assert t.X.dtype == np.float64
    np.testing.assert_array_equal(t.X, expected_X)
    want = [int(v) for v in labels] if kind != "str" else labels
    assert t.y.tolist() == want
    assert t.y.dtype == (np.int64 if kind != "str" else t.y.dtype) and t.y.dtype.kind in "iU"
    assert (t.feature_names is not None) == header
    if header and names == "letters":
        assert t.feature_names == [f"f{j}" for j in range(d)] and t.label_name == "label"
    assert (header and index) == any("dropped the first column" in s for s in t.notes)


GOOD = "a,b,label\n1,2,cat\n3,4.5,dog\n5,6,cat\n"
INSERTS = [",", ";", "\t", " ", '"', "\n", "\r", "x", "\x00", "é", "-", ".", "e", "1", "nan",
           "\ufeff"]


@settings(max_examples=100, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(edits=st.lists(st.tuples(st.sampled_from(["insert", "delete", "cut"]),
                                st.floats(0, 1), st.sampled_from(INSERTS)), max_size=4),
       suffix=st.sampled_from([".csv", ".tsv", ".txt", ".gz", ".parquet", ".npy", ".npz",
                               ".zip"]),
       noise=st.binary(max_size=40), use_noise=st.booleans(),
       codec=st.sampled_from(["utf-8", "latin-1", "utf-16"]),
       label_column=st.sampled_from([-1, 0, "label", "nope", "7"]))
def test_property_malformed_files_raise_value_error(tmp_path, edits, suffix, noise,
                                                    use_noise, codec, label_column):
    text = GOOD
    for op, where, piece in edits:
        k = int(where * len(text))
        text = {"insert": text[:k] + piece + text[k:], "delete": text[:k] + text[k + 1:],
                "cut": text[:k]}[op]
    data = noise if use_noise else text.encode(codec, errors="replace")
    if suffix == ".gz" and not use_noise:
        data = gzip.compress(data)[:len(data) if edits and edits[0][0] == "cut" else None]
    p = tmp_path / f"fuzz{suffix}"
    p.write_bytes(data)
    try:
        t = read_table(p, label_column=label_column)
    except ValueError as exc:   # TableError, or TypeError for a wrong argument type: never
        msg = str(exc)           # anything else
        assert msg and "\n" not in msg, msg
        return
    assert t.X.ndim == 2 and t.X.shape[0] >= 1 and t.X.shape[1] >= 1
    assert t.X.dtype == np.float64 and np.isfinite(t.X).all()
    assert t.y is not None and len(t.y) == len(t.X)
    try:
        encode_labels([t])
    except ValueError as exc:
        assert "\n" not in str(exc)


@pytest.mark.parametrize("name", ["_tables", "_labels"])
def test_docstring_examples_run(name):
    import doctest
    import importlib

    module = importlib.import_module(f"shiftlearn.io.{name}")
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.attempted > 0 and result.failed == 0


@pytest.mark.parametrize("name", ["Table", "TableError", "encode_labels", "read_table"])
def test_the_former_datasets_names_warn_and_are_the_io_objects(name):
    import shiftlearn.datasets
    import shiftlearn.io

    with pytest.warns(FutureWarning, match=rf"shiftlearn.datasets.{name} moved to "
                                           rf"shiftlearn.io.{name}"):
        old = getattr(shiftlearn.datasets, name)
    assert old is getattr(shiftlearn.io, name)
    assert name not in shiftlearn.datasets.__all__ and name in shiftlearn.io.__all__
    with pytest.raises(AttributeError, match="has no attribute 'read_tables'"):
        shiftlearn.datasets.read_tables  # noqa: B018
