"""Test error against the number of rows a test task is embedded from (predicting a stream).

Marginal transfer embeds each test task from the rows of the ``predict`` call. Rotated ellipses
(Blanchard et al., Alg. 1): 64 training tasks of 32 rows, C = 10, sigma_x = 0.4 (the demo's
settings), both solvers; 10 test tasks of 200 rows, shuffled, cut into test tasks of m rows
(m = 200: whole tasks; m = 1: predicting one row at a time). Then the documented stream recipe:
each of 30 new rows per task predicted with a stored random sample of s rows of its task
(``predict(np.vstack([X_sample, x_new]), ...)[-1]``), s = 10, 30, 100.

This is where ``MIN_PREDICT_TASK_SIZE`` (10) comes from: below it the error is more than three
times the whole-task error.

    python benchmarks/generalization/marginal_stream.py
"""

from __future__ import annotations

import sys
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: _common

import numpy as np  # noqa: E402
from _common import header, markdown_table, write_results  # noqa: E402

from shiftlearn.datasets import make_rotated_ellipses  # noqa: E402
from shiftlearn.generalization import MarginalTransferClassifier  # noqa: E402

SIZES = [1, 2, 3, 5, 10, 20, 32, 50, 100, 200]
SAMPLES = [10, 30, 100]


def main() -> None:
    machine = header("Marginal transfer: test error against the rows per test task")
    warnings.simplefilter("ignore")      # the small-task warning is the point of this script
    X, y, sd = make_rotated_ellipses(64, 32, random_state=0)
    Xt, yt, sdt = make_rotated_ellipses(10, 200, first_domain=-1000, random_state=1)
    perm = np.random.default_rng(0).permutation(len(sdt))
    Xt, yt, sdt = Xt[perm], yt[perm], sdt[perm]
    order = np.argsort(sdt, kind="stable")
    Xt, yt, sdt = Xt[order], yt[order], sdt[order]
    rows, data = [], {}
    for solver in ("rf", "exact"):
        clf = MarginalTransferClassifier(C=10.0, bandwidth_x=0.4, solver=solver, random_state=0)
        clf.fit(X, y, sd)
        errs = {}
        for m in SIZES:
            chunk = np.arange(len(sdt)) % 200 // m
            ids = -(np.abs(sdt) * 1000 + chunk)
            errs[m] = 100 * float(np.mean(clf.predict(Xt, ids) != yt))
        stream = {}
        rng = np.random.default_rng(0)
        for s in SAMPLES:
            wrong = 0
            for task in np.unique(sdt):
                idx = rng.permutation(np.flatnonzero(sdt == task))
                sample, new = idx[:s], idx[100:130]
                p = [clf.predict(np.vstack([Xt[sample], Xt[[i]]]), np.full(s + 1, task))[-1]
                     for i in new]
                wrong += int(np.sum(np.array(p) != yt[new]))
            stream[s] = 100 * wrong / (10 * 30)
        data[solver] = {"error_by_task_rows": errs, "stream_error_by_sample_rows": stream}
        rows.append({"solver": solver, **{f"m={m}": f"{e:.2f}" for m, e in errs.items()}})
        print(solver, errs, "stream", stream)
    body = ("Test error (%) when the 10 test tasks are cut into tasks of m rows:\n\n"
            + markdown_table(rows) + "\n\nStream recipe (each new row embedded with a stored "
            "random sample of s rows of its task; 30 new rows x 10 tasks):\n\n"
            + markdown_table([{"solver": k, **{f"s={s}": f"{e:.1f}" for s, e in
                                               v["stream_error_by_sample_rows"].items()}}
                              for k, v in data.items()]))
    write_results("marginal_stream", "Marginal transfer: rows per test task", body, data,
                  machine)


if __name__ == "__main__":
    main()
