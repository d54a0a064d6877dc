"""SCA's pencil on arrays of another array-API namespace (torch, CuPy, ...), on their device.

The same problem as :mod:`shiftlearn.adaptation._sca` (the paper's (20) with the footnote's
ridge), built from the same pieces, and solved by the dense reduction every namespace has:
``M = L L^T`` (Cholesky), ``C = L^{-1} A L^{-T}`` (two solves), ``C v = lambda v`` (``eigh``),
``B = L^{-T} v``: ``O(n^3)`` on the device, where the NumPy route has a Lanczos alternative.
Labels and domains are host arrays (small); everything of size ``n x n`` stays on the device.
"""

from __future__ import annotations

import numpy as np

from .._array_api import from_numpy, to_numpy
from .._linalg import NOT_POSITIVE_DEFINITE
from .._validation import unlabeled_mask
from ..kernels import center_kernel, domain_mean_matrix, kernel_centering_stats

__all__ = ["sca_fit_array_api"]


def _xp(A):
    import array_api_compat

    return array_api_compat.array_namespace(A)


def _range_svd(F):
    """``(U, s)``, ``F F^T = U diag(s^2) U^T``, singular values below ``1e-12 s_max`` dropped."""
    xp = _xp(F)
    U, s, _ = xp.linalg.svd(F, full_matrices=False)
    sn = to_numpy(s)
    keep = np.flatnonzero(sn > 1e-12 * max(float(sn[0]) if sn.size else 0.0, 1e-300))
    idx = from_numpy(keep, F)
    return xp.take(U, idx, axis=1), xp.take(s, idx, axis=0)


def sca_fit_array_api(K, y, sample_domain: np.ndarray, n_components: int, *, beta: float,
                      delta: float, eps: float, class_scatter_normalization: str,
                      centering: str, supervised: bool):
    """The ``n_components`` leading pairs ``(w, B)`` of SCA's pencil for the uncentred kernel
    ``K`` (``B^T M B = I``), with what the fit keeps: returns
    ``(w, B, Kc, Pf, a, col_mean, grand_mean)``.

    Raises
    ------
    ValueError
        The denominator is not positive definite even with a ridge (the fix named).
    """
    xp = _xp(K)
    n = K.shape[0]
    dev_eye = xp.eye(n, dtype=K.dtype, device=_device(K))
    col_mean, grand = kernel_centering_stats(K)
    Kc = center_kernel(K)
    E, ids = domain_mean_matrix(sample_domain)
    M = Kc
    if ids.shape[0] > 1:
        Ud = Kc @ from_numpy(E, K)
        Ud = (Ud - xp.mean(Ud, axis=1)[:, None]) / float(np.sqrt(ids.shape[0]))
        M = M + delta * (Ud @ Ud.T)
    Pf = None
    labeled = (np.zeros(n, bool) if (y is None or not supervised) else ~unlabeled_mask(y))
    if labeled.any():
        Kx = Kc if centering == "first" else K
        idx = np.flatnonzero(labeled)
        classes, inv, counts = np.unique(np.asarray(y)[labeled], return_inverse=True,
                                         return_counts=True)
        Kl = xp.take(Kx, from_numpy(idx, K), axis=1)
        means = Kl @ from_numpy(domain_mean_matrix(inv)[0], K)          # (n, C)
        R = Kl - xp.take(means, from_numpy(inv, K), axis=1)
        ns = int(labeled.sum())
        norm = 1.0 / ns if class_scatter_normalization == "n_s" else 1.0
        M = M + norm * (R @ R.T)
        mbar = means @ from_numpy(counts / ns, K)
        D = (means - mbar[:, None]) * from_numpy(np.sqrt(counts * norm), K)[None, :]
        U, s = _range_svd(D)
        Pf = U * s[None, :]
    M = M + eps * dev_eye
    M = (M + M.T) / 2.0
    a = (1.0 - beta) / n
    A = a * (Kc.T @ Kc)
    if beta and Pf is not None and Pf.shape[1]:
        A = A + beta * (Pf @ Pf.T)
    L = _cholesky(M, xp, n, dev_eye)
    C = xp.linalg.solve(L, xp.linalg.solve(L, A).T)        # L^{-1} A L^{-T} (A symmetric)
    w, V = xp.linalg.eigh((C + C.T) / 2.0)
    w, V = xp.flip(w[-n_components:], axis=0), xp.flip(V[:, -n_components:], axis=1)
    B = xp.linalg.solve(L.T, V)
    return w, B, Kc, Pf, a, col_mean, grand


def _device(A):
    import array_api_compat

    return array_api_compat.device(A)


def _cholesky(M, xp, n, eye):
    """Cholesky of ``M``; once with the ridge ``1e-10 trace(M) / n`` if it fails."""
    try:
        L = xp.linalg.cholesky(M)
        if bool(xp.all(xp.isfinite(L))):
            return L
    except Exception:                 # each library raises its own LinAlgError
        pass
    jitter = 1e-10 * float(xp.linalg.trace(M)) / n
    try:
        if not jitter > 1e-300:
            raise ValueError("M = 0")
        L = xp.linalg.cholesky(M + jitter * eye)
        if bool(xp.all(xp.isfinite(L))):
            return L
    except Exception as exc:
        raise ValueError(NOT_POSITIVE_DEFINITE) from exc
    raise ValueError(NOT_POSITIVE_DEFINITE)
