"""The report of an adaptation run (``shiftlearn adapt``, :func:`shiftlearn.adapt`): a dict
(written as JSON) rendered as Markdown or as one self-contained HTML page with figures.

The dict built by :func:`run_adaptation` is the single source: the JSON is the dict,
the Markdown and the HTML only render it. The HTML page opens offline. Design notes:
``docs/dev/cli.md``.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np

__all__ = ["decision", "figures", "html", "markdown", "warning_lines", "write_report"]


def warning_lines(caught) -> list[str]:
    """The warnings caught during a run (``warnings.catch_warnings(record=True)``), one line
    each with its count, for a report: the terminal gets the command's own words only.
    Messages that differ only in their numbers share a line; at most 30 lines.

    Parameters
    ----------
    caught : list of warnings.WarningMessage

    Returns
    -------
    list of str
    """
    first: dict[str, str] = {}
    counts: dict[str, int] = {}
    for w in caught:
        text = " ".join(str(w.message).split())
        text = f"{w.category.__name__}: " + (text if len(text) <= 240 else text[:237] + "...")
        key = re.sub(r"\d+", "#", text)       # one line for '25 of 30' and '7 of 10'
        first.setdefault(key, text)
        counts[key] = counts.get(key, 0) + 1
    return [first[k] + (f" ({n} times, numbers vary)" if n > 1 and first[k] != k else
                        f" ({n} times)" if n > 1 else "") for k, n in counts.items()][:30]


def _pct(v) -> str:
    return "–" if v is None else f"{100 * v:.2f}%"


def _num(v) -> str:
    return "–" if v is None or not np.isfinite(v) else f"{v:.4f}"


def _label(method: str) -> str:
    return "no adaptation" if method == "none" else method


def _label_column_words(rep: dict) -> str:
    """The label column as the report names it: the header name the files resolved it to, and
    the position when ``--label-column`` gave one (its default ``-1`` is the last column, not
    the label value -1)."""
    spec, name = rep["label_column"], rep.get("label_name")
    try:
        pos = int(spec)
    except ValueError:
        return repr(spec)
    where = "the last column" if pos == -1 else f"column {pos}"
    return f"{name!r} ({where})" if name else where


def decision(rep: dict) -> str:
    """One sentence: what was chosen (or asked for), and on what evidence; for a labeler
    (JDOT, OTLabelProp), a second one: it predicts the labels itself and replaces the
    classifier."""
    if rep.get("few_labels"):
        return few_labels_decision(rep["few_labels"])
    text = _decision(rep)
    if rep.get("replaces_classifier"):
        text += (" It predicts the target labels itself: it replaces the classifier (the "
                 f"{rep.get('classifier', 'given')} classifier is its model), and its "
                 "adapted features are the raw ones.")
    return text


def _decision(rep: dict) -> str:
    sel = rep.get("selection")
    if sel is None:
        how = rep["params_from"]
        if rep["method"] == "raw":
            return ("No adaptation (--method raw): the classifier is trained on the source rows "
                    "as they are.")
        cv = rep.get("source_cv")
        est = (f"; its 5-fold source CV accuracy is {_pct(cv['mean'])} (± {_pct(cv['std'])})"
               if cv else "")
        return f"{rep['method']} as asked, hyper-parameters from {how}{est}."
    rows = sel["candidates"]
    none = next(r for r in rows if r["method"] == "none")
    chosen = next(r for r in rows if r["chosen"])
    crit = sel["criterion"]
    if not sel.get("validated", len(rows)):
        return (f"Decision: do not adapt, by default: no candidate could be validated by {crit} "
                "(reasons in the table below), so nothing was measured; the predictions come "
                "from the classifier on the raw features.")
    if sel.get("ranked", True) is False:
        if sel.get("validated") == 1:
            return (f"Decision: {_label(chosen['method'])}, the only candidate {crit} could "
                    f"validate ({_num(chosen['score'])}); nothing was compared.")
        return (f"Decision: {_label(chosen['method'])}, by default: {crit} gives every "
                f"candidate the same estimate ({_num(chosen['score'])}), so it cannot rank "
                "them" + (" (1-NN's probabilities are 0 or 1; --select circular or "
                          "--estimator logreg can rank them)"
                          if crit in ("entropy", "snd", "mano") and rep.get("classifier") == "1nn"
                          else "") + ".")
    if chosen["method"] == "none":
        others = [r for r in rows if r["method"] != "none" and r["score"] is not None]
        top = max(others, key=lambda r: r["score"]) if others else None
        m = sel.get("margin_value") or 0.0
        by = f" by more than its margin ({_num(m)})" if m > 0 else ""
        return (f"Decision: do not adapt. No adapter's validation estimate ({crit}) "
                f"beats the raw features{by} ({_num(none['score'])}"
                + (f"; best adapter {top['method']} {_num(top['score'])})." if top else ")."))
    return (f"Decision: adapt with {chosen['method']}: its validation estimate "
            f"({crit}) is {_num(chosen['score'])} against {_num(none['score'])} "
            "without adaptation.")


def _seconds(r: dict) -> str:
    """A candidate's seconds: total (fit + validation), summed over its settings and folds."""
    t = r.get("seconds")
    if not t:
        return "–"
    return f"{t['fit'] + t['validation']:.2f} ({t['fit']:.2f} + {t['validation']:.2f})"


def _seconds_words(sel: dict) -> str:
    """What the seconds column means, and the workers that ran the fits."""
    n = sel.get("n_jobs") or 1
    return ("Seconds: each candidate's fits + validation (scoring, with whatever the criterion "
            "fits itself) over all its settings and folds, measured by the selector"
            + (f"; {n} workers ran them side by side, so the sum exceeds the wall time."
               if n > 1 else "."))


def _candidate_note(r: dict, full_rows: int | None = None) -> str:
    if r.get("failed"):
        return f"not validated: {r['failed']}"
    if full_rows and r.get("rows") and r["rows"] < full_rows:
        return f"estimate on {r['rows']} of {full_rows} rows (stopped by successive halving)"
    return ""


def _search_words(sel: dict) -> str:
    """The search, in words, after the criterion (nothing for the full grid)."""
    if sel.get("search") != "halving":
        return ""
    return (" Searched by successive halving: candidates stopped early were scored on fewer "
            "rows; the winner and no adaptation on every row.")


def _accuracy_line(rep: dict) -> str | None:
    ta = rep.get("target_accuracy")
    if ta is None:
        return None
    return (f"The target file has labels (used for this line only, never to choose): accuracy "
            f"{_pct(ta['adapted'])} with the model of this report against {_pct(ta['raw'])} "
            "with the same classifier on the raw features, over the "
            f"{ta['rows']} target rows whose label is given (labels compared as values: 1 "
            "equals 1.0).")


def _estimated_shares(rep: dict) -> list[float] | None:
    """The target class shares estimated by BBSE (label shift), in the order of the class mix,
    or None."""
    est = rep.get("class_mix_estimated") or {}
    return est.get("shares")


def _estimated_words(rep: dict) -> str:
    """What the estimated target shares are, or why there are none."""
    est = rep["class_mix_estimated"]
    if est.get("error"):
        return f"No estimate of the target class shares (BBSE): {est['error']}."
    return ("Estimated target share: the share of each class among the target rows, estimated "
            "without their labels by BBSE (the classifier's cross-fitted confusion matrix on the "
            "source rows against its predictions on the target; exact under label shift, where "
            "only the class proportions change). Predicted shares far from it point to "
            "predictions biased by the shift." + (f" Note: {est['note']}." if est.get("note")
                                                  else ""))


# ---------------------------------------------------------------------------- Markdown -----
def markdown(rep: dict) -> str:
    """The Markdown report of one ``shiftlearn adapt`` run."""
    L = [f"# shiftlearn adapt: {rep['method']} + {rep['classifier']}", "",
         f"**{decision(rep)}**", "",
         f"Command: `{rep['command']}`  ", f"Date (UTC): {rep['date_utc']}; shiftlearn "
         f"{rep['version']}", "", "## Data", "",
         "| domain | file | rows | labeled | classes |", "|---|---|---|---|---|"]
    for d in rep["domains"]:
        L.append(f"| {d['role']} {d['id']} | `{d['file']}` | {d['rows']} | {d['labeled']} | "
                 f"{d['classes']} |")
    L += ["", f"{rep['n_features']} features; label column {_label_column_words(rep)}."]
    if rep.get("notes"):
        L += ["", "Notes from reading the files:", ""] + [f"* {n}" for n in rep["notes"]]
    L += few_labels_markdown(rep.get("few_labels"))
    sel = rep.get("selection")
    if sel is not None:
        L += ["", "## Which method?", "", f"Criterion: {sel['how']}"
              + ("; hyper-parameters searched on the default grids." if sel["tuned"] else
                 "; library defaults (add --tune to search the grids).") + _search_words(sel),
              "",
              "| candidate | validation estimate | ± std | best setting | seconds "
              "(fit + validation) | chosen | note |",
              "|---|---|---|---|---|---|---|"]
        full = max((r.get("rows") or 0 for r in sel["candidates"]), default=0)
        for r in sel["candidates"]:
            note = _candidate_note(r, full).replace("|", "\\|")
            L.append(f"| {_label(r['method'])} | {_num(r['score'])} | {_num(r['std'])} | "
                     f"`{json.dumps(r['params'])}` | {_seconds(r)} | "
                     f"{'**yes**' if r['chosen'] else ''} | {note} |")
        L += ["", _seconds_words(sel)]
    if rep["shift_raw"]:
        L += ["", "## How far is the target from each source?", "",
              "Unbiased MMD² between the source and the target (Gaussian kernel, "
              "median-heuristic bandwidth of each space, at most 500 rows per domain, seeded) "
              f"and its permutation p-value ({rep['permutations']} permutations or more), "
              "Holm-corrected over all pairs of domains. Small p: the distributions differ. "
              "The MMD² of the raw and the adapted space are on different scales; a small p in "
              "the adapted space means the target still differs from the source there.", "",
              "| source | MMD² raw | p raw (Holm) | MMD² adapted | p adapted (Holm) |",
              "|---|---|---|---|---|"]
        for i, (b, a) in enumerate(zip(rep["shift_raw"], rep["shift_adapted"], strict=True),
                                   1):
            L.append(f"| {i} | {b['mmd2_unbiased']:.4g} | {b['p_holm']:.3g} | "
                     + (f"{a['mmd2_unbiased']:.4g} | {a['p_holm']:.3g} |" if a
                        else "– | – |"))
    L += ["", "## Model", "", f"Hyper-parameters: `{json.dumps(rep['params'])}` "
          f"({rep['params_from']})."]
    cv = rep.get("source_cv")
    if cv is not None and cv.get("n_settings"):
        L.append(f"5-fold source CV accuracy of the chosen setting: {100 * cv['mean']:.2f}% "
                 f"(± {100 * cv['std']:.2f}) over {cv['n_settings']} settings.")
    est = _estimated_shares(rep)
    L += ["", "## Predictions", "", "| class | source share | predicted target share |"
          + (" estimated target share (BBSE) |" if est else ""),
          "|---|---|---|" + ("---|" if est else "")]
    for i, (c, s, p) in enumerate(rep["class_mix"]):
        L.append(f"| {c} | {100 * s:.1f}% | {100 * p:.1f}% |"
                 + (f" {100 * est[i]:.1f}% |" if est else ""))
    L += ["", _estimated_words(rep)] if rep.get("class_mix_estimated") else []
    if rep.get("confidence"):
        c = rep["confidence"]
        L += ["", f"Mean confidence of the predictions {c['mean']:.3f}; {c['below_0.5']} "
              "row(s) below 0.5."]
    line = _accuracy_line(rep)
    if line:
        L += ["", line]
    L += ["", f"Time: fit {rep['seconds']['fit']:.2f} s, report {rep['seconds']['report']:.2f} s."]
    if rep.get("warnings"):
        L += ["", "Warnings raised during the run (kept here, not on the terminal):", ""] + \
            [f"* {w}" for w in rep["warnings"]]
    return "\n".join(L) + "\n"


# ------------------------------------------------------------------------------ figures -----
def figures(rep: dict, names: list[str], spaces: dict, analyses: dict, *, seed: int = 0
            ) -> dict[str, bytes]:
    """The PNG figures of the HTML report: heat-maps and 2-D pictures of the domains in the raw
    and adapted spaces, the candidates' validation estimates, the class mix."""
    from ..report import bar_chart, grouped_bars, heatmap, row_map, scatter_figure

    out = {}
    for key, res in analyses.items():
        out[f"heat_{key}"] = heatmap(res.mmd2, res.names,
                                     marks=res.differ() if res.permutations else None,
                                     title=f"MMD² between domains, {key} features")
    markers = {n: ("^" if i == len(names) - 1 else "o") for i, n in enumerate(names)}
    for key, arrays in spaces.items():
        pts = row_map(dict(zip(names, arrays, strict=True)), max_rows=300, standardize=False,
                      random_state=seed)
        out[f"map_{key}"] = scatter_figure(pts, title=f"Rows on 2 principal components, {key} "
                                           "features", markers=markers)
    sel = rep.get("selection")
    if sel is not None:
        rows = sel["candidates"]
        chosen = next(i for i, r in enumerate(rows) if r["chosen"])
        out["candidates"] = bar_chart(
            [_label(r["method"]) for r in rows],
            [np.nan if r["score"] is None else r["score"] for r in rows],
            errors=[0 if r["std"] is None else r["std"] for r in rows], highlight=chosen,
            title=f"Validation estimate of each candidate ({sel['criterion']})",
            ylabel="validation estimate (greater is better)")
    few = rep.get("few_labels")
    if few is not None:
        rows = few["candidates"]
        out["candidates"] = bar_chart(
            [r["method"] for r in rows],
            [np.nan if r["score"] is None else r["score"] for r in rows],
            errors=[0 if r["se"] is None else r["se"] for r in rows],
            highlight=next(i for i, r in enumerate(rows) if r["chosen"]),
            title="Accuracy of each candidate on the held-out labeled target rows",
            ylabel="cross-validated accuracy")
    classes = [c for c, _, _ in rep["class_mix"]]
    series = {"source": [s for _, s, _ in rep["class_mix"]],
              "predicted target": [p for _, _, p in rep["class_mix"]]}
    if _estimated_shares(rep):
        series["estimated target (BBSE)"] = _estimated_shares(rep)
    if rep.get("class_mix_true") is not None:
        series["true target (given labels)"] = rep["class_mix_true"]
    out["class_mix"] = grouped_bars(classes, series, title="Class mix", ylabel="share of rows")
    return out


# --------------------------------------------------------------------------------- HTML -----
def html(rep: dict, pictures: dict[str, bytes]) -> str:
    """The self-contained HTML page of one ``shiftlearn adapt`` run."""
    from ..report import HtmlReport

    doc = HtmlReport(f"shiftlearn adapt: {rep['method']} + {rep['classifier']}")
    doc.paragraph(decision(rep), cls="lead")
    line = _accuracy_line(rep)
    if line:
        doc.paragraph(line, cls="lead")
    sel = rep.get("selection")
    if sel is not None and (not sel.get("validated", 1) or sel.get("ranked", True) is False):
        doc.paragraph("The criterion could not compare the candidates (see 'Which method?'): "
                      "the choice above is a default, not a measurement.", cls="warning")
    elif sel is not None and sel["choice"] == "none":
        doc.paragraph("The predictions come from the classifier on the raw features: by this "
                      "criterion, adapting did not look better. A different criterion "
                      "(--select) may disagree; none of them sees target labels.",
                      cls="warning")
    doc.heading("Data")
    doc.table(["domain", "role", "file", "rows", "labeled", "classes"],
              [[d.get("name", d["id"]), d["role"], d["file"], d["rows"], d["labeled"],
                d["classes"]] for d in rep["domains"]])
    doc.paragraph(f"{rep['n_features']} features; label column {_label_column_words(rep)}.",
                  cls="muted")
    few_labels_html(doc, rep.get("few_labels"), pictures)
    if sel is not None:
        doc.heading("Which method?")
        doc.paragraph(f"Candidates: no adaptation (the same classifier on the raw features, "
                      f"always a candidate, kept on ties) and every adapter. Criterion: "
                      f"{sel['how']}"
                      + ("; hyper-parameters searched on the default grids." if sel["tuned"]
                         else "; library defaults (add --tune to search the grids).")
                      + _search_words(sel))
        if "candidates" in pictures:
            doc.figure(pictures["candidates"], "Validation estimate of each candidate (its best "
                       "setting; bars: ± one standard deviation over the folds); the chosen one "
                       "is highlighted.")
        full = max((r.get("rows") or 0 for r in sel["candidates"]), default=0)
        failed = any(_candidate_note(r, full) for r in sel["candidates"])
        doc.table(["candidate", "validation estimate", "± std", "best setting",
                   "seconds (fit + validation)", "chosen"] + (["note"] if failed else []),
                  [[_label(r["method"]), _num(r["score"]), _num(r["std"]),
                    json.dumps(r["params"]) if r["params"] else "defaults", _seconds(r),
                    "chosen" if r["chosen"] else ""]
                   + ([_candidate_note(r, full)] if failed else [])
                   for r in sel["candidates"]],
                  highlight=[r["chosen"] for r in sel["candidates"]])
        doc.paragraph(_seconds_words(sel), cls="muted")
    doc.heading("How far apart are the domains, before and after?")
    if rep["shift_matrices"]:
        doc.paragraph("Unbiased MMD² between every pair of domains (Gaussian kernel, median-"
                      "heuristic bandwidth of each space, at most 500 rows per domain, seeded); "
                      "* marks pairs that differ after Holm's correction. The raw and the "
                      "adapted features are different spaces: compare the patterns, not the "
                      "numbers across the two maps.")
        for key in ("raw", "adapted"):
            if f"heat_{key}" in pictures:
                res = rep["shift_matrices"][key]
                doc.figure(pictures[f"heat_{key}"], f"{key.capitalize()} features: "
                           f"{res['sentence']}")
        if "adapted" not in rep["shift_matrices"]:
            doc.paragraph("No adaptation: the model works in the raw space, so there is no "
                          "'after' map.", cls="muted")
    else:
        doc.paragraph("No MMD tests (--permutations 0).", cls="muted")
    for key in ("raw", "adapted"):
        if f"map_{key}" in pictures:
            doc.figure(pictures[f"map_{key}"], f"{key.capitalize()} features: the rows of every "
                       "domain (at most 300 each, seeded) on the first two principal components "
                       "of the pooled rows; the target is drawn with triangles.")
    doc.heading("Predictions")
    doc.figure(pictures["class_mix"], "Share of each class among the source rows and among the "
               "target's predictions" + (" and its given labels" if rep.get("class_mix_true")
                                         else "") + "; a predicted mix far from the source's "
               "can be real label shift or a sign of a poor fit.")
    true = rep.get("class_mix_true")
    est = _estimated_shares(rep)
    doc.table(["class", "source share", "predicted target share"]
              + (["estimated target share (BBSE)"] if est else [])
              + (["given target labels"] if true else []),
              [[c, f"{100 * s:.1f}%", f"{100 * p:.1f}%"]
               + ([f"{100 * est[i]:.1f}%"] if est else [])
               + ([f"{100 * true[i]:.1f}%"] if true else [])
               for i, (c, s, p) in enumerate(rep["class_mix"])])
    if rep.get("class_mix_estimated"):
        doc.paragraph(_estimated_words(rep), cls="muted")
    if rep.get("confidence"):
        c = rep["confidence"]
        doc.paragraph(f"Mean confidence of the predictions {c['mean']:.3f}; {c['below_0.5']} "
                      "row(s) below 0.5 (column 'confidence' of --out).")
    doc.heading("Model")
    doc.paragraph(f"Classifier: {rep['classifier']}; hyper-parameters ({rep['params_from']}):")
    doc.code(json.dumps(rep["params"], indent=1) if rep["params"] else "none (no adapter)")
    doc.heading("Reproducibility")
    doc.code(rep["command"])
    doc.paragraph(f"shiftlearn {rep['version']}; seed {rep.get('seed', 0)}; {rep['date_utc']} "
                  f"UTC; fit {rep['seconds']['fit']:.2f} s, report "
                  f"{rep['seconds']['report']:.2f} s.", cls="muted")
    if rep.get("notes"):
        doc.heading("Notes from reading the files", 3)
        doc.items(rep["notes"])
    if rep.get("warnings"):
        doc.heading("Warnings raised during the run", 3)
        doc.items(rep["warnings"])
    return doc.render()


def write_report(rep: dict, paths: dict[str, Path], pictures: dict[str, bytes] | None = None
                 ) -> list[Path]:
    """Write the report in each format of ``paths`` (``html``, ``md``, ``json``); returns the
    paths written."""
    return write_formats(rep, paths, markdown, html, pictures)


def write_formats(rep: dict, paths: dict[str, Path], markdown, html,
                  pictures: dict[str, bytes] | None = None) -> list[Path]:
    """Write a command's report dict in each format of ``paths`` (``{"md"|"html"|"json":
    path}``) with the command's renderers ``markdown(rep)`` and ``html(rep, pictures)``; the
    JSON is the dict itself. Returns the paths written."""
    written = []
    for kind, path in paths.items():
        if kind == "md":
            path.write_text(markdown(rep), encoding="utf-8")
        elif kind == "html":
            path.write_text(html(rep, pictures or {}), encoding="utf-8")
        else:
            path.write_text(json.dumps(rep, indent=2, allow_nan=False), encoding="utf-8")
        written.append(path)
    return written


# ------------------------------------------------------------------- few labeled target rows -----
def _est_words(e: dict | None) -> str:
    if e is None:
        return "–"
    se = f" ± {100 * e['se']:.1f}" if e.get("se") is not None else ""
    return f"{100 * e['accuracy']:.1f}%{se} (on {e['rows']} labeled target row(s))"


def few_labels_decision(few: dict) -> str:
    """The decision sentence of a run with labeled target rows."""
    if few.get("one_label_default"):
        return (f"Decision: {few['choice']}, the one-label default, fitted without a choice "
                f"among {len(few['candidates'])} candidates; its accuracy by "
                f"{few['split']}: {_est_words(few['estimate'])}. " + few["caveat"])
    what = (f"Decision: {few['choice']}, chosen among {len(few['candidates'])} candidates"
            if few["chose"] else f"{few['choice']} as asked")
    nested = few.get("nested")
    return (f"{what} by cross-validation on the labeled target rows ({few['split']}); "
            f"estimated accuracy {_est_words(few['estimate'])}"
            + (f", nested estimate {_est_words(nested)}" if nested else "") + ". "
            + few["caveat"])


def _few_note(r: dict) -> str:
    """The note of a candidate row: why it was not validated or not scored."""
    if r.get("failed"):
        return "not validated: " + r["failed"]
    return r.get("unscored", "")


def _few_scored_words(few: dict) -> str:
    """How the candidates were scored, in words."""
    if few.get("one_label_default"):
        return (f"no choice was made: {few['choice']} (the one-label default) was scored "
                f"alone by {few['split']}")
    return f"every candidate was scored on them by {few['split']}"


def few_labels_markdown(few: dict | None) -> list[str]:
    """The Markdown section of the choice on the labeled target rows (none without them)."""
    if not few:
        return []
    L = ["", "## Which method? (labeled target rows)", "",
         f"{few['labeled_target_rows']} target rows carry a label (classes "
         f"{', '.join(few['labeled_classes'])}); {_few_scored_words(few)}: a held-out row's "
         "label is hidden while the candidate is fitted on "
         "every other row (the source rows, the other labeled target rows and every unlabeled "
         "target row). Candidates: " + few["how"] + ".", "",
         "| candidate | accuracy on held-out labeled target rows | ± se | seconds | chosen | "
         "note |", "|---|---|---|---|---|---|"]
    for r in few["candidates"]:
        note = _few_note(r).replace("|", "\\|")
        L.append(f"| {r['method']} | {_num(r['score'])} | {_num(r['se'])} | "
                 f"{r['seconds']:.2f} | {'**yes**' if r['chosen'] else ''} | {note} |")
    what = "fitted" if few.get("one_label_default") else "chosen"
    L += ["", f"Estimated accuracy of the {what} method: {_est_words(few['estimate'])}"
          + (f"; nested estimate: {_est_words(few['nested'])}" if few.get("nested") else "")
          + ".", "", few["caveat"]]
    return L


def few_labels_html(doc, few: dict | None, pictures: dict) -> None:
    """The HTML section of the choice on the labeled target rows (nothing without them)."""
    if not few:
        return
    doc.heading("Which method? (labeled target rows)")
    doc.paragraph(f"{few['labeled_target_rows']} target rows carry a label; "
                  f"{_few_scored_words(few)} (a held-out row's label hidden while the "
                  "candidate is fitted on every other row). Candidates: " + few["how"] + ".")
    if "candidates" in pictures:
        doc.figure(pictures["candidates"], "Cross-validated accuracy of each candidate on the "
                   "labeled target rows (bars: ± one standard error); the "
                   + ("fitted one is highlighted (no choice was made: a class has a single "
                      "label)." if few.get("one_label_default") else "chosen one is highlighted."))
    doc.table(["candidate", "accuracy (held-out labeled target rows)", "± se", "seconds",
               "chosen", "note"],
              [[r["method"], _num(r["score"]), _num(r["se"]), f"{r['seconds']:.2f}",
                "chosen" if r["chosen"] else "", _few_note(r)] for r in few["candidates"]],
              highlight=[r["chosen"] for r in few["candidates"]])
    doc.paragraph(few["caveat"], cls="warning")
