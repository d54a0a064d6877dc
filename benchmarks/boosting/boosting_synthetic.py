"""Multi-task boosting on the synthetic monotone-shift pair (and the rotation negative control).

Protocol (``docs/boosting.md``, the paper note's section 11.3): ``make_monotone_shift`` with
2,000 source rows and 7,000 target rows per seed; the first 2,000 target rows are the labeled
pool, the last 5,000 the test set. A balanced subset of ``n_t`` in {10, 20, 50, 100} pool rows is
labeled. Methods: multi-task boosting ("ours"), target only (TD), pooling, source only (SD),
and full TD (all 2,000 pool labels, a reference, not a competitor). Median target test error
over the seeds (and the quartiles in the JSON). Nothing is tuned.

Run: ``python benchmarks/boosting/boosting_synthetic.py [--learner stump|tree] [--n-estimators K]
[--learning-rate g] [--seeds S]`` (stumps, K=500, g=0.1, 10 seeds: a few minutes).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: _common
from _common import header, markdown_table, progress, timer, track, write_results  # noqa: E402

from shiftlearn import MultiTaskBoostingClassifier  # noqa: E402
from shiftlearn.datasets import make_monotone_shift  # noqa: E402

N_TARGET = (10, 20, 50, 100)


def balanced_subset(y, idx, n, rng):
    """``n // 2`` rows of each class from ``idx`` (the rest from the larger class if short)."""
    pos, neg = idx[y[idx] == 1], idx[y[idx] != 1]
    k = min(n // 2, pos.size, neg.size)
    pick = np.concatenate([rng.choice(pos, k, replace=False), rng.choice(neg, k, replace=False)])
    if pick.size < n:
        rest = np.setdiff1d(idx, pick)
        pick = np.concatenate([pick, rng.choice(rest, n - pick.size, replace=False)])
    return pick


def run(shift, seeds, params):
    recs = []
    for seed in track(range(seeds), f"{shift}: seeds"):
        X, y, sd = make_monotone_shift(2000, 7000, shift=shift, random_state=seed)
        src, tgt = np.flatnonzero(sd > 0), np.flatnonzero(sd < 0)
        pool, test = tgt[:2000], tgt[2000:]
        rng = np.random.default_rng(1000 + seed)

        def err(mode, rows, X=X, y=y, sd=sd, test=test):
            clf = MultiTaskBoostingClassifier(**params, mode=mode).fit(X[rows], y[rows], sd[rows])
            return float(np.mean(clf.predict(X[test], sd[test]) != y[test]))

        recs.append({"seed": seed, "n_t": 0, "method": "SD only",
                     "error": err("source_only", src)})
        recs.append({"seed": seed, "n_t": 2000, "method": "Full TD",
                     "error": err("target_only", pool)})
        for n_t in N_TARGET:
            lab = balanced_subset(y, pool, n_t, rng)
            rows = np.concatenate([src, lab])
            for method, mode in [("Ours", "multitask"), ("TD only", "target_only"),
                                 ("Pooling", "pooling")]:
                recs.append({"seed": seed, "n_t": n_t, "method": method,
                             "error": err(mode, rows)})
        print(f"  {shift} seed {seed} done", flush=True)
    return recs


def summarise(recs):
    def med(method, n_t):
        v = [r["error"] for r in recs if r["method"] == method and r["n_t"] == n_t]
        return float(np.median(v)), float(np.percentile(v, 25)), float(np.percentile(v, 75))

    rows, checks = [], {}
    for method in ("Ours", "TD only", "Pooling"):
        row = {"method": method}
        for n_t in N_TARGET:
            m, q1, q3 = med(method, n_t)
            row[f"n_t={n_t}"] = f"{m:.3f} [{q1:.3f}, {q3:.3f}]"
        rows.append(row)
    for method, n_t in (("SD only", 0), ("Full TD", 2000)):
        m, q1, q3 = med(method, n_t)
        rows.append({"method": f"{method} (any n_t)",
                     **{f"n_t={k}": f"{m:.3f} [{q1:.3f}, {q3:.3f}]" for k in N_TARGET}})
    for n_t in N_TARGET:
        ours = med("Ours", n_t)[0]
        checks[n_t] = bool(ours < med("TD only", n_t)[0] and ours < med("Pooling", n_t)[0])
    return rows, checks


@progress()
def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--learner", choices=["stump", "tree"], default="stump")
    ap.add_argument("--n-estimators", type=int, default=500)
    ap.add_argument("--learning-rate", type=float, default=0.1)
    ap.add_argument("--seeds", type=int, default=10)
    ap.add_argument("--name", default=None)
    args = ap.parse_args(argv)
    params = dict(n_estimators=args.n_estimators, learning_rate=args.learning_rate,
                  max_depth=1 if args.learner == "stump" else 3)
    name = args.name or f"boosting_synthetic_{args.learner}"
    machine = header(f"Multi-task boosting, synthetic shift pair ({args.learner})")
    body, data = [], {"params": params, "seeds": args.seeds}
    with timer() as t:
        for shift in ("monotone", "rotation"):
            recs = run(shift, args.seeds, params)
            rows, checks = summarise(recs)
            data[shift] = {"records": recs, "ours_beats_td_and_pooling": checks}
            table = markdown_table(rows, ["method"] + [f"n_t={k}" for k in N_TARGET])
            verdict = ", ".join(f"n_t={k}: {'yes' if v else 'NO'}" for k, v in checks.items())
            part = (f"### shift = {shift}\n\nMedian target test error [quartiles] over "
                    f"{args.seeds} seeds.\n\n{table}\n\nOurs below both TD only and Pooling: "
                    f"{verdict}\n")
            print(part)
            body.append(part)
    data["seconds"] = t()
    intro = (f"Weak learner: {args.learner} (max_depth={params['max_depth']}), "
             f"K={args.n_estimators}, gamma={args.learning_rate}; source 2,000 rows, target pool "
             f"2,000, test 5,000; balanced labeled target subsets. Total time {t():.0f} s.\n\n")
    write_results(name, f"Multi-task boosting on the synthetic shift pair ({args.learner})",
                  intro + "\n".join(body), data, machine)


if __name__ == "__main__":
    main()
