"""``shiftlearn adapt``: domain adaptation on your own files, with a report.

Labeled source file(s) and one unlabeled target file in; the target's predicted labels and a
report out: the data, how far the target is from each source before and after adaptation
(MMD permutation tests), the method and its hyper-parameters (chosen by 5-fold CV on the
source labels with ``--tune``, the papers' protocol), the predicted class mix, and, if the
target file happens to carry labels, the accuracy of the adapted and of the raw model (for
evaluation only: nothing is chosen with them).

Design decisions
----------------
* Every output path is checked before any file is read or any model fitted; ``--out`` and
  ``--report`` may not name an input file or each other.
* ``--report x.json`` writes the JSON only, ``--report x.md`` the Markdown and the JSON beside
  it as ``x.json`` unless that is a file named on the command line; other extensions are
  refused. Without ``--report`` the Markdown goes to stdout.
* Files are read by :func:`shiftlearn.datasets._tables.read_table` (pandas/pyarrow); its notes
  (a dropped index column, an encoding fallback, a header guess) are printed and kept in the
  report. Labels are compared as values (``1`` equals ``1.0``) across all files
  (:func:`~shiftlearn.datasets._tables.encode_labels`), for training and for the target
  accuracy, which counts only the target rows whose label is given.
* Sizes are checked before fitting: an empty target is refused; a one-row domain is refused
  when something needs two rows (an adapter, which learns the target's distribution, or the
  MMD tests of the report), with the options that avoid it.
"""

from __future__ import annotations

import argparse
import csv
import json
import shlex
import sys
import time

import numpy as np

from ._common import check_output, count, info, report_paths, subsample

METHODS = ("raw", "TCA", "SCA", "uSCA", "RF-TCA", "RF-SCA")
CLASSIFIERS = ("1nn", "logreg")


def add_parser(subparsers, parents) -> argparse.ArgumentParser:
    p = subparsers.add_parser(
        "adapt", parents=parents,
        help="adapt your labeled source file(s) to an unlabeled target file; predictions "
             "and a report",
        description="Fit a domain adapter on your labeled source file(s) and unlabeled target "
                    "file, predict the target's labels, and report how far the domains are "
                    "apart before and after adaptation. Files: CSV/TSV/semicolon/whitespace "
                    "text with an optional header (also .gz/.bz2/.xz/.zip compressed; UTF-8, "
                    "UTF-16 or Windows encodings), Parquet, or .npy/.npz (arrays X, y).",
        epilog="Example: shiftlearn adapt a.csv b.csv --target c.csv --label-column label "
               "--method SCA --tune --out predictions.csv --report report.md")
    p.add_argument("sources", nargs="+", metavar="SOURCE", help="labeled source file(s), one "
                   "domain each")
    p.add_argument("--target", required=True, help="the unlabeled target file")
    p.add_argument("--label-column", default="-1", metavar="COLUMN",
                   help="label column: a header name or an index (default -1, the last)")
    p.add_argument("--header", choices=tuple(_HEADER), default="auto",
                   help="is the first line of each text file a header? auto (default) decides "
                        "from its cells; a note says when it had to guess")
    p.add_argument("--target-has-labels", action="store_true",
                   help="the target file has the label column too (only used to print the "
                        "accuracy, never to choose anything)")
    p.add_argument("--method", choices=METHODS, default="SCA",
                   help="adapter, or raw for none (default: %(default)s)")
    p.add_argument("--classifier", choices=CLASSIFIERS, default="1nn",
                   help="trained on the adapted source rows (default 1nn, the papers' choice)")
    p.add_argument("--tune", action="store_true",
                   help="choose the hyper-parameters by 5-fold CV on the source labels "
                        "(grids: shiftlearn.model_selection.DEFAULT_GRIDS)")
    p.add_argument("--param", action="append", default=[], metavar="NAME=VALUE",
                   help="set an adapter hyper-parameter (repeatable), e.g. n_components=20")
    p.add_argument("--permutations", type=count(0), default=200, metavar="N",
                   help="permutations of each MMD test in the report (default 200; 0 skips "
                        "the tests)")
    p.add_argument("--out", metavar="FILE",
                   help="write the target predictions here (CSV: row,prediction)")
    p.add_argument("--report", metavar="FILE",
                   help="write the report here: .md (Markdown, and the JSON beside it) or "
                        ".json (JSON only); default: Markdown on stdout")
    return p


# ------------------------------------------------------------------------------ reading ------
_HEADER = {"auto": None, "yes": True, "no": False}


def _cli_note(note: str) -> str:
    """A reader's note in the command line's words (``header=False`` -> ``--header no``)."""
    return note.replace("header=False", "--header no").replace("header=True", "--header yes")


def _load(args):
    """Read and check every file; return the sources, the target, the classes, the source
    codes, the target codes (None without labels; -1 where a target label is missing) and the
    packed ``X``, ``y``, ``sample_domain``."""
    from ..datasets._tables import encode_labels, read_table

    header = _HEADER[args.header]
    srcs = [read_table(p, label_column=args.label_column, header=header) for p in args.sources]
    tgt = read_table(args.target, label_column=args.label_column,
                     with_labels=args.target_has_labels, header=header,
                     allow_missing_labels=True)
    for t in [*srcs, tgt]:
        for note in t.notes:
            info(args, f"note: {_cli_note(note)}")
    d = srcs[0].X.shape[1]
    for t in [*srcs[1:], tgt]:
        if t.X.shape[1] != d:
            hint = (" If the target file has a label column, add --target-has-labels."
                    if t is tgt and t.X.shape[1] == d + 1 and not args.target_has_labels
                    else "")
            raise ValueError(f"{t.path} has {t.X.shape[1]} feature columns but {srcs[0].path} "
                             f"has {d}; every file needs the same feature columns.{hint}")
        if t.feature_names and srcs[0].feature_names and \
                list(t.feature_names) != list(srcs[0].feature_names):
            raise ValueError(f"{t.path}: feature columns {list(t.feature_names)} differ from "
                             f"{srcs[0].path}'s {list(srcs[0].feature_names)}; give the files "
                             "the same columns in the same order.")
    classes, codes_list = encode_labels([*srcs, tgt] if tgt.y is not None else srcs)
    codes = np.concatenate(codes_list[:len(srcs)]).astype(np.int64)
    tgt_codes = codes_list[-1].astype(np.int64) if tgt.y is not None else None
    if np.unique(codes).size < 2:
        raise ValueError(f"The source rows have a single class ({_value(classes[codes[0]])!r}); "
                         "adaptation for classification needs at least two.")
    K = len(srcs)
    X = np.vstack([t.X for t in srcs] + [tgt.X])
    y = np.r_[codes, -np.ones(len(tgt.X), dtype=np.int64)]
    sd = np.r_[np.concatenate([np.full(len(t.X), i + 1) for i, t in enumerate(srcs)]),
               np.full(len(tgt.X), -(K + 1))]
    return srcs, tgt, np.asarray(classes), codes, tgt_codes, X, y, sd


def _check_sizes(args, srcs, tgt) -> None:
    if len(tgt.X) == 0:
        raise ValueError(f"{tgt.path}: the target file has no data rows; nothing to predict.")
    if len(tgt.X) < 2 and args.method != "raw":
        raise ValueError(f"{tgt.path}: the target file has 1 row, and {args.method} learns the "
                         "target's distribution from at least 2; give more target rows or use "
                         "--method raw --permutations 0.")
    if args.permutations:
        small = [t.path for t in [*srcs, tgt] if len(t.X) < 2]
        if small:
            raise ValueError(f"{', '.join(small)}: 1 row, and the MMD test of the report needs "
                             "at least 2 per domain; give more rows or --permutations 0.")


# ------------------------------------------------------------------------------ fitting ------
def _adapter(method: str, seed: int, params: dict):
    from ..adaptation import RFSCA, RFTCA, SCA, TCA, uSCA

    make = {"TCA": lambda: TCA(), "SCA": lambda: SCA(whiten=False),
            "uSCA": lambda: uSCA(whiten=False),
            "RF-TCA": lambda: RFTCA(random_state=seed),
            "RF-SCA": lambda: RFSCA(whiten=False, random_state=seed)}[method]
    adapter = make()
    unknown = sorted(set(params) - set(adapter.get_params()))
    if unknown:
        raise ValueError(f"{method} has no parameter(s) {unknown}; it has "
                         f"{sorted(adapter.get_params())}.")
    return adapter.set_params(**params)


def _classifier(name: str):
    from sklearn.linear_model import LogisticRegression
    from sklearn.neighbors import KNeighborsClassifier
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    if name == "1nn":
        return KNeighborsClassifier(n_neighbors=1)
    return make_pipeline(StandardScaler(), LogisticRegression(max_iter=2000))


def parse_params(items: list[str]) -> dict:
    """``["n_components=20", "kernel=linear"]`` -> ``{"n_components": 20, "kernel": "linear"}``
    (values read as JSON, else kept as text)."""
    out = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise ValueError(f"--param {item!r}: write name=value, e.g. n_components=20.")
        try:
            out[key] = json.loads(value)
        except json.JSONDecodeError:
            out[key] = value                      # a bare string, e.g. kernel=linear
    return out


def _fit(args, X, y, sd, codes):
    """Fit the classifier (``raw``) or adapter + classifier (tuned by source CV with --tune).
    Returns the model, the fitted adapter's ``transform`` (None for raw), its parameters,
    where they came from and the CV summary."""
    from ..model_selection import DEFAULT_GRIDS, source_cv_estimator

    params = parse_params(args.param)
    clf = _classifier(args.classifier)
    if args.method == "raw":
        if params or args.tune:
            raise ValueError("--param and --tune need an adapter; choose a --method other "
                             "than raw.")
        return clf.fit(X[:len(codes)], codes), None, {}, "no adapter", None
    adapter = _adapter(args.method, args.seed, params)
    grid = {k: v for k, v in DEFAULT_GRIDS.get(args.method, {}).items() if k not in params}
    model = source_cv_estimator(adapter, grid if args.tune else {}, clf,
                                verbose=0 if args.quiet or not args.tune else 1).fit(X, y, sd)
    params_from, cv_info = "library defaults" + (" + --param" if params else ""), None
    if args.tune and hasattr(model, "best_params_"):
        params_from = "5-fold CV on the source labels"
        i = model.best_index_
        cv_info = {"mean": float(model.best_score_),
                   "std": float(model.cv_results_["std_test_score"][i]),
                   "n_settings": len(model.cv_results_["params"])}
        model = model.best_estimator_
    final = {k: (v if isinstance(v, int | float | str | bool) or v is None else str(v))
             for k, v in model.adapter_.get_params().items()}
    return model, model.adapter_.transform, final, params_from, cv_info


def _shift(Xs_list, Xt, seed: int, permutations: int, max_rows: int = 1000) -> list[dict]:
    """MMD permutation test of each source against the target (seeded subsamples)."""
    from ..kernels import mmd_permutation_test

    rng = np.random.default_rng(seed)
    out = []
    for Xs in Xs_list:
        r = mmd_permutation_test(subsample(Xs, max_rows, rng), subsample(Xt, max_rows, rng),
                                 n_permutations=permutations, random_state=seed)
        out.append({"mmd2_unbiased": float(r.statistic), "p_value": float(r.p_value)})
    return out


def _value(c):
    """A class as JSON/CSV writes it (numpy scalars as Python ones)."""
    return c.item() if isinstance(c, np.generic) else c


# ---------------------------------------------------------------------------------- run ------
def _outputs(args):
    inputs = (*args.sources, args.target)
    out = check_output(args.out, "--out", inputs=inputs) if args.out else None
    md = js = note = None
    if args.report:
        md, js, note = report_paths(args.report, named=(*inputs, *([args.out] if args.out else [])))
        for path in (md, js):
            if path is None:
                continue
            if out is not None and path.resolve() == out.resolve():
                raise ValueError(f"--out {args.out} and the report {path} are the same file; "
                                 "give them different names.")
            check_output(path, "--report", inputs=inputs)
    return out, md, js, note


def run(args: argparse.Namespace) -> int:
    from .. import __version__
    from ._adapt_report import markdown, write_report

    command = "shiftlearn " + shlex.join(sys.argv[1:] if args._argv is None else args._argv)
    out, md_path, json_path, note = _outputs(args)
    t_start = time.perf_counter()
    srcs, tgt, classes, codes, tgt_codes, X, y, sd = _load(args)
    _check_sizes(args, srcs, tgt)
    K, d, n_src = len(srcs), X.shape[1], len(codes)
    info(args, f"shiftlearn adapt: {K} source file(s), {n_src} labeled rows, {len(tgt.X)} "
               f"target rows, {d} features, {np.unique(codes).size} classes; method "
               f"{args.method}" + (" (tuned by 5-fold source CV)" if args.tune else ""))
    t0 = time.perf_counter()
    model, embed, final, params_from, cv_info = _fit(args, X, y, sd, codes)
    t_fit = time.perf_counter() - t0
    t0 = time.perf_counter()
    pred_codes = np.asarray(model.predict(tgt.X), dtype=np.int64)
    if out is not None:
        with open(out, "w", newline="", encoding="utf-8") as f:
            w = csv.writer(f)
            w.writerow(["row", "prediction"])
            w.writerows((i, _value(classes[c])) for i, c in enumerate(pred_codes, 1))
        info(args, f"wrote {len(pred_codes)} predictions to {out}")
    perms = args.permutations
    if perms:
        info(args, "MMD tests (raw and adapted features) ...")
        shift_raw = _shift([t.X for t in srcs], tgt.X, args.seed, perms)
        shift_ad = ([None] * K if embed is None else
                    _shift([embed(t.X) for t in srcs], embed(tgt.X), args.seed, perms))
    else:
        shift_raw, shift_ad = [], []
    seen = np.unique(np.r_[codes, pred_codes])
    src_share = np.bincount(codes, minlength=classes.size)[seen] / n_src
    tgt_share = np.bincount(pred_codes, minlength=classes.size)[seen] / len(pred_codes)
    rep = {"command": command,
           "date_utc": time.strftime("%Y-%m-%d %H:%M", time.gmtime()), "version": __version__,
           "method": args.method, "classifier": args.classifier, "n_features": d,
           "label_column": args.label_column, "permutations": perms,
           "notes": [_cli_note(n) for t in [*srcs, tgt] for n in t.notes],
           "domains": [{"role": "source", "id": i + 1, "file": str(t.path), "rows": len(t.X),
                        "labeled": len(t.X), "classes": int(np.unique(c).size)}
                       for i, (t, c) in enumerate(zip(srcs, np.split(
                           codes, np.cumsum([len(t.X) for t in srcs])[:-1]), strict=True))]
           + [{"role": "target", "id": -(K + 1), "file": str(tgt.path), "rows": len(tgt.X),
               "labeled": 0, "classes": "–"}],
           "shift_raw": shift_raw, "shift_adapted": shift_ad, "params": final,
           "params_from": params_from, "source_cv": cv_info,
           "class_mix": [[str(_value(classes[c])), float(s), float(p)]
                         for c, s, p in zip(seen, src_share, tgt_share, strict=True)]}
    if tgt_codes is not None and np.any(tgt_codes >= 0):
        raw_clf = _classifier(args.classifier).fit(X[:n_src], codes)
        raw_pred = np.asarray(raw_clf.predict(tgt.X), dtype=np.int64)
        known = tgt_codes >= 0                    # rows whose label is given
        rep["target_accuracy"] = {
            "adapted": float(np.mean(pred_codes[known] == tgt_codes[known])),
            "raw": float(np.mean(raw_pred[known] == tgt_codes[known])),
            "rows": int(known.sum())}
    rep["seconds"] = {"fit": t_fit, "report": time.perf_counter() - t0,
                      "total": time.perf_counter() - t_start}
    if md_path is None and json_path is None:
        print(markdown(rep))
    else:
        written = write_report(rep, md_path, json_path)
        info(args, "wrote " + " and ".join(str(p) for p in written))
    if note:
        info(args, f"note: {note}")
    return 0
