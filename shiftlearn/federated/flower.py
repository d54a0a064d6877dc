"""Flower (``flwr``, Message API, Deployment Engine; no Ray) apps for both protocols.

``server_app`` and ``client_app`` carry the transport-neutral protocol of
:mod:`shiftlearn.federated`: every protocol message travels as
``RecordDict({"arrays": ArrayRecord, "meta": ConfigRecord, "job": ConfigRecord})`` built from
:func:`~shiftlearn.federated.encode`, and is checked by :func:`~shiftlearn.federated.decode` /
:class:`~shiftlearn.federated.ReplyGuard` on receipt exactly as in the simulator.

A job (keys and defaults: :data:`shiftlearn.federated._jobs.DEFAULTS`) runs as

1. ``query.hello``: each SuperNode answers its client id (``partition-id + 1`` from its
   ``--node-config``) and its local median-heuristic bandwidth; the server fixes
   ``sigma`` = their median (unless the job sets ``sigma``);
2. the protocol rounds (``query.fedrftca``): one-shot = statistics, then the ``W`` broadcast;
   iterative = ``rounds`` FedRF-TCA rounds;
3. iterative only: ``evaluate`` sends the final model to the target client, which reports its
   accuracy (the target's labels are used for this report only).

The ServerApp writes ``result-path`` (JSON: ``status``, timings, bytes, accuracy, rejections)
and ``result-path + ".npz"`` (``W``, ``C``/``eigenvalues``). It has no source-only
``baseline``: that needs the pooled sources, which a deployment across machines does not
have; :class:`~shiftlearn.federated._deploy.LoopbackDeployment` adds it (issue #14).
``flwr run`` exits 0 even when the ServerApp fails, so callers must read that file
(``status == "ok"``).

Secure aggregation (issue #22): a one-shot job with ``secure-aggregation = true`` replaces
step 2 by Flower's SecAgg+ (``SecAggPlusWorkflow`` on the server, driven from this
Message-API ``main`` through a ``LegacyContext`` and a one-round strategy, :class:`_SecureSum`;
``secaggplus_mod`` on the ClientApp's ``train`` handler, :func:`_secure_stats`). Each client
sends its statistics in the secure layout, encoded in exact fixed point
(:mod:`shiftlearn.federated._secagg`); the server only ever holds the masked vectors and their
sum, solves RF-TCA from the sum and sends ``W`` to the clients that contributed. Up to
``n - threshold`` clients may drop after the key exchange (their masks are rebuilt from the
others' shares); the model is then exact RF-TCA on the contributors' pooled data. Design
decisions and their limits: ``docs/federated.md`` (threat table).

Fault injection for tests and benchmarks: a SuperNode started with
``--node-config 'fail-stage="secagg-collect"'`` raises in the secure ``train`` handler, i.e.
it drops out after the key exchange, mid-protocol.

Byte counts: ``bytes_up``/``bytes_down`` count the protocol messages as the simulator does
(payload + JSON header); ``wire_bytes_up``/``wire_bytes_down`` count every Flower message
the ServerApp pushed or pulled (``Message.deflate`` of the message and its records, i.e. the
serialized objects Flower transfers; TLS framing not included), for every protocol.

Progress (issue #17 item 4): after each protocol round the ServerApp logs one line through
Flower's logger, :func:`round_line` (``shiftlearn round 2/5 done in 1.23 s (3 replies)``; the
total is ``?`` for the one-shot protocol, whose statistics round may be repeated). Flower
mirrors the ServerApp's output to the SuperLink, so the line reaches ``flwr run --stream`` and
``flwr log``; :meth:`~shiftlearn.federated._deploy.LoopbackDeployment.run` parses it
(``on_round``) to advance a round bar. The ServerApp draws nothing itself.

Needs the ``federated`` extra (``pip install shiftlearn[federated]``).
"""

from __future__ import annotations

import json
import logging
import time
import traceback
from pathlib import Path

import numpy as np
from flwr.app import Array, ArrayRecord, ConfigRecord, Context, Message, RecordDict
from flwr.client.mod import secaggplus_mod
from flwr.clientapp import ClientApp
from flwr.common import Code, FitIns, FitRes, Status, ndarrays_to_parameters
from flwr.common.logger import log as flwr_log
from flwr.compat.common import recorddict_compat as compat
from flwr.serverapp import Grid, ServerApp

from ..adaptation import rf_stats, rftca_from_stats
from ._data import load_client_data, local_bandwidth, n_classes_of, n_clients_of
from ._iterative import IterativeClient, IterativeServer
from ._jobs import DEFAULTS, iterative_config, oneshot_config, resolve_sigma
from ._messages import (
    PROTOCOL,
    PROTOCOL_VERSION,
    MessageError,
    ModelBroadcast,
    ProtocolSpec,
    decode,
    encode,
    message_nbytes,
)
from ._oneshot import OneShotClient, OneShotServer
from ._secagg import (
    FixedPointCodec,
    secure_arrays_to_stats,
    secure_layout,
    secure_stats_arrays,
)

__all__ = ["client_app", "server_app", "to_records", "from_records", "round_line",
           "wire_nbytes"]

log = logging.getLogger("shiftlearn.federated.flower")


def _job(context: Context) -> dict:
    cfg = dict(DEFAULTS)
    cfg.update({k: v for k, v in context.run_config.items() if k in DEFAULTS})
    return cfg


def to_records(arrays: dict, meta: dict, job: dict | None = None) -> RecordDict:
    """Protocol ``(arrays, meta)`` -> Flower ``RecordDict``."""
    rd = RecordDict({"arrays": ArrayRecord({k: Array(np.ascontiguousarray(v))
                                            for k, v in arrays.items()}),
                     "meta": ConfigRecord(dict(meta))})
    if job:
        rd["job"] = ConfigRecord(dict(job))
    return rd


def wire_nbytes(obj) -> int:
    """Serialized size of a Flower message (or record): ``deflate()`` of it and its children."""
    children = obj.children or {}
    return len(obj.deflate()) + sum(wire_nbytes(c) for c in children.values())


def from_records(content: RecordDict) -> tuple[dict, dict]:
    """Flower ``RecordDict`` -> protocol ``(arrays, meta)`` (no validation yet: decode does it)."""
    arrays = {k: a.numpy() for k, a in content["arrays"].items()} if "arrays" in content else {}
    meta = dict(content["meta"]) if "meta" in content else {}
    return arrays, meta


# ------------------------------------------------------------------------------- client side
client_app = ClientApp()


def _client_data(context: Context):
    cfg = _job(context)
    return cfg, load_client_data(cfg, int(context.node_config.get("partition-id", 0)))


@client_app.query("hello")
def _hello(msg: Message, context: Context) -> Message:
    cfg, data = _client_data(context)
    return Message(RecordDict({"hello": ConfigRecord({
        "client_id": data.client_id, "local_sigma": local_bandwidth(data.X),
        "protocol": PROTOCOL, "version": PROTOCOL_VERSION, "n_input": int(data.X.shape[1])})}),
        reply_to=msg)


def _status(msg: Message, status: str) -> Message:
    return Message(RecordDict({"meta": ConfigRecord({"status": status})}), reply_to=msg)


@client_app.query("fedrftca")
def _protocol(msg: Message, context: Context) -> Message:
    cfg, data = _client_data(context)
    sigma = float(msg.content["job"]["sigma"])
    n_clients = int(msg.content["job"]["n_clients"])
    arrays, meta = from_records(msg.content)
    kind = meta.get("kind")
    if kind == "train_request":
        ic = iterative_config(cfg, sigma)
        if ic.deep:
            from ._deep import model_spec

            spec = model_spec(ic, data.X.shape[1], data.n_classes, n_clients)
        else:
            spec = ProtocolSpec(ic.n_features, ic.n_components, data.n_classes, n_clients)
    else:
        oc = oneshot_config(cfg, sigma)
        spec = ProtocolSpec(oc.n_features, oc.n_components, data.n_classes, n_clients)
    try:
        req = decode(arrays, meta, spec)
    except MessageError as exc:
        log.warning("client %s rejected a request: %s", data.client_id, exc)
        return _status(msg, f"rejected:{exc.reason}")
    if kind == "train_request":
        if ic.deep:
            from ._deep import DeepClient

            client = DeepClient(data.client_id, data.X, data.y, ic, data.n_classes)
        else:
            client = IterativeClient(data.client_id, data.X, data.y, ic, data.n_classes)
        if "fed.arrays" in context.state:
            client.set_state({k: a.numpy() for k, a in context.state["fed.arrays"].items()},
                             dict(context.state["fed.scalars"]))
        reply = client.handle(req)
        st_arrays, st_scalars = client.get_state()
        context.state["fed.arrays"] = ArrayRecord({k: Array(np.ascontiguousarray(v))
                                                   for k, v in st_arrays.items()})
        context.state["fed.scalars"] = ConfigRecord(st_scalars)
    else:
        domain_ids = sorted([i for i in range(1, n_clients)] + [-n_clients])
        client = OneShotClient(data.client_id, data.X, data.y, data.domain_id, oc, domain_ids,
                               data.n_classes)
        if "fed.scalars" in context.state:
            client.last_round = int(context.state["fed.scalars"]["last_round"])
        reply = client.handle(req)
        context.state["fed.scalars"] = ConfigRecord({"last_round": client.last_round})
    if reply is None:
        return _status(msg, "ignored" if kind != "model_broadcast" else "ok")
    return Message(to_records(*encode(reply)), reply_to=msg)


@client_app.evaluate()
def _evaluate(msg: Message, context: Context) -> Message:
    cfg, data = _client_data(context)
    sigma = float(msg.content["job"]["sigma"])
    ic = iterative_config(cfg, sigma)
    model = {k: a.numpy() for k, a in msg.content["model"].items()}
    votes = [model.pop(k) for k in sorted(model) if k.startswith("vote_C_")]
    from ._run import IterativeResult

    acc = float("nan")
    if data.y_true is not None:
        res = IterativeResult(model["W"], model["C"], None, G=model.get("G"),
                              vote_C=dict(enumerate(votes)), n_classes=data.n_classes)
        acc = float(np.mean(res.predict(data.X, ic) == data.y_true))
    return Message(RecordDict({"metrics": ConfigRecord({"accuracy": acc,
                                                        "client_id": data.client_id})}),
                   reply_to=msg)


def _codec(cfg: dict, n_clients: int) -> FixedPointCodec:
    return FixedPointCodec(frac_bits=int(cfg["secagg-frac-bits"]),
                           int_bits=int(cfg["secagg-int-bits"]), n_parties=int(n_clients))


@client_app.train(mods=[secaggplus_mod])
def _secure_stats(msg: Message, context: Context) -> Message:
    """SecAgg+ stage "collect masked vectors": this client's one-shot statistics in the secure
    layout, as exact fixed-point limbs (``secaggplus_mod`` masks them before they leave)."""
    if context.node_config.get("fail-stage") == "secagg-collect":
        raise RuntimeError("fault injection (node config fail-stage=secagg-collect): this "
                           "client drops out after the SecAgg+ key exchange")
    cfg, data = _client_data(context)
    conf = compat.recorddict_to_fitins(msg.content, keep_input=True).config
    oc = oneshot_config(cfg, float(conf["sigma"]))
    omega = oc.omega(data.X.shape[1])
    stats = rf_stats(data.X, data.y, np.full(data.X.shape[0], data.domain_id, dtype=np.int64),
                     omega)
    limbs = _codec(cfg, int(conf["n_clients"])).encode(secure_stats_arrays(stats))
    res = FitRes(Status(Code.OK, "ok"), ndarrays_to_parameters(limbs), 1,
                 {"client_id": data.client_id, "fingerprint": stats.fingerprint})
    return Message(compat.fitres_to_recorddict(res, keep_input=True), reply_to=msg)


# ------------------------------------------------------------------------------- server side
server_app = ServerApp()


def round_line(done: int, total: int | None, seconds: float, replies: int, what: str = "") -> str:
    """The line the ServerApp logs after protocol round ``done`` of ``total`` (``None``: not
    known in advance); ``_deploy.ROUND_LINE`` parses it.

    >>> round_line(2, 5, 1.234, 3)
    'shiftlearn round 2/5 done in 1.23 s (3 replies)'
    >>> round_line(1, None, 0.5, 4, "SecAgg+ sum")
    'shiftlearn round 1/? done in 0.50 s (4 replies; SecAgg+ sum)'
    """
    extra = f"; {what}" if what else ""
    return (f"shiftlearn round {done}/{'?' if total is None else total} done in "
            f"{seconds:.2f} s ({replies} replies{extra})")


def _log_round(*args, **kw) -> None:
    flwr_log(logging.INFO, "%s", round_line(*args, **kw))


def _wait_for_nodes(grid: Grid, n: int, timeout: float) -> list[int]:
    t0 = time.monotonic()
    while True:
        nodes = sorted(grid.get_node_ids())
        if len(nodes) >= n:
            return nodes
        if time.monotonic() - t0 > timeout:
            raise TimeoutError(f"only {len(nodes)} of {n} SuperNodes connected "
                               f"within {timeout} s")
        time.sleep(0.2)


def _exchange(grid: Grid, messages: list[Message], timeout: float) -> tuple[dict, list]:
    """Push, then pull every 0.2 s until all replied or ``timeout``; returns
    ``({message_id: reply}, errors)`` (error replies are logged and returned separately)."""
    if not messages:
        return {}, []
    ids = list(grid.push_messages(messages))
    pending, got, errors = set(ids), {}, []
    t0 = time.monotonic()
    while pending and time.monotonic() - t0 < timeout:
        for rep in grid.pull_messages(list(pending)):
            mid = rep.metadata.reply_to_message_id
            pending.discard(mid)
            if rep.has_error():
                errors.append((mid, rep.error.code, rep.error.reason))
                log.warning("error reply %s: %s", rep.error.code, rep.error.reason)
            else:
                got[mid] = rep
        if pending:
            time.sleep(0.2)
    return dict(zip(ids, [got.get(i) for i in ids], strict=True)), errors


class _MeteredGrid:
    """A Flower ``Grid`` that counts the serialized bytes of every message pushed (down) and
    pulled (up), and whose ``send_and_receive`` polls every 0.2 s (Flower's polls every 3 s)."""

    def __init__(self, grid: Grid):
        self._grid = grid
        self.bytes_down = 0
        self.bytes_up = 0

    def __getattr__(self, name):
        return getattr(self._grid, name)

    def push_messages(self, messages):
        messages = list(messages)
        self.bytes_down += sum(wire_nbytes(m) for m in messages)
        return self._grid.push_messages(messages)

    def pull_messages(self, message_ids):
        replies = list(self._grid.pull_messages(message_ids))
        self.bytes_up += sum(wire_nbytes(m) for m in replies)
        return replies

    def send_and_receive(self, messages, *, timeout: float | None = None):
        ids = list(self.push_messages(messages))
        pending, out, t0 = set(ids), [], time.monotonic()
        while pending and (timeout is None or time.monotonic() - t0 < timeout):
            for rep in self.pull_messages(list(pending)):
                pending.discard(rep.metadata.reply_to_message_id)
                out.append(rep)
            if pending:
                time.sleep(0.2)
        return out


@server_app.main()
def _main(grid: Grid, context: Context) -> None:
    cfg = _job(context)
    result: dict = {"status": "running", "job": cfg, "started": time.time()}
    path = Path(str(cfg["result-path"])) if cfg["result-path"] else None
    metered = _MeteredGrid(grid)
    try:
        _run(metered, cfg, result, path, context)
        result["status"] = "ok"
    except Exception as exc:  # record, then let Flower mark the run failed
        result["status"] = "error"
        result["error"] = f"{type(exc).__name__}: {exc}"
        result["traceback"] = traceback.format_exc()
        raise
    finally:
        result["wall_s"] = time.time() - result.pop("started")
        result.update(wire_bytes_up=metered.bytes_up, wire_bytes_down=metered.bytes_down)
        if path is not None:
            path.write_text(json.dumps(result, indent=2, default=str))


def _run(grid: Grid, cfg: dict, result: dict, path: Path | None, context: Context) -> None:
    n_clients = n_clients_of(cfg)
    timeout = float(cfg["round-timeout-s"])
    nodes = _wait_for_nodes(grid, n_clients, float(cfg["wait-nodes-s"]))
    t0 = time.monotonic()
    hello = [Message(RecordDict({"meta": ConfigRecord({"protocol": PROTOCOL})}),
                     dst_node_id=n, message_type="query.hello", group_id="hello")
             for n in nodes]
    replies, _ = _exchange(grid, hello, timeout)
    node_of, sigmas, n_input = {}, [], None
    for m, rep in zip(hello, replies.values(), strict=True):
        if rep is None:
            continue
        h = rep.content["hello"]
        if h["protocol"] != PROTOCOL or h["version"] != PROTOCOL_VERSION:
            log.warning("node %s speaks %s v%s; left out", m.metadata.dst_node_id,
                        h["protocol"], h["version"])
            continue
        cid = int(h["client_id"])
        if cid in node_of:  # fail closed: never let a second node take over a client's slot
            raise RuntimeError(f"SuperNodes {node_of[cid]} and {m.metadata.dst_node_id} both "
                               f"claim client {cid}; check each SuperNode's --node-config "
                               "partition-id, and that only the federation's nodes can join "
                               "(TLS + SuperNode authentication)")
        node_of[cid] = m.metadata.dst_node_id
        sigmas.append(float(h["local_sigma"]))
        n_input = int(h["n_input"])
    if sorted(node_of) != list(range(1, n_clients + 1)):
        raise RuntimeError(f"expected clients 1..{n_clients}, got {sorted(node_of)} "
                           "(check each SuperNode's --node-config partition-id)")
    sigma = resolve_sigma(cfg, sigmas)
    result.update(sigma=sigma, nodes={str(k): v for k, v in node_of.items()},
                  hello_s=time.monotonic() - t0)
    job = {"sigma": sigma, "n_clients": n_clients}
    n_classes = n_classes_of(cfg)
    if cfg["secure-aggregation"]:
        if cfg["protocol"] != "oneshot":
            raise ValueError("secure-aggregation=true needs protocol=oneshot: the iterative "
                             "protocol exchanges per-client embeddings (docs/federated.md)")
        _run_secure(grid, cfg, result, path, context, node_of, job, n_input, t0)
        return
    if cfg["protocol"] == "oneshot":
        domain_ids = sorted(list(range(1, n_clients)) + [-n_clients])
        server = OneShotServer(oneshot_config(cfg, sigma), list(node_of), domain_ids,
                               n_classes, n_input)
        max_rounds = server.config.max_rounds + 1
    else:
        ic = iterative_config(cfg, sigma)
        deep: dict = {}
        if ic.deep:
            from ._deep import initial_parts, model_spec

            deep = {"init": initial_parts(ic, n_input, n_classes),
                    "spec": model_spec(ic, n_input, n_classes, n_clients)}
        server = IterativeServer(ic, list(range(1, n_clients)), n_clients, n_classes, **deep)
        max_rounds = int(cfg["rounds"])
    rounds, up, down = [], 0, 0
    for _ in range(max_rounds):
        tr = time.monotonic()
        reqs = server.start_round()
        msgs, mb = [], 0
        for cid, req in reqs.items():
            arrays, meta = encode(req)
            mb += message_nbytes(arrays, meta)
            msgs.append(Message(to_records(arrays, meta, job), dst_node_id=node_of[cid],
                                message_type="query.fedrftca", group_id=str(server.round)))
        down += mb
        replies, errors = _exchange(grid, msgs, timeout)
        rb = 0
        for rep in replies.values():
            if rep is None:
                continue
            arrays, meta = from_records(rep.content)
            if "status" in meta:
                continue
            rb += message_nbytes(arrays, meta)
            server.receive(arrays, meta)
        up += rb
        info = server.finish_round()
        rounds.append({"round": server.round, "seconds": time.monotonic() - tr,
                       "down_bytes": mb, "up_bytes": rb, "errors": len(errors),
                       "replies": sum(r is not None for r in replies.values())})
        _log_round(len(rounds), max_rounds if cfg["protocol"] != "oneshot" else None,
                   rounds[-1]["seconds"], rounds[-1]["replies"])
        if cfg["protocol"] == "oneshot" and server.done:
            break
        del info
    result.update(rounds=rounds, bytes_up=up, bytes_down=down,
                  protocol_s=time.monotonic() - t0, rejections=server.guard.counts())
    arrays = {"W": server.W}
    if cfg["protocol"] == "oneshot":
        if server.W is None:
            raise RuntimeError(f"statistics incomplete after {max_rounds} rounds: got "
                               f"{sorted(server.collected)}")
        arrays["eigenvalues"] = server.eigenvalues
    else:
        arrays["C"] = server.C
        model = {"W": server.W, "C": server.C}
        if server.G is not None:
            arrays["G"] = model["G"] = server.G
        if server.config.vote:
            result["voters"] = sorted(server.vote_C)
            model.update({f"vote_C_{k}": v for k, v in sorted(server.vote_C.items())})
        ev = Message(RecordDict({"model": ArrayRecord({k: Array(np.ascontiguousarray(v))
                                                       for k, v in model.items()}),
                                 "job": ConfigRecord(job)}),
                     dst_node_id=node_of[n_clients], message_type="evaluate", group_id="eval")
        rep, _ = _exchange(grid, [ev], timeout)
        rep = next(iter(rep.values()))
        if rep is not None:
            result["target_accuracy"] = float(rep.content["metrics"]["accuracy"])
    if path is not None:
        np.savez(str(path) + ".npz", **arrays)


# ----------------------------------------------------------------- secure aggregation (SecAgg+)
class _SecureSum:
    """A one-round Flower ``Strategy`` for ``SecAggPlusWorkflow``: every node takes part, and
    the aggregate (what SecAgg+ reveals) is recorded instead of being averaged again."""

    def __init__(self, fit_config: dict):
        self.fit_config = dict(fit_config)
        self.aggregate: list[np.ndarray] | None = None
        self.contributors: dict[int, dict] = {}
        self.failures: list[str] = []

    # the Strategy interface SecAggPlusWorkflow calls
    def configure_fit(self, server_round, parameters, client_manager):
        return [(proxy, FitIns(parameters, dict(self.fit_config)))
                for _, proxy in sorted(client_manager.all().items())]

    def aggregate_fit(self, server_round, results, failures):
        from flwr.common import parameters_to_ndarrays

        self.failures = sorted({str(f) for f in failures})  # the workflow lists some twice
        if results:
            self.aggregate = parameters_to_ndarrays(results[0][1].parameters)
            self.contributors = {int(proxy.node_id): dict(res.metrics)
                                 for proxy, res in results}
        return None, {}


def _secure_threshold(cfg: dict, n: int) -> int:
    t = int(cfg["secagg-threshold"]) or n - 1
    if n < 3:
        raise ValueError(f"secure aggregation needs at least 3 clients (got {n}): with 2, "
                         "each could subtract its own statistics from what the model reveals")
    if not 2 <= t <= n - 1:
        raise ValueError(f"secagg-threshold={t}: it must be between 2 and {n - 1} "
                         f"(n_clients - 1) for {n} clients, or 0 for n_clients - 1")
    return t


def _run_secure(grid, cfg: dict, result: dict, path: Path | None, context: Context,
                node_of: dict, job: dict, n_input: int, t0: float) -> None:
    """One-shot RF-TCA through Flower's SecAgg+ (see the module docstring)."""
    from flwr.server.client_manager import SimpleClientManager
    from flwr.server.compat.grid_client_proxy import GridClientProxy
    from flwr.server.compat.legacy_context import LegacyContext
    from flwr.server.workflow import SecAggPlusWorkflow
    from flwr.server.workflow.constant import MAIN_CONFIGS_RECORD, MAIN_PARAMS_RECORD
    from flwr.server.workflow.constant import Key as WorkflowKey

    from ..adaptation._rf_stats import omega_fingerprint

    n = len(node_of)
    threshold = _secure_threshold(cfg, n)
    sigma = float(job["sigma"])
    oc = oneshot_config(cfg, sigma)
    codec = _codec(cfg, n)
    fingerprint = omega_fingerprint(oc.omega(n_input))
    strategy = _SecureSum({"sigma": sigma, "n_clients": n})
    manager = SimpleClientManager()
    for nid in node_of.values():
        manager.register(GridClientProxy(node_id=nid, grid=grid, run_id=grid.run.run_id))
    legacy = LegacyContext(context, strategy=strategy, client_manager=manager)
    legacy.state.config_records[MAIN_CONFIGS_RECORD] = ConfigRecord(
        {WorkflowKey.CURRENT_ROUND: 1})
    legacy.state.array_records[MAIN_PARAMS_RECORD] = ArrayRecord()
    workflow = SecAggPlusWorkflow(
        num_shares=n, reconstruction_threshold=threshold, max_weight=1.0,
        clipping_range=codec.clipping_range, quantization_range=codec.quantization_range,
        modulus_range=codec.modulus_range, timeout=float(cfg["round-timeout-s"]))
    ts = time.monotonic()
    workflow(grid, legacy)
    secagg_s = time.monotonic() - ts
    _log_round(1, 2, secagg_s, len(strategy.contributors), "SecAgg+ sum")
    if strategy.aggregate is None:
        raise RuntimeError(f"SecAgg+ halted before the sum was revealed (threshold "
                           f"{threshold} of {n}; failures: {strategy.failures}); see the "
                           "ServerApp log")
    client_of = {v: k for k, v in node_of.items()}
    contributors = sorted(client_of[nid] for nid in strategy.contributors)
    bad = [client_of[nid] for nid, m in strategy.contributors.items()
           if m.get("fingerprint") != fingerprint]
    if bad:
        raise RuntimeError(f"clients {sorted(bad)} computed their statistics with other "
                           "frequencies (seed/sigma/n-features differ); the secure sum mixes "
                           "feature maps and is discarded")
    k = len(contributors)
    sums = codec.decode(codec.limb_sums(strategy.aggregate, k), k,
                        secure_layout(2 * oc.n_features))
    stats = secure_arrays_to_stats(sums, 2 * oc.n_features, fingerprint)
    W, eigenvalues = rftca_from_stats(stats, oc.n_components, oc.mu, penalty=oc.penalty)
    tb = time.monotonic()
    msgs = []
    for cid in contributors:
        arrays, meta = encode(ModelBroadcast(round=1, client_id=cid, W=W,
                                             eigenvalues=eigenvalues))
        msgs.append(Message(to_records(arrays, meta, job), dst_node_id=node_of[cid],
                            message_type="query.fedrftca", group_id="broadcast"))
    replies, errors = _exchange(grid, msgs, float(cfg["round-timeout-s"]))
    _log_round(2, 2, time.monotonic() - tb, sum(r is not None for r in replies.values()),
               "W broadcast")
    result.update(
        secure_aggregation={
            "contributors": contributors,
            "dropped": sorted(set(node_of) - set(contributors)),
            "threshold": threshold, "frac_bits": codec.frac_bits, "int_bits": codec.int_bits,
            "limb_bits": codec.limb_bits, "n_limbs": codec.n_limbs,
            "quantization_range": codec.quantization_range,
            "modulus_range": codec.modulus_range, "failures": strategy.failures,
            "max_entry_error": k * 2.0 ** -(codec.frac_bits + 1)},
        rounds=[{"round": "secagg+", "seconds": secagg_s},
                {"round": "broadcast", "seconds": time.monotonic() - tb,
                 "errors": len(errors),
                 "replies": sum(r is not None for r in replies.values())}],
        protocol_s=time.monotonic() - t0, rejections={},
        side_counts=[int(c) for c in sums["side_counts"]])
    if path is not None:
        np.savez(str(path) + ".npz", W=W, eigenvalues=eigenvalues)
