"""JCPOT: the target class proportions from entropic optimal transport of every source domain
to the target (Redko et al. 2019)."""

from __future__ import annotations

import warnings
from numbers import Integral, Real

import numpy as np
from scipy.special import logsumexp

from .._constraints import HasMethods, Interval, StrOptions
from .._resources import check_dense_memory
from .._stacklevel import user_stacklevel
from ._base import BaseLabelShift, LabelShiftRows

__all__ = ["JCPOT", "import_ot", "jcpot_proportions"]


def import_ot():
    """POT (``import ot``), or an ``ImportError`` that says how to install it."""
    try:
        import ot
    except ImportError as exc:
        raise ImportError(
            "JCPOT needs POT, the Python Optimal Transport library (for its cost matrices): "
            "pip install shiftlearn[ot] (or pip install pot).") from exc
    return ot


def _bregman_scaling(K, codes, counts, n_have, k, max_iter, tol):
    """The iterations on the scalings ``u, v`` of the plans ``diag(u) K diag(v)`` (a
    matrix-vector product per projection). Returns ``(h, n_iter, converged)``, or None when
    round-off breaks them (a zero or non-finite scaling)."""
    n_t = K[0].shape[1]
    a = np.full(n_t, 1.0 / n_t)
    u = [np.ones(x.shape[0]) for x in K]
    h = np.ones(k)
    with np.errstate(all="ignore"):
        for n_iter in range(1, max_iter + 1):
            log_mass = np.zeros(k)
            Kv = []
            for s in range(len(K)):
                v = a / (K[s].T @ u[s])
                kv = K[s] @ v
                mass = np.bincount(codes[s], weights=u[s] * kv, minlength=k)
                if not (np.all(np.isfinite(v)) and np.all(mass[counts[s] > 0] > 0)):
                    return None
                log_mass[counts[s] > 0] += np.log(mass[counts[s] > 0])
                Kv.append(kv)
            h_new = np.exp(log_mass / np.maximum(n_have, 1))
            for s in range(len(K)):
                u[s] = h_new[codes[s]] / counts[s][codes[s]] / Kv[s]
                if not np.all(np.isfinite(u[s])):
                    return None
            err = float(np.linalg.norm(h_new - h))
            h = h_new
            if err < tol:
                return h, n_iter, True, err
    return h, max_iter, False, err


def _bregman_log(logK, codes, counts, n_have, k, max_iter, tol):
    """The same iterations on the logs of the scalings (no underflow; a ``logsumexp`` over
    every entry per projection, several times slower)."""
    n_t = logK[0].shape[1]
    log_a = -np.log(n_t)
    f = [np.zeros(x.shape[0]) for x in logK]
    h = np.ones(k)
    err = np.inf
    for n_iter in range(1, max_iter + 1):
        log_mass = np.zeros(k)
        log_rows = []
        for s in range(len(logK)):
            g = log_a - logsumexp(logK[s] + f[s][:, None], axis=0)
            lr = f[s] + logsumexp(logK[s] + g[None, :], axis=1)
            log_rows.append(lr)
            for c in np.flatnonzero(counts[s]):
                log_mass[c] += logsumexp(lr[codes[s] == c])
        h_new = np.exp(log_mass / np.maximum(n_have, 1))
        for s in range(len(logK)):
            f[s] = f[s] + np.log(h_new[codes[s]]) - np.log(counts[s][codes[s]]) - log_rows[s]
        err = float(np.linalg.norm(h_new - h))
        h = h_new
        if err < tol:
            return h, n_iter, True, err
    return h, max_iter, False, err


def jcpot_proportions(Xs: list[np.ndarray], codes: list[np.ndarray], Xt: np.ndarray, k: int,
                      *, reg: float = 0.02, max_iter: int = 1000, tol: float = 1e-7
                      ) -> tuple[np.ndarray, int, float]:
    """The target class proportions ``h`` of JCPOT by iterated Bregman projections.

    For each source domain ``s`` (rows ``Xs[s]``, class codes ``codes[s]`` in ``0 .. k-1``),
    the cost ``M_s`` is the squared Euclidean distance to the target rows, divided by the
    median of all the sources' costs (so ``reg`` is relative to a typical squared distance),
    and the plan starts at the Gibbs kernel ``exp(-M_s / reg)``. Each iteration projects every
    plan on the uniform target marginal (columns summing to ``1 / n_t``), sets ``h`` to the
    geometric mean over the sources of each class's mass ``D1_s pi_s 1`` (the Bregman
    projection on the common class proportions, the paper's Proposition 4), then projects
    every plan on the source marginal that gives each row of class ``c`` the mass
    ``h_c / n_{s,c}``. It stops when ``||h - h_prev||_2 < tol``. Every source domain must hold
    every class (the model's assumption: the same classes everywhere).

    The plans are kept as scalings of the kernel of the cost less its column minima (which
    changes no plan, the target marginal being fixed, and leaves a 1 in every column of the
    kernel); when round-off breaks the scalings (a kernel too peaked for float64), the
    iterations are run again on their logarithms.

    Parameters
    ----------
    Xs, codes : list of arrays, one per source domain.
    Xt : ndarray of shape (n_t, d), the target rows.
    k : number of classes.
    reg : entropic regularisation, relative to the median cost.
    max_iter, tol : the stopping rule.

    Returns
    -------
    h : ndarray of shape (k,), summing to 1.
    n_iter : int, iterations run.
    scale : float, the median cost the costs were divided by.

    Notes
    -----
    Cost: ``O(sum_s n_s n_t d)`` for the costs, ``O(sum_s n_s n_t)`` time per iteration (a
    few times more in the log domain) and memory ``O(sum_s n_s n_t)`` (every plan is kept).
    """
    n_s = sum(x.shape[0] for x in Xs)
    check_dense_memory(n_s, Xt.shape[0], 3.0, f"JCPOT on {n_s} source and {Xt.shape[0]} "
                       "target rows", "BBSE or RLLS",
                       advice="Use BBSE or RLLS, whose memory does not grow with the product "
                              "of the row counts, or fit on a subsample of the rows.")
    ot = import_ot()
    M = [np.asarray(ot.dist(np.asarray(x, dtype=np.float64), np.asarray(Xt, dtype=np.float64),
                            metric="sqeuclidean")) for x in Xs]
    scale = float(np.median(np.concatenate([m.ravel() for m in M])))
    if not np.isfinite(scale) or scale <= 0:
        positive = np.concatenate([m[m > 0] for m in M])
        scale = float(np.median(positive)) if positive.size else 1.0
    counts = [np.bincount(c, minlength=k) for c in codes]
    for s, cnt in enumerate(counts):
        if np.any(cnt == 0):
            raise ValueError(
                f"JCPOT needs every class in every source domain, and source domain {s + 1} "
                f"(in the order of the ids) has no row of class code(s) "
                f"{np.flatnonzero(cnt == 0).tolist()}: give those domains one id (pool them) "
                "or use BBSE / RLLS, which pool the sources.")
    n_have = np.sum([cnt > 0 for cnt in counts], axis=0)
    # column minima only: the target marginal is fixed, so a column shift is absorbed by the
    # scaling v; a row shift is not (the source row masses are what h is read from)
    logK = M                            # in place: the costs are not needed after
    for m in logK:
        m -= m.min(axis=0, keepdims=True)
        m /= -(scale * reg)
    out = _bregman_scaling([np.exp(lk) for lk in logK], codes, counts, n_have, k,
                           int(max_iter), tol)
    if out is None:
        out = _bregman_log(logK, codes, counts, n_have, k, int(max_iter), tol)
    h, n_iter, converged, err = out
    if not converged:
        warnings.warn(f"JCPOT: the proportions did not converge in {max_iter} iterations "
                      f"(last change {err:.2g} >= tol={tol:g}); raise max_iter or reg_e.",
                      UserWarning, stacklevel=user_stacklevel())
    h = np.where(n_have > 0, h, 0.0)
    return h / h.sum(), n_iter, scale


class JCPOT(BaseLabelShift):
    """Joint Class Proportion and Optimal Transport: the target class proportions from the
    entropic transport plans of every source domain to the target, and the classifier
    corrected for them.

    ``fit`` runs :func:`jcpot_proportions` on the source domains (positive ``sample_domain``
    ids, kept apart) and the target rows (every negative id, pooled), then reweights the
    classifier fitted on the pooled source rows by ``w = h / p_s`` (``p_s``: the pooled
    source class shares). Without target rows the proportions are the source's and nothing is
    corrected (with a warning).

    Parameters
    ----------
    estimator : classifier or None, default None
        The source classifier (pooled source rows); it needs ``predict_proba``
        (``correction="posterior"``) or ``sample_weight`` in ``fit``
        (``correction="retrain"``). ``None`` means
        ``sklearn.linear_model.LogisticRegression()``.
    reg_e : float > 0, default 0.02
        Weight of the plans' entropy, relative to the median squared distance between source
        and target rows (the cost is divided by it).
    max_iter : int >= 1, default 1000
        Bregman iterations at most.
    tol : float > 0, default 1e-7
        Stop when the proportions move less than this (Euclidean norm).
    correction : {"posterior", "retrain"}, default "posterior"
        As :class:`BBSE`'s.

    Attributes
    ----------
    classes_, source_proportions_, target_proportions_, class_weights_, estimator_ :
        As :class:`BBSE`'s.
    n_iter_ : int, Bregman iterations run.
    cost_scale_ : float, the median squared distance the costs were divided by.
    n_features_in_, feature_names_in_ : as scikit-learn records them.

    Raises
    ------
    ImportError
        Without POT (``pip install pot``).
    ValueError
        As :class:`BBSE`; a source domain without some class; plans larger than the memory
        budget (3 float64 ``n_s x n_t`` arrays).

    Notes
    -----
    Cost: one fit of the estimator, ``O(sum_s n_s n_t d)`` for the costs and
    ``O(sum_s n_s n_t)`` per iteration; memory ``O(sum_s n_s n_t)`` (float64).

    References
    ----------
    I. Redko, N. Courty, R. Flamary, D. Tuia, "Optimal Transport for Multi-source Domain
    Adaptation under Target Shift", AISTATS 2019: ``h = argmin_h sum_s lambda_s
    W_reg((D2_s h)^T, a)`` under ``D1_s gamma_s 1 = h`` (their Eq. 7), solved by Bregman
    projections (their Proposition 4 and Algorithm 1), ``lambda_s = 1 / S``.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> ys = rng.integers(0, 2, 200); yt = (rng.random(200) < 0.8).astype(int)
    >>> X = np.r_[rng.normal(ys * 4.0, 1.0), rng.normal(yt * 4.0, 1.0)][:, None]
    >>> y = np.r_[ys, -np.ones(200, int)]; sd = np.r_[np.ones(200, int), -np.ones(200, int)]
    >>> m = JCPOT().fit(X, y, sd)
    >>> bool(abs(m.target_proportions_[1] - yt.mean()) < 0.05)
    True
    """

    _parameter_constraints: dict = {
        "estimator": [HasMethods(["fit", "predict"]), None],
        "reg_e": [Interval(Real, 0, None, closed="neither")],
        "max_iter": [Interval(Integral, 1, None, closed="left")],
        "tol": [Interval(Real, 0, None, closed="neither")],
        "correction": [StrOptions({"posterior", "retrain"})],
    }

    def __init__(self, estimator=None, *, reg_e: float = 0.02, max_iter: int = 1000,
                 tol: float = 1e-7, correction: str = "posterior"):
        self.estimator = estimator
        self.reg_e = reg_e
        self.max_iter = max_iter
        self.tol = tol
        self.correction = correction

    def _start_fit(self) -> None:
        self.n_iter_, self.cost_scale_ = 0, None

    def _weights(self, rows: LabelShiftRows, p_source: np.ndarray) -> np.ndarray:
        k = rows.classes.shape[0]
        sd = rows.sample_domain[rows.source]
        ids = np.unique(sd)
        Xs = rows.Xs
        h, self.n_iter_, self.cost_scale_ = jcpot_proportions(
            [Xs[sd == i] for i in ids], [rows.codes[sd == i] for i in ids], rows.Xt, k,
            reg=float(self.reg_e), max_iter=int(self.max_iter), tol=float(self.tol))
        return h / p_source
