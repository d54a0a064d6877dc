"""Why the MMD criterion adapts where it should not: its two terms, candidate by candidate.

``MMDScorer`` scores a candidate by ``acc_S - lam * JMMD`` (held-out source accuracy minus the
joint MMD between the embedded source rows with their labels and the embedded target rows with
their predicted labels). On the tasks where ``shiftlearn adapt --method auto --tune`` falls
below raw 1NN (``selection_auto_check.md``), this script splits each candidate's validation
estimate into those two terms, on the command's candidates (no adaptation, TCA, SCA, uSCA: the
``sized`` default below 2,000 rows), the default grids and the same folds as the command
(``AdaptationSelector``, ``SourceKFold(5, random_state=0)``, 1NN, the selection study's rows),
and gives, for each adapter's best setting, the weights ``lam`` for which no adaptation would
score higher. Where an adapter has both the higher source accuracy and the lower JMMD, no
``lam >= 0`` prefers no adaptation: the criterion, not its weight or the folds' noise, picks the
adapter. The target accuracy is measured for the table only (no choice uses it).

Run: ``OMP_NUM_THREADS=1 python benchmarks/model_selection/selection_mmd_terms.py``
(``--tasks mnist_usps:mnist:usps msrc_voc:voc:msrc``, the default). About a minute per task.
Writes ``results/selection_mmd_terms.{md,json}``.
"""

from __future__ import annotations

import argparse
import sys
import warnings
from pathlib import Path

import numpy as np
from sklearn.neighbors import KNeighborsClassifier

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: _common
sys.path.insert(0, str(Path(__file__).resolve().parent))       # selection_study: its tasks
from _common import header, markdown_table, write_results  # noqa: E402
from selection_study import study_rows  # noqa: E402

import shiftlearn.model_selection as ms  # noqa: E402
from shiftlearn.compose import DomainAdaptationClassifier  # noqa: E402

METHODS = ["TCA", "SCA", "uSCA"]


def lam_range(acc_a: float, j_a: float, acc_0: float, j_0: float) -> str:
    """The weights ``lam >= 0`` for which no adaptation (``acc_0 - lam j_0``) scores above
    the adapter (``acc_a - lam j_a``), as text."""
    d_acc, d_j = acc_a - acc_0, j_a - j_0        # the adapter's lead in accuracy, its extra MMD
    if d_j > 0:                                  # none wins when lam * d_j > d_acc
        return "every lam >= 0" if d_acc < 0 else f"lam > {d_acc / d_j:.2f}"
    if d_j < 0:                                  # none wins when lam * |d_j| < -d_acc
        return f"lam < {-d_acc / -d_j:.2f}" if d_acc < 0 else "none"
    return "every lam >= 0" if d_acc < 0 else "none"


def terms(X, y, sd, method: str, params: dict) -> dict:
    """Mean over the command's folds of the held-out source accuracy (``MMDScorer(lam=0)``)
    and of the joint MMD (that accuracy minus ``MMDScorer()``), each fold scored as the
    selector scores it (its target rows are its unlabeled rows)."""
    acc, score = [], []
    for tr, te in ms.SourceKFold(5, random_state=0).split(X, y, sd):
        est = DomainAdaptationClassifier(ms.make_adapter(method, 0, **params),
                                         KNeighborsClassifier(1)).fit(X[tr], y[tr], sd[tr])
        acc.append(ms.MMDScorer(lam=0)(est, X[te], y[te]))
        score.append(ms.MMDScorer()(est, X[te], y[te]))
    return {"acc_S": float(np.mean(acc)), "JMMD": float(np.mean(acc) - np.mean(score))}


def run_task(name: str, s: str, t: str, max_rows: int) -> list[dict]:
    X, y, sd, yt = study_rows(name, s, t, max_rows)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        sel = ms.AdaptationSelector(methods=METHODS, scoring=ms.MMDScorer()).fit(X, y, sd)
    rows = []
    for r in sel.summary_:
        params = r["params"]
        tr = terms(X, y, sd, r["method"], params)
        est = DomainAdaptationClassifier(ms.make_adapter(r["method"], 0, **params),
                                         KNeighborsClassifier(1)).fit(X, y, sd)
        rows.append({"task": f"{name}:{s}->{t}", "method": r["method"],
                     "setting": ", ".join(f"{k}={v}" for k, v in params.items()
                                          if k != "whiten") or "-",
                     "acc_S": tr["acc_S"], "JMMD": tr["JMMD"],
                     "acc_S - JMMD": tr["acc_S"] - tr["JMMD"],
                     "selector's estimate": r["score"],
                     "chosen": "yes" if r["chosen"] else "",
                     "target %": 100 * float(np.mean(est.predict(X[sd < 0]) == yt))})
    none = rows[0]
    for row in rows:
        row["lam where none wins"] = ("-" if row is none else
                                      lam_range(row["acc_S"], row["JMMD"], none["acc_S"],
                                                none["JMMD"]))
    return rows


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tasks", nargs="+", default=["mnist_usps:mnist:usps", "msrc_voc:voc:msrc"],
                    help="data:source:target of the selection study")
    ap.add_argument("--max-rows", type=int, default=400)
    args = ap.parse_args(argv)
    title = "The MMD criterion's two terms on the tasks where auto falls below raw 1NN"
    machine = header(title)
    rows = []
    for spec in args.tasks:
        name, s, t = spec.split(":")
        rows += run_task(name, s, t, args.max_rows)
        print(markdown_table([r for r in rows if r["task"] == f"{name}:{s}->{t}"],
                             floatfmt=".4f"), flush=True)
    # the decomposition must add up to the selector's own estimate (same folds, same scorer)
    gap = max(abs(r["acc_S - JMMD"] - r["selector's estimate"]) for r in rows)
    cols = ["task", "method", "setting", "acc_S", "JMMD", "acc_S - JMMD", "chosen", "target %",
            "lam where none wins"]
    body = [__doc__.split("\n\n")[1].strip(), "",
            f"Rows per domain: at most {args.max_rows}. `acc_S - JMMD` agrees with the "
            f"selector's own estimate to {gap:.1e}.", "",
            markdown_table(rows, cols, floatfmt=".4f"), ""]
    write_results("selection_mmd_terms", title, "\n".join(body),
                  {"rows": rows, "max_abs_gap_to_selector": gap}, machine)


if __name__ == "__main__":
    main()
