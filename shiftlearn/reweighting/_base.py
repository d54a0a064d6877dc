"""What every reweighting adapter shares: validation, the weights' normalisation, the protocol.

A reweighting adapter estimates the importance weight ``w(x) = p_t(x) / p_s(x)`` of the source
rows. It does not move the rows: ``transform`` returns ``X`` unchanged. The protocol, read by
:class:`~shiftlearn.compose.DomainAdaptationClassifier` and
:func:`~shiftlearn.compose.make_da_pipeline` (which pass the weights to the final
estimator's ``sample_weight``):

* ``fit(X, y, sample_domain)`` stores ``weights_``, one weight per training row: the source
  rows' importance weights (mean 1 over the source rows) and ``1.0`` on the target rows (they
  are drawn from the target distribution already), and ``effective_sample_size_``, Kish's
  ``(sum w)^2 / sum w^2`` over the source rows (a warning when it is below 1% of them, or 2);
* ``compute_weights(X, sample_domain=None)`` gives the weights of any rows with the fitted
  ratio and the same normalisation (rows with ``sample_domain < 0`` get ``1.0``).

The design decisions are in ``docs/dev/reweighting.md``.
"""

from __future__ import annotations

import warnings

import numpy as np
from scipy.special import logsumexp
from sklearn.base import BaseEstimator, OneToOneFeatureMixin, TransformerMixin
from sklearn.utils import check_random_state
from sklearn.utils.validation import check_is_fitted

from .._constraints import check_params
from .._stacklevel import user_stacklevel
from .._validation import check_sample_domain, check_X, check_X_y_domain
from ..kernels import resolve_bandwidth

__all__ = ["MIN_EFFECTIVE_SHARE", "BaseReweighting", "check_finite_weights",
           "effective_sample_size", "is_reweighting", "kernel_centers", "kernel_sigma"]

#: largest exponent of a weight: ``exp(700)`` is finite in float64
_MAX_LOG = 700.0

#: ``fit`` warns when the weights' effective sample size is below this share of the source
#: rows (or below 2): a weighted model then learns from a handful of rows
MIN_EFFECTIVE_SHARE = 0.01


def is_reweighting(adapter) -> bool:
    """Whether ``adapter`` is a reweighting adapter: it has a ``compute_weights`` method (the
    protocol of this package, and skada's)."""
    return adapter is not None and callable(getattr(adapter, "compute_weights", None))


def check_finite_weights(w: np.ndarray, owner: str) -> np.ndarray:
    """Refuse weights that are not finite and non-negative, naming the owner."""
    w = np.asarray(w, dtype=np.float64)
    if not np.all(np.isfinite(w)) or np.any(w < 0):
        raise ValueError(f"{owner} produced sample weights that are not finite and "
                         "non-negative; check the inputs' scale or use another estimator.")
    return w


class BaseReweighting(OneToOneFeatureMixin, TransformerMixin, BaseEstimator):
    """Base of the reweighting adapters: ``fit`` validates, splits the rows into source and
    target, asks the subclass for the ratio on the source rows and normalises it.

    A subclass implements ``_fit_ratio(Xs, Xt) -> (values, is_log)`` (the ratio, or its log,
    on the source rows ``Xs``; may store fitted attributes) and ``_ratio(X) -> (values,
    is_log)`` (the ratio at any rows, same scale as ``_fit_ratio``'s).
    """

    # scikit-learn metadata routing: sample_domain is requested by default
    __metadata_request__fit = {"sample_domain": True}

    def fit(self, X, y=None, sample_domain=None):
        """Estimate the importance weights of the source rows.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            The source and target rows.
        y : array-like of shape (n_samples,), optional
            Labels (not used by the weights); ``-1`` (or NaN) marks unlabeled rows, from which
            ``sample_domain`` is inferred when it is omitted.
        sample_domain : array-like of shape (n_samples,), optional
            Positive = source, negative = target.

        Returns
        -------
        self
        """
        self._fit(X, y, sample_domain)
        return self

    def fit_transform(self, X, y=None, sample_domain=None):
        """``fit``, then ``X`` unchanged (as float); the weights are ``weights_``."""
        return self._fit(X, y, sample_domain)

    def _fit(self, X, y, sample_domain) -> np.ndarray:
        check_params(self)
        owner = type(self).__name__
        if y is None and sample_domain is None:
            X = check_X(X, estimator=self, reset=True)
            sd = np.ones(X.shape[0], dtype=np.int64)
        else:
            X, _, sd = check_X_y_domain(X, y, sample_domain, task="auto",
                                        allow_unlabeled_source=True, estimator=self)
        X64 = np.asarray(X, dtype=np.float64)
        src, tgt = sd > 0, sd < 0
        ns, nt = int(src.sum()), int(tgt.sum())
        if ns == 0:
            raise ValueError(f"{owner} needs source rows (positive sample_domain) to weight, "
                             "got none.")
        self.weights_ = np.ones(X.shape[0], dtype=np.float64)
        self.n_source_, self.n_target_ = ns, nt
        if nt == 0:
            warnings.warn(
                f"{owner}: no target rows (negative sample_domain, or y = -1 without "
                "sample_domain), so there is no shift to correct: every weight is 1 (no "
                "adaptation). Pass the unlabeled target rows to fit.", UserWarning,
                stacklevel=user_stacklevel())
            self.log_scale_ = 0.0
            self.effective_sample_size_ = float(ns)
            self._no_target = True
            if "max_iter" in self.get_params(deep=False):
                self.n_iter_ = 0            # no solver ran
            return X
        self._no_target = False
        values, is_log = self._fit_ratio(X64[src], X64[tgt])
        w = self._normalise(np.asarray(values, dtype=np.float64), is_log)
        self.weights_[src] = w
        self.effective_sample_size_ = effective_sample_size(w)
        if self.effective_sample_size_ < max(2.0, MIN_EFFECTIVE_SHARE * ns):
            warnings.warn(
                f"{owner}: the weights put their mass on about "
                f"{self.effective_sample_size_:.1f} of the {ns} source rows (effective sample "
                "size), so a weighted model learns from about that many rows. The density "
                "ratio is ill-estimated here (often: many features for the rows); try "
                "DiscriminatorRW or uLSIF, a larger bandwidth, or no reweighting.",
                UserWarning, stacklevel=user_stacklevel())
        return X

    def _normalise(self, values: np.ndarray, is_log: bool) -> np.ndarray:
        """The source rows' weights, scaled to mean 1; ``log_scale_`` is the log of the mean of
        the raw ratio (so that :meth:`compute_weights` applies the same scale)."""
        owner = type(self).__name__
        if is_log:
            self.log_scale_ = float(logsumexp(values) - np.log(values.shape[0]))
            return np.exp(np.minimum(values - self.log_scale_, _MAX_LOG))
        values = np.maximum(values, 0.0)
        mean = float(values.mean())
        if not np.isfinite(mean) or mean <= 0.0:
            warnings.warn(
                f"{owner}: every estimated weight is zero (the target rows lie where the "
                "ratio model puts no mass); using uniform weights. Try a larger bandwidth.",
                UserWarning, stacklevel=user_stacklevel())
            self.log_scale_ = np.inf
            return np.ones_like(values)
        self.log_scale_ = float(np.log(mean))
        return values / mean

    def compute_weights(self, X, sample_domain=None) -> np.ndarray:
        """Importance weights of the rows of ``X`` under the fitted ratio.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        sample_domain : array-like of shape (n_samples,), optional
            Rows with ``sample_domain < 0`` (target rows) get ``1.0``; ``None``: every row is
            weighted as a source row.

        Returns
        -------
        ndarray of shape (n_samples,)
            ``w(x)`` with the normalisation of ``weights_`` (mean 1 over the training source
            rows).
        """
        check_is_fitted(self, "weights_")
        X = np.asarray(check_X(X, estimator=self, reset=False), dtype=np.float64)
        w = np.ones(X.shape[0], dtype=np.float64)
        rows = np.ones(X.shape[0], dtype=bool) if sample_domain is None \
            else check_sample_domain(sample_domain, X.shape[0]) >= 0
        if self._no_target or not rows.any():
            return w
        values, is_log = self._ratio(X[rows])
        values = np.asarray(values, dtype=np.float64)
        if not np.isfinite(self.log_scale_):
            return w
        if is_log:
            w[rows] = np.exp(np.minimum(values - self.log_scale_, _MAX_LOG))
        else:
            w[rows] = np.maximum(values, 0.0) / np.exp(self.log_scale_)
        return w

    def transform(self, X):
        """``X`` unchanged (validated, as float): reweighting does not move the rows."""
        check_is_fitted(self, "weights_")
        return check_X(X, estimator=self, reset=False)

    def _fit_ratio(self, Xs: np.ndarray, Xt: np.ndarray) -> tuple[np.ndarray, bool]:
        raise NotImplementedError

    def _ratio(self, X: np.ndarray) -> tuple[np.ndarray, bool]:
        raise NotImplementedError


def effective_sample_size(w: np.ndarray) -> float:
    """Kish's effective sample size of non-negative weights, ``(sum w)^2 / sum w^2``: ``n`` for
    equal weights, ``1`` when one row holds all the mass."""
    total = float(np.sum(w))
    squares = float(np.sum(np.square(w)))
    return total * total / squares if squares > 0 else 0.0


def kernel_sigma(bandwidth, Xs: np.ndarray, Xt: np.ndarray) -> float:
    """``sigma`` of the Gaussian kernel ``exp(-||x - y||^2 / (2 sigma^2))``: a number, or a
    rule of :data:`shiftlearn.kernels.BANDWIDTH_RULES` on the pooled source and target rows
    (:func:`shiftlearn.kernels.resolve_bandwidth`)."""
    return resolve_bandwidth(bandwidth, np.vstack([Xs, Xt]), kernel="rbf")


def kernel_centers(Xt: np.ndarray, n_centers: int, random_state) -> np.ndarray:
    """At most ``n_centers`` target rows drawn without replacement (all of them when there are
    fewer): the basis functions' centres of KLIEP and (Ru)LSIF."""
    if Xt.shape[0] <= n_centers:
        return Xt.copy()
    rng = check_random_state(random_state)
    return Xt[np.sort(rng.choice(Xt.shape[0], n_centers, replace=False))]
