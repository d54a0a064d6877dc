"""Regression without target values: ``auto`` against the same ridge without adaptation.

For every task every candidate (no adaptation and each adapter that does not need classes, over
a small grid each) is scored by every regression criterion on the same validation folds, then
refitted on all rows to measure its target RMSE (the target values are used for that
measurement only):

* regressor: standardised ridge regression (``StandardScaler`` then ``Ridge()``), the default
  of ``shiftlearn adapt`` for a regression target, the same for every candidate;
* candidates: no adaptation, TCA, uSCA, RF-TCA, CORAL, SA, LinOT and the reweighting family
  (KMM, KLIEP, uLSIF, RuLSIF, DiscriminatorRW, NearestNeighborRW, KDERW, GaussianRW), each
  through ``DomainAdaptationRegressor``;
* criteria (``SourceKFold(3)``: held-out labeled source rows, every target row in training and
  validation): ``source_mse`` (source CV), ``iw_mse`` (importance-weighted, a standardised
  logistic-regression domain discriminator), ``reverse_mse`` (reverse validation); ORACLE (the
  target RMSE, reference only);
* ``auto``: the best candidate under a criterion, no adaptation first and kept on ties, as
  ``AdaptationRegressorSelector`` / ``shiftlearn adapt --method auto`` choose (margin 0).

Tasks:

* Parkinson's telemonitoring (UCI, ``load_parkinsons``): the target ``total_UPDRS``, the 16
  voice features, one domain per patient. Each task holds one patient out as the target
  (5 patients, seeded) and takes 500 seeded rows of the other 41 patients as the labeled
  source. The features are standardised on the task's rows (source and target together,
  no labels used) before any candidate, so that the kernels are not dominated by the
  largest-scale voice measures.
* A synthetic covariate shift with a known density ratio (4 seeds): ``x`` in 2-d, source
  ``N(0, I)``, target ``N((1, 0.5), 0.6^2 I)``, ``y = sin(2 x_0) + x_1^2 + 0.2 e``; ridge is
  misspecified there, which is when importance weighting matters (Shimodaira 2000). The row
  "oracle-weighted ridge" fits the same ridge with the *true* ratio ``p_t(x) / p_s(x)`` as
  ``sample_weight``.

Run: ``python benchmarks/model_selection/regression_study.py`` (one thread; finished tasks are
kept in ``results/_regression_study_parts.json``, so an interrupted run resumes; ``--report``
rebuilds the tables from the parts).
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from pathlib import Path

import numpy as np
from sklearn.base import clone
from sklearn.linear_model import Ridge
from sklearn.model_selection import GridSearchCV
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
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

from shiftlearn import DomainAdaptationRegressor  # noqa: E402
from shiftlearn.adaptation import FitMemory  # noqa: E402
from shiftlearn.datasets import load_parkinsons  # noqa: E402
from shiftlearn.model_selection import (  # noqa: E402
    ImportanceWeightedMSEScorer,
    ReverseValidationMSEScorer,
    SourceKFold,
    SourceMSEScorer,
    candidate_grid,
)

CANDIDATES = ["none", "TCA", "uSCA", "RF-TCA", "CORAL", "SA", "LinOT", "KMM", "KLIEP", "uLSIF",
              "RuLSIF", "DiscriminatorRW", "NearestNeighborRW", "KDERW", "GaussianRW"]
GRIDS = {
    "TCA": {"kernel": ["linear", "rbf"], "n_components": [2, 5, 10]},
    "uSCA": {"kernel": ["rbf"], "delta": [0.1, 1.0], "whiten": [False],
             "n_components": [2, 5, 10]},
    "RF-TCA": {"n_components": [2, 5, 10]},
    "CORAL": {"shrinkage": ["auto", 1.0]},
    "SA": {"n_components": [2, 5, 10]},
    "LinOT": {"reg": [1e-8, 1e-2, 1.0]},
    "KMM": {"bandwidth": ["median", "median_sq"]},
    "KLIEP": {"bandwidth": ["median", "median_sq"]},
    "uLSIF": {"bandwidth": ["median", "median_sq"]},
    "RuLSIF": {"alpha": [0.1, 0.5]},
    "DiscriminatorRW": {"calibration": ["sigmoid", None]},
    "NearestNeighborRW": {"laplace_smoothing": [False, True]},
    "KDERW": {"bandwidth": ["scott", "median"]},
    "GaussianRW": {"shrinkage": ["auto", 0.1]},
}
CRITERIA = ("source_mse", "iw_mse", "reverse_mse")
PARKINSONS_TARGETS = 5
SOURCE_ROWS = 500
SYNTHETIC_SEEDS = 4


def ridge():
    return make_pipeline(StandardScaler(), Ridge())


def scorers() -> dict:
    return {"source_mse": SourceMSEScorer(), "iw_mse": ImportanceWeightedMSEScorer(),
            "reverse_mse": ReverseValidationMSEScorer()}


# ------------------------------------------------------------------------------------ tasks
def tasks() -> list[str]:
    rng = np.random.default_rng(0)
    patients = rng.choice(np.arange(1, 43), PARKINSONS_TARGETS, replace=False)
    return ([f"parkinsons:patient_{p}" for p in sorted(patients)]
            + [f"synthetic:seed{s}" for s in range(SYNTHETIC_SEEDS)])


def _gauss_logpdf(X, mean, sd):
    return -0.5 * np.sum(((X - mean) / sd) ** 2, axis=1) - X.shape[1] * np.log(sd)


def load_task(task: str):
    """``X, y (NaN on target rows), sd, target values, true ratio on the source rows or
    None``."""
    kind, name = task.split(":")
    if kind == "parkinsons":
        data = load_parkinsons(target="total_UPDRS", features="voice", download=False)
        Xt, yt = data.domains[name]
        rest = [v for k, v in data.domains.items() if k != name]
        Xs, ys = np.vstack([v[0] for v in rest]), np.concatenate([v[1] for v in rest])
        rng = np.random.default_rng(int(name.split("_")[1]))
        keep = rng.choice(len(Xs), SOURCE_ROWS, replace=False)
        Xs, ys = Xs[keep], ys[keep]
        X = np.vstack([Xs, Xt])
        X = (X - X.mean(0)) / np.where(X.std(0) > 0, X.std(0), 1.0)
        ratio = None
    else:
        rng = np.random.default_rng(int(name.removeprefix("seed")))
        mean_t, sd_t = np.array([1.0, 0.5]), 0.6
        Xs = rng.normal(0, 1, (300, 2))
        Xt = mean_t + sd_t * rng.normal(size=(200, 2))

        def f(Z):
            return np.sin(2 * Z[:, 0]) + Z[:, 1] ** 2

        ys = f(Xs) + 0.2 * rng.normal(size=len(Xs))
        yt = f(Xt) + 0.2 * rng.normal(size=len(Xt))
        X = np.vstack([Xs, Xt])
        ratio = np.exp(_gauss_logpdf(Xs, mean_t, sd_t) - _gauss_logpdf(Xs, 0.0, 1.0))
    n_s = len(Xs)
    y = np.r_[ys, np.full(len(Xt), np.nan)]
    sd = np.r_[np.ones(n_s, int), -np.ones(len(Xt), int)]
    return X, y, sd, np.asarray(yt, float), ratio


def _label(p) -> str:
    a = p["adapter"]
    if a is None:
        return "none"
    from shiftlearn.model_selection import method_label

    return method_label(a)


def run_task(task: str) -> dict:
    X, y, sd, yt, ratio = load_task(task)
    t0 = time.perf_counter()
    memory = FitMemory()
    est = DomainAdaptationRegressor(None, ridge(), memory=memory)
    grid = candidate_grid(CANDIDATES, grids=GRIDS)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        search = GridSearchCV(est, grid, scoring=scorers(), cv=SourceKFold(3, random_state=0),
                              refit=False, error_score=np.nan)
        search.fit(X, y, groups=sd, sample_domain=sd)
        res = search.cv_results_
        params = res["params"]
        target = []
        for p in params:
            try:
                m = clone(est).set_params(**p).fit(X, y, sd)
                pred = m.predict(X[sd < 0])
                target.append(float(np.sqrt(np.mean((pred - yt) ** 2))))
            except Exception:  # noqa: BLE001 - a candidate that cannot fit is reported as NaN
                target.append(float("nan"))
    out = {"n_source": int((sd > 0).sum()), "n_target": int((sd < 0).sum()),
           "labels": [_label(p) for p in params],
           "params": [repr({k: v for k, v in p.items() if k != "adapter"}) for p in params],
           "criteria": {c: list(map(float, res[f"mean_test_{c}"])) for c in CRITERIA},
           "target_rmse": target}
    if ratio is not None:
        src = sd > 0
        w = ridge().fit(X[src], y[src], ridge__sample_weight=ratio)
        out["oracle_weighted"] = float(np.sqrt(np.mean((w.predict(X[sd < 0]) - yt) ** 2)))
    out["seconds"] = time.perf_counter() - t0
    memory.clear()
    return out


# ----------------------------------------------------------------------------------- tables
def _pick(criteria: dict, target: list, crit: str, idx=None) -> float:
    """Target RMSE of the candidate with the best criterion (greater is better; the first of
    a tie, no adaptation being first); ``oracle``: the smallest target RMSE."""
    tg = np.asarray(target, float)
    v = -tg if crit == "oracle" else np.asarray(criteria[crit], float)
    idx = np.arange(v.size) if idx is None else np.asarray(idx)
    if idx.size == 0:
        return float("nan")
    vv = np.where(np.isfinite(v[idx]), v[idx], -np.inf)
    if not np.isfinite(vv).any():
        return float("nan")
    return float(tg[idx[int(np.argmax(vv))]])


def summarise(parts: dict, family: str) -> tuple[list[dict], list[dict]]:
    keys = [k for k in tasks() if k in parts and k.startswith(family)]
    rows: dict = {}
    per_task = []
    for k in keys:
        r = parts[k]
        labels = r["labels"]
        raw = r["target_rmse"][labels.index("none")]
        line = {"task": k.split(":")[1], "raw": raw}
        for crit in (*CRITERIA, "oracle"):
            v = _pick(r["criteria"], r["target_rmse"], crit)
            rows.setdefault("auto (incl. no adaptation)", {}).setdefault(crit, []).append(v)
            line[crit] = v
            for m in CANDIDATES[1:]:
                idx = [i for i, lab in enumerate(labels) if lab == m]
                rows.setdefault(m, {}).setdefault(crit, []).append(
                    _pick(r["criteria"], r["target_rmse"], crit, idx))
            rows.setdefault("ridge without adaptation", {}).setdefault(crit, []).append(raw)
            if "oracle_weighted" in r:
                rows.setdefault("oracle-weighted ridge (true ratio)", {}).setdefault(
                    crit, []).append(r["oracle_weighted"])
        if "oracle_weighted" in r:
            line["oracle-weighted"] = r["oracle_weighted"]
        line["seconds"] = r["seconds"]
        per_task.append(line)
    table = []
    order = ["auto (incl. no adaptation)", "ridge without adaptation",
             "oracle-weighted ridge (true ratio)", *CANDIDATES[1:]]
    for method in order:
        if method not in rows:
            continue
        row = {"method": method}
        for crit in (*CRITERIA, "oracle"):
            v = np.asarray(rows[method][crit], float)
            row[crit] = float(np.nanmean(v)) if np.isfinite(v).any() else float("nan")
        table.append(row)
    return table, per_task


def report(parts: dict, machine: dict, seconds: float | None) -> None:
    body = [__doc__.split("\n\n", 1)[1].split("Run:")[0].strip(), ""]
    data = {"tasks": {}, "tables": {}}
    for family, title in (("parkinsons", "Parkinson's telemonitoring, total_UPDRS "
                                         "(UPDRS points)"),
                          ("synthetic", "Synthetic covariate shift, known density ratio")):
        table, per_task = summarise(parts, family)
        if not table:
            continue
        data["tables"][family] = {"mean": table, "per_task": per_task}
        body += [f"## {title}: mean target RMSE over {len(per_task)} tasks (smaller is "
                 "better)", "",
                 "Each cell: the candidate (or `auto`'s choice) that the column's criterion "
                 "ranks first, its target RMSE; `oracle` picks by the target RMSE itself.", "",
                 markdown_table(table, ["method", *CRITERIA, "oracle"], ".3f"), ""]
        auto = table[0]
        raw = next(r for r in table if r["method"] == "ridge without adaptation")["oracle"]
        best = min(CRITERIA, key=lambda c: auto[c])
        body += [f"Best target-free criterion for `auto`: **{best}** ({auto[best]:.3f} against "
                 f"{raw:.3f} for ridge without adaptation).", "",
                 f"### per task, `auto` under each criterion ({family})", "",
                 markdown_table(per_task, ["task", "raw", *CRITERIA, "oracle"]
                                + (["oracle-weighted"] if family == "synthetic" else [])
                                + ["seconds"], ".3f"), ""]
    for k in tasks():
        if k in parts:
            data["tasks"][k] = parts[k]
    if seconds is not None:
        body.append(f"Wall time of this run: {seconds / 60:.1f} min.")
    write_results("regression_study", "Regression without target values: the study",
                  "\n".join(body), data, machine)


@progress()
def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--report", action="store_true", help="only rebuild the tables")
    args = ap.parse_args(argv)
    machine = header("Regression without target values: the study")
    store = PartsFile(results_dir(__file__) / "_regression_study_parts.json")
    t0 = time.perf_counter()
    with threadpool_limits(limits=1):
        if not args.report:
            for task in track(tasks(), "tasks"):
                if task in store:
                    continue
                r = run_task(task)
                store.save(task, r)
                print(f"{task}: {r['seconds']:.0f} s", flush=True)
    report(store.load(), machine, None if args.report else time.perf_counter() - t0)


if __name__ == "__main__":
    main()
