"""``shiftlearn boosting``: a quick multi-task boosting demo on the synthetic shift pair.

Fits the four modes (multitask, target_only, pooling, source_only) on ``make_monotone_shift``
with ``--n-target`` labeled target rows and prints the target test error of each.
"""

from __future__ import annotations

import argparse

import numpy as np

from ..datasets import make_monotone_shift
from ._estimator import MultiTaskBoostingClassifier

__all__ = ["main"]


def main(argv: list[str] | None = None) -> int:
    """Entry point; returns the exit code.

    Examples
    --------
    >>> main(["--n-estimators", "5", "--n-source", "200", "--n-test", "200"])  # doctest: +SKIP
    """
    ap = argparse.ArgumentParser(prog="shiftlearn boosting", description=__doc__.splitlines()[0])
    ap.add_argument("--shift", choices=["monotone", "rotation"], default="monotone")
    ap.add_argument("--n-source", type=int, default=2000)
    ap.add_argument("--n-target", type=int, default=50, help="labeled target rows")
    ap.add_argument("--n-test", type=int, default=5000)
    ap.add_argument("--n-estimators", type=int, default=500)
    ap.add_argument("--learning-rate", type=float, default=0.1)
    ap.add_argument("--max-depth", type=int, default=1)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    X, y, sd = make_monotone_shift(args.n_source, args.n_target + args.n_test, shift=args.shift,
                                   random_state=args.seed)
    tgt = np.flatnonzero(sd < 0)
    rows = np.concatenate([np.flatnonzero(sd > 0), tgt[:args.n_target]])
    test = tgt[args.n_target:]
    print(f"shift={args.shift} n_source={args.n_source} n_target={args.n_target} "
          f"K={args.n_estimators} gamma={args.learning_rate} depth={args.max_depth}")
    for mode in ("multitask", "target_only", "pooling", "source_only"):
        clf = MultiTaskBoostingClassifier(args.n_estimators, args.learning_rate, args.max_depth,
                                          mode=mode).fit(X[rows], y[rows], sd[rows])
        err = np.mean(clf.predict(X[test], sd[test]) != y[test])
        print(f"  {mode:12s} target test error {err:.3f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
