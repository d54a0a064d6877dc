"""The memory an exact fit may plan to use: one budget for every estimator of the package.

Closed-form fits (an ``n x n`` kernel, complete trees, a Newton system) know their memory
before they allocate it, and refuse up front what exceeds :func:`memory_budget` with an error
that names the bytes and the way out, instead of letting NumPy die with ``MemoryError`` or the
machine swap (:func:`check_dense_memory` for a fit of float64 matrices). Every method family
checks against this budget, so it lives at the bottom and imports nothing of the package.
"""

from __future__ import annotations

import os

__all__ = ["MEMORY_BUDGET", "check_dense_memory", "memory_budget", "memory_budget_source"]

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
