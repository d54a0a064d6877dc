"""The memory an exact fit may plan to use: one budget for every estimator of the package.

Closed-form fits (an ``n x n`` kernel, complete trees, a Newton system) know their memory
before they allocate it, and refuse up front what exceeds :func:`memory_budget` with an error
that names the bytes and the way out, instead of letting NumPy die with ``MemoryError`` or the
machine swap. Every method family checks against this budget, so it lives at the bottom and
imports nothing of the package.
"""

from __future__ import annotations

import os

__all__ = ["MEMORY_BUDGET", "memory_budget", "memory_budget_source"]

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
