"""Ensemble-agreement selection (EnsV) on the catalog study's tasks: does it choose better?

EnsV (Hu, Luo, Liang & Foo, "Towards reliable model selection for unsupervised domain
adaptation: an empirical study and a certified baseline", NeurIPS 2024 Datasets and
Benchmarks) needs no target label: average the target class probabilities of every candidate
of the pool, take the ensemble's argmax as pseudo-labels, and choose the candidate whose
predictions agree with them most often. It is the published answer to the question the
catalog study left open (``selection_catalog.md``): a criterion that ranks the candidates
better with logistic regression, where circular validation and MMD do not.

Protocol: ``selection_catalog.py``'s tasks, rows (at most 400 per domain), classifiers and
study grids (``CATALOG_GRIDS``). Every candidate (method and grid point) is fitted once on
every row, as the catalog's target accuracies are (the same fits: the script checks that its
accuracies equal the catalog parts' to the digit where those parts are present). EnsV then
chooses:

* ``auto``, over each pool of ``selection_catalog.POOLS`` (no adaptation included): the
  ensemble is the pool's;
* each single method over its own grid (the ensemble is that grid's; a method with one grid
  point is that point), as the catalog compares each method under a criterion.

The ensemble's own accuracy is reported beside it (it is not a choice, only a reference), and
the catalog's ``auto`` under circular validation, read from its parts.

Run: ``python benchmarks/model_selection/selection_ensv.py`` (parts in
``results/_selection_ensv_parts.json``, one key per task and classifier: only the choices and
accuracies, not the predictions; ``--report`` rebuilds the tables; about 15 minutes on one
thread).
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from pathlib import Path

import numpy as np
from threadpoolctl import threadpool_limits

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: _common
sys.path.insert(0, str(Path(__file__).resolve().parent))       # the studies
import _common as common  # noqa: E402
import selection_catalog as cat  # noqa: E402
import selection_study as study  # noqa: E402
from _common import progress, write_results  # noqa: E402 - by name: the house tests find them

from shiftlearn import DomainAdaptationClassifier  # noqa: E402
from shiftlearn.adaptation import FitMemory  # noqa: E402
from shiftlearn.model_selection import candidate_grid  # noqa: E402

CLASSIFIERS = ("1nn", "logreg")
TITLE = "Ensemble-agreement selection (EnsV) on the catalog's tasks"


def _parts() -> common.PartsFile:
    return common.PartsFile(common.results_dir(__file__) / "_selection_ensv_parts.json")


def _catalog_parts() -> dict:
    """``selection_catalog.py``'s parts (its 400-row run), or ``{}``."""
    return common.PartsFile(common.results_dir(__file__)
                            / "_selection_catalog_parts_r400.json").load()


def ensv_choice(proba: list[np.ndarray], pred: list[np.ndarray], classes: np.ndarray) -> int:
    """The position in ``pred`` of the candidate that agrees most with the ensemble's labels
    (the mean of ``proba``, whose columns are ``classes``); ties go to the earlier."""
    pseudo = classes[np.mean(proba, axis=0).argmax(axis=1)]
    agree = [float(np.mean(p == pseudo)) for p in pred]
    return int(np.argmax(agree))


def run_task(name: str, s: str, t: str, clf_name: str) -> dict:
    """Every candidate fitted once; EnsV's choices over each pool and each method's grid."""
    from sklearn.base import clone
    from sklearn.model_selection import ParameterGrid

    X, y, sd, yt = study.study_rows(name, s, t, 400)
    clf = study.classifiers()[clf_name]()
    classes = np.unique(y[y >= 0])
    tgt = sd < 0
    labels, pred, proba, acc = [], [], [], []
    mem = FitMemory()
    for m in cat.OURS:
        if cat.na_reason(m, clf) is not None:
            continue
        est = DomainAdaptationClassifier(None, clf, memory=mem)
        for p in ParameterGrid(candidate_grid([m], grids=cat.CATALOG_GRIDS)):
            model = clone(est).set_params(**p)
            labels.append(m)
            try:
                model.fit(X, y, sample_domain=sd)
                yp = np.asarray(model.predict(X[tgt]))
                pr = np.zeros((int(tgt.sum()), classes.size))
                pr[:, np.searchsorted(classes, model.classes_)] = model.predict_proba(X[tgt])
            except Exception:  # noqa: BLE001 - a failing candidate is left out, as NaN
                pred.append(None)
                proba.append(None)
                acc.append(float("nan"))
                continue
            pred.append(yp)
            proba.append(pr)
            acc.append(float(np.mean(yp == yt)))
    mem.clear()
    ok = [i for i, p in enumerate(pred) if p is not None]
    out: dict = {"labels": labels, "target": acc, "pools": {}, "methods": {}}
    for pool, members in cat.POOLS.items():
        idx = [i for i in ok if labels[i] == "none" or members is None or labels[i] in members]
        j = idx[ensv_choice([proba[i] for i in idx], [pred[i] for i in idx], classes)]
        ens = classes[np.mean([proba[i] for i in idx], axis=0).argmax(axis=1)]
        out["pools"][pool] = {"choice": labels[j], "index": j, "target": acc[j],
                              "ensemble": float(np.mean(ens == yt))}
    for m in dict.fromkeys(labels[i] for i in ok):
        idx = [i for i in ok if labels[i] == m]
        j = idx[ensv_choice([proba[i] for i in idx], [pred[i] for i in idx], classes)]
        out["methods"][m] = acc[j]
    return out


def _catalog_check(parts: dict) -> float:
    """The largest difference between this script's target accuracies and the catalog parts'
    for the same candidates (NaN when no catalog part is present)."""
    store = _catalog_parts()
    diffs = []
    for key, part in parts.items():
        if key not in store:
            continue
        theirs = store[key]["ours"]
        # methods added to ADAPTERS after the catalog's run are not in its parts
        mine = [a for lab, a in zip(part["labels"], part["target"], strict=True)
                if lab in set(theirs["labels"])]
        if len(mine) == len(theirs["target"]):
            a = np.asarray(mine, dtype=float)
            b = np.asarray(theirs["target"], dtype=float)
            both = np.isfinite(a) & np.isfinite(b)
            diffs.append(float(np.max(np.abs(a[both] - b[both]))))
    return max(diffs) if diffs else float("nan")


def _catalog_circular(clf: str) -> float | None:
    """The catalog's ``auto`` under circular validation (mean %) from its published results
    (``selection_catalog.json`` beside this script, so that a rerun elsewhere reads the same)."""
    path = Path(__file__).resolve().parent / "results" / "selection_catalog.json"
    if not path.exists():
        return None
    table = common.read_results(path)["results"][clf]["table"]
    return next(float(r["circular"]) for r in table if r["method"].startswith("auto"))


def report(parts: dict, machine: dict, wall: float) -> None:
    sections = ["\n\n".join(p.strip() for p in __doc__.split("\n\n")[1:5])]
    data = {}
    for clf in CLASSIFIERS:
        keys = sorted(k for k in parts if k.endswith("|" + clf))
        if not keys:
            continue
        raw = [parts[k]["target"][0] for k in keys]
        rows = []
        for pool in cat.POOLS:
            a = [parts[k]["pools"][pool]["target"] for k in keys]
            e = [parts[k]["pools"][pool]["ensemble"] for k in keys]
            below = sum(x < r - 0.01 for x, r in zip(a, raw, strict=True))
            rows.append({"pool": pool, "auto, EnsV %": 100 * np.mean(a),
                         "ensemble (reference) %": 100 * np.mean(e),
                         "tasks > 1 point below no adaptation": below})
        circ = _catalog_circular(clf)
        singles = sorted(((m, 100 * np.mean([parts[k]["methods"][m] for k in keys]))
                          for m in parts[keys[0]]["methods"]
                          if all(m in parts[k]["methods"] for k in keys)),
                         key=lambda mv: -mv[1])
        chosen: dict = {}
        for k in keys:
            c = parts[k]["pools"]["whole catalog"]["choice"]
            chosen[c] = chosen.get(c, 0) + 1
        text = (f"## classifier: {clf} ({len(keys)} tasks)\n\nNo adaptation: "
                f"{100 * np.mean(raw):.2f}%."
                + (f" The catalog's `auto` under circular validation (its best criterion): "
                   f"{circ:.2f}%." if circ is not None else "")
                + "\n\n" + common.markdown_table(rows)
                + "\n\nEach single method over its own grid, chosen by EnsV (mean target "
                "accuracy %, best first): "
                + ", ".join(f"{m} {v:.2f}" for m, v in singles)
                + ".\n\nWhat EnsV chose over the whole catalog: "
                + ", ".join(f"{m} {n}" for m, n in sorted(chosen.items(), key=lambda x: -x[1]))
                + ".")
        sections.append(text)
        data[clf] = {"pools": rows, "singles": dict(singles), "circular": circ}
    # the catalog's parts are not published: the check runs where they are (not in the JSON,
    # so that a rerun without them regenerates the same results)
    check = _catalog_check(parts)
    sections.append(("Largest difference between these target accuracies and the catalog "
                     f"parts' for the same candidates: {check:.3g}." if np.isfinite(check) else
                     "The catalog's parts (not published) are absent: its target accuracies "
                     "were not compared with these.")
                    + f"\n\nWall time of the run that made the parts: {wall:.0f} s on one "
                    "thread.")
    body = "\n\n".join(sections)
    print(body)
    write_results("selection_ensv", TITLE, body, {**data, "wall_s": wall}, machine)


@progress()
def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--report", action="store_true", help="rebuild the tables from the parts")
    args = ap.parse_args(argv)
    machine = common.header(TITLE)
    store = _parts()
    units = [(clf, *task) for clf in CLASSIFIERS for task in study.tasks(False)]
    if not args.report:
        with threadpool_limits(1), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for clf, name, s, t in common.track(units, "tasks"):
                key = f"{name}:{s}->{t}|{clf}"
                if key in store:
                    continue
                t0 = time.perf_counter()
                res = run_task(name, s, t, clf)
                res["wall_s"] = time.perf_counter() - t0
                store.save(key, res)
                print(f"  {key} done in {res['wall_s']:.0f} s", flush=True)
    parts = store.load()
    wall = sum(p["wall_s"] for p in parts.values())
    report(parts, machine, wall)


if __name__ == "__main__":
    main()
