"""Sufficient statistics of random Fourier features (the solvers on them: :mod:`._rf_solvers`).

With random features ``z(x) = N^{-1/2} [cos(Omega^T x); sin(Omega^T x)]`` (``2N`` columns,
:func:`shiftlearn.kernels.rff_map`), every scatter matrix of TCA and SCA is a function of a few
*sums* over the rows, which :class:`RFStats` holds:

* per-domain counts ``n_d`` and feature sums ``s_d = sum_{i in d} z_i``;
* per-class counts ``n_k`` and feature sums over the *labeled* rows;
* the second moments ``sum z_i z_i^T`` over the labeled and over the unlabeled rows (``2N x 2N``).

Sums add up over disjoint row sets, so statistics computed on chunks, machines, Dask blocks or
federated clients merge with ``+`` (:meth:`RFStats.__add__`), and the solvers only ever see
``2N x 2N`` matrices: time linear in ``n``, memory independent of ``n``, no ``n x n`` matrix.

Scatters in the feature space (``m_bar`` the overall mean, ``C`` the centred total scatter):

* total: ``C = S - n m_bar m_bar^T`` (``= Sigma H Sigma^T`` of the RF-TCA paper);
* TCA's MMD term: ``Sigma L Sigma^T = d d^T`` with ``d = mean(source rows) - mean(target rows)``;
* SCA's domain scatter: ``(1/m) sum_d (mu_d - mu_bar)(mu_d - mu_bar)^T`` over the ``m`` domain
  means (``mu_bar`` their unweighted mean; this is ``Z^T L Z`` with SCA's ``L``);
* between-class: ``(1/n_s) sum_k n_k (mu_k - mu_s)(mu_k - mu_s)^T`` (labeled rows);
* within-class: ``(1/n_s) (S_labeled - sum_k n_k mu_k mu_k^T)``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from numbers import Integral

import numpy as np

from .._array_api import from_numpy, to_numpy
from .._linalg import _BLOCK, sym, take_rows
from .._validation import (
    check_sample_domain,
    check_unlabeled_convention,
    check_X,
    infer_sample_domain,
    label_array,
    unlabeled_mask,
)
from ..kernels import DEFAULT_CHUNK_BYTES, omega_fingerprint, rff_map

__all__ = ["RFStats", "rf_stats"]


@dataclass
class RFStats:
    """Additive sufficient statistics of random features for RF-TCA and RF-SCA.

    All fields are *sums* (never means) over a set of rows, so the statistics of disjoint row
    sets merge with ``+``. Build them with :func:`rf_stats` (from data) or
    :meth:`from_features` (from an already mapped block ``Z``).

    Attributes
    ----------
    dim : int
        Number of random-feature columns ``2N``.
    domains : ndarray of int64, shape (n_domains,)
        Sorted domain ids present (positive = source, negative = target).
    domain_counts : ndarray of int64, shape (n_domains,)
    domain_sums : ndarray of shape (n_domains, 2N)
        ``sum_{i in domain d} z(x_i)``.
    classes : ndarray, shape (n_classes,)
        Sorted labels seen on labeled rows (empty if none).
    class_counts : ndarray of int64, shape (n_classes,)
    class_sums : ndarray of shape (n_classes, 2N)
        ``sum_{i labeled, y_i = k} z(x_i)``.
    moment_labeled, moment_unlabeled : ndarray of shape (2N, 2N)
        ``sum z_i z_i^T`` over labeled (resp. unlabeled) rows.
    fingerprint : str
        Hash of the frequencies ``Omega`` (merging statistics of different maps is an error).

    Examples
    --------
    >>> import numpy as np
    >>> from shiftlearn.kernels import rff_weights
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(40, 3)); y = np.r_[np.zeros(10), np.ones(10), -np.ones(20)]
    >>> dom = np.r_[np.ones(20), -2 * np.ones(20)].astype(int)
    >>> omega = rff_weights(3, 25, sigma=1.0, random_state=0)
    >>> a = rf_stats(X[:25], y[:25], dom[:25], omega)
    >>> b = rf_stats(X[25:], y[25:], dom[25:], omega)
    >>> np.allclose((a + b).total_moment(), rf_stats(X, y, dom, omega).total_moment())
    True
    """

    dim: int
    domains: np.ndarray
    domain_counts: np.ndarray
    domain_sums: np.ndarray
    classes: np.ndarray
    class_counts: np.ndarray
    class_sums: np.ndarray
    moment_labeled: np.ndarray
    moment_unlabeled: np.ndarray
    fingerprint: str = field(default="")

    # ------------------------------------------------------------------ construction / merging
    @classmethod
    def empty(cls, dim: int, fingerprint: str = "", label_dtype=np.int64) -> RFStats:
        D = int(dim)
        return cls(D, np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros((0, D)),
                   np.zeros(0, label_dtype), np.zeros(0, np.int64), np.zeros((0, D)),
                   np.zeros((D, D)), np.zeros((D, D)), fingerprint)

    @classmethod
    def from_features(cls, Z: np.ndarray, y: np.ndarray | None, sample_domain: np.ndarray,
                      fingerprint: str = "") -> RFStats:
        """Statistics of one block of already mapped rows ``Z`` (shape ``(n, 2N)``).

        ``y`` marks unlabeled rows with ``-1``/NaN (``None``: all unlabeled); ``sample_domain``
        holds one non-zero domain id per row. Products run in ``Z``'s dtype (float32 halves
        the cost), sums are accumulated in float64.
        """
        Z = np.asarray(Z)
        acc = _StatsAccumulator(Z.shape[1])       # the one grouping code, as rf_stats's chunks
        acc.add(Z, y, None if y is None else ~unlabeled_mask(y), sample_domain)
        return acc.finish(scale=1.0, fingerprint=fingerprint)

    def __add__(self, other: RFStats) -> RFStats:
        if isinstance(other, int) and other == 0:   # so that sum(list_of_stats) works
            return self
        if not isinstance(other, RFStats):
            return NotImplemented
        if self.dim != other.dim:
            raise ValueError(f"Cannot merge RFStats with {self.dim} and "
                             f"{other.dim} random-feature columns.")
        if self.fingerprint and other.fingerprint and self.fingerprint != other.fingerprint:
            raise ValueError("Cannot merge RFStats computed with different frequencies Omega "
                             "(use the same bandwidth, n_features and random_state everywhere).")
        doms, dcounts, dsums = _merge_groups(self.domains, self.domain_counts, self.domain_sums,
                                             other.domains, other.domain_counts,
                                             other.domain_sums)
        classes, ccounts, csums = _merge_groups(self.classes, self.class_counts, self.class_sums,
                                                other.classes, other.class_counts,
                                                other.class_sums)
        return RFStats(self.dim, doms, dcounts, dsums, classes, ccounts, csums,
                       self.moment_labeled + other.moment_labeled,
                       self.moment_unlabeled + other.moment_unlabeled,
                       self.fingerprint or other.fingerprint)

    __radd__ = __add__

    # ------------------------------------------------------------------ derived quantities
    @property
    def n_samples(self) -> int:
        return int(self.domain_counts.sum())

    @property
    def n_labeled(self) -> int:
        return int(self.class_counts.sum())

    def total_moment(self) -> np.ndarray:
        """``S = sum_i z_i z_i^T`` over all rows."""
        return self.moment_labeled + self.moment_unlabeled

    def mean(self) -> np.ndarray:
        """Overall feature mean ``m_bar``."""
        return self.domain_sums.sum(axis=0) / max(self.n_samples, 1)

    def total_scatter(self) -> np.ndarray:
        """``C = S - n m_bar m_bar^T = Sigma H Sigma^T`` (centred, not divided by n; exactly
        symmetric when the moments are, as from :func:`rf_stats`; the solvers symmetrise)."""
        n = self.n_samples
        t = self.domain_sums.sum(axis=0) / np.sqrt(max(n, 1))
        C = np.empty((self.dim,) * 2)
        for i in range(0, C.shape[0], _BLOCK):      # one fused pass, small temporaries
            bi = slice(i, min(i + _BLOCK, C.shape[0]))
            np.add(self.moment_labeled[bi], self.moment_unlabeled[bi], out=C[bi])
            C[bi] -= t[bi, None] * t[None, :]       # t_i t_j = t_j t_i: symmetry kept
        return C

    def side_mean(self, sign: int) -> np.ndarray:
        """Pooled mean of the source (``sign=+1``) or target (``sign=-1``) rows."""
        mask = self.domains > 0 if sign > 0 else self.domains < 0
        cnt = self.domain_counts[mask].sum()
        if cnt == 0:
            side = "source" if sign > 0 else "target"
            raise ValueError(f"No {side} rows in the statistics: RF-TCA needs both source "
                             "(sample_domain > 0) and target (sample_domain < 0) rows.")
        return self.domain_sums[mask].sum(axis=0) / cnt

    def mmd_vector(self) -> np.ndarray:
        """``d = Sigma l = mean(source) - mean(target)`` (TCA's ``Sigma L Sigma^T = d d^T``).

        Zero when the sources or the targets are missing (as the exact TCA's ``l``: no
        discrepancy to reduce, TCA reduces to a kernel PCA).
        """
        if not (np.any(self.domains > 0) and np.any(self.domains < 0)):
            return np.zeros(self.dim)
        return self.side_mean(+1) - self.side_mean(-1)

    def domain_means(self, domains: str = "ids") -> np.ndarray:
        """The means whose scatter is SCA's domain scatter, one row per domain.

        ``domains="ids"``: one domain per ``sample_domain`` id; ``"sides"``: pooled sources vs
        pooled targets (two domains, or one when a side is absent).
        """
        if domains == "sides":
            return np.array([self.side_mean(s) for s in (+1, -1)
                             if np.any(self.domains > 0 if s > 0 else self.domains < 0)])
        if domains == "ids":
            return self.domain_sums / self.domain_counts[:, None]
        raise ValueError(f"domains must be 'ids' or 'sides', got {domains!r}.")

    def domain_scatter(self, domains: str = "ids") -> np.ndarray:
        """SCA's domain scatter ``(1/m) sum_d (mu_d - mu_bar)(mu_d - mu_bar)^T`` over the
        :meth:`domain_means`."""
        means = self.domain_means(domains)
        dev = means - means.mean(axis=0)
        return sym(dev.T @ dev / max(means.shape[0], 1))

    def class_factors(self) -> tuple[np.ndarray, np.ndarray]:
        """Low-rank factors ``(F_b, F_w)`` of the class scatters of the labeled rows:
        between ``= F_b^T F_b / n_s``, within ``= (S_labeled - F_w^T F_w) / n_s``, with rows
        ``F_b[k] = sqrt(n_k) (mu_k - mu_s)`` and ``F_w[k] = sqrt(n_k) mu_k``."""
        ns = self.n_labeled
        if ns == 0:
            raise ValueError("No labeled rows: the class scatters need labels (y != -1).")
        root = np.sqrt(self.class_counts.astype(np.float64))[:, None]
        mu_k = self.class_sums / self.class_counts[:, None]
        mu_s = self.class_sums.sum(axis=0) / ns
        return (mu_k - mu_s) * root, mu_k * root

    def class_scatters(self) -> tuple[np.ndarray, np.ndarray]:
        """Between- and within-class scatters of the labeled rows, each divided by ``n_s``."""
        ns = self.n_labeled
        Fb, Fw = self.class_factors()
        Sb = Fb.T @ Fb / ns
        Sw = (self.moment_labeled - Fw.T @ Fw) / ns
        return sym(Sb), sym(Sw)


def _column_sums(Z: np.ndarray) -> np.ndarray:
    """``1^T Z`` by one BLAS product in ``Z``'s dtype, returned in float64.

    For float32 features this accumulates in float32, as the moments' SYRK does: relative error
    ~4e-6 on a 65,536-row chunk, below the float32 cos/sin's ~1e-5 and far below the
    Monte-Carlo error ~1/sqrt(N).
    """
    return np.asarray(np.ones(Z.shape[0], dtype=Z.dtype) @ Z, dtype=np.float64)


def _group_sums(Z: np.ndarray, inv: np.ndarray, n_groups: int) -> np.ndarray:
    """Row sums of ``Z`` per group (BLAS products in ``Z``'s dtype), in float64."""
    if n_groups == 1:
        return _column_sums(Z)[None, :]
    if n_groups <= 4:                    # few groups (domains): views where rows are contiguous
        return np.stack([_column_sums(take_rows(Z, inv == g)) for g in range(n_groups)])
    onehot = np.zeros((n_groups, Z.shape[0]), dtype=Z.dtype)
    onehot[inv, np.arange(Z.shape[0])] = 1
    return np.asarray(onehot @ Z, dtype=np.float64)


def _merge_groups(ids_a, cnt_a, sums_a, ids_b, cnt_b, sums_b):
    if ids_a.size == 0:
        return ids_b.copy(), cnt_b.copy(), sums_b.copy()
    if ids_b.size == 0:
        return ids_a.copy(), cnt_a.copy(), sums_a.copy()
    ids = np.union1d(ids_a, ids_b)
    cnt = np.zeros(ids.size, np.int64)
    sums = np.zeros((ids.size, sums_a.shape[1]))
    ia, ib = np.searchsorted(ids, ids_a), np.searchsorted(ids, ids_b)
    cnt[ia] += cnt_a
    cnt[ib] += cnt_b
    sums[ia] += sums_a
    sums[ib] += sums_b
    return ids, cnt, sums


def rf_stats(X, y=None, sample_domain=None, omega: np.ndarray | None = None, *,
             chunk_size: int | None = None, dtype=None, fast_trig: bool = True) -> RFStats:
    """Sufficient statistics of the random features of ``X``, computed in chunks.

    Parameters
    ----------
    X : array-like of shape (n_samples, n_input_features)
    y : array-like of shape (n_samples,) or None
        Labels; ``-1``/NaN (or ``None`` for all rows) mark unlabeled rows.
    sample_domain : array-like of shape (n_samples,) or None
        Domain ids (positive = source, negative = target); inferred from ``y`` if omitted
        (labeled -> 1, unlabeled -> -2); with neither, every row is domain 1.
    omega : ndarray of shape (n_input_features, N)
        Frequencies from :func:`shiftlearn.kernels.rff_weights` (``2N`` feature columns).
    chunk_size : int or None
        Rows per chunk (``None``: about 64 MB of features per chunk). Memory is
        ``O(chunk_size * 2N + (2N)^2)`` whatever ``n``.
    dtype : {None, numpy.float32, numpy.float64}
        Precision of the feature map and of the per-chunk products (``None``: ``X``'s dtype if
        float32, else float64). Sums are accumulated in float64 either way.
    fast_trig : bool, default=True
        Evaluate cos/sin in float32 (:func:`shiftlearn.kernels.cos_sin_into`: ~10x faster than
        float64, absolute error < 1e-5 per feature, far below the random features' own
        Monte-Carlo error ~ 1/sqrt(N)); the phases ``X Omega`` and every product and sum stay
        in ``dtype``. ``RFTCA``/``RFSCA`` transform with the same features. ``False``: float64
        cos/sin.

    Returns
    -------
    RFStats

    Examples
    --------
    >>> import numpy as np
    >>> from shiftlearn.kernels import rff_weights
    >>> X = np.random.default_rng(0).normal(size=(30, 4))
    >>> st = rf_stats(X, sample_domain=np.r_[np.ones(15), -np.ones(15)].astype(int),
    ...               omega=rff_weights(4, 10, 1.0, random_state=0), chunk_size=7)
    >>> st.n_samples, st.total_moment().shape
    (30, (20, 20))
    """
    if omega is None:
        raise ValueError("rf_stats needs the frequencies omega (kernels.rff_weights).")
    X = check_X(X)
    n = X.shape[0]
    if X.shape[1] != omega.shape[0]:
        raise ValueError(f"X has {X.shape[1]} features but omega was drawn for "
                         f"{omega.shape[0]}.")
    if y is not None:
        y = label_array(y)
        if y.shape[0] != n:
            raise ValueError(f"X has {n} rows but y has {y.shape[0]} entries.")
    if sample_domain is None:
        if y is not None:
            check_unlabeled_convention(y, None)
        sd = infer_sample_domain(y) if y is not None else np.ones(n, np.int64)
    else:
        sd = check_sample_domain(sample_domain, n)
        if y is not None:
            check_unlabeled_convention(y, sd)
    if dtype is None:
        dtype = np.float32 if X.dtype == np.float32 else np.float64
    om = np.asarray(omega, dtype=dtype)
    N = omega.shape[1]
    D = 2 * N
    itemsize = np.dtype(dtype).itemsize
    if chunk_size is None:   # ~64 MB of features per chunk (as kernels.rff_chunks), >= 256 rows
        chunk_size = max(256, DEFAULT_CHUNK_BYTES // (itemsize * D))
    elif isinstance(chunk_size, bool) or not isinstance(chunk_size, Integral) or chunk_size < 1:
        raise ValueError(f"chunk_size must be a positive integer (rows per chunk) or None "
                         f"(about 64 MB of features per chunk), got {chunk_size!r}.")
    # One pass over the rows: each chunk's features U = [cos(X Omega), sin(X Omega)] are
    # computed once into one contiguous (rows, 2N) buffer, *unscaled* (z = U / sqrt(N)), and
    # feed every statistic before the next chunk: the moments with one BLAS SYRK per row group
    # (``U.T @ U`` on contiguous row views), added in place into float64 accumulators; the
    # row sums as BLAS products in the same dtype as the SYRK, accumulated in float64. The
    # 1/N and 1/sqrt(N) scalings are applied once to the D x D / D-vector totals at the end,
    # never to the rows.
    acc = _StatsAccumulator(D)
    lab_all = None if y is None else ~unlabeled_mask(y)
    buf = None
    for start in range(0, n, chunk_size):
        stop = min(start + chunk_size, n)
        Xc = np.asarray(X[start:stop], dtype=dtype)
        if buf is None or buf.shape[0] != stop - start:
            buf = np.empty((stop - start, D), dtype=dtype)
        rff_map(Xc, om, fast_trig=fast_trig, out=buf, scaled=False)   # P = X Omega in place
        acc.add(buf, None if y is None else y[start:stop],
                None if lab_all is None else lab_all[start:stop], sd[start:stop])
    return acc.finish(scale=1.0 / np.sqrt(N), fingerprint=omega_fingerprint(omega))


class _StatsAccumulator:
    """In-place float64 accumulation of :class:`RFStats` sums over chunks of *unscaled*
    features ``U`` (``z = scale * U``); internal to :func:`rf_stats` and
    :meth:`RFStats.from_features` (one block, ``scale=1``)."""

    def __init__(self, D: int):
        self.D = D
        self.Ml = None          # sum U^T U over labeled rows (float64, exactly symmetric)
        self.Mu = None          # ... over unlabeled rows
        self.dom = (np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros((0, D)))
        self.cls = None         # (labels, counts, sums of U); label dtype from the data

    @staticmethod
    def _moment_into(acc, U):
        if U.shape[0] == 0:
            return acc
        P = U.T @ U                                  # numpy dispatches A^T A to SYRK
        if acc is None:
            return P if P.dtype == np.float64 else P.astype(np.float64)
        acc += P
        return acc

    @staticmethod
    def _groups(U, labels):
        ids, inv = np.unique(labels, return_inverse=True)
        counts = np.bincount(inv, minlength=ids.size).astype(np.int64)
        return ids, counts, _group_sums(U, inv, ids.size)

    def add(self, U, y, lab, sd):
        self.dom = _merge_groups(*self.dom, *self._groups(U, np.asarray(sd, dtype=np.int64)))
        if lab is None or not lab.any():
            self.Mu = self._moment_into(self.Mu, U)
            return
        yl = _labeled_values(y, lab)
        Ul = take_rows(U, lab)
        part = self._groups(Ul, yl)
        self.cls = part if self.cls is None else _merge_groups(*self.cls, *part)
        self.Ml = self._moment_into(self.Ml, Ul)
        if not lab.all():
            self.Mu = self._moment_into(self.Mu, take_rows(U, ~lab))

    def finish(self, scale: float, fingerprint: str) -> RFStats:
        D, s2 = self.D, scale * scale
        Ml = np.zeros((D, D)) if self.Ml is None else self.Ml
        Mu = np.zeros((D, D)) if self.Mu is None else self.Mu
        Ml *= s2
        Mu *= s2
        doms, dcnt, dsums = self.dom
        if self.cls is None:
            classes, ccnt, csums = np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros((0, D))
        else:
            classes, ccnt, csums = self.cls
        return RFStats(D, doms, dcnt, scale * dsums, classes, ccnt, scale * csums, Ml, Mu,
                       fingerprint)


def _labeled_values(y, lab: np.ndarray) -> np.ndarray:
    """The labels of the rows ``lab``, integral float labels read as integers (how the
    statistics group rows by class, on every route)."""
    yl = np.asarray(y)[lab]
    if yl.dtype.kind == "f" and np.all(yl == np.round(yl)):
        yl = yl.astype(np.int64)
    return yl


def device_chunk_rows(n_columns: int, itemsize: int, chunk_size: int | None) -> int:
    """Rows of one chunk of random features on a device: ``chunk_size``, else about 256 MB of
    features (four times the host's chunk: device memory is fast and launches cost), at least
    256 rows."""
    return chunk_size or max(256, 4 * DEFAULT_CHUNK_BYTES // (itemsize * n_columns))


def _label_groups(y: np.ndarray | None, lab: np.ndarray | None):
    """``(classes, inverse over all rows with -1 on unlabeled rows)`` as the accumulator
    groups labels (integral float labels read as integers); ``None`` without labeled rows."""
    if lab is None or not lab.any():
        return None
    classes, inv = np.unique(_labeled_values(y, lab), return_inverse=True)
    full = np.full(lab.shape[0], -1, dtype=np.int64)
    full[lab] = inv
    return classes, full


def rf_stats_array_api(X, y, sd: np.ndarray, omega: np.ndarray, *,
                       chunk_size: int | None = None) -> RFStats:
    """:func:`rf_stats` for ``X`` of another array-API namespace (torch, CuPy, ...): the
    features, their products and the float64 sums are computed on ``X``'s device (features
    and products in ``X``'s dtype), and only the ``2N x 2N`` totals come back to the host as
    an :class:`RFStats` of NumPy arrays. ``y`` (``None`` or host labels, ``-1``/NaN
    unlabeled) and ``sd`` (validated host domain ids) are host arrays; ``chunk_size``: rows per
    chunk (``None``: about 256 MB of features). Cost ``O(n d N + n N^2)`` on the device.
    """
    import array_api_compat

    xp = array_api_compat.array_namespace(X)
    n, N = X.shape[0], omega.shape[1]
    D = 2 * N
    itemsize = 4 if X.dtype == xp.float32 else 8
    rows = device_chunk_rows(D, itemsize, chunk_size)
    om = from_numpy(omega, X)
    f64 = xp.float64
    lab = None if y is None else ~unlabeled_mask(y)
    dom_ids, dom_inv = np.unique(np.asarray(sd, dtype=np.int64), return_inverse=True)
    groups = _label_groups(y, lab)
    dom_dev = from_numpy(dom_inv, X)
    dom_range = from_numpy(np.arange(dom_ids.size), X)
    lab_dev = None if lab is None else from_numpy(lab, X)
    cls_dev = None if groups is None else from_numpy(groups[1], X)
    cls_range = None if groups is None else from_numpy(np.arange(groups[0].size), X)
    zeros = [xp.zeros((D, D), dtype=f64, device=array_api_compat.device(X)) for _ in range(2)]
    Ml, Mu = zeros
    dsums = xp.zeros((dom_ids.size, D), dtype=f64, device=array_api_compat.device(X))
    csums = None if groups is None else xp.zeros((groups[0].size, D), dtype=f64,
                                                 device=array_api_compat.device(X))
    for s in range(0, n, rows):
        e = min(n, s + rows)
        U = rff_map(X[s:e, :], om, scaled=False)
        onehot = xp.astype(dom_dev[None, s:e] == dom_range[:, None], U.dtype)
        dsums += xp.astype(onehot @ U, f64)
        part = None if lab is None else lab[s:e]
        if part is None or not part.any():
            Mu += xp.astype(U.T @ U, f64)
            continue
        mask = xp.astype(lab_dev[s:e], U.dtype)[:, None]
        Ul = U if part.all() else U * mask
        Ml += xp.astype(Ul.T @ Ul, f64)
        if not part.all():
            Uu = U - Ul
            Mu += xp.astype(Uu.T @ Uu, f64)
        onehot = xp.astype(cls_dev[None, s:e] == cls_range[:, None], U.dtype)
        csums += xp.astype(onehot @ U, f64)
    scale = 1.0 / np.sqrt(N)
    dcnt = np.bincount(dom_inv, minlength=dom_ids.size).astype(np.int64)
    if groups is None:
        classes, ccnt, cs = np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros((0, D))
    else:
        classes = groups[0]
        ccnt = np.bincount(groups[1][lab], minlength=classes.size).astype(np.int64)
        cs = scale * to_numpy(csums)
    Mln, Mun = to_numpy(Ml) / N, to_numpy(Mu) / N
    return RFStats(D, dom_ids, dcnt, scale * to_numpy(dsums), classes, ccnt, cs,
                   sym(Mln), sym(Mun), omega_fingerprint(omega))
