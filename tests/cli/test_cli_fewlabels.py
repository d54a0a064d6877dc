"""``shiftlearn adapt`` with a target file whose label column is filled for a few rows."""

from __future__ import annotations

import csv
import json

import numpy as np
import pytest

from shiftlearn import cli
from shiftlearn.cli.adapt import _few_label_lines

FAST = ("--candidates", "pooled,target-only,FeatureAugmentation")


def _write(path, X, labels):
    """A CSV as a person writes it: a header, text labels, an empty cell where unknown."""
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow([f"x{j}" for j in range(X.shape[1])] + ["grape"])
        for row, lab in zip(X, labels, strict=True):
            w.writerow([f"{v:.5f}" for v in row] + [lab])


def _files(tmp_path, *, per_class=3, flip=False, seed=0, n=40):
    """source.csv (every row labeled) and target.csv (``per_class`` labels per class, the
    other cells empty); ``flip``: the source's labels are the target's swapped."""
    rng = np.random.default_rng(seed)
    names = np.array(["merlot", "syrah"])
    ys, yt = np.tile([0, 1], n // 2), np.tile([0, 1], n // 2)
    Xs = rng.normal(size=(n, 3)) + 3.0 * ys[:, None]
    Xt = rng.normal(size=(n, 3)) + 3.0 * yt[:, None] + [0.7, -0.4, 0.0]
    src_lab = names[1 - ys] if flip else names[ys]
    tgt_lab = np.array([""] * n, dtype=object)
    known = np.r_[np.flatnonzero(yt == 0)[:per_class], np.flatnonzero(yt == 1)[:per_class]]
    tgt_lab[known] = names[yt[known]]
    _write(tmp_path / "source.csv", Xs, src_lab)
    _write(tmp_path / "target.csv", Xt, tgt_lab)
    return names[yt], known


def _run(tmp_path, *extra):
    return cli.main(["adapt", str(tmp_path / "source.csv"), "--target",
                     str(tmp_path / "target.csv"), "--label-column", "grape", "--permutations",
                     "0", "--quiet", *extra])


def _error(capsys) -> str:
    return capsys.readouterr().err


def test_a_few_target_labels_choose_and_every_other_row_is_predicted(tmp_path):
    truth, known = _files(tmp_path)
    assert _run(tmp_path, "--out", str(tmp_path / "p.csv"), "--report",
                str(tmp_path / "r.json")) == 0
    rep = json.loads((tmp_path / "r.json").read_text())
    few = rep["few_labels"]
    assert few["labeled_target_rows"] == 6
    assert few["split"] == "stratified 3-fold, repeated 5 times over the 6 labeled target rows"
    assert [r["method"] for r in few["candidates"]][:2] == ["FeatureAugmentation", "pooled"]
    assert sum(r["chosen"] for r in few["candidates"]) == 1
    assert rep["method"] == "auto (few labels): " + few["choice"]
    assert 0 <= few["estimate"]["accuracy"] <= 1 and few["estimate"]["rows"] == 6
    assert few["nested"]["rows"] == 6
    assert "optimistic" in few["caveat"] and "single labeled row" not in few["caveat"]
    assert rep["domains"][-1]["labeled"] == 6
    with open(tmp_path / "p.csv") as f:
        rows = list(csv.DictReader(f))
    unlabeled = sorted(set(range(40)) - set(known.tolist()))
    assert [int(r["row"]) - 1 for r in rows] == unlabeled      # the file's own row numbers
    pred = np.array([r["prediction"] for r in rows])
    assert np.mean(pred == truth[unlabeled]) > 0.9


def test_the_labels_are_used_when_the_source_says_the_opposite(tmp_path):
    # the source's labels are the target's swapped: only the target labels can be right
    truth, known = _files(tmp_path, flip=True, per_class=4)
    assert _run(tmp_path, *FAST, "--out", str(tmp_path / "p.csv"), "--report",
                str(tmp_path / "r.json")) == 0
    rep = json.loads((tmp_path / "r.json").read_text())
    assert rep["few_labels"]["choice"] in ("target-only", "FeatureAugmentation")
    with open(tmp_path / "p.csv") as f:
        pred = np.array([r["prediction"] for r in csv.DictReader(f)])
    unlabeled = sorted(set(range(40)) - set(known.tolist()))
    assert np.mean(pred == truth[unlabeled]) > 0.8


def test_the_markdown_report_states_the_estimate_and_the_caveat(tmp_path, capsys):
    _files(tmp_path)
    assert _run(tmp_path, *FAST) == 0
    md = capsys.readouterr().out
    assert "## Which method? (labeled target rows)" in md
    assert "estimated accuracy" in md and "nested estimate" in md
    assert "the same labels chose the method" in md.lower()


def test_the_html_report_has_the_section(tmp_path):
    pytest.importorskip("matplotlib")
    _files(tmp_path)
    assert _run(tmp_path, *FAST, "--report", str(tmp_path / "r.html")) == 0
    page = (tmp_path / "r.html").read_text()
    assert "Which method? (labeled target rows)" in page and "optimistic" in page


def test_one_labeled_target_row(tmp_path):
    _files(tmp_path, per_class=0)
    path = tmp_path / "target.csv"
    lines = path.read_text().splitlines()
    lines[1] = lines[1] + "merlot"                  # the first target row: label 'merlot'
    path.write_text("\n".join(lines) + "\n")
    assert _run(tmp_path, *FAST, "--report", str(tmp_path / "r.json")) == 0
    few = json.loads((tmp_path / "r.json").read_text())["few_labels"]
    assert few["split"].startswith("leave-one-out over the 1 labeled target row ")
    assert few["nested"] is None and few["estimate"]["se"] is None
    assert "One labeled target row" in few["caveat"]
    # a class with a single label: no choice; pooled-weighted is not among the candidates
    # given, so the first of them is fitted and the others are not scored
    assert few["one_label_default"] and not few["chose"]
    assert few["choice"] == "pooled"
    assert {r["method"] for r in few["candidates"] if r.get("unscored")} == {
        "target-only", "FeatureAugmentation"}


def test_a_labeled_target_class_the_source_lacks_is_refused(tmp_path, capsys):
    _files(tmp_path)
    path = tmp_path / "target.csv"
    lines = path.read_text().splitlines()
    lines[1] = lines[1].rsplit(",", 1)[0] + ",zinfandel"
    path.write_text("\n".join(lines) + "\n")
    assert _run(tmp_path, *FAST) == 2
    err = _error(capsys)
    assert "'zinfandel'" in err and "no source row has" in err


def test_labels_in_the_target_and_a_named_adapter(tmp_path):
    truth, known = _files(tmp_path)
    assert _run(tmp_path, "--method", "TCA", "--report", str(tmp_path / "r.json")) == 0
    rep = json.loads((tmp_path / "r.json").read_text())
    few = rep["few_labels"]
    assert rep["method"] == "few labels: TCA"
    assert few["chose"] is False and [r["method"] for r in few["candidates"]] == ["TCA"]
    assert "nothing was chosen" in few["caveat"] and few["nested"] is None


def test_a_named_few_label_method(tmp_path):
    _files(tmp_path)
    assert _run(tmp_path, "--method", "FeatureAugmentation", "--report",
                str(tmp_path / "r.json")) == 0
    assert json.loads((tmp_path / "r.json").read_text())["method"] == \
        "few labels: FeatureAugmentation"


def test_tradaboost_with_the_commands_logistic_regression(tmp_path):
    # the command's logreg is a pipeline (StandardScaler + LogisticRegression): the boosting
    # weights reach its last step
    _files(tmp_path)
    assert _run(tmp_path, "--method", "TrAdaBoost", "--report", str(tmp_path / "r.json")) == 0
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["method"] == "few labels: TrAdaBoost"
    assert not any(r.get("failed") for r in report["few_labels"]["candidates"])


def test_a_few_label_method_without_target_labels(tmp_path, capsys):
    _files(tmp_path, per_class=0)
    assert _run(tmp_path, "--method", "LinInt") == 2
    assert "learns from labeled target rows" in _error(capsys)


def test_margin_se_applies_to_the_choice(tmp_path):
    _files(tmp_path)
    assert _run(tmp_path, *FAST, "--margin", "se", "--report", str(tmp_path / "r.json")) == 0
    few = json.loads((tmp_path / "r.json").read_text())["few_labels"]
    best = max(r["score"] for r in few["candidates"] if r["score"] is not None)
    chosen = next(r for r in few["candidates"] if r["chosen"])
    assert chosen["score"] >= best - few["margin"] - 1e-12
    earlier = few["candidates"][:few["candidates"].index(chosen)]
    assert all(r["score"] is None or r["score"] < best - few["margin"] for r in earlier)


def test_options_of_the_unlabeled_choice_are_refused(tmp_path, capsys):
    _files(tmp_path)
    assert _run(tmp_path, "--select", "mmd") == 2
    assert "--select" in _error(capsys)
    assert _run(tmp_path, "--method", "KMM") == 2
    assert "reweighting adapter" in _error(capsys)


def test_target_has_labels_keeps_them_for_the_accuracy_only(tmp_path):
    _files(tmp_path)
    assert _run(tmp_path, "--method", "raw", "--target-has-labels", "--report",
                str(tmp_path / "r.json")) == 0
    rep = json.loads((tmp_path / "r.json").read_text())
    assert "few_labels" not in rep and rep["target_accuracy"]["rows"] == 6


def test_the_saved_model_predicts_target_rows(tmp_path):
    pytest.importorskip("skops")
    truth, known = _files(tmp_path)
    model = tmp_path / "m.skops"
    assert _run(tmp_path, "--method", "FeatureAugmentation", "--save", str(model)) == 0
    assert cli.main(["predict", str(model), str(tmp_path / "target.csv"), "--out",
                     str(tmp_path / "q.csv"), "--quiet"]) == 0
    with open(tmp_path / "q.csv") as f:
        pred = np.array([r["prediction"] for r in csv.DictReader(f)])
    assert pred.shape == (40,) and np.mean(pred == truth) > 0.9


def test_one_label_per_class_fits_the_one_label_default_without_a_choice(tmp_path):
    # one label per class: leave-one-out would hold out a class's only label, so no choice
    _files(tmp_path, per_class=1)
    assert _run(tmp_path, "--report", str(tmp_path / "r.json")) == 0
    few = json.loads((tmp_path / "r.json").read_text())["few_labels"]
    assert few["split"].startswith("leave-one-out over the 2 labeled target rows")
    assert few["one_label_default"] and not few["chose"] and few["nested"] is None
    assert few["choice"] == "pooled-weighted"
    assert "no method was chosen" in few["caveat"] and "pessimistic" in few["caveat"]
    assert "best single method at one label per class" in few["caveat"]
    scored = [r["method"] for r in few["candidates"] if not r.get("unscored")]
    assert scored == ["pooled-weighted"] and len(few["candidates"]) > 1
    lines = _few_label_lines(few)           # what the command prints without --quiet
    assert lines[0].startswith("fitted the one-label default, pooled-weighted, on 2 labeled")
