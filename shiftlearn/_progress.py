"""Progress bars for the loops a person waits on, drawn with rich only where a person watches.

Library code wraps a long loop in :func:`track` (or advances a :func:`task` from a callback);
nothing is drawn unless the caller switched progress on with :func:`progress_enabled`, which the
``shiftlearn`` command line does when stderr is a terminal and ``--quiet`` is not given. So the
library never writes to the terminal by itself, and tests, pipes and log files see nothing.

Bars are transient and drawn on stderr; nested loops share one display. Design notes:
``docs/dev/core.md``.

Examples
--------
>>> with progress_enabled(False):
...     sum(track(range(4), description="adding"))
6
>>> with task("folds", total=3) as advance:
...     for _ in range(3):
...         advance()
"""

from __future__ import annotations

import contextvars
import sys
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import TypeVar

__all__ = ["is_enabled", "progress_enabled", "task", "track"]

T = TypeVar("T")

_ENABLED: contextvars.ContextVar[bool] = contextvars.ContextVar("shiftlearn_progress",
                                                                default=False)
_CONSOLE: contextvars.ContextVar = contextvars.ContextVar("shiftlearn_progress_console",
                                                         default=None)
_DISPLAY: contextvars.ContextVar = contextvars.ContextVar("shiftlearn_progress_display",
                                                         default=None)


def is_enabled() -> bool:
    """True inside :func:`progress_enabled` with bars switched on."""
    return _ENABLED.get()


@contextmanager
def progress_enabled(enabled: bool = True, *, console=None) -> Iterator[bool]:
    """Switch progress bars on (or off) for the code inside the ``with`` block.

    Parameters
    ----------
    enabled : bool
        ``True`` draws bars only when stderr is a terminal (or a ``console`` is given).
    console : rich.console.Console or None
        Where to draw (tests pass one writing to a buffer); default: stderr.

    Yields
    ------
    bool
        Whether bars will be drawn.
    """
    on = bool(enabled) and (console is not None or _stderr_is_terminal())
    tokens = (_ENABLED.set(on), _CONSOLE.set(console))
    try:
        yield on
    finally:
        _CONSOLE.reset(tokens[1])
        _ENABLED.reset(tokens[0])


def _is_terminal(stream) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):   # replaced or closed stream
        return False


def _stderr_is_terminal() -> bool:
    return _is_terminal(sys.stderr)


def _known_total(column_class):
    """``column_class`` drawing nothing for a task without a total (a phase of unknown length
    shows its description, a pulsing bar and the elapsed time only)."""
    class Column(column_class):
        def render(self, task):
            from rich.text import Text

            return Text("") if task.total is None else super().render(task)

    return Column


def _make_display():
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    given = _CONSOLE.get()
    console = given or Console(file=sys.stderr)
    # results printed on stdout while the bars are drawn: when stdout is the terminal too, rich
    # prints them above the bars (else the bars' redraw would erase them); a redirected stdout
    # is left alone, so `shiftlearn ... > out.txt` still gets every result line
    share = given is None and _is_terminal(sys.stdout)
    return Progress(TextColumn("{task.description}"), BarColumn(),
                    _known_total(MofNCompleteColumn)(), TimeElapsedColumn(),
                    _known_total(TextColumn)("eta"), _known_total(TimeRemainingColumn)(),
                    console=console, transient=True, redirect_stdout=share,
                    redirect_stderr=False)


@contextmanager
def task(description: str, total: int | None = None) -> Iterator[Callable[..., None]]:
    """A bar advanced by hand: ``with task("folds", 10) as advance: ... advance()``.

    ``advance(n=1, description=None)`` moves the bar (and may rename it). Outside
    :func:`progress_enabled` it does nothing and costs a function call. ``total=None`` is a
    phase of unknown length: a pulsing bar with the elapsed time, renamed as the phase
    changes (``advance(0, description="scoring")``).
    """
    if not _ENABLED.get():
        yield _noop
        return
    display = _DISPLAY.get()
    owner = display is None
    if owner:
        display = _make_display()
        display.start()
        token = _DISPLAY.set(display)
    task_id = display.add_task(description, total=total)

    def advance(n: int = 1, description: str | None = None) -> None:
        display.update(task_id, advance=n,
                       **({} if description is None else {"description": description}))

    try:
        yield advance
    finally:
        display.remove_task(task_id)
        if owner:
            display.stop()
            try:
                _DISPLAY.reset(token)
            except ValueError:  # a generator closed in another context (an abandoned loop)
                _DISPLAY.set(None)


def track(iterable: Iterable[T], *, description: str = "", total: int | None = None
          ) -> Iterator[T]:
    """Iterate over ``iterable`` with a bar (only inside :func:`progress_enabled`)."""
    if not _ENABLED.get():
        yield from iterable
        return
    if total is None and hasattr(iterable, "__len__"):
        total = len(iterable)
    with task(description, total) as advance:
        for item in iterable:
            yield item
            advance()


def _noop(n: int = 1, description: str | None = None) -> None:
    return None
