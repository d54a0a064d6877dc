"""The target accuracy of a one-shot federated RF-TCA result, beside its baselines.

The one-shot protocol ends with a projection ``W`` (2N x m), not a classifier, so its result
alone tells a person nothing about the target. :func:`oneshot_accuracy` reports what an
iterative job reports: the accuracy on
the target's labels (evaluation only) of a classifier trained on the sources' projected rows,
beside the same classifier trained on the sources' random features without ``W``
(``source_only``) and ``chance``.

The classifier is :func:`~shiftlearn.federated.train_softmax` on the pooled sources'
projected random features (divided by their RMS row norm); ``source_only`` is the same softmax
without ``W``. It needs every source's rows and the target's labels in one place (the
simulator, a loopback deployment). Design notes: ``docs/dev/federated.md``.

Examples
--------
>>> from shiftlearn.federated._jobs import simulate_job
>>> res = simulate_job({"n-per-client": 30})
>>> ev = oneshot_accuracy({"n-per-client": 30}, res["sigma"], res["W"])
>>> sorted(ev), sorted(ev["baseline"])
(['baseline', 'target_accuracy'], ['chance', 'source_only'])
"""

from __future__ import annotations

import numpy as np

from ..kernels import rff_map
from ._data import ClientData, load_all
from ._iterative import predict, train_softmax

__all__ = ["oneshot_accuracy", "oneshot_warning"]

#: Adam steps of the evaluation classifier (full batch).
STEPS = 500


def _softmax_accuracy(Hs: np.ndarray, ys: np.ndarray, Ht: np.ndarray, yt: np.ndarray,
                      n_classes: int, lr: float, seed: int) -> float:
    scale = float(np.sqrt(np.mean(np.sum(Hs ** 2, axis=1)))) or 1.0
    C = train_softmax(Hs / scale, ys, n_classes, steps=STEPS, lr=lr, seed=seed)
    return float(np.mean(predict(Ht / scale, np.eye(Hs.shape[1]), C) == yt))


def oneshot_accuracy(cfg: dict, sigma: float, W: np.ndarray,
                     parts: list[ClientData] | None = None) -> dict:
    """``{"target_accuracy", "baseline": {"source_only", "chance"}}`` of one-shot job ``cfg``.

    Parameters
    ----------
    cfg : dict
        The job (its keys, as given to :func:`~shiftlearn.federated._jobs.simulate_job`).
    sigma : float
        The run's agreed bandwidth (the result's ``sigma``).
    W : ndarray of shape (2 * n_features, n_components)
        The run's projection (the result's ``W``).
    parts : list of ClientData or None
        The job's data (:func:`~shiftlearn.federated._data.load_all`), if already loaded.
    """
    from ._jobs import job_config, oneshot_config

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
    from ._jobs import baseline_warning

    return baseline_warning(accuracy, base, model="one-shot RF-TCA",
                            baseline="the same classifier without the projection",
                            hint="compare other mu, n-components or sigma values")
