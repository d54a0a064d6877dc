"""``shiftlearn mmd``: a two-sample MMD permutation test between domains of a data set.

For each pair of domains: the unbiased and biased MMD² with a Gaussian kernel (bandwidth by a
rule or given), the 95% quantile of the permutation null and the p-value
``(1 + #{null >= observed}) / (1 + permutations)``.
"""

from __future__ import annotations

import argparse

import numpy as np

from .._progress import track
from ._common import count, fraction, subsample


def add_parser(subparsers, parents) -> argparse.ArgumentParser:
    p = subparsers.add_parser(
        "mmd", parents=parents,
        help="MMD permutation test: do two domains of a data set differ?",
        description="Two-sample MMD permutation test between domains of a data set (all "
                    "pairs when no domain is named).")
    p.add_argument("dataset", choices=("office_caltech", "mnist_usps", "msrc_voc",
                                       "parkinsons"), help="data set")
    p.add_argument("domains", nargs="*",
                   help="domains to compare (two for one test; none = all pairs)")
    p.add_argument("--permutations", type=count(0), default=500, metavar="N",
                   help="permutations of the null distribution (default: %(default)s)")
    p.add_argument("--bandwidth", default="median",
                   help="sigma, or a rule: median (default), median_sq, mean, n_features")
    p.add_argument("--alpha", type=fraction, default=0.05,
                   help="level of the test (default: %(default)s)")
    p.add_argument("--max-samples", type=count(2), default=None, metavar="N",
                   help="subsample each domain to at most N rows (seeded)")
    p.add_argument("--max-pairs", type=count(1), default=10, metavar="N",
                   help="refuse to run more than N tests (default: %(default)s)")
    p.add_argument("--preprocessing", choices=("pooled", "per-domain", "none"),
                   default="pooled",
                   help="the data set's customary preprocessing with the statistics of each "
                        "pooled pair (default), of each domain separately (as the demo and "
                        "pack() do; z-scoring per domain hides mean shifts), or none")
    return p


def run(args: argparse.Namespace) -> int:
    from ..datasets import LOADERS
    from ..kernels import mmd2, mmd_permutation_test

    ds = LOADERS[args.dataset](args.data_home)
    names = args.domains or ds.domain_names
    if len(names) < 2:
        raise ValueError("Name two (or more) domains to compare, or none for all pairs.")
    for d in names:
        ds.domain_id(d)
    pairs = [(a, b) for i, a in enumerate(names) for b in names[i + 1:]]
    if len(pairs) > args.max_pairs:
        raise ValueError(f"{len(pairs)} domain pairs; name the domains to compare "
                         f"(or raise --max-pairs, now {args.max_pairs}).")
    rng = np.random.default_rng(args.seed)
    per_domain = args.preprocessing == "per-domain"
    data = {d: subsample(ds.get(d, preprocess=per_domain)[0], args.max_samples, rng)
            for d in names}

    def prepare(a: str, b: str) -> tuple[np.ndarray, np.ndarray]:
        Xa, Xb = data[a], data[b]
        if args.preprocessing == "pooled" and ds.preprocess is not None:
            Z = ds.preprocess(np.vstack([Xa, Xb]))  # statistics of the pooled pair
            return Z[: Xa.shape[0]], Z[Xa.shape[0]:]
        return Xa, Xb
    bw = args.bandwidth
    try:
        bw = float(bw)
    except ValueError:
        pass
    prep = {"pooled": f"{ds.preprocessing}, statistics of each pooled pair",
            "per-domain": f"{ds.preprocessing}, each domain separately (removes per-feature "
                          "mean/scale differences before testing)",
            "none": "none"}[args.preprocessing] if ds.preprocess is not None else "none"
    print(f"MMD two-sample test on {ds.name}: {ds.description}")
    print(f"preprocessing: {prep}; kernel: Gaussian exp(-d^2 / (2 sigma^2)), bandwidth "
          f"{bw!r} on each pooled pair; {args.permutations} permutations, seed {args.seed}")
    print("H0: both domains draw from one distribution; p = (1 + #{null >= observed}) / "
          f"(1 + {args.permutations}).")
    print("")
    head = (f"{'domain A':>14s} {'domain B':>14s} {'n_A':>6s} {'n_B':>6s} {'sigma':>9s} "
            f"{'MMD2_u':>9s} {'MMD2_b':>9s} {'null q95':>9s} {'p-value':>8s}  "
            f"differ at {args.alpha:g}?")
    print(head)
    print("-" * len(head))
    for a, b in track(pairs, description="MMD tests"):
        Xa, Xb = prepare(a, b)
        res = mmd_permutation_test(Xa, Xb, bandwidth=bw, n_permutations=args.permutations,
                                   random_state=args.seed)
        biased = mmd2(Xa, Xb, bandwidth=res.sigma if res.sigma else bw)
        q95 = float(np.quantile(res.null_distribution, 0.95)) if args.permutations else np.nan
        print(f"{a:>14s} {b:>14s} {Xa.shape[0]:6d} {Xb.shape[0]:6d} {res.sigma:9.4g} "
              f"{res.statistic:9.4g} {biased:9.4g} {q95:9.4g} {res.p_value:8.4f}  "
              f"{'yes' if res.reject(args.alpha) else 'no'}", flush=True)
    print("")
    print("MMD2_u: unbiased estimate (the test statistic); MMD2_b: biased (V-statistic); "
          "null q95: 95% quantile of the permutation null. The smallest attainable p is "
          f"1/{args.permutations + 1:d}.")
    return 0
