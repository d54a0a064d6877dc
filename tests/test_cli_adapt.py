"""``shiftlearn adapt``: your own files in, predictions and a report out."""

import json

import numpy as np
import pytest

from shiftlearn import cli
from shiftlearn.adaptation._table import read_table


def _shifted_blobs(seed=0, n=60, shift=(2.0, -1.0)):
    """Three classes in 4-D; the target is the source moved by ``shift`` in two features."""
    rng = np.random.default_rng(seed)
    centers = np.array([[0, 0, 0, 0], [4, 0, 0, 0], [0, 4, 0, 0]], dtype=float)
    y = np.repeat([0, 1, 2], n)
    Xs = centers[y] + rng.normal(scale=0.7, size=(3 * n, 4))
    Xt = centers[y] + rng.normal(scale=0.7, size=(3 * n, 4))
    Xt[:, 2:] += shift
    return Xs, y, Xt, y.copy()


def _write_csv(path, X, y=None, names=("label",), header=True):
    cols = [f"x{i}" for i in range(X.shape[1])] + (list(names) if y is not None else [])
    rows = [",".join(cols)] if header else []
    for i in range(len(X)):
        cells = [f"{v:.6g}" for v in X[i]] + ([str(y[i])] if y is not None else [])
        rows.append(",".join(cells))
    path.write_text("\n".join(rows) + "\n")
    return path


def test_adapt_writes_predictions_and_report(tmp_path, capsys):
    Xs, ys, Xt, yt = _shifted_blobs()
    labels = np.array(["cat", "dog", "owl"])
    src = _write_csv(tmp_path / "src.csv", Xs, labels[ys])
    tgt = _write_csv(tmp_path / "tgt.csv", Xt, labels[yt])
    out, rep = tmp_path / "pred.csv", tmp_path / "report.md"
    code = cli.main(["adapt", str(src), "--target", str(tgt), "--target-has-labels",
                     "--label-column", "label", "--method", "TCA", "--param", "n_components=2",
                     "--param", "kernel=linear", "--permutations", "50", "--out", str(out),
                     "--report", str(rep)])
    assert code == 0
    lines = out.read_text().splitlines()
    assert lines[0] == "row,prediction" and len(lines) == 1 + len(Xt)
    assert {ln.split(",")[1] for ln in lines[1:]} <= set(labels)
    data = json.loads(rep.with_suffix(".json").read_text())
    assert data["params"]["n_components"] == 2 and data["params"]["kernel"] == "linear"
    assert data["params_from"].startswith("library defaults")
    assert [d["rows"] for d in data["domains"]] == [len(Xs), len(Xt)]
    assert len(data["shift_raw"]) == 1 and 0 < data["shift_raw"][0]["p_value"] <= 1
    # the raw source/target shift is large and detected
    assert data["shift_raw"][0]["p_value"] < 0.05
    acc = data["target_accuracy"]
    assert 0 <= acc["raw"] <= 1 and 0 <= acc["adapted"] <= 1
    assert abs(sum(s for _, s, _ in data["class_mix"]) - 1) < 1e-9
    md = rep.read_text()
    assert "| source 1 |" in md and "Hyper-parameters" in md and "TCA" in md


def test_adapt_tune_multi_source_npz(tmp_path, capsys):
    Xs, ys, Xt, _ = _shifted_blobs(seed=1)
    np.savez(tmp_path / "a.npz", X=Xs[::2], y=ys[::2])
    np.savez(tmp_path / "b.npz", X=Xs[1::2], y=ys[1::2])
    np.save(tmp_path / "t.npy", Xt)
    code = cli.main(["adapt", str(tmp_path / "a.npz"), str(tmp_path / "b.npz"), "--target",
                     str(tmp_path / "t.npy"), "--method", "SCA", "--tune", "--permutations",
                     "0", "--param", "kernel=linear", "--report", str(tmp_path / "r.md")])
    assert code == 0
    data = json.loads((tmp_path / "r.json").read_text())
    assert [d["role"] for d in data["domains"]] == ["source", "source", "target"]
    assert data["params_from"] == "5-fold CV on the source labels"
    assert data["params"]["kernel"] == "linear"          # --param is kept out of the grid
    assert data["source_cv"]["n_settings"] > 1 and data["source_cv"]["mean"] > 0.5
    assert data["shift_raw"] == []


@pytest.mark.parametrize("case, message", [
    ("features", "has 3 feature columns"),
    ("number", "line 3, column 'x1': 'abc' is not a number"),
    ("label", "no column named 'klass'"),
    ("one_class", "single class"),
    ("param", "has no parameter(s) ['gamma_x']"),
    ("missing_label", "2 row(s) without a label (data rows 2, 5)"),
])
def test_adapt_bad_input_names_the_problem(tmp_path, capsys, case, message):
    Xs, ys, Xt, _ = _shifted_blobs(n=10)
    src = _write_csv(tmp_path / "src.csv", Xs, ys)
    tgt = _write_csv(tmp_path / "tgt.csv", Xt)
    args = ["adapt", str(src), "--target", str(tgt), "--label-column", "label",
            "--permutations", "0"]
    if case == "features":
        tgt = _write_csv(tmp_path / "tgt.csv", Xt[:, :3])
        args[3] = str(tgt)
    elif case == "number":
        text = src.read_text().splitlines()
        cells = text[2].split(",")
        cells[1] = "abc"
        text[2] = ",".join(cells)
        src.write_text("\n".join(text) + "\n")
    elif case == "label":
        args[5] = "klass"
    elif case == "one_class":
        _write_csv(src, Xs, np.zeros(len(Xs), int))
    elif case == "param":
        args += ["--method", "TCA", "--param", "gamma_x=1"]
    elif case == "missing_label":
        lab = ys.astype(str).astype(object)
        lab[[1, 4]] = ""
        _write_csv(src, Xs, lab)
    assert cli.main(args) == 2
    assert message in capsys.readouterr().err


def test_read_table_headerless_whitespace_and_index(tmp_path):
    p = tmp_path / "s.txt"
    p.write_text("1 2 0\n3 4 1\n5 6 1\n")
    t = read_table(p, label_column=-1)
    assert t.X.shape == (3, 2) and t.y.tolist() == [0, 1, 1] and t.feature_names is None
    t0 = read_table(p, label_column="0")
    assert t0.y.tolist() == [1, 3, 5] and t0.X[:, 0].tolist() == [2, 4, 6]
    (tmp_path / "bad.csv").write_text("a,b\n1,nan\n")
    with pytest.raises(ValueError, match="row 1, feature 1: nan is not finite"):
        read_table(tmp_path / "bad.csv", with_labels=False)
    with pytest.raises(ValueError, match="no such file"):
        read_table(tmp_path / "missing.csv")
