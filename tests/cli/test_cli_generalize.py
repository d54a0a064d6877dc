"""``shiftlearn generalize`` and the selector behind it (GeneralizationSelector).

Domain files are written in ``tmp_path`` from the marginal-transfer paper's rotated ellipses
(classification: every task has mean 0, only its covariance tells the tasks apart, so the
domain-aware candidate, marginal transfer, is the one that can win) and from a synthetic
regression whose target depends on the domain's offset.
"""

from __future__ import annotations

import csv
import json

import numpy as np
import pytest

from shiftlearn.cli import main
from shiftlearn.datasets import make_rotated_ellipses
from shiftlearn.model_selection import GeneralizationSelector, infer_task


def _write(path, X, y, names, label="outcome"):
    with open(path, "w", encoding="utf-8") as f:
        f.write(",".join(names + ([label] if y is not None else [])) + "\n")
        for i, row in enumerate(X):
            cells = [f"{v:.6f}" for v in row] + ([str(y[i])] if y is not None else [])
            f.write(",".join(cells) + "\n")
    return str(path)


@pytest.fixture
def ellipses(tmp_path):
    X, y, sd = make_rotated_ellipses(5, 60, random_state=0)
    files = [_write(tmp_path / f"site_{i + 1}.csv", X[sd == d],
                    np.where(y[sd == d] == 1, "yes", "no"), ["x1", "x2"])
             for i, d in enumerate(np.unique(sd))]
    Xn, yn, _ = make_rotated_ellipses(1, 80, first_domain=50, random_state=5)
    new = _write(tmp_path / "new_site.csv", Xn, None, ["x1", "x2"])
    labeled = _write(tmp_path / "new_labeled.csv", Xn, np.where(yn == 1, "yes", "no"),
                     ["x1", "x2"])
    return files, new, labeled


def _regression_files(tmp_path, k=5, n=40):
    rng = np.random.default_rng(0)
    files = []
    for i in range(k):
        s = 2.0 * rng.normal()
        X = rng.normal(size=(n, 3)) + s
        y = 10 + 3 * s + 0.5 * X[:, 0] + 0.3 * rng.normal(size=n)
        files.append(_write(tmp_path / f"subject_{i + 1}.csv", X, [f"{v:.3f}" for v in y],
                            ["f1", "f2", "f3"], label="updrs"))
    return files


def test_lodo_table_predictions_and_html_report(ellipses, tmp_path, capsys):
    files, new, _ = ellipses
    out, report = tmp_path / "p.csv", tmp_path / "r.html"
    assert main(["generalize", *files, "--label-column", "outcome", "--predict", new,
                 "--out", str(out), "--report", str(report), "-q"]) == 0
    table = capsys.readouterr().out
    for name in ("site_1", "site_5", "mean", "worst domain", "marginal *"):
        assert name in table
    rows = list(csv.DictReader(open(out, encoding="utf-8")))
    assert len(rows) == 80 and {r["prediction"] for r in rows} <= {"yes", "no"}
    assert {r["file"] for r in rows} == {new}
    rep = json.loads((tmp_path / "r.json").read_text(encoding="utf-8"))
    assert rep["choice"] == "marginal" and rep["metric"] == "accuracy"
    marg = next(r for r in rep["candidates"] if r["method"] == "marginal")
    assert len(marg["per_domain"]) == 5 and all(0 <= v <= 1 for v in marg["per_domain"])
    assert marg["worst"] == min(marg["per_domain"])
    assert marg["worst_domain"] == rep["domains"][int(np.argmin(marg["per_domain"]))]["name"]
    html = report.read_text(encoding="utf-8")
    assert html.count("data:image/png;base64,") == 2 and "Which method?" in html


def test_marginal_transfer_beats_pooling_on_the_ellipses():
    """The paper's point: pooling cannot tell the ellipses' tasks apart (every task has mean
    0), marginal transfer can; leave-one-domain-out must see it and choose it."""
    X, y, sd = make_rotated_ellipses(8, 60, random_state=1)
    sel = GeneralizationSelector(candidates=["pooling", "marginal"]).fit(X, y, sd)
    assert sel.choice_ == "marginal"
    assert np.nanmean(sel.scores_["marginal"]) > np.nanmean(sel.scores_["pooling"]) + 0.05
    Xt, yt, _ = make_rotated_ellipses(1, 200, first_domain=100, random_state=2)
    assert sel.score(Xt, yt) > 0.7


def test_json_and_cluster_selection(ellipses, capsys):
    files, _, _ = ellipses
    assert main(["generalize", *files, "--select", "cluster", "--json", "-q",
                 "--candidates", "plain,marginal"]) == 0
    rep = json.loads(capsys.readouterr().out)
    assert rep["select"] == "cluster" and [r["method"] for r in rep["candidates"]] == [
        "plain", "marginal"]
    # the split holds out 20% of every domain: each domain gets a score
    assert all(d["held_out"] for d in rep["domains"])
    assert sum(r["chosen"] for r in rep["candidates"]) == 1


def test_a_labeled_predict_file_gets_a_score(ellipses, tmp_path, capsys):
    files, _, labeled = ellipses
    out = tmp_path / "p.csv"
    assert main(["generalize", *files, "--label-column", "outcome", "--predict", labeled,
                 "--out", str(out), "--candidates", "marginal", "--json"]) == 0
    captured = capsys.readouterr()
    rep = json.loads(captured.out)
    (pred,) = rep["predictions"]
    assert pred["scored_rows"] == 80 and 0.5 < pred["score"] <= 1
    assert "used for this line only" in captured.err


def test_regression_is_detected_and_scored_in_label_units(tmp_path, capsys):
    files = _regression_files(tmp_path)
    assert main(["generalize", *files, "--label-column", "updrs", "--json"]) == 0
    captured = capsys.readouterr()
    assert "'updrs' holds numbers that are not all whole" in captured.err
    rep = json.loads(captured.out)
    assert rep["task"] == "regression" and rep["metric"] == "rmse"
    # RMSE in the label's units: positive, and below the spread of the labels across domains
    spread = np.std([d["label_mean"] for d in rep["domains"]])
    for r in rep["candidates"]:
        assert all(v > 0 for v in r["per_domain"])
    chosen = next(r for r in rep["candidates"] if r["chosen"])
    assert chosen["mean"] == min(r["mean"] for r in rep["candidates"])
    assert chosen["mean"] < 2 * spread


@pytest.mark.parametrize("name", ["hgb", "ridge", "1nn"])
def test_other_estimators_end_to_end(tmp_path, capsys, name):
    """The shared estimator names work for both tasks; logreg has no regression model."""
    files = _regression_files(tmp_path, k=3)
    assert main(["generalize", *files, "--estimator", name, "--candidates", "plain,SCA",
                 "--json", "-q"]) == 0
    rep = json.loads(capsys.readouterr().out)
    assert rep["task"] == "regression" and rep["estimator"] == name
    assert all(v is not None and v > 0 for r in rep["candidates"] for v in r["per_domain"])
    assert main(["generalize", *files, "--estimator", "logreg", "-q"]) == 2
    assert "no model of that name for a regression target" in capsys.readouterr().err


def test_hgb_classification(ellipses, capsys):
    files, _, _ = ellipses
    assert main(["generalize", *files[:3], "--estimator", "hgb", "--candidates", "plain",
                 "--json", "-q"]) == 0
    rep = json.loads(capsys.readouterr().out)
    assert rep["estimator_model"] == "HistGradientBoostingClassifier"


def test_task_flag_forces_classification_and_refuses_text_regression(ellipses, tmp_path,
                                                                      capsys):
    files = _regression_files(tmp_path, k=3)
    assert main(["generalize", *files, "--task", "classification", "-q"]) == 2
    assert "regression target" in capsys.readouterr().err
    files, _, _ = ellipses
    assert main(["generalize", *files[:3], "--task", "regression", "-q"]) == 2
    err = capsys.readouterr().err
    assert "holds text" in err and "--task regression" in err and len(err.splitlines()) == 1


def test_one_domain_file_is_a_clear_error(ellipses, capsys):
    files, _, _ = ellipses
    assert main(["generalize", files[0]]) == 2
    err = capsys.readouterr().err
    assert err.startswith("shiftlearn generalize: error: ") and "at least 2" in err
    assert len(err.strip().splitlines()) == 1


def test_mismatched_columns_name_the_file(ellipses, tmp_path, capsys):
    files, _, _ = ellipses
    X, y, _ = make_rotated_ellipses(1, 20, random_state=3)
    bad = _write(tmp_path / "other.csv", X, y, ["x1", "x9"])
    assert main(["generalize", files[0], files[1], bad, "--label-column", "outcome"]) == 2
    err = capsys.readouterr().err
    assert "other.csv" in err and "'x9'" in err and "'x2'" in err


@pytest.mark.parametrize("argv, words", [
    (["--out", "p.csv"], "--out writes the predictions of --predict"),
    (["--predict", "NEW"], "--predict needs --out"),
    (["--candidates", "plain,TCA"], "unknown ['TCA']"),
    (["--estimator", "bogus"], "unknown estimator"),
])
def test_option_errors(ellipses, tmp_path, capsys, argv, words):
    files, new, _ = ellipses
    argv = [new if a == "NEW" else str(tmp_path / a) if a == "p.csv" else a for a in argv]
    assert main(["generalize", *files[:3], *argv]) == 2
    assert words in capsys.readouterr().err


def test_a_file_named_twice_is_refused(ellipses, capsys):
    files, _, _ = ellipses
    assert main(["generalize", files[0], files[1], files[0]]) == 2
    assert "named twice" in capsys.readouterr().err


def test_one_file_with_a_domain_column(tmp_path, capsys):
    """Hospitals in one file: --domain-column splits it; a --predict file with the column gives
    one new domain per value (each embedded from its own rows)."""
    X, y, sd = make_rotated_ellipses(4, 40, random_state=0)
    with open(tmp_path / "all.csv", "w", encoding="utf-8") as f:
        f.write("site,x1,x2,outcome\n")
        for row, label, d in zip(X, y, sd, strict=True):
            f.write(f"hosp{d},{row[0]:.6f},{row[1]:.6f},{label}\n")
    Xn, _, sdn = make_rotated_ellipses(4, 50, first_domain=7, random_state=2)
    with open(tmp_path / "new.csv", "w", encoding="utf-8") as f:
        f.write("site,x1,x2\n")
        for row, d in zip(Xn, sdn, strict=True):
            f.write(f"new{d},{row[0]:.6f},{row[1]:.6f}\n")
    out = tmp_path / "p.csv"
    assert main(["generalize", str(tmp_path / "all.csv"), "--domain-column", "site",
                 "--predict", str(tmp_path / "new.csv"), "--out", str(out), "--json",
                 "--candidates", "plain,marginal", "-q"]) == 0
    rep = json.loads(capsys.readouterr().out)
    assert [d["name"] for d in rep["domains"]] == ["hosp1", "hosp2", "hosp3", "hosp4"]
    assert all(len(r["per_domain"]) == 4 for r in rep["candidates"])
    rows = list(csv.DictReader(open(out, encoding="utf-8")))
    assert len(rows) == 200
    # one new domain per value: marginal transfer (chosen on these tasks) predicts each
    # value's rows as their own domain, which differs from the rows as one mixed domain
    assert rep["choice"] == "marginal"
    sel = GeneralizationSelector(candidates=["marginal"]).fit(X, y, sd)
    apart, mixed = sel.predict(Xn, sdn), sel.predict(Xn)
    assert (apart != mixed).any()
    assert [r["prediction"] for r in rows] == [str(v) for v in apart]
    assert main(["generalize", str(tmp_path / "all.csv"), "-q"]) == 2
    assert "--domain-column" in capsys.readouterr().err


@pytest.mark.parametrize("task", ["classification", "regression"])
def test_save_then_predict_gives_the_predictions_of_out(ellipses, tmp_path, capsys, task):
    """A saved generalize model predicts a new file as one new domain, as --out did."""
    pytest.importorskip("skops")
    if task == "classification":
        files, new, _ = ellipses
    else:
        files = _regression_files(tmp_path, k=4)
        new = files.pop()
    out, model, again = tmp_path / "p.csv", tmp_path / "m.skops", tmp_path / "q.csv"
    assert main(["generalize", *files, "--predict", new, "--out", str(out), "--save",
                 str(model), "-q"]) == 0
    capsys.readouterr()
    assert main(["predict", str(model), new, "--out", str(again), "-q"]) == 0
    first = [r["prediction"] for r in csv.DictReader(open(out, encoding="utf-8"))]
    second = [r["prediction"] for r in csv.DictReader(open(again, encoding="utf-8"))]
    assert len(first) == len(second) > 0
    if task == "classification":
        assert first == second
    else:
        np.testing.assert_allclose(np.array(second, float), np.array(first, float), rtol=1e-5)
    data = bytearray(model.read_bytes())
    data[len(data) // 2] ^= 0xFF
    model.write_bytes(bytes(data))
    assert main(["predict", str(model), new, "-q"]) == 2
    assert "damaged" in capsys.readouterr().err


def test_selector_ties_and_order():
    """Candidates are kept in the library's order whatever the caller's, and an estimate
    better only by rounding is a tie (the earlier candidate keeps it)."""
    X, y, sd = make_rotated_ellipses(4, 30, random_state=0)
    sel = GeneralizationSelector(candidates=["marginal", "plain"]).fit(X, y, sd)
    assert [r["method"] for r in sel.summary_] == ["plain", "marginal"]
    assert sel._better(0.5 + 1e-15, 0.5) is False and sel._better(0.51, 0.5) is True
    assert sel._better(float("nan"), 0.5) is False and sel._better(0.1, float("nan")) is True
    sel.task_ = "regression"            # smaller RMSE is better
    assert sel._better(1.0, 2.0) is True and sel._better(2.0, 1.0) is False


def test_selector_refuses_one_domain_for_lodo():
    X, y, _ = make_rotated_ellipses(1, 30, random_state=0)
    with pytest.raises(ValueError, match="at least 2 domains"):
        GeneralizationSelector().fit(X, y, np.ones(30, dtype=int))


def test_infer_task():
    assert infer_task(np.array([1.0, 2.0, 3.0])) == "classification"
    assert infer_task(np.array([1.0, 2.5])) == "regression"
    assert infer_task(np.array(["a", "b"], dtype=object)) == "classification"


def test_the_html_report_in_a_real_browser(ellipses, tmp_path):
    """The page as a person sees it: both figures loaded at their PNG size, with ink on them,
    no wider than the window, nothing fetched beyond the file."""
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from _chromium import find_chromium, inspect_report

    if find_chromium() is None:
        pytest.skip("chromium is not installed (apt-get install -y chromium), so the HTML "
                    "report cannot be opened in a real browser here")
    files, _, _ = ellipses
    page = tmp_path / "r.html"
    assert main(["generalize", *files, "--report", str(page), "-q"]) == 0
    seen = inspect_report(page)
    figs = seen["figures"]
    assert len(figs) == 2
    for f in figs:
        w, h = f["natural"]
        assert f["complete"] and w > 100 and h > 100
        # drawn at its size, or scaled down to the page's width with its aspect ratio kept
        bw, bh = f["box"][2], f["box"][3]
        assert 0.5 * w < bw <= w + 2 and bh / bw == pytest.approx(h / w, rel=0.02), f
        assert f["nonwhite"] > 0.02, f
    assert [u for u in seen["requests"] if not u.startswith(("data:", "file:"))] == []


def test_the_selection_draws_a_bar_on_a_terminal(ellipses):
    """On a terminal the validation shows a bar naming the candidate at work with the count of
    fits; stdout (the table) stays plain text; --quiet draws nothing."""
    import sys
    from pathlib import Path

    if sys.platform == "win32":
        pytest.skip("pseudo-terminals are POSIX")
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from test_cli_progress import _on_a_terminal

    files, _, _ = ellipses
    argv = ("generalize", *files, "--candidates", "plain,marginal")
    code, out, terminal = _on_a_terminal(*argv)
    assert code == 0, terminal
    assert "validating (lodo): " in terminal and "/10" in terminal     # 2 candidates x 5
    assert "\x1b" not in out and "marginal" in out
    code, out, terminal = _on_a_terminal(*argv, "--quiet")
    assert code == 0 and terminal == "" and "worst domain" in out


def test_headerless_files_and_a_labeled_new_file(tmp_path, capsys):
    """Without header names the last column is the label; a new file with one column more is
    read with its labels (a score), not refused for its width."""
    X, y, sd = make_rotated_ellipses(4, 40, random_state=0)
    files = []
    for d in np.unique(sd):
        path = tmp_path / f"h{d}.csv"
        np.savetxt(path, np.column_stack([X[sd == d], y[sd == d]]), delimiter=",",
                   fmt="%.6f")
        files.append(str(path))
    Xn, yn, _ = make_rotated_ellipses(1, 60, first_domain=9, random_state=4)
    new = tmp_path / "new.csv"
    np.savetxt(new, np.column_stack([Xn, yn]), delimiter=",", fmt="%.6f")
    out = tmp_path / "p.csv"
    assert main(["generalize", *files, "--predict", str(new), "--out", str(out),
                 "--candidates", "marginal", "--json"]) == 0
    captured = capsys.readouterr()
    (pred,) = json.loads(captured.out)["predictions"]
    assert pred["scored_rows"] == 60 and "read as their label column" in captured.err
