"""Successive halving over the selector's candidates (``AdaptationSelector(search="halving")``).

Every candidate is scored on a subsample of the rows of each fold; the best third (``factor``)
go on to three times the rows, and so on up to every row (scikit-learn's
``HalvingGridSearchCV``, ``resource="n_samples"``, ``min_resources="exhaust"``, on the
selector's own splitter and scorer). Estimates made on different numbers of rows do not
compare, so the last round's best candidate and no adaptation are then both scored on every
row of the same folds, exactly as the full grid would score them, and the margin rule decides
between them.
"""

from __future__ import annotations

import numpy as np
from sklearn.base import clone
from sklearn.model_selection import GridSearchCV

__all__ = ["halving_results"]


def _key(params: dict) -> tuple:
    return tuple(sorted((k, repr(v)) for k, v in params.items()))


def halving_results(estimator, grid: list[dict], *, scoring, cv, n_jobs, verbose,
                    random_state, factor: int, X, y, sd) -> tuple[dict, int, int, object]:
    """Run the halving search and the final full-row comparison.

    Returns ``(table, winner, none, search)``: ``table`` holds one row per candidate in the
    order of ``ParameterGrid(grid)`` (``params``, ``mean_test_score``, ``std_test_score``,
    ``fit_time`` and ``score_time`` summed over its rounds and folds, ``n_fits`` and
    ``n_resources``, the rows per fold of the round it was last scored in; the winner's and
    no adaptation's estimates are those on every row), the indices of the last round's best
    candidate and of no adaptation, and the fitted ``HalvingGridSearchCV``.
    """
    from sklearn.experimental import enable_halving_search_cv  # noqa: F401
    from sklearn.model_selection import HalvingGridSearchCV, ParameterGrid

    search = HalvingGridSearchCV(
        estimator, grid, factor=factor, resource="n_samples", min_resources="exhaust",
        scoring=scoring, cv=cv, n_jobs=n_jobs, verbose=verbose, random_state=random_state,
        error_score=np.nan, refit=False)
    search.fit(X, y, groups=sd, sample_domain=sd)
    res = search.cv_results_
    n_splits = search.n_splits_
    order = {_key(p): i for i, p in enumerate(ParameterGrid(grid))}
    n = len(order)
    table = {"params": [None] * n, "mean_test_score": np.full(n, np.nan),
             "std_test_score": np.full(n, np.nan), "fit_time": np.zeros(n),
             "score_time": np.zeros(n), "n_fits": np.zeros(n, dtype=int),
             "n_resources": np.zeros(n, dtype=int)}
    for r, p in enumerate(res["params"]):            # rounds in order: the last row wins
        i = order[_key(p)]
        table["params"][i] = p
        table["mean_test_score"][i] = res["mean_test_score"][r]
        table["std_test_score"][i] = res["std_test_score"][r]
        table["fit_time"][i] += res["mean_fit_time"][r] * n_splits
        table["score_time"][i] += res["mean_score_time"][r] * n_splits
        table["n_fits"][i] += n_splits
        table["n_resources"][i] = res["n_resources"][r]
    winner = order[_key(res["params"][search.best_index_])]
    none = next(i for i, p in enumerate(ParameterGrid(grid)) if p.get("adapter") is None)
    final = list(dict.fromkeys((none, winner)))
    full = GridSearchCV(clone(estimator), [{k: [v] for k, v in table["params"][i].items()}
                                           for i in final],
                        scoring=scoring, cv=cv, n_jobs=n_jobs, verbose=verbose,
                        error_score=np.nan, refit=False)
    full.fit(X, y, groups=sd, sample_domain=sd)
    fres = full.cv_results_
    for r, i in enumerate(final):
        table["mean_test_score"][i] = fres["mean_test_score"][r]
        table["std_test_score"][i] = fres["std_test_score"][r]
        table["fit_time"][i] += fres["mean_fit_time"][r] * n_splits
        table["score_time"][i] += fres["mean_score_time"][r] * n_splits
        table["n_fits"][i] += n_splits
        table["n_resources"][i] = X.shape[0]
    return table, winner, none, search
