"""Flower loopback rounds as they happen (issue #17 item 4): the ServerApp logs one line per
protocol round, ``LoopbackDeployment.run`` reads ``flwr run --stream`` while it runs and calls
``on_round``; the deployment draws nothing itself.

The streaming reader is tested on a plain Python child (fast); the real deployment with an
iterative job is slow (a SuperLink and 4 SuperNodes, ~2 min on the loaded 2-core machine).
"""

from __future__ import annotations

import subprocess
import sys
import time

import pytest

from shiftlearn.federated.flower import ROUND_LINE, stream_process

CHILD = """
import sys, time
for i in range(3):
    print(f"line {i}", flush=True)
    time.sleep(0.3)
sys.stdout.write("no newline at the end")
"""


def test_stream_process_calls_back_while_the_process_runs():
    seen = []
    t0 = time.monotonic()
    proc = stream_process([sys.executable, "-c", CHILD], env=None, timeout=30,
                          on_line=lambda line: seen.append((line, time.monotonic() - t0)))
    end = time.monotonic() - t0
    assert proc.returncode == 0
    assert [line for line, _ in seen] == ["line 0", "line 1", "line 2", "no newline at the end"]
    assert proc.stdout.decode().startswith("line 0\nline 1\n")
    # the first line arrived while the child still had ~0.9 s of sleeping to do
    assert seen[0][1] < end - 0.5


def test_stream_process_timeout_kills_and_raises():
    t0 = time.monotonic()
    with pytest.raises(subprocess.TimeoutExpired) as err:
        stream_process([sys.executable, "-c", "print('hi', flush=True); import time; "
                        "time.sleep(60)"], env=None, timeout=1.5)
    assert time.monotonic() - t0 < 10
    assert err.value.output == b"hi\n"


def test_round_line_is_what_the_deployment_parses():
    flower = pytest.importorskip("shiftlearn.federated.flower")
    for args, want in (((2, 5, 1.2, 3), ("2", "5")),
                       ((1, None, 0.4, 4, "SecAgg+ sum"), ("1", "?"))):
        line = "\x1b[92mINFO \x1b[0m:      " + flower.round_line(*args)   # Flower's prefix
        m = ROUND_LINE.search(line)
        assert m is not None and m.groups() == want
    assert ROUND_LINE.search("INFO :      Start `flwr-serverapp` process") is None


@pytest.mark.slow
@pytest.mark.network
def test_loopback_reports_each_round_as_it_ends(tmp_path):
    pytest.importorskip("flwr")
    from shiftlearn.federated.flower import LoopbackDeployment

    events = []

    def on_round(done, total):
        # the ServerApp writes its result file at the very end: absent while rounds stream in
        events.append((done, total, any(tmp_path.glob("result_*.json"))))

    job = {"protocol": "iterative", "n-per-client": 60, "rounds": 3}
    with LoopbackDeployment(4, tmp_path) as dep:
        res = dep.run(job, timeout=600, on_round=on_round)
    assert res["status"] == "ok", res.get("traceback")
    assert [e[:2] for e in events] == [(1, 3), (2, 3), (3, 3)]
    assert events[0][2] is False, "round 1 was reported only after the run ended"
    assert len(res["rounds"]) == 3
