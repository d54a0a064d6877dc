"""``shiftlearn splits``: compare validation splits of a data set's development domains.

Prints, for a real data set with some domains held out, the MMD² between training and
validation rows of a random stratified split, leave-one-domain-out and the cluster split
(RBF and linear), all measured in one kernel (RBF, ``gamma = 1/d``). Wire it into the CLI with
``COMMANDS["splits"] = ("shiftlearn.model_selection._cli:main", "compare validation splits")``.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

__all__ = ["main"]


def main(argv: list[str] | None = None) -> int:
    """Entry point: ``shiftlearn splits [--dataset office_caltech] [--holdout dslr] ...``."""
    from ..datasets import LOADERS
    from ._cluster_kmeans import split_mmd2
    from ._cluster_split import ClusterSplit
    from ._splitters import LeaveOneDomainOut, RandomStratifiedSplit

    ap = argparse.ArgumentParser(prog="shiftlearn splits", description=__doc__.split("\n\n")[0])
    ap.add_argument("--dataset", default="office_caltech", choices=sorted(LOADERS))
    ap.add_argument("--holdout", default=None,
                    help="domain left out of the development set (default: the last one)")
    ap.add_argument("--test-size", type=float, default=0.2)
    ap.add_argument("--init", default="random", choices=["random", "pca"])
    ap.add_argument("--data-home", default=None)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)

    ds = LOADERS[args.dataset](args.data_home)
    names = ds.domain_names
    hold = args.holdout or names[-1]
    dev = [n for n in names if n != hold]
    X, y, d = ds.pack(sources=dev)
    if len(dev) > 8:
        print(f"{len(dev)} development domains: leave-one-domain-out has {len(dev)} folds.")
    regression = ds.target_name != "class"
    strat = "domain" if regression else "label_domain"
    print(f"{ds.name}: development domains {', '.join(dev)} ({X.shape[0]} rows, "
          f"{X.shape[1]} features); held out: {hold}")
    rows = []

    def report(name, folds, seconds, extra=""):
        mmd = np.mean([split_mmd2(X, tr, va) for tr, va in folds])
        rows.append((name, mmd))
        print(f"  {name:<26} MMD²(T, V) = {mmd:.3e}   ({seconds:.1f} s){extra}")

    t = time.perf_counter()
    folds = list(RandomStratifiedSplit(test_size=args.test_size, stratify=strat,
                                       random_state=args.seed).split(X, y, d))
    report("random (class x domain)", folds, time.perf_counter() - t)
    t = time.perf_counter()
    report("leave-one-domain-out", list(LeaveOneDomainOut().split(X, y, d)),
           time.perf_counter() - t)
    for kernel in ("rbf", "linear"):
        cv = ClusterSplit(test_size=args.test_size, kernel=kernel, stratify=strat,
                          init=args.init, random_state=args.seed)
        t = time.perf_counter()
        folds = list(cv.split(X, y, d))
        report(f"cluster ({kernel})", folds, time.perf_counter() - t,
               f"   {cv.n_iter_} iterations")
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
