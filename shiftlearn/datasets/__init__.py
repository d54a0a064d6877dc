"""Loaders for the real data sets and seeded synthetic generators from the papers."""

from ._base import DomainDataset
from ._fetch import DATA_HOME_ENV, DataFileError, FileSpec, fetch_file, get_data_home, sha256_of
from ._loaders import (
    FILES,
    l2_normalize_rows,
    load_mnist_usps,
    load_msrc_voc,
    load_office_caltech,
    load_parkinsons,
    sum_normalize_zscore,
)

LOADERS = {
    "office_caltech": load_office_caltech,
    "mnist_usps": load_mnist_usps,
    "msrc_voc": load_msrc_voc,
    "parkinsons": load_parkinsons,
}

__all__ = [
    "DATA_HOME_ENV",
    "FILES",
    "LOADERS",
    "DataFileError",
    "DomainDataset",
    "FileSpec",
    "fetch_file",
    "get_data_home",
    "l2_normalize_rows",
    "load_mnist_usps",
    "load_msrc_voc",
    "load_office_caltech",
    "load_parkinsons",
    "sha256_of",
    "sum_normalize_zscore",
]

from .synthetic import make_monotone_shift, make_rotated_ellipses, make_sca_toy  # noqa: E402

__all__ += ["make_monotone_shift", "make_rotated_ellipses", "make_sca_toy"]

#: names that moved to :mod:`shiftlearn.io` (reading users' tables); the old spelling works,
#: with a FutureWarning, until the next release
_MOVED_TO_IO = ("Table", "TableError", "encode_labels", "read_table")


def __getattr__(name: str):
    if name in _MOVED_TO_IO:
        import warnings

        from .. import io

        warnings.warn(f"shiftlearn.datasets.{name} moved to shiftlearn.io.{name}; the old "
                      "name will be removed in the next release.", FutureWarning, stacklevel=2)
        return getattr(io, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
