"""CORAL: correlation alignment of the source rows onto the target's first and second moments.

Sun, Feng and Saenko, "Return of frustratingly easy domain adaptation" (AAAI 2016) and
"Correlation alignment for unsupervised domain adaptation" (2017): re-colour the source features
so that their covariance is the target's, ``x -> (x - m_s) C_s^{-1/2} C_t^{1/2} + m_t``, and
train the classifier on them; the target rows are used as they are.

Decisions
---------
* **Not one of the five papers**: the selection study (issue #15) showed that skada's CORAL beats
  every subspace method with a linear classifier (the subspace methods keep ``k`` kernel
  components, CORAL keeps the input space), so ``auto`` needs it among its candidates, without
  needing skada.
* **Means as well as covariances**: skada's ``CORALAdapter`` centres both domains (source rows
  ``(x - m_s) C_s^{-1/2} C_t^{1/2}``, target rows ``x - m_t``); this adapter adds ``m_t`` to both,
  so that the target rows are left as they are (the paper's choice) and ``transform`` of target
  rows is the identity. The two differ by one translation of every row: the same 1NN and the
  same standardised classifier (tested against skada's to 1e-10).
* **Shrinkage as scikit-learn's** ``LinearDiscriminantAnalysis(shrinkage=...)`` **and skada's**
  ``reg``: ``"auto"`` is Ledoit-Wolf on standardised features, rescaled; a float ``a`` in
  ``[0, 1]`` is ``(1 - a) C + a tr(C)/d I``; ``None`` the empirical covariance, refused when it is
  singular (fewer rows than features), with the fix. A shrunk covariance's eigenvalues are
  floored at ``d * eps`` times the largest (round-off on columns of very different scales, e.g. a
  SURF bin that is almost constant in a validation fold, made one negative).
* **Several sources or targets** are pooled: one source map, one target distribution.
* **Rows of which domain**: ``transform(X)`` treats the rows as target rows (what ``predict``
  labels); ``transform(X, sample_domain=sd)`` maps the rows with ``sd > 0`` as source rows,
  which is what validation on held-out source rows needs (the library's scorers pass it).
  Without target rows in ``fit`` there is nothing to align to: the map is the identity, with a
  warning that says so (as the other adapters, which fit without targets too).
"""

from __future__ import annotations

import warnings
from numbers import Real

import numpy as np
from sklearn.base import BaseEstimator, OneToOneFeatureMixin, TransformerMixin
from sklearn.covariance import empirical_covariance, ledoit_wolf, shrunk_covariance
from sklearn.preprocessing import StandardScaler
from sklearn.utils.validation import check_is_fitted

from .._param_validation import Interval, StrOptions, check_params
from .._validation import check_sample_domain, check_X, check_X_y_domain
from ._base import check_dense_memory
from ._pipeline import warn_if_plain_pipeline

__all__ = ["CORAL", "coral_covariance"]

#: eigenvalues of an unshrunk covariance below ``rtol * largest`` make it singular
_SINGULAR_RTOL = 1e-10


def coral_covariance(X: np.ndarray, shrinkage="auto") -> np.ndarray:
    """The covariance CORAL aligns: empirical, shrunk toward ``tr(C)/d I``, or Ledoit-Wolf.

    Parameters
    ----------
    X : ndarray of shape (n_samples, n_features)
    shrinkage : "auto", float in [0, 1] or None
        ``"auto"``: Ledoit-Wolf on the standardised columns, rescaled (scikit-learn's
        ``LinearDiscriminantAnalysis`` and skada's ``reg="auto"``); a float: that shrinkage
        (``sklearn.covariance.shrunk_covariance``); ``None``: the empirical covariance.

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
    if isinstance(shrinkage, str):
        # scikit-learn's scaler: (near-)constant columns keep scale 1, as in skada and LDA
        sc = StandardScaler().fit(X)
        C = ledoit_wolf(sc.transform(X))[0]
        return sc.scale_[:, None] * C * sc.scale_[None, :]
    return shrunk_covariance(empirical_covariance(X), shrinkage=float(shrinkage))


def _sqrt_power(C: np.ndarray, sign: int, who: str, shrinkage) -> np.ndarray:
    """``C^{sign/2}`` of a symmetric PSD matrix (one ``eigh``, one ``d x d`` product): the
    source covariance's ``-1/2``, the target's ``+1/2``.

    An unshrunk covariance (``shrinkage`` None or 0) is refused when its smallest eigenvalue is
    below ``1e-10`` times its largest. A shrunk one is positive definite by construction; its
    eigenvalues are floored at ``d * eps`` times the largest, so that round-off (columns of very
    different scales) cannot make one zero or negative. Every feature constant is refused."""
    w, V = np.linalg.eigh(C)
    top = float(w[-1]) if w.size else 0.0
    unshrunk = shrinkage is None or (not isinstance(shrinkage, str) and shrinkage == 0)
    if top <= 0 or (unshrunk and w[0] <= _SINGULAR_RTOL * top):
        why = ("every feature is constant" if top <= 0 else
               f"smallest eigenvalue {w[0]:.3g} against largest {top:.3g}")
        raise ValueError(
            f"CORAL: the {who} covariance is singular ({why}; shrinkage={shrinkage!r}), so it "
            "cannot be whitened. Use shrinkage='auto' (Ledoit-Wolf) or a shrinkage in (0, 1], "
            "give more rows than features, or drop the constant features.")
    w = np.maximum(w, C.shape[0] * np.finfo(np.float64).eps * top)
    r = np.sqrt(w)
    return (V / r if sign < 0 else V * r) @ V.T


class CORAL(OneToOneFeatureMixin, TransformerMixin, BaseEstimator):
    """Correlation alignment (Sun et al., 2016): the source rows re-coloured as the target's.

    ``fit(X, y, sample_domain)`` estimates the mean and covariance of the source rows
    (``sample_domain > 0``) and of the target rows (``sample_domain < 0``);
    ``fit_transform`` maps the source rows by ``x -> (x - m_s) A + m_t`` with
    ``A = C_s^{-1/2} C_t^{1/2}`` and returns the target rows as they are. ``transform(X)`` treats
    ``X`` as target rows (the identity); ``transform(X, sample_domain)`` maps the rows with a
    positive domain id. Use it as the ``adapter`` of
    :class:`~shiftlearn.adaptation.DomainAdaptationClassifier` (which passes the rows' domains
    on) or as a candidate of :class:`~shiftlearn.model_selection.AdaptationSelector`.

    Parameters
    ----------
    shrinkage : "auto", float in [0, 1] or None, default="auto"
        Covariance shrinkage of both domains (see :func:`coral_covariance`): ``"auto"`` is
        Ledoit-Wolf, a float shrinks toward the scaled identity (``1.0`` keeps only the overall
        scale: CORAL then matches the means and the total variance), ``None`` is the
        empirical covariance (needs more rows than features in each domain).

    Attributes
    ----------
    mean_source_, mean_target_ : ndarray of shape (n_features,)
    matrix_ : ndarray of shape (n_features, n_features)
        ``A = C_s^{-1/2} C_t^{1/2}``.
    n_features_in_ : int
    feature_names_in_ : ndarray of str
        Only when ``X`` had string column names.

    Notes
    -----
    Decisions and the comparison with skada's ``CORALAdapter`` are in the module docstring.
    The cost is two ``d x d`` eigendecompositions: it is meant for up to a few thousand
    features.

    Examples
    --------
    >>> from shiftlearn.adaptation import CORAL, DomainAdaptationClassifier
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
        "shrinkage": [StrOptions({"auto"}), Interval(Real, 0, 1, closed="both"), None],
    }

    def __init__(self, shrinkage="auto"):
        self.shrinkage = shrinkage

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
        warn_if_plain_pipeline(self, y)
        self._fit(X, y, sample_domain)
        return self

    def _fit(self, X, y, sample_domain) -> tuple[np.ndarray, np.ndarray]:
        """Validate, learn the map; the validated ``X`` and ``sample_domain``."""
        check_params(self)
        if y is None and sample_domain is None:
            X = check_X(X, estimator=self, reset=True)
            sd = np.ones(X.shape[0], dtype=np.int64)
        else:
            X, _, sd = check_X_y_domain(X, y, sample_domain, task="auto",
                                        allow_unlabeled_source=True, estimator=self)
        d = X.shape[1]
        check_dense_memory(d, d, 6, f"CORAL.fit on {d} features", "",
                           advice="CORAL forms d x d covariances: reduce the features first "
                                  "(e.g. sklearn.decomposition.PCA in a make_da_pipeline).")
        src, tgt = sd > 0, sd < 0
        Xs = X[src].astype(np.float64)
        self.mean_source_ = Xs.mean(axis=0)
        if not tgt.any():
            warnings.warn(
                "CORAL: no target rows (negative sample_domain, or y = -1 without "
                "sample_domain), so there is nothing to align to: the map is the identity "
                "(no adaptation). Pass the unlabeled target rows to fit.", UserWarning,
                stacklevel=2)
            self.mean_target_ = self.mean_source_.copy()
            self.matrix_ = np.eye(X.shape[1])
            return X, sd
        for name, mask in (("source", src), ("target", tgt)):
            if mask.sum() < 2:
                raise ValueError(f"CORAL needs at least 2 {name} rows to estimate a "
                                 f"covariance, got {int(mask.sum())}.")
        Xt = X[tgt].astype(np.float64)
        self.mean_target_ = Xt.mean(axis=0)
        self.matrix_ = (_sqrt_power(coral_covariance(Xs, self.shrinkage), -1, "source",
                                    self.shrinkage)
                        @ _sqrt_power(coral_covariance(Xt, self.shrinkage), 1, "target",
                                      self.shrinkage))
        return X, sd

    def fit_transform(self, X, y=None, sample_domain=None):
        """``fit``, then the training rows: source rows mapped, target rows as they are."""
        warn_if_plain_pipeline(self, y)
        X, sd = self._fit(X, y, sample_domain)
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
        check_is_fitted(self, "matrix_")
        X = check_X(X, estimator=self, reset=False)
        return self._map(X, None if sample_domain is None
                         else check_sample_domain(sample_domain, X.shape[0]))

    def _map(self, X: np.ndarray, sd: np.ndarray | None) -> np.ndarray:
        Z = np.array(X, dtype=np.float64)
        if sd is not None:
            src = sd > 0
            if src.any():
                Z[src] = (Z[src] - self.mean_source_) @ self.matrix_ + self.mean_target_
        return Z
