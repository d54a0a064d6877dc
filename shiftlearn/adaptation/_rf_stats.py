"""Sufficient statistics of random Fourier features, and the RF-TCA / RF-SCA solvers on them.

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

import hashlib
from dataclasses import dataclass, field

import numpy as np
from scipy.linalg import cho_factor, eigh

from .._validation import check_sample_domain, check_X, infer_sample_domain, unlabeled_mask
from ._base import check_n_components
from ._eigen import (
    _BLOCK,
    _add_gram_,
    _rank_one_krylov,
    _sym,
    _sym_,
    resolve_eigen_solver,
    solve_pencil,
)

__all__ = [
    "RFStats",
    "rf_stats",
    "rfsca_from_stats",
    "rftca_from_stats",
    "solve_pencil",
]


def omega_fingerprint(omega: np.ndarray) -> str:
    """Short hash of the frequencies, so that statistics of different feature maps never mix."""
    return hashlib.sha1(np.ascontiguousarray(omega, dtype=np.float64).tobytes()).hexdigest()[:16]


@dataclass
class RFStats:
    """Additive sufficient statistics of random features for RF-TCA and RF-SCA.

    All fields are *sums* (never means) over a set of rows, so the statistics of disjoint row
    sets merge with ``+``. Build them with :func:`rf_stats` (from data) or
    :meth:`from_features` (from an already mapped block ``Z``).

    Attributes
    ----------
    n_components : int
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

    n_components: int
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
    def empty(cls, n_components: int, fingerprint: str = "", label_dtype=np.int64) -> RFStats:
        D = int(n_components)
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
        sd = np.asarray(sample_domain, dtype=np.int64)
        doms, dinv = np.unique(sd, return_inverse=True)
        dcounts = np.bincount(dinv, minlength=doms.size).astype(np.int64)
        dsums = _group_sums(Z, dinv, doms.size)
        if y is None:
            lab = np.zeros(Z.shape[0], dtype=bool)
        else:
            lab = ~unlabeled_mask(y)
        D = Z.shape[1]
        if lab.any():
            yl = np.asarray(y)[lab]
            if yl.dtype.kind == "f" and np.all(yl == np.round(yl)):
                yl = yl.astype(np.int64)
            classes, cinv = np.unique(yl, return_inverse=True)
            Zl = _rows(Z, lab)
            csums = _group_sums(Zl, cinv, classes.size)
            ccounts = np.bincount(cinv, minlength=classes.size).astype(np.int64)
            Ml = np.asarray(Zl.T @ Zl, dtype=np.float64)
        else:
            classes = np.zeros(0, np.int64)
            csums, ccounts = np.zeros((0, D)), np.zeros(0, np.int64)
            Ml = np.zeros((D, D))
        if lab.all():
            Mu = np.zeros((D, D))
        else:
            Zu = _rows(Z, ~lab)
            Mu = np.asarray(Zu.T @ Zu, dtype=np.float64)
        return cls(D, doms, dcounts, dsums, classes, ccounts, csums, Ml, Mu, fingerprint)

    def __add__(self, other: RFStats) -> RFStats:
        if isinstance(other, int) and other == 0:   # so that sum(list_of_stats) works
            return self
        if not isinstance(other, RFStats):
            return NotImplemented
        if self.n_components != other.n_components:
            raise ValueError(f"Cannot merge RFStats with {self.n_components} and "
                             f"{other.n_components} random-feature columns.")
        if self.fingerprint and other.fingerprint and self.fingerprint != other.fingerprint:
            raise ValueError("Cannot merge RFStats computed with different frequencies Omega "
                             "(use the same bandwidth, n_features and random_state everywhere).")
        doms, dcounts, dsums = _merge_groups(self.domains, self.domain_counts, self.domain_sums,
                                             other.domains, other.domain_counts,
                                             other.domain_sums)
        classes, ccounts, csums = _merge_groups(self.classes, self.class_counts, self.class_sums,
                                                other.classes, other.class_counts,
                                                other.class_sums)
        return RFStats(self.n_components, doms, dcounts, dsums, classes, ccounts, csums,
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
        C = np.empty((self.n_components,) * 2)
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
            return np.zeros(self.n_components)
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
        return _sym(dev.T @ dev / max(means.shape[0], 1))

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
        return _sym(Sb), _sym(Sw)


def _rows(Z: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """``Z[mask]`` without a copy when the selected rows are contiguous (the usual layout:
    sources then targets), so the big products run on views."""
    idx = np.flatnonzero(mask)
    if idx.size == Z.shape[0]:
        return Z
    if idx.size and idx[-1] - idx[0] + 1 == idx.size:
        return Z[idx[0]: idx[-1] + 1]
    return Z[idx]


def _group_sums(Z: np.ndarray, inv: np.ndarray, n_groups: int) -> np.ndarray:
    """Row sums of ``Z`` per group (a one-hot product: one BLAS call), in float64."""
    if n_groups == 1:
        return Z.sum(axis=0, dtype=np.float64)[None, :]
    if n_groups <= 4:                    # few groups (domains): views where rows are contiguous
        return np.stack([_rows(Z, inv == g).sum(axis=0, dtype=np.float64)
                         for g in range(n_groups)])
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
             chunk_size: int | None = None, dtype=None) -> RFStats:
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
        y = np.asarray(y)
        if y.shape[0] != n:
            raise ValueError(f"X has {n} rows but y has {y.shape[0]} entries.")
    if sample_domain is None:
        sd = infer_sample_domain(y) if y is not None else np.ones(n, np.int64)
    else:
        sd = check_sample_domain(sample_domain, n)
    if dtype is None:
        dtype = np.float32 if X.dtype == np.float32 else np.float64
    om = np.asarray(omega, dtype=dtype)
    N = omega.shape[1]
    D = 2 * N
    itemsize = np.dtype(dtype).itemsize
    if chunk_size is None:   # ~64 MB of features per chunk, at least 256 rows
        chunk_size = max(256, (64 * 2**20) // (itemsize * D))
    # One pass over the rows: each chunk's features U = [cos(X Omega), sin(X Omega)] are
    # computed once into one contiguous (rows, 2N) buffer, *unscaled* (z = U / sqrt(N)), and
    # feed every statistic before the next chunk: the moments with one BLAS SYRK per row group
    # (``U.T @ U`` on contiguous row views), added in place into float64 accumulators; the
    # row sums as float64 reductions. The 1/N and 1/sqrt(N) scalings are applied once to the
    # D x D / D-vector totals at the end, never to the rows.
    acc = _StatsAccumulator(D)
    lab_all = None if y is None else ~unlabeled_mask(y)
    buf = None
    for start in range(0, n, chunk_size):
        stop = min(start + chunk_size, n)
        Xc = np.asarray(X[start:stop], dtype=dtype)
        if buf is None or buf.shape[0] != stop - start:
            buf = np.empty((stop - start, D), dtype=dtype)
        np.matmul(Xc, om, out=buf[:, N:])          # P = X Omega, kept in the sine half
        np.cos(buf[:, N:], out=buf[:, :N])
        np.sin(buf[:, N:], out=buf[:, N:])
        acc.add(buf, None if y is None else y[start:stop],
                None if lab_all is None else lab_all[start:stop], sd[start:stop])
    return acc.finish(scale=1.0 / np.sqrt(N), fingerprint=omega_fingerprint(omega))


class _StatsAccumulator:
    """In-place float64 accumulation of :class:`RFStats` sums over chunks of *unscaled*
    features ``U`` (``z = scale * U``); internal to :func:`rf_stats`."""

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
        yl = np.asarray(y)[lab]
        if yl.dtype.kind == "f" and np.all(yl == np.round(yl)):
            yl = yl.astype(np.int64)
        Ul = _rows(U, lab)
        part = self._groups(Ul, yl)
        self.cls = part if self.cls is None else _merge_groups(*self.cls, *part)
        self.Ml = self._moment_into(self.Ml, Ul)
        if not lab.all():
            self.Mu = self._moment_into(self.Mu, _rows(U, ~lab))

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


# ---------------------------------------------------------------------------------------------
# solvers
# ---------------------------------------------------------------------------------------------
def _rftca_coefficients_cholesky(stats: RFStats, k: int, mu: float, d: np.ndarray,
                                 rank_tol: float):
    """``penalty="coefficients"`` without the full eigendecomposition of ``S = Z^T Z``.

    Any factor ``G`` with ``G G^T = S`` gives the same problem (``V = G a``, penalty
    ``||a||^2``); here ``G = U^T`` from the Cholesky factor of ``S + rho I`` with
    ``rho = rank_tol * max diag(S)`` (directions with ``S``-eigenvalue far below ``rho`` carry
    no kernel mass and are penalised by ``1 / rho`` instead of being dropped). The reduced
    scatter ``G^T C G = U S U^T - g g^T / n`` (``g = U s``) is applied as an operator, two
    triangular products and one product with ``S`` per block, inside block Krylov.
    Returns ``None`` (callers use the eigendecomposition) if the factor or Krylov fails.
    """
    D, n = stats.n_components, stats.n_samples
    S = _sym_(stats.total_moment())
    Sr = S.copy()
    Sr.flat[:: D + 1] += rank_tol * max(float(np.max(np.diag(S))), 1e-300)
    try:
        U, _ = cho_factor(Sr.T, lower=False, overwrite_a=True, check_finite=False)
    except np.linalg.LinAlgError:
        return None
    Ut = np.triu(U)                                  # explicit factor for BLAS products
    g = Ut @ (stats.domain_sums.sum(axis=0) / np.sqrt(max(n, 1)))

    def apply_A(X):                                  # (U S U^T - g g^T) X
        return Ut @ (S @ (Ut.T @ X)) - np.outer(g, g @ X)

    out = _rank_one_krylov(apply_A, (mu, Ut @ d), D, k)
    return None if out is None else (out[0], Ut.T @ out[1])


def _check_k(n_components, limit: int, why: str) -> int:
    return check_n_components(n_components, limit, why)


def _check_spectrum(w: np.ndarray, k: int, what: str) -> None:
    top = max(float(w[0]), 0.0)
    bad = np.nonzero(w <= 1e-10 * max(top, 1e-300))[0]
    if top <= 0 or bad.size:
        first = int(bad[0]) if bad.size else 0
        raise ValueError(f"Only {first} of the n_components={k} leading eigenvalues of {what} "
                         "are numerically non-zero (rank-deficient problem: duplicated or too "
                         "few points, or too many components); lower n_components.")


def rftca_from_stats(stats: RFStats, n_components: int = 30, mu: float = 1.0, *,
                     penalty: str = "features", eigen_solver: str = "auto",
                     rank_tol: float = 1e-10) -> tuple[np.ndarray, np.ndarray]:
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
        same ``mu`` as ``N`` grows. With the randomized solver it runs on a Cholesky factor of
        ``S + rho I`` (``S = Z^T Z``, ``rho = rank_tol * max diag(S)``) and block Krylov,
        with the dense solver in the eigenbasis of ``S`` (one full ``2N x 2N``
        eigendecomposition, directions with eigenvalue below ``rank_tol * max`` dropped);
        the two agree to the solver tolerance (tested).
    eigen_solver : {"auto", "dense", "randomized"}
        See :func:`solve_pencil`.
    rank_tol : float
        ``"coefficients"``: relative level below which directions of ``S`` carry no kernel
        mass (dropped by the dense solver, ridge ``rho`` of the randomized one).

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
    D, n = stats.n_components, stats.n_samples
    k = _check_k(n_components, min(D, n - 1), f"the centred total scatter of {n} rows in "
                 f"2 * n_features = {D} random features has rank <= {min(D, n - 1)}")
    d = stats.mmd_vector()
    if penalty == "features":
        w, V = solve_pencil(stats.total_scatter(), None, k, eigen_solver, rank_one=(mu, d),
                            overwrite=True)
    elif penalty == "coefficients":
        out = None
        if resolve_eigen_solver(eigen_solver, D, k) == "randomized":
            out = _rftca_coefficients_cholesky(stats, k, mu, d, rank_tol)
        if out is not None:
            w, V = out
            _check_spectrum(w, k, "the RF-TCA problem")
            return V, w
        s2, U = eigh(_sym_(stats.total_moment()), overwrite_a=True, check_finite=False)
        keep = s2 > rank_tol * max(s2[-1], 1e-300)
        if keep.sum() < k:
            raise ValueError(f"n_components={k} exceeds the numerical rank {int(keep.sum())} "
                             "of the random-feature kernel; lower n_components.")
        G = U[:, keep] * np.sqrt(s2[keep])          # V = G a  <=>  W = (orthonormal basis) a
        # G^T C G with C = S - s s^T / n and S = U diag(s2) U^T: diag(s2^2) - g g^T / n, so no
        # D^3 product is needed (g = G^T s).
        g = (G.T @ stats.domain_sums.sum(axis=0)) / np.sqrt(max(n, 1))
        Ch = _add_gram_(np.diag(s2[keep] ** 2), g[None, :], -1.0)
        dh = G.T @ d
        w, A = solve_pencil(Ch, None, k, eigen_solver, rank_one=(mu, dh), overwrite=True)
        V = G @ A
    else:
        raise ValueError(f"penalty must be 'features' or 'coefficients', got {penalty!r}.")
    _check_spectrum(w, k, "the RF-TCA problem")
    return V, w


def rfsca_from_stats(stats: RFStats, n_components: int = 10, beta: float = 0.5,
                     delta: float = 1.0, eps: float = 1e-5, *, domains: str = "ids",
                     supervised: bool = True, class_scatter_normalization: str = "n_s",
                     eigen_solver: str = "auto") -> tuple[np.ndarray, np.ndarray]:
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
    eigen_solver : {"auto", "dense", "randomized"}
        See :func:`solve_pencil`.

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
    D, n = stats.n_components, stats.n_samples
    limit = min(D, n - 1)
    why = f"the total scatter of {n} rows in 2 * n_features = {D} features has rank <= {limit}"
    if beta > 0:
        C_ = stats.classes.size
        if stats.n_labeled == 0:
            raise ValueError("beta > 0 needs labeled rows (y != -1); use beta=0 for "
                             "unsupervised SCA.")
        if C_ < 2:
            raise ValueError(f"Only one class ({stats.classes.tolist()}) among the labeled "
                             "rows: the between-class scatter needs at least 2 classes.")
        if beta == 1.0:
            limit = min(limit, C_ - 1)
            why = f"at beta=1 the numerator has rank <= n_classes - 1 = {C_ - 1}"
    k = _check_k(n_components, limit, why)
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
            _add_gram_(A, Fb, beta * norm / ns)
        M = stats.moment_labeled * (norm / ns)
        _add_gram_(M, Fw, -norm / ns)
    else:
        M = np.zeros((D, D))
    M.flat[:: D + 1] += 1.0 + eps
    if delta > 0:
        means = stats.domain_means(domains)
        _add_gram_(M, means - means.mean(axis=0), delta / max(means.shape[0], 1))
    w, V = solve_pencil(A, M, k, eigen_solver, overwrite=True)
    _check_spectrum(w, k, "the RF-SCA problem")
    return V, w
