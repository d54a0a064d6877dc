"""Input checks of the marginal-transfer estimators: parameter constraints, the training rows
(the library's unlabeled convention), small test tasks and memory guards.

Input decisions (the library's unlabeled convention, ``docs/conventions.md``):

* **Training rows.** Domain generalization learns from labeled training tasks only. Rows that
  are unlabeled (``y = -1``/NaN/``""``; regression: NaN) and every row of a target domain
  (negative ``sample_domain``) are left out of training with a :class:`UserWarning` that counts
  them per domain (:func:`labeled_training_rows`): those rows are test tasks, embedded at
  predict time from their own rows. So the library's own ``pack()`` output (labeled sources,
  masked targets) can be passed to ``fit`` as it is; ``-1`` is never learnt as a class. No
  labeled source row left is a ``ValueError``.
* **Test tasks.** ``predict`` embeds each test task from the rows given in that call. A task
  with fewer than ``min_predict_task_size`` rows triggers a :class:`UserWarning` naming the
  task, its rows and the two ways to predict a stream (pass the whole task; embed from a stored
  sample, ``predict(np.vstack([X_sample, X_new]), ...)[len(X_sample):]``).
* **Parameters** are validated declaratively (``_parameter_constraints``, checked by
  :func:`~shiftlearn._constraints.check_params` before any work); ``X`` goes through
  scikit-learn's ``validate_data`` (feature count and names recorded in ``fit``, checked in
  ``predict``).
* **Memory.** The exact solver's ``M x M`` kernel and the random-feature design are
  estimated before any allocation and refused, naming the GiB, beyond
  :func:`shiftlearn._resources.memory_budget` (numpy would die with ``MemoryError``).
"""

from __future__ import annotations

import warnings
from numbers import Integral, Real

import numpy as np

from .._constraints import BandwidthSpec, Hidden, Interval, RealNotInt, StrOptions
from .._resources import memory_budget
from .._stacklevel import user_stacklevel
from .._validation import unlabeled_mask
from ..kernels import KERNELS, RFF_KERNELS

__all__ = [
    "DEFAULT_N_LANDMARKS",
    "EXACT_FIT_MATRICES",
    "NYSTROEM_FIT_MATRICES",
    "POINT_KERNELS",
    "RF_KERNELS",
    "MARGINAL_PARAMETER_CONSTRAINTS",
    "MIN_PREDICT_TASK_SIZE",
    "check_exact_memory",
    "check_nystroem_memory",
    "check_rf_memory",
    "RENAMED_BANDWIDTHS",
    "bandwidth_specs",
    "labeled_training_rows",
    "warn_small_test_tasks",
]

_LOSSES = ("hinge", "squared_hinge")

#: Default ``min_predict_task_size``: test tasks with fewer rows are predicted with a warning.
#: Below 10 rows the error on the rotated ellipses is more than three times the whole-task
#: error (``benchmarks/generalization/marginal_stream.py``; ``docs/dev/generalization.md``).
MIN_PREDICT_TASK_SIZE = 10

#: peak memory of an exact fit in ``M x M`` float64 matrices: the kernel, which the dual
#: coordinate descent reads in place, and the temporaries of building it (1.70 by tracemalloc
#: at M = 3,000, classifier and regressor)
EXACT_FIT_MATRICES = 2.1

#: peak memory of a Nyström fit in float64 ``M x m`` matrices (``m`` landmarks): the kernel to
#: the landmarks, the features and liblinear's copy of them (16 bytes per nonzero); peak RSS
#: at M = 30,000: 3.3 (m = 1,000) and 3.6 (m = 300, with the embeddings' 64 MB kernel chunk)
NYSTROEM_FIT_MATRICES = 4.0

#: default ``n_landmarks`` of the Nyström solver (see ``_marginal.py``)
DEFAULT_N_LANDMARKS = 500

#: kernels on x (``kernel_x``, and ``kernel_emb`` for the embeddings), those of
#: :mod:`shiftlearn.kernels`: every one has an exact Gram matrix (exact and Nyström solvers);
#: the shift-invariant ``RF_KERNELS`` also have random Fourier features (RF solver)
POINT_KERNELS = KERNELS
RF_KERNELS = RFF_KERNELS

#: how many domains a left-out/small-task message lists before "and k more"
_LIST_MAX = 8


#: the bandwidth specs of marginal transfer: a positive float, ``"median"`` or
#: ``"<f>*median"`` (the median of each kernel's own distances: rows, or task embeddings)
_BANDWIDTH = BandwidthSpec(("median",))

#: the former names of the bandwidths, read for one release (``fit`` maps them, with a
#: ``FutureWarning``, onto the new ones); their default is ``"deprecated"``
RENAMED_BANDWIDTHS = {"sigma_x": "bandwidth_x", "sigma_emb": "bandwidth_emb",
                      "sigma_p": "bandwidth_p"}
_DEPRECATED = "deprecated"
_FORMER = [_BANDWIDTH, Hidden(StrOptions({_DEPRECATED}))]

_POS_INT = Interval(Integral, 1, None, closed="left")

#: constraints of every marginal-transfer / pooling parameter (a class checks the ones it has)
MARGINAL_PARAMETER_CONSTRAINTS: dict = {
    "C": [Interval(Real, 0, None, closed="neither")],
    "epsilon": [Interval(Real, 0, None, closed="left")],
    "bandwidth_x": [_BANDWIDTH],
    "bandwidth_emb": [_BANDWIDTH],
    "bandwidth_p": [_BANDWIDTH],
    "sigma_x": _FORMER,
    "sigma_emb": _FORMER,
    "sigma_p": _FORMER,
    "kernel_x": [StrOptions(set(POINT_KERNELS))],
    "kernel_emb": [StrOptions(set(POINT_KERNELS))],
    "kernel_p": [StrOptions({"gaussian", "exponential", "polynomial", "indicator"})],
    "degree_p": [_POS_INT],
    "normalize_p": ["boolean"],
    "tau": [Interval(Real, 0, 1, closed="both")],
    "solver": [StrOptions({"auto", "exact", "rf", "nystroem"})],
    "n_landmarks": [_POS_INT, Interval(RealNotInt, 0, 1, closed="right")],
    "n_features_emb": [_POS_INT],
    "n_features": [_POS_INT],
    "sampling": [StrOptions({"gaussian", "orthogonal"})],
    "weighting": [StrOptions({"task", "point"})],
    "normalize_y": ["boolean"],
    "min_task_size": [_POS_INT],
    "min_predict_task_size": [_POS_INT],
    "tol": [Interval(Real, 0, None, closed="neither"), None],
    "max_iter": [_POS_INT],
    "loss": [StrOptions(set(_LOSSES))],
    "random_state": ["random_state", np.random.Generator],
}


def _domain_list(items: list[str]) -> str:
    if len(items) <= _LIST_MAX:
        return ", ".join(items)
    return ", ".join(items[:_LIST_MAX]) + f" and {len(items) - _LIST_MAX} more"


def labeled_training_rows(y: np.ndarray, sd: np.ndarray, task: str, owner: str) -> np.ndarray:
    """Mask of the rows domain generalization trains on: labeled rows of source domains.

    Unlabeled rows (the library's convention, :func:`~shiftlearn._validation.unlabeled_mask`)
    and every row of a target domain (negative ``sample_domain``) are left out with a
    :class:`UserWarning` that counts them per domain; with no row left, a ``ValueError``.

    Examples
    --------
    >>> import numpy as np, warnings
    >>> y = np.array([0, 1, 0, -1, -1]); sd = np.array([1, 1, 1, -2, -2])
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("ignore")
    ...     labeled_training_rows(y, sd, "classification", "Est").tolist()
    [True, True, True, False, False]
    """
    unl = unlabeled_mask(y, task=task)
    keep = ~unl & (sd > 0)
    drop = ~keep
    if not drop.any():
        return keep
    parts = []
    for d in np.unique(sd[drop]):
        m = drop & (sd == d)
        n_unl, n_lab = int(np.sum(m & unl)), int(np.sum(m & ~unl))
        what = " + ".join(([f"{n_unl} unlabeled"] if n_unl else [])
                          + ([f"{n_lab} labeled"] if n_lab else []))
        parts.append(f"domain {int(d)}: {what}")
    where = _domain_list(parts)
    lab_target = bool(np.any(drop & ~unl))
    if not keep.any():
        raise ValueError(
            f"{owner} has no labeled row in a source domain to train on (all {sd.shape[0]} "
            f"rows left out; {where}). Domain generalization trains on labeled training tasks: "
            "give each training task a positive sample_domain id and its labels (y = -1 or NaN "
            "marks an unlabeled row; negative ids are test tasks, passed to predict).")
    msg = (f"{owner} trains on the labeled rows of source domains only (domain generalization): "
           f"left out {int(drop.sum())} of {sd.shape[0]} rows ({where}). Test tasks (negative "
           "sample_domain ids) need no labels at fit time: pass their rows to "
           "predict(X, sample_domain), which embeds each test task from its own rows.")
    if lab_target:
        msg += (" Labeled rows of a target domain are not trained on either; give that domain a "
                "positive id to use it as a training task.")
    warnings.warn(msg, UserWarning, stacklevel=user_stacklevel())
    return keep


def bandwidth_specs(est) -> dict:
    """The bandwidth specs a fit of ``est`` uses, by their names ``bandwidth_*`` (those it
    has): each one's value, or its former name's (:data:`RENAMED_BANDWIDTHS`) when that one is
    given, with a ``FutureWarning`` that names the new one. Called by ``fit`` (never
    ``__init__``, which stores the parameters as given), after ``check_params``.

    Raises
    ------
    ValueError
        when a former name and its new one are both given (the new one not at its default
        ``"median"``).
    """
    specs = {}
    for old, new in RENAMED_BANDWIDTHS.items():
        if not hasattr(est, new):                   # the Pooling* estimators: bandwidth_x only
            continue
        value, former = getattr(est, new), getattr(est, old, _DEPRECATED)
        if not (isinstance(former, str) and former == _DEPRECATED):
            if not (isinstance(value, str) and value == "median"):
                raise ValueError(
                    f"{type(est).__name__} got both {old}={former!r} and {new}={value!r}; "
                    f"{old} is the former name of {new}: give {new} only.")
            warnings.warn(f"{type(est).__name__}: {old} is renamed {new}; pass "
                          f"{new}={former!r} ({old} will be removed in the next release).",
                          FutureWarning, stacklevel=user_stacklevel())
            value = former
        specs[new] = value
    return specs


def check_exact_memory(owner: str, M: int, kernel_x: str) -> None:
    """Refuse an exact fit whose ``M x M`` kernel does not fit in memory (before numpy
    asks for it and dies with ``MemoryError``). Peak: :data:`EXACT_FIT_MATRICES` float64
    ``M x M`` matrices."""
    need = EXACT_FIT_MATRICES * 8.0 * M * M
    budget = memory_budget()
    if need > budget:
        alt = ("solver='nystroem' (Nyström features of any kernel) or solver='rf' (random "
               "features)" if kernel_x in RF_KERNELS else
               "solver='nystroem' (Nyström features of any kernel; memory linear in the rows)")
        raise ValueError(
            f"{owner} with the exact solver on {M} training rows needs about "
            f"{need / 2**30:.1f} GiB ({EXACT_FIT_MATRICES:g} float64 {M} x {M} matrices) but "
            f"{budget / 2**30:.1f} GiB are available. Use {alt}, or fit on a subsample of "
            "each task's rows.")


def check_nystroem_memory(owner: str, M: int, m: int) -> None:
    """Refuse a Nyström fit whose kernel to the ``m`` landmarks and features do not fit in
    memory: :data:`NYSTROEM_FIT_MATRICES` float64 ``M x m`` matrices."""
    need = NYSTROEM_FIT_MATRICES * 8.0 * M * m
    budget = memory_budget()
    if need > budget:
        raise ValueError(
            f"{owner} with solver='nystroem' on {M} training rows and {m} landmarks needs "
            f"about {need / 2**30:.1f} GiB ({NYSTROEM_FIT_MATRICES:g} float64 {M} x {m} "
            f"matrices) but {budget / 2**30:.1f} GiB are available. Lower n_landmarks, or fit "
            "on a subsample of each task's rows.")


def check_rf_memory(owner: str, M: int, d: int, Q: int, L: int) -> None:
    """Refuse a random-feature fit whose features do not fit in memory (e.g. a mistyped
    ``n_features=10**7``): ``4 M 2Q`` float32 (features and the solvers' copies) plus
    ``2 (2Q)^2`` float64 (the Newton system) plus the ``(d + 2L) x Q`` frequencies
    (tracemalloc at M = 4,000: 2.2 M 2Q float32 for liblinear, 3.9-7.1 M 2Q plus the
    Newton system for the squared hinge at Q = 300-2,000)."""
    need = 4.0 * M * 2 * Q * 4 + 2.0 * (2 * Q) ** 2 * 8 + (d + 2 * L) * Q * 8.0
    budget = memory_budget()
    if need > budget:
        raise ValueError(
            f"{owner} with solver='rf' on {M} training rows with "
            f"n_features={Q} and n_features_emb={L} needs about {need / 2**30:.1f} GiB "
            f"but {budget / 2**30:.1f} GiB are available. Lower n_features (300 is the "
            "default; the kernel error falls as 1/sqrt(n_features)) or fit on fewer rows.")


def warn_small_test_tasks(owner: str, counts: np.ndarray, ids, k: int) -> None:
    """Warn when a test task (``counts`` rows each; ``ids`` their ``sample_domain`` ids, or
    ``None`` for one task) has fewer than ``k`` rows to embed its distribution (see the module
    docstring). Pooling ignores the task, so its estimators never call this."""
    small = np.flatnonzero(counts < k)
    if small.size == 0:
        return
    if ids is None:
        which = (f"the batch of {int(counts[0])} row(s) (sample_domain=None makes all rows "
                 "of the call one test task) has")
    else:
        items = [f"{int(ids[i])} ({int(counts[i])} row{'s' if counts[i] != 1 else ''})"
                 for i in small]
        which = f"test task(s) {_domain_list(items)} {'has' if len(items) == 1 else 'have'}"
    warnings.warn(
        f"{owner}: {which} fewer than min_predict_task_size={k} rows. Each "
        "test task is embedded from its own rows in this call, so a task of a few rows gets "
        "a poor embedding and worse predictions (predicting one row at a time embeds every "
        "row as its own task: 5% -> 45% error on the rotated ellipses). Pass all rows of a "
        "task in one call; to predict a stream, embed it from a stored sample of the task: "
        "predict(np.vstack([X_sample, X_new]), sample_domain)[len(X_sample):].",
        UserWarning, stacklevel=user_stacklevel())

