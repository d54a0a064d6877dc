"""Model files of ``adapt --save`` and ``predict``: a skops archive with a header and a hash.

The file is a skops archive (a zip: ``skops.io.dump`` of ``{"model": ..., "reference": ...}``)
with one more member, ``shiftlearn.json`` (the header: library version, feature names, classes,
training command, ...), and a zip comment ``shiftlearn-sha256:<hex>`` holding the SHA-256 of
every byte of the file before that hex string. So any changed byte is detected: in the comment's
hex (the digest no longer matches), anywhere else (the bytes hashed change) or in the prefix of
the comment (not recognised as a model file). This is integrity, not authenticity: whoever can
write the file can also write a matching digest.

Loading reads the header first (no object is built from a file of another library version or
with other columns) and then the payload with ``skops.io.loads``, trusting only the types that
:func:`trusted_types` accepts: classes (never functions) defined in shiftlearn, scikit-learn or
numpy. Design notes: ``docs/dev/cli.md``.
"""

from __future__ import annotations

import hashlib
import importlib
import io
import json
import zipfile
from pathlib import Path

__all__ = ["FORMAT", "load_estimator", "load_model", "read_header", "save_model", "skops_io",
           "trusted_types"]

#: the header's ``format`` field (a new layout gets a new number)
FORMAT = "shiftlearn-model/1"
_HEADER = "shiftlearn.json"
_PREFIX = b"shiftlearn-sha256:"
_DIGEST = 64                                    # hex characters of a SHA-256
#: packages whose classes a model file may hold
ALLOWED_PACKAGES = ("shiftlearn", "sklearn", "numpy")


def skops_io():
    """``skops.io``, or the ImportError whose message names the install command."""
    try:
        return importlib.import_module("skops.io")
    except ImportError as exc:
        raise ImportError("model files need skops, which is not installed; install it with: "
                          'pip install "shiftlearn[persist]"', name="shiftlearn") from exc


def _is_allowed_class(name: str) -> bool:
    module, _, attr = name.rpartition(".")
    if module.split(".")[0] not in ALLOWED_PACKAGES or not attr:
        return False
    try:                                     # importing these packages' modules runs no
        obj = getattr(importlib.import_module(module), attr)   # code from the file
    except (ImportError, AttributeError):
        return False
    return isinstance(obj, type)


def trusted_types(data: bytes, what: str) -> list[str]:
    """The types skops does not trust by default in ``data`` (a skops archive), when every one
    of them is a class of :data:`ALLOWED_PACKAGES`; else ``ValueError`` naming the first
    other one (a function, or a type from another package)."""
    sio = skops_io()
    untrusted = sio.get_untrusted_types(data=data)
    bad = [t for t in untrusted if not _is_allowed_class(t)]
    if bad:
        raise ValueError(f"{what}: refusing to load it: it holds {bad[0]!r}"
                         + (f" and {len(bad) - 1} more type(s)" if len(bad) > 1 else "")
                         + ", not a class of shiftlearn, scikit-learn or numpy; only such "
                           "objects are loaded.")
    return list(untrusted)


def load_estimator(path: str | Path):
    """An estimator saved with ``skops.io.dump`` (``--estimator PATH``), safely loaded."""
    data = Path(path).read_bytes()
    try:
        zipfile.ZipFile(io.BytesIO(data)).testzip()
    except zipfile.BadZipFile:
        raise ValueError(f"--estimator {path}: not a skops file (not a zip archive); save the "
                         "estimator with skops.io.dump(estimator, path).") from None
    sio = skops_io()
    return sio.loads(data, trusted=trusted_types(data, f"--estimator {path}"))


def save_model(path: str | Path, header: dict, payload: dict) -> None:
    """Write ``payload`` (skops-serialisable) and ``header`` (JSON) as a model file."""
    sio = skops_io()
    header = {"format": FORMAT, **header}
    buf = io.BytesIO(sio.dumps(payload))
    with zipfile.ZipFile(buf, "a", compression=zipfile.ZIP_DEFLATED) as zf:
        zf.writestr(_HEADER, json.dumps(header, indent=1, sort_keys=True))
        zf.comment = _PREFIX + b"0" * _DIGEST
    data = buf.getvalue()
    head = data[:-_DIGEST]
    Path(path).write_bytes(head + hashlib.sha256(head).hexdigest().encode("ascii"))


def read_header(path: str | Path) -> tuple[dict, bytes]:
    """The header of a model file and the file's bytes, after the integrity check
    (``ValueError`` with a one-line reason: not a model file, or damaged)."""
    data = Path(path).read_bytes()
    tail = data[-(len(_PREFIX) + _DIGEST):]
    if not tail.startswith(_PREFIX):
        raise ValueError(f"{path}: not a shiftlearn model file, or a damaged one (no SHA-256 "
                         "at its end); save one with shiftlearn adapt --save.")
    if hashlib.sha256(data[:-_DIGEST]).hexdigest().encode("ascii") != tail[len(_PREFIX):]:
        raise ValueError(f"{path}: the file is damaged: its SHA-256 does not match the one "
                         "stored in it (a changed or truncated byte); save the model again.")
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as zf:
            header = json.loads(zf.read(_HEADER))
    except (zipfile.BadZipFile, KeyError, json.JSONDecodeError):
        raise ValueError(f"{path}: not a shiftlearn model file (no readable header); save one "
                         "with shiftlearn adapt --save.") from None
    if header.get("format") != FORMAT:
        raise ValueError(f"{path}: model file format {header.get('format')!r}, this version "
                         f"reads {FORMAT!r}; save the model again with this version.")
    return header, data


def load_model(path: str | Path, version: str) -> tuple[dict, dict]:
    """``(header, payload)`` of a model file, refused (``ValueError``, one line) when damaged,
    of another library version than ``version``, or holding untrusted types."""
    header, data = read_header(path)
    if header.get("version") != version:
        raise ValueError(f"{path}: saved by shiftlearn {header.get('version')}, this is "
                         f"{version}; a model is only loaded by the version that saved it: "
                         f"refit it with this version (its command: {header.get('command')}).")
    sio = skops_io()
    payload = sio.loads(data, trusted=trusted_types(data, str(path)))
    return header, payload
