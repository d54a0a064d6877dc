"""The ``shiftlearn`` command line.

Tools: ``datasets`` (list, verify and download the data sets), ``shift`` (how far apart are
your domains?), ``adapt`` (your own files in, target predictions and a report out),
``generalize`` (several labeled domain files in, a model for unseen domains out), ``predict``
(a model saved by ``adapt --save`` on new files), ``mmd`` (do two domains of a data set
differ?) and ``federated`` (federated RF-TCA jobs). The papers'
demos live under ``shiftlearn demo <name>``: ``subspace`` (raw 1NN against TCA/SCA on a real
data set), ``boosting``, ``marginal`` and ``splits``.

Exit status: 0 on success; 2 on a person's mistake (one line
``shiftlearn <command>: error: <problem and fix>`` on stderr) and on argparse's errors; 130 on
Ctrl-C; any other exception is a bug and keeps its traceback. ``--debug`` (or
``SHIFTLEARN_DEBUG=1``) re-raises everything. Design notes: ``docs/dev/cli.md``.

Examples
--------
>>> main(["--version"])  # doctest: +SKIP
shiftlearn 0.1.0
>>> build_parser().prog
'shiftlearn'
"""

from __future__ import annotations

import argparse
import importlib
import logging
import os
import sys
from collections.abc import Sequence

from .. import __version__
from .._progress import progress_enabled

__all__ = ["COMMON_DEFAULTS", "TOOLS", "build_parser", "common_parser", "error_message", "main"]

#: The tools, in the order ``shiftlearn --help`` lists them (modules of this package).
TOOLS = ("datasets", "shift", "adapt", "generalize", "predict", "mmd", "federated")

#: Values of the common options that were not given.
COMMON_DEFAULTS = {"data_home": None, "quiet": False, "seed": 0, "debug": False}

#: ``imported module -> shiftlearn extra`` that provides it (an ImportError of one of these is
#: a missing install, not a bug).
OPTIONAL_EXTRAS = {"flwr": "federated", "dask": "dask", "distributed": "dask",
                   "matplotlib": None, "pyarrow": None, "rich": None}


def common_parser() -> argparse.ArgumentParser:
    """The parent parser of every command: ``--data-home``, ``--quiet``, ``--seed``,
    ``--debug``."""
    p = argparse.ArgumentParser(add_help=False)
    g = p.add_argument_group("common options")
    g.add_argument("--data-home", default=argparse.SUPPRESS, metavar="DIR",
                   help="folder of the data sets (default: $SHIFTLEARN_DATA, then "
                        "~/.cache/shiftlearn)")
    g.add_argument("-q", "--quiet", action="store_true", default=argparse.SUPPRESS,
                   help="print results only: no progress or notes on stderr")
    g.add_argument("--seed", type=int, default=argparse.SUPPRESS, metavar="N",
                   help="seed of every random choice the command makes (default 0)")
    g.add_argument("--debug", action="store_true", default=argparse.SUPPRESS,
                   help="show the full traceback of any error (also: SHIFTLEARN_DEBUG=1)")
    return p


def _add(subparsers, module, parents) -> argparse.ArgumentParser:
    p = module.add_parser(subparsers, parents)
    p.set_defaults(_run=module.run, _prog=p.prog)
    return p


def build_parser() -> argparse.ArgumentParser:
    """The ``shiftlearn`` argument parser (tools, then ``demo <name>``)."""
    from . import demo

    common = common_parser()
    p = argparse.ArgumentParser(
        prog="shiftlearn", parents=[common],
        description="Learning under domain shift with kernel methods: check your data sets, "
                    "measure how far domains are apart, adapt a model to an unlabeled target "
                    "domain, and rerun the papers' demos.",
        epilog="Run `shiftlearn <command> --help` for the options of a command.")
    p.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = p.add_subparsers(dest="command", required=True, title="commands",
                           metavar="{" + ",".join((*TOOLS, "demo")) + "}")
    for name in TOOLS:
        _add(sub, importlib.import_module(f"{__name__}.{name}"), [common])
    demo.add_parser(sub, [common], register=_add)
    return p


def _extra_hint(exc: ImportError) -> str | None:
    top = (exc.name or "").split(".")[0]
    if top not in OPTIONAL_EXTRAS:  # the library's own check names the install command
        text = " ".join(str(exc).split())
        return text if "pip install" in text else None
    extra = OPTIONAL_EXTRAS[top]
    fix = f'pip install "shiftlearn[{extra}]"' if extra else f"pip install {top}"
    return f"this command needs {top}, which is not installed; install it with: {fix}"


def error_message(exc: BaseException) -> str | None:
    """The one-line message for a person's mistake, or None when ``exc`` is a bug."""
    if isinstance(exc, ImportError):
        return _extra_hint(exc)
    if isinstance(exc, UnicodeDecodeError):
        return (f"cannot read the file as {exc.encoding} text (byte {exc.start}: "
                f"{exc.object[exc.start:exc.start + 1]!r}); save it as UTF-8 or give a "
                "supported format.")
    if isinstance(exc, OSError):
        what = exc.strerror or str(exc)
        if exc.filename is not None:
            fix = {FileNotFoundError: "check the path",
                   PermissionError: "check its permissions or choose another path",
                   IsADirectoryError: "give a file, not a folder",
                   NotADirectoryError: "check the path"}.get(type(exc), "check the path")
            return f"{what}: {exc.filename}; {fix}."
        return what
    if isinstance(exc, ValueError | TypeError):
        text = str(exc) or type(exc).__name__
        return " ".join(line.strip() for line in text.splitlines() if line.strip())
    return None


def _debug(args: argparse.Namespace | None) -> bool:
    return bool(getattr(args, "debug", False)) or os.environ.get("SHIFTLEARN_DEBUG", "") not in (
        "", "0")


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``shiftlearn`` command; returns the exit code.

    argparse errors (an unknown option, a bad number) exit through ``SystemExit(2)`` as usual.
    """
    parser = build_parser()
    args = parser.parse_args(None if argv is None else list(argv))
    args._argv = None if argv is None else list(argv)
    args._explicit = {key for key in COMMON_DEFAULTS if hasattr(args, key)}
    for key, value in COMMON_DEFAULTS.items():
        if not hasattr(args, key):
            setattr(args, key, value)
    prog = args._prog
    if _debug(args):
        logging.basicConfig(level=logging.DEBUG, format="%(name)s: %(message)s")
    try:
        with progress_enabled(not args.quiet):
            code = int(args._run(args) or 0)
        sys.stdout.flush()  # a closed pipe shows here, not at interpreter exit
        return code
    except KeyboardInterrupt:
        if _debug(args):
            raise
        if sys.stderr.isatty():  # clear a progress line first
            sys.stderr.write("\r\033[K")
        print(f"{prog}: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # `shiftlearn ... | head`: the reader left; say nothing
        try:
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        except (OSError, ValueError):  # stdout is not a file descriptor (tests)
            pass
        return 141
    except Exception as exc:
        message = error_message(exc)
        if message is None or _debug(args):
            raise
        print(f"{prog}: error: {message}", file=sys.stderr)
        return 2
