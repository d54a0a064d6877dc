"""Progress bars on the loops a person waits on (issue #17, item 4): boosting iterations and
federated rounds draw a bar where the command line switched progress on (stderr a terminal,
no ``--quiet``); the library itself draws and prints nothing."""

import io
import os
import subprocess
import sys
import threading
from contextlib import contextmanager

import numpy as np
import pytest
from rich.console import Console

from shiftlearn import _progress
from shiftlearn.boosting import MultiTaskBoostingClassifier
from shiftlearn.boosting import _estimator as boosting_estimator
from shiftlearn.datasets import make_monotone_shift
from shiftlearn.federated import FedRFTCAConfig, Simulator, run_iterative


def _console():
    buf = io.StringIO()
    return buf, Console(file=buf, force_terminal=True, width=120)


def _shifted(n_source=120, n_target=60, seed=0):
    X, y, sd = make_monotone_shift(n_source, n_target, random_state=seed)
    return X, y, sd


# ----------------------------------------------------------------------------- boosting -----
def test_boosting_advances_one_bar_per_iteration_and_class(monkeypatch):
    calls = []

    @contextmanager
    def recording(description, total=None):
        calls.append([description, total, 0])

        def advance(n=1, description=None):
            calls[-1][2] += n
        yield advance

    monkeypatch.setattr(boosting_estimator, "progress_task", recording)
    X, y, sd = _shifted()
    MultiTaskBoostingClassifier(n_estimators=7).fit(X, y, sd)
    assert calls == [["boosting (multitask)", 7, 7]]
    y3 = np.where(X[:, 0] > np.quantile(X[:, 0], 0.6), 2, y)     # three classes: 3 ensembles
    MultiTaskBoostingClassifier(n_estimators=4, mode="pooling").fit(X, y3, sd)
    assert calls[-1] == ["boosting (pooling)", 12, 12]


def test_boosting_draws_only_where_progress_is_on(capsys):
    X, y, sd = _shifted()
    buf, console = _console()
    clf = MultiTaskBoostingClassifier(n_estimators=5).fit(X, y, sd)
    assert capsys.readouterr() == ("", "") and buf.getvalue() == ""
    with _progress.progress_enabled(True, console=console):
        on = MultiTaskBoostingClassifier(n_estimators=5).fit(X, y, sd)
    assert "boosting (multitask)" in buf.getvalue()
    assert capsys.readouterr() == ("", "")
    np.testing.assert_array_equal(on.decision_function(X, sd), clf.decision_function(X, sd))


# ----------------------------------------------------------------------------- federated ----
def _clients(seed=0):
    rng = np.random.default_rng(seed)
    src = [(rng.normal(size=(40, 3)) + c, np.arange(40) % 2) for c in range(2)]
    return src, rng.normal(size=(30, 3))


@pytest.mark.parametrize("algorithm, label", [("fedrftca", "FedRF-TCA rounds"),
                                              ("fedavg", "FedAvg rounds")])
def test_federated_rounds_draw_a_bar(algorithm, label, capsys):
    src, Xt = _clients()
    cfg = FedRFTCAConfig(n_features=20, n_components=4, n_rounds=3, algorithm=algorithm)
    quiet = run_iterative(src, Xt, cfg)
    assert capsys.readouterr() == ("", "")
    buf, console = _console()
    with _progress.progress_enabled(True, console=console):
        shown = run_iterative(src, Xt, cfg)
    assert label in buf.getvalue()
    np.testing.assert_array_equal(shown.W, quiet.W)             # the bar changes nothing


def test_simulator_run_draws_a_bar():
    sim = Simulator(_Idle(), {})
    buf, console = _console()
    with _progress.progress_enabled(True, console=console):
        sim.run(3)
    assert "federated rounds" in buf.getvalue() and sim.round == 3


class _Idle:
    """A server with nothing to say (the simulator still counts its rounds)."""

    spec = None

    def start_round(self):
        return {}

    def finish_round(self):
        return {}


def test_a_phase_of_unknown_length_shows_no_count():
    buf, console = _console()
    with _progress.progress_enabled(True, console=console):
        with _progress.task("waiting for Flower") as step:
            step(0, description="scoring")
    text = buf.getvalue()
    assert "scoring" in text or "waiting for Flower" in text
    assert "/?" not in text and "eta" not in text


# --------------------------------------------------------------- the command on a terminal ---
def _on_a_terminal(*argv: str, timeout: float = 300) -> tuple[int, str, str]:
    """Run ``shiftlearn argv`` with stderr on a pseudo-terminal (as in a person's shell) and
    stdout on a pipe; returns ``(exit status, stdout, what the terminal showed)``."""
    pty = pytest.importorskip("pty")
    try:
        master, slave = pty.openpty()
    except OSError as exc:                     # a container without /dev/ptmx
        pytest.skip(f"no pseudo-terminal here: {exc}")
    env = {k: v for k, v in os.environ.items() if k not in ("TTY_INTERACTIVE", "NO_COLOR")}
    env.update(TERM="xterm", COLUMNS="120")
    proc = subprocess.Popen([sys.executable, "-m", "shiftlearn.cli", *argv],
                            stdout=subprocess.PIPE, stderr=slave, stdin=subprocess.DEVNULL,
                            env=env)
    os.close(slave)
    seen = bytearray()

    def read():
        while True:
            try:
                chunk = os.read(master, 4096)
            except OSError:            # the terminal's other end closed (Linux: EIO)
                return
            if not chunk:
                return
            seen.extend(chunk)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        out, _ = proc.communicate(timeout=timeout)
    finally:
        reader.join(timeout=10)
        os.close(master)
    return proc.returncode, out.decode(), seen.decode(errors="replace")


@pytest.mark.skipif(sys.platform == "win32", reason="pseudo-terminals are POSIX")
def test_demo_boosting_shows_its_iterations_on_a_terminal():
    argv = ("demo", "boosting", "--n-estimators", "60", "--n-source", "300", "--n-test", "300")
    code, out, terminal = _on_a_terminal(*argv)
    assert code == 0, terminal
    assert "boosting (multitask)" in terminal and "/60" in terminal
    assert len([line for line in out.splitlines() if "target test error" in line]) == 4
    assert "\x1b" not in out                    # the results on stdout are plain text
    code, out, terminal = _on_a_terminal(*argv, "--quiet")
    assert code == 0 and terminal == "" and "multitask" in out


@pytest.mark.skipif(sys.platform == "win32", reason="pseudo-terminals are POSIX")
def test_federated_simulate_shows_its_rounds_on_a_terminal():
    code, out, terminal = _on_a_terminal("federated", "simulate", "--set",
                                         "protocol=iterative", "rounds=25", "n-per-client=30")
    assert code == 0, terminal
    assert "FedRF-TCA rounds" in terminal and "/25" in terminal
    assert out.splitlines()[0] == "federated simulate: FedRF-TCA on synthetic"
    assert "\x1b" not in out


@pytest.mark.skipif(sys.platform == "win32", reason="pseudo-terminals are POSIX")
def test_adapt_auto_shows_the_candidate_and_the_time_left_on_a_terminal(tmp_path):
    """The selection's bar names the candidate last scored and estimates the time left; the
    Markdown report on stdout stays plain, with each candidate's seconds; --quiet draws
    nothing."""
    import pandas as pd

    from shiftlearn.datasets import make_sca_toy

    X, y, sd = make_sca_toy(n_per_cluster=20, random_state=0)
    pd.DataFrame(X[sd > 0], columns=["a", "b"]).assign(label=y[sd > 0]).to_csv(
        tmp_path / "s.csv", index=False)
    pd.DataFrame(X[sd < 0], columns=["a", "b"]).to_csv(tmp_path / "t.csv", index=False)
    argv = ("adapt", str(tmp_path / "s.csv"), "--target", str(tmp_path / "t.csv"),
            "--label-column", "label", "--permutations", "0", "--candidates", "TCA,CORAL",
            "--n-jobs", "2")
    code, out, terminal = _on_a_terminal(*argv)
    assert code == 0, terminal
    assert "/15" in terminal and "eta" in terminal           # none, TCA, CORAL x 5 folds
    assert "choosing by circular: " in terminal
    assert any(f"choosing by circular: {m}" in terminal for m in ("no adaptation", "TCA",
                                                                   "CORAL"))
    assert "\x1b" not in out and "| seconds (fit + validation) |" in out
    code, out, terminal = _on_a_terminal(*argv, "--quiet")
    assert code == 0 and terminal == "" and "| seconds (fit + validation) |" in out
