"""Arrays from other libraries (PyTorch, CuPy, any array-API namespace) in, the same kind out.

The bottom layer's one home for the array API (https://data-apis.org/array-api/): which
namespace an input belongs to, moving small host arrays to its device and back, and the
validation of such inputs. It follows scikit-learn's switch: with
``sklearn.set_config(array_api_dispatch=True)`` (which scikit-learn allows only when the
environment variable ``SCIPY_ARRAY_API=1`` was set before SciPy was imported) a supported
estimator computes in the input's namespace, on its device and in its floating dtype, and
returns arrays of that kind. Without the switch, inputs are converted to NumPy as scikit-learn
does; an array that lives on an accelerator is then refused with the fix named, never copied
to the host behind the user's back.

Namespaces are resolved by ``array-api-compat`` (the compatibility layer scikit-learn uses);
NumPy input never takes this route, so NumPy results are unchanged.
"""

from __future__ import annotations

from types import ModuleType

import numpy as np
import sklearn

__all__ = [
    "ARRAY_API_ESTIMATORS",
    "array_api_namespace",
    "check_X_array_api",
    "device_of",
    "dispatch_enabled",
    "from_numpy",
    "is_foreign_array",
    "to_numpy",
]

#: public estimators that compute in the input's namespace under array-API dispatch (the list
#: the docs and the error of every other estimator name)
ARRAY_API_ESTIMATORS = ("TCA", "JDA", "SCA", "uSCA", "RFTCA", "RFSCA", "CORAL")


def dispatch_enabled() -> bool:
    """scikit-learn's ``array_api_dispatch`` configuration (``sklearn.get_config``)."""
    return bool(sklearn.get_config().get("array_api_dispatch", False))


def is_foreign_array(X) -> bool:
    """True for an array-API array that is not a NumPy array (torch, CuPy, array-api-strict,
    ...); False for NumPy arrays, lists, DataFrames, Dask arrays and anything else."""
    if X is None or isinstance(X, np.ndarray):
        return False
    mod = type(X).__module__.split(".")[0]
    if mod in ("numpy", "pandas", "dask", "polars", "pyarrow", "scipy"):
        return False
    try:
        import array_api_compat
    except ImportError:        # pragma: no cover - a core dependency
        return False
    return array_api_compat.is_array_api_obj(X) and not array_api_compat.is_numpy_array(X)


def device_of(X):
    """The device of an array (``"cpu"`` for NumPy)."""
    if isinstance(X, np.ndarray):
        return "cpu"
    import array_api_compat

    return array_api_compat.device(X)


def _on_host(X) -> bool:
    """True when ``X`` lives in host memory (torch's "cpu", array-api-strict's CPU_DEVICE)."""
    dev = device_of(X)
    return getattr(dev, "type", None) == "cpu" or dev == "cpu" or "CPU_DEVICE" in repr(dev)


def array_api_namespace(X, *, owner: str, supported: bool) -> ModuleType | None:
    """The namespace ``owner`` computes ``X`` in: ``None`` for the NumPy route, else the
    array-API namespace of ``X`` (array-api-compat's wrapper).

    Raises
    ------
    ValueError
        Dispatch is off and ``X`` lives on an accelerator (the fix: turn dispatch on, or move
        ``X`` to the host); or dispatch is on and ``owner`` has no array-API route (the fix:
        a NumPy array, or one of :data:`ARRAY_API_ESTIMATORS`).
    """
    if not is_foreign_array(X):
        return None
    kind = f"{type(X).__module__.split('.')[0]}.{type(X).__name__}"
    if not dispatch_enabled():
        if _on_host(X):
            return None                # converted to NumPy by validation, as scikit-learn does
        raise ValueError(
            f"{owner}: X is a {kind} on device {device_of(X)!r} and scikit-learn's array API "
            "dispatch is off, so it would have to be copied to the host. Either compute on "
            "that device: set SCIPY_ARRAY_API=1 before importing SciPy and call "
            "sklearn.set_config(array_api_dispatch=True) (estimators with that route: "
            f"{', '.join(ARRAY_API_ESTIMATORS)}); or pass a NumPy array (e.g. "
            "X.cpu().numpy() for torch, X.get() for CuPy).")
    if not supported:
        raise ValueError(
            f"{owner} computes with NumPy only, but X is a {kind} and array API dispatch is "
            f"on. Pass a NumPy array (e.g. X.cpu().numpy() for torch, X.get() for CuPy), or "
            f"use an estimator that computes in the input's namespace: "
            f"{', '.join(ARRAY_API_ESTIMATORS)}.")
    import array_api_compat

    return array_api_compat.array_namespace(X)


def to_numpy(x) -> np.ndarray:
    """A NumPy copy (or view) of an array of any namespace, on the host."""
    if x is None or isinstance(x, np.ndarray):
        return x
    if not is_foreign_array(x):
        return np.asarray(x)
    import array_api_compat

    if array_api_compat.is_torch_array(x):
        return x.detach().cpu().numpy()
    if array_api_compat.is_cupy_array(x):
        return x.get()
    if type(x).__module__.startswith("array_api_strict"):
        import array_api_strict

        return np.asarray(array_api_strict.asarray(x, device=array_api_strict.Device(
            "CPU_DEVICE")))
    return np.from_dlpack(x)


def from_numpy(a, like, *, dtype=None):
    """``a`` (NumPy or scalar) as an array of ``like``'s namespace, on its device, in
    ``dtype`` (default: ``like``'s dtype for floating ``a``, ``a``'s own otherwise)."""
    import array_api_compat

    xp = array_api_compat.array_namespace(like)
    a = np.asarray(a)
    if dtype is None and a.dtype.kind == "f":
        dtype = like.dtype
    if dtype is None:
        dtype = {"i": xp.int64, "u": xp.int64, "b": xp.bool}.get(a.dtype.kind)
    return xp.asarray(np.ascontiguousarray(a), dtype=dtype, device=device_of(like))


def check_X_array_api(X, xp: ModuleType, *, estimator=None, reset: bool = True,
                      min_samples: int = 1, name: str = "X"):
    """Validate an array-API feature array as :func:`shiftlearn._validation.check_X` does a
    NumPy one: 2-D, at least ``min_samples`` rows, finite; float32 and float64 kept (other
    dtypes become float64 where the device has it, else float32); with ``estimator``,
    ``n_features_in_`` recorded on it (``reset=True``) or checked against it; errors name
    the estimator, else ``name``.

    Raises
    ------
    ValueError
        Wrong dimensionality, too few rows, NaN/inf, or another number of features than fit.
    """
    if estimator is not None:
        name = type(estimator).__name__
    if X.ndim != 2:
        raise ValueError(f"{name}: expected a 2-D array, got shape {tuple(X.shape)}; reshape "
                         "a single feature with X.reshape(-1, 1).")
    if X.dtype not in (xp.float32, xp.float64):
        try:
            X = xp.astype(X, xp.float64)
        except (TypeError, RuntimeError, ValueError):      # a device without float64
            X = xp.astype(X, xp.float32)
    n, d = X.shape
    if n < min_samples:
        raise ValueError(f"{name}: found array with {n} sample(s) (shape {tuple(X.shape)}) "
                         f"while a minimum of {min_samples} is required.")
    if d == 0:
        raise ValueError(f"{name}: found array with 0 feature(s) (shape {tuple(X.shape)}).")
    if not bool(xp.all(xp.isfinite(X))):
        raise ValueError(f"{name}: input X contains NaN or infinity.")
    if estimator is None:
        return X
    if reset:
        estimator.n_features_in_ = int(d)
        if hasattr(estimator, "feature_names_in_"):
            del estimator.feature_names_in_
    elif d != estimator.n_features_in_:
        raise ValueError(f"X has {d} features, but {name} is expecting "
                         f"{estimator.n_features_in_} features as input.")
    return X
