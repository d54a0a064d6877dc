"""The few-label run of ``shiftlearn adapt``: the target file's label column is filled for a few
rows, and those rows choose and train the method.

:func:`run_few_labels` chooses among the few-labels family (or fits the one ``--method``
names) with :class:`~shiftlearn.model_selection.FewLabelSelector`, predicts every unlabeled
target row, estimates the accuracy on the labeled target rows (with a nested estimate when a
choice was made and the labels allow it) and builds the report dict the command's renderers
write. Design notes: ``docs/dev/fewlabels.md``.
"""

from __future__ import annotations

import time

import numpy as np

from ._adapt import AdaptationReport, AdaptationResult, _analyses, _source_vs_target

__all__ = ["FEW_ONLY", "few_label_methods", "run_few_labels"]


def _names():
    from ..model_selection import FEWLABEL_DEFAULT, FEWLABEL_METHODS

    return FEWLABEL_DEFAULT, FEWLABEL_METHODS


#: ``--method`` names that exist only with labeled target rows
FEW_ONLY = ("FeatureAugmentation", "TrAdaBoost", "RegularTransferLC", "LinInt",
            "MultiTaskBoosting", "target-only", "source-only", "pooled", "pooled-weighted")


def few_label_methods(method: str, candidates) -> tuple[list[str], str]:
    """The candidates of the few-label run and how they were named.

    ``method="auto"`` compares :data:`~shiftlearn.model_selection.FEWLABEL_DEFAULT` (or
    ``candidates``: ``"all"`` or names of
    :data:`~shiftlearn.model_selection.FEWLABEL_METHODS`); ``"raw"`` is ``pooled`` (the
    classifier on the raw features of every labeled row); any other name is that candidate
    alone. Raises ``ValueError`` for a method that has no few-label form (the reweighting
    adapters)."""
    default, known = _names()
    if method == "auto":
        if isinstance(candidates, str) and candidates == "sized":
            return list(default), "the default candidates"
        if isinstance(candidates, str) and candidates == "all":
            return list(known), "every candidate"
        names = ([t.strip() for t in candidates.split(",") if t.strip()]
                 if isinstance(candidates, str) else list(candidates))
        bad = [n for n in names if n not in known]
        if bad or not names:
            raise ValueError(f"--candidates {candidates!r}: with labeled target rows the "
                             f"candidates are {', '.join(known)} (or all); unknown: "
                             f"{bad or '(none given)'}.")
        return list(dict.fromkeys(names)), "the candidates given"
    if method == "raw":
        return ["pooled"], "raw: the classifier on the raw features of every labeled row"
    if method in known:
        return [method], "as asked"
    raise ValueError(f"--method {method}: a reweighting adapter, which has no few-label form "
                     "(its weights fit the source to the target's rows, which the labeled "
                     "target rows already are). With labeled target rows choose auto or one of "
                     f"{', '.join(known)}; or leave the target labels empty to use {method}.")


#: said when a class has a single label and the one-label default was fitted without a choice
ONE_LABEL_DEFAULT_CAVEAT = (
    "A class has a single labeled row, so no method was chosen: leave-one-out would hold out "
    "that class's only label and rank the methods by a situation the final fit never faces. "
    "{method}, {why}, was fitted; its estimate is its leave-one-out accuracy, pessimistic for "
    "the same reason. Label a second row in each class for a choice, or name one method "
    "(--method on the command line, method= in shiftlearn.adapt).")


def _caveat(chosen_by_cv: bool, m: int, nested, one_label_default: str | None = None) -> str:
    if m < 2:
        return ("One labeled target row: the estimate is that row right (1) or wrong (0), "
                "with no uncertainty to give; label more target rows for a measurement.")
    if one_label_default is not None:
        from ..model_selection import SINGLE_LABEL_DEFAULT

        why = ("the best single method at one label per class in the library's studies"
               if one_label_default == SINGLE_LABEL_DEFAULT else
               f"the first of the candidates given that could be fitted "
               f"({SINGLE_LABEL_DEFAULT}, the default at one label per class, is not among "
               "them or failed: the candidates' table says why)")
        return ONE_LABEL_DEFAULT_CAVEAT.format(method=one_label_default, why=why)
    if not chosen_by_cv:
        return ("One method, as asked: the estimate is its cross-validated accuracy on the "
                "labeled target rows; nothing was chosen with them.")
    if nested is None:
        return ("The same labels chose the method and estimate its accuracy, so the estimate "
                "is optimistic; too few labels for a nested estimate.")
    return ("The same labels chose the method and estimate its accuracy, so that estimate is "
            "optimistic; the nested estimate (the choice repeated without the held-out labels) "
            "is not.")


def run_few_labels(opts, X, y, sd, codes, classes, target_codes, *, names, files,
                   label_column, label_name, notes, command, html: bool = False,
                   t_start: float | None = None, on_choice=None,
                   on_predictions=None) -> AdaptationResult:
    """Choose (or fit) a few-label method, predict the unlabeled target rows, build the report.

    Parameters
    ----------
    opts : namespace
        ``method``, ``candidates``, ``margin``, ``permutations``, ``n_jobs``, ``seed``,
        ``_estimator`` and ``_estimator_name``, as the command's options.
    X, y, sd, codes, classes : arrays
        As :func:`~shiftlearn.workflow.run_adaptation` takes them (``y`` -1 on the target).
    target_codes : array
        The target rows' codes, -1 where the label is empty: the labeled target rows.
    names, files, label_column, label_name, notes, command, html, t_start
        As :func:`~shiftlearn.workflow.run_adaptation`.
    on_choice, on_predictions : callable or None
        Called with the report's ``few_labels`` dict, and with ``(model, pred_codes,
        confidence, method, rows)`` (``rows``: the unlabeled target rows' positions in the
        target file) once they are predicted.

    Returns
    -------
    AdaptationResult
        ``predictions`` are those of the unlabeled target rows.
    """
    from .._progress import task
    from ..model_selection import FewLabelSelector, nested_estimate

    t_start = time.perf_counter() if t_start is None else t_start
    K = len(names) - 1
    n_src = len(codes)
    tgt = sd == -(K + 1)
    y = y.copy()
    y[tgt] = target_codes
    m = int(np.sum(target_codes >= 0))
    methods, how = few_label_methods(opts.method, getattr(opts, "candidates", "sized"))
    sel = FewLabelSelector(methods=methods, estimator=opts._estimator, random_state=opts.seed,
                           n_jobs=opts.n_jobs, margin=getattr(opts, "margin", None) or 0.0)
    t0 = time.perf_counter()
    with task("choosing on the labeled target rows", None):
        sel.fit(X, y, sd)
    one_label = bool(sel.single_label_default_)
    chose = len(methods) > 1 and not one_label
    nested = None
    if chose and m >= 2:
        with task("nested estimate", None):
            try:
                nested = nested_estimate(sel, X, y, sd)
            except ValueError:
                nested = None
    t_fit = time.perf_counter() - t0
    res = sel.cv_results_
    cands = [{"method": res["method"][i], "score": _f(res["mean_test_score"][i]),
              "se": _f(res["se_test_score"][i]), "seconds": float(res["fit_time"][i]),
              "chosen": res["method"][i] == sel.best_method_,
              **({"failed": res["error"][i]} if res["error"][i] else {}),
              **({} if res["scored"][i] else {"unscored": "a class has a single label: no "
                                                          "choice made, so not scored"})}
             for i in range(len(res["method"]))]
    labeled_classes = [_value(classes[c]) for c in np.unique(target_codes[target_codes >= 0])]
    few = {"labeled_target_rows": m, "labeled_classes": [str(c) for c in labeled_classes],
           "split": sel.split_rule_, "candidates": cands, "how": how, "choice": sel.best_method_,
           "chose": chose, "one_label_default": one_label, "margin": float(sel.margin_),
           "estimate": {"accuracy": sel.estimate_.accuracy, "se": _f(sel.estimate_.se),
                        "rows": sel.estimate_.rows},
           "nested": None if nested is None else {"accuracy": nested.accuracy,
                                                  "se": _f(nested.se), "rows": nested.rows},
           "caveat": _caveat(chose, m, nested,
                             one_label_default=sel.best_method_ if one_label else None)}
    if on_choice is not None:
        on_choice(few)
    t0 = time.perf_counter()
    unl = np.flatnonzero(target_codes < 0)
    tgt_X = X[tgt]
    pred_codes = np.asarray(sel.predict(tgt_X[unl]), dtype=np.int64) if unl.size else \
        np.zeros(0, dtype=np.int64)
    conf = None
    if unl.size and hasattr(sel, "predict_proba") and _graded_est(opts._estimator):
        try:
            conf = np.asarray(sel.predict_proba(tgt_X[unl])).max(axis=1)
        except (AttributeError, ValueError):
            conf = None
    method = ("auto (few labels): " if opts.method == "auto" else "few labels: ") \
        + sel.best_method_
    if on_predictions is not None:
        on_predictions(sel, pred_codes, conf, method, unl)
    src_X = [X[sd == i + 1] for i in range(K)]
    spaces = {"raw": [*src_X, tgt_X]}
    analyses = {}
    if opts.permutations:
        k = K + 1
        with task("MMD tests", k * (k - 1) // 2) as advance:
            analyses = _analyses(opts, names, spaces, advance)
    seen = np.unique(np.r_[codes, pred_codes])
    src_share = np.bincount(codes, minlength=classes.size)[seen] / n_src
    tgt_share = (np.bincount(pred_codes, minlength=classes.size)[seen] / max(len(pred_codes), 1))
    src_sd = sd[:n_src]
    from .. import __version__

    rep = {"command": command, "date_utc": time.strftime("%Y-%m-%d %H:%M", time.gmtime()),
           "version": __version__, "method": method, "classifier": opts._estimator_name,
           "n_features": X.shape[1], "label_column": label_column, "label_name": label_name,
           "permutations": opts.permutations, "seed": opts.seed, "notes": list(notes),
           "domains": [{"role": "source", "id": i + 1, "name": names[i], "file": files[i],
                        "rows": len(x), "labeled": len(x),
                        "classes": int(np.unique(codes[src_sd == i + 1]).size)}
                       for i, x in enumerate(src_X)]
           + [{"role": "target", "id": -(K + 1), "name": names[-1], "file": files[-1],
               "rows": len(tgt_X), "labeled": m, "classes": len(labeled_classes)}],
           "shift_raw": _source_vs_target(analyses["raw"]) if analyses else [],
           "shift_adapted": [None] * K if analyses else [],
           "shift_matrices": {k: v.to_dict() for k, v in analyses.items()},
           "params": {}, "params_from": "library defaults", "source_cv": None,
           "selection": None, "few_labels": few,
           "predicted_rows": int(unl.size),
           "class_mix": [[str(_value(classes[c])), float(s), float(p)]
                         for c, s, p in zip(seen, src_share, tgt_share, strict=True)],
           "confidence": None if conf is None else {
               "mean": float(conf.mean()), "below_0.5": int(np.sum(conf < 0.5))}}
    rep["seconds"] = {"fit": t_fit, "report": time.perf_counter() - t0,
                      "total": time.perf_counter() - t_start}
    report = AdaptationReport(rep, names=names, spaces=spaces if html else {},
                              analyses=analyses, seed=opts.seed)
    return AdaptationResult(sel, np.asarray(classes), np.asarray(classes)[pred_codes], conf,
                            report)


def _f(v) -> float | None:
    return float(v) if v is not None and np.isfinite(v) else None


def _value(c):
    return c.item() if isinstance(c, np.generic) else c


def _graded_est(estimator) -> bool:
    from ._adapt import _graded

    return _graded(estimator)

