"""Shared pieces of the subspace adapters (TCA, SCA and their random-feature versions).

* :func:`whitening_scale`: the ``Lambda^{-1/2}`` factor of SCA / DICA, with a floor.
* :func:`clip_n_components`: ``k`` clipped to what the data allow, with a
  :class:`ComponentsClippedWarning` (as scikit-learn's ``KernelPCA``: defaults must work on
  small data); :func:`check_n_components`: a clear error instead, where clipping would be wrong
  (``truncate(k)`` beyond the fitted components).
* :func:`kernel_row_chunks`: row blocks for the out-of-sample kernel (an exact fit or
  transform that cannot fit in memory is refused before allocating by
  :func:`~shiftlearn._resources.check_dense_memory`).
* :class:`BaseSubspaceTransformer`: ``fit(X, y=None, sample_domain=None)`` / ``transform(X)``
  with the validation every adapter needs (declarative ``_parameter_constraints`` checked by
  :func:`~shiftlearn._constraints.check_params`, scikit-learn's ``validate_data`` for the
  feature count and names); subclasses implement ``_fit`` and ``_transform``. The kernel
  choice lives here, in one place (``_resolve_sigma``, ``_kernel``, ``_kernel_key``), and so
  does the look-up of the bandwidth in the adapter's ``memory``
  (:class:`~shiftlearn.adaptation.FitMemory`), and of the out-of-sample kernel
  (``_test_kernel_blocks``: row blocks, or the whole block from ``memory``).
"""

from __future__ import annotations

import warnings
from abc import ABCMeta, abstractmethod
from numbers import Integral, Real

import numpy as np
from sklearn.base import BaseEstimator, ClassNamePrefixFeaturesOutMixin, TransformerMixin
from sklearn.utils.validation import check_is_fitted

from .._array_api import array_api_namespace, check_X_array_api, is_foreign_array, to_numpy
from .._constraints import check_params
from .._stacklevel import user_stacklevel
from .._validation import check_X, check_X_y_domain, check_y_domain, warn_if_plain_pipeline
from ..kernels import DEFAULT_CHUNK_BYTES, kernel_matrix, resolve_bandwidth
from ._memory import FitMemory

__all__ = [
    "BaseSubspaceTransformer",
    "ComponentsClippedWarning",
    "check_n_components",
    "clip_n_components",
    "check_kernel_varies",
    "kernel_row_chunks",
    "whitening_scale",
    "zero_kernel_error",
]


def whitening_scale(eigenvalues: np.ndarray, *, rtol: float = 1e-10) -> np.ndarray:
    """``1 / sqrt(lambda)`` per component (SCA's ``Lambda^{-1/2}``), eigenvalues floored at
    ``rtol * max(lambda)`` so that (near-)zero eigenvalues cannot blow the features up."""
    w = np.asarray(eigenvalues, dtype=np.float64)
    top = float(np.max(np.abs(w))) if w.size else 1.0
    floor = max(rtol * top, np.finfo(np.float64).tiny)
    return 1.0 / np.sqrt(np.maximum(w, floor))


def check_n_components(n_components, max_components: int, reason: str) -> int:
    """Validate ``n_components`` against the largest value the problem allows.

    ``reason`` explains the bound in the error message, e.g. ``"at beta=1 the numerator has
    rank <= n_classes - 1 = 2"``.
    """
    if isinstance(n_components, bool) or not isinstance(n_components, Integral):
        raise ValueError(f"n_components must be a positive integer, got {n_components!r}.")
    if n_components < 1:
        raise ValueError(f"n_components must be >= 1, got {n_components}.")
    if n_components > max_components:
        raise ValueError(f"n_components={n_components} is too large: {reason}, so at most "
                         f"{max_components} component(s) are available.")
    return int(n_components)


class ComponentsClippedWarning(UserWarning):
    """``n_components`` was larger than the data allow and was lowered (see
    :func:`clip_n_components`); ``n_components_`` holds the value used."""


def clip_n_components(n_components: int, max_components: int, reason: str, owner: str) -> int:
    """``min(n_components, max_components)``, warning when it clips.

    As scikit-learn's ``KernelPCA``, default hyper-parameters work on small data,
    so a request beyond the rank bound is lowered to the bound with a
    :class:`ComponentsClippedWarning` that names the requested value, the value used and the
    reason, instead of an error. ``n_components`` itself is validated by the estimator's
    ``_parameter_constraints`` (a positive integer) before this is called.

    Examples
    --------
    >>> import warnings
    >>> with warnings.catch_warnings(record=True) as rec:
    ...     warnings.simplefilter("always")
    ...     k = clip_n_components(30, 4, "5 training rows give rank <= 4", "TCA")
    >>> k, str(rec[0].message)[:48]
    (4, 'TCA: n_components=30 is more than the data allow')
    """
    if max_components < 1:
        raise ValueError(f"{owner}: no component can be computed ({reason}).")
    if n_components > max_components:
        warnings.warn(f"{owner}: n_components={n_components} is more than the data allow "
                      f"({reason}); using n_components={max_components} (see n_components_). "
                      "Pass a smaller n_components to silence this warning.",
                      ComponentsClippedWarning, stacklevel=user_stacklevel())
        return int(max_components)
    return int(n_components)


#: target size (bytes) of one row block of an out-of-sample kernel in ``transform`` (the
#: library's one chunk budget, :data:`shiftlearn.kernels.DEFAULT_CHUNK_BYTES`, 64 MB)
KERNEL_CHUNK_BYTES = DEFAULT_CHUNK_BYTES


def zero_kernel_error(owner: str) -> ValueError:
    """The error of a training kernel with nothing to learn (every row the same point)."""
    return ValueError(f"{owner}: the centred kernel is zero (every training row is the same "
                      "point for this kernel, e.g. a constant X), so there is no component to "
                      "learn; check X.")


def check_kernel_varies(K, owner: str) -> None:
    """Raise :func:`zero_kernel_error` when every column of the training kernel ``K`` is
    constant (``H K = 0``), in ``K``'s array namespace."""
    if is_foreign_array(K):
        import array_api_compat

        xp = array_api_compat.array_namespace(K)
        spread = float(xp.max(xp.max(K, axis=0) - xp.min(K, axis=0)))
    else:
        spread = np.ptp(K, axis=0).max()
    if spread == 0:
        raise zero_kernel_error(owner)


def kernel_row_chunks(n_rows: int, n_train: int, n_temporaries: int = 1):
    """Row slices such that a ``(block, n_train)`` float64 kernel block (times
    ``n_temporaries`` live copies) stays near :data:`KERNEL_CHUNK_BYTES`: ``transform`` of an
    exact adapter never forms the whole ``n_rows x n_train`` kernel."""
    step = max(1, int(KERNEL_CHUNK_BYTES // (8 * max(n_train, 1) * max(n_temporaries, 1))))
    for start in range(0, n_rows, step):
        yield slice(start, min(start + step, n_rows))


class BaseSubspaceTransformer(ClassNamePrefixFeaturesOutMixin, TransformerMixin, BaseEstimator,
                              metaclass=ABCMeta):
    """Fit/transform plumbing shared by the subspace adapters.

    ``fit(X, y=None, sample_domain=None)`` validates the three together with
    :func:`shiftlearn._validation.check_X_y_domain` and calls ``self._fit(X, y, sample_domain)``
    (``y`` may be ``None``; unlabeled rows carry ``-1``/NaN). Without ``y`` and
    ``sample_domain`` every row is one unlabeled domain (``sample_domain = 1``), which is what
    a plain ``fit(X)`` means. Every fitting method starts with
    :func:`~shiftlearn._constraints.check_params` (the subclass's declarative
    ``_parameter_constraints``) and records ``n_features_in_`` (and ``feature_names_in_`` for
    a DataFrame) through scikit-learn's ``validate_data``. ``transform(X)`` checks the fitted
    state, the number of features and their names (a DataFrame whose columns were reordered
    after ``fit`` is refused) and calls ``self._transform(X)``. Subclasses set
    ``n_components_`` in ``_fit`` (the value used, after :func:`clip_n_components`).

    Class attributes subclasses may override: ``_require_target`` (demand target rows, for a
    pure-DA method) and ``_allow_unlabeled_source``.
    """

    # scikit-learn metadata routing: sample_domain is requested by default, so
    # GridSearchCV(...).fit(X, y, sample_domain=sd) routes it here when routing is on
    __metadata_request__fit = {"sample_domain": True}

    _require_target = False
    _allow_unlabeled_source = True
    # computes in the input's array-API namespace under scikit-learn's array_api_dispatch
    # (shiftlearn._array_api); others refuse such input with the fix named
    _array_api_support = False
    # fitted attributes sliced by ``truncate``: column-indexed matrices and per-component vectors
    _component_columns: tuple[str, ...] = ()
    _component_vectors: tuple[str, ...] = ("eigenvalues_",)

    def truncate(self, k: int):
        """A fitted copy that keeps only the ``k`` leading components.

        Exact for adapters whose components are nested eigenvectors scaled per component
        (fitting with ``n_components=k`` gives the same embedding, up to sign); a search over
        ``n_components`` gets the same saving through ``memory``
        (:class:`~shiftlearn.adaptation.FitMemory`).
        """
        import copy

        check_is_fitted(self, "n_components_")
        k = check_n_components(k, self.n_components_, "the fitted adapter has only "
                               f"{self.n_components_} components")
        new = copy.copy(self)
        for name in self._component_columns:
            setattr(new, name, getattr(self, name)[:, :k].copy())
        for name in self._component_vectors:
            setattr(new, name, getattr(self, name)[:k].copy())
        new.n_components = k
        new.n_components_ = k
        return new

    # -------------------------------------------------- the kernel, in one place
    def _rows_key(self, X: np.ndarray) -> str | None:
        """The fingerprint of the training rows ``X`` when the adapter has a ``memory`` (the one
        hash of ``X`` per fit; every key of the fit builds on it), else ``None``. It is kept
        with the identity of ``X`` (not ``X``: a saved model stays its size), so that
        ``transform`` finds it when ``X`` became ``X_fit_``."""
        key = None if getattr(self, "memory", None) is None else FitMemory.fingerprint(X)
        self._rows_fingerprint = None if key is None else (id(X), key)
        return key

    def _fit_rows_key(self) -> str:
        """The fingerprint of ``X_fit_``: the fit's own when ``X_fit_`` is the very array it
        hashed (every fit that calls :meth:`_rows_key` keeps that ``X`` as ``X_fit_``, which
        this object then holds, so no other array can have its identity; the fitted state
        is not modified in place), else hashed now."""
        kept = getattr(self, "_rows_fingerprint", None)
        if kept is not None and kept[0] == id(self.X_fit_):
            return kept[1]
        return FitMemory.fingerprint(self.X_fit_)

    def _resolve_sigma(self, X: np.ndarray, kernel="rbf", rows_key: str | None = None
                       ) -> float | None:
        """The bandwidth ``sigma`` of ``kernel`` for the training rows ``X``, from
        ``self.bandwidth`` (a number, or a rule applied to ``X``); ``None`` for kernels without
        a bandwidth (linear, callables). With ``rows_key`` (:meth:`_rows_key`), a rule's value
        is remembered in ``self.memory``."""
        if callable(kernel) or kernel == "linear":
            return None
        if rows_key is None or not isinstance(self.bandwidth, str):
            return resolve_bandwidth(self.bandwidth, X, kernel=kernel)
        mem = self.memory
        key = ("bandwidth", rows_key, self.bandwidth, kernel)
        sigma = mem.get(key)
        if sigma is None:
            sigma = resolve_bandwidth(self.bandwidth, X, kernel=kernel)
            mem.put(key, sigma)
        return sigma

    def _kernel(self, X: np.ndarray, Y: np.ndarray | None = None) -> np.ndarray:
        """The kernel between rows of ``X`` and ``Y`` (``X`` itself when ``None``)."""
        return kernel_matrix(X, Y, kernel=self.kernel, sigma=self.sigma_)

    def _kernel_key(self) -> tuple | None:
        """What the training kernel depends on besides the rows, as a ``memory`` key part;
        ``None`` for a callable kernel (it cannot be recognised, so nothing is remembered)."""
        return None if callable(self.kernel) else (self.kernel, self.sigma_)

    def _test_kernel_blocks(self, X: np.ndarray, n_temporaries: int = 1):
        """``(rows, K[rows])`` blocks of the kernel between ``X`` and the training rows
        ``X_fit_``, for the exact adapters' ``transform``; callers must not modify a block.

        Without ``memory`` (or for a callable kernel) the rows come in blocks of
        :func:`kernel_row_chunks`. With ``memory`` the whole kernel comes in one block, kept
        under the fingerprints of ``X`` and ``X_fit_`` and the kernel: a grid search embeds the
        same training and validation rows once per candidate, and an exact kernel (Laplacian
        and Cauchy above all: 8-25x the Gaussian's cost) is the main cost of those transforms.
        It is kept only when it takes at most a quarter of the memory's budget (else blocks, as
        without memory). The entries are computed by the same kernel function, so they equal
        the blocked ones to round-off (the Gaussian kernel's matrix product may block its sums
        differently). Arrays of another namespace always come in blocks (``memory`` keeps
        NumPy arrays only)."""
        n_fit = self.X_fit_.shape[0]
        mem, kernel_key = getattr(self, "memory", None), self._kernel_key()
        if (mem is None or kernel_key is None or is_foreign_array(X)
                or 8 * X.shape[0] * n_fit * max(n_temporaries, 1) > mem.max_bytes // 4):
            for rows in kernel_row_chunks(X.shape[0], n_fit, n_temporaries):
                yield rows, self._kernel(X[rows, :], self.X_fit_)
            return
        key = ("test-kernel", FitMemory.fingerprint(X), self._fit_rows_key(), kernel_key)
        K = mem.get(key)
        if K is None:
            K = self._kernel(X, self.X_fit_)
            K.flags.writeable = False          # shared by every later transform of these rows
            mem.put(key, K)
        yield slice(0, X.shape[0]), K

    def _array_namespace(self, X):
        """The array-API namespace ``X`` is computed in (``None``: the NumPy route)."""
        return array_api_namespace(X, owner=type(self).__name__,
                                   supported=self._array_api_support)

    def _like_fitted(self, X, fitted):
        """``X`` as the exact adapters embed it: float64 NumPy for a NumPy fit, ``fitted``'s
        dtype for another namespace; mixing array kinds between fit and transform is refused
        (a model fitted on torch arrays on a GPU embeds arrays of that kind only)."""
        if is_foreign_array(X) != is_foreign_array(fitted) or (
                is_foreign_array(X) and type(X) is not type(fitted)):
            raise ValueError(f"{type(self).__name__} was fitted on {type(fitted).__name__} "
                             f"arrays; transform arrays of the same kind (got "
                             f"{type(X).__name__}).")
        if is_foreign_array(X):
            import array_api_compat

            return array_api_compat.array_namespace(X).astype(X, fitted.dtype)
        return np.asarray(X, dtype=np.float64)

    def _embed_blocks(self, X, embed, n_out: int, n_temporaries: int = 1):
        """``embed(K_block)`` of every block of :meth:`_test_kernel_blocks`, assembled into an
        ``(n_rows, n_out)`` array: NumPy filled in place, another namespace concatenated on its
        device."""
        if is_foreign_array(X):
            import array_api_compat

            return array_api_compat.array_namespace(X).concat(
                [embed(Kt) for _, Kt in self._test_kernel_blocks(X, n_temporaries)], axis=0)
        out = np.empty((X.shape[0], n_out))
        for rows, Kt in self._test_kernel_blocks(X, n_temporaries):
            out[rows] = embed(Kt)
        return out

    def _validate_fit(self, X, y, sample_domain):
        check_params(self)
        xp = self._array_namespace(X)
        if xp is not None:         # another namespace: X stays on its device; y, domains host
            X = check_X_array_api(X, xp, estimator=self, reset=True)
            if y is None and sample_domain is None:
                y, sd = None, np.ones(X.shape[0], dtype=np.int64)
            else:
                y, sd = check_y_domain(
                    to_numpy(y), to_numpy(sample_domain), X.shape[0], task="classification",
                    allow_unlabeled_source=self._allow_unlabeled_source,
                    require_source=False, require_target=self._require_target)
        elif y is None and sample_domain is None:
            X = check_X(X, estimator=self, reset=True)
            y, sd = None, np.ones(X.shape[0], dtype=np.int64)
        else:
            X, y, sd = check_X_y_domain(
                X, y, sample_domain, task="classification",
                allow_unlabeled_source=self._allow_unlabeled_source,
                require_source=False, require_target=self._require_target, estimator=self)
        if X.shape[0] < 2:
            raise ValueError(f"n_samples={X.shape[0]}: {type(self).__name__} needs at least 2 "
                             "training rows.")
        return X, y, sd

    def fit(self, X, y=None, sample_domain=None):
        """Fit the adapter.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            All training rows (sources and, for domain adaptation, the unlabeled targets).
        y : array-like of shape (n_samples,), optional
            Labels; ``-1`` (or NaN) marks unlabeled rows.
        sample_domain : array-like of shape (n_samples,), optional
            Domain ids, positive = source, negative = target; inferred from ``y`` if omitted.

        Returns
        -------
        self
        """
        X, y, sd = self._validate_fit(X, y, sample_domain)
        warn_if_plain_pipeline(self, y)         # after the checks: their errors come first
        self.n_features_in_ = X.shape[1]
        self._fit(X, y, sd)
        return self

    def fit_transform(self, X, y=None, sample_domain=None):
        """``fit(X, y, sample_domain)`` then ``transform(X)`` (reusing the training kernel when
        ``_fit`` returns the training embedding)."""
        X, y, sd = self._validate_fit(X, y, sample_domain)
        warn_if_plain_pipeline(self, y)
        self.n_features_in_ = X.shape[1]
        Z = self._fit(X, y, sd)
        return self._transform(X) if Z is None else Z

    def transform(self, X):
        """Project ``X`` onto the learned components, shape ``(n_samples, n_components_)``."""
        check_is_fitted(self, "n_components_")
        xp = self._array_namespace(X)
        if xp is not None:
            X = check_X_array_api(X, xp, estimator=self, reset=False)
        else:
            X = check_X(X, estimator=self, reset=False)
        return self._transform(X)

    @property
    def _n_features_out(self):
        return self.n_components_

    @abstractmethod
    def _fit(self, X: np.ndarray, y: np.ndarray | None, sample_domain: np.ndarray
             ) -> np.ndarray | None:
        """Learn the components from validated arrays; must set ``n_components_``.

        May return the embedding of the training rows (equal to ``_transform(X)``) when it
        comes for free, which ``fit_transform`` then uses; else return ``None``."""

    @abstractmethod
    def _transform(self, X: np.ndarray) -> np.ndarray:
        """Embed validated rows."""


def resolve_tca_mu(mu) -> float:
    """TCA's MMD-term weight ``mu`` (Pan et al.; the RF-TCA paper's regulariser weight
    ``gamma`` is ``1 / mu``), validated."""
    if not isinstance(mu, Real) or not mu >= 0 or not np.isfinite(mu):
        raise ValueError(f"mu must be a non-negative finite number, got {mu!r}.")
    return float(mu)
