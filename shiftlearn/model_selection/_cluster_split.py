"""``ClusterSplit``: the scikit-learn splitter around constrained kernel k-means.

The math lives in :mod:`shiftlearn.model_selection._cluster_kmeans` (decisions on the paper's
ambiguities are listed there and in ``docs/model_selection.md``).
"""

from __future__ import annotations

import warnings

import numpy as np
from sklearn.model_selection import BaseCrossValidator
from sklearn.model_selection._split import GroupsConsumerMixin

from .._dask import is_dask, to_memory
from .._stacklevel import user_stacklevel
from .._validation import check_X
from ._cluster_dask import dask_features, dask_kernel_operator
from ._cluster_kmeans import constrained_kernel_kmeans, kernel_operator
from ._splitters import DomainAwareSplit, LeaveOneDomainOut, constraint_codes

__all__ = ["ClusterSplit"]

#: the default of the former ``gamma``: not given
_DEPRECATED = "deprecated"


class ClusterSplit(GroupsConsumerMixin, BaseCrossValidator):
    """Clustering-based validation split (Napoli & White): the most shifted validation set.

    Picks the train/validation partition that maximises ``MMD²(T, V)`` in a kernel feature
    space under per-group size constraints, by constrained kernel k-means (the paper's
    Algorithm 1). A scikit-learn CV splitter: use it as ``cv=`` of ``GridSearchCV``,
    ``cross_validate`` or ``cross_val_score``.

    .. important::
       ``groups`` carries the **domain of each row** and is a *stratification* variable: every
       (class, domain) group keeps its proportion on both sides. This is **not** the
       "keep together" meaning of ``GroupKFold`` / ``LeaveOneGroupOut``. Pass it as
       ``GridSearchCV(...).fit(X, y, groups=domains)``.

    Parameters
    ----------
    n_splits : int, default=1
        1: one train/validation split (the paper). ``K > 1``: K folds from K-cluster
        constrained kernel k-means (maximises ``sum_j n_j (n-n_j)^2/n^2 MMD²(fold_j, rest)``),
        each cluster the validation fold once: ``split`` yields exactly ``get_n_splits()``
        splits (``K = 2``: the two halves of a two-cluster split, each validated once).
    test_size : float, default=0.2
        Holdout fraction ``h`` for ``n_splits=1`` (``K`` folds use ``1/K``).
    kernel : {"rbf", "linear"} or callable, default="rbf"
        Clustering kernel. ``"linear"`` is plain (linear) k-means.
    bandwidth : float, str or None, default=None
        Bandwidth ``sigma`` of the RBF kernel ``exp(-||a - b||^2 / (2 sigma^2))``, as the
        other estimators' ``bandwidth``: a positive float, a rule of
        :data:`shiftlearn.kernels.BANDWIDTH_RULES` or ``"<f>*<rule>"``
        (:func:`shiftlearn.kernels.resolve_bandwidth`). ``None``: ``gamma = 1 / d_F`` with
        ``d_F`` the feature dimension (the paper's advice, its Section 6; the paper's
        experiments used ``gamma = 1``, ``bandwidth=0.5 ** 0.5``). The fitted ``gamma_`` is
        ``1 / (2 sigma^2)``.
    stratify : {"label_domain", "label", "domain", None}, default="label_domain"
        Constraint groups: class × domain (Eq. 5), class (Eq. 4), domain, or none. Without
        ``groups``, ``"label_domain"`` falls back to ``"label"``. Continuous ``y`` needs
        ``"domain"`` or ``None``.
    tolerance : float or dict, default=0
        Soft-constraint tolerance ``tau`` (Eq. 17); a dict maps group index (in sorted order of
        the constraint groups) to its ``tau``. 0 = hard constraints (the paper's experiments).
    n_landmarks : int or None, default=None
        Nyström landmarks ``q`` (RBF only); ``None`` forms the full ``n × n`` kernel. A Dask
        array ``X`` needs it (or ``kernel="linear"``): the kernel products then run block by
        block where the blocks live and ``X`` is never gathered (``_cluster_dask``).
    featurizer : fitted transformer or callable, default=None
        The MMD is measured in ``featurizer.transform(X)`` (or ``featurizer(X)``); the paper
        uses the model's own features. ``None``: the rows of ``X``.
    random_state : int, Generator or None
        Seeds the random initial split and the Nyström landmarks.
    solver : {"closed_form", "lp"}, default="closed_form"
        Assignment step for one split: the exact per-group sort, or the paper's LP (HiGHS).
    max_iter : int, default=100
    tol : float, default=0
        Early stop when an iteration raises the separation (proportional to the MMD) by less
        than ``tol`` times its value; 0 runs to a fixed point (the paper). ``1e-4`` is a good
        choice for very large ``n``.
    n_init : int, default=1
        Restarts; the lowest k-means objective is kept.
    init : {"random", "pca"}, default="random"
        Starting split: random stratified (the paper) or, for one split, the lowest
        ``round(h n_g)`` rows of each group along the leading kernel principal component (not
        in the paper; escapes the fixed point a random start can be for small, high-dimensional
        sets, see ``docs/model_selection.md``).
    gamma : deprecated
        The former parameter, scikit-learn's RBF ``gamma`` (a positive float, or a bandwidth
        rule), read for one release: ``split`` uses a given one with a ``FutureWarning``
        naming ``bandwidth``, and raises a ``ValueError`` when ``bandwidth`` is given too.

    Attributes
    ----------
    mmd2_ : ndarray of shape (n_splits,)
        Set by ``split``, as every attribute below (arrays have one entry per fold).
        Biased ``MMD²`` between each validation fold and its training rows (clustering kernel).
    mmd2_init_ : ndarray of shape (n_splits,)
        The same for the starting split (random feasible by default).
    n_iter_ : int
    converged_ : bool
    objective_ : float
        Final k-means objective ``Psi`` (sum of within-cluster scatter).
    objective_trace_ : list of float
        ``Psi`` after each iteration (non-increasing).
    mmd2_trace_ : list of ndarray
    labels_ : ndarray of shape (n_samples,)
        Fold of each row (one split: 1 = validation).
    gamma_ : float or None
        The RBF ``gamma`` used (``None`` for a linear or callable kernel).

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.linear_model import LogisticRegression
    >>> from sklearn.model_selection import GridSearchCV
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(120, 3)); y = (X[:, 0] > 0).astype(int)
    >>> domains = np.repeat([1, 2, 3], 40)
    >>> cv = ClusterSplit(test_size=0.25, random_state=0)
    >>> search = GridSearchCV(LogisticRegression(), {"C": [0.1, 1.0]}, cv=cv)
    >>> _ = search.fit(X, y, groups=domains)
    >>> bool(cv.mmd2_[0] >= cv.mmd2_init_[0])
    True
    """

    def __init__(self, n_splits=1, test_size=0.2, kernel="rbf", *, bandwidth=None,
                 stratify="label_domain", tolerance=0, n_landmarks=None, featurizer=None,
                 random_state=None, solver="closed_form", max_iter=100, tol=0.0, n_init=1,
                 init="random", gamma="deprecated"):
        self.n_splits = n_splits
        self.test_size = test_size
        self.kernel = kernel
        self.bandwidth = bandwidth
        self.stratify = stratify
        self.tolerance = tolerance
        self.n_landmarks = n_landmarks
        self.featurizer = featurizer
        self.random_state = random_state
        self.solver = solver
        self.max_iter = max_iter
        self.tol = tol
        self.n_init = n_init
        self.init = init
        self.gamma = gamma

    def _former_gamma(self):
        """The former ``gamma`` when given (with a ``FutureWarning`` naming ``bandwidth``),
        else ``None``; both spellings at once are refused."""
        if isinstance(self.gamma, str) and self.gamma == _DEPRECATED:
            return None
        if self.bandwidth is not None:
            raise ValueError(f"ClusterSplit got both gamma={self.gamma!r} and "
                             f"bandwidth={self.bandwidth!r}; gamma is the former parameter: "
                             "give bandwidth only.")
        if self.gamma is None:
            hint = "bandwidth=None (the default: gamma = 1 / n_features)"
        elif isinstance(self.gamma, str):
            hint = f"bandwidth={self.gamma!r}"
        else:
            hint = "bandwidth=(2 * gamma) ** -0.5 (the RBF's sigma)"
        warnings.warn(f"ClusterSplit: gamma is replaced by bandwidth; pass {hint} (gamma will "
                      "be removed in the next release).", FutureWarning,
                      stacklevel=user_stacklevel())
        return self.gamma

    def get_n_splits(self, X=None, y=None, groups=None, sample_domain=None) -> int:
        return int(self.n_splits)

    def _features(self, X) -> np.ndarray:
        X = dask_features(X) if is_dask(X) else check_X(X)
        if self.featurizer is None:
            return X
        F = self.featurizer.transform(X) if hasattr(self.featurizer, "transform") \
            else self.featurizer(X)
        F = dask_features(F) if is_dask(F) else check_X(F, name="featurizer output")
        if F.shape[0] != X.shape[0]:
            raise ValueError(f"The featurizer returned {F.shape[0]} rows for {X.shape[0]} inputs.")
        return F

    def _tolerance(self, codes: np.ndarray):
        if isinstance(self.tolerance, dict):
            tau = np.zeros(int(codes.max()) + 1)
            for key, val in self.tolerance.items():
                tau[int(key)] = val
            return tau
        return self.tolerance

    __metadata_request__split = {"groups": True, "sample_domain": True}

    def split(self, X, y=None, groups=None, sample_domain=None):
        """Yield ``(train_idx, validation_idx)`` for each fold and set the diagnostics.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Inputs (mapped by ``featurizer`` if given).
        y : array-like of shape (n_samples,), optional
            Class labels (stratification).
        groups : array-like of shape (n_samples,), optional
            **Domain** of each row (stratification, not GroupKFold's meaning).
        sample_domain : array-like of shape (n_samples,), optional
            Domain adaptation (also when ``groups`` holds negative target ids or ``y`` has
            unlabeled rows): only the labeled source rows are clustered (stratified by source
            domain); every target row joins every training fold and every validation fold (see
            :class:`~shiftlearn.model_selection.DomainAwareSplit`). The diagnostics
            (``labels_``, ``mmd2_``, ...) then refer to the labeled source rows.
        """
        # a Dask X stays in its blocks; its labels and domain ids are O(n) and read here
        y, groups, sample_domain = to_memory(y, groups, sample_domain)
        if LeaveOneDomainOut._da_mode(y, groups, sample_domain):
            yield from self._split_da(X, y, groups, sample_domain)
            return
        if not isinstance(self.n_splits, (int, np.integer)) or self.n_splits < 1:
            raise ValueError(f"n_splits must be a positive integer, got {self.n_splits!r}.")
        F = self._features(X)
        stratify = self.stratify
        if stratify == "label_domain" and groups is None:
            stratify = "label"
        codes = constraint_codes(y, groups, stratify, F.shape[0])
        rng = np.random.default_rng(self.random_state)
        # one split is a two-cluster holdout of size test_size; K >= 2 folds are K clusters,
        # each yielded once as the validation fold (K = 2: a two-cluster split in halves)
        k = 2 if self.n_splits == 1 else int(self.n_splits)
        test_size = 0.5 if self.n_splits == 2 else self.test_size
        make_operator = dask_kernel_operator if is_dask(F) else kernel_operator
        op, self.gamma_ = make_operator(F, kernel=self.kernel, gamma=self._former_gamma(),
                                        bandwidth=self.bandwidth, n_landmarks=self.n_landmarks,
                                        random_state=rng)
        res = constrained_kernel_kmeans(
            F, codes, n_clusters=k, test_size=test_size, tolerance=self._tolerance(codes),
            solver=self.solver, max_iter=self.max_iter, tol=self.tol, n_init=self.n_init,
            random_state=rng, operator=op, init=self.init)
        folds = [1] if self.n_splits == 1 else range(k)
        # one MMD per yielded fold: with two folds, each fold's MMD to the rest is the same
        per_fold = (lambda v: np.repeat(v, 2)) if self.n_splits == 2 else (lambda v: v)
        self.labels_ = res.labels
        self.mmd2_ = per_fold(res.mmd2)
        self.mmd2_init_ = per_fold(res.mmd2_init)
        self.n_iter_ = res.n_iter
        self.converged_ = res.converged
        self.objective_ = res.objective
        self.objective_trace_ = res.objective_trace
        self.mmd2_trace_ = [per_fold(v) for v in res.mmd2_trace]
        for j in folds:
            yield np.flatnonzero(res.labels != j), np.flatnonzero(res.labels == j)

    def _split_da(self, X, y, groups, sample_domain):
        import copy

        inner = copy.copy(self)
        yield from DomainAwareSplit(inner).split(X, y, groups, sample_domain)
        for name in ("labels_", "mmd2_", "mmd2_init_", "n_iter_", "converged_", "objective_",
                     "objective_trace_", "mmd2_trace_", "gamma_"):
            setattr(self, name, getattr(inner, name))
