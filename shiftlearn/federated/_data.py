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

``dataset="files"``: one table per client (CSV/TSV/Parquet/..., read by
:func:`shiftlearn.io.read_table`): ``source-files`` (paths separated by ``;``, or by ``,`` when
no ``;`` appears) and ``target-file`` in the job, or, on Flower, each SuperNode's
``--node-config 'data-file="..."'`` (then ``num-clients`` counts them). ``label-column`` (a
header name or an index, ``-1`` the last), ``feature-columns`` (names, comma-separated; empty:
every other column) and ``classes`` (comma-separated; empty: the sources' labels pooled, which
needs every source file at hand, so a SuperNode reading only its own file needs it). Class
``i`` is the ``i``-th of the classes sorted by value, the rule of
:func:`shiftlearn.io.encode_labels`; a label outside them is an error. The target's label
column is optional (found by name; evaluation only).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..kernels import median_heuristic

__all__ = ["ClientData", "agree_bandwidth", "digit_domains", "file_classes", "join_list",
           "load_client_data", "load_files", "make_federated_blobs", "n_classes_of",
           "n_clients_of", "split_list", "uci_digits_16"]

OFFICE_DOMAINS = ("amazon", "caltech", "dslr", "webcam")
DIGIT_DOMAINS = ("mnist", "usps", "uci")
DATASETS = ("synthetic", "office_caltech", "digits", "files")


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
    if ds == "files":   # the job's files, else num-clients (files named by the SuperNodes)
        return len(_file_list(cfg)) or int(cfg.get("num-clients", 4))
    raise ValueError(f"Unknown dataset {ds!r}; use one of {DATASETS}.")


def n_classes_of(cfg: dict) -> int:
    """Number of classes of run config ``cfg``'s data set (``files``: its key ``classes``)."""
    if str(cfg.get("dataset", "synthetic")) == "files":
        return len(_classes_of(cfg, []))
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
    if ds == "files":
        return load_files(cfg)
    raise ValueError(f"Unknown dataset {ds!r}; use one of {DATASETS}.")


def load_client_data(cfg: dict, partition_id: int, data_file: str | None = None
                     ) -> ClientData:
    """The rows of SuperNode ``partition_id`` (client ``partition_id + 1``); with
    ``dataset="files"`` only its own table (``data_file``, its ``--node-config``, else the
    job's entry for it: :func:`load_file_client`)."""
    if str(cfg.get("dataset", "synthetic")) == "files":
        return load_file_client(cfg, partition_id, data_file)
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


# ------------------------------------------------------------- a table per client ----------
#: Job keys of ``dataset="files"`` (see :func:`load_files` and ``docs/federated.md``).
FILE_KEYS = ("source-files", "target-file", "label-column", "feature-columns", "classes")


def split_list(value, what: str) -> list[str]:
    """A job's list value: a list/tuple as it is, or a string split on ``;`` when it holds
    one, else on ``,`` (a Flower run config holds strings only); blanks stripped, empty
    items dropped.

    Examples
    --------
    >>> split_list("a.csv, b.csv", "source-files"), split_list("x,1.csv;y.csv", "f")
    (['a.csv', 'b.csv'], ['x,1.csv', 'y.csv'])
    """
    if isinstance(value, list | tuple):
        items = [str(v).strip() for v in value]
    elif isinstance(value, str):
        items = [v.strip() for v in value.split(";" if ";" in value else ",")]
    else:
        raise ValueError(f"{what} must be a string or a list of strings, got {value!r}.")
    return [v for v in items if v]


def join_list(items, what: str) -> str:
    """A list as one job value that :func:`split_list` reads back (a Flower run config holds
    strings only): joined by ``,``, or by ``;`` (with one at the end for a single item) when
    an item holds a comma; an item holding a ``;`` is refused.

    Examples
    --------
    >>> join_list(["a.csv", "b.csv"], "f"), join_list(["x,1.csv"], "f")
    ('a.csv,b.csv', 'x,1.csv;')
    >>> split_list(join_list(["x,1.csv"], "f"), "f")
    ['x,1.csv']
    """
    items = [str(v).strip() for v in items]
    bad = [v for v in items if ";" in v]
    if bad:
        raise ValueError(f"{what}: {bad[0]!r} holds a ';', which separates the entries of a "
                         "job's list; rename it.")
    if not any("," in v for v in items):
        return ",".join(items)
    return ";".join(items) + (";" if len(items) == 1 else "")


def _file_list(cfg: dict) -> list[str]:
    """Every client's file named by the job: the sources, then the target (empty when the
    files come from the SuperNodes' ``data-file``)."""
    sources = split_list(cfg.get("source-files", ""), "source-files")
    target = str(cfg.get("target-file", "") or "").strip()
    if bool(sources) != bool(target):
        raise ValueError("dataset='files' needs both source-files (one or more) and "
                         "target-file, or neither (each SuperNode's --node-config "
                         "data-file=\"...\" names its own file).")
    return [*sources, target] if sources else []


def _label_spec(cfg: dict):
    spec = str(cfg.get("label-column", "-1")).strip()
    if not spec:
        raise ValueError("label-column is empty; name the label column (or give its index, "
                         "-1 for the last).")
    return spec


def _named(spec: str) -> bool:
    return not re.fullmatch(r"[+-]?\d+", spec)


def _read_client(path: str, cfg: dict, target: bool):
    """One client's table: ``(X, labels as values or None, feature names or None, path)``.

    A source's label column must be filled on every row. The target's is optional: it is read
    when the job names the label column and the target's header has it (an index cannot tell a
    label column from a feature in one file alone), and then it must be filled on every row or
    on none (its labels serve evaluation only).
    """
    from ..io import TableError, read_table

    spec = _label_spec(cfg)
    role = "target-file" if target else "source file"
    if not Path(path).is_file():
        raise ValueError(f"{role} {path}: no such file; check the path.")
    t = None
    if target and _named(spec):
        try:
            t = read_table(path, label_column=spec, allow_missing_labels=True)
        except TableError as exc:   # no such column (or no header): a target without labels
            if "no column named" not in str(exc) and "no header line" not in str(exc):
                raise
    if target:
        if t is None:
            t = read_table(path, with_labels=False)
        else:
            given = sum(v is not None for v in t.y.tolist())
            if given == 0:
                t.y = None
            elif given < len(t.y):
                raise ValueError(f"{path}: the target's label column {spec!r} is filled on "
                                 f"{given} of {len(t.y)} rows; fill it on every row (its "
                                 "labels only score the model) or on none.")
    else:
        try:
            t = read_table(path, label_column=spec)
        except TableError as exc:
            raise ValueError(f"{exc} (job key label-column)") from None
    X, names = t.X, t.feature_names
    wanted = split_list(cfg.get("feature-columns", ""), "feature-columns")
    if wanted:
        if not names:
            raise ValueError(f"{path}: feature-columns names columns but the file has no "
                             "header line; add one, or leave feature-columns empty.")
        missing = [c for c in wanted if c not in names]
        if missing:
            raise ValueError(f"{path}: no column {', '.join(repr(c) for c in missing)} "
                             f"among its feature columns ({', '.join(names[:20])}); check "
                             "feature-columns.")
        X = X[:, [names.index(c) for c in wanted]]
        names = list(wanted)
    return X, t.y, (list(names) if names else None), path


def _classes_of(cfg: dict, source_labels: list) -> np.ndarray:
    """The job's classes as values, sorted: the job key ``classes`` where given, else the
    sources' labels pooled (only where every source file is at hand)."""
    from ..io import encode_labels

    listed = split_list(cfg.get("classes", ""), "classes")
    if listed:
        if len(set(listed)) != len(listed):
            raise ValueError(f"classes lists a class twice: {listed}; list each once.")
        classes, _ = encode_labels([np.array(listed, dtype=object)], what="job key classes")
        if len(classes) != len(listed):
            raise ValueError(f"classes {listed} writes one class two ways (e.g. 1 and 1.0); "
                             "list each once.")
    elif source_labels:
        classes, _ = encode_labels(source_labels, what="the source files' labels")
    else:
        raise ValueError("a client reading only its own file needs the job key classes (the "
                         "class names, comma-separated, e.g. classes=\"cat,dog\"), so that "
                         "every client codes its labels the same way.")
    if len(classes) < 2:
        raise ValueError(f"the sources hold a single class ({classes.tolist()[0]!r}); "
                         "adaptation for classification needs at least two.")
    return classes


def _codes(labels, classes: np.ndarray, path: str) -> np.ndarray:
    """``labels`` (values) as indices into ``classes``; a label outside them is an error."""
    from ..io import encode_labels

    pooled, codes = encode_labels([np.asarray(classes, dtype=object), labels],
                                  names=["the job's classes", path])
    extra = [v for v in pooled.tolist() if v not in set(np.asarray(classes).tolist())]
    if extra:
        raise ValueError(f"{path}: label(s) {', '.join(repr(v) for v in extra[:5])} are not "
                         f"among the job's classes ({', '.join(map(str, classes.tolist()))}); "
                         "fix the file or list every class in the job key classes.")
    return codes[1]


def _client(cid: int, n_clients: int, X, labels, classes, path: str) -> ClientData:
    k = len(classes)
    name = Path(path).name
    if cid == n_clients:
        y_true = None if labels is None else _codes(labels, classes, path)
        return ClientData(cid, X, None, -cid, k, y_true, name)
    return ClientData(cid, X, _codes(labels, classes, path), cid, k, None, name)


def load_files(cfg: dict) -> list[ClientData]:
    """Every client's table of a ``dataset="files"`` job (the simulator's view: all files at
    hand), sources first, the target last.

    Checks what a federation of separate machines cannot: the same feature columns in every
    file (names and order, where the files have headers; otherwise their number), at least two
    classes over the sources, the target not one column wider than the sources (an unnamed
    label column). Labels are coded by :func:`_classes_of`.
    """
    paths = _file_list(cfg)
    if not paths:
        raise ValueError("dataset='files' needs the job keys source-files and target-file "
                         "(or, on Flower, each SuperNode's --node-config data-file).")
    tables = [_read_client(p, cfg, i == len(paths) - 1) for i, p in enumerate(paths)]
    ref = tables[0]
    for X, _, names, path in tables[1:]:
        if names and ref[2] and names != ref[2]:
            missing = [c for c in ref[2] if c not in names]
            extra = [c for c in names if c not in ref[2]]
            what = "; ".join(([f"missing {', '.join(map(repr, missing))}"] if missing else [])
                             + ([f"extra {', '.join(map(repr, extra))}"] if extra else [])
                             ) or "the same columns in another order"
            raise ValueError(f"{path}: feature columns differ from {ref[3]}'s ({what}); give "
                             "every file the same columns, or pick them with feature-columns.")
        if X.shape[1] != ref[0].shape[1]:
            hint = (" (a label column? name it with label-column, in files with a header)"
                    if X.shape[1] == ref[0].shape[1] + 1 else "")
            raise ValueError(f"{path} has {X.shape[1]} feature columns but {ref[3]} has "
                             f"{ref[0].shape[1]}; every file needs the same feature columns"
                             f"{hint}.")
    classes = _classes_of(cfg, [t[1] for t in tables[:-1]])
    n = len(tables)
    parts = [_client(i, n, X, y, classes, path)
             for i, (X, y, _, path) in enumerate(tables, start=1)]
    present = np.unique(np.concatenate([p.y for p in parts[:-1]]))
    if present.size < 2:
        one = classes.tolist()[present[0]]
        raise ValueError(f"the source files hold a single class ({one!r}); adaptation for "
                         "classification needs at least two.")
    return parts


def file_classes(cfg: dict) -> list:
    """The classes (values, sorted) of a ``dataset="files"`` job whose files are at hand:
    its key ``classes``, else the labels of its source files pooled."""
    paths = _file_list(cfg)
    labels = [_read_client(p, cfg, False)[1] for p in paths[:-1]]
    return _classes_of(cfg, labels).tolist()


def load_file_client(cfg: dict, partition_id: int, data_file: str | None = None
                     ) -> ClientData:
    """One client's table, read alone (a SuperNode): ``data_file`` (its ``--node-config``)
    or the job's entry for ``partition_id``; its labels coded by the job key ``classes``."""
    n = n_clients_of(cfg)
    if not 0 <= int(partition_id) < n:
        raise ValueError(f"partition-id {partition_id} outside 0..{n - 1}.")
    path = str(data_file or "").strip()
    if not path:
        paths = _file_list(cfg)
        if not paths:
            raise ValueError(f"client {int(partition_id) + 1} has no file: give its SuperNode "
                             "--node-config 'data-file=\"/path/to/table.csv\"', or the job "
                             "keys source-files and target-file.")
        path = paths[int(partition_id)]
    cid = int(partition_id) + 1
    X, y, _, path = _read_client(path, cfg, cid == n)
    classes = _classes_of(cfg, [])
    return _client(cid, n, X, y, classes, path)
