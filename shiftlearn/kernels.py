"""The kernel toolkit every method uses: kernels, bandwidths, random features, Nyström,
centering and MMD.

Conventions (decided once, here, for the whole library)
-------------------------------------------------------
* **Gaussian (RBF) kernel** ``k(a, b) = exp(-||a - b||^2 / (2 sigma^2))``; ``sigma`` is always
  the bandwidth in this form (scikit-learn's ``gamma = 1 / (2 sigma^2)``, see
  :func:`gamma_from_sigma`). The random Fourier features of the RF-TCA paper approximate exactly
  this kernel.
* **Median heuristic** (:func:`median_heuristic`). With ``m = median ||a - b||^2`` over distinct
  pairs (a seeded subsample of at most ``max_samples`` rows):

  - ``"median"`` (default): ``sigma = sqrt(m)``, the median *distance*, so
    ``k = exp(-d^2 / (2 m))`` (Gretton et al.'s heuristic; the SCA paper's prose,
    "the median distance between samples").
  - ``"median_sq"``: ``2 sigma^2 = m``, so ``k = exp(-d^2 / m)``: the SCA paper's printed
    formula read as ``exp(-d^2 / sigma)`` with ``sigma = median(d^2)``, and the convention of the
    third-party SCA port (``sigma = sqrt(0.5 median(d^2))``).
  - ``"mean"``: ``sigma`` = mean pairwise distance (the boosting paper's KCCA baseline).
  - ``"n_features"``: ``gamma = 1 / d`` (scikit-learn's default, the splits paper's advice).

  The two median variants differ by a factor 2 in ``gamma``; both are offered because the papers
  differ. Every ``bandwidth*`` parameter of the library takes a number, a rule, or
  ``"<f>*<rule>"`` (``f`` times the rule: grids of scales around it), read by one parser
  (:func:`parse_bandwidth`) and resolved by one function (:func:`resolve_bandwidth`).
* **Random Fourier features** exactly as in the RF-TCA paper:
  ``z(x) = N^{-1/2} [cos(Omega^T x); sin(Omega^T x)]`` with ``Omega`` of shape ``(d, N)``,
  entries i.i.d. ``N(0, 1/sigma^2)``, no random phase. ``n_features = N`` frequencies give
  ``2 N`` output columns, and ``z(a) . z(b)`` is an unbiased estimate of the Gaussian kernel.
  ``Omega`` is drawn as ``numpy.random.default_rng(seed).standard_normal((d, N)) / sigma``, so the
  same seed gives the same features on every machine (federated clients rely on this).
  ``rff_weights(..., sampling="orthogonal")`` offers orthogonal random features (Yu et al.
  2016), a lower-variance estimate of the same kernel; the default stays the paper's.
* **Other shift-invariant kernels** (:data:`RFF_KERNELS`, the ``kernel=`` of
  :func:`rff_weights`, :class:`RandomFourierFeatures`, :func:`median_heuristic`, ...). The
  RF-TCA paper names the Laplacian and Cauchy kernels (footnote 1 to its eq. (5), citing Rahimi
  and Recht 2007) and reports RF-TCA with a "Laplace" kernel (Tables XIV-XV) without writing
  either down; we take Rahimi and Recht's forms (their Fig. 1) with a bandwidth ``sigma`` and
  ``k(x, x) = 1``:

  - ``"laplacian"``: ``k(a, b) = exp(-||a - b||_1 / sigma)`` (scikit-learn's
    ``laplacian_kernel`` with ``gamma = 1 / sigma``); frequencies i.i.d. **Cauchy**
    ``(0, 1/sigma)`` per coordinate.
  - ``"cauchy"``: ``k(a, b) = prod_j 1 / (1 + ((a_j - b_j) / sigma)^2)``; frequencies i.i.d.
    **Laplace** ``(0, 1/sigma)`` per coordinate (density ``(sigma/2) exp(-sigma |w|)``).
    Rahimi and Recht print ``prod_j 2 / (1 + Delta_j^2)`` beside the density ``exp(-||w||_1)``,
    which is not normalised (it integrates to ``2^d``); with the normalised Laplace density the
    kernel is the product of ``1 / (1 + Delta_j^2)``, and random features estimate exactly this
    one (their ``z(x) . z(x)`` is 1).

  Here ``sigma`` is the bandwidth for every kernel.
* **Orthogonal sampling applies to the Gaussian kernel only.** It relies on the Gaussian
  frequency law being rotation invariant (direction uniform, length chi-distributed,
  independent). The Laplacian and Cauchy kernels are products over coordinates whose frequency
  laws are products of 1-D Cauchy / Laplace laws, not rotation invariant: orthogonal blocks
  rescaled to the right lengths would estimate another kernel. ``sampling="orthogonal"`` with
  them is a ``ValueError``; ``sampling="gaussian"`` means *i.i.d. frequencies from the
  kernel's spectral law* for every kernel (Gaussian for ``"rbf"``, the name is the RF-TCA
  paper's scheme).
* **Bandwidth rules per kernel** (:func:`median_heuristic`, table there): the Laplacian's rules
  use L1 distances (``"median"``: ``sigma`` = median L1 distance); the Cauchy kernel takes the
  Gaussian rule's ``sigma`` times ``sqrt(2)``, because
  ``prod_j 1/(1 + Delta_j^2/sigma^2) = exp(-||Delta||^2/sigma^2 + O(Delta^4))``: with
  ``sigma_cauchy = sqrt(2) sigma_rbf`` the two kernels agree to second order at small distances
  and the Cauchy kernel has the heavier tail.
* **Random numbers**: a ``random_state`` (``None``, an int, a ``numpy.random.Generator`` or a
  ``RandomState``) is turned into a Generator by ``numpy.random.default_rng`` itself, here and
  in every module of the library, with no wrapper of our own (a ``RandomState`` drives the
  Generator through its own bit generator).
* **One home per primitive** (``tests/house/test_one_home.py`` keeps it so): the
  domain-mean matrix ``E`` (:func:`domain_mean_matrix`, also the task-mean matrix of marginal
  transfer), TCA's MMD vector and matrix (:func:`mmd_vector`, :func:`mmd_matrix`), the
  bandwidth rules (:func:`median_heuristic`, :func:`sigma_from_sq_distances` for precomputed
  distances, :func:`bandwidth_rows` for the seeded rows they read, Dask included), the feature
  map (:func:`rff_map`, also into a reused buffer) and the 64 MB chunk budget
  (:data:`DEFAULT_CHUNK_BYTES`) live here; leading eigenpairs in
  :func:`shiftlearn._linalg.leading_eigh`. The chunked sufficient statistics of random features
  (counts, sums, second moments, per domain and class) live in
  :func:`shiftlearn.adaptation.rf_stats` alone, beside the solvers that use them.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from numbers import Integral, Real

import numpy as np
import scipy.linalg
from scipy.spatial.distance import cdist, pdist
from sklearn.base import BaseEstimator, ClassNamePrefixFeaturesOutMixin, TransformerMixin
from sklearn.kernel_approximation import Nystroem
from sklearn.metrics.pairwise import euclidean_distances
from sklearn.utils.validation import check_is_fitted

from ._array_api import is_foreign_array, to_numpy
from ._constraints import BandwidthSpec, Interval, StrOptions, check_params, parse_bandwidth_spec
from ._dask import as_dask_2d
from ._validation import check_X

__all__ = [
    "BANDWIDTH_MAX_SAMPLES",
    "BANDWIDTH_RANGE",
    "BANDWIDTH_RULES",
    "KERNELS",
    "MMDTestResult",
    "RFF_KERNELS",
    "RFF_SAMPLINGS",
    "RandomFourierFeatures",
    "bandwidth_rows",
    "cauchy_kernel",
    "center_kernel",
    "center_test_kernel",
    "check_rff_kernel",
    "check_rff_sampling",
    "cos_sin_into",
    "domain_mean_matrix",
    "gamma_from_sigma",
    "kernel_centering_stats",
    "kernel_feature_factor",
    "kernel_matrix",
    "l1_distances",
    "laplacian_kernel",
    "linear_kernel",
    "median_heuristic",
    "mmd2",
    "mmd2_from_kernels",
    "mmd2_rff",
    "mmd_matrix",
    "mmd_permutation_test",
    "mmd_vector",
    "nystroem",
    "omega_fingerprint",
    "parse_bandwidth",
    "resolve_bandwidth",
    "rbf_kernel",
    "rff_chunks",
    "rff_frequencies",
    "rff_map",
    "rff_mean",
    "rff_sum",
    "rff_weights",
    "sigma_from_gamma",
    "sigma_from_sq_distances",
    "sq_distances",
]

BANDWIDTH_RULES = ("median", "median_sq", "mean", "n_features")
#: rows a data-driven bandwidth rule reads at the most (:func:`bandwidth_rows`)
BANDWIDTH_MAX_SAMPLES = 1000
#: shift-invariant kernels: exact Gram matrices, bandwidth rules and random Fourier features
RFF_KERNELS = ("rbf", "laplacian", "cauchy")
#: every kernel name :func:`kernel_matrix` knows
KERNELS = (*RFF_KERNELS, "linear")
#: memory for one chunk of rows (random features, kernel rows, Gram rows): the one chunk
#: budget of the library
DEFAULT_CHUNK_BYTES = 64 * 2**20


# ---------------------------------------------------------------------------------------------
# distances, bandwidths, kernels
# ---------------------------------------------------------------------------------------------
def sq_distances(X: np.ndarray, Y: np.ndarray | None = None) -> np.ndarray:
    """Squared Euclidean distances ``||x_i - y_j||^2`` (clipped at 0), shape ``(n_X, n_Y)``.

    Arrays of another array-API namespace (torch, CuPy) are computed in it, on their device
    and in their dtype, as ``||x||^2 - 2 x.y + ||y||^2`` (one matrix product)."""
    if is_foreign_array(X):
        return _sq_distances_xp(X, Y)
    D = euclidean_distances(X, Y, squared=True)
    np.maximum(D, 0.0, out=D)
    return D


def _sq_distances_xp(X, Y=None):
    import array_api_compat

    xp = array_api_compat.array_namespace(X)
    XX = xp.sum(X * X, axis=1)
    YY = XX if Y is None else xp.sum(Y * Y, axis=1)
    D = X @ (X if Y is None else Y).T
    D *= -2.0
    D += XX[:, None]
    D += YY[None, :]
    return xp.clip(D, min=0.0)


def gamma_from_sigma(sigma: float) -> float:
    """scikit-learn's ``gamma`` for bandwidth ``sigma``: ``1 / (2 sigma^2)``."""
    return 1.0 / (2.0 * float(sigma) ** 2)


def sigma_from_gamma(gamma: float) -> float:
    """Bandwidth ``sigma`` for scikit-learn's ``gamma``: ``sqrt(1 / (2 gamma))``."""
    return float(np.sqrt(1.0 / (2.0 * float(gamma))))


def _check_kernel_name(kernel, allowed: tuple[str, ...], name: str = "kernel") -> str:
    if not isinstance(kernel, str) or kernel not in allowed:
        raise ValueError(f"{name} must be one of {allowed}, got {kernel!r}.")
    return kernel


def check_rff_kernel(kernel, name: str = "kernel") -> str:
    """``kernel`` if it is one of :data:`RFF_KERNELS` (the shift-invariant kernels with random
    Fourier features), else a ``ValueError`` naming ``name`` and the choices."""
    return _check_kernel_name(kernel, RFF_KERNELS, name)


def l1_distances(X: np.ndarray, Y: np.ndarray | None = None) -> np.ndarray:
    """Manhattan (L1) distances ``||x_i - y_j||_1``, shape ``(n_X, n_Y)``, float64."""
    X = np.asarray(X, dtype=np.float64)
    return cdist(X, X if Y is None else np.asarray(Y, dtype=np.float64), "cityblock")


#: ``sigma_cauchy / sigma_rbf`` of every bandwidth rule: the Cauchy kernel with bandwidth
#: ``sqrt(2) s`` equals the Gaussian with bandwidth ``s`` to second order in the distance
CAUCHY_RBF_RATIO = float(np.sqrt(2.0))


def bandwidth_rows(n_rows: int, max_samples: int = BANDWIDTH_MAX_SAMPLES, random_state=0
                   ) -> np.ndarray | None:
    """The rows a data-driven bandwidth rule reads: ``None`` (all of them) when ``n_rows <=
    max_samples``, else ``max_samples`` row indices drawn without replacement by
    ``numpy.random.default_rng(random_state)`` (in draw order). :func:`median_heuristic` and
    the Dask paths (which read only these rows of a Dask array) share this one rule.

    Examples
    --------
    >>> bandwidth_rows(5, 10) is None
    True
    >>> idx = bandwidth_rows(5000, 3)
    >>> idx.shape, bool(np.array_equal(idx, bandwidth_rows(5000, 3)))
    ((3,), True)
    """
    if n_rows <= max_samples:
        return None
    return np.random.default_rng(random_state).choice(n_rows, max_samples, replace=False)


def median_heuristic(
    X: np.ndarray,
    *,
    rule: str = "median",
    max_samples: int = BANDWIDTH_MAX_SAMPLES,
    random_state=0,
    kernel: str = "rbf",
) -> float:
    """Bandwidth ``sigma`` of ``kernel`` from the pairwise distances of ``X``.

    Let ``m2`` be the median squared Euclidean distance over distinct pairs, ``l2`` the
    Euclidean and ``l1`` the Manhattan distances, ``d`` the number of columns:

    * ``"median"``: rbf ``sqrt(m2)`` (the median l2 distance); laplacian the median ``l1``;
      cauchy ``sqrt(2) sqrt(m2)``.
    * ``"median_sq"``: rbf ``sqrt(m2 / 2)``; laplacian the median ``l1`` / 2; cauchy
      ``sqrt(m2)``.
    * ``"mean"``: rbf the mean ``l2``; laplacian the mean ``l1``; cauchy ``sqrt(2)`` times the
      mean ``l2``.
    * ``"n_features"``: rbf ``sqrt(d / 2)`` (``gamma = 1/d``); laplacian ``d``
      (``gamma = 1/d``); cauchy ``sqrt(d)``.

    ``"median_sq"`` doubles the exponent of ``"median"`` for every kernel. The Laplacian's rules
    are the Gaussian ones in its own (L1) distance; ``"n_features"`` is scikit-learn's default
    ``gamma = 1 / n_features`` for both (``exp(-gamma d^2)``, ``exp(-gamma ||.||_1)``). The
    Cauchy kernel takes the Gaussian's ``sigma`` times ``sqrt(2)`` (:data:`CAUCHY_RBF_RATIO`):
    ``prod_j 1/(1 + D_j^2/sigma^2) = exp(-||D||^2/sigma^2 + O(D^4))``, so the two agree to
    second order at small distances.

    Parameters
    ----------
    X : ndarray of shape (n_samples, n_features)
    rule : {"median", "median_sq", "mean", "n_features"}
    max_samples : int
        Distances are computed on a seeded random subsample of at most this many rows
        (``O(max_samples^2 d)`` work whatever ``n``).
    random_state : int, Generator or None
        Seed of the subsample (default 0: deterministic).
    kernel : {"rbf", "laplacian", "cauchy"}, default="rbf"

    Returns
    -------
    sigma : float (> 0)
        ``1.0`` when all (sampled) points coincide (rather than a division by zero).

    Examples
    --------
    >>> import numpy as np
    >>> X = np.array([[0.0], [1.0], [3.0]])
    >>> round(median_heuristic(X), 6)   # median of distances 1, 2, 3
    2.0
    >>> X2 = np.array([[0.0, 0.0], [1.0, 1.0], [3.0, 0.0]])   # l1 distances 2, 3, 3
    >>> median_heuristic(X2, kernel="laplacian")
    3.0
    """
    foreign = is_foreign_array(X)
    if not foreign:
        X = np.asarray(X)
    if rule not in BANDWIDTH_RULES:
        raise ValueError(f"Unknown bandwidth rule {rule!r}; use one of {BANDWIDTH_RULES} "
                         "or a positive float.")
    check_rff_kernel(kernel)
    if rule == "n_features":
        d = X.shape[1]
        return {"rbf": sigma_from_gamma(1.0 / d), "laplacian": float(d),
                "cauchy": float(np.sqrt(d))}[kernel]
    idx = bandwidth_rows(X.shape[0], max_samples, random_state)
    if foreign:             # the same seeded rows, read back to the host (at most max_samples)
        import array_api_compat

        if idx is not None:
            xp = array_api_compat.array_namespace(X)
            X = xp.take(X, xp.asarray(idx, device=array_api_compat.device(X)), axis=0)
        X = to_numpy(X)
    elif idx is not None:
        X = X[idx]
    X = np.asarray(X, dtype=np.float64)   # after subsampling: no float64 copy of a large X
    if X.shape[0] < 2:
        raise ValueError("The median heuristic needs at least 2 rows.")
    if kernel == "laplacian":
        D = pdist(X, "cityblock")             # l1 distances
        sigma = {"median": np.median(D), "median_sq": np.median(D) / 2.0,
                 "mean": np.mean(D)}[rule]
    else:
        sigma = _sq_distance_rule(sq_distances(X)[np.triu_indices(X.shape[0], k=1)], rule)
        if kernel == "cauchy":
            sigma = sigma * CAUCHY_RBF_RATIO
    return _unit_if_degenerate(sigma)


def _sq_distance_rule(d2: np.ndarray, rule: str):
    """The Gaussian kernel's ``sigma`` of ``rule`` from squared pair distances ``d2`` (raw:
    0 or NaN when degenerate)."""
    if rule == "mean":
        return float(np.mean(np.sqrt(d2)))
    m = float(np.median(d2))
    return np.sqrt(m) if rule == "median" else np.sqrt(m / 2.0)


def _unit_if_degenerate(sigma) -> float:
    # all (sampled) points coincide: fall back to a unit bandwidth rather than divide by 0
    if not np.isfinite(sigma) or sigma <= 0:
        return 1.0
    return float(sigma)


def sigma_from_sq_distances(D2: np.ndarray, rule: str = "median") -> float:
    """The Gaussian kernel's bandwidth ``sigma`` by a rule of :func:`median_heuristic`, from
    squared distances already computed (e.g. between kernel mean embeddings).

    ``D2`` is either a square symmetric matrix of squared distances (its pairs ``i < j`` are
    used, the diagonal is not) or a 1-D array of the squared distances of distinct pairs.
    ``rule`` is ``"median"`` (``sqrt(median)``), ``"median_sq"`` (``sqrt(median / 2)``) or
    ``"mean"`` (mean distance), exactly as :func:`median_heuristic` applies them to the rows of
    ``X`` (that function calls this rule on ``sq_distances(X)``). Returns 1.0 when there is no
    pair or the rule gives 0 (all points coincide), as :func:`median_heuristic` does.

    Examples
    --------
    >>> import numpy as np
    >>> D2 = np.array([[0.0, 4.0, 9.0], [4.0, 0.0, 1.0], [9.0, 1.0, 0.0]])
    >>> sigma_from_sq_distances(D2)                 # sqrt(median(4, 9, 1))
    2.0
    >>> sigma_from_sq_distances(np.array([4.0, 9.0, 1.0]), rule="median_sq")
    1.4142135623730951
    """
    if rule not in ("median", "median_sq", "mean"):
        raise ValueError(f"rule must be 'median', 'median_sq' or 'mean' for precomputed "
                         f"distances, got {rule!r}.")
    D2 = np.asarray(D2, dtype=np.float64)
    if D2.ndim == 2 and D2.shape[0] == D2.shape[1]:
        D2 = D2[np.triu_indices(D2.shape[0], k=1)]
    elif D2.ndim != 1:
        raise ValueError(f"D2 must be a square matrix or a 1-D array of pair distances, got "
                         f"shape {D2.shape}.")
    if D2.size == 0:
        return 1.0
    return _unit_if_degenerate(_sq_distance_rule(D2, rule))


#: the bandwidths a resolver returns: beyond them ``1 / (2 sigma^2)`` under- or overflows
#: float64 (``sigma=1e-300`` raised ``ZeroDivisionError``, ``1e300`` an ``OverflowError``)
BANDWIDTH_RANGE = (1e-150, 1e150)


def parse_bandwidth(spec, name: str = "bandwidth") -> tuple[float, str | None]:
    """``(factor, rule)`` of a bandwidth spec: a positive float ``s`` is ``(s, None)``, a rule
    of :data:`BANDWIDTH_RULES` is ``(1.0, rule)`` and ``"<f>*<rule>"`` is ``(f, rule)`` (grids
    of scales around a rule, e.g. ``"0.5*median"``). A ``ValueError`` names ``name`` otherwise.

    Examples
    --------
    >>> parse_bandwidth("2*median_sq"), parse_bandwidth(0.3), parse_bandwidth("mean")
    ((2.0, 'median_sq'), (0.3, None), (1.0, 'mean'))
    """
    return parse_bandwidth_spec(spec, BANDWIDTH_RULES, name)


def resolve_bandwidth(bandwidth, X: np.ndarray | None, *, random_state=0, kernel: str = "rbf",
                      name: str = "bandwidth", rule_value: Callable[[str], float] | None = None
                      ) -> float:
    """The bandwidth ``sigma`` of ``kernel`` that a spec (:func:`parse_bandwidth`) gives on
    data ``X``: the number itself, or ``factor`` times the rule's value, by default
    :func:`median_heuristic` of ``X`` (``O(min(n, 1000)^2 d)``); ``rule_value(rule)`` replaces
    it where the rule reads something else than rows (e.g. the distances between task
    embeddings; ``X`` is then unused).

    Raises
    ------
    ValueError
        naming ``name``: a spec of another form, or a value outside :data:`BANDWIDTH_RANGE`
        (its square would not be representable in float64).

    Examples
    --------
    >>> import numpy as np
    >>> X = np.array([[0.0], [1.0], [3.0]])
    >>> resolve_bandwidth("median", X), resolve_bandwidth("0.5*median", X), resolve_bandwidth(4, X)
    (2.0, 1.0, 4.0)
    """
    factor, rule = parse_bandwidth(bandwidth, name)
    if rule is None:
        value = factor
    else:
        base = (median_heuristic(X, rule=rule, random_state=random_state, kernel=kernel)
                if rule_value is None else rule_value(rule))
        value = factor * base
    lo, hi = BANDWIDTH_RANGE
    if not lo <= value <= hi:
        raise ValueError(f"{name}={bandwidth!r} gives the bandwidth {value:.3g}, outside "
                         f"[{lo:g}, {hi:g}] where its square is representable in float64; "
                         "rescale X (e.g. StandardScaler) or give a bandwidth on the scale of "
                         "the distances between rows.")
    return value


def _check_sigma(sigma, kernel: str) -> float:
    if sigma is None:
        raise ValueError(f"The {kernel} kernel needs sigma.")
    if isinstance(sigma, bool) or not isinstance(sigma, Real) or not np.isfinite(sigma) \
            or sigma <= 0:
        raise ValueError(f"sigma of the {kernel} kernel must be a positive finite number, "
                         f"got {sigma!r}.")
    return float(sigma)


def rbf_kernel(X: np.ndarray, Y: np.ndarray | None = None, *, sigma: float) -> np.ndarray:
    """Gaussian kernel ``exp(-||x - y||^2 / (2 sigma^2))``, shape ``(n_X, n_Y)``."""
    K = sq_distances(X, Y)
    K *= -gamma_from_sigma(sigma)
    if is_foreign_array(K):
        import array_api_compat

        return array_api_compat.array_namespace(K).exp(K)
    np.exp(K, out=K)
    return K


def laplacian_kernel(X: np.ndarray, Y: np.ndarray | None = None, *, sigma: float) -> np.ndarray:
    """Laplacian kernel ``exp(-||x - y||_1 / sigma)``, shape ``(n_X, n_Y)``, float64.

    scikit-learn's ``laplacian_kernel`` with ``gamma = 1 / sigma``. Its random Fourier
    features have i.i.d. Cauchy(0, 1/sigma) frequencies (:func:`rff_weights`). Cost
    ``O(n_X n_Y d)`` (``scipy.spatial.distance.cdist``).

    Examples
    --------
    >>> import numpy as np
    >>> X = np.array([[0.0, 0.0], [1.0, -2.0]])
    >>> np.round(laplacian_kernel(X, sigma=3.0), 6)      # exp(-3/3) off the diagonal
    array([[1.      , 0.367879],
           [0.367879, 1.      ]])
    """
    sigma = _check_sigma(sigma, "laplacian")
    K = l1_distances(X, Y)
    K *= -1.0 / sigma
    np.exp(K, out=K)
    return K


#: entries of one block of :func:`cauchy_kernel` (2 MB of float64: stays in cache)
_CAUCHY_BLOCK = 2**18
#: coordinates multiplied together before one logarithm in :func:`cauchy_kernel`
_CAUCHY_GROUP = 8


def cauchy_kernel(X: np.ndarray, Y: np.ndarray | None = None, *, sigma: float) -> np.ndarray:
    """Cauchy kernel ``prod_j 1 / (1 + ((x_j - y_j) / sigma)^2)``, shape ``(n_X, n_Y)``, float64.

    Normalised so that ``k(x, x) = 1`` (Rahimi and Recht's table prints ``2 / (1 + D^2)``
    beside an unnormalised density; see the module docstring). Its random Fourier features have
    i.i.d. Laplace(0, 1/sigma) frequencies (:func:`rff_weights`).

    Computed as ``exp(-sum_j log(1 + t_j))`` with the factors ``1 + t_j`` multiplied in groups of
    8 coordinates before each logarithm (8x fewer logarithms; a group can overflow to ``inf``
    only when ``|x_j - y_j| > 1e19 sigma``, and then the kernel is 0, which ``exp(-inf)``
    gives), in row blocks of about 2 MB, one coordinate at a time: ``O(n_X n_Y d)`` with a
    Python loop over ``d`` per block (half the work for ``Y=None``, which fills one triangle and
    mirrors it).

    Examples
    --------
    >>> import numpy as np
    >>> X = np.array([[0.0, 0.0], [1.0, -2.0]])
    >>> round(float(cauchy_kernel(X, sigma=2.0)[0, 1]), 12)   # 1/(1 + 1/4) * 1/(1 + 1)
    0.4
    """
    sigma = _check_sigma(sigma, "cauchy")
    XT = np.ascontiguousarray(np.asarray(X, dtype=np.float64).T) / sigma
    sym = Y is None
    YT = XT if sym else np.ascontiguousarray(np.asarray(Y, dtype=np.float64).T) / sigma
    if XT.shape[0] != YT.shape[0]:
        raise ValueError(f"X has {XT.shape[0]} features but Y has {YT.shape[0]}.")
    d, nX, nY = XT.shape[0], XT.shape[1], YT.shape[1]
    K = np.empty((nX, nY))
    rows = max(1, _CAUCHY_BLOCK // max(nY, 1))
    for s in range(0, nX, rows):
        e = min(nX, s + rows)
        c0 = s if sym else 0                      # symmetric: columns from the block on
        shape = (e - s, nY - c0)
        acc = np.zeros(shape)
        prod = np.ones(shape)
        T = np.empty(shape)
        with np.errstate(over="ignore"):      # an overflow is a kernel value of 0, see above
            for j in range(d):
                np.subtract.outer(XT[j, s:e], YT[j, c0:], out=T)
                T *= T
                T += 1.0
                prod *= T
                if (j + 1) % _CAUCHY_GROUP == 0 or j == d - 1:
                    np.log(prod, out=T)
                    acc += T
                    prod.fill(1.0)
        np.negative(acc, out=acc)
        np.exp(acc, out=K[s:e, c0:])
        if sym:
            K[e:, s:e] = K[s:e, e:].T
    return K


_KERNEL_FUNCTIONS = {"rbf": rbf_kernel, "laplacian": laplacian_kernel, "cauchy": cauchy_kernel}


def linear_kernel(X: np.ndarray, Y: np.ndarray | None = None) -> np.ndarray:
    """Linear kernel ``x . y``."""
    return X @ (X if Y is None else Y).T


def kernel_matrix(X: np.ndarray, Y: np.ndarray | None = None, *, kernel="rbf",
                  sigma: float | None = None) -> np.ndarray:
    """Kernel matrix for ``kernel`` in :data:`KERNELS` (``"rbf"``, ``"laplacian"``,
    ``"cauchy"`` need ``sigma``; ``"linear"`` does not) or a callable ``kernel(X, Y)``."""
    if is_foreign_array(X) and (callable(kernel) or kernel in ("laplacian", "cauchy")):
        raise ValueError(f"kernel={kernel!r} is computed with NumPy only; arrays of another "
                         "namespace (torch, CuPy) take kernel='rbf' or 'linear' (or pass "
                         "NumPy arrays).")
    if callable(kernel):
        return np.asarray(kernel(X, X if Y is None else Y), dtype=np.float64)
    if kernel == "linear":
        return linear_kernel(X, Y)
    if isinstance(kernel, str) and kernel in RFF_KERNELS:
        _check_sigma(sigma, kernel)
        return _KERNEL_FUNCTIONS[kernel](X, Y, sigma=sigma)
    raise ValueError(f"Unknown kernel {kernel!r}; use one of {KERNELS} or a callable.")


# ---------------------------------------------------------------------------------------------
# centering
# ---------------------------------------------------------------------------------------------
def _mean(A, axis: int):
    """``A.mean(axis)``, in ``A``'s array-API namespace when it is not NumPy."""
    if is_foreign_array(A):
        import array_api_compat

        return array_api_compat.array_namespace(A).mean(A, axis=axis)
    return A.mean(axis=axis)


def kernel_centering_stats(K: np.ndarray) -> tuple[np.ndarray, float]:
    """Column means and grand mean of a training kernel, all that test centering needs (in the
    kernel's array namespace and on its device)."""
    col_mean = _mean(K, 0)
    return col_mean, float(_mean(col_mean, 0))


def center_kernel(K: np.ndarray) -> np.ndarray:
    """``H K H`` with ``H = I - 11^T/n`` (no n×n ``H`` is formed); returns a new array (in the
    kernel's array namespace and on its device)."""
    col_mean, grand = kernel_centering_stats(K)
    row_mean = _mean(K, 1)
    return K - col_mean[None, :] - row_mean[:, None] + grand


def center_test_kernel(K_test: np.ndarray, col_mean: np.ndarray, grand_mean: float) -> np.ndarray:
    """Center a test kernel ``K_test[i, j] = k(x_test_i, x_train_j)`` w.r.t. the training mean.

    ``K_test - 1 K_train/n - K_test 11^T/n + 1 K_train 1/n^2`` (KPCA-style, the training
    feature-space mean is subtracted from both sides), with ``col_mean, grand_mean`` from
    :func:`kernel_centering_stats` of the uncentered training kernel. Arrays of another
    array-API namespace are centred in it.
    """
    return K_test - _mean(K_test, 1)[:, None] - col_mean[None, :] + grand_mean


# ---------------------------------------------------------------------------------------------
# random Fourier features
# ---------------------------------------------------------------------------------------------
RFF_SAMPLINGS = ("gaussian", "orthogonal")


def check_rff_sampling(sampling, name: str = "sampling") -> str:
    """``sampling`` if it is one of :data:`RFF_SAMPLINGS`, else a ``ValueError`` naming
    ``name`` (the parameter as the caller calls it, e.g. ``"frequencies"``)."""
    if sampling not in RFF_SAMPLINGS:
        raise ValueError(f"{name} must be one of {RFF_SAMPLINGS}, got {sampling!r}.")
    return sampling


def rff_weights(n_input: int, n_features: int, sigma: float, random_state=None,
                dtype=np.float64, *, sampling: str = "gaussian",
                kernel: str = "rbf") -> np.ndarray:
    """Frequencies ``Omega`` of shape ``(n_input, n_features)`` for a shift-invariant kernel.

    ``z(x) = N^{-1/2} [cos(Omega^T x); sin(Omega^T x)]`` (:func:`rff_map`) then gives
    ``E z(a) . z(b) = k(a, b)`` for ``kernel`` with bandwidth ``sigma``. The columns are i.i.d.
    draws of the kernel's spectral law (Bochner), a standard law divided by ``sigma``:

    * ``"rbf"``, ``exp(-||a - b||^2 / (2 sigma^2))``:
      ``rng.standard_normal((d, N)) / sigma``;
    * ``"laplacian"``, ``exp(-||a - b||_1 / sigma)``: ``rng.standard_cauchy((d, N)) / sigma``;
    * ``"cauchy"``, ``prod_j 1 / (1 + ((a_j - b_j) / sigma)^2)``:
      ``rng.laplace(size=(d, N)) / sigma``,

    with ``rng = numpy.random.default_rng(random_state)``. Bit-for-bit reproducible from an
    integer seed (federated clients rely on this); the ``"rbf"`` draws are those of earlier
    versions.

    ``sampling="gaussian"`` (default, the RF-TCA paper's): i.i.d. frequencies of the kernel's
    law, as listed (the name is historical: the law is Gaussian for ``"rbf"`` only).

    ``sampling="orthogonal"`` (``"rbf"`` only): orthogonal random features (Yu et al., NeurIPS
    2016). The frequencies come in blocks of at most ``n_input`` columns that are exactly
    orthogonal (``Q`` of a Gaussian block's QR, signs fixed by ``R``'s diagonal), each column
    rescaled by an independent chi(``n_input``) draw, so every column is still
    ``N(0, I / sigma^2)`` distributed while the columns of a block never point the same way. The
    kernel estimate ``z(a) . z(b)`` keeps its expectation up to a term that vanishes with
    ``n_input`` and has a smaller variance (``docs/random_features.md`` has the measured
    error). Costs one QR of a ``n_input x b`` block per ``b <= n_input`` columns,
    ``O(n_input * N * min(n_input, N))`` in all. Also reproducible from an integer seed. It
    does not apply to ``"laplacian"`` and ``"cauchy"`` (their laws are products of 1-D laws,
    not rotation invariant, so rotated blocks would estimate another kernel): a ``ValueError``.

    Examples
    --------
    >>> W = rff_weights(3, 6, sigma=2.0, random_state=0, sampling="orthogonal")
    >>> G = W[:, :3].T @ W[:, :3]            # the first block: orthogonal columns
    >>> bool(np.allclose(G - np.diag(np.diag(G)), 0))
    True
    >>> rff_weights(2, 4, sigma=1.0, random_state=0, kernel="cauchy").shape
    (2, 4)
    """
    if not isinstance(n_features, Integral) or n_features < 1:
        raise ValueError(f"n_features must be a positive integer, got {n_features!r}.")
    if sigma <= 0:
        raise ValueError(f"sigma must be positive, got {sigma}.")
    check_rff_sampling(sampling)
    check_rff_kernel(kernel)
    if sampling == "orthogonal" and kernel != "rbf":
        law = "Cauchy" if kernel == "laplacian" else "Laplace"
        raise ValueError(
            f"sampling='orthogonal' applies to the rbf kernel only: orthogonal random features "
            f"need a rotation-invariant frequency law, and the {kernel} kernel's frequencies are "
            f"i.i.d. {law} per coordinate. Use sampling='gaussian' (i.i.d. frequencies of the "
            f"kernel's law) with kernel={kernel!r}, or kernel='rbf' for orthogonal features.")
    rng = np.random.default_rng(random_state)
    if kernel == "laplacian":
        W = rng.standard_cauchy((n_input, n_features))
    elif kernel == "cauchy":
        W = rng.laplace(size=(n_input, n_features))
    elif sampling == "gaussian":
        W = rng.standard_normal((n_input, n_features))
    else:
        W = np.empty((n_input, n_features))
        for start in range(0, n_features, n_input):
            b = min(n_input, n_features - start)
            Q, R = np.linalg.qr(rng.standard_normal((n_input, b)))
            Q *= np.where(np.diag(R) < 0, -1.0, 1.0)[None, :]       # Haar-distributed columns
            W[:, start:start + b] = Q * np.sqrt(rng.chisquare(n_input, b))[None, :]
    W /= sigma
    return W.astype(dtype, copy=False)


def rff_frequencies(X: np.ndarray, n_features: int, *, kernel: str = "rbf",
                    bandwidth="median", sampling: str = "gaussian", random_state=None,
                    dtype=np.float64) -> tuple[np.ndarray, float]:
    """``(Omega, sigma)``: the bandwidth of ``kernel`` for data ``X`` (a float, or a rule of
    :func:`median_heuristic` applied to ``X``) and frequencies drawn with it
    (:func:`rff_weights`); what :class:`RandomFourierFeatures` does in ``fit``.

    Examples
    --------
    >>> import numpy as np
    >>> X = np.random.default_rng(0).normal(size=(30, 4))
    >>> Omega, sigma = rff_frequencies(X, 50, kernel="laplacian", random_state=0)
    >>> Omega.shape, sigma == median_heuristic(X, kernel="laplacian")
    ((4, 50), True)
    """
    check_rff_kernel(kernel)
    sigma = resolve_bandwidth(bandwidth, X, kernel=kernel)
    return rff_weights(np.shape(X)[1], n_features, sigma, random_state, dtype,
                       sampling=sampling, kernel=kernel), sigma


def omega_fingerprint(Omega: np.ndarray) -> str:
    """Short hash (16 hex digits of SHA-1) of random-feature frequencies ``Omega``, read as
    float64: sums of the features of two different maps (random-feature statistics, federated
    clients' replies) carry different fingerprints, so they are never added together.

    Cost: ``O(d N)`` for ``Omega`` of shape ``(d, N)``.

    Examples
    --------
    >>> a, b = rff_weights(3, 8, 1.0, random_state=0), rff_weights(3, 8, 1.0, random_state=1)
    >>> len(omega_fingerprint(a)), omega_fingerprint(a) == omega_fingerprint(a.copy())
    (16, True)
    >>> omega_fingerprint(a) == omega_fingerprint(b)
    False
    """
    return hashlib.sha1(np.ascontiguousarray(Omega, dtype=np.float64).tobytes()).hexdigest()[:16]


def cos_sin_into(P: np.ndarray, out: np.ndarray, *, fast: bool = False) -> np.ndarray:
    """``out[:, :N] = cos(P)``, ``out[:, N:] = sin(P)`` for ``P`` of shape ``(n, N)``.

    ``fast=True`` evaluates cos/sin in float32 whatever the dtype of ``P`` and ``out`` (numpy's
    SIMD float32 cos/sin are ~10x faster than float64 on x86). The phases are rounded to float32
    first, so the absolute error is about ``6e-8 * |P| + 1e-7`` (below ``1e-5`` for phases up to
    100): far below the Monte-Carlo error ``~ 1 / sqrt(N)`` of random features. ``P`` may alias
    ``out[:, N:]`` (it is read before the sine half is written). Returns ``out``.

    Examples
    --------
    >>> import numpy as np
    >>> P = np.linspace(-20, 20, 12).reshape(3, 4)
    >>> exact = cos_sin_into(P, np.empty((3, 8)))
    >>> bool(np.abs(cos_sin_into(P, np.empty((3, 8)), fast=True) - exact).max() < 1e-5)
    True
    """
    N = P.shape[1]
    if fast and P.dtype != np.float32:
        P32 = P.astype(np.float32)
        out[:, :N] = np.cos(P32)
        np.sin(P32, out=P32)
        out[:, N:] = P32
    else:
        np.cos(P, out=out[:, :N])
        np.sin(P, out=out[:, N:])
    return out


def rff_map(X: np.ndarray, Omega: np.ndarray, *, fast_trig: bool = False,
            out: np.ndarray | None = None, scaled: bool = True) -> np.ndarray:
    """Random features ``N^{-1/2} [cos(X Omega), sin(X Omega)]``, shape ``(n, 2N)``.

    Forms the whole ``(n, 2N)`` block; for large ``n`` iterate :func:`rff_chunks` instead.
    ``fast_trig``: cos/sin in float32 (see :func:`cos_sin_into`); the output keeps the dtype of
    ``X @ Omega``. ``out``: an ``(n, 2N)`` array to write into (the phases ``X Omega`` are
    computed in its sine half, no other temporary), so a chunked caller reuses one buffer;
    ``scaled=False`` leaves out the factor ``N^{-1/2}`` (for callers that scale their sums once,
    as :func:`shiftlearn.adaptation.rf_stats` does). The one feature map of the library.

    Examples
    --------
    >>> import numpy as np
    >>> X, W = np.ones((2, 3)), np.full((3, 4), 0.5)
    >>> Z = rff_map(X, W)
    >>> bool(np.allclose(Z @ Z.T, 1.0)), Z.shape
    (True, (2, 8))
    >>> U = rff_map(X, W, out=np.empty((2, 8)), scaled=False)
    >>> bool(np.array_equal(U / 2.0, Z))           # N = 4 frequencies: scale 1/2
    True
    """
    N = Omega.shape[1]
    if is_foreign_array(X):        # another namespace: cos/sin in X's dtype, on its device
        import array_api_compat

        xp = array_api_compat.array_namespace(X)
        P = X @ Omega
        Z = xp.concat([xp.cos(P), xp.sin(P)], axis=1)
        if scaled:
            Z *= 1.0 / float(np.sqrt(N))
        return Z
    if out is None:
        P = X @ Omega
        Z = np.empty((X.shape[0], 2 * N), dtype=P.dtype)
    else:
        Z = out
        P = np.matmul(X, Omega, out=Z[:, N:])
    cos_sin_into(P, Z, fast=fast_trig)
    if scaled:
        Z *= 1.0 / np.sqrt(N)
    return Z


def _chunk_rows(n_columns: int, chunk_size: int | None, itemsize: int = 8) -> int:
    if chunk_size is not None:
        if chunk_size < 1:
            raise ValueError(f"chunk_size must be >= 1, got {chunk_size}.")
        return int(chunk_size)
    return max(1, DEFAULT_CHUNK_BYTES // (itemsize * max(1, n_columns)))


def rff_chunks(X: np.ndarray, Omega: np.ndarray, chunk_size: int | None = None, *,
               fast_trig: bool = False) -> Iterator[tuple[slice, np.ndarray]]:
    """Yield ``(rows, Z_rows)`` blocks of random features; memory O(chunk × 2N)."""
    rows = _chunk_rows(2 * Omega.shape[1], chunk_size)
    for start in range(0, X.shape[0], rows):
        sl = slice(start, min(start + rows, X.shape[0]))
        yield sl, rff_map(np.asarray(X[sl], dtype=Omega.dtype), Omega, fast_trig=fast_trig)


def rff_sum(X: np.ndarray, Omega: np.ndarray, chunk_size: int | None = None) -> np.ndarray:
    """``sum_i z(x_i)``, shape ``(2N,)``, chunked: features in ``Omega``'s dtype (float32
    ``Omega``: single-precision cos/sin), always summed in float64. The piece that row blocks
    held elsewhere (Dask) add up.

    Examples
    --------
    >>> X = np.random.default_rng(0).normal(size=(10, 3)); Om = rff_weights(3, 4, 1.0, 0)
    >>> bool(np.allclose(rff_sum(X[:4], Om) + rff_sum(X[4:], Om), 10 * rff_mean(X, Om)))
    True
    """
    total = np.zeros(2 * Omega.shape[1], dtype=np.float64)
    for _, Z in rff_chunks(X, Omega, chunk_size):
        total += Z.sum(axis=0, dtype=np.float64)
    return total


def rff_mean(X: np.ndarray, Omega: np.ndarray, chunk_size: int | None = None) -> np.ndarray:
    """Random-feature mean embedding ``(1/n) sum_i z(x_i)``, shape ``(2N,)``, chunked
    (:func:`rff_sum` over ``n``)."""
    return rff_sum(X, Omega, chunk_size) / max(X.shape[0], 1)


class RandomFourierFeatures(ClassNamePrefixFeaturesOutMixin, TransformerMixin, BaseEstimator):
    """Random Fourier features of a shift-invariant kernel, as in the RF-TCA paper.

    ``transform(X) = N^{-1/2} [cos(X Omega), sin(X Omega)]``, ``Omega`` drawn from the
    kernel's spectral law (:func:`rff_weights`: ``N(0, 1/sigma^2)`` for the Gaussian kernel),
    ``2 * n_features`` output columns, computed in chunks of ``chunk_size`` rows. Parameters
    are checked by their declarative ``_parameter_constraints``; ``fit`` records
    ``n_features_in_`` (and ``feature_names_in_`` for a DataFrame) and ``transform`` checks
    them; the output columns are named ``randomfourierfeatures0, ...``
    (``get_feature_names_out``). float32 input gives float32 output (the map is computed in
    the input's precision), anything else float64.

    Parameters
    ----------
    n_features : int, default=500
        Number of frequencies ``N`` (output has ``2N`` columns).
    bandwidth : float or str (a rule of BANDWIDTH_RULES, "<f>*<rule>"), default="median"
        Kernel bandwidth ``sigma`` or the rule that sets it from the data in ``fit`` (rules per
        kernel: :func:`median_heuristic`).
    random_state : int, Generator or None
        Seed of ``Omega``.
    chunk_size : int or None
        Rows per chunk; ``None`` keeps each chunk near 64 MB.
    sampling : {"gaussian", "orthogonal"}, default="gaussian"
        i.i.d. frequencies of the kernel's law, or orthogonal random features (``"rbf"``
        only; :func:`rff_weights`).
    kernel : {"rbf", "laplacian", "cauchy"}, default="rbf"
        ``exp(-||a-b||^2/(2 sigma^2))``, ``exp(-||a-b||_1/sigma)`` or
        ``prod_j 1/(1 + ((a_j-b_j)/sigma)^2)``.

    Attributes
    ----------
    sigma_ : float
    omega_ : ndarray of shape ``(n_features_in_, n_features)``
    n_features_in_ : int
    feature_names_in_ : ndarray of str (DataFrame input only)

    Examples
    --------
    >>> import numpy as np
    >>> X = np.random.default_rng(0).normal(size=(50, 3))
    >>> Z = RandomFourierFeatures(n_features=100, random_state=0).fit_transform(X)
    >>> Z.shape
    (50, 200)
    """

    _parameter_constraints: dict = {
        "n_features": [Interval(Integral, 1, None, closed="left")],
        "bandwidth": [BandwidthSpec(BANDWIDTH_RULES)],
        "random_state": ["random_state", np.random.Generator],
        "chunk_size": [Interval(Integral, 1, None, closed="left"), None],
        "sampling": [StrOptions(set(RFF_SAMPLINGS))],
        "kernel": [StrOptions(set(RFF_KERNELS))],
    }

    def __init__(self, n_features=500, bandwidth="median", random_state=None, chunk_size=None,
                 sampling="gaussian", kernel="rbf"):
        self.n_features = n_features
        self.bandwidth = bandwidth
        self.random_state = random_state
        self.chunk_size = chunk_size
        self.sampling = sampling
        self.kernel = kernel

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.transformer_tags.preserves_dtype = ["float64", "float32"]
        return tags

    @property
    def _n_features_out(self):
        return 2 * self.omega_.shape[1]

    def fit(self, X, y=None):
        """Draw the frequencies (bandwidth from ``X`` when it is a rule). Returns ``self``."""
        check_params(self)
        X = check_X(X, estimator=self, reset=True)
        if X.shape[0] < 2 and parse_bandwidth(self.bandwidth)[1] not in (None, "n_features"):
            raise ValueError(f"n_samples={X.shape[0]}: the bandwidth rule {self.bandwidth!r} "
                             "needs at least 2 rows; pass a numeric bandwidth.")
        self.omega_, self.sigma_ = rff_frequencies(
            X, self.n_features, kernel=self.kernel, bandwidth=self.bandwidth,
            sampling=self.sampling, random_state=self.random_state)
        return self

    def transform(self, X):
        """The features of ``X``, shape ``(n_samples, 2 * n_features)``."""
        check_is_fitted(self, "omega_")
        X = check_X(X, estimator=self, reset=False)
        om = self.omega_.astype(X.dtype, copy=False)
        out = np.empty((X.shape[0], 2 * om.shape[1]), dtype=X.dtype)
        for sl, Z in rff_chunks(X, om, self.chunk_size):
            out[sl] = Z
        return out


# ---------------------------------------------------------------------------------------------
# Nyström
# ---------------------------------------------------------------------------------------------
def nystroem(n_components: int, sigma: float, random_state=None) -> Nystroem:
    """scikit-learn's Nyström approximation of the Gaussian kernel with bandwidth ``sigma``.

    Returns an unfitted :class:`sklearn.kernel_approximation.Nystroem`; its features
    ``Z`` satisfy ``Z Z^T ≈ K``, exactly when every row is a landmark.
    """
    rs = random_state if not isinstance(random_state, np.random.Generator) else \
        int(random_state.integers(2**31 - 1))
    return Nystroem(kernel="rbf", gamma=gamma_from_sigma(sigma), n_components=n_components,
                    random_state=rs)


# ---------------------------------------------------------------------------------------------
# MMD
# ---------------------------------------------------------------------------------------------
def domain_mean_matrix(groups: np.ndarray, n_groups: int | None = None
                       ) -> tuple[np.ndarray, np.ndarray]:
    """``E`` of shape ``(n, m)`` with ``E[i, d] = 1/n_d`` if row ``i`` is in group ``d``.

    ``E^T Phi`` are the group mean embeddings and ``E^T K E`` the mean kernel values between
    groups (SCA's domains, marginal transfer's tasks). Returns ``(E, group_ids)``: by default
    one column per group present, in sorted order. ``n_groups`` given: ``groups`` are indices
    ``0 .. n_groups - 1`` and column ``t`` is group ``t`` (a group without rows has a zero
    column), as marginal transfer numbers its tasks.

    Examples
    --------
    >>> E, ids = domain_mean_matrix(np.array([2, -1, 2]))
    >>> E.tolist(), ids.tolist()
    ([[0.0, 0.5], [1.0, 0.0], [0.0, 0.5]], [-1, 2])
    >>> domain_mean_matrix(np.array([0, 0]), n_groups=2)[0].tolist()
    [[0.5, 0.0], [0.5, 0.0]]
    """
    groups = np.asarray(groups)
    if n_groups is None:
        ids, inv, counts = np.unique(groups, return_inverse=True, return_counts=True)
    else:
        ids, inv = np.arange(n_groups), groups
        counts = np.bincount(groups, minlength=n_groups).astype(np.float64)
    E = np.zeros((inv.shape[0], ids.shape[0]))
    E[np.arange(inv.shape[0]), inv] = 1.0 / counts[inv]
    return E, ids


def mmd_vector(sample_domain: np.ndarray) -> np.ndarray:
    """TCA's ``l``: ``1/n_s`` on source rows (id > 0), ``-1/n_t`` on target rows (id < 0).

    ``l^T K l`` is the biased MMD² between the pooled sources and the pooled targets, and
    ``L = l l^T`` is Pan et al.'s MMD matrix (:func:`mmd_matrix`, ``"tca"``). With no target (or
    no source) row the vector is zero (no discrepancy to reduce). In random-feature space the
    same vector is :meth:`shiftlearn.adaptation.RFStats.mmd_vector` (``Sigma l``).

    Examples
    --------
    >>> mmd_vector(np.array([1, 1, -2])).tolist()
    [0.5, 0.5, -1.0]
    """
    E, sides = domain_mean_matrix(np.asarray(sample_domain) > 0)   # sides: [False, True]
    if sides.shape[0] < 2:
        return np.zeros(E.shape[0])
    return E[:, 1] - E[:, 0]


def mmd_matrix(groups: np.ndarray, *, normalization: str = "tca") -> np.ndarray:
    """The n×n MMD coefficient matrix ``L`` with ``tr(K L)`` = the domain discrepancy.

    * ``"tca"`` (two groups only): Pan et al.'s ``L`` (``1/n_s^2``, ``1/n_t^2``,
      ``-1/(n_s n_t)``), so ``tr(K L) = MMD^2`` (biased).
    * ``"sca"``: the SCA/DICA distributional variance over ``m`` groups,
      ``L = (1/m) E (I - 11^T/m) E^T``; for ``m = 2`` it is ``L_tca / 4``.

    Methods that only need ``K L K`` should use ``E`` from :func:`domain_mean_matrix` instead
    (cost ``O(n^2 m)``, no n×n ``L``).
    """
    E, ids = domain_mean_matrix(groups)
    m = ids.shape[0]
    if normalization == "tca":
        if m != 2:
            raise ValueError(f"The TCA MMD matrix needs exactly 2 groups, got {m}.")
        v = E[:, 0] - E[:, 1]       # = -mmd_vector(sample_domain) for a source and a target
        return np.outer(v, v)
    if normalization == "sca":
        C = (np.eye(m) - 1.0 / m) / m
        return E @ C @ E.T
    raise ValueError(f"Unknown normalization {normalization!r}; use 'tca' or 'sca'.")


def mmd2_from_kernels(K_XX: np.ndarray, K_YY: np.ndarray, K_XY: np.ndarray, *,
                      unbiased: bool = False) -> float:
    """MMD² from the three kernel blocks; biased (V-statistic) or unbiased (U-statistic)."""
    n, m = K_XX.shape[0], K_YY.shape[0]
    if is_foreign_array(K_XX):        # another namespace: the same sums on its device
        import array_api_compat

        xp = array_api_compat.array_namespace(K_XX)
        if unbiased:
            if n < 2 or m < 2:
                raise ValueError("The unbiased MMD estimate needs at least 2 points per "
                                 "sample.")
            xx = (float(xp.sum(K_XX)) - float(xp.linalg.trace(K_XX))) / (n * (n - 1))
            yy = (float(xp.sum(K_YY)) - float(xp.linalg.trace(K_YY))) / (m * (m - 1))
        else:
            xx, yy = float(xp.mean(K_XX)), float(xp.mean(K_YY))
        return float(xx + yy - 2.0 * float(xp.mean(K_XY)))
    if unbiased:
        if n < 2 or m < 2:
            raise ValueError("The unbiased MMD estimate needs at least 2 points per sample.")
        xx = (K_XX.sum() - np.trace(K_XX)) / (n * (n - 1))
        yy = (K_YY.sum() - np.trace(K_YY)) / (m * (m - 1))
    else:
        xx = K_XX.mean()
        yy = K_YY.mean()
    return float(xx + yy - 2.0 * K_XY.mean())


def _check_two_samples(X, Y):
    """``(X, Y, pooled rows)`` validated: NumPy arrays by :func:`check_X`; two arrays of
    another array-API namespace (under scikit-learn's array-API dispatch) kept as they are,
    on their device; a mix of kinds refused."""
    from ._array_api import array_api_namespace, check_X_array_api

    xp = array_api_namespace(X, owner="MMD", supported=True)
    if xp is None and not is_foreign_array(Y):
        X, Y = check_X(X, name="X"), check_X(Y, name="Y")
        return X, Y, np.vstack([X, Y])
    if xp is None or type(Y) is not type(X):
        raise ValueError(f"X and Y must be arrays of the same kind, got {type(X).__name__} "
                         f"and {type(Y).__name__}.")

    X = check_X_array_api(X, xp, name="X")
    Y = check_X_array_api(Y, xp, name="Y")
    if Y.shape[1] != X.shape[1]:
        raise ValueError(f"X has {X.shape[1]} features but Y has {Y.shape[1]}.")
    Y = xp.astype(Y, X.dtype)
    return X, Y, xp.concat([X, Y], axis=0)


def mmd2(X: np.ndarray, Y: np.ndarray, *, kernel="rbf", bandwidth="median",
         unbiased: bool = False) -> float:
    """MMD² between samples ``X`` and ``Y`` for ``kernel`` in :data:`KERNELS` or a callable
    (the bandwidth rule of a shift-invariant kernel is applied to the pooled sample).

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> mmd2(rng.normal(size=(100, 2)), rng.normal(size=(100, 2)) + 3) > 0.5
    True
    >>> mmd2(rng.normal(size=(100, 2)), rng.normal(size=(100, 2)) + 3, kernel="laplacian") > 0.5
    True
    """
    X, Y, pooled = _check_two_samples(X, Y)
    sigma = (resolve_bandwidth(bandwidth, pooled, kernel=kernel)
             if isinstance(kernel, str) and kernel in RFF_KERNELS else None)
    return mmd2_from_kernels(kernel_matrix(X, kernel=kernel, sigma=sigma),
                             kernel_matrix(Y, kernel=kernel, sigma=sigma),
                             kernel_matrix(X, Y, kernel=kernel, sigma=sigma), unbiased=unbiased)


def _pooled_bandwidth_rows_dask(X, Y) -> np.ndarray:
    """The rows of ``vstack([X, Y])`` that a bandwidth rule reads (the seeded subsample of
    :func:`median_heuristic`), for :func:`mmd2_rff` on Dask input: only those rows are computed
    (``X[idx]`` reads the blocks that hold them)."""
    import dask.array as da
    from sklearn.utils import check_array

    X, Y = as_dask_2d(X, "X"), as_dask_2d(Y, "Y")
    if X.shape[1] != Y.shape[1]:
        raise ValueError(f"X has {X.shape[1]} features but Y has {Y.shape[1]}.")
    n = X.shape[0] + Y.shape[0]
    idx = bandwidth_rows(n)
    if idx is None:
        idx = np.arange(n)
    rows = da.concatenate([X, Y])[idx].compute()
    from_x = idx < X.shape[0]                  # NaN/inf named by the sample they are in
    for part, name in ((from_x, "X"), (~from_x, "Y")):
        check_array(rows[part], dtype=(np.float64, np.float32), ensure_all_finite=True,
                    ensure_min_samples=0, input_name=name)
    return rows


def _rff_sum_block(xb, omega, chunk_size, name):
    from sklearn.utils import check_array

    xb = check_array(xb, dtype=(np.float64, np.float32), ensure_all_finite=True,
                     ensure_min_samples=0, input_name=name)
    return rff_sum(xb, omega, chunk_size)[None, :]


def _rff_mean_dask(X, omega: np.ndarray, chunk_size: int | None = None, name: str = "X"
                   ) -> np.ndarray:
    """:func:`rff_mean` of a Dask array: one ``(1, 2N)`` feature sum per row block (computed
    where the block lives, rows checked as numpy input), added by Dask's tree reduction; ``X``
    is never gathered."""
    X = as_dask_2d(X, name)
    D = 2 * omega.shape[1]
    if X.shape[1] != omega.shape[0]:
        raise ValueError(f"{name} has {X.shape[1]} features but Omega was drawn for "
                         f"{omega.shape[0]}.")
    sums = X.map_blocks(_rff_sum_block, omega, chunk_size, name, dtype=np.float64,
                        chunks=((1,) * X.numblocks[0], (D,)), meta=np.empty((0, 0)))
    return sums.sum(axis=0).compute() / max(X.shape[0], 1)


def mmd2_rff(X: np.ndarray, Y: np.ndarray, Omega: np.ndarray | None = None,
             chunk_size: int | None = None, *, kernel: str | None = None, bandwidth=None,
             n_features: int | None = None, sampling: str | None = None,
             random_state=None) -> float:
    """Random-feature MMD² ``||mean z(X) - mean z(Y)||^2``: the biased MMD² of the
    random-feature kernel, in ``O((n + m) N d)`` time and ``O(N)`` memory beyond a chunk.

    Either give the frequencies ``Omega`` (the kernel is the one they were drawn for), or leave
    it ``None`` and describe them: ``kernel`` (default ``"rbf"``), ``bandwidth`` (default
    ``"median"``, a rule applied to the pooled sample), ``n_features`` (default 1,000),
    ``sampling`` (default ``"gaussian"``) and ``random_state`` (:func:`rff_frequencies`).
    Passing both ``Omega`` and any of these is a ``ValueError`` (they would be ignored).
    Dask arrays (either or both samples) are never gathered: feature sums per row block,
    added; a bandwidth rule computes only the seeded rows it reads (the same value as for
    numpy input).

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> X, Y = rng.normal(size=(300, 2)), rng.normal(size=(300, 2)) + 1
    >>> exact = mmd2(X, Y, kernel="cauchy")
    >>> approx = mmd2_rff(X, Y, kernel="cauchy", n_features=4000, random_state=0)
    >>> bool(abs(approx - exact) < 0.1 * exact)
    True
    """
    described = {"kernel": kernel, "bandwidth": bandwidth, "n_features": n_features,
                 "sampling": sampling, "random_state": random_state}
    dask_input = hasattr(X, "__dask_graph__") or hasattr(Y, "__dask_graph__")
    foreign = not dask_input and (is_foreign_array(X) or is_foreign_array(Y))
    if foreign:
        X, Y, pooled = _check_two_samples(X, Y)
    if Omega is None:
        if dask_input:      # only the rows the bandwidth rule reads are computed
            pooled = _pooled_bandwidth_rows_dask(X, Y)
        elif not foreign:
            X = check_X(X, name="X")
            Y = check_X(Y, name="Y")
            pooled = np.vstack([X, Y])
        Omega, _ = rff_frequencies(
            pooled, 1000 if n_features is None else n_features,
            kernel="rbf" if kernel is None else kernel,
            bandwidth="median" if bandwidth is None else bandwidth,
            sampling="gaussian" if sampling is None else sampling, random_state=random_state)
    else:
        given = [k for k, v in described.items() if v is not None]
        if given:
            raise ValueError(f"mmd2_rff: Omega fixes the kernel and its frequencies, so "
                             f"{', '.join(given)} would be ignored; pass either Omega or "
                             "kernel/bandwidth/n_features/sampling/random_state.")
    if dask_input:
        diff = (_rff_mean_dask(X, Omega, chunk_size, "X")   # never gathered: sums per block
                - _rff_mean_dask(Y, Omega, chunk_size, "Y"))
    elif foreign:                     # features and their means on the samples' device
        import array_api_compat

        from ._array_api import from_numpy

        xp = array_api_compat.array_namespace(X)
        om = from_numpy(to_numpy(Omega), X)
        rows = _chunk_rows(2 * om.shape[1], chunk_size)

        def mean(A):
            n = A.shape[0]
            total = sum(xp.sum(xp.astype(rff_map(A[s:min(s + rows, n), :], om), xp.float64),
                               axis=0) for s in range(0, n, rows))
            return total / max(n, 1)

        d = mean(X) - mean(Y)
        return float(xp.vecdot(d, d))
    else:
        diff = rff_mean(X, Omega, chunk_size) - rff_mean(Y, Omega, chunk_size)
    return float(diff @ diff)


# ---------------------------------------------------------------------------------------------
# exact feature map of a kernel matrix (the limit of random features)
# ---------------------------------------------------------------------------------------------
#: eigenvalues of a kernel matrix at or below this fraction of the largest are dropped by
#: :func:`kernel_feature_factor` (rounding makes them meaningless: ``~1e-16 n lambda_max``)
FACTOR_RTOL = 1e-10


def kernel_feature_factor(K: np.ndarray, *, rtol: float = FACTOR_RTOL
                          ) -> tuple[np.ndarray, np.ndarray]:
    """An exact finite feature map of a kernel matrix: ``(Phi, P)`` with ``Phi Phi^T = K``.

    ``K = U diag(lam) U^T`` (symmetrised, ``scipy.linalg.eigh``); eigenvalues at or below
    ``rtol * lam_max`` are dropped (their directions carry no kernel mass). ``Phi = U lam^{1/2}``
    (``n x r``) are the features of the training rows, and ``P = U lam^{-1/2}`` maps any point
    ``x`` to its features ``k_x^T P`` (``k_x = [k(x_1, x), ..., k(x_n, x)]``; for a training row
    this is its row of ``Phi``). This is the Nyström map with every row a landmark: the feature
    map that random features approximate as ``N -> infinity`` (as far as the training rows can
    tell), so any random-feature method run on ``Phi`` is its exact-kernel counterpart (R-TCA
    for RF-TCA, see ``shiftlearn.adaptation.RFTCA(exact=True)``). ``O(n^3)`` time, ``O(n^2)``
    memory.

    Examples
    --------
    >>> import numpy as np
    >>> X = np.random.default_rng(0).normal(size=(20, 3))
    >>> K = laplacian_kernel(X, sigma=2.0)
    >>> Phi, P = kernel_feature_factor(K)
    >>> bool(np.allclose(Phi @ Phi.T, K)), bool(np.allclose(K @ P, Phi))
    (True, True)
    """
    K = np.asarray(K, dtype=np.float64)
    if K.ndim != 2 or K.shape[0] != K.shape[1]:
        raise ValueError(f"K must be a square kernel matrix, got shape {K.shape}.")
    lam, U = scipy.linalg.eigh((K + K.T) * 0.5, check_finite=True)
    top = float(lam[-1]) if lam.size else 0.0
    if not top > 0:
        raise ValueError("The kernel matrix has no positive eigenvalue (it is zero or not "
                         "positive semi-definite); check the kernel and X.")
    keep = lam > rtol * top
    root = np.sqrt(lam[keep])
    U = U[:, keep]
    return U * root[None, :], U / root[None, :]


@dataclass(frozen=True)
class MMDTestResult:
    """Outcome of :func:`mmd_permutation_test`."""

    statistic: float
    p_value: float
    null_distribution: np.ndarray
    sigma: float | None

    def reject(self, alpha: float = 0.05) -> bool:
        """True when the samples differ at level ``alpha``."""
        return self.p_value <= alpha


#: relative tolerance of :func:`mmd_permutation_test` for ties between the observed and a null
#: statistic (times the largest kernel entry)
TIE_RTOL = 1e-9


def mmd_permutation_test(
    X: np.ndarray,
    Y: np.ndarray,
    *,
    kernel: str | Callable = "rbf",
    bandwidth="median",
    n_permutations: int = 500,
    unbiased: bool = True,
    random_state=None,
) -> MMDTestResult:
    """Two-sample test of ``P_X = P_Y`` with the MMD² statistic and a permutation null.

    The pooled kernel is computed once; each permutation costs one matrix-vector product
    (done in batches). ``p = (1 + #{null >= observed}) / (1 + n_permutations)``, which is a
    valid level-alpha test.

    Ties: a null statistic counts as ``>= observed`` when it is at least
    ``observed - 1e-9 * max|K_ij|`` (``TIE_RTOL = 1e-9`` times the largest pooled kernel
    entry, the scale of the statistic). Equal statistics computed through different sums differ
    by rounding (``~N eps max|K|``); without the tolerance identical or constant samples gave
    ``p = 1 / (1 + n_permutations)``. With it, identical samples give ``p = 1``, and so do
    samples whose permutations tie with the observed split (discrete data).

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> res = mmd_permutation_test(rng.normal(size=(60, 2)), rng.normal(size=(60, 2)) + 1,
    ...                            n_permutations=200, random_state=0)
    >>> res.reject(0.05)
    True
    >>> same = rng.normal(size=(30, 2))
    >>> mmd_permutation_test(same, same.copy(), n_permutations=50, random_state=0).p_value
    1.0
    """
    if not isinstance(n_permutations, Integral) or isinstance(n_permutations, bool) \
            or n_permutations < 1:
        raise ValueError(f"n_permutations must be a positive integer, got {n_permutations!r}; "
                         "the p-value is (1 + #{null >= observed}) / (1 + n_permutations).")
    X = check_X(X, name="X")
    Y = check_X(Y, name="Y")
    if X.shape[1] != Y.shape[1]:
        raise ValueError(f"X has {X.shape[1]} features but Y has {Y.shape[1]}.")
    n, m = X.shape[0], Y.shape[0]
    if min(n, m) < 2:
        raise ValueError("Each sample needs at least 2 rows for the MMD test.")
    Z = np.vstack([X, Y])
    sigma = resolve_bandwidth(bandwidth, Z) if kernel == "rbf" else None
    K = kernel_matrix(Z, kernel=kernel, sigma=sigma)
    tie_tol = TIE_RTOL * float(np.max(np.abs(K)))
    if unbiased:
        np.fill_diagonal(K, 0.0)
    rng = np.random.default_rng(random_state)
    N = n + m

    def stats(perms: np.ndarray) -> np.ndarray:
        # perms: (P, N) index arrays; first n of each row form the "X" sample
        P = perms.shape[0]
        inX = np.zeros((N, P), dtype=bool)
        inX[perms[:, :n].T, np.arange(P)[None, :]] = True
        u = inX / n
        v = (~inX) / m
        Ku, Kv = K @ u, K @ v
        xx = np.einsum("ij,ij->j", u, Ku)
        yy = np.einsum("ij,ij->j", v, Kv)
        xy = np.einsum("ij,ij->j", u, Kv)
        if unbiased:
            xx = xx * n / (n - 1)
            yy = yy * m / (m - 1)
        return xx + yy - 2 * xy

    observed = float(stats(np.arange(N)[None, :])[0])
    null = []
    batch = 64
    for start in range(0, n_permutations, batch):
        P = min(batch, n_permutations - start)
        null.append(stats(np.argsort(rng.random((P, N)), axis=1)))
    null = np.concatenate(null)
    p_value = (1.0 + np.sum(null >= observed - tie_tol)) / (1.0 + n_permutations)
    return MMDTestResult(statistic=observed, p_value=float(p_value), null_distribution=null,
                         sigma=sigma)
