"""The download path, against a small HTTP server on 127.0.0.1 (never the internet)."""

import hashlib
import http.server
import threading
from functools import partial
from pathlib import Path

import numpy as np
import pytest

from shiftlearn.datasets import FILES, DataFileError, FileSpec, fetch_file, sha256_of

pytestmark = pytest.mark.network


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):  # keep the test output clean
        pass


@pytest.fixture
def server(tmp_path, monkeypatch):
    """``(root, base_url)``: files put into ``root`` are served at ``base_url``."""
    for var in ("http_proxy", "HTTP_PROXY", "https_proxy", "HTTPS_PROXY", "all_proxy",
                "ALL_PROXY"):
        monkeypatch.delenv(var, raising=False)
    root = tmp_path / "served"
    root.mkdir()
    httpd = http.server.ThreadingHTTPServer(
        ("127.0.0.1", 0), partial(_QuietHandler, directory=str(root)))
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05},
                              daemon=True)
    thread.start()
    try:
        yield root, f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(5)


def _spec_for(data: bytes, **kw) -> FileSpec:
    return FileSpec("made_up", "table.csv", hashlib.sha256(data).hexdigest(),
                    "https://example.invalid/never-used", **kw)


def _leftovers(folder: Path) -> list[str]:
    return [p.name for p in folder.glob(".part-*")] if folder.exists() else []


def test_download_made_up_file_into_empty_home(server, tmp_path):
    root, base = server
    data = b"a,b\n1,2\n3,4\n"
    (root / "table.csv").write_bytes(data)
    spec = _spec_for(data)
    home = tmp_path / "home"
    path = fetch_file(spec, home, url=f"{base}/table.csv")
    assert path == home / "made_up" / "table.csv"
    assert path.read_bytes() == data
    assert _leftovers(path.parent) == []
    # a second call uses the verified local copy (server gone -> no download attempted)
    (root / "table.csv").unlink()
    assert fetch_file(spec, home, url=f"{base}/table.csv") == path


def test_download_real_data_file(server, tmp_path, data_home):
    root, base = server
    spec = FILES["office_caltech"][2]  # dslr, 18 kB
    (root / spec.filename).write_bytes((Path(data_home) / spec.relpath()).read_bytes())
    home = tmp_path / "home"
    path = fetch_file(spec, home, url=f"{base}/{spec.filename}")
    assert path == home / spec.folder / spec.filename
    assert sha256_of(path) == spec.sha256


def test_wrong_bytes_are_rejected_and_not_saved(server, tmp_path):
    root, base = server
    spec = _spec_for(b"the right bytes\n")
    (root / "table.csv").write_bytes(b"the wrong bytes\n")
    home = tmp_path / "home"
    with pytest.raises(DataFileError) as exc:
        fetch_file(spec, home, url=f"{base}/table.csv")
    msg = str(exc.value)
    assert spec.sha256 in msg and "not saved" in msg and hashlib.sha256(
        b"the wrong bytes\n").hexdigest() in msg
    assert not (home / "made_up" / "table.csv").exists()
    assert _leftovers(home / "made_up") == []


def test_http_error_is_a_clear_data_file_error(server, tmp_path):
    _, base = server
    spec = _spec_for(b"x")
    with pytest.raises(DataFileError, match=r"Could not download made_up/table.csv") as exc:
        fetch_file(spec, tmp_path / "home", url=f"{base}/absent.csv")
    assert spec.sha256 in str(exc.value)


def test_parkinsons_postprocess_keeps_first_table(server, tmp_path, data_home):
    root, base = server
    spec = FILES["parkinsons"][0]
    original = (Path(data_home) / spec.relpath()).read_bytes()
    assert original.count(b"\n") == 5876
    (root / spec.filename).write_bytes(original + original)  # the pinned origin's doubled table
    path = fetch_file(spec, tmp_path / "home", url=f"{base}/{spec.filename}")
    assert path.read_bytes() == original
    # without the postprocess the doubled table would fail the checksum
    raw_spec = FileSpec(spec.folder, spec.filename, spec.sha256, spec.url)
    with pytest.raises(DataFileError, match="not saved"):
        fetch_file(raw_spec, tmp_path / "other", url=f"{base}/{spec.filename}")


def test_loader_downloads_missing_files(server, tmp_path, data_home, monkeypatch):
    # the whole loader path: empty data home, origin redirected to the local server
    import shiftlearn.datasets._loaders as loaders

    root, base = server
    spec = FILES["msrc_voc"][0]
    (root / spec.filename).write_bytes((Path(data_home) / spec.relpath()).read_bytes())
    local = FileSpec(spec.folder, spec.filename, spec.sha256, f"{base}/{spec.filename}")
    monkeypatch.setitem(loaders.FILES, "msrc_voc", [local])
    home = tmp_path / "home"
    ds = loaders.load_msrc_voc(home)
    assert (home / spec.relpath()).is_file()
    assert ds.get("msrc")[0].shape == (1269, 240)
    with pytest.raises(DataFileError, match="Missing data file"):
        loaders.load_msrc_voc(tmp_path / "elsewhere", download=False)
    assert np.isfinite(ds.get("voc")[0]).all()
