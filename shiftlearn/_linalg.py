"""Leading eigenpairs of symmetric(-definite) problems: the library's one home for them.

Every subspace adapter (TCA, SCA, RF-TCA, RF-SCA) ends in the ``k`` leading eigenpairs of a
symmetric problem ``A v = lambda B v``. :func:`leading_eigh` is the one function that computes
them, scipy underneath:

* ``solver="dense"``: ``scipy.linalg.eigh(A, B, subset_by_index=[n-k, n-1])`` (LAPACK; only the
  wanted pairs are computed), ``O(n^3)``, exact to working precision (residual
  ``||A v - lambda B v|| <~ n eps ||A||``);
* ``solver="arpack"``: ``scipy.sparse.linalg.eigsh`` (implicitly restarted Lanczos, ARPACK)
  on ``A`` given as a matrix or a ``LinearOperator``; with ``B`` (a matrix) on the operator
  ``L^{-1} A L^{-T}`` (``B = L L^T``, Cholesky; two triangular solves per product, no inverse
  formed) and ``v = L^{-T} y``. ARPACK stops when every Ritz pair has ``||A y - theta y|| <=
  tol |theta|`` (:data:`ARPACK_TOL`, ``1e-10``), so eigenvalues carry a relative error of
  about ``tol`` and eigenvectors an angle of about ``tol |lambda_1| / gap``.

Callers that know a closed form for ``B^{-1/2}`` (TCA's ``I + mu u u^T``, SCA's ``L S L^T``)
reduce the problem themselves and pass the reduced operator. Both solvers symmetrise ``A`` and
``B`` first (``(A + A^T)/2``), so round-off asymmetry of products such as ``K H K`` does no
harm, and both return the pairs leading first with ``V^T B V = I``.

ARPACK runs on one BLAS thread up to ``n = ARPACK_SINGLE_THREAD_MAX_N``; a failure of ARPACK
raises :class:`ArpackFailure` (a ``ValueError``) unless ``A`` is a matrix, where the dense
solver is used instead; a ``B`` that is not numerically positive definite gets, once, the ridge
``1e-10 * trace(B) / n`` before a ``ValueError`` is raised. Design notes: ``docs/dev/core.md``.
"""

from __future__ import annotations

from contextlib import nullcontext
from numbers import Integral

import numpy as np
import scipy.linalg
from scipy.sparse.linalg import ArpackError, LinearOperator, eigsh

__all__ = ["ARPACK_SINGLE_THREAD_MAX_N", "ARPACK_TOL", "ArpackFailure", "NOT_POSITIVE_DEFINITE",
           "add_gram_", "leading_eigh", "lowrank_inv_sqrt_weights", "sym", "sym_", "take_rows"]

#: ARPACK's stopping tolerance: every returned pair has ``||A y - theta y|| <= tol |theta|``.
ARPACK_TOL = 1e-10

NOT_POSITIVE_DEFINITE = (
    "The constraint matrix M is not positive definite even with a ridge (a singular "
    "denominator: constant or duplicated rows, or a linear kernel with fewer features than "
    "rows); increase eps.")

#: Up to this size ARPACK's iteration runs on one BLAS thread (see the module docstring).
ARPACK_SINGLE_THREAD_MAX_N = 4096
_BLAS: list = []

_BLOCK = 256   # row block of the in-place D x D updates (small temporaries, cache friendly)


class ArpackFailure(ValueError):
    """The iterative eigensolver (ARPACK) failed; the message names the ways out."""


def take_rows(Z: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """``Z[mask]`` without a copy when the selected rows are one contiguous block (the usual
    layout: sources then targets), so the big products and fits run on views; a copy of the
    rows otherwise. Cost: ``O(n)`` to find the block."""
    idx = np.flatnonzero(mask)
    if idx.size == Z.shape[0]:
        return Z
    if idx.size and idx[-1] - idx[0] + 1 == idx.size:
        return Z[idx[0]: idx[-1] + 1]
    return Z[idx]


def sym(A: np.ndarray) -> np.ndarray:
    """``(A + A^T) / 2`` (a new array)."""
    return (A + A.T) * 0.5


def sym_(A: np.ndarray) -> np.ndarray:
    """Symmetrise ``A`` in place, ``A <- (A + A^T) / 2``, block by block (no ``n x n`` copy).

    Examples
    --------
    >>> import numpy as np
    >>> sym_(np.array([[1.0, 2.0], [0.0, 1.0]])).tolist()
    [[1.0, 1.0], [1.0, 1.0]]
    """
    D = A.shape[0]
    for i in range(0, D, _BLOCK):
        bi = slice(i, min(i + _BLOCK, D))
        for j in range(i, D, _BLOCK):
            bj = slice(j, min(j + _BLOCK, D))
            avg = (A[bi, bj] + A[bj, bi].T) * 0.5
            A[bi, bj] = avg
            A[bj, bi] = avg.T
    return A


def add_gram_(A: np.ndarray, F: np.ndarray, alpha) -> np.ndarray:
    """``A += F^T diag(alpha) F`` in place for a short ``F`` (``r x D``, ``r << D``), by row
    blocks: one pass over ``A``. ``alpha`` is a scalar or one weight per row of ``F`` (several
    low-rank terms, stacked, cost one pass).

    Examples
    --------
    >>> import numpy as np
    >>> add_gram_(np.eye(2), np.array([[1.0, 2.0]]), 3.0).tolist()
    [[4.0, 6.0], [6.0, 13.0]]
    """
    alpha = np.broadcast_to(np.asarray(alpha, dtype=np.float64), (F.shape[0],))
    if F.shape[0] == 0 or not np.any(alpha):
        return A
    Fw = F * alpha[:, None]
    for i in range(0, A.shape[0], _BLOCK):
        bi = slice(i, min(i + _BLOCK, A.shape[0]))
        A[bi] += Fw[:, bi].T @ F
    return A


def lowrank_inv_sqrt_weights(sq_norms, weight: float) -> np.ndarray:
    """Closed-form inverse square root of an identity plus a low-rank term.

    For ``F`` with mutually orthogonal columns of squared norms ``sq_norms``,
    ``(I + weight F F^T)^{-1/2} = I + F diag(a) F^T`` with
    ``a = ((1 + weight sq)^{-1/2} - 1) / sq`` (``a = 0`` where ``sq = 0``). TCA's rank-one
    denominator ``I + mu u u^T`` and SCA's ``I + delta W W^T`` (after an SVD of ``W``) use it.

    Examples
    --------
    >>> import numpy as np
    >>> u = np.array([[3.0], [4.0]])
    >>> S = np.eye(2) + u @ np.diag(lowrank_inv_sqrt_weights([25.0], 2.0)) @ u.T
    >>> bool(np.allclose(S @ S @ (np.eye(2) + 2.0 * u @ u.T), np.eye(2)))
    True
    """
    sq = np.atleast_1d(np.asarray(sq_norms, dtype=np.float64))
    safe = np.where(sq > 0, sq, 1.0)
    return np.where(sq > 0, (1.0 / np.sqrt(1.0 + weight * sq) - 1.0) / safe, 0.0)


def _arpack_failure(owner: str, exc: Exception) -> ArpackFailure:
    return ArpackFailure(
        f"{owner}: the iterative eigensolver (ARPACK) failed ({exc}); the problem is (nearly) "
        "degenerate, e.g. duplicated rows or fewer distinct rows than components. Use "
        "eigen_solver='dense' or a smaller n_components.")


def _dense(A: np.ndarray, B: np.ndarray | None, k: int) -> tuple[np.ndarray, np.ndarray]:
    """``eigh`` on symmetrised matrices (both may be overwritten), leading first."""
    n = A.shape[0]
    idx = [n - k, n - 1]
    if B is None:
        w, V = scipy.linalg.eigh(A, subset_by_index=idx, overwrite_a=True, check_finite=False)
    else:
        try:
            w, V = scipy.linalg.eigh(A, B, subset_by_index=idx, overwrite_a=True,
                                     overwrite_b=False, check_finite=False)
        except np.linalg.LinAlgError:
            # LAPACK stops at the Cholesky factor of B, before touching A
            scale = float(np.trace(B)) / n
            if not scale > 1e-300:          # B = 0 (constant rows and no ridge): nothing helps
                raise ValueError(NOT_POSITIVE_DEFINITE) from None
            B.flat[:: n + 1] += 1e-10 * scale
            try:
                w, V = scipy.linalg.eigh(A, B, subset_by_index=idx, check_finite=False)
            except np.linalg.LinAlgError as exc:
                raise ValueError(NOT_POSITIVE_DEFINITE) from exc
    if not (np.all(np.isfinite(w)) and np.all(np.isfinite(V))):
        raise ValueError(NOT_POSITIVE_DEFINITE)
    return w[::-1].copy(), V[:, ::-1].copy()


def _blas_single_thread(n: int):
    """A context that limits BLAS to one thread when ``n <= ARPACK_SINGLE_THREAD_MAX_N``."""
    if n > ARPACK_SINGLE_THREAD_MAX_N:
        return nullcontext()
    if not _BLAS:                           # inspecting the loaded libraries costs ~ms: once
        from threadpoolctl import ThreadpoolController

        _BLAS.append(ThreadpoolController())
    return _BLAS[0].limit(limits=1, user_api="blas")


def _eigsh(op, n: int, k: int, tol: float, random_state, owner: str):
    v0 = np.random.default_rng(random_state).standard_normal(n)
    try:
        with _blas_single_thread(n):
            w, V = eigsh(op, k=k, which="LA", tol=tol, v0=v0)
    except ArpackError as exc:          # ArpackNoConvergence included
        raise _arpack_failure(owner, exc) from exc
    order = np.argsort(w)[::-1]
    return w[order], V[:, order]


def leading_eigh(A, k: int, B: np.ndarray | None = None, *, solver: str = "dense",
                 eps: float = 0.0, tol: float = ARPACK_TOL, random_state=0,
                 overwrite: bool = False, owner: str = "leading_eigh"
                 ) -> tuple[np.ndarray, np.ndarray]:
    """The ``k`` leading eigenpairs of the symmetric(-definite) problem ``A v = lambda B v``.

    Parameters
    ----------
    A : ndarray of shape (n, n) or scipy.sparse.linalg.LinearOperator
        Symmetric matrix (symmetrised here), or an operator (``solver="arpack"`` only; it must
        be symmetric, and ``B`` must then be ``None``).
    k : int
        Number of leading pairs, ``1 <= k <= n``. ARPACK cannot return ``n - 1`` or more pairs:
        a matrix ``A`` then goes to the dense solver, an operator is an error.
    B : ndarray of shape (n, n) or None
        Symmetric positive definite right-hand side (symmetrised here); ``None`` = identity.
    solver : {"dense", "arpack"}
        See the module docstring.
    eps : float, default=0.0
        Ridge added to ``B``'s diagonal (needs ``B``).
    tol : float, default=ARPACK_TOL
        ARPACK's relative tolerance (ignored by the dense solver).
    random_state : int, default=0
        Seed of ARPACK's start vector: results are deterministic.
    overwrite : bool, default=False
        Allow ``A`` and ``B`` to be modified in place (saves ``n x n`` copies).
    owner : str
        Who asks, for error messages (``"TCA"``, ``"SCA"``, ...).

    Returns
    -------
    eigenvalues : ndarray of shape (k,)
        Descending.
    V : ndarray of shape (n, k)
        Column ``j`` pairs with ``eigenvalues[j]``; ``V^T (B + eps I) V = I``.

    Examples
    --------
    >>> import numpy as np
    >>> A = np.diag([1.0, 3.0, 2.0, 0.5])
    >>> w, V = leading_eigh(A, 2)
    >>> w.tolist()
    [3.0, 2.0]
    >>> w2, _ = leading_eigh(A, 2, 2.0 * np.eye(4), solver="arpack")
    >>> np.round(w2, 10).tolist()
    [1.5, 1.0]
    """
    if solver not in ("dense", "arpack"):
        raise ValueError(f"solver must be 'dense' or 'arpack', got {solver!r}.")
    is_matrix = isinstance(A, np.ndarray)
    n = A.shape[0]
    if A.shape != (n, n) or (B is not None and np.shape(B) != (n, n)):
        raise ValueError(f"A and B must be square of the same size, got {A.shape} and "
                         f"{None if B is None else np.shape(B)}.")
    if isinstance(k, bool) or not isinstance(k, Integral) or not 1 <= k <= n:
        raise ValueError(f"k must be an integer in [1, {n}], got {k!r}.")
    if not is_matrix and (solver != "arpack" or B is not None or k >= n - 1):
        raise ValueError("An operator A needs solver='arpack', B=None and k < n - 1.")
    if is_matrix:
        A = np.asarray(A, dtype=np.float64)
        A = sym_(A) if overwrite else sym(A)
    if B is not None:
        B = np.asarray(B, dtype=np.float64)
        B = sym_(B) if overwrite else sym(B)
        if eps:
            B.flat[:: n + 1] += eps
    elif eps:
        raise ValueError("eps is a ridge on B; give B.")
    if solver == "dense" or k >= n - 1:
        return _dense(A, B, k)
    try:
        if B is None:
            return _eigsh(A, n, k, tol, random_state, owner)
        try:
            L = scipy.linalg.cholesky(B, lower=True, check_finite=False)
        except np.linalg.LinAlgError:
            return _dense(A, B, k)          # the dense solver adds the stated ridge

        def matvec(x):
            y = scipy.linalg.solve_triangular(L, np.ravel(x), lower=True, trans="T",
                                              check_finite=False)
            return scipy.linalg.solve_triangular(L, A @ y, lower=True, check_finite=False)

        op = LinearOperator((n, n), matvec=matvec, dtype=np.float64)
        w, Y = _eigsh(op, n, k, tol, random_state, owner)
        return w, scipy.linalg.solve_triangular(L, Y, lower=True, trans="T",
                                                check_finite=False)
    except ArpackFailure:
        if not is_matrix:
            raise
        return _dense(A, B, k)


#: relative residual ``||A v - theta v|| <= tol theta_1`` at which the array-API subspace
#: iteration stops, per floating dtype (float32's rounding floor is about ``sqrt(n) eps``)
SUBSPACE_TOL = {"float64": 1e-9, "float32": 1e-4}


def leading_eigh_array_api(A, k: int, *, solver: str = "dense", matmat=None, like=None,
                           tol: float | None = None, max_iter: int = 3000, random_state=0,
                           owner: str = "leading_eigh_array_api"):
    """The ``k`` leading eigenpairs of a symmetric positive semi-definite matrix in any
    array-API namespace (torch, CuPy, ...), on its device and in its dtype.

    ``solver="dense"``: ``xp.linalg.eigh`` of ``(A + A^T) / 2``, ``O(n^3)``, exact to working
    precision. ``solver="subspace"``: block subspace iteration with Rayleigh-Ritz on ``A`` or
    on the operator ``matmat(Q) = A Q`` (``A`` is then ``None`` and ``like``, an ``(m, n)``
    array, gives the namespace, device, dtype and ``n``), block size
    ``max(2k, k + 10)``, seeded NumPy start block; ``O(n^2 b)`` per iteration for a dense
    ``A``. It stops when every wanted pair has ``||A v - theta v|| <= tol theta_1``
    (:data:`SUBSPACE_TOL` of the dtype by default) and converges at the rate
    ``(lambda_{b+1} / lambda_k)`` per iteration: fast on kernel spectra, slow for clustered
    leading eigenvalues.

    Returns
    -------
    w : array of shape (k,), descending
    V : array of shape (n, k), orthonormal columns

    Raises
    ------
    ValueError
        The subspace iteration did not reach ``tol`` in ``max_iter`` iterations (the message
        names the residual reached and the dense solver as the way out).
    """
    import array_api_compat

    from ._array_api import from_numpy

    if solver == "dense":
        xp = array_api_compat.array_namespace(A)
        w, V = xp.linalg.eigh((A + A.T) / 2.0)
        return xp.flip(w[-k:], axis=0), xp.flip(V[:, -k:], axis=1)
    if solver != "subspace":
        raise ValueError(f"solver must be 'dense' or 'subspace', got {solver!r}.")
    if matmat is None:
        def matmat(Q):
            return A @ Q
        like = A
    n = like.shape[1]
    xp = array_api_compat.array_namespace(like)
    b = min(n, max(2 * k, k + 10))
    rng = np.random.default_rng(random_state)
    Q, _ = xp.linalg.qr(from_numpy(rng.standard_normal((n, b)), like))
    dtype_name = "float32" if like.dtype == xp.float32 else "float64"
    tol = SUBSPACE_TOL[dtype_name] if tol is None else tol
    res = float("inf")
    for _ in range(max_iter):
        Y = matmat(Q)
        T = Q.T @ Y
        theta, S = xp.linalg.eigh((T + T.T) / 2.0)
        theta, S = xp.flip(theta, axis=0), xp.flip(S, axis=1)
        V = Q @ S[:, :k]
        R = Y @ S[:, :k] - V * theta[None, :k]
        top = max(abs(float(theta[0])), 1e-300)
        res = float(xp.max(xp.linalg.vector_norm(R, axis=0))) / top
        if res <= tol:
            return theta[:k], V
        Q, _ = xp.linalg.qr(Y)
    raise ValueError(f"{owner}: the subspace iteration reached a relative residual of "
                     f"{res:.2e} after {max_iter} iterations, above its tolerance {tol:.0e} "
                     "(clustered leading eigenvalues); use eigen_solver='dense'.")
