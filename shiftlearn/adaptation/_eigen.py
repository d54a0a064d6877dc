"""Dense and randomized leading eigenpairs of symmetric(-definite) problems, for the
random-feature solvers (``2N x 2N`` pencils) in :mod:`shiftlearn.adaptation._rf_solvers`.

* :func:`solve_pencil`: ``A v = lambda B v``, dense (``subset_by_index``) or by randomized block
  Krylov on ``B^{-1/2} A B^{-1/2}`` as an operator (Cholesky factor of ``B``, or the closed form
  when ``B = I + mu d d^T``), with a dense fallback;
* :func:`randomized_top_eigh`: block Lanczos with full re-orthogonalisation and exact residuals,
  run on one BLAS thread for ``D <= KRYLOV_SINGLE_THREAD_MAX_D``;
* in-place helpers for ``D x D`` matrices: :func:`_sym_` (symmetrise), :func:`_add_gram_`
  (``A += alpha F^T F`` for a short ``F``).
"""

from __future__ import annotations

from contextlib import nullcontext

import numpy as np
from scipy.linalg import cho_factor, eigh, qr, solve_triangular
from threadpoolctl import ThreadpoolController

from ._base import lowrank_inv_sqrt_weights, solve_generalized_eigh

__all__ = ["KRYLOV_SINGLE_THREAD_MAX_D", "randomized_top_eigh", "resolve_eigen_solver",
           "solve_pencil", "top_generalized_eigh"]


def _sym(A: np.ndarray) -> np.ndarray:
    return (A + A.T) / 2.0


_BLOCK = 256   # row block of the in-place D x D updates (small temporaries, cache friendly)


def _sym_(A: np.ndarray) -> np.ndarray:
    """Symmetrise ``A`` in place, ``A <- (A + A^T) / 2``, block by block (no D x D copy)."""
    D = A.shape[0]
    for i in range(0, D, _BLOCK):
        bi = slice(i, min(i + _BLOCK, D))
        for j in range(i, D, _BLOCK):
            bj = slice(j, min(j + _BLOCK, D))
            avg = (A[bi, bj] + A[bj, bi].T) * 0.5
            A[bi, bj] = avg
            A[bj, bi] = avg.T
    return A


def _add_gram_(A: np.ndarray, F: np.ndarray, alpha) -> np.ndarray:
    """``A += F^T diag(alpha) F`` in place for a short ``F`` (``r x D``, ``r << D``), by row
    blocks: one pass over ``A``. ``alpha`` is a scalar or one weight per row of ``F`` (several
    low-rank terms, stacked, cost one pass)."""
    alpha = np.broadcast_to(np.asarray(alpha, dtype=np.float64), (F.shape[0],))
    if F.shape[0] == 0 or not np.any(alpha):
        return A
    Fw = F * alpha[:, None]
    for i in range(0, A.shape[0], _BLOCK):
        bi = slice(i, min(i + _BLOCK, A.shape[0]))
        A[bi] += Fw[:, bi].T @ F
    return A


def top_generalized_eigh(A: np.ndarray, B: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Leading ``k`` eigenpairs ``(eigenvalues, V)`` of ``A v = lambda B v``, ``V^T B V = I``.

    Thin wrapper of :func:`shiftlearn.adaptation._base.solve_generalized_eigh` (symmetrised,
    ``subset_by_index``, no inverse) returning ``(w, V)`` leading first.
    """
    return solve_generalized_eigh(A, B, k)


#: Up to this dimension the block Krylov loop runs on ONE BLAS thread: its calls (a D x D by
#: D x b product, a tall-skinny QR, a small eigh per step) are too small for threads to pay off.
#: Measured on the 2-core machine (``benchmarks/adaptation/rf_speed.py``, MNIST->USPS, N = 1,000,
#: D = 2,000): the RF-TCA solve takes 0.15 s on one thread and 0.34 s on two. At D = 8,000 one
#: thread is still faster for RF-TCA but the Cholesky of RF-SCA wants all threads, so only the
#: Krylov loop is limited.
KRYLOV_SINGLE_THREAD_MAX_D = 4096
_BLAS: list = []


def _blas_single_thread(D: int):
    """A context that limits BLAS to one thread when ``D <= KRYLOV_SINGLE_THREAD_MAX_D``."""
    if D > KRYLOV_SINGLE_THREAD_MAX_D:
        return nullcontext()
    if not _BLAS:                           # inspecting the loaded libraries costs ~ms: once
        _BLAS.append(ThreadpoolController())
    return _BLAS[0].limit(limits=1, user_api="blas")


def randomized_top_eigh(apply, D: int, k: int, *, tol: float = 1e-7, max_iter: int = 40,
                        random_state=0) -> tuple[np.ndarray, np.ndarray] | None:
    """Leading ``k`` eigenpairs of a symmetric PSD operator by randomized block Krylov.

    ``apply(Q)`` returns ``T @ Q`` for a ``(D, b)`` block (BLAS-3). Block Lanczos with full
    re-orthogonalisation: the basis ``Q = [Q_0, Q_1, ...]`` spans the block Krylov space of a
    random start block (``b = min(D, k + 10)`` columns), and after each product a Rayleigh-Ritz
    step on the whole basis gives Ritz pairs whose residuals ``||T v - lambda v||`` are exact
    (``T Q`` is kept, ``T V = (T Q) U``). Stops when every residual is below
    ``tol * lambda_1``; returns ``None`` if that does not happen within ``max_iter`` products
    or before the basis reaches ``D / 2`` columns (callers then fall back to the dense
    solver, which is cheaper from there on). Block Krylov needs far fewer products than
    subspace iteration for the same residual (its error falls with the square root of the
    eigen-gap ratio per step).
    """
    with _blas_single_thread(D):
        return _block_krylov(apply, D, k, tol=tol, max_iter=max_iter, random_state=random_state)


def _block_krylov(apply, D: int, k: int, *, tol: float, max_iter: int, random_state):
    b = min(D, k + 10)
    m_max = max(b, min(D // 2, b * max_iter))
    Q = np.empty((D, m_max), order="F")     # column blocks are contiguous
    Y = np.empty((D, m_max), order="F")
    H = np.zeros((m_max, m_max))
    Q[:, :b], _ = qr(np.random.default_rng(random_state).standard_normal((D, b)),
                     mode="economic")
    m0, m = 0, b                       # the newest block is Q[:, m0:m]
    for _ in range(max_iter):
        Y[:, m0:m] = apply(Q[:, m0:m])
        Hn = Q[:, :m].T @ Y[:, m0:m]                 # new block column of Q^T T Q
        H[:m, m0:m] = Hn
        H[m0:m, :m] = Hn.T
        H[m0:m, m0:m] = _sym(H[m0:m, m0:m])
        kk = min(k, m)
        w, U = eigh(H[:m, :m], subset_by_index=[m - kk, m - 1], check_finite=False)
        w, U = w[::-1], U[:, ::-1]
        # The part of T Q outside span(Q) is that of the newest block only (the earlier T Q_j
        # lie in span(Q)): R = (I - Q Q^T) T Q_new = Q_r R_r, so ||T v - lambda v|| =
        # ||R_r U_new|| for a Ritz pair (cheap, b x b). Only when that estimate passes are the
        # Ritz vectors formed and the residuals computed exactly from T Q.
        R = Y[:, m0:m] - Q[:, :m] @ Hn
        R -= Q[:, :m] @ (Q[:, :m].T @ R)             # second Gram-Schmidt pass
        Qr, Rr = qr(R, mode="economic")
        est = np.linalg.norm(Rr @ U[m0:m], axis=0)
        if kk == k and w[0] > 0 and np.all(est <= tol * w[0]):
            V = Q[:, :m] @ U
            res = np.linalg.norm(Y[:, :m] @ U - V * w[None, :], axis=0)
            if np.all(res <= tol * w[0]):
                return w.copy(), V
        if m + b > m_max:
            return None
        # next block: the residual directions, re-orthogonalised against the whole basis
        Qr -= Q[:, :m] @ (Q[:, :m].T @ Qr)
        Q[:, m:m + b], _ = qr(Qr, mode="economic")
        m0, m = m, m + b
    return None


def resolve_eigen_solver(eigen_solver: str, D: int, k: int) -> str:
    """Validate ``eigen_solver``; ``"auto"`` means ``"randomized"`` when ``D >= 800`` and
    ``k <= D / 10`` (few leading pairs of a large pencil), else ``"dense"``."""
    if eigen_solver not in ("auto", "dense", "randomized"):
        raise ValueError("eigen_solver must be 'auto', 'dense' or 'randomized', "
                         f"got {eigen_solver!r}.")
    if eigen_solver == "auto":
        return "randomized" if (D >= 800 and k <= D / 10) else "dense"
    return eigen_solver


def solve_pencil(A: np.ndarray, B: np.ndarray | None, k: int, eigen_solver: str = "auto", *,
                 rank_one: tuple[float, np.ndarray] | None = None, overwrite: bool = False
                 ) -> tuple[np.ndarray, np.ndarray]:
    """Leading ``k`` eigenpairs of ``A v = lambda B v`` (``V^T B V = I``), dense or randomized.

    ``"dense"``: :func:`top_generalized_eigh` (``O(D^3)``). ``"randomized"``: reduce to the
    standard problem ``T = B^{-1/2} A B^{-1/2}`` *as an operator* (closed-form ``B^{-1/2}`` when
    ``B = I + mu d d^T`` is given as ``rank_one=(mu, d)``, then ``B`` may be ``None`` and is
    never formed; else a Cholesky factor ``B = U^T U`` and two triangular solves per block, no
    inverse formed) and run :func:`randomized_top_eigh`; falls back to a dense solve when it
    does not converge. ``"auto"``: randomized when ``D >= 800`` and ``k <= D / 10``.
    ``overwrite=True`` lets the solver symmetrise ``A`` and factor ``B`` in place (no
    ``D x D`` copies; the caller's matrices are destroyed). Both matrices are symmetrised first.
    """
    D = A.shape[0]
    eigen_solver = resolve_eigen_solver(eigen_solver, D, k)
    if B is None:
        if rank_one is None:
            raise ValueError("solve_pencil needs B or rank_one=(mu, d).")
        mu, d = rank_one
        B = np.eye(D)
        _add_gram_(B, d[None, :], mu)
        overwrite_b = True
    else:
        overwrite_b = overwrite
    A = _sym_(A) if overwrite else _sym(A)
    if eigen_solver == "randomized":
        if rank_one is not None:
            out = _rank_one_krylov(A.__matmul__, rank_one, D, k)
            if out is not None:
                return out
        else:
            # B = U^T U; with B C-contiguous and symmetric, B.T is the same matrix in Fortran
            # order, so LAPACK factors it in place.
            Bs = _sym_(B) if overwrite_b else _sym(B)
            try:
                U, _ = cho_factor(Bs.T, lower=False, overwrite_a=True, check_finite=False)
            except np.linalg.LinAlgError:
                U = None
            if U is not None:
                def op(Q):                          # U^{-T} A U^{-1} Q
                    X = solve_triangular(U, Q, lower=False, check_finite=False)
                    return solve_triangular(U, A @ X, lower=False, trans="T",
                                            check_finite=False)

                out = randomized_top_eigh(op, D, k)
                if out is None:                     # dense on the factor (what sygst does)
                    X = solve_triangular(U, A, lower=False, trans="T", check_finite=False)
                    T = solve_triangular(U, X.T, lower=False, trans="T", check_finite=False)
                    w, Y = eigh(_sym_(T), subset_by_index=[D - k, D - 1], overwrite_a=True,
                                check_finite=False)
                    out = w[::-1].copy(), Y[:, ::-1]
                V = solve_triangular(U, out[1], lower=False, check_finite=False)
                return out[0], V
            B = Bs if overwrite_b else B
    return top_generalized_eigh(A, B, k)


def _rank_one_krylov(apply_A, rank_one, D: int, k: int):
    """Leading ``k`` pairs of ``A v = lambda (I + mu d d^T) v`` by :func:`randomized_top_eigh`
    on ``T = B^{-1/2} A B^{-1/2}`` with the closed-form ``B^{-1/2} = I + alpha d d^T``;
    ``apply_A(X)`` returns ``A X``. ``None`` if Krylov did not converge."""
    mu, d = rank_one
    dd = float(d @ d)
    alpha = float(lowrank_inv_sqrt_weights(dd, mu)[0])

    def half(X):                                    # B^{-1/2} X = X + alpha d (d^T X)
        return X + alpha * np.outer(d, d @ X)

    out = randomized_top_eigh(lambda Q: half(apply_A(half(Q))), D, k)
    return None if out is None else (out[0], half(out[1]))
