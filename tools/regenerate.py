"""Does a published table regenerate from its script? (issue #16)

For each published results file given, rerun the command it records (its ``"command"``) in a
scratch folder (``SHIFTLEARN_BENCH_RESULTS``, so nothing published is touched and resumable
scripts start without their checkpoints), then compare the new JSON with the published one,
leaf by leaf:

* **skipped**, by key name (the key or any key above it): what is not meant to repeat — times,
  rates, speed-ups and other timing ratios, memory, load, dates, the machine, the command
  (``VOLATILE`` below; the report counts them);
* **compared**: every other number (exactly; NaN equals NaN) and every other string (labels,
  choices, verdicts).

Verdicts: ``identical`` (every compared leaf equal), ``round-off`` (numbers within a relative
``1e-9`` or an absolute ``1e-12``, strings equal), ``differs`` (the first differences are
listed). Checks are kept in
``tools/results/_regenerate_parts.json`` (ignored) and the table
``tools/results/regenerate.md`` is rebuilt after each one from the published checks
(``regenerate.json``) with this machine's checks over them. BLAS runs on one thread
(``--threads``), the setting of the published timing runs: a different thread count may
change a matrix product's last bits.

    python tools/regenerate.py benchmarks/kernels/results/kernels_sanity.json [...]
    python tools/regenerate.py --report
    python tools/regenerate.py --recompare [results.json ...]

Each rerun's JSON is kept in ``benchmarks/scratch/regenerate/`` (ignored), so ``--recompare``
applies changed skip rules without rerunning.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))  # _common
from _common import (  # noqa: E402
    PartsFile,
    header,
    markdown_table,
    read_results,
    write_results,
)
from _common import results_json as json_beside  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
#: key names whose values (and everything below them) are not expected to repeat: words
#: (any case; ``\b`` keeps ``configuration`` and ``n_candidates`` compared) ...
VOLATILE = re.compile(
    r"time|timing|wall|cpu|second|\((s|ms|min)\)|/s\b|speed|\bratio|faster|slower|\bload"
    r"|\bdate|machine|command|\bmb\b|\bgb\b|rss|memory|peak|throughput|elapsed|warm|compile"
    r"|per row|duration"
    # bytes counted on a real Flower deployment's wire: its framing carries run and message
    # ids whose encoded length varies by a few bytes per run (the payload bytes are compared)
    r"|\bwire"
    # times relative to a reference stage: T_K (the kernel matrix), T_mv, fit/ZtZ
    r"|\bT_K\b|\bT_mv\b|ZtZ"
    # log-log slopes of time against n (``slopes``; not ``rff_slopes``, error rates); the BLAS
    # thread variables the run had (this tool sets them to --threads)
    r"|^slopes$|_NUM_THREADS",
    re.IGNORECASE)
#: ... and lower-case unit suffixes (``fit_s``, ``wall s``, ``worker_start_mb``, ``BBSE|s``; not
#: ``n_S`` or ``mean_s - mean_t``), and time ratios against a peer or a floor (``skada / this``,
#: ``skada_vs_ours``, ``ours_vs_floor``)
VOLATILE_UNIT = re.compile(r"(^|[ _(|])(s|ms|mb|gb)($|\))|_vs_(ours|floor)$|^skada / this$")
#: keys skipped in one results file only, where the name means a timing there but not elsewhere
#: (``runs`` of ``subspace_tca_vs_skada`` are the seconds of each repeat; the ``runs`` of
#: ``splits_model_selection`` are selections, compared; ``targets`` of ``boosting_speed`` are
#: sentences quoting the measured wall-time ratios)
FILE_VOLATILE = {"subspace_tca_vs_skada.json": frozenset({"runs"}),
                 "boosting_speed.json": frozenset({"targets"})}
ROUND_OFF = 1e-9
#: absolute differences below this are round-off too (a diagnostic that is itself a round-off
#: error, e.g. the 1e-14 "max |W_fed - W_central|" of the one-shot federation)
ABS_ROUND_OFF = 1e-12


def _walk(old, new, path, out, extra=frozenset()):
    """Compare two JSON values; append to ``out`` (a dict of counters and differences)."""
    if isinstance(old, dict) and isinstance(new, dict):
        for k in sorted(set(old) | set(new), key=str):
            p = f"{path}/{k}"
            if VOLATILE.search(str(k)) or VOLATILE_UNIT.search(str(k)) or str(k) in extra:
                out["skipped"] += 1
                out["skipped_keys"].add(str(k))
                continue
            if k not in old or k not in new:
                out["diffs"].append((p, old.get(k, "<missing>"), new.get(k, "<missing>")))
                continue
            _walk(old[k], new[k], p, out, extra)
        return
    if isinstance(old, list) and isinstance(new, list):
        if len(old) != len(new):
            out["diffs"].append((path, f"<{len(old)} items>", f"<{len(new)} items>"))
        for i, (a, b) in enumerate(zip(old, new, strict=False)):
            _walk(a, b, f"{path}[{i}]", out, extra)
        return
    out["compared"] += 1
    num = (int, float)
    if isinstance(old, num) and isinstance(new, num) and not isinstance(old, bool):
        if old == new or (math.isnan(old) and math.isnan(new)):
            return
        if abs(old - new) <= ABS_ROUND_OFF:
            out["round_off"] += 1
            return
        rel = abs(old - new) / max(abs(old), abs(new), 1e-300)
        out["max_rel"] = max(out["max_rel"], rel)
        if rel > ROUND_OFF:
            out["diffs"].append((path, old, new))
        else:
            out["round_off"] += 1
        return
    if old != new:
        out["diffs"].append((path, old, new))


def compare(old: dict, new: dict, name: str = "") -> dict:
    """Counters and differences between two results JSONs (``results`` and ``title``);
    ``name``: the results file's name, for :data:`FILE_VOLATILE`."""
    out = {"compared": 0, "skipped": 0, "skipped_keys": set(), "round_off": 0, "max_rel": 0.0,
           "diffs": []}
    _walk({"title": old.get("title"), "results": old.get("results")},
          {"title": new.get("title"), "results": new.get("results")}, "", out,
          FILE_VOLATILE.get(name, frozenset()))
    verdict = ("differs" if out["diffs"] else "round-off" if out["round_off"] else "identical")
    return {"verdict": verdict, "compared": out["compared"], "skipped": out["skipped"],
            "skipped_keys": sorted(out["skipped_keys"]), "max_rel": out["max_rel"],
            "n_diffs": len(out["diffs"]),
            "diffs": [(p, repr(a)[:60], repr(b)[:60]) for p, a, b in out["diffs"][:8]]}


#: scripts renamed on 2026-11-24 (benchmarks/README.md, "Former names") whose results files
#: still record the former name
FORMER = {"bench_tca_vs_skada.py": "subspace_tca_vs_skada.py",
          "bench_rfsca_accuracy.py": "rf_sca_accuracy.py",
          "accuracy_subspace.py": "subspace_accuracy.py",
          "baselines_raw_1nn.py": "datasets_raw_1nn.py",
          "read_table_speed.py": "datasets_read_table_speed.py"}


#: tables assembled from resumable parts: the commands that compute the parts, run in the same
#: scratch folder before the recorded (report) command (each script's docstring recipe; which
#: have been checked, and how long each took: ``results/regenerate.md``).
#: ``rf_accuracy``'s parts are read off its published JSON, whose keys name them: ``--part
#: all`` (frequency seed 0, both penalties) and seeds 1-4 with the coefficient penalty only.
#: ``rf_orthogonal`` reads exact TCA's choices from ``rf_accuracy``'s checkpoint, so its recipe
#: computes those first (in the same scratch folder).
_ADAPT = "python benchmarks/adaptation/"
PARTS = {
    "marginal_office.json": [
        "python benchmarks/generalization/marginal_office.py "
        "--targets amazon caltech dslr webcam"],
    "subspace_accuracy.json": [f"{_ADAPT}subspace_accuracy.py --part {p}"
                               for p in ("office", "mnist", "msrc", "dg", "toy")],
    "rf_sca_accuracy.json": [f"{_ADAPT}rf_sca_accuracy.py"],
    # the published parts, by their keys: the default grid on caltech->amazon (Gaussian kernel
    # only), then every task and kernel on the mu grid {1, 100, 10^4}
    "rftca_kernels.json": [f"{_ADAPT}rftca_kernels.py --part office --tasks caltech->amazon "
                           "--kernels rbf",
                           f"{_ADAPT}rftca_kernels.py --part office --mus 1 100 10000",
                           f"{_ADAPT}rftca_kernels.py --part mnist --mus 1 100 10000"],
    "rf_accuracy.json": [f"{_ADAPT}rf_accuracy.py --part all",
                         f"{_ADAPT}rf_accuracy.py --part office-cv --seeds 1 2 3 4 "
                         "--penalties coefficients"],
    # (both penalties: rf_accuracy's report, run after every part, reads both of seed 0)
    "rf_orthogonal.json": [f"{_ADAPT}rf_accuracy.py --part office-cv --seeds 0",
                           f"{_ADAPT}rf_orthogonal.py --part error",
                           f"{_ADAPT}rf_orthogonal.py --part cv --seeds 0 1 2 3 4"],
    "federated_digits.json": ["python benchmarks/federated/federated_digits.py --stage all"],
    # both published sections: the command's default margin (0) and the one-standard-error rule
    "selection_auto_check.json": ["python benchmarks/model_selection/selection_auto_check.py",
                                  "python benchmarks/model_selection/selection_auto_check.py "
                                  "--margin se"],
    # its recorded command only reports from the parts of the four published tasks
    "fewlabels_select.json": ["python benchmarks/fewlabels/fewlabels_select.py "
                              "--tasks W-C,D-A,C-A,A-W"],
}


def _script_of(command: str) -> list[str]:
    """The recorded command as argv, the script found by name if it moved since the run."""
    argv = shlex.split(command)
    if argv and argv[0].startswith("python"):
        argv[0] = sys.executable
    for i, a in enumerate(argv):
        if a.endswith(".py") and not (ROOT / a).exists():
            name = Path(a).name
            name = FORMER.get(name, name.removeprefix("bench_"))
            found = sorted(ROOT.glob(f"benchmarks/**/{name}"))
            if len(found) == 1:
                argv[i] = str(found[0].relative_to(ROOT))
    return argv


#: each rerun's JSON is kept here (ignored by git), so ``--recompare`` can compare it again when
#: the skip rules above change, without rerunning the script
KEEP_DIR = ROOT / "benchmarks" / "scratch" / "regenerate"
#: the published table of checks (its JSON)
PUBLISHED = Path(__file__).resolve().parent / "results" / "regenerate.json"


def _name(results_json: Path) -> str:
    """The results file's name as the tables key it: ``<name>.json``, gzipped or not."""
    return results_json.name.removesuffix(".gz")


def _result(results_json: Path, published: dict, rerun: dict, wall: float) -> dict:
    res = compare(published, rerun, _name(results_json))
    res.update({"file": str(results_json.relative_to(ROOT)), "command": published["command"],
                "wall_s": wall})
    return res


def recompare(results_json: Path, previous: dict | None) -> dict | None:
    """The check of ``results_json`` from its kept rerun (``None``: no kept rerun)."""
    kept = KEEP_DIR / _name(results_json)
    if not kept.exists():
        return None
    wall = (previous or {}).get("wall_s", float("nan"))
    return _result(results_json, read_results(results_json), read_results(kept), wall)


def check(results_json: Path, threads: int) -> dict:
    published = read_results(results_json)
    argv = _script_of(published["command"])
    with tempfile.TemporaryDirectory(prefix="regenerate_") as tmp:
        env = dict(os.environ, SHIFTLEARN_BENCH_RESULTS=tmp, OMP_NUM_THREADS=str(threads),
                   OPENBLAS_NUM_THREADS=str(threads), MKL_NUM_THREADS=str(threads))
        env.setdefault("SHIFTLEARN_DATA", str(ROOT.parent / "shared" / "data"))
        t0 = time.perf_counter()
        for part in PARTS.get(_name(results_json), []):
            proc = subprocess.run(_script_of(part), cwd=ROOT, env=env, capture_output=True,
                                  text=True)
            if proc.returncode != 0:
                break
        else:
            proc = subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True)
        wall = time.perf_counter() - t0
        rerun = json_beside(Path(tmp) / _name(results_json).replace(".json", ".md"))
        if proc.returncode != 0 or rerun is None:
            tail = (proc.stderr or proc.stdout).strip().splitlines()[-3:]
            return {"file": str(results_json.relative_to(ROOT)), "command": published["command"],
                    "verdict": f"rerun failed (rc {proc.returncode})", "wall_s": wall,
                    "error": " | ".join(tail)}
        KEEP_DIR.mkdir(parents=True, exist_ok=True)
        rerun_data = read_results(rerun)
        (KEEP_DIR / _name(results_json)).write_text(json.dumps(rerun_data))
        return _result(results_json, published, rerun_data, wall)


def all_checks(store: PartsFile, published: Path = PUBLISHED) -> dict:
    """Every check: the published table's (``regenerate.json``), overridden by the checks made
    on this machine (``store``, an ignored checkpoint). A fresh clone has no checkpoint, so
    without the published checks one new check would rebuild the table from that one row."""
    checks = (json.loads(published.read_text())["results"]["checks"]
              if published.exists() else {})
    merged = {**checks, **store.load()}
    # a results file written gzipped since its check keeps its check, under its new name
    moved = {key for key in merged
             if not (ROOT / key).exists() and (ROOT / (key + ".gz")).exists()}
    return {key + ".gz" if key in moved else key:
            dict(res, file=key + ".gz") if key in moved else res for key, res in merged.items()}


def published_files() -> list[str]:
    """The published results files: every tracked ``benchmarks/<subpackage>/results/*.json``
    or ``*.json.gz`` (checkpoints, ``_*``, are ignored by git and left out)."""
    return sorted(str(p.relative_to(ROOT)) for pattern in ("*.json", "*.json.gz")
                  for p in ROOT.glob(f"benchmarks/*/results/{pattern}")
                  if not p.name.startswith("_"))


def report(parts: dict, machine: dict) -> None:
    if not parts:
        raise SystemExit("regenerate.py: no check to report; give published results files "
                         "to rerun (see --help).")
    rows = []
    for key in sorted(parts):
        r = parts[key]
        rel = r.get("max_rel")
        rows.append({"results file": f"`{r['file']}`", "verdict": f"**{r['verdict']}**",
                     "numbers and labels compared": r.get("compared", ""),
                     "skipped (timing etc.)": r.get("skipped", ""),
                     "max relative difference (above 1e-12)": (
                         "" if rel is None else f"{rel:.1e}" if rel else "0"),
                     "rerun (s)": round(r["wall_s"], 1)})
    published = published_files()
    unchecked = [f for f in published if f not in parts]
    body = [f"{len(parts)} of the {len(published)} published results files rerun from the "
            "command they record, in a scratch folder, one BLAS thread; the JSONs compared leaf "
            "by leaf (see `tools/regenerate.py`: timing, memory, load, date and machine "
            "keys skipped).", "",
            ("Not checked: " + ", ".join(f"`{f}`" for f in unchecked) + "." if unchecked
             else "Every published results file is checked."), "",
            markdown_table(rows, list(rows[0]) if rows else []), ""]
    for key in sorted(parts):
        r = parts[key]
        if r["verdict"] not in ("identical", "round-off"):
            body += [f"### `{r['file']}`: {r['verdict']}", ""]
            if "error" in r:
                body += [f"Error: `{r['error']}`", ""]
            for p, a, b in r.get("diffs", []):
                body.append(f"* `{p}`: {a} -> {b}")
            if r.get("n_diffs", 0) > len(r.get("diffs", [])):
                body.append(f"* ... {r['n_diffs']} differences in all")
            body.append("")
    keys = sorted({k for r in parts.values() for k in r.get("skipped_keys", [])})
    body += ["Keys skipped (and everything below them): " + ", ".join(f"`{k}`" for k in keys)]
    write_results("regenerate", "Published tables rerun from their scripts",
                  "\n".join(body), {"checks": parts}, machine)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("results", nargs="*", type=Path, help="published results .json files")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--report", action="store_true", help="only rebuild the table")
    ap.add_argument("--recompare", action="store_true",
                    help="compare the kept reruns again (after a change of the skip rules); "
                         "files given, or every checked file with a kept rerun")
    args = ap.parse_args()
    machine = header("Published tables rerun from their scripts")
    store = PartsFile(Path(__file__).resolve().parent / "results" / "_regenerate_parts.json")
    if args.recompare:
        parts = all_checks(store)
        for key in [str(f.resolve().relative_to(ROOT)) for f in args.results] or sorted(parts):
            res = recompare(ROOT / key, parts.get(key))
            if res is not None:
                print(f"{key}: {res['verdict']}", flush=True)
                store.save(key, res)
        args.results = []
    for f in args.results:
        f = f.resolve()
        print(f"rerunning {f.relative_to(ROOT)} ...", flush=True)
        res = check(f, args.threads)
        print(f"  {res['verdict']} ({res.get('compared', 0)} compared, "
              f"{res.get('skipped', 0)} skipped, {res['wall_s']:.0f} s)", flush=True)
        for p, a, b in res.get("diffs", []):
            print(f"    {p}: {a} -> {b}")
        store.save(str(f.relative_to(ROOT)), res)
    report(all_checks(store), machine)


if __name__ == "__main__":
    main()
