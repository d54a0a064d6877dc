"""Flower (``flwr``, Message API, Deployment Engine; no Ray) apps for both protocols.

``server_app`` and ``client_app`` carry the transport-neutral protocol of
:mod:`shiftlearn.federated`: every protocol message travels as
``RecordDict({"arrays": ArrayRecord, "meta": ConfigRecord, "job": ConfigRecord})`` built from
:func:`~shiftlearn.federated.encode`, and is checked by :func:`~shiftlearn.federated.decode` /
:class:`~shiftlearn.federated.ReplyGuard` on receipt exactly as in the simulator.

A job (keys and defaults: :data:`shiftlearn.federated.jobs.DEFAULTS`) runs as

1. ``query.hello``: each SuperNode answers its client id (``partition-id + 1`` from its
   ``--node-config``; a ``dataset="files"`` job reads the node's own table, ``data-file``
   there, else the job's entry for it) and its local median-heuristic bandwidth; the server fixes
   ``sigma`` = their median (unless the job's ``bandwidth`` is a number);
2. the protocol rounds (``query.fedrftca``): one-shot = statistics, then the ``W`` broadcast;
   iterative = ``rounds`` FedRF-TCA rounds;
3. iterative only: ``evaluate`` sends the final model to the target client, which reports its
   accuracy (the target's labels are used for this report only).

The ServerApp writes ``result-path`` (JSON: ``status``, timings, bytes, accuracy, rejections)
and ``result-path + ".npz"`` (``W``, ``C``/``eigenvalues``). It has no source-only
``baseline``: that needs the pooled sources, which a deployment across machines does not
have; :class:`~shiftlearn.federated.flower.LoopbackDeployment` adds it.
``flwr run`` exits 0 even when the ServerApp fails, so callers must read that file
(``status == "ok"``).

Secure aggregation: a one-shot job with ``secure-aggregation = true`` replaces
step 2 by Flower's SecAgg+ (``SecAggPlusWorkflow`` on the server, driven from this
Message-API ``main`` through a ``LegacyContext`` and a one-round strategy, :class:`_SecureSum`;
``secaggplus_mod`` on the ClientApp's ``train`` handler, :func:`_secure_stats`). Each client
sends its statistics in the secure layout, encoded in exact fixed point
(:mod:`shiftlearn.federated._secagg`); the server only ever holds the masked vectors and their
sum, solves RF-TCA from the sum and sends ``W`` to the clients that contributed. Up to
``n - threshold`` clients may drop after the key exchange (their masks are rebuilt from the
others' shares); the model is then exact RF-TCA on the contributors' pooled data. Its limits:
``docs/federated.md`` (threat table).

Fault injection for tests and benchmarks: a SuperNode started with
``--node-config 'fail-stage="secagg-collect"'`` raises in the secure ``train`` handler, i.e.
it drops out after the key exchange, mid-protocol; one started with ``--node-config
'forge-client-id=1'`` sends its first protocol reply (its own, honest content) under client
1's id, as an impersonating node would, then answers normally.

Byte counts: ``bytes_up``/``bytes_down`` count the protocol messages as the simulator does
(payload + JSON header); ``wire_bytes_up``/``wire_bytes_down`` count every Flower message
the ServerApp pushed or pulled (``Message.deflate`` of the message and its records, i.e. the
serialized objects Flower transfers; TLS framing not included), for every protocol.

Progress: after each protocol round the ServerApp logs one line through
Flower's logger, :func:`round_line` (``shiftlearn round 2/5 done in 1.23 s (3 replies)``; the
total is ``?`` for the one-shot protocol, whose statistics round may be repeated). Flower
mirrors the ServerApp's output to the SuperLink, so the line reaches ``flwr run --stream`` and
``flwr log``; :meth:`~shiftlearn.federated.flower.LoopbackDeployment.run` parses it
(``on_round``) to advance a round bar. The ServerApp draws nothing itself.

Needs the ``federated`` extra (``pip install shiftlearn[federated]``).
"""

from __future__ import annotations

import json
import logging
import time
import traceback
from io import BytesIO
from pathlib import Path

import numpy as np
from flwr.app import Array, ArrayRecord, ConfigRecord, Context, Message, RecordDict
from flwr.client.mod import secaggplus_mod
from flwr.clientapp import ClientApp
from flwr.common import Code, FitIns, FitRes, Status, ndarrays_to_parameters
from flwr.common.logger import log as flwr_log
from flwr.compat.common import recorddict_compat as compat
from flwr.serverapp import Grid, ServerApp

from ...adaptation import rf_stats, rftca_from_stats
from .._data import load_client_data, local_bandwidth, n_classes_of, n_clients_of
from .._iterative import IterativeClient, IterativeServer
from .._messages import (
    PROTOCOL,
    PROTOCOL_VERSION,
    MessageError,
    ModelBroadcast,
    ProtocolSpec,
    decode,
    encode,
    expected_sizes,
    message_nbytes,
)
from .._oneshot import OneShotClient, OneShotServer
from .._secagg import (
    FixedPointCodec,
    secure_arrays_to_stats,
    secure_layout,
    secure_stats_arrays,
)
from ..jobs import (
    DEFAULTS,
    FORMER_KEYS,
    former_keys,
    iterative_config,
    oneshot_config,
    resolve_sigma,
)

__all__ = ["client_app", "server_app", "to_records", "from_records", "reply_from_records",
           "round_line", "wire_nbytes"]

log = logging.getLogger("shiftlearn.federated.flower")


def _job(context: Context) -> dict:
    """The job of a run: :data:`DEFAULTS`, then the run config's keys (a former key, such as
    ``sigma`` in an app folder written before ``bandwidth``, mapped with a warning)."""
    given = {k: v for k, v in context.run_config.items() if k in DEFAULTS or k in FORMER_KEYS}
    return former_keys({**DEFAULTS, **given}, given)


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


def _npy_layout(data: bytes) -> tuple[tuple, np.dtype, int]:
    """``(shape, dtype, header length)`` of a ``.npy`` payload, read from its header only."""
    f = BytesIO(data)
    version = np.lib.format.read_magic(f)
    read = (np.lib.format.read_array_header_1_0 if version == (1, 0)
            else np.lib.format.read_array_header_2_0)
    shape, _, dtype = read(f)
    return tuple(int(n) for n in shape), np.dtype(dtype), f.tell()


def reply_from_records(content: RecordDict, sizes: dict[str, int]) -> tuple[dict, dict]:
    """A reply's Flower ``RecordDict`` -> protocol ``(arrays, meta)``, refusing anything that
    is not what the job's dimensions allow *before* a payload is turned into an array.

    ``sizes``: :func:`~shiftlearn.federated.expected_sizes` of the expected kind. Each
    ``Array`` must carry a float64 ``.npy`` payload whose header (read alone) declares at most
    that many entries and exactly as many bytes as it holds; only then is it decoded. Flower
    has already pulled the whole message into the ServerApp at this point (it offers no
    per-message hook on the SuperLink), so the cap bounds what is decoded and kept, not what
    crosses the network. Raises :class:`~shiftlearn.federated.MessageError`: ``bad_record``
    (not an ``ArrayRecord``/``ConfigRecord``, an undecodable payload), ``unexpected_array``,
    ``bad_dtype``, ``too_large``.
    """
    def fail(reason, detail):
        raise MessageError(reason, detail)

    try:
        meta_rec = content["meta"] if "meta" in content else None
        arr_rec = content["arrays"] if "arrays" in content else None
    except Exception as exc:  # a RecordDict Flower itself cannot read
        fail("bad_record", f"unreadable records ({type(exc).__name__}: {exc})")
    if meta_rec is not None and not isinstance(meta_rec, ConfigRecord):
        fail("bad_record", f"meta is a {type(meta_rec).__name__}, not a ConfigRecord")
    meta = dict(meta_rec) if meta_rec is not None else {}
    if arr_rec is None:
        return {}, meta
    if not isinstance(arr_rec, ArrayRecord):
        fail("bad_record", f"arrays is a {type(arr_rec).__name__}, not an ArrayRecord")
    names = list(arr_rec.keys())
    extra = sorted(set(names) - set(sizes))
    if extra:
        fail("unexpected_array", f"array(s) {extra[:5]} are not part of this reply")
    layouts = {}
    for name in names:
        a = arr_rec[name]
        data = getattr(a, "data", None)
        if not isinstance(a, Array) or not isinstance(data, bytes):
            fail("bad_record", f"array {name!r} is not a Flower Array with a payload")
        if len(data) > 8 * sizes[name] + 4096:
            fail("too_large", f"array {name!r} carries {len(data)} bytes; the job's "
                              f"dimensions allow {sizes[name]} float64 entries")
        try:
            shape, dtype, header = _npy_layout(data)
        except Exception as exc:
            fail("bad_record", f"array {name!r} has no readable .npy header "
                               f"({type(exc).__name__}: {exc})")
        if dtype != np.float64:
            fail("bad_dtype", f"array {name!r} has dtype {dtype}, expected float64")
        n = int(np.prod(shape, dtype=np.int64)) if shape else 1
        if n > sizes[name] or any(d < 0 for d in shape):
            fail("too_large", f"array {name!r} declares shape {shape}; the job's dimensions "
                              f"allow {sizes[name]} entries")
        if header + 8 * n != len(data):
            fail("bad_record", f"array {name!r} declares {8 * n} bytes of data but carries "
                               f"{len(data) - header}")
        layouts[name] = a
    arrays = {}
    for name, a in layouts.items():
        try:
            arrays[name] = a.numpy()
        except Exception as exc:
            fail("bad_record", f"array {name!r} does not decode ({type(exc).__name__}: {exc})")
    return arrays, meta


# ------------------------------------------------------------------------------- client side
client_app = ClientApp()


def _client_data(context: Context):
    """The job and this SuperNode's rows: ``partition-id`` from its ``--node-config`` and,
    for ``dataset="files"``, its own table ``data-file`` there (else the job's entry)."""
    cfg = _job(context)
    data_file = context.node_config.get("data-file")
    return cfg, load_client_data(cfg, int(context.node_config.get("partition-id", 0)),
                                 None if data_file is None else str(data_file))


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
            from .._deep import model_spec

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
            from .._deep import DeepClient

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
    arrays, meta = encode(reply)
    forged = context.node_config.get("forge-client-id")
    if forged is not None and req.round == 1:   # fault injection (module docstring)
        meta["client_id"] = int(forged)
    return Message(to_records(arrays, meta), reply_to=msg)


@client_app.evaluate()
def _evaluate(msg: Message, context: Context) -> Message:
    cfg, data = _client_data(context)
    sigma = float(msg.content["job"]["sigma"])
    ic = iterative_config(cfg, sigma)
    model = {k: a.numpy() for k, a in msg.content["model"].items()}
    votes = [model.pop(k) for k in sorted(model) if k.startswith("vote_C_")]
    from .._run import IterativeResult

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


def _register(hello: list[Message], replies: dict, n_clients: int):
    """The hello round: ``(node_of, sigmas, n_input, excluded)``.

    A node is registered as the client it claims when its answer is well formed: the
    protocol and version spoken here, a client id in ``1..n_clients``, a finite positive
    ``local_sigma`` and a positive integer ``n_input``. ``n_input`` must be the one a strict
    majority of the well-formed answers give; a node with another value, or a malformed
    answer, is excluded (``excluded``: client id -> reason, one log line each naming the node)
    and the run goes on without it. Two nodes claiming one client id stop the run (fail
    closed: which one is genuine cannot be told from here).
    """
    node_of, sigma_of, n_input_of, excluded = {}, {}, {}, {}
    for m, rep in zip(hello, replies.values(), strict=True):
        if rep is None:
            continue
        node = m.metadata.dst_node_id
        try:
            h = rep.content["hello"]
            if not isinstance(h, ConfigRecord):
                raise TypeError(f"hello is a {type(h).__name__}")
            h = dict(h)
        except Exception as exc:
            log.warning("hello: node %s left out (bad_record): %s", node, exc)
            continue
        if h.get("protocol") != PROTOCOL or h.get("version") != PROTOCOL_VERSION:
            log.warning("node %s speaks %s v%s; left out", node, h.get("protocol"),
                        h.get("version"))
            continue
        cid = h.get("client_id")
        if (not isinstance(cid, int) or isinstance(cid, bool)
                or not 1 <= cid <= n_clients):
            log.warning("hello: node %s left out (bad_client_id): client_id %r is not one of "
                        "1..%s", node, cid, n_clients)
            continue
        if cid in node_of:  # fail closed: never let a second node take over a client's slot
            raise RuntimeError(f"SuperNodes {node_of[cid]} and {node} both "
                               f"claim client {cid}; check each SuperNode's --node-config "
                               "partition-id, and that only the federation's nodes can join "
                               "(TLS + SuperNode authentication)")
        node_of[cid] = node
        sig, n_in = h.get("local_sigma"), h.get("n_input")
        if (not isinstance(sig, int | float) or isinstance(sig, bool)
                or not (np.isfinite(sig) and sig > 0)):
            excluded[cid] = f"bad_sigma: local_sigma {sig!r} is not finite and positive"
        elif not isinstance(n_in, int) or isinstance(n_in, bool) or n_in < 1:
            excluded[cid] = f"bad_n_input: n_input {n_in!r} is not a positive integer"
        else:
            sigma_of[cid], n_input_of[cid] = float(sig), n_in
    values = sorted(n_input_of.values())
    agreed = max(set(values), key=values.count) if values else None
    if agreed is not None and 2 * values.count(agreed) <= len(values):
        raise RuntimeError(f"no strict majority agrees on n_input: {n_input_of} (client id -> "
                           "n_input); the clients' feature counts must match")
    for cid, n_in in n_input_of.items():
        if n_in != agreed:
            excluded[cid] = (f"bad_n_input: n_input {n_in} differs from {agreed}, the value "
                             "the majority agreed on")
    for cid, why in sorted(excluded.items()):
        log.warning("hello: rejected node %s (client %s): %s", node_of[cid], cid, why)
        del node_of[cid]
        sigma_of.pop(cid, None)
    return node_of, [sigma_of[c] for c in sorted(sigma_of)], agreed, excluded


def _admit_reply(server, rep: Message, client_of: dict, sizes: dict) -> int:
    """Hand one protocol reply to ``server`` (a one-shot or iterative server) from the node
    that sent it; returns its protocol bytes (0 when refused before decoding).

    The reply is tied to its node: Flower's ``src_node_id`` (the SuperLink only stores a
    reply from the node the request went to, and with SuperNode authentication that node
    proved its key) maps to the client id the node registered at hello, and the server's
    guard rejects a reply that claims any other (``impersonation``). Records are read by
    :func:`reply_from_records` within ``sizes``. Every refusal is one log line naming the
    client, the node and the reason; nothing here raises on what a node sends.
    """
    node = rep.metadata.src_node_id
    cid = client_of.get(node)
    if cid is None:
        server.guard.reject(server.round, None, "unknown_node",
                            f"reply from node {node}, which registered no client")
        return 0
    try:
        arrays, meta = reply_from_records(rep.content, sizes)
    except MessageError as exc:
        server.guard.reject(server.round, cid, exc.reason, f"{exc} (node {node})")
        return 0
    if set(meta) == {"status"} and not arrays:  # a client's "ignored"/"rejected:..." note
        return 0
    server.receive(arrays, meta, sender=cid, node=node)
    return message_nbytes(arrays, meta)


def _reported_accuracy(rep: Message) -> float | None:
    """The target's accuracy from its evaluation reply: a float in [0, 1] or NaN (no labels
    to check), or None when the reply carries nothing of the kind."""
    try:
        acc = rep.content["metrics"]["accuracy"]
    except Exception:
        return None
    if not isinstance(acc, float | int) or isinstance(acc, bool):
        return None
    acc = float(acc)
    return acc if np.isnan(acc) or 0.0 <= acc <= 1.0 else None


def _run(grid: Grid, cfg: dict, result: dict, path: Path | None, context: Context) -> None:
    n_clients = n_clients_of(cfg)
    timeout = float(cfg["round-timeout-s"])
    nodes = _wait_for_nodes(grid, n_clients, float(cfg["wait-nodes-s"]))
    t0 = time.monotonic()
    hello = [Message(RecordDict({"meta": ConfigRecord({"protocol": PROTOCOL})}),
                     dst_node_id=n, message_type="query.hello", group_id="hello")
             for n in nodes]
    replies, _ = _exchange(grid, hello, timeout)
    node_of, sigmas, n_input, excluded = _register(hello, replies, n_clients)
    if sorted(set(node_of) | set(excluded)) != list(range(1, n_clients + 1)):
        raise RuntimeError(f"expected clients 1..{n_clients}, got {sorted(node_of)} "
                           "(check each SuperNode's --node-config partition-id)")
    if n_clients not in node_of or len(node_of) < 2:
        raise RuntimeError(f"too few clients left after the hello checks (registered "
                           f"{sorted(node_of)}, excluded {excluded}); the run needs the target "
                           f"(client {n_clients}) and at least one source")
    sigma = resolve_sigma(cfg, sigmas)
    result.update(sigma=sigma, nodes={str(k): v for k, v in node_of.items()},
                  hello_s=time.monotonic() - t0)
    if excluded:
        result["excluded"] = {str(k): v for k, v in sorted(excluded.items())}
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
            from .._deep import initial_parts, model_spec

            deep = {"init": initial_parts(ic, n_input, n_classes),
                    "spec": model_spec(ic, n_input, n_classes, n_clients)}
        server = IterativeServer(ic, list(range(1, n_clients)), n_clients, n_classes, **deep)
        max_rounds = int(cfg["rounds"])
    client_of = {node: cid for cid, node in node_of.items()}
    sizes = expected_sizes("stats_reply" if cfg["protocol"] == "oneshot" else "train_reply",
                           server.spec, stats_shapes=server.guard.stats_shapes)
    rounds, up, down = [], 0, 0
    for _ in range(max_rounds):
        tr = time.monotonic()
        reqs = server.start_round()
        msgs, mb = [], 0
        for cid, req in reqs.items():
            if cid not in node_of:  # excluded at hello: it never hears from the server
                continue
            arrays, meta = encode(req)
            mb += message_nbytes(arrays, meta)
            msgs.append(Message(to_records(arrays, meta, job), dst_node_id=node_of[cid],
                                message_type="query.fedrftca", group_id=str(server.round)))
        down += mb
        replies, errors = _exchange(grid, msgs, timeout)
        rb = sum(_admit_reply(server, rep, client_of, sizes)
                 for rep in replies.values() if rep is not None)
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
            acc = _reported_accuracy(rep)
            if acc is None:
                server.guard.reject(server.round, n_clients, "bad_report",
                                    f"the evaluation reply carries no accuracy in [0, 1] "
                                    f"(node {rep.metadata.src_node_id}); none reported")
            else:
                result["target_accuracy"] = acc
            result["rejections"] = server.guard.counts()
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

    from ...kernels import omega_fingerprint

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
