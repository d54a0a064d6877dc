import os
from pathlib import Path

import pytest

# the data-home default (../shared/data beside the clone) is set by the root conftest.py

# under pytest-xdist every worker gets its share of the cores: joblib counts
# cpu_count // workers, so n_jobs=-1 (the command line's default --n-jobs) and the BLAS/OpenMP
# limits of parallel searches do not oversubscribe the machine
if os.environ.get("PYTEST_XDIST_WORKER_COUNT", "").isdigit():
    os.environ.setdefault("LOKY_MAX_CPU_COUNT", str(max(
        1, (os.cpu_count() or 1) // int(os.environ["PYTEST_XDIST_WORKER_COUNT"]))))


def _fresh_dask_thread_pool() -> None:
    """After a fork (mutation testing forks a child per mutant from a process that already
    ran the tests), Dask's threaded scheduler would hand work to the parent's thread pool,
    whose threads the child does not have, and wait forever: give the child a fresh pool."""
    import sys

    threaded = sys.modules.get("dask.threaded")
    if threaded is not None:
        import threading
        from collections import defaultdict

        threaded.default_pool = None
        threaded.pools = defaultdict(dict)
        threaded.pools_lock = threading.Lock()


os.register_at_fork(after_in_child=_fresh_dask_thread_pool)


def _have_data(folder: str) -> bool:
    return (Path(os.environ["SHIFTLEARN_DATA"]) / folder).is_dir()


@pytest.fixture(scope="session")
def data_home() -> str:
    home = os.environ["SHIFTLEARN_DATA"]
    if not Path(home).is_dir():
        pytest.skip(f"shared data not found at {home}")
    return home
