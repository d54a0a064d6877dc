"""``shiftlearn adapt --method auto --tune`` against raw 1NN on every task of the selection study.

Issue #15's target: the command's default choice (no adaptation or an adapter, chosen by the
default ``--select`` criterion over the default grids, ``DEFAULT_GRIDS``) is never more than
1 point below raw 1NN on any task of the study, and above it on average.

For each task of ``selection_study.py`` (the SCA toy x 3 seeds, Office+Caltech SURF 12 tasks,
MNIST<->USPS, MSRC<->VOC) on the study's rows (the same seeded subsample of at most
``--max-rows`` rows per domain), the source and target rows are written as CSV files and the
real command runs on them, in this process:

    shiftlearn adapt src.csv --target tgt.csv --target-has-labels --method auto --tune
        --classifier 1nn [--select CRITERION] --margin MARGIN --permutations 0
        --report r.json --quiet

The target labels are in the target file only so that the command reports the accuracy of the
adapted and of the raw model (``target_accuracy``); the command never uses them to choose.
Each criterion named by ``--select`` (default: the command's default) is one column.

Run: ``OMP_NUM_THREADS=1 python benchmarks/model_selection/selection_auto_check.py``
(``--select mmd circular``: several criteria; ``--quick``: the toy and two Office tasks).
Parts are kept in ``results/_selection_auto_check_parts.json`` (resumable); the tables go to
``results/selection_auto_check.md`` / ``.json``.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd
from threadpoolctl import threadpool_limits

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: _common
sys.path.insert(0, str(Path(__file__).resolve().parent))       # selection_study: its tasks
from _common import (  # noqa: E402
    PartsFile,
    header,
    markdown_table,
    progress,
    results_dir,
    track,
    write_results,
)
from selection_study import study_rows, tasks  # noqa: E402

from shiftlearn.cli import main as shiftlearn_main  # noqa: E402


def default_select(classifier: str = "1nn") -> str:
    """The ``--select`` default of ``shiftlearn adapt --method auto`` for ``classifier``."""
    from shiftlearn.cli.adapt import DEFAULT_SELECT

    return DEFAULT_SELECT[classifier]


def run_one(name: str, s: str, t: str, select: str | None, max_rows: int,
            classifier: str, margin: str | None = None) -> dict:
    X, y, sd, yt = study_rows(name, s, t, max_rows)
    src, tgt = sd > 0, sd < 0
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        cols = [f"f{j}" for j in range(X.shape[1])]
        pd.DataFrame(X[src], columns=cols).assign(label=y[src]).to_csv(tmp / "src.csv",
                                                                       index=False)
        pd.DataFrame(X[tgt], columns=cols).assign(label=yt).to_csv(tmp / "tgt.csv",
                                                                   index=False)
        argv = ["adapt", str(tmp / "src.csv"), "--target", str(tmp / "tgt.csv"),
                "--target-has-labels", "--method", "auto", "--tune", "--classifier",
                classifier, "--permutations", "0", "--report", str(tmp / "r.json"),
                "--quiet"]
        if select is not None:
            argv += ["--select", select]
        if margin is not None:
            argv += ["--margin", margin]
        t0 = time.perf_counter()
        with contextlib.redirect_stdout(io.StringIO()):
            code = shiftlearn_main(argv)
        seconds = time.perf_counter() - t0
        if code != 0:
            raise RuntimeError(f"shiftlearn {' '.join(argv)} exited with {code}")
        rep = json.loads((tmp / "r.json").read_text())
    acc = rep["target_accuracy"]
    return {"adapted": acc["adapted"], "raw": acc["raw"], "rows": int(X.shape[0]),
            "choice": rep["selection"]["choice"], "method": rep["method"],
            "candidates": rep["selection"]["candidates"],
            "margin_value": rep["selection"].get("margin_value"), "seconds": seconds}


def _msuffix(margin) -> str:
    """Part-key suffix of a ``--margin`` (none for 0: the command before the margin)."""
    return "" if str(margin) in ("0", "0.0") else f"|m{margin}"


def _run_units(units, selects, args, store) -> None:
    for name, s, t in track(units, "tasks"):
        for sel in selects:
            key = f"{name}:{s}->{t}|{args.classifier}|{sel}|r{args.max_rows}" + _msuffix(
                args.margin)
            if key in store:
                continue
            r = run_one(name, s, t, sel, args.max_rows, args.classifier, args.margin)
            store.save(key, r)
            print(f"{key}: adapted {100 * r['adapted']:.1f}% raw {100 * r['raw']:.1f}% "
                  f"({r['choice']}; {r['seconds']:.0f} s)", flush=True)


@progress()
def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--select", nargs="+", default=None,
                    help="criteria (default: the command's default --select)")
    ap.add_argument("--classifier", default="1nn", choices=["1nn", "logreg"])
    ap.add_argument("--max-rows", type=int, default=400)
    ap.add_argument("--margin", default="0",
                    help="--margin of the command, always passed (default 0: the best "
                         "estimate wins; se: the one-standard-error rule, the command's own "
                         "default)")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--report", action="store_true", help="only rebuild the tables")
    args = ap.parse_args(argv)
    machine = header("shiftlearn adapt --method auto --tune against raw 1NN")
    default = default_select(args.classifier)
    selects = args.select or [default]
    store = PartsFile(results_dir(__file__) / "_selection_auto_check_parts.json")
    units = [(n, s, t) for n, s, t in tasks(args.quick)]
    if not args.report:
        # one BLAS thread, as the study: the fits are small, and OpenBLAS's two threads beside
        # another job made each task 3-6x slower (2026-11-28: 60 s against 20 s, Office)
        with threadpool_limits(limits=1):
            _run_units(units, selects, args, store)
    parts = store.load()
    body = [__doc__.split("\n\n")[1].strip(), "",
            f"The command's default `--select` at this commit: **{default}**. Rows per domain: "
            f"at most {args.max_rows} (the study's subsample).", ""]
    data = {"default_select": default, "criteria": {}}
    variants = sorted({(k.split("|")[2], k.split("|")[4] if k.count("|") > 3 else "m0")
                       for k in parts if k.split("|")[1] == args.classifier
                       and k.split("|")[3] == f"r{args.max_rows}"})
    for sel, msuf in variants:
        margin = msuf[1:]
        lines = []
        for name, s, t in units:
            key = (f"{name}:{s}->{t}|{args.classifier}|{sel}|r{args.max_rows}"
                   + _msuffix(margin))
            if key in parts:
                r = parts[key]
                lines.append({"task": f"{name}:{s}->{t}", "raw %": 100 * r["raw"],
                              "auto %": 100 * r["adapted"],
                              "auto - raw": 100 * (r["adapted"] - r["raw"]),
                              "choice": r["choice"], "s": r["seconds"]})
        if not lines:
            continue
        gaps = np.array([r["auto - raw"] for r in lines])
        below = [r["task"] for r in lines if r["auto - raw"] < -1.0]
        body += [f"## --select {sel} --margin {margin} ({args.classifier}, {len(lines)} tasks)",
                 "",
                 markdown_table(lines, ["task", "raw %", "auto %", "auto - raw", "choice",
                                        "s"]), "",
                 f"Mean: raw {np.mean([r['raw %'] for r in lines]):.2f}%, auto "
                 f"{np.mean([r['auto %'] for r in lines]):.2f}% ({gaps.mean():+.2f} points); "
                 f"worst {gaps.min():+.2f}; {len(below)} task(s) more than 1 point below raw"
                 + (f": {', '.join(below)}." if below else "."), ""]
        data["criteria"][f"{sel} margin {margin}"] = {
            "per_task": lines, "mean_gap": float(gaps.mean()), "worst_gap": float(gaps.min()),
            "below_1_point": below}
    write_results("selection_auto_check", "shiftlearn adapt --method auto --tune vs raw 1NN",
                  "\n".join(body), data, machine)


if __name__ == "__main__":
    main()
