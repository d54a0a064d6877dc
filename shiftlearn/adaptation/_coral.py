"""CORAL: correlation alignment of the source rows onto the target's first and second moments.

Sun, Feng and Saenko, "Return of frustratingly easy domain adaptation" (AAAI 2016) and
"Correlation alignment for unsupervised domain adaptation" (2017): re-colour the source features
so that their covariance is the target's, ``x -> (x - m_s) C_s^{-1/2} C_t^{1/2} + m_t``, and
train the classifier on them; the target rows are used as they are.

Contract: several sources (targets) are pooled into one source map and one target
distribution; ``transform(X)`` treats the rows as target rows and
``transform(X, sample_domain=sd)`` maps the rows with ``sd > 0`` as source rows; without target
rows in ``fit`` the map is the identity, with a warning. Design notes (why CORAL, the means,
the shrinkage, the factored route): ``docs/dev/coral.md``.
"""

from __future__ import annotations

import warnings
from numbers import Real

import numpy as np
from sklearn.base import BaseEstimator, OneToOneFeatureMixin, TransformerMixin
from sklearn.covariance import empirical_covariance, ledoit_wolf, shrunk_covariance
from sklearn.preprocessing import StandardScaler
from sklearn.utils.validation import check_is_fitted

from .._array_api import (
    array_api_namespace,
    check_X_array_api,
    from_numpy,
    is_foreign_array,
    to_numpy,
)
from .._constraints import Interval, StrOptions, check_params
from .._resources import check_dense_memory
from .._validation import (
    check_sample_domain,
    check_X,
    check_X_y_domain,
    check_y_domain,
    warn_if_plain_pipeline,
)
from ._memory import FitMemory

__all__ = ["CORAL", "coral_covariance"]

#: eigenvalues of an unshrunk covariance below ``rtol * largest`` make it singular
_SINGULAR_RTOL = 1e-10


def coral_covariance(X: np.ndarray, shrinkage="auto") -> np.ndarray:
    """The covariance CORAL aligns: empirical, shrunk toward ``tr(C)/d I``, or Ledoit-Wolf.

    Parameters
    ----------
    X : ndarray of shape (n_samples, n_features)
    shrinkage : "auto", "ledoit_wolf", float in [0, 1] or None
        ``"auto"``: Ledoit-Wolf on the standardised columns, rescaled (scikit-learn's
        ``LinearDiscriminantAnalysis`` and skada's ``reg="auto"``); ``"ledoit_wolf"``:
        Ledoit-Wolf on the centred columns as they are (``sklearn.covariance.ledoit_wolf``); a
        float: that shrinkage (``sklearn.covariance.shrunk_covariance``); ``None``: the
        empirical covariance.

    Examples
    --------
    >>> X = np.random.default_rng(0).normal(size=(50, 3))
    >>> C = coral_covariance(X, 1.0)
    >>> bool(np.allclose(C, np.trace(np.cov(X.T, bias=True)) / 3 * np.eye(3)))
    True
    """
    X = np.asarray(X, dtype=np.float64)
    if shrinkage is None:
        return empirical_covariance(X)
    if shrinkage == "ledoit_wolf":
        return ledoit_wolf(X)[0]
    if isinstance(shrinkage, str):
        # scikit-learn's scaler: (near-)constant columns keep scale 1, as in skada and LDA
        sc = StandardScaler().fit(X)
        C = ledoit_wolf(sc.transform(X))[0]
        return sc.scale_[:, None] * C * sc.scale_[None, :]
    return shrunk_covariance(empirical_covariance(X), shrinkage=float(shrinkage))


def _sqrt_power(C, sign: int, who: str, shrinkage) -> np.ndarray:
    """``C^{sign/2}`` of a symmetric PSD matrix (one ``eigh``, one ``d x d`` product): the
    source covariance's ``-1/2``, the target's ``+1/2``.

    An unshrunk covariance (``shrinkage`` None or 0) is refused when its smallest eigenvalue is
    below ``1e-10`` times its largest. A shrunk one is positive definite by construction; its
    eigenvalues are floored at ``d * eps`` times the largest, so that round-off (columns of very
    different scales) cannot make one zero or negative. Every feature constant is refused.
    ``C`` may be given as its eigendecomposition ``(w, V)``."""
    w, V = C if isinstance(C, tuple) else np.linalg.eigh(C)
    r = np.sqrt(_floored_spectrum(w, who, shrinkage))
    return (V / r if sign < 0 else V * r) @ V.T


def _floored_spectrum(w: np.ndarray, who: str, shrinkage) -> np.ndarray:
    """The ascending eigenvalues ``w`` of a ``d x d`` covariance floored at ``d eps`` times the
    largest, after the singularity check of :func:`_sqrt_power` (both routes, every
    namespace: ``w`` on the host)."""
    top = float(w[-1]) if w.size else 0.0
    unshrunk = shrinkage is None or (not isinstance(shrinkage, str) and shrinkage == 0)
    if top <= 0 or (unshrunk and w[0] <= _SINGULAR_RTOL * top):
        why = ("every feature is constant" if top <= 0 else
               f"smallest eigenvalue {w[0]:.3g} against largest {top:.3g}")
        raise ValueError(
            f"CORAL: the {who} covariance is singular ({why}; shrinkage={shrinkage!r}), so it "
            "cannot be whitened. Use shrinkage='auto' (Ledoit-Wolf) or a shrinkage in (0, 1], "
            "give more rows than features, or drop the constant features.")
    return np.maximum(w, w.shape[0] * np.finfo(np.float64).eps * top)


def lowrank_coral_power(X: np.ndarray, shrinkage: float, sign: int, who: str, memory=None
                        ) -> tuple[float, np.ndarray, np.ndarray]:
    """``C^{sign/2}`` of the shrunk covariance of ``X`` in factored form, for ``n <= d``.

    With the thin SVD of the centred rows, ``X_c = U diag(s) V^T`` (``O(n^2 d)``), the shrunk
    covariance ``(1 - a) X_c^T X_c / n + a mu I`` (``mu`` its mean eigenvalue) is
    ``alpha I + V diag(e - alpha) V^T`` with ``alpha = a mu`` and ``e = (1 - a) s^2 / n + alpha``,
    so every power is ``alpha^p I + V diag(e^p - alpha^p) V^T``: exact, no ``d x d`` matrix.
    The eigenvalues are floored as in the dense route (``d eps`` times the largest).

    Returns ``(c, g, V)`` with ``C^{sign/2} = c I + V diag(g) V^T``. With a ``memory``
    (:class:`~shiftlearn.adaptation.FitMemory`) the SVD of the rows is kept there: it depends
    on neither the shrinkage nor the power.

    Raises
    ------
    ValueError
        Every feature is constant, or ``shrinkage`` is 0 (the covariance of ``n <= d`` rows
        is singular), with the fix.
    """
    n, d = X.shape
    key = None if memory is None else ("coral-svd", memory.fingerprint(X))
    hit = None if key is None else memory.get(key)
    if hit is None:
        Xc = X - X.mean(axis=0)
        _, sv, Vt = np.linalg.svd(Xc, full_matrices=False)
        hit = (sv, Vt, np.einsum("ij,ij->i", Xc, Xc))
        if key is not None:
            memory.put(key, hit)
    sv, Vt, row_sq = hit
    c, g = _factored_power(sv, lambda: row_sq, n, d, shrinkage, sign, who)
    return c, g, Vt.T


def _factored_power(sv: np.ndarray, row_sq, n: int, d: int, shrinkage, sign: int, who: str
                    ) -> tuple[float, np.ndarray]:
    """``(c, g)`` of :func:`lowrank_coral_power` from the singular values ``sv`` of the centred
    rows (host arrays, whatever the namespace of the rows; ``row_sq()`` gives their squared
    norms, read for Ledoit-Wolf only): the shrinkage, the singularity check and the floor."""
    emp = np.asarray(sv, dtype=np.float64) ** 2 / n
    if shrinkage == "ledoit_wolf":
        rs = np.asarray(row_sq(), dtype=np.float64)
        a = _ledoit_wolf_intensity(n, d, float(emp.sum()), float(np.sum(emp ** 2)),
                                   float(np.sum(rs ** 2)))
    else:
        a = float(shrinkage)
    mu = float(emp.sum()) / d
    alpha = a * mu
    e = (1.0 - a) * emp + alpha
    top = max(float(e.max()) if e.size else 0.0, alpha)
    if top <= 0 or alpha <= 0:
        why = ("every feature is constant" if top <= 0 else
               f"{n} rows in {d} features without shrinkage")
        raise ValueError(
            f"CORAL: the {who} covariance is singular ({why}; shrinkage={shrinkage!r}), so it "
            "cannot be whitened. Use shrinkage='auto' (Ledoit-Wolf) or a shrinkage in (0, 1], "
            "give more rows than features, or drop the constant features.")
    floor = d * np.finfo(np.float64).eps * top
    alpha, e = max(alpha, floor), np.maximum(e, floor)
    p = 0.5 * sign
    c = alpha ** p
    return c, e ** p - c


def _factorable(shrinkage) -> bool:
    """A shrinkage toward the scaled identity (a positive float, or Ledoit-Wolf on the
    columns as they are): a covariance of ``n <= d`` rows is then a scaled identity plus rank
    ``< n``, and CORAL can take its factored route."""
    if shrinkage == "ledoit_wolf":
        return True
    return shrinkage is not None and not isinstance(shrinkage, str) and shrinkage > 0


#: above this many features, with fewer rows than features in each domain, ``"auto"`` is
#: Ledoit-Wolf on the columns as they are (factored, ``O(n^2 d)``) instead of on standardised
#: columns (two ``d x d`` eigendecompositions, ``O(d^3)``: 0.3 s at 1,024 features, 16 s at
#: 4,096 on one thread)
AUTO_DENSE_MAX_FEATURES = 1024


def resolve_auto_shrinkage(shrinkage, n_source: int, n_target: int, d: int):
    """The shrinkage a fit uses: ``shrinkage`` itself, except ``"auto"`` with more than
    :data:`AUTO_DENSE_MAX_FEATURES` features and fewer rows than features in each domain,
    which is ``"ledoit_wolf"`` (its factored route).

    Examples
    --------
    >>> resolve_auto_shrinkage("auto", 157, 295, 4096)
    'ledoit_wolf'
    >>> resolve_auto_shrinkage("auto", 157, 295, 800)
    'auto'
    """
    if (shrinkage == "auto" and d > AUTO_DENSE_MAX_FEATURES
            and max(n_source, n_target) < d):
        return "ledoit_wolf"
    return shrinkage


def _ledoit_wolf_intensity(n: int, d: int, trace: float, frob2: float, row4: float) -> float:
    """scikit-learn's Ledoit-Wolf shrinkage (``ledoit_wolf_shrinkage``) of ``n`` centred rows
    in ``d`` columns from ``trace = tr(S)``, ``frob2 = ||S||_F^2`` (``S`` their covariance) and
    ``row4 = sum_i ||x_i||^4`` (scikit-learn's ``sum <X2^T, X2>``): every route computes these
    three its own way (a thin SVD, or ``S`` itself on a device), no ``d x d`` matrix needed."""
    if d == 1:
        return 0.0
    mu = trace / d
    beta = (row4 / n - frob2) / (d * n)
    delta = (frob2 - 2.0 * mu * trace + d * mu ** 2) / d
    beta = min(beta, delta)
    return 0.0 if beta == 0 else beta / delta


def _has_target(src: np.ndarray, tgt: np.ndarray, stacklevel: int) -> bool:
    """Whether there are target rows to align to (without them a warning says the map is the
    identity); each side needs 2 rows for a covariance, else a ``ValueError``."""
    if not tgt.any():
        warnings.warn(
            "CORAL: no target rows (negative sample_domain, or y = -1 without "
            "sample_domain), so there is nothing to align to: the map is the identity "
            "(no adaptation). Pass the unlabeled target rows to fit.", UserWarning,
            stacklevel=stacklevel)
        return False
    for name, mask in (("source", src), ("target", tgt)):
        if mask.sum() < 2:
            raise ValueError(f"CORAL needs at least 2 {name} rows to estimate a "
                             f"covariance, got {int(mask.sum())}.")
    return True


def _device(X):
    import array_api_compat

    return array_api_compat.device(X)


def _lowrank_power_xp(X, shrinkage: float, sign: int, who: str, xp):
    """:func:`lowrank_coral_power` in ``X``'s namespace, on its device."""
    n, d = X.shape
    Xc = X - xp.mean(X, axis=0)[None, :]
    _, sv, Vt = xp.linalg.svd(Xc, full_matrices=False)
    c, g = _factored_power(to_numpy(sv), lambda: to_numpy(xp.sum(Xc * Xc, axis=1)), n, d,
                           shrinkage, sign, who)
    return c, from_numpy(g, X), Vt.T


def _covariance_xp(X, shrinkage, xp):
    """:func:`coral_covariance` in ``X``'s namespace (the same estimates: empirical, shrunk
    toward ``tr(C)/d I``, or Ledoit-Wolf on the standardised columns, rescaled)."""
    n, d = X.shape
    Xc = X - xp.mean(X, axis=0)[None, :]
    if shrinkage == "ledoit_wolf":
        C = Xc.T @ Xc / n
        a = _ledoit_wolf_shrinkage_xp(Xc, C, xp)
        mu = float(xp.linalg.trace(C)) / d
        return (1.0 - a) * C + a * mu * xp.eye(d, dtype=X.dtype, device=_device(X))
    if isinstance(shrinkage, str):
        var = xp.mean(Xc * Xc, axis=0)
        # scikit-learn's scaler: a column whose variance is within round-off of 0 (its
        # constant-feature test) keeps scale 1
        eps = float(np.finfo(np.float64).eps)
        mean = xp.mean(X, axis=0)
        constant = var <= n * eps * var + (n * mean * eps) ** 2
        scale = xp.where(constant, xp.ones_like(var), xp.sqrt(var))
        Z = Xc / scale[None, :]
        C = Z.T @ Z / n
        a = _ledoit_wolf_shrinkage_xp(Z, C, xp)
        mu = float(xp.linalg.trace(C)) / d
        C = (1.0 - a) * C + a * mu * xp.eye(d, dtype=X.dtype, device=_device(X))
        return scale[:, None] * C * scale[None, :]
    C = Xc.T @ Xc / n
    if shrinkage is None or shrinkage == 0:
        return C
    mu = float(xp.linalg.trace(C)) / d
    return (1.0 - shrinkage) * C + shrinkage * mu * xp.eye(d, dtype=X.dtype, device=_device(X))


def _ledoit_wolf_shrinkage_xp(Z, C, xp) -> float:
    """Ledoit and Wolf's shrinkage of centred rows ``Z`` with covariance ``C`` in their
    namespace (:func:`_ledoit_wolf_intensity`)."""
    n, d = Z.shape
    row_sq = xp.sum(Z * Z, axis=1)
    return _ledoit_wolf_intensity(n, d, float(xp.linalg.trace(C)), float(xp.sum(C * C)),
                                  float(xp.sum(row_sq * row_sq)))


def _dense_power_xp(C, sign: int, who: str, shrinkage, xp):
    """:func:`_sqrt_power` in ``C``'s namespace."""
    w, V = xp.linalg.eigh((C + C.T) / 2.0)
    r = from_numpy(np.sqrt(_floored_spectrum(to_numpy(w).astype(np.float64), who, shrinkage)),
                   C)
    return (V / r[None, :] if sign < 0 else V * r[None, :]) @ V.T


class CORAL(OneToOneFeatureMixin, TransformerMixin, BaseEstimator):
    """Correlation alignment (Sun et al., 2016): the source rows re-coloured as the target's.

    ``fit(X, y, sample_domain)`` estimates the mean and covariance of the source rows
    (``sample_domain > 0``) and of the target rows (``sample_domain < 0``);
    ``fit_transform`` maps the source rows by ``x -> (x - m_s) A + m_t`` with
    ``A = C_s^{-1/2} C_t^{1/2}`` and returns the target rows as they are. ``transform(X)`` treats
    ``X`` as target rows (the identity); ``transform(X, sample_domain)`` maps the rows with a
    positive domain id. Use it as the ``adapter`` of
    :class:`~shiftlearn.compose.DomainAdaptationClassifier` (which passes the rows' domains
    on) or as a candidate of :class:`~shiftlearn.model_selection.AdaptationSelector`.

    Parameters
    ----------
    shrinkage : "auto", "ledoit_wolf", float in [0, 1] or None, default="auto"
        Covariance shrinkage of both domains (see :func:`coral_covariance`): ``"auto"`` is
        Ledoit-Wolf on standardised columns, except with more than
        :data:`AUTO_DENSE_MAX_FEATURES` (1,024) features and fewer rows than features in each
        domain, where it is ``"ledoit_wolf"`` (the factored route; ``shrinkage_`` says which);
        ``"ledoit_wolf"`` is Ledoit-Wolf on the columns as they are,
        a float shrinks toward the scaled identity (``1.0`` keeps only the overall
        scale: CORAL then matches the means and the total variance), ``None`` is the
        empirical covariance (needs more rows than features in each domain).
    memory : FitMemory or None, default=None
        Keeps each domain's factorisation (the thin SVD of its centred rows, or the
        eigendecomposition of its covariance for a given shrinkage), so that fits on the same
        rows with another shrinkage, or with the domains' roles swapped (circular
        validation's reverse fit), do not factorise again; the results are the same
        (:class:`~shiftlearn.adaptation.FitMemory`).

    Attributes
    ----------
    shrinkage_ : "auto", "ledoit_wolf", float or None
        The shrinkage the fit used (``shrinkage`` with ``"auto"`` resolved by the shape).
    mean_source_, mean_target_ : ndarray of shape (n_features,)
    matrix_ : ndarray of shape (n_features, n_features)
        ``A = C_s^{-1/2} C_t^{1/2}`` (formed on first access on the factored route).
    powers_ : tuple of two ``(c, g, V)`` or None
        The factored route's ``C_s^{-1/2}`` and ``C_t^{1/2}``, each ``c I + V diag(g) V^T``
        with ``V`` of shape ``(n_features, n_rows)``; ``None`` on the dense route.
    n_features_in_ : int
    feature_names_in_ : ndarray of str
        Only when ``X`` had string column names.

    Notes
    -----
    Cost: with a float ``shrinkage`` in (0, 1] or ``"ledoit_wolf"`` (or ``"auto"`` beyond
    1,024 features) and fewer rows than features in each domain,
    two thin SVDs, ``O(n^2 d)``, and ``O(n d r)`` to map ``n`` rows (the factored route, no
    ``d x d`` matrix); otherwise two ``d x d`` eigendecompositions, ``O(n d^2 + d^3)``.

    Examples
    --------
    >>> from shiftlearn.adaptation import CORAL
    >>> from shiftlearn.compose import DomainAdaptationClassifier
    >>> from shiftlearn.datasets import make_sca_toy
    >>> X, y, sd = make_sca_toy(n_per_cluster=20, random_state=0)
    >>> Z = CORAL().fit_transform(X, y, sd)
    >>> bool(np.allclose(Z[sd < 0], X[sd < 0]))                  # target rows as they are
    True
    >>> clf = DomainAdaptationClassifier(CORAL()).fit(X, y, sd)
    >>> clf.predict(X[sd < 0]).shape
    (60,)
    """

    # scikit-learn metadata routing: sample_domain is requested by default
    __metadata_request__fit = {"sample_domain": True}
    __metadata_request__transform = {"sample_domain": True}

    _parameter_constraints: dict = {
        "shrinkage": [StrOptions({"auto", "ledoit_wolf"}), Interval(Real, 0, 1, closed="both"),
                      None],
        "memory": [FitMemory, None],
    }

    def __init__(self, shrinkage="auto", memory=None):
        self.shrinkage = shrinkage
        self.memory = memory

    def fit(self, X, y=None, sample_domain=None):
        """Estimate both domains' means and covariances and the map ``A``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            The source and target rows.
        y : array-like of shape (n_samples,), optional
            Labels (not used by the map); ``-1`` (or NaN) marks unlabeled rows, from which
            ``sample_domain`` is inferred when it is omitted.
        sample_domain : array-like of shape (n_samples,), optional
            Positive = source, negative = target.

        Returns
        -------
        self
        """
        self._fit(X, y, sample_domain)
        warn_if_plain_pipeline(self, y)         # after the checks: their errors come first
        return self

    def _fit(self, X, y, sample_domain) -> tuple[np.ndarray, np.ndarray]:
        """Validate, learn the map; the validated ``X`` and ``sample_domain``."""
        check_params(self)
        xp = array_api_namespace(X, owner="CORAL", supported=True)
        if xp is not None:
            return self._fit_array_api(X, y, sample_domain, xp)
        if y is None and sample_domain is None:
            X = check_X(X, estimator=self, reset=True)
            sd = np.ones(X.shape[0], dtype=np.int64)
        else:
            X, _, sd = check_X_y_domain(X, y, sample_domain, task="auto",
                                        allow_unlabeled_source=True, estimator=self)
        d = X.shape[1]
        src, tgt = sd > 0, sd < 0
        sh = self.shrinkage_ = resolve_auto_shrinkage(self.shrinkage, int(src.sum()),
                                                       int(tgt.sum()), d)
        # d >> n with a shrinkage toward the identity: each covariance is a scaled identity
        # plus rank < n, so the map is kept in factored form (no d x d matrix)
        lowrank = _factorable(sh) and max(int(src.sum()), int(tgt.sum())) < d
        if lowrank:
            check_dense_memory(X.shape[0], d, 4, f"CORAL.fit on {d} features", "",
                               advice="Reduce the features first (e.g. "
                                      "sklearn.decomposition.PCA in a make_da_pipeline).")
        else:
            check_dense_memory(d, d, 6, f"CORAL.fit on {d} features", "",
                               advice="CORAL forms d x d covariances: reduce the features "
                                      "first (e.g. sklearn.decomposition.PCA in a "
                                      "make_da_pipeline), or give a shrinkage in (0, 1], "
                                      "whose route needs no d x d matrix when each domain has "
                                      "fewer rows than features.")
        self.powers_ = None
        Xs = X[src].astype(np.float64)
        self.mean_source_ = Xs.mean(axis=0)
        if not _has_target(src, tgt, stacklevel=3):
            self.mean_target_ = self.mean_source_.copy()
            self._matrix = np.eye(X.shape[1])
            return X, sd
        Xt = X[tgt].astype(np.float64)
        self.mean_target_ = Xt.mean(axis=0)
        if lowrank:
            self.powers_ = (lowrank_coral_power(Xs, sh, -1, "source", self.memory),
                            lowrank_coral_power(Xt, sh, 1, "target", self.memory))
            self._matrix = None
            return X, sd
        self._matrix = (_sqrt_power(self._covariance(Xs, sh), -1, "source", sh)
                        @ _sqrt_power(self._covariance(Xt, sh), 1, "target", sh))
        return X, sd

    def _covariance(self, X: np.ndarray, shrinkage):
        """The shrunk covariance of ``X``, or its eigendecomposition kept in ``memory``."""
        mem = self.memory
        if mem is None:
            return coral_covariance(X, shrinkage)
        key = ("coral-eigh", mem.fingerprint(X), repr(shrinkage))
        hit = mem.get(key)
        if hit is None:
            hit = np.linalg.eigh(coral_covariance(X, shrinkage))
            hit = (hit[0], hit[1])
            mem.put(key, hit)
        return hit

    def fit_transform(self, X, y=None, sample_domain=None):
        """``fit``, then the training rows: source rows mapped, target rows as they are."""
        X, sd = self._fit(X, y, sample_domain)
        warn_if_plain_pipeline(self, y)
        return self._map(X, sd)

    def transform(self, X, sample_domain=None):
        """The rows with ``sample_domain > 0`` mapped onto the target; the others as given.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        sample_domain : array-like of shape (n_samples,), optional
            ``None``: every row is a target row (returned as it is, as float).

        Returns
        -------
        ndarray of shape (n_samples, n_features)
        """
        check_is_fitted(self, "mean_source_")
        xp = array_api_namespace(X, owner="CORAL", supported=True)
        if xp is not None:
            X = check_X_array_api(X, xp, estimator=self, reset=False)
            if not is_foreign_array(self.mean_source_):
                raise ValueError("CORAL was fitted on NumPy arrays; transform arrays of the "
                                 f"same kind (got {type(X).__name__}).")
            X = xp.astype(X, self.mean_source_.dtype)
        else:
            X = check_X(X, estimator=self, reset=False)
        return self._map(X, None if sample_domain is None
                         else check_sample_domain(sample_domain, X.shape[0]))

    def _fit_array_api(self, X, y, sample_domain, xp):
        """The fit for arrays of another namespace: the moments, the powers and the map on
        ``X``'s device, in its dtype, by the same formulas as the NumPy route."""
        X = check_X_array_api(X, xp, estimator=self, reset=True)
        n, d = X.shape
        if y is None and sample_domain is None:
            sd = np.ones(n, dtype=np.int64)
        else:
            _, sd = check_y_domain(to_numpy(y), to_numpy(sample_domain), n, task="auto",
                                   allow_unlabeled_source=True)
        src, tgt = sd > 0, sd < 0
        self.shrinkage_ = resolve_auto_shrinkage(self.shrinkage, int(src.sum()), int(tgt.sum()),
                                                 d)
        Xs = xp.take(X, from_numpy(np.flatnonzero(src), X), axis=0)
        self.mean_source_ = xp.mean(Xs, axis=0)
        self.powers_ = None
        if not _has_target(src, tgt, stacklevel=4):
            self.mean_target_ = self.mean_source_
            self._matrix = xp.eye(d, dtype=X.dtype, device=_device(X))
            return X, sd
        Xt = xp.take(X, from_numpy(np.flatnonzero(tgt), X), axis=0)
        self.mean_target_ = xp.mean(Xt, axis=0)
        sh = self.shrinkage_
        if _factorable(sh) and max(int(src.sum()), int(tgt.sum())) < d:
            self.powers_ = (_lowrank_power_xp(Xs, sh, -1, "source", xp),
                            _lowrank_power_xp(Xt, sh, 1, "target", xp))
            self._matrix = None
            return X, sd
        self._matrix = (_dense_power_xp(_covariance_xp(Xs, sh, xp), -1, "source", sh, xp)
                        @ _dense_power_xp(_covariance_xp(Xt, sh, xp), 1, "target", sh, xp))
        return X, sd

    @property
    def matrix_(self) -> np.ndarray:
        """``A = C_s^{-1/2} C_t^{1/2}``, shape ``(n_features, n_features)``; on the factored
        route it is formed (``O(d^2 n)``) and kept on first access."""
        if "_matrix" not in vars(self):
            raise AttributeError("matrix_: this CORAL is not fitted yet.")
        if self._matrix is None:
            d = self.mean_source_.shape[0]
            eye = (np.eye(d) if not is_foreign_array(self.mean_source_) else
                   from_numpy(np.eye(d), self.mean_source_))
            self._matrix = self._apply(eye)
        return self._matrix

    def _apply(self, Y: np.ndarray) -> np.ndarray:
        """``Y A`` from the factors ``C^p = c I + V diag(g) V^T``: ``O(n d r)``."""
        (cs, gs, Vs), (ct, gt, Vt) = self.powers_
        YP = cs * Y + ((Y @ Vs) * gs[None, :]) @ Vs.T
        return ct * YP + ((YP @ Vt) * gt[None, :]) @ Vt.T

    def _map(self, X: np.ndarray, sd: np.ndarray | None) -> np.ndarray:
        if is_foreign_array(X):            # every row mapped, the source rows kept
            import array_api_compat

            xp = array_api_compat.array_namespace(X)
            if sd is None or not np.any(sd > 0):
                return xp.asarray(X, copy=True)
            Y = X - self.mean_source_[None, :]
            mapped = (Y @ self._matrix if self.powers_ is None
                      else self._apply(Y)) + self.mean_target_[None, :]
            return xp.where(from_numpy(sd > 0, X)[:, None], mapped, X)
        Z = np.array(X, dtype=np.float64)
        if sd is not None:
            src = sd > 0
            if src.any():
                if self.powers_ is None:
                    Z[src] = (Z[src] - self.mean_source_) @ self._matrix + self.mean_target_
                else:
                    Z[src] = self._apply(Z[src] - self.mean_source_) + self.mean_target_
        return Z
