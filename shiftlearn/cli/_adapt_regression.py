"""``shiftlearn adapt`` on a regression target: a label column of numbers to predict.

``--task auto`` (the default) reads a label column whose numbers are not all whole as a
regression target; ``--task regression`` forces it for whole numbers. The run is
:func:`shiftlearn.workflow.run_regression`: a ``DomainAdaptationRegressor`` (standardised ridge
regression by default), chosen with ``--method auto`` among no adaptation and the adapters
that do not need classes by a regression criterion (``--select``), and a report whose errors
are in the label's units. Refusals are ``ValueError`` raised here and printed by the command
line's one error path (exit status 2).
"""

from __future__ import annotations

import argparse
import csv
import time

import numpy as np

from ._common import emit_report, info, match_columns

__all__ = ["is_regression", "run_regression_command"]

#: a label column of whole numbers with more distinct values than this gets a note that
#: ``--task regression`` reads it as a quantity
MANY_WHOLE_VALUES = 20
_HEADER = {"auto": None, "yes": True, "no": False}


def _values(path, args, header, missing_ok: bool):
    from ..io import read_table

    return read_table(path, label_column=args.label_column, header=header, label_values=True,
                      allow_missing_labels=missing_ok)


def is_regression(args: argparse.Namespace) -> bool:
    """Is the label column of the source files a regression target (``--task``)?"""
    task = getattr(args, "task", "auto")
    if task != "auto":
        return task == "regression"
    from ..io import TableError

    header = _HEADER[args.header]
    whole = 0
    for p in args.sources:
        try:
            t = _values(p, args, header, True)
        except (TableError, ValueError):      # text labels, or a bad file: read again later
            return False
        v = t.y[np.isfinite(t.y)]
        if np.any(v != np.round(v)):
            return True
        whole = max(whole, np.unique(v).size)
    if whole > MANY_WHOLE_VALUES:
        info(args, f"note: the label column holds {whole} distinct whole numbers, read as "
                   "classes; if it is a quantity to predict, add --task regression.")
    return False


def _read_target(args, srcs, header):
    """The target table and its values (None without ``--target-has-labels``)."""
    from ..io import TableError, read_table

    if args.target_has_labels:
        t = _values(args.target, args, header, True)
        return t, t.y
    t = read_table(args.target, with_labels=False, header=header)
    d, name = srcs[0].X.shape[1], srcs[0].label_name
    if t.X.shape[1] == d + 1 or (name is not None and t.feature_names
                                 and name in t.feature_names):
        try:
            lab = read_table(args.target, label_column=name if name is not None
                             else args.label_column, header=header, label_values=True,
                             allow_missing_labels=True)
        except TableError:
            return t, None
        if lab.X.shape[1] == d:
            col = repr(lab.label_name) if lab.label_name else "the last column"
            if np.isnan(lab.y).all():
                lab.notes.append(f"{lab.path}: the label column {col} is empty on every row; "
                                 "ignored.")
                lab.y = None
                return lab, None
            raise ValueError(f"{lab.path}: the target file has the label column {col}, filled "
                             f"on {int(np.sum(~np.isnan(lab.y)))} of {len(lab.y)} rows; add "
                             "--target-has-labels (its values are then only used to print the "
                             "errors) or remove that column.")
    return t, None


def _load(args):
    header = _HEADER[args.header]
    srcs = [_values(p, args, header, False) for p in args.sources]
    tgt, y_target = _read_target(args, srcs, header)
    for t in [*srcs, tgt]:
        for note in t.notes:
            info(args, f"note: {note}")
    notes = match_columns(srcs[0], srcs[1:]) + match_columns(srcs[0], [tgt])
    for note in notes:
        info(args, f"note: {note}")
        tgt.notes.append(note)
    if len(tgt.X) == 0:
        raise ValueError(f"{tgt.path}: the target file has no data rows; nothing to predict.")
    if len(tgt.X) < 2 and args.method != "raw":
        raise ValueError(f"{tgt.path}: the target file has 1 row, and an adapter learns the "
                         "target's distribution from at least 2; give more target rows or use "
                         "--method raw.")
    K = len(srcs)
    X = np.vstack([t.X for t in srcs] + [tgt.X])
    y = np.r_[np.concatenate([t.y for t in srcs]), np.full(len(tgt.X), np.nan)]
    sd = np.r_[np.concatenate([np.full(len(t.X), i + 1) for i, t in enumerate(srcs)]),
               np.full(len(tgt.X), -(K + 1))]
    if not np.ptp(y[sd > 0]) > 0 and np.sum(sd > 0) > 1:
        info(args, f"note: every source row has the same value ({y[0]:g}); every prediction "
                   "will be that value.")
    return srcs, tgt, y_target, X, y, sd


def _write_predictions(out, pred) -> None:
    with open(out, "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(["row", "prediction"])
        for i, v in enumerate(pred):
            w.writerow([i + 1, f"{float(v):.10g}"])


def run_regression_command(args: argparse.Namespace, caught: list, command: str, out, paths,
                           note, save, *, parse_params, domain_names, cli_note) -> int:
    """The regression run of ``shiftlearn adapt`` (the outputs are checked already);
    ``parse_params``, ``domain_names`` and ``cli_note`` are the command's own helpers (passed
    in: this module is imported by ``adapt``, not the other way round)."""
    from ..workflow import (
        DEFAULT_REGRESSION_SELECT,
        check_regression_options,
        make_regressor,
        run_regression,
    )
    if save is not None:
        raise ValueError("--save keeps classification models for shiftlearn predict; a model "
                         "of a regression target is not saved yet: drop --save (the "
                         "predictions go to --out).")
    args.params = parse_params(args.param)
    check_regression_options(args, len(args.sources))
    name = "ridge" if args.estimator is None else args.estimator
    args._estimator = make_regressor(name, args.seed)
    args._estimator_name = name
    if args.select is None and args.method == "auto":
        args.select = DEFAULT_REGRESSION_SELECT
    t_start = time.perf_counter()
    srcs, tgt, y_target, X, y, sd = _load(args)
    n_src = int(np.sum(sd > 0))
    info(args, f"shiftlearn adapt: {len(srcs)} source file(s), {n_src} labeled rows, "
               f"{len(tgt.X)} target rows, {X.shape[1]} features; regression on "
               f"{srcs[0].label_name or 'the label column'}; method {args.method}"
               + (f" (chosen among no adaptation and the adapters by {args.select})"
                  if args.method == "auto" else ""))
    if args.task == "auto":
        info(args, "note: the label column holds numbers with fractions, read as a regression "
                   "target (errors in its units); add --task classification to read them as "
                   "classes.")

    def selected(sel):
        rows = {r["method"]: r for r in sel["candidates"]}
        ch = sel["choice"]
        info(args, f"chose {'no adaptation' if ch == 'none' else ch} ({sel['criterion']}: "
                   f"validation RMSE {rows[ch]['rmse']:.4g} against "
                   f"{rows['none']['rmse']:.4g} without adaptation)"
             if rows[ch]["rmse"] is not None and rows["none"]["rmse"] is not None
             else f"chose {ch} ({sel['criterion']})")

    def predicted(model, pred, method):
        if out is not None:
            _write_predictions(out, pred)
            info(args, f"wrote {len(pred)} predictions to {out}")

    files = [str(t.path) for t in [*srcs, tgt]]
    res = run_regression(args, X, y, sd, y_target, names=domain_names(srcs, tgt), files=files,
                         label_column=args.label_column, label_name=srcs[0].label_name,
                         notes=[cli_note(n) for t in [*srcs, tgt] for n in t.notes],
                         command=command, t_start=t_start, on_selection=selected,
                         on_predictions=predicted)
    return emit_report(args, res.report, caught, paths, note)
