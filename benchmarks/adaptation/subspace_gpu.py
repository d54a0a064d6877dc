"""Exact TCA, SCA, CORAL and RF-TCA on a GPU (PyTorch, CUDA) against NumPy on the CPU, in one run.

The same estimators (``TCA``, ``SCA``, ``CORAL``, ``RFTCA``) fitted on NumPy arrays (the CPU
route: ARPACK on the reduced problem, chunked random-feature statistics) and on torch tensors
on the GPU under scikit-learn's array-API dispatch (the kernel, the reduced problem and its
block subspace iteration, the random features and their sums on the device), on two-domain
synthetic data:

* exact TCA (``n_components=30``, Gaussian kernel, median bandwidth) at the ``--sizes`` on
  both devices (float64 and float32 on the GPU), then at ``--gpu-only`` sizes on the GPU alone
  (an n x n float64 kernel is 20 GB at 50,000 rows: beyond the 2-core machines of this
  project, hours with ARPACK on a CPU) and at ``--gpu-only-float32`` sizes in float32 alone
  (100,000 rows: a 40 GB float32 kernel);
* SCA (``n_components=30``, the default ``beta=0.5`` with labeled source rows) at
  ``--sca-sizes`` rows and CORAL on 157 + 295 rows of 4,096 columns (the shape of a DeCAF
  task; ``shrinkage=0.3``, the factored route, and the default ``"auto"``; ``--no-coral``
  leaves it out), float64 on both devices;
* RF-TCA (``n_features=1000``, float32) at ``--rf-rows`` rows: the CPU route up to
  ``--rf-cpu-max`` rows, the GPU route at every size.

Agreement is measured on the training embedding: the largest absolute difference of the GPU
embedding from the CPU one (columns matched in sign) over the largest CPU entry, per case.
Every row names the device that produced its time. Needs torch with CUDA; prints why not and
stops otherwise. One command, at most about 5 minutes on one H200:

    python benchmarks/adaptation/subspace_gpu.py
    python benchmarks/adaptation/subspace_gpu.py --quick     # seconds: a smoke test
"""

from __future__ import annotations

import argparse
import os
import sys
import time

if __name__ == "__main__":
    # scikit-learn's array-API dispatch needs SciPy's array-API mode, set before SciPy loads
    os.environ.setdefault("SCIPY_ARRAY_API", "1")

from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: _common
from _common import header, markdown_table, write_results  # noqa: E402

N_COMPONENTS = 30


def make_two_domains(n: int, d: int, seed: int = 0, n_source: int | None = None):
    """``n`` rows in ``d`` columns: a source part (three Gaussian classes, ``n_source`` rows,
    default half) and a target part (the same classes, rotated in two coordinates and
    shifted); returns ``(X, sample_domain, y)`` with ``y = -1`` on the target rows."""
    rng = np.random.default_rng(seed)
    ns = n // 2 if n_source is None else n_source
    centers = rng.normal(scale=3.0, size=(3, d))
    ys = rng.integers(0, 3, ns)
    Xs = centers[ys] + rng.normal(size=(ns, d))
    Xt = centers[rng.integers(0, 3, n - ns)] + rng.normal(size=(n - ns, d))
    c, s = np.cos(0.6), np.sin(0.6)
    Xt[:, :2] = Xt[:, :2] @ np.array([[c, -s], [s, c]]) + 1.5
    sd = np.r_[np.ones(ns, np.int64), -2 * np.ones(n - ns, np.int64)]
    return np.vstack([Xs, Xt]), sd, np.r_[ys, -np.ones(n - ns, np.int64)]


def _agreement(Z_gpu: np.ndarray, Z_cpu: np.ndarray) -> float:
    """max |Z_gpu - Z_cpu| / max |Z_cpu|, columns matched in sign."""
    sign = np.sign(np.sum(Z_gpu * Z_cpu, axis=0))
    sign[sign == 0] = 1.0
    return float(np.abs(Z_gpu * sign - Z_cpu).max() / np.abs(Z_cpu).max())


def _timed(sync, fn, *args):
    """``(fn(*args), seconds)``, with ``sync()`` (a device synchronisation) on both sides."""
    sync()
    t0 = time.perf_counter()
    out = fn(*args)
    sync()
    return out, time.perf_counter() - t0


def _cpu_tca(X, sd):
    from shiftlearn.adaptation import TCA

    return TCA(n_components=N_COMPONENTS).fit_transform(X, sample_domain=sd)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="*", default=[10_000, 20_000])
    ap.add_argument("--gpu-only", type=int, nargs="*", default=[50_000])
    ap.add_argument("--gpu-only-float32", type=int, nargs="*", default=[100_000],
                    help="exact TCA sizes run in float32 alone (a float64 kernel would not fit)")
    ap.add_argument("--rf-rows", type=int, nargs="*", default=[1_000_000, 10_000_000])
    ap.add_argument("--sca-sizes", type=int, nargs="*", default=[10_000],
                    help="SCA sizes on both devices")
    ap.add_argument("--coral", action=argparse.BooleanOptionalAction, default=True,
                    help="CORAL at 157 + 295 rows x 4,096 columns on both devices")
    ap.add_argument("--rf-cpu-max", type=int, default=1_000_000)
    ap.add_argument("--d", type=int, default=32, help="input columns")
    ap.add_argument("--quick", action="store_true", help="tiny sizes: a smoke test")
    ap.add_argument("--device", default="cuda",
                    help="torch device of the array-API route ('cpu': a smoke test here)")
    args = ap.parse_args(argv)
    if args.quick:
        args.sizes, args.gpu_only, args.rf_rows, args.rf_cpu_max = [1000], [2000], [20_000], \
            20_000
        args.gpu_only_float32 = [3000]
        args.sca_sizes, args.coral = [800], True
    try:
        import torch
    except ImportError:
        sys.exit("subspace_gpu needs PyTorch (the GPU route runs on torch tensors).")
    on_gpu = args.device.startswith("cuda")
    if on_gpu and not torch.cuda.is_available():
        sys.exit("subspace_gpu needs a CUDA GPU: torch.cuda.is_available() is False "
                 "(--device cpu runs the torch route on the CPU, as a smoke test).")
    import sklearn

    from shiftlearn.adaptation import CORAL, RFTCA, SCA, TCA

    title = "Exact TCA, SCA, CORAL and RF-TCA: NumPy on the CPU against torch on the GPU"
    machine = header(title)
    gpu = torch.cuda.get_device_name(0) if on_gpu else "cpu (torch)"
    machine.update({"gpu": gpu, "torch": torch.__version__, "cuda": torch.version.cuda})
    print(f"device: {gpu}, torch {torch.__version__}, CUDA {torch.version.cuda}", flush=True)
    cuda = torch.device(args.device)

    def nothing():
        pass

    sync = torch.cuda.synchronize if on_gpu else nothing

    def peak_gb():
        return round(torch.cuda.max_memory_allocated() / 2**30, 1) if on_gpu else None

    def reset_peak():
        if on_gpu:
            torch.cuda.reset_peak_memory_stats()
    rows: list[dict] = []

    def gpu_tca(X, sd, dtype):
        Xg = torch.asarray(X, dtype=dtype, device=cuda)
        with sklearn.config_context(array_api_dispatch=True):
            return TCA(n_components=N_COMPONENTS).fit_transform(Xg, sample_domain=sd)

    def fit_cpu(est, X, sd):
        return est.fit(X, sample_domain=sd).transform(X)

    def fit_gpu(est, Xg, sd):
        with sklearn.config_context(array_api_dispatch=True):
            return est.fit(Xg, sample_domain=sd).transform(Xg)

    def record(row):
        rows.append(row)
        print("  " + ", ".join(f"{k}={v}" for k, v in row.items()), flush=True)

    X, sd, _ = make_two_domains(2000, args.d, seed=1)          # warm-up: CUDA context, cuBLAS
    gpu_tca(X, sd, torch.float64)
    gpu_tca(X, sd, torch.float32)
    print("exact TCA", flush=True)
    for n in [*args.sizes, *args.gpu_only, *args.gpu_only_float32]:
        X, sd, _ = make_two_domains(n, args.d)
        Z_cpu = None
        if n in args.sizes:
            Z_cpu, t_cpu = _timed(nothing, _cpu_tca, X, sd)
            record({"method": "TCA", "rows": n, "device": "cpu", "dtype": "float64",
                    "seconds": round(t_cpu, 3), "vs_cpu": 1.0, "rel_diff": 0.0})
        only32 = n in args.gpu_only_float32 and n not in args.gpu_only
        for dtype in (torch.float32,) if only32 else (torch.float64, torch.float32):
            reset_peak()
            Z, t = _timed(sync, gpu_tca, X, sd, dtype)
            Z = Z.double().cpu().numpy()
            record({"method": "TCA", "rows": n, "device": gpu,
                    "dtype": str(dtype)[6:],
                    "seconds": round(t, 3),
                    "vs_cpu": None if Z_cpu is None else round(t_cpu / t, 1),
                    "rel_diff": None if Z_cpu is None else float(f"{_agreement(Z, Z_cpu):.2e}"),
                    "gpu_peak_gb": peak_gb()})
        del X, Z_cpu
    print("SCA and CORAL", flush=True)
    others = []
    for n in args.sca_sizes:
        X, sd, y = make_two_domains(n, args.d, seed=3)
        others.append(("SCA", n, X, sd, y, lambda: SCA(n_components=N_COMPONENTS)))
    for shrinkage in (0.3, "auto") if args.coral else ():   # a DeCAF task's shape, d >> n
        X, sd, y = make_two_domains(452, 4096, seed=4, n_source=157)
        others.append((f"CORAL({shrinkage!r})", 452, X, sd, y,
                       lambda shrinkage=shrinkage: CORAL(shrinkage=shrinkage)))
    for method, n, X, sd, y, make in others:
        def fit_np(X=X, sd=sd, y=y, make=make):
            return make().fit_transform(X, y, sample_domain=sd)

        def fit_dev(X=X, sd=sd, y=y, make=make):
            with sklearn.config_context(array_api_dispatch=True):
                return make().fit_transform(torch.asarray(X, device=cuda), y, sample_domain=sd)

        Z_cpu, t_cpu = _timed(nothing, fit_np)      # first: no device threads spinning
        fit_dev()                                   # warm-up: the solvers' device kernels
        record({"method": method, "rows": n, "cols": X.shape[1], "device": "cpu",
                "dtype": "float64", "seconds": round(t_cpu, 3), "vs_cpu": 1.0, "rel_diff": 0.0})
        reset_peak()
        Z, t = _timed(sync, fit_dev)
        Z = Z.double().cpu().numpy()
        record({"method": method, "rows": n, "cols": X.shape[1], "device": gpu,
                "dtype": "float64", "seconds": round(t, 3), "vs_cpu": round(t_cpu / t, 1),
                "rel_diff": float(f"{_agreement(Z, Z_cpu):.2e}"), "gpu_peak_gb": peak_gb()})
    print("RF-TCA", flush=True)
    for n in args.rf_rows:
        X, sd, _ = make_two_domains(n, args.d, seed=2)
        X = X.astype(np.float32)
        est = RFTCA(n_components=N_COMPONENTS, n_features=1000, random_state=0)
        Z_cpu = None
        if n <= args.rf_cpu_max:
            Z_cpu, t_cpu = _timed(nothing, fit_cpu, est, X, sd)
            record({"method": "RFTCA", "rows": n, "device": "cpu",
                    "dtype": "float32",
                    "seconds": round(t_cpu, 3), "vs_cpu": 1.0, "rel_diff": 0.0})
        reset_peak()
        Xg = torch.asarray(X, device=cuda)

        Z, t = _timed(sync, fit_gpu, est, Xg, sd)
        Z = Z.double().cpu().numpy()
        record({"method": "RFTCA", "rows": n, "device": gpu, "dtype": "float32",
                "seconds": round(t, 3),
                "vs_cpu": None if Z_cpu is None else round(t_cpu / t, 1),
                "rel_diff": None if Z_cpu is None else float(f"{_agreement(Z, Z_cpu):.2e}"),
                "gpu_peak_gb": peak_gb()})
        del X, Xg, Z, Z_cpu
    body = (
        "Fit plus the training embedding (`fit_transform` for TCA, SCA and CORAL, `fit` then "
        f"`transform` for RF-TCA), {N_COMPONENTS} components, {args.d} input columns (CORAL: "
        "4,096), half source and half target rows (CORAL: 157 source, 295 target). `vs_cpu`: "
        "the CPU time over this row's time in the same run; `rel_diff`: max |Z - Z_cpu| / "
        "max |Z_cpu| with columns matched in sign (exact TCA on the GPU solves the same "
        "reduced problem by block subspace iteration, the CPU by ARPACK; SCA on the GPU by "
        "Cholesky, two solves and `eigh`, the CPU by Cholesky and Lanczos; RF-TCA's CPU route "
        "evaluates cos/sin in float32 too)."
        + "\n\n"
        + markdown_table([{k: ("–" if v is None else f"{v:.1e}" if k == "rel_diff" and v
                               else f"{v:.3f}" if k == "seconds" else v)
                           for k, v in r.items()} for r in rows],
                         ["method", "rows", *(["cols"] if others else []), "device", "dtype",
                          "seconds", "vs_cpu", "rel_diff", "gpu_peak_gb"], floatfmt=".1f"))
    name = "subspace_gpu_quick" if args.quick else "subspace_gpu"
    write_results(name, title, body,
                  {"rows": rows, "d": args.d, "n_components": N_COMPONENTS}, machine)


if __name__ == "__main__":
    main()
