"""One-shot exact federated RF-TCA (ours): clients send sums, the server solves RF-TCA once.

RF-TCA needs the data only through additive sufficient statistics
(:class:`shiftlearn.adaptation.RFStats`): per-domain counts and random-feature sums, per-class
counts and sums, and the second moments ``sum z z^T``. Each client computes them on its own rows
with :func:`shiftlearn.adaptation.rf_stats` (``Omega`` from the shared seed), flattens them into a
**fixed layout agreed in advance** (every client sends the same shapes, zeros in the slots of
domains and classes it does not hold; the symmetric moments as their upper triangle), and the
server adds the vectors elementwise, rebuilds one ``RFStats`` and calls
:func:`shiftlearn.adaptation.rftca_from_stats`. The sum is all the server uses, so a secure
aggregation protocol (which reveals only the sum) can carry it unchanged, and the answer is
RF-TCA on the pooled data, up to floating-point summation order.

Admission (:meth:`OneShotServer.receive`): besides the guard's checks, the counts must be
non-negative integers below ``2**53`` (exact in float64) and every sum within what rows of
random features (entries of ``|z| <= N^{-1/2}``) can add up to: ``|domain or class sum| <=
count / sqrt(N)``, ``|moment entry| <= rows / N``. A client can still lie within those
bounds (the one-shot sum trusts every contributor), but cannot crash the solver or overflow
the sum.

Robustness: a client whose statistics did not arrive is asked again in the next round (up to
``max_rounds``); the model is solved once every client has answered (or, with
``allow_partial=True``, from those that answered, then exact for *their* pooled data).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..adaptation import RFStats, rf_stats, rftca_from_stats
from ..kernels import check_rff_sampling, omega_fingerprint, rff_weights
from ._guard import ReplyGuard, logger
from ._messages import ModelBroadcast, ProtocolSpec, StatsReply, StatsRequest

__all__ = [
    "OneShotClient",
    "OneShotConfig",
    "OneShotServer",
    "arrays_to_stats",
    "stats_layout",
    "stats_to_arrays",
]


@dataclass(frozen=True)
class OneShotConfig:
    """Shared settings: RF-TCA's ``n_components``, ``mu`` (MMD weight, Pan et al.; the paper's
    ``gamma = 1/mu``) and ``penalty`` (see :func:`~shiftlearn.adaptation.rftca_from_stats`),
    the random features ``n_features``, ``sigma``, ``seed`` and ``sampling`` (``"gaussian"``,
    the paper's, or ``"orthogonal"``: :func:`~shiftlearn.kernels.rff_weights`; the same choice
    as ``RFTCA(sampling=...)`` gives the same answer as the centralized fit)."""

    n_features: int = 250
    n_components: int = 30
    sigma: float = 1.0
    seed: int = 0
    mu: float = 1.0
    penalty: str = "features"
    max_rounds: int = 3
    allow_partial: bool = False
    sampling: str = "gaussian"

    def __post_init__(self):
        check_rff_sampling(self.sampling, "sampling")

    def omega(self, n_input: int) -> np.ndarray:
        return rff_weights(n_input, self.n_features, self.sigma, random_state=self.seed,
                           sampling=self.sampling)


def stats_layout(domain_ids, n_classes: int, dim: int) -> dict[str, tuple]:
    """Shapes of the flattened statistics every client sends (``dim = 2N``)."""
    nd = len(domain_ids)
    tri = dim * (dim + 1) // 2
    return {"domain_counts": (nd,), "domain_sums": (nd, dim), "class_counts": (n_classes,),
            "class_sums": (n_classes, dim), "moment_labeled": (tri,),
            "moment_unlabeled": (tri,)}


def stats_to_arrays(stats: RFStats, domain_ids, n_classes: int) -> dict[str, np.ndarray]:
    """Flatten ``stats`` into the fixed layout (classes are ``0..n_classes-1``)."""
    dim = stats.dim
    dom = {int(d): i for i, d in enumerate(domain_ids)}
    out = {k: np.zeros(s) for k, s in stats_layout(domain_ids, n_classes, dim).items()}
    for d, c, s in zip(stats.domains, stats.domain_counts, stats.domain_sums, strict=True):
        if int(d) not in dom:
            raise ValueError(f"domain id {int(d)} is not in the agreed layout {list(dom)}.")
        out["domain_counts"][dom[int(d)]] += c
        out["domain_sums"][dom[int(d)]] += s
    for k, c, s in zip(stats.classes, stats.class_counts, stats.class_sums, strict=True):
        if not 0 <= int(k) < n_classes:
            raise ValueError(f"class {k} is outside 0..{n_classes - 1}.")
        out["class_counts"][int(k)] += c
        out["class_sums"][int(k)] += s
    iu = np.triu_indices(dim)
    out["moment_labeled"] = stats.moment_labeled[iu].copy()
    out["moment_unlabeled"] = stats.moment_unlabeled[iu].copy()
    return out


def _unpack_sym(v: np.ndarray, dim: int) -> np.ndarray:
    M = np.zeros((dim, dim))
    M[np.triu_indices(dim)] = v
    return np.triu(M) + np.triu(M, 1).T


def arrays_to_stats(arrays: dict, domain_ids, dim: int, fingerprint: str = "") -> RFStats:
    """Inverse of :func:`stats_to_arrays` (empty slots dropped); counts must be integral."""
    dc, cc = arrays["domain_counts"], arrays["class_counts"]
    for name, c in (("domain_counts", dc), ("class_counts", cc)):
        if np.any(c < 0) or np.any(c != np.round(c)):
            raise ValueError(f"{name} must be non-negative integers.")
    dk = dc > 0
    ck = cc > 0
    return RFStats(dim, np.asarray(domain_ids, dtype=np.int64)[dk], dc[dk].astype(np.int64),
                   arrays["domain_sums"][dk], np.nonzero(ck)[0].astype(np.int64),
                   cc[ck].astype(np.int64), arrays["class_sums"][ck],
                   _unpack_sym(arrays["moment_labeled"], dim),
                   _unpack_sym(arrays["moment_unlabeled"], dim), fingerprint)


_MAX_COUNT = 2.0 ** 53
_RTOL = 1e-6   # round-off of the (possibly fast) trigonometry and of the sums


def _stats_problem(arrays: dict, n_features: int) -> tuple[str, str] | None:
    """``(reason, detail)`` when flattened statistics cannot come from real rows, else None."""
    for name in ("domain_counts", "class_counts"):
        c = arrays[name]
        if np.any(c < 0) or np.any(c != np.round(c)) or np.any(c > _MAX_COUNT):
            bad = c[(c < 0) | (c != np.round(c)) | (c > _MAX_COUNT)][0]
            return "bad_counts", (f"{name} must be non-negative integers below 2**53 "
                                  f"(got {bad!r})")
    scale = 1.0 / np.sqrt(n_features)
    for sums, counts in (("domain_sums", "domain_counts"), ("class_sums", "class_counts")):
        excess = np.abs(arrays[sums]) - (arrays[counts][:, None] * scale) * (1 + _RTOL)
        if np.any(excess > 1e-12):
            return "out_of_bounds", (f"{sums} exceed count / sqrt(N), the most rows of random "
                                     "features can add up to")
    rows = float(np.sum(arrays["domain_counts"]))
    for name in ("moment_labeled", "moment_unlabeled"):
        if np.any(np.abs(arrays[name]) > rows * scale * scale * (1 + _RTOL) + 1e-12):
            return "out_of_bounds", f"{name} exceeds rows / N, the most {rows:.0f} rows give"
    return None


class OneShotClient:
    """Holds ``X`` (and ``y`` for a source, class indices ``0..k-1``; ``None`` for the target);
    all its rows belong to domain ``domain_id`` (positive = source, negative = target)."""

    def __init__(self, client_id: int, X, y, domain_id: int, config: OneShotConfig,
                 domain_ids, n_classes: int):
        self.client_id = int(client_id)
        self.X = np.asarray(X, dtype=np.float64)
        self.y = None if y is None else np.asarray(y)
        self.domain_id = int(domain_id)
        self.config = config
        self.domain_ids = list(domain_ids)
        self.n_classes = int(n_classes)
        self.W: np.ndarray | None = None
        self.eigenvalues: np.ndarray | None = None
        self.last_round = 0

    def handle(self, msg):
        if msg.client_id != self.client_id or msg.round <= self.last_round:
            logger.warning("client %s: ignored %s for round %s", self.client_id, msg.KIND,
                           msg.round)
            return None
        self.last_round = msg.round
        if isinstance(msg, ModelBroadcast):
            self.W, self.eigenvalues = msg.W.copy(), msg.eigenvalues.copy()
            return None
        omega = self.config.omega(self.X.shape[1])
        sd = np.full(self.X.shape[0], self.domain_id, dtype=np.int64)
        stats = rf_stats(self.X, self.y, sd, omega)
        return StatsReply(round=msg.round, client_id=self.client_id,
                          fingerprint=stats.fingerprint,
                          arrays=stats_to_arrays(stats, self.domain_ids, self.n_classes))


class OneShotServer:
    """Collects the statistics (re-asking missing clients), solves, broadcasts ``W``."""

    def __init__(self, config: OneShotConfig, client_ids, domain_ids, n_classes: int,
                 n_input: int):
        self.config = config
        self.client_ids = [int(c) for c in client_ids]
        self.domain_ids = list(domain_ids)
        self.spec = ProtocolSpec(config.n_features, config.n_components, n_classes,
                                 len(self.client_ids))
        self.fingerprint = omega_fingerprint(config.omega(n_input))
        self.guard = ReplyGuard(self.spec, frozenset(self.client_ids),
                                stats_layout(self.domain_ids, n_classes, self.spec.dim))
        self.round = 0
        self.collected: dict[int, dict] = {}
        self.W: np.ndarray | None = None
        self.eigenvalues: np.ndarray | None = None
        self.stats: RFStats | None = None
        self.contributors: list[int] = []
        self.done = False
        self.history: list[dict] = []

    def start_round(self) -> dict:
        self.round += 1
        if self.W is not None:
            self.done = True
            return {c: ModelBroadcast(round=self.round, client_id=c, W=self.W,
                                      eigenvalues=self.eigenvalues) for c in self.contributors}
        missing = [c for c in self.client_ids if c not in self.collected]
        return {c: StatsRequest(round=self.round, client_id=c) for c in missing}

    def receive(self, arrays: dict, meta: dict, *, sender: int | None = None,
                node=None) -> bool:
        """Admit one reply (``sender``/``node``: the transport's identity of its origin, see
        :meth:`~shiftlearn.federated.ReplyGuard.admit`); ``True`` when it was kept."""
        msg = self.guard.admit(arrays, meta, kind="stats_reply", round_=self.round,
                               commit=False, sender=sender, node=node)
        if msg is None:
            return False
        if msg.fingerprint != self.fingerprint:
            self.guard.reject(self.round, msg.client_id, "wrong_omega",
                              "statistics computed with other frequencies (seed/sigma/N)")
            return False
        problem = _stats_problem(msg.arrays, self.config.n_features)
        if problem is not None:
            self.guard.reject(self.round, msg.client_id, *problem)
            return False
        self.guard.commit(msg)
        self.collected[msg.client_id] = msg.arrays
        return True

    def aggregate(self) -> dict[str, np.ndarray]:
        """Elementwise sum of the collected vectors: all a secure aggregator would reveal."""
        keys = next(iter(self.collected.values())).keys()
        return {k: np.sum([a[k] for a in self.collected.values()], axis=0) for k in keys}

    def finish_round(self) -> dict:
        info = {"round": self.round, "collected": sorted(self.collected)}
        complete = len(self.collected) == len(self.client_ids)
        last = self.round >= self.config.max_rounds
        if self.W is None and self.collected and (complete or (last and
                                                              self.config.allow_partial)):
            self.stats = arrays_to_stats(self.aggregate(), self.domain_ids, self.spec.dim,
                                         self.fingerprint)
            self.W, self.eigenvalues = rftca_from_stats(
                self.stats, self.config.n_components, self.config.mu,
                penalty=self.config.penalty)
            self.contributors = sorted(self.collected)
            info["solved"] = True
        self.history.append(info)
        return info
