"""Round-off bounds for tests that compare two floating-point computations.

A tolerance states what the mathematics guarantees, never the last digits one machine gave:
the same quantity computed in two orders (another BLAS build, thread count or blocking, dense
against ARPACK, a stream against one product) differs by round-off whose size follows from the
problem's size ``n``, its norms or condition, and the machine epsilon. Each helper returns that
first-order bound times a modest constant ``c`` (the ``p(n)`` of the backward-error analyses is
pessimistic as ``n``; ``c`` covers the two computations compared and the constants of the
analysis), so a real bug, which moves results by far more than ``n eps`` of their scale, still
fails.

Bit-identity (``assert_array_equal``, ``rtol=0, atol=0``) is kept only where it is a promise:
seeded reproducibility, the same code path run twice, frozen-solver comparisons.
"""

import numpy as np

EPS = float(np.finfo(np.float64).eps)
EPS32 = float(np.finfo(np.float32).eps)


def _norm2(M) -> float:
    return float(np.linalg.norm(np.asarray(M, dtype=np.float64), 2))


def eigh_atol(A, B=None, w=None, V=None, c: float = 10.0, eps: float = EPS) -> float:
    """Absolute bound on the difference of eigenvalues of the symmetric ``A`` (or the pencil
    ``(A, B)``, ``B`` symmetric positive definite) computed by two backward-stable solvers.

    Each solver returns the exact eigenvalues of ``(A + dA, B + dB)`` with
    ``||dA|| <= n eps ||A||``, ``||dB|| <= n eps ||B||``, and first-order perturbation of the
    pair ``(lambda, x)`` gives ``|dlambda| <= ||x||^2 / (x^T B x) (||dA|| + |lambda| ||dB||)``
    (Weyl for ``B = I``: ``|dlambda| <= n eps ||A||``). Small eigenvalues are therefore
    compared in absolute terms relative to the largest scale, not relative to themselves.
    ``||x||^2 / (x^T B x) <= ||B^{-1}||``: that worst case is used unless the eigenvectors
    ``V`` (columns, any scaling) are given, which give each eigenvalue's own condition (much
    smaller when ``B`` is ill conditioned only away from the leading eigenvectors, as a ridge
    ``eps I`` makes it). ``w`` (the eigenvalues compared) sets the ``|lambda| ||B||`` term;
    without it the bound uses ``||A|| ||B^{-1}||``, at least ``lambda_max``. The largest over
    the eigenvalues, as a float for ``atol``.
    """
    A = np.asarray(A, dtype=np.float64)
    n = A.shape[0]
    nA = _norm2(A)
    if B is None:
        return c * n * eps * nA
    B = np.asarray(B, dtype=np.float64)
    nBinv = 1.0 / float(np.linalg.eigvalsh((B + B.T) / 2)[0])
    lam = np.abs(np.asarray(w, dtype=np.float64)) if w is not None else nA * nBinv
    if V is None:
        cond = nBinv
    else:
        V = np.asarray(V, dtype=np.float64)
        cond = np.sum(V * V, axis=0) / np.sum(V * (B @ V), axis=0)
    return float(np.max(c * n * eps * cond * (nA + lam * _norm2(B))))


def dot_atol(X, Y, c: float = 4.0, eps: float = EPS, Xerr=None, Yerr=None) -> float:
    """Bound on ``|fl(X @ Y) - X @ Y|`` for any summation order (blocked, threaded, streamed in
    chunks): ``gamma_k |X| |Y|`` entrywise with ``k`` the inner dimension (Higham, Thm 3.5);
    returned as the largest entry so it serves as a scalar ``atol``. Two orders differ by at
    most twice that, which ``c`` covers. ``Xerr``/``Yerr``: entrywise bounds on the inputs'
    own round-off (features computed twice, :func:`rff_err`), carried as
    ``Xerr |Y| + |X| Yerr``."""
    X = np.atleast_2d(np.asarray(X, dtype=np.float64))
    Y = np.asarray(Y, dtype=np.float64)
    Y = Y[:, None] if Y.ndim == 1 else Y
    k = X.shape[1]
    bound = c * k * eps * (np.abs(X) @ np.abs(Y))
    if Xerr is not None:
        bound = bound + np.atleast_2d(Xerr) @ np.abs(Y)
    if Yerr is not None:
        Yerr = np.asarray(Yerr, dtype=np.float64)
        bound = bound + np.abs(X) @ (Yerr[:, None] if Yerr.ndim == 1 else Yerr)
    return float(np.max(bound))


def sum_atol(x, axis=None, c: float = 4.0, eps: float = EPS, err=None):
    """Bound on the round-off of ``x.sum(axis)`` in any order: ``c n eps sum|x|`` (Higham,
    eq. 4.4), with ``n`` the number of terms summed; ``err``: an entrywise bound on the
    terms' own round-off, added as ``sum(err)``."""
    x = np.asarray(x, dtype=np.float64)
    n = x.size if axis is None else x.shape[axis]
    bound = c * n * eps * np.sum(np.abs(x), axis=axis)
    if err is not None:
        bound = bound + np.sum(err, axis=axis)
    return float(np.max(bound))


def leading_pencil_atol(A, B, w, c: float = 10.0, eps: float = EPS) -> float:
    """:func:`eigh_atol` for the ``len(w)`` leading eigenvalues of ``(A, B)`` at their own
    conditions, with their eigenvectors computed here (``B = None``: the standard problem)."""
    import scipy.linalg

    A = (np.asarray(A, dtype=np.float64) + np.asarray(A, dtype=np.float64).T) / 2
    n, k = A.shape[0], np.size(w)
    V = None
    if B is not None:
        V = scipy.linalg.eigh(A, B, subset_by_index=[n - k, n - 1])[1]
    return eigh_atol(A, B, w, V, c=c, eps=eps)


def leading_eigvec_atol(A, B, k: int, c: float = 10.0, eps: float = EPS) -> float:
    """Bound on the 2-norm change of any of the ``k`` leading ``B``-normalised eigenvectors of
    ``(A, B)`` (``B = None``: the standard problem) between two backward-stable solvers, signs
    aligned: the backward error ``E`` of :func:`eigh_atol`, in the ``B``-inner product, turns
    each eigenvector by at most ``||E|| / gap`` (Davis-Kahan), ``gap`` its distance to the
    other eigenvalues; ``||B^{-1}||^{1/2}`` converts to the 2-norm."""
    import scipy.linalg

    A = (np.asarray(A, dtype=np.float64) + np.asarray(A, dtype=np.float64).T) / 2
    w = scipy.linalg.eigh(A, B, eigvals_only=True)[::-1]
    nBinv = 1.0 if B is None else 1.0 / float(np.linalg.eigvalsh(B)[0])
    out = 0.0
    for i in range(k):
        gap = np.min(np.abs(np.delete(w, i) - w[i]))
        out = max(out, eigh_atol(A, B, w[i], c=c, eps=eps) / gap * np.sqrt(nBinv))
    return out


def quad_atol(x, K, c: float = 4.0, eps: float = EPS) -> float:
    """Bound on the round-off of the quadratic form ``x^T K x`` in any order: ``c n eps
    |x|^T |K| |x|``. It is absolute on purpose: an MMD is a difference of kernel means and
    can be far smaller than ``|x|^T |K| |x|``, so a relative tolerance would ask more than the
    cancellation leaves. For a kernel with ``|k| <= 1`` and the MMD vector (``||x||_1 = 2``)
    ``|x|^T |K| |x| <= 4``; for a linear kernel pass ``|X| |X|^T``, which also covers the
    round-off of forming ``K``."""
    x = np.abs(np.asarray(x, dtype=np.float64))
    return c * x.size * eps * float(x @ np.abs(np.asarray(K, dtype=np.float64)) @ x)


def mmd_atol(n: int, c: float = 4.0, eps: float = EPS) -> float:
    """:func:`quad_atol` of a (squared) MMD on ``n`` rows with a kernel bounded by 1 (rbf,
    laplacian, ...): ``|ell|^T |K| |ell| <= ||ell||_1^2 = 4``, so ``4 c n eps``."""
    return 4.0 * c * n * eps


def rbf_err(X, Y, sigma: float, c: float = 4.0, eps: float = EPS) -> np.ndarray:
    """Entrywise round-off bound of the Gaussian kernel ``exp(-||x - y||^2 / (2 sigma^2))`` in
    any order: ``||x||^2 + ||y||^2 - 2 x.y`` is off by ``c (d + 2) eps (||x||^2 + ||y||^2)``,
    which ``exp`` scales by ``k / (2 sigma^2)``, plus the rounding of ``exp`` itself."""
    X = np.asarray(X, dtype=np.float64)
    Y = np.asarray(Y, dtype=np.float64)
    sx, sy = np.sum(X * X, axis=1), np.sum(Y * Y, axis=1)
    D2 = np.maximum(sx[:, None] + sy[None, :] - 2 * X @ Y.T, 0.0)
    K = np.exp(-D2 / (2 * sigma**2))
    dD = c * (X.shape[1] + 2) * eps * (sx[:, None] + sy[None, :])
    return K * (dD / (2 * sigma**2) + c * eps)


def kernel_map_atol(Kerr, K, W, c: float = 4.0, eps: float = EPS) -> float:
    """Bound on the round-off of ``K @ W`` when ``K`` is itself known to ``Kerr`` entrywise
    (:func:`rbf_err`), centred or not (centring adds ``n eps max|K|`` per entry): the
    kernel's error carried through ``|W|``, plus the product's own (:func:`dot_atol`)."""
    K = np.asarray(K, dtype=np.float64)
    Kerr = np.asarray(Kerr, dtype=np.float64) + c * K.shape[1] * eps * np.max(np.abs(K))
    return float(np.max(Kerr @ np.abs(W))) + dot_atol(K, W, c=c, eps=eps)


def mean_atol(x, axis=0, c: float = 4.0, eps: float = EPS, err=None) -> float:
    """Bound on the round-off of ``x.mean(axis)`` in any order: :func:`sum_atol` over the
    number of terms, absolute (a mean of signed features may cancel to far below its terms,
    so a relative tolerance would ask more)."""
    x = np.asarray(x, dtype=np.float64)
    n = x.size if axis is None else x.shape[axis]
    return sum_atol(x, axis=axis, c=c, eps=eps, err=err) / max(n, 1)


def rff_err(X, Omega, c: float = 4.0, eps: float = EPS) -> np.ndarray:
    """Entrywise round-off bound of the random Fourier features
    ``N^{-1/2} [cos(X Omega), sin(X Omega)]`` computed in two orders (chunks, another BLAS
    blocking, the scale applied per feature or once to a sum): the phases are off by
    ``gamma_d |X| |Omega|``, which cos and sin (1-Lipschitz) pass on, plus their own and the
    scale's rounding. (float32 trigonometry rounds the phases to float32 first; two phases a
    float64 ulp apart round alike unless they straddle a float32 rounding boundary, about one
    in 1e8, which this bound does not cover.)"""
    X = np.asarray(X, dtype=np.float64)
    Omega = np.asarray(Omega, dtype=np.float64)
    d, N = Omega.shape
    phase = c * d * eps * (np.abs(X) @ np.abs(Omega)) + c * eps
    return np.hstack([phase, phase]) / np.sqrt(N)
