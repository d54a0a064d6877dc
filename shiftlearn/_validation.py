"""Input checks shared by every estimator: ``X``, ``y`` and ``sample_domain``.

Domain convention (skada's): ``sample_domain`` holds one integer per row, positive for
source domains, negative for target domains, never 0. When it is omitted it is inferred as
skada does: labeled rows form source domain ``1``, unlabeled rows target domain ``-2``.

Unlabeled rows (the one convention, applied by every estimator, splitter and command; see
``docs/conventions.md``): ``y = -1`` or ``NaN`` for classification (string labels: ``"-1"``,
``""`` or a missing value), ``NaN`` for regression. Because ``-1`` is also a common class label
(binary labels ``-1/+1``), the marker is made impossible to hit by accident:
:func:`check_unlabeled_convention` refuses ``y`` whose ``-1`` rows would leave a single
labeled class in the rows they share a domain with (labels exactly ``{-1, +1}`` without
``sample_domain``, or a source domain holding ``-1`` rows beside one other class), with a
message that says what ``-1`` means and how to re-encode the labels or pass
``sample_domain``.
"""

from __future__ import annotations

from numbers import Integral, Real
from typing import Literal

import numpy as np
from sklearn.utils.validation import check_array, column_or_1d, validate_data

from ._array_api import array_api_namespace
from ._dask import is_dask
from ._stacklevel import user_stacklevel

DEFAULT_SOURCE_DOMAIN = 1
DEFAULT_TARGET_DOMAIN = -2
UNLABELED_CLASS = -1

__all__ = [
    "label_array",
    "learns_labels",
    "takes_sample_domain",
    "warn_if_plain_pipeline",
    "DEFAULT_SOURCE_DOMAIN",
    "DEFAULT_TARGET_DOMAIN",
    "UNLABELED_CLASS",
    "check_X",
    "check_X_y_domain",
    "check_y_domain",
    "check_y_shape",
    "check_labels_beside_dask",
    "check_sample_domain",
    "require_y",
    "check_unlabeled_convention",
    "infer_sample_domain",
    "unlabeled_mask",
]


def check_X(X, *, dtype=(np.float64, np.float32), ensure_min_samples: int = 1,
            name: str = "X", estimator=None, reset: bool = False) -> np.ndarray:
    """Validate a 2-D finite numeric feature array (float32 is kept, other types become float64).

    With ``estimator``, scikit-learn's ``validate_data`` does it and also records
    (``reset=True``, in ``fit``) or checks (``reset=False``, in ``transform``/``predict``) the
    number of features and the feature names (``n_features_in_``, ``feature_names_in_``): a
    DataFrame whose columns are reordered or renamed after ``fit`` is refused.
    """
    # arrays of another namespace: the estimators with a device route validate them before;
    # here they are refused with the fix named (or converted, as scikit-learn does)
    array_api_namespace(X, owner=(type(estimator).__name__ if estimator is not None
                                  else "This function"), supported=False)
    if estimator is not None:
        out = validate_data(estimator, X, reset=reset, dtype=dtype,
                            ensure_min_samples=ensure_min_samples, ensure_all_finite=True)
    else:
        out = check_array(X, dtype=dtype, ensure_min_samples=ensure_min_samples,
                          ensure_all_finite=True, input_name=name)
    check_magnitudes(out, name, getattr(estimator, "feature_names_in_", None))
    return out


#: largest magnitude of a feature value: kernels, distances and covariances form products up
#: to the fourth power (a linear kernel's ``K L K``) summed over rows and columns; ``1e50 ** 4``
#: leaves ``1e108`` of float64's ``1.8e308`` for those sums. The table reader of the command
#: line applies the same limit.
MAX_MAGNITUDE = 1e50


def check_magnitudes(X: np.ndarray, name: str = "X", feature_names=None) -> None:
    """Refuse a feature value beyond ``+-MAX_MAGNITUDE`` (:data:`MAX_MAGNITUDE`) with a
    ``ValueError`` naming the column and the fix; ``O(n d)``, nothing for float32 (whose
    largest value is below the limit).

    Examples
    --------
    >>> check_magnitudes(np.array([[1.0, 2e60]]))
    Traceback (most recent call last):
    ...
    ValueError: X: column 1 holds 2e+60, beyond +-1e+50: ... rescale that column (...).
    """
    if X.dtype != np.float64 or X.size == 0:
        return
    # the common case in two passes without a temporary (NaN fails both tests and falls
    # through, where it is no magnitude); the column is looked for only past the limit
    if -MAX_MAGNITUDE <= X.min() and X.max() <= MAX_MAGNITUDE:
        return
    amax = np.abs(X).max(axis=0)
    big = np.flatnonzero(amax > MAX_MAGNITUDE)
    if not big.size:
        return
    k = int(big[0])
    col = (repr(str(feature_names[k])) if feature_names is not None and len(feature_names) > k
           else str(k))
    value = X[int(np.argmax(np.abs(X[:, k]))), k]
    raise ValueError(f"{name}: column {col} holds {value:.6g}, beyond +-{MAX_MAGNITUDE:.0e}: "
                     "the kernels, distances and covariances multiply features up to the "
                     "fourth power, which would overflow float64; rescale that column "
                     "(another unit, or its logarithm).")


#: string labels read as "unlabeled" (after stripping blanks); ``None``/NaN are too
UNLABELED_STRINGS = frozenset({"", "-1"})


def _is_missing(v) -> bool:
    if v is None:
        return True
    try:
        return bool(v != v)          # NaN, pandas.NA raises TypeError in bool()
    except TypeError:
        return True


def label_array(y) -> np.ndarray:
    """``np.asarray(y)``, except for a list (or tuple) that mixes strings with missing values
    (``None``, NaN): numpy would turn a NaN beside strings into the string ``'nan'``, a class
    of its own, and the row would silently count as labeled; such a list becomes an object
    array that keeps NaN as the missing value it is. Cost: ``O(n)``.

    Examples
    --------
    >>> label_array(["a", "b", float("nan")]).tolist()
    ['a', 'b', nan]
    >>> label_array(["a", "b"]).dtype.kind, label_array(["a", 1]).tolist()
    ('U', ['a', '1'])
    """
    a = np.asarray(y)
    if a.dtype.kind not in "US" or isinstance(y, np.ndarray) or a.size == 0:
        return a
    obj = np.asarray(y, dtype=object)
    others = [v for v in obj.ravel() if not isinstance(v, str | bytes)]
    if others and all(_is_missing(v) for v in others):
        return obj
    return a


def _object_unlabeled(v) -> bool:
    if _is_missing(v):
        return True
    if isinstance(v, str | bytes):
        s = v.decode() if isinstance(v, bytes) else v
        return s.strip() in UNLABELED_STRINGS
    if isinstance(v, bool | np.bool_):
        return False
    return bool(np.isscalar(v) and v == UNLABELED_CLASS)


def unlabeled_mask(y: np.ndarray, task: Literal["classification", "regression", "auto"] = "auto"
                   ) -> np.ndarray:
    """Boolean mask of unlabeled rows: ``NaN`` or the class marker ``-1``.

    As skada decides it, with string labels added: integer labels are unlabeled where ``-1``;
    float labels containing ``NaN`` are regression targets, unlabeled exactly where ``NaN`` (a
    real target value of ``-1.0`` stays labeled); float labels without ``NaN`` that are all
    integral are class labels (``-1.0`` = unlabeled); other float labels are all labeled.
    String labels are unlabeled where ``"-1"`` or empty (blanks stripped); object labels where
    ``None``, NaN, ``-1``, ``"-1"`` or ``""``. Booleans are never unlabeled. With
    ``task="regression"`` only NaN marks an unlabeled row.

    Examples
    --------
    >>> import numpy as np
    >>> unlabeled_mask(np.array([0, 1, -1])).tolist()
    [False, False, True]
    >>> unlabeled_mask(np.array([0.5, -1.0, np.nan])).tolist()
    [False, False, True]
    >>> unlabeled_mask(np.array(["cat", "-1", "", "dog"])).tolist()
    [False, True, True, False]
    >>> unlabeled_mask(np.array([3.0, -1.0]), task="regression").tolist()
    [False, False]
    """
    y = label_array(y)
    if y.ndim == 0:
        y = y.reshape(1)
    kind = y.dtype.kind
    if task == "regression":
        if kind == "f":
            return np.isnan(y)
        if kind in "mM":
            return np.isnat(y)
        if kind == "O":
            return np.array([_is_missing(v) for v in y.ravel()], dtype=bool).reshape(y.shape)
        return np.zeros(y.shape, dtype=bool)
    if kind == "f":
        nan = np.isnan(y)
        if np.any(nan):
            return nan
        if np.all(y == np.round(y)):
            return y == UNLABELED_CLASS
        return np.zeros(y.shape, dtype=bool)
    if kind in "iu":
        return y == UNLABELED_CLASS
    if kind in "mM":                         # dates or durations: NaT is the missing value
        return np.isnat(y)
    if kind in "US":
        stripped = np.char.strip(y.astype(str))
        return np.isin(stripped, list(UNLABELED_STRINGS))
    if kind == "O":
        return np.array([_object_unlabeled(v) for v in y.ravel()],
                        dtype=bool).reshape(y.shape)
    return np.zeros(y.shape, dtype=bool)


def _marker_rows(y: np.ndarray, unl: np.ndarray) -> np.ndarray:
    """The unlabeled rows marked by the ambiguous ``-1`` (not by NaN, None or ``""``)."""
    kind = y.dtype.kind
    if kind in "iuf":
        return unl & (y == UNLABELED_CLASS)
    if kind in "USO":
        return unl & np.array([str(v).strip() == "-1" or (np.isscalar(v) and not
                               isinstance(v, str | bytes) and v == UNLABELED_CLASS)
                               for v in y], dtype=bool)
    return np.zeros(y.shape[0], dtype=bool)


def check_unlabeled_convention(y: np.ndarray, sample_domain: np.ndarray | None = None, *,
                               task: Literal["classification", "regression", "auto"] = "auto"
                               ) -> np.ndarray:
    """Refuse a ``y`` in which the unlabeled marker ``-1`` is most likely a class.

    ``-1`` means *unlabeled* (skada's convention). Read that way, labels ``{-1, +1}`` give a
    single labeled class, which no classifier can learn from: the ``-1`` rows are almost
    certainly a class. The rule: if some rows are marked by ``-1`` (not NaN/None/``""``) and the
    labeled rows hold exactly one class, raise, unless ``sample_domain`` is given and every
    ``-1`` row is in a target (negative) domain (then ``-1`` plainly means an unlabeled target).

    Parameters
    ----------
    y : ndarray of shape (n_samples,)
    sample_domain : ndarray of shape (n_samples,) or None
        As given by the user (``None`` when it is to be inferred from ``y``).
    task : {"classification", "regression", "auto"}
        Regression targets use NaN only, so the rule does not apply to them.

    Returns
    -------
    unlabeled : ndarray of bool, the :func:`unlabeled_mask` of ``y``.

    Examples
    --------
    >>> import numpy as np
    >>> check_unlabeled_convention(np.array([0, 1, -1])).tolist()
    [False, False, True]
    >>> try:
    ...     check_unlabeled_convention(np.array([1, -1, 1, -1]))
    ... except ValueError as exc:
    ...     print(str(exc)[:60])
    y holds the value -1 beside a single other class (1): shiftl
    """
    y = label_array(y)
    unl = unlabeled_mask(y, task=task)
    if task == "regression" or not unl.any():
        return unl
    marker = _marker_rows(y, unl)
    if not marker.any():
        return unl
    if sample_domain is not None and not np.any(marker & (np.asarray(sample_domain) > 0)):
        return unl
    classes = np.unique(y[~unl].astype(str) if y.dtype.kind == "O" else y[~unl])
    if classes.size == 1:
        where = ("" if sample_domain is None else " (in source domains, which must be labeled)")
        raise ValueError(
            f"y holds the value -1 beside a single other class ({classes.tolist()[0]!r}): "
            "shiftlearn "
            f"reads y = -1 as 'unlabeled' (skada's convention){where}, which would leave one "
            "class to learn. If -1 is a class (labels -1/+1), re-encode the labels, e.g. "
            "y = (y > 0).astype(int) or sklearn.preprocessing.LabelEncoder; if the -1 rows "
            "really are unlabeled target rows, pass sample_domain (positive ids for the labeled "
            "source rows, negative ids for the target rows).")
    return unl


def infer_sample_domain(y: np.ndarray, task: Literal["classification", "regression", "auto"]
                        = "auto") -> np.ndarray:
    """skada's rule: labeled rows are source domain ``1``, unlabeled rows target domain ``-2``."""
    mask = unlabeled_mask(y, task=task)
    return np.where(mask, DEFAULT_TARGET_DOMAIN, DEFAULT_SOURCE_DOMAIN).astype(np.int64)


def scoring_domains(y, sample_domain) -> np.ndarray | None:
    """The rows' ``sample_domain`` for ``score(X, y)`` after ``fit``: the one given (checked);
    else, when ``y`` also marks unlabeled rows, :func:`infer_sample_domain` (a validation fold
    of ``SourceKFold``: its labeled rows are source rows); else ``None`` (target rows).

    Examples
    --------
    >>> scoring_domains(np.array([0, 1, -1]), None).tolist()
    [1, 1, -2]
    >>> scoring_domains(np.array([0, 1]), None) is None
    True
    """
    y = label_array(y)
    if sample_domain is not None:
        return check_sample_domain(sample_domain, y.shape[0])
    return infer_sample_domain(y) if unlabeled_mask(y).any() else None


def read_class_labels(y) -> np.ndarray:
    """Class labels as ``fit`` reads them, for code that reads ``y`` outside an estimator (the
    splitters): labels compared as values and every missing-value spelling an unlabeled row
    (``-1`` in integer labels, ``""`` in string labels); see :func:`_normalize_class_labels`.

    >>> read_class_labels(np.array([True, None, False], dtype=object)).tolist()
    [1, -1, 0]
    """
    return _normalize_class_labels(label_array(y))


def scored_rows(y, task: Literal["classification", "regression"] = "classification"
                ) -> tuple[np.ndarray, np.ndarray]:
    """``(keep, y)`` for ``score(X, y)``: the one scoring rule of every estimator that takes
    unlabeled rows. ``keep`` marks the labeled rows, the only ones a score counts (an
    unlabeled row is never an error); ``y`` is read as ``fit`` reads it (class labels compared
    as values, missing values of any spelling unlabeled).

    Examples
    --------
    >>> keep, y = scored_rows(np.array([0, 1, -1]))
    >>> keep.tolist(), y.tolist()
    ([True, True, False], [0, 1, -1])
    >>> scored_rows(np.array([2.5, np.nan]), task="regression")[0].tolist()
    [True, False]
    """
    y = label_array(y)
    if y.ndim == 2 and y.shape[1] == 1:
        y = y.ravel()
    keep = ~unlabeled_mask(y, task=task)
    if task == "classification":
        y = _normalize_class_labels(y)
    return keep, y


def check_sample_domain(sample_domain, n_samples: int) -> np.ndarray:
    """Validate ``sample_domain``: 1-D, integer-valued, non-zero, one entry per row.

    A scalar is broadcast to every row (as in skada).
    """
    sd = np.asarray(sample_domain)
    if sd.ndim == 0:
        sd = np.full(n_samples, sd.item() if sd.dtype.kind in "iuf" else sd, dtype=sd.dtype)
    if sd.ndim != 1:
        sd = sd.reshape(-1) if sd.ndim == 2 and 1 in sd.shape else sd
    if sd.ndim != 1:
        raise ValueError(f"sample_domain must be 1-D, got an array of shape {sd.shape}.")
    if sd.shape[0] != n_samples:
        raise ValueError(
            f"sample_domain has {sd.shape[0]} entries but X has {n_samples} rows; "
            "give one domain id per row.")
    if sd.dtype.kind == "f":
        if not np.all(np.isfinite(sd)) or np.any(sd != np.round(sd)):
            raise ValueError("sample_domain must hold integer domain ids (no NaN or fractions).")
    elif sd.dtype.kind not in "iu":
        raise ValueError(f"sample_domain must hold integer domain ids, got dtype {sd.dtype}.")
    sd = sd.astype(np.int64)
    if np.any(sd == 0):
        raise ValueError("sample_domain contains 0: ids must be positive (source) "
                         "or negative (target), never 0.")
    return sd


def check_y_shape(y, n: int) -> np.ndarray:
    """``y`` as a 1-D array of ``n`` entries: a ``(n, 1)`` column is flattened with
    scikit-learn's ``DataConversionWarning``; any other shape, or another length, is a
    ``ValueError``. Cost: ``O(1)`` (a view), ``O(n)`` for a column.

    Examples
    --------
    >>> check_y_shape([0, 1, -1], 3).tolist()
    [0, 1, -1]
    """
    y = label_array(y)
    if y.ndim == 2 and y.shape[1] == 1:
        y = column_or_1d(y, warn=True)      # scikit-learn's DataConversionWarning
    if y.ndim != 1:
        raise ValueError(f"y must be 1-D, got an array of shape {y.shape}.")
    if y.shape[0] != n:
        raise ValueError(f"X has {n} rows but y has {y.shape[0]} entries.")
    return y


def check_labels_beside_dask(y, sample_domain, n: int) -> tuple:
    """Where a fit on a Dask ``X`` of ``n`` rows starts: the labels held in memory checked
    as for numpy input (:func:`check_y_shape`, :func:`check_sample_domain`, the same
    messages), before any block task; Dask labels are returned as they are (their values are
    checked block by block by the fit). Returns ``(y, sample_domain)``.

    Examples
    --------
    >>> y, sd = check_labels_beside_dask([0, 1], [1.0, -1.0], 2)
    >>> y.tolist(), sd.tolist()
    ([0, 1], [1, -1])
    """
    if y is not None and not is_dask(y):
        y = check_y_shape(y, n)
    if sample_domain is not None and not is_dask(sample_domain):
        sample_domain = check_sample_domain(sample_domain, n)
    return y, sample_domain


def _normalize_class_labels(y: np.ndarray) -> np.ndarray:
    """Class labels compared as values, every missing-value spelling unlabeled.

    Integral floats (NaN = unlabeled) become int64 with ``-1`` for unlabeled rows. An object
    array (what pandas gives for nullable ``Int64``/``boolean``/``string`` columns with
    ``<NA>``, or for a column mixing ``None``, NaN, ``pd.NA`` and ``pd.NaT``) is read by its
    labeled values: integral numbers or booleans become int64 (``False``/``True`` are the
    classes ``0``/``1``; unlabeled rows ``-1``), other real numbers float64 (unlabeled rows
    NaN), strings (or bytes) a string array (unlabeled rows ``""``). Labeled values of several kinds
    (strings beside numbers) are refused with a message that names them. Anything else is
    returned unchanged."""
    kind = y.dtype.kind
    if kind == "f":
        lab = ~np.isnan(y)
        if np.all(y[lab] == np.round(y[lab])):
            return np.where(lab, y, UNLABELED_CLASS).astype(np.int64)
        return y
    if kind != "O":
        return y
    unl = unlabeled_mask(y)
    vals = y[~unl]
    if all(isinstance(v, bool | np.bool_) for v in vals):
        out = np.full(y.shape[0], UNLABELED_CLASS, dtype=np.int64)
        out[~unl] = [int(bool(v)) for v in vals]
        return out
    numbers = [isinstance(v, Integral | Real) and not isinstance(v, bool | np.bool_)
               for v in vals]
    if all(numbers):
        if all(float(v) == round(float(v)) for v in vals):
            out = np.full(y.shape[0], UNLABELED_CLASS, dtype=np.int64)
            out[~unl] = [int(v) for v in vals]
            return out
        out = np.full(y.shape[0], np.nan)
        out[~unl] = [float(v) for v in vals]
        return out
    if all(isinstance(v, str | bytes) for v in vals):
        out = np.array([v.decode() if isinstance(v, bytes) else v for v in y.ravel()],
                       dtype=object)
        return np.where(unl, "", out).astype(str)
    kinds = sorted({type(v).__name__ for v in vals})
    if len(kinds) == 1:                     # one type, not a label type: left to the caller
        return y
    raise ValueError(
        f"y mixes labels of several types ({', '.join(kinds)}), e.g. "
        f"{', '.join(repr(v) for v in _first_of_each_type(vals))}: give the class labels one "
        "type (e.g. all strings: y.astype(str), keeping None/NaN for the unlabeled rows).")


def _first_of_each_type(vals) -> list:
    seen: dict = {}
    for v in vals:
        seen.setdefault(type(v), v)
    return list(seen.values())


def require_y(y, estimator, hint: str) -> None:
    """Refuse ``y=None`` for an estimator that learns from labels, in the words scikit-learn's
    ``check_requires_y_none`` expects; ``hint`` (after "is None") says what to pass.

    >>> require_y([1, -1], "TCA", ".")
    >>> require_y(None, "TCA", ": give the labels.")
    Traceback (most recent call last):
    ...
    ValueError: TCA requires y to be passed, but the target y is None: give the labels.
    """
    if y is None:
        name = estimator if isinstance(estimator, str) else type(estimator).__name__
        raise ValueError(f"{name} requires y to be passed, but the target y is None{hint}")


def check_X_y_domain(
    X,
    y=None,
    sample_domain=None,
    *,
    dtype=(np.float64, np.float32),
    estimator=None,
    **rules,
) -> tuple[np.ndarray, np.ndarray | None, np.ndarray]:
    """Validate ``(X, y, sample_domain)`` together and return clean arrays.

    Parameters
    ----------
    X : array-like of shape (n_samples, n_features)
        Finite numeric features (NaN/inf rejected).
    y : array-like of shape (n_samples,) or None
        Labels; ``-1`` (classification) or ``NaN`` (regression) marks unlabeled rows.
        ``None`` means every row is unlabeled (then ``sample_domain`` is required).
    sample_domain : array-like of shape (n_samples,) or None
        Domain ids (positive = source, negative = target). Inferred from ``y`` if omitted.
    dtype : dtype or tuple of dtypes
        Accepted dtypes of ``X`` (float32 is kept by default, other types become float64).
    estimator : estimator or None
        When given (in ``fit``), ``X`` goes through scikit-learn's ``validate_data(estimator,
        X, reset=True)``, which records ``n_features_in_`` and ``feature_names_in_``.
    **rules
        The rules on ``y`` and ``sample_domain``, passed to :func:`check_y_domain` (``task``,
        ``allow_unlabeled_source``, ``require_source``, ``require_target``,
        ``allow_target_labels``, ``min_samples_per_domain``; one home for them and their
        messages).

    Returns
    -------
    X : ndarray of shape (n_samples, n_features)
    y : ndarray of shape (n_samples,) or None
    sample_domain : ndarray of int64, shape (n_samples,)

    Examples
    --------
    >>> import numpy as np
    >>> X = np.zeros((4, 2)); y = np.array([0, 1, -1, -1])
    >>> _, _, sd = check_X_y_domain(X, y)
    >>> sd.tolist()
    [1, 1, -2, -2]
    """
    X = check_X(X, dtype=dtype, estimator=estimator, reset=True)
    y, sd = check_y_domain(y, sample_domain, X.shape[0], **rules)
    return X, y, sd


def check_y_domain(
    y,
    sample_domain,
    n: int,
    *,
    task: Literal["classification", "regression", "auto"] = "auto",
    allow_unlabeled_source: bool = False,
    require_source: bool = True,
    require_target: bool = False,
    allow_target_labels: bool = True,
    min_samples_per_domain: int = 1,
) -> tuple[np.ndarray | None, np.ndarray]:
    """The ``y`` and ``sample_domain`` half of :func:`check_X_y_domain` for ``n`` rows (also
    used alone where the rows are checked elsewhere, e.g. block by block on Dask). Returns
    ``(y, sample_domain)``.

    Parameters
    ----------
    y, sample_domain : array-like of shape (n,) or None
        As in :func:`check_X_y_domain`.
    n : int
        Number of rows.
    task : {"classification", "regression", "auto"}
        For classification, labels are cast to integers where they are integral.
    allow_unlabeled_source : bool
        If False, an unlabeled row in a source domain is an error (a labeled row in a
        target domain is allowed: it is semi-supervised DA, unless ``allow_target_labels``
        is False).
    require_source, require_target : bool
        Demand at least one source (resp. target) row.
    allow_target_labels : bool
        If False, a labeled row in a target (negative id) domain is an error.
    min_samples_per_domain : int
        Each domain present must have at least this many rows.

    Examples
    --------
    >>> check_y_domain([0, 1, -1], None, 3)[1].tolist()
    [1, 1, -2]
    """
    if y is not None:
        y = check_y_shape(y, n)
        if y.dtype.kind == "f" and np.any(np.isinf(y)):
            raise ValueError("y contains inf.")
    if sample_domain is None:
        if y is None:
            raise ValueError("Without y, sample_domain is required to tell sources from targets.")
        sd = None
    else:
        sd = check_sample_domain(sample_domain, n)
    if y is not None:
        # on the labels as given: a NaN/None/<NA> row is never the ambiguous -1 marker
        check_unlabeled_convention(y, sd, task=task)
        if task == "classification":
            y = _normalize_class_labels(y)
    if sd is None:
        sd = infer_sample_domain(y, task=task)

    ids, counts = np.unique(sd, return_counts=True)
    small = ids[counts < min_samples_per_domain]
    if small.size:
        raise ValueError(f"Domain(s) {small.tolist()} have fewer than "
                         f"{min_samples_per_domain} rows.")
    is_source = sd > 0
    if require_source and not np.any(is_source):
        raise ValueError("No source rows: at least one row needs a positive sample_domain.")
    if require_target and not np.any(~is_source):
        raise ValueError("No target rows: domain adaptation needs rows with a negative "
                         "sample_domain (unlabeled target data).")
    if y is not None:
        unl = unlabeled_mask(y, task=task)
        if not allow_unlabeled_source and np.any(unl & is_source):
            bad = np.unique(sd[unl & is_source]).tolist()
            raise ValueError(f"Source domain(s) {bad} contain unlabeled rows (y = -1, NaN or "
                             "empty): source rows must be labeled. y = -1 means 'unlabeled'; if "
                             "-1 is one of your classes, re-encode the labels (e.g. "
                             "sklearn.preprocessing.LabelEncoder).")
        if not allow_target_labels and np.any(~unl & ~is_source):
            bad = np.unique(sd[~unl & ~is_source]).tolist()
            raise ValueError(f"Target domain(s) {bad} are declared unlabeled but contain "
                             "labeled rows; mask them with y = -1 (or NaN).")
        if require_source and np.all(unl):
            raise ValueError("y has no labeled row.")
    return y, sd


def takes_sample_domain(est, method: str = "fit") -> bool:
    """Whether ``est.<method>`` takes a ``sample_domain`` argument (a domain-aware step)."""
    import inspect

    fn = getattr(est, method, None)
    if fn is None:
        return False
    try:
        return "sample_domain" in inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return False


def learns_labels(est) -> bool:
    """A pipeline step that would learn ``y`` as given: a predictor that is not domain-aware
    (a ``LabeledOnly`` wrapper, whose ``fit`` takes ``sample_domain``, is domain-aware)."""
    from sklearn.pipeline import Pipeline

    if est is None or isinstance(est, str):
        return False
    if type(est).__module__.split(".")[0] == "skada":   # skada's selectors route domains
        return False
    if isinstance(est, Pipeline):
        return learns_labels(est.steps[-1][1])
    return hasattr(est, "predict") and not takes_sample_domain(est)


def warn_if_plain_pipeline(transformer, y) -> None:
    """Warn when ``transformer`` is being fitted by a plain scikit-learn ``Pipeline`` on rows
    marked unlabeled, and a later step of that pipeline would learn ``y`` as it is.

    Called by the library's adapters at ``fit``. Looks up the call stack for the ``Pipeline``
    that is fitting (scikit-learn's ``Pipeline._fit``); a pipeline whose ``fit`` takes
    ``sample_domain`` (``shiftlearn.DomainAwarePipeline``), or a later step that is
    domain-aware (``LabeledOnly`` included), does not warn.
    """
    if y is None:
        return
    unl = unlabeled_mask(y)
    if not unl.any():
        return
    import sys
    import warnings

    from sklearn.pipeline import Pipeline

    frame = sys._getframe(1)
    for _ in range(12):
        frame = frame.f_back
        if frame is None:
            return
        owner = frame.f_locals.get("self")
        if frame.f_code.co_name == "_fit" and isinstance(owner, Pipeline):
            break
    else:
        return
    if takes_sample_domain(owner):
        return
    idx = frame.f_locals.get("step_idx")
    if not isinstance(idx, int):
        return
    later = [(n, s) for n, s in owner.steps[idx + 1:] if learns_labels(s)]
    if later:
        name, step = later[0]
        warnings.warn(
            f"{type(transformer).__name__} was fitted inside a scikit-learn Pipeline on "
            f"{int(unl.sum())} unlabeled row(s) (y = -1, NaN or empty); the pipeline's step "
            f"{name!r} ({type(step).__name__}) will be fitted on the same rows and learn the "
            "marker as a class. Build the pipeline with shiftlearn.make_da_pipeline (or "
            "skada.make_da_pipeline), which fits the final estimator on the labeled rows only, "
            "or use shiftlearn.DomainAdaptationClassifier.", UserWarning,
            stacklevel=user_stacklevel())
