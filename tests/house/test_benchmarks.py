"""The benchmark scripts stay importable and keep the layout of ``benchmarks/README.md``.

Importing a script runs its module level only (imports, constants; ``main`` is behind
``if __name__ == "__main__"``), so a rename in the library that breaks a benchmark, including
the internals some scripts measure on purpose, fails here in seconds instead of at the next
paper-scale run. The layout checks hold the naming scheme: every script in its subpackage
folder is listed in the README, every results file is named after a script of its folder, and
``write_results`` refuses any other name.
"""

from __future__ import annotations

import ast
import importlib.util
import json
import os
import sys
from pathlib import Path

import numpy as np
import pytest

BENCH = Path(__file__).resolve().parents[2] / "benchmarks"
FOLDERS = ("adaptation", "mapping", "reweighting", "labelshift", "kernels", "generalization",
           "boosting", "model_selection", "federated", "datasets")
# every script: the subpackage folders and the ones still at the top (mutation testing, ...);
# not the speed suite (speed/: pytest-benchmark cases, make bench)
SCRIPTS = sorted(p for p in [*BENCH.glob("*/*.py"), *BENCH.glob("*.py")]
                 if not p.name.startswith(("test_", "_"))
                 and p.parent.name not in ("scratch", "speed"))


@pytest.fixture
def bench_path(monkeypatch):
    """``benchmarks/`` and its folders on ``sys.path``; modules and environment restored."""
    env = dict(os.environ)
    monkeypatch.setattr(sys, "path", [str(BENCH), *[str(BENCH / f) for f in FOLDERS], *sys.path])
    yield
    for name, module in list(sys.modules.items()):  # the scripts only, not what they import
        if str(getattr(module, "__file__", None) or "").startswith(str(BENCH)):
            del sys.modules[name]
    os.environ.clear()
    os.environ.update(env)


def _import(path: Path):
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[path.stem] = module
    spec.loader.exec_module(module)
    return module


def test_folders_hold_the_scripts():
    assert {p.parent.name for p in SCRIPTS} >= set(FOLDERS)
    names = [p.stem for p in SCRIPTS]
    assert len(names) == len(set(names)), "script names must be unique across the folders"


@pytest.mark.parametrize("path", SCRIPTS, ids=lambda p: str(p.relative_to(BENCH)))
def test_script_imports(path, bench_path):
    module = _import(path)
    assert callable(getattr(module, "main", None)), f"{path.name} has no main()"


@pytest.mark.parametrize("path", [p for p in SCRIPTS if p.parent.name in FOLDERS],
                         ids=lambda p: str(p.relative_to(BENCH)))
def test_script_listed_and_names_its_results(path):
    readme = (BENCH / "README.md").read_text()
    assert f"`{path.name}`" in readme, f"{path.name} is missing from benchmarks/README.md"
    calls = [node for node in ast.walk(ast.parse(path.read_text()))
             if isinstance(node, ast.Call) and getattr(node.func, "id", "") == "write_results"]
    assert calls, f"{path.name} never calls write_results"
    for call in calls:
        arg = call.args[0]
        if isinstance(arg, ast.Constant):
            assert arg.value == path.stem or arg.value.startswith(path.stem + "_"), arg.value


@pytest.mark.parametrize("folder", FOLDERS)
def test_results_are_named_after_a_script(folder, bench_path):
    common = _import(BENCH / "_common.py")
    stems = {p.stem for p in (BENCH / folder).glob("*.py")}
    results = sorted((BENCH / folder / "results").glob("*.md"))
    assert results, f"benchmarks/{folder}/results has no published results"
    for md in results:
        assert any(md.stem == s or md.stem.startswith(s + "_") for s in stems), md.name
        data = common.read_results(common.results_json(md))
        assert {"title", "command", "machine", "results"} <= set(data), md.name


def test_no_tracked_file_is_large():
    """Large raw outputs stay out of git or are compressed: no tracked file over 300 KB."""
    import subprocess

    root = BENCH.parent
    try:
        files = subprocess.run(["git", "ls-files", "-z"], cwd=root, capture_output=True,
                               check=True).stdout.decode().split("\0")
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("not a git checkout")
    large = {f: (root / f).stat().st_size for f in files
             if f and (root / f).is_file() and (root / f).stat().st_size > 300_000}
    assert not large, f"tracked files over 300 KB: {large}"


def test_large_results_are_gzipped_and_read_back(bench_path, tmp_path, monkeypatch):
    common = _import(BENCH / "_common.py")
    script = tmp_path / "adaptation" / "rf_demo.py"
    monkeypatch.setattr(common, "MAX_PLAIN_JSON", 1_000)
    big = {"x": list(range(1_000))}
    md = common.write_results("rf_demo", "T", "body", big, {"cpu": "test"}, script=script)
    assert common.results_json(md) == md.with_suffix(".json.gz")
    assert not md.with_suffix(".json").exists()
    first = md.with_suffix(".json.gz").read_bytes()
    assert common.read_results(md.with_suffix(".json.gz"))["results"] == big
    common.write_results("rf_demo", "T", "body", big, {"cpu": "test"}, script=script)
    assert md.with_suffix(".json.gz").read_bytes() == first      # the same bytes on a rerun
    md = common.write_results("rf_demo", "T", "body", {"x": 1}, {"cpu": "test"}, script=script)
    assert common.results_json(md) == md.with_suffix(".json")   # small again: plain, gz gone
    assert not md.with_suffix(".json.gz").exists()
    assert common.results_json(tmp_path / "none.md") is None


def test_write_results_uses_the_callers_folder_and_name(bench_path, tmp_path, monkeypatch):
    common = _import(BENCH / "_common.py")
    script = tmp_path / "adaptation" / "rf_demo.py"
    machine = {"cpu": "test"}
    md = common.write_results("rf_demo_variant", "T", "body", {"x": 1}, machine, script=script)
    assert md == tmp_path / "adaptation" / "results" / "rf_demo_variant.md"
    assert json.loads(md.with_suffix(".json").read_text())["results"] == {"x": 1}
    with pytest.raises(ValueError, match="does not start with the script's name 'rf_demo'"):
        common.write_results("other", "T", "body", {}, machine, script=script)
    monkeypatch.setenv(common.SCRATCH_ENV, str(tmp_path / "scratch"))
    md = common.write_results("rf_demo", "T", "body", {}, machine, script=script)
    assert md == tmp_path / "scratch" / "rf_demo.md"


def test_regenerate_compares_results_and_skips_timings(bench_path):
    """benchmarks/regenerate.py: equal results are identical whatever the timings; a changed
    accuracy or label differs; a last-bit change is round-off."""
    regen = _import(BENCH.parent / "tools" / "regenerate.py")
    old = {"title": "T", "command": "python x.py", "machine": {"cpu": "a"},
           "results": {"rows": [{"method": "TCA", "accuracy": 0.5, "fit_s": 1.0,
                                 "wall / HGB 1 thr": 2.0, "peak MB": 300}],
                       "timings": {"total": 3.0}, "best": "TCA", "nan": float("nan")}}
    new = json.loads(json.dumps(old))
    new["command"], new["machine"] = "python y.py", {"cpu": "b"}
    new["results"]["rows"][0].update({"fit_s": 9.0, "wall / HGB 1 thr": 7.0, "peak MB": 1})
    new["results"]["timings"]["total"] = 4.0
    res = regen.compare(old, new)
    assert res["verdict"] == "identical" and res["n_diffs"] == 0
    for key in ("configuration", "n_candidates", "n_S", "||mean_s - mean_t||", "min k"):
        assert not (regen.VOLATILE.search(key) or regen.VOLATILE_UNIT.search(key)), key
    for key in ("fit_s", "wall s", "time (s)", "rows/s", "speed-up", "date_utc", "peak MB",
                "wire_bytes_up", "SCA fit / T_K", "fit/ZtZ", "slopes",
                "OPENBLAS_NUM_THREADS", "client_before_fit_mb", "worker_start_mb",
                "BBSE (soft)|s", "skada / this", "skada_vs_ours", "ours_vs_floor"):
        assert regen.VOLATILE.search(key) or regen.VOLATILE_UNIT.search(key), key
    for key in ("up_bytes", "upload / client (bytes)", "gap closed (lodo / rbf / lin)",
                "rff_slopes", "BBSE|err", "subspace_tca_vs_skada", "ours_vs_skada_acc"):
        assert not (regen.VOLATILE.search(key) or regen.VOLATILE_UNIT.search(key)), key
    assert res["compared"] == 5 and res["skipped"] == 4      # title, method, accuracy, best, nan
    new["results"]["rows"][0]["accuracy"] = 0.5 * (1 + 1e-12)
    assert regen.compare(old, new)["verdict"] == "round-off"
    old["results"]["tiny"], new["results"]["tiny"] = 1e-14, 3e-14      # a round-off diagnostic
    assert regen.compare(old, new)["verdict"] == "round-off"
    new["results"]["rows"][0]["accuracy"] = 0.51
    new["results"]["best"] = "SCA"
    res = regen.compare(old, new)
    assert res["verdict"] == "differs" and res["n_diffs"] == 2
    assert res["diffs"][0][0] == "/results/best"
    new["results"]["rows"].append({})
    assert "<2 items>" in str(regen.compare(old, new)["diffs"])
    # a key skipped in one file only
    a = {"title": "T", "results": {"runs": "0.5, 0.6", "acc": 1.0}}
    b = {"title": "T", "results": {"runs": "0.9, 0.7", "acc": 1.0}}
    assert regen.compare(a, b)["verdict"] == "differs"
    assert regen.compare(a, b, "subspace_tca_vs_skada.json")["verdict"] == "identical"


def test_regenerate_recompares_a_kept_rerun(bench_path, tmp_path, monkeypatch):
    """--recompare: the kept rerun is compared again with the published file (no rerun)."""
    regen = _import(BENCH.parent / "tools" / "regenerate.py")
    monkeypatch.setattr(regen, "ROOT", tmp_path)
    monkeypatch.setattr(regen, "KEEP_DIR", tmp_path / "kept")
    pub = tmp_path / "r.json"
    assert regen.recompare(pub, None) is None                  # nothing kept: nothing to say
    doc = {"title": "T", "command": "python r.py", "results": {"acc": 0.5, "fit_s": 1.0}}
    pub.write_text(json.dumps(doc))
    (tmp_path / "kept").mkdir()
    doc["results"]["fit_s"] = 2.0
    (tmp_path / "kept" / "r.json").write_text(json.dumps(doc))
    res = regen.recompare(pub, {"wall_s": 3.0})
    assert res["verdict"] == "identical" and res["wall_s"] == 3.0 and res["file"] == "r.json"
    doc["results"]["acc"] = 0.6
    (tmp_path / "kept" / "r.json").write_text(json.dumps(doc))
    assert regen.recompare(pub, None)["verdict"] == "differs"


def test_regenerate_report_keeps_the_published_checks(bench_path, tmp_path):
    """A fresh clone has no checkpoint of checks: the table is rebuilt from the published
    checks with this machine's over them, never from the new checks alone."""
    regen = _import(BENCH.parent / "tools" / "regenerate.py")
    published = tmp_path / "regenerate.json"
    published.write_text(json.dumps({"results": {"checks": {
        "a.json": {"verdict": "identical"}, "b.json": {"verdict": "differs"}}}}))
    store = regen.PartsFile(tmp_path / "_parts.json")
    assert regen.all_checks(store, published) == {"a.json": {"verdict": "identical"},
                                                  "b.json": {"verdict": "differs"}}
    store.save("b.json", {"verdict": "round-off"})
    store.save("c.json", {"verdict": "identical"})
    checks = regen.all_checks(store, published)
    assert [checks[k]["verdict"] for k in ("a.json", "b.json", "c.json")] == [
        "identical", "round-off", "identical"]
    assert regen.all_checks(store, tmp_path / "missing.json") == store.load()


def test_regenerate_report_names_the_unchecked_published_files(bench_path, tmp_path,
                                                               monkeypatch):
    """The table says how many published results files are checked and names the others
    (checkpoints, ``_*``, are not published)."""
    regen = _import(BENCH.parent / "tools" / "regenerate.py")
    monkeypatch.setattr(regen, "ROOT", tmp_path)
    res = tmp_path / "benchmarks" / "kernels" / "results"
    res.mkdir(parents=True)
    for name in ("a.json", "b.json", "_a_parts.json"):
        (res / name).write_text("{}")
    assert regen.published_files() == ["benchmarks/kernels/results/a.json",
                                       "benchmarks/kernels/results/b.json"]
    written = {}
    monkeypatch.setattr(regen, "write_results", lambda name, title, body, data, machine:
                        written.update(body=body))
    check = {"file": "benchmarks/kernels/results/a.json", "verdict": "identical", "compared": 1,
             "skipped": 0, "max_rel": 0.0, "wall_s": 1.0}
    regen.report({"benchmarks/kernels/results/a.json": check}, {})
    assert "1 of the 2 published results files" in written["body"]
    assert "Not checked: `benchmarks/kernels/results/b.json`." in written["body"]
    regen.report({f: {**check, "file": f} for f in regen.published_files()}, {})
    assert "Every published results file is checked." in written["body"]


def test_regenerate_parts_name_real_scripts_and_options(bench_path, monkeypatch):
    """Each recipe of a table built from parts runs a script that exists, with options its
    parser accepts (the parser only: the parts take hours)."""
    import argparse
    import inspect

    regen = _import(BENCH.parent / "tools" / "regenerate.py")

    class Parsed(Exception):
        pass

    original = argparse.ArgumentParser.parse_args

    def parse_then_stop(self, args=None, namespace=None):
        original(self, args, namespace)            # SystemExit(2) on an unknown option
        raise Parsed

    monkeypatch.setattr(argparse.ArgumentParser, "parse_args", parse_then_stop)
    for name, commands in regen.PARTS.items():
        assert sorted(BENCH.glob(f"*/results/{name}*")), name     # .json or .json.gz
        for command in commands:
            argv = regen._script_of(command)
            assert (BENCH.parent / argv[1]).exists(), command
            monkeypatch.setattr(sys, "argv", argv[1:])
            main = _import(BENCH.parent / argv[1]).main
            with pytest.raises(Parsed):
                main(argv[2:]) if inspect.signature(main).parameters else main()


def test_former_code_is_read_from_the_history(bench_path):
    """No frozen copy of a former solver in the tree: a benchmark reads it from git, and a
    clone without that commit gets an error that names the fix."""
    import subprocess

    common = _import(BENCH / "_common.py")
    try:
        subprocess.run(["git", "cat-file", "-e", "8cd2467^{commit}"], cwd=BENCH.parent,
                       check=True, capture_output=True)
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("not a full clone")
    import numpy as np

    from shiftlearn.federated._data import ClientData

    blobs = common.function_from_git("8cd2467", "shiftlearn/federated/_data.py",
                                     "make_federated_blobs", {"np": np, "ClientData": ClientData})
    parts = blobs(3, 6, seed=1)
    assert [p.domain_id for p in parts] == [1, 2, -3] and parts[0].X.shape == (6, 5)
    with pytest.raises(RuntimeError, match="defines no function 'nothing'"):
        common.function_from_git("8cd2467", "shiftlearn/federated/_data.py", "nothing", {})
    with pytest.raises(RuntimeError, match="not in this clone.*git fetch --unshallow"):
        common.from_git("0" * 40, "benchmarks/_common.py")
    assert not list(BENCH.glob("*/_*legacy*.py"))


def test_mutation_report_refuses_to_replace_the_published_table_with_some_groups(
        bench_path, tmp_path, monkeypatch):
    """A run of some groups on a machine without the other groups' parts must not overwrite
    the published table (which covers every group); with a scratch folder it writes there."""
    mutation = _import(BENCH.parent / "tools" / "mutation.py")
    common = sys.modules["_common"]
    parts = common.PartsFile(tmp_path / "_mutation_parts.json")
    monkeypatch.setattr(mutation, "PARTS", parts)
    monkeypatch.delenv(common.SCRATCH_ENV, raising=False)
    group = next(iter(mutation.GROUPS))
    parts.save(group, {"modules": {}, "commit": "abc1234", "uncommitted": [], "seconds": 1.0,
                       "tests": []})
    with pytest.raises(SystemExit, match="lack the group"):
        mutation.report({"cpu": "test"})


def test_every_library_name_a_script_imports_exists():
    """Imports inside functions run only when the part that needs them runs (hours later): a
    renamed library name must fail here, not at the next paper-scale run."""
    import importlib

    missing = []
    for path in [*SCRIPTS, *BENCH.glob("*/_*.py"), *(BENCH.parent / "tools").glob("*.py")]:
        for node in ast.walk(ast.parse(path.read_text())):
            if (isinstance(node, ast.ImportFrom) and node.module
                    and node.module.split(".")[0] == "shiftlearn" and node.level == 0):
                module = importlib.import_module(node.module)
                missing += [f"{path.name}: {node.module}.{a.name}" for a in node.names
                            if not hasattr(module, a.name)
                            and not _is_submodule(f"{node.module}.{a.name}")]
    assert not missing, missing


def _is_submodule(name: str) -> bool:
    import importlib.util

    try:
        return importlib.util.find_spec(name) is not None
    except ModuleNotFoundError:                 # the parent is a module, not a package
        return False


@pytest.mark.parametrize("scoring", [None, "circular"])
def test_catalog_margin_rule_is_the_selectors(scoring, bench_path):
    """R1 of the catalog's report, computed from the parts' per-fold criteria, chooses what
    ``AdaptationSelector(margin="se")`` chooses on the same folds and candidates."""
    from shiftlearn.datasets import make_sca_toy
    from shiftlearn.model_selection import (
        AdaptationSelector,
        CircularValidation,
        SourceKFold,
        method_label,
    )

    cat = _import(BENCH / "model_selection" / "selection_catalog.py")
    X, y, sd = make_sca_toy(n_per_cluster=20, random_state=1)
    crit = "circular" if scoring else "source-cv"
    sel = AdaptationSelector(["CORAL", "SA", "TCA"], cv=SourceKFold(3, random_state=0),
                             scoring=CircularValidation() if scoring else None, margin="se",
                             memory=None).fit(X, y, sample_domain=sd)
    res = sel.search_.cv_results_
    k = len(res["params"])
    o = {"labels": [method_label(p["adapter"]) for p in res["params"]],
         "criteria": {crit: list(res["mean_test_score"])},
         "criteria_folds": {crit: [[res[f"split{i}_test_score"][j] for i in range(3)]
                                   for j in range(k)]},
         "target": [0.0] * k}
    assert o["labels"][0] == "none"
    assert o["labels"][cat._choose_margin(o, crit)] == sel.choice_
    best = int(np.nanargmax(res["mean_test_score"]))
    if o["labels"][best] != "none":            # the margin the selector applied is R1's
        assert sel.margin_ == pytest.approx(res["std_test_score"][best] / np.sqrt(3))


def test_catalog_single_method_chosen_without_the_task(bench_path):
    """The catalog's leave-one-task-out choice never reads the task it is scored on, skips
    methods missing on a task and ``auto``, breaks ties to the first; the paired interval
    brackets the mean and shrinks to it for a constant difference."""
    cat = _import(BENCH / "model_selection" / "selection_catalog.py")
    acc = {cat.AUTO: np.array([99.0, 99.0, 99.0, 99.0]),
           "A": np.array([90.0, 10.0, 10.0, 10.0]),      # best mean, only by task 0
           "B": np.array([20.0, 20.0, 20.0, 20.0]),
           "C": np.array([20.0, 20.0, 20.0, 20.0]),      # ties with B: B comes first
           "D": np.array([np.nan, 95.0, 95.0, 95.0])}    # missing on a task: never chosen
    scores, picks = cat.leave_one_task_out(acc)
    assert picks == ["B", "A", "A", "A"]
    np.testing.assert_array_equal(scores, [20.0, 10.0, 10.0, 10.0])
    acc["A"][0] = -1e9                                   # task 0's own value moves nothing
    assert cat.leave_one_task_out(acc)[1][0] == "B"
    diff = np.array([1.0, -2.0, 4.0, 0.5, 3.0])
    lo, hi = cat.paired_interval(diff)
    assert lo < diff.mean() < hi and diff.min() <= lo and hi <= diff.max()
    assert cat.paired_interval(np.full(7, 1.5)) == (1.5, 1.5)
