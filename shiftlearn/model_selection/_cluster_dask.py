"""``ClusterSplit`` on Dask arrays: kernel products per row block, the assignment here.

Needs the ``dask`` extra. With a Dask ``X`` (or a featurizer that returns one),
:class:`~shiftlearn.model_selection.ClusterSplit` clusters in a *factored* kernel
``K = Phi M Phi^T`` whose ``Phi`` is never formed: every product the Lloyd loop needs
(``Phi^T W``: the cluster sums, ``q x k``; ``Phi z``: one value per row; the column sums) is one
task per row block of ``X`` that builds that block's ``Phi`` where the block lives (Nyström:
``k(X_b, landmarks)``; linear kernel: ``X_b`` itself) and returns the small result. ``X`` is read
twice per Lloyd iteration and never gathered. Any scheduler works (the threaded default, or a
``distributed.Client``).

Contract: ``O(n)`` numbers in memory, never ``O(n d)``; the same split as numpy input with the
same ``random_state`` (MMD values to round-off); the full ``n x n`` kernel, a callable kernel
and row blocks of unknown size are refused with the fix. Design notes:
``docs/dev/model_selection.md``.
"""

from __future__ import annotations

from numbers import Integral

import numpy as np

from .._dask import compute_per_block, dask_rows
from ..kernels import bandwidth_rows, rbf_kernel
from ._cluster_kmeans import _KernelOperator, resolve_gamma

__all__ = ["DaskKernelOperator", "dask_features", "dask_kernel_operator"]


def dask_features(X):
    """A validated lazy 2-D Dask array (:func:`~shiftlearn._dask.dask_rows`): one
    column block, known row blocks, every block checked as numpy input is when computed."""
    return dask_rows(X, matched="y and groups", check_blocks=True)


# ------------------------------------------------------------------- per-block products
def _phi_block(xb, basis, sigma):
    """``Phi`` of one block: the kernel to the landmarks, or the rows (linear kernel)."""
    return xb if basis is None else rbf_kernel(xb, basis, sigma=sigma)


def _t_dot_block(xb, wb, basis, sigma):
    phi = _phi_block(xb, basis, sigma)
    return np.asarray(phi.T @ wb.astype(phi.dtype, copy=False), dtype=np.float64)


def _dot_block(xb, v, basis, sigma):
    phi = _phi_block(xb, basis, sigma)
    return np.asarray(phi @ v.astype(phi.dtype, copy=False), dtype=np.float64)


def _sq_norms_block(xb):
    return np.einsum("ij,ij->i", xb, xb, dtype=np.float64)


def _sum_block(xb, basis, sigma):
    return np.asarray(_phi_block(xb, basis, sigma).sum(axis=0, dtype=np.float64))


class DaskKernelOperator(_KernelOperator):
    """The factored clustering kernel ``Phi M Phi^T`` of a Dask ``X``: ``_KernelOperator``
    with ``Phi``'s products computed block by block (``matvec`` is inherited)."""

    def __init__(self, X, basis, sigma, M):
        import dask

        self._X, self._sigma = X, sigma
        # the landmarks travel once per worker (one graph key), not once per block
        self._basis = None if basis is None else dask.delayed(basis, pure=True)
        self.K = self.Phi = None      # no n x n matrix, no explicit Phi: numpy shortcuts skip
        self.M, self.kind = M, "linear" if basis is None else "nystroem"
        self.diag = (np.ones(X.shape[0], dtype=X.dtype) if basis is not None else
                     np.concatenate(compute_per_block(X, _sq_norms_block)))

    @property
    def dtype(self):
        return self._X.dtype

    def phi_t(self, W: np.ndarray) -> np.ndarray:
        return np.sum(compute_per_block(self._X, _t_dot_block, self._basis, self._sigma,
                                        per_block=(W,)), axis=0)

    def phi(self, V: np.ndarray) -> np.ndarray:
        return np.concatenate(compute_per_block(self._X, _dot_block, V, self._basis,
                                                self._sigma))

    def phi_sum(self) -> np.ndarray:
        return np.sum(compute_per_block(self._X, _sum_block, self._basis, self._sigma),
                      axis=0)[:, None]


def dask_kernel_operator(X, *, kernel="rbf", gamma=None, n_landmarks=None, random_state=None,
                         bandwidth=None) -> tuple[DaskKernelOperator, float | None]:
    """:func:`~shiftlearn.model_selection._cluster_kmeans.kernel_operator` for a Dask ``X``
    (validated by :func:`dask_features`): the same landmarks, bandwidth and ``M`` as numpy
    input with the same ``random_state``, ``Phi`` left in the blocks."""
    from sklearn.utils import check_random_state

    from ..kernels import nystroem, sigma_from_gamma

    n, d = X.shape
    if kernel == "linear":
        return DaskKernelOperator(X, None, None, None), None
    if callable(kernel) or kernel != "rbf":
        raise ValueError(f"ClusterSplit on a Dask array needs kernel='rbf' (with n_landmarks) "
                         f"or 'linear', got {kernel!r}: a callable kernel forms the n x n "
                         "matrix.")
    if n_landmarks is None:
        raise ValueError(f"ClusterSplit on a Dask array ({n} rows) needs n_landmarks (Nyström, "
                         "e.g. n_landmarks=500): n_landmarks=None forms the full n x n kernel.")
    sub = bandwidth_rows(n)        # a rule reads only these rows (numpy input's subsample)
    gamma_ = resolve_gamma(gamma, d, lambda: (X if sub is None else X[sub]).compute(),
                           bandwidth)
    if not isinstance(n_landmarks, Integral) or n_landmarks < 1:
        raise ValueError(f"n_landmarks must be a positive integer or None, got {n_landmarks!r}.")
    q = int(min(n_landmarks, n))
    sigma = sigma_from_gamma(gamma_)
    ny = nystroem(q, sigma, random_state=random_state)
    # the rows scikit-learn's Nystroem.fit(X) takes: its permutation of the n rows, first q
    idx = check_random_state(ny.random_state).permutation(n)[:q]
    basis = X[idx].compute()
    # fitted on these q rows, Nystroem permutes them again with the same seed: pre-arrange them
    # so that its landmarks come out in numpy input's order (K_qq^+ is computed by an SVD whose
    # round-off depends on the order; with an ill-conditioned K_qq the order shows at 1e-8)
    pre = np.empty_like(basis)
    pre[check_random_state(ny.random_state).permutation(q)] = basis
    ny.fit(pre)
    N = np.asarray(ny.normalization_, dtype=np.float64)
    return DaskKernelOperator(X, np.asarray(ny.components_), sigma, N.T @ N), gamma_
