"""Baseline validation splitters for model selection under shift, and the shared stratification.

``groups`` carries the **domain** of each row in every splitter of this module and in
:class:`~shiftlearn.model_selection.ClusterSplit`. For the stratified splitters it is a
*stratification* variable (domain proportions are preserved on both sides), **not** the
"keep together" meaning of scikit-learn's ``GroupKFold``. Only :class:`LeaveOneDomainOut`
keeps each domain together (it holds one whole domain out per fold).
"""

from __future__ import annotations

import numpy as np
from sklearn.model_selection import BaseCrossValidator
from sklearn.model_selection._split import GroupsConsumerMixin
from sklearn.utils.multiclass import type_of_target

from .._validation import label_array, read_class_labels

__all__ = ["STRATIFY", "DomainAwareSplit", "LeaveOneDomainOut", "RandomStratifiedSplit",
           "SourceKFold", "constraint_codes", "split_domains"]

STRATIFY = ("label_domain", "label", "domain", None)


def constraint_codes(y, groups, stratify, n_samples: int) -> np.ndarray:
    """Integer code of each row's constraint group.

    ``stratify="label_domain"``: one group per (class, domain) pair (the paper's Eq. 5);
    ``"label"``: per class (Eq. 4); ``"domain"``: per domain; ``None``: one group (size only).
    ``"label_domain"`` without ``groups`` falls back to ``"label"``, as the paper allows.

    Examples
    --------
    >>> constraint_codes([0, 0, 1, 1], [1, 2, 1, 1], "label_domain", 4).tolist()
    [0, 1, 2, 2]
    """
    if stratify not in STRATIFY:
        raise ValueError(f"stratify must be one of {STRATIFY}, got {stratify!r}.")
    cols = []
    if stratify in ("label_domain", "label"):
        if y is None:
            raise ValueError(f"stratify={stratify!r} needs y; pass y or use stratify='domain' "
                             "or None.")
        y = read_class_labels(y)            # nullable pandas columns, missing values
        if y.shape[0] != n_samples:
            raise ValueError(f"y has {y.shape[0]} entries but X has {n_samples} rows.")
        if type_of_target(y) == "continuous":
            raise ValueError("y is continuous (regression): label strata are meaningless. "
                             "Use stratify='domain' (with groups=domains) or None.")
        cols.append(np.unique(y, return_inverse=True)[1].ravel())
    if stratify in ("label_domain", "domain") and groups is not None:
        g = np.asarray(groups)
        if g.shape[0] != n_samples:
            raise ValueError(f"groups has {g.shape[0]} entries but X has {n_samples} rows.")
        cols.append(np.unique(g, return_inverse=True)[1].ravel())
    elif stratify == "domain":
        raise ValueError("stratify='domain' needs groups (the domain of each row).")
    if not cols:
        return np.zeros(n_samples, dtype=np.int64)
    stacked = np.stack(cols, axis=1)
    return np.unique(stacked, axis=0, return_inverse=True)[1].ravel().astype(np.int64)


def _n_rows(X, y, groups) -> int:
    for a in (X, y, groups):
        if a is not None:
            return len(a)
    raise ValueError("split needs X (or y / groups) to know the number of rows.")


class RandomStratifiedSplit(GroupsConsumerMixin, BaseCrossValidator):
    """Random validation split stratified by class × domain (the usual in-distribution split).

    ``n_splits=1``: each constraint group puts ``round(h n_g)`` random rows in validation
    (round half up), exactly the counts :class:`ClusterSplit` uses, so comparisons differ only
    in *which* rows are held out. ``n_splits=K>1``: a random K-fold partition with
    ``floor(n_g/K)`` or ``ceil(n_g/K)`` rows of each group per fold.

    ``groups`` is the domain of each row, used for stratification (not GroupKFold's meaning).

    Parameters
    ----------
    n_splits : int, default=1
    test_size : float, default=0.2
        Holdout fraction ``h`` (``n_splits=1`` only).
    stratify : {"label_domain", "label", "domain", None}, default="label_domain"
    random_state : int, Generator or None

    Examples
    --------
    >>> import numpy as np
    >>> y = np.repeat([0, 1], 10); d = np.tile([1, 2], 10)
    >>> tr, va = next(RandomStratifiedSplit(random_state=0).split(np.zeros((20, 1)), y, d))
    >>> len(va), sorted(set(zip(y[va].tolist(), d[va].tolist())))
    (4, [(0, 1), (0, 2), (1, 1), (1, 2)])
    """

    def __init__(self, n_splits=1, test_size=0.2, stratify="label_domain", random_state=None):
        self.n_splits = n_splits
        self.test_size = test_size
        self.stratify = stratify
        self.random_state = random_state

    def get_n_splits(self, X=None, y=None, groups=None) -> int:
        return int(self.n_splits)

    def split(self, X, y=None, groups=None):
        from ._cluster_kmeans import _init_labels, group_bounds

        n = _n_rows(X, y, groups)
        codes = constraint_codes(y, groups, self.stratify, n)
        k = 2 if self.n_splits == 1 else int(self.n_splits)
        if k < 2:
            raise ValueError(f"n_splits must be >= 1, got {self.n_splits!r}.")
        # one split: a holdout of test_size; K >= 2 folds, each validated once (K = 2: halves)
        h = 0.5 if self.n_splits == 2 else self.test_size
        m = group_bounds(np.bincount(codes), h)[0] if k == 2 else None
        labels = _init_labels(codes, k, m, np.random.default_rng(self.random_state))
        folds = [1] if self.n_splits == 1 else range(k)
        for j in folds:
            yield np.flatnonzero(labels != j), np.flatnonzero(labels == j)


class LeaveOneDomainOut(GroupsConsumerMixin, BaseCrossValidator):
    """Leave-one-domain-out: fold ``j`` validates on the whole ``j``-th domain.

    Two uses:

    * domain generalization / development domains only (``groups`` = domain ids, all of them
      sources): scikit-learn's ``LeaveOneGroupOut`` on domain ids, ``groups`` used with
      GroupKFold's keep-together meaning. Needs at least 2 domains.
    * domain adaptation (``sample_domain`` routed, or ``groups`` holding negative target ids, or
      ``y = -1`` rows): each fold holds out one labeled **source** domain; the target rows are
      in every training fold and (``target_in_test``) every validation fold, as
      :class:`DomainAwareSplit`. Needs at least 2 source domains.

    Examples
    --------
    >>> import numpy as np
    >>> cv = LeaveOneDomainOut()
    >>> [va.tolist() for _, va in cv.split(np.zeros((4, 1)), groups=[1, 2, 1, 3])]
    [[0, 2], [1], [3]]
    >>> y = np.array([0, 1, 0, 1, -1]); sd = np.array([1, 1, 2, 2, -3])
    >>> [va.tolist() for _, va in cv.split(np.zeros((5, 1)), y, sample_domain=sd)]
    [[0, 1, 4], [2, 3, 4]]
    """

    __metadata_request__split = {"groups": True, "sample_domain": True}

    def __init__(self, target_in_test=True):
        self.target_in_test = target_in_test

    @staticmethod
    def _da_mode(y, groups, sample_domain) -> bool:
        if sample_domain is not None:
            return True
        if groups is not None and np.any(np.asarray(groups) < 0):
            return True
        if y is not None and groups is not None:
            from .._validation import unlabeled_mask
            return bool(unlabeled_mask(y).any())
        return False

    def _da(self):
        from sklearn.model_selection import LeaveOneGroupOut

        return DomainAwareSplit(LeaveOneGroupOut(), target_in_test=self.target_in_test)

    def get_n_splits(self, X=None, y=None, groups=None, sample_domain=None) -> int:
        if self._da_mode(y, groups, sample_domain):
            src, _ = split_domains(y, groups, sample_domain)
            sd = np.asarray(sample_domain if sample_domain is not None else groups)
            return int(np.unique(sd[src]).shape[0])
        if groups is None:
            raise ValueError("LeaveOneDomainOut needs groups (the domain of each row) or "
                             "sample_domain.")
        return int(np.unique(np.asarray(groups)).shape[0])

    def split(self, X, y=None, groups=None, sample_domain=None):
        if self._da_mode(y, groups, sample_domain):
            if sample_domain is None and groups is None:
                raise ValueError("LeaveOneDomainOut needs the domain of each row: pass "
                                 "sample_domain (metadata routing) or groups=sample_domain.")
            src, _ = split_domains(y, groups, sample_domain)
            sd = np.asarray(sample_domain if sample_domain is not None else groups)
            n_src = np.unique(sd[src]).shape[0]
            if n_src < 2:
                raise ValueError(f"LeaveOneDomainOut needs at least 2 labeled source domains, "
                                 f"got {n_src}; use SourceKFold for a single source.")
            yield from self._da().split(X, y, groups, sample_domain)
            return
        if groups is None:
            raise ValueError("LeaveOneDomainOut needs groups (the domain of each row) or "
                             "sample_domain.")
        g = np.asarray(groups)
        ids = np.unique(g)
        if ids.shape[0] < 2:
            raise ValueError(f"LeaveOneDomainOut needs at least 2 domains, got {ids.shape[0]}.")
        for d in ids:
            yield np.flatnonzero(g != d), np.flatnonzero(g == d)


# ------------------------------------------------------------------ domain-aware splitting
def split_domains(y, groups=None, sample_domain=None, n_samples: int | None = None
                  ) -> tuple[np.ndarray, np.ndarray]:
    """``(labeled_source_idx, other_idx)`` of a domain-adaptation data set.

    The domain of each row comes from ``sample_domain`` (scikit-learn's metadata routing), else
    from ``groups`` (the legacy path: ``GridSearchCV(...).fit(X, y, groups=sample_domain)``),
    else it is inferred from ``y`` (labeled rows source, unlabeled rows target). Labeled source
    rows are those with a positive domain and a label (:func:`~shiftlearn._validation.
    unlabeled_mask`); every other row (targets, unlabeled rows) is in ``other_idx``.
    """
    from .._validation import check_sample_domain, check_unlabeled_convention

    if y is None:
        raise ValueError("A domain-aware splitter needs y (labels, -1/NaN on unlabeled rows) to "
                         "tell the labeled source rows from the target rows.")
    y = label_array(y)
    n = y.shape[0] if n_samples is None else n_samples
    if y.shape[0] != n:
        raise ValueError(f"y has {y.shape[0]} entries but X has {n} rows.")
    given = sample_domain if sample_domain is not None else groups
    sd = None if given is None else check_sample_domain(given, n)
    unl = check_unlabeled_convention(y, sd)
    src = ~unl if sd is None else (sd > 0) & ~unl
    return np.flatnonzero(src), np.flatnonzero(~src)


class DomainAwareSplit(BaseCrossValidator):
    """Any splitter applied to the labeled source rows; target rows take part in every fold.

    Domain adaptation fits on the unlabeled target rows, so they belong to every training fold;
    a target-label-free scorer needs them in the validation fold too (``target_in_test``). The
    labeled source rows are split by ``cv`` (its ``groups`` are their domain ids: stratification
    for :class:`ClusterSplit`, keep-together for ``LeaveOneGroupOut``). Works with plain
    ``GridSearchCV``/``cross_validate``: with scikit-learn's metadata routing on,
    ``sample_domain`` is routed here (requested by default); with it off, pass the domains as
    ``groups=sample_domain``; with neither, ``y = -1`` rows are the target.

    Parameters
    ----------
    cv : int or splitter, default=5
        An int ``k`` means ``StratifiedKFold(k, shuffle=True)`` over the labeled source rows
        (``KFold`` when a class has fewer than ``k`` rows).
    target_in_test : bool, default=True
        Also put every target row in each validation fold (a source-accuracy scorer skips them:
        they are unlabeled).
    random_state : int, default=0
        Shuffling seed when ``cv`` is an int.

    Examples
    --------
    >>> import numpy as np
    >>> y = np.array([0, 1, 0, 1, 0, 1, -1, -1]); sd = np.r_[np.ones(6, int), -2, -2]
    >>> folds = DomainAwareSplit(3).split(np.zeros((8, 1)), y, sample_domain=sd)
    >>> [(tr.tolist(), va.tolist()) for tr, va in folds][0]
    ([0, 1, 2, 5, 6, 7], [3, 4, 6, 7])
    """

    __metadata_request__split = {"groups": True, "sample_domain": True}

    def __init__(self, cv=5, *, target_in_test=True, random_state=0):
        self.cv = cv
        self.target_in_test = target_in_test
        self.random_state = random_state

    def _base(self, y_src):
        from sklearn.model_selection import KFold, StratifiedKFold

        if hasattr(self.cv, "split"):
            return self.cv
        k = int(self.cv)
        if k < 2:
            raise ValueError(f"cv must be an integer >= 2 or a splitter, got {self.cv!r}.")
        if y_src.shape[0] < k:
            raise ValueError(f"n_samples={y_src.shape[0]} labeled source rows cannot be split "
                             f"into {k} folds; lower the number of folds.")
        _, counts = np.unique(y_src, return_counts=True)
        if counts.min() >= k:
            return StratifiedKFold(k, shuffle=True, random_state=self.random_state)
        return KFold(k, shuffle=True, random_state=self.random_state)

    def get_n_splits(self, X=None, y=None, groups=None, sample_domain=None) -> int:
        if isinstance(self.cv, (int, np.integer)):
            return int(self.cv)
        if y is None:
            return self.cv.get_n_splits(X, y, groups)
        src, _ = split_domains(y, groups, sample_domain)
        sd = sample_domain if sample_domain is not None else groups
        g = None if sd is None else np.asarray(sd)[src]
        return self.cv.get_n_splits(None if X is None else _take(X, src),
                                    read_class_labels(y)[src], g)

    def split(self, X, y=None, groups=None, sample_domain=None):
        """Yield ``(train_idx, validation_idx)``; ``sample_domain`` (or ``groups``) holds the
        domain ids (positive sources, negative targets)."""
        n = _n_rows(X, y, groups)
        src, rest = split_domains(y, groups, sample_domain, n)
        y_src = read_class_labels(y)[src]
        sd = sample_domain if sample_domain is not None else groups
        g = None if sd is None else np.asarray(sd)[src]
        base = self._base(y_src)
        if not hasattr(self.cv, "split"):
            g = None                       # the built-in (Stratified)KFold takes no groups
        test_extra = rest if self.target_in_test else np.zeros(0, dtype=np.int64)
        for tr, va in base.split(_take(X, src) if X is not None else np.zeros((src.size, 1)),
                                 y_src, g):
            yield (np.sort(np.concatenate([src[tr], rest])),
                   np.sort(np.concatenate([src[va], test_extra])))


def _take(X, idx):
    from sklearn.utils import _safe_indexing

    return _safe_indexing(X, idx)


class SourceKFold(DomainAwareSplit):
    """K-fold cross-validation on the labeled source rows (the SCA/TCA papers' protocol);
    every target row in every training fold and, by default, every validation fold.

    Stratified by class when every class has at least ``n_splits`` rows. See
    :class:`DomainAwareSplit` for how the domains reach it.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.model_selection import GridSearchCV
    >>> from sklearn.neighbors import KNeighborsClassifier
    >>> from shiftlearn import DomainAdaptationClassifier, SCA
    >>> from shiftlearn.datasets import make_sca_toy
    >>> X, y, sd = make_sca_toy(n_per_cluster=20, random_state=0)
    >>> search = GridSearchCV(DomainAdaptationClassifier(SCA(n_components=2)),
    ...                       {"adapter__beta": [0.1, 0.9]}, cv=SourceKFold(3))
    >>> _ = search.fit(X, y, groups=sd, sample_domain=sd)   # metadata routing off
    >>> sorted(search.best_params_)
    ['adapter__beta']
    """

    def __init__(self, n_splits=5, *, target_in_test=True, random_state=0):
        self.n_splits = n_splits
        self.target_in_test = target_in_test
        self.random_state = random_state

    @property
    def cv(self):
        return self.n_splits
