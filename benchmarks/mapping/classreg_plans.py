"""ClassRegOT against skada's on the catalog's Office tasks: time, and whether a plan was found.

The catalog's selection study (``benchmarks/model_selection/selection_catalog.py``) timed
our ``ClassRegOT`` at about three times skada's ``ClassRegularizerOTMappingAdapter`` per task
on Office+Caltech, the reverse of the synthetic shapes of ``mapping_speed.py``. This script
shows why, on the same rows (``selection_study.study_rows``: at most 400 per domain, the
study's seeded subsample, 800 SURF features) and the study's grid (``reg_e`` and ``reg_cl``
in {0.1, 1}): for each fit, the time on one BLAS thread, and

* ours: the marginal violation of its plan, as its ``ConvergenceWarning`` gives it (the
  plan's row and column sums against the uniform weights; no warning: within ``tol``);
* skada's: the mass of its plan (``ot_transport_.coupling_``; a coupling's is 1) and the L1
  error of its row sums against the uniform source weights;
* both: the accuracy of a 1NN fitted on the mapped source rows, on the target rows (target
  labels used for this column only).

    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 python benchmarks/mapping/classreg_plans.py
"""

from __future__ import annotations

import argparse
import re
import sys
import time
import warnings
from pathlib import Path

import numpy as np
from sklearn.neighbors import KNeighborsClassifier
from threadpoolctl import threadpool_limits

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: _common
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "model_selection"))
import selection_study as study  # noqa: E402
from _common import header, markdown_table, progress, track, write_results  # noqa: E402

GRID = [(0.1, 0.1), (0.1, 1.0), (1.0, 0.1), (1.0, 1.0)]
_OFF = re.compile(r"marginals off by ([0-9.eE+-]+)")


def _timed(fn):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        t0 = time.perf_counter()
        out = fn()
        seconds = time.perf_counter() - t0
    return out, seconds, [str(w.message) for w in caught]


def _accuracy(mapped, ys, Xt, yt) -> float:
    ok = np.all(np.isfinite(mapped), axis=1)
    if not ok.any():
        return float("nan")
    return float(np.mean(KNeighborsClassifier(1).fit(mapped[ok], ys[ok]).predict(Xt) == yt))


def run_task(s: str, t: str, max_rows: int) -> list[dict]:
    import skada

    from shiftlearn.mapping import ClassRegOT

    X, y, sd, yt = study.study_rows("office_caltech", s, t, max_rows)
    src, tgt = sd > 0, sd < 0
    Xs, ys, Xt = X[src], y[src], X[tgt]
    rows = []
    for reg_e, reg_cl in GRID:
        ours, t_ours, w_ours = _timed(lambda e=reg_e, c=reg_cl: ClassRegOT(
            reg_e=e, reg_cl=c).fit(X, y, sample_domain=sd))
        theirs, t_skada, _ = _timed(lambda e=reg_e, c=reg_cl: skada.
                                    ClassRegularizerOTMappingAdapter(reg_e=e, reg_cl=c).fit(
                                        X, y, sample_domain=sd))
        off = [float(m.group(1)) for m in map(_OFF.search, w_ours) if m]
        G = np.asarray(theirs.ot_transport_.coupling_, dtype=float)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            # POT's barycentric map of the training source rows (skada's transform of them)
            mapped_skada = np.asarray(theirs.ot_transport_.transform(Xs=Xs), dtype=float)
        rows.append({"task": f"{s}->{t}", "reg_e": reg_e, "reg_cl": reg_cl,
                     "ours_s": t_ours, "skada_s": t_skada,
                     "ours_marginals_off": f"{max(off):.1e}" if off else "<= tol",
                     "skada_plan_mass": f"{float(G.sum()):.1e}",
                     "skada_row_error": f"{float(np.abs(G.sum(1) - 1 / len(Xs)).sum()):.1e}",
                     "ours_1nn": _accuracy(ours.mapped_source_, ys, Xt, yt),
                     "skada_1nn": _accuracy(mapped_skada, ys, Xt, yt)})
    return rows


@progress()
def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--max-rows", type=int, default=400)
    ap.add_argument("--tasks", type=int, default=None, help="only the first N Office tasks")
    args = ap.parse_args(argv)
    machine = header("ClassRegOT against skada's on the catalog's Office tasks")
    import ot  # noqa: F401 - imported before timing
    import skada  # noqa: F401

    pairs = [(s, t) for name, s, t in study.tasks(False) if name == "office_caltech"]
    pairs = pairs[:args.tasks] if args.tasks else pairs
    rows = []
    with threadpool_limits(limits=1):
        for s, t in track(pairs, "tasks"):
            rows += run_task(s, t, args.max_rows)
    ours, theirs = (float(np.sum([r[k] for r in rows])) for k in ("ours_s", "skada_s"))
    empty = sum(float(r["skada_plan_mass"]) < 0.5 for r in rows)
    warned = sum(r["ours_marginals_off"] != "<= tol" for r in rows)
    acc = {k: float(np.nanmean([r[k] for r in rows])) for k in ("ours_1nn", "skada_1nn")}
    body = [__doc__.split("\n\n", 1)[1].split("\n\n    OMP")[0], "",
            markdown_table(rows), "",
            f"{len(rows)} fits: ours {ours:.1f} s in all, skada's {theirs:.1f} s. skada's plan "
            f"holds less than half the mass of a coupling in {empty} of them; ours warned of "
            f"marginals off by more than `tol` in {warned}. Mean 1NN target accuracy on the "
            f"mapped rows: ours {100 * acc['ours_1nn']:.2f}%, skada's "
            f"{100 * acc['skada_1nn']:.2f}%."]
    write_results("classreg_plans", "ClassRegOT against skada's on the catalog's Office tasks",
                  "\n".join(body), {"rows": rows, "ours_s": ours, "skada_s": theirs,
                                    "skada_empty_plans": empty, "ours_warned": warned,
                                    "mean_1nn": acc}, machine)


if __name__ == "__main__":
    main()
