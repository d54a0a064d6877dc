"""``shiftlearn marginal``: a quick marginal transfer vs pooling run on rotated ellipses."""

from __future__ import annotations

import argparse
import time
import warnings


def main(argv: list[str] | None = None) -> int:
    """Fit marginal transfer and pooling on ``N`` rotated-ellipse tasks of ``n`` points and print
    their error on 10 fresh tasks.

    Examples
    --------
    >>> main(["--N", "16", "--n", "16", "--test-points", "200"])  # doctest: +SKIP
    """
    from sklearn.exceptions import ConvergenceWarning

    from ..datasets import make_rotated_ellipses
    from . import MarginalTransferClassifier, PoolingClassifier, task_group_score

    ap = argparse.ArgumentParser(prog="shiftlearn marginal", description=main.__doc__)
    ap.add_argument("--N", type=int, default=64, help="training tasks")
    ap.add_argument("--n", type=int, default=32, help="points per training task")
    ap.add_argument("--test-points", type=int, default=1000, help="points per test task")
    ap.add_argument("--solver", default="auto", choices=["auto", "exact", "rf"])
    ap.add_argument("--loss", default="hinge", choices=["hinge", "squared_hinge"],
                    help="hinge (the paper's text) or squared_hinge (the authors' code; faster "
                         "random-feature solver)")
    ap.add_argument("--sampling", default="gaussian", choices=["gaussian", "orthogonal"],
                    help="random-feature frequencies: i.i.d. Gaussian (the paper's) or "
                         "orthogonal random features")
    ap.add_argument("--C", type=float, default=10.0)
    ap.add_argument("--sigma-x", type=float, default=0.4)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    X, y, sd = make_rotated_ellipses(args.N, args.n, random_state=args.seed)
    Xt, yt, sdt = make_rotated_ellipses(10, args.test_points, first_domain=-1000,
                                        random_state=args.seed + 1)
    kw = dict(C=args.C, sigma_x=args.sigma_x, solver=args.solver, loss=args.loss,
              sampling=args.sampling, random_state=args.seed)
    for name, est in (("marginal transfer", MarginalTransferClassifier(**kw)),
                      ("pooling", PoolingClassifier(**kw))):
        t0 = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            est.fit(X, y, sd)
        fit_s = time.perf_counter() - t0
        err = 100 * (1 - task_group_score(est, Xt, yt, sdt))
        print(f"{name:18s} solver={est.solver_:5s} fit {fit_s:6.2f}s  test error {err:5.2f}%")
    return 0
