"""Random-feature statistics of Dask arrays: one :class:`RFStats` per block, summed.

Needs the ``dask`` extra (``pip install shiftlearn[dask]``). Each row block of ``X`` (with the
matching blocks of ``y`` and ``sample_domain``) becomes one :func:`rf_stats` task; the
resulting statistics are added (``RFStats.__add__``) in a tree reduction, so only
``O((2N)^2)`` numbers per block travel between workers and ``X`` is never gathered.
"""

from __future__ import annotations

import numpy as np

from ._rf_stats import RFStats, rf_stats

__all__ = ["rf_stats_dask"]


def rf_stats_dask(X, y=None, sample_domain=None, omega: np.ndarray | None = None, *,
                  chunk_size: int | None = None, dtype=None, compute: bool = True,
                  split_every: int = 8) -> RFStats:
    """:func:`~shiftlearn.adaptation.rf_stats` over the row blocks of a Dask array.

    Parameters
    ----------
    X : dask.array.Array of shape (n_samples, n_features)
        Must have a single block along the feature axis (``X.rechunk({1: -1})``).
    y, sample_domain : dask arrays, numpy arrays or None
        Rechunked to ``X``'s row blocks. ``sample_domain`` is required when ``y`` is ``None``
        for a domain-aware fit (else every row is domain 1, or inferred from ``y``).
    omega : ndarray of shape (n_features, N)
    chunk_size, dtype
        Passed to :func:`rf_stats` inside each block.
    compute : bool
        Return the computed :class:`RFStats` (default) or the Dask ``Delayed`` object.
    split_every : int
        Fan-in of the tree reduction.

    Examples
    --------
    >>> import numpy as np, dask.array as da                       # doctest: +SKIP
    >>> from shiftlearn.kernels import rff_weights                 # doctest: +SKIP
    >>> X = da.random.random((10000, 5), chunks=(2500, 5))         # doctest: +SKIP
    >>> st = rf_stats_dask(X, omega=rff_weights(5, 50, 1.0, 0))    # doctest: +SKIP
    """
    import dask
    import dask.array as da

    if omega is None:
        raise ValueError("rf_stats_dask needs the frequencies omega (kernels.rff_weights).")
    X = da.asarray(X)
    if X.ndim != 2:
        raise ValueError(f"X must be 2-D, got {X.ndim} dimensions.")
    if len(X.chunks[1]) != 1:
        X = X.rechunk({1: -1})
    rows = X.chunks[0]

    def _blocks(a):
        if a is None:
            return [None] * len(rows)
        a = da.asarray(a).rechunk((rows,))
        return a.to_delayed().ravel().tolist()

    xb = X.to_delayed().ravel().tolist()
    yb, sb = _blocks(y), _blocks(sample_domain)
    task = dask.delayed(rf_stats, pure=True)
    parts = [task(xi, yi, si, omega, chunk_size=chunk_size, dtype=dtype)
             for xi, yi, si in zip(xb, yb, sb, strict=True)]
    while len(parts) > 1:
        parts = [dask.delayed(sum, pure=True)(parts[i:i + split_every])
                 for i in range(0, len(parts), split_every)]
    return parts[0].compute() if compute else parts[0]
