"""RF-TCA and random-feature SCA: kernel subspace adaptation in time linear in ``n``.

The data enter only through the additive statistics of :mod:`._rf_stats` (computed in chunks),
the solvers work on ``2N x 2N`` matrices, and ``transform`` maps new points with the stored
frequencies and projection: no training data are kept and no matrix larger than
``2N x 2N`` is ever formed.

Small data (``n <= N``, half the ``2N`` columns): every scatter of the problem lies
in the span of the ``n`` feature rows, and the constraint's identity term restricted to an
orthonormal basis ``Q`` of that span is the identity, so the problem restricted to ``V = Q A``
has the same non-zero eigenvalues and eigenvectors (the rest of the space only holds zero
eigenvalues). ``fit`` then forms the features ``Z`` (``n x 2N``, smaller than one
``2N x 2N`` statistic), ``Z^T = Q R`` (thin QR), solves on the statistics of the ``n``
coordinates ``R^T`` and maps back with ``Q``: the same answer (tested against the full solve)
at ``O(n^2 N)`` instead of ``O(n N^2 + N^3)``.
The QR costs ``4 N n^2`` flops against ``4 n N^2`` for the full statistics plus the ``2N x 2N``
solve, so the reduction is used up to ``n = N``. ``keep_stats=True`` keeps the full ``2N x 2N``
statistics and so skips the reduction.

``n_features`` is the number of random *frequencies* ``N``; the random-feature map has ``2N``
columns (cosines and sines, as in the RF-TCA paper), so ``n_features=1000`` means 2,000
feature columns and ``2000 x 2000`` eigenproblems.
"""

from __future__ import annotations

from numbers import Integral, Real

import numpy as np
import scipy.linalg

from .._array_api import from_numpy, is_foreign_array
from .._constraints import BandwidthSpec, Interval, Options, StrOptions, check_params
from .._dask import dask_rows, is_dask
from .._resources import check_dense_memory
from .._validation import check_labels_beside_dask
from ..kernels import (
    BANDWIDTH_RULES,
    DEFAULT_CHUNK_BYTES,
    KERNELS,
    RFF_KERNELS,
    RFF_SAMPLINGS,
    kernel_feature_factor,
    omega_fingerprint,
    rff_chunks,
    rff_map,
    rff_weights,
)
from ._base import (
    BaseSubspaceTransformer,
    clip_n_components,
    resolve_tca_mu,
    whitening_scale,
)
from ._dask import _bandwidth_rows, fit_dask, rf_stats_dask, transform_dask
from ._memory import FitMemory, seed_key
from ._rf_solvers import (
    rfsca_from_stats,
    rfsca_max_components,
    rftca_from_stats,
    rftca_max_components,
)
from ._rf_stats import (
    RFStats,
    device_chunk_rows,
    rf_stats,
    rf_stats_array_api,
)

__all__ = ["RFSCA", "RFTCA", "RFStats", "rf_stats", "rfsca_from_stats", "rftca_from_stats"]


#: Peak numpy memory of a fit in float64 2N x 2N matrices (tracemalloc, N = 300-600: 8.1 with
#: the dense solver, 10.1 for penalty="coefficients", whose dense path also keeps an
#: eigendecomposition of Z^T Z; the ARPACK solver needs less but may fall back to dense),
#: and of the n <= N row-space fit in float64 n x 2N matrices (3.0: the features, their float64
#: transpose and Q) plus n x n ones (up to 6: statistics and pencils in the n coordinates;
#: measured 5.3-6.0 n x 2N at n = N); tests/adaptation/test_rf.py checks them.
#: Peak memory of an ``RFTCA(exact=True)`` fit in float64 n x n matrices (kernel, its
#: eigendecomposition's workspace and vectors, the features Phi and the map P)
EXACT_FIT_MATRICES = 5.0

FIT_MATRICES = {"full": 10.2, "row_space": 3.1, "row_space_square": 6.5}


_RF_CONSTRAINTS: dict = {
    "n_components": [Interval(Integral, 1, None, closed="left")],
    "n_features": [Interval(Integral, 1, None, closed="left")],
    "bandwidth": [BandwidthSpec(BANDWIDTH_RULES)],
    "sampling": [StrOptions(set(RFF_SAMPLINGS))],
    "eigen_solver": [StrOptions({"auto", "dense", "arpack"})],
    "random_state": ["random_state", np.random.Generator],
    "chunk_size": [Interval(Integral, 1, None, closed="left"), None],
    "dtype": [StrOptions({"float32", "float64"}), Options(type, {np.float32, np.float64}), None],
    "keep_stats": ["boolean"],
    "kernel": [StrOptions(set(RFF_KERNELS))],
    "memory": [FitMemory, None],
}


class _RFBase(BaseSubspaceTransformer):
    """Shared parts: bandwidth, frequencies, statistics, chunked transform.

    ``fit_from_stats(stats, omega=None)`` solves from statistics computed elsewhere (merged over
    machines or clients). The statistics alone cannot embed new points (they hold a
    fingerprint of the frequencies, not the frequencies), so the estimator must know the
    frequencies they were computed with: ``omega=`` (checked against the fingerprint), or the
    ``omega_`` of an earlier ``fit`` (checked too). Without either it is a ``ValueError`` that
    says so, rather than a model that cannot ``transform``.
    """

    _component_columns = ("components_",)   # nested eigenvectors: ``truncate(k)`` is exact
    _array_api_support = True

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.transformer_tags.preserves_dtype = ["float64", "float32"]
        return tags

    def _use_frequencies(self, stats: RFStats, omega) -> None:
        """Check (and with ``omega`` given, set) the frequencies that ``stats`` came from."""
        name = type(self).__name__
        if omega is not None:
            omega = np.asarray(omega, dtype=np.float64)
            if omega.ndim != 2 or not np.all(np.isfinite(omega)):
                raise ValueError(f"{name}.fit_from_stats: omega must be a finite 2-D array of "
                                 f"shape (n_features_in, n_features), got shape {omega.shape}.")
            if omega.shape[1] != self.n_features:
                raise ValueError(f"{name}.fit_from_stats: omega has {omega.shape[1]} "
                                 f"frequencies but n_features={self.n_features}; set "
                                 f"n_features={omega.shape[1]}.")
        elif hasattr(self, "omega_"):
            omega = self.omega_
        else:
            raise ValueError(
                f"{name}.fit_from_stats: this {name} has no frequencies (omega_), so it could "
                "not embed new points. Pass the frequencies the statistics were computed with, "
                f"{name}(...).fit_from_stats(stats, omega=om) where om is the array given to "
                "rf_stats (e.g. shiftlearn.kernels.rff_weights(n_features_in, n_features, "
                "sigma, random_state)), or call fit(X, ...) first.")
        if 2 * omega.shape[1] != stats.dim:
            raise ValueError(f"{name}.fit_from_stats: the statistics have "
                             f"{stats.dim} random-feature columns but the frequencies "
                             f"give {2 * omega.shape[1]}: they come from another feature map.")
        fp = omega_fingerprint(omega)
        if stats.fingerprint and stats.fingerprint != fp:
            raise ValueError(f"{name}.fit_from_stats: the statistics were computed with "
                             "different frequencies than this estimator's (fingerprints "
                             f"{stats.fingerprint} vs {fp}); compute them with the same omega.")
        if omega is not getattr(self, "omega_", None):
            self.omega_ = omega
            self.n_features_in_ = omega.shape[0]
            self.sigma_ = None          # the bandwidth is folded into the given omega
            if hasattr(self, "feature_names_in_"):
                del self.feature_names_in_
        self.fingerprint_ = fp

    def fit(self, X, y=None, sample_domain=None):
        """Fit the adapter.

        Parameters
        ----------
        X : array-like or dask.array.Array of shape (n_samples, n_features)
            All training rows (sources and, for domain adaptation, the unlabeled targets).
            A Dask array is never gathered: statistics per row block where the blocks live,
            summed, the small problem solved here (same model as numpy input; see
            docs/random_features.md, *Dask*).
        y : array-like or dask.array.Array of shape (n_samples,), optional
            Labels; ``-1`` (or NaN) marks unlabeled rows.
        sample_domain : array-like or dask.array.Array of shape (n_samples,), optional
            Domain ids, positive = source, negative = target; inferred from ``y`` if omitted.

        Returns
        -------
        self
        """
        if is_dask(X):      # checked here; the statistics per row block: adaptation/_dask
            check_params(self)
            X = dask_rows(X)
            y, sample_domain = check_labels_beside_dask(y, sample_domain, X.shape[0])
            return fit_dask(self, X, y, sample_domain)
        return super().fit(X, y, sample_domain)

    def fit_transform(self, X, y=None, sample_domain=None):
        if is_dask(X):
            return self.fit(X, y, sample_domain).transform(X)
        return super().fit_transform(X, y, sample_domain)

    fit_transform.__doc__ = BaseSubspaceTransformer.fit_transform.__doc__

    def transform(self, X):
        """Project ``X`` onto the learned components, shape ``(n_samples, n_components_)``;
        a Dask array gives a lazy Dask array (one task per row block)."""
        if is_dask(X):
            return transform_dask(self, X)
        return super().transform(X)

    def _compute_dtype(self, X):
        if self.dtype is None:
            return np.float32 if X.dtype == np.float32 else np.float64
        return np.dtype(self.dtype).type

    def _fit_stats(self, X, y, sd) -> tuple[RFStats, np.ndarray | None, tuple | None]:
        """The statistics, ``None`` or the basis ``Q`` they are coordinates in (``n < 2N``,
        see the module docstring), and their ``memory`` key (``None``: not remembered).

        The key holds the rows (a hash of ``X``, ``y``, ``sample_domain``), the frequencies'
        fingerprint (so every parameter of the feature map is in it) and what changes the
        arithmetic (dtype, chunks, the row-space path); frequencies drawn without an int
        ``random_state`` are never drawn again, so their statistics are not kept."""
        n, D = X.shape[0], 2 * self.n_features
        name = type(self).__name__
        if not (isinstance(self.kernel, str) and self.kernel in RFF_KERNELS):
            raise ValueError(
                f"{name}(kernel={self.kernel!r}) needs exact=True: random Fourier features "
                f"exist for the shift-invariant kernels {RFF_KERNELS} only. Use one of them, "
                f"or {name}(exact=True, kernel=...) to solve on the exact kernel (n x n).")
        advice = ("Lower n_features (the random-feature problem needs about 10 float64 "
                  "2 n_features x 2 n_features matrices, whatever the number of rows).")
        if is_foreign_array(X):     # another namespace: features and sums on X's device
            check_dense_memory(D, D, FIT_MATRICES["full"] + X.shape[1] * self.n_features
                               / (D * D), f"{name}.fit (n_features={self.n_features})", "",
                               advice=advice)
            self.sigma_ = self._resolve_sigma(X, self.kernel)
            self.omega_, self.fingerprint_ = self._frequencies(
                None, X.shape[1], self.n_features, self.sigma_, self.random_state,
                sampling=self.sampling, kernel=self.kernel)
            return rf_stats_array_api(X, y, sd, self.omega_, chunk_size=self.chunk_size), \
                None, None
        row_space = n <= self.n_features and not self.keep_stats
        omega_part = X.shape[1] * self.n_features          # the frequencies themselves
        if row_space:       # checked before anything of size n_features is drawn
            check_dense_memory(n, D, FIT_MATRICES["row_space"] + FIT_MATRICES["row_space_square"]
                               * n / D + omega_part / (n * D), f"{name}.fit on {n} rows", "",
                               advice=advice)
        else:
            check_dense_memory(D, D, FIT_MATRICES["full"] + omega_part / (D * D),
                               f"{name}.fit (n_features={self.n_features})", "", advice=advice)
        dask_x = is_dask(X)             # Dask: no memory (hashing X would read it all)
        mem = self.memory if seed_key(self.random_state) is not None and not dask_x else None
        self._keep_features = mem is not None      # transform's blocks of Dask X: not kept
        rows = None if mem is None else mem.fingerprint(X)
        self.sigma_ = self._resolve_sigma(_bandwidth_rows(X, name, self.bandwidth) if dask_x else X,
                                          self.kernel, rows_key=rows)
        self.omega_, self.fingerprint_ = self._frequencies(
            mem, X.shape[1], self.n_features, self.sigma_, self.random_state,
            sampling=self.sampling, kernel=self.kernel)
        dt = self._compute_dtype(X)
        key = None
        if mem is not None:
            key = ("rf-stats", mem.fingerprint(rows, y, sd), self.fingerprint_,
                   np.dtype(dt).str, self.chunk_size, row_space)
            hit = mem.get(key)
            if hit is not None:
                return (*hit, key)
        if row_space:
            Q, R = self._row_space_qr(mem, rows, X, dt)
            out = RFStats.from_features(R.T, y, sd), Q
        else:
            stats = rf_stats_dask if dask_x else rf_stats      # Dask: per block, summed
            out = stats(X, y, sd, self.omega_, chunk_size=self.chunk_size, dtype=dt), None
        if key is not None:
            mem.put(key, out)
        return (*out, key)

    def _features_key(self, rows: str, dt) -> tuple:
        return ("rf-features", rows, self.fingerprint_, np.dtype(dt).str)

    def _row_space_qr(self, mem, rows, X, dt) -> tuple[np.ndarray, np.ndarray]:
        """``Q, R`` of the thin QR of ``Z^T`` (``Z``: the training rows' features).

        Neither depends on the labels nor the domains, so with ``memory`` they are kept under
        the rows and the frequencies: the fits of one fold with other labels (circular
        validation's reverse fits) and with other settings share them, and the features stay
        there for :meth:`transform` of the same rows."""
        qr_key = None if mem is None else ("rf-row-space", rows, self.fingerprint_,
                                           np.dtype(dt).str)
        hit = None if qr_key is None else mem.get(qr_key)
        if hit is not None:
            return hit
        Z = rff_map(np.asarray(X, dtype=dt), self.omega_.astype(dt, copy=False),
                    fast_trig=True)                      # the features transform uses
        Q, R = scipy.linalg.qr(Z.T.astype(np.float64, copy=False), mode="economic",
                               check_finite=False)
        if qr_key is not None:
            mem.put(self._features_key(rows, dt), Z)
            mem.put(qr_key, (Q, R))
        return Q, R

    def _kept_features(self, X, dt):
        """The features of ``X`` kept in ``memory`` (``None`` when not kept); with ``memory``,
        features of at most one chunk of rows are computed once and kept (the same arithmetic
        as the chunked loop, which takes such rows in one chunk)."""
        mem = self.memory
        if mem is None or not getattr(self, "_keep_features", False) or is_dask(X) or \
                X.shape[0] > (self.chunk_size or       # one chunk of rff_chunks: same bits
                              max(1, DEFAULT_CHUNK_BYTES // (8 * 2 * self.n_features))):
            return None
        key = self._features_key(mem.fingerprint(X), dt)
        Z = mem.get(key)
        if Z is None:
            Z = rff_map(np.asarray(X, dtype=dt), self.omega_.astype(dt, copy=False),
                        fast_trig=True)
            mem.put(key, Z)
        return Z

    @staticmethod
    def _frequencies(mem, *args, **kwargs) -> tuple[np.ndarray, str]:
        """``rff_weights(*args, **kwargs)`` and its fingerprint, remembered in ``mem`` under
        exactly those arguments (drawing 1,000 frequencies in 800 dimensions and hashing them
        costs about as much as a small fit's solve)."""
        key = None if mem is None else ("rf-frequencies", repr(args), repr(sorted(kwargs.items())))
        hit = None if key is None else mem.get(key)
        if hit is not None:
            return hit[0].copy(), hit[1]    # each fitted estimator owns its omega_
        omega = rff_weights(*args, **kwargs)
        fp = omega_fingerprint(omega)
        if key is not None:
            mem.put(key, (omega.copy(), fp))
        return omega, fp

    def _fit(self, X, y, sample_domain):
        self._solve(*self._fit_stats(X, y, sample_domain))

    def _leading(self, key, k: int, limit: int, solve):
        """``solve(k) -> (V, w)``, or a truncation of a remembered solve for more components
        (``key``: the statistics' memory key, the method and the solver's parameters;
        ``None``: nothing remembered; ``limit``: the most components the problem allows)."""
        if key is None or self.memory is None:
            return solve(k)
        w, V = self.memory.nested_solve(key, k, lambda k: solve(k)[::-1],
                                        family=type(self).__name__, limit=limit)
        return V, w

    def fit_from_stats(self, stats: RFStats, omega=None):
        """Solve from precomputed statistics (e.g. merged over machines or clients).

        Parameters
        ----------
        stats : RFStats
            Statistics of the training rows (:func:`rf_stats`, summed with ``+``).
        omega : ndarray of shape (n_features_in, n_features) or None
            The frequencies ``stats`` were computed with (checked against the statistics'
            fingerprint); they become ``omega_`` (``n_features_in_`` follows, ``sigma_`` is
            ``None``). ``None`` uses the ``omega_`` of an earlier :meth:`fit`; an estimator
            with neither raises a ``ValueError`` (it could not ``transform``).

        Returns
        -------
        self
        """
        check_params(self)
        self._use_frequencies(stats, omega)
        D = stats.dim                # the statistics' two moments already exist
        check_dense_memory(D, D, FIT_MATRICES["full"] - 2, f"{type(self).__name__}"
                           f".fit_from_stats (n_features={D // 2})", "",
                           advice="Use fewer random features (n_features).")
        return self._solve(stats, None)

    def _transform_array_api(self, X, center, scale):
        import array_api_compat

        xp = array_api_compat.array_namespace(X)
        if self.dtype is not None:
            X = xp.astype(X, xp.float32 if np.dtype(self.dtype) == np.float32 else xp.float64)
        om = from_numpy(self.omega_, X)
        P = from_numpy(self.components_ * scale[None, :], X)
        itemsize = 4 if X.dtype == xp.float32 else 8
        rows = device_chunk_rows(2 * self.omega_.shape[1], itemsize, self.chunk_size)
        n = X.shape[0]
        out = xp.concat([rff_map(X[s:min(s + rows, n), :], om) @ P
                         for s in range(0, n, rows)], axis=0)
        if center is not None:
            out -= from_numpy(center @ self.components_ * scale, X)[None, :]
        return out

    def _transform(self, X):
        center, scale = self._transform_terms()
        if is_foreign_array(X):
            return self._transform_array_api(X, center, scale)
        dt = self._compute_dtype(X)
        om = self.omega_.astype(dt, copy=False)
        P = (self.components_ * scale[None, :]).astype(dt, copy=False)
        out = np.empty((X.shape[0], P.shape[1]), dtype=X.dtype)
        kept = self._kept_features(X, dt)
        chunks = [(slice(None), kept)] if kept is not None else \
            rff_chunks(X, om, self.chunk_size, fast_trig=True)             # as rf_stats
        for sl, Z in chunks:
            out[sl] = Z @ P
        if center is not None:
            out -= (center @ self.components_ * scale).astype(out.dtype)
        return out

    def _set_solution(self, stats, V, w):
        self.components_ = V
        self.eigenvalues_ = w
        self.n_components_ = V.shape[1]
        self.stats_ = stats if self.keep_stats else None


class RFTCA(_RFBase):
    """Random-feature Transfer Component Analysis (RF-TCA, Feng, Wang et al.).

    TCA (Pan et al.) with the kernel (Gaussian by default; ``kernel=``) replaced by its random
    Fourier features ``z(x) = N^{-1/2}[cos(Omega^T x); sin(Omega^T x)]``: the projection ``V``
    (``2N x m``) has leading eigenvectors of ``C v = lam (I + mu d d^T) v`` with ``C`` the
    centred total scatter of the features and ``d`` the difference of the source and target
    feature means. ``fit`` costs ``O(n N d + n N^2 + N^3)`` time and ``O(chunk N + N^2)``
    memory.

    ``exact=True`` solves the same problem with the exact feature map of the kernel, ``Phi``
    with ``Phi Phi^T = K`` (:func:`~shiftlearn.kernels.kernel_feature_factor`), the limit of
    the random features as ``N`` grows: with the paper's ``penalty="features"`` this is the
    RF-TCA paper's **R-TCA** (Section III-B: ``min tr(W^T K l l^T K W) + gamma tr(W^T K W)``
    s.t. ``W^T K H K W = I``, leading eigenvectors of ``(gamma K + K l l^T K)^{-1} K H K``),
    and with ``penalty="coefficients"`` it is exact TCA (:class:`~shiftlearn.adaptation.TCA`,
    tested equal). It forms the ``n x n`` kernel and its eigendecomposition (``O(n^3)``), keeps
    the training rows and maps new points with their kernel rows, ``k_x^T P V``; it takes any
    kernel of :func:`~shiftlearn.kernels.kernel_matrix` or a callable. (R-TCA is the
    ``N -> infinity`` limit of RF-TCA, not its ``gamma -> 0`` limit: as ``gamma -> 0`` every
    variant removes the source-target mean direction completely; see
    docs/random_features.md, Remark 3.)

    Parameters
    ----------
    n_components : int, default=30
        Output dimension ``m``.
    mu : float, default=1.0
        Weight of the MMD term, as in Pan et al.; the RF-TCA paper's weight of the
        regulariser, ``gamma``, is ``1 / mu``.
    n_features : int, default=1000
        Number of random frequencies ``N`` (``2N`` feature columns).
    bandwidth : float or str (a rule of BANDWIDTH_RULES, "<f>*<rule>"), default="median"
        Kernel bandwidth ``sigma`` (``exp(-||a-b||^2 / (2 sigma^2))`` for ``"rbf"``) or the rule
        that sets it from all training rows (source + target; the median uses a seeded
        1,000-row subsample; rules per kernel: :func:`~shiftlearn.kernels.median_heuristic`).
    sampling : {"gaussian", "orthogonal"}, default="gaussian"
        How the frequencies are drawn (:func:`~shiftlearn.kernels.rff_weights`): i.i.d.
        Gaussian, as in the RF-TCA paper, or orthogonal random features, whose kernel estimate
        has about half the error at the same ``n_features`` on real data (so RF-TCA tracks the
        exact TCA more closely; see docs/random_features.md).
    scaling : {"eigh", "constraint"}, default="eigh"
        Column scale of ``V``, as in the exact :class:`~shiftlearn.adaptation.TCA`: ``"eigh"``
        keeps the solver's ``V^T (I + mu d d^T) V = I`` (component ``j`` has variance
        ``lambda_j``), ``"constraint"`` rescales to ``V^T C V = I`` (whitened).
    penalty : {"features", "coefficients"}, default="features"
        ``"features"``: the RF-TCA paper's Algorithm 1 (penalty ``||V||^2``; tends to R-TCA).
        ``"coefficients"``: Pan's ``||W||^2`` on the kernel coefficients, exact TCA with the
        random-feature kernel (tends to exact TCA with the same ``mu``; one extra Cholesky
        factor of ``Z^T Z``, or a full eigendecomposition with the dense solver). See
        :func:`rftca_from_stats`.
    kernel : {"rbf", "laplacian", "cauchy"}, default="rbf"
        The shift-invariant kernel whose random features are used (frequencies from its
        spectral law, :func:`~shiftlearn.kernels.rff_weights`). With ``exact=True`` also
        ``"linear"`` or a callable ``kernel(A, B)``.
    exact : bool, default=False
        Solve on the exact kernel instead of random features (R-TCA for
        ``penalty="features"``, exact TCA for ``penalty="coefficients"``); ``O(n^3)`` time,
        ``O(n^2)`` memory. ``n_features``, ``sampling``, ``random_state``, ``chunk_size`` and
        ``dtype`` are then unused.
    eigen_solver : {"auto", "dense", "arpack"}, default="auto"
        ``"dense"``: ``scipy.linalg.eigh(..., subset_by_index)`` on the ``2N x 2N`` pencil;
        ``"arpack"``: ``scipy.sparse.linalg.eigsh`` on the reduced operator (relative
        tolerance ``1e-10``; falls back to dense if ARPACK fails); ``"auto"``: ARPACK for
        ``2N >= 800`` and ``n_components <= 2N / 10``. Both through
        :func:`shiftlearn._linalg.leading_eigh`.
    random_state : int, Generator or None
        Seed of the frequencies ``Omega`` (an int makes every result reproducible).
    chunk_size : int or None
        Rows per chunk of random features (``None``: ~64 MB per chunk).
    dtype : {None, "float32", "float64"}
        Precision of the feature map and of the per-chunk products (``None``: float32 for float32
        input, float64 otherwise). Float32 is about twice as fast (sums stay float64).
    keep_stats : bool, default=False
        Keep the training statistics in ``stats_`` (and skip the row-space path).
    memory : FitMemory or None, default=None
        Where fits on the same rows share work (:class:`~shiftlearn.adaptation.FitMemory`):
        the bandwidth, the statistics (with an int ``random_state``: across every other
        parameter that keeps the frequencies), and the eigen-solve of each ``mu`` / ``penalty``
        for the most components asked so far, of which a smaller ``n_components`` is a
        truncation. Same results (up to sign, to the solver's tolerance); ``None`` keeps
        nothing. With ``exact=True``: the kernel's feature factor and its statistics (named
        kernels only; a callable kernel cannot be recognised) and the solves.

    Attributes
    ----------
    sigma_ : float
    omega_ : ndarray of shape ``(n_features_in_, n_features)``
    components_ : ndarray of shape (2 * n_features, n_components)
        ``V`` (scaled per ``scaling``); ``transform(X) = z(X) V``. With ``exact=True``: shape
        ``(n_train, n_components)``, the dual coefficients ``W``, ``transform(X) = k(X, X_fit_)
        W``.
    X_fit_ : ndarray of shape ``(n_train, n_features_in_)``
        Training rows (``exact=True`` only; ``omega_`` is then ``None``).
    eigenvalues_ : ndarray of shape (n_components,)
    stats_ : RFStats or None
        The training statistics (kept only with ``keep_stats=True``).
    n_components_ : int
        Components used: ``n_components``, lowered with a
        :class:`~shiftlearn.adaptation._base.ComponentsClippedWarning` to
        ``min(2 n_features, n_train - 1)`` (the rank of the centred scatter) on smaller data.

    Notes
    -----
    Domains are pooled by sign (all ``sample_domain > 0`` rows form the source, all
    ``< 0`` rows the target); the output is not centred (``V^T z(x)``, as ``W^T K`` in TCA);
    the bandwidth comes from all training rows.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> Xs = rng.normal(size=(100, 5)); Xt = rng.normal(size=(80, 5)) + 0.5
    >>> X = np.vstack([Xs, Xt]); y = np.r_[rng.integers(0, 2, 100), -np.ones(80, int)]
    >>> tca = RFTCA(n_components=4, n_features=200, random_state=0).fit(X, y)
    >>> tca.transform(Xt).shape
    (80, 4)
    """

    _parameter_constraints: dict = {
        **_RF_CONSTRAINTS,
        "mu": [Interval(Real, 0, None, closed="left")],
        "scaling": [StrOptions({"eigh", "constraint"})],
        "penalty": [StrOptions({"features", "coefficients"})],
        "kernel": [StrOptions(set(KERNELS)), callable],
        "exact": ["boolean"],
    }

    def __init__(self, n_components=30, mu=1.0, n_features=1000,
                 bandwidth="median", sampling="gaussian", scaling="eigh", penalty="features",
                 eigen_solver="auto", random_state=None, chunk_size=None, dtype=None,
                 keep_stats=False, memory=None, kernel="rbf", exact=False):
        self.n_components = n_components
        self.mu = mu
        self.n_features = n_features
        self.bandwidth = bandwidth
        self.sampling = sampling
        self.scaling = scaling
        self.penalty = penalty
        self.eigen_solver = eigen_solver
        self.random_state = random_state
        self.chunk_size = chunk_size
        self.dtype = dtype
        self.keep_stats = keep_stats
        self.memory = memory
        self.kernel = kernel
        self.exact = exact

    def _mu(self) -> float:
        return resolve_tca_mu(self.mu)

    def _fit(self, X, y, sample_domain):
        if not self.exact:
            return super()._fit(X, y, sample_domain)
        X = np.asarray(X, dtype=np.float64)
        n = X.shape[0]
        check_dense_memory(n, n, EXACT_FIT_MATRICES, f"RFTCA(exact=True).fit on {n} rows", "",
                           advice="Use random features (exact=False), whose memory does not "
                           "depend on the number of rows.")
        rows = self._rows_key(X)                      # None without a memory
        self.sigma_ = self._resolve_sigma(X, self.kernel, rows)   # None: linear, callable
        kernel_key = self._kernel_key()               # None: a callable (not remembered)
        key = None if rows is None or kernel_key is None else (
            "exact-features", self.memory.fingerprint(rows, y, sample_domain), kernel_key)
        hit = None if key is None else self.memory.get(key)
        if hit is None:
            Phi, P = kernel_feature_factor(self._kernel(X))
            hit = (RFStats.from_features(Phi, y, sample_domain), P)
            if key is not None:
                self.memory.put(key, hit)
        stats, P = hit
        self.omega_ = None
        self.fingerprint_ = None
        self._solve(stats, None, key)
        self.components_ = P @ self.components_       # dual coefficients: transform = K_x W
        self.X_fit_ = X

    def _feature_columns(self) -> int:
        return (2 * self.omega_.shape[1] if getattr(self, "omega_", None) is not None
                else None)

    def _transform(self, X):
        if not self.exact:
            return super()._transform(X)
        X64 = np.asarray(X, dtype=np.float64)
        out = np.empty((X.shape[0], self.components_.shape[1]), dtype=X.dtype)
        for rows, Kt in self._test_kernel_blocks(X64):
            out[rows] = Kt @ self.components_
        return out

    def fit_from_stats(self, stats: RFStats, omega=None):
        if self.exact:
            raise ValueError("RFTCA(exact=True).fit_from_stats: the exact option solves on the "
                             "kernel of the training rows, which statistics of random features "
                             "do not hold; use fit(X, ...), or exact=False.")
        return super().fit_from_stats(stats, omega)

    fit_from_stats.__doc__ = _RFBase.fit_from_stats.__doc__

    def _solve(self, stats: RFStats, basis: np.ndarray | None, key: tuple | None = None):
        self.mu_ = self._mu()
        limit, why = rftca_max_components(stats, self._feature_columns())
        k = clip_n_components(self.n_components, limit, why, "RFTCA")
        key = None if key is None else (*key, "rftca", self.mu_, self.penalty, self.eigen_solver)
        V, w = self._leading(key, k, limit, lambda k: rftca_from_stats(
            stats, k, self.mu_, penalty=self.penalty, eigen_solver=self.eigen_solver,
            rank_deficient="clip"))
        if basis is not None:
            V = basis @ V
        if self.scaling == "constraint":
            V = V * whitening_scale(w)[None, :]
        self._set_solution(stats, V, w)
        return self

    def _transform_terms(self):
        return None, np.ones(self.components_.shape[1])


class RFSCA(_RFBase):
    """Random-feature Scatter Component Analysis (domain adaptation and generalization).

    SCA (Ghifary et al.) with the kernel (Gaussian by default; ``kernel=`` takes any of
    :data:`~shiftlearn.kernels.RFF_KERNELS`) replaced by random Fourier features: maximise
    ``(1 - beta) * total + beta * between-class`` scatter against
    ``delta * domain + within-class`` scatter plus the scale control ``||V||^2``
    (:func:`rfsca_from_stats`). ``fit`` is linear in ``n``; memory does not depend on ``n``.

    * Domain adaptation: target rows (``sample_domain < 0``, ``y = -1``) enter the total and the
      domain scatter, not the class scatters.
    * Domain generalization: every training row labeled, several source domains.
    * Special cases: ``beta = delta = 0`` without labels is kernel PCA, ``beta = 1, delta = 0``
      kernel Fisher discriminant, ``beta = 0`` unsupervised SCA (fit without labels for the
      paper's uSCA, which also drops the within-class term).

    Hyper-parameters and decisions follow the exact :class:`~shiftlearn.adaptation.SCA`
    (class scatters divided by ``n_s``, one domain per ``sample_domain`` id, centred features,
    ``Lambda^{-1/2}`` whitening, training-mean centring of new points), so that RF-SCA tends to
    the exact SCA as ``n_features`` grows (with the same ``kernel``). Not offered:
    ``centering="literal"``, and kernels without random features (``"linear"``, callables: use
    :class:`~shiftlearn.adaptation.SCA`).

    Parameters
    ----------
    n_components : int, default=10
        At ``beta = 1`` at most ``n_classes - 1``.
    beta : float in [0, 1], default=0.5
    delta : float >= 0, default=1.0
    eps : float >= 0, default=1e-5
        Ridge of the denominator (applied as ``eps ||V||^2``, see :func:`rfsca_from_stats`).
    n_features : int, default=1000
        Number of random frequencies ``N`` (``2N`` feature columns).
    bandwidth : float or rule name, default="median"
        As in :class:`RFTCA` (from all training rows).
    sampling : {"gaussian", "orthogonal"}, default="gaussian"
        As in :class:`RFTCA`.
    kernel : {"rbf", "laplacian", "cauchy"}, default="rbf"
        As in :class:`RFTCA` (no ``exact`` option: the exact counterpart is
        :class:`~shiftlearn.adaptation.SCA` with the same kernel).
    whiten : bool, default=True
        Scale component ``j`` by ``lambda_j^{-1/2}`` (the paper's ``Z = K_t B Lambda^{-1/2}``).
    class_scatter_normalization : {"n_s", "none"}, default="n_s"
    supervised : bool, default=True
        ``False`` ignores labels (unsupervised SCA at ``beta = 0``; KPCA with ``delta = 0``).
    setting : {"auto", "da", "dg"}, default="auto"
        ``"da"`` demands target rows, ``"dg"`` forbids them.
    domains : {"ids", "sides"}, default="ids"
        Domains of the domain scatter: each ``sample_domain`` id, or sources vs targets.
    eigen_solver, random_state, chunk_size, dtype, keep_stats
        As in :class:`RFTCA`.
    memory : FitMemory or None, default=None
        As in :class:`RFTCA`; the eigen-solve is remembered per ``(beta, delta, eps, ...)``.

    Attributes
    ----------
    sigma_, omega_, components_, eigenvalues_, stats_
        As in :class:`RFTCA`; ``components_`` satisfies ``V^T M V = I``.
    mean_ : ndarray of shape (2 * n_features,)
        Training feature mean (subtracted in ``transform``, the kernel centering).
    n_components_ : int
        Components used: ``n_components``, lowered with a
        :class:`~shiftlearn.adaptation._base.ComponentsClippedWarning` to
        ``min(2 n_features, n_train - 1)`` (at ``beta = 1``: ``n_classes - 1``) on smaller data.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(120, 4)); y = np.r_[np.arange(60) % 3, -np.ones(60, int)]
    >>> dom = np.r_[np.ones(60), -np.ones(60)].astype(int)
    >>> sca = RFSCA(n_components=2, beta=0.5, n_features=100, random_state=0)
    >>> sca.fit(X, y, sample_domain=dom).transform(X[:5]).shape
    (5, 2)
    """

    _parameter_constraints: dict = {
        **_RF_CONSTRAINTS,
        "beta": [Interval(Real, 0, 1, closed="both")],
        "delta": [Interval(Real, 0, None, closed="left")],
        "eps": [Interval(Real, 0, None, closed="left")],
        "whiten": ["boolean"],
        "class_scatter_normalization": [StrOptions({"n_s", "none"})],
        "supervised": ["boolean"],
        "setting": [StrOptions({"auto", "da", "dg"})],
        "domains": [StrOptions({"ids", "sides"})],
    }

    def __init__(self, n_components=10, beta=0.5, delta=1.0, eps=1e-5, n_features=1000,
                 bandwidth="median", sampling="gaussian", whiten=True,
                 class_scatter_normalization="n_s", supervised=True, setting="auto",
                 domains="ids", eigen_solver="auto", random_state=None, chunk_size=None,
                 dtype=None, keep_stats=False, memory=None, kernel="rbf"):
        self.n_components = n_components
        self.beta = beta
        self.delta = delta
        self.eps = eps
        self.n_features = n_features
        self.bandwidth = bandwidth
        self.sampling = sampling
        self.whiten = whiten
        self.class_scatter_normalization = class_scatter_normalization
        self.supervised = supervised
        self.setting = setting
        self.domains = domains
        self.eigen_solver = eigen_solver
        self.random_state = random_state
        self.chunk_size = chunk_size
        self.dtype = dtype
        self.keep_stats = keep_stats
        self.memory = memory
        self.kernel = kernel

    def _fit(self, X, y, sample_domain):
        self._check_setting(bool(np.any(sample_domain < 0)))
        super()._fit(X, y if self.supervised else None, sample_domain)

    def _check_setting(self, has_target: bool) -> None:
        if self.setting == "da" and not has_target:
            raise ValueError("No target rows: RFSCA(setting='da') needs unlabeled target rows "
                             "(negative sample_domain) at fit time.")
        if self.setting == "dg" and has_target:
            raise ValueError("RFSCA(setting='dg') must not see target rows (negative "
                             "sample_domain) at fit time; use setting='da' or 'auto'.")
        self.setting_ = "da" if has_target else "dg"

    def _solve(self, stats: RFStats, basis: np.ndarray | None, key: tuple | None = None):
        self._check_setting(bool(np.any(stats.domains < 0)))
        beta = float(self.beta) if self.supervised else 0.0
        limit, why = rfsca_max_components(stats, beta, self.supervised,
                                          2 * self.omega_.shape[1])
        k = clip_n_components(self.n_components, limit, why, "RFSCA")
        if key is not None:
            key = (*key, "rfsca", beta, float(self.delta), float(self.eps), self.domains,
                   bool(self.supervised), self.class_scatter_normalization, self.eigen_solver)
        V, w = self._leading(key, k, limit, lambda k: rfsca_from_stats(
            stats, k, float(self.beta), float(self.delta), float(self.eps),
            domains=self.domains, supervised=self.supervised,
            class_scatter_normalization=self.class_scatter_normalization,
            eigen_solver=self.eigen_solver, rank_deficient="clip"))
        self.classes_ = stats.classes
        self.mean_ = stats.mean()
        if basis is not None:
            V, self.mean_ = basis @ V, basis @ self.mean_
        self._set_solution(stats, V, w)
        return self

    def _transform_terms(self):
        scale = (whitening_scale(self.eigenvalues_) if self.whiten
                 else np.ones_like(self.eigenvalues_))
        return self.mean_, scale
