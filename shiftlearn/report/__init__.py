"""Reports for people: the shift between domains in numbers and words, and self-contained HTML.

* :func:`analyse_shift` / :class:`ShiftAnalysis`: pairwise MMD² between domains with
  Holm-corrected permutation tests, per-class shift, a plain-language sentence.
* :class:`HtmlReport` and the figure functions (:func:`heatmap`, :func:`scatter_figure`,
  :func:`domain_map_figure`, :func:`bar_chart`, :func:`grouped_bars`: PNG bytes for
  :meth:`HtmlReport.figure`): one HTML file with its figures embedded (``shiftlearn shift
  --report x.html``, ``shiftlearn adapt --report x.html``).
"""

from ._figures import bar_chart, domain_map_figure, grouped_bars, heatmap, scatter_figure
from ._html import HtmlReport, png_size
from ._shift import ShiftAnalysis, analyse_shift, describe, domain_map, holm, row_map

__all__ = ["HtmlReport", "ShiftAnalysis", "analyse_shift", "bar_chart", "describe", "domain_map",
           "domain_map_figure", "grouped_bars", "heatmap", "holm", "png_size", "row_map",
           "scatter_figure"]
