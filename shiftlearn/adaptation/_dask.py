"""Random-feature adapters on Dask arrays: statistics where the blocks live, the solve here.

Needs the ``dask`` extra (``pip install shiftlearn[dask]``). ``RFTCA.fit`` / ``RFSCA.fit``
with a Dask array ``X`` (:func:`fit_dask`) turn each row block of ``X`` (with the matching
blocks of ``y`` and ``sample_domain``) into one :func:`rf_stats` task; the statistics are added
(``RFStats.__add__``) in a tree reduction, so only ``O((2N)^2)`` numbers per block travel
between workers, ``X`` is never gathered, and the small ``2N x 2N`` problem is solved in the
calling process. Any scheduler works: the threaded default, or a ``distributed.Client``
(a ``LocalCluster`` or a real cluster by scheduler address) when one is active.
``transform`` of a Dask array (:func:`transform_dask`) is lazy: one ``map_blocks`` task per
row block, a Dask array back.

Contract: the same model as the in-memory fit with the same ``random_state`` (statistics
equal up to the order of the float64 sums); the same validation and messages; labels must be
numbers or booleans; ``RFTCA(exact=True)`` is refused and ``memory`` ignored on Dask input.
Design notes: ``docs/dev/adaptation.md``.
"""

from __future__ import annotations

import warnings

import numpy as np

from .._dask import dask_rows, is_dask
from .._validation import UNLABELED_CLASS, check_sample_domain, check_unlabeled_convention
from ..kernels import bandwidth_rows, parse_bandwidth
from ._rf_stats import RFStats, rf_stats

__all__ = ["fit_dask", "rf_stats_dask", "transform_dask"]


def _block_stats(xb, yb, sb, omega, chunk_size, dtype, name):
    """One block's statistics, with the block's ``X`` checked as numpy input would be."""
    from sklearn.utils import check_array

    xb = check_array(xb, dtype=(np.float64, np.float32), ensure_all_finite=True,
                     estimator=name, input_name="X")
    if sb is not None:
        sb = check_sample_domain(sb, xb.shape[0])
    return rf_stats(xb, yb, sb, omega, chunk_size=chunk_size, dtype=dtype)


def rf_stats_dask(X, y=None, sample_domain=None, omega: np.ndarray | None = None, *,
                  chunk_size: int | None = None, dtype=None, compute: bool = True,
                  split_every: int = 8, estimator_name: str | None = None) -> RFStats:
    """:func:`~shiftlearn.adaptation.rf_stats` over the row blocks of a Dask array.

    Parameters
    ----------
    X : dask.array.Array of shape (n_samples, n_features)
        Rechunked to a single block along the feature axis if needed.
    y, sample_domain : dask arrays, numpy arrays or None
        Rechunked to ``X``'s row blocks. Each block is read by :func:`rf_stats` on its own
        (``-1``/NaN unlabeled; ``sample_domain`` inferred per block when ``None``).
    omega : ndarray of shape (n_features, N)
        Sent to the workers once (one graph key), not once per block.
    chunk_size, dtype
        Passed to :func:`rf_stats` inside each block.
    compute : bool
        Return the computed :class:`RFStats` (default) or the Dask ``Delayed`` object.
    split_every : int
        Fan-in of the tree reduction.
    estimator_name : str or None
        Named in the message when a block of ``X`` holds NaN/inf.

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
    om = dask.delayed(np.asarray(omega), pure=True)      # one key, shipped once per worker
    task = dask.delayed(_block_stats, pure=True)
    parts = [task(xi, yi, si, om, chunk_size, dtype, estimator_name)
             for xi, yi, si in zip(xb, yb, sb, strict=True)]
    while len(parts) > 1:
        parts = [dask.delayed(sum, pure=True)(parts[i:i + split_every])
                 for i in range(0, len(parts), split_every)]
    return parts[0].compute() if compute else parts[0]


def _as_1d(a, n: int, rows, what: str):
    """``a`` (numpy or Dask) as a 1-D Dask array with ``X``'s row blocks; numpy-like shape
    messages (a ``(n, 1)`` column is flattened, as for numpy input)."""
    import dask.array as da

    if not is_dask(a):
        return da.from_array(np.asarray(a), chunks=(rows,))
    a = da.asarray(a)
    if a.ndim == 0:                 # a scalar: computed, broadcast as for numpy input
        a = da.from_array(np.full(n, a.compute()), chunks=(rows,))
    if a.ndim == 2 and 1 in a.shape:
        if what == "y" and a.shape[1] == 1:
            from sklearn.exceptions import DataConversionWarning
            warnings.warn("A column-vector y was passed when a 1d array was expected. Please "
                          "change the shape of y to (n_samples, ), for example using ravel().",
                          DataConversionWarning, stacklevel=4)
        a = a.reshape(-1)
    if a.ndim != 1:
        raise ValueError(f"{what} must be 1-D, got an array of shape {a.shape}.")
    if a.shape[0] != n:
        if what == "y":
            raise ValueError(f"X has {n} rows but y has {a.shape[0]} entries.")
        raise ValueError(f"sample_domain has {a.shape[0]} entries but X has {n} rows; "
                         "give one domain id per row.")
    return a.rechunk((rows,))


def _check_sd_block(sb):
    return check_sample_domain(sb, sb.shape[0])


def _labels(X, y, sample_domain, est):
    """Validated lazy ``(y, sample_domain, any_unlabeled, has_target)`` for the block tasks:
    ``y`` float64 with NaN on unlabeled rows (or boolean), ``sample_domain`` int64 (inferred as
    for numpy input when omitted). Labels held in memory arrive checked
    (:func:`~shiftlearn._validation.check_labels_beside_dask`) and are only cut into ``X``'s
    row blocks; Dask labels are checked here. Raises numpy input's errors for bad labels or
    domains."""
    import dask
    import dask.array as da

    n, rows = X.shape[0], X.chunks[0]
    sd = None
    if sample_domain is not None:
        if is_dask(sample_domain):
            sd = _as_1d(sample_domain, n, rows, "sample_domain").map_blocks(
                _check_sd_block, dtype=np.int64)
        else:                     # checked where the fit starts: in blocks like X
            sd = da.from_array(sample_domain, chunks=(rows,))
    if y is None:
        if sd is None:            # a plain fit(X): one unlabeled domain, as numpy input
            return None, da.ones(n, chunks=(rows,), dtype=np.int64), False, False
        has_target = bool((sd < 0).any().compute())
        return None, sd, False, has_target
    y = _as_1d(y, n, rows, "y")     # in memory: checked where the fit starts; in blocks
    kind = y.dtype.kind
    if kind not in "biuf":
        raise TypeError(f"{type(est).__name__}.fit on Dask input needs numeric labels (integer "
                        f"classes, -1 or NaN for unlabeled rows), got dtype {y.dtype}; encode "
                        "them first, e.g. sklearn.preprocessing.LabelEncoder on the labeled "
                        "rows, or fit on numpy arrays.")
    marker = None
    if kind == "b":                                 # booleans are never unlabeled
        unl = None
        y_out = y
    elif kind in "iu":
        unl = marker = y == UNLABELED_CLASS
        y_out = da.where(unl, np.nan, y.astype(np.float64))
    else:
        has_inf, integral, has_m1 = dask.compute(
            da.isinf(y).any(), (da.isnan(y) | (y == da.round(y))).all(),
            (y == UNLABELED_CLASS).any())
        if has_inf:
            raise ValueError("y contains inf.")
        if integral:                # numpy input: NaN -> -1, both unlabeled and both "-1"
            unl = marker = da.isnan(y) | (y == UNLABELED_CLASS)
            y_out = da.where(unl, np.nan, y.astype(np.float64))
        else:                       # not class labels: only NaN is unlabeled, -1.0 labeled
            if has_m1:
                raise ValueError(
                    "y holds non-integral values and -1.0: for numpy input -1.0 is then a "
                    "label, which a Dask block that holds only integral values would read as "
                    "'unlabeled'. Mark unlabeled rows with NaN and shift the labels (e.g. "
                    "y + 2), or fit on numpy arrays.")
            unl = da.isnan(y)
            y_out = y.astype(np.float64)
    if sd is None:                  # skada's rule, as infer_sample_domain
        sd = (da.ones(n, chunks=(rows,), dtype=np.int64) if unl is None
              else da.where(unl, -2, 1).astype(np.int64))
        given = False
    else:
        given = True
    zero = da.zeros((), dtype=bool)
    any_unl = zero if unl is None else unl.any()
    m_any = zero if marker is None else marker.any()
    m_src = zero if marker is None else (marker & (sd > 0)).any()
    labeled = y if unl is None else y[~unl]
    classes = da.unique(labeled) if marker is not None else da.zeros(0)
    any_unl, m_any, m_src, has_target, classes = dask.compute(
        any_unl, m_any, m_src, (sd < 0).any(), classes)
    if m_any:                       # the -1 rule, on a summary with the same classes/markers
        ys = np.r_[np.asarray(classes, dtype=np.int64), UNLABELED_CLASS]
        sds = None if not given else np.r_[np.ones(len(classes), np.int64),
                                           1 if m_src else -1]
        check_unlabeled_convention(ys, sds)
    return y_out, sd, bool(any_unl), bool(has_target)


def _bandwidth_rows(X, name: str, bandwidth) -> np.ndarray:
    """The rows :func:`~shiftlearn.kernels.median_heuristic` would draw from ``X`` (the seeded
    subsample of :func:`~shiftlearn.kernels.bandwidth_rows`), computed and checked as numpy
    input (NaN/inf named with the estimator ``name``); all of ``X`` when it is that small.
    Nothing is read when ``bandwidth`` is a number or the ``"n_features"`` rule (no rows: only
    the width counts)."""
    from sklearn.utils import check_array

    if parse_bandwidth(bandwidth)[1] in (None, "n_features"):
        return np.empty((0, X.shape[1]), dtype=X.dtype)
    idx = bandwidth_rows(X.shape[0])
    rows = X.compute() if idx is None else X[idx].compute()
    return check_array(rows, dtype=(np.float64, np.float32), ensure_all_finite=True,
                       estimator=name, input_name="X")


def fit_dask(est, X, y=None, sample_domain=None):
    """``est.fit(X, y, sample_domain)`` for an ``RFTCA``/``RFSCA`` and a Dask array ``X``,
    after the fit's start checked the parameters, ``X`` (:func:`~shiftlearn._dask.dask_rows`)
    and the labels held in memory
    (:func:`~shiftlearn._validation.check_labels_beside_dask`); Dask labels are checked here,
    block by block.

    See the module docstring for what is computed where and the decisions; returns ``est``.
    """
    import dask

    from .._validation import warn_if_plain_pipeline

    name = type(est).__name__
    if getattr(est, "exact", False):
        raise ValueError(f"{name}(exact=True) solves on the n x n kernel of the training rows, "
                         "which a Dask array is meant to avoid; use exact=False (random "
                         "features, statistics per block), or fit on X.compute().")
    n = X.shape[0]
    if n < 2:
        raise ValueError(f"n_samples={n}: {name} needs at least 2 training rows.")
    if n <= est.n_features and not est.keep_stats:    # fewer rows than one statistic
        X, y, sample_domain = dask.compute(X, y, sample_domain)
        return est.fit(X, y, sample_domain)
    y, sd, any_unl, has_target = _labels(X, y, sample_domain, est)
    warn_if_plain_pipeline(est, np.array([UNLABELED_CLASS]) if any_unl else None)
    if getattr(est, "_require_target", False) and not has_target:
        raise ValueError("No target rows: domain adaptation needs rows with a negative "
                         "sample_domain (unlabeled target data).")
    if hasattr(est, "_check_setting"):
        est._check_setting(has_target)
    if not getattr(est, "supervised", True):
        y = None
    est.n_features_in_ = X.shape[1]
    if hasattr(est, "feature_names_in_"):
        del est.feature_names_in_
    est._solve(*est._fit_stats(X, y, sd))
    return est


def _transform_block(xb, est, name):
    from sklearn.utils import check_array

    xb = check_array(xb, dtype=(np.float64, np.float32), ensure_all_finite=True,
                     estimator=name, input_name="X")
    return est._transform(xb)


def transform_dask(est, X):
    """``est.transform(X)`` for a fitted adapter and a Dask array ``X``: a lazy Dask array of
    shape ``(n_samples, n_components_)`` (float32 for float32 ``X``, else float64), one task per
    row block; a block with NaN/inf raises numpy input's error when computed."""
    from sklearn.utils.validation import check_is_fitted

    check_is_fitted(est, "n_components_")
    X = dask_rows(X)
    name = type(est).__name__
    if X.shape[1] != est.n_features_in_:
        raise ValueError(f"X has {X.shape[1]} features, but {name} is expecting "
                         f"{est.n_features_in_} features as input.")
    dt = np.float32 if X.dtype == np.float32 else np.float64
    k = est.n_components_
    return X.map_blocks(_transform_block, est, name, dtype=dt, chunks=(X.chunks[0], (k,)),
                        meta=np.empty((0, 0), dtype=dt))
