"""Which target-label-free scorer selects well on the SCA paper's toy (``make_sca_toy``)?

The toy has a *conditional* shift: each target cluster sits next to another class's source
cluster, so the raw features (and every unaligned subspace) label the target confidently and
wrongly (~37%), while the aligning SCA settings (linear kernel, one component, the direction
orthogonal to the shift) reach 79-89%. 5-fold source CV picks an unaligned setting (38.8%,
``docs/adaptation.md``).

Protocol, per seed and classifier: candidates = no adaptation + the 24 SCA settings of
``subspace_accuracy.py --part toy`` (kernel x delta x beta x n_components), each
``DomainAdaptationClassifier(adapter, classifier)``; ``GridSearchCV`` with
``SourceKFold(folds)`` (held-out labeled source rows + every target row in each validation
fold, metadata routing off: targets are the unlabeled rows) scores every candidate with every
criterion; each criterion selects its argmax; the candidates are refitted on all rows and scored
on the target labels (ORACLE column: reference only). ``selection_summary`` gives the selected
candidate's target accuracy, the gap closed (random = mean over the candidates) and Spearman's
rho between validation and target scores.

Run: ``python benchmarks/model_selection/splits_scorers_toy.py`` (``--quick``: 1 seed, 1NN).
Writes ``results/splits_scorers_toy.{md,json}``.
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from pathlib import Path

import numpy as np
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import GridSearchCV
from sklearn.neighbors import KNeighborsClassifier

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: _common
from _common import header, markdown_table, write_results  # noqa: E402

from shiftlearn.adaptation import SCA  # noqa: E402
from shiftlearn.compose import DomainAdaptationClassifier
from shiftlearn.datasets import make_sca_toy  # noqa: E402
from shiftlearn.model_selection import (  # noqa: E402
    CircularValidation,
    DeepEmbeddedValidation,
    ImportanceWeightedScorer,
    MixupValidationScorer,
    MixValScorer,
    MMDScorer,
    PredictionEntropyScorer,
    SoftNeighborhoodDensity,
    SourceKFold,
    selection_summary,
)

GRID = [{"adapter": [None]},
        {"adapter": [SCA(setting="da")], "adapter__kernel": ["linear", "rbf"],
         "adapter__delta": [1.0, 10.0, 100.0], "adapter__beta": [0.5, 0.9],
         "adapter__n_components": [1, 2]}]
CLASSIFIERS = {"1nn": lambda: KNeighborsClassifier(n_neighbors=1),
               "logreg": lambda: LogisticRegression()}


def scorers() -> dict:
    return {
        "source accuracy": "accuracy",
        "mix-up validation (baseline)": MixupValidationScorer(),
        "IW": ImportanceWeightedScorer(),
        "PE": PredictionEntropyScorer(),
        "SND": SoftNeighborhoodDensity(),
        "DEV": DeepEmbeddedValidation(),
        "circular": CircularValidation(),
        "MixVal": MixValScorer(),
        "MMD joint, lam=1 (default)": MMDScorer(),
        "MMD joint, lam=2": MMDScorer(lam=2.0),
        "MMD marginal, lam=1": MMDScorer(kind="marginal"),
        "MMD marginal, lam=2": MMDScorer(kind="marginal", lam=2.0),
    }


def _mean(values) -> float:
    v = np.asarray(values, dtype=float)
    v = v[np.isfinite(v)]
    return float(v.mean()) if v.size else float("nan")


def run_one(clf: str, seed: int, n_per_cluster: int, folds: int) -> dict:
    X, y, sd, yt = make_sca_toy(n_per_cluster=n_per_cluster, random_state=seed,
                                return_target_labels=True)
    base = CLASSIFIERS[clf]
    search = GridSearchCV(DomainAdaptationClassifier(None, base()), GRID,
                          cv=SourceKFold(folds), scoring=scorers(), refit=False,
                          error_score="raise")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")      # PE/SND warn on 1NN's hard probabilities
        search.fit(X, y, groups=sd, sample_domain=sd)
        target = np.array([np.mean(DomainAdaptationClassifier(None, base()).set_params(**p)
                                   .fit(X, y, sd).predict(X[sd < 0]) == yt)
                           for p in search.cv_results_["params"]])
    out = {"target": target.tolist(), "raw": float(target[0]), "criteria": {}}
    for name in scorers():
        v = search.cv_results_[f"mean_test_{name}"]
        out["criteria"][name] = {**selection_summary(v, target),
                                 "validation": v.tolist(),
                                 "params": repr(search.cv_results_["params"][int(
                                     np.nanargmax(v))])}
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3, 4])
    ap.add_argument("--classifiers", nargs="+", default=list(CLASSIFIERS),
                    choices=list(CLASSIFIERS))
    ap.add_argument("--n-per-cluster", type=int, default=50)
    ap.add_argument("--folds", type=int, default=3)
    ap.add_argument("--quick", action="store_true", help="seed 0, 1NN, 20 rows per cluster")
    args = ap.parse_args(argv)
    if args.quick:
        args.seeds, args.classifiers, args.n_per_cluster = [0], ["1nn"], 20
    title = "Target-label-free scorers on the SCA toy"
    machine = header(title)
    data, body = {}, []
    t0 = time.perf_counter()
    for clf in args.classifiers:
        runs = {}
        for seed in args.seeds:
            t = time.perf_counter()
            runs[seed] = run_one(clf, seed, args.n_per_cluster, args.folds)
            print(f"{clf} seed {seed}: " + ", ".join(
                f"{k} {100 * c['selected_target']:.1f}" for k, c in
                runs[seed]["criteria"].items()) + f" ({time.perf_counter() - t:.0f} s)",
                flush=True)
        data[clf] = runs
        rows = []
        for name in scorers():
            c = [runs[s]["criteria"][name] for s in args.seeds]
            rows.append({"criterion": name,
                         "selected target acc %": 100 * np.mean([r["selected_target"]
                                                                 for r in c]),
                         "per seed": " ".join(f"{100 * r['selected_target']:.1f}" for r in c),
                         "gap closed": _mean([r["gap_closed"] for r in c]),
                         "Spearman rho": _mean([r["spearman"] for r in c])})
        ref = [runs[s]["criteria"]["source accuracy"] for s in args.seeds]
        for label, key in (("ORACLE (target labels)", "oracle"), ("random (mean)", "random")):
            rows.append({"criterion": label,
                         "selected target acc %": 100 * np.mean([r[key] for r in ref]),
                         "per seed": " ".join(f"{100 * r[key]:.1f}" for r in ref)})
        rows.append({"criterion": "no adaptation",
                     "selected target acc %": 100 * np.mean([runs[s]["raw"]
                                                             for s in args.seeds]),
                     "per seed": " ".join(f"{100 * runs[s]['raw']:.1f}" for s in args.seeds)})
        body.append(f"## classifier: {clf}\n\n" + markdown_table(
            rows, ["criterion", "selected target acc %", "per seed", "gap closed",
                   "Spearman rho"]))
    wall = time.perf_counter() - t0
    intro = (f"Seeds {args.seeds}, {args.n_per_cluster} rows per cluster (3 classes, "
             f"{3 * args.n_per_cluster} source + {3 * args.n_per_cluster} target rows), "
             f"SourceKFold({args.folds}), 25 candidates (no adaptation + 24 SCA settings). "
             "Gap closed: (selected - random) / (oracle - random), random = mean over the "
             "candidates; Spearman rho between validation and target scores over the 25 "
             "candidates (NaN when a criterion is constant, e.g. PE with 1NN), both averaged "
             f"over the seeds. Wall time {wall:.0f} s.")
    write_results("splits_scorers_toy", title, intro + "\n\n" + "\n\n".join(body),
                  {"args": vars(args), "runs": data, "wall_s": wall}, machine)


if __name__ == "__main__":
    main()
