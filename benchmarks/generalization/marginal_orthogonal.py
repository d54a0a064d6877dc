"""Marginal transfer's two-stage random features: orthogonal vs i.i.d. Gaussian frequencies.

``MarginalTransferClassifier(solver="rf", sampling="orthogonal")`` draws both stages'
frequencies with :func:`shiftlearn.kernels.rff_weights` ``(sampling="orthogonal")``. Two parts:

* ``error``: rms error of the two-stage estimate ``z(u_a) . z(u_b)`` of the exact product
  kernel ``k_P(P_a, P_b) k_X(x_a, x_b)`` (eq. 8, exact embeddings from every row of a task),
  ``L = 100`` embedding frequencies, ``Q in {100, 300}``, 10 frequency seeds per sampling, on
  three data sets: rotated ellipses (d = 2, 64 tasks x 32 points), Parkinson's voice features
  (d = 16, standardised, 35 patients x 40 recordings) and Office+Caltech SURF (d = 800, the 4
  domains x 150 rows). Bandwidths: median rules (``sigma_x = sigma_emb`` = median pairwise
  distance of the rows, ``sigma_p`` = median distance of the exact embeddings).
* ``ellipses``: test error of the fitted classifier (``C = 10, sigma_x = 0.3``, other
  bandwidths by the median rules, ``Q = 100``, hinge) trained on 64 tasks x 64 points and
  tested on 50 fresh tasks x 200 points, 10 seeds (data and frequencies), per sampling.

::

    OMP_NUM_THREADS=1 python benchmarks/generalization/marginal_orthogonal.py

Internals on purpose: the kernel error is measured on the embedding and product-kernel building
blocks of ``shiftlearn.generalization._embedding``, which no public function exposes.
``tests/house/test_benchmarks.py`` imports this script, so a rename fails the test suite.
"""

from __future__ import annotations

import sys
import warnings
from pathlib import Path

import numpy as np
from sklearn.exceptions import ConvergenceWarning
from threadpoolctl import threadpool_limits

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: _common
from _common import header, markdown_table, progress, track, write_results  # noqa: E402
from _marginal_common import tuning_subsample  # noqa: E402  (also sets the data home)

from shiftlearn.datasets import (  # noqa: E402
    load_office_caltech,
    load_parkinsons,
    make_rotated_ellipses,
)
from shiftlearn.generalization import MarginalTransferClassifier, task_group_score  # noqa: E402
from shiftlearn.generalization import _embedding as emb  # noqa: E402
from shiftlearn.kernels import median_heuristic, rff_weights, sigma_from_sq_distances  # noqa: E402

SAMPLINGS = ("gaussian", "orthogonal")
SEEDS = range(10)


def datasets():
    X, _, sd = make_rotated_ellipses(64, 32, random_state=0)
    yield "ellipses (d = 2)", X, sd
    ds = load_parkinsons()
    names = ds.domain_names[:35]
    X, _, sd = ds.pack(names)
    X = (X - X.mean(axis=0)) / X.std(axis=0)
    idx = tuning_subsample(sd, max_per_task=40, random_state=0)
    yield "Parkinson's voice (d = 16)", X[idx], sd[idx]
    ds = load_office_caltech()
    X, _, sd = ds.pack(ds.domain_names)
    idx = tuning_subsample(sd, max_per_task=150, random_state=0)
    yield "Office+Caltech SURF (d = 800)", X[idx], sd[idx]


def part_error(L=100, Qs=(100, 300)):
    rows = []
    for name, X, sd in track(datasets(), "data sets", total=3):
        _, task = np.unique(sd, return_inverse=True)
        N, d = task.max() + 1, X.shape[1]
        sx = median_heuristic(X)
        G = emb.exact_embedding_gram(X, task, N, sigma=sx)
        D2 = emb.embedding_sq_distances(G, np.diag(G), np.diag(G))
        sp = sigma_from_sq_distances(D2)
        K = emb.product_kernel(X, task, emb.gaussian_from_sq_distances(D2, sp), sigma=sx)
        for Q in Qs:
            row = {"data": name, "rows x tasks": f"{X.shape[0]} x {N}", "Q": Q}
            for sampling in SAMPLINGS:
                errs = []
                for seed in SEEDS:
                    W = rff_weights(d, L, sx, 1000 + seed, sampling=sampling)
                    ZP = emb.rff_embeddings(X, task, N, W)
                    V = rff_weights(d + ZP.shape[1], Q, 1.0, seed, sampling=sampling)
                    Z = emb.rff_product_features(X, task, ZP, V[:d], V[d:], sigma_x=sx, sigma_p=sp)
                    errs.append(float(np.sqrt(np.mean((Z @ Z.T - K) ** 2))))
                row[f"{sampling} rms error"] = f"{np.mean(errs):.4f} ± {np.std(errs):.4f}"
                row[f"_{sampling}"] = errs
            ratio = np.mean(row["_orthogonal"]) / np.mean(row["_gaussian"])
            row["orthogonal / gaussian"] = f"{ratio:.2f}"
            rows.append(row)
            print({k: v for k, v in row.items() if not k.startswith("_")}, flush=True)
    return rows


def part_ellipses(Q=100):
    errs = {s: [] for s in SAMPLINGS}
    for seed in track(SEEDS, "ellipses seeds"):
        X, y, sd = make_rotated_ellipses(64, 64, random_state=seed)
        Xt, yt, sdt = make_rotated_ellipses(50, 200, first_domain=1000, random_state=100 + seed)
        for sampling in SAMPLINGS:
            clf = MarginalTransferClassifier(C=10.0, bandwidth_x=0.3, solver="rf", n_features=Q,
                                             sampling=sampling, random_state=seed)
            errs[sampling].append(100 * (1 - task_group_score(clf.fit(X, y, sd), Xt, yt, sdt)))
    diff = np.subtract(errs["orthogonal"], errs["gaussian"])
    print({s: np.mean(v) for s, v in errs.items()}, flush=True)
    return errs, diff


@progress()
def main():
    warnings.simplefilter("ignore", ConvergenceWarning)
    machine = header("Marginal transfer: orthogonal vs Gaussian random features")
    with threadpool_limits(1):
        err_rows = part_error()
        ell, diff = part_ellipses()
    cols = ["data", "rows x tasks", "Q", "gaussian rms error", "orthogonal rms error",
            "orthogonal / gaussian"]
    ell_rows = [{"sampling": s, "test error % (mean ± sd, 10 seeds)":
                 f"{np.mean(v):.2f} ± {np.std(v):.2f}"} for s, v in ell.items()]
    body = (
        "Product-kernel error of the two-stage random features (L = 100 embedding "
        "frequencies, exact embeddings as reference, median bandwidths, 10 frequency seeds; "
        "mean ± sd of the rms error over all row pairs):\n\n"
        + markdown_table(err_rows, cols)
        + "\n\nRotated ellipses, 64 training tasks x 64 points, 50 test tasks x 200 points, "
        "`C = 10, sigma_x = 0.3`, Q = 100, hinge, 10 seeds (data and frequencies):\n\n"
        + markdown_table(ell_rows)
        + f"\n\nOrthogonal minus Gaussian, per seed: {', '.join(f'{v:+.2f}' for v in diff)} "
        f"points (mean {diff.mean():+.2f}).\n")
    write_results("marginal_orthogonal", "Marginal transfer: orthogonal vs Gaussian random "
                  "features", body, {"error": err_rows, "ellipses": ell,
                                     "ellipses_diff": diff.tolist()}, machine)


if __name__ == "__main__":
    main()
