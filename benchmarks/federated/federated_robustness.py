"""FedRF-TCA over an unreliable network (simulator), Office+Caltech SURF, 3 sources -> 1.

A grid like the paper's Table III / Fig. 4, but with real message faults: message loss
0/10/30/50 % x classifier averaging every T_C in {1, 10, 50} rounds, client dropout 10/30 %
(T_C = 1 and 50), and a mixed setting (loss + dropout + stragglers + duplicates + reordering).
Every cell is run with several seeds; seed ``s`` sets both the protocol seed (shared Omega,
W initialisation, the server's S_t sampling) and the network's fault seed, so the lossless
column has a spread too and "loss 30 % - loss 0 %" is a paired difference per seed.
Hyper-parameters are those of ``federated_office.py`` (fixed without target labels); the
target labels are used only to report accuracy.

    OMP_NUM_THREADS=1 python benchmarks/federated/federated_robustness.py [--seeds 5] [--tasks ...]

Internals on purpose: the federated simulation harness (``_data``: the Office+Caltech client
partitions and the bandwidth agreement), which ``shiftlearn.federated`` does not export (the CLI
runs on the same functions). ``tests/house/test_benchmarks.py`` imports this script, so a
rename fails the test suite.
"""

from __future__ import annotations

import argparse
import logging
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: _common
from _common import header, markdown_table, progress, track, write_results  # noqa: E402
from federated_office import BATCH, LAM, LR, ROUNDS, STEPS, M, N  # noqa: E402

from shiftlearn.federated import (  # noqa: E402
    FedRFTCAConfig,
    NetworkConditions,
    predict,
    run_iterative,
)
from shiftlearn.federated._data import agree_bandwidth, load_all, local_bandwidth  # noqa: E402
from shiftlearn.kernels import rff_map  # noqa: E402

LOSSES = (0.0, 0.1, 0.3, 0.5)
T_CS = (1, 10, 50)
MIXED = {"loss": 0.1, "dropout": 0.1, "straggler": 0.1, "duplicate": 0.1, "reorder": True}


def settings() -> list[tuple[str, int, dict]]:
    """(name, T_C, NetworkConditions kwargs without the seed)."""
    out = [(f"loss {int(100 * x)}%", tc, {"loss": x}) for tc in T_CS for x in LOSSES]
    out += [(f"dropout {int(100 * d)}%", tc, {"dropout": d}) for tc in (1, 50)
            for d in (0.1, 0.3)]
    out += [("mixed", 1, MIXED)]
    return out


def run_task(target: str, seeds: list[int], lam: float, rounds: int) -> list[dict]:
    parts = load_all({"dataset": "office_caltech", "target": target})
    sigma = agree_bandwidth([local_bandwidth(p.X) for p in parts])
    src, tgt = parts[:-1], parts[-1]
    task = ",".join(p.name[0].upper() for p in src) + "->" + target[0].upper()
    out = []
    for seed in seeds:
        base = FedRFTCAConfig(n_features=N, n_components=M, sigma=sigma, n_rounds=rounds,
                              local_steps=STEPS, lr=LR, lam=lam, batch_size=BATCH, seed=seed)
        Zt = rff_map(tgt.X, base.omega(tgt.X.shape[1]))
        for name, tc, kw in settings():
            cfg = FedRFTCAConfig(**{**base.__dict__, "classifier_every": tc})
            t0 = time.perf_counter()
            r = run_iterative([(p.X, p.y) for p in src], tgt.X, cfg,
                              conditions=NetworkConditions(**kw, seed=seed))
            out.append({"task": task, "seed": seed, "setting": name, "T_C": tc, **kw,
                        "accuracy": float(np.mean(predict(Zt, r.W, r.C) == tgt.y_true)),
                        "classifier_averages": sum(bool(h["C_from"]) for h in r.history),
                        "rejected": int(sum(r.rejections.values())),
                        "seconds": time.perf_counter() - t0})
            print(out[-1], flush=True)
    return out


def _cell(rows, seeds, name, tc):
    """Task-mean accuracy per seed -> (mean, sd over seeds) in %."""
    per_seed = [100 * np.mean([r["accuracy"] for r in rows if r["seed"] == s
                               and r["setting"] == name and r["T_C"] == tc]) for s in seeds]
    return float(np.mean(per_seed)), float(np.std(per_seed, ddof=1) if len(seeds) > 1 else 0)


def summarize(rows: list[dict], seeds: list[int]) -> tuple[str, dict]:
    fmt = "{:.1f} ± {:.1f}".format
    grid, summary = [], {}
    for tc in T_CS:
        d = {"T_C": tc}
        for x in LOSSES:
            m, sd = _cell(rows, seeds, f"loss {int(100 * x)}%", tc)
            d[f"loss {int(100 * x)}%"] = fmt(m, sd)
            summary[f"T_C={tc}, loss={x}"] = (m, sd)
        for dname in ("dropout 10%", "dropout 30%"):
            if tc in (1, 50):
                m, sd = _cell(rows, seeds, dname, tc)
                d[dname] = fmt(m, sd)
                summary[f"T_C={tc}, {dname}"] = (m, sd)
            else:
                d[dname] = "-"
        grid.append(d)
    m, sd = _cell(rows, seeds, "mixed", 1)
    summary["T_C=1, mixed"] = (m, sd)
    # paired differences (same seed, same task mix): loss x% - loss 0%
    diffs = []
    for tc in T_CS:
        d = {"T_C": tc}
        for x in LOSSES[1:]:
            per = [100 * (np.mean([r["accuracy"] for r in rows if r["seed"] == s
                                   and r["setting"] == f"loss {int(100 * x)}%"
                                   and r["T_C"] == tc])
                          - np.mean([r["accuracy"] for r in rows if r["seed"] == s
                                     and r["setting"] == "loss 0%" and r["T_C"] == tc]))
                   for s in seeds]
            sdv = float(np.std(per, ddof=1)) if len(per) > 1 else 0.0
            d[f"loss {int(100 * x)}% - loss 0%"] = fmt(float(np.mean(per)), sdv)
            if x == 0.3:
                d["30% per seed"] = " / ".join(f"{v:+.1f}" for v in per)
            summary[f"diff T_C={tc}, loss={x}"] = (float(np.mean(per)), sdv)
        diffs.append(d)
    tasks = sorted({r["task"] for r in rows})
    per_task = []
    for t in tasks:
        d = {"task": t}
        for name, tc in (("loss 0%", 1), ("loss 30%", 1), ("loss 0%", 50), ("loss 30%", 50),
                         ("dropout 30%", 1), ("mixed", 1)):
            acc = [100 * r["accuracy"] for r in rows if r["task"] == t and r["setting"] == name
                   and r["T_C"] == tc]
            d[f"{name}, T_C={tc}"] = fmt(float(np.mean(acc)),
                                         float(np.std(acc, ddof=1)) if len(acc) > 1 else 0.0)
        per_task.append(d)
    never = [r for r in rows if r["classifier_averages"] == 0]
    mixed_rej = int(sum(r["rejected"] for r in rows if r["setting"] == "mixed"))
    body = ("## Accuracy (%), mean ± sd over seeds of the mean over tasks\n\n"
            + markdown_table(grid)
            + f"\n\nMixed faults ({', '.join(f'{k} {v}' for k, v in MIXED.items())}), T_C = 1: "
              f"{fmt(m, sd)} ({mixed_rej} replies rejected by the guard in total).\n\n"
              "## Paired difference to the lossless run (points, mean ± sd over seeds)\n\n"
            + markdown_table(diffs)
            + "\n\n## Per task (mean ± sd over seeds)\n\n" + markdown_table(per_task)
            + f"\n\nRuns in which no classifier average ever happened: {len(never)} of "
              f"{len(rows)}.")
    return body, summary


@progress()
def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--tasks", nargs="+", default=["amazon", "caltech", "dslr", "webcam"])
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--lam", type=float, default=LAM)
    ap.add_argument("--rounds", type=int, default=ROUNDS)
    ap.add_argument("--name", default="federated_robustness")
    args = ap.parse_args(argv)
    logging.getLogger("shiftlearn.federated").setLevel(logging.ERROR)
    machine = header("FedRF-TCA robustness (simulator), Office+Caltech SURF")
    seeds = list(range(args.seeds))
    t0 = time.perf_counter()
    rows = []
    for t in track(args.tasks, "targets"):
        rows += run_task(t, seeds, args.lam, args.rounds)
    body, summary = summarize(rows, seeds)
    intro = (f"Settings: N = {N} (2N = {2 * N}), m = {M}, lambda = {args.lam:g}, {args.rounds} "
             f"rounds x {STEPS} local Adam steps (lr {LR}, batch {BATCH}), "
             "|S_t| ~ Unif{0..K}; seeds "
             f"{seeds} (protocol seed = network seed); tasks: {', '.join(args.tasks)} as "
             "target (the other three are the sources). A classifier average that is due "
             "stays due until it happens (protocol v2). Total wall time "
             f"{time.perf_counter() - t0:.0f} s (1 BLAS thread).\n\n")
    write_results(args.name, "FedRF-TCA robustness (simulator), Office+Caltech SURF",
                  intro + body, {"rows": rows, "summary": summary, "seeds": seeds,
                                 "lam": args.lam, "rounds": args.rounds}, machine)


if __name__ == "__main__":
    main()
