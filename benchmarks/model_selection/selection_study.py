"""Selection without target labels, SKADA-Bench style, on the data we hold (issue #15, item 5).

For every task and classifier (1NN; standardised logistic regression), every candidate is scored
by every criterion on the same validation folds, then refitted on all rows to measure its target
accuracy (the target labels are used for that measurement only):

* candidates, ours: no adaptation, TCA, JDA, SCA, uSCA, RF-TCA, RF-SCA, CORAL over one small grid
  each (:data:`OUR_GRIDS`); peers: skada's CORAL, SA, JDOT, KMM (reweighting), LinOT, OT label
  propagation and TCA, each over a small grid (:func:`peer_candidates`), with the same classifier;
* criteria (``SourceKFold(3)``: held-out labeled source rows, every target row in training and
  validation): source accuracy (the papers' source CV; ``SourceAccuracyScorer``, which predicts
  the held-out source rows as source rows, as the maps that treat the domains differently need:
  CORAL, SA, LinOT), IW, PE, DEV, circular validation, our joint-MMD scorer; plus source
  accuracy on ``ClusterSplit`` folds (Napoli & White) and the ORACLE (target accuracy, reference
  only);
* ``auto``: the best of ours (no adaptation included) under a criterion, i.e. what
  ``AdaptationSelector``/``shiftlearn adapt --method auto`` choose; each peer: the best of its own
  grid under the same criterion; "source only": no adaptation.

Differences from SKADA-Bench (stated, not hidden): one transductive split (fit on all source +
target rows, measure on the target rows) instead of 5 outer splits; 3 inner folds; tiny grids;
JDOT always uses a plain logistic regression (it needs sample weights, which 1NN does not
take); every method, ours and the peers, runs on the same seeded subsample of at most
``--max-rows`` rows per domain (400 by default, so that the whole study fits in an hour on 2 cores:
skada's JDOT/KMM/OT build n_s x n_t matrices, and exact TCA/SCA factorise n x n kernels), and the
target accuracy is measured on the subsample's target rows (the toy's 150 rows per domain are
never subsampled; Office's dslr and webcam domains, 157 and 295 rows, neither).

Every fit of one task shares one explicit ``FitMemory`` (kernels, factorisations, one eigen-solve
per setting), so the criteria, folds and classifiers cost little more than one search.

Run: ``python benchmarks/model_selection/selection_study.py`` (parts are kept in
``results/_selection_study_parts_r<max rows>.json`` so an interrupted run resumes;
``--report`` rebuilds the tables from the parts; ``--quick``: the toy and two Office tasks,
1NN only).
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import sklearn
from sklearn.base import clone
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import GridSearchCV
from sklearn.neighbors import KNeighborsClassifier
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

from shiftlearn import DomainAdaptationClassifier  # noqa: E402
from shiftlearn.adaptation import FitMemory  # noqa: E402
from shiftlearn.datasets import (  # noqa: E402
    load_mnist_usps,
    load_msrc_voc,
    load_office_caltech,
    make_sca_toy,
)
from shiftlearn.model_selection import (  # noqa: E402
    CircularValidation,
    ClusterSplit,
    DeepEmbeddedValidation,
    ImportanceWeightedScorer,
    MMDScorer,
    PredictionEntropyScorer,
    SourceAccuracyScorer,
    SourceKFold,
    candidate_grid,
)

OURS = ("none", "TCA", "JDA", "SCA", "uSCA", "RF-TCA", "RF-SCA", "CORAL")
#: one small grid per method (the same policy for every method, ours and skada's: 2-8 points)
OUR_GRIDS = {
    "TCA": {"kernel": ["linear", "rbf"], "n_components": [30, 10]},
    # the paper's linear kernel, its two weights (lambda = 1, 0.1) and its k = 100
    "JDA": {"kernel": ["linear"], "mu": [1.0, 10.0], "n_components": [30, 100]},
    "SCA": {"kernel": ["linear", "rbf"], "beta": [0.1, 0.9], "n_components": [30, 10],
            "whiten": [False]},
    "uSCA": {"kernel": ["linear", "rbf"], "delta": [1.0, 10.0], "n_components": [30, 10],
             "whiten": [False]},
    "RF-TCA": {"n_components": [30, 10]},
    "RF-SCA": {"beta": [0.1, 0.9], "n_components": [30, 10], "whiten": [False]},
    "CORAL": {"shrinkage": ["auto", 1.0]},
}
PEERS = ("skada CORAL", "SA", "JDOT", "KMM", "LinOT", "OTLabelProp", "skada TCA")
CRITERIA = ("source-cv", "cluster", "IW", "PE", "DEV", "circular", "MMD")


def classifiers() -> dict:
    return {"1nn": lambda: KNeighborsClassifier(1),
            "logreg": lambda: make_pipeline(StandardScaler(), LogisticRegression(max_iter=1000))}


def scorers() -> dict:
    return {"source-cv": SourceAccuracyScorer(), "IW": ImportanceWeightedScorer(),
            "PE": PredictionEntropyScorer(), "DEV": DeepEmbeddedValidation(),
            "circular": CircularValidation(), "MMD": MMDScorer()}


def tasks(quick: bool) -> list[tuple[str, str, str]]:
    """``(data set, source, target)``; the toy's "domains" are its seeds."""
    out = [("toy", "0", "toy"), ("toy", "1", "toy"), ("toy", "2", "toy")]
    office = load_office_caltech()
    out += [("office_caltech", s, t) for s, t in office.tasks]
    out += [("mnist_usps", s, t) for s, t in load_mnist_usps().tasks]
    out += [("msrc_voc", s, t) for s, t in load_msrc_voc().tasks]
    if quick:
        out = out[:1] + [("office_caltech", "webcam", "dslr"), ("office_caltech", "dslr",
                                                                 "webcam")]
    return out


def load_task(name: str, s: str, t: str, seed: int = 0):
    """``X, y (target -1), sample_domain, y_target``; ``seed`` != 0 draws the toy anew (its
    seed ``s + 3 seed``: other toy data than every task of seed 0)."""
    if name == "toy":
        return make_sca_toy(n_per_cluster=50, random_state=int(s) + 3 * seed,
                            return_target_labels=True)
    ds = {"office_caltech": load_office_caltech, "mnist_usps": load_mnist_usps,
          "msrc_voc": load_msrc_voc}[name]()
    X, y, sd, y_true = ds.pack(s, t, return_masked_labels=True)
    return X, y, sd, y_true[sd < 0]


def classifier_steps(clf_name: str) -> list:
    """The classifier as pipeline steps (skada's selectors cannot route into a nested
    scikit-learn ``Pipeline``, so the scaler is a step of the domain-aware pipeline)."""
    if clf_name == "1nn":
        return [KNeighborsClassifier(1)]
    # reweighting adapters (KMM) hand sample weights to the classifier: say who takes them
    return [StandardScaler().set_fit_request(sample_weight=False),
            LogisticRegression(max_iter=1000).set_fit_request(sample_weight=True)]


def peer_candidates(clf_name: str) -> list[tuple[str, object, dict]]:
    """``(label, skada pipeline, grid)`` for each peer (skada imported here: it switches
    scikit-learn's metadata routing on for the process). Each is
    ``skada.make_da_pipeline(<adapter>, <classifier steps>)``, as skada's own shortcuts build it."""
    import skada

    def pipe(adapter):
        return skada.make_da_pipeline(adapter, *classifier_steps(clf_name))

    return [
        ("skada CORAL", pipe(skada.CORALAdapter()), {"coraladapter__reg": ["auto", 1.0]}),
        ("SA", pipe(skada.SubspaceAlignmentAdapter(random_state=0)),
         {"subspacealignmentadapter__n_components": [10, 30]}),
        # JDOT refits its classifier with sample weights, which 1NN does not take (nor, under
        # metadata routing, a scaler pipeline): it always uses a plain logistic regression
        ("JDOT", skada.JDOTClassifier(LogisticRegression(max_iter=1000)), {"alpha": [0.1, 1.0]}),
        ("KMM", pipe(skada.KMMReweightAdapter()), {"kmmreweightadapter__B": [10.0, 1000.0]}),
        ("LinOT", pipe(skada.LinearOTMappingAdapter()),
         {"linearotmappingadapter__reg": [0.1, 1.0]}),
        ("OTLabelProp", pipe(skada.OTLabelPropAdapter()),
         {"otlabelpropadapter__reg": [None, 1.0]}),
        ("skada TCA", pipe(skada.TransferComponentAnalysisAdapter()),
         {"transfercomponentanalysisadapter__n_components": [10, 30]}),
    ]


def _subsample(sd, max_rows: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    keep = []
    for d in np.unique(sd):
        idx = np.flatnonzero(sd == d)
        if idx.size > max_rows:
            idx = np.sort(rng.choice(idx, max_rows, replace=False))
        keep.append(idx)
    return np.sort(np.concatenate(keep))


def study_rows(name: str, s: str, t: str, max_rows: int, seed: int = 0):
    """A task's rows as the study uses them: at most ``max_rows`` per domain (a subsample
    seeded by ``seed``; the toy is drawn anew for ``seed`` != 0), and the target rows' labels
    (``yt``, in the order of the rows with ``sd < 0``; for measuring only)."""
    X, y, sd, yt = load_task(name, s, t, seed)
    keep = _subsample(sd, max_rows, seed)
    yt = yt[np.searchsorted(np.flatnonzero(sd < 0), keep[sd[keep] < 0])]
    return X[keep], y[keep], sd[keep], yt


def _search(est, grid, X, y, sd, cv, scoring, routing: bool):
    search = GridSearchCV(est, grid, cv=cv, scoring=scoring, refit=False, error_score=np.nan)
    with sklearn.config_context(enable_metadata_routing=routing):
        if routing:
            search.fit(X, y, sample_domain=sd)
        else:
            search.fit(X, y, groups=sd, sample_domain=sd)
    return search.cv_results_


def _target_accuracies(est, params_list, X, y, sd, yt, routing: bool) -> list[float]:
    out = []
    tgt = sd < 0
    for p in params_list:
        model = clone(est).set_params(**p)
        try:
            with sklearn.config_context(enable_metadata_routing=routing):
                model.fit(X, y, sample_domain=sd)
                pred = (model.predict(X[tgt], sample_domain=sd[tgt]) if routing
                        else model.predict(X[tgt]))
            out.append(float(np.mean(pred == yt)))
        except Exception:  # noqa: BLE001 - a failing candidate is recorded as NaN
            out.append(float("nan"))
    return out


def _label(p) -> str:
    a = p.get("adapter", "peer")
    name = "none" if a is None else type(a).__name__ if a != "peer" else "peer"
    return {"RFTCA": "RF-TCA", "RFSCA": "RF-SCA"}.get(name, name)


def run_task(name, s, t, clf_name, max_rows: int, memory=None) -> dict:
    X, y, sd, yt = study_rows(name, s, t, max_rows)
    clf = classifiers()[clf_name]()
    sc = scorers()
    t0 = time.perf_counter()
    res = {"n": int(X.shape[0]), "ours": {}, "peers": {}}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est = DomainAdaptationClassifier(None, clf, memory=memory)
        grid = candidate_grid(OURS, grids=OUR_GRIDS)
        cvr = _search(est, grid, X, y, sd, SourceKFold(3, random_state=0), sc, False)
        clus = _search(est, grid, X, y, sd, ClusterSplit(test_size=0.3, random_state=0),
                       SourceAccuracyScorer(), False)
        params = cvr["params"]
        res["ours"] = {
            "labels": [_label(p) for p in params],
            "params": [repr({k: v for k, v in p.items() if k != "adapter"}) for p in params],
            "criteria": {**{c: list(map(float, cvr[f"mean_test_{c}"])) for c in sc},
                         "cluster": list(map(float, clus["mean_test_score"]))},
            "target": _target_accuracies(est, params, X, y, sd, yt, False)}
        res["seconds_ours"] = time.perf_counter() - t0
        Xp, yp, sdp, ytp = X, y, sd, yt   # the same rows as ours
        for label, pipe, pgrid in peer_candidates(clf_name):
            t1 = time.perf_counter()
            try:
                pr = _search(pipe, pgrid, Xp, yp, sdp, SourceKFold(3, random_state=0), sc,
                             True)
                pc = _search(pipe, pgrid, Xp, yp, sdp,
                             ClusterSplit(test_size=0.3, random_state=0),
                             SourceAccuracyScorer(), True)
                res["peers"][label] = {
                    "params": [repr(p) for p in pr["params"]],
                    "criteria": {**{c: list(map(float, pr[f"mean_test_{c}"])) for c in sc},
                                 "cluster": list(map(float, pc["mean_test_score"]))},
                    "target": _target_accuracies(pipe, pr["params"], Xp, yp, sdp, ytp, True),
                    "seconds": time.perf_counter() - t1}
            except Exception as exc:  # noqa: BLE001 - a peer that cannot run is reported
                res["peers"][label] = {"error": f"{type(exc).__name__}: {exc}"[:300]}
    res["seconds"] = time.perf_counter() - t0
    return res


# ----------------------------------------------------------------------------------- tables
def _pick(criteria: dict, target: list, crit: str, idx=None) -> float:
    v = np.asarray(criteria[crit] if crit != "oracle" else target, float)
    tg = np.asarray(target, float)
    idx = np.arange(v.size) if idx is None else np.asarray(idx)
    if idx.size == 0:
        return float("nan")
    vv = np.where(np.isfinite(v[idx]), v[idx], -np.inf)
    if not np.isfinite(vv).any():
        return float("nan")
    return float(tg[idx[int(np.argmax(vv))]])   # ties: first (no adaptation comes first)


def summarise(parts: dict, clf: str, ours=OURS, peers=PEERS, criteria=CRITERIA
              ) -> tuple[list[dict], list[dict], dict]:
    """Per classifier: the table (one row per method, its mean target accuracy under each
    criterion), the per-task lines of ``auto`` and ``{"tasks": count, "values": {method:
    {criterion: target accuracy on each task}}}`` (fractions, NaN where not computed).
    ``ours``, ``peers`` and ``criteria`` name the methods and criteria of the parts
    (``selection_catalog.py`` passes its own)."""
    keys = sorted(k for k in parts if k.endswith(f"|{clf}"))
    rows, per_task = {}, []
    for k in keys:
        r = parts[k]
        o = r["ours"]
        labels = o["labels"]
        task = k.rsplit("|", 1)[0]
        line = {"task": task, "raw": o["target"][labels.index("none")]}
        for crit in (*criteria, "oracle"):
            rows.setdefault("auto (ours, incl. no adaptation)", {}).setdefault(crit, []).append(
                _pick(o["criteria"], o["target"], crit))
            line[crit] = rows["auto (ours, incl. no adaptation)"][crit][-1]
            for m in ours[1:]:
                idx = [i for i, lab in enumerate(labels) if lab == m]
                rows.setdefault(m, {}).setdefault(crit, []).append(
                    _pick(o["criteria"], o["target"], crit, idx))
            for p in peers:
                pr = r["peers"].get(p, {})
                val = (_pick(pr["criteria"], pr["target"], crit) if "criteria" in pr
                       else float("nan"))
                rows.setdefault(p, {}).setdefault(crit, []).append(val)
        rows.setdefault("source only (no adaptation)", {})
        for crit in (*criteria, "oracle"):
            rows["source only (no adaptation)"].setdefault(crit, []).append(line["raw"])
        per_task.append(line)
    table = []
    for method, d in rows.items():
        row = {"method": method}
        for crit in (*criteria, "oracle"):
            v = np.asarray(d[crit], float)
            row[crit] = 100 * float(np.nanmean(v)) if np.isfinite(v).any() else float("nan")
            if not np.isfinite(v).all():
                row[crit + " n"] = int(np.isfinite(v).sum())
        table.append(row)
    order = ["auto (ours, incl. no adaptation)", "source only (no adaptation)", *ours[1:],
             *peers]
    table.sort(key=lambda r: order.index(r["method"]))
    return table, per_task, {"tasks": len(keys), "values": rows}


def figure(data: dict) -> Path:
    """Mean target accuracy of each method under each criterion (one panel per classifier):
    ``auto`` and each peer under every target-free criterion, ORACLE and source only marked."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(data), figsize=(7.5 * len(data), 5.2), squeeze=False)
    for ax, (clf, d) in zip(axes[0], data.items(), strict=True):
        rows = [r for r in d["table"] if r["method"] != "source only (no adaptation)"]
        raw = next(r for r in d["table"] if r["method"] == "source only (no adaptation)")
        width = 0.8 / len(CRITERIA)
        x = np.arange(len(rows))
        for j, crit in enumerate(CRITERIA):
            bars = ax.bar(x + (j - len(CRITERIA) / 2 + 0.5) * width, [r[crit] for r in rows],
                          width, label=crit)
            for bar, r in zip(bars, rows, strict=True):
                if crit + " n" in r:          # a mean over fewer tasks: not comparable
                    bar.set_alpha(0.3)
                    bar.set_hatch("//")
        ax.scatter(x, [r["oracle"] for r in rows], marker="_", s=250, c="k", zorder=3,
                   label="ORACLE (target labels)")
        ax.axhline(raw["oracle"], color="r", ls="--", lw=1, label="source only")
        ax.set_xticks(x, [r["method"].replace(" (ours, incl. no adaptation)", "\n(ours)")
                          for r in rows], rotation=60, ha="right", fontsize=8)
        ax.set_ylabel("mean target accuracy (%)")
        ax.set_title(f"{clf}: candidates chosen by each criterion\n(pale hatched bars: mean "
                     "over the tasks the criterion could be computed on, fewer than all)",
                     fontsize=10)
        ax.legend(fontsize=7, ncol=3)
    fig.tight_layout()
    path = results_dir(__file__) / "selection_study.png"
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


def report(parts: dict, machine: dict, seconds: float | None) -> None:
    body = [__doc__.split("\n\n")[1].strip(), ""]
    data = {}
    for clf in classifiers():
        table, per_task, info = summarise(parts, clf)
        if not info["tasks"]:
            continue
        cols = ["method", *CRITERIA, "oracle"]
        def cell(r, c, n=info["tasks"]):
            # a criterion a method could not compute on some tasks (an error, no embedding):
            # the mean over the tasks it could, with their count, so it is not compared as equal
            v = r.get(c, "")
            return f"{v:.2f} ({r[c + ' n']}/{n} tasks)" if c + " n" in r else v

        body += [f"## classifier: {clf} ({info['tasks']} tasks), mean target accuracy %", "",
                 markdown_table([{c: cell(r, c) for c in cols} for r in table], cols), "",
                 "A cell with a task count is the mean over the tasks where the method and "
                 "criterion could be computed (the others raised an error): not comparable "
                 "with the full means.", ""]
        best = max(CRITERIA, key=lambda c: table[0][c])
        body += [f"Best target-free criterion for `auto`: **{best}** "
                 f"({table[0][best]:.2f}% vs {table[1][best]:.2f}% source only).", ""]
        lines = []
        for t in per_task:
            lines.append({"task": t["task"], "raw": 100 * t["raw"],
                          **{c: 100 * t[c] for c in (*CRITERIA, "oracle")},
                          "auto - raw (best criterion)": 100 * (t[best] - t["raw"])})
        body += [f"### per task, `auto` under each criterion ({clf})", "",
                 markdown_table(lines, ["task", "raw", *CRITERIA, "oracle",
                                        "auto - raw (best criterion)"]), ""]
        gaps = np.array([t[best] - t["raw"] for t in per_task]) * 100
        below = [t["task"] for t, g in zip(per_task, gaps, strict=True) if g < -1.0]
        body += [f"`auto` under {best} minus no adaptation: mean {gaps.mean():+.2f} points, "
                 f"worst {gaps.min():+.2f} ({per_task[int(np.argmin(gaps))]['task']}); "
                 f"{len(below)} of {len(per_task)} tasks more than 1 point below no adaptation"
                 + (f": {', '.join(below)}." if below else "."), ""]
        data[clf] = {"table": table, "per_task": per_task, "best_criterion": best,
                     "auto_minus_raw": {"mean": float(gaps.mean()), "min": float(gaps.min()),
                                        "tasks_below_1_point": below}}
    if data:
        png = figure(data)
        body += [f"![mean target accuracy per method and criterion]({png.name})", ""]
    if seconds is not None:
        body.append(f"Wall time of this run: {seconds / 60:.1f} min.")
    write_results("selection_study", "Selection without target labels: the study",
                  "\n".join(body), data, machine)


@progress()
def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--classifiers", nargs="+", default=list(classifiers()),
                    choices=list(classifiers()))
    ap.add_argument("--max-rows", type=int, default=400,
                    help="rows per domain, every method (default 400)")
    ap.add_argument("--report", action="store_true", help="only rebuild the tables")
    ap.add_argument("--reverse", action="store_true",
                    help="run the tasks last to first: a second process started with it "
                         "shares the work of a running one (both save to the same parts)")
    args = ap.parse_args(argv)
    if args.quick:
        args.classifiers = ["1nn"]
    machine = header("Selection without target labels: the study")
    store = PartsFile(results_dir(__file__) / f"_selection_study_parts_r{args.max_rows}.json")
    t0 = time.perf_counter()
    # one BLAS thread: the fits are small (<= 800 rows), and with OpenBLAS's two threads the
    # same units took ~3x longer on the 2-core machine (caltech->webcam, 1NN: 184 s vs 63 s)
    with threadpool_limits(limits=1):
        _run(args, store)
    report(store.load(), machine, None if args.report else time.perf_counter() - t0)


def _run(args, store) -> None:
    if not args.report:
        order = tasks(args.quick)
        for name, s, t in track(order[::-1] if args.reverse else order, "tasks"):
            # one explicit memory per task: every fold, criterion and classifier of the task
            # reuses the kernels, factorisations and eigen-solves of the same rows
            memory = FitMemory(max_bytes=3 << 30)
            for clf in args.classifiers:
                key = f"{name}:{s}->{t}|{clf}"
                if key in store:
                    continue
                r = run_task(name, s, t, clf, args.max_rows, memory)
                store.save(key, r)
                print(f"{key}: {r['seconds']:.0f} s (ours {r['seconds_ours']:.0f} s)",
                      flush=True)


if __name__ == "__main__":
    main()
