"""``shiftlearn adapt`` on a handful of labeled source rows (wine, scikit-learn's copy of the UCI
data, cultivars as words): a few lines of the command's own words on stderr, never a traceback
or scikit-learn's warnings; candidates that cannot be validated are listed with their reason;
a criterion that cannot rank the candidates says so instead of reporting a decision as if it
were measured."""

import json

import numpy as np
import pandas as pd
import pytest
from sklearn.datasets import load_wine

from shiftlearn import cli

CULTIVARS = np.array(["barolo", "grignolino", "barbera"])


@pytest.fixture(scope="module")
def wine(tmp_path_factory):
    """``(folder, {rows: source file})``: the target is the wines of 13% alcohol or more, the
    sources 1 or 2 wines of each cultivar among the others."""
    folder = tmp_path_factory.mktemp("wine")
    w = load_wine(as_frame=True)
    df = w.frame.drop(columns="target").assign(cultivar=CULTIVARS[w.target])
    low = df[df.alcohol < 13.0]
    df[df.alcohol >= 13.0].drop(columns="cultivar").to_csv(folder / "target.csv", index=False)
    files = {}
    for per_class in (1, 2):
        rows = low.groupby("cultivar").head(per_class)
        files[len(rows)] = str(folder / f"source{len(rows)}.csv")
        rows.to_csv(files[len(rows)], index=False)
    return folder, files


def _run(wine, rows, *extra, report="r.json"):
    folder, files = wine
    return cli.main(["adapt", files[rows], "--target", str(folder / "target.csv"),
                     "--label-column", "cultivar", "--permutations", "0",
                     "--report", str(folder / report), *extra])


def _quiet_enough(err: str, most: int = 4) -> list[str]:
    lines = err.splitlines()
    assert len(lines) <= most, lines
    for bad in ("Traceback", "Warning", "warnings.warn", "verbose=1", "-1 beside",
                "sklearn", "site-packages"):
        assert bad not in err, (bad, err)
    return lines


def test_six_source_rows_a_few_lines_and_reasons_in_the_report(wine, capsys):
    assert _run(wine, 6) == 0
    lines = _quiet_enough(capsys.readouterr().err)
    assert lines[1].startswith("chose ") and "folds of 1 labeled row(s)" in lines[1]
    sel = json.loads((wine[0] / "r.json").read_text())["selection"]
    failed = {r["method"]: r["failed"] for r in sel["candidates"] if r.get("failed")}
    # CORAL's circular validation refits it on one held-out row: no covariance from one row
    assert set(failed) == {"CORAL"} and "2 target rows" in failed["CORAL"]
    assert all(r["score"] is None for r in sel["candidates"] if r["method"] in failed)
    assert sel["validated"] == 5 and sel["ranked"]
    assert any("CORAL" in ln and "could not be validated" in ln for ln in lines)


def test_six_source_rows_tuned_stays_quiet(wine, capsys):
    assert _run(wine, 6, "--tune", "--candidates", "TCA,SCA,CORAL") == 0
    _quiet_enough(capsys.readouterr().err)
    rep = json.loads((wine[0] / "r.json").read_text())
    assert rep["selection"]["tuned"] and rep["selection"]["validated"] >= 2
    # the adapters' own warnings (SCA on 98 rows with up to 50 components) are in the report
    assert any(w.startswith(("RuntimeWarning", "ComponentsClippedWarning"))
               for w in rep["warnings"])


def test_entropy_with_1nn_cannot_rank_and_says_so(wine, capsys):
    assert _run(wine, 6, "--select", "entropy", "--candidates", "TCA,CORAL",
                report="e.md") == 0
    lines = _quiet_enough(capsys.readouterr().err)
    assert any("cannot rank them" in ln and "--estimator logreg" in ln for ln in lines)
    assert not any(ln.startswith("chose ") for ln in lines)
    sel = json.loads((wine[0] / "e.json").read_text())["selection"]
    assert sel["ranked"] is False
    md = (wine[0] / "e.md").read_text()
    assert "by default: entropy gives every candidate the same estimate" in md
    assert "Decision: do not adapt. No adapter" not in md


def test_no_candidate_validated_is_said_not_hidden(wine, capsys, monkeypatch):
    from shiftlearn.model_selection import _scorers

    def broken(self, *args, **kwargs):
        raise ValueError("the criterion broke on this fold")
    monkeypatch.setattr(_scorers.CircularValidation, "__call__", broken)
    assert _run(wine, 6, "--candidates", "TCA", "--out", str(wine[0] / "p.csv"),
                report="n.md") == 0
    lines = _quiet_enough(capsys.readouterr().err)
    assert any("no candidate could be validated by circular (cannot be scored: the criterion "
               "broke on this fold)" in ln for ln in lines)
    assert "no candidate could be validated" in (wine[0] / "n.md").read_text()
    assert len((wine[0] / "p.csv").read_text().splitlines()) == 1 + 92


def test_named_method_tuned_on_six_rows(wine, capsys):
    """Folds of one class beside the target's rows are no ambiguity for the command: every
    setting gets a source-CV estimate."""
    assert _run(wine, 6, "--method", "TCA", "--tune") == 0
    _quiet_enough(capsys.readouterr().err)
    cv = json.loads((wine[0] / "r.json").read_text())["source_cv"]
    assert cv["validated"] == cv["n_settings"] > 1 and cv["mean"] is not None


@pytest.mark.parametrize("extra", [[], ["--method", "SCA", "--tune"], ["--select", "cluster"]])
def test_three_source_rows_are_refused_in_one_line(wine, capsys, extra):
    assert _run(wine, 3, *extra) == 2
    lines = _quiet_enough(capsys.readouterr().err, most=2)
    assert "3 labeled source rows are too few for the validation of" in lines[-1]
    assert "--method raw" in lines[-1] and "lower the number of folds" not in lines[-1]


def test_three_source_rows_with_a_named_method(wine, capsys):
    assert _run(wine, 3, "--method", "TCA") == 0
    _quiet_enough(capsys.readouterr().err)


def test_more_rows_still_choose_quietly(wine, capsys):
    """Valid input beside the tiny cases: the whole low-alcohol half as the source."""
    folder = wine[0]
    w = load_wine(as_frame=True)
    df = w.frame.drop(columns="target").assign(cultivar=CULTIVARS[w.target])
    df[df.alcohol < 13.0].to_csv(folder / "src_all.csv", index=False)
    assert cli.main(["adapt", str(folder / "src_all.csv"), "--target",
                     str(folder / "target.csv"), "--label-column", "cultivar",
                     "--permutations", "0", "--candidates", "TCA,CORAL",
                     "--report", str(folder / "all.json")]) == 0
    lines = _quiet_enough(capsys.readouterr().err, most=3)
    assert lines[1].startswith("chose ") and "coarse" not in lines[1]
    sel = json.loads((folder / "all.json").read_text())["selection"]
    assert sel["ranked"] and sel["validated"] == 3
    assert pd.read_csv(folder / "target.csv").shape[0] == 92
