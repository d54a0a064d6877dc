"""RF-TCA and RF-SCA solvers on random-feature sufficient statistics (:class:`RFStats`).

Each solver reads only ``2N x 2N`` matrices and short factors from the statistics (see
:mod:`shiftlearn.adaptation._rf_stats` for the scatter formulas) and solves for the leading
eigenvectors only (:func:`shiftlearn._linalg.leading_eigh`, dense or ARPACK; see
:func:`resolve_eigen_solver`).
"""

from __future__ import annotations

import warnings

import numpy as np
from scipy.linalg import cho_factor, eigh
from scipy.sparse.linalg import LinearOperator

from .._linalg import ArpackFailure, add_gram_, leading_eigh, lowrank_inv_sqrt_weights, sym_
from .._stacklevel import user_stacklevel
from ._base import ComponentsClippedWarning, check_n_components
from ._rf_stats import RFStats, rf_stats  # noqa: F401  (rf_stats: used by the doctests)

__all__ = ["resolve_eigen_solver", "rfsca_from_stats", "rfsca_max_components",
           "rftca_from_stats", "rftca_max_components"]


def resolve_eigen_solver(eigen_solver: str, D: int, k: int) -> str:
    """Validate ``eigen_solver``; ``"auto"`` means ``"arpack"`` when ``D >= 800`` and
    ``k <= D / 10`` (few leading pairs of a large pencil), else ``"dense"``. ARPACK cannot
    return ``D - 1`` or more pairs, so those go dense too.

    Examples
    --------
    >>> resolve_eigen_solver("auto", 2000, 30), resolve_eigen_solver("auto", 600, 30)
    ('arpack', 'dense')
    """
    if eigen_solver not in ("auto", "dense", "arpack"):
        raise ValueError("eigen_solver must be 'auto', 'dense' or 'arpack', "
                         f"got {eigen_solver!r}.")
    if eigen_solver == "auto":
        eigen_solver = "arpack" if (D >= 800 and k <= D / 10) else "dense"
    return "dense" if k >= D - 1 else eigen_solver


def _rank_one_pencil(A, mu: float, d: np.ndarray, k: int, solver: str, *, apply_A=None,
                     owner: str = "RF-TCA"):
    """Leading ``k`` pairs of ``A v = lambda (I + mu d d^T) v``, ``V^T (I + mu d d^T) V = I``.

    ``"dense"``: the explicit pencil (``A`` may be overwritten). ``"arpack"``: ARPACK on
    ``T = B^{-1/2} A B^{-1/2}`` as an operator, with the closed-form
    ``B^{-1/2} = I + alpha d d^T`` (:func:`~shiftlearn._linalg.lowrank_inv_sqrt_weights`), and
    ``V = B^{-1/2} Y``; ``apply_A(x)`` replaces ``A @ x`` when ``A`` is not formed
    (``A=None``). If ARPACK fails, the dense solve is used when ``A`` is a matrix; with only
    ``apply_A`` the :class:`~shiftlearn._linalg.ArpackFailure` propagates.
    """
    D = d.shape[0]
    if solver == "dense":
        B = np.eye(D)
        add_gram_(B, d[None, :], mu)
        return leading_eigh(A, k, B, overwrite=True, owner=owner)
    alpha = float(lowrank_inv_sqrt_weights(float(d @ d), mu)[0])
    apply_A = A.__matmul__ if apply_A is None else apply_A

    def half(X):                                    # B^{-1/2} X = X + alpha d (d^T X)
        return X + alpha * np.multiply.outer(d, d @ X)

    op = LinearOperator((D, D), matvec=lambda x: half(apply_A(half(np.ravel(x)))),
                        dtype=np.float64)
    try:
        w, Y = leading_eigh(op, k, solver="arpack", owner=owner)
    except ArpackFailure:
        if A is None:
            raise
        return _rank_one_pencil(A, mu, d, k, "dense", owner=owner)
    return w, half(Y)


def _rftca_coefficients_cholesky(stats: RFStats, k: int, mu: float, d: np.ndarray,
                                 rank_tol: float):
    """``penalty="coefficients"`` without the full eigendecomposition of ``S = Z^T Z``.

    Any factor ``G`` with ``G G^T = S`` gives the same problem (``V = G a``, penalty
    ``||a||^2``); here ``G = U^T`` from the Cholesky factor of ``S + rho I`` with
    ``rho = rank_tol * max diag(S)`` (directions with ``S``-eigenvalue far below ``rho`` carry
    no kernel mass and are penalised by ``1 / rho`` instead of being dropped). The reduced
    scatter ``G^T C G = U S U^T - g g^T / n`` (``g = U s``) is applied as an operator, two
    triangular products and one product with ``S`` per vector, inside ARPACK.
    Returns ``None`` (callers use the eigendecomposition) if the factor or ARPACK fails.
    """
    D, n = stats.dim, stats.n_samples
    S = sym_(stats.total_moment())
    Sr = S.copy()
    Sr.flat[:: D + 1] += rank_tol * max(float(np.max(np.diag(S))), 1e-300)
    try:
        U, _ = cho_factor(Sr.T, lower=False, overwrite_a=True, check_finite=False)
    except np.linalg.LinAlgError:
        return None
    Ut = np.triu(U)                                  # explicit factor for BLAS products
    g = Ut @ (stats.domain_sums.sum(axis=0) / np.sqrt(max(n, 1)))

    def apply_A(x):                                  # (U S U^T - g g^T) x
        return Ut @ (S @ (Ut.T @ x)) - g * (g @ x)

    try:
        w, V = _rank_one_pencil(None, mu, Ut @ d, k, "arpack", apply_A=apply_A)
    except ArpackFailure:
        return None
    return w, Ut.T @ V


def _check_k(n_components, limit: int, why: str) -> int:
    return check_n_components(n_components, limit, why)


def rftca_max_components(stats: RFStats, n_columns: int | None = None) -> tuple[int, str]:
    """The most RF-TCA components the statistics allow, and why: the centred total scatter of
    ``n`` rows in ``D = 2 N`` features has rank ``<= min(D, n - 1)`` (``n_columns``: ``D`` when
    the statistics are of coordinates in a smaller basis, as ``RFTCA.fit`` uses for
    ``n < D``)."""
    D, n = n_columns or stats.dim, stats.n_samples
    limit = min(D, n - 1)
    return limit, (f"the centred total scatter of {n} rows in 2 * n_features = {D} random "
                   f"features has rank <= {limit}")


def rfsca_max_components(stats: RFStats, beta: float, supervised: bool = True,
                         n_columns: int | None = None) -> tuple[int, str]:
    """The most RF-SCA components the statistics allow, and why (``min(D, n - 1)``; at
    ``beta = 1`` with labels, ``n_classes - 1``; ``n_columns`` as in
    :func:`rftca_max_components`)."""
    D, n = n_columns or stats.dim, stats.n_samples
    limit = min(D, n - 1)
    why = f"the total scatter of {n} rows in 2 * n_features = {D} features has rank <= {limit}"
    if supervised and beta == 1.0 and stats.n_labeled > 0 and stats.classes.size >= 2:
        C_ = stats.classes.size
        limit = min(limit, C_ - 1)
        why = f"at beta=1 the numerator has rank <= n_classes - 1 = {C_ - 1}"
    return limit, why


#: eigenvalues at or below this fraction of the largest are numerically zero (their
#: eigenvectors are arbitrary directions of a null space)
NULL_RTOL = 1e-10
#: ... and so are eigenvalues at or below this fraction of ``scale``, the size the largest
#: eigenvalue has when the rows vary (``n`` for RF-TCA, ``1`` for RF-SCA): rounding in the
#: summed statistics is ``~1e-16 scale``, so constant rows no longer pass as variance
NULL_ATOL = 1e-12


def _check_spectrum(w: np.ndarray, V: np.ndarray, k: int, what: str,
                    rank_deficient: str = "raise", scale: float = 0.0
                    ) -> tuple[np.ndarray, np.ndarray]:
    """``(w, V)``, or, when trailing eigenvalues are numerically zero (``<= NULL_RTOL`` times
    the largest or ``<= NULL_ATOL * scale``: duplicated or nearly duplicated points), an error
    (``"raise"``) or the non-zero leading part with a :class:`ComponentsClippedWarning`
    (``"clip"``, what the estimators do so that default ``n_components`` works on small data).
    No non-zero eigenvalue at all is always an error."""
    top = max(float(w[0]), 0.0)
    bad = np.nonzero(w <= max(NULL_RTOL * top, NULL_ATOL * scale, 1e-300))[0]
    if top > 0 and not bad.size:
        return V, w
    first = int(bad[0]) if bad.size else 0
    if first == 0:
        raise ValueError(f"Every eigenvalue of {what} is numerically zero: the rows carry no "
                         "variance (or no class separation, at beta=1) in the random-feature "
                         "space, e.g. constant or duplicated rows, or a bandwidth far from the "
                         "scale of the data; check X and the bandwidth.")
    if rank_deficient == "clip":
        warnings.warn(f"{what}: only {first} of the n_components={k} leading eigenvalues are "
                      f"numerically non-zero (above {NULL_RTOL:g} times the largest: duplicated "
                      "or nearly duplicated points); using n_components="
                      f"{first} (see n_components_). Pass a smaller n_components to silence "
                      "this warning.", ComponentsClippedWarning, stacklevel=user_stacklevel())
        return V[:, :first], w[:first]
    raise ValueError(f"Only {first} of the n_components={k} leading eigenvalues of {what} "
                     "are numerically non-zero (rank-deficient problem: duplicated or too "
                     "few points, or too many components); lower n_components.")


def rftca_from_stats(stats: RFStats, n_components: int = 30, mu: float = 1.0, *,
                     penalty: str = "features", eigen_solver: str = "auto",
                     rank_tol: float = 1e-10, rank_deficient: str = "raise"
                     ) -> tuple[np.ndarray, np.ndarray]:
    """RF-TCA projection from sufficient statistics (a ``2N x 2N`` eigenproblem).

    Pan et al.'s TCA with the kernel ``K = Z Z^T`` of the random features,
    ``min tr(pen) + mu ||V^T d||^2  s.t.  V^T C V = I``, with ``C = Sigma H Sigma^T`` and
    ``d = Sigma l`` (source mean minus target mean of the features).

    Parameters
    ----------
    stats : RFStats
    n_components : int
    mu : float
        Weight of the MMD term (Pan et al.); the RF-TCA paper's ``gamma`` is ``1 / mu``.
    penalty : {"features", "coefficients"}
        ``"features"`` (default): the RF-TCA paper's Algorithm 1, penalty ``tr(V^T V)`` on the
        ``2N x m`` projection; leading eigenvectors of ``C v = lam (I + mu d d^T) v``. As
        ``N`` grows it tends to the paper's R-TCA (penalty ``tr(W^T K W)``), which equals TCA
        up to a rescaling of ``mu`` (the paper's Lemma 2).
        ``"coefficients"``: Pan's penalty ``tr(W^T W)`` on the ``n`` kernel coefficients;
        this is exact TCA with the random-feature kernel, so it tends to exact TCA with the
        same ``mu`` as ``N`` grows. With the ARPACK solver it runs on a Cholesky factor of
        ``S + rho I`` (``S = Z^T Z``, ``rho = rank_tol * max diag(S)``) and block Krylov,
        with the dense solver in the eigenbasis of ``S`` (one full ``2N x 2N``
        eigendecomposition, directions with eigenvalue below ``rank_tol * max`` dropped);
        the two agree to the solver tolerance (tested).
    eigen_solver : {"auto", "dense", "arpack"}
        See :func:`resolve_eigen_solver`.
    rank_tol : float
        ``"coefficients"``: relative level below which directions of ``S`` carry no kernel
        mass (dropped by the dense solver, ridge ``rho`` of the ARPACK one).
    rank_deficient : {"raise", "clip"}
        When some of the ``n_components`` leading eigenvalues are numerically zero
        (``<= 1e-10`` times the largest): a ``ValueError``, or return only the non-zero ones
        with a :class:`~shiftlearn.adaptation._base.ComponentsClippedWarning` (the estimators'
        choice).

    Returns
    -------
    V : ndarray of shape (2N, n_components)
        Projection; a point maps to ``V^T z(x)``. Normalised as the solver returns it,
        ``V^T B V = I`` with ``B`` the right-hand side (the exact TCA's default ``"eigh"``
        scaling); multiply column ``j`` by ``eigenvalues[j] ** -0.5`` for the TCA constraint
        ``V^T C V = I``.
    eigenvalues : ndarray of shape (n_components,)
        Generalised eigenvalues (decreasing), Pan's form.

    Examples
    --------
    >>> import numpy as np
    >>> from shiftlearn.kernels import rff_weights
    >>> rng = np.random.default_rng(0)
    >>> X = np.r_[rng.normal(size=(50, 3)), rng.normal(size=(50, 3)) + 1]
    >>> dom = np.r_[np.ones(50), -np.ones(50)].astype(int)
    >>> st = rf_stats(X, sample_domain=dom, omega=rff_weights(3, 40, 1.5, random_state=0))
    >>> V, lam = rftca_from_stats(st, n_components=5, mu=1.0)
    >>> V.shape, bool(np.all(np.diff(lam) <= 0))
    ((80, 5), True)
    """
    if not (np.isfinite(mu) and mu >= 0):
        raise ValueError(f"mu must be a non-negative finite number, got {mu}.")
    D, n = stats.dim, stats.n_samples
    k = _check_k(n_components, *rftca_max_components(stats))
    d = stats.mmd_vector()
    if penalty == "features":
        w, V = _rank_one_pencil(stats.total_scatter(), mu, d, k,
                                resolve_eigen_solver(eigen_solver, D, k))
    elif penalty == "coefficients":
        out = None
        if resolve_eigen_solver(eigen_solver, D, k) == "arpack":
            out = _rftca_coefficients_cholesky(stats, k, mu, d, rank_tol)
        if out is not None:
            w, V = out
            return _check_spectrum(w, V, k, "the RF-TCA problem", rank_deficient,
                                   scale=float(n) ** 2)
        s2, U = eigh(sym_(stats.total_moment()), overwrite_a=True, check_finite=False)
        keep = s2 > rank_tol * max(s2[-1], 1e-300)
        if keep.sum() < k:
            if keep.sum() < 2:
                raise ValueError(f"The random-feature kernel has numerical rank "
                                 f"{int(keep.sum())}: the rows carry no variance after "
                                 "centring (constant or duplicated rows?); check X and the "
                                 "bandwidth.")
            if rank_deficient != "clip":
                raise ValueError(f"n_components={k} exceeds the numerical rank "
                                 f"{int(keep.sum())} of the random-feature kernel; lower "
                                 "n_components.")
            warnings.warn(f"the RF-TCA problem: n_components={k} exceeds the numerical rank "
                          f"{int(keep.sum())} of the random-feature kernel (duplicated or nearly "
                          f"duplicated points); using n_components={int(keep.sum()) - 1} (see "
                          "n_components_). Pass a smaller n_components to silence this "
                          "warning.", ComponentsClippedWarning, stacklevel=user_stacklevel())
            k = int(keep.sum()) - 1          # the centring removes one more direction
        G = U[:, keep] * np.sqrt(s2[keep])          # V = G a  <=>  W = (orthonormal basis) a
        # G^T C G with C = S - s s^T / n and S = U diag(s2) U^T: diag(s2^2) - g g^T / n, so no
        # D^3 product is needed (g = G^T s).
        g = (G.T @ stats.domain_sums.sum(axis=0)) / np.sqrt(max(n, 1))
        Ch = add_gram_(np.diag(s2[keep] ** 2), g[None, :], -1.0)
        dh = G.T @ d
        w, A = _rank_one_pencil(Ch, mu, dh, k, resolve_eigen_solver(eigen_solver, Ch.shape[0], k))
        V = G @ A
    else:
        raise ValueError(f"penalty must be 'features' or 'coefficients', got {penalty!r}.")
    # eigenvalues are at most trace(C) <= n (features of unit norm), or ||S||^2 <= n^2
    return _check_spectrum(w, V, k, "the RF-TCA problem", rank_deficient,
                           scale=float(n) if penalty == "features" else float(n) ** 2)


def rfsca_from_stats(stats: RFStats, n_components: int = 10, beta: float = 0.5,
                     delta: float = 1.0, eps: float = 1e-5, *, domains: str = "ids",
                     supervised: bool = True, class_scatter_normalization: str = "n_s",
                     eigen_solver: str = "auto", rank_deficient: str = "raise"
                     ) -> tuple[np.ndarray, np.ndarray]:
    """Random-feature Scatter Component Analysis from sufficient statistics.

    The kernel SCA problem (Ghifary et al., eq. 20 with footnote 1) with ``K = Z Z^T`` written
    in the feature space: for a projection ``V`` (``2N x k``, ``V = Z_c^T B``),

    ``max tr(V^T ((1 - beta) C/n + beta S_b) V)  s.t.  V^T (delta S_d + S_w + (1 + eps) I) V = I``

    with ``C/n`` the total covariance, ``S_b``/``S_w`` the between/within-class scatters of the
    labeled rows divided by ``n_s`` (the exact-scatter normalisation of ``P``, ``Q``), and
    ``S_d`` the domain scatter. The ``I`` term is the kernel SCA's ``B^T K B`` scale control.
    ``eps``: the kernel version's ``eps ||B||^2`` (``= eps V^T C^+ V``) has no cheap
    feature-space form; it is applied as ``eps ||V||^2`` instead. Both vanish as ``eps -> 0``
    and the problem is already definite thanks to ``I``, so the two agree for small ``eps``.

    Parameters
    ----------
    stats : RFStats
    n_components : int
    beta : float in [0, 1]
        Between-class vs total scatter trade-off (``beta = 0``: unsupervised SCA;
        ``beta = delta = 0`` without labels: kernel PCA; ``beta = 1, delta = 0``: kernel Fisher
        discriminant).
    delta : float >= 0
        Weight of the domain scatter.
    eps : float >= 0
    domains : {"ids", "sides"}
        Domains of the domain scatter: one per ``sample_domain`` id (as the exact SCA), or
        sources vs targets.
    supervised : bool
        ``False`` ignores the labels (``S_b = S_w = 0``; with ``beta = 0`` the paper's uSCA).
        With labels and ``beta = 0`` the within-class term stays in the denominator, as in the
        exact :class:`~shiftlearn.adaptation.SCA`.
    class_scatter_normalization : {"n_s", "none"}
        Divide the class scatters by the number of labeled rows (default), or not.
    eigen_solver : {"auto", "dense", "arpack"}
        See :func:`resolve_eigen_solver`.
    rank_deficient : {"raise", "clip"}
        As in :func:`rftca_from_stats`.

    Returns
    -------
    V : ndarray of shape (2N, n_components)
        Normalised to ``V^T M V = I`` (``M`` the denominator). A point maps to
        ``(z(x) - m_bar)^T V Lambda^{-1/2}`` (see :class:`RFSCA`).
    eigenvalues : ndarray of shape (n_components,)
        Leading generalised eigenvalues, decreasing.

    Examples
    --------
    >>> import numpy as np
    >>> from shiftlearn.kernels import rff_weights
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(60, 3)); y = np.r_[np.arange(30) % 3, -np.ones(30, int)]
    >>> dom = np.r_[np.ones(30), -np.ones(30)].astype(int)
    >>> st = rf_stats(X, y, dom, omega=rff_weights(3, 30, 1.5, random_state=0))
    >>> V, lam = rfsca_from_stats(st, n_components=2, beta=0.5)
    >>> V.shape
    (60, 2)
    """
    if not (0.0 <= beta <= 1.0):
        raise ValueError(f"beta must lie in [0, 1], got {beta}.")
    if not (np.isfinite(delta) and delta >= 0):
        raise ValueError(f"delta must be a non-negative finite number, got {delta}.")
    if not (np.isfinite(eps) and eps >= 0):
        raise ValueError(f"eps must be a non-negative finite number, got {eps}.")
    if domains not in ("ids", "sides"):
        raise ValueError(f"domains must be 'ids' or 'sides', got {domains!r}.")
    if class_scatter_normalization not in ("n_s", "none"):
        raise ValueError("class_scatter_normalization must be 'n_s' or 'none', "
                         f"got {class_scatter_normalization!r}.")
    if not supervised:
        beta = 0.0
    D, n = stats.dim, stats.n_samples
    if beta > 0:
        if stats.n_labeled == 0:
            raise ValueError("beta > 0 needs labeled rows (y != -1); use beta=0 for "
                             "unsupervised SCA.")
        if stats.classes.size < 2:
            raise ValueError(f"Only one class ({stats.classes.tolist()}) among the labeled "
                             "rows: the between-class scatter needs at least 2 classes.")
    k = _check_k(n_components, *rfsca_max_components(stats, beta, supervised))
    # A = (1 - beta) C / n + beta S_b and M = (1 + eps) I + S_w + delta S_d, each built in
    # one D x D buffer with low-rank in-place updates by the factors of the scatters
    # (RFStats.class_factors / domain_means), never forming the scatters themselves.
    A = stats.total_scatter()
    A *= (1.0 - beta) / n
    if supervised and stats.n_labeled > 0:
        ns = stats.n_labeled
        norm = ns if class_scatter_normalization == "none" else 1.0
        Fb, Fw = stats.class_factors()
        if beta > 0:
            add_gram_(A, Fb, beta * norm / ns)
        M = stats.moment_labeled * (norm / ns)
        terms = [(Fw, -norm / ns)]
    else:
        M = np.zeros((D, D))
        terms = []
    M.flat[:: D + 1] += 1.0 + eps
    if delta > 0:
        means = stats.domain_means(domains)
        terms.append((means - means.mean(axis=0), delta / max(means.shape[0], 1)))
    if terms:          # both low-rank terms of M in one pass over it
        add_gram_(M, np.vstack([F for F, _ in terms]),
                   np.concatenate([np.full(F.shape[0], a) for F, a in terms]))
    w, V = leading_eigh(A, k, M, solver=resolve_eigen_solver(eigen_solver, D, k),
                        overwrite=True, owner="RF-SCA")
    # eigenvalues are at most trace(A) <= trace(S) / n = 1 (features of unit norm)
    return _check_spectrum(w, V, k, "the RF-SCA problem", rank_deficient, scale=1.0)
