"""Flower integration: a real SuperLink and 4 SuperNodes on 127.0.0.1 run the one-shot job;
the result must equal the simulator's, and every process started here must be gone after."""

import numpy as np
import pytest

pytest.importorskip("flwr")

from shiftlearn.federated._deploy import LoopbackDeployment, live_processes  # noqa: E402
from shiftlearn.federated._jobs import simulate_job  # noqa: E402


@pytest.mark.network
def test_flower_oneshot_job_matches_simulator(tmp_path):
    job = {"protocol": "oneshot", "n-per-client": 60}
    dep = LoopbackDeployment(4, tmp_path)
    pids = []
    try:
        dep.start()
        pids = [p.pid for p in dep.procs]
        res = dep.run(job, timeout=150)
    finally:
        dep.stop()
    # trust the ServerApp's result file, not flwr run's exit code
    assert res["status"] == "ok", res.get("traceback")
    assert res["rejections"] == {}
    sim = simulate_job(job)
    assert res["sigma"] == sim["sigma"]
    np.testing.assert_allclose(res["W"], sim["W"], rtol=0, atol=1e-12)
    np.testing.assert_allclose(res["eigenvalues"], sim["eigenvalues"], rtol=0, atol=1e-12)
    assert res["bytes_up"] == sim["bytes_up"] and res["bytes_down"] == sim["bytes_down"]
    assert len(res["rounds"]) == 2
    # teardown: every process group we started is gone
    assert len(pids) == 5 and live_processes(pids) == []


def test_deployment_stops_processes_when_the_job_fails(tmp_path):
    """Unknown job key: run() raises before flwr starts; stop() still cleans up."""
    dep = LoopbackDeployment(1, tmp_path)
    with pytest.raises(ValueError, match="Unknown job key"):
        dep.run({"no-such-key": 1})
    assert dep.procs == []


@pytest.mark.slow
@pytest.mark.network
def test_flower_iterative_job_matches_simulator(tmp_path):
    job = {"protocol": "iterative", "n-per-client": 60, "rounds": 3}
    with LoopbackDeployment(4, tmp_path) as dep:
        res = dep.run(job, timeout=600)
    assert res["status"] == "ok", res.get("traceback")
    sim = simulate_job(job)
    np.testing.assert_allclose(res["W"], sim["W"], rtol=0, atol=1e-12)
    np.testing.assert_allclose(res["C"], sim["C"], rtol=0, atol=1e-12)
    assert res["target_accuracy"] == pytest.approx(sim["target_accuracy"])
    assert res["baseline"] == pytest.approx(sim["baseline"])   # added by the loopback run
    assert ("warning" in res) == ("warning" in sim)
    assert res["bytes_up"] == sim["bytes_up"] and res["bytes_down"] == sim["bytes_down"]
