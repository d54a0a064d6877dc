"""Fuzzing the ServerApp's reply path: hypothesis mutates a genuine client's reply (its
header, its arrays, its Flower records, the payload bytes) and the result crosses Flower's
protobuf serialization into the very function the ServerApp runs on every reply
(``flower._admit_reply``: records within the job's size caps, sender binding, decoding,
guard, value bounds). The server must never raise; a reply is either kept (then it is within
the bounds an honest reply keeps) or rejected once with a known reason naming the sending
client, and a rejected reply never blocks the genuine one."""

import logging
import warnings
from functools import cache

import numpy as np
import pytest

pytest.importorskip("flwr")
hypothesis = pytest.importorskip("hypothesis")

from flwr.app import Array, ArrayRecord, ConfigRecord, Message, RecordDict  # noqa: E402
from flwr.common.serde import recorddict_from_proto, recorddict_to_proto  # noqa: E402
from flwr.supercore.task_identity import TaskIdentity  # noqa: E402
from hypothesis import HealthCheck, example, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from shiftlearn.federated import (  # noqa: E402
    FedRFTCAConfig,
    IterativeClient,
    IterativeServer,
    OneShotClient,
    OneShotConfig,
    OneShotServer,
    StatsRequest,
    TrainRequest,
    encode,
    expected_sizes,
)
from shiftlearn.federated._data import make_federated_blobs  # noqa: E402
from shiftlearn.federated.flower import _apps as flower  # noqa: E402

NODE, CID = 102, 2
CLIENT_OF = {101: 1, NODE: CID, 103: 3}
REASONS = {"bad_header", "bad_version", "unknown_kind", "missing_array", "unexpected_array",
           "bad_shape", "bad_dtype", "non_finite", "impersonation", "unknown_client",
           "wrong_kind", "stale_round", "future_round", "bad_record", "too_large",
           "out_of_bounds", "bad_counts", "wrong_omega"}


@pytest.fixture(scope="module", autouse=True)
def _task_identity():
    saved = {a: getattr(TaskIdentity, a, None) for a in ("_run_id", "_node_id", "_task_id")}
    for a in saved:
        setattr(TaskIdentity, a, 1)
    yield
    for a, v in saved.items():
        setattr(TaskIdentity, a, v)


@cache
def _parts():
    return make_federated_blobs(3, 30, seed=1)   # clients 1, 2 (sources), 3 (target)


def _server(protocol: str):
    parts = _parts()
    if protocol == "oneshot":
        cfg = OneShotConfig(n_features=6, n_components=2, sigma=2.0)
        server = OneShotServer(cfg, [1, 2, 3], [-3, 1, 2], 3, n_input=parts[0].X.shape[1])
        client = OneShotClient(CID, parts[1].X, parts[1].y, 2, cfg, [-3, 1, 2], 3)
        server.start_round()
        reply = client.handle(StatsRequest(round=1, client_id=CID))
        kind = "stats_reply"
    else:
        cfg = FedRFTCAConfig(n_features=6, n_components=2, sigma=2.0, client_sampling="all",
                             n_rounds=3)
        server = IterativeServer(cfg, [1, 2], 3, n_classes=3)
        client = IterativeClient(CID, parts[1].X, parts[1].y, cfg, 3)
        server.start_round()
        reply = client.handle(TrainRequest(round=1, client_id=CID, sampled=True, send_C=True))
        kind = "train_reply"
    sizes = expected_sizes(kind, server.spec, stats_shapes=server.guard.stats_shapes)
    return server, encode(reply), sizes


def _message(content: RecordDict) -> Message:
    request = Message(RecordDict(), dst_node_id=NODE, message_type="query.fedrftca",
                      group_id="1")
    request.metadata.__dict__["_message_id"] = "m1"
    return Message(recorddict_from_proto(recorddict_to_proto(content)), reply_to=request)


# ------------------------------------------------------------------------------ mutations
config_values = st.one_of(
    st.integers(-2 ** 63, 2 ** 63 - 1), st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=20), st.booleans(), st.binary(max_size=20),
    st.lists(st.integers(-5, 5), max_size=3), st.sampled_from([0, 1, 2, 3, CID, 1, "1"]))
special = st.sampled_from([np.nan, np.inf, -np.inf, 1.7e308, -1.7e308, 1e200, 0.5, -1.0,
                           2.0 ** 60, 5e-324, 1e3])


@st.composite
def mutation(draw):
    """``(name, apply)``: apply(arrays: dict of ndarray or Array, meta: dict) -> records or
    None (None: rebuild the records from the mutated dicts)."""
    what = draw(st.sampled_from(["meta_set", "meta_del", "value", "dtype", "shape", "payload",
                                 "array_del", "array_add", "records"]))
    if what == "meta_set":
        key = draw(st.sampled_from(["protocol", "version", "kind", "round", "client_id",
                                    "fingerprint", "shape.mean", "shape.W", "shape.class_counts",
                                    "status", "other"]))
        val = draw(config_values)
        return what, lambda a, m: m.__setitem__(key, val)
    if what == "meta_del":
        key = draw(st.sampled_from(["protocol", "version", "kind", "round", "client_id",
                                    "fingerprint"]))
        return what, lambda a, m: m.pop(key, None)
    pick = draw(st.integers(0, 10))
    if what == "value":
        v, frac = draw(special), draw(st.floats(0, 1))

        def apply(a, m):
            name = sorted(a)[pick % len(a)]
            x = np.array(np.real(a[name]), dtype=np.float64)
            x.flat[int(frac * (x.size - 1))] = v
            a[name] = x
        return what, apply
    if what == "dtype":
        dt = draw(st.sampled_from([np.float32, np.int64, np.complex128, np.bool_, np.uint8]))

        def apply(a, m):
            name = sorted(a)[pick % len(a)]
            a[name] = np.asarray(a[name]).astype(dt)
        return what, apply
    if what == "shape":
        delta = draw(st.sampled_from([-1, 1, 7, 10 ** 4]))
        keep_decl = draw(st.booleans())

        def apply(a, m):
            name = sorted(a)[pick % len(a)]
            flat = np.asarray(a[name]).ravel()
            x = np.resize(flat, max(flat.size + delta, 0))
            a[name] = x
            if not keep_decl:
                m[f"shape.{name}"] = str(x.size)
        return what, apply
    if what == "payload":
        data = draw(st.binary(max_size=200))
        stype = draw(st.sampled_from(["numpy.ndarray", "torch.Tensor", ""]))
        header = draw(st.booleans())
        shape = tuple(draw(st.lists(st.integers(0, 10 ** 6), max_size=3)))

        def apply(a, m):
            name = sorted(a)[pick % len(a)]
            raw = data
            if header:   # a valid .npy header, then whatever follows
                import io

                buf = io.BytesIO()
                np.lib.format.write_array_header_1_0(
                    buf, {"descr": "<f8", "fortran_order": False, "shape": shape})
                raw = buf.getvalue() + data
            a[name] = Array(dtype="float64", shape=shape, stype=stype, data=raw)
        return what, apply
    if what == "array_del":
        return what, lambda a, m: a.pop(sorted(a)[pick % len(a)])
    if what == "array_add":
        name = draw(st.sampled_from(["evil", "G", "W", "C", "ref_means", "eigenvalues"]))
        size = draw(st.integers(0, 50))
        return what, lambda a, m: a.__setitem__(name, np.ones(size))
    shape_of = draw(st.sampled_from(["arrays_as_config", "meta_as_arrays", "no_arrays",
                                     "no_meta", "empty", "extra_record"]))

    def records(a, m):
        arr = ArrayRecord({k: v if isinstance(v, Array) else Array(np.ascontiguousarray(v))
                           for k, v in a.items()})
        out = {"arrays": arr, "meta": ConfigRecord(m)}
        if shape_of == "arrays_as_config":
            out["arrays"] = ConfigRecord({"mean": 1.0})
        elif shape_of == "meta_as_arrays":
            out["meta"] = ArrayRecord({"kind": Array(np.zeros(1))})
        elif shape_of == "no_arrays":
            del out["arrays"]
        elif shape_of == "no_meta":
            del out["meta"]
        elif shape_of == "empty":
            out = {}
        else:
            out["job"] = ConfigRecord({"sigma": 1.0})
        return RecordDict(out)
    return shape_of, records


def _content(arrays, meta, mutations):
    a, m, built = dict(arrays), dict(meta), None
    for _, apply in mutations:
        if built is not None:
            break
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")   # the mutations' own casts (nan -> int, ...)
            built = apply(a, m)
        if not isinstance(built, RecordDict):
            built = None
    if built is None:
        built = RecordDict({"arrays": ArrayRecord({
            k: v if isinstance(v, Array) else Array(np.ascontiguousarray(v))
            for k, v in a.items()}), "meta": ConfigRecord(m)})
    return built


@pytest.mark.parametrize("protocol", ["oneshot", "iterative"])
@settings(max_examples=400, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture,
                                 HealthCheck.too_slow])
@given(mutations=st.lists(mutation(), min_size=1, max_size=3))
# the attacks that once crashed or poisoned the server, always tried
@example(mutations=[("meta_set", lambda a, m: m.__setitem__("kind", [1]))])
@example(mutations=[("meta_set", lambda a, m: m.__setitem__("client_id", 1))])
@example(mutations=[("value", lambda a, m: a.update(
    {k: a[k] + 0.5 for k in ("class_counts",) if k in a}))])
@example(mutations=[("value", lambda a, m: a.update(
    {k: np.full_like(a[k], 1.7e308) for k in ("W",) if k in a}))])
@example(mutations=[("payload", lambda a, m: a.update(mean=Array(
    dtype="float64", shape=(8,), stype="numpy.ndarray", data=b"junk")))])
def test_hardening_fuzz_malformed_replies_never_crash_the_server(protocol, mutations,
                                                                 caplog):
    server, (arrays, meta), sizes = _server(protocol)
    try:
        content = _content(arrays, meta, mutations)
        message = _message(content)
    except (TypeError, ValueError, OverflowError):
        hypothesis.assume(False)   # Flower itself cannot build or serialize it: never sent
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="shiftlearn.federated"):
        flower._admit_reply(server, message, CLIENT_OF, sizes)
    got = server.collected if protocol == "oneshot" else server.replies
    rejections = server.guard.rejections
    if CID in got:      # harmless mutation: what was kept is within the honest bounds
        assert rejections == []
    elif rejections:
        (rej,) = rejections
        assert rej.reason in REASONS and rej.client_id == CID
        lines = [r.getMessage() for r in caplog.records]
        assert len(lines) == 1 and f"client {CID} ({rej.reason})" in lines[0]
        # the genuine reply still gets in
        flower._admit_reply(server, _message(flower.to_records(arrays, meta)), CLIENT_OF,
                            sizes)
        assert CID in got
    else:               # only a client's own status note is passed over silently
        m = dict(content["meta"]) if "meta" in content else {}
        assert set(m) == {"status"} and "arrays" not in content or not content["arrays"]
    server.finish_round()   # never raises either
    if protocol == "iterative":
        assert np.all(np.isfinite(server.W)) and np.all(np.isfinite(server.C))
        bounds = server.value_bounds()
        assert np.max(np.abs(server.W)) <= bounds["W"]
