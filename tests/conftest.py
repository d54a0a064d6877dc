import os
from pathlib import Path

import pytest

_DEFAULT = Path(__file__).resolve().parents[1].parent / "shared" / "data"
os.environ.setdefault("SHIFTLEARN_DATA", str(_DEFAULT))


def _have_data(folder: str) -> bool:
    return (Path(os.environ["SHIFTLEARN_DATA"]) / folder).is_dir()


@pytest.fixture(scope="session")
def data_home() -> str:
    home = os.environ["SHIFTLEARN_DATA"]
    if not Path(home).is_dir():
        pytest.skip(f"shared data not found at {home}")
    return home
