"""``shiftlearn shift``: how far apart are your domains? A matrix, tests, a sentence, a report.

One file with a domain column, or one file per domain (named after the file). Prints the
unbiased MMD² between every pair of domains with permutation-test p-values corrected by Holm's
method, a plain-language line ("webcam and dslr are close; amazon differs from all others"),
and, with ``--label-column``, the class-conditional shift and the class shares per domain.
``--report x.html`` writes a self-contained page with the heat-map and 2-D maps of the domains
(``.md``: Markdown; ``.json``: the numbers; ``.html``/``.md`` also write the JSON beside).

The statistics are :func:`shiftlearn.report.analyse_shift`; the command only reads files,
prints and writes. Output paths are checked before any file is read. Design notes:
``docs/dev/cli.md``.
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
import time
import warnings
from pathlib import Path

import numpy as np

from ._common import (
    check_output,
    count,
    fraction,
    info,
    match_columns,
    print_table,
    report_paths,
    warning_lines,
)

_HEADER = {"auto": None, "yes": True, "no": False}


def add_parser(subparsers, parents) -> argparse.ArgumentParser:
    p = subparsers.add_parser(
        "shift", parents=parents,
        help="how far apart are your domains? MMD² matrix, tests, a sentence, an HTML report",
        description="Measure the shift between domains: the MMD² between every pair of "
                    "domains with permutation-test p-values (Holm-corrected), per-class shift "
                    "when labels are given, and a plain-language summary. Give one file per "
                    "domain, or files with a --domain-column. Files as for `shiftlearn adapt` "
                    "(CSV/TSV/whitespace text, .gz/.bz2/.xz/.zip, Parquet, .npy/.npz).",
        epilog="Example: shiftlearn shift amazon.csv webcam.csv dslr.csv --label-column label "
               "--report shift.html")
    p.add_argument("files", nargs="+", metavar="FILE",
                   help="one file per domain, or files holding a --domain-column")
    p.add_argument("--domain-column", metavar="COLUMN",
                   help="column naming each row's domain (a header name or an index)")
    p.add_argument("--label-column", metavar="COLUMN",
                   help="class label column (header name or index): adds the per-class shift "
                        "and the class shares; without it every other column is a feature")
    p.add_argument("--header", choices=tuple(_HEADER), default="auto",
                   help="is the first line of each text file a header? (default: auto)")
    p.add_argument("--permutations", type=count(0), default=200, metavar="N",
                   help="permutations of each test (default %(default)s; 0: MMD² only)")
    p.add_argument("--max-rows", type=count(2), default=500, metavar="N",
                   help="use at most N rows per domain (and per class), a seeded sample "
                        "(default %(default)s)")
    p.add_argument("--alpha", type=fraction, default=0.05,
                   help="family-wise level of the Holm-corrected decisions (default 0.05)")
    p.add_argument("--no-standardize", dest="standardize", action="store_false",
                   help="measure the features as they are (default: z-score each feature "
                        "with the statistics of all domains pooled)")
    p.add_argument("--report", metavar="FILE",
                   help="write a report: .html (self-contained page with figures), .md or "
                        ".json; .html and .md also write the JSON beside")
    return p


# ------------------------------------------------------------------------------ reading ------
def _read(args):
    """``(names, {name: X}, {name: labels or None}, files per name, notes)``."""
    from ..io import TableError, encode_labels, read_table

    header = _HEADER[args.header]
    with_labels = args.label_column is not None
    tables, notes, first, unlabeled = [], [], None, []
    for f in args.files:
        try:
            t = read_table(f, label_column=args.label_column, with_labels=with_labels,
                           domain_column=args.domain_column, header=header,
                           allow_missing_labels=True)
        except TableError as exc:
            # a file without the named label column (a target without labels) is unlabeled;
            # it is read once a file is known to have that column (else the name is mistyped)
            if not with_labels and "is not a number" in str(exc):
                raise TableError(f"{exc} If that column holds class labels, name it with "
                                 "--label-column.") from None
            if not with_labels or f"no column named {args.label_column!r}" not in str(exc):
                raise
            first, t = first or exc, None
            unlabeled.append(len(tables))
        tables.append(t)
    if with_labels and len(unlabeled) == len(tables):
        raise first                        # names the columns and a close match
    for i in unlabeled:
        f = args.files[i]
        tables[i] = read_table(f, with_labels=False, domain_column=args.domain_column,
                               header=header)
        tables[i].notes.append(f"{f}: no column {args.label_column!r}, so its rows are "
                               "unlabeled (no per-class shift for them).")
    for t in tables:
        notes += t.notes
    first = tables[0]
    hint = (" If one of them has a label column, name it with --label-column."
            if not with_labels else "")
    notes += match_columns(first, tables[1:], hint=hint)
    labels = None
    if with_labels:
        labeled = [t for t in tables if t.y is not None]
        classes, codes = encode_labels(labeled)
        code_of = {id(t): c for t, c in zip(labeled, codes, strict=True)}
        labels = [None if t.y is None else
                  np.array([None if c < 0 else str(_value(classes[c])) for c in code_of[id(t)]],
                           dtype=object) for t in tables]
    X, y, files = {}, {}, {}
    if args.domain_column is None:
        if len(tables) < 2:
            raise ValueError(f"one file ({tables[0].path}) and no --domain-column: give one "
                             "file per domain, or name the column that holds each row's "
                             "domain with --domain-column.")
        stems = [Path(t.path).name.split(".")[0] for t in tables]
        names = stems if len(set(stems)) == len(stems) else [str(t.path) for t in tables]
        if len(set(names)) < len(names):
            raise ValueError("the same file is given twice; give each domain's file once.")
        for i, (name, t) in enumerate(zip(names, tables, strict=True)):
            X[name], files[name] = t.X, [str(t.path)]
            y[name] = None if labels is None else labels[i]
        return names, X, y, files, notes
    names: list[str] = []
    for i, t in enumerate(tables):
        doms = np.array([str(_value(d)) for d in t.domains], dtype=object)
        for d in dict.fromkeys(doms.tolist()):
            rows = doms == d
            if d not in X:
                names.append(d)
                X[d], y[d], files[d] = t.X[rows], _rows(labels, i, rows), [str(t.path)]
            else:
                X[d] = np.vstack([X[d], t.X[rows]])
                if labels is not None:
                    more = _rows(labels, i, rows)
                    if more is None:
                        more = np.full(int(rows.sum()), None, dtype=object)
                    y[d] = (np.concatenate([np.full(len(X[d]) - len(more), None, dtype=object)
                                            if y[d] is None else y[d], more]))
                files[d].append(str(t.path))
    if len(names) < 2:
        raise ValueError(f"the domain column {args.domain_column!r} holds one domain "
                         f"({names[0]!r}); the shift is measured between two domains or more.")
    return names, X, y, files, notes


def _rows(labels, i, rows):
    return None if labels is None or labels[i] is None else labels[i][rows]


def _value(v):
    return v.item() if isinstance(v, np.generic) else v


def _planned_tests(names, X, y) -> int:
    k = len(names)
    total = k * (k - 1) // 2
    if any(v is not None for v in y.values()):
        classes = {c for v in y.values() if v is not None for c in v if c is not None}
        for c in classes:
            m = sum(1 for n in names if y[n] is not None and np.sum(y[n] == c) >= 2)
            total += m * (m - 1) // 2
    return total


# ------------------------------------------------------------------------------ printing -----
def _fmt_p(p) -> str:
    return "–" if p is None or not np.isfinite(p) else f"{p:.3g}"


def _print(res, args) -> None:
    k = len(res.names)
    used = res.permutations_used.get("pairs", 0)
    raised = (f" (raised from {res.permutations} so that Holm's correction over "
              f"{k * (k - 1) // 2} tests can reach {res.alpha:g})" if used > res.permutations
              else "")
    tests = (f"{used} permutations per test{raised}, p-values Holm-corrected at {res.alpha:g}"
             if res.permutations else "no permutation tests (--permutations 0)")
    print(f"Shift between {k} domains: unbiased MMD² with a Gaussian kernel (sigma "
          f"{res.sigma:.4g}: median heuristic on the pooled rows), "
          + ("features z-scored with the statistics of all domains pooled" if res.standardized
             else "features as given")
          + f"; at most {res.max_rows} rows per domain (seeded sample, seed {res.seed}); "
          + tests + ".")
    print("")
    D, diff = res.mmd2, res.differ()
    rows = [[n, *["–" if i == j else f"{D[i, j]:.3g}" + ("*" if diff[i, j] else "")
                  for j in range(k)]] for i, n in enumerate(res.names)]
    print_table(["MMD²", *res.names], rows,
                title="MMD² between domains" + (" (* = differ, Holm-corrected)"
                                                if res.permutations else ""))
    print("")
    print_table(["domain A", "domain B", "rows A", "rows B", "MMD²", "p", "p (Holm)",
                 "differ?"],
                [[p["a"], p["b"], p["n_a"], p["n_b"], f"{p['mmd2']:.4g}", _fmt_p(p["p_value"]),
                  _fmt_p(p["p_holm"]),
                  "–" if p["differ"] is None else ("yes" if p["differ"] else "no")]
                 for p in res.pairs], title="Tests, pair by pair")
    print("")
    print(res.sentence)
    if res.classes and not res.per_class:
        print("")
        print("Per-class shift: no class has 2 labeled rows in two domains or more (labels in "
              + ", ".join(res.class_share) + " only).")
    elif res.classes:
        print("")
        by = {c: [t for t in res.per_class if t["class"] == c] for c in res.classes}
        rows = []
        for c, ts in by.items():
            if not ts:
                rows.append([c, 0, "–", "–", "(fewer than 2 rows in two domains)"])
                continue
            top = max(ts, key=lambda t: t["mmd2"])
            n_diff = (sum(bool(t["differ"]) for t in ts) if res.permutations else "–")
            rows.append([c, len(ts), n_diff, f"{np.median([t['mmd2'] for t in ts]):.4g}",
                         f"{top['a']}–{top['b']} ({top['mmd2']:.4g})"])
        print_table(["class", "pairs", "differ", "median MMD²", "largest"], rows,
                    align="lrrrl",
                    title="Per-class shift (MMD² between the rows of one class, same kernel"
                          + (f"; {res.permutations_used['per_class']} permutations, tests "
                             "Holm-corrected as one family)" if res.permutations else ")"))
        print("")
        shown = [n for n in res.names if n in res.class_share]
        print_table(["class", *shown],
                    [[c, *[f"{100 * res.class_share[n][c]:.1f}%" for n in shown]]
                     for c in res.classes],
                    title="Class shares per domain (labeled rows; differing shares = label "
                          "shift)")


# ------------------------------------------------------------------------------ reports ------
def _markdown(rep: dict) -> str:
    res = rep["analysis"]
    names = res["names"]
    L = [f"# shiftlearn shift: {len(names)} domains", "", f"**{res['sentence']}**", "",
         f"Command: `{rep['command']}`  ", f"Date (UTC): {rep['date_utc']}; shiftlearn "
         f"{rep['version']}", "", "## MMD² between domains", "",
         "| | " + " | ".join(names) + " |", "|---" * (len(names) + 1) + "|"]
    for i, n in enumerate(names):
        L.append(f"| {n} | " + " | ".join("–" if i == j else f"{v:.4g}" for j, v in
                                          enumerate(res["mmd2"][i])) + " |")
    L += ["", "| A | B | rows A | rows B | MMD² | p | p (Holm) |", "|---|---|---|---|---|---|---|"]
    for p in res["pairs"]:
        L.append(f"| {p['a']} | {p['b']} | {p['n_a']} | {p['n_b']} | {p['mmd2']:.4g} | "
                 f"{_fmt_p(p['p_value'])} | {_fmt_p(p['p_holm'])} |")
    if res["per_class"]:
        L += ["", "## Per-class shift", "", "| class | A | B | MMD² | p (Holm) |",
              "|---|---|---|---|---|"]
        for t in res["per_class"]:
            L.append(f"| {t['class']} | {t['a']} | {t['b']} | {t['mmd2']:.4g} | "
                     f"{_fmt_p(t['p_holm'])} |")
    L += ["", rep["method"]]
    return "\n".join(L) + "\n"


def _html(rep: dict, res, X: dict) -> str:
    from ..report import (
        HtmlReport,
        domain_map,
        domain_map_figure,
        grouped_bars,
        heatmap,
        row_map,
        scatter_figure,
    )

    names = res.names
    doc = HtmlReport(f"shiftlearn shift: {len(names)} domains")
    doc.paragraph(res.sentence, cls="lead")
    doc.heading("The domains")
    doc.table(["domain", "file(s)", "rows", "rows used"],
              [[n, ", ".join(rep["files"][n]), s, u] for n, s, u in
               zip(names, res.sizes, res.used, strict=True)])
    doc.heading("How far apart?")
    doc.figure(heatmap(res.mmd2, names, marks=res.differ() if res.permutations else None,
                       title="MMD² between domains" + (" (* differ, Holm)" if res.permutations
                                                       else "")),
               "Unbiased MMD² between every pair of domains (larger: further apart); * marks "
               f"the pairs that differ at {res.alpha:g} after Holm's correction.")
    doc.figure(domain_map_figure(domain_map(res.mmd2), names, res.sizes,
                                 title="Map of the domains"),
               "The domains placed so that their distances approximate √MMD² (classical "
               "multidimensional scaling); point area grows with the rows.")
    pts = row_map(X, max_rows=min(res.max_rows, 300), standardize=res.standardized,
                  random_state=res.seed)
    doc.figure(scatter_figure(pts, title="Rows of each domain (PCA)"),
               "The rows of every domain on the first two principal components of the pooled "
               "rows (at most 300 per domain, seeded).")
    doc.table(["domain A", "domain B", "rows A", "rows B", "MMD²", "p", "p (Holm)", "differ?"],
              [[p["a"], p["b"], p["n_a"], p["n_b"], f"{p['mmd2']:.4g}", _fmt_p(p["p_value"]),
                _fmt_p(p["p_holm"]),
                "–" if p["differ"] is None else ("yes" if p["differ"] else "no")]
               for p in res.pairs])
    if res.classes:
        doc.heading("Per class")
        pair_names = [f"{p['a']}–{p['b']}" for p in res.pairs]
        M = np.full((len(res.classes), len(pair_names)), np.nan)
        marks = np.zeros_like(M, dtype=bool)
        for t in res.per_class:
            i, j = res.classes.index(t["class"]), pair_names.index(f"{t['a']}–{t['b']}")
            M[i, j], marks[i, j] = t["mmd2"], bool(t["differ"])
        if res.per_class:
            doc.figure(heatmap(M, res.classes, col_names=pair_names, marks=marks,
                               title="Class-conditional MMD²"),
                       "MMD² between the rows of one class in two domains (blank: fewer than "
                       "2 rows on a side); * differs after Holm's correction over all these "
                       "tests. A class far above the others shifts differently.")
        shown = [n for n in names if n in res.class_share]
        doc.figure(grouped_bars(res.classes, {n: [res.class_share[n][c] for c in res.classes]
                                              for n in shown},
                                title="Class shares per domain", ylabel="share of rows"),
                   "Share of each class among a domain's labeled rows; different shares are "
                   "label shift.")
    doc.heading("Method and reproducibility")
    doc.paragraph(rep["method"])
    doc.code(rep["command"])
    doc.paragraph(f"shiftlearn {rep['version']}; {rep['date_utc']} UTC; "
                  f"{rep['seconds']:.1f} s.", cls="muted")
    if rep["notes"]:
        doc.heading("Notes from reading the files", 3)
        doc.items(rep["notes"])
    return doc.render()


def run(args: argparse.Namespace) -> int:
    # warnings (numpy's, scikit-learn's) go to the report, not stderr
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        return _run(args, caught)


def _run(args: argparse.Namespace, caught: list) -> int:
    from .. import __version__
    from .._progress import task
    from ..report import analyse_shift

    command = "shiftlearn " + shlex.join(sys.argv[1:] if args._argv is None else args._argv)
    paths, note = ({}, None) if not args.report else report_paths(args.report,
                                                                     named=tuple(args.files))
    for p in paths.values():
        check_output(p, "--report", inputs=tuple(args.files))
    t0 = time.perf_counter()
    names, X, y, files, notes = _read(args)
    for n in notes:
        info(args, f"note: {n}")
    info(args, f"shiftlearn shift: {len(names)} domains ("
               + ", ".join(f"{n}: {len(X[n])} rows" for n in names) + ")")
    with task("MMD tests", _planned_tests(names, X, y)) as advance:
        res = analyse_shift(X, y if args.label_column is not None else None,
                            permutations=args.permutations, max_rows=args.max_rows,
                            alpha=args.alpha, standardize=args.standardize,
                            random_state=args.seed,
                            on_test=lambda what: advance(description=f"MMD test: {what}"))
    _print(res, args)
    if not paths:
        return 0
    method = (f"Unbiased MMD² with a Gaussian kernel exp(-d²/(2σ²)), σ = {res.sigma:.4g} "
              "(median heuristic on the pooled rows of all domains, one σ for every pair); "
              + ("features z-scored with the statistics of all domains pooled; "
                 if res.standardized else "features as given; ")
              + f"at most {res.max_rows} rows per domain and per class (seeded sample, seed "
              f"{res.seed}); "
              + ("permutation tests, p = (1 + #{null ≥ observed}) / (1 + permutations), "
                 + ", ".join(f"{v} permutations per {k.replace('_', '-')} test"
                             for k, v in res.permutations_used.items())
                 + f" (asked {res.permutations}, raised to 2 × tests / alpha where fewer could "
                 "never pass Holm's correction), "
                 f"Holm-corrected at {res.alpha:g} (pairs of domains as one family, per-class "
                 "tests as another). Close means no detectable difference with these sample "
                 "sizes, not proof of equality."
                 if res.permutations else "no permutation tests."))
    rep = {"command": command, "version": __version__,
           "date_utc": time.strftime("%Y-%m-%d %H:%M", time.gmtime()), "files": files,
           "notes": notes, "method": method, "analysis": res.to_dict(),
           "seconds": time.perf_counter() - t0}
    page = _html(rep, res, X) if "html" in paths else None
    rep["warnings"] = warning_lines(caught)
    written = []
    for kind, p in paths.items():
        if kind == "json":
            p.write_text(json.dumps(rep, indent=2, allow_nan=False), encoding="utf-8")
        elif kind == "md":
            p.write_text(_markdown(rep), encoding="utf-8")
        else:
            p.write_text(page, encoding="utf-8")
        written.append(str(p))
    info(args, "wrote " + " and ".join(written))
    if note:
        info(args, f"note: {note}")
    return 0
