"""What ``shiftlearn adapt --method auto --tune`` costs as the rows and the columns grow.

For each shape (``n`` rows, half source and half target; ``d`` columns) the default search of
the command is run in a fresh process on one BLAS thread: ``AdaptationSelector(methods=
"sized")`` over ``DEFAULT_GRIDS`` with circular validation and 1NN (5 folds), and the seconds
each candidate family took (fits and scorings, summed over its settings and folds) are kept.
A shape whose search runs past ``--limit`` seconds (10 minutes by default) is recorded as such.
Beside it, in the same process, one fit of each family that skada also has (TCA, CORAL) is
timed for ours and skada's on the same rows with the same settings (skada's TCA with its own
``gamma = 1/d`` kernel, ours with the same bandwidth; CORAL with Ledoit-Wolf on standardised
columns, skada's ``reg="auto"``); skada is skipped where its fit would form an ``n x n`` kernel
of more than 5,000 rows or a ``d x d`` eigendecomposition beyond ``d = 4,096``.

The rows are synthetic: 5 classes in a 10-dimensional latent space, mapped to ``d`` columns and
shifted (scaled, offset) in the target domain.

    OMP_NUM_THREADS=1 python benchmarks/model_selection/auto_cost.py
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve()
sys.path.insert(0, str(HERE.parents[1]))  # benchmarks/: _common
from _common import (  # noqa: E402
    header,
    markdown_table,
    progress,
    results_dir,
    track,
    write_results,
)

ROWS = (500, 2000, 5000, 20000)
COLUMNS = (50, 512, 4096)


def shapes() -> list[tuple[int, int]]:
    out = [(n, 50) for n in ROWS] + [(500, d) for d in COLUMNS if d != 50]
    return out


def make_task(n: int, d: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    W = rng.normal(size=(10, d)) / np.sqrt(10)
    centres = rng.normal(size=(5, 10)) * 1.5
    y = rng.integers(0, 5, n)
    Z = centres[y] + rng.normal(size=(n, 10))
    X = Z @ W + 0.1 * rng.normal(size=(n, d))
    half = n // 2
    X[half:] = X[half:] * 1.3 + 0.5
    sd = np.r_[np.ones(half, int), -np.ones(n - half, int)]
    return X, np.where(sd > 0, y, -1), sd


def _best(fn, repeat: int = 1) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def one_point(n: int, d: int) -> dict:
    """The search and the single fits for one shape (run in a child process)."""
    import warnings

    from threadpoolctl import threadpool_limits

    from shiftlearn.adaptation import CORAL, TCA
    from shiftlearn.model_selection import (
        DEFAULT_GRIDS,
        AdaptationSelector,
        CircularValidation,
    )

    warnings.filterwarnings("ignore")
    X, y, sd = make_task(n, d)
    out: dict = {"n": n, "d": d}
    with threadpool_limits(limits=1):
        t0 = time.perf_counter()
        sel = AdaptationSelector(methods="sized", scoring=CircularValidation(),
                                 grids=DEFAULT_GRIDS, n_jobs=1).fit(X, y, sd)
        out["search_s"] = time.perf_counter() - t0
        out["choice"] = sel.choice_
        out["families"] = {t["method"]: t["fit_time"] + t["score_time"]
                           for t in sel.candidate_times_}
        single = {}
        if n <= 5000:
            single["TCA ours"] = _best(lambda: TCA(n_components=30, mu=1.0,
                                                   bandwidth="n_features").fit(X, y, sd))
        single["CORAL ours"] = _best(lambda: CORAL(shrinkage="auto").fit(X, y, sd))
        single["CORAL ours (ledoit_wolf)"] = _best(
            lambda: CORAL(shrinkage="ledoit_wolf").fit(X, y, sd))
        try:
            from skada import CORALAdapter, TransferComponentAnalysisAdapter
        except ImportError:  # pragma: no cover
            CORALAdapter = None
        if CORALAdapter is not None:
            if n <= 5000:
                single["TCA skada"] = _best(lambda: TransferComponentAnalysisAdapter(
                    kernel="rbf", n_components=30, mu=1.0).fit(X, y, sample_domain=sd))
            if d <= 4096:
                single["CORAL skada"] = _best(
                    lambda: CORALAdapter(reg="auto").fit(X, sample_domain=sd))
        out["single_fit_s"] = single
    return out


@progress()
def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--point", nargs=2, type=int, metavar=("N", "D"),
                    help="run one shape and print its JSON (used by the main run)")
    ap.add_argument("--limit", type=int, default=600, help="seconds per shape (default 600)")
    ap.add_argument("--figure", action="store_true",
                    help="only redraw the figure from the published results")
    args = ap.parse_args(argv)
    if args.point:
        print(json.dumps(one_point(*args.point)))
        return
    if args.figure:
        figure(json.loads((results_dir(__file__) / "auto_cost.json").read_text())
               ["results"]["rows"])
        return
    machine = header("What adapt --method auto --tune costs as n and d grow")
    rows = []
    for n, d in track(shapes(), "shapes"):
        t0 = time.perf_counter()
        try:
            done = subprocess.run([sys.executable, str(HERE), "--point", str(n), str(d)],
                                  capture_output=True, text=True, timeout=args.limit,
                                  check=True)
            r = json.loads(done.stdout.strip().splitlines()[-1])
        except subprocess.TimeoutExpired:
            r = {"n": n, "d": d, "search_s": None, "timeout": args.limit}
        r["wall_s"] = time.perf_counter() - t0
        r["load_average"] = round(os.getloadavg()[0], 1)     # other work on the machine
        rows.append(r)
        print(json.dumps(r), flush=True)
    table = []
    for r in rows:
        fam = r.get("families", {})
        single = r.get("single_fit_s", {})
        table.append({
            "n": r["n"], "d": r["d"],
            "search s": f"> {r['timeout']}" if r.get("search_s") is None
            else round(r["search_s"], 1),
            "choice": r.get("choice", "-"), "load": r.get("load_average", "-"),
            **{f"{m} s": round(v, 1) for m, v in fam.items()},
            **{f"{k} (1 fit) s": round(v, 3) for k, v in single.items()}})
    columns = sorted({k for t in table for k in t}, key=lambda k: (
        ["n", "d", "search s", "choice", "load"].index(k)
        if k in ("n", "d", "search s", "choice", "load") else 5 + ("1 fit" in k), k))
    for t in table:
        for c in columns:
            t.setdefault(c, "-")
    fig = figure(rows)
    body = "\n".join([
        "Search: `AdaptationSelector(methods=\"sized\")` over `DEFAULT_GRIDS`, circular "
        "validation, 1NN, 5 folds, one BLAS thread; per family: seconds of fits and scorings "
        "summed over its settings and folds. `(1 fit)`: one fit of ours and of skada's on "
        "the same rows (best of one run); `load`: the machine's 1-minute load average after the "
        "shape (2 cores: above 2, other work shared them, and the seconds are inflated).", "",
        markdown_table(table, columns), "", f"![cost]({fig.name})"])
    write_results("auto_cost", "What adapt --method auto --tune costs as n and d grow", body,
                  {"rows": rows}, machine)


def figure(rows: list[dict]) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    colours = {m: f"C{i}" for i, m in enumerate(
        ("none", "TCA", "JDA", "SCA", "uSCA", "RF-TCA", "RF-SCA", "CORAL"))}
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.6))
    for ax, (key, fixed, label) in zip(axes, (("n", ("d", 50), "rows n (d = 50)"),
                                              ("d", ("n", 500), "columns d (n = 500)")),
                                       strict=True):
        pts = sorted((r for r in rows if r[fixed[0]] == fixed[1] and r.get("families")),
                     key=lambda r: r[key])
        fams = sorted({m for r in pts for m in r["families"]})
        for m in fams:
            xs = [r[key] for r in pts if m in r["families"]]
            ys = [r["families"][m] for r in pts if m in r["families"]]
            ax.plot(xs, ys, marker="o", label=m, color=colours.get(m))
        xs = [r[key] for r in pts]
        ax.plot(xs, [r["search_s"] for r in pts], "k--", marker="s", label="whole search")
        for name, style in (("TCA skada", colours["TCA"]), ("CORAL skada", colours["CORAL"])):
            sx = [r[key] for r in pts if name in r.get("single_fit_s", {})]
            sy = [r["single_fit_s"][name] for r in pts if name in r.get("single_fit_s", {})]
            if sx:
                ax.plot(sx, sy, color=style, linestyle=":", marker="x",
                        label=f"{name}: one fit")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel(label)
        ax.set_ylabel("seconds (one BLAS thread)")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=7, loc="lower right")
    fig.suptitle("adapt --method auto --tune: seconds per candidate family")
    fig.tight_layout()
    path = results_dir(__file__) / "auto_cost.png"
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


if __name__ == "__main__":
    main()
