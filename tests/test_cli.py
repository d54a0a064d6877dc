"""The ``shiftlearn`` command line (called through ``cli.main([...])``)."""

import os
import re
import subprocess
import sys
import types

import numpy as np
import pytest

from shiftlearn import cli


def _rows(out: str) -> dict[str, list[str]]:
    """Table rows of the demo: first column (task) -> the other cells."""
    rows = {}
    for line in out.splitlines():
        m = re.match(r"^(\S+ -> \S+|mean|time \(s\))\s{2,}(.*)$", line)
        if m:
            rows[m.group(1)] = m.group(2).split()
    return rows


@pytest.fixture
def fake_module(monkeypatch):
    """A module ``fake_shiftlearn_ext`` with adapters and a subcommand, for the registries."""
    mod = types.ModuleType("fake_shiftlearn_ext")

    class Center:
        def __init__(self, shift=0.0):
            self.shift = shift

        def get_params(self):
            return {"shift": self.shift}

        def fit_transform(self, X, y, sample_domain):
            Z = X.copy()
            for d in np.unique(sample_domain):  # per-domain centring: a toy "adapter"
                Z[sample_domain == d] -= Z[sample_domain == d].mean(axis=0)
            return Z + self.shift

    class Broken(Center):
        def fit_transform(self, X, y, sample_domain):
            raise RuntimeError("boom")

    calls = []

    def main(argv):
        calls.append((list(argv), os.environ.get("SHIFTLEARN_DATA")))
        return 3

    mod.Center, mod.Broken, mod.main, mod.calls = Center, Broken, main, calls
    monkeypatch.setitem(sys.modules, "fake_shiftlearn_ext", mod)
    return mod


# ------------------------------------------------------------------------------- datasets ------
def test_datasets_verifies_and_exits_0(data_home, capsys):
    assert cli.main(["datasets"]) == 0
    out = capsys.readouterr().out
    assert out.count("ok (sha256 verified)") == 8
    assert "amazon 958, caltech 1123, dslr 157, webcam 295" in out
    assert "42 domains" in out and "FAILED" not in out


def test_datasets_reports_missing_files(tmp_path, capsys):
    assert cli.main(["--data-home", str(tmp_path), "datasets"]) == 1
    out = capsys.readouterr().out
    assert out.count("FAILED: Missing data file") == 8
    assert str(tmp_path) in out and "--download" in out
    assert list(tmp_path.iterdir()) == []  # nothing downloaded without --download


# ----------------------------------------------------------------------------------- demo ------
def test_demo_raw_prints_the_literature_baseline(data_home, capsys):
    assert cli.main(["demo", "--methods", "raw"]) == 0
    out = capsys.readouterr().out
    rows = _rows(out)
    assert len([k for k in rows if "->" in k]) == 12
    assert rows["mean"] == ["31.37"]
    assert rows["C -> A"] == ["23.70"]
    assert "raw 1NN" in out


def test_demo_default_methods_on_one_task(data_home, capsys):
    # whatever adapters exist now: the table must come out and nothing may fail
    code = cli.main(["demo", "--tasks", "D:W"])
    out = capsys.readouterr().out
    assert code == 0, out
    rows = _rows(out)
    assert rows["D -> W"][0] == "63.39"  # raw 1NN
    assert all(float(v) > 0 for v in rows["mean"])


def test_demo_tuned_is_the_source_cv_protocol(data_home, capsys):
    """--tuned reports the target accuracy of SourceCVSearch over DEMO_GRIDS (source labels
    only), the same number a direct search gives."""
    from sklearn.neighbors import KNeighborsClassifier

    from shiftlearn.adaptation import TCA, DomainAdaptationClassifier
    from shiftlearn.datasets import load_office_caltech
    from shiftlearn.model_selection import SourceCVSearch

    code = cli.main(["demo", "--tasks", "D:W", "--methods", "raw,TCA", "--tuned"])
    out = capsys.readouterr().out
    assert code == 0, out
    assert "5-fold CV on the SOURCE labels" in out
    X, y, sd, y_true = load_office_caltech().pack("dslr", "webcam", return_masked_labels=True)
    grid = {f"adapter__{k}": v for k, v in cli.DEMO_GRIDS["TCA"].items()}
    search = SourceCVSearch(DomainAdaptationClassifier(TCA(), KNeighborsClassifier(1)), grid,
                            cv=5).fit(X, y, sd)
    expected = 100 * np.mean(search.predict(X[sd < 0]) == y_true[sd < 0])
    assert _rows(out)["D -> W"] == ["63.39", f"{expected:.2f}"]


def test_demo_plugs_in_methods_and_reports_failures(data_home, fake_module, monkeypatch,
                                                    capsys):
    monkeypatch.setattr(cli, "DEMO_METHODS", {
        "Center": ("fake_shiftlearn_ext:Center", {"shift": 1.0, "unknown": 5}, True),
        "Missing": ("fake_shiftlearn_ext:NoSuchClass", {}, True),
        "Broken": ("fake_shiftlearn_ext:Broken", {}, False),
    })
    assert cli.main(["demo", "--tasks", "A:W,W:D"]) == 0
    out = capsys.readouterr().out
    assert "Missing: not available" in out
    rows = _rows(out)
    assert list(rows) == ["A -> W", "W -> D", "mean", "time (s)"]
    raw, centered = (float(v) for v in rows["A -> W"])
    assert raw == 29.83 and 0 < centered <= 100
    assert cli.main(["demo", "--tasks", "A:W", "--methods", "raw,Broken"]) == 1
    out = capsys.readouterr().out
    assert "error" in out and "FAILED: Broken on A -> W: RuntimeError: boom" in out


def test_demo_other_dataset_and_bad_input(data_home, capsys):
    assert cli.main(["demo", "--dataset", "mnist_usps", "--methods", "raw"]) == 0
    rows = _rows(capsys.readouterr().out)
    assert rows["MNIST -> USPS"] == ["65.94"] and rows["USPS -> MNIST"] == ["44.70"]
    assert cli.main(["demo", "--tasks", "A:Q"]) == 2
    assert "Unknown domain 'q'" in capsys.readouterr().err
    assert cli.main(["demo", "--tasks", "A-W"]) == 2
    assert "source:target" in capsys.readouterr().err
    assert cli.main(["demo", "--methods", "raw,XYZ"]) == 2
    assert "Unknown method(s) ['XYZ']" in capsys.readouterr().err


def test_demo_quick_tasks_are_the_smallest(data_home):
    from shiftlearn.datasets import load_office_caltech

    tasks = cli._parse_tasks("quick", load_office_caltech(data_home))
    assert sorted(tasks) == sorted([("dslr", "webcam"), ("webcam", "dslr"),
                                    ("amazon", "dslr"), ("dslr", "amazon")])


# ------------------------------------------------------------------------------------ mmd ------
def test_mmd_report_two_domains(data_home, capsys):
    assert cli.main(["mmd", "office_caltech", "dslr", "webcam", "--permutations", "99"]) == 0
    out = capsys.readouterr().out
    line = next(x for x in out.splitlines() if x.split()[:2] == ["dslr", "webcam"])
    cells = line.split()
    assert cells[2:4] == ["157", "295"]
    assert float(cells[8]) == pytest.approx(0.01) and cells[9] == "yes"  # p at its floor 1/100


def test_mmd_report_options_and_errors(data_home, capsys):
    assert cli.main(["mmd", "msrc_voc", "--max-samples", "60", "--permutations", "20",
                     "--preprocessing", "none", "--bandwidth", "0.5"]) == 0
    out = capsys.readouterr().out
    assert re.search(r"msrc\s+voc\s+60\s+60\s+0\.5\s", out)
    assert cli.main(["mmd", "office_caltech", "amazon"]) == 2
    assert "Name two" in capsys.readouterr().err
    assert cli.main(["mmd", "parkinsons"]) == 2
    assert "861 domain pairs" in capsys.readouterr().err
    assert cli.main(["mmd", "office_caltech", "amazon", "imagenet"]) == 2
    assert "Unknown domain 'imagenet'" in capsys.readouterr().err


# ------------------------------------------------------------------------------- registry ------
def test_registered_subcommand_gets_its_argv(fake_module, monkeypatch, tmp_path, capsys):
    monkeypatch.setattr(cli, "COMMANDS", {})
    monkeypatch.setenv("SHIFTLEARN_DATA", "unchanged")
    cli.register_command("hello", "fake_shiftlearn_ext:main", "say hello")
    assert "say hello" in cli.build_parser().format_help()
    assert cli.main(["hello", "--flag", "x", "-v"]) == 3
    assert cli.main(["--data-home", str(tmp_path), "hello", "--help"]) == 3
    assert fake_module.calls == [(["--flag", "x", "-v"], "unchanged"), (["--help"], str(tmp_path))]
    cli.register_command("broken", "no_such_module_xyz:main")
    assert cli.main(["broken"]) == 2
    assert "cannot load no_such_module_xyz:main" in capsys.readouterr().err
    with pytest.raises(ValueError, match="built-in"):
        cli.register_command("demo", "fake_shiftlearn_ext:main")
    with pytest.raises(ValueError, match="module:function"):
        cli.register_command("x", "fake_shiftlearn_ext.main")


def test_help_and_missing_command(capsys):
    with pytest.raises(SystemExit) as exc:
        cli.main(["--help"])
    assert exc.value.code == 0
    out = capsys.readouterr().out
    assert all(c in out for c in ("datasets", "demo", "mmd"))
    with pytest.raises(SystemExit) as exc:
        cli.main([])
    assert exc.value.code == 2


def test_module_entry_point_exit_status(tmp_path):
    # sys.exit(main()) carries the exit code out of the process (1: files missing)
    bad = subprocess.run([sys.executable, "-m", "shiftlearn.cli", "--data-home", str(tmp_path),
                          "datasets"], capture_output=True, text=True)
    assert bad.returncode == 1 and "Missing data file" in bad.stdout


def test_datasets_download_flag(tmp_path, monkeypatch, capsys):
    # `datasets --download` fetches a missing file (from a local server, never the internet)
    import hashlib
    import http.server
    import threading
    from functools import partial

    import shiftlearn.datasets as datasets
    from shiftlearn.datasets import DomainDataset, FileSpec, fetch_file

    for var in ("http_proxy", "HTTP_PROXY", "all_proxy", "ALL_PROXY"):
        monkeypatch.delenv(var, raising=False)
    root = tmp_path / "served"
    root.mkdir()
    data = b"1,2\n3,4\n"
    (root / "toy.csv").write_bytes(data)

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args):
            pass

    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0),
                                            partial(Quiet, directory=str(root)))
    threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05},
                     daemon=True).start()
    try:
        spec = FileSpec("toy", "toy.csv", hashlib.sha256(data).hexdigest(),
                        f"http://127.0.0.1:{httpd.server_address[1]}/toy.csv")

        def load_toy(data_home=None, download=True):
            X = np.loadtxt(fetch_file(spec, data_home, download=download), delimiter=",")
            return DomainDataset("toy", {"a": (X, np.array([0, 1]))}, description="toy set")

        monkeypatch.setattr(datasets, "FILES", {"toy": [spec]})
        monkeypatch.setattr(datasets, "LOADERS", {"toy": load_toy})
        home = tmp_path / "home"
        assert cli.main(["datasets", "--data-home", str(home)]) == 1
        assert "Missing data file toy.csv" in capsys.readouterr().out
        assert cli.main(["datasets", "--data-home", str(home), "--download"]) == 0
        out = capsys.readouterr().out
        assert "toy/toy.csv" in out and "ok (sha256 verified)" in out and "a 2" in out
        assert (home / "toy" / "toy.csv").read_bytes() == data
    finally:
        httpd.shutdown()
        httpd.server_close()
