"""``shiftlearn predict``: predictions of a model saved by ``shiftlearn adapt --save``.

A model file and a data file in; the predicted labels out (CSV ``row,prediction`` and
``confidence`` when the model's classifier gives graded probabilities, as ``adapt --out``
writes them), and one line on stderr when the rows differ from the domain the model was adapted
to (an MMD permutation test against the target sample stored in the file).

Contract: the file is refused, with a one-line reason and exit status 2, when it is damaged
(its SHA-256 does not match), saved by another library version, holds types other than
classes of shiftlearn, scikit-learn or numpy, or when the data file's feature columns are not
the model's (the same names in another order are matched by name; the training label column is
ignored with a note). Options: ``docs/cli.md``; design notes: ``docs/dev/cli.md``.
"""

from __future__ import annotations

import argparse
import csv
import json
import sys

import numpy as np

from ._common import check_output, count, fraction, info, match_columns, subsample

#: rows of the data file compared with the stored target sample (seeded sample)
MAX_ROWS = 500


def add_parser(subparsers, parents) -> argparse.ArgumentParser:
    p = subparsers.add_parser(
        "predict", parents=parents,
        help="predict the labels of a data file with a model saved by adapt --save",
        description="Load a model saved by `shiftlearn adapt --save` (checked: the file's "
                    "SHA-256, the library version, the feature columns) and predict the labels "
                    "of a data file; say in one line on stderr when the rows differ from the "
                    "domain the model was adapted to (MMD permutation test).",
        epilog="Example: shiftlearn predict model.skops new.csv --out predictions.csv")
    p.add_argument("model", metavar="MODEL", help="a model file written by adapt --save")
    p.add_argument("file", metavar="FILE", help="the rows to predict (any format adapt reads)")
    p.add_argument("--header", choices=("auto", "yes", "no"), default="auto",
                   help="is the first line of a text file a header? (default auto)")
    p.add_argument("--out", metavar="FILE",
                   help="write the predictions here (CSV: row,prediction[,confidence]); "
                        "default: stdout")
    p.add_argument("--permutations", type=count(0), default=200, metavar="N",
                   help="permutations of the shift check's MMD test (default 200; 0 skips "
                        "the check)")
    p.add_argument("--alpha", type=fraction, default=0.05,
                   help="level of the shift check (default 0.05)")
    p.add_argument("--json", action="store_true",
                   help="print the result as JSON (for programs): predictions, confidence, "
                        "the shift check and the model's header")
    return p


def _value(c):
    return c.item() if isinstance(c, np.generic) else c


def _read(args, header: dict):
    """The data file's features, matched to the model's columns (``ValueError`` naming the
    missing and extra columns otherwise)."""
    from ..io import Table, TableError, read_table

    names, d = header.get("feature_names"), int(header["n_features"])
    label = header.get("label_name")
    how = {"auto": None, "yes": True, "no": False}[args.header]
    try:
        tab = read_table(args.file, with_labels=False, header=how)
    except TableError:
        if not label:
            raise
        try:       # the training label column, filled with text labels: read it as labels
            tab = read_table(args.file, label_column=label, header=how,
                             allow_missing_labels=True)
        except (TableError, ValueError):
            tab = None
        if tab is None:
            raise
        tab.notes.append(f"{tab.path}: the label column {label!r} is ignored.")
    if names and tab.feature_names and label in tab.feature_names and label not in names \
            and len(tab.feature_names) == d + 1:
        keep = [i for i, n in enumerate(tab.feature_names) if n != label]
        tab.X, tab.feature_names = tab.X[:, keep], [tab.feature_names[i] for i in keep]
        tab.notes.append(f"{tab.path}: the label column {label!r} is ignored.")
    ref = Table(str(args.model), np.empty((0, d)), None, list(names) if names else None, None)
    hint = (f" The model was trained on {d} columns; if the extra one is the label column, "
            "remove it." if tab.X.shape[1] == d + 1 else "")
    tab.notes += match_columns(ref, [tab], hint=hint)
    for note in tab.notes:
        info(args, f"note: {note}")
    if len(tab.X) == 0:
        raise ValueError(f"{tab.path}: no data rows; nothing to predict.")
    return tab


def _shift_check(args, reference: np.ndarray, X: np.ndarray) -> dict | None:
    """MMD permutation test between (a seeded sample of) ``X`` and the stored target sample,
    both z-scored with their pooled statistics, median-heuristic bandwidth."""
    from .._progress import task
    from ..kernels import mmd_permutation_test

    if not args.permutations or len(X) < 2 or len(reference) < 2:
        return None
    Xn = subsample(np.asarray(X, dtype=float), MAX_ROWS, np.random.default_rng(args.seed))
    Z = np.vstack([reference, Xn])
    scale = Z.std(axis=0)
    Z = (Z - Z.mean(axis=0)) / np.where(scale > 0, scale, 1.0)
    with task("shift check (MMD test)", 1) as advance:
        res = mmd_permutation_test(Z[:len(reference)], Z[len(reference):],
                                   n_permutations=args.permutations, random_state=args.seed)
        advance()
    return {"mmd2_unbiased": float(res.statistic), "p_value": float(res.p_value),
            "alpha": args.alpha, "permutations": args.permutations,
            "rows": [int(len(reference)), int(len(Xn))],
            "differs": bool(res.p_value <= args.alpha)}


def run(args: argparse.Namespace) -> int:
    from .. import __version__
    from ..workflow import load_model

    out = check_output(args.out, "--out", inputs=(args.model, args.file)) if args.out else None
    header, payload = load_model(args.model, __version__)
    tab = _read(args, header)
    model = payload["model"]
    pred = np.asarray(model.predict(tab.X))
    if header.get("task") == "regression":      # a generalize --save model of a number
        values = [float(v) for v in pred]
    else:
        classes = np.asarray(header["classes"])
        values = [_value(classes[c]) for c in pred.astype(np.int64)]
    conf = (np.asarray(model.predict_proba(tab.X)).max(axis=1)
            if header.get("confidence") else None)
    shift = _shift_check(args, np.asarray(payload["reference"], dtype=float), tab.X)
    rows = [[i + 1, v] + ([f"{conf[i]:.4f}"] if conf is not None else [])
            for i, v in enumerate(values)]
    head = ["row", "prediction"] + (["confidence"] if conf is not None else [])
    if out is not None:
        with open(out, "w", newline="", encoding="utf-8") as f:
            csv.writer(f).writerows([head, *rows])
        info(args, f"wrote {len(pred)} predictions to {out}")
    if args.json:
        print(json.dumps({"model": str(args.model), "file": str(tab.path), "rows": len(pred),
                          "out": None if out is None else str(out),
                          "predictions": values,
                          "confidence": None if conf is None else [float(v) for v in conf],
                          "shift": shift, "notes": tab.notes, "model_header": header},
                         indent=2))
    elif out is None:
        w = csv.writer(sys.stdout, lineterminator="\n")
        w.writerows([head, *rows])
    if shift is not None and shift["differs"]:
        # a warning about the predictions, so printed even with --quiet
        print(f"{args._prog}: warning: {tab.path} differs from the domain the model was "
              f"adapted to ({header.get('target_file')}): MMD permutation test p = "
              f"{shift['p_value']:.3g} <= {args.alpha:g}; the predictions may be less "
              "accurate than there.", file=sys.stderr, flush=True)
    return 0
