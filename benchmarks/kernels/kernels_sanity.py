"""Sanity figures of the kernel toolkit: random-feature error rate, MMD test power and level.

Writes ``benchmarks/kernels/results/kernels_sanity.md`` and ``.json``:

1. Random Fourier features: max and Frobenius error of ``Z Z^T`` against the Gaussian kernel for
   ``N = 16 .. 4096`` frequencies (mean over 10 seeds) and the fitted log-log slope (theory:
   -0.5).
2. MMD permutation test (unbiased MMD², median bandwidth, 500 permutations): p-values on two
   shifted Gaussians and on two samples of one Gaussian; the rejection rate under the null over
   200 seeded data sets at levels 0.05 and 0.1; the power against a 0.3 mean shift.

Run: ``python benchmarks/kernels/kernels_sanity.py`` (~1 min on 2 cores).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: _common
from _common import header, markdown_table, progress, track, write_results  # noqa: E402

from shiftlearn.kernels import (  # noqa: E402
    mmd_permutation_test,
    rbf_kernel,
    rff_map,
    rff_weights,
)


def rff_errors(n=200, d=5, sigma=2.0, sizes=(16, 64, 256, 1024, 4096), seeds=range(10)):
    X = np.random.default_rng(123).normal(size=(n, d))
    K = rbf_kernel(X, sigma=sigma)
    rows = []
    for N in track(sizes, "random features: N"):
        mx, fro = [], []
        for s in seeds:
            Z = rff_map(X, rff_weights(d, N, sigma, s))
            E = Z @ Z.T - K
            mx.append(np.abs(E).max())
            fro.append(np.linalg.norm(E) / n)
        rows.append({"n_features": N, "max_error": float(np.mean(mx)),
                     "frobenius_error_over_n": float(np.mean(fro)),
                     "max_error_x_sqrtN": float(np.mean(mx) * np.sqrt(N))})
    sizes = np.array(sizes, dtype=float)
    slopes = {k: float(np.polyfit(np.log(sizes), np.log([r[k] for r in rows]), 1)[0])
              for k in ("max_error", "frobenius_error_over_n")}
    return rows, slopes


def mmd_tests(n=100, d=2, perms=500):
    rng = np.random.default_rng(0)
    X, Y = rng.normal(size=(n, d)), rng.normal(size=(n, d)) + 0.6
    shifted = mmd_permutation_test(X, Y, n_permutations=perms, random_state=0)
    X2, Y2 = rng.normal(size=(n, d)), rng.normal(size=(n, d))
    same = mmd_permutation_test(X2, Y2, n_permutations=perms, random_state=0)
    null_p, alt_p = [], []
    t0 = time.perf_counter()
    for seed in track(range(200), "MMD tests (null + shift)"):
        r = np.random.default_rng(10_000 + seed)
        null_p.append(mmd_permutation_test(r.normal(size=(50, d)), r.normal(size=(50, d)),
                                           n_permutations=199, random_state=seed).p_value)
        alt_p.append(mmd_permutation_test(r.normal(size=(50, d)), r.normal(size=(50, d)) + 0.3,
                                          n_permutations=199, random_state=seed).p_value)
    secs = time.perf_counter() - t0
    null_p, alt_p = np.array(null_p), np.array(alt_p)
    return {
        "shifted_gaussians_p": shifted.p_value, "shifted_statistic": shifted.statistic,
        "same_gaussian_p": same.p_value, "same_statistic": same.statistic,
        "null_rejection_rate_0.05": float(np.mean(null_p <= 0.05)),
        "null_rejection_rate_0.10": float(np.mean(null_p <= 0.10)),
        "null_mean_p": float(null_p.mean()),
        "power_shift_0.3_at_0.05": float(np.mean(alt_p <= 0.05)),
        "seconds_400_tests": secs,
    }


@progress()
def main() -> None:
    machine = header("Kernel toolkit sanity figures")
    rows, slopes = rff_errors()
    print(markdown_table(rows, floatfmt=".4f"))
    print("slopes:", slopes)
    tests = mmd_tests()
    print(tests)
    test_rows = [
        {"check": "two shifted Gaussians (n = 100 each, 2-d, mean shift 0.6), p-value",
         "value": f"{tests['shifted_gaussians_p']:.4f}"},
        {"check": "two samples of one Gaussian (n = 100 each), p-value",
         "value": f"{tests['same_gaussian_p']:.4f}"},
        {"check": "null rejection rate at 0.05 (200 data sets, n = 50 each)",
         "value": f"{tests['null_rejection_rate_0.05']:.3f}"},
        {"check": "null rejection rate at 0.10",
         "value": f"{tests['null_rejection_rate_0.10']:.3f}"},
        {"check": "mean p-value under the null (0.5 if uniform)",
         "value": f"{tests['null_mean_p']:.3f}"},
        {"check": "power at 0.05 against a 0.3 mean shift (n = 50 each)",
         "value": f"{tests['power_shift_0.3_at_0.05']:.3f}"},
        {"check": "time of those 400 tests (199 permutations each), s",
         "value": f"{tests['seconds_400_tests']:.1f}"},
    ]
    body = (
        "## Random Fourier features\n\n"
        "Error of `Z Z^T` against the Gaussian kernel (n = 200 points, d = 5, sigma = 2), mean "
        "over 10 seeds. Theory: both errors fall like `1/sqrt(N)` (slope -0.5 in log-log).\n\n"
        + markdown_table(rows, floatfmt=".4f")
        + f"\n\nFitted log-log slope: max error **{slopes['max_error']:.3f}**, Frobenius/n "
        f"**{slopes['frobenius_error_over_n']:.3f}**.\n\n"
        "## MMD permutation test\n\nUnbiased MMD², Gaussian kernel with the median bandwidth, "
        "seeded.\n\n" + markdown_table(test_rows))
    write_results("kernels_sanity", "Kernel toolkit sanity figures", body,
                  {"rff": rows, "rff_slopes": slopes, "mmd_test": tests}, machine)


if __name__ == "__main__":
    main()
