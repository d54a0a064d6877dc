"""``shiftlearn adapt --save`` then ``shiftlearn predict``: the saved model predicts what the
command predicted; damaged files, other versions, other columns and untrusted types are refused
with one line and exit status 2; rows from another domain are said to differ."""

import json

import numpy as np
import pytest

from shiftlearn import cli

pytest.importorskip("skops")

LABELS = np.array(["cat", "dog", "owl"])


def _blobs(seed=0, n=40):
    """Three classes in 4-D; the target is the source moved in two features."""
    rng = np.random.default_rng(seed)
    centers = np.array([[0, 0, 0, 0], [4, 0, 0, 0], [0, 4, 0, 0]], dtype=float)
    y = np.repeat([0, 1, 2], n)
    Xs = centers[y] + rng.normal(scale=0.7, size=(3 * n, 4))
    Xt = centers[y] + rng.normal(scale=0.7, size=(3 * n, 4))
    Xt[:, 2:] += (2.0, -1.0)
    return Xs, y, Xt


def _write_csv(path, X, y=None, names=None):
    cols = list(names or [f"x{i}" for i in range(X.shape[1])]) + (["label"] if y is not None
                                                                 else [])
    rows = [",".join(cols)]
    for i in range(len(X)):
        rows.append(",".join([f"{v:.6g}" for v in X[i]] + ([str(y[i])] if y is not None
                                                           else [])))
    path.write_text("\n".join(rows) + "\n")
    return str(path)


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    """A model saved by ``adapt --save`` with the predictions ``adapt --out`` wrote."""
    tmp = tmp_path_factory.mktemp("saved")
    Xs, ys, Xt = _blobs()
    src = _write_csv(tmp / "src.csv", Xs, LABELS[ys])
    tgt = _write_csv(tmp / "tgt.csv", Xt)
    code = cli.main(["adapt", src, "--target", tgt, "--label-column", "label", "--method",
                     "TCA", "--param", "kernel=linear", "--param", "n_components=3",
                     "--estimator", "logreg", "--permutations", "0", "--quiet",
                     "--out", str(tmp / "adapt.csv"), "--save", str(tmp / "model.skops"),
                     "--report", str(tmp / "r.json")])
    assert code == 0
    return tmp, Xt


def _error_line(capsys) -> str:
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    assert err[0].startswith("shiftlearn predict: error: ")
    return err[0]


def test_predict_gives_the_predictions_of_adapt(saved, capsys):
    tmp, _ = saved
    out = tmp / "predict.csv"
    assert cli.main(["predict", str(tmp / "model.skops"), str(tmp / "tgt.csv"), "--out",
                     str(out)]) == 0
    adapt_lines = (tmp / "adapt.csv").read_text().splitlines()
    assert adapt_lines[0] == "row,prediction,confidence"      # logreg: graded probabilities
    assert out.read_text().splitlines() == adapt_lines
    # the training target is the domain the model was adapted to: no shift line
    assert "differs from the domain" not in capsys.readouterr().err


def test_predict_json_and_columns_matched_by_name(saved, capsys):
    tmp, Xt = saved
    # the same columns in another order, and the training label column: matched and ignored
    order = [3, 1, 0, 2]
    path = _write_csv(tmp / "reordered.csv", Xt[:, order], LABELS[np.zeros(len(Xt), int)],
                      names=[f"x{i}" for i in order])
    assert cli.main(["predict", str(tmp / "model.skops"), path, "--json"]) == 0
    res = json.loads(capsys.readouterr().out)
    expected = [ln.split(",")[1] for ln in (tmp / "adapt.csv").read_text().splitlines()[1:]]
    assert res["predictions"] == expected
    assert res["model_header"]["feature_names"] == ["x0", "x1", "x2", "x3"]
    assert res["model_header"]["classes"] == ["cat", "dog", "owl"]
    assert res["model_header"]["command"].startswith("shiftlearn adapt ")
    assert res["shift"]["differs"] is False and any("ignored" in n for n in res["notes"])


def test_a_changed_byte_is_refused(saved, capsys, tmp_path):
    tmp, _ = saved
    data = bytearray((tmp / "model.skops").read_bytes())
    for i in (10, len(data) // 2, len(data) - 1):        # the start, the middle, the digest
        bad = bytearray(data)
        bad[i] ^= 0x04
        path = tmp_path / f"bad{i}.skops"
        path.write_bytes(bytes(bad))
        assert cli.main(["predict", str(path), str(tmp / "tgt.csv")]) == 2
        line = _error_line(capsys)
        assert "damaged" in line, line
    # a truncated file too
    path = tmp_path / "short.skops"
    path.write_bytes(bytes(data[:-100]))
    assert cli.main(["predict", str(path), str(tmp / "tgt.csv")]) == 2
    assert "damaged" in _error_line(capsys)


def test_another_library_version_is_refused(saved, capsys, monkeypatch):
    import shiftlearn

    tmp, _ = saved
    saved_by = shiftlearn.__version__
    monkeypatch.setattr(shiftlearn, "__version__", "99.0.0")
    assert cli.main(["predict", str(tmp / "model.skops"), str(tmp / "tgt.csv")]) == 2
    line = _error_line(capsys)
    assert f"saved by shiftlearn {saved_by}, this is 99.0.0" in line


def test_other_columns_are_refused(saved, capsys):
    tmp, Xt = saved
    path = _write_csv(tmp / "other.csv", Xt, names=["x0", "x1", "x2", "z"])
    assert cli.main(["predict", str(tmp / "model.skops"), path]) == 2
    line = _error_line(capsys)
    assert "missing 'x3'" in line and "extra 'z'" in line
    path = _write_csv(tmp / "fewer.csv", Xt[:, :3], names=["x0", "x1", "x2"])
    assert cli.main(["predict", str(tmp / "model.skops"), path]) == 2
    assert "missing 'x3'" in _error_line(capsys)


def test_a_shifted_file_is_said_to_differ(saved, capsys):
    tmp, Xt = saved
    path = _write_csv(tmp / "moved.csv", Xt + np.array([3.0, 3.0, 0.0, 0.0]))
    assert cli.main(["predict", str(tmp / "model.skops"), path, "--quiet"]) == 0
    err = capsys.readouterr().err.strip().splitlines()
    # one line, even with --quiet (it is about the predictions, not progress)
    assert len(err) == 1 and "differs from the domain the model was adapted to" in err[0]
    assert cli.main(["predict", str(tmp / "model.skops"), path, "--permutations", "0"]) == 0
    assert "differs" not in capsys.readouterr().err


def test_not_a_model_file_and_untrusted_types_are_refused(saved, capsys, tmp_path):
    import skops.io as sio

    tmp, _ = saved
    path = tmp_path / "plain.csv"
    path.write_text("a,b\n1,2\n")
    assert cli.main(["predict", str(path), str(tmp / "tgt.csv")]) == 2
    assert "not a shiftlearn model file" in _error_line(capsys)
    # a valid model file whose payload holds a function: never loaded
    from sklearn.preprocessing import FunctionTransformer

    import shiftlearn
    from shiftlearn.workflow import save_model

    path = tmp_path / "func.skops"
    save_model(path, {"version": shiftlearn.__version__, "n_features": 4,
                      "classes": ["a", "b"]},
               {"model": FunctionTransformer(func=print), "reference": np.zeros(2)})
    assert "builtins.print" in sio.get_untrusted_types(file=path)
    assert cli.main(["predict", str(path), str(tmp / "tgt.csv")]) == 2
    line = _error_line(capsys)
    assert "refusing to load it" in line and "builtins.print" in line


def test_missing_skops_names_the_extra(tmp_path, capsys, monkeypatch):
    import sys

    Xs, ys, Xt = _blobs(n=10)
    src = _write_csv(tmp_path / "src.csv", Xs, LABELS[ys])
    tgt = _write_csv(tmp_path / "tgt.csv", Xt)
    monkeypatch.setitem(sys.modules, "skops.io", None)         # import skops.io fails
    assert cli.main(["adapt", src, "--target", tgt, "--label-column", "label", "--method",
                     "raw", "--save", str(tmp_path / "m.skops"), "--out",
                     str(tmp_path / "p.csv")]) == 2
    err = capsys.readouterr().err
    assert 'pip install "shiftlearn[persist]"' in err
    assert not (tmp_path / "p.csv").exists()                    # said before any work
