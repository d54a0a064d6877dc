"""What ``adapt --method auto --tune`` costs with larger pools, on the command's budget shape.

The catalog issue's budget: about 450 rows x 4,096 columns within 90 s on two cores. On the
rows of ``auto_cost.py`` (``make_task(450, 4096)``: 225 source and 225 target rows, five
classes), ``shiftlearn.adapt`` (what the command runs) with logistic regression, ``tune=True``,
``n_jobs=-1`` (the command's default: one worker thread per core, one BLAS thread each), no
permutation test, over three pools: the default (``candidates="sized"``), every mapping and
subspace adapter (``candidates="all"``) and every method of ``ADAPTERS`` (the reweighting,
label-shift and labeler methods too). Each pool runs once, in this process, one after the
other; per candidate, the worker seconds of its fits and of its validation.

    python benchmarks/model_selection/auto_pool_budget.py       # about six minutes
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: _common
sys.path.insert(0, str(Path(__file__).resolve().parent))      # auto_cost: the rows
from _common import header, markdown_table, progress, track, write_results  # noqa: E402

#: the budget of the catalog issue (seconds, two cores) and its shape
BUDGET_S, ROWS, COLUMNS = 90.0, 450, 4096
TITLE = "adapt --method auto --tune with larger pools on the budget shape"


def pools() -> dict:
    """Pool name -> ``candidates`` of ``shiftlearn.adapt``."""
    from shiftlearn.workflow._adapt import METHODS

    return {"default (sized)": "sized", "all (mapping and subspace)": "all",
            "every method of ADAPTERS": [m for m in METHODS if m not in ("auto", "raw")]}


def run_pool(candidates, X, y, sd) -> dict:
    import shiftlearn

    src = sd > 0
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = shiftlearn.adapt(X[src], y[src], X[~src], method="auto", tune=True,
                               candidates=candidates, permutations=0, estimator="logreg",
                               n_jobs=-1)
    seconds = time.perf_counter() - t0
    rows = [{"method": r["method"],
             "fit s": float((r.get("seconds") or {}).get("fit", 0.0)),
             "validation s": float((r.get("seconds") or {}).get("validation", 0.0))}
            for r in res.report["selection"]["candidates"]]
    return {"seconds": seconds, "choice": res.report["method"], "candidates": rows}


@progress()
def main(argv=None) -> None:
    argparse.ArgumentParser(description=__doc__.splitlines()[0]).parse_args(argv)
    from auto_cost import make_task

    machine = header(TITLE)
    X, y, sd = make_task(ROWS, COLUMNS)
    out = {}
    for name, cands in track(list(pools().items()), "pools"):
        out[name] = run_pool(cands, X, y, sd)
        print(f"  {name}: {out[name]['seconds']:.1f} s, {out[name]['choice']}", flush=True)
    table = [{"pool": name, "candidates": len(r["candidates"]) - 1, "seconds": r["seconds"],
              "within the budget": r["seconds"] <= BUDGET_S, "choice": r["choice"]}
             for name, r in out.items()]
    every = out["every method of ADAPTERS"]["candidates"]
    slow = sorted(every, key=lambda r: -(r["fit s"] + r["validation s"]))
    body = ("\n\n".join(p.strip() for p in __doc__.split("\n\n")[1:2]) + "\n\n"
            + markdown_table(table, floatfmt=".1f")
            + f"\n\nThe budget: {BUDGET_S:.0f} s. Worker seconds per candidate with every method "
            "(fits and validation, summed over the settings and folds; two workers run at "
            "once):\n\n" + markdown_table(slow, floatfmt=".1f"))
    write_results("auto_pool_budget", TITLE, body,
                  {"rows": ROWS, "columns": COLUMNS, "budget_s": BUDGET_S, "pools": out},
                  machine)


if __name__ == "__main__":
    main()
