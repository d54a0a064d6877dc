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
default order of the candidates), ``--tasks office`` the twelve (the published results, about 30
minutes; the report then gives the four and the other eight apart), ``--tasks others`` MNIST<->USPS
and MSRC<->VOC, ``--tasks all`` the sixteen. ``--tasks digits8`` and ``--tasks ucishift`` are the
two sets of tasks no decision had used, built to test the one-label rules of
``docs/dev/fewlabels.md`` (scikit-learn's bundled UCI digits against USPS and MNIST at 8 x 8,
and against transformed copies of itself; under a minute each).

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
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "model_selection"))  # the rows
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
#: the other real data sets' tasks (``selection_study.py``'s rows: at most 400 per domain)
OTHER_TASKS = {"mnist->usps": "mnist_usps", "usps->mnist": "mnist_usps",
               "msrc->voc": "msrc_voc", "voc->msrc": "msrc_voc"}
OFFICE_TASKS = tuple(f"{a}-{b}" for a in DOMAINS for b in DOMAINS if a != b)
#: tasks no decision had used, built to test the one-label rule (``docs/dev/fewlabels.md``):
#: scikit-learn's bundled UCI digits against USPS and MNIST brought to 8 x 8
DIGITS8_TASKS = ("uci->usps8", "usps8->uci", "uci->mnist8", "mnist8->uci")
#: the second fresh set: two disjoint halves of UCI digits, the target half transformed
UCISHIFT_TASKS = ("uci->uci-shift", "uci->uci-rot20", "uci->uci-blur", "uci->uci-dilate")
#: every task that is not an Office pair, and its group
FRESH_TASKS = (*DIGITS8_TASKS, *UCISHIFT_TASKS)


def _parts() -> PartsFile:
    return PartsFile(results_dir(__file__) / "_fewlabels_select_parts.json")


def digits8(domain: str) -> tuple[np.ndarray, np.ndarray]:
    """``X, y`` of one 8 x 8 digits domain: ``"uci"`` (scikit-learn's ``load_digits``, counts
    0..16 scaled to [0, 1]) or ``"usps8"`` / ``"mnist8"`` (the 16 x 16 images of
    ``load_mnist_usps`` averaged over 2 x 2 blocks; its labels 1..10 are the digits 0..9)."""
    if domain == "uci":
        from sklearn.datasets import load_digits

        d = load_digits()
        return d.data / 16.0, d.target.astype(np.int64)
    from shiftlearn.datasets import load_mnist_usps

    X, y = load_mnist_usps(preprocessing="none").get(domain.removesuffix("8"))
    return X.reshape(-1, 8, 2, 8, 2).mean(axis=(2, 4)).reshape(-1, 64), y - 1


def digits8_rows(task: str, max_rows: int = 400, seed: int = 0):
    """``X, sample_domain, y_true`` of a task of :data:`DIGITS8_TASKS`: at most ``max_rows``
    seeded rows per domain (source 1, target -2), every row scaled to unit norm."""
    from sklearn.preprocessing import normalize

    rng = np.random.default_rng(seed)
    parts = []
    for name, code in zip(task.split("->"), (1, -2), strict=True):
        X, y = digits8(name)
        keep = np.sort(rng.choice(X.shape[0], min(max_rows, X.shape[0]), replace=False))
        parts.append((X[keep], y[keep], np.full(keep.size, code, dtype=np.int64)))
    X, y, sd = (np.concatenate(a) for a in zip(*parts, strict=True))
    return normalize(X), sd, y


def _transform(images: np.ndarray, how: str) -> np.ndarray:
    """8 x 8 images shifted, rotated, blurred or dilated as :data:`UCISHIFT_TASKS` say."""
    from scipy import ndimage

    if how == "shift":      # one pixel to the right, zeros coming in
        out = np.zeros_like(images)
        out[:, :, 1:] = images[:, :, :-1]
        return out
    if how == "rot20":
        return ndimage.rotate(images, 20, axes=(1, 2), reshape=False, order=1)
    if how == "blur":
        return ndimage.gaussian_filter(images, sigma=(0, 0.8, 0.8))
    return ndimage.grey_dilation(images, size=(1, 2, 2))


def ucishift_rows(task: str, max_rows: int = 400, seed: int = 0):
    """``X, sample_domain, y_true`` of a task of :data:`UCISHIFT_TASKS`: UCI digits split in
    two disjoint seeded halves, the target half transformed, at most ``max_rows`` rows per
    domain, every row scaled to unit norm."""
    from sklearn.preprocessing import normalize

    X, y = digits8("uci")
    rng = np.random.default_rng(seed)
    perm = rng.permutation(X.shape[0])
    half = X.shape[0] // 2
    s, t = perm[:half][:max_rows], perm[half:][:max_rows]
    Xt = _transform(X[t].reshape(-1, 8, 8), task.rsplit("-", 1)[1]).reshape(-1, 64)
    sd = np.r_[np.ones(s.size, np.int64), np.full(t.size, -2, np.int64)]
    return normalize(np.vstack([X[s], np.clip(Xt, 0, None)])), sd, np.r_[y[s], y[t]]


def task_rows(task: str):
    """``X, sample_domain, y_true`` (every row's label) of an Office letter pair (``W-C``, all
    rows), of a task of :data:`OTHER_TASKS` (the selection study's seeded subsample) or of
    :data:`DIGITS8_TASKS`."""
    if task in DIGITS8_TASKS:
        return digits8_rows(task)
    if task in UCISHIFT_TASKS:
        return ucishift_rows(task)
    if task in OTHER_TASKS:
        import selection_study as study

        s, t = task.split("->")
        X, y, sd, yt = study.study_rows(OTHER_TASKS[task], s, t, 400)
        y_true = y.copy()
        y_true[sd < 0] = yt
        return X, sd, y_true
    from shiftlearn.datasets import load_office_caltech

    s, t = task.split("-")
    X, _, sd, y_true = load_office_caltech().pack(DOMAINS[s], DOMAINS[t],
                                                  return_masked_labels=True)
    return X, sd, y_true


def run_task(task: str, repeats: int) -> dict:
    """Every candidate and ``auto`` on one task: accuracies per budget and draw."""
    from sklearn.base import clone

    from shiftlearn.model_selection import (
        FEWLABEL_DEFAULT,
        FewLabelSelector,
        make_few_label_candidate,
    )

    X, sd, y_true = task_rows(task)
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
            # the choice by cross-validation at every budget (leave-one-out at one label per
            # class): its tables give every rule below
            t0 = time.perf_counter()
            sel = FewLabelSelector(single_label="cv").fit(X, y, sd)
            a = 100.0 * float(np.mean(sel.predict(X[test]) == y_true[test]))
            sec = time.perf_counter() - t0
            out["accuracy"].setdefault(f"{RULES['choice1']}|{k}", []).append(a)
            out.setdefault("chosen_choice1", {}).setdefault(str(k), []).append(
                sel.best_method_)
            # auto as the library has it: the one-label default at one label per class (m + 1
            # fits); above, the same choice as the cross-validation's (single_label matters
            # only with a class of one label)
            if k == 1:
                t0 = time.perf_counter()
                auto = FewLabelSelector().fit(X, y, sd)
                a = 100.0 * float(np.mean(auto.predict(X[test]) == y_true[test]))
                sec = time.perf_counter() - t0
            else:
                auto = sel
            out["seconds"]["auto"] = out["seconds"].get("auto", 0.0) + sec
            out["accuracy"].setdefault(f"auto|{k}", []).append(a)
            out["chosen"].setdefault(str(k), []).append(auto.best_method_)
            out["estimate"].setdefault(str(k), []).append(100.0 * auto.estimate_.accuracy)
            # every candidate's cross-validated mean and standard error: the one-standard-
            # error rule (margin="se") is read from them with the same fits
            out.setdefault("cv", {}).setdefault(str(k), []).append(
                {"mean": sel.cv_results_["mean_test_score"],
                 "se": sel.cv_results_["se_test_score"],
                 "rows": sel.cv_results_["row_test_scores"]})
            for name, rule in (("se", _se_rule), ("paired", _paired_rule),
                               ("prior1", _prior1_rule)):
                pick = (sel.best_method_ if name == "prior1" and k > 1
                        else FEWLABEL_DEFAULT[rule(sel.cv_results_)])
                out.setdefault(f"chosen_{name}", {}).setdefault(str(k), []).append(pick)
                out["accuracy"].setdefault(f"{RULES[name]}|{k}", []).append(
                    out["accuracy"][f"{pick}|{k}"][-1])
    out["single_label_default"] = True
    return out


def _se_rule(res: dict, order=None) -> int:
    """The candidate ``FewLabelSelector(margin="se")`` chooses from the same table: the
    earliest whose mean is within the best's standard error of the best; "earliest" and the
    first of the best in ``order`` (candidate positions; default: the table's)."""
    order = list(range(len(res["mean_test_score"]))) if order is None else order
    mean = np.array([-np.inf if v is None or not np.isfinite(v) else v
                     for v in res["mean_test_score"]])
    top = max(order, key=lambda i: mean[i])
    se = res["se_test_score"][top]
    m = 0.0 if se is None or not np.isfinite(se) else float(se)
    return next(i for i in order if mean[i] >= mean[top] - m - 1e-12)


def _paired_rule(res: dict) -> int:
    """The paired one-standard-error rule from the same table: the earliest candidate whose
    mean difference from the best, row by row over the labeled target rows, is within the
    standard error of those differences."""
    rows = np.array([[np.nan] * len(res["row_test_scores"][0]) if r is None else r
                     for r in res["row_test_scores"]], dtype=float)
    mean = np.where(np.isfinite(rows).all(axis=1), rows.mean(axis=1), -np.inf)
    top = int(np.argmax(mean))
    m = rows.shape[1]
    for i in range(rows.shape[0]):
        if not np.isfinite(mean[i]):
            continue
        d = rows[top] - rows[i]
        se = float(d.std(ddof=1) / np.sqrt(m)) if m > 1 else 0.0
        if d.mean() <= se + 1e-12:
            return i
    return top


#: the order of the one-label rule: the best single method at one label per class on the
#: tasks that set the default order (pooled-weighted) first, then the default order
PRIOR1_FIRST = "pooled-weighted"


def _prior1_rule(res: dict) -> int:
    """The one-label rule of ``docs/dev/fewlabels.md`` (applied at one label per class only):
    the one-standard-error rule in the order led by :data:`PRIOR1_FIRST`."""
    from shiftlearn.model_selection import FEWLABEL_DEFAULT

    first = FEWLABEL_DEFAULT.index(PRIOR1_FIRST)
    return _se_rule(res, [first] + [i for i in range(len(FEWLABEL_DEFAULT)) if i != first])


#: the rules read from ``auto``'s cross-validation tables, and their rows in the tables
RULES = {"se": "auto (margin=se)", "paired": "auto (paired)",
         "prior1": "auto (prior at one label)", "choice1": "auto (choice at one label)"}


def _backfill_one_label(part: dict) -> None:
    """A part made before ``FewLabelSelector`` fitted its one-label default: its ``auto`` was
    the choice by leave-one-out at one label per class, which becomes ``auto (choice at one
    label)``; ``auto`` at one label becomes pooled-weighted's fit, with its leave-one-out
    estimate from the same tables (what ``FewLabelSelector()`` now does: same model, same
    folds). The first one-label rule is read from the tables too. Nothing changes at the
    larger budgets."""
    from shiftlearn.model_selection import FEWLABEL_DEFAULT, SINGLE_LABEL_DEFAULT

    if "chosen_prior1" not in part:
        part["chosen_prior1"] = {}
        for k in BUDGETS:
            picks = [FEWLABEL_DEFAULT[_prior1_rule({"mean_test_score": cv["mean"],
                                                   "se_test_score": cv["se"]})]
                     if k == 1 else chosen
                     for cv, chosen in zip(part["cv"][str(k)], part["chosen"][str(k)],
                                           strict=True)]
            part["chosen_prior1"][str(k)] = picks
            part["accuracy"][f"{RULES['prior1']}|{k}"] = [
                part["accuracy"][f"{p}|{k}"][i] if k == 1 else part["accuracy"][f"auto|{k}"][i]
                for i, p in enumerate(picks)]
    if part.get("single_label_default"):
        return
    part["chosen_choice1"] = {k: list(v) for k, v in part["chosen"].items()}
    for k in BUDGETS:
        part["accuracy"][f"{RULES['choice1']}|{k}"] = list(part["accuracy"][f"auto|{k}"])
    i = FEWLABEL_DEFAULT.index(SINGLE_LABEL_DEFAULT)
    part["accuracy"]["auto|1"] = list(part["accuracy"][f"{SINGLE_LABEL_DEFAULT}|1"])
    part["chosen"]["1"] = [SINGLE_LABEL_DEFAULT] * len(part["chosen"]["1"])
    part["estimate"]["1"] = [100.0 * cv["mean"][i] for cv in part["cv"]["1"]]
    part["seconds_note"] = True
    part["single_label_default"] = True


def report(parts: dict, tasks: list[str], repeats: int, machine: dict, wall: float) -> None:
    from collections import Counter

    from shiftlearn.model_selection import FEWLABEL_DEFAULT

    for t in tasks:
        _backfill_one_label(parts[t])
    rules = [RULES["choice1"], RULES["se"]] + ([RULES["paired"]] if all(
        "chosen_paired" in parts[t] for t in tasks) else []) + [RULES["prior1"]]
    methods = ["auto", *rules, *FEWLABEL_DEFAULT]
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
        for name in ("auto", *rules):
            a = float(np.mean(acc[(name, k)]))
            verdict = "at or above" if a >= means[best] - 1e-9 else "below"
            lines.append(f"* k={k}: {name} {a:.2f} is {verdict} the best single method ({best} "
                         f"{means[best]:.2f}); target only {means['target-only']:.1f}, source "
                         f"only {means['source-only']:.1f}.")
    held = [t for t in tasks if t not in ORDER_TASKS]
    split_text = ""
    if held and len(held) < len(tasks) and all(t in OFFICE_TASKS for t in tasks):
        split_rows = []
        for label, group in ((f"the {len(tasks) - len(held)} that set the default order",
                              [t for t in tasks if t in ORDER_TASKS]),
                             (f"the other {len(held)} (held out)", held)):
            for name in ("auto", *rules):
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
    chosen_rule = {name: {k: Counter(c for t in tasks for c in parts[t][f"chosen_{key}"][str(k)])
                          for k in BUDGETS}
                   for key, name in RULES.items() if name in rules}
    est = {k: float(np.mean([e for t in tasks for e in parts[t]["estimate"][str(k)]]))
           for k in BUDGETS}
    per_task = []
    for t in tasks:
        row = {"task": _shown(t)}
        for k in BUDGETS:
            for m in ("auto", *rules, "FeatureAugmentation", "target-only", "source-only"):
                row[f"{m} k={k}"] = round(float(np.mean(parts[t]["accuracy"][f"{m}|{k}"])), 1)
        per_task.append(row)
    body = (
        f"Mean target accuracy (%) on the unlabeled target rows over {len(tasks)} task(s) "
        f"({', '.join(_shown(t) for t in tasks)}) x {repeats} seeded draws of k "
        "labeled target rows per class (the draws of `fewlabels_study.py`; sd over tasks and "
        "draws together). Every candidate uses `LogisticRegression()`; `auto` is "
        "`FewLabelSelector()`: at k=3 and 10 its default candidates, chosen by stratified "
        "cross-validation over the labeled target rows and refitted on every row; at k=1 (a "
        "class with a single label) no choice, its one-label default (pooled-weighted) fitted. "
        "`auto (choice at one label)` is `FewLabelSelector(single_label=\"cv\")`, choosing by "
        "leave-one-out at k=1 too (the library's behaviour before the one-label default; the "
        "same as `auto` at k=3 and 10). The rules below are read from its cross-validation "
        "tables. `auto (margin=se)` is `FewLabelSelector(margin=\"se\", single_label=\"cv\")`: "
        "the earliest candidate (in the default order, the earlier study's best first) within "
        "one standard error of the best."
        + (" `auto (paired)` is read from them too: the earliest candidate whose mean "
           "difference from the best, row by row over the labeled target rows, is within the "
           "standard error of those differences (the paired one-standard-error rule)."
           if "auto (paired)" in rules else "")
        + " `auto (prior at one label)` is the rule of `docs/dev/fewlabels.md` read from the "
        "same tables: at one label per class the earliest candidate within one standard error "
        "of the best, in the default order with pooled-weighted moved first; `auto` itself at "
        "3 and 10 (tested before the one-label default, which replaced it)."
        + ("" if not any(p.get("seconds_note") for p in parts.values()) else
           " `auto`'s seconds on the tasks run before the one-label default are those of the "
           "choice by leave-one-out at k=1.")
        + ("" if not any(t in DIGITS8_TASKS for t in tasks) else
           " UCI digits <-> USPS, MNIST: scikit-learn's `load_digits` against the 16 x 16 "
           "images averaged to 8 x 8, at most 400 seeded rows per domain, unit-norm rows "
           "(`digits8_rows`); no decision of the library had used these tasks.")
        + ("" if not any(t in UCISHIFT_TASKS for t in tasks) else
           " UCI digits shifted, rotated, blurred, dilated: two disjoint seeded halves of "
           "`load_digits`, the target half transformed (`ucishift_rows`), at most 400 rows per "
           "domain, unit-norm rows; no decision of the library had used these tasks.")
        + ("" if not any(t in OTHER_TASKS for t in tasks) else
           " MNIST<->USPS and MSRC<->VOC use the selection study's rows (`selection_study.py`:"
           " a seeded subsample of at most 400 rows per domain).")
        + "\n\n"
        + ("" if len(tasks) == 12 or not all(t in OFFICE_TASKS for t in tasks) else
           f"Subsampled: {len(tasks)} of the twelve Office tasks. The script's default is two "
           "(W->C, D->A), to stay within ten minutes on one core; `--tasks office` runs the "
           "twelve.\n\n")
        + markdown_table(table, floatfmt=".1f")
        + "\n\n" + "\n".join(lines) + split_text
        + "\n\nWhat auto chose (over the tasks and draws): "
        + "; ".join(f"k={k}: " + ", ".join(f"{m} {n}" for m, n in chosen[k].most_common())
                    for k in BUDGETS)
        + "".join(
            f". {name}: " + "; ".join(
                f"k={k}: " + ", ".join(f"{m} {n}" for m, n in counts[k].most_common())
                for k in BUDGETS)
            for name, counts in chosen_rule.items())
        + ".\n\nauto's own estimate (its cross-validated accuracy on the labeled target rows, "
        "mean over tasks and draws; optimistic, since the same labels chose): "
        + ", ".join(f"k={k}: {est[k]:.1f}" for k in BUDGETS)
        + ".\n\nPer task (mean over the draws):\n\n" + markdown_table(per_task, floatfmt=".1f")
        + f"\n\nWall time of the run that made the parts: {wall:.0f} s on one thread.")
    print(body)
    name, title = _results_name(tasks)
    write_results(name, title, body, {"tasks": tasks, "budgets": list(BUDGETS), "repeats": repeats,
                         "parts": {t: parts[t] for t in tasks}, "wall_s": wall}, machine)


def _shown(task: str) -> str:
    """A task as the tables show it: ``W->C``, ``mnist->usps``."""
    return task if task in OTHER_TASKS or task in FRESH_TASKS else task.replace("-", "->")


def _results_name(tasks: list[str]) -> tuple[str, str]:
    """The results file and title: Office only, the other data sets only, or both."""
    if all(t in OFFICE_TASKS for t in tasks):
        return "fewlabels_select", "auto among the few-labels methods on Office+Caltech SURF"
    if all(t in DIGITS8_TASKS for t in tasks):
        return ("fewlabels_select_digits8",
                "auto among the few-labels methods on UCI digits <-> USPS, MNIST (8 x 8)")
    if all(t in UCISHIFT_TASKS for t in tasks):
        return ("fewlabels_select_ucishift",
                "auto among the few-labels methods on UCI digits shifted, rotated, blurred, "
                "dilated")
    if not any(t in OFFICE_TASKS for t in tasks):
        return ("fewlabels_select_others",
                "auto among the few-labels methods on MNIST<->USPS and MSRC<->VOC")
    return "fewlabels_select_all", "auto among the few-labels methods on the real data sets"


def _tasks(text: str) -> list[str]:
    groups = {"office": list(OFFICE_TASKS), "others": list(OTHER_TASKS),
              "all": [*OFFICE_TASKS, *OTHER_TASKS], "digits8": list(DIGITS8_TASKS),
              "ucishift": list(UCISHIFT_TASKS)}
    if text in groups:
        return groups[text]
    tasks = [t.strip() for t in text.split(",") if t.strip()]
    bad = [t for t in tasks if t not in (*OFFICE_TASKS, *OTHER_TASKS, *FRESH_TASKS)]
    if bad:
        raise SystemExit(f"unknown task(s) {bad}: Office letter pairs such as W-C, "
                         f"{', '.join((*OTHER_TASKS, *FRESH_TASKS))}, or office, others, "
                         "all, digits8, ucishift")
    return tasks


@progress()
def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tasks", default=",".join(DEFAULT_TASKS),
                    help="comma-separated Office S-T letters (C, A, W, D) or "
                         f"{', '.join(OTHER_TASKS)}; or office (the twelve Office tasks), "
                         "others (the four of MNIST<->USPS and MSRC<->VOC), all, "
                         "digits8 (UCI digits <-> USPS, MNIST at 8 x 8) or ucishift (UCI "
                         "digits transformed): the one-label tests")
    ap.add_argument("--repeats", type=int, default=REPEATS)
    ap.add_argument("--report", action="store_true", help="rebuild the tables from the parts")
    args = ap.parse_args(argv)
    from threadpoolctl import threadpool_limits

    tasks = _tasks(args.tasks)
    machine = header(_results_name(tasks)[1])
    store = _parts()
    if not args.report:
        with threadpool_limits(1):
            for t in track(tasks, "tasks"):
                key = f"{t}|{args.repeats}"
                if key in store:
                    continue
                t0 = time.perf_counter()
                res = run_task(t, args.repeats)
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
