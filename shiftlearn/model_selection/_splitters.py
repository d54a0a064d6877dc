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

from ..kernels import _rng

__all__ = ["STRATIFY", "LeaveOneDomainOut", "RandomStratifiedSplit", "constraint_codes"]

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
        y = np.asarray(y)
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
        m = group_bounds(np.bincount(codes), self.test_size)[0] if k == 2 else None
        labels = _init_labels(codes, k, m, _rng(self.random_state))
        folds = [1] if k == 2 else range(k)
        for j in folds:
            yield np.flatnonzero(labels != j), np.flatnonzero(labels == j)


class LeaveOneDomainOut(GroupsConsumerMixin, BaseCrossValidator):
    """Leave-one-domain-out: fold ``j`` validates on the whole ``j``-th domain of ``groups``.

    The metadata-based OOD split (scikit-learn's ``LeaveOneGroupOut`` on domain ids); here
    ``groups`` *is* used with GroupKFold's keep-together meaning. Needs at least 2 domains.

    Examples
    --------
    >>> import numpy as np
    >>> cv = LeaveOneDomainOut()
    >>> [va.tolist() for _, va in cv.split(np.zeros((4, 1)), groups=[1, 2, 1, 3])]
    [[0, 2], [1], [3]]
    """

    def get_n_splits(self, X=None, y=None, groups=None) -> int:
        if groups is None:
            raise ValueError("LeaveOneDomainOut needs groups (the domain of each row).")
        return int(np.unique(np.asarray(groups)).shape[0])

    def split(self, X, y=None, groups=None):
        if groups is None:
            raise ValueError("LeaveOneDomainOut needs groups (the domain of each row).")
        g = np.asarray(groups)
        ids = np.unique(g)
        if ids.shape[0] < 2:
            raise ValueError(f"LeaveOneDomainOut needs at least 2 domains, got {ids.shape[0]}.")
        for d in ids:
            yield np.flatnonzero(g != d), np.flatnonzero(g == d)
