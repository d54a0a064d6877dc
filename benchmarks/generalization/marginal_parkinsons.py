"""Parkinson's telemonitoring (Blanchard et al. §8.3, Tables 3-4): marginal transfer vs pooling.

Target **total_UPDRS** (the paper does not say; its pooling RMSE of 11-14 matches the spread of
total_UPDRS, std 10.7, not motor_UPDRS, std 8.1), the 16 voice features (standardised with the
training rows' mean/std), one task per patient. Each repetition draws 7 random test patients;
the training tasks are the first N of the other 35 (in a random order) with n random recordings
each. Test tasks: all recordings of each test patient, embedded from all of them. RMSE =
sqrt(mean over test patients of the per-patient MSE). RF solver (L = 100, Q = 200),
epsilon-insensitive loss (epsilon = 0.1 target std), hyper-parameters by 5-fold task-level CV
repeated twice on the training patients (pooling: (sigma_x, C); marginal transfer then
(sigma_emb, sigma_p); small grids for the 2-core compute budget, see
benchmarks/generalization/_marginal_common.py).

    python benchmarks/generalization/marginal_parkinsons.py [--reps R] [--N 10 35] [--n 20 100]
    python benchmarks/generalization/marginal_parkinsons.py --ceiling-only

Ceiling diagnostic (``--ceiling-only``, seconds; also run before the main table): marginal
transfer can only beat pooling here by predicting a *new patient's* UPDRS level from the
distribution of their voice measures (the between-patient std of total_UPDRS is ~10.5, the
within-patient std 2.8). The diagnostic fits kernel ridge regression from each patient's
kernel mean embedding (all recordings, the same Gaussian k_P on embeddings as marginal
transfer) to the patient's mean UPDRS, leave-one-patient-out over all 42 patients, and reports
the best RMSE over a (sigma_emb, sigma_p, lambda) grid. Choosing the grid point *after* seeing
the leave-one-out scores makes it optimistic: an upper bound on what the embedding tells about
the patient level, not a result.

Internals on purpose: the ceiling diagnostic regresses on the task embeddings of
``shiftlearn.generalization._embedding``, which no public function exposes.
``tests/house/test_benchmarks.py`` imports this script, so a rename fails the test suite.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: _common

from _common import header, progress, timer, track, write_results  # noqa: E402
from _marginal_common import tune_pair  # noqa: E402

from shiftlearn.datasets import load_parkinsons  # noqa: E402
from shiftlearn.generalization import (  # noqa: E402
    MarginalTransferRegressor,
    PoolingRegressor,
    task_group_score,
)

NS = (10, 15, 20, 25, 30, 35)
NLEVELS = (20, 24, 28, 34, 41, 49, 58, 70, 84, 100)
PAPER_MT = {20: (13.78, 12.37, 11.93, 10.74, 10.08, 11.17),
            24: (14.18, 11.89, 11.51, 10.90, 10.55, 10.18),
            28: (14.95, 13.29, 12.00, 10.21, 10.59, 9.52),
            34: (13.27, 11.66, 11.79, 9.16, 9.34, 10.50),
            41: (12.89, 11.27, 11.17, 9.91, 9.10, 10.05),
            49: (13.15, 11.70, 13.81, 10.12, 9.01, 8.69),
            58: (12.16, 9.59, 9.85, 9.28, 8.44, 7.62),
            70: (13.03, 9.16, 8.80, 9.03, 8.16, 7.88),
            84: (11.98, 9.18, 9.74, 9.03, 7.30, 7.01),
            100: (12.69, 8.48, 9.52, 8.01, 7.14, 7.5)}
PAPER_POOL = {20: (13.64, 11.93, 11.95, 11.06, 11.91, 12.08),
              24: (13.80, 11.83, 11.70, 11.98, 11.68, 11.48),
              28: (13.78, 11.70, 11.72, 11.18, 11.58, 11.73),
              34: (13.71, 12.20, 12.04, 11.17, 11.67, 11.92),
              41: (13.69, 11.73, 12.08, 11.28, 11.55, 12.59),
              49: (13.75, 11.85, 11.79, 11.17, 11.34, 11.82),
              58: (13.70, 11.89, 12.06, 11.06, 11.82, 11.65),
              70: (13.54, 11.86, 12.14, 11.21, 11.40, 11.96),
              84: (13.55, 11.98, 12.03, 11.25, 11.54, 12.22),
              100: (13.53, 11.85, 11.92, 11.12, 11.96, 11.84)}

# The earlier grids (sigma_x in {1, 2} x median, C in {0.1, 1}) put the pooling optimum on the
# grid corner (C = 0.1, sigma_x = 2 x median) in 40 of 45 runs: extended one step outwards
# (the paper re-centres the grid when the optimum is on its boundary), and sigma_p also below
# the median so that k_P can tell patients apart sharply.
STAGE_XC = {"sigma_x": ["median", "2*median", "4*median"], "C": [0.01, 0.1, 1.0]}
STAGE_EMB = {"sigma_emb": ["median", "2*median"],
             "sigma_p": ["0.5*median", "median", "4*median", "16*median"]}


def stack(ds, names, n=None, rng=None):
    Xs, ys, sds = [], [], []
    for k, name in enumerate(names):
        X, y = ds.get(name)
        if n is not None and X.shape[0] > n:
            idx = np.sort(rng.choice(X.shape[0], n, replace=False))
            X, y = X[idx], y[idx]
        Xs.append(X)
        ys.append(y)
        sds.append(np.full(X.shape[0], k + 1, dtype=np.int64))
    return np.vstack(Xs), np.concatenate(ys), np.concatenate(sds)


def one(ds, names, rep, N, n, log=False, cv=5, cv_repeats=2):
    rng = np.random.default_rng(1000 * rep + 10 * N + n)
    test, pool_names = names[:7], names[7:7 + N]
    X, y, sd = stack(ds, pool_names, n, rng)
    Xt, yt, sdt = stack(ds, test)
    if log:  # the last 16 columns are the voice measures (all >= 0 except DFA/HNR > 0)
        X[:, -16:] = np.log(np.maximum(X[:, -16:], 0) + 1e-6)
        Xt[:, -16:] = np.log(np.maximum(Xt[:, -16:], 0) + 1e-6)
    sdt = -sdt
    mu, sigma = X.mean(axis=0), X.std(axis=0)
    sigma[sigma == 0] = 1.0
    X, Xt = (X - mu) / sigma, (Xt - mu) / sigma
    kw = dict(solver="rf", n_features=200, epsilon=0.1, random_state=rep)
    with timer() as t:
        mt, pool, ms, ps = tune_pair(MarginalTransferRegressor(n_features_emb=100, **kw),
                                     PoolingRegressor(**kw), X, y, sd, stage_xc=STAGE_XC,
                                     stage_emb=STAGE_EMB, cv=cv, n_repeats=cv_repeats,
                                     random_state=rep, restage=False)
    return {"rep": rep, "N": N, "n": n,
            "mt_rmse": -task_group_score(mt, Xt, yt, sdt),
            "pool_rmse": -task_group_score(pool, Xt, yt, sdt),
            "mean_rmse": float(np.sqrt(np.mean([np.mean((yt[sdt == i] - y.mean()) ** 2)
                                                for i in np.unique(sdt)]))),
            "mt_params": ms.best_params_, "pool_params": ps.best_params_, "seconds": t()}


def embedding_ceiling(ds, log=False):
    """Leave-one-patient-out kernel ridge regression of the patient's mean y on its kernel mean
    embedding; best RMSE over the grid (optimistic, see the module docstring)."""
    from shiftlearn.generalization._embedding import (
        embedding_sq_distances,
        exact_embedding_gram,
    )
    from shiftlearn.kernels import median_heuristic, sigma_from_sq_distances
    parts = [ds.get(name) for name in ds.domain_names]
    X = np.vstack([p[0] for p in parts])
    task = np.concatenate([np.full(p[0].shape[0], i) for i, p in enumerate(parts)])
    if log:
        X[:, -16:] = np.log(np.maximum(X[:, -16:], 0) + 1e-6)
    X = (X - X.mean(axis=0)) / np.where(X.std(axis=0) > 0, X.std(axis=0), 1.0)
    ym = np.array([p[1].mean() for p in parts])
    N = ym.shape[0]
    loo_const = float(np.sqrt(np.mean([(ym[i] - np.delete(ym, i).mean()) ** 2
                                       for i in range(N)])))
    best = (np.inf, None)
    med_x = median_heuristic(X)
    for f_emb in track((0.5, 1.0, 2.0), "ceiling: embedding bandwidths"):
        G = exact_embedding_gram(X, task, N, sigma=f_emb * med_x)
        D2 = embedding_sq_distances(G, np.diag(G), np.diag(G))
        med_p = sigma_from_sq_distances(D2)
        for f_p in (0.25, 0.5, 1.0, 2.0, 4.0):
            K = np.exp(-D2 / (2 * (f_p * med_p) ** 2))
            for lam in (1e-3, 1e-2, 1e-1, 1.0):
                pred = np.empty(N)
                for i in range(N):
                    tr = np.arange(N) != i
                    mu = ym[tr].mean()
                    a = np.linalg.solve(K[np.ix_(tr, tr)] + lam * np.eye(N - 1), ym[tr] - mu)
                    pred[i] = mu + K[i, tr] @ a
                rmse = float(np.sqrt(np.mean((pred - ym) ** 2)))
                if rmse < best[0]:
                    best = (rmse, {"sigma_emb": f"{f_emb}*median", "sigma_p": f"{f_p}*median",
                                   "lambda": lam})
    within = float(np.sqrt(np.mean([p[1].var() for p in parts])))
    return {"log": log, "between_patient_std": float(ym.std()), "within_patient_std": within,
            "loo_constant_rmse": loo_const, "best_loo_embedding_krr_rmse": best[0],
            "best_params": best[1]}


def ceiling_md(c, target="total_UPDRS"):
    return ("## Ceiling diagnostic: how much does a patient's voice distribution tell about "
            "their UPDRS level?\n\n"
            f"Patient-level {target}: between-patient std {c['between_patient_std']:.2f}, "
            f"within-patient std {c['within_patient_std']:.2f}. Leave-one-patient-out over "
            f"the 42 patients: predicting the other patients' mean gives RMSE "
            f"{c['loo_constant_rmse']:.2f}; the *best* kernel ridge regression on the "
            f"patients' kernel mean embeddings (grid point chosen after seeing the scores, so "
            f"optimistic) gives {c['best_loo_embedding_krr_rmse']:.2f} "
            f"({c['best_params']}). The paper's marginal-transfer RMSE of 7.0-7.6 would need "
            "the embedding to explain about half of the between-patient variance of "
            "total_UPDRS; on this data it explains almost none.")


def table(rows, key, paper, Ns, nl):
    out = ["| n \\ N | " + " | ".join(f"{N} ours | {N} paper" for N in Ns) + " |",
           "|---|" + "---|---|" * len(Ns)]
    for n in nl:
        cells = []
        for N in Ns:
            vals = [r[key] for r in rows if r["N"] == N and r["n"] == n]
            cells += [f"{np.mean(vals):.2f}" if vals else "-", f"{paper[n][NS.index(N)]:.2f}"]
        out.append(f"| {n} | " + " | ".join(cells) + " |")
    return "\n".join(out)


@progress()
def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--N", type=int, nargs="*", default=[10, 20, 25, 30, 35])
    ap.add_argument("--n", type=int, nargs="*", default=[20, 58, 100])
    ap.add_argument("--target", default="total_UPDRS")
    ap.add_argument("--features", default="voice", choices=["voice", "all"],
                    help="'all' adds age, sex and test_time to the 16 voice measures")
    ap.add_argument("--log", action="store_true",
                    help="log(x + 1e-6) of the (heavy-tailed, non-negative) voice measures first")
    ap.add_argument("--cv", type=int, default=5, help="task folds")
    ap.add_argument("--cv-repeats", type=int, default=2,
                    help="independently shuffled fold splits (the paper: 5)")
    ap.add_argument("--ceiling-only", action="store_true",
                    help="only the embedding ceiling diagnostic (seconds)")
    args = ap.parse_args(argv)
    machine = header("Parkinson's telemonitoring: marginal transfer vs pooling "
                     "(paper Tables 3-4)")
    ds = load_parkinsons(target=args.target, features=args.features)
    ceiling = embedding_ceiling(ds, log=args.log)
    print(ceiling, flush=True)
    name = ("marginal_parkinsons" + ("" if args.features == "voice" else "_allfeatures")
            + ("_log" if args.log else "")
            + ("" if args.target == "total_UPDRS" else f"_{args.target}"))
    if args.ceiling_only:
        write_results(name + "_ceiling", f"Parkinson's: embedding ceiling ({args.features} "
                      f"features, target {args.target})", ceiling_md(ceiling, args.target),
                      {"ceiling": ceiling}, machine)
        return
    rows = []
    for rep in track(range(args.reps), "repetitions"):
        names = list(np.random.default_rng(rep).permutation(ds.domain_names))
        for N in args.N:
            for n in args.n:
                r = one(ds, names, rep, N, n, log=args.log, cv=args.cv,
                        cv_repeats=args.cv_repeats)
                rows.append(r)
                print(r, flush=True)
    wins = [r for r in rows if r["N"] >= 25 and r["n"] >= 58]
    summary = ""
    if wins:
        const = np.mean([r["mean_rmse"] for r in wins])
        mt = np.mean([r["mt_rmse"] for r in wins])
        po = np.mean([r["pool_rmse"] for r in wins])
        frac = np.mean([r["mt_rmse"] < r["pool_rmse"] for r in wins])
        summary = (f"\n\nN >= 25 and n >= 58: mean RMSE marginal transfer {mt:.2f}, pooling "
                   f"{po:.2f}; marginal transfer lower in {100 * frac:.0f}% of the "
                   f"{len(wins)} (setting, repetition) pairs. Constant prediction (training "
                   f"mean of y): {const:.2f}.")
    body = (f"Target {args.target}, features {args.features}"
            + (" (voice measures log(x + 1e-6)-transformed)" if args.log else "")
            + f"; {args.reps} repetitions (7 random "
            f"test patients each); hyper-parameters by {args.cv}-fold task-level CV repeated "
            f"{args.cv_repeats}x on the training patients only. "
            "RMSE = sqrt(mean per-patient MSE). Paper columns: Tables 3-4 of the note.\n\n"
            "## Marginal transfer (paper Table 3)\n\n"
            + table(rows, "mt_rmse", PAPER_MT, args.N, args.n)
            + "\n\n## Pooling (paper Table 4)\n\n"
            + table(rows, "pool_rmse", PAPER_POOL, args.N, args.n)
            + "\n\n## Reference: constant prediction = training mean of y (no paper value)\n\n"
            + table(rows, "mean_rmse", {n: (float("nan"),) * 6 for n in NLEVELS}, args.N,
                    args.n) + summary
            + "\n\nSelected hyper-parameters and times are in the JSON file.\n\n"
            + ceiling_md(ceiling, args.target))
    write_results(name, f"Parkinson's: marginal transfer vs pooling ({args.features} features)",
                  body, {"rows": rows, "target": args.target, "features": args.features,
                         "ceiling": ceiling}, machine)


if __name__ == "__main__":
    main()
