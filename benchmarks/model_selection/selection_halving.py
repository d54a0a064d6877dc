"""Successive halving against the full grid: the selector's choices and their cost.

For every task of the selection study (its rows: the same seeded subsample of at most 400 rows
per domain), the command's default search (``AdaptationSelector(methods="sized")`` over
``DEFAULT_GRIDS``, circular validation, 1NN, 5 folds; what ``shiftlearn adapt --method auto
--tune`` runs) is fitted with ``search="grid"`` and with ``search="halving"``; the table gives
each one's choice, the target accuracy of the chosen candidate (measured with the target labels,
never used to choose) and the seconds. Halving becomes the default only if it chooses as well.

    OMP_NUM_THREADS=1 python benchmarks/model_selection/selection_halving.py [--quick]
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from pathlib import Path

import numpy as np
from threadpoolctl import threadpool_limits

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: _common
sys.path.insert(0, str(Path(__file__).resolve().parent))       # the study's tasks and rows
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

from shiftlearn.model_selection import (  # noqa: E402
    DEFAULT_GRIDS,
    AdaptationSelector,
    CircularValidation,
)


def run_task(name: str, s: str, t: str, max_rows: int) -> dict:
    X, y, sd, yt = study_rows(name, s, t, max_rows)
    out = {}
    for search in ("grid", "halving"):
        start = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            sel = AdaptationSelector(methods="sized", scoring=CircularValidation(),
                                     grids=DEFAULT_GRIDS, search=search).fit(X, y, sd)
            acc = float(np.mean(sel.predict(X[sd < 0]) == yt))
        chosen = next(r for r in sel.summary_ if r["chosen"])
        out[search] = {"choice": sel.choice_, "params": {k: str(v) for k, v in
                                                         chosen["params"].items()},
                       "accuracy": acc, "seconds": time.perf_counter() - start}
    return out


@progress()
def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="the toy and two Office tasks")
    ap.add_argument("--max-rows", type=int, default=400)
    args = ap.parse_args(argv)
    machine = header("Successive halving against the full grid")
    store = PartsFile(results_dir(__file__) / f"_selection_halving_parts_r{args.max_rows}.json")
    with threadpool_limits(limits=1):
        for name, s, t in track(tasks(args.quick), "tasks"):
            key = f"{name}:{s}->{t}"
            if key not in store:
                store.save(key, run_task(name, s, t, args.max_rows))
                print(key, store.load()[key], flush=True)
    parts = store.load()
    rows = []
    for key, r in parts.items():
        g, h = r["grid"], r["halving"]
        rows.append({"task": key, "grid choice": g["choice"],
                     "grid acc %": round(100 * g["accuracy"], 2),
                     "grid s": round(g["seconds"], 1), "halving choice": h["choice"],
                     "halving acc %": round(100 * h["accuracy"], 2),
                     "halving s": round(h["seconds"], 1),
                     "same setting": g["choice"] == h["choice"] and g["params"] == h["params"]})
    mean = {c: round(float(np.mean([r[c] for r in rows])), 2)
            for c in ("grid acc %", "halving acc %", "grid s", "halving s")}
    same = sum(r["same setting"] for r in rows)
    body = "\n".join([
        "`AdaptationSelector(methods=\"sized\", scoring=CircularValidation(), "
        "grids=DEFAULT_GRIDS)` with `search=\"grid\"` and `search=\"halving\"`, 1NN, one BLAS "
        "thread; accuracy: the chosen candidate's on the target rows (labels used to measure "
        "only).", "", markdown_table(rows), "",
        f"Mean target accuracy: grid {mean['grid acc %']}%, halving {mean['halving acc %']}%; "
        f"mean seconds: grid {mean['grid s']}, halving {mean['halving s']}; the same choice and "
        f"setting on {same} of {len(rows)} tasks."])
    write_results("selection_halving", "Successive halving against the full grid", body,
                  {"tasks": parts, "mean": mean, "same": same}, machine)


if __name__ == "__main__":
    main()
