"""Progress bars (shiftlearn._progress) and verbose logging (shiftlearn._logging)."""

import io
import logging

from rich.console import Console

from shiftlearn import _progress
from shiftlearn._logging import verbose_message


def _console():
    buf = io.StringIO()
    return buf, Console(file=buf, force_terminal=True, width=100)


def test_track_draws_only_when_enabled():
    buf, console = _console()
    assert list(_progress.track(range(3), description="quiet")) == [0, 1, 2]
    with _progress.progress_enabled(False, console=console):
        assert list(_progress.track(range(3), description="off")) == [0, 1, 2]
    assert buf.getvalue() == ""
    with _progress.progress_enabled(True, console=console) as on:
        assert on and _progress.is_enabled()
        assert list(_progress.track(range(3), description="counting")) == [0, 1, 2]
    assert not _progress.is_enabled()
    assert "counting" in buf.getvalue()


def test_progress_needs_a_terminal(monkeypatch):
    monkeypatch.setattr(_progress, "_stderr_is_terminal", lambda: False)
    with _progress.progress_enabled(True) as on:
        assert not on and not _progress.is_enabled()


def test_nested_bars_share_one_display():
    buf, console = _console()
    with _progress.progress_enabled(True, console=console):
        with _progress.task("outer", 2) as outer:
            for _ in range(2):
                assert list(_progress.track(range(2), description="inner")) == [0, 1]
                outer()
            assert _progress._DISPLAY.get() is not None
    assert _progress._DISPLAY.get() is None
    assert "outer" in buf.getvalue() and "inner" in buf.getvalue()


def test_abandoned_loop_leaves_no_display():
    buf, console = _console()
    with _progress.progress_enabled(True, console=console):
        for i in _progress.track(range(5), description="stop early"):
            if i == 1:
                break
    assert _progress._DISPLAY.get() is None


def test_verbose_message_stderr_unless_logging_shows_it(capsys, caplog):
    log = logging.getLogger("shiftlearn.test_progress")
    verbose_message(log, "hello person")
    assert capsys.readouterr().err == "hello person\n"
    with caplog.at_level(logging.INFO, logger="shiftlearn"):
        verbose_message(log, "hello logger")
    assert capsys.readouterr().err == ""
    assert [r.getMessage() for r in caplog.records] == ["hello logger"]
