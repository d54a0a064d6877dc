"""The one error path of the command line: a person's mistake is one line on stderr and exit
status 2, Ctrl-C is exit 130, a bug keeps its traceback, --debug re-raises."""

import importlib
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from shiftlearn import cli


@pytest.fixture
def failing(monkeypatch):
    """``failing(exc)``: make ``shiftlearn datasets`` raise ``exc``."""
    module = importlib.import_module("shiftlearn.cli.datasets")

    def make(exc):
        def run(args):
            raise exc
        monkeypatch.setattr(module, "run", run)
    return make


def _utf8_error():
    try:
        b"caf\xe9,1\n".decode("utf-8")
    except UnicodeDecodeError as exc:
        return exc


@pytest.mark.parametrize("exc, expected", [
    (ValueError("Bad task 'A-W': write source:target.\nSecond line."),
     "Bad task 'A-W': write source:target. Second line."),
    (TypeError("n_components must be an int, got 'ten'."), "must be an int"),
    (FileNotFoundError(2, "No such file or directory", "a.csv"),
     "No such file or directory: a.csv; check the path."),
    (PermissionError(13, "Permission denied", "/root/x.csv"),
     "Permission denied: /root/x.csv; check its permissions or choose another path."),
    (IsADirectoryError(21, "Is a directory", "data"), "Is a directory: data; give a file"),
    (_utf8_error(), "cannot read the file as utf-8 text (byte 3: b'\\xe9'); save it as UTF-8"),
    (ModuleNotFoundError("No module named 'flwr'", name="flwr"),
     'needs flwr, which is not installed; install it with: pip install "shiftlearn[federated]"'),
    (ModuleNotFoundError("No module named 'dask'", name="dask"),
     'pip install "shiftlearn[dask]"'),
    (ImportError("a loopback needs the federated extra;\n install it with: pip install "
                 '"shiftlearn[federated]"'),
     'a loopback needs the federated extra; install it with: pip install "shiftlearn[federated]"'),
])
def test_user_mistake_is_one_line_and_exit_2(failing, capsys, exc, expected):
    failing(exc)
    assert cli.main(["datasets"]) == 2
    captured = capsys.readouterr()
    lines = captured.err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("shiftlearn datasets: error: "), lines
    assert expected in lines[0]
    assert captured.out == ""


def test_nested_commands_are_named_in_the_error(capsys):
    assert cli.main(["federated", "simulate", "--set", "rounds=ten"]) == 2
    assert capsys.readouterr().err.startswith("shiftlearn federated simulate: error: ")


@pytest.mark.parametrize("exc", [RuntimeError("a bug"), KeyError("x"),
                                 ModuleNotFoundError("No module named 'nope'", name="nope"),
                                 ImportError("cannot import name 'x' from 'shiftlearn'"),
                                 MemoryError()])
def test_a_bug_keeps_its_traceback(failing, exc):
    failing(exc)
    with pytest.raises(type(exc)):
        cli.main(["datasets"])


def test_debug_reraises(failing, monkeypatch, capsys):
    failing(ValueError("bad"))
    with pytest.raises(ValueError, match="bad"):
        cli.main(["datasets", "--debug"])
    with pytest.raises(ValueError, match="bad"):
        cli.main(["--debug", "datasets"])
    monkeypatch.setenv("SHIFTLEARN_DEBUG", "1")
    with pytest.raises(ValueError, match="bad"):
        cli.main(["datasets"])
    monkeypatch.setenv("SHIFTLEARN_DEBUG", "0")
    assert cli.main(["datasets"]) == 2


def test_interrupt_is_exit_130_with_one_line(failing, capsys):
    failing(KeyboardInterrupt())
    assert cli.main(["datasets"]) == 130
    assert capsys.readouterr().err.splitlines() == ["shiftlearn datasets: interrupted"]


def test_argparse_errors_exit_2(capsys):
    for argv in (["datasets", "--no-such-option"], ["demo", "boosting", "--n-source", "x"],
                 ["mmd", "office_caltech", "--permutations", "-1"]):
        with pytest.raises(SystemExit) as exc:
            cli.main(argv)
        assert exc.value.code == 2
        assert "error: " in capsys.readouterr().err


# --------------------------------------------------------------------- as a process ------
def _entry_point() -> str:
    exe = shutil.which("shiftlearn", path=str(Path(sys.executable).parent))
    if exe is None:
        pytest.skip("the shiftlearn entry point is not installed beside this Python")
    return exe


def test_process_error_has_no_traceback(tmp_path):
    run = subprocess.run([_entry_point(), "demo", "splits", "--holdout", "amazn"],
                         capture_output=True, text=True)
    if "Missing data file" in run.stderr or "Could not download" in run.stderr:
        pytest.skip("shared data not available")
    assert run.returncode == 2 and run.stdout == ""
    assert run.stderr.splitlines() == [
        "shiftlearn demo splits: error: --holdout 'amazn' is not a domain of office_caltech; "
        "choose one of amazon, caltech, dslr, webcam."]


def test_process_ctrl_c_exits_130(data_home):
    """SIGINT while a demo computes: exit 130, one line, no traceback."""
    # a child inherits an *ignored* SIGINT from its parent: another test in this pytest worker
    # (one that runs Flower in-process) can leave SIGINT ignored, and then the demo never sees
    # Ctrl-C (seen in the full suite only). A person's shell starts it with the default.
    proc = subprocess.Popen([_entry_point(), "demo", "subspace", "--methods", "raw,SCA,TCA"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=dict(os.environ, PYTHONUNBUFFERED="1"),
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        first = proc.stdout.readline()           # run() has started
        assert first.startswith("shiftlearn demo subspace:")
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 130, err
    assert err.strip().splitlines()[-1] == "shiftlearn demo subspace: interrupted"
    assert "Traceback" not in err


def test_process_closed_pipe_is_quiet():
    """`shiftlearn ... | head -1` where the reader has gone: exit 141, no BrokenPipeError."""
    proc = subprocess.Popen([_entry_point(), "federated", "keys"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    proc.stdout.close()                  # the reader leaves before the command writes
    err = proc.stderr.read()
    proc.wait(timeout=60)
    assert proc.returncode == 141 and err == b""
