"""Orthogonal random features against i.i.d. Gaussian ones: kernel error and RF-TCA vs TCA.

``rff_weights(..., sampling="orthogonal")`` (Yu et al. 2016) draws the frequencies in exactly
orthogonal blocks with Gaussian-distributed lengths. Two parts, Office+Caltech SURF (12 tasks,
Gaussian kernel, median bandwidth as in ``rf_accuracy.py``):

* ``--part error``: rms error of the random-feature estimate ``Z_c Z_c^T`` of the centred
  kernel ``HKH`` for N = 250 ... 2,000 frequencies, both samplings, seeds 0-2 (the exact
  ``n x n`` kernel is formed only as the reference of this diagnostic).
* ``--part cv``: RF-TCA ``penalty='coefficients'`` (exact TCA's problem with the random-feature
  kernel), N = 1,000, ``sampling='orthogonal'``, with its own 5-fold SOURCE-label CV over
  k x mu (the protocol and grid of ``rf_accuracy.py --part office-cv``), frequency seeds
  0-4; compared with the exact TCA's and the Gaussian RF-TCA's results stored by that script
  (``results/_rf_accuracy_parts.json``, same machine, same grid). Target labels only score.

Parts are resumable (``results/_rf_orthogonal_parts.json``); ``--part report`` writes
``results/rf_orthogonal.md`` / ``.json``. ::

    OMP_NUM_THREADS=1 python benchmarks/adaptation/rf_orthogonal.py --part error
    OMP_NUM_THREADS=1 python benchmarks/adaptation/rf_orthogonal.py --part cv --seeds 0 1 2 3 4
    python benchmarks/adaptation/rf_orthogonal.py --part report
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np
from sklearn.neighbors import KNeighborsClassifier
from threadpoolctl import threadpool_limits

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: _common
from _common import (  # noqa: E402
    PartsFile,
    header,
    markdown_table,
    progress,
    results_dir,
    track,
    write_results,
)
from rf_accuracy import PARTS as GAUSS_PARTS  # noqa: E402
from rf_accuracy import (  # noqa: E402
    centred_kernel_reference,
    centred_rf_error,
    rms,
    timed_cv_search,
)

from shiftlearn.adaptation import RFTCA  # noqa: E402
from shiftlearn.compose import DomainAdaptationClassifier
from shiftlearn.datasets import load_office_caltech  # noqa: E402
from shiftlearn.kernels import rff_weights  # noqa: E402

PARTS = PartsFile(results_dir(__file__) / "_rf_orthogonal_parts.json")
NS = (250, 500, 1000, 2000)
SAMPLINGS = ("gaussian", "orthogonal")


def part_error(seeds=(0, 1, 2)):
    ds = load_office_caltech()
    for s, t in track(ds.tasks, "Office tasks (error)"):
        key = f"error:{s}->{t}"
        if key in PARTS.load():
            continue
        X, y, sd = ds.pack(s, t)
        sigma, Kc = centred_kernel_reference(X, y, sd)
        r = {"kernel_centred_rms": rms(Kc)}
        for sampling in SAMPLINGS:
            for N in NS:
                errs = [centred_rf_error(X, rff_weights(X.shape[1], N, sigma, seed,
                                                        sampling=sampling), Kc)
                        for seed in seeds]
                r[f"{sampling} N={N}"] = float(np.mean(errs))
        print(key, json.dumps(r), flush=True)
        PARTS.save(key, r)


def part_cv(seeds):
    ds = load_office_caltech()
    gauss = GAUSS_PARTS.load()
    for seed in track(seeds, "seeds"):
        for s, t in track(ds.tasks, f"seed {seed}: Office tasks"):
            key = f"cv:{s}->{t}:seed{seed}"
            if key in PARTS.load():
                continue
            if f"cv:{s}->{t}" not in gauss:
                raise SystemExit(f"run rf_accuracy.py --part office-cv first ({s}->{t})")
            X, y, sd, yt = ds.pack(s, t, return_masked_labels=True)
            tca = gauss[f"cv:{s}->{t}"]["TCA"]
            r = timed_cv_search(RFTCA(n_features=1000, penalty="coefficients",
                                      sampling="orthogonal", random_state=seed), X, y, sd, yt)
            matched = DomainAdaptationClassifier(
                RFTCA(n_components=tca["k"], mu=tca["mu"], n_features=1000,
                      penalty="coefficients", sampling="orthogonal", random_state=seed),
                KNeighborsClassifier(1)).fit(X, y, sd)
            r["at TCA's (k, mu)"] = float(matched.score(X[sd < 0], yt[sd < 0]))
            print(key, json.dumps(r), flush=True)
            PARTS.save(key, r)


def report(machine):
    d, g = PARTS.load(), GAUSS_PARTS.load()
    body, data = [], {"orthogonal": d}
    err = [(k.split(":", 1)[1], v) for k, v in d.items() if k.startswith("error:")]
    if err:
        rows = [{"task": task, "centred kernel rms": v["kernel_centred_rms"],
                 **{f"{smp[:5]} N={N}": v[f"{smp} N={N}"] for N in NS for smp in SAMPLINGS}}
                for task, v in err]
        cols = [c for c in rows[0] if c != "task"]
        mean = {c: float(np.mean([r[c] for r in rows])) for c in cols}
        rows.append({"task": f"**mean ({len(err)} tasks)**", **mean})
        ratio = ", ".join(f"N={N}: {mean[f'ortho N={N}'] / mean[f'gauss N={N}']:.2f}"
                          for N in NS)
        body.append(
            "## Kernel error: rms of `Z_c Z_c^T - HKH`, mean over seeds 0-2\n\n"
            + markdown_table(rows, ["task", *cols], floatfmt=".4f")
            + f"\n\nError ratio orthogonal / Gaussian (mean over tasks): {ratio}.\n")
    tasks = [k.split(":", 1)[1] for k in g if k.startswith("cv:") and ":seed" not in k]
    seeds = sorted({int(k.rsplit("seed", 1)[1]) for k in d if k.startswith("cv:")})
    rows = []
    for seed in seeds:
        if not all(f"cv:{t}:seed{seed}" in d for t in tasks):
            continue
        exact = np.mean([g[f"cv:{t}"]["TCA"]["acc"] for t in tasks])
        row = {"frequency seed": seed, "exact TCA": 100 * exact,
               "RF-TCA orthogonal": 100 * np.mean([d[f"cv:{t}:seed{seed}"]["acc"]
                                                    for t in tasks])}
        row["orthogonal - exact"] = row["RF-TCA orthogonal"] - row["exact TCA"]
        if all(f"cv:{t}:seed{seed}" in g for t in tasks):
            row["RF-TCA gaussian"] = 100 * np.mean(
                [g[f"cv:{t}:seed{seed}"]["coefficients"]["acc"] for t in tasks])
            row["gaussian - exact"] = row["RF-TCA gaussian"] - row["exact TCA"]
        row["orthogonal at TCA's (k, mu)"] = 100 * np.mean(
            [d[f"cv:{t}:seed{seed}"]["at TCA's (k, mu)"] for t in tasks])
        row["within 1 point (orthogonal)"] = "yes" if abs(row["orthogonal - exact"]) <= 1 \
            else "NO"
        rows.append(row)
    if rows:
        cols = ["frequency seed", "exact TCA", "RF-TCA gaussian", "gaussian - exact",
                "RF-TCA orthogonal", "orthogonal - exact", "orthogonal at TCA's (k, mu)",
                "within 1 point (orthogonal)"]
        summ = {c: float(np.mean([r[c] for r in rows if c in r])) for c in cols[1:-1]}
        rows.append({"frequency seed": f"**mean ({len(rows)} seeds)**", **summ,
                     "within 1 point (orthogonal)": ""})
        body.append(
            "## RF-TCA (coefficients, N = 1,000) vs exact TCA, each with its own source CV\n\n"
            "Mean 1NN target accuracy (%) over the 12 tasks per frequency seed; grid k in "
            "{10, 20, 30, 50} x mu in {0.1, 1, 10, 100}, 5-fold CV on the labeled source rows, "
            "Gaussian kernel, median bandwidth. The exact TCA and the Gaussian RF-TCA columns "
            "come from `rf_accuracy.py --part office-cv` (same grid and protocol).\n\n"
            + markdown_table(rows, cols) + "\n")
    write_results("rf_orthogonal", "Orthogonal vs Gaussian random features (RF-TCA)",
                  "\n".join(body), data, machine)


@progress()
def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--part", default="report", choices=["error", "cv", "report"])
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3, 4])
    args = ap.parse_args(argv)
    machine = header("Orthogonal vs Gaussian random features (RF-TCA)")
    with threadpool_limits(1):
        if args.part == "error":
            part_error()
        elif args.part == "cv":
            part_cv(args.seeds)
    report(machine)


if __name__ == "__main__":
    main()
