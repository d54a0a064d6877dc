"""``auto`` (FewLabelSelector) beside each of its candidates with 1, 3, 10 target labels per class.

On Office+Caltech SURF, the draws of ``fewlabels_study.py`` (five seeded draws of ``k`` labeled
target rows per class, all but one of a class's rows when it has fewer than ``k + 1``; every
other target row unlabeled and scored): each candidate of ``FewLabelSelector``'s default list
fitted on every row (source rows, the labeled and the unlabeled target rows), and ``auto``,
the selector choosing among them by cross-validation over the labeled target rows only
(leave-one-out with one label per class, stratified folds otherwise), refitted on every row.
Every candidate uses ``LogisticRegression()``. The selector's own estimate of its accuracy
(optimistic: the same labels chose) is recorded beside the accuracy on the unlabeled rows.

Resumable per task (``results/_fewlabels_select_parts.json``); the tables are rebuilt from
the parts (``--report``). By default two of the twelve tasks (W->C and D->A, the two smaller
of the four tasks of ``fewlabels_study.py``), to stay within ten minutes on one core;
``--tasks C-A,A-W,W-C,D-A`` runs the four of ``fewlabels_study.py`` (whose results set the
default order of the candidates), ``--tasks all`` the twelve (the published results, about 30
minutes; the report then gives the four and the other eight apart).

    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 python benchmarks/fewlabels/fewlabels_select.py
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: _common
sys.path.insert(0, str(Path(__file__).resolve().parent))       # fewlabels_study: the draws
from _common import (  # noqa: E402
    PartsFile,
    header,
    markdown_table,
    progress,
    results_dir,
    track,
    write_results,
)
from fewlabels_study import draw_labeled  # noqa: E402

BUDGETS = (1, 3, 10)
REPEATS = 5
DEFAULT_TASKS = ("W-C", "D-A")
#: the tasks of ``fewlabels_study.py``, whose results set ``FEWLABEL_DEFAULT``'s order
ORDER_TASKS = ("C-A", "A-W", "W-C", "D-A")
DOMAINS = {"C": "caltech", "A": "amazon", "W": "webcam", "D": "dslr"}


def _parts() -> PartsFile:
    return PartsFile(results_dir(__file__) / "_fewlabels_select_parts.json")


def run_task(ds, s: str, t: str, repeats: int) -> dict:
    """Every candidate and ``auto`` on one task: accuracies per budget and draw."""
    from sklearn.base import clone

    from shiftlearn.model_selection import (
        FEWLABEL_DEFAULT,
        FewLabelSelector,
        make_few_label_candidate,
    )

    X, _, sd, y_true = ds.pack(DOMAINS[s], DOMAINS[t], return_masked_labels=True)
    src = sd > 0
    tgt_rows = np.flatnonzero(~src)
    out: dict = {"accuracy": {}, "chosen": {}, "estimate": {}, "seconds": {}}
    for k in BUDGETS:
        for rep in range(repeats):
            rng = np.random.default_rng([k, rep])
            lab = np.zeros(X.shape[0], dtype=bool)
            lab[tgt_rows[draw_labeled(y_true[tgt_rows], k, rng)]] = True
            test = ~src & ~lab
            y = np.where(src | lab, y_true, -1)
            for m in FEWLABEL_DEFAULT:
                t0 = time.perf_counter()
                est = clone(make_few_label_candidate(m)).fit(X, y, sd)
                a = 100.0 * float(np.mean(est.predict(X[test]) == y_true[test]))
                out["accuracy"].setdefault(f"{m}|{k}", []).append(a)
                out["seconds"][m] = out["seconds"].get(m, 0.0) + time.perf_counter() - t0
            t0 = time.perf_counter()
            sel = FewLabelSelector().fit(X, y, sd)
            a = 100.0 * float(np.mean(sel.predict(X[test]) == y_true[test]))
            out["seconds"]["auto"] = out["seconds"].get("auto", 0.0) + time.perf_counter() - t0
            out["accuracy"].setdefault(f"auto|{k}", []).append(a)
            out["chosen"].setdefault(str(k), []).append(sel.best_method_)
            out["estimate"].setdefault(str(k), []).append(100.0 * sel.estimate_.accuracy)
            # every candidate's cross-validated mean and standard error: the one-standard-
            # error rule (margin="se") is read from them with the same fits
            out.setdefault("cv", {}).setdefault(str(k), []).append(
                {"mean": sel.cv_results_["mean_test_score"],
                 "se": sel.cv_results_["se_test_score"]})
            se_pick = _se_rule(sel.cv_results_)
            out["chosen_se"] = out.get("chosen_se", {})
            out["chosen_se"].setdefault(str(k), []).append(FEWLABEL_DEFAULT[se_pick])
            out["accuracy"].setdefault(f"auto (margin=se)|{k}", []).append(
                out["accuracy"][f"{FEWLABEL_DEFAULT[se_pick]}|{k}"][-1])
    return out


def _se_rule(res: dict) -> int:
    """The candidate ``FewLabelSelector(margin="se")`` chooses from the same table: the
    earliest whose mean is within the best's standard error of the best."""
    mean = np.array([-np.inf if v is None or not np.isfinite(v) else v
                     for v in res["mean_test_score"]])
    top = int(np.argmax(mean))
    se = res["se_test_score"][top]
    m = 0.0 if se is None or not np.isfinite(se) else float(se)
    return int(np.flatnonzero(mean >= mean[top] - m - 1e-12)[0])


def report(parts: dict, tasks: list[str], repeats: int, machine: dict, wall: float) -> None:
    from collections import Counter

    from shiftlearn.model_selection import FEWLABEL_DEFAULT

    methods = ["auto", "auto (margin=se)", *FEWLABEL_DEFAULT]
    acc = {(m, k): [a for t in tasks for a in parts[t]["accuracy"][f"{m}|{k}"]]
           for m in methods for k in BUDGETS}
    table = []
    for m in methods:
        r = {"method": m}
        for k in BUDGETS:
            v = np.asarray(acc[(m, k)])
            r[f"k={k} mean"] = round(float(v.mean()), 1)
            r[f"k={k} sd"] = round(float(v.std(ddof=1)), 1)
        # the margin rule is read from auto's fits: no seconds of its own
        r["fit+predict (s)"] = ("auto's" if m not in parts[tasks[0]]["seconds"] else
                                round(sum(parts[t]["seconds"][m] for t in tasks), 1))
        table.append(r)
    lines = []
    for k in BUDGETS:
        means = {m: float(np.mean(acc[(m, k)])) for m in FEWLABEL_DEFAULT}
        best = max(means, key=means.get)
        for name in ("auto", "auto (margin=se)"):
            a = float(np.mean(acc[(name, k)]))
            verdict = "at or above" if a >= means[best] - 1e-9 else "below"
            lines.append(f"* k={k}: {name} {a:.2f} is {verdict} the best single method ({best} "
                         f"{means[best]:.2f}); target only {means['target-only']:.1f}, source "
                         f"only {means['source-only']:.1f}.")
    held = [t for t in tasks if t not in ORDER_TASKS]
    split_text = ""
    if held and len(held) < len(tasks):
        split_rows = []
        for label, group in ((f"the {len(tasks) - len(held)} that set the default order",
                              [t for t in tasks if t in ORDER_TASKS]),
                             (f"the other {len(held)} (held out)", held)):
            for name in ("auto", "auto (margin=se)"):
                r = {"tasks": label, "method": name}
                for k in BUDGETS:
                    r[f"k={k}"] = float(np.mean([a for t in group
                                                 for a in parts[t]["accuracy"][f"{name}|{k}"]]))
                split_rows.append(r)
            r = {"tasks": label, "method": "best single method"}
            for k in BUDGETS:
                means = {m: float(np.mean([a for t in group
                                           for a in parts[t]["accuracy"][f"{m}|{k}"]]))
                         for m in FEWLABEL_DEFAULT}
                best = max(means, key=means.get)
                r[f"k={k}"] = f"{means[best]:.2f} ({best})"
            split_rows.append(r)
        split_text = (
            "\n\nThe tasks that set the default order (those of `fewlabels_study.py`) and the "
            "others, two decimals (a tie at one decimal above can hide a difference):\n\n"
            + markdown_table(split_rows))
    chosen = {k: Counter(c for t in tasks for c in parts[t]["chosen"][str(k)]) for k in BUDGETS}
    chosen_se = {k: Counter(c for t in tasks for c in parts[t]["chosen_se"][str(k)])
                 for k in BUDGETS}
    est = {k: float(np.mean([e for t in tasks for e in parts[t]["estimate"][str(k)]]))
           for k in BUDGETS}
    per_task = []
    for t in tasks:
        row = {"task": t.replace("-", "->")}
        for k in BUDGETS:
            for m in ("auto", "auto (margin=se)", "FeatureAugmentation", "target-only",
                      "source-only"):
                row[f"{m} k={k}"] = round(float(np.mean(parts[t]["accuracy"][f"{m}|{k}"])), 1)
        per_task.append(row)
    body = (
        f"Mean target accuracy (%) on the unlabeled target rows over {len(tasks)} task(s) "
        f"({', '.join(t.replace('-', '->') for t in tasks)}) x {repeats} seeded draws of k "
        "labeled target rows per class (the draws of `fewlabels_study.py`; sd over tasks and "
        "draws together). Every candidate uses `LogisticRegression()`; `auto` is "
        "`FewLabelSelector()` (its default candidates, chosen by cross-validation over the "
        "labeled target rows: leave-one-out at k=1, stratified folds at k=3 and 10), refitted "
        "on every row. `auto (margin=se)` is `FewLabelSelector(margin=\"se\")` read from the "
        "same cross-validation tables: the earliest candidate (in the default order, the "
        "earlier study's best first) within one standard error of the best.\n\n"
        + ("" if len(tasks) == 12 else
           f"Subsampled: {len(tasks)} of the twelve tasks. The script's default is two "
           "(W->C, D->A), to stay within ten minutes on one core; `--tasks all` runs the "
           "twelve.\n\n")
        + markdown_table(table, floatfmt=".1f")
        + "\n\n" + "\n".join(lines) + split_text
        + "\n\nWhat auto chose (over the tasks and draws): "
        + "; ".join(f"k={k}: " + ", ".join(f"{m} {n}" for m, n in chosen[k].most_common())
                    for k in BUDGETS)
        + ". With `margin=\"se\"`: "
        + "; ".join(f"k={k}: " + ", ".join(f"{m} {n}" for m, n in chosen_se[k].most_common())
                    for k in BUDGETS)
        + ".\n\nauto's own estimate (its cross-validated accuracy on the labeled target rows, "
        "mean over tasks and draws; optimistic, since the same labels chose): "
        + ", ".join(f"k={k}: {est[k]:.1f}" for k in BUDGETS)
        + ".\n\nPer task (mean over the draws):\n\n" + markdown_table(per_task, floatfmt=".1f")
        + f"\n\nWall time of the run that made the parts: {wall:.0f} s on one thread.")
    print(body)
    write_results("fewlabels_select", "auto among the few-labels methods on Office+Caltech SURF",
                  body, {"tasks": tasks, "budgets": list(BUDGETS), "repeats": repeats,
                         "parts": {t: parts[t] for t in tasks}, "wall_s": wall}, machine)


@progress()
def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tasks", default=",".join(DEFAULT_TASKS),
                    help="comma-separated S-T letters (C, A, W, D), or all")
    ap.add_argument("--repeats", type=int, default=REPEATS)
    ap.add_argument("--report", action="store_true", help="rebuild the tables from the parts")
    args = ap.parse_args(argv)
    from threadpoolctl import threadpool_limits

    from shiftlearn.datasets import load_office_caltech

    machine = header("auto among the few-labels methods on Office+Caltech SURF")
    tasks = ([f"{a}-{b}" for a in DOMAINS for b in DOMAINS if a != b] if args.tasks == "all"
             else [t.strip() for t in args.tasks.split(",") if t.strip()])
    store = _parts()
    if not args.report:
        ds = load_office_caltech()
        with threadpool_limits(1):
            for t in track(tasks, "tasks"):
                key = f"{t}|{args.repeats}"
                if key in store:
                    continue
                s, g = t.split("-")
                t0 = time.perf_counter()
                res = run_task(ds, s, g, args.repeats)
                res["wall_s"] = time.perf_counter() - t0
                store.save(key, res)
                print(f"  {t} done in {res['wall_s']:.0f} s", flush=True)
    data = store.load()
    missing = [t for t in tasks if f"{t}|{args.repeats}" not in data]
    if missing:
        raise SystemExit(f"no parts for {missing}; run without --report first")
    parts = {t: data[f"{t}|{args.repeats}"] for t in tasks}
    wall = sum(p["wall_s"] for p in parts.values())
    report(parts, tasks, args.repeats, machine, wall)


if __name__ == "__main__":
    main()
