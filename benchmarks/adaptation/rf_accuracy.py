"""RF-TCA (1,000 random frequencies) against exact TCA: accuracy on Office+Caltech, speed and
accuracy on MNIST→USPS.

Office+Caltech SURF, 12 tasks, 1NN on the adapted source rows, accuracy on the target rows,
Gaussian kernel with the median bandwidth for every method (random Fourier features
approximate the Gaussian kernel only, so the comparison is RBF vs RBF).

* ``--part office-cv`` (the headline): exact TCA, RF-TCA ``penalty='coefficients'`` (exact
  TCA's problem with the random-feature kernel, the variant that tends to exact TCA) and RF-TCA
  ``penalty='features'`` (the RF-TCA paper's Algorithm 1), each with its OWN 5-fold
  cross-validation on the SOURCE labels (:func:`~shiftlearn.model_selection.fit_source_cv`)
  over k in {10, 20, 30, 50} x mu in {0.1, 1, 10, 100}; ``--seeds`` draws of the frequencies,
  ``--penalties`` restricts the RF variants. Issue target: RF-TCA within 1 point of exact TCA
  on average.
* ``--part office-convergence``: the coefficient variant at the exact TCA's CV choice for
  N = 250 ... 2,000, and the random-feature error of the centred kernel against its spread.
* ``--part office`` / ``office-coef`` (earlier protocol): ``mu = 1`` fixed, ``k`` chosen for
  the exact TCA by source CV and reused for RF-TCA.

MNIST→USPS (3,800 rows, 256 pixels, unit-norm rows), ``--part mnist``: fit time (wall and CPU,
one BLAS thread) and 1NN accuracy of RF-TCA / RF-SCA for N = 256, 500, 1000 frequencies,
float64 and float32, beside the exact TCA in the same run (30 components, ``mu = 1``; SCA
``beta = 0.5``). The stage-by-stage timing is ``benchmarks/adaptation/rf_speed.py``.

Results accumulate in ``results/_rf_accuracy_parts.json`` (a part resumes where it stopped);
``--part report`` rewrites ``results/rf_accuracy.md`` / ``.json`` from it.

    python benchmarks/adaptation/rf_accuracy.py --part office-cv --seeds 0
    python benchmarks/adaptation/rf_accuracy.py --part office-cv --seeds 1 --penalties coefficients
    python benchmarks/adaptation/rf_accuracy.py --part office-convergence
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
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

from shiftlearn.adaptation import (  # noqa: E402
    RFSCA,
    RFTCA,
    TCA,
)
from shiftlearn.compose import DomainAdaptationClassifier  # noqa: E402
from shiftlearn.datasets import load_mnist_usps, load_office_caltech  # noqa: E402
from shiftlearn.kernels import center_kernel, rbf_kernel, rff_map  # noqa: E402
from shiftlearn.model_selection import fit_source_cv  # noqa: E402

KS = [10, 20, 30, 50]
PART_FILE = results_dir(__file__) / "_rf_accuracy_parts.json"
PARTS = PartsFile(PART_FILE)


def cv_then_score(adapter, X, y, sd, yt):
    test = sd < 0
    search = fit_source_cv(adapter, {"n_components": KS}, X, y, sd)
    return (float(search.best_estimator_.score(X[test], yt[test])),
            int(search.best_params_["adapter__n_components"]))


def part_office():
    ds = load_office_caltech()
    done = PARTS.load()
    for s, t in track(ds.tasks, "Office tasks"):
        key = f"office:{s}->{t}"
        if key in done:
            continue
        X, y, sd, yt = ds.pack(s, t, return_masked_labels=True)
        test = sd < 0
        src = (sd > 0) & (y >= 0)
        raw = float(KNeighborsClassifier(1).fit(X[src], y[src]).score(X[test], yt[test]))
        t0 = time.process_time()
        tca_acc, tca_k = cv_then_score(TCA(mu=1.0), X, y, sd, yt)
        t_tca = time.process_time() - t0
        t0 = time.process_time()
        matched = DomainAdaptationClassifier(
            RFTCA(n_components=tca_k, mu=1.0, n_features=1000, random_state=0),
            KNeighborsClassifier(1)).fit(X, y, sd)
        rf_matched = float(matched.score(X[test], yt[test]))
        t_rf = time.process_time() - t0
        r = {"raw": raw, "TCA": tca_acc, "TCA k": tca_k, "RF-TCA matched k": rf_matched,
             "cpu TCA search": t_tca, "cpu RF fit": t_rf}
        print(key, json.dumps(r), flush=True)
        PARTS.save(key, r)


def part_office_coef():
    """RF-TCA with Pan's penalty on the kernel coefficients (the exact TCA's problem with the
    random-feature kernel), same k as the exact TCA's source-CV choice."""
    ds = load_office_caltech()
    done = PARTS.load()
    for s, t in track(ds.tasks, "Office tasks (coefficients)"):
        key = f"office:{s}->{t}"
        if key not in done or "RF-TCA coef" in done[key]:
            continue
        X, y, sd, yt = ds.pack(s, t, return_masked_labels=True)
        test = sd < 0
        est = DomainAdaptationClassifier(
            RFTCA(n_components=done[key]["TCA k"], mu=1.0, n_features=1000,
                  penalty="coefficients", random_state=0),
            KNeighborsClassifier(1)).fit(X, y, sd)
        r = dict(done[key], **{"RF-TCA coef": float(est.score(X[test], yt[test]))})
        print(key, json.dumps(r), flush=True)
        PARTS.save(key, r)


MUS = [0.1, 1.0, 10.0, 100.0]
CV_GRID = {"adapter__n_components": KS, "adapter__mu": MUS}


_SHORT_NAMES = {"adapter__n_components": "k", "adapter__mu": "mu", "adapter__beta": "beta"}


def cv_search(adapter, X, y, sd, yt, grid=None):
    """5-fold source-label CV over ``grid`` (default CV_GRID; k as a path), refit on all rows:
    target accuracy, the chosen parameters by short name (k, mu, beta) and the CV score."""
    test = sd < 0
    grid = CV_GRID if grid is None else grid
    search = fit_source_cv(adapter, {k.removeprefix("adapter__"): v for k, v in grid.items()},
                           X, y, sd)
    best = {_SHORT_NAMES[name]: (int(v) if name == "adapter__n_components" else float(v))
            for name, v in search.best_params_.items()}
    return {"acc": float(search.best_estimator_.score(X[test], yt[test])), **best,
            "cv": float(search.best_score_)}


def part_office_cv(seeds, penalties=("coefficients", "features")):
    """Every method with its OWN 5-fold source CV over the same grid (k x mu), RBF kernel with
    the median bandwidth: exact TCA, RF-TCA ``penalty='coefficients'`` (exact TCA's problem
    with the random-feature kernel: the variant that tends to exact TCA as N grows) and RF-TCA
    ``penalty='features'`` (the RF-TCA paper's Algorithm 1, R-TCA), N = 1,000 frequencies,
    one entry per seed of the frequencies."""
    ds = load_office_caltech()
    for seed in track(seeds, "seeds"):
        for s, t in track(ds.tasks, f"seed {seed}: Office tasks"):
            X, y, sd, yt = ds.pack(s, t, return_masked_labels=True)
            test = sd < 0
            done = PARTS.load()
            key = f"cv:{s}->{t}"
            if key not in done:
                src = (sd > 0) & (y >= 0)
                raw = float(KNeighborsClassifier(1).fit(X[src], y[src]).score(X[test],
                                                                              yt[test]))
                t0 = time.process_time()
                r = {"raw": raw, "TCA": cv_search(TCA(), X, y, sd, yt),
                     "cpu TCA search": time.process_time() - t0}
                print(key, json.dumps(r), flush=True)
                PARTS.save(key, r)
                done = PARTS.load()
            tca = done[key]["TCA"]
            rkey = f"{key}:seed{seed}"
            if rkey in done:
                continue
            r = {}
            for pen in penalties:
                t0 = time.process_time()
                r[pen] = cv_search(RFTCA(n_features=1000, penalty=pen, random_state=seed),
                                   X, y, sd, yt)
                r[pen]["cpu search"] = time.process_time() - t0
            matched = DomainAdaptationClassifier(
                RFTCA(n_components=tca["k"], mu=tca["mu"], n_features=1000,
                      penalty="coefficients", random_state=seed),
                KNeighborsClassifier(1)).fit(X, y, sd)
            r["coefficients at TCA's (k, mu)"] = float(matched.score(X[test], yt[test]))
            print(rkey, json.dumps(r), flush=True)
            PARTS.save(rkey, r)


def timed_cv_search(adapter, X, y, sd, yt, grid=None):
    """:func:`cv_search` plus its CPU seconds (``"cpu search"``)."""
    t0 = time.process_time()
    r = cv_search(adapter, X, y, sd, yt, grid)
    r["cpu search"] = time.process_time() - t0
    return r


def centred_kernel_reference(X, y, sd):
    """The exact centred Gaussian kernel at exact TCA's median bandwidth (``sigma``, ``Kc``):
    formed only as the reference of the random-feature error diagnostics."""
    sigma = TCA().fit(X, y, sd).sigma_
    return sigma, center_kernel(rbf_kernel(X, sigma=sigma))


def rms(A) -> float:
    return float(np.sqrt(np.mean(A ** 2)))


def centred_rf_error(X, omega, Kc) -> float:
    """rms error of the centred random-feature kernel ``Z_c Z_c^T`` against ``Kc``."""
    Z = rff_map(X, omega)
    Z -= Z.mean(axis=0)
    return rms(Z @ Z.T - Kc)


def part_office_convergence(ns_features=(250, 500, 1000, 2000)):
    """Why N = 1,000 is not enough here: the coefficient variant at the exact TCA's source-CV
    choice (k, mu) for growing N (seed 0), and the random-feature error of the centred kernel
    against the spread of the centred kernel itself. The exact n x n kernel is formed here only
    as the reference of this diagnostic (never in the random-feature fit)."""
    ds = load_office_caltech()
    for s, t in track(ds.tasks, "Office tasks (convergence)"):
        key = f"conv:{s}->{t}"
        done = PARTS.load()
        if key in done or f"cv:{s}->{t}" not in done:
            continue
        tca = done[f"cv:{s}->{t}"]["TCA"]
        X, y, sd, yt = ds.pack(s, t, return_masked_labels=True)
        test = sd < 0
        _, Kc = centred_kernel_reference(X, y, sd)
        r = {"kernel_centred_rms": rms(Kc)}
        for N in ns_features:
            est = DomainAdaptationClassifier(
                RFTCA(n_components=tca["k"], mu=tca["mu"], n_features=N,
                      penalty="coefficients", random_state=0),
                KNeighborsClassifier(1)).fit(X, y, sd)
            r[f"acc N={N}"] = float(est.score(X[test], yt[test]))
            if N <= 2000:
                r[f"kernel_err_rms N={N}"] = centred_rf_error(X, est.adapter_.omega_, Kc)
        print(key, json.dumps(r), flush=True)
        PARTS.save(key, r)


def report_office_convergence(d):
    items = [(k.split(":", 1)[1], v) for k, v in d.items() if k.startswith("conv:")]
    if not items:
        return ""
    Ns = sorted({int(c.split("=")[1]) for _, v in items for c in v if c.startswith("acc N=")})
    rows = []
    for task, v in items:
        row = {"task": task, "TCA (exact)": 100 * d[f"cv:{task}"]["TCA"]["acc"],
               "centred kernel rms": v["kernel_centred_rms"]}
        for N in Ns:
            row[f"coef N={N}"] = 100 * v[f"acc N={N}"]
        for N in Ns:
            row[f"RF error rms N={N}"] = v.get(f"kernel_err_rms N={N}", np.nan)
        rows.append(row)
    cols = [c for c in rows[0] if c != "task"]
    rows.append({"task": f"**mean ({len(items)} tasks)**",
                 **{c: float(np.mean([r[c] for r in rows])) for c in cols}})
    return (
        "## Convergence in N: RF-TCA (coefficients) at the exact TCA's source-CV (k, mu)\n\n"
        "1NN target accuracy of the coefficient variant (the exact TCA's problem with the "
        "random-feature kernel) at the exact TCA's own CV choice, frequencies seed 0, for "
        "growing N; and the root-mean-square entry of the centred exact kernel `HKH` beside "
        "the rms error of its random-feature estimate `Z_c Z_c^T` (the exact kernel is "
        "formed only for this diagnostic).\n\n"
        + markdown_table(rows, ["task", *cols], floatfmt=".3f") + "\n")


def report_office_cv(d):
    tasks = [k.split(":", 1)[1] for k in d if k.startswith("cv:") and ":seed" not in k]
    tasks = [t for t in tasks if f"cv:{t}:seed0" in d]
    if not tasks:
        return ""
    both = ("coefficients", "features")
    partial = [t for t in tasks if not set(both) <= d[f"cv:{t}:seed0"].keys()]
    if partial:
        have = [k for k in both if k in d[f"cv:{partial[0]}:seed0"]]
        raise SystemExit(f"rf_accuracy.py: the office-cv table compares both penalties on "
                         f"frequency seed 0, and seed 0 of {', '.join(partial)} has only "
                         f"{have}; run `--part office-cv --seeds 0` with both penalties (the "
                         "default).")
    seeds = sorted({int(k.rsplit("seed", 1)[1]) for k in d if ":seed" in k})
    rows = []
    for task in tasks:
        e, u = d[f"cv:{task}"], d[f"cv:{task}:seed0"]
        others = [d[f"cv:{task}:seed{r}"]["coefficients"]["acc"] for r in seeds
                  if r != 0 and f"cv:{task}:seed{r}" in d]
        rows.append({
            "task": task, "raw": 100 * e["raw"], "TCA (exact)": 100 * e["TCA"]["acc"],
            "TCA k, mu": f"{e['TCA']['k']}, {e['TCA']['mu']:g}",
            "TCA src-CV": 100 * e["TCA"]["cv"],
            "RF-TCA coef": 100 * u["coefficients"]["acc"],
            "coef k, mu": f"{u['coefficients']['k']}, {u['coefficients']['mu']:g}",
            "coef src-CV": 100 * u["coefficients"]["cv"],
            "diff coef": 100 * (u["coefficients"]["acc"] - e["TCA"]["acc"]),
            "coef at TCA's k, mu": 100 * u["coefficients at TCA's (k, mu)"],
            "RF-TCA features (paper)": 100 * u["features"]["acc"],
            "features src-CV": 100 * u["features"]["cv"],
            "diff features": 100 * (u["features"]["acc"] - e["TCA"]["acc"]),
            "coef, other seeds": ", ".join(f"{100 * a:.1f}" for a in others)})
    cols = ["raw", "TCA (exact)", "TCA src-CV", "RF-TCA coef", "coef src-CV", "diff coef",
            "coef at TCA's k, mu", "RF-TCA features (paper)", "features src-CV",
            "diff features"]
    mean = {c: float(np.mean([r[c] for r in rows])) for c in cols}
    rows.append({"task": f"**mean ({len(rows)} tasks)**", **mean, "TCA k, mu": "",
                 "coef k, mu": "", "coef, other seeds": ""})
    seed_diffs = {}
    for r in seeds:
        if all(f"cv:{t}:seed{r}" in d for t in tasks):
            seed_diffs[r] = 100 * np.mean([d[f"cv:{t}:seed{r}"]["coefficients"]["acc"]
                                           - d[f"cv:{t}"]["TCA"]["acc"] for t in tasks])
    seed_lines = [f"seed {r}: {v:+.2f} ({'met' if abs(v) <= 1 else 'NOT met'})"
                  for r, v in seed_diffs.items() if r != 0]
    if len(seed_diffs) > 1:
        seed_lines.append(f"mean over the {len(seed_diffs)} seeds: "
                          f"{np.mean(list(seed_diffs.values())):+.2f}")
    verdict = "met" if abs(mean["diff coef"]) <= 1.0 else "NOT met"
    return (
        "## Office+Caltech SURF: each method with its own source CV (k x mu), 1NN\n\n"
        "Gaussian kernel, median bandwidth for every method; grid k in {10, 20, 30, 50} x mu "
        "in {0.1, 1, 10, 100}; 5-fold CV on the labeled SOURCE rows only "
        "(`fit_source_cv`: GridSearchCV with SourceKFold, refit on all rows; the parts run "
        "before 2026-11-24 used SourceCVSearch, same folds, order and ties); target labels "
        "never used for a choice. "
        "RF-TCA with N = 1,000 frequencies (2,000 feature columns), frequency seed 0 in the "
        "table (`coef, other seeds`: the coefficient variant with other seeds, where run). "
        "`coef`: `penalty='coefficients'` (exact TCA's problem with the random-feature kernel, "
        "tends to exact TCA as N grows); `features`: the RF-TCA paper's Algorithm 1 (R-TCA, a "
        "differently regularised problem). `src-CV`: the winning mean source-CV accuracy. "
        "`coef at TCA's k, mu`: the coefficient variant at the exact TCA's CV choice "
        "(isolates the random-feature approximation from the CV choice).\n\n"
        + markdown_table(rows, ["task", "raw", "TCA (exact)", "TCA k, mu", "TCA src-CV",
                                "RF-TCA coef", "coef k, mu", "coef src-CV", "diff coef",
                                "coef at TCA's k, mu", "RF-TCA features (paper)",
                                "features src-CV", "diff features", "coef, other seeds"])
        + f"\n\nMean RF-TCA (coefficients, own source CV, seed 0) − exact TCA: "
        f"{mean['diff coef']:+.2f} points: within 1 point **{verdict}**"
        + (f" (other seeds on all {len(tasks)} tasks: " + ", ".join(seed_lines) + ")"
           if seed_lines else "")
        + f". The paper's RF-TCA (features penalty, own source CV) − exact TCA: "
        f"{mean['diff features']:+.2f} points.\n")


def part_mnist():
    X, y, sd, yt = load_mnist_usps().pack("mnist", "usps", return_masked_labels=True)
    test = sd < 0
    src = sd > 0
    rows = []

    def run(name, est, Xin):
        w0, c0 = time.perf_counter(), time.process_time()
        est.fit(Xin, y, sample_domain=sd)
        wall, cpu = time.perf_counter() - w0, time.process_time() - c0
        Z = est.transform(Xin)
        acc = float(KNeighborsClassifier(1).fit(Z[src], y[src]).score(Z[test], yt[test]))
        rows.append({"method": name, "fit_wall_s": wall, "fit_cpu_s": cpu, "1NN_%": 100 * acc})
        print(rows[-1], flush=True)

    with threadpool_limits(1):
        run("TCA exact (median rbf)", TCA(n_components=30, mu=1.0), X)
        for N in track((256, 500, 1000), "MNIST: N"):
            for dt in ("float64", "float32"):
                Xin = X.astype(dt)
                run(f"RF-TCA N={N} {dt}", RFTCA(n_components=30, n_features=N,
                                                random_state=0), Xin)
                run(f"RF-SCA N={N} {dt}", RFSCA(n_components=30, beta=0.5, n_features=N,
                                                random_state=0), Xin)
    PARTS.save("mnist", {"rows": rows, "load": os.getloadavg()[0]})


def report(machine):
    d = PARTS.load()
    body = []
    office = [(k.split(":", 1)[1], v) for k, v in d.items() if k.startswith("office:")]
    if office:
        rows = []
        for task, v in office:
            rows.append({"task": task, "raw": 100 * v["raw"], "TCA (exact)": 100 * v["TCA"],
                         "k": v["TCA k"], "RF-TCA N=1000 (same k)": 100 * v["RF-TCA matched k"],
                         "diff": 100 * (v["RF-TCA matched k"] - v["TCA"]),
                         "RF-TCA coefficients (same k)": 100 * v.get("RF-TCA coef", np.nan),
                         "diff coef": 100 * (v.get("RF-TCA coef", np.nan) - v["TCA"]),
                         "CPU s: TCA search": v["cpu TCA search"],
                         "CPU s: one RF-TCA fit": v.get("cpu RF fit", float("nan"))})
        mean = {c: float(np.mean([r[c] for r in rows])) for c in
                ("raw", "TCA (exact)", "RF-TCA N=1000 (same k)", "diff",
                 "RF-TCA coefficients (same k)", "diff coef")}
        rows.append({"task": f"**mean ({len(office)} tasks)**", **mean, "k": ""})
        verdict = ("met" if abs(mean["diff"]) <= 1.0 else "NOT met")
        verdict_c = ("met" if abs(mean["diff coef"]) <= 1.0 else "NOT met")
        body.append(
            "## Earlier protocol: mu = 1 fixed, k from the exact TCA's source CV, reused\n\n"
            + markdown_table(rows, ["task", "raw", "TCA (exact)", "k", "RF-TCA N=1000 (same k)",
                                    "diff", "RF-TCA coefficients (same k)", "diff coef",
                                    "CPU s: TCA search", "CPU s: one RF-TCA fit"])
            + f"\n\nMean RF-TCA (paper's Algorithm 1, `penalty='features'`) − TCA: "
            f"{mean['diff']:+.2f} points (within 1 point: **{verdict}**; it solves R-TCA, a "
            "differently regularised problem, see docs/random_features.md). Mean RF-TCA with "
            "`penalty='coefficients'` (exact TCA's problem with the random-feature kernel) − "
            f"TCA: {mean['diff coef']:+.2f} points (within 1 point: **{verdict_c}**). "
            "Both Gaussian kernel, median bandwidth, "
            "mu = 1; k chosen for the exact TCA by 5-fold source CV over {10, 20, 30, 50} and "
            "reused for RF-TCA (the issue's 'same hyper-parameters as the exact TCA's source-CV "
            "choice'; RF-TCA's own source CV was dropped for time on the loaded machine). "
            "At these sizes (n = 450-2,100 < 2N = 2,000) RF-TCA is not faster than exact TCA, "
            "as the RF-TCA paper also observes for small tasks.\n")
    conv_section = report_office_convergence(d)
    if conv_section:
        body.insert(0, conv_section)
    cv_section = report_office_cv(d)
    if cv_section:
        body.insert(0, cv_section)
    if "mnist" in d:
        m = d["mnist"]
        body.append(
            "## MNIST→USPS (n = 3,800): fit time and 1NN accuracy, one BLAS thread\n\n"
            + markdown_table(m["rows"], ["method", "fit_wall_s", "fit_cpu_s", "1NN_%"],
                             floatfmt=".3f")
            + f"\n\nLoad average during the run: {m['load']:.1f} on 2 cores (wall times are "
            "inflated by the other jobs; CPU time is the better measure). Target: fit < 0.5 s. "
            "Raw 1NN: 65.94%.\n")
    write_results("rf_accuracy", "RF-TCA / RF-SCA vs exact TCA: accuracy and speed",
                  "\n".join(body), d, machine)


@progress()
def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--part", default="all",
                    choices=["office", "office-coef", "office-cv", "office-convergence", "mnist",
                             "all", "report"])
    ap.add_argument("--seeds", type=int, nargs="+", default=[0])
    ap.add_argument("--penalties", nargs="+", default=["coefficients", "features"],
                    choices=["coefficients", "features"])
    args = ap.parse_args(argv)
    machine = header("RF-TCA / RF-SCA vs exact TCA: accuracy and speed")
    if args.part in ("mnist", "all"):
        part_mnist()
    if args.part in ("office", "all"):
        with threadpool_limits(1):
            part_office()
    if args.part in ("office-cv", "all"):
        with threadpool_limits(1):
            part_office_cv(args.seeds, args.penalties)
    if args.part in ("office-convergence", "all"):
        with threadpool_limits(1):
            part_office_convergence()
    if args.part in ("office-coef", "all"):
        with threadpool_limits(1):
            part_office_coef()
    report(machine)


if __name__ == "__main__":
    main()
