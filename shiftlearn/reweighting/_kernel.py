"""Kernel density-ratio estimators: KMM, KLIEP, uLSIF and RuLSIF.

All four use the Gaussian kernel ``k(x, y) = exp(-||x - y||^2 / (2 sigma^2))`` with the
library's bandwidth spec. The design decisions and measurements are in
``docs/dev/reweighting.md``.
"""

from __future__ import annotations

from numbers import Integral, Real

import numpy as np
from scipy.linalg import solve
from scipy.optimize import Bounds, brentq, minimize
from sklearn.neighbors import NearestNeighbors
from sklearn.utils.validation import check_is_fitted

from .._constraints import Interval, StrOptions
from .._resources import check_dense_memory
from ..kernels import BANDWIDTH_RULES, DEFAULT_CHUNK_BYTES, rbf_kernel
from ._base import BaseReweighting, kernel_centers, kernel_sigma

__all__ = ["KLIEP", "KMM", "RuLSIF", "kmm_weights", "uLSIF"]

_BANDWIDTH = [Interval(Real, 0, None, closed="neither"), StrOptions(set(BANDWIDTH_RULES))]


def _kernel_row_sums(X: np.ndarray, Y: np.ndarray, sigma: float) -> np.ndarray:
    """``sum_j k(x_i, y_j)`` for every row of ``X``, by row blocks (memory ``O(block x n_Y)``,
    never the whole ``n_X x n_Y`` matrix)."""
    block = max(1, DEFAULT_CHUNK_BYTES // (8 * max(1, Y.shape[0])))
    return np.concatenate([rbf_kernel(X[i:i + block], Y, sigma=sigma).sum(axis=1)
                           for i in range(0, X.shape[0], block)])


def kmm_weights(K: np.ndarray, kappa: np.ndarray, B: float, eps: float, *, tol: float = 1e-6,
                max_iter: int = 1000) -> tuple[np.ndarray, float, int]:
    """The kernel mean matching QP: ``min 1/2 b^T K b - kappa^T b`` subject to
    ``0 <= b <= B`` and ``|sum(b) - n| <= n eps`` (``n = len(kappa)``).

    The box-constrained problem is solved by scipy's L-BFGS-B (bound-constrained quasi-Newton,
    exact gradient ``K b - kappa``); the sum constraint by its Lagrange multiplier ``lam``:
    when the box solution's sum leaves ``[n (1 - eps), n (1 + eps)]`` the constraint is active
    at the optimum and ``sum(b(lam)) = n (1 +- eps)`` is solved for ``lam`` by Brent's method
    (the sum of the solution of the QP with linear term ``kappa - lam`` does not increase with
    ``lam``), each evaluation warm-started.

    Returns
    -------
    beta : ndarray of shape (n,)
    lam : float
        The multiplier of the sum constraint (0 when inactive).
    n_iter : int
        L-BFGS-B iterations, over every solve.

    Examples
    --------
    >>> K = np.eye(3); kappa = np.array([3.0, 0.0, 0.0])
    >>> beta, lam, _ = kmm_weights(K, kappa, B=10.0, eps=0.1)
    >>> np.round(beta, 4).tolist(), round(lam, 4)     # sum clipped to 3 (1 + 0.1)
    ([3.0, 0.0, 0.0], 0.0)
    """
    n = kappa.shape[0]
    bounds = Bounds(np.zeros(n), np.full(n, float(B)))
    scale = max(1.0, float(np.abs(kappa).max()))
    state = {"x": np.clip(np.ones(n), 0.0, B), "nit": 0}

    def solve_box(lam: float) -> np.ndarray:
        c = kappa - lam

        def fun(b):
            Kb = K @ b
            return 0.5 * b @ Kb - c @ b, Kb - c

        res = minimize(fun, state["x"], jac=True, method="L-BFGS-B", bounds=bounds,
                       options={"maxiter": max_iter, "gtol": tol * scale, "ftol": tol * 1e-3})
        state["x"] = res.x
        state["nit"] += int(res.nit)
        return res.x

    beta = solve_box(0.0)
    lo, hi = n * (1.0 - eps), n * (1.0 + eps)
    s = float(beta.sum())
    if lo <= s <= hi:
        return beta, 0.0, state["nit"]
    target = hi if s > hi else lo

    def gap(lam: float) -> float:
        return float(solve_box(lam).sum()) - target

    if s > hi:      # lam > 0; at lam >= max(kappa) the linear term is <= 0 and b = 0
        a, b = 0.0, float(kappa.max()) + 1.0
    else:           # lam < 0: pushes every b towards B
        a, b = -(float(np.abs(K).sum(axis=1).max()) * B + float(np.abs(kappa).max()) + 1.0), 0.0
        if gap(a) < 0:      # even b = B everywhere does not reach the lower bound
            return state["x"], a, state["nit"]
    lam = brentq(gap, a, b, xtol=tol * scale, rtol=4 * np.finfo(float).eps, maxiter=200)
    return solve_box(lam), float(lam), state["nit"]


class KMM(BaseReweighting):
    """Kernel mean matching (Huang et al., 2007): source weights that match the kernel mean of
    the weighted source rows to the target rows'.

    ``fit(X, y, sample_domain)`` solves the QP of Huang et al. (Eq. 6)::

        min_b  1/2 b^T K b - kappa^T b,  0 <= b_i <= B,  |sum_i b_i - n_s| <= n_s eps,

    with ``K_ij = k(x_i, x_j)`` over the source rows and ``kappa_i = n_s/n_t sum_j k(x_i,
    x'_j)`` over the target rows (:func:`kmm_weights`: scipy's L-BFGS-B on the box, the sum
    constraint through its multiplier). ``weights_`` holds ``b`` scaled to mean 1 over the
    source rows and ``1.0`` on the target rows; ``transform`` returns ``X`` unchanged.

    Parameters
    ----------
    bandwidth : float or {"median", "median_sq", "mean", "n_features"}, default="median"
        ``sigma`` of the Gaussian kernel, or a rule on the pooled rows
        (:func:`shiftlearn.kernels.median_heuristic`). scikit-learn's / skada's ``gamma`` is
        ``1 / (2 sigma^2)``.
    B : float, default=1000.0
        Upper bound of a weight (before the scaling to mean 1).
    eps : float or None, default=None
        Slack of the sum constraint; ``None``: ``(sqrt(n_s) - 1) / sqrt(n_s)`` (the choice of
        Huang et al. and skada's default).
    tol : float, default=1e-6
        Stopping tolerance of each L-BFGS-B solve: projected gradient below
        ``tol * max |kappa|``, or a relative decrease of the objective per iteration below
        ``tol * 1e-3`` (the objective is then within a few ``tol`` of its optimum, relatively).
    max_iter : int, default=1000
        Iterations of each L-BFGS-B solve.

    Attributes
    ----------
    weights_ : ndarray of shape (n_samples,)
    beta_ : ndarray of shape (n_source,)
        The QP's solution ``b`` (before the scaling).
    sigma_ : float
    multiplier_ : float
        Lagrange multiplier of the sum constraint (0 when inactive).
    n_iter_ : int
        L-BFGS-B iterations over every solve (0 without target rows).
    X_source_ : ndarray of shape (n_source, n_features)
    effective_sample_size_ : float
        Kish's effective sample size of the source rows' weights, ``(sum w)^2 / sum w^2``
        (fit warns below 1% of the source rows, or 2).
    log_scale_ : float
    n_source_, n_target_ : int
    n_features_in_ : int
    feature_names_in_ : ndarray of str
        Only when ``X`` had string column names.

    Raises
    ------
    ValueError
        No source rows; NaN/inf in ``X``; an ``n_s x n_s`` kernel larger than the memory
        budget (refused up front, naming the GiB).

    Notes
    -----
    Cost: ``O(n_s^2 d + n_s n_t d)`` for the kernels (the ``n_s x n_t`` one by row blocks,
    only its row sums kept), ``O(n_s^2)`` per solver iteration; memory ``O(n_s^2)``. The weights
    exist on the training source rows only: :meth:`compute_weights` gives a new row the weight
    of its nearest training source row.

    References
    ----------
    J. Huang, A. Gretton, K. Borgwardt, B. Schoelkopf and A. Smola, "Correcting sample
    selection bias by unlabeled data", NIPS 2007 (Eq. 6 and the choice of ``eps``).

    Examples
    --------
    >>> import numpy as np
    >>> from shiftlearn.reweighting import KMM
    >>> rng = np.random.default_rng(0)
    >>> X = np.vstack([rng.normal(0, 1, (40, 2)), rng.normal(1, 1, (30, 2))])
    >>> sd = np.r_[np.ones(40, int), -np.ones(30, int)]
    >>> w = KMM().fit(X, sample_domain=sd).weights_
    >>> round(float(w[:40].mean()), 6), float(w[40:].min())
    (1.0, 1.0)
    """

    _parameter_constraints: dict = {
        "bandwidth": _BANDWIDTH,
        "B": [Interval(Real, 1, None, closed="left")],
        "eps": [Interval(Real, 0, None, closed="left"), None],
        "tol": [Interval(Real, 0, None, closed="neither")],
        "max_iter": [Interval(Integral, 1, None, closed="left")],
    }

    def __init__(self, bandwidth="median", B=1000.0, eps=None, tol=1e-6, max_iter=1000):
        self.bandwidth = bandwidth
        self.B = B
        self.eps = eps
        self.tol = tol
        self.max_iter = max_iter

    def _fit_ratio(self, Xs, Xt):
        ns, nt = Xs.shape[0], Xt.shape[0]
        check_dense_memory(ns, ns, 2, f"KMM.fit on {ns} source rows", "",
                           advice="Subsample the source rows, or use uLSIF or KLIEP, whose "
                                  "kernels have a fixed number of centres.")
        self.sigma_ = kernel_sigma(self.bandwidth, Xs, Xt)
        K = rbf_kernel(Xs, sigma=self.sigma_)
        kappa = (ns / nt) * _kernel_row_sums(Xs, Xt, self.sigma_)
        eps = (np.sqrt(ns) - 1.0) / np.sqrt(ns) if self.eps is None else float(self.eps)
        self.beta_, self.multiplier_, self.n_iter_ = kmm_weights(
            K, kappa, float(self.B), eps, tol=self.tol, max_iter=self.max_iter)
        self.X_source_ = Xs
        self._nn = NearestNeighbors(n_neighbors=1).fit(Xs)
        return self.beta_, False

    def _ratio(self, X):
        check_is_fitted(self, "beta_")
        idx = self._nn.kneighbors(X, return_distance=False)[:, 0]
        return self.beta_[idx], False


def _mixture_weights(A: np.ndarray, tol: float, max_iter: int) -> tuple[np.ndarray, int, float]:
    """``argmax_p mean_j log (A p)_j`` over the simplex (``A >= 0``, ``n x m``): the EM fixed
    point ``F(p) = p * g(p)``, ``g(p) = A^T (1 / A p) / n``, accelerated by SQUAREM
    (Varadhan and Roland, 2008: one extrapolated step from two EM steps, kept only when it
    does not lower the objective). Stops when the certified gap ``log max g`` (the objective
    is within it of its maximum: concavity and ``p^T g(p) = 1``) is at most ``tol``.

    Returns ``(p, iterations, gap)``."""
    tiny = np.finfo(float).tiny

    def step(p):
        g = A.T @ (1.0 / np.maximum(A @ p, tiny)) / A.shape[0]
        q = p * g
        return q / q.sum(), g

    def objective(p):
        return float(np.mean(np.log(np.maximum(A @ p, tiny))))

    p = np.full(A.shape[1], 1.0 / A.shape[1])
    gap, it = np.inf, 0
    while it < max_iter:
        it += 1
        p1, g = step(p)
        gap = float(np.log(g.max()))
        if gap <= tol:
            break
        p2, _ = step(p1)
        r, v = p1 - p, p2 - 2.0 * p1 + p
        nv = float(np.linalg.norm(v))
        if nv == 0.0:
            p = p2
            continue
        a = min(-float(np.linalg.norm(r)) / nv, -1.0)
        q = np.maximum(p - 2.0 * a * r + a * a * v, 0.0)
        q /= q.sum()
        p = q if objective(q) >= objective(p2) else p2
    return p, it, gap


class KLIEP(BaseReweighting):
    """Kullback-Leibler importance estimation procedure (Sugiyama et al., 2008).

    The ratio is a non-negative combination of Gaussian kernels centred on target rows,
    ``w(x) = sum_l a_l k(x, c_l)``, that maximises the target rows' log-likelihood under
    ``w p_s`` (Eq. 5 of the paper)::

        max_a  sum_j log w(x'_j)   s.t.  1/n_s sum_i w(x_i) = 1,  a >= 0.

    With ``b_l = 1/n_s sum_i k(x_i, c_l)`` and ``p_l = b_l a_l`` the problem is the
    maximum-likelihood mixture proportions ``p`` on the simplex of the components
    ``k(x', c_l) / b_l``: solved by the EM fixed point ``p_l <- p_l g_l``,
    ``g_l = 1/n_t sum_j (k(x'_j, c_l)/b_l) / w(x'_j)``, accelerated by SQUAREM (an
    extrapolation of two EM steps, kept when it does not lower the likelihood), stopped when
    the certified gap ``log max_l g_l`` (an upper bound on the distance of the objective's
    mean to its optimum) is below ``tol``. ``weights_`` holds ``w`` on the source rows (mean 1 by
    the constraint) and ``1.0`` on the target rows.

    Parameters
    ----------
    bandwidth : float or {"median", "median_sq", "mean", "n_features"}, default="median"
        ``sigma`` of the Gaussian kernel (``gamma = 1 / (2 sigma^2)``).
    n_centers : int, default=100
        Target rows drawn (without replacement) as the centres ``c_l`` (all when fewer).
    tol : float, default=1e-6
        Gap at which the EM iterations stop.
    max_iter : int, default=10000
    random_state : int, RandomState or None, default=None
        Seed of the centres' draw.

    Attributes
    ----------
    weights_ : ndarray of shape (n_samples,)
    alpha_ : ndarray of shape (n_centers,)
        ``a``.
    centers_ : ndarray of shape (n_centers, n_features)
    sigma_ : float
    n_iter_ : int
        Accelerated EM iterations (0 without target rows).
    gap_ : float
        The final certified gap.
    effective_sample_size_ : float
        Kish's effective sample size of the source rows' weights, ``(sum w)^2 / sum w^2``
        (fit warns below 1% of the source rows, or 2).
    log_scale_ : float
    n_source_, n_target_ : int
    n_features_in_ : int
    feature_names_in_ : ndarray of str
        Only when ``X`` had string column names.

    Raises
    ------
    ValueError
        No source rows; NaN/inf in ``X``.

    Notes
    -----
    Cost: ``O((n_s + n_t) b d)`` for the kernels (``b`` centres), ``O(n_t b)`` per
    iteration; memory ``O(n_t b)``. skada's ``KLIEPReweightAdapter`` (0.6) takes gradient steps
    of machine-epsilon size, so it stays near its starting point; the solutions differ
    (``docs/dev/reweighting.md``).

    References
    ----------
    M. Sugiyama, S. Nakajima, H. Kashima, P. von Buenau and M. Kawanabe, "Direct importance
    estimation with model selection and its application to covariate shift adaptation",
    NIPS 2007; M. Sugiyama et al., Annals of the Institute of Statistical Mathematics 60,
    2008 (Eq. 5 and the centres drawn from the target rows).

    Examples
    --------
    >>> import numpy as np
    >>> from shiftlearn.reweighting import KLIEP
    >>> rng = np.random.default_rng(0)
    >>> X = np.vstack([rng.normal(0, 1, (40, 2)), rng.normal(1, 1, (30, 2))])
    >>> sd = np.r_[np.ones(40, int), -np.ones(30, int)]
    >>> est = KLIEP(random_state=0).fit(X, sample_domain=sd)
    >>> round(float(est.weights_[:40].mean()), 6), bool(est.gap_ <= 1e-6)
    (1.0, True)
    """

    _parameter_constraints: dict = {
        "bandwidth": _BANDWIDTH,
        "n_centers": [Interval(Integral, 1, None, closed="left")],
        "tol": [Interval(Real, 0, None, closed="neither")],
        "max_iter": [Interval(Integral, 1, None, closed="left")],
        "random_state": ["random_state"],
    }

    def __init__(self, bandwidth="median", n_centers=100, tol=1e-6, max_iter=10000,
                 random_state=None):
        self.bandwidth = bandwidth
        self.n_centers = n_centers
        self.tol = tol
        self.max_iter = max_iter
        self.random_state = random_state

    def _fit_ratio(self, Xs, Xt):
        self.sigma_ = kernel_sigma(self.bandwidth, Xs, Xt)
        C = kernel_centers(Xt, int(self.n_centers), self.random_state)
        check_dense_memory(max(Xs.shape[0], Xt.shape[0]), C.shape[0], 2,
                           f"KLIEP.fit with {C.shape[0]} centres", "",
                           advice="Lower n_centers or subsample the rows.")
        b = rbf_kernel(Xs, C, sigma=self.sigma_).mean(axis=0)
        A = rbf_kernel(Xt, C, sigma=self.sigma_)
        keep = b > 0
        At = A[:, keep] / b[keep]
        p, it, gap = _mixture_weights(At, float(self.tol), int(self.max_iter))
        alpha = np.zeros(C.shape[0])
        alpha[keep] = p / b[keep]
        self.alpha_, self.centers_, self.n_iter_, self.gap_ = alpha, C, it, gap
        return self._ratio(Xs)

    def _ratio(self, X):
        check_is_fitted(self, "alpha_")
        return rbf_kernel(X, self.centers_, sigma=self.sigma_) @ self.alpha_, False


#: multiples of the given bandwidth and ridge that uLSIF's leave-one-out search compares
LOO_BANDWIDTH_FACTORS = (0.25, 0.5, 1.0, 2.0, 4.0)
LOO_REG_FACTORS = (0.01, 0.1, 1.0, 10.0, 100.0)


def _ulsif_loo(Xs, Xt, C, sigma, reg) -> tuple[float, float, np.ndarray]:
    """uLSIF's leave-one-out score (Kanamori et al., 2009, Section 3.4) over the grid
    ``sigma x LOO_BANDWIDTH_FACTORS`` by ``reg x LOO_REG_FACTORS``: the ``i``-th source and
    target rows are held out together (``i < min(n_s, n_t)``), and the held-out objective
    ``1/2 w(x_i)^2 - w(x'_i)`` of the fit without them is computed for every ``i`` at once
    by the Sherman-Woodbury-Morrison update of ``(H + reg I)^-1``: ``O(b^3 + b^2 n)`` per
    setting. Returns the best ``(sigma, reg)`` and the scores (rows: bandwidths)."""
    ns, nt = Xs.shape[0], Xt.shape[0]
    m = min(ns, nt)
    b = C.shape[0]
    scores = np.empty((len(LOO_BANDWIDTH_FACTORS), len(LOO_REG_FACTORS)))
    for i, fs in enumerate(LOO_BANDWIDTH_FACTORS):
        Ps = rbf_kernel(C, Xs, sigma=sigma * fs)            # b x n_s
        Pt = rbf_kernel(C, Xt, sigma=sigma * fs)
        H = Ps @ Ps.T / ns
        h = Pt.mean(axis=1)
        Xd, Xn = Ps[:, :m], Pt[:, :m]
        for j, fr in enumerate(LOO_REG_FACTORS):
            Bm = H + (reg * fr) * (ns - 1) / ns * np.eye(b)
            try:
                Binv_h = solve(Bm, h, assume_a="pos")
                BX = solve(Bm, Xd, assume_a="pos")
                BXn = solve(Bm, Xn, assume_a="pos")
            except np.linalg.LinAlgError:       # numerically singular: not a candidate
                scores[i, j] = np.inf
                continue
            den = ns - np.sum(Xd * BX, axis=0)
            B0 = Binv_h[:, None] + BX * ((h @ BX) / den)
            B1 = BXn + BX * (np.sum(Xd * BXn, axis=0) / den)
            B2 = np.maximum(0.0, (ns - 1) / (ns * (nt - 1)) * (nt * B0 - B1))
            r_s, r_t = np.sum(Xd * B2, axis=0), np.sum(Xn * B2, axis=0)
            scores[i, j] = np.sum(r_s ** 2) / (2 * m) - np.sum(r_t) / m
    if not np.isfinite(scores).any():
        return float(sigma), float(reg), scores
    i, j = np.unravel_index(np.argmin(scores), scores.shape)
    return float(sigma * LOO_BANDWIDTH_FACTORS[i]), float(reg * LOO_REG_FACTORS[j]), scores


class _LSIF(BaseReweighting):
    """Least-squares fit of a kernel model of the (relative) density ratio."""

    _parameter_constraints: dict = {
        "bandwidth": _BANDWIDTH,
        "reg": [Interval(Real, 0, None, closed="left")],
        "n_centers": [Interval(Integral, 1, None, closed="left")],
        "random_state": ["random_state"],
    }

    def _fit_ratio(self, Xs, Xt):
        sigma = kernel_sigma(self.bandwidth, Xs, Xt)
        C = kernel_centers(Xt, int(self.n_centers), self.random_state)
        check_dense_memory(max(Xs.shape[0], Xt.shape[0]), C.shape[0], 2,
                           f"{type(self).__name__}.fit with {C.shape[0]} centres", "",
                           advice="Lower n_centers or subsample the rows.")
        reg = float(self.reg)
        if getattr(self, "loo", False) and reg > 0 and min(Xs.shape[0], Xt.shape[0]) >= 2:
            sigma, reg, self.loo_scores_ = _ulsif_loo(Xs, Xt, C, sigma, reg)
        self.sigma_, self.reg_ = sigma, reg
        Ps = rbf_kernel(Xs, C, sigma=self.sigma_)
        Pt = rbf_kernel(Xt, C, sigma=self.sigma_)
        a = self._alpha()
        H = (1.0 - a) * (Ps.T @ Ps) / Ps.shape[0]
        if a > 0:
            H += a * (Pt.T @ Pt) / Pt.shape[0]
        H[np.diag_indices_from(H)] += reg
        h = Pt.mean(axis=0)
        theta = solve(H, h, assume_a="pos") if reg > 0 else np.linalg.lstsq(H, h)[0]
        self.theta_ = self._clip_coef(theta)
        self.centers_ = C
        return self._ratio(Xs)

    def _alpha(self) -> float:
        return 0.0

    def _clip_coef(self, theta):
        return theta

    def _ratio(self, X):
        check_is_fitted(self, "theta_")
        return np.maximum(rbf_kernel(X, self.centers_, sigma=self.sigma_) @ self.theta_, 0.0), \
            False


class uLSIF(_LSIF):
    """Unconstrained least-squares importance fitting (Kanamori et al., 2009): the density
    ratio in closed form.

    With Gaussian kernels ``phi_l(x) = k(x, c_l)`` on ``b`` target rows ``c_l``,
    ``H = 1/n_s sum_i phi(x_i) phi(x_i)^T`` (source rows) and ``h = 1/n_t sum_j phi(x'_j)``
    (target rows), the least-squares fit of ``w = a^T phi`` to ``p_t / p_s`` is
    ``a = max(0, (H + reg I)^-1 h)`` (Eq. 10-11 of the paper; the clipping keeps the ratio
    non-negative), ``w(x) = a^T phi(x)``. ``weights_`` holds ``w`` on the source rows scaled to
    mean 1 and ``1.0`` on the target rows; ``transform`` returns ``X`` unchanged.

    Parameters
    ----------
    bandwidth : float or {"median", "median_sq", "mean", "n_features"}, default="median"
        ``sigma`` of the Gaussian kernel.
    reg : float, default=0.01
        Ridge ``lambda`` (``>= 0``).
    n_centers : int, default=100
        Target rows drawn (without replacement) as the centres (all when fewer).
    loo : bool, default=True
        Choose ``sigma`` among ``bandwidth`` times ``(1/4, 1/2, 1, 2, 4)`` and ``lambda`` among
        ``reg`` times ``(0.01, 0.1, 1, 10, 100)`` by the paper's closed-form leave-one-out
        score (Section 3.4; the ``i``-th source and target rows held out together, all ``i``
        at once): ``O(25 (b^3 + b^2 n))``. ``False``: ``bandwidth`` and ``reg`` as given.
    random_state : int, RandomState or None, default=None
        Seed of the centres' draw.

    Attributes
    ----------
    weights_ : ndarray of shape (n_samples,)
    theta_ : ndarray of shape (n_centers,)
        ``a`` (clipped).
    centers_ : ndarray of shape (n_centers, n_features)
    sigma_, reg_ : float
        The bandwidth and ridge used (chosen when ``loo``).
    loo_scores_ : ndarray of shape (5, 5)
        The leave-one-out scores (rows: bandwidths, columns: ridges; lower is better), when
        ``loo`` and both domains have 2 rows or more.
    effective_sample_size_ : float
        Kish's effective sample size of the source rows' weights, ``(sum w)^2 / sum w^2``
        (fit warns below 1% of the source rows, or 2).
    log_scale_ : float
    n_source_, n_target_ : int
    n_features_in_ : int
    feature_names_in_ : ndarray of str
        Only when ``X`` had string column names.

    Raises
    ------
    ValueError
        No source rows; NaN/inf in ``X``.

    Notes
    -----
    Cost: ``O((n_s + n_t) b d + (n_s + n_t) b^2 + b^3)``, 25 times with ``loo``; memory
    ``O((n_s + n_t) b)``.

    References
    ----------
    T. Kanamori, S. Hido and M. Sugiyama, "A least-squares approach to direct importance
    estimation", JMLR 10, 2009 (uLSIF, Section 3; its leave-one-out score, Section 3.4).

    Examples
    --------
    >>> import numpy as np
    >>> from shiftlearn.reweighting import uLSIF
    >>> rng = np.random.default_rng(0)
    >>> X = np.vstack([rng.normal(0, 1, (40, 2)), rng.normal(1, 1, (30, 2))])
    >>> sd = np.r_[np.ones(40, int), -np.ones(30, int)]
    >>> bool(uLSIF(random_state=0).fit(X, sample_domain=sd).theta_.min() >= 0)
    True
    """

    _parameter_constraints: dict = {
        **_LSIF._parameter_constraints,
        "loo": ["boolean"],
    }

    def __init__(self, bandwidth="median", reg=0.01, n_centers=100, loo=True,
                 random_state=None):
        self.bandwidth = bandwidth
        self.reg = reg
        self.n_centers = n_centers
        self.loo = loo
        self.random_state = random_state

    def _clip_coef(self, theta):
        return np.maximum(theta, 0.0)


class RuLSIF(_LSIF):
    """Relative unconstrained least-squares importance fitting (Yamada et al., 2011): the
    relative density ratio ``r(x) = p_t(x) / (alpha p_t(x) + (1 - alpha) p_s(x))`` in closed
    form, bounded by ``1/alpha``.

    ``H = alpha/n_t sum_j phi(x'_j) phi(x'_j)^T + (1 - alpha)/n_s sum_i phi(x_i) phi(x_i)^T``,
    ``h = 1/n_t sum_j phi(x'_j)``, ``theta = (H + reg I)^-1 h`` and ``r(x) =
    max(0, theta^T phi(x))`` (the paper's estimator, its negative values clipped as weights).
    ``alpha = 0`` is uLSIF without the clipping of the coefficients. ``weights_`` holds ``r``
    on the source rows scaled to mean 1 and ``1.0`` on the target rows.

    Parameters
    ----------
    alpha : float in [0, 1), default=0.1
        The mixing of the target density into the denominator: larger values bound (smooth)
        the weights more, at the price of a bias towards 1.
    bandwidth : float or {"median", "median_sq", "mean", "n_features"}, default="median"
    reg : float, default=0.01
    n_centers : int, default=100
    random_state : int, RandomState or None, default=None

    Attributes
    ----------
    weights_ : ndarray of shape (n_samples,)
    theta_ : ndarray of shape (n_centers,)
    centers_ : ndarray of shape (n_centers, n_features)
    sigma_, reg_ : float
    effective_sample_size_ : float
        Kish's effective sample size of the source rows' weights, ``(sum w)^2 / sum w^2``
        (fit warns below 1% of the source rows, or 2).
    log_scale_ : float
    n_source_, n_target_ : int
    n_features_in_ : int
    feature_names_in_ : ndarray of str
        Only when ``X`` had string column names.

    Raises
    ------
    ValueError
        No source rows; NaN/inf in ``X``.

    Notes
    -----
    Cost: as :class:`uLSIF` without its leave-one-out search (``bandwidth`` and ``reg`` are
    used as given).

    References
    ----------
    M. Yamada, T. Suzuki, T. Kanamori, H. Hachiya and M. Sugiyama, "Relative density-ratio
    estimation for robust distribution comparison", NIPS 2011 (Section 3).

    Examples
    --------
    >>> import numpy as np
    >>> from shiftlearn.reweighting import RuLSIF
    >>> rng = np.random.default_rng(0)
    >>> X = np.vstack([rng.normal(0, 1, (40, 2)), rng.normal(1, 1, (30, 2))])
    >>> sd = np.r_[np.ones(40, int), -np.ones(30, int)]
    >>> RuLSIF(alpha=0.5, random_state=0).fit(X, sample_domain=sd).theta_.shape
    (30,)
    """

    _parameter_constraints: dict = {
        **_LSIF._parameter_constraints,
        "alpha": [Interval(Real, 0, 1, closed="left")],
    }

    def __init__(self, alpha=0.1, bandwidth="median", reg=0.01, n_centers=100,
                 random_state=None):
        self.alpha = alpha
        self.bandwidth = bandwidth
        self.reg = reg
        self.n_centers = n_centers
        self.random_state = random_state

    def _alpha(self) -> float:
        return float(self.alpha)
