"""A federated *job* = a flat run config; the same job runs in the simulator or on Flower.

:data:`DEFAULTS` lists every key (Flower's ``[tool.flwr.app.config]`` / ``--run-config`` use
the same names). :func:`simulate_job` runs a job in-process and returns the same result
dictionary the Flower ServerApp writes, so the two can be compared number for number.
"""

from __future__ import annotations

import numpy as np

from ..kernels import rff_map
from ._data import agree_bandwidth, load_all, local_bandwidth
from ._iterative import FedRFTCAConfig, predict
from ._oneshot import OneShotConfig
from ._run import run_iterative, run_oneshot
from ._simulator import NetworkConditions

__all__ = ["DEFAULTS", "iterative_config", "job_config", "oneshot_config", "simulate_job"]

DEFAULTS: dict = {
    "protocol": "oneshot",         # "oneshot" | "iterative"
    "dataset": "synthetic",        # "synthetic" | "office_caltech"
    "target": "amazon",
    "preprocessing": "sum_zscore",  # office_caltech, per client: "sum_zscore" | "l2"
    "num-clients": 4,
    "n-per-client": 120,
    "data-seed": 0,
    "n-features": 50,
    "n-components": 5,
    "sigma": 0.0,                  # 0: median of the clients' local median heuristics
    "seed": 0,
    "frequencies": "gaussian",     # "gaussian" (the paper's) | "orthogonal"
    "mu": 1.0,
    "rounds": 5,
    "local-steps": 5,
    "lr": 0.01,
    "lam": 1.0,
    "classifier-every": 1,
    "batch-size": 0,               # 0: full local batch
    "sampling": "paper",
    "wait-nodes-s": 60.0,
    "round-timeout-s": 60.0,
    "result-path": "",
}


def job_config(overrides: dict | None = None) -> dict:
    """DEFAULTS updated with ``overrides`` (unknown keys are an error)."""
    cfg = dict(DEFAULTS)
    for k, v in (overrides or {}).items():
        if k not in DEFAULTS:
            raise ValueError(f"Unknown job key {k!r}; known keys: {sorted(DEFAULTS)}.")
        cfg[k] = v
    return cfg


def iterative_config(cfg: dict, sigma: float) -> FedRFTCAConfig:
    return FedRFTCAConfig(
        n_features=int(cfg["n-features"]), n_components=int(cfg["n-components"]),
        sigma=float(sigma), seed=int(cfg["seed"]), n_rounds=int(cfg["rounds"]),
        local_steps=int(cfg["local-steps"]), lr=float(cfg["lr"]), lam=float(cfg["lam"]),
        classifier_every=int(cfg["classifier-every"]),
        batch_size=int(cfg["batch-size"]) or None, sampling=str(cfg["sampling"]),
        frequencies=str(cfg["frequencies"]))


def oneshot_config(cfg: dict, sigma: float) -> OneShotConfig:
    return OneShotConfig(n_features=int(cfg["n-features"]),
                         n_components=int(cfg["n-components"]), sigma=float(sigma),
                         seed=int(cfg["seed"]), mu=float(cfg["mu"]),
                         frequencies=str(cfg["frequencies"]))


def simulate_job(overrides: dict | None = None,
                 conditions: NetworkConditions | None = None) -> dict:
    """Run a job in the simulator; returns ``{"W", "C" (iterative), "eigenvalues" (one-shot),
    "sigma", "target_accuracy", "bytes_up", "bytes_down", "rounds"}``."""
    cfg = job_config(overrides)
    parts = load_all(cfg)
    sigma = float(cfg["sigma"]) or agree_bandwidth([local_bandwidth(p.X) for p in parts])
    target = parts[-1]
    out: dict = {"sigma": sigma, "protocol": cfg["protocol"]}
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
        Zt = rff_map(target.X, ic.omega(target.X.shape[1]))
        out.update(W=res.W, C=res.C, rounds=ic.n_rounds,
                   target_accuracy=float(np.mean(predict(Zt, res.W, res.C) == target.y_true)))
        traffic = res.traffic
    else:
        raise ValueError(f"protocol must be 'oneshot' or 'iterative', got {cfg['protocol']!r}.")
    out["bytes_up"] = int(sum(r["nbytes"] for r in traffic.records if r["direction"] == "up"))
    out["bytes_down"] = int(sum(r["nbytes"] for r in traffic.records
                                if r["direction"] == "down"))
    return out
