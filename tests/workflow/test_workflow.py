"""``shiftlearn.adapt``: one call from Python gives the command's choice, predictions and report."""

import json

import numpy as np
import pytest

import shiftlearn
from shiftlearn import cli


def _blobs(seed=0, n=30):
    rng = np.random.default_rng(seed)
    centers = np.array([[0, 0, 0, 0], [4, 0, 0, 0], [0, 4, 0, 0]], dtype=float)
    y = np.repeat([0, 1, 2], n)
    Xs = centers[y] + rng.normal(scale=0.7, size=(3 * n, 4))
    Xt = centers[y] + rng.normal(scale=0.7, size=(3 * n, 4))
    Xt[:, 2:] += (2.0, -1.0)
    return Xs, y, Xt


def _csv(path, X, y=None):
    rows = [",".join([f"x{i}" for i in range(X.shape[1])] + (["label"] if y is not None
                                                            else []))]
    rows += [",".join([repr(float(v)) for v in X[i]] + ([str(y[i])] if y is not None else []))
             for i in range(len(X))]
    path.write_text("\n".join(rows) + "\n")
    return str(path)


def test_adapt_is_exported_lazily_and_matches_the_command(tmp_path, capsys):
    from shiftlearn.workflow import AdaptationResult

    assert shiftlearn.adapt is shiftlearn.workflow.adapt
    Xs, ys, Xt = _blobs()
    labels = np.array(["cat", "dog", "owl"])
    opts = ["--candidates", "TCA,CORAL", "--permutations", "30", "--estimator", "logreg"]
    src, tgt = _csv(tmp_path / "s.csv", Xs, labels[ys]), _csv(tmp_path / "t.csv", Xt)
    assert cli.main(["adapt", src, "--target", tgt, "--label-column", "label", *opts,
                     "--out", str(tmp_path / "p.csv"), "--report", str(tmp_path / "r.json"),
                     "--quiet"]) == 0
    cmd = json.loads((tmp_path / "r.json").read_text())
    res = shiftlearn.adapt(Xs, labels[ys], Xt, candidates=["TCA", "CORAL"], permutations=30,
                           estimator="logreg")
    assert isinstance(res, AdaptationResult)
    rep = res.report
    # the same decision, estimates, parameters, shift tests and class mix as the command
    assert rep["method"] == cmd["method"] and rep["selection"]["choice"] == \
        cmd["selection"]["choice"]
    assert [r["score"] for r in rep["selection"]["candidates"]] == \
        [r["score"] for r in cmd["selection"]["candidates"]]
    assert rep["params"] == cmd["params"] and rep["class_mix"] == cmd["class_mix"]
    assert rep["shift_raw"] == cmd["shift_raw"]
    assert set(rep) == set(cmd)
    pred = [ln.split(",")[1] for ln in (tmp_path / "p.csv").read_text().splitlines()[1:]]
    assert res.predictions.tolist() == pred
    assert res.predict(Xt).tolist() == pred
    assert res.confidence is not None and res.confidence.shape == (len(Xt),)
    assert json.loads(json.dumps(rep)) == json.loads(json.dumps(dict(rep)))


def test_report_writes_the_commands_formats(tmp_path):
    pytest.importorskip("matplotlib")
    Xs, ys, Xt = _blobs(n=15)
    res = shiftlearn.adapt(Xs, ys, Xt, method="CORAL", permutations=20, y_target=ys)
    page = res.report.write(tmp_path / "r.html").read_text()
    assert page.startswith("<!DOCTYPE html>") and page.count("data:image/png;base64,") >= 4
    assert "CORAL" in res.report.write(tmp_path / "r.md").read_text()
    assert json.loads((res.report.write(tmp_path / "r.json")).read_text())["method"] == "CORAL"
    assert 0.0 <= res.report["target_accuracy"]["adapted"] <= 1.0
    with pytest.raises(ValueError, match="unknown report format"):
        res.report.write(tmp_path / "r.txt")


def test_dataframes_domains_and_estimator_objects():
    pd = pytest.importorskip("pandas")
    from sklearn.neighbors import KNeighborsClassifier

    Xs, ys, Xt = _blobs(n=12)
    cols = ["a", "b", "c", "d"]
    dfs = pd.DataFrame(Xs, columns=cols)
    dft = pd.DataFrame(Xt, columns=cols)[["d", "c", "b", "a"]]     # matched by name
    dom = np.where(np.arange(len(Xs)) % 2, "site1", "site2")
    res = shiftlearn.adapt(dfs, ys, dft, source_domains=dom, method="raw", permutations=0,
                           estimator=KNeighborsClassifier(3))
    assert res.report["classifier"] == "KNeighborsClassifier"
    assert [d["name"] for d in res.report["domains"]] == ["source site1", "source site2",
                                                         "target"]
    ref = KNeighborsClassifier(3).fit(Xs, ys).predict(Xt)
    assert res.predictions.tolist() == ref.tolist()
    with pytest.raises(ValueError, match="missing \\['d'\\], extra \\['e'\\]"):
        shiftlearn.adapt(dfs, ys, dft.rename(columns={"d": "e"}), method="raw")
    with pytest.raises(ValueError, match="unknown estimator"):
        shiftlearn.adapt(Xs, ys, Xt, estimator="xgboost")
    with pytest.raises(ValueError, match="not a classifier"):
        from sklearn.linear_model import Ridge

        shiftlearn.adapt(Xs, ys, Xt, estimator=Ridge())


def _few_labels(yt, per_class=3):
    """The target labels of ``per_class`` rows of each class, None for the others."""
    lab = np.full(len(yt), None, dtype=object)
    for c in np.unique(yt):
        rows = np.flatnonzero(yt == c)[:per_class]
        lab[rows] = yt[rows]
    return lab


def test_adapt_with_labeled_target_rows_is_the_commands_few_label_run(tmp_path):
    """``y_target_labeled``: the choice among the few-label methods, its cross-validation
    scores and the predictions of the unlabeled target rows are the command's on a target
    file whose label column is filled for those rows; ``predictions`` covers every target
    row, the labeled ones too (by the chosen model)."""
    Xs, ys, Xt = _blobs()
    labels = np.array(["cat", "dog", "owl"])
    lab = _few_labels(labels[ys])
    src = _csv(tmp_path / "s.csv", Xs, labels[ys])
    tgt = tmp_path / "t.csv"
    rows = [",".join([f"x{i}" for i in range(4)] + ["label"])]
    rows += [",".join([repr(float(v)) for v in Xt[i]] + ["" if lab[i] is None else lab[i]])
             for i in range(len(Xt))]
    tgt.write_text("\n".join(rows) + "\n")
    assert cli.main(["adapt", src, "--target", str(tgt), "--label-column", "label",
                     "--permutations", "0", "--out", str(tmp_path / "p.csv"),
                     "--report", str(tmp_path / "r.json"), "--quiet"]) == 0
    cmd = json.loads((tmp_path / "r.json").read_text())
    res = shiftlearn.adapt(Xs, labels[ys], Xt, y_target_labeled=lab, permutations=0)
    few, cfew = res.report["few_labels"], cmd["few_labels"]
    assert res.report["method"] == cmd["method"] and few["choice"] == cfew["choice"]
    assert [c["score"] for c in few["candidates"]] == [c["score"] for c in cfew["candidates"]]
    assert few["split"] == cfew["split"] and few["labeled_target_rows"] == 9
    unl = np.array([v is None for v in lab])
    pred = [ln.split(",")[1] for ln in (tmp_path / "p.csv").read_text().splitlines()[1:]]
    assert res.predictions.shape == (len(Xt),)
    assert res.predictions[unl].tolist() == pred
    assert res.predictions.tolist() == res.predict(Xt).tolist()
    assert res.confidence.shape == (len(Xt),)
    # the same rows predicted in two batches: equal up to the rounding of the products
    np.testing.assert_allclose(res.confidence,
                               np.asarray(res.pipeline.predict_proba(Xt)).max(axis=1),
                               rtol=1e-12)
    assert np.mean(res.predictions == labels[ys]) > 0.8


def test_adapt_with_labeled_target_rows_refuses_what_it_cannot_do():
    Xs, ys, Xt = _blobs()
    lab = _few_labels(ys)
    with pytest.raises(ValueError, match="give one of the two"):
        shiftlearn.adapt(Xs, ys, Xt, y_target=ys, y_target_labeled=lab)
    with pytest.raises(ValueError, match="learns from labeled target rows"):
        shiftlearn.adapt(Xs, ys, Xt, method="FeatureAugmentation", permutations=0)
    with pytest.raises(ValueError, match="learns from labeled target rows"):
        shiftlearn.adapt(Xs, ys, Xt, y_target_labeled=[None] * len(Xt), permutations=0)
    with pytest.raises(ValueError, match="no source row has"):
        shiftlearn.adapt(Xs[ys < 2], ys[ys < 2], Xt, y_target_labeled=lab, permutations=0)
    with pytest.raises(ValueError, match="tune: options of the choice without target labels"):
        shiftlearn.adapt(Xs, ys, Xt, y_target_labeled=lab, tune=True, permutations=0)
    with pytest.raises(ValueError, match="few-label methods are classifiers"):
        shiftlearn.adapt(Xs, ys + 0.5, Xt, y_target_labeled=lab, permutations=0)
    with pytest.raises(ValueError, match="search must be 'grid' or 'halving'"):
        shiftlearn.adapt(Xs, ys, Xt, y_target_labeled=lab, search="random", permutations=0)
    with pytest.raises(ValueError, match="margin must be"):
        shiftlearn.adapt(Xs, ys, Xt, y_target_labeled=lab, margin=-1, permutations=0)
    with pytest.raises(ValueError, match="y_target_labeled has 3 labels"):
        shiftlearn.adapt(Xs, ys, Xt, y_target_labeled=lab[:3], permutations=0)
    res = shiftlearn.adapt(Xs, ys, Xt, y_target_labeled=lab, method="FeatureAugmentation",
                           permutations=0)
    assert res.report["few_labels"]["choice"] == "FeatureAugmentation"
    assert res.report["few_labels"]["chose"] is False
