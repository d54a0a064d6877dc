"""CORAL's shrinkage on the real tasks: the default ``"auto"`` against ``"ledoit_wolf"`` and 1.0.

``"auto"`` (Ledoit-Wolf on standardised columns, skada's and LDA's) has no structure for
``d >> n``: its fit needs two ``d x d`` eigendecompositions. ``"ledoit_wolf"`` (Ledoit-Wolf on
the columns as they are) and a float shrink toward the scaled identity, so CORAL's factored
route applies. This script measures what the choice costs in accuracy: the target accuracy of
1NN and of a standardised logistic regression after CORAL with each shrinkage, and without
adaptation, on the selection study's tasks (all rows). These are ORACLE numbers (target labels):
a diagnosis for choosing a default, never a way to choose per task; the default itself changes
only on the selection study's target-free criteria.

    OPENBLAS_NUM_THREADS=1 python benchmarks/adaptation/coral_shrinkage.py
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: _common
from _common import header, markdown_table, progress, track, write_results  # noqa: E402

SHRINKAGES = ("auto", "ledoit_wolf", 1.0)


def _tasks():
    from shiftlearn.datasets import load_mnist_usps, load_msrc_voc, load_office_caltech

    for load in (load_office_caltech, load_mnist_usps, load_msrc_voc):
        ds = load()
        for s, t in ds.tasks:
            X, y, sd, y_true = ds.pack(s, t, return_masked_labels=True)
            yield f"{ds.name}: {s}->{t}", X, y, sd, y_true[sd < 0]


def _classifiers():
    from sklearn.linear_model import LogisticRegression
    from sklearn.neighbors import KNeighborsClassifier
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    return {"1NN": lambda: KNeighborsClassifier(1),
            "logreg": lambda: make_pipeline(StandardScaler(), LogisticRegression(max_iter=1000))}


@progress()
def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.parse_args(argv)
    from threadpoolctl import threadpool_limits

    from shiftlearn.adaptation import CORAL

    machine = header("CORAL's shrinkage on the real tasks (ORACLE target accuracy)")
    rows = []
    with threadpool_limits(1):
        for name, X, y, sd, y_t in track(list(_tasks()), "tasks"):
            src, tgt = sd > 0, sd < 0
            row = {"task": name, "d": X.shape[1]}
            mapped = {"none": X}
            for sh in SHRINKAGES:
                t0 = time.perf_counter()
                mapped[sh] = CORAL(shrinkage=sh).fit_transform(X, y, sd)
                row[f"fit (s) {sh}"] = round(time.perf_counter() - t0, 3)
            for cname, make in _classifiers().items():
                for key, Z in mapped.items():
                    clf = make().fit(Z[src], y[src])
                    row[f"{cname} {key}"] = round(100 * float(np.mean(clf.predict(Z[tgt]) == y_t)),
                                                  2)
            rows.append(row)
            print("  " + ", ".join(f"{k}={v}" for k, v in row.items()), flush=True)
    keys = [k for k in rows[0] if k not in ("task", "d")]
    mean = {"task": "mean", "d": ""} | {k: round(float(np.mean([r[k] for r in rows])), 2)
                                         for k in keys}
    body = ("Target accuracy (%, ORACLE: target labels, a diagnosis) of 1NN and of a "
            "standardised logistic regression trained on the source rows after CORAL with each "
            "`shrinkage` (`none`: no adaptation), and CORAL's fit time (s, one BLAS thread), "
            "on every row of each task.\n\n" + markdown_table(rows + [mean], floatfmt=".2f"))
    write_results("coral_shrinkage", "CORAL's shrinkage on the real tasks", body,
                  {"rows": rows, "mean": mean}, machine)


if __name__ == "__main__":
    main()
