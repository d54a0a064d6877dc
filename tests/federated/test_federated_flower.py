"""Flower integration: a real SuperLink and 4 SuperNodes on 127.0.0.1 (TLS and SuperNode
authentication, the deployment's default since issue #22) run the one-shot job; the result must
equal the simulator's, and every process started here must be gone after. The slow tests run
the iterative job, and the one-shot job under SecAgg+ (also with a client dropping out)."""

import numpy as np
import pytest

pytest.importorskip("flwr")

from _tolerances import eigh_atol, leading_eigvec_atol  # noqa: E402

from shiftlearn.federated.flower import LoopbackDeployment, live_processes  # noqa: E402
from shiftlearn.federated.jobs import simulate_job  # noqa: E402


def _oneshot_bounds(job, sim):
    """Round-off bounds between two one-shot runs that sum the same clients' statistics in
    other orders (the Flower server in arrival order): the pencil (C, I + mu d d^T) moves by
    a few eps ||S|| (S the uncentred moment), so the eigenvalues by eigh_atol at ||S|| and
    the B-normalised W by leading_eigvec_atol scaled by ||S|| / ||C||."""
    from shiftlearn.adaptation import rf_stats
    from shiftlearn.federated._data import load_all
    from shiftlearn.federated.jobs import job_config, oneshot_config

    cfg = job_config(job)
    parts = load_all(cfg)
    oc = oneshot_config(cfg, sim["sigma"])
    om = oc.omega(parts[0].X.shape[1])
    tot = sum(rf_stats(p.X, p.y, np.full(len(p.X), p.domain_id), om) for p in parts)
    d = tot.mmd_vector()
    B = np.eye(d.size) + oc.mu * np.outer(d, d)
    C, S = tot.total_scatter(), tot.total_moment()
    ratio = np.linalg.norm(S, 2) / np.linalg.norm(C, 2)
    return (leading_eigvec_atol(C, B, oc.n_components) * ratio,
            eigh_atol(S, B, sim["eigenvalues"], V=sim["W"]))


@pytest.mark.network
def test_flower_oneshot_job_matches_simulator(tmp_path):
    job = {"protocol": "oneshot", "n-per-client": 60}
    with LoopbackDeployment(4, tmp_path) as dep:      # started, and stopped whatever happens
        pids = [p.pid for p in dep.procs]
        res = dep.run(job, timeout=150)
    # trust the ServerApp's result file, not flwr run's exit code
    assert res["status"] == "ok", res.get("traceback")
    assert res["rejections"] == {}
    sim = simulate_job(job)
    assert res["sigma"] == sim["sigma"]
    # the server sums the replies in arrival order: round-off of the pencil, not bit identity
    atol_W, atol_ev = _oneshot_bounds(job, sim)
    np.testing.assert_allclose(res["W"], sim["W"], rtol=0, atol=atol_W)
    np.testing.assert_allclose(res["eigenvalues"], sim["eigenvalues"], rtol=0, atol=atol_ev)
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


def _angle(A, B):
    from shiftlearn.federated._secagg import subspace_angle

    return subspace_angle(A, B)


@pytest.mark.slow
@pytest.mark.network
def test_flower_secagg_oneshot_equals_emulation_and_centralized(tmp_path):
    """Issue #22: SecAgg+ on TLS + authenticated nodes; the server solves from the sum only.
    The fixed point makes it deterministic: bit-identical to the in-process emulation, and
    within the stated quantisation of the float one-shot result (= centralized RF-TCA)."""
    job = {"protocol": "oneshot", "n-per-client": 60, "secure-aggregation": True}
    with LoopbackDeployment(4, tmp_path) as dep:
        assert dep.auth and dep.certs is not None
        res = dep.run(job, timeout=400)
    assert res["status"] == "ok", res.get("traceback")
    sec = res["secure_aggregation"]
    assert sec["contributors"] == [1, 2, 3, 4] and sec["dropped"] == []
    assert sec["n_limbs"] == 2 and sec["quantization_range"] * 4 < sec["modulus_range"]
    emulated = simulate_job(job)
    np.testing.assert_array_equal(res["W"], emulated["W"])
    assert res["side_counts"] == emulated["side_counts"] == [180, 60]
    plain = simulate_job({k: v for k, v in job.items() if k != "secure-aggregation"})
    assert _angle(res["W"], plain["W"]) < 1e-6
    assert res["wire_bytes_up"] > 0 and res["wire_bytes_down"] > 0


@pytest.mark.network
def test_hardening_secagg_dropout_is_reported_and_exact_for_the_survivors(tmp_path):
    """Client 2 (a source) drops after the SecAgg+ key exchange; its masks are rebuilt from
    the others' shares, the model is RF-TCA on the three contributors' pooled data, and the
    result table names the dropped client."""
    from shiftlearn.cli.federated import summary_rows
    from shiftlearn.federated._data import agree_bandwidth, load_all, local_bandwidth
    from shiftlearn.federated._secagg import secure_oneshot
    from shiftlearn.federated.jobs import job_config, oneshot_config

    job = {"protocol": "oneshot", "n-per-client": 60, "secure-aggregation": True}
    with LoopbackDeployment(4, tmp_path,
                            node_configs={1: 'fail-stage="secagg-collect"'}) as dep:
        res = dep.run(job, timeout=400)
    assert res["status"] == "ok", res.get("traceback")
    sec = res["secure_aggregation"]
    assert sec["contributors"] == [1, 3, 4] and sec["dropped"] == [2]
    assert any("fault injection" in f for f in sec["failures"])
    assert dict(summary_rows(res))["clients dropped (model exact for the others)"] == "2"
    cfg = job_config(job)
    parts = load_all(cfg)
    assert res["sigma"] == agree_bandwidth([local_bandwidth(p.X) for p in parts])
    survivors = [(p.X, p.y, p.domain_id) for i, p in enumerate(parts) if i != 1]
    oc = oneshot_config(cfg, res["sigma"])
    np.testing.assert_array_equal(res["W"], secure_oneshot(survivors, oc)["W"])
    assert res["side_counts"] == [120, 60]
    # and within the quantisation of plain RF-TCA on the survivors' pooled data
    from shiftlearn.federated import run_oneshot

    central = run_oneshot(survivors, oc, n_classes=parts[0].n_classes)
    assert _angle(res["W"], central.W) < 1e-6


@pytest.mark.network
def test_flower_deep_digits_job_matches_simulator(tmp_path, data_home):
    """Issue #21: the deep model (CNN extractor, FCNN classifier) over Flower: 3 SuperNodes
    (MNIST and UCI sources, USPS target) over TLS; the extractor G travels with the classifier,
    the bytes equal the simulator's and the model matches it up to float32 arithmetic."""
    pytest.importorskip("torch", reason='the deep extra (pip install "shiftlearn[deep]")')
    import time

    job = {"dataset": "digits", "target": "usps", "rounds": 2, "local-steps": 1,
           "n-features": 20, "n-components": 8, "lam": 0.3}
    t0 = time.monotonic()
    with LoopbackDeployment(3, tmp_path) as dep:
        res = dep.run(job, timeout=170)
    wall = time.monotonic() - t0
    assert res["status"] == "ok", res.get("traceback")
    assert res["rejections"] == {}
    sim = simulate_job(job)
    assert res["bytes_up"] == sim["bytes_up"] and res["bytes_down"] == sim["bytes_down"]
    for k in ("W", "C", "G"):
        np.testing.assert_allclose(res[k], sim[k], rtol=0, atol=1e-4)
    assert res["target_accuracy"] == pytest.approx(sim["target_accuracy"], abs=0.01)
    assert res["baseline"] == pytest.approx(sim["baseline"], abs=0.01)
    assert wall < 180, wall
