"""Rotated ellipses (Blanchard et al. Alg. 1, §8.2): Tables 1-2, marginal transfer vs pooling.

N in {16, 64, 256} training tasks x n in {8, 16, 32, 256} points; test on 10 fresh tasks of
2,000 points, each embedded from all its own (unlabeled) rows. Both methods: RF solver
(L = 100, Q = 200), hinge loss, 1/(N n) weights, no intercept; hyper-parameters by 3-fold
task-level CV with the authors' staged search (``_marginal_common.py`` beside this script), run
on at most 64 tasks x 32 points (compute budget); the chosen parameters are refitted on all the
data.

    python benchmarks/generalization/marginal_ellipses.py [--reps R] [--N 16 64] [--n 8 256]
    python benchmarks/generalization/marginal_ellipses.py --pooled-bayes-only

Why pooling is not at 50% here: in Algorithm 1 every major axis is within 45 degrees of vertical
and the label is the side of the axis, so a task-blind rule already beats chance. The script
reports the *pooled Bayes error* (the lowest error any classifier of x alone can reach on the
mixture of tasks), estimated with a fine 2-D histogram fitted on 4,000 tasks x 500 points and
scored on 4,000 fresh tasks, and the error of the rule ``x_1 > 0 => +1``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: _common

from _common import header, progress, timer, track, write_results  # noqa: E402
from _marginal_common import tune_pair  # noqa: E402

from shiftlearn.datasets import make_rotated_ellipses  # noqa: E402
from shiftlearn.generalization import (  # noqa: E402
    MarginalTransferClassifier,
    PoolingClassifier,
    task_group_score,
)

PAPER_MT = {8: (36.01, 33.08, 31.69), 16: (31.55, 31.03, 30.96), 32: (30.44, 29.31, 23.87),
            256: (23.78, 7.22, 1.27)}
PAPER_POOL = {8: (49.14, 49.11, 50.04), 16: (49.89, 50.04, 49.68), 32: (50.32, 50.21, 49.61),
              256: (50.01, 50.43, 49.93)}
NS = (16, 64, 256)

STAGE_XC = {"sigma_x": [0.2, 0.4, 0.8], "C": [1.0, 10.0, 100.0]}
STAGE_EMB = {"sigma_emb": ["0.5*median", "median"], "sigma_p": ["0.5*median", "median",
                                                                 "2*median"]}


def one(N, n, rep, Xt, yt, sdt):
    X, y, sd = make_rotated_ellipses(N, n, random_state=10_000 * rep + 100 * N + n)
    kw = dict(solver="rf", n_features=200, random_state=rep)
    with timer() as t:
        mt, pool, ms, ps = tune_pair(MarginalTransferClassifier(n_features_emb=100, **kw),
                                     PoolingClassifier(**kw), X, y, sd, stage_xc=STAGE_XC,
                                     stage_emb=STAGE_EMB, cv=3, random_state=rep,
                                     max_tasks=64, max_per_task=32)
    # the authors' code embeds a test task from n of its points: cut each test task into
    # chunks of n rows, each chunk a test task of its own (embedded from, scored on its rows)
    chunk = np.zeros(len(sdt), dtype=np.int64)
    for i in np.unique(sdt):
        rows = np.flatnonzero(sdt == i)
        chunk[rows] = np.arange(rows.shape[0]) // n
    sd_small = sdt * 100_000 - chunk
    return {"N": N, "n": n, "rep": rep,
            "mt_err": 100 * (1 - task_group_score(mt, Xt, yt, sdt)),
            "mt_err_small": 100 * (1 - task_group_score(mt, Xt, yt, sd_small)),
            "pool_err": 100 * (1 - task_group_score(pool, Xt, yt, sdt)),
            "mt_params": ms.best_params_, "pool_params": ps.best_params_, "seconds": t()}


def pooled_bayes(sampling="code", n_tasks=4000, n_points=500, bins=80, random_state=0):
    """Plug-in estimate of the pooled Bayes error and of the ``x_1 > 0`` rule (in %).

    ``P(y = +1 | x)`` over the mixture of tasks is estimated per cell of a ``bins x bins``
    histogram on one sample; the majority label of each cell is scored on an independent
    sample (so the estimate is not optimistic from fitting and scoring on the same points).
    """
    fit = make_rotated_ellipses(n_tasks, n_points, labels=(-1, 1), point_sampling=sampling,
                                random_state=random_state)
    test = make_rotated_ellipses(n_tasks, n_points, labels=(-1, 1), point_sampling=sampling,
                                 random_state=random_state + 1)
    edges = np.linspace(-1.0, 1.0, bins + 1)

    def cell(X):
        i = np.clip(np.searchsorted(edges, X[:, 0]) - 1, 0, bins - 1)
        j = np.clip(np.searchsorted(edges, X[:, 1]) - 1, 0, bins - 1)
        return i * bins + j

    c = cell(fit[0])
    pos = np.bincount(c, weights=(fit[1] > 0), minlength=bins * bins)
    tot = np.bincount(c, minlength=bins * bins)
    rule = np.where(pos >= tot - pos, 1, -1)
    Xt, yt = test[0], test[1]
    return {"sampling": sampling, "pooled_bayes_err": 100 * float(np.mean(rule[cell(Xt)] != yt)),
            "x1_rule_err": 100 * float(np.mean(np.where(Xt[:, 0] > 0, 1, -1) != yt))}


def table(rows, key, paper):
    out = ["| n \\ N | " + " | ".join(f"{N} (ours)" + f" | {N} (paper)" for N in NS) + " |",
           "|---|" + "---|---|" * len(NS)]
    for n in sorted({r["n"] for r in rows}):
        cells = []
        for j, N in enumerate(NS):
            vals = [r[key] for r in rows if r["N"] == N and r["n"] == n]
            cells.append(f"{np.mean(vals):.2f}" if vals else "-")
            cells.append(f"{paper[n][j]:.2f}")
        out.append(f"| {n} | " + " | ".join(cells) + " |")
    return "\n".join(out)


@progress()
def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=1)
    ap.add_argument("--N", type=int, nargs="*", default=list(NS))
    ap.add_argument("--n", type=int, nargs="*", default=[8, 16, 32, 256])
    ap.add_argument("--name", default="marginal_ellipses")
    ap.add_argument("--pooled-bayes-only", action="store_true",
                    help="only the pooled Bayes error (seconds), written to <name>_bayes")
    args = ap.parse_args(argv)
    machine = header("Rotated ellipses: marginal transfer vs pooling (paper Tables 1-2)")
    bayes = [pooled_bayes(s) for s in ("code", "uniform")]
    for b in bayes:
        print(b, flush=True)
    bayes_md = ("## Why pooling cannot sit at 50% with Algorithm 1\n\n"
                "Every major axis is within 45 degrees of vertical and the label is the side of "
                "the axis, so the task-blind rule `x_1 > 0 => +1` already beats chance. Lowest "
                "error of any classifier of x alone on the mixture of tasks (pooled Bayes "
                "error, histogram estimate, 4,000 + 4,000 tasks x 500 points):\n\n"
                "| sampling | pooled Bayes error (%) | rule x_1 > 0 error (%) |\n|---|---|---|\n"
                + "\n".join(f"| {b['sampling']} | {b['pooled_bayes_err']:.2f} | "
                             f"{b['x1_rule_err']:.2f} |" for b in bayes))
    Xt, yt, sdt = make_rotated_ellipses(10, 2000, first_domain=-1000, random_state=999)
    rule_test = 100 * float(np.mean(np.where(Xt[:, 0] > 0, 1, 0) != yt))
    print({"x1_rule_err_on_benchmark_test_tasks": rule_test}, flush=True)
    bayes_md += (f"\n\nOn the benchmark's own 10 test tasks (seed 999) the rule `x_1 > 0 => +1` "
                 f"errs on {rule_test:.2f}% of the points: the pooling column should be compared "
                 "with this, not with 50%.")
    if args.pooled_bayes_only:
        write_results(args.name + "_bayes", "Rotated ellipses: pooled Bayes error", bayes_md,
                      {"pooled_bayes": bayes, "x1_rule_err_on_test_tasks": rule_test}, machine)
        return
    # the generator lists each task's positive rows first: shuffle so that the n-point chunks
    # below are random subsamples (the full-task embedding does not depend on the order)
    perm = np.random.default_rng(0).permutation(len(yt))
    Xt, yt, sdt = Xt[perm], yt[perm], sdt[perm]
    rows = []
    for rep in track(range(args.reps), "repetitions"):
        for n in args.n:
            for N in track(args.N, f"rep {rep}, n={n}: N"):
                r = one(N, n, rep, Xt, yt, sdt)
                rows.append(r)
                print(r, flush=True)
    body = (f"{args.reps} repetition(s); test: 10 fresh tasks x 2,000 points (the paper: 10 x "
            "1,000,000), each embedded from all its rows. Average error (%) over test tasks. "
            "Hyper-parameters: 3-fold task-level CV, staged search (pooling (sigma_x, C); then "
            "(sigma_emb, sigma_p); then (sigma_x, C)) on <= 64 tasks x 32 points, refitted on "
            "all rows. RF solver L = 100, Q = 200.\n\n"
            "## Marginal transfer (paper Table 1)\n\n" + table(rows, "mt_err", PAPER_MT)
            + "\n\n## Marginal transfer, test tasks of n points (the authors' code embeds a "
            "test task from n of its points)\n\n" + table(rows, "mt_err_small", PAPER_MT)
            + "\n\n## Pooling (paper Table 2)\n\n" + table(rows, "pool_err", PAPER_POOL)
            + "\n\nSelected hyper-parameters and times are in the JSON file.\n\n" + bayes_md)
    write_results(args.name, "Rotated ellipses: marginal transfer vs pooling", body,
                  {"rows": rows, "pooled_bayes": bayes}, machine)


if __name__ == "__main__":
    main()
