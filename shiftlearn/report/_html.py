"""A self-contained HTML report: one file, figures embedded, nothing fetched when opened.

The page is one file: figures are embedded PNG ``data:`` URIs, the style sheet is inline,
and nothing outside the file is referenced; every piece of text is HTML-escaped. Design
notes: ``docs/dev/report.md``.

Examples
--------
>>> rep = HtmlReport("A title")
>>> rep.paragraph("x < y & z")
>>> rep.table(["a", "b"], [[1, "<2>"]])
>>> text = rep.render()
>>> "x &lt; y &amp; z" in text and "&lt;2&gt;" in text and "http" not in text
True
"""

from __future__ import annotations

import base64
import html
import struct
from collections.abc import Sequence

__all__ = ["HtmlReport", "png_size"]

_CSS = """
body { font-family: system-ui, -apple-system, "Segoe UI", sans-serif; margin: 2em auto;
       max-width: 1100px; padding: 0 1em; color: #222; line-height: 1.45; }
h1 { font-size: 1.6em; border-bottom: 2px solid #d9480f; padding-bottom: .2em; }
h2 { font-size: 1.25em; margin-top: 1.6em; border-bottom: 1px solid #ddd; }
table { border-collapse: collapse; margin: .6em 0; font-size: .92em; max-width: 100%; }
th, td { border: 1px solid #ccc; padding: .25em .6em; text-align: right;
         overflow-wrap: anywhere; }
th { background: #f3f3f3; }
td:first-child, th:first-child { text-align: left; }
tr.chosen td { background: #fff0e6; font-weight: 600; }
figure { display: inline-block; margin: .5em 1em .5em 0; vertical-align: top; max-width: 100%; }
figcaption { font-size: .85em; color: #555; }
img.figure { border: 1px solid #eee; max-width: calc(100% - 2px); height: auto; }
code, pre { background: #f6f6f6; padding: .1em .3em; border-radius: 3px; font-size: .9em; }
pre { padding: .6em; white-space: pre-wrap; word-break: break-all; }
.lead { font-size: 1.1em; background: #f6f9fc; border-left: 4px solid #4a7ab5;
        padding: .5em .8em; }
.warning { background: #fff4e5; border-left: 4px solid #d9480f; padding: .5em .8em; }
.muted { color: #666; font-size: .9em; }
"""


def png_size(png: bytes) -> tuple[int, int]:
    """``(width, height)`` in pixels from a PNG's header.

    Examples
    --------
    >>> png_size(b"\\x89PNG\\r\\n\\x1a\\n" + b"\\x00\\x00\\x00\\rIHDR" + (640).to_bytes(4, "big")
    ...          + (480).to_bytes(4, "big"))
    (640, 480)
    """
    if png[:8] != b"\x89PNG\r\n\x1a\n" or png[12:16] != b"IHDR":
        raise ValueError("not a PNG image")
    return struct.unpack(">II", png[16:24])


class HtmlReport:
    """Build an HTML document piece by piece; :meth:`render` returns the text."""

    def __init__(self, title: str):
        self.title = title
        self.parts: list[str] = [f"<h1>{html.escape(title)}</h1>"]
        self.n_figures = 0

    def heading(self, text: str, level: int = 2) -> None:
        self.parts.append(f"<h{level}>{html.escape(text)}</h{level}>")

    def paragraph(self, text: str, cls: str | None = None) -> None:
        attr = f' class="{html.escape(cls)}"' if cls else ""
        self.parts.append(f"<p{attr}>{html.escape(text)}</p>")

    def items(self, texts: Sequence[str]) -> None:
        self.parts.append("<ul>" + "".join(f"<li>{html.escape(t)}</li>" for t in texts)
                          + "</ul>")

    def code(self, text: str) -> None:
        self.parts.append(f"<pre><code>{html.escape(text)}</code></pre>")

    def table(self, headers: Sequence[str], rows: Sequence[Sequence], *,
              highlight: Sequence[bool] | None = None) -> None:
        head = "".join(f"<th>{html.escape(str(h))}</th>" for h in headers)
        body = []
        for i, row in enumerate(rows):
            cls = ' class="chosen"' if highlight is not None and highlight[i] else ""
            cells = "".join(f"<td>{html.escape(str(c))}</td>" for c in row)
            body.append(f"<tr{cls}>{cells}</tr>")
        self.parts.append(f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}"
                          "</tbody></table>")

    def figure(self, png: bytes, caption: str, alt: str | None = None) -> None:
        """Embed a PNG (base64) with its caption."""
        w, h = png_size(png)
        self.n_figures += 1
        data = base64.b64encode(png).decode("ascii")
        self.parts.append(
            f'<figure style="width: {w + 2}px"><img class="figure" '
            f'id="figure-{self.n_figures}" width="{w}" height="{h}" '
            f'alt="{html.escape(alt or caption)}" '
            f'src="data:image/png;base64,{data}"><figcaption>{html.escape(caption)}'
            "</figcaption></figure>")

    def render(self) -> str:
        return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
                f"<title>{html.escape(self.title)}</title><style>{_CSS}</style></head>\n"
                "<body>\n" + "\n".join(self.parts) + "\n</body></html>\n")
