"""Which rows each client holds, from a flat run config (shared by the Flower apps, the
simulator runs, the benchmarks and the tests, so that all of them see the same partitions).

Run-config keys: ``dataset`` (``"synthetic"``, ``"office_caltech"`` or ``"digits"``),
``num-clients`` (K sources + 1 target; synthetic only, Office+Caltech always has 4), ``target``
(Office+Caltech or digits domain name; empty: amazon / usps), ``clients-per-domain``
(digits), ``preprocessing`` (Office+Caltech, applied by each client to its own rows:
``"sum_zscore"``, the data set's recipe and the default, z-scores every feature within the
client's domain; ``"l2"`` only normalises rows, which leaves the domains' mean shift in place),
``data-seed``, ``n-per-client`` and ``target-shift`` (synthetic, see
:func:`make_federated_blobs`). Client ids are ``1..K`` for the sources and ``K + 1`` for the
target; a SuperNode's ``partition-id`` ``p`` is client ``p + 1``.

``dataset="digits"`` holds three domains of 16 x 16 grey digit images, pixels in
[0, 1]: ``mnist`` (2,000) and ``usps`` (1,800), the MNIST+USPS subset of the data home, and
``uci`` (1,797), scikit-learn's bundled ``load_digits`` 8 x 8 images (values 0..16, no
download) divided by 16 and enlarged to 16 x 16 by bilinear interpolation
(``scipy.ndimage.zoom``, order 1). ``target`` names the target domain (``usps``, ``mnist`` or
``uci``); the other two are the sources, each split into ``clients-per-domain`` clients (rows
dealt in a seeded random order, ``data-seed``). No preprocessing beyond the [0, 1] scale: the
deep model learns its own features, and every client's pixels already share the scale.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..kernels import median_heuristic

__all__ = ["ClientData", "agree_bandwidth", "digit_domains", "load_client_data",
           "make_federated_blobs", "n_classes_of", "n_clients_of", "uci_digits_16"]

OFFICE_DOMAINS = ("amazon", "caltech", "dslr", "webcam")
DIGIT_DOMAINS = ("mnist", "usps", "uci")
DATASETS = ("synthetic", "office_caltech", "digits")


@dataclass
class ClientData:
    """One client's rows, as :func:`make_federated_blobs` and :func:`load_client_data` give them.

    ``X`` (n, d) its features; ``y`` its class indices ``0..n_classes-1`` (``None`` for the
    target, whose labels ``y_true`` serve evaluation only); ``domain_id`` ``+client_id`` for a
    source, ``-client_id`` for the target; ``name`` the domain's name where it has one.
    """

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


def _centers(rng: np.random.Generator, n_classes: int, n_input: int,
             separation: float) -> np.ndarray:
    """Class centres at distance exactly ``separation`` from each other (a regular simplex in
    a random orientation) when ``n_classes <= n_input``; otherwise Gaussian centres rescaled
    so that the closest two are ``separation`` apart."""
    if n_classes <= n_input:
        Q, _ = np.linalg.qr(rng.standard_normal((n_input, n_classes)))
        simplex = np.eye(n_classes) - 1.0 / n_classes      # rows sqrt(2) apart
        return (simplex @ Q.T) * (separation / np.sqrt(2.0))
    c = rng.standard_normal((n_classes, n_input))
    closest = min(np.linalg.norm(c[a] - c[b]) for a in range(n_classes) for b in range(a))
    return c * (separation / closest)


def _unit(rng: np.random.Generator, n_input: int) -> np.ndarray:
    v = rng.standard_normal(n_input)
    return v / np.linalg.norm(v)


def make_federated_blobs(n_clients: int = 4, n_per_client: int = 120, n_input: int = 5,
                         n_classes: int = 3, seed: int = 0, *, separation: float = 4.0,
                         source_shift: float = 0.15,
                         target_shift: float = 0.4) -> list[ClientData]:
    """Seeded multi-domain Gaussian blobs: ``n_clients - 1`` labeled sources and one target,
    each domain a translation of the same classes, with the shift sizes fixed by design.

    Every domain holds ``n_per_client`` rows, classes in turn (``y = i % n_classes``), each row
    its class centre + the domain's shift + standard normal noise (within-class standard
    deviation 1 in every direction).

    Parameters
    ----------
    n_clients : int
        Number of domains (>= 2): clients ``1..n_clients - 1`` are sources, the last is the
        target.
    n_per_client : int
        Rows per domain (>= ``n_classes``, so every domain holds every class).
    n_input, n_classes, seed : int
    separation : float
        Distance between class centres, in within-class standard deviations (every pair
        exactly when ``n_classes <= n_input``, else the closest pair).
    source_shift : float
        Each source's translation, a random direction of length ``source_shift *
        separation``.
    target_shift : float
        The target's translation **relative to the mean of the sources' shifts** (the centre
        of the pooled sources), a random direction of length ``target_shift * separation``.

    Returns
    -------
    list of ClientData
        Sources first (``y`` set), the target last (``y = None``, ``y_true`` for evaluation).

    Notes
    -----
    With ``target_shift < 0.5`` no target class centre moves past the midpoint towards
    another class's pooled-source centre, so every seed poses a well-defined adaptation
    problem; larger values can pose an ill-defined one on purpose (the job result's
    ``warning`` reports it). Design notes: ``docs/dev/federated.md``.

    Examples
    --------
    >>> parts = make_federated_blobs(3, 20, seed=1)
    >>> [p.domain_id for p in parts], parts[0].X.shape
    ([1, 2, -3], (20, 5))
    """
    for name, v, lo in (("n_clients", n_clients, 2), ("n_per_client", n_per_client, n_classes),
                        ("n_input", n_input, 1), ("n_classes", n_classes, 2)):
        if not isinstance(v, int | np.integer) or v < lo:
            raise ValueError(f"make_federated_blobs: {name} must be an integer >= {lo}, got "
                             f"{v!r}.")
    if not (np.isfinite(separation) and separation > 0):
        raise ValueError(f"make_federated_blobs: separation must be a finite number > 0, got "
                         f"{separation!r}.")
    for name, v in (("source_shift", source_shift), ("target_shift", target_shift)):
        if not (np.isfinite(v) and v >= 0):
            raise ValueError(f"make_federated_blobs: {name} must be a finite number >= 0 (a "
                             f"fraction of separation), got {v!r}.")
    centers = _centers(np.random.default_rng([seed, 11]), n_classes, n_input, separation)
    rngs = [np.random.default_rng([seed, 12, c]) for c in range(1, n_clients + 1)]
    shifts = [_unit(r, n_input) * source_shift * separation for r in rngs[:-1]]
    shifts.append(np.mean(shifts, axis=0) + _unit(rngs[-1], n_input) * target_shift
                  * separation)
    out = []
    for c, (r, shift) in enumerate(zip(rngs, shifts, strict=True), start=1):
        target = c == n_clients
        y = np.arange(n_per_client) % n_classes
        X = centers[y] + shift + r.standard_normal((n_per_client, n_input))
        out.append(ClientData(c, X, None if target else y, -c if target else c, n_classes,
                              y if target else None, f"blob{c}"))
    return out


def _office(cfg: dict) -> list[ClientData]:
    from ..datasets import load_office_caltech

    target = str(cfg.get("target") or "amazon")
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


def uci_digits_16() -> tuple[np.ndarray, np.ndarray]:
    """scikit-learn's 1,797 UCI digits as 16 x 16 images in [0, 1] (rows of 256), labels 0..9.

    Examples
    --------
    >>> X, y = uci_digits_16()
    >>> X.shape, float(X.min()) >= 0.0, float(X.max()) <= 1.0, int(y.max())
    ((1797, 256), True, True, 9)
    """
    from scipy.ndimage import zoom
    from sklearn.datasets import load_digits

    d = load_digits()
    images = zoom(d.images / 16.0, (1, 2, 2), order=1, grid_mode=True, mode="nearest")
    return np.clip(images, 0.0, 1.0).reshape(len(images), 256), d.target.astype(np.int64)


def digit_domains(data_home=None) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """``{"mnist": (X, y), "usps": (X, y), "uci": (X, y)}``: 16 x 16 images in [0, 1] as rows of
    256 (row-major, upright), labels 0..9 (the digit)."""
    from ..datasets import load_mnist_usps

    ds = load_mnist_usps(data_home, preprocessing="none")
    out = {}
    for name in ("mnist", "usps"):
        X, y = ds.get(name)
        out[name] = (np.clip(X, 0.0, 1.0), y.astype(np.int64) - 1)   # labels 1..10 = digit + 1
    out["uci"] = uci_digits_16()
    return out


def _digits(cfg: dict) -> list[ClientData]:
    target = str(cfg.get("target") or "usps")
    if target not in DIGIT_DOMAINS:
        raise ValueError(f"target must be one of {DIGIT_DOMAINS} for dataset='digits', got "
                         f"{target!r}.")
    per = int(cfg.get("clients-per-domain", 1))
    if per < 1:
        raise ValueError(f"clients-per-domain must be >= 1, got {per}.")
    domains = digit_domains()
    rng = np.random.default_rng([int(cfg.get("data-seed", 0)), 21])
    out: list[ClientData] = []
    for name in [d for d in DIGIT_DOMAINS if d != target]:
        X, y = domains[name]
        for j, rows in enumerate(np.array_split(rng.permutation(len(y)), per)):
            rows = np.sort(rows)
            cid = len(out) + 1
            out.append(ClientData(cid, X[rows], y[rows], cid, 10, None,
                                  name if per == 1 else f"{name}{j + 1}"))
    X, y = domains[target]
    cid = len(out) + 1
    out.append(ClientData(cid, X, None, -cid, 10, y, target))
    return out


def n_clients_of(cfg: dict) -> int:
    """How many clients (sources + the target) run config ``cfg`` has, without loading data."""
    ds = str(cfg.get("dataset", "synthetic"))
    if ds == "synthetic":
        return int(cfg.get("num-clients", 4))
    if ds == "office_caltech":
        return len(OFFICE_DOMAINS)
    if ds == "digits":
        return 2 * int(cfg.get("clients-per-domain", 1)) + 1
    raise ValueError(f"Unknown dataset {ds!r}; use one of {DATASETS}.")


def n_classes_of(cfg: dict) -> int:
    """Number of classes of run config ``cfg``'s data set."""
    return 3 if str(cfg.get("dataset", "synthetic")) == "synthetic" else 10


def load_all(cfg: dict) -> list[ClientData]:
    """Every client's data for run config ``cfg`` (sources first, the target last)."""
    ds = str(cfg.get("dataset", "synthetic"))
    if ds == "synthetic":
        return make_federated_blobs(int(cfg.get("num-clients", 4)),
                                    int(cfg.get("n-per-client", 120)),
                                    seed=int(cfg.get("data-seed", 0)),
                                    target_shift=float(cfg.get("target-shift", 0.4)))
    if ds == "office_caltech":
        return _office(cfg)
    if ds == "digits":
        return _digits(cfg)
    raise ValueError(f"Unknown dataset {ds!r}; use one of {DATASETS}.")


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
