"""Column names across files in ``shiftlearn adapt`` and ``shiftlearn shift``: the same columns
in another order are matched by name (one note), different columns are named (missing and
extra, not counts or whole lists), a target's label column is recognised rather than read as a
feature, and a mistyped ``--label-column`` is "no such column" in both commands."""

import json

import numpy as np
import pandas as pd
import pytest

from shiftlearn import cli

CULTIVARS = np.array(["barolo", "grignolino", "barbera"])


def _frames(n_features=4, seed=0):
    """A labeled source and a shifted target (text labels), as DataFrames."""
    rng = np.random.default_rng(seed)
    cols = [f"f{j}" for j in range(n_features)]
    ys, yt = rng.integers(0, 3, 45), rng.integers(0, 3, 30)
    centers = rng.normal(scale=3, size=(3, n_features))
    src = pd.DataFrame(centers[ys] + rng.normal(size=(45, n_features)), columns=cols)
    tgt = pd.DataFrame(centers[yt] + rng.normal(size=(30, n_features)) + 0.5, columns=cols)
    return src.assign(cultivar=CULTIVARS[ys]), tgt, CULTIVARS[yt]


def _adapt(tmp_path, src, tgt, *extra, name="tgt.csv"):
    src.to_csv(tmp_path / "src.csv", index=False)
    tgt.to_csv(tmp_path / name, index=False)
    return cli.main(["adapt", str(tmp_path / "src.csv"), "--target", str(tmp_path / name),
                     "--label-column", "cultivar", "--method", "raw", "--permutations", "0",
                     *extra])


def _error(capsys) -> str:
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 1 and ": error: " in lines[0], lines
    return lines[0]


def test_adapt_matches_reordered_columns_by_name(tmp_path, capsys):
    src, tgt, _ = _frames(n_features=128)
    assert _adapt(tmp_path, src, tgt, "--out", str(tmp_path / "in_order.csv")) == 0
    capsys.readouterr()
    shuffled = tgt[list(np.random.default_rng(1).permutation(tgt.columns))]
    assert _adapt(tmp_path, src, shuffled, "--out", str(tmp_path / "shuffled.csv"),
                  "--report", str(tmp_path / "r.json"), name="shuffled_tgt.csv") == 0
    # the same predictions as with the columns in order: matched by name, not position
    assert (tmp_path / "shuffled.csv").read_text() == (tmp_path / "in_order.csv").read_text()
    notes = [ln for ln in capsys.readouterr().err.splitlines() if "another order" in ln]
    assert notes == ["note: " + str(tmp_path / "shuffled_tgt.csv") + ": the same 128 feature "
                     "columns as " + str(tmp_path / "src.csv") + " in another order; matched "
                     "by name."]
    assert any("another order" in n for n in json.loads((tmp_path / "r.json").read_text())
               ["notes"])


def test_adapt_matches_a_second_source_by_name(tmp_path, capsys):
    src, tgt, _ = _frames()
    src.to_csv(tmp_path / "a.csv", index=False)
    src.iloc[:, ::-1].to_csv(tmp_path / "b.csv", index=False)     # label first, features reversed
    tgt.to_csv(tmp_path / "t.csv", index=False)
    assert cli.main(["adapt", str(tmp_path / "a.csv"), str(tmp_path / "b.csv"), "--target",
                     str(tmp_path / "t.csv"), "--label-column", "cultivar", "--method", "raw",
                     "--permutations", "0", "--report", str(tmp_path / "r.json")]) == 0
    assert "b.csv: the same 4 feature columns" in capsys.readouterr().err


def test_adapt_names_missing_and_extra_columns_not_the_lists(tmp_path, capsys):
    src, tgt, _ = _frames(n_features=128)
    other = tgt.rename(columns={"f3": "F3", "f100": "f_100"}).drop(columns=["f7"])
    assert _adapt(tmp_path, src, other) == 2
    line = _error(capsys)
    assert "missing 'f3', 'f7', 'f100'; extra 'F3', 'f_100'" in line
    short = line.replace(str(tmp_path), "")               # its length, whatever the folder's
    assert "f50" not in line and len(short) < 300         # not the 128 names of each file


def test_adapt_many_different_columns_are_cut_short(tmp_path, capsys):
    src, tgt, _ = _frames(n_features=40)
    assert _adapt(tmp_path, src, tgt.add_prefix("x")) == 2
    line = _error(capsys)
    assert "missing 'f0', 'f1'," in line and "and 32 more" in line
    assert len(line.replace(str(tmp_path), "")) < 400     # whatever the folder's length


def test_adapt_target_label_column_filled_names_the_flag(tmp_path, capsys):
    src, tgt, yt = _frames()
    assert _adapt(tmp_path, src, tgt.assign(cultivar=yt)) == 2
    line = _error(capsys)
    assert "label column 'cultivar', filled on every row; add --target-has-labels" in line
    assert "is not a number" not in line
    # with the flag the same file is read, and its labels give the accuracy
    assert _adapt(tmp_path, src, tgt.assign(cultivar=yt), "--target-has-labels",
                  "--report", str(tmp_path / "r.json")) == 0
    assert json.loads((tmp_path / "r.json").read_text())["target_accuracy"]["rows"] == 30


def test_adapt_target_label_column_in_the_middle_is_found_by_name(tmp_path, capsys):
    src, tgt, yt = _frames()
    tgt.insert(1, "cultivar", yt)
    assert _adapt(tmp_path, src, tgt) == 2
    assert "add --target-has-labels" in _error(capsys)


def test_adapt_target_label_column_filled_on_some_rows_is_explained(tmp_path, capsys):
    # a few target labels: the few-label run (tests/cli/test_cli_fewlabels.py), with a note
    src, tgt, yt = _frames()
    some = yt.astype(object)
    some[::3] = ""
    assert _adapt(tmp_path, src, tgt.assign(cultivar=some)) == 0
    err = capsys.readouterr().err
    assert "filled on 20 of 30 rows: those are labeled target rows" in err
    assert "--target-has-labels" in err
    assert "is not a number" not in err and "is empty" not in err


def test_adapt_target_label_column_left_empty_is_ignored(tmp_path, capsys):
    src, tgt, _ = _frames()
    assert _adapt(tmp_path, src, tgt, "--out", str(tmp_path / "a.csv")) == 0
    capsys.readouterr()
    assert _adapt(tmp_path, src, tgt.assign(cultivar=""), "--out", str(tmp_path / "b.csv"),
                  name="empty.csv") == 0
    assert (tmp_path / "a.csv").read_text() == (tmp_path / "b.csv").read_text()
    assert "label column 'cultivar' is empty on every row; ignored" in capsys.readouterr().err


def test_adapt_headerless_target_with_labels_names_the_flag(tmp_path, capsys):
    src, tgt, yt = _frames()
    src.to_csv(tmp_path / "src.csv", index=False, header=False)
    tgt.assign(cultivar=yt).to_csv(tmp_path / "tgt.csv", index=False, header=False)
    assert cli.main(["adapt", str(tmp_path / "src.csv"), "--target", str(tmp_path / "tgt.csv"),
                     "--method", "raw", "--permutations", "0"]) == 2
    assert "add --target-has-labels" in _error(capsys)


def test_adapt_target_with_a_bad_cell_still_names_the_cell(tmp_path, capsys):
    src, tgt, _ = _frames()
    tgt = tgt.astype(object)
    tgt.iat[4, 2] = "abc"
    assert _adapt(tmp_path, src, tgt) == 2
    assert "line 6, column 'f2': 'abc' is not a number" in _error(capsys)


# ------------------------------------------------------------------------------- shift ------
def _shift(tmp_path, frames, *extra):
    files = []
    for k, df in enumerate(frames):
        df.to_csv(tmp_path / f"d{k}.csv", index=False)
        files.append(str(tmp_path / f"d{k}.csv"))
    return cli.main(["shift", *files, "--permutations", "0", *extra])


def test_shift_mistyped_label_column_is_no_such_column(tmp_path, capsys):
    src, tgt, _ = _frames()
    assert _shift(tmp_path, [src, tgt], "--label-column", "cultivr") == 2
    line = _error(capsys)
    assert "no column named 'cultivr'" in line and "did you mean 'cultivar'?" in line


def test_shift_label_column_in_one_file_only_still_works(tmp_path, capsys):
    src, tgt, _ = _frames()
    assert _shift(tmp_path, [src, tgt], "--label-column", "cultivar") == 0
    assert "d1.csv: no column 'cultivar', so its rows are unlabeled" in capsys.readouterr().err


def test_shift_text_label_without_the_option_names_it(tmp_path, capsys):
    src, tgt, yt = _frames()
    assert _shift(tmp_path, [src, tgt.assign(cultivar=yt)]) == 2
    assert "is not a number" in (line := _error(capsys))
    assert "name it with --label-column" in line


def test_shift_matches_reordered_columns_by_name(tmp_path, capsys):
    src, tgt, _ = _frames()
    assert _shift(tmp_path, [src, tgt]) == 2            # the text labels are a column here
    capsys.readouterr()
    assert _shift(tmp_path, [src, tgt], "--label-column", "cultivar") == 0
    same = capsys.readouterr().out
    assert _shift(tmp_path, [src, tgt.iloc[:, ::-1]], "--label-column", "cultivar") == 0
    captured = capsys.readouterr()
    assert captured.out == same
    assert "the same 4 feature columns as" in captured.err


def test_shift_names_missing_and_extra_columns(tmp_path, capsys):
    src, tgt, _ = _frames()
    assert _shift(tmp_path, [src.drop(columns="cultivar"), tgt.rename(columns={"f1": "g1"})]) \
        == 2
    assert "missing 'f1'; extra 'g1'" in _error(capsys)


@pytest.mark.parametrize("names", [["a", "a", "b"], ["a", "b", "a"]])
def test_duplicated_names_in_another_order_are_refused(tmp_path, capsys, names):
    rng = np.random.default_rng(0)
    a = pd.DataFrame(rng.normal(size=(20, 3)), columns=["a", "b", "a"])
    b = pd.DataFrame(rng.normal(size=(20, 3)), columns=names)
    if names == ["a", "b", "a"]:
        assert _shift(tmp_path, [a, b]) == 0                # the same order: by position
    else:
        assert _shift(tmp_path, [a, b]) == 2
        assert "'a' appear(s) more than once" in _error(capsys)


def test_adapt_extra_id_column_is_named_without_the_label_hint(tmp_path, capsys):
    """With names the sources' label column is known, so an extra column is not hinted to be
    the labels."""
    src, tgt, _ = _frames()
    assert _adapt(tmp_path, src, tgt.assign(sample_id=np.arange(len(tgt)))) == 2
    line = _error(capsys)
    assert "extra 'sample_id'" in line and "--target-has-labels" not in line
