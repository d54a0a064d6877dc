"""The figures of the HTML reports, drawn with matplotlib and returned as PNG bytes.

Every function returns PNG bytes (100 dpi, white background), drawn without ``pyplot`` (no
global state); a domain has the same colour in every figure of a report. Design notes:
``docs/dev/report.md``.

Examples
--------
>>> import numpy as np
>>> png = heatmap(np.array([[0.0, 0.2], [0.2, 0.0]]), ["a", "b"], title="MMD²")
>>> png[:8] == b"\\x89PNG\\r\\n\\x1a\\n"
True
"""

from __future__ import annotations

import io
from collections.abc import Mapping, Sequence

import numpy as np

__all__ = ["bar_chart", "domain_map_figure", "grouped_bars", "heatmap", "scatter_figure"]

DPI = 100


def _figure(width: float, height: float):
    from matplotlib.figure import Figure

    return Figure(figsize=(width, height), dpi=DPI, facecolor="white", layout="constrained")


def _png(fig) -> bytes:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=DPI, facecolor="white")
    return buf.getvalue()


def colors(n: int) -> list:
    """``n`` distinct colours (``tab10``, then ``tab20``)."""
    from matplotlib import colormaps

    cmap = colormaps["tab10" if n <= 10 else "tab20"]
    return [cmap(i % cmap.N) for i in range(n)]


def heatmap(matrix: np.ndarray, names: Sequence[str], *, title: str,
            marks: np.ndarray | None = None, label: str = "MMD²",
            col_names: Sequence[str] | None = None) -> bytes:
    """A heat-map with the value in each cell: ``k x k`` over ``names`` (diagonal left blank),
    or rows ``names`` x columns ``col_names``. ``marks`` (boolean) adds a ``*`` (e.g. the pair
    differs after Holm's correction); NaN cells are blank."""
    M = np.asarray(matrix, dtype=float)
    square = col_names is None
    cols = list(names) if square else list(col_names)
    k, m = len(names), len(cols)
    fig = _figure(2.6 + 0.6 * m + 1.0, 2.2 + 0.45 * k)
    ax = fig.add_subplot()
    finite = M[np.isfinite(M)]
    vmax = float(finite.max()) if finite.size and finite.max() > 0 else 1.0
    shown = np.where(np.isfinite(M), np.clip(M, 0, None), np.nan)
    if square:
        np.fill_diagonal(shown, np.nan)                 # a domain against itself: blank
    im = ax.imshow(shown, cmap="viridis", vmin=0, vmax=vmax, aspect="auto")
    ax.set_xticks(range(m), labels=cols, rotation=45, ha="right")
    ax.set_yticks(range(k), labels=list(names))
    for i in range(k):
        for j in range(m):
            if (square and i == j) or not np.isfinite(M[i, j]):
                continue
            star = "*" if marks is not None and marks[i, j] else ""
            dark = max(M[i, j], 0) < 0.6 * vmax
            ax.text(j, i, f"{M[i, j]:.3g}{star}", ha="center", va="center", fontsize=8,
                    color="white" if dark else "black")
    ax.set_title(title, fontsize=10)
    fig.colorbar(im, ax=ax, label=label, shrink=0.8)
    return _png(fig)


def scatter_figure(points: Mapping[str, np.ndarray], *, title: str, xlabel: str = "PC 1",
                   ylabel: str = "PC 2", markers: Mapping[str, str] | None = None) -> bytes:
    """A scatter of 2-D points, one colour (and optionally marker) per named group."""
    fig = _figure(4.9, 4.0)
    ax = fig.add_subplot()
    for (name, P), c in zip(points.items(), colors(len(points)), strict=True):
        P = np.asarray(P, dtype=float)
        ax.scatter(P[:, 0], P[:, 1], s=10, alpha=0.6, color=c, label=f"{name} ({len(P)})",
                   marker=(markers or {}).get(name, "o"), edgecolors="none")
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title, fontsize=10)
    ax.legend(fontsize=8, markerscale=1.5, loc="best")
    return _png(fig)


def domain_map_figure(xy: np.ndarray, names: Sequence[str], sizes: Sequence[int], *,
                      title: str) -> bytes:
    """The domains as labelled points (area ~ rows) at multidimensional-scaling coordinates."""
    fig = _figure(4.9, 4.0)
    ax = fig.add_subplot()
    xy = np.asarray(xy, dtype=float)
    s = np.asarray(sizes, dtype=float)
    area = 60 + 340 * s / max(float(s.max()), 1.0)
    for i, (name, c) in enumerate(zip(names, colors(len(names)), strict=True)):
        ax.scatter(xy[i, 0], xy[i, 1], s=area[i], color=c, alpha=0.8, edgecolors="black")
        # labels of nearby points are staggered so that coinciding domains stay readable
        ax.annotate(name, xy[i], textcoords="offset points", xytext=(9, 8 - 13 * (i % 3)),
                    fontsize=9)
    span = float(np.ptp(xy, axis=0).max()) if len(xy) > 1 else 1.0
    pad = 0.25 * (span if span > 0 else 1.0)
    ax.set_xlim(xy[:, 0].min() - pad, xy[:, 0].max() + pad)
    ax.set_ylim(xy[:, 1].min() - pad, xy[:, 1].max() + pad)
    ax.set_xlabel("MDS 1 (√MMD²)")
    ax.set_ylabel("MDS 2")
    ax.set_title(title, fontsize=10)
    return _png(fig)


def bar_chart(labels: Sequence[str], values: Sequence[float], *, title: str, ylabel: str,
              errors: Sequence[float] | None = None, highlight: int | None = None) -> bytes:
    """Horizontal bars (NaN drawn as an empty bar with "failed"); ``highlight`` is drawn in a
    strong colour and marked "chosen"."""
    v = np.asarray(values, dtype=float)
    fig = _figure(6.0, 1.2 + 0.45 * len(labels))
    ax = fig.add_subplot()
    base = "#9db4d0"
    cols = ["#d9480f" if i == highlight else base for i in range(len(labels))]
    y = np.arange(len(labels))[::-1]
    err = None if errors is None else np.nan_to_num(np.asarray(errors, dtype=float))
    ax.barh(y, np.nan_to_num(v), xerr=err, color=cols, capsize=3)
    ax.set_yticks(y, labels=list(labels))
    finite = v[np.isfinite(v)]
    top = float(finite.max()) if finite.size else 1.0
    for yi, vi, i in zip(y, v, range(len(v)), strict=True):
        text = "failed" if not np.isfinite(vi) else f"{vi:.3f}" + ("  chosen" if i == highlight
                                                                   else "")
        ax.text(max(np.nan_to_num(vi), 0) + 0.01 * abs(top or 1), yi, text, va="center",
                fontsize=8)
    ax.set_xlabel(ylabel)
    ax.set_title(title, fontsize=10)
    ax.margins(x=0.25)
    return _png(fig)


def grouped_bars(groups: Sequence[str], series: Mapping[str, Sequence[float]], *, title: str,
                 ylabel: str) -> bytes:
    """Bars per group (e.g. class), one bar per series (e.g. source share, predicted share)."""
    fig = _figure(max(4.0, 1.5 + 0.5 * len(groups) * len(series)), 3.6)
    ax = fig.add_subplot()
    x = np.arange(len(groups))
    w = 0.8 / max(len(series), 1)
    for j, ((name, vals), c) in enumerate(zip(series.items(), colors(len(series)), strict=True)):
        ax.bar(x + (j - (len(series) - 1) / 2) * w, np.asarray(vals, dtype=float), w,
               label=name, color=c)
    ax.set_xticks(x, labels=list(groups), rotation=45 if len(groups) > 6 else 0)
    top = max((float(np.nanmax(v)) for v in series.values() if len(v)), default=1.0)
    ax.set_ylim(0, 1.3 * top if top > 0 else 1.0)      # room for the legend above the bars
    ax.set_ylabel(ylabel)
    ax.set_title(title, fontsize=10)
    ax.legend(fontsize=8, ncol=min(len(series), 4), loc="upper center")
    return _png(fig)
