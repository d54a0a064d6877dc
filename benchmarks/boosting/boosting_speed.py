"""Speed of multi-task boosting vs scikit-learn's HistGradientBoostingClassifier (same run).

Data: ``make_monotone_shift(n_source, n_target, n_input=50)``: 100,000 source rows, 1,000
labeled target rows, d = 50, two tasks. Multi-task boosting with 500 stumps and with 500
depth-3 trees (gamma = 0.1); HistGradientBoostingClassifier on the pooled rows with the same
number of iterations, learning rate and depth, no early stopping. Every fit runs on ONE thread
(``threadpoolctl``: OpenMP and BLAS), so the comparison is per core. Times include binning and
input validation (whole ``fit`` calls).

Rows: ``numba`` = the library as installed with numba (``pip install shiftlearn[speed]``),
``numpy`` = the same code with ``SHIFTLEARN_NUMBA=0`` (no compiled kernels), ``before`` = the
solver before the speed work (``tests/_boosting_reference.py``, a frozen copy; ``--before``).
All three fit the same model: the script checks that their decision functions on the test rows
are equal bit for bit. numba loads or compiles its kernels on first use: a small fit before the
timed ones pays that once, and its time is reported.

``--decaf``: a synthetic stand-in for the issue's 4,096-d DeCAF case (no DeCAF features are in
the data home): 10 classes, 4,096 non-negative sparse features (ReLU of class means + noise),
958 source rows (Amazon's size), a target (295 rows, webcam's size) under a per-feature
increasing map, 3 labeled target rows per class, 500 stumps (one-vs-rest: 10 ensembles), and
HistGradientBoosting (depth 1, 500 iterations: 10 trees each) on the pooled labeled rows.

The machine is shared, so every configuration is fitted ``--repeats`` times in interleaved
order and the table gives the minimum wall and CPU time; the ratios compare minima of the same
run. Run: ``python benchmarks/boosting/boosting_speed.py [--repeats 3] [--before] [--decaf]``.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from contextlib import contextmanager
from pathlib import Path

import numpy as np
from sklearn.ensemble import HistGradientBoostingClassifier
from threadpoolctl import threadpool_limits

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: _common
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests"))  # the frozen solver
from _common import (  # noqa: E402
    header,
    markdown_table,
    peak_rss_mb,
    progress,
    track,
    write_results,
)

import shiftlearn.boosting._estimator as est_mod  # noqa: E402
from shiftlearn import MultiTaskBoostingClassifier  # noqa: E402
from shiftlearn.boosting import _kernels  # noqa: E402
from shiftlearn.datasets import make_monotone_shift  # noqa: E402


@contextmanager
def solver(kind: str):
    """``numba`` / ``numpy`` (kernels off) / ``before`` (the frozen previous solver)."""
    old_env = os.environ.get("SHIFTLEARN_NUMBA")
    old = est_mod.bin_tasks, est_mod.boost
    try:
        if kind == "numpy":
            os.environ["SHIFTLEARN_NUMBA"] = "0"
        if kind == "before":
            import _boosting_reference as ref
            est_mod.bin_tasks, est_mod.boost = ref.bin_tasks, ref.boost
        yield
    finally:
        est_mod.bin_tasks, est_mod.boost = old
        if old_env is None:
            os.environ.pop("SHIFTLEARN_NUMBA", None)
        else:
            os.environ["SHIFTLEARN_NUMBA"] = old_env


def decaf_like(rng, n_source=958, n_target=295, d=4096, n_classes=10):
    """Synthetic DeCAF-like pair: sparse non-negative activations, increasing per-feature map."""
    centers = rng.normal(0.0, 0.4, (n_classes, d)) * (rng.random((n_classes, d)) < 0.05)
    ys = rng.integers(0, n_classes, n_source)
    yt = np.arange(n_target) % n_classes
    Xs = np.maximum(centers[ys] + rng.normal(0.0, 1.0, (n_source, d)) - 0.5, 0.0)
    Xt = np.maximum(centers[yt] + rng.normal(0.0, 1.0, (n_target, d)) - 0.5, 0.0)
    Xt = 1.5 * Xt ** 1.2 + 0.1                                   # increasing on x >= 0
    return Xs, ys, Xt, yt


def fit_one(name, make, X, y, sd, Xtest, sdtest, ytest):
    clf = make()
    mt = isinstance(clf, MultiTaskBoostingClassifier)    # HGB: pooled rows, no domains
    cpu0 = time.process_time()
    t0 = time.perf_counter()
    if mt:
        clf.fit(X, y, sd)
    else:
        clf.fit(X, y)
    wall, cpu = time.perf_counter() - t0, time.process_time() - cpu0
    t0 = time.perf_counter()
    f = clf.decision_function(Xtest, sdtest) if mt else clf.decision_function(Xtest)
    pred = clf.predict(Xtest, sdtest) if mt else clf.predict(Xtest)
    return {"fit_s": wall, "fit_cpu_s": cpu, "predict_s": time.perf_counter() - t0,
            "target_error": float(np.mean(pred != ytest))}, f


def run_suite(configs, data, repeats):
    """Interleaved repeats; min times per config; decision functions for the model check."""
    best, dec = {}, {}
    for r in track(range(repeats), "repeats"):
        for name, kind, make in configs:
            with solver(kind):
                rec, f = fit_one(name, make, *data)
            print(f"repeat {r + 1}: {name}: " + ", ".join(f"{k}={v:.3f}" for k, v in rec.items()),
                  flush=True)
            dec.setdefault(name, f)
            if name not in best:
                best[name] = rec
            else:
                for k in ("fit_s", "fit_cpu_s", "predict_s"):
                    best[name][k] = min(best[name][k], rec[k])
    return best, dec


def same_models(dec, names):
    ref = dec[names[0]]
    return {n: bool(np.array_equal(dec[n], ref)) for n in names[1:]}


@progress()
def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n-source", type=int, default=100_000)
    ap.add_argument("--n-target", type=int, default=1_000)
    ap.add_argument("--n-estimators", type=int, default=500)
    ap.add_argument("--repeats", type=int, default=1)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--before", action="store_true", help="also time the previous solver")
    ap.add_argument("--decaf", action="store_true", help="also the 4,096-d DeCAF-like case")
    args = ap.parse_args(argv)
    machine = header("Multi-task boosting speed")
    K = args.n_estimators
    kinds = (["numba"] if _kernels.HAVE_NUMBA else []) + ["numpy"] \
        + (["before"] if args.before else [])
    load0 = os.getloadavg()
    with threadpool_limits(limits=args.threads):
        # numba loads (or compiles, the first time) its kernels on first use: pay it here
        Xw, yw, sdw = make_monotone_shift(1000, 200, random_state=1)
        t0 = time.perf_counter()
        for depth in (1, 3):
            MultiTaskBoostingClassifier(3, 0.1, depth).fit(Xw, yw, sdw)
        warm = time.perf_counter() - t0

        X, y, sd = make_monotone_shift(args.n_source, args.n_target + 5000, n_input=50,
                                       random_state=0)
        tgt = np.flatnonzero(sd < 0)
        rows = np.concatenate([np.flatnonzero(sd > 0), tgt[:args.n_target]])
        test = tgt[args.n_target:]
        data = (X[rows], y[rows], sd[rows], X[test], sd[test], y[test])
        results, checks, ratio = [], {}, {}
        for depth in (1, 3):
            hgb = f"HGB pooled, depth {depth}"
            configs = [(hgb, "numba", lambda d=depth: HistGradientBoostingClassifier(
                max_iter=K, learning_rate=0.1, max_depth=d, early_stopping=False))]
            what = "stumps" if depth == 1 else "depth-3 trees"
            names = [f"multi-task {what} ({k})" for k in kinds]
            configs += [(nm, k, lambda d=depth: MultiTaskBoostingClassifier(K, 0.1, d))
                        for nm, k in zip(names, kinds, strict=True)]
            best, dec = run_suite(configs, data, args.repeats)
            for name, _, _ in configs:
                results.append({"method": name, **best[name]})
            checks[what] = same_models(dec, names)
            for nm in names:
                ratio[f"{nm} / HGB (wall)"] = best[nm]["fit_s"] / best[hgb]["fit_s"]
                ratio[f"{nm} / HGB (CPU)"] = best[nm]["fit_cpu_s"] / best[hgb]["fit_cpu_s"]

        decaf_rows = []
        if args.decaf:
            rng = np.random.default_rng(0)
            Xs, ys, Xt, yt = decaf_like(rng)
            lab = np.concatenate([np.flatnonzero(yt == c)[:3] for c in range(10)])
            rest = np.setdiff1d(np.arange(len(yt)), lab)
            Xf = np.vstack([Xs, Xt[lab]])
            yf = np.concatenate([ys, yt[lab]])
            sdf = np.concatenate([np.ones(len(ys), int), np.full(len(lab), -2)])
            configs = [("HGB pooled, depth 1 (DeCAF-like)", "numba",
                        lambda: HistGradientBoostingClassifier(
                            max_iter=K, learning_rate=0.1, max_depth=1, early_stopping=False))]
            names = [f"multi-task stumps (DeCAF-like, {k})" for k in kinds]
            configs += [(nm, k, lambda: MultiTaskBoostingClassifier(K, 0.1, 1))
                        for nm, k in zip(names, kinds, strict=True)]
            best, dec = run_suite(configs, (Xf, yf, sdf, Xt[rest], np.full(len(rest), -2),
                                            yt[rest]), args.repeats)
            for name, _, _ in configs:
                decaf_rows.append({"method": name, **best[name]})
            checks["DeCAF-like stumps"] = same_models(dec, names)
            for nm in names:
                ratio[f"{nm} / HGB (wall)"] = best[nm]["fit_s"] / best[configs[0][0]]["fit_s"]
    load1 = os.getloadavg()

    body = (f"n_source={args.n_source}, n_target={args.n_target} (labeled), d=50, 2 tasks, "
            f"K={K}, gamma=0.1, threads={args.threads} (threadpoolctl), repeats={args.repeats} "
            f"(minimum shown). numba installed: {_kernels.HAVE_NUMBA}; its first-use load/compile "
            f"(two small fits before the timed ones): {warm:.2f} s. Load average before/after: "
            f"{load0[0]:.1f}/{load1[0]:.1f} on {os.cpu_count()} cores. "
            f"Peak RSS {peak_rss_mb():.0f} MB.\n\n"
            + markdown_table(results, None, ".3f")
            + "\n\nFit-time ratios (same run, minima):\n\n"
            + "\n".join(f"* {k} = {v:.2f}" for k, v in ratio.items())
            + "\n\nSame model as the first multi-task row (decision functions on the test rows "
            "equal bit for bit): " + "; ".join(f"{k}: {v}" for k, v in checks.items()) + "\n"
            + ("\nDeCAF-like case (synthetic, 4,096-d, 10 classes one-vs-rest, 958 source rows, "
               "3 labeled target rows per class, 265 target test rows):\n\n"
               + markdown_table(decaf_rows, None, ".3f") + "\n" if decaf_rows else "")
            + "\nfit_cpu_s is this process's CPU time; on a loaded shared machine wall-clock "
            "time also counts waiting for a core. HGB (pooled, logistic loss) is not a "
            "domain-adaptation method: only its cost is compared.\n")
    print(body)
    write_results("boosting_speed", "Multi-task boosting speed vs HistGradientBoosting", body,
                  {"records": results, "decaf": decaf_rows, "ratios": ratio, "same_model": checks,
                   "warmup_s": warm, "load": [load0, load1], "args": vars(args)}, machine)


if __name__ == "__main__":
    main()
