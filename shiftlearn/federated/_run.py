"""One-call runners of both protocols over the simulator."""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np

from .._progress import track
from ..kernels import rff_map
from ._iterative import FedRFTCAConfig, IterativeClient, IterativeServer, predict
from ._messages import TrainRequest
from ._simulator import NetworkConditions, Simulator, Traffic

__all__ = ["IterativeResult", "OneShotResult", "run_iterative", "run_oneshot",
           "train_source_only"]


@dataclass
class IterativeResult:
    """Outcome of :func:`run_iterative`: the global model, traffic and per-round history.

    A deep model (``config.deep``) also has its global extractor ``G`` (None without one) and,
    with ``vote=True``, ``vote_C`` (the latest classifier of every source, by client id).
    """

    W: np.ndarray
    C: np.ndarray
    traffic: Traffic
    history: list = field(default_factory=list)
    rejections: dict = field(default_factory=dict)
    server: IterativeServer | None = None
    G: np.ndarray | None = None
    vote_C: dict = field(default_factory=dict)
    n_classes: int | None = None

    @property
    def parts(self) -> dict:
        """``{"W", "C"[, "G"]}``: the global model as the protocol carries it."""
        out = {"W": self.W, "C": self.C}
        if self.G is not None:
            out["G"] = self.G
        return out

    def predict(self, X: np.ndarray, config: FedRFTCAConfig) -> np.ndarray:
        """Classes (indices ``0..k-1``) of rows ``X`` under the global model (majority vote of
        the source classifiers with ``vote=True``)."""
        X = np.asarray(X, dtype=np.float64)
        if config.vote and not self.vote_C:
            raise ValueError("vote=True but no source classifier reached the server (all "
                             "final-round replies lost?); run more rounds or vote=False.")
        if config.deep:
            from ._deep import predict_deep

            return predict_deep(config, self.parts, X, self.n_classes or self.C.shape[-1],
                                vote_classifiers=[self.vote_C[k] for k in sorted(self.vote_C)]
                                if config.vote else None)
        Z = rff_map(X, config.omega(X.shape[1]))
        if config.vote:
            votes = np.zeros((X.shape[0], self.C.shape[1]), dtype=np.int64)
            for k in sorted(self.vote_C):
                votes[np.arange(X.shape[0]), predict(Z, self.W, self.vote_C[k])] += 1
            return np.argmax(votes, axis=1)
        return predict(Z, self.W, self.C)


def run_iterative(sources, X_target, config: FedRFTCAConfig, *, n_classes: int | None = None,
                  conditions: NetworkConditions | None = None, eval_every: int = 0,
                  y_target=None, W0: np.ndarray | None = None) -> IterativeResult:
    """Run iterative FedRF-TCA with ``K = len(sources)`` source clients and one target.

    Parameters
    ----------
    sources : list of (X, y)
        Labeled source clients (``y`` in ``0..k-1``); client ids ``1..K``.
    X_target : ndarray
        The unlabeled target client (id ``K + 1``).
    config : FedRFTCAConfig
    n_classes : int or None
        Defaults to ``1 + max(y)`` over the sources.
    conditions : NetworkConditions or None
        Faults of the simulated network (None: perfect network).
    eval_every, y_target
        If both given, the history records the target accuracy every ``eval_every`` rounds
        (evaluation only; never used for training or selection).
    W0 : ndarray of shape (2N, m) or None
        Initial adaptive layer on every party (e.g. the one-shot RF-TCA ``W``, broadcast
        before the run); None = ``config.initial_W()``.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> src = [(rng.normal(size=(40, 3)) + c, np.arange(40) % 2) for c in range(2)]
    >>> res = run_iterative(src, rng.normal(size=(30, 3)),
    ...                     FedRFTCAConfig(n_features=20, n_components=4, n_rounds=3))
    >>> res.W.shape
    (40, 4)
    """
    if n_classes is None:
        n_classes = int(max(np.max(y) for _, y in sources)) + 1
    K = len(sources)
    if config.deep:
        from ._deep import DeepClient, initial_parts, model_spec

        if W0 is not None:
            raise ValueError("W0 is for the numpy model (extractor='none', classifier="
                             "'linear'); the deep model starts from its seeded initialisation.")
        n_input = np.asarray(X_target).shape[1]
        clients = {i + 1: DeepClient(i + 1, X, y, config, n_classes)
                   for i, (X, y) in enumerate(sources)}
        clients[K + 1] = DeepClient(K + 1, X_target, None, config, n_classes)
        server = IterativeServer(config, list(range(1, K + 1)), K + 1, n_classes,
                                 init=initial_parts(config, n_input, n_classes),
                                 spec=model_spec(config, n_input, n_classes, K + 1))
    else:
        clients = {i + 1: IterativeClient(i + 1, X, y, config, n_classes, W0)
                   for i, (X, y) in enumerate(sources)}
        clients[K + 1] = IterativeClient(K + 1, X_target, None, config, n_classes, W0)
        server = IterativeServer(config, list(range(1, K + 1)), K + 1, n_classes, W0)
    sim = Simulator(server, clients, conditions)
    history = []
    name = "FedAvg" if config.algorithm == "fedavg" else "FedRF-TCA"
    for t in track(range(1, config.n_rounds + 1), description=f"{name} rounds"):
        info = sim.step()
        if eval_every and y_target is not None and (t % eval_every == 0
                                                   or t == config.n_rounds):
            now = IterativeResult(server.W, server.C, sim.traffic, G=server.G,
                                  vote_C=dict(server.vote_C), n_classes=n_classes)
            if not (config.vote and not now.vote_C):
                info["target_accuracy"] = float(np.mean(now.predict(X_target, config)
                                                        == np.asarray(y_target)))
        history.append(info)
    traffic = sim.run(0)
    return IterativeResult(server.W, server.C, traffic, history, server.guard.counts(), server,
                           G=server.G, vote_C=dict(server.vote_C), n_classes=n_classes)


def train_source_only(sources, config: FedRFTCAConfig, *, n_classes: int | None = None,
                      W0: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """The source-only baseline: FedRF-TCA's model trained by one party on the pooled sources.

    The same random features (``Omega`` from ``config.seed``), the same initial ``W``, the
    same Adam steps (``n_rounds * local_steps``, ``lr``, ``batch_size``) and the same code
    (one :class:`~shiftlearn.federated.IterativeClient` holding every source row), with
    ``lam = 0`` and no network: what the federated run would be without adaptation and
    without federation: a federated result is reported beside this baseline.

    Parameters
    ----------
    sources : list of (X, y)
        The labeled source clients (``y`` in ``0..k-1``).
    config : FedRFTCAConfig
        The federated run's configuration (``lam`` and ``client_sampling`` are ignored).
    n_classes : int or None
        Defaults to ``1 + max(y)`` over the sources.
    W0 : ndarray of shape (2N, m) or None
        As in :func:`run_iterative`.

    Returns
    -------
    W : ndarray of shape (2N, m)
    C : ndarray of shape (m + 1, k)

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> src = [(rng.normal(size=(40, 3)) + c, np.arange(40) % 2) for c in range(2)]
    >>> W, C = train_source_only(src, FedRFTCAConfig(n_features=20, n_components=4,
    ...                                               n_rounds=3))
    >>> W.shape, C.shape
    ((40, 4), (5, 2))
    """
    if not sources:
        raise ValueError("train_source_only needs at least one labeled source (X, y).")
    if n_classes is None:
        n_classes = int(max(np.max(y) for _, y in sources)) + 1
    X = np.vstack([np.asarray(X, dtype=np.float64) for X, _ in sources])
    y = np.concatenate([np.asarray(y, dtype=int) for _, y in sources])
    pooled = IterativeClient(1, X, y, replace(config, lam=0.0), n_classes, W0)
    for t in range(1, config.n_rounds + 1):
        pooled.handle(TrainRequest(round=t, client_id=1, sampled=True))
    return pooled.params["W"], pooled.params["C"]


@dataclass
class OneShotResult:
    """Outcome of :func:`run_oneshot`: ``W`` (2N x m), eigenvalues, the summed statistics."""

    W: np.ndarray | None
    eigenvalues: np.ndarray | None
    stats: object
    traffic: Traffic
    rounds: int
    contributors: list
    rejections: dict = field(default_factory=dict)
    clients: dict = field(default_factory=dict)


def run_oneshot(parts, config, *, n_classes: int | None = None,
                conditions: NetworkConditions | None = None) -> OneShotResult:
    """One-shot exact federated RF-TCA over the simulator.

    Parameters
    ----------
    parts : list of (X, y_or_None, domain_id)
        One entry per client (ids ``1..len(parts)``); ``y=None`` for an unlabeled client.
    config : OneShotConfig
    n_classes : int or None
        Defaults to ``1 + max`` label over the labeled clients.
    conditions : NetworkConditions or None

    Examples
    --------
    >>> import numpy as np
    >>> from shiftlearn.federated import OneShotConfig
    >>> rng = np.random.default_rng(0)
    >>> parts = [(rng.normal(size=(30, 3)), np.arange(30) % 2, 1),
    ...          (rng.normal(size=(20, 3)) + 1, None, -2)]
    >>> res = run_oneshot(parts, OneShotConfig(n_features=20, n_components=3))
    >>> res.W.shape, res.rounds
    ((40, 3), 2)
    """
    from ._oneshot import OneShotClient, OneShotServer

    if n_classes is None:
        n_classes = int(max(np.max(y) for _, y, _ in parts if y is not None)) + 1
    domain_ids = sorted({int(d) for _, _, d in parts})
    clients = {i + 1: OneShotClient(i + 1, X, y, d, config, domain_ids, n_classes)
               for i, (X, y, d) in enumerate(parts)}
    n_input = np.asarray(parts[0][0]).shape[1]
    server = OneShotServer(config, list(clients), domain_ids, n_classes, n_input)
    sim = Simulator(server, clients, conditions)
    rounds = 0
    while not server.done and rounds < config.max_rounds + 1:
        sim.step()
        rounds += 1
    traffic = sim.run(0)
    return OneShotResult(server.W, server.eigenvalues, server.stats, traffic, rounds,
                         server.contributors, server.guard.counts(), clients)
