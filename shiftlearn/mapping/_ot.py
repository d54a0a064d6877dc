"""Barycentric optimal-transport maps on POT: exact (EMD), entropic (Sinkhorn) and
class-regularised (ClassRegOT).

The design decisions and measurements are in ``docs/dev/mapping.md``.
"""

from __future__ import annotations

import warnings
from numbers import Integral, Real

import numpy as np
from sklearn.base import BaseEstimator, OneToOneFeatureMixin, TransformerMixin
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils.validation import check_is_fitted

from .._constraints import Interval, StrOptions, check_params
from .._resources import check_dense_memory
from .._stacklevel import user_stacklevel
from .._validation import check_sample_domain, check_X, check_X_y_domain, require_y
from ._common import fit_rows, no_target_warning, sides

__all__ = ["EMD", "ClassRegOT", "Sinkhorn", "barycentric_map", "entropic_plan", "import_ot"]

#: bytes of one row block of the out-of-sample distances in ``transform``
_BLOCK_BYTES = 64 << 20


def import_ot():
    """POT (``import ot``), or an ``ImportError`` that says how to install it."""
    try:
        import ot
    except ImportError as exc:
        raise ImportError(
            "The optimal-transport maps (EMD, Sinkhorn, ClassRegOT) need POT, the Python "
            "Optimal Transport library: pip install shiftlearn[ot] (or pip install pot).") \
            from exc
    return ot


def barycentric_map(plan: np.ndarray, Xs: np.ndarray, Xt: np.ndarray) -> np.ndarray:
    """Each source row moved to the barycentre of the target rows it is sent to:
    ``T(x_i) = sum_j pi_ij x_j / sum_j pi_ij``; a row with no mass (an unconverged
    entropic plan that underflowed) stays where it is.

    Examples
    --------
    >>> plan = np.array([[0.5, 0.0], [0.25, 0.25]])
    >>> barycentric_map(plan, np.zeros((2, 1)), np.array([[1.0], [3.0]])).ravel().tolist()
    [1.0, 2.0]
    """
    mass = plan.sum(axis=1)
    ok = mass > 0
    out = np.array(Xs, dtype=np.float64)
    out[ok] = (plan[ok] @ Xt) / mass[ok, None]
    return out


def entropic_plan(ot, a, b, M, reg: float, max_iter: int, tol: float
                  ) -> tuple[np.ndarray, int]:
    """The entropic plan of POT's Sinkhorn and its iteration count.

    The cost is first reduced, ``C_ij - r_i - c_j`` with ``r`` its row minima and ``c`` the
    column minima of the rest (the plan does not change: the shifts are absorbed by the
    scalings), so every row and column of the kernel ``exp(-C / reg)`` holds a 1; then POT's
    Sinkhorn in the scaling domain (``method="sinkhorn"``, a matrix-vector product per
    iteration). When it meets round-off trouble (POT warns of numerical errors, or a
    non-finite plan) or stops at ``max_iter`` with marginals off by more than ``sqrt(tol)``
    (not even half of ``tol``'s digits; both happen when ``reg`` is small against the spread
    of the costs), the plan is solved again by POT's log-stabilised Sinkhorn with epsilon
    scaling (``ot.bregman.sinkhorn_epsilon_scaling``: the entropy is lowered step by step to
    ``reg``, each step started from the last one's potentials, 40 steps of at most
    ``max(10, max_iter // 10)`` iterations; the count returned is then the number of steps).
    A plain log-domain Sinkhorn would need of the order of ``max C / reg`` iterations there;
    1000 of them left marginals off by more than the marginals themselves
    (``docs/dev/mapping.md``). A plan between ``tol`` and ``sqrt(tol)`` is kept (with the
    warning below): there the scaling domain was converging, and the stabilised solver costs
    far more (``docs/dev/mapping.md`` gives the times).

    Of the plans computed, the one with the smaller marginal violation (the larger Euclidean
    norm of the row and column sums' errors) is returned; above ``tol`` with a
    ``ConvergenceWarning`` that gives it.
    """
    return entropic_solve(ot, a, b, M, reg, max_iter, tol)[:2]


def entropic_solve(ot, a, b, M, reg: float, max_iter: int, tol: float, warm=None,
                   warn: bool = True) -> tuple[np.ndarray, int, tuple | None]:
    """:func:`entropic_plan`, with the dual potentials ``(f, g)`` of ``M``
    (``plan_ij = exp((f_i + g_j - M_ij) / reg)``) when the log-stabilised solver ran, else
    ``None``; given ``warm`` potentials (of a nearby cost: the previous step of a loop that
    re-solves a changing cost), the log-stabilised Sinkhorn (``ot.bregman.
    sinkhorn_stabilized``, at most ``max_iter`` iterations) starts from them instead, and its
    plan is kept unless it is not finite (in ClassRegOT's loop at 200 iterations a cold solve
    was no nearer a coupling: 1.3e-3 against 1e-3 to 1e-4 warm, at five times the cost).
    ``warn=False``: no warning of a plan short of ``tol`` (a loop warns of its last one)."""
    r = M.min(axis=1, keepdims=True)
    Mr = M - r
    c = Mr.min(axis=0, keepdims=True)
    Mr -= c
    r, c = r.ravel(), c.ravel()
    found = []                                   # (violation, plan, n_iter, potentials)
    with warnings.catch_warnings():
        # each step but the last stops at its cap by design; convergence is checked below
        warnings.simplefilter("ignore")
        if warm is not None:
            plan, log = ot.bregman.sinkhorn_stabilized(
                a, b, Mr, reg, numItermax=max_iter, stopThr=tol,
                warmstart=(warm[0] - r, warm[1] - c), log=True)
            found.append(_repaired(ot, a, b, Mr, reg, tol, plan, log, int(log["n_iter"])))
        if not found or not np.isfinite(found[0][0]):       # no warm start, or it failed
            plan, n_iter = _scaling_plan(ot, a, b, Mr, reg, max_iter, tol)
            off = _violation(plan, a, b)
            if off <= tol:
                return plan, n_iter, None
            if np.isfinite(off):
                found.append((off, plan, n_iter, None))
            if not found or min(f[0] for f in found) > np.sqrt(tol):
                # far from converged (not half of tol's digits): the log-stabilised solver
                plan, log = ot.bregman.sinkhorn_epsilon_scaling(
                    a, b, Mr, reg, numItermax=_EPS_STEPS,
                    numInnerItermax=max(10, max_iter // 10), stopThr=tol, log=True)
                found.append(_repaired(ot, a, b, Mr, reg, tol, plan, log,
                                       int(log["niter"]) + 1))
    off, plan, n_iter, pot = min(found, key=lambda f: f[0])
    if warn and not off <= tol:
        warnings.warn(
            f"The entropic plan (reg_e={reg:g}) stopped with its marginals off by "
            f"{off:.2e} (tol={tol:g}): reg_e is small against the spread of the squared "
            f"distances ({float(Mr.max()):.3g}). Raise max_iter or reg_e, or scale the "
            "features.", ConvergenceWarning, stacklevel=user_stacklevel())
    return plan, n_iter, None if pot is None else (pot[0] + r, pot[1] + c)


#: epsilon-scaling steps (POT runs at least 35; the entropy reaches ``reg`` within about
#: ``log(1e4 / reg)`` of them, the rest refine at ``reg``)
_EPS_STEPS = 40
#: iterations of the short warm-started solve that re-forms a plan from its potentials
_REPAIR_ITER = 20


def _repaired(ot, a, b, Mr, reg, tol, plan, log, n_iter):
    """``(violation, plan, n_iter, potentials)`` of a log-stabilised solve. POT's stabilised
    Sinkhorn resets its scalings to ``1/n`` when it absorbs them into the potentials; a solve
    that stops right after an absorption returns a plan scaled by about ``1/(n_s n_t)`` (its
    row sums, exact after any other iteration, are then far off: measured at 1,000 x 1,000,
    ``reg = 1``, costs up to 387: total mass 1e-6). Such a plan is formed again by a few
    iterations started from its potentials, where the scalings stay near 1 and nothing is
    absorbed; the better of the two is kept."""
    pot = (log["alpha"], log["beta"])
    best = (_violation(plan, a, b), plan, n_iter, pot)
    if best[0] <= tol:
        return best
    again, log2 = ot.bregman.sinkhorn_stabilized(a, b, Mr, reg, numItermax=_REPAIR_ITER,
                                                 stopThr=tol, warmstart=pot, log=True)
    other = (_violation(again, a, b), again, n_iter + int(log2["n_iter"]),
             (log2["alpha"], log2["beta"]))
    return min(best, other, key=lambda f: f[0])


def _scaling_plan(ot, a, b, Mr, reg, max_iter, tol):
    """POT's scaling-domain Sinkhorn on the reduced cost: ``(plan, n_iter)``; the plan is
    ``None`` when it met round-off trouble (POT's warning of numerical errors, or a
    non-finite plan)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        plan, log = ot.sinkhorn(a, b, Mr, reg, method="sinkhorn", numItermax=max_iter,
                                stopThr=tol, log=True)
    trouble = (any("numerical errors" in str(w.message).lower() for w in caught)
               or not np.all(np.isfinite(plan)))
    return (None, 0) if trouble else (plan, int(log["niter"]))


def _violation(plan, a: np.ndarray, b: np.ndarray) -> float:
    """The larger of ``||plan 1 - a||_2`` and ``||plan^T 1 - b||_2`` (POT's stopping rule
    checks the second: its Sinkhorn matches the rows after each update); ``inf`` for a
    missing or non-finite plan."""
    if plan is None:
        return np.inf
    off = max(float(np.linalg.norm(plan.sum(axis=1) - a)),
              float(np.linalg.norm(plan.sum(axis=0) - b)))
    return off if np.isfinite(off) else np.inf


class _BaseOTMap(OneToOneFeatureMixin, TransformerMixin, BaseEstimator):
    """Fit a plan between the source and target rows (uniform weights, squared Euclidean
    cost), keep the source rows and their barycentric images; ``transform`` maps source rows
    by the nearest training source row's displacement and returns target rows as they are."""

    # scikit-learn metadata routing: sample_domain is requested by default
    __metadata_request__fit = {"sample_domain": True}
    __metadata_request__transform = {"sample_domain": True}

    #: float64 ``n_s x n_t`` arrays the solver holds at once (cost, plan, its temporaries)
    _PLAN_ARRAYS = 4.0

    def fit(self, X, y=None, sample_domain=None):
        """Compute the plan between the source and target rows and the source rows' images.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            The source and target rows.
        y : array-like of shape (n_samples,), optional
            Labels; ``-1`` (or NaN) marks unlabeled rows, from which ``sample_domain`` is
            inferred when it is omitted.
        sample_domain : array-like of shape (n_samples,), optional
            Positive = source, negative = target.

        Returns
        -------
        self
        """
        self._fit(X, y, sample_domain)
        return self

    def _validate(self, X, y, sample_domain):
        return fit_rows(self, X, y, sample_domain)

    def _fit(self, X, y, sample_domain) -> tuple[np.ndarray, np.ndarray]:
        check_params(self)
        X, y, sd = self._validate(X, y, sample_domain)
        src, tgt = sides(sd)
        ns, nt = int(src.sum()), int(tgt.sum())
        Xs = X[src].astype(np.float64, copy=False)
        self.source_rows_ = Xs
        if nt == 0:
            no_target_warning(type(self).__name__)
            self.mapped_source_, self.n_iter_ = Xs.copy(), 0
            return X, sd
        name = type(self).__name__
        check_dense_memory(ns, nt, self._plan_arrays(),
                           f"{name}.fit on {ns} source and {nt} target rows", "LinOT")
        ot = import_ot()
        Xt = X[tgt].astype(np.float64, copy=False)
        a, b = np.full(ns, 1.0 / ns), np.full(nt, 1.0 / nt)
        M = ot.dist(Xs, Xt, metric="sqeuclidean")
        plan, self.n_iter_ = self._plan(ot, a, b, M, None if y is None else y[src])
        self.mapped_source_ = barycentric_map(plan, Xs, Xt)
        return X, sd

    def _plan_arrays(self) -> float:
        return self._PLAN_ARRAYS

    def _plan(self, ot, a, b, M, ys):  # pragma: no cover - every subclass defines it
        raise NotImplementedError

    def fit_transform(self, X, y=None, sample_domain=None):
        """``fit``, then the training rows: source rows at their barycentres, target rows as
        they are."""
        X, sd = self._fit(X, y, sample_domain)
        Z = np.array(X, dtype=np.float64)
        Z[sd > 0] = self.mapped_source_
        return Z

    def transform(self, X, sample_domain=None):
        """The rows with ``sample_domain > 0`` moved as their nearest training source row; the
        others as given.

        A source row ``x`` whose nearest training source row (squared Euclidean distance,
        the first on ties) is ``x_i`` goes to ``T(x_i) + x - x_i``: a training source row
        goes to its barycentre.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        sample_domain : array-like of shape (n_samples,), optional
            ``None``: every row is a target row (returned as it is, as float).

        Returns
        -------
        ndarray of shape (n_samples, n_features)
        """
        check_is_fitted(self, "mapped_source_")
        X = check_X(X, estimator=self, reset=False)
        Z = np.array(X, dtype=np.float64)
        if sample_domain is None:
            return Z
        src = check_sample_domain(sample_domain, X.shape[0]) > 0
        if src.any():
            Z[src] = self._out_of_sample(Z[src])
        return Z

    def _out_of_sample(self, Y: np.ndarray) -> np.ndarray:
        """The nearest-neighbour rule, in row blocks of at most ``_BLOCK_BYTES`` distances."""
        S, T = self.source_rows_, self.mapped_source_
        sq = np.einsum("ij,ij->i", S, S)
        step = max(1, _BLOCK_BYTES // (8 * max(1, S.shape[0])))
        out = np.empty_like(Y)
        for i in range(0, Y.shape[0], step):
            B = Y[i:i + step]
            # ||y - s||^2 up to the row's own ||y||^2, which does not change the argmin
            idx = np.argmin(sq[None, :] - 2.0 * (B @ S.T), axis=1)
            out[i:i + step] = T[idx] + B - S[idx]
        return out


class EMD(_BaseOTMap):
    """Exact optimal-transport map: source rows moved to the barycentre of their share of the
    exact (earth mover's) transport plan to the target rows.

    ``fit`` solves ``min_pi <pi, C>`` over the couplings of the uniform weights of the source
    and target rows (POT's network simplex, ``ot.emd``) and keeps each source row's image
    ``T(x_i) = n_s sum_j pi_ij x_j``; ``fit_transform`` returns the source rows at their images
    and the target rows as they are; ``transform(X)`` treats ``X`` as target rows (the
    identity), ``transform(X, sample_domain=sd)`` moves the rows with ``sd > 0`` by the
    nearest training source row's displacement.

    Parameters of the plan: uniform weights on the rows of each side, the cost
    ``C_ij = ||x_i - x_j||^2`` on the features as they are (scale them first when their units
    differ). Several sources (or targets) are pooled. Without target rows the map is the
    identity, with a warning. The plan (``n_s x n_t``) is not kept; the memory it needs is
    refused up front when it exceeds the package's budget
    (``shiftlearn._resources.MEMORY_BUDGET``). POT is an optional dependency (``pip install
    shiftlearn[ot]``), imported by ``fit``.

    The network simplex is capped at ``max(100000, 10 n_s n_t)`` iterations (POT warns when
    it is reached), so an exact plan has no hyper-parameter.

    Attributes
    ----------
    source_rows_ : ndarray of shape (n_source, n_features)
        The training source rows.
    mapped_source_ : ndarray of shape (n_source, n_features)
        Their barycentric images.
    n_iter_ : int
        ``1``: one exact solve (``0`` without target rows).
    n_features_in_ : int
    feature_names_in_ : ndarray of str
        Only when ``X`` had string column names.

    Raises
    ------
    ImportError
        POT is not installed.
    ValueError
        The plan would exceed the memory budget; NaN/inf in ``X`` (the message names the
        column).

    Notes
    -----
    Cost: the cost matrix ``O(n_s n_t d)``, the network simplex about ``O(n^3 log n)``
    (``n = max(n_s, n_t)``; in practice far less), the images ``O(n_s n_t d)``; memory
    ``O(n_s n_t)``. ``transform`` of ``m`` source rows: ``O(m n_s d)``.

    References
    ----------
    N. Courty, R. Flamary, D. Tuia and A. Rakotomamonjy, "Optimal transport for domain
    adaptation", IEEE TPAMI 39(9), 2017: Eq. (2), the discrete Kantorovich problem
    ``min_{pi in Pi(mu_s, mu_t)} <pi, C>_F``; Eq. (13), the barycentric mapping
    ``X_s^ = diag(pi 1)^{-1} pi X_t`` (``n_s pi X_t`` for uniform weights).
    S. Ferradans, N. Papadakis, G. Peyre and J.-F. Aujol, "Regularized discrete optimal
    transport", SIAM J. Imaging Sci. 7(3), 2014: the out-of-sample rule (a new point moves
    as its nearest training point).

    Examples
    --------
    >>> from shiftlearn.mapping import EMD
    >>> from shiftlearn.datasets import make_sca_toy
    >>> X, y, sd = make_sca_toy(n_per_cluster=10, random_state=0)
    >>> Z = EMD().fit_transform(X, y, sd)
    >>> bool(np.allclose(Z[sd < 0], X[sd < 0]))                  # target rows as they are
    True
    """

    _parameter_constraints: dict = {}

    def __init__(self):
        pass

    def _plan(self, ot, a, b, M, ys):
        cap = max(100000, 10 * M.shape[0] * M.shape[1])
        return ot.emd(a, b, M, numItermax=cap), 1


class Sinkhorn(_BaseOTMap):
    """Entropic optimal-transport map: source rows moved to the barycentre of their share of
    the entropy-regularised transport plan to the target rows.

    ``fit`` solves ``min_pi <pi, C> + reg_e sum pi_ij (log pi_ij - 1)`` over the couplings of
    the uniform weights (POT's Sinkhorn on the row- and column-reduced cost; its
    log-stabilised version with epsilon scaling when round-off or ``max_iter`` stops it short
    of ``tol``: :func:`entropic_plan`) and keeps each source row's
    image; ``fit_transform``, ``transform`` as :class:`EMD`.

    Parameters of the plan: uniform weights on the rows of each side, the cost
    ``C_ij = ||x_i - x_j||^2`` on the features as they are (scale them first when their units
    differ). Several sources (or targets) are pooled. Without target rows the map is the
    identity, with a warning. The plan (``n_s x n_t``) is not kept; the memory it needs is
    refused up front when it exceeds the package's budget
    (``shiftlearn._resources.MEMORY_BUDGET``). POT is an optional dependency (``pip install
    shiftlearn[ot]``), imported by ``fit``.

    Parameters
    ----------
    reg_e : float > 0, default=1.0
        Weight of the entropy (in the units of the squared distances): large values blur
        every row onto the target mean, small ones approach :class:`EMD`.
    max_iter : int, default=1000
        Iteration cap of Sinkhorn (POT warns when it is reached).
    tol : float > 0, default=1e-8
        Stop when the marginal violation falls below it (POT's ``stopThr``).

    Attributes
    ----------
    source_rows_ : ndarray of shape (n_source, n_features)
    mapped_source_ : ndarray of shape (n_source, n_features)
    n_iter_ : int
        Iterations run (Sinkhorn's, or the epsilon-scaling steps when the log-stabilised
        solver ran; ClassRegOT's outer ones).
    n_features_in_ : int
    feature_names_in_ : ndarray of str
        Only when ``X`` had string column names.

    Raises
    ------
    ImportError
        POT is not installed.
    ValueError
        The plan would exceed the memory budget; NaN/inf in ``X``.

    Warns
    -----
    ConvergenceWarning
        The plan's marginals are still off by more than ``tol`` (given in the message).

    Notes
    -----
    Cost: ``O(n_s n_t d)`` for the costs and the images, ``O(n_s n_t)`` per Sinkhorn
    iteration, memory ``O(n_s n_t)``. ``transform`` of ``m`` source rows: ``O(m n_s d)``.

    References
    ----------
    M. Cuturi, "Sinkhorn distances: lightspeed computation of optimal transport", NIPS 2013,
    Eq. (2) and Lemma 2: the entropic problem and its solution ``diag(u) K diag(v)``,
    ``K = exp(-C / reg_e)``. Courty et al., IEEE TPAMI 2017, Eq. (13): the barycentric mapping.

    Examples
    --------
    >>> from shiftlearn.mapping import Sinkhorn
    >>> from shiftlearn.datasets import make_sca_toy
    >>> X, y, sd = make_sca_toy(n_per_cluster=10, random_state=0)
    >>> Sinkhorn(reg_e=1.0).fit_transform(X, y, sd).shape
    (60, 2)
    """

    _PLAN_ARRAYS = 6.0

    _parameter_constraints: dict = {
        "reg_e": [Interval(Real, 0, None, closed="neither")],
        "max_iter": [Interval(Integral, 1, None, closed="left")],
        "tol": [Interval(Real, 0, None, closed="neither")],
    }

    def __init__(self, reg_e=1.0, max_iter=1000, tol=1e-8):
        self.reg_e = reg_e
        self.max_iter = max_iter
        self.tol = tol

    def _plan(self, ot, a, b, M, ys):
        return entropic_plan(ot, a, b, M, float(self.reg_e), int(self.max_iter),
                             float(self.tol))


class ClassRegOT(_BaseOTMap):
    """Class-regularised optimal-transport map: the entropic plan with a group penalty that
    keeps each target row's mass from few source classes, then the barycentric map.

    ``fit`` minimises ``<pi, C> + reg_e sum pi_ij (log pi_ij - 1) + reg_cl Omega(pi)`` over
    the couplings of the uniform weights, ``Omega`` a group penalty over the source classes:
    ``"lpl1"``, ``sum_j sum_c (sum_{i in c} pi_ij)^(1/2)`` (non-convex, majorisation-
    minimisation: a Sinkhorn per outer iteration, POT's ``ot.sinkhorn`` on a re-weighted
    cost), or ``"l1l2"``, ``sum_j sum_c ||pi_{c, j}||_2`` (group lasso, POT's generalised
    conditional gradient ``ot.da.sinkhorn_l1l2_gl``). Needs every source row's label.
    ``fit_transform``, ``transform`` as :class:`EMD`.

    Parameters of the plan: uniform weights on the rows of each side, the cost
    ``C_ij = ||x_i - x_j||^2`` on the features as they are (scale them first when their units
    differ). Several sources (or targets) are pooled. Without target rows the map is the
    identity, with a warning. The plan (``n_s x n_t``) is not kept; the memory it needs is
    refused up front when it exceeds the package's budget
    (``shiftlearn._resources.MEMORY_BUDGET``). POT is an optional dependency (``pip install
    shiftlearn[ot]``), imported by ``fit``.

    Parameters
    ----------
    reg_e : float > 0, default=1.0
        Weight of the entropy, as in :class:`Sinkhorn`.
    reg_cl : float >= 0, default=0.1
        Weight of the class penalty (``0``: :class:`Sinkhorn`).
    norm : {"lpl1", "l1l2"}, default="lpl1"
        The group penalty ``Omega``.
    max_iter : int, default=10
        Outer iterations (majorisation-minimisation or conditional gradient).
    max_inner_iter : int, default=200
        Iteration cap of each inner Sinkhorn.
    tol : float > 0, default=1e-8
        Stop threshold of each inner Sinkhorn.

    Attributes
    ----------
    source_rows_ : ndarray of shape (n_source, n_features)
    mapped_source_ : ndarray of shape (n_source, n_features)
    n_iter_ : int
        Iterations run (Sinkhorn's, or the epsilon-scaling steps when the log-stabilised
        solver ran; ClassRegOT's outer ones).
    n_features_in_ : int
    feature_names_in_ : ndarray of str
        Only when ``X`` had string column names.

    Raises
    ------
    ImportError
        POT is not installed.
    ValueError
        No labels, an unlabeled source row, the plan exceeding the memory budget, NaN/inf in
        ``X``.

    Notes
    -----
    Cost: ``O(n_s n_t d)`` for the costs and the images; ``"lpl1"``: ``max_iter`` Sinkhorns
    of at most ``max_inner_iter`` iterations, ``O(n_s n_t)`` each, and the re-weighting,
    ``O(n_s n_t)`` (class sums, never the ``n_s x n_t x classes`` array of POT's
    ``sinkhorn_lpl1_mm``); memory ``O(n_s n_t)``. ``"l1l2"``: POT's solver, memory
    ``O(n_s n_t)``.

    References
    ----------
    N. Courty, R. Flamary, D. Tuia and A. Rakotomamonjy, "Optimal transport for domain
    adaptation", IEEE TPAMI 39(9), 2017: Eq. (9)-(10), the class-based ``l_p-l_1`` penalty
    ``Omega_p(pi) = sum_j sum_c ||pi(I_c, j)||_p^q`` (``p = 1/2``, ``q = 1`` here) and its
    majorisation-minimisation (Alg. 1), the ``l_1-l_2`` group lasso (Section 4.2) solved by
    generalised conditional gradient; Eq. (13), the barycentric mapping.

    Examples
    --------
    >>> from shiftlearn.mapping import ClassRegOT
    >>> from shiftlearn.datasets import make_sca_toy
    >>> X, y, sd = make_sca_toy(n_per_cluster=10, random_state=0)
    >>> ClassRegOT(reg_e=5.0, reg_cl=1.0).fit_transform(X, y, sd).shape
    (60, 2)
    """

    _parameter_constraints: dict = {
        "reg_e": [Interval(Real, 0, None, closed="neither")],
        "reg_cl": [Interval(Real, 0, None, closed="left")],
        "norm": [StrOptions({"lpl1", "l1l2"})],
        "max_iter": [Interval(Integral, 1, None, closed="left")],
        "max_inner_iter": [Interval(Integral, 1, None, closed="left")],
        "tol": [Interval(Real, 0, None, closed="neither")],
    }

    def __init__(self, reg_e=1.0, reg_cl=0.1, norm="lpl1", max_iter=10, max_inner_iter=200,
                 tol=1e-8):
        self.reg_e = reg_e
        self.reg_cl = reg_cl
        self.norm = norm
        self.max_iter = max_iter
        self.max_inner_iter = max_inner_iter
        self.tol = tol

    def _validate(self, X, y, sample_domain):
        require_y(y, self, ": the class penalty groups the source rows by their labels; give "
                           "them, and -1 (or NaN) for the unlabeled target rows.")
        return check_X_y_domain(X, y, sample_domain, task="classification",
                                estimator=self)

    def _plan_arrays(self) -> float:
        if self.norm == "l1l2":
            # POT's conditional gradient keeps the cost, the plan, its gradient and the
            # direction, and its line search a few more
            return 8.0
        return 6.0

    def _plan(self, ot, a, b, M, ys):
        _, codes = np.unique(ys, return_inverse=True)
        reg, eta = float(self.reg_e), float(self.reg_cl)
        if self.norm == "l1l2":
            plan, log = ot.da.sinkhorn_l1l2_gl(a, codes, b, M, reg, eta,
                                               numItermax=int(self.max_iter),
                                               numInnerItermax=int(self.max_inner_iter),
                                               stopInnerThr=float(self.tol), log=True)
            return plan, max(1, len(log["loss"]) - 1)
        return _lpl1_plan(ot, a, codes, b, M, reg, eta, int(self.max_iter),
                          int(self.max_inner_iter), float(self.tol)), int(self.max_iter)


def _lpl1_plan(ot, a, codes, b, M, reg, eta, n_iter, n_inner, tol):
    """The ``l_p-l_1`` (``p = 1/2``) class-regularised plan by majorisation-minimisation
    (Courty et al. 2017, Alg. 1; the iteration of POT's ``sinkhorn_lpl1_mm``): each outer
    step solves a Sinkhorn on ``C + eta W`` (:func:`entropic_solve`: reduced cost, log domain
    with epsilon scaling on round-off trouble, then started from the last step's
    potentials), ``W_ij = p (g_{c(i) j} + 1e-3)^(p - 1)``, with ``g_{cj}`` the mass target row
    ``j`` takes from class ``c``. The class sums are one ``classes x n_s`` by
    ``n_s x n_t`` product: ``O(n_s n_t)`` memory."""
    p, floor = 0.5, 1e-3
    n_classes = int(codes.max()) + 1
    onehot = np.zeros((n_classes, codes.shape[0]))
    onehot[codes, np.arange(codes.shape[0])] = 1.0
    W = np.zeros_like(M)
    plan, warm = W, None
    for step in range(n_iter):
        # each step's cost is near the last one's: its potentials start the next solve
        plan, _, warm = entropic_solve(ot, a, b, M + eta * W, reg, n_inner, tol, warm,
                                       warn=step == n_iter - 1)
        mass = onehot @ plan                                   # classes x n_t
        W = p * (mass[codes] + floor) ** (p - 1)
    return plan
