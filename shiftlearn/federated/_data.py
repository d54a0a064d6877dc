"""Which rows each client holds, from a flat run config (shared by the Flower apps, the
simulator runs, the benchmarks and the tests, so that all of them see the same partitions).

Run-config keys: ``dataset`` (``"synthetic"`` or ``"office_caltech"``), ``num-clients``
(K sources + 1 target; synthetic only, Office+Caltech always has 4), ``target`` (Office+Caltech
domain name), ``preprocessing`` (Office+Caltech, applied by each client to its own rows:
``"sum_zscore"``, the data set's recipe and the default, z-scores every feature within the
client's domain; ``"l2"`` only normalises rows, which leaves the domains' mean shift in place),
``data-seed`` and ``n-per-client`` (synthetic). Client ids are ``1..K`` for the
sources and ``K + 1`` for the target; a SuperNode's ``partition-id`` ``p`` is client ``p + 1``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..kernels import median_heuristic

__all__ = ["ClientData", "agree_bandwidth", "load_client_data", "make_federated_blobs"]

OFFICE_DOMAINS = ("amazon", "caltech", "dslr", "webcam")


@dataclass
class ClientData:
    client_id: int
    X: np.ndarray
    y: np.ndarray | None          # class indices 0..k-1 (None for the target)
    domain_id: int                # +client_id for a source, -client_id for the target
    n_classes: int
    y_true: np.ndarray | None = None   # target labels, for evaluation only
    name: str = ""

    @property
    def is_target(self) -> bool:
        return self.domain_id < 0


def make_federated_blobs(n_clients: int = 4, n_per_client: int = 120, n_input: int = 5,
                         n_classes: int = 3, seed: int = 0) -> list[ClientData]:
    """Seeded multi-domain blobs: each source domain and the target shift the class means.

    Examples
    --------
    >>> parts = make_federated_blobs(3, 20, seed=1)
    >>> [p.domain_id for p in parts], parts[0].X.shape
    ([1, 2, -3], (20, 5))
    """
    rng = np.random.default_rng([seed, 11])
    centers = rng.normal(scale=2.0, size=(n_classes, n_input))
    out = []
    for c in range(1, n_clients + 1):
        r = np.random.default_rng([seed, 12, c])
        shift = r.normal(scale=0.7 if c < n_clients else 1.2, size=n_input)
        y = np.arange(n_per_client) % n_classes
        X = centers[y] + shift + r.normal(size=(n_per_client, n_input))
        target = c == n_clients
        out.append(ClientData(c, X, None if target else y, -c if target else c, n_classes,
                              y if target else None, f"blob{c}"))
    return out


def _office(cfg: dict) -> list[ClientData]:
    from ..datasets import load_office_caltech

    target = str(cfg.get("target", "amazon"))
    if target not in OFFICE_DOMAINS:
        raise ValueError(f"target must be one of {OFFICE_DOMAINS}, got {target!r}.")
    ds = load_office_caltech(preprocessing=str(cfg.get("preprocessing", "sum_zscore")))
    names = [d for d in OFFICE_DOMAINS if d != target] + [target]
    out = []
    for i, name in enumerate(names, start=1):
        X, y = ds.get(name)
        y = y.astype(int) - 1
        last = i == len(names)
        out.append(ClientData(i, X, None if last else y, -i if last else i, 10,
                              y if last else None, name))
    return out


def load_all(cfg: dict) -> list[ClientData]:
    """Every client's data for run config ``cfg`` (sources first, the target last)."""
    ds = str(cfg.get("dataset", "synthetic"))
    if ds == "synthetic":
        return make_federated_blobs(int(cfg.get("num-clients", 4)),
                                    int(cfg.get("n-per-client", 120)),
                                    seed=int(cfg.get("data-seed", 0)))
    if ds == "office_caltech":
        return _office(cfg)
    raise ValueError(f"Unknown dataset {ds!r}; use 'synthetic' or 'office_caltech'.")


def load_client_data(cfg: dict, partition_id: int) -> ClientData:
    """The rows of SuperNode ``partition_id`` (client ``partition_id + 1``)."""
    parts = load_all(cfg)
    if not 0 <= int(partition_id) < len(parts):
        raise ValueError(f"partition-id {partition_id} outside 0..{len(parts) - 1}.")
    return parts[int(partition_id)]


def local_bandwidth(X: np.ndarray) -> float:
    """A client's own median-heuristic bandwidth (one scalar leaves the client)."""
    return median_heuristic(X, rule="median", random_state=0)


def agree_bandwidth(local_sigmas) -> float:
    """The shared ``sigma``: the median of the clients' local median heuristics."""
    return float(np.median(np.asarray(local_sigmas, dtype=float)))
