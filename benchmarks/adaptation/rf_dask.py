"""RF-TCA on a Dask array generated block by block on a LocalCluster (issue #18 item 1).

Synthetic two-domain rows (``--d`` input columns, float32, 10 Gaussian classes; the first half
of the rows labeled source domain 1, the second half an unlabeled shifted target, domain -2)
are *generated inside the workers*, one ``--block``-row block per task, so the full ``X`` never
exists anywhere. ``RFTCA(n_features=N).fit`` computes the statistics per block where the
blocks live and solves the ``2N x 2N`` problem in the client. Measured per run, each in a fresh
process:

* wall time and rows/s of the fit (generation included: it is part of every block's task) on a
  ``LocalCluster`` of 1 and of 2 worker processes (one thread each);
* peak resident memory of the client process (it also hosts the scheduler), and of each
  worker (``ru_maxrss``; beside it the worker's memory at start, so the difference is what
  the blocks in flight cost, to compare with one block's size);
* the same Dask fit on the threaded scheduler (one thread, no distributed: the library's
  per-block path alone);
* the same fit in memory (numpy, one thread) at ``min(--rows, 1,000,000)`` rows: wall of the
  generation and of the fit, peak memory; the per-row cost ratio Dask / in memory (target:
  within 1.5x), both generation included and fit only.

The bandwidth is a float, the median rule applied to the first block (``bandwidth="median"``
would read 1,000 seeded rows of the whole ``X``: one more pass over the blocks holding them).
The issue's size is the default; ``--rows`` scales it down:

    python benchmarks/adaptation/rf_dask.py [--rows 10000000] [--d 256] [--n-features 256]
        [--block 50000] [--workers 1 2]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: _common
from _common import header, markdown_table, progress, track, write_results  # noqa: E402

SEED = 0
N_CLASSES = 10


def _centers(d: int) -> np.ndarray:
    return (np.random.default_rng(SEED).normal(size=(N_CLASSES, d)) * 2.0).astype(np.float32)


def _block_rng(block: int) -> np.random.Generator:
    return np.random.default_rng([SEED, block])


def gen_X(block: int, rows: int, d: int, target: bool) -> np.ndarray:
    """Rows of one block: class centre + standard normal noise; targets scaled and shifted."""
    rng = _block_rng(block)
    cls = rng.integers(0, N_CLASSES, rows)
    X = rng.standard_normal((rows, d), dtype=np.float32)
    X += _centers(d)[cls]
    if target:
        X *= 1.3
        X += 0.5
    return X


def gen_y(block: int, rows: int, target: bool) -> np.ndarray:
    """The block's labels (the same class draws as :func:`gen_X`); -1 on target rows."""
    cls = _block_rng(block).integers(0, N_CLASSES, rows)
    return np.full(rows, -1, dtype=np.int64) if target else cls


def layout(n: int, block: int) -> list[tuple[int, int, bool]]:
    """``(block id, rows, is target)`` per block; the target half starts at a block edge."""
    half = n // 2
    out, start, b = [], 0, 0
    while start < n:
        stop = min(start + block, half if start < half else n)
        out.append((b, stop - start, start >= half))
        start, b = stop, b + 1
    return out


def dask_data(n: int, d: int, block: int):
    import dask.array as da

    blocks = layout(n, block)
    rows = tuple(r for _, r, _ in blocks)

    def X_block(block_id=None):
        b, r, t = blocks[block_id[0]]
        return gen_X(b, r, d, t)

    def y_block(block_id=None):
        b, r, t = blocks[block_id[0]]
        return gen_y(b, r, t)

    def sd_block(block_id=None):
        b, r, t = blocks[block_id[0]]
        return np.full(r, -2 if t else 1, dtype=np.int64)

    X = da.map_blocks(X_block, dtype=np.float32, chunks=(rows, (d,)),
                      meta=np.empty((0, 0), np.float32))
    y = da.map_blocks(y_block, dtype=np.int64, chunks=(rows,), meta=np.empty(0, np.int64))
    sd = da.map_blocks(sd_block, dtype=np.int64, chunks=(rows,), meta=np.empty(0, np.int64))
    return X, y, sd


def numpy_data(n: int, d: int, block: int):
    blocks = layout(n, block)
    X = np.empty((n, d), dtype=np.float32)
    y = np.empty(n, dtype=np.int64)
    sd = np.empty(n, dtype=np.int64)
    start = 0
    for b, r, t in blocks:
        X[start:start + r] = gen_X(b, r, d, t)
        y[start:start + r] = gen_y(b, r, t)
        sd[start:start + r] = -2 if t else 1
        start += r
    return X, y, sd


def bandwidth(d: int, block: int) -> float:
    from shiftlearn.kernels import median_heuristic

    return median_heuristic(gen_X(0, block, d, False))


def _rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _current_mb() -> float:
    import psutil

    return psutil.Process().memory_info().rss / 2**20


def _estimator(args, sigma):
    from shiftlearn.adaptation import RFTCA

    return RFTCA(n_components=30, n_features=args.n_features, bandwidth=sigma, random_state=0)


def child_dask(args) -> dict:
    import distributed

    sigma = bandwidth(args.d, args.block)
    with distributed.LocalCluster(n_workers=args.workers, threads_per_worker=1,
                                  processes=True, dashboard_address=None) as cluster, \
            distributed.Client(cluster) as client:
        client.run(lambda: __import__("shiftlearn.adaptation"))       # warm the imports
        start_mb = client.run(_current_mb)
        X, y, sd = dask_data(args.rows, args.d, args.block)
        client_before = _current_mb()
        cpu_start = client.run(time.process_time)
        w0, c0 = time.perf_counter(), time.process_time()
        est = _estimator(args, sigma).fit(X, y, sd)
        wall, cpu = time.perf_counter() - w0, time.process_time() - c0
        cpu_end = client.run(time.process_time)
        worker_cpu = sum(cpu_end[k] - cpu_start[k] for k in cpu_start)
        worker_peak = client.run(_rss_mb)
        Z = est.transform(X[: args.block]).compute()        # lazy transform, one block
    return {"mode": f"dask, {args.workers} worker(s)", "rows": args.rows,
            "fit_wall_s": wall, "client_cpu_s": cpu, "worker_cpu_s": worker_cpu,
            "rows_per_s": args.rows / wall,
            "client_peak_mb": _rss_mb(), "client_before_fit_mb": client_before,
            "worker_start_mb": sorted(start_mb.values()),
            "worker_peak_mb": sorted(worker_peak.values()),
            "eigenvalues_head": est.eigenvalues_[:3].tolist(), "transform_block": Z.shape,
            "load_avg": os.getloadavg()[0]}


def child_threads(args) -> dict:
    """The same Dask fit on the threaded scheduler with one thread, in this process: the
    library's per-block path without distributed's scheduler and worker processes."""
    import dask
    from threadpoolctl import threadpool_limits

    sigma = bandwidth(args.d, args.block)
    X, y, sd = dask_data(args.rows, args.d, args.block)
    with threadpool_limits(1), dask.config.set(scheduler="threads", num_workers=1):
        before = _current_mb()
        w0, c0 = time.perf_counter(), time.process_time()
        est = _estimator(args, sigma).fit(X, y, sd)
        wall, cpu = time.perf_counter() - w0, time.process_time() - c0
    return {"mode": "dask, threaded scheduler, 1 thread", "rows": args.rows,
            "fit_wall_s": wall, "client_cpu_s": cpu, "worker_cpu_s": 0.0,
            "rows_per_s": args.rows / wall, "client_peak_mb": _rss_mb(),
            "client_before_fit_mb": before, "worker_start_mb": [], "worker_peak_mb": [],
            "eigenvalues_head": est.eigenvalues_[:3].tolist(), "load_avg": os.getloadavg()[0]}


def child_numpy(args) -> dict:
    from threadpoolctl import threadpool_limits

    sigma = bandwidth(args.d, args.block)
    with threadpool_limits(1):
        w0, c0 = time.perf_counter(), time.process_time()
        X, y, sd = numpy_data(args.rows, args.d, args.block)
        gen, gen_cpu = time.perf_counter() - w0, time.process_time() - c0
        w0, c0 = time.perf_counter(), time.process_time()
        est = _estimator(args, sigma).fit(X, y, sd)
        wall, cpu = time.perf_counter() - w0, time.process_time() - c0
    return {"mode": "numpy, in memory, 1 thread", "rows": args.rows, "generate_s": gen,
            "generate_cpu_s": gen_cpu, "fit_wall_s": wall, "fit_cpu_s": cpu,
            "rows_per_s": args.rows / (gen + wall),
            "fit_rows_per_s": args.rows / wall, "peak_mb": _rss_mb(),
            "eigenvalues_head": est.eigenvalues_[:3].tolist(),
            "load_avg": os.getloadavg()[0]}


def run_child(argv: list[str]) -> dict:
    env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1")
    out = subprocess.run([sys.executable, __file__, *argv], capture_output=True, text=True,
                         env=env, check=False)
    if out.returncode != 0:
        raise RuntimeError(f"child {argv} failed:\n{out.stderr[-4000:]}")
    line = [ln for ln in out.stdout.splitlines() if ln.startswith("RESULT ")][-1]
    return json.loads(line[len("RESULT "):])


@progress()
def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rows", type=int, default=10_000_000)
    p.add_argument("--d", type=int, default=256)
    p.add_argument("--n-features", type=int, default=256)
    p.add_argument("--block", type=int, default=50_000)
    p.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    p.add_argument("--memory-rows", type=int, default=1_000_000)
    p.add_argument("--child", choices=["dask", "threads", "numpy"])
    args = p.parse_args()
    common = ["--d", str(args.d), "--n-features", str(args.n_features),
              "--block", str(args.block)]
    if args.child == "dask":
        args.workers = args.workers[0]
        print("RESULT " + json.dumps(child_dask(args)))
        return
    if args.child in ("numpy", "threads"):
        fn = child_numpy if args.child == "numpy" else child_threads
        print("RESULT " + json.dumps(fn(args)))
        return
    machine = header("RF-TCA on Dask: client and worker memory, rows/s, cost against numpy")
    block_mb = args.block * args.d * 4 / 2**20
    runs = []
    for w in track(args.workers, "LocalCluster runs"):
        r = run_child(["--child", "dask", "--rows", str(args.rows), "--workers", str(w),
                       *common])
        print(r, flush=True)
        runs.append(r)
    r = run_child(["--child", "threads", "--rows", str(args.rows), *common])
    print(r, flush=True)
    runs.append(r)
    mem_rows = min(args.rows, args.memory_rows)
    ref = run_child(["--child", "numpy", "--rows", str(mem_rows), *common])
    print(ref, flush=True)
    numpy_row = (ref["generate_s"] + ref["fit_wall_s"]) / mem_rows
    numpy_cpu_row = (ref["generate_cpu_s"] + ref["fit_cpu_s"]) / mem_rows
    numpy_fit_row = ref["fit_wall_s"] / mem_rows
    rows = []
    for r in runs:
        per_row = r["fit_wall_s"] / r["rows"]
        cpu_row = (r["client_cpu_s"] + r["worker_cpu_s"]) / r["rows"]
        worker_row = (r["worker_cpu_s"] or r["client_cpu_s"]) / r["rows"]
        rows.append({
            "run": r["mode"], "rows": f"{r['rows']:,}", "wall s": r["fit_wall_s"],
            "rows/s": f"{r['rows_per_s']:,.0f}", "client peak MB": r["client_peak_mb"],
            "worker start MB": ", ".join(f"{v:.0f}" for v in r["worker_start_mb"]),
            "worker peak MB": ", ".join(f"{v:.0f}" for v in r["worker_peak_mb"]),
            "wall/row vs numpy (gen+fit)": per_row / numpy_row,
            "CPU/row vs numpy (gen+fit)": cpu_row / numpy_cpu_row,
            "workers' CPU/row vs numpy": worker_row / numpy_cpu_row,
            "wall/row vs numpy fit only": per_row / numpy_fit_row,
            "load": r["load_avg"]})
    rows.append({"run": ref["mode"], "rows": f"{mem_rows:,}",
                 "wall s": ref["generate_s"] + ref["fit_wall_s"],
                 "rows/s": f"{ref['rows_per_s']:,.0f}", "client peak MB": ref["peak_mb"],
                 "worker start MB": "", "worker peak MB": "",
                 "wall/row vs numpy (gen+fit)": 1.0, "CPU/row vs numpy (gen+fit)": 1.0,
                 "workers' CPU/row vs numpy": 1.0,
                 "wall/row vs numpy fit only": numpy_row / numpy_fit_row,
                 "load": ref["load_avg"]})
    table = markdown_table(rows)
    body = (f"RF-TCA, n_components=30, N = {args.n_features} frequencies "
            f"({2 * args.n_features} feature columns), d = {args.d} float32 input columns, "
            f"blocks of {args.block:,} rows ({block_mb:.0f} MB of X each), generated in the "
            f"workers. In memory: generation {ref['generate_s']:.1f} s + fit "
            f"{ref['fit_wall_s']:.1f} s at {mem_rows:,} rows.\n\n{table}\n\n"
            "`wall s` of a Dask run: the whole fit (validation reductions over y and "
            "sample_domain, generation and statistics of every block, the solve). `CPU/row`: "
            "CPU seconds of the client (scheduler included) and of every worker per row, "
            "against the in-memory run's generation + fit CPU per row (the fair ratio on a "
            "loaded machine, where wall times depend on the neighbours); `workers' CPU/row`: "
            "the workers' share only (the client and scheduler use CPU in proportion to the "
            "wall time, which the load stretches). The threaded-scheduler row runs the same "
            "Dask fit in one process and thread, without distributed: its CPU is the "
            "library's per-block path against numpy. Worker peak minus "
            "worker start = what the blocks in flight cost. `load`: 1-minute load average at "
            "the end of the run (this machine is shared).")
    print(table)
    write_results("rf_dask", "RF-TCA on Dask (issue #18 item 1)", body,
                  {"dask": runs, "numpy": ref, "args": vars(args)}, machine)


if __name__ == "__main__":
    main()
