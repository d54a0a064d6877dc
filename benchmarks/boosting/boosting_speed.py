"""Speed of multi-task boosting vs scikit-learn's HistGradientBoostingClassifier (same run).

Data: ``make_monotone_shift(n_source, n_target, n_features=50)``: 100,000 source rows, 1,000
labeled target rows, d = 50, two tasks. Multi-task boosting with 500 stumps and with 500
depth-3 trees (gamma = 0.1); HistGradientBoostingClassifier on the pooled rows with the same
number of iterations, learning rate and depth (no early stopping; it uses OpenMP threads).
Times include binning; wall-clock and process CPU time are both reported. The
machine is shared, so compare the ratios within a run.

Run: ``python benchmarks/boosting/boosting_speed.py [--n-source N] [--n-estimators K]``.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np
from sklearn.ensemble import HistGradientBoostingClassifier

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: _common
from _common import header, markdown_table, peak_rss_mb, timer, write_results  # noqa: E402

from shiftlearn import MultiTaskBoostingClassifier  # noqa: E402
from shiftlearn.datasets import make_monotone_shift  # noqa: E402


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n-source", type=int, default=100_000)
    ap.add_argument("--n-target", type=int, default=1_000)
    ap.add_argument("--n-estimators", type=int, default=500)
    args = ap.parse_args(argv)
    machine = header("Multi-task boosting speed")
    X, y, sd = make_monotone_shift(args.n_source, args.n_target + 5000, n_features=50,
                                   random_state=0)
    tgt = np.flatnonzero(sd < 0)
    rows = np.concatenate([np.flatnonzero(sd > 0), tgt[:args.n_target]])
    test = tgt[args.n_target:]
    Xf, yf, sdf = X[rows], y[rows], sd[rows]
    K = args.n_estimators
    results = []
    configs = [
        ("multi-task stumps", lambda: MultiTaskBoostingClassifier(K, 0.1, 1)),
        ("HGB pooled, depth 1", lambda: HistGradientBoostingClassifier(
            max_iter=K, learning_rate=0.1, max_depth=1, early_stopping=False)),
        ("multi-task depth-3 trees", lambda: MultiTaskBoostingClassifier(K, 0.1, 3)),
        ("HGB pooled, depth 3", lambda: HistGradientBoostingClassifier(
            max_iter=K, learning_rate=0.1, max_depth=3, early_stopping=False)),
    ]
    for name, make in configs:
        clf = make()
        cpu0 = time.process_time()
        with timer() as t_fit:
            if name.startswith("multi"):
                clf.fit(Xf, yf, sdf)
            else:
                clf.fit(Xf, yf)
        cpu_fit = time.process_time() - cpu0
        with timer() as t_pred:
            pred = (clf.predict(X[test], sd[test]) if name.startswith("multi")
                    else clf.predict(X[test]))
        rec = {"method": name, "fit_s": t_fit(), "fit_cpu_s": cpu_fit,
               "predict_s (5k rows)": t_pred(),
               "target_error": float(np.mean(pred != y[test]))}
        print(rec, flush=True)
        results.append(rec)
    by = {r["method"]: r["fit_s"] for r in results}
    cpu = {r["method"]: r["fit_cpu_s"] for r in results}
    ratio = {"stumps / HGB depth 1 (wall)": by["multi-task stumps"] / by["HGB pooled, depth 1"],
             "trees / HGB depth 3 (wall)":
                 by["multi-task depth-3 trees"] / by["HGB pooled, depth 3"],
             "stumps / HGB depth 1 (CPU)":
                 cpu["multi-task stumps"] / cpu["HGB pooled, depth 1"],
             "trees / HGB depth 3 (CPU)":
                 cpu["multi-task depth-3 trees"] / cpu["HGB pooled, depth 3"]}
    body = (f"n_source={args.n_source}, n_target={args.n_target} (labeled), d=50, 2 tasks, "
            f"K={K}, gamma=0.1. OMP/threads: os.cpu_count()={os.cpu_count()}, "
            f"OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS', 'unset')}. "
            f"Peak RSS {peak_rss_mb():.0f} MB.\n\n"
            + markdown_table(results, None, ".3f")
            + "\n\nFit-time ratios (same run): "
            + ", ".join(f"{k} = {v:.2f}" for k, v in ratio.items())
            + "\n\nfit_cpu_s is the CPU time of this process (all its threads): on a shared, "
            "overloaded machine the wall-clock time also counts other people's jobs.\n"
            + f"\nTarget of the issue (n_source=100,000, K=500): {K} stumps in < 30 s: "
            f"{'met' if by['multi-task stumps'] < 30 else 'NOT met'} in wall-clock, "
            f"wall {by['multi-task stumps']:.1f} s, CPU {cpu['multi-task stumps']:.1f} s "
            f"({'met' if cpu['multi-task stumps'] < 30 else 'NOT met'} in CPU time); "
            f"{K} depth-3 trees in < 30 s: "
            f"{'met' if by['multi-task depth-3 trees'] < 30 else 'NOT met'} "
            f"(wall {by['multi-task depth-3 trees']:.1f} s, CPU "
            f"{cpu['multi-task depth-3 trees']:.1f} s).\n")
    print(body)
    write_results("boosting_speed", "Multi-task boosting speed vs HistGradientBoosting", body,
                  {"records": results, "ratios": ratio, "args": vars(args)}, machine)


if __name__ == "__main__":
    main()
