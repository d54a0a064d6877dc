"""Hostile nodes against the Flower ServerApp: the real ``_run`` (hello, protocol rounds,
evaluation) drives the real ClientApp handlers of every node in-process through a stand-in for
Flower's Grid; every reply is a real Flower ``Message`` whose records cross Flower's protobuf
serialization, and one node tampers with what it sends. Each attack must be rejected with one
log line naming the client (and node) and the reason, and the run must go on with the honest
clients."""

import logging

import numpy as np
import pytest

pytest.importorskip("flwr")

from flwr.app import Array, ArrayRecord, ConfigRecord, Context, Message, RecordDict  # noqa: E402
from flwr.common.serde import recorddict_from_proto, recorddict_to_proto  # noqa: E402
from flwr.supercore.task_identity import TaskIdentity  # noqa: E402

from shiftlearn.federated._secagg import subspace_angle  # noqa: E402
from shiftlearn.federated.flower import _apps as flower  # noqa: E402
from shiftlearn.federated.jobs import job_config, simulate_job  # noqa: E402

HANDLERS = {"query.hello": flower._hello, "query.fedrftca": flower._protocol,
            "evaluate": flower._evaluate}
NODE0 = 101          # node ids 101, 102, ...: partition 0, 1, ... = clients 1, 2, ...


@pytest.fixture(autouse=True)
def _task_identity(monkeypatch):
    for attr in ("_run_id", "_node_id", "_task_id"):
        monkeypatch.setattr(TaskIdentity, attr, 1)


class LocalGrid:
    """Flower's ``Grid`` with the nodes' ClientApp handlers run in-process.

    ``tamper(node, request, content, count) -> content``: what node ``node`` really sends
    (``count``: how many protocol replies that node has sent before).
    """

    def __init__(self, job: dict, tamper=None):
        cfg = job_config(job)
        self.nodes = {NODE0 + i: i for i in range(int(cfg["num-clients"]))}
        self.contexts = {n: Context(run_id=1, node_id=n, node_config={"partition-id": p},
                                    state=RecordDict(), run_config=dict(cfg))
                         for n, p in self.nodes.items()}
        self.tamper = tamper
        self.sent: dict = {}
        self.replies: dict = {}
        self.count = dict.fromkeys(self.nodes, 0)

    def get_node_ids(self):
        return list(self.nodes)

    def push_messages(self, messages):
        ids = []
        for m in messages:
            mid = f"m{len(self.sent)}"
            m.metadata.__dict__["_message_id"] = mid
            self.sent[mid] = m
            node = m.metadata.dst_node_id
            content = HANDLERS[m.metadata.message_type](m, self.contexts[node]).content
            if self.tamper is not None:
                content = self.tamper(node, m, content, self.count[node])
            if m.metadata.message_type == "query.fedrftca":
                self.count[node] += 1
            wire = recorddict_from_proto(recorddict_to_proto(content))
            self.replies[mid] = Message(wire, reply_to=m)
            ids.append(mid)
        return ids

    def pull_messages(self, ids):
        return [self.replies.pop(i) for i in ids if i in self.replies]


def run_job(job: dict, tmp_path, tamper=None) -> dict:
    """The ServerApp's ``_run`` on a LocalGrid; the result dict plus the saved arrays."""
    result: dict = {}
    path = tmp_path / "result.json"
    flower._run(LocalGrid(job, tamper), job_config(job), result, path, None)
    with np.load(str(path) + ".npz") as z:
        result.update({k: z[k] for k in z.files})
    return result


def _arrays(content) -> dict:
    return {k: a.numpy() for k, a in content["arrays"].items()}


def _with(content, meta=None, **arrays) -> RecordDict:
    """``content`` with some meta entries and arrays replaced (an Array or an ndarray)."""
    rec = {k: a for k, a in content["arrays"].items()}
    rec.update({k: a if isinstance(a, Array) else Array(np.ascontiguousarray(a))
                for k, a in arrays.items()})
    m = dict(content["meta"])
    m.update(meta or {})
    return RecordDict({"arrays": ArrayRecord(rec), "meta": ConfigRecord(m)})


def _hostile_once(node, change):
    """Node ``node`` tampers with its first protocol reply only (then answers honestly)."""
    def tamper(n, request, content, count):
        if n == node and request.metadata.message_type == "query.fedrftca" and count == 0:
            return change(content)
        return content
    return tamper


ONESHOT = {"protocol": "oneshot", "n-per-client": 40}
ITERATIVE = {"protocol": "iterative", "n-per-client": 40, "rounds": 3,
             "client-sampling": "all"}


def _rejection_lines(caplog):
    return [r.getMessage() for r in caplog.records if "rejected" in r.getMessage()]


# ------------------------------------------------------------------------- impersonation
def test_hardening_impersonation_rejected_and_genuine_client_kept(tmp_path, caplog):
    """Node 102 (client 2) sends its own statistics as client 1's. Before: the forgery took
    client 1's slot and the genuine reply was rejected as a duplicate."""
    forged = _hostile_once(NODE0 + 1, lambda c: _with(c, {"client_id": 1}))
    with caplog.at_level(logging.WARNING, logger="shiftlearn.federated"):
        res = run_job(ONESHOT, tmp_path, forged)
    assert res["rejections"] == {"impersonation": 1}
    (line,) = _rejection_lines(caplog)
    assert "client 2 (impersonation)" in line and "node 102" in line
    assert "claiming client 1" in line
    sim = simulate_job(ONESHOT)
    # client 2 answered honestly when asked again: the honest model, summed in another order
    assert subspace_angle(res["W"], sim["W"]) < 1e-6
    np.testing.assert_allclose(res["eigenvalues"], sim["eigenvalues"], rtol=1e-9)


def test_hardening_impersonation_rejected_in_the_iterative_protocol(tmp_path, caplog):
    forged = _hostile_once(NODE0 + 3, lambda c: _with(c, {"client_id": 2}))
    with caplog.at_level(logging.WARNING, logger="shiftlearn.federated"):
        res = run_job(ITERATIVE, tmp_path, forged)
    assert res["rejections"] == {"impersonation": 1}
    (line,) = _rejection_lines(caplog)
    assert "client 4 (impersonation)" in line and "node 104" in line


# ------------------------------------------------------------------------- poison and crash
def test_hardening_fractional_class_counts_rejected_not_crashing(tmp_path, caplog):
    """Before: the +0.5 counts passed the guard and crashed the solver, naming no one."""
    half = _hostile_once(NODE0 + 1, lambda c: _with(
        c, class_counts=_arrays(c)["class_counts"] + 0.5))
    with caplog.at_level(logging.WARNING, logger="shiftlearn.federated"):
        res = run_job(ONESHOT, tmp_path, half)
    assert res["rejections"] == {"bad_counts": 1}
    (line,) = _rejection_lines(caplog)
    assert "client 2 (bad_counts)" in line
    assert subspace_angle(res["W"], simulate_job(ONESHOT)["W"]) < 1e-6


def test_hardening_huge_finite_W_cannot_poison_the_average(tmp_path, caplog):
    """The target sends W = 1.7e308 (finite). Before: accepted, the average blew up and the
    clients then computed NaN/inf. Now: above the bound the protocol allows, rejected."""
    huge = _hostile_once(NODE0 + 3, lambda c: _with(
        c, W=np.full_like(_arrays(c)["W"], 1.7e308)))
    with caplog.at_level(logging.WARNING, logger="shiftlearn.federated"):
        res = run_job(ITERATIVE, tmp_path, huge)
    assert res["rejections"] == {"out_of_bounds": 1}
    (line,) = _rejection_lines(caplog)
    assert "client 4 (out_of_bounds)" in line and "max |W|" in line
    assert np.all(np.isfinite(res["W"])) and np.max(np.abs(res["W"])) < 10
    assert np.isfinite(res["target_accuracy"])


def test_hardening_malformed_array_record_rejected_not_crashing(tmp_path, caplog):
    """A Flower Array whose payload is not a .npy array. Before: TypeError in the ServerApp."""
    garbage = Array(dtype="float64", shape=(100,), stype="numpy.ndarray", data=b"\x93NUMPY junk")
    bad = _hostile_once(NODE0 + 2, lambda c: _with(c, mean=garbage))
    with caplog.at_level(logging.WARNING, logger="shiftlearn.federated"):
        res = run_job(ITERATIVE, tmp_path, bad)
    assert res["rejections"] == {"bad_record": 1}
    (line,) = _rejection_lines(caplog)
    assert "client 3 (bad_record)" in line and "node 103" in line


def test_hardening_oversized_array_refused_before_decoding(monkeypatch):
    """The cap comes from the job's dimensions and is checked on the .npy header, before the
    payload is decoded: a header claiming 10**12 entries allocates nothing."""
    from shiftlearn.federated import MessageError, ProtocolSpec, expected_sizes

    sizes = expected_sizes("train_reply", ProtocolSpec(4, 3, 2, 3))
    decoded = []
    real_numpy = Array.numpy
    monkeypatch.setattr(Array, "numpy", lambda self: decoded.append(1) or real_numpy(self))

    def content(**arrays):
        return recorddict_from_proto(recorddict_to_proto(RecordDict({
            "arrays": ArrayRecord(arrays), "meta": ConfigRecord({"kind": "train_reply"})})))

    past = content(mean=Array(np.zeros(sizes["mean"] + 1)))      # one entry past the cap
    with pytest.raises(MessageError, match=r"too_large: array 'mean' declares shape \(9,\)"):
        flower.reply_from_records(past, sizes)
    big = content(W=Array(np.zeros((1000, 1000))))               # 8 MB, the cap is 24 entries
    with pytest.raises(MessageError, match="too_large: array 'W' carries 8000128 bytes"):
        flower.reply_from_records(big, sizes)
    with pytest.raises(MessageError, match="unexpected_array"):
        flower.reply_from_records(content(evil=Array(np.zeros(2))), sizes)
    import io
    buf = io.BytesIO()
    np.lib.format.write_array_header_1_0(buf, {"descr": "<f8", "fortran_order": False,
                                               "shape": (10 ** 12,)})
    lying = content(mean=Array(dtype="float64", shape=(8,), stype="numpy.ndarray",
                               data=buf.getvalue() + b"\0" * 64))
    with pytest.raises(MessageError, match=r"too_large: .*declares shape \(1000000000000,\)"):
        flower.reply_from_records(lying, sizes)
    assert decoded == []
    # at the cap it is accepted and decoded
    arrays, _ = flower.reply_from_records(content(mean=Array(np.zeros(sizes["mean"]))), sizes)
    assert arrays["mean"].shape == (8,) and decoded == [1]


# ------------------------------------------------------------------------------- hello
def _hello_tamper(node, **fields):
    def tamper(n, request, content, count):
        if n == node and request.metadata.message_type == "query.hello":
            h = dict(content["hello"])
            h.update(fields)
            return RecordDict({"hello": ConfigRecord(h)})
        return content
    return tamper


@pytest.mark.parametrize("fields, reason", [
    ({"local_sigma": float("nan")}, "bad_sigma"),
    ({"local_sigma": 0.0}, "bad_sigma"),
    ({"local_sigma": -1.0}, "bad_sigma"),
    ({"n_input": 10 ** 6}, "bad_n_input"),
    ({"n_input": 0}, "bad_n_input"),
])
def test_hardening_hello_rejects_the_client_not_the_run(tmp_path, caplog, fields, reason):
    """Before: a NaN bandwidth aborted the run naming no one; the last hello's n_input won."""
    with caplog.at_level(logging.WARNING, logger="shiftlearn.federated.flower"):
        res = run_job(ONESHOT, tmp_path, _hello_tamper(NODE0 + 1, **fields))
    assert list(res["excluded"]) == ["2"] and res["excluded"]["2"].startswith(reason)
    lines = [r.getMessage() for r in caplog.records if "hello: rejected" in r.getMessage()]
    assert lines == [f"hello: rejected node 102 (client 2): {res['excluded']['2']}"]
    assert res["nodes"] == {"1": 101, "3": 103, "4": 104}
    assert np.all(np.isfinite(res["W"]))


def test_hardening_hello_valid_answers_all_registered(tmp_path):
    res = run_job(ONESHOT, tmp_path)
    assert "excluded" not in res and res["rejections"] == {}
    sim = simulate_job(ONESHOT)
    assert res["sigma"] == sim["sigma"]
    assert subspace_angle(res["W"], sim["W"]) < 1e-6


def test_hardening_hello_without_a_majority_n_input_stops_the_run(tmp_path):
    def split(n, request, content, count):
        if request.metadata.message_type == "query.hello" and n in (NODE0, NODE0 + 1):
            h = dict(content["hello"])
            h["n_input"] = 3
            return RecordDict({"hello": ConfigRecord(h)})
        return content
    with pytest.raises(RuntimeError, match="no strict majority agrees on n_input"):
        run_job(ONESHOT, tmp_path, split)


# ------------------------------------------------------------------------------- bounds
@pytest.mark.parametrize("job", [
    {"rounds": 30, "lr": 0.1, "lam": 10.0},
    {"rounds": 30, "algorithm": "fedavg"},
    {"rounds": 30, "vote": True, "subsets": "III", "client-sampling": "all"},
])
def test_hardening_honest_replies_stay_within_the_bounds(monkeypatch, job):
    """The bound is derived from the protocol, so honest runs are unchanged: no honest reply
    is refused (peaks measured for docs/federated.md)."""
    from shiftlearn.federated import _iterative

    peaks: dict = {}
    receive = _iterative.IterativeServer.receive

    def spy(self, arrays, meta, **kw):
        bounds = self.value_bounds()
        for k, v in arrays.items():
            if k in bounds:
                peaks[k] = max(peaks.get(k, 0.0), float(np.max(np.abs(v))) / bounds[k])
        return receive(self, arrays, meta, **kw)

    monkeypatch.setattr(_iterative.IterativeServer, "receive", spy)
    res = simulate_job({"protocol": "iterative", "n-per-client": 60, **job})
    assert np.all(np.isfinite(res["W"]))
    assert set(peaks) >= {"mean", "W"} and max(peaks.values()) <= 1.0


def test_hardening_W_bound_both_sides():
    """A W at the bound is kept, one ulp past it is refused as out_of_bounds."""
    from shiftlearn.federated import FedRFTCAConfig, IterativeServer, TrainReply, encode

    cfg = FedRFTCAConfig(n_features=4, n_components=3, client_sampling="all", seed=1)
    for past, kept in ((False, True), (True, False)):
        server = IterativeServer(cfg, [1, 2], 3, n_classes=2)
        server.start_round()
        b = server.value_bounds()["W"]
        W = np.zeros((8, 3))
        W[2, 1] = -np.nextafter(b, np.inf) if past else -b
        assert server.receive(*encode(TrainReply(round=1, client_id=3, mean=np.zeros(8),
                                                 W=W))) is kept
        assert server.guard.counts() == ({} if kept else {"out_of_bounds": 1})


@pytest.mark.parametrize("metrics", [
    RecordDict({"metrics": ConfigRecord({"accuracy": "high"})}),
    RecordDict({"metrics": ArrayRecord({"accuracy": Array(np.zeros(1))})}),
    RecordDict({"other": ConfigRecord({"accuracy": 0.5})}),
    RecordDict({"metrics": ConfigRecord({"accuracy": 7.5})}),
])
def test_hardening_malformed_evaluation_reply_reports_no_accuracy(tmp_path, caplog, metrics):
    """The target's evaluation reply is read like any other: a malformed one is one line,
    and the model is still written (before: the ServerApp crashed reading it)."""
    def bad(n, request, content, count):
        return metrics if request.metadata.message_type == "evaluate" else content
    with caplog.at_level(logging.WARNING, logger="shiftlearn.federated"):
        res = run_job(ITERATIVE, tmp_path, bad)
    assert "target_accuracy" not in res and res["rejections"] == {"bad_report": 1}
    (line,) = _rejection_lines(caplog)
    assert "client 4 (bad_report)" in line
    assert np.all(np.isfinite(res["W"]))


def test_hardening_valid_evaluation_reply_is_reported(tmp_path):
    res = run_job(ITERATIVE, tmp_path)
    assert res["rejections"] == {}
    assert res["target_accuracy"] == pytest.approx(simulate_job(ITERATIVE)["target_accuracy"])


@pytest.mark.network
def test_hardening_impersonation_on_real_flower_processes(tmp_path):
    """The same forgery on a real SuperLink and 4 SuperNodes (TLS + node authentication):
    node 2 sends its first statistics as client 1's; they are rejected, the genuine client 1
    is kept, node 2 answers honestly when asked again, and the model is the honest one."""
    from shiftlearn.federated.flower import LoopbackDeployment, live_processes

    job = {"protocol": "oneshot", "n-per-client": 60}
    with LoopbackDeployment(4, tmp_path, node_configs={1: "forge-client-id=1"}) as dep:
        pids = [p.pid for p in dep.procs]
        res = dep.run(job, timeout=150)
    assert res["status"] == "ok", res.get("traceback")
    assert res["rejections"] == {"impersonation": 1}
    assert res["transport"] == "TLS + node authentication"
    assert len(res["rounds"]) == 3      # statistics, client 2 asked again, the broadcast
    assert subspace_angle(np.asarray(res["W"]), simulate_job(job)["W"]) < 1e-6
    assert live_processes(pids) == []


def test_hardening_oneshot_bounds_both_sides():
    """Rows at the origin put every cosine at 1: the sums reach count / sqrt(N) and the
    moment rows / N exactly, and are kept; 1e-5 past the bound they are out_of_bounds."""
    from shiftlearn.federated import (
        OneShotClient,
        OneShotConfig,
        OneShotServer,
        StatsReply,
        StatsRequest,
        encode,
    )

    cfg = OneShotConfig(n_features=50, n_components=2, sigma=0.5)
    X, y = np.zeros((70, 5)), np.arange(70) % 3
    reply = OneShotClient(1, X, y, 1, cfg, [-2, 1], 3).handle(StatsRequest(round=1,
                                                                           client_id=1))
    for name in (None, "domain_sums", "class_sums", "moment_labeled"):
        server = OneShotServer(cfg, [1, 2], [-2, 1], 3, n_input=5)
        server.start_round()
        arrays = dict(reply.arrays)
        if name is not None:
            arrays[name] = arrays[name] * (1 + 1e-5)
        msg = StatsReply(round=1, client_id=1, fingerprint=reply.fingerprint, arrays=arrays)
        assert server.receive(*encode(msg)) is (name is None)
        assert server.guard.counts() == ({} if name is None else {"out_of_bounds": 1})


def test_hardening_result_table_says_who_was_left_out():
    from shiftlearn.cli import federated as cli

    rows = dict(cli.summary_rows({
        "rejections": {"impersonation": 1, "out_of_bounds": 2},
        "excluded": {"2": "bad_sigma: local_sigma nan is not finite and positive"},
        "secure_aggregation": {"dropped": [3], "contributors": [1, 2, 4]}}))
    assert rows["replies rejected"] == "impersonation 1, out_of_bounds 2"
    assert rows["clients excluded at hello"] == "2 (bad_sigma)"
    assert rows["clients dropped (model exact for the others)"] == "3"
    assert cli.summary_rows({"excluded": {}, "secure_aggregation": {"dropped": []}}) == []


@pytest.mark.parametrize("insecure, auth, transport", [
    (True, False, "plain text"), (False, False, "TLS"),
    (False, True, "TLS + node authentication")])
def test_hardening_result_table_says_when_the_run_is_plain_text(tmp_path, insecure, auth,
                                                               transport):
    """A loopback result names its transport (``LoopbackDeployment.run`` copies it into the
    result) and the table shows it; a plain-text run says so in the table, beside the warning
    ``--insecure`` prints on stderr before the run
    (``tests/federated/test_federated_signals.py``)."""
    from shiftlearn.cli import federated as cli
    from shiftlearn.federated.flower import LoopbackDeployment

    dep = LoopbackDeployment(2, tmp_path, insecure=insecure, auth=auth)   # starts nothing
    assert dep.transport == transport
    rows = dict(cli.summary_rows({"status": "ok", "transport": dep.transport}))
    assert ("plain text" in rows["transport"]) == insecure
    assert ("no TLS" in rows["transport"]) == insecure
    assert "transport" not in dict(cli.summary_rows({"status": "ok"}))   # the simulator


def test_hardening_app_folder_keeps_the_control_api_on_loopback(tmp_path, capsys):
    """The app folder's README deploys the SuperLink on 127.0.0.1 of the server, reached
    through SSH tunnels to the one port that also serves the Control API; the reverse-proxy
    alternative splits Flower's routes by path, so those paths are checked against Flower."""
    from flwr.supercore.constant import SUPERLINK_UVICORN_DEFAULT_PORT
    from flwr.superlink.routers.control.router import router as control
    from flwr.superlink.routers.fleet.router import router as fleet

    from shiftlearn.cli import main
    from shiftlearn.federated.flower import SUPERLINK_PORT

    assert main(["federated", "app", str(tmp_path / "app")]) == 0
    readme = (tmp_path / "app" / "README.md").read_text()
    port = SUPERLINK_PORT
    assert port == SUPERLINK_UVICORN_DEFAULT_PORT                 # Flower's one HTTP port
    assert f"flower-superlink --host 127.0.0.1 --port {port} " in readme
    assert f"ssh -N -L {port}:127.0.0.1:{port} " in readme
    assert f'address = "127.0.0.1:{port}"' in readme
    assert f"--superlink 127.0.0.1:{port} " in readme
    assert "0.0.0.0" not in readme
    assert "--enable-supernode-auth" in readme
    assert (control.prefix, fleet.prefix) == ("/v1/control", "/v1/fleet")
    assert "`/v1/fleet/`" in readme and "`/v1/control/`" in readme
    err = capsys.readouterr().err
    assert "README.md" in err and f"ssh -N -L {port}:127.0.0.1:{port}" in err


@pytest.mark.parametrize("protocol", ["oneshot", "iterative"])
def test_hardening_simulated_run_counts_rejected_replies_by_reason(protocol):
    """The simulator's result holds the guard's counts too, so ``simulate``'s table says how
    many duplicated and late replies were rejected, by reason; a perfect network shows none."""
    from shiftlearn.cli.federated import summary_rows
    from shiftlearn.federated import NetworkConditions

    job = {"protocol": protocol, "rounds": 3, "n-per-client": 30}
    res = simulate_job(job, NetworkConditions(duplicate=0.5, straggler=0.3, seed=0))
    assert res["rejections"].get("duplicate", 0) > 0
    assert res["rejections"].get("stale_round", 0) > 0
    row = dict(summary_rows(res))["replies rejected"]
    assert row == ", ".join(f"{k} {v}" for k, v in res["rejections"].items())
    clean = simulate_job(job)
    assert clean["rejections"] == {} and "replies rejected" not in dict(summary_rows(clean))
