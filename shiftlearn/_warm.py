"""Warm starts of a refitted logistic regression, for the loops that refit one model many times
on rows that change a little (boosting rounds, JDOT's alternations).

An L2-penalised logistic regression (finite ``C``) has a strictly convex objective: started
from the previous fit's coefficients, its solver reaches the optimum a cold start reaches (to
the solver's tolerance) in fewer iterations. A fit that stops at ``max_iter`` before
converging ends nearer the optimum warm than cold, so there the two differ by more than the
tolerance; and a row that sits within the tolerance of a class boundary may be predicted
differently.

Only scikit-learn's ``LogisticRegression`` itself, or a subclass that declares its
``warm_start`` to be scikit-learn's (class attribute ``_sklearn_warm_start = True``, e.g.
``shiftlearn.linear_model.RowSpaceLogisticRegression``; another subclass's ``warm_start`` may
mean something else), alone or as a ``Pipeline``'s last step, with the L2 penalty, a finite ``C``
and a solver that honours ``warm_start`` (all but liblinear), is started warm, and only from a
fit on the same classes. A warm fit the solver refuses (a pipeline whose earlier steps now
give another number of columns) is run again cold.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from sklearn.linear_model import LogisticRegression

from ._weights import last_step

__all__ = ["fit_warm", "unique_l2_optimum"]


def _logistic_step(est):
    """``est``'s warm-startable logistic regression (itself or a Pipeline's last step), or
    ``None``."""
    est = last_step(est)
    if not (type(est) is LogisticRegression
            or (isinstance(est, LogisticRegression)
                and getattr(type(est), "_sklearn_warm_start", False))):
        return None
    return est if unique_l2_optimum(est) else None


def unique_l2_optimum(est: LogisticRegression) -> bool:
    """``est`` (a ``LogisticRegression``) has the L2 penalty with a finite ``C`` and a solver
    other than liblinear (which penalises the intercept): its objective is strictly convex in
    the coefficients, with one minimiser in the span of the training rows."""
    p = est.get_params()
    l2 = p["penalty"] in ("l2", "deprecated") and p["l1_ratio"] in (None, 0, 0.0)
    return bool(l2 and p["solver"] != "liblinear" and 0 < float(p["C"]) < np.inf)


def fit_warm(est, prev, y, fit: Callable[[], object]) -> bool:
    """Run ``fit()`` (which fits ``est``, an unfitted clone, on labels ``y``) started from
    ``prev``'s fitted coefficients when both are warm-startable and ``prev`` saw the classes
    of ``y``; else, or when the solver refuses the start, cold. Returns whether the fit that
    stands started warm; ``est``'s own ``warm_start`` setting is restored either way."""
    step = _logistic_step(est)
    pstep = None if prev is None else _logistic_step(prev)
    if (step is None or pstep is None or not hasattr(pstep, "coef_")
            or not np.array_equal(pstep.classes_, np.unique(y))):
        fit()
        return False
    own = step.get_params()["warm_start"]
    step.set_params(warm_start=True)
    step.coef_, step.intercept_ = pstep.coef_.copy(), pstep.intercept_.copy()
    try:
        fit()
        return True
    except ValueError:
        pass            # another width (e.g. a feature selector before the model)
    finally:
        step.set_params(warm_start=own)
    del step.coef_, step.intercept_
    fit()               # cold: a real error is raised here, as without the warm start
    return False
