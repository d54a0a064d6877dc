"""CORAL's fit against its information floor and against skada, in one run, on three shapes.

The floor is the thin SVD of both centred domain blocks (everything a covariance of ``n <= d``
rows holds). Ours is timed with a float shrinkage and with ``"ledoit_wolf"`` (Ledoit-Wolf on
the columns as they are): the factored route when each domain has fewer rows than features;
and with ``"auto"`` (Ledoit-Wolf on standardised columns, two ``d x d`` eigendecompositions);
skada's ``CORALAdapter`` with the same shrinkages (it has no ``"ledoit_wolf"``).
Shapes: ``d >> n`` (157 source and 295 target rows, 4,096 columns: the shape of a DeCAF task
on DSLR->Webcam), ``n ~ d`` and ``n >> d``; synthetic rows with columns of very different
scales. One BLAS thread; each time is the best of ``--repeat`` runs (slow cells once).

    OPENBLAS_NUM_THREADS=1 python benchmarks/adaptation/coral_speed.py
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: _common
from _common import header, markdown_table, progress, track, write_results  # noqa: E402

SHAPES = ((157, 295, 4096), (600, 600, 512), (3000, 3000, 128))
#: a cell slower than this many seconds is timed once
SLOW = 5.0


def _domains(n_s: int, n_t: int, d: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    scales = np.exp(rng.normal(size=d))
    Xs = rng.normal(size=(n_s, d)) * scales
    Xt = (rng.normal(size=(n_t, d)) + rng.normal(size=(1, d))) * scales * 1.5
    return np.vstack([Xs, Xt]), np.r_[np.ones(n_s, int), -2 * np.ones(n_t, int)]


def _best(fn, repeat: int) -> float:
    best = np.inf
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
        if best > SLOW:
            break
    return best


@progress()
def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--no-auto-at", type=int, default=None,
                    help="skip the dense 'auto' cells at this many columns or more")
    args = ap.parse_args(argv)
    from threadpoolctl import threadpool_limits

    from shiftlearn.adaptation import CORAL

    try:
        from skada import CORALAdapter
    except ImportError:
        CORALAdapter = None
    machine = header("CORAL's fit against the thin SVD of the domains and against skada")
    rows = []
    with threadpool_limits(1):
        for n_s, n_t, d in track(SHAPES, "shapes"):
            X, sd = _domains(n_s, n_t, d)
            Xs, Xt = X[sd > 0], X[sd < 0]

            def floor(Xs=Xs, Xt=Xt):
                for B in (Xs, Xt):
                    np.linalg.svd(B - B.mean(axis=0), full_matrices=False)

            t_floor = _best(floor, args.repeat)
            for shrinkage in (0.3, 1.0, "ledoit_wolf", "auto"):
                if shrinkage == "auto" and args.no_auto_at and d >= args.no_auto_at:
                    continue
                row = {"n_source": n_s, "n_target": n_t, "d": d, "shrinkage": shrinkage,
                       "floor_s": round(t_floor, 4)}
                est = CORAL(shrinkage=shrinkage)
                t = _best(lambda est=est, X=X, sd=sd: est.fit(X, None, sd), args.repeat)
                row.update({"route": "dense" if est.powers_ is None else "factored",
                            "ours_s": round(t, 4), "ours_vs_floor": round(t / t_floor, 1)})
                if CORALAdapter is not None and shrinkage != "ledoit_wolf":   # not skada's
                    ad = CORALAdapter(reg=shrinkage)
                    ts = _best(lambda ad=ad, X=X, sd=sd: ad.fit(X, sample_domain=sd),
                               args.repeat)
                    row.update({"skada_s": round(ts, 4), "skada_vs_ours": round(ts / t, 1)})
                rows.append(row)
                print("  " + ", ".join(f"{k}={v}" for k, v in row.items()), flush=True)
    body = ("Fit times on one BLAS thread (best of the runs), in seconds; `floor_s`: thin SVD "
            "of both centred domain blocks; `route`: CORAL's factored route (float shrinkage, "
            "fewer rows than features in each domain) or the dense one (two d x d "
            "eigendecompositions).\n\n" + markdown_table(rows, floatfmt=".4g"))
    write_results("coral_speed", "CORAL's fit against the thin SVD of the domains and skada",
                  body, {"rows": rows}, machine)


if __name__ == "__main__":
    main()
