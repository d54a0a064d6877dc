"""Marginal transfer (issue #19): the exact solver against the two it replaced, and Nyström.

Part ``exact``: on the same product kernel ``K`` (rotated ellipses, C = 10, sigma_x = 0.3,
median rules), the library's exact solver (dual coordinate descent on ``K`` keeping the
gradient, ``shiftlearn.generalization._dual_cd.kernel_svm`` / ``kernel_svr``) against the two
before it (read from the history, :data:`LEGACY`): the pure-Python dual coordinate descent of
the time issue #19 was filed ("old") and the pivoted-Cholesky factor of ``K`` fed to
liblinear ("factor"). Each at its default tolerance (``1e-2``; the SVR ``1e-3`` for factor
and new, whose ``tol`` is liblinear's relative one) and ``max_iter = 1000``, for the hinge,
the squared hinge and the epsilon-insensitive loss (on the 0/1 labels as a regression
target). Reported: solver time (minimum over ``--repeats``, one run above M = 2,048), the
primal objective and its gap to a tight reference (the factor solver, liblinear at
``tol = 1e-5``, at most 5,000 epochs: independent of the new code), and the share of
identical test predictions (10 fresh tasks of 1,000 points; regression: the largest absolute
difference). Whole fit = the shared stages (embeddings, kernel) plus the solver.

Part ``nystroem``: the estimator with ``solver="nystroem"`` and a tenth of the training rows as
landmarks (``n_landmarks=0.1``) against ``solver="exact"`` on the paper's synthetic grid
(N in {16, 64, 256} tasks x n in {8, 16, 32, 256} points) wherever the exact solver fits
(M = N n <= 8,192): fit time and test error of each, and the random-feature solver for
reference.

Part ``kernels``: every kernel family (``kernel_p``, ``normalize_p``, ``tau``, Laplacian and
Cauchy ``kernel_x``) on 48 ellipse tasks of 32 points, exact and (where it applies) RF solver.

    python benchmarks/generalization/marginal_solvers.py [--part exact|nystroem|kernels|all]
                                                        [--repeats R] [--quick]

Internals on purpose: the solver stage is timed with ``_dual_cd`` and the kernel built with
``_embedding`` (no public function exposes them). The two former solvers are no frozen copy in
the tree: part ``exact`` reads them from the repository's history (``git show``, a full clone).
"""

from __future__ import annotations

import argparse
import gc
import os
import sys
import warnings
from functools import partial
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: _common

import numpy as np  # noqa: E402
from _common import (  # noqa: E402
    header,
    markdown_table,
    module_from_git,
    progress,
    timer,
    track,
    write_results,
)
from sklearn.exceptions import ConvergenceWarning  # noqa: E402

from shiftlearn.datasets import make_rotated_ellipses  # noqa: E402
from shiftlearn.generalization import (  # noqa: E402
    MarginalTransferClassifier,
    task_group_score,
)

warnings.simplefilter("ignore", ConvergenceWarning)

#: where the two former exact solvers are kept: the file that held them (the Python dual
#: coordinate descent of shiftlearn/generalization/_solvers.py before d23ad06, and the
#: pivoted-Cholesky factor + liblinear solver of d23ad06 to 81bda78^, verbatim but for the
#: names) at the last commit that tracked it
LEGACY = ("c7aba41", "benchmarks/generalization/_marginal_legacy.py")

EXACT_SIZES = [(16, 16), (32, 16), (32, 32), (64, 32), (64, 64)]
PAPER_GRID = [(N, n) for N in (16, 64, 256) for n in (8, 16, 32, 256) if N * n <= 8192]


def _best(f, repeats):
    out, times = None, []
    for _ in range(repeats):
        gc.collect()
        with timer() as t:
            out = f()
        times.append(t())
    return min(times), out


def _primal(K, beta, y, c, loss, epsilon=0.1):
    f = K @ beta
    if loss == "epsilon_insensitive":
        return float(0.5 * beta @ f + c @ np.maximum(0.0, np.abs(y - f) - epsilon))
    h = np.maximum(0.0, 1.0 - y * f)
    return float(0.5 * beta @ f + c @ (h**2 if loss == "squared_hinge" else h))


def _exact_cell(N, n, Xt, yt, sdt, repeats):
    """The rows of one training size: the three losses on one kernel."""
    legacy = module_from_git(*LEGACY, "_marginal_legacy")
    kernel_svm_dual, kernel_svm_factor = legacy.kernel_svm_dual, legacy.kernel_svm_factor
    kernel_svr_dual, kernel_svr_factor = legacy.kernel_svr_dual, legacy.kernel_svr_factor

    from shiftlearn.generalization._dual_cd import kernel_svm, kernel_svr
    from shiftlearn.generalization._embedding import exact_embedding_gram, product_kernel

    ids, task_t = np.unique(sdt, return_inverse=True)
    X, y, sd = make_rotated_ellipses(N, n, random_state=N * 1000 + n)
    M = N * n
    task = np.repeat(np.arange(N), n)
    repeats = repeats if M <= 2048 else 1
    clf = MarginalTransferClassifier(C=10.0, bandwidth_x=0.3, solver="exact", random_state=0)
    t_fit, _ = _best(partial(clf.fit, X, y, sd), repeats)              # the whole new fit
    t_gram, _ = _best(partial(exact_embedding_gram, X, task, N, sigma=clf.sigma_emb_), repeats)
    KP = clf._train_task_kernel(X, task, False, "rbf")
    t_k, K = _best(partial(product_kernel, X, task, KP, sigma=clf.sigma_x_), repeats)
    KPt = clf._test_task_kernel(Xt, task_t, ids, ids.shape[0])
    Kt = product_kernel(Xt, task_t, KPt, X, task, sigma=clf.sigma_x_)
    c = np.full(M, 10.0)                               # equal task sizes: c_a = C
    ypm = np.where(y == 1, 1.0, -1.0)
    rows = []
    common = dict(max_iter=1000, random_state=0, return_n_iter=True)
    for loss in ("hinge", "squared_hinge", "epsilon_insensitive"):
        if loss == "epsilon_insensitive":
            target = y.astype(float)
            old = partial(kernel_svr_dual, K, target, c, epsilon=0.1, tol=1e-2, **common)
            fac = partial(lambda K, **kw: kernel_svr_factor(K.copy(), **kw), K, y=target, c=c,
                          epsilon=0.1, tol=1e-3, overwrite=True, **common)
            new = partial(kernel_svr, K, target, c, epsilon=0.1, tol=1e-3, **common)
            ref = kernel_svr_factor(K.copy(), target, c, epsilon=0.1, tol=1e-5, max_iter=5000,
                                    random_state=0, overwrite=True)
        else:
            target = ypm
            old = partial(kernel_svm_dual, K, ypm, c, loss=loss, tol=1e-2, **common)
            fac = partial(lambda K, **kw: kernel_svm_factor(K.copy(), **kw), K, y=ypm, c=c,
                          loss=loss, tol=1e-2, overwrite=True, **common)
            new = partial(kernel_svm, K, ypm, c, loss=loss, tol=1e-2, **common)
            ref = kernel_svm_factor(K.copy(), ypm, c, loss=loss, tol=1e-5, max_iter=5000,
                                    random_state=0, overwrite=True)
        t_old, (b_old, it_old) = _best(old, repeats)
        t_fac, (b_fac, it_fac) = _best(fac, repeats)
        t_new, (b_new, it_new) = _best(new, repeats)
        p_ref = _primal(K, ref, target, c, loss)
        p = {k: _primal(K, b, target, c, loss) for k, b in
             (("old", b_old), ("factor", b_fac), ("new", b_new))}
        f = {"old": Kt @ b_old, "factor": Kt @ b_fac, "new": Kt @ b_new}
        row = {"loss": loss, "N": N, "n": n, "M": M, "shared stages (s)": t_gram + t_k,
               "old solver (s)": t_old, "old epochs": it_old,
               "factor solver (s)": t_fac, "factor epochs": it_fac,
               "new solver (s)": t_new, "new epochs": it_new,
               "speed-up vs old": t_old / t_new, "speed-up vs factor": t_fac / t_new,
               **{f"{k} objective": v for k, v in p.items()},
               **{f"{k} gap": v / p_ref - 1 for k, v in p.items()}}
        for k in ("old", "factor"):
            if loss == "epsilon_insensitive":
                row[f"max |f_{k} - f_new|"] = float(np.max(np.abs(f[k] - f["new"])))
            else:
                row[f"same test predictions as {k} (%)"] = 100 * float(
                    np.mean((f[k] > 0) == (f["new"] > 0)))
        if loss != "epsilon_insensitive":
            for k in ("old", "factor", "new"):
                row[f"{k} test err (%)"] = 100 * float(np.mean((f[k] > 0) != (yt == 1)))
        if loss == "hinge":
            row["new estimator fit (s)"] = t_fit
            row["old estimator fit (s)"] = t_gram + t_k + t_old
            row["factor estimator fit (s)"] = t_gram + t_k + t_fac
        rows.append(row)
        print(row, flush=True)
    return rows


def exact_part(Xt, yt, sdt, repeats, sizes):
    rows = []
    for N, n in track(sizes, "exact solver: sizes"):
        rows += _exact_cell(N, n, Xt, yt, sdt, repeats)
        gc.collect()
    return rows


def nystroem_part(Xt, yt, sdt, repeats, grid):
    rows = []
    for N, n in track(grid, "Nystroem: grid"):
        X, y, sd = make_rotated_ellipses(N, n, random_state=N * 1000 + n)
        row = {"N": N, "n": n, "M": N * n}
        for name, kw in (("exact", dict(solver="exact")),
                         ("nystroem M/10", dict(solver="nystroem", n_landmarks=0.1)),
                         ("rf", dict(solver="rf"))):
            est = MarginalTransferClassifier(C=10.0, bandwidth_x=0.3, random_state=0, **kw)
            t, _ = _best(partial(est.fit, X, y, sd), repeats if N * n <= 4096 else 1)
            row[f"{name} fit (s)"] = t
            row[f"{name} err (%)"] = 100 * (1 - task_group_score(est, Xt, yt, sdt))
            del est
            gc.collect()
        row["nystroem / exact time"] = row["nystroem M/10 fit (s)"] / row["exact fit (s)"]
        row["nystroem - exact err (points)"] = (row["nystroem M/10 err (%)"]
                                                - row["exact err (%)"])
        rows.append(row)
        print(row, flush=True)
    return rows


KERNEL_CONFIGS = [
    ("marginal transfer, Gaussian k_P (eq. 11, default)", {}),
    ("exponential k_P (eq. 12)", {"kernel_p": "exponential"}),
    ("exponential k_P, normalised (= Gaussian)", {"kernel_p": "exponential",
                                                   "normalize_p": True}),
    ("polynomial k_P, degree 2 (eq. 12)", {"kernel_p": "polynomial"}),
    ("polynomial k_P, degree 3, normalised", {"kernel_p": "polynomial", "degree_p": 3,
                                              "normalize_p": True}),
    ("Gaussian k_P, tau = 0.5", {"tau": 0.5}),
    ("indicator k_P, tau = 0.5 (multi-task, §5.2)", {"kernel_p": "indicator", "tau": 0.5}),
    ("indicator k_P, tau = 0 (one SVM per task)", {"kernel_p": "indicator"}),
    ("pooling (tau = 1)", {"tau": 1.0}),
    ("Laplacian k_X", {"kernel_x": "laplacian"}),
    ("Cauchy k_X", {"kernel_x": "cauchy"}),
    ("Laplacian k_X and k'", {"kernel_x": "laplacian", "kernel_emb": "laplacian"}),
]


def kernels_part(Xt, yt, sdt, repeats, N=48, n=32):
    """Every kernel family with the exact solver (C = 10, sigma_x = 0.3 for rbf, each
    kernel's median rule otherwise), and the RF solver where it applies."""
    X, y, sd = make_rotated_ellipses(N, n, random_state=0)
    rows = []
    for name, kw in track(KERNEL_CONFIGS, "kernels"):
        row = {"configuration": name}
        for solver in ("exact", "rf"):
            est = MarginalTransferClassifier(C=10.0, random_state=0, solver=solver,
                                             bandwidth_x=0.3 if kw.get("kernel_x", "rbf") == "rbf"
                                             else "median", **kw)
            if solver == "rf" and est._rf_obstacle() is not None:
                row["rf err (%)"] = row["rf fit (s)"] = float("nan")
                continue
            t, _ = _best(partial(est.fit, X, y, sd), repeats)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", UserWarning)   # indicator, tau = 0: decision 0
                row[f"{solver} err (%)"] = 100 * (1 - task_group_score(est, Xt, yt, sdt))
            row[f"{solver} fit (s)"] = t
        rows.append(row)
        print(row, flush=True)
    return rows


@progress()
def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--part", choices=["exact", "nystroem", "kernels", "all"], default="all")
    ap.add_argument("--repeats", type=int, default=3, help="fits per cell; the minimum time")
    ap.add_argument("--quick", action="store_true", help="M <= 1,024 only")
    args = ap.parse_args(argv)
    threads = {k: os.environ.get(k, "default") for k in ("OMP_NUM_THREADS",
                                                         "OPENBLAS_NUM_THREADS")}
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    print("threads:", threads, "load:", load, flush=True)
    machine = header("Marginal transfer: exact solvers (old, factor, new) and Nyström")
    Xt, yt, sdt = make_rotated_ellipses(10, 1000, first_domain=-1000, random_state=12345)
    sizes = [s for s in EXACT_SIZES if not args.quick or s[0] * s[1] <= 1024]
    grid = [s for s in PAPER_GRID if not args.quick or s[0] * s[1] <= 1024]
    data = {"threads": threads, "repeats": args.repeats, "load_average_at_start": load}
    body = (f"BLAS threads: {threads}. Load average at start: {load}. Times: minimum over "
            f"{args.repeats} runs (one run above M = 2,048 in the exact part, above M = 4,096 "
            "in the Nyström part). Wall-clock "
            "times on a shared 2-core machine: compare within a row.\n\n")
    if args.part in ("exact", "all"):
        data["exact"] = exact_part(Xt, yt, sdt, args.repeats, sizes)
        body += ("## Exact solver: dual coordinate descent on K (new) vs pivoted Cholesky + "
                 "liblinear (factor) vs Python dual coordinate descent (old)\n\nSame kernel, "
                 "C = 10, default tolerances (1e-2; factor and new SVR 1e-3), max_iter = 1000. "
                 "Gap: primal objective / reference - 1 (reference: the factor solver at "
                 "tol = 1e-5).\n\n" + markdown_table(data["exact"], floatfmt=".4g") + "\n\n")
    if args.part in ("nystroem", "all"):
        data["nystroem"] = nystroem_part(Xt, yt, sdt, args.repeats, grid)
        body += ("## Nyström with a tenth of the rows as landmarks vs exact (paper's synthetic "
                 "grid, M <= 8,192)\n\nC = 10, sigma_x = 0.3, median rules; default "
                 "tolerances (exact 1e-2, Nyström and RF 0.1); RF: L = 100, Q = 300. Test: 10 "
                 "fresh tasks x 1,000 points.\n\n"
                 + markdown_table(data["nystroem"], floatfmt=".4g") + "\n")
    if args.part in ("kernels", "all"):
        data["kernels"] = kernels_part(Xt, yt, sdt, args.repeats)
        body += ("## Kernel families (48 training tasks of 32 points)\n\nC = 10; sigma_x = 0.3 "
                 "for the rbf kernel_x, each kernel's median rule otherwise; median rules for "
                 "sigma_emb and sigma_p; exact solver, and the RF solver (L = 100, Q = 300) "
                 "where it applies (nan: it does not). With the indicator kernel and tau = 0 "
                 "a new task's decision values are 0 (every point gets the first class). "
                 "Test: 10 fresh tasks x 1,000 points.\n\n"
                 + markdown_table(data["kernels"], floatfmt=".4g") + "\n")
    name = "marginal_solvers" if args.part == "all" else f"marginal_solvers_{args.part}"
    write_results(name, "Marginal transfer: exact solvers (old, factor, new) and Nyström", body,
                  data,
                  machine)


if __name__ == "__main__":
    main()
