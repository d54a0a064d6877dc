"""Typed, versioned protocol messages and their transport-neutral encoding.

Every message crossing the network is one of the dataclasses below. ``encode(msg)`` turns it
into ``(arrays, meta)``: a ``dict[str, ndarray]`` (float64 arrays only) and a flat
``dict[str, int | float | str | bool]`` header (protocol name, version, kind, round, sender,
scalar fields and the declared shape of every array). The simulator ships exactly these two
dicts; the Flower apps put them in an ``ArrayRecord`` and a ``ConfigRecord``. ``decode`` checks
everything a hostile or broken peer could get wrong (protocol/version/kind, missing or extra
arrays, declared vs actual shape, the shape the run's :class:`ProtocolSpec` expects, dtype,
NaN/inf) and raises :class:`MessageError` naming the problem; such a message is never used.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, fields
from typing import ClassVar

import numpy as np

__all__ = [
    "PROTOCOL",
    "PROTOCOL_VERSION",
    "MessageError",
    "ModelBroadcast",
    "ProtocolSpec",
    "StatsReply",
    "StatsRequest",
    "TrainReply",
    "TrainRequest",
    "decode",
    "encode",
    "expected_sizes",
    "message_nbytes",
]

PROTOCOL = "shiftlearn.fedrftca"
# 2: TrainRequest carries ``send_C``; 3: TrainRequest/TrainReply carry the extractor ``G``
# (deep model) and ``C`` may be a flat parameter vector (``classifier_size``)
PROTOCOL_VERSION = 3


class MessageError(ValueError):
    """A message that must not be used; ``reason`` is a short machine-readable code."""

    def __init__(self, reason: str, detail: str):
        super().__init__(f"{reason}: {detail}")
        self.reason = reason


@dataclass(frozen=True)
class ProtocolSpec:
    """Shapes every party agrees on before the run (they come from the shared run config).

    ``dim = 2 * n_features`` is the length of a random-feature vector. The deep model
    sends its classifier as one flat vector of ``classifier_size`` parameters
    (0: the linear softmax matrix of shape ``(m + 1, k)``) and its feature extractor as one flat
    vector ``G`` of ``extractor_size`` parameters (0: no extractor; a ``G`` is then refused).
    """

    n_features: int
    n_components: int
    n_classes: int
    n_clients: int  # K sources + 1 target
    classifier_size: int = 0
    extractor_size: int = 0

    @property
    def dim(self) -> int:
        return 2 * self.n_features

    @property
    def c_shape(self) -> tuple:
        """Shape of a classifier ``C`` in a message."""
        if self.classifier_size:
            return (self.classifier_size,)
        return (self.n_components + 1, self.n_classes)


# symbolic shapes: "D" = 2N, "m", "k+1"... resolved against a ProtocolSpec
def _resolve(sym: tuple, spec: ProtocolSpec) -> tuple:
    if sym == ("C",):
        return spec.c_shape
    table = {"D": spec.dim, "m": spec.n_components, "m+1": spec.n_components + 1,
             "k": spec.n_classes, "K": spec.n_clients, "tri": spec.dim * (spec.dim + 1) // 2,
             "kD": spec.n_classes * spec.dim, "g": spec.extractor_size}
    return tuple(table[s] if isinstance(s, str) else s for s in sym)


@dataclass(frozen=True)
class _Base:
    round: int
    client_id: int
    KIND: ClassVar[str] = ""
    # array field -> symbolic shape; "*" as first entry = variable leading dim (1..K rows)
    ARRAYS: ClassVar[dict[str, tuple]] = {}
    OPTIONAL: ClassVar[frozenset] = frozenset()


@dataclass(frozen=True)
class TrainRequest(_Base):
    """Server -> client, one FedRF-TCA round.

    ``sampled``: the client is in ``S_t`` (sources then add the MMD term and upload W).
    ``send_C``: a classifier average is due (it stays due from round ``k * T_C`` until one
    actually happens), so a sampled source uploads its ``C``.
    ``W`` / ``C``: the global adaptive layer / classifier, present while the client is due a
    download (it contributed to an average and has not yet answered a request carrying it).
    ``G``: the global feature extractor (deep model only), downloaded like ``C``; with a deep
    model ``send_C`` also asks the target for its extractor.
    ``ref_means``: counterpart mean embeddings (the target's for a source, shape
    ``(1, 2N)``; the sampled sources' for the target, shape ``(s, 2N)``); absent when none is
    known yet.
    """

    sampled: bool = False
    send_C: bool = False
    W: np.ndarray | None = None
    C: np.ndarray | None = None
    ref_means: np.ndarray | None = None
    G: np.ndarray | None = None
    KIND: ClassVar[str] = "train_request"
    ARRAYS: ClassVar[dict] = {"W": ("D", "m"), "C": ("C",), "ref_means": ("*", "D"),
                              "G": ("g",)}
    OPTIONAL: ClassVar[frozenset] = frozenset({"W", "C", "ref_means", "G"})


@dataclass(frozen=True)
class TrainReply(_Base):
    """Client -> server: its mean embedding (always) and, when sampled, its W (and C, and with
    a deep model its extractor G, when ``send_C`` asked for them).

    No sample count is sent (averaging is unweighted, as in the paper), so neither the size
    nor the content of a message depends on how many rows the client holds.
    """

    mean: np.ndarray | None = None
    W: np.ndarray | None = None
    C: np.ndarray | None = None
    G: np.ndarray | None = None
    KIND: ClassVar[str] = "train_reply"
    ARRAYS: ClassVar[dict] = {"mean": ("D",), "W": ("D", "m"), "C": ("C",), "G": ("g",)}
    OPTIONAL: ClassVar[frozenset] = frozenset({"W", "C", "G"})


@dataclass(frozen=True)
class StatsRequest(_Base):
    """Server -> client, one-shot protocol: "send your RF-TCA sufficient statistics"."""

    KIND: ClassVar[str] = "stats_request"


@dataclass(frozen=True)
class StatsReply(_Base):
    """Client -> server, one-shot protocol: sums only (secure-aggregation compatible).

    ``arrays`` holds the flattened sufficient statistics in the fixed, agreed layout of
    :func:`shiftlearn.federated.stats_to_arrays` (every client sends the same shapes).
    """

    fingerprint: str = ""
    arrays: dict[str, np.ndarray] = field(default_factory=dict)
    KIND: ClassVar[str] = "stats_reply"


@dataclass(frozen=True)
class ModelBroadcast(_Base):
    """Server -> client: the solved adaptive layer ``W`` (2N x m) and its eigenvalues."""

    W: np.ndarray | None = None
    eigenvalues: np.ndarray | None = None
    KIND: ClassVar[str] = "model_broadcast"
    ARRAYS: ClassVar[dict] = {"W": ("D", "m"), "eigenvalues": ("m",)}


_KINDS = {c.KIND: c for c in (TrainRequest, TrainReply, StatsRequest, StatsReply,
                              ModelBroadcast)}
_SCALARS = {"round": int, "client_id": int, "sampled": bool, "send_C": bool,
            "fingerprint": str}


def _shape_str(a: np.ndarray) -> str:
    return ",".join(str(int(s)) for s in a.shape)


def encode(msg: _Base) -> tuple[dict[str, np.ndarray], dict]:
    """Message -> ``(arrays, meta)``; arrays are float64 and C-contiguous (copies).

    Examples
    --------
    >>> import numpy as np
    >>> arrays, meta = encode(TrainReply(round=3, client_id=1, mean=np.zeros(4)))
    >>> meta["kind"], meta["shape.mean"], sorted(arrays)
    ('train_reply', '4', ['mean'])
    """
    meta: dict = {"protocol": PROTOCOL, "version": PROTOCOL_VERSION, "kind": msg.KIND}
    arrays: dict[str, np.ndarray] = {}
    for f in fields(msg):
        v = getattr(msg, f.name)
        if f.name == "arrays":
            items = v.items()
        elif f.name in _SCALARS:
            meta[f.name] = _SCALARS[f.name](v)
            continue
        else:
            items = [(f.name, v)]
        for name, a in items:
            if a is None:
                continue
            a = np.ascontiguousarray(a, dtype=np.float64)
            arrays[name] = a
            meta[f"shape.{name}"] = _shape_str(a)
    return arrays, meta


def _fail(reason: str, detail: str):
    raise MessageError(reason, detail)


def decode(arrays: dict, meta: dict, spec: ProtocolSpec, *,
           stats_shapes: dict[str, tuple] | None = None) -> _Base:
    """``(arrays, meta)`` -> message, validating everything against ``spec``.

    ``stats_shapes`` gives the agreed layout of a :class:`StatsReply` (name -> shape).
    Raises :class:`MessageError` (``reason`` in ``bad_header``, ``bad_version``,
    ``unknown_kind``, ``missing_array``, ``unexpected_array``, ``bad_shape``, ``bad_dtype``,
    ``non_finite``).
    """
    if not isinstance(meta, dict) or not isinstance(arrays, dict):
        _fail("bad_header", "a message is a pair of dicts (arrays, meta)")
    if meta.get("protocol") != PROTOCOL:
        _fail("bad_header", f"protocol {meta.get('protocol')!r} is not {PROTOCOL!r}")
    if meta.get("version") != PROTOCOL_VERSION:
        _fail("bad_version", f"version {meta.get('version')!r}, this peer speaks "
                             f"{PROTOCOL_VERSION}")
    kind = meta.get("kind")
    cls = _KINDS.get(kind) if isinstance(kind, str) else None
    if cls is None:
        _fail("unknown_kind", f"kind {meta.get('kind')!r}")
    kwargs: dict = {}
    names = {f.name for f in fields(cls)}
    for name, typ in _SCALARS.items():
        if name not in names:
            continue
        v = meta.get(name)
        if typ is bool or typ is str:
            ok = isinstance(v, typ)
        else:
            ok = isinstance(v, int | np.integer) and not isinstance(v, bool)
        if not ok:
            _fail("bad_header", f"{name}={v!r} is not a {typ.__name__}")
        kwargs[name] = typ(v)
    if kwargs.get("round", 0) < 0:
        _fail("bad_header", f"negative round {kwargs['round']}")
    if cls is StatsReply:
        expected = dict(stats_shapes or {})
        optional: frozenset = frozenset()
    else:
        expected = {k: _resolve(v[1:], spec) if v[0] == "*" else _resolve(v, spec)
                    for k, v in cls.ARRAYS.items()
                    if not (k == "G" and spec.extractor_size == 0)}
        optional = cls.OPTIONAL
    extra = set(arrays) - set(expected)
    if extra:
        _fail("unexpected_array", f"{cls.KIND} has unexpected array(s) {sorted(extra)}")
    out: dict[str, np.ndarray] = {}
    for name, shape in expected.items():
        if name not in arrays:
            if name in optional:
                continue
            _fail("missing_array", f"{cls.KIND} lacks array {name!r}")
        a = arrays[name]
        if not isinstance(a, np.ndarray):
            _fail("bad_dtype", f"{name} is a {type(a).__name__}, not an ndarray")
        if a.dtype != np.float64:
            _fail("bad_dtype", f"{name} has dtype {a.dtype}, expected float64")
        if meta.get(f"shape.{name}") != _shape_str(a):
            _fail("bad_shape", f"{name} declared shape {meta.get(f'shape.{name}')!r} but "
                               f"carries {a.shape}")
        variable = cls is not StatsReply and cls.ARRAYS[name][0] == "*"
        if variable:
            good = (a.ndim == 2 and a.shape[1:] == shape
                    and 1 <= a.shape[0] <= spec.n_clients)
        else:
            good = a.shape == tuple(shape)
        if not good:
            _fail("bad_shape", f"{name} has shape {a.shape}, expected "
                               f"{('s',) + shape if variable else shape}")
        if not np.all(np.isfinite(a)):
            _fail("non_finite", f"{name} contains NaN or inf")
        out[name] = a
    if cls is StatsReply:
        return StatsReply(arrays=out, **kwargs)
    return cls(**kwargs, **out)


def expected_sizes(kind: str, spec: ProtocolSpec, *,
                   stats_shapes: dict[str, tuple] | None = None) -> dict[str, int]:
    """The arrays a ``kind`` message may carry and the most float64 entries each may hold,
    from the run's own dimensions (a variable leading dimension counts ``n_clients`` rows).

    What a receiver checks *before* decoding a payload: a name outside this dict, or more
    entries than it allows, is refused without allocating the array.

    >>> expected_sizes("train_reply", ProtocolSpec(4, 3, 2, 3))
    {'mean': 8, 'W': 24, 'C': 8}
    """
    cls = _KINDS[kind]
    if cls is StatsReply:
        shapes = dict(stats_shapes or {})
    else:
        shapes = {k: ((spec.n_clients,) + _resolve(v[1:], spec)) if v[0] == "*"
                  else _resolve(v, spec) for k, v in cls.ARRAYS.items()
                  if not (k == "G" and spec.extractor_size == 0)}
    return {k: int(np.prod(s, dtype=np.int64)) for k, s in shapes.items()}


def message_nbytes(arrays: dict, meta: dict) -> int:
    """Bytes on the wire: array payloads plus the JSON header (what the simulator counts)."""
    header = json.dumps(meta, sort_keys=True, default=repr)  # repr: a peer's non-JSON values
    return int(sum(a.nbytes for a in arrays.values())) + len(header)
