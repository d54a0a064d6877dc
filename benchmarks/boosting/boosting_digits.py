"""Multi-task boosting on MNIST<->USPS (binary: even vs odd digit), few labeled target rows.

Protocol: source = the whole source domain (MNIST 2,000 or USPS 1,800 rows, raw 16x16 pixels,
``preprocessing="none"``); per seed the target domain is split at random into a labeled pool
(half) and a test set (half); ``n_t`` in {10, 20, 50, 100} pool rows are labeled (stratified,
at least one per class). Methods: multi-task boosting ("ours"), target only (TD), pooling,
source only (SD). Median target test error over the seeds. Nothing is tuned; all methods share
the same hyper-parameters (stumps, K and gamma below).

Run: ``python benchmarks/boosting/boosting_digits.py [--n-estimators K] [--learning-rate g]
[--seeds S] [--max-bins B]`` with ``SHIFTLEARN_DATA`` set (defaults: a quarter of an hour on a
loaded 2-core machine).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: _common
from _common import header, markdown_table, progress, timer, track, write_results  # noqa: E402

from shiftlearn import MultiTaskBoostingClassifier  # noqa: E402
from shiftlearn.datasets import load_mnist_usps  # noqa: E402

N_TARGET = (10, 20, 50, 100)


def stratified(y, idx, n, rng):
    """``n`` rows of ``idx`` in the class proportions, at least one per class."""
    pos, neg = idx[y[idx] == 1], idx[y[idx] != 1]
    k = int(np.clip(round(n * pos.size / idx.size), 1, n - 1))
    return np.concatenate([rng.choice(pos, k, replace=False),
                           rng.choice(neg, n - k, replace=False)])


@progress()
def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n-estimators", type=int, default=200)
    ap.add_argument("--learning-rate", type=float, default=0.2)
    ap.add_argument("--max-bins", type=int, default=32)
    ap.add_argument("--seeds", type=int, default=10)
    args = ap.parse_args(argv)
    params = dict(n_estimators=args.n_estimators, learning_rate=args.learning_rate, max_depth=1,
                  max_bins=args.max_bins)
    machine = header("Multi-task boosting, MNIST<->USPS even vs odd")
    ds = load_mnist_usps(preprocessing="none")
    body, data = [], {"params": params, "seeds": args.seeds, "task": "even vs odd digit"}
    with timer() as t:
        for src_name, tgt_name in (("mnist", "usps"), ("usps", "mnist")):
            Xs, ls = ds.get(src_name)
            Xt, lt = ds.get(tgt_name)
            ys = ((ls % 10) % 2 == 0).astype(int)
            yt = ((lt % 10) % 2 == 0).astype(int)
            recs = []
            for seed in track(range(args.seeds), f"{src_name}->{tgt_name}: seeds"):
                rng = np.random.default_rng(seed)
                perm = rng.permutation(len(yt))
                pool, test = perm[: len(yt) // 2], perm[len(yt) // 2:]

                def err(mode, lab, Xt=Xt, yt=yt, Xs=Xs, ys=ys, test=test):
                    X = np.vstack([Xs, Xt[lab]])
                    y = np.concatenate([ys, yt[lab]])
                    sd = np.concatenate([np.ones(len(ys), int), np.full(len(lab), -2)])
                    clf = MultiTaskBoostingClassifier(**params, mode=mode).fit(X, y, sd)
                    return float(np.mean(clf.predict(Xt[test], np.full(len(test), -2))
                                         != yt[test]))

                recs.append({"seed": seed, "n_t": 0, "method": "SD only",
                             "error": err("source_only", np.array([], dtype=int))})
                for n_t in N_TARGET:
                    lab = stratified(yt, pool, n_t, rng)
                    for method, mode in [("Ours", "multitask"), ("TD only", "target_only"),
                                         ("Pooling", "pooling")]:
                        recs.append({"seed": seed, "n_t": n_t, "method": method,
                                     "error": err(mode, lab)})
                print(f"  {src_name}->{tgt_name} seed {seed} done", flush=True)

            def med(method, n_t, recs=recs):
                return float(np.median([r["error"] for r in recs
                                        if r["method"] == method and r["n_t"] == n_t]))

            rows, wins = [], {}
            for method in ("Ours", "TD only", "Pooling"):
                rows.append({"method": method, **{f"n_t={k}": med(method, k) for k in N_TARGET}})
            rows.append({"method": "SD only (any n_t)",
                         **{f"n_t={k}": med("SD only", 0) for k in N_TARGET}})
            for k in N_TARGET:
                best_other = min(med("TD only", k), med("Pooling", k), med("SD only", 0))
                wins[k] = bool(med("Ours", k) < best_other)
            key = f"{src_name}->{tgt_name}"
            data[key] = {"records": recs, "ours_best": wins}
            verdict = ", ".join(f"n_t={k}: {'yes' if v else 'NO'}" for k, v in wins.items())
            part = (f"### {src_name.upper()} -> {tgt_name.upper()} (even vs odd)\n\n"
                    f"Median target test error over {args.seeds} seeds.\n\n"
                    f"{markdown_table(rows, ['method'] + [f'n_t={k}' for k in N_TARGET], '.3f')}"
                    f"\n\nOurs strictly below every baseline: {verdict}\n")
            print(part, flush=True)
            body.append(part)
    data["seconds"] = t()
    intro = (f"Stumps, K={args.n_estimators}, gamma={args.learning_rate}, "
             f"max_bins={args.max_bins}; raw pixels. Total time {t():.0f} s.\n\n")
    write_results("boosting_digits", "Multi-task boosting on MNIST<->USPS (even vs odd)",
                  intro + "\n".join(body), data, machine)


if __name__ == "__main__":
    main()
