"""The report of ``shiftlearn adapt``: a dict (written as JSON) rendered as Markdown."""

from __future__ import annotations

import json
from pathlib import Path

__all__ = ["markdown", "write_report"]


def markdown(rep: dict) -> str:
    """The Markdown report of one ``shiftlearn adapt`` run."""
    L = [f"# shiftlearn adapt: {rep['method']} + {rep['classifier']}", "",
         f"Command: `{rep['command']}`  ", f"Date (UTC): {rep['date_utc']}; shiftlearn "
         f"{rep['version']}", "", "## Data", "",
         "| domain | file | rows | labeled | classes |", "|---|---|---|---|---|"]
    for d in rep["domains"]:
        L.append(f"| {d['role']} {d['id']} | `{d['file']}` | {d['rows']} | {d['labeled']} | "
                 f"{d['classes']} |")
    L += ["", f"{rep['n_features']} features; label column {rep['label_column']!r}."]
    if rep.get("notes"):
        L += ["", "Notes from reading the files:", ""] + [f"* {n}" for n in rep["notes"]]
    if rep["shift_raw"]:
        L += ["", "## How far is the target from each source?", "",
              "Unbiased MMD² between the source and the target (Gaussian kernel, "
              "median-heuristic bandwidth of each space, at most 1,000 rows per side, seeded) "
              f"and its permutation p-value ({rep['permutations']} permutations). Small p: the "
              "distributions differ. The MMD² of the raw and the adapted space are on "
              "different scales; a small p in the adapted space means the target still "
              "differs from the source there (the test is often more powerful in a few "
              "learned dimensions than in the raw ones).", "",
              "| source | MMD² raw | p raw | MMD² adapted | p adapted |",
              "|---|---|---|---|---|"]
        for i, (b, a) in enumerate(zip(rep["shift_raw"], rep["shift_adapted"], strict=True),
                                   1):
            L.append(f"| {i} | {b['mmd2_unbiased']:.4g} | {b['p_value']:.3g} | "
                     + (f"{a['mmd2_unbiased']:.4g} | {a['p_value']:.3g} |" if a
                        else "– | – |"))
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
        L += ["", "The target file has labels (used for this line only, never to choose): "
              f"accuracy {100 * ta['adapted']:.2f}% adapted vs {100 * ta['raw']:.2f}% with the "
              f"same classifier on the raw features, over the {ta['rows']} target rows whose "
              "label is given (labels compared as values: 1 equals 1.0)."]
    L += ["", f"Time: fit {rep['seconds']['fit']:.2f} s, report {rep['seconds']['report']:.2f} s."]
    return "\n".join(L) + "\n"


def write_report(rep: dict, md_path: Path | None, json_path: Path | None) -> list[Path]:
    """Write the Markdown and/or the JSON; returns the paths written."""
    written = []
    if md_path is not None:
        md_path.write_text(markdown(rep), encoding="utf-8")
        written.append(md_path)
    if json_path is not None:
        json_path.write_text(json.dumps(rep, indent=2, allow_nan=False), encoding="utf-8")
        written.append(json_path)
    return written
