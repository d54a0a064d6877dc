"""``shiftlearn shift`` and the analysis behind it (shiftlearn.report._shift): MMD² matrix,
Holm's correction, the sentence, per-class shift, files in, reports out."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from shiftlearn import cli
from shiftlearn.report import analyse_shift, describe, domain_map, holm
from shiftlearn.report._shift import enough_permutations


# ------------------------------------------------------------------------------- Holm ------
def test_holm_matches_the_step_down_definition():
    p = np.array([0.01, 0.04, 0.03, 0.005, 0.5])
    # sorted: .005 .01 .03 .04 .5 -> *5 *4 *3 *2 *1 = .025 .04 .09 .08 .5, running max
    expected = {3: 0.025, 0: 0.04, 2: 0.09, 1: 0.09, 4: 0.5}
    adj = holm(p)
    for i, v in expected.items():
        assert adj[i] == pytest.approx(v)
    assert np.all(adj >= p) and np.all(adj <= 1)
    assert holm([0.6, 0.7]).tolist() == [1.0, 1.0]          # capped at 1
    assert holm([0.02]).tolist() == [0.02]                  # one test: unchanged
    assert np.isnan(holm([np.nan, 0.01])[0]) and holm([np.nan, 0.01])[1] == 0.01


def test_holm_against_statsmodels_if_installed():
    multitest = pytest.importorskip("statsmodels.stats.multitest")
    p = np.random.default_rng(0).uniform(0, 0.2, size=12)
    np.testing.assert_allclose(holm(p), multitest.multipletests(p, method="holm")[1])


def test_enough_permutations_lets_holm_reject_at_both_sides_of_the_bound():
    m, alpha = 6, 0.05
    n = enough_permutations(10, m, alpha)
    assert n == 240 and m / (n + 1) <= alpha                 # the smallest p passes Holm
    assert enough_permutations(241, m, alpha) == 241          # more is kept
    assert enough_permutations(0, m, alpha) == 0              # no tests stays no tests


# ------------------------------------------------------------------------- sentences ------
NAMES = ["webcam", "dslr", "amazon", "caltech"]


def _sentence(close_pairs, k=4, mmd=None):
    D = np.ones((k, k)) if mmd is None else mmd
    np.fill_diagonal(D, 0)
    P = np.full((k, k), 0.001)
    for a, b in close_pairs:
        P[a, b] = P[b, a] = 0.5
    np.fill_diagonal(P, 1)
    return describe(NAMES[:k], D, P, 0.05)


def test_describe_groups_chains_and_loners():
    assert _sentence([(0, 1)]) == ("webcam and dslr are close; amazon and caltech each differ "
                                   "from all others.")
    assert _sentence([(0, 1), (1, 2), (0, 2)]) == ("webcam, dslr and amazon are close; caltech "
                                                   "differs from all others.")
    chain = _sentence([(0, 1), (1, 2)])
    assert chain.startswith("close pairs: webcam–dslr, dslr–amazon") and "caltech" in chain
    everyone = _sentence([(a, b) for a in range(4) for b in range(a + 1, 4)])
    assert everyone.startswith("No pair differs detectably")


def test_describe_all_differ_names_closest_and_farthest():
    D = np.array([[0, .1, .5, .4], [.1, 0, .6, .5], [.5, .6, 0, .9], [.4, .5, .9, 0]])
    s = _sentence([], mmd=D)
    assert "closest are webcam and dslr (MMD² 0.1)" in s
    assert "amazon is the farthest" in s          # mean .667 vs caltech .6
    two = describe(["a", "b"], np.array([[0, .2], [.2, 0]]), np.array([[1, .3], [.3, 1]]), 0.05)
    assert two.startswith("a and b are close")
    two = describe(["a", "b"], np.array([[0, .2], [.2, 0]]), np.array([[1, .05], [.05, 1]]),
                   0.05)
    assert two == "a and b differ (p <= 0.05)."                 # at the boundary: differ
    assert "no permutation test" in describe(["a", "b"], np.eye(2), None, 0.05)


# ------------------------------------------------------------------------- analysis -------
def _domains(seed=0):
    """Unequal sizes; 'b' is 'a' again, 'c' is moved (and has another class mix)."""
    rng = np.random.default_rng(seed)
    means = np.array([[0, 0, 0], [3, 0, 0]])
    ya, yb, yc = rng.integers(0, 2, 70), rng.integers(0, 2, 45), (rng.random(55) < .8) * 1
    X = {"a": means[ya] + rng.normal(size=(70, 3)), "b": means[yb] + rng.normal(size=(45, 3)),
         "c": means[yc] + rng.normal(size=(55, 3)) + [0, 2.5, 0]}
    return X, {"a": ya.astype(str), "b": yb.astype(str), "c": yc.astype(str)}


def test_analysis_finds_the_moved_domain_and_per_class_shift():
    X, y = _domains()
    res = analyse_shift(X, y, permutations=50, random_state=0)
    assert res.names == ["a", "b", "c"] and res.sizes == [70, 45, 55]
    assert res.permutations_used["pairs"] == 120             # raised from 50 for 3 tests
    assert res.sentence == "a and b are close; c differs from all others."
    assert res.mmd2[0, 2] > 10 * abs(res.mmd2[0, 1])
    np.testing.assert_allclose(res.mmd2, res.mmd2.T)
    assert res.differ()[0, 2] and not res.differ()[0, 1]
    # per class: class 0 and 1 both moved between a and c, not between a and b
    ac = [t for t in res.per_class if (t["a"], t["b"]) == ("a", "c")]
    ab = [t for t in res.per_class if (t["a"], t["b"]) == ("a", "b")]
    assert len(ac) == len(ab) == 2 and all(t["differ"] for t in ac)
    assert not any(t["differ"] for t in ab)
    assert res.class_share["c"]["1"] == pytest.approx(np.mean(y["c"] == "1"))
    assert res.class_share["c"]["1"] > res.class_share["a"]["1"]
    json.dumps(res.to_dict(), allow_nan=False)               # plain JSON


def test_analysis_caps_rows_and_is_seeded():
    X, _ = _domains()
    one = analyse_shift(X, permutations=20, max_rows=30, random_state=1)
    assert one.used == [30, 30, 30] and one.sizes == [70, 45, 55]
    assert all(p["n_a"] == 30 for p in one.pairs)
    again = analyse_shift(X, permutations=20, max_rows=30, random_state=1)
    np.testing.assert_array_equal(one.mmd2, again.mmd2)
    other = analyse_shift(X, permutations=20, max_rows=30, random_state=2)
    assert not np.array_equal(one.mmd2, other.mmd2)
    edge = analyse_shift(X, permutations=0, max_rows=45)     # b has exactly 45: all kept
    assert edge.used == [45, 45, 45] and np.isnan(edge.p_holm[0, 1])


def test_standardizing_removes_units_but_keeps_the_shift():
    X, _ = _domains()
    scaled = {k: v * [1000.0, 1.0, 1.0] for k, v in X.items()}
    a = analyse_shift(X, permutations=0)
    b = analyse_shift(scaled, permutations=0)
    np.testing.assert_allclose(a.mmd2, b.mmd2, rtol=1e-9, atol=1e-12)
    raw = analyse_shift(scaled, permutations=0, standardize=False)
    # in raw units the feature in thousands dominates and hides the shift of feature 2
    assert raw.mmd2[0, 2] < 0.5 * a.mmd2[0, 2]


@pytest.mark.parametrize("bad, message", [
    ({"a": np.zeros((5, 2))}, "at least two"),
    ({"a": np.zeros((5, 2)), "b": np.zeros((5, 3))}, "different feature counts"),
    ({"a": np.zeros((5, 2)), "b": np.zeros((1, 2))}, "['b'] have fewer than 2 rows"),
])
def test_analysis_refuses_what_it_cannot_measure(bad, message):
    with pytest.raises(ValueError, match=message.replace("[", r"\[").replace("]", r"\]")):
        analyse_shift(bad, permutations=0)


def test_domain_map_reproduces_distances():
    rng = np.random.default_rng(0)
    pts = rng.normal(size=(4, 2))
    D2 = ((pts[:, None] - pts[None]) ** 2).sum(-1)
    xy = domain_map(D2)
    got = np.sqrt(((xy[:, None] - xy[None]) ** 2).sum(-1))
    np.testing.assert_allclose(got, np.sqrt(D2), atol=1e-8)
    two = domain_map(np.array([[0, 4.0], [4.0, 0]]))
    assert np.linalg.norm(two[0] - two[1]) == pytest.approx(2.0)
    # not Euclidean (a triangle inequality fails): finite coordinates, never NaN
    odd = domain_map(np.array([[0, 1, 9, 1], [1, 0, 1, 9], [9, 1, 0, 1], [1, 9, 1, 0.0]]) ** 2)
    assert np.isfinite(odd).all()


# ------------------------------------------------------------------------ the command ------
def _files(tmp_path, *, one_file=False):
    X, y = _domains()
    frames = {k: pd.DataFrame(v, columns=["f1", "f2", "f3"]).assign(label=y[k]) for k, v in
              X.items()}
    if one_file:
        df = pd.concat([f.assign(site=k) for k, f in frames.items()])
        df.to_csv(tmp_path / "all.csv", index=False)
        return [str(tmp_path / "all.csv")]
    paths = []
    for k, f in frames.items():
        f.to_csv(tmp_path / f"{k}.csv", index=False)
        paths.append(str(tmp_path / f"{k}.csv"))
    return paths


def test_shift_one_file_per_domain_prints_matrix_and_sentence(tmp_path, capsys):
    files = _files(tmp_path)
    assert cli.main(["shift", *files, "--label-column", "label", "--permutations", "30"]) == 0
    out = capsys.readouterr().out
    assert "MMD² between domains" in out and "Tests, pair by pair" in out
    assert "a and b are close; c differs from all others." in out
    assert "Per-class shift" in out and "Class shares per domain" in out
    assert "120 permutations per test (raised from 30" in out


def test_shift_domain_column_equals_one_file_per_domain(tmp_path, capsys):
    sep = tmp_path / "sep"
    sep.mkdir()
    files = _files(sep)
    assert cli.main(["shift", *files, "--label-column", "label", "--permutations", "0",
                     "--report", str(tmp_path / "a.json")]) == 0
    assert cli.main(["shift", *_files(tmp_path, one_file=True), "--domain-column", "site",
                     "--label-column", "label", "--permutations", "0", "--report",
                     str(tmp_path / "b.json")]) == 0
    a, b = (json.loads((tmp_path / f"{n}.json").read_text())["analysis"] for n in "ab")
    assert a["names"] == b["names"] == ["a", "b", "c"]
    np.testing.assert_allclose(a["mmd2"], b["mmd2"])
    assert a["per_class"] == b["per_class"]


def test_shift_reports_by_extension_never_overwrite(tmp_path, capsys):
    files = _files(tmp_path)
    mine = tmp_path / "r.json"
    mine.write_text("mine")
    assert cli.main(["shift", *files, "--permutations", "0", "--report",
                     str(tmp_path / "r.md"), "--label-column", "label"]) == 0
    assert (tmp_path / "r.md").read_text().startswith("# shiftlearn shift: 3 domains")
    assert json.loads(mine.read_text())["analysis"]["names"] == ["a", "b", "c"]
    # a JSON file named on the command line is never the one written beside the HTML
    html_path = tmp_path / "s.html"
    assert cli.main(["shift", *files, str(tmp_path / "s.json"), "--permutations", "0",
                     "--report", str(html_path)]) == 2
    assert "s.json: no such file" in capsys.readouterr().err
    assert cli.main(["shift", *files, "--permutations", "0", "--report", str(html_path)]) == 0
    text = html_path.read_text()
    assert text.count('class="figure"') == 3 and "data:image/png;base64," in text
    assert "http://" not in text and "https://" not in text and "<script" not in text


def _one_error_line(capsys) -> str:
    err = capsys.readouterr().err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("shiftlearn shift: error: "), err
    return lines[0]


def test_shift_errors_are_one_line(tmp_path, capsys):
    files = _files(tmp_path)
    assert cli.main(["shift", files[0]]) == 2
    assert "give one file per domain, or name the column" in _one_error_line(capsys)
    assert cli.main(["shift", files[0], "--domain-column", "label"]) == 0  # two values: ok
    capsys.readouterr()
    pd.DataFrame({"x": [1.0, 2, 3], "d": ["s", "s", "s"]}).to_csv(tmp_path / "one.csv",
                                                               index=False)
    assert cli.main(["shift", str(tmp_path / "one.csv"), "--domain-column", "d"]) == 2
    assert "holds one domain ('s')" in _one_error_line(capsys)
    pd.DataFrame({"x": [1.0, 2, 3]}).to_csv(tmp_path / "narrow.csv", index=False)
    assert cli.main(["shift", files[0], str(tmp_path / "narrow.csv")]) == 2
    assert "feature columns" in _one_error_line(capsys)
    assert cli.main(["shift", *files, "--report", str(tmp_path / "no" / "r.html")]) == 2
    assert "the folder" in _one_error_line(capsys)
    assert cli.main(["shift", *files, "--report", str(tmp_path / "r.txt")]) == 2
    assert "unknown extension '.txt'" in _one_error_line(capsys)
    assert cli.main(["shift", files[0], files[0]]) == 2
    assert "the same file is given twice" in _one_error_line(capsys)
    with pytest.raises(SystemExit) as exc:
        cli.main(["shift", *files, "--max-rows", "1"])
    assert exc.value.code == 2


# ---------------------------------------------------- end to end, as a person would ------
def _exe():
    exe = shutil.which("shiftlearn", path=str(Path(sys.executable).parent))
    if exe is None:
        pytest.skip("the shiftlearn entry point is not installed beside this Python")
    return exe


def test_shift_on_office_caltech_files(tmp_path, data_home):
    """The four Office+Caltech domains written as CSV files, as a user would have them:
    webcam and dslr are the closest pair (the literature's observation)."""
    from shiftlearn.datasets import load_office_caltech

    ds = load_office_caltech(data_home)
    files = []
    for d in ds.domain_names:
        X = ds.get(d, preprocess=False)[0]
        pd.DataFrame(X).add_prefix("f").to_csv(tmp_path / f"{d}.csv", index=False)
        files.append(f"{d}.csv")
    run = subprocess.run([_exe(), "shift", *files, "--max-rows", "100", "--permutations", "100",
                          "--report", "oc.json"], cwd=tmp_path, capture_output=True, text=True,
                         env={**os.environ, "SHIFTLEARN_DATA": data_home})
    assert run.returncode == 0, run.stderr
    res = json.loads((tmp_path / "oc.json").read_text())["analysis"]
    D = np.array(res["mmd2"], dtype=float)
    iu = np.triu_indices(4, 1)
    closest = {res["names"][iu[0][np.argmin(D[iu])]], res["names"][iu[1][np.argmin(D[iu])]]}
    assert closest == {"webcam", "dslr"}
    assert any(f"the closest are {a} and {b}" in run.stdout
               for a, b in (("webcam", "dslr"), ("dslr", "webcam")))
    bad = subprocess.run([_exe(), "shift", "amazon.csv", "nothere.csv"], cwd=tmp_path,
                         capture_output=True, text=True)
    assert bad.returncode == 2 and "Traceback" not in bad.stderr
    assert bad.stderr.strip().splitlines() == [
        "shiftlearn shift: error: nothere.csv: no such file; check the path."]
