"""Speed of ``shiftlearn.io.read_table`` on a 100,000 x 100 table.

Run: ``python benchmarks/datasets/datasets_read_table_speed.py [--rows N]``. Writes
``results/datasets_read_table_speed.{md,json}``.

Formats a user hands over: CSV with 6 significant digits and a header; a pandas ``to_csv()``
export (full precision, index column, gzip); TSV; Parquet. Each is read 3 times and the best
wall-clock time and its CPU time are kept, next to plain ``pandas.read_csv`` /
``pandas.read_parquet`` of the same file (the floor: what the checks and the sniffing add is
the difference). The values read back are compared with the written ones.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: _common
from _common import header, markdown_table, progress, track, write_results  # noqa: E402

from shiftlearn.io import read_table  # noqa: E402


def best_of(fn, repeats=3):
    best = None
    for _ in range(repeats):
        w, c = time.perf_counter(), time.process_time()
        out = fn()
        w, c = time.perf_counter() - w, time.process_time() - c
        if best is None or w < best[0]:
            best = (w, c)
    return out, best


@progress()
def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rows", type=int, default=100_000)
    args = ap.parse_args()
    machine = header("read_table speed")
    n, d = args.rows, 100
    rng = np.random.default_rng(0)
    df = pd.DataFrame(rng.normal(size=(n, d)), columns=[f"x{j}" for j in range(d)])
    df["label"] = rng.integers(0, 5, n)
    folder = Path(tempfile.mkdtemp())
    files = {
        "CSV, 6 digits, header": (folder / "a.csv",
                                  lambda p: df.to_csv(p, index=False, float_format="%.6g"),
                                  lambda p: pd.read_csv(p), 1e-5),
        "to_csv() export: index, full precision, gzip": (
            folder / "b.csv.gz", lambda p: df.to_csv(p),
            lambda p: pd.read_csv(p, index_col=0), 0.0),
        "TSV, 6 digits, header": (folder / "c.tsv",
                                  lambda p: df.to_csv(p, sep="\t", index=False,
                                                      float_format="%.6g"),
                                  lambda p: pd.read_csv(p, sep="\t"), 1e-5),
        "Parquet": (folder / "d.parquet", lambda p: df.to_parquet(p),
                    lambda p: pd.read_parquet(p), 0.0),
    }
    rows = []
    for name, (path, write, plain, tol) in track(files.items(), "formats"):
        write(path)
        t, (wall, cpu) = best_of(lambda p=path: read_table(p))
        _, (wall0, cpu0) = best_of(lambda p=path, f=plain: f(p))
        err = float(np.max(np.abs(t.X - df.iloc[:, :d].to_numpy())))
        same_y = bool(np.array_equal(t.y, df["label"].to_numpy()))
        assert err <= tol and same_y, (name, err, same_y)
        rows.append({"file": name, "MB": round(path.stat().st_size / 2**20, 1),
                     "read_table s": round(wall, 2), "CPU s": round(cpu, 2),
                     "plain pandas s": round(wall0, 2), "max abs error in X": f"{err:.1e}",
                     "labels equal": same_y})
        print(rows[-1])
        path.unlink()
    os.rmdir(folder)
    load = os.getloadavg()[0]
    body = (f"{n:,} rows x {d} features + an integer label; best of 3 reads, on a machine with "
            f"load average {load:.1f} at the end (wall times on a shared machine are noisy; "
            "CPU time beside them).\n\n" + markdown_table(rows))
    write_results("datasets_read_table_speed", f"read_table speed, {n:,} x {d}", body,
                  {"rows": rows, "n": n, "d": d, "load_average": load}, machine)


if __name__ == "__main__":
    main()
