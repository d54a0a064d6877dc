"""The machine's resources an estimator plans with: memory and worker threads.

* :func:`memory_budget`: the memory an exact fit may plan to use, one budget for every
  estimator of the package; :func:`check_dense_memory` refuses beyond it.
* :func:`parallel_workers`: the threads of a search with ``n_jobs`` workers, BLAS and OpenMP
  limited per worker so that the workers do not oversubscribe the cores (the selector's search
  and the command line's).

Closed-form fits (an ``n x n`` kernel, complete trees, a Newton system) know their memory
before they allocate it, and refuse up front what exceeds :func:`memory_budget` with an error
that names the bytes and the way out, instead of letting NumPy die with ``MemoryError`` or the
machine swap (:func:`check_dense_memory` for a fit of float64 matrices). Every layer plans
with these, so they live at the bottom and import nothing of the package.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["MEMORY_BUDGET", "check_dense_memory", "memory_budget", "memory_budget_source",
           "parallel_workers"]

#: Memory (bytes) an exact fit may plan to use; ``None`` = the machine's physical memory
#: (``os.sysconf``). Set it to state a smaller budget (a shared machine, a container limit).
MEMORY_BUDGET: int | None = None


def memory_budget() -> int:
    """:data:`MEMORY_BUDGET`, or the physical memory when it is ``None`` (``os.sysconf``; 16 GiB
    assumed where the platform does not report it)."""
    if MEMORY_BUDGET is not None:
        return int(MEMORY_BUDGET)
    try:
        return int(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))
    except (AttributeError, ValueError, OSError):  # pragma: no cover - non-POSIX
        return 16 << 30


def memory_budget_source() -> str:
    """Where :func:`memory_budget` comes from, as an error message names it: the setting
    (``shiftlearn._resources.MEMORY_BUDGET``) or the physical memory."""
    if MEMORY_BUDGET is not None:
        return f"{__name__}.MEMORY_BUDGET"
    return "the physical memory"


def check_dense_memory(n_rows: int, n_cols: int, n_matrices: float, owner: str,
                       alternative: str, *, advice: str | None = None) -> None:
    """Refuse up front a computation that needs ``n_matrices`` float64 ``n_rows x n_cols``
    matrices at once when they exceed :func:`memory_budget`.

    Numpy would otherwise ask for the memory and die with ``MemoryError`` (or the machine would
    swap); the ``ValueError`` names the GiB needed and available and the way out
    (``advice`` replaces the default sentence, which points to ``alternative``).

    Examples
    --------
    >>> try:
    ...     check_dense_memory(10**6, 10**6, 1.2, "TCA.fit on 1000000 rows", "RFTCA")
    ... except ValueError as exc:
    ...     print(str(exc)[:60])
    TCA.fit on 1000000 rows needs about 8940.7 GiB of memory (1.
    """
    need = float(n_matrices) * n_rows * n_cols * 8
    budget = memory_budget()
    if need > budget:
        src = memory_budget_source()
        advice = advice or (f"Use {alternative}, whose memory does not depend on the number of "
                            "rows, or fit on a subsample of the rows.")
        raise ValueError(
            f"{owner} needs about {need / 2**30:.1f} GiB of memory "
            f"({n_matrices:g} float64 {n_rows} x {n_cols} matrices) but {budget / 2**30:.1f} "
            f"GiB are available ({src}). {advice}")


def _limit_threads(limits: dict) -> None:
    """Worker thread initialiser: OpenMP's thread count is per thread (a new thread starts at
    the library's default, every core), so each worker sets its own."""
    from threadpoolctl import threadpool_limits

    threadpool_limits(limits=limits["openmp"], user_api="openmp")


def _threads_backend(each: int):
    """joblib's threading backend whose workers use at most ``each`` OpenMP threads (its
    thread pool, built lazily by ``_get_pool``, gets an initialiser; a joblib without that
    hook gives the plain threading backend: the same results, OpenMP unlimited)."""
    from multiprocessing.pool import ThreadPool

    try:
        from joblib._parallel_backends import ThreadingBackend
    except ImportError:                               # pragma: no cover - another joblib
        return "threading"
    if not hasattr(ThreadingBackend, "_get_pool"):    # pragma: no cover - another joblib
        return "threading"

    class LimitedThreadingBackend(ThreadingBackend):
        def _get_pool(self):
            if self._pool is None:
                self._pool = ThreadPool(self._n_jobs, initializer=_limit_threads,
                                        initargs=({"openmp": each},))
            return self._pool

    return LimitedThreadingBackend()


@contextmanager
def parallel_workers(n_jobs) -> Iterator[None]:
    """Where ``n_jobs`` workers of a search will run: nothing changes for one job; for more,
    threads unless the caller chose a process backend (``joblib.parallel_config``), with the
    BLAS and OpenMP libraries limited to ``cpu_count // n_jobs`` threads (BLAS never raised)
    so that the workers do not oversubscribe the cores. A process backend limits its workers'
    threads itself (loky: ``inner_max_num_threads``)."""
    from joblib import cpu_count, effective_n_jobs, parallel_config
    from joblib.parallel import get_active_backend

    n = effective_n_jobs(n_jobs)
    if n <= 1:
        yield
        return
    with parallel_config(prefer="threads"):
        backend, _ = get_active_backend()
    if not getattr(backend, "uses_threads", False):
        yield
        return
    from threadpoolctl import threadpool_info, threadpool_limits

    each = max(1, cpu_count() // n)
    blas = {lib["prefix"]: min(lib["num_threads"], each) for lib in threadpool_info()
            if lib["user_api"] == "blas"}
    with parallel_config(backend=_threads_backend(each)), threadpool_limits(limits=blas):
        yield
