"""Clustering-based validation splits (Napoli & White): the most shifted train/validation split.

Choose the partition ``S = T ∪ V`` that maximises ``MMD(T, V)`` in a kernel feature space,
subject to per-group size constraints. With the sizes fixed this is constrained 2-cluster
kernel k-means (the paper's Theorem 1 / Eq. 11)::

    MMD²_b(T, V) = n / (|T| |V|) * (SSq(S) - Psi(T, V)),   Psi = SSq(T) + SSq(V)

solved by a Lloyd-style loop (the paper's Algorithm 1): distances of every row to the two
centroids by the kernel trick (or Nyström), then a constrained assignment.

The assignment step is the LP's closed-form optimum per group (``solver="closed_form"``,
``O(n log n)``) or the paper's LP (``solver="lp"``, HiGHS); sizes ``m_g = floor(h n_g + 1/2)``
with soft tolerance ``tau``; random feasible or ``init="pca"`` starts, ``n_init`` restarts keep
the lowest ``Psi``. Each Lloyd iteration is one pass over the data, ``O(n q)`` with ``q``
Nyström landmarks (the kernel is never formed), ``O(n^2)`` with the exact kernel. The MMD is
the biased ``MMD²_b`` of Eq. 11. How the paper's open points are resolved:
``docs/dev/model_selection.md``.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from numbers import Integral, Real

import numpy as np

from .._dask import is_dask
from .._linalg import leading_eigh
from ..kernels import (
    gamma_from_sigma,
    kernel_matrix,
    median_heuristic,
    mmd2_from_kernels,
    nystroem,
    rbf_kernel,
    resolve_bandwidth,
    sigma_from_gamma,
)
from ._assignment import (
    SOLVERS,
    _assign_two_closed_form,
    _select_closed_form,
    assign_k_clusters,
    assign_two_clusters,
    group_bounds,
)

__all__ = [
    "ClusterResult",
    "assign_k_clusters",
    "assign_two_clusters",
    "constrained_kernel_kmeans",
    "group_bounds",
    "kernel_operator",
    "split_mmd2",
]

# ---------------------------------------------------------------------------------------------
# kernel operator: K @ W and diag(K) without forming K when avoidable
# ---------------------------------------------------------------------------------------------
@dataclass
class _KernelOperator:
    """The clustering kernel: ``K`` itself, or ``K = Phi M Phi^T`` (``M = I`` when ``None``).

    The factored form (linear kernel: ``Phi = F``; Nyström: ``Phi = k(X, landmarks)``,
    ``M = K_qq^+``) is never multiplied out: cluster sums ``Phi^T W`` are ``q × k``.
    """

    diag: np.ndarray
    kind: str
    K: np.ndarray | None = None        # full kernel
    Phi: np.ndarray | None = None      # explicit features / Nyström block
    M: np.ndarray | None = None        # pseudo-inverse of the landmark kernel (float64)

    @property
    def dtype(self):
        """Precision of the kernel's products (the data's: float32 stays float32)."""
        return (self.K if self.K is not None else self.Phi).dtype

    def phi_t(self, W: np.ndarray) -> np.ndarray:
        """``Phi^T W`` in float64 (``W``: ``n x k``); cluster sums when ``W`` is one-hot."""
        return np.asarray(self.Phi.T @ W.astype(self.Phi.dtype, copy=False), dtype=np.float64)

    def phi(self, V: np.ndarray) -> np.ndarray:
        """``Phi V`` in float64 (``V``: ``q x k`` or ``(q,)``), one value per row."""
        return np.asarray(self.Phi @ V.astype(self.Phi.dtype, copy=False), dtype=np.float64)

    def phi_sum(self) -> np.ndarray:
        """Column sums of ``Phi`` in float64, shape ``(q, 1)``."""
        return np.asarray(self.Phi.sum(axis=0, dtype=np.float64))[:, None]

    def matvec(self, W: np.ndarray) -> np.ndarray:
        """``K @ W`` (float64)."""
        if self.K is not None:
            return np.asarray(self.K @ W, dtype=np.float64)
        return self.phi(self._mul_M(self.phi_t(W)))

    def _mul_M(self, U: np.ndarray) -> np.ndarray:
        return U if self.M is None else self.M @ U


def resolve_gamma(gamma, d: int, rows, bandwidth=None) -> float:
    """The RBF ``gamma`` of ``ClusterSplit``, ``exp(-gamma ||a - b||^2)``.

    From ``bandwidth``: ``None`` -> ``1 / d`` (computed as such, not through the
    ``"n_features"`` rule, whose ``1 / (2 sqrt(d/2)^2)`` need not round to the same float);
    else a spec of :func:`shiftlearn.kernels.resolve_bandwidth` (a number ``sigma``, a rule or
    ``"<f>*<rule>"`` applied to ``rows()``, a callable so the rows are read for a rule only;
    the rule subsamples them itself), ``gamma = 1 / (2 sigma^2)``. From the former ``gamma``
    when it is not ``None``: a positive float as it is, or a rule as ``bandwidth`` reads it.

    Raises
    ------
    ValueError
        for a value of another form, or both ``gamma`` and ``bandwidth``.
    """
    if gamma is not None:
        if bandwidth is not None:
            raise ValueError(f"got both gamma={gamma!r} and bandwidth={bandwidth!r}; gamma is "
                             "the former parameter: give bandwidth only.")
        if isinstance(gamma, str):
            return gamma_from_sigma(resolve_bandwidth(gamma, rows(), random_state=0))
        if isinstance(gamma, Real) and not isinstance(gamma, bool) and np.isfinite(gamma) \
                and gamma > 0:
            return float(gamma)
        raise ValueError(f"gamma must be None, a positive float or a bandwidth rule name, "
                         f"got {gamma!r}.")
    if bandwidth is None:
        return 1.0 / d
    return gamma_from_sigma(resolve_bandwidth(
        bandwidth, None, rule_value=lambda rule: median_heuristic(rows(), rule=rule,
                                                                 random_state=0)))


def kernel_operator(F: np.ndarray, *, kernel="rbf", gamma=None, n_landmarks=None,
                    random_state=None, bandwidth=None) -> tuple[_KernelOperator, float | None]:
    """The clustering kernel of features ``F`` as an operator; returns ``(op, gamma_)``.

    ``kernel="rbf"`` with ``bandwidth`` (``None`` -> ``gamma = 1 / n_features``, or a spec of
    :func:`shiftlearn.kernels.resolve_bandwidth`) or ``gamma`` (a float, or a bandwidth rule;
    :func:`resolve_gamma`); ``n_landmarks`` switches on
    Nyström (``O(n q)`` memory). ``kernel="linear"`` works on ``F`` directly (``O(n d)``).
    A callable ``kernel(A, B)`` forms the full matrix.
    """
    n, d = F.shape
    if kernel == "linear":
        return _KernelOperator(diag=np.einsum("ij,ij->i", F, F), kind="linear", Phi=F), None
    if callable(kernel):
        K = kernel_matrix(F, kernel=kernel)
        return _KernelOperator(diag=np.diag(K).copy(), kind="callable", K=K), None
    if kernel != "rbf":
        raise ValueError(f"Unknown kernel {kernel!r}; use 'rbf', 'linear' or a callable.")
    gamma_ = resolve_gamma(gamma, d, lambda: F, bandwidth)
    sigma = sigma_from_gamma(gamma_)
    if n_landmarks is None:
        K = rbf_kernel(F, sigma=sigma)
        return _KernelOperator(diag=np.ones(n, dtype=K.dtype), kind="rbf", K=K), gamma_
    if not isinstance(n_landmarks, Integral) or n_landmarks < 1:
        raise ValueError(f"n_landmarks must be a positive integer or None, got {n_landmarks!r}.")
    q = int(min(n_landmarks, n))
    ny = nystroem(q, sigma, random_state=random_state).fit(F)
    KB = rbf_kernel(F, ny.components_, sigma=sigma)
    N = np.asarray(ny.normalization_, dtype=np.float64)  # K_qq^{-1/2}, eigenvalues clipped
    M = N.T @ N
    return _KernelOperator(diag=np.ones(n, dtype=KB.dtype), kind="nystroem", Phi=KB, M=M), gamma_


# ---------------------------------------------------------------------------------------------
# cluster statistics
# ---------------------------------------------------------------------------------------------
@dataclass
class _State:
    """A partition with its cluster statistics (one pass over the data to build).

    For two clusters the closed-form assignment only needs ``delta = D[:, 1] - D[:, 0]`` and
    the column sums of ``D``, which cost a single matrix-vector product; ``D`` itself is only
    formed when asked for (LP solver, ``K > 2``, full kernel).
    """

    labels: np.ndarray
    psi: float             # k-means objective
    G: np.ndarray          # (k, k) = W^T K W
    s: np.ndarray          # cluster sizes
    U: np.ndarray | None   # (q, k) = Phi^T W for factored operators
    D: np.ndarray | None = None       # (n, k) distances to the centroids
    delta: np.ndarray | None = None   # (n,) D[:, 1] - D[:, 0] (two clusters)
    colsum: np.ndarray | None = None  # (k,) column sums of D


def _cluster_sums(op, labels, k, prev):
    n = labels.shape[0]
    moved = None if prev is None or prev.U is None or not isinstance(op.Phi, np.ndarray) \
        else np.flatnonzero(prev.labels != labels)
    if moved is not None and moved.size < n // 8:
        U = prev.U.copy()
        rows = op.Phi[moved]
        for j in range(k):
            U[:, j] += rows[labels[moved] == j].sum(axis=0, dtype=np.float64)
            U[:, j] -= rows[prev.labels[moved] == j].sum(axis=0, dtype=np.float64)
        return U
    W = np.zeros((n, k), dtype=op.dtype)
    W[np.arange(n), labels] = 1.0
    return op.phi_t(W)


def _stats(op: _KernelOperator, labels: np.ndarray, k: int, prev: _State | None = None,
           need_D: bool = True) -> _State:
    """Cluster statistics of ``labels``; reuses ``prev``'s cluster sums when few rows moved."""
    n = labels.shape[0]
    s = np.bincount(labels, minlength=k).astype(np.float64)
    if np.any(s == 0):
        raise RuntimeError("A cluster became empty; this cannot happen under the constraints.")
    U = KW = None
    if op.K is not None:
        W = np.zeros((n, k), dtype=op.K.dtype)
        W[np.arange(n), labels] = 1.0
        KW = np.asarray(op.K @ W, dtype=np.float64)
        G = W.T.astype(np.float64) @ KW
    else:
        U = _cluster_sums(op, labels, k, prev)
        MU = op._mul_M(U)
        G = U.T @ MU
        if need_D or k != 2:
            KW = op.phi(MU)
    G = 0.5 * (G + G.T)
    within = np.diag(G)
    psi = float(op.diag.sum() - np.sum(within / s))
    st = _State(labels=labels, psi=psi, G=G, s=s, U=U)
    if KW is not None:
        st.D = op.diag[:, None] - 2.0 * KW / s + within / s**2
        st.colsum = st.D.sum(axis=0)
        if k == 2:
            st.delta = st.D[:, 1] - st.D[:, 0]
    else:   # two clusters, factored kernel: one matrix-vector product
        z = MU[:, 1] / s[1] - MU[:, 0] / s[0]
        Kz = op.phi(z)
        c = within / s**2
        st.delta = -2.0 * Kz + (c[1] - c[0])
        st.colsum = op.diag.sum() - 2.0 * G.sum(axis=0) / s + n * c
    return st


def _mmd2_one_vs_rest(G: np.ndarray, s: np.ndarray) -> np.ndarray:
    """``MMD²_b(C_j, S minus C_j)`` for every cluster ``j`` from ``G = W^T K W``."""
    n = s.sum()
    tot = G.sum()
    row = G.sum(axis=1)
    jj = np.diag(G)
    rest = n - s
    krr = tot - 2 * row + jj
    kjr = row - jj
    return jj / s**2 + krr / rest**2 - 2 * kjr / (s * rest)


# ---------------------------------------------------------------------------------------------
# the Lloyd loop
# ---------------------------------------------------------------------------------------------
@dataclass
class ClusterResult:
    """Outcome of :func:`constrained_kernel_kmeans`.

    ``labels`` is the cluster of each row (two clusters: 1 = validation, 0 = train);
    ``mmd2`` holds ``MMD²_b(C_j, rest)`` per cluster (two clusters: one value, T vs V);
    ``objective_trace`` is ``Psi`` after every iteration (first entry: the initial split) and
    ``cost_trace`` the assignment cost ``sum U D`` at the previous centroids
    (``Psi_t >= cost_t >= Psi_{t+1}``).
    """

    labels: np.ndarray
    objective: float
    mmd2: np.ndarray
    mmd2_init: np.ndarray
    n_iter: int
    converged: bool
    objective_trace: list = field(default_factory=list)
    cost_trace: list = field(default_factory=list)
    mmd2_trace: list = field(default_factory=list)
    ssq_total: float = float("nan")


def _ssq_total(op: _KernelOperator) -> float:
    n = op.diag.shape[0]
    if op.K is not None:
        total = float(op.K.sum(dtype=np.float64))
    else:
        u = op.phi_sum()
        total = float((u.T @ op._mul_M(u)).item())
    return float(op.diag.sum() - total / n)


def _init_labels(codes, k, m, rng):
    n = codes.shape[0]
    keys = rng.random(n)
    if k == 2:
        return _select_closed_form(keys, codes, m, m).astype(np.int64)
    order = np.lexsort((keys, codes))
    labels = np.empty(n, dtype=np.int64)
    labels[order] = (np.arange(n) + rng.integers(k)) % k
    return labels


def _pca_scores(op: _KernelOperator, rng) -> np.ndarray:
    """Scores of the rows on the leading kernel principal component (Lanczos through
    :func:`shiftlearn._linalg.leading_eigh`, O(n q) a step; start vector drawn from ``rng``)."""
    from scipy.sparse.linalg import LinearOperator

    n = op.diag.shape[0]

    def mv(v):
        v = np.asarray(v, dtype=np.float64).reshape(n, -1)
        v = v - v.mean(axis=0)
        out = op.matvec(v)
        return out - out.mean(axis=0)

    A = LinearOperator((n, n), matvec=mv, matmat=mv, dtype=np.float64)
    if n <= 2:                      # ARPACK needs k < n - 1: a 2 x 2 matrix is solved exactly
        _, vec = leading_eigh(A.matmat(np.eye(n)), 1)
    else:
        _, vec = leading_eigh(A, 1, solver="arpack", tol=1e-6, random_state=rng,
                              owner="ClusterSplit(init='pca')")
    return vec[:, 0]


def _lloyd(op, codes, labels, k, bounds, solver, max_iter, tol, ssq):
    need_D = k != 2 or solver == "lp"
    st = _stats(op, labels, k, need_D=need_D)
    trace, costs, mmds = [st.psi], [], [_mmd2_one_vs_rest(st.G, st.s)]
    mmd_init = mmds[0]
    converged = False
    n_iter = 0
    dtype = op.dtype
    eps = (1e-12 if dtype == np.float64 else 1e-7) * max(1.0, float(np.abs(op.diag).sum()))
    for _ in range(max_iter):
        n_iter += 1
        if k == 2 and solver == "closed_form":
            in_val, cost = _assign_two_closed_form(st.delta, st.colsum, codes, *bounds)
            new = in_val.astype(np.int64)
        elif k == 2:
            in_val, cost = assign_two_clusters(st.D, codes, bounds[0], bounds[1], solver=solver)
            new = in_val.astype(np.int64)
        else:
            new, cost = assign_k_clusters(st.D, codes, *bounds)
        costs.append(cost)
        if np.array_equal(new, st.labels) or (k == 2 and np.array_equal(new, 1 - st.labels)):
            converged = True
            break
        nxt = _stats(op, new, k, prev=st, need_D=need_D)
        trace.append(nxt.psi)
        mmds.append(_mmd2_one_vs_rest(nxt.G, nxt.s))
        if nxt.psi > st.psi + eps:   # cannot happen in exact arithmetic: keep the better one
            break
        gain = st.psi - nxt.psi
        st = nxt
        if gain <= eps or gain <= tol * max(ssq - nxt.psi, 0.0):
            converged = True
            break
    return st, n_iter, converged, trace, costs, mmds, mmd_init


def constrained_kernel_kmeans(
    F: np.ndarray,
    codes: np.ndarray,
    *,
    n_clusters: int = 2,
    test_size: float = 0.2,
    tolerance=0.0,
    kernel="rbf",
    gamma=None,
    bandwidth=None,
    n_landmarks: int | None = None,
    solver: str = "closed_form",
    max_iter: int = 100,
    tol: float = 0.0,
    n_init: int = 1,
    random_state=None,
    operator: _KernelOperator | None = None,
    init="random",
) -> ClusterResult:
    """Constrained kernel k-means (the paper's Algorithm 1; ``K`` clusters for K folds).

    Parameters
    ----------
    F : ndarray of shape (n, d)
        Features in which the MMD is measured.
    codes : ndarray of int, shape (n,)
        Constraint group of each row (e.g. class x domain), any integers.
    n_clusters : int, default=2
        2: one train/validation split with ``round(h n_g)`` validation rows per group.
        ``K > 2``: K folds, ``floor(n_g/K)``..``ceil(n_g/K)`` rows of each group per fold.
    test_size : float, default=0.2
        Holdout fraction ``h`` (two clusters only).
    tolerance : float or ndarray of shape (n_groups,), default=0
        Soft-constraint tolerance ``tau`` (Eq. 17), per group in ``np.unique(codes)`` order.
    kernel, gamma, bandwidth, n_landmarks
        See :func:`kernel_operator`.
    solver : {"closed_form", "lp"}
        Assignment for two clusters (``K > 2`` always uses the LP).
    max_iter, n_init : int
        Iteration cap; number of random feasible starts (the lowest ``Psi`` is kept).
    tol : float, default=0
        Also stop when one iteration improves the separation ``SSq(S) - Psi`` (for one split
        ``n h (1-h) MMD²``) by less than ``tol`` times its value. 0: run to a fixed point.
    random_state : int, Generator or None
        Seeds the initial splits and the Nyström landmarks.
    operator : optional
        A precomputed :func:`kernel_operator` (skips building the kernel).
    init : {"random", "pca"} or ndarray of int, shape (n,), default="random"
        ``"random"``: a random feasible stratified split (the paper: "random
        initialisations"). ``"pca"`` (two clusters; not in the paper): the first start puts
        the ``m_g`` rows of each group with the lowest score on the leading kernel principal
        component in validation, further starts are random. Lloyd's step counts each row in
        its own centroid, which makes small clusters sticky (a random start can be a fixed
        point when ``h n`` is a few hundred rows in high dimension); a PCA start avoids it.
        An array gives the initial labels (``n_init`` must be 1).

    Returns
    -------
    ClusterResult

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> F = np.r_[rng.normal(size=(50, 2)), rng.normal(size=(50, 2)) + 3]
    >>> res = constrained_kernel_kmeans(F, np.zeros(100, int), test_size=0.5, random_state=0)
    >>> int(res.labels.sum()), bool(res.mmd2[0] > res.mmd2_init[0])
    (50, True)
    """
    if not is_dask(F):          # a Dask F comes with its operator (ClusterSplit): never gathered
        F = np.asarray(F)
    if F.ndim != 2:
        raise ValueError(f"F must be 2-D, got shape {F.shape}.")
    n = F.shape[0]
    codes = np.asarray(codes)
    if codes.shape != (n,):
        raise ValueError(f"codes must have shape ({n},), got {codes.shape}.")
    _, codes = np.unique(codes, return_inverse=True)
    codes = codes.astype(np.int64)
    sizes = np.bincount(codes)
    if not isinstance(n_clusters, Integral) or n_clusters < 2:
        raise ValueError(f"n_clusters must be an integer >= 2, got {n_clusters!r}.")
    if n_clusters > n:
        raise ValueError(f"n_clusters={n_clusters} exceeds the number of rows ({n}).")
    if not isinstance(n_init, Integral) or n_init < 1:
        raise ValueError(f"n_init must be a positive integer, got {n_init!r}.")
    if not isinstance(max_iter, Integral) or max_iter < 1:
        raise ValueError(f"max_iter must be a positive integer, got {max_iter!r}.")
    if solver not in SOLVERS:
        raise ValueError(f"solver must be one of {SOLVERS}, got {solver!r}.")
    tau = np.broadcast_to(np.asarray(tolerance, dtype=np.float64), sizes.shape)
    if n_clusters == 2:
        if not (isinstance(test_size, Real) and 0 < test_size < 1):
            raise ValueError(f"test_size must be a float in (0, 1), got {test_size!r}.")
        m, lo, hi = group_bounds(sizes, test_size, tau)
        if m.sum() == 0:
            raise ValueError(f"test_size={test_size} puts no row in validation: every group "
                             "has round(h * n_g) = 0.")
        if m.sum() == n:
            raise ValueError(f"test_size={test_size} puts every row in validation.")
        if np.any((m == 0) & (sizes > 0)):
            warnings.warn(f"{int(np.sum(m == 0))} constraint group(s) have round(h * n_g) = 0 "
                          "rows and go entirely to the training side.", UserWarning, stacklevel=2)
        bounds = (lo, hi)
    else:
        K = n_clusters
        lo = np.floor(sizes * (1 - tau) / K).astype(np.int64)
        hi = np.ceil(sizes * (1 + tau) / K).astype(np.int64)
        t0 = float(np.max(tau)) if tau.size else 0.0
        bounds = (lo, hi, int(np.floor(n * (1 - t0) / K)), int(np.ceil(n * (1 + t0) / K)))
        m = None
    rng = np.random.default_rng(random_state)
    if operator is None:
        operator, _ = kernel_operator(F, kernel=kernel, gamma=gamma, n_landmarks=n_landmarks,
                                      random_state=rng, bandwidth=bandwidth)
    if not (isinstance(tol, Real) and tol >= 0):
        raise ValueError(f"tol must be a float >= 0, got {tol!r}.")
    ssq = _ssq_total(operator)
    best = None
    if isinstance(init, str):
        if init not in ("random", "pca"):
            raise ValueError(f"init must be 'random', 'pca' or an array of labels, got {init!r}.")
        if init == "pca" and n_clusters != 2:
            raise ValueError("init='pca' is for one split (two clusters); use 'random'.")
    elif n_init != 1:
        raise ValueError("An init array and n_init > 1 are exclusive.")
    for start in range(n_init):
        if not isinstance(init, str):
            labels0 = np.asarray(init, dtype=np.int64)
            if labels0.shape != (n,) or labels0.min() < 0 or labels0.max() >= n_clusters:
                raise ValueError(f"init must hold {n} labels in 0..{n_clusters - 1}.")
        elif init == "pca" and start == 0:
            labels0 = _select_closed_form(_pca_scores(operator, rng), codes, m, m).astype(
                np.int64)
        else:
            labels0 = _init_labels(codes, n_clusters, m, rng)
        out = _lloyd(operator, codes, labels0, n_clusters, bounds, solver, max_iter, tol, ssq)
        if best is None or out[0].psi < best[0].psi:
            best = out
    st, n_iter, converged, trace, costs, mmds, mmd_init = best
    labels, psi = st.labels, st.psi
    mmd = _mmd2_one_vs_rest(st.G, st.s)
    if n_clusters == 2:
        mmd, mmd_init, mmds = mmd[:1], mmd_init[:1], [v[:1] for v in mmds]
    return ClusterResult(labels=labels, objective=psi, mmd2=mmd, mmd2_init=mmd_init,
                         n_iter=n_iter, converged=converged, objective_trace=trace,
                         cost_trace=costs, mmd2_trace=mmds, ssq_total=ssq)


# ---------------------------------------------------------------------------------------------
# MMD of any split (for comparing split types in one kernel)
# ---------------------------------------------------------------------------------------------
def split_mmd2(F: np.ndarray, train: np.ndarray, test: np.ndarray, *, kernel="rbf",
               gamma=None) -> float:
    """Biased ``MMD²`` between rows ``train`` and ``test`` of ``F`` (``gamma=None``: ``1/d``).

    Lets any splitter (random, leave-one-domain-out, cluster) be scored in the same kernel.

    Examples
    --------
    >>> import numpy as np
    >>> F = np.r_[np.zeros((3, 2)), np.ones((3, 2))]
    >>> round(split_mmd2(F, np.arange(3), np.arange(3, 6), kernel="linear"), 6)
    2.0
    """
    F = np.asarray(F, dtype=np.float64)
    A, B = F[np.asarray(train)], F[np.asarray(test)]
    if kernel == "rbf":
        sigma = sigma_from_gamma(1.0 / F.shape[1] if gamma is None else gamma)
        return mmd2_from_kernels(rbf_kernel(A, sigma=sigma), rbf_kernel(B, sigma=sigma),
                                 rbf_kernel(A, B, sigma=sigma))
    return mmd2_from_kernels(kernel_matrix(A, kernel=kernel), kernel_matrix(B, kernel=kernel),
                             kernel_matrix(A, B, kernel=kernel))
