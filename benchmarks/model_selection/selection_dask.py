"""``AdaptationSelector`` spread over a Dask cluster (joblib's Dask backend), against one job.

The selector runs its candidates and folds through joblib, so a ``distributed.Client`` and
``joblib.parallel_config(backend="dask")`` send them to a cluster's workers. This script
starts a ``LocalCluster`` of worker *processes* (as a real cluster would run), fits the default
selector (every adapter of the default pool, ``DEFAULT_GRIDS``, circular validation, 1NN) on one
task with ``n_jobs=1`` in this process and with ``n_jobs=-1`` on the cluster, and checks that
the estimates and the choice are the same.

What to expect: each worker unpickles an empty ``FitMemory``, so kernels and eigen-solves are
shared only within what one worker runs, and the data travel to the workers; on one small
machine the cluster is therefore no faster than one job with the shared memory. A cluster pays
off when the search is large and each candidate's fit dominates (many rows, many workers).

    python benchmarks/model_selection/selection_dask.py [--workers 2] [--task webcam->dslr]
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: _common
from _common import header, markdown_table, progress, write_results  # noqa: E402

from shiftlearn.datasets import load_office_caltech  # noqa: E402
from shiftlearn.model_selection import (  # noqa: E402
    DEFAULT_GRIDS,
    AdaptationSelector,
    CircularValidation,
)


def _fit(X, y, sd, n_jobs):
    start = time.perf_counter()
    sel = AdaptationSelector(scoring=CircularValidation(), grids=DEFAULT_GRIDS,
                             n_jobs=n_jobs).fit(X, y, sd)
    return sel, time.perf_counter() - start


@progress()
def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--task", default="webcam->dslr", help="an Office+Caltech task, s->t")
    args = ap.parse_args(argv)
    import distributed
    from joblib import parallel_config
    from threadpoolctl import threadpool_limits

    machine = header("AdaptationSelector on a Dask LocalCluster")
    s, t = args.task.split("->")
    X, y, sd, _ = load_office_caltech().pack(s, t, return_masked_labels=True)
    with threadpool_limits(limits=1):
        one, t_one = _fit(X, y, sd, 1)
    print(f"one job: {t_one:.1f} s, choice {one.choice_}", flush=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")              # distributed's port/resource notices
        with distributed.LocalCluster(n_workers=args.workers, threads_per_worker=1,
                                      processes=True, dashboard_address=None) as cluster, \
                distributed.Client(cluster), parallel_config(backend="dask"):
            on, t_cluster = _fit(X, y, sd, -1)
    print(f"cluster: {t_cluster:.1f} s, choice {on.choice_}", flush=True)
    a = np.asarray(one.search_.cv_results_["mean_test_score"], dtype=float)
    b = np.asarray(on.search_.cv_results_["mean_test_score"], dtype=float)
    diff = float(np.nanmax(np.abs(a - b)))
    rows = [{"run": "one job, shared memory", "seconds": round(t_one, 1),
             "choice": one.choice_},
            {"run": f"LocalCluster, {args.workers} worker processes",
             "seconds": round(t_cluster, 1), "choice": on.choice_}]
    same = one.choice_ == on.choice_ and one.summary_ == on.summary_
    body = "\n".join([
        f"Task: Office+Caltech SURF {args.task} ({X.shape[0]} rows, {X.shape[1]} columns); "
        f"{len(a)} candidates x 5 folds, circular validation, 1NN.", "",
        markdown_table(rows), "",
        f"Largest difference between the two runs' estimates: {diff:.2e}; "
        f"same summary and choice: {same}."])
    write_results("selection_dask", "AdaptationSelector on a Dask LocalCluster", body,
                  {"rows": rows, "max_abs_diff": diff, "same_choice": same}, machine)
    if not same:
        raise SystemExit("the cluster's choice differs from one job's")


if __name__ == "__main__":
    main()
