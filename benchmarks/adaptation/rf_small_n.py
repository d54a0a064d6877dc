"""RF-TCA / RF-SCA with n <= N training rows: the row-space solve against the full 2N x 2N solve.

With at most ``N = n_features`` training rows, ``RFTCA``/``RFSCA.fit`` solve the problem in an
orthonormal basis of the span of the ``n`` feature rows (exact: see
``shiftlearn/adaptation/_rf.py``); ``keep_stats=True`` keeps the full ``2N x 2N`` statistics and
so takes the full solve. For Office+Caltech tasks (SURF, d = 800, z-scored over the pooled
rows) with ``n_features=1000`` (``2N = 2,000`` columns) and default hyper-parameters, the script
times both fits (fastest of ``--repeat``) and compares their target 1NN accuracy and
eigenvalues (they must agree: the reduction is exact). amazon->dslr (n = 1,115 > N) is the
control: both fits take the full path there.

    python benchmarks/adaptation/rf_small_n.py [--repeat 3] [--threads 1]
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from pathlib import Path

import numpy as np
from sklearn.neighbors import KNeighborsClassifier
from threadpoolctl import threadpool_limits

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: _common
from _common import header, markdown_table, progress, track, write_results  # noqa: E402

from shiftlearn.adaptation import RFSCA, RFTCA  # noqa: E402
from shiftlearn.datasets import load_office_caltech  # noqa: E402

TASKS = [("dslr", "webcam"), ("webcam", "dslr"), ("amazon", "dslr")]


@progress()
def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--threads", type=int, default=1, help="BLAS threads")
    args = ap.parse_args(argv)
    machine = header("RF-TCA / RF-SCA, n <= N: row-space solve vs full solve")
    ds = load_office_caltech()
    rows = []
    with threadpool_limits(args.threads), warnings.catch_warnings():
        warnings.simplefilter("ignore")     # none expected; keep the table readable
        for src, tgt in track(TASKS, "tasks"):
            X, y, sd, yt = ds.pack(sources=src, targets=tgt, return_masked_labels=True)
            X = (X - X.mean(axis=0)) / np.maximum(X.std(axis=0), 1e-12)
            s, t = sd > 0, sd < 0
            for name, Est in (("RF-TCA", RFTCA), ("RF-SCA", RFSCA)):
                res = {}
                for mode, keep in (("row space", False), ("full 2N", True)):
                    best = np.inf
                    for _ in range(args.repeat):
                        t0 = time.perf_counter()
                        est = Est(n_features=1000, random_state=0, keep_stats=keep).fit(X, y, sd)
                        best = min(best, time.perf_counter() - t0)
                    Z = est.transform(X)
                    acc = KNeighborsClassifier(1).fit(Z[s], y[s]).score(Z[t], yt[t])
                    res[mode] = (best, acc, est.eigenvalues_)
                (ts, a_s, w_s), (tf, a_f, w_f) = res["row space"], res["full 2N"]
                row = {"task": f"{src}->{tgt}", "n": int(len(X)), "method": name,
                       "row-space fit s": ts, "full fit s": tf, "speed-up": tf / ts,
                       "1NN row space %": 100 * a_s, "1NN full %": 100 * a_f,
                       "max rel. eigenvalue diff": float(np.max(np.abs(w_s - w_f) / w_f))}
                print(row, flush=True)
                rows.append(row)
    cols = list(rows[0])
    body = markdown_table(rows, cols, floatfmt=".3g")
    write_results("rf_small_n", "RF-TCA / RF-SCA, n <= N: row-space solve vs full solve",
                  f"BLAS threads: {args.threads}; fastest of {args.repeat} fits.\n\n{body}",
                  {"rows": rows, "threads": args.threads, "repeat": args.repeat}, machine)


if __name__ == "__main__":
    main()
