"""The loopback deployment stops cleanly on SIGTERM and SIGHUP, as on Ctrl-C: no Flower process
and no folder with private keys is left (a real subprocess, real Flower processes)."""

import os
import signal
import subprocess
import sys
import time

import pytest

from shiftlearn.cli import federated


def _descendants(root: int) -> set[int]:
    """Live processes below ``root`` (from /proc's parent links)."""
    parent = {}
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            try:
                with open(f"/proc/{pid}/stat") as fh:
                    parent[int(pid)] = int(fh.read().rsplit(")", 1)[1].split()[1])
            except (OSError, ValueError, IndexError):
                continue
    out, frontier = set(), {root}
    while frontier:
        frontier = {p for p, pp in parent.items() if pp in frontier} - out
        out |= frontier
    return out


def _alive(pids: set[int]) -> set[int]:
    alive = set()
    for pid in pids:
        try:
            with open(f"/proc/{pid}/stat") as fh:
                if fh.read().rsplit(")", 1)[1].split()[0] != "Z":
                    alive.add(pid)
        except OSError:
            continue
    return alive


def _flower_processes(marker: str) -> list[str]:
    """Command lines of live processes that mention ``marker`` (the run's temporary folder)."""
    out = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as fh:
                cmd = fh.read().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if marker in cmd and "pytest" not in cmd:
            out.append(cmd)
    return out


@pytest.mark.parametrize("sig, insecure", [(signal.SIGTERM, False), (signal.SIGHUP, True)],
                         ids=["SIGTERM-tls", "SIGHUP-insecure"])
def test_hardening_loopback_stops_cleanly_on_a_signal(tmp_path, sig, insecure):
    pytest.importorskip("flwr")
    try:
        federated.flower_bin()
    except ImportError as exc:
        pytest.skip(str(exc))
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    env = {**os.environ, "TMPDIR": str(tmp), "COLUMNS": "80"}
    # an iterative job of many rounds: still running when the signal comes
    proc = subprocess.Popen([sys.executable, "-m", "shiftlearn.cli", "federated", "loopback",
                             "--nodes", "2", "--set", "num-clients=2", "n-per-client=30",
                             "protocol=iterative", "rounds=500",
                             *(["--insecure"] if insecure else [])], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 120
        children: set[int] = set()
        while time.monotonic() < deadline and proc.poll() is None:
            children = _descendants(proc.pid)
            if len(children) >= 3:                          # the SuperLink and both SuperNodes
                break
            time.sleep(0.1)
        assert proc.poll() is None, proc.communicate()
        time.sleep(1.0)                                    # the run under way
        children |= _descendants(proc.pid)
        assert any(tmp.iterdir())                          # the run's folder exists
        proc.send_signal(sig)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    try:
        assert proc.returncode == 130, err
        assert "interrupted" in err
        assert ("plain text" in err) == insecure           # the warning comes with --insecure
        deadline = time.monotonic() + 10
        while (_alive(children) or _flower_processes(str(tmp))) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert _alive(children) == set() and _flower_processes(str(tmp)) == []
        assert list(tmp.iterdir()) == []                   # keys and certificates removed
    finally:                                               # never leave orphans behind
        for pid in _alive(children):
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
