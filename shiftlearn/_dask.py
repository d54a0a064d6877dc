"""Dask helpers shared by every layer: detection, computing, row blocks (no model here).

Dask is an optional dependency (the ``dask`` extra): nothing here imports it at module level,
so importing this module costs nothing without it, and :func:`is_dask` recognises a Dask
collection without importing dask. The model-specific Dask paths use these helpers where the
model lives: the kernel toolkit's random-feature MMD (:func:`shiftlearn.kernels.mmd2_rff`),
the random-feature adapters (``adaptation/_dask.py``), marginal transfer
(``generalization/_dask.py``) and the cluster splits (``model_selection/_cluster_dask.py``).
This module imports nothing of the package.
"""

from __future__ import annotations

import numpy as np

__all__ = ["as_dask_2d", "compute_per_block", "dask_rows", "is_dask", "to_memory"]


def is_dask(obj) -> bool:
    """Whether ``obj`` is a Dask collection (without importing dask)."""
    return hasattr(obj, "__dask_graph__")


def to_memory(*objs):
    """The arguments in memory: the Dask collections among them computed together (one
    ``dask.compute``, so a graph they share runs once), anything else returned as is. One
    argument gives one value, several a tuple."""
    lazy = [i for i, o in enumerate(objs) if is_dask(o)]
    out = list(objs)
    if lazy:
        import dask

        for i, value in zip(lazy, dask.compute(*[objs[i] for i in lazy]), strict=True):
            out[i] = value
    return out[0] if len(out) == 1 else tuple(out)


def compute_per_block(X, fn, *args, per_block=()) -> list:
    """``fn(block_i, *parts_i, *args)`` for every row block ``i`` of the Dask array ``X``,
    computed together (one ``dask.compute``), in block order. Each ``per_block`` entry gives
    block ``i``'s part: a per-row numpy array (sliced to the block's rows), a callable
    ``i -> part``, or ``None``. ``args`` are the same for every block: wrap a large one in
    ``dask.delayed(..., pure=True)`` so it travels once per worker, not once per block."""
    import dask

    starts = np.cumsum((0,) + X.chunks[0])

    def part(a, i):
        if a is None or callable(a):
            return None if a is None else a(i)
        return a[starts[i]:starts[i + 1]]

    task = dask.delayed(fn, pure=True)
    return list(dask.compute(*[task(xb, *[part(a, i) for a in per_block], *args)
                               for i, xb in enumerate(X.to_delayed().ravel())]))


def _check_rows_block(xb, estimator):
    from sklearn.utils import check_array

    return check_array(xb, dtype=(np.float64, np.float32), ensure_all_finite=True,
                       ensure_min_samples=0, input_name="X", estimator=estimator)


def dask_rows(X, *, matched: str = "y and sample_domain", estimator: str | None = None,
              check_blocks: bool = False):
    """``X`` as a 2-D Dask array with known row blocks and one column block, checked as numpy
    input would be: a ``TypeError`` for a non-array (a Dask DataFrame names its fix), a
    ``ValueError`` for the wrong dimension or unknown block sizes (``matched``: what its rows
    must line up with). ``check_blocks``: each block is also validated lazily, when computed
    (finite numbers, float32 kept, other types float64; ``estimator`` named)."""
    import dask.array as da

    if not isinstance(X, da.Array):
        raise TypeError(f"X is a {type(X).__name__}; this takes a dask.array.Array (a Dask "
                        "DataFrame: X = df.to_dask_array(lengths=True)).")
    if X.ndim != 2:
        raise ValueError(f"Expected a 2-dimensional X, got a Dask array of shape {X.shape}.")
    if any(np.isnan(c) for c in X.chunks[0]):
        raise ValueError(f"X has unknown row-block sizes (NaN in X.chunks), so its rows cannot be "
                         f"matched with {matched}; call X.compute_chunk_sizes() first "
                         "(or df.to_dask_array(lengths=True)).")
    if X.shape[0] < 1:
        raise ValueError("Found array with 0 sample(s) (shape=(0, ...)) while a minimum of 1 "
                         "is required.")
    if len(X.chunks[1]) != 1:
        X = X.rechunk({1: -1})
    if not check_blocks:
        return X
    dt = np.float32 if X.dtype == np.float32 else np.float64
    return X.map_blocks(_check_rows_block, estimator, dtype=dt, meta=np.empty((0, 0), dtype=dt))


def as_dask_2d(A, name: str):
    """``A`` (numpy or Dask) as a 2-D Dask array with one column block; a ``ValueError``
    naming ``name`` for another dimension."""
    import dask.array as da

    A = da.asarray(A) if is_dask(A) else da.from_array(np.asarray(A))
    if A.ndim != 2:
        raise ValueError(f"Expected a 2-dimensional {name}, got an array of shape {A.shape}.")
    return A.rechunk({1: -1}) if len(A.chunks[1]) != 1 else A
