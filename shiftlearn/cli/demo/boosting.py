"""``shiftlearn demo boosting``: multi-task boosting against its baselines on a synthetic pair.

Fits the four modes of :class:`~shiftlearn.boosting.MultiTaskBoostingClassifier` (multitask,
target_only, pooling, source_only) on :func:`~shiftlearn.datasets.make_monotone_shift` with
``--n-target`` labeled target rows and prints the error of each on ``--n-test`` fresh target
rows.
"""

from __future__ import annotations

import argparse

import numpy as np

from ..._progress import track
from .._common import count, positive

MODES = ("multitask", "target_only", "pooling", "source_only")


def add_parser(subparsers, parents) -> argparse.ArgumentParser:
    p = subparsers.add_parser(
        "boosting", parents=parents,
        help="multi-task boosting vs its baselines on a synthetic shifted pair",
        description="Multi-task boosting (one boosted model shared by source and target, "
                    "per-domain thresholds) against target-only, pooled and source-only "
                    "boosting on a synthetic source/target pair: target test error of each.")
    p.add_argument("--shift", choices=["monotone", "rotation"], default="monotone",
                   help="per-feature monotone shift (boosting's case, default) or a rotation "
                        "(the negative control)")
    p.add_argument("--n-source", type=count(1), default=2000, metavar="N",
                   help="labeled source rows (default: %(default)s)")
    p.add_argument("--n-target", type=count(1), default=50, metavar="N",
                   help="labeled target rows (default: %(default)s)")
    p.add_argument("--n-test", type=count(1), default=5000, metavar="N",
                   help="target rows the error is measured on (default: %(default)s)")
    p.add_argument("--n-estimators", type=count(1), default=500, metavar="K",
                   help="boosting iterations (default: %(default)s)")
    p.add_argument("--learning-rate", type=positive, default=0.1, metavar="GAMMA",
                   help="shrinkage of each step (default: %(default)s)")
    p.add_argument("--max-depth", type=count(1), default=1, metavar="D",
                   help="depth of each weak learner; 1 = stumps with per-domain thresholds "
                        "(default: %(default)s)")
    return p


def run(args: argparse.Namespace) -> int:
    from ...boosting import MultiTaskBoostingClassifier
    from ...datasets import make_monotone_shift

    X, y, sd = make_monotone_shift(args.n_source, args.n_target + args.n_test, shift=args.shift,
                                   random_state=args.seed)
    tgt = np.flatnonzero(sd < 0)
    rows = np.concatenate([np.flatnonzero(sd > 0), tgt[:args.n_target]])
    test = tgt[args.n_target:]
    if np.unique(y[tgt[:args.n_target]]).size < 2:
        raise ValueError(f"the {args.n_target} labeled target row(s) drawn with seed "
                         f"{args.seed} hold a single class, and the target_only baseline needs "
                         "both; raise --n-target (or try another --seed).")
    models = [MultiTaskBoostingClassifier(args.n_estimators, args.learning_rate, args.max_depth,
                                          mode=mode) for mode in MODES]
    print(f"shift={args.shift} n_source={args.n_source} n_target={args.n_target} "
          f"n_test={args.n_test} K={args.n_estimators} gamma={args.learning_rate:g} "
          f"depth={args.max_depth} seed={args.seed}")
    for mode, clf in track(list(zip(MODES, models, strict=True)),
                           description="boosting: one model per mode"):
        clf.fit(X[rows], y[rows], sd[rows])
        err = np.mean(clf.predict(X[test], sd[test]) != y[test])
        print(f"  {mode:12s} target test error {err:.3f}", flush=True)
    return 0
