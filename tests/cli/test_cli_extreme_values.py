"""Feature values the kernels cannot square and multiply in float64 are refused when the file is
read, in one line that names the file, the column and the row (``shiftlearn adapt`` and
``shiftlearn shift``); values up to the limit run without NaN, overflow or warnings."""

import json

import numpy as np
import pandas as pd
import pytest

from shiftlearn import cli
from shiftlearn.io import TableError, read_table
from shiftlearn.io._tables import MAX_MAGNITUDE


def _domains(tmp_path, scale, column="dose (mg)"):
    """A labeled source and a shifted target; ``column`` is multiplied by ``scale``."""
    rng = np.random.default_rng(0)
    frames = []
    for shift, n in ((0.0, 60), (1.0, 45)):
        y = rng.integers(0, 2, n)
        X = np.c_[y * 3.0, rng.normal(size=n), rng.uniform(1, 2, n)] + rng.normal(size=(n, 3))
        df = pd.DataFrame(X + shift, columns=["a", "b", column])
        df[column] *= scale
        frames.append(df.assign(label=np.array(["low", "high"])[y]))
    frames[0].to_csv(tmp_path / "src.csv", index=False)
    frames[1].drop(columns="label").to_csv(tmp_path / "tgt.csv", index=False)
    return str(tmp_path / "src.csv"), str(tmp_path / "tgt.csv")


def _one_line(capsys) -> str:
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 1, lines
    return lines[0]


@pytest.mark.parametrize("scale", [1e300, 1e150, 1e60, -1e300])
@pytest.mark.parametrize("command", ["adapt", "shift"])
def test_huge_column_refused_in_one_line(tmp_path, capsys, scale, command):
    src, tgt = _domains(tmp_path, scale)
    args = (["adapt", src, "--target", tgt, "--label-column", "label"] if command == "adapt"
            else ["shift", src, tgt, "--label-column", "label"])
    assert cli.main(args) == 2
    line = _one_line(capsys)
    assert line.startswith(f"shiftlearn {command}: error: {src}: line ")
    assert "column 'dose (mg)'" in line and "beyond +-1e+50" in line
    assert "rescale that column" in line and "NaN" not in line and "JSON" not in line


@pytest.mark.parametrize("command", ["adapt", "shift"])
def test_vanishing_column_refused(tmp_path, capsys, command):
    src, tgt = _domains(tmp_path, 1e-300)
    args = (["adapt", src, "--target", tgt, "--label-column", "label"] if command == "adapt"
            else ["shift", src, tgt, "--label-column", "label"])
    assert cli.main(args) == 2
    line = _one_line(capsys)
    assert "column 'dose (mg)': every value is below 1e-50" in line


def test_large_but_safe_column_runs_clean(tmp_path, capsys):
    """Values up to the limit (here 2e49): every candidate validated, finite MMDs, and no
    overflow among the warnings kept in the report."""
    src, tgt = _domains(tmp_path, 1e49)
    assert cli.main(["adapt", src, "--target", tgt, "--label-column", "label",
                     "--candidates", "TCA,JDA,CORAL", "--permutations", "20",
                     "--report", str(tmp_path / "r.json")]) == 0
    rep = json.loads((tmp_path / "r.json").read_text())
    assert all(c["score"] is not None for c in rep["selection"]["candidates"])
    assert np.isfinite(rep["shift_raw"][0]["mmd2_unbiased"])
    assert not any("overflow" in w or "invalid value" in w for w in rep["warnings"])
    capsys.readouterr()
    assert cli.main(["shift", src, tgt, "--label-column", "label", "--permutations", "20"]) == 0


def test_the_limit_itself_is_accepted_and_one_step_beyond_is_not(tmp_path):
    at = np.nextafter(MAX_MAGNITUDE, 0.0)
    for value, ok in ((MAX_MAGNITUDE, True), (-MAX_MAGNITUDE, True),
                      (np.nextafter(MAX_MAGNITUDE, np.inf), False),
                      (1 / MAX_MAGNITUDE, True), (np.nextafter(1 / MAX_MAGNITUDE, 0.0), False),
                      (at, True)):
        np.save(tmp_path / "x.npy", np.array([[1.0, value, 0], [2.0, 0.0, 1]]))
        if ok:
            assert read_table(tmp_path / "x.npy").X[0, 1] == value
        else:
            with pytest.raises(TableError, match=r"x\.npy: .*column 2"):
                read_table(tmp_path / "x.npy")


def test_zero_and_constant_columns_are_not_tiny(tmp_path):
    """An all-zero column (and a constant one) is data, not a scale problem."""
    (tmp_path / "z.csv").write_text("a,b,c,y\n0,5,1,u\n0,5,2,v\n0,5,3,u\n")
    t = read_table(tmp_path / "z.csv")
    assert t.X[:, 0].tolist() == [0, 0, 0] and t.X[:, 1].tolist() == [5, 5, 5]
