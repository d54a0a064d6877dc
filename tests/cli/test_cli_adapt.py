"""``shiftlearn adapt``: your own files in, predictions and a report out; outputs checked
before any work, labels compared as values."""

import csv
import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from shiftlearn import cli


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
    ("features", "src.csv's: missing 'x3'"),
    ("number", "line 3, column 'x1': 'abc' is not a number"),
    ("label", "no column named 'klass'"),
    ("one_class", "single class"),
    ("param", "has no parameter(s) ['gamma_x']"),
    ("missing_label", "label column 'label': 2 row(s) without a value (lines 3, 6)"),
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


# ------------------------------------------------------------------- labels as values ------
def test_labels_compared_as_values_across_files(tmp_path, capsys):
    """Source labels 1/2, a second source and the target with 1.0/2.0: two classes, and the
    reported accuracy is the one the predictions file gives when compared as values."""
    Xs, ys, Xt, yt = _shifted_blobs(seed=2, n=20)
    src = _write_csv(tmp_path / "src.csv", Xs, ys + 1)
    src2 = _write_csv(tmp_path / "src2.csv", Xs[::2], [f"{v}.0" for v in ys[::2] + 1])
    tgt = _write_csv(tmp_path / "tgt.csv", Xt, [f"{v}.0" for v in yt + 1])
    out, rep = tmp_path / "pred.csv", tmp_path / "r.json"
    assert cli.main(["adapt", str(src), str(src2), "--target", str(tgt), "--target-has-labels",
                     "--label-column", "label", "--method", "TCA", "--param",
                     "kernel=linear", "--permutations", "0", "--out", str(out),
                     "--report", str(rep)]) == 0
    data = json.loads(rep.read_text())
    assert [c for c, _, _ in data["class_mix"]] == ["1", "2", "3"]
    assert [d["classes"] for d in data["domains"][:2]] == [3, 3]
    with open(out) as f:
        pred = np.array([float(r["prediction"]) for r in csv.DictReader(f)])
    expected = float(np.mean(pred == yt + 1))
    assert data["target_accuracy"]["adapted"] == pytest.approx(expected)
    assert expected > 0.5  # the blobs are separable: a text comparison would give 0


# ----------------------------------------------------------- outputs checked up front ------
def _args(tmp_path, *extra, n=10):
    Xs, ys, Xt, _ = _shifted_blobs(n=n)
    src = _write_csv(tmp_path / "src.csv", Xs, ys)
    tgt = _write_csv(tmp_path / "tgt.csv", Xt)
    return ["adapt", str(src), "--target", str(tgt), "--label-column", "label",
            "--permutations", "0", *extra]


def _one_error_line(capsys) -> str:
    err = capsys.readouterr().err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("shiftlearn adapt: error: "), err
    return lines[0]


def test_out_into_a_missing_folder_is_refused_before_reading(tmp_path, capsys, monkeypatch):
    from shiftlearn.cli import adapt

    monkeypatch.setattr(adapt, "_load", lambda args: pytest.fail("read before checking"))
    assert cli.main(_args(tmp_path, "--out", str(tmp_path / "no" / "pred.csv"))) == 2
    line = _one_error_line(capsys)
    assert "--out" in line and f"the folder {tmp_path / 'no'} does not exist" in line
    assert cli.main(_args(tmp_path, "--report", str(tmp_path / "no" / "r.md"))) == 2
    assert "--report" in _one_error_line(capsys)
    assert cli.main(_args(tmp_path, "--out", str(tmp_path))) == 2
    assert "that is a folder" in _one_error_line(capsys)
    assert cli.main(_args(tmp_path, "--out", str(tmp_path / "src.csv"))) == 2
    assert "is one of the input files" in _one_error_line(capsys)
    assert cli.main(_args(tmp_path, "--report", str(tmp_path / "r.txt"))) == 2
    assert "unknown extension '.txt'" in _one_error_line(capsys)
    assert cli.main(_args(tmp_path, "--out", str(tmp_path / "x.json"), "--report",
                          str(tmp_path / "x.json"))) == 2
    assert "are the same file" in _one_error_line(capsys)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["src.csv", "tgt.csv"]


@pytest.mark.skipif(not Path("/sys").is_dir(), reason="needs /sys (Linux), unwritable even "
                    "for root")
def test_out_unwritable_is_one_line(tmp_path, capsys):
    assert cli.main(_args(tmp_path, "--out", "/sys/shiftlearn_pred.csv")) == 2
    line = _one_error_line(capsys)
    assert "/sys/shiftlearn_pred.csv" in line and "cannot write there" in line


def test_report_json_writes_json_only_and_never_the_markdown(tmp_path, capsys):
    md = tmp_path / "r.md"
    md.write_text("mine\n")
    assert cli.main(_args(tmp_path, "--report", str(tmp_path / "r.json"))) == 0
    assert json.loads((tmp_path / "r.json").read_text())["method"].startswith("auto: ")
    assert md.read_text() == "mine\n"                        # untouched
    assert cli.main(_args(tmp_path, "--report", str(md))) == 0
    assert md.read_text().startswith("# shiftlearn adapt")
    assert json.loads((tmp_path / "r.json").read_text())["method"].startswith("auto: ")


def test_report_md_does_not_overwrite_a_named_file(tmp_path, capsys):
    out = tmp_path / "r.json"                               # predictions named r.json
    assert cli.main(_args(tmp_path, "--out", str(out), "--report", str(tmp_path / "r.md"))) == 0
    assert out.read_text().startswith("row,prediction")     # still the predictions
    assert (tmp_path / "r.md").read_text().startswith("# shiftlearn adapt")
    assert "JSON report was not written" in capsys.readouterr().err


@pytest.mark.parametrize("rows", [0, 1])
def test_tiny_target_fails_before_predictions_are_written(tmp_path, capsys, rows):
    args = _args(tmp_path, "--out", str(tmp_path / "pred.csv"))
    tgt = Path(args[3])
    tgt.write_text("\n".join(tgt.read_text().splitlines()[:1 + rows]) + "\n")
    assert cli.main(args) == 2
    line = _one_error_line(capsys)
    assert "tgt.csv" in line
    assert not (tmp_path / "pred.csv").exists()


def test_one_row_target_with_raw_and_no_tests_is_predicted(tmp_path, capsys):
    args = _args(tmp_path, "--out", str(tmp_path / "pred.csv"), "--method", "raw")
    tgt = Path(args[3])
    tgt.write_text("\n".join(tgt.read_text().splitlines()[:2]) + "\n")
    assert cli.main(args) == 0
    assert len((tmp_path / "pred.csv").read_text().splitlines()) == 2


def test_target_with_labels_but_no_flag_names_the_flag(tmp_path, capsys):
    Xs, ys, Xt, yt = _shifted_blobs(n=10)
    src = _write_csv(tmp_path / "src.csv", Xs, ys)
    tgt = _write_csv(tmp_path / "tgt.csv", Xt, yt)
    assert cli.main(["adapt", str(src), "--target", str(tgt), "--permutations", "0"]) == 2
    assert "--target-has-labels" in _one_error_line(capsys)


def test_quiet_prints_no_notes(tmp_path, capsys):
    assert cli.main(_args(tmp_path, "-q", "--report", str(tmp_path / "r.md"))) == 0
    captured = capsys.readouterr()
    assert captured.err == "" and captured.out == ""
    assert cli.main(_args(tmp_path, "--report", str(tmp_path / "r.md"))) == 0
    assert "wrote" in capsys.readouterr().err


def test_seed_reaches_random_feature_adapters(tmp_path, capsys):
    for seed in ("0", "1"):
        assert cli.main(_args(tmp_path, "--method", "RF-TCA", "--seed", seed, "--report",
                              str(tmp_path / f"r{seed}.json"))) == 0
    params = [json.loads((tmp_path / f"r{s}.json").read_text())["params"] for s in "01"]
    assert [p["random_state"] for p in params] == [0, 1]


# ----------------------------------------------------------------------- end to end ------
def test_installed_entry_point_adapts_tiny_csvs(tmp_path):
    exe = shutil.which("shiftlearn", path=str(Path(sys.executable).parent))
    if exe is None:
        pytest.skip("the shiftlearn entry point is not installed beside this Python")
    args = _args(tmp_path, "--method", "TCA", "--out", "pred.csv", "--report", "r.md")[1:]
    run = subprocess.run([exe, "adapt", *args], cwd=tmp_path, capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    assert (tmp_path / "pred.csv").read_text().count("\n") == 31
    assert json.loads((tmp_path / "r.json").read_text())["command"].startswith(
        "shiftlearn adapt ")
    bad = subprocess.run([exe, "adapt", *args[:-2], "--report", "no/r.md"], cwd=tmp_path,
                         capture_output=True, text=True)
    assert bad.returncode == 2 and "Traceback" not in bad.stderr
    assert bad.stderr.strip().splitlines() == [
        "shiftlearn adapt: error: --report no/r.md: the folder no does not exist; create it "
        "first (mkdir -p no) or choose another path."]


# ------------------------------------------------------------- files as people have them ------
def test_pandas_exports_parquet_and_gzip(tmp_path, capsys):
    """A pandas to_csv() export (index column), a gzipped source and a Parquet target."""
    import pandas as pd

    Xs, ys, Xt, yt = _shifted_blobs(seed=3, n=15)
    src = pd.DataFrame(Xs, columns=[f"f{i}" for i in range(4)]).assign(label=ys)
    src.to_csv(tmp_path / "src.csv")                          # with the index column
    src.iloc[::2].to_csv(tmp_path / "src2.csv.gz", index=False)
    pd.DataFrame(Xt, columns=[f"f{i}" for i in range(4)]).assign(label=yt.astype(float)) \
        .to_parquet(tmp_path / "tgt.parquet")
    assert cli.main(["adapt", str(tmp_path / "src.csv"), str(tmp_path / "src2.csv.gz"),
                     "--target", str(tmp_path / "tgt.parquet"), "--target-has-labels",
                     "--label-column", "label", "--method", "TCA", "--permutations", "0",
                     "--report", str(tmp_path / "r.json")]) == 0
    err = capsys.readouterr().err
    assert "note: " in err and "dropped the first column" in err
    data = json.loads((tmp_path / "r.json").read_text())
    assert [d["rows"] for d in data["domains"]] == [45, 23, 45]
    assert [c for c, _, _ in data["class_mix"]] == ["0", "1", "2"]
    assert any("dropped the first column" in n for n in data["notes"])
    assert data["target_accuracy"]["rows"] == 45 and data["target_accuracy"]["adapted"] > 0.5


def test_partly_labeled_target_accuracy_counts_given_labels(tmp_path, capsys):
    Xs, ys, Xt, yt = _shifted_blobs(seed=4, n=10)
    src = _write_csv(tmp_path / "src.csv", Xs, ys)
    lab = yt.astype(str).astype(object)
    lab[::3] = ""                                            # a third of the labels unknown
    tgt = _write_csv(tmp_path / "tgt.csv", Xt, lab)
    out = tmp_path / "p.csv"
    assert cli.main(["adapt", str(src), "--target", str(tgt), "--target-has-labels",
                     "--method", "raw", "--permutations", "0", "--out", str(out), "--report",
                     str(tmp_path / "r.json")]) == 0
    acc = json.loads((tmp_path / "r.json").read_text())["target_accuracy"]
    with open(out) as f:
        pred = np.array([int(r["prediction"]) for r in csv.DictReader(f)])
    known = np.ones(len(yt), bool)
    known[::3] = False
    assert acc["rows"] == known.sum() == 20
    assert acc["raw"] == pytest.approx(np.mean(pred[known] == yt[known]))


@pytest.mark.parametrize("case, message", [
    ("mixed", "hold numeric labels but"),
    ("regression", "shiftlearn adapt is classification"),
])
def test_labels_that_cannot_be_classes_are_one_line(tmp_path, capsys, case, message):
    rng = np.random.default_rng(0)
    Xs, ys, Xt, _ = _shifted_blobs(n=30)
    if case == "mixed":
        src = _write_csv(tmp_path / "a.csv", Xs, ys)
        src2 = _write_csv(tmp_path / "b.csv", Xs, np.array(["cat", "dog", "owl"])[ys])
        files = [str(src), str(src2)]
    else:
        files = [str(_write_csv(tmp_path / "a.csv", Xs, rng.normal(size=len(Xs)).round(3)))]
    tgt = _write_csv(tmp_path / "t.csv", Xt)
    # numbers with fractions are a regression target unless --task says classes
    task = ["--task", "classification"] if case == "regression" else []
    assert cli.main(["adapt", *files, "--target", str(tgt), "--permutations", "0",
                     *task]) == 2
    line = _one_error_line(capsys)
    assert message in line or case == "regression" and "regression" in line


def test_header_option(tmp_path, capsys):
    Xs, ys, Xt, _ = _shifted_blobs(n=10)
    src = _write_csv(tmp_path / "s.csv", Xs, ys, header=False)
    tgt = _write_csv(tmp_path / "t.csv", Xt, header=False)
    base = ["adapt", str(src), "--target", str(tgt), "--permutations", "0", "--method", "raw",
            "--report", str(tmp_path / "r.json")]
    assert cli.main([*base, "--header", "no"]) == 0
    assert json.loads((tmp_path / "r.json").read_text())["domains"][0]["rows"] == 30
    capsys.readouterr()
    # forced: each file's first data line becomes its column names, which then differ
    assert cli.main([*base, "--header", "yes"]) == 2
    assert "feature columns differ from" in _one_error_line(capsys)


@pytest.mark.parametrize("spec,words", [(None, "label column 'y' (the last column)."),
                                        ("y", "label column 'y'.")])
def test_report_names_the_label_column_not_the_label_value_minus_one(tmp_path, capsys, spec,
                                                                     words):
    # labels -1/+1 and the default --label-column -1 (the last column): the report must not
    # read "label column '-1'", which looks like the label value -1
    Xs, ys, Xt, _ = _shifted_blobs(n=15)
    ys = np.where(ys == 0, -1, 1)
    src = _write_csv(tmp_path / "src.csv", Xs, ys, names=("y",))
    tgt = _write_csv(tmp_path / "tgt.csv", Xt)
    rep = tmp_path / "r.md"
    args = ["adapt", str(src), "--target", str(tgt), "--method", "raw", "--permutations", "20",
            "--out", str(tmp_path / "p.csv"), "--report", str(rep)]
    if spec is not None:
        args += ["--label-column", spec]
    assert cli.main(args) == 0
    assert words in rep.read_text() and "label column '-1'" not in rep.read_text()
    data = json.loads(rep.with_suffix(".json").read_text())
    assert data["label_column"] == (spec or "-1") and data["label_name"] == "y"


@pytest.mark.parametrize("estimator, select, confidence", [("hgb", "mmd", True),
                                                            ("svm", "circular", False)])
def test_estimator_end_to_end(tmp_path, capsys, estimator, select, confidence):
    """``--estimator hgb`` / ``svm`` with ``--method auto``: the default criterion follows the
    rule for estimators outside the selection study (graded probabilities: mmd; none:
    circular), the predictions are of the chosen pipeline, a confidence column only with
    graded probabilities."""
    from sklearn.base import clone

    from shiftlearn.cli.adapt import default_select, make_estimator

    Xs, ys, Xt, yt = _shifted_blobs(n=30)
    src = _write_csv(tmp_path / "src.csv", Xs, ys)
    tgt = _write_csv(tmp_path / "tgt.csv", Xt, yt)
    out, rep = tmp_path / "p.csv", tmp_path / "r.json"
    assert cli.main(["adapt", str(src), "--target", str(tgt), "--target-has-labels",
                     "--label-column", "label", "--estimator", estimator, "--candidates",
                     "TCA,CORAL", "--permutations", "0", "--out", str(out),
                     "--report", str(rep)]) == 0
    data = json.loads(rep.read_text())
    assert data["classifier"] == estimator
    assert data["selection"]["criterion"] == select == default_select(
        estimator, make_estimator(estimator))
    lines = out.read_text().splitlines()
    assert lines[0] == "row,prediction" + (",confidence" if confidence else "")
    assert len(lines) == 1 + len(Xt)
    # well-separated blobs: the adapted model and the same estimator on the raw source rows
    # both label most of the target correctly
    acc = data["target_accuracy"]
    assert acc["adapted"] > 0.8 and acc["raw"] > 0.5
    # --classifier stays an alias of --estimator
    assert cli.main(["adapt", str(src), "--target", str(tgt), "--target-has-labels",
                     "--label-column", "label", "--classifier", estimator, "--method", "raw",
                     "--permutations", "0", "--report", str(rep)]) == 0
    assert json.loads(rep.read_text())["classifier"] == estimator
    assert type(clone(make_estimator(estimator, seed=3))) is type(make_estimator(estimator))


def test_unknown_estimator_lists_the_known_ones(tmp_path, capsys):
    Xs, ys, Xt, _ = _shifted_blobs(n=10)
    src = _write_csv(tmp_path / "src.csv", Xs, ys)
    tgt = _write_csv(tmp_path / "tgt.csv", Xt)
    assert cli.main(["adapt", str(src), "--target", str(tgt), "--label-column", "label",
                     "--estimator", "xgboost"]) == 2
    line = _one_error_line(capsys)
    assert "unknown estimator" in line and "1nn, logreg, svm, hgb, rf, ridge" in line


def test_estimator_from_a_skops_file(tmp_path, capsys):
    """A saved unfitted classifier is used; a saved regressor is refused with the reason."""
    sio = pytest.importorskip("skops.io")
    from sklearn.linear_model import Ridge
    from sklearn.neighbors import KNeighborsClassifier

    Xs, ys, Xt, yt = _shifted_blobs(n=15)
    src = _write_csv(tmp_path / "src.csv", Xs, ys)
    tgt = _write_csv(tmp_path / "tgt.csv", Xt, yt)
    sio.dump(KNeighborsClassifier(n_neighbors=3), tmp_path / "knn3.skops")
    sio.dump(Ridge(), tmp_path / "ridge.skops")
    rep = tmp_path / "r.json"
    base = ["adapt", str(src), "--target", str(tgt), "--target-has-labels", "--label-column",
            "label", "--method", "CORAL", "--permutations", "0", "--report", str(rep)]
    assert cli.main([*base, "--estimator", str(tmp_path / "knn3.skops")]) == 0
    assert json.loads(rep.read_text())["classifier"].startswith("KNeighborsClassifier (")
    capsys.readouterr()
    assert cli.main([*base, "--estimator", str(tmp_path / "ridge.skops")]) == 2
    assert "Ridge, which is not a classifier" in _one_error_line(capsys)
