"""The few-labels family beside ADAPT's implementations of the same methods, on the same rows.

ADAPT (``adapt`` on PyPI) needs TensorFlow, which is never a dependency of this project, so
this script runs in a separate environment that has both ADAPT and shiftlearn::

    python3.11 -m venv ../adapt-env
    ../adapt-env/bin/pip install adapt tensorflow-cpu -e .[speed]
    OMP_NUM_THREADS=1 ../adapt-env/bin/python benchmarks/fewlabels/fewlabels_adapt.py

Three parts (and a fourth run apart, ``--part trees``), each method's fit timed on the same
rows (ADAPT's parameter-based methods take a fitted source model: its fit is counted in
ADAPT's time, since ours fits it inside ``fit``):

* ``regression``: a linear task whose target coefficients differ from the source's, in three
  shapes (n >> d, n ~ d, d >> n). RegularTransferLR: ours with ``prior_weight = lambda^2``
  solves the problem ADAPT's ``lambda_ = lambda`` states (ADAPT hands ``lambda_`` to
  ``scipy.sparse.linalg.lsqr`` as its ``damp``, which squares it), so the coefficients are
  compared, with each one's objective; ours is a direct solve, ADAPT's an iterative one that
  stops at ``lsqr``'s tolerances. FeatureAugmentation (the same augmented matrix, the same
  ``Ridge``): the largest prediction difference. TrAdaBoost.R2 and its two-stage variant:
  target RMSE (the algorithms differ in details, see the note below).
* ``office``: Office+Caltech SURF, the four tasks and seeded draws of
  ``fewlabels_study.py`` (1, 3 and 10 labeled target rows per class), ``LogisticRegression``
  as every method's classifier: accuracy on the unlabeled target rows, ours and ADAPT's.
* ``paper``: the multi-task boosting paper's monotone-shift pair (``boosting_synthetic.py``'s
  protocol, fewer seeds): multi-task boosting beside TrAdaBoost, ours and ADAPT's, with the
  same depth-3 trees; ours also with ``target_share=0.5`` (its learners see the labeled target
  rows at half of the weight), which the office part runs with its weak learner too.
* ``trees`` (``--part trees``, written to ``fewlabels_adapt_trees``; about 20 minutes): do
  transfer forests add to the family? ADAPT's ``TransferForestClassifier`` (Segev et al.
  2017) on the office draws, beside forests without transfer and our FeatureAugmentation.

The implementations are not the same algorithm everywhere, and the table says so rather than
calling a difference an error: ADAPT's TrAdaBoost measures a round's error with the predicted
probabilities (``|p - onehot| / 2``) and uses ``beta_t = eps / (2 - eps)`` with every round
voting, ours is Dai et al.'s (0/1 error, ``beta_t = eps / (1 - eps)``, the second half of the
rounds votes); ADAPT's RegularTransferLC is least squares on ``{-1, +1}`` targets, ours the
regularised logistic regression of Chelba and Acero; ADAPT's LinInt fits the target model on
half of the labeled rows and interpolates the two models' predicted *values* with a linear
regression fitted on the other half, so it is a regressor (on class labels its output is no
class: N/A in the classification table); ours interpolates class probabilities, its weight
chosen by the log-loss of cross-validated predictions over every labeled row, and is a
classifier.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import sys
import time
import warnings
from pathlib import Path

import numpy as np

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: _common
sys.path.insert(0, str(Path(__file__).resolve().parent))      # fewlabels_study
from _common import header, markdown_table, progress, track, write_results  # noqa: E402

#: (name, source rows, labeled target rows, features) of the regression part
SHAPES = (("n >> d", 5000, 100, 20), ("n ~ d", 400, 40, 400), ("d >> n", 200, 20, 4000))
LAMBDA = 1.0
N_TEST = 2000
#: calls of each fast fit (milliseconds), ours and ADAPT's in turn; the fastest is reported
FAST_REPEATS = 15
#: calls of each office fit (the fastest is its time)
OFFICE_REPEATS = 3
PAPER_N_T = (10, 20, 50, 100)
#: the rows of the office and paper tables; OURS_ONLY have no ADAPT counterpart (ADAPT's LinInt
#: interpolates predicted values: a regressor only)
OFFICE_METHODS = ("FeatureAugmentation", "TrAdaBoost", "TrAdaBoost (C=0.001)",
                  "TrAdaBoost (C=0.001, target_share=0.5)", "RegularTransferLC", "LinInt")
OURS_ONLY = ("TrAdaBoost (C=0.001, target_share=0.5)", "LinInt")
#: the rows of the trees table: forests without and with transfer, and the family's best
TREE_METHODS = ("source forest", "pooled forest", "TransferForest (relabel), ADAPT",
                "TransferForest (SER), ADAPT", "TransferForest (STRUT), ADAPT",
                "FeatureAugmentation (forest), ours",
                "FeatureAugmentation (logistic regression), ours")
N_TREES = 100
#: the trees part's tasks: the two of the office part with the fewest source rows (Webcam 295,
#: DSLR 157); with the four tasks, the first (Caltech->Amazon, 1,123 source rows) had not
#: finished its 15 draws after 14 minutes (SER took 8-18 s a fit on Webcam->Caltech)
TREE_TASKS = (("webcam", "caltech"), ("dslr", "amazon"))
PAPER_METHODS = ("multi-task boosting (ours)", "TrAdaBoost, ours",
                 "TrAdaBoost (target_share=0.5), ours", "TrAdaBoost, ADAPT")


def _adapt():
    """ADAPT's classes, or an exit that says how to get them."""
    try:
        from adapt.feature_based import FA
        from adapt.instance_based import TrAdaBoost, TrAdaBoostR2, TwoStageTrAdaBoostR2
        from adapt.parameter_based import (
            LinInt,
            RegularTransferLC,
            RegularTransferLR,
            TransferForestClassifier,
        )
    except ImportError as exc:
        raise SystemExit(f"fewlabels_adapt.py needs ADAPT and TensorFlow ({exc}); run it in "
                         "the separate environment its docstring describes") from exc
    return {"FA": FA, "TrAdaBoost": TrAdaBoost, "TrAdaBoostR2": TrAdaBoostR2,
            "TwoStageTrAdaBoostR2": TwoStageTrAdaBoostR2, "LinInt": LinInt,
            "RegularTransferLC": RegularTransferLC, "RegularTransferLR": RegularTransferLR,
            "TransferForest": TransferForestClassifier}


def _timed(fit, repeats: int = 1):
    """``(seconds, result)``: the fastest of ``repeats`` calls of ``fit``."""
    best, out = np.inf, None
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = fit()
        best = min(best, time.perf_counter() - t0)
    return best, out


def _timed_pair(ours, theirs, repeats: int):
    """``(ours seconds, ours result, their seconds, their result)``: the fastest of
    ``repeats`` calls of each, the two called in turn (so that the machine's drift over the
    run falls on both)."""
    t = {0: np.inf, 1: np.inf}
    out = {}
    for _ in range(repeats):
        for i, fit in enumerate((ours, theirs)):
            t0 = time.perf_counter()
            out[i] = fit()
            t[i] = min(t[i], time.perf_counter() - t0)
    return t[0], out[0], t[1], out[1]


def regression_task(n_s: int, m: int, d: int, seed: int):
    """Source rows, labeled target rows and test target rows of a linear task whose target
    coefficients are the source's plus a perturbation of a quarter of their size."""
    rng = np.random.default_rng([seed, n_s, m, d])
    beta_s = rng.normal(size=d) / np.sqrt(d)
    beta_t = beta_s + 0.25 * rng.normal(size=d) / np.sqrt(d)
    Xs = rng.normal(size=(n_s, d))
    Xt = rng.normal(loc=0.3, size=(m + N_TEST, d))
    ys = Xs @ beta_s + 1.0 + 0.1 * rng.normal(size=n_s)
    yt = Xt @ beta_t + 1.2 + 0.1 * rng.normal(size=m + N_TEST)
    return Xs, ys, Xt[:m], yt[:m], Xt[m:], yt[m:]


def _stack(Xs, ys, Xl, yl):
    X = np.vstack([Xs, Xl])
    y = np.concatenate([ys, yl])
    sd = np.concatenate([np.ones(len(ys), int), -np.ones(len(yl), int)])
    return X, y, sd


def _regression_case(A, Xs, ys, Xl, yl, Xte, yte) -> dict:
    """One task's records: each method's fit times, target RMSE and agreement."""
    from sklearn.linear_model import Ridge
    from sklearn.tree import DecisionTreeRegressor

    from shiftlearn import FeatureAugmentation, RegularTransferLR, TrAdaBoostR2

    X, y, sd = _stack(Xs, ys, Xl, yl)
    m = len(yl)

    def rmse(pred):
        return float(np.sqrt(np.mean((pred - yte) ** 2)))

    rec = {}
    # RegularTransferLR: the same problem, ours a direct solve, ADAPT's lsqr
    def adapt_lr():
        src = Ridge().fit(Xs, ys)
        return A["RegularTransferLR"](src, lambda_=LAMBDA, verbose=0).fit(Xl, yl)

    t_o, ours, t_a, theirs = _timed_pair(
        lambda: RegularTransferLR(Ridge(), prior_weight=LAMBDA ** 2).fit(X, y, sd), adapt_lr,
        FAST_REPEATS)
    theta_o = np.r_[ours.intercept_, ours.coef_]
    theta_a = np.r_[theirs.intercept_, theirs.coef_]
    src = Ridge().fit(Xs, ys)
    theta_s = np.r_[src.intercept_, src.coef_]
    A1 = np.c_[np.ones(m), Xl]

    def objective(th):
        return float(np.sum((A1 @ th - yl) ** 2) + LAMBDA ** 2 * np.sum((th - theta_s) ** 2))

    rec["RegularTransferLR"] = {
        "ours_s": t_o, "adapt_s": t_a,
        "max_rel_coef_diff": float(np.max(np.abs(theta_o - theta_a)) / np.max(np.abs(theta_o))),
        "objective_ours": objective(theta_o), "objective_adapt": objective(theta_a),
        "rmse_ours": rmse(ours.predict(Xte)), "rmse_adapt": rmse(theirs.predict(Xte))}

    # FeatureAugmentation: the same augmented matrix, the same Ridge
    t_o, ours, t_a, theirs = _timed_pair(
        lambda: FeatureAugmentation(Ridge()).fit(X, y, sd),
        lambda: A["FA"](Ridge(), Xt=Xl, yt=yl, verbose=0).fit(Xs, ys), FAST_REPEATS)
    p_o, p_a = ours.predict(Xte), theirs.predict(Xte)
    rec["FeatureAugmentation"] = {"ours_s": t_o, "adapt_s": t_a,
                                  "max_abs_pred_diff": float(np.max(np.abs(p_o - p_a))),
                                  "rmse_ours": rmse(p_o), "rmse_adapt": rmse(p_a)}

    # TrAdaBoost.R2 and the two-stage variant, the same trees
    tree = DecisionTreeRegressor(max_depth=3, random_state=0)
    t_o, ours, t_a, theirs = _timed_pair(
        lambda: TrAdaBoostR2(tree, 10, random_state=0).fit(X, y, sd),
        lambda: A["TrAdaBoostR2"](tree, Xt=Xl, yt=yl, n_estimators=10, verbose=0,
                                  random_state=0).fit(Xs, ys), 3)
    rec["TrAdaBoostR2"] = {"ours_s": t_o, "adapt_s": t_a, "rmse_ours": rmse(ours.predict(Xte)),
                           "rmse_adapt": rmse(theirs.predict(Xte))}
    t_o, ours = _timed(lambda: TrAdaBoostR2(tree, 10, two_stage=True, n_steps=10, cv=5,
                                            random_state=0).fit(X, y, sd))
    t_a, theirs = _timed(lambda: A["TwoStageTrAdaBoostR2"](
        tree, Xt=Xl, yt=yl, n_estimators=10, n_estimators_fs=10, cv=5, verbose=0,
        random_state=0).fit(Xs, ys))
    rec["TrAdaBoostR2 (two-stage)"] = {"ours_s": t_o, "adapt_s": t_a,
                                       "rmse_ours": rmse(ours.predict(Xte)),
                                       "rmse_adapt": rmse(theirs.predict(Xte))}
    return rec


REGRESSION_METHODS = ("RegularTransferLR", "FeatureAugmentation", "TrAdaBoostR2",
                      "TrAdaBoostR2 (two-stage)")


def part_regression(A, seeds: int) -> tuple[list[dict], dict]:
    rows, raw = [], {}
    for shape, n_s, m, d in track(SHAPES, "shapes"):
        raw[shape] = [{"seed": seed, **_regression_case(A, *regression_task(n_s, m, d, seed))}
                      for seed in range(seeds)]
        for method in REGRESSION_METHODS:
            recs = [r[method] for r in raw[shape]]
            row = {"shape": f"{shape} ({n_s}+{m} x {d})", "method": method,
                   "RMSE ours": np.mean([r["rmse_ours"] for r in recs]),
                   "RMSE ADAPT": np.mean([r["rmse_adapt"] for r in recs]),
                   "fit ours (s)": np.median([r["ours_s"] for r in recs]),
                   "fit ADAPT (s)": np.median([r["adapt_s"] for r in recs])}
            row["ADAPT / ours (time)"] = row["fit ADAPT (s)"] / row["fit ours (s)"]
            if method == "RegularTransferLR":
                gap = max(r["objective_adapt"] - r["objective_ours"] for r in recs)
                diff = max(r["max_rel_coef_diff"] for r in recs)
                row["agreement"] = f"coef rel diff {diff:.1e}; objective ADAPT - ours {gap:.1e}"
            elif method == "FeatureAugmentation":
                diff = max(r["max_abs_pred_diff"] for r in recs)
                row["agreement"] = f"max |pred diff| {diff:.1e}"
            else:
                row["agreement"] = "different algorithms (RMSE)"
            rows.append(row)
    return rows, raw


def _office_methods(A, X, y, sd, src, lab):
    """``{method: (ours factory, ADAPT factory)}``, each returning a fitted model's
    predictions function."""
    from sklearn.linear_model import LogisticRegression

    from shiftlearn import FeatureAugmentation, LinInt, RegularTransferLC, TrAdaBoost

    Xs, ys, Xl, yl = X[src], y[src], X[lab], y[lab]

    def adapt_param(cls, **kw):
        src_model = LogisticRegression().fit(Xs, ys)
        return cls(src_model, Xt=Xl, yt=yl, verbose=0, **kw).fit(Xl, yl)

    return {
        "FeatureAugmentation": (
            lambda: FeatureAugmentation(LogisticRegression()).fit(X, y, sd),
            lambda: A["FA"](LogisticRegression(), Xt=Xl, yt=yl, verbose=0).fit(Xs, ys)),
        "TrAdaBoost": (
            lambda: TrAdaBoost(LogisticRegression(), random_state=0).fit(X, y, sd),
            lambda: A["TrAdaBoost"](LogisticRegression(), Xt=Xl, yt=yl, n_estimators=10,
                                    verbose=0, random_state=0).fit(Xs, ys)),
        "TrAdaBoost (C=0.001)": (
            lambda: TrAdaBoost(LogisticRegression(C=0.001), random_state=0).fit(X, y, sd),
            lambda: A["TrAdaBoost"](LogisticRegression(C=0.001), Xt=Xl, yt=yl,
                                    n_estimators=10, verbose=0, random_state=0).fit(Xs, ys)),
        "TrAdaBoost (C=0.001, target_share=0.5)": (
            lambda: TrAdaBoost(LogisticRegression(C=0.001), target_share=0.5,
                               random_state=0).fit(X, y, sd),
            None),          # ADAPT has no such option
        "RegularTransferLC": (
            lambda: RegularTransferLC(LogisticRegression()).fit(X, y, sd),
            lambda: adapt_param(A["RegularTransferLC"], lambda_=1.0)),
        "LinInt": (
            lambda: LinInt(LogisticRegression(), random_state=0).fit(X, y, sd),
            None),          # ADAPT's LinInt interpolates predicted values: a regressor only
    }


def _office_draws(tasks, repeats: int, codes: bool = False):
    """Each task's seeded draws of ``fewlabels_study.py``: ``(k, X, y, sd, src, lab, test,
    y_true)``, ``y`` with ``-1`` on the unlabeled target rows; ``codes``: labels ``0..K-1``."""
    import fewlabels_study as study

    from shiftlearn.datasets import load_office_caltech

    ds = load_office_caltech()
    for s, t in track(tasks, "tasks"):
        X, _, sd0, y_true = ds.pack(s, t, return_masked_labels=True)
        if codes:
            y_true = np.searchsorted(np.unique(y_true), y_true)
        src = sd0 > 0
        tgt_rows = np.flatnonzero(~src)
        for k in study.BUDGETS:
            for rep in range(repeats):
                rng = np.random.default_rng([k, rep])
                lab = np.zeros(X.shape[0], dtype=bool)
                lab[tgt_rows[study.draw_labeled(y_true[tgt_rows], k, rng)]] = True
                yield k, X, np.where(src | lab, y_true, -1), sd0, src, lab, ~src & ~lab, y_true
        print(f"  {s}->{t} done", flush=True)


def part_office(A, repeats: int) -> tuple[list[dict], dict]:
    import fewlabels_study as study

    acc, secs, failed = {}, {}, {}
    for k, X, y, sd0, src, lab, test, y_true in _office_draws(study.DEFAULT_TASKS, repeats):
        for method, pair in _office_methods(A, X, y, sd0, src, lab).items():
            for impl, make in zip(("ours", "ADAPT"), pair, strict=True):
                key = (method, impl, k)
                if make is None:
                    continue
                try:
                    with contextlib.redirect_stdout(io.StringIO()):  # ADAPT prints
                        seconds, model = _timed(make, OFFICE_REPEATS)
                        pred = model.predict(X[test])
                except Exception as exc:  # noqa: BLE001 - a peer's failure is a result
                    failed.setdefault(key, f"{type(exc).__name__}: {exc}"[:160])
                    continue
                acc.setdefault(key, []).append(100 * float(np.mean(pred == y_true[test])))
                secs.setdefault(key, []).append(seconds)
    rows = []
    for method in OFFICE_METHODS:
        for impl in ("ours", "ADAPT"):
            row = {"method": method, "implementation": impl}
            if method in OURS_ONLY and impl == "ADAPT":
                rows.append({"method": method, "implementation": impl,
                             **{f"k={k}": "N/A" for k in study.BUDGETS},
                             "fit (s, median)": float("nan")})
                continue
            for k in study.BUDGETS:
                v = acc.get((method, impl, k), [])
                n_expected = len(study.DEFAULT_TASKS) * repeats
                row[f"k={k}"] = (f"{np.mean(v):.1f}" + ("" if len(v) == n_expected else
                                                        f" ({n_expected - len(v)} failed)")
                                 if v else "failed")
            row["fit (s, median)"] = float(np.median(
                [x for k in study.BUDGETS for x in secs.get((method, impl, k), [])] or [np.nan]))
            rows.append(row)
    data = {"accuracy": {"|".join(map(str, k)): v for k, v in acc.items()},
            "seconds": {"|".join(map(str, k)): v for k, v in secs.items()},
            "failed": {"|".join(map(str, k)): v for k, v in failed.items()}}
    return rows, data


def _tree_methods(A, X, y, sd, src, lab) -> dict:
    """``{method: factory}``, each returning a fitted model whose ``predict`` gives class codes
    (ADAPT's trees index the classes by their value, so ``y`` holds codes ``0..K-1``)."""
    from sklearn.ensemble import RandomForestClassifier
    from sklearn.linear_model import LogisticRegression

    from shiftlearn import FeatureAugmentation

    def forest():
        return RandomForestClassifier(N_TREES, random_state=0)

    def transfer(algo):
        def fit():
            source = forest().fit(X[src], y[src])       # its fit counts in ADAPT's time
            return A["TransferForest"](source, algo=algo, Xt=X[lab], yt=y[lab], verbose=0,
                                       random_state=0).fit(X[lab], y[lab])
        return fit

    return {
        "source forest": lambda: forest().fit(X[src], y[src]),
        "pooled forest": lambda: forest().fit(X[src | lab], y[src | lab]),
        "TransferForest (relabel), ADAPT": transfer("relabel"),
        "TransferForest (SER), ADAPT": transfer("ser"),
        "TransferForest (STRUT), ADAPT": transfer("strut"),
        "FeatureAugmentation (forest), ours": lambda: FeatureAugmentation(forest()).fit(X, y, sd),
        "FeatureAugmentation (logistic regression), ours":
            lambda: FeatureAugmentation(LogisticRegression()).fit(X, y, sd),
    }


def part_trees(A, repeats: int) -> tuple[list[dict], dict]:
    """Transfer forests (Segev et al. 2017, ADAPT's implementation) on the office draws."""
    import fewlabels_study as study

    acc, secs, failed = {}, {}, {}
    for k, X, y, sd0, src, lab, test, y_true in _office_draws(TREE_TASKS, repeats, codes=True):
        for method, make in _tree_methods(A, X, y, sd0, src, lab).items():
            try:
                with contextlib.redirect_stdout(io.StringIO()):  # ADAPT prints
                    seconds, model = _timed(make)
                    pred = model.predict(X[test])
            except Exception as exc:  # noqa: BLE001 - a peer's failure is a result
                failed.setdefault((method, k), f"{type(exc).__name__}: {exc}"[:160])
                continue
            acc.setdefault((method, k), []).append(
                100 * float(np.mean(pred == y_true[test])))
            secs.setdefault((method, k), []).append(seconds)
    rows = []
    n_expected = len(TREE_TASKS) * repeats
    for method in TREE_METHODS:
        row = {"method": method}
        for k in study.BUDGETS:
            v = acc.get((method, k), [])
            row[f"k={k}"] = (f"{np.mean(v):.1f}" + ("" if len(v) == n_expected else
                                                    f" ({n_expected - len(v)} failed)")
                             if v else "failed")
        row["fit (s, median)"] = float(np.median(
            [x for k in study.BUDGETS for x in secs.get((method, k), [])] or [np.nan]))
        rows.append(row)
    data = {"accuracy": {"|".join(map(str, k)): v for k, v in acc.items()},
            "seconds": {"|".join(map(str, k)): v for k, v in secs.items()},
            "failed": {"|".join(map(str, k)): v for k, v in failed.items()}}
    return rows, data


def _paper_fits(A, X, y, sd, src, lab, rows) -> dict:
    from sklearn.tree import DecisionTreeClassifier

    from shiftlearn import MultiTaskBoostingClassifier, TrAdaBoost

    tree = DecisionTreeClassifier(max_depth=3, random_state=0)
    return {
        "multi-task boosting (ours)": lambda: MultiTaskBoostingClassifier(500, 0.1, 1)
        .fit(X[rows], y[rows], sd[rows]),
        "TrAdaBoost, ours": lambda: TrAdaBoost(tree, 20, random_state=0)
        .fit(X[rows], y[rows], sd[rows]),
        "TrAdaBoost (target_share=0.5), ours": lambda: TrAdaBoost(tree, 20, target_share=0.5,
                                                                  random_state=0)
        .fit(X[rows], y[rows], sd[rows]),
        "TrAdaBoost, ADAPT": lambda: A["TrAdaBoost"](
            tree, Xt=X[lab], yt=y[lab], n_estimators=20, verbose=0, random_state=0)
        .fit(X[src], y[src]),
    }


def part_paper(A, seeds: int) -> tuple[list[dict], dict]:
    import boosting_synthetic as paper

    from shiftlearn.datasets import make_monotone_shift

    err, secs = {}, {}
    for seed in track(range(seeds), "seeds"):
        X, y, sd = make_monotone_shift(2000, 7000, shift="monotone", random_state=seed)
        src, tgt = np.flatnonzero(sd > 0), np.flatnonzero(sd < 0)
        pool, test = tgt[:2000], tgt[2000:]
        rng = np.random.default_rng(1000 + seed)
        for n_t in PAPER_N_T:
            lab = paper.balanced_subset(y, pool, n_t, rng)
            rows = np.concatenate([src, lab])
            fits = _paper_fits(A, X, y, sd, src, lab, rows)
            for name, fit in fits.items():
                t, model = _timed(fit)
                pred = (model.predict(X[test], sd[test]) if name.startswith("multi")
                        else model.predict(X[test]))
                err.setdefault((name, n_t), []).append(float(np.mean(pred != y[test])))
                secs.setdefault((name, n_t), []).append(t)
    rows = []
    for name in PAPER_METHODS:
        row = {"method": name}
        for n_t in PAPER_N_T:
            row[f"n_t={n_t}"] = float(np.median(err[(name, n_t)]))
        row["fit (s, median)"] = float(np.median([x for n_t in PAPER_N_T
                                                  for x in secs[(name, n_t)]]))
        rows.append(row)
    data = {"error": {f"{k[0]}|{k[1]}": v for k, v in err.items()},
            "seconds": {f"{k[0]}|{k[1]}": v for k, v in secs.items()}}
    return rows, data


def _failure_lines(failed: dict, per: str) -> list[str]:
    """The Markdown lines listing a part's failures (none: no line)."""
    if not failed:
        return []
    return [f"Failures (first message per {per}):", "",
            *[f"* {k}: `{v}`" for k, v in failed.items()], ""]


@progress()
def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--part", choices=["regression", "office", "paper", "trees", "all"],
                    default="all", help="all: regression, office and paper (trees apart)")
    ap.add_argument("--seeds", type=int, default=5, help="regression and paper seeds")
    ap.add_argument("--repeats", type=int, default=5, help="office draws per budget")
    args = ap.parse_args(argv)
    from threadpoolctl import threadpool_limits

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "boosting"))
    warnings.filterwarnings("ignore")
    A = _adapt()
    import importlib.metadata as md

    machine = header("The few-labels family beside ADAPT")
    machine["adapt"] = md.version("adapt")
    machine["tensorflow"] = md.version("tensorflow")
    try:        # the compiled loops of the two-stage TrAdaBoost.R2's trees
        machine["numba"] = md.version("numba")
    except md.PackageNotFoundError:
        machine["numba"] = "not installed"
    parts = ("regression", "office", "paper") if args.part == "all" else (args.part,)
    body, data = [], {"seeds": args.seeds, "repeats": args.repeats}
    with threadpool_limits(1):
        if "regression" in parts:
            rows, data["regression"] = part_regression(A, args.seeds)
            body += ["## Regression: the same rows, three shapes", "",
                     f"Mean target RMSE over {args.seeds} seeds ({N_TEST} test rows each); "
                     "fit time: the median over the seeds of the fastest of "
                     f"{FAST_REPEATS} calls (RegularTransferLR, FeatureAugmentation), 3 "
                     "(TrAdaBoostR2) or 1 (the two-stage variant), ours and ADAPT's called in "
                     "turn. RegularTransferLR: ours with `prior_weight = 1` "
                     "against ADAPT's `lambda_ = 1` (the same objective); agreement is the "
                     "largest coefficient difference relative to the largest coefficient, and "
                     "how much higher ADAPT's objective is than ours.", "",
                     markdown_table(rows, floatfmt=".3g"), ""]
        if "office" in parts:
            rows, data["office"] = part_office(A, args.repeats)
            body += ["## Office+Caltech SURF, 1, 3 and 10 labeled target rows per class", "",
                     f"Mean target accuracy (%) over four tasks x {args.repeats} draws "
                     "(`fewlabels_study.py`'s), `LogisticRegression()` in every method; fit "
                     f"time: the median over the draws of each draw's fastest of "
                     f"{OFFICE_REPEATS} fits.", "",
                     markdown_table(rows, floatfmt=".3g"), ""]
            body += _failure_lines(data["office"]["failed"], "method, implementation and budget")
        if "trees" in parts:
            rows, data["trees"] = part_trees(A, args.repeats)
            tasks = ", ".join(f"{s}->{t}" for s, t in TREE_TASKS)
            body += ["## Transfer forests on Office+Caltech SURF", "",
                     f"Mean target accuracy (%) over {len(TREE_TASKS)} tasks ({tasks}: the "
                     "office part's with the fewest source rows; run on the four, the first, "
                     "Caltech->Amazon, had not finished its draws after 14 minutes) x "
                     f"{args.repeats} draws (the office part's), {N_TREES}-tree random "
                     "forests (`random_state=0`). ADAPT's `TransferForestClassifier` (Segev "
                     "et al. 2017: relabelling the leaves, SER, STRUT) refines a forest "
                     "fitted on the source rows with the labeled target rows (that fit "
                     "counted in its time). Beside it the forests without transfer, and our "
                     "FeatureAugmentation with the forest and with logistic regression (the "
                     "family's best single method at 3 labels per class in "
                     "`fewlabels_select.md`).", "",
                     markdown_table(rows, floatfmt=".3g"), ""]
            body += _failure_lines(data["trees"]["failed"], "method and budget")
        if "paper" in parts:
            rows, data["paper"] = part_paper(A, args.seeds)
            body += ["## The multi-task boosting paper's monotone-shift pair", "",
                     f"Median target test error over {args.seeds} seeds (2,000 source rows, "
                     "n_t balanced labeled target rows, 5,000 test rows): multi-task boosting "
                     "as in `boosting_synthetic.py` (500 stumps, learning rate 0.1); "
                     "TrAdaBoost, ours and ADAPT's, with 20 rounds of depth-3 trees.", "",
                     markdown_table(rows, floatfmt=".3g"), ""]
    text = "\n".join(body)
    print(text)
    suffix = "" if args.part == "all" else f"_{args.part}"
    write_results(f"fewlabels_adapt{suffix}", "The few-labels family beside ADAPT", text, data,
                  machine)


if __name__ == "__main__":
    main()
