"""Shared model selection for the marginal-transfer benchmarks (task-level CV only).

The authors' coordinate-wise search (note §7.1): stage 1 tunes the pooling baseline over
(sigma_x, C); marginal transfer starts from that optimum, tunes (sigma_emb, sigma_p), then
(sigma_x, C) again. Every stage uses the same task-level folds (TaskGroupSearchCV).
"""

from __future__ import annotations

import os
import warnings
from pathlib import Path

import numpy as np
from sklearn.base import clone
from sklearn.exceptions import ConvergenceWarning

from shiftlearn.generalization import TaskGroupSearchCV

warnings.simplefilter("ignore", ConvergenceWarning)
# the shared data home, as tests/conftest.py does (override with SHIFTLEARN_DATA)
os.environ.setdefault("SHIFTLEARN_DATA",
                      str(Path(__file__).resolve().parents[3] / "shared" / "data"))


def tuning_subsample(sd, *, max_tasks=None, max_per_task=None, random_state=0):
    """Row indices of at most ``max_tasks`` random tasks x ``max_per_task`` random rows each
    (compute budget of the search only; the final models are refitted on all the data)."""
    rng = np.random.default_rng(random_state)
    ids = np.unique(sd)
    if max_tasks is not None and ids.shape[0] > max_tasks:
        ids = rng.choice(ids, max_tasks, replace=False)
    keep = []
    for i in ids:
        rows = np.flatnonzero(sd == i)
        if max_per_task is not None and rows.shape[0] > max_per_task:
            rows = rng.choice(rows, max_per_task, replace=False)
        keep.append(np.sort(rows))
    return np.concatenate(keep)


def tune_pair(mt, pool, X, y, sd, *, stage_xc: dict, stage_emb: dict, cv: int = 3,
              n_repeats: int = 1, random_state=0, max_tasks=None, max_per_task=None,
              restage: bool = True):
    """Return (marginal, pooling) best estimators refitted on all of ``X`` plus the searches.

    The staged search runs on a task/row subsample when ``max_tasks`` / ``max_per_task`` are
    set; the chosen parameters are then refitted on every training row.
    """
    idx = tuning_subsample(sd, max_tasks=max_tasks, max_per_task=max_per_task,
                           random_state=random_state)
    ms, ps = _search_pair(mt, pool, X[idx], y[idx], sd[idx], stage_xc=stage_xc,
                          stage_emb=stage_emb, cv=cv, n_repeats=n_repeats,
                          random_state=random_state, restage=restage)
    best_mt = clone(mt).set_params(**{**ps.best_params_, **ms.best_params_}).fit(X, y, sd)
    best_pool = clone(pool).set_params(**ps.best_params_).fit(X, y, sd)
    return best_mt, best_pool, ms, ps


def _search_pair(mt, pool, X, y, sd, *, stage_xc, stage_emb, cv, n_repeats, random_state,
                 restage):
    pool_search = TaskGroupSearchCV(pool, stage_xc, cv=cv, n_repeats=n_repeats, refit=False,
                                    random_state=random_state).fit(X, y, sd)
    mt_search = TaskGroupSearchCV(
        clone(mt).set_params(**pool_search.best_params_),
        [stage_emb, stage_xc] if restage else [stage_emb], staged=True,
        refit=False, cv=cv, n_repeats=n_repeats, random_state=random_state).fit(X, y, sd)
    return mt_search, pool_search
