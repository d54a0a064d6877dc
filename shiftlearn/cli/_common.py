"""Helpers shared by the subcommands: messages, argument types, output checks.

Results go to stdout; progress and notes to stderr (silenced by ``--quiet``). Design notes:
``docs/dev/cli.md``.
"""

from __future__ import annotations

import argparse
import io
import os
import sys
from pathlib import Path

import numpy as np

from ..workflow import warning_lines

__all__ = ["check_output", "count", "emit_report", "fraction", "info", "match_columns",
           "nonnegative", "positive", "print_table", "report_paths", "subsample",
           "warning_lines"]


def info(args: argparse.Namespace, msg: str) -> None:
    """A note for the person running the command (stderr; nothing with ``--quiet``)."""
    if not getattr(args, "quiet", False):
        print(msg, file=sys.stderr, flush=True)


def print_table(headers: list[str], rows: list[list], *, title: str | None = None,
                file=None, align: str | None = None) -> None:
    """Print an aligned table for people (rich; plain text, no colours, never wrapped).

    ``align`` gives one letter per column, ``l`` or ``r`` (default: the first column left, the
    others right). Cells are printed with ``str`` (format numbers before). Usable by every
    command (e.g. a federated job's summary: accuracy with its baselines, rounds, bytes sent).

    Examples
    --------
    >>> print_table(["method", "accuracy"], [["raw", "31.4%"], ["SCA", "45.7%"]])
    method   accuracy
    ─────────────────
    raw         31.4%
    SCA         45.7%
    """
    from rich import box
    from rich.console import Console
    from rich.table import Table

    out = sys.stdout if file is None else file
    align = align or "l" + "r" * (len(headers) - 1)
    if len(align) != len(headers):
        raise ValueError(f"align has {len(align)} letters for {len(headers)} columns.")
    table = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False)
    for h, a in zip(headers, align, strict=True):
        table.add_column(str(h), justify="left" if a == "l" else "right", no_wrap=True)
    for row in rows:
        if len(row) != len(headers):
            raise ValueError(f"a row has {len(row)} cells for {len(headers)} columns: {row!r}")
        table.add_row(*(str(c) for c in row))
    buf = io.StringIO()
    Console(file=buf, width=100_000, highlight=False, markup=False, emoji=False,
            color_system=None, soft_wrap=False).print(table)
    lines = [line.rstrip() for line in buf.getvalue().splitlines()]
    print("\n".join(([title] if title else []) + lines), file=out, flush=True)


# ------------------------------------------------------------------------ argument types ------
def count(minimum: int = 1):
    """argparse type: an integer ``>= minimum``."""
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"must be at least {minimum}, got {value}")
        return value
    parse.__name__ = f"integer >= {minimum}"
    return parse


def _float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not np.isfinite(value):
        raise argparse.ArgumentTypeError(f"expected a finite number, got {text!r}")
    return value


def positive(text: str) -> float:
    """argparse type: a finite number ``> 0``."""
    value = _float(text)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be greater than 0, got {value:g}")
    return value


def nonnegative(text: str) -> float:
    """argparse type: a finite number ``>= 0``."""
    value = _float(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be 0 or more, got {value:g}")
    return value


def fraction(text: str) -> float:
    """argparse type: a fraction strictly between 0 and 1."""
    value = _float(text)
    if not 0 < value < 1:
        raise argparse.ArgumentTypeError(f"must be a fraction between 0 and 1 (e.g. 0.2), "
                                         f"got {value:g}")
    return value


# ---------------------------------------------------------------------------- outputs ------
def check_output(path: str | os.PathLike, option: str, *,
                 inputs: tuple[str | os.PathLike, ...] = ()) -> Path:
    """Refuse, before any work, an output path that cannot be written.

    Raises ``ValueError`` (a folder, a missing folder, one of the command's input files) or
    the ``OSError`` of the probe (permission denied, read-only file system), each naming the
    option and the path.
    """
    p = Path(path)
    if p.is_dir():
        raise ValueError(f"{option} {path}: that is a folder; give a file name inside it, "
                         f"e.g. {p / ('report.md' if option == '--report' else 'out.csv')}.")
    folder = p.parent
    if not folder.is_dir():
        what = "is not a folder" if folder.exists() else "does not exist"
        raise ValueError(f"{option} {path}: the folder {folder} {what}; create it first "
                         f"(mkdir -p {folder}) or choose another path.")
    for src in inputs:
        if Path(src).resolve() == p.resolve():
            raise ValueError(f"{option} {path} is one of the input files; writing there would "
                             "overwrite it. Choose another name.")
    existed = p.exists()
    try:
        with open(p, "a"):
            pass
    except OSError as exc:
        raise type(exc)(exc.errno, f"{option} {path}: cannot write there ({exc.strerror}); "
                                   "choose another path or fix its permissions.") from None
    if not existed:
        p.unlink()
    return p


def report_paths(report: str, *, named: tuple[str | os.PathLike, ...] = ()
                 ) -> tuple[dict[str, Path], str | None]:
    """``({kind: path}, note)`` for ``--report`` (kinds ``html``, ``md``, ``json``).

    ``x.json`` writes the JSON only; ``x.html`` (or ``.htm``) and ``x.md`` write the HTML or
    the Markdown and the JSON beside it as ``x.json``, unless that is a file the person named
    on the command line (then no JSON, and ``note`` says why). Any other extension is refused.
    So the formats never overwrite each other.

    Examples
    --------
    >>> paths, note = report_paths("out/report.html")
    >>> sorted((k, str(v)) for k, v in paths.items())
    [('html', 'out/report.html'), ('json', 'out/report.json')]
    """
    p = Path(report)
    suffix = p.suffix.lower()
    if suffix == ".json":
        return {"json": p}, None
    kind = {".md": "md", ".html": "html", ".htm": "html"}.get(suffix)
    if kind is None:
        raise ValueError(f"--report {report}: unknown extension {p.suffix or '(none)'!r}; "
                         "end the name in .html (a self-contained page with figures), .md "
                         "(Markdown) or .json (JSON only); .html and .md also write the JSON "
                         "beside them.")
    beside = p.with_suffix(".json")
    if any(Path(n).resolve() == beside.resolve() for n in named):
        return {kind: p}, (f"the JSON report was not written beside the {kind.upper()} report: "
                           f"{beside} is a file named on the command line")
    return {kind: p, "json": beside}, None


def subsample(X: np.ndarray, max_rows: int | None, rng: np.random.Generator) -> np.ndarray:
    """At most ``max_rows`` rows of ``X`` (a seeded sample, in their original order)."""
    if max_rows is None or X.shape[0] <= max_rows:
        return X
    return X[np.sort(rng.choice(X.shape[0], max_rows, replace=False))]


# ---------------------------------------------------------------------- feature columns ------
def _listed(names: list[str], limit: int = 8) -> str:
    shown = ", ".join(repr(n) for n in names[:limit])
    return shown + (f" and {len(names) - limit} more" if len(names) > limit else "")


def match_columns(ref, others, *, hint: str = "") -> list[str]:
    """Give every table of ``others`` the feature columns of ``ref``, in ``ref``'s order.

    Tables are :class:`~shiftlearn.datasets.Table` objects (``X`` and ``feature_names`` are
    reordered in place). Files with headers are matched by name: the same names in another
    order are reordered (one note per file, returned), different names are an error that
    names the missing and the extra columns (at most eight of each). Without a header on
    either side only the number of columns can be compared. ``hint`` is added to the message
    when a table has one column more than ``ref`` (e.g. the option that explains a label
    column).

    Examples
    --------
    >>> import numpy as np
    >>> from shiftlearn.io import Table
    >>> a = Table("a.csv", np.array([[1., 2.]]), None, ["x", "y"], None)
    >>> b = Table("b.csv", np.array([[20., 10.]]), None, ["y", "x"], None)
    >>> match_columns(a, [b])
    ['b.csv: the same 2 feature columns as a.csv in another order; matched by name.']
    >>> b.X.tolist(), b.feature_names
    ([[10.0, 20.0]], ['x', 'y'])
    """
    notes = []
    names = list(ref.feature_names) if ref.feature_names else None
    for t in others:
        theirs = list(t.feature_names) if t.feature_names else None
        if names is None or theirs is None or theirs == names:
            if t.X.shape[1] != ref.X.shape[1]:
                raise ValueError(f"{t.path} has {t.X.shape[1]} feature columns but {ref.path} "
                                 f"has {ref.X.shape[1]}; every file needs the same feature "
                                 "columns."
                                 + (hint if t.X.shape[1] == ref.X.shape[1] + 1 else ""))
            continue
        missing = [n for n in dict.fromkeys(names) if n not in set(theirs)]
        extra = [n for n in dict.fromkeys(theirs) if n not in set(names)]
        if missing or extra:
            parts = ([f"missing {_listed(missing)}"] if missing else []) + \
                ([f"extra {_listed(extra)}"] if extra else [])
            raise ValueError(f"{t.path}: feature columns differ from {ref.path}'s: "
                             f"{'; '.join(parts)}; give every file the same feature columns."
                             + (hint if len(theirs) == len(names) + 1 else ""))
        dup = sorted({n for n in names + theirs if names.count(n) > 1 or theirs.count(n) > 1})
        if dup or len(theirs) != len(names):
            raise ValueError(f"{t.path}: the feature columns are in another order than in "
                             f"{ref.path}'s and {_listed(dup)} appear(s) more than once, so "
                             "they cannot be matched by name; give the columns unique names.")
        order = [theirs.index(n) for n in names]
        t.X = t.X[:, order]
        t.feature_names = names
        notes.append(f"{t.path}: the same {len(names)} feature columns as {ref.path} in "
                     "another order; matched by name.")
    return notes


def check_outputs(inputs, out: str | None, save: str | None, report: str | None):
    """A command's output files checked before any work: ``--out`` and ``--save`` (each by
    :func:`check_output`), the ``--report`` paths (:func:`report_paths`), and no two of them
    the same file. Returns ``(out, paths, note, save)``: the two paths or ``None``, the
    report's ``{kind: path}`` and its note."""
    out_path = check_output(out, "--out", inputs=inputs) if out else None
    save_path = check_output(save, "--save", inputs=inputs) if save else None
    if out_path is not None and save_path is not None and \
            save_path.resolve() == out_path.resolve():
        raise ValueError(f"--out {out} and --save {save} are the same file; give them "
                         "different names.")
    paths, note = {}, None
    if report:
        paths, note = report_paths(report, named=(*inputs, *[f for f in (out, save) if f]))
        for path in paths.values():
            for option, other in (("--out", out_path), ("--save", save_path)):
                if other is not None and path.resolve() == other.resolve():
                    raise ValueError(f"{option} {other} and the report {path} are the same "
                                     "file; give them different names.")
            check_output(path, "--report", inputs=inputs)
    return out_path, paths, note, save_path


def emit_report(args: argparse.Namespace, rep, caught, paths: dict, note: str | None) -> int:
    """The end of an ``adapt`` run, whatever its kind: the warnings caught during the run go
    into the report; the report is printed as Markdown, or written in every asked format; a
    note goes to stderr. Returns the command's exit status, 0."""
    rep["warnings"] = warning_lines(caught)
    if not paths:
        print(rep.markdown())
    else:
        written = [rep.write(path, kind) for kind, path in paths.items()]
        info(args, "wrote " + " and ".join(str(p) for p in written))
    if note:
        info(args, f"note: {note}")
    return 0
