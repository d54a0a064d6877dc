"""A federated *job* = a flat run config; the same job runs in the simulator or on Flower.

:data:`DEFAULTS` lists every key (Flower's ``[tool.flwr.app.config]`` / ``--run-config`` use
the same names). :func:`simulate_job` runs a job in-process and returns the same result
dictionary the Flower ServerApp writes, so the two can be compared number for number.

An iterative job's ``target_accuracy`` comes with :func:`baseline` (the same model trained
on the pooled sources without the MMD term, and chance) where the job's data are all at hand;
:func:`baseline_warning` says when the model is below either. A data set may bring its own
defaults (:data:`DATASET_DEFAULTS`, then :data:`TARGET_DEFAULTS`, then the caller's keys): a
Flower app folder holds resolved values. The job key ``bandwidth`` is ``"median"`` (the median
of the clients' local median heuristics; with a trained extractor :data:`DEEP_SIGMA`), ``f``
times it (``"<f>*median"``) or a positive number; the agreed number is the result's ``sigma``.
The former key ``sigma`` (``0`` for the median) is read for one release with a
``FutureWarning`` (:func:`former_keys`).

The one-shot protocol ends with a projection ``W`` (2N x m), not a classifier:
:func:`oneshot_accuracy` reports what an iterative job reports, the accuracy on the target's
labels (evaluation only) of :func:`~shiftlearn.federated.train_softmax` trained on the
sources' projected random features (divided by their RMS row norm), beside the same softmax
without ``W`` (``source_only``) and ``chance``. It needs every source's rows and the target's
labels in one place (the simulator, a loopback deployment). Design notes:
``docs/dev/federated.md``.

Examples
--------
>>> res = simulate_job({"n-per-client": 30})
>>> ev = oneshot_accuracy({"n-per-client": 30}, res["sigma"], res["W"])
>>> sorted(ev), sorted(ev["baseline"])
(['baseline', 'target_accuracy'], ['chance', 'source_only'])
"""

from __future__ import annotations

import warnings

import numpy as np

from .._constraints import parse_bandwidth_spec
from .._stacklevel import user_stacklevel
from ..kernels import rff_map
from ._data import (
    agree_bandwidth,
    file_classes,
    join_list,
    load_all,
    load_files,
    local_bandwidth,
    n_clients_of,
    split_list,
)
from ._iterative import FedRFTCAConfig, predict, train_softmax
from ._oneshot import OneShotConfig
from ._run import run_iterative, run_oneshot, train_source_only
from ._simulator import NetworkConditions

__all__ = ["DATASET_DEFAULTS", "DEEP_SIGMA", "DEFAULTS", "FORMER_KEYS", "LIST_KEYS",
           "TARGET_DEFAULTS", "baseline", "baseline_warning", "check_bandwidth", "file_classes",
           "former_keys", "iterative_config", "job_config", "join_list", "load_all",
           "load_files", "n_clients_of", "oneshot_accuracy", "oneshot_config",
           "oneshot_warning", "resolve_sigma", "simulate_job", "split_list"]

DEFAULTS: dict = {
    "protocol": "oneshot",         # "oneshot" | "iterative"
    "dataset": "synthetic",        # "synthetic" | "office_caltech" | "digits" | "files"
    "source-files": "",            # files: the sources' tables, ";"- (or ",")-separated
    "target-file": "",             # files: the target's table
    "label-column": "-1",          # files: a header name or an index (-1: the last column)
    "feature-columns": "",         # files: names, comma-separated ("": all but the label)
    "classes": "",                 # files: comma-separated ("": the sources' labels pooled)
    "target": "",                  # "": amazon (office_caltech), usps (digits)
    "clients-per-domain": 1,       # digits: clients per source domain
    "preprocessing": "sum_zscore",  # office_caltech, per client: "sum_zscore" | "l2"
    "num-clients": 4,
    "n-per-client": 120,
    "data-seed": 0,
    "target-shift": 0.4,           # synthetic: target shift / class separation
    "n-features": 50,
    "n-components": 5,
    "bandwidth": "median",         # the median of the clients' local medians, or a number
    "seed": 0,
    "sampling": "gaussian",        # frequencies: "gaussian" (the paper's) | "orthogonal"
    "mu": 1.0,
    "rounds": 5,
    "local-steps": 5,
    "lr": 0.01,
    "lam": 1.0,
    "classifier-every": 1,
    "batch-size": 0,               # 0: full local batch
    "client-sampling": "paper",  # "paper" | "code" | "all" (sources per round)
    "extractor": "none",           # "none" | "mlp" | "cnn" (deep model: the deep extra)
    "classifier": "linear",        # "linear" | "fcnn" (the paper's 2 x 100)
    "device": "auto",              # deep model: "auto" (CUDA if present) | "cpu" | "cuda"
    "algorithm": "fedrftca",       # "fedrftca" | "fedavg" (same model, no MMD, all averaged)
    "subsets": "I",                # message subsets per type: "I" | "II" | "III" (Table III)
    "vote": False,                 # hard voting of the source classifiers (D-B3)
    "mmd": "projected",            # deep model: "projected" ||W^T dmu||^2 | "kernel" ||dmu||^2
    "secure-aggregation": False,   # oneshot only: Flower's SecAgg+ (the server sees sums)
    "secagg-frac-bits": 32,        # fixed point: each client rounds to 2**-32
    "secagg-int-bits": 20,         # every statistic below 2**20 in magnitude (rows/client)
    "secagg-threshold": 0,         # SecAgg+ shares to rebuild a mask; 0: n_clients - 1
    "wait-nodes-s": 60.0,
    "round-timeout-s": 60.0,
    "result-path": "",
}


#: Per data set defaults, applied under the caller's keys (see the module docstring).
DATASET_DEFAULTS: dict[str, dict] = {
    "digits": {"protocol": "iterative", "extractor": "cnn", "classifier": "fcnn",
               "n-features": 500, "n-components": 100, "bandwidth": 0.5, "rounds": 100,
               "local-steps": 5, "lr": 0.001, "lam": 0.1, "batch-size": 64,
               "classifier-every": 1, "mmd": "kernel"},
}

#: Per (data set, target) defaults, applied after :data:`DATASET_DEFAULTS` and before the
#: caller's keys: ``lam`` chosen without target labels by leave-one-source-domain-out in
#: ``benchmarks/federated/federated_digits.py`` (each source in turn the pseudo-target of a
#: federation of the other; mean accuracy over both pairs; candidates 0.1, 0.3, 1):
#: ->usps 0.3 (50.0 against 49.9 at 0.1 and 39.5 at 1), ->mnist 0.1 (69.8 / 67.8 / 63.9).
#: ``target=""`` is usps for digits. Other targets keep the data set's ``lam`` (0.1: the best
#: mean over the four pairs).
TARGET_DEFAULTS: dict[tuple[str, str], dict] = {
    ("digits", ""): {"lam": 0.3},
    ("digits", "usps"): {"lam": 0.3},
    ("digits", "mnist"): {"lam": 0.1},
}

#: ``sigma`` of the random features on unit-norm extracted features when the job says
#: ``bandwidth = "median"``.
DEEP_SIGMA = 0.5

#: job keys that hold a list, as one string (``;``- or ``,``-separated; a list in Python)
LIST_KEYS = ("source-files", "feature-columns", "classes")

#: former job keys, read for one release: ``{former: new}``
FORMER_KEYS = {"sigma": "bandwidth"}


def check_bandwidth(value):
    """The job key ``bandwidth`` checked: ``"median"``, ``"<f>*median"`` or a positive number
    (a numeric string, as a command line or a run config gives it, becomes a float).

    Examples
    --------
    >>> check_bandwidth("median"), check_bandwidth("0.5"), check_bandwidth(2)
    ('median', 0.5, 2.0)
    """
    if isinstance(value, str):
        try:
            value = float(value)
        except ValueError:
            parse_bandwidth_spec(value, ("median",), "bandwidth")
            return value
    return parse_bandwidth_spec(value, ("median",), "bandwidth")[0]


def former_keys(cfg: dict, given: dict | None = None) -> dict:
    """``cfg`` with a former key (:data:`FORMER_KEYS`) mapped onto its new one, with a
    ``FutureWarning`` naming it: ``sigma = 0`` becomes ``bandwidth = "median"``, another
    ``sigma`` the number. ``given`` (default ``cfg``) holds the keys the caller chose.

    Raises
    ------
    ValueError
        when ``sigma`` is given with a ``bandwidth`` other than the default ``"median"``.
    """
    given = cfg if given is None else given
    if "sigma" not in given:
        return cfg
    cfg = dict(cfg)
    sigma = cfg.pop("sigma")
    if "bandwidth" in given and given["bandwidth"] != "median":
        raise ValueError(f"The job sets both sigma={sigma!r} and bandwidth="
                         f"{given['bandwidth']!r}; sigma is the former key of bandwidth: set "
                         "bandwidth only.")
    try:
        value = "median" if float(sigma) == 0 else float(sigma)
    except (TypeError, ValueError):
        value = sigma
    warnings.warn(f"The job key sigma is renamed bandwidth; set bandwidth={value!r} (sigma "
                  "will be removed in the next release).", FutureWarning,
                  stacklevel=user_stacklevel())
    cfg["bandwidth"] = value
    return cfg


def job_config(overrides: dict | None = None) -> dict:
    """DEFAULTS, then the data set's :data:`DATASET_DEFAULTS`, then ``overrides`` (unknown keys
    are an error).

    Examples
    --------
    >>> job_config({"dataset": "digits", "rounds": 3})["extractor"], job_config()["extractor"]
    ('cnn', 'none')
    """
    overrides = former_keys(dict(overrides or {}))
    for k in overrides:
        if k not in DEFAULTS:
            raise ValueError(f"Unknown job key {k!r}; known keys: {sorted(DEFAULTS)}.")
    if "bandwidth" in overrides:
        overrides["bandwidth"] = check_bandwidth(overrides["bandwidth"])
    for k in LIST_KEYS:   # a list given in Python: one string, as a run config holds it
        if isinstance(overrides.get(k), list | tuple):
            overrides[k] = join_list(overrides[k], k)
    cfg = dict(DEFAULTS)
    dataset = str(overrides.get("dataset", cfg["dataset"]))
    cfg.update(DATASET_DEFAULTS.get(dataset, {}))
    cfg.update(TARGET_DEFAULTS.get((dataset, str(overrides.get("target", cfg["target"]))), {}))
    cfg.update(overrides)
    return cfg


def resolve_sigma(cfg: dict, local_sigmas) -> float:
    """The job's agreed ``sigma`` from its ``bandwidth``: a number as it is; ``"median"`` the
    median of the clients' local median heuristics (the numpy model) or :data:`DEEP_SIGMA` (a
    trained extractor: unit-norm features), ``"<f>*median"`` ``f`` times it. A ``cfg`` with
    the former key ``sigma`` is read through :func:`former_keys`."""
    cfg = former_keys(cfg)
    factor, rule = parse_bandwidth_spec(check_bandwidth(cfg["bandwidth"]), ("median",),
                                        "bandwidth")
    if rule is None:
        return factor
    if str(cfg.get("extractor", "none")) != "none":
        return factor * DEEP_SIGMA
    return factor * agree_bandwidth(list(local_sigmas))


def iterative_config(cfg: dict, sigma: float) -> FedRFTCAConfig:
    return FedRFTCAConfig(
        n_features=int(cfg["n-features"]), n_components=int(cfg["n-components"]),
        sigma=float(sigma), seed=int(cfg["seed"]), n_rounds=int(cfg["rounds"]),
        local_steps=int(cfg["local-steps"]), lr=float(cfg["lr"]), lam=float(cfg["lam"]),
        classifier_every=int(cfg["classifier-every"]),
        batch_size=int(cfg["batch-size"]) or None, client_sampling=str(cfg["client-sampling"]),
        sampling=str(cfg["sampling"]), extractor=str(cfg["extractor"]),
        classifier=str(cfg["classifier"]), device=str(cfg["device"]),
        algorithm=str(cfg["algorithm"]), subsets=str(cfg["subsets"]), vote=bool(cfg["vote"]),
        mmd=str(cfg["mmd"]))


def oneshot_config(cfg: dict, sigma: float) -> OneShotConfig:
    return OneShotConfig(n_features=int(cfg["n-features"]),
                         n_components=int(cfg["n-components"]), sigma=float(sigma),
                         seed=int(cfg["seed"]), mu=float(cfg["mu"]),
                         sampling=str(cfg["sampling"]))


def baseline(cfg: dict, sigma: float, parts=None) -> dict:
    """``{"source_only": accuracy, "chance": 1 / n_classes}`` for iterative job ``cfg``.

    ``source_only``: the job's model (same ``Omega``, initial ``W``, Adam steps) trained on
    the pooled sources with ``lam = 0``, scored on the target's labels (evaluation only).
    ``parts``: the job's :func:`~shiftlearn.federated._data.load_all` output, if loaded.
    """
    cfg = job_config(cfg)
    parts = load_all(cfg) if parts is None else parts
    target, k = parts[-1], parts[0].n_classes
    if target.y_true is None:
        raise ValueError("baseline needs the target's labels (y_true) to score the models.")
    ic = iterative_config(cfg, sigma)
    sources = [(p.X, p.y) for p in parts[:-1]]
    if ic.deep:
        from ._deep import predict_deep, train_central

        model = train_central(sources, target.X, ic, k, lam=0.0)
        pred = predict_deep(ic, model, target.X, k)
    else:
        W, C = train_source_only(sources, ic, n_classes=k)
        pred = predict(rff_map(target.X, ic.omega(target.X.shape[1])), W, C)
    return {"source_only": float(np.mean(pred == target.y_true)), "chance": 1.0 / k}


def baseline_warning(accuracy: float, base: dict, *, model: str = "FedRF-TCA",
                     baseline: str = "the source-only model trained centrally on the pooled "
                                     "sources",
                     hint: str = "compare lam=0 and other lam, rounds or sigma values"
                     ) -> str | None:
    """A sentence when ``accuracy`` is below the source-only baseline or not above chance.

    ``model``, ``baseline`` and ``hint`` name the model, its baseline and what to try (the
    one-shot job's words come from :func:`shiftlearn.federated.jobs.oneshot_warning`).

    Examples
    --------
    >>> baseline_warning(0.80, {"source_only": 0.75, "chance": 1 / 3}) is None
    True
    >>> print(baseline_warning(0.19, {"source_only": 0.33, "chance": 1 / 3}).split(":")[0])
    FedRF-TCA (19.0%) is below the source-only model trained centrally on the pooled sources (33.0%)
    """
    so, chance = base["source_only"], base["chance"]
    msgs = []
    if accuracy < so:
        msgs.append(f"{model} ({accuracy:.1%}) is below {baseline} ({so:.1%}): adaptation "
                    f"hurt on this run; {hint}")
    if accuracy <= chance:
        msgs.append(f"{model} ({accuracy:.1%}) is not above chance ({chance:.1%})")
    if so <= chance:
        msgs.append(f"the source-only model is not above chance ({so:.1%}): the target is not "
                    "predictable from the sources with these features (a domain shift as "
                    "large as the class separation?)")
    return "; ".join(msgs) + "." if msgs else None


def simulate_job(overrides: dict | None = None,
                 conditions: NetworkConditions | None = None) -> dict:
    """Run a job in the simulator; returns ``{"W", "C" (iterative), "eigenvalues" (one-shot),
    "sigma", "target_accuracy", "baseline", "warning", "bytes_up", "bytes_down", "rounds"}``.

    A one-shot job with ``secure-aggregation = true`` returns what the Flower run's server
    computes from the SecAgg+ sum, bit for bit (:func:`~shiftlearn.federated._secagg.
    secure_oneshot`; no network faults are simulated for it, ``conditions`` is ignored).

    Iterative jobs: ``target_accuracy`` (the federated model on the target's labels, for
    evaluation only; absent when the target has none, e.g. a target file without its label
    column), ``baseline`` (:func:`baseline`: ``source_only`` and ``chance``) and,
    when the federated model is below either, ``warning`` (:func:`baseline_warning`).

    Examples
    --------
    >>> res = simulate_job({"protocol": "iterative", "rounds": 3, "n-per-client": 30})
    >>> sorted(res["baseline"]), round(res["baseline"]["chance"], 3)
    (['chance', 'source_only'], 0.333)
    """
    cfg = job_config(overrides)
    if cfg["protocol"] == "iterative" and (cfg["extractor"] != "none"
                                           or cfg["classifier"] != "linear"):
        from ._deep import require_torch

        require_torch()   # before any data are loaded
    parts = load_all(cfg)
    sigma = resolve_sigma(cfg, [local_bandwidth(p.X) for p in parts])
    target = parts[-1]
    out: dict = {"sigma": sigma, "protocol": cfg["protocol"]}
    if cfg["secure-aggregation"] and cfg["protocol"] != "oneshot":
        raise ValueError("secure-aggregation=true needs protocol=oneshot: the iterative "
                         "protocol exchanges per-client embeddings (docs/federated.md).")
    if cfg["secure-aggregation"]:
        from ._secagg import secure_oneshot

        oc = oneshot_config(cfg, sigma)
        sec = secure_oneshot([(p.X, p.y, p.domain_id) for p in parts], oc,
                             int(cfg["secagg-frac-bits"]), int(cfg["secagg-int-bits"]))
        out.update(W=sec["W"], eigenvalues=sec["eigenvalues"],
                   side_counts=sec["side_counts"], max_entry_error=sec["max_entry_error"])
        return out
    if cfg["protocol"] == "oneshot":
        oc = oneshot_config(cfg, sigma)
        res = run_oneshot([(p.X, p.y, p.domain_id) for p in parts], oc,
                          n_classes=parts[0].n_classes, conditions=conditions)
        out.update(W=res.W, eigenvalues=res.eigenvalues, rounds=res.rounds)
        traffic = res.traffic
    elif cfg["protocol"] == "iterative":
        ic = iterative_config(cfg, sigma)
        res = run_iterative([(p.X, p.y) for p in parts[:-1]], target.X, ic,
                            n_classes=parts[0].n_classes, conditions=conditions)
        out.update(W=res.W, C=res.C, rounds=ic.n_rounds)
        if res.G is not None:
            out["G"] = res.G
        if ic.vote:
            out["voters"] = sorted(res.vote_C)
        if target.y_true is not None:   # a target file without labels: nothing to score
            acc = float(np.mean(res.predict(target.X, ic) == target.y_true))
            base = baseline(cfg, sigma, parts)
            out.update(target_accuracy=acc, baseline=base)
            warning = baseline_warning(acc, base)
            if warning:
                out["warning"] = warning
        traffic = res.traffic
    else:
        raise ValueError(f"protocol must be 'oneshot' or 'iterative', got {cfg['protocol']!r}.")
    out["rejections"] = dict(res.rejections)
    out["bytes_up"] = int(sum(r["nbytes"] for r in traffic.records if r["direction"] == "up"))
    out["bytes_down"] = int(sum(r["nbytes"] for r in traffic.records
                                if r["direction"] == "down"))
    return out


# ------------------------------------------------- a one-shot result beside its baselines
#: Adam steps of the evaluation classifier (full batch).
STEPS = 500


def _softmax_accuracy(Hs: np.ndarray, ys: np.ndarray, Ht: np.ndarray, yt: np.ndarray,
                      n_classes: int, lr: float, seed: int) -> float:
    scale = float(np.sqrt(np.mean(np.sum(Hs ** 2, axis=1)))) or 1.0
    C = train_softmax(Hs / scale, ys, n_classes, steps=STEPS, lr=lr, seed=seed)
    return float(np.mean(predict(Ht / scale, np.eye(Hs.shape[1]), C) == yt))


def oneshot_accuracy(cfg: dict, sigma: float, W: np.ndarray,
                     parts: list | None = None) -> dict:
    """``{"target_accuracy", "baseline": {"source_only", "chance"}}`` of one-shot job ``cfg``.

    Parameters
    ----------
    cfg : dict
        The job (its keys, as given to :func:`simulate_job`).
    sigma : float
        The run's agreed bandwidth (the result's ``sigma``).
    W : ndarray of shape (2 * n_features, n_components)
        The run's projection (the result's ``W``).
    parts : list of ClientData or None
        The job's data (``load_all``), if already loaded.
    """
    cfg = job_config(cfg)
    parts = load_all(cfg) if parts is None else parts
    target, sources = parts[-1], parts[:-1]
    if target.y_true is None:
        raise ValueError("the one-shot accuracy needs the target's labels (y_true); this "
                         "data set has none, so only the projection W can be reported.")
    W = np.asarray(W, dtype=np.float64)
    oc = oneshot_config(cfg, sigma)
    omega = oc.omega(target.X.shape[1])
    if W.ndim != 2 or W.shape[0] != 2 * omega.shape[1]:
        raise ValueError(f"W has shape {W.shape}, but the job's {omega.shape[1]} random "
                         f"features need {2 * omega.shape[1]} rows; pass the result of the "
                         "same job.")
    Zs = rff_map(np.vstack([p.X for p in sources]), omega)
    ys = np.concatenate([np.asarray(p.y, dtype=int) for p in sources])
    Zt = rff_map(target.X, omega)
    k, lr, seed = parts[0].n_classes, float(cfg["lr"]), int(cfg["seed"])
    return {"target_accuracy": _softmax_accuracy(Zs @ W, ys, Zt @ W, target.y_true, k, lr,
                                                 seed),
            "baseline": {"source_only": _softmax_accuracy(Zs, ys, Zt, target.y_true, k, lr,
                                                          seed),
                         "chance": 1.0 / k}}


def oneshot_warning(accuracy: float, base: dict) -> str | None:
    """A sentence when the one-shot model is below its source-only baseline or chance.

    Examples
    --------
    >>> oneshot_warning(0.8, {"source_only": 0.7, "chance": 0.5}) is None
    True
    >>> oneshot_warning(0.6, {"source_only": 0.7, "chance": 0.5}).split(":")[0]
    'one-shot RF-TCA (60.0%) is below the same classifier without the projection (70.0%)'
    """
    return baseline_warning(accuracy, base, model="one-shot RF-TCA",
                            baseline="the same classifier without the projection",
                            hint="compare other mu, n-components or sigma values")
