"""``shiftlearn demo marginal``: marginal transfer against pooling on rotated-ellipse tasks.

Fits :class:`~shiftlearn.generalization.MarginalTransferClassifier` and its pooling baseline on
``--N`` training tasks of ``--n`` points (:func:`~shiftlearn.datasets.make_rotated_ellipses`)
and prints their error on 10 fresh tasks of ``--test-points`` points.
"""

from __future__ import annotations

import argparse
import time
import warnings

from ..._progress import track
from .._common import count, positive


def add_parser(subparsers, parents) -> argparse.ArgumentParser:
    p = subparsers.add_parser(
        "marginal", parents=parents,
        help="marginal transfer vs pooling on rotated-ellipse tasks (domain generalization)",
        description="Marginal transfer learning (a kernel on pairs of task distribution and "
                    "point) against pooling all tasks, on synthetic rotated-ellipse tasks: "
                    "error on 10 unseen test tasks.")
    p.add_argument("--N", type=count(1), default=64, help="training tasks (default: %(default)s)")
    p.add_argument("--n", type=count(2), default=32,
                   help="points per training task (default: %(default)s)")
    p.add_argument("--test-points", type=count(2), default=1000, metavar="N",
                   help="points per test task (default: %(default)s)")
    p.add_argument("--solver", default="auto", choices=["auto", "exact", "rf", "nystroem"],
                   help="exact kernel solver, random features (rf), Nystroem landmarks, or "
                        "auto (by size)")
    p.add_argument("--loss", default="hinge", choices=["hinge", "squared_hinge"],
                   help="hinge (the paper's text, default) or squared_hinge (the authors' code; "
                        "faster random-feature solver)")
    p.add_argument("--sampling", default="gaussian", choices=["gaussian", "orthogonal"],
                   help="random-feature frequencies: i.i.d. Gaussian (the paper's, default) or "
                        "orthogonal random features")
    p.add_argument("--C", type=positive, default=10.0,
                   help="SVM regularization (default: %(default)s)")
    p.add_argument("--bandwidth-x", type=_bandwidth, default=None, metavar="SPEC",
                   help="bandwidth of the point kernel: a number, 'median' or '<f>*median' "
                        f"(default: {_BANDWIDTH_X})")
    p.add_argument("--sigma-x", type=positive, default=None, help=argparse.SUPPRESS)
    return p


#: the demo's point-kernel bandwidth (the rotated ellipses' scale)
_BANDWIDTH_X = 0.4


def _bandwidth(text: str):
    """``--bandwidth-x``: a positive number, ``median`` or ``<f>*median``."""
    from ..._constraints import parse_bandwidth_spec

    try:
        value = float(text)
    except ValueError:
        value = text
    try:
        parse_bandwidth_spec(value, ("median",), "bandwidth")
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"must be a positive number, 'median' or '<f>*median', got {text!r}") from None
    return value


def _bandwidth_x(args: argparse.Namespace):
    """``--bandwidth-x``, or the former ``--sigma-x`` (one release, with a FutureWarning)."""
    if args.sigma_x is None:
        return _BANDWIDTH_X if args.bandwidth_x is None else args.bandwidth_x
    if args.bandwidth_x is not None:
        raise ValueError("--sigma-x is the former name of --bandwidth-x: give --bandwidth-x "
                         "only.")
    warnings.warn(f"--sigma-x is renamed --bandwidth-x; pass --bandwidth-x {args.sigma_x:g} "
                  "(--sigma-x will be removed in the next release).", FutureWarning,
                  stacklevel=2)
    return args.sigma_x


def run(args: argparse.Namespace) -> int:
    from sklearn.exceptions import ConvergenceWarning

    from ...datasets import make_rotated_ellipses
    from ...generalization import (
        MarginalTransferClassifier,
        PoolingClassifier,
        task_group_score,
    )

    X, y, sd = make_rotated_ellipses(args.N, args.n, random_state=args.seed)
    Xt, yt, sdt = make_rotated_ellipses(10, args.test_points, first_domain=-1000,
                                        random_state=args.seed + 1)
    kw = dict(C=args.C, bandwidth_x=_bandwidth_x(args), solver=args.solver, loss=args.loss,
              sampling=args.sampling, random_state=args.seed)
    for name, est in track((("marginal transfer", MarginalTransferClassifier(**kw)),
                            ("pooling", PoolingClassifier(**kw))), description="fitting"):
        t0 = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            est.fit(X, y, sd)
        fit_s = time.perf_counter() - t0
        err = 100 * (1 - task_group_score(est, Xt, yt, sdt))
        print(f"{name:18s} solver={est.solver_:8s} fit {fit_s:6.2f}s  test error {err:5.2f}%",
              flush=True)
    return 0
