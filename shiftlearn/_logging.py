"""The library's messages go through :mod:`logging`, never ``print``.

Every module logs to ``logging.getLogger(__name__)`` (the ``shiftlearn.*`` hierarchy), so an
application controls them as usual (``logging.basicConfig(level=logging.INFO)``, or a handler
on the ``"shiftlearn"`` logger).

An estimator's ``verbose=`` is a person asking to see its progress messages.
:func:`verbose_message` logs them at ``INFO``; when logging has not been configured to show
``INFO`` for that logger (the default: the root logger is at ``WARNING``), the message is handed
to a stderr handler instead, so ``verbose=1`` shows its lines as it always did, without the
library configuring the application's logging.

Examples
--------
>>> import logging
>>> log = logging.getLogger("shiftlearn.example")
>>> verbose_message(log, "fold 1/3 done")   # written to stderr (logging not configured)
"""

from __future__ import annotations

import logging
import sys

__all__ = ["verbose_message"]


class _StderrHandler(logging.Handler):
    """Writes to the ``sys.stderr`` of the moment (pytest and the CLI replace it)."""

    def emit(self, record: logging.LogRecord) -> None:
        try:
            sys.stderr.write(self.format(record) + "\n")
            sys.stderr.flush()
        except Exception:  # noqa: BLE001 - logging must never raise
            self.handleError(record)


_FALLBACK = _StderrHandler()
_FALLBACK.setFormatter(logging.Formatter("%(message)s"))


def verbose_message(logger: logging.Logger, message: str, level: int = logging.INFO) -> None:
    """Log ``message``; on stderr if logging is not configured to show it."""
    if logger.isEnabledFor(level):
        logger.log(level, message)
    else:
        _FALLBACK.handle(logger.makeRecord(logger.name, level, "(verbose)", 0, message, None,
                                           None))
