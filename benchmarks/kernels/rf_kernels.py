"""Random Fourier features of the Gaussian, Laplacian and Cauchy kernels on real data.

For each kernel of :data:`shiftlearn.kernels.RFF_KERNELS` (bandwidth by its ``"median"`` rule,
:func:`~shiftlearn.kernels.median_heuristic`), on 1,000 seeded rows of two real data sets
(Office+Caltech SURF caltech+amazon, d = 800; MNIST+USPS, d = 256):

* the time of the exact Gram matrix (1,000 x 1,000, one BLAS thread);
* the error of the random-feature Gram ``Z Z^T`` against the exact one for
  ``N = 125 ... 4,000`` frequencies (mean of 3 seeds): max abs error, rms error of the entries
  and of the centred kernel, beside the rms of the centred exact kernel (the signal subspace
  methods see), and the fitted log-log slope (theory: -0.5);
* the spread of the kernel (mean off-diagonal value), which says how flat the median rule
  makes each kernel on these data.

Run: ``OMP_NUM_THREADS=1 python benchmarks/kernels/rf_kernels.py`` (about 2 minutes).
Writes ``benchmarks/kernels/results/rf_kernels.md`` and ``.json``.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import numpy as np
from threadpoolctl import threadpool_limits

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: _common
from _common import header, markdown_table, progress, track, write_results  # noqa: E402

from shiftlearn.datasets import load_mnist_usps, load_office_caltech  # noqa: E402
from shiftlearn.kernels import (  # noqa: E402
    RFF_KERNELS,
    center_kernel,
    kernel_matrix,
    median_heuristic,
    rff_map,
    rff_weights,
)

SIZES = (125, 250, 500, 1000, 2000, 4000)
SEEDS = (0, 1, 2)
N_ROWS = 1000


def data_sets():
    oc = load_office_caltech()
    X, _, _ = oc.pack("caltech", "amazon")
    mu = load_mnist_usps()
    X2, _, _ = mu.pack("mnist", "usps")
    rng = np.random.default_rng(0)
    return {"office caltech+amazon (SURF, d=800)": X[rng.choice(len(X), N_ROWS, replace=False)],
            "mnist+usps (d=256)": X2[rng.choice(len(X2), N_ROWS, replace=False)]}


def one(X, kernel):
    sigma = median_heuristic(X, kernel=kernel)
    t0 = time.perf_counter()
    K = kernel_matrix(X, kernel=kernel, sigma=sigma)
    t_exact = time.perf_counter() - t0
    Kc = center_kernel(K)
    n = X.shape[0]
    off = K[~np.eye(n, dtype=bool)]
    rows = []
    for N in SIZES:
        mx, rms, rms_c = [], [], []
        for seed in SEEDS:
            Z = rff_map(X, rff_weights(X.shape[1], N, sigma, seed, kernel=kernel))
            E = Z @ Z.T - K
            mx.append(np.abs(E).max())
            rms.append(np.sqrt(np.mean(E**2)))
            Zc = Z - Z.mean(axis=0)
            rms_c.append(np.sqrt(np.mean((Zc @ Zc.T - Kc) ** 2)))
        rows.append({"N": N, "max error": float(np.mean(mx)), "rms error": float(np.mean(rms)),
                     "rms error (centred)": float(np.mean(rms_c))})
    logN = np.log(SIZES)
    slopes = {c: float(np.polyfit(logN, np.log([r[c] for r in rows]), 1)[0])
              for c in ("max error", "rms error", "rms error (centred)")}
    return {"sigma": float(sigma), "exact gram s": t_exact,
            "mean off-diagonal k": float(off.mean()), "min k": float(off.min()),
            "rms centred K": float(np.sqrt(np.mean(Kc**2))), "errors": rows, "slopes": slopes}


@progress()
def main():
    machine = header("Random Fourier features of the Gaussian, Laplacian and Cauchy kernels")
    machine["OMP_NUM_THREADS"] = os.environ.get("OMP_NUM_THREADS", "unset")
    results = {}
    with threadpool_limits(1):
        for name, X in data_sets().items():
            for kernel in track(RFF_KERNELS, f"{name}: kernels"):
                r = one(X, kernel)
                results[f"{name} / {kernel}"] = r
                print(name, kernel, {k: v for k, v in r.items() if k != "errors"}, flush=True)
    summary = [{"data": key.split(" / ")[0], "kernel": key.split(" / ")[1],
                "sigma (median rule)": r["sigma"], "exact Gram s": r["exact gram s"],
                "mean k": r["mean off-diagonal k"], "rms HKH": r["rms centred K"],
                **{f"rms err N={e['N']}": e["rms error (centred)"] for e in r["errors"]
                   if e["N"] in (250, 1000, 4000)},
                "slope max": r["slopes"]["max error"],
                "slope rms": r["slopes"]["rms error (centred)"]}
               for key, r in results.items()]
    detail = []
    for key, r in results.items():
        for e in r["errors"]:
            detail.append({"data / kernel": key, **e})
    body = (f"{N_ROWS} seeded rows per data set, bandwidth by each kernel's `median` rule, "
            f"errors are means over seeds {list(SEEDS)}; `rms err` is the rms error of the "
            "centred random-feature kernel `Z_c Z_c^T` against `HKH`, `rms HKH` the rms of "
            "`HKH` itself (the signal), slopes are log-log fits over "
            f"N = {SIZES[0]}..{SIZES[-1]} (theory -0.5).\n\n"
            + markdown_table(summary, floatfmt=".4f") + "\n\n## Errors per N\n\n"
            + markdown_table(detail, floatfmt=".4f"))
    write_results("rf_kernels", "Random Fourier features of the Gaussian, Laplacian and "
                  "Cauchy kernels", body, results, machine)


if __name__ == "__main__":
    main()
