"""Remark 3 of the RF-TCA paper on real data: accuracy against the regulariser gamma.

TCA (Pan et al.; the paper's gamma = 1 / mu), R-TCA (``RFTCA(exact=True)``, the paper's
Section III-B problem, the limit of RF-TCA as N grows) and RF-TCA with N = 1,000 frequencies
(the paper's Algorithm 1, ``penalty="features"``, and ``penalty="coefficients"``, which tends
to TCA) for gamma on a log grid, 20 components, Gaussian kernel with the median bandwidth, 1NN
on the adapted source rows, accuracy on the target rows. Two Office+Caltech SURF tasks: a
balanced one (caltech -> amazon, n_S = 1,123, n_T = 958) and an unbalanced one
(dslr -> caltech, n_S = 157, n_T = 1,123).

Remark 3 (Appendix B) says where gamma matters: TCA's solution is the top eigenspace of
``H (K^2 - K^2 l l^T K^2 / (gamma + l^T K^2 l)) H`` (eq. (15)), so the MMD term is switched off
for ``gamma >> l^T K^2 l`` and saturates (the mean-difference direction is removed) for
``gamma << l^T K^2 l``; for R-TCA (and RF-TCA, whose kernel is ``Z Z^T``) the same holds with
``l^T K l`` (the biased MMD^2, ``||mean z_S - mean z_T||^2`` for RF-TCA). The script prints
these scales and marks them on the figure.

Run: ``OMP_NUM_THREADS=1 python benchmarks/adaptation/rtca_gamma.py`` (about 10 minutes;
``--replot`` redraws the figure from the stored ``.json``; ``--scaling`` compares TCA and R-TCA
with both column scalings at gamma = 1e-5 and 100, ``results/rtca_gamma_scaling.md``).
Writes ``benchmarks/adaptation/results/rtca_gamma.md``, ``.json`` and ``.png``.
"""

from __future__ import annotations

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
    header,
    markdown_table,
    progress,
    results_dir,
    track,
    write_results,
)

from shiftlearn.adaptation import RFTCA, TCA  # noqa: E402
from shiftlearn.compose import DomainAdaptationClassifier
from shiftlearn.datasets import load_office_caltech  # noqa: E402
from shiftlearn.kernels import median_heuristic, rbf_kernel, rff_mean  # noqa: E402

TASKS = [("caltech", "amazon"), ("dslr", "caltech")]
GAMMAS = np.logspace(-5, 4, 19)
K_COMPONENTS = 20
N_FEATURES = 1000


def methods(gamma: float, sigma: float) -> dict:
    common = {"n_components": K_COMPONENTS, "mu": 1.0 / float(gamma), "bandwidth": sigma}
    return {
        "TCA": TCA(**common),
        "R-TCA (exact)": RFTCA(exact=True, **common),
        "RF-TCA (paper, features)": RFTCA(n_features=N_FEATURES, random_state=0, **common),
        "RF-TCA (coefficients)": RFTCA(n_features=N_FEATURES, penalty="coefficients",
                                       random_state=0, **common),
    }


def scales(X, sd, sigma, omega):
    """``l^T K l``, ``l^T K^2 l`` (exact Gaussian kernel) and ``||mean z_S - mean z_T||^2``."""
    ell = np.where(sd > 0, 1.0 / np.sum(sd > 0), -1.0 / np.sum(sd < 0))
    Kl = rbf_kernel(X, sigma=sigma) @ ell
    d = rff_mean(X[sd > 0], omega) - rff_mean(X[sd < 0], omega)
    return {"l'Kl": float(ell @ Kl), "l'K^2l": float(Kl @ Kl), "||d||^2 (RF)": float(d @ d)}


def run_task(ds, s, t):
    X, y, sd, yt = ds.pack(s, t, return_masked_labels=True)
    test = sd < 0
    sigma = median_heuristic(X)
    curves = {}
    omega = None
    t0 = time.process_time()
    for gamma in GAMMAS:
        for name, adapter in methods(gamma, sigma).items():
            est = DomainAdaptationClassifier(adapter, KNeighborsClassifier(1)).fit(X, y, sd)
            curves.setdefault(name, []).append(float(est.score(X[test], yt[test])))
            if omega is None and getattr(est.adapter_, "omega_", None) is not None:
                omega = est.adapter_.omega_
        print(f"{s}->{t} gamma={gamma:.3g}", {k: round(v[-1], 4) for k, v in curves.items()},
              flush=True)
    return {"n_S": int(np.sum(sd > 0)), "n_T": int(np.sum(test)), "sigma": float(sigma),
            "scales": scales(X, sd, sigma, omega), "accuracy": curves,
            "cpu s": time.process_time() - t0}


def figure(results, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(results), figsize=(5.2 * len(results), 3.8), sharey=False)
    styles = {"TCA": "-o", "R-TCA (exact)": "-s", "RF-TCA (paper, features)": "--s",
              "RF-TCA (coefficients)": "--o"}
    for ax, (task, r) in zip(np.atleast_1d(axes), results.items(), strict=True):
        for name, acc in r["accuracy"].items():
            ax.semilogx(GAMMAS, 100 * np.array(acc), styles[name], ms=3, label=name)
        for key, color, who in (("l'K^2l", "C0", "TCA"), ("l'Kl", "C1", "R-TCA")):
            ax.axvline(r["scales"][key], color=color, ls=":", lw=1.2,
                       label=f"{key} = {r['scales'][key]:.2g} ({who}'s scale)")
        ax.set_title(f"{task} (n_S={r['n_S']}, n_T={r['n_T']})", fontsize=10)
        ax.set_xlabel("gamma (= 1 / mu)")
        ax.set_ylabel("1NN target accuracy (%)")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7, loc="best")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    print(f"wrote {path}")


def scaling_check():
    """TCA and R-TCA at the two ends of the gamma range with either column scaling: how much of
    their gap is the scaling (``"eigh"``: component j scaled by lambda_j for TCA's ``K W`` and
    by sqrt(lambda_j) for R-TCA; ``"constraint"``: both whitened)."""
    machine = header("TCA vs R-TCA: the column scaling at the ends of the gamma range")
    ds = load_office_caltech()
    rows = []
    with threadpool_limits(1):
        for s, t in track(TASKS, "tasks (scaling)"):
            X, y, sd, yt = ds.pack(s, t, return_masked_labels=True)
            sigma = median_heuristic(X)
            for gamma in (1e-5, 100.0):
                for scaling in ("eigh", "constraint"):
                    row = {"task": f"{s}->{t}", "gamma": gamma, "scaling": scaling}
                    for name, a in (("TCA", TCA), ("R-TCA (exact)", None)):
                        kw = {"n_components": K_COMPONENTS, "mu": 1.0 / gamma, "bandwidth": sigma,
                              "scaling": scaling}
                        adapter = TCA(**kw) if a else RFTCA(exact=True, **kw)
                        est = DomainAdaptationClassifier(adapter, KNeighborsClassifier(1))
                        row[name] = 100 * est.fit(X, y, sd).score(X[sd < 0], yt[sd < 0])
                    print(row, flush=True)
                    rows.append(row)
    write_results("rtca_gamma_scaling", "TCA vs R-TCA: the column scaling at the ends of the "
                  "gamma range", f"{K_COMPONENTS} components, Gaussian kernel (median "
                  "bandwidth), 1NN target accuracy (%).\n\n" + markdown_table(rows), rows,
                  machine)


@progress()
def main():
    if "--scaling" in sys.argv:
        return scaling_check()
    if "--replot" in sys.argv:          # redraw the figure from the stored results
        out = results_dir(__file__)
        figure(json.loads((out / "rtca_gamma.json").read_text())["results"],
               out / "rtca_gamma.png")
        return
    machine = header("RF-TCA paper, Remark 3: accuracy against gamma")
    machine["OMP_NUM_THREADS"] = os.environ.get("OMP_NUM_THREADS", "unset")
    ds = load_office_caltech()
    results = {}
    with threadpool_limits(1):
        for s, t in track(TASKS, "tasks"):
            results[f"{s}->{t}"] = run_task(ds, s, t)
    out = results_dir(__file__)
    out.mkdir(parents=True, exist_ok=True)
    figure(results, out / "rtca_gamma.png")
    body = []
    for task, r in results.items():
        rows = [{"gamma": f"{g:.3g}", **{k: 100 * v[i] for k, v in r["accuracy"].items()}}
                for i, g in enumerate(GAMMAS)]
        sc = ", ".join(f"`{k}` = {v:.4g}" for k, v in r["scales"].items())
        body.append(f"## {task} (n_S = {r['n_S']}, n_T = {r['n_T']}, sigma = {r['sigma']:.4g})"
                    f"\n\nScales: {sc}. CPU {r['cpu s']:.0f} s.\n\n"
                    + markdown_table(rows, floatfmt=".2f"))
    write_results("rtca_gamma", "RF-TCA paper, Remark 3: accuracy against gamma",
                  f"{K_COMPONENTS} components, Gaussian kernel (median bandwidth), 1NN, "
                  f"N = {N_FEATURES} frequencies (seed 0) for RF-TCA; gamma = 1 / mu.\n\n"
                  "![accuracy against gamma](rtca_gamma.png)\n\n" + "\n\n".join(body),
                  results, machine)


if __name__ == "__main__":
    main()
