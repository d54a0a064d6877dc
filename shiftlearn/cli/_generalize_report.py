"""The report of ``shiftlearn generalize``: a dict (written as JSON) rendered as Markdown or as
one self-contained HTML page with figures (every held-out domain's score per candidate).

The dict built by :func:`shiftlearn.cli.generalize.run` is the single source: the JSON is the
dict, the Markdown and the HTML only render it. Design notes: ``docs/dev/cli.md``.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

__all__ = ["decision", "figures", "html", "markdown", "write_report"]

#: up to this many held-out domains the per-domain figure is grouped bars; above, a heat-map
MAX_BAR_DOMAINS = 12


def _fmt(v, metric: str) -> str:
    if v is None or not np.isfinite(v):
        return "–"
    return f"{100 * v:.1f}%" if metric == "accuracy" else f"{v:.4g}"


def _metric_words(rep: dict) -> str:
    if rep["metric"] == "accuracy":
        return "accuracy (greater is better)"
    unit = f"{rep['label_name']!r}'s" if rep.get("label_name") else "the label's"
    return f"RMSE, in {unit} units (smaller is better)"


def _metric_name(rep: dict) -> str:
    return "accuracy" if rep["metric"] == "accuracy" else "RMSE"


def decision(rep: dict) -> str:
    """One sentence: the choice and its evidence."""
    rows = rep["candidates"]
    chosen = next(r for r in rows if r["chosen"])
    key = rep["by"]
    others = [r for r in rows if not r["chosen"] and r[key] is not None]
    vs = "; ".join(f"{r['method']} {_fmt(r[key], rep['metric'])}" for r in others)
    where = ("leaving each domain out" if rep["select"] == "lodo" else
             "the clustering-based validation split")
    return (f"Chose {chosen['method']}: its {key} {_metric_name(rep)} over the held-out domains "
            f"({where}) is {_fmt(chosen[key], rep['metric'])}" + (f" (others: {vs})" if vs
                                                                 else "") +
            f"; its worst domain is {chosen['worst_domain']} "
            f"({_fmt(chosen['worst'], rep['metric'])}).")


def _table_rows(rep: dict) -> tuple[list[str], list[list]]:
    rows = rep["candidates"]
    headers = ["held-out domain"] + [r["method"] + (" *" if r["chosen"] else "") for r in rows]
    body = [[d["name"]] + [_fmt(r["per_domain"][i], rep["metric"]) for r in rows]
            for i, d in enumerate(rep["domains"]) if d["held_out"]]
    body.append(["mean"] + [_fmt(r["mean"], rep["metric"]) for r in rows])
    body.append(["worst"] + [_fmt(r["worst"], rep["metric"]) for r in rows])
    body.append(["worst domain"] + [str(r["worst_domain"] or "–") for r in rows])
    return headers, body



def _how(rep: dict) -> str:
    if rep["select"] == "lodo":
        return ("leave one domain out: each domain file held out in turn as an unseen domain, "
                "the candidates trained on the other files and the held-out file predicted as "
                "one new domain (its rows together)")
    return ("one clustering-based validation split (Napoli & White): the 20% of each domain's "
            "rows most shifted from the rest held out, each domain's held-out rows predicted "
            "as one new domain")


def _candidates_lines(rep: dict) -> list[str]:
    est = f"{rep['estimator']} ({rep['estimator_model']})"
    return [f"{r['method']}: {r['what'].replace('the estimator', est)}"
            for r in rep["candidates"]]


def _prediction_rows(rep: dict) -> list[list]:
    out = []
    for p in rep["predictions"]:
        mix = p.get("class_mix")
        summary = (", ".join(f"{c} {100 * s:.0f}%" for c, s in mix.items()) if mix else
                   f"mean prediction {p['prediction_mean']:.4g}")
        out.append([p["file"], p["rows"], summary,
                    _fmt(p["score"], rep["metric"]) if p["score"] is not None else "–"])
    return out


# ---------------------------------------------------------------------------- Markdown -----
def markdown(rep: dict) -> str:
    """The Markdown report of one ``shiftlearn generalize`` run."""
    L = [f"# shiftlearn generalize: {rep['choice']}", "", f"**{decision(rep)}**", "",
         f"Command: `{rep['command']}`  ",
         f"Date (UTC): {rep['date_utc']}; shiftlearn {rep['version']}; seed {rep['seed']}", "",
         "## Data", "", "| domain | file | rows |", "|---|---|---|"]
    for d in rep["domains"]:
        L.append(f"| {d['name']} | `{d['file']}` | {d['rows']} |")
    L += ["", f"{rep['n_features']} features; task {rep['task']}"
          + (f" ({len(rep['classes'])} classes)" if rep.get("classes") else "") + "."]
    L += ["", "## Which method?", "", f"Validation: {_how(rep)}. Score: {_metric_words(rep)}; "
          f"ranked by the {rep['by']} over the held-out domains.", "", "Candidates:", ""]
    L += [f"* {line}" for line in _candidates_lines(rep)]
    headers, body = _table_rows(rep)
    L += ["", "| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    L += ["| " + " | ".join(str(c) for c in row) + " |" for row in body]
    failed = [r for r in rep["candidates"] if r["failed"]]
    if failed:
        L += ["", "Not validated everywhere:", ""] + [f"* {r['method']}: {r['failed']}"
                                                      for r in failed]
    if rep["predictions"]:
        L += ["", "## Predictions", "", "| file | rows | predicted | score (if labeled) |",
              "|---|---|---|---|"]
        L += [f"| `{a}` | {b} | {c} | {d} |" for a, b, c, d in _prediction_rows(rep)]
    s = rep["seconds"]
    L += ["", f"Time: validation and fit {s['fit']:.2f} s, predictions {s['predict']:.2f} s."]
    if rep.get("notes"):
        L += ["", "Notes from reading the files:", ""] + [f"* {n}" for n in rep["notes"]]
    if rep.get("warnings"):
        L += ["", "Warnings raised during the run (kept here, not on the terminal):", ""] + \
            [f"* {w}" for w in rep["warnings"]]
    return "\n".join(L) + "\n"


# ------------------------------------------------------------------------------ figures -----
def figures(rep: dict) -> dict[str, bytes]:
    """The PNG figures: every held-out domain's score per candidate (grouped bars, or a
    heat-map beyond :data:`MAX_BAR_DOMAINS` domains) and each candidate's mean and worst."""
    from ..report import bar_chart, grouped_bars, heatmap

    rows = rep["candidates"]
    idx = [i for i, d in enumerate(rep["domains"]) if d["held_out"]]
    doms = [rep["domains"][i]["name"] for i in idx]
    label = {r["method"]: r["method"] + (" (chosen)" if r["chosen"] else "") for r in rows}
    metric = "accuracy" if rep["metric"] == "accuracy" else "RMSE"
    title = f"{metric} of each held-out domain, per candidate"
    out = {}
    if len(doms) <= MAX_BAR_DOMAINS:
        out["per_domain"] = grouped_bars(
            doms, {label[r["method"]]: [np.nan if r["per_domain"][i] is None
                                        else r["per_domain"][i] for i in idx] for r in rows},
            title=title, ylabel=_metric_words(rep))
    else:
        M = np.array([[np.nan if r["per_domain"][i] is None else r["per_domain"][i]
                       for r in rows] for i in idx])
        out["per_domain"] = heatmap(M, doms, col_names=[label[r["method"]] for r in rows],
                                    title=title, label=metric)
    key = rep["by"]
    chosen = next(i for i, r in enumerate(rows) if r["chosen"])
    out["aggregate"] = bar_chart([r["method"] for r in rows],
                                 [np.nan if r[key] is None else r[key] for r in rows],
                                 highlight=chosen,
                                 title=f"{key.capitalize()} {metric} over the held-out domains",
                                 ylabel=_metric_words(rep))
    return out


# --------------------------------------------------------------------------------- HTML -----
def html(rep: dict, pictures: dict[str, bytes]) -> str:
    """The self-contained HTML page of one ``shiftlearn generalize`` run."""
    from ..report import HtmlReport

    doc = HtmlReport(f"shiftlearn generalize: {rep['choice']}")
    doc.paragraph(decision(rep), cls="lead")
    doc.heading("Data")
    doc.table(["domain", "file", "rows"],
              [[d["name"], d["file"], d["rows"]] for d in rep["domains"]])
    doc.paragraph(f"{rep['n_features']} features; task {rep['task']}"
                  + (f" ({len(rep['classes'])} classes)" if rep.get("classes") else "") + ".",
                  cls="muted")
    doc.heading("Which method?")
    doc.paragraph(f"Validation: {_how(rep)}. Score: {_metric_words(rep)}; ranked by the "
                  f"{rep['by']} over the held-out domains. Candidates:")
    doc.items(_candidates_lines(rep))
    if "per_domain" in pictures:
        doc.figure(pictures["per_domain"], "Score of every held-out domain for each candidate; "
                   "the chosen candidate is marked in the legend.")
    if "aggregate" in pictures:
        doc.figure(pictures["aggregate"], f"Each candidate's {rep['by']} over the held-out "
                   "domains; the chosen one is highlighted.")
    headers, body = _table_rows(rep)
    doc.table(headers, body)
    failed = [r for r in rep["candidates"] if r["failed"]]
    if failed:
        doc.paragraph("Not validated on every held-out domain:", cls="warning")
        doc.items([f"{r['method']}: {r['failed']}" for r in failed])
    if rep["predictions"]:
        doc.heading("Predictions")
        doc.table(["file", "rows", "predicted", "score (if the file has labels)"],
                  _prediction_rows(rep))
        doc.paragraph("Each file was predicted as one new domain with the chosen model, "
                      "refitted on every domain file. Labels in a predicted file are only "
                      "used for its score.", cls="muted")
    doc.heading("Reproducibility")
    doc.code(rep["command"])
    s = rep["seconds"]
    doc.paragraph(f"shiftlearn {rep['version']}; seed {rep['seed']}; {rep['date_utc']} UTC; "
                  f"validation and fit {s['fit']:.2f} s, predictions {s['predict']:.2f} s.",
                  cls="muted")
    if rep.get("notes"):
        doc.heading("Notes from reading the files", 3)
        doc.items(rep["notes"])
    if rep.get("warnings"):
        doc.heading("Warnings raised during the run", 3)
        doc.items(rep["warnings"])
    return doc.render()


def write_report(rep: dict, paths: dict[str, Path], pictures: dict[str, bytes] | None = None
                 ) -> list[Path]:
    """Write the report in each format of ``paths`` (``html``, ``md``, ``json``)."""
    from ..workflow import write_formats

    return write_formats(rep, paths, markdown, html, pictures)
