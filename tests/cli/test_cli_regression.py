"""``shiftlearn adapt`` on a regression target: CSV files as a person writes them, the task
read from the label column (or ``--task``), errors in the label's units, awkward input
refused with the fix."""

import csv
import json

import numpy as np
import pytest
from sklearn.linear_model import Ridge
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from shiftlearn import DomainAdaptationRegressor, cli


def _f(X):
    return np.sin(X[:, 0]) + X[:, 1] ** 2 + 2.0


def _files(tmp_path, n=120, seed=0, target_values=False, whole=False):
    """A covariate shift written as a spreadsheet would export it: a header, two decimals."""
    rng = np.random.default_rng(seed)
    Xs, Xt = rng.normal(0, 1, (n, 2)), rng.normal(1, 1, (n, 2))
    ys = _f(Xs) + 0.1 * rng.normal(size=n)
    if whole:
        ys = np.round(10 * ys)
    src, tgt = tmp_path / "clinic_a.csv", tmp_path / "clinic_b.csv"
    with open(src, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["age", "dose", "score"])
        w.writerows([[f"{a:.2f}", f"{b:.2f}", f"{v:.2f}" if not whole else f"{v:.0f}"]
                     for (a, b), v in zip(Xs, ys, strict=True)])
    with open(tgt, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["age", "dose"] + (["score"] if target_values else []))
        w.writerows([[f"{a:.2f}", f"{b:.2f}"] + ([f"{v:.2f}"] if target_values else [])
                     for (a, b), v in zip(Xt, _f(Xt), strict=True)])
    return src, tgt


def test_numbers_with_fractions_are_a_regression_target(tmp_path, capsys):
    src, tgt = _files(tmp_path, target_values=True)
    out, rep = tmp_path / "pred.csv", tmp_path / "report.json"
    code = cli.main(["adapt", str(src), "--target", str(tgt), "--target-has-labels",
                     "--label-column", "score", "--method", "raw", "--out", str(out),
                     "--report", str(rep)])
    assert code == 0
    err = capsys.readouterr().err
    assert "regression target" in err
    lines = out.read_text().splitlines()
    assert lines[0] == "row,prediction" and len(lines) == 121
    r = json.loads(rep.read_text())
    assert r["task"] == "regression" and r["estimator"] == "ridge" and r["choice"] == "none"
    # the errors are in the label's units: RMSE of the written predictions against the truth
    pred = np.array([float(row.split(",")[1]) for row in lines[1:]])
    truth = np.loadtxt(tgt, delimiter=",", skiprows=1)[:, 2]
    rmse = float(np.sqrt(np.mean((pred - truth) ** 2)))
    assert r["target_errors"]["chosen"]["rmse"] == pytest.approx(rmse, rel=1e-6)
    assert r["predicted_values"]["mean"] == pytest.approx(pred.mean(), rel=1e-6)
    assert r["source_errors"]["chosen"]["folds"] == 5


def test_auto_compares_the_regression_candidates_and_writes_every_format(tmp_path, capsys):
    src, tgt = _files(tmp_path)
    rep = tmp_path / "report.html"
    code = cli.main(["adapt", str(src), "--target", str(tgt), "--label-column", "score",
                     "--candidates", "TCA,CORAL,KLIEP", "--n-jobs", "1", "--report", str(rep)])
    assert code == 0
    page = rep.read_text()
    assert "<html" in page.lower() and "RMSE" in page
    r = json.loads((tmp_path / "report.json").read_text())
    methods = [c["method"] for c in r["selection"]["candidates"]]
    assert methods == ["none", "TCA", "CORAL", "KLIEP"]
    chosen = next(c for c in r["selection"]["candidates"] if c["chosen"])
    assert chosen["rmse"] == min(c["rmse"] for c in r["selection"]["candidates"])
    # stdout Markdown when no --report
    code = cli.main(["adapt", str(src), "--target", str(tgt), "--label-column", "score",
                     "--method", "CORAL", "--select", "source-cv"])
    assert code == 0
    assert "## Errors (label units)" in capsys.readouterr().out


def test_iw_and_reverse_criteria_run_and_classification_criteria_are_refused(tmp_path, capsys):
    src, tgt = _files(tmp_path, n=60)
    for sel in ("iw_mse", "reverse_mse"):
        assert cli.main(["adapt", str(src), "--target", str(tgt), "--label-column", "score",
                         "--candidates", "CORAL", "--select", sel, "--n-jobs", "1",
                         "--report", str(tmp_path / f"{sel}.json")]) == 0
        r = json.loads((tmp_path / f"{sel}.json").read_text())
        assert r["selection"]["criterion"] == sel
    capsys.readouterr()
    assert cli.main(["adapt", str(src), "--target", str(tgt), "--label-column", "score",
                     "--select", "circular"]) == 2
    assert "reverse_mse" in capsys.readouterr().err
    assert cli.main(["adapt", str(src), "--target", str(tgt), "--label-column", "score",
                     "--method", "JDA"]) == 2
    assert "needs classes" in capsys.readouterr().err
    assert cli.main(["adapt", str(src), "--target", str(tgt), "--label-column", "score",
                     "--estimator", "logreg", "--method", "raw"]) == 2
    assert "ridge" in capsys.readouterr().err


def test_whole_numbers_are_classes_unless_task_regression(tmp_path, capsys):
    src, tgt = _files(tmp_path, whole=True)
    rep = tmp_path / "r.json"
    assert cli.main(["adapt", str(src), "--target", str(tgt), "--label-column", "score",
                     "--method", "raw", "--permutations", "0", "--report", str(rep)]) == 0
    err = capsys.readouterr().err
    assert "--task regression" in err               # many whole values: the hint is given
    assert json.loads(rep.read_text()).get("task") != "regression"
    assert cli.main(["adapt", str(src), "--target", str(tgt), "--label-column", "score",
                     "--method", "raw", "--task", "regression", "--report", str(rep)]) == 0
    r = json.loads(rep.read_text())
    assert r["task"] == "regression" and r["source_errors"]["chosen"]["rmse"] > 0


def test_awkward_label_columns_are_refused_with_the_fix(tmp_path, capsys):
    src, tgt = _files(tmp_path, n=30)
    # all labels missing
    empty = tmp_path / "empty.csv"
    empty.write_text("age,dose,score\n" + "".join(f"{i}.5,{i}.25,\n" for i in range(10)))
    assert cli.main(["adapt", str(empty), "--target", str(tgt), "--label-column", "score",
                     "--task", "regression"]) == 2
    assert "without a value" in capsys.readouterr().err
    # some labels missing in a source file
    holes = tmp_path / "holes.csv"
    holes.write_text("age,dose,score\n1.5,2.5,3.25\n2.5,1.5,\n0.5,0.5,1.75\n")
    assert cli.main(["adapt", str(holes), "--target", str(tgt), "--label-column", "score",
                     "--task", "regression"]) == 2
    assert "(lines 3)" in capsys.readouterr().err
    # text in a regression label column
    text = tmp_path / "text.csv"
    text.write_text("age,dose,score\n1.5,2.5,3.25\n2.5,1.5,high\n0.5,0.5,1.75\n")
    assert cli.main(["adapt", str(text), "--target", str(tgt), "--label-column", "score",
                     "--task", "regression"]) == 2
    assert "not a finite number" in capsys.readouterr().err
    # one labeled row: auto cannot validate; raw predicts (ridge on one row: that value)
    one = tmp_path / "one.csv"
    one.write_text("age,dose,score\n1.5,2.5,3.25\n")
    assert cli.main(["adapt", str(one), "--target", str(tgt), "--label-column", "score"]) == 2
    assert "--method raw" in capsys.readouterr().err
    out = tmp_path / "p.csv"
    assert cli.main(["adapt", str(one), "--target", str(tgt), "--label-column", "score",
                     "--method", "raw", "--out", str(out), "--report",
                     str(tmp_path / "one.json")]) == 0
    pred = np.array([float(r.split(",")[1]) for r in out.read_text().splitlines()[1:]])
    np.testing.assert_allclose(pred, 3.25)
    assert json.loads((tmp_path / "one.json").read_text())["source_errors"]["chosen"] is None
    # a filled label column in the target without the flag
    src2, tgt2 = _files(tmp_path, n=30, target_values=True)
    assert cli.main(["adapt", str(src2), "--target", str(tgt2), "--label-column", "score"]) == 2
    assert "--target-has-labels" in capsys.readouterr().err
    # --save is refused for a regression target, before any work
    assert cli.main(["adapt", str(src), "--target", str(tgt), "--label-column", "score",
                     "--save", str(tmp_path / "m.skops")]) == 2
    assert "--save" in capsys.readouterr().err


def test_python_entry_point_matches_the_command(tmp_path):
    from shiftlearn.workflow import adapt_regression

    rng = np.random.default_rng(0)
    Xs, Xt = rng.normal(0, 1, (80, 2)), rng.normal(1, 1, (80, 2))
    res = adapt_regression(Xs, _f(Xs), Xt, method="CORAL", y_target=_f(Xt))
    assert res.report["choice"] == "CORAL" and res.predictions.shape == (80,)
    np.testing.assert_allclose(res.predict(Xt), res.predictions)
    path = res.report.write(tmp_path / "r.md")
    assert "RMSE" in path.read_text()
    with pytest.raises(ValueError, match="finite value per source row"):
        adapt_regression(Xs, np.r_[np.nan, _f(Xs)[1:]], Xt)


def test_shiftlearn_adapt_reads_fractions_as_a_regression_target():
    import shiftlearn
    from shiftlearn.workflow import RegressionResult

    rng = np.random.default_rng(1)
    Xs, Xt = rng.normal(0, 1, (60, 2)), rng.normal(1, 1, (60, 2))
    res = shiftlearn.adapt(Xs, _f(Xs), Xt, method="raw")
    assert isinstance(res, RegressionResult) and res.report["estimator"] == "ridge"
    ref = DomainAdaptationRegressor(None, make_pipeline(StandardScaler(), Ridge()))
    np.testing.assert_allclose(res.predictions, ref.fit(np.vstack([Xs, Xt]),
                                                        np.r_[_f(Xs), np.full(60, np.nan)],
                                                        np.r_[np.ones(60), -np.ones(60)]
                                                        .astype(int)).predict(Xt),
                               rtol=1e-12)
