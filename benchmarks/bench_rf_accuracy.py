"""RF-TCA (1,000 random frequencies) against exact TCA: accuracy on Office+Caltech, speed and
accuracy on MNIST→USPS.

Office+Caltech SURF, 12 tasks, 1NN on the adapted source rows, accuracy on the target rows.
Both methods use the Gaussian kernel with the median bandwidth and ``mu = 1``; ``n_components``
in {10, 20, 30, 50} is chosen for the exact TCA by 5-fold cross-validation on the SOURCE labels
only (:class:`~shiftlearn.model_selection.SourceCVSearch`, one fit per fold thanks to the nested
components), and RF-TCA (N = 1,000, seed 0) is fitted with the same ``k``. The issue's target:
RF-TCA within 1 point of exact TCA on average. (The exact engineer's headline TCA also
searches a linear kernel; random Fourier features approximate the Gaussian kernel only, so the
comparison here is RBF vs RBF.)

MNIST→USPS (3,800 rows, 256 pixels, unit-norm rows): fit time (wall and CPU, one BLAS thread)
and 1NN accuracy of RF-TCA / RF-SCA for N = 256, 500, 1000 frequencies, float64 and float32,
beside the exact TCA in the same run (30 components, ``mu = 1``; SCA ``beta = 0.5``).

    python benchmarks/bench_rf_accuracy.py [--part office|mnist|all]
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

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import RESULTS, header, markdown_table, write_results  # noqa: E402

from shiftlearn.adaptation import (  # noqa: E402
    RFSCA,
    RFTCA,
    TCA,
    DomainAdaptationClassifier,
)
from shiftlearn.datasets import load_mnist_usps, load_office_caltech  # noqa: E402
from shiftlearn.model_selection import SourceCVSearch  # noqa: E402

KS = [10, 20, 30, 50]
PART_FILE = RESULTS / "_rf_accuracy_parts.json"


def _load_parts():
    return json.loads(PART_FILE.read_text()) if PART_FILE.exists() else {}


def _save_part(key, value):
    d = _load_parts()
    d[key] = value
    PART_FILE.parent.mkdir(parents=True, exist_ok=True)
    PART_FILE.write_text(json.dumps(d, indent=1, default=float))


def cv_then_score(adapter, X, y, sd, yt):
    test = sd < 0
    est = DomainAdaptationClassifier(adapter, KNeighborsClassifier(1))
    search = SourceCVSearch(est, {"adapter__n_components": KS}, cv=5, refit=True).fit(X, y, sd)
    return (float(search.best_estimator_.score(X[test], yt[test])),
            int(search.best_params_["adapter__n_components"]))


def part_office():
    ds = load_office_caltech()
    done = _load_parts()
    for s, t in ds.tasks:
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
        _save_part(key, r)


def part_office_coef():
    """RF-TCA with Pan's penalty on the kernel coefficients (the exact TCA's problem with the
    random-feature kernel), same k as the exact TCA's source-CV choice."""
    ds = load_office_caltech()
    done = _load_parts()
    for s, t in ds.tasks:
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
        _save_part(key, r)


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
        for N in (256, 500, 1000):
            for dt in ("float64", "float32"):
                Xin = X.astype(dt)
                run(f"RF-TCA N={N} {dt}", RFTCA(n_components=30, n_features=N,
                                                random_state=0), Xin)
                run(f"RF-SCA N={N} {dt}", RFSCA(n_components=30, beta=0.5, n_features=N,
                                                random_state=0), Xin)
    _save_part("mnist", {"rows": rows, "load": os.getloadavg()[0]})


def report(machine):
    d = _load_parts()
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
            "## Office+Caltech SURF: RF-TCA (N = 1,000) vs exact TCA, 1NN, source-CV\n\n"
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


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--part", default="all",
                    choices=["office", "office-coef", "mnist", "all", "report"])
    args = ap.parse_args(argv)
    machine = header("RF-TCA / RF-SCA vs exact TCA: accuracy and speed")
    if args.part in ("mnist", "all"):
        part_mnist()
    if args.part in ("office", "all"):
        with threadpool_limits(1):
            part_office()
    if args.part in ("office-coef", "all"):
        with threadpool_limits(1):
            part_office_coef()
    report(machine)


if __name__ == "__main__":
    main()
