"""BBSE, RLLS, MLLS and JCPOT: the estimated target class proportions and the corrected accuracy.

Three problems, each with target class proportions set by resampling, so the truth is known:

* ``synthetic``: three Gaussian classes in 2-D (unit variance, centres 2 apart), a uniform
  source of 1,500 rows and targets of 1,500 rows with the proportions of ``SYNTHETIC_Q``;
* ``MNIST halves``: pure label shift on real data: MNIST (2,000 digits, 256 pixels, L2-scaled
  rows) split in two seeded halves; the first half is the source, the target is drawn without
  replacement from the second half with the proportions below;
* ``MNIST->USPS``: the source is all of MNIST, the target USPS resampled the same way (label
  shift on top of the domain shift between the two digit sets: the estimators' assumption,
  ``p_t(x | y) = p_s(x | y)``, does not hold there).

Target proportions on the digits: ``tweak-one`` (digit 1 has 40% of the rows, the others 6.7%
each; Lipton et al.'s shift) and ``dirichlet`` (a seeded Dirichlet(1) draw per seed). Five
seeds each. Per estimator (all with ``LogisticRegression(max_iter=1000)``, 5 folds): the L1/2
error of the proportions (half the L1 distance: the share of rows misallocated), the target
accuracy after the correction, beside the source classifier's (``before``) and the correction
by the true proportions (``oracle``), and the seconds of ``fit``.

    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 python benchmarks/labelshift/labelshift_study.py
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: _common
from _common import header, markdown_table, progress, track, write_results  # noqa: E402

SEEDS = 5
SYNTHETIC_Q = {"60/30/10": (0.6, 0.3, 0.1), "10/30/60": (0.1, 0.3, 0.6),
               "uniform": (1 / 3, 1 / 3, 1 / 3)}
METHODS = ("BBSE", "BBSE (soft)", "BBSE (retrain)", "RLLS", "MLLS", "JCPOT")


def _estimators():
    from sklearn.linear_model import LogisticRegression

    from shiftlearn.labelshift import BBSE, JCPOT, MLLS, RLLS

    def lr():
        return LogisticRegression(max_iter=1000)

    return {"BBSE": lambda s: BBSE(lr(), random_state=s),
            "BBSE (soft)": lambda s: BBSE(lr(), confusion="soft", random_state=s),
            "BBSE (retrain)": lambda s: BBSE(lr(), correction="retrain", random_state=s),
            "RLLS": lambda s: RLLS(lr(), random_state=s),
            "MLLS": lambda s: MLLS(lr(), random_state=s),
            "JCPOT": lambda s: JCPOT(lr())}


def synthetic(q, seed: int, n: int = 1500):
    rng = np.random.default_rng(seed)
    centres = 2.0 * np.array([[0.0, 0.0], [1.0, 0.0], [0.5, 0.87]])
    ys = rng.integers(0, 3, n)
    yt = rng.choice(3, n, p=np.asarray(q))
    return (centres[ys] + rng.normal(size=(n, 2)), ys,
            centres[yt] + rng.normal(size=(n, 2)), yt)


def resample(X, y, q, rng, cap: int = 600):
    """Rows of ``(X, y)`` drawn without replacement with class shares ``q`` (as many rows as
    the scarcest class allows, at most ``cap``)."""
    classes = np.unique(y)
    avail = np.array([np.sum(y == c) for c in classes])
    q = np.asarray(q, dtype=float)
    n = int(min(cap, np.min(np.where(q > 0, avail / np.maximum(q, 1e-12), np.inf))))
    counts = np.floor(q * n).astype(int)
    idx = np.concatenate([rng.choice(np.flatnonzero(y == c), size=k, replace=False)
                          for c, k in zip(classes, counts, strict=True)])
    return X[idx], y[idx]


def digit_q(kind: str, rng) -> np.ndarray:
    if kind == "tweak-one":
        q = np.full(10, 0.6 / 9)
        q[1] = 0.4                # the label "2" in the files' 1..10 coding: the second class
        return q
    return rng.dirichlet(np.ones(10))


def run_one(Xs, ys, Xt, yt, seed: int, est) -> dict:
    from sklearn.linear_model import LogisticRegression

    classes = np.unique(ys)
    truth = np.array([np.mean(yt == c) for c in classes])
    X = np.r_[Xs, Xt]
    y = np.r_[ys, -np.ones(len(yt), dtype=int)]
    sd = np.r_[np.ones(len(ys), dtype=int), -np.ones(len(yt), dtype=int)]
    base = LogisticRegression(max_iter=1000).fit(Xs, ys)
    p = base.predict_proba(Xt)
    w_true = truth / np.array([np.mean(ys == c) for c in classes])
    out = {"before": float(np.mean(base.predict(Xt) == yt)),
           "oracle": float(np.mean(classes[np.argmax(p * w_true, axis=1)] == yt))}
    for name, make in est.items():
        t0 = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            m = make(seed).fit(X, y, sd)
        out[f"{name}|s"] = time.perf_counter() - t0
        out[f"{name}|err"] = float(0.5 * np.abs(m.target_proportions_ - truth).sum())
        out[f"{name}|acc"] = float(np.mean(m.predict(Xt) == yt))
    return out


@progress()
def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=SEEDS)
    args = ap.parse_args(argv)
    machine = header("Label shift: BBSE, RLLS, MLLS, JCPOT")
    from shiftlearn.datasets import load_mnist_usps

    est = _estimators()
    t_start = time.perf_counter()
    cases = []          # (problem, shift, seed, Xs, ys, Xt, yt)
    for label, q in SYNTHETIC_Q.items():
        for s in range(args.seeds):
            cases.append(("synthetic", label, s, *synthetic(q, s)))
    ds = load_mnist_usps()
    (Xm, ym), (Xu, yu) = (ds.domains[d] for d in ("mnist", "usps"))
    Xm, Xu = ds.preprocess(Xm), ds.preprocess(Xu)          # L2-scaled rows
    for kind in ("tweak-one", "dirichlet"):
        for s in range(args.seeds):
            rng = np.random.default_rng(1000 + s)
            q = digit_q(kind, rng)
            perm = rng.permutation(len(ym))
            a, b = perm[: len(ym) // 2], perm[len(ym) // 2:]
            cases.append(("MNIST halves", kind, s, Xm[a], ym[a], *resample(Xm[b], ym[b], q, rng)))
            cases.append(("MNIST->USPS", kind, s, Xm, ym, *resample(Xu, yu, q, rng)))
    rows = []
    with progress():
        for prob, shift, s, Xs, ys, Xt, yt in track(cases, "cases"):
            r = run_one(Xs, ys, Xt, yt, s, est)
            rows.append({"problem": prob, "shift": shift, "seed": s, "n_target": len(yt), **r})
    table = []
    for prob in ("synthetic", "MNIST halves", "MNIST->USPS"):
        for shift in dict.fromkeys(r["shift"] for r in rows if r["problem"] == prob):
            sel = [r for r in rows if r["problem"] == prob and r["shift"] == shift]
            row = {"problem": prob, "shift": shift, "n_t": int(np.mean([r["n_target"]
                                                                        for r in sel])),
                   "acc before": 100 * np.mean([r["before"] for r in sel]),
                   "acc oracle": 100 * np.mean([r["oracle"] for r in sel])}
            for m in METHODS:
                row[f"{m} L1/2"] = np.mean([r[f"{m}|err"] for r in sel])
                row[f"{m} acc"] = 100 * np.mean([r[f"{m}|acc"] for r in sel])
            table.append(row)
    seconds = {m: {prob: float(np.mean([r[f"{m}|s"] for r in rows if r["problem"] == prob]))
                   for prob in ("synthetic", "MNIST halves", "MNIST->USPS")} for m in METHODS}
    total = time.perf_counter() - t_start
    body = (
        f"{args.seeds} seeds per row; L1/2: half the L1 distance between the estimated and the "
        "true target class proportions (mean over the seeds); acc: target accuracy (%) of "
        "the corrected classifier (correction='posterior', but `BBSE (retrain)`: the "
        "classifier refitted with the class weights), beside the source classifier "
        "(`before`) and the correction of its uncalibrated posterior by the true proportions "
        "(`oracle`). Every estimator wraps `LogisticRegression(max_iter=1000)`; BBSE/RLLS/MLLS "
        "with 5 cross-fitting folds, MLLS with its default calibration (a temperature and a "
        "bias per class, on the held-out source rows), JCPOT with its default "
        "`reg_e=0.02`.\n\n"
        + markdown_table(table, floatfmt=".3f")
        + "\n\nSeconds of one fit (mean):\n\n"
        + markdown_table([{"estimator": m, **{p: v for p, v in d.items()}}
                          for m, d in seconds.items()], floatfmt=".2f")
        + f"\n\nWall time: {total:.0f} s on one thread.")
    print(body)
    write_results("labelshift_study", "Label shift: BBSE, RLLS, MLLS and JCPOT", body,
                  {"rows": rows, "table": table, "seconds": seconds, "wall_s": total,
                   "seeds": args.seeds}, machine)


if __name__ == "__main__":
    main()
