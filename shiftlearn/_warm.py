"""Warm starts of a refitted logistic regression, for the loops that refit one model many times
on rows that change a little (boosting rounds, JDOT's alternations).

A ``LogisticRegression``'s penalised likelihood is strictly convex: started from the previous
fit's coefficients, its solver reaches the optimum a cold start reaches (to the solver's
tolerance) in fewer iterations. A fit that stops at ``max_iter`` before converging ends nearer
the optimum warm than cold, so there the two differ by more than the tolerance.

Only scikit-learn's ``LogisticRegression`` itself (not a subclass: its ``warm_start`` may mean
something else), alone or as a ``Pipeline``'s last step, with a solver that honours
``warm_start`` (all but liblinear), is started warm.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import numpy as np
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import Pipeline

__all__ = ["started_from", "warm_startable"]


def _logistic_step(est):
    """``est``'s logistic regression (itself or a Pipeline's last step), or ``None``."""
    while isinstance(est, Pipeline):
        est = est.steps[-1][1]
    if type(est) is LogisticRegression and est.get_params()["solver"] != "liblinear":
        return est
    return None


def warm_startable(est) -> bool:
    """Whether :func:`started_from` starts ``est`` warm (``None``: the callers' default,
    ``LogisticRegression()``)."""
    return est is None or _logistic_step(est) is not None


@contextmanager
def started_from(est, prev, y) -> Iterator[bool]:
    """Inside the block, ``est`` (an unfitted clone) starts its next fit from ``prev``'s fitted
    coefficients, when both are warm-startable and ``prev`` was fitted on the labels of ``y``
    (else the fit is cold). Yields whether it starts warm; ``est``'s own ``warm_start`` setting
    is restored on leaving."""
    step = _logistic_step(est)
    pstep = None if prev is None else _logistic_step(prev)
    if (step is None or pstep is None or not hasattr(pstep, "coef_")
            or not np.array_equal(pstep.classes_, np.unique(y))):
        yield False
        return
    own = step.get_params()["warm_start"]
    step.set_params(warm_start=True)
    step.coef_, step.intercept_ = pstep.coef_.copy(), pstep.intercept_.copy()
    try:
        yield True
    finally:
        step.set_params(warm_start=own)
