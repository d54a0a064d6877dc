"""shiftlearn.labelshift: label shift (target shift), where the class proportions change and
each class looks the same. Estimate the target class proportions without target labels (BBSE,
RLLS from a classifier's confusion matrix; MLLS by maximum likelihood on calibrated
probabilities; JCPOT from optimal transport) and correct the classifier for them."""

from __future__ import annotations

import numpy as np

from ._confusion import (
    BBSE,
    RLLS,
    bbse_weights,
    cross_fit_confusion,
    cross_fit_predictions,
    rlls_reg,
    rlls_shift,
)
from ._jcpot import JCPOT, jcpot_proportions
from ._mlls import MLLS, bcts_calibration, mlls_proportions

__all__ = ["BBSE", "JCPOT", "MLLS", "RLLS", "bbse_weights", "bcts_calibration",
           "cross_fit_confusion", "cross_fit_predictions", "estimate_target_proportions",
           "jcpot_proportions", "mlls_proportions", "rlls_reg", "rlls_shift"]

_METHODS = {"bbse": BBSE, "rlls": RLLS, "mlls": MLLS, "jcpot": JCPOT}


def estimate_target_proportions(estimator, X, y, sample_domain=None, method: str = "bbse",
                                **params) -> tuple[np.ndarray, np.ndarray]:
    """The target class proportions estimated without target labels.

    Parameters
    ----------
    estimator : classifier or None
        The source classifier (``None``: logistic regression); see :class:`BBSE`.
    X, y, sample_domain : arrays
        As for :meth:`BBSE.fit`: labeled source rows, target rows with ``y = -1``.
    method : {"bbse", "rlls", "mlls", "jcpot"}, default "bbse"
    **params
        Further parameters of the method's class (``cv``, ``reg``, ``random_state``, ...).

    Returns
    -------
    classes : ndarray of shape (K,), the source labels.
    proportions : ndarray of shape (K,), the estimated target share of each (sum 1).

    Raises
    ------
    ValueError
        An unknown method (the message lists them), and as the method's ``fit``.

    Notes
    -----
    Cost: the method's ``fit``.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> ys = rng.integers(0, 2, 400); yt = (rng.random(400) < 0.8).astype(int)
    >>> X = np.r_[rng.normal(ys * 2.0, 1.0), rng.normal(yt * 2.0, 1.0)][:, None]
    >>> y = np.r_[ys, -np.ones(400, int)]; sd = np.r_[np.ones(400, int), -np.ones(400, int)]
    >>> classes, q = estimate_target_proportions(None, X, y, sd, random_state=0)
    >>> classes.tolist(), bool(abs(q[1] - 0.8) < 0.1)
    ([0, 1], True)
    """
    if method not in _METHODS:
        raise ValueError(f"Unknown method {method!r}; choose one of "
                         f"{', '.join(repr(m) for m in _METHODS)}.")
    model = _METHODS[method](estimator, **params).fit(X, y, sample_domain)
    return model.classes_, model.target_proportions_
