"""``shiftlearn adapt``: domain adaptation on your own files, with a report.

Labeled source file(s) and one unlabeled target file in; the target's predicted labels and a
Markdown + JSON report out: the data, how far the target is from each source before and after
adaptation (MMD permutation tests), the method and its hyper-parameters (chosen by 5-fold CV
on the source labels with ``--tune``, the papers' protocol), the predicted class mix, and, if
the target file happens to carry labels, the accuracy of the adapted and of the raw model
(for evaluation only: nothing is chosen with them).
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
import time
from pathlib import Path

import numpy as np

METHODS = ("raw", "TCA", "SCA", "uSCA", "RF-TCA", "RF-SCA")
CLASSIFIERS = ("1nn", "logreg")


def _adapter(method: str, seed: int, params: dict):
    from . import RFSCA, RFTCA, SCA, TCA, uSCA

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


def _parse_params(items: list[str]) -> dict:
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


def _shift(Xs_list, Xt, seed: int, permutations: int, max_rows: int = 1000) -> list[dict]:
    """MMD permutation test of each source against the target (seeded subsamples)."""
    from ..cli import _subsample
    from ..kernels import mmd_permutation_test

    rng = np.random.default_rng(seed)
    out = []
    for Xs in Xs_list:
        r = mmd_permutation_test(_subsample(Xs, max_rows, rng), _subsample(Xt, max_rows, rng),
                                 n_permutations=permutations, random_state=seed)
        out.append({"mmd2_unbiased": float(r.statistic), "p_value": float(r.p_value)})
    return out


def _say(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def _markdown(rep: dict) -> str:
    L = [f"# shiftlearn adapt: {rep['method']} + {rep['classifier']}", "",
         f"Command: `{rep['command']}`  ", f"Date (UTC): {rep['date_utc']}; shiftlearn "
         f"{rep['version']}", "", "## Data", "",
         "| domain | file | rows | labeled | classes |", "|---|---|---|---|---|"]
    for d in rep["domains"]:
        L.append(f"| {d['role']} {d['id']} | `{d['file']}` | {d['rows']} | {d['labeled']} | "
                 f"{d['classes']} |")
    L += ["", f"{rep['n_features']} features; label column {rep['label_column']!r}.", "",
          "## How far is the target from each source?", "",
          "Unbiased MMD² between the source and the target (Gaussian kernel, median-heuristic "
          "bandwidth of each space, at most 1,000 rows per side, seeded) and its permutation "
          f"p-value ({rep['permutations']} permutations). Small p: the distributions differ. "
          "The MMD² of the raw and the adapted space are on different scales; a small p in the "
          "adapted space means the target still differs from the source there (the test is "
          "often more powerful in a few learned dimensions than in the raw ones).", "",
          "| source | MMD² raw | p raw | MMD² adapted | p adapted |", "|---|---|---|---|---|"]
    for i, (b, a) in enumerate(zip(rep["shift_raw"], rep["shift_adapted"], strict=True), 1):
        L.append(f"| {i} | {b['mmd2_unbiased']:.4g} | {b['p_value']:.3g} | "
                 + (f"{a['mmd2_unbiased']:.4g} | {a['p_value']:.3g} |" if a else "– | – |"))
    L += ["", "## Model", "", f"Hyper-parameters: `{json.dumps(rep['params'])}` "
          f"({rep['params_from']})."]
    if rep.get("source_cv") is not None:
        cv = rep["source_cv"]
        L.append(f"5-fold source CV accuracy of the chosen setting: {100 * cv['mean']:.2f}% "
                 f"(± {100 * cv['std']:.2f}) over {cv['n_settings']} settings.")
    L += ["", "## Predictions", "", "| class | source share | predicted target share |",
          "|---|---|---|"]
    for c, s, p in rep["class_mix"]:
        L.append(f"| {c} | {100 * s:.1f}% | {100 * p:.1f}% |")
    if rep.get("target_accuracy") is not None:
        ta = rep["target_accuracy"]
        L += ["", f"The target file has labels (used for this line only, never to choose): "
              f"accuracy {100 * ta['adapted']:.2f}% adapted vs {100 * ta['raw']:.2f}% with the "
              "same classifier on the raw features."]
    L += ["", f"Time: fit {rep['seconds']['fit']:.2f} s, report {rep['seconds']['report']:.2f} s."]
    return "\n".join(L) + "\n"


def main(argv: list[str] | None = None) -> int:
    """Adapt labeled source file(s) to an unlabeled target file; write predictions and a report.

    Files: CSV/TSV/whitespace text (optional header) or ``.npy`` / ``.npz`` (arrays ``X``,
    ``y``). Source rows need a label column; the target's label column, if present, is used
    only to report accuracy.

    Examples
    --------
    >>> main(["src.csv", "--target", "tgt.csv", "--method", "SCA", "--tune",
    ...       "--out", "pred.csv", "--report", "report.md"])  # doctest: +SKIP
    """
    ap = argparse.ArgumentParser(prog="shiftlearn adapt", description=main.__doc__.split("\n\n")[0])
    ap.add_argument("sources", nargs="+", help="labeled source file(s), one domain each")
    ap.add_argument("--target", required=True, help="the unlabeled target file")
    ap.add_argument("--label-column", default="-1",
                    help="label column: a header name or an index (default -1, the last)")
    ap.add_argument("--target-has-labels", action="store_true",
                    help="the target file has the label column too (evaluation only)")
    ap.add_argument("--method", choices=METHODS, default="SCA")
    ap.add_argument("--classifier", choices=CLASSIFIERS, default="1nn",
                    help="trained on the adapted source rows (default 1nn, the papers' choice)")
    ap.add_argument("--tune", action="store_true",
                    help="choose the hyper-parameters by 5-fold CV on the source labels "
                         "(grids: shiftlearn.cli.DEMO_GRIDS)")
    ap.add_argument("--param", action="append", default=[], metavar="NAME=VALUE",
                    help="set an adapter hyper-parameter (repeatable), e.g. n_components=20")
    ap.add_argument("--permutations", type=int, default=200,
                    help="permutations of each MMD test in the report (0: skip the tests)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", help="write the target predictions here (CSV: row,prediction)")
    ap.add_argument("--report", help="write the report here (Markdown; JSON beside it)")
    argv = sys.argv[1:] if argv is None else list(argv)
    args = ap.parse_args(argv)
    try:
        return _run(args, "shiftlearn adapt " + shlex.join(argv))
    except ValueError as exc:
        print(f"shiftlearn adapt: error: {exc}", file=sys.stderr)
        return 2


def _load(args):
    """Read and check every file; return the sources, the target, the classes and the packed
    ``X``, ``y`` (class codes, -1 on the target) and ``sample_domain``."""
    from ._table import read_table

    srcs = [read_table(p, label_column=args.label_column) for p in args.sources]
    tgt = read_table(args.target, label_column=args.label_column,
                     with_labels=args.target_has_labels)
    for t in srcs:
        missing = np.flatnonzero(np.isin(np.char.lower(t.y.astype(str)), ["", "nan", "na"]))
        if missing.size:
            raise ValueError(f"{t.path}: {missing.size} row(s) without a label (data rows "
                             f"{', '.join(str(i + 1) for i in missing[:5])}"
                             f"{', ...' if missing.size > 5 else ''}); label or drop them.")
    d = srcs[0].X.shape[1]
    for t in [*srcs[1:], tgt]:
        if t.X.shape[1] != d:
            raise ValueError(f"{t.path} has {t.X.shape[1]} feature columns but {srcs[0].path} "
                             f"has {d}.")
        if t.feature_names and srcs[0].feature_names and t.feature_names != srcs[0].feature_names:
            raise ValueError(f"{t.path}: feature columns {t.feature_names} differ from "
                             f"{srcs[0].path}'s {srcs[0].feature_names}.")
    ints = all(np.issubdtype(t.y.dtype, np.integer) for t in srcs)
    classes, codes = np.unique(np.concatenate([t.y if ints else t.y.astype(str) for t in srcs]),
                               return_inverse=True)
    if classes.size < 2:
        raise ValueError(f"The source rows have a single class ({classes[0]!r}); adaptation "
                         "for classification needs at least two.")
    K = len(srcs)
    X = np.vstack([t.X for t in srcs] + [tgt.X])
    y = np.r_[codes, -np.ones(len(tgt.X), dtype=np.int64)]
    sd = np.r_[np.concatenate([np.full(len(t.X), i + 1) for i, t in enumerate(srcs)]),
               np.full(len(tgt.X), -(K + 1))]
    return srcs, tgt, classes, codes, X, y, sd


def _fit(args, X, y, sd, codes):
    """Fit the classifier (``raw``) or adapter + classifier (tuned by source CV with --tune).
    Returns the model, the fitted adapter's ``transform`` (None for raw), its parameters,
    where they came from and the CV summary."""
    from ..cli import DEMO_GRIDS, source_cv_estimator

    params = _parse_params(args.param)
    clf = _classifier(args.classifier)
    if args.method == "raw":
        if params or args.tune:
            raise ValueError("--param and --tune need an adapter (not --method raw).")
        return clf.fit(X[:len(codes)], codes), None, {}, "no adapter", None
    adapter = _adapter(args.method, args.seed, params)
    grid = {k: v for k, v in DEMO_GRIDS.get(args.method, {}).items() if k not in params}
    model = source_cv_estimator(adapter, grid if args.tune else {}, clf,
                                verbose=1 if args.tune else 0).fit(X, y, sd)
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


def _run(args, command: str) -> int:
    from .. import __version__

    t_start = time.perf_counter()
    srcs, tgt, classes, codes, X, y, sd = _load(args)
    K, d, n_src = len(srcs), X.shape[1], len(codes)
    _say(f"shiftlearn adapt: {K} source file(s), {n_src} labeled rows, {len(tgt.X)} target rows, "
         f"{d} features, {classes.size} classes; method {args.method}"
         + (" (tuned by 5-fold source CV)" if args.tune else ""))
    t0 = time.perf_counter()
    model, embed, final, params_from, cv_info = _fit(args, X, y, sd, codes)
    t_fit = time.perf_counter() - t0
    t0 = time.perf_counter()
    pred_codes = model.predict(tgt.X)
    pred = classes[pred_codes]
    if args.out:
        lines = ["row,prediction"] + [f"{i},{p}" for i, p in enumerate(pred, 1)]
        Path(args.out).write_text("\n".join(lines) + "\n")
        _say(f"wrote {len(pred)} predictions to {args.out}")
    perms = max(int(args.permutations), 0)
    if perms:
        _say("MMD tests (raw and adapted features) ...")
        shift_raw = _shift([t.X for t in srcs], tgt.X, args.seed, perms)
        shift_ad = ([None] * K if embed is None else
                    _shift([embed(t.X) for t in srcs], embed(tgt.X), args.seed, perms))
    else:
        shift_raw, shift_ad = [], []
    src_share = np.bincount(codes, minlength=classes.size) / n_src
    tgt_share = np.bincount(pred_codes, minlength=classes.size) / len(pred)
    rep = {"command": command,
           "date_utc": time.strftime("%Y-%m-%d %H:%M", time.gmtime()), "version": __version__,
           "method": args.method, "classifier": args.classifier, "n_features": d,
           "label_column": args.label_column, "permutations": perms,
           "domains": [{"role": "source", "id": i + 1, "file": t.path, "rows": len(t.X),
                        "labeled": len(t.X), "classes": int(np.unique(t.y.astype(str)).size)}
                       for i, t in enumerate(srcs)]
           + [{"role": "target", "id": -(K + 1), "file": tgt.path, "rows": len(tgt.X),
               "labeled": 0, "classes": "–"}],
           "shift_raw": shift_raw, "shift_adapted": shift_ad, "params": final,
           "params_from": params_from, "source_cv": cv_info,
           "class_mix": [[str(c), float(s), float(p)]
                         for c, s, p in zip(classes, src_share, tgt_share, strict=True)]}
    if tgt.y is not None:
        truth = tgt.y.astype(str)                   # labels compared as text
        raw_clf = _classifier(args.classifier).fit(X[:n_src], codes)
        raw_pred = classes[raw_clf.predict(tgt.X)]
        rep["target_accuracy"] = {"adapted": float(np.mean(pred.astype(str) == truth)),
                                  "raw": float(np.mean(raw_pred.astype(str) == truth))}
    rep["seconds"] = {"fit": t_fit, "report": time.perf_counter() - t0,
                      "total": time.perf_counter() - t_start}
    md = _markdown(rep)
    if args.report:
        path = Path(args.report)
        path.write_text(md)
        path.with_suffix(".json").write_text(json.dumps(rep, indent=2))
        _say(f"wrote {path} and {path.with_suffix('.json')}")
    else:
        print(md)
    return 0

