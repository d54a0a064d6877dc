"""``shiftlearn demo splits``: validation splits of a data set's development domains.

With one domain of a real data set held out, prints the MMD² between the training and the
validation rows of a random stratified split, of leave-one-domain-out, and of the cluster split
(RBF and linear kernel), all measured in one kernel (RBF, ``gamma = 1/d``): the larger, the
more the validation rows differ from the training rows, as the held-out domain will.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from ..._progress import track
from .._common import fraction, info


def add_parser(subparsers, parents) -> argparse.ArgumentParser:
    p = subparsers.add_parser(
        "splits", parents=parents,
        help="validation splits compared: random, leave-one-domain-out, cluster (MMD)",
        description="Compare validation splits of a real data set's development domains by "
                    "the MMD² between their training and validation rows: random stratified, "
                    "leave-one-domain-out, and the MMD-maximising cluster split.")
    p.add_argument("--dataset", default="office_caltech",
                   choices=["mnist_usps", "msrc_voc", "office_caltech", "parkinsons"],
                   help="data set (default: %(default)s)")
    p.add_argument("--holdout", default=None, metavar="DOMAIN",
                   help="domain left out of the development set (default: the last one)")
    p.add_argument("--test-size", type=fraction, default=0.2, metavar="FRACTION",
                   help="share of the development rows used for validation (default: "
                        "%(default)s)")
    p.add_argument("--init", default="random", choices=["random", "pca"],
                   help="initialization of the cluster split (default: %(default)s)")
    return p


def run(args: argparse.Namespace) -> int:
    from ...datasets import LOADERS
    from ...model_selection import (
        ClusterSplit,
        LeaveOneDomainOut,
        RandomStratifiedSplit,
        split_mmd2,
    )

    ds = LOADERS[args.dataset](args.data_home)
    names = list(ds.domain_names)
    hold = names[-1] if args.holdout is None else args.holdout
    if hold not in names:
        raise ValueError(f"--holdout {hold!r} is not a domain of {ds.name}; choose one of "
                         f"{', '.join(names)}.")
    dev = [n for n in names if n != hold]
    if len(dev) < 2:
        raise ValueError(f"{ds.name} has {len(names)} domains: holding out {hold!r} leaves "
                         f"{len(dev)} development domain, and leave-one-domain-out needs two. "
                         "Choose a data set with three or more domains (e.g. office_caltech).")
    X, y, d = ds.pack(sources=dev)
    if len(dev) > 8:
        info(args, f"{len(dev)} development domains: leave-one-domain-out has {len(dev)} "
                   "folds.")
    strat = "domain" if ds.target_name != "class" else "label_domain"
    print(f"{ds.name}: development domains {', '.join(dev)} ({X.shape[0]} rows, "
          f"{X.shape[1]} features); held out: {hold}")

    def report(name, folds, seconds, extra=""):
        mmd = np.mean([split_mmd2(X, tr, va) for tr, va in folds])
        print(f"  {name:<26} MMD²(T, V) = {mmd:.3e}   ({seconds:.1f} s){extra}", flush=True)

    t = time.perf_counter()
    folds = list(RandomStratifiedSplit(test_size=args.test_size, stratify=strat,
                                       random_state=args.seed).split(X, y, d))
    report("random (class x domain)", folds, time.perf_counter() - t)
    t = time.perf_counter()
    report("leave-one-domain-out", list(LeaveOneDomainOut().split(X, y, d)),
           time.perf_counter() - t)
    for kernel in track(("rbf", "linear"), description="cluster splits"):
        cv = ClusterSplit(test_size=args.test_size, kernel=kernel, stratify=strat,
                          init=args.init, random_state=args.seed)
        t = time.perf_counter()
        folds = list(cv.split(X, y, d))
        report(f"cluster ({kernel})", folds, time.perf_counter() - t,
               f"   {cv.n_iter_} iterations")
    return 0
