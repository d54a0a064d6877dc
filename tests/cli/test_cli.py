"""The ``shiftlearn`` command line: its shape, ``datasets``, ``demo subspace`` and ``mmd``
(called in-process through ``cli.main([...])``)."""

import argparse
import importlib
import re
import shutil
import subprocess
import sys
import types
from pathlib import Path

import numpy as np
import pytest

from shiftlearn import cli
from shiftlearn.cli.demo import subspace


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
    """A module ``fake_shiftlearn_ext`` with adapters, for the demo's method table."""
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

    mod.Center, mod.Broken = Center, Broken
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
    assert cli.main(["demo", "subspace", "--methods", "raw"]) == 0
    out = capsys.readouterr().out
    rows = _rows(out)
    assert len([k for k in rows if "->" in k]) == 12
    assert rows["mean"] == ["31.37"]
    assert rows["C -> A"] == ["23.70"]
    assert "raw 1NN" in out


def test_demo_default_methods_on_one_task(data_home, capsys):
    # whatever adapters exist now: the table must come out and nothing may fail
    code = cli.main(["demo", "subspace", "--tasks", "D:W"])
    out = capsys.readouterr().out
    assert code == 0, out
    rows = _rows(out)
    assert rows["D -> W"][0] == "63.39"  # raw 1NN
    assert all(float(v) > 0 for v in rows["mean"])


def test_demo_tuned_is_the_source_cv_protocol(data_home, capsys):
    """--tuned reports the target accuracy of 5-fold source CV over DEFAULT_GRIDS (source
    labels only), the same number a plain GridSearchCV (no shared memory) gives."""
    from sklearn.model_selection import GridSearchCV
    from sklearn.neighbors import KNeighborsClassifier

    from shiftlearn.adaptation import TCA
    from shiftlearn.compose import DomainAdaptationClassifier
    from shiftlearn.datasets import load_office_caltech
    from shiftlearn.model_selection import DEFAULT_GRIDS, SourceKFold

    code = cli.main(["demo", "subspace", "--tasks", "D:W", "--methods", "raw,TCA", "--tuned"])
    out = capsys.readouterr().out
    assert code == 0, out
    assert "5-fold CV on the SOURCE labels" in out
    X, y, sd, y_true = load_office_caltech().pack("dslr", "webcam", return_masked_labels=True)
    grid = {f"adapter__{k}": v for k, v in DEFAULT_GRIDS["TCA"].items()}
    search = GridSearchCV(DomainAdaptationClassifier(TCA(), KNeighborsClassifier(1)), grid,
                          cv=SourceKFold(5)).fit(X, y, groups=sd, sample_domain=sd)
    expected = 100 * np.mean(search.predict(X[sd < 0]) == y_true[sd < 0])
    assert _rows(out)["D -> W"] == ["63.39", f"{expected:.2f}"]


def test_demo_plugs_in_methods_and_reports_failures(data_home, fake_module, monkeypatch,
                                                    capsys):
    monkeypatch.setattr(subspace, "DEMO_METHODS", {
        "Center": ("fake_shiftlearn_ext:Center", {"shift": 1.0, "unknown": 5}, True),
        "Missing": ("fake_shiftlearn_ext:NoSuchClass", {}, True),
        "Broken": ("fake_shiftlearn_ext:Broken", {}, False),
    })
    assert cli.main(["demo", "subspace", "--tasks", "A:W,W:D"]) == 0
    out = capsys.readouterr().out
    assert "Missing: not available" in out
    rows = _rows(out)
    assert list(rows) == ["A -> W", "W -> D", "mean", "time (s)"]
    raw, centered = (float(v) for v in rows["A -> W"])
    assert raw == 29.83 and 0 < centered <= 100
    assert cli.main(["demo", "subspace", "--tasks", "A:W", "--methods", "raw,Broken"]) == 1
    out = capsys.readouterr().out
    assert "error" in out and "FAILED: Broken on A -> W: RuntimeError: boom" in out


def test_demo_other_dataset_and_bad_input(data_home, capsys):
    assert cli.main(["demo", "subspace", "--dataset", "mnist_usps", "--methods", "raw"]) == 0
    rows = _rows(capsys.readouterr().out)
    assert rows["MNIST -> USPS"] == ["65.94"] and rows["USPS -> MNIST"] == ["44.70"]
    assert cli.main(["demo", "subspace", "--tasks", "A:Q"]) == 2
    assert "Unknown domain 'q'" in capsys.readouterr().err
    assert cli.main(["demo", "subspace", "--tasks", "A-W"]) == 2
    assert "source:target" in capsys.readouterr().err
    assert cli.main(["demo", "subspace", "--methods", "raw,XYZ"]) == 2
    assert "Unknown method(s) ['XYZ']" in capsys.readouterr().err


def test_demo_quick_tasks_are_the_smallest(data_home):
    from shiftlearn.datasets import load_office_caltech

    tasks = subspace.parse_tasks("quick", load_office_caltech(data_home))
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


# -------------------------------------------------------------------------------- shape ------
def _subparsers(parser):
    return next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))


def test_tools_at_top_and_demos_under_demo(capsys):
    p = cli.build_parser()
    top = _subparsers(p).choices
    assert list(top) == ["datasets", "shift", "adapt", "generalize", "predict", "mmd",
                         "federated", "demo"]
    assert list(_subparsers(top["demo"]).choices) == ["subspace", "boosting", "marginal",
                                                      "splits"]
    with pytest.raises(SystemExit) as exc:
        cli.main(["--help"])
    assert exc.value.code == 0
    out = capsys.readouterr().out
    assert all(c in out for c in ("datasets", "adapt", "mmd", "federated", "demo"))
    with pytest.raises(SystemExit) as exc:
        cli.main([])
    assert exc.value.code == 2
    with pytest.raises(SystemExit) as exc:  # a demo needs its name
        cli.main(["demo"])
    assert exc.value.code == 2
    assert "subspace" in capsys.readouterr().err


@pytest.mark.parametrize("name", ["datasets", "adapt", "generalize", "mmd", "federated",
                                  "demo.subspace",
                                  "demo.boosting", "demo.marginal", "demo.splits"])
def test_every_command_module_has_add_parser_and_run(name, capsys):
    module = importlib.import_module(f"shiftlearn.cli.{name}")
    assert callable(module.add_parser) and callable(module.run)
    # help texts are written for people: no docstring markup or doctest leaks
    with pytest.raises(SystemExit) as exc:
        cli.main([*name.split("."), "--help"])
    assert exc.value.code == 0
    text = capsys.readouterr().out
    assert "usage: shiftlearn " + name.replace(".", " ") in text
    for leak in ("``", ">>>", "Examples", "Parameters", "----", ":func:", "argv"):
        assert leak not in text, (name, leak)
    assert "--data-home" in text and "--quiet" in text and "--seed" in text


def test_help_imports_no_estimator():
    # heavy imports happen inside run(): --help and --version must not load the estimators
    code = ("import sys; from shiftlearn import cli; cli.build_parser(); "
            "print(sorted(m for m in sys.modules if m.startswith(('sklearn', "
            "'shiftlearn.adaptation', 'shiftlearn.federated', 'flwr'))))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    assert out.strip() == "[]"


def test_common_options_before_or_after_the_command(monkeypatch):
    seen = []
    monkeypatch.setattr(importlib.import_module("shiftlearn.cli.datasets"), "run",
                        lambda args: seen.append((args.data_home, args.seed, args.quiet)) or 0)
    assert cli.main(["datasets"]) == 0
    assert cli.main(["--data-home", "A", "--seed", "3", "datasets"]) == 0
    assert cli.main(["datasets", "--data-home", "B", "-q", "--seed", "4"]) == 0
    assert cli.main(["--data-home", "A", "datasets", "--seed", "5"]) == 0  # kept across levels
    assert seen == [(None, 0, False), ("A", 3, False), ("B", 4, True), ("A", 5, False)]


def test_version(capsys):
    import shiftlearn

    with pytest.raises(SystemExit) as exc:
        cli.main(["--version"])
    assert exc.value.code == 0
    assert capsys.readouterr().out.strip() == f"shiftlearn {shiftlearn.__version__}"


def test_module_entry_point_exit_status(tmp_path):
    # sys.exit(main()) carries the exit code out of the process (1: files missing)
    bad = subprocess.run([sys.executable, "-m", "shiftlearn.cli", "--data-home", str(tmp_path),
                          "datasets"], capture_output=True, text=True)
    assert bad.returncode == 1 and "Missing data file" in bad.stdout


def _entry_point() -> str:
    exe = shutil.which("shiftlearn", path=str(Path(sys.executable).parent))
    if exe is None:
        pytest.skip("the shiftlearn entry point is not installed beside this Python")
    return exe


def test_installed_entry_point_version_and_exit_status(tmp_path):
    import shiftlearn

    out = subprocess.run([_entry_point(), "--version"], capture_output=True, text=True)
    assert out.returncode == 0 and out.stdout.strip() == f"shiftlearn {shiftlearn.__version__}"
    bad = subprocess.run([_entry_point(), "datasets", "--data-home", str(tmp_path)],
                         capture_output=True, text=True)
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


@pytest.mark.parametrize("name", ["shiftlearn.cli", "shiftlearn.cli._common",
                                  "shiftlearn.model_selection._grids"])
def test_doctests(name):
    import doctest

    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS)
    assert result.failed == 0


def test_default_grids_and_fit_source_cv_are_exported():
    from sklearn.model_selection import GridSearchCV

    from shiftlearn.adaptation import SCA
    from shiftlearn.datasets import make_sca_toy
    from shiftlearn.model_selection import ADAPTERS, DEFAULT_GRIDS, fit_source_cv

    assert set(DEFAULT_GRIDS) == set(ADAPTERS)      # every adapter the selector knows
    X, y, sd = make_sca_toy(n_per_cluster=10, random_state=0)
    grid = dict(DEFAULT_GRIDS["SCA"], n_components=[1, 2])
    est = fit_source_cv(SCA(), grid, X, y, sd, cv=3)
    assert isinstance(est, GridSearchCV) and est.cv.n_splits == 3
    assert len(est.param_grid) == 4 and est.param_grid["adapter__whiten"] == [False]
    assert len(est.estimator.memory) == 0              # the shared memory is emptied
