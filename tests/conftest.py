import os
from pathlib import Path

import pytest

# the data-home default (../shared/data beside the clone) is set by the root conftest.py


def _have_data(folder: str) -> bool:
    return (Path(os.environ["SHIFTLEARN_DATA"]) / folder).is_dir()


@pytest.fixture(scope="session")
def data_home() -> str:
    home = os.environ["SHIFTLEARN_DATA"]
    if not Path(home).is_dir():
        pytest.skip(f"shared data not found at {home}")
    return home
