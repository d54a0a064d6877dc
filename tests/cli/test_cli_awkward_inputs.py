"""Files as new users have them, through ``shiftlearn adapt`` and ``shiftlearn shift``: Windows
encodings, semicolons with decimal commas, column names with spaces and non-ASCII characters,
constant and duplicated columns. Each is read right (the same answer as a plain CSV) or refused
in one line; no traceback and no warning on stderr."""

import json

import numpy as np
import pandas as pd
import pytest
from sklearn.datasets import load_wine

from shiftlearn import cli

CULTIVARS = np.array(["barolò", "grignolino", "barbera"])


@pytest.fixture(scope="module")
def wine():
    w = load_wine(as_frame=True)
    df = w.frame.drop(columns="target").assign(cultivar=CULTIVARS[w.target])
    return df[df.alcohol < 13.0], df[df.alcohol >= 13.0].drop(columns="cultivar")


def _adapt(folder, src, tgt, *extra, write=None):
    """Write the two frames (``write(df, path)``, default plain CSV) and run adapt --method raw;
    returns the exit code, the predictions file's text and stderr's lines."""
    write = write or (lambda df, p: df.to_csv(p, index=False))
    write(src, folder / "s.csv")
    write(tgt, folder / "t.csv")
    out = folder / "p.csv"
    out.unlink(missing_ok=True)
    code = cli.main(["adapt", str(folder / "s.csv"), "--target", str(folder / "t.csv"),
                     "--label-column", "cultivar", "--method", "raw", "--permutations", "20",
                     "--out", str(out), "--report", str(folder / "r.json"), *extra])
    return code, out.read_text(encoding="utf-8") if out.exists() else None


def _stderr_ok(capsys, most=5) -> list[str]:
    err = capsys.readouterr().err
    lines = err.splitlines()
    assert len(lines) <= most, lines
    assert "Traceback" not in err and "Warning" not in err, err
    return lines


@pytest.fixture
def plain(tmp_path, wine, capsys):
    code, pred = _adapt(tmp_path, *wine)
    assert code == 0 and "barolò" in pred
    capsys.readouterr()
    return pred


def test_latin1_file_with_accents_reads_as_the_utf8_one(tmp_path, wine, plain, capsys):
    src, tgt = (df.rename(columns={"alcohol": "degré"}) for df in wine)
    code, pred = _adapt(tmp_path, src, tgt,
                        write=lambda df, p: df.to_csv(p, index=False, encoding="latin-1"))
    assert code == 0 and pred == plain                   # 'barolò' written back in UTF-8
    lines = _stderr_ok(capsys)
    assert sum("not valid UTF-8" in ln and "decoded as cp1252" in ln for ln in lines) == 2


def test_semicolons_with_decimal_commas(tmp_path, wine, plain, capsys):
    code, pred = _adapt(tmp_path, *wine, write=lambda df, p: df.to_csv(
        p, index=False, sep=";", decimal=","))
    assert code == 0 and pred == plain
    assert sum("decimal commas" in ln for ln in _stderr_ok(capsys)) == 2


def test_names_with_spaces_and_unicode_in_another_order(tmp_path, wine, plain, capsys):
    src, tgt = wine
    names = {c: f" {c.replace('_', ' ')} (µg/ℓ) " for c in tgt.columns}
    src, tgt = src.rename(columns=names), tgt.rename(columns=names)
    code, pred = _adapt(tmp_path, src, tgt[list(tgt.columns[::-1])])
    assert code == 0 and pred == plain
    assert any("in another order; matched by name" in ln for ln in _stderr_ok(capsys))


def test_constant_column_is_kept(tmp_path, wine, plain, capsys):
    src, tgt = wine
    code, pred = _adapt(tmp_path, src.assign(batch=7.0), tgt.assign(batch=7.0))
    assert code == 0 and pred == plain                    # a constant adds 0 to every distance
    _stderr_ok(capsys)
    assert json.loads((tmp_path / "r.json").read_text())["n_features"] == 14


def test_every_feature_constant_is_refused(tmp_path, wine, capsys):
    src, tgt = wine
    flat = {c: 0.5 for c in tgt.columns}
    code, _ = _adapt(tmp_path, src.assign(**flat), tgt.assign(**flat))
    assert code == 2
    line = _stderr_ok(capsys, most=1)[0]
    assert "every feature column is constant over the 86 source rows" in line


def test_every_feature_constant_shift_keeps_warnings_in_the_report(tmp_path, wine, capsys):
    src, tgt = wine
    flat = {c: 0.5 for c in tgt.columns}
    src.drop(columns="cultivar").assign(**flat).to_csv(tmp_path / "a.csv", index=False)
    tgt.assign(**flat).to_csv(tmp_path / "b.csv", index=False)
    assert cli.main(["shift", str(tmp_path / "a.csv"), str(tmp_path / "b.csv"),
                     "--permutations", "20", "--report", str(tmp_path / "s.html")]) == 0
    _stderr_ok(capsys, most=2)
    rep = json.loads((tmp_path / "s.json").read_text())
    assert any(w.startswith("RuntimeWarning") for w in rep["warnings"])


def test_duplicated_names_are_noted(tmp_path, wine, plain, capsys):
    def write(df, p):
        text = df.to_csv(index=False).split("\n", 1)
        p.write_text(text[0].replace("malic_acid", "alcohol") + "\n" + text[1])
    code, pred = _adapt(tmp_path, *wine, write=write)
    assert code == 0 and pred == plain                    # by position, as written
    lines = _stderr_ok(capsys)
    assert sum("column name(s) used more than once ('alcohol')" in ln for ln in lines) == 2


def test_label_column_given_by_a_name_used_twice_is_refused(tmp_path, wine, capsys):
    src, tgt = wine
    src = pd.concat([src, src[["cultivar"]]], axis=1)
    code, _ = _adapt(tmp_path, src, tgt)
    assert code == 2
    assert "2 columns are named 'cultivar'" in _stderr_ok(capsys, most=1)[0]
