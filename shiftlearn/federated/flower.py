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
from flwr.clientapp import ClientApp
from flwr.serverapp import Grid, ServerApp

from ._data import agree_bandwidth, load_client_data, local_bandwidth
from ._iterative import IterativeClient, IterativeServer, predict
from ._jobs import DEFAULTS, iterative_config, oneshot_config
from ._messages import (
    PROTOCOL,
    PROTOCOL_VERSION,
    MessageError,
    ProtocolSpec,
    decode,
    encode,
    message_nbytes,
)
from ._oneshot import OneShotClient, OneShotServer

__all__ = ["client_app", "server_app", "to_records", "from_records"]

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
    W = msg.content["model"]["W"].numpy()
    C = msg.content["model"]["C"].numpy()
    from ..kernels import rff_map

    acc = float("nan")
    if data.y_true is not None:
        Z = rff_map(data.X, ic.omega(data.X.shape[1]))
        acc = float(np.mean(predict(Z, W, C) == data.y_true))
    return Message(RecordDict({"metrics": ConfigRecord({"accuracy": acc,
                                                        "client_id": data.client_id})}),
                   reply_to=msg)


# ------------------------------------------------------------------------------- server side
server_app = ServerApp()


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


@server_app.main()
def _main(grid: Grid, context: Context) -> None:
    cfg = _job(context)
    result: dict = {"status": "running", "job": cfg, "started": time.time()}
    path = Path(str(cfg["result-path"])) if cfg["result-path"] else None
    try:
        _run(grid, cfg, result, path)
        result["status"] = "ok"
    except Exception as exc:  # record, then let Flower mark the run failed
        result["status"] = "error"
        result["error"] = f"{type(exc).__name__}: {exc}"
        result["traceback"] = traceback.format_exc()
        raise
    finally:
        result["wall_s"] = time.time() - result.pop("started")
        if path is not None:
            path.write_text(json.dumps(result, indent=2, default=str))


def _run(grid: Grid, cfg: dict, result: dict, path: Path | None) -> None:
    n_clients = int(cfg["num-clients"]) if cfg["dataset"] == "synthetic" else 4
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
        node_of[int(h["client_id"])] = m.metadata.dst_node_id
        sigmas.append(float(h["local_sigma"]))
        n_input = int(h["n_input"])
    if sorted(node_of) != list(range(1, n_clients + 1)):
        raise RuntimeError(f"expected clients 1..{n_clients}, got {sorted(node_of)} "
                           "(check each SuperNode's --node-config partition-id)")
    sigma = float(cfg["sigma"]) or agree_bandwidth(sigmas)
    result.update(sigma=sigma, nodes={str(k): v for k, v in node_of.items()},
                  hello_s=time.monotonic() - t0)
    job = {"sigma": sigma, "n_clients": n_clients}
    n_classes = 10 if cfg["dataset"] == "office_caltech" else 3
    if cfg["protocol"] == "oneshot":
        domain_ids = sorted(list(range(1, n_clients)) + [-n_clients])
        server = OneShotServer(oneshot_config(cfg, sigma), list(node_of), domain_ids,
                               n_classes, n_input)
        max_rounds = server.config.max_rounds + 1
    else:
        server = IterativeServer(iterative_config(cfg, sigma), list(range(1, n_clients)),
                                 n_clients, n_classes)
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
        ev = Message(RecordDict({"model": ArrayRecord({"W": Array(server.W),
                                                       "C": Array(server.C)}),
                                 "job": ConfigRecord(job)}),
                     dst_node_id=node_of[n_clients], message_type="evaluate", group_id="eval")
        rep, _ = _exchange(grid, [ev], timeout)
        rep = next(iter(rep.values()))
        if rep is not None:
            result["target_accuracy"] = float(rep.content["metrics"]["accuracy"])
    if path is not None:
        np.savez(str(path) + ".npz", **arrays)
