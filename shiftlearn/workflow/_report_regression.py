"""The report of a regression run (``shiftlearn adapt`` on a numeric label column): the dict
built by :func:`~shiftlearn.workflow.run_regression`, rendered as Markdown or as one
self-contained HTML page. Errors are in the label's units (RMSE, MAE)."""

from __future__ import annotations

import numpy as np

__all__ = ["decision", "figures", "html", "markdown"]


def _num(v) -> str:
    return "–" if v is None or not np.isfinite(v) else f"{v:.4g}"


def _label(method: str) -> str:
    return "no adaptation" if method == "none" else method


def _unit(rep: dict) -> str:
    return f" ({rep['label_name']})" if rep.get("label_name") else ""


def decision(rep: dict) -> str:
    """One sentence: what was fitted and its error on held-out source rows."""
    chosen = rep["choice"]
    src = rep["source_errors"]["chosen"]
    err = (f"; RMSE {_num(src['rmse'])} and MAE {_num(src['mae'])} on held-out labeled source "
           "rows" if src else "")
    if rep["method"] == "auto":
        sel = rep["selection"]
        rows = {r["method"]: r for r in sel["candidates"]}
        if chosen == "none":
            head = ("Not adapted: no adapter's validation error beats the raw features' "
                    f"({_num(rows['none']['rmse'])}) by {sel['criterion']}")
        else:
            head = (f"Adapted with {chosen}: validation error {_num(rows[chosen]['rmse'])} "
                    f"against {_num(rows['none']['rmse'])} without adaptation "
                    f"({sel['criterion']})")
    elif chosen == "none":
        head = "No adaptation (--method raw)"
    else:
        head = f"Adapted with {chosen} (named)"
    return f"{head}{err}, in the label's units{_unit(rep)}."


def _candidate_rows(rep: dict) -> list[list]:
    return [[_label(r["method"]) + (" (chosen)" if r["chosen"] else ""), _num(r["rmse"]),
             _num(None if r["std"] is None or r["rmse"] in (None, 0)
                  else r["std"] / (2 * r["rmse"])),
             ", ".join(f"{k}={v}" for k, v in r["params"].items()) or "–"]
            for r in rep["selection"]["candidates"]]


_CANDIDATE_HEADERS = ["method", "validation error (RMSE)", "± (fold spread)", "setting"]


def _error_rows(rep: dict) -> list[list]:
    s = rep["source_errors"]
    rows = []
    for key, name in (("chosen", _label(rep["choice"])), ("none", "no adaptation")):
        e = s[key]
        if e is not None and (key == "chosen" or rep["choice"] != "none"):
            rows.append([f"{name} (held-out source, {e['folds']} folds)", _num(e["rmse"]),
                         _num(e["mae"]), e["rows"]])
    t = rep.get("target_errors")
    if t:
        for key, name in (("chosen", _label(rep["choice"])), ("none", "no adaptation")):
            if key == "chosen" or rep["choice"] != "none":
                e = t[key]
                rows.append([f"{name} (target values, evaluation only)", _num(e["rmse"]),
                             _num(e["mae"]), e["rows"]])
    return rows


def _value_rows(rep: dict) -> list[list]:
    keys = ("min", "q25", "median", "q75", "max", "mean", "std")
    return [[name] + [_num(rep[k][q]) for q in keys]
            for name, k in (("source values", "source_values"),
                            ("predicted target values", "predicted_values"))]


def _md_table(headers, rows) -> list[str]:
    out = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    out += ["| " + " | ".join(str(c) for c in r) + " |" for r in rows]
    return out


def markdown(rep: dict) -> str:
    """The report as Markdown."""
    L = ["# shiftlearn adapt: regression", "", decision(rep), "", "## Data", ""]
    L += _md_table(["domain", "file", "rows", "role"],
                   [[d["name"], d["file"], d["rows"], d["role"]] for d in rep["domains"]])
    L += ["", f"{rep['n_features']} features; the label column {rep['label_column']!r}"
          f"{_unit(rep)} is a regression target; estimator {rep['estimator']}."]
    if rep["selection"]:
        sel = rep["selection"]
        L += ["", "## Which method?", "", f"Criterion: {sel['how']}. Validation errors are "
              "square roots of the criterion's mean squared error, in the label's units "
              "(smaller is better); no adaptation wins ties"
              + (f" and an adapter must lead by more than {sel['margin']:.4g}"
                 if sel["margin"] > 0 else "") + ".", ""]
        L += _md_table(_CANDIDATE_HEADERS, _candidate_rows(rep))
    if rep["params"]:
        L += ["", "Hyper-parameters: " + ", ".join(f"{k}={v}" for k, v in rep["params"].items())]
    L += ["", "## Errors (label units)", ""]
    L += _md_table(["model", "RMSE", "MAE", "rows"], _error_rows(rep))
    L += ["", "## Predicted values", ""]
    L += _md_table(["", "min", "25%", "median", "75%", "max", "mean", "std"], _value_rows(rep))
    L += ["", "## Reproducibility", "", f"`{rep['command']}`", "",
          f"shiftlearn {rep['version']}; seed {rep['seed']}; {rep['date_utc']} UTC; "
          f"{rep['seconds']['total']:.2f} s."]
    if rep.get("notes"):
        L += ["", "### Notes from reading the files", ""] + [f"* {n}" for n in rep["notes"]]
    if rep.get("warnings"):
        L += ["", "### Warnings raised during the run", ""] + [f"* {w}" for w in rep["warnings"]]
    return "\n".join(L) + "\n"


def figures(rep: dict) -> dict[str, bytes]:
    """The candidates' validation errors as bars (``method="auto"``; needs matplotlib)."""
    if not rep.get("selection"):
        return {}
    try:
        from ..report import bar_chart
    except ImportError:           # pragma: no cover - matplotlib is an optional extra
        return {}
    rows = rep["selection"]["candidates"]
    chosen = next(i for i, r in enumerate(rows) if r["chosen"])
    try:
        png = bar_chart([_label(r["method"]) for r in rows],
                        [np.nan if r["rmse"] is None else r["rmse"] for r in rows],
                        highlight=chosen, title="Validation error of each candidate",
                        ylabel=f"RMSE{_unit(rep)}")
    except ImportError:           # pragma: no cover
        return {}
    return {"candidates": png}


def html(rep: dict, pictures: dict[str, bytes]) -> str:
    """The report as one self-contained HTML page."""
    from ..report import HtmlReport

    doc = HtmlReport(f"shiftlearn adapt (regression): {_label(rep['choice'])}")
    doc.paragraph(decision(rep), cls="lead")
    doc.heading("Data")
    doc.table(["domain", "file", "rows", "role"],
              [[d["name"], d["file"], d["rows"], d["role"]] for d in rep["domains"]])
    doc.paragraph(f"{rep['n_features']} features; the label column {rep['label_column']!r}"
                  f"{_unit(rep)} is a regression target; estimator {rep['estimator']}.",
                  cls="muted")
    if rep["selection"]:
        doc.heading("Which method?")
        doc.paragraph(f"Criterion: {rep['selection']['how']}. Validation errors in the "
                      "label's units (smaller is better); no adaptation wins ties.")
        if "candidates" in pictures:
            doc.figure(pictures["candidates"], "Each candidate's validation error; the chosen "
                       "one is highlighted.")
        doc.table(_CANDIDATE_HEADERS, _candidate_rows(rep))
    doc.heading("Errors (label units)")
    doc.table(["model", "RMSE", "MAE", "rows"], _error_rows(rep))
    doc.heading("Predicted values")
    doc.table(["", "min", "25%", "median", "75%", "max", "mean", "std"], _value_rows(rep))
    doc.heading("Reproducibility")
    doc.code(rep["command"])
    doc.paragraph(f"shiftlearn {rep['version']}; seed {rep['seed']}; {rep['date_utc']} UTC; "
                  f"{rep['seconds']['total']:.2f} s.", cls="muted")
    if rep.get("notes"):
        doc.heading("Notes from reading the files", 3)
        doc.items(rep["notes"])
    if rep.get("warnings"):
        doc.heading("Warnings raised during the run", 3)
        doc.items(rep["warnings"])
    return doc.render()
