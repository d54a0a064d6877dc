"""Mutation testing of the core modules with mutmut 3 (``make mutation``; issue #23).

mutmut seeds small bugs (a flipped comparison, a changed constant, a dropped argument) into a
copy of the code, one at a time, and reruns the tests that call the mutated function. A mutant
the tests do not notice "survives". The score of a module is the share of *behaviour-changing*
mutants killed: ``(killed + timeout) / (total - equivalent - wording - skipped)``, where
``equivalent`` are survivors judged by hand to change no behaviour (listed, with the reason,
in ``tools/mutation_equivalent.toml`` and in the results file) and ``wording`` survivors
that only change the letter case of an error/warning message or wrap it in mutmut's ``XX``
(detected automatically: same syntax tree once the strings inside ``raise`` and ``warn`` are
lower-cased; the error is still raised, with the same words).

Design decisions
----------------
* **Module group by module group.** Each group (``GROUPS``) runs in its own work folder
  ``.mutation/<group>/`` holding a snapshot of ``shiftlearn/`` and only the group's test files,
  with a ``pyproject.toml`` whose ``[tool.mutmut]`` is the repository's (shared settings) plus
  the group's ``only_mutate`` and test selection. So a group takes minutes, not hours, the
  repository's own ``mutants/`` is never touched, and the snapshot records the commit measured
  (the results name it, with any uncommitted change to the group's files).
* **The commit is measured**, not the working tree: the snapshot is ``git archive`` of the
  commit ``HEAD`` names when the group starts, and that commit is the one reported even if
  colleagues commit during the run (another engineer's half-done edit cannot fail the
  baseline run); ``--worktree`` snapshots
  the working tree instead and the results then list the group's uncommitted files.
* **One worker** (``--max-children 1``) and one BLAS thread: the machine is shared.
* **Results** are kept per group in ``tools/results/_mutation_parts.json`` (so groups can
  be rerun one at a time), then ``tools/results/mutation.md`` and ``.json`` are written
  from all groups (``docs/results/mutation.md`` is generated from them by
  ``tools/results_pages.py``, so the docs never quote stale scores).
* **Rerunning survivors** (``--survivors``): after tests are added, only the mutants the
  last run did not kill are run again (mutmut 3 reruns named mutants and collects the new
  tests' coverage), in the same snapshot of the code; a killed mutant stays killed (tests
  were added), so the score is the full run's at a fraction of the time. The results then
  name the commit of the code and that of the tests; the group's test files may grow, never
  shrink.
* **Updating a run** (``--incremental``): after a small change to a group's code, mutmut's
  own function hashes (kept in the work folder's meta files) say which functions changed;
  only their mutants are made and run again, on a snapshot of ``HEAD``, and the results
  name ``HEAD`` and the run they were updated from. A change whose effect can reach other
  functions' mutants (a shared helper, a test removed) needs the whole group.
* **Equivalent mutants** are matched by mutant name *and* mutated line: when the code moves
  and mutmut renumbers, a stale judgement is not applied silently; it is reported as stale.

Usage::

    python tools/mutation.py                 # every group
    python tools/mutation.py kernels sca     # some groups
    python tools/mutation.py --report        # rewrite the results from the stored parts
    python tools/mutation.py sca --survivors # rerun the last run's survivors, new tests
    python tools/mutation.py rf --incremental  # bring the last run to HEAD (changed functions)
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
import time
from pathlib import Path

try:
    import tomllib
except ModuleNotFoundError:     # Python 3.10
    import tomli as tomllib

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))  # _common
from _common import (  # noqa: E402
    SCRATCH_ENV,
    PartsFile,
    header,
    markdown_table,
    write_results,
)

ROOT = Path(__file__).resolve().parents[1]
WORK = ROOT / ".mutation"
PARTS = PartsFile(Path(__file__).resolve().parent / "results" / "_mutation_parts.json")
EQUIVALENT = Path(__file__).resolve().parent / "mutation_equivalent.toml"
TARGET = 0.95

#: group -> (modules to mutate, test files run against them); missing test files are skipped
GROUPS: dict[str, tuple[list[str], list[str]]] = {
    # test_dask.py: mmd2_rff's Dask path (per-block feature sums, the bandwidth rows) lives
    # in kernels.py; only its tests of mmd2_rff, since every Dask fit reaches the kernels and
    # would make each mutant run the whole Dask file (about 15 s instead of a fraction)
    "kernels": (["shiftlearn/kernels.py"],
                ["tests/kernels/test_kernels.py",
                 "tests/kernels/test_kernels_shift_invariant.py",
                 "tests/kernels/test_kernel_families.py", "tests/kernels/test_rf_kernels.py",
                 "tests/house/test_array_api.py",
                 "tests/core/test_dask.py::test_dask_mmd2_rff_equals_numpy"]),
    # test_array_api.py: the array-API path of TCA (tca_components_array_api, _fit_array_api)
    "tca": (["shiftlearn/adaptation/_tca.py"],
            ["tests/adaptation/test_tca.py", "tests/house/test_array_api.py"]),
    # test_array_api.py: SCA's array-API route (_fit_array_api); test_memory.py: the kernel
    # and problem SCA keeps in a FitMemory
    "sca": (["shiftlearn/adaptation/_sca.py"],
            ["tests/adaptation/test_sca.py", "tests/house/test_array_api.py",
             "tests/adaptation/test_memory.py"]),
    # test_array_api.py: rf_stats_array_api and its row chunks
    "rf": (["shiftlearn/adaptation/_rf_stats.py", "shiftlearn/adaptation/_rf_solvers.py"],
           ["tests/adaptation/test_rf.py", "tests/house/test_array_api.py"]),
    # the pipeline helpers that moved down into _validation (takes_sample_domain,
    # learns_labels, warn_if_plain_pipeline, scoring_domains) are tested with the pipelines
    "validation": (["shiftlearn/_validation.py"],
                   ["tests/core/test_validation.py", "tests/compose/test_pipeline.py",
                    "tests/compose/test_meta.py"]),
    "cluster": (["shiftlearn/model_selection/_cluster_kmeans.py",
                 "shiftlearn/model_selection/_cluster_split.py"],
                ["tests/model_selection/test_cluster_split.py",
                 "tests/model_selection/test_domain_splits.py",
                 "tests/model_selection/test_dask_cluster_split.py"]),
    "marginal": (["shiftlearn/generalization/_embedding.py",
                  "shiftlearn/generalization/_marginal_base.py"],
                 ["tests/generalization/test_marginal.py",
                  "tests/generalization/test_marginal_kernels.py",
                  "tests/generalization/test_dask_marginal.py"]),
    # the split searches' numpy paths (exact_pairs, the PAVA of the pair gains, the direct
    # level) are checked against the reference implementation: its fast tests only
    "boosting": (["shiftlearn/boosting/_core.py", "shiftlearn/boosting/_splits.py"],
                 ["tests/boosting/test_boosting.py", "tests/boosting/test_core.py",
                  "tests/boosting/test_splits.py",
                  "tests/boosting/test_boosting_reference.py::test_split_searches_are_the_"
                  "reference_and_subsets_are_searched_as_in_the_batch",
                  "tests/boosting/test_boosting_reference.py::test_pair_gains_compiled_is_the_"
                  "numpy_path_bit_for_bit",
                  "tests/boosting/test_boosting_reference.py::test_compiled_loops_are_the_"
                  "numpy_paths_bit_for_bit",
                  "tests/boosting/test_boosting_reference.py::test_deep_trees_and_separable_"
                  "data_are_the_reference",
                  "tests/boosting/test_boosting_reference.py::test_the_lazy_stump_scan_skips_"
                  "features_and_keeps_the_model"]),
}

#: tests that cannot pass under mutmut whatever the mutant: they check the stack level of a
#: warning (the file it points at), and mutmut's trampoline adds a frame to every call
DESELECT = {
    # (and one that reads a user page, which the snapshot does not hold)
    "validation": ["tests/core/test_validation.py"
                   "::test_plain_pipeline_warning_points_at_the_users_line"],
    "tca": ["tests/adaptation/test_tca.py::test_default_n_components_is_clipped_on_small_data",
            "tests/house/test_array_api.py::test_array_api_docs_example_runs"],
    "marginal": ["tests/generalization/test_marginal.py"
                 "::test_marginal_warnings_point_at_the_callers_line",
                 "tests/generalization/test_dask_marginal.py::test_dask_marginal_local_cluster"],
    # (and the distributed LocalCluster tests: distributed's event-loop thread of the parent
    # does not survive mutmut's fork, so the child waits until the timeout whatever the
    # mutant; the synchronous and threaded Dask tests of the same paths still run)
    "cluster": ["tests/model_selection/test_dask_cluster_split.py"
                "::test_dask_cluster_split_local_cluster"],
}

KILLED = ("killed", "timeout", "caught by type check", "segfault", "crashed")
#: exit codes of a test process that died of a signal mutmut leaves "suspicious": SIGILL,
#: SIGABRT, SIGBUS, SIGFPE. A mutant that makes a compiled (numba) loop index out of bounds
#: corrupts memory and the test run dies: the tests failed, so the mutant is detected. (SIGTERM,
#: -15, is not among them: it came from GNU OpenMP refusing a forked child, see ``_env``.)
CRASHED = (-4, -6, -7, -8)


def _toml_value(v) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int | float):
        return repr(v)
    if isinstance(v, str):
        return json.dumps(v)
    if isinstance(v, list):
        return "[" + ", ".join(_toml_value(x) for x in v) + "]"
    raise TypeError(f"cannot write {v!r} as TOML")


def _toml_table(name: str, table: dict) -> str:
    return f"[{name}]\n" + "".join(f"{k} = {_toml_value(v)}\n" for k, v in table.items())


def _git(*args) -> str:
    return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True).stdout.strip()


def check_config() -> dict:
    """The repository's ``[tool.mutmut]``; its ``only_mutate`` must be the union of GROUPS."""
    cfg = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["mutmut"]
    union = sorted(m for mods, _ in GROUPS.values() for m in mods)
    if sorted(cfg.get("only_mutate", [])) != union:
        raise SystemExit(f"[tool.mutmut] only_mutate in pyproject.toml {cfg.get('only_mutate')} "
                         f"differs from the modules of GROUPS in {__file__}: {union}")
    return cfg


def _file(test: str) -> str:
    """The file of a test entry of GROUPS: a file, or one test of it (``file::name``)."""
    return test.split("::", 1)[0]


#: the tests' shared helper modules (tests/_*.py), beside conftest.py in every work folder
HELPERS = sorted(str(p.relative_to(ROOT)) for p in (ROOT / "tests").glob("_*.py"))


def prepare(group: str, worktree: bool = False, commit: str = "HEAD") -> tuple[Path, list[str]]:
    """A fresh work folder: a snapshot of the package (``commit``, or the working tree with
    ``worktree=True``), the group's tests and its config."""
    modules, tests = GROUPS[group]
    wd = WORK / group
    if wd.exists():
        shutil.rmtree(wd)
    wd.mkdir(parents=True)
    if worktree:
        tests = [t for t in tests if (ROOT / _file(t)).exists()]
        (wd / "tests").mkdir()
        shutil.copytree(ROOT / "shiftlearn", wd / "shiftlearn",
                        ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        for t in ["tests/conftest.py", *HELPERS, *sorted({_file(t) for t in tests})]:
            (wd / t).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / t, wd / t)
        shutil.copytree(ROOT / "docs", wd / "docs")
    else:
        tracked = set(_git("ls-tree", "-r", "--name-only", commit, "--", "tests").splitlines())
        tests = [t for t in tests if _file(t) in tracked]
        helpers = [t for t in HELPERS if t in tracked]
        # docs/: the tests that run a user page's example read it
        archive = subprocess.run(["git", "archive", commit, "shiftlearn", "docs",
                                  "tests/conftest.py", *helpers,
                                  *sorted({_file(t) for t in tests})], cwd=ROOT,
                                 capture_output=True,
                                 check=True).stdout
        subprocess.run(["tar", "-x", "-C", str(wd)], input=archive, check=True)
    _write_config(wd, group, tests)
    return wd, tests


def _write_config(wd: Path, group: str, tests: list[str]) -> None:
    """The work folder's ``pyproject.toml``: the repository's pytest options and
    ``[tool.mutmut]`` with the group's modules and test files."""
    modules, _ = GROUPS[group]
    py = tomllib.loads((ROOT / "pyproject.toml").read_text())
    mut = dict(py["tool"]["mutmut"])
    mut["only_mutate"] = modules
    mut["pytest_add_cli_args_test_selection"] = tests
    mut["also_copy"] = ["docs"]              # into mutants/, where the tests run
    for test_id in DESELECT.get(group, []):
        mut["pytest_add_cli_args"] = [*mut.get("pytest_add_cli_args", []), "--deselect", test_id]
    text = (_toml_table("tool.pytest.ini_options", py["tool"]["pytest"]["ini_options"]) + "\n"
            + _toml_table("tool.mutmut", mut))
    (wd / "pyproject.toml").write_text(text)


def _env() -> dict:
    env = dict(os.environ)
    for k in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        env[k] = "1"
    env.setdefault("SHIFTLEARN_DATA", str(ROOT.parent / "shared" / "data"))
    # numba's default layer here is GNU OpenMP, which refuses to run a parallel region in a
    # process forked after one ran (it raises SIGTERM: "fork() called from a process already
    # using GNU OpenMP"). mutmut forks every mutant from a process that ran the tests, so a
    # test with two numba threads ended every mutant it reached as "suspicious" (exit -15).
    # The workqueue layer survives the fork; the tests run one Python thread at a time.
    env["NUMBA_THREADING_LAYER"] = "workqueue"
    return env


def _mutated_line(diff: str) -> str:
    """The first added line of a mutant's diff, stripped (what the mutant changed)."""
    for line in diff.splitlines():
        if line.startswith("+") and not line.startswith("+++"):
            return line[1:].strip()
    return ""


class _MessageNormaliser(ast.NodeTransformer):
    """Lower-case the string constants inside ``raise ...`` and ``warnings.warn(...)`` and drop
    mutmut's ``XX`` markers, leaving every other node as it is."""

    def __init__(self):
        self.inside = 0

    def _visit_message(self, node):
        self.inside += 1
        self.generic_visit(node)
        self.inside -= 1
        return node

    def visit_Raise(self, node):  # noqa: N802 - ast's naming
        return self._visit_message(node)

    def visit_Call(self, node):  # noqa: N802
        f = node.func
        if (isinstance(f, ast.Attribute) and f.attr == "warn") or (
                isinstance(f, ast.Name) and f.id == "warn"):
            return self._visit_message(node)
        self.generic_visit(node)
        return node

    def visit_Constant(self, node):  # noqa: N802
        if self.inside and isinstance(node.value, str):
            return ast.copy_location(ast.Constant(node.value.replace("XX", "").lower()), node)
        return node


def _normalised(code: str) -> str:
    tree = ast.parse(textwrap.dedent(code))
    return ast.dump(_MessageNormaliser().visit(tree))


def message_wording_only(wd: Path, name: str, mod: str) -> bool:
    """True when a mutant only changes the letter case of an error or warning message or wraps
    it in ``XX`` (mutmut's string mutations): the same error is raised, worded differently."""
    import libcst as cst
    from mutmut.mutation.diff_apply import (
        read_mutant_function,
        read_mutants_module,
        read_original_function,
    )

    key = (str(wd), mod)
    if key not in _MODULES:            # the mutants file holds every mutant: parse it once
        cwd = os.getcwd()
        os.chdir(wd)
        try:
            _MODULES[key] = read_mutants_module(Path(mod))
        finally:
            os.chdir(cwd)
    module = _MODULES[key]
    orig, mut = (cst.Module([f]).code for f in (read_original_function(module, name),
                                                   read_mutant_function(module, name)))
    return orig != mut and _normalised(orig) == _normalised(mut)


_MODULES: dict = {}


def _diff(wd: Path, name: str, mod: str) -> str:
    """mutmut's diff of one mutant (in this process: ``mutmut show`` costs a start-up each)."""
    from mutmut.mutation.diff_apply import get_diff_for_mutant

    cwd = os.getcwd()
    os.chdir(wd)
    try:
        return get_diff_for_mutant(name, path=Path(mod))
    finally:
        os.chdir(cwd)


def collect(wd: Path, modules: list[str]) -> dict:
    """Status counts and the survivors (with diffs) of each module from mutmut's meta files."""
    from mutmut.stats import status_by_exit_code

    out = {}
    for mod in modules:
        meta = json.loads((wd / "mutants" / (mod + ".meta")).read_text())
        codes = meta["exit_code_by_key"]
        counts: dict[str, int] = {}
        lost: dict[str, dict] = {}
        for name, code in sorted(codes.items()):
            status = "crashed" if code in CRASHED else status_by_exit_code[code]
            counts[status] = counts.get(status, 0) + 1
            if status not in KILLED:
                diff = _diff(wd, name, mod)
                lost[name] = {"status": status, "line": _mutated_line(diff),
                              "message_only": message_wording_only(wd, name, mod)}
        out[mod] = {"counts": counts, "total": len(codes), "not_killed": lost}
    return out


def _mutmut(wd: Path, group: str, log: str, names: list[str] = ()) -> float:
    """``mutmut run`` in the group's work folder (every mutant not yet run, or ``names``), its
    output kept in ``log``; the seconds it took, or an exit naming the log on failure."""
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "mutmut", "run", "--max-children", "1",
                           *names], cwd=wd, env=_env(), capture_output=True, text=True)
    seconds = time.perf_counter() - t0
    (wd / log).write_text(proc.stdout + "\n" + proc.stderr)
    if proc.returncode != 0:
        tail = "\n".join((proc.stdout + proc.stderr).splitlines()[-30:])
        raise SystemExit(f"mutmut failed for group {group} (exit {proc.returncode}); "
                         f"log in {wd / log}:\n{tail}")
    return seconds


def _grown_tests(group: str, prev: dict, commit: str) -> tuple[list[str], set[str]]:
    """The group's test files at ``commit`` (and the files git tracks there), refused when one
    the previous run had is gone: added tests can only kill more, a removed one could revive a
    mutant."""
    tests = GROUPS[group][1]
    tracked = set(_git("ls-tree", "-r", "--name-only", commit, "--", "tests").splitlines())
    tests = [t for t in tests if _file(t) in tracked]
    if not set(prev["tests"]) <= set(tests):
        raise SystemExit(f"test files of group {group!r} were removed ({prev['tests']} -> "
                         f"{tests}): run the whole group again.")
    return tests, tracked


def run_group(group: str, worktree: bool = False) -> dict:
    modules, _ = GROUPS[group]
    # the commit is fixed before the snapshot: colleagues commit while a group runs
    commit = _git("rev-parse", "--short", "HEAD")
    wd, tests = prepare(group, worktree, commit)
    dirty = ([m for m in modules + tests if _git("status", "--porcelain", "--", m)]
             if worktree else [])
    print(f"\n## {group}: mutating {modules} against {tests}", flush=True)
    seconds = _mutmut(wd, group, "mutmut-run.log")
    res = {"modules": collect(wd, modules), "tests": tests, "seconds": round(seconds, 1),
           "commit": commit, "uncommitted": dirty,
           "date_utc": time.strftime("%Y-%m-%d %H:%M", time.gmtime())}
    PARTS.save(group, res)
    return res


def _last_run(group: str, option: str) -> tuple[dict, Path, str]:
    """The group's stored results, its work folder and ``HEAD``'s short hash; an exit that
    says to run the group first when there is no earlier run."""
    parts = PARTS.load()
    wd = WORK / group
    if group not in parts or not (wd / "mutants").is_dir():
        raise SystemExit(f"{option} needs a previous run of group {group!r} in {wd}; "
                         f"run `python tools/mutation.py {group}` first.")
    commit = _git("rev-parse", "--short", "HEAD")
    return parts[group], wd, commit


def _restore_statuses(meta_path: Path, not_killed: dict) -> None:
    """A survivors rerun leaves the mutants it did not rerun "not checked" in mutmut's meta
    file, and the results count them killed (``_keep_killed``); mutmut would run them all
    again. They get back the status the results give them: survived for the survivors,
    killed for the others; a mutant of any other status is left to be run."""
    meta = json.loads(meta_path.read_text())
    codes = meta["exit_code_by_key"]
    for name, code in codes.items():
        if code is None:
            status = not_killed.get(name, {}).get("status", "killed")
            codes[name] = {"killed": 1, "survived": 0}.get(status)
    meta_path.write_text(json.dumps(meta, indent=4))


def update_group(group: str) -> dict:
    """Bring the group's last run to ``HEAD`` without rerunning it whole: the snapshot's
    package, docs and tests are replaced by ``HEAD``'s and mutmut is run in the same work
    folder, where its meta files keep a hash of every function: it mutates again, and runs,
    only the functions whose code changed (their mutants are renumbered), and keeps the
    results of the others. This is a full run's result when the change is local (the
    unchanged functions' mutants meet the same tests through the same code); after a change
    that could alter what kills another function's mutants (a shared helper, a test moved
    out), run the group whole. The results name ``HEAD`` and the run it was updated from
    (``updated_from``)."""
    prev, wd, commit = _last_run(group, "--incremental")
    modules = GROUPS[group][0]
    tests, tracked = _grown_tests(group, prev, commit)
    for sub in ("shiftlearn", "docs", "tests"):
        if (wd / sub).exists():
            shutil.rmtree(wd / sub)
    archive = subprocess.run(["git", "archive", commit, "shiftlearn", "docs", "tests/conftest.py",
                              *[t for t in HELPERS if t in tracked],
                              *sorted({_file(t) for t in tests})], cwd=ROOT,
                             capture_output=True, check=True).stdout
    subprocess.run(["tar", "-x", "-C", str(wd)], input=archive, check=True)
    for mod in modules:
        _restore_statuses(wd / "mutants" / (mod + ".meta"), prev["modules"][mod]["not_killed"])
        # git archive keeps the commit's times; mutmut re-mutates a file newer than its mutant
        os.utime(wd / mod)
    _write_config(wd, group, tests)
    print(f"\n## {group}: updating the run of {prev['commit']} to {commit}", flush=True)
    seconds = _mutmut(wd, group, "mutmut-update.log")
    res = dict(prev, modules=collect(wd, modules), tests=tests, commit=commit,
               updated_from=prev.get("updated_from") or prev["commit"], tests_commit=None,
               seconds=round(prev["seconds"] + seconds, 1), uncommitted=[],
               date_utc=time.strftime("%Y-%m-%d %H:%M", time.gmtime()))
    PARTS.save(group, res)
    return res


def rerun_survivors(group: str, only_open: bool = False) -> dict:
    """Rerun only the mutants the group's last run did not kill, against the group's test
    files as ``HEAD`` has them now (copied into the existing work folder); the mutated code
    stays the snapshot's. Adding tests cannot revive a killed mutant, so this gives the full
    run's result at a fraction of its time as long as tests were only added; the results
    name both commits (``commit`` of the code, ``tests_commit`` of the tests). With
    ``only_open``, only the survivors neither judged equivalent nor message wording are
    rerun (the others keep their status): minutes instead of the whole list, for checking
    the tests written for the open ones."""
    prev, wd, tests_commit = _last_run(group, "--survivors")
    modules = GROUPS[group][0]
    tests, _ = _grown_tests(group, prev, tests_commit)
    archive = subprocess.run(["git", "archive", tests_commit, "docs", "tests/conftest.py",
                              *sorted({_file(t) for t in tests})], cwd=ROOT,
                             capture_output=True, check=True).stdout
    # (mutmut copies tests/ and also_copy's docs/ into mutants/ on every run)
    subprocess.run(["tar", "-x", "-C", str(wd)], input=archive, check=True)
    _write_config(wd, group, tests)
    equivalent = load_equivalent()
    names = sorted(n for mod in modules for n, m in prev["modules"][mod]["not_killed"].items()
                   if not only_open or not (_wording(m) or _judged(n, m, equivalent)))
    print(f"\n## {group}: rerunning {len(names)} survivors of {prev['commit']} against the "
          f"tests of {tests_commit}", flush=True)
    if not names:                   # mutmut run without names would run every mutant
        return prev
    seconds = _mutmut(wd, group, "mutmut-survivors.log", names)
    res = dict(prev, modules=_keep_killed(collect(wd, modules), prev["modules"], set(names)),
               tests_commit=tests_commit,
               tests=tests,
               seconds=round(prev["seconds"] + seconds, 1),
               date_utc=time.strftime("%Y-%m-%d %H:%M", time.gmtime()))
    PARTS.save(group, res)
    return res


def _function_of(name: str) -> str:
    """The mutated function of a mutant's name (``pkg.mod.x_f__mutmut_12`` -> ``pkg.mod.x_f``)."""
    return name.rsplit("__mutmut_", 1)[0]


def carry_judgements(groups: list[str]) -> dict[str, int]:
    """Carry the equivalence judgements of ``groups`` over to the mutants of their last run.

    mutmut numbers mutants by position inside a function, so code added above a judged
    mutant renames it and its judgement goes stale. A judgement moves to a survivor of the
    last run when both name the same function and the same mutated line and that pair is
    unambiguous: as many survivors as judgements have it and the judgements give one reason.
    Judgements of these groups' modules that match no survivor then are deleted (the mutant
    is killed now, or its code is gone; git keeps the text). The file is rewritten in place,
    its comments kept; the counts are returned and printed for the design note."""
    parts = PARTS.load()
    survivors: dict[str, str] = {}
    for group in groups:
        if group not in parts:
            raise SystemExit(f"--carry-judgements needs a run of group {group!r}")
        for mres in parts[group]["modules"].values():
            survivors.update({n: m["line"] for n, m in mres["not_killed"].items()
                              if m["status"] == "survived" and not m.get("message_only")})
    prefixes = tuple(m[:-3].replace("/", ".") + "." for g in groups for m in GROUPS[g][0])
    judged = {n: j for n, j in load_equivalent().items() if n.startswith(prefixes)}
    exact = {n for n, j in judged.items() if survivors.get(n) == j["line"]}
    by_key: dict[tuple[str, str], list[str]] = {}
    for n in sorted(set(judged) - exact):
        by_key.setdefault((_function_of(n), judged[n]["line"]), []).append(n)
    open_by_key: dict[tuple[str, str], list[str]] = {}
    for n in sorted(set(survivors) - exact):
        open_by_key.setdefault((_function_of(n), survivors[n]), []).append(n)
    rename = {n: n for n in exact}
    for key, old in by_key.items():
        new = open_by_key.get(key, [])
        if len(new) == len(old) and len({judged[o]["reason"] for o in old}) == 1:
            rename.update(zip(old, new, strict=True))
    blocks, current = [], None
    for line in EQUIVALENT.read_text().splitlines(keepends=True):
        if line.startswith('["'):
            # a TOML basic string: class methods' names hold "\u01c1" escapes
            current = [json.loads(line[1:line.index('"]') + 1]), [line]]
            blocks.append(current)
        elif line.startswith("#") or current is None:
            blocks.append([None, [line]])
            current = None
        else:
            current[1].append(line)
    out = []
    for name, lines in blocks:
        if name is None or name not in judged:
            out += lines
        elif name in rename:
            out += [f'[{json.dumps(rename[name])}]\n', *lines[1:]]
    EQUIVALENT.write_text("".join(out))
    counts = {"judgements": len(judged), "same name": len(exact),
              "carried to a new name": len(rename) - len(exact),
              "deleted (no surviving mutant)": len(judged) - len(rename),
              "survivors": len(survivors), "survivors still open": len(survivors) - len(rename)}
    print("carried judgements:", counts, flush=True)
    return counts


def _keep_killed(modules: dict, prev: dict | None = None, rerun: set | None = None) -> dict:
    """After a survivors rerun: mutmut marks the mutants it was not asked to rerun "not
    checked" when the group's test files changed. A survivor of the last run that was not
    rerun (``prev`` and ``rerun`` given) keeps its last status; the others are exactly the ones
    the last run killed, and tests added cannot revive them, so they count as killed
    (``carried_killed``)."""
    for mod, m in modules.items():
        before = (prev or {}).get(mod, {}).get("not_killed", {})
        unchecked = [n for n, v in m["not_killed"].items() if v["status"] == "not checked"]
        if not unchecked:
            continue
        counts = m["counts"]
        del counts["not checked"]               # every one is restored or carried below
        carried = 0
        for n in unchecked:
            if n in before and n not in (rerun or set()):
                m["not_killed"][n] = before[n]
                counts[before[n]["status"]] = counts.get(before[n]["status"], 0) + 1
            else:
                del m["not_killed"][n]
                carried += 1
        if carried:
            counts["killed"] = counts.get("killed", 0) + carried
            m["carried_killed"] = m.get("carried_killed", 0) + carried
    return modules


def _wording(m: dict) -> bool:
    """A survivor that only changes the wording of a message."""
    return m["status"] == "survived" and bool(m.get("message_only"))


def _judged(name: str, m: dict, equivalent: dict) -> bool:
    """A survivor whose equivalence judgement still applies (the same mutated line)."""
    judged = equivalent.get(name)
    return m["status"] == "survived" and judged is not None and judged["line"] == m["line"]


def load_equivalent() -> dict:
    if not EQUIVALENT.exists():
        return {}
    return tomllib.loads(EQUIVALENT.read_text())


def score(mod_res: dict, equivalent: dict) -> dict:
    """Counts, the survivors judged equivalent and the score of one module."""
    c = mod_res["counts"]
    killed = sum(c.get(s, 0) for s in KILLED)
    equiv, stale, open_, wording = {}, [], {}, []
    for name, m in mod_res["not_killed"].items():
        if _wording(m):
            wording.append(name)
        elif _judged(name, m, equivalent):
            equiv[name] = equivalent[name]["reason"]
        else:
            if name in equivalent:
                stale.append(name)
            open_[name] = m
    skipped = c.get("skipped", 0) + c.get("not checked", 0)
    changing = mod_res["total"] - len(equiv) - len(wording) - skipped
    return {"killed": killed, "survived": c.get("survived", 0), "timeout": c.get("timeout", 0),
            "no_tests": c.get("no tests", 0), "suspicious": c.get("suspicious", 0),
            "skipped": skipped, "equivalent": equiv, "wording": wording, "stale": stale,
            "open": open_,
            "changing": changing, "score": killed / changing if changing else 1.0}


def report(machine: dict) -> None:
    parts = PARTS.load()
    missing = [g for g in GROUPS if g not in parts]
    if missing and not os.environ.get(SCRATCH_ENV):
        # the published table covers every group: a table of some groups would replace it
        raise SystemExit(
            f"mutation.py: the stored parts lack the group(s) {missing} (run on this machine: "
            f"{[g for g in GROUPS if g in parts]}), so the published tools/results/mutation.md "
            "would lose their scores. Run every group, or write a scratch table with "
            f"{SCRATCH_ENV}=<folder> (the parts of the groups run are kept either way).")
    equivalent = load_equivalent()
    rows, data, lists = [], {}, []
    for group in GROUPS:
        if group not in parts:
            continue
        g = parts[group]
        for mod, mres in g["modules"].items():
            s = score(mres, equivalent)
            rows.append({"group": group, "module": mod, "total": mres["total"],
                         "killed": s["killed"] - s["timeout"], "timeout": s["timeout"],
                         "survived": s["survived"], "no tests": s["no_tests"],
                         "equivalent": len(s["equivalent"]),
                         "of which harmless": sum(r.startswith("Harmless")
                                                  for r in s["equivalent"].values()),
                         "message wording": len(s["wording"]),
                         "killed / behaviour-changing": f"{100 * s['score']:.1f}%",
                         "target 95%": "met" if s["score"] >= TARGET else "NOT met",
                         "commit": g["commit"] + (" + uncommitted" if g["uncommitted"] else "")
                         + (f", tests {g['tests_commit']}" if g.get("tests_commit") else "")
                         + (f" (updated from {g['updated_from']})" if g.get("updated_from")
                            else ""),
                         "run (s)": g["seconds"]})
            data[mod] = {"group": group, "total": mres["total"], **{
                k: s[k] for k in ("killed", "survived", "timeout", "no_tests", "suspicious",
                                  "skipped", "changing", "score")},
                "equivalent": s["equivalent"], "message_wording": s["wording"],
                "stale_equivalent": s["stale"],
                "not_killed": {n: {"status": m["status"], "line": m["line"]}
                               for n, m in s["open"].items()},
                "commit": g["commit"], "tests_commit": g.get("tests_commit"),
                "updated_from": g.get("updated_from"),
                "uncommitted": g["uncommitted"], "tests": g["tests"],
                "date_utc": g["date_utc"]}
            if s["equivalent"]:
                lists.append(f"\n### {mod}: {len(s['equivalent'])} survivors judged equivalent "
                             "(grouped by reason; mutated lines in "
                             "`tools/mutation_equivalent.toml`)\n")
                by_reason: dict[str, list[str]] = {}
                for n, r in s["equivalent"].items():
                    by_reason.setdefault(r, []).append(n.rsplit(".", 1)[-1])
                lists += [f"* {r} ({len(ns)}: " + ", ".join(f"`{x}`" for x in ns) + ")"
                          for r, ns in by_reason.items()]
            if s["wording"]:
                lists.append(f"\n{mod}: {len(s['wording'])} survivor(s) only change the letter "
                             "case of an error/warning message or wrap it in `XX` (same error, "
                             "same type, same words): " + ", ".join(
                                 f"`{n.rsplit('.', 1)[-1]}`" for n in s["wording"]) + "\n")
            if s["open"]:
                lists.append(f"\n### {mod}: mutants not killed (behaviour-changing or not yet "
                             "judged)\n")
                for n, m in s["open"].items():
                    lists.append(f"* `{n}` ({m['status']}): `{m['line']}`")
            if s["stale"]:
                lists.append(f"\n{mod}: stale equivalence judgements (the mutated line "
                             f"changed; judge again): {', '.join(s['stale'])}\n")
    body = (
        "Score = (killed + timeout) / (mutants - equivalent - message wording - skipped): "
        "the share of behaviour-changing mutants the tests kill. Equivalent = survivors judged "
        "by hand to change no behaviour (reasons below; `tools/mutation_equivalent.toml`); "
        "'of which harmless' counts those whose reason starts with 'Harmless, not strictly "
        "equivalent': they change behaviour only in a case named in the reason. "
        "Message wording = survivors that only change the letter case of an error or warning "
        "message or wrap it in `XX` (found by comparing the mutant's syntax tree with the "
        "original's after lower-casing the strings inside `raise` / `warn`). Each "
        "group ran in its own snapshot (`.mutation/<group>/`) against only its test files, "
        "one worker; `commit` is the commit measured.\n\n"
        + markdown_table(rows) + "\n" + "\n".join(lists))
    write_results("mutation", "Mutation testing of the core modules (mutmut)", body,
                         data, machine)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("groups", nargs="*", help=f"groups to run (default: all): {list(GROUPS)}")
    ap.add_argument("--report", action="store_true", help="only rewrite the results files")
    ap.add_argument("--recollect", action="store_true",
                    help="reread the last run in .mutation/<group>/ (no new mutmut run)")
    ap.add_argument("--worktree", action="store_true",
                    help="mutate the working tree (uncommitted changes) instead of HEAD")
    ap.add_argument("--open", action="store_true",
                    help="with --survivors: rerun only the survivors not judged equivalent")
    ap.add_argument("--carry-judgements", action="store_true",
                    help="move the equivalence judgements of the groups named to the renumbered "
                         "mutants of their last run (same function, same mutated line)")
    ap.add_argument("--incremental", action="store_true",
                    help="update each group's last run to HEAD: only the mutants of functions "
                         "whose code changed are made and run again")
    ap.add_argument("--survivors", action="store_true",
                    help="rerun only the mutants the last run of each group did not kill, "
                         "against the group's tests at HEAD (the code stays the snapshot's)")
    args = ap.parse_args(argv)
    bad = [g for g in args.groups if g not in GROUPS]
    if bad:
        raise SystemExit(f"unknown group(s) {bad}; choose from {list(GROUPS)}")
    check_config()
    machine = header("Mutation testing of the core modules (mutmut)")
    import mutmut
    machine["mutmut"] = getattr(mutmut, "__version__", None) or re.sub(
        r".*Version: (\S+).*", r"\1", _pip_show("mutmut"), flags=re.S)
    if args.carry_judgements:
        carry_judgements(args.groups or [g for g in GROUPS if g in PARTS.load()])
    elif args.recollect:
        parts = PARTS.load()
        for group in args.groups or [g for g in GROUPS if g in parts]:
            res = parts[group]
            res["modules"] = collect(WORK / group, GROUPS[group][0])
            PARTS.save(group, res)
    elif args.incremental:
        for group in args.groups or [g for g in GROUPS if g in PARTS.load()]:
            res = update_group(group)
            for mod, m in res["modules"].items():
                print(f"{mod}: {m['counts']} ({res['seconds']} s)", flush=True)
    elif args.survivors:
        for group in args.groups or [g for g in GROUPS if g in PARTS.load()]:
            res = rerun_survivors(group, args.open)
            for mod, m in res["modules"].items():
                print(f"{mod}: {m['counts']} ({res['seconds']} s)", flush=True)
    elif not args.report:
        for group in args.groups or list(GROUPS):
            res = run_group(group, args.worktree)
            for mod, m in res["modules"].items():
                print(f"{mod}: {m['counts']} ({res['seconds']} s)", flush=True)
    report(machine)


def _pip_show(name: str) -> str:
    return subprocess.run([sys.executable, "-m", "pip", "show", name], capture_output=True,
                          text=True).stdout


if __name__ == "__main__":
    main()
