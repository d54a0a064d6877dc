"""``shiftlearn generalize``'s choice against each of its candidates, on unseen domains.

The command's selector (:class:`shiftlearn.model_selection.GeneralizationSelector`, library
defaults: RBF SVM / SVR, standardised features, no tuning) sees the training domains only and
chooses among the plain SVM, the marginal-transfer paper's pooling, SCA (domain
generalization) and marginal transfer, by leave-one-domain-out (``lodo``, the default) or the
clustering-based validation split (``cluster``). Every candidate is also refitted on all the
training domains and scored on the unseen target domain(s), each predicted as one new domain:
so the table shows what each choice was worth, against every candidate and the best one in
hindsight (``best``), and the regret (best target score minus the choice's).

Data (sized for a run of about 3 minutes on one core; the sizes are in the tables):

* Office+Caltech10 SURF (``sum_zscore``, the data set's customary preprocessing: each domain
  z-scored with its own rows, the target's unlabeled rows included): each of the 4 domains held
  out in turn as the unseen target, the other 3 the training domains, every row of them
  (``OFFICE_MAX_ROWS = None``; a number subsamples each training domain, seeded); the target is
  scored on all its rows. Accuracy.
* Parkinson's telemonitoring (total_UPDRS, 16 voice features; one domain per patient),
  subsampled: ``PARK_REPS`` seeded draws of ``PARK_TEST`` held-out patients (all their
  recordings, each patient one new domain) and ``PARK_TRAIN`` of the other patients for
  training, with ``PARK_ROWS`` random recordings each (of about 140). RMSE in UPDRS points, the
  mean over held-out patients of each one's RMSE.
* Rotated ellipses (the marginal-transfer paper's synthetic task, ``make_rotated_ellipses``):
  ``ELL_REPS`` seeds, 10 training tasks of 50 points, 20 new test tasks of 100 points. Accuracy,
  the mean over test tasks.

    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 python benchmarks/generalization/generalize_choice.py
"""

from __future__ import annotations

import sys
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: _common

from _common import header, markdown_table, progress, timer, track, write_results  # noqa: E402

from shiftlearn.datasets import (  # noqa: E402
    load_office_caltech,
    load_parkinsons,
    make_rotated_ellipses,
)
from shiftlearn.model_selection import (  # noqa: E402
    GENERALIZATION_CANDIDATES,
    GeneralizationSelector,
)

OFFICE_MAX_ROWS = None
PARK_REPS, PARK_TEST, PARK_TRAIN, PARK_ROWS = 4, 6, 20, 40
ELL_REPS = 3


def _score(task: str, y, pred) -> float:
    if task == "regression":
        return float(np.sqrt(np.mean((np.asarray(y, float) - pred) ** 2)))
    return float(np.mean(np.asarray(pred) == np.asarray(y)))


def evaluate(name: str, X, y, sd, tests: list[tuple], task: str) -> dict:
    """Both selections on ``(X, y, sd)``; every candidate's target score on ``tests``
    (``[(X_t, y_t), ...]``, each one new domain)."""
    row: dict = {"split": name, "train_rows": int(len(y)), "train_domains": int(np.unique(sd).size),
                 "test_domains": len(tests), "test_rows": int(sum(len(t[1]) for t in tests))}
    with warnings.catch_warnings(), timer() as t:
        warnings.simplefilter("ignore")
        sel = GeneralizationSelector(task=task, refit_all=True, random_state=0).fit(X, y, sd)
        target = {}
        for m, est in sel.estimators_.items():
            target[m] = float(np.mean([_score(task, yt, est.predict(
                Xt, sample_domain=np.full(len(Xt), -1))) for Xt, yt in tests]))
    row["lodo_seconds"] = t()
    with warnings.catch_warnings(), timer() as t:
        warnings.simplefilter("ignore")
        cl = GeneralizationSelector(task=task, select="cluster", random_state=0).fit(X, y, sd)
    row["cluster_seconds"] = t()
    row["validation_lodo"] = {r["method"]: r["mean"] for r in sel.summary_}
    row["validation_cluster"] = {r["method"]: r["mean"] for r in cl.summary_}
    row["target"] = target
    best = (min if task == "regression" else max)(target, key=target.get)
    row["best"] = best
    for sel_name, s in (("lodo", sel), ("cluster", cl)):
        row[f"choice_{sel_name}"] = s.choice_
        score = target.get(s.choice_)
        row[f"target_{sel_name}"] = score
        row[f"regret_{sel_name}"] = (None if score is None else
                                    abs(target[best] - score))
    print({k: row[k] for k in ("split", "choice_lodo", "choice_cluster", "best")},
          {m: round(v, 4) for m, v in target.items()}, flush=True)
    return row


def office() -> list[dict]:
    ds = load_office_caltech()
    rows = []
    for tgt in track(ds.domain_names, "Office+Caltech targets"):
        srcs = [d for d in ds.domain_names if d != tgt]
        X, y, sd, yt = ds.pack(srcs, tgt, return_masked_labels=True)
        test = sd < 0
        rng = np.random.default_rng(0)
        keep = np.zeros(len(X), bool)
        for d in np.unique(sd[~test]):
            idx = np.flatnonzero(sd == d)
            keep[idx if OFFICE_MAX_ROWS is None else
                 rng.choice(idx, min(OFFICE_MAX_ROWS, idx.size), replace=False)] = True
        rows.append(evaluate(f"{'+'.join(srcs)} -> {tgt}", X[keep], y[keep], sd[keep],
                             [(X[test], yt[test])], "classification"))
    return rows


def parkinsons() -> list[dict]:
    ds = load_parkinsons()
    names = list(ds.domain_names)
    rows = []
    for rep in track(range(PARK_REPS), "Parkinson's draws"):
        rng = np.random.default_rng(rep)
        order = rng.permutation(len(names))
        test_names = [names[i] for i in order[:PARK_TEST]]
        train_names = [names[i] for i in order[PARK_TEST:PARK_TEST + PARK_TRAIN]]
        Xs, ys, sds = [], [], []
        for k, n in enumerate(train_names):
            Xd, yd = ds.domains[n][:2]
            pick = rng.choice(len(yd), min(PARK_ROWS, len(yd)), replace=False)
            Xs.append(Xd[pick])
            ys.append(yd[pick])
            sds.append(np.full(pick.size, k + 1))
        tests = [tuple(ds.domains[n][:2]) for n in test_names]
        rows.append(evaluate(f"draw {rep}: {PARK_TRAIN} patients -> {PARK_TEST} new",
                             np.vstack(Xs), np.concatenate(ys).astype(float),
                             np.concatenate(sds), tests, "regression"))
    return rows


def ellipses() -> list[dict]:
    rows = []
    for seed in track(range(ELL_REPS), "ellipse seeds"):
        X, y, sd = make_rotated_ellipses(10, 50, random_state=seed)
        Xt, yt, sdt = make_rotated_ellipses(20, 100, first_domain=1000, random_state=100 + seed)
        tests = [(Xt[sdt == d], yt[sdt == d]) for d in np.unique(sdt)]
        rows.append(evaluate(f"seed {seed}: 10 tasks -> 20 new", X, y, sd, tests,
                             "classification"))
    return rows


def _fmt(v, task):
    if v is None:
        return "–"
    return f"{100 * v:.1f}" if task == "classification" else f"{v:.3f}"


def table(rows: list[dict], task: str) -> str:
    cands = list(GENERALIZATION_CANDIDATES)
    out = []
    for r in rows:
        t = r["target"]
        out.append({"split": r["split"], "train rows": r["train_rows"],
                    "lodo choice": f"{r['choice_lodo']} ({_fmt(r['target_lodo'], task)})",
                    "cluster choice": f"{r['choice_cluster']} "
                                      f"({_fmt(r['target_cluster'], task)})",
                    **{m: _fmt(t.get(m), task) for m in cands},
                    "best": f"{r['best']} ({_fmt(t[r['best']], task)})"})
    mean = {"split": "**mean**", "train rows": "",
            "lodo choice": _fmt(np.mean([r["target_lodo"] for r in rows]), task),
            "cluster choice": _fmt(np.mean([r["target_cluster"] for r in rows
                                            if r["target_cluster"] is not None]), task),
            **{m: _fmt(np.mean([r["target"][m] for r in rows if m in r["target"]]), task)
               for m in cands},
            "best": _fmt(np.mean([r["target"][r["best"]] for r in rows]), task)}
    return markdown_table(out + [mean])


def study(rows: list[dict], task: str) -> str:
    """The study format: one row per way of choosing, its mean target score over the splits
    (the selection by each criterion, each candidate always, the best in hindsight)."""
    cands = list(GENERALIZATION_CANDIDATES)

    def mean(vals):
        vals = [v for v in vals if v is not None]
        return _fmt(float(np.mean(vals)), task) if vals else "–"

    out = [{"method": "generalize, --select lodo (default)",
            "mean target score": mean([r["target_lodo"] for r in rows])},
           {"method": "generalize, --select cluster",
            "mean target score": mean([r["target_cluster"] for r in rows])}]
    out += [{"method": f"always {m}", "mean target score": mean([r["target"].get(m)
                                                                  for r in rows])}
            for m in cands]
    out.append({"method": "oracle (the best candidate of each split, in hindsight)",
                "mean target score": mean([r["target"][r["best"]] for r in rows])})
    return markdown_table(out)


@progress()
def main(argv=None):
    machine = header("generalize's choice against its candidates on unseen domains")
    parts = {}
    with timer() as total:
        for key, fn in (("office", office), ("parkinsons", parkinsons),
                        ("ellipses", ellipses)):
            with timer() as t:
                parts[key] = {"rows": fn()}
            parts[key]["seconds"] = t()
    seconds = total()
    units = {"office": "target accuracy (%)", "parkinsons": "target RMSE (UPDRS points; "
             "smaller is better)", "ellipses": "target accuracy (%), mean over the 20 new tasks"}
    titles = {"office": "Office+Caltech10 SURF, leave one domain out as the unseen target",
              "parkinsons": "Parkinson's telemonitoring, held-out patients (regression)",
              "ellipses": "Rotated ellipses (Blanchard et al.'s synthetic task)"}
    body = [f"Each cell: the {{unit}} of a model fitted on the training domains only; "
            "`lodo choice` / `cluster choice`: the candidate the selector chose by "
            "leave-one-domain-out / the clustering-based split (its target score in "
            "brackets); `best`: the best candidate in hindsight. Library defaults, no "
            "tuning; Office+Caltech uses every row, Parkinson's is subsampled (sizes in the "
            "tables and the script's docstring). "
            f"Total {seconds:.0f} s on one core (OMP_NUM_THREADS=1)."]
    summary = []
    for key, part in parts.items():
        task = "regression" if key == "parkinsons" else "classification"
        rows = part["rows"]
        body += ["", f"## {titles[key]}", "", f"Unit: {units[key]}; {part['seconds']:.0f} s.",
                 "", study(rows, task), "", "Per split:", "", table(rows, task)]
        for s in ("lodo", "cluster"):
            regrets = [r[f"regret_{s}"] for r in rows if r[f"regret_{s}"] is not None]
            summary.append({"data": key, "selection": s,
                            "chose the best": f"{sum(r[f'choice_{s}'] == r['best'] for r in rows)}"
                                              f" of {len(rows)}",
                            "mean regret": _fmt(float(np.mean(regrets)), task),
                            "chose pooling or plain": sum(r[f"choice_{s}"] in ("plain", "pooling")
                                                          for r in rows)})
    body[0] = body[0].replace("{unit}", "target score")
    body += ["", "## How often the choice was the best candidate", "",
             "Regret: the best candidate's target score minus the choice's (accuracy points "
             "in %, RMSE in UPDRS points).", "", markdown_table(summary)]
    write_results("generalize_choice", "generalize's choice against its candidates on unseen "
                  "domains", "\n".join(body), {"parts": parts, "summary": summary,
                                               "seconds": seconds}, machine)


if __name__ == "__main__":
    main()
