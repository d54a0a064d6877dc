"""What keeping the exact adapters' test kernel in ``memory=`` saves in a grid search.

TCA, SCA and R-TCA (``RFTCA(exact=True)``) embed rows with the kernel between them and the
training rows. A grid search asks that of the same training and validation rows for every
candidate; with a ``FitMemory`` the adapters keep it (``_test_kernel_blocks``). This script
runs the same source-CV search and oracle as ``rftca_kernels.py`` (its :func:`evaluate`, grid
k in {10, 20, 30, 50} x mu in {1, 100, 1e4}) on one task and kernel twice, with the kept test
kernel and with the blocked computation every time (the code before it was kept, restored by
replacing ``_test_kernel_blocks`` for the second run), and checks that the choices and
accuracies are identical.

    OMP_NUM_THREADS=1 python benchmarks/adaptation/exact_transform_memory.py

Internals on purpose: it swaps a private method to measure the code without the optimisation.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from threadpoolctl import threadpool_limits

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: _common
sys.path.insert(0, str(Path(__file__).resolve().parent))      # rftca_kernels
from _common import header, markdown_table, progress, write_results  # noqa: E402
from rftca_kernels import adapters, evaluate  # noqa: E402

from shiftlearn.adaptation._base import (  # noqa: E402
    BaseSubspaceTransformer,
    kernel_row_chunks,
)
from shiftlearn.datasets import load_office_caltech  # noqa: E402
from shiftlearn.kernels import median_heuristic  # noqa: E402

GRID = {"ks": [10, 20, 30, 50], "mus": [1.0, 100.0, 1e4]}


def _blocked(self, X, n_temporaries=1):
    """The computation without the kept test kernel: row blocks, every call."""
    for rows in kernel_row_chunks(X.shape[0], self.X_fit_.shape[0], n_temporaries):
        yield rows, self._kernel(X[rows], self.X_fit_)


@progress()
def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--task", default="caltech->webcam")
    ap.add_argument("--kernel", default="laplacian")
    ap.add_argument("--methods", nargs="+", default=["TCA", "R-TCA"])
    args = ap.parse_args(argv)
    machine = header("Exact adapters: the test kernel kept in memory= vs computed every time")
    ds = load_office_caltech()
    s, t = args.task.split("->")
    X, y, sd, yt = ds.pack(s, t, return_masked_labels=True)
    sigma = median_heuristic(X, kernel=args.kernel)
    kept = BaseSubspaceTransformer._test_kernel_blocks
    rows, data = [], {}
    with threadpool_limits(1):
        for name in args.methods:
            res = {}
            for mode in ("kept", "every time"):
                BaseSubspaceTransformer._test_kernel_blocks = kept if mode == "kept" else _blocked
                try:
                    res[mode] = evaluate(adapters(args.kernel, sigma, 1000, 0)[name], X, y, sd,
                                         yt, **GRID)
                finally:
                    BaseSubspaceTransformer._test_kernel_blocks = kept
                print(name, mode, res[mode], flush=True)
            a, b = res["kept"], res["every time"]
            cpu_a = a["cpu search"] + a["cpu oracle"]
            cpu_b = b["cpu search"] + b["cpu oracle"]
            same = all(a[k] == b[k] for k in ("acc", "k", "mu", "oracle", "oracle k",
                                               "oracle mu"))
            rows.append({"method": name, "search CPU s, every time": f"{b['cpu search']:.1f}",
                         "search CPU s, kept": f"{a['cpu search']:.1f}",
                         "oracle CPU s, every time": f"{b['cpu oracle']:.1f}",
                         "oracle CPU s, kept": f"{a['cpu oracle']:.1f}",
                         "speed-up (search + oracle)": f"{cpu_b / cpu_a:.2f}",
                         "accuracy (kept / every time)":
                             f"{100 * a['acc']:.2f} / {100 * b['acc']:.2f}",
                         "same choices and accuracies": "yes" if same else "NO"})
            data[name] = res
    body = (f"Task {args.task} ({X.shape[0]} rows), {args.kernel} kernel (sigma {sigma:.4g} by "
            "its median rule), N = 1,000, the grid and protocol of rftca_kernels.py "
            "(5-fold source CV, then the oracle over the same grid); one BLAS thread; CPU "
            "seconds (process time) on a shared machine.\n\n" + markdown_table(rows))
    write_results("exact_transform_memory", "Exact adapters: the test kernel kept in memory=",
                  body, {"task": args.task, "kernel": args.kernel, "sigma": sigma,
                         "results": data}, machine)


if __name__ == "__main__":
    main()
