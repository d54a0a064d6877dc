"""Shared helpers for benchmark scripts: machine facts, timing, writing results.

Layout (``benchmarks/README.md``): one folder per subpackage,
``benchmarks/<folder>/<script>.py``, and each script writes its published results beside it,
``benchmarks/<folder>/results/<script>.md`` and ``.json`` (a variant the script names from its
options: ``<script>_<variant>``; a JSON over :data:`MAX_PLAIN_JSON` bytes is written gzipped,
``.json.gz``, and read back by :func:`read_results`). :func:`write_results` derives the folder
from the calling script and refuses a name that does not start with the script's name, so a
result file always says which script made it. Checkpoints of resumable scripts are
``results/_<script>...`` (ignored by git). A rerun overwrites the published file (``git diff``
shows what changed); to keep a scratch run apart, set ``SHIFTLEARN_BENCH_RESULTS=<folder>``
(``benchmarks/scratch/`` is ignored by git).

Scripts put ``benchmarks/`` on ``sys.path`` and import this module as ``_common``. Importing it
sets the data home to ``../shared/data`` beside the clone when ``SHIFTLEARN_DATA`` is unset (as
the Makefile and ``tests/conftest.py`` do).

Progress (issue #17 item 4): the long scripts decorate ``main`` with :func:`progress`
(``@progress()``), which switches the library's bars on (:mod:`shiftlearn._progress`, the
command line's switch) when stderr is a terminal, and wrap their own long loops (tasks, seeds,
parts) in :func:`track` (a Flower loopback run's rounds: :func:`round_bar`). Off a terminal (a
log file, ``nohup``, the tests that import every script) nothing is drawn and the output is
byte for byte what it was; the bars are transient and on stderr, so the results printed on
stdout and written by :func:`write_results` never contain them.
"""

from __future__ import annotations

import gzip
import json
import os
import platform
import resource
import shlex
import subprocess
import sys
import time
import types
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TypeVar

import numpy as np

T = TypeVar("T")

BENCHMARKS = Path(__file__).resolve().parent
SCRATCH_ENV = "SHIFTLEARN_BENCH_RESULTS"
#: the largest results JSON kept as plain text; a larger one is written as ``<name>.json.gz``
#: (no tracked file of the repository is over 300 KB)
MAX_PLAIN_JSON = 300_000
os.environ.setdefault("SHIFTLEARN_DATA", str(BENCHMARKS.parents[1] / "shared" / "data"))


def results_dir(script: str | Path) -> Path:
    """Where ``script`` writes: ``$SHIFTLEARN_BENCH_RESULTS`` if set, else ``<its folder>/results``
    (``benchmarks/boosting/boosting_speed.py`` -> ``benchmarks/boosting/results``)."""
    scratch = os.environ.get(SCRATCH_ENV)
    return Path(scratch) if scratch else Path(script).resolve().parent / "results"


def machine_info() -> dict:
    """Facts about this machine and software, printed and stored with every result."""
    import scipy
    import sklearn

    try:
        mem = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    except (ValueError, OSError):
        mem = float("nan")
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return {
        "cpu": cpu,
        "cores": os.cpu_count(),
        "memory_gb": round(mem, 1),
        "python": platform.python_version(),
        "numpy": np.__version__,
        "scipy": scipy.__version__,
        "sklearn": sklearn.__version__,
        "platform": platform.platform(),
        "date_utc": time.strftime("%Y-%m-%d %H:%M", time.gmtime()),
    }


def command_line() -> str:
    return "python " + " ".join(shlex.quote(a) for a in sys.argv)


def header(title: str) -> dict:
    """Print the title, the machine and the command; return the machine dict."""
    info = machine_info()
    print(f"# {title}")
    print("machine: " + ", ".join(f"{k}={v}" for k, v in info.items()))
    print(f"command: {command_line()}")
    return info


@contextmanager
def progress(enabled: bool = True) -> Iterator[bool]:
    """Progress bars for a benchmark's run, only when stderr is a terminal.

    Use it on ``main`` (``@progress()``: a ``contextmanager`` is also a decorator) or as
    ``with progress(): ...``. Inside it, the library's long loops (searches, boosting
    iterations, federated rounds) and the script's own :func:`track` loops draw one shared,
    transient display on stderr; elsewhere (stderr redirected, ``enabled=False``) nothing is
    drawn. Yields whether bars are drawn.
    """
    # imported here, not at the top: a --baseline worker (rf_eigensolver.py,
    # splits_selector_speed.py) runs with an older tree's shiftlearn first on its path, which
    # may predate shiftlearn._progress: it then runs without bars
    try:
        from shiftlearn._progress import progress_enabled
    except ImportError:
        yield False
        return
    with progress_enabled(enabled) as on:
        yield on


def track(iterable: Iterable[T], description: str, total: int | None = None) -> Iterator[T]:
    """``for task in track(tasks, "tasks"):``: a bar over one of the script's own loops
    (inside :func:`progress` on a terminal; elsewhere the plain iteration). ``total`` for an
    iterable without ``len`` (a generator)."""
    try:
        from shiftlearn._progress import track as _track
    except ImportError:   # an older tree's shiftlearn (see progress)
        return iter(iterable)
    return _track(iterable, description=description, total=total)


@contextmanager
def round_bar(description: str, total: int | None = None
              ) -> Iterator[Callable[[int, int | None], None]]:
    """``with round_bar("rounds", 5) as on_round: dep.run(job, on_round=on_round)``: a bar
    over a Flower loopback run's rounds (``LoopbackDeployment.run`` calls ``on_round(done,
    total)`` from the ServerApp's streamed log); ``total=None`` for the one-shot protocol.
    Drawn only inside :func:`progress` on a terminal."""
    try:
        from shiftlearn._progress import task
    except ImportError:   # an older tree's shiftlearn (see progress)
        yield lambda done, total: None
        return
    with task(description, total) as advance:
        yield lambda done, total: advance(1, description=f"{description}: {done} done")


@contextmanager
def timer():
    """``with timer() as t: ...`` then ``t()`` gives the elapsed seconds."""
    start = time.perf_counter()
    out = {"s": None}
    yield lambda: out["s"] if out["s"] is not None else time.perf_counter() - start
    out["s"] = time.perf_counter() - start


def peak_rss_mb() -> float:
    """Peak resident memory of this process so far, in MB (Linux ru_maxrss is in kB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def markdown_table(rows: list[dict], columns: list[str] | None = None,
                   floatfmt: str = ".2f") -> str:
    columns = columns or list(rows[0])
    out = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    for r in rows:
        cells = []
        for c in columns:
            v = r.get(c, "")
            cells.append(format(v, floatfmt) if isinstance(v, float) else str(v))
        out.append("| " + " | ".join(cells) + " |")
    return "\n".join(out)


def write_results(name: str, title: str, body_md: str, data: dict, machine: dict, *,
                  script: str | Path | None = None) -> Path:
    """Write ``<name>.md`` and ``<name>.json`` in :func:`results_dir` of the calling script.

    ``script`` defaults to the ``__file__`` of the caller. ``name`` must be the script's name or
    start with it and ``_`` (a variant): anything else is a ``ValueError``. Returns the
    Markdown path.
    """
    if script is None:
        script = sys._getframe(1).f_globals.get("__file__")
        if script is None:
            raise ValueError("write_results could not tell which script called it; pass "
                             "script=__file__")
    stem = Path(script).stem
    if name != stem and not name.startswith(stem + "_"):
        raise ValueError(f"results name {name!r} does not start with the script's name "
                         f"{stem!r}: name results '{stem}' or '{stem}_<variant>'")
    out = results_dir(script)
    out.mkdir(parents=True, exist_ok=True)
    md = out / f"{name}.md"
    cmd = command_line()
    md.write_text(f"# {title}\n\nMachine: " + ", ".join(f"{k}={v}" for k, v in machine.items())
                  + f"\n\nCommand: `{cmd}`\n\n{body_md}\n")
    text = json.dumps({"title": title, "command": cmd, "machine": machine, "results": data},
                      indent=2, default=lambda o: o.tolist() if hasattr(o, "tolist") else str(o))
    plain, packed = out / f"{name}.json", out / f"{name}.json.gz"
    if len(text.encode()) > MAX_PLAIN_JSON:
        # mtime=0: the same results give the same bytes, so a rerun shows no spurious change
        packed.write_bytes(gzip.compress(text.encode(), mtime=0))
        plain.unlink(missing_ok=True)
    else:
        plain.write_text(text)
        packed.unlink(missing_ok=True)
    print(f"wrote {md}")
    return md


def results_json(md: Path) -> Path | None:
    """The JSON written beside the results page ``md`` (``.json`` or ``.json.gz``), or
    ``None`` where the script wrote none."""
    for suffix in (".json", ".json.gz"):
        path = Path(md).with_suffix(suffix)
        if path.is_file():
            return path
    return None


def read_results(path: Path) -> dict:
    """A results JSON written by :func:`write_results`, plain or gzipped."""
    path = Path(path)
    raw = path.read_bytes()
    return json.loads(gzip.decompress(raw) if path.name.endswith(".gz") else raw)


class PartsFile:
    """A resumable store of partial results: one JSON object, one key per finished unit.

    ``save`` rewrites the file atomically (write a temporary file, then rename) while holding
    an exclusive lock on a sibling ``.lock`` file, so two runs that write parts of the same
    file at once (two tasks run in parallel) neither leave it half-written nor lose a part.
    """

    def __init__(self, path: Path):
        self.path = Path(path)

    def load(self) -> dict:
        return json.loads(self.path.read_text()) if self.path.exists() else {}

    def __contains__(self, key: str) -> bool:
        return key in self.load()

    def save(self, key: str, value) -> None:
        import fcntl

        self.path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.path.with_name(self.path.name + ".lock"), "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)           # load + write as one step
            data = self.load()
            data[key] = value
            tmp = self.path.with_suffix(f".tmp{os.getpid()}")
            tmp.write_text(json.dumps(data, indent=1, default=float))
            os.replace(tmp, self.path)


def from_git(commit: str, path: str) -> str:
    """The text of ``path`` at ``commit`` of this repository (``git show``).

    A benchmark that measures a former version of the code (a replaced solver, a former
    generator) reads it from the history instead of keeping a frozen copy in the tree. Raises
    ``RuntimeError`` naming the fix where the clone lacks that commit (a shallow clone)."""
    try:
        done = subprocess.run(["git", "show", f"{commit}:{path}"], cwd=BENCHMARKS.parent,
                              capture_output=True, text=True, check=True)
    except FileNotFoundError as exc:
        raise RuntimeError(f"reading {path} at commit {commit} needs git on PATH") from exc
    except subprocess.CalledProcessError as exc:
        raise RuntimeError(f"{path} at commit {commit} is not in this clone "
                           f"({exc.stderr.strip()}): this comparison reads the former code from "
                           "the history; run it in a full clone (git fetch --unshallow)") from exc
    return done.stdout


def module_from_git(commit: str, path: str, name: str) -> types.ModuleType:
    """The module ``path`` as it was at ``commit`` (:func:`from_git`), imported as ``name``."""
    module = types.ModuleType(name)
    module.__file__ = f"{commit}:{path}"
    exec(compile(from_git(commit, path), module.__file__, "exec"), module.__dict__)
    return module


def function_from_git(commit: str, path: str, name: str, namespace: dict) -> Callable:
    """The function ``name`` of ``path`` as it was at ``commit``, defined alone in a copy of
    ``namespace`` (the names its body uses), without running the rest of that file."""
    import ast

    tree = ast.parse(from_git(commit, path))
    found = [node for node in tree.body if isinstance(node, ast.FunctionDef) and node.name == name]
    if not found:
        raise RuntimeError(f"{path} at commit {commit} defines no function {name!r}")
    scope = dict(namespace)
    exec(compile(ast.Module(body=found, type_ignores=[]), f"{commit}:{path}", "exec"), scope)
    return scope[name]

