"""Data home resolution, checksum verification and download of the real data sets.

Resolution order of the data home: the ``data_home`` argument, then the ``SHIFTLEARN_DATA``
environment variable, then a per-user cache folder (``$XDG_CACHE_HOME/shiftlearn`` or
``~/.cache/shiftlearn``). Each file lives in ``<data_home>/<folder>/<filename>`` and is verified
by SHA-256 before use. A missing file is downloaded from its commit-pinned public origin into the
data home (checksum checked before it is moved into place) unless ``download=False``.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

__all__ = ["DATA_HOME_ENV", "DataFileError", "FileSpec", "fetch_file", "get_data_home",
           "sha256_of"]

#: the environment variable naming the data home (read by every loader, here and in the
#: federated clients)
DATA_HOME_ENV = "SHIFTLEARN_DATA"


class DataFileError(OSError):
    """A data file is missing, corrupt or could not be downloaded."""


@dataclass(frozen=True)
class FileSpec:
    """One file of a data set: where it lives, its checksum and its public origin."""

    folder: str
    filename: str
    sha256: str
    url: str
    # applied to the downloaded bytes before the checksum (e.g. keep the first k lines)
    postprocess: Callable[[bytes], bytes] | None = None

    def relpath(self) -> str:
        return f"{self.folder}/{self.filename}"


def get_data_home(data_home: str | os.PathLike | None = None) -> Path:
    """The data home: argument, then ``$SHIFTLEARN_DATA``, then the user cache folder."""
    if data_home is not None:
        return Path(data_home).expanduser()
    env = os.environ.get(DATA_HOME_ENV)
    if env:
        return Path(env).expanduser()
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(cache) / "shiftlearn"


def sha256_of(path: str | os.PathLike, chunk: int = 1 << 20) -> str:
    """Hex SHA-256 of a file, read in chunks."""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        while block := fh.read(chunk):
            h.update(block)
    return h.hexdigest()


def _download(spec: FileSpec, target: Path, url: str, timeout: float) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    try:
        with urllib.request.urlopen(url, timeout=timeout) as resp:  # noqa: S310 (pinned origin)
            data = resp.read()
    except Exception as exc:  # network errors of every kind
        raise DataFileError(
            f"Could not download {spec.relpath()} from {url}: {exc}. Put the file (sha256 "
            f"{spec.sha256}) into {target.parent} or set {DATA_HOME_ENV} to a folder holding it."
        ) from exc
    if spec.postprocess is not None:
        data = spec.postprocess(data)
    digest = hashlib.sha256(data).hexdigest()
    if digest != spec.sha256:
        raise DataFileError(
            f"Downloaded {spec.relpath()} from {url} has sha256 {digest}, expected "
            f"{spec.sha256}; the file was not saved.")
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=".part-")
    with os.fdopen(fd, "wb") as fh:
        fh.write(data)
    shutil.move(tmp, target)


def fetch_file(
    spec: FileSpec,
    data_home: str | os.PathLike | None = None,
    *,
    download: bool = True,
    url: str | None = None,
    timeout: float = 60.0,
) -> Path:
    """Path to a verified copy of ``spec`` in the data home, downloading it if missing.

    Parameters
    ----------
    spec : FileSpec
    data_home : path or None
        See :func:`get_data_home`.
    download : bool
        Download a missing file from ``url`` (default: the spec's pinned origin).
    url : str or None
        Override of the origin (mirrors, tests).
    timeout : float
        Seconds for the download.

    Raises
    ------
    DataFileError
        Missing (and not downloadable) or corrupt file; the message names the file, the
        expected checksum and the folder searched.
    """
    home = get_data_home(data_home)
    path = home / spec.folder / spec.filename
    if not path.exists():
        if not download:
            raise DataFileError(
                f"Missing data file {spec.filename} (expected sha256 {spec.sha256}); searched "
                f"{path.parent}. Set {DATA_HOME_ENV} or data_home to the folder holding "
                f"{spec.folder}/, or allow download.")
        _download(spec, path, url or spec.url, timeout)
    digest = sha256_of(path)
    if digest != spec.sha256:
        raise DataFileError(
            f"Corrupt data file {path}: sha256 {digest}, expected {spec.sha256}. Delete it to "
            "download it again, or replace it with the original.")
    return path
