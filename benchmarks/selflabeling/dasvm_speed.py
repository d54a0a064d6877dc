"""Speed of DASVM against skada's DASVMClassifier on the same rows, same SVC, same run.

Data: two Gaussian classes (means ``±3 e_1``, unit variance) in ``d`` dimensions, ``n`` rows
per class in the source; the target is the same classes rotated by 1.1 rad in the
``(e_1, e_2)`` plane (the source SVM misses a corner of each class). Three shapes:
``(n, d) = (100, 2), (250, 10), (500, 20)`` (400, 1,000 and 2,000 rows in all). Both fit
``SVC(kernel="linear")``, ``max_iter=1000``:

* ``skada k=3``: skada 0.6's defaults but the SVC (its ``k=3`` moves one row per side per
  iteration, see ``docs/dev/selflabeling.md``);
* ``ours k=3``: the same parameters (three rows per class per iteration);
* ``ours k=1``: the moves skada makes (one row per side), so the number of SVM fits is about
  skada's and the times compare the work per iteration.

Times are whole ``fit`` calls (validation included), the minimum over ``--repeats`` runs in
interleaved order, on one thread (``OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1``). The table also
gives the SVM fits (ours: ``n_iter_``; skada: its saved estimators, its final refit included)
and the target accuracy.

    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 python benchmarks/selflabeling/dasvm_speed.py
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from pathlib import Path

import numpy as np
from sklearn import config_context
from sklearn.exceptions import ConvergenceWarning
from sklearn.svm import SVC

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: _common
from _common import header, markdown_table, progress, track, write_results  # noqa: E402

from shiftlearn.selflabeling import DASVM  # noqa: E402

SHAPES = ((100, 2), (250, 10), (500, 20))


def rotated(n: int, d: int, seed: int = 0, angle: float = 1.1):
    """Source and target rows of the rotated two-Gaussian task (see the module docstring)."""
    rng = np.random.default_rng(seed)
    y = np.repeat([0, 1], n)
    mu = np.zeros((2, d))
    mu[:, 0] = [-3.0, 3.0]
    Xs = mu[y] + rng.normal(size=(2 * n, d))
    R = np.eye(d)
    R[:2, :2] = [[np.cos(angle), -np.sin(angle)], [np.sin(angle), np.cos(angle)]]
    Xt = (mu[y] + rng.normal(size=(2 * n, d))) @ R.T
    X = np.r_[Xs, Xt]
    yy = np.r_[y, -np.ones(2 * n, int)]
    sd = np.r_[np.ones(2 * n, int), -2 * np.ones(2 * n, int)]
    return X, yy, sd, y


def _runners():
    with config_context():          # importing skada switches routing on: keep it local
        from skada import DASVMClassifier

    def skada_k3(X, y, sd):
        m = DASVMClassifier(SVC(kernel="linear"), k=3, max_iter=1000, save_estimators=True)
        with config_context(enable_metadata_routing=True):
            m.fit(X, y, sample_domain=sd)
        return m, len(m.estimators)

    def ours(k):
        def run(X, y, sd):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", ConvergenceWarning)
                m = DASVM(SVC(kernel="linear"), k=k, max_iter=1000).fit(X, y, sd)
            return m, m.n_iter_
        return run

    return {"skada k=3": skada_k3, "ours k=3": ours(3), "ours k=1": ours(1)}


@progress()
def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--repeats", type=int, default=2)
    args = p.parse_args(argv)
    machine = header("DASVM vs skada's DASVMClassifier: fit time")
    runners = _runners()
    rows, data = [], []
    for n, d in track(SHAPES, "shapes"):
        X, y, sd, yt = rotated(n, d)
        tgt = sd < 0
        best = {name: np.inf for name in runners}
        info = {}
        for _ in range(args.repeats):
            for name, run in runners.items():
                t0 = time.perf_counter()
                m, fits = run(X, y, sd)
                best[name] = min(best[name], time.perf_counter() - t0)
                info[name] = (fits, float(np.mean(m.predict(X[tgt]) == yt)))
        base = float(np.mean(SVC(kernel="linear").fit(X[sd > 0], yt).predict(X[tgt]) == yt))
        for name in runners:
            row = {"rows": X.shape[0], "d": d, "method": name, "fit s": best[name],
                   "SVM fits": info[name][0], "target acc": info[name][1],
                   "skada / this": best["skada k=3"] / best[name],
                   "source-only acc": base}
            rows.append(row)
            data.append({k: (float(v) if isinstance(v, np.floating) else v)
                         for k, v in row.items()})
            print(row, flush=True)
    body = ("Same rows, same `SVC(kernel=\"linear\")`, `max_iter=1000`; minimum wall time of "
            f"{args.repeats} interleaved runs per method, one thread. `skada / this` > 1: "
            "ours is faster.\n\n" + markdown_table(
                rows, ["rows", "d", "method", "fit s", "SVM fits", "skada / this", "target acc",
                       "source-only acc"], floatfmt=".3f"))
    write_results("dasvm_speed", "DASVM vs skada's DASVMClassifier: fit time", body,
                  {"shapes": [list(s) for s in SHAPES], "repeats": args.repeats, "rows": data},
                  machine)


if __name__ == "__main__":
    main()
